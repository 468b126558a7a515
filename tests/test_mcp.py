"""The MCP server: a real client session over stdio, plus the server's core without MCP."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentmem import Memory, UnknownTrajectoryError
from agentmem.cli import cli
from agentmem.mcp_server import (
    UNFINISHED_ERROR,
    AgentMemTools,
    TooManyOpenError,
    UnknownHandleError,
)
from agentmem.projects import machine_id

ROOT = Path(__file__).resolve().parent.parent
TOOLS = {
    "agentmem_context",
    "agentmem_retrieve",
    "agentmem_record",
    "agentmem_begin",
    "agentmem_step",
    "agentmem_end",
    "agentmem_feedback",
}
LESSON = "Before deleting files, list them with ls to check the paths."


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def _server_env() -> dict[str, str]:
    env = {"AGENTMEM_EMBEDDER": "hash", "PYTHONPATH": str(ROOT)}
    env.pop("AGENTMEM_DB", None)
    return env


async def _session_script(db: Path) -> dict[str, Any]:
    """Drive one server through every tool; returns what the checks need."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentmem", "mcp", "--db", str(db)],
        env=_server_env(),
        cwd=str(ROOT),
    )
    out: dict[str, Any] = {}
    with anyio.fail_after(60):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            listed = await s.list_tools()
            out["tools"] = {t.name: t for t in listed.tools}

            ctx = await s.call_tool(
                "agentmem_context", {"task": "delete the old log files", "domains": ["fs"]}
            )
            assert not ctx.is_error, _text(ctx)
            out["context"] = ctx
            hits = await s.call_tool("agentmem_retrieve", {"task": "delete old files", "k": 3})
            assert not hits.is_error, _text(hits)
            out["retrieve"] = hits
            empty = await s.call_tool(
                "agentmem_context", {"task": "book a flight", "domains": ["airline-only"]}
            )
            out["empty_context"] = empty

            rec = await s.call_tool(
                "agentmem_record",
                {
                    "task": "remove build artefacts",
                    "steps": [
                        {"tool": "bash", "params": {"cmd": "ls build"}, "output": "a.o b.o"},
                        {
                            "tool": "bash",
                            "params": {"cmd": "rm build/*.o"},
                            "output": "",
                            "success": True,
                        },
                    ],
                    "meta": {"model": "test"},
                },
            )
            assert not rec.is_error, _text(rec)
            out["record_id"] = rec.structured_content["id"]

            begun = await s.call_tool("agentmem_begin", {"task": "fix the failing test"})
            handle = begun.structured_content["handle"]
            st1 = await s.call_tool(
                "agentmem_step",
                {
                    "handle": handle,
                    "tool": "bash",
                    "params": {"cmd": "pytest"},
                    "output": "1 failed",
                    "success": False,
                },
            )
            st2 = await s.call_tool(
                "agentmem_step",
                {"handle": handle, "tool": "edit", "params": {"path": "x.py"}, "output": "ok"},
            )
            out["step_counts"] = [st1.structured_content["steps"], st2.structured_content["steps"]]
            end = await s.call_tool("agentmem_end", {"handle": handle, "accepted": True})
            assert not end.is_error, _text(end)
            out["live_id"] = end.structured_content["id"]

            fb = await s.call_tool(
                "agentmem_feedback",
                {"trajectory_id": out["record_id"], "kind": "correct", "note": "left a.o"},
            )
            assert not fb.is_error, _text(fb)

            # Errors come back as tool errors, and the server keeps serving.
            out["bad_feedback"] = await s.call_tool(
                "agentmem_feedback", {"trajectory_id": 999999, "kind": "accept"}
            )
            out["bad_kind"] = await s.call_tool(
                "agentmem_feedback", {"trajectory_id": out["record_id"], "kind": "maybe"}
            )
            out["bad_handle"] = await s.call_tool(
                "agentmem_step", {"handle": handle, "tool": "bash"}
            )  # already ended
            out["bad_step"] = await s.call_tool(
                "agentmem_record", {"task": "x", "steps": [{"tool": ""}]}
            )
            out["after_errors"] = await s.call_tool("agentmem_context", {"task": "delete files"})

            # Concurrent calls: the lock keeps every write whole.
            ids: list[int] = []

            async def record(i: int) -> None:
                r = await s.call_tool(
                    "agentmem_record",
                    {"task": "concurrent task", "steps": [{"tool": "bash", "output": str(i)}] * 3},
                )
                assert not r.is_error, _text(r)
                ids.append(r.structured_content["id"])

            async with anyio.create_task_group() as tg:
                for i in range(8):
                    tg.start_soon(record, i)
            out["concurrent_ids"] = ids

            # Left open on purpose: recorded as rejected at exit (one with a step) or dropped.
            open1 = await s.call_tool("agentmem_begin", {"task": "unfinished work"})
            await s.call_tool(
                "agentmem_step",
                {"handle": open1.structured_content["handle"], "tool": "bash", "output": "..."},
            )
            await s.call_tool("agentmem_begin", {"task": "never started"})
    return out


