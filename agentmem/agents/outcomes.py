"""The outcome of a recorded call of a coding agent's tool, its diagnostic, and the run as
learning sees it.

:func:`outcome` reads one :class:`~agentmem.records.Step` with its client's table
(:mod:`.claude_code`, :mod:`.codex`); a tool no table knows keeps its recorded outcome.
The client's framing of an output (``Exit code N``, Codex's ``Command:`` / ``Chunk ID:``
/ ``Wall time:`` / ``Output:`` block, whatever its version) is found by its structure and
stripped (:func:`strip_headers`). A tool's own argument check refusing the call (a list
where a number was expected, a required parameter missing) is :attr:`~.base.Failure.SCHEMA`:
it never ran, and its error says what was wrong. For a shell call, the command is parsed
(:mod:`.shell`) and the program whose exit status the call returned decides
(:func:`status_command`: a pipeline's last program, filters such as ``| head`` passed
over; the messages of programs upstream of it, or of earlier pipelines that do not stop
the line, do not decide it):

* an exit code that answers a question is no failure (:attr:`.programs.Role.ANSWERS`: ``grep``,
  ``rg``, ``diff``, ``cmp``, ``test`` / ``[``, ``which``, ``git diff --exit-code``; exit 1
  and no diagnostic of a misuse);
* an existence probe answered "not there" is no failure either (:attr:`.programs.Role.PROBE`: ``ls
  PATH``, ``stat``, ``test -f``, ``command -v``, ``git rev-parse --verify``, ``git
  show-ref``, a ``curl -f`` answered 404);
* tests, builds, linters and inline scripts that failed on the code are
  :attr:`~.base.Failure.CODE`, unless the output says the command itself was wrong
  (``command not found``, an operand of the command not found, an unknown option);
* a call that exited with Windows' status for a program it could not start (9009, "is
  not recognized"; Git Bash reports it modulo 256, as 49) and wrote nothing is a misuse:
  the program never ran (the Microsoft Store's ``python`` / ``python3`` stub exits so),
  its diagnostic :func:`silent_not_found`'s words;
* everything else that failed is a misuse.

:func:`learning_view` is the run with those outcomes applied: calls that never ran
dropped, failures that are not misuses counted as done, inert parameters left out,
headers stripped and a misuse's output starting with its diagnostic line. Parameters
are judged against the failure they follow: an escalation (``sandbox_permissions:
require_escalated``, ``dangerouslyDisableSandbox``) after a refusal of the same command
is kept, and the refused call stays in the view as failed (:func:`escalations`): when the
escalated retry worked, or failed only after it got past the refusal (:func:`got_past`),
then counted as done; never when the run ran the refused program in the sandbox and it
worked (:func:`_sandbox_ran`: the sandbox refused what that call did, not the program).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from ..records import NO_RESULT, Step, Trajectory
from . import narrowed, programs
from .base import ClientTable, Failure, Outcome, ToolKind, ToolSpec, matches, spec_for
from .programs import CHECKS, Role
from .shell import Command, Script, command_of, parse, unwrap_argv

__all__ = [
    "RunView",
    "asked_variables",
    "blocked_sleep",
    "borrowed_params",
    "claimed_command",
    "claimed_intent",
    "command_line",
    "diagnostic",
    "env_retries",
    "failing_command",
    "got_past",
    "job_commands",
    "learning_view",
    "missing_script",
    "missing_script_error",
    "moves_nowhere",
    "not_started",
    "outcome",
    "refusal_line",
    "required_missing",
    "same_command",
    "session_noise",
    "shell_line",
    "silent_not_found",
    "status_command",
    "strip_headers",
    "timed_out",
    "tty_retries",
    "unquoted_retries",
    "view_indices",
    "wants_terminal",
]


def _roles(c: Command) -> frozenset[Role]:
    """The roles of a command: its program's and its subcommand's (:mod:`.programs`)."""
    p = programs.get(c.program)
    return (p.roles if p is not None else frozenset()) | programs.sub_roles(c.program, c.subcommand)


#: Lines that say the command itself was wrong (how it was called, what is missing).
_INVOCATION = re.compile(
    r"command not found|not found: |No such file or directory|cannot access|"
    r"not a git repository|[Uu]nknown option|unrecogni[sz]ed (?:option|flag)|invalid option|"
    r"illegal option|unrecognized arguments?|unknown (flag|command|subcommand)|"
    r"is not a \S+ command|[Uu]sage: |no such (file|directory|command)|"
    r"ModuleNotFoundError|No module named|Permission denied|cannot find module|"
    r"would be overwritten|ambiguous argument|unknown revision|pathspec .* did not match|"
    r"has no upstream branch|ignored by one of your .gitignore|"
    r"(?:zsh|bash)(?::\d+)?: no match(?:es found)?: ",  # the shell refused a glob: nothing ran
    re.IGNORECASE,
)
#: A line worth quoting, by what it says (the first one wins; a traceback's last line).
_DIAGNOSTIC = re.compile(
    r"command not found|No such file or directory|cannot access|not a git repository|"
    r"^fatal: |^error(\[\w+\])?: |^Error: |^ERROR[: ]|would be overwritten|"
    r"Permission denied|[Uu]nknown (option|flag|command)|[Uu]nrecognized|[Ii]nvalid option|"
    r"[Ii]llegal option|^[Uu]sage: |^\w*(Error|Exception)\b|not found|cannot |can't |"
    r"[Ff]ailed to |no upstream|ignored by",
)
_NOISE = re.compile(
    r"^(npm (warn|WARN|notice)|warning: |hint: |\s+at |\s*File \"|Traceback \(most recent|"
    r"\s*\^+\s*$|\s*\||Script error:\s*$)",  # Codex code mode's heading of the error
)
_TAGS = re.compile(r"</?tool_use_error>")
_SHELL_PREFIX = re.compile(r"^(\(eval\):\d+: |(\S*/)?(ba|z|da|k)?sh: (line )?\d*:? ?|zsh:\d+: )")


#: A framing line by its structure: ``Key: value`` (a key of one to four words, the
#: first capitalised) or ``Key:`` alone (Codex's ``Command: ...``, ``Chunk ID: ...``).
_FRAME_LINE = re.compile(r"^[A-Z][A-Za-z]*(?: [A-Za-z]+){0,3}:(?:\s.*)?$")
#: Keys that a diagnostic starts with, never a frame's.
_NOT_FRAME = re.compile(
    r"^(Error|Warning|Fatal|Exception|Traceback|Usage|Hint|Note|Caused by|Panic|Failed|"
    r"Failure|Assertion|Reason|Details?|Message|Problem|Cause)\b",
    re.IGNORECASE,
)
#: (``[^\d-]*``, not ``\D*``: a status of -1, a call killed by a signal, keeps its sign)
_EXIT_LINE = re.compile(r"^(?:Exit code|Process exited with code|Exit status)\b[^\d-]*(-?\d+)\s*$")
#: How many lines a client's framing may take at an output's head.
_FRAME_LINES = 20


def strip_headers(text: str, table: ClientTable | None) -> tuple[str, int | None]:
    """The output without its client's framing, and the exit code the framing states.

    The framing is found by its structure, for every version of a client: a block of
    ``Key: value`` lines at the output's head (blank lines between them allowed) that
    holds one of the client's known header lines (``Exit code N``, ``Wall time: ...``) or
    ends with ``Output:``; it is stripped through its last known header or ``Output:``
    line. A ``Key: value`` line that reads as a diagnostic (``Error: ...``) is never
    framing, and a block without a known header or ``Output:`` is the output itself.
    """
    if table is None or not table.headers:
        return text, None
    lines = text.split("\n")
    code: int | None = None
    end = 0  # lines[:end] are framing, once a known header or Output: line is seen
    k = 0
    while k < len(lines) and k < _FRAME_LINES:
        line = lines[k].strip()
        if not line:
            if end == 0 and k == 0:
                break
            k += 1
            continue
        known = matches(table.headers, line)
        if not known and (not _FRAME_LINE.match(line) or _NOT_FRAME.match(line)):
            break
        m = _EXIT_LINE.match(line)
        if m:
            code = int(m.group(1))
        k += 1
        if known or line == "Output:":
            end = k
        if line == "Output:":
            break
    return "\n".join(lines[end:]), code


#: An exception's own line: ``ValueError: ...``, ``CACError: Unknown option ...``.
_THROWN = re.compile(r"^[\w.]+(Error|Exception)\b")


def diagnostic(body: str) -> str:
    """The line of an output (headers already stripped) that says what went wrong."""
    lines = [_TAGS.sub("", x).strip() for x in body.split("\n")]
    lines = [x for x in lines if x and not _NOISE.match(x)]
    if not lines:
        return ""
    tb = [x for x in lines if _THROWN.match(x)]
    if any(x.startswith("Traceback") for x in body.split("\n")) and tb:
        return _clean(tb[-1])
    raw = [_TAGS.sub("", x).strip() for x in body.split("\n")]
    caret = next((i for i, x in enumerate(raw) if re.fullmatch(r"\^+", x)), None)
    if caret is not None:
        # Node's uncaught exception: the file, its source line, a caret, then the
        # exception ("CACError: Unknown option `--runInBand`"): never the source line
        thrown = [x for x in raw[caret + 1 :] if _THROWN.match(x)]
        if thrown:
            return _clean(thrown[0])
    at = next((i for i, x in enumerate(lines) if _DIAGNOSTIC.search(x)), 0)
    if re.search(r"following (issue|error|problem)s?:$", lines[at]) and at + 1 < len(lines):
        at += 1  # "InputValidationError: Task failed due to the following issue:" + the issue
    return _clean(lines[at])


def _clean(line: str) -> str:
    return _SHELL_PREFIX.sub("", line).strip()[:300]


def command_line(spec: ToolSpec, params: Mapping[str, Any]) -> str:
    """The command line a shell call ran (an argv read through ``bash -lc``)."""
    value = params.get(spec.command or "command")
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return unwrap_argv(value)
    return ""


def shell_line(s: Step) -> str | None:
    """The command line of a shell tool's call (:func:`command_line`), or None for another
    tool's call, or one that holds none."""
    found = spec_for(s.tool)
    if found is None or found[1].kind not in (ToolKind.SHELL, ToolKind.SHELL_INPUT):
        return None
    return command_line(found[1], s.params) or None


