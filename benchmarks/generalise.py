"""Do the lessons generalise? Learn on half of the tasks, test every lesson on the other half.

``python -m benchmarks.generalise`` (data only, no model; about 10 s):

1. loads tau-bench's airline transcripts (50 tasks x 4 runs, reward 1 or 0) and the BFCL
   lessons benchmark's groups (``--bfcl-tasks`` BFCL v4 tasks x 4 runs executed through
   BFCL's own simulators by :mod:`benchmarks.lessons.generate`: the gold run, planted
   mistakes, a recovery; reward 1 for an accepted run, 0 for a rejected one);
2. splits each set *by task* (``--split-seed``): half the tasks to learn from, half held out;
3. records the learning half into a fresh library (``meta`` stripped) and runs ONE
   learning session, data only;
4. for every lesson, reads its structured facts (``experiences.rule``: tool, parameter,
   value, prerequisite, see :mod:`agentmem.learning.rules`) and finds the held-out runs it
   applies to. Its **lift** is the mean reward of the held-out runs that follow it minus
   that of the runs that do not; it is **testable** when both sides have runs. A held-out
   successful run (reward >= 0.5) that the lesson applies to and that does not follow it
   **violates** it;
5. checks every lesson for a **one-task literal**, with a detector of its own (not the
   library's): a token that reads as a value (a digit, an inner ``. _ / @ : -``, a
   capital not starting a sentence), that is not a tool or parameter name nor an option
   an error message of the learning data lists (in any case), and that the data (task text or
   parameter values) of at most one learning task holds; or a parameter value a rule
   states (``x=v``) that the learning tasks' successful runs pass with other values too.

``--baseline`` repeats the run with the generality and evidence passes replaced by
pass-throughs that keep every lesson as the evidence first phrased it (with the rule
that text states), for comparison in the same run.

Results go to ``benchmarks/results/generalise.json`` and ``generalise.md``.
Targets (issue 15): one-task literals 0; positive lift for >= 80% of testable lessons on
tau-bench and >= 90% on BFCL.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import attrs

from agentmem import Memory
from agentmem.learning import generality, session
from agentmem.learning.evidence import Finding
from agentmem.learning.rules import Rule, applies, follows, lift, val
from agentmem.records import Trajectory

__all__ = ["Dataset", "bfcl_dataset", "evaluate", "main", "split", "tau_dataset"]

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DEFAULT_TAU_PATH = Path("/work/shared/data/tau-bench/gpt-4o-airline.json")
TARGETS = {"tau-bench": 0.80, "bfcl": 0.90}


@attrs.frozen
class Dataset:
    """Runs of one benchmark: (task group, trajectory, reward in [0, 1])."""

    name: str
    runs: tuple[tuple[str, Trajectory, float], ...]


def tau_dataset(path: str | Path = DEFAULT_TAU_PATH) -> Dataset:
    """tau-bench transcripts: the group is the task id, the reward tau-bench's (1 or 0)."""
    from agentmem.ingest import parse_openai

    parsed = parse_openai(Path(path).read_bytes())
    return Dataset(
        "tau-bench",
        tuple((t.group, t, 1.0 if t.accepted else 0.0) for t in parsed.trajectories),
    )


def bfcl_dataset(tasks: int = 100, seed: int = 0) -> Dataset:
    """BFCL v4 groups with planted mistakes (:mod:`benchmarks.lessons.generate`), ``meta``
    stripped: reward 1 for the accepted runs (gold, recovering), 0 for the others."""
    from .lessons import generate, run

    records, _causes = generate.build_benchmark(tasks, seed)
    out = []
    for r in records:
        t = run._trajectory(r)
        out.append((t.group, t, 1.0 if r.get("accepted") else 0.0))
    return Dataset("bfcl", tuple(out))


