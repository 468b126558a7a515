"""agentmem as a Model Context Protocol server over stdio, for coding agents.

Run it with ``agentmem mcp --db PATH`` (or ``$AGENTMEM_DB``). It serves these tools:

``agentmem_context(task, tools?, domains?, k=5, project?) -> str``
    The lessons block for a task (:meth:`Memory.context`), with the lessons served
    in the project: ``project`` when given, else the client's first MCP root, else
    the server's working folder (Claude Code and Codex start it in the session's
    folder); empty when none fits.
``agentmem_retrieve(task, tools?, domains?, k=5) -> [{id, text, domain, score}]``
    The same lessons as data (:meth:`Memory.retrieve`).
``agentmem_record(task, steps, group?, accepted?, condition?, meta?) -> {id}``
    Record a whole trajectory at once.
``agentmem_begin(task, group?, condition?, meta?) -> {handle}``,
``agentmem_step(handle, tool, params?, output?, success?) -> {handle, steps}``,
``agentmem_end(handle, accepted?) -> {id}``
    Record a trajectory live, one tool call per ``agentmem_step``.
``agentmem_feedback(trajectory_id, kind, note?) -> {trajectory_id, kind}``
    The user's verdict: ``accept``, ``correct`` or ``reject``.

One :class:`Memory` is opened per server and every call that touches it holds
one lock, so concurrent tool calls (the SDK runs each on a worker thread) never
interleave writes. agentmem errors come back as MCP tool errors (``isError``)
carrying their message; the server keeps serving.

Open live trajectories are kept in server memory: at most
:data:`MAX_OPEN_TRAJECTORIES` at once, each at most :data:`MAX_LIVE_STEPS` steps.
When the server exits (stdin closed, SIGTERM or SIGINT) with some still open,
each one that has at least one step is recorded as *rejected*, with
``meta.error`` saying it was unfinished, just as :meth:`Memory.trajectory`
records a block that raised; open ones without steps are dropped.

Hostile input never stops the server: every request line is screened before the SDK
reads it (:func:`screen_line`). A line over :data:`MAX_MESSAGE_BYTES`, one that is
not UTF-8 or not JSON, one nested deeper than :data:`MAX_DEPTH` or holding a lone
surrogate gets a JSON-RPC error with its id (``null`` when none can be read), is
counted, and logged on standard error in one line; every other request is
answered. A huge ``task`` costs what its first
:data:`agentmem.retrieval.pipeline.MAX_QUERY_CHARS` characters do.

Importing this module is cheap: the MCP SDK (and pydantic) load only in
:func:`build_server` and :func:`serve`, and no model loads until a tool needs it.
Trajectories recorded here have ``source = "mcp"``.
"""

# No ``from __future__ import annotations`` here: the SDK reads the tool
# functions' annotations with ``inspect.signature(eval_str=True)``, and the
# functions are defined inside the ``_add_*`` functions, where their types are
# local names or attributes of the ``schema`` namespace that build_server makes.

import contextlib
import json
import os
import re
import secrets
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple

from . import jsonsafe
from .errors import AgentMemError, InvalidRecordError

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from .memory import LiveTrajectory, Memory

__all__ = [
    "MAX_DEPTH",
    "MAX_LIVE_STEPS",
    "MAX_MESSAGE_BYTES",
    "MAX_OPEN_TRAJECTORIES",
    "SERVER_NAME",
    "SOURCE",
    "AgentMemTools",
    "McpUnavailableError",
    "TooManyOpenError",
    "UnknownHandleError",
    "build_server",
    "screen_line",
    "serve",
]

#: The server's name as MCP clients see it; Claude Code names its tools
#: ``mcp__agentmem__agentmem_context`` and so on.
SERVER_NAME = "agentmem"
#: The ``source`` of trajectories recorded through the server.
SOURCE = "mcp"
#: How many live trajectories may be open at once.
MAX_OPEN_TRAJECTORIES = 32
#: How many steps one live trajectory may hold.
MAX_LIVE_STEPS = 1000
#: How long shutdown waits for a running tool call before giving up on
#: recording the unfinished trajectories.
SHUTDOWN_LOCK_TIMEOUT_S = 10.0
#: What to install when the SDK is missing.
INSTALL_HINT = "pip install 'agentmem[mcp]'"
UNFINISHED_ERROR = "unfinished: the MCP server exited before agentmem_end"
#: The longest request line the server reads (bytes); a longer one is answered with an
#: error, and the rest of it is skipped unread.
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
#: How deeply a request's JSON may nest (the envelope counts: a tool call's arguments
#: start at level 4).
MAX_DEPTH = 64
_PARSE_ERROR = -32700
_INVALID_REQUEST = -32600
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')

