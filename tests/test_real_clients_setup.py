"""``agentmem setup`` with the real Claude Code and Codex CLIs (issue 31).

A user who has worked with the client for a while (its history on disk, no agentmem
yet) runs ``agentmem setup``: the client is found with its version, its hooks are
installed with learning on, its history is imported and learned from, and the next
prompt in the client gets the lesson. The clients' model is
:mod:`tests.scripted_model`; CI requires the clients (``AGENTMEM_REAL_CLIENTS_REQUIRED``).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from agentmem import Memory

from .real_clients import CLAUDE_VERSION, CODEX_VERSION, Sandbox
from .scripted_model import Scenario, Turn, shell
from .test_real_clients import CLIENTS, NOTES, _fix_the_path, _need, _served


@pytest.fixture(params=CLIENTS)
def client(request: pytest.FixtureRequest) -> str:
    return _need(request.param)


_ISO = re.compile(r'"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)(Z|[+-]\d\d:\d\d)"')


def _an_hour_ago(paths: list[Path]) -> None:
    """Move every timestamp of the transcripts an hour back: history from earlier in the
    day, past the 120 s window in which a user may still correct a run."""

    def back(m: re.Match[str]) -> str:
        t = datetime.fromisoformat(m.group(1)) - timedelta(hours=1)
        stamp = t.isoformat(timespec="milliseconds" if "." in m.group(1) else "seconds")
        return f'"{stamp}{m.group(2)}"'

    for p in paths:
        p.write_text(_ISO.sub(back, p.read_text()))


def test_setup_wires_the_client_imports_its_history_and_the_next_prompt_gets_a_lesson(
    tmp_path: Path, client: str
) -> None:
    box = Sandbox.create(tmp_path, client, NOTES)
    calls = _fix_the_path()
    for prompt in ["Show me the notes", "Print the notes for me", "What do the notes say"]:
        s = box.session(prompt, Scenario((Turn(prompt, calls, "The notes say: the notes"),)))
        assert s.returncode == 0, s.stderr[-2000:]
    assert not box.library.exists()  # no agentmem yet: only the client's own history
    _an_hour_ago(box.transcripts())

    dry = box.agentmem("setup", "--dry-run", "--client", client).stdout
    assert "would add agentmem's UserPromptSubmit and Stop hooks" in dry
    assert not box.library.exists()

    report = json.loads(box.agentmem("setup", "--client", client, "--json").stdout)
    (found,) = report["clients"]
    assert found["version"] == (CLAUDE_VERSION if client == "claude-code" else CODEX_VERSION)
    assert found["files"] >= 3
    assert any("docs/notes.txt" in text for text in report["learned"]), report
    with Memory.open(box.library) as mem:
        lessons = [e.text for e in mem.experiences()]
        assert len(mem.trajectories()) >= 3

    prompt = "Show me the notes again"
    follow = ("docs/notes.txt", (shell("cat docs/notes.txt"),))
    later = box.session(prompt, Scenario((Turn(prompt, calls, "The notes.", follow),)))
    assert later.returncode == 0, later.stderr[-2000:]
    assert [t for t in lessons if _served(t, later)], (lessons, later.context[-3000:])
    status = json.loads(box.agentmem("status", "--json").stdout)
    assert any(s["installed"] and s["learning"] for s in status["hooks"])
    assert any(k.startswith(f"{client}-UserPromptSubmit") for k in status["last_fired"])
    log = json.loads(box.agentmem("log", "--json").stdout)
    assert any("docs/notes.txt" in (s["text"] or "") for row in log for s in row["served"])

    again = json.loads(box.agentmem("setup", "--client", client, "--json").stdout)
    assert again["learned"] == []  # running it twice changes nothing new