def split(ds: Dataset, seed: int = 0) -> tuple[list[str], list[str]]:
    """(learning task groups, held-out task groups): half each, by task, shuffled by seed."""
    groups = sorted({g for g, _, _ in ds.runs})
    random.Random(seed).shuffle(groups)
    half = len(groups) // 2
    return sorted(groups[:half]), sorted(groups[half:])


# --------------------------------------------------------------------------- literals

_TOKEN = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.'/@:-]*[A-Za-z0-9_])?")
_OPTIONS = re.compile(r"(?i)(?:one of|options are|must be)\s*:?\s*(.+)")


def _strings(v: Any) -> Iterator[str]:
    if isinstance(v, list):
        for x in v:
            yield from _strings(x)
    elif isinstance(v, (str, int, float)) and not isinstance(v, bool):
        yield str(v)


@attrs.frozen
class _LearningData:
    names: frozenset[str]
    holders: Mapping[str, frozenset[str]]  # token -> learning groups whose data holds it
    options: frozenset[str]
    good_values: Mapping[tuple[str, str], frozenset[str]]  # (tool, param) -> values


def _learning_data(runs: Sequence[tuple[str, Trajectory, float]]) -> _LearningData:
    names: set[str] = set()
    holders: dict[str, set[str]] = defaultdict(set)
    options: set[str] = set()
    good: dict[tuple[str, str], set[str]] = defaultdict(set)
    for g, t, reward in runs:
        for m in _TOKEN.finditer(t.task):
            holders[m.group(0)].add(g)
        for s in t.steps:
            names.add(s.tool)
            names.update(s.params)
            for k, v in s.params.items():
                for x in _strings(v):
                    holders[x].add(g)
                    for m in _TOKEN.finditer(x):
                        holders[m.group(0)].add(g)
                if reward >= 0.5:
                    good[(s.tool, k)].add(val(v))
            if not s.success:
                m = _OPTIONS.search(s.output.replace("\\", ""))
                if m:
                    options.update(w.lower() for w in re.findall(r"[A-Za-z0-9_]+", m.group(1)))
    return _LearningData(
        frozenset(names),
        {k: frozenset(v) for k, v in holders.items()},
        frozenset(options),
        {k: frozenset(v) for k, v in good.items()},
    )


def _value_like(tok: str, initial: bool) -> bool:
    if tok in ("I", "I'm", "I've", "I'd", "I'll", "e.g", "i.e", "ID", "OK", "URL", "API", "JSON"):
        return False
    if any(c.isdigit() for c in tok) or re.search(r"[._/@:-]", tok):
        return True
    return any(c.isupper() for c in tok[1:]) or (tok[0].isupper() and not initial)


def one_task_literals(text: str, rule: Rule | None, data: _LearningData) -> list[str]:
    """The one-task literals a lesson carries (the module doc's detector)."""
    names = {n.lower() for n in data.names}
    out: list[str] = []
    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        before = text[: m.start()].rstrip()
        initial = not before or before[-1] in ".!?'\"(;:<"
        if tok.lower() in names or tok.lower() in data.options or not _value_like(tok, initial):
            continue
        if len(data.holders.get(tok, ())) <= 1 and tok not in out:
            out.append(tok)
    if rule is not None and rule.param and rule.good and not rule.options:
        for t in rule.tools:
            seen = data.good_values.get((t, rule.param), frozenset())
            if len(seen - {rule.good}) > 0:
                out.append(f"{rule.param}={rule.good}")
                break
    return out


# --------------------------------------------------------------------------- evaluation


def _as_stated_rule(f: Finding, text: str) -> Rule:
    """The rule a lesson states as the evidence phrased it (the ``--baseline`` run)."""
    d = f.detail
    if f.kind == "param_value":
        return Rule(
            "param_value",
            d.get("tools") or [f.tool],
            param=d.get("param"),
            good=None if d.get("good") is None else val(d["good"]),
            bad=None if d.get("bad") is None else val(d["bad"]),
            lookup=d.get("source"),
            wrong_name=d.get("wrong_name"),
        )
    if f.kind == "prerequisite" and d.get("helper"):
        st = d.get("setting")
        return Rule(
            "prerequisite",
            d.get("tools") or [f.tool],
            helper=d["helper"],
            setting=(st[0], st[1]) if st else None,
            recovery=bool(d.get("recovery")),
        )
    return generality.rule_for(f, text)


