"""Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<session-id>.jsonl``.

Each line is ``{timestamp, type, payload}``. ``session_meta`` names the session
and its working directory (a forked session appends its parent's; the first one
counts), ``turn_context`` the directory and model of the turns that follow.
``event_msg`` payloads carry the user's prompts (``user_message``), the ends of
turns (``task_complete``, ``turn_aborted``) and what tools really did
(``exec_command_end`` with the exit code, ``patch_apply_end`` with success,
``mcp_tool_call_end``); ``response_item`` payloads carry the model's calls
(``function_call{name, arguments, call_id}``, ``custom_tool_call``,
``local_shell_call``) and their outputs (``function_call_output``,
``custom_tool_call_output``). Codex 0.148 and later also record each finished item as an
``event_msg`` ``item_completed`` (``UserMessage``; ``CommandExecution`` with ``exit_code``
and ``aggregated_output``; ``McpToolCall`` with ``result.isError``; ``FileChange``), and a
paginated rollout (``history_mode: "paginated"``) may hold only those: a call is read
from whichever of the two records it has, once.

Unified exec (``exec_command`` and ``write_stdin``): a ``write_stdin`` call polls (or
feeds) the process an ``exec_command`` started, named by its ``session_id``; it is part
of that command's step, not a step of its own. The headers Codex puts before a
command's output ("Chunk ID", "Wall time", "Process exited with code N", "Process
running with session ID N", "Original token count", "Output:") are stripped, and the
exit code read from them.

OpenAI calls the format internal; the parser keeps to these fields and skips
(and counts) everything else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from ._json import loads
from .formats import ParsedFile, TranscriptFormat, home_of
from .turns import (
    Call,
    FileReport,
    JsonLine,
    TurnBuilder,
    exit_code,
    in_order,
    read_json_lines,
    text_of,
)

__all__ = ["DENIALS", "FORMAT", "CodexFile", "parse_codex", "session_id_of"]

SOURCE = "codex"

#: Outputs Codex gives the model when the user declined a command or a patch.
DENIALS = ("exec command rejected by user", "patch rejected by user")

#: Top-level line types that carry no turn: skipped quietly.
KNOWN_LINES = (
    "compacted",
    "world_state",
    "token_usage_record",
    "thread_settings_applied",
    "thread_name_updated",
    "thread_rolled_back",
    "history_page",
    "page",
)
#: ``event_msg`` types that carry no turn (their calls' ends are read, the rest skipped).
KNOWN_EVENTS = (
    "agent_message",
    "agent_message_delta",
    "agent_message_content_delta",
    "agent_reasoning",
    "agent_reasoning_delta",
    "agent_reasoning_raw_content",
    "agent_reasoning_raw_content_delta",
    "agent_reasoning_section_break",
    "reasoning_content_delta",
    "reasoning_raw_content_delta",
    "token_count",
    "task_started",
    "turn_started",
    "exec_command_begin",
    "exec_command_output_delta",
    "terminal_interaction",
    "patch_apply_begin",
    "mcp_tool_call_begin",
    "mcp_startup_update",
    "mcp_startup_complete",
    "mcp_list_tools_response",
    "web_search_begin",
    "web_search_end",
    "turn_diff",
    "plan_update",
    "plan_delta",
    "exec_approval_request",
    "apply_patch_approval_request",
    "request_user_input",
    "elicitation_request",
    "background_event",
    "stream_error",
    "error",
    "warning",
    "context_compacted",
    "entered_review_mode",
    "exited_review_mode",
    "item_started",
    "user_message_image",
    "view_image_tool_call",
    "session_configured",
    "thread_settings_applied",
    "thread_name_updated",
    "undo_started",
    "undo_completed",
    "list_custom_prompts_response",
    "get_history_entry_response",
    "raw_response_item",
    "deprecation_notice",
    "model_reroute",
    "shutdown_complete",
)
#: ``response_item`` types that carry no call.
KNOWN_ITEMS = (
    "reasoning",
    "web_search_call",
    "ghost_snapshot",
    "compaction",
    "compaction_summary",
    "image_generation_call",
)
#: ``item_completed`` items that carry no call.
KNOWN_TURN_ITEMS = (
    "AgentMessage",
    "Reasoning",
    "Plan",
    "WebSearch",
    "ImageGeneration",
    "ContextCompaction",
    "HookPrompt",
    "TodoList",
    "Error",
)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
# The header of a unified-exec output, a line each, before "Output:" (or the first other line).
_HEADER = re.compile(
    r"(?:Chunk ID:.*|Wall time:.*|Original token count:.*|Total output lines:.*"
    r"|Process exited with code (?P<code>-?\d+).*|Exit code:\s*(?P<code2>-?\d+).*"
    r"|Process running with session ID (?P<session>\d+).*)"
)


CodexFile = ParsedFile  # the name earlier versions exported


# Codex's own words when a call could not run: "failed in sandbox LinuxSeccomp with execution
# error: sandbox denied exec error, exit code: 1, ...", "execution error: Io(...)", "apply_patch
# verification failed: Failed to find expected lines ..."
_COULD_NOT_RUN = re.compile(
    r"\A\s*(?:failed in sandbox|execution error|sandbox error|apply_patch verification failed)\b",
    re.I,
)
_EXIT_IN_LINE = re.compile(r"exit[ _]code:?\s*(-?\d+)", re.I)
# A call the user or the approval policy refused, printed as a Rust value:
# "exec_command failed: CreateProcess { message: "Rejected(\"rejected by user\")" }" (the
# policy's own reason may follow); and one the user stopped: "aborted by user after 8.1s".
_REJECTED = re.compile(r"\A\s*\w+ failed\b[^\n]{0,200}?\bRejected\(")
# A call the user stopped: "aborted by user" first, or after Codex's "Wall time: N seconds"
# line (shell_command prints it so: the call then looked like one that ran without error).
_STOPPED = re.compile(r"\A\s*(?:Wall time: [\d.]+ seconds\s*\n\s*)?aborted by user\b")
# Codex 0.110+ reports a command the sandbox refused as a Rust value printed whole:
# "exec_command failed[ for `cmd`]: CreateProcess { message: "Codex(Sandbox(Denied { output:
# ExecToolCallOutput { exit_code: 128, ..., stderr: StreamOutput { text: \"fatal: ...\"".
_EXEC_FAILED = re.compile(r"\A\s*exec_command failed\b[^\n]*?\bSandbox\(Denied\b")
# the value's text: up to its closing \" (alternatives disjoint: no backtracking blow-up)
_STDERR = re.compile(r'stderr: StreamOutput \{ text: \\"((?:[^"\\]|\\\\|\\[^"\\])*)\\"')
# Other builds print the refusal as its own variant, the command (with its own quotes and
# newlines) first: "exec_command failed[ for `cmd`]: SandboxDenied { message: \"...\",
# output: ExecToolCallOutput { exit_code: 1, ..., stderr: StreamOutput { text: \"...\" ...",
# its strings escaped once.
_SANDBOX_DENIED = re.compile(r"\A\s*exec_command failed\b")
_DENIED_VARIANT = re.compile(r"(?:\bfailed|`): SandboxDenied \{ ")
_STDERR_ONCE = re.compile(r'stderr: StreamOutput \{ text: "((?:[^"\\]|\\.)*)"')
_MESSAGE_ONCE = re.compile(r'SandboxDenied \{ message: "((?:[^"\\]|\\.)*)"')


def sandbox_denial(text: str) -> str | None:
    """An ``exec_command failed ... Sandbox(Denied ...)`` output read by its structure:
    ``sandbox denied (exit code N)`` and the command's own stderr, a line each; else None."""
    once = _denied_variant(text)
    if not _EXEC_FAILED.match(text) and once is None:
        return None
    code = denial_exit_code(text)
    head = "sandbox denied" + (f" (exit code {code})" if code is not None else "")
    err = _STDERR.search(text[:20_000])
    if once is not None:
        return f"{head}\n{once}" if once else head
    if err is None:
        return head
    # the stderr was escaped twice: once in the value, once in its message
    return f"{head}\n{_unescape(err.group(1), 2).strip()}"


