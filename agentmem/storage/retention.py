"""Retention: pruning old trajectories, keeping everything learned from them.

A library only grows: every prompt adds a run. :func:`prune` removes the raw runs
recorded before a date (``before``) or all but the newest ``keep_last`` (both:
only runs old by both rules go), with their steps and feedback, and keeps

* every experience, and the whole journal (each operation's before and after texts),
  so ``agentmem undo`` of any session still works;
* the sessions and the ids of the trajectories each learned from
  (``session_groups.trajectory_ids``): a pruned id is marked in
  ``pruned_trajectories`` (its group and when it was recorded and pruned), which
  ``agentmem check`` reads, and is never given to another trajectory;
* runs a team member shared that are still waiting in the outbox.

The rows go in one write transaction (a kill at any moment leaves the library as
it was or without the pruned runs, never in between). Then the space is given
back to the file system: an ``incremental_vacuum`` (a file created by this
agentmem is in ``auto_vacuum = INCREMENTAL`` mode; an older file is converted
once, by one ``VACUUM``) and a checkpoint. Both are ordinary SQLite write
transactions: processes reading the library meanwhile keep reading their
snapshot, and one writing waits for them (busy timeout). ``dry_run`` changes
nothing and says what would go, with the bytes that would be freed, estimated
from the rows' sizes.

The rows are moved by their owners: :mod:`~agentmem.storage.pruned` marks the
runs, :mod:`~agentmem.storage.trajectories` and :mod:`~agentmem.storage.outbox`
delete theirs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
from sqlite_utils import Database

from ..db import BUSY_TIMEOUT_MS, read_snapshot, write
from ..errors import InvalidRecordError
from ..timestamps import now_iso
from . import outbox, pruned, trajectories

__all__ = ["PruneResult", "parse_before", "prune"]

#: Bytes a row costs beyond its values (record header, cell pointer, b-tree slack),
#: and each index entry beyond its key: within 15% of the pages freed when pruning
#: 10-100% of the synthetic libraries of benchmarks/bench_scale.py.
_ROW_OVERHEAD = 12
_INDEX_ENTRY = 14
#: How long the checkpoint after a prune waits for readers of an older snapshot.
CHECKPOINT_WAIT_MS = 2000


@attrs.frozen
class PruneResult:
    """What a prune removed (or, with ``dry_run``, would remove) and the space it gave back."""

    dry_run: bool
    trajectories: int
    steps: int
    feedback: int
    groups: int
    #: Of the pruned runs, how many a learning session used (the rest were never learned).
    learned: int
    #: Runs left alone because they wait to be pushed to a team (agentmem team sync).
    kept_unshared: int
    oldest: str | None
    newest: str | None
    #: The bytes the rows take, estimated from their sizes (what a prune should free).
    bytes_estimated: int
    #: The file's size before and after (None for a dry run).
    bytes_before: int | None = None
    bytes_after: int | None = None
    #: How the space was given back: ``incremental`` or ``vacuum`` (a first prune of an
    #: older file converts it), ``none`` when nothing was removed.
    reclaimed: str = "none"

    @property
    def bytes_freed(self) -> int | None:
        if self.bytes_before is None or self.bytes_after is None:
            return None
        return self.bytes_before - self.bytes_after

    def as_dict(self) -> dict[str, Any]:
        d = attrs.asdict(self)
        d["bytes_freed"] = self.bytes_freed
        return d


def parse_before(text: str, now: datetime | None = None) -> datetime:
    """A ``--before`` value: an ISO date or date-time (UTC unless it says), or ``N d``
    / ``N h`` ago (``30d``, ``12h``)."""
    t = text.strip()
    m = re.fullmatch(r"(\d+)\s*([dh])", t)
    if m:
        n = int(m.group(1))
        delta = timedelta(days=n) if m.group(2) == "d" else timedelta(hours=n)
        return (now or datetime.now(timezone.utc)) - delta
    try:
        when = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRecordError(
            f"{text!r} is not a date: give an ISO date (2025-01-31), a date and time "
            "(2025-01-31T12:00:00Z) or an age (30d, 12h)"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _selection(
    before: datetime | None,
    keep_last: int | None,
    project: str | None = None,
    ids: Sequence[int] | None = None,
) -> tuple[str, list[Any]]:
    """The WHERE clause (on ``trajectories t``) of the runs old enough to prune (and, with
    ``project``, of that project; with ``ids``, among those runs)."""
    where: list[str] = []
    params: list[Any] = []
    if ids is not None:
        where.append("t.id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps([int(i) for i in ids]))
    if project is not None:
        where.append("json_extract(t.meta, '$.project') = ?")
        params.append(project)
    if before is not None:
        where.append("julianday(t.created_at) < julianday(?)")
        params.append(before.astimezone(timezone.utc).isoformat(timespec="microseconds"))
    if keep_last is not None:
        where.append(
            "t.id < coalesce((SELECT min(id) FROM (SELECT id FROM trajectories "
            "ORDER BY id DESC LIMIT ?)), 9223372036854775807)"
        )
        params.append(keep_last)
    return " AND ".join(where), params


#: A shared run still waiting to be pushed to the team (agentmem.team.outbox): kept.
_UNSHARED = outbox.UNPUSHED


def _count(db: Database, where: str, params: list[Any]) -> dict[str, Any]:
    sel = f"SELECT t.id FROM trajectories t WHERE {where}"
    q = db.execute
    n, oldest, newest, groups, payload = q(
        "SELECT count(*), min(created_at), max(created_at), count(DISTINCT group_key), "
        "coalesce(sum(length(CAST(task AS BLOB)) + length(CAST(group_key AS BLOB)) "
        "+ length(CAST(meta AS BLOB)) + coalesce(length(essential_actions), 0) "
        "+ length(created_at) + coalesce(length(uuid), 0) + 40), 0) "
        f"FROM trajectories t WHERE {where}",
        params,
    ).fetchone()
    steps, step_bytes = q(
        "SELECT count(*), coalesce(sum(length(CAST(output AS BLOB)) "
        "+ length(CAST(params AS BLOB)) + 2 * length(CAST(tool AS BLOB)) "
        "+ length(domain) + 16), 0) "
        f"FROM steps WHERE trajectory_id IN ({sel})",
        params,
    ).fetchone()
    feedback, fb_bytes = q(
        "SELECT count(*), coalesce(sum(length(kind) + coalesce(length(note), 0) "
        f"+ length(created_at) + 16), 0) FROM feedback WHERE trajectory_id IN ({sel})",
        params,
    ).fetchone()
    learned = q(
        "SELECT count(DISTINCT j.value) FROM session_groups g, json_each(g.trajectory_ids) j "
        f"WHERE j.value IN ({sel})",
        params,
    ).fetchone()[0]
    rows = n + steps + feedback
    # trajectories: 3 indexes (group_key, created_at, uuid); steps 3; feedback 2.
    entries = 3 * n + 3 * steps + 2 * feedback
    estimate = payload + step_bytes + fb_bytes + _ROW_OVERHEAD * rows + _INDEX_ENTRY * entries
    return {
        "trajectories": int(n),
        "steps": int(steps),
        "feedback": int(feedback),
        "groups": int(groups),
        "learned": int(learned),
        "oldest": oldest,
        "newest": newest,
        "bytes_estimated": int(estimate),
    }


def _size(db: Database) -> int:
    """The bytes the library takes: its pages (the file, once checkpointed)."""
    page_count = db.execute("PRAGMA page_count").fetchone()[0]
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    return int(page_count) * int(page_size)


def prune(
    db: Database,
    *,
    before: datetime | None = None,
    keep_last: int | None = None,
    dry_run: bool = False,
    path: str | os.PathLike[str] | None = None,
    project: str | None = None,
    ids: Sequence[int] | None = None,
) -> PruneResult:
    """Remove old runs, their steps and feedback, keeping what was learned (module doc).

    ``path`` is the library's file, to measure the space given back (else its pages).
    ``project``: only that project's runs (``agentmem projects forget``); ``ids``: only
    among these runs.
    """
    if before is None and keep_last is None and project is None:
        raise InvalidRecordError("say which runs to prune: --before DATE, --keep-last N or both")
    if keep_last is not None and (isinstance(keep_last, bool) or keep_last < 0):
        raise InvalidRecordError(f"--keep-last must be 0 or more, not {keep_last}")
    if keep_last is not None and keep_last >= 2**63:  # SQLite's integers end there
        raise InvalidRecordError(f"--keep-last must be less than 2**63, not {keep_last}")
    old, params = _selection(before, keep_last, project, ids)
    where = f"{old} AND NOT {_UNSHARED}"
    if dry_run:
        with read_snapshot(db):
            found = _count(db, where, params)
            kept = _kept_unshared(db, old, params)
        return PruneResult(dry_run=True, kept_unshared=kept, **found)
    size_before = _file_size(path) if path else _size(db)
    at = now_iso()
    with write(db):
        found = _count(db, where, params)
        kept = _kept_unshared(db, old, params)
        if found["trajectories"]:
            pruned.mark(db, where, params, at)
            for table in ("feedback", "steps", "team_outbox", "trajectories"):
                _delete_pruned(db, table, at)
    # Also after a prune that found nothing new: one killed before it gave the space back
    # left free pages.
    free = db.execute("PRAGMA freelist_count").fetchone()[0]
    reclaimed = _reclaim(db) if found["trajectories"] or free else "none"
    size_after = _file_size(path) if path else _size(db)
    return PruneResult(
        dry_run=False,
        kept_unshared=kept,
        bytes_before=size_before,
        bytes_after=size_after,
        reclaimed=reclaimed,
        **found,
    )


def _delete_pruned(db: Database, table: str, at: str) -> None:
    """Have ``table``'s owner delete the rows of the runs this prune (``at``) marked pruned."""
    if table == "team_outbox":
        outbox.delete_pruned(db, at)
    else:
        trajectories.delete_pruned(db, table, at)


def _kept_unshared(db: Database, old: str, params: list[Any]) -> int:
    sql = f"SELECT count(*) FROM trajectories t WHERE {old} AND {_UNSHARED}"
    return int(db.execute(sql, params).fetchone()[0])


def _file_size(path: str | os.PathLike[str]) -> int:
    return sum(
        os.path.getsize(f"{path}{suffix}")
        for suffix in ("", "-wal")
        if os.path.exists(f"{path}{suffix}")
    )


def _reclaim(db: Database) -> str:
    """Give the free pages back to the file system; how (see the module doc)."""
    mode = int(db.execute("PRAGMA auto_vacuum").fetchone()[0])
    if mode == 2:  # INCREMENTAL
        db.execute("PRAGMA incremental_vacuum").fetchall()  # one row a page: run it all
        how = "incremental"
    else:
        # Once per file: from now on this file gives pages back incrementally.
        db.execute("PRAGMA auto_vacuum = INCREMENTAL")
        db.execute("VACUUM")
        how = "vacuum"
    # Copy the WAL back into the file and truncate it; readers holding an older snapshot
    # are waited for a moment only (then the WAL is emptied by a later checkpoint).
    db.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return how
