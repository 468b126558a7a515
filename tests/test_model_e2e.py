"""End to end with the real packaged model (llama.cpp), real embedder and CLI subprocesses."""

from __future__ import annotations

import io
import json

import pytest

from agentmem.cli.demo import sample_bytes
from agentmem.ingest import parse_jsonl

from .conftest import jsonl, run_cli

pytestmark = pytest.mark.model


def test_learn_with_the_real_model_from_the_cli(tmp_path):
    pytest.importorskip("llama_cpp")
    db = tmp_path / "e2e.db"
    trajs = parse_jsonl(io.BytesIO(sample_bytes())).trajectories
    group = trajs[0].group
    lines = [json.loads(line) for line in sample_bytes().decode().splitlines()]
    mine = [rec for rec in lines if rec["group"] == group]
    assert len(mine) == 4
    p = run_cli("record", "-", db=db, input=jsonl(*mine))
    assert p.returncode == 0, p.stderr.decode()
    p = run_cli("learn", "--model", "gemma3-270m", "--json", db=db)
    assert p.returncode == 0, p.stderr.decode()
    report = json.loads(p.stdout)
    assert report["groups_used"] == 1
    assert 0 < report["llm_calls"] <= report["llm_call_bound"]
    assert report["prompt_tokens"] > 0 and report["completion_tokens"] > 0
    exps = json.loads(run_cli("experiences", "--json", db=db).stdout)
    assert exps, "a group with a planted mistake must teach something"
    tools = {s["tool"] for rec in mine for s in rec["steps"]}
    for e in exps:
        assert len(e["text"].split()) <= 32
        assert any(t in e["text"] for t in tools), e["text"]
    journal = json.loads(run_cli("journal", "--json", db=db).stdout)
    assert {j["origin"] for j in journal} <= {"model", "data", "fallback"}
    ctx = run_cli("context", trajs[0].task, db=db)
    assert ctx.returncode == 0 and ctx.stdout.decode().startswith("Lessons from earlier runs")