def test_mcp_session_over_stdio(tmp_path: Path) -> None:
    anyio = pytest.importorskip("anyio")
    pytest.importorskip("mcp.server.mcpserver")
    db = tmp_path / "agent.db"
    with Memory.open(db, embedder="hash") as mem:
        mem.add(LESSON, domain="fs")

    out = anyio.run(_session_script, db)

    tools = out["tools"]
    assert set(tools) == TOOLS
    for t in tools.values():
        assert len(t.description or "") > 40, t.name
    step_schema = tools["agentmem_record"].input_schema
    assert step_schema["required"] == ["task", "steps"]
    assert tools["agentmem_context"].annotations.read_only_hint is True
    assert tools["agentmem_feedback"].input_schema["properties"]["kind"]["enum"] == [
        "accept",
        "correct",
        "reject",
    ]

    assert LESSON in _text(out["context"])
    assert out["context"].structured_content == {"result": _text(out["context"])}
    hits = out["retrieve"].structured_content["result"]
    assert [h["text"] for h in hits] == [LESSON]
    assert set(hits[0]) == {"id", "text", "domain", "score"} and hits[0]["domain"] == "fs"
    assert _text(out["empty_context"]) == ""

    assert out["step_counts"] == [1, 2]
    for key, needle in [
        ("bad_feedback", "no trajectory has id 999999"),
        ("bad_kind", "kind"),
        ("bad_handle", "no open trajectory has handle"),
        ("bad_step", "tool must not be empty"),
    ]:
        assert out[key].is_error, key
        assert needle in _text(out[key]), (key, _text(out[key]))
    assert not out["after_errors"].is_error
    assert len(set(out["concurrent_ids"])) == 8

    with Memory.open(db) as mem:
        rec = mem.get_trajectory(out["record_id"])
        assert rec.source == "mcp" and rec.meta == {"model": "test", "machine": machine_id()}
        assert [s.tool for s in rec.steps] == ["bash", "bash"]
        assert rec.accepted is False  # corrected
        fb = mem.db.execute(
            "SELECT kind, note FROM feedback WHERE trajectory_id = ?", [out["record_id"]]
        ).fetchall()
        assert [tuple(r) for r in fb] == [("correct", "left a.o")]

        live = mem.get_trajectory(out["live_id"])
        assert live.task == "fix the failing test" and live.accepted is True
        assert [(s.tool, s.success) for s in live.steps] == [("bash", False), ("edit", True)]

        outputs = set()
        for tid in out["concurrent_ids"]:
            steps = mem.get_trajectory(tid).steps
            assert len(steps) == 3 and len({s.output for s in steps}) == 1
            outputs.add(steps[0].output)
        assert outputs == {str(i) for i in range(8)}

        by_task = {t.task: t for t in mem.trajectories()}
        unfinished = by_task["unfinished work"]
        assert unfinished.accepted is False and unfinished.meta["error"] == UNFINISHED_ERROR
        assert "never started" not in by_task
        assert len(mem.trajectories()) == 1 + 1 + 8 + 1


# -- the core, without MCP ---------------------------------------------------------------


@pytest.fixture
def core(tmp_path: Path) -> AgentMemTools:
    return AgentMemTools(
        Memory.open(tmp_path / "core.db", embedder="hash"), max_open=2, max_steps=2
    )


def test_core_bounds_and_errors(core: AgentMemTools) -> None:
    h1 = core.begin("task one")
    core.begin("task two")
    with pytest.raises(TooManyOpenError, match="already open"):
        core.begin("task three")
    core.step(h1, "bash")
    core.step(h1, "bash")
    with pytest.raises(Exception, match="2 steps"):
        core.step(h1, "bash")
    with pytest.raises(UnknownHandleError, match="no open trajectory has handle 'nope'"):
        core.end("nope")
    with pytest.raises(UnknownTrajectoryError):
        core.feedback(12345, "accept")
    with pytest.raises(Exception, match="must not be empty"):
        core.begin("   ")
    tid = core.end(h1)
    assert core.mem.get_trajectory(tid).source == "mcp"
    assert core.close() == []  # the open one has no steps: dropped
    with pytest.raises(Exception, match="shutting down"):
        core.context("anything")
    assert core.close() == []


