"""Rewards and group-relative advantages (paper, sections 3.2 and 3.3). Pure functions.

- rho_s, the tool success rate: the share of successful steps; 1 when K = 0.
- rho_a, the user acceptance signal: 0 when the user corrected or rejected the
  output, 1 once the acceptance window (Delta t = 120 s) has passed without a
  correction, or when the user accepted explicitly. Until then it is pending.
- R = w1 * rho_s + w2 * rho_a, with w1 = 0.4 and w2 = 0.6 by default.
- A_i = (R_i - mu_G) / (sigma_G + eps), sigma_G the sample standard deviation
  (G - 1 in the denominator) and eps = 1e-8. A group whose sigma_G < eps, or
  that has no positive and no negative trajectory, is degenerate: it carries
  no learning signal and is discarded.
- The binary reward of RC-GRPO, R = R_state * R_action, is the alternative.

:func:`score_groups` turns a group's rows (as :func:`agentmem.storage.trajectories.group_reports`
reads them) into :class:`GroupReport` s: rewards, advantages, readiness and degeneracy.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from .errors import InvalidRecordError
from .records import Step, success_rate

__all__ = [
    "ACCEPTANCE_WINDOW",
    "DEFAULT_WEIGHTS",
    "EPSILON",
    "REWARD_KINDS",
    "Acceptance",
    "GroupReport",
    "GroupStats",
    "RewardWeights",
    "TrajectoryReward",
    "acceptance",
    "action_coverage",
    "binary_reward",
    "check_reward_kind",
    "composite_reward",
    "group_stats",
    "is_negative",
    "is_positive",
    "score_groups",
    "success_rate",
]


def is_positive(advantage: float, accepted: bool | None) -> bool:
    """A positive run of its group: advantage above 0 (paper, eq. 7), or exactly at the
    group mean with the user's acceptance (the composite reward makes a tie possible)."""
    return advantage > 0 or (advantage == 0 and accepted is True)


def is_negative(advantage: float, accepted: bool | None) -> bool:
    """A negative run of its group: advantage below 0, or at the mean and rejected."""
    return advantage < 0 or (advantage == 0 and accepted is False)


#: The paper's Delta t: silence for this long after a trajectory means acceptance.
ACCEPTANCE_WINDOW = timedelta(seconds=120)
#: The paper's epsilon, both in the advantage denominator and the degeneracy test.
EPSILON = 1e-8


#: The rewards a library can use: the paper's composite one, or RC-GRPO's binary one.
REWARD_KINDS = ("composite", "binary")


def check_reward_kind(kind: str) -> str:
    """``kind`` if it names a reward (:data:`REWARD_KINDS`); else InvalidRecordError."""
    if kind not in REWARD_KINDS:
        raise InvalidRecordError(f"reward must be one of {', '.join(REWARD_KINDS)}, not {kind!r}")
    return kind


@attrs.frozen
class Acceptance:
    """The state of rho_a for one trajectory: ``value`` is 1, 0, or None while pending."""

    value: int | None
    reason: str

    @property
    def pending(self) -> bool:
        return self.value is None

    @property
    def label(self) -> str:
        return {None: "pending", 1: "accepted", 0: "rejected"}[self.value]


def acceptance(
    events: Sequence[tuple[str, datetime]],
    ended_at: datetime,
    now: datetime,
    window: timedelta = ACCEPTANCE_WINDOW,
) -> Acceptance:
    """rho_a from the feedback events ``(kind, time)`` on one trajectory.

    The latest explicit event decides: ``correct`` or ``reject`` give 0,
    ``accept`` gives 1. With no event, the trajectory is accepted once
    ``window`` has passed since ``ended_at``, and pending until then.

    The paper counts only corrections inside the window; agentmem also honours
    an explicit verdict that arrives later (a late "that was wrong" is still
    the truth), and an explicit accept that arrives early.
    """
    if events:
        kind, _at = max(events, key=lambda e: e[1])
        if kind in ("correct", "reject"):
            return Acceptance(0, f"user {'corrected' if kind == 'correct' else 'rejected'} it")
        if kind == "accept":
            return Acceptance(1, "user accepted it")
        raise InvalidRecordError(f"unknown feedback kind {kind!r}")
    if now - ended_at >= window:
        return Acceptance(1, f"no correction within {int(window.total_seconds())} s")
    left = window - (now - ended_at)
    return Acceptance(None, f"acceptance window open for {math.ceil(left.total_seconds())} s more")