_OUTPUT_EXIT = re.compile(r"ExecToolCallOutput \{ exit_code: (-?\d+)")


def denial_exit_code(text: str) -> int | None:
    """A refused command's exit code: the value's own ``ExecToolCallOutput { exit_code: N``,
    never an "exit code" the command's text holds (``... || echo exit code 0``); else the
    first one named, for the older shape."""
    found = _OUTPUT_EXIT.search(text[:20_000]) or _EXIT_IN_LINE.search(text)
    return int(found.group(1)) if found else None


def _unescape(said: str, times: int) -> str:
    for _ in range(times):
        said = re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), said)
    return said


def _denied_variant(text: str) -> str | None:
    """The ``SandboxDenied { message: ... }`` variant's stderr (else its message), escaped
    once; "" when it holds neither; None when ``text`` is not that variant (the variant's
    name is looked for after the command, which may span lines, in the first 8,000
    characters)."""
    if not _SANDBOX_DENIED.match(text) or not _DENIED_VARIANT.search(text[:8_000]):
        return None
    for pattern in (_STDERR_ONCE, _MESSAGE_ONCE):
        found = pattern.search(text[:20_000])
        if found and found.group(1).strip():
            return _unescape(found.group(1), 1).strip()
    return ""


def session_id_of(path: str) -> str:
    """The session id in a rollout's file name (``rollout-<time>-<uuid>.jsonl``)."""
    found = _UUID.findall(Path(path).name)
    return found[-1] if found else Path(path).stem


