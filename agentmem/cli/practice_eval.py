"""``agentmem practice eval``: the held-out effect of the lessons, as an argparse command.

:func:`register` adds the ``eval`` subcommand to an argparse ``subparsers``;
``python -m agentmem.cli.practice_eval`` runs it alone. It reads the held-out tasks from a
practice task file (:func:`agentmem.practice.tasks.load_tasks`) or takes BFCL v4
multi-turn tasks by id (``--bfcl``), runs each with and without the lessons
(:func:`agentmem.practice.evaluate.evaluate`) and prints the report (``--json``: as JSON).

A BFCL task is run by :class:`agentmem.practice.bfcl.BfclAgent` with an OpenAI-compatible
chat server (``--model-url``, ``--model``); any other task by the CLI agent of
``--agent`` (``'claude -p {prompt}'``), through the practice runner's rollouts.
:func:`rollout_for` is that choice, for any front end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import AgentMemError
from ..practice.evaluate import Rollout
from ..practice.types import Task

__all__ = ["main", "register", "rollout_for", "run"]

EXAMPLES = """\
examples:
  agentmem practice eval --bfcl multi_turn_base_3,multi_turn_base_5,multi_turn_base_9 \\
      --model-url http://127.0.0.1:8080/v1 --model qwen3-8b --seeds 3
  agentmem practice eval tasks.toml --agent 'claude -p {prompt}' --heldout 0.3 --json
"""


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``eval`` to ``subparsers`` (from ``ArgumentParser.add_subparsers``); its
    handler is ``args.func(args) -> exit status``."""
    p = subparsers.add_parser(
        "eval",
        help="the held-out effect of the lessons (paired, with its interval)",
        description=(
            "Run the held-out tasks with and without the lessons the library serves for "
            "them (the same seeds), report the effect with its 95% interval and McNemar's "
            "exact test, credit each lesson with the pairs it was served in, and retire "
            "a lesson whose held-out effect is harmful (undo with 'agentmem undo')."
        ),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("tasks_file", nargs="?", help="a practice task file (TOML)")
    p.add_argument("--heldout", type=float, help="share of unmarked tasks held out (0 to 1)")
    p.add_argument(
        "--bfcl",
        metavar="IDS",
        help="BFCL v4 multi-turn task ids, comma-separated (held out), instead of a file",
    )
    p.add_argument("--agent", metavar="TEMPLATE", help="a CLI agent: 'claude -p {prompt}'")
    p.add_argument("--model-url", help="an OpenAI-compatible server for BFCL tasks (.../v1)")
    p.add_argument("--model", default="default", help="the server's model name")
    p.add_argument("--temperature", type=float, default=0.7, help="sampling (default 0.7)")
    p.add_argument("--seeds", type=int, default=3, help="seeds per task (default 3)")
    p.add_argument("--k", type=int, default=5, help="the most lessons a prompt gets (5)")
    p.add_argument("--no-retire", action="store_true", help="report harmful lessons only")
    p.add_argument(
        "--ablate",
        action="store_true",
        help="also run each pair without each lesson served (one rollout more per lesson): "
        "every lesson's own effect",
    )
    p.add_argument("--max-rollouts", type=int, help="the most new rollouts to pay for")
    p.add_argument("--checkpoint", help="a JSON-lines file: finished pairs, for resuming")
    p.add_argument("--db", help="the library (default: $AGENTMEM_DB or the default)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)
    return p


def _tasks(args: argparse.Namespace) -> list[Task]:
    if args.bfcl and args.tasks_file:
        raise AgentMemError("give a task file or --bfcl, not both")
    if args.bfcl:
        from ..practice import bfcl

        return [bfcl.to_task(i, "heldout") for i in bfcl.parse_ids(args.bfcl)]
    if not args.tasks_file:
        raise AgentMemError("give a practice task file, or BFCL task ids with --bfcl")
    from ..practice.tasks import load_tasks  # type: ignore[import-not-found,unused-ignore]

    tasks: list[Task] = load_tasks(args.tasks_file, heldout=args.heldout)
    return tasks


def rollout_for(
    tasks: Sequence[Task],
    db: Path,
    *,
    agent: str | None = None,
    model_url: str | None = None,
    model: str = "default",
    temperature: float = 0.7,
) -> Rollout:
    """The rollout of each task: a BFCL task with the chat server at ``model_url``, any
    other with the CLI agent ``agent`` (a template) whose client's prompt hook serves
    nothing (``AGENTMEM_SERVE=off``: lessons reach a rollout only as the guidance the
    comparison gives it, so the arm without lessons has none); a clear error when a task
    has no agent that can run it (:func:`agentmem.practice.agents.agent_for`)."""
    from ..practice.agents import agent_for
    from ..practice.runner import rollout_fn

    held = [t for t in tasks if t.split == "heldout"]
    chosen = agent_for(
        held or tasks,  # only the held-out tasks are run
        template=agent,
        model_url=model_url,
        model=model,
        temperature=temperature,
        serve=False,
    )
    return rollout_fn(chosen, db)


def run(args: argparse.Namespace) -> int:
    """The ``eval`` command: 0 when it ran, 1 with a message on bad input."""
    from ..memory import Memory
    from ..paths import DEFAULT_DB_ENV, default_db_path
    from ..practice.evaluate import evaluate, render

    if args.seeds < 1 or args.k < 1:
        print("error: --seeds and --k must be at least 1", file=sys.stderr)
        return 1
    db = Path(args.db or os.environ.get(DEFAULT_DB_ENV) or default_db_path())
    try:
        tasks = _tasks(args)
        rollout = rollout_for(
            tasks,
            db,
            agent=args.agent,
            model_url=args.model_url,
            model=args.model,
            temperature=args.temperature,
        )
        with Memory.open(db) as mem:
            report = evaluate(
                mem,
                tasks,
                rollout,
                list(range(args.seeds)),
                k=args.k,
                retire_harmful=not args.no_retire,
                ablate=args.ablate,
                max_rollouts=args.max_rollouts,
                checkpoint=args.checkpoint,
                progress=lambda m: print(f"practice eval: {m}", file=sys.stderr),
            )
    except AgentMemError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        print(render(report))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agentmem.cli.practice_eval eval ...``."""
    parser = argparse.ArgumentParser(prog="agentmem practice")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
