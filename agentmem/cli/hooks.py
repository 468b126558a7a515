"""Commands that connect agents without their help: hooks (install, uninstall, run) and imports."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..memory import DEFAULT_DB_ENV, Memory
from .main import cli, errors_as_click, json_option, print_json, print_table, with_memory
from .recording import TranscriptFormats

_AGENTS = click.Choice(["claude-code", "codex"])


@cli.group()
def hooks() -> None:
    """Record every agent session and inject lessons before every prompt, automatically.

    \b
    Examples:
      agentmem hooks install claude-code                # ~/.claude/settings.json
      agentmem hooks install claude-code --scope project --learn
      agentmem hooks install codex                      # ~/.codex/config.toml notify
      agentmem hooks uninstall claude-code
    """


def _db_for_hook(db_path: str | None) -> str | None:
    """The library the hook should name: the one given now (--db or $AGENTMEM_DB), if any."""
    return db_path or os.environ.get(DEFAULT_DB_ENV) or None


def _target(agent: str, scope: str, directory: str | None) -> Path:
    from ..hooks.install import claude_settings_path, codex_config_path

    return claude_settings_path(scope, directory) if agent == "claude-code" else codex_config_path()


def _print_change(change: object, as_json: bool) -> None:
    from ..hooks.install import Change

    assert isinstance(change, Change)
    if as_json:
        print_json(
            {
                "path": str(change.path),
                "changed": change.changed,
                "lines": list(change.lines),
                "backup": str(change.backup) if change.backup else None,
            }
        )
        return
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
    db_path: str | None,
    as_json: bool,
) -> None:
    """Install agentmem's hooks for AGENT (claude-code or codex).

    Claude Code: adds a UserPromptSubmit hook (the lessons for each prompt, in
    the project of its folder, as additionalContext) and a Stop hook (imports
    the session's new turns) to settings.json. Everything else in the file
    stays; a backup of it is written beside it (settings.json.agentmem-backup);
    running it again changes nothing.

    Codex: sets notify in ~/.codex/config.toml, which Codex runs after each
    turn, to import the turn. Codex has no hook that adds context to a prompt:
    use 'agentmem mcp' for that (see docs/agents.md).

    \b
    Examples:
      agentmem hooks install claude-code
      agentmem hooks install claude-code --scope project --learn
      agentmem hooks install codex --db ~/agentmem.db
    """
    from ..hooks.install import hook_argv, hook_command, install_claude_code, install_codex

    if no_model and not learn:
        raise click.UsageError("--no-model goes with --learn")
    if agent == "codex" and scope != "user":
        raise click.UsageError("Codex has one config.toml: --scope is for claude-code")
    db = _db_for_hook(db_path)
    with errors_as_click():
        path = _target(agent, scope, directory)
        if agent == "claude-code":
            cmd = hook_command(agent, db=db, learn=learn, no_model=no_model)
            change = install_claude_code(path, cmd)
        else:
            change = install_codex(path, hook_argv(agent, db=db, learn=learn, no_model=no_model))
    _print_change(change, as_json)


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
    from ..hooks.install import uninstall_claude_code, uninstall_codex

    with errors_as_click():
        path = _target(agent, scope, directory)
        change = uninstall_claude_code(path) if agent == "claude-code" else uninstall_codex(path)
    _print_change(change, as_json)


@hooks.command(context_settings={"ignore_unknown_options": True})
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def run(argv: tuple[str, ...]) -> None:
    """What an agent's hook runs: agentmem hooks run claude-code|codex [--db F] [--learn].

    Claude Code passes its hook input as JSON on standard input; Codex passes
    its notification as the last argument. Always exits 0: an error is one
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
