"""Does ``agentmem effect`` find the effect a lesson really has? Replayed sessions with a
simulated holdout, converging on a known answer.

The real transcripts in ``../shared/data/transcripts/`` hold no served records (they were
written before the served log), so the sessions here are synthetic, with the answer known:

1. two lessons are learned from data, as ``agentmem learn --no-model`` learns them
   ("cd before cat", "login before upload"; four runs each, two good, two bad);
2. prompts arrive in time order, each for a task of one of the two kinds; the prompt gets
   its lessons through :meth:`agentmem.Memory.context` (the real path: the holdout and the
   served log), then a simulated agent runs the task and the run is recorded:

   * shown the first lesson, the agent follows it with probability ``--follow`` (default
     0.8); not following it (or not shown it), it makes the mistake with probability
     ``--mistake`` (default 0.7), else its call works anyway; so the true mistake rates
     are ``mistake`` held out and ``(1 - follow) mistake`` served, and the true effect
     (held-out rate minus served rate) ``follow x mistake`` (0.56);
   * the second lesson the agent ignores, and makes its mistake every time: the true
     effect is 0 (had some of those runs worked without it, the groups' evidence would
     have retired it first: "nobody followed it and a run succeeded without it");
3. ``agentmem learn`` runs every ``--every`` prompts, as a user's hooks would, judging the
   runs served since; at checkpoints the benchmark prints ``agentmem effect``'s estimate,
   its 95% interval and the truth.

The ignored lesson is retired by use once its situation arose 5 times after it was served
with its mistake in half or more; from then on it is no longer served (nor held out).

    python benchmarks/bench_effect.py [--prompts 800] [--holdout 0.2] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentmem import Memory, Step  # noqa: E402

#: The two kinds of task: (helper step, the tool the lesson is about, a working call, a
#: failing call), and the words of their tasks.
KINDS: dict[str, tuple[Step, str, Any, Any]] = {
    "read": (
        Step("cd", {"folder": "docs"}, '{"current_working_directory": "docs"}', True),
        "cat",
        lambda n: Step("cat", {"file_name": n}, '{"file_content": "hello"}', True),
        lambda n: Step("cat", {"file_name": n}, f'{{"error": "cat: {n}: No such file"}}', False),
    ),
    "upload": (
        Step("login", {"user": "me"}, '{"token": "ok"}', True),
        "upload",
        lambda n: Step("upload", {"file": n}, '{"uploaded": true}', True),
        lambda n: Step("upload", {"file": n}, '{"error": "401 unauthorized"}', False),
    ),
}
TASKS = {"read": "Show me what {n} in docs says", "upload": "Upload {n} to the share"}


def teach(mem: Memory) -> dict[str, int]:
    """Learn each kind's lesson from two good and two bad runs: kind -> experience id."""
    for kind, (helper, _tool, ok, bad) in KINDS.items():
        task = TASKS[kind].format(n="a.txt")
        for good in (True, False, True, False):
            steps = [helper, ok("a.txt")] if good else [bad("a.txt")]
            mem.record(task, steps, group=f"teach-{kind}", accepted=good)
    mem.learn(use_model=False)
    out = {}
    for kind, (helper, tool, _ok, _bad) in KINDS.items():
        ids = [e.id for e in mem.experiences() if helper.tool in e.text and tool in e.text]
        assert len(ids) == 1, [e.text for e in mem.experiences()]
        out[kind] = int(ids[0] or 0)
    return out


def act(
    rng: random.Random, kind: str, shown: bool, follow: float, mistake: float, n: str
) -> list[Step]:
    """The simulated agent's run (see the module doc)."""
    helper, _tool, ok, bad = KINDS[kind]
    if shown and rng.random() < follow:
        return [helper, ok(n)]
    return [bad(n)] if rng.random() < mistake else [ok(n)]


def estimate(mem: Memory, eid: int) -> dict[str, Any] | None:
    rep = mem.effect()
    return next((x for x in rep["lessons"] if x["id"] == eid), None)


def show(label: str, row: dict[str, Any] | None, truth: float) -> str:
    if row is None:
        return f"  {label:9s} no judged situation yet"
    s, h = row["served"], row["held_out"]
    p = row.get("prevented")
    est = f"{p['rate']:+.2f} [{p['ci'][0]:+.2f}, {p['ci'][1]:+.2f}]" if p else "-"
    covered = "" if not p else ("  covers truth" if p["ci"][0] <= truth <= p["ci"][1] else "  MISS")
    return (
        f"  {label:9s} served {s['mistakes']:3d}/{s['situations']:<3d} held out "
        f"{h['mistakes']:3d}/{h['situations']:<3d} prevented {est} (truth {truth:+.2f}){covered}"
        f"  [{row['status']}]"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompts", type=int, default=800)
    ap.add_argument("--holdout", type=float, default=0.2)
    ap.add_argument("--follow", type=float, default=0.8)
    ap.add_argument("--mistake", type=float, default=0.7)
    ap.add_argument("--every", type=int, default=50, help="prompts between learning sessions")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    follows = {"read": args.follow, "upload": 0.0}
    mistakes = {"read": args.mistake, "upload": 1.0}
    truth = {k: follows[k] * mistakes[k] for k in KINDS}
    checkpoints = {c for c in (50, 100, 200, 400, 800, 1600, 3200) if c <= args.prompts}
    checkpoints.add(args.prompts)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        mem = Memory.open(Path(d) / "lib.db", embedder="hash")
        lessons = teach(mem)
        mem.set_holdout(args.holdout)
        print(
            f"holdout {args.holdout:.0%}, follow {args.follow}, mistake {args.mistake} (the "
            f"second lesson: 0 and 1), learn every {args.every} prompts, seed {args.seed}"
        )
        for i in range(1, args.prompts + 1):
            kind = rng.choice(sorted(KINDS))
            n = f"f{i}.txt"
            task = TASKS[kind].format(n=n)
            block = mem.context(task, tools=[KINDS[kind][1]])
            helper = KINDS[kind][0].tool
            shown = any(helper in line for line in block.splitlines()[1:])
            steps = act(rng, kind, shown, follows[kind], mistakes[kind], n)
            mem.record(task, steps, accepted=steps[-1].success)
            if i % args.every == 0 or i == args.prompts:
                mem.learn(use_model=False)
            if i in checkpoints:
                print(f"after {i} prompts ({time.perf_counter() - t0:.0f} s)")
                for kind, eid in lessons.items():
                    print(show(kind, estimate(mem, eid), truth[kind]))
        for kind, eid in lessons.items():
            for o in mem.journal():
                if o["kind"] == "DELETE" and eid in o["target_ids"] and o["status"] == "applied":
                    print(f"  {kind} lesson retired in session {o['session_id']}: {o['reason']}")
        rep = mem.effect()
        print(f"overall: {rep['overall']['verdict']}")
        mem.close()


if __name__ == "__main__":
    main()
