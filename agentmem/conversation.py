"""What a prompt of a conversation is: a task, or a turn of a conversation about one.

A coding agent's user types tasks ("fix the failing test in the parser"), and between
them answers the agent: a choice among the options it offered ("a", "2", "yes",
"ok", "お願いします", "２"), a short reply ("thanks", "keep going"), a slash command
(Claude Code's ``<command-name>/review</command-name><command-args>...``), and the
client itself writes notifications into the conversation (``<task-notification>``: a
background sub-agent finished). Only a task is a task: the other kinds take their
task from the conversation, the last prompt before them that stated one.

:func:`classify` says which kind a prompt is (:data:`PROMPT_KINDS`);
:func:`conversation_tasks` gives each prompt of a conversation its task. Pure: no
I/O, no model. Precision first: a prompt is a task unless its words say otherwise,
so "run the tests" stays a task however short it is.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import attrs

from .framing import APPROVALS as _APPROVALS
from .framing import FILLERS as _FILLERS
from .framing import NOTIFICATION_TAGS, strip_context
from .framing import OPTION as _OPTION
from .framing import REPLIES as _REPLIES

__all__ = [
    "NOTIFICATION_TAGS",
    "PROMPT_KINDS",
    "Prompt",
    "classify",
    "conversation_tasks",
    "slash_command",
    "strip_context",
    "template",
]

#: The kinds of prompt. ``trajectory.meta["prompt_kind"]`` holds one (absent: a task).
PROMPT_KINDS = ("task", "reply", "choice", "slash", "notification")

#: A prompt template's expansion, and what was asked through it (its command, or the arguments
#: the template quotes): "# /butler-exec — Execute a ButlerSpec ..." (a Codex custom prompt),
#: "## User Input\n\n```text\n<arguments>\n```" (spec-kit's commands).
_TEMPLATES = (
    (re.compile(r"\A#\s+(/[\w:.-]+)(?:\s|$)"), 1),
    (re.compile(r"\A##\s+User Input\s*\n+```[\w-]*\n(.*?)\n```", re.DOTALL), 1),
)
_COMMAND = re.compile(r"<command-name>\s*(/?[^<]*?)\s*</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
_COMMAND_TAGS = re.compile(r"</?command-(?:name|message|args)>")

_WORD = re.compile(r"[\w#.&'!?\-]+|[^\s\w]", re.UNICODE)
_PUNCT = " \t\r\n.,!?;:()[]{}\"'`~-_*…。、！？：；「」『』（）"
_CJK_SPLIT = re.compile(
    r"(お願いします|おねがいします|お願い|ありがとうございます|ありがとう|続けて|進めて|"
    r"で|を|と|番|案|ください|します)"
)
#: A reply or choice longer than this is a task, whatever its words.
MAX_SHORT_CHARS = 40


@attrs.frozen
class Prompt:
    """A prompt's kind and the task it states (``None``: it states none of its own)."""

    kind: str = attrs.field(validator=attrs.validators.in_(PROMPT_KINDS))
    text: str
    task: str | None


def slash_command(text: str) -> str | None:
    """What a slash command asked, ``/name args``, from Claude Code's wrapping; else None."""
    command = _COMMAND.search(text)
    if command is None:
        return None
    args = _COMMAND_ARGS.search(text)
    name = command.group(1).strip()
    if name and not name.startswith("/"):
        name = "/" + name
    asked = f"{name} {args.group(1).strip() if args else ''}".strip()
    return _COMMAND_TAGS.sub("", asked).strip() or None


def template(text: str) -> str | None:
    """What a prompt template's expansion asked (its command or its arguments); else None."""
    for pattern, group in _TEMPLATES:
        m = pattern.match(text)
        if m and m.group(group).strip():
            return m.group(group).strip()[:2000]
    return None


def _words(text: str) -> list[str]:
    norm = unicodedata.normalize("NFKC", text).lower().strip(_PUNCT)
    norm = _CJK_SPLIT.sub(r" \1 ", norm)
    words = (w.strip(_PUNCT) for w in _WORD.findall(norm))
    return [w for w in words if w and not _symbols(w)]


def _symbols(word: str) -> bool:
    """Only symbols (an emoji, an arrow): no word."""
    return all(unicodedata.category(c).startswith("S") or c in "\u200d\ufe0f" for c in word)


def _is_choice(words: Sequence[str]) -> bool:
    picked = [w for w in words if _OPTION.match(w) or w in _APPROVALS]
    return bool(picked) and all(_OPTION.match(w) or w in _APPROVALS or w in _FILLERS for w in words)


def _is_reply(words: Sequence[str]) -> bool:
    return bool(words) and all(w in _REPLIES or w in _FILLERS or w in _APPROVALS for w in words)


def classify(text: str, *, system: bool = False) -> Prompt:
    """The kind of one prompt. ``system``: the client says it wrote the line itself
    (Claude Code's ``promptSource: "system"``)."""
    stripped = strip_context(text) or text.strip()
    if system or stripped.startswith(NOTIFICATION_TAGS):
        return Prompt("notification", stripped, None)
    command = slash_command(stripped) or template(stripped)
    if command is not None:
        return Prompt("slash", command, command)
    if len(stripped) <= MAX_SHORT_CHARS:
        words = _words(stripped)
        if not words:  # only punctuation or emoji: nothing asked
            return Prompt("reply", stripped, None)
        if _is_choice(words):
            return Prompt("choice", stripped, None)
        if _is_reply(words):
            return Prompt("reply", stripped, None)
    return Prompt("task", stripped, stripped)


def conversation_tasks(prompts: Sequence[Prompt]) -> list[str]:
    """The task of each prompt of one conversation, in order: its own when it states one,
    else the last one stated before it (else its own text: nothing was stated yet)."""
    out: list[str] = []
    last: str | None = None
    for p in prompts:
        if p.task is not None and p.kind in ("task", "slash"):
            last = p.task
            out.append(p.task)
        else:
            out.append(last if last is not None else p.text)
    return out
