"""The owner of table ``team_outbox``: shared runs and verdicts waiting for the team's primary.

What goes in an item and when it is pushed is :mod:`agentmem.team.outbox`'s policy;
this module only moves its rows. Writers run inside the caller's write transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "UNPUSHED",
    "add",
    "delete_pruned",
    "drop_pending",
    "mark_pushed",
    "next_batch",
    "pending",
]

#: A condition on ``trajectories t``: a shared run still waiting to be pushed.
UNPUSHED = (
    "EXISTS (SELECT 1 FROM team_outbox o WHERE o.trajectory_id = t.id AND o.pushed_at IS NULL)"
)


def add(db: Any, key: str, kind: str, trajectory_id: int, payload: str, at: str) -> None:
    """Queue an item (``kind``: ``trajectory`` or ``feedback``; ``payload``: JSON text)."""
    db.execute(
        "INSERT INTO team_outbox (uuid, kind, trajectory_id, payload, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        [key, kind, trajectory_id, payload, at],
    )


def pending(db: Any) -> int:
    """How many items wait to be pushed."""
    return int(db.execute("SELECT count(*) FROM team_outbox WHERE pushed_at IS NULL").fetchone()[0])


def next_batch(db: Any, size: int) -> list[tuple[str, str, str]]:
    """The oldest ``size`` items waiting, as (uuid, kind, payload), in the order queued."""
    rows = db.execute(
        "SELECT uuid, kind, payload FROM team_outbox WHERE pushed_at IS NULL "
        "ORDER BY rowid LIMIT ?",
        [size],
    ).fetchall()
    return [(str(k), str(kind), str(p)) for k, kind, p in rows]


def mark_pushed(db: Any, keys: Sequence[str], at: str) -> None:
    """Note that the primary committed these items."""
    db.conn.executemany(
        "UPDATE team_outbox SET pushed_at = ? WHERE uuid = ? AND pushed_at IS NULL",
        [(at, key) for key in keys],
    )


def drop_pending(db: Any) -> None:
    """Forget every item not pushed yet (``agentmem team leave --force``)."""
    db.execute("DELETE FROM team_outbox WHERE pushed_at IS NULL")


def delete_pruned(db: Any, at: str) -> None:
    """Delete the items of the runs a prune (``at``) marked pruned."""
    db.execute(
        "DELETE FROM team_outbox WHERE trajectory_id IN "
        "(SELECT id FROM pruned_trajectories WHERE pruned_at = ?)",
        [at],
    )
