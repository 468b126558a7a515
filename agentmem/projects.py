"""Projects and machines: where a run happened, and where a lesson is served.

A trajectory imported from a coding agent records its project in
``meta.project``: the git root of the directory the agent worked in, else that
directory (:func:`project_of`). Every run recorded here also records its machine
in ``meta.machine`` (:func:`machine_id`: a salted hash, never the host's name),
unless it names a project folder that does not exist here (a transcript copied
from another machine).

Where a lesson is served, precision first (a lesson served where it is wrong
costs more than a lesson not served). :func:`scope_for` decides from the runs that
support it (the trajectories of the group(s) that proposed it, plus, for a rewrite,
the runs behind the experience it rewrites) and from what its evidence says it is
about (``finding.detail["scope"]``: ``project``, ``machine`` or ``tool``):

1. **a machine fact** (``python`` is not on PATH here): served on the machine of its
   runs, when they all ran on one known machine; else as a project fact, and never
   global (runs of several projects: the newest run's project);
2. **a project fact**, or a lesson whose text is specific to a project
   (:func:`specific_markers`: a path or a file such as ``tests/``, ``src/app.py``,
   ``./run.sh``; the project's own commands, ``make check``, ``npm run e2e``,
   ``python -m myapp``; an identifier that is none of its runs' tools or parameters nor
   a known program; the project's name): served in the project of its runs when they
   are one project (a rewrite whose new runs are another project's: there); a group
   whose own runs span projects makes it global, as before kinds;
3. **a tool's own rule** (everything else: "Edit fails with 'File has not been read
   yet': Read the file first"): global once runs of two projects show it; learned
   from one project's runs, it is served in that project only until then, and a later
   session whose runs in another project confirm it promotes it to global (journaled
   on the operation that confirmed it, undone with its session).

Runs recorded outside any project (the Python API, MCP without a folder, BFCL)
keep every lesson global but machine facts, as before scopes. A context for project
P on machine M gets the global lessons, P's and M's; a context without a project gets
the global ones and M's.

Scopes are stored per learning session in ``experience_scopes``
(:mod:`agentmem.storage.scopes`); the row of the latest applied session counts, so
undoing a session brings back the scope the experience had before. This module is
pure but for :func:`project_of` and :func:`machine_id` (cached), and imports no
heavy modules, so the fast ``context`` path can use it.
"""

# No ``from __future__ import annotations``: the NamedTuple fields of Scope are then
# types, not strings that typing compiles (the first compile() of a process costs the
# prompt hook, which imports this module, about 2 ms).
import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from .files import open_regular

T = TypeVar("T")

__all__ = [
    "GLOBAL",
    "MACHINE",
    "SCOPE_KINDS",
    "Scope",
    "decide_scope",
    "machine_id",
    "project_of",
    "recorded_machine",
    "scope_for",
    "specific_markers",
    "visible_top",
]

#: How a global lesson's scope is shown.
GLOBAL = "global"
#: How a lesson served on one machine is shown.
MACHINE = "machine"
#: What a finding's evidence can say a lesson is about (``finding.detail["scope"]``), and
#: the kinds ``experience_scopes.kind`` holds.
SCOPE_KINDS = ("project", "machine", "tool")

_CACHE: dict[str, str] = {}
_MACHINE: list[str] = []
#: Where a machine's stable identity is read from, first found wins.
_MACHINE_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")


def machine_id() -> str:
    """This machine's identity: ``m-`` and 16 hex digits of a salted SHA-256 of
    ``$AGENTMEM_MACHINE``, else of ``/etc/machine-id``, else of the host name.

    Stable across reboots and processes; not sensitive (the hash names no host and
    cannot be reversed to one). Containers cloned from one image share a machine-id:
    set ``AGENTMEM_MACHINE`` there. Cached per process.
    """
    if _MACHINE:
        return _MACHINE[0]
    raw = os.environ.get("AGENTMEM_MACHINE", "").strip()
    for path in () if raw else _MACHINE_FILES:
        try:
            with open(path, encoding="ascii", errors="replace") as f:
                raw = f.read().strip()
        except OSError:
            continue
        if raw:
            break
    if not raw:
        import socket

        raw = socket.gethostname() or "unknown"
    import hashlib  # here, not at the top: the prompt hook imports this module, and
    # hashlib (OpenSSL) costs it 3-4 MB; it needs a machine id only for machine facts

    _MACHINE.append("m-" + hashlib.sha256(f"agentmem-machine:{raw}".encode()).hexdigest()[:16])
    return _MACHINE[0]


