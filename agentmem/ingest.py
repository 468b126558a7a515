"""Reading trajectories from files: agentmem's JSON lines (and, re-exported, OpenAI transcripts).

Parsing is all-or-nothing by default: the first bad line raises
:class:`InvalidRecordError` naming the line and the field, and nothing is
recorded. With ``skip_bad=True`` bad lines are collected instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import InvalidRecordError
from .importers._json import ParseResult, is_error_output, json_lines, loads
from .importers.openai import parse_openai
from .records import Trajectory, check_json_value, step_from_mapping

__all__ = ["ParseResult", "is_error_output", "parse_jsonl", "parse_openai", "trajectory_from_json"]

RECORD_FIELDS = frozenset(
    {"task", "group", "steps", "accepted", "condition", "meta", "state_ok", "essential_actions"}
)


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
    for n, text, decode_error in json_lines(source):
        try:
            if decode_error:
                raise InvalidRecordError(decode_error)
            assert text is not None
            try:
                data = loads(text)
            except ValueError as e:
                raise InvalidRecordError(f"invalid JSON: {e}") from None
            good.append(trajectory_from_json(data, source=origin))
        except InvalidRecordError as e:
            err = InvalidRecordError(str(e), where=f"line {n}")
            if not skip_bad:
                raise err from None
            errors.append(str(err))
    return ParseResult(tuple(good), tuple(errors))
