"""Datasette hooks for ``agentmem browse``, active only on the instances it builds.

- ``prepare_connection``: ``PRAGMA query_only`` and ``hard_heap_limit`` on every connection, and a
  ``sqrt`` function where SQLite was built without its math functions (the
  advantages of the ``group_runs`` query need it).
- ``handle_exception``: a query that ran out of its memory is a clear 400.
- ``render_cell``: links. A lesson links to its journal and to the runs it was
  learned from, a session id to what that session did, a group key to its runs,
  a trajectory id to its row.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlencode

import markupsafe
from datasette import hookimpl
from datasette.utils.sqlite import sqlite3

from .metadata import DATABASE

__all__ = ["HEAP_LIMIT", "MARK", "handle_exception", "prepare_connection", "render_cell"]

#: The attribute that marks a Datasette instance as agentmem's.
MARK = "_agentmem_browse"
#: SQLite's hard heap limit in the browsing process (``PRAGMA hard_heap_limit``): a query
#: that needs more fails with "out of memory" and the server goes on.
HEAP_LIMIT = 64 * 1024 * 1024

# column -> (canned query, its parameter, link text or None for the value itself)
_QUERY_LINKS: dict[str, tuple[str, str, str | None]] = {
    "journal": ("lesson_journal", "lesson", "journal"),
    "runs": ("lesson_runs", "lesson", "runs"),
    "lesson": ("lesson_journal", "lesson", None),
    "session_id": ("session_journal", "session", None),
    "created_session": ("session_journal", "session", None),
    "updated_session": ("session_journal", "session", None),
    "group_key": ("group_runs", "group", None),
}
# Views (no row pages, no foreign keys) get the same links as query results; tables keep
# Datasette's own foreign-key links, and only their group keys are linked.
_LINKED_VIEWS = {
    "experience_sources",
    "journal",
    "live_experiences",
    "trajectory_rewards",
    "trajectory_summary",
}
_LESSON_VIEWS = {"experience_sources", "live_experiences"}


def _ours(datasette: Any) -> bool:
    return bool(getattr(datasette, MARK, False))


def _sqrt(x: float | None) -> float | None:
    return None if x is None or x < 0 else math.sqrt(x)


@hookimpl
def prepare_connection(conn: Any, database: str, datasette: Any) -> None:
    if not _ours(datasette) or database != DATABASE:
        return  # Datasette's own _internal database is written by Datasette
    conn.execute("PRAGMA query_only = 1")
    conn.execute(f"PRAGMA hard_heap_limit = {HEAP_LIMIT}")  # one query cannot take the machine
    try:
        conn.execute("SELECT sqrt(4)")
    except sqlite3.OperationalError:  # an SQLite built without its math functions
        conn.create_function("sqrt", 1, _sqrt, deterministic=True)


@hookimpl
def handle_exception(datasette: Any, request: Any, exception: BaseException) -> Any:
    """A query over :data:`HEAP_LIMIT` (SQLite's out of memory): a clear 400, not a 500."""
    if not _ours(datasette) or not isinstance(exception, MemoryError):
        return None
    from datasette.utils.asgi import Response

    return Response.text(
        f"agentmem browse: this query needs more than the {HEAP_LIMIT // 2**20} MB of memory "
        "one query may use; narrow it (fewer rows, smaller values).",
        status=400,
    )


@hookimpl
def render_cell(
    row: Any, value: Any, column: str, table: str | None, database: str, datasette: Any
) -> Any:
    if not _ours(datasette) or database != DATABASE:
        return None
    if value is None or value == "" or isinstance(value, bytes):
        return None
    link = _QUERY_LINKS.get(column)
    if table in _LESSON_VIEWS and column == "id":
        link = ("lesson_journal", "lesson", None)
    if link is not None and (table is None or table in _LINKED_VIEWS or column == "group_key"):
        query, param, label = link
        url = datasette.urls.query(DATABASE, query) + "?" + urlencode({param: value})
        return markupsafe.Markup('<a href="{}">{}</a>').format(url, label or value)
    if column == "trajectory" and table is None:
        url = datasette.urls.row(DATABASE, "trajectories", str(value))
        return markupsafe.Markup('<a href="{}">{}</a>').format(url, value)
    return None
