"""The browse command: Datasette over the library, read-only."""

from __future__ import annotations

import click

from ..browse import make_datasette
from .admin import library_path
from .main import cli, db_option, errors_as_click


@cli.command()
@click.option(
    "--port", type=click.IntRange(1, 65535), default=8001, show_default=True, help="TCP port."
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Anything but loopback exposes the whole library: a warning.",
)
@db_option
def browse(db_path: str | None, port: int, host: str) -> None:
    """Look at the library in a web browser (Datasette), read-only.

    Every table and column is described; canned queries show the live lessons
    by domain and where each came from, what a session did, the runs of a
    task group with rewards and advantages, the tools that fail most, and a
    lesson's journal and source runs. The file is opened read-only (SQLite
    mode=ro) with sqlite-vec loaded: agents keep recording while it runs, and
    a reload shows what they wrote. Nothing in the browser can write.

    It listens on 127.0.0.1 only, and serves only whoever started it: the URL it
    prints carries a token made for this run (as Jupyter does); the first page
    opened with it sets a cookie, and any request without the token or the cookie
    gets 403, so another user of this machine cannot read the library through the
    port. --host 0.0.0.0 (or any other address) lets
    anyone who reaches it read every trajectory, tool outputs included, with
    no login: a warning is printed. Needs: pip install 'agentmem[browse]'.

    \b
    Examples:
      agentmem browse                       # http://127.0.0.1:8001/agentmem?token=...
      agentmem browse --db agentmem-demo.db --port 8002
    """
    path = library_path(db_path)
    with errors_as_click():
        ds = make_datasette(path)  # says how to install Datasette when it is missing
    from ..browse.app import is_loopback, serve

    if ds._agentmem_note:
        click.echo(f"note: {ds._agentmem_note}", err=True)
    if not is_loopback(host):
        click.echo(
            f"warning: listening on {host}, not loopback: anyone who can reach port {port} "
            "can read the whole library (tasks, tool calls and outputs), with no login.",
            err=True,
        )
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/agentmem?token={ds._agentmem_token}"
    click.echo(f"agentmem browse: {url}  ({path}, read-only; Ctrl-C stops)")
    click.echo(
        "  only this URL's token opens it (another local user reaching the port gets 403)",
        err=True,
    )
    serve(ds, host=host, port=port)
