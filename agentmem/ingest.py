"""Reading trajectories from files: agentmem's JSON lines and OpenAI chat transcripts.

Parsing is all-or-nothing by default: the first bad line raises
:class:`InvalidRecordError` naming the line and the field, and nothing is
recorded. With ``skip_bad=True`` bad lines are collected instead.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs

from .errors import InvalidRecordError
from .records import Trajectory, check_json_value, step_from_mapping

__all__ = ["ParseResult", "is_error_output", "parse_jsonl", "parse_openai", "trajectory_from_json"]

RECORD_FIELDS = frozenset(
    {"task", "group", "steps", "accepted", "condition", "meta", "state_ok", "essential_actions"}
)


@attrs.frozen
class ParseResult:
    """Trajectories read from a file, and the errors of the lines that were skipped."""

    trajectories: tuple[Trajectory, ...]
    errors: tuple[str, ...] = ()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _loads(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError("the JSON nests too deeply") from None


def trajectory_from_json(data: Any, *, source: str = "record") -> Trajectory:
    """Build a trajectory from one decoded JSON record (see ``agentmem record --help``)."""
    if not isinstance(data, Mapping):
        raise InvalidRecordError(f"a record must be a JSON object, not {type(data).__name__}")
    unknown = set(data) - RECORD_FIELDS
    if unknown:
        raise InvalidRecordError(
            f"unknown field(s) {', '.join(sorted(unknown))}; "
            f"expected {', '.join(sorted(RECORD_FIELDS))}"
        )
    for name in ("task", "steps"):
        if name not in data:
            raise InvalidRecordError(f"field '{name}' is missing")
    task = data["task"]
    if not isinstance(task, str):
        raise InvalidRecordError(f"field 'task' must be text, not {type(task).__name__}")
    steps = data["steps"]
    if not isinstance(steps, list):
        raise InvalidRecordError(f"field 'steps' must be a list, not {type(steps).__name__}")
    parsed = [
        step_from_mapping(s, f"steps[{i}]") if isinstance(s, Mapping) else s
        for i, s in enumerate(steps)
    ]
    for i, s in enumerate(parsed):
        if not hasattr(s, "tool"):
            raise InvalidRecordError(f"steps[{i}] must be an object, not {type(s).__name__}")
    group = data.get("group")
    if group is not None and not isinstance(group, str):
        raise InvalidRecordError(f"field 'group' must be text, not {type(group).__name__}")
    meta = data.get("meta") or {}
    check_json_value(meta, "meta")
    kw: dict[str, Any] = {
        "task": task,
        "steps": parsed,
        "accepted": data.get("accepted"),
        "condition": data.get("condition"),
        "meta": meta,
        "state_ok": data.get("state_ok"),
        "essential_actions": data.get("essential_actions"),
        "source": source,
    }
    if group is not None:
        kw["group"] = group
    return Trajectory(**kw)


def _lines(source: Iterable[bytes | str]) -> Iterator[tuple[int, str | None, str | None]]:
    """(line number, text or None, decode error or None) for each non-blank line."""
    for n, raw in enumerate(source, 1):
        if isinstance(raw, bytes):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                yield n, None, f"not valid UTF-8 (byte {e.start})"
                continue
        else:
            text = raw
        if text.strip():
            yield n, text, None


def parse_jsonl(
    source: Iterable[bytes | str], *, skip_bad: bool = False, origin: str = "record"
) -> ParseResult:
    """Parse agentmem JSON lines (one trajectory per line).

    Raises :class:`InvalidRecordError` with ``where="line N"`` at the first bad
    line unless ``skip_bad`` is true, in which case bad lines are reported in
    :attr:`ParseResult.errors` and the good ones are returned.
    """
    good: list[Trajectory] = []
    errors: list[str] = []
    for n, text, decode_error in _lines(source):
        try:
            if decode_error:
                raise InvalidRecordError(decode_error)
            assert text is not None
            try:
                data = _loads(text)
            except ValueError as e:
                raise InvalidRecordError(f"invalid JSON: {e}") from None
            good.append(trajectory_from_json(data, source=origin))
        except InvalidRecordError as e:
            err = InvalidRecordError(str(e), where=f"line {n}")
            if not skip_bad:
                raise err from None
            errors.append(str(err))
    return ParseResult(tuple(good), tuple(errors))


def is_error_output(text: str) -> bool:
    """A tool output that reports failure: it starts with "Error" or is JSON with an "error" key."""
    s = text.lstrip()
    if s[:5].lower() == "error":
        return True
    if s.startswith("{"):
        try:
            obj = json.loads(s)
        except ValueError:
            return False
        return isinstance(obj, dict) and "error" in obj
    return False


def _content_text(content: Any) -> str:
    """A tool message's content as text: a string, OpenAI content parts, or JSON otherwise."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, Mapping) for p in content):
        return "".join(str(p.get("text", "")) for p in content if p.get("type", "text") == "text")
    return json.dumps(content, ensure_ascii=False)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _openai_record(rec: Mapping[str, Any], where: str) -> Trajectory:
    messages = rec.get("traj", rec.get("messages"))
    if not isinstance(messages, list):
        raise InvalidRecordError(
            f"{where}: expected 'messages' (or 'traj'), a list of chat messages"
        )
    info = _mapping(rec.get("info"))
    task_info = _mapping(info.get("task"))
    task = task_info.get("instruction") or rec.get("task")
    if not task:
        task = next(
            (
                m.get("content")
                for m in messages
                if isinstance(m, Mapping) and m.get("role") == "user" and m.get("content")
            ),
            None,
        )
    if not isinstance(task, str) or not task.strip():
        raise InvalidRecordError(f"{where}: no task text (no instruction and no user message)")
    # Pair each tool message with the earliest unanswered call of the same id (ids can
    # repeat within one transcript), or the earliest unanswered call when none matches.
    calls: list[dict[str, Any]] = []
    pending: list[int] = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise InvalidRecordError(f"{where}: message {i} is not an object")
        if m.get("role") == "tool":
            cid = m.get("tool_call_id")
            match = next(
                (j for j in pending if calls[j]["id"] == cid), pending[0] if pending else None
            )
            if match is not None:
                pending.remove(match)
                calls[match]["output"] = _content_text(m.get("content"))
            continue
        tool_calls = m.get("tool_calls") or []
        if not isinstance(tool_calls, list):
            raise InvalidRecordError(f"{where}: message {i} has tool_calls that is not a list")
        for call in tool_calls:
            if not isinstance(call, Mapping):
                raise InvalidRecordError(
                    f"{where}: message {i} has a tool call that is not an object"
                )
            fn = call.get("function") or {}
            if not isinstance(fn, Mapping):
                raise InvalidRecordError(
                    f"{where}: message {i} has a tool call whose function is not an object"
                )
            calls.append({"id": call.get("id"), "fn": fn, "where": i, "output": None})
            pending.append(len(calls) - 1)
    steps = []
    for c in calls:
        fn = c["fn"]
        args = fn.get("arguments") or "{}"
        try:
            params = _loads(args) if isinstance(args, str) else args
        except ValueError:
            params = {"_raw_arguments": args}
        if not isinstance(params, Mapping):
            params = {"_arguments": params}
        output = c["output"]
        steps.append(
            step_from_mapping(
                {
                    "tool": fn.get("name"),
                    "params": dict(params),
                    "output": output if output is not None else "(no tool output recorded)",
                    "success": output is not None and not is_error_output(output),
                },
                f"{where}: message {c['where']} tool call",
            )
        )
    reward = rec.get("reward")
    accepted = None
    if isinstance(reward, (int, float)) and not isinstance(reward, bool) and math.isfinite(reward):
        accepted = reward >= 0.5
    r_state = _mapping(_mapping(info.get("reward_info")).get("info")).get("r_actions")
    state_ok = None
    if isinstance(r_state, (int, float)):
        state_ok = r_state >= 1.0
    elif accepted is not None:
        state_ok = accepted
    task_id = rec.get("task_id")
    group = f"task-{task_id}" if task_id is not None else None
    meta = {k: rec[k] for k in ("task_id", "trial", "reward") if k in rec}
    actions = task_info.get("actions")
    kw: dict[str, Any] = {
        "task": task,
        "steps": steps,
        "accepted": accepted,
        "meta": meta,
        "state_ok": state_ok,
        "essential_actions": actions if isinstance(actions, list) else None,
        "source": "openai",
    }
    if group:
        kw["group"] = group
    return Trajectory(**kw)


