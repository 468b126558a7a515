"""Review of this session's commits: the ``nofilter`` shell change, ``cd D`` again with X
alone failing, a group subcommand's action, a file tool's own refusal of its content,
Claude Code's PowerShell tool as a shell. Each test is a case the change had wrong or had
not checked, on synthetic runs only."""

from __future__ import annotations

from agentmem.agents import learning_view, parse
from agentmem.agents.outcomes import _sandbox_intent
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory

from .test_kept_cwd import CD_MISSING, _kept
from .test_kept_cwd import _sh as _cc


def _sh(command: str, output: str = "done", ok: bool = True, tool: str = "Bash") -> Step:
    code = 127 if "not found" in output or "not recognized" in output else 1
    return Step(
        tool=tool,
        params={"command": command},
        output=output if ok else f"Exit code {code}\n{output}",
        success=ok,
    )


def _changes(*steps: Step) -> list[tuple[str, str]]:
    t = Trajectory(task="do the thing", steps=steps, meta={"cwd": "/w/app"})
    return [
        (x.finding.detail["change"], x.finding.text) for x in find_shell_fixes(learning_view(t))
    ]


def _nofilter(*steps: Step) -> list[str]:
    return [text for change, text in _changes(*steps) if change == "nofilter"]


# -- nofilter: a program missing at the end of a pipeline ------------------------------


def test_nofilter_still_teaches_a_missing_filter():
    got = _nofilter(
        _sh("curl -s localhost:5000/health | jq .", "(eval):1: command not found: jq", False),
        _sh("curl -s localhost:5000/health", '{"ok": true}'),
    )
    assert len(got) == 1 and got[0].startswith("jq is not installed here")


def test_nofilter_a_program_that_does_the_job_is_no_filter():
    """``| python3 parse.py``, ``| node x.js``, ``| tee build.log``, ``| xargs rg foo``:
    the program does the job with what it reads; the upstream alone working says nothing
    of running the command without it ("run the command without python3" is false)."""
    for line, missing, alone in (
        ("cat data.csv | python3 parse.py", "bash: python3: command not found", "cat data.csv"),
        ("echo '{}' | node script.js", "bash: node: command not found", "echo '{}'"),
        ("make 2>&1 | tee build.log", "bash: tee: command not found", "make 2>&1"),
        ("ls | xargs rg foo", "xargs: rg: No such file or directory", "ls"),
    ):
        assert _nofilter(_sh(line, missing, False), _sh(alone, "a")) == [], line


def test_nofilter_under_sudo_is_roots_path():
    """``| sudo tee /etc/x`` or ``| sudo jq``: sudo's "command not found" is of its own
    secure_path, not the user's; and tee writing the file is the job."""
    for line, missing in (
        ("cat a.conf | sudo tee /etc/a.conf", "sudo: tee: command not found"),
        ("cat a.json | sudo jq .", "sudo: jq: command not found"),
    ):
        assert _nofilter(_sh(line, missing, False), _sh(line.split(" |")[0], "{}")) == []


def test_nofilter_the_program_found_later_in_the_run():
    """jq ran and worked later in the run (after the pipeline alone): it is installed."""
    steps = (
        _sh("curl -s localhost:5000/health | jq .", "(eval):1: command not found: jq", False),
        _sh("curl -s localhost:5000/health", '{"ok": true}'),
        _sh("ls", "a.json"),
        _sh("jq .name package.json", '"app"'),
    )
    assert _nofilter(*steps) == []


def test_nofilter_a_script_upstream_that_missed_the_program():
    """``./run.sh | grep error``: the script's own line 2 did not find grep; the pipe's grep
    may well have run."""
    missing = "./run.sh: line 2: grep: command not found"
    assert _nofilter(_sh("./run.sh | grep error", missing, False), _sh("./run.sh", "ok")) == []


def test_nofilter_powershell_lacks_what_git_bash_has():
    """Claude Code's PowerShell tool: ``head`` is not a PowerShell command, but Git Bash
    (the Bash tool beside it) has it: "head is not installed here" is false there."""
    missing = "head : The term 'head' is not recognized as the name of a cmdlet, function."
    steps = (
        _sh("cat a.txt | head -5", missing, False, tool="PowerShell"),
        _sh("cat a.txt", "x", tool="PowerShell"),
    )
    assert _nofilter(*steps) == []


# -- kept_cwd: cd D again, X alone failing there ----------------------------------------


def test_cd_again_x_alone_failing_on_a_path_in_other_words():
    """X alone ran where the record says, but failed for want of a path worded otherwise
    than "no such file" / "not found": no proof it ran where it should."""
    again = _cc("cd backend && npx tsc --noEmit src/app.ts", CD_MISSING, False)
    for said in (
        "error TS5058: The specified path cannot find 'src/app.ts'.",
        "Error: ENOENT, open 'src/app.ts'",
        "The system cannot find the path specified.",
        "error: could not find `Cargo.toml` in `/w/app/backend` or any parent directory",
        "Cannot find module '/w/app/backend/src/app.ts'",
        "error: can't open file 'src/app.ts'",
    ):
        alone = _cc("npx tsc --noEmit src/app.ts", said, False)
        assert _kept((again, alone), cwds={"0": "/w/app/backend"}) == [], said


