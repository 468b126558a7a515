"""Reading the team library next to the private one: search the replica, merge, mark.

Reads never touch the network: the replica is a local SQLite file, searched
read-only with the same index code as the private library. A read whose replica
is older than the team's ``sync_interval`` starts ``agentmem team sync`` in the
background and answers at once from what the replica holds.

:func:`merge_hits` is the whole merge policy, a pure function of two ranked
lists. This module imports nothing heavy, so the fast ``agentmem context`` path
can use it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ..embeddings import Embedder
    from ..retrieval.retriever import Scored

__all__ = [
    "TEAM_MARK",
    "add_team_hits",
    "lesson_text_ok",
    "mark",
    "merge_hits",
    "start_background_sync",
]

T = TypeVar("T")

#: What a team lesson is prefixed with in a ``context`` block.
TEAM_MARK = "(team) "
#: A lesson's words at most (``records.MAX_EXPERIENCE_WORDS``; not imported: the fast path).
_MAX_WORDS = 32
#: And its characters at most (32 long words; a wall of text is no lesson).
_MAX_CHARS = 400


def lesson_text_ok(text: object) -> bool:
    """Whether a team lesson may be injected as it is: text of at most 32 words and 400
    characters, on one line, with no control, format or separator characters (no
    newline to open a bullet of its own, no bidi override, no escape sequence).

    The replica is another machine's data: whatever its file holds, a lesson that
    breaks these rules is never put into a prompt."""
    if not isinstance(text, str) or not text.strip() or len(text) > _MAX_CHARS:
        return False
    # isprintable: no character of Unicode's "Other" or "Separator" categories but " ".
    if len(text.split()) > _MAX_WORDS or not text.isprintable():
        return False
    # and the rule every lesson is served by (markup, words addressed to the reader)
    from ..sanitize import servable

    return servable(text) is not None


def mark(text: str, source: str) -> str:
    return TEAM_MARK + text if source == "team" else text


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def merge_hits(
    private: Sequence[T],
    team: Sequence[T],
    *,
    k: int,
    score: Callable[[T], float],
    text: Callable[[T], str],
) -> list[tuple[str, T]]:
    """The ``k`` best of two ranked lists as ``(source, hit)``, source ``private`` or ``team``.

    Best score first; on a tie the private hit comes first. A team hit with the
    same text as a private one (case and spacing aside) is the same lesson and
    is left out: the laptop's own copy stands.
    """
    seen = {_norm(text(h)) for h in private}
    both = [(score(h), 0, i, "private", h) for i, h in enumerate(private)]
    both += [(score(h), 1, i, "team", h) for i, h in enumerate(team) if _norm(text(h)) not in seen]
    both.sort(key=lambda x: (-x[0], x[1], x[2]))
    return [(src, h) for _, _, _, src, h in both[:k]]


def config_of(settings: dict[str, Any]) -> dict[str, Any] | None:
    """The raw team setting from a ``settings`` mapping (JSON strings), or None."""
    raw = settings.get("team")
    if raw is None:
        return None
    value = json.loads(raw) if isinstance(raw, str) else raw
    return value if isinstance(value, dict) and value.get("replica") else None


def _attempt_path(replica: str) -> Path:
    return Path(f"{replica}.attempt")


def start_background_sync(library: str, team: dict[str, Any]) -> bool:
    """Start ``agentmem team sync`` in the background if the replica is older than the
    team's ``sync_interval``; never waits for it. True if one was started."""
    interval = float(team.get("sync_interval") or 0)
    if interval <= 0:
        return False
    replica = str(team["replica"])
    now = time.time()
    for p in (Path(f"{replica}.synced"), _attempt_path(replica)):
        try:
            if now - p.stat().st_mtime < interval:
                return False
        except OSError:
            pass
    import subprocess  # here: the prompt-hook path imports this module, and rarely syncs

    try:
        _attempt_path(replica).touch()
        subprocess.Popen(
            [sys.executable, "-m", "agentmem", "team", "sync", "--quiet", "--db", library],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return False
    return True


def _checked_hits(
    db: Any,
    embed: Callable[[str], Sequence[float]],
    task: str,
    tools: Sequence[str] | None,
    domains: Sequence[str] | None,
    k: int,
    min_score: float | None,
    project: str | None = None,
) -> list[Scored]:
    """The replica's hits for ``task`` as team hits, leaving out every row whose lesson
    breaks the text rules (:func:`lesson_text_ok`) or is no valid experience at all: one
    bad row in another machine's file never stops the read."""
    from ..errors import InvalidRecordError
    from ..records import Experience
    from ..retrieval.pipeline import search
    from ..retrieval.retriever import Scored

    out = []
    found = search(
        db, task, embed, tools=tools, domains=domains, k=k, min_score=min_score, project=project
    )
    for f in found:
        if not lesson_text_ok(f.text):
            continue
        try:
            experience = Experience.from_row(f.row)
        except (InvalidRecordError, ValueError, TypeError):
            continue
        out.append(Scored(experience, f.score, f.evidence, f.reason, source="team"))
    return out


def add_team_hits(
    db: Any,
    library: str | None,
    embedder: Embedder,
    task: str,
    private: list[Scored],
    *,
    tools: Sequence[str] | None = None,
    domains: Sequence[str] | None = None,
    k: int,
    min_score: float | None = None,
    project: str | None = None,
) -> list[Scored]:
    """``private`` merged with the team replica's hits for ``task`` (unchanged outside a team).

    ``project`` (a project root): team lessons scoped to another project or machine are
    left out, as the private ones are.

    ``db`` is the private library (its file ``library``), searched with ``embedder``.
    Team hits carry ``source='team'``. A replica built with another embedder is
    refused with :class:`~agentmem.errors.TeamError`.
    """
    from ..storage import settings

    team = config_of(settings.raw(db, [settings.TEAM]))
    if team is None or library is None:
        return private
    start_background_sync(library, team)
    replica = str(team["replica"])
    if not os.path.isfile(replica):
        return private
    from ..db import sqlite3
    from ..retrieval.retriever import Retriever
    from .replica import check_embedder, open_readonly

    try:
        replica_db = open_readonly(replica)
    except sqlite3.Error:
        return private  # a replica still being created: the private lessons alone
    try:
        try:
            settings.raw(replica_db)
        except sqlite3.Error:
            return private
        check_embedder(replica_db, embedder)
        team_hits = _checked_hits(
            replica_db,
            Retriever(replica_db, embedder).vector,
            task,
            tools,
            domains,
            k,
            min_score,
            project,
        )
    finally:
        replica_db.close()
    merged = merge_hits(
        private, team_hits, k=k, score=lambda h: h.score, text=lambda h: h.experience.text
    )
    return [h for _, h in merged]
