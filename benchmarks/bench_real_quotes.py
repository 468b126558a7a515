"""What lessons would quote of the real corpus's failing outputs, for a before/after diff.

Every real transcript under ``--data`` (``transcripts/`` and ``corpus/``) is imported
into a scratch library; for each failed step, the diagnostic a lesson quotes
(:func:`agentmem.agents.outcomes.diagnostic`) and its quote
(:func:`agentmem.learning.findings.quote_error`, budget 8) are written to ``OUT`` as
JSON. Run it at two revisions (``PYTHONPATH`` on each tree) and compare:

    PYTHONPATH=/path/to/old python benchmarks/bench_real_quotes.py /tmp/before.json
    PYTHONPATH=. python benchmarks/bench_real_quotes.py /tmp/after.json --diff /tmp/before.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from agentmem import Memory
from agentmem.agents.outcomes import diagnostic
from agentmem.learning.findings import quote_error


def quotes(data: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as d, Memory.open(Path(d) / "x.db", embedder="hash") as mem:
        for root in (data / "transcripts", data / "corpus"):
            for p in sorted(root.rglob("*.jsonl")):
                if "subagents" in p.parts:
                    continue
                for fmt in ("claude-code", "codex"):
                    try:
                        mem.import_transcripts(fmt, [p])
                        break
                    except Exception:
                        continue
        for t in mem.trajectories():
            for i, s in enumerate(t.steps):
                if s.success is False and s.output:
                    diag = diagnostic(s.output)
                    out[f"{t.task[:40]}|{i}|{diag[:60]}"] = [diag, quote_error(diag, 8)]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    p.add_argument("--diff", type=Path, help="an earlier OUT to compare with")
    args = p.parse_args()
    now = quotes(args.data)
    args.out.write_text(json.dumps(now, ensure_ascii=False, indent=0), encoding="utf-8")
    print(f"{len(now)} failed steps; {sum(1 for v in now.values() if v[1])} quoted")
    if args.diff:
        old = json.loads(args.diff.read_text(encoding="utf-8"))
        changed = [k for k in now if k in old and old[k][1] != now[k][1]]
        print(f"{len(changed)} of {len(set(now) & set(old))} quotes changed")
        for k in changed:
            print(f"- {now[k][0][:120]}\n    before: {old[k][1]}\n    after:  {now[k][1]}")


if __name__ == "__main__":
    main()
