"""Import throughput of real Claude Code sessions, as a ratio to the JSON parse of their lines.

Takes every Claude Code session file under the given folders (by default the project's
real sessions, ``/work/shared/data/corpus`` and ``/work/shared/data/transcripts``; a
file counts when the claude-code format recognises its first records; its sub-agents'
files, which the import reads with it, count too), then, in the same run:

* ``json.loads`` of every line of those files (the floor for a reader of every line);
* ``Memory.import_transcripts("claude-code", files, final=True)`` into a fresh library
  that is open already, with the default redaction, with redaction off
  (``Redactor(enabled=False)``), and with the redaction's scan done by the prefilter
  regex (what runs where ``ahocorasick_rs`` is not installed);
* creating a library and closing it (its migrations: what a first import pays once,
  apart from the import).

Each is the fastest of ``--rounds`` rounds of this process's CPU time (so a busy
machine's other work stays out), after one warm-up import (modules loaded, rules
compiled; the process's caches of shell commands read and secret-key names stay warm,
about 8% of an import that a one-off ``agentmem import`` pays). Prints MB/s of
transcript bytes for each and the ratio of its time to the JSON parse's. Issue 30's
target: at least 50 MB/s with redaction, 3.6 times the parse.

    python benchmarks/bench_import.py [FOLDER ...] [--rounds 3] [--times 1] [--format codex]

``--times N`` imports each file N times under N session names (its lines rewritten
with a new ``sessionId``), for a bigger sample of the same sessions. ``--format codex``
imports Codex rollouts instead (``rollout-*.jsonl``; ``--times`` rewrites only Claude
Code's ``sessionId``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from agentmem import Memory
from agentmem.importers.formats import by_name, sniff
from agentmem.redact import Redactor, engine

DEFAULT_FOLDERS = ("/work/shared/data/corpus", "/work/shared/data/transcripts")
_NAMES = {"claude-code": "Claude Code", "codex": "Codex"}


def claude_code_files(folders: list[Path], fmt: str = "claude-code") -> list[Path]:
    """The Claude Code session files (not sub-agents': their session imports them), or
    the session files of another format (``fmt``: ``codex``)."""
    form = by_name(fmt)
    out = []
    for folder in folders:
        for path in sorted(folder.rglob("*.jsonl")):
            if "subagents" in path.parts:
                continue
            objects = sniff(path)
            if objects and form.detect(objects):
                out.append(path)
    return out


def read_files(files: list[Path], fmt: str = "claude-code") -> list[Path]:
    """The files an import of ``files`` reads: each session's and its sub-agents'."""
    form = by_name(fmt)
    return [f for p in files for bundle in form.discover(p) for f in bundle.files]


def copies(files: list[Path], times: int, into: Path) -> list[Path]:
    """Each file ``times`` times under new session ids (the lines otherwise the same)."""
    if times == 1:
        return files
    out = []
    for k in range(times):
        for n, path in enumerate(files):
            text = path.read_text(encoding="utf-8", errors="replace")
            target = into / f"copy{k}" / f"{n}-{path.name}"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text.replace('"sessionId":"', f'"sessionId":"c{k}-'))
            out.append(target)
    return out


def _best(fn: Callable[[], object], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()  # CPU time: a busy machine's other work stays out
        fn()
        best = min(best, time.process_time() - t0)
    return best


def parse_all(files: list[Path]) -> int:
    n = 0
    for path in files:
        for line in path.read_bytes().splitlines():
            if line.strip():
                json.loads(line)
                n += 1
    return n


def import_all(files: list[Path], redactor: Redactor | None, fmt: str = "claude-code") -> int:
    with (
        tempfile.TemporaryDirectory() as d,
        Memory.open(Path(d) / "i.db", redactor=redactor) as mem,
    ):
        report = mem.import_transcripts(fmt, files, final=True, force=True)
        return len(report.ids)


def _best_import(
    files: list[Path], redactor: Redactor | None, rounds: int, fmt: str = "claude-code"
) -> float:
    """The fastest of ``rounds`` imports into a fresh library that is open already: the
    import alone (``agentmem import`` into a library that exists), not the library's
    creation, timed on its own (:func:`_best_open`)."""
    best = float("inf")
    for _ in range(rounds):
        with (
            tempfile.TemporaryDirectory() as d,
            Memory.open(Path(d) / "i.db", redactor=redactor) as mem,
        ):
            t0 = time.process_time()
            mem.import_transcripts(fmt, files, final=True, force=True)
            best = min(best, time.process_time() - t0)
    return best


def _best_open(rounds: int) -> float:
    """Creating a library (its migrations) and closing it, which a first import pays once."""

    def once() -> None:
        with tempfile.TemporaryDirectory() as d:
            Memory.open(Path(d) / "i.db").close()

    return _best(once, rounds)


@contextlib.contextmanager
def _regex_scan() -> Iterator[None]:
    """Redaction as it runs without ``ahocorasick_rs``: the prefilter regex (the only
    scan of an agentmem older than the automaton, run with ``PYTHONPATH``)."""
    saved = getattr(engine, "_automaton", None)
    engine._automaton = lambda: None  # type: ignore[assignment]
    try:
        yield
    finally:
        engine._automaton = saved  # type: ignore[assignment]


def _automaton_name() -> str:
    automaton = getattr(engine, "_automaton", None)
    if automaton is None:
        return "none in this agentmem"
    return "ahocorasick_rs" if automaton() is not None else "not installed"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="*", default=list(DEFAULT_FOLDERS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--times", type=int, default=1)
    ap.add_argument(
        "--format", default="claude-code", help="the sessions' format (codex: Codex rollouts)"
    )
    args = ap.parse_args()
    fmt = args.format
    with tempfile.TemporaryDirectory() as tmp:
        found = claude_code_files([Path(f) for f in args.folders], fmt)
        files = copies(found, args.times, Path(tmp))
        read = read_files(files, fmt)
        size = sum(p.stat().st_size for p in read)
        lines = parse_all(read)
        runs = import_all(files, None, fmt)  # warm up: modules, compiled rules
        parse_s = _best(lambda: parse_all(read), args.rounds)
        import_s = _best_import(files, None, args.rounds, fmt)
        plain_s = _best_import(files, Redactor(enabled=False), args.rounds, fmt)
        with _regex_scan():
            regex_s = _best_import(files, None, args.rounds, fmt)
        open_s = _best_open(args.rounds)
    mb = size / 1e6
    automaton = _automaton_name()
    print(
        f"{len(files)} {_NAMES.get(fmt, fmt)} sessions ({len(read)} files with their "
        "sub-agents'), "
        f"{mb:.1f} MB, {lines} lines, {runs} runs imported; "
        f"best of {args.rounds} (CPU time); the automaton: {automaton}"
    )
    print(f"{'':40}{'seconds':>9}{'MB/s':>8}{'x json':>8}")
    for name, secs in (
        ("json.loads of every line", parse_s),
        ("import, redaction off", plain_s),
        ("import (default redaction)", import_s),
        ("import, redaction by the regex", regex_s),
        ("(creating the library, once)", open_s),
    ):
        print(f"{name:40}{secs:>9.3f}{mb / secs:>8.1f}{secs / parse_s:>8.1f}")


if __name__ == "__main__":
    main()
