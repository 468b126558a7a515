"""Review 23: the kept working directory (agentmem/learning/kept_cwd.py), the folders the
Claude Code importer keeps, and a standing lesson served to one client only.

Synthetic runs only, written here.
"""

from __future__ import annotations

from typing import Any

from agentmem.learning.kept_cwd import slips
from agentmem.records import Step, Trajectory

HOME = {"cwd": "/w/app"}
CD_API_MISSING = "bash: cd: api: No such file or directory"
CAT_MISSING = "cat: backend/src/app.ts: No such file or directory"


def _sh(command: str, out: str, ok: bool = True) -> Step:
    return Step("Bash", {"command": command, "description": "x"}, out, ok)


def _slips(*steps: Step, **meta: Any) -> list[tuple[str, int, int]]:
    run = Trajectory(task="t", steps=steps, meta={**HOME, **meta})
    return [(s.face, s.failed, s.fixed) for s in slips(run)]


def test_a_cd_in_a_subshell_does_not_move_the_shell() -> None:
    """``(cd D && X)`` and ``bash -c 'cd D && X'`` leave the shell where it stood: a
    later ``cd api`` that fails (no ``api`` at the top) is a wrong folder, not a kept one."""
    lint = (_sh("cd api && npm run lint", CD_API_MISSING, False), _sh("npm run lint", "ok"))
    assert _slips(_sh("(cd packages/api && npm test)", "ok"), *lint) == []
    assert _slips(_sh("bash -c 'cd packages/api && npm test'", "ok"), *lint) == []
    # the shell's own cd still counts, even after a subshell on the same line
    went = _sh("(cd web && npm ci) && cd packages/api && npm test", "ok")
    assert _slips(went, *lint) == [("again", 1, 2)]


def test_a_cd_that_said_its_folder_is_missing_did_not_move_the_shell() -> None:
    """``cd D; ls`` ends well when ``ls`` does, though its cd failed."""
    went = _sh("cd packages/api; ls", "bash: cd: packages/api: No such file or directory\nREADME")
    lint = (_sh("cd api && npm run lint", CD_API_MISSING, False), _sh("npm run lint", "ok"))
    assert _slips(went, *lint) == []


def test_a_fix_names_the_same_file_not_a_longer_name() -> None:
    went = _sh("cd backend && npm test", "ok")
    bad = _sh("cat backend/src/app.ts", CAT_MISSING, False)
    assert _slips(went, bad, _sh("cat /w/app/backend/src/app.ts.bak", "x")) == []
    assert _slips(went, bad, _sh("cat /w/app/backend/src/app.ts", "x")) == [("root", 1, 2)]


def test_an_mcp_tool_path_is_not_read_from_the_shell_folder() -> None:
    """An MCP server resolves a relative path from its own folder, not the Bash tool's."""

    def read(path: str, out: str, ok: bool = True) -> Step:
        return Step("mcp__fs__read_file", {"path": path}, out, ok)

    went = _sh("cd backend && npm test", "ok")
    bad = read("backend/src/app.ts", "ENOENT: no such file or directory, backend/src/app.ts", False)
    assert _slips(went, bad, read("/w/app/backend/src/app.ts", "x")) == []
