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
