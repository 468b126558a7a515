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
``custom_tool_call_output``).

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
from .turns import (
    FileReport,
    JsonLine,
    Turn,
    TurnBuilder,
    exit_code,
    in_order,
    read_json_lines,
    text_of,
)

__all__ = ["DENIALS", "CodexFile", "parse_codex", "session_id_of"]

SOURCE = "codex"

#: Outputs Codex gives the model when the user declined a command or a patch.
DENIALS = ("exec command rejected by user", "patch rejected by user")

_KNOWN_EVENTS = (
    "agent_message",
    "agent_reasoning",
    "agent_reasoning_raw_content",
    "agent_reasoning_section_break",
    "token_count",
    "task_started",
    "exec_command_begin",
    "exec_command_output_delta",
    "patch_apply_begin",
    "mcp_tool_call_begin",
    "web_search_begin",
    "web_search_end",
    "turn_diff",
    "plan_update",
    "exec_approval_request",
    "apply_patch_approval_request",
    "background_event",
    "stream_error",
    "error",
    "context_compacted",
    "entered_review_mode",
    "exited_review_mode",
    "item_completed",
    "user_message_image",
    "view_image_tool_call",
)
_KNOWN_ITEMS = (
    "reasoning",
    "web_search_call",
    "ghost_snapshot",
    "compaction",
)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


@attrs.frozen
class CodexFile:
    """A parsed rollout: its turns and what was skipped."""

    turns: tuple[Turn, ...]
    report: FileReport


def session_id_of(path: str) -> str:
    """The session id in a rollout's file name (``rollout-<time>-<uuid>.jsonl``)."""
    found = _UUID.findall(Path(path).name)
    return found[-1] if found else Path(path).stem


def _output(payload: Mapping[str, Any]) -> tuple[str, bool | None]:
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
                success = code == 0
            text = obj["output"]
    if success is None:
        code = exit_code(text)
        if code is None:
            m = re.search(r"^Process exited with code (-?\d+)", text[:500], re.M)
            code = int(m.group(1)) if m else None
        if code is not None:
            success = code == 0
    return text, success


def _params(payload: Mapping[str, Any]) -> Any:
    args = payload.get("arguments")
    if isinstance(args, str):
        try:
            parsed = loads(args) if args.strip() else {}
        except ValueError:
            return {"_raw_arguments": args}
        return parsed if isinstance(parsed, Mapping) else {"_arguments": parsed}
    return args


def parse_codex(
    data: bytes, *, path: str = "", final: bool = False, quiet: bool = False
) -> CodexFile:
    """Turns of one Codex rollout. ``final`` and ``quiet`` as for Claude Code."""
    report = FileReport(path)
    lines, bad, truncated = read_json_lines(data)
    report.bad_lines, report.truncated = bad, truncated
    reader = _Reader(report, path, has_events=_has_prompt_events(lines))
    for n, obj, why in in_order(lines, bad):
        if obj is None:
            reader.b.damage(n, why or "is unreadable")
        else:
            reader.line(n, obj)
    turns = reader.b.finish(final=final, quiet=quiet)
    return CodexFile(tuple(turns), report)


def _has_prompt_events(lines: Sequence[JsonLine]) -> bool:
    """Whether the rollout has ``user_message`` events: then they, not messages, are prompts."""
    return any(
        x.data.get("type") == "event_msg"
        and isinstance(x.data.get("payload"), Mapping)
        and x.data["payload"].get("type") == "user_message"
        for x in lines
    )


