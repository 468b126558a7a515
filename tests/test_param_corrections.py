"""Parameters judged against the failure they follow (issue 29, item 2, finding 6): an
escalation after a sandbox denial and ``tty: true`` after a failure that wanted a terminal
are corrections; the escalation's lesson is held for a person (issue 30), never served."""

from __future__ import annotations

import os
import time
from pathlib import Path

from agentmem import Memory
from agentmem.agents import learning_view, outcome
from agentmem.agents.base import Failure
from agentmem.agents.outcomes import tty_retries
from agentmem.importers.codex import parse_codex, sandbox_denial
from agentmem.importers.turns import Call
from agentmem.learning import merge
from agentmem.learning.corrections import find_corrections
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory

from .conftest import FakeEmbedder, FakeModel
from .transcripts import CodexRollout, codex_exec

#: Codex 0.114's words for a command its sandbox refused (the shape of a real session's
#: output: a Rust value printed whole, the command's stderr escaped twice inside it).
DENIED = (
    'exec_command failed: CreateProcess { message: "Codex(Sandbox(Denied { output: '
    'ExecToolCallOutput { exit_code: 128, stdout: StreamOutput { text: \\"\\", '
    'truncated_after_lines: None }, stderr: StreamOutput { text: \\"fatal: Unable to create '
    "'/Users/u/ui/.git/index.lock': Operation not permitted\\\\n\\\", truncated_after_lines: "
    'None }, duration: 0ns, timed_out: false }, network_policy_decision: None }))" }'
)


def _run(*steps: Step) -> Trajectory:
    return Trajectory(task="do the thing", steps=steps, meta={"project": "/w/ui"})


def test_a_sandbox_denial_is_read_by_its_structure():
    said = sandbox_denial(DENIED)
    assert said == (
        "sandbox denied (exit code 128)\n"
        "fatal: Unable to create '/Users/u/ui/.git/index.lock': Operation not permitted"
    )
    assert sandbox_denial('exec_command failed: CreateProcess { message: "Io(...)" }') is None
    assert sandbox_denial("Process exited with code 1\nOutput:\nSandbox(Denied") is None


#: The other variant (Codex builds of early 2026): ``SandboxDenied { message: "..." ... }``,
#: after the command when it is named, its strings escaped once.
DENIED_VARIANT = (
    "exec_command failed for `/bin/zsh -lc 'git checkout -b 001-x'`: SandboxDenied { message: "
    "\"fatal: cannot lock ref 'refs/heads/001-x': Unable to create '/w/ui/.git/refs/heads/"
    "001-x.lock': Operation not permitted\\n\", output: ExecToolCallOutput { exit_code: 128, "
    'stdout: StreamOutput { text: "", truncated_after_lines: None }, stderr: StreamOutput { '
    "text: \"fatal: cannot lock ref 'refs/heads/001-x': Operation not permitted\\n\", "
    "truncated_after_lines: None }, duration: 0ns, timed_out: false } }"
)


def test_the_sandbox_denied_variant_is_read_by_its_structure():
    """Read as a success before (found by reading a blind set's lessons): both refusals of
    its session were lost."""
    assert sandbox_denial(DENIED_VARIANT) == (
        "sandbox denied (exit code 128)\nfatal: cannot lock ref 'refs/heads/001-x': "
        "Operation not permitted"
    )
    bare = DENIED_VARIANT.replace(
        "exec_command failed for `/bin/zsh -lc 'git checkout -b 001-x'`", "exec_command failed"
    )
    assert sandbox_denial(bare) is not None
    assert sandbox_denial("exec_command failed: Io(SandboxDenied { x })") is None
    # an "exit code" inside the command is not the refusal's
    echoed = DENIED_VARIANT.replace("git checkout -b 001-x'`", "make || echo exit code 0'`")
    assert sandbox_denial(echoed).startswith("sandbox denied (exit code 128)")
    assert sandbox_denial('SandboxDenied { message: "x" }') is None
    r = CodexRollout()
    r.prompt("branch")
    r.call({"cmd": "git checkout -b 001-x"}, DENIED_VARIANT)
    r.done()
    ((call,),) = [t.calls for t in parse_codex(r.data()).turns]
    assert call.success is False
    assert call.output.startswith("sandbox denied (exit code 128)")


