"""Whether two versions of agentmem import the same sessions into the same library.

Imports the given transcripts (by default the six real ones in
``/work/shared/data/transcripts``: Claude Code and Codex) into a fresh library with this
tree and with the code at ``--baseline-rev`` (``git archive`` of ``agentmem/``, run in a
child process), learns once with no model, and compares every table's rows, ids and
times left out: the trajectories, steps and their redaction, the import bookkeeping, the
lessons and the journal. Prints the tables that differ (nothing else differs) and exits
1 when one does. For a change that must make importing faster and nothing else:

    python benchmarks/compare_import.py [FOLDER ...] --baseline-rev main

Columns left out: ``id``, any ``*_id`` or ``*_at`` column, ``seq``, ``pid``, the
columns that hold another row's id, and the file's ``mtime_ns``; inside every text,
times and durations (``"wall_seconds": ...``, ``"timings": {...}``) are blanked. Tables
left out: FTS5's own and sqlite-vec's virtual tables, the library's settings and
migrations (sqlite-vec's shadow tables are compared: the lessons' vectors). The runs
are recorded an hour back (as ``bench_real_transcripts.py`` does), so their acceptance
windows are closed and learning reads them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FOLDERS = ("/work/shared/data/transcripts",)

#: Run in a child process with the version under test first on the path; prints the rows.
_CHILD = r"""
import json, sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from unittest import mock
from agentmem import Memory

import re
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?")
SECONDS = re.compile(r'("\w*seconds"): [0-9.e+-]+|("timings"): \{[^{}]*\}')

def cell(v):
    # a cell without what differs from run to run: times (inside JSON too), durations
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, str):
        return SECONDS.sub(lambda m: f"{m.group(1) or m.group(2)}: 0", TIME.sub("<time>", v))
    return v

def an_hour_ago():
    return (datetime.now(timezone.utc) - timedelta(hours=1)).isoformat(timespec="microseconds")

db, folders = Path(sys.argv[1]), sys.argv[2:]
with (
    mock.patch("agentmem.storage.trajectories.now_iso", an_hour_ago),
    mock.patch("agentmem.importers.run.now_iso", an_hour_ago),
    Memory.open(db) as mem,
):
    from agentmem.importers.formats import by_name, sniff
    files = sorted(
        p for f in folders for p in Path(f).rglob("*.jsonl") if "subagents" not in p.parts
    )
    reports = {}
    for fmt in ("claude-code", "codex"):
        mine = [p for p in files if by_name(fmt).detect(sniff(p))]
        for p in mine:  # each file on its own: final (its last turn is over) is about one
            rep = mem.import_transcripts(fmt, [p], final=True).as_dict()
            rep.pop("ids")
            reports[f"{fmt} {p}"] = rep
    mem.learn(use_model=False)
    skip = ("sqlite_", "_fts", "vec_", "migrations", "settings", "_sqlite")
    tables = [
        name for (name, sql) in mem.db.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table'"
        ).fetchall()
        if not any(s in name for s in skip) and "VIRTUAL" not in (sql or "").upper()
    ]
    out = {"reports": reports, "tables": {}}
    for name in sorted(tables):
        cur = mem.db.execute(f"SELECT * FROM [{name}]")
        cols = [c[0] for c in cur.description]
        keep = [
            i for i, c in enumerate(cols)
            if c not in ("id", "seq", "pid") and not c.endswith(("_id", "_at", "mtime_ns"))
            and c not in ("trajectory", "experience", "session", "operation")
        ]
        rows = [[cell(row[i]) for i in keep] for row in cur.fetchall()]
        out["tables"][name] = {"columns": [cols[i] for i in keep], "rows": rows}
json.dump(out, sys.stdout, default=str)
"""


def _tree_of(rev: str, into: Path) -> Path:
    """``agentmem/`` at git revision ``rev``, extracted under ``into``."""
    blob = subprocess.run(
        ["git", "archive", rev, "agentmem"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tempfile.TemporaryFile() as f:
        f.write(blob)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            try:
                tar.extractall(into, filter="data")
            except TypeError:  # Python before 3.10.12
                tar.extractall(into)
    return into


def library_rows(tree: Path, folders: list[str], workdir: Path) -> dict[str, Any]:
    """What the agentmem at ``tree`` stores for ``folders``: reports and table rows."""
    path = os.pathsep.join(p for p in (str(tree), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path}
    db = workdir / f"{tree.name}.db"
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(db), *folders],
        env=env,
        cwd=workdir,  # not this tree: python -c puts the working folder first on the path
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"importing with {tree} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def differences(old: dict[str, Any], new: dict[str, Any], *, show: bool = False) -> list[str]:
    """The tables (and import reports) whose rows differ, as multisets, with a count
    (``show``: and the rows)."""
    out = []
    for fmt in sorted(set(old["reports"]) | set(new["reports"])):
        a, b = old["reports"].get(fmt), new["reports"].get(fmt)
        if a != b:
            out.append(f"import report of {fmt}: {a} != {b}")
    for name in sorted(set(old["tables"]) | set(new["tables"])):
        a, b = old["tables"].get(name), new["tables"].get(name)
        if a is None or b is None:
            out.append(f"table {name}: only in {'this tree' if a is None else 'the baseline'}")
            continue
        if a["columns"] != b["columns"]:
            out.append(f"table {name}: columns {a['columns']} != {b['columns']}")
            continue
        ra = Counter(json.dumps(r, sort_keys=True, default=str) for r in a["rows"])
        rb = Counter(json.dumps(r, sort_keys=True, default=str) for r in b["rows"])
        if ra != rb:
            out.append(
                f"table {name}: {sum((ra - rb).values())} row(s) only in the baseline, "
                f"{sum((rb - ra).values())} only in this tree"
            )
            if show:
                cols = a["columns"]
                out += [f"  baseline  {dict(zip(cols, json.loads(r)))}" for r in ra - rb]
                out += [f"  this tree {dict(zip(cols, json.loads(r)))}" for r in rb - ra]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="*", default=list(DEFAULT_FOLDERS))
    ap.add_argument("--baseline-rev", default="main", help="the git revision to compare with")
    ap.add_argument("--show", action="store_true", help="print the rows that differ")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base = _tree_of(args.baseline_rev, work / "baseline")
        old = library_rows(base, args.folders, work)
        new = library_rows(ROOT, args.folders, work)
    counts = {name: len(t["rows"]) for name, t in new["tables"].items() if t["rows"]}
    print(f"tables compared (rows in this tree): {counts}")
    diff = differences(old, new, show=args.show)
    for line in diff:
        print(line)
    print("no difference" if not diff else f"{len(diff)} difference(s)")
    raise SystemExit(1 if diff else 0)


if __name__ == "__main__":
    main()
