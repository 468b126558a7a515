"""Reward-conditioned groups: plans, the binary reward, diagnostics and the RCTP export."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from agentmem import InvalidRecordError, Memory, Step
from agentmem.cli import cli
from agentmem.export import ExportOptions, export_rctp, parse_rctp_record
from agentmem.ingest import parse_openai
from agentmem.rc import HIGH, LOW, diagnose, mixed_marginal, plan_group
from agentmem.rewards import action_coverage

from .conftest import TAU_BENCH


@given(st.integers(2, 12), st.floats(0.05, 0.95), st.integers(0, 10_000))
def test_plans_are_always_mixed(size, p, seed):
    plan = plan_group("t", size, p_sample={HIGH: p, LOW: 1 - p}, seed=seed)
    assert len(plan.rollouts) == size
    assert len({r.condition for r in plan.rollouts}) == 2


@pytest.mark.parametrize("p, size", [(0.5, 4), (0.7, 4), (0.3, 2), (0.8, 6)])
def test_plans_follow_conditioned_p_sample(p, size):
    n = 4000
    highs = sum(
        r.condition == HIGH
        for s in range(n)
        for r in plan_group("t", size, p_sample={HIGH: p, LOW: 1 - p}, seed=s).rollouts
    )
    expected = mixed_marginal(p, size)
    assert highs / (n * size) == pytest.approx(expected, abs=0.02)


def test_single_rollout_follows_p_sample_unconditioned():
    c = Counter(
        plan_group("t", 1, p_sample={HIGH: 0.8, LOW: 0.2}, seed=s).rollouts[0].condition
        for s in range(3000)
    )
    assert c[HIGH] / 3000 == pytest.approx(0.8, abs=0.03)


def test_plan_prompts_token_vs_instruction():
    tuned = plan_group("t", 3, seed=1, tuned=True)
    assert all(r.prompt == r.condition for r in tuned.rollouts)
    untuned = plan_group("t", 3, seed=1)
    assert all(r.prompt != r.condition and len(r.prompt.split()) > 5 for r in untuned.rollouts)


@pytest.mark.parametrize(
    "p", [{HIGH: 1.0}, {HIGH: 0.5, LOW: 0.6}, {HIGH: 0.0, LOW: 1.0}, {"": 0.5, LOW: 0.5}]
)
def test_bad_p_sample(p):
    with pytest.raises(InvalidRecordError):
        plan_group("t", 4, p_sample=p)


def test_binary_reward_coverage_rules():
    steps = [Step("book", {"user": "Mia ", "amount": 5, "extra": 1}, "ok", True)]
    assert (
        action_coverage(steps, [{"name": "book", "kwargs": {"user": "mia", "amount": 5.0}}]) == 1.0
    )
    assert action_coverage(steps, [{"name": "book", "kwargs": {"amount": 6}}]) == 0.0
    assert (
        action_coverage(steps, [{"name": "book", "kwargs": {}}, {"name": "pay", "kwargs": {}}])
        == 0.5
    )
    assert action_coverage(steps, []) == 1.0


def test_binary_reward_groups(mem: Memory):
    acts = [{"name": "rm", "kwargs": {"path": "a"}}]
    a = mem.record(
        "clean",
        [Step("rm", {"path": "a"}, "ok", True)],
        state_ok=True,
        essential_actions=acts,
        accepted=True,
    )
    b = mem.record(
        "clean",
        [Step("rm", {"path": "b"}, "ok", True)],
        state_ok=True,
        essential_actions=acts,
        accepted=True,
    )
    (g,) = mem.groups(reward="binary")
    assert [m.reward for m in g.members] == [1.0, 0.0]
    mem.set_state(a, False)
    (g,) = mem.groups(reward="binary")
    assert g.degenerate and [m.id for m in g.members] == [a, b]


def test_conditions_shown_and_journaled(mem: Memory):
    cat_ok = Step("cat", {"file_name": "a"}, "x", True)
    cat_bad = Step("cat", {"file": "a"}, "Error: unexpected keyword argument 'file'", False)
    mem.record("read a", [cat_ok], condition=HIGH, accepted=True)
    mem.record("read a", [cat_bad], condition=LOW, accepted=False)
    (g,) = mem.groups()
    assert g.conditions == {HIGH: 1, LOW: 1} and g.usable
    r = mem.learn(use_model=False)
    rows = mem.db.execute(
        "SELECT conditions FROM operations WHERE session_id = ?", [r.session_id]
    ).fetchall()
    assert rows and all(json.loads(c) == {HIGH: 1, LOW: 1} for (c,) in rows)
    d = diagnose(mem)
    assert d["rewards"]["composite"]["conditioned"]["groups"] == 1


def test_export_round_trip(mem: Memory, tmp_path):
    ids = [
        mem.record(
            "t1",
            [
                Step("ls", {"path": "."}, "a", True),
                Step("cat", {"file_name": "a"}, "Error: nope", False),
            ],
            accepted=True,
        ),
        mem.record("t1", [Step("ls", {}, "a", True)], accepted=False),
        mem.record("t2", [], accepted=None),
    ]
    out = tmp_path / "rctp.jsonl"
    s = export_rctp(mem, out, ExportOptions(threshold=0.7))
    assert (s.written, s.high, s.low, s.pending) == (2, 1, 1, 1)
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    back = [parse_rctp_record(r) for r in lines]
    originals = [mem.get_trajectory(i) for i in ids[:2]]
    assert [tok for tok, _ in back] == [HIGH, LOW]
    for (_, t), o in zip(back, originals):
        assert t.task == o.task
        assert [(x.tool, x.params, x.output, x.success) for x in t.steps] == [
            (x.tool, x.params, x.output, x.success) for x in o.steps
        ]
    assert set(lines[0]) == {"messages", "tools"}
    assert lines[0]["tools"][0]["function"]["name"] == "cat"


@pytest.mark.parametrize(
    "kw",
    [
        {"threshold": 1.5},
        {"high_token": "x", "low_token": "x"},
        {"since": "yesterday"},
        {"since": "2026-02-01", "until": "2026-01-01"},
        {"reward": "best"},
    ],
)
def test_export_bad_options(kw):
    with pytest.raises(InvalidRecordError):
        ExportOptions(**kw)


def test_export_cli_errors(tmp_path):
    r = CliRunner().invoke(
        cli,
        ["export", "rctp", str(tmp_path / "no" / "x.jsonl")],
        env={"AGENTMEM_DB": str(tmp_path / "a.db")},
    )
    assert r.exit_code == 1 and "no library at" in r.output  # a mistyped library is refused


@pytest.mark.skipif(not TAU_BENCH.exists(), reason="shared tau-bench data not present")
def test_tau_bench_binary_reward_and_diagnosis(mem: Memory):
    mem.record_many(parse_openai(TAU_BENCH.read_bytes()).trajectories)
    d = diagnose(mem)
    assert d["rewards"]["composite"]["all"]["degenerate"] == 13
    binary = d["rewards"]["binary"]["all"]["degenerate"]
    assert 13 < binary <= 50
    assert "reward-conditioned groups would help" in " ".join(d["advice"])
