"""The owner of table ``experiences``: the lessons, live and deleted, with their evidence.

Which rows to write is decided elsewhere: every change comes from an operation
applied by :func:`agentmem.storage.journal.apply_operations` (or undone by
:func:`agentmem.storage.journal.undo_session`), inside one write transaction
together with both indexes and the journal. This module only moves rows. Readers
take any connection; the module imports the standard library alone (the prompt-hook
path reads lessons with :func:`live_rows`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._sqlite import dict_row, dict_rows

if TYPE_CHECKING:
    from ..records import Experience

__all__ = [
    "COUNTS",
    "EVIDENCE",
    "REVIEW",
    "add_evidence",
    "count_live",
    "insert",
    "live",
    "live_rows",
    "mark_deleted",
    "purge",
    "restore",
    "review_states",
    "rewrite",
    "row",
    "set_checked",
    "set_review",
    "states",
    "unchecked",
    "waiting_review",
]

#: The evidence counts of an experience (m009), kept in every before and after state.
COUNTS = ("support_groups", "support_runs", "contradict_groups", "contradict_runs")
#: The evidence columns: the counts, when a group last confirmed and contradicted it,
#: and the rule later sessions test it with.
EVIDENCE = (*COUNTS, "last_confirmed_at", "last_contradicted_at", "rule")
#: The review columns (m017): ``review`` (NULL, ``held``, ``approved``, ``rejected``), the
#: risky ``capabilities`` found (JSON), who reviewed it and when. Kept in every before and
#: after state, so an undo restores them.
REVIEW = ("review", "capabilities", "reviewed_by", "reviewed_at")


def row(db: Any, eid: int) -> dict[str, Any] | None:
    """An experience's state as the journal records it (live or not), or None."""
    return dict_row(
        db.execute(
            "SELECT id, text, domain, status, created_at, updated_at, created_session, "
            f"updated_session, {', '.join(EVIDENCE)}, {', '.join(REVIEW)} "
            "FROM experiences WHERE id = ?",
            [eid],
        )
    )


