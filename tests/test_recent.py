"""A prompt that says little is served with the conversation before it (``agentmem.hooks.recent``).

The tail reader on Claude Code and Codex lines, a huge file, bad lines and a missing file;
the short-prompt test (``agentmem.framing.says_little``); and the real hook command, in a
subprocess, serving a lesson for "3" that the prompt alone does not get.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentmem import Memory, Query
from agentmem import served as served_log
from agentmem.errors import InvalidRecordError
from agentmem.framing import content_words, says_little
from agentmem.hooks import recent as recent_module
from agentmem.hooks.recent import Recent, conversation, line_said, recent, tail_lines
from agentmem.hooks.run import prompt_served

ROOT = Path(__file__).resolve().parent.parent

OPTIONS = (
    "I can go on in three ways:\n1. rerun the unit tests\n2. rebase on main\n"
    "3. git push the feature branch to origin\nWhich one?"
)


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines),
        encoding="utf-8",
    )
    return path


def _claude(kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "sessionId": "s1",
        "cwd": "/w/app",
        "isSidechain": False,
        "message": {"role": kind, "content": content},
        **extra,
    }


def claude_lines(last: str = OPTIONS) -> list[Any]:
    """A Claude Code session: a prompt, a tool call and its result, the agent's question."""
    return [
        {"type": "file-history-snapshot", "snapshot": {}},
        _claude("user", "finish the release branch of the billing service"),
        _claude("assistant", [{"type": "text", "text": "Let me look at the branch."}]),
        _claude("assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]),
        _claude("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]),
        _claude("user", "<system-reminder>a hook's context</system-reminder>", isMeta=True),
        _claude("assistant", [{"type": "text", "text": last}]),
        {"type": "system", "subtype": "stop_hook_summary"},
    ]


def codex_lines() -> list[Any]:
    """A Codex rollout: the environment, a prompt, a call and its output, the agent's question."""

    def line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": "2026-03-01T10:00:00Z", "type": kind, "payload": payload}

    env = [{"type": "input_text", "text": "<environment_context>/w/app</environment_context>"}]
    return [
        line("session_meta", {"id": "c1", "cwd": "/w/app", "cli_version": "0.130.0"}),
        line("response_item", {"type": "message", "role": "user", "content": env}),
        line("event_msg", {"type": "user_message", "message": "<environment_context>x"}),
        line("event_msg", {"type": "user_message", "message": "finish the release branch"}),
        line("response_item", {"type": "function_call", "name": "shell", "call_id": "c"}),
        line("response_item", {"type": "function_call_output", "call_id": "c", "output": "ok"}),
        line("event_msg", {"type": "agent_message", "message": OPTIONS}),
        line("event_msg", {"type": "task_complete"}),
    ]


# -- the tail reader -----------------------------------------------------------------------------


def test_claude_code_lines_give_the_previous_prompt_and_the_agents_last_message(tmp_path: Path):
    path = _write(tmp_path / "s1.jsonl", claude_lines())
    assert recent(path) == Recent("finish the release branch of the billing service", OPTIONS)


def test_codex_lines_give_the_previous_prompt_and_the_agents_last_message(tmp_path: Path):
    path = _write(tmp_path / "rollout.jsonl", codex_lines())
    assert recent(path) == Recent("finish the release branch", OPTIONS)


def test_the_prompt_being_submitted_already_in_the_file_is_passed_over(tmp_path: Path):
    path = _write(tmp_path / "s1.jsonl", [*claude_lines(), _claude("user", "3")])
    assert recent(path, "3") == Recent("finish the release branch of the billing service", OPTIONS)
    assert recent(path) == Recent("3", None)  # without it: the last prompt is "3"
    rollout = codex_lines()
    said = {"type": "user_message", "message": "3"}
    rollout += [{"type": "event_msg", "payload": said}]  # Codex writes a prompt twice
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "3"}]}
    rollout += [{"type": "response_item", "payload": item}]
    path = _write(tmp_path / "rollout.jsonl", rollout)
    assert recent(path, "3") == Recent("finish the release branch", OPTIONS)


