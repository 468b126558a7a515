"""Commands for reward-conditioned groups: plan, export rctp, and the diagnosis printer."""

from __future__ import annotations

from typing import Any

import click

from ..memory import Memory
from ..rc import HIGH, LOW, plan_group
from .main import cli, errors_as_click, json_option, print_json, print_table, with_memory


def print_diagnosis(report: dict[str, Any]) -> None:
    for kind, sides in report["rewards"].items():
        click.echo(f"{kind} reward:")
        rows = []
        for name in ("all", "unconditioned", "conditioned"):
            s = sides[name]
            sig = s["sigma"]
            rows.append(
                [
                    name,
                    s["groups"],
                    s["ready"],
                    s["degenerate"],
                    s["degenerate_share"],
                    s["usable_share"],
                    s["mean_within_group_variance"],
                    sig["median"],
                    sig["max"],
                ]
            )
        print_table(
            [
                "groups",
                "n",
                "ready",
                "degenerate",
                "degen share",
                "usable share",
                "mean var",
                "sigma median",
                "sigma max",
            ],
            rows,
        )
        click.echo("")
    for line in report["advice"]:
        click.echo(line)


@cli.command()
@click.argument("task")
@click.option(
    "--size",
    "-G",
    type=click.IntRange(1, 10_000),
    default=4,
    show_default=True,
    help="Rollouts in the group.",
)
@click.option(
    "--p-high",
    type=float,
    default=0.5,
    show_default=True,
    help="P_sample of the high-reward token (the low one gets the rest).",
)
@click.option("--high-token", default=HIGH, show_default=True)
@click.option("--low-token", default=LOW, show_default=True)
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), help="Seed, for a reproducible plan.")
@click.option("--tuned", is_flag=True, help="Put raw tokens in the prompts (an RCTP-tuned model).")
@json_option
def plan(
    task: str,
    size: int,
    p_high: float,
    high_token: str,
    low_token: str,
    seed: int | None,
    tuned: bool,
    as_json: bool,
) -> None:
    """Plan a reward-conditioned group for TASK: the token each rollout is conditioned on.

    Tokens are drawn from P_sample but never all the same when G >= 2. Record
    each rollout with its token as "condition".

    \b
    Examples:
      agentmem plan "migrate the users table" --size 4 --seed 7
      agentmem plan "book a flight" -G 6 --p-high 0.7 --tuned --json
    """
    if size < 1:
        raise click.BadParameter("must be at least 1", param_hint="--size")
    with errors_as_click():
        p = plan_group(
            task, size, p_sample={high_token: p_high, low_token: 1 - p_high}, seed=seed, tuned=tuned
        )
    if as_json:
        print_json(p.as_dict())
        return
    click.echo(f"group {p.group}")
    print_table(
        ["rollout", "condition", "prompt text"],
        [[r.index, r.condition, r.prompt] for r in p.rollouts],
    )


@cli.group()
def export() -> None:
    """Export data sets from the library.

    \b
    Example:
      agentmem export rctp rctp.jsonl
    """


@export.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--threshold",
    type=float,
    default=0.5,
    show_default=True,
    help="Reward at or above which a trajectory gets the high token.",
)
@click.option(
    "--reward", type=click.Choice(["composite", "binary"]), help="Default: the library's."
)
@click.option("--domain", "domains", multiple=True, help="Only trajectories touching this domain.")
@click.option("--since", help="Only trajectories recorded on or after this ISO date.")
@click.option("--until", help="Only trajectories recorded on or before this ISO date.")
@click.option("--high-token", default=HIGH, show_default=True)
@click.option("--low-token", default=LOW, show_default=True)
@click.option("--system", default="", help="System prompt text to put after the token.")
@json_option
@with_memory
def rctp(
    mem: Memory,
    file: str,
    threshold: float,
    reward: str | None,
    domains: tuple[str, ...],
    since: str | None,
    until: str | None,
    high_token: str,
    low_token: str,
    system: str,
    as_json: bool,
) -> None:
    """Write FILE: every trajectory as a chat fine-tuning record with its reward token (RCTP).

    JSON lines of {"messages": [...], "tools": [...]}, the format OpenAI
    fine-tuning and TRL's SFTTrainer read unchanged.

    \b
    Examples:
      agentmem export rctp rctp.jsonl --threshold 0.7
      agentmem export rctp fs.jsonl --domain fs --since 2026-11-01
    """
    from ..export import ExportOptions, export_rctp

    opts = ExportOptions(
        threshold=threshold,
        high_token=high_token,
        low_token=low_token,
        domains=domains,
        since=since,
        until=until,
        reward=reward or mem.reward_kind,
        system=system,
    )
    s = export_rctp(mem, file, opts)
    if as_json:
        print_json(s.as_dict())
        return
    click.echo(
        f"wrote {s.written} trajectories to {s.path}: {s.high} high, {s.low} low "
        f"({s.high / s.written:.0%} high)"
        if s.written
        else f"wrote 0 trajectories to {s.path}"
    )
    if s.pending or s.filtered:
        click.echo(f"left out: {s.pending} with a pending reward, {s.filtered} filtered")
    if s.by_domain:
        click.echo("domains: " + ", ".join(f"{d} {n}" for d, n in s.by_domain.items()))
