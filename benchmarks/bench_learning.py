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
from agentmem.models import Completion, LlamaCppModel, TextModel

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
    worker = model._worker()
    n = len(requests)
    # Per prompt, the fastest of the rounds for each way: CPU contention only ever adds time.
    wall = {"worker": [float("inf")] * n, "in-process": [float("inf")] * n}
    inside = [float("inf")] * n  # the worker's own time for the generation
    same = 0
    for r in range(rounds):
        for i, (prompt, max_tokens, stop) in enumerate(requests):
            texts = {}
            for name in ("worker", "in-process") if (i + r) % 2 == 0 else ("in-process", "worker"):
                t0 = time.perf_counter()
                if name == "worker":
                    answer = worker.call(
                        "complete",
                        {"prompt": prompt, "max_tokens": max_tokens, "stop": list(stop)},
                    )
                    text, child = str(answer["text"]), float(answer["seconds"])
                else:
                    text = inproc.complete(prompt, max_tokens=max_tokens, stop=stop).text
                took = time.perf_counter() - t0
                if name == "worker" and took < wall["worker"][i]:
                    inside[i] = child
                wall[name][i] = min(wall[name][i], took)
                texts[name] = text
            same += texts["worker"] == texts["in-process"]
    w, p = sum(wall["worker"]), sum(wall["in-process"])
    ipc = sum(a - b for a, b in zip(wall["worker"], inside))
    print(
        f"worker overhead        {n} prompts, fastest of {rounds} rounds each: worker {w:.2f} s, "
        f"in-process {p:.2f} s, ratio {w / p:.3f} ({w / p - 1:+.1%}; target <= +5%); "
        f"pipe and JSON {ipc * 1000:.1f} ms in all ({ipc / sum(inside):.2%} of the worker's "
        f"generation time); identical answers {same}/{rounds * n}"
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
        mem.use_model(recorder)
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
