"""The outcome of a recorded call of a coding agent's tool, its diagnostic, and the run as
learning sees it.

:func:`outcome` reads one :class:`~agentmem.records.Step` with its client's table
(:mod:`.claude_code`, :mod:`.codex`); a tool no table knows keeps its recorded outcome.
For a shell call, the command is parsed (:mod:`.shell`) and the program whose exit
status the call returned decides:

* an exit code that answers a question is no failure (:data:`INFORMATIONAL`: ``grep``,
  ``rg``, ``diff``, ``cmp``, ``test`` / ``[``, ``which``, ``git diff --exit-code``; exit 1
  and no diagnostic of a misuse);
* tests, builds, linters and inline scripts that failed on the code are
  :attr:`~.base.Failure.CODE`, unless the output says the command itself was wrong
  (``command not found``, an operand of the command not found, an unknown option);
* everything else that failed is a misuse.

:func:`learning_view` is the run with those outcomes applied: calls that never ran
dropped, failures that are not misuses counted as done, inert parameters left out,
headers stripped and a misuse's output starting with its diagnostic line.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

import attrs

from ..records import Step, Trajectory
from .base import ClientTable, Failure, Outcome, ToolKind, ToolSpec, matches, spec_for
from .shell import Command, Script, parse, unwrap_argv

__all__ = [
    "INFORMATIONAL",
    "command_line",
    "diagnostic",
    "failing_command",
    "learning_view",
    "outcome",
    "strip_headers",
]

#: Programs whose exit status 1 answers a question (no match, the files differ, false).
INFORMATIONAL = frozenset(
    "grep egrep fgrep rg ag ack diff cmp test [ [[ which type pgrep pidof fd".split()
)
_GIT_INFORMATIONAL = frozenset({"grep", "merge-base", "rev-parse", "ls-files", "check-ignore"})

#: Programs that check the code (tests, builds, linters, type checkers): when they fail,
#: the command was usually right and the code was not.
CHECKERS = frozenset(
    "pytest py.test tox nox jest vitest mocha ava rspec phpunit ctest playwright cypress "
    "tsc eslint prettier ruff flake8 pylint mypy pyright black isort shellcheck "
    "golangci-lint rubocop credo clippy make cmake ninja bazel gradle gradlew mvn mvnw "
    "ant webpack vite esbuild rollup msbuild meson apply_patch".split()
)
#: Subcommands that make a package manager or build tool a checker (``cargo test``).
_CHECKER_SUBCOMMANDS = frozenset(
    (
        *"test tests t build check compile lint clippy vet typecheck fmt format credo".split(),
        *"dialyzer nextest".split(),
        *(f"run {s}" for s in "test tests build lint typecheck type-check check compile".split()),
    )
)
_CHECKER_HOSTS = frozenset("cargo go mix npm yarn pnpm bun deno dotnet swift gradle uv".split())
_INTERPRETERS = re.compile(r"(python[0-9.]*|py|node|ruby|perl|php|deno|bun|elixir|Rscript)")

#: Lines that say the command itself was wrong (how it was called, what is missing).
_INVOCATION = re.compile(
    r"command not found|not found: |No such file or directory|cannot access|"
    r"not a git repository|unknown option|unrecognized option|invalid option|"
    r"illegal option|unrecognized arguments?|unknown (flag|command|subcommand)|"
    r"is not a \S+ command|[Uu]sage: |no such (file|directory|command)|"
    r"ModuleNotFoundError|No module named|Permission denied|cannot find module|"
    r"would be overwritten|ambiguous argument|unknown revision|pathspec .* did not match|"
    r"has no upstream branch|ignored by one of your .gitignore",
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
    r"\s*\^+\s*$|\s*\|)",
)
_TAGS = re.compile(r"</?tool_use_error>")
_SHELL_PREFIX = re.compile(r"^(\(eval\):\d+: |(\S*/)?(ba|z|da|k)?sh: (line )?\d*:? ?|zsh:\d+: )")


def strip_headers(text: str, table: ClientTable | None) -> tuple[str, int | None]:
    """The output without its client's header lines, and the exit code they state."""
    if table is None or not table.headers:
        return text, None
    lines = text.split("\n")
    code: int | None = None
    k = 0
    while k < len(lines) and k < 12:
        line = lines[k].strip()
        if not line and k < len(lines) - 1 and code is not None:
            k += 1
            continue
        if not matches(table.headers, line):
            break
        m = re.search(r"(-?\d+)\s*$", line)
        if m and re.match(r"(Exit code|Process exited)", line):
            code = int(m.group(1))
        k += 1
    return "\n".join(lines[k:]), code


def diagnostic(body: str) -> str:
    """The line of an output (headers already stripped) that says what went wrong."""
    lines = [_TAGS.sub("", x).strip() for x in body.split("\n")]
    lines = [x for x in lines if x and not _NOISE.match(x)]
    if not lines:
        return ""
    tb = [x for x in lines if re.match(r"^[\w.]+(Error|Exception)\b", x)]
    if any(x.startswith("Traceback") for x in body.split("\n")) and tb:
        return _clean(tb[-1])
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


