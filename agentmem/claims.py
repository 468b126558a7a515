"""A lesson's checkable claims, checked where it is served. Pure functions.

Some lessons state a fact of the machine or the project that can be checked at the
moment they would reach a prompt: "python is not on PATH here: run python3 instead"
claims that ``python`` is missing and ``python3`` is there; "In this project notes.txt is
at docs/notes.txt" claims that ``docs/notes.txt`` exists in the project. A machine
changes (python gets installed) and a project moves its files; a lesson whose claim no
longer holds is wrong now, so it is withheld (GitHub Copilot Memory checks each memory
against the code before use; issue 29).

The claims are read from the lesson's structured rule (``experiences.rule``,
:class:`agentmem.learning.rules.Rule`'s ``claims``: a list of ``[kind, value]`` pairs
that the kind's module writes from its evidence, :func:`agentmem.learning.shell_fixes.claims_of`),
never parsed from its prose. A lesson without claims (a hand-written one, a tool's rule,
one learned before claims were stored) is never withheld here.

Claim kinds:

``on_path``
    A program is on PATH (``python3``); a value with a ``/`` is a path to an
    executable file instead (``/opt/homebrew/bin/gh``, ``~`` expanded).
``not_on_path``
    A program is not on PATH (``python``).
``exists``
    A path exists: relative to the project's root (``docs/notes.txt``,
    ``.config/specs``), or absolute.
``absent``
    A path does not exist yet: "Run mkdir -p out before touch out/a.txt" holds only
    while ``out`` is missing; once it is there, the lesson has nothing to say. A lesson
    of several such folders (``mkdir -p logs out``) is withheld once all of them are there.

Only the standard library and :mod:`json`: the prompt hook's lean path may call it.
Usage, where a lesson is served::

    why = withheld(experience, project_root)        # None: serve it
    if why is not None: skip it (and log why)
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["ABSENT", "CLAIM_KINDS", "EXISTS", "NOT_ON_PATH", "ON_PATH", "claims", "withheld"]

ON_PATH = "on_path"
NOT_ON_PATH = "not_on_path"
EXISTS = "exists"
ABSENT = "absent"
CLAIM_KINDS = (ON_PATH, NOT_ON_PATH, EXISTS, ABSENT)
#: How many claims of one lesson are checked at most (a rule from elsewhere may hold more).
MAX_CLAIMS = 12


def _rule_of(lesson: object) -> Any:
    """The rule of ``lesson``: an object with a ``rule`` attribute (an
    :class:`~agentmem.records.Experience`), a retrieval hit with an ``experience``
    (:class:`~agentmem.retrieval.retriever.Scored`), a
    :class:`~agentmem.learning.rules.Rule` (its ``claims``), a mapping with a ``rule``
    key (a row), or the rule itself (JSON text or a mapping)."""
    if isinstance(lesson, (str, bytes)):
        return lesson
    if isinstance(lesson, Mapping):
        return lesson.get("rule", lesson) if "claims" not in lesson else lesson
    inner = getattr(lesson, "experience", None)  # a retrieval hit (Scored): its experience
    if inner is not None:
        return _rule_of(inner)
    found = getattr(lesson, "claims", None)
    if found is not None:
        return {"claims": found}
    return getattr(lesson, "rule", None)


def claims(lesson: object) -> tuple[tuple[str, str], ...]:
    """The checkable claims a lesson's rule states, ``(kind, value)`` each, in order; a
    malformed rule or claim (not JSON, an unknown kind, an empty value) is left out."""
    rule = _rule_of(lesson)
    if isinstance(rule, bytes):
        rule = rule.decode("utf-8", "replace")
    if isinstance(rule, str):
        try:
            rule = json.loads(rule)
        except ValueError:
            return ()
    if not isinstance(rule, Mapping):
        return ()
    raw = rule.get("claims")
    if not isinstance(raw, (list, tuple)):
        return ()
    out: list[tuple[str, str]] = []
    for c in raw[:MAX_CLAIMS]:
        if not isinstance(c, (list, tuple)) or len(c) != 2:
            continue
        kind, value = c
        if kind in CLAIM_KINDS and isinstance(value, str) and value.strip() and "\0" not in value:
            out.append((kind, value.strip()))
    return tuple(out)


def _which(name: str) -> str | None:
    """:func:`shutil.which`, imported only when a lesson claims a program (the prompt hook
    imports no shutil otherwise)."""
    import shutil

    return shutil.which(name)


def _executable(path: str) -> bool:
    p = os.path.expanduser(path)
    return os.path.isfile(p) and os.access(p, os.X_OK)


def _inside(root: str | os.PathLike[str] | None, path: str) -> str | None:
    """``path`` as a file name to look at: absolute (``~`` expanded) as it is, relative
    under ``root``; None for a relative path without a root or one that leaves it."""
    p = os.path.expanduser(path)
    if os.path.isabs(p):
        return p
    if root is None:
        return None
    base = os.path.realpath(os.fspath(root))
    full = os.path.realpath(os.path.join(base, p))
    if full != base and not full.startswith(base.rstrip(os.sep) + os.sep):
        return None  # ../.. out of the project: not a claim about it
    return full


Root = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None


def _roots(root: Root) -> list[str | os.PathLike[str]]:
    if root is None:
        return []
    if isinstance(root, (str, os.PathLike)):
        return [root]
    return [r for r in root if isinstance(r, (str, os.PathLike))]


def withheld(
    lesson: object,
    root: Root = None,
    *,
    which: Callable[[str], str | None] | None = None,
    exists: Callable[[str], bool] = os.path.exists,
    executable: Callable[[str], bool] = _executable,
) -> str | None:
    """Why ``lesson`` must not be served here, or None (serve it).

    ``lesson``: an :class:`~agentmem.records.Experience` (or a row, or its rule);
    ``root``: the folder relative paths are checked under, or several (the session's
    working directory and its project's root: the claim holds when the path is under
    either); None: a relative path claim is not checked; ``which``, ``exists``
    and ``executable`` are how a program and a path are looked up (tests pass fakes).
    The first claim that fails decides, but ``absent`` claims fail together (all their
    folders there); a claim that cannot be checked (a relative path with no root)
    passes. Never raises for a lesson from elsewhere: an odd claim
    is skipped."""
    look = _which if which is None else which
    stated = claims(lesson)
    made = [v for k, v in stated if k == ABSENT]
    there: list[str] = []  # the folders of ``made`` that are there now
    for kind, value in stated:
        try:
            if kind == ON_PATH:
                if "/" in value:
                    if not executable(value):
                        return f"{value} is not an executable file here"
                elif look(value) is None:
                    return f"{value} is not on PATH here"
            elif kind == NOT_ON_PATH:
                if "/" not in value and look(value) is not None:
                    return f"{value} is on PATH now"
            elif kind in (EXISTS, ABSENT):
                places = [_inside(r, value) for r in _roots(root)] or [_inside(None, value)]
                looked = [p for p in places if p is not None]
                found = any(exists(p) for p in looked)
                if kind == EXISTS and looked and not found:
                    return f"{value} does not exist in this project"
                if kind == ABSENT and found:
                    there.append(value)
        except (OSError, ValueError):
            continue  # a value the OS cannot look up (too long, odd bytes): unchecked
    if made and len(there) == len(made):
        # "mkdir -p logs out": logs may be there already; the lesson holds while out is not
        return f"{' and '.join(there)} exist{'s' if len(there) == 1 else ''} now"
    return None
