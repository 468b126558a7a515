"""The table types of :mod:`agentmem.agents`, and the outcome of one recorded call.

A :class:`ClientTable` says, for each tool of one agent client, which parameter holds
its command, which parameters change nothing about what the call does, and how the
client frames a call's output and its refusals. :func:`outcome` reads a recorded
step with those tables: did the call fail, and is the failure a *misuse* (how the
agent called it, or what the project or machine lacks: what a lesson can teach), or
not one (an exit code that answers a question, tests that failed, a call cancelled
because a sibling errored, an interrupt, a timeout, a refusal). :func:`diagnostic`
is the line of an output that a lesson quotes: never a header.

It applies at learning time, as a pure function over a recorded step, so that
libraries recorded before it learn from it too (see
:func:`agentmem.agents.learning_view`).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

__all__ = [
    "CLIENTS",
    "FALLBACK_COMMAND_PARAMS",
    "ClientTable",
    "Failure",
    "Outcome",
    "ToolKind",
    "ToolSpec",
    "command_params",
    "declared_untestable",
    "register",
    "same_job",
    "spec_for",
]


class ToolKind(str, enum.Enum):
    """What a tool is, for learning: which rules may read its calls."""

    SHELL = "shell"  #: runs a command line (Bash, shell, exec_command)
    SHELL_INPUT = "shell_input"  #: feeds a running command (write_stdin, BashOutput)
    READ = "read"
    WRITE = "write"
    EDIT = "edit"
    PATCH = "patch"  #: apply_patch
    SEARCH = "search"  #: Glob, Grep
    AGENT = "agent"  #: a sub-agent (Task, Agent)
    PLAN = "plan"  #: TodoWrite, update_plan: bookkeeping, no effect on the world
    WEB = "web"
    MCP = "mcp"
    OTHER = "other"


class Failure(str, enum.Enum):
    """What a call's outcome says (:func:`outcome`)."""

    NONE = "none"  #: it worked
    MISUSE = "misuse"  #: how it was called, or the project / machine: a lesson may teach it
    INFORMATIONAL = "informational"  #: an exit code that answers (no match, files differ)
    CODE = "code"  #: tests, a build or a linter failed: the command was right, the code not
    CANCELLED = "cancelled"  #: never ran: a parallel sibling call errored
    INTERRUPTED = "interrupted"  #: the user stopped it
    DENIED = "denied"  #: the user, a permission rule or the sandbox refused it
    TIMEOUT = "timeout"  #: it ran past its time limit
    #: the tool's own argument check refused the call (a list where a number was expected,
    #: a required parameter missing): it never ran, and its error already says what was
    #: wrong, so a one-off slip teaches nothing
    SCHEMA = "schema"


#: Failures of calls that never ran (or never finished): they teach nothing at all.
NOT_RUN = frozenset(
    {Failure.CANCELLED, Failure.INTERRUPTED, Failure.DENIED, Failure.TIMEOUT, Failure.SCHEMA}
)


@attrs.frozen
class ToolSpec:
    """One tool of one client.

    ``command``: the parameter holding a shell tool's command line (text or argv): a
    change to it is code, not a value (:func:`command_params`).
    ``code``: the parameter holding a script in another language (Codex code mode's
    JavaScript ``input``): code too, never a value a lesson may tell, and no command line.
    ``inert``: parameters that change nothing about what the call does (a description,
    a time limit, an approval justification): ignored when two calls are compared.
    ``content_errors``: errors that say the content passed was wrong for this file
    (an ``old_string`` not found), not how the tool was called: not a misuse.
    ``needs``: (words of an error, the kind of call that must come first on the same
    file): the tool's own rule ("File has not been read yet": a Read first).
    ``path``: the parameter naming the file the call is about.
    ``instead``: (words of an error, what to do instead) where another call on the same
    path does the job (a folder given to Read is listed, not read).
    ``refuses``: (words of the tool's own refusal, the class of target it refuses) where
    the error does not say what works instead: Read "cannot read binary files"
    (``binary``: a file of that kind), WebFetch's "Invalid URL" (``local``: a local
    address), Claude Code's own settings check (``field``: a key the file may not hold).
    What worked is the run's to show (:mod:`agentmem.learning.corrections`).
    """

    name: str
    kind: ToolKind
    command: str | None = None
    code: str | None = None
    inert: frozenset[str] = frozenset()
    content_errors: tuple[str, ...] = ()
    needs: tuple[tuple[str, ToolKind], ...] = ()
    path: str | None = None
    #: (words of an error, what to do instead): Read refuses a folder ("EISDIR"), list it.
    instead: tuple[tuple[str, str], ...] = ()
    #: (words of the tool's own refusal, the class of target): Read of a binary file.
    refuses: tuple[tuple[str, str], ...] = ()
    #: A shell tool whose working directory persists from one call to the next (Claude
    #: Code's Bash): a ``cd`` in one call holds for the next.
    keeps_cwd: bool = False
    #: A shell tool that runs even a single command inside a shell whose own command line
    #: holds the call's text (Claude Code's Bash: ``bash -c "... eval '...' ..."``), so
    #: ``pkill -f`` of a pattern in the call always matches that shell. Another shell tool
    #: does so only for a command of more than one simple command (``bash -lc "a || b"``;
    #: a shell given one command runs it in its own place).
    always_wrapped: bool = False


