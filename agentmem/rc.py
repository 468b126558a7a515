"""Reward-conditioned groups (RC-GRPO): group plans and degeneracy diagnostics.

A strong agent often gets the same reward on every rollout of a task; such a
group has sigma = 0 and teaches nothing. RC-GRPO conditions each rollout on a
reward token drawn from a fixed distribution P_sample, which injects variance.
agentmem cannot fine-tune a model, but it plans the tokens, records them with
the trajectories, diagnoses degeneracy and exports fine-tuning data
(:mod:`agentmem.export`).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from .errors import InvalidRecordError

if TYPE_CHECKING:
    from .rewards import GroupReport

__all__ = [
    "DEFAULT_P_SAMPLE",
    "HIGH",
    "INSTRUCTIONS",
    "LOW",
    "GroupPlan",
    "Rollout",
    "diagnose",
    "mixed_marginal",
    "plan_group",
]

HIGH = "<|high reward|>"
LOW = "<|low reward|>"
#: P_sample by default: the two tokens, equally likely.
DEFAULT_P_SAMPLE: Mapping[str, float] = {HIGH: 0.5, LOW: 0.5}
#: What an untuned model is told in place of a token it was never trained on.
INSTRUCTIONS: Mapping[str, str] = {
    HIGH: "Aim for the best outcome: follow every required step, check preconditions and "
    "verify each tool result before you go on.",
    LOW: "Act as a hasty agent would: take the first plausible approach and do not "
    "double-check tool results.",
}


@attrs.frozen
class Rollout:
    """One planned rollout: its reward token and the text to put in its prompt."""

    index: int
    condition: str
    prompt: str


@attrs.frozen
class GroupPlan:
    """Which reward token each of the G rollouts of a task is conditioned on."""

    task: str
    group: str
    rollouts: tuple[Rollout, ...]
    p_sample: dict[str, float]
    seed: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "group": self.group,
            "seed": self.seed,
            "p_sample": self.p_sample,
            "rollouts": [attrs.asdict(r) for r in self.rollouts],
        }


def _check_p(p_sample: Mapping[str, float]) -> dict[str, float]:
    if len(p_sample) < 2:
        raise InvalidRecordError("P_sample needs at least two reward tokens")
    out = {}
    for tok, p in p_sample.items():
        if not isinstance(tok, str) or not tok.strip():
            raise InvalidRecordError("reward tokens must be non-empty text")
        if not isinstance(p, (int, float)) or not 0 < p < 1:
            raise InvalidRecordError(f"P_sample({tok}) must be strictly between 0 and 1, not {p!r}")
        out[tok] = float(p)
    if abs(sum(out.values()) - 1.0) > 1e-9:
        raise InvalidRecordError(f"P_sample must sum to 1, not {sum(out.values())}")
    return out


def plan_group(
    task: str,
    size: int,
    *,
    p_sample: Mapping[str, float] = DEFAULT_P_SAMPLE,
    seed: int | None = None,
    tuned: bool = False,
    group: str | None = None,
    instructions: Mapping[str, str] = INSTRUCTIONS,
) -> GroupPlan:
    """Plan a reward-conditioned group of ``size`` rollouts of ``task``.

    Tokens are drawn independently from ``p_sample``; when ``size >= 2`` a draw
    in which every rollout got the same token is thrown away and redrawn
    (rejection sampling), so the group is always mixed. That conditions the
    i.i.d. draw on "not all equal": the plan stays exchangeable (every order
    equally likely), and each rollout's marginal moves toward the rarer token,
    see :func:`mixed_marginal` (unchanged for a 50/50 P_sample).
    ``tuned`` puts the raw token in the prompt (an RCTP-tuned model); otherwise
    an instruction stands in for it.
    """
    from .records import normalise_group

    if not isinstance(size, int) or size < 1:
        raise InvalidRecordError(f"group size must be a whole number >= 1, not {size!r}")
    if not task.strip():
        raise InvalidRecordError("task must not be empty")
    p = _check_p(p_sample)
    rng = random.Random(seed)
    tokens, weights = list(p), list(p.values())
    while True:
        draw = rng.choices(tokens, weights=weights, k=size)
        if size < 2 or len(set(draw)) > 1:
            break
    rollouts = []
    for i, tok in enumerate(draw):
        text = tok if tuned else instructions.get(tok, tok)
        rollouts.append(Rollout(i, tok, text))
    return GroupPlan(task, group or normalise_group(task), tuple(rollouts), p, seed)


def mixed_marginal(p: float, size: int) -> float:
    """P(a rollout gets the first token) under :func:`plan_group`, two tokens, P(first) = p.

    The i.i.d. marginal p, conditioned on "not all equal":
    (p - p^G) / (1 - p^G - (1 - p)^G).
    """
    if size < 2:
        return p
    return (p - p**size) / (1 - p**size - (1 - p) ** size)


def _sigma_summary(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"min": None, "p25": None, "median": None, "p75": None, "max": None}
    vs = sorted(values)
    q = statistics.quantiles(vs, n=4) if len(vs) >= 2 else [vs[0]] * 3
    return {"min": vs[0], "p25": q[0], "median": statistics.median(vs), "p75": q[2], "max": vs[-1]}


def _side(groups: Sequence[GroupReport]) -> dict[str, Any]:
    ready = [g for g in groups if g.ready]
    sig = [g.stats.std for g in ready if g.stats and g.stats.std is not None]
    var = [s * s for s in sig]
    return {
        "groups": len(groups),
        "ready": len(ready),
        "degenerate": sum(1 for g in ready if g.degenerate),
        "degenerate_share": (sum(1 for g in ready if g.degenerate) / len(ready)) if ready else None,
        "usable_share": (sum(1 for g in ready if not g.degenerate) / len(ready)) if ready else None,
        "mean_within_group_variance": statistics.fmean(var) if var else None,
        "sigma": _sigma_summary(sig),
    }


class GroupSource(Protocol):
    """What :func:`diagnose` reads: an :class:`agentmem.Memory` is one."""

    @property
    def reward_kind(self) -> str: ...

    def groups(self, *, reward: str | None = None) -> list[GroupReport]: ...


def diagnose(mem: GroupSource) -> dict[str, Any]:
    """Degeneracy diagnostics under both rewards, conditioned vs unconditioned groups,
    of ``mem``'s groups (an :class:`agentmem.Memory`)."""
    out: dict[str, Any] = {"rewards": {}, "advice": []}
    for kind in ("composite", "binary"):
        reports = mem.groups(reward=kind)
        cond = [g for g in reports if any(m.condition for m in g.members)]
        plain = [g for g in reports if not any(m.condition for m in g.members)]
        out["rewards"][kind] = {
            "all": _side(reports),
            "conditioned": _side(cond),
            "unconditioned": _side(plain),
            "degenerate_groups": [g.key for g in reports if g.ready and g.degenerate],
        }
    kind = mem.reward_kind
    side = out["rewards"][kind]
    share = side["all"]["degenerate_share"]
    if share is not None and share > 0:
        n = side["all"]["degenerate"]
        if side["conditioned"]["groups"] == 0:
            out["advice"].append(
                f"{n} of {side['all']['ready']} ready groups ({share:.0%}) are degenerate "
                "under the "
                f"{kind} reward and teach nothing; reward-conditioned groups would help: plan "
                "rollouts with 'agentmem plan TASK --size G' and record each one's condition."
            )
        else:
            c, u = side["conditioned"], side["unconditioned"]
            out["advice"].append(
                f"conditioned groups: {c['usable_share'] or 0:.0%} usable; unconditioned: "
                f"{u['usable_share'] or 0:.0%} usable."
            )
    elif share == 0:
        out["advice"].append("no degenerate groups: every ready group carries a learning signal.")
    return out
