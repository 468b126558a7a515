"""The practice loop: G rollouts of every training task, then one learning session.

:func:`practice` is a list of named steps:

1. **find or start** the practice (its key: the tasks as read, the agent's template, G and
   the RC-GRPO policy; the same command finds the same practice, so a killed one
   continues and a finished rollout is never run again);
2. **plan** each training task's next rollout (:func:`next_rollouts`, pure): round 0 is G
   plain rollouts; where that group is degenerate (every rollout passed, or every one
   failed: sigma = 0 teaches nothing) and the policy is ``auto``, round 1 is G rollouts
   conditioned with an RC-GRPO plan (:func:`agentmem.rc.plan_group`: the reward tokens'
   instructions as guidance, never an all-same draw), so the task's group gets a signal.
   ``always`` conditions round 0 itself; ``never`` stops after round 0;
3. **roll out** each one in a fresh workspace (:mod:`.workspace`), through the agent,
   and store it with its reward, in the group ``practice:<task id>`` (:mod:`.record`),
   until the budget (rollouts, minutes, tokens) says stop;
4. **learn** once over exactly the practice's mixed groups
   (:meth:`agentmem.Memory.learn`, ``grouping="exact"``, those keys only);
5. **summarise**: rollouts, successes per task, each group mixed, degenerate or not
   complete, the budget's verdict, the lessons learned with their ids.

:func:`rollout_fn` gives the rollout machinery as the ``rollout(task, guidance, seed) ->
Outcome`` callable that :mod:`agentmem.practice.evaluate` (the held-out comparison)
takes.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import attrs

from ..db import write
from ..errors import InvalidRecordError
from ..rc import plan_group
from ..storage import practice as store
from .record import attach, group_key, redacted, stub
from .types import Agent, Outcome, Task
from .workspace import prune, workspace

__all__ = [
    "MAX_BROKEN",
    "MAX_JOBS",
    "RC_POLICIES",
    "Budget",
    "Planned",
    "PracticeReport",
    "estimate",
    "next_rollouts",
    "practice",
    "practice_key",
    "rollout_fn",
    "stable_seed",
    "task_key",
]

#: A practice stops after this many rollouts in a row whose agent failed without leaving a
#: run (a wrong API key, a client that will not start): retried, never counted.
MAX_BROKEN = 3
BROKEN = "the agent failed"
#: The most rollouts ``--jobs`` runs at once.
MAX_JOBS = 32
#: The values of ``--rc``.
RC_POLICIES = ("auto", "always", "never")

Progress = Callable[[str], None]


@attrs.frozen
class Budget:
    """When a practice stops starting rollouts: ``rollouts`` finished in the practice in
    all (across resumes), ``minutes`` of this invocation's wall time, ``tokens`` the
    client reported in all (a client that reports none is not limited by it)."""

    rollouts: int | None = None
    minutes: float | None = None
    tokens: int | None = None

    def __attrs_post_init__(self) -> None:
        for name in ("rollouts", "minutes", "tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or value <= 0):
                raise InvalidRecordError(f"the budget's {name} must be above 0, not {value!r}")

    def exhausted(self, done: int, tokens: int, elapsed_s: float) -> str | None:
        """Why no further rollout may start, or None."""
        if self.rollouts is not None and done >= self.rollouts:
            return f"--max-rollouts {self.rollouts} reached"
        if self.minutes is not None and elapsed_s >= self.minutes * 60:
            return f"--max-minutes {self.minutes:g} reached"
        if self.tokens is not None and tokens >= self.tokens:
            return f"--max-tokens {self.tokens} reached ({tokens} used)"
        return None


@attrs.frozen
class Planned:
    """One rollout to run: its task, round (0 plain, 1 conditioned), index, seed, the
    reward token it is conditioned on (None: plain) and the guidance that token puts
    before the prompt."""

    task: Task
    round: int
    idx: int
    seed: int
    condition: str | None = None
    guidance: str = ""


def stable_seed(*parts: object) -> int:
    """A seed that is the same on every machine and every run for the same ``parts``."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big") >> 1