INSTRUCTIONS = """\
agentmem is a memory of earlier attempts at tasks: it returns short lessons learned from them \
and records new attempts so that it can learn more.
- At the start of a task, call agentmem_context with the user's request (and the tools you will \
use) and follow the lessons that fit.
- Record what you did: either agentmem_begin, then agentmem_step after each tool call, then \
agentmem_end; or one agentmem_record call at the end. Keep the trajectory id that comes back.
- When the user says whether the result was right, call agentmem_feedback with that id: \
accept, correct (they had to fix it) or reject."""


class UnknownHandleError(AgentMemError, KeyError):
    """No open live trajectory has the given handle."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "unknown handle"


class TooManyOpenError(AgentMemError):
    """:data:`MAX_OPEN_TRAJECTORIES` live trajectories are already open."""


class McpUnavailableError(AgentMemError):
    """The MCP Python SDK (2.x) is not installed."""


def _scored(lesson: Any) -> Any:
    """A served :class:`agentmem.serving.Lesson` as the :class:`Scored` the tools answer
    with, or None when its row is no valid experience."""
    from .retrieval.retriever import scored

    return scored(lesson)


class AgentMemTools:
    """What the MCP tools do, without MCP: one :class:`Memory`, one lock, the open handles.

    Every method is safe to call from several threads at once. Errors are
    agentmem's own (:class:`~agentmem.errors.AgentMemError` subclasses).
    """

    def __init__(
        self,
        mem: "Memory",
        *,
        max_open: int = MAX_OPEN_TRAJECTORIES,
        max_steps: int = MAX_LIVE_STEPS,
    ) -> None:
        self.mem = mem
        self.max_open = max_open
        self.max_steps = max_steps
        self._lock = threading.Lock()
        self._open: dict[str, LiveTrajectory] = {}
        self._closed = False

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            if self._closed:
                raise AgentMemError("the agentmem MCP server is shutting down")
            yield

    # -- retrieval ---------------------------------------------------------------------

    def context(
        self,
        task: str,
        *,
        tools: Sequence[str] | None = None,
        domains: Sequence[str] | None = None,
        k: int = 5,
        project: str | None = None,
        client: str | None = None,
    ) -> str:
        """The lessons block; ``project``: a folder, whose project's lessons are served too;
        ``client``: the coding agent asking (its MCP ``clientInfo``), None when unknown."""
        from .serving import Query

        query = Query(
            task, tools=tools, domains=domains, k=k, project=project, route="mcp", client=client
        )
        with self._locked():
            return self.mem.serve(query).text

    def retrieve(
        self,
        task: str,
        *,
        tools: Sequence[str] | None = None,
        domains: Sequence[str] | None = None,
        k: int = 5,
        client: str | None = None,
    ) -> list[dict[str, Any]]:
        """The lessons served for ``task`` (as :meth:`context` serves them: the holdout,
        the filters, the served log), as data."""
        from .serving import Query

        query = Query(task, tools=tools, domains=domains, k=k, route="mcp", client=client)
        with self._locked():
            served = self.mem.serve(query)
            mine = [x.id for x in served.lessons if x.id is not None]
            uses = self.mem.served_counts(mine)  # what the runs it was served to did
        out = []
        for x in served.lessons:
            hit = _scored(x)
            if hit is None:
                continue  # a row no experience can be read from (another machine's file)
            out.append({**hit.as_dict(), "use": uses.get(x.id) if x.id is not None else None})
        return out

    # -- recording ---------------------------------------------------------------------

    def record(
        self,
        task: str,
        steps: Sequence[Mapping[str, Any]],
        *,
        group: str | None = None,
        accepted: bool | None = None,
        condition: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> int:
        from .records import Trajectory

        fields: dict[str, Any] = {
            "accepted": accepted,
            "condition": condition,
            "meta": dict(meta or {}),
            "source": SOURCE,
        }
        if group is not None:
            fields["group"] = group
        t = Trajectory(task=task, steps=list(steps), **fields)
        with self._locked():
            return self.mem.record(t)

    def begin(
        self,
        task: str,
        *,
        group: str | None = None,
        condition: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> str:
        from .memory import LiveTrajectory

        live = LiveTrajectory(task=task, group=group, condition=condition, meta=dict(meta or {}))
        live.build()  # validates task, group, condition and meta now, not at agentmem_end
        with self._locked():
            if len(self._open) >= self.max_open:
                raise TooManyOpenError(
                    f"{len(self._open)} trajectories are already open ({self._handles()}); "
                    "finish one with agentmem_end before beginning another"
                )
            handle = "t-" + secrets.token_hex(4)
            while handle in self._open:  # pragma: no cover - 1 in 4e9
                handle = "t-" + secrets.token_hex(4)
            self._open[handle] = live
        return handle

    def step(
        self,
        handle: str,
        tool: str,
        params: Mapping[str, Any] | None = None,
        output: str = "",
        success: bool = True,
    ) -> int:
        with self._locked():
            live = self._get(handle)
            if len(live.steps) >= self.max_steps:
                raise InvalidRecordError(
                    f"trajectory {handle} already has {self.max_steps} steps, the most one may "
                    "hold; end it with agentmem_end and begin another"
                )
            live.step(tool, params, output, success)
            return len(live.steps)

    def end(self, handle: str, accepted: bool | None = None) -> int:
        import attrs

        with self._locked():
            live = self._get(handle)
            t = attrs.evolve(live.build(), accepted=accepted, source=SOURCE)
            tid = self.mem.record(t)
            del self._open[handle]  # only once recorded: a failed end can be retried
            live.id = tid
            return tid

    def feedback(self, trajectory_id: int, kind: str, note: str | None = None) -> None:
        with self._locked():
            self.mem.feedback(trajectory_id, kind, note=note)

    def open_handles(self) -> list[str]:
        with self._lock:
            return list(self._open)

    # -- shutdown ----------------------------------------------------------------------

    def close(self, *, timeout: float = SHUTDOWN_LOCK_TIMEOUT_S) -> list[int]:
        """Record the unfinished trajectories as rejected, close the library, refuse
        further calls; returns the ids recorded. Safe to call twice."""
        import attrs

        if not self._lock.acquire(timeout=timeout):
            # A tool call is stuck holding the library; closing under it would corrupt
            # its transaction. The unfinished trajectories are lost.
            self._closed = True
            return []
        try:
            if self._closed:
                return []
            self._closed = True
            unfinished = [live for live in self._open.values() if live.steps]
            self._open.clear()
            ids: list[int] = []
            try:
                if unfinished:
                    ts = []
                    for live in unfinished:
                        live.meta["error"] = UNFINISHED_ERROR
                        ts.append(attrs.evolve(live.build(), accepted=False, source=SOURCE))
                    ids = self.mem.record_many(ts)
            finally:
                self.mem.close()
            return ids
        finally:
            self._lock.release()

    # -- helpers -----------------------------------------------------------------------

    def _get(self, handle: str) -> "LiveTrajectory":
        live = self._open.get(handle)
        if live is None:
            raise UnknownHandleError(
                f"no open trajectory has handle {handle!r} (never begun, already ended, or begun "
                f"before the server restarted); open handles: {self._handles()}"
            )
        return live

    def _handles(self) -> str:
        return ", ".join(self._open) or "none"


def _import_sdk() -> None:
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError as e:
        raise McpUnavailableError(
            f"the MCP server needs the MCP Python SDK 2.x, which is not installed or too old "
            f"({e}); install it with: {INSTALL_HINT}"
        ) from None


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("agentmem")
    except Exception:  # pragma: no cover - running from a source tree without metadata
        return "0"


def build_server(core: AgentMemTools) -> "MCPServer[Any]":
    """An ``MCPServer`` whose tools call ``core``. Imports the MCP SDK."""
    _import_sdk()
    from mcp.server.mcpserver import MCPServer

    server: MCPServer[Any] = MCPServer(
        SERVER_NAME,
        title="agentmem",
        version=_version(),
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )
    schema = SimpleNamespace(**_pydantic_models(), **_annotated_arguments())
    _add_retrieval_tools(server, core, schema)
    _add_recording_tool(server, core, schema)
    _add_live_recording_tools(server, core, schema)
    _add_feedback_tool(server, core, schema)
    return server


@contextlib.contextmanager
def _as_tool_error() -> Iterator[None]:
    """agentmem's, SQLite's and the OS's errors as MCP tool errors carrying their message."""
    from mcp.server.mcpserver.exceptions import ToolError

    from .db import sqlite3

    try:
        yield
    except (AgentMemError, sqlite3.Error, OSError) as e:
        raise ToolError(str(e) or type(e).__name__) from None


