"""Who may do what on the team's primaries: one Ed25519 key pair per token, JWTs sqld checks.

The team runs two sqld processes (:mod:`~agentmem.team.server`): the *lessons*
primary (the team library every replica syncs) and the *runs* primary (an inbox
of shared runs). Both check every request's bearer token against a file of
trusted public keys (``sqld --auth-jwt-key-file``; several PEM keys per file);
sqld itself enforces what a token may do:

* a **member** token holds two JWTs. On the lessons primary ``{"a": "ro"}``: it
  syncs and reads, and every write (a Hrana statement, a write delegated by
  libSQL's client) is refused with 403. On the runs primary ``{"a": "rw"}``: it
  appends shared runs to the inbox, which holds no lessons.
* a **learner** token is read-write on both: it takes the inbox's runs into the
  team library (each one validated) and applies learning sessions there.

Each token is signed by its own key pair, made when the token is issued; the
private key is used once and never stored. The lessons primary trusts only the
keys of lessons JWTs and the runs primary only those of runs JWTs, so a
member's read-write runs JWT is no credential on the lessons primary. Every JWT
has an expiry (``exp``, which sqld checks, with 60 s of leeway). sqld keeps no
revocation list: revoking a token drops its public keys from the trusted files,
and ``agentmem team serve`` restarts sqld on the new files within a second.

The registry of issued tokens is ``DATA/tokens.json`` (public keys, names,
roles, expiry; 0600 in a 0700 folder).
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from ..errors import TeamError
from ..files import read_regular
from ..jsonsafe import loads
from .config import FORMAT, Credential, read_token_file

__all__ = [
    "LEARNER",
    "MEMBER",
    "Credential",
    "Issued",
    "add",
    "key_files",
    "list_tokens",
    "members",
    "parse_duration",
    "read_token_file",
    "registry_path",
    "revoke",
    "setup_token",
]

LEARNER = "learner"
MEMBER = "member"
ROLES = (LEARNER, MEMBER)
#: A token's life when ``--expires`` is not given.
DEFAULT_EXPIRY = 30 * 86400.0
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


#: The longest life a token may be given: 100 years (beyond it, time_t overflows on some
#: platforms and nothing is gained).
MAX_EXPIRY = 100 * 365 * 86400.0


def parse_duration(text: str) -> float:
    """``30d``, ``12h``, ``2w``, ``90m``, ``3600s`` (or plain seconds) -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text or "")
    if not m or float(m.group(1)) <= 0:
        raise TeamError(f"an expiry is a positive duration such as 30d, 12h or 2w, not {text!r}")
    seconds = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if seconds > MAX_EXPIRY:
        raise TeamError(f"an expiry is at most 100 years (36500d), not {text!r}")
    return seconds


def _crypto() -> Any:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    except ImportError:
        raise TeamError(
            "making a token needs the cryptography package: pip install 'agentmem[team]'"
        ) from None
    return serialization, Ed25519PrivateKey


def _b64(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode("ascii")


def _jwt(claims: dict[str, Any]) -> tuple[str, str]:
    """A JWT for ``claims`` signed by a fresh key pair: (token, the public key as PEM).

    The private key lives only in this call."""
    serialization, Ed25519PrivateKey = _crypto()
    key = Ed25519PrivateKey.generate()
    pem = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode("ascii")
    )
    header = _b64(json.dumps({"alg": "EdDSA", "typ": "JWT"}).encode())
    body = _b64(json.dumps(claims, sort_keys=True).encode())
    signature = _b64(key.sign(f"{header}.{body}".encode()))
    return f"{header}.{body}.{signature}", pem


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (0600), replacing it."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def registry_path(data: str | os.PathLike[str]) -> Path:
    return Path(data) / "tokens.json"


def _load(data: Path) -> list[dict[str, Any]]:
    path = registry_path(data)
    try:
        value = loads(read_regular(path), what=str(path))
    except FileNotFoundError:
        return []
    except ValueError as e:
        raise TeamError(f"{path} is not a token registry ({e}); restore it or remove it") from None
    rows = value.get("tokens") if isinstance(value, dict) else None
    if not isinstance(rows, list):
        raise TeamError(f"{path} is not a token registry; restore it or remove it")
    return [r for r in rows if isinstance(r, dict)]


def _save(data: Path, rows: list[dict[str, Any]]) -> None:
    private_dir(data)
    write_private(registry_path(data), json.dumps({"tokens": rows}, indent=1) + "\n")


def _live(row: dict[str, Any], now: float) -> bool:
    return not row.get("revoked_at") and float(row.get("expires_at", 0)) + 60 > now


@attrs.frozen
class Issued:
    """A token just issued: where its file is and when it expires."""

    name: str
    role: str
    path: Path
    expires_at: float


