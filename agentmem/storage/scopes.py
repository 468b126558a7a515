"""The owner of table ``experience_scopes``: which project or machine each lesson is served in.

The rule is :mod:`agentmem.projects`' (pure); this module stores its answers, one
row per experience and learning session, and reads the current one (the latest
applied session's). Standard library only: the fast ``context`` path reads
:func:`hidden_ids`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..projects import SCOPE_KINDS, Scope, machine_id, scope_for

__all__ = [
    "current_scopes",
    "decide",
    "hidden_ids",
    "promotion_notes",
    "record_scopes",
    "scope_labels",
    "scopes_of",
    "standing_fact_ids",
    "tool_rule_ids",
]


_CURRENT = (
    "SELECT s.experience_id, s.project, s.support, {extra} FROM experience_scopes s "
    "JOIN sessions z ON z.id = s.session_id AND z.status = 'applied' "
    "WHERE s.session_id = (SELECT max(s2.session_id) FROM experience_scopes s2 "
    "JOIN sessions z2 ON z2.id = s2.session_id AND z2.status = 'applied' "
    "WHERE s2.experience_id = s.experience_id)"
)


def _columns(db: Any) -> set[str]:
    """The columns of ``experience_scopes`` (empty: the file has no such table)."""
    return {
        str(r[0]) for r in db.execute("SELECT name FROM pragma_table_info('experience_scopes')")
    }


def _current(db: Any, cols: set[str]) -> str:
    """The current row of every scoped experience (``kind`` and ``machine`` NULL in a file
    from before m011)."""
    extra = "s.kind, s.machine, s.reason" if "kind" in cols else "NULL, NULL, s.reason"
    return _CURRENT.format(extra=extra)


def scopes_of(db: Any) -> dict[int, Scope]:
    """Live experiences served in one project or on one machine only: id -> its scope.
    (The rest are global.)"""
    cols = _columns(db)
    if not cols:
        return {}
    return {
        int(eid): Scope(kind, project, machine, reason)
        for eid, project, kind, machine, reason in db.execute(
            # CROSS JOIN: the scopes drive, each experience found by its key (a plain JOIN
            # let SQLite walk every live experience: 0.26 ms at 10,000, on every retrieval)
            f"SELECT c.experience_id, c.project, c.kind, c.machine, c.reason "
            f"FROM ({_current(db, cols)}) c "
            "CROSS JOIN experiences e ON e.id = c.experience_id AND e.status = 'live' "
            "WHERE c.project IS NOT NULL OR c.machine IS NOT NULL"
        ).fetchall()
    }


def tool_rule_ids(db: Any, project: str, limit: int) -> list[int]:
    """Up to ``limit`` live lessons that are a tool's own rule (kind ``tool``: "If Edit
    fails with 'File has not been read yet', Read the file first") served in ``project``
    (global, or that project's and no machine's), those shown by more projects first."""
    cols = _columns(db)
    if "kind" not in cols or limit < 1:
        return []
    rows = db.execute(
        f"SELECT c.experience_id FROM ({_current(db, cols)}) c "
        "CROSS JOIN experiences e ON e.id = c.experience_id AND e.status = 'live' "
        "WHERE c.kind = 'tool' AND c.machine IS NULL "
        "AND (c.project IS NULL OR c.project = ?) "
        "ORDER BY json_array_length(c.support) DESC, c.experience_id LIMIT ?",
        (project, limit),
    ).fetchall()
    return [int(r[0]) for r in rows]


def standing_fact_ids(db: Any, project: str, limit: int, machine: str | None = None) -> list[int]:
    """Up to ``limit`` live facts whose rule says they are standing (``experiences.rule``'s
    ``standing``: a step of most tasks, the version control, the interpreter) served in
    ``project``: that project's (kind ``project``, no machine's) and this machine's (kind
    ``machine``; ``machine``: its id, default :func:`agentmem.projects.machine_id`, hashed
    only when such a fact exists), the newest first."""
    cols = _columns(db)
    if "kind" not in cols or limit < 1:
        return []
    rows = db.execute(
        f"SELECT c.experience_id, c.kind, c.machine FROM ({_current(db, cols)}) c "
        "CROSS JOIN experiences e ON e.id = c.experience_id AND e.status = 'live' "
        "WHERE ((c.kind = 'project' AND c.machine IS NULL AND c.project = ?) "
        "OR (c.kind = 'machine' AND c.machine IS NOT NULL)) "
        "AND json_valid(e.rule) AND json_extract(e.rule, '$.standing') = 1 "
        "ORDER BY c.experience_id DESC",
        (project,),
    ).fetchall()
    here = machine or (machine_id() if any(r[1] == "machine" for r in rows) else None)
    return [int(r[0]) for r in rows if r[1] == "project" or r[2] == here][:limit]


def current_scopes(db: Any) -> dict[int, str]:
    """Live experiences served in one project only: id -> project. (See :func:`scopes_of`
    for those served on one machine.)"""
    return {eid: s.project for eid, s in scopes_of(db).items() if s.project is not None}


def scope_labels(db: Any) -> dict[int, str]:
    """Each scoped live experience's ``project NAME`` or ``machine`` (the rest: ``global``)."""
    return {eid: s.label for eid, s in scopes_of(db).items()}


