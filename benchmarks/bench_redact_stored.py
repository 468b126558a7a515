"""What migration m018_redact_stored costs on the first open of an older library.

Builds a library of ``--runs`` runs of 8 steps each, whose tasks, tools, parameters and
outputs are drawn from the project's real Claude Code sessions (imported once into a
scratch library), then times :func:`agentmem.scrub.redact_stored` on it, in one write
transaction as the migration runs it (the second round: the rules compiled; CPU time of
this process, so a busy machine's other work stays out), and, for
comparison, the same redaction of every step's output and parameters, which the
migration leaves out (see ``agentmem/scrub.py``).

    python benchmarks/bench_redact_stored.py [--runs 3000]

On the development machine, 3,000 runs, 24,000 steps (47 MB): ``redact_stored`` 0.48 s of
CPU; redacting every output and parameter as well (34 MB) would add 3.0 s (11 MB/s).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from agentmem import Memory, Step
from agentmem.db import connect, write
from agentmem.redact import DEFAULT_REDACTOR
from agentmem.scrub import redact_stored

TRANSCRIPTS = Path("/work/shared/data/transcripts")


def _real_steps(tmp: Path) -> tuple[list[str], list[tuple[str, str, str, int]]]:
    db = tmp / "real.db"
    files = sorted(TRANSCRIPTS.glob("claude-code-*.jsonl"))
    with Memory.open(db, embedder="hash") as mem:
        mem.import_transcripts("claude-code", [str(f) for f in files], final=True)
        tasks = [str(r[0]) for r in mem.db.execute("SELECT task FROM trajectories")]
        steps = [
            tuple(r) for r in mem.db.execute("SELECT tool, params, output, success FROM steps")
        ]
    if not steps:
        raise SystemExit(f"no Claude Code session under {TRANSCRIPTS}")
    return tasks, steps  # type: ignore[return-value]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3000)
    args = ap.parse_args()
    rnd = random.Random(1)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        tasks, steps = _real_steps(tmp)
        db = tmp / "lib.db"
        with Memory.open(db, embedder="hash") as mem:
            for i in range(args.runs):
                picked = [rnd.choice(steps) for _ in range(8)]
                mem.record(
                    f"{rnd.choice(tasks)} #{i % 300}",
                    [Step(t, json.loads(p), o, bool(s)) for t, p, o, s in picked],
                )
        conn = connect(db)
        n_steps = conn.execute("SELECT count(*) FROM steps").fetchone()[0]
        size = db.stat().st_size
        for _ in range(2):
            t0 = time.process_time()
            with write(conn):
                report = redact_stored(conn)
            took = time.process_time() - t0
        rows = conn.execute("SELECT params, output FROM steps").fetchall()
        text = sum(len(p) + len(o) for p, o in rows)
        t0 = time.process_time()
        for p, o in rows:
            DEFAULT_REDACTOR.value(json.loads(p))
            DEFAULT_REDACTOR.text(o)
        bulk = time.process_time() - t0
        conn.close()
    print(
        f"{args.runs} runs, {n_steps} steps, {size / 1e6:.1f} MB: redact_stored {took:.2f} s "
        f"(changed {sum(report.changed.values())} rows); outputs and parameters "
        f"({text / 1e6:.1f} MB) would add {bulk:.1f} s ({text / 1e6 / bulk:.1f} MB/s)"
    )


if __name__ == "__main__":
    main()
