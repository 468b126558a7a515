"""The journal: sessions, their operations and groups, and applying and undoing them.

The owner of tables ``sessions``, ``operations`` and ``session_groups``. Every
change to ``experiences`` goes through :func:`apply_operations`, inside the
caller's single write transaction, together with the vector index, the keyword
index and the ``operations`` journal: the library after a session is the old one
or the new one, never in between. :func:`undo_session` restores each experience
to the ``before`` state its operations recorded. (The rows of ``experiences``
themselves are moved by :mod:`agentmem.storage.experiences`.)

Evidence counts (``support_groups`` ... ``contradict_runs``) change with the
operations that carry a tally (``detail["tally"]``): an ADD starts with it, a
MODIFY or MERGE adds it to the counts of what it replaces, a CONFIRM or
CONTRADICT adds it and stamps ``last_confirmed_at`` or ``last_contradicted_at``
without touching the text. Every before and after state holds the counts, so an
undo restores them too.

A session's life: :func:`begin_session` (``running``; one learning session at a
time), then in the applying transaction :func:`apply_operations`,
:func:`record_groups` and :func:`finish_session` (``applied``), or
:func:`fail_session`. A curation session is applied at once
(:func:`insert_session`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
from sqlite_utils import Database

from .. import sanitize
from .._sqlite import dict_row, dict_rows
from ..agents.base import declared_untestable
from ..db import write
from ..errors import (
    AgentMemError,
    BusyError,
    UndoConflictError,
    UnknownExperienceError,
    UnknownSessionError,
)
from ..records import EVIDENCE_KINDS, Operation, valid_id
from ..redact import DEFAULT_REDACTOR
from ..timestamps import now_iso
from . import experiences, keyword_index, served, vector_index
from .experiences import COUNTS, EVIDENCE, REVIEW

__all__ = [
    "AppliedOp",
    "apply_operations",
    "begin_session",
    "counts",
    "fail_session",
    "finish_session",
    "insert_session",
    "learned_by",
    "learned_groups",
    "operations",
    "process_alive",
    "record_groups",
    "restore_texts",
    "review_lesson",
    "session_row",
    "sessions",
    "touched_ids",
    "undo_plan",
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
    ops, vectors = _redacted_ops(ops, vectors)
    rejected = [(_redacted_op(op), why) for op, why in rejected]
    run = _Apply(db, session_id, now_iso(), conditions or {})
    for op, why in rejected:
        run.reject(op, why)
    for op in ops:
        befores = [experiences.row(db, t) for t in op.targets]
        why = _refusal(op, befores, expected)
        if why:
            run.reject(op, why)
        else:
            run.apply(op, [b for b in befores if b is not None])
    run.flush(vectors)
    return run.out


def _redacted_op(op: Operation) -> Operation:
    """``op`` with its text and note redacted with the built-in rules: whatever wrote a
    lesson (a model, a person, a team), no secret is journaled or served."""
    text = None if op.text is None else DEFAULT_REDACTOR.text(op.text)
    note = DEFAULT_REDACTOR.text(op.note)
    if text == op.text and note == op.note:
        return op
    return attrs.evolve(op, text=text, note=note)


def _redacted_ops(
    ops: Sequence[Operation], vectors: Mapping[str, Vector]
) -> tuple[list[Operation], Mapping[str, Vector]]:
    """The operations redacted (:func:`_redacted_op`), and ``vectors`` with each redacted
    text given its original's embedding."""
    out, extra = [], {}
    for op in ops:
        new = _redacted_op(op)
        if new is op:
            out.append(op)
            continue
        if new.text is not None and op.text is not None and op.text in vectors:
            extra[new.text] = vectors[op.text]
        out.append(new)
    return out, ({**vectors, **extra} if extra else vectors)


