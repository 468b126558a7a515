"""Retrieval quality on held-out BFCL v4 tasks: vector only, BM25 only and hybrid, side by side.

    python benchmarks/bench_retrieval_quality.py [--seeds 0,1,2] [--model SPEC] [--tune]

1. **Libraries.** For each seed, the learning benchmark's BFCL groups
   (:mod:`benchmarks.lessons.generate`, 20 tasks x 4 trajectories) are recorded (``meta``
   stripped) into a fresh library and learned from in one session, data only unless
   ``--model`` is given (seeds 0, 1, 2: 21, 30 and 25 lessons).
2. **Queries.** Every BFCL v4 multi-turn task the generator can use (175) that is *not*
   one of that library's learned tasks, its user turns joined as the prompt. A lesson is
   *relevant* to a task when a tool it names (a name of the BFCL tool catalogue in its
   text) occurs in the task's gold calls.
3. **Split.** The tasks are cut in two by a hash of their id (``sha256(id)``, first byte
   even: tuning half; odd: query half), so a task is on the same side for every library.
   ``--tune`` searches the ranking constants on the tuning half and keeps those that meet
   every target there, cleanest prompt-only answers first; the figures reported (and in
   the README) are the query half's, with the constants shipped in
   :data:`agentmem.retrieval.ranking.DEFAULT`. The single-method rows with a floor get their
   best floor (a cosine, a BM25 score) on the tuning half the same way.
4. **Modes.** ``tools``: the tools the agent is about to use (the task's gold tools)
   are given, as ``--tool`` does; ``prompt``: the prompt alone, as a prompt hook calls
   it; ``catalogue`` (reported, no target): every tool of the task's API classes, as an
   agent that passes all its tools would.
5. **Metrics**, ``context`` with k = 5: recall@5 (relevant lessons returned over
   min(relevant, 5), for tasks with a relevant lesson), precision@5 (relevant share of
   the lessons returned, for non-empty answers), MRR (1 / rank of the first relevant
   lesson, 0 if none, for tasks with a relevant lesson), and the share of answers
   holding at least one irrelevant lesson (all tasks; an empty answer holds none).

Targets: with tools, recall@5 >= 0.95 and <= 10% of answers with an irrelevant lesson;
prompt only, recall@5 >= 0.75 and MRR >= 0.6; hybrid beats vector-only retrieval (as
agentmem had it: the 5 nearest, no floor) on every metric.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentmem import Memory  # noqa: E402
from agentmem.retrieval.pipeline import gather  # noqa: E402
from agentmem.retrieval.ranking import DEFAULT, Evidence, Ranking, rank  # noqa: E402
from benchmarks.lessons import generate  # noqa: E402
from benchmarks.lessons.run import _trajectory  # noqa: E402

K = 5
MODES = ("tools", "prompt", "catalogue")
TARGET_MODES = ("tools", "prompt")


@dataclasses.dataclass
class Query:
    id: str
    prompt: str
    gold: frozenset[str]
    catalogue: tuple[str, ...]
    relevant: frozenset[int]
    evidence: dict[str, dict[int, Evidence]] = dataclasses.field(default_factory=dict)


def tuning_half(task_id: str) -> bool:
    return hashlib.sha256(task_id.encode()).digest()[0] % 2 == 0


def named_tools(text: str, catalogue: Iterable[str]) -> set[str]:
    return {t for t in catalogue if re.search(rf"(?<!\w){re.escape(t)}(?!\w)", text)}


def build_library(path: Path, tasks: int, seed: int, model: str | None) -> tuple[set[str], float]:
    """Record and learn the BFCL groups into ``path``; the learned task ids and the time."""
    t0 = time.perf_counter()
    records, _causes = generate.build_benchmark(tasks, seed)
    with Memory.open(path) as mem:
        mem.record_many([_trajectory(r) for r in records])
        if model:
            mem.use_model(model)
        mem.learn(use_model=bool(model))
    return {str(r["group"]) for r in records}, time.perf_counter() - t0


def queries(mem: Memory, learned: set[str]) -> list[Query]:
    catalogue = generate.tool_catalogue()
    lessons = {e.id or 0: named_tools(e.text, catalogue) for e in mem.experiences()}
    out = []
    for task in generate.load_tasks():
        if task["id"] in learned:
            continue
        gold = frozenset(c.split("(", 1)[0].strip() for c in task["gold"])
        classes = set(task["involved_classes"])
        avail = tuple(sorted(t for t, d in catalogue.items() if d["class"] in classes))
        rel = frozenset(i for i, names in lessons.items() if names & gold)
        out.append(Query(task["id"], generate.task_text(task), gold, avail, rel))
    return out


def collect(mem: Memory, qs: Sequence[Query]) -> None:
    """Every query's evidence in every mode: all searches on, and (``bm25/<mode>``) BM25
    alone over the prompt with the given tool names appended as words."""
    lib = mem._retriever(remember=False)
    for q in qs:
        for mode in MODES:
            tools = {"tools": sorted(q.gold), "prompt": None, "catalogue": list(q.catalogue)}[mode]
            words = " ".join([q.prompt, *(tools or ())])
            mem.db.execute("BEGIN")
            try:
                q.evidence[mode] = gather(mem.db, q.prompt, lib.vector, tools=tools, k=K)
                q.evidence[f"bm25/{mode}"] = gather(
                    mem.db, words, None, tools=tools, k=K, methods=("bm25",)
                )
            finally:
                mem.db.execute("COMMIT")


# -- methods -------------------------------------------------------------------------------


def only_vector(e: Evidence) -> Evidence | None:
    if e.vector_rank is None:
        return None
    return Evidence(e.id, vector_rank=e.vector_rank, cosine=e.cosine)


def only_bm25(e: Evidence) -> Evidence | None:
    if e.bm25_rank is None:
        return None
    return Evidence(e.id, bm25_rank=e.bm25_rank, bm25=e.bm25)


def as_is(e: Evidence) -> Evidence | None:
    return e


def without_usage(e: Evidence) -> Evidence | None:
    """The hybrid without the tool-usage evidence (to show what it adds)."""
    e = e._replace(usage_rank=None, usage_applies=False)
    return e if e.vector_rank or e.bm25_rank or e.named else None


Method = tuple[str, Callable[[Evidence], Evidence | None], Ranking]


def answer(
    q: Query, mode: str, view: Callable[[Evidence], Evidence | None], r: Ranking
) -> list[int]:
    source = q.evidence[f"bm25/{mode}" if view is only_bm25 else mode]
    ev = [x for x in (view(e) for e in source.values()) if x is not None]
    return [x.evidence.id for x in rank(ev, K, r)]


def metrics(
    qs: Sequence[Query], mode: str, view: Callable[..., Any], r: Ranking
) -> dict[str, float]:
    rec, prec, rr, dirty, empty = [], [], [], 0, 0
    for q in qs:
        ans = answer(q, mode, view, r)
        hits = [i in q.relevant for i in ans]
        if q.relevant:
            rec.append(sum(hits) / min(len(q.relevant), K))
            rr.append(next((1.0 / n for n, h in enumerate(hits, 1) if h), 0.0))
        if ans:
            prec.append(sum(hits) / len(ans))
        else:
            empty += 1
        dirty += not all(hits)
    n = len(qs)
    return {
        "recall@5": sum(rec) / len(rec) if rec else 0.0,
        "precision@5": sum(prec) / len(prec) if prec else 0.0,
        "MRR": sum(rr) / len(rr) if rr else 0.0,
        "irrelevant": dirty / n if n else 0.0,
        "empty": empty / n if n else 0.0,
    }


def objective(qs: Sequence[Query], view: Callable[..., Any], r: Ranking) -> float:
    """What tuning maximises: the mean of recall, precision, MRR and clean answers over
    the two target modes."""
    total = 0.0
    for mode in TARGET_MODES:
        m = metrics(qs, mode, view, r)
        total += (m["recall@5"] + m["precision@5"] + m["MRR"] + 1.0 - m["irrelevant"]) / 4
    return total / len(TARGET_MODES)


def best_gate(
    qs: Sequence[Query], view: Callable[..., Any], field: str, grid: Iterable[float]
) -> Ranking:
    """A single-method baseline's best floor on ``qs``: a gate on its raw score."""
    options = [Ranking(min_score=1e-9, **{field: g}) for g in grid]
    return max(options, key=lambda r: objective(qs, view, r))


