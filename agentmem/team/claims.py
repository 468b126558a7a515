"""Learning once per team: claims on task groups, and a session applied as compare-and-set.

A team learning session runs in three steps, each a transaction on the primary
where it writes:

1. :func:`claim` takes the session's groups in one transaction: a group is
   free unless another live claim holds it or one of its runs (a claim lapses
   after its lease, so a learner killed mid-session does not hold its groups
   forever), and a group already learned with the same trajectories is not
   claimed again. Groups of every kind are claimed by their key: an exact
   group by its task, a run's own correction by ``correction:<id>``, a
   similar-task group by ``similar:<ids>``. A second
   learner on the same groups gets nothing and is told who holds them.
2. The session plans from the laptop's replica (model calls, embeddings), with
   no transaction open anywhere.
3. :func:`apply_session` checks that the claims are still this session's,
   applies every operation as a compare-and-set against the rows the plan read
   (``journal.apply_operations(expected=...)``: a lost race is journaled as
   rejected, ``stale``), journals the groups, and marks the claims applied, all
   in one transaction. Killed half-way, the primary rolls it back.
"""

from __future__ import annotations

import json
import socket
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

import attrs

from ..db import write
from ..errors import TeamError
from ..storage import journal, settings
from ..timestamps import now_iso, parse_time

__all__ = ["CLAIM_LEASE", "Claim", "apply_session", "claim", "holder_name", "release"]

#: Seconds a claim holds its groups without being applied.
CLAIM_LEASE = 3600.0


def holder_name() -> str:
    """Who holds a claim, as people read it: host and process."""
    import os

    return f"{socket.gethostname()} (pid {os.getpid()})"


@attrs.frozen
class Claim:
    """The groups one session holds, and those it was refused with why."""

    id: str
    groups: dict[str, tuple[int, ...]]
    refused: dict[str, str]


def _expires(lease: float) -> str:
    return (parse_time(now_iso()) + timedelta(seconds=lease)).isoformat(timespec="microseconds")


def claim(
    remote: Any,
    groups: Mapping[str, Sequence[int]],
    *,
    holder: str | None = None,
    lease: float = CLAIM_LEASE,
) -> Claim:
    """Claim ``groups`` (key -> trajectory ids) on the primary, in one transaction."""
    cid = str(uuidlib.uuid4())
    who = holder or holder_name()
    now = now_iso()
    taken: dict[str, tuple[int, ...]] = {}
    refused: dict[str, str] = {}
    with write(remote):
        for key, ids in groups.items():
            ids_json = json.dumps(sorted(ids))
            learned = journal.learned_by(remote, key, ids)
            if learned is not None:
                refused[key] = f"already learned by team session {learned}"
                continue
            busy = _run_held_elsewhere(remote, key, ids, cid, now)
            if busy is not None:
                refused[key] = busy
                continue
            cur = remote.execute(
                "INSERT INTO team_claims (group_key, trajectory_ids, claim, holder, claimed_at, "
                "expires_at, status) VALUES (?, ?, ?, ?, ?, ?, 'claimed') "
                "ON CONFLICT (group_key) DO UPDATE SET trajectory_ids = excluded.trajectory_ids, "
                "claim = excluded.claim, holder = excluded.holder, "
                "claimed_at = excluded.claimed_at, expires_at = excluded.expires_at, "
                "status = 'claimed', session_id = NULL "
                "WHERE team_claims.status != 'claimed' OR team_claims.expires_at < ?",
                [key, ids_json, cid, who, now, _expires(lease), now],
            )
            if cur.rowcount == 1:
                taken[key] = tuple(sorted(ids))
                continue
            row = remote.execute(
                "SELECT holder, claimed_at FROM team_claims WHERE group_key = ?", [key]
            ).fetchone()
            refused[key] = f"already claimed by {row[0]} since {row[1]}" if row else "claimed"
    return Claim(cid, taken, refused)


