"""agentmem's plugin for Claude Code and Codex, from this repository's marketplaces (issue 31).

The repository is a marketplace for both clients: ``.claude-plugin/marketplace.json``
(Claude Code) and ``.agents/plugins/marketplace.json`` (Codex) offer
``plugins/agentmem``, whose hooks run ``agentmem hooks run CLIENT --learn``. The
real clients validate it, install it from a local marketplace, and its hooks fire
and inject with the scripted model.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem import Memory

from .real_clients import ROOT, Sandbox
from .scripted_model import Scenario, Turn, shell
from .test_real_clients import CLIENTS, NOTES, _need, _served

PLUGIN = ROOT / "plugins" / "agentmem"
LESSON = "In this project the notes are at docs/notes.txt, not notes.txt."


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def test_the_manifests_agree_with_each_other_and_with_the_package() -> None:
    found = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert found is not None
    version = found.group(1)
    claude_market = _json(ROOT / ".claude-plugin" / "marketplace.json")
    codex_market = _json(ROOT / ".agents" / "plugins" / "marketplace.json")
    (c_entry,) = claude_market["plugins"]
    (x_entry,) = codex_market["plugins"]
    assert (ROOT / c_entry["source"]).resolve() == PLUGIN.resolve()
    assert (ROOT / x_entry["source"]["path"]).resolve() == PLUGIN.resolve()
    for client, manifest in (("claude-code", ".claude-plugin"), ("codex", ".codex-plugin")):
        m = _json(PLUGIN / manifest / "plugin.json")
        assert m["name"] == "agentmem" and m["version"] == version
        hooks = _json(PLUGIN / m["hooks"])["hooks"]
        assert set(hooks) == {"UserPromptSubmit", "Stop"}
        for entries in hooks.values():
            (h,) = entries[0]["hooks"]
            assert h["command"] == f"agentmem hooks run {client} --learn"


@pytest.fixture(params=CLIENTS)
def client(request: pytest.FixtureRequest) -> str:
    return _need(request.param)


def _client(box: Sandbox, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        [str(box.binary), *args],
        env=env,
        cwd=box.project,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert p.returncode == 0, f"{' '.join(args)}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    return p


def test_the_real_client_installs_the_plugin_and_its_hooks_inject_and_record(
    tmp_path: Path, client: str
) -> None:
    box = Sandbox.create(tmp_path, client, NOTES)
    # the agentmem command on PATH, as `uv tool install agentmem` leaves it
    env = {**box.env, "PATH": os.path.dirname(sys.executable) + os.pathsep + box.env["PATH"]}
    if client == "claude-code":
        out = _client(box, env, "plugin", "validate", str(ROOT)).stdout
        assert "Validation passed" in out
        out = _client(box, env, "plugin", "validate", str(PLUGIN)).stdout
        assert "Validation passed" in out
        _client(box, env, "plugin", "marketplace", "add", str(ROOT))
        _client(box, env, "plugin", "install", "agentmem@agentmem")
    else:
        _client(box, env, "plugin", "marketplace", "add", str(ROOT))
        _client(box, env, "plugin", "add", "agentmem@agentmem")
        listed = _client(box, env, "plugin", "list").stdout
        assert "agentmem@agentmem" in listed and "installed, enabled" in listed
    box.agentmem("add", LESSON)

    prompt = "Show me the notes"
    turn = Turn(prompt, (shell("cat docs/notes.txt"),), "The notes.")
    s = box.session(prompt, Scenario((turn,)), env={"PATH": env["PATH"]})
    assert s.returncode == 0, s.stderr[-2000:]
    assert _served(LESSON, s), s.context[-3000:]  # the plugin's UserPromptSubmit hook
    with Memory.open(box.library) as mem:  # the plugin's Stop hook imported the session
        runs = mem.trajectories()
    assert [t.task for t in runs] == [prompt]
    status = json.loads(box.agentmem("status", "--json").stdout)
    assert any("(plugin agentmem)" in site["path"] for site in status["hooks"])
    setup = box.agentmem("setup", "--client", client, "--dry-run").stdout
    assert "agentmem's plugin brings the hooks: nothing to install" in setup
