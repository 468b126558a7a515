"""Run agentmem's learning end to end on the BFCL lessons benchmark and score the library.

One command (``python -m benchmarks.lessons``):

1. generates the BFCL groups (:mod:`benchmarks.lessons.generate`; default 20 tasks x 4
   trajectories, seed 0) into a temporary folder;
2. records them, ``meta`` stripped (it holds the planted answer), into a fresh library
   through the public API (``Memory.open`` + ``record_many``);
3. runs ONE learning session (``mem.learn``) with the default packaged model, the model
   given by ``--model PATH|URL|NAME`` (passed to :func:`agentmem.models.get_model`), or none
   (``--no-model``: the data-derived texts only);
4. scores the final library with :func:`benchmarks.lessons.scoring.score`: the real prompt
   texts for the copy check, the BFCL tool catalogue as known tools, and the library's
   embedder (with its own ``dup_threshold``) for near-duplicates.

``--tau-bench PATH`` runs the same session on real tau-bench airline transcripts (imported
with :func:`agentmem.ingest.parse_openai`). They have no planted causes, so it reports
what can be checked without a reference: violations, the tools the lessons name (all must
be real airline tools seen in the data), lessons grounded in a group's data (rule P2 of
the scoring module with no causes), library size and time. ``--tau-bench --no-groups``
keeps one trial of each task and drops its group: every run is alone, as in everyday use.

``--everyday`` (:mod:`benchmarks.lessons.everyday`) records BFCL tasks each run ONCE, with
no group field, half fixing their planted mistake within the run and half contrasted only
with other tasks that used the same tools right, learns once with the default grouping
(``auto``) and scores the library with the same rules (each run its own group), recovery
reported by setting and by kind.

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
    "run_everyday",
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

        from agentmem.models import DEFAULT_MODEL, MODEL_ENV

        model = os.environ.get(MODEL_ENV, "").strip() or DEFAULT_MODEL
    spec = model.strip()
    if spec.lower().startswith(("http://", "https://")):
        _, _, frag = spec.partition("#")
        spec = frag or re.sub(r"^https?://", "", spec.split("#")[0])
    else:
        spec = Path(spec).name
        spec = re.sub(r"\.gguf$", "", spec, flags=re.IGNORECASE)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", spec).strip("-").lower() or "model"


def _trajectory(rec: Mapping[str, Any], *, group: bool = True) -> Trajectory:
    """An agentmem trajectory from a benchmark record, WITHOUT its ``meta`` (the answer);
    ``group=False`` leaves out its group too (a run recorded as an agent records it)."""
    kw: dict[str, Any] = {"group": str(rec["group"])} if group else {}
    return Trajectory(
        task=rec["task"],
        steps=[
            {k: s[k] for k in ("tool", "params", "output", "success") if k in s}
            for s in rec["steps"]
        ],
        accepted=rec.get("accepted"),
        source="benchmark",
        **kw,
    )


def _prompt_texts() -> list[str]:
    from agentmem.learning.prompts import INSTRUCTION_TEXTS

    return list(INSTRUCTION_TEXTS)


def _model(model: Any, use_model: bool, threads: int | None) -> Any:
    """The model object for ``model`` (a spec for get_model, or a model object),
    ``threads`` set if asked."""
    if not use_model:
        return None
    from agentmem.models import get_model

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
    exact_baseline: dict[str, Any] | None = None,
) -> tuple[Any, list[str], str | None]:
    """Record ``trajectories`` into a new library at ``path`` and learn once: the report,
    the lessons and the model id; the two durations go into ``timings``. With
    ``exact_baseline`` (a dict), first a dry run with exact groups only, whose groups
    used and operations go into it (what agentmem learned before it grouped single runs)."""
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
        if exact_baseline is not None:
            base = mem.learn(
                dry_run=True, use_model=False, options=LearnOptions(**kw, grouping="exact")
            )
            exact_baseline.update(
                groups_seen=base.groups_seen,
                groups_used=base.groups_used,
                lessons=len(base.applied),
            )
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
        "grouping": report.grouping,
        "groups_formed": dict(report.groups_formed),
        "groups_by_kind": dict(sorted(Counter(g.kind for g in report.groups).items())),
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

    ``model``: a spec for :func:`agentmem.models.get_model` (None: the default packaged
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
    no_groups: bool = False,
    model: Any = None,
    use_model: bool = True,
    embedder: Any = None,
    max_findings: int | None = None,
    threads: int | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Import tau-bench transcripts, learn once, report what needs no reference.

    ``no_groups``: keep the first trial of each task only, recorded without its group
    (every run alone, as an agent records everyday work)."""
    from agentmem.embeddings import get_embedder
    from agentmem.ingest import parse_openai

    emb = get_embedder(embedder) if embedder is None or isinstance(embedder, str) else embedder
    timings: dict[str, float] = {}
    t_all = time.perf_counter()
    t0 = time.perf_counter()
    parsed = parse_openai(Path(path).read_bytes())
    trajs = list(parsed.trajectories)
    scoring_groups = [t.group for t in trajs]
    if no_groups:
        first: dict[str, Trajectory] = {}
        for t in trajs:
            first.setdefault(t.group, t)
        scoring_groups = list(first)
        trajs = [_ungrouped(t) for t in first.values()]
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
    for traj, key in zip(trajs, scoring_groups):
        by_group.setdefault(key, []).append(
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
        "no_groups": no_groups,
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


def _ungrouped(t: Trajectory) -> Trajectory:
    """``t`` without its group: its group key becomes the default, its task text."""
    import attrs

    from agentmem.records import normalise_group

    return attrs.evolve(t, group=normalise_group(t.task))


# --------------------------------------------------------------------------- everyday


def run_everyday(
    planted: int = 20,
    seed: int = 0,
    *,
    model: Any = None,
    use_model: bool = True,
    embedder: Any = None,
    max_findings: int | None = None,
    threads: int | None = None,
    dup_threshold: float | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Everyday runs (each task once, no group field), learn once, score by setting."""
    from agentmem.embeddings import get_embedder

    from . import everyday, generate

    say = progress or (lambda _m: None)
    emb = get_embedder(embedder) if embedder is None or isinstance(embedder, str) else embedder
    timings: dict[str, float] = {}
    t_all = time.perf_counter()
    t0 = time.perf_counter()
    say(f"building {planted} planted everyday runs (seed {seed})")
    records, causes = everyday.build_everyday(planted, seed)
    catalogue = generate.tool_catalogue()
    timings["generate_seconds"] = time.perf_counter() - t0
    baseline: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="agentmem-everyday-") as tmp:
        report, lessons, model_id = _record_and_learn(
            Path(tmp) / "everyday.db",
            [_trajectory(r, group=False) for r in records],
            emb=emb,
            model=_model(model, use_model, threads),
            use_model=use_model,
            max_findings=max_findings,
            progress=progress,
            timings=timings,
            exact_baseline=baseline,
        )
    say("scoring")
    t0 = time.perf_counter()
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
    by_setting: dict[str, Any] = {}
    for setting in everyday.SETTINGS:
        mine = [c for c in causes if c["setting"] == setting]
        kinds: dict[str, list[int]] = {}
        for c in mine:
            kinds.setdefault(c["kind"], []).append(int(str(c["id"]) in addressed))
        hit = sum(1 for c in mine if str(c["id"]) in addressed)
        by_setting[setting] = {
            "causes": len(mine),
            "recovered": hit,
            "recovery": hit / len(mine) if mine else None,
            "by_kind": {k: sum(v) / len(v) for k, v in sorted(kinds.items())},
        }
    missed = [
        {
            "id": c["id"],
            "setting": c["setting"],
            "kind": c["kind"],
            "tool": c["tool"],
            "reference_lesson": c.get("reference_lesson"),
        }
        for c in causes
        if str(c["id"]) not in addressed
    ]
    return {
        "benchmark": "everyday",
        "model": model_slug(model, use_model),
        "model_id": model_id if use_model else "none (data only)",
        "embedder": emb.model_id,
        "dup_threshold": emb.dup_threshold if dup_threshold is None else dup_threshold,
        "theta_task": report.theta_task,
        "planted": planted,
        "seed": seed,
        "runs": len(records),
        "tasks": len({r["group"] for r in records}),
        "score": {k: v for k, v in result.items() if k != "lessons"},
        "by_setting": by_setting,
        "exact_only": baseline,
        "learn": {
            **_learn_summary(report, report.groups_used),
            # groups here have their own sizes (a correction: 2 attempts): sum of G + 1
            "paper_bound": report.llm_call_bound - report.compressions,
        },
        "timings": {k: round(v, 2) for k, v in timings.items()},
        "lessons": result["lessons"],
        "missed": missed,
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
    if res["benchmark"] == "everyday":
        rows += [
            (
                "benchmark",
                f"BFCL everyday: {res['runs']} runs of {res['tasks']} tasks, each run once, "
                f"no groups; {res['planted']} planted, seed {res['seed']}",
            ),
            ("model", str(res["model_id"])),
            (
                "embedder",
                f"{res['embedder']} (dup_threshold {res['dup_threshold']}, "
                f"theta_task {res['theta_task']})",
            ),
            (
                "recovery",
                f"{_pct(s['recovery'])} ({s['recovered']}/{s['causes']}); "
                f"clean {_pct(s['recovery_clean'])}",
            ),
        ]
        for setting, b in res["by_setting"].items():
            rows.append((f"  {setting}", f"{_pct(b['recovery'])} ({b['recovered']}/{b['causes']})"))
            rows += [(f"    {k}", _pct(v)) for k, v in b["by_kind"].items()]
        rows.append(("precision", _pct(s["precision"])))
        ex = res["exact_only"]
        rows.append(
            (
                "exact groups only",
                f"{ex.get('groups_seen')} groups seen, {ex.get('groups_used')} used, "
                f"{ex.get('lessons')} lessons",
            )
        )
        rows.append(("groups formed", str(lr["groups_formed"])))
    elif res["benchmark"] == "bfcl":
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
                f"trajectories ({res['path']})"
                + ("; one trial per task, no groups" if res.get("no_groups") else ""),
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
        ("groups learned", f"{lr['groups_used']} {lr.get('groups_by_kind', '')}"),
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
    if res["benchmark"] == "everyday":
        kinds = "; ".join(f"{k} {_pct(b['recovery'])}" for k, b in res["by_setting"].items())
        bench = f"BFCL everyday {res['runs']} runs s{res['seed']}"
        rec, prec = _pct(s["recovery"]), _pct(s["precision"])
    elif res["benchmark"] == "bfcl":
        kinds = " / ".join(f"{v:.2f}" for v in s["recovery_by_kind"].values())
        bench = f"BFCL {res['groups']}x{GROUP_SIZE} s{res['seed']}"
        rec, prec = _pct(s["recovery"]), _pct(s["precision"])
    else:
        kinds = "-"
        bench = (
            f"tau-bench {res['trajectories']} single runs"
            if res.get("no_groups")
            else f"tau-bench {res['groups']} groups"
        )
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
    prefix = {
        "tau-bench": "lessons-tau-nogroups-" if res.get("no_groups") else "lessons-tau-",
        "everyday": "lessons-everyday-",
    }.get(res["benchmark"], "lessons-")
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
        "one row per `lessons-*.json` here. Recovery by kind: " + (kinds or "-") + "; "
        "for the everyday runs, by setting (within the run / across tasks).",
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
        help="model spec for agentmem.models.get_model: a packaged name, a .gguf path or "
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
    ap.add_argument(
        "--everyday",
        action="store_true",
        help="BFCL tasks each run once, no groups (see benchmarks/lessons/everyday.py)",
    )
    ap.add_argument(
        "--planted",
        type=int,
        default=20,
        help="--everyday: runs with a planted mistake, half fixed within the run (default 20)",
    )
    ap.add_argument(
        "--no-groups",
        action="store_true",
        help="--tau-bench: one trial per task, recorded without its group",
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
            no_groups=args.no_groups,
            model=args.model,
            use_model=use_model,
            embedder=args.embedder,
            max_findings=args.max_findings,
            threads=args.threads,
            progress=progress,
        )
    elif args.everyday:
        res = run_everyday(
            args.planted,
            args.seed,
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
            if res["benchmark"] in ("bfcl", "everyday"):
                ok = "+" if (d["addresses"] or d["true_of_groups"]) else "x"
            print(f"{ok} {d['lesson']}  [{', '.join(map(str, tag))}]{flags}")
        for m in res.get("missed", []):
            print(f"MISSED {m['id']}: {m['reference_lesson']}")
    if not args.no_write:
        path = write_results(res, args.out)
        print(f"\nwrote {path} and {args.out / 'lessons.md'}", file=sys.stderr)
    return 0
