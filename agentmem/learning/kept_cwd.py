"""A shell that keeps its working directory between calls (Claude Code's Bash:
:attr:`agentmem.agents.ToolSpec.keeps_cwd`): a call failed because the shell still stood
in a subfolder that an earlier ``cd`` moved it to. Pure logic: it reads a run and says
which calls slipped; :mod:`.corrections` turns each slip into the client's one lesson.

Where the shell stood at a call is read, most direct first, from:

- the client's own note in a failed call's error ("your current working directory is
  /w/app/backend", which Claude Code's Grep and Glob add);
- the folder the transcript recorded for the call (Claude Code writes the shell's folder
  on every line; the importer keeps a call's when it is not the turn's, ``meta["cwds"]``,
  and a turn's when it is not the session's, ``meta["session_cwd"]``: the session's
  folder is then the project's top);
- the last ``cd`` of the shell before the call, when it worked and went into a folder of
  the session's own (relative, or under the session's folder);
- for ``cd D`` again, a ``pwd`` between the failure and its fix that printed ``.../D``.

Two faces, one lesson:

``again``
    ``cd D && X`` failed naming D as missing while the shell stood in D already, and X
    alone worked within three calls (or, where the transcript records the shell in D,
    ran there: its failure names no missing path).
``root``
    a path written from the session's folder (``backend/src/app.ts``, ``./services/api/...``)
    failed as missing, in the shell ("No such file or directory" naming it) or in a client
    tool that resolves a relative path against the shell's folder (Grep, Glob, Read: "Path
    does not exist"), while the shell stood in a subfolder; within three calls the same
    tool worked on the same path from the session's folder (``/w/app/backend/src/app.ts``,
    or ``cd /w/app && ...``).

Nothing is learned when the shell never left the session's folder, when the path is not
found from the session's folder either (the file is missing), or when the run kept using
paths from the folder it moved to (nothing failed).
"""

from __future__ import annotations

import re

import attrs

from ..agents import ToolKind, is_shell, spec_for
from ..agents import programs as _programs
from ..agents.outcomes import command_line
from ..agents.shell import parse
from ..records import Step, Trajectory
from .findings import lesson_text


@attrs.frozen
class Slip:
    """Call ``failed`` failed because ``shell`` stood in ``folder`` (from an earlier
    ``cd``); call ``fixed`` did the same job from the right folder. ``face``: ``again`` or
    ``root`` (module doc); ``why`` tells it, with ``{q}`` for the quoted error."""

    face: str
    failed: int
    fixed: int
    shell: str
    folder: str
    why: str


#: The error the lesson's rule records (its text quotes none: the slips' errors differ,
#: "No such file", "Path does not exist", and one text lets Stage 3 merge them).
KEPT_CWD_ERROR = "No such file"
#: A missing file or folder, as a shell or a client tool reports it.
_MISSING = re.compile(r"(?i)no such file|not found|path does not exist|does not exist")
#: Claude Code's note in a client tool's error: the folder its shell stands in.
_NOTE = re.compile(r"current working directory is ([^\s<]+)")
#: An absolute path, a home-relative one or a variable's (not from the project's top).
_ROOTED = re.compile(r"[/~$\\]|[A-Za-z]:")


def _norm(path: str) -> str:
    """A folder as compared: ``/`` separators, no trailing one, a drive's path in one case."""
    p = path.replace("\\", "/")
    p = p.rstrip("/") or p
    return p.lower() if re.match(r"[A-Za-z]:", p) else p


def _below(where: str, home: str) -> str | None:
    """``where`` relative to ``home`` when it is strictly under it, else None."""
    w, h = _norm(where), _norm(home)
    return w[len(h) + 1 :] if h and w.startswith(h + "/") and len(w) > len(h) + 1 else None


def _home(t: Trajectory) -> str:
    """The session's folder: where it started (``session_cwd``, when a turn starts in a
    folder an earlier turn's ``cd`` left the shell in), else the turn's."""
    home = t.meta.get("session_cwd") or t.meta.get("cwd") or ""
    return str(home).rstrip("/\\")


def _recorded(t: Trajectory, i: int) -> str | None:
    """The folder the transcript recorded for call ``i``: its own (``cwds``), else the
    turn's when that is not the session's (``session_cwd``); None when not recorded."""
    cwds = t.meta.get("cwds")
    where = cwds.get(str(i)) if isinstance(cwds, dict) else None
    if isinstance(where, str) and where:
        return where
    turn = t.meta.get("cwd")
    return turn if t.meta.get("session_cwd") and isinstance(turn, str) and turn else None