def _stated(ops: Sequence[Any], notes: Any, corpus: Any) -> tuple[list[Any], list[Any]]:
    out = []
    for op in ops:
        f = op.detail.get("evidence")
        if op.kind == "ADD" and isinstance(f, Finding) and op.text:
            op = attrs.evolve(op, detail={**op.detail, "rule": _as_stated_rule(f, op.text)})
        out.append(op)
    return out, []


def _no_holds(
    ops: Sequence[Any], live: Any, groups: Any, counted: Any = None
) -> tuple[list[Any], list[Any]]:
    return list(ops), []


def evaluate(
    ds: Dataset,
    *,
    split_seed: int = 0,
    embedder: Any = None,
    baseline: bool = False,
) -> dict[str, Any]:
    """Learn on the learning half of ``ds``, test every lesson on the held-out half."""
    from agentmem.embeddings import get_embedder

    emb = get_embedder(embedder) if embedder is None or isinstance(embedder, str) else embedder
    learn_groups, held_groups = split(ds, split_seed)
    lset, hset = set(learn_groups), set(held_groups)
    learning = [r for r in ds.runs if r[0] in lset]
    held = [(t.task, t.steps, reward) for g, t, reward in ds.runs if g in hset]
    t0 = time.perf_counter()
    patches = (
        [
            mock.patch.object(session, "generalise", _stated),
            mock.patch.object(session, "evidence_operations", _no_holds),
        ]
        if baseline
        else []
    )
    with tempfile.TemporaryDirectory(prefix="agentmem-generalise-") as tmp:
        mem = Memory.open(Path(tmp) / "lib.db", embedder=emb)
        try:
            mem.record_many([t for _, t, _ in learning])
            with contextlib.ExitStack() as stack:
                for p in patches:
                    stack.enter_context(p)
                report = mem.learn(use_model=False)
            exps = mem.experiences()
        finally:
            mem.close()
    learn_seconds = time.perf_counter() - t0
    data = _learning_data(learning)
    lessons = []
    for e in exps:
        rule = Rule.from_json(e.rule)
        lt = one_task_literals(e.text, rule, data)
        d: dict[str, Any] = {
            "id": e.id,
            "lesson": e.text,
            "kind": rule.kind if rule else None,
            "support": [e.support_groups, e.support_runs],
            "against": [e.contradict_groups, e.contradict_runs],
            "literals": lt,
        }
        if rule is not None:
            gain, yes, no = lift(rule, held)
            bad = [
                i
                for i, (task, steps, reward) in enumerate(held)
                if reward >= 0.5 and applies(rule, task, steps) and not follows(rule, task, steps)
            ]
            d.update(
                applies=len(yes) + len(no),
                follow=len(yes),
                other=len(no),
                lift=None if gain is None else round(gain, 4),
                successful_violations=len(bad),
            )
        lessons.append(d)
    testable = [d for d in lessons if d.get("lift") is not None]
    positive = [d for d in testable if d["lift"] > 0]
    n = len(lessons)
    return {
        "dataset": ds.name,
        "mode": "baseline (as first phrased, nothing held)" if baseline else "agentmem",
        "split_seed": split_seed,
        "learning_tasks": len(learn_groups),
        "held_out_tasks": len(held_groups),
        "held_out_runs": len(held),
        "embedder": emb.model_id,
        "lessons": n,
        "held": len([o for o in report.rejected if (o.reason or "").startswith("held")]),
        "testable": len(testable),
        "testable_share": len(testable) / n if n else None,
        "positive": len(positive),
        "positive_share": len(positive) / len(testable) if testable else None,
        "with_literal": sum(1 for d in lessons if d["literals"]),
        "literal_share": sum(1 for d in lessons if d["literals"]) / n if n else None,
        "violated_by_successful_runs": sum(1 for d in lessons if d.get("successful_violations")),
        "mean_lift": (sum(d["lift"] for d in testable) / len(testable)) if testable else None,
        "target_positive_share": TARGETS.get(ds.name),
        "learn_seconds": round(learn_seconds, 2),
        "details": lessons,
    }


