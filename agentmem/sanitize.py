"""Lessons are data: what tool output may put into a lesson, and what a lesson must be to be served.

agentmem writes lessons into an agent's prompt, and the agent can run commands, so
nothing that came from a tool run may reach the prompt as markup or as an
instruction. Two sides, one rule set. Pure functions, standard library only, cheap
to import (the prompt hook's lean path reads it).

Write side (learning quotes tool output and parameter values; tool and parameter
names in a lesson are held to the read side's rules when it is applied):

- :func:`clean`: control, format (zero-width, bidi) and other invisible characters,
  terminal escape sequences and tag-like markup (``<system-reminder>``, ``</x>``,
  ``[INST]``, ``<|im_start|>``) removed, white space folded onto one line, cut to
  a length.
- :func:`quote`: :func:`clean`, then :data:`WITHHELD` in place of any text
  addressed to the reader (:func:`addressed`): a role word and a colon
  ("SYSTEM:", "Assistant:"), an assistant or model called by name ("assistant,
  stop"), an imperative to "you" ("you must now run ..."), "ignore previous
  instructions", "do not tell the user", piping a download into a shell, turning
  off a sandbox. An error quote that is withheld is left out of its lesson
  (:func:`agentmem.learning.findings.quote_error`); a lesson that still holds
  :data:`WITHHELD` (a parameter value) is refused (:func:`lesson_problem`): it waits
  for evidence that says the same in plain words.
- :func:`quote_diagnostic`: :func:`quote` for a failing output's diagnostic, which
  must also look like one when it holds letters beyond ASCII
  (:func:`agentmem.languages.diagnostic_shape`). Instructions are found in any
  language (:func:`agentmem.languages.instruction`: markers for 15 languages and
  their scripts), and budgets count characters of unspaced scripts, not white space.

Read side (every lesson, from every source, before it is served):

- :func:`lesson_problem`: why a lesson text must not be served (or written), or
  None: empty, over :data:`MAX_WORDS` words (counted in every script:
  :func:`agentmem.languages.units`), a line break, an invisible or control
  character, tag-like markup, text addressed to the reader in any language, a
  withheld quote, a quote (``'...'``) that :func:`quote_diagnostic` would withhold.
- :func:`servable`: the text to inject, or None to leave it out.

And for people: :func:`for_terminal` shows control characters as escapes instead
of letting a terminal act on them.
"""

from __future__ import annotations

import re

from . import languages

__all__ = [
    "MARKUP_NAMES",
    "MAX_WORDS",
    "WITHHELD",
    "addressed",
    "clean",
    "for_terminal",
    "invisible",
    "lesson_problem",
    "quote",
    "quote_diagnostic",
    "servable",
    "tag_like",
]

#: A lesson's length limit (:data:`agentmem.records.MAX_EXPERIENCE_WORDS`; kept here so
#: this module imports nothing of agentmem's).
MAX_WORDS = 32
#: What :func:`quote` puts in place of text addressed to the reader. A lesson holding it
#: is never written nor served.
WITHHELD = "withheld-text"
#: Bare ``<word>`` names that are markup a prompt reads as structure (roles, harness
#: tags, HTML that runs or hides); any other ``<word>`` is a placeholder, as learning
#: writes them (``never path=<file>``) and people do (``git push -u origin <branch>``).
MARKUP_NAMES = frozenset(
    """system user assistant human developer tool tools instructions instruction prompt
    context inst sys im_start im_end endoftext eos bos important admin root rules policy
    thinking reasoning answer result results output function_calls function invoke
    parameter tool_use tool_result tool_call script iframe img svg style meta link object
    embed form input a b i s u p div span html body head title br hr details summary
    message messages memory memories note notes lesson lessons data""".split()
)

# Control (Cc), surrogates (Cs), line and paragraph separators, format (Cf, Unicode 15:
# soft hyphen, Arabic marks, zero-width characters, bidi embeddings, overrides and
# isolates, word joiner, BOM, interlinear annotation, tags), variation selectors and the
# Hangul fillers: characters a reader cannot see or that reorder what they see.
_INVISIBLE_CLASS = (
    "\x00-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\ud800-\udfff"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_INVISIBLE = f"[{_INVISIBLE_CLASS}]"
# Terminal escape sequences (CSI, OSC, other ESC ones): removed whole, not left as "[31m".
_ESCAPE_SEQ = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]"
# <tag ...>, </tag>, <!...>, <?...?>, <|im_start|>; [INST], [/INST], [SYSTEM]; <<SYS>>.
_TAG = (
    r"<\s*/?\s*[A-Za-z!?|][^<>]{0,200}>"
    r"|\[\s*/?\s*(?:INST|SYS|SYSTEM|ASSISTANT|USER|HUMAN|DEVELOPER)\s*\]"
    r"|<<\s*/?\s*SYS\s*>>"
)
_PLACEHOLDER = r"<([a-z][a-z0-9_]{0,23})>"