def failing_command(script: Script, body: str) -> Command | None:
    """The command of a script whose failure the output shows: the one the diagnostic
    names (``cat: x: No such file``, ``python: command not found``), else the command
    whose status the call returned (:func:`status_command`), else the last one that is
    not scene-setting (``cd``, ``echo``)."""
    cmds = [c for c in script.commands if not programs.has(c.program, Role.SCENE)]
    if not cmds:
        cmds = list(script.commands)
    if not cmds:
        return None
    text = body[:2000]
    for c in script.commands:
        name = re.escape(c.program)
        # bash's "cd: x: No such file", zsh's "(eval):cd:1: no such file or directory: x"
        if re.search(
            rf"(^|\n|: ){name}: |(^|[\s:)]){name}:\d+: |command not found: {name}\b", text
        ):
            return c
    paths = {t.rstrip("/") for t in re.findall(r"[\w.][\w./-]*/[\w./-]*", text)}
    for c in cmds:  # the command whose path operand the output names (or a folder of it)
        for o in c.operands:
            if "/" in o and (o in text or any(o.startswith(p + "/") for p in paths if p)):
                return c
    status = status_command(script)
    if status is not None and not programs.has(status.program, Role.SCENE):
        return status
    return cmds[-1]


def status_command(script: Script) -> Command | None:
    """The command whose exit status a failed call returned: the last pipeline's, and in
    it the last command that is not a filter passing its input on (``cargo build 2>&1 |
    tail``: under ``pipefail`` a failed pipeline ending in ``tail`` failed upstream)."""
    if not script.pipelines:
        return None
    cmds = script.pipelines[-1].commands
    for c in reversed(cmds[1:]):
        if not programs.has(c.program, Role.FILTER):
            return c
    return cmds[0]


def _upstream(script: Script, status: Command) -> frozenset[str]:
    """The programs whose messages do not decide a call that returned ``status``'s exit
    status: the commands before it in its pipeline (``ls x | rg y``: rg's status), and
    the earlier pipelines when its own ran whatever they did (joined by ``;``, ``||``,
    a new line), never after ``&&`` (a failure there stopped the line before it)."""
    last = script.pipelines[-1]
    names = {c.program for c in last.commands[: last.commands.index(status)]}
    if len(script.pipelines) > 1 and last.connector in ("", ";", "||", "&"):
        names |= {c.program for p in script.pipelines[:-1] for c in p.commands}
    return frozenset(names - {status.program})


def _own_lines(body: str, others: frozenset[str]) -> str:
    """The output without the lines that other programs prefixed with their name."""
    if not others:
        return body
    pat = re.compile(rf"^\s*(?:{'|'.join(re.escape(n) for n in sorted(others))}): ")
    return "\n".join(x for x in body.split("\n") if not pat.match(x))


#: A probe's answer: what it asked about is not there.
_ABSENT = re.compile(
    r"No such file or directory|cannot access|does not exist|not found|no \S+ in \(|"
    r"Needed a single revision|not a valid (ref|object)|unknown revision|bad revision",
    re.IGNORECASE,
)
#: A probe called wrongly (its own options), or itself missing: a misuse after all.
_PROBE_MISUSE = re.compile(
    r"command not found|not found: |unknown option|unrecognized option|invalid option|"
    r"illegal option|[Uu]sage: ",
    re.IGNORECASE,
)


def _probe_answer(c: Command, body: str, diag: str, code: int | None) -> bool:
    """Whether ``c`` is an existence probe whose failure is its answer ("is it there?":
    ``ls PATH``, ``test -f``, ``which X``, ``command -v X``, ``stat``, ``git rev-parse
    --verify``, ``git show-ref``, a ``curl -f`` answered 404), not a misuse."""
    if code in (126, 127) or _PROBE_MISUSE.search(body[:2000]):
        return False
    if c.program == "curl":
        return bool(re.search(r"returned error: 40[14]\b", body[:2000]))
    if Role.PROBE not in _roles(c) and c.words[:2] not in (("command", "-v"), ("command", "-V")):
        return False
    if c.program == "git":
        if c.subcommand == "rev-parse" and not any(
            f in ("--verify", "-q", "--quiet") for f in c.flags
        ):
            return False
        return not diag or bool(_ABSENT.search(diag)) or code == 1
    return not diag or bool(_ABSENT.search(diag))


#: A checker that never started (not installed here, or not in the project's environment):
#: the command's failure, not the code's.
_NOT_STARTED = re.compile(
    r"command not found|not found: |[Ff]ailed to spawn|executable file not found|"
    r"is not recognized as an internal or external command"
)


#: A package manager's report of a script its package.json lacks, naming it: npm's
#: ``Missing script: "lint"``, pnpm's ``ERR_PNPM_NO_SCRIPT Missing script: typecheck`` (and
#: ``Command "typecheck" not found``), yarn 1's ``error Command "x" not found``, yarn 2's
#: ``Couldn't find a script named "x"``, bun's ``Script not found "x"``. No check ran: the
#: command's failure, never the code's (``npm run typecheck`` is a check).
_NO_SCRIPT = re.compile(
    r"Missing script: \"?([\w:.@/-]+)\"?"
    r"|Command \"([\w:.@/-]+)\" not found"
    r"|Couldn't find a script named \"([\w:.@/-]+)\""
    r"|Script not found \"([\w:.@/-]+)\""
)


