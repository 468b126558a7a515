"""The runs primary's inbox: how shared runs travel from members to the team library.

A member's token is read-only on the lessons primary, so a member cannot write
a run into the team library itself. It appends its shared runs here instead,
on the *runs* primary, where its token may write and where no lesson lives
(:func:`push`, one transaction of ``INSERT ... ON CONFLICT (uuid) DO NOTHING``
a batch, over sqld's HTTP pipeline).

The learner takes them into the team library (:func:`collect`): every item is
parsed and checked against the shape agentmem itself writes (:func:`validate`:
types, sizes, known verdicts, uuids), redacted again with agentmem's rules
whatever the member's library did, and inserted on the lessons primary in one
transaction with the inbox position it reached (the ``team_inbox_seq``
setting), so that two learners, or a learner killed half-way, take each item
once. An item that fails a check is skipped, counted and named; it never stops
the rest. Members can disturb the inbox (sqld grants a whole database, not a
table), but whatever they write there reaches the lessons only as a validated
run that the learner's session learns from under the usual rules.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Sequence
from typing import Any

import attrs

from ..db import write
from ..errors import TeamError
from ..jsonsafe import JSONInputError, loads
from ..storage import settings, trajectories
from ..timestamps import parse_time

__all__ = [
    "CURSOR",
    "CollectReport",
    "InvalidItemError",
    "collect",
    "create",
    "push",
    "validate",
]

#: The setting on the lessons primary: the last inbox position taken in.
CURSOR = "team_inbox_seq"
#: The largest item the learner takes in (JSON text, characters).
MAX_ITEM = 8_000_000
MAX_STEPS = 10_000
MAX_FEEDBACK = 1_000
_VERDICTS = ("accept", "correct", "reject")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS inbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "uuid TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, payload TEXT NOT NULL, "
    "pushed_at TEXT NOT NULL)"
)


def create(url: str, *, token: str) -> None:
    """Give a runs primary its inbox table (nothing when it has one)."""
    from .hrana import pipeline

    pipeline(url, [(_SCHEMA, [])], token=token)


def push(url: str, items: Sequence[tuple[str, str, str]], *, token: str, at: str) -> int:
    """Append ``items`` (uuid, kind, payload JSON) to the inbox in one transaction; how many
    were new (an item sent twice is inserted once)."""
    from .hrana import changes

    sql = (
        "INSERT INTO inbox (uuid, kind, payload, pushed_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (uuid) DO NOTHING"
    )
    statements: list[tuple[str, list[Any]]] = [("BEGIN IMMEDIATE", [])]
    statements += [(sql, [key, kind, payload, at]) for key, kind, payload in items]
    statements.append(("COMMIT", []))
    return sum(changes(url, statements, token=token)[1:-1])


class InvalidItemError(TeamError, ValueError):
    """An inbox item that is not a run or verdict as agentmem writes them."""


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise InvalidItemError(what)


def _uuid(value: Any, what: str) -> str:
    try:
        ok = isinstance(value, str) and str(uuidlib.UUID(value)) == value.lower()
    except ValueError:
        ok = False
    _need(ok, f"{what} is not a uuid")
    return str(value)


def _text(value: Any, what: str, *, optional: bool = False, empty: bool = True) -> None:
    if optional and value is None:
        return
    _need(isinstance(value, str) and (empty or bool(value.strip())), f"{what} is not text")


def _time(value: Any, what: str) -> None:
    _text(value, what, empty=False)
    try:
        parse_time(value)
    except (ValueError, TypeError, OverflowError):
        raise InvalidItemError(f"{what} is not a time") from None


def _loads(text: str, what: str) -> Any:
    try:
        return loads(text, what=what)
    except JSONInputError as e:
        deep = "too deeply" in str(e)
        raise InvalidItemError(f"{what} is {'nested too deeply' if deep else 'not JSON'}") from None


def _json_text(value: Any, what: str) -> None:
    _text(value, what)
    _loads(value, what)


def _count(value: Any, what: str, top: int) -> None:
    _need(type(value) is int and 0 <= value <= top, f"{what} is out of range")


def _flag(value: Any, what: str) -> None:
    _need(value in (0, 1) and not isinstance(value, float), f"{what} is not 0 or 1")


def _check_run(t: Any, steps: Any, feedback: Any) -> None:
    _need(isinstance(t, dict) and set(t) == set(trajectories.SHARED_COLUMNS), "not a run")
    _text(t["task"], "task", empty=False)
    _text(t["group_key"], "group_key", empty=False)
    _text(t["source"], "source", empty=False)
    _text(t["condition"], "condition", optional=True)
    _text(t["essential_actions"], "essential_actions", optional=True)
    _json_text(t["meta"], "meta")
    _time(t["created_at"], "created_at")
    _count(t["step_count"], "step_count", MAX_STEPS)
    rate = t["success_rate"]
    ok = type(rate) in (int, float) and 0 <= rate <= 1
    _need(ok, "success_rate is not between 0 and 1")
    if t["state_ok"] is not None:
        _flag(t["state_ok"], "state_ok")
    _need(isinstance(steps, list) and len(steps) <= MAX_STEPS, "steps is not a list")
    for i, s in enumerate(steps):
        _need(isinstance(s, dict) and set(s) == set(trajectories.STEP_COLUMNS), f"step {i}")
        _count(s["position"], f"step {i}: position", 2**62)
        _text(s["tool"], f"step {i}: tool", empty=False)
        _text(s["domain"], f"step {i}: domain")
        _json_text(s["params"], f"step {i}: params")
        _text(s["output"], f"step {i}: output")
        _flag(s["success"], f"step {i}: success")
    _need(len({s["position"] for s in steps}) == len(steps), "two steps share a position")
    _need(isinstance(feedback, list) and len(feedback) <= MAX_FEEDBACK, "feedback is not a list")
    for f in feedback:
        _check_verdict(f, with_run=False)


def _check_verdict(f: Any, *, with_run: bool) -> None:
    keys = {"kind", "note", "created_at"} | ({"trajectory_uuid"} if with_run else {"uuid"})
    _need(isinstance(f, dict) and set(f) == keys, "not a verdict")
    _need(f["kind"] in _VERDICTS, f"a verdict is one of {', '.join(_VERDICTS)}")
    _text(f["note"], "note", optional=True)
    _time(f["created_at"], "a verdict's created_at")
    _uuid(f["trajectory_uuid"] if with_run else f["uuid"], "a verdict's uuid")


def validate(key: Any, kind: Any, payload: Any) -> dict[str, Any]:
    """The item, checked and redacted again; :class:`InvalidItemError` says what is wrong."""
    from .outbox import redact_json, redact_text

    _uuid(key, "the item's uuid")
    _need(kind in ("trajectory", "feedback"), "the item is neither a run nor a verdict")
    _need(isinstance(payload, str) and len(payload) <= MAX_ITEM, "the item is too large")
    value = _loads(payload, "the item")
    if kind == "feedback":
        _check_verdict(value, with_run=True)
        return {**value, "note": redact_text(value["note"])}
    _need(isinstance(value, dict) and set(value) == {"trajectory", "steps", "feedback"}, "shape")
    _check_run(value["trajectory"], value["steps"], value["feedback"])
    try:
        run = dict(value["trajectory"])
        run["task"] = redact_text(run["task"])
        run["meta"] = redact_json(run["meta"])
        steps = [
            {**s, "params": redact_json(s["params"]), "output": redact_text(s["output"])}
            for s in value["steps"]
        ]
        feedback = [{**f, "note": redact_text(f["note"])} for f in value["feedback"]]
    except RecursionError:
        raise InvalidItemError("the item is nested too deeply") from None
    return {"trajectory": run, "steps": steps, "feedback": feedback}


@attrs.frozen
class CollectReport:
    """What a learner took in: items inserted, items already there, items refused (with
    why, by reason)."""

    taken: int = 0
    repeated: int = 0
    refused: dict[str, int] = attrs.field(factory=dict)

    @property
    def refused_count(self) -> int:
        return sum(self.refused.values())


def _fetch(url: str, token: str, after: int, limit: int) -> list[tuple[Any, ...]]:
    from .hrana import pipeline

    return pipeline(
        url,
        [
            (
                "SELECT seq, uuid, kind, payload FROM inbox WHERE seq > ? ORDER BY seq LIMIT ?",
                [after, limit],
            )
        ],
        token=token,
    )[0]


def _check(key: Any, kind: Any, payload: Any) -> tuple[dict[str, Any] | None, str]:
    """(the validated item, "") or (None, why it is refused)."""
    try:
        return validate(key, kind, payload), ""
    except (ValueError, TypeError, RecursionError) as e:  # InvalidItemError, or worse
        return None, str(e) if isinstance(e, InvalidItemError) else type(e).__name__


def collect(remote: Any, runs_url: str, *, token: str, batch: int = 200) -> CollectReport:
    """Take the inbox's new items into the team library (``remote``, the lessons primary
    through :class:`~agentmem.team.replica.RemoteDb`), a batch a transaction.

    Items are fetched and validated before the transaction opens; inside it, the
    primary's own inbox position decides which are still new (another learner may
    have taken some meanwhile). An empty inbox costs one read and no write."""
    taken = repeated = 0
    refused: dict[str, int] = {}
    seen = int(settings.get(remote, CURSOR, 0) or 0)  # the replica's: at most the primary's
    while True:
        rows = _fetch(runs_url, token, seen, batch)
        if not rows:
            break
        checked = [
            (int(seq), str(key), str(kind), *_check(key, kind, p)) for seq, key, kind, p in rows
        ]
        with write(remote):
            cursor = int(settings.get(remote, CURSOR, 0) or 0)
            for seq, key, kind, item, why in checked:
                if seq <= cursor:
                    continue
                if item is None:
                    refused[why] = refused.get(why, 0) + 1
                elif trajectories.insert_shared(remote, key, kind, item):
                    taken += 1
                else:
                    repeated += 1
            seen = max(cursor, checked[-1][0])
            settings.put(remote, CURSOR, seen)
        if len(rows) < batch:
            break
    return CollectReport(taken, repeated, refused)