def hidden_ids(db: Any, project: str | None, machine: str | None = None) -> set[int]:
    """The live experiences a context for ``project`` on ``machine`` (default: this one,
    :func:`agentmem.projects.machine_id`) must not show: scoped to another project or
    another machine."""
    scoped = scopes_of(db)
    if not scoped:
        return set()
    # this machine's id only when a machine fact is scoped (it costs the hook a hash)
    here = machine or (machine_id() if any(s.machine for s in scoped.values()) else None)
    return {
        eid
        for eid, s in scoped.items()
        if (s.machine is not None and s.machine != here)
        or (s.project is not None and s.project != project)
    }


def _prior(db: Any, ids: Sequence[int]) -> dict[int, tuple[Scope, set[str]]]:
    """The current scope of experiences ``ids`` and the projects of the runs behind them."""
    cols = _columns(db)
    if not ids or not cols:
        return {}
    out: dict[int, tuple[Scope, set[str]]] = {}
    for eid, project, support, kind, machine, reason in db.execute(
        f"SELECT * FROM ({_current(db, cols)}) c "
        f"WHERE c.experience_id IN ({','.join('?' * len(ids))})",
        list(ids),
    ).fetchall():
        try:
            value = json.loads(support)
        except ValueError:
            value = []
        runs = {str(p) for p in value} if isinstance(value, list) else {""}
        out[int(eid)] = (Scope(kind, project, machine, reason), runs)
    return out


def _about(op: Any) -> str | None:
    """What the evidence behind ``op`` says it is about (``finding.detail["scope"]``)."""
    for key in ("evidence", "joined"):
        f = op.detail.get(key)
        about = getattr(f, "detail", {}).get("scope") if f is not None else None
        if about in SCOPE_KINDS:
            return str(about)
    return None


