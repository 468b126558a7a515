"""Projects under the user's control: which are paused, and what each holds.

A project (a folder: its git root, see :mod:`agentmem.projects`) is ``active`` unless
the setting ``project_states`` (a JSON object, project -> state) says otherwise:

* ``paused``: the hooks neither serve lessons in it nor record its sessions, until it is
  resumed (what they skipped is not recorded later);
* ``excluded``: the same, and ``agentmem import`` / ``setup`` leave its history out too.

Standard library only: the prompt hook reads :func:`state_of` from the raw settings it
has already read.
"""

from __future__ import annotations

import json
from typing import Any

from . import settings

__all__ = ["KEY", "STATES", "has_runs", "overview", "put_state", "state_of", "states"]

#: The setting that holds the states.
KEY = "project_states"
#: The states a project can be put in (active is the absence of a state).
STATES = ("paused", "excluded")


def states(db: Any) -> dict[str, str]:
    """Every project that is not active, with its state."""
    value = settings.get(db, KEY, {})
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def state_of(stored: dict[str, Any], project: str | None) -> str | None:
    """The state of ``project`` from the raw settings ``stored`` (None: active)."""
    if project is None or KEY not in stored:
        return None
    try:
        value = json.loads(stored[KEY])
    except (TypeError, ValueError):
        return None
    state = value.get(project) if isinstance(value, dict) else None
    return state if state in STATES else None


def put_state(db: Any, project: str, state: str | None) -> None:
    """Set ``project``'s state (None: active again), in the caller's transaction."""
    current = states(db)
    if state is None:
        current.pop(project, None)
    else:
        current[project] = state
    settings.put(db, KEY, current)


def has_runs(db: Any, project: str) -> bool:
    """Whether any run of ``project`` is in the library."""
    return (
        db.execute(
            "SELECT 1 FROM trajectories WHERE json_extract(meta, '$.project') = ? LIMIT 1",
            [project],
        ).fetchone()
        is not None
    )


def overview(db: Any) -> list[dict[str, Any]]:
    """Each project with runs or lessons: runs, last run, lessons served only there, state."""
    from .scopes import scopes_of

    rows: dict[str, dict[str, Any]] = {}
    for project, runs, last in db.execute(
        "SELECT json_extract(meta, '$.project') AS p, count(*), max(created_at) "
        "FROM trajectories WHERE p IS NOT NULL GROUP BY p"
    ):
        rows[str(project)] = {"project": str(project), "runs": runs, "last_run": last}
    for scope in scopes_of(db).values():
        if scope.project is not None:
            row = rows.setdefault(
                scope.project, {"project": scope.project, "runs": 0, "last_run": None}
            )
            row["lessons"] = row.get("lessons", 0) + 1
    marked = states(db)
    for p in marked:
        rows.setdefault(p, {"project": p, "runs": 0, "last_run": None})
    out = []
    for p in sorted(rows):
        r = rows[p]
        r.setdefault("lessons", 0)
        r["state"] = marked.get(p, "active")
        out.append(r)
    return out
