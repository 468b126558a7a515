"""Retrieval latency of agentmem's vector index against numpy brute force in memory.

    python benchmarks/bench_retrieval.py [--sizes 1000,10000,100000] [--dims 384] [--queries 200]

For each size N it builds a temporary library of N random but clustered unit
vectors (8 domains of 12 clusters each, one vector in 9 domain-free) with
``vector_index.put_many`` in batches of 1,000, then times ``vector_index.search`` with k=5
for queries near a random cluster, two ways:

* ``1 domain``: ``domains=[d]``, i.e. that domain plus the domain-free vectors;
* ``all``: ``domains=None``.

Each way is timed for the public ``search`` (engine ``auto``: numpy when it is
already imported, as it is here), once more through a connection with
``PRAGMA mmap_size`` set to 1 GiB, and for each engine forced: ``numpy`` (the
index's float32 blocks, kept in memory by the connection from its second
search of an index version on, scored with one matrix-vector product; the few
vectors within the float32 error bound of the k-th are re-scored in float64)
and ``sql`` (sqlite-vec int8 KNN, certified, no numpy). The baseline is numpy
brute force (``X @ q``, ``argpartition``) over float32 vectors already in
memory; for ``1 domain`` over a matrix already sliced to the domain plus the
domain-free vectors, the best case for numpy. Ratio = search p50 / baseline
p50. Each method runs its queries back to back, like the baseline, in 3 rounds
(the baseline too), and the round with the lowest p50 is reported; the answers
are checked afterwards.

Every search result is checked against float64 brute force. Then, per size, a
fresh Python process opens the file and runs one ``search`` the way a cold
``agentmem retrieve`` would (it reads only the blocks of the domains searched);
its wall time includes interpreter start and imports. (sqlite-utils imports
numpy whenever numpy is installed, so such a process has numpy loaded and
engine ``auto`` uses it. ``agentmem context`` takes a faster path without
numpy: see bench_context.py.)

What this does not measure: embedding the query, the OS page cache being cold
(the file was just written, so it is in memory), or other processes writing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# One BLAS thread for the baseline and the index alike: multi-threaded BLAS on a small
# shared machine swings p50 by 10x. Set OPENBLAS_NUM_THREADS (etc.) to override.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from sqlite_utils import Database  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentmem.db import connect, write  # noqa: E402
from agentmem.migrations import migrations  # noqa: E402
from agentmem.storage import vector_index  # noqa: E402

N_DOMAINS = 8
#: Each method (the baseline too) runs its queries this many times; the round with the
#: lowest p50 is reported, which keeps a busy machine's hiccups out of the ratios.
ROUNDS = 3
CLUSTERS = 12
K = 5


def library(
    n: int, dims: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, Callable[[int], tuple[np.ndarray, np.ndarray]]]:
    """``n`` clustered unit vectors (float32), their domain numbers (8 = domain-free)."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal(dims)
    common /= np.linalg.norm(common)
    centres = rng.standard_normal((N_DOMAINS, CLUSTERS, dims))
    centres /= np.linalg.norm(centres, axis=2, keepdims=True)
    dom = rng.integers(0, N_DOMAINS + 1, n)
    cluster = rng.integers(0, CLUSTERS, n)

    def draw(d: np.ndarray, c: np.ndarray, r: np.random.Generator) -> np.ndarray:
        noise = r.standard_normal((len(d), dims)) / np.sqrt(dims)
        x = 0.35 * common + 0.7 * centres[np.minimum(d, N_DOMAINS - 1), c] + 0.75 * noise
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    def queries(m: int) -> tuple[np.ndarray, np.ndarray]:
        r = np.random.default_rng(seed + 1)
        d = r.integers(0, N_DOMAINS, m)
        return draw(d, r.integers(0, CLUSTERS, m), r), d

    return draw(dom, cluster, rng), dom, queries


def name(d: int) -> str:
    return "" if d == N_DOMAINS else f"domain{d}"


def pct(ts: list[float], p: float) -> float:
    ts = sorted(ts)
    return ts[min(len(ts) - 1, int(p * len(ts)))] * 1e3