def recorded_machine(meta: Mapping[str, Any]) -> str | None:
    """The machine a run with ``meta`` is recorded as from: its own ``machine``, else this
    machine, unless it names a project folder that does not exist here (a transcript
    from elsewhere: unknown, None)."""
    given = meta.get("machine")
    if isinstance(given, str) and given:
        return given
    where = meta.get("project") or meta.get("cwd")
    if isinstance(where, str) and where and not os.path.isdir(where):
        return None
    return machine_id()


def project_of(cwd: str | os.PathLike[str] | None) -> str | None:
    """The project of a working directory: its git root, else the directory itself.

    A linked worktree of a repository (``git worktree add``) is the repository's project:
    its root is the main worktree's, so the lessons of one checkout (its git-ignored
    paths, its pre-commit checks) are served in the others. The path is made absolute and
    its symbolic links resolved. A directory that does not exist here (a transcript from
    another machine: ``/Users/...``, ``/data/data/com.termux/files/home/...``) is its own
    project, never a folder above it nor the folder the import runs in; a Windows folder
    (``C:\\Users\\...``) read on another OS likewise, as Windows writes it.
    """
    if cwd is None or not str(cwd).strip():
        return None
    raw = str(cwd).strip()
    foreign = _foreign_path(raw)
    if foreign is not None:
        return foreign  # another OS's folder: its own project, never where the import runs
    start = os.path.realpath(os.path.expanduser(raw))
    if start in _CACHE:
        return _CACHE[start]
    found = start
    d = start
    if not os.path.isdir(start):
        # a folder that is gone, inside a repository here (a deleted subfolder, a client's
        # root below a git root): that repository; else a transcript from elsewhere: its
        # own project, as recorded
        here = _repository_above(start)
        own = (
            here
            or _worktree_home(start)
            or (start if os.path.isabs(os.path.expanduser(raw)) else raw)
        )
        _CACHE[start] = own
        return own
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            found = _main_worktree(d) or d
            break
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    _CACHE[start] = found
    return found


def session_project(cwd: str | None, start: str | None = None) -> str | None:
    """The project of a transcript's turn working in ``cwd``, its session having started
    in ``start`` (Claude Code's first working directory of the session). Claude Code's Bash
    tool keeps a ``cd`` of an earlier call, so a turn may work in a subfolder of the
    session's folder. Where the folders exist here, :func:`project_of` of ``cwd`` decides
    (a subfolder of a repository is that repository; a folder of no repository is its own
    project, so that a pause or an exclusion of it holds, and a fact relative to it is
    served there). A transcript from another machine, whose folders do not exist here,
    gives no repository to find: a turn in a subfolder of the session's folder is then the
    session's project (:func:`project_of` of ``start``), as Claude Code files it. Without
    ``start``, or with a ``cwd`` outside it or existing here: :func:`project_of` of
    ``cwd``."""
    where = project_of(cwd)
    if not start or not cwd or not _inside(cwd, start) or os.path.isdir(cwd):
        return where
    if _foreign_path(cwd) is None and _repository_above(os.path.realpath(cwd)):
        return where  # inside a repository here: its root
    return project_of(start) or where


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or below it, compared as their OS writes them (a
    Windows path, on a drive or a ``\\\\server\\share``, in one case; either separator)."""

    def norm(p: str) -> str:
        p = p.strip().replace("\\", "/").rstrip("/")
        return p.lower() if re.match(r"[A-Za-z]:|//[^/]", p) else p

    a, b = norm(path), norm(folder)
    return bool(b) and (a == b or a.startswith(b + "/"))


def _repository_above(path: str) -> str | None:
    """The git root of the nearest existing folder above ``path``, if it has one."""
    d = os.path.dirname(path)
    while d and not os.path.isdir(d):
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
    while d:
        if os.path.exists(os.path.join(d, ".git")):
            return _main_worktree(d) or d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
    return None


#: A Windows folder: ``C:\\Users\\...``, ``C:/Users/...``, ``\\\\server\\share\\...``.
_WINDOWS_PATH = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\[^\\]+\\)")


def _foreign_path(raw: str) -> str | None:
    """A working directory of an OS whose paths this one cannot read (a Windows folder
    on a POSIX machine), normalised as its OS writes it (no trailing separator, the
    drive letter upper-case); None for a path of this OS's kind."""
    if os.name == "nt" or not _WINDOWS_PATH.match(raw):
        return None
    path = raw.replace("/", "\\").rstrip("\\")
    if re.fullmatch(r"[A-Za-z]:", path):
        path += "\\"
    return path[0].upper() + path[1:] if path[1:2] == ":" else path


