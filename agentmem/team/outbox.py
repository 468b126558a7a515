"""The outbox: shared runs wait in the private library until the team's primary takes them.

Recording never needs the network. A shared run is written to the private
library as usual and, in the same transaction, to ``team_outbox``: a uuid (its
stable key everywhere), the trajectory's rows as JSON, redacted with agentmem's
built-in rules whatever the library's own redaction setting (a shared run is
always redacted), and ``pushed_at`` NULL. A verdict given later on a shared run
queues a ``feedback`` item the same way. Unshared runs have no outbox item and
never leave the laptop.

:func:`push` sends pending items to the primary in batches, each batch one
transaction there: ``INSERT ... ON CONFLICT (uuid) DO NOTHING``, so a batch that
is sent twice (the laptop was killed after the primary committed and before it
marked the items pushed) inserts nothing the second time. Items are marked
pushed only after the primary committed, so nothing is lost either.
"""

from __future__ import annotations

import json
import os
import uuid as uuidlib
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from sqlite_utils import Database

from ..db import write
from ..errors import TeamError
from ..timestamps import now_iso

__all__ = [
    "PushReport",
    "enqueue_feedback",
    "enqueue_trajectories",
    "pending",
    "push",
    "queue_shared",
]

#: Items sent to the primary in one transaction (``$AGENTMEM_TEAM_PUSH_BATCH`` overrides).
BATCH = 100


def _batch() -> int:
    try:
        return max(1, int(os.environ.get("AGENTMEM_TEAM_PUSH_BATCH", BATCH)))
    except ValueError:
        return BATCH


_TRAJECTORY_COLUMNS = (
    "task",
    "group_key",
    "source",
    "condition",
    "step_count",
    "success_rate",
    "state_ok",
    "essential_actions",
    "meta",
    "created_at",
)
_STEP_COLUMNS = ("position", "tool", "domain", "params", "output", "success")


def _redact(value: Any) -> Any:
    from ..redact import DEFAULT_REDACTOR

    return DEFAULT_REDACTOR.value(value)


def _redact_json(text: str | None) -> str | None:
    if text is None:
        return None
    return json.dumps(_redact(json.loads(text)), ensure_ascii=False)


def _redact_text(text: str | None) -> str | None:
    from ..redact import DEFAULT_REDACTOR

    return None if text is None else DEFAULT_REDACTOR.text(text)


def enqueue_trajectories(db: Database, ids: Sequence[int]) -> list[str]:
    """Queue these just-recorded trajectories for the team; their uuids. Call inside the
    recording's transaction, so that the run and its outbox item commit together."""
    out = []
    at = now_iso()
    for tid in ids:
        cur = db.execute(
            f"SELECT {', '.join(_TRAJECTORY_COLUMNS)} FROM trajectories WHERE id = ?", [tid]
        )
        row = dict(zip(_TRAJECTORY_COLUMNS, cur.fetchone()))
        row["task"] = _redact_text(row["task"])
        row["meta"] = _redact_json(row["meta"])
        steps = []
        for r in db.execute(
            f"SELECT {', '.join(_STEP_COLUMNS)} FROM steps WHERE trajectory_id = ? "
            "ORDER BY position",
            [tid],
        ):
            s = dict(zip(_STEP_COLUMNS, r))
            s["params"] = _redact_json(s["params"])
            s["output"] = _redact_text(s["output"])
            steps.append(s)
        key = str(uuidlib.uuid4())
        feedback = [
            {"uuid": str(uuidlib.uuid4()), "kind": k, "note": _redact_text(n), "created_at": c}
            for k, n, c in db.execute(
                "SELECT kind, note, created_at FROM feedback WHERE trajectory_id = ? ORDER BY id",
                [tid],
            )
        ]
        payload = {"trajectory": row, "steps": steps, "feedback": feedback}
        db.execute("UPDATE trajectories SET uuid = ? WHERE id = ?", [key, tid])
        db.execute(
            "INSERT INTO team_outbox (uuid, kind, trajectory_id, payload, created_at) "
            "VALUES (?, 'trajectory', ?, ?, ?)",
            [key, tid, json.dumps(payload, ensure_ascii=False), at],
        )
        out.append(key)
    return out


def queue_shared(db: Database, ids: Sequence[int], share: bool | None) -> list[str]:
    """Queue just-recorded runs if they are shared: ``share`` True, or None and the library's
    team setting says ``share``. Sharing outside a team is refused (nothing is recorded)."""
    if share is False or not ids:
        return []
    row = db.execute("SELECT value FROM settings WHERE key = 'team'").fetchone()
    if row is None:
        if share:
            raise TeamError(
                "cannot share runs: this library is not in a team (agentmem team join URL)"
            )
        return []
    if share is None and not json.loads(row[0]).get("share"):
        return []
    return enqueue_trajectories(db, ids)