def test_an_imported_sandbox_denial_is_a_failed_call_denied():
    r = CodexRollout()
    r.prompt("commit it")
    r.call({"cmd": "git commit -m x"}, DENIED)
    r.done()
    ((call,),) = [t.calls for t in parse_codex(r.data()).turns]
    assert call.success is False
    step = Step(tool="exec_command", params={"cmd": "git commit -m x"}, output=call.output)
    step = Step(tool=step.tool, params=step.params, output=step.output, success=False)
    assert outcome(step).failure is Failure.DENIED


def test_an_escalation_of_two_commands_of_a_project_is_one_held_lesson():
    refused = "Operation not permitted"
    run = _run(
        codex_exec("git fetch --all", f"error: cannot open .git/FETCH_HEAD: {refused}", False),
        codex_exec("git fetch --all", "", True, sandbox_permissions="require_escalated"),
        codex_exec(
            "git commit -m wip", f"fatal: Unable to create .git/index.lock: {refused}", False
        ),
        codex_exec(
            "git commit -m wip", "[main 1a2b] wip", True, sandbox_permissions="require_escalated"
        ),
    )
    found = [c.finding for c in find_corrections(run)]
    assert [f.detail["change"] for f in found] == ["escalation", "escalation"]
    assert "wip" not in found[1].text  # the program and subcommand, never a commit message
    (one,) = merge.merge_findings(found)
    assert one.text.startswith("In this project git fetch and git commit are refused")
    assert "sandbox_permissions: require_escalated" in one.text


def test_a_folders_refusal_merges_with_no_programs():
    """Two escalations of one project, one past a refusal of the program (git's own
    .git), one past a refusal of files the command named: "cat and files under X are
    refused" claimed that cat was (the validation half's half-true lessons). They stay
    two lessons; two folders' refusals merge into one of folders."""
    refused = "Operation not permitted"
    escalate = {"sandbox_permissions": "require_escalated"}
    fetch = f"error: cannot open .git/FETCH_HEAD: {refused}"
    run = _run(
        codex_exec("git fetch --all", fetch, False),
        codex_exec("git fetch --all", "", True, **escalate),
        codex_exec("cat /w/lab/specs/a.md", f"cat: /w/lab/specs/a.md: {refused}", False),
        codex_exec("cat /w/lab/specs/a.md", "# spec", True, **escalate),
        codex_exec("touch /w/lab/plans/p.md", f"touch: /w/lab/plans/p.md: {refused}", False),
        codex_exec("touch /w/lab/plans/p.md", "", True, **escalate),
    )
    found = [c.finding for c in find_corrections(run)]
    assert [f.detail["target"] for f in found] == ["", "/w/lab/specs", "/w/lab/plans"]
    program, folders = merge.merge_findings(found)
    assert program.text.startswith("In this project git fetch is refused"), program.text
    assert folders.text.startswith(
        "In this project files under /w/lab/specs and /w/lab/plans are refused"
    ), folders.text
    assert "cat and touch reached them with sandbox_permissions" in folders.text