def numpy_top(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    s = x @ q
    top = np.argpartition(-s, K)[:K] if len(s) > K else np.arange(len(s))
    return top[np.argsort(-s[top], kind="stable")]


def reference(x: np.ndarray, ids: np.ndarray, q: np.ndarray) -> list[int]:
    s = x.astype(np.float64) @ q.astype(np.float64)
    order = sorted(range(len(s)), key=lambda i: (-s[i], ids[i]))[:K]
    return [int(ids[i]) for i in order]


COLD = """
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
from agentmem.storage import vector_index
from agentmem.db import connect
db = connect({path!r})
t1 = time.perf_counter()
hits = vector_index.search(db, {q!r}, domains={domains!r}, k=5)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, "numpy" in sys.modules)
"""


def cold(path: str, q: list[float], domains: list[str] | None) -> tuple[float, float, float, bool]:
    code = COLD.format(root=str(ROOT), path=path, q=q, domains=domains)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    opened, searched, np_loaded = out.stdout.split()
    return wall * 1e3, float(opened) * 1e3, float(searched) * 1e3, np_loaded == "True"


def bench(n: int, dims: int, n_queries: int, folder: str) -> None:
    x, dom, queries = library(n, dims)
    ids = np.arange(1, n + 1)
    path = os.path.join(folder, f"bench_{n}_{dims}.db")
    db = connect(path)
    migrations.apply(db)
    t = time.perf_counter()
    with write(db):
        vector_index.ensure_index(db, "bench", dims)
    for start in range(0, n, 1000):
        with write(db):
            vector_index.put_many(
                db,
                [
                    (int(ids[i]), name(int(dom[i])), x[i])
                    for i in range(start, min(n, start + 1000))
                ],
            )
    build = time.perf_counter() - t
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = os.path.getsize(path)
    print(
        f"\nN={n:,} dims={dims}: build {build:.1f} s ({build / n * 1e6:.0f} us/vector), "
        f"file {size / 1e6:.1f} MB ({size / n:.0f} B/vector)"
    )

    # The same file through a connection that maps 1 GiB of it (agentmem.db.connect maps
    # 256 MiB): bigger files are then read without copying page by page.
    mm = connect(path)
    mm.execute("PRAGMA mmap_size = 1073741824")
    qs, qdom = queries(n_queries)
    free = dom == N_DOMAINS
    subsets = {d: np.flatnonzero((dom == d) | free) for d in range(N_DOMAINS)}
    sliced = {d: (np.ascontiguousarray(x[s]), ids[s]) for d, s in subsets.items()}
    print(f"  {'query':9s} {'method':26s} {'p50 ms':>8s} {'p95 ms':>8s} {'ratio':>6s}")
    for scope in ("1 domain", "all"):
        base: list[float] = []
        for _ in range(ROUNDS):
            times = []
            for q, d in zip(qs, qdom, strict=True):
                mat = sliced[int(d)][0] if scope == "1 domain" else x
                t = time.perf_counter()
                numpy_top(mat, q)
                times.append(time.perf_counter() - t)
            base = min(base, times, key=lambda ts: pct(ts, 0.5)) if base else times
        b50 = pct(base, 0.5)
        print(f"  {scope:9s} {'numpy in memory':26s} {b50:8.3f} {pct(base, 0.95):8.3f} {1.0:6.1f}")
        runs: list[tuple[vector_index.Engine, Database]] = [
            ("auto", db),
            ("numpy", db),
            ("sql", db),
            ("auto", mm),
        ]
        for engine, conn in runs:
            best: list[float] = []
            results = []
            # sqlite-vec scans every vector: fewer queries keep big sizes within minutes.
            m = n_queries if engine != "sql" or n < 50_000 else min(n_queries, 10)
            # Timed back to back, like the baseline (best of ROUNDS rounds, like it too);
            # checked against brute force afterwards.
            for _ in range(ROUNDS if engine != "sql" or n < 50_000 else 1):
                times = []
                results = []
                for q, d in zip(qs[:m], qdom[:m], strict=True):
                    domains = [name(int(d))] if scope == "1 domain" else None
                    ql = q.tolist()
                    t = time.perf_counter()
                    got = vector_index._search(conn, ql, domains=domains, k=K, engine=engine)
                    times.append(time.perf_counter() - t)
                    results.append(got)
                best = min(best, times, key=lambda ts: pct(ts, 0.5)) if best else times
            times = best
            for q, d, got in zip(qs[:m], qdom[:m], results, strict=True):
                mat, mids = sliced[int(d)] if scope == "1 domain" else (x, ids)
                if [i for i, _ in got] != reference(mat, mids, q):
                    raise SystemExit(f"MISMATCH: {engine} {scope} differs from brute force")
            label = f"vector_index.search ({engine}{', mmap' if conn is mm else ''})"
            p50 = pct(times, 0.5)
            print(f"  {scope:9s} {label:26s} {p50:8.3f} {pct(times, 0.95):8.3f} {p50 / b50:6.1f}")
    db.conn.close()
    mm.conn.close()
    for scope, domains in (("1 domain", [name(int(qdom[0]))]), ("all", None)):
        colds = [cold(path, qs[0].tolist(), domains) for _ in range(3)]
        wall, opened, searched, np_loaded = min(colds)
        print(
            f"  cold process, {scope}: {wall:.0f} ms wall (imports + connect {opened:.0f} ms, "
            f"search {searched:.1f} ms, numpy imported: {np_loaded})"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--dims", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    threads = {k: v for k, v in os.environ.items() if k.endswith("_NUM_THREADS")}
    print(
        f"agentmem index benchmark: k={K}, {args.queries} queries, sqlite-vec "
        f"{connect(':memory:').execute('select vec_version()').fetchone()[0]}, numpy "
        f"{np.__version__}, threads {threads or 'default'}"
    )
    t = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import numpy"],
        capture_output=True,
        text=True,
        check=True,
    )
    numpy_us = int(r.stderr.strip().splitlines()[-1].split("|")[1])
    print(
        f"importing numpy in a fresh process: {numpy_us / 1e3:.0f} ms "
        f"(the subprocess took {(time.perf_counter() - t) * 1e3:.0f} ms)"
    )
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for n in sizes:
            bench(n, args.dims, args.queries, folder)
    print(f"\nbenchmark took {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
