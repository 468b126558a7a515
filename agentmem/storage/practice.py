"""The owner of tables ``practices`` and ``practice_rollouts`` (migration m019, issue 32).

A practice is one task file practised with one agent: its key (a hash of the tasks, the
agent's template, the group size and the RC-GRPO policy; see
:func:`agentmem.practice.runner.practice_key`) finds it again when the same command runs
a second time, so a killed practice continues where it stopped. A rollout's row is
written once, when the rollout is over, in the same transaction that attaches its reward
to its trajectory: a rollout without a row was never finished and runs again; one with a
row never does. Every writer here runs inside the caller's write transaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._sqlite import dict_rows
from ..timestamps import now_iso

__all__ = [
    "add_rollout",
    "find",
    "learned",
    "practices",
    "rollouts",
    "start",
]


def find(db: Any, key: str) -> dict[str, Any] | None:
    """The practice with ``key``, or None."""
    rows = dict_rows(db.execute("SELECT * FROM practices WHERE key = ?", [key]))
    return rows[0] if rows else None


def start(
    db: Any,
    key: str,
    *,
    tasks_path: str,
    agent: str,
    size: int,
    rc: str,
    options: Mapping[str, Any],
) -> int:
    """The id of the practice with ``key``: the existing one, else a new one."""
    row = find(db, key)
    if row is not None:
        return int(row["id"])
    cur = db.execute(
        "INSERT INTO practices (key, tasks_path, agent, size, rc, options, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [key, tasks_path, agent, size, rc, json.dumps(dict(options), sort_keys=True), now_iso()],
    )
    return int(cur.lastrowid)


def add_rollout(db: Any, practice_id: int, row: Mapping[str, Any]) -> int:
    """Record one finished rollout (``row``: task_id, task_key, round, idx, seed, condition,
    reward, success, wall_s, tokens, cost_usd, trajectory_id, error, meta). A rollout
    recorded before (same task as read, round and index) is left as it was: its id is
    returned."""
    cols = (
        "task_id",
        "task_key",
        "round",
        "idx",
        "seed",
        "condition",
        "reward",
        "success",
        "wall_s",
        "tokens",
        "cost_usd",
        "trajectory_id",
        "error",
    )
    values = [row.get(c) for c in cols]
    meta = json.dumps(dict(row.get("meta") or {}), sort_keys=True)
    db.execute(
        f"INSERT OR IGNORE INTO practice_rollouts (practice_id, {', '.join(cols)}, meta, "
        f"created_at) VALUES ({', '.join('?' * (len(cols) + 3))})",
        [practice_id, *values, meta, now_iso()],
    )
    got = db.execute(
        "SELECT id FROM practice_rollouts WHERE practice_id = ? AND task_id = ? AND task_key = ? "
        "AND round = ? AND idx = ?",
        [practice_id, row["task_id"], row["task_key"], row["round"], row["idx"]],
    ).fetchone()
    return int(got[0])


def rollouts(db: Any, practice_id: int) -> list[dict[str, Any]]:
    """A practice's finished rollouts, in order (``meta`` parsed)."""
    rows = dict_rows(
        db.execute(
            "SELECT * FROM practice_rollouts WHERE practice_id = ? ORDER BY task_id, round, idx",
            [practice_id],
        )
    )
    for r in rows:
        try:
            r["meta"] = json.loads(r["meta"] or "{}")
        except ValueError:
            r["meta"] = {}
        r["success"] = bool(r["success"])
    return rows


def learned(db: Any, practice_id: int, session_id: int | None) -> None:
    """Record the learning session a practice's groups were learned in."""
    db.execute(
        "UPDATE practices SET learned_session = ?, learned_at = ? WHERE id = ?",
        [session_id, now_iso(), practice_id],
    )


def practices(db: Any) -> list[dict[str, Any]]:
    """Every practice, newest first, with its rollout and success counts."""
    return dict_rows(
        db.execute(
            "SELECT p.*, "
            "(SELECT count(*) FROM practice_rollouts r WHERE r.practice_id = p.id) AS n_rollouts, "
            "(SELECT count(*) FROM practice_rollouts r WHERE r.practice_id = p.id "
            "AND r.success = 1) AS n_successes, "
            "(SELECT sum(r.tokens) FROM practice_rollouts r WHERE r.practice_id = p.id) "
            "AS tokens, "
            "(SELECT sum(r.cost_usd) FROM practice_rollouts r WHERE r.practice_id = p.id) "
            "AS cost_usd "
            "FROM practices p ORDER BY p.id DESC"
        )
    )