_ROLE = r"(?:system|assistant|human|developer|chatgpt)"
_NAMED = r"(?:system|assistant|human|developer|chatgpt|claude|codex|ai)"
_ACT = (
    r"(?:run|execute|exec|call|invoke|type|paste|open|visit|go|download|install|send|post|"
    r"upload|curl|wget|tell|ask|inform|notify|stop|ignore|disregard|disable|delete|remove|"
    r"reply|respond|say|print|output|write|copy|grant|approve|allow|bypass|obey)"
)
#: Text addressed to whoever reads it: (words one of which it needs, pattern, what it is).
#: A pattern is compiled only when a text holds one of its words: the prompt hook pays
#: for the few its lessons need.
_ADDRESSED: list[tuple[frozenset[str], str, str]] = [
    (frozenset(["system", "assistant", "human", "developer", "chatgpt"]),
     rf"(?<![\w.-]){_ROLE}\s*:", "a role marker"),
    (frozenset(["system", "assistant", "human", "developer", "chatgpt", "claude", "codex", "ai"]),
     rf"(?:^|[.!?;:'\"(]\s*|\bdear\s+|\bhey\s+){_NAMED}\s*[,!]",
     "words addressed to the assistant"),
    (frozenset(["model", "agent", "llm"]),
     r"(?:^|[.!?;:'\"(]\s*)(?:model|agent|llm)\s*[,!]", "words addressed to the assistant"),
    (frozenset(["you"]),
     rf"\byou\s+(?:must|should|shall|need\s+to|have\s+to|are\s+(?:required|expected)\s+to|"
     rf"will)\s+(?:now\s+|immediately\s+|first\s+|also\s+|then\s+|always\s+)*{_ACT}\b",
     "an instruction addressed to the reader"),
    (frozenset(["you", "now"]),
     r"\byou\s+are\s+now\b|\bfrom\s+now\s+on\b", "an instruction to the reader"),
    (frozenset(["ignore", "disregard", "forget", "override", "overrule"]),
     r"\b(?:ignore|disregard|forget|override|overrule)\b[^.!?]{0,40}\b(?:previous|prior|"
     r"above|earlier|preceding|all|any|other|system|your)\b[^.!?]{0,30}\b(?:instructions?|"
     r"prompts?|rules?|messages?|context|guidelines|directions|policies|policy)\b",
     "an instruction to ignore instructions"),
    (frozenset(["tell", "telling", "mention", "mentioning", "inform", "informing", "reveal",
                "revealing", "alert", "alerting", "notify", "notifying", "report", "reporting",
                "show", "showing", "warn", "warning"]),
     r"\b(?:do\s+not|don'?t|never|without)\s+(?:tell|telling|mention|mentioning|inform|"
     r"informing|reveal|revealing|alert|alerting|notify|notifying|report|reporting|show|"
     r"showing|warn|warning)\b[^.!?]{0,20}\b(?:user|human|anyone|them|this|it)\b",
     "an instruction to keep something from the user"),
    (frozenset(["stop", "pause", "halt"]),
     r"\b(?:stop|pause|halt)\s+and\s+(?:tell|ask|inform|say|report)\b", "an instruction"),
    (frozenset(["system", "developer", "new", "jailbreak", "prompt", "injection", "mode"]),
     r"\b(?:system|developer)\s+(?:prompt|message|instructions?)\b|\bnew\s+instructions?\b"
     r"|\bjailbreak|\bdeveloper\s+mode\b|\bprompt\s+injection\b",
     "talk of the reader's instructions"),
    (frozenset(["sh", "bash", "zsh", "dash", "ksh", "csh", "tcsh", "fish", "python", "python2",
                "python3", "perl", "ruby", "node", "sudo"]),
     r"\|\s*(?:sudo\s+)?(?:ba|z|da|k|c|tc|fi)?sh\b"
     r"|\b(?:curl|wget)\b[^|\n]{0,300}\|\s*(?:sudo\s+)?(?:python\d?|perl|ruby|node)\b",
     "a command that runs downloaded or hidden code"),
    (frozenset(["disable", "turn", "switch", "bypass", "skip", "circumvent", "deactivate",
                "escape"]),
     r"\b(?:disable|turn\s+off|switch\s+off|bypass|skip|circumvent|deactivate|escape)\b"
     r"[^.!?]{0,25}\b(?:sandbox(?:ing)?|safety|security|guard(?:rail)?s?|approvals?|"
     r"permission\s+checks?|confirmations?|restrictions?|filters?|monitoring)\b",
     "an instruction to turn off a safeguard"),
    (frozenset(["dangerously", "yolo"]),
     r"\bdangerously\w*|--dangerously|\byolo\b", "an instruction to turn off a safeguard"),
]  # fmt: skip
_COMPILED: dict[str, re.Pattern[str]] = {}
_TRIGGER = r"[a-z0-9]+(?:'[a-z]+)?|\|"
_SPACE = r"\s+"


