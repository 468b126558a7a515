"""The effect command: what the served lessons changed."""

from __future__ import annotations

from typing import Any

import click

from ..memory import Memory
from .main import cli, json_option, print_json, print_table, with_memory


def _rate(arm: dict[str, Any]) -> str:
    if not arm["situations"]:
        return "-"
    lo, hi = arm["ci"]
    return f"{arm['mistakes']}/{arm['situations']} = {arm['rate']:.0%} [{lo:.0%}, {hi:.0%}]"


def _prevented(row: dict[str, Any]) -> str:
    p = row.get("prevented")
    if p is None:
        return "-"
    lo, hi = p["ci"]
    return f"{p['rate']:+.0%} [{lo:+.0%}, {hi:+.0%}]"


def _short(verdict: str) -> str:
    """A verdict's first words: helps, hurts, no measurable effect yet, not enough data..."""
    return verdict.split(":")[0].split(" (")[0]


@cli.command()
@json_option
@with_memory
def effect(mem: Memory, as_json: bool) -> None:
    """How often each served lesson's mistake happened when it was served and when
    the holdout withheld it, with 95% intervals (Wilson per rate, Newcombe for the
    difference, "prevented": held-out rate minus served rate).

    A run counts for a lesson when it met the lesson's situation (its rule
    applies); the mistake happened when it did not follow the lesson and a call
    the lesson is about failed. Runs are judged by `agentmem learn` (run it after
    importing). Without a holdout (`agentmem settings holdout 0.1`) only the
    served figures exist, and they are not a comparison; with fewer than 5
    situations in an arm the verdict says there is not enough data.

    \b
    Examples:
      agentmem settings holdout 0.1
      agentmem effect
      agentmem effect --json
    """
    rep = mem.effect()
    if as_json:
        print_json(rep)
        return
    rows = [
        [
            r["id"],
            r["status"],
            _rate(r["served"]),
            _rate(r["held_out"]),
            _prevented(r),
            _short(r["verdict"]),
            r["text"],
        ]
        for r in rep["lessons"]
    ]
    if rows:
        heads = ["id", "status", "served: mistakes", "held out", "prevented", "verdict", "text"]
        print_table(heads, rows)
    else:
        click.echo("no served lesson has met its situation in a judged run yet")
    o = rep["overall"]
    click.echo(
        f"overall: served {_rate(o['served'])}; held out {_rate(o['held_out'])}; "
        f"prevented {_prevented(o)}"
    )
    click.echo(f"verdict: {o['verdict']}")
    click.echo(f"holdout: {rep['holdout']:.0%} of prompts")
    pending = rep["pending"]
    if pending.get("unmatched") or pending.get("unjudged"):
        click.echo(
            f"waiting: {pending.get('unmatched', 0)} served lesson(s) with no run yet, "
            f"{pending.get('unjudged', 0)} not judged yet (agentmem learn judges them)"
        )
    if pending.get("unread_bytes"):
        click.echo(
            f"not read yet: {pending['unread_bytes']:,} bytes of the served log "
            "(agentmem learn reads it)"
        )
    if pending.get("no_run"):
        click.echo(
            f"never matched to a run: {pending['no_run']} served lesson(s) a day or more old"
        )