def missing_script(body: str) -> str | None:
    """The project script a package manager's output says its package.json lacks
    (``Missing script: typecheck``: ``typecheck``), or None."""
    m = _NO_SCRIPT.search(body[:3000])
    return next((g for g in m.groups() if g), None) if m else None


def missing_script_error(body: str) -> str | None:
    """The package manager's words that its package.json lacks a script (``Missing
    script: "lint"``, ``Command "lint" not found``), as :func:`missing_script` reads them;
    None when there are none. Words that say "script" first (pnpm writes both)."""
    said = [m.group(0) for m in _NO_SCRIPT.finditer(body[:3000])]
    return next((w for w in said if "script" in w.lower()), said[0] if said else None)


def _is_checker(c: Command) -> bool:
    roles = _roles(c)
    if roles & CHECKS:
        return True
    return programs.is_interpreter(c.program) and (
        any(f in ("-c", "-e", "--eval") for f in c.flags)
        or "-" in c.operands
        or any(op == "<<" for op, _ in c.redirects)
        or not c.operands  # a script fed on stdin
        or any(o.endswith((".py", ".js", ".ts", ".rb", ".exs", ".pl", ".php")) for o in c.operands)
    )


def _names_operand(c: Command, text: str) -> bool:
    """Whether an output names one of the command's own operands (a path it was given)."""
    for o in c.operands:
        if len(o) >= 2 and not o.startswith("$") and (o in text or o.rstrip("/") in text):
            return True
    return False


def _informational(c: Command, body: str, diag: str, code: int | None) -> bool:
    if code == -1:
        # Codex's -1: a signal stopped the call (the user, Codex, a pkill). It says nothing
        # of the call's arguments, so it is read as it was before its sign was kept, as 1
        code = 1
    if code not in (1, None):
        return False
    if c.program == "git" and c.subcommand == "diff":
        if any(f in ("--exit-code", "--quiet") for f in c.flags):
            return not _INVOCATION.search(body)
        return False
    if c.program == "git" and c.subcommand == "commit":
        # git's report that nothing is staged ("On branch main ... no changes added to
        # commit"): the state of the tree, exit 1, no failure of the call
        return _NOTHING_TO_COMMIT.search(body) is not None and not _INVOCATION.search(body)
    if Role.ANSWERS not in _roles(c) and c.words[:2] != ("command", "-v"):
        return False
    return not _INVOCATION.search(body) and (code == 1 or not diag or diag == "Error")


#: git commit's report that nothing is staged: a line of its own, as git prints it.
_NOTHING_TO_COMMIT = re.compile(
    r"(?m)^(?:nothing to commit|no changes added to commit|nothing added to commit)\b"
)


#: Windows' exit status for a program it could not start (9009: "is not recognized as an
#: internal or external command"), whole and as Git Bash reports it (9009 mod 256 = 49).
WINDOWS_NOT_FOUND = frozenset({9009, 9009 % 256})
#: The diagnostic of such a call, which wrote nothing: what a lesson may quote.
_SILENT = "exit code {} and no output"
_SILENT_RE = re.compile(r"exit code (\d+) and no output")


def silent_not_found(diag: str) -> bool:
    """Whether a diagnostic is that of a call whose program never started on Windows: exit
    status 9009 (49 in Git Bash) and no output at all (see the module doc)."""
    m = _SILENT_RE.fullmatch(diag.strip())
    return m is not None and int(m.group(1)) in WINDOWS_NOT_FOUND


#: The shell itself refused a line before running any of it (Windows PowerShell 5.1 on
#: ``&&``): a misuse of the shell, whatever programs the line names.
_SHELL_REJECTED = re.compile(r"[^\n]*The token '[^'\n]+' is not a valid statement separator[^\n]*")
#: PowerShell's parser refused the script, in any language ("+ CategoryInfo :
#: ParserError"); its message is the line under the ``~`` marker.
_PS_PARSER = re.compile(r"CategoryInfo\s*:\s*ParserError")
_PS_MARKED = re.compile(r"(?m)^\+\s+~+\s*\r?\n([^+\r\n][^\r\n]*)")


def powershell_refusal(body: str) -> str | None:
    """PowerShell's parser error in an output, any language (``+ CategoryInfo :
    ParserError``): its message, the line under the ``~`` marker ("" when none shows);
    None when PowerShell read the script."""
    if not _PS_PARSER.search(body[:6000]):
        return None
    said = _PS_MARKED.search(body[:3000])
    return _clean(said.group(1)) if said else ""


#: PowerShell's report of a program it found and could not start (the Codex app's own
#: ``rg.exe`` under WindowsApps: "Access is denied"), in any language: Windows PowerShell's
#: error record (``ResourceUnavailable: (:) [], ApplicationFailedException``,
#: ``NativeCommandFailed``), PowerShell 7's message ("Program 'rg.exe' failed to run").
_NOT_STARTED_PS = re.compile(
    r"ApplicationFailedException|FullyQualifiedErrorId : NativeCommandFailed"
    r"|Program '[^'\s]+' failed to run"
)


def not_started(body: str, names: Iterable[str] | None = None) -> bool:
    """Whether PowerShell says it could not start the program a line ran (its exit status
    then is PowerShell's, never the program's: ``rg``'s 1 is no "no match"). With
    ``names`` (the line's programs), its record must name one of them as ``NAME.exe``: a
    test's output that quotes such a record is no record of the line's own program."""
    if _NOT_STARTED_PS.search(body[:4000]) is None:
        return False
    if names is None:
        return True
    bare = {re.split(r"[\\/]", n)[-1].lower().removesuffix(".exe") for n in names}
    said = {m.lower() for m in re.findall(r"([\w.+-]+)\.exe\b", body[:4000], re.IGNORECASE)}
    return bool(bare & said)


#: The shell tool refused a line that starts with a long sleep, before running any of it:
#: Claude Code's "Blocked: sleep 30 followed by: ...", which says the way out (run it
#: without the sleep, or wait with run_in_background or an until-loop).
_SLEEP_BLOCKED = re.compile(r"^Blocked: (sleep \d+(?:\.\d+)?[smh]?) followed by\b")


def blocked_sleep(body: str) -> str | None:
    """``sleep N`` when a shell call's output (its framing stripped) is the tool's refusal
    of the line for the sleep at its head (:data:`_SLEEP_BLOCKED`); else None."""
    m = _SLEEP_BLOCKED.match(_TAGS.sub("", body).lstrip())
    return m.group(1) if m else None


def _shell_failure(
    spec: ToolSpec, params: Mapping[str, Any], body: str, code: int | None
) -> tuple[Failure, str]:
    if code in WINDOWS_NOT_FOUND and not body.strip():
        return Failure.MISUSE, _SILENT.format(code)  # the program never started
    if blocked_sleep(body) is not None:  # the tool refused the line: none of it ran
        return Failure.MISUSE, _clean(_TAGS.sub("", body).strip().split("\n", 1)[0])
    if silent_not_found(body):
        return Failure.MISUSE, body.strip()  # such a call as the learning view writes it
    diag = diagnostic(body)
    rejected = _SHELL_REJECTED.search(body[:2000])
    if rejected is not None:  # the shell refused the line: none of its commands ran
        return Failure.MISUSE, _clean(rejected.group(0))
    refused = powershell_refusal(body)
    if refused is not None:  # PowerShell could not read the script: none of it ran
        return Failure.MISUSE, refused or diag
    script = parse(command_line(spec, params))
    if not script.parsed:
        return Failure.MISUSE, diag
    if not_started(body, (c.program for c in script.commands)):
        return Failure.MISUSE, diag  # PowerShell found the line's program, could not start it
    status = status_command(script)
    if status is not None:
        own = _own_lines(body, _upstream(script, status))
        if _informational(status, own, diagnostic(own), code):
            return Failure.INFORMATIONAL, diag
    c = failing_command(script, body)
    if c is None:
        return Failure.MISUSE, diag
    if _probe_answer(c, body, diag, code):
        return Failure.INFORMATIONAL, diag
    if _is_checker(c):
        if code in (126, 127, *WINDOWS_NOT_FOUND) or _NOT_STARTED.search(body[:400]):
            return Failure.MISUSE, diag  # 9009 / 49: Windows did not start it (others wrote)
        own = (c.subcommand or "").removeprefix("run ").removeprefix("run-script ")
        if programs.has(c.program, Role.HOST) and missing_script(body) == own:
            return Failure.MISUSE, diag  # npm run typecheck with no such script: nothing ran
        if re.search(rf"No module named '?{re.escape(c.program)}\b", body[:2000]):
            return Failure.MISUSE, diag  # python -m pytest without pytest: the environment
        first = diag or ""
        if _INVOCATION.search(first) and (
            _names_operand(c, first)
            or re.search(r"(?i)unknown|unrecogni|invalid|illegal|usage", first)
        ):
            return Failure.MISUSE, diag
        return Failure.CODE, diag
    return Failure.MISUSE, diag