def test_a_refusal_of_a_path_the_command_names_is_no_refusal_of_the_program():
    """Blind set 12 (read after its first try, so not blind now): an R script read a
    notebook and was refused writing it back, to a path outside the writable folders that
    the script itself named; the retry with an escalation wrote it. "Rscript is refused in
    the sandbox" was false: the target was refused, not the program, and the lesson is of
    the target's folder. A path the command does not name (a tool's cache, the
    repository's .git) keeps the program's lesson."""
    note = "/home/u/notebook.ipynb"
    script = f"Rscript - <<'RS'\nnb <- fromJSON('{note}')\nwrite(toJSON(nb), '{note}')\nRS"
    denied = f"cannot open file '{note}': Permission denied\nExecution halted"
    run = _run(
        codex_exec(script, denied, False),
        codex_exec(script, "", True, sandbox_permissions="require_escalated"),
    )
    (fix,) = find_corrections(run)
    assert fix.finding.text.startswith(
        "In this project files under /home/u are refused in the sandbox"
    ), fix.finding.text
    assert "Rscript reached them with sandbox_permissions: require_escalated" in fix.finding.text
    assert fix.finding.detail["risk"] == "escalation"  # held for a person, as any escalation
    # a folder is named as itself; a path inside a relative one is no absolute path
    from agentmem.learning.shell_fixes import refused_named_target

    specs = codex_exec(
        "mkdir -p /w/uni/specs", "mkdir: /w/uni/specs: Operation not permitted", False
    )
    assert refused_named_target(specs) == "/w/uni/specs"
    rel = codex_exec("mkdir -p ../specs/a", "mkdir: ../specs/a: Operation not permitted", False)
    assert refused_named_target(rel) is None
    # a path with a space, quoted or not in the refusal, is whole (as the command wrote it)
    spaced = 'cat > "/w/Year 4/specs/a.md" <<EOF\nx\nEOF'
    bare = codex_exec(spaced, "zsh:1: operation not permitted: /w/Year 4/specs/a.md", False)
    assert refused_named_target(bare) == "/w/Year 4/specs"
    quoted = codex_exec(spaced, "cat: '/w/Year 4/specs/a.md': Operation not permitted", False)
    assert refused_named_target(quoted) == "/w/Year 4/specs"
    cache = "open /home/u/.cache/go-build/ab/cd: read-only file system"
    run = _run(
        codex_exec("go build ./...", cache, False),
        codex_exec("go build ./...", "", True, sandbox_permissions="require_escalated"),
    )
    (fix,) = find_corrections(run)
    assert fix.finding.text.startswith("In this project go build is refused in the sandbox")


def test_a_plain_retry_that_merely_sets_an_escalation_teaches_nothing():
    run = _run(
        codex_exec("pytest -x", "E   assert 1 == 2\n1 failed", False),
        codex_exec("pytest -x", "1 passed", True, sandbox_permissions="require_escalated"),
    )
    assert find_corrections(run) == []


def test_tty_is_a_correction_only_after_a_failure_that_wanted_a_terminal():
    wanted = codex_exec("codex resume 019c", "Error: stdin is not a terminal", False)
    again = codex_exec("codex resume 019c", "Resuming", True, tty=True)
    assert tty_retries((wanted, again)) == {0: 1}
    (fix,) = find_shell_fixes(learning_view(_run(wanted, again)))
    assert fix.finding.detail["change"] == "terminal"
    assert fix.finding.text == (
        "codex needs a terminal ('Error: stdin is not a terminal'): start it with tty: true."
    )
    other = codex_exec("codex resume 019c", "Error: no session 019c", False)
    assert tty_retries((other, again)) == {}
    assert find_shell_fixes(learning_view(_run(other, again))) == []
    # tty stays inert elsewhere: the view drops it from a call it did not correct
    (view,) = [s for s in learning_view(_run(other, again)).steps if s.success]
    assert "tty" not in view.params