def _decide(
    db: Any, op: Any, groups: Mapping[str, Sequence[int]], prior: Mapping[int, Any]
) -> tuple[Scope, set[str]] | None:
    """Where the lesson ``op`` writes (or confirms) is served now, with the projects of the
    runs behind it; None when it needs no row (global, as every lesson was before scopes,
    or a confirmation that changes nothing)."""
    from . import trajectories  # sqlite-utils and attrs: not on the prompt-hook path

    keys = op.detail.get("merged_groups") or ([op.group] if op.group else [])
    tids = sorted({t for k in keys for t in groups.get(k, ())})
    support, vocabulary = trajectories.projects_and_vocabulary(db, tids) if tids else ({""}, set())
    home = next(iter(support)) if len(support) == 1 else None  # this session's runs' project
    if home is None and tids:  # runs of several projects: the newest run's, for a machine fact
        row = db.execute(
            "SELECT json_extract(meta, '$.project') FROM trajectories WHERE id = ?", (max(tids),)
        ).fetchone()
        newest = row[0] if row is not None and isinstance(row[0], str) and row[0] else None
    else:
        newest = None
    if any(k not in groups for k in keys) or not keys:
        support.add("")  # runs this session cannot name
    known = trajectories.meta_values(db, tids, "machine")
    machines = {str(known.get(t) or "") for t in tids} or {""}  # "": not known
    before = [prior[t] for t in op.targets if t in prior]
    for t in op.targets:
        support |= prior[t][1] if t in prior else {""}
    if op.kind == "CONFIRM":
        # a tool's rule served in one project until runs of a second show it: promoted
        old = next((s for s, _ in before if s.kind == "tool" and s.project is not None), None)
        if old is None:
            return None
        projects = support - {""}  # runs outside any project are no second project
        if len(projects) < 2:
            return None
        now = scope_for("", projects, about="tool")
        return now._replace(reason=f"promoted to global: {now.reason}"), support
    if op.kind not in ("ADD", "MODIFY", "MERGE") or not op.text:
        return None
    about = _about(op) or next((s.kind for s, _ in before if s.kind), None)
    machines |= {s.machine for s, _ in before if s.machine}
    scope = scope_for(
        op.text,
        support,
        machines=machines,
        about=about,
        vocabulary=vocabulary,
        home=home or None,
        newest=newest,
    )
    if support <= {""} and scope.machine is None:
        return None  # no project anywhere: global, as every lesson was before scopes
    return scope, support


def decide(db: Any, op: Any, groups: Mapping[str, Sequence[int]]) -> Scope | None:
    """Where ``op``'s text would be served if it were applied now, as
    :func:`record_scopes` decides it (None: everywhere, or no change). For a caller
    that must know before applying (the team's learner: one member's lesson is never
    served team-wide)."""
    prior = _prior(db, sorted(set(op.targets)))
    decided = _decide(db, op, groups, prior)
    return None if decided is None else decided[0]


def promotion_notes(db: Any, ops: Sequence[Any], groups: Mapping[str, Sequence[int]]) -> list[Any]:
    """``ops`` with a note on each confirmation that promotes a lesson to global (runs of a
    second project show it), so the journal says so; call before applying them."""
    prior = _prior(db, sorted({t for op in ops if op.kind == "CONFIRM" for t in op.targets}))
    if not prior:
        return list(ops)
    import attrs

    out = []
    for op in ops:
        if op.kind == "CONFIRM":
            decided = _decide(db, op, groups, prior)
            if decided is not None:
                op = attrs.evolve(op, note="; ".join(x for x in (op.note, decided[0].reason) if x))
        out.append(op)
    return out


def record_scopes(
    db: Any, session_id: int, applied: Iterable[Any], groups: Mapping[str, Sequence[int]]
) -> int:
    """Scope the experiences a learning session wrote or confirmed; call inside its write
    transaction.

    ``applied``: the session's :class:`~agentmem.storage.journal.AppliedOp` records;
    ``groups``: each group's trajectory ids. A row is written for every experience
    whose runs include a project (or that is served on one machine), and for a lesson
    a confirmation promotes to global; returns how many are served in one project or
    on one machine.
    """
    done = [a for a in applied if a.status == "applied" and a.result_id is not None]
    prior = _prior(db, sorted({t for a in done for t in a.op.targets}))
    scoped = 0
    for a in done:
        decided = _decide(db, a.op, groups, prior)
        if decided is None:
            continue
        scope, support = decided
        db.execute(
            "INSERT OR REPLACE INTO experience_scopes (experience_id, session_id, project, "
            "support, reason, kind, machine) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                a.result_id,
                session_id,
                scope.project,
                json.dumps(sorted(support)),
                scope.reason,
                scope.kind,
                scope.machine,
            ],
        )
        scoped += scope.project is not None or scope.machine is not None
    return scoped


def scope_by_hand(db: Any, experience_id: int, session_id: int, project: str) -> None:
    """Serve a lesson added by hand only in ``project`` (``agentmem add --project``);
    inside the curation session's write transaction."""
    db.execute(
        "INSERT OR REPLACE INTO experience_scopes (experience_id, session_id, project, "
        "support, reason, kind, machine) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            experience_id,
            session_id,
            project,
            "[]",
            "added by hand for this project",
            "project",
            None,
        ],
    )
