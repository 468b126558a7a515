"""Quotes of tool output in any language and script: instructions withheld, diagnostics kept.

The set is ``tests/data/multilingual_quotes.jsonl``: instructions (in English, German,
French, Spanish, Portuguese, Italian, Russian, Polish, Chinese, Japanese, Korean,
Vietnamese, Turkish, Arabic, Hindi and Thai) that a tool's output might carry, and
real diagnostics (compiler errors, test failures, "No such file or directory" in
several locales). Each text goes through the two places a tool's words meet a lesson:

* the write side: :func:`agentmem.learning.findings.quote_error` (what a learned
  lesson quotes of a failing output, at a budget of 8 units); an instruction counts
  as held when nothing of it is quoted, a diagnostic counts as kept when its quote is
  not empty; a quote over its budget (a 100-character Chinese sentence quoted whole)
  is counted too;
* the read side: :func:`agentmem.sanitize.lesson_problem` on a lesson that holds the
  text in quotes (as a hand-written or team lesson would); an instruction counts as
  held when the lesson is refused, a diagnostic as kept when it is served.

``tests/data/multilingual_quotes_heldout.jsonl`` was written after the rules, and
run once, untouched, for the first-try figures in ``docs/security-hostile.md``.

    python benchmarks/bench_multilingual.py [--json]
    python benchmarks/bench_multilingual.py --data tests/data/multilingual_quotes_heldout.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from agentmem import sanitize
from agentmem.learning.findings import quote_error

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "multilingual_quotes.jsonl"
BUDGET = 8


def units(text: str) -> int:
    """The quote's length in budget units (words; characters of unspaced scripts)."""
    f = getattr(sanitize, "text_units", None)
    return f(text) if f else len(text.split())


def run(data: Path = DATA) -> dict[str, object]:
    rows = [json.loads(x) for x in data.read_text(encoding="utf-8").splitlines() if x.strip()]
    out: dict[str, object] = {}
    by_lang: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    held = kept = over = lesson_held = lesson_kept = 0
    n_ins = sum(r["kind"] == "instruction" for r in rows)
    n_diag = len(rows) - n_ins
    leaks: list[str] = []
    lost: list[str] = []
    for r in rows:
        q = quote_error(r["text"], BUDGET)
        lesson = f"If Bash fails with '{r['text']}', check the path first."
        refused = sanitize.lesson_problem(lesson, max_words=10_000) is not None
        lang = by_lang[r["lang"]]
        if len(q.split()) < len(q) // 40 or units(q) > BUDGET + 1:
            over += 1
        if r["kind"] == "instruction":
            lang[1] += 1
            if not q:
                held += 1
                lang[0] += 1
            else:
                leaks.append(f"{r['lang']}: {q}")
            lesson_held += refused
        else:
            lang[3] += 1
            if q:
                kept += 1
                lang[2] += 1
            else:
                lost.append(f"{r['lang']}: {r['text']}")
            lesson_kept += not refused
    out["instructions"] = n_ins
    out["diagnostics"] = n_diag
    out["quote_instructions_held"] = held
    out["quote_diagnostics_kept"] = kept
    out["quotes_over_budget"] = over
    out["lesson_instructions_refused"] = lesson_held
    out["lesson_diagnostics_served"] = lesson_kept
    out["by_language"] = {
        k: {"held": v[0], "instructions": v[1], "kept": v[2], "diagnostics": v[3]}
        for k, v in sorted(by_lang.items())
    }
    out["leaked"] = leaks
    out["lost"] = lost
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--data", type=Path, default=DATA, help="a JSON-lines set (default: %(default)s)"
    )
    args = p.parse_args()
    r = run(args.data)
    if args.json:
        print(json.dumps(r, ensure_ascii=False, indent=1))
        return
    print(
        f"write side (quote_error, budget {BUDGET}): instructions held "
        f"{r['quote_instructions_held']}/{r['instructions']}, diagnostics kept "
        f"{r['quote_diagnostics_kept']}/{r['diagnostics']}, quotes over budget "
        f"{r['quotes_over_budget']}"
    )
    print(
        f"read side (lesson_problem): instructions refused {r['lesson_instructions_refused']}/"
        f"{r['instructions']}, diagnostics served {r['lesson_diagnostics_served']}/"
        f"{r['diagnostics']}"
    )
    for k, v in r["by_language"].items():  # type: ignore[union-attr]
        print(f"  {k}: held {v['held']}/{v['instructions']}  kept {v['kept']}/{v['diagnostics']}")
    for x in r["leaked"]:  # type: ignore[union-attr]
        print("  leaked:", x)
    for x in r["lost"]:  # type: ignore[union-attr]
        print("  lost:", x)


if __name__ == "__main__":
    main()
