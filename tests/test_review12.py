"""Review 12's findings on wave 8's changes, each as the input that shows it."""

from __future__ import annotations

from agentmem.records import Step


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
    from agentmem.records import Trajectory

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
