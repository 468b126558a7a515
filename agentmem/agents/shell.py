"""Shell command lines understood: pipelines, programs, subcommands, flags and operands.

A coding agent's shell tool takes free text (Claude Code's ``Bash``) or an argv that
wraps it (Codex's ``["bash", "-lc", "..."]``). :func:`parse` reads it with
tree-sitter-bash (measured against bashlex and ``shlex`` on the commands of real
transcripts: it is the one that parses every heredoc, ``[[ ]]``, ``$(( ))`` and
``case`` there; see the README's "Shell commands") into a :class:`Script`: its
:class:`Pipeline` s in order, each of :class:`Command` s. A command is its program
(wrappers such as ``sudo``, ``uv run``, ``python -m``, ``npx`` and ``nix-shell -p X
--run '...'`` peeled off and kept in ``wrappers``), its subcommand (for programs
that take one: ``git push``, ``npm run build``, ``cargo test``), its flags, its
operands and its redirections.

What the parser cannot read (tree-sitter marks it as an error, or the library is not
installed) gives ``Script(parsed=False)``: such a call teaches nothing.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
from collections.abc import Sequence
from typing import Any

import attrs

from . import programs
from .programs import Role

__all__ = [
    "Command",
    "Pipeline",
    "Script",
    "command_of",
    "is_cmdlet",
    "is_shell",
    "loose_commands",
    "parse",
    "powershell_call",
    "unwrap_argv",
    "wrapped_script",
]

_MAX_COMMAND = 20_000


def _values(program: str) -> frozenset[str]:
    """The options of ``program`` that take the next word as their value (``git -C dir``)."""
    p = programs.get(program)
    return p.value_options if p is not None else frozenset()


def is_shell(program: str) -> bool:
    """Whether ``program`` is a shell (``bash -lc '...'`` is read through to its script)."""
    return programs.has(program, Role.SHELL)


@attrs.frozen
class Command:
    """One simple command: ``program`` (its base name), what wrapped it, its words.

    ``words`` is the whole argv as written (wrappers included); ``args`` the words after
    the program; ``subcommand`` the first of them for a program that takes one;
    ``redirects`` the (operator, target) pairs (``(">", "dir/file")``).
    """

    program: str
    words: tuple[str, ...]
    args: tuple[str, ...] = ()
    subcommand: str | None = None
    wrappers: tuple[str, ...] = ()
    redirects: tuple[tuple[str, str], ...] = ()
    assignments: tuple[str, ...] = ()
    #: The options (an option that takes a value joined with it: ``-C dir``).
    flags: tuple[str, ...] = ()
    #: The words after the program (and subcommand) that are not options.
    operands: tuple[str, ...] = ()

    @property
    def intent(self) -> tuple[str, str | None]:
        """What the command does, as far as a comparison goes: program and subcommand."""
        return self.program, self.subcommand

    @property
    def text(self) -> str:
        """The command as one line, for a lesson (wrappers and all)."""
        return " ".join(self.words)


@attrs.frozen
class Pipeline:
    """Commands joined by ``|``; ``connector`` is what joined it to the previous one."""

    commands: tuple[Command, ...]
    connector: str = ""


@attrs.frozen
class Script:
    """A command line read: its pipelines in order, or ``parsed=False``."""

    source: str
    pipelines: tuple[Pipeline, ...] = ()
    parsed: bool = True

    @property
    def commands(self) -> tuple[Command, ...]:
        return tuple(c for p in self.pipelines for c in p.commands)

    @property
    def programs(self) -> tuple[str, ...]:
        return tuple(c.program for c in self.commands)


# --------------------------------------------------------------------------- tree-sitter


@functools.lru_cache(maxsize=1)
def _parser() -> Any | None:
    """A tree-sitter parser for bash, across the library's two APIs; None without it (or
    with a grammar this tree-sitter cannot load: then no command is read)."""
    try:
        import tree_sitter
        import tree_sitter_bash
    except ImportError:
        return None
    try:
        return _load(tree_sitter, tree_sitter_bash.language())
    except (TypeError, ValueError, AttributeError, OSError):
        return None


def _load(ts: Any, raw: Any) -> Any:
    try:
        lang = ts.Language(raw)
    except TypeError:  # tree-sitter 0.21: Language(pointer, name)
        if not isinstance(raw, int):  # a grammar built for the newer API hands a capsule
            get = ctypes.pythonapi.PyCapsule_GetPointer
            get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
            raw = get(raw, b"tree_sitter.Language")
        lang = ts.Language(raw, "bash")
    p = ts.Parser()
    if hasattr(p, "set_language"):  # tree-sitter 0.21
        p.set_language(lang)
    else:
        p.language = lang
    return p


def _text(node: Any, src: bytes) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _word(node: Any, src: bytes) -> str:
    """A word as the shell would pass it: quotes removed, expansions kept as written."""
    t = node.type
    if t == "raw_string":
        return _text(node, src)[1:-1]
    if t == "string":
        return _text(node, src)[1:-1]
    if t == "ansi_c_string":
        return _text(node, src)[2:-1]
    if t == "concatenation":
        return "".join(_word(c, src) for c in node.children)
    if t == "word":
        return re.sub(r"\\(.)", r"\1", _text(node, src))
    return _text(node, src)


class _Reader:
    """Walks a tree-sitter tree into pipelines of commands, in order."""

    def __init__(self, src: bytes) -> None:
        self.src = src
        self.pipelines: list[Pipeline] = []
        self.connector = ""

    def statement(self, node: Any) -> None:
        t = node.type
        if t == "list":
            for c in node.children:
                if c.type in ("&&", "||", ";", "&"):
                    self.connector = c.type
                elif c.is_named:
                    self.statement(c)
        elif t == "pipeline":
            cmds: list[Command] = []
            for c in node.children:
                if c.type in ("command", "redirected_statement"):
                    before = len(self.pipelines)
                    got = self.simple(c)
                    if not got and not cmds and len(self.pipelines) > before and not _grouped(c):
                        # tree-sitter reads `a && b 2>&1 | c` as `(a && b) 2>&1 | c`, bash as
                        # `a && (b 2>&1 | c)`: the pipe goes on from the list's last pipeline
                        # (not so for a real `( ... )` or `{ ...; }`: all its output goes on)
                        last = self.pipelines.pop()
                        cmds, self.connector = list(last.commands), last.connector
                    cmds += got
                elif c.is_named and c.type not in ("|", "|&"):
                    self.statement(c)
            self.add(cmds)
        elif t in ("command", "redirected_statement"):
            self.add(self.simple(node))
        elif t == "test_command":  # [[ ... ]] / [ ... ]: its exit code is an answer
            words = ("[[", *(_text(c, self.src) for c in node.children if c.is_named))
            self.add([Command("[[", words, words[1:], operands=words[1:])])
        elif t == "comment" or t == "heredoc_body":
            return
        else:
            for c in node.children:
                if c.is_named and c.type not in ("heredoc_body", "comment"):
                    self.statement(c)

    def add(self, cmds: list[Command]) -> None:
        if cmds:
            self.pipelines.append(Pipeline(tuple(cmds), self.connector))
            self.connector = ""

    def simple(self, node: Any) -> list[Command]:
        """A command node (or a redirected statement around one) as commands."""
        src = self.src
        redirects: list[tuple[str, str]] = []
        body = node
        if node.type == "redirected_statement":
            body = node.child_by_field_name("body")
            for r in node.children_by_field_name("redirect"):
                redirects.append(_redirect(r, src))
            if body is None:
                return []
            if body.type != "command":  # `{ ...; } > f`, a pipeline or list redirected
                before = len(self.pipelines)
                self.statement(body)
                if redirects and len(self.pipelines) > before:
                    last = self.pipelines[-1]
                    cmds = list(last.commands)
                    cmds[-1] = attrs.evolve(cmds[-1], redirects=(*cmds[-1].redirects, *redirects))
                    self.pipelines[-1] = attrs.evolve(last, commands=tuple(cmds))
                return []
        words: list[str] = []
        assigns: list[str] = []
        for c in body.children:
            if c.type == "variable_assignment":
                assigns.append(_text(c, src))
            elif c.type == "command_name":
                words.append(_word(c.children[0], src) if c.children else _text(c, src))
            elif c.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                redirects.append(_redirect(c, src))
            elif c.is_named:
                words.append(_word(c, src))
                self.nested(c)
        if not words:
            return []
        cmd = command_of(words, tuple(redirects), tuple(assigns))
        return [cmd] if cmd is not None else []

    def nested(self, node: Any) -> None:
        """Command substitutions inside a word run too: read their commands. They run as
        part of the command around them: joined to what came before as it is, and that
        command keeps its own connector (``a && git commit -m "$(cat ...)"``: both ``&&``)."""
        for c in node.children:
            if c.type in ("command_substitution", "process_substitution"):
                for s in c.children:
                    if s.is_named:
                        outer = self.connector
                        self.statement(s)
                        self.connector = outer
            elif c.children:
                self.nested(c)


def _grouped(node: Any) -> bool:
    """Whether a redirected statement redirects a group written as one, a subshell
    ``( ... )`` or a ``{ ...; }``, whose whole output goes on down a pipe."""
    body = node.child_by_field_name("body") if node.type == "redirected_statement" else None
    return body is not None and body.type in ("subshell", "compound_statement")


def _redirect(node: Any, src: bytes) -> tuple[str, str]:
    op = next((c.type for c in node.children if not c.is_named), "")
    dest = node.child_by_field_name("destination")
    if node.type == "heredoc_redirect":
        return ("<<", "")
    return (op, _word(dest, src) if dest is not None else "")


def _has_error(node: Any) -> bool:
    if node.type == "ERROR" or node.is_missing:
        return True
    return bool(node.has_error) and any(_has_error(c) for c in node.children)


# --------------------------------------------------------------------------- words


def _skip_options(words: Sequence[str], i: int, program: str) -> int:
    values = _values(program)
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        i += 2 if words[i] in values else 1
    return i


def command_of(
    words: Sequence[str],
    redirects: tuple[tuple[str, str], ...] = (),
    assignments: tuple[str, ...] = (),
    depth: int = 0,
) -> Command | None:
    """The :class:`Command` of one argv: wrappers peeled off, the subcommand found."""
    ws = list(words)
    wrappers: list[str] = []
    i = 0
    while i < len(ws):
        w = ws[i]
        base = os.path.basename(w)
        p = programs.get(base)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w):
            assignments = (*assignments, w)
            i += 1
        elif p is not None and Role.WRAPPER in p.roles and not p.own_words:
            wrappers.append(base)
            i = _skip_options(ws, i + 1, base)
            while base == "env" and i < len(ws) and "=" in ws[i]:
                i += 1
        elif p is not None and Role.WRAPPER in p.roles and i + p.own_words < len(ws):
            wrappers.append(base)  # timeout 10 cmd: its own words skipped
            i = _skip_options(ws, i + 1, base) + p.own_words
        elif p is not None and p.runs and i + 1 < len(ws) and ws[i + 1] == p.runs:
            wrappers.append(f"{base} {p.runs}")
            i = _skip_options(ws, i + 2, base)
        elif p is not None and Role.LAUNCHER in p.roles and i + 1 < len(ws):
            wrappers.append(base)
            i = _skip_options(ws, i + 1, base)
        elif programs.is_python(base) and ws[i + 1 : i + 2] == ["-m"] and i + 2 < len(ws):
            wrappers.append(f"{base} -m")
            i += 2
        elif base == "nix-shell" and "--run" in ws[i:] and depth < 3:
            j = ws.index("--run", i)
            if j + 1 >= len(ws):
                break
            inner = parse(ws[j + 1], _depth=depth + 1)
            if not inner.parsed or len(inner.commands) != 1:
                break
            c = inner.commands[0]
            packages = [w for w in ws[i + 1 : j] if not w.startswith("-")]
            return attrs.evolve(
                c,
                words=tuple(ws[: j + 1]) + c.words,
                wrappers=(f"nix-shell -p {' '.join(packages)}".strip(), *c.wrappers),
            )
        else:
            break
    if i >= len(ws):
        return None
    program = os.path.basename(ws[i])
    args = tuple(ws[i + 1 :])
    flags, operands = _split(args, program)
    sub = None
    found = programs.get(program)
    if found is not None and found.takes_subcommand and operands:
        sub, operands = operands[0], operands[1:]
        if sub == "run" and found.scripts and operands:
            sub, operands = f"run {operands[0]}", operands[1:]
    return Command(
        program=program,
        words=tuple(ws),
        args=args,
        subcommand=sub,
        wrappers=tuple(wrappers),
        redirects=redirects,
        assignments=assignments,
        flags=flags,
        operands=operands,
    )


def _split(args: Sequence[str], program: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(options, operands) of a program's words; after ``--`` every word is an operand."""
    values = _values(program)
    flags: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        w = args[i]
        if w == "--":
            operands += args[i + 1 :]
            break
        if w.startswith("-") and w != "-":
            if w in values and i + 1 < len(args):
                flags.append(f"{w} {args[i + 1]}")
                i += 2
                continue
            flags.append(w)
        else:
            operands.append(w)
        i += 1
    return tuple(flags), tuple(operands)