def enqueue_feedback(
    db: Database, trajectory_id: int, kind: str, note: str | None, created_at: str
) -> str | None:
    """Queue a verdict on a shared run (inside the feedback's transaction); None if the run
    is not shared."""
    row = db.execute("SELECT uuid FROM trajectories WHERE id = ?", [trajectory_id]).fetchone()
    if row is None or row[0] is None:
        return None
    key = str(uuidlib.uuid4())
    payload = {
        "trajectory_uuid": row[0],
        "kind": kind,
        "note": _redact_text(note),
        "created_at": created_at,
    }
    db.execute(
        "INSERT INTO team_outbox (uuid, kind, trajectory_id, payload, created_at) "
        "VALUES (?, 'feedback', ?, ?, ?)",
        [key, trajectory_id, json.dumps(payload, ensure_ascii=False), now_iso()],
    )
    return key


def pending(db: Database) -> int:
    """How many items wait to be pushed."""
    return int(db.execute("SELECT count(*) FROM team_outbox WHERE pushed_at IS NULL").fetchone()[0])


@attrs.frozen
class PushReport:
    """What a push did: items sent, rows the primary inserted (0 for a repeat), batches."""

    sent: int
    inserted: int
    batches: int
    left: int


def _insert_rows(remote: Any, sql: str, rows: list[tuple[Any, ...]], chunk: int = 100) -> None:
    """``sql`` with ``VALUES {}`` filled by many rows at once (at most 999 parameters)."""
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        marks = ", ".join("(" + ", ".join("?" * len(r)) + ")" for r in part)
        remote.execute(sql.format(marks), [v for r in part for v in r])


def _push_item(remote: Any, key: str, kind: str, payload: dict[str, Any]) -> int:
    """Insert one item on the primary (inside its transaction); 1 if new, 0 if already there."""
    if kind == "trajectory":
        t = payload["trajectory"]
        cols = ", ".join(("uuid", *_TRAJECTORY_COLUMNS))
        cur = remote.execute(
            f"INSERT INTO trajectories ({cols}) VALUES ({', '.join('?' * (1 + len(t)))}) "
            "ON CONFLICT (uuid) DO NOTHING",
            [key, *(t[c] for c in _TRAJECTORY_COLUMNS)],
        )
        if cur.rowcount != 1:
            return 0
        tid = cur.lastrowid
        # One statement per table (each statement is a round trip to the primary).
        _insert_rows(
            remote,
            "INSERT INTO steps (trajectory_id, position, tool, domain, params, output, success) "
            "VALUES {}",
            [(tid, *(s[c] for c in _STEP_COLUMNS)) for s in payload["steps"]],
        )
        _insert_rows(
            remote,
            "INSERT INTO feedback (uuid, trajectory_id, kind, note, created_at) "
            "VALUES {} ON CONFLICT (uuid) DO NOTHING",
            [(f["uuid"], tid, f["kind"], f["note"], f["created_at"]) for f in payload["feedback"]],
        )
        return 1
    cur = remote.execute(
        "INSERT INTO feedback (uuid, trajectory_id, kind, note, created_at) "
        "SELECT ?, id, ?, ?, ? FROM trajectories WHERE uuid = ? "
        "ON CONFLICT (uuid) DO NOTHING",
        [key, payload["kind"], payload["note"], payload["created_at"], payload["trajectory_uuid"]],
    )
    return int(cur.rowcount == 1)


def push(
    db: Database,
    remote: Any,
    *,
    batch: int | None = None,
    limit: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> PushReport:
    """Send pending items to the primary (``remote``: a :class:`~agentmem.team.replica.RemoteDb`).

    Each batch is one transaction on the primary, then one local transaction
    marks it pushed. Items go in the order they were queued, so a verdict follows its run.
    """
    batch = batch or _batch()
    sent = inserted = batches = 0
    while limit is None or sent < limit:
        size = batch if limit is None else min(batch, limit - sent)
        items = db.execute(
            "SELECT uuid, kind, payload FROM team_outbox WHERE pushed_at IS NULL "
            "ORDER BY rowid LIMIT ?",
            [size],
        ).fetchall()
        if not items:
            break
        with write(remote):  # type: ignore[arg-type]
            for key, kind, payload in items:
                inserted += _push_item(remote, key, kind, json.loads(payload))
        at = now_iso()
        with write(db):
            db.conn.executemany(
                "UPDATE team_outbox SET pushed_at = ? WHERE uuid = ? AND pushed_at IS NULL",
                [(at, key) for key, _, _ in items],
            )
        sent += len(items)
        batches += 1
        if progress is not None:
            progress(sent)
    return PushReport(sent=sent, inserted=inserted, batches=batches, left=pending(db))
