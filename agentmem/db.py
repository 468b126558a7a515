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

from ._tx import begin as _begin
from .errors import AgentMemError

__all__ = ["BUSY_TIMEOUT_MS", "connect", "read_snapshot", "sqlite3", "write"]

#: How long a writer waits for another process's write lock before giving up.
BUSY_TIMEOUT_MS = 30_000


def _load_vec(conn: Any) -> None:
    import sqlite_vec

    if not hasattr(conn, "enable_load_extension"):
        raise AgentMemError(
            "this Python's sqlite3 module cannot load extensions, which sqlite-vec needs; "
            "install the pysqlite3 wheel (pip install pysqlite3) or use a Python whose "
            "sqlite3 supports enable_load_extension"
        )
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)


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
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if vec:
        _load_vec(conn)
    if not in_memory:
        # Changing the journal mode needs a short exclusive moment; retry politely.
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        # Reads of the vector index map the file instead of copying pages (about 1.5x faster).
        conn.execute("PRAGMA mmap_size = 268435456")
    conn.execute("PRAGMA foreign_keys = ON")
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