#: Vector-only retrieval as agentmem had it: the 5 nearest in the scope, no floor.
BEFORE = Ranking(min_score=0.0)


def meets_targets(qs: Sequence[Query], r: Ranking, baseline: Ranking = BEFORE) -> bool:
    """Do the constants ``r`` meet the issue's targets on ``qs``, and beat vector-only
    retrieval (``baseline``) on every metric in both modes?"""
    t, p = metrics(qs, "tools", as_is, r), metrics(qs, "prompt", as_is, r)
    if not (
        t["recall@5"] >= 0.95
        and t["irrelevant"] <= 0.10
        and p["recall@5"] >= 0.75
        and p["MRR"] >= 0.6
    ):
        return False
    return all(
        beats(metrics(qs, m, as_is, r), metrics(qs, m, only_vector, baseline)) for m in TARGET_MODES
    )


def beats(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["recall@5"] >= b["recall@5"]
        and a["precision@5"] >= b["precision@5"]
        and a["MRR"] >= b["MRR"]
        and a["irrelevant"] <= b["irrelevant"]
    )


def tune(qs: Sequence[Query], baseline: Ranking = BEFORE) -> list[tuple[dict[str, float], Ranking]]:
    """Constants that meet every target on ``qs``, the cleanest prompt-only answers first
    (fewest with an irrelevant lesson, then precision, then MRR)."""
    grid = itertools.product(
        (2.0, 4.0, 6.0, 10.0, 15.0, 20.0, 30.0),  # rrf_k
        (0.5, 1.0, 1.5, 2.0, 3.0, 4.0),  # w_bm25 (w_vector = 1)
        (1.0, 1.5, 2.0, 3.0, 4.0, 5.0),  # w_usage
        [x / 40 for x in range(1, 40)],  # min_score
    )
    found = []
    for rrf_k, wb, wu, floor in grid:
        r = Ranking(rrf_k=rrf_k, w_bm25=wb, w_usage=wu, min_score=floor)
        if meets_targets(qs, r, baseline):
            found.append((metrics(qs, "prompt", as_is, r), r))
    found.sort(key=lambda p: (p[0]["irrelevant"], -p[0]["precision@5"], -p[0]["MRR"]))
    return found


