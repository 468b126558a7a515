"""``agentmem setup``: wire Claude Code and Codex, import their history, learn, say what next."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import click

from ..memory import DEFAULT_DB_ENV, Memory, default_db_path
from .main import cli, errors_as_click, json_option, open_memory, print_json
from .terminal import shown


@attrs.frozen
class Client:
    """A coding agent found on this machine."""

    name: str  # the transcript format: claude-code or codex
    program: str | None
    version: str | None
    history: str  # where its transcripts are
    files: int  # transcript files there

    @property
    def release(self) -> tuple[int, ...] | None:
        """The version as numbers, for comparing."""
        return None if self.version is None else tuple(int(x) for x in self.version.split("."))

    @property
    def found(self) -> bool:
        return self.program is not None or self.files > 0


def _count(folder: Path) -> int:
    n = 0
    if not folder.is_dir():
        return 0
    for _root, _dirs, files in os.walk(folder):
        n += sum(1 for f in files if f.endswith(".jsonl"))
        if n > 100_000:
            break
    return n


def find_clients() -> list[Client]:
    """Claude Code and Codex: their program on PATH, its version, and their history."""
    from ..hooks.install import program_version
    from ..importers.run import default_path

    out = []
    for name, program in (("claude-code", "claude"), ("codex", "codex")):
        exe = shutil.which(program)
        release = program_version(exe)
        version = None if release is None else ".".join(map(str, release))
        history = Path(default_path(name))
        out.append(Client(name, exe, version, str(history), _count(history)))
    return out


def _install(client: Client, db: str | None, dry_run: bool) -> list[str]:
    """Install the client's hooks with learning on; lines saying what changed (or would)."""
    from ..hooks.install import (
        CODEX_HOOKS_SINCE,
        claude_settings_path,
        codex_config_path,
        codex_hooks_path,
        hook_argv,
        hook_command,
        install_claude_code,
        install_codex,
        install_codex_hooks,
    )
    from ..status import hook_sites, plugin_enabled

    if plugin_enabled(client.name):
        return [f"{client.name}: agentmem's plugin brings the hooks: nothing to install"]
    command = hook_command(client.name, db=db, learn=True)
    target = claude_settings_path("user") if client.name == "claude-code" else codex_hooks_path()
    if dry_run:
        site = next((s for s in hook_sites() if s.path == str(target)), None)
        if site is not None and site.installed and site.learning:
            return [f"{target}: hooks installed already, nothing to change"]
        return [f"{target}: would add agentmem's UserPromptSubmit and Stop hooks ({command})"]
    if client.name == "claude-code":
        changes = [install_claude_code(target, command)]
    else:
        if client.release is None or client.release >= CODEX_HOOKS_SINCE:
            changes = install_codex_hooks(target, codex_config_path(), command)
        else:
            changes = [install_codex(codex_config_path(), hook_argv("codex", db=db, learn=True))]
    return [f"{c.path}: {line}" for c in changes for line in c.lines]