def failing_command(script: Script, body: str) -> Command | None:
    """The command of a script whose failure the output shows: the one the diagnostic
    names (``cat: x: No such file``, ``python: command not found``), else the last one
    that is not scene-setting (``cd``, ``echo``)."""
    cmds = [c for c in script.commands if c.program not in _SCENE]
    if not cmds:
        cmds = list(script.commands)
    if not cmds:
        return None
    text = body[:2000]
    for c in script.commands:
        name = re.escape(c.program)
        if re.search(rf"(^|\n|: ){name}: |command not found: {name}\b", text):
            return c
    paths = {t.rstrip("/") for t in re.findall(r"[\w.][\w./-]*/[\w./-]*", text)}
    for c in cmds:  # the command whose path operand the output names (or a folder of it)
        for o in c.operands:
            if "/" in o and (o in text or any(o.startswith(p + "/") for p in paths if p)):
                return c
    return cmds[-1]


_SCENE = frozenset("cd pushd popd export set unset source . echo printf true false sleep :".split())


def _is_checker(c: Command) -> bool:
    if c.program in CHECKERS:
        return True
    if c.program in _CHECKER_HOSTS and c.subcommand in _CHECKER_SUBCOMMANDS:
        return True
    if c.program == "npm" and c.subcommand in ("t", "test", "run-script"):
        return True
    return bool(_INTERPRETERS.fullmatch(c.program)) and (
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
    if code not in (1, None):
        return False
    program = c.program
    if program == "git":
        if c.subcommand == "diff" and any(f in ("--exit-code", "--quiet") for f in c.flags):
            return not _INVOCATION.search(body)
        if c.subcommand not in _GIT_INFORMATIONAL:
            return False
    elif program not in INFORMATIONAL and not (program == "command" and "-v" in c.flags):
        return False
    return not _INVOCATION.search(body) and (code == 1 or not diag or diag == "Error")


def _shell_failure(
    spec: ToolSpec, params: Mapping[str, Any], body: str, code: int | None
) -> tuple[Failure, str]:
    diag = diagnostic(body)
    script = parse(command_line(spec, params))
    if not script.parsed:
        return Failure.MISUSE, diag
    last = script.pipelines[-1].commands[-1] if script.pipelines else None
    if last is not None and _informational(last, body, diag, code):
        return Failure.INFORMATIONAL, diag
    c = failing_command(script, body)
    if c is None:
        return Failure.MISUSE, diag
    if _is_checker(c):
        if code in (126, 127) or re.search(r"command not found|not found: ", body[:400]):
            return Failure.MISUSE, diag
        if re.search(rf"No module named '?{re.escape(c.program)}\b", body[:2000]):
            return Failure.MISUSE, diag  # python -m pytest without pytest: the environment
        first = diag or ""
        if _INVOCATION.search(first) and (
            _names_operand(c, first)
            or re.search(r"unknown|unrecogni|invalid|illegal|[Uu]sage", first)
        ):
            return Failure.MISUSE, diag
        return Failure.CODE, diag
    return Failure.MISUSE, diag


def _tool_failure(spec: ToolSpec, body: str) -> tuple[Failure, str]:
    diag = diagnostic(body)
    if "InputValidationError" in body[:300]:
        return Failure.MISUSE, diag  # the call's parameters were wrong, whatever the tool
    if any(e in body for e in spec.content_errors):
        return Failure.CODE, diag
    if spec.kind in (ToolKind.AGENT, ToolKind.WEB, ToolKind.SHELL_INPUT):
        return Failure.CODE, diag  # the world's (a URL, a sub-agent's work), not the call
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

    found = spec_for(tool)
    if found is None:
        return Outcome(not success, Failure.NONE if success else Failure.MISUSE)
    table, spec = found
    body, code = strip_headers(output, table)
    if success:
        return Outcome(False, Failure.NONE, exit_code=code)
    stopped = _not_run(table, output, body)
    if stopped is not None:
        return Outcome(True, stopped, diagnostic(body), code)
    params = json.loads(params_json)
    if spec.kind is ToolKind.SHELL:
        failure, diag = _shell_failure(spec, params, body, code)
    else:
        failure, diag = _tool_failure(spec, body)
    return Outcome(True, failure, diag, code)


def _view_step(step: Step) -> Step | None:
    found = spec_for(step.tool)
    if found is None:
        return step
    table, spec = found
    o = outcome(step)
    if not o.ran:
        return None
    params = {k: v for k, v in step.params.items() if k not in spec.inert}
    body, _ = strip_headers(step.output, table)
    body = _TAGS.sub("", body)
    if o.teachable and o.diagnostic:
        rest = body.strip()
        first = _clean(_TAGS.sub("", rest.split("\n", 1)[0]).strip())
        if first != o.diagnostic:
            body = o.diagnostic + ("\n" + rest if rest else "")
    success = step.success or not o.teachable
    if params == step.params and body == step.output and success == step.success:
        return step
    return attrs.evolve(step, params=params, output=body, success=success)


def learning_view(t: Trajectory) -> Trajectory:
    """The run as learning reads it (see the module doc); a run of tools no client table
    knows is returned as it is. Applying it twice changes nothing more."""
    if not any(spec_for(s.tool) is not None for s in t.steps):
        return t
    steps = [v for v in (_view_step(s) for s in t.steps) if v is not None]
    if len(steps) == len(t.steps) and all(a is b for a, b in zip(steps, t.steps)):
        return t
    return attrs.evolve(t, steps=tuple(steps))
