"""Value objects: what a trajectory, a step, a feedback event, an experience and an
operation on the experiences are. Pure: the lowest layer above ``errors``.

All are frozen attrs classes validated at construction, so a bad record never
reaches the database. Build them from database rows with ``from_row``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .errors import InvalidRecordError
from .languages import units

__all__ = [
    "ALL_KINDS",
    "EVIDENCE_KINDS",
    "FEEDBACK_KINDS",
    "MAX_EXPERIENCE_WORDS",
    "NO_RESULT",
    "OP_KINDS",
    "Experience",
    "Feedback",
    "Operation",
    "Step",
    "Trajectory",
    "TurnRecord",
    "check_json_value",
    "normalise_group",
    "success_rate",
    "valid_id",
    "word_count",
]

#: An experience is at most this many words (paper, Stage 2 and Stage 3).
MAX_EXPERIENCE_WORDS = 32
#: What a user can say about an agent's final output.
FEEDBACK_KINDS = ("accept", "correct", "reject")
MAX_TOOL_NAME = 200


def valid_id(value: object) -> bool:
    """Whether ``value`` can be a row id: an int in SQLite's positive range."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**63


def success_rate(successes: Sequence[bool]) -> float:
    """The paper's rho_s: the fraction of tool calls that succeeded; 1.0 for K = 0."""
    if not successes:
        return 1.0
    return sum(1 for s in successes if s) / len(successes)


def word_count(text: str) -> int:
    """Words as a reader counts them, in every script: runs of non-space characters, each
    character of a script written without spaces (Chinese, Japanese, Thai), a long run
    one word per 80 characters (:func:`agentmem.languages.units`)."""
    return units(text)


def normalise_group(task: str) -> str:
    """The default group key of a task: lower-cased, whitespace folded, trimmed.

    Two trajectories of the same task text land in the same group even when
    they differ in case or spacing.
    """
    # str.split() splits at runs of what \s matches (str.isspace) and drops them at both
    # ends: re.sub(r"\s+", " ", task.strip().lower()), at twice the speed on long tasks
    return " ".join(task.lower().split())[:500]


#: How deeply JSON values may nest (parameters, outputs' metadata): deeper is refused.
MAX_JSON_DEPTH = 64