def practice_key(tasks_path: str, agent: str, size: int, rc: str) -> str:
    """The key of a practice: the same task file, agent template, G and policy give the
    same practice (a task added to the file joins it; a changed one is practised anew,
    see :func:`task_key`)."""
    doc = {"tasks": tasks_path, "agent": agent, "size": size, "rc": rc}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode("utf-8")).hexdigest()[:32]


def task_key(task: Task) -> str:
    """A hash of ``task`` as read (prompt, commit resolved, check, timeout, ...): the
    rollouts of a task whose key changed are not counted for it any more."""
    doc = attrs.asdict(task, value_serializer=lambda _i, _a, v: _plain(v))
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def _plain(value: Any) -> Any:
    return str(value) if isinstance(value, Path) else value


def _plan_round(task: Task, rnd: int, size: int, conditioned: bool) -> list[Planned]:
    if not conditioned:
        return [Planned(task, rnd, i, stable_seed(task.id, rnd, i)) for i in range(size)]
    plan = plan_group(task.prompt, size, seed=stable_seed(task.id, rnd, "rc"))
    return [
        Planned(task, rnd, r.index, stable_seed(task.id, rnd, r.index), r.condition, r.prompt)
        for r in plan.rollouts
    ]


def next_rollouts(
    task: Task, size: int, rc: str, done: Sequence[Mapping[str, Any]]
) -> list[Planned]:
    """The rollouts of ``task`` still to run, given its finished ones ``done`` (rows with
    ``round``, ``idx``, ``success``): the rest of round 0 and, once round 0 is complete and
    degenerate under ``auto``, round 1 (pure)."""
    if rc not in RC_POLICIES:
        raise InvalidRecordError(f"--rc must be one of {', '.join(RC_POLICIES)}, not {rc!r}")
    finished = {(int(r["round"]), int(r["idx"])) for r in done}
    first = _plan_round(task, 0, size, rc == "always")
    todo = [p for p in first if (0, p.idx) not in finished]
    if todo or rc != "auto" or size < 2:
        return todo
    outcomes = {bool(r["success"]) for r in done if int(r["round"]) == 0}
    if len(outcomes) > 1:
        return []  # round 0 is mixed: the group teaches already
    return [p for p in _plan_round(task, 1, size, True) if (1, p.idx) not in finished]


@attrs.frozen
class PracticeReport:
    """What a practice did (``as_dict`` is the ``--json`` output)."""

    practice_id: int
    key: str
    tasks: tuple[dict[str, Any], ...]
    rollouts: int
    new_rollouts: int
    successes: int
    tokens: int | None
    cost_usd: float | None
    stopped: str | None
    heldout: tuple[str, ...]
    learned: dict[str, Any] | None
    #: Why no learning session ran (None when one did).
    not_learned: str | None = None
    #: The practice stopped because the agent kept failing without a run (exit status 1).
    agent_broken: bool = False

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    def lines(self) -> list[str]:
        """The summary for people."""
        out = [
            f"practice {self.practice_id}: {self.rollouts} rollouts "
            f"({self.new_rollouts} new), {self.successes} passed"
            + (f", {self.tokens} tokens" if self.tokens else "")
            + (f", ${self.cost_usd:.4f}" if self.cost_usd else "")
        ]
        for t in self.tasks:
            out.append(
                f"  {t['id']}: {t['successes']}/{t['rollouts']} passed, group {t['group']}"
                + (f" (conditioned round: {t['conditioned']})" if t["conditioned"] else "")
            )
        if self.heldout:
            out.append(f"  held out for eval: {', '.join(self.heldout)}")
        if self.stopped:
            out.append(f"stopped: {self.stopped}; then run the same command again to continue")
        if self.learned is None:
            out.append(f"learning: not run ({self.not_learned or 'nothing to learn'})")
        else:
            lessons = self.learned["lessons"]
            out.append(
                f"learning session {self.learned['session_id']}: {len(lessons)} lesson(s) "
                f"from {len(self.learned['groups'])} group(s)"
            )
            out += [f"  #{x['id']} {x['text']}" for x in lessons]
        return out