def _tool(
    server: "MCPServer[Any]", *, read_only: bool, description: str | None = None
) -> Callable[[Any], Any]:
    """Register a tool; its description is ``description`` or its docstring, on one line.

    A tool either only reads, or writes without destroying and is not idempotent;
    none reaches outside the library.
    """
    from mcp.types import ToolAnnotations

    if read_only:
        annotations = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    else:
        annotations = ToolAnnotations(
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=False,
        )

    def register(fn: Any) -> Any:
        text = " ".join((description or fn.__doc__ or "").split())
        server.add_tool(fn, description=text, annotations=annotations)
        return fn

    return register


# -- argument and result types (they become the tools' JSON schemas) ------------------


def _pydantic_models() -> dict[str, Any]:
    """The structured argument (a step) and the results of the tools, as pydantic models."""
    from pydantic import BaseModel, ConfigDict, Field

    class StepArg(BaseModel):
        """One tool call."""

        model_config = ConfigDict(extra="forbid")
        tool: str = Field(description="The tool's name, e.g. 'bash', 'edit', 'read'.")
        params: dict[str, Any] = Field(
            default_factory=dict, description="The call's arguments, as a JSON object."
        )
        output: str = Field(
            default="",
            description="What the tool returned (shorten long output; secrets are redacted "
            "before anything is stored).",
        )
        success: bool = Field(
            default=True, description="false when the call failed or returned unusable output."
        )

    class Hit(BaseModel):
        id: int = Field(description="The experience's id.")
        text: str = Field(description="The lesson.")
        domain: str = Field(description="Its tool domain; empty for a general lesson.")
        score: float = Field(
            description="Fused relevance (0-1) of keyword, vector and tool-usage ranks; "
            "higher fits better."
        )

    class Recorded(BaseModel):
        id: int = Field(description="The trajectory id; pass it to agentmem_feedback.")

    class Begun(BaseModel):
        handle: str = Field(description="Pass it to agentmem_step and agentmem_end.")

    class Stepped(BaseModel):
        handle: str
        steps: int = Field(description="How many steps the trajectory holds now.")

    class FeedbackGiven(BaseModel):
        trajectory_id: int
        kind: str

    return {
        "StepArg": StepArg,
        "Hit": Hit,
        "Recorded": Recorded,
        "Begun": Begun,
        "Stepped": Stepped,
        "FeedbackGiven": FeedbackGiven,
    }


