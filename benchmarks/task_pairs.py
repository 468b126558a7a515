"""Build the labelled task pairs that calibrate the similar-task threshold (theta_task).

    python -m benchmarks.task_pairs [--out tests/data/task_pairs.jsonl] [--seed 0]

Two runs of different tasks are worth comparing (a *similar-task group*, see
:mod:`agentmem.learning.grouping`) when their tasks need the same tools for the
same kind of job. The label comes from the tasks' gold calls, never from their
texts, so that the texts can then be scored against it:

``same`` (label true)
    BFCL v4 multi-turn: the two tasks involve the same API classes and the sets
    of tools their gold calls use overlap with Jaccard >= 0.5. tau-bench
    airline: the two tasks' gold write actions are the same non-empty set of
    tools (both cancel a reservation, both change flights and baggage, ...).
``one_tool`` (label false)
    BFCL: the tasks share exactly one tool and their tool sets overlap with
    Jaccard < 0.25: unrelated tasks that merely share a tool, the pairs a
    threshold must keep apart. tau-bench: two non-empty, disjoint sets of gold
    write actions (every tau-bench run calls the same look-up tools, so these
    share tools too).
``unrelated`` (label false)
    BFCL: no tool in common.

Pairs are drawn at random (``--seed``) from every pair of each kind: BFCL 150
same, 150 one_tool, 100 unrelated; tau-bench 40 same, 40 one_tool (as many as
exist). ``benchmarks/bench_embeddings.py`` measures every embedder on the file
and prints the cut that maximises Youden's J, as it does for ``theta_dup``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "task_pairs.jsonl"
TAU = Path("/work/shared/data/tau-bench/gpt-4o-airline.json")
SIZES = {("bfcl", "same"): 150, ("bfcl", "one_tool"): 150, ("bfcl", "unrelated"): 100}
TAU_SIZES = {("tau", "same"): 40, ("tau", "one_tool"): 40}


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def bfcl_pairs() -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Every labelled BFCL pair, by (source, kind)."""
    from benchmarks.lessons.generate import load_tasks, task_text

    tasks = load_tasks()
    tools = [{re.match(r"\s*(\w+)\(", c).group(1) for c in t["gold"]} for t in tasks]  # type: ignore[union-attr]
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for i, j in itertools.combinations(range(len(tasks)), 2):
        a, b = tools[i], tools[j]
        shared, jac = len(a & b), _jaccard(a, b)
        same_classes = set(tasks[i]["involved_classes"]) == set(tasks[j]["involved_classes"])
        if jac >= 0.5 and same_classes:
            kind = "same"
        elif shared == 1 and jac < 0.25:
            kind = "one_tool"
        elif shared == 0:
            kind = "unrelated"
        else:
            continue
        out.setdefault(("bfcl", kind), []).append(
            {
                "a": task_text(tasks[i]),
                "b": task_text(tasks[j]),
                "same": kind == "same",
                "kind": kind,
                "source": "bfcl",
                "ids": [tasks[i]["id"], tasks[j]["id"]],
                "tools": [sorted(a), sorted(b)],
            }
        )
    return out


def tau_pairs(path: Path = TAU) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Every labelled tau-bench pair (one record per task), by (source, kind)."""
    if not path.is_file():
        return {}
    first: dict[Any, dict[str, Any]] = {}
    for rec in json.loads(path.read_text(encoding="utf-8")):
        first.setdefault(rec["task_id"], rec)
    tasks = list(first.values())
    acts = [{a["name"] for a in r["info"]["task"].get("actions") or []} for r in tasks]
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for i, j in itertools.combinations(range(len(tasks)), 2):
        a, b = acts[i], acts[j]
        if not a or not b:
            continue
        if a == b:
            kind = "same"
        elif not a & b:
            kind = "one_tool"
        else:
            continue
        out.setdefault(("tau", kind), []).append(
            {
                "a": tasks[i]["info"]["task"]["instruction"],
                "b": tasks[j]["info"]["task"]["instruction"],
                "same": kind == "same",
                "kind": kind,
                "source": "tau",
                "ids": [f"tau-{tasks[i]['task_id']}", f"tau-{tasks[j]['task_id']}"],
                "tools": [sorted(a), sorted(b)],
            }
        )
    return out


def build(seed: int = 0, tau: Path = TAU) -> list[dict[str, Any]]:
    """The labelled set: a seeded sample of each (source, kind)."""
    rng = random.Random(seed)
    pools = {**bfcl_pairs(), **tau_pairs(tau)}
    out: list[dict[str, Any]] = []
    for key, n in {**SIZES, **TAU_SIZES}.items():
        pool = pools.get(key, [])
        out += rng.sample(pool, min(n, len(pool)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.task_pairs", description=__doc__)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tau-bench", type=Path, default=TAU)
    args = ap.parse_args(argv)
    pairs = build(args.seed, args.tau_bench)
    with args.out.open("w", encoding="utf-8") as f:
        for p in pairs:
            f.write(json.dumps(p, ensure_ascii=False, sort_keys=True) + "\n")
    counts: dict[str, int] = {}
    for p in pairs:
        k = f"{p['source']}/{p['kind']}"
        counts[k] = counts.get(k, 0) + 1
    print(f"{len(pairs)} pairs -> {args.out}: {counts}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