@attrs.frozen
class ClientTable:
    """Everything agentmem knows about one client's tools and output framing.

    ``headers``: patterns of the lines a client puts before a command's output
    (``Exit code 1``, Codex's ``Chunk ID: ...``); stripped before a diagnostic is read.
    ``cancelled`` / ``interrupted`` / ``denied`` / ``timeout``: patterns of outputs
    that say the call never ran or never finished, searched at the output's start.
    ``mcp_names``: the names the client gives itself when it opens an MCP session
    (``clientInfo.name``), so that agentmem's MCP server knows which client asks.
    """

    client: str
    tools: Mapping[str, ToolSpec]
    headers: tuple[re.Pattern[str], ...] = ()
    cancelled: tuple[re.Pattern[str], ...] = ()
    interrupted: tuple[re.Pattern[str], ...] = ()
    denied: tuple[re.Pattern[str], ...] = ()
    timeout: tuple[re.Pattern[str], ...] = ()
    #: Tools by a name prefix (Claude Code's ``mcp__server__tool``).
    prefixes: Mapping[str, ToolSpec] = attrs.field(factory=dict)
    mcp_names: tuple[str, ...] = ()


@attrs.frozen
class Outcome:
    """What one recorded call's outcome says.

    ``failed``: the call did not do what it was asked (as recorded); ``failure``: which
    kind of failure (:class:`Failure`); ``diagnostic``: the line a lesson may quote;
    ``exit_code`` when the output says one.
    """

    failed: bool
    failure: Failure
    diagnostic: str = ""
    exit_code: int | None = None

    @property
    def teachable(self) -> bool:
        """A misuse: a lesson may be learned from this failure."""
        return self.failure is Failure.MISUSE

    @property
    def ran(self) -> bool:
        """Whether the call ran to its end (not cancelled, interrupted, refused, timed out)."""
        return self.failure not in NOT_RUN


#: The registered clients, in order (:func:`register`).
CLIENTS: list[ClientTable] = []
_BY_NAME: dict[str, tuple[ClientTable, ToolSpec]] = {}


def register(table: ClientTable) -> ClientTable:
    """Add a client's table; its tool names must not clash with another client's."""
    for name, spec in table.tools.items():
        if name in _BY_NAME and _BY_NAME[name][0].client != table.client:
            raise ValueError(
                f"tool {name!r} of {table.client} is already {_BY_NAME[name][0].client}'s"
            )
        _BY_NAME[name] = (table, spec)
    CLIENTS.append(table)
    return table


def client_of_mcp(name: object) -> str | None:
    """The client (``claude-code``, ``codex``) whose MCP sessions carry ``name`` as their
    ``clientInfo.name``, or None for another client or a name that is not a string."""
    if not isinstance(name, str):
        return None
    for table in CLIENTS:
        if name in table.mcp_names:
            return table.client
    return None