def _annotated_arguments() -> dict[str, Any]:
    """The tools' shared plain arguments, each with its description."""
    from typing import Annotated

    from pydantic import Field

    Task = Annotated[
        str, Field(description="The task as the user stated it, in a sentence or two.")
    ]
    Tools = Annotated[
        list[str] | None,
        Field(
            description="Names of the tools you are about to use, e.g. ['bash', 'edit']: "
            "lessons naming them come first, lessons about other tools are left out, and "
            "the search keeps to those tools' domains plus general lessons. Omit it when "
            "you do not know (the task's words then decide)."
        ),
    ]
    Domains = Annotated[
        list[str] | None,
        Field(description="Tool domains to search, e.g. ['fs', 'git'], plus general lessons."),
    ]
    K = Annotated[int, Field(ge=1, le=50, description="How many lessons at most.")]
    Group = Annotated[
        str | None,
        Field(
            description="Task group key: attempts with the same group are compared to learn "
            "lessons. Defaults to the task text, lower-cased; set it to pool attempts "
            "at one task that were worded differently."
        ),
    ]
    Condition = Annotated[
        str | None,
        Field(
            description="The reward token the attempt was conditioned on (RC-GRPO rollouts "
            "only); omit otherwise."
        ),
    ]
    Meta = Annotated[
        dict[str, Any] | None,
        Field(description="Any JSON object to keep with the trajectory (model, repository, ...)."),
    ]
    Accepted = Annotated[
        bool | None,
        Field(
            description="The user's verdict if already known: true if they accepted the result, "
            "false if they rejected it. Omit when unknown and call agentmem_feedback "
            "later."
        ),
    ]
    Handle = Annotated[str, Field(description="The handle agentmem_begin returned.")]
    return {
        "Task": Task,
        "Tools": Tools,
        "Domains": Domains,
        "K": K,
        "Group": Group,
        "Condition": Condition,
        "Meta": Meta,
        "Accepted": Accepted,
        "Handle": Handle,
    }


