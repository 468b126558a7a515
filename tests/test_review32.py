"""Review 32 of the sixteenth session's kinds (``script``, ``nostart``, the widened
``heredoc``) and of the learning view's ``missing_script`` / ``not_started``: each test a
false lesson or a misread outcome found by the review, with the shape that must still
teach."""

from __future__ import annotations

from agentmem.agents import learning_view
from agentmem.agents.outcomes import outcome
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory

_NPM_NO_SCRIPT = 'Exit code 1\nnpm error Missing script: "lint"\nnpm error\n'
_LINT_RAN = "> web@0.1.0 lint\n> eslint .\n"
_RG_DENIED = (
    "Program 'rg.exe' failed to run: An error occurred trying to start process "
    "'C:\\Program Files\\WindowsApps\\OpenAI.Codex\\app\\resources\\rg.exe'. Access is "
    "denied.\r\n    + CategoryInfo          : ResourceUnavailable: (:) [], "
    "ApplicationFailedException\r\n    + FullyQualifiedErrorId : NativeCommandFailed\r\n"
)
_HEREDOC = (
    "At line:2 char:11\r\n+ python - <<'PY'\r\n+           ~\r\n"
    "Missing file specification after redirection operator.\r\n"
    "    + CategoryInfo          : ParserError: (:) [], ParentContainsErrorRecordException\r\n"
    "    + FullyQualifiedErrorId : MissingFileSpecification\r\n"
)


def _sh(command: str, output: str = "", ok: bool = True) -> Step:
    return Step(tool="Bash", params={"command": command}, output=output, success=ok)


def _codex(command: str, output: str = "", ok: bool = True, workdir: str = "C:\\w") -> Step:
    body = f"Process exited with code {0 if ok else 1}\nOutput:\n{output}"
    params = {"command": command, "workdir": workdir}
    return Step(tool="shell_command", params=params, output=body, success=ok)


def _found(kind: str, *steps: Step, cwd: str = "/home/ken/app", **meta: object) -> list[str]:
    run = learning_view(Trajectory(task="t", steps=steps, meta={"cwd": cwd, **meta}))
    return [x.finding.text for x in find_shell_fixes(run) if x.finding.detail["change"] == kind]


# -- the learning view -----------------------------------------------------------------


def test_a_failing_test_that_quotes_powershells_record_is_the_codes_failure() -> None:
    """A test's output that mentions "Program 'rg.exe' failed to run" is no PowerShell
    that could not start pytest: the failure stays the code's (done), and no lesson says
    bare pytest fails."""
    out = "FAILED tests/test_ps.py::test_record - AssertionError: Program 'rg.exe' failed to run\n"
    failed = _sh("pytest -q", out + "1 failed, 3 passed", False)
    assert outcome(failed).failure.name == "CODE"
    retried = _sh("python -m pytest -q", "4 passed")
    run = learning_view(Trajectory(task="t", steps=(failed, retried)))
    assert run.steps[0].success
    assert find_shell_fixes(run) == []


def test_powershells_record_of_the_lines_own_program_is_a_misuse() -> None:
    assert outcome(_codex("rg --files", _RG_DENIED, False)).failure.name == "MISUSE"


def test_a_test_that_mentions_another_missing_script_is_the_codes_failure() -> None:
    """``npm test`` ran its tests; one of them prints npm's words about another script."""
    out = "> app@1.0 test\n> vitest\nFAIL src/cli.test.ts\n"
    out += "  expected 'Missing script: \"deploy\"'\n"
    assert outcome(_sh("npm test", out, False)).failure.name == "CODE"
    own = 'npm error Missing script: "test"\n'
    assert outcome(_sh("npm test", own, False)).failure.name == "MISUSE"


# -- script ----------------------------------------------------------------------------


def test_script_folder_of_two_cds_is_the_second_inside_the_first() -> None:
    (text,) = _found(
        "script",
        _sh("npm run lint", _NPM_NO_SCRIPT, False),
        _sh("cd web && cd src && npm run lint", _LINT_RAN),
    )
    assert "the lint script is in web/src/" in text


def test_script_folders_start_where_the_bash_tool_stood() -> None:
    """Claude Code's Bash keeps a ``cd`` between calls (the run's ``cwds``): ``cd ../api``
    from web is the project's api, and the failed call ran in web, not the session's folder."""
    cwds = {"0": "/home/ken/app/web", "1": "/home/ken/app/web"}
    (text,) = _found(
        "script",
        _sh("npm run lint", _NPM_NO_SCRIPT, False),
        _sh("cd ../api && npm run lint", _LINT_RAN),
        cwds=cwds,
    )
    assert text.startswith("In this project the lint script is in api/, not in web (")