_SEPARATORS = frozenset(";; ; && || | |& & ( ) {".split())
#: What bash would misread: a PowerShell cmdlet (``Get-ChildItem``), a Windows shell run
#: by name, a drive path written with backslashes (bash eats them: ``C:\\Users`` -> ``C:Users``).
_WINDOWS = re.compile(
    r"(?:^|[;|&(]\s*|\n\s*)(?:[A-Z][a-z]+-[A-Z][A-Za-z]+|(?i:powershell|pwsh|cmd)(?:\.exe)?)"
    r"(?=[ \t\r\n]|$)"
    r"|(?:^|[\s\"'=])[A-Za-z]:\\"
)


def _windows_shell(command: str) -> bool:
    """Whether a command line is PowerShell's or cmd's, not bash's: then it is not read."""
    return _WINDOWS.search(command) is not None


#: A PowerShell word: a quoted string ('...' with '' inside, "..." with `" inside) or a
#: run of characters up to a blank or one of ; | (a pipeline, a statement's end).
_PS_WORD = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"`]|`.)*\"|[^\s;|'\"]+")
#: A cmdlet's name: Verb-Noun.
_CMDLET = re.compile(r"[A-Za-z]+-[A-Za-z][A-Za-z0-9]*")


def is_cmdlet(word: str) -> bool:
    """Whether ``word`` is written as a PowerShell cmdlet's name (Verb-Noun)."""
    return _CMDLET.fullmatch(word) is not None