def _noted(s: Step) -> str | None:
    m = None if s.success else _NOTE.search(s.output)
    return m.group(1).rstrip(".") if m else None


def _line(s: Step) -> str | None:
    found = spec_for(s.tool)
    if found is None or found[1].command is None:
        return None
    return command_line(found[1], s.params)


def keeping_shell(tool: str) -> str | None:
    """The tool that keeps the working directory in ``tool``'s client: ``tool`` itself
    for such a shell, the client's shell for its other tools, else None."""
    found = spec_for(tool)
    if found is None:
        return None
    if found[1].keeps_cwd:
        return tool
    return next((n for n, s in found[0].tools.items() if s.keeps_cwd), None)


def kept_cwd_text(shell: str) -> str:
    """The one lesson of every slip of ``shell``'s folder: the client's search tools
    (Claude Code's Glob and Grep) resolve a relative path from that folder too, as their
    own error says ("Note: your current working directory is ...")."""
    found = spec_for(shell)
    search = (
        sorted(n for n, s in found[0].tools.items() if s.kind == ToolKind.SEARCH) if found else []
    )
    also = f", and {' and '.join(search)} resolve relative paths from it" if search else ""
    return lesson_text(
        f"{shell} keeps the working directory between calls{also}: after a cd into a "
        "subfolder, project root paths are not found; use absolute paths."
    )


def leading_cd(s: Step) -> tuple[str, str] | None:
    """(the folder, the rest of the line) of a shell call that starts ``cd D && ...`` with a
    relative folder D, else None."""
    line = _line(s)
    if line is None:
        return None
    m = re.match(r"\s*cd\s+(['\"]?)([\w.][\w./-]*)\1\s*&&\s*(.+)", line, re.S)
    if m is None or m.group(2) in (".", "..", "-") or m.group(2).startswith("../"):
        return None
    return m.group(2).rstrip("/"), m.group(3).strip()


def chdirs(s: Step) -> bool:
    """Whether a shell call changes its folder (``cd``, ``pushd``)."""
    line = _line(s)
    if line is None:
        return False
    return any(_programs.has(c.program, _programs.Role.CHDIR) for c in parse(line).commands)


def _cd_target(s: Step) -> str | None:
    """The folder of the last ``cd`` of a shell call with one operand."""
    line = _line(s)
    cds = [c for c in parse(line).commands if c.program == "cd"] if line is not None else []
    ops = cds[-1].operands if cds else ()
    return ops[0] if len(ops) == 1 else None


def _first_word(text: str) -> str:
    """The word ``text`` starts with, up to a blank or a shell operator."""
    return re.split(r"[\s;&|()]", text, maxsplit=1)[0]


def _top_level_chdir(line: str) -> bool:
    """Whether a change of folder in ``line`` may be the shell's own: a ``cd``, ``pushd``
    or ``popd`` word outside quotes and brackets. ``(cd D && X)``, ``bash -c 'cd D && X'``
    and ``$(cd D; pwd)`` run in a subshell and leave the shell where it stood."""
    depth, quote = 0, ""
    for k, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif (
            depth == 0
            and (k == 0 or line[k - 1] in " \t\n;&|{")
            and _programs.has(_first_word(line[k:]), _programs.Role.CHDIR)
        ):
            return True
    return False


def last_cd(t: Trajectory, i: int, tool: str, home: str) -> tuple[int, str] | None:
    """The last call of ``tool`` before call ``i`` that changed folder: (its index, the
    folder) when it worked and went into a folder of the session's own (relative, or
    under the session's folder ``home``), else None. A ``cd`` in a subshell moved
    nothing (:func:`_top_level_chdir`); one whose own error says its folder is missing
    (``cd D; ls`` that worked) moved nothing either, and proves nothing."""
    for k in range(i - 1, -1, -1):
        s = t.steps[k]
        if s.tool != tool or not chdirs(s):
            continue
        if not _top_level_chdir(_line(s) or ""):
            continue
        op = _cd_target(s) if s.success else None
        if op is None or _cd_refused(s.output, op):
            return None
        op = op.rstrip("/")
        if op in (".", "", "-", home) or op.startswith(".."):
            return None
        if _ROOTED.match(op):
            below = _below(op, home) if home else None
            return (k, below) if below else None
        return k, op
    return None


def _stood_in(t: Trajectory, i: int, shell: str, home: str) -> tuple[int | None, str] | None:
    """Where ``shell`` stood at call ``i``, when a subfolder of the session's folder
    ``home``: (the call that moved it, None when the record says so; the subfolder)."""
    where = _noted(t.steps[i]) or _recorded(t, i)
    if where is not None:
        below = _below(where, home) if home else None
        return (None, below) if below else None
    return last_cd(t, i, shell, home)


