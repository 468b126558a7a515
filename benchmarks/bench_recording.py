"""Recording throughput: agentmem's record_many against a raw executemany of the same rows.

Both write the same trajectories (10 steps each) into the same schema in fresh
files, in batches of one transaction per batch. The raw baseline inserts
pre-built tuples with ``executemany``: no validation, no redaction, no domain
lookup. Prints trajectories per second and the ratio agentmem / raw (target >= 0.8
with the default redaction), each the fastest of ``--rounds`` interleaved rounds.
Then records one 22 MB tool output (a build log) with the output cap off and at its
default, and prints how much the file grows.

    python benchmarks/bench_recording.py [--trajectories 5000] [--batch 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from agentmem import Memory, Step, Trajectory
from agentmem.db import connect, write
from agentmem.migrations import migrations
from agentmem.outputs import DEFAULT_OUTPUT_CAP
from agentmem.timestamps import now_iso


def make(n: int) -> list[Trajectory]:
    out = []
    for i in range(n):
        steps = [
            Step(
                tool=("ls", "cat", "grep", "bash", "edit")[j % 5],
                params={"path": f"src/mod_{i}_{j}.py", "n": j},
                output=f"line {j}\n" * 20 + ("Error: no such file" if j == 7 else ""),
                success=j != 7,
            )
            for j in range(10)
        ]
        out.append(
            Trajectory(task=f"task {i % 50}", steps=steps, accepted=i % 3 != 0, meta={"run": i})
        )
    return out


def raw(path: Path, trajs: list[Trajectory], batch: int) -> float:
    db = connect(path)
    with write(db):
        migrations.apply(db)
    t0 = time.perf_counter()
    next_id = 1
    for b in range(0, len(trajs), batch):
        chunk = trajs[b : b + batch]
        at = now_iso()
        t_rows, s_rows, f_rows = [], [], []
        for t in chunk:
            tid = next_id
            next_id += 1
            t_rows.append(
                (
                    tid,
                    t.task,
                    t.group,
                    "record",
                    None,
                    len(t.steps),
                    t.success_rate,
                    None,
                    None,
                    json.dumps(t.meta),
                    at,
                )
            )
            for k, s in enumerate(t.steps):
                s_rows.append(
                    (tid, k, s.tool, "fs", json.dumps(s.params), s.output, int(s.success))
                )
            f_rows.append((tid, "accept" if t.accepted else "reject", None, at))
        with write(db):
            db.conn.executemany(
                "INSERT INTO trajectories (id, task, group_key, source, condition, "
                "step_count, success_rate, state_ok, essential_actions, meta, "
                "created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                t_rows,
            )
            db.conn.executemany(
                "INSERT INTO steps (trajectory_id, position, tool, domain, params, "
                "output, success) VALUES (?,?,?,?,?,?,?)",
                s_rows,
            )
            db.conn.executemany(
                "INSERT INTO feedback (trajectory_id, kind, note, created_at) VALUES (?,?,?,?)",
                f_rows,
            )
    secs = time.perf_counter() - t0
    db.close()
    return secs


def agentmem(path: Path, trajs: list[Trajectory], batch: int, redact: bool) -> float:
    from agentmem.redact import Redactor

    mem = Memory.open(path, redactor=None if redact else Redactor(enabled=False))
    t0 = time.perf_counter()
    for b in range(0, len(trajs), batch):
        mem.record_many(trajs[b : b + batch])
    secs = time.perf_counter() - t0
    mem.close()
    return secs


def big_output(folder: Path, cap: int) -> tuple[int, float]:
    """(file growth in bytes, seconds) of recording one 22 MB build log with ``cap``."""
    log = "".join(
        f"[{i:07d}] cc -O2 -c src/module_{i % 977}.c -o build/m{i}.o\n" for i in range(420_000)
    )
    log += "src/main.c:12: error: undefined reference to `run'\nmake: *** [all] Error 1\n"
    path = folder / f"big-{cap}.db"
    with Memory.open(path) as mem:
        mem.set_output_cap(cap)
        mem.record("warm up", [Step("bash", {"cmd": "true"}, "", True)])
    before = path.stat().st_size
    with Memory.open(path) as mem:
        t0 = time.perf_counter()
        mem.record("build", [Step("bash", {"cmd": "make"}, log, False)])
        secs = time.perf_counter() - t0
    return path.stat().st_size - before, secs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trajectories", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    trajs = make(args.trajectories)
    r = a_plain = a = float("inf")
    # Rounds of all three, interleaved, each into fresh files; the fastest of each is kept,
    # which keeps a busy machine's hiccups out of the ratios.
    for i in range(args.rounds):
        with tempfile.TemporaryDirectory() as d:
            r = min(r, raw(Path(d) / f"raw{i}.db", trajs, args.batch))
            a_plain = min(a_plain, agentmem(Path(d) / "plain.db", trajs, args.batch, False))
            a = min(a, agentmem(Path(d) / "am.db", trajs, args.batch, redact=True))
    n = args.trajectories
    print(f"{n} trajectories x 10 steps, batches of {args.batch}, best of {args.rounds} rounds")
    print(f"{'':28}{'traj/s':>10}{'ratio to raw':>15}")
    print(f"{'raw executemany':28}{n / r:>10.0f}{1.0:>15.2f}")
    print(f"{'agentmem, redaction off':28}{n / a_plain:>10.0f}{r / a_plain:>15.2f}")
    print(f"{'agentmem (default)':28}{n / a:>10.0f}{r / a:>15.2f}")
    with tempfile.TemporaryDirectory() as d:
        whole, whole_s = big_output(Path(d), 0)
        capped, capped_s = big_output(Path(d), DEFAULT_OUTPUT_CAP)
    print(
        f"\none 22 MB tool output (capped, then redacted): the file grows by "
        f"{whole / 1e6:.1f} MB stored whole (cap off, {whole_s:.2f} s), "
        f"{capped / 1e3:.0f} kB with the default {DEFAULT_OUTPUT_CAP // 1024} KiB cap "
        f"({capped_s:.2f} s)"
    )


if __name__ == "__main__":
    main()
