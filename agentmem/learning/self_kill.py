"""A shell call that killed itself: ``pkill -f PATTERN`` (or ``pgrep -f PATTERN`` fed to
``kill``) matches every process whose whole command line holds PATTERN, and a client runs
a shell call as ``bash -c "...the command..."`` (Claude Code's Bash always; Codex's
``bash -lc`` whenever the command is more than one simple command), so the pattern also
matches the shell running the call, which is killed: the call ends by a signal (Claude
Code's exit 144, 143 or 137; Codex's -1), whatever it was to do after.

Pure logic: it reads a recorded run and says which calls did this and which later call
stopped the same processes another way; :mod:`.corrections` turns each into the client's
one lesson. A slip is learned only when the run shows all of it:

- the failed call's own command line holds the pattern (read as a regular expression,
  as ``pkill`` reads it; as text where it is none), no option leaves the shell out of the
  match (``-x``, ``-o``, ``-A``, ``-u``: :data:`_NARROW_SHORT`), and the call ended by a
  signal that was no time-out and no stop of the user's;
- within :data:`WINDOW` calls, a shell call that worked stopped processes (``kill``,
  ``pkill``, ``killall``: the programs of role ``STOPS``) without matching itself (``kill``
  of a process id, a pattern written ``[s]erver``, ``pkill`` as the call's only command),
  naming a word of the pattern or a process id that a call in between printed of those
  processes (its command, or the line, names them; ``kill -0`` stops nothing);
- no call of the run that held a self-matching ``pkill -f`` in a shell holding its text
  worked (that shell did not carry its command's text, and the slip was something else).
"""

from __future__ import annotations

import re

import attrs

from ..agents import programs as _programs
from ..agents import spec_for
from ..agents.base import NOT_RUN
from ..agents.outcomes import outcome, shell_line
from ..agents.shell import Command, parse
from ..records import Step, Trajectory

#: How many calls after the failed one may stop the processes another way.
WINDOW = 6
#: Exit statuses of a call whose shell a signal ended: 128 + SIGKILL, SIGTERM, and the
#: 144 Claude Code reports for such a call; Codex's -1 (no status: a signal).
SIGNALLED = frozenset({-1, 137, 143, 144})
#: Words of a pattern too common to tie a later call to the same processes (and any
#: program's name: ``node`` in ``node server.js`` names no one process).
_COMMON = frozenset({"run", "bin", "usr", "local", "opt", "home", "tmp", "dev"})


@attrs.frozen
class SelfKill:
    """Call ``failed`` (a shell call of tool ``shell``) killed its own shell with
    ``pattern``; call ``fixed`` stopped the processes another way (``how``)."""

    failed: int
    fixed: int
    shell: str
    pattern: str
    how: str


#: Options of ``pkill``/``pgrep`` that leave the shell running the call out of the match:
#: ``-x`` (the whole command line, exactly), ``-o`` (the oldest: the server, not the shell
#: just started), ``-O N`` (older than N seconds), ``-A`` (not pkill's ancestors), and
#: those that narrow it to processes the shell need not be (``-P``, ``-u``, ``-U``, ``-s``,
#: ``-t``, ``-g``, ``-G``, ``-r``, ``-F``, ``--ns``, ``--cgroup``).
_NARROW_SHORT = frozenset("xoOAPuUstgGrF")
_NARROW_LONG = frozenset(
    "--exact --oldest --older --ignore-ancestors --parent --euid --uid --session "
    "--terminal --pgroup --group --runstates --pidfile --ns --cgroup".split()
)


def _letters(flag: str) -> str:
    """A short option cluster's letters (``-xf``: ``xf``); "" for a long option or a
    signal (``-9``, ``-KILL``, ``-USR1``)."""
    if not re.fullmatch(r"-[A-Za-z0-9]+", flag):
        return ""
    body = flag[1:]
    return "" if body.isdigit() or (len(body) > 1 and body.isupper()) else body


def _full_match(c: Command) -> bool:
    """Whether ``pkill``/``pgrep`` matches every process whose whole command line holds
    its pattern, the call's own shell too: ``-f`` (``--full``), and no option that leaves
    that shell out (:data:`_NARROW_SHORT`)."""
    full = False
    for flag in c.flags:
        letters = _letters(flag)
        if flag.split("=", 1)[0] in _NARROW_LONG or _NARROW_SHORT & set(letters):
            return False
        full = full or flag == "--full" or "f" in letters
    return full


def _commands(text: str) -> list[Command]:
    """The commands of a command line, those inside ``$(...)`` too."""
    script = parse(text)
    out = list(script.commands)
    for inner in re.findall(r"\$\(([^()]*)\)", text):
        out += parse(inner).commands
    return out


def _patterns(text: str) -> list[str]:
    """The patterns of the command line's whole-command-line matches that stop processes:
    ``pkill -f P``, and ``pgrep -f P`` where the line also runs ``kill``."""
    cmds = _commands(text)
    kills = any(c.program == "kill" for c in cmds)
    out: list[str] = []
    for c in cmds:
        stops = c.program == "pkill" or (c.program == "pgrep" and kills)
        if stops and _full_match(c) and c.operands:
            out.append(c.operands[-1])
    return out


def _matches(pattern: str, text: str) -> bool:
    """Whether ``pattern`` (an extended regular expression, as ``pkill`` reads it)
    matches somewhere in ``text``."""
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return pattern in text


