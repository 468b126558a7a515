"""Commands that connect agents without their help: hooks (install, uninstall, run) and imports."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..memory import DEFAULT_DB_ENV, Memory
from .main import cli, errors_as_click, json_option, print_json, print_table, with_memory
from .recording import TranscriptFormats

if TYPE_CHECKING:
    from ..hooks.install import Change

_AGENTS = click.Choice(["claude-code", "codex"])


@cli.group()
def hooks() -> None:
    """Record every agent session and inject lessons before every prompt, automatically.

    \b
    Examples:
      agentmem hooks install claude-code                # ~/.claude/settings.json
      agentmem hooks install claude-code --scope project --learn
      agentmem hooks install codex                      # ~/.codex/hooks.json (or notify)
      agentmem hooks uninstall claude-code
    """


def _db_for_hook(db_path: str | None) -> str | None:
    """The library the hook should name: the one given now (--db or $AGENTMEM_DB), if any."""
    return db_path or os.environ.get(DEFAULT_DB_ENV) or None


def _claude_target(scope: str, directory: str | None) -> tuple[Path, Path | None]:
    """The settings file of a scope, and the project it must stay in (None for user)."""
    from ..hooks.install import claude_settings_path

    path = claude_settings_path(scope, directory)
    return path, (path.parent.parent if scope != "user" else None)


def _codex_has_hooks(notify: bool) -> tuple[bool, str]:
    """Whether to install Codex's hooks (else notify), and why, from ``codex --version``."""
    from ..hooks.install import CODEX_HOOKS_SINCE, codex_version

    since = ".".join(map(str, CODEX_HOOKS_SINCE))
    if notify:
        return False, "notify, as asked (--notify)"
    version = codex_version()
    if version is None:
        return (
            True,
            f"codex not found on PATH: hooks, for Codex {since} and later (--notify: older)",
        )
    shown = ".".join(map(str, version))
    if version >= CODEX_HOOKS_SINCE:
        return True, f"Codex {shown}: hooks (UserPromptSubmit, Stop)"
    return False, f"Codex {shown}: notify (hooks need Codex {since} or later)"


def _print_changes(changes: Sequence[Change], as_json: bool) -> None:
    """What an install or uninstall did, per file; ``--json``: one object (one file) or a list."""
    if as_json:
        rows = [
            {
                "path": str(c.path),
                "changed": c.changed,
                "lines": list(c.lines),
                "backup": str(c.backup) if c.backup else None,
            }
            for c in changes
        ]
        print_json(rows[0] if len(rows) == 1 else rows)
        return
    for change in changes:
        click.echo(f"{change.path}:")
        for line in change.lines:
            click.echo(f"  {line}")
        if change.changed and change.backup is not None and change.backup.exists():
            click.echo(f"  backup of the file as it was: {change.backup}")


@hooks.command()
@click.argument("agent", type=_AGENTS)
@click.option(
    "--scope",
    type=click.Choice(["user", "project", "local"]),
    default="user",
    show_default=True,
    help="Claude Code: ~/.claude/settings.json (user), .claude/settings.json of the project "
    "(project) or .claude/settings.local.json (local, not committed).",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False),
    help="The project for --scope project/local (default: the git root of this folder).",
)
@click.option(
    "--learn", is_flag=True, help="After a session with new turns, learn in the background."
)
@click.option("--no-model", is_flag=True, help="With --learn: learn from the data only.")
@click.option(
    "--notify",
    is_flag=True,
    help="Codex: set notify in config.toml (recording only) even where Codex has hooks.",
)
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False),
    envvar=DEFAULT_DB_ENV,
    help="The library the hooks use (default: agentmem's default library).",
)
@json_option
def install(
    agent: str,
    scope: str,
    directory: str | None,
    learn: bool,
    no_model: bool,
    notify: bool,
    db_path: str | None,
    as_json: bool,
) -> None:
    """Install agentmem's hooks for AGENT (claude-code or codex).

    Claude Code: adds a UserPromptSubmit hook (the lessons for each prompt, in
    the project of its folder, as additionalContext) and a Stop hook (imports
    the session's new turns) to settings.json. Everything else in the file
    stays; a backup of it is written beside it (settings.json.agentmem-backup);
    running it again changes nothing.

    Codex 0.124 and later (found with 'codex --version'): the same two hooks
    in ~/.codex/hooks.json ($CODEX_HOME), config.toml untouched. Codex runs a
    new hook only once you trust it: open /hooks in Codex once (codex exec:
    --dangerously-bypass-hook-trust). Older Codex, or --notify: sets notify in
    config.toml, which imports each turn (lessons then come through 'agentmem
    mcp'; see docs/agents.md).

    The hooks run '<this python> -m agentmem hooks run AGENT': the same
    agentmem, whether or not its environment is on the agent's PATH.

    \b
    Examples:
      agentmem hooks install claude-code
      agentmem hooks install claude-code --scope project --learn
      agentmem hooks install codex --db ~/agentmem.db
    """
    from ..hooks.install import (
        codex_config_path,
        codex_hooks_path,
        hook_argv,
        hook_command,
        install_claude_code,
        install_codex,
        install_codex_hooks,
    )

    if no_model and not learn:
        raise click.UsageError("--no-model goes with --learn")
    if agent == "codex" and scope != "user":
        raise click.UsageError("Codex has one config.toml: --scope is for claude-code")
    if notify and agent != "codex":
        raise click.UsageError("--notify is for codex")
    db = _db_for_hook(db_path)
    command = hook_command(agent, db=db, learn=learn, no_model=no_model)
    codex_hooks = False
    with errors_as_click():
        if agent == "claude-code":
            path, within = _claude_target(scope, directory)
            changes = [install_claude_code(path, command, within=within)]
        else:
            codex_hooks, why = _codex_has_hooks(notify)
            if not as_json:
                click.echo(why)
            if codex_hooks:
                changes = install_codex_hooks(codex_hooks_path(), codex_config_path(), command)
            else:
                argv = hook_argv(agent, db=db, learn=learn, no_model=no_model)
                changes = [install_codex(codex_config_path(), argv)]
    _print_changes(changes, as_json)
    if codex_hooks and changes[0].changed and not as_json:
        click.echo(
            "Codex runs a new hook only once you trust it: start codex and open /hooks "
            "to trust agentmem's two hooks (codex exec: --dangerously-bypass-hook-trust)."
        )


