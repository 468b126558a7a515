"""Applying operations to the experience library, journaling them, and undoing sessions.

Every change to ``experiences`` goes through :func:`apply_operations`, inside
the caller's single write transaction, together with the vector index, the
keyword index and the ``operations`` journal: the library after a session is the old one or the new
one, never in between. :func:`undo_session` restores each experience to the
``before`` state its operations recorded.

Evidence counts (``support_groups`` ... ``contradict_runs``) change with the
operations that carry a tally (``detail["tally"]``): an ADD starts with it, a
MODIFY or MERGE adds it to the counts of what it replaces, a CONFIRM or
CONTRADICT adds it and stamps ``last_confirmed_at`` or ``last_contradicted_at``
without touching the text. Every before and after state holds the counts, so an
undo restores them too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from sqlite_utils import Database

from . import index, keyword_index
from .db import write
from .errors import BusyError, UndoConflictError, UnknownSessionError
from .records import EVIDENCE_KINDS, Operation, valid_id
from .timestamps import now_iso

__all__ = [
    "AppliedOp",
    "apply_operations",
    "begin_session",
    "fail_session",
    "session_row",
    "touched_ids",
    "undo_session",
]

Vector = Sequence[float]


@attrs.frozen
class AppliedOp:
    """An operation as journaled: applied (with its result id) or rejected (with why)."""

    op: Operation
    status: str
    reason: str = ""
    result_id: int | None = None


#: The evidence columns of an experience (m009), kept in every before and after state.
COUNTS = ("support_groups", "support_runs", "contradict_groups", "contradict_runs")
EVIDENCE = (*COUNTS, "last_confirmed_at", "last_contradicted_at", "rule")


def _exp_row(db: Database, eid: int) -> dict[str, Any] | None:
    cur = db.execute(
        "SELECT id, text, domain, status, created_at, updated_at, created_session, "
        f"updated_session, {', '.join(EVIDENCE)} FROM experiences WHERE id = ?",
        [eid],
    )
    row = cur.fetchone()
    if row is None:
        return None
    return dict(zip([c[0] for c in cur.description], row))


def _journal(
    db: Database,
    session_id: int,
    op: Operation,
    *,
    status: str,
    reason: str = "",
    result_id: int | None = None,
    before: Sequence[Mapping[str, Any]] = (),
    after: Mapping[str, Any] | None = None,
    conditions: Any = None,
    at: str,
    rows: list[tuple[Any, ...]] | None = None,
) -> None:
    """Journal one operation (into ``rows``, when given, to be written with :func:`_flush`)."""
    row = (
        session_id,
        op.group,
        op.kind,
        json.dumps(list(op.targets)),
        result_id,
        op.text,
        op.domain,
        json.dumps(list(before), ensure_ascii=False),
        None if after is None else json.dumps(after, ensure_ascii=False),
        status,
        _join(reason, op.note) or None,
        op.origin,
        None if conditions is None else json.dumps(conditions),
        at,
    )
    if rows is None:
        _flush(db, [row])
    else:
        rows.append(row)


def _flush(db: Database, rows: list[tuple[Any, ...]]) -> None:
    db.conn.executemany(
        "INSERT INTO operations (session_id, group_key, kind, target_ids, result_id, text, domain, "
        "before, after, status, reason, origin, conditions, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def _join(a: str, b: str) -> str:
    return "; ".join(x for x in (a, b) if x)


def apply_operations(
    db: Database,
    session_id: int,
    ops: Sequence[Operation],
    vectors: Mapping[str, Vector],
    *,
    rejected: Sequence[tuple[Operation, str]] = (),
    conditions: Mapping[str, Any] | None = None,
    expected: Mapping[int, Mapping[str, Any]] | None = None,
) -> list[AppliedOp]:
    """Apply Omega* and journal every operation. Call inside one write transaction.

    ``vectors`` maps each new text to its embedding (computed before the
    transaction). An operation whose target is no longer live is rejected,
    not applied; the rest still apply. The vector index is written once, at the
    end, with each experience's final state (a session of thousands of
    operations rewrites each index block once, not once per operation).

    ``expected`` makes each operation a compare-and-set: it maps experience ids
    to the rows (``text``, ``domain``, ``status``) the session planned against,
    and an operation whose target is not as expected any more (another session
    changed it meanwhile) is rejected as ``stale``, never applied.
    """
    at = now_iso()
    out: list[AppliedOp] = []
    cond = conditions or {}
    puts: dict[int, tuple[str, str]] = {}  # the indexes' final state: domain, text
    rows: list[tuple[Any, ...]] = []  # journal rows, in order, written at the end
    gone: set[int] = set()

    def put(eid: int, domain: str, text: str | None) -> None:
        gone.discard(eid)
        puts[eid] = (domain, text or "")

    def delete(eid: int) -> None:
        _delete(db, eid, at, session_id)
        puts.pop(eid, None)
        gone.add(eid)

    def reject(op: Operation, why: str) -> None:
        conds = cond.get(op.group or "")
        _journal(
            db, session_id, op, status="rejected", reason=why, conditions=conds, at=at, rows=rows
        )
        out.append(AppliedOp(op, "rejected", why))

    for op, why in rejected:
        reject(op, why)
    for op in ops:
        befores = [_exp_row(db, t) for t in op.targets]
        if expected is not None:
            moved = [t for t, b in zip(op.targets, befores) if not _as_expected(b, expected.get(t))]
            if moved:
                reject(op, f"stale: experience {moved[0]} changed since this session read it")
                continue
        dead = [t for t, b in zip(op.targets, befores) if b is None or b["status"] != "live"]
        if dead:
            reject(op, f"experience {dead[0]} is not live any more")
            continue
        before = [b for b in befores if b is not None]
        result: int | None = None
        after: dict[str, Any] | None = None
        delta = _delta(op)
        rule = op.detail.get("rule")
        rule_json: str | None = rule.to_json() if rule is not None else None
        confirmed = at if delta["support_groups"] else None
        if op.kind == "ADD":
            cur = db.execute(
                "INSERT INTO experiences (text, domain, status, created_at, updated_at, "
                f"created_session, updated_session, {', '.join(COUNTS)}, last_confirmed_at, "
                "rule) VALUES (?, ?, 'live', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [op.text, op.domain, at, at, session_id, session_id]
                + [delta[k] for k in COUNTS]
                + [confirmed, rule_json],
            )
            result = int(cur.lastrowid or 0)
            put(result, op.domain, op.text)
        elif op.kind in ("MODIFY", "MERGE"):
            result = op.targets[0]
            domain = op.domain or before[0]["domain"]
            counts = [sum(b[k] or 0 for b in before) + delta[k] for k in COUNTS]
            if rule_json is None and op.origin != "user":  # a hand edit may change the meaning
                rule_json = before[0]["rule"]
            db.execute(
                "UPDATE experiences SET text = ?, domain = ?, updated_at = ?, updated_session = ?, "
                f"{', '.join(f'{k} = ?' for k in COUNTS)}, rule = ?, "
                "last_confirmed_at = coalesce(?, last_confirmed_at) WHERE id = ?",
                [op.text, domain, at, session_id, *counts, rule_json, confirmed, result],
            )
            put(result, domain, op.text)
            for other in op.targets[1:]:
                delete(other)
            op = attrs.evolve(op, domain=domain)
        elif op.kind in EVIDENCE_KINDS:
            result = op.targets[0]
            stamp = "last_confirmed_at" if op.kind == "CONFIRM" else "last_contradicted_at"
            db.execute(
                f"UPDATE experiences SET {', '.join(f'{k} = {k} + ?' for k in COUNTS)}, "
                f"{stamp} = ? WHERE id = ?",
                [*(delta[k] for k in COUNTS), at, result],
            )
            op = attrs.evolve(op, domain=before[0]["domain"])
        elif op.kind == "DELETE":
            delete(op.targets[0])
        if result is not None:
            row = _exp_row(db, result) or {}
            after = {
                "id": result,
                "text": row.get("text", op.text),
                "domain": row.get("domain", op.domain),
                **{k: row.get(k) for k in EVIDENCE if k != "rule"},
            }
        _journal(
            db,
            session_id,
            op,
            status="applied",
            result_id=result,
            before=before,
            after=after,
            conditions=cond.get(op.group or ""),
            at=at,
            rows=rows,
        )
        out.append(AppliedOp(op, "applied", result_id=result))
    _flush(db, rows)
    index.remove_many(db, sorted(gone))
    for eid in sorted(gone):
        keyword_index.remove(db, eid)
    index.put_many(db, [(eid, domain, vectors[text]) for eid, (domain, text) in puts.items()])
    keyword_index.put_many(db, [(eid, text, domain) for eid, (domain, text) in puts.items()])
    return out


def _delta(op: Operation) -> dict[str, int]:
    """The evidence counts an operation adds (its ``detail["tally"]``), zeros if none."""
    t = op.detail.get("tally")
    return {k: int(getattr(t, k, 0) or 0) for k in COUNTS}


def _as_expected(row: Mapping[str, Any] | None, want: Mapping[str, Any] | None) -> bool:
    if row is None or want is None:
        return row is None and want is None
    return all(row[k] == want.get(k) for k in ("text", "domain", "status"))


def _delete(db: Database, eid: int, at: str, session_id: int) -> None:
    db.execute(
        "UPDATE experiences SET status = 'deleted', updated_at = ?, updated_session = ? "
        "WHERE id = ?",
        [at, session_id, eid],
    )


def _index(db: Database, eid: int, text: str, domain: str, vectors: Mapping[str, Vector]) -> None:
    """Put a live experience into both indexes (vector and keyword), in this transaction."""
    index.put(db, eid, domain, vectors[text])
    keyword_index.put_many(db, [(eid, text, domain)])


def _unindex(db: Database, eid: int) -> None:
    index.remove(db, eid)
    keyword_index.remove(db, eid)


# -- sessions -------------------------------------------------------------------------


def _pid_alive(pid: int | None) -> bool:
    """Whether process ``pid`` still runs (a killed, unreaped zombie does not)."""
    if not pid:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    try:  # a killed process that nobody reaped yet (a zombie) still answers kill(pid, 0)
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rpartition(")")[2].split()[:1] != ["Z"]
    except OSError:
        return True


def begin_session(
    db: Database,
    kind: str,
    *,
    model: str | None = None,
    embedder: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> int:
    """Create a ``running`` session row; for ``learn``, refuse if another one is running.

    A running learn session whose process is gone (killed) is marked ``failed``:
    it never applied anything, since a session applies in one transaction.
    """
    with write(db):
        if kind == "learn":
            for sid, pid in db.execute(
                "SELECT id, pid FROM sessions WHERE kind = 'learn' AND status = 'running'"
            ).fetchall():
                if _pid_alive(pid):
                    raise BusyError(
                        f"learning session {sid} is running in process {pid}; "
                        "wait for it to finish (agentmem learn --wait) or stop that process"
                    )
                db.execute(
                    "UPDATE sessions SET status = 'failed', finished_at = ?, "
                    "report = json_set(report, '$.error', 'process ended before applying') "
                    "WHERE id = ?",
                    [now_iso(), sid],
                )
        cur = db.execute(
            "INSERT INTO sessions (kind, status, started_at, model, embedder, params, pid) "
            "VALUES (?, 'running', ?, ?, ?, ?, ?)",
            [kind, now_iso(), model, embedder, json.dumps(dict(params or {})), os.getpid()],
        )
        return int(cur.lastrowid or 0)


def fail_session(db: Database, session_id: int, error: str) -> None:
    """Mark a session failed (nothing of it was applied)."""
    with write(db):
        db.execute(
            "UPDATE sessions SET status = 'failed', finished_at = ?, report = ? WHERE id = ?",
            [now_iso(), json.dumps({"error": error[:2000]}), session_id],
        )


def session_row(db: Database, session_id: int) -> dict[str, Any]:
    if not valid_id(session_id):
        raise UnknownSessionError(f"no session has id {session_id}")
    cur = db.execute("SELECT * FROM sessions WHERE id = ?", [session_id])
    row = cur.fetchone()
    if row is None:
        raise UnknownSessionError(f"no session has id {session_id}")
    return dict(zip([c[0] for c in cur.description], row))


def touched_ids(db: Database, session_id: int) -> set[int]:
    """Experience ids that a session's applied operations changed."""
    ids: set[int] = set()
    for targets, result in db.execute(
        "SELECT target_ids, result_id FROM operations WHERE session_id = ? AND status = 'applied'",
        [session_id],
    ):
        ids.update(json.loads(targets))
        if result is not None:
            ids.add(result)
    return ids


