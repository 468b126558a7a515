"""The owner of table ``experience_scopes``: which project each lesson is served in.

The rule is :mod:`agentmem.projects`' (pure); this module stores its answers, one
row per experience and learning session, and reads the current one (the latest
applied session's). Standard library only: the fast ``context`` path reads
:func:`hidden_ids`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..projects import decide_scope

__all__ = ["current_scopes", "hidden_ids", "record_scopes"]


_CURRENT = (
    "SELECT s.experience_id, s.project, s.support FROM experience_scopes s "
    "JOIN sessions z ON z.id = s.session_id AND z.status = 'applied' "
    "WHERE s.session_id = (SELECT max(s2.session_id) FROM experience_scopes s2 "
    "JOIN sessions z2 ON z2.id = s2.session_id AND z2.status = 'applied' "
    "WHERE s2.experience_id = s.experience_id)"
)


def _has_table(db: Any) -> bool:
    return (
        db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'experience_scopes'"
        ).fetchone()
        is not None
    )


def current_scopes(db: Any) -> dict[int, str]:
    """Live experiences served in one project only: id -> project. (The rest are global.)"""
    if not _has_table(db):
        return {}
    return {
        int(eid): str(project)
        for eid, project in db.execute(
            # CROSS JOIN: the scopes drive, each experience found by its key (a plain JOIN
            # let SQLite walk every live experience: 0.26 ms at 10,000, on every retrieval)
            f"SELECT c.experience_id, c.project FROM ({_CURRENT}) c "
            "CROSS JOIN experiences e ON e.id = c.experience_id AND e.status = 'live' "
            "WHERE c.project IS NOT NULL"
        ).fetchall()
    }


def hidden_ids(db: Any, project: str | None) -> set[int]:
    """The live experiences a context for ``project`` must not show (scoped elsewhere)."""
    return {eid for eid, p in current_scopes(db).items() if p != project}


def _support_of(db: Any, ids: Sequence[int]) -> dict[int, set[str]]:
    if not ids:
        return {}
    out: dict[int, set[str]] = {}
    for eid, support in db.execute(
        f"SELECT c.experience_id, c.support FROM ({_CURRENT}) c "
        f"WHERE c.experience_id IN ({','.join('?' * len(ids))})",
        list(ids),
    ).fetchall():
        try:
            value = json.loads(support)
        except ValueError:
            value = []
        out[int(eid)] = {str(p) for p in value} if isinstance(value, list) else {""}
    return out


def record_scopes(
    db: Any, session_id: int, applied: Iterable[Any], groups: Mapping[str, Sequence[int]]
) -> int:
    """Scope the experiences a learning session wrote; call inside its write transaction.

    ``applied``: the session's :class:`~agentmem.storage.journal.AppliedOp` records;
    ``groups``: each group's trajectory ids. A row is written for every
    experience whose runs include a project; returns how many are project-scoped.
    """
    from . import trajectories  # sqlite-utils and attrs: not on the prompt-hook path

    scoped = 0
    for a in applied:
        op = a.op
        if a.status != "applied" or a.result_id is None or not op.text:
            continue
        keys = op.detail.get("merged_groups") or ([op.group] if op.group else [])
        tids = sorted({t for k in keys for t in groups.get(k, ())})
        support, vocabulary = (
            trajectories.projects_and_vocabulary(db, tids) if tids else ({""}, set())
        )
        if any(k not in groups for k in keys) or not keys:
            support.add("")  # runs this session cannot name
        prior = _support_of(db, list(op.targets))
        for t in op.targets:
            support |= prior.get(t, {""})
        if support <= {""}:
            continue  # no project anywhere: global, as every lesson was before scopes
        project, reason = decide_scope(op.text, support, vocabulary=vocabulary)
        db.execute(
            "INSERT OR REPLACE INTO experience_scopes "
            "(experience_id, session_id, project, support, reason) VALUES (?, ?, ?, ?, ?)",
            [a.result_id, session_id, project, json.dumps(sorted(support)), reason],
        )
        scoped += project is not None
    return scoped
