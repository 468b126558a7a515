"""Which agent runs which task: a BFCL task with a model server, any other with a CLI.

``practice run`` and ``practice eval`` take the same agent options (``--agent TEMPLATE``
for tasks with a repository and a check, ``--model-url URL --model NAME`` for BFCL v4
multi-turn tasks) and build their agent here, so both run a task the same way:
:func:`agent_for` checks, before anything runs, that every task has an agent that can
run it, and gives one :class:`~agentmem.practice.types.Agent` that hands each task to
the right one (:class:`ByTask`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from ..errors import InvalidRecordError
from .types import Agent, Outcome, Task

__all__ = ["SERVE_OFF", "ByTask", "agent_for", "agent_label"]

#: The environment a CLI agent's client gets when the library must not serve lessons
#: itself (its prompt hook serves nothing: lessons reach a rollout only as its guidance).
SERVE_OFF: Mapping[str, str] = {"AGENTMEM_SERVE": "off"}


@attrs.frozen
class ByTask:
    """An agent that runs a BFCL task (``task.bfcl``) with ``bfcl`` and any other with
    ``cli``; a task whose agent is missing is refused by :func:`agent_for` first."""

    cli: Agent | None = None
    bfcl: Agent | None = None
    name: str = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        names = [a.name for a in (self.cli, self.bfcl) if a is not None]
        object.__setattr__(self, "name", "+".join(names) or "none")

    def stop(self) -> None:
        """Stop the agents that can be stopped (the CLI agent's processes under way)."""
        for agent in (self.cli, self.bfcl):
            stop = getattr(agent, "stop", None)
            if callable(stop):
                stop()

    def run(
        self, task: Task, workspace: Path | None, guidance: str, seed: int, db: Path
    ) -> Outcome:
        """Run ``task`` with the agent for its kind."""
        agent = self.bfcl if task.bfcl else self.cli
        if agent is None:  # agent_for refuses this before anything runs
            kind = "a BFCL task (--model-url)" if task.bfcl else "a CLI task (--agent)"
            raise InvalidRecordError(f"task {task.id} is {kind} and has no agent")
        return agent.run(task, workspace, guidance, seed, db)


def agent_for(
    tasks: Sequence[Task],
    *,
    template: str | None = None,
    client: str | None = None,
    model_url: str | None = None,
    model: str = "default",
    temperature: float = 0.7,
    serve: bool = True,
) -> ByTask:
    """The agent for ``tasks``: the CLI agent of ``template`` for tasks with a repository
    and a check, :class:`~agentmem.practice.bfcl.BfclAgent` driven by the
    OpenAI-compatible server at ``model_url`` for BFCL tasks. ``serve=False`` sets
    :data:`SERVE_OFF` for the CLI agent's client (``practice eval``: the library's prompt
    hook serves nothing, so the arm without lessons gets none). Raises
    :class:`InvalidRecordError` naming the tasks that no given agent can run."""
    bfcl_ids = [t.id for t in tasks if t.bfcl]
    cli_ids = [t.id for t in tasks if not t.bfcl]
    if bfcl_ids and not model_url:
        raise InvalidRecordError(
            f"BFCL task(s) {', '.join(bfcl_ids[:5])} need a model server: "
            "--model-url URL --model NAME"
        )
    if cli_ids and not template:
        raise InvalidRecordError(
            f"task(s) {', '.join(cli_ids[:5])} need a command-line agent: --agent TEMPLATE"
        )
    bad = [t.id for t in tasks if not t.bfcl and (t.repo is None or t.check is None)]
    if bad:  # load_tasks refuses these; a hand-made Task may still be one
        raise InvalidRecordError(
            f"task(s) {', '.join(bad[:5])} have no repo and check: a command-line agent "
            "needs a workspace and a check command"
        )
    cli: Agent | None = None
    if cli_ids and template:
        from .cli_agent import CliAgent

        cli = CliAgent(template, client=client, env={} if serve else dict(SERVE_OFF))
    bfcl: Agent | None = None
    if bfcl_ids and model_url:
        from .bfcl import BfclAgent, BfclUnavailable, ChatPolicy, available, load_entry

        if not available():
            raise InvalidRecordError(
                "BFCL tasks need bfcl_eval: pip install --no-deps 'bfcl-eval==2026.3.23'"
            )
        for t in tasks:  # every id known before the first rollout runs
            if t.bfcl:
                try:
                    load_entry(t.bfcl)
                except BfclUnavailable as e:
                    raise InvalidRecordError(f"task {t.id}: {e}") from None
        bfcl = BfclAgent(ChatPolicy(model_url, model, temperature=temperature))
    return ByTask(cli, bfcl)


def agent_label(
    tasks: Sequence[Task],
    template: str | None,
    model_url: str | None,
    model: str = "default",
    temperature: float = 0.7,
) -> str:
    """The agent as named in a practice's key: the template for CLI tasks (alone, as
    before BFCL tasks could be practised), the server, model and temperature for BFCL
    tasks; the same options for the same tasks find the same practice."""
    parts = [template] if template and any(not t.bfcl for t in tasks) else []
    if model_url and any(t.bfcl for t in tasks):
        parts.append(f"bfcl {model_url} model={model} temperature={temperature:g}")
    return " | ".join(p for p in parts if p)