def _later_conflicts(db: Database, session_id: int) -> list[int]:
    mine = touched_ids(db, session_id)
    out = []
    for (sid,) in db.execute(
        "SELECT id FROM sessions WHERE id > ? AND status = 'applied' "
        "AND kind IN ('learn', 'curate') "
        "ORDER BY id",
        [session_id],
    ).fetchall():
        if touched_ids(db, sid) & mine:
            out.append(sid)
    return out


def undo_plan(db: Database, session_id: int, *, cascade: bool = False) -> list[int]:
    """The sessions to undo, newest first, to revert ``session_id`` (raises on conflict)."""
    row = session_row(db, session_id)
    if row["kind"] == "undo":
        raise UndoConflictError(f"session {session_id} is itself an undo; undo is not undoable")
    if row["status"] != "applied":
        raise UndoConflictError(
            f"session {session_id} is {row['status']}; only an applied session can be undone"
        )
    later = _later_conflicts(db, session_id)
    if later and not cascade:
        raise UndoConflictError(
            f"session(s) {', '.join(map(str, later))} changed experiences that session "
            f"{session_id} changed; undo them first, or pass --cascade to undo them too"
        )
    plan: list[int] = []
    for sid in reversed(later):
        for s in undo_plan(db, sid, cascade=True):
            if s not in plan:
                plan.append(s)
    plan.append(session_id)
    return sorted(set(plan), reverse=True)


