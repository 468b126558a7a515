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

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "BUILTIN_TOOLS",
    "DEFAULT_DOMAIN",
    "MCP_SERVERS",
    "PROGRAMS",
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
    for pattern, domain in _RULES:
        if pattern.search(key):
            return domain
    return DEFAULT_DOMAIN


# -- shell steps: the domain of the command -------------------------------------------

#: Programs a shell step may run, and their domain. Package managers and build tools
#: that also run tests are refined by their subcommand (see :func:`command_domain`).
PROGRAMS: Mapping[str, str] = {
    **dict.fromkeys("git gh hub git-lfs tig".split(), "git"),
    **dict.fromkeys("kubectl helm kustomize minikube kind k3d k9s oc skaffold".split(), "k8s"),
    **dict.fromkeys("docker docker-compose podman buildah nerdctl".split(), "docker"),
    **dict.fromkeys(
        "npm yarn pnpm bun pip pip3 pipx uv poetry conda mamba gem bundle composer brew "
        "apt apt-get dnf yum apk pacman".split(),
        "packages",
    ),
    **dict.fromkeys(
        "pytest py.test tox nox jest vitest mocha rspec phpunit ctest playwright".split(), "test"
    ),
    **dict.fromkeys(
        "make cmake ninja bazel gradle gradlew mvn mvnw ant tsc webpack vite msbuild meson "
        "cargo go dotnet swift".split(),
        "build",
    ),
    **dict.fromkeys(
        "ruff flake8 pylint mypy pyright eslint prettier black isort shellcheck golangci-lint "
        "rubocop".split(),
        "lint",
    ),
    **dict.fromkeys(
        "ls cat cp mv rm mkdir rmdir touch chmod chown find head tail wc du df tree stat ln "
        "tar zip unzip sed awk diff patch less more file realpath".split(),
        "fs",
    ),
    **dict.fromkeys("grep rg ag ack egrep fgrep fd".split(), "search"),
    **dict.fromkeys("curl wget http httpie".split(), "web"),
    **dict.fromkeys("psql mysql sqlite3 redis-cli mongosh mongo".split(), "db"),
    **dict.fromkeys("aws gcloud gsutil az terraform tofu pulumi".split(), "cloud"),
    **dict.fromkeys("ssh scp rsync".split(), "remote"),
    **dict.fromkeys("systemctl journalctl service".split(), "system"),
}

# Subcommands that make a package manager or build tool run tests, build, lint or install.
_SUBCOMMANDS: Mapping[str, str] = {
    **dict.fromkeys("test t tests nextest".split(), "test"),
    **dict.fromkeys("build check compile run".split(), "build"),
    **dict.fromkeys("lint clippy fmt format vet typecheck".split(), "lint"),
    **dict.fromkeys(
        "install i ci add remove rm uninstall update upgrade sync lock get mod restore".split(),
        "packages",
    ),
}
# Runners that start another program: the domain is that program's.
_RUNNERS = frozenset("npx bunx pnpx uvx pipx".split())
# Words that start a command without being it.
_WRAPPERS = frozenset("sudo env time nohup nice exec command builtin doas stdbuf".split())
# Commands that set the scene and say nothing of the domain.
_NEUTRAL = frozenset(
    "cd pushd popd export set unset source . echo printf true false sleep alias clear wait "
    "exit : read".split()
)
_SHELLS = frozenset("bash sh zsh dash fish".split())
# Build tools that take targets: only a test target makes them a test step.
_TARGET_TOOLS = frozenset("make ninja bazel gradle gradlew mvn mvnw ant meson cmake".split())
_SEPARATORS = frozenset(";; ; && || | |& & ( ) {".split())
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
            argv = list(value)
            if (
                len(argv) >= 3
                and os.path.basename(argv[0]) in _SHELLS
                and argv[1] in ("-c", "-lc", "-ic", "-lic")
            ):
                return argv[2]
            return shlex.join(argv)
    return ""


def _words(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: the words as they stand
        return line.split()


def _segments(command: str) -> list[list[str]]:
    """The simple commands of a command line, each as its words: read by the shell parser
    (:func:`agentmem.agents.shell.parse`: heredoc bodies are not commands, ``$(...)`` is),
    else split at ``&&``, ``|``, ``;``, ... line by line."""
    from .agents.shell import parse

    script = parse(command[:_MAX_COMMAND])
    if script.parsed:  # wrappers (sudo, uv run, npx, python -m, nix-shell --run) peeled off
        return [[c.program, *c.args] for c in script.commands]
    out: list[list[str]] = []
    for line in command[:_MAX_COMMAND].splitlines():
        current: list[str] = []
        for w in _words(line):
            if w in _SEPARATORS or (w and set(w) <= set(";&|()")):
                if current:
                    out.append(current)
                current = []
            else:
                current.append(w)
        if current:
            out.append(current)
    return out


def _program(words: list[str], depth: int = 0) -> str | None:
    """The domain of one simple command (``FOO=1 sudo git push`` -> git), or None."""
    i = 0
    while i < len(words):
        w = words[i]
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w):
            i += 1  # an environment assignment
        elif os.path.basename(w) in _WRAPPERS:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 1  # the wrapper's own options (sudo -u x: good enough)
        elif w == "timeout" and i + 1 < len(words):
            i += 2
        else:
            break
    if i >= len(words):
        return None
    prog = os.path.basename(words[i]).lower()
    rest = words[i + 1 :]
    if prog in _NEUTRAL:
        return None
    if prog in _SHELLS and len(rest) >= 2 and rest[0] in ("-c", "-lc") and depth < 3:
        return command_domain(rest[1], _depth=depth + 1)
    if prog in _RUNNERS or (prog in ("uv", "poetry", "pdm", "hatch") and rest[:1] == ["run"]):
        inner = rest[1:] if prog not in _RUNNERS else rest
        inner = [w for w in inner if not w.startswith("-")]
        return _program(inner, depth + 1) if inner else PROGRAMS.get(prog)
    if re.fullmatch(r"python[0-9.]*|py", prog):
        if rest[:1] == ["-m"] and len(rest) >= 2:
            module = rest[1]
            if module in ("pytest", "unittest", "nose2"):
                return "test"
            if module in ("pip", "venv", "ensurepip"):
                return "packages"
            return PROGRAMS.get(module)
        return None
    domain = PROGRAMS.get(prog)
    if domain in ("packages", "build"):
        sub = next((w for w in rest if not w.startswith("-")), "")
        if prog in ("npm", "yarn", "pnpm", "bun") and sub == "run":
            script = next((w for w in rest[rest.index("run") + 1 :] if not w.startswith("-")), "")
            sub = script.split(":")[0]
        if prog in _TARGET_TOOLS:  # they take targets, not subcommands
            return "test" if sub in ("test", "tests", "check") else domain
        return _SUBCOMMANDS.get(sub, domain)
    return domain


def command_domain(command: str, *, _depth: int = 0) -> str | None:
    """The domain of a shell command line, or None when nothing in it is known.

    The first simple command that names a known program decides, preferring one
    that is not a plain file or search command: ``cd repo && git push`` is ``git``,
    ``cat log | grep ERROR`` is ``fs``, ``npm test`` is ``test``, ``npm install``
    is ``packages``, ``kubectl apply -f x.yaml`` is ``k8s``.
    """
    found = [d for d in (_program(words, _depth) for words in _segments(command)) if d]
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
