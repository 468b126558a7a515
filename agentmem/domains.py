"""Tool domains: the registry T partitioned into domains D (fs, shell, search, ...).

A tool's domain comes from, in order: the library's own mapping (stored in the
file, table ``tool_domains``), an exact built-in name, an MCP tool's server
(``mcp__server__tool``), a built-in prefix or keyword rule, and finally
:data:`DEFAULT_DOMAIN`.

A *step* of a shell tool (Claude Code's ``Bash``, Codex's ``shell`` and
``exec_command``, ...) gets the domain of the command it runs
(:func:`step_domain`, the command read by :mod:`agentmem.agents.shell`): ``git push``
is a ``git`` step, ``kubectl apply`` a ``k8s`` one, ``pytest`` a ``test`` one, so that
a lesson about ``git push`` reaches git tasks and not every shell task.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the prompt hook imports this module: the shell reader only when used
    from .agents.shell import Command

__all__ = [
    "BUILTIN_TOOLS",
    "DEFAULT_DOMAIN",
    "MCP_SERVERS",
    "command_domain",
    "domain_for",
    "shell_command",
    "step_domain",
    "valid_domain",
]

#: Where a tool goes when nothing else says: a clear name, never an error.
DEFAULT_DOMAIN = "general"

#: Exact tool names of common agents (Claude Code, Codex, OpenHands, MCP servers, tau-bench).
BUILTIN_TOOLS: Mapping[str, str] = {
    # file system
    **dict.fromkeys(
        "read read_file write write_file edit edit_file multiedit str_replace_editor "
        "str_replace view ls list_dir list_directory glob cat cp mv rm mkdir rmdir touch cd "
        "pwd find tree du diff sort wc head tail move_file copy_file delete_file "
        "create_directory get_file_info file_search notebookedit notebookread apply_patch "
        "view_image".split(),
        "fs",
    ),
    # shell
    **dict.fromkeys(
        "bash shell sh zsh run_command execute_command exec terminal run_terminal_cmd "
        "run_shell_command killshell bashoutput python execute_bash echo local_shell "
        "shell_command exec_command unified_exec write_stdin".split(),
        "shell",
    ),
    # search
    **dict.fromkeys(
        "grep rg ripgrep search search_code codebase_search grep_search web_search "
        "search_web websearch semantic_search".split(),
        "search",
    ),
    # web
    **dict.fromkeys(
        "webfetch fetch fetch_url http_get http_request browse curl wget".split(), "web"
    ),
    # git
    **dict.fromkeys(
        "git git_status git_diff git_commit git_log git_add git_push git_pull git_checkout "
        "git_branch create_pull_request gh".split(),
        "git",
    ),
    # kubernetes
    **dict.fromkeys("kubectl helm kubectl_get kubectl_apply kubectl_logs".split(), "k8s"),
    # coding agents' own bookkeeping: plans and to-do lists, sub-agents
    **dict.fromkeys("todowrite todoread exitplanmode update_plan".split(), "plan"),
    **dict.fromkeys("task agent".split(), "agent"),
    # airline (tau-bench)
    **dict.fromkeys(
        "book_reservation cancel_reservation get_reservation_details get_user_details "
        "list_all_airports search_direct_flight search_onestop_flight send_certificate "
        "update_reservation_baggages update_reservation_flights "
        "update_reservation_passengers transfer_to_human_agents think calculate".split(),
        "airline",
    ),
}

# (pattern on the lower-cased tool name, domain), tried in order.
_RULE_PATTERNS = (
    (r"^(kubectl|k8s|kube|helm)[_\-.]|kubernetes|_k8s\b", "k8s"),
    (r"^git[_\-.]|^github[_\-.]|^gh[_\-.]", "git"),
    (r"^(mcp__)?(filesystem|fs)[_\-.]|file|directory|folder", "fs"),
    (r"search|grep|query", "search"),
    (r"^(shell|bash|terminal|exec|run)[_\-.]|command", "shell"),
    (r"http|fetch|browser|url|web", "web"),
    (r"reservation|flight|airport", "airline"),
)


@functools.cache
def _rules() -> tuple[tuple[re.Pattern[str], str], ...]:
    """:data:`_RULE_PATTERNS` compiled, on first use (the prompt hook imports this module
    and seldom needs them: each compile costs it about 0.1 ms)."""
    return tuple((re.compile(p), d) for p, d in _RULE_PATTERNS)


_DOMAIN = r"[a-z0-9][a-z0-9_.-]{0,63}"  # compiled on first use, and kept, by re's cache


def valid_domain(name: str) -> bool:
    """A domain name is short, lower-case letters, digits, ``_``, ``.`` and ``-``."""
    return bool(re.fullmatch(_DOMAIN, name))


#: MCP servers whose tools belong to an existing domain; any other server is its own domain.
MCP_SERVERS: Mapping[str, str] = {
    **dict.fromkeys("github gitlab git gitea bitbucket".split(), "git"),
    **dict.fromkeys("filesystem fs files".split(), "fs"),
    **dict.fromkeys("kubernetes k8s kubectl helm".split(), "k8s"),
    **dict.fromkeys("docker podman".split(), "docker"),
    **dict.fromkeys("playwright puppeteer browser fetch chrome".split(), "web"),
    **dict.fromkeys("postgres postgresql sqlite mysql supabase".split(), "db"),
}


def _mcp_domain(key: str) -> str | None:
    """The domain of ``mcp__server__tool`` (lower-cased): by its server."""
    parts = key.split("__")
    if len(parts) < 3 or not parts[1]:
        return None
    server = parts[1]
    if server in MCP_SERVERS:
        return MCP_SERVERS[server]
    name = re.sub(r"[^a-z0-9_.-]+", "-", server).strip("-_.")[:64]
    return name if valid_domain(name) else None


def domain_for(tool: str, overrides: Mapping[str, str] | None = None) -> str:
    """The domain of ``tool``: the library's override, a built-in name, an MCP tool's
    server, a built-in rule, or ``general``."""
    if overrides and tool in overrides:
        return overrides[tool]
    key = tool.strip().lower()
    if key in BUILTIN_TOOLS:
        return BUILTIN_TOOLS[key]
    if key.startswith("mcp__"):  # Claude Code names MCP tools mcp__server__tool
        by_server = _mcp_domain(key)
        if by_server is not None:
            return by_server
    for pattern, domain in _rules():
        if pattern.search(key):
            return domain
    return DEFAULT_DOMAIN


# -- shell steps: the domain of the command -------------------------------------------

#: The domain of what a host's subcommand does (``cargo test`` is a test step), by the
#: role's name in :class:`agentmem.agents.programs.Role`.
_ROLE_DOMAINS: Mapping[str, str] = {
    "test": "test",
    "build": "build",
    "lint": "lint",
    "packages": "packages",
    "run": "build",
}
_MAX_COMMAND = 4000


def shell_command(params: Mapping[str, Any]) -> str:
    """The command line a shell step ran, from its ``command`` (text or argv), ``cmd``, ...

    An argv such as ``["bash", "-lc", "git status"]`` gives the script, ``git status``.
    """
    for key in ("command", "cmd", "script", "commandLine", "command_line"):
        value = params.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, Sequence) and value and all(isinstance(v, str) for v in value):
            from .agents.shell import unwrap_argv

            return unwrap_argv(list(value))
    return ""


@functools.cache
def _programs() -> Any:
    """:mod:`agentmem.agents.programs`, imported on first use (the prompt hook imports this
    module and seldom needs it), then at the cost of a call, not of an import statement."""
    from .agents import programs

    return programs


def _domain(c: Command, depth: int) -> str | None:
    """The domain of one command, from the table of programs (:mod:`agentmem.agents.programs`):
    its program's, refined by what a host's subcommand or a build tool's target does."""
    programs = _programs()
    Role = programs.Role

    p = programs.get(c.program)
    if p is None or Role.SCENE in p.roles:
        return None
    if Role.SHELL in p.roles and len(c.args) >= 2 and re.fullmatch(r"-[a-z]*c", c.args[0]):
        return command_domain(c.args[1], _depth=depth + 1) if depth < 3 else None
    if p.domain is None:
        return None
    first = c.subcommand or next(iter(c.operands), None)
    if Role.TARGETS in p.roles:  # they take targets, not subcommands
        return "test" if first in ("test", "tests", "check") else p.domain
    if Role.HOST in p.roles:
        roles = {r.value for r in programs.sub_roles(c.program, first)}
        return next((d for r, d in _ROLE_DOMAINS.items() if r in roles), p.domain)
    return p.domain