def live_rows(
    db: Any, ids: Sequence[int] | None = None, domains: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Rows of the live experiences (all, or the given ids, or those in ``domains`` plus
    the domain-free ones), by id."""
    # With ids, "+status" keeps SQLite from scanning the (status, domain) index: each id
    # is looked up by its key (0.01 ms for 5 ids in 10,000 lessons instead of 0.7 ms).
    sql = f"SELECT * FROM experiences WHERE {'+' if ids is not None else ''}status = 'live'"
    params: list[object] = []
    if ids is not None:
        sql += " AND id IN (SELECT value FROM json_each(?))"
        params.append(
            json.dumps([i for i in ids if isinstance(i, int) and not isinstance(i, bool)])
        )
    if domains is not None:
        sql += " AND domain IN (SELECT value FROM json_each(?))"
        params.append(json.dumps([*domains, ""]))
    return dict_rows(db.execute(sql + " ORDER BY id", params))


def live(
    db: Any, ids: Iterable[int] | None = None, domains: Sequence[str] | None = None
) -> list[Experience]:
    """The live experiences (all, or the given ids, or those in ``domains`` plus the
    domain-free ones) as records, by id."""
    from ..records import Experience, valid_id  # attrs: not on the prompt-hook path

    id_list = None if ids is None else [i for i in ids if valid_id(i)]
    return [Experience.from_row(r) for r in live_rows(db, id_list, domains)]


def states(db: Any) -> dict[int, dict[str, Any]]:
    """Every experience's text, domain and status, by id (what a plan is checked against)."""
    return {
        int(i): {"text": t, "domain": d, "status": s}
        for i, t, d, s in db.execute("SELECT id, text, domain, status FROM experiences")
    }


def count_live(db: Any) -> int:
    return int(db.execute("SELECT count(*) FROM experiences WHERE status = 'live'").fetchone()[0])


def review_states(db: Any) -> dict[int, str]:
    """id -> review state (``held``, ``approved``) of the live experiences that have one."""
    return {
        int(i): str(r)
        for i, r in db.execute(
            "SELECT id, review FROM experiences WHERE status = 'live' AND review IS NOT NULL"
        )
    }


def waiting_review(db: Any) -> int:
    """How many live lessons are held for a person's review."""
    return int(
        db.execute(
            "SELECT count(*) FROM experiences WHERE status = 'live' AND review = 'held'"
        ).fetchone()[0]
    )


# -- writing (inside the journal's transaction) ------------------------------------------


def insert(
    db: Any,
    text: str | None,
    domain: str,
    *,
    at: str,
    session_id: int,
    counts: Sequence[int],
    confirmed_at: str | None,
    rule: str | None,
    review: Mapping[str, Any] | None = None,
) -> int:
    """A new live experience (an ADD); its id. ``review``: its :data:`REVIEW` columns."""
    rv = [(review or {}).get(k) for k in REVIEW]
    cur = db.execute(
        "INSERT INTO experiences (text, domain, status, created_at, updated_at, "
        f"created_session, updated_session, {', '.join(COUNTS)}, last_confirmed_at, "
        f"rule, {', '.join(REVIEW)}) VALUES (?, ?, 'live', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
        "?, ?, ?, ?)",
        [text, domain, at, at, session_id, session_id, *counts, confirmed_at, rule, *rv],
    )
    return int(cur.lastrowid or 0)


def rewrite(
    db: Any,
    eid: int,
    text: str | None,
    domain: str,
    *,
    at: str,
    session_id: int,
    counts: Sequence[int],
    confirmed_at: str | None,
    rule: str | None,
    review: Mapping[str, Any] | None = None,
) -> None:
    """New text, domain, counts, rule and review state (:data:`REVIEW`) for a live
    experience (a MODIFY or MERGE)."""
    rv = [(review or {}).get(k) for k in REVIEW]
    db.execute(
        "UPDATE experiences SET text = ?, domain = ?, updated_at = ?, updated_session = ?, "
        f"{', '.join(f'{k} = ?' for k in COUNTS)}, rule = ?, "
        f"last_confirmed_at = coalesce(?, last_confirmed_at), "
        f"{', '.join(f'{k} = ?' for k in REVIEW)} WHERE id = ?",
        [text, domain, at, session_id, *counts, rule, confirmed_at, *rv, eid],
    )


def unchecked(db: Any) -> list[tuple[int, str, str | None]]:
    """(id, text, rule) of the live experiences whose risks were never checked (m017)."""
    return [
        (int(i), str(t), r)
        for i, t, r in db.execute(
            "SELECT id, text, rule FROM experiences WHERE capabilities IS NULL AND status = 'live'"
        )
    ]


def set_checked(db: Any, eid: int, review: Mapping[str, Any]) -> None:
    """An unchecked experience's review columns (:data:`REVIEW`), as its check found them."""
    db.execute(
        f"UPDATE experiences SET {', '.join(f'{k} = ?' for k in REVIEW)} WHERE id = ?",
        [*(review.get(k) for k in REVIEW), eid],
    )


def set_review(db: Any, eid: int, review: str, *, by: str, at: str, session_id: int) -> None:
    """A person's decision on a held lesson: ``approved`` or ``rejected``, by whom, when."""
    if review not in ("approved", "rejected"):
        raise ValueError(f"not a review decision: {review!r}")
    db.execute(
        "UPDATE experiences SET review = ?, reviewed_by = ?, reviewed_at = ?, updated_at = ?, "
        "updated_session = ? WHERE id = ?",
        [review, by, at, at, session_id, eid],
    )


def add_evidence(db: Any, eid: int, delta: Sequence[int], stamp: str, at: str) -> None:
    """Add ``delta`` to the counts of :data:`COUNTS` and set the column ``stamp``
    (``last_confirmed_at`` or ``last_contradicted_at``) to ``at`` (a CONFIRM or CONTRADICT)."""
    if stamp not in ("last_confirmed_at", "last_contradicted_at"):
        raise ValueError(f"not an evidence time: {stamp!r}")
    db.execute(
        f"UPDATE experiences SET {', '.join(f'{k} = {k} + ?' for k in COUNTS)}, "
        f"{stamp} = ? WHERE id = ?",
        [*delta, at, eid],
    )


def mark_deleted(db: Any, eid: int, *, at: str, session_id: int) -> None:
    """Mark an experience deleted (a DELETE, or the other targets of a MERGE)."""
    db.execute(
        "UPDATE experiences SET status = 'deleted', updated_at = ?, updated_session = ? "
        "WHERE id = ?",
        [at, session_id, eid],
    )


def purge(db: Any, eid: int) -> None:
    """Remove an experience's row (the undo of its ADD)."""
    db.execute("DELETE FROM experiences WHERE id = ?", [eid])


def restore(db: Any, state: Mapping[str, Any]) -> None:
    """Put an experience back in a journaled ``state`` (its ``before``): text, domain,
    status, update stamp and whatever evidence columns the state holds (states journaled
    before m009 hold none). The review columns (:data:`REVIEW`) are the state's, NULL when
    it holds none (journaled before m017): such a lesson is checked again when served."""
    ev = [k for k in EVIDENCE if k in state] + list(REVIEW)
    db.execute(
        "UPDATE experiences SET text = ?, domain = ?, status = ?, updated_at = ?, "
        f"updated_session = ?{''.join(f', {k} = ?' for k in ev)} WHERE id = ?",
        [
            state["text"],
            state["domain"],
            state["status"],
            state["updated_at"],
            state["updated_session"],
            *(state.get(k) for k in ev),
            state["id"],
        ],
    )
