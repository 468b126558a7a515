"""What the redaction rules change in real agent sessions, line by line, and why.

Reads every ``*.jsonl`` file under the given folders (by default the project's real
sessions, ``/work/shared/data/corpus`` and ``/work/shared/data/transcripts``), takes
every string of every record (a string that holds JSON is decoded and walked too),
splits each into lines, and redacts each distinct line with the rules in this tree.
Prints how many lines changed, how many placeholders each kind put in (the kind says
which rule), and with ``--show`` every change: the file, the kind and the text around
it, so that each one can be checked by eye (a false positive in real data is a bug).

With ``--baseline-rev REV`` it also redacts the same lines with the rules at that git
revision (``agentmem/redact/`` loaded from git into a temporary folder) and lists the
lines whose result differs: what a change of the rules changed in real data.

The sessions are third-party text: this prints short excerpts for a person to read,
and nothing of them is committed.

    python benchmarks/redaction_corpus.py [FOLDER ...] [--show] [--baseline-rev 0958dc0]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import importlib
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FOLDERS = ("/work/shared/data/corpus", "/work/shared/data/transcripts")
_PLACEHOLDER = re.compile(r"\[REDACTED:([a-z0-9_]+)\]")


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, and in any string of it that holds JSON."""
    if isinstance(value, str):
        yield value
        if value.strip()[:1] in ("{", "["):
            with contextlib.suppress(ValueError, RecursionError):
                yield from strings(json.loads(value))
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def lines_of(folders: list[Path]) -> dict[str, str]:
    """Each distinct non-empty line of every string in the folders' sessions -> the file
    (relative to its folder) it was first seen in."""
    seen: dict[str, str] = {}
    for folder in folders:
        for path in sorted(folder.rglob("*.jsonl")):
            name = str(path.relative_to(folder.parent))
            for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue
                for text in strings(record):
                    for line in text.split("\n"):
                        if line.strip():
                            seen.setdefault(line, name)
    return seen


def baseline(rev: str) -> Callable[[str], str] | None:
    """``redact`` of the rules at git revision ``rev``, or None when git cannot give them."""
    try:
        blob = subprocess.run(
            ["git", "archive", rev, "agentmem/redact", "agentmem/errors.py"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    folder = Path(tempfile.mkdtemp(prefix="redact-baseline-"))
    with tempfile.TemporaryFile() as f:
        f.write(blob)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            try:
                tar.extractall(folder / "old", filter="data")
            except TypeError:  # Python before 3.10.12 has no filter (git's own archive)
                tar.extractall(folder / "old")
    pkg = folder / "old" / "agentmem"
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (folder / "old" / "__init__.py").write_text("", encoding="utf-8")
    sys.path.insert(0, str(folder))
    module = importlib.import_module("old.agentmem.redact")
    sys.path.pop(0)
    fn: Callable[[str], str] = module.redact
    return fn


def _around(before: str, after: str, width: int = 60) -> str:
    """The first changed part of a line, with a little of what surrounds it."""
    i = 0
    while i < min(len(before), len(after)) and before[i] == after[i]:
        i += 1
    m = _PLACEHOLDER.search(after, max(0, i - 12))
    j = m.end() if m else i + 20
    return after[max(0, i - width) : j + 20]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="*", default=list(DEFAULT_FOLDERS))
    ap.add_argument("--show", action="store_true", help="print every change for review")
    ap.add_argument("--baseline-rev", help="also compare with the rules at this git revision")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from agentmem.redact import redact

    folders = [Path(f) for f in args.folders if Path(f).is_dir()]
    lines = lines_of(folders)
    total_bytes = sum(len(line.encode()) for line in lines)
    print(f"{len(lines)} distinct lines ({total_bytes / 1e6:.1f} MB) in {len(folders)} folders")
    changed: list[tuple[str, str, str]] = []
    kinds: collections.Counter[str] = collections.Counter()
    for line, name in lines.items():
        out = redact(line)
        if out != line:
            changed.append((line, out, name))
            new = collections.Counter(_PLACEHOLDER.findall(out))
            new.subtract(collections.Counter(_PLACEHOLDER.findall(line)))
            kinds.update({k: n for k, n in new.items() if n > 0})
    print(f"changed by the rules in this tree: {len(changed)} lines")
    for kind, n in kinds.most_common():
        print(f"  {kind:24}{n:>6}")
    if args.show:
        for line, out, name in changed:
            print(f"  [{name}] {_around(line, out)!r}")
    if args.baseline_rev:
        old = baseline(args.baseline_rev)
        if old is None:
            print(f"\n(no rules at {args.baseline_rev})")
            return
        differ = [(line, name) for line, name in lines.items() if old(line) != redact(line)]
        print(f"\nlines redacted differently than at {args.baseline_rev}: {len(differ)}")
        for line, name in differ:
            print(f"  [{name}] before {_around(line, old(line))!r}")
            print(f"  {' ' * len(name)}   now    {_around(line, redact(line))!r}")


if __name__ == "__main__":
    main()
