"""Rewards and advantages (paper 3.2-3.3): exact values and properties."""

import math
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentmem.errors import InvalidRecordError
from agentmem.rewards import (
    ACCEPTANCE_WINDOW,
    EPSILON,
    RewardWeights,
    acceptance,
    binary_reward,
    composite_reward,
    group_stats,
    success_rate,
)

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_success_rate_k_zero_is_one():
    assert success_rate([]) == 1.0


def test_success_rate_fraction():
    assert success_rate([True, False, True, True]) == 0.75


def test_acceptance_window_pending_then_accepted():
    assert acceptance([], T0, T0 + timedelta(seconds=119)).pending
    assert acceptance([], T0, T0 + timedelta(seconds=119)).value is None
    assert acceptance([], T0, T0 + ACCEPTANCE_WINDOW).value == 1
    assert timedelta(seconds=120) == ACCEPTANCE_WINDOW


@pytest.mark.parametrize("kind", ["correct", "reject"])
def test_correction_within_window_is_zero(kind):
    a = acceptance([(kind, T0 + timedelta(seconds=30))], T0, T0 + timedelta(seconds=40))
    assert a.value == 0


def test_latest_event_wins():
    events = [("reject", T0 + timedelta(seconds=5)), ("accept", T0 + timedelta(seconds=9))]
    assert acceptance(events, T0, T0 + timedelta(seconds=10)).value == 1
    assert acceptance(events[::-1][:1], T0, T0).value == 1


def test_composite_default_weights():
    assert composite_reward(0.5, 1) == pytest.approx(0.4 * 0.5 + 0.6)
    assert composite_reward(1.0, 0, RewardWeights(1.0, 0.0)) == 1.0


@pytest.mark.parametrize("w", [(0.5, 0.6), (-0.1, 1.1), (float("nan"), 1.0)])
def test_bad_weights_are_refused(w):
    with pytest.raises(InvalidRecordError):
        RewardWeights(*w)


def test_group_advantage_sample_std():
    s = group_stats([1.0, 0.0, 0.0, 1.0])
    sigma = math.sqrt(sum((r - 0.5) ** 2 for r in [1, 0, 0, 1]) / 3)
    assert s.std == pytest.approx(sigma)
    assert s.advantages[0] == pytest.approx(0.5 / (sigma + EPSILON))
    assert not s.degenerate


def test_degenerate_groups():
    assert group_stats([0.4, 0.4, 0.4]).degenerate
    assert group_stats([0.4]).degenerate
    assert group_stats([]).degenerate
    assert group_stats([0.4, 0.4 + 1e-12]).degenerate


def test_binary_reward():
    assert binary_reward(True, 1.0) == 1.0
    assert binary_reward(True, 0.99) == 0.0
    assert binary_reward(False, 1.0) == 0.0


rewards = st.lists(st.floats(0, 1, allow_nan=False), min_size=2, max_size=16)


@given(rewards)
def test_advantages_sum_to_zero_and_sign_matches(rs):
    s = group_stats(rs)
    if s.degenerate:
        assert s.std is None or s.std < EPSILON or s.positives == 0 or s.negatives == 0
        return
    assert sum(s.advantages) == pytest.approx(0.0, abs=1e-6)
    for r, a in zip(rs, s.advantages):
        assert (a > 0) == (r > s.mean) or abs(r - s.mean) < 1e-12


@given(rewards, st.floats(-5, 5), st.floats(0.1, 10))
def test_advantages_invariant_to_affine_shift(rs, shift, scale):
    a = group_stats(rs)
    b = group_stats([r * scale + shift for r in rs])
    if a.degenerate or b.degenerate or a.std < 1e-3:
        return
    for x, y in zip(a.advantages, b.advantages):
        assert x == pytest.approx(y, rel=1e-4, abs=1e-4)


@given(st.lists(st.booleans(), max_size=30), st.sampled_from([0, 1]))
def test_composite_in_unit_interval(succ, acc):
    assert 0.0 <= composite_reward(success_rate(succ), acc) <= 1.0