@attrs.frozen
class PowerShellCall:
    """The first command of a PowerShell line, read no further than a lesson needs: its
    cmdlet, its words as written (quotes kept) and as values (quotes taken off)."""

    cmdlet: str
    written: tuple[str, ...]
    values: tuple[str, ...]

    def option(self, name: str) -> str | None:
        """The value written after ``-name`` (case-insensitive), or None."""
        for k, w in enumerate(self.values[:-1]):
            if w.lower() == f"-{name.lower()}":
                return self.values[k + 1]
        return None

    def written_after(self, name: str) -> str | None:
        """The word after ``-name`` as written (its quotes kept), or None."""
        for k, w in enumerate(self.values[:-1]):
            if w.lower() == f"-{name.lower()}":
                return self.written[k + 1]
        return None


def powershell_call(command: str) -> PowerShellCall | None:
    """The first command of a PowerShell line when it is a cmdlet (``Get-Content -Path
    'a/[id]/b.ts' | Select-Object -First 20``: Get-Content and its words), else None."""
    line = command.strip().split("\n", 1)[0]
    written: list[str] = []
    end = 0
    for m in _PS_WORD.finditer(line):
        if any(c in ";|" for c in line[end : m.start()]):
            break  # the first command's words end at a pipe or a statement's end
        written.append(m.group(0))
        end = m.end()
    if not written or not is_cmdlet(written[0]):
        return None

    def value(w: str) -> str:
        if len(w) >= 2 and w[0] == w[-1] == "'":
            return w[1:-1].replace("''", "'")
        if len(w) >= 2 and w[0] == w[-1] == '"':
            return re.sub(r"`(.)", r"\1", w[1:-1])
        return w

    return PowerShellCall(written[0], tuple(written), tuple(value(w) for w in written))