def _run_held_elsewhere(
    remote: Any, key: str, ids: Sequence[int], claim_id: str, now: str
) -> str | None:
    """Why a group may not be claimed because one of its runs is in another live claim,
    or None. Laptops synced at different times can put one run in different groups (a
    run alone on one laptop is a similar-task or correction group; on another, with a
    second run of its task, an exact group): a run is learned by one session at a time."""
    if not ids:
        return None
    marks = ", ".join("?" * len(ids))
    row = remote.execute(
        "SELECT c.group_key, c.holder, j.value FROM team_claims c, json_each(c.trajectory_ids) j "
        "WHERE c.status = 'claimed' AND c.expires_at >= ? AND c.group_key != ? "
        f"AND c.claim != ? AND j.value IN ({marks}) LIMIT 1",
        [now, key, claim_id, *ids],
    ).fetchone()
    if row is None:
        return None
    return f"its run {row[2]} is in group {row[0]!r}, claimed by {row[1]}"


def release(remote: Any, claim_id: str) -> None:
    """Give a claim's groups back (a session that failed before applying)."""
    with write(remote):
        remote.execute(
            "UPDATE team_claims SET status = 'released' WHERE claim = ? AND status = 'claimed'",
            [claim_id],
        )


def apply_session(
    remote: Any,
    claim_: Claim,
    plan: Any,
    vectors: Mapping[str, Sequence[float]],
    expected: Mapping[int, Mapping[str, Any]],
    *,
    model: str | None,
    embedder: str,
    params: Mapping[str, Any] | None = None,
    approve: bool = False,
) -> Any:
    """Apply a planned (dry-run) :class:`~agentmem.learning.session.LearnReport` on the
    primary in one transaction; the report of the applied session.

    Every lesson is scoped as a private session scopes it (a project, a machine,
    everywhere: :mod:`agentmem.storage.scopes`), and one that only one member's runs
    support is held rather than served to the whole team (:mod:`agentmem.team.support`;
    ``approve``: the learner approves such lessons)."""
    from ..learning.session import group_rows
    from ..storage.scopes import record_scopes
    from . import support
    from .signing import MEMBERS_SETTING, parse_members

    proposed = [o.op for o in plan.operations if o.status == "proposed"]
    rejected = [(o.op, o.reason) for o in plan.operations if o.status == "rejected"]
    results = [r for r in plan.groups if r.key in claim_.groups]
    groups = {r.key: tuple(r.trajectory_ids) for r in results}
    with write(remote):
        members = parse_members(settings.get(remote, MEMBERS_SETTING))
        learners = [n for n, (role, _) in members.items() if role == "learner"]
        checked = support.check_operations(
            remote, proposed, groups, learners=learners, approve=approve
        )
        ops = list(checked.apply)
        rejected += list(checked.held)
        held = {
            str(r[0])
            for r in remote.execute(
                "SELECT group_key FROM team_claims WHERE claim = ? AND status = 'claimed'",
                [claim_.id],
            )
        }
        lost = sorted(set(claim_.groups) - held)
        if lost:
            raise TeamError(
                f"this session's claim on {', '.join(lost[:3])} lapsed and another session took "
                "it; nothing was applied: run `agentmem team learn` again"
            )
        sid = journal.insert_session(
            remote,
            "learn",
            status="running",
            model=model,
            embedder=embedder,
            params={**dict(params or {}), "team": True},
        )
        applied = journal.apply_operations(
            remote,
            sid,
            ops,
            vectors,
            rejected=rejected,
            conditions={r.key: r.conditions for r in results},
            expected=expected,
        )
        # Where each new text is served: a project, a machine, everywhere (agentmem.projects).
        record_scopes(remote, sid, support.scoped(applied), groups)
        journal.record_groups(remote, sid, group_rows(results))
        report = attrs.evolve(plan, session_id=sid, dry_run=False, operations=tuple(applied))
        journal.finish_session(remote, sid, report.as_dict())
        remote.execute(
            "UPDATE team_claims SET status = 'applied', session_id = ? WHERE claim = ?",
            [sid, claim_.id],
        )
    return report
