"""The words a lesson and a prompt share: tool names, parameter names, error strings.

Pure functions (the standard library's ``re`` only) used on both sides of the
keyword index (:mod:`agentmem.storage.keyword_index`):

* :func:`lesson_terms` turns a lesson into the four indexed columns: its text
  with every identifier also split into words (``get_user_id`` -> ``get user
  id``, ``pressBrakePedal`` -> ``press brake pedal``, so that "send a message"
  finds ``send_message``), the tools it names, the parameters it names and the
  error strings it quotes;
* :func:`query_words`, :func:`prompt_names` and :func:`quotes_error` read a
  prompt the same way.

Which identifiers are tools: a name the library knows as a tool (recorded in a
step, mapped in ``tool_domains``, or a built-in tool name of
:mod:`agentmem.domains`) is one. Of the other identifiers, one that looks like
code (``snake_case``, ``camelCase``) is a tool when it is called (``name(``),
follows a verb of calling (``call``, ``use``, ``run``...) or continues a list
of tools (``cat, cp or mv``); otherwise, like any ``name=``, it is a parameter.
Learned lessons name only tools the library recorded, so for them this is exact;
for a lesson added by hand it is the best guess the text allows.
"""

# No ``from __future__ import annotations``: the NamedTuple fields of LessonTerms
# are then types, not strings that typing compiles (the first compile() of a process
# costs the prompt hook, which imports this module, about 2 ms).
import re
from collections.abc import Collection
from typing import NamedTuple

__all__ = [
    "STOPWORDS",
    "TERMS_VERSION",
    "LessonTerms",
    "error_phrases",
    "lesson_terms",
    "prompt_names",
    "query_words",
    "quotes_error",
    "split_identifier",
]

#: Bumped whenever :func:`lesson_terms` changes what it extracts: a library whose
#: keyword index was built by other rules is rebuilt when it is opened.
TERMS_VERSION = 1

#: Words too common to say anything about which lesson fits (never searched for).
STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be been before being below
    between both but by can could did do does doing done down during each else every for from
    further get got had has have having he her here hers him his how i if in into is it its
    itself just me more most my myself need needs no nor not now of off on once only or other
    our ours out over own please same she should so some such than that the their theirs them
    then there these they this those through to too under until up us very want was we were
    what when where which while who whom why will with would you your yours""".split()
)

_TOKEN = re.compile(r"\w+(?:\.\w+)*")  # words, snake_case, camelCase, dotted names
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_QUOTED = r"(?<!\w)['`]([^'`\n]{3,}?)['`](?!\w)"  # compiled on first use (re's cache)

_CALL_VERBS = frozenset(
    "call calling calls called use using uses used run running runs invoke invoking "
    "retry retrying prefer tool".split()
)
_LIST_WORDS = frozenset("or and nor not then instead".split())


class LessonTerms(NamedTuple):
    """The keyword index's columns for one lesson."""

    text: str  # the lesson, then the words of its split identifiers
    tools: str  # tool names it names, lower case, one space between
    params: str  # parameter names it names
    errors: str  # the error strings it quotes, one a line


def split_identifier(name: str) -> list[str]:
    """``get_user_id`` -> ``[get, user, id]``; ``pressBrakePedal`` -> ``[press, brake,
    pedal]``; ``file_name1`` -> ``[file, name, 1]``; ``notes.txt`` -> ``[notes, txt]``."""
    parts: list[str] = []
    for piece in re.split(r"[_.]+", name):
        parts.extend(m.group().lower() for m in _CAMEL.finditer(piece))
    return parts


def _code_like(name: str) -> bool:
    return "_" in name.strip("_") or re.search(r"[a-z][A-Z]", name) is not None


def lesson_terms(text: str, known_tools: Collection[str] = ()) -> LessonTerms:
    """The indexed columns of a lesson; ``known_tools`` are lower-case tool names."""
    tools: dict[str, None] = {}
    params: dict[str, None] = {}
    extra: list[str] = []
    prev_word = ""
    prev_was_tool = False
    for m in _TOKEN.finditer(text):
        tok = m.group()
        low = tok.lower()
        after = text[m.end() : m.end() + 1]
        parts = split_identifier(tok)
        if len(parts) > 1:
            extra.extend(parts)
        is_tool = False
        if "." in tok or tok.isdigit():
            pass  # a file name or a number: a value, not a name
        elif low in known_tools:
            is_tool = True
        elif after == "=":
            params[low] = None
        elif _code_like(tok):
            if (
                after == "("
                or prev_word in _CALL_VERBS
                or (prev_word in _LIST_WORDS and prev_was_tool)
            ):
                is_tool = True
            else:
                params[low] = None
        if is_tool:
            tools[low] = None
            prev_was_tool = True
        elif low not in _LIST_WORDS:
            prev_was_tool = False
        prev_word = low
    for t in tools:
        params.pop(t, None)
    body = text if not extra else f"{text}\n{' '.join(extra)}"
    return LessonTerms(body, " ".join(tools), " ".join(params), "\n".join(error_phrases(text)))


def error_phrases(text: str) -> list[str]:
    """The strings a lesson quotes (``'Invalid access token'``), without a trailing ``...``."""
    out = []
    for m in re.finditer(_QUOTED, text):
        s = m.group(1).strip().rstrip(".").strip()
        if len(_words(s)) >= 2:
            out.append(s)
    return out


def _words(text: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[^\W_]+", text)]


def query_words(prompt: str, limit: int = 48) -> list[str]:
    """The words of a prompt worth searching for: each word and identifier (lower case),
    the words of split identifiers, no stopwords, no repeats, at most ``limit``."""
    out: dict[str, None] = {}
    for m in _TOKEN.finditer(prompt):
        tok = m.group()
        for w in (tok.lower(), *split_identifier(tok)):
            if w and w not in STOPWORDS and not w.strip("_").isdigit() and len(w) > 1:
                out[w] = None
        if len(out) >= limit:
            break
    return list(out)[:limit]


def prompt_names(prompt: str) -> set[str]:
    """Every word and identifier of a prompt, lower case, as written (for tool names)."""
    return {m.group().lower() for m in _TOKEN.finditer(prompt)}


def quotes_error(prompt_words: list[str], errors: str) -> bool:
    """Does the prompt contain one of the lesson's error strings (its first three words,
    in order)? ``prompt_words`` from :func:`prompt_word_list`."""
    if not errors:
        return False
    joined = f" {' '.join(prompt_words)} "
    for phrase in errors.split("\n"):
        words = _words(phrase)[:3]
        if len(words) >= 2 and f" {' '.join(words)} " in joined:
            return True
    return False


def prompt_word_list(prompt: str) -> list[str]:
    """The prompt's words in order, lower case (for :func:`quotes_error`)."""
    return _words(prompt)
