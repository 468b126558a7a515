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
- Only whoever started it can read it: each run makes a token (:func:`make_datasette`,
  ``ds._agentmem_token``) that ``agentmem browse`` prints in its URL, as Jupyter does
  (``http://127.0.0.1:8001/agentmem?token=...``); a request that carries it (in the
  query, an ``Authorization: Bearer`` header, or the cookie the first such request
  sets) is served, every other one gets 403 (:func:`token_guard`). Another local user
  can reach the loopback port, but not the token.
- Hostile pages cannot use it: a request whose ``Host`` header is not the address
  it serves (or a loopback name) is refused with 421 (:func:`host_guard`: a page
  on another site that rebinds its DNS name to 127.0.0.1 gets nothing), and one
  query's memory is bounded (:data:`HEAP_LIMIT` for SQLite, :data:`PROCESS_DATA_LIMIT`
  for the process, 5 s, :data:`MAX_ROWS` rows): ``randomblob(600000000)`` is an error
  page, not 650 MB.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

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
from .plugin import HEAP_LIMIT, MARK

__all__ = [
    "HEAP_LIMIT",
    "LOOPBACK_HOST",
    "MAX_ROWS",
    "PROCESS_DATA_LIMIT",
    "ReadOnlyDatabase",
    "allowed_hosts",
    "host_guard",
    "inspect_library",
    "is_loopback",
    "make_datasette",
    "serve",
    "token_guard",
]

#: Where ``agentmem browse`` listens unless told otherwise.
LOOPBACK_HOST = "127.0.0.1"
#: The browsing process's data segment limit (``RLIMIT_DATA``, where the OS has it): the
#: backstop for what SQLite's limit does not see (rows copied into Python).
PROCESS_DATA_LIMIT = 2 * 1024**3
#: The most rows one query page returns (Datasette's ``max_returned_rows``).
MAX_ROWS = 1000
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


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
            "max_returned_rows": MAX_ROWS,
            **settings,
        },
    )
    setattr(ds, MARK, True)
    ds._agentmem_token = secrets.token_urlsafe(32)  # who started it: see token_guard
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


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """The ``Host`` headers a server listening on ``host``:``port`` answers: the loopback
    names and ``host`` itself, with the port (and without it on port 80). Listening on
    every address (``0.0.0.0``, ``::``) adds nothing: such a server answers the loopback
    names, and IP literals (:func:`host_guard`), never a DNS name it cannot know."""
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    names = {*_LOOPBACK_NAMES, shown}
    out = {f"{n}:{port}" for n in names}
    if port == 80:
        out |= names
    return frozenset(h.lower() for h in out)


def _ip_literal(value: str, port: int) -> bool:
    """Whether a ``Host`` header is an IP address literal with this port."""
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        got = rest[1:] if rest.startswith(":") else ""
    else:
        name, _, got = value.partition(":")
    if got != (str(port) if got or port != 80 else ""):
        return False
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def host_guard(app: Any, host: str, port: int) -> Any:
    """``app`` (ASGI) answering only requests whose ``Host`` is one of
    :func:`allowed_hosts` (any IP literal too when listening on every address); the
    others get 421 Misdirected Request: the defence against DNS rebinding."""
    allowed = allowed_hosts(host, port)
    wildcard = host in ("0.0.0.0", "::", "[::]", "")

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") not in ("http", "websocket"):
            await app(scope, receive, send)
            return
        raw = [v for k, v in scope.get("headers", ()) if k.lower() == b"host"]
        value = raw[0].decode("latin-1").strip().lower() if len(raw) == 1 else ""
        if value in allowed or (wildcard and value and _ip_literal(value, port)):
            await app(scope, receive, send)
            return
        body = (
            f"agentmem browse answers only for {', '.join(sorted(allowed))}; "
            "this request named another host.\n"
        ).encode()
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 421,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return guarded


def cookie_name(port: int) -> str:
    """The cookie that carries the token of the server on ``port`` (one a port: cookies
    do not tell ports apart)."""
    return f"agentmem_browse_{port}"


def token_guard(app: Any, token: str, port: int) -> Any:
    """``app`` (ASGI) answering only requests that carry ``token``: as ``?token=`` (the
    answer then sets it as an HttpOnly, SameSite=Strict cookie, and the app never sees
    the parameter), as ``Authorization: Bearer``, or as that cookie. Every other request
    gets 403: the loopback port is open to every local user, the token is not."""
    name = cookie_name(port)
    want = token.encode()

    def same(got: str | None) -> bool:
        return got is not None and hmac.compare_digest(got.encode("latin-1", "replace"), want)

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") not in ("http", "websocket"):
            await app(scope, receive, send)
            return
        pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = next((v for k, v in pairs if k == "token"), None)
        headers = {k.lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        bearer = headers.get(b"authorization", "")
        cookies = dict(
            c.strip().split("=", 1) for c in headers.get(b"cookie", "").split(";") if "=" in c
        )
        in_query = same(given)
        if (
            in_query
            or same(bearer.removeprefix("Bearer ").strip() or None)
            or same(cookies.get(name))
        ):
            if given is not None:  # Datasette would read ?token= as a filter on a column
                rest = urlencode([(k, v) for k, v in pairs if k != "token"])
                scope = {**scope, "query_string": rest.encode("latin-1")}
            await app(scope, receive, _with_cookie(send, name, token) if in_query else send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = (
            b"agentmem browse serves only whoever started it: open the URL it printed "
            b"(with ?token=...).\n"
        )
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return guarded


def _with_cookie(send: Any, name: str, token: str) -> Any:
    cookie = f"{name}={token}; HttpOnly; SameSite=Strict; Path=/".encode()

    async def sending(message: dict[str, Any]) -> None:
        if message.get("type") == "http.response.start":
            headers = [*message.get("headers", ()), (b"set-cookie", cookie)]
            message = {**message, "headers": headers}
        await send(message)

    return sending


def _limit_process_memory() -> None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not on this OS
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    want = PROCESS_DATA_LIMIT if hard == resource.RLIM_INFINITY else min(hard, PROCESS_DATA_LIMIT)
    if soft == resource.RLIM_INFINITY or soft > want:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_DATA, (want, hard))


def serve(ds: Any, host: str = LOOPBACK_HOST, port: int = 8001) -> None:
    """Serve ``ds`` with uvicorn until interrupted, behind :func:`host_guard` and
    :func:`token_guard` (the token :func:`make_datasette` made), with the process's
    memory bounded (:data:`PROCESS_DATA_LIMIT`)."""
    import uvicorn

    _limit_process_memory()
    token = getattr(ds, "_agentmem_token", None) or secrets.token_urlsafe(32)
    uvicorn.run(
        host_guard(token_guard(ds.app(), token, port), host, port),
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        workers=1,
    )