def _refusal(
    op: Operation,
    befores: Sequence[Mapping[str, Any] | None],
    expected: Mapping[int, Mapping[str, Any]] | None,
) -> str:
    """Why ``op`` cannot apply to its targets as they are now ('' when it can), or why
    its text may never be a lesson (:func:`agentmem.sanitize.lesson_problem`)."""
    if op.text and op.kind in ("ADD", "MODIFY", "MERGE"):
        bad = sanitize.lesson_problem(op.text)
        if bad:
            return f"not a lesson agentmem may serve: {bad}"
    if expected is not None:
        moved = [t for t, b in zip(op.targets, befores) if not _as_expected(b, expected.get(t))]
        if moved:
            return f"stale: experience {moved[0]} changed since this session read it"
    dead = [t for t, b in zip(op.targets, befores) if b is None or b["status"] != "live"]
    if dead:
        return f"experience {dead[0]} is not live any more"
    return ""


class _Apply:
    """One :func:`apply_operations` call: the experiences written as it goes, the journal
    rows and both indexes' final state written once at the end (:meth:`flush`)."""

    def __init__(self, db: Database, session_id: int, at: str, conditions: Mapping[str, Any]):
        self.db = db
        self.session_id = session_id
        self.at = at
        self.conditions = conditions
        self.out: list[AppliedOp] = []
        self.puts: dict[int, tuple[str, str]] = {}  # the indexes' final state: domain, text
        self.gone: set[int] = set()
        self.rows: list[tuple[Any, ...]] = []  # journal rows, in order, written at the end

    def put(self, eid: int, domain: str, text: str | None) -> None:
        self.gone.discard(eid)
        self.puts[eid] = (domain, text or "")

    def delete(self, eid: int) -> None:
        experiences.mark_deleted(self.db, eid, at=self.at, session_id=self.session_id)
        self.puts.pop(eid, None)
        self.gone.add(eid)

    def reject(self, op: Operation, why: str) -> None:
        conds = self.conditions.get(op.group or "")
        _journal(
            self.db,
            self.session_id,
            op,
            status="rejected",
            reason=why,
            conditions=conds,
            at=self.at,
            rows=self.rows,
        )
        self.out.append(AppliedOp(op, "rejected", why))

    def apply(self, op: Operation, before: list[dict[str, Any]]) -> None:
        """Write one operation whose targets are live; journal it with its before and after."""
        result: int | None = None
        if op.kind == "ADD":
            result = self._add(op)
        elif op.kind in ("MODIFY", "MERGE"):
            result, op = self._rewrite(op, before)
        elif op.kind in EVIDENCE_KINDS:
            result, op = self._count(op, before)
        elif op.kind == "DELETE":
            self.delete(op.targets[0])
        after = None if result is None else self._after(result, op)
        _journal(
            self.db,
            self.session_id,
            op,
            status="applied",
            result_id=result,
            before=before,
            after=after,
            conditions=self.conditions.get(op.group or ""),
            at=self.at,
            rows=self.rows,
        )
        self.out.append(AppliedOp(op, "applied", result_id=result))

    def _add(self, op: Operation) -> int:
        delta = _delta(op)
        result = experiences.insert(
            self.db,
            op.text,
            op.domain,
            at=self.at,
            session_id=self.session_id,
            counts=[delta[k] for k in COUNTS],
            confirmed_at=self.at if delta["support_groups"] else None,
            rule=_rule_json(op),
            review=_review_state(op.text, _rule_dict(op)),
        )
        self.put(result, op.domain, op.text)
        return result

    def _rewrite(self, op: Operation, before: list[dict[str, Any]]) -> tuple[int, Operation]:
        """A MODIFY or MERGE: the first target takes the text and every target's counts,
        the others are deleted. Targets whose evidence came from runs they share (one
        lesson learned twice from the same runs) take the larger counts, not their sum: a
        run counts once."""
        delta = _delta(op)
        combine = _sum_or_max(self.db, op, before)
        result = op.targets[0]
        domain = op.domain or before[0]["domain"]
        rule = _rule_json(op)
        if rule is None and op.origin != "user":  # a hand edit may change the meaning
            rule = _kept_rule(before[0])
        review = _review_state(op.text, _rule_dict(op) or _loads(rule))
        if op.text == before[0]["text"] and before[0].get("review") == "approved":
            review = {k: before[0].get(k) for k in REVIEW}  # the approved text stands
        experiences.rewrite(
            self.db,
            result,
            op.text,
            domain,
            at=self.at,
            session_id=self.session_id,
            counts=[combine(b[k] or 0 for b in before) + delta[k] for k in COUNTS],
            confirmed_at=self.at if delta["support_groups"] else None,
            rule=rule,
            review=review,
        )
        self.put(result, domain, op.text)
        for other in op.targets[1:]:
            self.delete(other)
        return result, attrs.evolve(op, domain=domain)

    def _count(self, op: Operation, before: list[dict[str, Any]]) -> tuple[int, Operation]:
        """A CONFIRM or CONTRADICT: the counts grow, the text stays."""
        delta = _delta(op)
        result = op.targets[0]
        stamp = "last_confirmed_at" if op.kind == "CONFIRM" else "last_contradicted_at"
        experiences.add_evidence(self.db, result, [delta[k] for k in COUNTS], stamp, self.at)
        return result, attrs.evolve(op, domain=before[0]["domain"])

    def _after(self, result: int, op: Operation) -> dict[str, Any]:
        row = experiences.row(self.db, result) or {}
        return {
            "id": result,
            "text": row.get("text", op.text),
            "domain": row.get("domain", op.domain),
            **{k: row.get(k) for k in EVIDENCE if k != "rule"},
            **{k: row.get(k) for k in REVIEW},
        }

    def flush(self, vectors: Mapping[str, Vector]) -> None:
        """Write the journal rows, then each index once with every experience's final state."""
        db = self.db
        _flush(db, self.rows)
        vector_index.remove_many(db, sorted(self.gone))
        for eid in sorted(self.gone):
            keyword_index.remove(db, eid)
        puts = self.puts
        vector_index.put_many(
            db, [(eid, domain, vectors[text]) for eid, (domain, text) in puts.items()]
        )
        keyword_index.put_many(db, [(eid, text, domain) for eid, (domain, text) in puts.items()])


