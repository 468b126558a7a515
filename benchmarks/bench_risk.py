"""Risky capabilities in the shell commands of real transcripts (issue 30).

Every ``Bash`` command (Claude Code) and ``shell`` / ``shell_command`` / ``exec_command``
command (Codex, ``bash -lc '...'`` unwrapped) of the transcripts given goes through
:func:`agentmem.agents.risk.capabilities`. Reported: how many distinct commands, the
share that uses a risky capability (a lesson naming one of them would be held for
review), the count per capability, the time per command (first parse, no cache), and
every flagged command, for a person to check that each one does what its capability
says.

    python benchmarks/bench_risk.py [FILE_OR_DIR ...] [--json]

Default input: ``transcripts/`` and ``corpus/`` under ``../shared/data`` (or
``$AGENTMEM_REAL_DATA``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from agentmem.agents import risk, shell

try:
    from benchmarks.bench_shell_parsers import commands_of
except ImportError:  # run as a script from benchmarks/
    from bench_shell_parsers import commands_of  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent


def measure(paths: list[Path]) -> dict[str, Any]:
    """The figures above for the commands of ``paths``."""
    unique = list(dict.fromkeys(commands_of(paths)))
    shell.parse.cache_clear()
    per: Counter[str] = Counter()
    flagged: list[tuple[list[str], str]] = []
    start = time.perf_counter()
    for c in unique:
        caps = sorted(x.value for x in risk.capabilities(c))
        per.update(caps)
        if caps:
            flagged.append((caps, c))
    seconds = time.perf_counter() - start
    return {
        "commands": len(unique),
        "flagged": len(flagged),
        "share": round(len(flagged) / max(1, len(unique)), 4),
        "per_capability": dict(per.most_common()),
        "ms_per_command": round(seconds / max(1, len(unique)) * 1000, 3),
        "examples": [{"capabilities": caps, "command": c[:200]} for caps, c in flagged],
    }


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    args = [a for a in argv if a != "--json"]
    data = Path(os.environ.get("AGENTMEM_REAL_DATA") or ROOT.parent / "shared" / "data")
    paths = [Path(a) for a in args] or [data / "transcripts", data / "corpus"]
    paths = [p for p in paths if p.exists()]
    if not paths:
        print(f"no transcripts under {data}: pass files or folders", file=sys.stderr)
        return 2
    out = measure(paths)
    if as_json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    print(
        f"commands: {out['commands']} distinct; risky: {out['flagged']} "
        f"({out['share']:.3f}); {out['ms_per_command']} ms a command"
    )
    print(f"per capability: {out['per_capability']}")
    for e in out["examples"]:
        one_line = " ".join(e["command"].split())[:150]
        print(f"  {','.join(e['capabilities']):32s} {one_line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
