"""The values practice shares: a task, the outcome of one rollout, and what an agent is.

A :class:`Task` says what to ask, where a rollout starts and how it is judged; an
:class:`Agent` runs one rollout of it in a workspace of its own, with or without
guidance (the lessons, as text put before the prompt), and gives back an
:class:`Outcome`. Everything else in :mod:`agentmem.practice` (groups, budgets,
learning, the held-out comparison) is built on these three and on nothing of a
particular agent's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import attrs

__all__ = ["SPLITS", "Agent", "Outcome", "Split", "Task"]

Split = Literal["train", "heldout"]
#: The halves of a task file: lessons are learned on ``train`` and judged on ``heldout``.
SPLITS: tuple[Split, ...] = ("train", "heldout")


@attrs.frozen
class Task:
    """One practice task.

    ``repo`` (a local git repository or folder) and ``commit`` say where each rollout
    starts: a fresh checkout (a git worktree at ``commit``, or a copy of the folder),
    so rollouts never see each other. ``check`` is a shell command run in the
    rollout's workspace afterwards: exit status 0 is success. A BFCL v4 multi-turn
    task has no repository: ``bfcl`` names it (for example ``multi_turn_base_12``)
    and its gold end state judges it.
    """

    id: str
    prompt: str
    split: Split = "train"
    repo: Path | None = None
    commit: str | None = None
    check: str | None = None
    bfcl: str | None = None
    #: Seconds one rollout may run before it is stopped and counted a failure.
    timeout_s: float = 600.0
    #: The project the lessons are scoped to and served from (default: the repository's).
    project: str | None = None


@attrs.frozen
class Outcome:
    """What one rollout of a task gave.

    ``reward`` is in [0, 1] (1.0 / 0.0 for a check command); ``success`` is
    ``reward >= 1``. ``run_id`` is the trajectory the rollout was recorded as in the
    library (None when it could not be recorded); ``lessons`` the experience ids the
    rollout was given. ``tokens`` and ``cost_usd`` are what the client reported, when
    it reports them. ``error`` says why a rollout could not run (a timeout, a client
    that would not start): such a rollout is a failure and is counted as one.
    """

    task_id: str
    seed: int
    reward: float
    success: bool
    wall_s: float
    run_id: int | None = None
    lessons: tuple[int, ...] = ()
    tokens: int | None = None
    cost_usd: float | None = None
    error: str | None = None
    #: What the agent keeps with the rollout (the client's session id, its transcript).
    meta: Mapping[str, str] = attrs.field(factory=dict)


@runtime_checkable
class Agent(Protocol):
    """Something that runs one rollout of a task.

    ``workspace`` is a fresh folder the rollout may change (None for a BFCL task);
    ``guidance`` is text to put before the task's prompt (the lessons served for it,
    an RC-GRPO instruction, or both; empty for none); ``seed`` makes a rollout
    repeatable where the agent allows it (a model server's sampling seed). The agent
    records the rollout in ``db`` (the library) and returns its outcome; it never
    raises for a rollout that failed, only for a misconfigured agent.
    """

    @property
    def name(self) -> str:
        """What the agent is called (its program, ``bfcl-chat``...)."""
        ...

    def run(
        self, task: Task, workspace: Path | None, guidance: str, seed: int, db: Path
    ) -> Outcome:
        """Run one rollout of ``task`` and say how it went."""
        ...
