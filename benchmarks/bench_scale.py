"""How the cost of a library grows: learn, check, backup, memory and file size by size.

Builds three synthetic libraries of a realistic shape (:mod:`benchmarks.scale_data`):
1,000, 10,000 and 100,000 trajectories of 10 steps (250, 2,500 and 25,000 groups of four
runs) with 1,000, 10,000 and 100,000 experiences, through the public API
(``Memory.record_many``, ``Memory.add_many``). Then, on each, runs the CLI as a user
would, each command in its own process:

* ``agentmem learn --no-model --json``: one session that learns every group (the fastest
  of 3 on copies of the 1k and 10k libraries); the time per learned group (the
  session's ``wall_seconds``, without the process's start),
  split by stage (the report's ``timings``), and the peak memory (the process's
  peak resident set, VmHWM; it includes the pages of the file SQLite maps, at
  most 256 MiB);
* ``agentmem check``: the time and peak memory of verifying the file;
* ``agentmem backup FILE``: the time and peak memory of a consistent copy (checked);
* ``agentmem prune --keep-last N/10``: the time, and the bytes freed against the dry
  run's estimate;
* the file size before and after learning.

Every figure is printed with its ratio to the smallest library's, so a cost that grows
faster than the library shows at once. Targets: time per learned group within 2x from
the smallest library to the largest; peak memory growing more slowly than the library.
Runs in a few minutes on 2 cores (``--sizes 1000,10000`` for a quick look).

    python benchmarks/bench_scale.py [--sizes 1000,10000,100000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_data import experiences, groups

from agentmem import Memory

ROOT = Path(__file__).resolve().parent.parent
#: The stages of a session's ``timings``, in order.
STAGES = ("select", "load", "stage1", "stage2", "stage3", "apply")


def build(path: Path, n_traj: int, n_exp: int) -> float:
    """A library of ``n_traj`` trajectories (``n_traj / 4`` groups) and ``n_exp`` lessons."""
    t0 = time.perf_counter()
    with Memory.open(path) as mem:
        batch = []
        for g in groups(n_traj // 4, seed=n_traj):
            batch += g
            if len(batch) >= 2000:
                mem.record_many(batch)
                batch = []
        if batch:
            mem.record_many(batch)
        mem.add_many(experiences(n_exp, seed=n_exp))
    return time.perf_counter() - t0


#: ``python -m agentmem`` that writes its peak resident memory (VmHWM, which a new
#: program image starts afresh) to $BENCH_HWM on exit. The child's ru_maxrss would not
#: do: Linux carries the parent's peak into it across fork and exec.
_WRAPPER = """
import atexit, os, runpy, sys
def _peak():
    with open("/proc/self/status") as f, open(os.environ["BENCH_HWM"], "w") as out:
        out.write(next(line for line in f if line.startswith("VmHWM")).split()[1])
if os.path.exists("/proc/self/status"):
    atexit.register(_peak)