# -- report --------------------------------------------------------------------------------


def table(qs: Sequence[Query], methods: Sequence[Method], title: str) -> list[str]:
    lines = [
        f"\n{title} ({len(qs)} tasks, {sum(1 for q in qs if q.relevant)} with a relevant lesson)"
    ]
    lines.append(
        f"  {'mode':10s} {'method':26s} {'recall@5':>9s} {'prec@5':>7s} {'MRR':>6s} "
        f"{'w/ irrel.':>9s} {'empty':>6s}"
    )
    for mode in MODES:
        for name, view, r in methods:
            m = metrics(qs, mode, view, r)
            lines.append(
                f"  {mode:10s} {name:26s} {m['recall@5']:9.3f} {m['precision@5']:7.3f} "
                f"{m['MRR']:6.3f} {m['irrelevant']:9.3f} {m['empty']:6.3f}"
            )
    return lines


def targets(qs: Sequence[Query], methods: Sequence[Method]) -> list[str]:
    by = {name: (view, r) for name, view, r in methods}
    hyb = by["hybrid"]
    t = metrics(qs, "tools", *hyb)
    p = metrics(qs, "prompt", *hyb)
    checks = [
        ("with tools: recall@5 >= 0.95", t["recall@5"] >= 0.95, f"{t['recall@5']:.3f}"),
        (
            "with tools: no irrelevant lesson in >= 90% of answers",
            t["irrelevant"] <= 0.10,
            f"{1 - t['irrelevant']:.1%} clean",
        ),
        ("prompt only: recall@5 >= 0.75", p["recall@5"] >= 0.75, f"{p['recall@5']:.3f}"),
        ("prompt only: MRR >= 0.6", p["MRR"] >= 0.6, f"{p['MRR']:.3f}"),
    ]
    for mode in TARGET_MODES:
        ok = beats(metrics(qs, mode, *hyb), metrics(qs, mode, *by["vector (no floor, before)"]))
        checks.append((f"{mode}: hybrid beats vector only on every metric", ok, ""))
    return [f"  {'PASS' if ok else 'MISS'}  {what} {fig}".rstrip() for what, ok, fig in checks]