@attrs.frozen
class Output:
    """A call's output: its text without Codex's header, what the header said."""

    text: str
    success: bool | None = None
    exit_code: int | None = None
    session: str | None = None  # a unified-exec process still running: its session id


def strip_header(text: str) -> Output:
    """``text`` without the unified-exec header, with the exit code and session it names."""
    lines = text.split("\n")
    code: int | None = None
    session: str | None = None
    i = 0
    while i < len(lines) and i < 12:
        m = _HEADER.fullmatch(lines[i].strip())
        if m is None:
            if lines[i].strip() == "Output:":
                i += 1
            break
        found = m.group("code") or m.group("code2")
        if found is not None:
            code = int(found)
        if m.group("session") is not None:
            session = m.group("session")
        i += 1
    if i == 0:
        return Output(text, exit_code=exit_code(text))
    body = "\n".join(lines[i:])
    return Output(body, None if code is None else code == 0, code, session)


#: Codex's code mode (0.137+): an ``exec`` tool runs JavaScript that calls the other tools
#: (``await tools.shell_command({...})``) and answers "Script completed" or "Script failed",
#: then "Wall time N seconds" and "Output:".
_SCRIPT = re.compile(r"\AScript (completed|failed)\s*(?:\n|\Z)")


def framed(body: str, code: int | None) -> str:
    """An output as it is stored: a non-zero exit code kept in one header line of Codex's own
    (``Process exited with code N``, then ``Output:``) before the body, as Claude Code keeps
    ``Exit code N``, so that whoever reads the stored call reads its status
    (:func:`agentmem.agents.outcomes.strip_headers`); a success or an unknown status adds
    nothing."""
    if code is None or code == 0:
        return body
    return f"Process exited with code {code}\nOutput:\n{body}"


