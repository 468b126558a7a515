"""The connection: which sqlite3 module, sqlite-vec, WAL, busy timeout and write transactions.

agentmem needs an SQLite that can load extensions (for sqlite-vec). Many Pythons
(pyenv and python.org builds among them) ship a ``sqlite3`` module without
``enable_load_extension``. sqlite-utils already prefers ``pysqlite3`` when it is
installed, and agentmem depends on the ``pysqlite3`` binary wheel on Linux, so
both use the same module: :data:`sqlite3` below is sqlite-utils' choice.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlite_utils import Database
from sqlite_utils.utils import sqlite3

from ._sqlite import BUSY_TIMEOUT_MS, load_vec, set_pragmas
from ._tx import begin as _begin
from .errors import AgentMemError

__all__ = ["BUSY_TIMEOUT_MS", "connect", "read_snapshot", "sqlite3", "write"]


def connect(path: str | Path, *, vec: bool = True) -> Database:
    """Open (creating if needed) the SQLite file at ``path`` as agentmem uses it.

    The connection is in autocommit mode (``isolation_level=None``): every write
    goes through :func:`write`, which starts an explicit ``BEGIN IMMEDIATE``
    transaction so that several agent processes can share one file. WAL
    journaling and a busy timeout are set, and sqlite-vec is loaded. A new file
    is created readable and writable by its owner only (0600): trajectories
    carry tool outputs that may be private.
    """
    path_str = str(path)
    in_memory = path_str == ":memory:" or path_str.startswith("file:")
    if not in_memory:
        p = Path(path_str)
        if p.parent and not p.parent.exists():
            raise AgentMemError(f"cannot create {p}: folder {p.parent} does not exist")
        if not p.exists():
            fd = os.open(path_str, os.O_CREAT | os.O_RDWR, stat.S_IRUSR | stat.S_IWUSR)
            os.close(fd)
    conn = sqlite3.connect(
        path_str,
        isolation_level=None,
        timeout=BUSY_TIMEOUT_MS / 1000,
        check_same_thread=False,
        uri=path_str.startswith("file:"),
    )
    if vec:
        load_vec(conn)
    if not in_memory and conn.execute("PRAGMA page_count").fetchone()[0] == 0:
        # A new file gives pages freed by agentmem prune back incrementally
        # (agentmem.storage.retention); only an empty file can take this without a VACUUM.
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
    set_pragmas(conn, file=not in_memory, writer=True)
    return Database(conn, execute_plugins=False)


@contextlib.contextmanager
def read_snapshot(db: Any) -> Iterator[None]:
    """Several reads that must see one committed state (a deferred read transaction).

    Inside a transaction already, the reads share it. In WAL mode a reader never
    blocks writers, and a session committing meanwhile is seen whole or not at all.
    """
    conn = db.conn
    if conn.in_transaction:
        yield
        return
    _begin(db, "BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


@contextlib.contextmanager
def write(db: Database) -> Iterator[Database]:
    """A write transaction: ``BEGIN IMMEDIATE`` at the outermost level, a savepoint inside.

    ``BEGIN IMMEDIATE`` takes the write lock up front, so two processes never
    both read and then fail to upgrade to a write ("database is locked"); the
    busy timeout makes the second wait instead. Do slow work (model calls,
    embeddings) before entering, never inside.
    """
    conn = db.conn
    if conn.in_transaction:
        with db.atomic():
            yield db
        return
    _begin(db, "BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    else:
        try:
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
