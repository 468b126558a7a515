"""A shell tool that escapes ``!``: in many versions Claude Code's Bash tool writes every
``!`` of a command as ``\\!`` before the shell runs it (anthropics/claude-code issues
2941, 10335, 23740, 28259, 32864 and 68181: fixed, then regressed), inside quotes too,
where the backslash stays, so a program reading code from its arguments fails to parse
it: ``jq 'select(.id != "x")'`` fails with ``select(.id \\!= "x")``, ``node -e`` with
``Expected unicode escape``.

Pure logic: it reads a recorded run and says which calls did this and which later call
did the job without a ``!``; :mod:`.corrections` turns each into the tool's lesson. A
slip is learned only when the run shows all of it:

- the failed call's output echoes a stretch of the command around one of its ``!``
  (:data:`SIDE` characters each side, on its line) with ``\\!`` in its place, and the
  command itself holds no such ``\\!`` there (the backslash is not the agent's);
- within :data:`WINDOW` calls, a call of the same tool that worked ran the same program
  and subcommand (those of the command whose word holds the echoed ``!``; never one that
  only prints its words, ``echo``) with no ``!`` in its command.

The lesson says what the output shows (the tool added the backslash) and the two ways
round it; it names no version, since the echo is the proof on this machine's client.
"""

from __future__ import annotations

import re

import attrs

from ..agents import programs
from ..agents.outcomes import shell_line
from ..agents.programs import Role
from ..agents.shell import Command, parse
from ..records import Trajectory

#: How many calls after the failed one may do the job without a ``!``.
WINDOW = 6
#: Characters of the command each side of a ``!`` that the output must echo (fewer at
#: the command's or a line's end), and how many of them must be other than spaces.
SIDE = 6
_MIN_ECHO = 4
#: A quote of the shell, which the command's words no longer hold.
_QUOTE_MARK = re.compile(r"['\"]")

__all__ = ["WINDOW", "Bang", "bang_text", "bangs", "is_bang_lesson"]


@attrs.frozen
class Bang:
    """Call ``failed`` (of shell tool ``shell``) ran ``program`` with a ``!`` that the tool
    escaped (``echoed``: the output's stretch with ``\\!``); call ``fixed`` ran
    ``program`` without one and worked. ``code``: the language of the code the ``!`` was
    in, where it is not ``program``'s own (gh's ``--jq`` filter is jq's)."""

    failed: int
    fixed: int
    shell: str
    program: str
    echoed: str
    code: str = ""


def echoed(text: str, output: str) -> str | None:
    """The stretch of command ``text`` around one of its own ``!`` that ``output`` echoes
    with ``\\!`` in its place, or None."""
    found = _echo(text, output)
    return found[0] if found else None


def _stretch(text: str, i: int) -> tuple[str, str]:
    """The command's characters each side of its ``!`` at ``i`` (:data:`SIDE`, on its line)."""
    start = max(text.rfind("\n", 0, i) + 1, i - SIDE)
    end = text.find("\n", i)
    end = min(len(text) if end < 0 else end, i + 1 + SIDE)
    return text[start:i], text[i + 1 : end]


def _unquoted(text: str, i: int) -> str:
    """The stretch around the ``!`` at ``text[i]`` cut at the shell's quotes each side:
    what a parsed word holds of it."""
    left, right = _stretch(text, i)
    return f"{_QUOTE_MARK.split(left)[-1]}!{_QUOTE_MARK.split(right)[0]}"


def _echo(text: str, output: str) -> tuple[str, int] | None:
    """:func:`echoed`'s stretch, with where its ``!`` stands in ``text``."""
    for m in re.finditer(r"(?<!\\)!", text):
        left, right = _stretch(text, m.start())
        if len((left + right).replace(" ", "")) < _MIN_ECHO:
            continue
        escaped = f"{left}\\!{right}"
        at = output.find(escaped)
        if at >= 0 and escaped not in text:
            return _widened(output, at, at + len(escaped)), m.start()
    return None


