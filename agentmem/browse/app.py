"""Datasette over a library, read-only, with sqlite-vec loaded and agentmem's metadata.

Needs the optional ``browse`` extra (``pip install 'agentmem[browse]'``: Datasette 0.65).

- The file is opened with SQLite's ``mode=ro`` on every connection (Datasette's
  normal, mutable mode, not ``--immutable``): agents keep recording while the
  browser is open, and each page shows what they have committed. Datasette's
  write connection is refused, and each connection also sets
  ``PRAGMA query_only``, so nothing the browser does can write.
- sqlite-vec is loaded on every connection, so the ``vec0`` table's pages work.
- The metadata (:mod:`agentmem.browse.metadata`) describes every table and column
  from ``docs/schema.md``, hides internal tables and adds the canned queries.
- A small plugin, active only on the Datasette instances made here, links a
  lesson to its journal and source runs, a session to what it did and a group
  to its runs.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import sqlite_vec
from datasette.app import Datasette
from datasette.database import Database
from datasette.plugins import pm
from datasette.utils.sqlite import sqlite3

from ..errors import AgentMemError
from ..migrations import KNOWN_MIGRATIONS
from ..schemadoc import SchemaDoc
from ..schemadoc import load as load_schema_doc
from . import plugin
from .metadata import DATABASE, hidden_tables, metadata
from .plugin import MARK

__all__ = [
    "LOOPBACK_HOST",
    "ReadOnlyDatabase",
    "inspect_library",
    "is_loopback",
    "make_datasette",
    "serve",
]

#: Where ``agentmem browse`` listens unless told otherwise.
LOOPBACK_HOST = "127.0.0.1"


def _ro_uri(path: Path) -> str:
    return path.resolve().as_uri() + "?mode=ro"


def _load_vec(conn: Any) -> None:
    if not hasattr(conn, "enable_load_extension"):
        raise AgentMemError(
            "this Python's sqlite3 module cannot load extensions, which sqlite-vec needs; "
            "install the pysqlite3 wheel (pip install pysqlite3)"
        )
    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)


class ReadOnlyDatabase(Database):  # type: ignore[misc]
    """A Datasette database whose every connection opens the file with ``mode=ro``.

    Datasette's own mutable mode also reads with ``mode=ro`` but may open a
    write connection (for plugins or writable canned queries); this one refuses.
    The path is passed as a proper ``file:`` URI, so any file name works.
    """

    def connect(self, write: bool = False) -> Any:
        if write:
            raise AgentMemError("agentmem browse is read-only: nothing may write to the library")
        conn = sqlite3.connect(_ro_uri(Path(self.path)), uri=True, check_same_thread=False)
        self._all_file_connections.append(conn)
        return conn


def _register_plugin() -> None:
    if not pm.is_registered(plugin):
        pm.register(plugin, name="agentmem-browse")


def inspect_library(
    path: Path, doc: SchemaDoc
) -> tuple[dict[str, list[str]], set[str], list[str], list[str]]:
    """The file's tables and views with their columns, the hidden ones, and its migrations
    that are pending (this agentmem knows them, the file lacks them) and unknown (newer)."""
    if not path.is_file():
        raise AgentMemError(f"no library at {path}: give --db PATH (or set AGENTMEM_DB)")
    try:
        conn = sqlite3.connect(_ro_uri(path), uri=True)
    except sqlite3.Error as e:
        raise AgentMemError(f"cannot open {path} read-only: {e}") from None
    try:
        _load_vec(conn)
        rows = conn.execute(
            "SELECT t.name, t.type, m.sql FROM pragma_table_list t "
            "LEFT JOIN sqlite_schema m ON m.name = t.name WHERE t.schema = 'main'"
        ).fetchall()
        names = {str(r[0]) for r in rows}
        if "experiences" not in names or "trajectories" not in names:
            raise AgentMemError(f"{path} is not an agentmem library (no experiences table)")
        hidden = hidden_tables(rows, doc.tables)
        columns = {
            str(name): [str(c[1]) for c in conn.execute(f"PRAGMA table_info([{name}])")]
            for name, kind, _ in rows
            if kind in ("table", "view", "virtual")
        }
        applied: list[str] = []
        if "_sqlite_migrations" in names:
            applied = [
                str(r[0])
                for r in conn.execute(
                    "SELECT name FROM _sqlite_migrations WHERE migration_set = 'agentmem'"
                )
            ]
    except sqlite3.Error as e:
        raise AgentMemError(f"cannot read {path}: {e}") from None
    finally:
        conn.close()
    pending = [m for m in KNOWN_MIGRATIONS if m not in applied]
    unknown = [m for m in applied if m not in KNOWN_MIGRATIONS]
    return columns, hidden, pending, unknown


def make_datasette(path: str | Path, **settings: Any) -> Any:
    """A Datasette instance over the library at ``path``, read-only, as ``/agentmem``.

    ``settings`` override Datasette settings (``sql_time_limit_ms``, ...).
    """
    path = Path(path)
    doc = load_schema_doc()
    columns, hidden, pending, unknown = inspect_library(path, doc)
    note = ""
    if pending:
        note = (
            f"The file lacks {len(pending)} schema upgrade(s) ({', '.join(pending)}): run any "
            "agentmem command on it (agentmem stats) to upgrade it; some queries need them."
        )
    elif unknown:
        note = f"The file was written by a newer agentmem ({', '.join(unknown)})."
    _register_plugin()
    ds = Datasette(
        [],
        metadata=metadata(doc, columns, hidden, path=path, schema_note=note),
        sqlite_extensions=[sqlite_vec.loadable_path()],
        settings={
            "allow_download": False,
            "sql_time_limit_ms": 5000,
            **settings,
        },
    )
    setattr(ds, MARK, True)
    if "_memory" in ds.databases:
        ds.remove_database("_memory")
    ds.add_database(ReadOnlyDatabase(ds, path=str(path), is_mutable=True), name=DATABASE)
    ds._agentmem_note = note
    return ds


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (127.0.0.0/8, ::1 or localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(ds: Any, host: str = LOOPBACK_HOST, port: int = 8001) -> None:
    """Serve ``ds`` with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(ds.app(), host=host, port=port, log_level="warning", lifespan="on", workers=1)