#: A tool's own check of its arguments refused the call: the error says what was wrong.
_SCHEMA = re.compile(
    r"InputValidationError|[Mm]issing required (parameter|argument|field|property)|"
    r"required parameter `?\w+`? is missing|[Ii]nvalid (\w+ ){0,3}(parameter|argument)s?\b|"
    r"[Ee]xpected (a |an )?(number|string|integer|boolean|array|object|list)\b.{0,40}"
    r"(got|received|but)|failed to parse function arguments|"
    r"(is|was) not of type '?(integer|number|string|boolean|array|object)",
)


#: The client refused a shell call's arguments (not the program's own usage error).
_CALL_REFUSED = re.compile(r"InputValidationError|failed to parse function arguments")


def schema_error(body: str) -> bool:
    """Whether an output says the tool's own argument check refused the call (a list given
    where a number was expected, an empty input, a missing required parameter)."""
    return bool(_SCHEMA.search(body[:400]))


#: A tool's own report that it ran out of time, in any client's or MCP server's words:
#: "timed out", "Timeout", "time-out", "deadline exceeded" (gRPC, Go), "ETIMEDOUT". A
#: ``timeout`` that a setting's value or a constraint follows ("timeout: 30", "parameter
#: 'timeout' must be at most 600", "timeout must be <= 120000", "timeout value out of
#: range") names a parameter: an argument error, no report.
_OWN_TIMEOUT = re.compile(
    r"(?i)\btimed[ -]?out\b|deadline[ _]exceeded|\bETIMEDOUT\b|\btime-?out\b"
    r"(?![\s'\"`]*(?:[:=(]|<=|>=|must\b|should\b|value\b|(?:is\s+)?out\s+of\s+range\b))"
)


def own_timeout(output: str) -> bool:
    """Whether a failed call's output opens with the tool's own report that it timed out
    (in its first 300 characters, before any content of its own). The call was cut off by
    the tool, not refused for its arguments: whatever the next call changed, nothing shows
    that the change was the fix. A parameter named ``timeout`` (``timeout: 30``, or with a
    constraint after it: "timeout must be a positive integer") is a setting, not a report."""
    return bool(_OWN_TIMEOUT.search(output[:300]))


#: The exit status of a command stopped for running past its limit: GNU ``timeout``'s, and
#: the one Codex gives a command it stopped.
TIMEOUT_EXIT = 124
#: A line that a program of the command wrote under its own name (``curl: (28) ...``,
#: ``zsh:1: ...``): the program's words, not the tool's.
_PROGRAM_LINE = re.compile(r"^([\w.+-]+)(?::\d+)?: ")


def _timed_out(
    table: ClientTable, spec: ToolSpec, params: Mapping[str, Any], body: str, code: int | None
) -> bool:
    """Whether a failed call's output (its framing stripped) is its tool's own report that
    the call ran past its time limit, read by its structure, for every client and tool:

    * the client's own words for it (``table.timeout``: Claude Code's "Command timed out
      after 2m", Codex's "command timed out after 10166 milliseconds") on the output's
      first line or on its last, after the part of the output the tool kept;
    * a shell call that exited with ``timeout``'s status, 124, and wrote nothing;
    * a first line that reports a time-out in any tool's words (:func:`own_timeout`: an
      MCP server's "Request timed out", "deadline exceeded", a search tool's "timed out
      after 20 seconds", a result that says only "Timeout"), or, for a tool that is no
      shell, a last line that does (after the part of its output it kept), unless, for a
      shell, a program of the command wrote it under its own name (``curl: (28) Operation
      timed out``): that is the program's answer, not the tool's limit.
    """
    lines = [x.strip() for x in _TAGS.sub("", body).split("\n") if x.strip()]
    if not lines:
        return spec.kind is ToolKind.SHELL and code == TIMEOUT_EXIT
    first, last = lines[0], lines[-1]
    if matches(table.timeout, first) or matches(table.timeout, last):
        return True
    if spec.kind is not ToolKind.SHELL:
        return own_timeout(first) or own_timeout(last)
    if not own_timeout(first):
        return False
    m = _PROGRAM_LINE.match(first)
    if m is None:
        return True
    script = parse(command_line(spec, params))
    return m.group(1) not in {c.program for c in script.commands} | {"sh", "bash", "zsh"}


def timed_out(step: Step) -> bool:
    """Whether a recorded call was cut off by its tool's own time limit, in any framing
    (:func:`_timed_out`; for a tool no client's table knows, :func:`own_timeout`): the one
    test every learning rule asks, so that no value, parameter, flag or operand lesson is
    made from a time-out."""
    return not step.success and outcome(step).failure is Failure.TIMEOUT


def _tool_failure(spec: ToolSpec, body: str) -> tuple[Failure, str]:
    diag = diagnostic(body)
    if any(e in body for e in spec.content_errors):
        return Failure.CODE, diag
    if any(words in body for words, _ in spec.refuses):
        return Failure.MISUSE, diag  # the tool's own refusal of what it was given
    if spec.kind in (ToolKind.AGENT, ToolKind.WEB, ToolKind.SHELL_INPUT):
        return Failure.CODE, diag  # the world's (a URL, a sub-agent's work), not the call
    if spec.code is not None:
        # a script's failure (Codex code mode): one of the calls it made failed, and which
        # one, with what, is not read one by one; nothing of the tool's own use is shown
        # (blind set 14: "If exec fails with 'Exit code: 1', retry with a corrected input")
        return Failure.CODE, diag
    if spec.kind is ToolKind.PATCH and not re.search(r"(?i)invalid patch|unknown|usage", body):
        return Failure.CODE, diag  # the patch's context did not match the file: its content
    return Failure.MISUSE, diag


def _not_run(table: ClientTable, raw: str, body: str) -> Failure | None:
    for text in (raw.lstrip(), body.lstrip()):
        text = _TAGS.sub("", text).lstrip()
        if matches(table.cancelled, text):
            return Failure.CANCELLED
        if matches(table.interrupted, text):
            return Failure.INTERRUPTED
        if matches(table.denied, text):
            return Failure.DENIED
        if matches(table.timeout, text):
            return Failure.TIMEOUT
    return None


def outcome(step: Step) -> Outcome:
    """What a recorded call's outcome says (see the module doc)."""
    return _outcome(step.tool, _key(step.params), step.output, step.success)


def _key(params: Mapping[str, Any]) -> str:
    import json

    return json.dumps(params, sort_keys=True, default=str)


