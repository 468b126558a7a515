"""OpenAI chat transcripts with ``tool_calls`` (tau-bench): ``agentmem import --format openai``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidRecordError
from ..records import Step, Trajectory, step_from_mapping
from ._json import ParseResult, is_error_output, json_lines, loads

__all__ = ["parse_openai"]


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
    """One transcript as a trajectory: its task, its calls paired with outputs, its verdicts."""
    messages = rec.get("traj", rec.get("messages"))
    if not isinstance(messages, list):
        raise InvalidRecordError(
            f"{where}: expected 'messages' (or 'traj'), a list of chat messages"
        )
    info = _mapping(rec.get("info"))
    task_info = _mapping(info.get("task"))
    task = _task(rec, task_info, messages, where)
    steps = [_step(c, where) for c in _paired_calls(messages, where)]
    accepted, state_ok = _verdicts(rec, info)
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


def _task(
    rec: Mapping[str, Any], task_info: Mapping[str, Any], messages: list[Any], where: str
) -> str:
    """The task: tau-bench's instruction, the record's ``task``, else the first user message."""
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
    return task


def _paired_calls(messages: list[Any], where: str) -> list[dict[str, Any]]:
    """Every tool call in order, with the output of the tool message that answered it.

    Each tool message goes to the earliest unanswered call of the same id (ids can
    repeat within one transcript), or the earliest unanswered call when none matches.
    """
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
        for call_id, fn in _tool_calls(m, i, where):
            calls.append({"id": call_id, "fn": fn, "where": i, "output": None})
            pending.append(len(calls) - 1)
    return calls


def _tool_calls(m: Mapping[str, Any], i: int, where: str) -> list[tuple[Any, Mapping[str, Any]]]:
    """Message ``i``'s tool calls: each one's id and function (``{}`` when absent)."""
    tool_calls = m.get("tool_calls") or []
    if not isinstance(tool_calls, list):
        raise InvalidRecordError(f"{where}: message {i} has tool_calls that is not a list")
    out = []
    for call in tool_calls:
        if not isinstance(call, Mapping):
            raise InvalidRecordError(f"{where}: message {i} has a tool call that is not an object")
        fn = call.get("function") or {}
        if not isinstance(fn, Mapping):
            raise InvalidRecordError(
                f"{where}: message {i} has a tool call whose function is not an object"
            )
        out.append((call.get("id"), fn))
    return out


def _step(call: Mapping[str, Any], where: str) -> Step:
    """A paired call as a step: its parsed arguments, and no output recorded is a failure."""
    fn = call["fn"]
    args = fn.get("arguments") or "{}"
    try:
        params = loads(args) if isinstance(args, str) else args
    except ValueError:
        params = {"_raw_arguments": args}
    if not isinstance(params, Mapping):
        params = {"_arguments": params}
    output = call["output"]
    return step_from_mapping(
        {
            "tool": fn.get("name"),
            "params": dict(params),
            "output": output if output is not None else "(no tool output recorded)",
            "success": output is not None and not is_error_output(output),
        },
        f"{where}: message {call['where']} tool call",
    )


def _verdicts(rec: Mapping[str, Any], info: Mapping[str, Any]) -> tuple[bool | None, bool | None]:
    """Acceptance (a finite ``reward`` >= 0.5) and end state (tau-bench's ``r_actions``)."""
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
    return accepted, state_ok


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
            doc = loads(stripped)
        except ValueError as e:
            raise InvalidRecordError(f"invalid JSON: {e}") from None
        records = [(f"record {i + 1}", r) for i, r in enumerate(doc)]
    else:
        for n, line, err in json_lines(text.splitlines()):
            if err:
                raise InvalidRecordError(err, where=f"line {n}")
            try:
                records.append((f"line {n}", loads(line or "")))
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