def _rule_dict(op: Operation) -> dict[str, Any] | None:
    """What a risk check reads of an operation besides its text: its rule, and the command
    its finding carries (a shell correction's ``helper``) with the kind of correction
    (``change``: ``advised`` when a failing output advised the command)."""
    rule = op.detail.get("rule")
    out: dict[str, Any] = rule.as_dict() if rule is not None and hasattr(rule, "as_dict") else {}
    for f in (op.detail.get("evidence"), op.detail.get("joined")):
        d = getattr(f, "detail", None)
        if isinstance(d, Mapping):
            for key in ("helper", "change"):
                if isinstance(d.get(key), str) and key not in out:
                    out[key] = d[key]
    return out or None


def _loads(rule: str | None) -> dict[str, Any] | None:
    try:
        value = json.loads(rule) if rule else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _review_state(text: str | None, rule: Mapping[str, Any] | None) -> dict[str, Any]:
    """The review columns of a lesson as written (:func:`agentmem.agents.risk.review_columns`):
    every write of a text passes here, whoever proposed it."""
    from ..agents import risk  # tree-sitter's reader: only where a text is written

    return risk.review_columns(text, rule)


def _kept_rule(row: Mapping[str, Any]) -> str | None:
    """The stored rule a rewrite without one keeps, as the row's own text reads it: a
    client tool's rule stored testable before such rules were untestable is told apart by
    its text only (:func:`agentmem.agents.base.declared_untestable`), which the rewrite
    replaces, so it is kept untestable (review 29)."""
    rule = row.get("rule")
    data = _loads(rule)
    if data is not None and declared_untestable(data, row.get("text") or ""):
        return json.dumps({**data, "testable": False}, ensure_ascii=False, sort_keys=True)
    return rule


def _rule_json(op: Operation) -> str | None:
    rule = op.detail.get("rule")
    return rule.to_json() if rule is not None else None


def _delta(op: Operation) -> dict[str, int]:
    """The evidence counts an operation adds (its ``detail["tally"]``), zeros if none."""
    t = op.detail.get("tally")
    return {k: int(getattr(t, k, 0) or 0) for k in COUNTS}


def _as_expected(row: Mapping[str, Any] | None, want: Mapping[str, Any] | None) -> bool:
    if row is None or want is None:
        return row is None and want is None
    return all(row[k] == want.get(k) for k in ("text", "domain", "status"))