@functools.lru_cache(maxsize=8192)
def _outcome(tool: str, params_json: str, output: str, success: bool) -> Outcome:
    import json

    if not success and output == NO_RESULT:
        # the transcript holds no result (the session ended or was cut first): whatever
        # the call did is unknown, as for an interrupted call, and it teaches nothing
        return Outcome(True, Failure.INTERRUPTED)
    found = spec_for(tool)
    if found is None:
        last = output.strip().rsplit("\n", 1)[-1]
        if not success and (own_timeout(output) or own_timeout(last)):
            return Outcome(True, Failure.TIMEOUT, diagnostic(output))
        return Outcome(not success, Failure.NONE if success else Failure.MISUSE)
    table, spec = found
    body, code = strip_headers(output, table)
    if success:
        return Outcome(False, Failure.NONE, exit_code=code)
    stopped = _not_run(table, output, body)
    if stopped is not None:
        return Outcome(True, stopped, diagnostic(body), code)
    params = json.loads(params_json)
    if schema_error(body) and (spec.kind is not ToolKind.SHELL or _CALL_REFUSED.search(body[:400])):
        return Outcome(True, Failure.SCHEMA, diagnostic(body), code)
    if _timed_out(table, spec, params, body, code):
        return Outcome(True, Failure.TIMEOUT, diagnostic(body), code)
    if spec.kind is ToolKind.SHELL:
        failure, diag = _shell_failure(spec, params, body, code)
    else:
        failure, diag = _tool_failure(spec, body)
    return Outcome(True, failure, diag, code)


#: Parameters that ask for more than the sandbox allows: inert in general, a correction
#: when the call before, with the same command, was refused by the sandbox or a permission.
ESCALATION = frozenset(
    {"sandbox_permissions", "with_escalated_permissions", "dangerouslyDisableSandbox"}
)
_REFUSED = re.compile(
    r"Operation not permitted|Permission denied|\bEPERM\b|\bEACCES\b|sandbox|"
    r"Read-only file system|Could not resolve host|[Nn]etwork is unreachable|"
    r"getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|Temporary failure in name resolution",
    re.IGNORECASE,
)


def escalates(params: Mapping[str, Any]) -> str | None:
    """The escalation parameter a call sets (``sandbox_permissions: require_escalated``,
    ``dangerouslyDisableSandbox: true``), or None."""
    for k in sorted(ESCALATION & set(params)):
        v = params[k]
        if v is True or (isinstance(v, str) and v not in ("", "use_default", "false")):
            return k
    return None


def moves_nowhere(c: Command, here: str) -> bool:
    """Whether ``c`` is a ``cd`` to the session's own folder ``here`` (the run's cwd, with
    or without a trailing ``/``): it moves nowhere."""
    here = here.rstrip("/")
    return bool(here) and c.program == "cd" and [o.rstrip("/") for o in c.operands] == [here]


def job_commands(script: Script, here: str = "") -> tuple[Command, ...]:
    """The commands of a script that do its job: without the filters its output passed
    through after the first command of a pipeline (``| head``, ``| sort``:
    :attr:`Role.FILTER`), without what only sets the scene (``echo``, ``export``,
    ``sleep``: :attr:`Role.SCENE`; a ``cd`` stays) and, given the session's folder
    ``here``, without a ``cd`` to it (:func:`moves_nowhere`)."""
    out: list[Command] = []
    for p in script.pipelines:
        for k, c in enumerate(p.commands):
            if k and programs.has(c.program, Role.FILTER):
                continue
            if programs.has(c.program, Role.SCENE) and not programs.has(c.program, Role.CHDIR):
                continue  # echo done, export X=1, sleep 2: nothing of the job
            if moves_nowhere(c, here):
                continue
            out.append(c)
    return tuple(out)


def _core(line: str) -> tuple[tuple[str, ...], ...] | None:
    """A command line's commands as a retry is compared with it: each one's words (without
    a wrapper that runs it as it is: ``time``, ``nice``) of the commands that do its job
    (:func:`job_commands`); None when bash cannot read it."""
    script = parse(line)
    if not script.parsed:
        return None
    out: list[tuple[str, ...]] = []
    for c in job_commands(script):
        plain = all(programs.has(w.split()[0], Role.TRANSPARENT) for w in c.wrappers)
        at = next((n for n, w in enumerate(c.words) if w.rsplit("/", 1)[-1] == c.program), 0)
        out.append(c.words[at:] if c.wrappers and plain else c.words)
    return tuple(out) or None


def same_command(a: str, b: str) -> bool:
    """Whether two command lines run the same commands, up to ``2>&1``, a filter on the
    output, ``echo`` around them or ``time`` before them: a retry in another shape."""
    if a == b:
        return True
    core = _core(a)
    return core is not None and core == _core(b)


def _extends(a: str, b: str) -> bool:
    """Whether command line ``b`` runs ``a``'s commands first (as :func:`same_command`
    reads them), then more (``a && docker logs x``): a retry that went on past ``a``."""
    core_a, core_b = _core(a), _core(b)
    return (
        core_a is not None
        and core_b is not None
        and len(core_b) > len(core_a)
        and core_b[: len(core_a)] == core_a
    )


def escalations(steps: tuple[Step, ...]) -> dict[int, int]:
    """{refused call: the call that escalated past it}: a successful shell call that sets an
    escalation parameter, after a call of the same command (or one that runs its commands
    first, then more: :func:`_extends`), without it, that failed with a refusal (the
    sandbox, a permission: :data:`_REFUSED`, or a denial) among the three calls before it.
    A parameter is inert only relative to the failure it follows."""
    out: dict[int, int] = {}
    ran: frozenset[str] | None = None  # what ran in the sandbox: read once, when first asked
    for i, step in enumerate(steps):
        found = spec_for(step.tool)
        if found is None or found[1].kind is not ToolKind.SHELL:
            continue
        if escalates(step.params) is None:
            continue
        cmd = command_line(found[1], step.params)
        for k in range(i - 1, max(-1, i - 4), -1):
            prev = steps[k]
            pf = spec_for(prev.tool)
            if pf is None or pf[1].kind is not ToolKind.SHELL or prev.success:
                continue
            before = command_line(pf[1], prev.params)
            if not same_command(before, cmd) and not _extends(before, cmd):
                continue
            if escalates(prev.params) is not None:
                continue
            o = outcome(prev)
            refused = o.failure is Failure.DENIED or _REFUSED.search(prev.output[:2000])
            if refused and (step.success or got_past(prev, step)):
                ran = _ran_in_sandbox(steps) if ran is None else ran
                # a refusal the run contradicts (the program ran in the sandbox) is no lesson
                if not _sandbox_ran(steps, k, ran):
                    out[k] = i
            break
    return out


def claimed_command(c: Command) -> Command:
    """The command a refusal of ``c`` is about: ``c`` itself, or, when its program is a bare
    word the program table does not know and the next word is a program it knows, the
    command after that word (``rtk git add x``, a wrapper agentmem does not know, is about
    ``git add x``), when that program takes a subcommand and is given one. A word that also
    names a subcommand (``test``, ``build``: ``mytool test``), a wrapper (``vercel env
    pull``), a scene-setter, a probe, or a program without a subcommand of its own (``cdk
    diff``, ``fly ssh console``, ``wrangler tail``) is the tool's own subcommand, not a
    program started so."""
    script = _shell_script(c)
    if script is not None:
        return script
    if programs.get(c.program) is not None or not re.fullmatch(r"[A-Za-z][\w-]*", c.program):
        return c
    at = c.words.index(c.program) if c.program in c.words else -1
    rest = c.words[at + 1 :] if at >= 0 else ()
    nxt = programs.get(os.path.basename(rest[0])) if rest else None
    if nxt is None or nxt.name in programs.GENERIC_SUBCOMMANDS:
        return c
    if nxt.roles & {Role.SCENE, Role.PROBE, Role.WRAPPER}:
        return c
    inner = command_of(rest, c.redirects, c.assignments)
    # only a program that takes a subcommand, given one (rtk git add): cdk diff, fly ssh
    # console or wrangler tail name their tool's own subcommand, not diff, ssh or tail
    if inner is None or not nxt.takes_subcommand or not inner.subcommand:
        return c
    return inner