def _pattern(p: str) -> re.Pattern[str]:
    """``p`` compiled (case-insensitive) on first use: importing this module compiles none."""
    if p not in _COMPILED:
        _COMPILED[p] = re.compile(p, re.IGNORECASE)
    return _COMPILED[p]


def invisible(text: str) -> str | None:
    """The first control, format or otherwise invisible character of ``text``, or None."""
    if text.isascii() and text.isprintable():
        return None
    m = _pattern(_INVISIBLE).search(text)
    return m.group(0) if m else None


def tag_like(text: str) -> str | None:
    """The first tag-like markup in ``text`` (``<system-reminder>``, ``</x>``, ``[INST]``,
    ``<system>``), or None; placeholders (``<file>``, ``<branch>``: one lower-case word,
    not one of :data:`MARKUP_NAMES`) are not markup."""
    if not _maybe_tag(text):
        return None
    for m in _pattern(_TAG).finditer(text):
        p = re.fullmatch(_PLACEHOLDER, m.group(0))
        if p is None or p.group(1) in MARKUP_NAMES:
            return m.group(0)
    return None


def _maybe_tag(text: str) -> bool:
    """Whether :data:`_TAG` must look at ``text``: a ``<`` not opening a placeholder, or a
    bracketed role word (string tests only: the prompt hook's lessons hold ``<file>``)."""
    start = text.find("<")
    while start != -1:
        end = text.find(">", start + 1)
        if end == -1:
            break
        inner = text[start + 1 : end]
        if not (inner.islower() and inner.replace("_", "").isalnum() and len(inner) <= 24):
            return True
        if inner in MARKUP_NAMES or inner[:1].isdigit():
            return True
        start = text.find("<", end + 1)
    if "[" in text:
        squeezed = text.lower().replace(" ", "")
        return any(f"[{w}]" in squeezed or f"[/{w}]" in squeezed for w in _BRACKET_ROLES)
    return False


_BRACKET_ROLES = ("inst", "sys", "system", "assistant", "user", "human", "developer")


def addressed(text: str) -> str | None:
    """What in ``text`` speaks to its reader (the assistant, the model, the user), or None:
    a role marker, a vocative, an imperative to "you", "ignore previous instructions",
    "do not tell the user", a download piped into a shell, turning off a safeguard."""
    low = text.lower()
    words = set(_pattern(_TRIGGER).findall(low))
    if "dangerously" in low:
        words.add("dangerously")
    for needs, pattern, why in _ADDRESSED:
        if not needs.isdisjoint(words) and _pattern(pattern).search(text):
            return why
    if languages.instruction(text, strict=True) is not None:
        return "an instruction to the reader"
    return None


def clean(text: str, limit: int = 200) -> str:
    """``text`` with terminal escapes, invisible characters and tag-like markup removed,
    white space folded onto one line, cut to at most ``limit`` characters."""
    if not text:
        return ""
    text = _pattern(_ESCAPE_SEQ).sub(" ", text[: 8 * limit + 64])  # a quote never needs more
    text = _pattern(_INVISIBLE).sub(" ", text)
    text = _strip_tags(text)
    text = _pattern(_SPACE).sub(" ", text).strip()
    if len(text) > limit:
        text = text[: max(0, limit - 3)].rstrip() + "..."
    return text


def _strip_tags(text: str) -> str:
    def drop(m: re.Match[str]) -> str:
        p = re.fullmatch(_PLACEHOLDER, m.group(0))
        return m.group(0) if p and p.group(1) not in MARKUP_NAMES else " "

    for _ in range(3):  # "<<x>system>" leaves a tag behind after one pass
        new = _pattern(_TAG).sub(drop, text)
        if new == text:
            break
        text = new
    return text