def test_lines_that_are_no_prompt_or_message_are_passed_over():
    assert line_said(_claude("user", "<local-command-stdout>ok</local-command-stdout>")) is None
    assert line_said(_claude("user", "[Request interrupted by user]")) is None
    assert line_said(_claude("user", "<task-notification>done</task-notification>")) is None
    assert line_said(_claude("user", "hi", isSidechain=True)) is None
    assert line_said(_claude("assistant", [{"type": "thinking", "thinking": "hm"}])) is None
    synthetic = _claude("assistant", [{"type": "text", "text": "No response requested."}])
    synthetic["message"]["model"] = "<synthetic>"
    assert line_said(synthetic) is None
    injected = "<system-reminder>lessons</system-reminder>fix it"
    assert line_said(_claude("user", injected)) == ("prompt", "fix it")
    assert line_said({"type": ["user"], "message": {}}) is None  # a hostile "type"
    assert line_said([1, 2]) is None


def test_bad_lines_are_skipped(tmp_path: Path):
    lines = claude_lines()
    lines[-2:-2] = ["{not json", "[1, 2, 3]", "null", '{"type": "assistant", "message": 7}']
    lines.append('{"type": "user", "message": {"content": "cut sho')  # a line being written
    lines.append("[" * 5000 + "]" * 5000)  # deeper than any reader accepts
    path = _write(tmp_path / "s1.jsonl", lines)
    assert recent(path) == Recent("finish the release branch of the billing service", OPTIONS)


def test_a_huge_file_is_read_only_at_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    output = "x" * 200_000
    big = _claude("user", [{"type": "tool_result", "tool_use_id": "t", "content": output}])
    lines = [_claude("user", "an old prompt"), *[big] * 40, *claude_lines()[1:]]
    path = _write(tmp_path / "s1.jsonl", lines)
    assert path.stat().st_size > 8_000_000
    read: list[int] = []
    real_read = recent_module.open_regular

    def counting(p: Any, mode: str = "rb") -> Any:
        fh = real_read(p, mode)
        original = fh.read

        def reading(n: int = -1) -> bytes:
            read.append(n)
            return bytes(original(n))

        fh.read = reading  # type: ignore[method-assign]
        return fh

    monkeypatch.setattr(recent_module, "open_regular", counting)
    assert recent(path) == Recent("finish the release branch of the billing service", OPTIONS)
    assert read == [recent_module.TAIL_BYTES]
    # a window that starts inside a line leaves that line out, and finds what it holds
    small = recent(path, max_bytes=len(json.dumps(claude_lines()[-2])) + 60)
    assert small == Recent(None, OPTIONS)
    # the previous prompt beyond the window is not found: the agent's message still is
    lines = [_claude("user", "an old prompt"), *[big] * 2, *claude_lines()[2:]]
    path = _write(tmp_path / "s2.jsonl", lines)
    assert recent(path, max_bytes=100_000) == Recent(None, OPTIONS)


def test_a_missing_or_special_file_holds_nothing(tmp_path: Path):
    assert recent(tmp_path / "none.jsonl") == Recent(None, None)
    assert tail_lines(tmp_path) == []  # a folder
    assert conversation(tmp_path / "none.jsonl", "3") is None
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo")
        assert recent(tmp_path / "fifo") == Recent(None, None)  # never blocks


def test_conversation_is_the_end_of_the_message_and_the_start_of_the_prompt(tmp_path: Path):
    ide = "<ide_opened_file>The user opened /w/app/x.py</ide_opened_file>"
    lines = [
        _claude("user", ide + "finish the release branch " + "p" * 3000),
        _claude("assistant", [{"type": "text", "text": "a" * 3000 + OPTIONS}]),
    ]
    path = _write(tmp_path / "s1.jsonl", lines)
    text = conversation(path, "3")
    assert text is not None
    reply, prompt = text.split("\n", 1)[0], text.rsplit("\n", 1)[1]
    assert text.startswith("a") and OPTIONS in text and "opened" not in text
    assert prompt.startswith("finish the release branch") and len(prompt) == 1000
    assert len(text) == 1000 + 1 + 1000 and reply


# -- the short-prompt test -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "prompt",
    [
        "3",
        "CA",
        "both",
        "commit",
        "proceed",
        "yes, go with option 2",
        "continue until all are done",
        "<ide_opened_file>The user opened the file /w/app/src/billing/invoice.py in the IDE. "
        "This may or may not be related.</ide_opened_file>proceed",
        "# Context from my IDE setup:\n\n## Active file: src/billing/invoice.py\n\n"
        "## Open tabs:\n- invoice.py: src/billing/invoice.py\n\n"
        "## My request for Codex:\ncontinue\n",
        "続けてください",
        "可以，开始实施",
        "ja. perfekt",
    ],
)
def test_a_prompt_that_names_nothing_says_little(prompt: str):
    assert says_little(prompt)