def library_queries(tasks: int, seed: int, model: str | None) -> tuple[list[Query], str]:
    """The held-out queries of the library learned from seed ``seed``'s groups, with their
    evidence collected, and a line describing the library."""
    with tempfile.TemporaryDirectory(prefix="agentmem-rq-") as tmp:
        path = Path(tmp) / "lib.db"
        learned, secs = build_library(path, tasks, seed, model)
        with Memory.open(path) as mem:
            n_lessons = len(mem.experiences())
            qs = queries(mem, learned)
            t0 = time.perf_counter()
            collect(mem, qs)
            per_search = (time.perf_counter() - t0) / max(1, 2 * len(qs) * len(MODES)) * 1e3
    line = (
        f"seed {seed}: {n_lessons} lessons learned from {len(learned)} BFCL tasks "
        f"({'model ' + model if model else 'data only'}) in {secs:.0f} s; {len(qs)} held-out "
        f"tasks; {per_search:.1f} ms a search"
    )
    return qs, line


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=20, help="BFCL groups learned (default 20)")
    ap.add_argument(
        "--seeds", default="0,1,2", help="one library per seed of the learning benchmark"
    )
    ap.add_argument("--model", help="learn with this model (default: data only)")
    ap.add_argument("--tune", action="store_true", help="search the constants on the tuning half")
    ap.add_argument("--details", action="store_true", help="print every query-half answer")
    args = ap.parse_args(argv)
    seeds = [int(x) for x in args.seeds.split(",")]
    by_seed: dict[int, list[Query]] = {}
    for seed in seeds:
        by_seed[seed], line = library_queries(args.tasks, seed, args.model)
        print(line)
    qs = [q for seed in seeds for q in by_seed[seed]]
    tuning = [q for q in qs if tuning_half(q.id)]
    held = [q for q in qs if not tuning_half(q.id)]
    print(f"{len(qs)} queries in all: {len(tuning)} tuning, {len(held)} query")
    vec = best_gate(tuning, only_vector, "min_cosine", [x / 100 for x in range(-10, 40, 2)])
    bm = best_gate(tuning, only_bm25, "min_bm25", [x / 4 for x in range(0, 40)])
    methods: list[Method] = [
        ("vector (no floor, before)", only_vector, BEFORE),
        ("vector (tuned floor)", only_vector, vec),
        ("bm25 (tuned floor)", only_bm25, bm),
        ("hybrid without tool usage", without_usage, DEFAULT),
        ("hybrid", as_is, DEFAULT),
    ]
    print(
        f"floors chosen on the tuning half: cosine >= {vec.min_cosine:.2f}, "
        f"BM25 >= {bm.min_bm25:.2f}; hybrid: {DEFAULT}"
    )
    if args.tune:
        found = tune(tuning)
        print(f"\n{len(found)} constants meet every target on the tuning half; the best:")
        for m, r in found[:10]:
            print(
                f"  prompt: irrelevant {m['irrelevant']:.3f} precision {m['precision@5']:.3f} "
                f"MRR {m['MRR']:.3f} recall {m['recall@5']:.3f}  rrf_k={r.rrf_k} "
                f"w_bm25={r.w_bm25} w_usage={r.w_usage} min_score={r.min_score}"
            )
        print(f"  shipped: {'meets' if meets_targets(tuning, DEFAULT) else 'MISSES'} them")
        print("\n".join(table(tuning, methods, "tuning half")))
    print("\n".join(table(held, methods, "query half, every library")))
    if len(seeds) > 1:
        print("\nquery half, hybrid, each library:")
        for seed in seeds:
            part = [q for q in by_seed[seed] if not tuning_half(q.id)]
            for mode in TARGET_MODES:
                m = metrics(part, mode, as_is, DEFAULT)
                print(
                    f"  seed {seed} {mode:7s} ({len(part)} tasks)  recall@5 {m['recall@5']:.3f}  "
                    f"precision@5 {m['precision@5']:.3f}  MRR {m['MRR']:.3f}  "
                    f"w/ irrelevant {m['irrelevant']:.3f}"
                )
    print("\ntargets (query half, every library, hybrid):")
    print("\n".join(targets(held, methods)))
    if args.details:
        for q in held:
            for mode in TARGET_MODES:
                ans = answer(q, mode, as_is, DEFAULT)
                marks = " ".join(f"{i}{'+' if i in q.relevant else '-'}" for i in ans)
                print(f"{q.id:24s} {mode:7s} gold={sorted(q.gold)} -> {marks}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
