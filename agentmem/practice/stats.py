"""Paired binary outcomes: what serving the lessons changed, with its uncertainty. Pure.

Each held-out task is run twice per seed, once WITH the lessons and once WITHOUT, so
the outcomes come in pairs: a 2x2 table of ``both`` (success in both arms), ``wins``
(success only with the lessons), ``losses`` (success only without) and ``neither``.

* :func:`mcnemar_exact`: McNemar's exact test, the two-sided binomial test of the
  ``wins`` among the ``wins + losses`` discordant pairs against one half (the
  concordant pairs say nothing about the difference).
* :func:`newcombe_paired`: the 95% interval for the paired difference of success
  rates, ``(wins - losses) / n``, by Newcombe's square-and-add method for paired data
  (1998, *Statistics in Medicine* 17:2635, method 10): the two arms' Wilson intervals
  (:func:`agentmem.effect.wilson`) combined with the estimated correlation between the
  arms, continuity-corrected in the correlation only.
* :func:`paired_effect`: both, and a verdict. A verdict needs at least
  :data:`MIN_DISCORDANT` discordant pairs (with fewer, no outcome could reach
  p < 0.05 with the exact test: five of five wins give p = 0.0625) from at least
  :data:`MIN_TASKS` different tasks (a lesson proven on one task is proven on that
  task); below either the verdict says "not enough data" and why. "helps" or "hurts"
  needs both the test (p < ``alpha``) and the interval (excluding 0): one pays for every
  rollout and acts on the verdict, so it is conservative.

The pairs of several seeds of one task are not independent; the test treats them as
if they were, which is why the number of tasks is a threshold of its own, and why
:func:`by_task` also reports the effect task by task (on how many tasks the lessons came
out ahead or behind, with the exact sign test), which needs no such assumption.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import attrs

from ..effect import Z, wilson

__all__ = [
    "ALPHA",
    "MIN_DISCORDANT",
    "MIN_TASKS",
    "Effect",
    "Pair",
    "Table",
    "TaskSigns",
    "by_task",
    "mcnemar_exact",
    "newcombe_paired",
    "paired_effect",
]

#: Two-sided significance level of the verdict.
ALPHA = 0.05
#: Discordant pairs a verdict needs: below 6, no split of them reaches p < 0.05.
MIN_DISCORDANT = 6
#: Different tasks the pairs must come from before a verdict.
MIN_TASKS = 3


@attrs.frozen
class Pair:
    """One task and seed run with and without the lessons: did each arm succeed."""

    task_id: str
    seed: int
    with_lessons: bool
    without: bool


def _count(_inst: Any, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{attribute.name} must be a count (an int >= 0), not {value!r}")


@attrs.frozen
class Table:
    """The paired 2x2 table: ``both`` and ``neither`` agree, ``wins`` succeeded only with
    the lessons, ``losses`` only without them."""

    both: int = attrs.field(default=0, validator=_count)
    wins: int = attrs.field(default=0, validator=_count)
    losses: int = attrs.field(default=0, validator=_count)
    neither: int = attrs.field(default=0, validator=_count)

    @classmethod
    def of(cls, pairs: Iterable[Pair | tuple[bool, bool]]) -> Table:
        """The table of ``pairs`` (each a :class:`Pair` or ``(with, without)``)."""
        cells = [0, 0, 0, 0]
        for p in pairs:
            w, wo = (p.with_lessons, p.without) if isinstance(p, Pair) else p
            cells[(0 if w else 2) + (0 if wo else 1)] += 1
        # index: (with, without) = (1,1) -> 0, (1,0) -> 1, (0,1) -> 2, (0,0) -> 3
        return cls(both=cells[0], wins=cells[1], losses=cells[2], neither=cells[3])

    @property
    def n(self) -> int:
        return self.both + self.wins + self.losses + self.neither

    @property
    def discordant(self) -> int:
        return self.wins + self.losses

    @property
    def with_rate(self) -> float | None:
        return (self.both + self.wins) / self.n if self.n else None

    @property
    def without_rate(self) -> float | None:
        return (self.both + self.losses) / self.n if self.n else None

    @property
    def difference(self) -> float | None:
        """Success rate with the lessons minus without them."""
        return (self.wins - self.losses) / self.n if self.n else None


def mcnemar_exact(wins: int, losses: int) -> float:
    """Two-sided p-value of McNemar's exact test: twice the smaller binomial tail of
    ``wins`` in ``wins + losses`` trials with p = 1/2, at most 1 (1.0 with no
    discordant pair)."""
    for name, v in (("wins", wins), ("losses", losses)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name} must be a count (an int >= 0), not {v!r}")
    m = wins + losses
    if m == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(m, i) for i in range(k + 1)) / 2**m
    return min(1.0, 2 * tail)


def newcombe_paired(t: Table, z: float = Z) -> tuple[float, float]:
    """Newcombe's square-and-add interval (1998, method 10) for the paired difference
    ``with_rate - without_rate``; ``(-1, 1)`` for an empty table."""
    n = t.n
    if n == 0:
        return -1.0, 1.0
    k1, k2 = t.both + t.wins, t.both + t.losses  # successes with, without
    p1, p2 = k1 / n, k2 / n
    l1, u1 = wilson(k1, n, z)
    l2, u2 = wilson(k2, n, z)
    # the correlation between the arms, continuity-corrected towards 0
    margins = k1 * (n - k1) * k2 * (n - k2)
    phi = 0.0
    if margins:
        cross = t.both * t.neither - t.wins * t.losses
        if cross > n / 2:
            phi = (cross - n / 2) / math.sqrt(margins)
        elif cross < 0:
            phi = cross / math.sqrt(margins)
    d = p1 - p2
    dl1, du2 = p1 - l1, u2 - p2
    du1, dl2 = u1 - p1, p2 - l2
    lo = d - math.sqrt(max(0.0, dl1**2 - 2 * phi * dl1 * du2 + du2**2))
    hi = d + math.sqrt(max(0.0, du1**2 - 2 * phi * du1 * dl2 + dl2**2))
    return max(-1.0, lo), min(1.0, hi)


@attrs.frozen
class TaskSigns:
    """The effect task by task: on how many tasks the lessons' pairs came out ahead
    (more wins than losses), behind, or even, and the exact sign test of ahead against
    behind. Robust to the seeds of one task being alike, which McNemar's test is not."""

    better: int
    worse: int
    same: int
    p_value: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "better": self.better,
            "worse": self.worse,
            "same": self.same,
            "p_value": _r(self.p_value, 6),
        }


