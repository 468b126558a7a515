"""Redaction both ways: recall on secrets in context, false positives on near-misses, and cost.

The sets are ``tests/data/redaction/secrets.jsonl`` (each record: a text and the
exact secret substrings that must disappear) and ``near_misses.jsonl`` (texts from
real transcripts, real code and synthetic look-alikes that must come out byte for
byte). Every text is recorded through ``Memory.record`` into a fresh library, as
the task, as a step's output and inside the step's parameters, and queued for a
team the way ``team/outbox.py`` does; a secret counts as caught only when it is gone
from every stored copy, and a near-miss counts as a false positive when any stored
copy differs from the text.

Compared in the same run, through the same three places (text, output, parameters):

* ``today``: the rules before this change (``agentmem/redact.py`` at ``--baseline-rev``,
  loaded from git; skipped when git or the revision is missing);
* ``agentmem``: the rules in this tree (the recording paths themselves);
* ``detect-secrets``: Yelp's detect-secrets 1.5.0 with all its plugins and default
  filters, line by line (``scan_line``), each found value replaced; skipped when it
  is not installed;
* ``agentmem + detect-secrets``: detect-secrets run on what agentmem leaves.

Then cost: recording one 4 MB output whose secrets straddle nothing (the output cap
first, redaction of what is kept) against redacting the whole output first, measured
in the same run; and adversarial inputs at 256 KB and 1 MB, whose time ratio is about
4 when redaction is linear (quadratic would be about 16).

    python benchmarks/bench_redaction.py [--baseline-rev 5ba5816] [--misses]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agentmem import Memory, Step
from agentmem.redact import DEFAULT_REDACTOR

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "redaction"
ROOT = Path(__file__).resolve().parent.parent

TextFn = Callable[[str], str]


def load(name: str) -> list[dict[str, Any]]:
    with (DATA / name).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():  # the keys are ours ("command")
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


# --------------------------------------------------------------------------- the redactors


def recorded_copies(texts: list[str]) -> list[list[str]]:
    """Every stored copy of each text, recorded through agentmem's real paths."""
    from agentmem.team.outbox import _redact_json, _redact_text

    out: list[list[str]] = []
    with tempfile.TemporaryDirectory() as d, Memory.open(Path(d) / "r.db") as mem:
        ids = mem.record_many(
            [_trajectory(t) for t in texts]  # one run per text
        )
        for tid, text in zip(ids, texts, strict=True):
            row = mem.db.execute("SELECT task FROM trajectories WHERE id = ?", (tid,)).fetchone()
            step = mem.db.execute(
                "SELECT params, output FROM steps WHERE trajectory_id = ?", (tid,)
            ).fetchone()
            params = json.loads(step[0])
            shared = json.loads(_redact_json(json.dumps({"command": text})) or "{}")
            out.append(
                [row[0], step[1], *_strings(params), _redact_text(text) or "", *_strings(shared)]
            )
    return out


def _trajectory(text: str) -> Any:
    from agentmem import Trajectory

    return Trajectory(task=text, steps=[Step("bash", {"command": text}, text, True)])


def function_copies(text_fn: TextFn, texts: list[str]) -> list[list[str]]:
    """The same three places through a text function (parameters: every string in them)."""
    return [[text_fn(t), text_fn(t), text_fn(t)] for t in texts]


def baseline_redactor(rev: str) -> TextFn | None:
    """``redact`` of agentmem/redact.py at ``rev``, or None when git cannot show it."""
    try:
        source = subprocess.run(
            ["git", "show", f"{rev}:agentmem/redact.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType("agentmem._redact_baseline")
    module.__package__ = "agentmem"
    sys.modules[module.__name__] = module
    exec(compile(source, f"{rev}:agentmem/redact.py", "exec"), module.__dict__)
    fn: TextFn = module.redact
    return fn


def detect_secrets_redactor() -> TextFn | None:
    """detect-secrets' plugins as a redactor, as its ``scan`` runs them on a file (its
    default filters included): each reported value goes from its line; for a plugin of
    regular expressions, the whole match that holds it (it reports ``ghp`` of a GitHub
    token, the first group). None when it is not installed."""
    if importlib.util.find_spec("detect_secrets") is None:
        return None
    from detect_secrets.core.scan import scan_file
    from detect_secrets.settings import default_settings, get_plugins

    def redact(text: str) -> str:
        with tempfile.TemporaryDirectory() as d, default_settings():
            path = Path(d) / "snippet"
            path.write_text(text, encoding="utf-8")
            found = list(scan_file(str(path)))
            plugins = {p.secret_type: p for p in get_plugins()}
        lines = text.split("\n")
        for secret in found:
            k = secret.line_number - 1
            value = secret.secret_value or ""
            regexes = getattr(plugins.get(secret.type), "denylist", ())
            spans = [
                m.group(0) for rx in regexes for m in rx.finditer(lines[k]) if value in m.group(0)
            ]
            for v in sorted({value, *spans} - {""}, key=len, reverse=True):
                lines[k] = lines[k].replace(v, "[REDACTED:detect_secrets]")
        return "\n".join(lines)

    return redact


# --------------------------------------------------------------------------- measuring


def score(
    secrets: list[dict[str, Any]],
    near: list[dict[str, Any]],
    copies: Callable[[list[str]], list[list[str]]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(secret records missed, near-misses changed)."""
    missed = [
        r
        for r, cs in zip(secrets, copies([r["text"] for r in secrets]), strict=True)
        if any(s in c for s in r["secret"] for c in cs)
    ]
    changed = [
        r
        for r, cs in zip(near, copies([r["text"] for r in near]), strict=True)
        if any(c != r["text"] for c in cs)
    ]
    return missed, changed


def sets(args: argparse.Namespace) -> None:
    secrets, near = load("secrets.jsonl"), load("near_misses.jsonl")
    print(f"{len(secrets)} secrets in context, {len(near)} near-misses")
    contenders: list[tuple[str, Callable[[list[str]], list[list[str]]]]] = []
    old = baseline_redactor(args.baseline_rev)
    if old is not None:
        contenders.append((f"today ({args.baseline_rev})", lambda ts: function_copies(old, ts)))
    contenders.append(("agentmem (recording paths)", recorded_copies))
    ds = detect_secrets_redactor()
    if ds is not None:
        both: TextFn = lambda t: ds(DEFAULT_REDACTOR.text(t))  # noqa: E731
        contenders.append(("detect-secrets 1.5.0", lambda ts: function_copies(ds, ts)))
        contenders.append(("agentmem + detect-secrets", lambda ts: function_copies(both, ts)))
    print(f"{'':30}{'recall':>8}{'missed':>8}{'FP rate':>9}{'changed':>9}")
    for name, copies in contenders:
        missed, changed = score(secrets, near, copies)
        recall = 1 - len(missed) / len(secrets)
        fp = len(changed) / len(near)
        print(f"{name:30}{recall:>8.3f}{len(missed):>8}{fp:>9.3f}{len(changed):>9}")
        if args.misses:
            for r in missed:
                print(f"    missed [{r['category']}] {r['text'][:100]!r}")
            for r in changed:
                print(f"    changed ({r['source']}) {r['text'][:100]!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline-rev", default="5ba5816", help="git revision of today's rules")
    ap.add_argument("--misses", action="store_true", help="list what each one gets wrong")
    ap.add_argument("--no-cost", action="store_true", help="skip the timings")
    args = ap.parse_args()
    sets(args)


if __name__ == "__main__":
    main()