@functools.cache
def _shell() -> Any:
    """:mod:`agentmem.agents.shell`, imported on first use (see :func:`_programs`)."""
    from .agents import shell

    return shell


def command_domain(command: str, *, _depth: int = 0) -> str | None:
    """The domain of a shell command line, or None when nothing in it is known.

    The first simple command that names a known program decides, preferring one
    that is not a plain file or search command: ``cd repo && git push`` is ``git``,
    ``cat log | grep ERROR`` is ``fs``, ``npm test`` is ``test``, ``npm install``
    is ``packages``, ``kubectl apply -f x.yaml`` is ``k8s``.
    """
    shell = _shell()
    script = shell.parse(command[:_MAX_COMMAND])
    cmds = script.commands if script.parsed else shell.loose_commands(command[:_MAX_COMMAND])
    found = [d for d in (_domain(c, _depth) for c in cmds) if d]
    if not found:
        return None
    return next((d for d in found if d not in ("fs", "search")), found[0])


def step_domain(
    tool: str, params: Mapping[str, Any], overrides: Mapping[str, str] | None = None
) -> str:
    """The domain of one step: the tool's (:func:`domain_for`), or for a shell tool
    that the library does not map itself, the domain of the command it ran."""
    domain = domain_for(tool, overrides)
    if domain != "shell" or (overrides and tool in overrides):
        return domain
    command = shell_command(params)
    return (command_domain(command) or domain) if command else domain
