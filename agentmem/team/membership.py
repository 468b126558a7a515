"""Joining, syncing, leaving: a laptop's life in a team.

``join`` checks the primary once (an agentmem library, of this schema, embedded
with the same model as this laptop) and records the membership in the private
library. ``sync`` pushes the outbox and pulls the primary's changes. ``leave``
forgets the team and deletes the replica; the private library is untouched.
"""

from __future__ import annotations

import contextlib
import os
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import attrs

from ..db import write
from ..errors import TeamError
from ..migrations import KNOWN_MIGRATIONS, applied_names
from ..storage import experiences, journal, settings, trajectories
from ..storage import outbox as outbox_table
from . import inbox, outbox, tokens
from .config import SETTING, TeamConfig, last_sync, mark_synced, replica_path_for
from .replica import (
    REPLICA_SUFFIXES,
    RemoteDb,
    check_credential,
    check_embedder,
    open_readonly,
    open_remote,
    replica_lock,
)
from .server import is_loopback
from .signing import Signer

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = [
    "DATA_ONLY",
    "SyncReport",
    "check_embedder",
    "check_schema",
    "check_transport",
    "config",
    "data_migrations_due",
    "is_learner",
    "join",
    "leave",
    "status",
    "sync",
]


def config(mem: Memory) -> TeamConfig:
    """This library's team membership, or :class:`TeamError` when it has none."""
    value = mem.get_setting(SETTING)
    if value is None:
        raise TeamError("this library is not in a team: run `agentmem team join URL` first")
    return TeamConfig.from_setting(value)


#: Migrations a team primary may lack: they change rows only (m018) or add tables a team
#: library never uses (m019, practice). A primary that lacks only these (the last ones)
#: still serves this agentmem, and the team's learner applies them there
#: (:func:`agentmem.team.learning.learn`).
DATA_ONLY = ("m018_redact_stored", "m019_practice")


def data_migrations_due(applied: Any) -> list[str]:
    """The :data:`DATA_ONLY` migrations a primary with these ``applied`` ones lacks, when
    it lacks nothing else (else [])."""
    have = tuple(applied or ())
    due = [m for m in KNOWN_MIGRATIONS if m not in have]
    if due and all(m in DATA_ONLY for m in due) and have == KNOWN_MIGRATIONS[: len(have)]:
        return due
    return []


def check_schema(db: Any) -> None:
    """Refuse a primary that is not an agentmem library of this schema (one that lacks
    only data migrations is of this schema: its learner applies them)."""
    applied = applied_names(db)
    if applied is None:
        raise TeamError(
            "the primary holds no agentmem library: start it with `agentmem team serve`"
        )
    if tuple(applied) != KNOWN_MIGRATIONS and not data_migrations_due(applied):
        newer = [m for m in applied if m not in KNOWN_MIGRATIONS]
        older = [m for m in KNOWN_MIGRATIONS if m not in applied]
        what = (
            f"a newer agentmem (migration {', '.join(newer)}): upgrade agentmem here"
            if newer
            else f"an older agentmem (lacks {', '.join(older)}): every member and the primary "
            "must run the same agentmem version"
        )
        raise TeamError(f"the team library was set up by {what}")


def check_transport(url: str, *, insecure: bool = False) -> None:
    """Refuse to send a token in clear (``http://``) beyond this machine unless ``insecure``."""
    parts = urlsplit(url)
    if parts.scheme == "http" and not is_loopback(parts.hostname or "") and not insecure:
        raise TeamError(
            f"{url} is plain http:// to another machine: the team token would travel in clear. "
            "Put TLS in front of sqld (a reverse proxy such as Caddy; see the README) and join "
            "with https://, or pass --insecure on a network you trust"
        )


def _private_token_file(path: Path) -> None:
    """A token file readable by others is made its owner's only (when it is ours)."""
    st = path.stat()
    if st.st_mode & 0o077 and st.st_uid == os.getuid():
        os.chmod(path, 0o600)


def join(
    mem: Memory,
    url: str,
    *,
    token_file: str | None = None,
    sync_interval: float | None = None,
    share: bool = False,
    runs_url: str | None = None,
    insecure: bool = False,
) -> TeamConfig:
    """Join the team library at ``url`` with the token in ``token_file``: sync a replica
    next to the library and check it. Plain ``http://`` to another machine is refused
    unless ``insecure``."""
    if mem.path is None or mem.path.startswith(":memory:"):
        raise TeamError("an in-memory library cannot join a team")
    replica = replica_path_for(mem.path)
    kw: dict[str, Any] = {}
    if sync_interval is not None:
        kw["sync_interval"] = sync_interval
    try:
        cfg = TeamConfig(
            url=url,
            replica=str(replica.resolve()),
            token_file=str(Path(token_file).resolve()) if token_file else None,
            share=share,
            runs_url=runs_url,
            **kw,
        )
    except ValueError as e:
        raise TeamError(str(e)) from None
    check_transport(cfg.http_url(), insecure=insecure)
    check_transport(cfg.runs_http_url(), insecure=insecure)
    if token_file is None:
        raise TeamError(
            "joining a team needs a token: --token-file FILE, issued on the team's server "
            "with `agentmem team token add NAME`"
        )
    if not Path(token_file).is_file():
        raise TeamError(f"token file {token_file} does not exist")
    _private_token_file(Path(token_file))
    existing = mem.get_setting(SETTING)
    if existing is not None and existing.get("url") != url:
        raise TeamError(
            f"this library is already in the team at {existing.get('url')}: "
            "run `agentmem team leave` first"
        )
    with replica_lock(cfg.replica):
        conn = open_remote(cfg)
        conn.close()
    db = open_readonly(cfg.replica)
    try:
        check_schema(db)
        check_embedder(db, mem.embedder)
    except TeamError:
        db.close()
        _remove_replica(cfg.replica)
        raise
    db.close()
    if mem.get_setting("embedder") is None and mem.embedder_name is not None:
        mem.set_setting("embedder", mem.embedder_name)  # every process here embeds alike
    mem.set_setting(SETTING, cfg.as_setting())
    mark_synced(cfg.replica)
    return cfg


