"""``agentmem practice``: G rollouts of each task by your agent, then one learning session
over those exact groups (issue 32); ``status`` lists the practices; ``eval`` measures the
lessons on the held-out tasks. See ``docs/practice.md``."""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from .main import cli, db_option, errors_as_click, json_option, open_memory, print_json
from .main import require_library as _require_library
from .terminal import echo

_CLIENTS = ("claude-code", "codex")


def _agent_options(f: Any) -> Any:
    for opt in reversed(
        [
            click.argument(
                "tasks_file", metavar="[TASKS]", type=click.Path(dir_okay=False), required=False
            ),
            click.option(
                "--bfcl",
                "bfcl_ids",
                metavar="IDS",
                default=None,
                help="BFCL v4 multi-turn task ids, comma-separated (multi_turn_base_12,...), "
                "instead of a task file; run with --model-url.",
            ),
            click.option(
                "--agent",
                "template",
                default=None,
                help="The agent's command line for tasks with a repository: {prompt} is the "
                "prompt (one argument, never read by a shell), {workspace} the rollout's "
                "folder.",
            ),
            click.option(
                "--client",
                type=click.Choice(_CLIENTS),
                default=None,
                help="Whose transcripts to import (default: from the template's program).",
            ),
            click.option(
                "--model-url",
                default=None,
                metavar="URL",
                help="An OpenAI-compatible chat server (llama-server, Ollama: .../v1) that "
                "drives BFCL's tool simulators for BFCL tasks.",
            ),
            click.option(
                "--model", default="default", show_default=True, help="The server's model."
            ),
            click.option(
                "--temperature",
                type=click.FloatRange(0, 2),
                default=0.7,
                show_default=True,
                help="The model's sampling temperature (BFCL tasks).",
            ),
            click.option(
                "--heldout",
                type=click.FloatRange(0, 1, max_open=True),
                default=None,
                help="Hold out this share of the tasks without a split (a stable hash of "
                "their ids).",
            ),
            click.option("--keep", is_flag=True, help="Keep each rollout's workspace."),
        ]
    ):
        f = opt(f)
    return f


def _library(db_path: str | None) -> Path:
    with open_memory(db_path) as mem:
        if mem.path is None:
            raise click.ClickException("practice needs a library file, not an in-memory one")
        return Path(mem.path)


def _load(tasks_file: str | None, bfcl_ids: str | None, heldout: float | None) -> Any:
    """The tasks of the task file, or of ``--bfcl`` (training tasks, less the share
    ``--heldout`` holds out by the same hash as a task file's)."""
    from ..practice.tasks import heldout_by_hash, load_tasks

    if bool(tasks_file) == bool(bfcl_ids):
        raise click.UsageError("give a task file or --bfcl IDS (one of them)")
    with errors_as_click():
        if tasks_file:
            return load_tasks(tasks_file, heldout=heldout)
        from ..practice import bfcl

        return [
            bfcl.to_task(i, "heldout" if heldout and heldout_by_hash(i, heldout) else "train")
            for i in bfcl.parse_ids(bfcl_ids or "")
        ]


def _where(tasks_file: str | None, bfcl_ids: str | None) -> str:
    """The tasks' source as named in the practice's key."""
    if tasks_file:
        return str(Path(tasks_file).absolute())
    from ..practice import bfcl

    return "bfcl:" + ",".join(bfcl.parse_ids(bfcl_ids or ""))


def _estimate(
    tasks: Any, db: Path, template: str, where: str, size: int, rc: str, as_json: bool
) -> None:
    from ..practice.runner import estimate

    with errors_as_click():
        est = estimate(
            tasks,
            db,
            template=template,
            tasks_path=where,
            size=size,
            rc=rc,
        )
    if as_json:
        print_json(est)
        return
    echo(
        f"{est['tasks']} training task(s), {est['done']} rollout(s) done: {est['next']} would "
        f"run now, at most {est['at_most']} in all (with conditioned groups where a first "
        f"one is degenerate), at most {est['at_most_s'] / 3600:.1f} h by the tasks' timeouts"
    )


@contextlib.contextmanager
def _interrupted() -> Iterator[None]:
    """Ctrl-C: say what is kept and how to go on, exit 130."""
    try:
        yield
    except KeyboardInterrupt:
        echo(
            "practice: interrupted; the finished rollouts are kept, the one under way is not: "
            "run the same command again to continue",
            err=True,
        )
        sys.exit(130)