def test_an_escalation_learned_from_a_real_import_is_held_and_never_served(tmp_path: Path):
    r = CodexRollout(cwd=str(tmp_path))
    r.prompt("commit the docs")
    r.call({"cmd": "git commit -m docs"}, DENIED)
    r.call(
        {"cmd": "git commit -m docs", "sandbox_permissions": "require_escalated"},
        "Chunk ID: 2\nProcess exited with code 0\nOutput:\n[main 1a2b] docs\n",
    )
    r.done()
    path = r.write(tmp_path / "rollout-2026-01-05-x.jsonl")
    old = time.time() - 3 * 86400
    os.utime(path, (old, old))
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        mem.import_transcripts("codex", [path])
        mem.learn(use_model=False)
        rows = mem.db.execute(
            "SELECT text, review FROM experiences WHERE status = 'live'"
        ).fetchall()
        (eid,) = [e.id for e in mem.experiences()]
        assert [(t.split(" (")[0], rv) for t, rv in rows] == [
            ("In this project git commit is refused in the sandbox", "held")
        ]
        (text,) = [t for t, _ in rows]
        assert mem.retrieve(text, project=str(tmp_path)) == []  # held: never served
        assert eid is not None
        mem.review(eid, "approved", by="a person")
        assert [s.experience.text for s in mem.retrieve(text, project=str(tmp_path))] == [text]


# --------------------------------------------------------------------------- literal paths


def test_powershell_call_reads_the_first_cmdlet_and_its_words():
    from agentmem.agents.shell import powershell_call

    c = powershell_call(
        "Get-Content -LiteralPath 'src/app/(d)/[id]/p.tsx' | Select-Object -First 3"
    )
    assert c is not None and c.cmdlet == "Get-Content"
    assert c.option("literalpath") == "src/app/(d)/[id]/p.tsx"
    assert c.written_after("LiteralPath") == "'src/app/(d)/[id]/p.tsx'"
    assert powershell_call("Get-Content -Path 'it''s [x].txt'; ls").option("Path") == "it's [x].txt"
    assert powershell_call("git status") is None


def test_an_unquoted_glob_the_shell_refused_teaches_quoting_and_nothing_else():
    refused = codex_exec(
        "rg -n id /Users/me/app/src/[id]/route.ts",
        "zsh:1: no matches found: /Users/me/app/src/[id]/route.ts",
        False,
    )
    assert outcome(refused).failure is Failure.MISUSE  # the shell refused: rg never ran
    quoted = codex_exec("cat '/Users/me/app/src/[id]/route.ts'", "export {}", True)
    (fix,) = find_shell_fixes(learning_view(_run(refused, quoted)))
    assert fix.finding.detail["change"] == "glob"
    assert fix.finding.text == (
        "In zsh an unquoted path with [ ], * or ? is a glob pattern "
        "('no matches found: .../src/[id]/route.ts'): quote the path."
    )
    # the path given again unquoted, or another path: no lesson (and no operand lesson)
    other = codex_exec("ls /Users/me/app/src", "[id]", True)
    assert find_shell_fixes(learning_view(_run(refused, other))) == []


def test_a_glob_meant_as_a_pattern_teaches_no_quoting():
    """``ls Dockerfile*`` matched nothing in zsh, then ``find . -name 'Dockerfile*'`` found
    the files below: the word was a pattern on purpose, given next to a pattern option, and
    quoting the path would not have helped (a blind set's lesson quoted such a run)."""
    probe = codex_exec("ls Dockerfile*", "zsh:1: no matches found: Dockerfile*", False)
    for found in (
        "find . -name 'Dockerfile*'",
        "rg --files -g 'Dockerfile*'",
        "grep -rl FROM --include='Dockerfile*' .",
    ):
        later = codex_exec(found, "./api/Dockerfile", True)
        assert find_shell_fixes(learning_view(_run(probe, later))) == [], found
    # a pattern option given the word unquoted first, then quoted: the quoting was the fix;
    # and pip's -e takes a path (zsh refused its extras' brackets)
    for failed, fixed in (
        ("find . -name *.py", "find . -name '*.py'"),
        ("pip install -e .[dev]", "pip install -e '.[dev]'"),
    ):
        word = failed.split()[-1]
        refused = codex_exec(failed, f"zsh:1: no matches found: {word}", False)
        fixes = find_shell_fixes(learning_view(_run(refused, codex_exec(fixed, "ok", True))))
        assert [f.finding.detail["change"] for f in fixes] == ["glob"], failed
    listed = codex_exec("ls -la 'Dockerfile*'", "Dockerfile*", True)
    assert [
        f.finding.detail["change"] for f in find_shell_fixes(learning_view(_run(probe, listed)))
    ] == ["glob"]


