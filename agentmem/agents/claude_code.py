"""Claude Code's tools (1.0 to 2.1), as :mod:`agentmem.importers.claude_code` records them.

``Bash`` takes ``command`` (free text) and ``description`` (the few words Claude writes
for the user on every call: shown, never run), ``timeout`` (a limit in ms: whether a long
command is killed, not what it does), ``run_in_background`` (how the output comes back)
and ``dangerouslyDisableSandbox`` (a permission, not the command). A failed command's
result starts ``Exit code N``; a call cancelled because a parallel call errored reads
``<tool_use_error>Sibling tool call errored</tool_use_error>`` (2.1) or
``Cancelled: parallel tool call ... errored`` (1.0); a refusal starts "The user doesn't
want to proceed with this tool use" or "Permission to use ... has been denied".
On Windows, 2.1 adds ``PowerShell`` (``command``, ``description``, ``timeout``), a shell
whose result is framed as Bash's.
Edit, MultiEdit and Write refuse a file they have not read ("File has not been read
yet") or that changed since it was read ("File has been modified since read"): rules of
the tool, a lesson for every project once two projects show it.
"""

from __future__ import annotations

import re

from .base import ClientTable, ToolKind, ToolSpec, register

__all__ = ["CLAUDE_CODE"]

_EDIT_CONTENT = (
    "String to replace not found",
    "old_string and new_string are exactly the same",
    "No changes to make",
)

#: Claude Code refuses to change a file it has not read in this session, or one that
#: changed on disk since it was read (a formatter, a linter, the user).
_READ_FIRST = (
    ("has not been read yet", ToolKind.READ),
    ("has been modified since read", ToolKind.READ),
)

#: Claude Code checks its own settings file after an edit and refuses a key its schema
#: does not know ("Unrecognized field: hasCompletedOnboarding").
_SETTINGS = (("settings.json validation failed", "field"),)

_TOOLS = (
    ToolSpec(
        "Bash",
        ToolKind.SHELL,
        command="command",
        inert=frozenset(
            {"description", "timeout", "run_in_background", "dangerouslyDisableSandbox"}
        ),
        keeps_cwd=True,  # "the working directory persists between commands"
        always_wrapped=True,
    ),
    # Claude Code 2.1 on Windows: PowerShell beside Git Bash's Bash, its result framed as
    # Bash's ("Exit code N"); whether it keeps its folder between calls is not known here
    ToolSpec(
        "PowerShell",
        ToolKind.SHELL,
        command="command",
        inert=frozenset({"description", "timeout", "run_in_background"}),
    ),
    ToolSpec("BashOutput", ToolKind.SHELL_INPUT, inert=frozenset({"filter"})),
    ToolSpec("KillBash", ToolKind.SHELL_INPUT),
    ToolSpec("KillShell", ToolKind.SHELL_INPUT),
    ToolSpec("TaskOutput", ToolKind.SHELL_INPUT, inert=frozenset({"block", "timeout"})),
    ToolSpec("TaskStop", ToolKind.SHELL_INPUT),
    ToolSpec(
        "Read",
        ToolKind.READ,
        path="file_path",
        instead=(
            ("EISDIR", "it takes a file: list a folder with Glob or ls"),
            # two failures, two rules: "File content (28483 tokens) exceeds maximum allowed
            # tokens (25000)" is lifted by reading a part (offset and limit); "File content
            # (906KB) exceeds maximum allowed size (256KB)" may refuse a call that already
            # had offset and limit, so its way out names neither
            (
                "exceeds maximum allowed tokens",
                "read the file in parts: pass offset and limit, or Grep it",
            ),
            # the same refusal of a Read that passed limit already: a few lines are too long
            # (a transcript's .jsonl records, a saved tool result of one JSON line)
            (
                "exceeds maximum allowed tokens",
                "even in parts its lines are too long: Grep it, or cut its lines in the shell "
                "(cut -c)",
            ),
            (
                "exceeds maximum allowed size",
                "Grep it, or read a part of it in the shell (head, tail, sed -n)",
            ),
        ),
        refuses=(("cannot read binary files", "binary"),),
    ),
    ToolSpec("NotebookRead", ToolKind.READ),
    ToolSpec("LS", ToolKind.READ),
    ToolSpec("Write", ToolKind.WRITE, needs=_READ_FIRST, path="file_path", refuses=_SETTINGS),
    ToolSpec(
        "Edit",
        ToolKind.EDIT,
        content_errors=_EDIT_CONTENT,
        needs=_READ_FIRST,
        path="file_path",
        refuses=_SETTINGS,
    ),
    ToolSpec(
        "MultiEdit",
        ToolKind.EDIT,
        content_errors=_EDIT_CONTENT,
        needs=_READ_FIRST,
        path="file_path",
        refuses=_SETTINGS,
    ),
    ToolSpec("NotebookEdit", ToolKind.EDIT, needs=_READ_FIRST, path="notebook_path"),
    ToolSpec("Glob", ToolKind.SEARCH),
    ToolSpec("Grep", ToolKind.SEARCH),
    ToolSpec("Task", ToolKind.AGENT, inert=frozenset({"description"})),
    ToolSpec("Agent", ToolKind.AGENT, inert=frozenset({"description"})),
    ToolSpec("Skill", ToolKind.AGENT),
    ToolSpec("TodoWrite", ToolKind.PLAN),
    ToolSpec("TodoRead", ToolKind.PLAN),
    ToolSpec("EnterPlanMode", ToolKind.PLAN),
    ToolSpec("ExitPlanMode", ToolKind.PLAN),
    ToolSpec("AskUserQuestion", ToolKind.PLAN),
    # "Invalid URL": WebFetch will not fetch a local address (http://localhost:3001)
    ToolSpec("WebFetch", ToolKind.WEB, path="url", refuses=(("Invalid URL", "local"),)),
    ToolSpec("WebSearch", ToolKind.WEB),
)


def _re(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in patterns)


CLAUDE_CODE = register(
    ClientTable(
        client="claude-code",
        tools={t.name: t for t in _TOOLS},
        mcp_names=("claude-code",),  # Claude Code 2.1's clientInfo.name
        headers=_re(r"^Exit code -?\d+\s*$"),
        cancelled=_re(
            r"^(<tool_use_error>)?\s*Sibling tool call errored",
            r"^(<tool_use_error>)?\s*Cancelled: parallel tool call",
        ),
        interrupted=_re(r"^\[Request interrupted by user", r"^Interrupted by user"),
        denied=_re(
            r"^The user doesn't want to (proceed with|take) this",
            r"^Permission to use \S+ .{0,200}has been denied",
            r"^(<tool_use_error>)?\s*Permission .{0,40}denied",
            r"^This command requires approval",
        ),
        timeout=_re(r"^Command timed out after", r"^(Error: )?Command timed out"),
        prefixes={"mcp__": ToolSpec("mcp__", ToolKind.MCP)},
    )
)
