"""The owner of tables ``trajectories``, ``steps`` and ``feedback``: recording runs and
reading them back.

Functions here take a ``sqlite_utils.Database`` (or, for the team primary, a
:class:`~agentmem.team.replica.RemoteDb`) and do no transaction handling of their
own for writes: callers wrap them in :func:`agentmem.db.write`. Policy stays out:
a run's acceptance is :func:`agentmem.rewards.acceptance` of its feedback rows, a
group's rewards :func:`agentmem.rewards.score_groups` of the rows read here.
"""

from __future__ import annotations

import contextlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import attrs
from sqlite_utils import Database

from .._sqlite import dict_rows
from ..domains import step_domain
from ..errors import UnknownTrajectoryError
from ..outputs import DEFAULT_OUTPUT_CAP, cap_trajectories
from ..projects import recorded_machine
from ..records import Feedback, Step, Trajectory, valid_id
from ..redact import DEFAULT_REDACTOR, Redactor
from ..redact.runs import Redacted, redact_run
from ..rewards import (
    DEFAULT_WEIGHTS,
    Acceptance,
    GroupReport,
    RewardWeights,
    acceptance,
    score_groups,
)
from ..timestamps import now_iso, parse_time
from . import pruned, settings, tool_domains

__all__ = [
    "SHARED_COLUMNS",
    "STEP_COLUMNS",
    "count",
    "counts",
    "delete_pruned",
    "failed_calls_saying",
    "group_reports",
    "insert_feedback",
    "insert_shared",
    "insert_trajectories",
    "load_trajectories",
    "meta_values",
    "of_session",
    "output_cap",
    "projects_and_vocabulary",
    "regroup",
    "require",
    "run_tools",
    "set_group",
    "set_state",
    "set_uuid",
    "shared_rows",
    "uuid_of",
    "verdict_runs",
]


#: ``json.dumps(value, ensure_ascii=False)``, without building an encoder per call.
_to_json = json.JSONEncoder(ensure_ascii=False).encode

