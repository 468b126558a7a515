"""A learning session's cost: time in the model vs the rest, and model calls vs the N_g(G+1) bound.

Imports the tau-bench trajectories (or the bundled sample with --sample) into a
fresh library and runs one session with the embedded default model (or --model).
Target: the rest (everything but model calls) <= 10% of the wall time.

Then the worker's overhead: the prompts the session sent are replayed, in the same
run, through the model in its worker process (what agentmem uses) and through the
same model loaded in this process, alternating which goes first, best of --rounds.
Target: the worker within 5% of in-process model time.

    python benchmarks/bench_learning.py [--model PATH|URL] [--groups N] [--sample]
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentmem import Memory
from agentmem.ingest import parse_jsonl, parse_openai
from agentmem.learning.session import LearnOptions
from agentmem.llm import Completion, LlamaCppModel, TextModel

TAU = Path(__file__).resolve().parents[2] / "shared" / "data" / "tau-bench" / "gpt-4o-airline.json"


class _Recorder:
    """A model that remembers every request it passes on."""

    def __init__(self, model: TextModel) -> None:
        self.model = model
        self.model_id = model.model_id
        self.requests: list[tuple[str, int, tuple[str, ...]]] = []

    @property
    def unavailable(self) -> object:
        return getattr(self.model, "unavailable", None)

    def complete(
        self, prompt: str, *, max_tokens: int = 128, stop: Sequence[str] = (), **kw: Any
    ) -> Completion:
        self.requests.append((prompt, max_tokens, tuple(stop)))
        return self.model.complete(prompt, max_tokens=max_tokens, stop=stop, **kw)


def worker_overhead(
    model: LlamaCppModel, requests: Sequence[tuple[str, int, tuple[str, ...]]], rounds: int
) -> None:
    """Replay ``requests`` through the worker and in this process; print both and the ratio."""
    inproc = LlamaCppModel(
        model.path,
        model_id=model.model_id,
        n_ctx=model.n_ctx,
        n_threads=model.n_threads,
        n_batch=model.n_batch,
        seed=model.seed,
        chat=model.chat,
        system=model.system,
        isolated=False,
    )
    inproc.complete("Say ok.", max_tokens=2)  # load outside the measurement
    best = {"worker": float("inf"), "in-process": float("inf")}
    same = 0
    for r in range(rounds):
        totals = {"worker": 0.0, "in-process": 0.0}
        for i, (prompt, max_tokens, stop) in enumerate(requests):
            order = [("worker", model), ("in-process", inproc)]
            if (i + r) % 2:
                order.reverse()
            texts = []
            for name, m in order:
                t0 = time.perf_counter()
                out = m.complete(prompt, max_tokens=max_tokens, stop=stop)
                totals[name] += time.perf_counter() - t0
                texts.append(out.text)
            same += texts[0] == texts[1]
        for k in best:
            best[k] = min(best[k], totals[k])
    ratio = best["worker"] / best["in-process"]
    print(
        f"worker overhead        {len(requests)} prompts, best of {rounds}: worker "
        f"{best['worker']:.2f} s, in-process {best['in-process']:.2f} s, ratio {ratio:.3f} "
        f"({(ratio - 1):+.1%}; target <= +5%); identical answers {same}/{rounds * len(requests)}"
    )


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
    ap.add_argument("--rounds", type=int, default=2, help="Rounds of the worker replay.")
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
        recorder = _Recorder(mem.model)
        mem._model = recorder
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
        print(f"model: {recorder.model_id} (load {load:.1f} s, not counted)")
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
        if isinstance(recorder.model, LlamaCppModel) and recorder.requests:
            worker_overhead(recorder.model, recorder.requests, args.rounds)
        mem.close()


if __name__ == "__main__":
    main()