def test_core_close_records_unfinished_as_rejected(tmp_path: Path) -> None:
    core = AgentMemTools(Memory.open(tmp_path / "c.db"))
    h = core.begin("half done", meta={"k": 1})
    core.step(h, "bash", {"cmd": "make"}, "error", success=False)
    [tid] = core.close()
    with Memory.open(tmp_path / "c.db") as mem:
        t = mem.get_trajectory(tid)
        meta = {"k": 1, "error": UNFINISHED_ERROR, "machine": machine_id()}
        assert t.accepted is False and t.meta == meta


# -- the command -------------------------------------------------------------------------


def test_mcp_help_has_examples_and_config() -> None:
    result = CliRunner().invoke(cli, ["mcp", "--help"])
    assert result.exit_code == 0
    assert "Examples:" in result.output
    snippet = result.output[result.output.index('{"mcpServers"') : result.output.index("Options:")]
    config = json.loads(snippet)
    assert config["mcpServers"]["agentmem"]["args"][:2] == ["mcp", "--db"]


def test_mcp_without_sdk_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # import mcp... raises ImportError
    monkeypatch.setitem(sys.modules, "mcp.server", None)
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)
    result = CliRunner().invoke(cli, ["mcp", "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 1
    assert "pip install 'agentmem[mcp]'" in result.output
    assert not os.path.exists(tmp_path / "x.db")  # failed before opening anything


def _scoped_library(tmp_path: Path) -> Path:
    """A library with a global lesson and one served only in project ``alpha``."""
    db = tmp_path / "scoped.db"
    with Memory.open(db, embedder="hash") as mem:
        mem.add("Before git push, run git pull --rebase when the push is rejected.", domain="git")
        scoped = mem.add("Run the alpha tests with make check, not pytest directly.", domain="test")
        session = mem.db.execute("SELECT max(id) FROM sessions").fetchone()[0]
        alpha = str(tmp_path / "alpha")
        with mem.db.conn:
            mem.db.execute(
                "INSERT INTO experience_scopes (experience_id, session_id, project, support, "
                "reason) VALUES (?, ?, ?, ?, 'test')",
                [scoped.id, session, alpha, json.dumps([alpha])],
            )
    for name in ("alpha", "beta"):
        (tmp_path / name / ".git").mkdir(parents=True)
    return db


async def _context_calls(db: Path, cwd: Path, roots: list[Path] | None) -> dict[str, Any]:
    import anyio
    import mcp.types as types
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def list_roots(context: Any) -> Any:
        return types.ListRootsResult(
            roots=[types.Root(uri=r.as_uri(), name=r.name) for r in roots or []]
        )

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentmem", "mcp", "--db", str(db)],
        env=_server_env(),
        cwd=str(cwd),
    )
    task = {"task": "run the tests and push"}
    out: dict[str, Any] = {}
    kw = {"list_roots_callback": list_roots} if roots is not None else {}
    with anyio.fail_after(60):
        async with stdio_client(params) as (read, write), ClientSession(read, write, **kw) as s:
            await s.initialize()
            schema = {t.name: t.input_schema for t in (await s.list_tools()).tools}
            out["properties"] = set(schema["agentmem_context"]["properties"])
            out["default"] = _text(await s.call_tool("agentmem_context", task))
            for name in ("alpha", "beta"):
                project = {**task, "project": str(cwd.parent / name)}
                out[name] = _text(await s.call_tool("agentmem_context", project))
    return out


def test_context_serves_the_project_from_argument_roots_or_working_folder(tmp_path: Path):
    import anyio

    db = _scoped_library(tmp_path)
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    out = anyio.run(_context_calls, db, alpha, None)  # no roots: the server's folder
    assert out["properties"] == {"task", "tools", "domains", "k", "project"}
    assert "make check" in out["default"] and "git pull --rebase" in out["default"]
    assert "make check" in out["alpha"] and "make check" not in out["beta"]
    assert "git pull --rebase" in out["beta"]
    out = anyio.run(_context_calls, db, beta, [alpha / "src"])  # the client's root wins
    assert "make check" in out["default"]
    out = anyio.run(_context_calls, db, alpha, [beta])
    assert "make check" not in out["default"] and "make check" in out["alpha"]