# --------------------------------------------------------------------------- output


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def table(results: Sequence[Mapping[str, Any]]) -> str:
    """The markdown table of a run's results."""
    lines = [
        "| set | mode | tasks learn / held out | lessons | testable | positive lift | "
        "one-task literal | violated by a held-out success | mean lift |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        target = r.get("target_positive_share")
        lines.append(
            f"| {r['dataset']} | {r['mode']} | {r['learning_tasks']} / {r['held_out_tasks']} | "
            f"{r['lessons']} | {r['testable']} ({_pct(r['testable_share'])}) | "
            f"{r['positive']} ({_pct(r['positive_share'])}"
            + (f"; target {target:.2f}" if target and r["mode"] == "agentmem" else "")
            + f") | {r['with_literal']} ({_pct(r['literal_share'])}) | "
            f"{r['violated_by_successful_runs']} | {_pct(r['mean_lift'])} |"
        )
    return "\n".join(lines)


def write_results(results: Sequence[Mapping[str, Any]], out_dir: Path = RESULTS_DIR) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "generalise.json"
    path.write_text(json.dumps(list(results), indent=1, ensure_ascii=False) + "\n", "utf-8")
    md = [
        "# Generalisation benchmark",
        "",
        "Written by `python -m benchmarks.generalise` (see its module doc): learn on half of "
        "the tasks, test every lesson on the held-out half by its structured facts.",
        "",
        table(results),
        "",
    ]
    (out_dir / "generalise.md").write_text("\n".join(md), "utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.generalise",
        description="Learn on half of the tasks, test every lesson on the held-out half.",
    )
    ap.add_argument(
        "--tau-bench", type=Path, default=DEFAULT_TAU_PATH, help="tau-bench transcripts file"
    )
    ap.add_argument("--no-tau", action="store_true", help="skip tau-bench")
    ap.add_argument("--bfcl-tasks", type=int, default=100, help="BFCL tasks (default 100)")
    ap.add_argument("--no-bfcl", action="store_true", help="skip BFCL")
    ap.add_argument("--seed", type=int, default=0, help="BFCL generation seed")
    ap.add_argument("--split-seed", type=int, default=0, help="which tasks are held out")
    ap.add_argument("--embedder", default=None, help="embedder name (default: the default)")
    ap.add_argument("--baseline", action="store_true", help="also run the pass-through baseline")
    ap.add_argument("--details", action="store_true", help="print every lesson and its lift")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    sets: list[Dataset] = []
    if not args.no_tau:
        if not args.tau_bench.is_file():
            print(f"no tau-bench file at {args.tau_bench}", file=sys.stderr)
            return 2
        sets.append(tau_dataset(args.tau_bench))
    if not args.no_bfcl:
        sets.append(bfcl_dataset(args.bfcl_tasks, args.seed))
    results = []
    for ds in sets:
        for base in (False, True) if args.baseline else (False,):
            res = evaluate(ds, split_seed=args.split_seed, embedder=args.embedder, baseline=base)
            results.append(res)
            if args.details:
                print(f"\n== {ds.name} ({res['mode']})")
                for d in res["details"]:
                    flag = f"  LITERAL {d['literals']}" if d["literals"] else ""
                    print(
                        f"  lift {d.get('lift')!s:>7}  n={d.get('applies', 0):>3} "
                        f"viol={d.get('successful_violations', 0)}  {d['lesson']}{flag}"
                    )
    print(table(results))
    if not args.no_write:
        path = write_results(results, args.out)
        print(f"\nwrote {path} and {args.out / 'generalise.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
