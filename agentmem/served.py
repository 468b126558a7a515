"""The served log: which lessons went into which prompt, beside the library. Standard library only.

Every route that puts lessons into a prompt (the Claude Code and Codex
``UserPromptSubmit`` hooks, ``agentmem context``, MCP ``agentmem_context`` and
``agentmem_retrieve``, :meth:`agentmem.Memory.context`) ends in
:func:`agentmem.serving.serve`, which calls :func:`record` once with what it served.
The prompt hook must stay a reader of the library, so the record is not a row:
it is one line appended (``O_APPEND``, one ``write``) to ``<library>.served.jsonl``:

.. code-block:: json

    {"v": 1, "at": "2026-12-01T17:00:00.000000+00:00", "route": "hook", "session": "1fa2...",
     "project": "/home/me/app", "prompt": "9c1f...", "served": [12, 40], "held": [7],
     "holdout": 0.1, "why": {"12": "names edit, read", "40": "fused score 0.833 >= 0.550"},
     "withheld": {"9": "names a program not on PATH"}, "team": ["Before git push, ..."]}

``prompt`` is :func:`prompt_hash` of the prompt, never its text. ``held`` lists the
lessons the holdout withheld (:func:`split`); ``why``, why retrieval chose each served
lesson; ``withheld`` (only when there is one), the lessons a serving filter kept from
the prompt (:data:`agentmem.serving.FILTERS`) and why; ``team`` (only when there is
one), the texts of the team lessons served, which have no id here. A line is written
only when a lesson was served (a team lesson too), held or withheld: a prompt given
nothing leaves no line. Writing it never fails the caller: an ``OSError`` is swallowed
and counted in :data:`FAILURES`. The next learning session reads the log from where
the last one stopped (:mod:`agentmem.storage.served`); :func:`read` parses it and
skips (and counts) any line that is not a record.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from .files import open_regular
from .jsonsafe import loads
from .timestamps import now_iso

try:  # CPython's own SHA-256: hashlib would load OpenSSL (+3.7 MB in the prompt hook)
    from _sha2 import sha256 as _sha256  # type: ignore[import-not-found]  # 3.12+
except ImportError:  # pragma: no cover - by Python version
    try:
        from _sha256 import sha256 as _sha256  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from hashlib import sha256 as _sha256  # type: ignore[assignment]

__all__ = [
    "FAILURES",
    "HASH_CHARS",
    "HOLDOUT",
    "MAX_READ",
    "SUFFIX",
    "Line",
    "held_out",
    "holdout_share",
    "log_path",
    "prompt_hash",
    "read",
    "record",
    "scrubbed",
    "split",
]

#: The log's name is the library's with this added.
SUFFIX = ".served.jsonl"
#: The setting that holds the holdout share (0 or absent: no holdout).
HOLDOUT = "holdout"
#: How much of the (whitespace-normalised) prompt the hash covers: the hooks pass the
#: first 4000 characters of a prompt, the importers the whole prompt.
HASH_CHARS = 4000
#: The most bytes of the log one read takes (a learning session reads the rest next time).
MAX_READ = 32 * 2**20
#: The most characters of a team lesson's text a line keeps.
MAX_TEAM_CHARS = 400
#: Log writes that failed in this process (the caller never sees the error).
FAILURES = [0]

Line = dict[str, Any]
T = TypeVar("T")


def log_path(db_path: str | os.PathLike[str]) -> str:
    """The served log of the library at ``db_path``."""
    return os.fspath(db_path) + SUFFIX


def prompt_hash(prompt: str) -> str:
    """A prompt's identity in the log: SHA-256 of its first :data:`HASH_CHARS` characters
    with runs of whitespace made one space (32 hex digits)."""
    text = " ".join(prompt[:HASH_CHARS].split())
    return str(_sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32])


def held_out(phash: str, experience_id: int, share: float) -> bool:
    """Whether the holdout withholds lesson ``experience_id`` from the prompt of hash
    ``phash``: deterministic, the same answer for the same prompt and lesson, true for
    a ``share`` of (prompt, lesson) pairs."""
    if share <= 0:
        return False
    digest = _sha256(f"{phash}:{experience_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def holdout_share(stored: dict[str, Any]) -> float:
    """The holdout share from the library's raw settings (0.0 when unset or not a number
    between 0 and 1)."""
    text = stored.get(HOLDOUT)
    if text is None:
        return 0.0
    try:
        share = float(json.loads(text))
    except (TypeError, ValueError):
        return 0.0
    return share if 0.0 <= share < 1.0 else 0.0


def split(
    items: Sequence[T], ids: Sequence[int | None], phash: str, share: float
) -> tuple[list[T], list[int]]:
    """``items`` without the ones the holdout withholds, and the ids withheld. An item
    whose id is None (a team lesson) is always served."""
    if share <= 0:
        return list(items), []
    kept: list[T] = []
    held: list[int] = []
    for item, eid in zip(items, ids, strict=True):
        if eid is not None and held_out(phash, eid, share):
            held.append(eid)
        else:
            kept.append(item)
    return kept, held


#: A client's session id as Claude Code and Codex write it (a UUID): kept as it is.
_PLAIN_ID = re.compile(r"[0-9a-fA-F-]{1,64}")
#: What could be (or start) a secret in a folder's path: a long run of token characters,
#: credentials in a URL, a word that names a secret. A path without one is kept as it is.
#: (A run is letters and digits only: a folder named in words joined by ``_`` or ``-``, as
#: pytest's and most projects' are, is no secret, and importing the redactor would cost the
#: prompt hook its rules' compilation, about 0.2 s.)
_RUN = re.compile(r"[A-Za-z0-9+=]{16,}")
_SECRET_WORD = re.compile(
    r"[:@%]|pass|pwd|secret|token|key|auth|cred|cookie|sess"
    r"|xox[abprs]-|gh[pousr]_|github_pat_|glpat-|\bsk[-_]|AKIA|AIza|\bhf_|npm_|pypi-|eyJ",
    re.I,
)


def _plain_path(path: str) -> bool:
    """Whether ``path`` holds nothing the redactor could take (no word of a secret, no
    long run of letters and digits both): the prompt hook then needs no redactor."""
    if _SECRET_WORD.search(path):
        return False
    return not any(
        any(c.isdigit() for c in m) and any(c.isalpha() for c in m) for m in _RUN.findall(path)
    )


def scrubbed(text: str | None, *, path: bool = False) -> str | None:
    """``text`` (a client's session id, or a project's path with ``path``) as the served
    log may hold it: redacted with agentmem's rules, which are imported only when the
    text could hold a secret at all (a UUID, a plain folder's path cannot), so the prompt
    hook stays cheap."""
    if text is None or (_plain_path(text) if path else _PLAIN_ID.fullmatch(text)):
        return text
    from .redact import redact

    return redact(text)


def record(
    db_path: str | os.PathLike[str],
    *,
    route: str,
    phash: str,
    served: Iterable[int],
    held: Iterable[int] = (),
    session: str | None = None,
    project: str | None = None,
    share: float = 0.0,
    why: dict[int, str] | None = None,
    withheld: dict[int, str] | None = None,
    team: Sequence[str] = (),
) -> bool:
    """Append one line to the served log (see the module doc); False when there was
    nothing to record or the write failed (counted in :data:`FAILURES`). ``why``: for a
    served lesson, why retrieval chose it (``agentmem log`` shows it); ``withheld``: a
    lesson a serving filter kept from the prompt, and the filter's reason; ``team``: the
    texts of the team lessons served (they have no id in this library)."""
    served, held = [int(i) for i in served], [int(i) for i in held]
    if not served and not held and not withheld and not team:
        return False
    line = {
        "v": 1,
        "at": now_iso(),
        "route": route,
        "session": scrubbed(session) if isinstance(session, str) and session else None,
        "project": scrubbed(project, path=True) if isinstance(project, str) else project,
        "prompt": phash,
        "served": served,
        "held": held,
        "holdout": share,
    }
    if why:
        line["why"] = {str(i): str(w)[:200] for i, w in why.items() if i in served}
    if withheld:
        line["withheld"] = {str(int(i)): str(w)[:200] for i, w in withheld.items()}
    if team:
        line["team"] = [str(t)[:MAX_TEAM_CHARS] for t in team]
    data = (json.dumps(line, separators=(",", ":"), ensure_ascii=True) + "\n").encode()
    try:
        # O_NONBLOCK: a FIFO where the log goes fails at once, or is refused here
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
        fd = os.open(log_path(db_path), flags, 0o600)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError("the served log is not a plain file")
            os.write(fd, data)  # one write of one line: O_APPEND keeps lines whole
        finally:
            os.close(fd)
    except OSError:
        FAILURES[0] += 1
        return False
    return True


def _ids(v: Any) -> list[int] | None:
    if not isinstance(v, list) or len(v) > 1000:
        return None
    if not all(isinstance(i, int) and not isinstance(i, bool) and i > 0 for i in v):
        return None
    return list(v)


def _reasons(v: Any) -> dict[str, str]:
    """A line's ``why`` or ``withheld``: lesson id -> reason, bounded; {} when not one."""
    if not isinstance(v, dict):
        return {}
    return {str(k)[:20]: str(r)[:200] for k, r in list(v.items())[:1000]}


def _parse(raw: bytes) -> Line | None:
    """One log line as a record, or None when it is not one."""
    try:
        d = loads(raw, what="a served-log line")
    except ValueError:
        return None
    if not isinstance(d, dict) or d.get("v") != 1:
        return None
    served, held = _ids(d.get("served")), _ids(d.get("held"))
    at, phash = d.get("at"), d.get("prompt")
    if served is None or held is None or not isinstance(at, str) or not isinstance(phash, str):
        return None
    session, project = d.get("session"), d.get("project")
    why, withheld = _reasons(d.get("why")), _reasons(d.get("withheld"))
    team = d.get("team")
    team = (
        [str(t)[:MAX_TEAM_CHARS] for t in team[:1000] if isinstance(t, str)]
        if isinstance(team, list)
        else []
    )
    return {
        "why": why,
        "withheld": withheld,
        "team": team,
        "at": at[:40],
        "route": str(d.get("route") or "")[:40],
        "session": session[:200] if isinstance(session, str) else None,
        "project": project[:4000] if isinstance(project, str) else None,
        "prompt": phash[:64],
        "served": served,
        "held": held,
    }


def read(path: str, offset: int, limit: int = MAX_READ) -> tuple[list[Line], int, int]:
    """The records of the log at ``path`` from byte ``offset`` on, at most ``limit`` bytes
    of them (the rest waits for the next read): (records, the offset after the last whole
    line, lines skipped as not records). A missing log, or an offset past its end (the log
    was replaced), reads from the start."""
    try:
        with open_regular(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if offset > size:
                offset = 0
            f.seek(offset)
            data = f.read(limit)
    except OSError:
        return [], offset, 0
    end = data.rfind(b"\n") + 1  # a line still being written waits for the next read
    if end == 0 and len(data) >= limit:  # one line longer than the limit: not a record
        return [], offset + len(data), 1
    lines: list[Line] = []
    skipped = 0
    for raw in data[:end].split(b"\n"):
        if not raw.strip():
            continue
        parsed = _parse(raw)
        if parsed is None:
            skipped += 1
        else:
            lines.append(parsed)
    return lines, offset + end, skipped