# -- the tools, by area ------------------------------------------------------------------


#: How long agentmem_context waits for the client's answer to ``roots/list``.
ROOTS_TIMEOUT_S = 2.0


async def _first_root(ctx: Any) -> str | None:
    """The folder of the client's first ``file://`` MCP root, or None (no roots capability,
    no answer within :data:`ROOTS_TIMEOUT_S`, or none that is a local folder)."""
    import urllib.parse
    import warnings

    import anyio

    try:
        caps = ctx.request_context.session.client_params.capabilities
        if caps is None or caps.roots is None:
            return None
        with warnings.catch_warnings(), anyio.fail_after(ROOTS_TIMEOUT_S):
            warnings.simplefilter("ignore")  # roots are deprecated in the 2026-07-28 protocol
            result = await ctx.request_context.session.list_roots()
    except Exception:  # a client without roots, or one that does not answer: no root
        return None
    for root in result.roots:
        uri = urllib.parse.urlparse(str(root.uri))
        if uri.scheme == "file" and uri.path:
            return urllib.parse.unquote(uri.path)
    return None


def _asking_client(ctx: Any) -> str | None:
    """The coding agent on the other end of this MCP session (``claude-code``, ``codex``),
    from the name it gave in its ``initialize``; None for another client or none given.
    A lesson about one client's own tool ("the Bash tool keeps the working directory") is
    not served to the other."""
    from .agents import client_of_mcp

    try:
        info = ctx.request_context.session.client_params.client_info
    except Exception:  # no session, or no client info in the handshake: unknown
        return None
    return client_of_mcp(getattr(info, "name", None))


def _add_retrieval_tools(server: "MCPServer[Any]", core: AgentMemTools, schema: Any) -> None:
    """agentmem_context and agentmem_retrieve: the lessons for a task (read-only)."""
    import functools
    from typing import Annotated

    import anyio
    from mcp.server.mcpserver import Context
    from pydantic import Field

    schema.Context = Context
    schema.Project = Annotated[
        str | None,
        Field(
            description="The project folder you work in (absolute path): its own lessons "
            "are served too. Default: the client's MCP root, else the server's folder."
        ),
    ]

    @_tool(server, read_only=True)
    async def agentmem_context(
        task: schema.Task,
        ctx: schema.Context,
        tools: schema.Tools = None,
        domains: schema.Domains = None,
        k: schema.K = 5,
        project: schema.Project = None,
    ) -> str:
        """Lessons learned from earlier attempts at similar tasks, as a text block ready to
        follow. Call it when you start a task, with the user's request as `task`, and apply
        the lessons that fit. Returns an empty string when no lesson fits. Fast and
        read-only (no language model runs)."""
        where = project or await _first_root(ctx) or os.getcwd()
        call = functools.partial(
            core.context,
            task,
            tools=tools,
            domains=domains,
            k=k,
            project=where,
            client=_asking_client(ctx),
        )
        with _as_tool_error():
            return await anyio.to_thread.run_sync(call)

    @_tool(server, read_only=True)
    def agentmem_retrieve(
        task: schema.Task,
        ctx: schema.Context,
        tools: schema.Tools = None,
        domains: schema.Domains = None,
        k: schema.K = 5,
    ) -> list[schema.Hit]:
        """The lessons that best fit `task`, best first, as data: {id, text, domain, score}.
        Use it when you need ids or scores; to just read the lessons, use agentmem_context."""
        with _as_tool_error():
            hits = core.retrieve(
                task, tools=tools, domains=domains, k=k, client=_asking_client(ctx)
            )
            return [schema.Hit(**h) for h in hits]


