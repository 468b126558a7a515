"""Shell corrections judged by structure, not by the exact shape a rule's author saw.

Each relaxation of :mod:`agentmem.learning.shell_fixes` is one general rule (see
docs/learning-rules.md, "Shapes that do not matter"): a positive that now teaches and a
negative that still teaches nothing, beside it.
"""

from __future__ import annotations

from agentmem.agents import learning_view
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory

NO_STAT = "error: unrecognized argument: --no-stat"


def _sh(command: str, output: str = "done", ok: bool = True) -> Step:
    code = "Exit code 127" if "not found" in output else "Exit code 1"
    return Step(
        tool="Bash",
        params={"command": command},
        output=output if ok else f"{code}\n{output}",
        success=ok,
    )


def _changes(*steps: Step, cwd: str = "/w/app") -> list[tuple[str, str]]:
    t = Trajectory(task="do the thing", steps=steps, meta={"cwd": cwd})
    return [(x.finding.detail["change"], x.finding.text) for x in find_shell_fixes(learning_view(t))]


# --------------------------------------------------------------------------- wrappers


def test_a_wrapper_that_runs_the_command_as_it_is_is_no_change():
    """``time``, ``nice``, ``nohup`` (Role.TRANSPARENT) on either side: the same command."""
    for failed, retry in (
        ("time git show --no-stat abc1234", "git show abc1234"),
        ("git show --no-stat abc1234", "nice -n 5 git show abc1234"),
    ):
        got = _changes(_sh(failed, NO_STAT, False), _sh(retry))
        assert [c for c, _ in got] == ["flag"], (failed, retry, got)
        assert "--no-stat" in got[0][1]


def test_a_dropped_privilege_is_no_change_but_an_added_one_is():
    """A retry without ``sudo`` made nothing work by having less privilege: the named flag
    did. A retry that adds ``sudo`` may have worked by it: nothing is learned."""
    dropped = _changes(_sh("sudo git show --no-stat abc1234", NO_STAT, False), _sh("git show abc1234"))
    assert [c for c, _ in dropped] == ["flag"]
    added = _changes(_sh("git show --no-stat abc1234", NO_STAT, False), _sh("sudo git show abc1234"))
    assert added == []


def test_advice_is_read_without_a_transparent_wrapper():
    upstream = (
        "fatal: The current branch feat has no upstream branch.\n"
        "To push the current branch and set the remote as upstream, use\n\n"
        "    git push --set-upstream origin feat\n"
    )
    got = _changes(_sh("git push", upstream, False), _sh("time git push --set-upstream origin feat"))
    assert [c for c, _ in got] == ["suggested"]
    other = _changes(_sh("git push", upstream, False), _sh("time git push --force origin feat"))
    assert [c for c, _ in other] != ["suggested"]