def _index(db: Database, eid: int, text: str, domain: str, vectors: Mapping[str, Vector]) -> None:
    """Put a live experience into both indexes (vector and keyword), in this transaction."""
    vector_index.put(db, eid, domain, vectors[text])
    keyword_index.put_many(db, [(eid, text, domain)])


def _unindex(db: Database, eid: int) -> None:
    vector_index.remove(db, eid)
    keyword_index.remove(db, eid)


# -- sessions -------------------------------------------------------------------------


def process_alive(pid: int | None) -> bool:
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
                if process_alive(pid):
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


def insert_session(
    db: Database,
    kind: str,
    *,
    status: str,
    model: str | None = None,
    embedder: str | None = None,
    params: Mapping[str, Any] | None = None,
    undoes: int | None = None,
    pid: int | None = None,
    finished: bool = False,
    at: str | None = None,
) -> int:
    """A session row written in the caller's transaction (a curation or undo session, which
    apply at once, or a team session on the primary); its id. ``params`` None stores the
    column's default; ``finished`` stamps ``finished_at`` with the start time (``at``, else
    now)."""
    at = at or now_iso()
    cols: dict[str, object] = {"kind": kind, "status": status, "started_at": at}
    if finished:
        cols["finished_at"] = at
    extra = {"model": model, "embedder": embedder, "undoes": undoes, "pid": pid}
    cols.update({k: v for k, v in extra.items() if v is not None})
    if params is not None:
        cols["params"] = json.dumps(dict(params))
    cur = db.execute(
        f"INSERT INTO sessions ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
        list(cols.values()),
    )
    return int(cur.lastrowid or 0)


def finish_session(db: Database, session_id: int, report: Mapping[str, Any]) -> None:
    """Mark a session applied with its report, in its applying transaction."""
    db.execute(
        "UPDATE sessions SET status = 'applied', finished_at = ?, report = ? WHERE id = ?",
        [now_iso(), json.dumps(report, ensure_ascii=False), session_id],
    )


def record_groups(db: Database, session_id: int, groups: Sequence[Mapping[str, Any]]) -> None:
    """Journal the groups a session learned from (inside its applying transaction): each
    with ``group_key``, ``trajectory_ids``, ``status``, ``mean_abs_advantage``,
    ``conditions``, ``summaries``, ``kind`` and ``reason`` (JSON-ready values)."""
    for g in groups:
        db.execute(
            "INSERT INTO session_groups (session_id, group_key, trajectory_ids, status, "
            "mean_abs_advantage, conditions, summaries, kind, reason) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                session_id,
                g["group_key"],
                json.dumps(sorted(g["trajectory_ids"])),
                g["status"],
                g["mean_abs_advantage"],
                json.dumps(g["conditions"]),
                json.dumps(g["summaries"], ensure_ascii=False),
                g["kind"],
                g["reason"] or None,
            ],
        )


def learned_groups(db: Database) -> set[tuple[str, str]]:
    """(group key, trajectory ids as journaled JSON) of every group an applied session
    learned from."""
    return {
        (str(g), str(ids))
        for g, ids in db.execute(
            "SELECT g.group_key, g.trajectory_ids FROM session_groups g "
            "JOIN sessions s ON s.id = g.session_id WHERE s.status = 'applied'"
        )
    }


def _sum_or_max(
    db: Database, op: Operation, before: list[dict[str, Any]]
) -> Callable[[Iterable[int]], int]:
    """How a MERGE combines its targets' counts: their sum when their evidence came from
    different runs, the largest when any two share a run (precision first: a shared run
    is never counted twice, at the cost of undercounting a partial overlap)."""
    if op.kind != "MERGE" or len(before) < 2:
        return sum
    behind = counted_runs(db)
    sets = [behind.get(int(b["id"]), set()) for b in before]
    shared = any(a & b for i, a in enumerate(sets) for b in sets[i + 1 :])
    return max if shared else sum


