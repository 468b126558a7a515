"""Development set 14's false lesson, as a general class (synthetic runs shaped as the
real one)."""

from __future__ import annotations

from agentmem.agents import learning_view
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory


def _sh(command: str, output: str = "done", ok: bool = True) -> Step:
    return Step(
        tool="Bash",
        params={"command": command},
        output=output if ok else f"Exit code 1\n{output}",
        success=ok,
    )


def _texts(*steps: Step) -> list[str]:
    t = Trajectory(task="do the thing", steps=steps, meta={"cwd": "/w/app"})
    return [x.finding.text for x in find_shell_fixes(learning_view(t))]


_UNKNOWN = 'Error: unknown command "context" for "gt"\nRun \'gt --help\' for usage.'


def test_a_look_at_the_usage_is_no_fix_even_when_the_error_advises_it():
    """cobra's "Run 'gt --help' for usage", then gt --help: "If gt fails with ..., run gt
    --help, as its error says" was the lesson; the help only shows the usage."""
    assert _texts(_sh("gt context --usage", _UNKNOWN, False), _sh("gt --help", "Usage: gt")) == []
    assert _texts(_sh("gt context list", _UNKNOWN, False), _sh("gt help", "Usage: gt")) == []


def test_advice_that_does_the_job_still_teaches():
    """Control: the advised command that does the job (git's upstream) is still learned."""
    said = (
        "fatal: The current branch main has no upstream branch.\nTo push the current branch"
        " and set the remote as upstream, use\n\n    git push --set-upstream origin main\n"
    )
    got = _texts(_sh("git push", said, False), _sh("git push --set-upstream origin main"))
    assert len(got) == 1 and "as its error says" in got[0]