def _add_recording_tool(server: "MCPServer[Any]", core: AgentMemTools, schema: Any) -> None:
    """agentmem_record: a finished attempt, recorded in one call."""
    from typing import Annotated

    from pydantic import Field

    @_tool(server, read_only=False)
    def agentmem_record(
        task: schema.Task,
        steps: Annotated[list[schema.StepArg], Field(description="The tool calls made, in order.")],
        group: schema.Group = None,
        accepted: schema.Accepted = None,
        condition: schema.Condition = None,
        meta: schema.Meta = None,
    ) -> schema.Recorded:
        """Record one finished attempt at a task (a trajectory): the task and every tool
        call made for it, in one call. Returns {id}; keep it for agentmem_feedback. To
        record while you work instead, use agentmem_begin, agentmem_step and agentmem_end."""
        with _as_tool_error():
            tid = core.record(
                task,
                [s.model_dump() for s in steps],
                group=group,
                accepted=accepted,
                condition=condition,
                meta=meta,
            )
            return schema.Recorded(id=tid)


def _add_live_recording_tools(server: "MCPServer[Any]", core: AgentMemTools, schema: Any) -> None:
    """agentmem_begin, agentmem_step and agentmem_end: an attempt recorded as it happens."""
    from typing import Annotated

    from pydantic import Field

    @_tool(
        server,
        read_only=False,
        description=(
            "Start recording an attempt at a task, live. Returns {handle}: call agentmem_step "
            "with it after each tool call, and agentmem_end when the task is done. At most "
            f"{core.max_open} may be open at once. If the server stops before agentmem_end, an "
            "attempt with steps is recorded as rejected; one without steps is dropped."
        ),
    )
    def agentmem_begin(
        task: schema.Task,
        group: schema.Group = None,
        condition: schema.Condition = None,
        meta: schema.Meta = None,
    ) -> schema.Begun:
        with _as_tool_error():
            handle = core.begin(task, group=group, condition=condition, meta=meta)
            return schema.Begun(handle=handle)

    @_tool(server, read_only=False)
    def agentmem_step(
        handle: schema.Handle,
        tool: Annotated[str, Field(description="The tool's name, e.g. 'bash', 'edit'.")],
        params: Annotated[
            dict[str, Any] | None, Field(description="The call's arguments, as a JSON object.")
        ] = None,
        output: Annotated[
            str,
            Field(
                description="What the tool returned (shorten long output; secrets are redacted "
                "before anything is stored)."
            ),
        ] = "",
        success: Annotated[
            bool, Field(description="false when the call failed or returned unusable output.")
        ] = True,
    ) -> schema.Stepped:
        """Add one tool call to the attempt opened by agentmem_begin."""
        with _as_tool_error():
            steps = core.step(handle, tool, params, output, success)
            return schema.Stepped(handle=handle, steps=steps)

    @_tool(server, read_only=False)
    def agentmem_end(handle: schema.Handle, accepted: schema.Accepted = None) -> schema.Recorded:
        """Finish and store the attempt opened by agentmem_begin. Returns {id}; keep it for
        agentmem_feedback. The handle is no longer valid afterwards."""
        with _as_tool_error():
            return schema.Recorded(id=core.end(handle, accepted))


def _add_feedback_tool(server: "MCPServer[Any]", core: AgentMemTools, schema: Any) -> None:
    """agentmem_feedback: the user's verdict on a recorded attempt."""
    from typing import Annotated, Literal

    from pydantic import Field

    @_tool(server, read_only=False)
    def agentmem_feedback(
        trajectory_id: Annotated[
            int, Field(description="The id agentmem_record or agentmem_end returned.")
        ],
        kind: Annotated[
            Literal["accept", "correct", "reject"],
            Field(
                description="accept: the user took the result as it was; correct: they had to "
                "fix it; reject: it was wrong or abandoned."
            ),
        ],
        note: Annotated[
            str | None, Field(description="Optional: what was wrong, in the user's words.")
        ] = None,
    ) -> schema.FeedbackGiven:
        """Record the user's verdict on a recorded attempt's final result. The latest
        verdict wins; without one, an attempt counts as accepted 120 s after recording."""
        with _as_tool_error():
            core.feedback(trajectory_id, kind, note)
            return schema.FeedbackGiven(trajectory_id=trajectory_id, kind=kind)


# -- hostile input ---------------------------------------------------------------------


class Refusal(NamedTuple):
    """A request line the server will not pass on: its id (None when it has none or it
    cannot be read), the JSON-RPC error code, and why."""

    id: int | float | str | None
    code: int
    why: str
    notification: bool = False


