"""A laptop's team membership: where the primary is, where the replica lives, how often to sync.

The membership is one JSON setting, ``team``, in the laptop's private library, so
that every reader of the library (the CLI, the MCP server, the fast ``context``
path) finds the replica without another file. The replica sits next to the
library: ``agent.db`` gains ``agent.team.db``. The time of the last successful
sync is the modification time of a stamp file beside the replica
(``agent.team.db.synced``), so that a reader learns it with one ``stat``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import attrs

from ..errors import TeamError
from ..files import read_regular
from ..jsonsafe import loads

__all__ = [
    "DEFAULT_SYNC_INTERVAL",
    "FORMAT",
    "SETTING",
    "Credential",
    "TeamConfig",
    "last_sync",
    "lock_path",
    "mark_synced",
    "read_token_file",
    "replica_path_for",
    "runs_url_for",
    "stamp_path",
]

#: The ``settings`` key that holds a laptop's membership.
SETTING = "team"
#: What marks a token file written by ``agentmem team token add``.
FORMAT = "agentmem-team-token/1"
#: Seconds between background syncs started by reads (``context``, ``retrieve``).
DEFAULT_SYNC_INTERVAL = 60.0


def _url(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not value.startswith(("http://", "https://", "libsql://")):
        raise ValueError(
            f"{attribute.name} must be an http://, https:// or libsql:// URL, not {value!r}"
        )


def _non_negative(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value >= 0:
        raise ValueError(f"{attribute.name} must be 0 or more seconds, not {value!r}")


@attrs.frozen
class Credential:
    """A laptop's token file, read: the JWT for each primary and what it says it is.

    ``role`` and ``name`` are what the file claims, for messages only: the
    primaries enforce the JWTs whatever a file says."""

    lessons: str
    runs: str
    name: str | None = None
    role: str | None = None
    expires_at: float | None = None
    #: The token's private key that signs the items it pushes (None: a token issued
    #: before items were signed; its items are taken as nobody's).
    signing_key: str | None = attrs.field(default=None, repr=False)


def read_token_file(path: str | os.PathLike[str]) -> Credential:
    """Read a token file written by ``agentmem team token add`` (or a bare JWT, used for
    both primaries)."""
    p = Path(path)
    try:
        text = read_regular(p, 1 << 16).decode("utf-8", "replace").strip()
    except OSError as e:
        raise TeamError(f"token file {p} cannot be read: {e.strerror or e}") from None
    if not text.startswith("{"):
        return Credential(text, text)
    try:
        value = loads(text, what=str(p), max_bytes=1 << 16)
        return Credential(
            lessons=str(value["lessons"]),
            runs=str(value["runs"]),
            name=value.get("name"),
            role=value.get("role"),
            expires_at=value.get("expires_at"),
            signing_key=value.get("signing_key"),
        )
    except (ValueError, KeyError, TypeError):
        raise TeamError(f"{p} is not an agentmem team token file") from None


@attrs.frozen
class TeamConfig:
    """A laptop's membership of one team library.

    ``sync_interval`` is how old the replica may get before a read starts a
    background sync (0: only ``agentmem team sync`` syncs). ``share`` makes every
    run recorded in this library shared with the team (otherwise only runs
    recorded or imported with ``share=True`` / ``--share`` are).
    """

    url: str = attrs.field(validator=_url)
    replica: str
    token_file: str | None = None
    sync_interval: float = attrs.field(default=DEFAULT_SYNC_INTERVAL, validator=_non_negative)
    share: bool = False
    #: The runs primary (the inbox members push to); None: the lessons URL's port + 1.
    runs_url: str | None = attrs.field(default=None, validator=attrs.validators.optional(_url))

    @classmethod
    def from_setting(cls, value: Any) -> TeamConfig:
        if not isinstance(value, dict):
            raise ValueError("the team setting must be a JSON object")
        known = {a.name for a in attrs.fields(cls)}
        return cls(**{k: v for k, v in value.items() if k in known})

    def as_setting(self) -> dict[str, Any]:
        return attrs.asdict(self)

    def credential(self) -> Credential:
        """This laptop's token file, read ('' tokens when there is none)."""
        if not self.token_file:
            return Credential("", "")
        return read_token_file(self.token_file)

    def token(self) -> str:
        """The token the lessons primary asks for ('' when there is no token file)."""
        return self.credential().lessons

    def http_url(self) -> str:
        """The URL as libsql's client wants it (``libsql://`` means https)."""
        return _http(self.url)

    def runs_http_url(self) -> str:
        """Where the runs primary is: ``runs_url``, else the lessons URL with its port + 1."""
        if self.runs_url:
            return _http(self.runs_url)
        return runs_url_for(self.http_url())


def _http(url: str) -> str:
    if url.startswith("libsql://"):
        return "https://" + url[len("libsql://") :]
    return url


def runs_url_for(url: str) -> str:
    """The runs primary's URL that ``agentmem team serve`` pairs with a lessons URL: the
    same scheme and host, the next port (``http://desk:8080`` -> ``http://desk:8081``)."""
    parts = urlsplit(_http(url))
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return urlunsplit((parts.scheme, f"{host}:{port + 1}", parts.path, "", ""))


def replica_path_for(library: str | os.PathLike[str]) -> Path:
    """``agent.db`` -> ``agent.team.db``, in the same folder."""
    p = Path(library)
    return p.with_name(f"{p.stem}.team{p.suffix or '.db'}")


def stamp_path(replica: str | os.PathLike[str]) -> Path:
    return Path(f"{replica}.synced")


def lock_path(replica: str | os.PathLike[str]) -> Path:
    """The lock file that serialises the replica's writers (syncs, pushes, learning)."""
    return Path(f"{replica}.lock")


def last_sync(replica: str | os.PathLike[str]) -> float | None:
    """When the replica last synced (seconds since the epoch), or None if never."""
    try:
        return stamp_path(replica).stat().st_mtime
    except OSError:
        return None


def mark_synced(replica: str | os.PathLike[str], info: dict[str, Any] | None = None) -> None:
    p = stamp_path(replica)
    tmp = p.with_name(p.name + ".tmp")
    fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(info or {}))
    os.replace(tmp, p)
