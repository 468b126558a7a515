"""Redaction both ways: recall on secrets in context, false positives on near-misses, and cost.

The sets are the pairs of :data:`SETS` in ``tests/data/redaction/``: secrets (each
record: a text and the exact secret substrings that must disappear) and near-misses
(texts from real transcripts, real code and synthetic look-alikes that must come out
byte for byte); each set's figures are printed, then all of them together. Every
text is recorded through ``Memory.record`` into a fresh library, as the task, as a
step's output and inside the step's parameters, and queued for a team the way
``team/outbox.py`` does; a secret counts as caught only when it is gone
from every stored copy, and a near-miss counts as a false positive when any stored
copy differs from the text.

Compared in the same run, through the same three places (text, output, parameters):

* ``today``: the rules at ``--baseline-rev`` (``agentmem/redact/`` or the older
  ``agentmem/redact.py``, loaded from git; skipped when git or the revision is missing);
* ``agentmem``: the rules in this tree (the recording paths themselves);
* ``detect-secrets``: Yelp's detect-secrets 1.5.0 with all its plugins and default
  filters, line by line (``scan_line``), each found value replaced; skipped when it
  is not installed;
* ``agentmem + detect-secrets``: detect-secrets run on what agentmem leaves.

Then cost: recording one 4 MB output whose secrets straddle nothing (the output cap
first, redaction of what is kept) against redacting the whole output first, measured
in the same run; and adversarial inputs at 256 KB and 2 MB, whose time ratio is about
8 when redaction is linear (quadratic would be about 64).

    python benchmarks/bench_redaction.py [--baseline-rev 0958dc0] [--misses]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
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
    from agentmem.team.outbox import redact_json as _redact_json
    from agentmem.team.outbox import redact_text as _redact_text

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
    """``redact`` of agentmem/redact.py (or of the agentmem/redact/ package) at ``rev``,
    or None when git cannot show it."""
    try:
        from benchmarks.redaction_corpus import baseline as package_baseline
    except ImportError:  # run as a script: benchmarks/ is on the path
        from redaction_corpus import baseline as package_baseline  # type: ignore[no-redef]

    package = package_baseline(rev)
    if package is not None:
        return package
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


#: (name, secrets, near-misses) of every set in tests/data/redaction/, oldest first;
#: docs/security-redaction-rules.md says when each was written.
SETS = (
    ("original", "secrets.jsonl", "near_misses.jsonl"),
    ("blind 2", "blind2_secrets.jsonl", "blind2_near_misses.jsonl"),
    ("review 30", "review30_secrets.jsonl", "review30_near_misses.jsonl"),
    ("blind 3", "blind3_secrets.jsonl", "blind3_near_misses.jsonl"),
)


def sets(args: argparse.Namespace) -> None:
    every = [(name, load(s), load(n)) for name, s, n in SETS]
    for name, secrets, near in every:
        print(f"{name}: {len(secrets)} secrets in context, {len(near)} near-misses")
    secrets = [r for _, s, _ in every for r in s]
    near = [r for _, _, n in every for r in n]
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
    print(f"{'':42}{'recall':>8}{'missed':>8}{'FP rate':>9}{'changed':>9}")
    for name, copies in contenders:
        missed, changed = score(secrets, near, copies)
        for set_name, set_secrets, set_near in every:
            m = [r for r in missed if r in set_secrets]
            c = [r for r in changed if r in set_near]
            label = f"{name} / {set_name}"
            print(
                f"  {label:40}{1 - len(m) / len(set_secrets):>8.3f}{len(m):>8}"
                f"{len(c) / len(set_near):>9.3f}{len(c):>9}"
            )
        recall = 1 - len(missed) / len(secrets)
        fp = len(changed) / len(near)
        print(f"{name + ' / all':42}{recall:>8.3f}{len(missed):>8}{fp:>9.3f}{len(changed):>9}")
        if args.misses:
            for r in missed:
                print(f"    missed [{r['category']}] {r['text'][:100]!r}")
            for r in changed:
                print(f"    changed ({r['source']}) {r['text'][:100]!r}")


def transcript_lines(folder: Path) -> list[str]:
    """Every distinct line (10-300 characters) of every string in the real transcripts,
    JSON-encoded outputs decoded too."""

    def strings(value: Any) -> Iterator[str]:
        if isinstance(value, str):
            yield value
            if value.strip()[:1] in ("{", "["):
                with contextlib.suppress(ValueError):
                    yield from strings(json.loads(value))
        elif isinstance(value, dict | list):
            for v in value.values() if isinstance(value, dict) else value:
                yield from strings(v)

    seen: dict[str, None] = {}
    for path in sorted(folder.rglob("*.jsonl")):
        for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            for text in strings(record):
                for line in text.split("\n"):
                    if 10 <= len(line.strip()) <= 300:
                        seen.setdefault(line.strip())
    return list(seen)


def transcripts(args: argparse.Namespace) -> None:
    folder = Path(args.transcripts)
    if not folder.is_dir():
        print(f"\n(no transcripts at {folder})")
        return
    lines = transcript_lines(folder)
    print(f"\nthe real transcripts in {folder}: {len(lines)} distinct lines; changed by")
    old = baseline_redactor(args.baseline_rev)
    for name, fn in (("today", old), ("agentmem", DEFAULT_REDACTOR.text)):
        if fn is not None:
            changed = [line for line in lines if fn(line) != line]
            print(f"  {name:10}{len(changed):>6}")
            if args.misses:
                for line in changed[:20]:
                    print(f"    {line[:100]!r}")


# --------------------------------------------------------------------------- cost


def _best(fn: Callable[[], object], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def four_mb_outputs() -> dict[str, str]:
    """A build log and a log dense with secrets and near-misses, 4 MB each."""
    log = "".join(
        f"[{i:07d}] cc -O2 -c src/module_{i % 977}.c -o build/m{i}.o\n" for i in range(80_000)
    )
    records = load("secrets.jsonl") + load("near_misses.jsonl")
    chunk = "\n".join(r["text"] for r in records) + "\n"
    dense = chunk * (4 * 2**20 // len(chunk) + 1)
    return {"build log": log[: 4 * 2**20], "dense with secrets": dense[: 4 * 2**20]}


def cost() -> None:
    from agentmem.outputs import DEFAULT_OUTPUT_CAP, cap_and_redact, cap_output

    cap = DEFAULT_OUTPUT_CAP
    redact = DEFAULT_REDACTOR.text
    print(f"\nrecording one 4 MB output, {cap // 1024} KiB cap (best of 3):")
    print(f"{'':22}{'redact, then cap':>18}{'cap, then redact':>18}{'ratio':>8}{'record':>9}")
    for name, output in four_mb_outputs().items():
        before = _best(lambda o=output: cap_output(redact(o), cap))
        after = _best(lambda o=output: cap_and_redact(o, cap, redact))
        with tempfile.TemporaryDirectory() as d, Memory.open(Path(d) / "r.db") as mem:
            step = [Step("bash", {"command": "make"}, output, False)]
            rec = _best(lambda s=step: mem.record("build", s))
        print(f"{name:22}{before:>16.3f} s{after:>16.3f} s{before / after:>7.0f}x{rec:>7.3f} s")
    print("\nadversarial input, 256 KB and 2 MB (a ratio near 8 is linear, 64 quadratic):")
    ratios = []
    for name, unit in ADVERSARIAL.items():
        small = unit * (2**18 // len(unit))
        big = unit * (2**21 // len(unit))
        a, b = _best(lambda t=small: redact(t), 1), _best(lambda t=big: redact(t), 1)
        ratios.append(b / a)
        print(f"  {name!r:34}{a:>8.3f} s{b:>8.3f} s{b / a:>7.1f}")
    print(f"  largest ratio {max(ratios):.1f}, median {sorted(ratios)[len(ratios) // 2]:.1f}")


#: Repeated units that make a rule try (and fail) at every position.
ADVERSARIAL: dict[str, str] = {
    "a=": "a=",
    "password: x": "password: x",
    "token=": "token=",
    "redis-cli -a ": "redis-cli -a ",
    "htpasswd -b ": "htpasswd -b ",
    "net use /user:x ": "net use /user:x ",
    "openssl -passin ": "openssl -passin ",
    "echo x | --password-stdin ": "echo x | --password-stdin ",
    "the password is ": "the password is ",
    "password for ": "password for ",
    "密码": "密码",
    "kind: Secret\\ndata:\\n  a: b": "kind: Secret\ndata:\n  a: b\n",
    "Private-Lines: 999": "Private-Lines: 999\n",
    "AKIA + 16": "AKIA0000000000000000 ",
    "machine x login y ": "machine x login y ",
    ".pgpass a:1:b:c:": "a:1:b:c:",
    "<password>": "<password>",
    "key='x' value='": "key='x' value='",
    "login a/": "login a/",
    "Bearer ": "Bearer ",
    "-----BEGIN RSA PRIVATE KEY-----": "-----BEGIN RSA PRIVATE KEY-----",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--baseline-rev", default="0958dc0", help="git revision of the rules to compare with"
    )
    ap.add_argument("--misses", action="store_true", help="list what each one gets wrong")
    ap.add_argument("--no-cost", action="store_true", help="skip the timings")
    ap.add_argument(
        "--transcripts",
        default="/work/shared/data/transcripts",
        help="a folder of real transcripts (*.jsonl) whose lines should not change",
    )
    args = ap.parse_args()
    sets(args)
    transcripts(args)
    if not args.no_cost:
        cost()


if __name__ == "__main__":
    main()
