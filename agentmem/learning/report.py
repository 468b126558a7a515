"""What a learning session is asked to do (:class:`LearnOptions`) and what it did
(:class:`LearnReport`, one :class:`GroupResult` per group), and how its groups are
journaled (:func:`group_rows`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import attrs

from ..errors import InvalidRecordError
from ..rewards import DEFAULT_WEIGHTS, GroupReport, RewardWeights
from ..storage.journal import AppliedOp
from .findings import Finding
from .grouping import GROUPINGS, Grouping, LearningGroup
from .stages import ModelUsage, Summary

__all__ = [
    "DEFAULT_OPTIONS",
    "GroupResult",
    "LearnOptions",
    "LearnReport",
    "Selection",
    "build_report",
    "group_rows",
]


@attrs.frozen
class LearnOptions:
    """Knobs of a session; the defaults are the paper's.

    ``grouping``: ``exact`` (groups of one task only, as in the paper),
    ``similar`` (also groups of similar tasks) or ``auto`` (also a run's own
    corrections; the default). See :mod:`agentmem.learning.grouping`.
    """

    reward: str = "composite"
    weights: RewardWeights = DEFAULT_WEIGHTS
    k_stage2: int = 5
    max_findings: int = 3
    stage1_model: bool = True
    groups: tuple[str, ...] | None = None
    relearn: bool = False
    max_groups: int | None = None
    grouping: str = attrs.field(default="auto")

    @classmethod
    def of_library(cls, db: Any, **changes: Any) -> LearnOptions:
        """The options a library's settings ask for (its reward and its weights), with
        ``changes``."""
        from ..storage import settings

        return cls(
            reward=str(settings.get(db, settings.REWARD, "composite")),
            weights=RewardWeights.from_setting(settings.get(db, settings.REWARD_WEIGHTS)),
            **changes,
        )

    @grouping.validator
    def _check_grouping(self, _attr: Any, value: str) -> None:
        if value not in GROUPINGS:
            raise InvalidRecordError(
                f"grouping must be one of {', '.join(GROUPINGS)}, not {value!r}"
            )


#: The paper's defaults.
DEFAULT_OPTIONS = LearnOptions()


@attrs.frozen
class GroupResult:
    key: str
    size: int
    weight: float
    conditions: dict[str, int]
    summaries: tuple[Summary, ...]
    findings: tuple[Finding, ...]
    trajectory_ids: tuple[int, ...]
    kind: str = "exact"
    reason: str = ""


@attrs.frozen
class LearnReport:
    """What a session did and what it cost."""

    session_id: int | None
    dry_run: bool
    groups_seen: int
    groups_ready: int
    groups_degenerate: int
    groups_pending: int
    groups_already_learned: int
    groups_used: int
    llm_calls: int
    llm_call_bound: int
    compressions: int
    llm_failures: int
    prompt_tokens: int
    completion_tokens: int
    model_seconds: float
    wall_seconds: float
    operations: tuple[AppliedOp, ...]
    groups: tuple[GroupResult, ...] = ()
    #: Why the model could not be used (its worker died, hung, or its server was
    #: unreachable); the session then used the data-derived texts. None when it could.
    model_unavailable: str | None = None
    grouping: str = "exact"
    groups_single: int = 0
    groups_formed: dict[str, int] = attrs.field(factory=dict)
    free_runs: int = 0
    theta_task: float | None = None
    #: Seconds per part of the session: ``select`` (forming the groups), ``load``
    #: (trajectories), ``stage1``, ``stage2`` (retrieval included), ``stage3``, ``apply``
    #: (embedding the new texts and the write transaction).
    timings: dict[str, float] = attrs.field(factory=dict)

    @property
    def other_seconds(self) -> float:
        return max(0.0, self.wall_seconds - self.model_seconds)

    @property
    def applied(self) -> list[AppliedOp]:
        return [o for o in self.operations if o.status in ("applied", "proposed")]

    @property
    def rejected(self) -> list[AppliedOp]:
        return [o for o in self.operations if o.status == "rejected"]

    def as_dict(self) -> dict[str, Any]:
        d = {
            k: v
            for k, v in attrs.asdict(self, recurse=False).items()
            if k not in ("operations", "groups")
        }
        d["other_seconds"] = self.other_seconds
        d["groups"] = [
            {
                "kind": g.kind,
                "group": g.key,
                "trajectory_ids": list(g.trajectory_ids),
                "reason": g.reason,
                "findings": [f.text for f in g.findings],
            }
            for g in self.groups
        ]
        d["operations"] = [
            {
                "kind": o.op.kind,
                "status": o.status,
                "targets": list(o.op.targets),
                "result_id": o.result_id,
                "text": o.op.text,
                "domain": o.op.domain,
                "group": o.op.group,
                "origin": o.op.origin,
                "reason": "; ".join(x for x in (o.reason, o.op.note) if x),
            }
            for o in self.operations
        ]
        return d


def group_rows(results: Sequence[GroupResult]) -> list[dict[str, Any]]:
    """The ``session_groups`` rows of a session's groups, for
    :func:`agentmem.storage.journal.record_groups`: each with its kind and why its runs
    were put together."""
    return [
        {
            "group_key": r.key,
            "trajectory_ids": list(r.trajectory_ids),
            "status": "used" if r.findings else "no-findings",
            "mean_abs_advantage": r.weight,
            "conditions": r.conditions,
            "summaries": [attrs.asdict(s) for s in r.summaries],
            "kind": r.kind,
            "reason": r.reason,
        }
        for r in results
    ]


@attrs.frozen
class Selection:
    """The groups a session found (exact reports, and the usable groups of every kind in
    the order it takes them) and the ones it learns from now (``fresh``)."""

    grouping: Grouping
    reports: tuple[GroupReport, ...]
    ready: tuple[GroupReport, ...]
    usable: tuple[LearningGroup, ...]
    fresh: tuple[LearningGroup, ...]


def build_report(
    session_id: int | None,
    dry_run: bool,
    picked: Selection,
    usage: ModelUsage,
    compressions: int,
    t0: float,
    applied: Sequence[AppliedOp],
    results: Sequence[GroupResult],
    timings: dict[str, float],
) -> LearnReport:
    """The report of a session that started at ``t0`` (``time.perf_counter()``)."""
    reports, ready, usable, fresh = picked.reports, picked.ready, picked.usable, picked.fresh
    exact_usable = sum(1 for g in ready if not g.degenerate)
    waiting = sum(1 for g in reports if g.stats is None)
    formed: dict[str, int] = {}
    for g in usable:
        if g.kind != "exact":
            formed[g.kind] = formed.get(g.kind, 0) + 1
    return LearnReport(
        session_id=session_id,
        dry_run=dry_run,
        groups_seen=len(reports),
        groups_ready=exact_usable,
        groups_degenerate=len(ready) - exact_usable,
        groups_pending=waiting,
        groups_single=sum(1 for g in reports if g.size == 1 and g.stats is not None),
        groups_already_learned=len(usable) - len(fresh),
        groups_used=len(fresh),
        llm_calls=usage.calls,
        llm_call_bound=sum(g.size + 1 for g in fresh) + compressions,
        compressions=compressions,
        llm_failures=usage.failures,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        model_seconds=usage.seconds,
        wall_seconds=time.perf_counter() - t0,
        operations=tuple(applied),
        groups=tuple(results),
        model_unavailable=usage.unavailable,
        grouping=picked.grouping.mode,
        groups_formed=formed,
        free_runs=picked.grouping.free_runs,
        theta_task=picked.grouping.theta_task,
        timings=timings,
    )