def screen_line(line: bytes) -> str | Refusal | None:
    """One line of the client's input: its text, ready for the SDK; a :class:`Refusal`;
    or None for a blank line (nothing to answer). A refusal of a notification (no
    ``id``) is logged, never answered."""
    line = line.rstrip(b"\r\n")
    if not line.strip():
        return None
    if len(line) > MAX_MESSAGE_BYTES:
        return Refusal(
            _guess_id(line), _INVALID_REQUEST, f"a request over {MAX_MESSAGE_BYTES} bytes"
        )
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        return Refusal(_guess_id(line), _PARSE_ERROR, f"not UTF-8 (byte {e.start})")
    try:
        obj = jsonsafe.loads(text, what="the request", max_depth=MAX_DEPTH)
    except jsonsafe.JSONInputError as e:
        if e.reason == "depth":
            return Refusal(_guess_id(line), _INVALID_REQUEST, f"nested deeper than {MAX_DEPTH}")
        return Refusal(_guess_id(line), _PARSE_ERROR, f"not JSON ({str(e)[:80]})")
    bad_id = _id_problem(obj)
    if bad_id is not None:
        return bad_id
    ident = obj.get("id") if isinstance(obj, dict) else None
    ident = ident if isinstance(ident, (int, str)) and not isinstance(ident, bool) else None
    notification = isinstance(obj, dict) and "id" not in obj
    why = _json_problem(obj) or _not_a_message(text)
    if why is None:
        return text
    return Refusal(ident, _INVALID_REQUEST, why, notification)


def _id_problem(obj: Any) -> Refusal | None:
    """The refusal of a request whose ``id`` the SDK would not answer (it would take the
    request for a notification and drop it): an object, a list or a boolean (JSON-RPC 2.0:
    -32600 with id null), null, or a number with a fraction (answered with that id)."""
    if not isinstance(obj, dict) or "id" not in obj or "method" not in obj:
        return None
    ident = obj["id"]
    if isinstance(ident, bool) or not isinstance(ident, (int, float, str, type(None))):
        kind = {dict: "an object", list: "a list", bool: "a boolean"}.get(type(ident), "a value")
        why = f"an id that is {kind}: JSON-RPC ids are strings, numbers or null"
        return Refusal(None, _INVALID_REQUEST, why)
    if ident is None:
        return Refusal(None, _INVALID_REQUEST, "a request with a null id: use a string or a number")
    if isinstance(ident, float):
        if ident != ident or ident in (float("inf"), float("-inf")):
            return Refusal(None, _INVALID_REQUEST, "an id that is not a finite number")
        return Refusal(ident, _INVALID_REQUEST, "an id with a fraction: use a string or an integer")
    return None


def _not_a_message(text: str) -> str | None:
    """Why the SDK would not read ``text`` as a JSON-RPC message (it would drop it, unanswered)."""
    import mcp_types as types

    try:
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError:
        return "not a JSON-RPC 2.0 request, notification or response"
    return None


def _guess_id(line: bytes) -> int | str | None:
    m = _ID.search(line[:4096])
    if m is None:
        return None
    try:
        value = json.loads(m.group(1).decode("utf-8", "replace"))
    except ValueError:
        return None
    return value if isinstance(value, (int, str)) and _json_problem(value) is None else None


def _json_problem(obj: Any) -> str | None:
    """Why a parsed request must not reach the SDK: too deep, or a lone surrogate."""
    todo: list[tuple[Any, int]] = [(obj, 1)]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, str):
            if not value.isascii() and _SURROGATE.search(value):
                return "a string with a lone surrogate (not Unicode text)"
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH}"
        items = list(value.items()) if isinstance(value, dict) else [(None, v) for v in value]
        for k, v in items:
            if k is not None:
                todo.append((k, depth))
            todo.append((v, depth + 1))
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")