@attrs.frozen
class SyncReport:
    """What a sync did: items pushed to the inbox (and how many were new there), items
    still waiting, and, on a learner's laptop, inbox items taken into the team library
    and refused by validation."""

    pushed: int
    inserted: int
    pending: int
    seconds: float
    collected: int = 0
    refused: int = 0


def is_learner(cfg: TeamConfig) -> bool:
    """Whether this laptop's token file says it is the team's learner's (the primaries
    decide what it may do; this only decides what to try)."""
    return cfg.credential().role == tokens.LEARNER


def sync(mem: Memory, *, push: bool = True, collect: bool | None = None) -> SyncReport:
    """Push the outbox to the runs primary (unless ``push`` is False) and pull the lessons
    primary's changes. ``collect`` (default: when this laptop holds a learner's token)
    first takes the inbox's runs into the team library."""
    cfg = config(mem)
    t0 = time.perf_counter()
    cred = cfg.credential()
    report = outbox.PushReport(0, 0, 0, outbox.pending(mem.db))
    taken = inbox.CollectReport()
    with replica_lock(cfg.replica):
        check_credential(cfg)
        if push and report.left:
            runs_url = cfg.runs_http_url()
            signer = _signer(cred)
            report = outbox.push(
                mem.db,
                lambda items, at: inbox.push(
                    runs_url, items, token=cred.runs, at=at, signer=signer
                ),
            )
        conn = open_remote(cfg)
        try:
            if collect if collect is not None else is_learner(cfg):
                taken = inbox.collect(RemoteDb(conn, cfg.url), cfg.runs_http_url(), token=cred.runs)
                conn.sync()
        finally:
            conn.close()
    mark_synced(cfg.replica)
    return SyncReport(
        pushed=report.sent,
        inserted=report.inserted,
        pending=report.left,
        seconds=time.perf_counter() - t0,
        collected=taken.taken,
        refused=taken.refused_count,
    )


def _signer(cred: tokens.Credential) -> Signer | None:
    """What signs this laptop's pushed items: its token's signing key (None: a token
    issued before items were signed, whose items the learner takes as nobody's)."""
    if not cred.signing_key or not cred.name:
        return None
    try:
        return Signer(cred.name, cred.signing_key)
    except (ImportError, ValueError, TypeError):
        raise TeamError(
            f"the token file's signing key cannot be read (needs the cryptography package: "
            f"pip install 'agentmem[team]'); ask for a new token for {cred.name}"
        ) from None


def _primary_answers(cfg: TeamConfig, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(cfg.http_url().rstrip("/") + "/health", timeout=timeout):
            return True
    except (urllib.error.URLError, OSError, ValueError):
        return False


def status(mem: Memory, *, ping: bool = True) -> dict[str, Any]:
    """The membership, the replica's age and contents, the outbox, and whether the primary
    answers (``ping``; the only part that uses the network)."""
    cfg = config(mem)
    synced = last_sync(cfg.replica)
    out: dict[str, Any] = {
        "url": cfg.url,
        "replica": cfg.replica,
        "token_file": cfg.token_file,
        "token": _token_info(cfg),
        "runs_url": cfg.runs_http_url(),
        "share": cfg.share,
        "sync_interval": cfg.sync_interval,
        "last_sync_seconds_ago": None if synced is None else round(time.time() - synced, 1),
        "outbox_pending": outbox.pending(mem.db),
    }
    if os.path.isfile(cfg.replica):
        db = open_readonly(cfg.replica)
        try:
            from ..storage import vector_index

            out["team_experiences"] = experiences.count_live(db)
            out["team_trajectories"] = trajectories.count(db)
            out["team_sessions"] = journal.counts(db)[0]
            model = settings.get(db, vector_index.MODEL_KEY)
            out["team_embedder"] = None if model is None else str(model)
        finally:
            db.close()
    if ping:
        out["primary_reachable"] = _primary_answers(cfg)
    return out


def _token_info(cfg: TeamConfig) -> str | None:
    try:
        cred = cfg.credential()
    except TeamError as e:
        return str(e)
    if cred.role is None:
        return None
    until = (
        ""
        if cred.expires_at is None
        else time.strftime(" until %Y-%m-%d", time.gmtime(float(cred.expires_at)))
    )
    return f"{cred.name} ({cred.role}{until})"


def _remove_replica(replica: str) -> None:
    for suffix in REPLICA_SUFFIXES:
        with contextlib.suppress(FileNotFoundError):
            os.remove(replica + suffix)


def leave(mem: Memory, *, force: bool = False) -> int:
    """Forget the team and delete the replica; returns the unpushed items dropped.

    Refuses while shared runs wait in the outbox, unless ``force``.
    """
    cfg = config(mem)
    waiting = outbox.pending(mem.db)
    if waiting and not force:
        raise TeamError(
            f"{waiting} shared item(s) have not reached the team yet: run `agentmem team sync` "
            "first, or `agentmem team leave --force` to drop them"
        )
    with write(mem.db):
        outbox_table.drop_pending(mem.db)
        settings.delete(mem.db, SETTING)
    with replica_lock(cfg.replica, wait=10):
        _remove_replica(cfg.replica)
    return waiting