def _shell_script(c: Command) -> Command | None:
    """The script a shell was given to run (``bash .specify/scripts/bash/x.sh --json``: the
    command ``x.sh --json``, as ``./x.sh --json`` reads), or None: the shell only starts it,
    and a refusal is of what the script did (wave 8's audit found "bash is refused in the
    sandbox" false: bash ran there in the session's other runs)."""
    if not programs.has(c.program, Role.SHELL) or c.program not in c.words:
        return None
    rest = list(c.words[c.words.index(c.program) + 1 :])
    while rest and rest[0].startswith("-") and rest[0] not in ("-c", "-lc", "-ic"):
        rest.pop(0)  # the shell's own options (-x, -e, -l)
    if not rest or not re.search(r"/|\.(?:sh|bash|zsh)$", rest[0]):
        return None
    return command_of(tuple(rest), c.redirects, c.assignments)


def claimed_intent(c: Command) -> str:
    """What a refusal of ``c`` names: the program of :func:`claimed_command` and its
    subcommand (``git add``), never its operands."""
    x = claimed_command(c)
    return f"{x.program} {x.subcommand}" if x.subcommand else x.program


def _sandbox_intent(c: Command) -> str:
    """:func:`claimed_intent`, with the action of a subcommand that takes its own
    (``docker compose up`` beside ``docker compose config``: only the first talks to the
    daemon, which the sandbox refuses): what a run's other call must have done to show a
    refusal of ``c`` was not of its program."""
    x = claimed_command(c)
    at = x.args.index(x.subcommand) + 1 if x.subcommand in x.args else len(x.args)
    action = programs.group_action(x.program, x.subcommand, x.args[at:])
    return f"{claimed_intent(c)} {action}" if action else claimed_intent(c)


def _sandbox_ran(steps: tuple[Step, ...], k: int, ran: frozenset[str] | None = None) -> bool:
    """Whether the run contradicts the refusal of call ``k``: another shell call ran the
    program it names (and its subcommand: :func:`claimed_intent`) without an escalation,
    inside the sandbox, and that command worked (its call succeeded, every command after
    it joined by ``&&``). Then the sandbox refused what the call did (a write into ``.git``,
    a lock file), not the program, and "P is refused in the sandbox" would be false.
    ``ran``: :func:`_ran_in_sandbox` of ``steps``, read once for all the run's refusals
    (a run may have hundreds of them in 2,000 calls)."""
    found = spec_for(steps[k].tool)
    script = parse(command_line(found[1], steps[k].params)) if found else None
    if script is None or not script.parsed:
        return False
    c = failing_command(script, steps[k].output)
    if c is None:
        return False
    return _sandbox_intent(c) in (_ran_in_sandbox(steps) if ran is None else ran)


def _ran_in_sandbox(steps: tuple[Step, ...]) -> frozenset[str]:
    """The intents (:func:`claimed_intent`) that a successful shell call without an
    escalation shows worked in the sandbox (:func:`_worked`). A refused call failed, so
    it is never among those calls."""
    out: set[str] = set()
    for s in steps:
        other = spec_for(s.tool)
        if not s.success or other is None or other[1].kind is not ToolKind.SHELL:
            continue
        if escalates(s.params) is None:
            out |= _worked(command_line(other[1], s.params))
    return frozenset(out)


def _worked(line: str) -> set[str]:
    """The intents (:func:`claimed_intent`) of the commands of a successful call's
    ``line`` whose success it shows: each after which every pipeline is joined by ``&&``,
    and not run only after another failed (``a || b``); and a shell the line starts with
    (``bash -lc '...'``, read through to its script), which ran and worked."""
    script = parse(line)
    out: set[str] = set()
    first = line.split(maxsplit=1)[0] if line.strip() else ""
    if programs.has(os.path.basename(first), Role.SHELL):
        out.add(os.path.basename(first))
    if not script.parsed:
        return out
    ps = script.pipelines
    for at, p in enumerate(ps):
        if (at and p.connector == "||") or any(q.connector != "&&" for q in ps[at + 1 :]):
            continue
        out |= {_sandbox_intent(c) for c in p.commands}
    return out


#: The importer's own heading of a Codex sandbox refusal (its stderr follows).
_DENIAL_HEAD = re.compile(r"^sandbox denied(?: \(exit code -?\d+\))?$")


def refusal_line(output: str) -> str | None:
    """The line of an output that says the sandbox or a permission refused the call
    (``ssh: Could not resolve hostname github.com``), without a shell's prefix; a line
    of the command's own stderr before the importer's heading ``sandbox denied (exit code
    1)``, which says no more than that; None."""
    found = [_clean(line.strip()) for line in output[:2000].splitlines() if _REFUSED.search(line)]
    said = [x for x in found if not _DENIAL_HEAD.match(x)] or found
    return said[0] if said else None


def got_past(refused: Step, retry: Step) -> bool:
    """Whether an escalated retry that failed got past the refusal of the call before it:
    it ran (no denial, rejection, abort or time-out of its own), wrote something, and its
    output shows no refusal of the same words (the refused call's ``Could not resolve
    host`` is gone; a compile error, a failing test or an ``ssh`` key's ``Permission
    denied (publickey)`` is the command's own failure). A refusal that only the retry's
    failure could show, the user's "rejected" or "aborted", keeps it out."""
    o = outcome(retry)
    found = spec_for(retry.tool)
    body = strip_headers(retry.output, found[0] if found else None)[0][:2000]
    if not o.ran or not body.strip() or _USER_STOPPED.search(body):
        return False
    said, again = _refusal_words(refused.output[:2000]), _refusal_words(body)
    lines = {x.strip() for x in refused.output[:2000].splitlines() if _REFUSED.search(x)}
    return not (said & again) and not any(x and x in body for x in lines)


#: A name that did not resolve, in any of :data:`_REFUSED`'s wordings: one refusal, so
#: that a retry's ``getaddrinfo EAI_AGAIN`` after ``getaddrinfo ENOTFOUND`` (or curl's
#: ``Could not resolve host``) is the same refusal again, not a way past it (review 34).
_NO_NAME = re.compile(r"could not resolve host|getaddrinfo|name resolution", re.IGNORECASE)


def _refusal_words(text: str) -> set[str]:
    """The :data:`_REFUSED` words of a text, lower case, every failed name lookup as one."""
    words = (m.group(0).lower() for m in _REFUSED.finditer(text))
    return {"name resolution" if _NO_NAME.search(w) else w for w in words}


#: The user (or the client for them) stopped or refused an escalated call.
_USER_STOPPED = re.compile(
    r"\b(rejected|aborted|declined|denied) by (the )?user\b|user (rejected|aborted|declined|"
    r"denied)\b|\bnot approved\b",
    re.IGNORECASE,
)


#: A failure that a terminal answers: the program wanted one (``stdin is not a terminal``,
#: ``the input device is not a TTY``, Ink's ``Raw mode is not supported``) or the session's
#: stdin was closed because it was started without one. ``tty: true`` on the same
#: command's retry is then the correction, not a parameter that changes nothing.
_NO_TTY = re.compile(
    r"\bnot a (?:terminal|tty)\b|\bno tty\b|input device is not a TTY|"
    r"[Rr]aw mode is not supported|stdin is closed\b[^\n]{0,60}\btty\b|"
    r"[Ii]nappropriate ioctl for device|must be run (?:in|from) a terminal",
    re.IGNORECASE,
)
#: The parameter that gives a command a terminal.
TTY = "tty"


def wants_terminal(text: str) -> bool:
    """Whether a failed output says the program wanted a terminal it did not get
    (``the input device is not a TTY``, ``stdin is not a terminal``)."""
    return _NO_TTY.search(text[:2000]) is not None


