"""What the bounded JSON reader (:mod:`agentmem.jsonsafe`) costs on the import path.

Every line of the real transcripts under ``--data`` (default: the shared corpus) is
parsed three ways, best of ``--repeat`` runs each: ``json.loads`` alone, the importers'
reader before this change (``json.loads`` refusing NaN, catching ``RecursionError``),
and the importers' reader now (:func:`agentmem.importers._json.loads`, through
:func:`agentmem.jsonsafe.loads`); and :func:`agentmem.jsonsafe.loads` with its default
depth bound (:data:`~agentmem.jsonsafe.MAX_DEPTH`, the walk that the hooks, settings and
team readers pay). Reported: MB/s and the ratio to ``json.loads``.

    python benchmarks/bench_jsonsafe.py [--data /work/shared/data] [--repeat 15]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentmem import jsonsafe
from agentmem.importers._json import loads as import_loads


def _before(text: bytes) -> Any:  # the importers' reader before jsonsafe
    def reject(name: str) -> Any:
        raise ValueError(name)

    try:
        return json.loads(text, parse_constant=reject)
    except RecursionError:
        raise ValueError("deep") from None


def _lines(root: Path) -> list[bytes]:
    out: list[bytes] = []
    for p in sorted(root.rglob("*.jsonl")):
        if "claude" in p.name or "claude" in str(p.parent) or "codex" in p.name:
            out += [x for x in p.read_bytes().splitlines() if x.strip()]
    return out


def _once(fn: Callable[[bytes], Any], lines: list[bytes]) -> float:
    t = time.perf_counter()
    for x in lines:
        fn(x)
    return time.perf_counter() - t


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    p.add_argument("--repeat", type=int, default=15)
    args = p.parse_args()
    lines = _lines(args.data)
    mb = sum(len(x) for x in lines) / 1e6
    ways: list[tuple[str, Callable[[bytes], Any]]] = [
        ("json.loads", json.loads),
        ("importers before (json.loads, NaN refused)", _before),
        ("importers now (jsonsafe, parser's own bound)", import_loads),
        ("jsonsafe.loads, MAX_DEPTH walk", jsonsafe.loads),
    ]
    best = {name: float("inf") for name, _ in ways}
    for _ in range(args.repeat):  # interleaved: a busy machine slows every way alike
        for name, fn in ways:
            best[name] = min(best[name], _once(fn, lines))
    print(f"{len(lines)} lines, {mb:.1f} MB, best of {args.repeat}")
    for name, _ in ways:
        t = best[name]
        print(f"  {name:48s} {mb / t:7.1f} MB/s  x{t / best['json.loads']:.3f} of json.loads")


if __name__ == "__main__":
    main()
