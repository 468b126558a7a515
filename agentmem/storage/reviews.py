"""Lessons held for a person's review, read with their evidence (issue 30).

A lesson that would have the agent run a command with a risky capability
(:mod:`agentmem.agents.risk`) is written ``held`` by
:func:`agentmem.storage.journal.apply_operations` and never served until a person
approves it (:func:`agentmem.storage.journal.review_lesson`). This module reads what a
person needs to decide: the lesson, the risks found, the operation and session it came
from, its runs and their failing outputs. It writes only the check of rows older than
the review columns (:func:`check_unchecked`), through :mod:`agentmem.storage.experiences`.
"""

from __future__ import annotations

import json
from typing import Any

from .._sqlite import dict_row, dict_rows
from . import experiences

__all__ = ["check_unchecked", "held", "waiting"]

#: How many runs, failing steps per run, and characters of an output a review shows.
MAX_RUNS = 5
MAX_FAILURES = 3
MAX_OUTPUT = 600


def waiting(db: Any) -> int:
    """How many lessons wait for a person's review (for ``agentmem status``)."""
    return experiences.waiting_review(db)


def check_unchecked(db: Any) -> int:
    """Check the live lessons whose risks were never checked (written before m017, or
    around the journal): each is held or marked checked. Call inside a write transaction;
    returns how many were held."""
    rows = experiences.unchecked(db)
    if not rows:
        return 0
    from ..agents import risk  # tree-sitter's reader: only when a row needs it

    n = 0
    for eid, text, rule in rows:
        try:
            parsed = json.loads(rule) if rule else None
        except ValueError:
            parsed = None
        state = risk.review_columns(text, parsed if isinstance(parsed, dict) else None)
        experiences.set_checked(db, eid, state)
        n += state["review"] == "held"
    return n


def held(db: Any, ids: list[int] | None = None) -> list[dict[str, Any]]:
    """The live lessons held for review (or those of ``ids`` held, approved or rejected),
    oldest first, each with its evidence: ``capabilities`` (the risks found),
    ``source`` (the operation and session the text came from), ``runs`` (the runs of its
    group, each with its task and failing steps)."""
    if ids is None:
        rows = dict_rows(
            db.execute(
                "SELECT * FROM experiences WHERE status = 'live' AND review = 'held' ORDER BY id"
            )
        )
    else:
        rows = dict_rows(
            db.execute(
                "SELECT * FROM experiences WHERE id IN (SELECT value FROM json_each(?)) "
                "ORDER BY id",
                [json.dumps(ids)],
            )
        )
    return [_entry(db, r) for r in rows]


def _entry(db: Any, row: dict[str, Any]) -> dict[str, Any]:
    try:
        caps = json.loads(row.get("capabilities") or "[]")
    except ValueError:
        caps = []
    src = dict_row(
        db.execute(
            "SELECT e.session_id, e.group_key, e.origin, e.operation_id, o.reason "
            "FROM experience_sources e LEFT JOIN operations o ON o.id = e.operation_id "
            "WHERE e.id = ?",
            [row["id"]],
        )
    )
    runs = _runs(db, src) if src else []
    return {
        "id": row["id"],
        "text": row["text"],
        "domain": row["domain"],
        "status": row["status"],
        "review": row.get("review"),
        "reviewed_by": row.get("reviewed_by"),
        "reviewed_at": row.get("reviewed_at"),
        "created_at": row["created_at"],
        "capabilities": caps,
        "advised": any(c.get("source") == "advised" for c in caps if isinstance(c, dict)),
        "source": src,
        "runs": runs,
    }


def _runs(db: Any, src: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs of the group the lesson's operation was learned from, with their failing
    steps (the output that, maybe, advised the command)."""
    if src.get("session_id") is None or src.get("group_key") is None:
        return []
    g = db.execute(
        "SELECT trajectory_ids FROM session_groups WHERE session_id = ? AND group_key = ?",
        [src["session_id"], src["group_key"]],
    ).fetchone()
    if g is None:
        return []
    try:
        tids = [int(t) for t in json.loads(g[0])][:MAX_RUNS]
    except (ValueError, TypeError):
        return []
    out = []
    for tid in tids:
        t = dict_row(
            db.execute("SELECT id, task, source, created_at FROM trajectories WHERE id = ?", [tid])
        )
        if t is None:
            out.append({"id": tid, "pruned": True})
            continue
        steps = dict_rows(
            db.execute(
                "SELECT position, tool, params, output, success FROM steps "
                "WHERE trajectory_id = ? ORDER BY position",
                [tid],
            )
        )
        failures: list[dict[str, Any]] = []
        for k, s in enumerate(steps):
            if s["success"]:
                continue
            nxt = steps[k + 1] if k + 1 < len(steps) else None
            failures.append(
                {
                    "position": s["position"],
                    "tool": s["tool"],
                    "params": _params(s["params"]),
                    "output": (s["output"] or "")[:MAX_OUTPUT],
                    "then": None
                    if nxt is None
                    else {"tool": nxt["tool"], "params": _params(nxt["params"]),
                          "success": bool(nxt["success"])},
                }
            )  # fmt: skip
            if len(failures) >= MAX_FAILURES:
                break
        entry: dict[str, Any] = dict(t)
        entry.update(steps=len(steps), failures=failures)
        out.append(entry)
    return out


def _params(raw: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, TypeError):
        return raw
