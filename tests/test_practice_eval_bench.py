"""benchmarks/bench_practice.py end to end on a few BFCL tasks, and the tool schemas."""

from __future__ import annotations

import json

import pytest

from agentmem.practice import bfcl

pytestmark = pytest.mark.skipif(not bfcl.available(), reason="bfcl_eval is not installed")


def test_the_benchmark_learns_a_lesson_that_helps_on_held_out_tasks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import bench_practice

    args = ["--train", "4", "--heldout", "6", "--seeds", "2", "--embedder", "hash", "--json"]
    assert bench_practice.main(args) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["train_tasks"] == 4 and res["heldout_tasks"] == 6 and res["size"] == 4
    assert 0 < res["train_success"] < 1  # the groups have both outcomes
    assert any("cd" in text for _, text in res["learned"])
    ev = res["eval"]
    assert ev["pairs"] == 12 and ev["overall"]["table"]["losses"] == 0
    assert ev["overall"]["table"]["wins"] > 0 and ev["overall"]["difference"] > 0
    assert ev["served_pairs"] == 12


def test_bfcl_parameter_types_are_offered_in_json_schema_words() -> None:
    schema = bfcl._schema(
        {
            "type": "dict",
            "properties": {
                "amount": {"type": "float"},
                "pair": {"type": "tuple", "items": {"type": "integer"}},
                "value": {"type": "any", "description": "anything"},
                "nested": {"type": "dict", "properties": {"x": {"type": "float"}}},
            },
            "required": ["amount"],
        }
    )
    assert schema == {
        "type": "object",
        "properties": {
            "amount": {"type": "number"},
            "pair": {"type": "array", "items": {"type": "integer"}},
            "value": {"description": "anything"},
            "nested": {"type": "object", "properties": {"x": {"type": "number"}}},
        },
        "required": ["amount"],
    }
