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


def test_a_tool_rule_of_one_client_is_not_standing_for_the_other(tmp_path) -> None:
    """ "Bash keeps the working directory between calls" is Claude Code's rule: in its
    project it is standing for Claude Code's prompts (and an unknown client's), never
    for Codex's, whose shell does not keep the folder."""
    from agentmem import Memory
    from agentmem.serving import Query

    from .conftest import FakeEmbedder, FakeModel

    cd_missing = "bash: cd: backend: No such file or directory"
    steps = [
        _sh("cd backend && npm install zod", cd_missing, False),
        _sh("pwd", "/w/app/backend"),
        _sh("npm install zod", "added 1 package"),
    ]
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        for n in range(2):
            tid = mem.record(f"work on the backend {n}", steps, meta={**HOME, "project": "/w/app"})
            mem.feedback(tid, "accept")
        mem.learn(use_model=False)
        [kept] = [e.id for e in mem.experiences() if "keeps the working directory" in e.text]

        def ids(client: str | None) -> set[int]:
            q = Query("tidy the readme wording", project="/w/app", client=client)
            return {x.id for x in mem.serve(q).lessons}

        assert kept in ids("claude-code") and kept in ids(None)
        assert kept not in ids("codex")

        def asked(client: str | None) -> set[int]:  # a prompt that names the cd
            q = Query("cd into the backend and npm install zod", project="/w/app", client=client)
            return {x.id for x in mem.serve(q).lessons}

        assert kept in asked("claude-code") and kept not in asked("codex")


def test_a_tool_rule_names_its_client_only_when_one_has_every_tool() -> None:
    from agentmem.learning.generality import _one_client

    assert _one_client(["Bash"]) == "claude-code"
    assert _one_client(["Edit", "Read"]) == "claude-code"
    assert _one_client(["exec_command"]) == "codex"
    assert _one_client(["Bash", "exec_command"]) is None
    assert _one_client(["mcp__fs__read_file"]) is None
    assert _one_client(["my_app_tool"]) is None


def test_a_project_named_like_the_folder_is_no_kept_folder() -> None:
    """The session's own folder is ``/w/api``: ``cd api`` fails there for want of
    ``api/api``; the shell never left the top, whatever pwd or the record say."""
    bad = _sh("cd api && npm run lint", CD_API_MISSING, False)
    ok = _sh("npm run lint", "ok")
    assert _slips(bad, _sh("pwd", "/w/api"), ok, cwd="/w/api") == []
    meta = {"cwd": "/w/api/x", "session_cwd": "/w/api", "cwds": {"0": "/w/api"}}
    assert _slips(bad, ok, **meta) == []
    # below the top it is the kept folder
    assert _slips(bad, _sh("pwd", "/w/app/packages/api"), ok) == [("again", 0, 2)]
    assert _slips(bad, ok, cwds={"0": "/w/app/packages/api"}) == [("again", 0, 1)]