def test_a_powershell_wildcard_path_read_literally_is_one_lesson_per_cmdlet():
    missing = (
        "Exit code: 1\nOutput:\nGet-Content: An object at the specified path "
        "src/app/api/items/[id]/route.ts does not exist, or has been filtered."
    )
    code = (
        "Exit code: 1\nOutput:\ndashboard: The term 'dashboard' is not recognized as a name "
        "of a cmdlet, function, script file, or executable program."
    )

    def ps(cmd: str, out: str, ok: bool = False) -> Step:
        return Step(tool="shell_command", params={"command": cmd}, output=out, success=ok)

    run = _run(
        ps("Get-Content -Path src/app/(dashboard)/items/[id]/page.tsx", code),
        ps(
            'Get-Content -Path "src/app/(dashboard)/items/[id]/page.tsx"',
            missing.replace("api/items/[id]/route.ts", "(dashboard)/items/[id]/page.tsx"),
        ),
        ps('Get-Content -LiteralPath "src/app/(dashboard)/items/[id]/page.tsx"', "x", True),
    )
    found = find_shell_fixes(learning_view(run))
    assert [f.finding.detail["change"] for f in found] == ["literal", "literal"]
    assert len({f.finding.text for f in found}) == 1  # one lesson, whichever failure
    assert "-LiteralPath" in found[0].finding.text and "Get-Content" in found[0].finding.text
    # a path without [ ] or ( ), or another cmdlet after it: nothing
    plain = _run(
        ps("Get-Content -Path a.txt", missing), ps("Get-Content -LiteralPath a.txt", "x", True)
    )
    assert find_shell_fixes(learning_view(plain)) == []


def test_a_windows_path_whose_backslashes_git_bash_ate_teaches_forward_slashes():
    def bash(cmd: str, out: str, ok: bool = False) -> Step:
        return Step(tool="Bash", params={"command": cmd}, output=out, success=ok)

    eaten = bash(
        "type C:\\Users\\joshl\\AppData\\Local\\Temp\\t.output",
        "Exit code 1\n/usr/bin/bash: line 1: type: C:UsersjoshlAppDataLocalTempt.output: not found",
    )
    fixed = bash("cat /c/Users/joshl/AppData/Local/Temp/t.output", "ok", True)
    (fix,) = find_shell_fixes(learning_view(_run(eaten, fixed)))
    assert fix.finding.detail["change"] == "backslash"
    assert "forward slashes (/c/...); cat worked" in fix.finding.text
    # no sign that bash ate them (the file is simply not there): nothing
    missing = bash(
        "type C:\\Users\\joshl\\t.output", "Exit code 1\nThe system cannot find the file"
    )
    assert find_shell_fixes(learning_view(_run(missing, fixed))) == []


def test_a_hostile_sandbox_refusal_is_read_quickly():
    head = 'exec_command failed: CreateProcess { message: "Codex(Sandbox(Denied { stderr: '
    for tail in ("\\" * 20_000, "\\n" * 20_000, "\\\\" * 20_000 + '"'):
        t0 = time.perf_counter()
        said = sandbox_denial(head + 'StreamOutput { text: \\"' + tail)
        assert said is not None and said.startswith("sandbox denied")
        assert time.perf_counter() - t0 < 1.0