@attrs.frozen
class RewardWeights:
    """w1 (tool success) and w2 (user acceptance): non-negative, summing to 1.

    Use ``RewardWeights(1.0, 0.0)`` for automated pipelines with no human in the loop.
    """

    w1: float = 0.4
    w2: float = 0.6

    @classmethod
    def from_setting(cls, value: Sequence[float] | None) -> RewardWeights:
        """The weights a library's ``reward_weights`` setting holds (the defaults if unset)."""
        return cls(*value) if value else cls()

    def __attrs_post_init__(self) -> None:
        for name, w in (("w1", self.w1), ("w2", self.w2)):
            if not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
                raise InvalidRecordError(f"reward weight {name} must be a number >= 0, not {w!r}")
        if abs(self.w1 + self.w2 - 1.0) > 1e-9:
            raise InvalidRecordError(
                f"reward weights must sum to 1 (R stays in [0, 1]); got {self.w1} + {self.w2}"
            )


def composite_reward(rho_s: float, rho_a: int, weights: RewardWeights | None = None) -> float:
    """R = w1 * rho_s + w2 * rho_a (default weights 0.4 and 0.6)."""
    weights = weights or DEFAULT_WEIGHTS
    return weights.w1 * rho_s + weights.w2 * rho_a


#: The paper's default weights.
DEFAULT_WEIGHTS = RewardWeights()


def binary_reward(state_ok: bool, action_coverage: float) -> float:
    """RC-GRPO's R = R_state * R_action: 1 only when the final state is right and every
    essential action was covered (``action_coverage`` is the share covered, in [0, 1])."""
    return 1.0 if state_ok and action_coverage >= 1.0 else 0.0


@attrs.frozen
class GroupStats:
    """mu_G, sigma_G and the advantages of one group, and whether it is degenerate."""

    rewards: tuple[float, ...]
    mean: float
    std: float | None
    advantages: tuple[float, ...]
    degenerate: bool
    reason: str

    @property
    def mean_abs_advantage(self) -> float:
        """Stage 3's A-bar: (1/G) * sum |A_i|, the weight of this group in conflicts."""
        if not self.advantages:
            return 0.0
        return sum(abs(a) for a in self.advantages) / len(self.advantages)

    @property
    def positives(self) -> int:
        return sum(1 for a in self.advantages if a > 0)

    @property
    def negatives(self) -> int:
        return sum(1 for a in self.advantages if a < 0)


def group_stats(rewards: Sequence[float], eps: float = EPSILON) -> GroupStats:
    """Group statistics and advantages (paper eq. agent-advantage).

    A group of fewer than two trajectories has no sample standard deviation
    and is degenerate; so is one with sigma_G < eps (every trajectory got the
    same reward), and one without both a positive and a negative example.
    """
    rs = tuple(float(r) for r in rewards)
    for r in rs:
        if not math.isfinite(r):
            raise InvalidRecordError(f"reward {r!r} is not a finite number")
    g = len(rs)
    if g == 0:
        return GroupStats(rs, 0.0, None, (), True, "empty group")
    mu = sum(rs) / g
    if g == 1:
        return GroupStats(rs, mu, None, (0.0,), True, "one trajectory: nothing to compare")
    sigma = math.sqrt(sum((r - mu) ** 2 for r in rs) / (g - 1))
    if sigma < eps:
        return GroupStats(rs, mu, sigma, (0.0,) * g, True, "every trajectory has the same reward")
    adv = tuple((r - mu) / (sigma + eps) for r in rs)
    stats = GroupStats(rs, mu, sigma, adv, False, "")
    if stats.positives == 0 or stats.negatives == 0:
        return attrs.evolve(stats, degenerate=True, reason="no positive or no negative example")
    return stats


def action_coverage(steps: Sequence[Step], actions: Sequence[Mapping[str, Any]]) -> float:
    """R_action's coverage: the share of essential actions that some step performed.

    An essential action ``{"name": tool, "kwargs": {...}}`` is covered by a step
    that called the same tool with every given argument equal to the step's
    parameter of that name. Values compare as JSON (numbers by value, strings
    exactly but for surrounding white space and case); extra step parameters
    are allowed. No essential actions means full coverage.
    """
    if not actions:
        return 1.0

    def norm(v: Any) -> Any:
        if isinstance(v, str):
            return v.strip().lower()
        if isinstance(v, bool) or v is None:
            return v
        if isinstance(v, (int, float)):
            return float(v)
        if isinstance(v, Mapping):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        return v

    covered = 0
    for a in actions:
        want = norm(dict(a.get("kwargs") or {}))
        for s in steps:
            if s.tool == a["name"] and all(
                k in s.params and norm(s.params[k]) == v for k, v in want.items()
            ):
                covered += 1
                break
    return covered / len(actions)


@attrs.frozen
class TrajectoryReward:
    """One trajectory's place in its group: reward parts, reward and advantage."""

    id: int
    success_rate: float
    acceptance: Acceptance
    reward: float | None
    advantage: float | None
    condition: str | None
    step_count: int
    failed_steps: int


