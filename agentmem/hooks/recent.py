"""The conversation just before a prompt, read from the tail of its transcript.

A prompt that says little ("3", "both", "commit", "proceed", an IDE's header and
"continue": :func:`agentmem.framing.says_little`) answers what came before it: the
options the agent's last message offered, the task of the user's previous prompt. Both
Claude Code and Codex give the ``UserPromptSubmit`` hook the session's
``transcript_path``; :func:`recent` reads its last :data:`TAIL_BYTES` (never the whole
file) and finds, walking back from the end, the agent's last text message and the
user's prompt before it, in either client's lines (a line that is not JSON, or not of a
kind read here, is skipped). :func:`conversation` is what the hook searches with beside
the prompt (:attr:`agentmem.serving.Query.conversation`): it only chooses lessons, and
none of its text reaches the prompt.

Standard library only, with :mod:`agentmem.framing` for what a client writes around a
prompt; the prompt hook imports it.
"""

# No ``from __future__ import annotations``: the NamedTuple fields of Recent are then types,
# not strings that typing compiles (the first compile() of a process costs the prompt hook
# about 2 ms).
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..files import open_regular
from ..framing import (
    CLIENT_TEXT,
    CODEX_CLIENT_TEXT,
    INJECTED,
    NOTIFICATION_TAGS,
    strip_context,
)
from ..jsonsafe import loads

__all__ = [
    "MAX_PROMPT_CHARS",
    "MAX_REPLY_CHARS",
    "TAIL_BYTES",
    "Recent",
    "conversation",
    "line_said",
    "recent",
    "tail_lines",
]

#: How much of the end of a transcript is read: the agent's last message and, unless the
#: last turn's tool outputs were larger, the prompt before it.
TAIL_BYTES = 256 * 1024
#: How much of the agent's last message is searched: its end, where the options it
#: offers and the question it asks are.
MAX_REPLY_CHARS = 1000
#: How much of the user's previous prompt is searched: its start, where the task is.
MAX_PROMPT_CHARS = 1000
#: Claude Code's text for a turn the user stopped: no prompt.
_INTERRUPTED = "[Request interrupted by user"


class Recent(NamedTuple):
    """What came before a prompt: the user's previous prompt and the agent's last text
    message after it (None when the tail holds none)."""

    prompt: str | None = None
    reply: str | None = None


def tail_lines(path: str | os.PathLike[str], max_bytes: int = TAIL_BYTES) -> list[bytes]:
    """The whole lines in the last ``max_bytes`` of the plain file ``path``, oldest first
    (a line cut by the window's start is left out); none when it cannot be read."""
    try:
        with open_regular(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            start = max(0, size - max_bytes)
            fh.seek(start)
            data = fh.read(max_bytes)
    except (OSError, ValueError):
        return []
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the window starts inside this line
    return [x for x in lines if x.strip()]


def _blocks_text(content: Any) -> str:
    """The text blocks of a message's content (a string, or blocks), joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        b["text"]
        for b in content
        if isinstance(b, Mapping)
        and b.get("type") in ("text", "input_text", "output_text")
        and isinstance(b.get("text"), str)
    )


def _claude_prompt(obj: Mapping[str, Any]) -> str | None:
    if any(obj.get(k) is True for k in ("isSidechain", "isMeta", "isCompactSummary")):
        return None  # a sub-agent's line, the client's own, a compacted conversation's summary
    message = obj.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content
    ):
        return None
    text = INJECTED.sub("", _blocks_text(content)).strip()
    if text.startswith((*CLIENT_TEXT, *NOTIFICATION_TAGS, _INTERRUPTED)):
        return None
    return text or None


def _claude_reply(obj: Mapping[str, Any]) -> str | None:
    message = obj.get("message")
    if obj.get("isSidechain") is True or not isinstance(message, Mapping):
        return None
    if message.get("model") == "<synthetic>":  # written by Claude Code, not the model
        return None
    return _blocks_text(message.get("content")).strip() or None


def _codex_said(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    payload = obj.get("payload")
    if not isinstance(payload, Mapping):
        return None
    ptype = payload.get("type")
    text: Any = None
    if obj.get("type") == "event_msg" and ptype == "user_message":
        if payload.get("kind") in (None, "plain"):
            text, kind = payload.get("message"), "prompt"
    elif obj.get("type") == "event_msg" and ptype == "agent_message":
        text, kind = payload.get("message"), "reply"
    elif obj.get("type") == "response_item" and ptype == "message":
        role = payload.get("role")
        if role in ("user", "assistant"):
            text = _blocks_text(payload.get("content"))
            kind = "prompt" if role == "user" else "reply"
    if not isinstance(text, str) or not text.strip():
        return None
    text = text.strip()
    if kind == "prompt" and text.startswith((*CODEX_CLIENT_TEXT, *NOTIFICATION_TAGS)):
        return None
    if kind == "prompt" and obj.get("type") == "response_item" and text.startswith("<"):
        return None  # context Codex wrote in tags (a shell command's, a skill's): as the importer
    return kind, text


def line_said(obj: Any) -> tuple[str, str] | None:
    """What one transcript line (parsed) says: ``("prompt", text)`` for a prompt the user
    typed, ``("reply", text)`` for the agent's text message, else None (a tool call or
    result, a line the client wrote itself, a sub-agent's line). Claude Code's and Codex's
    lines alike."""
    if not isinstance(obj, Mapping):
        return None
    kind = obj.get("type")
    if kind == "user":
        prompt = _claude_prompt(obj)
        return None if prompt is None else ("prompt", prompt)
    if kind == "assistant":
        reply = _claude_reply(obj)
        return None if reply is None else ("reply", reply)
    if kind in ("event_msg", "response_item"):
        return _codex_said(obj)
    return None


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def recent(
    path: str | os.PathLike[str], current: str | None = None, max_bytes: int = TAIL_BYTES
) -> Recent:
    """The user's previous prompt and the agent's last text message after it, from the
    last ``max_bytes`` of the transcript ``path`` (see the module doc). ``current``: the
    prompt being submitted; a client that wrote it into the file already has it as the
    last prompt, which is then passed over. Empty when the file is missing, unreadable
    or holds neither."""
    prompt: str | None = None
    reply: str | None = None
    for line in reversed(tail_lines(path, max_bytes)):
        if not line.lstrip().startswith(b"{"):
            continue  # no object: nothing either client writes (parsing each costs the hook)
        try:
            said = line_said(loads(line, what="a transcript line"))
        except ValueError:  # a line cut short or not JSON (JSONInputError): the next one back
            continue
        if said is None:
            continue
        kind, text = said
        if kind == "reply":
            reply = text if reply is None else reply
        elif reply is None and current is not None and _same(text, current):
            continue  # the prompt being submitted, written already (Codex: twice)
        else:
            prompt = text
            break
    return Recent(prompt, reply)


def conversation(
    path: str | os.PathLike[str], current: str | None = None, max_bytes: int = TAIL_BYTES
) -> str | None:
    """What the hook searches with beside a prompt that says little: the end of the agent's
    last message (:data:`MAX_REPLY_CHARS`) and the start of the user's previous prompt
    without an IDE's framing (:data:`MAX_PROMPT_CHARS`), from :func:`recent`; None when
    the transcript holds neither."""
    got = recent(path, current, max_bytes)
    parts = []
    if got.reply:
        parts.append(got.reply[-MAX_REPLY_CHARS:])
    if got.prompt:
        parts.append(strip_context(got.prompt)[:MAX_PROMPT_CHARS])
    text = "\n".join(p for p in parts if p.strip())
    return text or None