def test_script_run_by_the_package_managers_folder_option_is_told_as_run() -> None:
    """``npm --prefix web run lint`` worked from the session's folder: no ``cd web`` before
    it (that would run it in web/web)."""
    for line in ("npm --prefix web run lint", "npm run lint --prefix web"):
        (text,) = _found("script", _sh("npm run lint", _NPM_NO_SCRIPT, False), _sh(line, _LINT_RAN))
        assert text.endswith(f"run it there ({line}).")
    yarn = 'yarn run v1.22.19\nerror Command "lint" not found.\n'
    (text,) = _found(
        "script",
        _sh("yarn lint", yarn, False),
        _sh("cd packages && yarn --cwd web lint", "> web@0.1.0 lint /home/ken/app/packages/web\n"),
    )
    assert "is in packages/web/" in text and "(cd packages && yarn --cwd web lint)" in text


def test_script_lesson_quotes_the_package_managers_own_words() -> None:
    """pnpm's "Command "X" not found" (neither a script nor a program of the package): the
    lesson quotes it, never a "Missing script" the output never said."""
    said = ' ERR_PNPM_RECURSIVE_EXEC_FIRST_FAIL  Command "lint" not found\n'
    ran = "> web@0.1.0 lint /home/ken/app/web\n> eslint .\n"
    (text,) = _found("script", _sh("pnpm lint", said, False), _sh("cd web && pnpm lint", ran))
    assert "Missing script" not in text and "('Command lint not found')" in text


def test_a_program_not_found_then_run_in_a_package_is_no_script() -> None:
    """``pnpm tsc`` at the root: "Command "tsc" not found" (tsc is installed in a package);
    ``cd dashboard && pnpm tsc`` ran the package's tsc, no script of its package.json."""
    said = ' ERR_PNPM_RECURSIVE_EXEC_FIRST_FAIL  Command "tsc" not found\n'
    failed = _sh("pnpm tsc --noEmit", said, False)
    assert _found("script", failed, _sh("cd dashboard && pnpm tsc --noEmit", "")) == []


def test_script_in_a_folder_outside_the_project_teaches_nothing() -> None:
    """Another checkout under /tmp is no folder of this project; the project's top, above
    the session's folder, is."""
    failed = _sh("npm run lint", _NPM_NO_SCRIPT, False)
    other = _sh("cd /tmp/other && npm run lint", "> other@0.1.0 lint\n> eslint .\n")
    assert _found("script", failed, other) == []
    up = _sh("cd .. && npm run lint", "> app@0.1.0 lint\n> eslint .\n")
    (text,) = _found("script", failed, up, cwd="/home/ken/app/web")
    assert "the lint script is in /home/ken/app/" in text


def test_script_in_a_folder_the_line_does_not_name_teaches_nothing() -> None:
    failed = _sh("npm run lint", _NPM_NO_SCRIPT, False)
    for line in ('cd "$PWD" && npm run lint', "cd - && npm run lint", "cd `pwd` && npm run lint"):
        assert _found("script", failed, _sh(line, _LINT_RAN)) == []


# -- nostart, heredoc --------------------------------------------------------------------


def test_a_program_that_started_in_the_same_run_is_no_program_that_cannot_start() -> None:
    """rg could not start once, and ran later in the run (escalated, or the denial passed):
    "rg cannot start" would be false of this machine."""
    failed = _codex('rg --files -g "package.json"', _RG_DENIED, False)
    listed = _codex("git ls-files", "backend/app/main.py\r\n")
    assert len(_found("nostart", failed, listed, cwd="C:\\w")) == 1
    searched = _codex("rg -n TODO src", "src/a.py:3:# TODO\r\n")
    assert _found("nostart", failed, listed, searched, cwd="C:\\w") == []
    assert _found("nostart", searched, failed, listed, cwd="C:\\w") == []


def test_a_heredoc_in_bash_whose_output_holds_a_powershell_record_is_no_powershell() -> None:
    """Claude Code's Bash tool is bash: a heredoc script that ran (and printed a
    PowerShell parser record of a script it tested) says nothing of the machine's shell."""
    script = "import subprocess\nsubprocess.run(['pwsh', '-File', 't.ps1'], check=True)\n"
    failed = _sh(f"python3 - <<'PY'\n{script}PY", "Traceback:\n" + _HEREDOC, False)
    assert _found("heredoc", failed, _sh("python3 check.py", "ok\n")) == []
    wrapped = _sh(f"powershell -Command \"python - <<'PY'\n{script}PY\"", _HEREDOC, False)
    saved = Step("Write", {"file_path": "/home/ken/app/check.py", "content": script}, "ok", True)
    ran = _sh('powershell -Command "python check.py"', "ok")
    assert len(_found("heredoc", wrapped, saved, ran)) == 1


def test_heredoc_then_a_project_script_never_written_is_no_saved_text() -> None:
    """``python manage.py check`` after the refused heredoc ran a script of the project,
    not the heredoc's text saved to a file: no "save the text to a file" from it."""
    script = "from pathlib import Path\nprint(Path('x').read_text())\n"
    failed = _codex(f"python - <<'PY'\n{script}PY", _HEREDOC, False)
    assert _found("heredoc", failed, _codex("python manage.py check", "no issues\r\n")) == []
    saved = Step("shell", {"command": ["apply_patch", "*** Add File: peek.py\n+x"]}, "Done", True)
    (text,) = _found("heredoc", failed, saved, _codex("python peek.py", "x\r\n"))
    assert text.endswith("save the text as a script file and run it (python peek.py).")
