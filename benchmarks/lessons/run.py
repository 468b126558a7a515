"""Run agentmem's learning end to end on the BFCL lessons benchmark and score the library.

One command (``python -m benchmarks.lessons``):

1. generates the BFCL groups (:mod:`benchmarks.lessons.generate`; default 20 tasks x 4
   trajectories, seed 0) into a temporary folder;
2. records them, ``meta`` stripped (it holds the planted answer), into a fresh library
   through the public API (``Memory.open`` + ``record_many``);
3. runs ONE learning session (``mem.learn``) with the default packaged model, the model
   given by ``--model PATH|URL|NAME`` (passed to :func:`agentmem.llm.get_model`), or none
   (``--no-model``: the data-derived texts only);
4. scores the final library with :func:`benchmarks.lessons.scoring.score`: the real prompt
   texts for the copy check, the BFCL tool catalogue as known tools, and the library's
   embedder (with its own ``dup_threshold``) for near-duplicates.

``--tau-bench PATH`` runs the same session on real tau-bench airline transcripts (imported
with :func:`agentmem.ingest.parse_openai`). They have no planted causes, so it reports
what can be checked without a reference: violations, the tools the lessons name (all must
be real airline tools seen in the data), lessons grounded in a group's data (rule P2 of
the scoring module with no causes), library size and time.

Results go to ``benchmarks/results/lessons-<model>.json`` (``lessons-tau-<model>.json``
for tau-bench) and the table of every result there to ``benchmarks/results/lessons.md``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentmem import Memory
from agentmem.records import Trajectory

from . import scoring

__all__ = [
    "DEFAULT_TAU_PATH",
    "RESULTS_DIR",
    "format_table",
    "main",
    "model_slug",
    "run_bfcl",
    "run_tau",
    "write_results",
]

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"
DEFAULT_TAU_PATH = Path("/work/shared/data/tau-bench/gpt-4o-airline.json")
GROUP_SIZE = 4

Progress = Callable[[str], None]


# --------------------------------------------------------------------------- helpers


def model_slug(model: Any, use_model: bool = True) -> str:
    """A file-name-safe name for the model of a run: ``smollm2``, ``none``, ``qwen2.5-1.5b``."""
    if not use_model:
        return "none"
    if model is not None and not isinstance(model, str):
        model = str(getattr(model, "model_id", "model"))
    if model is None or not model.strip():
        import os

        from agentmem.llm import DEFAULT_MODEL, MODEL_ENV

        model = os.environ.get(MODEL_ENV, "").strip() or DEFAULT_MODEL
    spec = model.strip()
    if spec.lower().startswith(("http://", "https://")):
        _, _, frag = spec.partition("#")
        spec = frag or re.sub(r"^https?://", "", spec.split("#")[0])
    else:
        spec = Path(spec).name
        spec = re.sub(r"\.gguf$", "", spec, flags=re.IGNORECASE)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", spec).strip("-").lower() or "model"


def _trajectory(rec: Mapping[str, Any]) -> Trajectory:
    """An agentmem trajectory from a benchmark record, WITHOUT its ``meta`` (the answer)."""
    return Trajectory(
        task=rec["task"],
        steps=[
            {k: s[k] for k in ("tool", "params", "output", "success") if k in s}
            for s in rec["steps"]
        ],
        group=str(rec["group"]),
        accepted=rec.get("accepted"),
        source="benchmark",
    )


def _prompt_texts() -> list[str]:
    from agentmem.learning.prompts import INSTRUCTION_TEXTS

    return list(INSTRUCTION_TEXTS)


def _model(model: Any, use_model: bool, threads: int | None) -> Any:
    """The model object for ``model`` (a spec for get_model, or a model object),
    ``threads`` set if asked."""
    if not use_model:
        return None
    from agentmem.llm import get_model

    m = get_model(model) if model is None or isinstance(model, str) else model
    if threads and hasattr(m, "n_threads"):
        m.n_threads = threads
    return m


def _record_and_learn(
    path: Path,
    trajectories: Sequence[Trajectory],
    *,
    emb: Any,
    model: Any,
    use_model: bool,
    max_findings: int | None,
    progress: Progress | None,
    timings: dict[str, float],
) -> tuple[Any, list[str], str | None]:
    """Record ``trajectories`` into a new library at ``path`` and learn once: the report,
    the lessons and the model id; the two durations go into ``timings``."""
    from agentmem.learning import LearnOptions

    t0 = time.perf_counter()
    mem = Memory.open(path, embedder=emb, model=model)
    try:
        mem.record_many(trajectories)
        timings["record_seconds"] = time.perf_counter() - t0
        if progress:
            progress("learning")
        t0 = time.perf_counter()
        kw: dict[str, Any] = {"reward": mem.reward_kind, "weights": mem.reward_weights}
        if max_findings is not None:
            kw["max_findings"] = max_findings
        report = mem.learn(use_model=use_model, options=LearnOptions(**kw), progress=progress)
        timings["learn_seconds"] = time.perf_counter() - t0
        lessons = [e.text for e in mem.experiences()]
        model_id = getattr(mem.model, "model_id", None) if use_model else None
    finally:
        mem.close()
    return report, lessons, model_id


def _learn_summary(report: Any, groups: int) -> dict[str, Any]:
    origins = Counter(o.op.origin for o in report.applied)
    return {
        "session_id": report.session_id,
        "groups_used": report.groups_used,
        "groups_degenerate": report.groups_degenerate,
        "llm_calls": report.llm_calls,
        "llm_call_bound": report.llm_call_bound,
        "paper_bound": groups * (GROUP_SIZE + 1),
        "compressions": report.compressions,
        "llm_failures": report.llm_failures,
        "prompt_tokens": report.prompt_tokens,
        "completion_tokens": report.completion_tokens,
        "model_seconds": round(report.model_seconds, 2),
        "other_seconds": round(report.other_seconds, 2),
        "wall_seconds": round(report.wall_seconds, 2),
        "applied": len(report.applied),
        "rejected": len(report.rejected),
        "applied_by_origin": dict(sorted(origins.items())),
        "summaries_by_origin": dict(
            sorted(Counter(s.origin for g in report.groups for s in g.summaries).items())
        ),
        "rejected_reasons": sorted(
            Counter(_reason_kind(o.reason) for o in report.rejected).items(), key=lambda kv: -kv[1]
        ),
    }


def _reason_kind(reason: str) -> str:
    """A rejection reason with its specifics cut, to count reasons of one kind together."""
    r = re.sub(r"\(.*?\)|'.*?'|\d+", "…", reason or "")
    return r.split(":")[0].strip()[:80]


# --------------------------------------------------------------------------- BFCL


def run_bfcl(
    tasks: int = 20,
    seed: int = 0,
    *,
    model: Any = None,
    use_model: bool = True,
    embedder: Any = None,
    max_findings: int | None = None,
    bench_dir: str | Path | None = None,
    threads: int | None = None,
    dup_threshold: float | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Generate, record (meta stripped), learn once, score. Returns the result dict.

    ``model``: a spec for :func:`agentmem.llm.get_model` (None: the default packaged
    model); ``use_model=False`` learns from the data only. ``embedder``: an embedder or
    its name (None: the default). ``bench_dir``: an already generated benchmark folder
    to use instead of generating one. ``dup_threshold``: the cosine above which the scorer
    calls two lessons near-duplicates (default: the embedder's own ``dup_threshold``).
    """
    from agentmem.embeddings import get_embedder

    from . import generate

    say = progress or (lambda _m: None)
    emb = get_embedder(embedder) if embedder is None or isinstance(embedder, str) else embedder
    timings: dict[str, float] = {}
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="agentmem-lessons-") as tmp:
        t0 = time.perf_counter()
        if bench_dir is None:
            say(f"generating {tasks} BFCL groups (seed {seed})")
            records, causes = generate.build_benchmark(tasks, seed)
            bench = Path(tmp) / "bench"
            generate.write_outputs(bench, records, causes)
        else:
            bench = Path(bench_dir)
        records = [
            json.loads(x)
            for x in (bench / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()
            if x.strip()
        ]
        causes = json.loads((bench / "reference.json").read_text(encoding="utf-8"))
        catalogue = json.loads((bench / "tools.json").read_text(encoding="utf-8"))
        timings["generate_seconds"] = time.perf_counter() - t0

        report, lessons, model_id = _record_and_learn(
            Path(tmp) / "lessons.db",
            [_trajectory(r) for r in records],
            emb=emb,
            model=_model(model, use_model, threads),
            use_model=use_model,
            max_findings=max_findings,
            progress=progress,
            timings=timings,
        )

    say("scoring")
    t0 = time.perf_counter()
    groups = len({r["group"] for r in records})
    result = scoring.score(
        lessons,
        causes,
        records,
        prompt_texts=_prompt_texts(),
        known_tools=set(catalogue),
        known_identifiers={p for v in catalogue.values() for p in v["params"]},
        embed=emb.embed_batch,
        dup_threshold=emb.dup_threshold if dup_threshold is None else dup_threshold,
    )
    timings["score_seconds"] = time.perf_counter() - t0
    timings["total_seconds"] = time.perf_counter() - t_all
    addressed = {cid for d in result["lessons"] for cid in d["addresses"]}
    missed = [
        {
            "id": c["id"],
            "kind": c["kind"],
            "tool": c["tool"],
            "reference_lesson": c.get("reference_lesson"),
        }
        for c in causes
        if str(c["id"]) not in addressed
    ]
    return {
        "benchmark": "bfcl",
        "model": model_slug(model, use_model),
        "model_id": model_id if use_model else "none (data only)",
        "embedder": emb.model_id,
        "dup_threshold": emb.dup_threshold if dup_threshold is None else dup_threshold,
        "tasks": tasks,
        "seed": seed,
        "groups": groups,
        "trajectories": len(records),
        "score": {k: v for k, v in result.items() if k != "lessons"},
        "learn": _learn_summary(report, report.groups_used),
        "timings": {k: round(v, 2) for k, v in timings.items()},
        "lessons": result["lessons"],
        "missed": missed,
    }


# --------------------------------------------------------------------------- tau-bench


def run_tau(
    path: str | Path = DEFAULT_TAU_PATH,
    *,
    model: Any = None,
    use_model: bool = True,
    embedder: Any = None,
    max_findings: int | None = None,
    threads: int | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Import tau-bench transcripts, learn once, report what needs no reference."""
    from agentmem.embeddings import get_embedder
    from agentmem.ingest import parse_openai

    emb = get_embedder(embedder) if embedder is None or isinstance(embedder, str) else embedder
    timings: dict[str, float] = {}
    t_all = time.perf_counter()
    t0 = time.perf_counter()
    parsed = parse_openai(Path(path).read_bytes())
    trajs = list(parsed.trajectories)
    timings["import_seconds"] = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="agentmem-tau-") as tmp:
        report, lessons, model_id = _record_and_learn(
            Path(tmp) / "tau.db",
            trajs,
            emb=emb,
            model=_model(model, use_model, threads),
            use_model=use_model,
            max_findings=max_findings,
            progress=progress,
            timings=timings,
        )

    t0 = time.perf_counter()
    by_group: dict[str, list[dict[str, Any]]] = {}
    for traj in trajs:
        by_group.setdefault(traj.group, []).append(
            {"steps": [{"tool": s.tool, "params": s.params} for s in traj.steps]}
        )
    tools = {s["tool"] for g in by_group.values() for rec in g for s in rec["steps"]}
    idents: set[str] = set()
    for g in by_group.values():
        for rec in g:
            for s in rec["steps"]:
                idents.update(s["params"])
                idents.update(x for v in s["params"].values() for x in scoring._strings(v))
    embed = scoring._memo(emb.embed_batch)
    details = []
    viol: Counter[str] = Counter()
    named_all: Counter[str] = Counter()
    for text in lessons:
        les = scoring._Lesson(text)
        v = scoring.violations(
            text,
            prompt_texts=_prompt_texts(),
            known_tools=tools,
            all_lessons=lessons,
            embed=embed,
            dup_threshold=emb.dup_threshold,
            known_identifiers=idents,
        )
        for k in {x.split(":", 1)[0] for x in v}:
            viol[k] += 1
        named = sorted(t for t in tools if scoring._tool_positions(les, t))
        named_all.update(named)
        grounded = [
            gid
            for gid, g in by_group.items()
            if scoring.is_true_of_group(les, g, causes=[], known_tools=tools)
        ]
        details.append(
            {"lesson": text, "tools": named, "grounded_in": grounded[:5], "violations": v}
        )
    timings["score_seconds"] = time.perf_counter() - t0
    timings["total_seconds"] = time.perf_counter() - t_all
    n = len(lessons)
    return {
        "benchmark": "tau-bench",
        "path": str(path),
        "model": model_slug(model, use_model),
        "model_id": model_id if use_model else "none (data only)",
        "embedder": emb.model_id,
        "dup_threshold": emb.dup_threshold,
        "groups": len(by_group),
        "trajectories": len(trajs),
        "score": {
            "library_size": n,
            "violations": dict(sorted(viol.items())),
            "lessons_with_violations": sum(1 for d in details if d["violations"]),
            "lessons_naming_a_tool": sum(1 for d in details if d["tools"]),
            "lessons_grounded": sum(1 for d in details if d["grounded_in"]),
            "grounded": (sum(1 for d in details if d["grounded_in"]) / n) if n else None,
            "tools_named": dict(sorted(named_all.items())),
            "data_tools": sorted(tools),
        },
        "learn": _learn_summary(report, report.groups_used),
        "timings": {k: round(v, 2) for k, v in timings.items()},
        "lessons": details,
    }


# --------------------------------------------------------------------------- output


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _viol_text(v: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in v.items()) or "0"


def format_table(res: Mapping[str, Any]) -> str:
    """A plain-text table of one result."""
    s, lr, tm = res["score"], res["learn"], res["timings"]
    rows: list[tuple[str, str]] = []
    if res["benchmark"] == "bfcl":
        rows += [
            (
                "benchmark",
                f"BFCL lessons: {res['groups']} groups, {res['trajectories']} "
                f"trajectories, seed {res['seed']}",
            ),
            ("model", str(res["model_id"])),
            ("embedder", f"{res['embedder']} (dup_threshold {res['dup_threshold']})"),
            (
                "recovery",
                f"{_pct(s['recovery'])} ({s['recovered']}/{s['causes']}); "
                f"clean {_pct(s['recovery_clean'])}",
            ),
        ]
        rows += [(f"  {k}", _pct(v)) for k, v in s["recovery_by_kind"].items()]
        rows.append(("precision", _pct(s["precision"])))
    else:
        rows += [
            (
                "benchmark",
                f"tau-bench: {res['groups']} groups, {res['trajectories']} "
                f"trajectories ({res['path']})",
            ),
            ("model", str(res["model_id"])),
            ("embedder", f"{res['embedder']} (dup_threshold {res['dup_threshold']})"),
            ("grounded", f"{_pct(s['grounded'])} ({s['lessons_grounded']}/{s['library_size']})"),
            ("naming a tool", f"{s['lessons_naming_a_tool']}/{s['library_size']}"),
            ("tools named", ", ".join(s["tools_named"]) or "-"),
        ]
    rows += [
        (
            "violations",
            f"{_viol_text(s['violations'])} (lessons with any: {s['lessons_with_violations']})",
        ),
        ("library size", str(s["library_size"])),
        ("groups learned", str(lr["groups_used"])),
        (
            "model calls",
            f"{lr['llm_calls']} (bound N_g(G+1) = {lr['paper_bound']}, with "
            f"compressions {lr['llm_call_bound']}; failures {lr['llm_failures']})",
        ),
        (
            "model output",
            f"applied by origin {lr['applied_by_origin']}; summaries {lr['summaries_by_origin']}",
        ),
        (
            "time",
            f"session {lr['wall_seconds']:.1f}s (model {lr['model_seconds']:.1f}s, rest "
            f"{lr['other_seconds']:.1f}s); total {tm['total_seconds']:.1f}s",
        ),
    ]
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(w)}  {v}" for k, v in rows)


def _md_row(res: Mapping[str, Any]) -> str:
    s, lr = res["score"], res["learn"]
    if res["benchmark"] == "bfcl":
        kinds = " / ".join(f"{v:.2f}" for v in s["recovery_by_kind"].values())
        bench = f"BFCL {res['groups']}x{GROUP_SIZE} s{res['seed']}"
        rec, prec = _pct(s["recovery"]), _pct(s["precision"])
    else:
        kinds = "-"
        bench = f"tau-bench {res['groups']} groups"
        rec, prec = "-", f"grounded {_pct(s['grounded'])}"
    return (
        f"| {bench} | {res['model']} | {rec} | {kinds} | {prec} | "
        f"{_viol_text(s['violations'])} | {s['library_size']} | "
        f"{lr['llm_calls']} / {lr['paper_bound']} | {_secs(lr['wall_seconds'])} "
        f"({_secs(lr['model_seconds'])} model) |"
    )


def _secs(x: float) -> str:
    return f"{x:.1f}s" if x < 10 else f"{x:.0f}s"


def write_results(res: Mapping[str, Any], out_dir: Path = RESULTS_DIR) -> Path:
    """Write ``lessons-[tau-]<model>.json`` and rebuild ``lessons.md`` from every result."""
    out_dir.mkdir(parents=True, exist_ok=True)
    prefix = "lessons-tau-" if res["benchmark"] == "tau-bench" else "lessons-"
    path = out_dir / f"{prefix}{res['model']}.json"
    path.write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    results = []
    for p in sorted(out_dir.glob("lessons-*.json")):
        try:
            results.append(json.loads(p.read_text(encoding="utf-8")))
        except ValueError:
            continue
    kinds = ""
    for r in results:
        if r.get("benchmark") == "bfcl":
            kinds = " / ".join(r["score"]["recovery_by_kind"])
            break
    lines = [
        "# Lessons benchmark",
        "",
        "Written by `python -m benchmarks.lessons` (see `benchmarks/lessons/README.md`); "
        "one row per `lessons-*.json` here. Recovery by kind: " + (kinds or "-") + ".",
        "",
        "| benchmark | model | recovery | by kind | precision | violations | library | "
        "model calls / N_g(G+1) | session |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *(_md_row(r) for r in results),
        "",
    ]
    (out_dir / "lessons.md").write_text("\n".join(lines), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.lessons",
        description="Learn lessons from BFCL groups (or tau-bench) with agentmem and score them.",
    )
    ap.add_argument("--tasks", type=int, default=20, help="BFCL groups to generate (default 20)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--model",
        default=None,
        help="model spec for agentmem.llm.get_model: a packaged name, a .gguf path or "
        "an http(s) URL (default: the packaged default model)",
    )
    ap.add_argument("--no-model", action="store_true", help="learn from the data only")
    ap.add_argument("--embedder", default=None, help="embedder name (default: the default)")
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CPU threads for a local llama.cpp model (default: the model's own)",
    )
    ap.add_argument(
        "--max-findings",
        type=int,
        default=None,
        help="LearnOptions.max_findings (default: the library's default)",
    )
    ap.add_argument(
        "--bench-dir",
        type=Path,
        default=None,
        help="use an already generated benchmark folder instead of generating one",
    )
    ap.add_argument(
        "--tau-bench",
        nargs="?",
        const=str(DEFAULT_TAU_PATH),
        default=None,
        metavar="PATH",
        help=f"run on tau-bench transcripts (default {DEFAULT_TAU_PATH})",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=RESULTS_DIR,
        help="folder for lessons-<model>.json and lessons.md",
    )
    ap.add_argument("--no-write", action="store_true", help="print only, write no result files")
    ap.add_argument(
        "--details", action="store_true", help="also print every lesson and the missed causes"
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="print progress")
    args = ap.parse_args(argv)
    progress = (lambda m: print(f"  {m}", file=sys.stderr)) if args.verbose else None
    use_model = not args.no_model
    if args.tau_bench is not None:
        path = Path(args.tau_bench)
        if not path.is_file():
            print(f"no tau-bench file at {path}", file=sys.stderr)
            return 2
        res = run_tau(
            path,
            model=args.model,
            use_model=use_model,
            embedder=args.embedder,
            max_findings=args.max_findings,
            threads=args.threads,
            progress=progress,
        )
    else:
        res = run_bfcl(
            args.tasks,
            args.seed,
            model=args.model,
            use_model=use_model,
            embedder=args.embedder,
            max_findings=args.max_findings,
            bench_dir=args.bench_dir,
            threads=args.threads,
            progress=progress,
        )
    print(format_table(res))
    if args.details:
        print()
        for d in res["lessons"]:
            tag = d.get("addresses") or d.get("tools") or []
            flags = "" if not d["violations"] else f"  !! {d['violations']}"
            ok = ""
            if res["benchmark"] == "bfcl":
                ok = "+" if (d["addresses"] or d["true_of_groups"]) else "x"
            print(f"{ok} {d['lesson']}  [{', '.join(map(str, tag))}]{flags}")
        for m in res.get("missed", []):
            print(f"MISSED {m['id']}: {m['reference_lesson']}")
    if not args.no_write:
        path = write_results(res, args.out)
        print(f"\nwrote {path} and {args.out / 'lessons.md'}", file=sys.stderr)
    return 0