def restore_texts(db: Database, session_ids: Sequence[int]) -> list[str]:
    """Texts that undoing these sessions brings back (to embed before the transaction)."""
    texts: list[str] = []
    for sid in session_ids:
        for (before,) in db.execute(
            "SELECT before FROM operations WHERE session_id = ? AND status = 'applied'", [sid]
        ):
            texts.extend(b["text"] for b in json.loads(before))
    return texts


def undo_session(
    db: Database, session_id: int, vectors: Mapping[str, Vector], *, cascade: bool = False
) -> list[int]:
    """Revert a session (and, with ``cascade``, the later ones that touched the same
    experiences) in one transaction. Returns the ids of the undo sessions created."""
    created = []
    with write(db):
        for sid in undo_plan(db, session_id, cascade=cascade):
            created.append(_undo_one(db, sid, vectors))
    return created


def _undo_one(db: Database, session_id: int, vectors: Mapping[str, Vector]) -> int:
    at = now_iso()
    cur = db.execute(
        "INSERT INTO sessions (kind, status, started_at, finished_at, undoes, pid) "
        "VALUES ('undo', 'applied', ?, ?, ?, ?)",
        [at, at, session_id, os.getpid()],
    )
    undo_id = int(cur.lastrowid or 0)
    rows = db.execute(
        "SELECT id, kind, target_ids, result_id, before, after, group_key FROM operations "
        "WHERE session_id = ? AND status = 'applied' ORDER BY id DESC",
        [session_id],
    ).fetchall()
    for _oid, kind, _targets, result_id, before_json, after_json, group in rows:
        before = json.loads(before_json)
        if kind == "ADD":
            current = _exp_row(db, result_id)
            db.execute("DELETE FROM experiences WHERE id = ?", [result_id])
            _unindex(db, result_id)
            inverse = Operation(
                "DELETE",
                targets=(result_id,),
                group=group,
                origin="undo",
                note=f"undo of session {session_id}",
            )
            _journal(
                db, undo_id, inverse, status="applied", before=[current] if current else [], at=at
            )
            continue
        restored = []
        for b in before:
            current = _exp_row(db, b["id"])
            ev = [k for k in EVIDENCE if k in b]  # states journaled before m009 hold none
            db.execute(
                "UPDATE experiences SET text = ?, domain = ?, status = ?, updated_at = ?, "
                f"updated_session = ?{''.join(f', {k} = ?' for k in ev)} WHERE id = ?",
                [
                    b["text"],
                    b["domain"],
                    b["status"],
                    b["updated_at"],
                    b["updated_session"],
                    *(b[k] for k in ev),
                    b["id"],
                ],
            )
            if b["status"] == "live":
                _index(db, b["id"], b["text"], b["domain"], vectors)
            else:
                _unindex(db, b["id"])
            restored.append(current)
            inverse = Operation(
                "MODIFY",
                text=b["text"],
                targets=(b["id"],),
                domain=b["domain"],
                group=group,
                origin="undo",
                note=f"undo of session {session_id}",
            )
            _journal(
                db,
                undo_id,
                inverse,
                status="applied",
                result_id=b["id"],
                before=[current] if current else [],
                after={
                    "id": b["id"],
                    "text": b["text"],
                    "domain": b["domain"],
                    **{k: b[k] for k in EVIDENCE if k in b and k != "rule"},
                },
                at=at,
            )
        del after_json
    db.execute(
        "UPDATE sessions SET status = 'undone', undone_by = ? WHERE id = ?", [undo_id, session_id]
    )
    return undo_id