def counted_runs(db: Database) -> dict[int, set[int]]:
    """Each experience's runs that already count in its evidence: those of every group of
    each applied learning session that created, rewrote, confirmed or contradicted it (such
    a session weighed the lesson against all its groups: those near the lesson's rule gave
    their verdict then). A run counts once (``learn --relearn``, issue 31)."""
    out: dict[int, set[int]] = {}
    for eid, targets, ids in db.execute(
        "SELECT o.result_id, o.target_ids, g.trajectory_ids FROM operations o "
        "JOIN sessions s ON s.id = o.session_id "
        "JOIN session_groups g ON g.session_id = o.session_id "
        "WHERE s.status = 'applied' AND s.kind = 'learn' AND o.status = 'applied' "
        "AND o.kind IN ('ADD', 'MODIFY', 'CONFIRM', 'CONTRADICT')"
    ):
        runs = {int(i) for i in json.loads(ids)}
        for e in {eid, *(json.loads(targets or "[]") if eid is None else ())}:
            if isinstance(e, int):
                out.setdefault(e, set()).update(runs)
    return out


def learned_by(db: Database, group_key: str, trajectory_ids: Sequence[int]) -> int | None:
    """The applied session that learned this group with these trajectories, if any."""
    row = db.execute(
        "SELECT g.session_id FROM session_groups g JOIN sessions s ON s.id = g.session_id "
        "WHERE s.status = 'applied' AND g.group_key = ? AND g.trajectory_ids = ?",
        [group_key, json.dumps(sorted(trajectory_ids))],
    ).fetchone()
    return None if row is None else int(row[0])


def session_row(db: Database, session_id: int) -> dict[str, Any]:
    if not valid_id(session_id):
        raise UnknownSessionError(f"no session has id {session_id}")
    row = dict_row(db.execute("SELECT * FROM sessions WHERE id = ?", [session_id]))
    if row is None:
        raise UnknownSessionError(f"no session has id {session_id}")
    return row


def sessions(db: Database) -> list[dict[str, Any]]:
    """Every session, oldest first, with its parameters and report read."""
    out = dict_rows(db.execute("SELECT * FROM sessions ORDER BY id"))
    for row in out:
        row["params"] = json.loads(row["params"])
        row["report"] = json.loads(row["report"])
    return out


def operations(db: Database, session_id: int | None = None) -> list[dict[str, Any]]:
    """The journaled operations of one session (which must exist), or of all, in order,
    with their targets and before and after states read."""
    sql, params = "SELECT * FROM journal", []
    if session_id is not None:
        session_row(db, session_id)
        sql += " WHERE session_id = ?"
        params = [session_id]
    out = dict_rows(db.execute(sql + " ORDER BY id", params))
    for row in out:
        for k in ("target_ids", "before", "after"):
            row[k] = json.loads(row[k]) if row[k] is not None else None
    return out


def counts(db: Database) -> tuple[int, int]:
    """How many sessions and operations the journal holds."""
    return (
        int(db.execute("SELECT count(*) FROM sessions").fetchone()[0]),
        int(db.execute("SELECT count(*) FROM operations").fetchone()[0]),
    )


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
    """Revert one session's applied operations, newest first, as a new undo session."""
    at = now_iso()
    undo_id = insert_session(
        db, "undo", status="applied", undoes=session_id, pid=os.getpid(), finished=True, at=at
    )
    note = f"undo of session {session_id}"
    rows = db.execute(
        "SELECT kind, result_id, before, group_key FROM operations "
        "WHERE session_id = ? AND status = 'applied' ORDER BY id DESC",
        [session_id],
    ).fetchall()
    for kind, result_id, before_json, group in rows:
        if kind == "ADD":
            _undo_add(db, undo_id, result_id, group, note, at)
        else:
            for b in json.loads(before_json):
                _undo_change(db, undo_id, b, group, note, at, vectors)
    served.unjudge(db, session_id)  # its verdicts on served lessons go too
    db.execute(
        "UPDATE sessions SET status = 'undone', undone_by = ? WHERE id = ?", [undo_id, session_id]
    )
    return undo_id


def _undo_add(db: Database, undo_id: int, eid: int, group: str | None, note: str, at: str) -> None:
    """The undo of an ADD: the experience goes (row and index entries), journaled as a DELETE."""
    current = experiences.row(db, eid)
    experiences.purge(db, eid)
    _unindex(db, eid)
    inverse = Operation("DELETE", targets=(eid,), group=group, origin="undo", note=note)
    _journal(db, undo_id, inverse, status="applied", before=[current] if current else [], at=at)


