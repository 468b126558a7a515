"""Commands for keeping a library healthy: check, backup, restore."""

from __future__ import annotations

from pathlib import Path

import click

from ..backup import BEFORE_RESTORE_SUFFIX, backup_library, restore_library
from ..check import CheckReport, check_path
from ..memory import default_db_path
from .main import cli, db_option, errors_as_click, json_option, print_json


def _library_path(db_path: str | None) -> Path:
    return Path(db_path) if db_path else default_db_path()


def _print_report(report: CheckReport) -> None:
    for p in report.problems:
        click.echo(str(p))
    if report.ok:
        n = len(report.warnings)
        warned = f" ({n} warning{'s' if n != 1 else ''})" if n else ""
        click.echo(f"ok: {report.summary_line()}{warned}")
    else:
        n = len(report.errors)
        click.echo(f"{n} problem{'s' if n != 1 else ''} in {report.path}", err=True)


@cli.command()
@json_option
@db_option
def check(db_path: str | None, as_json: bool) -> None:
    """Verify a library file and say in words what is wrong with it.

    Checks SQLite's integrity and foreign keys, the schema version (a file
    from a newer agentmem is an error; an older one is a warning, upgraded
    when any other command opens it), that the vector index matches the live
    experiences, that replaying the operations journal gives exactly the
    experiences the file holds, the sessions' bookkeeping, and that every
    trajectory's steps, step count and success rate agree. A learning
    session left 'running' by a killed process is a warning.

    The file is opened read-only: check never creates, upgrades or repairs
    anything. Exit status 0 when nothing is wrong (warnings allowed), 1 when
    something is.

    \b
    Examples:
      agentmem check
      agentmem check --db backup.db --json
      agentmem check || agentmem restore last-good.db
    """
    report = check_path(_library_path(db_path))
    if as_json:
        print_json(report.as_dict())
    else:
        _print_report(report)
    if not report.ok:
        raise SystemExit(1)


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@db_option
def backup(db_path: str | None, file: str, force: bool) -> None:
    """Copy the library to FILE, consistently, even while agents write to it.

    Uses SQLite's online backup API: the copy is one snapshot of the library,
    a single self-contained file (no -wal beside it) readable by its owner
    only (0600). Refuses to replace an existing FILE unless --force. The copy
    is then checked as `agentmem check` would, and any problem is reported
    (the copy is kept: it is what the library holds).

    \b
    Examples:
      agentmem backup ~/backups/agentmem-$(date +%F).db
      agentmem backup --db agent.db agent-copy.db --force
    """
    src = _library_path(db_path)
    with errors_as_click():
        result = backup_library(src, file, force=force)
    click.echo(f"backed up {src} to {result.path} ({result.bytes:,} bytes)")
    if result.report is not None and not result.report.ok:
        for p in result.report.errors:
            click.echo(str(p))
        click.echo(
            f"the copy has the problems above, like the library: run `agentmem check --db {src}`",
            err=True,
        )


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False, exists=True))
@click.option(
    "--force", is_flag=True, help=f"Replace an existing <db>{BEFORE_RESTORE_SUFFIX} file."
)
@db_option
def restore(db_path: str | None, file: str, force: bool) -> None:
    """Replace the library (--db) with the backup FILE.

    FILE is checked first (as `agentmem check` would) and refused if anything
    is wrong with it. The current library is kept as <db>.before-restore; if
    that file already exists, restore refuses unless --force (which replaces
    it). Stop the agents that write to the library before restoring: what
    they write meanwhile is lost. A backup from an older agentmem is upgraded
    the next time the library is opened.

    \b
    Examples:
      agentmem restore ~/backups/agentmem-2025-01-31.db
      agentmem restore --db agent.db agent-copy.db --force
    """
    target = _library_path(db_path)
    with errors_as_click():
        result = restore_library(file, target, force=force)
    click.echo(f"restored {file} into {result.path} ({result.bytes:,} bytes)")
    if result.previous:
        click.echo(f"the library as it was is kept in {result.previous}")
    if result.report is not None and not result.report.ok:
        for p in result.report.problems:
            click.echo(str(p))
        raise SystemExit(1)