def _output(payload: Mapping[str, Any]) -> Output:
    """A call output's text and, when it says so, its success."""
    out = payload.get("output")
    success: bool | None = None
    if isinstance(out, Mapping):
        success = out.get("success") if isinstance(out.get("success"), bool) else None
        out = out.get("content", out.get("output", ""))
    text = text_of(out)
    if text.lstrip().startswith("{"):  # older shells: {"output": ..., "metadata": {...}}
        try:
            obj = loads(text)
        except ValueError:
            obj = None
        if isinstance(obj, Mapping) and isinstance(obj.get("output"), str):
            meta = obj.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, Mapping) else None
            if isinstance(code, int) and not isinstance(code, bool):
                return Output(framed(obj["output"], code), code == 0, code)
            text = obj["output"]
    script = _SCRIPT.match(text)
    if script is not None:  # code mode: the script's own status, its framing kept
        return Output(text, script.group(1) == "completed")
    head = strip_header(text)
    if head.text is not text and head.exit_code is not None:  # a header was stripped
        head = attrs.evolve(head, text=framed(head.text, head.exit_code))
    if success is not None and head.success is None:
        return attrs.evolve(head, success=success)
    if head.exit_code is None and head.session is None:
        m = re.search(r"^Process exited with code (-?\d+)", text[:500], re.M)
        if m:
            return attrs.evolve(head, success=int(m.group(1)) == 0, exit_code=int(m.group(1)))
        denial = sandbox_denial(text)
        if denial is not None:
            return attrs.evolve(head, text=denial, success=False, exit_code=denial_exit_code(text))
        if _REJECTED.match(text) or _STOPPED.match(text):  # refused or stopped: never ran
            return attrs.evolve(head, success=False)
        if _COULD_NOT_RUN.match(text):  # the sandbox refused, or the call could not start
            found = _EXIT_IN_LINE.search(text.split("\n", 1)[0])
            code = int(found.group(1)) if found else None
            return attrs.evolve(head, success=False, exit_code=code)
    return head


def _params(payload: Mapping[str, Any]) -> Any:
    args = payload.get("arguments")
    if isinstance(args, str):
        try:
            parsed = loads(args) if args.strip() else {}
        except ValueError:
            return {"_raw_arguments": args}
        return parsed if isinstance(parsed, Mapping) else {"_arguments": parsed}
    return args


def mcp_tool(server: Any, tool: Any) -> str | None:
    """An MCP tool's name as Claude Code writes it: ``mcp__server__tool``."""
    if not isinstance(tool, str) or not tool:
        return None
    if tool.startswith("mcp__"):
        return tool
    if not isinstance(server, str) or not server:
        return None
    server = server[len("mcp__") :] if server.startswith("mcp__") else server
    return f"mcp__{server}__{tool}"


def parse_codex(
    data: bytes, *, path: str = "", final: bool = False, quiet: bool = False
) -> ParsedFile:
    """Turns of one Codex rollout. ``final`` and ``quiet`` as for Claude Code."""
    report = FileReport(path)
    lines, bad, truncated = read_json_lines(data)
    report.bad_lines, report.truncated = bad, truncated
    reader = _Reader(report, path, prompts_from=_prompt_source(lines))
    for n, obj, why in in_order(lines, bad):
        if obj is None:
            reader.b.damage(n, why or "is unreadable")
        else:
            reader.line(n, obj)
    turns = reader.b.finish(final=final, quiet=quiet)
    return ParsedFile(tuple(turns), report)


def _prompt_source(lines: Sequence[JsonLine]) -> str:
    """Where the rollout's prompts are: ``user_message`` events, else ``UserMessage`` items,
    else user messages (the oldest rollouts)."""
    found = set()
    for x in lines:
        payload = x.data.get("payload")
        if x.data.get("type") != "event_msg" or not isinstance(payload, Mapping):
            continue
        if payload.get("type") == "user_message":
            return "event"
        item = payload.get("item")
        if isinstance(item, Mapping) and item.get("type") == "UserMessage":
            found.add("item")
    return "item" if found else "message"