@hooks.command()
@click.argument("agent", type=_AGENTS)
@click.option("--scope", type=click.Choice(["user", "project", "local"]), default="user")
@click.option("--dir", "directory", type=click.Path(file_okay=False))
@json_option
def uninstall(agent: str, scope: str, directory: str | None, as_json: bool) -> None:
    """Remove agentmem's hooks for AGENT, and only those.

    When nothing else in the file changed since the install, the file is
    restored byte for byte from its backup.

    \b
    Examples:
      agentmem hooks uninstall claude-code
      agentmem hooks uninstall claude-code --scope project
      agentmem hooks uninstall codex
    """
    from ..hooks.install import (
        codex_config_path,
        codex_hooks_path,
        uninstall_claude_code,
        uninstall_codex,
    )

    with errors_as_click():
        if agent == "claude-code":
            path, within = _claude_target(scope, directory)
            changes = [uninstall_claude_code(path, within=within)]
        else:
            changes = [
                uninstall_claude_code(codex_hooks_path(), agent="codex"),
                uninstall_codex(codex_config_path()),
            ]
    _print_changes(changes, as_json)


@hooks.command(context_settings={"ignore_unknown_options": True})
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def run(argv: tuple[str, ...]) -> None:
    """What an agent's hook runs: agentmem hooks run claude-code|codex [--db F] [--learn].

    Claude Code and Codex 0.124+ pass their hook input as JSON on standard
    input; Codex's notify (older Codex) passes its notification as the last
    argument. Always exits 0: an error is one
    line on standard error and the details in ~/.local/state/agentmem/hooks.log.
    Standard output carries only the context for a UserPromptSubmit.

    \b
    Example:
      echo '{"hook_event_name": "UserPromptSubmit", "prompt": "fix the build",
             "cwd": "'$PWD'"}' | agentmem hooks run claude-code
    """
    from ..hooks.run import run_main

    sys.exit(run_main(list(argv)))


@cli.command()
@click.option("--source", type=TranscriptFormats(), help="Only this agent.")
@click.option("--limit", "-n", type=click.IntRange(1, 100000), default=20, show_default=True)
@json_option
@with_memory
def imports(mem: Memory, source: str | None, limit: int, as_json: bool) -> None:
    """The latest turns imported from agent transcripts, with their trajectory ids.

    Use the id with 'agentmem show' and 'agentmem feedback'.

    \b
    Examples:
      agentmem imports
      agentmem imports --source claude-code -n 5 --json
    """
    rows = mem.recent_imports(limit=limit, source=source)
    if as_json:
        print_json(rows)
        return
    print_table(
        ["trajectory", "source", "status", "steps", "project", "task"],
        [
            [
                r["trajectory_id"] or "-",
                r["source"],
                r["status"],
                r["step_count"],
                r["project"] or "-",
                (r["task"] or r["note"] or "").replace("\n", " "),
            ]
            for r in rows
        ],
    )