#: A folder that holds a repository's linked worktrees, one folder each, by the layouts
#: the tools write: ``<repo>/.claude/worktrees/<name>`` (Claude Code) and
#: ``<repo>/.worktrees/<name>`` inside the repository (the repository is the project), and
#: ``<repo>-worktrees/<name>`` (also ``.worktrees``, ``_worktrees``) beside it (that folder is).
_INSIDE_WORKTREES = ((".claude", "worktrees"), (".worktrees",))
_BESIDE_WORKTREES = re.compile(r"(.+)[-_.]worktrees")
#: Names of a folder of many repositories' worktrees (``~/git-worktrees/<repo>/<branch>``,
#: an agent's ``claude-worktrees``): no one repository's.
_SHARED_WORKTREES = frozenset(
    "git my all our shared tmp temp agent agents claude codex cursor conductor".split()
)


def _worktree_home(path: str) -> str | None:
    """The project of a folder that does not exist here and lies in a folder of linked
    worktrees (:data:`_INSIDE_WORKTREES`, :data:`_BESIDE_WORKTREES`): the repository the
    worktrees belong to, or the folder holding them, so that the sessions of one
    repository's worktrees (each removed once merged, or on another machine) are one
    project, as :func:`_main_worktree` makes them where they exist; None otherwise. The
    worktree's own subfolders are the same project. A folder merely named ``worktrees``
    elsewhere (``~/worktrees/<repo>``), or one named for many repositories
    (:data:`_SHARED_WORKTREES`: ``~/git-worktrees/<repo>``), is none."""
    parts = path.split("/")
    for i in range(len(parts) - 2, 0, -1):
        for layout in _INSIDE_WORKTREES:
            n = len(layout)
            if tuple(parts[i - n + 1 : i + 1]) == layout and i - n >= 1:
                return "/".join(parts[: i - n + 1])
        beside = _BESIDE_WORKTREES.fullmatch(parts[i])
        if beside and beside.group(1).lower().lstrip(".") not in _SHARED_WORKTREES:
            return "/".join(parts[: i + 1])
    return None


def _main_worktree(root: str) -> str | None:
    """The main worktree of the linked worktree at ``root`` (whose ``.git`` is a file,
    ``gitdir: <repo>/.git/worktrees/<name>``, beside a ``commondir`` file), the common git
    folder itself for a bare repository; None when ``root`` is no linked worktree."""
    dot = os.path.join(root, ".git")
    if not os.path.isfile(dot):
        return None
    try:
        with open_regular(dot, "r", encoding="utf-8", errors="replace") as f:
            head = f.read(4096).strip()
        if not head.startswith("gitdir:"):
            return None
        gitdir = os.path.join(root, head[len("gitdir:") :].strip())
        common_file = os.path.join(gitdir, "commondir")
        with open_regular(common_file, "r", encoding="utf-8", errors="replace") as f:
            common = os.path.realpath(os.path.join(gitdir, f.read(4096).strip()))
    except OSError:
        return None  # a submodule's .git file (no commondir), or unreadable: its own root
    if not os.path.isdir(common):
        return None
    return os.path.dirname(common) if os.path.basename(common) == ".git" else common


# -- the rule ------------------------------------------------------------------------------

_EXTENSIONS = frozenset(
    "py pyi js mjs cjs ts tsx jsx json toml yaml yml md rst txt cfg ini conf sh bash zsh go rs "
    "java kt c h cc cpp hpp cs rb php swift sql html css scss lock env xml csv ipynb gradle "
    "proto tf dockerfile makefile".split()
)
_SLASH_WORDS = frozenset(
    "and/or either/or input/output read/write true/false yes/no on/off i/o".split()
)
_TOKEN = r"[^\s,;()\[\]{}\"'`=<>]+"  # compiled on first use (re's cache)
_NOT_IDENTIFIERS = frozenset({"e.g", "i.e", "etc", "vs"})


