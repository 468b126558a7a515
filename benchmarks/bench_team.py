"""Sharing with a team on loopback: a real sqld primary and 3 replicas (laptops a, b, c).

Reports, in one run:

- **lesson latency**: from a lesson applied on the primary (a team session's
  transaction committed, from laptop a) to the lesson in laptop b's ``context``,
  with b running ``team sync`` then ``context`` in a loop; median and max of
  ``--lessons`` lessons, next to the time of one sync alone. (With background
  syncs, add up to the team's ``sync_interval``.)
- **outbox push**: shared runs per second pushed by ``team sync`` from laptop c
  (a member: to the runs inbox), against recording the same runs into the
  private library (the baseline, same run); a repeated push of the same runs
  (all already there) too; and the learner's ``team sync`` taking them into the
  team library (each one validated and redacted again).
- **cold context**: a cold ``agentmem context`` process on a laptop whose
  lessons are all in the team replica, and on one with the same lessons in the
  private library and as many in the team's (merged), each against the same
  lessons in a private library alone (target: within 10%). Runs interleaved,
  median of ``--runs``.

    python benchmarks/bench_team.py [--lessons 10] [--runs 15] [--library 1000] [--push 1000]

Needs sqld (``$AGENTMEM_SQLD``, see ``agentmem team serve --help``) and
``pip install 'agentmem[team]'``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("RUST_LOG", "off")

from agentmem import Memory, Step, Trajectory
from agentmem.records import Operation
from agentmem.team import claims, membership, server, tokens
from agentmem.team.replica import RemoteDb, open_remote, replica_lock
from benchmarks.bench_context import build, lessons

TASK = "read the report file in the archive folder"


def apply_lessons(mem: Memory, items: list[tuple[str, str]]) -> float:
    """ADD ``items`` (text, domain) on the primary as one team session; seconds to commit."""
    from agentmem.learning.session import LearnReport
    from agentmem.storage.journal import AppliedOp

    ops = [Operation("ADD", text=t, domain=d, origin="user") for t, d in items]
    vecs = dict(zip([t for t, _ in items], mem.embedder.embed_batch([t for t, _ in items])))
    plan = LearnReport(
        session_id=None,
        dry_run=True,
        groups_seen=0,
        groups_ready=0,
        groups_degenerate=0,
        groups_pending=0,
        groups_already_learned=0,
        groups_used=0,
        llm_calls=0,
        llm_call_bound=0,
        compressions=0,
        llm_failures=0,
        prompt_tokens=0,
        completion_tokens=0,
        model_seconds=0.0,
        wall_seconds=0.0,
        operations=tuple(AppliedOp(op, "proposed") for op in ops),
    )
    cfg = membership.config(mem)
    with replica_lock(cfg.replica):
        conn = open_remote(cfg)
        try:
            t0 = time.perf_counter()
            claims.apply_session(
                RemoteDb(conn),
                claims.Claim("bench", {}, {}),
                plan,
                vecs,
                {},
                model=None,
                embedder=mem.embedder.model_id,
            )
            return time.perf_counter() - t0
        finally:
            conn.close()


def latency(a: Memory, b: Memory, n: int) -> tuple[list[float], list[float]]:
    waits, syncs = [], []
    for i in range(n):
        marker = f"Before calling cat, open the archive folder first (lesson {i} of the bench)."
        apply_lessons(a, [(marker, "fs")])
        t0 = time.perf_counter()
        while True:
            s0 = time.perf_counter()
            membership.sync(b)
            syncs.append(time.perf_counter() - s0)
            if marker in b.context(TASK, tools=["cat"], k=50):
                break
        waits.append(time.perf_counter() - t0)
    return waits, syncs


def runs(n: int) -> list[Trajectory]:
    return [
        Trajectory(
            task=f"archive report {i}",
            steps=[
                Step("cd", {"folder": "archive"}, '{"cwd": "archive"}', True),
                Step("ls", {}, "report.txt notes.txt", True),
                Step("cat", {"file_name": "report.txt"}, f"quarterly figures {i}", True),
            ],
            accepted=i % 3 != 0,
        )
        for i in range(n)
    ]


def push_rate(root: Path, c: Memory, a: Memory, n: int) -> tuple[float, float, float, float]:
    local = Memory.open(root / "local-baseline.db", embedder=c.embedder)
    batch = runs(n)
    t0 = time.perf_counter()
    local.record_many(batch)
    record_s = time.perf_counter() - t0
    local.close()
    c.record_many(batch, share=True)
    t0 = time.perf_counter()
    report = membership.sync(c)
    push_s = time.perf_counter() - t0
    assert report.inserted == n, report
    c.db.execute("UPDATE team_outbox SET pushed_at = NULL")
    t0 = time.perf_counter()
    again = membership.sync(c)
    repeat_s = time.perf_counter() - t0
    assert again.inserted == 0, again
    t0 = time.perf_counter()
    taken = membership.sync(a)
    collect_s = time.perf_counter() - t0
    assert taken.collected >= n, taken
    return n / record_s, n / push_s, n / repeat_s, n / collect_s


def cold(paths: dict[str, Path], runs_: int) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    out: dict[str, list[float]] = {k: [] for k in paths}
    for _ in range(runs_):
        for name, path in paths.items():  # interleaved, so that load changes hit all alike
            cmd = [sys.executable, "-m", "agentmem", "context", TASK, "--tool", "cat"]
            t0 = time.perf_counter()
            p = subprocess.run([*cmd, "--db", str(path)], capture_output=True, env=env)
            out[name].append((time.perf_counter() - t0) * 1e3)
            assert p.returncode == 0 and p.stdout, (name, p.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lessons", type=int, default=10, help="lessons timed for latency")
    ap.add_argument("--runs", type=int, default=15, help="cold context runs per library")
    ap.add_argument("--library", type=int, default=1000, help="lessons in the libraries")
    ap.add_argument("--push", type=int, default=1000, help="shared runs pushed")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = root / "primary"
        files = {
            name: tokens.add(data, name, role=role, out=root / f"{name}.token").path
            for name, role in (("a", "learner"), ("b", "member"), ("c", "member"), ("d", "member"))
        }
        primary = server.start(data, port=server.free_port(), runs_port=server.free_port())

        def join(mem: Memory, name: str) -> None:
            membership.join(
                mem,
                primary.url,
                token_file=str(files[name]),
                runs_url=primary.runs_url,
                sync_interval=0,
            )

        try:
            server.bootstrap(primary.url, token=primary.setup_token)
            primary.publish()  # the members' signing keys, as `team serve` does
            laptops: dict[str, Any] = {}
            for name in "abc":
                laptops[name] = Memory.open(root / f"{name}.db")
                join(laptops[name], name)
            a, b, c = laptops["a"], laptops["b"], laptops["c"]

            waits, syncs = latency(a, b, args.lessons)
            print(
                f"lesson applied on the primary -> in b's context: median "
                f"{statistics.median(waits) * 1e3:.0f} ms, max {max(waits) * 1e3:.0f} ms "
                f"({args.lessons} lessons; one sync alone: median "
                f"{statistics.median(syncs) * 1e3:.0f} ms)"
            )

            record, push, repeat, collect = push_rate(root, c, a, args.push)
            print(
                f"outbox push: {push:.0f} runs/s ({args.push} runs of 3 steps); private "
                f"record_many of the same runs {record:.0f} runs/s (ratio {push / record:.2f}); "
                f"repeated push (all already there) {repeat:.0f} runs/s; the learner takes "
                f"them in at {collect:.0f} runs/s"
            )

            items = lessons(args.library)
            build(root / "private.db", args.library)
            t = apply_lessons(a, items)
            print(f"{args.library} lessons applied on the primary in one session: {t:.1f} s")
            both = root / "both.db"
            build(both, args.library)
            with Memory.open(both) as m:
                join(m, "d")
            membership.sync(b)
            for m in laptops.values():
                m.close()
            times = cold(
                {"private": root / "private.db", "team": root / "b.db", "both": both}, args.runs
            )
            base = statistics.median(times["private"])
            for name, label in (
                ("private", f"private library ({args.library} lessons)"),
                ("team", f"replica only ({args.library} team lessons)"),
                ("both", f"private + replica ({args.library} + {args.library}, merged)"),
            ):
                med = statistics.median(times[name])
                print(
                    f"cold `agentmem context`, {label:45s} median {med:5.0f} ms "
                    f"(ratio {med / base:.2f}; target <= 1.10)"
                )
        finally:
            primary.stop()


if __name__ == "__main__":
    main()