_INSERT = (
    "INSERT INTO trajectories (id, task, group_key, source, condition, step_count, "
    "success_rate, state_ok, essential_actions, meta, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def output_cap(db: Any) -> int:
    """The library's output cap: its ``output_cap`` setting, else
    :data:`agentmem.outputs.DEFAULT_OUTPUT_CAP`."""
    return int(settings.get(db, settings.OUTPUT_CAP, DEFAULT_OUTPUT_CAP))


def insert_trajectories(
    db: Database,
    runs: Sequence[Redacted | Trajectory],
    *,
    overrides: Mapping[str, str] | None = None,
    created_at: str | None = None,
) -> list[int]:
    """Insert trajectories with their steps (and an accept/reject event when known).

    Runs inside the caller's transaction. Returns the new ids in order. Every way of
    recording ends here, so this is where a run that is not :class:`Redacted` yet is
    redacted with the built-in rules (:func:`agentmem.redact.runs.redact_run`; callers
    redact first, with the library's own redactor, outside the write lock), where
    outputs over the library's output cap are cut to their head and tail
    (:mod:`agentmem.outputs`), and where a run's ``meta.machine`` is set
    (:func:`agentmem.projects.recorded_machine`).
    """
    cap = output_cap(db)
    trajectories = cap_trajectories([_redacted(r, cap) for r in runs], cap)
    if overrides is None:
        overrides = tool_domains.read(db)
    at = created_at or now_iso()
    conn = db.conn
    # Inside a transaction that holds the write lock the ids are max(id) + 1, ... (what
    # SQLite would choose), so all rows go in with one executemany. Outside one, another
    # process could take an id meanwhile: insert one by one and let SQLite choose. Ids of
    # pruned trajectories (agentmem.storage.retention) are never given again: sessions
    # name them.
    batch = conn.in_transaction
    top = int(db.execute("SELECT coalesce(max(id), 0) FROM trajectories").fetchone()[0])
    pruned_top = pruned.top_id(db)
    next_id = max(top, pruned_top) + 1
    above_pruned = pruned_top > top  # the first id must be given, not chosen by SQLite
    ids: list[int] = []
    rows: list[tuple[Any, ...]] = []
    step_rows: list[tuple[Any, ...]] = []
    feedback_rows: list[tuple[Any, ...]] = []
    for t in trajectories:
        row = _trajectory_row(t, next_id if batch or above_pruned else None, at)
        if batch:
            tid = next_id
            next_id += 1
            rows.append(row)
        else:
            tid = int(conn.execute(_INSERT, row).lastrowid or 0)
            above_pruned = False
        ids.append(tid)
        step_rows += _step_rows(tid, t.steps, overrides)
        if t.accepted is not None:
            feedback_rows.append((tid, "accept" if t.accepted else "reject", None, at))
    _write_rows(db, rows, step_rows, feedback_rows)
    return ids


def _redacted(run: Redacted | Trajectory, cap: int) -> Trajectory:
    """The trajectory of a :class:`Redacted` run; any other redacted with the built-in rules."""
    if isinstance(run, Redacted):
        return run.trajectory
    return redact_run(run, DEFAULT_REDACTOR, cap).trajectory


def _with_machine(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    """``meta`` with the machine the run is recorded from, when known (see
    :func:`agentmem.projects.recorded_machine`)."""
    if "machine" in meta:
        return meta
    machine = recorded_machine(meta)
    return meta if machine is None else {**meta, "machine": machine}


def _trajectory_row(t: Trajectory, tid: int | None, at: str) -> tuple[Any, ...]:
    return (
        tid,
        t.task,
        t.group,
        t.source,
        t.condition,
        len(t.steps),
        t.success_rate,
        None if t.state_ok is None else int(t.state_ok),
        None if t.essential_actions is None else json.dumps(list(t.essential_actions)),
        _to_json(_with_machine(t.meta)),
        at,
    )


def _step_rows(
    tid: int, steps: Sequence[Step], overrides: Mapping[str, str]
) -> list[tuple[Any, ...]]:
    return [
        (
            tid,
            i,
            s.tool,
            s.domain or step_domain(s.tool, s.params, overrides),
            _to_json(s.params),
            s.output,
            int(s.success),
        )
        for i, s in enumerate(steps)
    ]


def _write_rows(
    db: Database,
    rows: list[tuple[Any, ...]],
    step_rows: list[tuple[Any, ...]],
    feedback_rows: list[tuple[Any, ...]],
) -> None:
    conn = db.conn
    conn.executemany(_INSERT, rows)
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


def insert_feedback(db: Database, fb: Feedback, redactor: Redactor = DEFAULT_REDACTOR) -> None:
    """Record a feedback event, its note redacted by ``redactor``; raises
    :class:`UnknownTrajectoryError` for a bad id."""
    if not valid_id(fb.trajectory_id):
        raise UnknownTrajectoryError(f"no trajectory has id {fb.trajectory_id}")
    row = db.execute("SELECT 1 FROM trajectories WHERE id = ?", [fb.trajectory_id]).fetchone()
    if row is None:
        raise UnknownTrajectoryError(_missing(db, [fb.trajectory_id]))
    db.execute(
        "INSERT INTO feedback (trajectory_id, kind, note, created_at) VALUES (?, ?, ?, ?)",
        [
            fb.trajectory_id,
            fb.kind,
            None if fb.note is None else redactor.text(fb.note),
            fb.created_at or now_iso(),
        ],
    )


def _missing(db: Database, ids: list[int]) -> str:
    """Why these ids name no trajectory: pruned (agentmem.storage.retention), or never were."""
    return pruned.message(db, ids) or f"no trajectory has id {', '.join(map(str, ids))}"


def _rows(db: Database, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    return dict_rows(db.execute(sql, list(params)))


def require(db: Database, trajectory_id: int) -> None:
    """Raise :class:`UnknownTrajectoryError` unless ``trajectory_id`` is a recorded run
    (saying so when it was pruned)."""
    if not valid_id(trajectory_id):
        raise UnknownTrajectoryError(f"no trajectory has id {trajectory_id}")
    if db.execute("SELECT 1 FROM trajectories WHERE id = ?", [trajectory_id]).fetchone() is None:
        raise UnknownTrajectoryError(_missing(db, [trajectory_id]))


def set_state(db: Database, trajectory_id: int, ok: bool) -> None:
    """Record a run's state-consistency verdict R_state (the run must exist)."""
    require(db, trajectory_id)
    db.execute("UPDATE trajectories SET state_ok = ? WHERE id = ?", [int(ok), trajectory_id])


def of_session(db: Database, session_id: str, cwd: str | None = None) -> list[int]:
    """The runs imported from a client's session ``session_id`` (``meta.session_id``),
    oldest first; with ``cwd``, only those that ran there (``meta.cwd``)."""
    sql = "SELECT id FROM trajectories WHERE json_extract(meta, '$.session_id') = ?"
    params: list[Any] = [session_id]
    if cwd is not None:
        sql += " AND json_extract(meta, '$.cwd') = ?"
        params.append(cwd)
    return [int(r[0]) for r in db.execute(sql + " ORDER BY id", params)]


def regroup(
    db: Database,
    trajectory_id: int,
    *,
    task: str,
    group: str,
    condition: str | None,
    meta: Mapping[str, Any],
) -> None:
    """Put a recorded run in ``group`` (a practice's group key) with ``task`` (the task's
    prompt, without the guidance the run was given), its reward token ``condition``, and
    ``meta`` merged into its own (the run must exist)."""
    require(db, trajectory_id)
    (old,) = db.execute("SELECT meta FROM trajectories WHERE id = ?", [trajectory_id]).fetchone()
    try:
        merged = json.loads(old or "{}")
    except ValueError:
        merged = {}
    if not isinstance(merged, dict):
        merged = {}
    merged.update(meta)
    db.execute(
        "UPDATE trajectories SET task = ?, group_key = ?, condition = ?, meta = ? WHERE id = ?",
        [task, group, condition, json.dumps(merged, ensure_ascii=False), trajectory_id],
    )


def set_group(db: Database, ids: Sequence[int], group: str) -> None:
    """Move the runs ``ids`` to the group ``group`` (nothing else of them changes)."""
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        db.execute(
            f"UPDATE trajectories SET group_key = ? WHERE id IN ({','.join('?' * len(chunk))})",
            [group, *chunk],
        )


def count(db: Any) -> int:
    """How many trajectories the library holds."""
    return int(db.execute("SELECT count(*) FROM trajectories").fetchone()[0])


def failed_calls_saying(
    db: Any, tool: str, words: str, without: Sequence[str] = (), within: Sequence[str] = ()
) -> int:
    """How many failed calls of ``tool`` in the library's runs say ``words`` in their
    output (a slip of a tool's own rule, counted across sessions); ``without``: leave out
    a call that passed one of these parameters (the rule's way out, which did not lift
    that failure); ``within``: count only a call that passed one of these (a Read that
    passed ``limit``, for the way out after "pass offset and limit")."""
    sql = "SELECT count(*) FROM steps WHERE tool = ? AND success = 0 AND instr(output, ?) > 0"
    args: list[Any] = [tool, words]
    for names, negate in ((without, "NOT "), (within, "")):
        if names:
            marks = ", ".join("?" * len(names))
            sql += (
                f" AND {negate}(json_valid(params) AND EXISTS "
                f"(SELECT 1 FROM json_each(steps.params) WHERE key IN ({marks})))"
            )
            args += list(names)
    row = db.execute(sql, args).fetchone()
    return int(row[0]) if row else 0


def counts(db: Database) -> dict[str, int]:
    """How many trajectories, steps, failed steps and feedback events the library holds."""
    q = db.execute
    return {
        "trajectories": q("SELECT count(*) FROM trajectories").fetchone()[0],
        "steps": q("SELECT count(*) FROM steps").fetchone()[0],
        "failed_steps": q("SELECT count(*) FROM steps WHERE success = 0").fetchone()[0],
        "feedback_events": q("SELECT count(*) FROM feedback").fetchone()[0],
    }


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


def meta_values(db: Any, ids: Iterable[int], key: str) -> dict[int, Any]:
    """``meta[key]`` of each trajectory of ``ids`` that has it (a plain name: ``prompt_kind``,
    ``session_id``, ``machine``)."""
    if not key.isidentifier():
        raise ValueError(f"not a meta key: {key!r}")
    out: dict[int, Any] = {}
    tids = list(ids)
    for start in range(0, len(tids), 500):
        chunk = tids[start : start + 500]
        for tid, value in db.execute(
            f"SELECT id, json_extract(meta, '$.{key}') FROM trajectories "
            f"WHERE id IN ({','.join('?' * len(chunk))}) "
            f"AND json_extract(meta, '$.{key}') IS NOT NULL",
            chunk,
        ):
            out[int(tid)] = value
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
        for tid, at, ended in db.execute(
            "SELECT id, created_at, json_extract(meta, '$.ended_at') FROM trajectories "
            f"WHERE id IN ({marks})",
            chunk,
        ):
            # the window runs from the run's end: an imported turn's own end time (from its
            # transcript) when it is earlier than the import, so history is not held 120 s
            created[tid] = parse_time(at)
            if isinstance(ended, str):
                with contextlib.suppress(ValueError):
                    created[tid] = min(created[tid], parse_time(ended))
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


def projects_and_vocabulary(db: Any, tids: Sequence[int]) -> tuple[set[str], set[str]]:
    """The projects of trajectories (``meta.project``; ``""`` for none) and the tools and
    parameter names their steps used."""
    projects: set[str] = set()
    vocabulary: set[str] = set()
    for start in range(0, len(tids), 500):
        chunk = list(tids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        for (project,) in db.execute(
            f"SELECT json_extract(meta, '$.project') FROM trajectories WHERE id IN ({marks})",
            chunk,
        ).fetchall():
            projects.add(project if isinstance(project, str) else "")
        for tool, params in db.execute(
            f"SELECT DISTINCT tool, params FROM steps WHERE trajectory_id IN ({marks})", chunk
        ).fetchall():
            vocabulary.add(str(tool))
            try:
                p = json.loads(params)
            except ValueError:
                continue
            if isinstance(p, dict):
                vocabulary.update(str(k) for k in p)
    return projects, vocabulary


# -- pruning (agentmem.storage.retention) ------------------------------------------------


def delete_pruned(db: Database, table: str, at: str) -> None:
    """Delete from ``table`` (``feedback``, ``steps`` or ``trajectories``) the rows of the
    runs a prune (``at``) marked pruned."""
    if table not in ("feedback", "steps", "trajectories"):
        raise ValueError(f"not a table of runs: {table!r}")
    key = "id" if table == "trajectories" else "trajectory_id"
    db.execute(
        f"DELETE FROM {table} WHERE {key} IN "
        "(SELECT id FROM pruned_trajectories WHERE pruned_at = ?)",
        [at],
    )


# -- sharing with a team (agentmem.team.outbox) --------------------------------------------

#: The columns of a trajectory that travel to the team (``id`` is the primary's own).
SHARED_COLUMNS = (
    "task",
    "group_key",
    "source",
    "condition",
    "step_count",
    "success_rate",
    "state_ok",
    "essential_actions",
    "meta",
    "created_at",
)
#: The columns of a step that travel to the team.
STEP_COLUMNS = ("position", "tool", "domain", "params", "output", "success")


def shared_rows(
    db: Database, trajectory_id: int
) -> tuple[dict[str, Any], list[dict[str, Any]], list[tuple[str, str | None, str]]]:
    """A run as it travels to the team: its :data:`SHARED_COLUMNS`, its steps'
    :data:`STEP_COLUMNS` in order, and its feedback events (kind, note, time) in order."""
    cur = db.execute(
        f"SELECT {', '.join(SHARED_COLUMNS)} FROM trajectories WHERE id = ?", [trajectory_id]
    )
    row = dict(zip(SHARED_COLUMNS, cur.fetchone()))
    steps = [
        dict(zip(STEP_COLUMNS, r))
        for r in db.execute(
            f"SELECT {', '.join(STEP_COLUMNS)} FROM steps WHERE trajectory_id = ? "
            "ORDER BY position",
            [trajectory_id],
        )
    ]
    feedback = [
        (str(k), n, str(c))
        for k, n, c in db.execute(
            "SELECT kind, note, created_at FROM feedback WHERE trajectory_id = ? ORDER BY id",
            [trajectory_id],
        )
    ]
    return row, steps, feedback


def set_uuid(db: Database, trajectory_id: int, key: str) -> None:
    """Give a run the uuid it is known by in the team library."""
    db.execute("UPDATE trajectories SET uuid = ? WHERE id = ?", [key, trajectory_id])


def uuid_of(db: Database, trajectory_id: int) -> str | None:
    """A shared run's uuid (None for a run that is not shared, or not there)."""
    row = db.execute("SELECT uuid FROM trajectories WHERE id = ?", [trajectory_id]).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def _insert_rows(remote: Any, sql: str, rows: list[tuple[Any, ...]], chunk: int = 100) -> None:
    """``sql`` with ``VALUES {}`` filled by many rows at once (at most 999 parameters)."""
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        marks = ", ".join("(" + ", ".join("?" * len(r)) + ")" for r in part)
        remote.execute(sql.format(marks), [v for r in part for v in r])


def insert_shared(remote: Any, key: str, kind: str, payload: Mapping[str, Any]) -> int:
    """Insert one shared item on the team's primary (inside its transaction): a run with
    its steps and feedback (``kind`` ``trajectory``) or a verdict on a shared run
    (``feedback``). 1 if new, 0 if the primary has it already (keyed by uuid)."""
    if kind == "trajectory":
        t = payload["trajectory"]
        cols = ", ".join(("uuid", *SHARED_COLUMNS))
        cur = remote.execute(
            f"INSERT INTO trajectories ({cols}) VALUES ({', '.join('?' * (1 + len(t)))}) "
            "ON CONFLICT (uuid) DO NOTHING",
            [key, *(t[c] for c in SHARED_COLUMNS)],
        )
        if cur.rowcount != 1:
            return 0
        tid = cur.lastrowid
        # One statement per table (each statement is a round trip to the primary).
        _insert_rows(
            remote,
            "INSERT INTO steps (trajectory_id, position, tool, domain, params, output, success) "
            "VALUES {}",
            [(tid, *(s[c] for c in STEP_COLUMNS)) for s in payload["steps"]],
        )
        _insert_rows(
            remote,
            "INSERT INTO feedback (uuid, trajectory_id, kind, note, created_at) "
            "VALUES {} ON CONFLICT (uuid) DO NOTHING",
            [(f["uuid"], tid, f["kind"], f["note"], f["created_at"]) for f in payload["feedback"]],
        )
        return 1
    cur = remote.execute(
        "INSERT INTO feedback (uuid, trajectory_id, kind, note, created_at) "
        "SELECT ?, id, ?, ?, ? FROM trajectories WHERE uuid = ? "
        "ON CONFLICT (uuid) DO NOTHING",
        [key, payload["kind"], payload["note"], payload["created_at"], payload["trajectory_uuid"]],
    )
    return int(cur.rowcount == 1)
