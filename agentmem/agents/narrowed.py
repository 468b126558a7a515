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
from . import programs
from .base import Failure, ToolKind, spec_for
from .outcomes import command_line, job_commands, outcome
from .programs import Role
from .shell import Command, parse

__all__ = [
    "inside",
    "narrowed_searches",
    "narrowing_command",
    "norm_folder",
    "significant_parts",
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


def _resolved(word: str, root: str, cwd: str) -> str | None:
    """Path ``word`` (as a call wrote it, relative to ``cwd``) normalised, ``~`` read as
    ``root`` when that is a home folder; None when it cannot be placed (``..``, ``~``
    elsewhere, a relative word with no ``cwd``)."""
    w = word.strip().strip("'\"")
    if not w or w.startswith("-") or ".." in re.split(r"[\\/]", w):
        return None
    if w in ("~", "~/"):
        return root if _HOME.match(root) else None
    if w.startswith("~/"):
        if not _HOME.match(root):
            return None
        p = f"{root}/{w[2:]}"
    elif re.match(r"^(?:/|[A-Za-z]:[\\/])", w):
        p = w
    else:
        if not cwd:
            return None
        p = cwd if w in (".", "./") else f"{cwd}/{w.removeprefix('./')}"
    return norm_folder(p)


def _strictly_in(p: str, root: str) -> bool:
    return root != "/" and p.startswith(root + "/")


def inside(word: str, root: str, cwd: str) -> bool:
    """Whether path ``word`` (as a call wrote it, relative to ``cwd``) lies strictly
    inside folder ``root`` (both normalised)."""
    w = word.strip().strip("'\"")
    if w in (".", "./", "~", "~/"):
        return False
    p = _resolved(w, root, cwd)
    return p is not None and _strictly_in(p, root)


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


def _names(
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
        at = _resolved(path, root, cwd)
        if at is not None and any(_under(at, f) for f, _ in folders):
            return True
    return False


def _glob_timeout(step: Step) -> bool:
    return (
        step.tool == "Glob"
        and not step.success
        and outcome(step).failure is Failure.TIMEOUT
        and isinstance(step.params.get("pattern"), str)
    )


#: Programs whose first operand is a pattern, not a place (unless -e or -f gives it).
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "fd", "fdfind"})


def _places(c: Command) -> list[str]:
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
    if c.program in _PATTERN_FIRST and not given:
        words = words[1:]
    return [w for w in words if w in c.operands]


def _searched(
    step: Step, root: str, cwd: str
) -> tuple[list[tuple[str, bool]], str, tuple[Command, ...]]:
    """The folders strictly inside ``root`` that successful call ``step`` searched or
    listed (``(folder, lists)``: whether it lists), the folder its relative output is
    written from, and the first command that searched one (after the ``cd`` that took it
    there): a Glob given such a ``path``, or a shell command that lists or searches (its
    filters after a pipe left out, a ``cd`` followed)."""
    if step.tool == "Glob":
        path = step.params.get("path")
        p = _resolved(path, root, cwd) if isinstance(path, str) else None
        return ([(p, True)] if p is not None and _strictly_in(p, root) else []), cwd, ()
    found = spec_for(step.tool)
    if found is None or found[1].kind is not ToolKind.SHELL:
        return [], cwd, ()
    script = parse(command_line(found[1], step.params))
    if not script.parsed:
        return [], cwd, ()
    out: list[tuple[str, bool]] = []
    first: tuple[Command, ...] = ()
    at, moved = cwd, None
    for c in job_commands(script):
        if programs.has(c.program, Role.CHDIR):
            to = _resolved(c.operands[0], root, at) if c.operands else None
            at, moved = to or "", c
            continue
        jobs = programs.jobs(c.program)
        if not jobs & {"list", "search"}:
            continue
        places = [p for w in _places(c) if (p := _resolved(w, root, at)) is not None]
        if not _places(c) and at:
            places = [at]
        mine = [(p, "list" in jobs) for p in places if _strictly_in(p, root)]
        if mine and not first:
            first = (c,) if moved is None else (moved, c)
        out += mine
    return out, at, first


def narrowing_command(step: Step, root: str, cwd: str) -> tuple[Command, ...]:
    """The command of shell call ``step`` that searched inside folder ``root`` (``cwd``:
    the run's folder, both normalised), after the ``cd`` that took it there; () if none."""
    return _searched(step, root, cwd)[2]


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
        if path is not None and not isinstance(path, str):
            continue  # no folder we can read
        root = norm_folder(path) if isinstance(path, str) and path.strip() else here
        if not parts or not root or root == "/":
            continue
        for j in range(i + 1, min(len(steps), i + 1 + WINDOW)):
            later = steps[j]
            if not later.success:
                continue
            folders, at, _ = _searched(later, root, here)
            if folders and _names(later.output, parts, folders, root, at):
                out[i] = j
                break
    return out