def slips(t: Trajectory) -> list[Slip]:
    """The run's calls that failed only because the shell kept a folder (module doc), in
    the order of their failed calls: ``again`` before ``root`` for one call."""
    out = _again(t)
    done = {s.failed for s in out}
    out += [s for s in _root(t) if s.failed not in done]
    return sorted(out, key=lambda s: s.failed)


def _word(i: int) -> str:
    return f"call {i + 1}"


def _source(k: int | None) -> str:
    return "the transcript records it" if k is None else f"{_word(k)} went there"


def _inside(where: str, home: str, folder: str) -> bool:
    """Whether the shell's folder ``where`` is ``folder`` below the session's folder
    ``home`` (``/w/app/packages/api`` for ``api``); not the session's folder itself, which
    may bear the name (a project called ``api``: ``cd api`` there fails for want of
    ``api/api``, no kept folder)."""
    below = _below(where, home) if home else _norm(where)
    return below is not None and (below == folder or below.endswith("/" + folder))


def _pwd_in(t: Trajectory, tool: str, lo: int, hi: int, folder: str, home: str = "") -> bool:
    """Whether a ``pwd`` of ``tool`` between calls ``lo`` and ``hi`` printed ``.../folder``
    below the session's folder ``home`` (before any change of folder)."""
    for s in t.steps[lo:hi]:
        if s.tool == tool and chdirs(s):
            return False
        if s.tool == tool and s.success and (_line(s) or "").strip() == "pwd":
            last = (s.output.strip().splitlines() or [""])[-1]
            if _norm(last).endswith("/" + folder) and _inside(last, home, folder):
                return True
    return False


def _again(t: Trajectory) -> list[Slip]:
    """``cd D && X`` failed naming D while the shell stood in D; X alone then worked."""
    out: list[Slip] = []
    steps = t.steps
    home = _home(t)
    for i, w in enumerate(steps):
        found = spec_for(w.tool)
        if w.success or found is None or not found[1].keeps_cwd:
            continue
        lead = leading_cd(w)
        if lead is None:
            continue
        folder, rest = lead
        if not _cd_refused(w.output, folder):
            continue
        line = found[1].command
        where = _recorded(t, i)
        fixed = next(
            (
                j
                for j in range(i + 1, min(len(steps), i + 4))
                if steps[j].tool == w.tool
                and line is not None
                and str(steps[j].params.get(line, "")).strip() == rest
                and (steps[j].success or (where is not None and _ran_there(steps[j])))
            ),
            None,
        )
        if fixed is None or any(s.tool == w.tool and chdirs(s) for s in steps[i + 1 : fixed]):
            continue  # (X alone ran in another folder: no proof of where the cd failed)
        if where is not None:
            stood = _inside(where, home, folder)
            how = "the transcript records the call in it"
        elif _pwd_in(t, w.tool, i + 1, fixed, folder, home):
            stood, how = True, "pwd then printed it"
        else:
            went = last_cd(t, i, w.tool, home)
            stood = went is not None and (went[1] == folder or went[1].endswith("/" + folder))
            how = _source(went[0]) if went else ""
        if not stood:
            continue
        why = (
            f"the shell stood in {folder} ({how}); {_word(i)} ran cd {folder} again and failed "
            f"('{{q}}'); the same command without the cd "
            f"{'worked' if steps[fixed].success else 'ran there'} ({_word(fixed)})"
        )
        out.append(Slip("again", i, fixed, w.tool, folder, why))
    return out


def _ran_there(s: Step) -> bool:
    """Whether a call that failed still ran where it stood: its output names no missing
    file or folder (``tsc`` reporting type errors after ``cd D && tsc`` failed on the cd).
    Taken as the fix of a ``cd D`` again only where the transcript records the shell in
    D: the record is the proof, and X alone is the agent's correction, whatever X found."""
    return not (_MISSING.search(s.output[:2000]) or _PATH_WORDS.search(s.output[:2000]))


#: A failure for want of a path, worded otherwise than :data:`_MISSING` ("cannot find the
#: path", ``ENOENT``, "could not find `Cargo.toml`", "can't open file"): X alone that said
#: so did not prove it ran where it should (review 26).
_PATH_WORDS = re.compile(
    r"(?i)\b(?:cannot|can't|could ?not|couldn't|unable to) (?:find|open|locate|access|stat)\b"
    r"|\bENOENT\b|\bnot a directory\b|\bno such\b"
)