def by_task(pairs: Iterable[Pair]) -> TaskSigns:
    """:class:`TaskSigns` of ``pairs``."""
    net: dict[str, int] = {}
    for p in pairs:
        net[p.task_id] = net.get(p.task_id, 0) + int(p.with_lessons) - int(p.without)
    better = sum(1 for v in net.values() if v > 0)
    worse = sum(1 for v in net.values() if v < 0)
    return TaskSigns(better, worse, len(net) - better - worse, mcnemar_exact(better, worse))


@attrs.frozen
class Effect:
    """What a set of pairs says: the table, the difference with its interval, the
    exact test, and the verdict (``helps``, ``hurts``, ``no effect`` or
    ``not enough data``) with a sentence saying why."""

    table: Table
    tasks: int
    difference: float | None
    ci: tuple[float, float]
    p_value: float
    verdict: str
    why: str
    #: The same pairs task by task (see :func:`by_task`).
    signs: TaskSigns = TaskSigns(0, 0, 0, 1.0)

    @property
    def enough(self) -> bool:
        return self.verdict != "not enough data"

    def to_dict(self) -> dict[str, Any]:
        t = self.table
        return {
            "pairs": t.n,
            "tasks": self.tasks,
            "table": {"both": t.both, "wins": t.wins, "losses": t.losses, "neither": t.neither},
            "with_rate": _r(t.with_rate),
            "without_rate": _r(t.without_rate),
            "difference": _r(self.difference),
            "ci": [_r(self.ci[0]), _r(self.ci[1])],
            "p_value": _r(self.p_value, 6),
            "verdict": self.verdict,
            "why": self.why,
            "by_task": self.signs.to_dict(),
        }


def _r(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x, digits)


def paired_effect(
    pairs: Iterable[Pair],
    *,
    min_discordant: int = MIN_DISCORDANT,
    min_tasks: int = MIN_TASKS,
    alpha: float = ALPHA,
) -> Effect:
    """The effect of the lessons in ``pairs`` and its verdict (see the module doc)."""
    pairs = list(pairs)
    t = Table.of(pairs)
    tasks = len({p.task_id for p in pairs})
    ci = newcombe_paired(t)
    p = mcnemar_exact(t.wins, t.losses)
    signs = by_task(pairs)
    if t.discordant < min_discordant or tasks < min_tasks:
        why = (
            f"{t.discordant} discordant pairs (wins {t.wins}, losses "
            f"{t.losses}) from {tasks} task(s); a verdict needs {min_discordant} discordant "
            f"pairs from {min_tasks} tasks"
        )
        return Effect(t, tasks, t.difference, ci, p, "not enough data", why, signs)
    if p < alpha and ci[0] > 0:
        verdict, why = "helps", f"more wins than losses ({t.wins} to {t.losses}), p = {p:.3g}"
    elif p < alpha and ci[1] < 0:
        verdict, why = "hurts", f"more losses than wins ({t.losses} to {t.wins}), p = {p:.3g}"
    else:
        verdict = "no effect"
        why = (
            f"wins {t.wins}, losses {t.losses}, p = {p:.3g}, "
            f"interval [{ci[0]:.3f}, {ci[1]:.3f}] spans 0"
        )
    return Effect(t, tasks, t.difference, ci, p, verdict, why, signs)
