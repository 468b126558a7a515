"""Failure classes read from a call's structure (issue 29, part 2): each with a positive
and a negative example, built from the failure kinds seen on held-out sessions.

(a) a pipeline's status is its last program's; (b) existence probes ask a question;
(c) "run X, as its error says" only when the output quotes X as advice; (d) output
framing found by its structure; (e) a tool's own schema error after a one-off slip;
(f) escalation after a sandbox denial is a correction, tagged as one; (g) a session's
project comes from the transcript, for any OS's paths.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agentmem import Memory
from agentmem.agents import CLIENTS, Failure, learning_view, outcome, strip_headers
from agentmem.agents.outcomes import escalations, status_command
from agentmem.agents.risk import review_columns
from agentmem.agents.shell import parse
from agentmem.learning.corrections import find_corrections
from agentmem.learning.shell_fixes import advises, find_shell_fixes
from agentmem.projects import project_of
from agentmem.records import Step, Trajectory

from .conftest import FakeEmbedder, FakeModel
from .transcripts import ClaudeSession

CODEX = next(t for t in CLIENTS if t.client == "codex")
CLAUDE = next(t for t in CLIENTS if t.client == "claude-code")


def _bash(command: str, output: str, ok: bool = False, **more: object) -> Step:
    return Step(tool="Bash", params={"command": command, **more}, output=output, success=ok)


def _exec(cmd: str, output: str, ok: bool = False, **more: object) -> Step:
    return Step(tool="exec_command", params={"cmd": cmd, **more}, output=output, success=ok)


def _run(*steps: Step) -> Trajectory:
    return Trajectory(task="do the thing", steps=steps)


def _fixes(*steps: Step) -> list[str]:
    return [f.finding.text for f in find_shell_fixes(learning_view(_run(*steps)))]


# --------------------------------------------------------------------------- (a) pipelines


@pytest.mark.parametrize(
    "step",
    [
        # rg's no match, whatever the first program wrote on its stderr
        _bash("ls build/ | rg wasm", "Exit code 1\nls: build/: No such file or directory"),
        _bash("cat log.txt | grep -q ERROR", "Exit code 1"),
        # under pipefail: the no match of rg, trimmed by head
        _bash("rg -n TODO src | head -5", "Exit code 1"),
        _bash("ls missing; rg x src", "Exit code 1\nls: missing: No such file or directory"),
    ],
)
def test_a_pipeline_ending_in_a_search_that_found_nothing_is_no_misuse(step: Step):
    assert outcome(step).failure is Failure.INFORMATIONAL


def test_git_commit_with_nothing_staged_reports_the_tree_and_teaches_nothing():
    """Real (blind set 9, read after its first try): ``git commit`` exits 1 with "On branch
    main ... no changes added to commit"; a ``git add`` and the commit again then worked,
    and "Run git add X before git commit; without it git fails with 'On branch main'" was
    learned. It is git's report of the tree, as a search's no match is; a hook that failed
    the commit is still a failure."""
    status = (
        "Exit code 1\nOn branch main\nChanges not staged for commit:\n"
        '\tmodified:   src/a.ts\n\nno changes added to commit (use "git add" and/or '
        '"git commit -a")'
    )
    nothing = _bash("git commit -m 'feat: x'", status)
    assert outcome(nothing).failure is Failure.INFORMATIONAL
    fixed = (
        _bash("git add src/a.ts", "", True),
        _bash("git commit -m 'feat: x'", "[main 1a2b] feat", True),
    )
    assert _fixes(nothing, *fixed) == []
    hook = _bash(
        "git commit -m 'feat: x'", "Exit code 1\nhusky > pre-commit hook failed\nlint failed"
    )
    assert outcome(hook).failure is not Failure.INFORMATIONAL


def test_a_pipeline_failed_upstream_is_that_programs_and_a_chain_stops_at_its_failure():
    # pipefail: cargo failed, tail only trimmed its output: the code's failure, not tail's
    built = _bash("cargo build 2>&1 | tail -20", "Exit code 101\nerror[E0425]: cannot find x")
    assert status_command(parse("cargo build 2>&1 | tail -20")).program == "cargo"
    assert outcome(built).failure is Failure.CODE
    # && stops at the failure: cd's missing folder is the misuse, rg never ran
    chained = _bash("cd nowhere && rg x", "Exit code 1\ncd: nowhere: No such file or directory")
    assert outcome(chained).failure is Failure.MISUSE
    # rg's own error (exit 2) is no "no match"
    broken = _bash("cat a | rg '('", "Exit code 2\nrg: regex parse error: unclosed group")
    assert outcome(broken).failure is Failure.MISUSE


# --------------------------------------------------------------------------- (b) probes


@pytest.mark.parametrize(
    "step",
    [
        _bash("ls docs/notes.txt", "Exit code 2\nls: cannot access 'docs/notes.txt': No such file"),
        _bash("test -f .env", "Exit code 1"),
        _bash("[ -d node_modules ]", "Exit code 1"),
        _bash("which cargo", "Exit code 1\ncargo not found"),
        _bash("command -v uv", "Exit code 1"),
        _bash("stat setup.cfg", "Exit code 1\nstat: setup.cfg: No such file or directory"),
        _bash(
            "curl -fsS https://example.org/api/v2/health",
            "Exit code 22\ncurl: (22) The requested URL returned error: 404",
        ),
        _bash("git rev-parse --verify feature/x", "Exit code 128\nfatal: Needed a single revision"),
        _bash("git show-ref --verify refs/heads/x", "Exit code 1"),
    ],
)
def test_an_existence_probe_answered_no_is_no_misuse(step: Step):
    assert outcome(step).failure is Failure.INFORMATIONAL


def test_a_probe_called_wrongly_or_a_read_of_a_missing_file_is_still_a_misuse():
    bad = outcome(_bash("ls --colour=x src", "Exit code 2\nls: unrecognized option '--colour=x'"))
    assert bad.failure is Failure.MISUSE
    read = outcome(_bash("cat notes.txt", "Exit code 1\ncat: notes.txt: No such file or directory"))
    assert read.failure is Failure.MISUSE
    forbidden = _bash("curl -f https://x.org/a", "Exit code 22\ncurl: (22) ... error: 403")
    assert outcome(forbidden).failure is Failure.MISUSE


def test_a_probe_then_a_plain_ls_teaches_nothing():
    assert (
        _fixes(
            _bash("ls .github/workflows", "Exit code 1\nls: .github/workflows: No such file"),
            _bash("ls", "README.md\nsrc", True),
        )
        == []
    )


# --------------------------------------------------------------------------- (c) advice


def test_an_error_that_begins_with_the_programs_name_is_no_advice():
    missing = "Exit code 1\nls: src/x: No such file or directory"
    assert not advises(missing, parse("ls src").commands[0])
    assert not advises("ls: src/x: No such file", parse("ls").commands[0])
    assert _fixes(_bash("ls src/x", missing), _bash("ls src", "a.py", True)) == []


def test_a_command_quoted_as_advice_is_learned_as_its_errors_advice():
    said = (
        "Exit code 128\nfatal: The current branch feat has no upstream branch.\n"
        "To push the current branch and set the remote as upstream, use\n\n"
        "    git push --set-upstream origin feat\n"
    )
    retry = parse("git push --set-upstream origin feat").commands[0]
    assert advises(said, retry)
    assert advises("did you mean `cargo nextest run`?", parse("cargo nextest run").commands[0])
    (text,) = _fixes(
        _bash("git push", said), _bash("git push --set-upstream origin feat", "ok", True)
    )
    assert "as its error says" in text and "<branch>" in text


# --------------------------------------------------------------------------- (d) framing


def test_a_header_block_is_framing_for_any_client_version():
    framed = (
        "Command: /bin/zsh -lc 'ls build'\nChunk ID: 5d1f\nWall time: 0.0101 seconds\n"
        "Process exited with code 1\nOriginal token count: 12\nOutput:\n"
        "ls: build: No such file or directory"
    )
    body, code = strip_headers(framed, CODEX)
    assert (body, code) == ("ls: build: No such file or directory", 1)
    # an unknown key of a newer version, before Output:, is framing too
    newer = "Session: 7\nExit code: 2\nSandbox: workspace-write\nOutput:\nboom"
    assert strip_headers(newer, CODEX) == ("boom", 2)
    o = outcome(_exec("cat build", framed.replace("ls build", "cat build").replace("ls:", "cat:")))
    assert not o.diagnostic.startswith("Command:") and "No such file" in o.diagnostic


def test_a_diagnostic_that_reads_key_value_is_never_framing():
    body, code = strip_headers("Exit code 1\nError: Cannot find module 'x'", CLAUDE)
    assert (body, code) == ("Error: Cannot find module 'x'", 1)
    # no known header and no Output: line: the output itself
    plain = "Module: core\nStatus: broken"
    assert strip_headers(plain, CODEX) == (plain, None)


# --------------------------------------------------------------------------- (e) schema


def test_a_tools_schema_error_after_a_one_off_slip_teaches_nothing():
    slip = Step(
        tool="Read",
        params={"file_path": "/w/a.py", "offset": [1, 2]},
        output="<tool_use_error>InputValidationError: Read failed due to the following "
        "issue:\nThe parameter `offset` type is expected as `number` but provided as "
        "`array`</tool_use_error>",
        success=False,
    )
    assert outcome(slip).failure is Failure.SCHEMA
    fixed = Step(tool="Read", params={"file_path": "/w/a.py", "offset": 1}, output="x")
    assert find_corrections(_run(slip, fixed)) == []
    empty = Step(
        tool="Glob", params={}, output="missing required parameter 'pattern'", success=False
    )
    assert outcome(empty).failure is Failure.SCHEMA


def test_a_tools_own_refusal_that_is_no_schema_error_still_teaches():
    folder = Step(
        tool="Read", params={"file_path": "/w/src"}, output="EISDIR: illegal op", success=False
    )
    assert outcome(folder).failure is Failure.MISUSE
    # a program's own "invalid argument" in a shell call is the program's, not the schema's
    shell = _bash("tar -xf a.tgz --zz", "Exit code 2\ntar: invalid argument '--zz'")
    assert outcome(shell).failure is not Failure.SCHEMA


# --------------------------------------------------------------------------- (f) escalation


def test_escalation_after_a_sandbox_denial_is_a_correction_tagged_as_one():
    refused = _exec(
        "npm install",
        "Exit code: 1\nOutput:\nnpm ERR! code EPERM\n"
        "npm ERR! Error: EPERM: operation not permitted",
    )
    again = _exec("npm install", "added 3 packages", True, sandbox_permissions="require_escalated")
    assert escalations((refused, again)) == {0: 1}
    view = learning_view(_run(refused, again))
    assert view.steps[1].params.get("sandbox_permissions") == "require_escalated"
    (fix,) = find_shell_fixes(view)
    d = fix.finding.detail
    assert (d["change"], d["risk"]) == ("escalation", "escalation")
    assert "sandbox_permissions: require_escalated" in fix.finding.text
    claude = _bash(
        "docker ps", "Exit code 1\npermission denied while trying to connect to the Docker daemon"
    )
    retry = _bash("docker ps", "CONTAINER ID", True, dangerouslyDisableSandbox=True)
    (fix,) = find_shell_fixes(learning_view(_run(claude, retry)))
    assert "dangerouslyDisableSandbox: true" in fix.finding.text


def test_an_escalation_of_a_script_a_shell_ran_names_the_script_not_the_shell():
    """Real (validation; wave 8's audit): ``bash .specify/scripts/bash/x.sh`` refused in the
    sandbox, then run escalated, taught "bash ... is refused in the sandbox", which is false
    (bash ran in the sandbox elsewhere). The shell only starts the script: the refusal is of
    what the script did, as for ``./x.sh``."""
    script = ".specify/scripts/bash/create-new-feature.sh --json 'x'"
    said = (
        "Exit code: 1\nOutput:\nfatal: cannot lock ref 'refs/heads/001-x': Operation not permitted"
    )
    refused = _exec(f"bash {script}", said)
    again = _exec(
        f"bash {script}", '{"BRANCH": "001-x"}', True, sandbox_permissions="require_escalated"
    )
    (fix,) = find_shell_fixes(learning_view(_run(refused, again)))
    assert fix.finding.text.startswith("In this project create-new-feature.sh is refused")
    assert "bash" not in fix.finding.text.split("refused")[0]


def test_an_escalation_that_follows_no_refusal_is_inert():
    failed = _exec("pytest -x", "Exit code: 1\nOutput:\nE   assert 1 == 2\n1 failed")
    again = _exec("pytest -x", "1 passed", True, sandbox_permissions="require_escalated")
    assert escalations((failed, again)) == {}
    view = learning_view(_run(failed, again))
    assert "sandbox_permissions" not in view.steps[-1].params
    assert find_shell_fixes(view) == []
    # escalated from the start: no failure to follow, inert
    ok = _exec("ls", "a", True, sandbox_permissions="require_escalated")
    assert "sandbox_permissions" not in learning_view(_run(ok)).steps[0].params


def test_an_escalated_retry_that_got_past_the_refusal_teaches_though_it_failed_after():
    """Real (msrnic-ece493group19, development half): ``git fetch --all --prune`` failed
    with ``ssh: Could not resolve hostname github.com`` in the sandbox; escalated, it ran
    and failed on its own (``Permission denied (publickey)``): the escalation got past the
    refusal. Synthetic: a build that, escalated, ran into compile errors; a refusal framed
    as the client's time-out. Negatives: a retry refused again, rejected by the user, or
    silent."""
    fetch = "git fetch --all --prune"
    dns = "ssh: Could not resolve hostname github.com: Temporary failure in name resolution"
    remote = "fatal: Could not read from remote repository."
    refused = _exec(fetch, f"Exit code: 1\nOutput:\n{dns}\n{remote}\n")
    key = "git@github.com: Permission denied (publickey).\n" + remote
    ran = _exec(fetch, f"Exit code: 1\nOutput:\n{key}\n", sandbox_permissions="require_escalated")
    assert escalations((refused, ran)) == {0: 1}
    (fix,) = find_shell_fixes(learning_view(_run(refused, ran)))
    assert fix.finding.detail["change"] == "escalation"
    assert "ssh: Could not resolve hostname github.com" in fix.finding.text
    build = "cargo build"
    eperm = "error: failed to open `target/debug/.cargo-lock`: Operation not permitted"
    compiled = "error[E0308]: mismatched types\n --> src/main.rs:3:5"
    pairs_that_teach = [
        (_exec(build, f"Exit code: 101\nOutput:\n{eperm}"), compiled),
        (_exec(build, f"command timed out after 10166 milliseconds\n{eperm}"), "Compiling x"),
    ]
    for failed, out in pairs_that_teach:
        retry = _exec(
            build, f"Exit code: 101\nOutput:\n{out}", sandbox_permissions="require_escalated"
        )
        assert escalations((failed, retry)) == {0: 1}
        (fix,) = find_shell_fixes(learning_view(_run(failed, retry)))
        assert fix.finding.detail["change"] == "escalation"
    failed = pairs_that_teach[0][0]
    for out in (eperm, "Rejected by user", ""):
        retry = _exec(
            build, f"Exit code: 1\nOutput:\n{out}", sandbox_permissions="require_escalated"
        )
        assert escalations((failed, retry)) == {}, out
        assert find_shell_fixes(learning_view(_run(failed, retry))) == []
    # a time-out with no refusal in it still teaches nothing
    slow = _exec(build, "command timed out after 10166 milliseconds\nCompiling x")
    ok = _exec(build, "Finished", True, sandbox_permissions="require_escalated")
    assert find_shell_fixes(learning_view(_run(slow, ok))) == []


# --------------------------------------------------------------------------- (g) projects


@pytest.mark.parametrize(
    ("cwd", "project"),
    [
        ("C:\\Users\\ana\\src\\shop", "C:\\Users\\ana\\src\\shop"),
        ("c:/Users/ana/src/shop/", "C:\\Users\\ana\\src\\shop"),
        ("/data/data/com.termux/files/home/app", "/data/data/com.termux/files/home/app"),
        ("/Users/ana/src/shop", "/Users/ana/src/shop"),
    ],
)
def test_a_folder_of_another_machine_is_its_own_project(cwd: str, project: str, monkeypatch):
    if os.path.isdir(cwd):
        pytest.skip(f"{cwd} exists on this machine")
    monkeypatch.chdir(Path(__file__).parent)  # inside this git repository
    assert project_of(cwd) == project


def test_a_windows_session_is_imported_into_its_own_project(tmp_path: Path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.chdir(repo)  # the import runs inside another repository
    s = ClaudeSession(cwd="C:\\Users\\ana\\src\\shop")
    s.prompt("list the sources")
    s.tool("Bash", {"command": "dir"}, "a.py")
    s.say("Done.")
    path = s.write(tmp_path / "s.jsonl")
    old = time.time() - 3 * 86400
    os.utime(path, (old, old))
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        (tid,) = mem.import_transcripts("claude-code", [path]).ids
        meta = mem.get_trajectory(tid).meta
    assert meta["project"] == "C:\\Users\\ana\\src\\shop"
    assert str(repo) not in str(meta)


# --------------------------------------------------------------------------- a run read once


def test_a_served_lessons_verdict_reads_the_run_as_learning_does():
    """``agentmem effect``'s verdicts: an rg that found nothing is no repeated mistake."""
    from agentmem.agents import RunView
    from agentmem.learning.digest import digest
    from agentmem.learning.outcomes import tool_verdict
    from agentmem.learning.support import group_runs

    run = _run(
        _bash("rg -n TODO src", "Exit code 1\n"),
        _bash("cat log.txt | grep -q ERROR", "Exit code 1"),
    )
    assert tool_verdict(["rg", "grep"], RunView.of(run)) == (True, True, False)
    missing = _run(_bash("rg -n TODO srcs", "Exit code 2\nrg: srcs: No such file or directory"))
    assert tool_verdict(["rg"], RunView.of(missing)) == (True, False, True)
    (g,) = group_runs([run], [digest(run, 1.0, 1.0)])
    assert all(s.success for s in g.steps)


# --------------------------------------------------------------------------- consolidation


def _learn(tmp_path: Path, session: ClaudeSession) -> list[str]:
    path = session.write(tmp_path / "s.jsonl")
    old = time.time() - 3 * 86400
    os.utime(path, (old, old))
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        for tid in mem.import_transcripts("claude-code", [path]).ids:
            mem.feedback(tid, "accept")
        mem.learn(use_model=False)
        return [e.text for e in mem.experiences()]


def test_files_of_one_folder_found_in_several_runs_make_one_lesson(tmp_path: Path):
    s = ClaudeSession(cwd="/w/app")
    for name in ("notes.txt", "todo.md", "ideas.md"):
        s.prompt(f"summarise {name} for me")
        s.tool(
            "Bash",
            {"command": f"cat {name}"},
            f"Exit code 1\ncat: {name}: No such file or directory",
            is_error=True,
        )
        s.tool("Bash", {"command": f"cat docs/{name}"}, "some text")
        s.say("Done.")
    (text,) = _learn(tmp_path, s)
    assert "docs/" in text and all(n in text for n in ("notes.txt", "todo.md", "ideas.md"))


def test_files_of_different_folders_stay_apart(tmp_path: Path):
    s = ClaudeSession(cwd="/w/app")
    for name, folder in (("notes.txt", "docs"), ("todo.md", "plans")):
        s.prompt(f"summarise {name} for me")
        s.tool(
            "Bash",
            {"command": f"cat {name}"},
            f"Exit code 1\ncat: {name}: No such file or directory",
            is_error=True,
        )
        s.tool("Bash", {"command": f"cat {folder}/{name}"}, "some text")
        s.say("Done.")
    texts = _learn(tmp_path, s)
    assert len(texts) == 2, texts
    assert any("docs/notes.txt" in t for t in texts) and any("plans/todo.md" in t for t in texts)


def test_one_program_missing_under_several_commands_makes_one_lesson():
    from agentmem.learning.merge import merge_findings

    def run(cmd: str, project: str) -> Trajectory:
        steps = (
            _bash(cmd, "Exit code 127\nbash: cargo: command not found"),
            _bash(f"nix-shell -p cargo --run '{cmd}'", "ok", True),
        )
        return Trajectory(task=f"do {cmd}", steps=steps, meta={"project": project})

    found = [
        f.finding
        for cmd in ("cargo build", "cargo test --all")
        for f in find_shell_fixes(learning_view(run(cmd, "/w/app")))
    ]
    assert len({f.text for f in found}) == 2
    (one,) = merge_findings(found)
    assert one.text.startswith("cargo is not on PATH here") and "nix-shell -p cargo" in one.text
    assert one.support == sum(f.support for f in found)
    # two projects: a fact of the machine (cargo provided by nix-shell) is one lesson, for a
    # library is one machine's; a project's own runner (uv run) stays each project's
    both = [
        f.finding
        for cmd, project in (("cargo build", "/w/app"), ("cargo test --all", "/w/other"))
        for f in find_shell_fixes(learning_view(run(cmd, project)))
    ]
    assert {f.detail["scope"] for f in both} == {"machine"}
    assert len(merge_findings(both)) == 1

    def uv(cmd: str, project: str) -> Trajectory:
        steps = (
            _bash(cmd, "Exit code 127\nbash: pytest: command not found"),
            _bash(f"uv run {cmd}", "ok", True),
        )
        return Trajectory(task=f"do {cmd}", steps=steps, meta={"project": project})

    apart = [
        f.finding
        for cmd, project in (("pytest -x", "/w/app"), ("pytest tests", "/w/other"))
        for f in find_shell_fixes(learning_view(uv(cmd, project)))
    ]
    assert {f.detail["scope"] for f in apart} == {"project"}
    assert len(merge_findings(apart)) == 2


def test_a_checker_that_never_started_is_a_misuse_and_one_that_ran_is_the_codes():
    spawn = _bash("uv run flake8 src/", "Exit code 2\nerror: Failed to spawn: `flake8`")
    assert outcome(spawn).failure is Failure.MISUSE
    ran = _bash("uv run flake8 src/", "Exit code 1\nsrc/a.py:1:1: F401 'os' imported but unused")
    assert outcome(ran).failure is Failure.CODE


def test_a_retry_proves_its_fix_only_when_the_calls_success_is_its_own():
    failed = _bash("cat notes.txt", "Exit code 1\ncat: notes.txt: No such file or directory")
    proven = _fixes(failed, _bash("cat docs/notes.txt && echo ok", "x\nok", True))
    assert len(proven) == 1 and "docs/notes.txt" in proven[0]
    # the success may be the alternative's, or the last command's alone
    assert _fixes(failed, _bash("cat docs/notes.txt || cat doc/notes.txt", "x", True)) == []
    assert _fixes(failed, _bash("cat docs/notes.txt; echo done", "done", True)) == []


def test_a_file_found_elsewhere_read_with_another_line_range_is_its_location():
    failed = _bash(
        "sed -n '1,200p' .specify/templates/plan.md",
        "Exit code 2\nsed: can't read .specify/templates/plan.md: No such file or directory",
    )
    (text,) = _fixes(
        failed, _bash("sed -n '1,220p' feat/.specify/templates/plan.md", "# Plan", True)
    )
    # the very path under a folder: the folder it starts in is kept there (shape prefix)
    assert text.startswith("In this project .specify/ is under feat/, not at the session's top")
    assert "use feat/.specify/templates/plan.md" in text
    # two paths changed: no one location to learn
    other = _bash("cp a/plan.md feat/b/plan.md", "", True)
    two = _bash("cp .specify/plan.md b/plan.md", "Exit code 1\ncp: .specify/plan.md: No such file")
    assert _fixes(two, other) == []


def test_a_step_before_the_retry_in_its_own_call_is_its_prerequisite_if_it_acts_on_the_error():
    denied = _bash(
        "./scripts/setup.sh --json",
        "Exit code 126\n(eval):1: permission denied: ./scripts/setup.sh",
    )
    (text,) = _fixes(
        denied, _bash("chmod +x scripts/setup.sh && ./scripts/setup.sh --json", "{}", True)
    )
    assert text.startswith("Run chmod +x scripts/setup.sh before")
    # a hook's failure, then other files staged and the commit again: no prerequisite
    hook = _bash("git commit -m x", "Exit code 1\nPre-commit validation failed: [DIALYZER] PLTs")
    retry = _bash("git add lib/a.ex && git commit -m x", "ok", True)
    assert _fixes(hook, retry) == []


def test_one_step_done_to_several_scripts_of_a_folder_makes_one_lesson():
    from agentmem.learning.merge import merge_findings

    def run(script: str) -> Trajectory:
        steps = (
            _bash(
                f"bin/{script} --json", f"Exit code 126\n(eval):1: permission denied: bin/{script}"
            ),
            _bash(f"chmod +x bin/{script} && bin/{script} --json", "{}", True),
        )
        return Trajectory(task=f"run {script}", steps=steps, meta={"project": "/w/app"})

    found = [f.finding for s in ("a.sh", "b.sh") for f in find_shell_fixes(learning_view(run(s)))]
    assert len(found) == 2
    (one,) = merge_findings(found)
    assert one.text.startswith(
        "In this project run chmod +x on the scripts in bin/ (a.sh and b.sh)"
    )
    assert one.support == 2 * found[0].support


def test_a_powershell_or_cmd_line_is_not_read_as_bash():
    for line in (
        "Get-ChildItem -Path src -Recurse",
        "cd app; Get-Item .\\dist\\main.js",
        'powershell.exe -Command "Get-Content a.txt"',
        "type C:\\Users\\ana\\notes.txt",
    ):
        assert not parse(line).parsed, line
    # bash lines with such words inside quotes or heredocs are still bash
    assert parse('git commit -m "Fix Get-Item"').parsed
    assert parse('git commit -m "$(cat <<EOF\nx\n\nCo-Authored-By: A\nEOF\n)"').parsed


def test_a_script_passed_as_one_word_and_a_content_edit_teach_nothing():
    sql = "select * from userz"
    said = f"Exit code 1\nError: in prepare, no such table: userz\n  {sql}\n  ^--- error here"
    failed = _bash(f'sqlite3 app.db "{sql}"', said)
    assert _fixes(failed, _bash('sqlite3 app.db "select * from users"', "1|ana", True)) == []
    bad = _bash("pixi install", "Exit code 1\n× Unexpected keys, expected only index-url")
    patch = _bash("apply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF", "Done", True)
    assert _fixes(bad, patch, _bash("pixi install", "ok", True)) == []


def test_an_escalation_is_a_correction_whose_lesson_is_held_for_a_person():
    refused = _exec(
        "git fetch --all",
        "Exit code: 1\nOutput:\nerror: cannot open .git/FETCH_HEAD: Operation not permitted",
    )
    again = _exec("git fetch --all", "ok", True, sandbox_permissions="require_escalated")
    (fix,) = find_shell_fixes(learning_view(_run(refused, again)))
    assert fix.finding.detail["risk"] == "escalation"
    (c,) = find_corrections(_run(refused, again))
    assert "sandbox_permissions: require_escalated" in c.finding.text
    # issue 30: its lesson would have the agent escalate, so it is written held
    assert review_columns(c.finding.text, dict(c.finding.detail))["review"] == "held"


def test_a_cd_that_failed_in_zsh_is_the_calls_misuse_not_the_checkers():
    """Real (uumk0n, development half): `cd apps/api && npx tsc` failed with zsh's
    '(eval):cd:1: no such file or directory: apps/api'; tsc never ran, so the failure is the
    cd's (a misuse), not a type check's (code). bash's 'cd: x: No such file' was read so
    already; a failure of tsc itself after a cd that worked stays the code's."""
    zsh = "Exit code 1\n(eval):cd:1: no such file or directory: apps/api"
    bash = "Exit code 1\n/usr/bin/bash: line 1: cd: apps/api: No such file or directory"
    for out in (zsh, bash):
        assert outcome(_bash("cd apps/api && npx tsc", out)).failure is Failure.MISUSE
    typed = "Exit code 2\nsrc/a.ts(3,1): error TS2304: Cannot find name 'x'."
    assert outcome(_bash("cd apps/api && npx tsc", typed)).failure is Failure.CODE


# --------------------------------------------------------------------------- session noise

#: A profile script's warning that a Codex session printed on every output (real: the
#: development half's code_butler run, where it was the diagnostic of a failed rg).
_PROFILE = (
    "/opt/homebrew/Library/Homebrew/cmd/shellenv.sh: line 18: /bin/ps: Operation not permitted"
)


def _sh(command: str, output: str, ok: bool) -> Step:
    return Step(tool="shell_command", params={"command": command}, output=output, success=ok)


def test_a_line_every_call_prints_is_never_the_diagnostic() -> None:
    from agentmem.agents.outcomes import session_noise

    steps = (
        _sh("ls", f"{_PROFILE}\nAGENTS.md\nai_clean\n", True),
        _sh("cat openspec/AGENTS.md", f"{_PROFILE}\n# OpenSpec Instructions\n", True),
        _sh(
            "sed -n '1,200p' ai_clean/q.py",
            f"{_PROFILE}\nsed: ai_clean/q.py: No such file or directory\n",
            False,
        ),
        _sh("rg --files -g '*.butler.yaml'", f"{_PROFILE}\n", False),
    )
    assert session_noise(steps) == {_PROFILE}
    assert outcome(steps[3]).diagnostic == _PROFILE  # a call read alone quotes the warning
    view = learning_view(_run(*steps)).steps
    assert all(_PROFILE not in s.output for s in view if not s.success)
    assert view[2].output.startswith("sed: ai_clean/q.py: No such file")
    assert _PROFILE in view[0].output  # a call that worked keeps its output as it was
    assert outcome(view[3]).diagnostic == ""


def test_a_line_only_some_calls_print_or_only_failures_print_is_no_noise() -> None:
    from agentmem.agents.outcomes import session_noise

    build = "Creating an optimized production build ..."
    steps = (
        _sh("npm run build", f"{build}\nCompiled successfully\n", True),
        _sh("npm run build", f"{build}\nCompiled successfully\n", True),
        _sh("ls", "package.json\nsrc\n", True),
        _sh("cat package.json", "{}\n", True),
        _sh("git status", "On branch main\n", True),
        _sh("npm run lint", "npm error Missing script: lint\n", False),
        _sh("npm run lint", "npm error Missing script: lint\n", False),
        _sh("npm run build", f"{build}\nFailed to compile.\n", False),
    )
    # the build line: two successes but 3 of 8 calls; the lint error: failures only
    assert session_noise(steps) == frozenset()
    assert build in learning_view(_run(*steps)).steps[7].output


def test_claude_codes_powershell_tool_is_a_shell_read_as_bash_is():
    """Claude Code 2.1 on Windows has a PowerShell tool beside Bash (27 files of the corpus
    call it): its failed result starts ``Exit code N`` as Bash's does, its ``description``
    is never run, and a search that found nothing there is an answer as in Bash."""
    from agentmem.agents import is_shell, spec_for

    assert is_shell("PowerShell")
    found = spec_for("PowerShell")
    assert found is not None and "description" in found[1].inert
    missing = "Exit code 1\nGet-Content: Cannot find path 'C:\\w\\x.txt' because it does not exist."
    said = outcome(Step("PowerShell", {"command": "Get-Content x.txt"}, missing, False))
    assert (said.failure, said.exit_code) == (Failure.MISUSE, 1)
    assert said.diagnostic.startswith("Get-Content: Cannot find path")
    none = outcome(Step("PowerShell", {"command": "git log | rg TODO"}, "Exit code 1", False))
    assert none.failure is Failure.INFORMATIONAL