def parse_openai(data: bytes, *, skip_bad: bool = False) -> ParseResult:
    """Parse OpenAI chat transcripts with ``tool_calls``: a JSON array or JSON lines.

    Each record holds ``messages`` (or tau-bench's ``traj``); tau-bench's
    ``task_id`` becomes the group, ``info.task.instruction`` the task,
    ``info.task.actions`` the essential actions and ``reward`` (>= 0.5) the
    user's acceptance. A tool output that starts with "Error" or is a JSON
    object with an "error" key is a failed step.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidRecordError(f"file is not valid UTF-8 (byte {e.start})") from None
    stripped = text.lstrip()
    records: list[tuple[str, Any]] = []
    if stripped.startswith("["):
        try:
            doc = _loads(stripped)
        except ValueError as e:
            raise InvalidRecordError(f"invalid JSON: {e}") from None
        records = [(f"record {i + 1}", r) for i, r in enumerate(doc)]
    else:
        for n, line, err in _lines(text.splitlines()):
            if err:
                raise InvalidRecordError(err, where=f"line {n}")
            try:
                records.append((f"line {n}", _loads(line or "")))
            except ValueError as e:
                if not skip_bad:
                    raise InvalidRecordError(f"invalid JSON: {e}", where=f"line {n}") from None
    good: list[Trajectory] = []
    errors: list[str] = []
    for where, rec in records:
        try:
            if not isinstance(rec, Mapping):
                raise InvalidRecordError(f"{where}: a transcript must be a JSON object")
            good.append(_openai_record(rec, where))
        except InvalidRecordError as e:
            if not skip_bad:
                raise
            errors.append(str(e))
    return ParseResult(tuple(good), tuple(errors))