class _Screen:
    """The SDK's stdin: the client's lines that pass :func:`screen_line`; the others are
    answered here with a JSON-RPC error, counted in ``refused`` and logged on stderr."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw  # a binary file
        self.refused = 0
        self._write: Any = None

    def attach(self, write_stream: Any) -> None:
        self._write = write_stream

    def __aiter__(self) -> Any:
        return self._lines()

    async def _lines(self) -> Any:
        import anyio

        while True:
            line = await anyio.to_thread.run_sync(self.raw.readline, MAX_MESSAGE_BYTES + 1)
            if not line:
                return
            if len(line) > MAX_MESSAGE_BYTES and not line.endswith(b"\n"):
                await anyio.to_thread.run_sync(self._skip_rest)
            got = screen_line(line)
            if isinstance(got, str):
                yield got
            elif got is not None:
                await self._refuse(got)

    def _skip_rest(self) -> None:
        while True:
            chunk = self.raw.readline(1 << 20)
            if not chunk or chunk.endswith(b"\n"):
                return

    async def _refuse(self, r: Refusal) -> None:
        import anyio
        from mcp.shared.message import SessionMessage

        self.refused += 1
        with contextlib.suppress(Exception):
            sys.stderr.write(f"agentmem mcp: refused request {repr(r.id)[:80]}: {r.why}\n")
            sys.stderr.flush()
        if r.notification:
            return  # JSON-RPC: a notification is never answered
        while self._write is None:
            await anyio.sleep(0.01)
        error = {"code": r.code, "message": f"agentmem refused the request: {r.why}"}
        answer = _Written({"jsonrpc": "2.0", "id": r.id, "error": error})
        await self._write.send(SessionMessage(answer))  # type: ignore[arg-type]


class _Written:
    """A refusal as the SDK's writer sends it (``model_dump_json``), written as exact JSON:
    the SDK's own error type cannot hold every id a request may carry (``1.5``)."""

    def __init__(self, message: dict[str, Any]) -> None:
        self.message = message

    def model_dump_json(self, **_: Any) -> str:
        return json.dumps(self.message, ensure_ascii=True, separators=(",", ":"))


@contextlib.contextmanager
def _private_stdin() -> Iterator[Any]:
    """The client's input as a binary file of our own, with fd 0 on the null device while
    serving (as the SDK does: a child process must not read the protocol)."""
    try:
        null = os.open(os.devnull, os.O_RDONLY)
    except OSError:
        yield sys.stdin.buffer
        return
    private = -1
    try:
        private = os.dup(0)
        os.dup2(null, 0)
    except OSError:  # no fd 0 to move: read it in place, as the SDK would
        if private >= 0:
            os.close(private)
        private = -1
    finally:
        os.close(null)
    if private < 0:
        yield sys.stdin.buffer
        return
    try:
        with os.fdopen(private, "rb", closefd=False) as raw:
            yield raw
    finally:
        with contextlib.suppress(OSError):
            os.dup2(private, 0)
        os.close(private)


async def _run_stdio(server: "MCPServer[Any]") -> None:
    """``server.run_stdio_async`` with :class:`_Screen` in front of the SDK's reader."""
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server
    with _private_stdin() as raw:
        screen = _Screen(raw)
        async with stdio_server(stdin=screen) as (read_stream, write_stream):  # type: ignore[arg-type]
            screen.attach(write_stream)
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


class _Signalled(BaseException):
    """SIGTERM or SIGINT arrived; raised from the signal handler so that ``finally`` runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def serve(db_path: str | None = None) -> None:
    """Open the library at ``db_path`` and serve MCP over stdin/stdout until stdin closes;
    then record unfinished trajectories as rejected and close the library.

    On SIGTERM or SIGINT the same happens, and then the process exits at once
    (status 143 or 130): the SDK's stdin reader thread would otherwise keep it
    alive until stdin closes. Raises :class:`McpUnavailableError` when the SDK
    is missing, and agentmem's or the OS's errors when the library cannot be opened.
    """
    _import_sdk()
    import anyio

    from .memory import Memory

    mem = Memory.open(db_path)
    core = AgentMemTools(mem)
    restore = _raise_on_signals()
    status: int | None = None
    try:
        server = build_server(core)
        anyio.run(_run_stdio, server)
    except _Signalled as e:
        status = 128 + e.signum
    finally:
        _ignore_signals()  # a second Ctrl-C must not cut the recording of unfinished ones short
        try:
            core.close()
        finally:
            restore()
    if status is not None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)


def _ignore_signals() -> None:
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)


def _raise_on_signals() -> Callable[[], None]:
    """Make SIGTERM and SIGINT raise :class:`_Signalled`; returns the undo.

    A handler of our own for SIGINT also keeps asyncio from installing its own,
    which only cancels the main task, and that waits forever on the blocking
    stdin read.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_signal(signum: int, frame: object) -> None:
        raise _Signalled(signum)

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}

    def restore() -> None:
        for sig, handler in old.items():
            signal.signal(sig, handler)

    return restore