def _undo_change(
    db: Database,
    undo_id: int,
    b: Mapping[str, Any],
    group: str | None,
    note: str,
    at: str,
    vectors: Mapping[str, Vector],
) -> None:
    """The undo of a change to one experience: back to its ``before`` state ``b``,
    journaled as a MODIFY."""
    current = experiences.row(db, b["id"])
    experiences.restore(db, b)
    if b["status"] == "live":
        _index(db, b["id"], b["text"], b["domain"], vectors)
    else:
        _unindex(db, b["id"])
    inverse = Operation(
        "MODIFY",
        text=b["text"],
        targets=(b["id"],),
        domain=b["domain"],
        group=group,
        origin="undo",
        note=note,
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


def removed_by_user(db: Database) -> list[tuple[str, str]]:
    """``(text, removed_at)`` of every lesson a person removed (a curation session's
    DELETE that was not undone), oldest first."""
    out: list[tuple[str, str]] = []
    for before, at in db.execute(
        "SELECT o.before, o.created_at FROM operations o JOIN sessions s ON s.id = o.session_id "
        "WHERE o.kind = 'DELETE' AND o.origin = 'user' AND o.status = 'applied' "
        "AND s.kind = 'curate' AND s.undone_by IS NULL ORDER BY o.id"
    ):
        for row in json.loads(before or "[]"):
            if isinstance(row, dict) and isinstance(row.get("text"), str):
                out.append((row["text"], str(at)))
    return out


def newest_run(db: Database, trajectory_ids: Sequence[int]) -> str | None:
    """When the newest of these runs was recorded (None: none of them is here)."""
    if not trajectory_ids:
        return None
    row = db.execute(
        "SELECT max(created_at) FROM trajectories WHERE id IN (SELECT value FROM json_each(?))",
        [json.dumps([int(i) for i in trajectory_ids])],
    ).fetchone()
    return None if row is None or row[0] is None else str(row[0])


# -- review ---------------------------------------------------------------------------


def review_lesson(db: Database, eid: int, decision: str, *, by: str) -> int:
    """A person's decision on a held lesson (``approved``: it may be served; ``rejected``:
    it is deleted), as one applied curation session with one operation (a MODIFY that
    keeps the text, or a DELETE; origin ``review``) whose before state holds the lesson
    as it was: :func:`undo_session` puts it back, held. Returns the session id."""
    if decision not in ("approved", "rejected"):
        raise ValueError(f"not a review decision: {decision!r}")
    with write(db):
        before = experiences.row(db, eid) if valid_id(eid) else None
        if before is None or before["status"] != "live":
            raise UnknownExperienceError(f"no live experience has id {eid}")
        if before.get("review") == "approved" and decision == "approved":
            raise AgentMemError(f"experience {eid} is approved already")
        if before.get("review") != "held" and _review_state(before["text"], None)["review"] is None:
            raise AgentMemError(
                f"experience {eid} is not held for review (it asks for no risky command)"
            )
        at = now_iso()
        sid = insert_session(
            db,
            "curate",
            status="applied",
            params={"review": decision, "by": by},
            pid=os.getpid(),
            finished=True,
            at=at,
        )
        experiences.set_review(db, eid, decision, by=by, at=at, session_id=sid)
        kind = "MODIFY" if decision == "approved" else "DELETE"
        if decision == "rejected":
            experiences.mark_deleted(db, eid, at=at, session_id=sid)
            _unindex(db, eid)
        now = experiences.row(db, eid) or {}
        op = Operation(
            kind,
            text=before["text"] if kind == "MODIFY" else None,
            targets=(eid,),
            domain=before["domain"],
            origin="review",
            note=f"{decision} by {by}",
        )
        after = {k: now.get(k) for k in ("id", "text", "domain", *REVIEW)}
        _journal(db, sid, op, status="applied", before=[before], after=after, at=at)
        finish_session(db, sid, {"review": decision, "experience": eid, "by": by})
        return sid
