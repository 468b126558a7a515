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
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import attrs
from sqlite_utils import Database

from ..db import write
from ..errors import InvalidRecordError
from ..projects import project_of
from ..records import Trajectory
from ..storage import imports
from ..timestamps import now_iso
from .turns import FileReport, ImportReport, Turn, turn_record

__all__ = ["FORMATS", "QUIET_SECONDS", "default_path", "discover", "import_transcripts"]

#: The transcript formats, and the source name their trajectories get.
FORMATS = ("claude-code", "codex", "anthropic")
#: A transcript unchanged for this long has finished its last turn (if no call waits).
QUIET_SECONDS = 1800


def default_path(fmt: str) -> Path:
    """Where the agent keeps its transcripts: ``~/.claude/projects``, ``~/.codex/sessions``."""
    if fmt == "claude-code":
        base = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
        return Path(base) / "projects"
    if fmt == "codex":
        base = os.environ.get("CODEX_HOME") or str(Path.home() / ".codex")
        return Path(base) / "sessions"
    raise InvalidRecordError(f"--format {fmt} has no default place: give the file")


@attrs.frozen
class Bundle:
    """Files imported together: a session and its sub-agents' transcripts."""

    main: Path | None
    subagents: tuple[Path, ...] = ()

    @property
    def files(self) -> tuple[Path, ...]:
        return ((self.main,) if self.main else ()) + self.subagents


def _agent_id(path: Path) -> str:
    return path.stem[len("agent-") :] if path.stem.startswith("agent-") else path.stem


def _claude_bundles(root: Path) -> list[Bundle]:
    if root.is_file():
        if root.parent.name == "subagents":
            return [Bundle(None, (root,))]
        subdir = root.with_suffix("") / "subagents"
        subs = sorted(subdir.glob("agent-*.jsonl")) if subdir.is_dir() else []
        return [Bundle(root, tuple(p for p in subs if not _agent_id(p).startswith("acompact")))]
    bundles: dict[Path, list[Path]] = {}
    for p in sorted(root.rglob("*.jsonl")):
        if "tool-results" in p.parts:
            continue
        if p.parent.name == "subagents":
            if not _agent_id(p).startswith("acompact"):
                bundles.setdefault(p.parent.parent.with_suffix(".jsonl"), []).append(p)
        else:
            bundles.setdefault(p, [])
    return [
        Bundle(main if main.is_file() else None, tuple(subs))
        for main, subs in sorted(bundles.items())
    ]


def discover(fmt: str, path: str | os.PathLike[str]) -> list[Bundle]:
    """The transcript files under ``path`` (a file or a folder) for format ``fmt``."""
    root = Path(path).expanduser().absolute()
    if not root.exists():
        raise InvalidRecordError(f"{root} does not exist")
    if fmt == "claude-code":
        return _claude_bundles(root)
    if root.is_file():
        return [Bundle(root)]
    pattern = "rollout-*.jsonl" if fmt == "codex" else "*.json*"
    return [Bundle(p) for p in sorted(root.rglob(pattern)) if p.is_file()]


def _parse(
    fmt: str,
    data: bytes,
    path: Path,
    *,
    final: bool,
    quiet: bool,
    subagent: dict[str, object] | None = None,
) -> tuple[tuple[Turn, ...], FileReport, dict[str, dict[str, object]]]:
    if fmt == "claude-code":
        from .claude_code import parse_claude_code

        cc = parse_claude_code(data, path=str(path), final=final, quiet=quiet, subagent=subagent)
        return cc.turns, cc.report, cc.links
    if fmt == "codex":
        from .codex import parse_codex

        cx = parse_codex(data, path=str(path), final=final, quiet=quiet)
        return cx.turns, cx.report, {}
    from .anthropic import parse_anthropic

    an = parse_anthropic(data, path=str(path))
    return an.turns, an.report, {}


def import_transcripts(
    db: Database,
    fmt: str,
    paths: Iterable[str | os.PathLike[str]],
    *,
    clean: Callable[[Trajectory], Trajectory],
    final: bool = False,
    project: str | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    share: bool | None = None,
) -> ImportReport:
    """Import the new complete turns of the transcripts under ``paths``.

    ``clean`` redacts a trajectory before it is stored. ``final``: the agent says
    its last turn is over (a Stop hook). ``project`` overrides the project of
    every turn (for Anthropic files, which name none). ``force`` reads files even
    when they look unchanged. ``share``: queue the new runs for the team library
    (``None``: the team's setting; see :mod:`agentmem.team`).
    """
    if fmt not in FORMATS:
        raise InvalidRecordError(f"unknown transcript format {fmt!r}; one of {', '.join(FORMATS)}")
    report = ImportReport(fmt)
    fixed = project_of(project) if project else None
    bundles = [b for p in paths for b in discover(fmt, p)]
    for n, bundle in enumerate(bundles, 1):
        if progress is not None and len(bundles) > 1:
            progress(f"{n}/{len(bundles)} {bundle.files[0] if bundle.files else ''}")
        _import_bundle(db, fmt, bundle, report, clean, final, fixed, force, share)
    return report


def _import_bundle(
    db: Database,
    fmt: str,
    bundle: Bundle,
    report: ImportReport,
    clean: Callable[[Trajectory], Trajectory],
    final: bool,
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
    links: dict[str, dict[str, object]] = {}
    parent_session = None
    if bundle.main is None and bundle.subagents:  # sub-agent files alone: their parent's links
        main = bundle.subagents[0].parent.parent.with_suffix(".jsonl")
        parent_session = main.stem
        if main.is_file():
            links = _parse(fmt, main.read_bytes(), main, final=True, quiet=True)[2]
    parsed: list[tuple[Path, tuple[Turn, ...], FileReport]] = []
    for p in bundle.files:
        data = p.read_bytes()
        quiet = now - stats[p].st_mtime > QUIET_SECONDS
        subagent = None
        if p != bundle.main:
            agent = _agent_id(p)
            subagent = {
                "agent_id": agent,
                "parent_session": parent_session or (bundle.main.stem if bundle.main else ""),
                **links.get(agent, {}),
            }
        turns, file_report, found = _parse(
            fmt, data, p, final=final, quiet=quiet, subagent=subagent
        )
        if p == bundle.main:
            links = found
            parent_session = next((t.session_id for t in turns), bundle.main.stem)
        parsed.append((p, turns, file_report))
    _record(db, fmt, parsed, stats, report, clean, project, share)


def _record(
    db: Database,
    fmt: str,
    parsed: Sequence[tuple[Path, tuple[Turn, ...], FileReport]],
    stats: dict[Path, os.stat_result],
    report: ImportReport,
    clean: Callable[[Trajectory], Trajectory],
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
        for t in turns:
            if t.key in done or t.key in seen:
                report.already += 1
            elif not t.complete:
                report.in_progress += 1
                pending_files.add(p)
            else:
                seen.add(t.key)
                records.append(turn_record(fmt, t, project=project or project_of(t.cwd)))
    cleaned = [clean(r.trajectory) if r.trajectory is not None else None for r in records]
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
            if r.verdict:
                report.verdicts[r.verdict] += 1
