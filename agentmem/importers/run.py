"""Importing transcripts: find the files, parse them, and record only the turns not seen before.

:func:`import_transcripts` is what ``agentmem import --format claude-code|codex|anthropic``
and the Stop hook run. Per file (a Claude Code session with its sub-agents counts
as one), it parses the transcript, keeps the complete turns that ``imported_turns``
does not hold yet, redacts them, and records them with their verdicts in one write
transaction. It is idempotent and incremental: run it from cron, a hook or a loop.
A file that had nothing left for later is remembered with its size and
modification time, and skipped while both stay the same.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from sqlite_utils import Database

from ..db import write
from ..errors import InvalidRecordError
from ..files import read_regular
from ..projects import project_of, session_project
from ..records import Trajectory, TurnRecord
from ..redact.runs import Redacted
from ..storage import imports
from ..timestamps import now_iso
from .formats import (
    Bundle,
    ParsedFile,
    TranscriptFormat,
    agent_id_of,
    by_name,
    is_format,
    looks_like,
    names,
)
from .turns import FileReport, ImportReport, Turn, settle, turn_record

__all__ = ["QUIET_SECONDS", "STALE_SECONDS", "default_path", "discover", "import_transcripts"]


def __getattr__(name: str) -> Any:
    if name == "FORMATS":  # the static list earlier versions had: now the registry's names
        return names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: A transcript unchanged for this long has finished its last turn (if no call waits).
QUIET_SECONDS = 1800
#: A transcript unchanged for this long is over: a call still waiting never gets its result.
STALE_SECONDS = 86400


def default_path(fmt: str) -> Path:
    """Where the agent keeps its transcripts: ``~/.claude/projects``, ``~/.codex/sessions``."""
    return by_name(fmt).default_path()


def discover(fmt: str, path: str | os.PathLike[str]) -> list[Bundle]:
    """The transcript files under ``path`` (a file or a folder) for format ``fmt``."""
    root = Path(path).expanduser().absolute()
    if not root.exists():
        raise InvalidRecordError(f"{root} does not exist")
    if not (root.is_file() or root.is_dir()):
        raise InvalidRecordError(f"{root} is neither a file nor a folder")
    return by_name(fmt).discover(root)


def _other_format(fmt: TranscriptFormat, path: Path) -> TranscriptFormat | None:
    """The format ``path`` clearly is instead of ``fmt`` (None: it is ``fmt``, or unclear)."""
    ours, objects = is_format(fmt, path)
    if ours:
        return None
    return looks_like(objects, besides=fmt.name)


def _check_named_files(fmt: TranscriptFormat, paths: Sequence[Path]) -> None:
    """A file named on its own that is of another format is an error, before anything runs."""
    for p in paths:
        if p.is_file():
            other = _other_format(fmt, p)
            if other is not None:
                raise InvalidRecordError(
                    f"{p} looks like {other.noun or other.name + ' transcript'}, "
                    f"not {fmt.noun or fmt.name}: use --format {other.name}"
                )


def import_transcripts(
    db: Database,
    fmt: str,
    paths: Iterable[str | os.PathLike[str]],
    *,
    clean: Callable[[Trajectory], Redacted],
    final: bool = False,
    project: str | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    share: bool | None = None,
    running: Collection[str] = (),
    finished: Collection[str] = (),
) -> ImportReport:
    """Import the new complete turns of the transcripts under ``paths``.

    ``clean`` redacts a trajectory before it is stored. ``final``: the agent says
    its last turn is over (a Stop hook). ``project`` overrides the project of
    every turn (for Anthropic files, which name none). ``force`` reads files even
    when they look unchanged. ``share``: queue the new runs for the team library
    (``None``: the team's setting; see :mod:`agentmem.team`). ``running``: the ids of
    sub-agents still at work (a Stop hook's ``background_tasks``): ``final`` is not
    about them, so their last turn waits until they finish. ``finished``: the ids of
    sub-agents whose last turn is over (a ``SubagentStop``), whatever ``final`` says.

    A file named in ``paths`` that is clearly of another format is an error (and
    nothing is imported); one found in a folder is skipped and counted. A file
    that cannot be read is skipped and reported; the others are imported.
    """
    form = by_name(fmt)
    report = ImportReport(fmt)
    fixed = project_of(project) if project else None
    roots = [Path(p).expanduser().absolute() for p in paths]
    if final and any(p.is_dir() for p in roots):
        raise InvalidRecordError(
            "final (the agent says its last turn is over) is about one transcript file: "
            + ", ".join(str(p) for p in roots if p.is_dir())
            + " is a folder"
        )
    _check_named_files(form, roots)
    bundles = [b for p in roots for b in discover(fmt, p)]
    for n, found in enumerate(bundles, 1):
        if progress is not None and len(bundles) > 1:
            progress(f"{n}/{len(bundles)} {found.files[0] if found.files else ''}")
        bundle = _without_special_files(found, report)
        if bundle is None:
            continue
        if bundle.main is not None and bundle.main not in roots:
            other = _other_format(form, bundle.main)
            if other is not None:
                report.other_format[other.name] += 1
                continue
        try:
            when = _When(final, frozenset(running), frozenset(finished))
            _import_bundle(db, form, bundle, report, clean, when, fixed, force, share)
        except InvalidRecordError:
            if bundle.main in roots:  # the file the user named is not a transcript: say so
                raise
            report.failed_files.append(f"{bundle.main}: not {form.noun or form.name}")
        except (OSError, RecursionError, MemoryError, UnicodeError, ValueError) as e:
            # one unreadable file (a folder, a file that vanished, hostile bytes) stops nothing
            why = str(e)[:200] if isinstance(e, IsADirectoryError) else f"{type(e).__name__}: {e}"
            where = bundle.files[0] if bundle.files else "?"
            report.failed_files.append(f"{where}: {why[:300]}")
    return report


def _special(p: Path) -> bool:
    """Whether ``p`` is a FIFO, a socket or a device (a folder is reported elsewhere)."""
    try:
        mode = os.stat(p).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _without_special_files(bundle: Bundle, report: ImportReport) -> Bundle | None:
    """``bundle`` without its FIFOs, sockets and devices, each counted in
    ``report.special_files`` (reading one would wait forever); None when its session
    file is one."""
    special = [p for p in bundle.files if _special(p)]
    if not special:
        return bundle
    report.special_files += [str(p) for p in special]
    if bundle.main is not None and bundle.main in special:
        return None
    subs = tuple(p for p in bundle.subagents if p not in special)
    return attrs.evolve(bundle, subagents=subs) if subs or bundle.main else None


def _subagent(p: Path, parent_session: str | None, links: Mapping[str, Any]) -> dict[str, Any]:
    agent = agent_id_of(p)
    return {"agent_id": agent, "parent_session": parent_session or "", **links.get(agent, {})}


@attrs.frozen
class _When:
    """What the caller knows of the sessions' state: ``final`` (the agent says its last turn
    is over), and the sub-agents still running (their last turns are not over)."""

    final: bool
    running: frozenset[str] = frozenset()
    finished: frozenset[str] = frozenset()

    def of(self, sub: Mapping[str, Any] | None) -> bool:
        """Whether the last turn of this file (a sub-agent's when ``sub``) is over."""
        agent = sub.get("agent_id") if sub is not None else None
        if agent in self.finished:
            return True
        return self.final and agent not in self.running


def _import_bundle(
    db: Database,
    fmt: TranscriptFormat,
    bundle: Bundle,
    report: ImportReport,
    clean: Callable[[Trajectory], Redacted],
    when: _When,
    project: str | None,
    force: bool,
    share: bool | None,
) -> None:
    stats = {p: p.stat() for p in bundle.files}
    if not force and all(
        imports.file_unchanged(db, str(p), st.st_size, st.st_mtime_ns) for p, st in stats.items()
    ):
        report.unchanged_files += len(stats)
        return
    now = time.time()
    links: Mapping[str, Any] = {}
    parent_session = bundle.main.stem if bundle.main else None
    if bundle.main is None and bundle.parent is not None:  # sub-agents alone: the parent's links
        parent_session = bundle.parent.stem
        if bundle.parent.is_file():
            parent = bundle.parent
            links = _parse(fmt, parent, read_regular(parent), final=True, quiet=True).links
    parsed: list[tuple[Path, tuple[Turn, ...], FileReport]] = []
    for p in bundle.files:
        if not p.is_file():
            raise IsADirectoryError(f"{p} is a folder (or not a plain file), not a transcript")
        quiet = now - stats[p].st_mtime > QUIET_SECONDS
        sub = None if p == bundle.main else _subagent(p, parent_session, links)
        got = _parse(fmt, p, read_regular(p), final=when.of(sub), quiet=quiet, subagent=sub)
        if now - stats[p].st_mtime > STALE_SECONDS:
            settle(got.turns)
        if p == bundle.main:
            links = got.links
            parent_session = next((t.session_id for t in got.turns), parent_session)
        parsed.append((p, got.turns, got.report))
    _record(db, fmt.name, parsed, stats, report, clean, project, share)


def _parse(
    fmt: TranscriptFormat,
    path: Path,
    data: bytes,
    *,
    final: bool,
    quiet: bool,
    subagent: Mapping[str, Any] | None = None,
) -> ParsedFile:
    return fmt.parse(data, path=str(path), final=final, quiet=quiet, subagent=subagent)


def _turn_records(
    fmt: str, turns: Sequence[Turn], project: str | None
) -> Iterator[tuple[Turn, TurnRecord]]:
    # a file's turns share their folder; a turn of a transcript from elsewhere in a
    # subfolder that Claude Code's Bash tool kept (meta's session_cwd) is the session's
    # project (session_project)
    projects: dict[tuple[str | None, str | None], str | None] = {}
    for t in turns:
        try:
            where = project
            if not where:
                start = t.meta.get("session_cwd")
                key = (t.cwd, start if isinstance(start, str) else None)
                if key not in projects:
                    projects[key] = session_project(*key)
                where = projects[key]
            yield t, turn_record(fmt, t, project=where)
        except (RecursionError, ValueError, UnicodeError) as e:
            note = f"line {t.line}: {type(e).__name__}: {str(e)[:200]}"
            yield t, TurnRecord(fmt, t.session_id, t.turn_id, status="damaged", note=note)


def _cleaned(
    records: Sequence[TurnRecord], clean: Callable[[Trajectory], Redacted]
) -> list[tuple[TurnRecord, Redacted | None]]:
    """Each record with its redacted trajectory; one that cannot be cleaned is damaged."""
    out: list[tuple[TurnRecord, Redacted | None]] = []
    for r in records:
        if r.trajectory is None:
            out.append((r, None))
            continue
        try:
            out.append((r, clean(r.trajectory)))
        except (RecursionError, ValueError, UnicodeError) as e:
            note = f"{type(e).__name__}: {str(e)[:200]}"
            out.append((attrs.evolve(r, status="damaged", trajectory=None, note=note), None))
    return out


def _record(
    db: Database,
    fmt: str,
    parsed: Sequence[tuple[Path, tuple[Turn, ...], FileReport]],
    stats: dict[Path, os.stat_result],
    report: ImportReport,
    clean: Callable[[Trajectory], Redacted],
    project: str | None,
    share: bool | None,
) -> None:
    records, pending_files = [], set()
    seen: set[tuple[str, str]] = set()  # a key twice in a file (a replayed line): the first
    for p, turns, file_report in parsed:
        report.add_file(file_report)
        if file_report.truncated or file_report.bad_lines:
            pending_files.add(p)
        done = imports.imported_keys(db, fmt, [t.key for t in turns])
        fresh: list[Turn] = []
        for t in turns:
            if t.key in done or t.key in seen:
                report.already += 1
            elif not t.complete:
                report.in_progress += 1
                pending_files.add(p)
            else:
                seen.add(t.key)
                fresh.append(t)
        records += [r for _, r in _turn_records(fmt, fresh, project)]
    pairs = _cleaned(records, clean)
    records = [r for r, _ in pairs]
    cleaned = [c for _, c in pairs]
    at = now_iso()
    if not records and all(p in pending_files for p, _, _ in parsed):
        return  # nothing to write: not even a transaction
    with write(db):
        stored = imports.store_turns(db, records, cleaned, at=at)
        # -- team touch point: queue shared runs in the same transaction
        from ..team.outbox import queue_shared

        queue_shared(db, [tid for _, tid in stored if tid is not None], share)
        for p, _, _ in parsed:
            if p not in pending_files:
                st = stats[p]
                imports.remember_file(db, str(p), fmt, st.st_size, st.st_mtime_ns, at=at)
    report.already += len(records) - len(stored)
    for r, tid in stored:
        if r.status == "no-tools":
            report.no_tools += 1
        elif r.status == "damaged":
            report.damaged.append(f"{r.session_id} turn {r.turn_id}: {r.note}")
        if tid is not None:
            report.ids.append(tid)
            fixed = r.trajectory.meta.get("repaired") if r.trajectory is not None else None
            if isinstance(fixed, dict):
                report.repaired.update(fixed)
            if r.verdict:
                report.verdicts[r.verdict] += 1