def practice(
    tasks: Sequence[Task],
    agent: Agent,
    db: Path,
    *,
    template: str,
    tasks_path: str,
    size: int = 4,
    rc: str = "auto",
    budget: Budget = Budget(),
    keep: bool = False,
    learn: bool = True,
    progress: Progress | None = None,
    jobs: int = 1,
) -> PracticeReport:
    """Practise ``tasks``' training half with ``agent``: see the module's docstring.

    ``template`` names the agent in the practice's key; ``learn=False`` stops after
    the rollouts (a later run of the same command learns). ``jobs``: how many rollouts of
    one task's round run at once, each in its workspace (:func:`_roll_out_all`); the
    practice's key, plan and records are the same whatever it is."""
    from ..memory import Memory

    say = progress or (lambda _m: None)
    _check_options(size, rc, jobs)
    train = [t for t in tasks if t.split == "train"]
    heldout = tuple(t.id for t in tasks if t.split == "heldout")
    key = practice_key(tasks_path, template, size, rc)
    with Memory.open(db) as mem, write(mem.db):
        pid = store.start(
            mem.db,
            key,
            tasks_path=mem.redactor.text(tasks_path),
            agent=mem.redactor.text(template),
            size=size,
            rc=rc,
            options={"heldout": list(heldout)},
        )
        _set_aside_changed(mem, pid, train)
    new, stopped = _roll_out_all(train, agent, db, pid, size, rc, budget, keep, say, jobs)
    with Memory.open(db) as mem:
        rows = store.rollouts(mem.db, pid)
        summary = [_task_summary(t, rows, size) for t in train]
        learned = None
        mixed = [group_key(t) for t, s in zip(train, summary, strict=True) if s["group"] == "mixed"]
        grouping = mem.learning_groups("exact")
        fresh = [g.key for g in grouping.groups if g.key in mixed and not g.learned]
        not_learned = (
            "no mixed group yet"
            if not mixed
            else "--no-learn"
            if not learn
            else "every mixed group was learned before with these runs"
            if not fresh
            else None
        )
        if not_learned is None:
            say(f"learning from {len(fresh)} group(s): {', '.join(fresh)}")
            learned = _learn(mem, pid, fresh)
    tokens = [int(r["tokens"]) for r in rows if r["tokens"] is not None]
    costs = [float(r["cost_usd"]) for r in rows if r["cost_usd"] is not None]
    return PracticeReport(
        practice_id=pid,
        key=key,
        tasks=tuple(summary),
        rollouts=len(rows),
        new_rollouts=new,
        successes=sum(1 for r in rows if r["success"]),
        tokens=sum(tokens) if tokens else None,
        cost_usd=sum(costs) if costs else None,
        stopped=stopped,
        heldout=heldout,
        learned=learned,
        not_learned=not_learned,
        agent_broken=bool(stopped and stopped.startswith(BROKEN)),
    )


def _check_options(size: int, rc: str, jobs: int) -> None:
    """Refuse a G, an RC-GRPO policy or a ``--jobs`` that is out of range, saying why."""
    if not isinstance(jobs, int) or isinstance(jobs, bool) or not 1 <= jobs <= MAX_JOBS:
        raise InvalidRecordError(
            f"--jobs must be a whole number from 1 to {MAX_JOBS}, not {jobs!r}"
        )
    if not isinstance(size, int) or isinstance(size, bool) or not 2 <= size <= 64:
        raise InvalidRecordError(
            f"--size must be a whole number from 2 to 64, not {size!r}: a group compares at "
            "least two rollouts of a task (the paper's G is 4 to 8)"
        )
    if rc not in RC_POLICIES:
        raise InvalidRecordError(f"--rc must be one of {', '.join(RC_POLICIES)}, not {rc!r}")


