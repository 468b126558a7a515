"""Which tools past tasks like this one used: a keyword profile of every recorded tool.

A prompt rarely names a tool ("move the report into the archive folder" does
not say ``mv``), but the library has seen tasks worded like it and knows which
tools those runs called. ``tool_usage`` (FTS5) holds one row per tool: the
tool's name (lower case, not searched) and the texts of the newest
:data:`PROFILE_TASKS` distinct tasks whose trajectories called it. BM25 of a
prompt against these rows ranks the tools the task is likely to need
(:func:`rank_tools`); retrieval counts that rank as evidence for the lessons
naming those tools.

The profiles are a summary of the trajectories, refreshed by :func:`refresh`
when a learning session ends and by ``reindex`` (:func:`rebuild`), not on every
recording: the setting ``tool_usage_upto`` is the newest trajectory id they
cover. Writers run inside the caller's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from . import settings

__all__ = [
    "PROFILE_TASKS",
    "TABLE",
    "UPTO_KEY",
    "exists",
    "profiled",
    "rank_tools",
    "rebuild",
    "refresh",
]

TABLE = "tool_usage"
#: Settings key: the newest trajectory id the profiles cover.
UPTO_KEY = "tool_usage_upto"
#: Distinct task texts kept per tool (the newest).
PROFILE_TASKS = 200

_CREATE = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING fts5("
    "tool UNINDEXED, tasks, tokenize = \"porter unicode61 tokenchars '_'\")"
)


def exists(db: Any) -> bool:
    row = db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", [TABLE]).fetchone()
    return row is not None


def _upto(db: Any) -> int:
    return int(settings.get(db, UPTO_KEY, 0))


def _profile(db: Any, tool: str) -> list[str]:
    """The newest distinct task texts whose trajectories called ``tool``."""
    out: dict[str, None] = {}
    cur = db.execute(
        "SELECT t.task FROM steps s JOIN trajectories t ON t.id = s.trajectory_id "
        "WHERE s.tool = ? ORDER BY s.id DESC LIMIT ?",
        [tool, 20 * PROFILE_TASKS],
    )
    for (task,) in cur:
        out[str(task)] = None
        if len(out) >= PROFILE_TASKS:
            break
    return list(out)


def refresh(db: Any) -> int:
    """Re-profile the tools that trajectories recorded since the last refresh called;
    returns how many. Creates the table if it is missing."""
    db.execute(_CREATE)
    upto = _upto(db)
    top = db.execute("SELECT coalesce(max(id), 0) FROM trajectories").fetchone()[0]
    if top <= upto:
        return 0
    tools = [
        str(r[0])
        for r in db.execute("SELECT DISTINCT tool FROM steps WHERE trajectory_id > ?", [upto])
    ]
    by_name: dict[str, list[str]] = {}
    for tool in tools:  # tools differing in case only share one profile
        by_name.setdefault(tool.lower(), []).extend(_profile(db, tool))
    for name, tasks in by_name.items():
        db.execute(f"DELETE FROM {TABLE} WHERE tool = ?", [name])
        db.execute(
            f"INSERT INTO {TABLE} (tool, tasks) VALUES (?, ?)",
            [name, "\n".join(dict.fromkeys(tasks))],
        )
    settings.put(db, UPTO_KEY, top)
    return len(by_name)


def rebuild(db: Any) -> int:
    """Profile every recorded tool again (``reindex``)."""
    db.execute(f"DROP TABLE IF EXISTS {TABLE}")
    settings.delete(db, UPTO_KEY)
    return refresh(db)


def rank_tools(db: Any, query: str, limit: int) -> list[tuple[str, float]]:
    """``(tool, BM25 score)`` of the ``limit`` tools whose past tasks best match ``query``
    (an FTS5 expression), best first."""
    rows = db.execute(
        f"SELECT tool, -bm25({TABLE}) AS s FROM {TABLE} WHERE {TABLE} MATCH ? "
        "ORDER BY s DESC LIMIT ?",
        [query, limit],
    )
    return [(str(t), float(s)) for t, s in rows]


def profiled(db: Any, tools: Iterable[str]) -> set[str]:
    """The ``tools`` (lower case) that have a profile."""
    want = sorted(set(tools))
    if not want:
        return set()
    rows = db.execute(
        f"SELECT tool FROM {TABLE} WHERE tool IN (SELECT value FROM json_each(?))",
        [json.dumps(want)],
    )
    return {str(r[0]) for r in rows}
