"""How the cost of two path shapes of :func:`agentmem.learning.shell_fixes.find_shell_fixes`
grows with a run's length: ``prefix`` (a project kept in a subfolder) and ``case`` (a path
written with other letter case).

Builds synthetic long runs of Read and ``cat`` calls, with ``find`` listings among them:

* ``prefix, 200 in 2,200``: 200 failed reads of ``src/mK/f.py``, each followed by a read
  of ``app/src/mK/f.py``, among 1,800 other calls;
* ``prefix, 1,000 pairs``: 1,000 such pairs, 2,000 calls;
* ``case, 200 in 2,200`` and ``case, 1,000 pairs``: the same with ``Docs/mK/f.md`` read
  after ``docs/mK/f.md`` failed.

Each is timed against its baseline: the same run with the failed reads replaced by reads
that work, so no call is a candidate of either shape. The ratio (the run's time over its
baseline's) says what the candidates cost; it stays near a small constant when their cost
is linear in the run's length. The number of corrections found is printed beside it. No
timed assertion: the figures go to ``docs/benchmarks.md``.

    python benchmarks/bench_shell_shapes.py
"""

from __future__ import annotations

import time

from agentmem.agents import learning_view
from agentmem.learning.shell_fixes import _sh, find_shell_fixes
from agentmem.records import Step, Trajectory

CWD = "/w/proj"


def _read(path: str, ok: bool = True) -> Step:
    out = "     1\tline" if ok else "<tool_use_error>File does not exist.</tool_use_error>"
    return Step(tool="Read", params={"file_path": path}, output=out, success=ok)


def _filler(k: int) -> Step:
    """Another call: every tenth a ``find`` listing of 20 paths, else a ``cat`` that works."""
    if k % 10 == 0:
        listing = "\n".join(f"./lib/p{k}/x{n}.py" for n in range(20))
        return _sh("find . -name '*.py'", listing)
    return _sh(f"cat lib/other{k}.py", "x = 1")


def _pair(shape: str, k: int, candidate: bool) -> tuple[Step, Step]:
    """A failed read and the read that found the file (``candidate``), or two reads that
    work (the baseline's)."""
    if shape == "prefix":
        bad, good = f"src/m{k}/f.py", f"app/src/m{k}/f.py"
    else:
        bad, good = f"docs/m{k}/f.md", f"Docs/m{k}/f.md"
    first = _read(f"{CWD}/{bad}", False) if candidate else _read(f"{CWD}/lib/ok{k}.py")
    return first, _sh(f"cat {good}", "x = 1")


def build(shape: str, pairs: int, calls: int, candidate: bool = True) -> Trajectory:
    """A run of ``calls`` calls with ``pairs`` pairs spread evenly through it."""
    gap = (calls - 2 * pairs) // pairs
    steps: list[Step] = []
    for k in range(pairs):
        steps += [_filler(k * 1000 + n) for n in range(gap)]
        steps += _pair(shape, k, candidate)
    steps += [_filler(10**7 + n) for n in range(calls - len(steps))]
    return Trajectory(task="do the job", steps=steps, meta={"cwd": CWD, "project": CWD})


def timed(run: Trajectory) -> tuple[float, int]:
    """Seconds of one call of find_shell_fixes on ``run``, and the corrections it found."""
    view = learning_view(run)
    start = time.perf_counter()
    found = find_shell_fixes(view)
    return time.perf_counter() - start, len(found)


CASES = (
    ("prefix, 200 in 2,200", "prefix", 200, 2200),
    ("prefix, 1,000 pairs", "prefix", 1000, 2000),
    ("case, 200 in 2,200", "case", 200, 2200),
    ("case, 1,000 pairs", "case", 1000, 2000),
)


def main() -> None:
    print(f"{'run':24} {'seconds':>8} {'baseline':>9} {'ratio':>6} {'found':>6}")
    for label, shape, pairs, calls in CASES:
        base, _ = timed(build(shape, pairs, calls, candidate=False))
        took, found = timed(build(shape, pairs, calls))
        print(f"{label:24} {took:8.2f} {base:9.2f} {took / base:6.1f} {found:6}")


if __name__ == "__main__":
    main()