def estimate(
    tasks: Sequence[Task], db: Path, *, template: str, tasks_path: str, size: int, rc: str
) -> dict[str, Any]:
    """What ``practice`` with these arguments would still run, without running anything:
    ``next`` rollouts planned now, ``at_most`` in all (with a conditioned group for every
    task whose first group is not finished yet, under ``auto``), ``at_most_s`` their
    timeouts added up, and ``done`` (rollouts finished before that still count)."""
    from ..memory import Memory

    train = [t for t in tasks if t.split == "train"]
    with Memory.open(db) as mem:
        found = store.find(mem.db, practice_key(tasks_path, template, size, rc))
        rows = store.rollouts(mem.db, int(found["id"])) if found else []
    done = now_n = at_most = 0
    at_most_s = 0.0
    for task in train:
        mine = _of(task, rows)
        now = next_rollouts(task, size, rc, mine)
        more = size if rc == "auto" and now and all(p.round == 0 for p in now) else 0
        done += len(mine)
        now_n += len(now)
        at_most += len(now) + more
        at_most_s += (len(now) + more) * task.timeout_s
    out = {"practice_id": found["id"] if found else None, "tasks": len(train), "done": done}
    out.update(next=now_n, at_most=at_most, at_most_s=at_most_s)
    return out


def _of(task: Task, rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rollouts of ``task`` as it reads now."""
    key = task_key(task)
    return [r for r in rows if r["task_id"] == task.id and r["task_key"] == key]


def _set_aside_changed(mem: Any, pid: int, train: Sequence[Task]) -> None:
    """Move the runs of a task that changed since they ran (its prompt, commit, check) out
    of its group, to ``practice:<id>@<old key>``: a group compares runs of one task."""
    from ..storage.trajectories import set_group

    current = {t.id: task_key(t) for t in train}
    stale: dict[str, list[int]] = {}
    for r in store.rollouts(mem.db, pid):
        now = current.get(r["task_id"])
        if now is not None and r["task_key"] != now and r["trajectory_id"] is not None:
            stale.setdefault(f"{r['task_id']}@{r['task_key'][:8]}", []).append(r["trajectory_id"])
    for label, ids in stale.items():
        set_group(mem.db, ids, f"practice:{label}")


def _roll_out_all(
    train: Sequence[Task],
    agent: Agent,
    db: Path,
    pid: int,
    size: int,
    rc: str,
    budget: Budget,
    keep: bool,
    say: Progress,
    jobs: int = 1,
) -> tuple[int, str | None]:
    """Run every training task's planned rollouts, task by task (a complete group is worth
    more than many partial ones), until the budget says stop: (rollouts run, why stopped).

    With ``jobs`` above 1, up to that many rollouts of a task's round run at once, each in
    its own workspace and thread (a BFCL task's run one at a time), as many as the
    rollout budget leaves; their results are recorded in the plan's order (round, index),
    whichever finished first, so a practice's rows, runs and seeds are the ones it would
    have had one by one. A rollout that finished is recorded even when another of its
    batch stops the practice (Ctrl-C, a misconfigured agent); on Ctrl-C the others'
    agents are killed first (:meth:`~agentmem.practice.cli_agent.CliAgent.stop`)."""
    from ..memory import Memory

    started = time.monotonic()
    new = broken = 0
    for repo in {t.repo: t for t in train if t.commit}.values():
        prune(repo)
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="rollout") if jobs > 1 else None

    def record(p: Planned, outcome: Outcome) -> None:
        nonlocal new
        _store(db, pid, p, outcome)
        new += 1
        say(
            f"{_label(p, size)}: {'passed' if outcome.success else 'failed'} in "
            f"{outcome.wall_s:.1f} s"
            + (f" ({outcome.error})" if outcome.error else "")
            + (f", kept in {outcome.meta['workspace']}" if "workspace" in outcome.meta else "")
        )

    try:
        for task in train:
            while True:
                with Memory.open(db) as mem:
                    rows = store.rollouts(mem.db, pid)
                todo = next_rollouts(task, size, rc, _of(task, rows))
                if not todo:
                    break
                tokens = sum(int(r["tokens"] or 0) for r in rows)
                stopped = budget.exhausted(len(rows), tokens, time.monotonic() - started)
                if stopped is not None:
                    return new, stopped
                room = 1 if pool is None or task.bfcl else jobs
                if budget.rollouts is not None:
                    room = min(room, budget.rollouts - len(rows))
                batch = todo[:room]
                for p in batch:
                    say(
                        f"{_label(p, size)}: running"
                        + (f" ({_token_name(p.condition)})" if p.condition else "")
                    )
                done = _run_batch(pool, agent, batch, db, keep, record)
                broken, why = _take(done, broken, size, record, say)
                if why is not None:
                    return new, why
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    return new, None


def _take(
    done: Sequence[tuple[Planned, Outcome]],
    broken: int,
    size: int,
    record: Callable[[Planned, Outcome], None],
    say: Progress,
) -> tuple[int, str | None]:
    """Record a batch's outcomes in order, but not those whose agent failed without a run
    (no data point: tried again); with ``broken`` such rollouts in a row before, (how many
    in a row now, why the practice stops or None): after :data:`MAX_BROKEN` in a row."""
    why = None
    for p, outcome in done:
        if outcome.run_id is None and outcome.error:
            broken += 1  # the agent did not run (no run): not the task's failure
            say(f"{_label(p, size)}: the agent failed without a run, not counted ({outcome.error})")
            if broken >= MAX_BROKEN and why is None:
                why = (
                    f"{BROKEN} {broken} times in a row without a run (last: "
                    f"{outcome.error[:300]}); fix it"
                )
            continue
        broken = 0
        record(p, outcome)
    return broken, why


def _label(p: Planned, size: int) -> str:
    return f"{p.task.id} round {p.round} #{p.idx + 1}/{size}"


def _run_batch(
    pool: ThreadPoolExecutor | None,
    agent: Agent,
    batch: Sequence[Planned],
    db: Path,
    keep: bool,
    record: Callable[[Planned, Outcome], None],
) -> list[tuple[Planned, Outcome]]:
    """The rollouts of ``batch``, run at once on ``pool`` (one by one without one), with
    their outcomes in ``batch``'s order. When one raises (Ctrl-C, a misconfigured agent),
    the others are stopped (Ctrl-C: their agents killed) or waited for, those that
    finished with a run are recorded with ``record``, and the exception goes on."""
    if pool is None or len(batch) == 1:
        return [(p, _roll_out(agent, p, db, keep)) for p in batch]
    futures = [pool.submit(_roll_out, agent, p, db, keep) for p in batch]
    try:
        return [(p, f.result()) for p, f in zip(batch, futures, strict=True)]
    except BaseException as e:
        if not isinstance(e, Exception):  # Ctrl-C or a kill: the agents do not outlive it
            stop = getattr(agent, "stop", None)
            if callable(stop):
                stop()
        wait(futures)
        for p, f in zip(batch, futures, strict=True):
            if not f.cancelled() and f.exception() is None:
                outcome = f.result()
                if outcome.run_id is not None or not outcome.error:
                    record(p, outcome)
        raise


def _token_name(condition: str | None) -> str:
    return (condition or "").strip("<|>") or "plain"


def _roll_out(agent: Agent, p: Planned, db: Path, keep: bool) -> Outcome:
    """One rollout in a workspace of its own. A workspace that cannot be made, or an agent
    that raises (a misconfigured one: the protocol's agents never raise for a rollout that
    merely failed), stops the practice: nothing of that rollout is stored, and the same
    command runs it again once the cause is fixed."""
    with workspace(p.task, keep=keep) as ws:
        outcome = agent.run(p.task, ws, p.guidance, p.seed, db)
    if keep and ws is not None:
        outcome = attrs.evolve(outcome, meta={**outcome.meta, "workspace": str(ws)})
    return outcome


def _store(db: Path, pid: int, p: Planned, outcome: Outcome) -> None:
    """Attach the reward token to the rollout's run (a stub when it has none) and write
    the rollout's row: the row last, so a rollout without one is run again."""
    from ..memory import Memory

    facts = {"round": p.round, "idx": p.idx, "seed": p.seed, "practice": pid}
    with Memory.open(db) as mem:
        run_id = outcome.run_id
        if run_id is None:
            run_id = stub(
                mem, p.task, why=outcome.error or "the agent recorded no run", facts=facts
            )
            attach(mem, run_id, p.task, success=outcome.success, condition=p.condition, facts=facts)
        else:
            attach(
                mem,
                run_id,
                p.task,
                success=outcome.success,
                condition=p.condition,
                facts=facts,
                verdict=False,
            )
        row = {
            "task_id": p.task.id,
            "task_key": task_key(p.task),
            "round": p.round,
            "idx": p.idx,
            "seed": p.seed,
            "condition": p.condition,
            "reward": outcome.reward,
            "success": int(outcome.success),
            "wall_s": outcome.wall_s,
            "tokens": outcome.tokens,
            "cost_usd": outcome.cost_usd,
            "trajectory_id": run_id,
            "error": None if outcome.error is None else mem.redactor.text(outcome.error),
            "meta": redacted(mem, outcome.meta),
        }
        with write(mem.db):
            store.add_rollout(mem.db, pid, row)


def _task_summary(task: Task, rows: Sequence[Mapping[str, Any]], size: int) -> dict[str, Any]:
    mine = _of(task, rows)
    wins = sum(1 for r in mine if r["success"])
    rounds = {int(r["round"]) for r in mine}
    if len(mine) < 2:
        group = "incomplete"
    elif 0 < wins < len(mine):
        group = "mixed"
    elif len([r for r in mine if int(r["round"]) == 0]) < size:
        group = "incomplete"
    else:
        group = "degenerate"
    cond = [r for r in mine if r["condition"]]
    return {
        "id": task.id,
        "rollouts": len(mine),
        "successes": wins,
        "rounds": sorted(rounds),
        "group": group,
        "conditioned": (
            f"{sum(1 for r in cond if r['success'])}/{len(cond)} passed" if cond else None
        ),
        "errors": [r["error"] for r in mine if r["error"]][:3],
    }


def _learn(mem: Any, pid: int, keys: Sequence[str]) -> dict[str, Any]:
    from ..learning.report import LearnOptions

    options = LearnOptions.of_library(mem.db, groups=tuple(keys), grouping="exact")
    report = mem.learn(options=options)
    with write(mem.db):
        store.learned(mem.db, pid, report.session_id)
    lessons = [
        {"id": a.result_id, "op": a.op.kind, "text": a.op.text, "group": a.op.group}
        for a in report.operations
        if a.status == "applied" and a.op.kind in ("ADD", "MODIFY", "MERGE") and a.result_id
    ]
    held = [
        {"op": a.op.kind, "text": a.op.text, "reason": a.reason}
        for a in report.operations
        if a.status != "applied"
    ]
    return {
        "session_id": report.session_id,
        "groups": [g.key for g in report.groups],
        "lessons": lessons,
        "not_applied": held,
    }


def rollout_fn(
    agent: Agent, db: Path, *, keep: bool = False
) -> Callable[[Task, str, int], Outcome]:
    """The rollout machinery as ``rollout(task, guidance, seed) -> Outcome``: a fresh
    workspace, the agent, the check, the run recorded with its reward (a held-out task's
    run in a group of its own, :func:`agentmem.practice.record.group_key`). For
    :mod:`agentmem.practice.evaluate`'s with/without comparison."""

    def rollout(task: Task, guidance: str, seed: int) -> Outcome:
        p = Planned(task, 0, 0, seed, None, guidance)
        return _roll_out(agent, p, db, keep)

    return rollout
