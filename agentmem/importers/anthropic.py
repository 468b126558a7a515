"""Anthropic Messages API conversations: ``agentmem import --format anthropic FILE``.

The file holds conversations in the (stable, versioned) Messages API shape:

- a request body ``{"messages": [...], "system": ..., "model": ...}``, or a JSON
  array of them, or one per line (JSON lines);
- or a bare array of messages ``[{"role": "user", "content": ...}, ...]``.

Assistant messages carry ``tool_use{id, name, input}`` blocks (and server tools'
``server_tool_use`` / ``mcp_tool_use``); user messages the
``tool_result{tool_use_id, content, is_error}`` blocks. A user message without
tool results is a prompt. A conversation is one session: its ``id`` (or
``session_id``, or ``metadata.session_id``) when it has one, else a hash of its
first message, so a log that repeats a growing conversation adds only the new
turns. The Messages API has no interruptions or denials: verdicts come from
``agentmem feedback`` and the acceptance window only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidRecordError
from ._json import loads
from .formats import ParsedFile, TranscriptFormat
from .turns import FileReport, Turn, TurnBuilder, read_json_lines, text_of

__all__ = ["FORMAT", "AnthropicFile", "parse_anthropic"]

SOURCE = "anthropic"
_CALLS = (
    "tool_use",
    "server_tool_use",
    "mcp_tool_use",
)
_TEXT = (
    "text",
    "thinking",
    "redacted_thinking",
    "image",
    "document",
)


AnthropicFile = ParsedFile  # the name earlier versions exported


def _session_id(conv: Mapping[str, Any], messages: Sequence[Any]) -> str:
    meta = conv.get("metadata")
    for value in (
        conv.get("id"),
        conv.get("session_id"),
        meta.get("session_id") if isinstance(meta, Mapping) else None,
    ):
        if isinstance(value, str) and value.strip():
            return value.strip()[:200]
    first = json.dumps(messages[0] if messages else None, sort_keys=True, ensure_ascii=False)
    return "sha256-" + hashlib.sha256(first.encode("utf-8", "replace")).hexdigest()[:24]


def _conversations(data: bytes, report: FileReport) -> list[tuple[int, Any]]:
    """(line or record number, conversation) for each conversation in the file."""
    try:
        doc = loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise InvalidRecordError(f"the file is not valid UTF-8 (byte {e.start})") from None
    except ValueError:
        doc = None  # not one JSON document: JSON lines
    if doc is None:
        lines, bad, truncated = read_json_lines(data)
        report.bad_lines, report.truncated = bad, truncated
        if not lines and not truncated:
            raise InvalidRecordError(
                "the file is neither a JSON document nor JSON lines of conversations"
                + (f" (line {bad[0][0]}: {bad[0][1]})" if bad else "")
            )
        items: list[tuple[int, Any]] = [(x.number, x.data) for x in lines]
        if items and all("role" in d and "messages" not in d for _, d in items):
            return [(items[0][0], {"messages": [d for _, d in items]})]  # one message a line
        return items
    if isinstance(doc, Mapping):
        return [(1, doc)]
    if isinstance(doc, list):
        if all(isinstance(m, Mapping) and "role" in m and "messages" not in m for m in doc):
            return [(1, {"messages": doc})]
        return list(enumerate(doc, 1))
    raise InvalidRecordError(
        f"expected a conversation (an object with 'messages') or a list, not {type(doc).__name__}"
    )


def parse_anthropic(data: bytes, *, path: str = "") -> ParsedFile:
    """Turns of the conversations in one file. Raises :class:`InvalidRecordError` only
    when the file as a whole is unreadable; bad conversations are skipped and counted."""
    report = FileReport(path)
    convs = _conversations(data, report)
    turns: dict[tuple[str, str], Turn] = {}  # a later copy of a turn replaces an earlier one
    for where, conv in convs:
        messages = conv.get("messages") if isinstance(conv, Mapping) else None
        if not isinstance(messages, list):
            report.skipped_lines["record without a 'messages' list"] += 1
            continue
        for t in _turns(conv, messages, where, path, report):
            old = turns.get(t.key)
            if old is None or t.complete or not old.complete:
                turns[t.key] = t
    return ParsedFile(tuple(turns.values()), report)


def _turns(
    conv: Mapping[str, Any], messages: list[Any], where: int, path: str, report: FileReport
) -> list[Turn]:
    session = _session_id(conv, messages)
    b = TurnBuilder(report)
    meta: dict[str, Any] = {"transcript": path} if path else {}
    if isinstance(conv.get("model"), str):
        meta["model"] = conv["model"]
    last_role = None
    last_has_call = False
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or m.get("role") not in ("user", "assistant"):
            report.skipped_blocks["message without a user or assistant role"] += 1
            continue
        content = m.get("content")
        blocks = content if isinstance(content, list) else []
        results = [x for x in blocks if isinstance(x, Mapping) and _is_result(x)]
        calls = [x for x in blocks if isinstance(x, Mapping) and x.get("type") in _CALLS]
        for x in blocks:
            kind = x.get("type") if isinstance(x, Mapping) else "non-object"
            if (
                kind not in _CALLS
                and kind not in _TEXT
                and not (isinstance(x, Mapping) and _is_result(x))
            ):
                report.skipped_blocks[str(kind)[:40]] += 1
        if m["role"] == "user" and not results:
            b.prompt(session, f"m{i}", text_of(content), where, meta=meta)
        for c in calls:
            b.call(c.get("id"), c.get("name"), c.get("input"))
        for r in results:
            inner = r.get("content")
            failed = r.get("is_error") is True or (
                isinstance(inner, Mapping) and str(inner.get("type", "")).endswith("_error")
            )
            b.result(r.get("tool_use_id"), text_of(inner), success=not failed)
        last_role, last_has_call = m["role"], bool(calls)
    b.end(last_role == "assistant" and not last_has_call)
    return b.finish()


def _is_result(block: Mapping[str, Any]) -> bool:
    kind = block.get("type")
    return isinstance(kind, str) and kind.endswith("tool_result") and "tool_use_id" in block


def detect(objects: Sequence[Mapping[str, Any]]) -> bool | None:
    """Messages API conversations (``messages``) or messages (``role``) a line; a file that
    is one JSON document cannot be told from its lines (None)."""
    if not objects:
        return None
    return any(
        isinstance(o.get("messages"), list)
        or (o.get("role") in ("user", "assistant") and "content" in o and "type" not in o)
        for o in objects
    )


def _parse(
    data: bytes,
    *,
    path: str,
    final: bool,
    quiet: bool,
    subagent: Mapping[str, Any] | None,
) -> ParsedFile:
    return parse_anthropic(data, path=path)


FORMAT = TranscriptFormat(
    name=SOURCE,
    description="Anthropic Messages API conversations (a JSON document or JSON lines)",
    parse=_parse,
    detect=detect,
    pattern="*.json*",
    noun="an Anthropic Messages API conversation",
)