def spec_for(tool: str) -> tuple[ClientTable, ToolSpec] | None:
    """The client and spec of a tool name, or None for a tool no table knows (a
    function-calling benchmark's, an application's): then nothing here applies."""
    found = _BY_NAME.get(tool)
    if found is not None:
        return found
    for table in CLIENTS:
        for prefix, spec in table.prefixes.items():
            if tool.startswith(prefix):
                return table, spec
    return None


#: The fallback of :func:`command_params`, for a tool that no table describes (an MCP
#: server's shell, ``mcp__workspace__bash``; Claude Code 2.1's ``PowerShell``; an unknown
#: runner): the names such a tool gives a parameter holding a command line or a script.
FALLBACK_COMMAND_PARAMS = frozenset(
    {"command", "cmd", "commands", "script", "code", "shell_command"}
)


def command_params(tool: str) -> frozenset[str]:
    """The parameters of ``tool`` that hold a command line or a script, so that a change
    to them is code, not a value.

    A tool of a client's table has its own (:attr:`ToolSpec.command`; none for a tool that
    runs no command). Only an MCP tool or a tool no table knows is read with the fallback
    list :data:`FALLBACK_COMMAND_PARAMS`."""
    found = spec_for(tool)
    if found is None or found[1].kind is ToolKind.MCP:
        return FALLBACK_COMMAND_PARAMS
    return frozenset(x for x in (found[1].command, found[1].code) if x)


#: Kinds that do one job, so that one may stand in for another (a file changed by Edit,
#: MultiEdit, Write or a patch).
_JOBS = {
    ToolKind.EDIT: "change",
    ToolKind.WRITE: "change",
    ToolKind.PATCH: "change",
    ToolKind.READ: "read",
    ToolKind.SEARCH: "search",
}


def same_job(a: str, b: str) -> bool | None:
    """Whether tools ``a`` and ``b`` can stand in for each other by what they do (Edit for
    Write; never Read for Edit), or None when a table does not know one of them or what
    both do (two MCP servers' tools). An MCP tool never stands in for a client's own."""
    x, y = spec_for(a), spec_for(b)
    if x is None or y is None:
        return None
    ka, kb = x[1].kind, y[1].kind
    if ka is ToolKind.MCP and kb is ToolKind.MCP:
        # an MCP server's tool: its kind says where it comes from, not what it does
        # (blind set 14: a thinking tool "did the job" of a refused listing)
        return None
    if ToolKind.MCP in (ka, kb):
        # one MCP tool and a client's: never one job, as before (review 27: a shared
        # ``path`` parameter made "Use Grep, not mcp__filesystem__read_file")
        return False
    return ka == kb or (ka in _JOBS and _JOBS.get(ka) == _JOBS.get(kb))


def matches(patterns: tuple[re.Pattern[str], ...], text: str) -> bool:
    return any(p.search(text) for p in patterns)


#: An outcome rule of a tool kind: (spec, params, output, recorded success, client) ->
#: Outcome or None (None: the generic rule decides).
OutcomeRule = Callable[[ToolSpec, Mapping[str, Any], str, bool, ClientTable], "Outcome | None"]


#: The texts of the client tool rules that a run proves and that quote no error: the
#: pkill self-kill (:func:`agentmem.learning.self_kill.self_kill_text`) and the folder the
#: shell keeps (:func:`agentmem.learning.kept_cwd.kept_cwd_text`).
_DECLARED_TEXT = re.compile(
    r"^pkill -f PATTERN (?:in|beside other commands in one) \S+ |"
    r"^\S+ keeps the working directory between calls\b"
)


def declared_untestable(rule: Mapping[str, Any], lesson: str) -> bool:
    """Whether a stored rule (its JSON data) of the lesson ``lesson`` is a client tool's
    rule that its run proves and that quotes no error, stored testable by a library
    learned before such rules were untestable (6033521, review 28): every later failed
    call of its tools met it. Told apart by the lesson's text, the only mark the older
    rule left (:meth:`agentmem.learning.rules.Rule.stored`, and the journal when a
    rewrite keeps the rule)."""
    return (
        rule.get("kind") == "tool_rule"
        and rule.get("testable", True) is True
        and not (rule.get("error") or rule.get("helper"))
        and _DECLARED_TEXT.search(lesson) is not None
    )
