"""Which transactions agentmem began, and whether the connection wrote in them.

Kept apart from :mod:`agentmem.db` so that :mod:`agentmem.storage.vector_index` can use it
without importing sqlite-utils (the fast ``agentmem context`` path avoids it).
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

__all__ = ["begin", "raw", "written_in_transaction"]

#: Each database object's ``total_changes`` when agentmem last began a transaction on it.
_BEGUN_AT: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def raw(db: Any) -> Any:
    """The DB-API connection of ``db``: a sqlite-utils ``Database``'s, or ``db`` itself."""
    return getattr(db, "conn", db)


def begin(db: Any, sql: str) -> None:
    """Run ``sql`` (a ``BEGIN``) on ``db``'s connection, noting its ``total_changes`` first."""
    conn = raw(db)
    with contextlib.suppress(TypeError):  # an object that cannot be weakly referenced
        _BEGUN_AT[db] = conn.total_changes
    conn.execute(sql)


def written_in_transaction(db: Any) -> bool:
    """Might this connection have written in its current transaction? False outside one.

    True when the transaction was not begun through :func:`begin` (as
    :func:`agentmem.db.read_snapshot` and :func:`agentmem.db.write` do): nothing
    is known of it. What it wrote may still be rolled back, so a cache must
    not take it for the committed state.
    """
    conn = raw(db)
    if not conn.in_transaction:
        return False
    try:
        begun = _BEGUN_AT.get(db)
    except TypeError:
        return True
    # total_changes only grows: unchanged since a point before this transaction began
    # means no write in it.
    return begun != conn.total_changes
