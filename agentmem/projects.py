"""Projects: where a run happened, and which project a lesson is served in.

A trajectory imported from a coding agent records its project in
``meta.project``: the git root of the directory the agent worked in, else that
directory (:func:`project_of`).

The scope rule, precision first (a lesson served where it is wrong costs more than
a lesson not served). A lesson that a learning session adds or rewrites is served
only in project P when both hold:

1. every run that supports it was recorded in P: the trajectories of the group(s)
   that proposed it, plus, for a rewrite, the runs behind the experience it
   rewrites (an experience learned before scopes existed, or added by hand, counts
   as supported outside any project);
2. its text is specific to a project (:func:`specific_markers`): it names a path or
   a file (``tests/``, ``src/app.py``, ``./run.sh``), the project's own commands
   (``make check``, ``npm run e2e``, ``tox -e lint``, ``python -m myapp``), an
   identifier that is none of its runs' tools or parameters nor a known program
   (``test_login``, ``UserService``, ``myapp.settings``), or the project's name.

Every other lesson is global: generic lessons (how a tool behaves: "if git push is
rejected, pull --rebase first") and lessons supported by runs in two or more
projects, or by runs recorded outside any project. A context for project P gets
the global lessons and P's; a context without a project gets the global ones.

Scopes are stored per learning session in ``experience_scopes``
(:mod:`agentmem.storage.scopes`); the row of the latest applied session counts, so
undoing a session brings back the scope the experience had before. This module is
pure and imports no heavy modules, so the fast ``context`` path can use it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

T = TypeVar("T")

__all__ = ["GLOBAL", "decide_scope", "project_of", "specific_markers", "visible_top"]

#: How a global lesson's scope is shown.
GLOBAL = "global"

_CACHE: dict[str, str] = {}


def project_of(cwd: str | os.PathLike[str] | None) -> str | None:
    """The project of a working directory: its git root, else the directory itself.

    The path is made absolute and its symbolic links resolved. A directory that
    does not exist here (a transcript from another machine) is its own project.
    """
    if cwd is None or not str(cwd).strip():
        return None
    start = os.path.realpath(os.path.expanduser(str(cwd)))
    if start in _CACHE:
        return _CACHE[start]
    found = start
    d = start
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            found = d
            break
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    _CACHE[start] = found
    return found


# -- the rule ------------------------------------------------------------------------------

_EXTENSIONS = frozenset(
    "py pyi js mjs cjs ts tsx jsx json toml yaml yml md rst txt cfg ini conf sh bash zsh go rs "
    "java kt c h cc cpp hpp cs rb php swift sql html css scss lock env xml csv ipynb gradle "
    "proto tf dockerfile makefile".split()
)
_SLASH_WORDS = frozenset(
    "and/or either/or input/output read/write true/false yes/no on/off i/o".split()
)
_PROJECT_COMMANDS = re.compile(
    r"\b(?:make|just|ninja|task)\s+[A-Za-z][\w:.-]*"
    r"|\b(?:npm|pnpm|yarn|bun)\s+run\s+[\w:.-]+"
    r"|\btox\s+-e\s*\S+|\bnox\s+-s\s*\S+"
    r"|\b(?:poetry|uv|pdm|hatch|pipenv)\s+run\s+\S+"
    r"|\bcargo\s+(?:xtask|make)\b"
    r"|\bpython[0-9.]*\s+-m\s+(?!(?:pytest|pip|venv|unittest|http\.server|json\.tool)\b)[\w.]+",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"[^\s,;()\[\]{}\"'`=<>]+")
_NOT_IDENTIFIERS = frozenset({"e.g", "i.e", "etc", "vs"})


def _known_words() -> frozenset[str]:
    from .domains import BUILTIN_TOOLS, PROGRAMS

    return frozenset(BUILTIN_TOOLS) | frozenset(PROGRAMS)


def specific_markers(
    text: str, *, project: str | None = None, vocabulary: Collection[str] = ()
) -> list[str]:
    """What in ``text`` is specific to a project (empty: nothing, the lesson is generic).

    ``vocabulary``: the tools and parameter names of the runs behind the lesson,
    which name how a tool works, not a project.
    """
    known = _known_words() | {v.lower() for v in vocabulary}
    found: list[str] = []
    for m in _PROJECT_COMMANDS.finditer(text):
        found.append(m.group(0))
    for raw in _TOKEN.findall(text):
        t = raw.rstrip(".:!?…")
        low = t.lower()
        if not t or t.startswith("-") or low in known or low in _NOT_IDENTIFIERS:
            continue
        if "://" in t:
            found.append(t)
        elif "/" in t:
            if low not in _SLASH_WORDS and len(t) > 1:
                found.append(t)
        elif re.fullmatch(r"[\w.-]*\w\.([A-Za-z0-9]+)", t) and t.rsplit(".", 1)[1].lower() in (
            _EXTENSIONS
        ):
            found.append(t)
        elif re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", t):
            found.append(t)  # a dotted name: a module, a setting
        elif re.fullmatch(r"\w+", t) and (
            ("_" in t.strip("_") and re.search(r"[A-Za-z]", t)) or re.search(r"[a-z][A-Z]", t)
        ):
            found.append(t)  # snake_case or camelCase: an identifier of the code
    if project:
        name = os.path.basename(project.rstrip("/\\"))
        if len(name) >= 3 and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text, re.I):
            found.append(name)
    return list(dict.fromkeys(found))


def decide_scope(
    text: str, support: Collection[str], *, vocabulary: Collection[str] = ()
) -> tuple[str | None, str]:
    """(the project a lesson is served in, or None for everywhere; why), by the rule above.

    ``support``: the projects of the runs behind the lesson, ``""`` for runs
    recorded outside any project.
    """
    projects = sorted(set(support))
    if "" in projects:
        return None, "supported by runs recorded outside any project"
    if len(projects) != 1:
        return None, f"supported by runs in {len(projects)} projects"
    markers = specific_markers(text, project=projects[0], vocabulary=vocabulary)
    if not markers:
        return None, "generic: names no path, command or identifier of a project"
    shown = ", ".join(markers[:4]) + (", ..." if len(markers) > 4 else "")
    return projects[0], f"learned from one project's runs and names {shown}"


def visible_top(
    search: Callable[[int], Sequence[T]], k: int, hidden: Collection[int], id_of: Callable[[T], int]
) -> list[T]:
    """The best ``k`` hits of ``search`` (best first) that are not ``hidden``.

    ``search(n)`` returns the top ``n`` hits in order. It asks for a few more than
    ``k`` first and for more only when hidden hits crowd out the visible ones, up to
    ``k + len(hidden)``, which always suffices: the answer is exact.
    """
    if not hidden:
        return list(search(k))[:k]
    limit = k + len(hidden)
    n = min(limit, 2 * k + 8)
    while True:
        hits = list(search(n))
        visible = [h for h in hits if id_of(h) not in hidden]
        if len(visible) >= k or len(hits) < n or n >= limit:
            return visible[:k]
        n = min(limit, n * 4)
