"""Shell calls corrected: the same intent done right, and what it teaches. Pure functions.

Two calls of a shell tool are compared as commands (:mod:`agentmem.agents.shell`), never
as strings, and only a failure that is a misuse (:func:`agentmem.agents.outcome`) is a
mistake to learn from. The command that failed is the one its diagnostic names (else
the script's last real command); a later successful call corrects it when it does the
same thing with exactly one recognisable change:

``location``
    The same program, one path operand (or redirect target) changed to a path with the
    same file name, after "No such file or directory": where the project keeps the file
    ("In this project notes.txt is at docs/notes.txt"). Exploration in between (``ls``,
    ``find``) is how the agent found it; it teaches nothing itself.
``interpreter``
    "python: command not found", then ``python3`` with the same arguments.
``wrapper``
    The program not found (or failing) bare, then the same command through ``uv run``,
    ``python -m``, ``npx``, ``nix-shell -p X --run``, ...
``program``
    The program not found, then another program on the same operands (``rg`` -> ``grep``).
``fullpath``
    The program not found on PATH, then the program called by its full path
    (``/opt/homebrew/bin/gh``), whatever its arguments: where this machine keeps it.

A program is not found when the shell says so, or when Windows could not start it: exit
status 9009 (49 in Git Bash) and no output at all, as the Microsoft Store's ``python``
stub does (:func:`agentmem.agents.outcomes.silent_not_found`); its lesson says it "does
not start here" and claims nothing of PATH (the stub is on it). While the program is not
found, a retry that fails too is passed over: the first one that works decides. An
interpreter running inline code (``python - <<'PY'``, ``python3 -c``) is retried by one
of its family with other inline code (the code never ran), or by another interpreter
running inline code (``node -e``: kind ``program``).
``prerequisite``
    The very same command worked after exactly one other command that is not mere
    reading (``mkdir -p dir`` before ``cat > dir/file``, an install).
``suggested``
    The failed output itself spelt the command that then worked (git's "use git push
    --set-upstream origin x"); the names it shares with the diagnostic become
    placeholders, and it is the program's rule (scope ``tool``) unless it names a path.
``flag`` / ``operand``
    The same program and subcommand, one flag or one operand changed, the failed output
    naming the one that was wrong (an unknown option, an unknown revision).
``dropped``
    The same command without one path operand that the failed output named (``git add``
    of a git-ignored file): the project does not take that path there.
``advised``
    The failed output advised a command in so many words ("Run 'mix format' to fix", a
    pre-commit check), the run's next shell call was exactly that command and worked, and
    no later call of the failed intent failed so again: the project's check and its
    remedy ("In this project git commit fails with 'Code is not formatted...': run mix
    format first, as its error says").

``environment``
    An interpreter could not import a module (``No module named X``; inline code that
    only imports it is a probe, its failure the answer), and a later successful call ran
    the same job (the same arguments, or inline code that imports X) with the
    interpreter of an environment (``./.venv/bin/python``, ``source venv/bin/activate &&
    python3``): the project's environment has what the interpreter that ran lacks.

``windows``
    cmd's or PowerShell's commands (``del``, ``Start-Sleep``, :func:`~agentmem.agents.
    programs.is_windows_command`) run in the Bash tool, which is Git Bash on Windows, and
    bash found no such program; or cmd's syntax (``cd /d``, ``if not exist``, ``dir /b``:
    :func:`~agentmem.agents.programs.cmd_syntax`) on a line naming a drive path, which
    bash rejected ("too many arguments", a syntax error); a later call did the job on the
    same path: the PowerShell tool, a client tool (Read), or bash's own command (for
    syntax, a retry in bash's syntax that got past it, whatever failed after). The run's
    first such failure teaches it, naming every such command of the run and what worked
    instead.

``separator``
    Windows PowerShell 5.1 (Codex's shell on Windows) refused ``&&`` or ``||`` ("The token
    '&&' is not a valid statement separator in this version": none of the line ran), and
    a later call ran the same commands joined with ``;`` or ``if ($?) { ... }``, or as
    separate calls, and worked: the machine's shell joins commands so. Or, before any
    call joined commands so again, a call did one joined command's job alone (a cmdlet:
    ``Get-ChildItem -Force`` for ``ls -la`` in ``rg --files || ls -la``) and worked.

``workdir``
    A script run (``node assets/build.js``, ``cd ~/.claude && bun hooks/self-test.ts``)
    failed on a path it could not find or resolve, its output naming that path, and a
    later successful call ran the same script by the same interpreter from another folder
    (``cd assets && node build.js``): the project's script runs from there.

``script``
    A package manager ran a project script (``pnpm run typecheck``) in a folder whose
    package.json has none ("Missing script: typecheck", naming that script), and a later
    call ran the same script by the same package manager in another folder (``cd
    dashboard && pnpm run typecheck``, ``npm --prefix web run lint``) and it ran there (its
    output echoes the script, or nothing but ``&&`` follows it): a monorepo keeps that
    script in a package.

``nostart``
    PowerShell found the program a line ran and could not start it (the Codex app's own
    ``rg.exe``: "Program 'rg.exe' failed to run ... Access is denied", its record in any
    language naming ``rg.exe``), and a later call did that command's job with another
    program or a cmdlet (``git ls-files`` lists as ``rg --files`` does) on the same
    places, and worked: this machine cannot run that program.

``crlf``
    A shell script failed because bash read its carriage returns (``$'\\r': command not
    found``, a shebang's ``bash\\r``: CRLF line endings), a later call converted line
    endings (``dos2unix``, ``sed -i 's/\\r$//'``, a replace of ``\\r\\n``), and the script
    then ran without that failure: the project's scripts need converting before they run.

``cwd``
    ``cd D`` (a relative D) failed naming D although an earlier successful call of the
    run went to D and none went elsewhere since: the shell kept its working directory
    between calls (Claude Code's Bash does); the same commands without the ``cd`` then
    worked. Leave it out, or use absolute paths.

``drive``
    A Windows program run from Git Bash could not open a path written the MSYS way
    (``/e/CC-test/x``: Git Bash converts a program's arguments, never a path inside code),
    its error naming it, and a later successful call of the same program wrote it as
    ``E:/CC-test/x``.

``encoding``
    Python could not print a character its console's encoding lacks (``UnicodeEncodeError:
    'gbk' codec can't encode``), and a later successful call of the same interpreter made
    its output UTF-8 (``sys.stdout.reconfigure(encoding='utf-8')``, ``PYTHONIOENCODING``,
    ``-X utf8``), which the failed call did not: a fact of this machine's console.

``existing``
    The command refused to create what already exists ("a pull request for branch ...
    already exists: .../pull/6689"), and the retry kept every option and operand but
    changed the action and named the existing thing as the output did (``gh pr create``
    -> ``gh pr edit 6689``): the program's rule, act on the existing one.

``hidden``
    ``rg --files -g G`` listed no file (exit 1: no match), and the run's next shell call,
    ``find . -name G``, found them all inside one hidden folder, which rg skips unless
    given ``--hidden``: where the project keeps those files ("In this project *.spec.yaml
    files are in .config/specs/, a hidden folder rg --files skips"). ``rg --files | rg
    R`` (a pattern of the paths) that listed nothing is the same question, answered when
    a discovery named a hidden folder and a call used a path under it that R matches.
    ``find`` may find them in several folders of one hidden top folder ("under .bmad/");
    each pattern of ``-g A -g B`` is read, a path inside a hidden folder
    (``-g '.specify/**'``) as a pattern of the whole path a later call used; and a
    content search (``rg PATTERN PATH``) that found nothing is answered when the very same
    rg with only ``--hidden`` (``-uu``) added found matches, each inside a hidden folder.

A retry is compared by structure, not by the shape its call was written in: wherever the
command sits in a compound or a pipeline, with ``time`` before it or ``sudo`` dropped,
after ``cd`` to the session's own folder (docs/learning-rules.md, "Shapes that do not
matter").

Anything else teaches nothing: another program (``git status`` then ``sed``), a failure
that was not a misuse (no match, failing tests, a cancelled sibling), a command the
parser cannot read, two changes at once. Every finding says its scope in
``detail["scope"]``: ``project`` (its paths, its commands), ``machine`` (what is or is
not installed here) or ``tool`` (a program's own rule).
"""

from __future__ import annotations

import bisect
import fnmatch
import itertools
import ntpath
import os
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable, Sequence

import attrs

from ..agents import ToolKind, command_line, is_shell, outcome, parse, programs, risk, spec_for
from ..agents.base import Failure
from ..agents.narrowed import is_home, norm_folder
from ..agents.outcomes import (
    TTY,
    asked_variables,
    blocked_sleep,
    claimed_command,
    claimed_intent,
    escalates,
    failing_command,
    job_commands,
    missing_script,
    missing_script_error,
    moves_nowhere,
    narrowed_searches,
    narrowing_command,
    not_started,
    own_timeout,
    powershell_refusal,
    refusal_line,
    same_command,
    silent_not_found,
    strip_headers,
    timed_out,
    wants_terminal,
)
from ..agents.programs import Role
from ..agents.shell import Command, Pipeline, is_cmdlet, powershell_call, wrapped_script
from ..claims import ABSENT, EXISTS, NOT_ON_PATH, ON_PATH
from ..records import Step, Trajectory
from .findings import Finding, lesson_text, quote_error
from .kinds import Kind

__all__ = [
    "SHELL_CHANGES",
    "ShellChange",
    "ShellFix",
    "across",
    "claims_of",
    "compare",
    "find_shell_fixes",
    "gave_up",
    "reads_only",
    "short",
]

#: How many later calls a failed call's retry is looked for in.
WINDOW = 8
_MISSING_PATH = re.compile(
    r"No such file or directory|cannot access|does not exist|not found", re.I
)
#: Words of a diagnostic that name what follows them (``branch x``): a placeholder's kind.
_NOUNS = frozenset(
    "branch remote file directory folder path tag module package image container pod "
    "namespace service host user repository repo commit revision".split()
)
_OPTION_RULE = re.compile(r"unknown|unrecogni[sz]ed|invalid|illegal|not supported", re.I)
#: A failed output's advice in so many words: "Run 'mix format' to fix".
_ADVICE = re.compile(r"(?:\b|(?<=\\n))[Rr]un\s+['\"`]([^'\"`\n\\]{2,80})['\"`]\s+to\s+fix\b")


@attrs.frozen
class ShellFix:
    """One shell correction: call ``failed`` fixed by call ``fixed`` (indices of the run
    as learning sees it), the calls that made the change, and the finding."""

    failed: int
    fixed: int
    between: tuple[int, ...]
    finding: Finding
    why: str


def short(c: Command, limit: int = 60) -> str:
    """A command as a lesson writes it: its words and redirections, clipped."""
    parts = list(c.words)
    for op, target in c.redirects:
        if op in (">", ">>", "<") and target and not target.isdigit():
            parts.append(f"{op} {target}")
    text = re.sub(r"\s+", " ", " ".join(parts)).strip()
    text = text.replace("'", "").replace('"', "").replace("`", "")
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _intent(c: Command) -> str:
    return f"{c.program} {c.subcommand}" if c.subcommand else c.program


def reads_only(c: Command) -> bool:
    """Whether command ``c`` only reads or looks around (:attr:`Role.READER`: ``cat``,
    ``sed -n``; a version-control program's reading subcommand, ``git diff``), writing no
    file by ``>`` or ``>>`` (a version-control program's redirect is not checked here)."""
    if programs.has(c.program, Role.VCS):
        return Role.READER in programs.sub_roles(c.program, c.subcommand)
    return programs.has(c.program, Role.READER) and not any(
        op in (">", ">>") for op, _ in c.redirects
    )


def _only_prints(c: Command) -> bool:
    """``c`` fetched and printed, writing no file (``curl URL``, not ``curl -o x URL`` or
    ``curl URL > x``): :func:`programs.only_prints`. ``2>/dev/null`` writes no file; a
    pipe on (``curl URL | sh``, marked by :func:`_as_between`) ran what it fetched."""
    return programs.only_prints(c.program, c.args) and not any(
        (op in _WRITES and t != "/dev/null") or op == "|" for op, t in c.redirects
    )


def _as_between(step: Step) -> list[Command]:
    """A successful call's commands, as calls between a failure and its fix: a fetch
    whose output a pipe carries on (``curl URL | sh``) gets a ``("|", next program)``
    redirect, so that it never reads as one that only printed (review 27: the curl left
    out made "jq is missing here: run sh first")."""
    found = spec_for(step.tool)
    script = parse(command_line(found[1], step.params)) if found else None
    if script is None or not script.parsed:
        return []
    out: list[Command] = []
    for p in script.pipelines:
        for c, nxt in zip(p.commands, (*p.commands[1:], None)):
            if nxt is not None and _only_prints(c):
                c = attrs.evolve(c, redirects=(*c.redirects, ("|", nxt.program)))
            out.append(c)
    return out


def _only_shows(s: Command, f: Command) -> bool:
    """Whether ``s`` only lists, prints, asks or sets the scene (:attr:`Role.LISTS`,
    :attr:`Role.READER`, :attr:`Role.PROBE`, :attr:`Role.SCENE`) where the failed
    ``f`` did work. In a compound retry (``mkdir d && python3 -c '...' && find d``)
    such a step shows the result of the step that did the job, and never stands in
    for ``f``. A lister stands in for a lister (``tree`` missing, ``find`` ran)."""

    def helper(c: Command) -> bool:
        return reads_only(c) or any(
            programs.has(c.program, r) for r in (Role.LISTS, Role.SCENE, Role.PROBE)
        )

    return helper(s) and not helper(f)


def _targets(c: Command) -> tuple[str, ...]:
    """A command's operands and the files it writes (``> file``)."""
    return (
        *c.operands,
        *(t for op, t in c.redirects if op in (">", ">>", "<") and t and t != "/dev/null"),
    )


def _bare(name: str) -> str:
    """A program's name without Windows' ``.exe`` (``python.exe`` is ``python``)."""
    return name[:-4] if name.lower().endswith(".exe") else name


def _missing_program(c: Command, diag: str, body: str) -> str | None:
    """The word of ``c`` the shell did not find (its program, or a wrapper's program such as
    the ``python`` of ``python -m py_compile``), or None. A call that Windows could not
    start (exit 9009, 49 in Git Bash, and no output: :func:`silent_not_found`) did not
    find its program either."""
    if silent_not_found(diag):
        return c.wrappers[0].split()[0] if c.wrappers else c.program
    text = f"{diag}\n{body[:600]}"
    # a wrapper that could not start the program says so in its own words: "env: 'rg': No
    # such file or directory", "timeout: failed to run command 'rg': No such file ..."
    heads = "|".join(re.escape(w.split()[0]) for w in c.wrappers)
    for name in (c.program, *(w.split()[0] for w in c.wrappers)):
        n = re.escape(name)
        said = [
            rf"\b{n}: (command )?not found|command not found: {n}\b",
            rf"\b{n}\b.{{0,40}}is not recognized",
            rf"[Uu]nknown command:? ['\"‘`]?{n}\b",  # fish
        ]
        if heads and name == c.program:
            said.append(
                rf"\b(?:{heads}): (?:failed to run command )?['\"‘`]?{n}['\"’`]?: No such file"
            )
        if any(re.search(x, text) for x in said):
            return name
    return None


def _same_args(a: Command, b: Command) -> bool:
    return a.args == b.args and _targets(a) == _targets(b)


def _wrappers(c: Command) -> tuple[str, ...]:
    """``c``'s wrappers that change what it does: without those that run it as it is
    (:attr:`Role.TRANSPARENT`: ``time``, ``nice``, ``nohup``), which a retry may add or
    drop and still run the same command."""
    return tuple(w for w in c.wrappers if not programs.has(w.split()[0], Role.TRANSPARENT))


def _own_words(c: Command) -> tuple[str, ...]:
    """``c``'s words without the wrappers that run it as it is (``time git push x`` is
    ``git push x``); its words as written when another wrapper starts it."""
    if _wrappers(c) or not c.wrappers:
        return c.words
    at = next((k for k, w in enumerate(c.words) if os.path.basename(w) == c.program), 0)
    return c.words[at:]


def _privileged(w: str) -> bool:
    return programs.has(w.split()[0], Role.PRIVILEGE)


def _same_wrappers(f: Command, s: Command) -> bool:
    """Whether retry ``s`` runs ``f``'s command the same way: the same wrappers, up to those
    that run it as it is (:func:`_wrappers`), or ``f``'s without a privilege it dropped
    (``sudo git show --no-stat x`` -> ``git show x``: less privilege made nothing work).
    A retry that adds ``sudo`` is never the same: the privilege may be what worked."""
    a, b = _wrappers(f), _wrappers(s)
    return a == b or tuple(w for w in a if not _privileged(w)) == b


#: Options by which an interpreter runs code given on its command line.
_CODE_FLAGS = frozenset({"-c", "-e", "--eval", "-Command"})


def _code(c: Command, line: str) -> str:
    """The code inline command ``c`` runs, as far as it can be read: its words, and for a
    here-document (``python3 - <<'PY'``, whose body the shell reader does not keep) the
    bodies of the here-documents of the ``line`` of its call, never the line's other
    commands (``ls -la x.zip &&`` before it names a file the code need not touch)."""
    words = " ".join(c.words)
    if not any(op in ("<<", "<<-") for op, _ in c.redirects):
        return words
    return " ".join([words, *_heredoc_bodies(line)])


#: Where a here-document starts (``<<'PY'``, ``<<-EOF``; not a here-string, ``<<<``).
_HEREDOC_MARK = re.compile(r"(?<!<)<<-?[ \t]*(['\"]?)(\w+)\1")


def _heredoc_bodies(line: str) -> list[str]:
    """The bodies of the here-documents of command ``line``, each from the line after its
    marker to its delimiter's line, in one pass (a body's own ``<<``, C++'s ``cout << x``,
    is body, never a marker)."""
    out: list[str] = []
    lines, k = line.split("\n"), 0
    while k < len(lines):
        delims = [m.group(2) for m in _HEREDOC_MARK.finditer(lines[k])]
        k += 1
        for delim in delims:
            start = k
            while k < len(lines) and lines[k].strip() != delim:
                k += 1
            out.append("\n".join(lines[start:k]))
            k += 1
    return out


def _inline(c: Command) -> bool:
    """Whether ``c`` is an interpreter running code written into the call (``python -c``,
    ``node -e``, ``python - <<'PY'``) rather than a file of the project."""
    if not programs.is_interpreter(_bare(c.program)):
        return False
    return bool(_CODE_FLAGS & set(c.flags)) or (
        any(op in ("<<", "<<-", "<<<") for op, _ in c.redirects)
        and all(o == "-" for o in c.operands)
    )


def _same_job(f: Command, s: Command) -> bool:
    """Whether ``s`` runs what ``f`` ran: the same arguments, or both the same kind of inline
    code (its text may differ: a program that never started ran none of it)."""
    if f.args == s.args or f.operands == s.operands:
        return True
    return _inline(f) and _inline(s) and set(f.flags) & _CODE_FLAGS == set(s.flags) & _CODE_FLAGS


def _scope_for_wrapper(w: str) -> str:
    """A wrapper that provides a program from the machine (``nix-shell -p``, ``sudo``,
    ``python -m``) makes a machine fact; a project's runner (``uv run``) a project one."""
    head = w.split()[0]
    machine = programs.has(head, Role.MACHINE) or (programs.is_python(head) and w.endswith(" -m"))
    return "machine" if machine else "project"


def _installer(c: Command) -> bool:
    return programs.has(c.program, Role.INSTALLER)


def _finding(
    change: str,
    c: Command | str,
    scope: str,
    text: str,
    facts: tuple[str, ...],
    diag: str,
    **more: object,
) -> Finding:
    """A shell finding of ``change`` about command ``c`` (or a program named outright: a
    shell, a cmdlet)."""
    program = c if isinstance(c, str) else c.program
    detail: dict[str, object] = {
        "change": change,
        "scope": scope,
        "error": diag,
        "program": program,
    }
    detail.update(more)
    return Finding(Kind.SHELL, program, "", lesson_text(text), facts, detail=detail)


#: Options that only ask a program for its usage or version, wherever they stand.
_ASKS = frozenset({"--help", "--version"})


def _asks_itself(c: Command) -> bool:
    """Whether ``c`` only asks its program about itself: ``--help``, ``--version``, a
    ``help`` subcommand, or a bare ``-h`` / ``-V`` (unless it does a job alone: ``df -h``,
    :func:`programs.does_alone`). Its success shows usage, never that a job was done;
    after a failure it is a look at the program, never its retry."""
    bare = c.args in (("-h",), ("-V",)) and not programs.does_alone(c.program, c.args[0])
    return bool(set(c.args) & _ASKS) or c.args[:1] == ("help",) or bare


def _no_looks(f: Command, cmds: Sequence[Command]) -> list[Command]:
    """``cmds`` without those that only look at a program (``jq --version`` after its
    install: :func:`_asks_itself`) where the failed ``f`` did not: a look is never the
    retry, nor a step that made it work (review 27: it ended the search)."""
    return list(cmds) if _asks_itself(f) else [x for x in cmds if not _asks_itself(x)]


def compare(
    f: Command,
    s: Command,
    diag: str,
    body: str,
    between: Sequence[Command],
    task: str = "",
    line: str = "",
    later: str = "",
) -> Finding | None:
    """The finding when successful command ``s`` corrects failed command ``f`` (see the
    module doc), ``between`` the successful commands run in between; else None. ``line``:
    the failed call's whole command line (its variables' assignments); ``later``: the
    successful call's (a here-document's code)."""
    q = quote_error(re.sub(r"^(fatal|error|Error|ERROR): ", "", diag), 8)
    missing = _missing_program(f, diag, body)
    if missing:
        return _provided(f, s, q, diag, between, missing, line, later)
    if _asks_itself(s) and not _asks_itself(f):
        # "unknown command context for gt; Run 'gt --help' for usage", then gt --help: a
        # look at the usage, not the job done another way (development set 14)
        return None
    if _intent(f) != _intent(s) or not _same_wrappers(f, s):
        fw, sw = _wrappers(f), _wrappers(s)
        if (
            _intent(f) == _intent(s)
            and set(fw) < set(sw)
            and _same_args(f, s)
            and not any(_privileged(w) for w in set(sw) - set(fw))  # a workaround, not a rule
        ):
            w = next(x for x in sw if x not in fw)
            how = short(s, 40)
            text = f"Run {f.program} through {w} here ({how}); bare {f.program} fails with '{q}'."
            return _finding(
                "wrapper", f, _scope_for_wrapper(w), text, (f.program, w), diag, avoid=[]
            )
        return None
    if _same_args(f, s):
        return _prerequisite(f, s, q, diag, between)
    if _own_words(s) != _own_words(f) and advises(body, s):
        return _suggested(f, s, diag)
    found = _pattern(f, s, diag) or _existing(f, s, diag, body)
    if found is not None:
        return found
    if _passed(f) != _passed(s) and f.flags == s.flags and _rest(f) == _rest(s):
        return _flag(f, s, q, diag, body)  # npm test -- --runInBand, then npm test
    if f.flags == s.flags or _inert_flags(f, s, diag):
        return _operand(f, s, q, diag, body, task)
    if f.operands == s.operands and _targets(f) == _targets(s):
        return _flag(f, s, q, diag, body)
    return _forced(f, s, q, diag, body)


#: Words that quote a command as advice: "use git push ...", "Run `x`", "did you mean x".
_ADVICE_VERBS = (
    r"(?:run|try|use|type|execute|instead|did you mean|you meant|perhaps you meant|"
    r"maybe you meant|the most similar commands? (?:is|are))"
)


def advises(body: str, s: Command) -> bool:
    """Whether a failed output quotes command ``s`` as advice: after a word that advises
    ("Run `x`", "try x", "use\\n    x", "did you mean x") and whole, never a word of the
    output that merely begins with the program's name (``ls: x: No such file``)."""
    words = _own_words(s)
    if len(words) < 2:
        return False  # a bare program name is never advice enough
    cmd = r"\s+".join(re.escape(w) for w in words)
    pat = rf"(?i)\b{_ADVICE_VERBS}\b[^\n]{{0,30}}?(?:[\s:'\"`]|\\n)*{cmd}(?![\w./-])"
    return re.search(pat, body[:4000]) is not None


def _suggested(f: Command, s: Command, diag: str) -> Finding:
    """The failed output spelt the command that worked; a name it shares with the
    diagnostic (the branch of "The current branch x has no upstream") is the situation's,
    not a constant: it becomes a placeholder."""
    said = re.sub(r"^(fatal|error|Error|ERROR): ", "", diag)
    how = short(s)
    for w in dict.fromkeys(s.operands):
        m = re.search(rf"(\w+)\s+['\"]?{re.escape(w)}\b", said)
        if len(w) > 2 and m and m.group(1).lower() in _NOUNS:
            name = m.group(1).lower()
            said = said.replace(w, f"<{name}>")
            how = re.sub(rf"(?<![\w/.-]){re.escape(w)}(?![\w/.-])", f"<{name}>", how)
    text = f"If {_intent(f)} fails with '{quote_error(said, 9)}', run {how}, as its error says."
    # the program's own advice holds wherever it runs, unless it names this project's paths
    scope = "project" if any("/" in w or w.startswith(".") for w in s.operands) else "tool"
    return _finding("suggested", f, scope, text, (f.program,), diag, avoid=[])


def _provided(
    f: Command,
    s: Command,
    q: str,
    diag: str,
    between: Sequence[Command],
    missing: str,
    line: str = "",
    later: str = "",
) -> Finding | None:
    """``missing`` (``f``'s program or a wrapper's) is not found here: renamed, wrapped,
    replaced or installed."""
    if missing != f.program:  # a wrapper's program: python of python -m x
        heads = [w.split()[0] for w in _wrappers(s)]
        renamed = [h for h in heads if h != missing and _family(h) == _family(missing)]
        if f.program == s.program and renamed and _family(missing):
            text = f"{missing} is not on PATH here ('{q}'): run {renamed[0]} instead."
            facts = (renamed[0], missing)
            return _finding("interpreter", f, "machine", text, facts, diag, avoid=[missing])
        return None
    if f.program == s.program and set(_wrappers(f)) < set(_wrappers(s)):
        w = next(x for x in _wrappers(s) if x not in _wrappers(f))
        text = f"{f.program} is not on PATH here ('{q}'): run it through {w} ({short(s, 40)})."
        return _finding("wrapper", f, _scope_for_wrapper(w), text, (f.program, w), diag, avoid=[])
    silent = {"silent": True} if silent_not_found(diag) else {}
    if _bare(f.program) == _bare(s.program) and not _wrappers(s):
        fw, sw = _program_word(f), _program_word(s)
        if fw != sw and "/" in sw and "/" not in fw:  # gh not found; /opt/homebrew/bin/gh ran
            # where the program is, whatever the call: its arguments may differ
            text = f"{_absent(f.program, q, diag)}: call it as {sw}."
            machine = sw.startswith(("/", "~")) or re.match(r"[A-Za-z]:/", sw)
            scope = "machine" if machine else "project"
            facts = (f.program, sw)
            return _finding("fullpath", f, scope, text, facts, diag, avoid=[], **silent)
    fam = _family(_bare(f.program))
    if fam and fam == _family(_bare(s.program)) and f.program != s.program:
        if _same_job(f, s):
            text = f"{_absent(f.program, q, diag)}: run {s.program} instead."
            facts = (s.program, f.program)
            return _finding(
                "interpreter", f, "machine", text, facts, diag, avoid=[f.program], **silent
            )
        return None
    if _inline(f) and _inline(s) and _bare(f.program) != _bare(s.program):
        # python - <<'PY' not found; node -e '...' did the job: another interpreter
        how = next((x for x in s.flags if x in _CODE_FLAGS), "")
        text = f"{_absent(f.program, q, diag)}; {s.program} {how} ran the inline code instead."
        text = re.sub(r"\s+", " ", text)
        facts = (s.program, f.program)
        return _finding("program", f, "machine", text, facts, diag, avoid=[f.program], **silent)
    if f.program == s.program and _same_args(f, s):
        # a fetch that only printed (curl URL) put no program here (review 26)
        installs = [
            b
            for b in between
            if not reads_only(b) and b.program != f.program and not _only_prints(b)
        ]
        if len(installs) == 1:
            b = installs[0]
            scope = "machine" if _installer(b) or "-g" in b.flags else "project"
            text = f"{f.program} is missing here ('{q}'): run {short(b, 40)} first."
            facts = (f.program, b.program)
            return _finding("prerequisite", f, scope, text, facts, diag, helper=short(b))
        return None
    shared = {o for o in f.operands if len(o) > 1} & set(s.operands)
    if f.program != s.program and shared and not _wrappers(s) and not _only_shows(s, f):
        text = f"{f.program} is not installed here ('{q}'); {_intent(s)} did the same job."
        facts = (s.program, f.program)
        return _finding("program", f, "machine", text, facts, diag, avoid=[f.program])
    return _module_job(f, s, q, diag, line, later)


def _module_job(f: Command, s: Command, q: str, diag: str, line: str, later: str) -> Finding | None:
    """``f``'s program not found; Python's inline code ``s`` (``later``: its call's line,
    a here-document's code) imported the standard library's module for its job
    (:func:`programs.python_module`) and named one of its files (``line``: the failed
    call's, for a variable's value: :func:`_operand_texts`)."""
    module = programs.python_module(f.program)
    code = _code(s, later)
    if (
        module
        and _inline(s)
        and programs.is_python(_bare(s.program))
        and re.search(rf"\b(?:import|from)\s+{module}\b", code)
        and any(o in code for o in _operand_texts(f, line) if re.search(r"[./]", o) and len(o) > 2)
    ):
        # unzip not found; python3 -c "import zipfile; zipfile.ZipFile('x.zip')..." on the
        # same archive: the standard library's module for the job (programs.python_module)
        text = (
            f"{f.program} is not installed here ('{q}'): Python's {module} module did the "
            f'job ({s.program} -c "import {module}; ...").'
        )
        facts = (s.program, f.program)
        return _finding("program", f, "machine", text, facts, diag, avoid=[f.program])
    return None


def _operand_texts(f: Command, line: str) -> list[str]:
    """``f``'s operands as text another program's code could name: each as written, and
    for a shell variable (``"$f"``) the literal parts of its value where ``line`` assigns
    it (``f="save/run_${t}/prompts/${t}.json"``: ``save/run_``, ``/prompts/``), eight
    characters or more (gflownet-b7: jq on ``$f`` in a loop, then Python's json on
    ``base='save/run_'``)."""
    out = list(f.operands)
    for o in f.operands:
        v = re.fullmatch(r"\$\{?(\w+)\}?", o)
        if v is None:
            continue
        for m in re.finditer(rf"(?<![\w$]){v.group(1)}=(\"[^\"]*\"|'[^']*'|\S+)", line):
            parts = re.split(r"\$\{?\w+\}?", m.group(1).strip("'\""))
            out += [x for x in parts if len(x) >= 8]
    return out


def _absent(program: str, q: str, diag: str) -> str:
    """How a lesson says that ``program`` was not found (``q`` its quoted diagnostic)."""
    if silent_not_found(diag):  # no output to quote: the exit code, told unquoted
        return f"{program} does not start here ({q}: Windows could not run it)"
    return f"{program} is not on PATH here ('{q}')"


#: A refusal to reach a file (a sandbox's or the system's), on a line of an output.
_ACCESS_REFUSED = re.compile(
    r"(?i)permission denied|read-only file system|operation not permitted|EACCES|EROFS|EPERM"
)
#: An absolute path on such a line (POSIX or a Windows drive's): a quoted one whole, spaces
#: and all (``'/Users/me/Year 4/specs'``), else up to a space.
_REFUSED_PATH = re.compile(
    r"'((?:/|[A-Za-z]:[\\/])[^'\n]+)'|\"((?:/|[A-Za-z]:[\\/])[^\"\n]+)\"|"
    r"(?<![\w.~/-])((?:/|[A-Za-z]:[\\/])[^\s'\"`:,;()]+)"
)


def refused_named_target(step: Step) -> str | None:
    """The folder of a path that a refused call's output refuses access to and the call's
    own command names (an output file the agent chose, ``cp x /etc/y``), or None. The
    refusal is of that target, not of the program, which did run (blind set 12: an R
    script that read a notebook was refused writing it back outside the writable
    folders, and "Rscript is refused in the sandbox" was false). A path the command does
    not name (a tool's cache, the repository's ``.git``) leaves the program's refusal
    standing."""
    found = spec_for(step.tool)
    text = command_line(found[1], step.params) if found else ""
    if not text:
        return None
    for line in step.output.splitlines():
        if _ACCESS_REFUSED.search(line):
            for m in _REFUSED_PATH.finditer(line):
                path = next(g for g in m.groups() if g)
                if m.group(3):  # unquoted: it may go on past a space, as the command wrote it
                    rest = line[m.start() :].rstrip()
                    path = next(
                        (rest[:n] for n in range(len(rest), len(path), -1) if rest[:n] in text),
                        path,
                    )
                path = path.rstrip("/.'\" ")
                if len(path) > 1 and path in text:
                    # a file's folder (x/out.ipynb: x); a name without a suffix is a folder
                    slashed = path.replace("\\", "/")
                    named = posixpath.basename(slashed)
                    return (posixpath.dirname(slashed) if "." in named else slashed) or path
    return None


def _refusal_quote(diag: str, step: Step) -> str:
    """What an escalation's lesson quotes of the refusal: the diagnostic's refusal line, else
    the output's; the command's own stderr rather than the importer's heading "sandbox
    denied (exit code 1)", which says no more than that."""
    said = refusal_line(diag) or refusal_line(step.output) or diag
    if said.startswith("sandbox denied"):
        said = refusal_line(step.output) or said
    return said


def _escalated(f: Command, diag: str, step: Step, param: str, value: object) -> Finding:
    """:func:`_escalation` of refused call ``step`` (its command ``f``), quoting its refusal
    and naming the folder of a target it named (:func:`refused_named_target`)."""
    quote = _refusal_quote(diag, step)
    broken = _SANDBOX_BROKEN.match(quote)
    # the run's own bwrap (sandbox-exec) nested in the sandbox: a refusal of that program
    if broken and not re.search(rf"(?<![\w-]){broken.group(1)}(?![\w-])", _line(step)):
        return _no_sandbox(f, quote, param, value)
    return _escalation(f, quote, param, value, refused_named_target(step))


#: The sandbox's own launcher failing before any command ran: Linux's bubblewrap
#: (``bwrap: Failed to make / slave: Permission denied``) or macOS's ``sandbox-exec``.
_SANDBOX_BROKEN = re.compile(r"(bwrap|sandbox-exec): ")


def _setting_value(value: object) -> str:
    """An escalation parameter's value as a lesson writes it (``true``, ``require_escalated``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _no_sandbox(f: Command, quote: str, param: str, value: object) -> Finding:
    """The sandbox itself could not start on this machine (:data:`_SANDBOX_BROKEN`), so
    every command failed alike and ran once escalated: the machine's fact, not a rule
    about the program that happened to be first (seokhyeonhong-motion-jepa: "sed is
    refused" was said of a pipeline the sandbox never started). Held, as every
    escalation is."""
    q = quote_error(quote, 8)
    shown = _setting_value(value)
    launcher = quote.split(":", 1)[0]
    text = (
        f"On this machine the sandbox cannot start ('{q}'): every command fails alike; "
        f"they ran with {param}: {shown}."
    )
    return _finding(
        "escalation",
        f,
        "machine",
        text,
        (launcher, param),
        quote,
        risk="escalation",
        setting=[param, shown],
        intent="every command",
        target="",
        avoid=[],
    )


def _escalation(
    f: Command, diag: str, param: str, value: object, target: str | None = None
) -> Finding:
    """The same command refused (the sandbox, a permission), then run with an escalation
    parameter: a correction, and a risky one (it widens what the agent may do), tagged
    ``risk: escalation`` so that it is held for a person, never served as advice alone.
    ``target``: the folder whose file the refusal named, a path the command itself named
    (:func:`refused_named_target`): the lesson is of that folder, not of the program."""
    q = quote_error(diag or "refused", 8)
    shown = _setting_value(value)
    setting = f"{param}: {shown}"
    # the program and its subcommand, never its operands (a commit message, a branch name);
    # the program an unknown leading word starts, not that word (rtk git add: git add)
    intent = claimed_intent(f) if target is None else f"files under {target}"
    program = claimed_command(f).program
    if target is None:
        text = f"In this project {intent} is refused in the sandbox ('{q}'); it ran with "
    else:
        text = f"In this project {intent} are refused in the sandbox ('{q}'); {program} "
        text += "reached them with "
    text += f"{setting}."
    return _finding(
        "escalation",
        f,
        "project",
        text,
        (program, param) if target is None else (target, program, param),
        diag,
        risk="escalation",
        setting=[param, shown],
        intent=intent,
        target=target or "",
        avoid=[],
    )


def _terminal(f: Command, diag: str) -> Finding:
    """The same command failed for want of a terminal, then ran with ``tty: true``."""
    q = quote_error(diag or "not a terminal", 8)
    text = f"{_intent(f)} needs a terminal ('{q}'): start it with tty: true."
    return _finding(
        "terminal", f, "tool", text, (f.program, TTY), diag, setting=[TTY, "true"], avoid=[]
    )


#: A flag that asks for a terminal: ``-t``, ``--tty``, or a cluster of short flags
#: holding ``t`` (``-it``, ``-ti``).
_TTY_FLAG = re.compile(r"^(?:--tty|-[a-zA-Z]{0,2}t[a-zA-Z]{0,2})$")
#: A shell tool's answer that the command was started in the background, not run.
_BACKGROUNDED = re.compile(r"running in (?:the )?background|background with ID", re.I)


def _tty_flag_dropped(f: Command, s: Command) -> str | None:
    """The one terminal flag (:data:`_TTY_FLAG`) that retry ``s`` dropped from failed
    ``f`` (``-it`` gone, or made ``-i``), every other word alike; else None."""
    if f.operands != s.operands or _targets(f) != _targets(s) or not _same_wrappers(f, s):
        return None
    gone = [x for x in f.flags if x not in s.flags]
    new = [x for x in s.flags if x not in f.flags]
    if len(gone) != 1 or not _TTY_FLAG.match(gone[0]) or len(new) > 1:
        return None
    flag = gone[0]
    if new and (flag.startswith("--") or new[0] != flag.replace("t", "")):
        return None  # another flag in its place: a second change
    return flag


def _no_terminal(f: Command, flag: str, diag: str) -> Finding:
    """The command failed for want of a terminal; the same command without its terminal
    flag worked: the agent's shell has none to give."""
    q = quote_error(diag or "not a terminal", 8)
    text = (
        f"{_intent(f)} {flag} fails here: the agent's shell has no terminal ('{q}'); "
        f"run it without {'-t' if flag != '--tty' else flag}."
    )
    return _finding("notty", f, "tool", text, (f.program, flag), diag, avoid=[flag])


#: A variable whose value may be a secret: a lesson writes ``<value>``, never the value.
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:\w*KEY|\w*TOKEN|SECRET|PASS\w*|CRED\w*|AUTH|COOKIE|SESSION|PRIVATE|DSN)(?:_|$)"
)


def _asked_vars(diag: str, body: str) -> frozenset[str]:
    """The environment variables a failed output asks for in so many words."""
    return asked_variables(f"{diag}\n{body}")


def _set_in(c: Command, line: str, name: str) -> str | None:
    """The value call ``line`` gives ``name`` for its command ``c``: ``X=v cmd``, ``env X=v
    cmd``, ``export X=v; cmd`` (PowerShell's ``$env:X = v``, cmd's ``set X=v``); None."""
    head = c.words[: c.words.index(c.program)] if c.program in c.words else ()
    for w in (*c.assignments, *head):  # X=v cmd; env X=v cmd
        if w.startswith(name + "="):
            return w[len(name) + 1 :].strip("'\"")
    m = re.search(
        rf"(?:\bexport\s+|\bset\s+|\$env:){re.escape(name)}\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s;&|]*)",
        line,
    )
    return m.group(1).strip("'\"") if m else None


def _env_asked(f: Command, c: Command, failed: Step, retry: Step, diag: str) -> Finding | None:
    """``env``: the failed output asked for an environment variable in plain words, the
    failed call did not set it, and the retry ran the same command with it set. The lesson
    writes the command the retry ran, so that :mod:`agentmem.agents.risk` reads it: a
    variable that weakens security (``NODE_TLS_REJECT_UNAUTHORIZED=0``) is held."""
    if f.args != c.args:
        return None
    line, was = _line(retry), _line(failed)
    for name in sorted(_asked_vars(diag, failed.output)):
        value = _set_in(c, line, name)
        if value is None or _set_in(f, was, name) is not None:
            continue
        plain = re.fullmatch(r"[\w.:/@-]{1,24}", value) and not _SECRET_NAME.search(name)
        shown = value if plain else "<value>"
        q = quote_error(diag, 10)
        words = [w for w in c.words if not w.startswith(name + "=")]
        if words and words[0] == "env" and (len(words) < 2 or "=" not in words[1]):
            words = words[1:]  # env X=v cmd: the assignment says it all
        run = f"{name}={shown} {' '.join(words)}"
        text = f"In this project {_intent(f)} needs {name} set ('{q}'): run it as "
        text += f"{name}={shown} {short(attrs.evolve(c, words=tuple(words)), 40)}."
        return _finding(
            "env", f, "project", text, (f.program, name), diag, good=run, var=name, avoid=[]
        )
    return None


def _env(t: Trajectory, i: int) -> ShellFix | None:
    """The ``env`` finding of shell call ``i`` (see :func:`_env_asked`): a misuse, or a
    failure the view counts as the code's (a script that stops on a missing setting)."""
    step = t.steps[i]
    o = outcome(step)
    diag = o.diagnostic or step.output.strip().split("\n", 1)[0]
    if not is_shell(step.tool) or step.success or not _asked_vars(diag, step.output):
        return None
    found = spec_for(step.tool)
    script = parse(command_line(found[1], step.params)) if found else None
    f = failing_command(script, step.output) if script is not None and script.parsed else None
    if f is None:
        return None
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        cmds = (_commands(later) if is_shell(later.tool) else None) or ()
        c = next((x for x in cmds if x.program == f.program and x.args == f.args), None)
        if c is None:
            continue
        if not later.success or not _proven(later, c):
            return None  # it failed again: setting it was not enough
        fnd = _env_asked(f, c, step, later, diag)
        if fnd is None:
            return None
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} {short(f)} asked for {fnd.detail['var']}; call {j + 1} set it"
        return ShellFix(i, j, (), fnd, why)
    return None


def _filters(c: Command) -> bool:
    """Whether ``c`` at the end of a pipeline only reads or trims what it is given (``| jq
    .``, ``| head``), run as it is: not a program that does the job with it (``| python3
    x.py``, ``| tee f``, ``| xargs rg``), nor one under another wrapper (``| sudo jq``:
    sudo's "command not found" is of its own PATH)."""
    reads = any(programs.has(c.program, r) for r in (Role.READER, Role.FILTER, Role.LINES))
    return reads and not programs.has(c.program, Role.CREATES) and not _wrappers(c)


def _not_the_pipes(pipe: Sequence[Command], diag: str) -> bool:
    """Whether the "not found" is not the pipeline's own: an upstream program or script's
    line said it (``./run.sh: line 2: grep: command not found``), or Windows' shells
    (PowerShell has no ``head``, the Git Bash beside it has)."""
    if "is not recognized" in diag:
        return True
    # an upstream program or the script it ran heads the line (``bash build.sh | tail``:
    # "build.sh: line 4: tail: command not found")
    names = {posixpath.basename(w) for c in pipe[:-1] for w in c.words if not w.startswith("-")}
    return any(
        re.search(rf"(?:^|[/\\\s]){re.escape(n)}:", diag) for n in names if re.search("[A-Za-z]", n)
    )


def _programs_of(s: Step) -> set[str]:
    found = spec_for(s.tool) if is_shell(s.tool) else None
    script = parse(command_line(found[1], s.params)) if found else None
    return {c.program for c in script.commands} if script is not None and script.parsed else set()


def _missing_filter(t: Trajectory, i: int) -> ShellFix | None:
    """``nofilter``: the program at the end of a pipeline was not found (``curl -s URL |
    jq .``: "command not found: jq"), and within :data:`WINDOW` calls, before any call ran
    that program again, one ran the same pipeline without it and worked: the program is
    missing here, and its input served as it was. Only a program the program table knows
    (a typo, ``| hed``, is no missing program) as a filter (:func:`_filters`), at the end of
    a pipeline of two or more, that the pipeline itself did not find (:func:`_not_the_pipes`)
    and that no call of the run ran with success."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool):
        return None
    found = spec_for(step.tool)
    script = parse(command_line(found[1], step.params)) if found else None
    if script is None or not script.parsed or not script.pipelines:
        return None
    pipe = script.pipelines[-1].commands
    last = pipe[-1]
    if len(pipe) < 2 or not _filters(last):
        return None
    o = outcome(step)
    diag = o.diagnostic or ""
    if _missing_program(last, diag, step.output) != last.program or _not_the_pipes(pipe, diag):
        return None
    if any(last.program in _programs_of(s) for s in t.steps[i + 1 :] if s.success):
        return None  # it ran later in the run: installed, or found there
    upstream = [c.words for c in pipe[:-1]]
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        lf = spec_for(later.tool)
        if lf is None or not is_shell(later.tool):
            continue
        ls = parse(command_line(lf[1], later.params))
        if not ls.parsed:
            continue
        if any(c.program == last.program for c in ls.commands):
            return None  # run again (installed, found elsewhere): another lesson's
        if not later.success or not ls.pipelines:
            continue
        if [c.words for c in ls.pipelines[-1].commands] != upstream:
            continue
        q = quote_error(diag, 8)
        head = short(pipe[-2], 40)
        text = (
            f"{last.program} is not installed here ('{q}'): run the command without "
            f"{last.program} ({head} worked alone)."
        )
        fnd = _finding(
            "nofilter", last, "machine", text, (last.program,), diag, avoid=[last.program]
        )
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} piped into {last.program}, not found; call {j + 1} ran it without"
        return ShellFix(i, j, (), fnd, why)
    return None


def claims_of(f: Finding) -> tuple[tuple[str, str], ...]:
    """What a shell correction's lesson claims of the machine or the project that can be
    checked where it is served (:mod:`.claims`), read from its evidence (a merged
    finding's too): a program missing or used instead, a full path, a wrapper's program,
    the path a file was found at, the hidden folder the files are in."""
    d = f.detail
    change = d.get("change")
    facts = [str(x) for x in f.facts]
    out: list[tuple[str, str]] = []
    # a program Windows could not start may be on PATH (the Store's stub): no such claim
    absent = [] if d.get("silent") else [NOT_ON_PATH]
    if change in ("interpreter", "program") and len(facts) >= 2:
        out += [*((k, facts[1]) for k in absent), (ON_PATH, facts[0])]
    elif change == "nofilter" and facts:
        out.append((NOT_ON_PATH, facts[0]))
    elif change == "nostart" and len(facts) >= 2 and not is_cmdlet(facts[1]):
        out.append((ON_PATH, facts[1]))  # what did the job (rg itself is there: it won't start)
    elif change == "runner" and len(facts) >= 2:
        # "No module named pytest" too: once pytest is on PATH the fact is likely stale, and
        # a standing fact is served for every prompt (review 22)
        out.append((NOT_ON_PATH, facts[1]))
    elif change == "fullpath" and len(facts) >= 2:
        out += [*((k, facts[0]) for k in absent), (ON_PATH, facts[1])]
    elif change == "wrapper" and len(facts) >= 2 and facts[1].split():
        out.append((ON_PATH, facts[1].split()[0]))
    elif change in ("location", "case", "prefix"):
        goods = d.get("goods") or [d.get("good")]
        out += [(EXISTS, str(g)) for g in goods if isinstance(g, str) and g]
    elif change == "prerequisite" and isinstance(made := d.get("made"), list):
        out += [(ABSENT, m) for m in made if isinstance(m, str)]
    elif change == "hidden" and len(facts) >= 3:
        out.append((EXISTS, facts[2]))
    elif change == "environment" and len(facts) >= 2:
        out.append((EXISTS, facts[1]))
    return tuple(dict.fromkeys((k, v) for k, v in out if v and not v.startswith("$")))


def _program_word(c: Command) -> str:
    """The word of ``c`` that names its program, as written (``/opt/homebrew/bin/gh``)."""
    return next((w for w in c.words if os.path.basename(w) == c.program), c.program)


def _family(program: str) -> str | None:
    return programs.family(program)


def _prerequisite(
    f: Command, s: Command, q: str, diag: str, between: Sequence[Command]
) -> Finding | None:
    """The very same command worked after exactly one command that is not a reader."""
    helpers = [b for b in between if not reads_only(b) and _intent(b) != _intent(f)]
    if len(helpers) != 1:
        return None
    b = helpers[0]
    if programs.has(b.program, Role.EDITS) or any(op == "<<" for op, _ in b.redirects):
        return None  # the fix was a change of a file's content: no step a lesson can name
    scope = "machine" if _installer(b) or "-g" in b.flags else "project"
    text = f"Run {short(b, 40)} before {short(f, 40)}; without it {f.program} fails with '{q}'."
    # the helper acts on the failing program itself (chmod +x s.sh before ./s.sh): what
    # it does, without that path, lets Stage 3 merge it for several programs of a project
    on_itself = any(os.path.basename(o) == f.program for o in b.operands)
    action = " ".join(
        w for w in (b.program, *b.flags, *b.operands) if "/" not in w and w != f.program
    )
    where = os.path.dirname(_program_word(f))
    more: dict[str, object] = {"helper_action": action, "folder": where} if on_itself else {}
    if b.program == "mkdir":  # the lesson holds while the folders it makes are missing
        more["made"] = [o for o in b.operands if o not in (".", "..")]
    return _finding(
        "prerequisite", f, scope, text, (f.program, b.program), diag, helper=short(b), **more
    )


#: A word that only says how much output to show: a count (``50``, ``+20``) or a sed
#: line range (``1,200p``, ``10,$p``).
_RANGE_WORD = re.compile(r"[+-]?\d+|\d+(?:,(?:\d+|\$))?p")
#: An option that only says how much output to show: ``-50`` (head, git log), ``-n 50``
#: or ``--max-count=5`` (an option joined with a number).
_RANGE_FLAG = re.compile(r"-\d+|--?[A-Za-z][\w-]*(?:=| )[+-]?\d+")


def _inert_flags(f: Command, s: Command, diag: str) -> bool:
    """Whether the options ``f`` and ``s`` differ in say only how the output looks, so a
    retry may change them and still be judged by its one changed operand: each is a count
    (:data:`_RANGE_FLAG`) or, for a program that only reads (:func:`reads_only`) after a
    missing path, an option without a value (``cat -n``, ``ls -la``): whether a file
    exists does not depend on how it is shown."""
    changed = set(f.flags) ^ set(s.flags)
    if not changed or len(f.flags) != len(set(f.flags)) or len(s.flags) != len(set(s.flags)):
        return False
    shown = reads_only(f) and reads_only(s) and bool(_MISSING_PATH.search(diag))
    return all(
        _RANGE_FLAG.fullmatch(x) or (shown and " " not in x and "=" not in x) for x in changed
    )


def _operand(f: Command, s: Command, q: str, diag: str, body: str, task: str) -> Finding | None:
    a, b = _targets(f), _targets(s)
    if len(a) == len(b) + 1:
        return _dropped(f, s, q, diag, body)
    if len(a) != len(b):
        return None
    diff = [(x, y) for x, y in zip(a, b) if x != y]
    if len(diff) > 1:
        # the named element changed, and so did a line range or a count (sed -n 1,200p ->
        # 1,80p, head -n 50 -> 80): the one element that is no range decides
        diff = _named_change(diff, diag)
    if len(diff) != 1:
        return None
    bad, good = diff[0]
    if any(c.isspace() for c in bad + good):
        return None  # a script passed as one word (powershell -Command "..."): code, no operand
    said = f"{diag}\n{body[:1000]}"
    if bad not in said and bad.rstrip("/") not in said:
        return _element(f, bad, good, q, diag)  # one element of a list, named alone?
    if (
        _MISSING_PATH.search(diag)
        and os.path.basename(bad.rstrip("/")) == os.path.basename(good.rstrip("/"))
        and not _spelt_otherwise(bad, good)
    ):
        name = os.path.basename(bad.rstrip("/")) or bad
        text = f"In this project {name} is at {good}; {short(f, 40)} fails with '{q}'."
        return _finding(
            "location", f, "project", text, (f.program, good), diag, bad=bad, good=good, avoid=[bad]
        )
    inside = good.startswith(bad.rstrip("/") + "/")  # the folder's file: the operand fixed
    if _MISSING_PATH.search(diag) or (_WRONG_KIND.search(diag) and not inside):
        return None  # another file (after a missing path or a folder read as a file): moved on
    if _widened(bad, good):
        return None  # the file was not there, and the folder above it was: not where it is
    if task and bad in task and good in task:
        return None  # the task named both: another item, not a retry
    text = f"In this project run {_intent(f)} with {good}, not {bad}, which fails with '{q}'."
    return _finding(
        "operand", f, "project", text, (f.program, good), diag, bad=bad, good=good, avoid=[bad]
    )


def _spelt_otherwise(bad: str, good: str) -> bool:
    """Whether a path that worked is the failed one in another shape that its own rule reads:
    the same letters in another case (:func:`_case_differs`), or the same relative path with
    a folder in it under a leading folder (:func:`_under_folder`: ``src/app/page.tsx``, then
    ``web/src/app/page.tsx``). "X is at P" would miss the fact, or name one copy of X."""
    b = posixpath.normpath(bad.replace("\\", "/"))
    folded = "/" in b and not _ROOTED.match(b) and not b.startswith("..")
    return bad != good and (bad.lower() == good.lower() or (folded and good.endswith("/" + b)))


def _widened(bad: str, good: str) -> bool:
    """Whether operand ``good`` is a folder above path ``bad`` (``tests/plugin/`` after
    ``tests/plugin/stub.py``, ``.`` after a relative path): the retry only widened the
    command to the folder, which shows that the file was not there (the run may have moved
    it away in a part the importer does not see), never where it is."""
    # the folder written otherwise: from $PWD, or as its contents (tests/plugin/*)
    good = re.sub(r"^\$\{?PWD\}?(?:/|$)", "", good) or "."
    good = re.sub(r"/\*$", "", good) or "/"
    b, g = posixpath.normpath(bad), posixpath.normpath(good)
    if g == "." and b != "." and not b.startswith(("/", "../")) and b != "..":
        return True
    if g.startswith("/") and not b.startswith("/"):
        # an absolute folder that ends in a folder above the relative path: the same folder
        # seen from the session's (/w/app/tests/plugin after tests/plugin/stub.py)
        ups = [posixpath.dirname(b)]
        while ups[-1] not in ("", "."):
            ups.append(posixpath.dirname(ups[-1]))
        return any(u and u != "." and (g == "/" + u or g.endswith("/" + u)) for u in ups)
    return b != g and b.startswith(g.rstrip("/") + "/")


#: A path that is there but of the other kind: a folder given where a file goes, or a file
#: where a folder goes. Another path after it is another file, not the same one corrected.
_WRONG_KIND = re.compile(
    r"\b(?:[Ii]s a directory|EISDIR|[Nn]ot a directory|ENOTDIR|not a regular file)\b"
)


#: A program's complaint about an option it does not know (ripgrep, grep, clap's words).
_UNKNOWN_OPTION = re.compile(
    r"unrecogni[sz]ed (?:flag|option)|unknown (?:flag|option|switch)|invalid option|"
    r"Found argument .{0,40} which wasn't expected|unexpected argument",
    re.I,
)


def _pattern(f: Command, s: Command, diag: str) -> Finding | None:
    """``pattern``: a search program (grep, rg: its exit status answers a question) read a
    pattern that starts with ``-`` as an option and said so, and the retry passed the very
    same word as a pattern, after ``-e`` (``--regexp``) or after ``--``."""
    if f.program != s.program or not programs.has(f.program, Role.ANSWERS):
        return None
    if not _UNKNOWN_OPTION.search(diag):
        return None
    words, retry = list(f.words), list(s.words)
    for w in words[1:]:
        if not w.startswith("-") or w in ("-", "--") or w not in retry:
            continue
        k = retry.index(w)
        marked = k > 0 and retry[k - 1] in ("-e", "--regexp", "--")
        head = w.split()[0]
        if marked and (w in diag or head in diag or head.lstrip("-") in diag):
            q = quote_error(diag, 8)
            how = "-e PATTERN" if retry[k - 1] != "--" else "-- PATTERN"
            text = (
                f"{f.program} reads a search pattern that starts with - as an option ('{q}'): "
                f"pass it as {how}."
            )
            return _finding("pattern", f, "tool", text, (f.program, how.split()[0]), diag, avoid=[])
    return None


def _existing(f: Command, s: Command, diag: str, body: str) -> Finding | None:
    """``existing``: the command refused to create what already exists ("a pull request
    for branch ... already exists: .../pull/6689"), and the retry kept every operand (and
    added no option) but changed the action (``gh pr create`` -> ``gh pr edit``) and named
    the existing thing, as the failed output did (``6689``): act on the existing one."""
    if not re.search(r"\balready exists?\b", diag) or not f.operands or not s.operands:
        return None
    verb, other = f.operands[0], s.operands[0]
    # the retry may leave out an option the new action does not take (gh pr create's
    # --draft), never add one: an added option may be what worked
    if verb == other or not (verb.isalpha() and other.isalpha()) or set(s.flags) - set(f.flags):
        return None
    rest, more = list(f.operands[1:]), list(s.operands[1:])
    extra = [x for x in more if x not in rest]
    if len(extra) != 1 or [x for x in more if x != extra[0]] != rest:
        return None
    said = f"{diag}\n{body[:1500]}"
    if not re.search(rf"(?<![\w-]){re.escape(extra[0])}(?![\w-])", said) or extra[0] in f.words:
        return None  # the output did not name what the retry acted on
    head = f"{f.program} {f.subcommand}" if f.subcommand else f.program
    said_q = re.sub(r"\s+\S*://\S+", "", diag).rstrip(": ")
    q = quote_error(re.sub(r'"[^"]*"', "<name>", said_q), 12)
    text = f"{head} {verb} fails when that already exists ('{q}'): run {head} {other} <id> on it."
    return _finding(
        "existing",
        f,
        "tool",
        text,
        (f.program, f"{head} {other}"),
        diag,
        bad=verb,
        good=other,
        avoid=[],
    )


def _element(f: Command, bad: str, good: str, q: str, diag: str) -> Finding | None:
    """``element``: the operand is a comma list (``--json state,merged``) and the diagnostic
    names, quoted, the one element the retry left out or replaced (``Unknown JSON field:
    "merged"``): the program has no such element, and the retry's list is what worked."""
    if "," not in bad or "/" in bad + good or not _OPTION_RULE.search(diag):
        return None
    old, new = bad.split(","), good.split(",")
    gone = [x for x in old if x not in new]
    named = [x for x in gone if re.search(rf"[\"'`]{re.escape(x)}[\"'`]", diag)]
    if len(gone) != 1 or named != gone or not gone[0]:
        return None
    words = list(f.words)
    head = " ".join(itertools.takewhile(lambda w: w.isalpha(), words)) or f.program
    at = words.index(bad) if bad in words else 0
    flag = words[at - 1] if at and words[at - 1].startswith("-") else ""
    added = ",".join(x for x in new if x not in old) or good
    text = f"{head} {flag} has no {gone[0]} ('{q}'): ask for {added} instead."
    text = re.sub(r"\s+", " ", text)
    return _finding(
        "element", f, "tool", text, (f.program, added), diag, bad=gone[0], good=good, avoid=gone
    )


def _named_change(diff: list[tuple[str, str]], diag: str) -> list[tuple[str, str]]:
    """The pairs of ``diff`` (failed word, retry's word) left once the inert ones are set
    aside: a path found elsewhere (after a missing path) beside words that name no file,
    or one word the diagnostic names beside counts and line ranges
    (:data:`_RANGE_WORD`). ``diff`` itself when neither holds."""
    if _MISSING_PATH.search(diag):
        paths = [(x, y) for x, y in diff if "/" in x or "/" in y]
        if len(paths) == 1 and all(_plain(x) and _plain(y) for x, y in diff if (x, y) != paths[0]):
            return paths
    rest = [(x, y) for x, y in diff if not (_RANGE_WORD.fullmatch(x) and _RANGE_WORD.fullmatch(y))]
    if len(rest) == 1 and re.search(rf"(?<![\w.-]){re.escape(rest[0][0])}(?![\w-])", diag):
        return rest
    return diff


def _plain(word: str) -> bool:
    """A word that names no file: no folder, no file extension (``1,200p``, ``-20``)."""
    return "/" not in word and not re.search(r"\.[A-Za-z]\w*$", word)


def _dropped(f: Command, s: Command, q: str, diag: str, body: str) -> Finding | None:
    """The same command without one path operand, which the failed output named (or a
    folder of it): the project does not take that path there (git-ignored, not there)."""
    if reads_only(f) or _MISSING_PATH.search(diag):
        return None  # a file that is not there, left out of a read: exploration
    a, b = list(_targets(f)), list(_targets(s))
    gone = [x for x in a if x not in b]
    if len(gone) != 1 or [x for x in a if x != gone[0]] != b:
        return None
    bad = gone[0]
    said = f"{diag}\n{body[:1500]}"
    named = bad in said or any(
        bad.startswith(p.rstrip("/") + "/") for p in re.findall(r"[\w.][\w./-]*/[\w./-]*", said)
    )
    if "/" not in bad or not named:
        return None
    text = f"In this project {_intent(f)} fails on {bad} ('{q}'): leave it out."
    sub = _SUBMODULE.search(diag)
    if sub is not None and f.program == "git":
        # git names where the path belongs: it is staged there, not left out (blind set 14)
        m, how = sub.group(1), f"git -C {sub.group(1)} {f.subcommand or ''}".strip()
        text = (
            f"In this project {bad} is in the git submodule {m} ('{q}'): {_intent(f)} it "
            f"inside {m} ({how}), not from this repository."
        )
    return _finding("dropped", f, "project", text, (f.program, bad), diag, bad=bad, avoid=[])


#: git's "fatal: Pathspec 'a/b' is in submodule 'a'": the submodule the path belongs to.
_SUBMODULE = re.compile(r"is in submodule ['\"‘`]?([^'\"’`\s]+)")


def _forced(f: Command, s: Command, q: str, diag: str, body: str) -> Finding | None:
    """The paths the failed output named, run again on their own with the one flag it
    advised ("The following paths are ignored ...: Use -f if you really want to add
    them"; ``git add -f priv/static/assets/app.css``, the other files added apart): the
    project takes those paths only that way."""
    new = [x for x in s.flags if x not in f.flags]
    if len(new) != 1 or any(x not in s.flags for x in f.flags):
        return None
    flag = new[0]
    said = f"{diag}\n{body[:1500]}"
    if not re.search(rf"\b(?:use|pass|with|add)\s+['`\"]?{re.escape(flag)}(?![\w-])", said, re.I):
        return None  # the output does not advise that flag
    a, kept = list(_targets(f)), list(_targets(s))
    if not kept or len(kept) >= len(a) or any(x not in a for x in kept):
        return None
    folders = re.findall(r"[\w.][\w./-]*/[\w./-]*", said)
    named = all(x in said or any(x.startswith(p.rstrip("/") + "/") for p in folders) for x in kept)
    if not named or any("/" not in x for x in kept):
        return None
    paths, which = ", ".join(kept), "that path" if len(kept) == 1 else "those paths"
    text = (
        f"In this project {_intent(f)} fails on {paths} ('{q}'): "
        f"run {_intent(f)} {flag} on {which} alone."
    )
    return _finding(
        "forced", f, "project", text, (f.program, *kept, flag), diag, good=flag, avoid=[]
    )


def _names_option(x: str, said: str) -> bool:
    """Whether an output names option ``x``: as written (``--no-stat``), or, in a complaint
    about an unknown option, quoted without its dashes (git's "unknown option
    \u0060no-stat'", "unknown switch \u0060x'"), or a short option's letter after
    getopt's "--" (BSD cat's "illegal option -- A")."""
    name = x.split()[0].split("=")[0]
    if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", said):
        return True  # as a word: -t is not named by "Pseudo-terminal"
    bare = re.escape(name.lstrip("-"))
    if re.fullmatch(r"-[A-Za-z0-9]", name) and re.search(
        rf"(?:illegal|invalid|unknown|unrecogni[sz]ed) option -- {bare}(?![\w-])", said
    ):
        return True  # BSD's and getopt's "illegal option -- A": the letter alone
    quoted = rf"[`'\"‘]{bare}['\"’]"
    return bool(bare) and bool(_UNKNOWN_OPTION.search(said)) and re.search(quoted, said) is not None


def _passed(c: Command) -> tuple[str, ...]:
    """The options ``c`` passes on after ``--`` to the program it runs (``npm test --
    --runInBand``: vitest's option): its operands that look like options."""
    return tuple(o for o in c.operands if len(o) > 1 and o.startswith("-"))


def _rest(c: Command) -> tuple[str, ...]:
    """``c``'s operands and written files, without the options it passes on."""
    return tuple(o for o in _targets(c) if o not in _passed(c))


def _flag(f: Command, s: Command, q: str, diag: str, body: str) -> Finding | None:
    mine, theirs = (*f.flags, *_passed(f)), (*s.flags, *_passed(s))
    gone = [x for x in mine if x not in theirs]
    new = [x for x in theirs if x not in mine]
    said = f"{diag}\n{body[:1500]}"
    if (
        len(gone) == 1
        and 1 < len(new) <= 3
        and _OPTION_RULE.search(diag)
        and _names_option(gone[0], said)
        and all(re.fullmatch(r"-[A-Za-z]", x) for x in new)
    ):
        # one option the program refused in so many words (BSD cat's "illegal option --
        # A"), its job done by a few of the program's own short options (cat -v -e -t)
        # the program as this machine has it (BSD's cat has no -A; GNU's has)
        shown = " ".join(new)
        text = f"Here {_intent(f)} has no {gone[0]} ('{q}'): run it with {shown}."
        return _finding("flag", f, "machine", text, (f.program, *new), diag, avoid=gone)
    if len(gone) > 1 or len(new) > 1 or not (gone or new):
        return None
    named = [x for x in (*gone, *new) if _names_option(x, said)]
    if not named:
        return None  # the output does not say which option was wrong
    scope = "tool" if _OPTION_RULE.search(diag) else "project"
    if set(named) & {*_passed(f), *_passed(s)}:
        scope = "project"  # an option npm passes on to the project's own runner
    if gone and new:
        text = f"Run {_intent(f)} with {new[0]}, not {gone[0]}, which fails with '{q}'."
    elif new:
        text = f"Run {_intent(f)} with {new[0]}; without it, it fails with '{q}'."
    else:
        text = f"Run {_intent(f)} without {gone[0]}, which fails with '{q}'."
    return _finding("flag", f, scope, text, (f.program, *(new or gone)), diag, avoid=gone)


# --------------------------------------------------------------------------- a run


def _commands(step: Step) -> tuple[Command, ...] | None:
    found = spec_for(step.tool)
    if found is None:
        return None
    script = parse(command_line(found[1], step.params))
    return script.commands if script.parsed else None


def _job_commands(t: Trajectory, step: Step) -> tuple[Command, ...]:
    """A shell call's commands that do its job: without a ``cd`` to the session's own
    folder (no move at all), without what only sets the scene (``echo``, ``export``,
    ``sleep``: :attr:`Role.SCENE`; another folder's ``cd`` stays) and without the filters
    its output passed through after the first command of a pipeline (``| head``, ``|
    sort``: :attr:`Role.FILTER`). ``rg --files
    -g G | head -50`` is ``rg --files -g G``, as ``cd /w/app && find . -name G`` (in
    ``/w/app``) is ``find . -name G``."""
    found = spec_for(step.tool)
    line = command_line(found[1], step.params) if found else ""
    script = parse(line) if found else None
    cut = _ps_untailed(line) if script is not None and not script.parsed else None
    if cut is not None:
        # PowerShell's own filter on the output (| Select-Object -First 50): the line's
        # job is what comes before it, and that may read as commands
        script = parse(cut)
    if script is None or not script.parsed:
        return ()
    return job_commands(script, str(t.meta.get("cwd") or ""))


#: A PowerShell cmdlet that only trims or formats a line's output, as the last stage of
#: its pipeline (the line's job is before it): ``Select-Object -First 50``, ``Out-String``.
#: Only the first or last lines of the output (``-First``, ``-Last``), never ``-Skip``,
#: ``-Index`` or ``-Property``, which hide or reshape it (review 34).
_PS_TAIL = re.compile(r"\s*(?:Select-Object\s+-(?:First|Last)\s+\d+|Out-String|Out-Host)\s*", re.I)


def _ps_untailed(line: str) -> str | None:
    """``line`` without the :data:`_PS_TAIL` stages it ends with, or None when it ends with
    none. Read stage by stage from the end: one expression of them all backtracked
    exponentially on a line of many stages that does not end in one (review 34)."""
    cut = line
    while True:
        head, bar, last = cut.rpartition("|")
        if not bar or not _PS_TAIL.fullmatch(last.rstrip()):
            return cut if cut != line else None
        cut = head.rstrip()


def _failed_command(step: Step) -> tuple[Command, str] | None:
    """The command a misused shell call failed on, and its diagnostic."""
    o = outcome(step)
    refused = o.failure is Failure.DENIED or (
        o.failure in (Failure.CODE, Failure.TIMEOUT) and refusal_line(step.output) is not None
    )
    if not o.teachable and not (refused and not step.success):
        return None  # a refusal stays failed in the view only when a retry escalated past it
    found = spec_for(step.tool)
    script = parse(command_line(found[1], step.params)) if found else None
    if script is None or not script.parsed:
        return None
    if _NO_MATCH.search(step.output[:2000]):
        return None  # the shell refused a glob, nothing ran: only the glob rule reads it
    c = failing_command(script, step.output)
    return (c, _naming_line(c, o.diagnostic, step.output)) if c is not None else None


def _naming_line(c: Command, diag: str, output: str) -> str:
    """The diagnostic of failed command ``c``: ``diag``, unless it does not name ``c``'s
    program and a later line of the output does, framed as its own (``python: command not
    found`` after a heredoc's noise ``docs/x.md: line 1: #: command not found``): the
    line that names the program that failed is the real diagnostic."""
    name = re.escape(_bare(c.program))
    names = re.compile(rf"(?<![\w.-]){name}:\s")
    if not name or names.search(diag):
        return diag
    lines = [x.strip() for x in output.splitlines()]
    return next((x for x in lines if names.search(x) and x not in diag), diag)


def _before(cmds: Sequence[Command], c: Command, failed: Step, diag: str) -> list[Command]:
    """The commands a retry ran before its command ``c`` in the same call, that the failed
    call did not run and that act on what the failure's diagnostic names (``chmod +x s.sh
    && ./s.sh`` after "permission denied: s.sh"; ``uv pip install flake8 && uv run
    flake8`` after "Failed to spawn: flake8"): they may be what made it work."""
    ran = {_intent(x) for x in (_commands(failed) or ())}  # git add of other files: no new step
    k = next((n for n, x in enumerate(cmds) if x is c), 0)
    return [x for x in cmds[:k] if _intent(x) not in ran and _acts_on(x, c, diag)]


def _acts_on(helper: Command, c: Command, diag: str) -> bool:
    """Whether ``helper`` acts on what ``diag`` names, or on ``c``'s program."""
    for o in helper.operands:
        name = os.path.basename(o.rstrip("/"))
        if o == c.program or (
            len(name) > 2 and re.search(rf"(?<![\w.-]){re.escape(name)}\b", diag)
        ):
            return True
    return False


def _proven(step: Step, c: Command, said: str = "") -> bool:
    """Whether a successful call shows that its command ``c`` worked: every pipeline after
    ``c``'s is joined by ``&&``. After ``c || d`` the call's success may be ``d``'s, and
    after ``c; d`` it is ``d``'s alone: such a retry proves nothing about ``c``. Nor does
    ``c | head`` when its output reads as ``c``'s failure (:func:`_filtered_failure`;
    ``said``: the failed call's diagnostic)."""
    found = spec_for(step.tool)
    line = command_line(found[1], step.params) if found else ""
    script = parse(line) if found else None
    if script is None or not script.parsed:
        return False
    at = next((k for k, p in enumerate(script.pipelines) if c in p.commands), None)
    if at is None:
        return False
    if _filtered_failure(script.pipelines[at], c, line, step.output, said):
        return False
    return all(p.connector == "&&" for p in script.pipelines[at + 1 :])


#: An output line that reads as a failure whoever printed it: an error line at a line's
#: start, a usage line, a command or argument the program did not recognise.
_FAILURE_LINE = re.compile(
    r"^\s*(?:error|ERROR|Error)(?:\[[\w-]+\])?:\s|^\s*[Uu]sage:\s|not recognized\b|"
    r"command not found",
    re.MULTILINE,
)


def _error_shape(line: str) -> str:
    """A diagnostic with its quoted spans and numbers masked: ``ERROR: 'query' is
    misspelled`` and ``ERROR: 'costmanagement' is misspelled`` have one shape."""
    line = re.sub(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`", "''", line.strip())
    return re.sub(r"\d+", "0", line)


def _filtered_failure(p: Pipeline, c: Command, line: str, output: str, said: str) -> bool:
    """Whether a pipeline's success hides that its command ``c`` failed. Without ``set -o
    pipefail`` a pipeline's status is its last command's: after ``c | head -50`` (only
    filters, which pass ``c``'s output on, after ``c``) it is head's. Its success then
    shows nothing of ``c``, and the output is ``c``'s own: when it reads as a failure (the
    failed call's error again, up to its quoted words and numbers; an ``error:`` line, a
    usage line, "not recognized", a command not found), ``c`` failed. A filter that itself
    selects error lines (``grep -i error``) explains such a line: it proves nothing then."""
    k = p.commands.index(c)
    after = p.commands[k + 1 :]
    if not after or re.search(r"(?<!\+o )pipefail", line):
        return False
    if not all(
        programs.has(x.program, Role.FILTER) or programs.has(x.program, Role.LINES) or _selects(x)
        for x in after
    ):
        return False  # another program consumes c's output: what it prints is its own
    text = output[:4000]
    shape = _error_shape(said) if said.strip() else ""
    if shape and any(_error_shape(x) == shape for x in text.split("\n") if x.strip()):
        return True
    if any(re.search(r"err", w, re.IGNORECASE) for x in after for w in x.operands):
        return False  # the filter picks error lines: they are what was asked for
    return bool(_FAILURE_LINE.search(text))


def _selects(c: Command) -> bool:
    """A search that passes on the lines it selects (``grep``, ``rg`` in a pipe)."""
    found = programs.get(c.program)
    return found is not None and found.domain == "search" and programs.has(c.program, Role.ANSWERS)


def _retry(
    f: Command, cmds: Sequence[Command], missing: bool, line: str = "", later: str = ""
) -> Command | None:
    """The command of a later call that retries ``f``: the same program (or, for a
    program not found, one of its family or on its operands; ``line``, the failed call's
    command line, gives its variables' values: :func:`_operand_texts`; ``later``, the
    later call's, holds a here-document's code)."""
    for c in cmds:
        if c.program == f.program and (c.subcommand == f.subcommand or f.subcommand is None):
            return c
    if missing:
        for c in cmds:
            if _bare(c.program) == _bare(f.program):
                return c
        fam = _family(_bare(f.program))
        for c in cmds:
            if fam and fam == _family(_bare(c.program)):
                return c
        if _inline(f):
            for c in cmds:
                if _inline(c):
                    return c
        return _doer(f, cmds, line, later)
    return None


def _doer(f: Command, cmds: Sequence[Command], line: str = "", later: str = "") -> Command | None:
    """The one command of a retry that took the failed ``f``'s operands, as an operand
    or inside inline code (``python3 -c '...zipfile...'``). None when no command or
    several do (``mkdir d && python3 -c '...' && find d`` after the unzip): which one did
    the job is not shown, and nothing is learned. A step that only shows the result is
    never the one (:func:`_only_shows`, in the rule that names it)."""
    ops = {o for o in _operand_texts(f, line) if len(o) > 1}
    took = [
        c
        for c in cmds
        if c.program != f.program
        and not _only_shows(c, f)
        and (ops & set(c.operands) or (_inline(c) and any(o in _code(c, later) for o in ops)))
    ]
    return took[0] if len(took) == 1 else None


def _advised(t: Trajectory, i: int, f: Command, diag: str) -> ShellFix | None:
    """The ``advised`` correction of failed call ``i`` (see the module doc), or None."""
    out = t.steps[i].output
    m = _ADVICE.search(out)
    nxt = next(
        (j for j in range(i + 1, min(len(t.steps), i + 3)) if is_shell(t.steps[j].tool)), None
    )
    if m is None or nxt is None or not t.steps[nxt].success:
        return None
    advice = " ".join(m.group(1).split())
    # the advised command, wherever it sits in the call (``cd D && mix format``, ``mix format
    # 2>&1 | tail``, ``mix format && git commit ...``), and shown to have worked
    ran = next(
        (c for c in _commands(t.steps[nxt]) or () if " ".join(_own_words(c)) == advice), None
    )
    if ran is None or _intent(ran) == _intent(f) or not _proven(t.steps[nxt], ran):
        return None
    for later in t.steps[nxt + 1 :]:
        again = None if later.success or not is_shell(later.tool) else _failed_command(later)
        if again is not None and _intent(again[0]) == _intent(f) and m.group(0) in later.output:
            return None  # the advice did not clear that failure
    lines = [x.strip() for x in re.split(r"\\n|\n", out) if x.strip()]
    at = next(k for k, x in enumerate(lines) if m.group(0) in x or m.group(1) in x)
    said = " ".join(lines[max(0, at - 1) : at + 1])
    said = re.sub(r"\[[A-Z_ -]+\]\s*", "", said)
    q = quote_error(said, 10)
    text = f"In this project {_intent(f)} fails with '{q}': run {advice} first, as its error says."
    facts = (f.program, ran.program)
    fnd = _finding("advised", f, "project", text, facts, diag, helper=advice, avoid=[])
    why = f"call {i + 1} {short(f)} failed ('{q}'); call {nxt + 1} {advice} worked, as it advised"
    return ShellFix(i, nxt, (nxt,), attrs.evolve(fnd, domain=t.steps[i].domain or ""), why)


def _searched_elsewhere(c: Command) -> bool:
    """Whether ``rg --files`` was given a folder other than the session's own (``rg --files
    src -g G``): it listed only there, so a file found elsewhere says nothing of what it
    skips (review 30). The operands that are no ``-g`` value are its folders."""
    words = list(c.words)
    values = {words[k + 1] for k, w in enumerate(words[:-1]) if w in ("-g", "--glob")}
    return any(o not in values and o not in (".", "./") for o in c.operands)


def _glob_of(c: Command) -> str | None:
    """The file pattern of ``rg --files -g G`` (``-gG``, ``--glob G``, ``--glob=G``), rg
    run on the session's folder."""
    if c.program != "rg" or "--files" not in c.words or "--hidden" in c.words:
        return None
    if _searched_elsewhere(c):
        return None
    words = list(c.words)
    for k, w in enumerate(words):
        if w in ("-g", "--glob") and k + 1 < len(words):
            return words[k + 1]
        if w.startswith("--glob="):
            return w[len("--glob=") :]
        if w.startswith("-g") and len(w) > 2:
            return w[2:]
    return None


def _paths(output: str) -> list[str]:
    """The lines of a listing that are paths (a shell's own warnings, ``x: y``, are not)."""
    return [x.strip() for x in output.splitlines() if x.strip() and ": " not in x and " " not in x]


def _found_by_find(t: Trajectory, i: int, glob: str) -> tuple[int, str] | None:
    """The run's next shell call after ``i`` when it is ``find . -name glob`` and found
    files all in one folder: (its index, that folder); else None."""
    nxt = next(
        (j for j in range(i + 1, min(len(t.steps), i + 3)) if is_shell(t.steps[j].tool)), None
    )
    if nxt is None or not t.steps[nxt].success:
        return None
    found = _job_commands(t, t.steps[nxt])
    words = list(found[0].words) if len(found) == 1 and found[0].program == "find" else []
    if "-name" not in words or words[words.index("-name") + 1 : words.index("-name") + 2] != [glob]:
        return None
    listed = [x.removeprefix("./") for x in _paths(t.steps[nxt].output)]
    folders = {os.path.dirname(x) for x in listed}
    if len(folders) == 1:
        return nxt, folders.pop()
    # files in several folders, all inside one hidden top folder (a tool's tree of
    # workflows, .bmad/core/... and .bmad/bmm/...): rg --files skipped that folder
    # (never installed code, .venv/lib/.../site-packages/...: the dependencies' layout, and
    # a git-ignored .venv that rg --files --hidden skips too)
    tops = {x.split("/", 1)[0] for x in listed}
    spread = len(tops) == 1 and all("/" in x and not _vendored(x) for x in listed)
    top = tops.pop() if spread else ""
    return (nxt, top) if top.startswith(".") else None


def _globs_of(c: Command) -> list[str]:
    """Every file pattern of ``rg --files -g A -g B`` (none for another command, or for rg
    given a folder: :func:`_searched_elsewhere`)."""
    if c.program != "rg" or "--files" not in c.words or "--hidden" in c.words:
        return []
    if _searched_elsewhere(c):
        return []
    words = list(c.words)
    out = [words[k + 1] for k, w in enumerate(words[:-1]) if w in ("-g", "--glob")]
    out += [w[len("--glob=") :] for w in words if w.startswith("--glob=")]
    return out


def _hidden_folder(t: Trajectory, i: int, globs: list[str]) -> ShellFix | None:
    """``rg --files -g .x -g '.x/**'`` listed nothing, and one of the run's next three shell
    calls, ``find . -name .x`` (a depth or type allowed), found that hidden folder at one
    place: where the project keeps it, which rg --files skips."""
    nxt = [j for j in range(i + 1, min(len(t.steps), i + 6)) if is_shell(t.steps[j].tool)][:3]
    for j in nxt:
        found = _job_commands(t, t.steps[j])
        if not t.steps[j].success or len(found) != 1 or found[0].program != "find":
            continue
        words = list(found[0].words)
        name = words[words.index("-name") + 1] if "-name" in words[:-1] else ""
        if not name.startswith(".") or name.startswith("..") or name not in globs:
            return None
        listed = [x.removeprefix("./") for x in _paths(t.steps[j].output)]
        if len(listed) != 1 or os.path.basename(listed[0]) != name:
            return None
        where = listed[0]
        text = (
            f"In this project {name} is at {where}, a hidden folder rg --files skips: "
            f"find it with find . -name {name} or rg --files --hidden."
        )
        cmd = _job_commands(t, t.steps[i])[0]
        fnd = _finding("hidden", cmd, "project", text, ("rg", "find", where), "no files found")
        fnd = attrs.evolve(fnd, domain=t.steps[i].domain or "", detail={**fnd.detail, "avoid": []})
        why = f"call {i + 1} rg --files listed nothing; call {j + 1} found {where}"
        return ShellFix(i, j, (), fnd, why)
    return None


def _lists_hidden(t: Trajectory, step: Step) -> bool:
    """Whether a successful call is a discovery: a listing program (:attr:`Role.LISTS`:
    ``ls -la``, ``find . -maxdepth 2``) or a client search tool (Glob). What it shows
    of hidden folders its output says (:func:`_hidden_in`)."""
    if not step.success:
        return False
    if not is_shell(step.tool):
        found = spec_for(step.tool)
        return found is not None and found[1].kind is ToolKind.SEARCH
    cmds = _job_commands(t, step)
    if len(cmds) == 1:
        return programs.listing(cmds[0].program)
    return _filtered(t, step, programs.listing) is not None


def _searches_input(c: Command) -> bool:
    """Whether ``c`` is a search given only a pattern (``rg -i x``, ``grep x``): in a
    pipeline it filters the lines piped into it."""
    return (
        programs.has(c.program, Role.ANSWERS)
        and programs.has(c.program, Role.READER)
        and len(c.operands) == 1
    )


def _filtered(t: Trajectory, step: Step, lists: Callable[[str], bool]) -> Command | None:
    """The search of a call that is one pipeline, a listing (``lists`` of its program)
    whose lines a search given only a pattern filters (``find . -type f | rg -i x``,
    ``rg --files | grep x``), perhaps then filters (``| head``); else None."""
    found = spec_for(step.tool)
    script = parse(command_line(found[1], step.params)) if found else None
    if script is None or not script.parsed:
        return None
    job = job_commands(script, str(t.meta.get("cwd") or ""))
    pipe = next((p.commands for p in script.pipelines if job and p.commands[0] is job[0]), ())
    if len(job) != 2 or len(pipe) < 2 or pipe[1] is not job[1] or not lists(job[0].program):
        return None
    return job[1] if _searches_input(job[1]) else None


#: The options a search of file names may take and still match as written: case
#: (``-i``, rg's ``-S``) and the regular expression dialect (``-E``, ``-P``). Any other
#: (``-v`` inverts, ``-w``, ``-x`` anchor, ``-F`` is no pattern) and it is no name filter.
_NAME_FILTER_FLAGS = frozenset(
    "-i --ignore-case -S --smart-case -E --extended-regexp -P --pcre2 --perl-regexp".split()
)


def _name_filter(t: Trajectory, step: Step) -> re.Pattern[str] | None:
    """``rg --files | rg PATTERN`` (or ``| grep -i PATTERN``): every file rg lists from the
    session's folder, filtered by a pattern of their paths; the pattern as Python reads
    it, or None. rg given a folder or told to list hidden files (``--hidden``, ``-u``), a
    search with another option, or a pattern Python would read otherwise (grep's basic
    syntax with ``|`` or ``(``; one Python cannot compile) is no name filter."""
    search = _filtered(t, step, lambda name: name == "rg")
    if search is None:
        return None
    rg = _job_commands(t, step)[0]
    if rg.flags != ("--files",) or rg.operands not in ((), (".",)):
        return None
    if not set(search.flags) <= _NAME_FILTER_FLAGS:
        return None
    pattern = search.operands[0]
    basic = search.program != "rg" and not set(search.flags) & {"-E", "--extended-regexp"}
    if basic and re.search(r"[|+?(){}]", pattern):
        return None
    fold = bool({"-i", "--ignore-case"} & set(search.flags)) or (
        bool({"-S", "--smart-case"} & set(search.flags)) and pattern == pattern.lower()
    )
    try:
        return re.compile(pattern, re.IGNORECASE if fold else 0)
    except re.error:
        return None


#: A hidden folder's (or file's) name: ``.x``, never ``.`` or ``..``.
_HIDDEN_NAME = re.compile(r"\.[\w][\w.-]*")


def _hidden_in(text: str) -> set[str]:
    """The hidden folders (``.x``, never ``.``/``..``) a listing's lines name."""
    words = re.findall(r"[^\s'\"]+", text)
    return {
        part for w in words for part in w.rstrip("/").split("/") if _HIDDEN_NAME.fullmatch(part)
    }


def _used_under(
    t: Trajectory, step: Step, hidden: set[str], wanted: Callable[[str], bool]
) -> tuple[str, str] | None:
    """The folder under a hidden one (``.x/specs``) and the name of a file ``wanted`` (of
    its path from the session's folder) that a successful call used (its command line or
    a client tool's path; an absolute path under the session's folder read relative to
    it), or None."""
    if not step.success:
        return None
    text = _line(step) if is_shell(step.tool) else " ".join(map(str, step.params.values()))
    roots = [r for r in (t.meta.get("cwd"), t.meta.get("project")) if isinstance(r, str) and r]
    for w in re.findall(r"[^\s'\"=]+", text):
        for r in roots:
            w = w.removeprefix(r.rstrip("/") + "/")
        parts = w.removeprefix("./").split("/")
        if len(parts) > 1 and parts[0] in hidden and wanted("/".join(parts)):
            return "/".join(parts[:-1]), parts[-1]
    return None


def _hidden_discovered(
    t: Trajectory, i: int, glob: str | None, rx: re.Pattern[str] | None = None
) -> ShellFix | None:
    """``rg --files -g G`` (or ``rg --files | rg R``: ``rx``) listed nothing; among the
    next five calls a discovery that shows hidden entries (``ls -la``, ``find . -maxdepth
    2``, ``find . -type f | rg x``, Glob: :func:`_lists_hidden`) named a hidden folder,
    and a later call among them used a file matching G (a path R matches) under it and
    worked: where the project keeps those files, which rg --files skips."""
    hidden: set[str] = set()

    def wanted(path: str) -> bool:
        if rx is not None:
            return rx.search(path) is not None
        return glob is not None and fnmatch.fnmatch(path.rsplit("/", 1)[-1], glob)

    for j in range(i + 1, min(len(t.steps), i + 6)):
        step = t.steps[j]
        used = _used_under(t, step, hidden, wanted) if hidden else None
        if used is not None:
            folder, name = used
            text = (
                f"In this project {glob} files are in {folder}/, a hidden folder rg --files "
                f"skips: find them with find . -name {glob} or rg --files --hidden."
                if glob is not None
                else f"In this project {name} is in {folder}/, a hidden folder rg --files "
                f"skips: find it with find . -name {name} or rg --files --hidden."
            )
            cmd = _job_commands(t, t.steps[i])[0]
            fnd = _finding("hidden", cmd, "project", text, ("rg", "find", folder), "no files")
            fnd = attrs.evolve(fnd, domain=t.steps[i].domain or "")
            why = f"call {i + 1} rg --files listed nothing; call {j + 1} used {folder}/"
            return ShellFix(i, j, (), fnd, why)
        if _lists_hidden(t, step):
            hidden |= _hidden_in(step.output)
    return None


def _discovered_by_glob(t: Trajectory, i: int, glob: str) -> ShellFix | None:
    """:func:`_hidden_discovered` for one pattern of ``rg --files -g A -g B``: a file name
    (``constitution.md``), or a path inside a hidden folder (``.specify/**``,
    ``.specify/memory/constitution.md``: a call then used a path under that folder that
    the pattern matches, read as a pattern of the whole path); a pattern of a hidden
    name alone (``.envrc``) is :func:`_hidden_folder`'s."""
    if not glob.startswith("."):
        return _hidden_discovered(t, i, glob)
    top = glob.split("/", 1)[0]
    if "/" not in glob or not _HIDDEN_NAME.fullmatch(top):
        return None
    return _hidden_discovered(t, i, None, re.compile(fnmatch.translate(glob)))


def _hidden(t: Trajectory, i: int) -> ShellFix | None:
    """The ``hidden`` finding of call ``i`` (see the module doc), or None."""
    cmds = _job_commands(t, t.steps[i]) if is_shell(t.steps[i].tool) else ()
    glob = _glob_of(cmds[0]) if len(cmds) == 1 else None
    if _paths(t.steps[i].output):
        return None
    if glob is None:  # rg --files | rg R: a pattern of the paths rg lists
        rx = _name_filter(t, t.steps[i]) if len(cmds) == 2 else None
        return _hidden_discovered(t, i, None, rx) if rx is not None else None
    found = _found_by_find(t, i, glob)
    if found is None:
        globs = list(dict.fromkeys([glob, *_globs_of(cmds[0])]))
        return _hidden_folder(t, i, globs) or next(
            (x for g in globs if (x := _discovered_by_glob(t, i, g)) is not None), None
        )
    if not found[1].startswith(".") or found[1].startswith(".."):
        return None
    nxt, folder = found
    where = (
        "in"
        if all(os.path.dirname(x.removeprefix("./")) == folder for x in _paths(t.steps[nxt].output))
        else "under"
    )
    text = (
        f"In this project {glob} files are {where} {folder}/, a hidden folder rg --files "
        f"skips: find them with find . -name {glob} or rg --files --hidden."
    )
    facts = ("rg", "find", folder)
    fnd = _finding("hidden", cmds[0], "project", text, facts, "no files found", avoid=[])
    fnd = attrs.evolve(fnd, domain=t.steps[i].domain or "")
    why = f"call {i + 1} {short(cmds[0])} listed nothing; call {nxt + 1} found them in {folder}/"
    return ShellFix(i, nxt, (), fnd, why)


#: rg's options that make it search hidden files and folders too (``-uu``: not ignored
#: files only, hidden ones too; ``-u`` alone is ``--no-ignore``, which is another cause).
_RG_HIDDEN = frozenset({"--hidden", "-.", "-uu", "-uuu"})
#: A line of rg's matches (``path:line:text``, ``path:text``), its path as written.
_RG_MATCH = re.compile(r"^([^\s:]+):(?:\d+:)?")


def _skipped_folder(t: Trajectory, f: Command, path: str) -> str | None:
    """The hidden folder rg skipped on the way to a match ``path``: the path up to the
    first hidden folder below the folder rg was given (``./src/.gen/x.py``: ``src/.gen``;
    ``.github/.hooks/x.sh`` for ``rg x .github``: ``.github/.hooks``, for rg searches a folder
    it is given, hidden or not); "" when none is hidden; None when the path leaves the
    session's folder (``../.github/x``) or is absolute outside it and what rg was given."""
    roots = [r for r in (t.meta.get("cwd"), t.meta.get("project")) if isinstance(r, str) and r]

    def rel(x: str) -> str:
        x = x.replace("\\", "/")
        for r in roots:
            x = x.removeprefix(r.replace("\\", "/").rstrip("/") + "/")
        return x.removeprefix("./")

    p = rel(path)
    parts = p.split("/")
    given = [o for o in (rel(x).rstrip("/") for x in f.operands) if o not in ("", ".")]
    start = max((len(o.split("/")) for o in given if p.startswith(o + "/")), default=0)
    if ".." in parts or (p.startswith("/") and not start):
        return None
    hidden = (k for k in range(start, len(parts) - 1) if _HIDDEN_NAME.fullmatch(parts[k]))
    k = next(hidden, None)
    return "" if k is None else "/".join(parts[: k + 1])


def _hidden_search(t: Trajectory, i: int) -> ShellFix | None:
    """``rg PATTERN [PATH]`` found nothing (exit 1: no match), and one of the run's next
    three shell calls, the very same rg with only ``--hidden`` (``-.``, ``-uu``) added,
    found matches, every one of them inside a hidden folder: rg skipped those folders
    (real: devenv, validation half, read after its miss). A match outside one (a file
    that ``-uu`` found for being ignored, not hidden) and it is no lesson: the cause may
    be an ignore file."""
    cmds = _job_commands(t, t.steps[i]) if is_shell(t.steps[i].tool) else ()
    if len(cmds) != 1 or cmds[0].program != "rg" or "--files" in cmds[0].words:
        return None
    f = cmds[0]
    if set(f.words) & (_RG_HIDDEN | {"-u", "--no-ignore"}) or not f.operands:
        return None
    if any(_RG_MATCH.match(x) for x in t.steps[i].output.splitlines()):
        return None
    nxt = [j for j in range(i + 1, min(len(t.steps), i + 6)) if is_shell(t.steps[j].tool)][:3]
    for j in nxt:
        later = _job_commands(t, t.steps[j])
        if not t.steps[j].success or len(later) != 1 or later[0].program != "rg":
            continue
        # the very same words in the same order, one hidden option put anywhere among
        # them (rg foo bar and rg --hidden bar foo are two searches)
        words = list(later[0].words)
        at = [k for k, w in enumerate(words) if w in _RG_HIDDEN]
        if len(at) != 1 or words[: at[0]] + words[at[0] + 1 :] != list(f.words):
            continue
        added = words[at[0]]
        paths = [m.group(1) for x in t.steps[j].output.splitlines() if (m := _RG_MATCH.match(x))]
        folders = [_skipped_folder(t, f, x) for x in paths]
        if not paths or not all(folders) or any(_vendored(f"{x}/") for x in folders):
            return None  # (.git/, .venv/: the repository's, the dependencies')
        names = sorted({str(x) for x in folders})
        shown = " and ".join(f"{x}/" for x in names[:3])
        if len(names) > 3:  # review 30: say that there were more
            shown = ", ".join(f"{x}/" for x in names[:3]) + f" and {len(names) - 3} more"
        # -uu is --no-ignore too: a folder both hidden and git-ignored (.devenv, .venv) is
        # still skipped by --hidden alone, so advise only what the run showed working
        advice = "rg --hidden" if added in ("--hidden", "-.") else f"rg {added}"
        text = (
            f"In this project rg skips the hidden folder{'s' if len(names) > 1 else ''} "
            f"{shown} (it found nothing there until given {added}): search "
            f"{'them' if len(names) > 1 else 'it'} with {advice}."
        )
        fnd = _finding("hidden", f, "project", text, ("rg", "rg", names[0]), "no match")
        fnd = attrs.evolve(fnd, domain=t.steps[i].domain or "", detail={**fnd.detail, "avoid": []})
        why = (
            f"call {i + 1} {short(f)} found nothing; call {j + 1} added {added} and found "
            f"it in {shown}"
        )
        return ShellFix(i, j, (), fnd, why)
    return None


#: The shell refused a word it read as a pattern that matched no file: zsh's "no matches
#: found: W", bash's (failglob) "no match: W".
_NO_MATCH = re.compile(r"(?:^|\n)(?:(\w+|\(eval\))(?::\d+)?: )?no match(?:es found)?: ([^\n]+)")
_GLOB_CHARS = frozenset("[]*?")


def _line(step: Step) -> str:
    found = spec_for(step.tool)
    return command_line(found[1], step.params) if found else ""


def _quoted_in(word: str, line: str) -> bool:
    return f"'{word}'" in line or f'"{word}"' in line


def _tail(path: str, parts: int = 3) -> str:
    """The last ``parts`` parts of a path (``.../trips/[id]/route.ts``): its shape, without
    the user's folders."""
    bits = path.rstrip("/").split("/")
    return path if len(bits) <= parts else ".../" + "/".join(bits[-parts:])


def _literal_glob(t: Trajectory, i: int) -> ShellFix | None:
    """``glob``: the shell read an unquoted path holding ``[ ]``, ``*`` or ``?`` as a pattern
    that matched no file (zsh's "no matches found: W"), and a later successful call of the
    run passed the same path quoted: quote such paths in this shell."""
    step = t.steps[i]
    m = _NO_MATCH.search(step.output[:2000])
    if m is None or step.success or not is_shell(step.tool):
        return None
    word = m.group(2).strip()
    line = _line(step)
    if not _GLOB_CHARS & set(word) or word not in line or _quoted_in(word, line):
        return None
    shell = m.group(1) if m.group(1) and programs.has(m.group(1), Role.SHELL) else "zsh"
    if word.startswith("-"):
        return _glob_option(t, i, word, shell)
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if later.success and is_shell(later.tool) and _quoted_in(word, _line(later)):
            if _as_pattern(word, later) and not _as_pattern(word, step):
                return None  # a pattern on purpose (ls X*, then find -name 'X*'): no path
            q = quote_error(f"no matches found: {_tail(word)}", 8)
            text = (
                f"In {shell} an unquoted path with [ ], * or ? is a glob pattern ('{q}'): "
                "quote the path."
            )
            fnd = _finding("glob", shell, "machine", text, (shell, "quote"), q)
            # the shell of the client whose tool failed: Codex may run bash -lc where the
            # user's Claude Code runs zsh (served standing to that client's prompts only)
            known = spec_for(step.tool)
            client = {"client": known[0].client} if known is not None else {}
            fnd = attrs.evolve(fnd, domain=step.domain or "", detail={**fnd.detail, **client})
            why = f"call {i + 1} failed ('{q}'); call {j + 1} passed the path quoted"
            return ShellFix(i, j, (), fnd, why)
    return None


def _glob_option(t: Trajectory, i: int, word: str, shell: str) -> ShellFix | None:
    """``glob``, for an option whose value is a glob (``grep --include=*.hpp``: zsh expanded
    the whole word and found nothing): within :data:`WINDOW` calls the same program ran
    with the same operands (its pattern, its paths) and the option quoted or left out."""
    cmd = next((c for c in _commands(t.steps[i]) or () if word in c.args), None)
    if cmd is None or not cmd.operands:
        return None
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)):
            continue
        line = _line(later)
        again = [c for c in _commands(later) or () if c.program == cmd.program]
        if not any(c.operands[:1] == cmd.operands[:1] for c in again):
            continue
        if word in line and not _quoted_in(word, line):
            continue  # the same unquoted word: it matched something this time
        q = quote_error(f"no matches found: {word}", 8)
        text = (
            f"In {shell} an unquoted glob in an option ({word}) is expanded as a file pattern "
            f"and fails ('{q}'): quote it, or leave the filter out."
        )
        fnd = _finding("glob", shell, "machine", text, (shell, "quote"), q)
        known = spec_for(t.steps[i].tool)
        client = {"client": known[0].client} if known is not None else {}
        fnd = attrs.evolve(fnd, domain=t.steps[i].domain or "", detail={**fnd.detail, **client})
        why = f"call {i + 1} failed ('{q}'); call {j + 1} ran {cmd.program} without the glob"
        return ShellFix(i, j, (), fnd, why)
    return None


def _as_pattern(word: str, step: Step) -> bool:
    """Whether ``step`` gives ``word`` to an option of its program that takes a file-name
    pattern (:func:`~agentmem.agents.programs.pattern_options`: ``find -name X``, ``grep
    --include=X``)."""
    for c in _commands(step) or ():
        options = programs.pattern_options(c.program)
        for before, arg in zip(("", *c.args), c.args, strict=False):
            if arg == word and before in options:
                return True
            if any(arg == f"{o}={word}" for o in options if o.startswith("--")):
                return True
    return False


#: Characters PowerShell's -Path reads as a wildcard ([ ]) or, unquoted, as code (( )).
_PS_SPECIAL = frozenset("[]()")


def _literal_path(t: Trajectory, i: int) -> ShellFix | None:
    """``literal``: a PowerShell cmdlet given a path holding ``[ ]`` (a wildcard to -Path)
    or unquoted ``( )`` (code) failed, the failure naming the path or a part of it, and a
    later successful call of the same cmdlet passed that path as ``-LiteralPath``."""
    step = t.steps[i]
    call = powershell_call(_line(step)) if is_shell(step.tool) and not step.success else None
    if call is None:
        return None
    path = call.option("Path")
    if path is None:
        rest = [v for v in call.values[1:] if not v.startswith("-")]
        path = rest[0] if rest else None
    if not path or not _PS_SPECIAL & set(path):
        return None
    said = step.output[:2000]
    pieces = re.findall(r"\(([^()]+)\)", path)
    if path not in said and not any(f"'{x}'" in said for x in pieces):
        return None  # the failure is not about this path
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        fix = powershell_call(_line(later)) if later.success and is_shell(later.tool) else None
        if fix is None or fix.cmdlet.lower() != call.cmdlet.lower():
            continue
        if fix.option("LiteralPath") != path:
            continue
        text = (
            f"In PowerShell, {call.cmdlet} -Path reads [ ] in a path as a wildcard and "
            "unquoted ( ) as code: quote such a path and pass it as -LiteralPath."
        )
        q = quote_error(outcome(step).diagnostic or "does not exist", 8)
        fnd = _finding("literal", call.cmdlet, "tool", text, (call.cmdlet, "-LiteralPath"), q)
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} {call.cmdlet} failed ('{q}'); call {j + 1} passed -LiteralPath"
        return ShellFix(i, j, (), fnd, why)
    return None


#: A Windows drive path written with backslashes, as a command line holds it.
_DRIVE_PATH = re.compile(r"(?<![\w/])([A-Za-z]):((?:\\[^\s\\\"'<>|;&]+)+)")


def _slashed(drive: str, rest: str) -> tuple[str, ...]:
    """A Windows path's forward-slash forms: ``C:/Users/x``, ``/c/Users/x``."""
    tail = rest.replace("\\", "/")
    return (f"{drive}:{tail}", f"/{drive.lower()}{tail}")


def _eaten_shown(eaten: str, rest: str, output: str) -> bool:
    """Whether ``output`` shows a Windows path with its backslashes taken out (``eaten``):
    whole, or up to its first character outside ASCII, which bash prints as escaped bytes
    (``$'D:ClaudeWorkspace08_\\345...'``), as long as that much joins two of its folders."""
    if eaten in output:
        return True
    head = re.match(r"[\x00-\x7f]*", eaten)
    first = rest.lstrip("\\").split("\\", 1)[0]
    joined = head.group(0) if head else ""
    # past the drive (``D:``) and the first folder: a quoted path keeps its backslashes,
    # and its drive alone in the output (``npm ERR! path D:\项目\...``) shows nothing
    drive = eaten.index(":") + 1
    return len(joined) > drive + len(first) + 1 and joined in output


def _backslashes(t: Trajectory, i: int) -> ShellFix | None:
    """``backslash``: a bash shell (Git Bash on Windows) took the backslashes out of a
    Windows path (``C:\\Users\\x`` ran as ``C:Usersx``, and the output says so), and a later
    successful call passed the same path with forward slashes (``/c/Users/x``)."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool):
        return None
    line = _line(step)
    for m in _DRIVE_PATH.finditer(line):
        drive, rest = m.group(1), m.group(2)
        eaten = f"{drive}:{rest.replace(chr(92), '')}"
        if not _eaten_shown(eaten, rest, step.output[:2000]):
            continue  # no sign that bash ate them
        forms = _slashed(drive, rest)
        for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
            later = t.steps[j]
            if not (later.success and is_shell(later.tool)):
                continue
            good = _line(later)
            used = next((x for x in forms if x in good), None)
            if used is None:
                continue
            words = line[: m.start()].split()
            program = next((w for w in reversed(words) if w.isidentifier()), "bash")
            fixed = parse(good)
            other = fixed.commands[0].program if fixed.parsed and fixed.commands else ""
            via = f"; {other} worked" if other and other != program else ""
            shown = eaten if len(eaten) <= 20 else eaten[:17] + "..."
            form = f"{drive}:/..." if used.startswith(f"{drive}:") else f"/{drive.lower()}/..."
            text = (
                f"The Bash tool runs Git Bash here: it takes the backslashes out of a Windows "
                f"path ({program} {drive}:\\... fails: '{shown}'); write it with "
                f"forward slashes ({form}){via}."
            )
            facts = (program, other or program, "forward slashes")
            fnd = _finding("backslash", program, "machine", text, facts, eaten)
            fnd = attrs.evolve(fnd, domain=step.domain or "")
            why = f"call {i + 1} lost a path's backslashes; call {j + 1} used {used}"
            return ShellFix(i, j, (), fnd, why)
    return None


#: A double-quoted path that ends in a backslash (``"C:\\Users\\me\\app\\"``): bash reads
#: the last ``\\"`` as a quote character, and the string runs on.
_QUOTED_TRAILING = re.compile(r'"((?:[A-Za-z]:)?[^"\n]*\\[^"\n]*?\\)"')
#: bash's report of a quoted string that never closed.
_UNCLOSED = "unexpected EOF while looking for matching"


def _trailing_backslash(t: Trajectory, i: int) -> ShellFix | None:
    """``quote_backslash``: bash failed with a quote that never closed because a
    double-quoted Windows path ended in a backslash (``ls "C:\\x\\app\\"``: the ``\\"``
    escapes the closing quote), and a later successful call named the same path without
    that backslash (with forward slashes, or with the backslashes and no trailing one), or
    Claude Code's PowerShell tool named it as it was."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool) or _UNCLOSED not in step.output[:2000]:
        return None
    line = _line(step)
    for m in _QUOTED_TRAILING.finditer(line):
        path = m.group(1).rstrip("\\")
        if "\\" not in path or len(path) < 3:
            continue
        forms = {path, path.replace("\\", "/")}
        if re.match(r"[A-Za-z]:", path):
            forms.update(_slashed(path[0], path[2:]))
        for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
            later = t.steps[j]
            if not (later.success and is_shell(later.tool)):
                continue
            good = _line(later)
            used = next((x for x in forms if x in good), None)
            # PowerShell (Claude Code's tool beside Bash) reads "C:\x\" as it is written
            other = later.tool != step.tool and "powershell" in later.tool.lower()
            if used is None or (f'{used}\\"' in good and not other):
                continue
            text = (
                "In Bash a double-quoted path that ends in a backslash escapes its closing "
                f"quote ('{_UNCLOSED}'): drop the trailing backslash or use forward slashes."
            )
            facts = ("bash", "trailing backslash", "forward slashes")
            fnd = _finding("quote_backslash", step.tool, "tool", text, facts, _UNCLOSED)
            fnd = attrs.evolve(fnd, domain=step.domain or "")
            why = f"call {i + 1}'s quoted path ended in a backslash; call {j + 1} used {used}"
            return ShellFix(i, j, (), fnd, why)
    return None


#: An interpreter's report of a module it could not import: a traceback's last line, or
#: ``python -m x``'s own words (``/usr/bin/python3: No module named pytest``). A script that
#: prints a caught ImportError says neither.
_NO_MODULE = re.compile(
    r"(?:ModuleNotFoundError|ImportError|python[\w.]*(?:\.exe)?): No module named "
    r"'?([A-Za-z_][\w]*)(?:\.[\w.]+)?'?"
)
#: An environment's interpreter: ``.venv/bin/python``, ``venv\Scripts\python.exe``.
_ENV_PYTHON = re.compile(r"^(.*?)[/\\](?:bin|Scripts)[/\\]python[\d.]*(?:\.exe)?$")


def _env_of(c: Command, cmds: Sequence[Command]) -> tuple[str, str] | None:
    """The environment that command ``c`` of a call (``cmds``) ran in, and how: its
    interpreter written by its path in an environment (``./.venv/bin/python``), or the
    call's ``source ENV/bin/activate`` before it; else None."""
    m = _ENV_PYTHON.match(_program_word(c))
    if m and m.group(1):
        return m.group(1), f"run it as {_program_word(c)}"
    k = next((n for n, x in enumerate(cmds) if x is c), 0)
    for x in cmds[:k]:
        if x.program in ("source", ".") and x.operands:
            a = re.match(r"^(.*?)[/\\](?:bin|Scripts)[/\\]activate(?:\.\w+)?$", x.operands[0])
            if a and a.group(1):
                return a.group(1), f"source {x.operands[0]} first"
    return None


def _code_of(c: Command, line: str) -> str:
    """The inline code an interpreter command runs: its ``-c`` / ``-e`` operand, or the body
    of the call's here-document; "" for a script file."""
    words = list(c.words)
    for k, w in enumerate(words[:-1]):
        if w in _CODE_FLAGS:
            return words[k + 1]
    if any(op in ("<<", "<<-") for op, _ in c.redirects):
        return "\n".join(line.split("\n")[1:-1])
    return ""


#: A statement of an import probe: an import, or a print of what it imported.
_PROBE_STATEMENT = re.compile(
    r"(?:import\s+[\w., ]+|from\s+[\w.]+\s+import\s+[\w., *]+|"
    r"print\((?:[\w.]+|'[^']*'|\"[^\"]*\")(?:\s*,\s*(?:[\w.]+|'[^']*'|\"[^\"]*\"))*\))"
)


def _import_probe(code: str) -> bool:
    """Whether inline code only asks whether a module is there (``import x;
    print(x.__version__)``): an existence probe, whose "No module named x" is its answer."""
    parts = [x.strip() for x in re.split(r"[;\n]", code) if x.strip()]
    return bool(parts) and all(_PROBE_STATEMENT.fullmatch(x) for x in parts)


def _environment(t: Trajectory, i: int) -> ShellFix | None:
    """``environment``: an interpreter could not import a module (``No module named X``),
    and a later successful call ran the same job (the same arguments, or code that imports
    X) with the interpreter of an environment (``./.venv/bin/python``, ``source
    venv/bin/activate && python3``): the project's environment has what the interpreter
    that ran lacks. A failing check of the code counts as done in the learning view, so the
    failure is read from its output, whatever the view says."""
    step = t.steps[i]
    if not is_shell(step.tool):
        return None
    m = _NO_MODULE.search(step.output[-2000:])
    cmds = _commands(step) or ()
    runs = [c for c in cmds if programs.is_interpreter(_bare(c.program))]
    if m is None or not runs or _import_probe(_code_of(runs[-1], _line(step))):
        return None  # not an interpreter's own failure (pytest's), or a probe answered
    module, f = m.group(1), runs[-1]
    before = _env_of(f, cmds)
    job = re.compile(rf"\b(?:import|from)\s+{re.escape(module)}\b")
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)) or _NO_MODULE.search(later.output):
            continue
        got = _commands(later) or ()
        for c in got:
            if not programs.is_interpreter(_bare(c.program)):
                continue
            env = _env_of(c, got)
            if env is None or env == before or not _proven(later, c):
                continue
            if not (_same_args(f, c) or (_inline(f) and job.search(_code_of(c, _line(later))))):
                continue
            where, how = env
            q = quote_error(f"No module named {module}", 6)
            text = (
                f"In this project {f.program} lacks {module} ('{q}'); the project's "
                f"environment {where.rstrip('/')}/ has it: {how}."
            )
            fnd = _finding(
                "environment", f, "project", text, (f.program, where, module), q, avoid=[]
            )
            fnd = attrs.evolve(fnd, domain=step.domain or "")
            why = f"call {i + 1} {short(f)} lacked {module}; call {j + 1} ran in {where}"
            return ShellFix(i, j, (), fnd, why)
    return None


#: Node's words for a module it could not resolve by name (not a relative path).
_NODE_NO_MODULE = re.compile(r"Cannot find module '([A-Za-z@][\w@/.-]*)'")
#: The variable that extends each interpreter family's import path.
_IMPORT_PATH = {"python": "PYTHONPATH", "node": "NODE_PATH"}


def _missing_module(step: Step, c: Command) -> str | None:
    """The module interpreter command ``c`` of ``step`` died for want of: Python's
    traceback ending ``No module named M``; Node's ``Cannot find module 'M'`` from
    ``require`` (``MODULE_NOT_FOUND``: an ES import never reads ``NODE_PATH``); else None.
    The learning view counts such a run as the code's, so its output decides."""
    text = step.output[-3000:]
    if _family(_bare(c.program)) == "python":
        last = next((x.strip() for x in reversed(text.splitlines()) if x.strip()), "")
        m = _NO_MODULE.match(last)
        return m.group(1) if m else None
    if _bare(c.program) == "node" and "'MODULE_NOT_FOUND'" in text:
        n = _NODE_NO_MODULE.search(text)
        return n.group(1) if n else None
    return None


def _project_dir(value: str, cwd: str) -> str | None:
    """The one folder of the project an import path's value names (``src``, ``./lib``,
    ``$PWD/src``, ``src:$PYTHONPATH``, an absolute path under the session's folder),
    written from the session's folder; None for another value."""
    parts = [x for x in value.split(":") if x and not re.fullmatch(r"\$\{?\w+\}?", x)]
    if len(parts) != 1:
        return None
    d = re.sub(r"^(?:\$\{?PWD\}?|\$\(pwd\))(?=/|$)", ".", parts[0])
    if cwd and (d == cwd or d.startswith(cwd.rstrip("/") + "/")):
        d = "." + d[len(cwd.rstrip("/")) :]
    d = posixpath.normpath(d) if d else ""
    if not d or d.startswith(("/", "..", "$", "~")) or "\\" in d or "$" in d:
        return None  # outside the project, or a value the line computes
    return d


def _module_elsewhere(t: Trajectory, module: str, folder: str) -> bool:
    """Whether the run names paths of ``module`` (``x/M/...``, ``x/M.py``) and none under
    ``folder``: the variable pointed at a folder that does not hold it."""
    top = module.split("/")[0].split(".")[0]
    pat = re.compile(rf"(?:^|[\s'\"(=:])([\w./-]*?)(?<![\w.-]){re.escape(top)}(?:/|\.py\b|\.js\b)")
    cwd = str(t.meta.get("cwd") or "").rstrip("/")
    seen: set[str] = set()
    for step in t.steps:
        for text in (step.output[:4000], _line(step) if is_shell(step.tool) else ""):
            seen |= {m.group(1) for m in pat.finditer(text)}
    # the session's folder or one above it (/w/app/ for a module app) is no path of M
    seen = {x for x in seen if not (cwd + "/").startswith(f"{x}{top}/")}
    if not seen:
        return False  # the run does not show where the module is
    under = {folder.rstrip("/") + "/", "./" + folder.rstrip("/") + "/"}
    if cwd:
        under.add(f"{cwd}/{folder}/".replace("/./", "/"))
    return not any(x in under or (folder == "." and x in ("", "./", cwd + "/")) for x in seen)


def _changes_folder(c: Command, here: str) -> bool:
    """Whether command ``c`` moves the shell to another folder than ``here``."""
    return programs.has(c.program, Role.CHDIR) and not moves_nowhere(c, here)


def _installs(c: Command) -> bool:
    """Whether command ``c`` installs: a machine's installer (``apt``, ``brew``) or a
    package manager's subcommand that adds packages (``pip install``, ``npm i``)."""
    roles = programs.sub_roles(c.program, c.subcommand)
    nested = programs.has(c.program, Role.HOST) and "install" in c.args[:2]  # uv pip install
    return _installer(c) or Role.PACKAGES in roles or nested


def _import_path(t: Trajectory, i: int) -> ShellFix | None:
    """``importpath``: an interpreter could not import a module (Python's ``No module named
    M``, Node's ``Cannot find module 'M'``), and a later call, with no install between, ran
    the same command (the same arguments; not a probe that only imports M) with the import
    path extended to one folder of the project (``PYTHONPATH=src``, ``NODE_PATH=lib``), and
    worked. Where the run names M's paths, one must be in that folder."""
    step = t.steps[i]
    if not is_shell(step.tool):
        return None
    cmds = _commands(step) or ()
    runs = [c for c in cmds if programs.is_interpreter(_bare(c.program))]
    if not runs or _import_probe(_code_of(runs[-1], _line(step))):
        return None
    f = runs[-1]
    module = _missing_module(step, f)
    family = _family(_bare(f.program)) or _bare(f.program)
    var = _IMPORT_PATH.get(family)
    if module is None or var is None or _set_in(f, _line(step), var) is not None:
        return None
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        got = _commands(later) if is_shell(later.tool) else None
        if got is None:
            continue
        if any(_installs(c) for c in got):
            return None  # something was installed: that may be what made it work
        c = next((x for x in got if x.program == f.program and _same_args(f, x)), None)
        if c is None:
            continue
        value = _set_in(c, _line(later), var)
        still = _NO_MODULE.search(later.output) or "MODULE_NOT_FOUND" in later.output
        if value is None or not later.success or still or not _proven(later, c):
            return None  # the same command again, without the fix or failing still
        if _code_of(c, _line(later)) != _code_of(f, _line(step)):
            return None
        here = str(t.meta.get("cwd") or "")
        if any(_changes_folder(x, here) for x in (*cmds, *got)):
            return None  # the folder is named from another folder than the session's
        folder = _project_dir(value, here)
        if folder is None or _module_elsewhere(t, module, folder):
            return None
        said = (
            f"No module named {module}" if var == "PYTHONPATH" else f"Cannot find module '{module}'"
        )
        q = quote_error(said, 8)
        text = (
            f"In this project {f.program} cannot import {module} from the session's folder "
            f"('{q}'): run it with {var}={folder} ({var}={folder} {short(f, 40)})."
        )
        fnd = _finding(
            "importpath", f, "project", text, (f.program, var, folder, module), q, avoid=[]
        )
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} {short(f)} lacked {module}; call {j + 1} ran with {var}={folder}"
        return ShellFix(i, j, (), fnd, why)
    return None


#: bash's words for a command it found no program for: ``bash: line 1: del: command not found``.
_BASH_NOT_FOUND = re.compile(r"(?:^|\n)[^\n]*?\b([\w.-]+): command not found")
#: A path in a command line that bash could not read: quoted, or a word with a slash.
_LINE_PATH = re.compile(r"\"([^\"]+)\"|'([^']+)'|(\S*[\\/]\S*)")


def _norm_path(p: str) -> str:
    """``p`` with one kind of slash, lower-cased, and the home folder in one spelling
    (``~``): cmd's ``%USERPROFILE%``, PowerShell's ``$env:USERPROFILE`` and bash's
    ``$HOME`` name the same folder."""
    low = re.sub(r"[\\/]+", "/", p).strip().lower()
    return _HOME_WORD.sub("~", low)


#: The home folder as cmd, PowerShell and bash spell it (lower-cased by :func:`_norm_path`).
_HOME_WORD = re.compile(r"%userprofile%|\$env:userprofile|\$\{home\}|\$home\b")


def _line_paths(line: str) -> list[str]:
    """The paths a command line names (quoted, or written with a slash), normalised."""
    out = [next(g for g in m.groups() if g) for m in _LINE_PATH.finditer(line)]
    # a bare home folder (``%USERPROFILE%\``, ``~/``) is in every path under it: no path
    normed = [_norm_path(x) for x in out if re.search(r"[\\/]", x)]
    return [x for x in normed if len(x.rstrip("/")) > 3]


#: A rooted path among a call's words (a drive, ``/``, ``~``), as :func:`_norm_path` writes it.
_ROOTED_WORD = re.compile(r"""(?:^|[\s"'=])(?:[a-z]:/|/|~)""")


def _call_folder(t: Trajectory, k: int) -> str:
    """The folder call ``k`` ran in: the one its run's ``cwds`` records for it (a ``cd``
    the Bash tool kept), else the run's ``cwd``; "" when unknown."""
    cwds = t.meta.get("cwds")
    own = cwds.get(str(k)) if isinstance(cwds, dict) else None
    where = own if isinstance(own, str) and own else t.meta.get("cwd")
    return where.rstrip("\\/") if isinstance(where, str) else ""


def _windows_fix(t: Trajectory, i: int) -> tuple[int, str] | None:
    """The call after failed call ``i`` (its Windows commands not found in bash) that did
    the same job on the same path: the PowerShell tool, a client tool of that job (Read
    for a reader, Grep or Glob for a search or a listing: :data:`_TOOL_JOBS`), or bash's
    own command of that job (:func:`programs.same_job`: ``grep`` for ``Select-String``,
    never ``cargo``; after cmd's syntax, the command whose words changed). When calls on
    the path worked without the failed commands but none did their job: the first of
    them, crediting nothing (""); else None."""
    paths = _line_paths(_line(t.steps[i]))
    if not paths:
        return None
    names, _, syntax = _windows_failure(t, i)
    # the failed call named its own folder (``dir /b "C:\\app"`` run in C:\\app): a later
    # call in that folder naming no rooted path works on it too (Glob ``src/*.py``)
    here = _norm_path(_call_folder(t, i))
    moved_on: int | None = None
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not later.success:
            continue
        said = _norm_path(" ".join(str(v) for v in later.params.values()))
        if not any(p in said for p in paths):
            in_folder = (
                here in paths
                and _norm_path(_call_folder(t, j)) == here
                and not _ROOTED_WORD.search(said)
            )
            if in_folder and moved_on is None:
                moved_on = j  # worked in that folder: crediting nothing
            continue
        ran = {c for c, _ in _commands_as_written(_line(later))}
        if moved_on is None and not ran & set(names):  # the failed commands not run again
            moved_on = j
        if "powershell" in later.tool.lower():
            said = str(later.params.get("command") or "")
            # its first cmdlet, else its first word (not ``if`` of ``if (Test-Path x)``)
            cmd = [*_CMDLET_AT.findall(said), *said.split()]
            return j, f"the PowerShell tool ({cmd[0]})" if cmd else "the PowerShell tool"
        if is_shell(later.tool):
            # cmd's syntax rewritten in bash's: the command whose words changed did the job
            first = _replacement(t.steps[i], later, () if syntax else names, rewritten=syntax)
            if first:
                return j, f"bash's own {_with_options(later, first)}"
            if syntax:
                break  # no rewrite of the line: what worked before it, crediting nothing
            continue
        found = spec_for(later.tool)
        # a construct's job is its command's (``dir /s`` lists as ``dir`` does)
        if found is not None and any(
            programs.same_job(n.split()[0], _TOOL_JOBS.get(found[1].kind, ())) for n in names
        ):
            return j, later.tool
    return None if moved_on is None else (moved_on, "")


#: A client tool's kind, and the programs whose job it does (:func:`programs.same_job`).
_TOOL_JOBS: dict[ToolKind, tuple[str, ...]] = {
    ToolKind.READ: ("cat",),
    ToolKind.SEARCH: ("grep", "find"),
    ToolKind.WRITE: ("touch",),
}


def _replacement(
    failed: Step, retry: Step, jobs: Sequence[str] = (), *, rewritten: bool = False
) -> str:
    """The program of the retry's first command that is not in the failed call as it was
    written there (program and words): the part that changed, which may have done the
    job. A command both calls ran the same (``cd DIR &&`` before the command replaced) only
    sets the scene. With ``jobs`` (the failed commands' names), only a command that does
    one of their jobs (:func:`programs.same_job`) counts. ``rewritten`` (cmd's syntax
    rewritten in bash's): only a program the failed line names among its words, or one
    doing a named program's job (``mkdir -p D`` for ``if not exist D mkdir D``, ``cd D``
    for ``cd /d D``, ``ls -la`` for ``dir /b``), read from the retry's
    words where the shell reader cannot read it (a quoted ``C:\\`` path). "" when the retry
    cannot be read or changed no such command."""
    same = _commands_as_written(_line(failed))
    found = parse(_line(retry))
    if found.parsed:
        ran = [(c.program, c.args) for c in found.commands]
    elif rewritten:
        ran = sorted(_commands_as_written(_line(retry)), key=lambda c: _line(retry).find(c[0]))
    else:
        return ""
    # the words of the line's cmd constructs (``if not exist D mkdir D``), not of what
    # else it ran (``cd /d D && python -m pytest``: pytest is no rewrite of ``cd /d``)
    named = (
        {
            w
            for part in re.split(r"&&|\|\||[;|\n]", _line(failed))
            if programs.cmd_syntax(part)
            for prog, args in _commands_as_written(part)
            for w in (prog, *args)
        }
        if rewritten
        else set()
    )
    return next(
        (
            prog
            for prog, args in ran
            if (prog, args) not in same
            and (not jobs or programs.same_job(prog, jobs))
            and (not rewritten or prog in named or programs.same_job(prog, named))
        ),
        "",
    )


def _commands_as_written(line: str) -> set[tuple[str, tuple[str, ...]]]:
    """A line's simple commands as (program, words after it). A line the shell reader
    refuses (PowerShell's cmdlets in it) is split at its separators into words."""
    script = parse(line)
    if script.parsed:
        return {(c.program, c.args) for c in script.commands}
    out: set[tuple[str, tuple[str, ...]]] = set()
    for part in re.split(r"&&|\|\||[;|\n]", line):
        try:
            words = shlex.split(part)
        except ValueError:
            continue
        if words:
            out.add((words[0].rsplit("/", 1)[-1], tuple(words[1:])))
    return out


#: bash rejecting a line written in cmd's syntax (``cd /d X``: too many arguments; ``if
#: not exist X``: an unfinished ``if``; ``dir /b``: no such file ``/b``).
_BASH_REJECTS = re.compile(
    r"[^\n]*(?:too many arguments|syntax error[^\n]*|unexpected end of file|"
    r"cannot access '/[A-Za-z]'[^\n]*)"
)
#: A Windows drive path in a command line: the machine is Windows.
_DRIVE = re.compile(r"(?:^|[\s\"'=])[A-Za-z]:[\\/]")
#: A variable as cmd writes it (``%USERPROFILE%``), which only cmd expands.
_CMD_VARIABLE = re.compile(r"%[A-Za-z_]\w+%")  # two characters or more: not date's %Y%


def _cmd_constructs(step: Step, cwd: str = "") -> tuple[list[str], str] | None:
    """cmd's syntax that bash rejected in a failed shell call on Windows (its line names a
    drive path or a cmd variable, ``%USERPROFILE%``, or the run's folder ``cwd`` is a
    drive's): the constructs (``cd /d``) and bash's words for the rejection."""
    line = _line(step)
    m = _BASH_REJECTS.search(step.output[:2000])
    windows = _DRIVE.search(line) or _CMD_VARIABLE.search(line) or _DRIVE.match(cwd)
    if m is None or not windows:
        return None
    names = [programs.cmd_syntax(x) for x in re.split(r"&&|\|\||[;|\n]", line)]
    found = [n for n in names if n]
    return (found, _strip_bash_prefix(m.group(0))) if found else None


def _strip_bash_prefix(line: str) -> str:
    return re.sub(r"^(?:\S*bash(?:\.exe)?: )?(?:line \d+: )?", "", line.strip())


def _syntax_retry(t: Trajectory, i: int) -> tuple[int, str] | None:
    """The later Bash call that ran failed call ``i``'s line on the same paths in bash's
    own syntax (no cmd construct left) and got past it: it worked, or it failed further
    on, in what ran after (a script's own error), bash rejecting nothing and its first
    program reporting nothing (``cd: ...``)."""
    paths = _line_paths(_line(t.steps[i]))
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        line = _line(later)
        if not is_shell(later.tool) or "powershell" in later.tool.lower():
            continue
        if not paths or not any(p in _norm_path(line) for p in paths):
            continue
        if any(programs.cmd_syntax(x) for x in re.split(r"&&|\|\||[;|\n]", line)):
            return None  # cmd's syntax again
        found = parse(line)
        if not found.parsed or not found.commands:
            return None
        first = found.commands[0].program
        changed = _replacement(t.steps[i], later)
        if not changed:
            return None
        out = later.output[:2000]
        if not later.success and (
            not out.strip()
            or _BASH_REJECTS.search(out)
            or re.search(rf"\b{re.escape(first)}: ", out)
        ):
            return None
        return j, f"bash's own {_with_options(later, changed)}"
    return None


def _with_options(step: Step, program: str) -> str:
    """``program`` as call ``step`` first ran it, with the options it gave it before any
    other word (``ls -la``, ``mkdir -p``; at most two): how the job was done. A line the
    shell reader refuses is read word by word (:func:`_commands_as_written`)."""
    line = _line(step)
    found = parse(line)
    ran = (
        [(c.program, c.args) for c in found.commands]
        if found.parsed
        else sorted(_commands_as_written(line), key=lambda c: line.find(c[0]))
    )
    args = next((a for p, a in ran if p == program), None)
    if args is None:
        return program
    opts = list(itertools.takewhile(lambda a: re.fullmatch(r"--?[A-Za-z][\w-]*", a), args))
    return " ".join([program, *opts[:2]])


def _windows_failure(t: Trajectory, k: int) -> tuple[list[str], str, bool]:
    """A Bash call's Windows commands bash found no program for (``del``), or its cmd
    syntax bash rejected (``cd /d``): the names, bash's words, and whether it is syntax."""
    s = t.steps[k]
    if s.success or not is_shell(s.tool) or "powershell" in s.tool.lower():
        return [], "", False
    names = [n for n in _BASH_NOT_FOUND.findall(s.output[:2000]) if programs.is_windows_command(n)]
    if names:
        return names, f"{names[0]}: command not found", False
    code = _powershell_code(s, _call_folder(t, k))
    if code is not None:
        return code[0], code[1], False
    syntax = _cmd_constructs(s, _call_folder(t, k))
    return (syntax[0], syntax[1], True) if syntax else ([], "", False)


#: A PowerShell cmdlet where a command starts (``if (Test-Path x) { Write-Output y }``):
#: not a header's name in quotes (``"Content-Type: ..."``).
_CMDLET_AT = re.compile(r"(?:^|[;|{(&]|&&)\s*([A-Z][a-z]+-[A-Z][A-Za-z]+)\b")


def _powershell_code(step: Step, cwd: str) -> tuple[list[str], str] | None:
    """PowerShell's code that bash rejected before running any of it, in a failed Bash
    call on Windows (its line or the run's folder names a drive): the cmdlets it names
    where commands start, and bash's words for the rejection (harinathpathipaka-visionweb:
    ``if (Test-Path x) { ... }``, "syntax error near unexpected token `{'")."""
    line = _line(step)
    m = _BASH_REJECTS.search(step.output[:2000])
    if m is None or not (_DRIVE.search(line) or _DRIVE.match(cwd)):
        return None
    cmdlets = [c for c in dict.fromkeys(_CMDLET_AT.findall(line)) if programs.is_windows_command(c)]
    return (cmdlets, _strip_bash_prefix(m.group(0))) if cmdlets else None


def _windows_fixed(t: Trajectory, k: int, syntax: bool | None) -> tuple[int, str] | None:
    """The call that did the job of call ``k``'s Windows commands (:func:`_windows_fix`)
    or got past its cmd syntax (:func:`_syntax_retry`), when ``k`` is such a failure of
    the kind ``syntax`` says (None: of either kind); else None."""
    names, _, own = _windows_failure(t, k)
    if not names or own != (own if syntax is None else syntax):
        return None
    return _windows_fix(t, k) or (_syntax_retry(t, k) if own else None)


def _windows_commands(t: Trajectory, i: int) -> ShellFix | None:
    """``windows``: a shell call whose commands are cmd's or PowerShell's (``del``,
    ``Start-Sleep``) failed because bash (Claude Code's Bash is Git Bash on Windows) found
    no such program, or whose cmd syntax (``cd /d``, ``if not exist``, ``dir /b``) bash
    rejected ("too many arguments", a syntax error), and a later call did the same job on
    the same path: the PowerShell tool, a client tool, or bash's own command. The run's
    first such failure teaches it, naming every Windows command the run tried in bash and
    what worked instead."""
    first, said, syntax = _windows_failure(t, i)
    fixed = _windows_fixed(t, i, syntax) if first else None
    # not such a failure, or not the run's first that a call got past: the nearest earlier
    # one is looked for first, so a run's many failures cost its length, not its square
    if fixed is None or any(_windows_fixed(t, k, None) for k in reversed(range(i))):
        return None
    names, ways = list(dict.fromkeys(first)), [w for w in [fixed[1]] if w]
    for k in range(i + 1, len(t.steps)):
        again = _windows_fixed(t, k, syntax)
        if again is not None:
            more = _windows_failure(t, k)
            names += [n for n in more[0] if n not in names]
            ways += [w for w in [again[1]] if w and w not in ways]
    shown = ", ".join(names[:4])
    q = quote_error(said, 6)
    if syntax:
        what = f"cmd's syntax ({shown}) fails"
    elif said.endswith("command not found"):
        what = f"cmd's and PowerShell's commands ({shown}) are not found"
    else:  # bash rejected the line before running it (_powershell_code)
        what = f"PowerShell's code ({shown}) fails"
    # nothing of the failed commands' job followed: the fact alone, crediting nothing
    done = f"; {' and '.join(ways)} did the job instead." if ways else "."
    text = f"The Bash tool runs Git Bash here: {what} there ('{q}'){done}"
    fnd = _finding("windows", first[0], "machine", text, (first[0], "Git Bash", *names[1:]), q)
    fnd = attrs.evolve(fnd, domain=t.steps[i].domain or "", detail={**fnd.detail, "avoid": names})
    ran = ", ".join(dict.fromkeys(first))
    how = f"did the job ({fixed[1]})" if fixed[1] else "worked on the same path"
    why = f"call {i + 1} ran {ran} in Git Bash; call {fixed[0] + 1} {how}"
    return ShellFix(i, fixed[0], (), fnd, why)


#: A script's report of a path it could not find or resolve (node's ENOENT, esbuild's
#: "Could not resolve", python's "can't open file", a module not found by its path).
_NO_PATH = re.compile(
    r"ENOENT[^\n]*|[^\n]*No such file or directory[^\n]*|Could not resolve [^\n]+|"
    r"Cannot find module [^\n]+|can't open file [^\n]+"
)
_SCRIPT = re.compile(r"\.(?:js|mjs|cjs|ts|tsx|py|rb|sh|php|pl|exs)$")


def _script_run(cmds: Sequence[Command]) -> tuple[str, Command, str] | None:
    """The folder a call ran its script from (its last ``cd``'s, or "" for the session's),
    the interpreter command, and the script it ran (``node assets/build.js``)."""
    where = ""
    for c in cmds:
        if c.program == "cd" and len(c.operands) == 1:
            where = c.operands[0]
        elif programs.is_interpreter(_bare(c.program)) and c.operands:
            script = c.operands[0]
            if _SCRIPT.search(script) and not c.subcommand:
                return where, c, script
        elif programs.has(c.program, Role.HOST) and c.subcommand and _SCRIPT.search(c.subcommand):
            return where, c, c.subcommand  # bun hooks/x.ts: a host running a file
    return None


def _resolved(cwd: str, where: str, script: str) -> str:
    base = where if where.startswith(("/", "~")) else os.path.join(cwd or ".", where)
    return os.path.normpath(os.path.join(base, script))


def _workdir(t: Trajectory, i: int) -> ShellFix | None:
    """``workdir``: a script run failed on a path it could not find or resolve (its output
    says so, naming it), and a later successful call ran the same script, by the same
    interpreter, from another folder (``cd assets && node build.js`` after ``node
    assets/build.js``): the project's script must run from there. A failing script counts
    as done in the learning view, so the failure is read from its output."""
    step = t.steps[i]
    if not is_shell(step.tool):
        return None
    m = _NO_PATH.search(step.output[:3000])
    run = _script_run(_commands(step) or ())
    if m is None or run is None or not re.search(r"[\w.~-]/[\w.-]", m.group(0)):
        return None
    cwd = str(t.meta.get("cwd") or "")
    where, f, script = run
    at = _resolved(cwd, where, script)
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)) or _NO_PATH.search(later.output[:3000]):
            continue
        cmds = _commands(later) or ()
        again = _script_run(cmds)
        if again is None or again[1].program != f.program or not again[0]:
            continue
        there, c, other = again
        if os.path.basename(other) != os.path.basename(script) or not _proven(later, c):
            continue
        same = _resolved(cwd, there, other) == at or (
            not script.startswith(("/", "~"))
            and _resolved(cwd, there, other).endswith("/" + os.path.normpath(script))
        )
        moved = os.path.normpath(_resolved(cwd, there, ".")) != os.path.normpath(
            _resolved(cwd, where, ".")
        )
        if not (same and moved) or other == script:  # the path as written moves with it
            continue
        q = quote_error(m.group(0).strip(), 8)
        name = os.path.basename(script)
        how = f"cd {there} && {short(c, 50)}"
        before = f"from {where}" if where else "from the session's folder"
        text = f"In this project run {name} from {there} ({how}); {before} it fails with '{q}'."
        fnd = _finding("workdir", f, "project", text, (name, there), q, avoid=[])
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} ran {script} ({q}); call {j + 1} ran it from {there}"
        return ShellFix(i, j, (), fnd, why)
    return None


#: Options of a package manager that name the folder it runs in (``npm --prefix web``,
#: ``pnpm -C web``, ``yarn --cwd web``).
_IN_FOLDER = ("--prefix", "-C", "--dir", "--cwd")


def _into(where: str, folder: str) -> str:
    """Folder ``folder`` (as written) entered from ``where`` (as written; "" for the
    call's own folder)."""
    rooted = _ROOTED.match(folder) or folder.startswith("~")
    return posixpath.join(where, folder) if where and not rooted else folder


def _script_call(cmds: Sequence[Command]) -> tuple[str, Command, str, str] | None:
    """The folder a call ran a project script in (its ``cd``s', each inside the one
    before, then the package manager's ``--prefix`` / ``-C`` / ``--dir`` / ``--cwd``; ""
    when neither), the command, the script's name (``npm run lint``, ``pnpm typecheck``: a
    program of the table whose ``run NAME`` runs scripts,
    :attr:`~agentmem.agents.programs.Program.scripts`), and the ``cd``s' folder alone."""
    moved = ""
    for c in cmds:
        if c.program == "cd" and len(c.operands) == 1:
            moved = _into(moved, c.operands[0])
            continue
        p = programs.get(c.program)
        if p is None or not p.scripts or not c.subcommand:
            continue
        name = c.subcommand.removeprefix("run ")
        where = moved
        for flag in c.flags:
            parts = re.split(r"[=\s]", flag, maxsplit=1)
            opt, value = parts[0], (parts[1] if len(parts) > 1 else "")
            if opt in _IN_FOLDER and value:
                where = _into(where, value)
        return where, c, name, moved
    return None


#: A folder a line names by what the shell makes of it (``$PWD``, ``cd -``, a command's
#: output, ``%CD%``): no folder a lesson can name.
_UNNAMED_FOLDER = re.compile(r"[$`%]|^-$")


def _at(step: Step, base: str, where: str) -> str:
    """The folder ``where`` (a ``cd``'s, as written) names for ``step``: under its
    ``workdir`` or ``base`` (the folder the call stood in) when relative."""
    base = _folder_of(step, base or None) or ""
    where = where.replace("\\", "/")
    if _ROOTED.match(where) or where.startswith("~"):
        return posixpath.normpath(where)
    return posixpath.normpath(posixpath.join(base, where)) if base or where else ""


def _under(path: str, top: str) -> bool:
    """Whether folder ``path`` is ``top`` or inside it (a drive's path in any case)."""
    if re.match(r"[A-Za-z]:", path):
        path, top = path.lower(), top.lower()
    return path == top or path.startswith(top.rstrip("/") + "/")


def _named(path: str, top: str) -> str:
    """Folder ``path`` as a lesson names it: from the session's folder ``top`` when inside
    it ("" for ``top`` itself), else whole."""
    if top and _under(path, top):
        rel = posixpath.relpath(path, top) if path != top else "."
        return "" if rel == "." else rel
    return path


#: npm's and pnpm's echo of the script they run: ``> dashboard@1.0.0 typecheck /w/dash``
#: (npm 7+: ``> dashboard@1.0.0 typecheck``; npm 6 and yarn 1: ``> typecheck``).
def _ran_script(output: str, name: str) -> bool:
    echo = rf"(?m)^\s*> (?:\S+@\S+ )?{re.escape(name)}(?:\s|$)"
    return re.search(echo, output[:3000]) is not None


def _script_elsewhere(t: Trajectory, i: int) -> ShellFix | None:
    """``script``: a package manager ran the project script NAME in a folder whose
    package.json has none (``pnpm run typecheck``: "Missing script: typecheck", the name
    the error gives), and a later call ran that script by the same package manager in
    another folder of the project (``cd dashboard && pnpm run typecheck``, ``npm --prefix
    web run lint``; inside the session's folder, or above it) and it ran there: its output
    echoes the script (``> dashboard@1.0.0 typecheck``), or, when the error said no such
    script (not pnpm's or yarn's "Command "x" not found", which a program of a package's
    own also answers), the call worked with nothing after the command but ``&&``. Each
    call's folder is where it stood (the run's ``cwds``: a ``cd`` the Bash tool kept). A
    monorepo keeps that script in a package: the project's fact. Listing the scripts
    (``npm run``), another script, or the same folder again teaches nothing."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool):
        return None
    name = missing_script(step.output)
    said = missing_script_error(step.output) or ""
    run = _script_call(_commands(step) or ())
    if name is None or run is None or run[2] != name or _UNNAMED_FOLDER.search(run[0]):
        return None
    root = str(t.meta.get("cwd") or "").replace("\\", "/")
    top = posixpath.normpath(root) if root else ""
    where, f, _, _ = run
    here = _at(step, _call_folder(t, i), where)
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)) or missing_script(later.output):
            continue
        again = _script_call(_commands(later) or ())
        if again is None or again[1].program != f.program or again[2] != name:
            continue
        there, c, _, moved = again
        if _UNNAMED_FOLDER.search(there):
            continue
        at = _at(later, _call_folder(t, j), there)
        if (not there and "workdir" not in later.params) or at == here or not at:
            continue
        inside = _under(at, top) or _under(top, at) if top else not _ROOTED.match(at)
        if not inside or at.startswith("~"):
            continue  # another checkout (/tmp/other): no folder of this project
        said_script = "script" in said.lower()  # not "Command "tsc" not found": a program's
        if not (_ran_script(later.output, name) or (said_script and _proven(later, c))):
            continue
        shown = posixpath.relpath(at, here) if here and _under(at, here) else at
        if shown.startswith(".."):
            shown = at
        q = quote_error(said, 6)
        before = f"in {_named(here, top)}" if _named(here, top) else "in the session's folder"
        if there == moved and there:  # a cd alone took it there
            how = f"cd {shown} && {short(c, 50)}"
        elif there == moved:
            how = f"{short(c, 50)} with workdir {shown}"
        else:  # the package manager's own option: the line as it ran
            how = f"cd {moved} && {short(c, 50)}" if moved else short(c, 50)
        text = (
            f"In this project the {name} script is in {shown}/, not {before} ('{q}'): "
            f"run it there ({how})."
        )
        fnd = _finding("script", f, "project", text, (name, shown), q, avoid=[])
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} ran the {name} script ({q}); call {j + 1} ran it in {shown}"
        return ShellFix(i, j, (), fnd, why)
    return None


#: bash reading a script saved with CRLF line endings: the carriage return is read as part
#: of a word (``$'\r': command not found``, a shebang's ``bash\r``, ``set: -\r``).
_CR = re.compile(r"\$'\\r'|\w\\r['’\"]|[\w-]\r['’\"]|: -\r")
#: A command that converts line endings: dos2unix, or one that removes ``\r`` (sed, tr,
#: perl, a script's replace).
_TO_LF = re.compile(r"dos2unix|\\r(?:\\n)?.{0,40}|.{0,40}\\r\$")


def _script_of(c: Command) -> str | None:
    """The script a command runs: the program written as a path (``./x.sh``), or a shell's
    script operand (``bash x.sh``)."""
    word = _program_word(c)
    if "/" in word or word.endswith(".sh"):
        return word
    if programs.has(c.program, Role.SHELL) and c.operands and c.operands[0].endswith(".sh"):
        return c.operands[0]
    return None


def _line_endings(t: Trajectory, i: int) -> ShellFix | None:
    """``crlf``: a shell script failed because bash read its carriage returns (``$'\r':
    command not found``: CRLF line endings, a checkout on a Windows drive), a later call
    converted line endings (dos2unix, ``sed -i 's/\r$//'``, a replace of ``\r\n``), and
    the script ran again without that failure. The run's first such failure teaches it."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool) or not _CR.search(step.output[:2000]):
        return None
    if any(not s.success and is_shell(s.tool) and _CR.search(s.output[:2000]) for s in t.steps[:i]):
        return None
    scripts = [x for x in (_script_of(c) for c in _commands(step) or ()) if x]
    if not scripts:
        return None
    script = scripts[0]
    name = os.path.basename(script)
    converted = None
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not is_shell(later.tool):
            continue
        line = _line(later)
        ran = any(_script_of(c) in (script, name) for c in _commands(later) or ())
        if later.success and not ran and _TO_LF.search(line):
            converted = j
        elif converted is not None and ran and not _CR.search(later.output[:2000]):
            said = _CR_LINE.search(step.output)
            q = quote_error(said.group(0).strip() if said else "$'\\r': command not found", 6)
            folder = os.path.dirname(script)
            where = f"in {folder}/ " if folder else ""
            text = (
                f"In this project the scripts {where}({name}) have CRLF line endings "
                f"('{q}'): convert them to LF (dos2unix, or sed -i 's/\\r$//') before running them."
            )
            fnd = _finding("crlf", name, "project", text, (name, "CRLF"), q, avoid=[])
            fnd = attrs.evolve(fnd, domain=step.domain or "")
            why = f"call {i + 1} {name} read a carriage return; call {j + 1} ran after the fix"
            return ShellFix(i, j, (converted,), fnd, why)
    return None


_CR_LINE = re.compile(r"[^\n]*(?:\$'\\r'|\\r['’\"]|\r['’\"]|: -\r)[^\n]*")


#: A Git Bash (MSYS) path: ``/e/CC-test/x.jsonl`` is drive E:'s ``CC-test/x.jsonl``.
_MSYS_PATH = re.compile(r"(?<![\w.:/~-])/([a-zA-Z])/([\w.-][^\s'\"\\<>|;&)]*)")
_NOT_OPENED = re.compile(r"FileNotFoundError|No such file|cannot find|WinError [23]\b", re.I)


def _drive_paths(t: Trajectory, i: int) -> ShellFix | None:
    """``drive``: a Windows program run from Git Bash could not open a path written the
    MSYS way (``/e/CC-test/x``; Git Bash converts a program's arguments, never a path
    inside code or a file), the error naming it, and a later successful call of the same
    program passed it as ``E:/CC-test/x``."""
    step = t.steps[i]
    if not is_shell(step.tool) or not _NOT_OPENED.search(step.output[-3000:]):
        return None
    line = _line(step)
    cmds = _job_commands(t, step)
    if not cmds:
        return None
    named = [m for m in _MSYS_PATH.finditer(step.output[-3000:]) if m.group(0) in line]
    if not named:
        return None
    m = named[0]
    drive, rest = m.group(1), m.group(2)
    forms = (f"{drive.upper()}:/{rest}", f"{drive.lower()}:/{rest}")
    program = cmds[-1].program
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)) or _NOT_OPENED.search(later.output[-3000:]):
            continue
        good = _line(later)
        got = _job_commands(t, later)
        if not any(x in good for x in forms) or m.group(0) in good:
            continue
        if not got or _bare(got[-1].program) != _bare(program):
            continue
        q = quote_error(_tail(m.group(0), 2), 6)  # the path as the error names it, no more
        text = (
            f"Windows programs here ({program}) do not read Git Bash's /{drive.lower()}/... "
            f"paths (not found: '{q}'): write them as {drive.upper()}:/... with forward slashes."
        )
        fnd = _finding("drive", program, "machine", text, (program, f"{drive.upper()}:/"), q)
        fnd = attrs.evolve(fnd, domain=step.domain or "", detail={**fnd.detail, "avoid": []})
        why = f"call {i + 1} {program} could not open {m.group(0)}; call {j + 1} wrote {forms[0]}"
        return ShellFix(i, j, (), fnd, why)
    return None


#: Python printing a character its console's encoding lacks (a Windows console's GBK).
_CANT_ENCODE = re.compile(r"UnicodeEncodeError: '([\w-]+)' codec can't encode")
#: What makes Python's console UTF-8: in its code, its environment, or its options.
_UTF8 = (
    ("sys.stdout.reconfigure(encoding='utf-8')", re.compile(r"reconfigure\(\s*encoding")),
    ("PYTHONIOENCODING=utf-8", re.compile(r"\bPYTHONIOENCODING=")),
    ("PYTHONUTF8=1", re.compile(r"\bPYTHONUTF8\s*=\s*['\"]?1")),
    ("python -X utf8", re.compile(r"-X\s*utf8")),
)
#: Python reading a file in its locale's encoding, not UTF-8.
_CANT_DECODE = re.compile(r"UnicodeDecodeError: '([\w-]+)' codec can't decode")
#: What makes Python read files as UTF-8 (its UTF-8 mode), as _UTF8 names them.
_UTF8_MODE = frozenset({"PYTHONUTF8=1", "python -X utf8"})


def _console_encoding(t: Trajectory, i: int) -> ShellFix | None:
    """``encoding``: Python could not print a character its console's encoding lacks
    (``UnicodeEncodeError: 'gbk' codec can't encode``), and a later successful call of the
    same interpreter made its output UTF-8 (``sys.stdout.reconfigure(encoding='utf-8')``,
    ``PYTHONIOENCODING=utf-8``, ``-X utf8``), which the failed call did not. Or Python
    could not read a UTF-8 file in its locale's encoding (``UnicodeDecodeError: 'gbk'
    codec can't decode``), and the same script then ran in UTF-8 mode (``PYTHONUTF8=1``,
    ``$env:PYTHONUTF8='1'``, ``-X utf8``) and worked."""
    step = t.steps[i]
    if not is_shell(step.tool):
        return None
    m = _CANT_ENCODE.search(step.output[-3000:])
    decode = m is None and (m := _CANT_DECODE.search(step.output[-3000:])) is not None
    cmds = [c for c in _commands(step) or () if programs.is_python(_bare(c.program))]
    if m is None or not cmds or m.group(1).lower().replace("-", "") in ("utf8", "utf16"):
        return None
    line = _line(step)
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)) or _CANT_ENCODE.search(later.output):
            continue
        pythons = [c for c in _commands(later) or () if programs.is_python(_bare(c.program))]
        if not pythons:
            continue
        good = _line(later)
        how = next((h for h, r in _UTF8 if r.search(good) and not r.search(line)), None)
        if how is None:
            continue
        codec, program = m.group(1), cmds[-1].program
        if decode:
            # reading a file: only UTF-8 mode changes that, and for the same script run
            if how not in _UTF8_MODE or not any(c.args == cmds[-1].args for c in pythons):
                continue
            q = quote_error(f"'{codec}' codec can't decode byte", 6)
            text = (
                f"{program} here reads text files as {codec}, not UTF-8 (UnicodeDecodeError: "
                f"'{q}'): run it in UTF-8 mode ({how})."
            )
            fnd = _finding("encoding", program, "machine", text, (program, "utf-8"), q, avoid=[])
            fnd = attrs.evolve(fnd, domain=step.domain or "")
            why = f"call {i + 1} {program} could not read UTF-8 as {codec}; call {j + 1}: {how}"
            return ShellFix(i, j, (), fnd, why)
        q = quote_error(f"'{codec}' codec can't encode character", 6)
        text = (
            f"{program}'s console encoding here is {codec}: printing a character outside it "
            f"fails with UnicodeEncodeError ('{q}'); make its output utf-8 first ({how})."
        )
        fnd = _finding("encoding", program, "machine", text, (program, "utf-8"), q, avoid=[])
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} {program} could not print in {codec}; call {j + 1} used {how}"
        return ShellFix(i, j, (), fnd, why)
    return None


def _read_elsewhere(t: Trajectory, i: int) -> ShellFix | None:
    """``location`` read by another reader: a program that only reads (``cat``, ``head``,
    ``sed -n``: :func:`reads_only`) failed on a path that is not there, its diagnostic naming
    it, and a later successful call read a path with the same file name elsewhere with
    another reader (``cat notes.txt``, then ``head -50 docs/notes.txt``): which reader read
    it is incidental, the path is the change."""
    step = t.steps[i]
    failed = _failed_command(step) if is_shell(step.tool) and not step.success else None
    if failed is None or not reads_only(failed[0]) or not _MISSING_PATH.search(failed[1]):
        return None
    f, diag = failed
    bad = next((x for x in _targets(f) if x in diag or x.rstrip("/") in diag), None)
    name = os.path.basename(bad.rstrip("/")) if bad else ""
    if bad is None or not name:
        return None
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        cmds = (_commands(later) if is_shell(later.tool) else None) or ()
        took = [
            c
            for c in cmds
            if reads_only(c)
            and c.program != f.program
            and not any(programs.has(c.program, r) for r in (Role.VCS, Role.ANSWERS))
            for x in _targets(c)
            if os.path.basename(x.rstrip("/")) == name and x != bad and not _spelt_otherwise(bad, x)
        ]
        if not later.success or len(took) != 1 or not _proven(later, took[0]):
            continue
        c = took[0]
        good = next(x for x in _targets(c) if os.path.basename(x.rstrip("/")) == name)
        q = quote_error(re.sub(r"^(fatal|error|Error|ERROR): ", "", diag), 8)
        text = f"In this project {name} is at {good}; {short(f, 40)} fails with '{q}'."
        fnd = _finding(
            "location", f, "project", text, (f.program, good), diag, bad=bad, good=good, avoid=[bad]
        )
        why = f"call {i + 1} {short(f)} found no {bad}; call {j + 1} {short(c)} read {good}"
        return ShellFix(i, j, (), attrs.evolve(fnd, domain=step.domain or ""), why)
    return None


# ------------------------------------------------------------- a path read the right way


#: What a reader's missing path reads as, from a client tool (Read's "File does not
#: exist") or a program ("No such file or directory", "can't read").
_NOT_THERE = re.compile(r"No such file or directory|does not exist|ENOENT|can't read", re.I)
#: Folders of installed, vendored or built copies: a path through one is no fact of the
#: project's own layout.
_COPIED = frozenset(
    "node_modules dist build .venv venv vendor site-packages .git __pycache__ target".split()
)


def _looks(c: Command) -> bool:
    """Whether ``c`` only reads or lists what its path operands name (cat, sed -n, ls)."""
    return reads_only(c) or programs.has(c.program, Role.LISTS)


def _path_words(c: Command) -> list[str]:
    """The paths ``c`` names: its program's word when it is a path (a script run), then
    its operands and redirect targets."""
    word = _program_word(c)
    return [*([word] if "/" in word else []), *_targets(c)]


def _script(c: Command) -> str | None:
    """The script ``c`` runs by its path: its program's word (``./x.sh``), or an
    interpreter's or a shell's first operand (``bash x.sh``, ``python3 tools/gen.py``)."""
    word = _program_word(c)
    if "/" in word:
        return word
    runs = programs.is_interpreter(_bare(c.program)) or programs.has(c.program, Role.SHELL)
    return c.operands[0] if runs and c.operands and not _inline(c) else None


def _missing_read(step: Step) -> tuple[str, str, str, str] | None:
    """(the path, the call as a lesson writes it, the diagnostic, the program or tool) of a
    failed call that looked for a path that is not there: a client tool that reads a file
    (Read: "File does not exist"), or a shell command that reads or lists (:func:`_looks`),
    or runs a script by its path, its diagnostic naming the path as missing. A probe
    answered "not there" (``ls X``, ``test -f X``) is no failure in the learning view and
    never reaches here."""
    if step.success:
        return None
    found = spec_for(step.tool)
    if found is not None and found[1].kind is ToolKind.READ and not is_shell(step.tool):
        path = step.params.get(found[1].path or "file_path")
        o = outcome(step)
        text = o.diagnostic or step.output.strip().split("\n", 1)[0]
        if isinstance(path, str) and path and o.teachable and _NOT_THERE.search(text):
            said = re.sub(r"</?[\w-]+>", "", text).strip()
            return path, f"{step.tool} {path}", said, step.tool
        return None
    failed = _failed_command(step) if is_shell(step.tool) else None
    if failed is None or not _NOT_THERE.search(failed[1]):
        return None
    f, diag = failed
    for p in _path_words(f):
        if (p in diag or p.rstrip("/") in diag) and (_looks(f) or p == _script(f)):
            return p, short(f, 40), diag, f.program
    return None


def _read_paths(t: Trajectory, step: Step) -> list[str]:
    """The paths a successful call read, listed or ran as a script: a client tool's file
    (Read), or a path of a shell command that looks (:func:`_looks`) or runs a script by
    its path, the call's success its own (:func:`_proven`)."""
    if not step.success:
        return []
    found = spec_for(step.tool)
    if found is not None and found[1].kind is ToolKind.READ and not is_shell(step.tool):
        path = step.params.get(found[1].path or "file_path")
        return [path] if isinstance(path, str) and path else []
    out: list[str] = []
    for c in _job_commands(t, step) if is_shell(step.tool) else ():
        if _proven(step, c):
            words = _path_words(c)
            out += [p for p in words if _looks(c) or p == _script(c)]
    return out


def _from_top(path: str, step: Step, cwd: str | None) -> str | None:
    """``path`` as written from the session's folder (``cwd``): relative, normalised; a
    rooted path outside it as it is; None when the call's folder is unknown."""
    p = path.strip().replace("\\", "/")
    if not p or p.startswith(("~", "$")):
        return None
    top = posixpath.normpath(cwd.replace("\\", "/")) if cwd else None
    if not _ROOTED.match(p):
        folder = _folder_of(step, cwd)
        if top is None or folder is None:
            return posixpath.normpath(p) if top is None and "workdir" not in step.params else None
        p = posixpath.join(folder, p)
    p = posixpath.normpath(p)
    if top and (p == top or p.startswith(top.rstrip("/") + "/")):
        return posixpath.relpath(p, top)
    return p


def _moves_shell(t: Trajectory, step: Step) -> bool:
    """Whether a call moved the shell to another folder (``cd``, ``pushd``:
    :attr:`Role.CHDIR`, never a ``cd`` to the session's own folder)."""
    here = str(t.meta.get("cwd") or "")
    return is_shell(step.tool) and any(
        programs.has(c.program, Role.CHDIR) and not moves_nowhere(c, here)
        for c in _commands(step) or ()
    )


def _names_acted_on(step: Step) -> set[str]:
    """The names (in lower case) of the files and folders a call made, moved, renamed or
    removed (:func:`_acted_on`: ``mkdir``, ``mv``, ``git mv``, Write, a patch), each folder
    of a path it made, and each folder a move names (``git mv a/x A/x``) or a clone makes."""
    gone, made = _acted_on(step)
    out = {g.lower() for g in gone}
    out |= {x.lower() for m in made for x in m.replace("\\", "/").split("/")}
    for c in (_commands(step) or ()) if is_shell(step.tool) else ():
        ops = c.operands if _moves(c) else c.operands[1:] if c.subcommand == "clone" else ()
        out |= {x.lower() for o in ops for x in o.replace("\\", "/").split("/")}
    return out


def _folders_by_name(t: Trajectory) -> dict[str, set[str]]:
    """{a folder's name: the folders that the run's own listings (:func:`_lists_hidden`:
    ``find``, ``ls -R``, Glob) show a folder of that name in} (``""`` for the session's
    top), copies under installed or vendored code left out."""
    out: dict[str, set[str]] = {}
    listed = {
        p for s in t.steps if _lists_hidden(t, s) for ps in _listed(s.output).values() for p in ps
    }
    for path in listed:
        parts = path.split("/")
        if _vendored(path + "/") or any(x in _COPIED for x in parts):
            continue
        for k, x in enumerate(parts[:-1]):
            out.setdefault(x, set()).add("/".join(parts[:k]))
        if len(parts) > 1:  # the path ends in a folder of that name
            out.setdefault(parts[-1], set()).add("/".join(parts[:-1]))
    return out


class _PathIndex:
    """What the path shapes (:func:`_case_differs`, :func:`_under_folder`) ask of a run's
    other calls, worked out once for one call of :func:`find_shell_fixes` (each part on
    first use), so that their cost grows with the run's length, not with its length times
    the failed reads in it: each call's read paths (:func:`_read_paths`) as written and
    from the session's folder (:func:`_from_top`), the first call that read each path, the
    calls that moved the shell (:func:`_moves_shell`), the first call that acted on each
    name (:func:`_names_acted_on`) and the folders the listings show each name in
    (:func:`_folders_by_name`)."""

    def __init__(self, t: Trajectory) -> None:
        self.t = t
        self._reads: dict[tuple[int, str | None], list[tuple[str, str | None]]] = {}
        self._first_read: dict[str | None, dict[str, int]] = {}
        self._moves: list[int] | None = None
        self._acted: dict[str, int] | None = None
        self._folders: dict[str, set[str]] | None = None

    def reads(self, j: int, cwd: str | None) -> list[tuple[str, str | None]]:
        """(each path call ``j`` read, that path from the session's folder ``cwd``)."""
        if (j, cwd) not in self._reads:
            s = self.t.steps[j]
            self._reads[j, cwd] = [(p, _from_top(p, s, cwd)) for p in _read_paths(self.t, s)]
        return self._reads[j, cwd]

    def read_before(self, path: str, i: int, cwd: str | None) -> bool:
        """Whether a call before call ``i`` read ``path`` (from the session's folder ``cwd``)."""
        if cwd not in self._first_read:
            first: dict[str, int] = {}
            for j in range(len(self.t.steps)):
                for _, g in self.reads(j, cwd):
                    if g is not None:
                        first.setdefault(g, j)
            self._first_read[cwd] = first
        return self._first_read[cwd].get(path, i) < i

    def moved(self, start: int, end: int) -> bool:
        """Whether a call from ``start`` to ``end`` (both counted) moved the shell to another
        folder (:func:`_moves_shell`)."""
        if self._moves is None:
            self._moves = [k for k, s in enumerate(self.t.steps) if _moves_shell(self.t, s)]
        at = bisect.bisect_left(self._moves, start)
        return at < len(self._moves) and self._moves[at] <= end

    def made_on_the_way(self, upto: int, names: set[str]) -> bool:
        """Whether a call up to ``upto`` made, moved, renamed or removed a file or folder one
        of whose names is in ``names`` (compared without letter case): the run's own doing
        (:func:`_names_acted_on`)."""
        if self._acted is None:
            self._acted = {}
            for k, s in enumerate(self.t.steps):
                for n in _names_acted_on(s):
                    self._acted.setdefault(n, k)
        return any(self._acted.get(n.lower(), upto + 1) <= upto for n in names)

    def folders_holding(self, first: str) -> set[str]:
        """The folders that the run's own listings show a folder named ``first`` in
        (:func:`_folders_by_name`)."""
        if self._folders is None:
            self._folders = _folders_by_name(self.t)
        return self._folders.get(first, set())


def _fold_finding(
    change: str, program: str, head: str, good: str, what: str, diag: str, **more: object
) -> Finding:
    """A path fact whose lesson is ``head`` and the path that worked; several files of one
    project with one ``fold`` (the same wrong spelling, the same missing folder) merge in
    Stage 3 into one lesson naming them all (:mod:`.merge`)."""
    q = quote_error(re.sub(r"^(fatal|error|Error|ERROR): ", "", diag), 8)
    text = f"{head} {good}; {what} fails with '{q}'."
    bad = str(more.get("bad") or "")
    return _finding(
        change,
        program,
        "project",
        text,
        (program, good),
        diag,
        good=good,
        head=head,
        avoid=[bad] if bad else [],
        **more,
    )


def _case_differs(t: Trajectory, i: int, ix: _PathIndex | None = None) -> ShellFix | None:
    """``case``: a call failed on a path that is not there (:func:`_missing_read`), and
    within :data:`WINDOW` calls the run read the same path written with other letter case
    (``Use cases/UC-06.md``, then ``Use Cases/UC-06.md``), every other letter alike, from
    the same folder: the project spells that name so. Not when the run made, moved or
    renamed a file or folder of either spelling on the way
    (:meth:`_PathIndex.made_on_the_way`), nor across a change of folder; a read of another
    file in between is passed over. ``ix``: the run's index, made here when not given."""
    ix = ix or _PathIndex(t)
    step = t.steps[i]
    missing = _missing_read(step)
    cwd = t.meta.get("cwd") or t.meta.get("project")
    cwd = cwd if isinstance(cwd, str) else None
    if missing is None:
        return None
    bad, what, diag, name = missing
    b = _from_top(bad, step, cwd)
    if b is None:
        return None
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        for good, g in ix.reads(j, cwd):
            if g is None or g == b or g.lower() != b.lower():
                continue
            if _ROOTED.match(g) or g.startswith(("..", "~")):
                return None  # outside the session's folder: no fact of the project
            parts = list(zip(b.split("/"), g.split("/")))
            pairs = [(x, y) for x, y in parts if x != y]
            if ix.moved(i, j) and not _ROOTED.match(b):
                return None
            if any(y in _COPIED for y in g.split("/")):
                return None
            if ix.made_on_the_way(j, {n for pair in pairs for n in pair}):
                return None
            wrong, right = pairs[0] if len(pairs) == 1 else (b, g)
            last = len(pairs) == 1 and parts[-1] == pairs[0]
            noun = "path" if len(pairs) > 1 else ("file" if last else "folder")
            head = f"In this project the {noun} is '{right}', not '{wrong}' (letter case matters):"
            head += " read"
            fnd = _fold_finding(
                "case", name, head, good, what, diag, bad=bad, fold=f"{wrong}>{right}"
            )
            why = f"call {i + 1} found no {bad}; call {j + 1} read {good}"
            return ShellFix(i, j, (), attrs.evolve(fnd, domain=step.domain or ""), why)
    return None


def _under_folder(t: Trajectory, i: int, ix: _PathIndex | None = None) -> ShellFix | None:
    """``prefix``: a call failed on a path of the session's folder that is not there
    (:func:`_missing_read`: ``src/app/page.tsx``, a script ``.specify/scripts/bash/x.sh``),
    a path with a folder in it, and within :data:`WINDOW` calls the run read (or ran) that
    very path under a leading folder (``rallycoach/src/app/page.tsx``): the project is
    kept in that subfolder. The lesson names the folder, not the file, so a name found at
    several paths (``page.tsx``) does not weigh against it as it does against "X is at P".
    Not when the run made that folder (``mkdir``, Write, ``git clone``, a copy into it) or
    moved the shell to another folder on the way, nor when it had already used the path
    under the folder (a slip), nor through installed, vendored or built copies
    (``node_modules``, ``dist``, ``.venv``, ``build``), nor when the run's own listing
    shows the path's first folder under another folder as well
    (:meth:`_PathIndex.folders_holding`). ``ix``: the run's index, made here when not given."""
    ix = ix or _PathIndex(t)
    step = t.steps[i]
    missing = _missing_read(step)
    here = t.meta.get("cwd") or t.meta.get("project")
    here = here if isinstance(here, str) else None
    # the top is the session's folder (in a run whose folder is unknown, the failed call's
    # own). A call that ran outside it (Codex's workdir set to the parent) failed on a path
    # of another folder: the lesson, served in the session's folder, would say its folder
    # lacks what it has (wave 9's blind set 10)
    cwd, folder = here, _folder_of(step, here)
    root = posixpath.normpath(here.replace("\\", "/")) if here else None
    if folder and root and not (folder == root or folder.startswith(root.rstrip("/") + "/")):
        return None
    if folder and not root:
        cwd = folder
    if missing is None:
        return None
    bad, what, diag, name = missing
    b = _from_top(bad, step, cwd)
    if b is None or _ROOTED.match(b) or b.startswith("..") or "/" not in b.strip("/"):
        return None
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        for good, g in ix.reads(j, cwd):
            if g is None or not g.endswith("/" + b):
                continue
            top = g[: -len(b) - 1]
            relative = not (_ROOTED.match(bad.strip()) and _ROOTED.match(good.strip()))
            if (
                _ROOTED.match(g)
                or top.startswith("..")
                or any(x in _COPIED for x in g.split("/"))
                or (relative and ix.moved(0, j))
                or ix.made_on_the_way(j, set(top.split("/")))
                or ix.read_before(g, i, cwd)
            ):
                return None
            # the folder the failed path starts with is what lies under ``top``, not every file;
            # where the run's own listing shows that folder under another folder too (each
            # package's src/ of a monorepo), the one found is one copy, no fact of the project
            first = b.split("/", 1)[0]
            if ix.folders_holding(first) - {top}:
                return None
            head = f"In this project {first}/ is under {top}/, not at the session's top folder:"
            head += " use"
            fold = f"{top}/{first}"
            # the path from the session's folder: the operand that worked may be absolute,
            # or relative to a folder the call moved to (``cd Inner && .specify/...``)
            fnd = _fold_finding("prefix", name, head, g, what, diag, bad=bad, fold=fold)
            why = f"call {i + 1} found no {bad}; call {j + 1} read {good}"
            return ShellFix(i, j, (), attrs.evolve(fnd, domain=step.domain or ""), why)
    return None


#: Options that only ask a program about itself: a call with one ran no tests.
_SELF_QUESTION = frozenset({"--version", "-V", "--help", "-h", "help", "version"})
#: A test runner's count of the tests it ran (unittest's "Ran 4 tests", pytest's "12
#: passed", "collected 3 items"), and what says that they did not all pass or load.
_TESTS_RAN = re.compile(r"\b(?:Ran|collected) [1-9]\d* (?:tests?|items?)\b|\b[1-9]\d* passed\b")
_TESTS_BROKE = re.compile(
    r"\bFAILED\b|\b[1-9]\d* (?:failed|errors?)\b|\berrors?=[1-9]|ImportError|ModuleNotFoundError|"
    r"SyntaxError|No module named"
)


def _runner_missing(f: Command, diag: str, body: str) -> str | None:
    """How test runner ``f`` was missing, as its diagnostic says: not found (``pytest:
    command not found``), or its module absent from the interpreter that was to run it
    (``python3 -m pytest``: "No module named pytest"); None when it ran."""
    if not programs.has(f.program, Role.TEST):
        return None
    if _missing_program(f, diag, body) == f.program:
        return "not found"
    m = _NO_MODULE.search(f"{diag}\n{body[:600]}")
    python = any(programs.is_python(_bare(w.split()[0])) for w in f.wrappers)
    return "no module" if python and m and m.group(1) == f.program else None


def _runner_replaced(t: Trajectory, i: int) -> ShellFix | None:
    """``runner``: a test runner was missing (:func:`_runner_missing`) and, with nothing
    installed on the way (``pip install pytest``, ``uv add``: :func:`_installs`, in a call
    between or in the retry's own line), a later call ran another test runner
    (:attr:`Role.TEST` of the program table; a module run with ``-m`` is the module:
    ``python3 -m unittest``) and its output shows tests run and none failing or failing to
    load ("Ran 4 tests", "12 passed"; not "FAILED", an ImportError: the learning view
    counts failing tests as done), not only a ``--version`` or ``--help``. A script of the
    project (``python3 tests/run.py``) may run other tests than a runner would, and is no
    runner; the same runner through a wrapper (``uv run pytest``) is the ``wrapper`` kind's."""
    step = t.steps[i]
    failed = _failed_command(step) if is_shell(step.tool) and not step.success else None
    how = _runner_missing(failed[0], failed[1], step.output) if failed else None
    if failed is None or how is None:
        return None
    f, diag = failed
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        cmds = (_commands(later) if is_shell(later.tool) else None) or ()
        if any(_installs(c) for c in cmds) or any(c.program == f.program for c in cmds):
            return None  # installed, or the same runner again: not another runner's doing
        took = [c for c in cmds if programs.has(c.program, Role.TEST)]
        # the learning view counts failing tests as done: the output says whether they ran
        ran = _TESTS_RAN.search(later.output) and not _TESTS_BROKE.search(later.output)
        if not took or outcome(later).failed or not ran:
            continue
        c = took[0]
        if len(took) > 1 or set(c.args) & _SELF_QUESTION or not _proven(later, c):
            return None
        runner = f"{_wrappers(c)[-1]} {c.program}" if _wrappers(c) else c.program
        run = " ".join((*c.assignments, *c.words))
        run = run if len(run) <= 60 else run[:57].rstrip() + "..."
        q = quote_error(diag, 8)
        said = "is not installed" if how == "no module" else "is not on PATH"
        text = f"In this project {f.program} {said} ('{q}'): {runner} ran the tests ({run})."
        fnd = _finding(
            "runner", f, "project", text, (runner, f.program), diag, missing=how, avoid=[]
        )
        why = f"call {i + 1} {short(f)} had no {f.program}; call {j + 1} {short(c)} ran the tests"
        return ShellFix(i, j, (), attrs.evolve(fnd, domain=step.domain or ""), why)
    return None


#: Windows PowerShell 5.1 refusing ``&&`` / ``||``, which only PowerShell 7 reads.
_PS_SEPARATOR = re.compile(r"The token '(&&|\|\|)' is not a valid statement separator")
#: A PowerShell wrapper around a line: ``powershell.exe -NoProfile -Command "..."``.
_PS_WRAPPER = re.compile(
    r"^\s*(?:\S*[\\/])?(?:powershell|pwsh)(?:\.exe)?\s+(?:-(?!c\b|command\b)\w+\s+)*"
    r"-(?:c|command)\s+(.*)$",
    re.IGNORECASE | re.DOTALL,
)


def _ps_script(step: Step) -> str:
    """A PowerShell call's script: its line, or what a ``powershell -Command`` runs
    (:func:`~agentmem.agents.shell.wrapped_script`, quotes off, a Codex argv's too)."""
    line = _line(step).strip()
    m = _PS_WRAPPER.match(line)
    if m:
        argv = any(isinstance(v, list) for v in step.params.values())
        got = wrapped_script(line) if argv else None  # an argv, joined with its quotes
        if got is not None:
            return got
        line = m.group(1).strip()
        if len(line) >= 2 and line[0] == line[-1] and line[0] in "\"'":
            line = line[1:-1]
    return line


def _joined_parts(line: str) -> list[str]:
    return [" ".join(x.split()).lower() for x in re.split(r"&&|\|\|", line) if x.strip()]


def _separator_retry(t: Trajectory, i: int, parts: list[str]) -> int | None:
    """The later call that ran the same commands joined otherwise and worked: one line
    holding every part without ``&&`` / ``||`` (``a; b``, ``a; if ($?) { b }``), or the
    parts as consecutive calls that each worked; the last such call, or None."""
    end = min(len(t.steps), i + 1 + WINDOW)
    for j in range(i + 1, end):
        later = t.steps[j]
        if not is_shell(later.tool):
            continue
        line = _ps_script(later)
        flat = " ".join(line.split()).lower()
        if "&&" in line or "||" in line:
            return None  # the same separator again
        if later.success and all(p in flat for p in parts):
            return j
        calls = [t.steps[k] for k in range(j, min(end, j + len(parts)))]
        if len(calls) == len(parts) and all(
            c.success and is_shell(c.tool) and " ".join(_ps_script(c).split()).lower() == p
            for c, p in zip(calls, parts)
        ):
            return j + len(parts) - 1
    return None


def _ps_separator(t: Trajectory, i: int) -> ShellFix | None:
    """``separator``: Windows PowerShell 5.1 (Codex's shell on Windows) refused ``&&`` or
    ``||`` ("The token '&&' is not a valid statement separator in this version"), and a
    later call ran the same commands joined otherwise (``;``, ``if ($?) { ... }``, or as
    separate calls) and worked: the machine's shell joins commands so."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool):
        return None
    m = _PS_SEPARATOR.search(step.output[:2000])
    parts = _joined_parts(_ps_script(step)) if m else []
    if m is None or len(parts) < 2:
        return None
    j = _separator_retry(t, i, parts)
    instead = _separator_job(t, i) if j is None else None
    if j is None and instead is None:
        return None
    q = quote_error(f"The token '{m.group(1)}' is not a valid statement separator", 10)
    # Claude Code's PowerShell tool sits beside its Bash (Git Bash, where && joins): the
    # lesson is of that tool, not of the machine's shell (review 26)
    who = f"{step.tool} tool" if "powershell" in step.tool.lower() else "shell"
    if j is not None:
        text = (
            f"Here the {who} is Windows PowerShell 5.1: && and || are not separators "
            f"('{q}'); join commands with ; or if ($?) {{ ... }}."
        )
        why = f"call {i + 1} joined commands with {m.group(1)}; call {j + 1} ran them joined so"
    else:
        assert instead is not None
        j, did, part = instead
        # one text for every such retry, so that Stage 3 merges a machine's findings: what
        # did the job is the journal's (its why), not the lesson's
        text = (
            f"Here the {who} is Windows PowerShell 5.1, with no && or || ('{q}'): "
            "run each command in a call of its own."
        )
        why = f"call {i + 1} joined with {m.group(1)}; call {j + 1} did {part}'s job ({did})"
    fnd = _finding("separator", "powershell", "machine", text, ("powershell", "&&", ";"), q)
    fnd = attrs.evolve(fnd, domain=step.domain or "")
    return ShellFix(i, j, (), fnd, why)


def _label(c: Command) -> str:
    """A command as a lesson names its job: its program with its subcommand, or with the
    option that sets its job (``rg --files``, ``git ls-files``, ``ls``)."""
    p = programs.get(c.program)
    how = c.subcommand or next((f for f in c.flags if p and f in p.lists_with), "")
    return f"{_bare(c.program)} {how}".strip()


def _separator_job(t: Trajectory, i: int) -> tuple[int, str, str] | None:
    """The later call, within :data:`WINDOW` and before any call joined commands with
    ``&&`` or ``||`` again, that did the job of one of failed call ``i``'s joined commands
    (:func:`_job_of`: ``Get-ChildItem -Force`` for ``ls -la`` in ``rg --files || ls
    -la``) on the same places, alone, and worked: (its index, its program or cmdlet, the
    joined command's program)."""
    step = t.steps[i]
    cmds: list[Command] = []
    for part in re.split(r"&&|\|\|", _ps_script(step)):
        found = parse(part.strip().strip("()"))
        if found.parsed and found.commands:
            cmds.append(found.commands[0])
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not is_shell(later.tool):
            continue
        line = " ".join(_ps_script(later).split())
        if "&&" in line or "||" in line:
            return None  # the same separator again
        got = _job_of(later) if later.success else None
        if got is None or ";" in line.split("|")[0]:
            continue  # a line of several statements is the other retry's (joined with ;)
        # a cmdlet standing for the command's own program first (Get-ChildItem for ls)
        for c in sorted(cmds, key=lambda c: c.program not in got[2]):
            jobs = programs.command_jobs(c.program, c.subcommand, c.flags) - {c.program}
            places = {_ps_file(o) for o in _places_of(c)}
            same = later.params.get("workdir") == step.params.get("workdir")
            if jobs & got[2] and places == {_ps_file(o) for o in got[3]} and same:
                return j, got[1], _label(c)
    return None


def _narrow(t: Trajectory, i: int) -> ShellFix | None:
    """``narrow``: a Glob over a whole folder (a home folder, the project) ran out of time,
    and a later call searched a folder inside it and listed a path the pattern names
    (:func:`~agentmem.agents.outcomes.narrowed_searches`, which keeps such a call in the
    learning view): here that folder is too large for one Glob."""
    step = t.steps[i]
    if step.tool != "Glob" or step.success:
        return None
    j = narrowed_searches(t.steps, str(t.meta.get("cwd") or "")).get(i)
    if j is None:
        return None
    path = step.params.get("path")
    cwd = str(t.meta.get("cwd") or "")
    root = path.strip() if isinstance(path, str) and path.strip() else cwd  # as written
    at = norm_folder(root)
    home = is_home(at)
    later = t.steps[j]
    if later.tool == "Glob":
        how = f"Glob with path {later.params.get('path')}"
    else:
        cmds = narrowing_command(later, at, norm_folder(cwd) if cwd else "")
        line = " && ".join(" ".join(c.words) for c in cmds)
        words = re.sub(r"[\s'\"`]+", " ", line).strip()
        how = words if len(words) <= 50 else words[:47].rstrip() + "..."
    q = quote_error(outcome(step).diagnostic.split(". ")[0], 8)
    what = f"the whole home folder ({root})" if home else f"the whole of {root}"
    text = (
        f"A Glob over {what} times out ('{q}'): search one of its folders instead ({how} found it)."
    )
    scope = "machine" if home else "project"
    fnd = _finding("narrow", "Glob", scope, text, ("Glob", root), q, avoid=[])
    fnd = attrs.evolve(fnd, domain=step.domain or "")
    why = f"call {i + 1} Glob {step.params.get('pattern')} timed out; call {j + 1} searched inside"
    return ShellFix(i, j, (), fnd, why)


#: PowerShell's report of a command it could not find, in any language: its error record
#: (``+ CategoryInfo : ObjectNotFound: (sed:String) [], CommandNotFoundException``) names
#: the word; the English message ("The term 'sed' is not recognized as the name of a
#: cmdlet") when the record is cut off.
_PS_NOT_FOUND = re.compile(
    r"ObjectNotFound: \(([^\s:()]+):String\) \[\], CommandNotFoundException"
    r"|The term '([^'\s]+)' is not recognized as the name of a cmdlet"
)


def _ps_file(word: str) -> str:
    """A file operand as a PowerShell call may write it: slashes one way, no ``./``."""
    return word.replace("\\", "/").removeprefix("./").lower()


def _ps_missing(t: Trajectory, i: int) -> ShellFix | None:
    """``powershell``: a shell call ran a POSIX program that PowerShell (Codex's shell on
    Windows, even for a ``bash -lc`` line) does not have (``sed -n '1,200p' cli.py``: its
    CommandNotFoundException names the program), and a later call did the job on the same
    file with a cmdlet (``Get-Content -Path cli.py -First 250``) and worked: this machine's
    shell is PowerShell. The program must be the line's first, so a pattern whose quotes
    PowerShell lost (``rg "a|b"``: "b" not found) teaches nothing."""
    step = t.steps[i]
    known = spec_for(step.tool)
    if step.success or not is_shell(step.tool) or known is None:
        return None
    if known[0].client == "claude-code":
        return None  # its Bash tool is Git Bash, its PowerShell tool a tool of its own
    m = _PS_NOT_FOUND.search(step.output[:3000])
    cmds = _commands(step) or ()
    if m is None or not cmds:
        return None
    name = m.group(1) or m.group(2)
    f = cmds[0]
    if _bare(f.program) != name or is_cmdlet(name):  # a cmdlet is PowerShell's own
        return None
    files = {_ps_file(o) for o in f.operands if re.search(r"[\\/.]\w", o) and not o.startswith("-")}
    if not files:
        return None  # nothing to do the same job on
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)):
            continue
        call = powershell_call(_ps_script(later))
        if call is None or not files & {_ps_file(v) for v in call.values[1:]}:
            continue
        if not programs.same_job(call.cmdlet, [name]):
            continue  # Test-Path, Remove-Item on the file: not the job name does
        q = quote_error(f"The term '{name}' is not recognized", 8)
        how = " ".join(call.written)
        how = how if len(how) <= 60 else how[:57] + "..."
        text = (
            f"Commands here run in PowerShell, which has no {name} ('{q}'): "
            f"{call.cmdlet} did the job instead ({how})."
        )
        fnd = _finding("powershell", name, "machine", text, (name, call.cmdlet), q, avoid=[name])
        client = {"client": known[0].client}
        fnd = attrs.evolve(fnd, domain=step.domain or "", detail={**fnd.detail, **client})
        why = f"call {i + 1} ran {name}, which PowerShell has not; call {j + 1} ran {call.cmdlet}"
        return ShellFix(i, j, (), fnd, why)
    return None


#: The reason a program could not start, for the lesson's quote (English only; a record in
#: another language is quoted by its program alone).
_PS_WHY_NOT = re.compile(r"Program '[^'\s]+' failed to run:[^\n]*?([A-Z][a-z]+ is denied)")


def _job_of(step: Step) -> tuple[str, str, frozenset[str], tuple[str, ...]] | None:
    """A successful call's first command as (its program or cmdlet, that with its
    subcommand, its jobs, its places): a cmdlet read by :func:`powershell_call`, else the
    shell reader's (:func:`_places_of`)."""
    line = _ps_script(step)
    call = powershell_call(line)
    if call is not None:
        ops = tuple(v for v in call.values[1:] if not v.startswith("-"))
        return call.cmdlet, call.cmdlet, programs.jobs(call.cmdlet), ops
    found = parse(line)
    if not found.parsed or not found.commands:
        return None
    c = found.commands[0]
    jobs = programs.command_jobs(c.program, c.subcommand, c.flags)
    return _bare(c.program), _label(c), jobs, tuple(_places_of(c))


def _places_of(c: Command) -> list[str]:
    """A command's operands that name files or folders: not the values of its pattern
    options (``rg --files -g '*.json'``: none), nor a search's pattern
    (:func:`~agentmem.agents.programs.pattern_first`)."""
    pats = programs.pattern_options(c.program)
    values = {c.args[k + 1] for k, a in enumerate(c.args[:-1]) if a in pats}
    ops = [o for o in c.operands if o not in values and not o.startswith("-")]
    listing = "list" in programs.command_jobs(c.program, c.subcommand, c.flags)
    if ops and programs.pattern_first(c.program) and not listing:
        ops = ops[1:]
    return ops


def _started(t: Trajectory, name: str) -> bool:
    """Whether a successful shell call of run ``t`` ran program ``name``."""
    return any(
        s.success
        and is_shell(s.tool)
        and any(_bare(c.program).lower() == name.lower() for c in _commands(s) or ())
        for s in t.steps
    )


def _ps_not_started(t: Trajectory, i: int) -> ShellFix | None:
    """``nostart``: PowerShell found the program a line ran first and could not start it
    (``rg --files``: "Program 'rg.exe' failed to run: ... Access is denied", its error
    record in any language naming ``rg.exe``), and a later call did that command's job
    (:func:`~agentmem.agents.programs.command_jobs`: ``git ls-files`` lists as ``rg
    --files`` does) with another program or a cmdlet, on the same files or folders (both
    naming none: the same working folder), and worked: this machine cannot run that
    program. The line must hold that one command, so the record is its."""
    step = t.steps[i]
    known = spec_for(step.tool)
    if step.success or not is_shell(step.tool) or known is None:
        return None
    body = re.sub(r"\x1b\[[0-9;]*m", "", step.output[:4000])
    cmds = _commands(step) or ()
    # the record must name the line's one program as NAME.exe (not_started's own check)
    if len(cmds) != 1 or not not_started(body, [cmds[0].program]):
        return None
    f = cmds[0]
    name = _bare(f.program)
    if is_cmdlet(name):
        return None  # PowerShell's own command
    wanted = programs.command_jobs(f.program, f.subcommand, f.flags) - {f.program, name}
    places = {_ps_file(o) for o in _places_of(f)}
    if not wanted or _started(t, name):
        return None  # the run ran it elsewhere: it can start here
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)):
            continue
        got = _job_of(later)
        if got is None or got[0] == name or not wanted & got[2]:
            continue
        same_place = places == {_ps_file(o) for o in got[3]} and (
            places or later.params.get("workdir") == step.params.get("workdir")
        )
        if not same_place:
            continue
        why_not = _PS_WHY_NOT.search(body)
        said = f"Program '{name}.exe' failed to run" + (f": {why_not.group(1)}" if why_not else "")
        q = quote_error(said, 9)
        how = " ".join(_ps_script(later).split())
        how = how if len(how) <= 60 else how[:57] + "..."
        done = f"{got[1]} did the job instead" + ("" if how == got[1] else f" ({how})")
        text = f"On this machine {name} cannot start ('{q}'): {done}."
        fnd = _finding("nostart", name, "machine", text, (name, got[0]), q, avoid=[name])
        client = {"client": known[0].client}
        fnd = attrs.evolve(fnd, domain=step.domain or "", detail={**fnd.detail, **client})
        why = f"call {i + 1} ran {name}, which could not start; call {j + 1} ran {got[0]}"
        return ShellFix(i, j, (), fnd, why)
    return None


#: An output that says a script broke: a traceback, a line that starts with an error's
#: or an exception's name (``SyntaxError: '(' was never closed``), PowerShell's parser.
_BROKE = re.compile(
    r"(?m)^\s*(?:Traceback \(most recent|[A-Z]\w*(?:Error|Exception)\b)|ParserError"
)
#: Windows PowerShell 5.1's parser refusing an operator PowerShell 7 added: ``??`` (and
#: ``??=``), the ternary's ``?``.
_PS7_TOKEN = re.compile(r"Unexpected token '(\?\?=?|\?)' in expression or statement")
_WORD = re.compile(r"[A-Za-z_$][\w:.$-]{2,}")


def _ps7_operator(t: Trajectory, i: int) -> ShellFix | None:
    """``ps7``: Windows PowerShell 5.1's parser refused an operator of PowerShell 7 (``??``,
    the ternary ``? :``: "Unexpected token '??' in expression or statement", its record a
    ``ParserError``), and within :data:`WINDOW` calls one ran the same script (half or more
    of its words) without that operator, with ``if (...) { ... } else { ... }``, and it
    worked with no parser error: the machine's PowerShell is 5.1."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool) or powershell_refusal(step.output) is None:
        return None
    m = _PS7_TOKEN.search(step.output[:3000])
    script = _ps_script(step)
    if m is None or m.group(1) not in script:
        return None
    op = m.group(1)
    words = set(_WORD.findall(script))
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)):
            continue
        again = _ps_script(later)
        if powershell_refusal(later.output) is not None or _BROKE.search(later.output[:3000]):
            continue
        if "??" in again or (op == "?" and re.search(r"\s\?\s", again)):
            continue  # the operator again
        if not (re.search(r"\bif\s*\(", again) and re.search(r"\belse\b", again)):
            continue
        if not words or len(words & set(_WORD.findall(again))) * 2 < len(words):
            continue  # another script
        name = "??" if op.startswith("??") else "?: (ternary)"
        q = quote_error(m.group(0).split(" in expression")[0], 6)
        text = (
            f"Here PowerShell is Windows PowerShell 5.1, without PowerShell 7's {name} "
            f"operator ('{q}'): write the fallback with if (...) {{ ... }} else {{ ... }}."
        )
        fnd = _finding("ps7", "powershell", "machine", text, ("powershell", op, "if"), q)
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} used {op}, a parse error; call {j + 1} ran it with if/else"
        return ShellFix(i, j, (), fnd, why)
    return None


#: PowerShell's record of a parse error in a script, and the script's line it shows:
#: ``At X:\w\export.ps1:38 char:13`` then ``+     Write-Host "âœ“ Module list updated"``.
_PS1_AT = re.compile(r"(?m)^At ([^\r\n]+?\.ps1):\d+ char:\d+\r?\n\+ ([^\r\n]*)")
#: A byte 0x80-0xBF (a UTF-8 continuation byte) as Windows-1252 shows it.
_CONT = (
    "[\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc\u2013\u2014"
    "\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122]"
)
#: UTF-8 read as Windows-1252 ("ANSI"): a lead byte (Â or Ã, â, ð) shown as its own
#: letter, then as many continuation bytes as it announces (1, 2, 3), shown as 1252's
#: (``âœ“`` for ✓, ``â€”`` for an em dash, ``Ã©`` for é).
_MOJIBAKE = re.compile(f"[\u00c2\u00c3]{_CONT}|\u00e2{_CONT}{{2}}|\u00f0{_CONT}{{3}}")


def _ascii(text: str) -> bool:
    return text.isascii() or text.startswith("\ufeff")


def _read_as_ansi(shown: str) -> str | None:
    """The character whose UTF-8 Windows-1252 shows as ``shown`` (``✓`` for ``âœ“``), or
    None when ``shown`` is no such reading (``ð“``: Icelandic "það" closed by a quote)."""
    raw = bytearray()
    for c in shown:
        try:
            raw += c.encode("cp1252")
        except UnicodeEncodeError:
            if not "\u0080" <= c <= "\u009f":
                return None
            raw.append(ord(c))  # a byte 1252 leaves undefined (0x81), shown as itself
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return None


def _ansi_record(body: str) -> tuple[str, str, str] | None:
    """The script of a parse error's record whose shown line holds UTF-8 read as ANSI,
    that reading and the character it was: mojibake elsewhere (a localized message read
    wrongly, another program's output) is no text of the script."""
    for at in _PS1_AT.finditer(body):
        for bad in _MOJIBAKE.finditer(at.group(2)):
            was = _read_as_ansi(bad.group(0))
            if was is not None:
                return at.group(1), bad.group(0), was
    return None


def _runs_ps1(line: str, script: str) -> bool:
    """Whether a PowerShell line (lower case, ``/`` for a backslash) runs ``script`` (its path
    as the record wrote it, so normalized): a statement, ``&``, ``.`` or ``-File`` with the
    script's name, or a path to it; not a line that reads it (``Get-Content``), nor a
    script of another name (``old_export.ps1``) or folder."""
    name = re.escape(posixpath.basename(script))
    runs = re.compile(
        r"(?:^|[;\n{&|]|-file\s)\s*(?:[&.]\s+|&)?"
        r"(?:(['\"])([^'\"\n]*/)?" + name + r"\1|((?:[^\s'\";|&]*/)?" + name + r")(?=$|[\s;)}|]))"
    )
    for m in runs.finditer(line):
        path = m.group(3) or (m.group(2) or "") + posixpath.basename(script)
        if not (path.startswith("/") or re.match(r"[a-z]:", path)) or path == script:
            return True
    return False


def _ansi_texts(params: dict[str, object], path: str) -> tuple[list[str], list[str]]:
    """The new and the old texts of a Write's or Edit's parameters (MultiEdit's in its
    list of edits)."""
    pairs: list[tuple[str, object]] = []
    for k, v in params.items():
        if isinstance(v, list):
            pairs += [kv for e in v if isinstance(e, dict) for kv in e.items()]
        else:
            pairs.append((k, v))
    texts = [(k, v) for k, v in pairs if isinstance(v, str) and v != path]
    return [v for k, v in texts if "old" not in k], [v for k, v in texts if "old" in k]


def _ansi_script(t: Trajectory, i: int) -> ShellFix | None:
    """``ansi``: running a ``.ps1`` failed on PowerShell's parser, its record naming the
    script (``At X:/w/export.ps1:38``, with backslashes) and showing its line as UTF-8
    read as ANSI (``"âœ“ Module list updated"``: Windows PowerShell 5.1 reads a script
    without a BOM so); within :data:`WINDOW` calls the run rewrote that script with ASCII
    text only (a Write of it, or Edits whose new text is ASCII where the old was not) and
    ran it again without a parser error: this machine's PowerShell needs ASCII (or a BOM)
    in scripts. A line that runs ``pwsh`` (PowerShell 7 reads UTF-8) teaches nothing."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool):
        return None
    body = step.output[:4000]
    found_ = _ansi_record(body) if powershell_refusal(step.output) is not None else None
    if found_ is None or _PWSH.search(_line(step)):
        return None
    at, shown, was = found_
    script = at.replace("\\", "/").lower()
    name = os.path.basename(script)
    rewrote = False
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        found = spec_for(later.tool)
        if found is None:
            continue
        spec = found[1]
        if spec.kind in (ToolKind.WRITE, ToolKind.EDIT):
            path = later.params.get(spec.path or "file_path")
            if not (later.success and isinstance(path, str)):
                continue
            if path.replace("\\", "/").lower() != script:
                continue
            new, old = _ansi_texts(later.params, path)
            if not new or not all(_ascii(v) for v in new):
                return None  # non-ASCII written again
            if spec.kind is ToolKind.EDIT and all(v.isascii() for v in old):
                continue  # an edit of something else in the script
            rewrote = True
        elif is_shell(later.tool) and _runs_ps1(_line(later).replace("\\", "/").lower(), script):
            if not rewrote:
                continue
            if _PWSH.search(_line(later)):
                return None  # PowerShell 7 reads UTF-8: no sign the ASCII did it
            if not later.success or powershell_refusal(later.output) is not None:
                return None  # still broken: something else was wrong too
            clean = was.isprintable() and not was.isspace() and shown.isprintable()
            said = f" (its {was} read as {shown})" if clean else ""
            ran = os.path.basename(at.replace("\\", "/"))  # as the record wrote it
            text = (
                f"Windows PowerShell 5.1 here reads a .ps1 without a BOM as ANSI{said}, "
                f"so non-ASCII text breaks parsing: keep .ps1 files ASCII ({ran} then ran)."
            )
            q = quote_error(said.strip(" ()") or "non-ASCII text read as ANSI", 8)
            fnd = _finding("ansi", "powershell", "machine", text, ("powershell", ".ps1"), q)
            fnd = attrs.evolve(fnd, domain=step.domain or "")
            why = f"call {i + 1} ran {name}: read as ANSI; call {j + 1} ran it in ASCII"
            return ShellFix(i, j, (), fnd, why)
    return None


#: PowerShell 7 named on a line (``pwsh -File x.ps1``): it reads a script as UTF-8.
_PWSH = re.compile(r"(?i)(?:^|[\s;&|'\"\\/(])pwsh(?:\.exe)?(?=$|[\s;&|'\")])")


#: PowerShell's here-string piped into a program: ``@'`` ... ``'@ | python -``.
_HERE_STRING_PIPE = re.compile(r"^\s*@['\"]\r?\n.*?\n['\"]@\s*\|\s*([^\s|;]+)", re.DOTALL)
#: A heredoc fed to a program: ``apply_patch << 'PATCH'``, ``cat <<EOF``.
_HEREDOC = re.compile(r"^\s*([\w.-]+)(?:[ \t]+[^\s<>|;&]+)*\s*<<-?\s*['\"]?\w+['\"]?\s*\n")


def _ps_heredoc(t: Trajectory, i: int) -> ShellFix | None:
    """``heredoc``: a call fed a program a bash heredoc (``apply_patch << 'PATCH'``,
    ``python - <<'PY'``) and PowerShell's parser refused the ``<<`` (its record: the
    PowerShell tool, ``powershell -Command``, or Codex's own shell on Windows), and a later
    call ran that program without a heredoc and worked, with no error in its output: its
    own call with the text as its argument, a here-string piped into it (``@'...'@ |
    python -``), or a script file (``python x.py``): this machine's shell has no heredoc."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool):
        return None
    known = spec_for(step.tool)
    wrapped = _PS_WRAPPER.match(_line(step).strip()) or "powershell" in step.tool.lower()
    if known is not None and known[0].client == "claude-code" and not wrapped:
        return None  # its Bash tool is bash: a record in the output is some program's
    h = _HEREDOC.match(_ps_script(step))
    # "Missing file specification after ...": PowerShell's parser read the line, whichever
    # tool ran it (a powershell -Command wrapper, the PowerShell tool, Codex's shell_command)
    said = powershell_refusal(step.output)
    if h is None or not said:
        return None
    program = h.group(1)
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)):
            continue
        argv = next((v for v in later.params.values() if isinstance(v, list)), None)
        piped = _HERE_STRING_PIPE.match(_ps_script(later))
        filed = ""
        if piped:  # @'...'@ | python -: PowerShell's here-string, piped in
            ran, fed = _bare(os.path.basename(piped.group(1))), "<<" in _ps_script(later)
        elif argv and isinstance(argv[0], str) and not _PS_WRAPPER.match(_line(later)):
            ran, fed = os.path.basename(argv[0]), "<<" in str(argv[0])
        else:  # a line: its first command, read as the shell reads it
            found = parse(_ps_script(later))
            first = found.commands[0] if found.parsed and found.commands else None
            ran = _bare(first.program) if first else ""
            fed = "<<" in _line(later)
            if first and first.operands and _SCRIPT.search(first.operands[0]):
                saved = os.path.basename(first.operands[0].replace("\\", "/"))
                if not any(saved in str(s.params) for s in t.steps[i + 1 : j]):
                    continue  # a script of the project's (manage.py): no text saved to it
                filed = short(first, 50)  # python .specify/x.py: the text saved to a file
        if ran != program or fed or _BROKE.search(later.output[:3000]):
            continue  # another program, a heredoc again, or a script that broke (the view
            # counts an inline script's SyntaxError as the code's: done)
        q = quote_error(said, 8)
        if piped:
            how = f"pipe the text in from a here-string (@'...'@ | {program} ...)"
        elif filed:
            how = f"save the text as a script file and run it ({filed})"
        else:
            how = f"run {program} as its own call, the text as its argument"
        text = f"Here the shell is PowerShell, which has no << heredoc ('{q}'): {how}."
        fnd = _finding("heredoc", program, "machine", text, (program, "powershell", "<<"), q)
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} fed {program} a heredoc in PowerShell; call {j + 1} ran it alone"
        return ShellFix(i, j, (), fnd, why)
    return None


#: The readers of one failed call each (a kind that is no pair of a failed and a
#: retried command), tried in order on the calls no earlier finding took.
def _leading_sleep(c: Command | None) -> str | None:
    """``sleep N`` when command ``c`` is a sleep (the first command of a line); else None."""
    if c is None or c.program != "sleep" or len(c.operands) != 1:
        return None
    return f"sleep {c.operands[0]}"


def _blocked_sleep(step: Step) -> tuple[str, str] | None:
    """(``sleep N``, the refusal's text) when the shell tool refused ``step``'s line for
    the sleep at its head (:func:`blocked_sleep`, naming that very sleep); else None."""
    found = spec_for(step.tool)
    if found is None or step.success or not is_shell(step.tool):
        return None
    body = strip_headers(step.output, found[0])[0].lstrip()
    sleep = blocked_sleep(body)
    script = parse(command_line(found[1], step.params))
    if sleep is None or not script.parsed or not script.commands:
        return None
    if _leading_sleep(script.commands[0]) != sleep:
        return None  # the refusal names another sleep than the line's head
    return sleep, body


def _sleep_refused(t: Trajectory, i: int) -> ShellFix | None:
    """``sleep``: the shell tool refused call ``i`` because its line starts with ``sleep N``
    (:func:`blocked_sleep`, naming that very sleep); a later call ran the same commands
    (:func:`same_command`: a sleep sets the scene) without a leading sleep, in the
    foreground, and worked. A retry that kept a sleep at its head or changed a command
    teaches nothing."""
    step = t.steps[i]
    found, blocked = spec_for(step.tool), _blocked_sleep(step)
    if found is None or blocked is None:
        return None
    sleep, body = blocked
    line = command_line(found[1], step.params)
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        lf = spec_for(later.tool)
        if lf is None or not is_shell(later.tool):
            continue
        again = parse(command_line(lf[1], later.params))
        if not again.parsed or not same_command(line, command_line(lf[1], later.params)):
            continue
        head = again.commands[0] if again.commands else None
        ran = [c for c in again.commands if c.program != "sleep"]
        backgrounded = later.params.get("run_in_background") is True or (
            _BACKGROUNDED.search(later.output[:500]) is not None
        )
        if not later.success or _leading_sleep(head) or backgrounded or not ran:
            return None  # refused again, kept the sleep, or only started
        if not _proven(later, ran[-1]):
            return None
        # the refusal's first sentence: the rest is the client's advice to the agent,
        # which the quote's sanitizer withholds whole (an empty "()" once reached a lesson)
        q = quote_error(re.split(r"(?<=\.)\s", body.split("\n", 1)[0], maxsplit=1)[0], 10)
        said = f" ('{q}')" if q else ""
        text = (
            f"{step.tool} refuses a command that starts with {sleep}{said}: run the "
            f"command without the sleep, or wait with run_in_background or an until-loop."
        )
        fnd = _finding("sleep", step.tool, "tool", text, (step.tool, "sleep"), q, avoid=["sleep"])
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} was refused ({sleep} first); call {j + 1} ran it without"
        return ShellFix(i, j, (), fnd, why)
    return None


#: An interpreter given its script inline: ``node -e "..."``, ``python3 -c '...'``.
_INLINE = re.compile(
    r"(?:^|[\s;&|(])(?P<p>[A-Za-z][\w.]*)"
    r"(?:\s+-\S+)*?\s+(?P<flag>-e|-c|-r|--eval|eval)\s+(?P<q>[\"'])"
)
#: The shell refusing a line it could not read (so the interpreter never ran): bash's
#: ``bash: -c: line 96: unexpected EOF while looking for matching `''``, zsh's
#: ``zsh:1: unmatched "``.
_UNREAD = re.compile(
    r"(?m)^(?:\S*bash: (?:-c|eval): line \d+: (?:unexpected EOF while looking for matching|"
    r"syntax error near unexpected token|syntax error: unexpected end of file)|"
    r"(?:zsh|\(eval\)):\d+: unmatched)"
)
_CODE_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]{3,}")


def _written(step: Step) -> tuple[str, str] | None:
    """(the path, the text) of a file a client tool wrote whole (Write), or None."""
    found = spec_for(step.tool)
    if found is None or not step.success:
        return None
    if found[1].kind is ToolKind.WRITE:
        path = step.params.get(found[1].path or "file_path")
        text = step.params.get("content")
        if isinstance(path, str) and isinstance(text, str):
            return path, text
    return None


def _inline_script(t: Trajectory, i: int) -> ShellFix | None:
    """``inline``: bash could not read a line that gave an interpreter a long script
    inline (``node -e "..."``, ``python3 -c "..."``: a quote of the script's own closed
    the argument, 'unexpected EOF while looking for matching'), so the interpreter never
    ran; within :data:`WINDOW` calls the script was written to a file of that
    interpreter's (Write: most of its code words alike) and a shell call ran the same
    interpreter on that file and worked."""
    step = t.steps[i]
    # not step.success: the learning view counts an inline script's failure as the code's
    # (done), and here the shell's own refusal says the code never ran
    if not is_shell(step.tool) or not _UNREAD.search(step.output[:2000]):
        return None
    m = next(
        (x for x in _INLINE.finditer(_line(step)) if programs.is_interpreter(x.group("p"))), None
    )
    if m is None:
        return None
    program = m.group("p")
    family = "python" if programs.is_python(program) else program
    if m.group("flag") not in programs.eval_flags(family):
        return None  # node -r preloads a module, ruby -c checks a file (review 34)
    words = set(_CODE_WORD.findall(_line(step)[m.end() :]))
    if len(words) < 8:
        return None  # a one-liner: its quotes are the slip, not its length
    saved: dict[str, int] = {}  # a file written since, that holds most of the code's words
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        w = _written(later)
        if w is not None:
            path, text = w
            if path.lower().endswith(programs.script_suffixes(family)) and (
                len(words & set(_CODE_WORD.findall(text))) * 2 >= len(words)
            ):
                saved[os.path.basename(path.replace("\\", "/"))] = j
            continue
        if not (later.success and is_shell(later.tool)) or not saved:
            continue
        ran = next(
            (
                c
                for c in _commands(later) or ()
                if _bare(c.program) == _bare(program)
                or (family == "python" and programs.is_python(_bare(c.program)))
                if c.operands and os.path.basename(c.operands[0].replace("\\", "/")) in saved
            ),
            None,
        )
        if ran is None or _BROKE.search(later.output[:3000]):
            continue
        suffix = programs.script_suffixes(family)[0]
        said = _UNREAD.search(step.output[:2000])
        q = quote_error(said.group(0).rsplit(": ", 1)[-1] if said else _UNCLOSED, 8)
        text = (
            f"A long {program} {m.group('flag')} script inline in {step.tool} "
            f"breaks on its own quotes ('{q}'): write it to a {suffix} file and run "
            f"{program} on the file."
        )
        fnd = _finding("inline", program, "tool", text, (step.tool, program, suffix), q)
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = (
            f"call {i + 1} gave {program} its script inline and bash could not read the line; "
            f"call {saved[os.path.basename(ran.operands[0].replace(chr(92), '/'))] + 1} wrote "
            f"it to a file and call {j + 1} ran it"
        )
        return ShellFix(i, j, (), fnd, why)
    return None


def _workdir_of(step: Step) -> str:
    """A shell call's own ``workdir`` parameter (Codex's), as written; "" when none."""
    w = step.params.get("workdir")
    return w.replace("\\", "/").rstrip("/") if isinstance(w, str) else ""


def _doubled_workdir(t: Trajectory, i: int) -> ShellFix | None:
    """``workdir_path``: a shell call given a ``workdir`` (Codex's) failed on a relative
    path that begins with that folder's own name (workdir ``.codex``, ``cat
    .codex/prompts/x.md``: looked up in ``.codex/.codex/``), its diagnostic naming the path;
    within :data:`WINDOW` calls the same program read the same file, the path written
    from the workdir (``prompts/x.md``, the same workdir) or the whole path from another
    workdir that does not end in that folder, and it worked."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool):
        return None
    work = _workdir_of(step)
    name = posixpath.basename(work)
    failed = _failed_command(step)
    if not name or name in (".", "..") or failed is None:
        return None
    f, diag = failed
    if not _MISSING_PATH.search(diag):
        return None
    bad = next(
        (o for o in f.operands if o.startswith(name + "/") and o in step.output[:2000]), None
    )
    if bad is None:
        return None
    rest = bad[len(name) + 1 :]
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)):
            continue
        there = _workdir_of(later)
        for c in _commands(later) or ():
            if c.program != f.program:
                continue
            inside = there == work and rest in c.operands
            above = bad in c.operands and there != work and not there.endswith("/" + name)
            if not (inside or above):
                continue
            q = quote_error(diag, 8)
            # no comma after the folder's name: ".codex," reads as words addressed to Codex
            text = (
                f"{step.tool} resolves a relative path from the call's workdir: a path "
                f"{name}/... given workdir {name} is looked for in {name}/{name}/ ('No such "
                "file'); write the path relative to the workdir."
            )
            fnd = _finding("workdir_path", step.tool, "tool", text, (step.tool, "workdir"), q)
            fnd = attrs.evolve(fnd, domain=step.domain or "")
            why = f"call {i + 1} named {bad} from workdir {work}; call {j + 1} read it"
            return ShellFix(i, j, (), fnd, why)
    return None


#: PowerShell not knowing a .NET type whose assembly is not loaded: "Unable to find type
#: [System.Net.Http.HttpClient]."
_NO_TYPE = re.compile(r"Unable to find type \[([A-Za-z_][\w.]*)\]")
#: Loading an assembly by name: ``Add-Type -AssemblyName System.Net.Http``.
_ADD_TYPE = re.compile(r"(?i)\bAdd-Type\s+-AssemblyName\s+['\"]?([A-Za-z_][\w.]*)")


def _assembly_loaded(t: Trajectory, i: int) -> ShellFix | None:
    """``addtype``: PowerShell did not know a .NET type ("Unable to find type
    [System.Net.Http.HttpClient]": Windows PowerShell 5.1 does not load that assembly by
    itself), and within :data:`WINDOW` calls the same script (the type in it, half or more
    of its words alike) with ``Add-Type -AssemblyName A`` first, A the type's namespace
    or a part of it, worked."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool):
        return None
    m = _NO_TYPE.search(step.output[:3000])
    script = _ps_script(step)
    if m is None or m.group(1) not in script or _ADD_TYPE.search(script):
        return None
    kind = m.group(1)
    words = set(_WORD.findall(script))
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)) or _NO_TYPE.search(later.output[:3000]):
            continue
        again = _ps_script(later)
        added = _ADD_TYPE.search(again)
        if added is None or kind not in again:
            continue
        name = added.group(1)
        if not kind.startswith(name + ".") or len(words & set(_WORD.findall(again))) * 2 < len(
            words
        ):
            continue
        q = quote_error(m.group(0), 8)
        text = (
            f"PowerShell here does not load {name} by itself ('{q}'): run Add-Type "
            f"-AssemblyName {name} before using [{kind}]."
        )
        fnd = _finding("addtype", "powershell", "machine", text, ("powershell", name), q)
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} could not find [{kind}]; call {j + 1} loaded {name} first"
        return ShellFix(i, j, (), fnd, why)
    return None


#: zsh refusing an assignment to one of its read-only special parameters (``status``,
#: ``pipestatus``): ``zsh:11: read-only variable: status``.
_READ_ONLY = re.compile(r"(?m)^(?:zsh|\(eval\)):\d+: read-only variable: (\w+)")


def _read_only_name(t: Trajectory, i: int) -> ShellFix | None:
    """``readonly``: zsh refused an assignment to one of its read-only special parameters
    (``zsh:11: read-only variable: status``: ``status`` is zsh's ``$?``), and within
    :data:`WINDOW` calls the same script with that name assigned nowhere (renamed:
    ``row_status``; half or more of its words alike) worked: name the variable otherwise."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool):
        return None
    m = _READ_ONLY.search(step.output[:3000])
    line = _line(step)
    assigned = (
        re.compile(rf"(?<![\w$]){m.group(1)}=|\b(?:local|typeset|declare)\s+{m.group(1)}\b")
        if m
        else None
    )
    if m is None or assigned is None or not assigned.search(line):
        return None
    name = m.group(1)
    words = set(_WORD.findall(line))
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)) or _READ_ONLY.search(later.output[:3000]):
            continue
        again = _line(later)
        if assigned.search(again) or len(words & set(_WORD.findall(again))) * 2 < len(words):
            continue
        q = quote_error(m.group(0).split(": ", 1)[-1], 6)
        text = (
            f"In zsh {name} is a read-only special variable ('{q}'): a script run there must "
            "name its variable something else."
        )
        fnd = _finding("readonly", "zsh", "machine", text, ("zsh", name), q, avoid=[])
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} assigned zsh's read-only {name}; call {j + 1} renamed it and worked"
        return ShellFix(i, j, (), fnd, why)
    return None


#: PowerShell refusing an assignment to an automatic variable: "Cannot overwrite variable
#: HOME because it is read-only or constant."
_PS_READ_ONLY = re.compile(r"Cannot overwrite variable (\w+) because it is read-only or constant")


def _ps_assignments(script: str) -> list[tuple[str, str]]:
    """A PowerShell script's assignments, ``$name = value`` (the value up to ``;`` or the
    line's end), each as (the name lower-cased, the value's first two words)."""
    return [
        (m.group(1).lower(), " ".join(m.group(2).split()[:2]))
        for m in re.finditer(r"\$(\w+)\s*=(?!=)\s*([^;\n]+)", script)
    ]


def _ps_read_only(t: Trajectory, i: int) -> ShellFix | None:
    """``ps_readonly``: PowerShell refused an assignment to one of its automatic variables
    (``$home = ...``: "Cannot overwrite variable HOME because it is read-only or
    constant"; names ignore case), and within :data:`WINDOW` calls a script that assigned
    the same value (its first two words: ``Join-Path $env:USERPROFILE``) to another name,
    and that variable nowhere, worked: name the variable otherwise."""
    step = t.steps[i]
    m = _PS_READ_ONLY.search(step.output[:3000]) if is_shell(step.tool) else None
    if step.success or m is None:
        return None
    name, script = m.group(1).lower(), _ps_script(step)
    value = next((v for n, v in _ps_assignments(script) if n == name), None)
    # the script's own Set-Variable -Option ReadOnly (or Constant): no automatic variable
    made = rf"(?i)\b(?:Set|New)-Variable\b[^;\n]{{0,200}}(?<![\w-]){re.escape(name)}\b"
    if not value or re.search(made, script):
        return None
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)) or _PS_READ_ONLY.search(later.output):
            continue
        done = _ps_assignments(_ps_script(later))
        other = next((n for n, v in done if v == value and n != name), None)
        if other is None or any(n == name for n, _ in done):
            continue
        q = quote_error(m.group(0), 10)
        text = (
            f"In PowerShell ${m.group(1)} is a read-only automatic variable, and variable names "
            f"ignore case ('{q}'): give the script's variable another name."
        )
        fnd = _finding(
            "ps_readonly", "powershell", "global", text, ("powershell", name), q, avoid=[]
        )
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} assigned PowerShell's ${name}; call {j + 1} named it ${other}"
        return ShellFix(i, j, (), fnd, why)
    return None


#: A cmdlet refusing two parameters of different parameter sets: "Get-Content : The
#: parameters TotalCount and Tail cannot be used together."
_EXCLUSIVE = re.compile(
    r"(?m)^(?P<c>[A-Z][a-z]+-[A-Za-z]+) : (?P<said>The parameters (?P<x>\w+) and "
    r"(?P<y>\w+) cannot be used together)"
)


def _cmdlet_calls(script: str, cmdlet: str) -> list[str]:
    """The text of each call of ``cmdlet`` in a PowerShell script, up to the next ``|``,
    ``;`` or line end (its parameters and operands)."""
    return [
        m.group(1) for m in re.finditer(rf"(?i)(?<![\w-]){re.escape(cmdlet)}\b([^|;\r\n]*)", script)
    ]


def _names_param(call: str, name: str) -> bool:
    """Whether a cmdlet call passes parameter ``name`` (or a prefix of it PowerShell
    takes: ``-Total`` for ``-TotalCount``)."""
    return any(
        len(p) >= 2 and name.lower().startswith(p.lower())
        for p in re.findall(r"(?<![\w-])-([A-Za-z]+)\b", call)
    )


def _writes_param(call: str, *names: str) -> bool:
    """Whether a cmdlet call passes each of ``names`` written in full (any case)."""
    written = {p.lower() for p in re.findall(r"(?<![\w-])-([A-Za-z]+)\b", call)}
    return all(n.lower() in written for n in names)


def _cmdlet_paths(call: str) -> set[str]:
    """A cmdlet call's words that name files: quotes off, with a dot, slash or backslash."""
    words = (w.strip("\"'") for w in call.split())
    return {w for w in words if w and not w.startswith("-") and re.search(r"[./\\]\w", w)}


def _exclusive_params(t: Trajectory, i: int) -> ShellFix | None:
    """``exclusive``: a PowerShell cmdlet refused two parameters of different parameter
    sets ("Get-Content : The parameters TotalCount and Tail cannot be used together"), the
    call naming both in full, and within :data:`WINDOW` calls the same cmdlet ran on the
    same file with at most
    one of them and worked. The error says what was wrong, so the lesson counts only once
    the slip repeats (``repeats``: two such failures, in the run or the library's runs)."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool):
        return None
    m = _EXCLUSIVE.search(step.output[:3000])
    if m is None:
        return None
    c, x, y = m.group("c"), m.group("x"), m.group("y")
    # the names are the output's: the lesson takes them only as the command wrote them in
    # full (a prefix, -Total, would let any name the output made up through, review 34)
    calls = [k for k in _cmdlet_calls(_ps_script(step), c) if _writes_param(k, x, y)]
    if not calls or not _cmdlet_paths(calls[0]):
        return None
    paths = _cmdlet_paths(calls[0])
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)) or _EXCLUSIVE.search(later.output[:3000]):
            continue
        again = _cmdlet_calls(_ps_script(later), c)
        if not any(
            _cmdlet_paths(k) & paths and not (_names_param(k, x) and _names_param(k, y))
            for k in again
        ):
            continue
        said = m.group("said")
        slips = sum(
            1
            for s in t.steps
            if not s.success
            and (e := _EXCLUSIVE.search(s.output[:3000])) is not None
            and (e.group("c"), e.group("x"), e.group("y")) == (c, x, y)
        )
        q = quote_error(said, 10)
        text = f"PowerShell's {c} takes -{x} or -{y}, never both ('{q}'): pass only one of them."
        fnd = _finding(
            "exclusive",
            c,
            "tool",
            text,
            (c, x, y),
            said,
            avoid=[],
            repeats=True,
            slips=slips,
            tools=[step.tool],
            rule_error=said,
        )
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} passed {c} both -{x} and -{y}; call {j + 1} passed one"
        return ShellFix(i, j, (), fnd, why)
    return None


#: The shell's refusal to execute a file by its path: bash's and sh's ``PATH: Permission
#: denied``, zsh's ``permission denied: PATH``.
_NOT_EXECUTED = re.compile(
    r"(?im)^(?:.*?: )?(?:(?P<a>\S[^\n]*?): Permission denied|"
    r"permission denied: (?P<b>\S[^\n]*?))\s*$"
)


def _same_script(a: str, b: str) -> bool:
    """Whether two names of a script are one file: equal once a leading ``./`` is dropped,
    or one a path that ends with the other at a folder's edge (``~/x/a.sh``,
    ``/home/me/x/a.sh``; never ``scripts/a.sh`` and ``old_scripts/a.sh``)."""
    a, b = a.removeprefix("./"), b.removeprefix("./")
    if a == b:
        return True
    a, b = a.lstrip("~"), b.lstrip("~")

    def ends(p: str, q: str) -> bool:
        return p.endswith(q if q.startswith("/") else "/" + q)

    return "/" in a and "/" in b and (ends(a, b) or ends(b, a))


def _interpreted(t: Trajectory, i: int) -> ShellFix | None:
    """``interpret``: a script run by its path (``./x.sh``, ``scripts/list.py``) was not
    executed (the shell's "Permission denied" naming that very path, its exit 126: no
    executable bit, or a sandbox that will not execute the project's files), and within
    :data:`WINDOW` calls, with no ``chmod`` between, an interpreter (bash, python3) ran the
    same script with the same arguments and it worked: run it so here."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool):
        return None
    cmds = _commands(step)
    if not cmds:
        return None
    said = [
        (m.group("a") or m.group("b")).split(": ")[-1]
        for m in _NOT_EXECUTED.finditer(step.output[:2000])
    ]
    f = next(
        (
            c
            for c in cmds
            if "/" in _program_word(c)
            and not c.wrappers
            and any(_same_script(_program_word(c), x.strip()) for x in said)
        ),
        None,
    )
    if f is None:
        return None
    path = _program_word(f)
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not is_shell(later.tool):
            continue
        again = _commands(later) or ()
        if any(c.program == "chmod" for c in again):
            return None  # made executable: another fix
        s = next(
            (
                c
                for c in again
                if (programs.has(c.program, Role.SHELL) or programs.is_interpreter(c.program))
                and c.args[:1]
                and _same_script(c.args[0], path)
                and c.args[1:] == f.args
                and not c.wrappers
            ),
            None,
        )
        if s is None:
            continue
        if not later.success:
            return None
        how = f"{s.program} {s.args[0]}"
        text = (
            f"In this project {path} does not run by its path ('Permission denied'): run it "
            f"as {how}."
        )
        q = "Permission denied"
        fnd = _finding("interpret", f, "project", text, (path, s.program), q, avoid=[])
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} ran {path} by its path ('{q}'); call {j + 1} ran {how}"
        return ShellFix(i, j, (), fnd, why)
    return None


#: A container engine that knows no container by the name given: docker's "Error response
#: from daemon: No such container: NAME", podman's 'no container with name or ID "NAME"
#: found'.
_NO_CONTAINER = re.compile(
    r"No such container: (?P<a>[\w.-]+)|no container with name or ID \"(?P<b>[\w.-]+)\" found"
)


def _container_refused(step: Step) -> str | None:
    """The container name a failed shell call's engine did not know, or None."""
    if step.success or not is_shell(step.tool):
        return None
    m = _NO_CONTAINER.search(step.output[:3000])
    return (m.group("a") or m.group("b")) if m else None


#: A container engine's refusal of a call's words, before it looks a container up.
_ENGINE_USAGE = re.compile(r"unknown (?:shorthand )?flag|[Uu]sage:|requires (?:at least|exactly)")

#: A container engine's subcommands that make or start containers (``docker compose up``
#: is read as ``compose``).
_MAKES = frozenset({"run", "create", "up", "start", "compose"})


def _engine(c: Command) -> bool:
    """Whether ``c`` runs a container engine (a program of the docker domain)."""
    p = programs.get(c.program)
    return p is not None and p.domain == "docker"


def _engine_call(step: Step, name: str) -> tuple[Command, int] | None:
    """The container engine's command of a shell call (``docker exec``, ``podman logs``:
    a program of the docker domain) that names container ``name`` as an operand (or
    ``name:/path``, as ``docker cp`` does), with that operand's index."""
    for c in _commands(step) or ():
        if not _engine(c) or c.subcommand is None:
            continue
        for k, w in enumerate(c.operands):
            if w == name or w.startswith(f"{name}:"):
                return c, k
    return None


def _container_name(t: Trajectory, i: int) -> ShellFix | None:
    """``container``: the container engine knew no container by the name a shell call gave
    (``No such container: odoo18``); a later call listed the containers, and within
    :data:`WINDOW` calls the same subcommand (``docker exec``, ``docker restart``) given a
    name that listing showed, in the failed name's place, got past it: it worked, or failed
    otherwise (``the input device is not a TTY``: the engine found the container; not a
    usage error, which comes before any look-up). The name the run tried
    is not the machine's; the one that worked is. A container the run made itself (``up``,
    ``run``, ``create`` between) teaches nothing: it did not exist yet."""
    step = t.steps[i]
    name = _container_refused(step)
    found = _engine_call(step, name) if name else None
    if name is None or found is None:
        return None
    if any(_container_refused(t.steps[k]) for k in range(max(0, i - WINDOW), i)):
        return None  # an earlier refusal of the run's reads this one with it
    cmd, at = found
    tried, shown = [name], ""
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not is_shell(later.tool):
            continue
        if any(_engine(c) and c.subcommand in _MAKES for c in _commands(later) or ()):
            return None  # the run made or started containers: the name may be its own
        other = _container_refused(later)
        if other is not None:
            tried += [other] if other not in tried else []
            continue
        if not later.success and (
            not later.output.strip() or _ENGINE_USAGE.search(later.output[:2000])
        ):
            continue  # no word from the engine past the name, or a usage error before it
        cmds = _commands(later) or ()
        again = next(
            (
                c
                for c in cmds
                if c.program == cmd.program
                and c.subcommand == cmd.subcommand
                and len(c.operands) > at
                and c.operands[at].split(":")[0] not in tried
                and re.fullmatch(r"[\w.-]+", c.operands[at].split(":")[0])
                and _in_its_place(cmd, name, c, c.operands[at].split(":")[0])
            ),
            None,
        )
        right = again.operands[at].split(":")[0] if again is not None else ""
        if again is None or not re.search(rf"(?<![\w.-]){re.escape(right)}(?![\w.-])", shown):
            shown += "\n" + later.output[:6000]  # a listing the next call may take a name from
            continue
        wrong = " or ".join(tried[:3])
        q = quote_error(f"No such container: {name}", 6)
        how = f"{cmd.program} {cmd.subcommand} {right}"
        text = (
            f"On this machine there is no container {wrong} ('{q}'): the one meant was "
            f"{right}, which {cmd.program} ps lists ({how} ...)."
        )
        fnd = _finding("container", cmd, "machine", text, (cmd.program, right, *tried), q, avoid=[])
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} named container {name} ('{q}'); call {j + 1} named {right} and worked"
        return ShellFix(i, j, (), fnd, why)
    return None


def _in_its_place(failed: Command, name: str, later: Command, right: str) -> bool:
    """Whether container ``right`` of command ``later`` stands in for container ``name`` of
    command ``failed``: the same words after it (``docker exec db psql ...``, then
    ``docker exec pg_main psql ...``), or every run of letters of ``name`` in ``right``
    (``worker`` in ``app_worker_1``). Another container of the listing (``docker logs
    app_web_1`` after ``docker logs worker``) is no name meant instead."""

    def after(c: Command, n: str) -> tuple[str, ...] | None:
        k = next((k for k, w in enumerate(c.args) if w == n or w.startswith(f"{n}:")), None)
        return None if k is None else c.args[k + 1 :]

    rest = after(failed, name)
    if rest and rest == after(later, right):
        return True
    letters = re.findall(r"[a-z]{3,}", name.lower())
    return bool(letters) and all(x in right.lower() for x in letters)


def _patterns_as_paths(t: Trajectory, i: int) -> ShellFix | None:
    """``one_pattern``: a search program (grep, rg: the search domain) given several
    patterns as operands took the first as its pattern and the others as paths ("rg: def
    cmd_pl: No such file or directory", a word that is no path: it holds a space or
    names no file the call listed), and within :data:`WINDOW` calls the same program
    searched the same file for one of those words as its pattern and worked: one pattern a
    call, or each after ``-e``."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool):
        return None
    for c in _commands(step) or ():
        p = programs.get(c.program)
        if p is None or p.domain != "search" or len(c.operands) < 3 or "-e" in c.flags:
            continue
        said = [
            w
            for w in c.operands[1:]
            if re.search(rf"(?m)^{re.escape(c.program)}: {re.escape(w)}: No such file", step.output)
        ]
        words = [w for w in said if " " in w.strip()]  # a phrase: never a path meant
        paths = [w for w in c.operands[1:] if w not in said]
        if not words or not paths:
            continue
        for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
            later = t.steps[j]
            if not (later.success and is_shell(later.tool)):
                continue
            again = next(
                (
                    x
                    for x in _commands(later) or ()
                    if x.program == c.program
                    and x.operands[:1] in [(w,) for w in words]
                    and set(paths) & set(x.operands[1:])
                ),
                None,
            )
            if again is None:
                continue
            # one text for every such slip, whatever its words, so that Stage 3 merges them
            q = "No such file or directory"
            text = (
                f"{c.program} takes one pattern; quoted words after it are paths ('{q}'): run "
                f"{c.program} once per pattern, or pass each with -e ({c.program} -e A -e B)."
            )
            fnd = _finding("one_pattern", c, "global", text, (c.program, "-e"), q, avoid=[])
            fnd = attrs.evolve(fnd, domain=step.domain or "")
            why = (
                f"call {i + 1} gave {c.program} {len(c.operands) - len(paths)} patterns; call "
                f"{j + 1} searched {paths[0]} for one of them and worked"
            )
            return ShellFix(i, j, (), fnd, why)
    return None


def _short_option(c: Command, letter: str) -> bool:
    """Whether command ``c`` passes the one-letter option ``letter``, alone (``-F``) or in a
    bundle (``-rnF``)."""
    return any(re.fullmatch(rf"-[A-Za-z]*{letter}[A-Za-z]*", f) for f in c.flags)


#: grep's basic regex refusing an unbalanced ``\\(`` (GNU's words and BSD's).
_BRE_GROUP = re.compile(r"Unmatched \(? ?or \\\(|Unmatched \\\(|parentheses not balanced")


def _bre_group(t: Trajectory, i: int) -> ShellFix | None:
    """``bre_group``: grep, in its basic regex, read ``\\(`` as the start of a group and
    refused the pattern ("Unmatched ( or \\("), and within :data:`WINDOW` calls the same
    pattern searched as text worked: the Grep tool given it (its regex reads ``\\(`` as a
    parenthesis), ``grep -F`` or ``rg`` given it, or grep given it with ``(`` unescaped."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool) or not _BRE_GROUP.search(step.output[:2000]):
        return None
    cmd = next(
        (
            c
            for c in _commands(step) or ()
            if c.program == "grep"
            and c.operands
            and "\\(" in c.operands[0]
            and not any(_short_option(c, x) for x in "EPF")
        ),
        None,
    )
    if cmd is None:
        return None
    pattern = cmd.operands[0]
    # as written, its parentheses unescaped, or every escape dropped (the text itself)
    plain = {
        pattern,
        pattern.replace("\\(", "(").replace("\\)", ")"),
        re.sub(r"\\(.)", r"\1", pattern),
    }
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not later.success:
            continue
        found = spec_for(later.tool)
        if found is not None and found[1].kind is ToolKind.SEARCH:
            ok = later.params.get("pattern") == pattern
        elif is_shell(later.tool):
            ok = any(
                c.program in {"grep", "rg"} and c.operands[:1] and c.operands[0] in plain
                and (c.program == "rg" or _short_option(c, "F") or c.operands[0] != pattern)
                for c in _commands(later) or ()
            )  # fmt: skip
        else:
            ok = False
        if not ok:
            continue
        q = "Unmatched ( or \\("
        text = (
            f"grep's basic regex reads \\( as the start of a group ('{q}'): for a literal "
            "parenthesis write ( unescaped, or use grep -F or the Grep tool."
        )
        fnd = _finding("bre_group", cmd, "global", text, ("grep", "\\("), q, avoid=[])
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} gave grep \\( in a basic regex; call {j + 1} searched it as text"
        return ShellFix(i, j, (), fnd, why)
    return None


#: PowerShell's range operator reached before arithmetic: "[System.Object[]] does not
#: contain a method named 'op_Subtraction'" (the range came first, then ``-`` on it).
_RANGE_FIRST = re.compile(r"does not contain a method named '(op_Subtraction|op_Addition)'")
#: A range whose bound is unparenthesised arithmetic: ``[$start-1..$end]``, ``[$a..$b+5]``.
#: (``-join``, ``-in`` are operators, never a bound's arithmetic)
_BARE_BOUND = re.compile(
    r"\$\w+\s*[-+]\s*(?:\d+|\$\w+)\s*\.\.|\.\.\s*\$\w+\s*[-+]\s*(?:\d+|\$\w+)(?!\w)"
)


def _range_first(t: Trajectory, i: int) -> ShellFix | None:
    """``range_first``: PowerShell read ``$lines[$start-1..$end]`` as ``$start - (1..$end)``
    (its ``..`` binds tighter than ``+`` and ``-``) and failed ("does not contain a method
    named 'op_Subtraction'"); within :data:`WINDOW` calls a script that did the same (half
    or more of its words) with no unparenthesised bound worked."""
    step = t.steps[i]
    m = _RANGE_FIRST.search(step.output[:2000]) if is_shell(step.tool) else None
    script = _ps_script(step)
    if step.success or m is None or not _BARE_BOUND.search(script):
        return None
    words = set(_WORD.findall(script))
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)):
            continue
        again = _ps_script(later)
        if ".." not in again or _BARE_BOUND.search(again):
            continue
        if len(words & set(_WORD.findall(again))) * 2 < len(words):
            continue
        q = quote_error(f"does not contain a method named {m.group(1)}", 8)
        text = (
            "In PowerShell the range operator .. binds tighter than + and - "
            f"('{q}'): write $lines[($start-1)..$end], or compute the bounds first."
        )
        fnd = _finding(
            "range_first", "powershell", "global", text, ("powershell", ".."), q, avoid=[]
        )
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} wrote a range bound as bare arithmetic; call {j + 1} did not"
        return ShellFix(i, j, (), fnd, why)
    return None


#: zsh's ``.`` not finding a file named without a slash: "(eval):.:1: no such file or
#: directory: config.env" (it looks the name up on $path, never in the folder).
_DOT_MISSING = re.compile(r"(?m)^(?:\(eval\)|zsh):\.:\d+: no such file or directory: (\S+)$")


def _dot_path(t: Trajectory, i: int) -> ShellFix | None:
    """``dot_path``: zsh's ``. NAME`` (a name with no slash) failed "no such file or
    directory: NAME" although NAME was in the call's folder: within :data:`WINDOW` calls
    ``. ./NAME``, or ``.`` (``source``) given NAME's path in that folder, worked. zsh
    looks such a name up on $path only."""
    step = t.steps[i]
    m = _DOT_MISSING.search(step.output[-2000:]) if is_shell(step.tool) else None
    name = m.group(1) if m else ""
    if step.success or not name or "/" in name:
        return None
    if not re.search(rf"(?:^|[;&|]\s*)\.\s+{re.escape(name)}(?:\s|$)", _line(step)):
        return None
    here = _call_folder(t, i).replace("\\", "/")
    ways = {f"./{name}", f"{here}/{name}"} if here else {f"./{name}"}
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)):
            continue
        got = next(
            (
                w
                for w in ways
                if re.search(rf"(?:^|[;&|]\s*)(?:\.|source)\s+['\"]?{re.escape(w)}", _line(later))
            ),
            None,
        )
        if got is None:
            continue
        q = quote_error(f"no such file or directory: {name}", 8)
        text = (
            f"The Bash tool runs zsh here: '. {name}' looks the name up on PATH, not in the "
            f"folder ('{q}'): source ./{name} or its full path."
        )
        fnd = _finding("dot_path", "zsh", "machine", text, ("zsh", f"./{name}"), q, avoid=[])
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} sourced {name} by its bare name; call {j + 1} sourced {got}"
        return ShellFix(i, j, (), fnd, why)
    return None


#: A program handed a wildcard that no shell expanded, on Windows: rg's "IO error for
#: operation on src\\X\\*.cs: ... (os error 123)" (the name's syntax is wrong).
_UNEXPANDED = re.compile(
    r"(?m)^([\w.-]+): ([^\n:]*[*?][^\n:]*): (?:IO error|[^\n]*\(os error 123\))"
)


def _windows_glob(t: Trajectory, i: int) -> ShellFix | None:
    """``windows_glob``: a program got a wildcard path whole (``rg PATTERN src\\X\\*.cs``:
    PowerShell expands no wildcard for a program, and Windows refuses the name, "os error
    123"), and within :data:`WINDOW` calls the same program given the wildcard's folder,
    or files the wildcard matches, worked: pass the folder (and a filter of the program's
    own, ``-g '*.cs'``) or the files."""
    step = t.steps[i]
    m = _UNEXPANDED.search(step.output[:3000]) if is_shell(step.tool) else None
    # read whatever the view says of the call: rg's exit status 1 reads as "no match"
    if m is None or "os error 123" not in step.output[:3000]:
        return None
    program, glob = m.group(1), m.group(2).replace("\\", "/")
    folder = posixpath.dirname(glob)
    if not folder or any(ch in folder for ch in "*?"):
        return None
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)):
            continue
        c = next((x for x in _commands(later) or () if x.program == program), None)
        paths = [o.replace("\\", "/").rstrip("/") for o in c.operands] if c else []
        if not (folder in paths or any(fnmatch.fnmatch(p, glob) for p in paths)):
            continue
        # one text for every wildcard, so that Stage 3 merges them
        q = "os error 123"
        known = programs.get(program)
        opt = next((o for o in ("-g", "--include") if known and o in known.pattern_options), "")
        how = f"pass the folder and filter with {opt} GLOB" if opt else "pass the folder"
        text = (
            f"In this Windows shell a wildcard path reaches {program} unexpanded ('{q}'): "
            f"{how}, or name the files."
        )
        fnd = _finding("windows_glob", program, "machine", text, (program, "wildcard"), q, avoid=[])
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} gave {program} the wildcard {glob}; call {j + 1} gave it {folder}"
        return ShellFix(i, j, (), fnd, why)
    return None


#: Git Bash's rewrite of an argument starting with ``/`` into a path under its own install
#: folder (``/etc/odoo/odoo.conf`` reaching the program as
#: ``C:/Program Files/Git/etc/odoo/odoo.conf``): MSYS's path conversion.
_GIT_INSTALL_PATH = re.compile(r"[A-Za-z]:/Program Files/Git(/[^\s'\"`,;]*)")
#: What turns that conversion off for a command (MSYS's own variables).
_NO_PATHCONV = re.compile(r"\b(?:MSYS_NO_PATHCONV=1|MSYS2_ARG_CONV_EXCL=\S+)")


def _msys_path(t: Trajectory, i: int) -> ShellFix | None:
    """``msys_path``: a Bash call's program reported a path under Git's install folder
    (``C:/Program Files/Git/etc/odoo/odoo.conf``) that the line gave as a POSIX path
    (``/etc/odoo/odoo.conf``): Git Bash converted the argument before the program (a
    container's, ``docker exec``) saw it. Within :data:`WINDOW` calls the same command on
    the same path, run by the PowerShell tool or with the conversion turned off
    (``MSYS_NO_PATHCONV=1``), worked."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool) or "powershell" in step.tool.lower():
        return None
    m = _GIT_INSTALL_PATH.search(step.output[:3000])
    path = m.group(1).rstrip("/") if m else ""
    line = _line(step)
    words = {w.strip("'\"").rstrip("/") for w in line.split()}
    if len(path) < 2 or path not in words:
        return None
    ran = next((c for c in _commands(step) or () if path in {w.rstrip("/") for w in c.words}), None)
    if ran is None:
        return None
    # the later call ran the same command (``docker exec``), not another on the path
    same = re.compile(r"(?<![\w.-])" + r"\s+".join(map(re.escape, _intent(ran).split())) + r"\b")
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        said = _line(later)
        if not (later.success and is_shell(later.tool) and path in said and same.search(said)):
            continue
        off = _NO_PATHCONV.search(said)
        if "powershell" in later.tool.lower():
            how = f"the PowerShell tool ran the same {_intent(ran)}"
        elif off is not None:
            how = f"{off.group(0)} {_intent(ran)} worked"
        else:
            continue
        q = quote_error(m.group(0) if m else path, 6)
        text = (
            f"The Bash tool runs Git Bash here, which rewrites an argument starting with / "
            f"({path} became '{q}'): {how}."
        )
        fnd = _finding("msys_path", ran, "machine", text, (ran.program, "Git Bash"), q, avoid=[])
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} gave {ran.program} {path}, which Git Bash rewrote; call {j + 1} {how}"
        return ShellFix(i, j, (), fnd, why)
    return None


#: A shell's operator given as one element of an argv (``["nl", "F", "|", "sed", ...]``):
#: with no shell to read it, the program gets it as an argument.
_ARGV_OPERATORS = frozenset({"|", "||", "&&", ";", ">", ">>", "<", "2>&1", "&"})


def _argv_operator(t: Trajectory, i: int) -> ShellFix | None:
    """``argv_operator``: a shell tool's command array (Codex's ``shell``), not run by a
    shell, held a shell's operator as an element (``|``) and failed; within :data:`WINDOW`
    calls the same programs, joined by that operator in a script handed to a shell
    (``["sh", "-c", "nl -ba F | sed -n '1,80p'"]``), worked: the tool runs an array as
    it is, and a pipeline needs a shell (jacmanh-taskly-b7: nl printed its usage)."""
    step = t.steps[i]
    argv = step.params.get("command")
    if step.success or not isinstance(argv, list) or not all(isinstance(w, str) for w in argv):
        return None
    if not argv or programs.has(os.path.basename(argv[0]), Role.SHELL):
        return None
    at = next((k for k, w in enumerate(argv) if k and w in _ARGV_OPERATORS), None)
    if at is None or at + 1 >= len(argv):
        return None
    op, first, then = argv[at], os.path.basename(argv[0]), os.path.basename(argv[at + 1])
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        a2 = later.params.get("command")
        if not (later.success and isinstance(a2, list) and len(a2) >= 3):
            continue
        if not all(isinstance(w, str) for w in a2[:3]):
            continue
        shell, flag, script = a2[0], a2[1], a2[2]
        if not programs.has(os.path.basename(shell), Role.SHELL) or not re.fullmatch(
            r"-[a-z]*c", flag
        ):
            continue
        ran = [c.program for c in parse(script).commands]
        if first not in ran or then not in ran or op not in script:
            continue
        q = quote_error(outcome(step).diagnostic or step.output.strip().split("\n")[-1], 4)
        how = re.sub(r"\s+", " ", script)
        how = how if len(how) <= 36 else how[:33].rstrip() + "..."
        text = (
            f"The shell tool runs a command array without a shell: '{op}' reached {first} as "
            f"an argument ('{q}'); run {'pipelines' if op == '|' else 'such lines'} through "
            f"{shell} {flag} ({how})."
        )
        fnd = _finding("argv_operator", first, "tool", text, (first, f"{shell} {flag}"), q)
        fnd = attrs.evolve(fnd, domain=step.domain or "", detail={**fnd.detail, "avoid": []})
        why = f"call {i + 1} gave {first} '{op}' as an argument; call {j + 1} ran it in {shell}"
        return ShellFix(i, j, (), fnd, why)
    return None


#: A shell that never started, so no command of the call ran: WSL's launcher failing for
#: bash (Codex on Windows handing ``bash -lc`` to WSL with no distribution), or the
#: client's spawn of the shell refused ("EPERM: operation not permitted, uv_spawn
#: '...powershell.exe'").
_SHELL_NOT_STARTED = re.compile(
    r"WSL \(\d+\) ERROR: \w+:\d+: execvpe (?P<exe>\S+) failed|"
    r"(?:EPERM|EACCES|ENOENT)[^\n]{0,60}?\buv_spawn '(?P<spawned>[^'\n]+)'"
)


def _exe_name(path: str) -> str:
    """A program's name from its path, either OS's, without Windows' ``.exe``."""
    return re.sub(r"(?i)\.exe$", "", ntpath.basename(path))


def _runs_in(step: Step) -> str:
    """What ran call ``step``'s command: the shell an argv names first (``bash`` of
    ``["bash", "-lc", ...]``, ``pwsh``), else the client's tool (``the PowerShell tool``)."""
    argv = step.params.get("command")
    if isinstance(argv, list) and argv and isinstance(argv[0], str):
        return _exe_name(argv[0])
    return f"the {step.tool} tool"


def _shell_not_started(t: Trajectory, i: int) -> ShellFix | None:
    """``shell_start``: the shell meant to run call ``i`` never started
    (:data:`_SHELL_NOT_STARTED`), no call it ran worked in the run, and the next shell call
    that worked, within :data:`WINDOW`, ran in another (``pwsh`` after Codex's ``bash``
    went to a WSL with no distribution; the Bash tool after Claude Code's PowerShell tool
    could not spawn powershell.exe). The machine's fact: which shell starts here."""
    step = t.steps[i]
    m = _SHELL_NOT_STARTED.search(step.output[:2000]) if is_shell(step.tool) else None
    if m is None:
        return None  # whatever the view says (an rg last on the line reads exit 1 as no match)
    broken = _runs_in(step)
    exe = m.group("exe") or m.group("spawned") or ""
    name = _exe_name(exe).lower()
    if name not in (broken.lower(), step.tool.lower()):
        return None  # a program the command started failed, not the shell that runs it
    started = [
        x
        for x in t.steps
        if x.success and is_shell(x.tool) and not _SHELL_NOT_STARTED.search(x.output[:2000])
    ]
    if any(_runs_in(x) == broken for x in started):
        return None  # it started for another call: not this machine's shell
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)):
            continue
        other = _runs_in(later)
        if other == broken:
            return None
        q = quote_error(m.group(0), 8)
        argv = later.params.get("command")
        opts = [str(w) for w in argv[1:-1]] if isinstance(argv, list) else []
        ran = " ".join([other, *opts])  # pwsh -NoLogo -NoProfile -Command, its script left out
        text = f"On this machine {broken} does not start ('{q}'): {ran} ran the commands instead."
        fnd = _finding("shell_start", broken, "machine", text, (broken, other), q, avoid=[])
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1}'s shell ({broken}) never started; call {j + 1} ran in {other}"
        return ShellFix(i, j, (), fnd, why)
    return None


#: Python importing a module that was the script itself: "AttributeError: module
#: 'calendar' has no attribute 'TextCalendar'", or "partially initialized module 'x'".
_SHADOWED = re.compile(
    r"AttributeError: (?:partially initialized )?module '(\w+)' has no attribute|"
    r"partially initialized module '(\w+)'"
)


def _shadowed_module(t: Trajectory, i: int) -> ShellFix | None:
    """``shadowed``: a Python script named like the module it imports (``calendar.py``
    doing ``import calendar``) imported itself: its traceback runs through a frame of
    ``.../calendar.py`` and ends "module 'calendar' has no attribute" (or "partially
    initialized module"); within :data:`WINDOW` calls a shell call renamed that file (``mv
    .../calendar.py .../cal-widget.py``) and worked: name such a script otherwise."""
    step = t.steps[i]
    # read whatever the view says of the call: a script's traceback counts as the code's
    out = step.output[-4000:] if is_shell(step.tool) else ""
    m = _SHADOWED.search(out)
    if m is None:
        return None
    name = m.group(1) or m.group(2)
    frame = re.search(rf'File "([^"\n]*[\\/]{re.escape(name)}\.py)", line \d+', out)
    if frame is None or not re.search(rf"\bimport [^\n]*\b{re.escape(name)}\b", out):
        return None
    script = frame.group(1).replace("\\", "/")
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)):
            continue
        moved = [
            c
            for c in _commands(later) or ()
            if programs.has(c.program, Role.MOVES)
            and c.operands
            and c.operands[0].replace("\\", "/").rsplit("/", 1)[-1] == f"{name}.py"
            and script.endswith(c.operands[0].replace("\\", "/").lstrip("~").lstrip("."))
        ]
        if not moved:
            continue
        q = quote_error(f"module {name} has no attribute", 8)
        ran = next(
            (
                c.program
                for c in _commands(step) or ()
                if programs.is_interpreter(c.program)
                and any(o.endswith(f"{name}.py") for o in c.operands)
            ),
            "python",
        )
        text = (
            f"A Python script named like a standard module ({name}.py) shadows it: under {ran} "
            f"its own 'import {name}' loads the script itself ('{q}'): rename the script."
        )
        fnd = _finding("shadowed", "python", "global", text, ("python", f"{name}.py"), q, avoid=[])
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} ran {name}.py, which imported itself; call {j + 1} renamed it"
        return ShellFix(i, j, (), fnd, why)
    return None


#: zsh's =command expansion failing: "(eval):1: ==SUB=== not found", "zsh: == not found".
_EQUALS = re.compile(r"(?m)^(?:\(eval\)|zsh):(?:\d+:)? (=\S*) not found$")


def _equals_word(t: Trajectory, i: int) -> ShellFix | None:
    """``equals``: zsh read a word that starts with ``=`` (``echo ===SUB===`` as a
    separator) as =command expansion and failed ("==SUB=== not found": the word less its
    first ``=``), and within :data:`WINDOW` calls a command the line held after that word
    ran alone, with no such word, and worked: quote the word, or leave it out."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool):
        return None
    m = _EQUALS.search(step.output[-3000:])
    line = _line(step)
    if m is None:
        return None
    word = "=" + m.group(1)
    at = re.search(rf"(?<![\w'\"=]){re.escape(word)}(?![\w'\"=])", line)
    if at is None or (word == "==" and _compares(line)):
        return None  # [ "$a" == b ]: a comparison, never a word to leave out (zsh takes =)
    after = {c.text for c in parse(line[at.end() :].lstrip(" ;&|")).commands}
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        if not (later.success and is_shell(later.tool)) or re.search(r"(?:^|\s)=", _line(later)):
            continue
        ran = {c.text for c in _commands(later) or ()}
        if not ran & after and not any(_same_text(a, r) for a in after for r in ran):
            continue
        q = quote_error(f"{m.group(1)} not found", 6)
        text = (
            f"The Bash tool runs zsh here: a word that starts with = ({word}) is =command "
            f"expansion and fails ('{q}'), cutting the line short: quote it ('{word}') or "
            "leave it out."
        )
        fnd = _finding("equals", "zsh", "machine", text, ("zsh", word), q, avoid=[])
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} wrote {word} unquoted in zsh; call {j + 1} ran what followed alone"
        return ShellFix(i, j, (), fnd, why)
    return None


def _compares(line: str) -> bool:
    """Whether a command of ``line`` is a test (``[ A == B ]``, ``test A == B``, after
    ``if`` or ``while`` perhaps) that compares with ``==``."""
    return any(
        re.match(r"\s*(?:(?:if|while|until|elif|then|do|else|!)\s+)*(?:\[|test)\s", part)
        and re.search(r"(?<!\S)==(?!\S)", part)
        for part in re.split(r"[;&|\n]", line)
    )


def _same_text(a: str, b: str) -> bool:
    """Whether two commands' texts are one command with a folder written two ways (``git
    -C sub status`` and ``git -C /w/app/sub status``): the same words but for the path's
    head."""
    x, y = a.split(), b.split()
    return len(x) == len(y) and all(p == q or q.endswith("/" + p) for p, q in zip(x, y))


def _bare_name(t: Trajectory, i: int) -> ShellFix | None:
    """``bare_name``: PowerShell did not find a program called by its bare name
    (``speckit run x``: "The term 'speckit' is not recognized"), and within :data:`WINDOW`
    calls the same line with the program called from the current folder (``.\\speckit.cmd
    run x``, ``& ./speckit.ps1 run x``) ran it: it worked, or failed in its own code (its
    output names the program's file, ``speckit.py``, and no longer says "not
    recognized"). PowerShell runs nothing from the current folder without a path."""
    step = t.steps[i]
    if step.success or not is_shell(step.tool):
        return None
    m = _PS_NOT_FOUND.search(step.output[:3000])
    name = (m.group(1) or m.group(2)) if m else ""
    script = _ps_script(step)
    head = re.match(rf"\s*(?:&\s*)?{re.escape(name)}(?![\w.\\/-])(?P<rest>[^\n;|]*)", script)
    if not name or head is None or is_cmdlet(name) or not re.fullmatch(r"[\w-]+", name):
        return None
    rest = head.group("rest").strip()
    args = rf"\s+{re.escape(rest)}" if rest else ""  # the same arguments after it
    here = re.compile(
        rf"\s*(?:&\s*)?['\"]?\.[\\/](?P<file>{re.escape(name)}(?:\.\w+)?)['\"]?"
        rf"{args}\s*(?:$|[;|])",
        re.IGNORECASE,
    )
    for j in range(i + 1, min(len(t.steps), i + 1 + WINDOW)):
        later = t.steps[j]
        got = here.match(_ps_script(later)) if is_shell(later.tool) else None
        if got is None:
            continue
        out = later.output[:3000]
        ran = later.success or (
            "is not recognized" not in out
            and re.search(rf"(?i)(?<![\w.-]){re.escape(name)}\.\w+", out) is not None
        )
        if not ran:
            return None  # not found that way either: where it is, the run did not show
        how = f".\\{got.group('file')}"
        q = quote_error(f"The term {name} is not recognized", 8)
        text = (
            f"PowerShell does not run a program in the current folder by its bare name "
            f"('{q}'): run it as {how}."
        )
        fnd = _finding("bare_name", name, "project", text, (name, how), q, avoid=[])
        fnd = attrs.evolve(fnd, domain=step.domain or "")
        why = f"call {i + 1} ran {name} by its bare name; call {j + 1} ran {how} from the folder"
        return ShellFix(i, j, (), fnd, why)
    return None


_READERS = (
    _sleep_refused,
    _missing_filter,
    _env,
    _hidden,
    _hidden_search,
    _literal_glob,
    _literal_path,
    _ps_separator,
    _ps_heredoc,
    _ansi_script,
    _ps7_operator,
    _ps_missing,
    _bare_name,
    _ps_not_started,
    _narrow,
    _backslashes,
    _trailing_backslash,
    _environment,
    _import_path,
    _windows_commands,
    _workdir,
    _script_elsewhere,
    _assembly_loaded,
    _interpreted,
    _read_only_name,
    _ps_read_only,
    _equals_word,
    _patterns_as_paths,
    _bre_group,
    _range_first,
    _windows_glob,
    _msys_path,
    _argv_operator,
    _shell_not_started,
    _shadowed_module,
    _inline_script,
    _exclusive_params,
    _line_endings,
    _drive_paths,
    _console_encoding,
    _read_elsewhere,
    _case_differs,
    _under_folder,
    _runner_replaced,
)
#: The readers that take the run's index (:class:`_PathIndex`).
_INDEXED: tuple[Callable[[Trajectory, int, _PathIndex], ShellFix | None], ...] = (
    _case_differs,
    _under_folder,
)


#: The files the calls of a session's earlier runs that worked named (:func:`paths_used`),
#: asked for only when a run's "where is it" fact needs them (:func:`used_before`).
Earlier = Callable[[], Iterable[str]]


def find_shell_fixes(t: Trajectory, earlier: Earlier | None = None) -> list[ShellFix]:
    """The shell corrections of one run (as :func:`agentmem.agents.learning_view` sees
    it), by failed call. ``earlier``: the files the session's earlier runs used
    (:func:`paths_used`): a path used before is a slip here too (:func:`used_before`)."""
    steps = t.steps
    out: list[ShellFix] = []
    used: set[int] = set()
    for i, step in enumerate(steps):
        if step.success or not is_shell(step.tool):
            continue
        cut = timed_out(step) or own_timeout(step.output.lstrip().split("\n", 1)[0])
        if _not_paired(step, cut):
            continue
        first = _read_first(t, i)
        if first is not None:
            used.add(first.fixed)
            out.append(first)
            continue
        if (failed := _failed_command(step)) is None:
            continue
        f, diag = failed
        missing = _missing_program(f, diag, step.output) is not None
        between: list[Command] = []
        idx: list[int] = []
        for j in range(i + 1, min(len(steps), i + 1 + WINDOW)):
            later = steps[j]
            cmds = _commands(later) if is_shell(later.tool) else None
            if cmds is None:
                continue
            c = _retry(
                f, _no_looks(f, cmds) if later.success else cmds, missing, _line(step), _line(later)
            )
            if c is None:
                if later.success:
                    between += _no_looks(f, _as_between(later))
                    idx.append(j)
                continue
            if not later.success:
                if missing:
                    continue  # still not found, or found and failing: where it is found decides
                break  # the retry failed too: a later pair may teach it
            if j in used or not _proven(later, c, diag):
                break
            done = [*between, *_before(cmds, c, step, diag)]
            fnd = _paired(step, later, f, c, diag, cut, done, t.task)
            if fnd is not None:
                fnd = attrs.evolve(fnd, domain=step.domain or "")
                used.add(j)
                out.append(
                    ShellFix(
                        i,
                        j,
                        tuple(idx),
                        fnd,
                        f"call {i + 1} {short(f)} failed ('{quote_error(diag, 8)}'); call "
                        f"{j + 1} {short(c)} worked ({fnd.detail['change']})",
                    )
                )
            break
        if (not out or out[-1].failed != i) and not cut:
            advised = _advised(t, i, f, diag)
            if advised is not None:
                used.add(advised.fixed)
                out.append(advised)
    return _placed(t, _kept(t, _read_all(t, out), earlier))


def _paired(
    step: Step,
    later: Step,
    f: Command,
    c: Command,
    diag: str,
    cut: bool,
    between: Sequence[Command],
    task: str,
) -> Finding | None:
    """What failed call ``step`` (its command ``f``, diagnostic ``diag``; ``cut``: a
    refusal framed as a time-out) and the successful ``later`` call that retried it with
    ``c`` teach: an escalation, a terminal, a dropped terminal flag, else :func:`compare`
    with the commands that worked ``between``."""
    esc = escalates(later.params)
    same = _own_words(c) == _own_words(f)
    if esc is not None and escalates(step.params) is None and same:
        return _escalated(f, diag, step, esc, later.params[esc])
    if cut:  # a refusal framed as a time-out: only an escalation past it teaches
        return None
    if later.params.get(TTY) is True and step.params.get(TTY) is not True:
        # kept in the view only after a failure that asked for a terminal
        return _terminal(f, diag) if same else None
    if wants_terminal(diag) and (dropped := _tty_flag_dropped(f, c)):
        backgrounded = later.params.get("run_in_background") is True or (
            _BACKGROUNDED.search(later.output[:500]) is not None
        )
        return None if backgrounded else _no_terminal(f, dropped, diag)
    return compare(f, c, diag, step.output, between, task, _line(step), _line(later))


def _read_first(t: Trajectory, i: int) -> ShellFix | None:
    """What failed call ``i`` teaches read before any pairing: the workdir's slip
    (:func:`_doubled_workdir`), never where the project keeps a file, and the machine's
    container name (:func:`_container_name`), never a value of the project's command, and
    zsh's ``.`` of a bare name (:func:`_dot_path`), never where the project keeps it."""
    return _doubled_workdir(t, i) or _container_name(t, i) or _dot_path(t, i)


def _read_all(t: Trajectory, out: list[ShellFix]) -> list[ShellFix]:
    """``out`` and what each reader (:data:`_READERS`, in order) finds at a failed call
    that none before it explained; the path shapes share one index of the run."""
    taken = {x.failed for x in out}
    ix = _PathIndex(t)  # for this call of find_shell_fixes only
    for read in _READERS:
        indexed = next((f for f in _INDEXED if f is read), None)
        todo = [i for i in range(len(t.steps)) if i not in taken]
        out += [h for i in todo if (h := indexed(t, i, ix) if indexed else read(t, i))]
        taken = {x.failed for x in out}
    return out


def _not_paired(step: Step, cut: bool) -> bool:
    """Whether a failed shell call is no failure a later call can correct: the tool (or
    the program) ran out of time and nothing was refused (``cut``); the shell refused the
    line, so none of its commands ran (a separator); the tool refused it for its leading
    sleep (only the sleep rule reads it)."""
    if cut and refusal_line(step.output) is None:
        return True
    return bool(_PS_SEPARATOR.search(step.output[:2000])) or _blocked_sleep(step) is not None


def _kept(t: Trajectory, out: list[ShellFix], earlier: Earlier | None = None) -> list[ShellFix]:
    """``out`` less the run's own doing, a slip of its folder or of a path it or its
    session's earlier runs (``earlier``) had used (:func:`used_before`), a policy bypassed
    (:func:`overrides_policy`), a place inside installed code (:func:`in_installed_code`),
    a scratch file or a walk up to a manifest (:func:`scratch_or_walked_up`), and a file
    name its own listings show twice (the listings read once, and only when a
    location fact needs them; so too the paths the run used, when a fact of a right path
    needs them)."""
    good = any(_names_good(x) for x in out)
    used = _first_used(t) if good else {}
    if good and earlier is not None:  # used before this run: before any of its calls
        used = {**dict.fromkeys(earlier(), -1), **used}
    kept = [
        x
        for x in out
        if not own_doing(t, x)
        and not cwd_slip(t, x)
        and not overrides_policy(t, x)
        and not used_before(t, x, used)
        and not in_installed_code(t, x)
        and not scratch_or_walked_up(t, x)
        and not guessed_in_source_tree(x)
    ]
    located = any(x.finding.detail.get("change") == "location" for x in kept)
    twice = _names_listed_twice(t) if located else frozenset()
    return [x for x in kept if not named_twice(t, x, twice)]


def in_installed_code(t: Trajectory, x: ShellFix) -> bool:
    """Whether a ``location`` lesson places a file inside installed or vendored code
    (:data:`_VENDORED`: ``deps/ash/lib/...``, ``node_modules/x/...``): that layout is the
    dependency's, of its version, found again by one search; no fact of the project (a
    wave 9 reader found two such lessons, from an agent exploring a library's source).
    Read below the session's folder: the folders that hold the project itself
    (``/home/me/vendor/app``) are no dependency's."""
    d = x.finding.detail
    good = d.get("good")
    if d.get("change") != "location" or not isinstance(good, str):
        return False
    here = t.meta.get("cwd") or t.meta.get("project")
    if isinstance(here, str) and here:
        top = posixpath.normpath(here.replace("\\", "/")).rstrip("/") + "/"
        good = good.replace("\\", "/")
        good = good[len(top) :] if good.startswith(top) else good
    return _vendored(good)


#: Folders of scratch files: the system's and a user's temporary folders.
_SCRATCH = re.compile(
    r"^(?:/private)?/(?:tmp|var/tmp|var/folders|dev/shm)/|^/data/data/com\.termux/files/usr/tmp/|"
    r"^[A-Za-z]:/(?:Windows/Temp|Users/[^/]+/AppData/Local/Temp)/|^/[a-z]/Users/[^/]+/AppData/Local/Temp/",
    re.IGNORECASE,
)


#: Files a tool looks for in the folder it runs in and then in each folder above (a build
#: tool's manifest, a runner's or a linter's configuration, the repository itself): the
#: walk up to one is a probe (:func:`scratch_or_walked_up`). Compared without case.
_WALKED_UP = frozenset(
    name.lower()
    for name in (
        "go.mod", "go.work", "package.json", "tsconfig.json", "jsconfig.json", "deno.json",
        "deno.jsonc", "pnpm-workspace.yaml", "Cargo.toml", "pyproject.toml", "setup.py",
        "setup.cfg", "tox.ini", "pytest.ini", "conftest.py", "Gemfile", "composer.json",
        "pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle",
        "settings.gradle.kts", "mix.exs", "Package.swift", "pubspec.yaml", "CMakeLists.txt",
        "Makefile", "justfile", "flake.nix", "WORKSPACE", "MODULE.bazel", "global.json",
        "Directory.Build.props", "nuget.config", "docker-compose.yml", "compose.yaml",
        ".git", ".gitignore", ".editorconfig", ".env", ".tool-versions", ".nvmrc",
        ".python-version", ".prettierrc", ".eslintrc.json", "eslint.config.js",
        "CLAUDE.md", "AGENTS.md",
    )
)  # fmt: skip


def scratch_or_walked_up(t: Trajectory, x: ShellFix) -> bool:
    """Whether a ``location`` lesson ("X is at P; Q fails") is no fact of the project:
    either path is a scratch file outside the run's folder (:data:`_SCRATCH`:
    ``/tmp/test_main.c``, a file the run made or guessed among its own temporary files,
    which a later session does not have; a project that itself lies in a temporary folder,
    ``/tmp/app``, keeps its files' facts), or P is the same manifest in a folder above
    Q's (:data:`_WALKED_UP`: ``services/api/go.mod`` failed, the repository's ``go.mod``
    worked): the walk up to the nearest manifest is a probe, the way a build tool finds
    it, not a path the agent lacked. Any other file found higher up than guessed
    (``src/utils/helpers.py`` failed, ``src/helpers.py`` worked) is where the project
    keeps it, and still teaches. Read on blind set 11's first try, where both were the
    key's traps (exploration)."""
    d = x.finding.detail
    good, bad = d.get("good"), d.get("bad")
    if d.get("change") != "location" or not isinstance(good, str) or not isinstance(bad, str):
        return False
    cwd = t.meta.get("cwd") or t.meta.get("project")
    cwd = cwd if isinstance(cwd, str) else None
    want = readings(good, t.steps[x.fixed], cwd)
    failed = readings(bad, t.steps[x.failed], cwd)
    roots = [
        posixpath.normpath(r.replace("\\", "/")).lower()
        for r in (t.meta.get("cwd"), t.meta.get("project"))
        if isinstance(r, str) and r
    ]

    def outside(p: str) -> bool:  # not a file of the run's own folder
        low = p.lower()
        return not any(low == r or low.startswith(r.rstrip("/") + "/") for r in roots)

    if any(_SCRATCH.search(p) and outside(p) for p in want | failed):
        return True
    return any(
        posixpath.basename(g) == posixpath.basename(b)
        and posixpath.basename(g).lower() in _WALKED_UP
        and posixpath.dirname(b).startswith(posixpath.dirname(g).rstrip("/") + "/")
        for g in want
        for b in failed
    )


#: The file name endings of program source code: where one such file sits is the code's
#: layout (:func:`guessed_in_source_tree`).
_SOURCE_CODE = frozenset(
    "." + e
    for e in (
        "js jsx mjs cjs ts tsx mts cts py pyi go rs java kt kts scala swift m mm rb php c cc "
        "cpp cxx h hh hpp cs fs vue svelte astro dart ex exs erl lua zig nim hs ml clj cljs "
        "r jl sol"
    ).split()
)


#: A configuration file's name before its ending (``vite.config``, ``.eslintrc``,
#: ``jest.setup``): its place is the project's, not the code's layout.
_CONFIG_NAME = re.compile(
    r"(?i)^\.|[.-](?:config|conf|rc|setup)$|^(?:config|settings|setup|conftest)$"
)


def guessed_in_source_tree(x: ShellFix) -> bool:
    """Whether a ``location`` lesson places one file of program source code ("In this
    project QuickFilters.jsx is at .../filters/QuickFilters.jsx") that the agent guessed
    inside the tree (``.../components/QuickFilters.jsx``): where one module of the code
    sits is its layout, which the agent explores afresh for each task and a refactor
    changes; a lesson of it in every prompt of the project is noise (the key labels such
    guesses traps, exploration, in both halves). A wrong path that is the right one
    without its leading folders (``src/app/page.tsx`` for ``web/src/app/page.tsx``: the
    project's code lives in a subfolder, so every path a plan names is off) still teaches,
    as does a document's or a configuration's place (``docs/architecture.md``)."""
    d = x.finding.detail
    good, bad = d.get("good"), d.get("bad")
    if d.get("change") != "location" or not isinstance(good, str) or not isinstance(bad, str):
        return False
    good, bad = good.replace("\\", "/"), bad.replace("\\", "/").removeprefix("./")
    stem, ending = posixpath.splitext(posixpath.basename(good))
    if ending.lower() not in _SOURCE_CODE or _CONFIG_NAME.search(stem):
        return False
    if good.endswith("/" + bad):
        return False
    # two absolute paths: the wrong one below the folders both share (/w/app/src/app/...
    # for /w/app/web/src/app/...) is the right one without its leading folders, and still
    # names a folder (not /w/app/src/Q.jsx for /w/app/src/filters/Q.jsx)
    g, b = good.split("/"), bad.split("/")
    common = (
        len(posixpath.commonprefix([g[:-1], b[:-1]]))
        if g[0] == b[0] and re.fullmatch(r"|[A-Za-z]:", g[0])
        else 0
    )
    rest = "/".join(b[common:])
    return not (common and "/" in rest and "/".join(g[common:]).endswith("/" + rest))


def _names_good(x: ShellFix) -> bool:
    """Whether ``x`` is a "where is it" fact with a right path (:func:`used_before`)."""
    d = x.finding.detail
    return d.get("change") in ("location", "operand", "case") and isinstance(d.get("good"), str)


def _first_used(t: Trajectory) -> dict[str, int]:
    """{each file a call that worked named (:func:`readings`): the first such call}: a
    shell command's operands, or a client tool's file (Read's ``file_path``)."""
    cwd = t.meta.get("cwd") or t.meta.get("project")
    cwd = cwd if isinstance(cwd, str) else None
    first: dict[str, int] = {}
    for k, s in enumerate(t.steps):
        if not s.success:
            continue
        if is_shell(s.tool):
            words = [w for c in _commands(s) or () for w in c.operands]
        else:
            found = spec_for(s.tool)
            value = s.params.get(found[1].path) if found and found[1].path else None
            words = [value] if isinstance(value, str) else []
        for w in words:
            for r in readings(w, s, cwd):
                first.setdefault(r, k)
    return first


def paths_used(t: Trajectory) -> frozenset[str]:
    """The files the calls of ``t`` that worked named, resolved (:func:`_first_used`)."""
    return frozenset(_first_used(t))


def used_before(t: Trajectory, x: ShellFix, used: dict[str, int] | None = None) -> bool:
    """Whether a "where is it" fact's right path (``location``: "X is at P"; ``operand``:
    "run it with P, not Q"; ``case``: "the folder is 'P', not 'p'") was the path of a
    call that worked *before* the failed one: a shell command's operand, or a client
    tool's file (Read's ``file_path``), the two compared once resolved
    (:func:`readings`). The agent knew P and slipped once (``sed specs/001-a/tasks.md``
    worked, then ``specs/001-b/tasks.md``, then ``001-a`` again): the pair records a
    slip, not a fact it lacked, and teaches nothing. So does a failed path that names the
    same file in a sibling folder when another file of P's folder had worked before (the
    folder's name slipped: ``rg ... specs/001-a/spec.md`` worked, then
    ``specs/001-b/tasks.md`` failed). A path first reached after the failure, or another
    file of P's folder used before a failed path of another depth, still teaches.
    ``used``: the run's :func:`_first_used`, worked out here when not given, with the
    files its session's earlier runs used at -1, before any call of the run (the agent
    used ``specs/001-a/`` in the session's first prompt and slipped to ``001-b`` in a
    later one)."""
    if not _names_good(x):
        return False
    d = x.finding.detail
    cwd = t.meta.get("cwd") or t.meta.get("project")
    cwd = cwd if isinstance(cwd, str) else None
    want = readings(str(d["good"]), t.steps[x.fixed], cwd)
    if not want:
        return False
    used = _first_used(t) if used is None else used
    if any(used.get(r, x.failed) < x.failed for r in want):
        return True
    # the same file name in a sibling folder (specs/001-b/tasks.md for specs/001-a/tasks.md):
    # a slip of a folder's name when another file of the right folder had worked before
    bad = d.get("bad")
    if d.get("change") == "case" or not isinstance(bad, str):
        return False
    failed = readings(bad, t.steps[x.failed], cwd)
    known = {posixpath.dirname(g) for g in want if any(_sibling(b, g) for b in failed)}
    return bool(known) and any(
        k < x.failed and posixpath.dirname(r) in known for r, k in used.items()
    )


def _sibling(a: str, b: str) -> bool:
    """Whether two paths name one file name in two folders of one parent: as deep, the
    same but for one folder (``specs/001-b/tasks.md``, ``specs/001-a/tasks.md``)."""
    pa, pb = a.split("/"), b.split("/")
    if len(pa) != len(pb) or len(pa) < 2 or pa[-1] != pb[-1]:
        return False
    return sum(1 for x, y in zip(pa[:-1], pb[:-1]) if x != y) == 1


def overrides_policy(t: Trajectory, x: ShellFix) -> bool:
    """Whether the call that worked (or a call between, a prerequisite) got past a policy
    someone else set, which the failed call did not override: a branch's protection
    (``gh pr merge --admin``), a hook (``git commit --no-verify``), a remote's refusal to
    lose history (``git push --force``): :func:`agentmem.agents.risk.bypasses`. That is
    no fix, and one user's consent to it is no rule for another run: nothing is learned,
    not even a lesson held for a person. A risky fix that is a fix on that machine
    (``--break-system-packages``, ``-auto-approve``, an escalation) is still learned, held."""
    if risk.bypasses(_line(t.steps[x.failed])):
        return False
    return any(risk.bypasses(_line(t.steps[k])) for k in (x.fixed, *x.between))


def _placed(t: Trajectory, out: list[ShellFix]) -> list[ShellFix]:
    """``out``'s findings with their paths relative to the run's folder, and its project
    and its machine recorded when known (Stage 3 merges findings of one project only, and
    machine facts of one machine only), in failed-call order."""
    roots = [r for r in (t.meta.get("cwd"), t.meta.get("project")) if isinstance(r, str) and r]
    out = [attrs.evolve(x, finding=relative_to(x.finding, roots)) for x in out]
    where = {k: v for k in ("project", "machine") if isinstance(v := t.meta.get(k), str) and v}
    if where:
        out = [
            attrs.evolve(x, finding=attrs.evolve(x.finding, detail={**x.finding.detail, **where}))
            for x in out
        ]
    return sorted(out, key=lambda x: x.failed)


#: The changes whose lesson states a fact of the project's paths ("X is at P", "git add
#: fails on P"): a fact the run's own calls may have made.
_PATH_FACTS = frozenset({"location", "dropped", "forced", "hidden", "operand"})


def _lesson_paths(f: Finding) -> set[str]:
    """The file names a path fact's lesson rests on (its failed and found paths)."""
    d = f.detail
    words = [d.get("bad"), d.get("good"), *f.facts[1:]]
    return {
        os.path.basename(w.rstrip("/"))
        for w in words
        if isinstance(w, str) and not w.startswith("-") and ("/" in w or "." in w)
    } - {"", ".", ".."}


def _moves(c: Command) -> bool:
    return programs.has(c.program, Role.MOVES) or Role.MOVES in programs.sub_roles(
        c.program, c.subcommand
    )


#: A patch's header naming a file it adds, changes or removes, or the file it moves one to
#: (Codex's apply_patch, as a tool or in a command's here-document).
_PATCH_FILE = re.compile(
    r"^\*\*\* (Add File|Update File|Delete File|Move to): *(\S.*?)\s*$", re.MULTILINE
)
#: Redirections that write a file (``> out/x``, ``>> log``, ``&> all``).
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>"})
#: The changes whose lesson says where a file is (a location, the operand that worked, a
#: hidden folder): a file the run made there is the run's doing, not the project's.
_WHERE_FACTS = frozenset({"location", "operand", "hidden"})


def _base(path: str) -> str:
    return os.path.basename(path.rstrip("/").replace("\\", "/"))


def _patched(text: str) -> tuple[set[str], set[str]]:
    """(removed, made) file paths of a patch, as written: ``Delete File`` removes, ``Add
    File`` and ``Update File`` make, ``Update File`` then ``Move to`` removes the one and
    makes the other."""
    gone: set[str] = set()
    made: set[str] = set()
    last = ""
    for head, path in _PATCH_FILE.findall(text):
        name = path.strip()
        if head == "Delete File":
            gone.add(name)
        elif head == "Move to":
            gone.add(last)
            made.add(name)
        else:
            made.add(name)
        last = name
    return gone - {""}, made


#: The programs that make files at their destination only, their sources read: ``cp a b``
#: and ``ln -s a b`` make ``b`` (or ``b/a`` when ``b`` is a folder), ``-t DIR`` makes ``DIR/a``.
_COPIES = frozenset({"cp", "ln"})


def _made_by(c: Command) -> list[str]:
    """The paths a command that creates files (:attr:`Role.CREATES`) makes: each operand of
    ``touch``, ``mkdir`` or ``tee``; only the destination of a copy or a link
    (:data:`_COPIES`: the last operand, perhaps a folder the sources go into, or the folder
    of ``-t DIR``/``--target-directory=DIR``; one operand alone: its name, here), never a
    source it read."""
    if c.program not in _COPIES:
        return list(c.operands)
    args = list(c.args)
    target = next((a.split("=", 1)[1] for a in args if a.startswith("--target-directory=")), None)
    if target is None and "-t" in args and args.index("-t") + 1 < len(args):
        target = args[args.index("-t") + 1]
    if target is not None:
        return [posixpath.join(target, _base(o)) for o in c.operands if o != target]
    if len(c.operands) == 1:
        return [_base(c.operands[0])]
    *sources, dest = c.operands
    return [dest, *(posixpath.join(dest, _base(o)) for o in sources)]


def _acted_on(step: Step) -> tuple[set[str], set[str]]:
    """What a call did to files, by any means: (the names of those it removed or moved
    away, the paths of those it made or wrote, as written). A shell command that moves or
    removes (:attr:`Role.MOVES`: ``mv``, ``rm``, ``git mv``, ``git rm``: all its operands)
    or makes (:attr:`Role.CREATES`: ``touch``, ``mkdir``, ``tee``, the destination of
    ``cp`` and ``ln``: :func:`_made_by`) files, and a redirection's target; a client tool
    that writes or edits a file (Write, Edit, MultiEdit, NotebookEdit) and worked, its
    path; a patch (Codex's ``apply_patch``, as a tool or in a command), each file its
    headers name."""
    gone: set[str] = set()
    made: set[str] = set()
    found = spec_for(step.tool)
    if found is None:
        return gone, made
    spec = found[1]
    if spec.kind in (ToolKind.WRITE, ToolKind.EDIT) and step.success:
        v = step.params.get(spec.path or "file_path")
        if isinstance(v, str):
            made.add(v)
    if spec.kind in (ToolKind.PATCH, ToolKind.SHELL):
        for v in step.params.values():
            for text in v if isinstance(v, list) else [v]:
                if isinstance(text, str) and "*** " in text:
                    g, m = _patched(text)
                    gone |= {_base(x) for x in g}
                    made |= m
    if is_shell(step.tool):
        for c in _commands(step) or ():
            if _moves(c):
                gone |= {_base(o) for o in c.operands}
            if programs.has(c.program, Role.CREATES):
                made |= set(_made_by(c))
            made |= {t for op, t in c.redirects if op in _WRITES and t != "/dev/null"}
    return gone, made - {""}


def _claimed(f: Finding) -> tuple[list[str], set[str]]:
    """What a "where is it" lesson says is somewhere: (the path that worked, as written;
    the name of the hidden folder found, known by its name only)."""
    d = f.detail
    good = d.get("good")
    hidden = f.facts[2:3] if d.get("change") == "hidden" else ()
    paths = [good] if isinstance(good, str) and good else []
    return paths, {_base(w) for w in hidden if isinstance(w, str) and w} - {"", ".", ".."}


def _makes(made: str, step: Step, paths: set[str], name: str | None, cwd: str | None) -> bool:
    """Whether the path ``made`` by ``step`` is a claimed file: its readings
    (:func:`readings`) against the claimed ``paths``' readings; by file name (``name``)
    when either cannot be resolved."""
    where = readings(made, step, cwd)
    if where and paths:
        return bool(where & paths)
    return name is not None and _base(made) == name


def own_doing(t: Trajectory, x: ShellFix) -> bool:
    """Whether a path fact's failure was the run's own doing, by any means, in an earlier
    call, in the failed call itself (``mv a docs/a`` failing because a was moved there
    already) or between it and the call that worked (:func:`_acted_on`): a file its lesson
    names was moved, renamed or removed by the run (``mv``, ``rm``, ``git mv``, ``git rm``,
    a patch's ``Delete File`` or ``Move to``), or the file a "where is it" lesson says is
    somewhere was made there by the run (``touch``, ``mkdir``, the destination of ``cp``,
    a redirection, a client's Write or Edit, a patch that adds it or moves a file to it),
    the paths compared once resolved (:func:`readings`: a copy of it elsewhere, or a made
    file of its name in another folder, is not it). "In this project erd.md is at
    docs/erd.md" would then state where the agent put it, not where the project keeps it.
    Making a file does not make git ignore it: "git add fails on X, an ignored path"
    stands whoever wrote X."""
    change = x.finding.detail.get("change")
    if change not in _PATH_FACTS:
        return False
    names = _lesson_paths(x.finding)
    good, hidden = _claimed(x.finding) if change in _WHERE_FACTS else ([], set())
    if not names and not good and not hidden:
        return False
    cwd = t.meta.get("cwd") or t.meta.get("project")
    cwd = cwd if isinstance(cwd, str) else None
    fixed = t.steps[x.fixed]
    paths = {p for g in good for p in readings(g, fixed, cwd)}
    name = _base(good[0]) if good else None
    for step in t.steps[: max(x.fixed, x.failed + 1)]:
        gone, made = _acted_on(step)
        if names & gone or any(_base(m) in hidden for m in made):
            return True
        if good and any(_makes(m, step, paths, name, cwd) for m in made):
            return True
    return False


#: A path that starts at a root: POSIX ``/x``, Windows ``C:/x`` or ``C:\\x``.
_ROOTED = re.compile(r"^(?:/|[A-Za-z]:[/\\])")


def _folder_of(step: Step, cwd: str | None) -> str | None:
    """The folder a call's relative paths start in: its ``workdir`` (Codex's shell tools),
    under the run's folder when relative, else the run's folder; None when unknown."""
    w = step.params.get("workdir")
    base = cwd.replace("\\", "/") if isinstance(cwd, str) and cwd else None
    if isinstance(w, str) and w.strip():
        w = w.strip().replace("\\", "/")
        if _ROOTED.match(w):
            return posixpath.normpath(w)
        return posixpath.normpath(posixpath.join(base, w)) if base else None
    return posixpath.normpath(base) if base else None


def readings(path: str, step: Step, cwd: str | None) -> set[str]:
    """The files a call's path may name: a rooted path itself; a relative one under the
    call's folder (:func:`_folder_of`) and under the run's folder (an agent writes a path
    from the project's top while its call runs in a ``workdir`` below it); none when it
    cannot be known (``~``, ``$HOME``, no folder)."""
    p = path.strip().replace("\\", "/")
    if not p or p.startswith(("~", "$")):
        return set()
    if _ROOTED.match(p):
        return {posixpath.normpath(p)}
    base = cwd.replace("\\", "/") if isinstance(cwd, str) and cwd else None
    folders = {f for f in (_folder_of(step, cwd), base) if f}
    return {posixpath.normpath(posixpath.join(f, p)) for f in folders}


def cwd_slip(t: Trajectory, x: ShellFix) -> bool:
    """Whether a path failed only because of the folder the call stood in, not where the
    project keeps the file. Each path is resolved against its own call's ``workdir`` and
    the run's folder (:func:`readings`): when the failed and the working path may be the
    same file once resolved (``cat docs/notes.txt`` in ``workdir: /w/app/docs``, written
    from the project's top, then ``cat notes.txt`` there; an absolute path and a relative
    one), the difference is only the folder the command ran in: no location. A relative
    path found by a call that moved to another folder itself (``cd specs/b && cat plan.md``
    after ``cat /w/specs/a/plan.md``) names that folder's file, perhaps another one. Else,
    a relative path whose found path is it under a folder (or the other way round) is a
    slip when the calls ran in different folders (another ``workdir``) or the run changed
    its working directory on the way (``cd``, ``pushd``: :attr:`Role.CHDIR`, never a ``cd``
    to the session's own folder). (The lesson that would be true, about the working
    directory itself, is not learned: no kind states it.)"""
    d = x.finding.detail
    if d.get("change") not in ("location", "operand"):
        return False
    bad, good = d.get("bad"), d.get("good")
    if not isinstance(bad, str) or not isinstance(good, str):
        return False
    cwd = t.meta.get("cwd") or t.meta.get("project")
    cwd = cwd if isinstance(cwd, str) else None
    failed, fixed = t.steps[x.failed], t.steps[x.fixed]
    if readings(bad, failed, cwd) & readings(good, fixed, cwd):
        return True
    b, g = bad.rstrip("/"), good.rstrip("/")
    here = str(t.meta.get("cwd") or "")

    def elsewhere(c: Command) -> bool:  # a cd to the session's own folder moves nowhere
        return programs.has(c.program, Role.CHDIR) and not moves_nowhere(c, here)

    def moved(s: Step) -> bool:
        return is_shell(s.tool) and any(elsewhere(c) for c in _commands(s) or ())

    if not (_ROOTED.match(g) or g.startswith("~")) and moved(fixed):
        return True
    if _ROOTED.match(b) or b.startswith("~"):
        return False
    if not (g.endswith("/" + b) or b.endswith("/" + g)):
        return False
    if _folder_of(failed, cwd) != _folder_of(fixed, cwd) or (
        failed.params.get("workdir") != fixed.params.get("workdir") and cwd is None
    ):
        return True
    return any(moved(s) for s in t.steps[: x.fixed + 1])


#: A long ``ls -l`` line: its mode, then the file's name last.
_LONG_LISTING = re.compile(r"^[-dlcbps][-rwxsStT]{9}[.@+]?\s")


def listed_at(output: str, name: str) -> set[str]:
    """The paths one listing's output shows a file named ``name`` at: a line that is a
    path (``find``, ``rg --files``, Glob, Grep's file list), the last word of a long
    ``ls -l`` line, or a bare name under ``ls -R``'s ``folder:`` header. Written as the
    listing wrote them, without a leading ``./``."""
    return _listed(output).get(name, set())


def _listed(output: str) -> dict[str, set[str]]:
    """{a file's name: the paths one listing's output shows it at} (:func:`listed_at`),
    read in one pass over the output."""
    out: dict[str, set[str]] = {}
    folder = ""
    for raw in output.splitlines():
        line = raw.strip().replace("\\", "/")
        if not line:
            continue
        if line.endswith(":") and " " not in line:
            folder = line[:-1]  # ls -R, or ls of several folders: the folder's header
            continue
        word = line.split()[-1] if _LONG_LISTING.match(line) else line
        if " " in word:
            continue
        path = word if "/" in word or not folder else f"{folder}/{word}"
        while path.startswith("./"):
            path = path[2:]
        out.setdefault(posixpath.basename(word.rstrip("/")), set()).add(path.rstrip("/"))
    return out


def _names_listed_twice(t: Trajectory) -> frozenset[str]:
    """The file names that one listing the run made itself (:func:`_lists_hidden`) shows
    at two or more paths (:func:`listed_at`), copies under installed or vendored code
    (``node_modules/``, ``.venv/``, ``vendor/``) left out."""
    out: set[str] = set()
    for s in t.steps:
        if _lists_hidden(t, s):
            listed = _listed(s.output).items()
            out |= {n for n, paths in listed if len({p for p in paths if not _vendored(p)}) > 1}
    return frozenset(out)


#: Folders of installed or vendored code (a package manager's, a build's), not the
#: project's own: npm, Python, Go/PHP/Ruby vendoring, CocoaPods, and Elixir's deps and
#: _build at the top of a path (a project's own app/api/deps/ is its code).
_VENDORED = re.compile(
    r"(?:^|/)(?:node_modules|\.venv|venv|vendor|site-packages|dist-packages|Pods|"
    r"bower_components|\.git)/|^(?:deps|_build)/"
)


def _vendored(path: str) -> bool:
    return _VENDORED.search(path) is not None


def named_twice(t: Trajectory, x: ShellFix, twice: frozenset[str] | None = None) -> bool:
    """Whether a ``location`` lesson's file name is not the project's one file: a
    listing the run made itself (a successful ``find``, ``ls -R``, ``rg --files``, Glob:
    :func:`_lists_hidden`) shows that name at two or more paths. "X is at P" is then
    true of one copy (one workflow's, one package's), not a fact of the project, and is
    not learned; the run shows no rule for which copy a later task wants. ``twice``:
    :func:`_names_listed_twice` of ``t``, read once for all the run's findings."""
    d = x.finding.detail
    good = d.get("good")
    if d.get("change") != "location" or not isinstance(good, str):
        return False
    name = posixpath.basename(good.rstrip("/").replace("\\", "/"))
    return bool(name) and name in (_names_listed_twice(t) if twice is None else twice)


def relative_to(f: Finding, roots: Sequence[str]) -> Finding:
    """A project's fact with the paths under the run's folder or project (``roots``)
    written relative to it, as a session that wrote them relative does: one fact, one
    text ("notes.txt is at docs/notes.txt", whether the agent wrote ``/w/app/docs/notes.txt``
    or ``docs/notes.txt``), so that Stage 3 and the library merge them. A fact of the
    machine or a tool's rule keeps its paths."""
    if f.detail.get("scope") != "project":
        return f
    heads = sorted({r.rstrip("/") + "/" for r in roots if r.rstrip("/")}, key=len, reverse=True)
    if not heads:
        return f

    def rel(v: object) -> object:
        if isinstance(v, str):
            for h in heads:
                v = re.sub(rf"(?<![\w./-]){re.escape(h)}(?=[^\s/])", "", v)
            return v
        if isinstance(v, (list, tuple)):
            return type(v)(rel(x) for x in v)
        return v

    text = str(rel(f.text))
    if text == f.text:
        return f
    detail = {k: rel(v) for k, v in f.detail.items()}
    facts = tuple(str(rel(x)) for x in f.facts)
    return attrs.evolve(f, text=text, facts=facts, detail=detail)


def across(neg: Trajectory, pos: Sequence[Trajectory]) -> Finding | None:
    """The first misused shell call of negative run ``neg`` that it never got past, corrected
    by a successful call of the same intent in one of the positive runs ``pos`` (runs as
    learning sees them), with nothing in between; else None."""
    fixed = {x.failed for x in find_shell_fixes(neg)}
    for i, step in enumerate(neg.steps):
        if step.success or i in fixed or not is_shell(step.tool):
            continue
        failed = _failed_command(step)
        if failed is None:
            continue
        f, diag = failed
        missing = _missing_program(f, diag, step.output) is not None
        later = [c for s in neg.steps[i + 1 :] if s.success for c in (_commands(s) or ())]
        if _retry(f, later, missing) is not None:
            continue  # the run itself did the step later, another way: not this comparison
        for p in pos:
            for s in p.steps:
                cmds = _commands(s) if s.success and is_shell(s.tool) else None
                c = _retry(f, cmds or (), missing)
                if c is None:
                    continue
                fnd = compare(f, c, diag, step.output, (), neg.task)
                if risk.bypasses(c.text) and not risk.bypasses(f.text):
                    continue  # a policy overridden: no fix (see overrides_policy)
                if fnd is not None and fnd.detail.get("change") != "prerequisite":
                    return attrs.evolve(fnd, domain=step.domain or "")
        return None  # the root cause: later failures are mostly its consequences
    return None


def gave_up(run: Trajectory, failed: Step) -> bool:
    """Whether ``run`` hit the misuse of shell call ``failed`` (the same intent failing with
    the same diagnostic) and never got past it (no later successful call of that intent)."""
    want = _failed_command(failed)
    if want is None:
        return False
    f, diag = want
    for i, s in enumerate(run.steps):
        if s.success or not is_shell(s.tool):
            continue
        got = _failed_command(s)
        if got is None or _intent(got[0]) != _intent(f) or got[1] != diag:
            continue
        later = [c for q in run.steps[i + 1 :] if q.success for c in (_commands(q) or ())]
        if not any(_intent(c) == _intent(f) for c in later):
            return True
    return False


# --------------------------------------------------------------------------- the changes


def _sh(command: str, output: str = "", ok: bool = True, **more: object) -> Step:
    """An example call as Claude Code records it (a failure with its ``Exit code`` head)."""
    code = "Exit code 127" if "not found" in output else "Exit code 1"
    return Step(
        tool="Bash",
        params={"command": command, **more},
        output=output if ok else f"{code}\n{output}",
        success=ok,
    )


def _exec(command: str, output: str = "", ok: bool = True, **more: object) -> Step:
    """An example call as Codex records it (``exec_command`` with its output framing)."""
    code = 0 if ok else 1
    return Step(
        tool="exec_command",
        params={"cmd": command, **more},
        output=f"Chunk ID: 1a2b\nProcess exited with code {code}\nOutput:\n{output}",
        success=ok,
    )


@attrs.frozen
class ShellChange:
    """One kind of shell correction: its name (``detail["change"]``), the evidence it
    needs, and a positive and a negative example (calls of one run, paraphrased from real
    sessions) that ``tests/test_kinds.py`` runs through :func:`find_shell_fixes`."""

    name: str
    evidence: str
    positive: tuple[Step, ...]
    negative: tuple[Step, ...]


_NO_FILE = "No such file or directory"
_MSYS_CONF = (
    "Usage: odoo server [options]\n\nodoo server: error: The config file 'C:/Program Files/"
    "Git/etc/odoo/odoo.conf' selected with -c/--config doesn't exist or is not readable"
)
_PS_MISSING = (
    "Get-Content: An object at the specified path src/app/[id]/page.tsx does not exist, or "
    "has been filtered by the -Include or -Exclude parameter."
)
_PS_HEREDOC = (
    "At line:1 char:14\n+ apply_patch << 'PATCH'\n+              ~\n"
    "Missing file specification after redirection operator.\n"
    "    + CategoryInfo          : ParserError: (:) [], ParentContainsErrorRecordException\n"
    "    + FullyQualifiedErrorId : MissingFileSpecification"
)


def _ps_argv(script: str, output: str = "", ok: bool = True) -> Step:
    """An example call as Codex records it on Windows (``shell`` with an argv that runs
    ``powershell.exe -Command SCRIPT``)."""
    argv = ["powershell.exe", "-NoProfile", "-Command", script]
    body = output if ok else f"Exit code: 1\nOutput:\n{output}"
    return Step(tool="shell", params={"command": argv}, output=body, success=ok)


_CALENDAR = (
    'Traceback (most recent call last):\n  File "/w/app/scripts/calendar.py", line 2, in '
    '<module>\n    import calendar, json\n  File "/w/app/scripts/calendar.py", line 33, in '
    "main\nAttributeError: module 'calendar' has no attribute 'TextCalendar'"
)
_PS_HOME = (
    "Cannot overwrite variable HOME because it is read-only or constant.\n"
    "    + FullyQualifiedErrorId : VariableNotWritable"
)
_RG_123 = (
    "rg: src\\Api\\Controllers\\*.cs: IO error for operation on src\\Api\\Controllers\\*.cs: "
    "The filename, directory name, or volume label syntax is incorrect. (os error 123)"
)
_ZSH_DOT = "(eval):.:1: no such file or directory: config.env"
_PS_RANGE = (
    "$lines = Get-Content README.md; $start = ($lines | Select-String -Pattern '## Features' "
    "| Select-Object -First 1).LineNumber; $lines[{}] | ForEach-Object {{ $_ }}"
)
_OP_SUB = (
    "InvalidOperation: Method invocation failed because [System.Object[]] does not contain "
    "a method named 'op_Subtraction'."
)
_GREP_BRE = Step(
    "Bash",
    {"command": 'grep -rn "unique\\(\\[" database/'},
    "Exit code 2\ngrep: Unmatched ( or \\(",
    False,
)
_RG_PATHS = "rg: def b: No such file or directory (os error 2)\nsrc/core.py:3:def a():"
_ZSH_EQUALS = "On branch main\nnothing to commit\n(eval):1: ==SUB=== not found"
_SPECKIT = (
    "speckit : The term 'speckit' is not recognized as the name of a cmdlet, function, script "
    "file, or operable program.\n    + FullyQualifiedErrorId : CommandNotFoundException"
)
_NO_ODOO = "Error response from daemon: No such container: odoo18"
_INLINE_JS = (
    "\nconst fs = require('fs');\nconst cards = JSON.parse(fs.readFileSync('data/cards.json'));"
    "\nconst judged = cards.map(card => ({ name: card.name, stage: card.stage, reason: "
    "card.reason }));\nconsole.log(JSON.stringify(judged, null, 2));\n"
)
_INLINE_UNREAD = "/usr/bin/bash: -c: line 96: unexpected EOF while looking for matching `''"
_ZSH_STATUS = (
    "for f in checklists/*.md; do\n  total=$(grep -c '^- \\[' \"$f\")\n  status=PASS\n"
    '  printf "| %s | %s | %s |\\n" "$f" "$total" "$status"\ndone'
)
_HTTP_PS = (
    "$client = [System.Net.Http.HttpClient]::new(); $r = $client.PostAsync("
    "'http://127.0.0.1:8080/mcp', $null).Result; 'Status=' + [int]$r.StatusCode"
)
_NO_HTTP = (
    "Unable to find type [System.Net.Http.HttpClient].\nAt line:1 char:11\n"
    "+ $client = [System.Net.Http.HttpClient]::new(); ..."
)
_PS_EXCLUSIVE = (
    "Get-Content : The parameters TotalCount and Tail cannot be used together. Please "
    'specify only one parameter.\nAt line:1 char:1\n+ Get-Content -Path "cli.py" -TotalCount '
    "250 -Tail 250"
)
_PS_ANDAND = (
    "At line:1 char:8\n+ cd web && npm test\n+        ~~\n"
    "The token '&&' is not a valid statement separator in this version."
)


def _glob_timeout(pattern: str, path: str) -> Step:
    """An example Glob that Claude Code stopped after its 20 seconds."""
    said = (
        "Ripgrep search timed out after 20 seconds. The search may have matched files but "
        "did not complete in time. Try searching a more specific path or pattern."
    )
    return Step(tool="Glob", params={"pattern": pattern, "path": path}, output=said, success=False)


_PS_NO_SED = (
    "sed : The term 'sed' is not recognized as the name of a cmdlet, function, script file, "
    "or operable program.\nAt line:1 char:1\n+ sed -n '1,200p' cli.py\n+ ~~~\n"
    "    + CategoryInfo          : ObjectNotFound: (sed:String) [], CommandNotFoundException\n"
    "    + FullyQualifiedErrorId : CommandNotFoundException"
)
_PS_ANSI = (
    'At X:\\w\\export.ps1:38 char:13\n+     Write-Host "\u00e2\u0153\u201c Module list updated"\n'
    "+             ~~~~~~\nUnexpected token 'Module' in expression or statement.\n"
    "    + CategoryInfo          : ParserError: (:) [], ParseException\n"
    "    + FullyQualifiedErrorId : UnexpectedToken"
)
_PS7_SCRIPT = (
    "$wtPath = Get-Command wt -ErrorAction SilentlyContinue\n"
    "Write-Host \"wt: $($wtPath.Source ?? 'NOT FOUND')\""
)
_PS7_FIXED = (
    "$wtPath = Get-Command wt -ErrorAction SilentlyContinue\n"
    'if ($wtPath) { Write-Host "wt: $($wtPath.Source)" } else { Write-Host "wt: NOT FOUND" }'
)
_PS7_REFUSED = (
    "At line:2 char:34\n+ Write-Host \"wt: $($wtPath.Source ?? 'NOT FOUND')\"\n+   ~~\n"
    "Unexpected token '??' in expression or statement.\n"
    "    + CategoryInfo          : ParserError: (:) [], ParentContainsErrorRecordException\n"
    "    + FullyQualifiedErrorId : UnexpectedToken"
)
_ASCII_PS1 = 'Write-Host "[OK] Module list updated"\n'
_RG_DENIED = (
    "Program 'rg.exe' failed to run: An error occurred trying to start process "
    "'C:\\Program Files\\WindowsApps\\OpenAI.Codex\\app\\resources\\rg.exe'. Access is "
    "denied.\n    + CategoryInfo          : ResourceUnavailable: (:) [], "
    "ApplicationFailedException\n    + FullyQualifiedErrorId : NativeCommandFailed"
)
_UPSTREAM = (
    "fatal: The current branch feat has no upstream branch.\n"
    "To push the current branch and set the remote as upstream, use\n\n"
    "    git push --set-upstream origin feat\n"
)

#: The shell corrections, in the order :func:`compare` tries them (a program not found
#: first, then another intent, the same arguments, advice, an operand, a flag), then the
#: ones read from the run around a call (advised, hidden, escalation).
SHELL_CHANGES: tuple[ShellChange, ...] = (
    ShellChange(
        "interpreter",
        "the program is not found; a program of its family (python3 for python) ran the "
        "same arguments",
        (
            _sh("python tools/gen.py", "python: command not found", False),
            _sh("python3 tools/gen.py"),
        ),
        (_sh("python tools/gen.py", "python: command not found", False), _sh("python3 other.py")),
    ),
    ShellChange(
        "wrapper",
        "the program is not found bare (or fails bare); the same command worked through a "
        "runner or provider (uv run, npx, python -m, nix-shell -p); never sudo",
        (_sh("pytest -x", "bash: pytest: command not found", False), _sh("uv run pytest -x")),
        (
            _sh("systemctl restart app", "Failed to restart app: Access denied", False),
            _sh("sudo systemctl restart app"),
        ),
    ),
    ShellChange(
        "fullpath",
        "the program is not found on PATH (or Windows could not start it: exit 9009, 49 in "
        "Git Bash, and no output); a later call of that program by its full path worked, "
        "whatever its arguments: where this machine keeps it",
        (
            _sh("gh pr list", "zsh: command not found: gh", False),
            _sh("/opt/homebrew/bin/gh pr view 12"),
        ),
        (
            _sh("gh pr list", "zsh: command not found: gh", False),
            _sh("/opt/homebrew/bin/gh pr list", "zsh: no such file: /opt/homebrew/bin/gh", False),
            _sh("ls /opt/homebrew/bin"),
        ),
    ),
    ShellChange(
        "program",
        "the program is not found; another program did the job on the same operands",
        (_sh("rg TODO src", "bash: rg: command not found", False), _sh("grep -rn TODO src")),
        (_sh("rg TODO src", "bash: rg: command not found", False), _sh("grep -rn FIXME lib")),
    ),
    ShellChange(
        "prerequisite",
        "the very same command worked after exactly one other command that is not a read "
        "(in a call between, or before it in the retry's own call, acting on what the "
        "diagnostic names)",
        (
            _sh("touch out/a.txt", f"touch: cannot touch 'out/a.txt': {_NO_FILE}", False),
            _sh("mkdir -p out"),
            _sh("touch out/a.txt"),
        ),
        (
            _sh("touch out/a.txt", f"touch: cannot touch 'out/a.txt': {_NO_FILE}", False),
            _sh("mkdir -p out"),
            _sh("git init"),
            _sh("touch out/a.txt"),
        ),
    ),
    ShellChange(
        "suggested",
        "the failed output quoted the command that then worked as advice (use / run / try "
        "/ did you mean ...), and it differs from the failed one",
        (_sh("git push", _UPSTREAM, False), _sh("git push --set-upstream origin feat")),
        (_sh("ls src/x", f"ls: src/x: {_NO_FILE}", False), _sh("ls src")),
    ),
    ShellChange(
        "location",
        "'No such file' naming the path; the same program on a path with the same file name",
        (_sh("cat notes.txt", f"cat: notes.txt: {_NO_FILE}", False), _sh("cat docs/notes.txt")),
        (_sh("cat notes.txt", f"cat: notes.txt: {_NO_FILE}", False), _sh("cat docs/todo.md")),
    ),
    ShellChange(
        "case",
        "a read failed on a missing path; a later read of the same path in other letter "
        "case worked, from the same folder, and the run made or renamed neither spelling",
        (
            _sh(
                'sed -n 1,200p "Use cases/UC-06.md"',
                f"sed: can't read Use cases/UC-06.md: {_NO_FILE}",
                False,
            ),
            _sh('sed -n 1,80p "Acceptance Tests/UC-06-AT.md"', "# AT"),
            _sh('sed -n 1,240p "Use Cases/UC-06.md"', "# UC-06"),
        ),
        (
            _sh("cat docs/readme.md", f"cat: docs/readme.md: {_NO_FILE}", False),
            _sh("cat docs/README.txt", "# readme"),
        ),
    ),
    ShellChange(
        "prefix",
        "a read failed on a relative path with a folder in it; a later read of that very path "
        "under a leading folder worked, a folder the run did not make, from the same folder",
        (
            _sh("cat src/app/page.tsx", f"cat: src/app/page.tsx: {_NO_FILE}", False),
            _sh("cat web/src/app/page.tsx", "export default function Page() {}"),
        ),
        (
            _sh("cat src/app/page.tsx", f"cat: src/app/page.tsx: {_NO_FILE}", False),
            _sh("mkdir -p web/src/app"),
            _sh("cat web/src/app/page.tsx", "export default function Page() {}"),
        ),
    ),
    ShellChange(
        "runner",
        "a test runner was not found (or its module missing: No module named pytest); with "
        "nothing installed, another runner of the program table ran the tests and exited 0",
        (
            _sh("python3 -m pytest -q", "/usr/bin/python3: No module named pytest", False),
            _sh("PYTHONPATH=src python3 -m unittest discover -s tests", "Ran 12 tests\n\nOK"),
        ),
        (
            _sh("python3 -m pytest -q", "/usr/bin/python3: No module named pytest", False),
            _sh("python3 -m unittest --help", "usage: python3 -m unittest [-h]"),
        ),
    ),
    ShellChange(
        "operand",
        "one operand changed, the failed output naming the wrong one",
        (
            _sh("git checkout mian", "error: pathspec 'mian' did not match any file(s)", False),
            _sh("git checkout main"),
        ),
        (
            _sh("git checkout dev", "error: Your local changes would be overwritten", False),
            _sh("git checkout main"),
        ),
    ),
    ShellChange(
        "pattern",
        "a search program read a pattern that starts with - as an option and said so; the "
        "retry passed the same word after -e or --",
        (
            _sh('rg -n "-> Result" src', "rg: unrecognized flag -> Result", False),
            _sh('rg -n -e "-> Result" src', "src/a.rs:3: fn f() -> Result<()>"),
        ),
        (
            _sh('rg -n "-> Result" src', "rg: unrecognized flag -> Result", False),
            _sh('rg -n "Result" src', "src/a.rs:3: fn f() -> Result<()>"),
        ),
    ),
    ShellChange(
        "element",
        "one element of a comma-list operand changed, the failed output naming that "
        "element, quoted, as unknown or invalid",
        (
            _sh("gh pr view 1 --json state,merged", 'Unknown JSON field: "merged"', False),
            _sh("gh pr view 1 --json state,mergedAt,mergedBy", '{"state":"MERGED"}'),
        ),
        (
            _sh("gh pr view 1 --json state,merged", 'Unknown JSON field: "merged"', False),
            _sh("gh pr view 2 --json state,mergedAt", '{"state":"OPEN"}'),
        ),
    ),
    ShellChange(
        "dropped",
        "the same command without one path operand that the failed output named",
        (
            _sh(
                "git add a.py dist/app.js",
                "The following paths are ignored by one of your .gitignore files:\ndist/app.js",
                False,
            ),
            _sh("git add a.py"),
        ),
        (_sh("cat a.txt b/c.txt", f"cat: b/c.txt: {_NO_FILE}", False), _sh("cat a.txt")),
    ),
    ShellChange(
        "forced",
        "the paths the failed output named, run again alone with the one flag the output "
        "advised (the other operands run apart)",
        (
            _sh(
                "git add a.py web/dist/app.css",
                "The following paths are ignored by one of your .gitignore files:\nweb/dist\n"
                "hint: Use -f if you really want to add them.",
                False,
            ),
            _sh("git add -f web/dist/app.css"),
        ),
        (
            _sh("rm a.txt build/out", "rm: build/out: is a directory", False),
            _sh("rm -r build/out"),
        ),
    ),
    ShellChange(
        "flag",
        "one flag changed, the failed output naming it (an unknown option)",
        (
            _sh("git show --no-stat abc1234", "error: unrecognized argument: --no-stat", False),
            _sh("git show abc1234"),
        ),
        (
            _sh("git log --oneline main..x", "fatal: bad revision 'main..x'", False),
            _sh("git log --stat main..x"),
        ),
    ),
    ShellChange(
        "advised",
        "the output advised a command in so many words ('Run X to fix'), the next shell call "
        "was exactly X and worked, and the failure did not come back",
        (
            _sh("git commit -m wip", "Code is not formatted. Run 'mix format' to fix.", False),
            _sh("mix format"),
        ),
        (
            _sh("git commit -m wip", "Code is not formatted. Run 'mix format' to fix.", False),
            _sh("mix compile"),
        ),
    ),
    ShellChange(
        "hidden",
        "rg --files -g G listed nothing; the next call, find . -name G, found the files in "
        "one hidden folder (or a listing named it and a read used a path under it); or rg "
        "PATTERN found nothing and the same rg with only --hidden added found it there",
        (
            _sh("rg --files -g '*.spec.yaml'", "", False),
            _sh(
                "find . -name '*.spec.yaml'",
                "./.config/specs/a.spec.yaml\n./.config/specs/b.spec.yaml",
            ),
        ),
        (
            _sh("rg --files -g '*.spec.yaml'", "", False),
            _sh("find . -name '*.spec.yaml'", "./specs/a.spec.yaml\n./other/b.spec.yaml"),
        ),
    ),
    ShellChange(
        "glob",
        "zsh refused an unquoted path holding [ ], * or ? as a glob that matched nothing "
        "('no matches found: W'), and a later call passed the same path quoted",
        (
            _exec(
                "rg -n id src/app/[id]/page.tsx",
                "zsh:1: no matches found: src/app/[id]/page.tsx",
                False,
            ),
            _exec("cat 'src/app/[id]/page.tsx'", "export default function Page() {}"),
        ),
        (
            _exec("ls src/*.tsx", "zsh:1: no matches found: src/*.tsx", False),
            _exec("ls src", "app"),
        ),
    ),
    ShellChange(
        "literal",
        "a PowerShell cmdlet given a path holding [ ] (a wildcard to -Path) or unquoted ( ) "
        "failed naming it; the same cmdlet then read that path as -LiteralPath",
        (
            _exec("Get-Content -Path 'src/app/[id]/page.tsx'", _PS_MISSING, False),
            _exec("Get-Content -LiteralPath 'src/app/[id]/page.tsx'", "export default 1"),
        ),
        (
            _exec("Get-Content -Path 'src/app/[id]/page.tsx'", _PS_MISSING, False),
            _exec("Get-ChildItem -LiteralPath 'src/app/[id]'", "page.tsx"),
        ),
    ),
    ShellChange(
        "separator",
        "Windows PowerShell 5.1 refused && or || as a statement separator; a later call ran "
        "the same commands joined with ; or if ($?), or as separate calls, and worked",
        (
            _exec("cd web && npm test", _PS_ANDAND, False),
            _exec("cd web; if ($?) { npm test }", "2 passed"),
        ),
        (
            _exec("cd web && npm test", _PS_ANDAND, False),
            _exec("cd web; npm run build", "built"),
        ),
    ),
    ShellChange(
        "narrow",
        "a Glob over a whole folder (a home folder, the project) ran out of time; a later "
        "call searched a folder inside it and listed a path the pattern names",
        (
            _glob_timeout("**/UserDetail*.tsx", "/home/ken"),
            _sh(
                "find /home/ken/developer-portal/src -name '*UserDetail*'",
                "/home/ken/developer-portal/src/features/users/UserDetail.tsx",
            ),
        ),
        (
            _glob_timeout("**/UserDetail*.tsx", "/home/ken"),
            _sh("find /home/ken -name '*UserDetail*'", "/home/ken/portal/src/UserDetail.tsx"),
        ),
    ),
    ShellChange(
        "powershell",
        "PowerShell (Codex's shell on Windows) did not find a POSIX program that a line "
        "ran first (CommandNotFoundException names it); a later call did the job on the "
        "same file with a cmdlet (Get-Content for sed) and worked",
        (
            _ps_argv("sed -n '1,200p' cli.py", _PS_NO_SED, False),
            _ps_argv("Get-Content -Path cli.py -First 250", "import os"),
        ),
        (
            _ps_argv("sed -n '1,200p' cli.py", _PS_NO_SED, False),
            _ps_argv("Get-Content -Path README.md -First 50", "# app"),
        ),
    ),
    ShellChange(
        "ansi",
        "running a .ps1 failed on PowerShell's parser, its record showing the script's "
        "UTF-8 text read as ANSI; the run rewrote the script in ASCII and it then ran",
        (
            Step("PowerShell", {"command": "& .\\export.ps1"}, _PS_ANSI, False),
            Step("Write", {"file_path": "X:\\w\\export.ps1", "content": _ASCII_PS1}, "ok", True),
            Step("PowerShell", {"command": "& .\\export.ps1"}, "[OK] Exported 12 modules", True),
        ),
        (
            Step("PowerShell", {"command": "& .\\export.ps1"}, _PS_ANSI, False),
            Step("Write", {"file_path": "X:\\w\\export.ps1", "content": _ASCII_PS1 + "\u2713"}),
            Step("PowerShell", {"command": "& .\\export.ps1"}, "[OK] Exported 12 modules", True),
        ),
    ),
    ShellChange(
        "ps7",
        "Windows PowerShell 5.1's parser refused PowerShell 7's ?? or ternary operator; a "
        "later call ran the same script with if/else instead and worked",
        (
            Step("PowerShell", {"command": _PS7_SCRIPT}, _PS7_REFUSED, False),
            Step("PowerShell", {"command": _PS7_FIXED}, "wt found: C:/wt.exe", True),
        ),
        (
            Step("PowerShell", {"command": _PS7_SCRIPT}, _PS7_REFUSED, False),
            Step("PowerShell", {"command": "Get-ChildItem; if ($x) { 1 } else { 2 }"}, "1"),
        ),
    ),
    ShellChange(
        "exclusive",
        "a PowerShell cmdlet refused two parameters of different sets (The parameters "
        "TotalCount and Tail cannot be used together); the same cmdlet then read the same "
        "file with one of them and worked (learned once the slip repeats)",
        (
            _ps_argv('Get-Content -Path "cli.py" -TotalCount 250 -Tail 250', _PS_EXCLUSIVE, False),
            _ps_argv('Get-Content -Path "cli.py" -Tail 200', "def main():"),
        ),
        (
            _ps_argv('Get-Content -Path "cli.py" -TotalCount 250 -Tail 250', _PS_EXCLUSIVE, False),
            _ps_argv('Get-Content -Path "README.md" -Tail 200', "# app"),
        ),
    ),
    ShellChange(
        "inline",
        "bash could not read a line that gave an interpreter a long script inline (node -e "
        '"...": unexpected EOF while looking for matching); the script was then written to a '
        ".js file and node ran that file",
        (
            _sh(f'node -e "{_INLINE_JS}"', _INLINE_UNREAD, False),
            Step("Write", {"file_path": "/w/app/scripts/judge.js", "content": _INLINE_JS}, "ok"),
            _sh("node scripts/judge.js", '[{"name": "a"}]'),
        ),
        (
            _sh(f'node -e "{_INLINE_JS}"', _INLINE_UNREAD, False),
            Step("Write", {"file_path": "/w/app/scripts/other.js", "content": "x = 1"}, "ok"),
            _sh("node scripts/other.js", "done"),
        ),
    ),
    ShellChange(
        "readonly",
        "zsh refused an assignment to a read-only special variable (read-only variable: "
        "status); the same script with that name assigned nowhere (renamed) then worked",
        (
            _exec(_ZSH_STATUS, "zsh:4: read-only variable: status", False),
            _exec(_ZSH_STATUS.replace("status", "row_status"), "| a.md | 16 | PASS |"),
        ),
        (
            _exec(_ZSH_STATUS, "zsh:4: read-only variable: status", False),
            _exec("ls checklists", "a.md"),
        ),
    ),
    ShellChange(
        "one_pattern",
        "a search program given several quoted patterns took the others as paths (rg: def "
        "b: No such file or directory); the same program then searched the same file for "
        "one of them and worked",
        (
            _exec('rg -n "def a" -n "def b" src/core.py', _RG_PATHS, False),
            _exec('rg -n "def b" src/core.py', "12:def b(x):"),
        ),
        (
            _exec('rg -n "def a" -n "def b" src/core.py', _RG_PATHS, False),
            _exec('rg -n "def a" src/core.py', "3:def a():"),
        ),
    ),
    ShellChange(
        "bre_group",
        "grep's basic regex refused \\( as an unbalanced group (Unmatched ( or \\(); the "
        "same pattern searched as text (the Grep tool, grep -F, rg) then worked",
        (
            _GREP_BRE,
            Step("Grep", {"pattern": "unique\\(\\[", "path": "database"}, "a.php:30: x", True),
        ),
        (
            _GREP_BRE,
            Step("Grep", {"pattern": "unique", "path": "database"}, "a.php:30: x", True),
        ),
    ),
    ShellChange(
        "range_first",
        "PowerShell read $lines[$start-1..$end] as $start - (1..$end) and failed (does not "
        "contain a method named op_Subtraction); the same script with its bounds computed "
        "first (or parenthesised) then worked",
        (
            _ps_argv(_PS_RANGE.format("$start-1..($start+20)"), _OP_SUB, False),
            _ps_argv(_PS_RANGE.format("($start-1)..($start+20)"), "## Features"),
        ),
        (
            _ps_argv(_PS_RANGE.format("$start-1..($start+20)"), _OP_SUB, False),
            _ps_argv("Get-Content README.md -TotalCount 40", "## Features"),
        ),
    ),
    ShellChange(
        "dot_path",
        "zsh's . of a name with no slash (. config.env) failed 'no such file or directory' "
        "in the folder that holds it; . ./config.env or its full path there then worked",
        (
            _sh(". config.env && make -j8", _ZSH_DOT, False),
            _sh(". ./config.env && make -j8", "make: Nothing to be done"),
        ),
        (
            _sh(". config.env && make -j8", _ZSH_DOT, False),
            _sh("make -j8", "make: Nothing to be done"),
        ),
    ),
    ShellChange(
        "windows_glob",
        "a program on Windows got a wildcard path whole (rg PATTERN src\\X\\*.cs: os error "
        "123, the name's syntax refused); the same program given the wildcard's folder, or "
        "the files it matches, then worked",
        (
            _exec('rg -n "Route" src\\Api\\Controllers\\*.cs', _RG_123, False),
            _exec('rg -n "Route" src/Api/Controllers', "src/Api/Controllers\\A.cs:8:[Route]"),
        ),
        (
            _exec('rg -n "Route" src\\Api\\Controllers\\*.cs', _RG_123, False),
            _exec('rg -n "Route" src/Web', "src/Web\\B.cs:3:[Route]"),
        ),
    ),
    ShellChange(
        "msys_path",
        "a Bash call's program reported a path under Git's install folder (C:/Program "
        "Files/Git/etc/x.conf) that the line gave as /etc/x.conf: Git Bash converted it; "
        "the PowerShell tool, or the line with MSYS_NO_PATHCONV=1, then worked on that path",
        (
            _sh("docker exec web odoo -c /etc/odoo/odoo.conf -u m", _MSYS_CONF, False),
            Step(
                tool="PowerShell",
                params={"command": "docker exec web odoo -c /etc/odoo/odoo.conf -u m"},
                output="Modules loaded.",
            ),
        ),
        (
            _sh("docker exec web odoo -c /etc/odoo/odoo.conf -u m", _MSYS_CONF, False),
            _sh("docker exec web cat /etc/odoo/odoo.conf", "[options]"),
        ),
    ),
    ShellChange(
        "argv_operator",
        "a shell tool's command array held a shell operator as an element (nl F | sed ...) "
        "and failed, no shell reading it; the same programs joined by it in a script handed "
        "to sh -c then worked",
        (
            Step(
                tool="shell",
                params={"command": ["nl", "-ba", "spec.md", "|", "sed", "-n", "1,60p"]},
                output="Process exited with code 1\nOutput:\nusage: nl [-p] [-b type] [file]",
                success=False,
            ),
            Step(
                tool="shell",
                params={"command": ["sh", "-c", "nl -ba spec.md | sed -n '1,80p'"]},
                output="     1\t# Spec",
            ),
        ),
        (
            Step(
                tool="shell",
                params={"command": ["nl", "-ba", "spec.md", "|", "sed", "-n", "1,60p"]},
                output="Process exited with code 1\nOutput:\nusage: nl [-p] [-b type] [file]",
                success=False,
            ),
            Step(tool="shell", params={"command": ["sh", "-c", "cat spec.md"]}, output="# Spec"),
        ),
    ),
    ShellChange(
        "shell_start",
        "the shell meant to run a call never started (WSL's execvpe /bin/bash failed; an "
        "EPERM uv_spawn of powershell.exe), none of its calls worked in the run, and the next "
        "shell call that worked ran in another shell or tool",
        (
            Step(
                tool="shell",
                params={"command": ["bash", "-lc", "ls -la"]},
                output="Process exited with code 1\nOutput:\n<3>WSL (9) ERROR: "
                "CreateProcessEntryCommon:505: execvpe /bin/bash failed 2",
                success=False,
            ),
            Step(
                tool="shell",
                params={"command": ["pwsh", "-NoLogo", "-Command", "Get-ChildItem -Force"]},
                output="C:\\project\\app\\.specify",
            ),
        ),
        (
            Step(
                tool="shell",
                params={"command": ["bash", "-lc", "ls -la"]},
                output="Process exited with code 1\nOutput:\n<3>WSL (9) ERROR: "
                "CreateProcessEntryCommon:505: execvpe /bin/bash failed 2",
                success=False,
            ),
            Step(tool="shell", params={"command": ["bash", "-lc", "ls -la"]}, output="total 8"),
        ),
    ),
    ShellChange(
        "ps_readonly",
        "PowerShell refused an assignment to an automatic variable ($home: Cannot overwrite "
        "variable HOME because it is read-only); the same value assigned to another name "
        "then worked",
        (
            _exec(
                "$home=Join-Path $env:USERPROFILE '.codex'; Get-ChildItem $home", _PS_HOME, False
            ),
            _exec("$userCodex=Join-Path $env:USERPROFILE '.codex'; Get-ChildItem $userCodex", "a"),
        ),
        (
            _exec(
                "$home=Join-Path $env:USERPROFILE '.codex'; Get-ChildItem $home", _PS_HOME, False
            ),
            _exec("Get-ChildItem C:/Users/me/.codex", "a"),
        ),
    ),
    ShellChange(
        "shadowed",
        "a Python script named like the module it imports (calendar.py) imported itself "
        "(module calendar has no attribute, its frames in calendar.py); renaming the file "
        "then worked",
        (
            _sh("python3 scripts/calendar.py", _CALENDAR, False),
            _sh("mv scripts/calendar.py scripts/cal_widget.py && python3 scripts/cal_widget.py"),
        ),
        (
            _sh("python3 scripts/calendar.py", _CALENDAR, False),
            _sh("python3 -c 'import calendar; print(calendar.__file__)'", "/usr/lib/calendar.py"),
        ),
    ),
    ShellChange(
        "equals",
        "zsh read a word that starts with = (echo ===SUB===) as =command expansion and "
        "failed (==SUB=== not found); a command the line held after that word then ran "
        "alone and worked",
        (
            _sh("git status; echo ===SUB===; git -C sub status", _ZSH_EQUALS, False),
            _sh("git -C sub status", "On branch main"),
        ),
        (
            _sh("git status; echo ===SUB===; git -C sub status", _ZSH_EQUALS, False),
            _sh("git log --oneline -3", "a06823b structural: bump"),
        ),
    ),
    ShellChange(
        "bare_name",
        "PowerShell did not find a program called by its bare name (The term 'speckit' is "
        "not recognized); the same line calling it from the current folder (.\\speckit.cmd) "
        "ran it",
        (
            _ps_argv("speckit run demo", _SPECKIT, False),
            _ps_argv("Get-ChildItem -Name speckit*", "speckit.cmd\nspeckit.py"),
            _ps_argv(".\\speckit.cmd run demo", "demo: done"),
        ),
        (
            _ps_argv("speckit run demo", _SPECKIT, False),
            _ps_argv(
                ".\\speckit.cmd run demo", _SPECKIT.replace("'speckit'", "'.\\speckit.cmd'"), False
            ),
            _ps_argv("Get-ChildItem -Name speckit*", "speckit.md"),
        ),
    ),
    ShellChange(
        "container",
        "the container engine knew no container by the name given (No such container: "
        "odoo18); a listing (docker ps) showed the containers, and the same subcommand given "
        "one of them in that name's place worked",
        (
            _sh("docker exec odoo18 odoo -u sales -d odoo18", _NO_ODOO, False),
            _sh("docker ps --format '{{.Names}}'", "odoo_docker-web-1\nodoo_docker-db-1"),
            _sh("docker exec odoo_docker-web-1 odoo -u sales -d odoo18", "Modules loaded."),
        ),
        (
            _sh("docker restart geox_server", "No such container: geox_server", False),
            _sh("docker ps -a", "CONTAINER ID   IMAGE   NAMES"),
            _sh("docker compose -p geox up -d geox_server", "Container geox_server Started"),
            _sh("docker logs geox_server", "serving on :8000"),
        ),
    ),
    ShellChange(
        "workdir_path",
        "a shell call given a workdir failed on a relative path that begins with that "
        "folder's own name (workdir .codex, cat .codex/prompts/x.md); the same program then "
        "read it written from the workdir (prompts/x.md), or from another workdir",
        (
            Step(
                "shell",
                {"command": ["bash", "-lc", "cat .codex/prompts/plan.md"], "workdir": ".codex"},
                f"Process exited with code 1\nOutput:\ncat: .codex/prompts/plan.md: {_NO_FILE}",
                False,
            ),
            Step(
                "shell",
                {"command": ["bash", "-lc", "cat prompts/plan.md"], "workdir": ".codex"},
                "---\ndescription: plan",
                True,
            ),
        ),
        (
            Step(
                "shell",
                {"command": ["bash", "-lc", "cat .codex/prompts/plan.md"], "workdir": ".codex"},
                f"Process exited with code 1\nOutput:\ncat: .codex/prompts/plan.md: {_NO_FILE}",
                False,
            ),
            Step(
                "shell",
                {"command": ["bash", "-lc", "cat prompts/tasks.md"], "workdir": ".codex"},
                "---\ndescription: tasks",
                True,
            ),
        ),
    ),
    ShellChange(
        "addtype",
        "PowerShell did not know a .NET type (Unable to find type [System.Net.Http."
        "HttpClient]); the same script with Add-Type -AssemblyName System.Net.Http first "
        "then worked",
        (
            _exec(_HTTP_PS, _NO_HTTP, False),
            _exec("Add-Type -AssemblyName System.Net.Http; " + _HTTP_PS, "Status=200"),
        ),
        (
            _exec(_HTTP_PS, _NO_HTTP, False),
            _exec("Invoke-WebRequest -Uri http://127.0.0.1:8080/mcp -Method Post", "200"),
        ),
    ),
    ShellChange(
        "interpret",
        "a script run by its path was not executed (the shell's 'PATH: Permission denied', "
        "exit 126); a later call ran the same script and arguments through an interpreter "
        "(bash, python3), with no chmod between, and it worked",
        (
            _exec(
                "scripts/list-skills.py",
                "/bin/bash: line 1: scripts/list-skills.py: Permission denied",
                False,
            ),
            _exec("python3 scripts/list-skills.py", "1. atlas\n2. doc"),
        ),
        (
            _exec(
                "scripts/list-skills.py",
                "/bin/bash: line 1: scripts/list-skills.py: Permission denied",
                False,
            ),
            _exec("chmod +x scripts/list-skills.py && python3 scripts/list-skills.py", "1. atlas"),
        ),
    ),
    ShellChange(
        "nostart",
        "PowerShell found the program a line ran and could not start it (its record names "
        "rg.exe: Access is denied); a later call did that command's job with another "
        "program on the same places",
        (
            _exec("rg --files -g package.json", _RG_DENIED, False, workdir="C:\\w"),
            _exec("git ls-files", "backend/app/main.py", workdir="C:\\w"),
        ),
        (
            _exec("rg --files App Core", _RG_DENIED, False, workdir="C:\\w"),
            _exec("Get-ChildItem -LiteralPath Win\\Native -Force", "Installer", workdir="C:\\w"),
        ),
    ),
    ShellChange(
        "heredoc",
        "PowerShell (its tool, or powershell -Command as Codex runs lines on Windows) "
        "refused a bash heredoc fed to a program (apply_patch << 'PATCH'); a later call ran "
        "that program itself, the text as its argument, and it worked",
        (
            _ps_argv("apply_patch << 'PATCH'\n*** Begin Patch\nPATCH", _PS_HEREDOC, False),
            Step("shell", {"command": ["apply_patch", "*** Begin Patch"]}, "Success.", True),
        ),
        (
            _ps_argv("apply_patch << 'PATCH'\n*** Begin Patch\nPATCH", _PS_HEREDOC, False),
            _ps_argv("Set-Content -Path a.md -Value 'x'", "", True),
        ),
    ),
    ShellChange(
        "backslash",
        "Git Bash took the backslashes out of a Windows path (the output names it without "
        "them), and a later call passed the same path with forward slashes",
        (
            _sh("type C:\\Users\\me\\out.log", "bash: type: C:Usersmeout.log: not found", False),
            _sh("cat /c/Users/me/out.log", "done"),
        ),
        (
            _sh("type C:\\Users\\me\\out.log", "bash: type: out.log: not found", False),
            _sh("cat /c/Users/me/out.log", "done"),
        ),
    ),
    ShellChange(
        "nofilter",
        "the program at the end of a pipeline (one the program table knows) was not found, "
        "and a later call, before any that ran it again, ran the same pipeline without it "
        "and worked",
        (
            _sh("curl -s localhost:5000/health | jq .", "(eval):1: command not found: jq", False),
            _sh("curl -s localhost:5000/health", '{"ok": true}'),
        ),
        (
            _sh("curl -s localhost:5000/health | jq .", "(eval):1: command not found: jq", False),
            _sh("curl -s localhost:5000/health | python3 -m json.tool", '{"ok": true}'),
        ),
    ),
    ShellChange(
        "quote_backslash",
        "bash found a quote that never closed because a double-quoted Windows path ended in "
        "a backslash, and a later call named the same path without the trailing backslash",
        (
            _sh(
                'ls -la "C:\\Users\\me\\app\\"',
                f"bash: -c: line 1: {_UNCLOSED} `\"'",
                False,
            ),
            _sh('ls -la "C:/Users/me/app"', "total 8"),
        ),
        (
            _sh(
                'ls -la "C:\\Users\\me\\app\\"',
                f"bash: -c: line 1: {_UNCLOSED} `\"'",
                False,
            ),
            _sh('ls -la "C:/Users/me/web"', "total 8"),
        ),
    ),
    ShellChange(
        "environment",
        "an interpreter could not import a module (No module named X, not a probe that only "
        "imports it); a later call ran the same job with an environment's interpreter "
        "(.venv/bin/python, source venv/bin/activate) and worked",
        (
            _exec(
                "python - <<'PY'\nfrom app import app\nclient = app.test_client()\nPY",
                "Traceback (most recent call last):\nModuleNotFoundError: No module named 'dotenv'",
                False,
            ),
            _exec(
                "./.venv/bin/python - <<'PY'\nfrom app import app\nclient = app.test_client()\nPY"
            ),
        ),
        (
            _exec(
                'python -c "import sqlalchemy; print(sqlalchemy.__version__)"',
                "ModuleNotFoundError: No module named 'sqlalchemy'",
                False,
            ),
            _exec('.venv/bin/python -c "import sqlalchemy; print(sqlalchemy.__version__)"', "2.0"),
        ),
    ),
    ShellChange(
        "windows",
        "cmd's or PowerShell's commands (del, Start-Sleep) run in the Bash tool, which is "
        "Git Bash, were not found, or cmd's syntax (cd /d, if not exist, dir /b) on a drive "
        "path was rejected; a later call did the job on the same path (the PowerShell "
        "tool, Read, bash's own command)",
        (
            _sh('del "C:\\w\\lib\\mock.ts"', "bash: line 1: del: command not found", False),
            Step(tool="PowerShell", params={"command": 'Remove-Item "C:\\w\\lib\\mock.ts"'}),
        ),
        (
            _sh('del "C:\\w\\lib\\mock.ts"', "bash: line 1: del: command not found", False),
            Step(tool="PowerShell", params={"command": 'Get-ChildItem "C:\\w\\src"'}),
        ),
    ),
    ShellChange(
        "workdir",
        "a script run failed on a path it could not find or resolve, its output naming it; "
        "a later call ran the same script from another folder (cd D && ...) and worked",
        (
            _sh("node assets/build.js 2>&1", '[ERROR] Could not resolve "js/app.js"', False),
            _sh("cd assets && node build.js 2>&1", "built in 120ms"),
        ),
        (
            _sh("node assets/build.js 2>&1", '[ERROR] Could not resolve "js/app.js"', False),
            _sh("cd assets && node bundle.js 2>&1", "built in 120ms"),
        ),
    ),
    ShellChange(
        "script",
        "a package manager ran a project script its folder's package.json lacks (Missing "
        "script: NAME); a later call ran that script in another folder and it ran there",
        (
            _sh("pnpm run typecheck 2>&1", "ERR_PNPM_NO_SCRIPT Missing script: typecheck", False),
            _sh(
                "cd dashboard && pnpm run typecheck 2>&1",
                "> dashboard@1.0.0 typecheck /w/dashboard\n> tsc --noEmit",
            ),
        ),
        (
            _sh("pnpm run typecheck 2>&1", "ERR_PNPM_NO_SCRIPT Missing script: typecheck", False),
            _sh("pnpm run", "Lifecycle scripts included in app@1.0.0:\n  build\n    vite build"),
        ),
    ),
    ShellChange(
        "crlf",
        "a shell script failed because bash read its carriage returns ($'\\r': command not "
        "found); a later call converted line endings, and the script then ran past it",
        (
            _sh(
                "./scripts/setup.sh", "./scripts/setup.sh: line 2: $'\\r': command not found", False
            ),
            _sh("sed -i 's/\\r$//' scripts/*.sh"),
            _sh("./scripts/setup.sh", "setup done"),
        ),
        (
            _sh(
                "./scripts/setup.sh", "./scripts/setup.sh: line 2: $'\\r': command not found", False
            ),
            _sh("git status"),
            _sh("./scripts/setup.sh", "setup done"),
        ),
    ),
    ShellChange(
        "drive",
        "a Windows program run from Git Bash could not open a path written the MSYS way "
        "(/e/x), naming it; the same program then read it as E:/x",
        (
            _sh(
                "python -c \"print(open('/e/w/a.jsonl').read())\"",
                "FileNotFoundError: [WinError 3] '/e/w/a.jsonl'",
                False,
            ),
            _sh("python -c \"print(open('E:/w/a.jsonl').read())\"", "{}"),
        ),
        (
            _sh(
                "python -c \"print(open('/e/w/a.jsonl').read())\"",
                "FileNotFoundError: [WinError 3] '/e/w/a.jsonl'",
                False,
            ),
            _sh("cat E:/w/a.jsonl", "{}"),
        ),
    ),
    ShellChange(
        "encoding",
        "Python could not print a character its console's encoding lacks (UnicodeEncodeError: "
        "'gbk' codec); the same interpreter then made its output utf-8 and ran",
        (
            _sh(
                "python -c \"print('\U0001f3af')\"",
                "UnicodeEncodeError: 'gbk' codec can't encode",
                False,
            ),
            _sh(
                "python -c \"import sys; sys.stdout.reconfigure(encoding='utf-8'); print('x')\"",
                "x",
            ),
        ),
        (
            _sh(
                "python -c \"print('\U0001f3af')\"",
                "UnicodeEncodeError: 'gbk' codec can't encode",
                False,
            ),
            _sh("python -c \"print('target')\"", "target"),
        ),
    ),
    ShellChange(
        "existing",
        "the command refused to create what already exists, its output naming it; the retry "
        "kept every option and operand, changed the action and named the existing thing",
        (
            _sh(
                'gh pr create --title "Fix" --body "x"',
                'a pull request for branch "me:fix" into branch "main" already exists:\n'
                "https://github.com/o/r/pull/6689",
                False,
            ),
            _sh('gh pr edit 6689 --title "Fix" --body "x"', "https://github.com/o/r/pull/6689"),
        ),
        (
            _sh(
                'gh pr create --title "Fix" --body "x"',
                'a pull request for branch "me:fix" into branch "main" already exists:\n'
                "https://github.com/o/r/pull/6689",
                False,
            ),
            _sh('gh pr edit 12 --title "Fix" --body "x"', "https://github.com/o/r/pull/12"),
        ),
    ),
    ShellChange(
        "terminal",
        "the command failed for want of a terminal (stdin is not a terminal, stdin closed, "
        "raw mode not supported), then the same command ran with tty: true",
        (
            _exec("codex resume 019c", "Error: stdin is not a terminal", False),
            _exec("codex resume 019c", "Resuming session", tty=True),
        ),
        (
            _exec("codex resume 019c", "Error: no session 019c found", False),
            _exec("codex resume 019c", "Resuming session", tty=True),
        ),
    ),
    ShellChange(
        "notty",
        "the command failed for want of a terminal (the input device is not a TTY); the same "
        "command without its one terminal flag (-t, -it, --tty) then worked, not in the "
        "background (synthetic: no development-half run shows it)",
        (
            _sh("docker exec -it web ls /app", "the input device is not a TTY", False),
            _sh("docker exec web ls /app", "manage.py"),
        ),
        (
            _sh("docker exec -it web ls /app", "Error: No such container: web", False),
            _sh("docker exec web ls /app", "manage.py"),
        ),
    ),
    ShellChange(
        "sleep",
        "the shell tool refused a line for the sleep at its head (Blocked: sleep 30 followed "
        "by ...); a later call ran the same commands without a leading sleep, in the "
        "foreground, and worked (synthetic: no development-half run shows it)",
        (
            Step(
                tool="Bash",
                params={"command": "sleep 30 && curl -s localhost:8080/health"},
                output="Blocked: sleep 30 followed by: curl -s localhost:8080/health. To wait "
                "for a command you started, use run_in_background: true.",
                success=False,
            ),
            _sh("curl -s localhost:8080/health", '{"ok": true}'),
        ),
        (
            Step(
                tool="Bash",
                params={"command": "sleep 30 && curl -s localhost:8080/health"},
                output="Blocked: sleep 30 followed by: curl -s localhost:8080/health. To wait "
                "for a command you started, use run_in_background: true.",
                success=False,
            ),
            _sh("sleep 5 && curl -s localhost:8080/health", '{"ok": true}'),
        ),
    ),
    ShellChange(
        "importpath",
        "an interpreter died for want of a module (No module named M); with no install "
        "between, the same command then worked with PYTHONPATH (NODE_PATH) set to one "
        "folder of the project (synthetic: no development-half run shows it)",
        (
            _sh("python tools/report.py", "ModuleNotFoundError: No module named 'core'", False),
            _sh("PYTHONPATH=src python tools/report.py", "report written"),
        ),
        (
            _sh("python tools/report.py", "ModuleNotFoundError: No module named 'core'", False),
            _sh("PYTHONPATH=src python -m tools.report", "report written"),
        ),
    ),
    ShellChange(
        "env",
        "the failed output asked for an environment variable in plain words (set X=..., X "
        "is not set, requires X to be set); the same command then worked with X set, by "
        "X=v cmd, env X=v cmd or export X=v; cmd (synthetic: no real example yet)",
        (
            _sh("npx expo export", "Error: stdin is not interactive: set CI=true", False),
            _sh("CI=true npx expo export", "Exported: dist"),
        ),
        (
            _sh("npx expo export", "Error: stdin is not interactive: set CI=true", False),
            _sh("NODE_ENV=production npx expo export", "Exported: dist"),
        ),
    ),
    ShellChange(
        "escalation",
        "the same command refused by the sandbox or a permission, then run with an "
        "escalation parameter: a risky correction, held for a person",
        (
            _sh(
                "docker ps", "permission denied while trying to connect to the Docker daemon", False
            ),
            _sh("docker ps", "CONTAINER ID", dangerouslyDisableSandbox=True),
        ),
        (
            _sh("pytest -x", "E   assert 1 == 2\n1 failed", False),
            _sh("pytest -x", "1 passed", dangerouslyDisableSandbox=True),
        ),
    ),
)