@pytest.mark.parametrize(
    "prompt",
    [
        "fix the failing test in the invoice parser",
        "add a --dry-run flag to the release script",
        "Por favor arregla el test que falla en el parser de facturas",
    ],
)
def test_a_prompt_that_states_a_task_says_enough(prompt: str):
    assert not says_little(prompt)


def test_content_words_leave_out_the_framing_and_the_words_of_a_reply():
    assert content_words("yes please, option b2, thanks") == []
    assert content_words("commit and push") == ["commit", "push"]


# -- serving ------------------------------------------------------------------------------------

PUSH = "If git push fails with 'has no upstream branch', run git push --set-upstream origin."
OTHER = "Run the invoice tests with make check, not pytest directly."


@pytest.fixture
def library(tmp_path: Path) -> Path:
    db = tmp_path / "lib.db"
    with Memory.open(db, embedder="hash") as mem:
        mem.add(PUSH, domain="git")
        mem.add(OTHER, domain="test")
    return db


def _payload(prompt: str, transcript: Path | None, cwd: Path) -> dict[str, Any]:
    out = {
        "session_id": "0a1b2c3d-0000-4000-8000-000000000001",
        "cwd": str(cwd),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    if transcript is not None:
        out["transcript_path"] = str(transcript)
    return out


def test_the_conversation_chooses_lessons_and_never_reaches_the_prompt(
    tmp_path: Path, library: Path
):
    path = _write(tmp_path / "s1.jsonl", claude_lines())
    got = prompt_served(str(library), _payload("3", path, tmp_path))
    assert got is not None and [x.text for x in got.lessons][:1] == [PUSH]
    assert "rebase" not in got.text and "Which one" not in got.text
    assert got.query.text == "3" and got.query.conversation is not None
    # a missing transcript, or none given: the prompt-only answer
    alone = prompt_served(str(library), _payload("3", None, tmp_path))
    missing = prompt_served(str(library), _payload("3", tmp_path / "gone.jsonl", tmp_path))
    assert alone is not None and missing is not None
    assert missing.lessons == alone.lessons and PUSH not in alone.text
    assert missing.query.conversation is None


def test_a_prompt_that_says_enough_reads_no_transcript(
    tmp_path: Path, library: Path, monkeypatch: pytest.MonkeyPatch
):
    calls: list[Any] = []

    def tail(*args: Any, **kwargs: Any) -> list[bytes]:
        calls.append(args)
        return []

    monkeypatch.setattr(recent_module, "tail_lines", tail)
    path = _write(tmp_path / "s1.jsonl", claude_lines())
    prompt_served(str(library), _payload("rerun the invoice unit tests with make", path, tmp_path))
    assert calls == []
    prompt_served(str(library), _payload("3", path, tmp_path))
    assert len(calls) == 1


def test_the_served_log_and_the_holdout_read_the_prompt_alone(tmp_path: Path, library: Path):
    q = Query("3", conversation="git push the feature branch")
    assert q.searched == "3\ngit push the feature branch"
    assert q.replace(conversation=None).searched == "3" and Query("3").conversation is None
    assert len(Query("3", conversation="x" * 10_000).conversation or "") == 4000
    with pytest.raises(InvalidRecordError, match="conversation must be text"):
        Query("3", conversation=7)  # type: ignore[arg-type]
    path = _write(tmp_path / "s1.jsonl", claude_lines())
    got = prompt_served(str(library), _payload("3", path, tmp_path))
    assert got is not None and got.logged
    [line] = Path(served_log.log_path(library)).read_text().splitlines()
    assert json.loads(line)["prompt"] == served_log.prompt_hash("3")


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_the_hook_command_serves_a_lesson_for_3_from_the_transcript(
    tmp_path: Path, library: Path, client: str
):
    lines = claude_lines() if client == "claude-code" else codex_lines()
    path = _write(tmp_path / "session.jsonl", lines)
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
        ),
    }
    env.pop("AGENTMEM_DB", None)
    argv = [sys.executable, "-m", "agentmem", "hooks", "run", client, "--db", str(library)]

    def hook(payload: dict[str, Any]) -> str:
        p = subprocess.run(
            argv, input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=120
        )
        assert p.returncode == 0 and p.stderr == b"", p.stderr
        if not p.stdout:
            return ""
        return str(json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"])

    served = hook(_payload("3", path, tmp_path))
    assert "git push --set-upstream" in served and "Which one" not in served
    assert "git push --set-upstream" not in hook(_payload("3", None, tmp_path))
    gone = hook(_payload("3", tmp_path / "gone.jsonl", tmp_path))
    assert "git push --set-upstream" not in gone
