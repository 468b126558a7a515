"""The owner of table ``served``: which lessons were served (or held out) to which run,
and what the run did about them.

Rows come from the served log beside the library (:mod:`agentmem.served`), read by
:func:`ingest` from the offset the last read stopped at (setting
``served_log_offset``). :func:`match` finds the run each prompt became: a run
imported from a client transcript by its session id (``meta.session_id``) and the
hash of its prompt (``meta.prompt`` when the importer kept it, else its task); a
run recorded through the API, by the hash of its task alone, recorded within
:data:`WINDOW_S` of the answer. Both must start no earlier than :data:`SLACK_S` before
the answer, and a run is matched to one answer only. :func:`judge` stores a learning
session's verdicts (:mod:`agentmem.learning.outcomes`), :func:`unjudge` takes an
undone session's back. Runs call (and a prompt's lessons are served) in any process;
every writer here runs inside the caller's write transaction.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from .._sqlite import dict_rows
from ..served import prompt_hash, read
from ..timestamps import now_iso, parse_time
from . import settings

__all__ = [
    "FIELDS",
    "GIVE_UP_S",
    "OFFSET",
    "SLACK_S",
    "WINDOW_S",
    "Verdict",
    "counts",
    "effect_rows",
    "ingest",
    "judge",
    "match",
    "pending",
    "problems",
    "restored_at",
    "to_judge",
    "unjudge",
    "unread",
]

#: The setting that holds how far the served log has been read (bytes).
OFFSET = "served_log_offset"
#: A run recorded through the API belongs to an answer recorded at most this long before it.
WINDOW_S = 3600.0
#: Clocks and transcript timestamps may differ by this much.
SLACK_S = 120.0
#: An answer still without a run after this long will not get one (``pending``'s ``no_run``).
GIVE_UP_S = 86400.0

#: (served row id, situation, followed, repeated, judged by ``rule`` or ``tools``); the
#: three None (and no judge) for a lesson that cannot be judged.
Verdict = tuple[int, bool | None, bool | None, bool | None, str | None]

_COLS = "at, route, client_session, project, prompt_hash, experience_id, held"


def ingest(db: Any, log: str) -> tuple[int, int]:
    """Read the served log from the stored offset into ``served`` (lessons no longer in
    the library are dropped): (rows added, lines skipped as not records)."""
    offset = settings.get(db, OFFSET, 0)
    lines, end, skipped = read(log, int(offset) if isinstance(offset, int) else 0)
    known = {int(r[0]) for r in db.execute("SELECT id FROM experiences").fetchall()}
    rows = [
        (ln["at"], ln["route"], ln["session"], ln["project"], ln["prompt"], eid, held)
        for ln in lines
        for held, ids in ((0, ln["served"]), (1, ln["held"]))
        for eid in ids
        if eid in known
    ]
    conn = getattr(db, "conn", db)  # a sqlite-utils Database or a sqlite3 connection
    conn.executemany(f"INSERT INTO served ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    if end != offset:
        settings.put(db, OFFSET, end)
    return len(rows), skipped


def _prompt_of(task: str, meta_json: str | None) -> str:
    try:
        meta = json.loads(meta_json or "{}")
    except ValueError:
        meta = {}
    p = meta.get("prompt") if isinstance(meta, dict) else None
    return p if isinstance(p, str) and p.strip() else task


def _start_of(created_at: str, meta_json: str | None) -> str:
    try:
        meta = json.loads(meta_json or "{}")
    except ValueError:
        meta = {}
    s = meta.get("started_at") if isinstance(meta, dict) else None
    return s if isinstance(s, str) and s else created_at


def _earlier(at: str, seconds: float) -> str:
    return (parse_time(at) - timedelta(seconds=seconds)).isoformat(timespec="microseconds")


def _later_or_same(a: str, b: str) -> bool:
    """Whether time ``a`` is at or after time ``b`` (any ISO-8601 forms)."""
    try:
        return parse_time(a) >= parse_time(b)
    except ValueError:
        return False


def _answers(db: Any) -> dict[tuple[Any, ...], list[int]]:
    """The unmatched answers: (at, route, session, prompt hash) -> their served row ids."""
    out: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for rid, at, route, session, phash in db.execute(
        "SELECT id, at, route, client_session, prompt_hash FROM served "
        "WHERE trajectory_id IS NULL AND judged_session IS NULL ORDER BY id"
    ).fetchall():
        out[(at, route, session, phash)].append(rid)
    return out


def _candidates(db: Any, session: str | None, at: str) -> list[tuple[int, str, str]]:
    """Runs an answer at ``at`` may have become: (id, start, prompt hash), oldest first."""
    if session is not None:
        rows = db.execute(
            "SELECT id, task, meta, created_at FROM trajectories "
            "WHERE json_extract(meta, '$.session_id') = ? ORDER BY id",
            [session],
        ).fetchall()
    else:
        hi = (parse_time(at) + timedelta(seconds=WINDOW_S)).isoformat(timespec="microseconds")
        rows = db.execute(
            "SELECT id, task, meta, created_at FROM trajectories "
            "WHERE created_at >= ? AND created_at <= ? ORDER BY id",
            [_earlier(at, SLACK_S), hi],
        ).fetchall()
    return [
        (int(tid), _start_of(created, meta), prompt_hash(_prompt_of(task, meta)))
        for tid, task, meta, created in rows
    ]


def match(db: Any) -> int:
    """Give each unmatched answer the run it became (see the module doc): rows matched."""
    answers = _answers(db)
    if not answers:
        return 0
    used = {
        int(r[0])
        for r in db.execute(
            "SELECT DISTINCT trajectory_id FROM served WHERE trajectory_id IS NOT NULL"
        ).fetchall()
    }
    matched = 0
    for (at, _route, session, phash), rids in answers.items():
        try:
            floor = _earlier(at, SLACK_S)
        except ValueError:
            continue
        for tid, start, h in _candidates(db, session, at):
            if h == phash and tid not in used and _later_or_same(start, floor):
                used.add(tid)
                marks = ",".join("?" * len(rids))
                db.execute(
                    f"UPDATE served SET trajectory_id = ? WHERE id IN ({marks})", [tid, *rids]
                )
                matched += len(rids)
                break
    return matched


def to_judge(db: Any) -> list[dict[str, Any]]:
    """Matched, unjudged rows: ``id``, ``experience_id``, ``trajectory_id``, ``held``,
    ``rule`` (the lesson's, JSON or None), ``text`` (the lesson's) and ``status`` (the
    lesson's: a lesson retired since it was served is judged too, for the record)."""
    return dict_rows(
        db.execute(
            "SELECT s.id, s.experience_id, s.trajectory_id, s.held, e.rule, e.text, e.status "
            "FROM served s JOIN experiences e ON e.id = s.experience_id "
            "WHERE s.trajectory_id IS NOT NULL AND s.judged_session IS NULL ORDER BY s.id"
        )
    )


def _b(v: bool | None) -> int | None:
    return None if v is None else int(v)


def judge(db: Any, session_id: int, verdicts: Iterable[Verdict]) -> int:
    """Store learning session ``session_id``'s verdicts: rows judged."""
    rows = [(session_id, _b(s), _b(f), _b(r), by, rid) for rid, s, f, r, by in verdicts]
    for row in rows:
        db.execute(
            "UPDATE served SET judged_session = ?, situation = ?, followed = ?, repeated = ?, "
            "judged_by = ? WHERE id = ? AND judged_session IS NULL",
            list(row),
        )
    return len(rows)


def unjudge(db: Any, session_id: int) -> None:
    """Take back the verdicts of an undone session (the runs are judged again later)."""
    db.execute(
        "UPDATE served SET judged_session = NULL, situation = NULL, followed = NULL, "
        "repeated = NULL, judged_by = NULL WHERE judged_session = ?",
        [session_id],
    )


_ARM = (
    "COUNT(*), COUNT(trajectory_id), COUNT(judged_session), "
    "COALESCE(SUM(situation), 0), COALESCE(SUM(followed), 0), COALESCE(SUM(repeated), 0)"
)
#: The figures of one arm (served or held out) of one lesson, as :func:`counts` gives them.
FIELDS = ("prompts", "runs", "judged", "situations", "followed", "repeated")


def counts(
    db: Any,
    ids: Sequence[int] | None = None,
    *,
    judged_by: str | None = None,
    since: str | None = None,
) -> dict[int, dict[str, dict[str, int]]]:
    """experience id -> {"served": figures, "held": figures} (:data:`FIELDS`), for the
    experiences ``ids`` (every one with a served row when None); with ``judged_by``, the
    verdicts of that kind only; with ``since``, the prompts answered after that time."""
    args: list[Any] = list(ids or ())
    conds = []
    if ids is not None:
        if not ids:
            return {}
        conds.append(f"experience_id IN ({','.join('?' * len(args))})")
    if judged_by is not None:
        conds.append("(judged_by IS NULL OR judged_by = ?)")
        args.append(judged_by)
    if since is not None:
        conds.append("at > ?")
        args.append(since)
    where = f"WHERE {' AND '.join(conds)} " if conds else ""
    out: dict[int, dict[str, dict[str, int]]] = {}
    for eid, held, *figs in db.execute(
        f"SELECT experience_id, held, {_ARM} FROM served {where}GROUP BY experience_id, held",
        args,
    ).fetchall():
        arms = out.setdefault(int(eid), {"served": _zero(), "held": _zero()})
        arms["held" if held else "served"] = dict(zip(FIELDS, (int(x) for x in figs)))
    return out


def restored_at(db: Any, ids: Sequence[int]) -> dict[int, str]:
    """experience id -> when the user last undid its retirement by use (an undone session's
    applied ``DELETE`` whose reason starts ``retired by use``), for those of ``ids`` that
    have one."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = db.execute(
        "SELECT CAST(j.value AS INTEGER), max(u.started_at) FROM operations o "
        "JOIN sessions s ON s.id = o.session_id JOIN sessions u ON u.id = s.undone_by "
        "JOIN json_each(o.target_ids) j "
        "WHERE o.kind = 'DELETE' AND o.status = 'applied' AND o.reason LIKE 'retired by use%' "
        f"AND CAST(j.value AS INTEGER) IN ({marks}) GROUP BY 1",
        list(ids),
    ).fetchall()
    return {int(eid): str(at) for eid, at in rows if at}


def _zero() -> dict[str, int]:
    return dict.fromkeys(FIELDS, 0)


def effect_rows(db: Any) -> list[dict[str, Any]]:
    """Judged rows where the run met the lesson's situation: ``experience_id``, ``held``,
    ``repeated``, ``judged_by``, ``text``, ``status`` (of the experience)."""
    return dict_rows(
        db.execute(
            "SELECT s.experience_id, s.held, s.repeated, s.judged_by, e.text, e.status "
            "FROM served s "
            "JOIN experiences e ON e.id = s.experience_id WHERE s.situation = 1 "
            "ORDER BY s.experience_id, s.id"
        )
    )


def pending(db: Any) -> dict[str, int]:
    """Rows not matched to a run yet (``unmatched``; answered within the last
    :data:`GIVE_UP_S`), rows that never will be (``no_run``: older; a prompt whose run was
    never recorded, such as a client's notification), and matched rows not judged yet."""
    cutoff = _earlier(now_iso(), GIVE_UP_S)
    a, b, c = db.execute(
        "SELECT COALESCE(SUM(trajectory_id IS NULL AND judged_session IS NULL AND at >= ?), 0), "
        "COALESCE(SUM(trajectory_id IS NULL AND judged_session IS NULL AND at < ?), 0), "
        "COALESCE(SUM(trajectory_id IS NOT NULL AND judged_session IS NULL), 0) FROM served",
        [cutoff, cutoff],
    ).fetchone()
    return {"unmatched": int(a), "no_run": int(b), "unjudged": int(c)}


def unread(db: Any, log: str) -> int:
    """Bytes of the served log no learning session has read yet."""
    try:
        size = os.path.getsize(log)
    except OSError:
        return 0
    offset = settings.get(db, OFFSET, 0)
    offset = offset if isinstance(offset, int) and offset <= size else 0
    return size - offset


def problems(db: Any) -> list[str]:
    """What breaks the table's invariants (``agentmem check``), one message each."""
    out: list[str] = []
    checks: Mapping[str, str] = {
        "judged by no learning session": "judged_session IS NOT NULL AND judged_session NOT IN "
        "(SELECT id FROM sessions WHERE kind = 'learn')",
        "with a verdict but judged by no session": "judged_session IS NULL AND (situation "
        "IS NOT NULL OR followed IS NOT NULL OR repeated IS NOT NULL)",
        "whose verdict is incomplete": "(situation IS NULL) != (followed IS NULL) OR "
        "(situation IS NULL) != (repeated IS NULL) OR (situation IS NULL) != (judged_by IS NULL)",
        "followed or repeated outside the lesson's situation": "situation = 0 AND "
        "(followed = 1 OR repeated = 1)",
        "both followed and repeated": "followed = 1 AND repeated = 1",
    }
    for what, cond in checks.items():
        bad = [int(r[0]) for r in db.execute(f"SELECT id FROM served WHERE {cond} LIMIT 6")]
        if bad:
            out.append(f"served row(s) {', '.join(map(str, bad[:5]))} {what}")
    return out