class _Reader:
    """One rollout being read: its turns so far, the session, directory and turn meta."""

    def __init__(self, report: FileReport, path: str, *, has_events: bool):
        self.report = report
        self.b = TurnBuilder(report)
        self.path = path
        self.has_events = has_events
        self.session: str | None = None
        self.cwd: str | None = None
        self.base: dict[str, Any] = {"transcript": path} if path else {}
        self.prompts = 0

    def line(self, n: int, obj: Mapping[str, Any]) -> None:
        """One ``{timestamp, type, payload}`` line, by its type; unknown types are counted."""
        kind, payload, at = obj.get("type"), obj.get("payload"), obj.get("timestamp")
        if not isinstance(payload, Mapping):
            self.report.skipped_lines[f"{str(kind)[:40]} without a payload"] += 1
            return
        ptype = payload.get("type")
        if kind == "session_meta":
            self._session_meta(payload)
        elif kind == "turn_context":
            self._turn_context(payload)
        elif kind == "event_msg":
            _event(self.b, self.report, payload, ptype, n, at)
            if ptype == "user_message" and payload.get("kind") in (None, "plain"):
                text = payload.get("message")
                self._prompt(n, text if isinstance(text, str) else "", at)
        elif kind == "response_item":
            self._item(n, payload, ptype, at)
        elif kind == "compacted":
            self.report.ignored_lines += 1
        else:
            self.report.skipped_lines[str(kind)[:40]] += 1

    def _session_meta(self, payload: Mapping[str, Any]) -> None:
        """The session's id, directory, branch and version: the first ``session_meta`` counts."""
        self.report.ignored_lines += 1
        if self.session is None and isinstance(payload.get("id"), str) and payload["id"]:
            self.session = payload["id"]
            self.cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else self.cwd
            git = payload.get("git")
            if isinstance(git, Mapping) and isinstance(git.get("branch"), str):
                self.base["git_branch"] = git["branch"]
            if isinstance(payload.get("cli_version"), str):
                self.base["agent_version"] = payload["cli_version"]

    def _turn_context(self, payload: Mapping[str, Any]) -> None:
        """The directory and model of the turns that follow."""
        self.report.ignored_lines += 1
        if isinstance(payload.get("cwd"), str):
            self.cwd = payload["cwd"]
        if isinstance(payload.get("model"), str):
            self.base["model"] = payload["model"]

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

    def _item(self, n: int, payload: Mapping[str, Any], ptype: Any, at: Any) -> None:
        """A ``response_item``: a message, a call, a call's output, or one to ignore or skip."""
        if ptype == "message":
            self._message(n, payload, at)
            return
        b = self.b
        b.touch(at)
        if ptype == "function_call":
            b.call(payload.get("call_id"), payload.get("name"), _params(payload))
        elif ptype == "custom_tool_call":
            b.call(payload.get("call_id"), payload.get("name"), {"input": payload.get("input")})
        elif ptype == "local_shell_call":
            action = payload.get("action")
            command = action.get("command") if isinstance(action, Mapping) else None
            b.call(payload.get("call_id") or payload.get("id"), "local_shell", {"command": command})
        elif ptype in ("function_call_output", "custom_tool_call_output"):
            text, success = _output(payload)
            b.result(payload.get("call_id"), text, success=success, denied=text.strip() in DENIALS)
        elif ptype in _KNOWN_ITEMS:
            self.report.ignored_lines += 1
        else:
            self.report.skipped_lines[f"response_item:{str(ptype)[:40]}"] += 1

    def _message(self, n: int, payload: Mapping[str, Any], at: Any) -> None:
        """A message item: a prompt only in rollouts without prompt events, and not injected
        context (environment, AGENTS.md)."""
        text = text_of(payload.get("content"))
        if (
            payload.get("role") == "user"
            and not self.has_events
            and text.strip()
            and not text.lstrip().startswith(("<", "# AGENTS.md"))
        ):
            self._prompt(n, text, at)
        else:
            self.report.ignored_lines += 1


def _event(
    b: TurnBuilder, report: FileReport, payload: Mapping[str, Any], ptype: Any, n: int, at: Any
) -> None:
    """An ``event_msg`` other than a prompt: the end of a turn or of a call."""
    if ptype == "user_message":
        if payload.get("kind") not in (None, "plain"):
            report.ignored_lines += 1
        return
    b.touch(at)
    if ptype == "task_complete":
        b.end()
    elif ptype == "turn_aborted":
        b.interrupt()
        reason = payload.get("reason")
        if b.current is not None and isinstance(reason, str):
            b.current.meta["aborted"] = reason
    elif ptype == "exec_command_end":
        code = payload.get("exit_code")
        out = payload.get("aggregated_output", payload.get("stderr", ""))
        denied = payload.get("status") == "declined" or (
            isinstance(out, str) and out.strip() in DENIALS
        )
        if isinstance(code, int) and not isinstance(code, bool):
            b.outcome(payload.get("call_id"), code == 0 and not denied, denied=denied)
    elif ptype == "patch_apply_end":
        ok = payload.get("success")
        if isinstance(ok, bool):
            b.outcome(payload.get("call_id"), ok)
    elif ptype == "mcp_tool_call_end":
        result = payload.get("result")
        if isinstance(result, Mapping):
            ok_part = result.get("Ok")
            failed = "Err" in result or (
                isinstance(ok_part, Mapping) and ok_part.get("isError") is True
            )
            b.outcome(payload.get("call_id"), not failed)
    elif ptype in _KNOWN_EVENTS:
        report.ignored_lines += 1
    else:
        report.skipped_lines[f"event_msg:{str(ptype)[:40]}"] += 1