def _known_words() -> frozenset[str]:
    from .agents.programs import domain_names
    from .domains import BUILTIN_TOOLS

    return frozenset(BUILTIN_TOOLS) | domain_names()


def specific_markers(
    text: str, *, project: str | None = None, vocabulary: Collection[str] = ()
) -> list[str]:
    """What in ``text`` is specific to a project (empty: nothing, the lesson is generic).

    ``vocabulary``: the tools and parameter names of the runs behind the lesson,
    which name how a tool works, not a project.
    """
    known = _known_words() | {v.lower() for v in vocabulary}
    found: list[str] = []
    from .agents.programs import project_commands

    for m in project_commands().finditer(text):
        found.append(m.group(0))
    for raw in re.findall(_TOKEN, text):
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


class Scope(NamedTuple):
    """Where a lesson is served: ``kind`` (``project``, ``machine``, ``tool``; None for a
    global lesson of no kind, or a row written before kinds), the one ``project`` or
    ``machine`` it is served in (both None: everywhere), and why."""

    kind: str | None
    project: str | None
    machine: str | None
    reason: str

    @property
    def label(self) -> str:
        """``project NAME``, ``machine`` or ``global``, as ``agentmem experiences`` shows it."""
        if self.machine is not None:
            return MACHINE
        if self.project is not None:
            return f"project {os.path.basename(self.project.rstrip('/')) or self.project}"
        return GLOBAL


def scope_for(
    text: str,
    support: Collection[str],
    *,
    machines: Collection[str] = (),
    about: str | None = None,
    vocabulary: Collection[str] = (),
    home: str | None = None,
    newest: str | None = None,
) -> Scope:
    """Where a lesson is served, by the rule in the module doc.

    ``support``: the projects of the runs behind it, ``""`` for runs recorded outside
    any project; ``machines``: their machines, ``""`` for unknown; ``about``: what its
    evidence says it is about (one of :data:`SCOPE_KINDS`, None: read from its text);
    ``home``: where a project's fact that runs of several projects support is served (the
    project of the runs that found it now), never everywhere. A machine's fact whose runs
    ran on unknown or several machines is a fact of where they ran, a project's, and never
    global: of runs of several projects, it is served in ``home`` or else in ``newest``
    (the project of the newest run behind it).
    """
    projects = sorted(set(support))
    if about == "machine":
        known = set(machines)
        if len(known) == 1 and "" not in known:
            return Scope(
                "machine", None, next(iter(known)), "a fact about the machine its runs ran on"
            )
        # runs of unknown or several machines: where they ran; "Git Bash here" from two
        # Windows machines is still no fact of a Mac
        where = [p for p in projects if p]
        if len(where) > 1 and home not in where and newest in where:
            why = f"a machine's fact of runs in {len(where)} projects: served in the newest run's"
            return Scope("project", newest, None, why)
        about = "project"
    if not projects or "" in projects:
        return Scope(None, None, None, "supported by runs recorded outside any project")
    one = projects[0] if len(projects) == 1 else None
    markers = [] if about == "tool" else specific_markers(text, project=one, vocabulary=vocabulary)
    if about == "project" or markers:
        if one is None and home in projects:
            why = f"a project's fact of runs in {len(projects)} projects: served where found now"
            return Scope("project", home, None, why)
        if one is None:
            return Scope("project", None, None, f"supported by runs in {len(projects)} projects")
        shown = ", ".join(markers[:4]) + (", ..." if len(markers) > 4 else "")
        why = (
            f"learned from one project's runs and names {shown}"
            if markers
            else "a fact about this project"
        )
        return Scope("project", one, None, why)
    if one is None:
        return Scope("tool", None, None, f"the same rule holds in runs of {len(projects)} projects")
    return Scope(
        "tool",
        one,
        None,
        "a tool's rule seen in one project's runs: served there until runs of a second "
        "project show it",
    )


def decide_scope(
    text: str, support: Collection[str], *, vocabulary: Collection[str] = ()
) -> tuple[str | None, str]:
    """(the project a lesson is served in, or None for everywhere; why): :func:`scope_for`
    of a lesson whose evidence says nothing of what it is about."""
    s = scope_for(text, support, vocabulary=vocabulary)
    return s.project, s.reason


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
