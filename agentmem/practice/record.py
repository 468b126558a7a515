"""A rollout's run in the library: in its practice group, with its reward.

However a rollout's run reached the library (the client's hooks recorded it, the
practice imported the transcript the client wrote, or nothing could be read and a stub
stands in for it), :func:`attach` makes it one member of the exact group learning
compares: group key ``practice:<task id>``, the task's own prompt as its task (not the
guidance put before it), the reward token it was conditioned on, the check's verdict as
the user's verdict (accept / reject: rho_a of the composite reward) and as R_state (the
binary reward), and the practice's facts in ``meta.practice``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..db import write
from ..projects import project_of
from ..storage import trajectories as _trajectories
from .types import Task

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ["GROUP_PREFIX", "attach", "group_key", "project", "redacted", "stub"]

#: A practice group's key is this and the task's id.
GROUP_PREFIX = "practice:"


def group_key(task: Task, seed: int | None = None, guided: bool = False) -> str:
    """The group key of ``task``'s rollouts: ``practice:<task id>`` for a training task
    (its G rollouts are one exact group). A held-out task's run is a group of its own
    (``practice-heldout:<id>:<seed>:<g|n>``, ``g`` when it had guidance): learning never
    compares held-out runs as a group, so the lessons stay unproven on them until
    ``practice eval`` measures them."""
    if task.split == "heldout":
        return f"practice-heldout:{task.id}:{seed if seed is not None else ''}:{'gn'[not guided]}"
    return f"{GROUP_PREFIX}{task.id}"


def project(task: Task) -> str | None:
    """The project ``task``'s lessons are scoped to: its own, else its repository's."""
    return project_of(task.project or (str(task.repo) if task.repo else None))


def attach(
    mem: Memory,
    run_id: int,
    task: Task,
    *,
    success: bool,
    condition: str | None = None,
    facts: Mapping[str, Any] | None = None,
    verdict: bool = True,
) -> None:
    """Make run ``run_id`` a member of ``task``'s practice group with its reward.

    ``facts`` join the run's ``meta.practice``; ``verdict``: also record the check's
    verdict as the user's (once per run: the runner, attaching the reward token after
    the agent attached the run, passes False)."""
    old = _trajectories.meta_values(mem.db, [run_id], "practice").get(run_id)
    try:
        before = json.loads(old) if isinstance(old, str) else {}
    except ValueError:
        before = {}
    facts = {
        **(before if isinstance(before, dict) else {}),
        "task": task.id,
        **redacted(mem, facts or {}),
    }
    meta: dict[str, Any] = {"practice": facts}
    where = project(task)
    if where:
        meta["project"] = where
    seed = facts.get("seed") if isinstance(facts.get("seed"), int) else None
    key = group_key(task, seed, bool(facts.get("guided")))
    with write(mem.db):
        _trajectories.regroup(
            mem.db,
            run_id,
            task=mem.redactor.text(task.prompt),
            group=key,
            condition=condition,
            meta=meta,
        )
        _trajectories.set_state(mem.db, run_id, success)
    if verdict:
        kind = "accept" if success else "reject"
        mem.feedback(run_id, kind, note=f"practice check {'passed' if success else 'failed'}")


def stub(mem: Memory, task: Task, *, why: str, facts: Mapping[str, Any] | None = None) -> int:
    """Record a run without steps for a rollout whose run could not be read (no tool call,
    no transcript): the group still counts it, with its reward."""
    meta: dict[str, Any] = {"practice": {"task": task.id, "stub": why, **dict(facts or {})}}
    meta = redacted(mem, meta)
    where = project(task)
    if where:
        meta["project"] = where
    seed = meta["practice"].get("seed")
    key = group_key(
        task, seed if isinstance(seed, int) else None, bool(meta["practice"].get("guided"))
    )
    return mem.record(task.prompt, [], group=key, meta=meta)


def redacted(mem: Memory, facts: Mapping[str, Any]) -> dict[str, Any]:
    """``facts`` with every text in it (nested too) redacted by the library's redactor: a
    check's or an agent's output may hold a secret, and nothing is stored unredacted."""

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return mem.redactor.text(value)
        if isinstance(value, Mapping):
            return {str(k): clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        return value

    return {str(k): clean(v) for k, v in facts.items()}