def _agent(
    tasks: Any,
    template: str | None,
    client: str | None,
    model_url: str | None,
    model: str,
    temperature: float,
) -> tuple[Any, str]:
    """The agent for the training tasks and its name in the practice's key; refused,
    before anything runs, when a task has no agent that can run it."""
    from ..practice.agents import agent_for, agent_label

    train = [t for t in tasks if t.split == "train"]
    with errors_as_click():
        agent = agent_for(
            train or tasks,
            template=template,
            client=client,
            model_url=model_url,
            model=model,
            temperature=temperature,
        )
    return agent, agent_label(train or tasks, template, model_url, model, temperature)


@cli.group()
def practice() -> None:
    """Practise tasks with your agent: G rollouts each, then learn from the groups.

    \b
    Examples:
      agentmem practice run tasks.toml --agent 'claude -p {prompt} --output-format json'
      agentmem practice run tasks.toml --agent 'codex exec --json {prompt}' --size 6
      agentmem practice run --bfcl multi_turn_base_3,multi_turn_base_5 \\
          --model-url http://127.0.0.1:8080/v1 --model qwen3-8b
      agentmem practice status
      agentmem practice eval tasks.toml --agent 'claude -p {prompt}'
    """


@practice.command("run")
@_agent_options
@click.option("--size", "-G", type=int, default=4, show_default=True, help="Rollouts per group.")
@click.option(
    "--rc",
    type=click.Choice(("auto", "always", "never")),
    default="auto",
    show_default=True,
    help="RC-GRPO conditioning: auto (a second, conditioned group where the first was "
    "all pass or all fail), always, never.",
)
@click.option("--max-rollouts", type=click.IntRange(1), default=None, help="Stop after N.")
@click.option("--max-minutes", type=click.FloatRange(0, min_open=True), default=None)
@click.option(
    "--max-tokens", type=click.IntRange(1), default=None, help="Tokens the client reports."
)
@click.option("--no-learn", is_flag=True, help="Only the rollouts; learn on a later run.")
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(1, 32),
    default=1,
    show_default=True,
    help="Rollouts of one task run at once, each in its own workspace (BFCL tasks: one at "
    "a time); recorded in order.",
)
@click.option(
    "--dry-run", is_flag=True, help="Say how many rollouts would run (at most), run none."
)
@db_option
@json_option
def run(
    tasks_file: str | None,
    bfcl_ids: str | None,
    template: str | None,
    client: str | None,
    model_url: str | None,
    model: str,
    temperature: float,
    heldout: float | None,
    keep: bool,
    size: int,
    rc: str,
    max_rollouts: int | None,
    max_minutes: float | None,
    max_tokens: int | None,
    no_learn: bool,
    jobs: int,
    dry_run: bool,
    db_path: str | None,
    as_json: bool,
) -> None:
    """Run G rollouts of each training task, then one learning session over those groups.

    Each rollout starts in a fresh workspace (a git worktree at the task's commit, or a
    copy of its folder), runs the agent there, and the task's check says pass or fail.
    A BFCL task (--bfcl, or 'bfcl = ID' in the task file) runs in fresh instances of
    BFCL's tool simulators, driven by the model at --model-url, and BFCL's checker
    judges it.
    Where a task's group is all pass or all fail, a second group conditioned with RC-GRPO
    instructions follows (--rc auto). Running the same command again continues a killed
    or budget-stopped practice; finished rollouts are never run again. Progress goes to
    stderr, the summary to stdout.

    \b
    Examples:
      agentmem practice run tasks.toml --agent 'claude -p {prompt} --output-format json'
      agentmem practice run tasks.toml --agent 'codex exec --json {prompt}' --max-rollouts 20
      agentmem practice run tasks.toml --agent 'claude -p {prompt}' --jobs 4
      agentmem practice run --bfcl multi_turn_base_3,multi_turn_base_5 -G 4 \\
          --model-url http://127.0.0.1:8080/v1 --model qwen3-8b
    """
    from ..practice.runner import Budget, practice

    tasks = _load(tasks_file, bfcl_ids, heldout)
    agent, label = _agent(tasks, template, client, model_url, model, temperature)
    where = _where(tasks_file, bfcl_ids)
    db = _library(db_path)
    if dry_run:
        _estimate(tasks, db, label, where, size, rc, as_json)
        return
    with errors_as_click(), _interrupted():
        report = practice(
            tasks,
            agent,
            db,
            template=label,
            tasks_path=where,
            size=size,
            rc=rc,
            budget=Budget(max_rollouts, max_minutes, max_tokens),
            keep=keep,
            learn=not no_learn,
            progress=lambda m: echo(f"practice: {m}", err=True),
            jobs=jobs,
        )
    if as_json:
        print_json(report.as_dict())
    else:
        for line in report.lines():
            echo(line)
    if report.agent_broken:
        sys.exit(1)