def loose_commands(command: str) -> tuple[Command, ...]:
    """The commands of a line the parser cannot read (an unbalanced quote, a half-written
    heredoc), split at ``&&``, ``|``, ``;``, ... line by line and read word by word as
    :func:`command_of` reads them: good enough for a step's domain, never for a lesson."""
    import shlex

    out: list[Command] = []

    def add(words: list[str]) -> None:
        c = command_of(words) if words else None
        if c is not None:
            out.append(c)

    for line in command.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        try:
            words = list(lexer)
        except ValueError:  # unbalanced quotes: the words as they stand
            words = line.split()
        current: list[str] = []
        for w in words:
            if w in _SEPARATORS or (w and set(w) <= set(";&|()")):
                add(current)
                current = []
            else:
                current.append(w)
        add(current)
    return tuple(out)


def unwrap_argv(argv: Sequence[str]) -> str:
    """The script of a wrapped argv (``["bash", "-lc", "git status"]`` -> ``git status``),
    or the argv joined as a command line."""
    import shlex

    args = list(argv)
    if (
        len(args) >= 3
        and is_shell(os.path.basename(args[0]))
        and re.fullmatch(r"-[a-z]*c", args[1])
    ):
        return args[2]
    return shlex.join(args)


#: A line that only hands a script to Windows' shells: ``powershell.exe -NoProfile
#: -Command "..."``, ``pwsh -c '...'``, ``cmd /c "..."`` (the program perhaps a quoted path).
_WIN_WRAPPER = re.compile(
    r"^\s*(?P<prog>\"[^\"]+\"|'[^']+'|\S+)\s+"
    r"(?:(?:-ExecutionPolicy\s+\S+|-[A-Za-z]+|/[A-Za-z])\s+)*?"
    r"(?P<flag>-c|-command|/c|/k)\s+(?P<rest>\S.*?)\s*$",
    re.IGNORECASE | re.DOTALL,
)


