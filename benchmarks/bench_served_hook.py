"""What the served log costs the prompt hook: a cold Claude Code ``UserPromptSubmit`` hook
(``agentmem hooks run claude-code``) at 10k lessons, with this tree's code (which appends
one line to ``<library>.served.jsonl`` per answer) and with the tree of an earlier commit
(``--base``, default: the commit before the served log), side by side.

Both run against the same library, interleaved (so a busy machine slows them alike), on a
prompt that gets lessons (so the line is written every time); the figures are the median
and 95th percentile wall time and the peak memory (GNU time), and their ratios. No
timed assertion: the ratio is the result (issue 25: within 5%).

    python benchmarks/bench_served_hook.py [--lessons 10000] [--runs 21] [--base REV]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_context import build, cold, lessons  # noqa: E402

#: The commit before the served log: the hook as it was.
BASE = "5911259"


def export(rev: str, into: Path) -> Path:
    """The package of commit ``rev``, unpacked into ``into``."""
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "agentmem"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lessons", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--base", default=BASE)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as d:
        base = export(args.base, Path(d) / "base")
        path = Path(d) / "lib.db"
        build(path, args.lessons)
        task = lessons(args.lessons)[7][0].split(" (case")[0]  # a prompt that gets lessons
        payload = json.dumps(
            {
                "session_id": "bench",
                "transcript_path": str(Path(d) / "none.jsonl"),
                "cwd": d,
                "hook_event_name": "UserPromptSubmit",
                "prompt": task,
            }
        ).encode()
        hook = [sys.executable, "-m", "agentmem", "hooks", "run", "claude-code", "--db", str(path)]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["HF_HUB_OFFLINE"] = "1"
        out = subprocess.run(
            hook, input=payload, capture_output=True, env={**env, "PYTHONPATH": str(ROOT)}
        )
        assert b"additionalContext" in out.stdout, out  # lessons are served: a line is written
        # cold() takes one environment: each command sets its own PYTHONPATH with env(1),
        # and runs in the temporary folder (``-m`` puts the current folder on the path first)
        os.chdir(d)
        before, after = cold(
            [
                (["env", f"PYTHONPATH={base}", *hook], payload),
                (["env", f"PYTHONPATH={ROOT}", *hook], payload),
            ],
            args.runs,
            env,
        )
        log = Path(str(path) + ".served.jsonl")
        lines = log.read_text().count("\n") if log.exists() else 0
        os.chdir(ROOT)
        want = args.runs + 2  # the check above, cold()'s untimed run, the timed runs
        print(f"{args.lessons} lessons, {args.runs} runs each, {lines} served-log lines written")
        assert lines == want, f"{lines} lines, not {want}: the base tree wrote some"
        for label, c in (
            ("without (base " + args.base + ")", before),
            ("with the served log", after),
        ):
            print(f"  {label:32s} p50 {c[0]:6.1f} ms  p95 {c[1]:6.1f} ms  peak {c[2]:6.1f} MB")
        from agentmem.retrieval.ranking import Evidence
        from agentmem.serving import Lesson, Query, finish

        found = [Lesson(i, "t", "private", 1.0, "r", Evidence(i), {}) for i in (1, 2, 3)]
        n = 2000
        t0 = time.perf_counter()
        for i in range(n):
            finish(path, Query(f"{task} {i}", route="bench"), found, [], {}, where=None)
        each = (time.perf_counter() - t0) / n * 1e6
        print(f"  serving.finish in process (hash, split, one O_APPEND write): {each:.0f} us")
        print(
            f"  ratio with/without: p50 {after[0] / before[0]:.3f}, "
            f"p95 {after[1] / before[1]:.3f}, "
            f"peak memory {after[2] / before[2]:.3f}"
        )


if __name__ == "__main__":
    main()
