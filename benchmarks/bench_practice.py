"""Were the lessons worth it? Practice on BFCL v4 multi-turn tasks, then the held-out effect.

1. The BFCL multi-turn tasks whose gold calls use ``cd`` are split (seeded) into train
   and held-out tasks (``--train``, ``--heldout``).
2. Each train task is run ``--size`` times (seeds 0..G-1) by
   :class:`agentmem.practice.bfcl.BfclAgent` in BFCL's own simulators, judged by
   ``bfcl_eval``'s checker and recorded in a fresh library. With the scripted policy
   (the default) the agent leaves out its ``cd`` calls on a ``--rate`` share of seeds
   unless its guidance mentions ``cd``: a known, fixable mistake, and groups with both
   outcomes (what RC-GRPO's conditioning buys a real model).
3. One learning session over the exact groups (``--no-model`` by default: the lessons
   from the data alone).
4. :func:`agentmem.practice.evaluate.evaluate` runs each held-out task with and without
   the lessons served for it, ``--seeds`` seeds each, and prints the effect with its
   interval and p-value, each lesson's credit, and what the rollouts cost.

``--harmful`` also adds by hand a lesson the scripted agent misapplies (shown "leave
the old files alone", it leaves out its ``mv`` calls). Served beside the learned
lessons on the same tasks, the with/without pairs cannot say which lesson hurts (the
report says so and retires none); ``--ablate`` runs each pair once more without each
lesson, which finds the harmful one, retires it through the journal and keeps the
learned ones.

``--model-url URL --model NAME`` drives the rollouts with an OpenAI-compatible chat
server instead (llama-server, Ollama: URL ends in ``/v1``), the downstream measurement
on a real 7B to 8B model (then ``--rate`` and ``--harmful`` do not apply).

    python benchmarks/bench_practice.py [--train 8] [--heldout 16] [--size 4] [--seeds 3]
        [--rate 0.5] [--split-seed 0] [--embedder NAME] [--harmful] [--ablate] [--json]
        [--model-url http://127.0.0.1:8080/v1 --model qwen3-8b]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentmem import Memory  # noqa: E402
from agentmem.learning.session import LearnOptions  # noqa: E402
from agentmem.practice import bfcl  # noqa: E402
from agentmem.practice.evaluate import evaluate, render  # noqa: E402

#: The hand-written lesson --harmful adds, and the slip it causes in the scripted agent.
HARMFUL = "Leave the old files alone when you post a tweet or a message about them"
HARMFUL_SLIP = bfcl.Slip("mv", when="leave the old files alone")


def _policy(args: argparse.Namespace) -> bfcl.Policy:
    if args.model_url:
        return bfcl.ChatPolicy(args.model_url, args.model, temperature=args.temperature)
    slips = [bfcl.Slip("cd", unless="cd", rate=args.rate)]
    if args.harmful:
        slips.append(HARMFUL_SLIP)
    return bfcl.ScriptedPolicy(tuple(slips))


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole benchmark; its figures."""
    ids = [
        i
        for i in bfcl.task_ids()
        if any(c.startswith("cd(") for turn in bfcl.gold_turns(i) for c in turn)
    ]
    random.Random(args.split_seed).shuffle(ids)
    if args.train + args.heldout > len(ids):
        raise SystemExit(f"only {len(ids)} BFCL tasks use cd: ask for fewer")
    train = [bfcl.to_task(i, "train") for i in ids[: args.train]]
    held = [bfcl.to_task(i, "heldout") for i in ids[args.train : args.train + args.heldout]]
    agent = bfcl.BfclAgent(_policy(args))
    folder = Path(tempfile.mkdtemp(prefix="bench-practice-"))
    db = folder / "practice.db"
    say = (lambda m: print(m, file=sys.stderr)) if args.verbose else (lambda m: None)

    t0 = time.monotonic()
    train_ok = 0
    for task in train:
        for seed in range(args.size):
            train_ok += agent.run(task, None, "", seed, db).success
    t_train = time.monotonic() - t0

    with Memory.open(db, embedder=args.embedder) as mem:
        t0 = time.monotonic()
        report = mem.learn(use_model=False, options=LearnOptions(grouping="exact"))
        t_learn = time.monotonic() - t0
        learned = [(e.id, e.text) for e in mem.experiences()]
        if args.harmful and not args.model_url:
            mem.add(HARMFUL)
        t0 = time.monotonic()
        result = evaluate(
            mem,
            held,
            lambda t, g, s: agent.run(t, None, g, s, db),
            seeds=range(args.seeds),
            k=args.k,
            ablate=args.ablate,
            progress=say,
        )
        t_eval = time.monotonic() - t0
        left = [e.id for e in mem.experiences()]
    return {
        "policy": agent.name,
        "train_tasks": len(train),
        "heldout_tasks": len(held),
        "size": args.size,
        "train_success": round(train_ok / (len(train) * args.size), 4),
        "learned": learned,
        "learn_operations": len(report.operations) if hasattr(report, "operations") else None,
        "eval": result.to_dict(),
        "text": render(result),
        "live_after": left,
        "seconds": {
            "train": round(t_train, 2),
            "learn": round(t_learn, 2),
            "eval": round(t_eval, 2),
        },
        "library": str(db),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=int, default=8, help="train tasks (default 8)")
    ap.add_argument("--heldout", type=int, default=16, help="held-out tasks (default 16)")
    ap.add_argument("--size", type=int, default=4, help="rollouts per train task (default 4)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per held-out task (default 3)")
    ap.add_argument("--rate", type=float, default=0.5, help="share of seeds that slip (0.5)")
    ap.add_argument("--split-seed", type=int, default=0, help="the train/held-out shuffle")
    ap.add_argument("--k", type=int, default=5, help="lessons a prompt gets (default 5)")
    ap.add_argument("--embedder", default=None, help="the library's embedder (default: its own)")
    ap.add_argument("--harmful", action="store_true", help="add a lesson the agent misapplies")
    ap.add_argument("--ablate", action="store_true", help="each lesson's own effect (more runs)")
    ap.add_argument("--model-url", help="an OpenAI-compatible server (.../v1) instead")
    ap.add_argument("--model", default="default", help="the server's model name")
    ap.add_argument("--temperature", type=float, default=0.7, help="sampling (default 0.7)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("-v", "--verbose", action="store_true", help="each pair as it runs")
    args = ap.parse_args(argv)
    if not bfcl.available():
        print("bfcl_eval is not installed: pip install --no-deps 'bfcl-eval==2026.3.23'")
        return 2
    res = run(args)
    if args.json:
        print(json.dumps({k: v for k, v in res.items() if k != "text"}, indent=2))
        return 0
    print(
        f"BFCL practice ({res['policy']}): {res['train_tasks']} train tasks x {res['size']} "
        f"rollouts ({100 * res['train_success']:.0f}% succeeded), "
        f"{len(res['learned'])} lesson(s) learned:"
    )
    for eid, text in res["learned"]:
        print(f"  [{eid}] {text}")
    print(res["text"])
    s = res["seconds"]
    print(f"time: train {s['train']} s, learn {s['learn']} s, eval {s['eval']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
