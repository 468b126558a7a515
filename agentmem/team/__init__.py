"""Sharing with a team: a team library on libSQL's ``sqld``, an embedded replica per laptop.

A laptop keeps its private library and gains a replica of the team library next
to it. Reads (``context``, ``retrieve``) search both, locally; shared runs wait
in an outbox until ``agentmem team sync`` pushes them to the team's inbox; the
team's learner takes the inbox in (validated) and applies its learning sessions
on the primary, claimed per group and as compare-and-set. Only the learner's
token may write the team library; members' tokens read it.

Modules, one concern each: :mod:`~agentmem.team.config` (the membership
setting), :mod:`~agentmem.team.server` (the two sqld processes and the team schema),
:mod:`~agentmem.team.tokens` (who may do what: a key pair per token),
:mod:`~agentmem.team.hrana` (sqld's HTTP pipeline),
:mod:`~agentmem.team.inbox` (shared runs from members, validated by the learner),
:mod:`~agentmem.team.replica` (libSQL's client: sync and delegated writes),
:mod:`~agentmem.team.reads` (search the replica, merge, mark),
:mod:`~agentmem.team.outbox` (shared runs, pushed idempotently),
:mod:`~agentmem.team.claims` (claims and compare-and-set apply),
:mod:`~agentmem.team.signing` (who pushed an inbox item: a key per token),
:mod:`~agentmem.team.support` (which members stand behind a lesson; one member's held),
:mod:`~agentmem.team.learning` (team learn and undo),
:mod:`~agentmem.team.membership` (join, sync, status, leave).

Names are imported on first use: the fast ``context`` path imports
:mod:`~agentmem.team.reads` alone.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import TeamConfig
    from .learning import learn, undo
    from .membership import SyncReport, join, leave, status, sync
    from .reads import merge_hits
    from .server import bootstrap, start

__all__ = [
    "SyncReport",
    "TeamConfig",
    "bootstrap",
    "join",
    "learn",
    "leave",
    "merge_hits",
    "start",
    "status",
    "sync",
    "undo",
]

_HOME = {
    "TeamConfig": "config",
    "learn": "learning",
    "undo": "learning",
    **dict.fromkeys(["SyncReport", "join", "leave", "status", "sync"], "membership"),
    "merge_hits": "reads",
    **dict.fromkeys(["bootstrap", "start"], "server"),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
