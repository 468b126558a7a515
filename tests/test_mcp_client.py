"""The client that asks: a lesson about Claude Code's own Bash tool is not served to Codex,
whichever route asks (the MCP server from the session's ``clientInfo``, ``agentmem context
--client``, the API), and is served where the client is unknown."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from agentmem import Memory
from agentmem.agents import client_of_mcp

from .conftest import ROOT, run_cli

PROMPT = "cd into the backend and install the packages"
BASH = (
    "The Bash tool keeps the working directory between calls: after a cd into the "
    "backend, install the packages with absolute paths."
)
ANY = "Install the backend's packages with npm ci, not npm install."


def test_each_client_is_known_by_the_name_it_gives_mcp() -> None:
    assert client_of_mcp("claude-code") == "claude-code"
    assert client_of_mcp("codex-mcp-client") == "codex"
    for other in ("Claude Code", "codex", "attacker", "", None, 3, ["claude-code"]):
        assert client_of_mcp(other) is None, other


@pytest.fixture
def library(tmp_path: Path) -> dict[str, object]:
    db = tmp_path / "lib.db"
    with Memory.open(db, embedder="hash") as mem:
        bash = mem.add(BASH, domain="shell")
        anyone = mem.add(ANY, domain="shell")
        with mem.db.conn:
            mem.db.execute(
                "UPDATE experiences SET rule = ? WHERE id = ?",
                [json.dumps({"client": "claude-code"}), bash.id],
            )
    return {"db": db, "bash": bash.id, "any": anyone.id, "cwd": tmp_path}


def _ids(text: str) -> set[int]:
    import re

    return {int(m) for m in re.findall(r"\[L(\d+)\]", text)}


def test_the_api_and_the_cli_leave_out_the_other_clients_tool(library) -> None:
    db, bash, anyone = library["db"], library["bash"], library["any"]
    with Memory.open(db) as mem:
        assert {bash, anyone} <= _ids(mem.context(PROMPT))  # unknown: both
        assert {bash, anyone} <= _ids(mem.context(PROMPT, client="claude-code"))
        codex = _ids(mem.context(PROMPT, client="codex"))
        assert anyone in codex and bash not in codex
    for lean in (True, False):  # the lean entry, and the full CLI (--global sends it there)
        extra = [] if lean else ["--global"]
        for client, expect in ((None, True), ("claude-code", True), ("codex", False)):
            args = ["context", *extra, *(["--client", client] if client else []), "--", PROMPT]
            p = run_cli(*args, db=db)
            assert p.returncode == 0, p.stderr
            got = _ids(p.stdout.decode())
            assert anyone in got and (bash in got) == expect, (lean, client, got)
    p = run_cli("context", "--client", "cursor", "--", PROMPT, db=db)
    assert p.returncode == 2 and b"cursor" in p.stderr and not p.stdout


async def _served(db: Path, name: str | None) -> tuple[str, list[int]]:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.types import Implementation

    env = {"PYTHONPATH": str(ROOT), "HOME": os.environ.get("HOME", "/tmp")}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agentmem", "mcp", "--db", str(db)], env=env
    )
    info = None if name is None else Implementation(name=name, version="1")
    with anyio.fail_after(120):
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, client_info=info) as s,
        ):
            await s.initialize()
            got = await s.call_tool("agentmem_context", {"task": PROMPT})
            assert not got.is_error
            text = "".join(getattr(c, "text", "") for c in got.content)
            hits = await s.call_tool("agentmem_retrieve", {"task": PROMPT})
            assert not hits.is_error
            ids = [h["id"] for h in (hits.structured_content or {}).get("result", [])]
    return text, ids


def test_the_mcp_server_knows_its_client_by_its_initialize(library) -> None:
    import anyio

    db, bash, anyone = library["db"], library["bash"], library["any"]
    for name, expect in (("claude-code", True), ("codex-mcp-client", False), (None, True)):
        text, ids = anyio.run(_served, db, name)
        assert anyone in _ids(text) and anyone in ids, (name, text, ids)
        assert (bash in _ids(text)) == expect and (bash in ids) == expect, (name, text, ids)