def tty_retries(steps: tuple[Step, ...]) -> dict[int, int]:
    """{failed call: the call that ran it with a terminal}: a successful shell call that
    sets ``tty: true``, after a call of the same command without it, among the three
    calls before it, whose failure says it wanted a terminal (:data:`_NO_TTY`)."""
    out: dict[int, int] = {}
    for i, step in enumerate(steps):
        found = spec_for(step.tool)
        if found is None or found[1].kind is not ToolKind.SHELL or not step.success:
            continue
        if step.params.get(TTY) is not True:
            continue
        cmd = command_line(found[1], step.params)
        for k in range(i - 1, max(-1, i - 4), -1):
            prev = steps[k]
            pf = spec_for(prev.tool)
            if pf is None or pf[1].kind is not ToolKind.SHELL or prev.success:
                continue
            if not same_command(command_line(pf[1], prev.params), cmd):
                continue
            if prev.params.get(TTY) is True:
                continue
            if _NO_TTY.search(strip_headers(prev.output, pf[0])[0][:2000]):
                out[k] = i
            break
    return out


_VAR = r"[`'\"$]?([A-Z][A-Z0-9]*_?[A-Z0-9_]*)\b[`'\"]?"
#: A failure that asks for an environment variable in plain words: "set CI=true", "export
#: X=...", "X is not set", "requires X to be set", "missing environment variable: X".
_ASKS_ENV = re.compile(
    rf"\b(?:[Ss]et|[Ee]xport|[Dd]efine)\s+(?:the\s+)?(?:environment\s+variable\s+)?{_VAR}"
    rf"|{_VAR}\s+(?:environment\s+variable\s+)?(?:is\s+)?"
    r"(?:not set|unset|must be set|needs to be set|is required|required|missing)"
    rf"|\brequires?\s+(?:the\s+)?(?:environment\s+variable\s+)?{_VAR}\s+(?:to be set|set)"
    rf"|\b[Mm]issing\s+(?:required\s+)?environment\s+variables?:?\s+{_VAR}"
)


def asked_variables(text: str) -> frozenset[str]:
    """The environment variables a failed output asks for in so many words (its first
    1,500 characters)."""
    found = (n for m in _ASKS_ENV.finditer(text[:1500]) for n in m.groups() if n)
    return frozenset(n for n in found if len(n) > 1)


def env_retries(steps: tuple[Step, ...]) -> dict[int, int]:
    """{failed call: the call that set what it asked for}: a failed shell call whose output
    asks for an environment variable (:func:`asked_variables`; a script that stops on a
    missing setting fails as the code's, so the view would count it done), and among the
    three calls after it a successful shell call whose command line assigns that variable
    (``X=v cmd``, ``export X=v; cmd``) where the failed one did not. The pair stays in the
    view for :mod:`agentmem.learning.shell_fixes` to judge."""
    out: dict[int, int] = {}
    for i, step in enumerate(steps):
        found = spec_for(step.tool)
        if found is None or found[1].kind is not ToolKind.SHELL or step.success:
            continue
        names = asked_variables(strip_headers(step.output, found[0])[0])
        was = command_line(found[1], step.params)
        for k in range(i + 1, min(len(steps), i + 4)):
            nxt = steps[k]
            nf = spec_for(nxt.tool)
            if nf is None or nf[1].kind is not ToolKind.SHELL or not nxt.success:
                continue
            line = command_line(nf[1], nxt.params)
            if any(re.search(rf"(?<![\w$]){n}=", line) for n in names) and not any(
                re.search(rf"(?<![\w$]){n}=", was) for n in names
            ):
                out[i] = k
            break
    return out


def _json_kind(value: Any) -> type | None:
    """The kind of JSON value (list or dict) a string's text opens, else None. The text
    need not parse: a model that writes an array as a string often cuts it short too."""
    if not isinstance(value, str):
        return None
    head = value.lstrip()[:1]
    return list if head == "[" else dict if head == "{" else None


def unquoted_retries(steps: tuple[Step, ...]) -> dict[int, int]:
    """{refused call: its retry}: a client tool's own argument check refused a call
    (:attr:`~.base.Failure.SCHEMA`) in which one parameter was a string holding JSON's
    text (an array or object written as a string, opening with ``[`` or ``{``), and the
    next call of that tool, among the three after it, passed that parameter as an array
    (or object), every other parameter alike, and worked. A one-off slip whose error says
    what was wrong teaches nothing; passing a structured parameter as its JSON text is the
    one such slip the retry names exactly."""
    out: dict[int, int] = {}
    for i, step in enumerate(steps):
        if step.success or spec_for(step.tool) is None:
            continue
        if outcome(step).failure is not Failure.SCHEMA:
            continue
        nxt = next(
            (k for k in range(i + 1, min(len(steps), i + 4)) if steps[k].tool == step.tool),
            None,
        )
        if nxt is None or not steps[nxt].success:
            continue
        p, q = dict(step.params), dict(steps[nxt].params)
        if set(p) != set(q):
            continue
        changed = [k for k in p if p[k] != q[k]]
        if len(changed) != 1:
            continue
        x = changed[0]
        kind = _json_kind(p[x])
        if kind is not None and isinstance(q[x], kind):
            out[i] = nxt
    return out


#: The parameter a tool's own argument check says is required and was not given: zod's
#: ``"path": ["edits"], "message": "Required"`` (an MCP server's), "The required parameter
#: `options` is missing", "missing required parameter: X".
_REQUIRED = re.compile(
    r'"path":\s*\[\s*"(?P<a>\w+)"\s*\][^{}]*?"message":\s*"Required"'
    r"|required parameter `?(?P<b>[\w.\[\]]+)`? is missing"
    r"|[Mm]issing required (?:parameter|argument|field|property):? ['\"`]?(?P<c>\w+)"
)


def required_missing(step: Step) -> str | None:
    """The parameter a failed call's tool refused it for lacking (:data:`_REQUIRED`; the
    call did not pass it), or None."""
    m = _REQUIRED.search(step.output[:2000])
    name = next((g for g in m.groups() if g), None) if m else None
    return name if name and name not in step.params else None


def borrowed_params(steps: tuple[Step, ...]) -> dict[int, int]:
    """{refused call: the other tool's call}: a tool's own argument check refused a call
    for lacking a required parameter (:func:`required_missing`: the filesystem MCP
    server's ``edit_file`` given no ``edits``), and within the three calls after it,
    before that tool worked, another tool worked that takes two or more of the refused
    call's parameters by the same names with the same values, and not the missing one (the
    built-in ``Edit``, given the same ``old_string`` and ``new_string``) and every value
    the refused call gave: the call spoke the other tool's parameters. Any other schema
    error teaches nothing."""
    out: dict[int, int] = {}
    for i, step in enumerate(steps):
        if step.success or spec_for(step.tool) is None:
            continue
        if outcome(step).failure is not Failure.SCHEMA:
            continue
        missing = required_missing(step)
        if missing is None:
            continue
        for k in range(i + 1, min(len(steps), i + 4)):
            later = steps[k]
            if later.tool == step.tool:
                if later.success:
                    break  # the tool itself worked: its own parameters were the fix
                continue
            same = [
                n
                for n, v in step.params.items()
                if isinstance(v, str) and v and later.params.get(n) == v
            ]
            # every value the call gave went to the other tool (a path, perhaps by another
            # name): a look-up given two of them (owner, repo) took none of the call's own
            given = {v for v in step.params.values() if isinstance(v, str) and v}
            took = {v for v in later.params.values() if isinstance(v, str)}
            if later.success and len(same) >= 2 and missing not in later.params and given <= took:
                out[i] = k
                break
    return out