def add(
    data: str | os.PathLike[str],
    name: str,
    *,
    role: str = MEMBER,
    expires: float = DEFAULT_EXPIRY,
    out: str | os.PathLike[str] | None = None,
    replace: bool = False,
) -> Issued:
    """Issue a token for ``name`` (a member's, or a learner's) and write its file (0600).

    The file goes to ``out``, else ``DATA/tokens/NAME.token``. A live token of
    the same name is refused unless ``replace``, which revokes it."""
    folder = Path(data).resolve()
    if not _NAME.match(name or ""):
        raise TeamError(
            f"a token name is 1-64 letters, digits, '.', '_' or '-' (first a letter or digit), "
            f"not {name!r}"
        )
    if role not in ROLES:
        raise TeamError(f"a token's role is {' or '.join(ROLES)}, not {role!r}")
    now = time.time()
    rows = _load(folder)
    live = [r for r in rows if r.get("name") == name and _live(r, now)]
    if live and not replace:
        raise TeamError(
            f"a live token named {name!r} exists: revoke it first "
            "(agentmem team token revoke NAME) or issue with --replace"
        )
    for r in live:
        r["revoked_at"] = now
    exp = int(now + expires)
    lessons_claims: dict[str, Any] = {"a": "rw" if role == LEARNER else "ro"}
    common = {"sub": name, "role": role, "iat": int(now), "exp": exp}
    lessons, lessons_key = _jwt({**lessons_claims, **common, "for": "lessons"})
    runs, runs_key = _jwt({"a": "rw", **common, "for": "runs"})
    from .signing import new_key

    signing_key, signing_pub = new_key()  # signs the items this token pushes
    rows.append(
        {
            "name": name,
            "role": role,
            "issued_at": now,
            "expires_at": exp,
            "revoked_at": None,
            "lessons_key": lessons_key,
            "runs_key": runs_key,
            "signing_pub": signing_pub,
        }
    )
    path = Path(out) if out else private_dir(folder / "tokens") / f"{name}.token"
    body = {"format": FORMAT, "name": name, "role": role, "expires_at": exp}
    secrets = {"lessons": lessons, "runs": runs, "signing_key": signing_key}
    write_private(path, json.dumps({**body, **secrets}, indent=1) + "\n")
    _save(folder, rows)
    return Issued(name, role, path.resolve(), float(exp))


def revoke(data: str | os.PathLike[str], name: str) -> int:
    """Revoke every live token named ``name``; how many. A running ``team serve``
    stops accepting them within a second (it restarts sqld on the new key files)."""
    folder = Path(data).resolve()
    now = time.time()
    rows = _load(folder)
    hit = [r for r in rows if r.get("name") == name and _live(r, now)]
    if not hit:
        raise TeamError(f"no live token named {name!r} (agentmem team token list)")
    for r in hit:
        r["revoked_at"] = now
    _save(folder, rows)
    (folder / "tokens" / f"{name}.token").unlink(missing_ok=True)  # if it is still there
    return len(hit)


def list_tokens(data: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every token issued in ``data``: name, role, issued, expires, state."""
    now = time.time()
    out = []
    for r in _load(Path(data).resolve()):
        state = (
            "revoked"
            if r.get("revoked_at")
            else ("expired" if float(r.get("expires_at", 0)) <= now else "live")
        )
        out.append(
            {
                "name": r.get("name"),
                "role": r.get("role"),
                "issued_at": r.get("issued_at"),
                "expires_at": r.get("expires_at"),
                "state": state,
            }
        )
    return out


def members(data: str | os.PathLike[str]) -> dict[str, dict[str, str]]:
    """The live tokens that sign their items, as ``agentmem team serve`` publishes them on
    the lessons primary: name -> {"role", "key"} (the public signing key)."""
    now = time.time()
    out: dict[str, dict[str, str]] = {}
    for r in _load(Path(data).resolve()):
        if _live(r, now) and isinstance(r.get("signing_pub"), str) and r.get("name"):
            out[str(r["name"])] = {"role": str(r.get("role")), "key": str(r["signing_pub"])}
    return out


def setup_token(lifetime: float = 600.0) -> tuple[str, str]:
    """A short-lived read-write JWT for ``team serve``'s own setup: (token, public PEM)."""
    now = int(time.time())
    return _jwt({"a": "rw", "sub": "agentmem team serve", "iat": now, "exp": now + int(lifetime)})


def key_files(data: str | os.PathLike[str], extra: Iterable[str] = ()) -> tuple[Path, Path, float]:
    """Write the trusted keys of live tokens (and ``extra`` PEM keys) for each primary:
    (lessons keys, runs keys, the registry's modification time they reflect)."""
    folder = Path(data).resolve()
    now = time.time()
    rows = [r for r in _load(folder) if _live(r, now)]
    stamp = registry_path(folder).stat().st_mtime if registry_path(folder).exists() else 0.0
    extra = list(extra)
    out = []
    for which in ("lessons", "runs"):
        keys = [str(r[f"{which}_key"]) for r in rows if r.get(f"{which}_key")] + extra
        path = folder / f"{which}.keys.pem"
        write_private(path, "".join(keys))
        out.append(path)
    return out[0], out[1], stamp
