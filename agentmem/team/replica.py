"""The embedded replica: libSQL's client for syncing and for writes, SQLite for reads.

A laptop's replica is an ordinary WAL SQLite file that libSQL's client
(``libsql-experimental``) keeps up to date with the team's primary (``sqld``).
Two ways in:

* :func:`open_remote` connects libSQL's client to the replica file with the
  primary's URL. ``sync()`` pulls the primary's new pages; every write is
  delegated to the primary and applied there, inside the primary's transaction
  (``BEGIN IMMEDIATE`` ... ``COMMIT`` are forwarded too). The client cannot load
  extensions, but the primary can (``sqld -e``), so writes to the sqlite-vec index
  work. :class:`RemoteDb` gives agentmem's storage code (``journal``, ``index``)
  the little of ``sqlite_utils.Database`` it uses, so a team session is applied
  by the same code as a private one.
* :func:`open_readonly` opens the file with agentmem's own SQLite and sqlite-vec,
  read-only: this is how ``context``, ``retrieve`` and planning read the team
  library, with no network at all.

Only one process at a time may run libSQL's client on a replica file: every
caller holds :func:`replica_lock` around it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..errors import TeamError, TeamRefusedError, TeamUnavailableError
from .config import TeamConfig, lock_path, mark_synced

if TYPE_CHECKING:
    from ..embeddings import Embedder

__all__ = ["RemoteDb", "open_readonly", "open_remote", "replica_lock", "sync"]

#: The libsql-experimental version agentmem is tested with (the ``team`` extra pins it).
LIBSQL_CLIENT = "libsql-experimental==0.0.55"


def _libsql() -> Any:
    # libSQL's Rust core logs every retry to stderr unless told otherwise.
    os.environ.setdefault("RUST_LOG", "off")
    try:
        import libsql_experimental
    except ImportError:
        raise TeamError(
            "sharing with a team needs libSQL's client: "
            f"pip install 'agentmem[team]' (or pip install {LIBSQL_CLIENT})"
        ) from None
    return libsql_experimental


_UNREACHABLE = ("unavailable", "handshake", "connect", "timed out", "timeout", "sync error")


_REFUSED = ("permissiondenied", "authorization forbidden", "unauthorized", "jwt")


def translate(e: BaseException, url: str) -> BaseException:
    """libSQL's client raises ValueError for everything: name what happened."""
    text = str(e)
    low = text.lower()
    if any(w in low for w in _REFUSED):
        return TeamRefusedError(
            f"the team's primary at {url} refused this laptop's token ({text[:200]}): a "
            "member's token reads the team library and never writes it; only the team's "
            "learner writes lessons (an expired or revoked token is refused too: ask for a "
            "new one, `agentmem team token add NAME` on the team's server)"
        )
    if "opening database connection" in low:
        return TeamUnavailableError(
            f"the team's primary at {url} is busy (no free connection: {text}); try again in a "
            "minute, or raise sqld's --max-concurrent-connections"
        )
    if "remote sqlite failure" in low or "sqlite failure" in low:
        return TeamError(f"the team library refused a write: {text}")
    if any(w in low for w in _UNREACHABLE):
        return TeamUnavailableError(
            f"the team's primary at {url} cannot be reached ({text}); reads go on from the "
            "replica, and shared runs wait in the outbox until `agentmem team sync` can push "
            "them (a primary that asks for a token refuses without one: see --token-file)"
        )
    return TeamError(f"libSQL client error: {text}")


@contextlib.contextmanager
def replica_lock(replica: str | os.PathLike[str], *, wait: float = 60.0) -> Iterator[bool]:
    """Hold the replica's writer lock; yields False when ``wait`` is 0 and it is taken."""
    path = lock_path(replica)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    if wait <= 0:
                        yield False
                        return
                    raise TeamError(
                        f"another agentmem process is syncing {replica}; try again"
                    ) from None
                time.sleep(0.05)
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


#: What libSQL's client and agentmem keep beside a replica file.
REPLICA_SUFFIXES = (
    "",
    "-wal",
    "-shm",
    "-client_wal_index",
    "-info",
    ".synced",
    ".attempt",
    ".lock",
)


def private_files(replica: str | os.PathLike[str]) -> None:
    """Make the replica's files its owner's only (0600), however they were created."""
    for suffix in REPLICA_SUFFIXES:
        p = f"{replica}{suffix}"
        if os.path.isfile(p) and not os.path.islink(p):
            os.chmod(p, 0o600)


@contextlib.contextmanager
def private_umask() -> Iterator[None]:
    """Files created inside are their owner's only (libSQL's client creates the replica's)."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def check_credential(config: TeamConfig) -> str:
    """The lessons token, refused here already when its file says it has expired."""
    cred = config.credential()
    if cred.expires_at is not None and float(cred.expires_at) < time.time():
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(cred.expires_at)))
        raise TeamRefusedError(
            f"this laptop's team token {cred.name or ''} expired on {when}: ask for a new one "
            "(`agentmem team token add NAME --replace` on the team's server) and run "
            "`agentmem team join URL --token-file FILE` again"
        )
    return cred.lessons


def open_remote(config: TeamConfig) -> Any:
    """libSQL's client on the replica file, synced once (raises when the primary is away).

    Hold :func:`replica_lock` while it is open.
    """
    libsql = _libsql()
    url = config.http_url()
    token = check_credential(config)
    private_files(config.replica)
    try:
        with private_umask():
            conn = libsql.connect(
                config.replica, sync_url=url, auth_token=token, isolation_level=None
            )
            conn.sync()
    except ValueError as e:
        error = translate(e, config.url)
        if isinstance(error, TeamUnavailableError):
            _refused_or_away(url, token)  # libSQL's client says "timeout" for a refused token
        raise error from None
    finally:
        private_files(config.replica)
    return conn


def _refused_or_away(url: str, token: str) -> None:
    """Raise :class:`TeamRefusedError` if the primary answers but refuses ``token``."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(
        url.rstrip("/") + "/v2/pipeline",
        data=b'{"requests": []}',
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=5):
            return
    except urllib.error.HTTPError as e:
        if e.code in (401, 403):
            detail = e.read()[:200].decode("utf-8", "replace")
            raise TeamRefusedError(
                f"the team's primary at {url} refused this laptop's token ({e.code}: {detail}): "
                "expired, revoked, or never issued there; ask for a new one "
                "(`agentmem team token add NAME` on the team's server)"
            ) from None
    except (urllib.error.URLError, OSError, ValueError):
        return