sys.argv[0] = "agentmem"
runpy.run_module("agentmem", run_name="__main__", alter_sys=True)
"""


def run(args: list[str], db: Path) -> tuple[str, float, float]:
    """Run ``agentmem ARGS`` in a fresh process: (stdout, seconds, peak resident MB)."""
    with tempfile.TemporaryDirectory() as d:
        hwm = Path(d) / "hwm"
        env = {**os.environ, "AGENTMEM_DB": str(db), "PYTHONPATH": str(ROOT), "BENCH_HWM": str(hwm)}
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", _WRAPPER, *args], capture_output=True, env=env, check=False
        )
        secs = time.perf_counter() - t0
        if proc.returncode:
            raise SystemExit(
                f"agentmem {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr.decode()}"
            )
        peak = int(hwm.read_text()) / 1024 if hwm.exists() else float("nan")  # kB
    return proc.stdout.decode(), secs, peak


#: Sessions on libraries up to this size are run this many times (each on a fresh copy)
#: and the fastest kept: a short session is mostly fixed costs and noise.
SMALL, REPEAT = 10_000, 3


def learn(folder: Path, db: Path, n_traj: int) -> tuple[dict[str, Any], float, float]:
    """``agentmem learn --no-model --json`` on ``db``: (report, process seconds, peak MB),
    the fastest session of :data:`REPEAT` on copies for a small library."""
    runs = []
    for k in range(REPEAT if n_traj <= SMALL else 1):
        target = db
        if k < REPEAT - 1 and n_traj <= SMALL:  # the last run learns the library itself
            target = folder / f"learn-{k}.db"
            shutil.copyfile(db, target)
        out, secs, peak = run(["learn", "--no-model", "--json"], target)
        runs.append((json.loads(out), secs, peak))
        if target != db:
            target.unlink()
    return min(runs, key=lambda r: float(r[0]["wall_seconds"]))


def measure(folder: Path, n_traj: int, n_exp: int) -> dict[str, Any]:
    db = folder / f"lib-{n_traj}.db"
    built = build(db, n_traj, n_exp)
    size_before = db.stat().st_size
    report, learn_s, learn_mb = learn(folder, db, n_traj)
    used = int(report["groups_used"])
    session_s = float(report["wall_seconds"])
    size_learned = db.stat().st_size
    timings = report.get("timings") or {}
    check_out, check_s, check_mb = run(["check", "--json"], db)
    checked = json.loads(check_out)
    if not checked.get("ok"):
        raise SystemExit(f"agentmem check found errors in {db}: {checked['problems'][:3]}")
    copy = folder / f"copy-{n_traj}.db"
    _, backup_s, backup_mb = run(["backup", str(copy)], db)
    prune = ["prune", "--keep-last", str(n_traj // 10), "--json"]
    estimate = json.loads(run([*prune, "--dry-run"], db)[0])["bytes_estimated"]
    out, prune_s, _ = run(prune, db)
    pruned = json.loads(out)
    row = {
        "trajectories": n_traj,
        "experiences": n_exp,
        "groups": used,
        "build_s": built,
        "mb_before": size_before / 1e6,
        "mb_after": size_learned / 1e6,
        "learn_s": learn_s,
        "ms_per_group": 1000 * session_s / max(used, 1),
        "stage_ms": {k: 1000 * timings[k] / max(used, 1) for k in STAGES if k in timings},
        "session_s": session_s,
        "learn_mb": learn_mb,
        "check_s": check_s,
        "check_mb": check_mb,
        "backup_s": backup_s,
        "backup_mb": backup_mb,
        "prune_s": prune_s,
        "prune_estimated_mb": estimate / 1e6,
        "prune_freed_mb": (pruned["bytes_freed"] or 0) / 1e6,
        "mb_pruned": db.stat().st_size / 1e6,
        "ops_applied": sum(1 for o in report["operations"] if o["status"] == "applied"),
        "ops_rejected": sum(1 for o in report["operations"] if o["status"] == "rejected"),
    }
    copy.unlink()
    db.unlink()  # the largest library is 0.7 GB: keep one at a time
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    return row


def table(rows: list[dict[str, Any]]) -> str:
    base = rows[0]

    def r(row: dict[str, Any], key: str) -> str:
        return f"{row[key] / base[key]:.2f}x" if base[key] else "-"

    lines = [
        "| trajectories / experiences / groups | file MB | learn ms/group | "
        "select / load / stage 1 / stage 2 / stage 3 / apply (ms/group) | learn peak MB | "
        "check s | check peak MB | backup s | backup peak MB | prune 90% s | "
        "freed MB (estimated) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        stages = " / ".join(f"{row['stage_ms'].get(k, float('nan')):.2f}" for k in STAGES)
        lines.append(
            f"| {row['trajectories']:,} / {row['experiences']:,} / {row['groups']:,} "
            f"| {row['mb_after']:.0f} ({r(row, 'mb_after')}) "
            f"| {row['ms_per_group']:.2f} ({r(row, 'ms_per_group')}) "
            f"| {stages} "
            f"| {row['learn_mb']:.0f} ({r(row, 'learn_mb')}) "
            f"| {row['check_s']:.1f} ({r(row, 'check_s')}) "
            f"| {row['check_mb']:.0f} ({r(row, 'check_mb')}) "
            f"| {row['backup_s']:.1f} ({r(row, 'backup_s')}) "
            f"| {row['backup_mb']:.0f} ({r(row, 'backup_mb')}) "
            f"| {row['prune_s']:.1f} ({r(row, 'prune_s')}) "
            f"| {row['prune_freed_mb']:.0f} ({row['prune_estimated_mb']:.0f}) |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000", help="trajectories per library")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR (default: a temporary folder)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    t0 = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory(dir=args.keep) as d:
        for n in sizes:
            row = measure(Path(d), n, n)
            rows.append(row)
            print(
                f"{n:>7,} trajectories: built in {row['build_s']:.0f} s, learned "
                f"{row['groups']:,} groups in {row['session_s']:.1f} s (the process "
                f"{row['learn_s']:.1f} s) "
                f"({row['ops_applied']:,} operations applied, {row['ops_rejected']:,} "
                f"rejected), check {row['check_s']:.1f} s, backup {row['backup_s']:.1f} s, "
                f"prune to the newest {n // 10:,} {row['prune_s']:.1f} s ({row['mb_after']:.0f} "
                f"-> {row['mb_pruned']:.0f} MB)",
                flush=True,
            )
    print()
    print(table(rows))
    growth = rows[-1]["trajectories"] / rows[0]["trajectories"]
    per_group = rows[-1]["ms_per_group"] / rows[0]["ms_per_group"]
    memory = rows[-1]["learn_mb"] / rows[0]["learn_mb"]
    print(
        f"\nlibrary {growth:.0f}x larger: time per learned group {per_group:.2f}x "
        f"(target <= 2x: {'met' if per_group <= 2 else 'MISSED'}), learn peak memory "
        f"{memory:.2f}x (target < {growth:.0f}x: {'met' if memory < growth else 'MISSED'}); "
        f"whole run {time.perf_counter() - t0:.0f} s"
    )
    if len(rows) > 2:  # the smallest session is mostly fixed costs: the last step alone too
        a, b, nan = rows[-2], rows[-1], float("nan")
        print(
            f"from {a['trajectories']:,} to {b['trajectories']:,} trajectories: time per "
            f"learned group {b['ms_per_group'] / a['ms_per_group']:.2f}x, stage 2 (the exact "
            f"retrieval) {b['stage_ms'].get('stage2', nan) / a['stage_ms'].get('stage2', nan):.2f}x"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
