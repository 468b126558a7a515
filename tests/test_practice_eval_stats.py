"""agentmem.practice.stats against published worked examples."""

from __future__ import annotations

import math

import pytest

from agentmem.effect import newcombe
from agentmem.practice.stats import (
    MIN_DISCORDANT,
    Pair,
    Table,
    by_task,
    mcnemar_exact,
    newcombe_paired,
    paired_effect,
)

# Cavo et al. (2012), complete response before and after consolidation therapy, the
# paired example of Fagerland, Lydersen & Laake, "Statistical Analysis of Contingency
# Tables" (2017), chapter 8: 59 / 6 / 16 / 80 of 161 patients. Published: the difference
# -0.0621, Newcombe's square-and-add interval -0.1186 to -0.0046, McNemar's exact
# conditional test P = 0.052479 (the figures the book's R package, contingencytables,
# pins in its tests).
CAVO = Table(both=59, wins=6, losses=16, neither=80)
# Bentur et al. (2009), airway hyper-responsiveness, the book's other paired example:
# 1 / 1 / 7 / 12; McNemar's exact conditional P = 0.0703 (2 * 9 / 256).
BENTUR = Table(both=1, wins=1, losses=7, neither=12)


def test_newcombe_paired_reproduces_the_published_interval() -> None:
    lo, hi = newcombe_paired(CAVO)
    assert CAVO.difference == pytest.approx(-0.0621, abs=5e-5)
    assert lo == pytest.approx(-0.1186, abs=5e-5)
    assert hi == pytest.approx(-0.0046, abs=5e-5)


def test_mcnemar_exact_reproduces_the_published_p_values() -> None:
    assert mcnemar_exact(CAVO.wins, CAVO.losses) == pytest.approx(0.052479, abs=5e-7)
    assert mcnemar_exact(BENTUR.wins, BENTUR.losses) == pytest.approx(18 / 256)
    # symmetric, 1 with nothing discordant or an even split, never above 1
    assert mcnemar_exact(16, 6) == mcnemar_exact(6, 16)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == 1.0
    # five of five is not significant; six of six is (why MIN_DISCORDANT is 6)
    assert mcnemar_exact(5, 0) == pytest.approx(0.0625)
    assert mcnemar_exact(6, 0) == pytest.approx(0.03125)
    assert MIN_DISCORDANT == 6


def test_with_no_correlation_the_paired_interval_is_the_unpaired_one() -> None:
    # Bentur's cross product (1*12 - 1*7 = 5) is under n/2: the corrected correlation
    # is 0 and the interval is Newcombe's independent one on the two margins.
    assert newcombe_paired(BENTUR) == pytest.approx(newcombe(2, 21, 8, 21))


def test_a_positive_correlation_narrows_the_interval() -> None:
    t = Table(both=40, wins=8, losses=1, neither=40)
    lo, hi = newcombe_paired(t)
    ulo, uhi = newcombe(48, 89, 41, 89)
    assert lo < t.difference < hi  # type: ignore[operator]
    assert hi - lo < uhi - ulo


def test_table_of_pairs_and_bad_counts() -> None:
    t = Table.of([(True, True), (True, False), (True, False), (False, True), (False, False)])
    assert (t.both, t.wins, t.losses, t.neither) == (1, 2, 1, 1)
    assert t.with_rate == pytest.approx(0.6) and t.without_rate == pytest.approx(0.4)
    assert Table().difference is None and newcombe_paired(Table()) == (-1.0, 1.0)
    with pytest.raises(ValueError, match="count"):
        Table(wins=-1)
    with pytest.raises(ValueError, match="count"):
        mcnemar_exact(1, True)  # type: ignore[arg-type]


def _pairs(wins: int, losses: int, ties: int, tasks: int) -> list[Pair]:
    cells = [(True, False)] * wins + [(False, True)] * losses + [(True, True)] * ties
    return [Pair(f"t{i % tasks}", i // tasks, w, wo) for i, (w, wo) in enumerate(cells)]


def test_paired_effect_verdicts() -> None:
    helps = paired_effect(_pairs(9, 0, 3, 4))
    assert helps.verdict == "helps" and helps.ci[0] > 0 and helps.p_value < 0.05
    hurts = paired_effect(_pairs(0, 9, 3, 4))
    assert hurts.verdict == "hurts" and hurts.ci[1] < 0
    none = paired_effect(_pairs(5, 4, 3, 4))
    assert none.verdict == "no effect" and "spans 0" in none.why
    d = helps.to_dict()
    assert d["table"] == {"both": 3, "wins": 9, "losses": 0, "neither": 0}
    assert d["pairs"] == 12 and d["tasks"] == 4 and math.isclose(d["difference"], 0.75)


def test_not_enough_data_is_said_plainly() -> None:
    few = paired_effect(_pairs(5, 0, 10, 5))  # five of five: no outcome could be significant
    assert few.verdict == "not enough data" and not few.enough
    assert "5 discordant pairs" in few.why and "needs 6" in few.why
    one_task = paired_effect(_pairs(10, 0, 0, 1))  # many pairs, one task
    assert one_task.verdict == "not enough data" and "from 1 task(s)" in one_task.why
    assert paired_effect([]).verdict == "not enough data"


def test_the_effect_task_by_task() -> None:
    pairs = [
        Pair("a", 0, True, False),
        Pair("a", 1, True, False),
        Pair("b", 0, True, True),
        Pair("b", 1, False, True),
        Pair("c", 0, True, False),
        Pair("c", 1, False, True),  # even
    ]
    signs = by_task(pairs)
    assert (signs.better, signs.worse, signs.same) == (1, 1, 1) and signs.p_value == 1.0
    # one task with many seeds cannot make a task-level case: one of one
    one = by_task([Pair("a", s, True, False) for s in range(20)])
    assert one.better == 1 and one.p_value == 1.0
    assert paired_effect(pairs).to_dict()["by_task"] == {
        "better": 1,
        "worse": 1,
        "same": 1,
        "p_value": 1.0,
    }