def sync(config: TeamConfig) -> None:
    """Pull the primary's changes into the replica (holding the lock) and stamp the time."""
    with replica_lock(config.replica):
        conn = open_remote(config)
        conn.close()
    mark_synced(config.replica)


def open_readonly(replica: str | os.PathLike[str]) -> Any:
    """The replica file as a read-only agentmem database (sqlite-vec loaded), no network."""
    from ..db import connect

    p = Path(replica).resolve()
    if not p.is_file():
        raise TeamError(f"the team replica {p} does not exist yet: run `agentmem team sync`")
    return connect(f"file:{quote(str(p))}?mode=ro")


class _Cursor:
    """A fetched result that iterates, as sqlite3's cursor does."""

    def __init__(self, cur: Any) -> None:
        self.description = cur.description
        self.rows: list[tuple[Any, ...]] = cur.fetchall() if cur.description else []
        self.lastrowid = cur.lastrowid
        self.rowcount = cur.rowcount
        self._i = 0

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._i >= len(self.rows):
            return None
        self._i += 1
        return self.rows[self._i - 1]

    def fetchall(self) -> list[tuple[Any, ...]]:
        out, self._i = self.rows[self._i :], len(self.rows)
        return out

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.fetchall())


def _params(params: Sequence[Any] | None) -> tuple[Any, ...]:
    return tuple(params) if params is not None else ()


class _Conn:
    """The connection side: ``execute``, ``executemany``, ``in_transaction``, a change count."""

    def __init__(self, conn: Any, url: str) -> None:
        self._conn = conn
        self._url = url
        #: Statements run so far; stands in for ``total_changes`` (it only grows).
        self.total_changes = 0

    @property
    def in_transaction(self) -> bool:
        return bool(self._conn.in_transaction)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> _Cursor:
        self.total_changes += 1
        try:
            return _Cursor(self._conn.execute(sql, _params(params)))
        except ValueError as e:
            raise translate(e, self._url) from None

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> _Cursor:
        rows = [tuple(r) for r in rows]
        self.total_changes += 1
        if not rows:
            return _Cursor(self._conn.execute("SELECT 1 WHERE 0"))
        try:
            return _Cursor(self._conn.executemany(sql, rows))
        except ValueError as e:
            raise translate(e, self._url) from None


class RemoteDb:
    """Just enough of ``sqlite_utils.Database`` over libSQL's client for agentmem's writers.

    Statements inside a transaction run on the primary (libSQL delegates them),
    so reads there see the primary's current state under its write lock: a
    compare-and-set is a read and a write in one such transaction.
    """

    def __init__(self, conn: Any, url: str = "the primary") -> None:
        self.conn = _Conn(conn, url)
        self._savepoints = 0

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> _Cursor:
        return self.conn.execute(sql, params)

    @contextlib.contextmanager
    def atomic(self) -> Iterator[RemoteDb]:
        """A savepoint inside the current transaction (as sqlite-utils' ``atomic``)."""
        self._savepoints += 1
        name = f"agentmem_team_{self._savepoints}"
        self.execute(f"SAVEPOINT {name}")
        try:
            yield self
        except BaseException:
            self.execute(f"ROLLBACK TO {name}")
            self.execute(f"RELEASE {name}")
            raise
        else:
            self.execute(f"RELEASE {name}")

    def close(self) -> None:
        self.conn._conn.close()


def embedder_problem(info: tuple[str, int] | None, mine: tuple[str, int]) -> str | None:
    """Why a team replica whose vector index is ``info`` (None: none) cannot be searched
    with the embedder ``mine`` (``(model_id, dims)``), or None when it can."""
    if info is None:
        return (
            "the team library has no pinned embedder: its primary was not set up by "
            "`agentmem team serve`"
        )
    if tuple(info) != tuple(mine):
        return (
            f"this team's lessons are embedded with {info[0]!r} ({info[1]} dimensions) and "
            f"this laptop uses {mine[0]!r} ({mine[1]} dimensions): one embedder per team, so "
            "this laptop is refused. Use the team's embedder here (AGENTMEM_EMBEDDER, or "
            "`agentmem reindex --embedder NAME` for the private library), then join again"
        )
    return None


def check_embedder(db: Any, embedder: Embedder) -> None:
    """Refuse a laptop whose embedder is not the team's pinned one."""
    from ..storage import vector_index

    problem = embedder_problem(vector_index.index_info(db), (embedder.model_id, embedder.dims))
    if problem is not None:
        raise TeamError(problem)