@cli.command()
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False),
    envvar=DEFAULT_DB_ENV,
    help=f"The library (default: ${DEFAULT_DB_ENV}, else {default_db_path()}).",
)
@click.option("--dry-run", is_flag=True, help="Show every change; make none.")
@click.option("--no-import", is_flag=True, help="Do not import the history already on disk.")
@click.option(
    "--client",
    "only",
    type=click.Choice(["claude-code", "codex"]),
    multiple=True,
    help="Only this client (repeatable; default: every one found).",
)
@json_option
def setup(
    db_path: str | None, dry_run: bool, no_import: bool, only: tuple[str, ...], as_json: bool
) -> None:
    """Set agentmem up for Claude Code and Codex: the first command to run.

    Finds Claude Code and Codex (on PATH, or their history in ~/.claude and
    ~/.codex), installs their hooks with learning on (each prompt gets the
    lessons that fit; each finished session is imported and learned from),
    imports the sessions already on disk, learns from them, and prints what it
    learned and what happens next. Running it again changes nothing new.
    Lessons are phrased from the data; no model is downloaded or compiled.

    \b
    Examples:
      agentmem setup --dry-run          # what it would do
      agentmem setup
      agentmem setup --client codex --db ~/agentmem.db
    """
    clients = [c for c in find_clients() if (not only or c.name in only)]
    found = [c for c in clients if c.found]
    db = db_path or os.environ.get(DEFAULT_DB_ENV) or None
    library = os.path.expanduser(db) if db else str(default_db_path())
    say = (lambda _m: None) if as_json else click.echo
    result: dict[str, Any] = {
        "library": library,
        "dry_run": dry_run,
        "clients": [attrs.asdict(c) for c in clients],
    }
    for c in clients:
        if c.found:
            say(
                f"{c.name}: {c.program or '(not on PATH)'}"
                f"{' ' + c.version if c.version else ''}; {c.files} session file(s) in {c.history}"
            )
        else:
            say(f"{c.name}: not found")
    if not found:
        say("Neither Claude Code nor Codex was found: install one, then run agentmem setup again.")
        if as_json:
            print_json(result)
        return
    hooks: list[str] = []
    with errors_as_click():
        for c in found:
            hooks += _install(c, db, dry_run)
    result["hooks"] = hooks
    for line in hooks:
        say(f"  {shown(line, newlines=False)}")
    if dry_run:
        todo = sum(c.files for c in found)
        say(
            f"would import up to {todo} session file(s) into {library} "
            f"and learn from them{' (skipped: --no-import)' if no_import else ''}"
        )
        if as_json:
            print_json(result)
        return
    with errors_as_click():
        Path(library).parent.mkdir(parents=True, exist_ok=True)
    with open_memory(library) as mem:
        result["imported"] = {} if no_import else _import_history(mem, found, say, as_json)
        result["learned"] = _learn(mem, say)
        result["lessons"] = len(mem.experiences())
    _next_steps(found, say)
    if as_json:
        print_json(result)


def _import_history(
    mem: Memory, found: list[Client], say: Callable[[str], Any], quiet: bool
) -> dict[str, Any]:
    """Import each client's history, with progress on a terminal."""
    imported: dict[str, Any] = {}
    for c in found:
        if c.files == 0:
            continue
        progress = None
        if sys.stderr.isatty() and not quiet:
            progress = lambda m: click.echo(f"\r{m[:100]:<100}", err=True, nl=False)  # noqa: E731
        report = mem.import_transcripts(c.name, [c.history], progress=progress)
        if progress is not None:
            click.echo("", err=True)
        imported[c.name] = report.as_dict()
        say(f"{c.name}: {report.lines()[0]}")
    return imported


def _learn(mem: Memory, say: Callable[[str], Any]) -> list[str]:
    """One learning session; the lessons it added, said."""
    learned = mem.learn()
    added = [
        a.op.text or "" for a in learned.operations if a.status == "applied" and a.op.kind == "ADD"
    ]
    say(f"learned {len(added)} new lesson(s) from the data:")
    for text in added[:20]:
        say(f"  - {shown(text, newlines=False)}")
    if len(added) > 20:
        say(f"  ... and {len(added) - 20} more (agentmem experiences)")
    return added


def _next_steps(found: list[Client], say: Callable[[str], Any]) -> None:
    say(
        "\nNext: use your agent as usual. Each prompt gets the lessons that fit its project; "
        "each session is imported when it stops and learned from in the background.\n"
        "  agentmem status      is it working, what waits\n"
        "  agentmem log         what each prompt was given, and why\n"
        "  agentmem experiences the lessons (agentmem remove ID to drop one)"
    )
    if "codex" in {c.name for c in found}:
        say(
            "Codex runs a new hook only once you trust it: open /hooks in Codex once "
            "(codex exec: --dangerously-bypass-hook-trust)."
        )