class _Reader:
    """One rollout being read: its turns so far, the session, directory and turn meta."""

    def __init__(self, report: FileReport, path: str, *, prompts_from: str):
        self.report = report
        self.b = TurnBuilder(report)
        self.path = path
        self.prompts_from = prompts_from
        self.session: str | None = None
        self.cwd: str | None = None
        self.base: dict[str, Any] = {"transcript": path} if path else {}
        self.prompts = 0
        self.processes: dict[str, Call] = {}  # unified-exec session id -> its exec_command
        self.polls: dict[str, Call] = {}  # a write_stdin call id -> the command it polls

    def line(self, n: int, obj: Mapping[str, Any]) -> None:
        """One ``{timestamp, type, payload}`` line, by its type; unknown types are counted."""
        kind, payload, at = obj.get("type"), obj.get("payload"), obj.get("timestamp")
        if kind in KNOWN_LINES:
            self.report.ignore(str(kind))
            return
        if not isinstance(payload, Mapping):
            self.report.skipped_lines[f"{str(kind)[:40]} without a payload"] += 1
            return
        ptype = payload.get("type")
        if kind == "session_meta":
            self._session_meta(payload)
        elif kind == "turn_context":
            self._turn_context(payload)
        elif kind == "event_msg":
            self._event(n, payload, ptype, at)
        elif kind == "response_item":
            self._item(n, payload, ptype, at)
        else:
            self.report.skipped_lines[str(kind)[:40]] += 1

    def _session_meta(self, payload: Mapping[str, Any]) -> None:
        """The session's id, directory, branch and version: the first ``session_meta`` counts."""
        self.report.ignore("session_meta")
        if self.session is None and isinstance(payload.get("id"), str) and payload["id"]:
            self.session = payload["id"]
            self.cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else self.cwd
            git = payload.get("git")
            if isinstance(git, Mapping) and isinstance(git.get("branch"), str):
                self.base["git_branch"] = git["branch"][:200]
            if isinstance(payload.get("cli_version"), str):
                self.base["agent_version"] = payload["cli_version"][:100]
            if isinstance(payload.get("model"), str):
                self.base["model"] = payload["model"][:100]

    def _turn_context(self, payload: Mapping[str, Any]) -> None:
        """The directory and model of the turn under way and of those that follow."""
        self.report.ignore("turn_context")
        if isinstance(payload.get("cwd"), str):
            self.cwd = payload["cwd"]
            if self.b.current is not None and self.b.current.cwd is None:
                self.b.current.cwd = self.cwd
        if isinstance(payload.get("model"), str) and payload["model"]:
            self.base["model"] = payload["model"][:100]
            if self.b.current is not None:
                self.b.current.meta.setdefault("model", self.base["model"])

    def _prompt(self, n: int, text: str, at: Any) -> None:
        """A user's prompt: it starts the next turn."""
        self.b.prompt(
            self.session or session_id_of(self.path),
            f"p{self.prompts}",
            text,
            n,
            at=at if isinstance(at, str) else None,
            cwd=self.cwd,
            meta=self.base,
        )
        self.prompts += 1

    # -- response items: the model's calls and their outputs ----------------------------------

    def _item(self, n: int, payload: Mapping[str, Any], ptype: Any, at: Any) -> None:
        """A ``response_item``: a message, a call, a call's output, or one to ignore or skip."""
        if ptype == "message":
            self._message(n, payload, at)
            return
        b = self.b
        b.touch(at)
        if ptype == "function_call":
            self._function_call(payload)
        elif ptype == "custom_tool_call":
            b.call(payload.get("call_id"), payload.get("name"), {"input": payload.get("input")})
        elif ptype == "local_shell_call":
            action = payload.get("action")
            command = action.get("command") if isinstance(action, Mapping) else None
            b.call(payload.get("call_id") or payload.get("id"), "local_shell", {"command": command})
        elif ptype in ("function_call_output", "custom_tool_call_output"):
            self._call_output(payload)
        elif ptype in KNOWN_ITEMS:
            self.report.ignore(f"response_item:{ptype}")
        else:
            self.report.skipped_lines[f"response_item:{str(ptype)[:40]}"] += 1

    def _function_call(self, payload: Mapping[str, Any]) -> None:
        """A function call; an MCP tool is named ``mcp__server__tool``; a ``write_stdin`` to a
        running command is part of that command."""
        name, params, cid = payload.get("name"), _params(payload), payload.get("call_id")
        if name == "write_stdin" and isinstance(params, Mapping) and isinstance(cid, str):
            owner = self.processes.get(str(params.get("session_id")))
            if owner is not None:
                self.polls[cid] = owner
                return
        namespace = payload.get("namespace")
        if isinstance(namespace, str) and namespace:
            name = mcp_tool(namespace, name) or name
        self.b.call(cid, name, params)

    def _call_output(self, payload: Mapping[str, Any]) -> None:
        """A call's output: to its call, or to the command a poll belongs to."""
        out = _output(payload)
        cid = payload.get("call_id")
        owner = self.polls.pop(cid, None) if isinstance(cid, str) else None
        if owner is not None:  # a poll: the command's output goes on, its status first
            body = strip_header(out.text).text if out.exit_code else out.text
            owner.output = framed(
                f"{owner.output}\n{body}" if owner.output else body, out.exit_code
            )
            if out.success is not None:
                owner.success = out.success and not owner.denied
            self._track(out, owner)
            return
        denied = out.text.strip() in DENIALS or _REJECTED.match(out.text) is not None
        self.b.result(cid, out.text, success=out.success, denied=denied)
        found = self.b.call_of(cid)
        if found is not None:
            self._track(out, found)

    def _track(self, out: Output, call: Call) -> None:
        """Remember a unified-exec process still running, so its polls find their command."""
        if out.session is not None and out.exit_code is None:
            self.processes[out.session] = call
        elif out.exit_code is not None:
            for key in [k for k, v in self.processes.items() if v is call]:
                del self.processes[key]

    def _message(self, n: int, payload: Mapping[str, Any], at: Any) -> None:
        """A message item: a prompt only in rollouts without prompt events, and not injected
        context (environment, AGENTS.md)."""
        text = text_of(payload.get("content"))
        if (
            payload.get("role") == "user"
            and self.prompts_from == "message"
            and text.strip()
            and not text.lstrip().startswith(("<", "# AGENTS.md"))
        ):
            self._prompt(n, text, at)
        else:
            self.report.ignore(f"response_item:message:{payload.get('role')}")

    # -- events: prompts, the ends of turns and of calls ---------------------------------------

    def _event(self, n: int, payload: Mapping[str, Any], ptype: Any, at: Any) -> None:
        """An ``event_msg``: a prompt, the end of a turn or of a call, an item completed."""
        b = self.b
        if ptype == "user_message":
            if payload.get("kind") not in (None, "plain") or self.prompts_from != "event":
                self.report.ignore("event_msg:user_message (not a prompt)")
                return
            text = payload.get("message")
            self._prompt(n, text if isinstance(text, str) else "", at)
            return
        b.touch(at)
        if ptype == "item_completed":
            self._item_completed(n, payload.get("item"), at)
        elif ptype in ("task_complete", "turn_complete"):
            b.end()
        elif ptype == "turn_aborted":
            b.interrupt()
            reason = payload.get("reason")
            if b.current is not None and isinstance(reason, str):
                b.current.meta["aborted"] = reason[:100]
        elif ptype == "exec_command_end":
            self._exec_end(payload)
        elif ptype == "patch_apply_end":
            ok = payload.get("success")
            if isinstance(ok, bool):
                b.outcome(payload.get("call_id"), ok)
        elif ptype == "mcp_tool_call_end":
            self._mcp_end(payload)
        elif ptype in KNOWN_EVENTS:
            self.report.ignore(f"event_msg:{ptype}")
        else:
            self.report.skipped_lines[f"event_msg:{str(ptype)[:40]}"] += 1

    def _exec_end(self, payload: Mapping[str, Any]) -> None:
        code = payload.get("exit_code")
        out = payload.get("aggregated_output", payload.get("stderr", ""))
        denied = payload.get("status") == "declined" or (
            isinstance(out, str) and (out.strip() in DENIALS or _REJECTED.match(out) is not None)
        )
        cid = payload.get("call_id")
        owner = self.polls.get(cid) if isinstance(cid, str) else None
        if owner is not None:
            cid = next((k for k, (_, c) in self.b.calls.items() if c is owner), cid)
        if isinstance(code, int) and not isinstance(code, bool):
            self.b.outcome(cid, code == 0 and not denied, denied=denied)

    def _mcp_end(self, payload: Mapping[str, Any]) -> None:
        cid = payload.get("call_id")
        invocation = payload.get("invocation")
        found = self.b.call_of(cid)
        if found is not None and isinstance(invocation, Mapping):
            found.tool = mcp_tool(invocation.get("server"), invocation.get("tool")) or found.tool
        result = payload.get("result")
        if isinstance(result, Mapping):
            ok_part = result.get("Ok")
            failed = "Err" in result or (
                isinstance(ok_part, Mapping) and ok_part.get("isError") is True
            )
            self.b.outcome(cid, not failed)

    def _item_completed(self, n: int, item: Any, at: Any) -> None:
        """An ``item_completed`` event (Codex 0.148+): a prompt, or a call with its outcome."""
        if not isinstance(item, Mapping):
            self.report.skipped_lines["event_msg:item_completed without an item"] += 1
            return
        kind = item.get("type")
        if isinstance(kind, str) and "_" in kind:  # command_execution -> CommandExecution
            kind = kind.title().replace("_", "")
        if kind == "UserMessage":
            if self.prompts_from == "item":
                self._prompt(n, text_of(item.get("content")), at)
            else:
                self.report.ignore("item_completed:UserMessage")
        elif kind in ("CommandExecution", "McpToolCall", "FileChange", "DynamicToolCall"):
            _completed_call(self.b, item, kind)
        elif kind in KNOWN_TURN_ITEMS:
            self.report.ignore(f"item_completed:{kind}")
        else:
            self.report.skipped_lines[f"item_completed:{str(kind)[:40]}"] += 1


