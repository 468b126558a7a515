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
narrowed so stays in, failed (:func:`narrowed_searches`), for the ``narrow`` lesson to
read. A search of the same folder again (``find C:\\Users\\me -iname X`` after a Glob of
``C:\\Users\\me``), a narrower one that found nothing the pattern names, or one whose
pattern names nothing (``**/*.py``) teach nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..records import Step
from .base import Failure, ToolKind, spec_for
from .outcomes import command_line, outcome
from .shell import parse

__all__ = ["inside", "narrowed_searches", "norm_folder", "significant_parts"]

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


def inside(word: str, root: str, cwd: str) -> bool:
    """Whether path ``word`` (as a call wrote it, relative to ``cwd``) lies strictly
    inside folder ``root`` (both normalised)."""
    w = word.strip().strip("'\"")
    if not w or w.startswith("-") or w in (".", "./", "~", "~/") or ".." in w.split("/"):
        return False
    if w.startswith("~/"):
        if not _HOME.match(root):
            return False
        p = f"{root}/{w[2:]}"
    elif re.match(r"^(?:/|[A-Za-z]:[\\/])", w):
        p = w
    else:
        if not cwd:
            return False
        p = f"{cwd}/{w.removeprefix('./')}"
    p = norm_folder(p)
    return p.startswith(root + "/") and root != "/"


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
            out += "[" + part[k + 1 : end].replace("\\", "\\\\") + "]"
            k = end
        else:
            out += re.escape(c)
        k += 1
    return re.compile(out, re.IGNORECASE)


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


def _names(output: str, parts: list[str]) -> bool:
    """Whether a line of ``output`` is a path whose components match ``parts`` in order."""
    rx = [_component(p) for p in parts]
    for line in output[:20000].splitlines():
        comps = [c for c in line.strip().replace("\\", "/").split("/") if c]
        k = 0
        for c in comps:
            if k < len(rx) and rx[k].fullmatch(c):
                k += 1
        if k == len(rx):
            return True
    return False


def _glob_timeout(step: Step) -> bool:
    return (
        step.tool == "Glob"
        and not step.success
        and outcome(step).failure is Failure.TIMEOUT
        and isinstance(step.params.get("pattern"), str)
    )


def _searchedinside(step: Step, root: str, cwd: str) -> bool:
    """Whether successful call ``step`` searched or listed a folder strictly inside
    ``root``: a Glob given such a ``path``, or a shell command naming one."""
    if step.tool == "Glob":
        path = step.params.get("path")
        return isinstance(path, str) and inside(path, root, cwd)
    found = spec_for(step.tool)
    if found is None or found[1].kind is not ToolKind.SHELL:
        return False
    script = parse(command_line(found[1], step.params))
    if not script.parsed:
        return False
    return any(inside(o, root, cwd) for c in script.commands for o in c.operands)


def narrowed_searches(steps: Sequence[Step], cwd: str) -> dict[int, int]:
    """{a Glob that timed out: the later call that searched inside its folder and listed
    a path its pattern names} (see the module doc). ``cwd``: the run's folder, the root of
    a Glob given no ``path``."""
    out: dict[int, int] = {}
    here = norm_folder(cwd) if cwd else ""
    for i, step in enumerate(steps):
        if not _glob_timeout(step):
            continue
        parts = significant_parts(str(step.params["pattern"]))
        path = step.params.get("path")
        root = norm_folder(path) if isinstance(path, str) and path.strip() else here
        if not parts or not root or root == "/":
            continue
        for j in range(i + 1, min(len(steps), i + 1 + WINDOW)):
            later = steps[j]
            if not later.success or not _searchedinside(later, root, here):
                continue
            if _names(later.output, parts):
                out[i] = j
                break
    return out
