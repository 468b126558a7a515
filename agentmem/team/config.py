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

import attrs

__all__ = [
    "DEFAULT_SYNC_INTERVAL",
    "SETTING",
    "TeamConfig",
    "last_sync",
    "lock_path",
    "mark_synced",
    "replica_path_for",
    "stamp_path",
]

#: The ``settings`` key that holds a laptop's membership.
SETTING = "team"
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

    @classmethod
    def from_setting(cls, value: Any) -> TeamConfig:
        if not isinstance(value, dict):
            raise ValueError("the team setting must be a JSON object")
        known = {a.name for a in attrs.fields(cls)}
        return cls(**{k: v for k, v in value.items() if k in known})

    def as_setting(self) -> dict[str, Any]:
        return attrs.asdict(self)

    def token(self) -> str:
        """The token the primary asks for ('' when there is no token file)."""
        if not self.token_file:
            return ""
        return Path(self.token_file).read_text(encoding="utf-8").strip()

    def http_url(self) -> str:
        """The URL as libsql's client wants it (``libsql://`` means https)."""
        if self.url.startswith("libsql://"):
            return "https://" + self.url[len("libsql://") :]
        return self.url


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
    tmp.write_text(json.dumps(info or {}), encoding="utf-8")
    os.replace(tmp, p)