def _self_matching(text: str) -> str | None:
    """The first pattern of ``text`` that also matches ``text`` itself, or None."""
    return next((p for p in _patterns(text) if _matches(p, text)), None)


def _alone(text: str) -> bool:
    """Whether the command line is one simple command (a shell given only it runs it in
    its own place: no shell stays behind to be matched)."""
    script = parse(text)
    return script.parsed and len(script.commands) == 1 and len(script.pipelines) == 1


def _words(pattern: str) -> set[str]:
    found = {w.lower() for w in re.findall(r"[A-Za-z0-9_.-]{3,}", pattern)}
    return {w for w in found if w not in _COMMON and _programs.get(w) is None}


def _wrapped(s: Step, text: str) -> bool:
    """Whether call ``s`` ran inside a shell whose command line holds ``text``
    (:attr:`agentmem.agents.ToolSpec.always_wrapped`, or more than one simple command)."""
    found = spec_for(s.tool)
    return (found is not None and found[1].always_wrapped) or not _alone(text)


def _stops(c: Command) -> bool:
    """Whether a command stops processes: a ``STOPS`` program not asked only whether a
    process lives (``kill -0``, ``kill -s 0``) or for the signals' names (``kill -l``)."""
    if not _programs.has(c.program, _programs.Role.STOPS):
        return False
    probe = {"-0", "-l", "-L", "--list", "--table"} & set(c.flags)
    zero = c.program == "kill" and bool({"-s", "--signal", "-n"} & set(c.flags))
    zero = zero and "0" in c.operands
    return not probe and not zero


def _names(pattern: str, text: str) -> bool:
    """Whether ``text`` names the processes of ``pattern``: the pattern matches it, or it
    holds a word of the pattern (:func:`_words`)."""
    return _matches(pattern, text) or any(w in text.lower() for w in _words(pattern))


def _printed(command: str | None, output: str, pattern: str) -> str:
    """What a call in between printed of the processes of ``pattern``: all its output when
    its command names them (``pgrep -f PATTERN``), else only its lines that do (a ``ps``
    listing of every process)."""
    if command is not None and _names(pattern, command):
        return output
    return "\n".join(x for x in output.split("\n") if _names(pattern, x))


def _stops_another_way(r: Step, text: str, pattern: str, printed: str) -> str | None:
    """How command line ``text`` stops the processes of ``pattern`` without matching its
    own shell, or None: ``by process id`` (a ``kill`` of ids a call in between printed),
    ``a bracketed pattern``, ``pkill alone``, or ``by name`` (another stopper naming a word
    of the pattern)."""
    cmds = [c for c in _commands(text) if _stops(c)]
    if not cmds:
        return None
    if _self_matching(text) is not None and _wrapped(r, text):
        return None
    ids = [o for c in cmds if c.program == "kill" for o in c.operands if o.isdigit()]
    if ids and all(re.search(rf"(?<!\d){i}(?!\d)", printed) for i in ids):
        return "by process id"
    words = _words(pattern)
    if not words or not any(w in text.lower() for w in words):
        return None
    if any(p != pattern and not _matches(p, text) for p in _patterns(text)):
        return "a bracketed pattern"
    if _patterns(text) and _alone(text):
        return "pkill alone"
    return "by name"


def self_kills(run: Trajectory) -> list[SelfKill]:
    """The run's shell calls that killed their own shell, each with the later call that
    stopped the same processes another way (module doc)."""
    steps = run.steps
    texts = [shell_line(s) for s in steps]
    # a self-matching pkill in a shell holding its text that worked: that shell did not
    # carry the command's text, so a signal there was something else
    for s, text in zip(steps, texts):
        if text and s.success and _self_matching(text) and _wrapped(s, text):
            return []
    out: list[SelfKill] = []
    for i, (w, text) in enumerate(zip(steps, texts)):
        if text is None or w.success:
            continue
        pattern = _self_matching(text)
        if pattern is None or not _wrapped(w, text):
            continue
        said = outcome(w)
        # a time-out or the user's stop ends a call with a signal too: not the pkill's
        if said.exit_code not in SIGNALLED or said.failure in NOT_RUN:
            continue
        printed = ""
        for k in range(i + 1, min(len(steps), i + 1 + WINDOW)):
            r, rt = steps[k], texts[k]
            if rt is not None and r.success:
                how = _stops_another_way(r, rt, pattern, printed)
                if how is not None:
                    out.append(SelfKill(i, k, w.tool, pattern, how))
                    break
            printed += "\n" + _printed(rt, r.output or "", pattern)
    return out


def self_kill_text(shell: str) -> str:
    """The one lesson of a shell tool whose calls run inside a shell holding their text:
    every call's (:attr:`~agentmem.agents.ToolSpec.always_wrapped`), or, for another shell
    tool, a call of more than one command's only (a lone pkill runs in its own place)."""
    found = spec_for(shell)
    if found is not None and not found[1].always_wrapped:
        return (
            f"pkill -f PATTERN beside other commands in one {shell} call kills the shell "
            "running them, whose text holds PATTERN: kill by PID, bracket one letter "
            "([s]erver), or run pkill alone."
        )
    return (
        f"pkill -f PATTERN in {shell} also kills the shell running the command, whose own "
        "text holds PATTERN, and the call dies: kill by PID, or bracket one letter ([s]erver)."
    )
