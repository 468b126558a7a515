"""``agentmem projects``: the projects agentmem knows, and pausing, excluding, forgetting one."""

from __future__ import annotations

import click

from ..memory import Memory
from .main import cli, json_option, print_json, print_table, with_memory


@cli.group(invoke_without_command=True)
@click.pass_context
def projects(ctx: click.Context) -> None:
    """The projects agentmem has runs or lessons of; pause, exclude or forget one.

    A project is a folder (its git root counts). Paused: the hooks neither
    serve lessons in it nor record its sessions until `resume`. Excluded: the
    same, and no import ever records its history. Forget: its runs and the
    lessons served only there are removed (journaled; `agentmem check` stays
    clean).

    \b
    Examples:
      agentmem projects list
      agentmem projects pause ~/src/secret-client
      agentmem projects resume ~/src/secret-client
      agentmem projects exclude ~/src/secret-client
      agentmem projects forget ~/src/old-app
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_)


@projects.command(name="list")
@json_option
@with_memory
def list_(mem: Memory, as_json: bool) -> None:
    """List the projects: runs, last run, lessons served only there, state.

    \b
    Example:
      agentmem projects list --json
    """
    rows = mem.projects()
    if as_json:
        print_json(rows)
        return
    if not rows:
        click.echo("no project yet: runs recorded by the hooks or imports name theirs")
        return
    print_table(
        ["project", "runs", "lessons", "last run", "state"],
        [[r["project"], r["runs"], r["lessons"], r["last_run"], r["state"]] for r in rows],
    )


def _state_command(name: str, state: str | None, doc: str) -> None:
    @projects.command(name=name, help=doc)
    @click.argument("folder", type=click.Path(file_okay=False), default=".")
    @with_memory
    def command(mem: Memory, folder: str) -> None:
        where = mem.set_project_state(folder, state)
        click.echo(f"{where}: {state or 'active'}")


_state_command(
    "pause",
    "paused",
    "Pause FOLDER's project (default: this one): no lessons served, no session recorded.\n\n"
    "\b\nExample:\n  agentmem projects pause ~/src/app",
)
_state_command(
    "exclude",
    "excluded",
    "Exclude FOLDER's project: as paused, and no import ever records its history.\n\n"
    "\b\nExample:\n  agentmem projects exclude ~/src/client",
)
_state_command(
    "resume",
    None,
    "Make FOLDER's project active again (serve and record).\n\n"
    "\b\nExample:\n  agentmem projects resume ~/src/app",
)


@projects.command()
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--yes", is_flag=True, help="Do it without asking.")
@json_option
@with_memory
def forget(mem: Memory, folder: str, yes: bool, as_json: bool) -> None:
    """Remove FOLDER's project: its runs (steps, feedback) and the lessons served only there.

    The lessons are removed in one curation session (undo brings them back);
    the runs are pruned for good.

    \b
    Example:
      agentmem projects forget ~/src/old-app --yes
    """
    if not yes:
        import sys

        if not sys.stdin.isatty():
            raise click.UsageError("say --yes: there is no terminal to confirm on")
        if not click.confirm(f"forget every run and lesson of {folder}?", default=False):
            raise click.Abort()
    done = mem.forget_project(folder)
    if as_json:
        print_json(done)
    else:
        click.echo(
            f"{done['project']}: forgot {done['runs']} run(s) and {done['lessons']} lesson(s)"
        )