def _completed_call(b: TurnBuilder, item: Mapping[str, Any], kind: str) -> None:
    """A call's ``item_completed`` record: its outcome, and the call itself when the rollout
    has no ``function_call`` for it (a paginated rollout)."""
    cid = item.get("id") if isinstance(item.get("id"), str) else item.get("call_id")
    status = item.get("status")
    denied = status == "declined"
    if kind == "CommandExecution":
        code = item.get("exit_code")
        out = item.get("aggregated_output")
        ok = code == 0 if isinstance(code, int) and not isinstance(code, bool) else None
        tool = "exec_command"
        params: dict[str, Any] = {"cmd": item.get("command")} if item.get("command") else {}
    elif kind == "McpToolCall":
        result = item.get("result")
        error = item.get("error")
        is_error = isinstance(result, Mapping) and result.get("isError") is True
        ok = not (is_error or bool(error))
        out = text_of(result.get("content")) if isinstance(result, Mapping) else error
        tool = mcp_tool(item.get("server"), item.get("tool")) or "mcp"
        args = item.get("arguments")
        params = dict(args) if isinstance(args, Mapping) else {}
    else:
        ok = status == "completed" if isinstance(status, str) else None
        out = None
        name = item.get("tool")
        tool = "apply_patch" if kind == "FileChange" else name if isinstance(name, str) else kind
        params = {}
    if isinstance(status, str) and status == "failed" and ok is None:
        ok = False
    found = b.call_of(cid)
    if found is None:  # only the item: the call is the item
        b.call(cid, tool, params)
        found = b.call_of(cid)
        if found is None:
            return
        code = item.get("exit_code") if kind == "CommandExecution" else None
        code = code if isinstance(code, int) and not isinstance(code, bool) else None
        found.output = framed(text_of(out), code) if out is not None else ""
    elif kind == "McpToolCall":
        found.tool = tool if tool != "mcp" else found.tool
    if ok is not None:
        b.outcome(cid, ok and not denied, denied=denied)


def detect_line(o: Mapping[str, Any]) -> bool:
    """A Codex rollout line: ``{timestamp, type, payload}`` of Codex's record types."""
    return o.get("type") in (
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
    ) and isinstance(o.get("payload"), Mapping)


def detect(objects: Sequence[Mapping[str, Any]]) -> bool:
    """Codex rollout lines: one of ``objects`` is (:func:`detect_line`)."""
    return any(detect_line(o) for o in objects)


def _parse(
    data: bytes,
    *,
    path: str,
    final: bool,
    quiet: bool,
    subagent: Mapping[str, Any] | None,
) -> ParsedFile:
    return parse_codex(data, path=path, final=final, quiet=quiet)


FORMAT = TranscriptFormat(
    name=SOURCE,
    description="Codex CLI rollouts (~/.codex/sessions)",
    parse=_parse,
    detect=detect,
    detect_line=detect_line,
    home=lambda: home_of("CODEX_HOME", ".codex", "sessions"),
    pattern="rollout-*.jsonl",
    noun="a Codex rollout",
)