def wrapped_script(command: str) -> str | None:
    """The script a line hands to PowerShell (``-Command`` / ``-c``) or cmd (``/c``), its
    quotes taken off; None for any other line."""
    got = _wrapper(command)
    return got[1] if got else None


def _wrapper(command: str) -> tuple[str, str] | None:
    """The Windows shell a line hands a script to (``powershell``, ``pwsh``, ``cmd``) and
    that script (see :func:`wrapped_script`)."""
    import shlex

    m = _WIN_WRAPPER.match(command)
    if m is None:
        return None
    prog = os.path.basename(m.group("prog").strip("\"'").replace("\\", "/")).lower()
    prog = prog[:-4] if prog.endswith(".exe") else prog
    flag = m.group("flag").lower()
    if not (prog in ("powershell", "pwsh") and flag.startswith("-")) and not (
        prog == "cmd" and flag.startswith("/")
    ):
        return None
    rest = m.group("rest")
    if rest[0] in "\"'":
        try:
            words = shlex.split(rest)
        except ValueError:
            return None
        return (prog, words[0]) if len(words) == 1 else None
    return prog, rest


@functools.lru_cache(maxsize=4096)
def parse(command: str, *, _depth: int = 0) -> Script:
    """The command line read into pipelines (see the module doc); ``parsed=False`` when
    it cannot be read. ``bash -c '...'`` is read through to the script it runs, and so is
    ``powershell -Command "..."`` / ``pwsh -c`` / ``cmd /c`` when their script reads as
    commands (no backslash, no cmdlet: a Windows path or PowerShell's own syntax is not
    read)."""
    wrapped = _wrapper(command) if _depth < 3 else None
    if wrapped is not None:
        shell, text = wrapped
        cmd_switch = shell == "cmd" and re.search(r"(?:^|\s)/[A-Za-z]\b", text)
        if "\\" in text or cmd_switch:  # a Windows path, or cmd's own switches (dir /b)
            return Script(command, parsed=False)
        got = parse(text, _depth=_depth + 1)
        return Script(command, got.pipelines, parsed=got.parsed)
    if not command.strip() or len(command) > _MAX_COMMAND or _windows_shell(command):
        return Script(command, parsed=False)
    p = _parser()
    if p is None:
        return Script(command, parsed=False)
    src = command.encode("utf-8", "replace")
    try:
        tree = p.parse(src)
    except ValueError:  # the parser gave up (a timeout, a cancelled parse)
        return Script(command, parsed=False)
    if _has_error(tree.root_node):
        return Script(command, parsed=False)
    r = _Reader(src)
    r.statement(tree.root_node)
    pipelines: list[Pipeline] = []
    for pl in r.pipelines:
        if len(pl.commands) == 1 and _depth < 3:
            c = pl.commands[0]
            if is_shell(c.program) and len(c.args) >= 2 and re.fullmatch(r"-[a-z]*c", c.args[0]):
                inner = parse(c.args[1], _depth=_depth + 1)
                if not inner.parsed:
                    return Script(command, parsed=False)
                for k, q in enumerate(inner.pipelines):
                    pipelines.append(
                        attrs.evolve(q, connector=pl.connector if k == 0 else q.connector)
                    )
                continue
        pipelines.append(pl)
    return Script(command, tuple(pipelines), parsed=True)
