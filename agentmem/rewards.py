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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta

import attrs

from .errors import InvalidRecordError

__all__ = [
    "ACCEPTANCE_WINDOW",
    "DEFAULT_WEIGHTS",
    "EPSILON",
    "Acceptance",
    "GroupStats",
    "RewardWeights",
    "acceptance",
    "binary_reward",
    "composite_reward",
    "group_stats",
    "success_rate",
]

#: The paper's Delta t: silence for this long after a trajectory means acceptance.
ACCEPTANCE_WINDOW = timedelta(seconds=120)
#: The paper's epsilon, both in the advantage denominator and the degeneracy test.
EPSILON = 1e-8


def success_rate(successes: Sequence[bool]) -> float:
    """rho_s: the fraction of tool calls that succeeded; 1.0 for K = 0."""
    if not successes:
        return 1.0
    return sum(1 for s in successes if s) / len(successes)


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
