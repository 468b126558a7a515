"""How long forming a session's groups takes for a library of single runs.

    python benchmarks/bench_grouping.py [--runs 10000] [--embedder wordllama] [--repeat 3]

Builds a library of ``--runs`` runs, every one of a different task (no two task texts
alike word for word, no ``group``), as an agent records everyday work: tasks written
from templates over a few hundred words, tool calls from 48 tools in 6 domains, one run
in five with a failed call (half of those fixed later in the run). Then it times
:meth:`agentmem.Memory.learning_groups` (``grouping="auto"``: exact groups, each run's
own corrections, similar-task groups), which is what a learning session does before
its first model call:

* **cold**: no task vector stored yet: the tasks are embedded (each text once);
* **warm**: the vectors a session stored are read back instead (what every later
  session does; only new runs are embedded).

And, in the same run, the baselines: the neighbour search alone
(:func:`agentmem.storage.task_vectors.neighbours`), numpy's full ``runs x runs`` cosine matrix
of the same vectors (all pairs, no threshold or top-k: the floor for an exact
search), and all pairs in Python (``math.fsum`` over zipped floats) on the first 1,000
runs, scaled to ``--runs`` by the number of pairs. Best of ``--repeat`` rounds each.
Target: 10,000 runs grouped in under 10 s on 2 cores.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agentmem import Memory, Step  # noqa: E402
from agentmem.db import write  # noqa: E402
from agentmem.records import Trajectory  # noqa: E402

DOMAINS = {
    d: names.split()
    for d, names in {
        "fs": "ls cd cat mv cp rm mkdir touch",
        "git": "git_status git_diff git_commit git_log git_add git_push git_pull git_checkout",
        "web": "webfetch fetch_url http_get browse curl wget http_request fetch",
        "k8s": "kubectl_get kubectl_apply kubectl_logs helm kubectl kube_scale kube_rollout "
        "kube_describe",
        "mail": "send_message get_user_id view_messages delete_message search_messages "
        "add_contact message_login list_users",
        "trade": "get_stock_info place_order cancel_order get_symbol_by_name add_to_watchlist "
        "get_watchlist fund_account trading_login",
    }.items()
}
VERBS = (
    "move copy read show list delete archive compare fetch check deploy scale send find update "
    "review summarise rename clean sync"
).split()
OBJECTS = (
    "report notes logs invoice config budget draft photos backup readme tests metrics release "
    "branch ticket order payment contract schedule manifest"
).split()
PLACES = (
    "docs archive workspace temp projects home shared staging prod inbox outbox vault drafts "
    "exports imports cache assets builds data"
).split()
PEOPLE = (
    "Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert Sybil "
    "Trent Victor Walter Yolanda"
).split()
QUALIFIERS = [
    "quickly",
    "carefully",
    "today before noon",
    "for the weekly review",
    "for the audit as discussed",
    "and tell me when done",
    "if it still exists",
]


def _task(rng: random.Random, n: int) -> str:
    return (
        f"{rng.choice(VERBS).capitalize()} the {rng.choice(OBJECTS)} {n} in {rng.choice(PLACES)}"
        f" for {rng.choice(PEOPLE)}, then {rng.choice(VERBS)} the {rng.choice(OBJECTS)} "
        f"{rng.choice(['and', 'or', 'but not'])} the {rng.choice(OBJECTS)} "
        f"{rng.choice(QUALIFIERS)}"
    )


def _run(rng: random.Random, n: int) -> Trajectory:
    tools = DOMAINS[rng.choice(sorted(DOMAINS))]
    steps = []
    for _ in range(rng.randint(3, 8)):
        t = rng.choice(tools)
        steps.append(
            Step(t, {"name": f"{rng.choice(OBJECTS)}{n}.txt"}, f'{{"ok": "{rng.random():.3f}"}}')
        )
    accepted = rng.random() > 0.15
    if rng.random() < 0.2:  # a failed call; half the time fixed later (a correction)
        k = rng.randrange(len(steps))
        bad = Step(
            steps[k].tool, {"nme": steps[k].params["name"]}, "Error: unexpected 'nme'", False
        )
        if rng.random() < 0.5:
            steps.insert(k, bad)
        else:
            steps[k] = bad
            accepted = False
    return Trajectory(task=_task(rng, n), steps=steps, accepted=accepted, source="benchmark")


def _best(fn: Any, repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    import numpy as np

    from agentmem.learning.grouping import task_threshold
    from agentmem.storage import task_vectors

    rng = random.Random(args.seed)
    runs = [_run(rng, n) for n in range(args.runs)]
    with tempfile.TemporaryDirectory(prefix="agentmem-grouping-") as tmp:
        mem = Memory.open(Path(tmp) / "g.db", embedder=args.embedder)
        t0 = time.perf_counter()
        mem.record_many(runs)
        record_s = time.perf_counter() - t0
        emb = mem.embedder
        emb.embed_batch(["warm up"])
        print(
            f"{args.runs} runs of {len({r.task for r in runs})} different tasks recorded "
            f"in {record_s:.1f} s; embedder {emb.model_id}, theta_task {task_threshold(emb)}; "
            f"{os.cpu_count()} CPUs"
        )

        cold, plan = _best(lambda: mem.learning_groups("auto"), 1)
        with write(mem.db):
            stored = task_vectors.save(mem.db, plan.vectors)
        warm, plan = _best(lambda: mem.learning_groups("auto"), args.repeat)
        kinds = {k: len(plan.of_kind(k)) for k in ("exact", "correction", "similar")}
        vecs = plan.vectors
        ids = vecs.ids
        knn_s, _ = _best(
            lambda: task_vectors.neighbours(vecs, threshold=task_threshold(emb), k=7), args.repeat
        )
        m = vecs.matrix.astype(np.float32)
        full_s, _ = _best(lambda: m @ m.T, args.repeat)
        sub = [list(map(float, row)) for row in m[:1000]]

        def python_pairs() -> int:
            hits = 0
            th = task_threshold(emb)
            for i in range(len(sub)):
                a = sub[i]
                for j in range(i + 1, len(sub)):
                    if math.fsum(x * y for x, y in zip(a, sub[j])) >= th:
                        hits += 1
            return hits

        py_s, _ = _best(python_pairs, 1)
        pairs_all = len(ids) * (len(ids) - 1) / 2
        pairs_sub = len(sub) * (len(sub) - 1) / 2
        py_scaled = py_s * pairs_all / pairs_sub
        mem.close()

    print(f"stored {stored} task vectors; groups formed: {kinds}")
    print()
    print(f"{'what':58} {'seconds':>8} {'vs numpy all pairs':>19}")
    rows = [
        ("learning_groups, cold (embeds every task)", cold),
        ("learning_groups, warm (task vectors stored)", warm),
        ("  of which task_vectors.neighbours (k=7)", knn_s),
        ("numpy: full runs x runs cosine matrix (baseline)", full_s),
        (
            f"python all pairs (1,000 runs, x{pairs_all / pairs_sub:,.0f} pairs; baseline)",
            py_scaled,
        ),
    ]
    for what, s in rows:
        print(f"{what:58} {s:>8.2f} {s / full_s:>18.1f}x")
    target = "met" if max(cold, warm) < 10 else "NOT met"
    print(
        f"\ntarget: {args.runs} runs grouped in under 10 s: {target} "
        f"(cold {cold:.1f} s, warm {warm:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
