"""The owner of table ``pruned_trajectories``: the ids of runs that ``agentmem prune`` removed.

A pruned id is never given to another trajectory (sessions name the runs they learned
from), and a lookup of a pruned run says it was pruned rather than that it never
existed. :mod:`agentmem.storage.retention` marks the runs; writers run inside the
caller's write transaction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["TABLE", "exists", "ids", "mark", "message", "top_id"]

TABLE = "pruned_trajectories"


def exists(db: Any) -> bool:
    """Whether the file has the table (a file not migrated to m010 has none)."""
    row = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [TABLE])
    return row.fetchone() is not None


def ids(db: Any, wanted: Sequence[int]) -> dict[int, str]:
    """Of ``wanted``, the pruned ids, with when each was pruned."""
    if not wanted or not exists(db):
        return {}
    return {
        int(i): str(at)
        for i, at in db.execute(
            f"SELECT id, pruned_at FROM {TABLE} WHERE id IN (SELECT value FROM json_each(?))",
            [json.dumps(list(wanted))],
        )
    }


def message(db: Any, wanted: Sequence[int]) -> str | None:
    """ "trajectory 7 was pruned on ...", when the missing ids ``wanted`` were pruned."""
    gone = ids(db, wanted)
    if not gone:
        return None
    first = min(gone)
    more = f" (and {len(gone) - 1} more)" if len(gone) > 1 else ""
    return (
        f"trajectory {first} was pruned on {gone[first][:10]}{more}: its steps and feedback "
        "are gone; what was learned from it is kept"
    )


def top_id(db: Any) -> int:
    """The largest pruned id (0 when none)."""
    return int(db.execute(f"SELECT coalesce(max(id), 0) FROM {TABLE}").fetchone()[0])


def mark(db: Any, where: str, params: Sequence[Any], at: str) -> None:
    """Mark the trajectories ``t`` matching ``where`` pruned at ``at`` (before their rows go)."""
    db.execute(
        f"INSERT INTO {TABLE} (id, group_key, created_at, pruned_at) "
        f"SELECT t.id, t.group_key, t.created_at, ? FROM trajectories t WHERE {where}",
        [at, *params],
    )