def test_a_hidden_folder_rg_files_skipped_and_find_found_is_where_the_project_keeps_it():
    def sh(cmd: str, out: str, code: int = 0) -> Step:
        body = f"Exit code: {code}\nWall time: 0 seconds\nOutput:\n{out}"
        return Step(tool="shell_command", params={"command": cmd}, output=body, success=code == 0)

    listed = sh("rg --files -g '.specify' -g '.specify/**'", "", 1)
    search = sh('rg -n "constitution" -S', "features/x/SPEC.md:7:## Constitution")
    found = sh("find . -maxdepth 4 -type d -name '.specify'", "./feature/fix/.specify")
    (fix,) = find_shell_fixes(learning_view(_run(listed, search, found)))
    assert fix.finding.text == (
        "In this project .specify is at feature/fix/.specify, a hidden folder rg --files skips: "
        "find it with find . -name .specify or rg --files --hidden."
    )
    # found in two places, or another name: nothing
    two = sh("find . -type d -name '.specify'", "./a/.specify\n./b/.specify")
    assert find_shell_fixes(learning_view(_run(listed, two))) == []
    other = sh("find . -type d -name '.config'", "./a/.config")
    assert find_shell_fixes(learning_view(_run(listed, other))) == []


def test_one_element_of_a_list_operand_named_unknown_is_the_programs_rule():
    def bash(cmd: str, out: str, ok: bool = False) -> Step:
        return Step(tool="Bash", params={"command": cmd}, output=out, success=ok)

    bad = bash("gh pr view 1 --repo o/r --json state,merged", 'Unknown JSON field: "merged"\nx')
    good = bash("gh pr view 1 --repo o/r --json state,mergedAt,mergedBy", "{}", True)
    (fix,) = find_shell_fixes(learning_view(_run(bad, good)))
    assert fix.finding.detail["change"] == "element"
    assert fix.finding.text == (
        "gh pr view --json has no merged ('Unknown JSON field: merged'): "
        "ask for mergedAt,mergedBy instead."
    )
    # the output names no element (or names one still asked for): nothing
    vague = bash("gh pr view 1 --json state,merged", "unknown error\nx")
    assert find_shell_fixes(learning_view(_run(vague, good))) == []


def test_a_files_content_changed_after_a_refused_edit_is_no_value_lesson():
    """A real session (buiviethoang-ai-learning): Claude Code refused an Edit of
    ~/.claude/settings.json ('Unrecognized field: hasCompletedOnboarding'); the retry wrote
    other content. The fix is in the file's content: no parameter value a lesson can name
    ("Call Edit with new_string like {...}" was learned before)."""
    path = "/home/u/.claude/settings.json"
    old = '{\n  "permissions": {}\n}'
    bad = Step(
        tool="Edit",
        params={
            "file_path": path,
            "old_string": old,
            "new_string": '{"hasCompletedOnboarding": true}',
        },
        output="- : Unrecognized field: hasCompletedOnboarding",
        success=False,
    )
    good = Step(
        tool="Edit",
        params={"file_path": path, "old_string": old, "new_string": '{"env": {}}'},
        output=f"The file {path} has been updated successfully.",
    )
    assert [c.kind for c in find_corrections(_run(bad, good))] == []
    # a scalar value of another tool changed the same way is still a correction
    q1 = Step(
        tool="Grep",
        params={"pattern": "x", "output_mode": "lines"},
        output="Invalid output_mode: lines",
        success=False,
    )
    q2 = Step(tool="Grep", params={"pattern": "x", "output_mode": "content"}, output="a.py:1:x")
    assert [c.kind for c in find_corrections(_run(q1, q2))] == ["param_value"]


#: Codex's words for a call the user (or its approval policy) refused, and for one the user
#: stopped: a Rust value printed whole (the shape of real sessions' outputs), no exit code.
REJECTED = 'exec_command failed: CreateProcess { message: "Rejected(\\"rejected by user\\")" }'
POLICY = (
    "exec_command failed: CreateProcess { message: \"Rejected(\\\"`/bin/zsh -lc 'rm -rf x'` "
    'rejected: blocked by policy\\")" }'
)


def _rollout_with(output: str) -> Call:
    r = CodexRollout()
    r.prompt("fetch it")
    r.call({"cmd": "git fetch", "sandbox_permissions": "require_escalated"}, output)
    r.done()
    ((call,),) = [t.calls for t in parse_codex(r.data()).turns]
    return call


