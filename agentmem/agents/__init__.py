"""What coding agents' tools mean: one declarative table per client, and shell commands read.

Pure values and functions, no SQL: :mod:`.base` holds the table types and the outcome
of a recorded call (did it fail, and was the failure how the agent called it),
:mod:`.claude_code` and :mod:`.codex` one table each, :mod:`.shell` parses command
lines. A new client is one module with one :class:`~.base.ClientTable`, listed in
:data:`.base.CLIENTS` through :func:`.base.register`.
"""

from . import claude_code, codex
from .base import (
    CLIENTS,
    ClientTable,
    Failure,
    Outcome,
    ToolKind,
    ToolSpec,
    client_of_mcp,
    command_params,
    register,
    same_job,
    spec_for,
)
from .outcomes import RunView, command_line, diagnostic, learning_view, outcome, strip_headers
from .shell import Command, Pipeline, Script, parse

__all__ = [
    "CLIENTS",
    "ClientTable",
    "Command",
    "Failure",
    "Outcome",
    "Pipeline",
    "RunView",
    "Script",
    "ToolKind",
    "ToolSpec",
    "claude_code",
    "client_of_mcp",
    "codex",
    "command_line",
    "command_params",
    "diagnostic",
    "is_shell",
    "learning_view",
    "outcome",
    "parse",
    "register",
    "same_job",
    "spec_for",
    "strip_headers",
]


def is_shell(tool: str) -> bool:
    """Whether ``tool`` is a client's shell tool (its calls go through the shell rules)."""
    found = spec_for(tool)
    return found is not None and found[1].kind in (ToolKind.SHELL, ToolKind.SHELL_INPUT)
