"""Checks every model output must pass before it may touch the library. Pure functions.

A rejected output is never repaired by guessing: the caller falls back to the
data-derived text and journals the reason returned here.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence

from ..records import MAX_EXPERIENCE_WORDS, word_count

__all__ = [
    "copied_run",
    "identifiers",
    "lesson_problem",
    "names_tool",
    "summary_problem",
]

_WORD = re.compile(r"[A-Za-z0-9_']+")
_IDENT = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b|\b[A-Za-z][A-Za-z0-9_]*(?=\()")
COPY_RUN = 8


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def copied_run(text: str, sources: Iterable[str], n: int = COPY_RUN) -> str | None:
    """The first run of ``n`` consecutive words of ``text`` that also stands in a source."""
    words = _words(text)
    if len(words) < n:
        return None
    grams = {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}
    for src in sources:
        sw = _words(src)
        for i in range(len(sw) - n + 1):
            g = tuple(sw[i : i + n])
            if g in grams:
                return " ".join(g)
    return None


def identifiers(text: str) -> set[str]:
    """Tokens that look like tool or parameter names: snake_case words, or a word before ``(``."""
    return set(_IDENT.findall(text))


def names_tool(text: str, tools: Collection[str]) -> bool:
    low = text.lower()
    return any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(t.lower())}(?![A-Za-z0-9_])", low)
               for t in tools)


def _unknown_identifiers(text: str, known: Collection[str]) -> list[str]:
    known_low = {k.lower() for k in known}
    return sorted(i for i in identifiers(text) if i.lower() not in known_low)


def lesson_problem(
    text: str | None,
    *,
    tools: Collection[str],
    known: Collection[str],
    instructions: Sequence[str],
    facts: Sequence[str] = (),
    max_words: int | None = MAX_EXPERIENCE_WORDS,
) -> str | None:
    """Why a model's lesson text must be rejected, or None when it passes.

    ``tools`` are the tools of the group, ``known`` every identifier the group
    uses (tools and parameter names), ``instructions`` the prompt text that
    must not be copied, ``facts`` the names a lesson of this finding must keep.
    """
    if text is None or not text.strip():
        return "empty text"
    if max_words is not None and word_count(text) > max_words:
        return f"{word_count(text)} words, over the {max_words}-word limit"
    run = copied_run(text, instructions)
    if run:
        return f"copies the prompt's instructions ('{run}')"
    unknown = _unknown_identifiers(text, known)
    if unknown:
        return f"names tools or parameters that the group never used: {', '.join(unknown[:3])}"
    if not names_tool(text, tools):
        return "names no tool of the group"
    missing = [f for f in facts if not names_tool(text, [f])]
    if missing:
        return f"drops the evidence's {', '.join(missing)}"
    if "|" in text:
        return "contains an operation separator"
    return None


def summary_problem(
    text: str | None, *, tools: Collection[str], known: Collection[str], instructions: Sequence[str]
) -> str | None:
    """Why a Stage 1 summary must be rejected (64-word limit, same other rules)."""
    return lesson_problem(text, tools=tools, known=known, instructions=instructions, max_words=64)
