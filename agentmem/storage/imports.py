"""The owner of tables ``imported_turns`` and ``imported_files``: what transcript imports
have read.

Every read and write of those tables goes through this module. A turn is keyed
by its source (``claude-code``, ``codex``, ``anthropic``), its session id and its
turn id; importing it again adds nothing. Writes run inside the caller's write
transaction (:func:`agentmem.db.write`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlite_utils import Database

from .._sqlite import dict_rows
from ..records import Feedback, TurnRecord
from ..redact import DEFAULT_REDACTOR
from ..redact.runs import Redacted, redact_path
from . import trajectories

__all__ = ["file_unchanged", "imported_keys", "recent_imports", "remember_file", "store_turns"]


def _clean(text: str) -> str:
    """A transcript's id, path or note as it is stored: redacted with the built-in rules (a
    real session id, turn id or path is kept as it is; the same text always becomes the
    same one, so keys still match)."""
    return DEFAULT_REDACTOR.text(text)


def _clean_path(path: str) -> str:
    """A transcript file's path as it is stored: redacted as a path
    (:func:`agentmem.redact.runs.redact_path`); the same path always the same text."""
    return redact_path(DEFAULT_REDACTOR, path)


def imported_keys(
    db: Database, source: str, keys: Iterable[tuple[str, str]]
) -> set[tuple[str, str]]:
    """Which of the (session id, turn id) keys of ``source`` are imported already."""
    by_session: dict[str, dict[str, list[str]]] = {}
    for session, turn in keys:
        by_session.setdefault(session, {}).setdefault(_clean(turn), []).append(turn)
    found: set[tuple[str, str]] = set()
    for session, turns in by_session.items():
        for (turn,) in db.execute(
            "SELECT turn_id FROM imported_turns WHERE source = ? AND session_id = ?",
            [source, _clean(session)],
        ).fetchall():
            for raw in turns.get(turn, ()):
                found.add((session, raw))
    return found


def earlier_in_session(db: Database, trajectory_id: int) -> list[int]:
    """The runs of the same session as ``trajectory_id`` before it (its earlier turns, by
    trajectory id), oldest first; [] for a run of no known session.

    An imported run's session is its ``imported_turns`` row. A run recorded directly, or
    taken from a team's inbox, has no such row: its session is ``meta["session_id"]``,
    and the earlier runs are those of the same source, session id and team member. A run
    taken unsigned from a team's inbox (``meta["team_unsigned"]``) is nobody's: it has no
    session and is of none, so that it cannot name the learner's own session."""
    row = db.execute(
        "SELECT source, session_id FROM imported_turns WHERE trajectory_id = ?", [trajectory_id]
    ).fetchone()
    if row is None:
        return _earlier_by_meta(db, trajectory_id)
    return [
        int(r[0])
        for r in db.execute(
            "SELECT trajectory_id FROM imported_turns WHERE source = ? AND session_id = ? "
            "AND trajectory_id < ? ORDER BY trajectory_id",
            [row[0], row[1], trajectory_id],
        ).fetchall()
    ]


def _earlier_by_meta(db: Database, trajectory_id: int) -> list[int]:
    """:func:`earlier_in_session` for a run with no ``imported_turns`` row."""
    row = db.execute(
        "SELECT source, json_extract(meta, '$.session_id'), "
        "coalesce(json_extract(meta, '$.team_member'), ''), "
        "coalesce(json_extract(meta, '$.team_unsigned'), 0) FROM trajectories "
        "WHERE id = ? AND json_valid(meta)",
        [trajectory_id],
    ).fetchone()
    if row is None or not isinstance(row[1], str) or not row[1] or row[3]:
        return []
    # a team's runs: one member's session only (another member cannot name it to hide a run)
    return [
        int(r[0])
        for r in db.execute(
            "SELECT id FROM trajectories WHERE id < ? AND source = ? AND json_valid(meta) "
            "AND json_extract(meta, '$.session_id') = ? "
            "AND coalesce(json_extract(meta, '$.team_member'), '') = ? "
            "AND NOT coalesce(json_extract(meta, '$.team_unsigned'), 0) ORDER BY id",
            [trajectory_id, row[0], row[1], row[2]],
        ).fetchall()
    ]


def store_turns(
    db: Database,
    records: Sequence[TurnRecord],
    runs: Sequence[Redacted | None],
    *,
    at: str,
) -> list[tuple[TurnRecord, int | None]]:
    """Record the turns not imported yet (call inside a write transaction).

    ``runs[i]`` is ``records[i]``'s trajectory as it is to be stored (secrets
    redacted); the turn's ids and note are redacted here. Returns the turns recorded
    now, each with its trajectory id (None for a turn recorded without a trajectory: no
    tool calls, or damaged).
    """
    if not records:
        return []
    done = imported_keys(db, records[0].source, [(r.session_id, r.turn_id) for r in records])
    fresh = [(r, t) for r, t in zip(records, runs) if (r.session_id, r.turn_id) not in done]
    with_steps = [(r, t) for r, t in fresh if t is not None]
    ids = trajectories.insert_trajectories(db, [t for _, t in with_steps], created_at=at)
    tid_of = {id(r): tid for (r, _), tid in zip(with_steps, ids)}
    out: list[tuple[TurnRecord, int | None]] = []
    for r, _ in fresh:
        tid = tid_of.get(id(r))
        if tid is not None and r.verdict is not None:
            trajectories.insert_feedback(
                db, Feedback(trajectory_id=tid, kind=r.verdict, created_at=at, note=r.note)
            )
        note = None if r.note is None else _clean(r.note)
        db.execute(
            "INSERT INTO imported_turns (source, session_id, turn_id, trajectory_id, status, "
            "note, imported_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [r.source, _clean(r.session_id), _clean(r.turn_id), tid, r.status, note, at],
        )
        out.append((r, tid))
    return out


def file_unchanged(db: Database, path: str, size: int, mtime_ns: int) -> bool:
    """Whether ``path`` was imported whole at this size and modification time."""
    row = db.execute(
        "SELECT size, mtime_ns FROM imported_files WHERE path = ?", [_clean_path(path)]
    ).fetchone()
    return row is not None and (row[0], row[1]) == (size, mtime_ns)


def remember_file(
    db: Database, path: str, source: str, size: int, mtime_ns: int, *, at: str
) -> None:
    """Note that nothing in ``path`` (at this size and time) is left to import."""
    db.execute(
        "INSERT INTO imported_files (path, source, size, mtime_ns, imported_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET source = excluded.source, "
        "size = excluded.size, mtime_ns = excluded.mtime_ns, imported_at = excluded.imported_at",
        [_clean_path(path), source, size, mtime_ns, at],
    )


def recent_imports(
    db: Database, *, limit: int = 20, source: str | None = None
) -> list[dict[str, Any]]:
    """The latest imported turns, newest first, with their trajectory's task."""
    where, params = "", []
    if source is not None:
        where, params = "WHERE i.source = ?", [source]
    cur = db.execute(
        "SELECT i.source, i.session_id, i.turn_id, i.trajectory_id, i.status, i.note, "
        "i.imported_at, t.task, t.step_count, "
        "json_extract(t.meta, '$.project') AS project FROM imported_turns i "
        f"LEFT JOIN trajectories t ON t.id = i.trajectory_id {where} "
        "ORDER BY i.imported_at DESC, i.rowid DESC LIMIT ?",
        [*params, limit],
    )
    return dict_rows(cur)
