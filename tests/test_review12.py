"""Review 12's findings on wave 8's changes, each as the input that showed it, fixed (the
fifth, vendored copies, is in tests/test_precision_guards.py)."""

from __future__ import annotations

from agentmem.records import Step, Trajectory


def _codex(cmd: str, out: str, ok: bool = False, **more: object) -> Step:
    return Step(tool="exec_command", params={"cmd": cmd, **more}, output=out, success=ok)


_ESCALATED = {"sandbox_permissions": "require_escalated"}


def test_the_sandbox_check_reads_each_call_once_per_run(monkeypatch):
    """``_sandbox_ran`` read every call of the run again for each refused and escalated
    call: quadratic, 8.8 s of ``find_corrections`` (0.5 s before it) on a 2,000-call Codex
    run with 500 refusals. What ran in the sandbox is read once per run now."""
    from agentmem.agents import outcomes

    calls = []
    real = outcomes._worked
    monkeypatch.setattr(outcomes, "_worked", lambda line: calls.append(line) or real(line))
    lock = "sandbox denied (exit code 1)\nfatal: Unable to create '/w/p/.git/index.lock'"
    steps: list[Step] = []
    for n in range(50):
        add = f"rtk git add f{n}.py"
        steps += [_codex(add, lock), _codex(add, "", True, **_ESCALATED)]
        steps += [_codex(f"cat src/m{n}.py | head -50", "x", True)]
    assert len(outcomes.escalations(tuple(steps))) == 50
    assert len(calls) <= 50  # each unescalated successful call once


def test_the_runs_listings_are_read_once_for_all_its_location_findings(monkeypatch):
    """``named_twice`` read every listing of the run again for each location finding:
    ``find_corrections`` took 370 s (8 s before it) on a 2,000-call run with 400 location
    fixes and 800 listings of 500 to 2,000 lines. The listings are read once per run now,
    and only when a location finding is there to check."""
    from agentmem.learning import shell_fixes
    from agentmem.learning.corrections import find_corrections

    reads: list[str] = []
    real = shell_fixes._listed
    monkeypatch.setattr(shell_fixes, "_listed", lambda out: reads.append(out) or real(out))
    listing = "\n".join(f"./src/pkg{k}/mod{k}.py" for k in range(50))
    steps: list[Step] = []
    for n in range(20):
        missing = f"Exit code 1\ncat: note{n}.md: No such file or directory"
        steps += [
            _bash(f"cat note{n}.md", missing),
            _bash(f"cat docs/d{n}/note{n}.md", "# x", True),
        ]
        steps += [_bash(f"find . -name '*.py' -path '*{n}*'", listing, True)]
    run = Trajectory(task="read the notes", steps=tuple(steps), accepted=True)
    assert len(find_corrections(run)) == 20
    assert len(reads) <= 20  # each listing once
    # the answer is the same: a name one listing shows twice is no location fact
    twice = "./a/note0.md\n./b/note0.md\n"
    run = Trajectory(
        task="read the notes",
        steps=(*steps[:2], _bash("find . -name 'note*.md'", twice, True)),
        accepted=True,
    )
    assert find_corrections(run) == []


def _bash(command: str, output: str, ok: bool = False) -> Step:
    return Step(tool="Bash", params={"command": command}, output=output, success=ok)


_REVIEW = "review 12: reported, not fixed (see the report)"


def _escalation_texts(*steps: Step) -> list[str]:
    from agentmem.learning.corrections import find_corrections

    run = Trajectory(task="do the thing", steps=steps, meta={"project": "/w/p"}, accepted=True)
    return [c.finding.text for c in find_corrections(run)]


_DENIED = "sandbox denied (exit code 1)\nError: connect EPERM 127.0.0.1:443"


def test_an_unknown_tools_subcommand_that_names_a_program_is_not_that_program():
    """``cdk diff``, ``vercel env pull``, ``fly ssh console``, ``wrangler tail``: an unknown
    CLI whose subcommand is also a program's name (``claimed_command``). The refusal is
    about the CLI (it reached the network), not about ``diff``, ``pull`` (``env`` read as
    the wrapper), ``ssh`` or ``tail``."""
    cases = (
        ("cdk diff", "diff"),
        ("vercel env pull .env.local", "pull"),  # env read as the wrapper: "pull"
        ("fly ssh console", "ssh"),
        ("wrangler tail", "tail"),
    )
    for cmd, word in cases:
        texts = _escalation_texts(_codex(cmd, _DENIED), _codex(cmd, "ok", True, **_ESCALATED))
        assert not any(t.startswith(f"In this project {word} ") for t in texts), texts


def test_a_filter_written_with_sed_hides_a_failure_as_head_does():
    """``_filtered_failure`` reads ``c | head -50`` (head: a filter); ``c | sed -n 1,50p``,
    an agent's other way to cut an output, passes ``c``'s output on just as well and hides
    its status just as well, but sed is no ``Role.FILTER``: the az query's own error in its
    output is read as a success, and the prerequisite is learned."""
    query = "az costmanagement query --type Usage --scope subscriptions/1"
    failed = _bash(
        query,
        "Exit code 2\nERROR: 'costmanagement' is misspelled or not recognized by the system.",
    )
    add = _bash("az extension add --name costmanagement", "", True)
    said = "ERROR: 'query' is misspelled or not recognized by the system."
    for cut in ("sed -n 1,50p", "awk 'NR<=50'"):
        hidden = _bash(f"{query} 2>&1 | {cut}", said, True)
        assert _corrections(failed, add, hidden) == [], cut


def test_a_retry_widened_to_the_folder_above_written_otherwise_teaches_no_operand():
    """``_widened`` drops "run git add with tests/plugin/, not tests/plugin/stub.py" when the
    retry names the folder above; the same folder written absolutely (under the session's
    folder), from ``$PWD``, or as its contents (``tests/plugin/*``) passes the guard, and
    the false operand lesson comes back."""
    from agentmem.agents.outcomes import learning_view
    from agentmem.learning.shell_fixes import find_shell_fixes

    stub = "tests/plugin/stub.py"
    said = f"Exit code 128\nfatal: pathspec '{stub}' did not match any files"
    for retry in ("/w/app/tests/plugin/", "$PWD/tests/plugin", "tests/plugin/*"):
        run = Trajectory(
            task="commit the plugin tests",
            steps=(_bash(f"git add {stub}", said), _bash(f"git add {retry}", "", True)),
            meta={"cwd": "/w/app"},
            accepted=True,
        )
        assert find_shell_fixes(learning_view(run)) == [], retry


def _corrections(*steps: Step) -> list[object]:
    from agentmem.learning.corrections import find_corrections

    return list(find_corrections(Trajectory(task="do the thing", steps=steps, accepted=True)))


def test_terraforms_auto_approve_with_a_value_is_a_skipped_check():
    """The new row reads ``-auto-approve``; Go's flag package also takes
    ``-auto-approve=true``, which the risk table does not see."""
    from agentmem.agents.risk import Capability, capabilities

    assert Capability.SKIP_CHECKS in capabilities("terraform apply -auto-approve=true")