def test_an_escalation_the_user_refused_or_stopped_never_ran():
    """A refused escalation ("Rejected(...)") is a denied call and a stopped one ("aborted by
    user after 8.1s") a failed one: neither is the retry that worked, so no escalation lesson
    says "it ran with require_escalated" on their say-so (real Codex 0.9x-0.10x outputs)."""
    for said in (REJECTED, POLICY):
        call = _rollout_with(said)
        assert call.success is False and call.denied is True, said
    stopped = _rollout_with("aborted by user after 8.1s")
    assert stopped.success is False and stopped.denied is False
    # shell_command's form, after its wall time (real, validation; wave 9's reader)
    timed = _rollout_with("Wall time: 50.9 seconds\naborted by user")
    assert timed.success is False and timed.denied is False
    ran = _rollout_with("Chunk ID: 1\nProcess exited with code 0\nOutput:\nok")
    assert ran.success is True and ran.denied is False
    refused = "fatal: unable to access 'https://x/': Could not resolve host: x"
    run = _run(
        codex_exec("git fetch", refused, False),
        Step(
            tool="exec_command",
            params={"cmd": "git fetch", "sandbox_permissions": "require_escalated"},
            output=REJECTED,
            success=False,
        ),
    )
    assert find_shell_fixes(learning_view(run)) == []


def test_a_refused_call_is_classed_denied():
    step = Step(tool="exec_command", params={"cmd": "git fetch"}, output=REJECTED, success=False)
    assert outcome(step).failure is Failure.DENIED


def test_a_sandbox_refusal_of_a_group_subcommand_is_told_by_its_action():
    """Blind set 13 (read after its first try, so not blind now), two users' Codex runs:
    ``docker compose up -d`` was refused (the daemon's socket), then ran escalated. The
    run's ``docker compose ... config``, which reads a file and worked in the sandbox,
    contradicted nothing: compose's own subcommand tells what it does. The same action
    worked in the sandbox still contradicts it. The lesson quotes the command's own
    refusal, not the importer's heading."""
    socket = (
        "sandbox denied (exit code 1)\nunable to get image 'proxy': permission denied while "
        "trying to connect to the Docker daemon socket at unix:///var/run/docker.sock"
    )
    escalate = {"sandbox_permissions": "require_escalated"}
    config = codex_exec("docker compose -f server/docker-compose.yml config", "services:", True)
    up = codex_exec("docker compose up -d", socket, False)
    again = codex_exec("docker compose up -d", "Started", True, **escalate)
    (fix,) = find_corrections(_run(config, up, again))
    assert fix.finding.text.startswith("In this project docker compose is refused"), (
        fix.finding.text
    )
    assert "permission denied while" in fix.finding.text
    assert "sandbox denied" not in fix.finding.text
    ran = codex_exec("docker compose up -d --no-build", "Started", True)
    assert find_corrections(_run(ran, up, again)) == []


def test_an_escalated_retry_that_runs_the_refused_commands_then_more_is_their_escalation():
    """Blind set 13 (after its first try): ``docker ps && docker inspect x`` was refused,
    and the escalated retry ran ``docker ps && docker inspect x && docker logs x``. The
    retry ran the refused commands first: the escalation is their fix. A retry that runs
    other commands first is not."""
    socket = (
        "sandbox denied (exit code 1)\npermission denied while trying to connect to the docker API"
    )
    escalate = {"sandbox_permissions": "require_escalated"}
    refused = codex_exec("docker ps && docker inspect web", socket, False)
    more = codex_exec("docker ps && docker inspect web && docker logs web", "ok", True, **escalate)
    (fix,) = find_corrections(_run(refused, more))
    assert fix.finding.detail["change"] == "escalation"
    other = codex_exec("docker logs web && docker ps && docker inspect web", "ok", True, **escalate)
    assert [c.finding.detail.get("change") for c in find_corrections(_run(refused, other))] != [
        "escalation"
    ]