def _widened(output: str, start: int, end: int) -> str:
    """The output's stretch ``start:end`` widened on its line to whole words (letters,
    digits, ``_`` and ``.``; at most :data:`SIDE` more characters each side)."""
    while start > 0 and end - start < 64 and re.match(r"[\w.]", output[start - 1]):
        start -= 1
    while end < len(output) and end - start < 64 and re.match(r"[\w.\"]", output[end]):
        end += 1
    return output[start:end].strip()


def _command(text: str, i: int) -> Command | None:
    """The command whose word holds the ``!`` at ``text[i]`` (the one whose code the tool
    changed; not a ``[ ! -f x ]`` before it), or None; None too for one that only prints
    its words (``echo``, ``printf``: :attr:`Role.SCENE`), whose ``\\!`` in the output
    failed nothing. The word holds the stretch around it, or, where a quote of the shell
    stands in the stretch, what lies between the quotes."""
    left, right = _stretch(text, i)
    commands = parse(text).commands
    for near in dict.fromkeys((f"{left}!{right}", _unquoted(text, i))):
        for c in commands:
            if any(near in w for w in c.words[1:]):
                return None if programs.has(c.program, Role.SCENE) else c
    return None


#: Options whose value is another language's code: gh's ``--jq`` (``-q``) filter.
_CODE_OPTIONS = {"gh": ("jq", frozenset({"--jq", "-q"}))}


def _code(cmd: Command, text: str, i: int) -> str:
    """The language of the code that holds the ``!`` at ``text[i]`` where an option of
    ``cmd`` takes code of another (:data:`_CODE_OPTIONS`), else ""."""
    lang, options = _CODE_OPTIONS.get(cmd.program, ("", frozenset()))
    near = _unquoted(text, i)
    for before, word in zip(cmd.words, cmd.words[1:]):
        if near in word and (before in options or word.split("=", 1)[0] in options):
            return lang
    return ""


def bangs(run: Trajectory) -> list[Bang]:
    """The run's shell calls whose ``!`` the tool escaped, each with the later call that
    did the job without one (module doc)."""
    steps = run.steps
    texts = [shell_line(s) for s in steps]
    out: list[Bang] = []
    for i, (w, text) in enumerate(zip(steps, texts)):
        if text is None or w.success:
            continue
        found = _echo(text, w.output or "")
        cmd = _command(text, found[1]) if found else None
        if found is None or cmd is None:
            continue
        seen = found[0]
        for k in range(i + 1, min(len(steps), i + 1 + WINDOW)):
            r, rt = steps[k], texts[k]
            if r.tool != w.tool or rt is None or not r.success or "!" in rt:
                continue
            # the same program and subcommand: a git push after a commit whose message the
            # tool escaped is no way round it
            if any(c.intent == cmd.intent for c in parse(rt).commands):
                out.append(Bang(i, k, w.tool, cmd.program, seen, _code(cmd, text, found[1])))
                break
    return out


def bang_text(shell: str, program: str, seen: str) -> str:
    """The lesson of a shell tool that escaped a ``!`` of ``program``'s code (``seen``: the
    output's stretch, its first three words quoted, a ' in them written as "). The way to
    write a negation without ``!`` is named for jq only (``== ... | not``: jq's syntax,
    not node's or python's)."""
    quote = " ".join(seen.split()[:3]).replace("'", '"')
    how = " (== ... | not)" if program == "jq" else ""
    return (
        f"The {shell} tool escapes ! as \\!, so {program} code with ! fails ('{quote}'): "
        f"write it without !{how}, or write the code to a file."
    )


#: The start of :func:`bang_text`'s lessons.
_LESSON = re.compile(r"The \S+ tool escapes ! as \\!, so ")


def is_bang_lesson(text: str) -> bool:
    """Whether ``text`` is a lesson of :func:`bang_text`: its quote is the instance (the
    code that failed), not the error the rule answers, so two codes of one program are
    one lesson (:func:`agentmem.learning.merge.keeps_trigger`)."""
    return _LESSON.match(text) is not None