def _view_step(
    step: Step, *, refused: bool = False, escalated: bool = False, tty: bool = False
) -> Step | None:
    found = spec_for(step.tool)
    if found is None:
        return step
    table, spec = found
    o = outcome(step)
    if not o.ran and not refused:
        return None
    keep = (ESCALATION if escalated else frozenset()) | ({TTY} if tty else frozenset())
    params = {k: v for k, v in step.params.items() if k not in spec.inert or k in keep}
    body, _ = strip_headers(step.output, table)
    body = _TAGS.sub("", body)
    if (o.teachable or refused) and o.diagnostic:
        rest = body.strip()
        first = _clean(_TAGS.sub("", rest.split("\n", 1)[0]).strip())
        if first != o.diagnostic:
            body = o.diagnostic + ("\n" + rest if rest else "")
    success = step.success or not (o.teachable or refused) or escalated
    if params == step.params and body == step.output and success == step.success:
        return step
    return attrs.evolve(step, params=params, output=body, success=success)


@attrs.frozen
class RunView:
    """A run read once as learning sees it (:func:`learning_view`): its task and its calls,
    each with its outcome applied. The steps that judge a run against a lesson
    (:mod:`agentmem.learning.outcomes`, :mod:`agentmem.learning.support`) take a
    ``RunView``, never a raw trajectory, so that reaching past it to raw steps (an ``rg``
    no match counted as a repeated mistake) is a type error, not a silent difference."""

    task: str
    steps: tuple[Step, ...]

    @classmethod
    def of(cls, t: Trajectory) -> RunView:
        """The run ``t`` as learning reads it."""
        v = learning_view(t)
        return cls(v.task, v.steps)


#: The shortest line that may be read as session noise (a line that says something).
_NOISE_MIN = 12


def _body_lines(step: Step) -> tuple[str, list[str]] | None:
    """A shell call's framing and the lines of its body, None for another tool's call."""
    found = spec_for(step.tool)
    if found is None or found[1].kind is not ToolKind.SHELL:
        return None
    body, _ = strip_headers(step.output, found[0])
    if not step.output.endswith(body):
        return None
    return step.output[: len(step.output) - len(body)], body.split("\n")


def session_noise(steps: tuple[Step, ...]) -> frozenset[str]:
    """The lines a run prints whatever the call (a shell startup warning such as a profile
    script's ``Operation not permitted`` on every output): a line of at least
    :data:`_NOISE_MIN` characters found in the outputs of two or more shell calls of the
    run that succeeded and of at least half of its shell calls. Such a line is never a
    failure's diagnostic, nor what a kind keys on: it says nothing about the call that
    printed it. (A line that only some calls print, a build's own progress, is not noise.)"""
    ok: dict[str, int] = {}
    every: dict[str, int] = {}
    calls = 0
    for step in steps:
        read = _body_lines(step)
        if read is None:
            continue
        calls += 1
        for line in {x.strip() for x in read[1]}:
            if len(line) >= _NOISE_MIN and re.search(r"[A-Za-z]", line):
                every[line] = every.get(line, 0) + 1
                ok[line] = ok.get(line, 0) + step.success
    return frozenset(x for x, n in ok.items() if n >= 2 and 2 * every[x] >= calls)


def _denoised(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """The run with :func:`session_noise` taken out of its failed shell calls' outputs."""
    noise = session_noise(steps)
    if not noise:
        return steps
    out: list[Step] = []
    for step in steps:
        read = None if step.success else _body_lines(step)
        if read is not None and any(x.strip() in noise for x in read[1]):
            kept = "\n".join(x for x in read[1] if x.strip() not in noise)
            step = attrs.evolve(step, output=read[0] + kept)
        out.append(step)
    return tuple(out)


def _viewed(steps: tuple[Step, ...], cwd: str = "") -> list[Step | None]:
    """Each recorded call as learning reads it, None for one left out; a failed call's
    output is read without the run's :func:`session_noise`. ``cwd``: the run's folder."""
    steps = _denoised(steps)
    esc = escalations(steps)
    retries = set(esc.values())
    kept = set(esc) | set(unquoted_retries(steps))  # a JSON text retried as its value
    kept |= set(borrowed_params(steps))  # another tool's parameters, then that tool
    kept |= set(env_retries(steps))  # a variable the failure asked for, then set
    kept |= set(narrowed_searches(steps, cwd))  # a search that timed out, then narrowed
    tty = set(tty_retries(steps).values())
    return [
        _view_step(s, refused=i in kept, escalated=i in retries, tty=i in tty)
        for i, s in enumerate(steps)
    ]


def view_indices(t: Trajectory) -> list[int | None]:
    """For each recorded call of ``t``, its index in :func:`learning_view` ``(t)``, or None
    for a call the view leaves out: a step that must know how a call really ended (a
    failed inline script counts as done in the view) reads the recorded run and reports
    indices of the view."""
    if not any(spec_for(s.tool) is not None for s in t.steps):
        return list(range(len(t.steps)))
    out: list[int | None] = []
    n = 0
    for v in _viewed(t.steps, str(t.meta.get("cwd") or "")):
        out.append(None if v is None else n)
        n += v is not None
    return out


def learning_view(t: Trajectory) -> Trajectory:
    """The run as learning reads it (see the module doc); a run of tools no client table
    knows is returned as it is. Applying it twice changes nothing more.

    A call refused by the sandbox or a permission and then run again with an escalation
    parameter stays in the view as a failed call, and its retry keeps that parameter
    (:func:`escalations`): the pair is a correction, an escalation. A retry that gave a
    command the terminal its failure asked for keeps ``tty`` (:func:`tty_retries`). A
    schema refusal of a parameter passed as its JSON text, retried with the value itself,
    stays as failed too (:func:`unquoted_retries`), and so does a Glob that ran out of
    time over a whole folder before a search inside it found the file
    (:func:`narrowed_searches`)."""
    if not any(spec_for(s.tool) is not None for s in t.steps):
        return t
    viewed = _viewed(t.steps, str(t.meta.get("cwd") or ""))
    steps = [v for v in viewed if v is not None]
    if len(steps) == len(t.steps) and all(a is b for a, b in zip(steps, t.steps)):
        return t
    cwds = t.meta.get("cwds")
    if len(steps) == len(t.steps) or not isinstance(cwds, dict):
        return attrs.evolve(t, steps=tuple(steps))
    # the folders of the calls by index (the importer's ``cwds``): the view's indices
    at, n = {}, 0
    for i, v in enumerate(viewed):
        if v is not None:
            at[str(i)], n = str(n), n + 1
    moved = {at[k]: p for k, p in cwds.items() if k in at}
    return attrs.evolve(t, steps=tuple(steps), meta={**t.meta, "cwds": moved})


# -- a Glob that ran out of time, then narrowed (:mod:`.narrowed`) ---------------------


def _glob_timeout(step: Step) -> bool:
    return (
        step.tool == "Glob"
        and not step.success
        and outcome(step).failure is Failure.TIMEOUT
        and isinstance(step.params.get("pattern"), str)
    )


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
        p = narrowed.resolved(path, root, cwd) if isinstance(path, str) else None
        return ([(p, True)] if p is not None and narrowed.strictly_in(p, root) else []), cwd, ()
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
            to = narrowed.resolved(c.operands[0], root, at) if c.operands else None
            at, moved = to or "", c
            continue
        jobs = programs.jobs(c.program)
        if not jobs & {"list", "search"}:
            continue
        words = narrowed.places(c)
        places = [p for w in words if (p := narrowed.resolved(w, root, at)) is not None]
        if not words and at:
            places = [at]
        mine = [(p, "list" in jobs) for p in places if narrowed.strictly_in(p, root)]
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
    here = narrowed.norm_folder(cwd) if cwd else ""
    for i, step in enumerate(steps):
        if not _glob_timeout(step):
            continue
        parts = narrowed.significant_parts(str(step.params["pattern"]))
        root = narrowed.glob_root(step.params, here)  # None: no folder we can read
        if not parts or not root or root == "/":
            continue
        for j in range(i + 1, min(len(steps), i + 1 + narrowed.WINDOW)):
            later = steps[j]
            if not later.success:
                continue
            folders, at, _ = _searched(later, root, here)
            if folders and narrowed.names(later.output, parts, folders, root, at):
                out[i] = j
                break
    return out
