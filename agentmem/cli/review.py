"""``agentmem review``: the lessons held for a person, with their evidence; approve or reject.

A lesson that would have the agent run a command with a risky capability (a download
piped to a shell, another package registry, global configuration, a force push, skipped
hooks, ``sudo``, a recursive delete, a permission change, disabled TLS checks, a sandbox
escalation) is never served until someone approves it here (see ``docs/review.md``).
"""

from __future__ import annotations

from typing import Any

import click

from ..memory import Memory
from .main import LESSON_ID, cli, db_option, json_option, open_memory, print_json
from .terminal import echo

_by_opt = click.option(
    "--by", default=None, help="Who decides (recorded in the journal; default: your user name)."
)


@cli.group(invoke_without_command=True)
@db_option
@json_option
@click.pass_context
def review(ctx: click.Context, db_path: str | None, as_json: bool) -> None:
    """List the lessons held for review, with the risks found and the runs they came from.

    A held lesson is stored but never served (hooks, context, MCP, API, team) until it is
    approved. Approve or reject one with 'agentmem review approve ID' / 'reject ID';
    both are journaled and undone with 'agentmem undo SESSION'.

    \b
    Examples:
      agentmem review
      agentmem review --json
      agentmem review approve 12
      agentmem review reject 13
    """
    ctx.obj = db_path
    if ctx.invoked_subcommand is not None:
        return
    with open_memory(db_path) as mem:
        _list(mem, as_json)


def _list(mem: Memory, as_json: bool) -> None:
    held = mem.held()
    if as_json:
        print_json(held)
        return
    if not held:
        echo("No lesson waits for review.")
        return
    echo(f"{len(held)} lesson(s) wait for review; none of them is served until approved.\n")
    for h in held:
        _show(h)


def _show(h: dict[str, Any]) -> None:
    echo(f"[{h['id']}] {h['text']}")
    for c in h["capabilities"]:
        where = {
            "advised": "advised by a failing tool output",
            "rule": "the command the lesson carries",
            "text": "in the lesson's text",
            "param": "a parameter setting",
        }.get(c.get("source", ""), c.get("source", ""))
        echo(f"    risk: {c.get('capability')}: {c.get('command')}  ({where})")
    src = h.get("source") or {}
    if src.get("session_id") is not None:
        echo(
            f"    from: session {src['session_id']}, group {src.get('group_key')!r}, "
            f"origin {src.get('origin')}"
        )
    for run in h["runs"]:
        if run.get("pruned"):
            echo(f"    run {run['id']}: pruned")
            continue
        echo(f"    run {run['id']} ({run['source']}): {run['task'][:100]!r}")
        for f in run["failures"]:
            out = " ".join(str(f["output"]).split())[:200]
            echo(f"      step {f['position']} {f['tool']} failed: {out!r}")
            if f.get("then"):
                t = f["then"]
                ok = "worked" if t["success"] else "failed"
                echo(f"        then {t['tool']} {_call(t['params'])} {ok}")
    echo("")


def _call(params: Any) -> str:
    if isinstance(params, dict):
        for key in ("command", "cmd"):
            if key in params:
                v = params[key]
                return " ".join(map(str, v)) if isinstance(v, list) else str(v)
    return str(params)[:120]


@review.command()
@click.argument("experience_id", type=LESSON_ID)
@_by_opt
@db_option
@json_option
@click.pass_obj
def approve(
    parent_db: str | None, experience_id: int, by: str | None, db_path: str | None, as_json: bool
) -> None:
    """Approve held lesson EXPERIENCE_ID: from now on it may be served.

    \b
    Example:
      agentmem review approve 12 --by alice
    """
    _decide(_db(db_path, parent_db), experience_id, "approved", by, as_json)


@review.command()
@click.argument("experience_id", type=LESSON_ID)
@_by_opt
@db_option
@json_option
@click.pass_obj
def reject(
    parent_db: str | None, experience_id: int, by: str | None, db_path: str | None, as_json: bool
) -> None:
    """Reject held lesson EXPERIENCE_ID: it is deleted (undo brings it back, held).

    \b
    Example:
      agentmem review reject 13
    """
    _decide(_db(db_path, parent_db), experience_id, "rejected", by, as_json)


def _db(own: str | None, parent: str | None) -> str | None:
    """The library: ``--db`` given to the subcommand, else to ``review``, else
    ``$AGENTMEM_DB`` (which both read)."""
    ctx = click.get_current_context()
    given = ctx.get_parameter_source("db_path") == click.core.ParameterSource.COMMANDLINE
    return own if given or parent is None else parent


def _decide(
    db_path: str | None, experience_id: int, decision: str, by: str | None, as_json: bool
) -> None:
    with open_memory(db_path) as mem:
        sid = mem.review(experience_id, decision, by=by)
    if as_json:
        print_json({"experience": experience_id, "review": decision, "session": sid})
    else:
        echo(f"{decision} experience {experience_id} (session {sid}; undo: agentmem undo {sid})")
