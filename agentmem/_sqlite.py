"""The SQLite module, sqlite-vec, the pragmas every agentmem connection uses, and rows as dicts.

Kept apart from :mod:`agentmem.db` (which wraps connections in sqlite-utils) so
that the prompt-hook path of ``agentmem context`` can open a library with the
standard library alone. :func:`agentmem.db.connect` and :func:`open_reader` both
set their pragmas and load sqlite-vec here. :func:`open_reader` connects through the
sqlite module's C part alone (:func:`_driver`); :data:`sqlite3`, the whole module, is
imported when first asked for.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from _thread import allocate_lock  # threading.Lock, without importing threading
from typing import TYPE_CHECKING, Any

from .errors import AgentMemError

if TYPE_CHECKING:
    import sqlite3


def _module() -> Any:
    """The sqlite3 module: pysqlite3, the one sqlite-utils uses when it is installed
    (agentmem depends on it on Linux), else the standard library's."""
    try:
        import pysqlite3

        return pysqlite3
    except ImportError:
        import sqlite3

        return sqlite3


_DRIVER_LOCK = allocate_lock()


def _driver() -> Any:
    """The C part of :func:`_module` (``connect``, the connection and error classes: the
    same objects), without its Python part, whose ``dbapi2`` imports :mod:`datetime` for
    adapters a reader never uses (a tenth of the prompt hook's imports). Loaded once, as
    ``pysqlite3._sqlite3``, where pysqlite3 finds it when it is imported later; the whole
    module when it is imported already, or when pysqlite3 is not installed."""
    c_name = "pysqlite3._sqlite3"
    for name in ("pysqlite3", c_name):
        loaded = sys.modules.get(name)
        if loaded is not None:
            return loaded
    with _DRIVER_LOCK:  # one module object, whatever the threads: its classes are the ones
        loaded = sys.modules.get(c_name)
        return loaded if loaded is not None else _load_driver(c_name)


def _load_driver(c_name: str) -> Any:
    """pysqlite3's C extension ``c_name`` loaded from its file and registered under its
    name, without its package's ``__init__``; :func:`_module` when it is not installed."""
    package = importlib.machinery.PathFinder.find_spec("pysqlite3")
    spec = None
    if package is not None and package.submodule_search_locations:
        spec = importlib.machinery.PathFinder.find_spec(
            c_name, list(package.submodule_search_locations)
        )
    if spec is None or spec.loader is None:
        return _module()
    from importlib.util import module_from_spec

    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[c_name] = module
    return module


def __getattr__(name: str) -> Any:
    if name == "sqlite3":  # imported when asked for: the prompt hook needs only _driver()
        module = _module()
        globals()["sqlite3"] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BUSY_TIMEOUT_MS",
    "MMAP_SIZE",
    "dict_row",
    "dict_rows",
    "load_vec",
    "open_reader",
    "set_pragmas",
    "sqlite3",
]

#: How long a connection waits for another process's write lock before giving up.
BUSY_TIMEOUT_MS = 30_000
#: Reads of the vector index map the file instead of copying pages (about 1.5x faster).
MMAP_SIZE = 256 * 2**20


def _vec_path() -> str:
    """sqlite-vec's loadable library, found without importing the package (which imports
    numpy when it is installed)."""
    spec = importlib.machinery.PathFinder.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise AgentMemError("sqlite-vec is not installed (pip install sqlite-vec)")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


def load_vec(conn: Any) -> None:
    """Load sqlite-vec into ``conn``."""
    if not hasattr(conn, "enable_load_extension"):
        raise AgentMemError(
            "this Python's sqlite3 module cannot load extensions, which sqlite-vec needs; "
            "install the pysqlite3 wheel (pip install pysqlite3) or use a Python whose "
            "sqlite3 supports enable_load_extension"
        )
    conn.enable_load_extension(True)
    try:
        conn.load_extension(_vec_path())
    finally:
        conn.enable_load_extension(False)


def set_pragmas(conn: Any, *, file: bool, writer: bool) -> None:
    """The pragmas of an agentmem connection: busy timeout; for a file, memory-mapped
    reads; for a writer, WAL, ``synchronous = NORMAL`` and foreign keys."""
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if file:
        if writer:
            # Changing the journal mode needs a short exclusive moment: only when needed.
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(f"PRAGMA mmap_size = {MMAP_SIZE}")
    if writer:
        conn.execute("PRAGMA foreign_keys = ON")


def open_reader(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """A read-only connection to the library at ``path`` (which must exist), with
    sqlite-vec loaded, in autocommit mode: reads that must agree run in ``BEGIN``."""
    quoted = os.fspath(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    conn = _driver().connect(
        f"file:{quoted}?mode=ro",
        uri=True,
        isolation_level=None,
        timeout=BUSY_TIMEOUT_MS / 1000,
        check_same_thread=False,
    )
    try:
        set_pragmas(conn, file=True, writer=False)
        load_vec(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def dict_rows(cursor: Any) -> list[dict[str, Any]]:
    """A cursor's remaining rows as dicts of column name to value (the one row-to-dict
    idiom: every owner of a table reads rows with it)."""
    cols = [c[0] for c in cursor.description]
    return [dict(zip(cols, r, strict=True)) for r in cursor.fetchall()]


def dict_row(cursor: Any) -> dict[str, Any] | None:
    """A cursor's next row as a dict of column name to value, or None when there is none."""
    row = cursor.fetchone()
    return None if row is None else dict(zip([c[0] for c in cursor.description], row, strict=True))
