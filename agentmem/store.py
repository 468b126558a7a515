"""Trajectory storage: inserting and reading trajectories, steps and feedback, and group reports.

Functions here take a ``sqlite_utils.Database`` and do no transaction handling
of their own for writes: callers wrap them in :func:`agentmem.db.write`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import attrs
from sqlite_utils import Database

from .domains import step_domain
from .errors import UnknownTrajectoryError
from .records import Feedback, Step, Trajectory, valid_id
from .rewards import (
    DEFAULT_WEIGHTS,
    Acceptance,
    GroupReport,
    RewardWeights,
    acceptance,
    score_groups,
)
from .timestamps import now_iso, parse_time

__all__ = [
    "group_reports",
    "insert_feedback",
    "insert_trajectories",
    "load_trajectories",
    "run_tools",
    "tool_domains",
    "verdict_runs",
]


#: ``json.dumps(value, ensure_ascii=False)``, without building an encoder per call.
_to_json = json.JSONEncoder(ensure_ascii=False).encode


def tool_domains(db: Database) -> dict[str, str]:
    """The library's own tool-to-domain mapping (overrides of the built-in one)."""
    return {r[0]: r[1] for r in db.execute("SELECT tool, domain FROM tool_domains")}


def insert_trajectories(
    db: Database,
    trajectories: Sequence[Trajectory],
    *,
    overrides: Mapping[str, str] | None = None,
    created_at: str | None = None,
) -> list[int]:
    """Insert trajectories with their steps (and an accept/reject event when known).

    Runs inside the caller's transaction. Returns the new ids in order. Every way of
    recording ends here, so this is where outputs over the library's output cap are
    cut to their head and tail (:mod:`agentmem.outputs`); callers redact first.
    """
    from .outputs import cap_trajectories, library_cap

    trajectories = cap_trajectories(trajectories, library_cap(db))
    if overrides is None:
        overrides = tool_domains(db)
    at = created_at or now_iso()
    conn = db.conn
    sql = (
        "INSERT INTO trajectories (id, task, group_key, source, condition, step_count, "
        "success_rate, state_ok, essential_actions, meta, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    # Inside a transaction that holds the write lock the ids are max(id) + 1, ... (what
    # SQLite would choose), so all rows go in with one executemany. Outside one, another
    # process could take an id meanwhile: insert one by one and let SQLite choose. Ids of
    # pruned trajectories (agentmem.retention) are never given again: sessions name them.
    batch = conn.in_transaction
    top, pruned_top = db.execute(
        "SELECT (SELECT coalesce(max(id), 0) FROM trajectories), "
        "(SELECT coalesce(max(id), 0) FROM pruned_trajectories)"
    ).fetchone()
    next_id = max(top, pruned_top) + 1
    above_pruned = pruned_top > top  # the first id must be given, not chosen by SQLite
    ids: list[int] = []
    rows: list[tuple[Any, ...]] = []
    step_rows: list[tuple[Any, ...]] = []
    feedback_rows: list[tuple[Any, ...]] = []
    for t in trajectories:
        row = (
            next_id if batch or above_pruned else None,
            t.task,
            t.group,
            t.source,
            t.condition,
            len(t.steps),
            t.success_rate,
            None if t.state_ok is None else int(t.state_ok),
            None if t.essential_actions is None else json.dumps(list(t.essential_actions)),
            _to_json(t.meta),
            at,
        )
        if batch:
            tid = next_id
            next_id += 1
            rows.append(row)
        else:
            tid = int(conn.execute(sql, row).lastrowid or 0)
            above_pruned = False
        ids.append(tid)
        for i, s in enumerate(t.steps):
            step_rows.append(
                (
                    tid,
                    i,
                    s.tool,
                    s.domain or step_domain(s.tool, s.params, overrides),
                    _to_json(s.params),
                    s.output,
                    int(s.success),
                )
            )
        if t.accepted is not None:
            feedback_rows.append((tid, "accept" if t.accepted else "reject", None, at))
    conn.executemany(sql, rows)
    conn.executemany(
        "INSERT INTO steps (trajectory_id, position, tool, domain, params, output, success) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        step_rows,
    )
    if feedback_rows:
        conn.executemany(
            "INSERT INTO feedback (trajectory_id, kind, note, created_at) VALUES (?, ?, ?, ?)",
            feedback_rows,
        )
    return ids


def insert_feedback(db: Database, fb: Feedback) -> None:
    """Record a feedback event; raises :class:`UnknownTrajectoryError` for a bad id."""
    if not valid_id(fb.trajectory_id):
        raise UnknownTrajectoryError(f"no trajectory has id {fb.trajectory_id}")
    row = db.execute("SELECT 1 FROM trajectories WHERE id = ?", [fb.trajectory_id]).fetchone()
    if row is None:
        raise UnknownTrajectoryError(_missing(db, [fb.trajectory_id]))
    db.execute(
        "INSERT INTO feedback (trajectory_id, kind, note, created_at) VALUES (?, ?, ?, ?)",
        [fb.trajectory_id, fb.kind, fb.note, fb.created_at or now_iso()],
    )


def _missing(db: Database, ids: list[int]) -> str:
    """Why these ids name no trajectory: pruned (agentmem.retention), or never were."""
    from .retention import pruned_message

    return pruned_message(db, ids) or f"no trajectory has id {', '.join(map(str, ids))}"


def _rows(db: Database, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    cur = db.execute(sql, list(params))
    cols = [c[0] for c in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def load_trajectories(
    db: Database, ids: Iterable[int] | None = None, *, groups: Iterable[str] | None = None
) -> list[Trajectory]:
    """Trajectories with their steps, by id or by group key (all when neither is given)."""
    if ids is not None:
        id_list = list(ids)
        bad = [i for i in id_list if not valid_id(i)]
        if bad:
            raise UnknownTrajectoryError(f"no trajectory has id {bad[0]}")
        rows = _rows(
            db,
            f"SELECT * FROM trajectories WHERE id IN ({','.join('?' * len(id_list))}) ORDER BY id",
            id_list,
        )
        missing = set(id_list) - {r["id"] for r in rows}
        if missing:
            raise UnknownTrajectoryError(_missing(db, sorted(missing)))
    elif groups is not None:
        g = list(groups)
        rows = _rows(
            db,
            f"SELECT * FROM trajectories WHERE group_key IN ({','.join('?' * len(g))}) ORDER BY id",
            g,
        )
    else:
        rows = _rows(db, "SELECT * FROM trajectories ORDER BY id")
    if not rows:
        return []
    steps: dict[int, list[Step]] = defaultdict(list)
    tids = [r["id"] for r in rows]
    for chunk_start in range(0, len(tids), 500):
        chunk = tids[chunk_start : chunk_start + 500]
        for s in _rows(
            db,
            f"SELECT * FROM steps WHERE trajectory_id IN ({','.join('?' * len(chunk))}) "
            "ORDER BY trajectory_id, position",
            chunk,
        ):
            steps[s["trajectory_id"]].append(Step.from_row(s))
    verdicts = _acceptance_map(db, tids, datetime.now(timezone.utc))
    out = []
    for r in rows:
        t = Trajectory.from_row(r, steps[r["id"]])
        out.append(attrs.evolve(t, accepted=_as_bool(verdicts[r["id"]])))
    return out


def run_tools(db: Database, ids: Iterable[int]) -> dict[int, set[tuple[str, str]]]:
    """The (tool, domain) pairs each trajectory called, for the trajectories ``ids``: calls
    that returned nothing (a scratchpad such as ``think``) and succeeded left out."""
    out: dict[int, set[tuple[str, str]]] = {i: set() for i in ids}
    tids = list(out)
    for start in range(0, len(tids), 500):
        chunk = tids[start : start + 500]
        for tid, tool, domain in db.execute(
            "SELECT DISTINCT trajectory_id, tool, domain FROM steps "
            f"WHERE trajectory_id IN ({','.join('?' * len(chunk))}) "
            "AND (success = 0 OR length(trim(output)) > 0)",
            chunk,
        ):
            out[tid].add((tool, domain))
    return out


def _as_bool(a: Acceptance) -> bool | None:
    return None if a.value is None else bool(a.value)


def _acceptance_map(db: Database, tids: Sequence[int], now: datetime) -> dict[int, Acceptance]:
    events: dict[int, list[tuple[str, datetime]]] = defaultdict(list)
    created: dict[int, datetime] = {}
    for chunk_start in range(0, len(tids), 500):
        chunk = list(tids[chunk_start : chunk_start + 500])
        marks = ",".join("?" * len(chunk))
        for tid, kind, at in db.execute(
            "SELECT trajectory_id, kind, created_at FROM feedback "
            f"WHERE trajectory_id IN ({marks})",
            chunk,
        ):
            events[tid].append((kind, parse_time(at)))
        for tid, at in db.execute(
            f"SELECT id, created_at FROM trajectories WHERE id IN ({marks})", chunk
        ):
            created[tid] = parse_time(at)
    return {tid: acceptance(events[tid], created[tid], now) for tid in tids}


def group_reports(
    db: Database,
    *,
    weights: RewardWeights = DEFAULT_WEIGHTS,
    reward: str = "composite",
    groups: Iterable[str] | None = None,
    now: datetime | None = None,
) -> list[GroupReport]:
    """Every group (or the named ones) with rewards, advantages, readiness and degeneracy:
    the rows read here, scored by :func:`agentmem.rewards.score_groups`."""
    now = now or datetime.now(timezone.utc)
    where, params = "", []
    if groups is not None:
        g = list(groups)
        where = f"WHERE group_key IN ({','.join('?' * len(g))})"
        params = g
    rows = _rows(
        db,
        "SELECT t.id, t.task, t.group_key, t.condition, t.step_count, t.success_rate, "
        "t.state_ok, t.essential_actions, "
        "(SELECT count(*) FROM steps s WHERE s.trajectory_id = t.id AND s.success = 0) AS failed "
        f"FROM trajectories t {where} ORDER BY t.group_key, t.id",
        params,
    )
    verdicts = _acceptance_map(db, [r["id"] for r in rows], now)
    steps_by_id: dict[int, list[Step]] = {}
    if reward == "binary" and rows:
        for t in load_trajectories(db, [r["id"] for r in rows]):
            steps_by_id[t.id or 0] = list(t.steps)
    return score_groups(rows, verdicts, steps_by_id, weights=weights, reward=reward)


def verdict_runs(db: Database) -> list[tuple[str, bool | None, Trajectory]]:
    """Every run as ``(group key, verdict, trajectory)``: the verdict is True for an
    accepted run, False for a rejected one, None while it waits (the corpus that
    :mod:`agentmem.learning.generality` reads values from)."""
    trajs = load_trajectories(db)
    verdicts = _acceptance_map(db, [t.id or 0 for t in trajs], datetime.now(timezone.utc))
    return [(t.group, _as_bool(verdicts[t.id or 0]), t) for t in trajs]
