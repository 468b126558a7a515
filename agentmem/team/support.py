"""Which team members stand behind a team lesson, and whether one member's runs may make it.

One member's runs never put a lesson into every member's prompt: a lesson whose
runs (the trajectories of the groups that proposed it, this session) come from
fewer than two distinct members is *held* (journaled as rejected, never
applied) when it would be served team-wide, unless a learner's own runs are
among them or the learner approved (``agentmem team learn
--approve-single-member``). Served in one project or on one machine, it is
applied there, as a private lesson would be (:mod:`agentmem.projects`); a
confirmation from one member never promotes a lesson to global, and one
member's runs never delete a lesson served to the whole team. Every team
operation notes in the journal which members supported it, so that a person
reviewing a held or risky lesson sees it.

A run's member is the one the learner verified when it took the run in
(``meta.team_member``, :func:`agentmem.team.inbox.attribute`); an unsigned run
is nobody's and never counts as a member.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from ..storage import scopes, trajectories

__all__ = [
    "DELETE_HELD",
    "HELD",
    "NO_PROMOTION",
    "Checked",
    "check_operations",
    "members_of",
    "scoped",
]

#: Why a lesson from one member's runs is held.
HELD = (
    "held: only {who} supported it, and one member's runs make no lesson served to the whole "
    "team; runs of a second member, or the learner's approval (agentmem team learn "
    "--approve-single-member), can"
)
#: Why one member's deletion of a lesson served to the whole team is held.
DELETE_HELD = (
    "held: only {who} supported deleting a lesson served to the whole team; runs of a second "
    "member, or the learner's approval, can"
)
#: The ``op.detail`` flag of a confirmation that may not promote its lesson to global.
NO_PROMOTION = "team_no_promotion"


def members_of(db: Any, tids: Iterable[int]) -> dict[int, str]:
    """Each run's verified member (runs of nobody left out)."""
    return {
        t: str(m)
        for t, m in trajectories.meta_values(db, sorted(set(tids)), "team_member").items()
        if isinstance(m, str) and m
    }


@attrs.frozen
class Checked:
    """The operations to apply (each noting its members) and those held, with why."""

    apply: tuple[Any, ...]
    held: tuple[tuple[Any, str], ...]


def _runs(op: Any, groups: Mapping[str, Sequence[int]]) -> list[int]:
    keys = op.detail.get("merged_groups") or ([op.group] if op.group else [])
    return sorted({t for k in keys for t in groups.get(k, ())})


def _note(op: Any, extra: str) -> Any:
    return attrs.evolve(op, note="; ".join(x for x in (op.note, extra) if x))


def check_operations(
    db: Any,
    ops: Sequence[Any],
    groups: Mapping[str, Sequence[int]],
    *,
    learners: Iterable[str],
    approve: bool = False,
) -> Checked:
    """Split a team session's proposed ``ops`` into those to apply and those held.

    ``db`` is the team library as the session reads it (inside the applying
    transaction); ``groups`` each group's trajectory ids; ``learners`` the names
    of the learner tokens (their runs are the learner's own: approved)."""
    learner_names = set(learners)
    who = members_of(db, {t for op in ops for t in _runs(op, groups)})
    keep: list[Any] = []
    held: list[tuple[Any, str]] = []
    served: dict[int, Any] | None = None  # the scoped lessons, read when a DELETE needs it
    for op in ops:
        runs = _runs(op, groups)
        members = sorted({who[t] for t in runs if t in who})
        named = ", ".join(members) if members else ("none signed" if runs else "none")
        # no run of this session behind it (the learner's own edit, a merge of lessons
        # the team has already): no member's runs to weigh
        trusted = not runs or len(members) >= 2 or bool(learner_names & set(members))
        note = f"team members behind it: {named}"
        if not trusted and approve:
            note += "; one member's lesson approved by the learner"
            trusted = True
        op = _note(op, note)
        if trusted or op.kind not in ("ADD", "MODIFY", "MERGE", "CONFIRM", "DELETE"):
            keep.append(op)
            continue
        if op.kind == "DELETE":  # one member's runs do not take a lesson from everyone
            served = scopes.scopes_of(db) if served is None else served
            if any(t not in served for t in op.targets):
                held.append((op, DELETE_HELD.format(who=named)))
            else:
                keep.append(op)
            continue
        scope = scopes.decide(db, op, groups)
        everywhere = scope is None or (scope.project is None and scope.machine is None)
        if op.kind == "CONFIRM":
            if scope is not None and everywhere:  # a promotion to global: not from one member
                op = attrs.evolve(op, detail={**op.detail, NO_PROMOTION: True})
            keep.append(op)
        elif everywhere:
            held.append((op, HELD.format(who=named if members else "runs of no signed member")))
        else:
            keep.append(op)
    return Checked(tuple(keep), tuple(held))


def scoped(applied: Iterable[Any]) -> list[Any]:
    """The applied operations whose scopes are recorded (not a held promotion)."""
    return [a for a in applied if not a.op.detail.get(NO_PROMOTION)]
