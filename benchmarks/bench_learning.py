"""A learning session's cost: time in the model vs the rest, and model calls vs the N_g(G+1) bound.

Imports the tau-bench trajectories (or the bundled sample with --sample) into a
fresh library and runs one session with the embedded default model (or --model).
Target: the rest (everything but model calls) <= 10% of the wall time.

    python benchmarks/bench_learning.py [--model PATH|URL] [--groups N] [--sample]
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
import time
from pathlib import Path

from agentmem import Memory
from agentmem.ingest import parse_jsonl, parse_openai
from agentmem.learning.session import LearnOptions

TAU = Path(__file__).resolve().parents[2] / "shared" / "data" / "tau-bench" / "gpt-4o-airline.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--model", help="A .gguf path, server URL or packaged name (default: packaged)."
    )
    ap.add_argument("--groups", type=int, help="Use at most N groups.")
    ap.add_argument(
        "--sample", action="store_true", help="The bundled sample instead of tau-bench."
    )
    ap.add_argument("--tau-bench", default=str(TAU))
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as d:
        mem = Memory.open(Path(d) / "bench.db", model=args.model)
        if args.sample or not Path(args.tau_bench).exists():
            from agentmem.cli.demo import sample_bytes

            trajs = parse_jsonl(io.BytesIO(sample_bytes())).trajectories
            source = "bundled sample"
        else:
            trajs = parse_openai(Path(args.tau_bench).read_bytes()).trajectories
            source = "tau-bench airline (GPT-4o)"
        mem.record_many(trajs)
        t0 = time.perf_counter()
        mem.model.complete("Say ok.", max_tokens=2)  # load the weights outside the session
        load = time.perf_counter() - t0
        r = mem.learn(
            options=LearnOptions(
                reward=mem.reward_kind, weights=mem.reward_weights, max_groups=args.groups
            )
        )
        applied = [o for o in r.operations if o.status == "applied"]
        origins: dict[str, int] = {}
        for o in applied:
            origins[o.op.origin] = origins.get(o.op.origin, 0) + 1
        print(
            f"{source}: {r.groups_seen} groups, {r.groups_ready} ready, "
            f"{r.groups_degenerate} degenerate, {r.groups_used} used"
        )
        print(
            f"model: {getattr(mem.model, 'model_id', mem.model)} (load {load:.1f} s, not counted)"
        )
        print(
            f"model calls            {r.llm_calls} (bound N_g(G+1) + compressions = "
            f"{r.llm_call_bound}; {r.compressions} compressions, {r.llm_failures} failures)"
        )
        print(f"tokens                 {r.prompt_tokens} prompt, {r.completion_tokens} completion")
        print(f"wall                   {r.wall_seconds:.1f} s")
        print(
            f"in the model           {r.model_seconds:.1f} s "
            f"({r.model_seconds / r.wall_seconds:.1%})"
        )
        print(
            f"rest                   {r.other_seconds:.1f} s "
            f"({r.other_seconds / r.wall_seconds:.1%}; "
            "target <= 10%)"
        )
        print(f"operations applied     {len(applied)} {origins}, rejected {len(r.rejected)}")
        exps = mem.experiences()
        longest = max((len(e.text.split()) for e in exps), default=0)
        print(f"library                {len(exps)} experiences, longest {longest} words")
        mem.close()


if __name__ == "__main__":
    main()
