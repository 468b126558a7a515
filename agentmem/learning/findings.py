"""A finding: one proven difference between a group's positive and negative runs.

The value type every evidence rule produces (:mod:`.evidence` within a group,
:mod:`.corrections` within a run, :mod:`.crosstask` across tasks), that
:mod:`.merge` merges and Stage 2 (:mod:`.stages`) phrases, with the text helpers
that keep every draft lesson to the same form: at most 32 words, errors quoted
without inner quotes.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from .. import sanitize
from .digest import clip_words, value_text
from .kinds import KINDS

__all__ = ["KIND_RANK", "Finding", "err_clause", "lesson_text", "quote_error", "short_value"]

#: The order findings of one support are ranked in (most specific first).
KIND_RANK: dict[str, int] = {k.value: s.rank for k, s in KINDS.items()}


def _no_empty_quote(text: str) -> str:
    """A draft lesson without the quote :func:`quote_error` withheld ("fails with ''")."""
    if "''" not in text:
        return text
    return re.sub(r"\s+with\s+''|\s*(?<!\w)''(?!\w)", "", text)


@attrs.frozen
class Finding:
    """One proven difference between positive and negative trajectories of a group.

    ``facts``: names any phrasing must keep (tool first). ``detail["avoid"]``:
    the wrong tool, parameter name or value, which a phrasing may only name as
    something not to do.
    """

    kind: str
    tool: str
    domain: str
    text: str = attrs.field(converter=_no_empty_quote)
    facts: tuple[str, ...]
    support: int = 1
    detail: dict[str, Any] = attrs.field(factory=dict, eq=False)

    @property
    def key(self) -> tuple[str, ...]:
        return (self.kind, *self.facts)

    @property
    def avoid(self) -> tuple[str, ...]:
        return tuple(self.detail.get("avoid", ()))


#: A client's tag around an error (Claude Code's ``<tool_use_error>``): framing, never
#: part of a quote (it reached lessons as "failed with '<tool_use_error>Error: ...'" and
#: "'<<value>>Unknown skill ...'"), replaced by a space so that no two words fuse.
ERROR_TAG = re.compile(r"</?\w*error>", re.IGNORECASE)


def quote_error(e: str, words: int = 8) -> str:
    """An error gist ready to stand in single quotes: no client tag, no inner quotes, a few
    words."""
    e = ERROR_TAG.sub(" ", e or "").strip()
    e = sanitize.quote_diagnostic(e, 400)  # no instruction, in any language: no quote
    e = "" if e == sanitize.WITHHELD else re.sub(r"['\"`]", "", e).strip(" .:;,")
    # what the stripping left must still read as a diagnostic ('.:¡' left '¡', which a
    # lesson's check refuses as tool output: the fuzz test found it)
    e = "" if e and sanitize.quote_diagnostic(e, 400) == sanitize.WITHHELD else e
    return clip_words(e, words)


def lesson_text(*parts: str) -> str:
    text = " ".join(p for p in parts if p)
    return clip_words(re.sub(r"\s+", " ", text).replace(" ;", ";").strip(), 32)


def err_clause(e: str, subject: str = "it", verb: str = "fails", words: int = 6) -> str:
    q = quote_error(e, words)
    return f"{subject} {verb} with '{q}'" if q else f"{subject} {verb}"


def short_value(v: Any) -> str:
    return sanitize.quote(value_text(v, 400), 40)