@attrs.frozen
class GroupReport:
    """A task group: its trajectories' rewards, statistics, readiness and degeneracy."""

    key: str
    task: str
    members: tuple[TrajectoryReward, ...]
    stats: GroupStats | None
    ready: bool
    reason: str

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def degenerate(self) -> bool:
        return self.stats is not None and self.stats.degenerate

    @property
    def usable(self) -> bool:
        """Ready and not degenerate: this group carries a learning signal."""
        return self.ready and not self.degenerate

    @property
    def conditions(self) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for m in self.members:
            counts[m.condition or "none"] += 1
        return dict(counts)

    @property
    def status(self) -> str:
        if not self.ready:
            return "pending"
        return "degenerate" if self.degenerate else "ready"

    def as_dict(self) -> dict[str, Any]:
        st = self.stats
        return {
            "group": self.key,
            "task": self.task,
            "size": self.size,
            "status": self.status,
            "reason": self.reason,
            "mean": None if st is None else st.mean,
            "std": None if st is None else st.std,
            "conditions": self.conditions,
            "trajectories": [
                {
                    "id": m.id,
                    "success_rate": m.success_rate,
                    "acceptance": m.acceptance.label,
                    "reward": m.reward,
                    "advantage": m.advantage,
                    "condition": m.condition,
                    "steps": m.step_count,
                    "failed_steps": m.failed_steps,
                }
                for m in self.members
            ],
        }


def _reward(
    row: Mapping[str, Any],
    acc: Acceptance,
    steps: Sequence[Step],
    weights: RewardWeights,
    reward: str,
) -> float | None:
    """One run's reward, None while it waits for its verdict."""
    if reward == "binary":
        state = row["state_ok"]
        if state is None:
            state = acc.value
        acts = json.loads(row["essential_actions"]) if row["essential_actions"] else []
        cov = action_coverage(steps, acts)
        return None if state is None else binary_reward(bool(state), cov)
    return None if acc.value is None else composite_reward(row["success_rate"], acc.value, weights)


def _report(
    key: str,
    members: Sequence[Mapping[str, Any]],
    rewards: Sequence[float | None],
    verdicts: Mapping[int, Acceptance],
) -> GroupReport:
    """A group's report from its runs' rewards: statistics, advantages and readiness."""
    pending = [m["id"] for m, rw in zip(members, rewards) if rw is None]
    stats: GroupStats | None = None
    if pending:
        ready, reason = (
            False,
            f"waiting for acceptance of trajectory {', '.join(map(str, pending))}",
        )
    else:
        stats = group_stats([rw or 0.0 for rw in rewards])
        ready, reason = len(members) >= 2, stats.reason
    advs = stats.advantages if stats and not stats.degenerate else (None,) * len(members)
    return GroupReport(
        key=key,
        task=members[0]["task"],
        members=tuple(
            TrajectoryReward(
                id=m["id"],
                success_rate=m["success_rate"],
                acceptance=verdicts[m["id"]],
                reward=rw,
                advantage=a,
                condition=m["condition"],
                step_count=m["step_count"],
                failed_steps=m["failed"],
            )
            for m, rw, a in zip(members, rewards, advs)
        ),
        stats=stats,
        ready=ready,
        reason=reason,
    )


def score_groups(
    rows: Iterable[Mapping[str, Any]],
    verdicts: Mapping[int, Acceptance],
    steps: Mapping[int, Sequence[Step]],
    *,
    weights: RewardWeights = DEFAULT_WEIGHTS,
    reward: str = "composite",
) -> list[GroupReport]:
    """Every group of ``rows`` (runs in group order, each with ``id``, ``task``,
    ``group_key``, ``condition``, ``step_count``, ``success_rate``, ``state_ok``,
    ``essential_actions`` and ``failed``) with rewards, advantages, readiness and degeneracy.

    ``verdicts`` holds each run's rho_a; ``steps`` each run's steps (only the binary
    reward reads them). ``reward`` is ``"composite"`` (w1 * rho_s + w2 * rho_a) or
    ``"binary"`` (R_state * R_action; R_state from the run's recorded ``state_ok``,
    falling back to the user's acceptance, and R_action from :func:`action_coverage` of
    its essential actions). A group is ready when it has at least two runs and none is
    waiting for its acceptance window to close.
    """
    by_group: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        by_group[r["group_key"]].append(r)
    return [
        _report(
            key,
            members,
            [
                _reward(m, verdicts[m["id"]], steps.get(m["id"], ()), weights, reward)
                for m in members
            ],
            verdicts,
        )
        for key, members in by_group.items()
    ]
