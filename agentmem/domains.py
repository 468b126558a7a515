"""Tool domains: the registry T partitioned into domains D (fs, shell, search, ...).

A tool's domain comes from, in order: the library's own mapping (stored in the
file, table ``tool_domains``), an exact built-in name, a built-in prefix or
keyword rule, and finally :data:`DEFAULT_DOMAIN`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["BUILTIN_TOOLS", "DEFAULT_DOMAIN", "domain_for", "valid_domain"]

#: Where a tool goes when nothing else says: a clear name, never an error.
DEFAULT_DOMAIN = "general"

#: Exact tool names of common agents (Claude Code, Codex, OpenHands, MCP servers, tau-bench).
BUILTIN_TOOLS: Mapping[str, str] = {
    # file system
    **dict.fromkeys(
        "read read_file write write_file edit edit_file multiedit str_replace_editor "
        "str_replace view ls list_dir list_directory glob cat cp mv rm mkdir rmdir touch cd "
        "pwd find tree du diff sort wc head tail move_file copy_file delete_file "
        "create_directory get_file_info file_search notebookedit".split(),
        "fs",
    ),
    # shell
    **dict.fromkeys(
        "bash shell sh zsh run_command execute_command exec terminal run_terminal_cmd "
        "run_shell_command killshell bashoutput python execute_bash echo".split(),
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
_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), d)
    for p, d in (
        (r"^(kubectl|k8s|kube|helm)[_\-.]|kubernetes|_k8s\b", "k8s"),
        (r"^git[_\-.]|^github[_\-.]|^gh[_\-.]", "git"),
        (r"^(mcp__)?(filesystem|fs)[_\-.]|file|directory|folder", "fs"),
        (r"search|grep|query", "search"),
        (r"^(shell|bash|terminal|exec|run)[_\-.]|command", "shell"),
        (r"http|fetch|browser|url|web", "web"),
        (r"reservation|flight|airport", "airline"),
    )
)

_DOMAIN_RE = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


def valid_domain(name: str) -> bool:
    """A domain name is short, lower-case letters, digits, ``_``, ``.`` and ``-``."""
    return bool(_DOMAIN_RE.fullmatch(name))


def domain_for(tool: str, overrides: Mapping[str, str] | None = None) -> str:
    """The domain of ``tool``: the library's override, a built-in name or rule, or ``general``."""
    if overrides and tool in overrides:
        return overrides[tool]
    key = tool.strip().lower()
    if key in BUILTIN_TOOLS:
        return BUILTIN_TOOLS[key]
    if key.startswith("mcp__"):  # Claude Code names MCP tools mcp__server__tool
        parts = key.split("__")
        if len(parts) >= 3 and parts[2] in BUILTIN_TOOLS:
            return BUILTIN_TOOLS[parts[2]]
    for pattern, domain in _RULES:
        if pattern.search(key):
            return domain
    return DEFAULT_DOMAIN
