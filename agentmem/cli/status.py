"""``agentmem status`` and ``agentmem log``: what the hooks did, and what waits."""

from __future__ import annotations

import os

import click

from ..memory import default_db_path
from .main import (
    LESSON_ID,
    cli,
    db_option,
    errors_as_click,
    json_option,
    open_memory,
    print_json,
)
from .terminal import shown


def _library(db_path: str | None) -> str:
    return os.path.expanduser(db_path) if db_path else str(default_db_path())


@cli.command()
@db_option
@json_option
def status(db_path: str | None, as_json: bool) -> None:
    """What agentmem does on this machine: hooks, library, imports, learning, errors.

    Shows where Claude Code and Codex have agentmem's hooks (and whether they
    learn), when each hook last fired, the library and how many lessons it
    holds, the last import and learning session, the runs still inside their
    120 s correction window and when they are ready, hook errors of the last
    7 days, and the lessons held for a person's review.

    \b
    Examples:
      agentmem status
      agentmem status --json
      agentmem status --db ~/work/agentmem.db
    """
    from ..status import hook_sites
    from ..status import status as gather

    path = _library(db_path)
    if not os.path.exists(path):
        sites = [s.as_dict() for s in hook_sites()]
        if as_json:
            print_json({"library": {"path": path, "exists": False}, "hooks": sites})
            return
        click.echo(f"library: {path} does not exist yet (run `agentmem setup`)")
        _print_hooks(sites)
        return
    with open_memory(path) as mem, errors_as_click():
        st = gather(mem)
    if as_json:
        print_json(st)
        return
    lib = st["library"]
    ro = "" if lib["writable"] else "  NOT WRITABLE: the hooks cannot record"
    click.echo(
        f"library: {shown(lib['path'])}  {lib['lessons']} lessons, {lib['runs']} runs, "
        f"{lib['bytes'] / 1e6:.1f} MB{ro}"
    )
    _print_hooks(st["hooks"])
    fired = st["last_fired"]
    if fired:
        click.echo("last fired: " + ", ".join(f"{k} {v}" for k, v in sorted(fired.items())))
    else:
        click.echo("last fired: never (no hook has run since this agentmem was installed)")
    click.echo(f"last import: {st['last_import'] or 'never'}")
    ll = st["last_learn"]
    click.echo(
        "last learning session: "
        + (
            f"{ll['id']} ({ll['status']}, {ll['finished_at'] or ll['started_at']})"
            if ll
            else "never"
        )
    )
    w = st["waiting"]
    click.echo(
        "waiting: "
        + (
            f"{w['runs']} run(s) in their 120 s correction window, "
            f"ready in {w['ready_in_seconds']} s"
            if w["runs"]
            else "no run"
        )
    )
    held = st["held_for_review"]
    click.echo(f"held for review: {held} lesson(s)" + (" (agentmem review)" if held else ""))
    click.echo(f"model: {st['model']}")
    errors = st["hook_errors_7d"]
    click.echo(f"hook errors (7 days): {errors}")
    if st["last_hook_error"]:
        click.echo(f"  last: {shown(st['last_hook_error'], newlines=False)}")


def _print_hooks(sites: list[dict]) -> None:
    on = [s for s in sites if s["installed"]]
    if not on:
        click.echo("hooks: none installed (run `agentmem setup`)")
        return
    for s in on:
        learn = "records and learns" if s["learning"] else "records only (learn: agentmem learn)"
        lib = f", library {s['library']}" if s["library"] else ""
        click.echo(f"hooks: {s['agent']} in {s['path']}: {', '.join(s['events'])}; {learn}{lib}")


@cli.command(name="log")
@db_option
@click.option(
    "-n",
    "limit",
    type=click.IntRange(1, 10_000),
    default=10,
    show_default=True,
    help="The last N prompts.",
)
@click.option("--project", help="Only prompts in this project (its folder).")
@click.option(
    "--lesson",
    type=LESSON_ID,
    help="Only prompts this lesson was served to, held out of or withheld from "
    "(12, or L12 as the injected text marks it).",
)
@json_option
def log_(
    db_path: str | None, limit: int, project: str | None, lesson: int | None, as_json: bool
) -> None:
    """What each recent prompt was given: lesson ids ([L12], as the injected text marks
    them) and texts, why each fitted, what the holdout kept back and what a serving
    filter withheld.

    Reads the served log beside the library (<library>.served.jsonl); prompts
    themselves are never stored there, only a hash. A prompt given nothing leaves
    no line.

    \b
    Examples:
      agentmem log
      agentmem log -n 50 --project ~/src/app
      agentmem log --lesson L12
      agentmem log --json
    """
    from ..projects import project_of
    from ..serving import marker
    from ..status import prompt_log

    path = _library(db_path)
    if not os.path.exists(path):
        raise click.ClickException(f"no library at {path}")
    where = project_of(project) if project else None
    with open_memory(path) as mem, errors_as_click():
        rows = prompt_log(mem, limit=limit, project=where, lesson=lesson)
    if as_json:
        print_json(rows)
        return
    if not rows:
        click.echo("no prompt has been given a lesson yet")
        return
    for r in rows:
        click.echo(f"{r['at']}  {r['route']}  {shown(r['project'] or '(no project)')}")
        for s in r["served"]:
            text = s["text"] if s["text"] is not None else "(removed since)"
            click.echo(f"  {marker(s['id'])} {shown(text, newlines=False)}")
            if s["why"]:
                click.echo(f"        why: {shown(s['why'], newlines=False)}")
        for t in r["team"]:
            click.echo(f"  (team) {shown(t, newlines=False)}")
        for h in r["held_out"]:
            text = shown(h["text"] or "", newlines=False)
            click.echo(f"  held out by the holdout: {marker(h['id'])} {text}")
        for w in r["withheld"]:
            text = shown(w["text"] or "", newlines=False)
            click.echo(f"  withheld: {marker(w['id'])} {text}")
            click.echo(f"        why: {shown(w['why'], newlines=False)}")