@practice.command("status")
@click.argument("practice_id", metavar="[ID]", type=int, required=False)
@db_option
@json_option
def status(practice_id: int | None, db_path: str | None, as_json: bool) -> None:
    """List the practices in the library: rollouts, passes, tokens, learning session;
    with an ID, that practice's rollouts one by one.

    \b
    Examples:
      agentmem practice status
      agentmem practice status 1
      agentmem practice status --json
    """
    from ..storage import practice as store

    _require_library(db_path)
    with open_memory(db_path) as mem:
        rows = store.practices(mem.db)
        if practice_id is not None:
            if practice_id not in {r["id"] for r in rows}:
                raise click.ClickException(f"no practice has id {practice_id}")
            _rollouts(store.rollouts(mem.db, practice_id), as_json)
            return
    if as_json:
        print_json(rows)
        return
    if not rows:
        echo("No practice yet: agentmem practice run TASKS --agent TEMPLATE")
        return
    for r in rows:
        learned = (
            f"learned in session {r['learned_session']}"
            if r["learned_session"]
            else "not learned yet"
        )
        echo(
            f"practice {r['id']} ({r['created_at'][:19]}): {r['tasks_path']}, G={r['size']}, "
            f"rc {r['rc']}: {r['n_rollouts']} rollouts, {r['n_successes']} passed"
            + (f", {r['tokens']} tokens" if r["tokens"] else "")
            + f"; {learned}"
        )
        echo(f"    agent: {r['agent']}")


def _eval_options() -> str:
    """``eval``'s own options, as its argparse front end prints them (without the
    description and examples, which the click help holds); empty when it is missing."""
    import argparse
    import functools

    try:
        front = importlib.import_module("agentmem.cli.practice_eval")
    except ImportError:
        return ""
    parser = argparse.ArgumentParser(prog="agentmem practice", add_help=False)
    p = front.register(parser.add_subparsers())
    p.description = p.epilog = None
    p.usage = argparse.SUPPRESS  # click's usage line stands; the options follow
    p.formatter_class = functools.partial(  # type: ignore[assignment]
        argparse.HelpFormatter, width=100
    )
    return str(p.format_help()).rstrip()


class _EvalCommand(click.Command):
    """``practice eval``: the click help, then the argparse front end's options (``eval``
    hands its arguments to :mod:`agentmem.cli.practice_eval` as they are)."""

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_help(ctx, formatter)
        options = _eval_options()
        if options:
            formatter.write("\n" + options + "\n")


@practice.command(
    "eval",
    cls=_EvalCommand,
    add_help_option=False,
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def eval_(ctx: click.Context, args: tuple[str, ...]) -> None:
    """Run the held-out tasks with and without the lessons (paired, same seeds) and
    report the effect with its interval; harmful lessons are retired.

    The held-out comparison is agentmem.practice.evaluate's, through the same agents and
    rollouts as 'practice run' (--agent for tasks with a repository, --model-url for
    BFCL tasks); a CLI agent's client runs with AGENTMEM_SERVE=off, so its own prompt
    hook serves nothing and lessons reach a rollout only in the arm that has them.

    \b
    Examples:
      agentmem practice eval tasks.toml --agent 'claude -p {prompt}' --heldout 0.3
      agentmem practice eval tasks.toml --agent 'codex exec {prompt}' --seeds 5 --json
      agentmem practice eval --bfcl multi_turn_base_3,multi_turn_base_5 \\
          --model-url http://127.0.0.1:8080/v1 --model qwen3-8b --seeds 3
    """
    if any(a in ("-h", "--help") for a in args):
        echo(ctx.get_help())
        return
    try:
        front = importlib.import_module("agentmem.cli.practice_eval")
    except ImportError:
        raise click.ClickException(
            "practice eval is not available in this agentmem (agentmem.practice.evaluate "
            "is missing)"
        ) from None
    sys.exit(front.main(["eval", *args]))


def _rollouts(rows: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print_json(rows)
        return
    for r in rows:
        token = (r["condition"] or "").strip("<|>") or "plain"
        echo(
            f"{r['task_id']} round {r['round']} #{r['idx'] + 1} ({token}): "
            f"{'passed' if r['success'] else 'failed'} in {r['wall_s']:.1f} s, "
            f"run {r['trajectory_id']}"
            + (f", {r['tokens']} tokens" if r["tokens"] else "")
            + (f"  [{r['error']}]" if r["error"] else "")
        )
