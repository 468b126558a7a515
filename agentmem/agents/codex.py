"""Codex CLI's tools (0.36 to 0.17x), as :mod:`agentmem.importers.codex` records them.

``shell`` takes ``command`` as an argv (``["bash", "-lc", "..."]``), ``shell_command``
as text, ``exec_command`` (unified exec) ``cmd`` as text; all take ``workdir`` (the
directory the command runs in: it changes what ``cat notes.txt`` reads, so it is *not*
inert) and ``timeout_ms`` / ``yield_time_ms`` / ``max_output_tokens`` (limits),
``justification``, ``with_escalated_permissions`` / ``sandbox_permissions`` (the
approval asked for, not the command) and ``login`` / ``shell`` / ``tty`` (how the
shell starts), which are. Outputs are framed by headers: ``Exit code: N``, ``Wall
time: ...``, ``Output:`` (0.4x-0.5x); ``Chunk ID: ...``, ``Wall time: ...``, ``Process
exited with code N``, ``Original token count: N``, ``Output:`` (unified exec); a
truncated output adds "Warning: truncated output (original token count: N)" and
"Total output lines: N". Older rollouts (0.36) wrap it as JSON ``{"output": ...,
"metadata": {"exit_code": N}}``, which the importer unwraps. Code mode (0.137+) adds
``exec``, which runs JavaScript calling the other tools and answers "Script completed" or
"Script failed", "Wall time N seconds", ``Output:``: the importer reads its status from
that first line; the calls inside a script are not seen.
"""

from __future__ import annotations

import re

from .base import ClientTable, ToolKind, ToolSpec, register

__all__ = ["CODEX"]

_LIMITS = frozenset(
    {
        "timeout",
        "timeout_ms",
        "yield_time_ms",
        "max_output_tokens",
        "justification",
        "with_escalated_permissions",
        "sandbox_permissions",
        "login",
        "shell",
        "tty",
    }
)

_TOOLS = (
    ToolSpec("shell", ToolKind.SHELL, command="command", inert=_LIMITS),
    ToolSpec("local_shell", ToolKind.SHELL, command="command", inert=_LIMITS),
    ToolSpec("container.exec", ToolKind.SHELL, command="command", inert=_LIMITS),
    ToolSpec("shell_command", ToolKind.SHELL, command="command", inert=_LIMITS),
    ToolSpec("exec_command", ToolKind.SHELL, command="cmd", inert=_LIMITS),
    ToolSpec("write_stdin", ToolKind.SHELL_INPUT, inert=_LIMITS),
    ToolSpec("apply_patch", ToolKind.PATCH),
    ToolSpec("update_plan", ToolKind.PLAN),
    ToolSpec("view_image", ToolKind.READ),
    ToolSpec("web_search", ToolKind.WEB),
    # code mode: a JavaScript script calling the tools (its shell calls are not read one
    # by one); a change to the script is code, never a value to tell
    ToolSpec("exec", ToolKind.OTHER, code="input"),
)


def _re(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in patterns)


CODEX = register(
    ClientTable(
        client="codex",
        tools={t.name: t for t in _TOOLS},
        mcp_names=("codex-mcp-client",),  # Codex 0.171's clientInfo.name
        headers=_re(
            r"^Exit code: -?\d+\s*$",
            r"^Wall time: .*$",
            r"^Chunk ID: .*$",
            r"^Process exited with code -?\d+\s*$",
            r"^Process running with session ID .*$",
            r"^Original token count: \d+\s*$",
            r"^Output:\s*$",
            r"^Warning: truncated output \(original token count: \d+\)\s*$",
            r"^Total output lines: \d+\s*$",
            r"^Script (completed|failed)\s*$",  # code mode's exec
            r"^Wall time [\d.]+ seconds\s*$",
        ),
        cancelled=_re(r"^aborted by user", r"^Cancelled: parallel tool call"),
        interrupted=_re(r"^(command )?interrupted", r"^aborted$"),
        denied=_re(
            r"^exec command rejected by user",
            r"^patch rejected by user",
            r"^\w+ failed\b[^\n]{0,200}?\bRejected\(",  # Codex 0.9x+: the user or the policy
            r"(?i)^(failed in sandbox|sandbox (error|denied))",
            r"(?i)^execution error: sandbox",
        ),
        timeout=_re(r"(?i)^command timed out", r"(?i)^(error: )?timed out after"),
        prefixes={"mcp__": ToolSpec("mcp__", ToolKind.MCP)},
    )
)
