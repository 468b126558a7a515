"""Checks every model output must pass before it may touch the library. Pure functions.

A rejected output is never repaired by guessing: the caller falls back to the
data-derived text and journals the reason returned here.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence

from .. import sanitize
from ..records import MAX_EXPERIENCE_WORDS, word_count

__all__ = [
    "NEGATIONS",
    "copied_run",
    "identifiers",
    "lesson_problem",
    "lost_facts",
    "names_tool",
    "recommends",
    "summary_problem",
]

_WORD = re.compile(r"[A-Za-z0-9_']+")
# snake_case words and words before "(" -- not parts of file names ("temp_notes.txt")
_IDENT = re.compile(
    r"(?<![.\w])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b(?!\.\w)"
    r"|\b[A-Za-z][A-Za-z0-9_]*(?=\()"
)
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
    return any(
        re.search(rf"(?<![A-Za-z0-9_]){re.escape(t.lower())}(?![A-Za-z0-9_])", low) for t in tools
    )


def _unknown_identifiers(text: str, known: Collection[str]) -> list[str]:
    known_low = {k.lower() for k in known}
    return sorted(i for i in identifiers(text) if i.lower() not in known_low)


_TOKEN = re.compile(r"[A-Za-z0-9_]+(?:[.'’/-][A-Za-z0-9_]+)*")
_CLAUSE = re.compile(r"[,;:!?]|\s[-–—]+\s|—|\.(?![A-Za-z0-9_])")
#: Words that, just before a name, say "not this": "not cp", "never symbol=", "instead of".
NEGATIONS = frozenset(
    [
        "not", "never", "no", "don't", "dont", "doesn't", "isn't", "aren't", "shouldn't",
        "mustn't", "cannot", "can't", "avoid", "avoiding", "instead", "rather", "wrong", "skip",
        "skipping", "omit", "omitting", "unnecessary", "needn't",
    ]
)  # fmt: skip
#: Words that, just after a name, say it went wrong: "symbol=Apple failed".
FAILURES = frozenset(["fails", "fail", "failed", "errors", "error", "wrong", "invalid", "rejected"])


def recommends(text: str, item: str) -> bool:
    """Whether ``text`` names ``item`` and never says not to use it.

    An occurrence says "not this" with a negation among the 3 words before it in the
    same clause ("never 0.5", "not mv", "rather than cp") or a failure word among the 2
    after it ("symbol=Apple failed"). A lesson that names what failed only in such a way
    warns against it; one that names it with no such occurrence recommends it.
    """
    words = _TOKEN.findall(item)
    if not words:
        return False
    toks: list[tuple[str, int]] = []
    clause = 0
    pos = 0
    for m in re.finditer(rf"{_TOKEN.pattern}|{_CLAUSE.pattern}", text):
        if _TOKEN.fullmatch(m.group(0)):
            toks.append((m.group(0), clause))
        else:
            clause += 1
        pos = m.end()
    del pos
    low = [t.lower() for t, _ in toks]
    want = [w.lower() for w in words]
    n = len(want)
    named = False
    for i in range(len(low) - n + 1):
        if low[i : i + n] != want:
            continue
        named = True
        c = toks[i][1]
        before = [low[k] for k in range(max(0, i - 3), i) if toks[k][1] == c]
        after = [low[k] for k in range(i + n, min(len(low), i + n + 2)) if toks[k][1] == c]
        if set(before) & NEGATIONS or set(after) & FAILURES:
            return False
    return named


def lesson_problem(
    text: str | None,
    *,
    tools: Collection[str],
    known: Collection[str],
    instructions: Sequence[str],
    facts: Sequence[str] = (),
    avoid: Sequence[str] = (),
    max_words: int | None = MAX_EXPERIENCE_WORDS,
) -> str | None:
    """Why a model's lesson text must be rejected, or None when it passes.

    ``tools`` are the tools of the group, ``known`` every identifier the group
    uses (tools and parameter names), ``instructions`` the prompt text that
    must not be copied, ``facts`` the names a lesson of this finding must keep,
    ``avoid`` what the evidence proved wrong (a wrong tool, parameter name or
    value): the lesson may name it only as something not to do.
    """
    if text is None or not text.strip():
        return "empty text"
    if max_words is not None and word_count(text) > max_words:
        return f"{word_count(text)} words, over the {max_words}-word limit"
    hostile = sanitize.lesson_problem(text, max_words=len(text))  # markup, addressed text
    if hostile:
        return hostile
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
    recommended = [a for a in avoid if recommends(text, a)]
    if recommended:
        return f"recommends what failed: {recommended[0]}"
    if "|" in text:
        return "contains an operation separator"
    return None


def summary_problem(
    text: str | None,
    *,
    tools: Collection[str],
    known: Collection[str],
    instructions: Sequence[str],
    prompt_head: str = "",
    min_tools: int = 1,
) -> str | None:
    """Why a Stage 1 summary must be rejected (64-word limit, same other rules).

    A summary must also name ``min_tools`` of the trajectory's ``tools`` (a summary of
    the strategy names the tools it used) and may not echo 6 words of ``prompt_head``,
    the template as sent ("The trajectory made 5 tool calls with ...").
    """
    problem = lesson_problem(
        text, tools=tools, known=known, instructions=instructions, max_words=64
    )
    if problem or text is None:
        return problem
    named = [t for t in tools if names_tool(text, [t])]
    if len(named) < min(min_tools, len(tools)):
        return f"names {len(named)} of the trajectory's tools, fewer than {min_tools}"
    run = copied_run(text, [prompt_head], n=6) if prompt_head else None
    if run:
        return f"echoes the prompt ('{run}')"
    return None


# A quoted span: an error, a value, a command. Quotes stand after and before a non-word
# character, so the apostrophes of "don't" or "agent's" open nothing.
_QUOTED = re.compile(
    r"(?<![A-Za-z0-9])'([^']+?)'(?![A-Za-z0-9])"
    r'|(?<![A-Za-z0-9])"([^"]+?)"(?![A-Za-z0-9])'
    r"|`([^`]+)`"
)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def lost_facts(source: str, phrasing: str, tools: Collection[str] = ()) -> list[str]:
    """The facts of ``source`` (a lesson phrased from the data) that ``phrasing`` drops:
    each quoted span (the error, a value, a command), each identifier, and each tool of
    ``tools`` that ``source`` names. Empty when ``phrasing`` keeps every one.

    A model may reword a lesson, never lose what the data proved: "If Edit fails with
    'File has not been read yet', Read the file first, then retry." phrased as "retry it
    with limit set" loses Edit, Read and the quoted error, so it is refused.

    >>> lost_facts("If Edit fails with 'File has not been read yet', Read it first.",
    ...            "/modify: if Fail with 'File has not been read yet', retry it with limit set.",
    ...            tools={"Edit", "Read", "Write"})
    ['Edit', 'Read']
    """
    said = _norm(phrasing)
    lost: list[str] = []
    for m in _QUOTED.finditer(source):
        q = next(g for g in m.groups() if g is not None)
        if _norm(q) and _norm(q) not in said:
            lost.append(q)
    # Tools in their own case: "Read" the tool is not "read" the word.
    named = {t for t in tools if t and _names_exactly(source, t)}
    for fact in sorted(named):
        if not _names_exactly(phrasing, fact):
            lost.append(fact)
    for fact in sorted(identifiers(source) - named):
        if fact not in lost and not names_tool(phrasing, [fact]):
            lost.append(fact)
    return lost


def _names_exactly(text: str, name: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text) is not None