def check_json_value(value: Any, field: str, _depth: int = 0) -> None:
    """Raise :class:`InvalidRecordError` unless ``value`` is plain, finite JSON.

    Keys and strings must be valid UTF-8 text without NUL characters, and the
    value may nest at most :data:`MAX_JSON_DEPTH` levels deep.
    """
    if _depth > MAX_JSON_DEPTH:
        raise InvalidRecordError(f"{field} nests deeper than {MAX_JSON_DEPTH} levels")
    kind = type(value)  # the plain JSON types first: the checks below, without the ABC's
    if kind is str:
        _check_text(value, field)
        return
    if kind is int or kind is bool or value is None:
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidRecordError(f"{field} contains {value!r}, which JSON cannot hold")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidRecordError(f"{field} has a non-string key {k!r}")
            _check_text(k, f"a key of {field}")
            check_json_value(v, f"{field}.{k}", _depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            check_json_value(v, f"{field}[{i}]", _depth + 1)
    elif value is not None and not isinstance(value, (str, int, bool)):
        raise InvalidRecordError(f"{field} holds a {type(value).__name__}, not a JSON value")
    if isinstance(value, str):
        _check_text(value, field)


def _check_text(value: str, field: str) -> None:
    if "\x00" in value:
        raise InvalidRecordError(f"{field} contains a NUL character")
    if value.isascii():  # (a flag of the string: no lone surrogate, nothing to encode)
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidRecordError(f"{field} is not valid UTF-8 text ({e.reason})") from None


def _nonempty_text(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str):
        raise InvalidRecordError(f"{attribute.name} must be text, not {type(value).__name__}")
    if not value.strip():
        raise InvalidRecordError(f"{attribute.name} must not be empty")
    _check_text(value, attribute.name)


def _text(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str):
        raise InvalidRecordError(f"{attribute.name} must be text, not {type(value).__name__}")
    _check_text(value, attribute.name)


def _optional_text(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        _nonempty_text(instance, attribute, value)


def _strict_bool(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise InvalidRecordError(f"{attribute.name} must be true or false, not {value!r}")


def _optional_bool(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise InvalidRecordError(f"{attribute.name} must be true, false or null, not {value!r}")


def _json_object(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, Mapping):
        raise InvalidRecordError(
            f"{attribute.name} must be a JSON object, not {type(value).__name__}"
        )
    check_json_value(value, attribute.name)


def _tool_name(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    _nonempty_text(instance, attribute, value)
    if len(value) > MAX_TOOL_NAME:
        raise InvalidRecordError(f"tool name is longer than {MAX_TOOL_NAME} characters")


def _to_dict(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else value


#: A step's output when its transcript holds no result for the call (the session ended or
#: was cut before it): its outcome is unknown, not a failure the run recovered from.
NO_RESULT = "(no result recorded)"


@attrs.frozen
class Step:
    """One tool call: the tool, its parameters, what it returned and whether it succeeded.

    ``success`` is the paper's s_i: true iff the call completed without error and
    produced well-formed output. ``domain`` is filled in from the library's tool
    domain mapping when the step is recorded.
    """

    tool: str = attrs.field(validator=_tool_name)
    params: dict[str, Any] = attrs.field(factory=dict, converter=_to_dict, validator=_json_object)
    output: str = attrs.field(default="", validator=_text)
    success: bool = attrs.field(default=True, validator=_strict_bool)
    domain: str | None = attrs.field(default=None, validator=_optional_text)

    @classmethod
    def of_plain_json(cls, tool: str, params: dict[str, Any], output: str, success: bool) -> Step:
        """A step whose ``params`` (a dict) and ``output`` are plain JSON and valid text
        already, as an importer's repairs leave them (every string without NUL characters
        or lone surrogates, every number finite, every key a string, at most
        :data:`MAX_JSON_DEPTH` deep; see ``agentmem.importers.turns``): made without
        walking the parameters and encoding the output again. The tool and ``success``
        are checked as :class:`Step` checks them."""
        fields = attrs.fields(cls)
        _tool_name(None, fields.tool, tool)
        _strict_bool(None, fields.success, success)
        step = object.__new__(cls)
        for name, value in (("tool", tool), ("params", params), ("output", output)):
            object.__setattr__(step, name, value)
        object.__setattr__(step, "success", success)
        object.__setattr__(step, "domain", None)
        return step

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Step:
        return cls(
            tool=row["tool"],
            params=json.loads(row["params"]),
            output=row["output"],
            success=bool(row["success"]),
            domain=row["domain"],
        )


def _steps(value: Any) -> tuple[Step, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidRecordError("steps must be a list of steps")
    out = []
    for i, s in enumerate(value):
        if isinstance(s, Step):
            out.append(s)
        elif isinstance(s, Mapping):
            out.append(step_from_mapping(s, f"steps[{i}]"))
        else:
            raise InvalidRecordError(f"steps[{i}] must be an object, not {type(s).__name__}")
    return tuple(out)


def step_from_mapping(data: Mapping[str, Any], where: str = "step") -> Step:
    """Build a :class:`Step` from a JSON object, naming the field that is wrong."""
    unknown = set(data) - {"tool", "params", "output", "success", "domain"}
    if unknown:
        raise InvalidRecordError(f"{where} has unknown field(s): {', '.join(sorted(unknown))}")
    if "tool" not in data:
        raise InvalidRecordError(f"{where}.tool is missing")
    try:
        return Step(
            tool=data["tool"],
            params=data.get("params", {}),
            output=data.get("output", ""),
            success=data.get("success", True),
            domain=data.get("domain"),
        )
    except InvalidRecordError as e:
        raise InvalidRecordError(f"{where}.{e}") from None


def _default_group(task: Any) -> Any:
    return normalise_group(task) if isinstance(task, str) else task


def _actions(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidRecordError("essential_actions must be a list of {name, kwargs} objects")
    return tuple(dict(a) if isinstance(a, Mapping) else a for a in value)


@attrs.frozen
class Trajectory:
    """A task, the ordered tool calls made for it, and what is known of its outcome.

    ``group`` is the task group key (trajectories of the same task are compared
    with each other); it defaults to :func:`normalise_group` of the task.
    ``accepted`` is the user's verdict when it is known at recording time.
    ``condition`` is the reward token the rollout was conditioned on (RC-GRPO).
    ``state_ok`` and ``essential_actions`` feed the binary reward
    R_state * R_action: whether the final environment state matched the goal,
    and the tool calls the task needed.
    """

    task: str = attrs.field(validator=_nonempty_text)
    steps: tuple[Step, ...] = attrs.field(factory=tuple, converter=_steps)
    group: str = attrs.field(
        default=attrs.Factory(lambda self: _default_group(self.task), takes_self=True)
    )
    accepted: bool | None = attrs.field(default=None, validator=_optional_bool)
    condition: str | None = attrs.field(default=None, validator=_optional_text)
    meta: dict[str, Any] = attrs.field(factory=dict, converter=_to_dict, validator=_json_object)
    state_ok: bool | None = attrs.field(default=None, validator=_optional_bool)
    essential_actions: tuple[dict[str, Any], ...] | None = attrs.field(
        default=None, converter=_actions
    )
    source: str = attrs.field(default="api", validator=_nonempty_text)
    id: int | None = None
    created_at: str | None = None

    @group.validator
    def _check_group(self, attribute: attrs.Attribute[Any], value: Any) -> None:
        _nonempty_text(self, attribute, value)

    @essential_actions.validator
    def _check_actions(self, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None:
            return
        for i, a in enumerate(value):
            if not isinstance(a, Mapping) or not isinstance(a.get("name"), str):
                raise InvalidRecordError(
                    f"essential_actions[{i}] must be an object with a 'name' (a tool name)"
                )
            if a.get("kwargs") is not None and not isinstance(a["kwargs"], Mapping):
                raise InvalidRecordError(
                    f"essential_actions[{i}].kwargs must be an object of arguments"
                )
            check_json_value(dict(a), f"essential_actions[{i}]")

    @property
    def success_rate(self) -> float:
        """The paper's rho_s: the share of steps that succeeded (1.0 when there are none)."""
        return success_rate([s.success for s in self.steps])

    @classmethod
    def from_row(cls, row: Mapping[str, Any], steps: Sequence[Step] = ()) -> Trajectory:
        acts = row.get("essential_actions")
        return cls(
            id=row["id"],
            task=row["task"],
            group=row["group_key"],
            steps=tuple(steps),
            accepted=None,
            condition=row["condition"],
            meta=json.loads(row["meta"] or "{}"),
            state_ok=None if row["state_ok"] is None else bool(row["state_ok"]),
            essential_actions=None if acts is None else tuple(json.loads(acts)),
            source=row["source"],
            created_at=row["created_at"],
        )


def _feedback_kind(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value not in FEEDBACK_KINDS:
        raise InvalidRecordError(
            f"feedback must be one of {', '.join(FEEDBACK_KINDS)}, not {value!r}"
        )


@attrs.frozen
class Feedback:
    """A user's verdict on a trajectory's final output, with the time it was given."""

    trajectory_id: int
    kind: str = attrs.field(validator=_feedback_kind)
    created_at: str = ""
    note: str | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Feedback:
        return cls(
            trajectory_id=row["trajectory_id"],
            kind=row["kind"],
            created_at=row["created_at"],
            note=row["note"],
        )


def _experience_text(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    _nonempty_text(instance, attribute, value)
    n = word_count(value)
    # A stored row (it has an id) is read as it is, so one lengthened behind agentmem's back
    # still lists, learns around and can be removed; it is never served (agentmem.sanitize).
    if n > MAX_EXPERIENCE_WORDS and instance.id is None:
        raise InvalidRecordError(
            f"an experience is at most {MAX_EXPERIENCE_WORDS} words; this one has {n}"
        )


def _domain(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    _text(instance, attribute, value)
    if value and not re.fullmatch(r"[a-z0-9][a-z0-9_.-]{0,63}", value):
        raise InvalidRecordError(
            f"domain {value!r} must be a short lower-case name (letters, digits, _ . -)"
        )


@attrs.frozen
class Experience:
    """A short lesson (at most 32 words) saying when and how to apply it.

    ``domain`` scopes it to a tool domain; the empty string means domain-free
    (retrieved for every task).

    The evidence (:mod:`agentmem.learning.support`): how many learned groups (and
    their runs) support and contradict it, when a group last confirmed and last
    contradicted it, and ``rule``, the structured facts (JSON, see
    :mod:`agentmem.learning.rules`) that later sessions test it with; None for a
    lesson written by hand.
    """

    text: str = attrs.field(validator=_experience_text)
    domain: str = attrs.field(default="", validator=_domain)
    id: int | None = None
    status: str = "live"
    created_at: str | None = None
    updated_at: str | None = None
    support_groups: int = 0
    support_runs: int = 0
    contradict_groups: int = 0
    contradict_runs: int = 0
    last_confirmed_at: str | None = None
    last_contradicted_at: str | None = None
    rule: str | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Experience:
        return cls(
            id=row["id"],
            text=row["text"],
            domain=row["domain"],
            status=row["status"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            support_groups=row.get("support_groups") or 0,
            support_runs=row.get("support_runs") or 0,
            contradict_groups=row.get("contradict_groups") or 0,
            contradict_runs=row.get("contradict_runs") or 0,
            last_confirmed_at=row.get("last_confirmed_at"),
            last_contradicted_at=row.get("last_contradicted_at"),
            rule=row.get("rule"),
        )

    def evidence(self) -> dict[str, Any]:
        """The evidence counts as JSON-ready data (``experiences --json``, ``retrieve --json``)."""
        return {
            "support_groups": self.support_groups,
            "support_runs": self.support_runs,
            "contradict_groups": self.contradict_groups,
            "contradict_runs": self.contradict_runs,
            "last_confirmed_at": self.last_confirmed_at,
            "last_contradicted_at": self.last_contradicted_at,
        }


@attrs.frozen
class TurnRecord:
    """A complete turn of an agent transcript, ready to store: its key (source, session id,
    turn id), status (``imported``, ``no-tools``, ``damaged``) and, when it has steps, its
    trajectory and the verdict the transcript gives (:mod:`agentmem.importers`)."""

    source: str
    session_id: str
    turn_id: str
    status: str
    trajectory: Trajectory | None = None
    verdict: str | None = None
    note: str | None = None


# -- operations on the experiences -----------------------------------------------------------

#: The paper's operations: what Stage 2 (the model or the data) may propose.
OP_KINDS = ("ADD", "MODIFY", "DELETE", "MERGE")
#: Operations that count evidence on a live experience without changing its text
#: (:mod:`agentmem.learning.support`); never parsed from a model's answer.
EVIDENCE_KINDS = ("CONFIRM", "CONTRADICT")
ALL_KINDS = OP_KINDS + EVIDENCE_KINDS


@attrs.frozen
class Operation:
    """One proposed change: ADD, MODIFY, DELETE or MERGE (or CONFIRM / CONTRADICT, which
    only count evidence), with where it came from.

    ``targets`` are experience ids (one for MODIFY/DELETE, two for MERGE);
    ``origin`` is ``model``, ``data`` (derived from the group's evidence),
    ``fallback`` (data used because the model's output was rejected) or ``user``.
    ``weight`` is the mean |A| of the group that proposed it (Stage 3 conflicts).
    """

    kind: str
    text: str | None = None
    targets: tuple[int, ...] = ()
    domain: str = ""
    group: str | None = None
    origin: str = "data"
    weight: float = 0.0
    facts: tuple[str, ...] = ()
    note: str = ""
    detail: dict[str, Any] = attrs.field(factory=dict, eq=False)

    def __attrs_post_init__(self) -> None:
        if self.kind not in ALL_KINDS:
            raise ValueError(f"operation kind must be one of {ALL_KINDS}, not {self.kind!r}")

    def describe(self) -> str:
        ids = ",".join(map(str, self.targets))
        return f"{self.kind} | {ids} | {self.text or ''}".strip()