def quote(text: str, limit: int = 200) -> str:
    """:func:`clean`'s text, or :data:`WITHHELD` when it speaks to its reader
    (:func:`addressed`) or asks for something in any language
    (:func:`agentmem.languages.instruction`: "please", "run X to fix", "führe ... aus",
    "请运行"): what learning may quote from a tool's output or parameters."""
    out = clean(text, limit)
    if not out:
        return out
    whole = _pattern(_SPACE).sub(" ", text[: 8 * limit + 64])
    if addressed(out) or addressed(whole) or languages.instruction(whole) is not None:
        return WITHHELD
    return out


#: The most natural language (:func:`agentmem.languages.natural_units`) a quote of a
#: diagnostic beyond ASCII may hold.
MAX_NATURAL_UNITS = 24


def quote_diagnostic(text: str, limit: int = 200) -> str:
    """:func:`quote` for a failing output's diagnostic line: also :data:`WITHHELD` when
    it holds letters beyond ASCII and does not look like a diagnostic (no ``name:``
    frame, error code or diagnostic word in any language known to
    :func:`agentmem.languages.diagnostic_shape`), or holds more than
    :data:`MAX_NATURAL_UNITS` units of natural language. Precision first: a quote
    that may be an instruction in a language no marker knows is left out."""
    out = quote(text, limit)
    if out == WITHHELD or out.isascii():
        return out
    return WITHHELD if _quote_problem(out) is not None else out


def _quote_problem(text: str) -> str | None:
    """Why a quote of a diagnostic may not hold ``text`` (already clean), or None: it asks
    for something in some language, or it holds letters beyond ASCII and is not shaped
    like a diagnostic or holds too much natural language."""
    if languages.instruction(text) is not None:
        return "asks for something (an instruction, in some language)"
    if text.isascii():
        return None
    if not languages.diagnostic_shape(text):
        return "is not shaped like a diagnostic"
    if languages.natural_units(text) > MAX_NATURAL_UNITS:
        return f"holds over {MAX_NATURAL_UNITS} words of natural language"
    return None


def lesson_problem(text: str | None, max_words: int = MAX_WORDS) -> str | None:
    """Why ``text`` must never be served as a lesson (nor written as one), or None.

    The rules every lesson passes, whoever wrote it (learning, ``agentmem add``, a team
    member, a hand edit of the file): not empty; at most ``max_words`` words; one line;
    no control, format, bidi or other invisible character; no tag-like markup; nothing
    addressed to the reader (:func:`addressed`); no withheld quote.
    """
    if text is None or not text.strip():
        return "empty text"
    n = languages.units(text)
    if n > max_words:
        return f"{n} words, over the {max_words}-word limit"
    if "\n" in text or "\r" in text:
        return "more than one line"
    bad = invisible(text)
    if bad is not None:
        return f"holds an invisible or control character (U+{ord(bad):04X})"
    tag = tag_like(text)
    if tag is not None:
        return f"holds tag-like markup ({tag[:40]!r})"
    why = addressed(text)
    if why is not None:
        return f"holds {why}; lessons are notes, not instructions"
    if WITHHELD in text:
        return "quotes tool output that was withheld (it spoke to the reader)"
    if "'" in text:
        for m in _pattern(_QUOTED).finditer(text):
            why = _quote_problem(m.group(1))
            if why is not None:
                return f"quotes tool output that {why}"
    return None


# A quote in a lesson ('...', as learning writes a tool's words): held to the quote rules.
_QUOTED = r"(?:^|(?<=[\s(\[]))'((?:[^'\n]|'(?=\w)){1,400})'(?=$|[\s.,;:!?)\]])"


def servable(text: str) -> str | None:
    """The lesson text to inject into a prompt, or None when it breaks a rule of
    :func:`lesson_problem` and must be left out."""
    if not isinstance(text, str) or lesson_problem(text) is not None:
        return None
    return text.strip()


def for_terminal(text: str, *, newlines: bool = True) -> str:
    """``text`` safe to print to a terminal: every control, format or invisible character
    (ESC, BEL, U+202E, U+200B...) shown as an escape (``\\x1b``, ``\\u202e``) instead of
    acted on. Tabs stay, and newlines when ``newlines``."""

    def show(m: re.Match[str]) -> str:
        c = m.group(0)
        if c == "\t" or (c == "\n" and newlines):
            return c
        o = ord(c)
        return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"

    return _pattern(_INVISIBLE).sub(show, text) if invisible(text) is not None else text