# -- a group subcommand's action --------------------------------------------------------


def test_group_action_is_not_an_options_value():
    """``docker compose -p app up``: ``app`` is the project's name, not the action; two
    calls with one project name and different actions must not read as the same, nor two
    with the same action and different names as different. An option whose value is not
    known leaves the action unknown (the program and subcommand alone, as before)."""
    got = {
        line: _sandbox_intent(parse(line).commands[0])
        for line in (
            "docker compose -p app up -d",
            "docker compose --project-name app config",
            "docker compose --profile dev up",
            "docker compose up -d",
            "docker compose -f x.yml config",
            "gh pr --repo x/y view 3",
            "gh pr list --state open",
        )
    }
    assert got["docker compose -p app up -d"] != got["docker compose --project-name app config"]
    assert "app" not in got["docker compose -p app up -d"]
    assert "dev" not in got["docker compose --profile dev up"]
    assert got["docker compose up -d"] == "docker compose up"
    assert got["gh pr list --state open"] == "gh pr list"


def test_cd_again_x_alone_that_never_ran_is_no_fix():
    """X alone refused by the user or interrupted did not run there: it is no fix (the
    lesson's evidence would say "the same command without the cd ran there")."""
    again = _cc("cd backend && npx tsc --noEmit src/app.ts", CD_MISSING, False)
    for said in (
        "The user doesn't want to proceed with this tool use. The tool use was rejected.",
        "[Request interrupted by user for tool use]",
    ):
        alone = _cc("npx tsc --noEmit src/app.ts", said, False)
        assert _kept((again, alone), cwds={"0": "/w/app/backend"}) == [], said


# -- Claude Code's PowerShell tool as a shell --------------------------------------------


def test_separator_of_claude_codes_powershell_tool_names_the_tool():
    """Claude Code on Windows has Bash (Git Bash, where && joins commands) beside its
    PowerShell tool: "Here the shell is Windows PowerShell 5.1 ... join with if ($?) { }"
    would be false of Bash. The lesson names the tool it is of."""
    refused = "The token '&&' is not a valid statement separator in this version."
    steps = (
        _sh("cd app && npm test", refused, False, tool="PowerShell"),
        _sh("cd app; npm test", "ok", tool="PowerShell"),
    )
    (text,) = [t for c, t in _changes(*steps) if c == "separator"]
    assert "PowerShell tool" in text and "the shell is" not in text, text
    # Codex on Windows: its one shell is PowerShell, the lesson as it was
    codex = (
        Step("shell_command", {"command": "cd app && npm test"}, refused, False),
        Step("shell_command", {"command": "cd app; npm test"}, "ok", True),
    )
    (text,) = [t for c, t in _changes(*codex) if c == "separator"]
    assert text.startswith("Here the shell is Windows PowerShell 5.1"), text


def test_nofilter_a_script_run_by_its_interpreter_upstream():
    """``bash build.sh | tail -5``: the script's line said "tail: command not found" (its
    name, not bash's, heads the line)."""
    missing = "build.sh: line 4: tail: command not found"
    steps = (_sh("bash build.sh 2>&1 | tail -5", missing, False), _sh("bash build.sh 2>&1", "ok"))
    assert _nofilter(*steps) == []


def test_nofilter_a_number_upstream_is_no_script():
    """``seq 1 10 | jq``: bash's "line 1:" is no upstream word heading the line."""
    missing = "/usr/bin/bash: line 1: jq: command not found"
    steps = (_sh("seq 1 10 | jq -s add", missing, False), _sh("seq 1 10", "1"))
    assert len(_nofilter(*steps)) == 1


def test_a_curl_that_only_read_is_no_prerequisite():
    """Seen while probing nofilter: jq not found, the pipeline alone, then jq worked: "jq
    is missing here: run curl -s localhost:5000/health first" is false (a GET with no file
    written provides no program)."""
    steps = (
        _sh("curl -s localhost:5000/health | jq .", "(eval):1: command not found: jq", False),
        _sh("curl -s localhost:5000/health", '{"ok": true}'),
        _sh("ls", "a.json"),
        _sh("cat a.json | jq .", "{}"),
    )
    assert [c for c, _ in _changes(*steps)] == []


def test_a_curl_that_wrote_a_file_still_provides_a_program():
    """The guard is on what the curl wrote: ``curl -fsSLo bin/jq URL`` (a bundled ``-o``)
    or ``curl URL > bin/jq`` between can be what made jq found."""
    for fetch in ("curl -fsSLo /usr/local/bin/jq https://x/jq", "curl -sL https://x/jq > jq"):
        steps = (
            _sh("jq . a.json", "bash: jq: command not found", False),
            _sh(fetch, ""),
            _sh("jq . a.json", "{}"),
        )
        assert [c for c, _ in _changes(*steps)] == ["prerequisite"], fetch
