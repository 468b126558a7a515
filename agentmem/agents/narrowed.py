"""A whole-tree search that ran out of time, then a narrower one that found it.

Claude Code's Glob gives up after 20 seconds ("Ripgrep search timed out after 20
seconds"): over a home folder, or a project with huge data folders, a ``**`` pattern
never finishes. A run shows the cure when a later call, within the next six, searched a
folder strictly inside the one that timed out (a Glob given that folder as ``path``, or a
shell call naming it: ``find api-gateway/src -name '*backup*'``, ``ls ~/Desktop``) and
listed a path that the failed pattern names (every component of the pattern that holds
three or more literal characters, in order: ``**/developer-portal/**/UserDetail*.tsx`` is
``developer-portal`` then ``UserDetail*.tsx``).

A time-out is no misuse, so the learning view leaves such calls out; one that a run
narrowed so stays in, failed (:func:`~agentmem.agents.outcomes.narrowed_searches`, which
reads runs with this module's pieces), for the ``narrow`` lesson to read. A search of the
same folder again (``find C:\\Users\\me -iname X`` after a Glob of ``C:\\Users\\me``), a
narrower one that found nothing the pattern names, or one whose
pattern names nothing (``**/*.py``) teach nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from . import programs
from .shell import Command

__all__ = [
    "WINDOW",
    "glob_root",
    "is_home",
    "names",
    "norm_folder",
    "places",
    "resolved",
    "significant_parts",
    "strictly_in",
]

#: How many calls after a time-out the narrower search may come.
WINDOW = 6
#: A folder that is a user's home (``/home/ken``, ``/Users/me``, ``C:/Users/me``, ``/root``).
_HOME = re.compile(r"^(?:/home/[^/]+|/users/[^/]+|[a-z]:/users/[^/]+|/root)$")


def norm_folder(path: str) -> str:
    """A path as this module compares them: forward slashes, a drive as ``c:/`` (Git
    Bash's ``/c/`` too), lower case, no trailing slash."""
    p = path.strip().strip("'\"").replace("\\", "/")
    m = re.match(r"^/([A-Za-z])(/|$)", p)
    if m and not p.startswith(("/home", "/root", "/usr", "/tmp", "/opt", "/etc", "/var")):
        p = f"{m.group(1)}:/{p[3:]}"
    return p.lower().rstrip("/") or "/"


def resolved(word: str, root: str, cwd: str) -> str | None:
    """Path ``word`` (as a call wrote it, relative to ``cwd``) normalised, ``~`` read as
    ``root`` when that is a home folder; None when it cannot be placed (``..``, ``~``
    elsewhere, a relative word with no ``cwd``)."""
    w = word.strip().strip("'\"")
    if not w or w.startswith("-") or ".." in re.split(r"[\\/]", w):
        return None
    if w in ("~", "~/"):
        return root if is_home(root) else None
    if w.startswith("~/"):
        if not is_home(root):
            return None
        p = f"{root}/{w[2:]}"
    elif re.match(r"^(?:/|[A-Za-z]:[\\/])", w):
        p = w
    else:
        if not cwd:
            return None
        p = cwd if w in (".", "./") else f"{cwd}/{w.removeprefix('./')}"
    return norm_folder(p)


def strictly_in(p: str, root: str) -> bool:
    """Whether normalised path ``p`` lies strictly inside normalised folder ``root``."""
    return root != "/" and p.startswith(root + "/")


def is_home(folder: str) -> bool:
    """Whether normalised ``folder`` is a user's home folder (:data:`_HOME`)."""
    return _HOME.match(folder) is not None


def glob_root(params: Mapping[str, Any], cwd: str) -> str | None:
    """The folder a Glob searched, normalised: its ``path``, or ``cwd`` (normalised)
    when it gives none; None when its ``path`` is no string."""
    path = params.get("path")
    if path is not None and not isinstance(path, str):
        return None
    return norm_folder(path) if isinstance(path, str) and path.strip() else cwd


@functools.lru_cache(maxsize=1024)
def _component(part: str) -> re.Pattern[str]:
    """One component of a glob as a regex (``*``, ``?``, ``[...]``, ``{a,b}``)."""
    out, k = "", 0
    while k < len(part):
        c = part[k]
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "{" and "}" in part[k:]:
            end = part.index("}", k)
            out += "(?:" + "|".join(re.escape(x) for x in part[k + 1 : end].split(",")) + ")"
            k = end
        elif c == "[" and "]" in part[k + 1 :]:
            end = part.index("]", k + 1)
            body = part[k + 1 : end].replace("\\", "\\\\")
            out += "[" + ("^" + body[1:] if body.startswith("!") else body) + "]"
            k = end
        else:
            out += re.escape(c)
        k += 1
    try:
        return re.compile(out, re.IGNORECASE)
    except re.error:  # an odd class (``[]]``, ``[z-a]``): the component as written
        return re.compile(re.escape(part), re.IGNORECASE)


def significant_parts(pattern: str) -> list[str]:
    """The components of a glob that name something: three or more literal characters
    outside wildcards and braces (``backup*.ts``, ``developer-portal``; not ``**`` nor
    ``*.{js,ts}``)."""
    parts = []
    for part in pattern.replace("\\", "/").split("/"):
        literal = re.sub(r"\{[^}]*\}|\[[^\]]*\]|[*?]", "", part)
        if len(literal.strip(".")) >= 3:
            parts.append(part)
    return parts


def _line_path(line: str) -> str:
    """The path a line of output names: a grep hit's (``src/a.ts:12: text``) or an ``ls
    -R`` heading's (``src/lib:``) without what follows its colon."""
    p = line.strip().replace("\\", "/")
    m = re.match(r"^((?:[A-Za-z]:/)?[^:]*)", p)
    return (m.group(1) if m else p).strip()


def _under(path: str, folder: str) -> bool:
    """Whether normalised ``path`` lies in ``folder`` (normalised; its components may be
    globs, as ``ls ~/Desktop/*calc*`` writes them)."""
    pc, fc = path.split("/"), folder.split("/")
    return len(pc) >= len(fc) and all(
        _component(f).fullmatch(c) for f, c in zip(fc, pc[: len(fc)], strict=False)
    )


def names(
    output: str, parts: list[str], folders: list[tuple[str, bool]], root: str, cwd: str
) -> bool:
    """Whether a line of ``output`` is a path whose components match ``parts`` in order,
    and lies in one of ``folders`` (a path relative to ``cwd``, or a bare name listed by
    a command that lists a folder: ``(folder, lists)``)."""
    rx = [_component(p) for p in parts]
    for line in output[:20000].splitlines():
        path = _line_path(line)
        comps = [c for c in path.split("/") if c]
        k = 0
        for c in comps:
            if k < len(rx) and rx[k].fullmatch(c):
                k += 1
        if k < len(rx):
            continue
        if "/" not in path:  # a name a listing printed: in the folder it listed
            if any(lists for _, lists in folders):
                return True
            continue
        at = resolved(path, root, cwd)
        if at is not None and any(_under(at, f) for f, _ in folders):
            return True
    return False


def places(c: Command) -> list[str]:
    """The words of ``c`` that name where it searched or listed: not a pattern option's
    value (``-name X``, ``-path X``), nor find's expression, nor a search's pattern."""
    if c.program == "find":
        out = []
        for w in c.args:
            if w.startswith(("-", "!", "(")):
                break
            out.append(w)
        return out
    values = programs.pattern_options(c.program)
    words: list[str] = []
    for k, w in enumerate(c.args):
        if w.startswith("-") or (k and c.args[k - 1] in values):
            continue
        words.append(w)
    given = any(f.split()[0] in ("-e", "-f", "--regexp", "--file", "--files") for f in c.flags)
    if programs.pattern_first(c.program) and not given:
        words = words[1:]
    return [w for w in words if w in c.operands]
