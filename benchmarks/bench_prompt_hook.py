"""A cold prompt hook against a cold ``python -c pass``, side by side (issue 31, item 7).

The command Claude Code runs before every prompt, as ``agentmem hooks install`` writes
it (``<python> -m agentmem hooks run claude-code``, the ``UserPromptSubmit`` JSON on
standard input), on a library of N real-looking lessons (``bench_context.build``: the
default embedder, the keyword index filled), with a prompt that gets lessons. Beside it,
in the same run and interleaved with it (so that a busy machine slows them alike): a bare
``python -c pass`` of the same Python in the same environment, and with ``--base REV`` the
same hook from the tree of an earlier commit. Children run with bytecode caching on (as an
installed package has its ``.pyc`` files) after one untimed run that writes the caches.

Reported, for each library size: the median and 95th percentile wall time of each
command, its median CPU time (user + system: a busy machine changes it less than the wall
time), its peak memory (max RSS, read by GNU time in separate runs, so that the wall times
do not include starting it), the hook's ratios to ``python -c pass`` (target: at most
2.0), and the modules the hook imports beyond ``python -c pass`` (``-X importtime``). No
timed assertion: the ratio is the result; ``tests/test_hook_imports.py`` guards the import
set. At 10,000 lessons the exact vector search (sqlite-vec's int8 scan, twice on this
library of near-duplicates) is a large part of the hook's time.

    python benchmarks/bench_prompt_hook.py [--lessons 100,1000,10000] [--runs 31] [--base REV]
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_context import build, lessons, pct  # noqa: E402

#: A session id as Claude Code writes it (a UUID: the served log keeps it as it is).
SESSION = "0b6f2a4e-5c1d-4e8a-9f3b-7d2c1a0e9b84"

Command = tuple[str, list[str], bytes | None, dict[str, str]]


def export(rev: str, into: Path) -> Path:
    """The package of commit ``rev``, unpacked into ``into``."""
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "agentmem"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def imported(cmd: list[str], stdin: bytes | None, env: dict[str, str]) -> set[str]:
    """The modules ``cmd`` (a Python command) imports, from ``-X importtime``."""
    p = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]], input=stdin, capture_output=True, env=env
    )
    return {
        line.rsplit("|", 1)[1].strip()
        for line in p.stderr.decode().splitlines()
        if line.startswith("import time:") and not line.endswith("imported package")
    }


def measure(cmds: list[Command], runs: int, peaks: int) -> list[tuple[float, float, float, float]]:
    """(p50, p95 wall ms, p50 CPU ms, peak MiB) of each command, their runs interleaved."""
    for _, cmd, stdin, env in cmds:  # untimed: writes the .pyc files
        subprocess.run(cmd, input=stdin, capture_output=True, env=env, check=True)
    walls: list[list[float]] = [[] for _ in cmds]
    cpus: list[list[float]] = [[] for _ in cmds]
    for _ in range(runs):
        for n, (_, cmd, stdin, env) in enumerate(cmds):
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(cmd, input=stdin, capture_output=True, env=env, check=True)
            walls[n].append((time.perf_counter() - t0) * 1e3)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[n].append((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1e3)
    # A child forked from this (large) process inherits its peak RSS until it execs, so the
    # peak is read by GNU time, a small process, when it is installed.
    rss: list[list[float]] = [[] for _ in cmds]
    gnu_time = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None
    for _ in range(peaks if gnu_time else 0):
        for n, (_, cmd, stdin, env) in enumerate(cmds):
            p = subprocess.run(
                [str(gnu_time), "-f", "%M", *cmd], input=stdin, capture_output=True, env=env
            )
            rss[n].append(int(p.stderr.decode().split()[-1]) / 1024)
    return [
        (statistics.median(w), pct(w, 0.95), statistics.median(c), max(r) if r else math.nan)
        for w, c, r in zip(walls, cpus, rss, strict=True)
    ]


def one_size(n: int, args: argparse.Namespace, env: dict[str, str], base: Path | None) -> None:
    """Build a library of ``n`` lessons and time the hook on it beside ``python -c pass``."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "lib.db"
        build(path, n)
        task = lessons(n)[7][0].split(" (case")[0]  # a prompt that gets lessons
        payload = json.dumps(
            {
                "session_id": SESSION,
                "transcript_path": str(Path(d) / "none.jsonl"),
                "cwd": d,
                "hook_event_name": "UserPromptSubmit",
                "prompt": task,
            }
        ).encode()
        hook = [sys.executable, "-m", "agentmem", "hooks", "run", "claude-code", "--db", str(path)]
        trees = [("hook", ROOT)] + ([(f"hook at {args.base}", base)] if base else [])
        cmds: list[Command] = [("python -c pass", [sys.executable, "-c", "pass"], None, env)]
        for label, tree in trees:
            cmds.append((label, hook, payload, {**env, "PYTHONPATH": str(tree)}))
        os.chdir(d)  # ``-m`` puts the current folder first on the path: an empty one
        try:
            for label, cmd, stdin, e in cmds[1:]:
                out = subprocess.run(cmd, input=stdin, capture_output=True, env=e)
                assert b"additionalContext" in out.stdout, (label, out)  # lessons were served
            figures = measure(cmds, args.runs, args.peaks)
            floor = imported(cmds[0][1], None, env)
            extra = [imported(cmd, stdin, e) - floor for _, cmd, stdin, e in cmds[1:]]
        finally:
            os.chdir(ROOT)
    print(f"\n{n} lessons, {args.runs} interleaved runs each, peak RSS of {args.peaks}")
    (p50, p95, cpu, _), *_ = figures
    for (label, *_), (m, p, c, rss) in zip(cmds, figures, strict=True):
        print(
            f"  {label:24s} p50 {m:6.1f} ms  p95 {p:6.1f} ms  cpu {c:6.1f} ms  "
            f"peak {rss:5.1f} MiB  ratio p50 {m / p50:4.2f}  p95 {p / p95:4.2f}  "
            f"cpu {c / cpu:4.2f}"
        )
    for (label, *_), mods in zip(cmds[1:], extra, strict=True):
        ours = sorted(m for m in mods if m.startswith("agentmem"))
        others = sorted(m for m in mods if "." not in m and not m.startswith("agentmem"))
        print(
            f"  {label}: {len(mods)} modules beyond python -c pass, {len(ours)} of agentmem; "
            f"others: {', '.join(others)}"
        )
    if base:
        gone = sorted(m for m in extra[1] - extra[0] if "." not in m or m.startswith("agentmem"))
        print(f"  no longer imported (top-level and agentmem): {', '.join(gone)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lessons", default="100,1000,10000", help="library sizes, comma-separated")
    ap.add_argument("--runs", type=int, default=31)
    ap.add_argument("--peaks", type=int, default=5, help="runs under GNU time for the peak RSS")
    ap.add_argument("--base", help="also time the hook of this commit's tree")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["HF_HUB_OFFLINE"] = "1"
    with tempfile.TemporaryDirectory() as d:
        base = export(args.base, Path(d) / "base") if args.base else None
        for n in (int(x) for x in args.lessons.split(",")):
            one_size(n, args, env, base)


if __name__ == "__main__":
    main()
