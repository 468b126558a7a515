"""Reading the team library next to the private one: which replica rows may be served,
the merge, the mark.

Reads never touch the network: the replica is a local SQLite file, searched
read-only with the same index code as the private library
(:func:`agentmem.serving.team_lessons`, the one place that searches it). A read whose replica
is older than the team's ``sync_interval`` starts ``agentmem team sync`` in the
background and answers at once from what the replica holds.

:func:`merge_hits` is the whole merge policy, a pure function of two ranked
lists. This module imports nothing heavy, so the fast ``agentmem context`` path
can use it.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "TEAM_MARK",
    "lesson_text_ok",
    "mark",
    "merge_hits",
    "row_ok",
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


#: A domain as :class:`agentmem.records.Experience` accepts it (not imported: the fast path).
_DOMAIN = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


def row_ok(row: Mapping[str, Any]) -> bool:
    """Whether a replica's row is an experience :class:`agentmem.records.Experience` can
    read (its text checked by :func:`lesson_text_ok`): an integer id and a domain that is
    empty or a short lower-case name. A row that is not is left out of every answer, the
    prompt's and the API's alike."""
    domain = row.get("domain")
    if not isinstance(domain, str) or (domain and not _DOMAIN.fullmatch(domain)):
        return False
    eid = row.get("id")
    return isinstance(eid, int) and not isinstance(eid, bool)


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