def _cd_refused(output: str, folder: str) -> bool:
    """Whether the shell's ``cd`` itself said ``folder`` is missing, on one line of the
    output ("(eval):cd:1: no such file or directory: D", "bash: cd: D: No such file ..."),
    not a later command of the line."""
    return any(
        folder in ln and re.search(r"\bcd\b", ln) and re.search(r"(?i)no such file|not found", ln)
        for ln in output.splitlines()
    )


def _root_paths(w: Step) -> list[str]:
    """The relative paths with a folder (``a/b``) that a failed call named and that its
    output reports missing: a shell command's operands (``./services/api/...`` as
    ``./services/api``), or a client tool's path."""
    if not _MISSING.search(w.output):
        return []
    line = _line(w)
    if line is not None:
        named = [o for c in parse(line).commands for o in c.operands]
    else:
        found = spec_for(w.tool)
        key = found[1].path if found is not None and found[1].path else "path"
        value = w.params.get(key)
        named = [value] if isinstance(value, str) else []
    out = []
    for o in named:
        p = o.removesuffix("...").rstrip("/")
        bare = p.removeprefix("./")
        if "/" in bare.strip("/") and not _ROOTED.match(bare) and p in w.output:
            out.append(bare)
    return out


def _rooted(s: Step, home: str, paths: list[str]) -> bool:
    """Whether a call named one of ``paths`` from the session's folder ``home``: under it
    as an absolute path (a client tool's path, or a folder above it), or after ``cd
    HOME &&``."""
    line = _line(s)
    if line is None:
        found = spec_for(s.tool)
        key = found[1].path if found is not None and found[1].path else "path"
        value = s.params.get(key)
        if not isinstance(value, str):
            return False
        v = _norm(value)
        return any(
            v == _norm(f"{home}/{p}") or v.startswith(_norm(f"{home}/{p}") + "/") for p in paths
        )
    # a Windows folder is compared with / separators and in one case (C:\w\app, c:/w/app)
    drive = re.match(r"[A-Za-z]:", home) is not None
    h, ln = _norm(home), line.replace("\\", "/")
    ln = ln.lower() if drive else ln
    lead = re.match(rf"\s*cd\s+(['\"]?){re.escape(h)}/?\1\s*&&", ln)
    return any(
        _names(ln, f"{h}/{p.lower() if drive else p}") or (lead is not None and _names(line, p))
        for p in paths
    )


def _names(line: str, path: str) -> bool:
    """Whether ``line`` names ``path`` or a file under it, not a longer name that starts
    with it (``app.ts.bak`` is not ``app.ts``)."""
    return re.search(rf"(?<![\w.-]){re.escape(path)}(?![\w.-])", line) is not None


#: The client's own file tools, which resolve a relative path from its shell's folder.
_FILE_KINDS = frozenset({ToolKind.READ, ToolKind.SEARCH, ToolKind.EDIT, ToolKind.WRITE})


def _beside(tool: str) -> bool:
    """Whether ``tool`` is one of the client's file tools (:data:`_FILE_KINDS`): not a
    shell that does not keep its folder, nor an MCP server's tool, whose server resolves a
    relative path from its own folder."""
    found = spec_for(tool)
    return found is not None and found[1].kind in _FILE_KINDS and not is_shell(tool)


def _root(t: Trajectory) -> list[Slip]:
    """A path from the session's folder failed while the shell stood in a subfolder; the
    same path from the session's folder then worked (module doc)."""
    home = _home(t)
    out: list[Slip] = []
    if not home:
        return out
    for i, w in enumerate(t.steps):
        shell = keeping_shell(w.tool)
        if w.success or shell is None or (w.tool == shell and chdirs(w)):
            continue
        if w.tool != shell and not _beside(w.tool):
            continue  # another shell of the client, or an MCP server's tool (its own root)
        paths = _root_paths(w)
        went = _stood_in(t, i, shell, home) if paths else None
        if went is None:
            continue
        fixed = next(
            (
                j
                for j in range(i + 1, min(len(t.steps), i + 4))
                if t.steps[j].tool == w.tool
                and t.steps[j].success
                and _rooted(t.steps[j], home, paths)
            ),
            None,
        )
        if fixed is None:
            continue
        folder = went[1]
        why = (
            f"the shell stood in {folder} ({_source(went[0])}); {_word(i)} {w.tool} named "
            f"{paths[0]} from the project's top and failed ('{{q}}'); {_word(fixed)} used it "
            f"from {home} and worked"
        )
        out.append(Slip("root", i, fixed, shell, folder, why))
    return out
