"""The held-out effect: were the lessons worth it, on tasks they were not learned from?

For every held-out task and seed, :func:`evaluate` runs one rollout WITH the lessons the
library serves for the task's prompt and one WITHOUT any (the same seed), so each pair
differs in the lessons only. From the pairs it reports both success rates, the paired
difference with Newcombe's interval and McNemar's exact test
(:mod:`agentmem.practice.stats`), what the rollouts cost, and, for each lesson, the
pairs it was served in (its credit) and their outcome.

The lessons come through the public serving path (:meth:`Memory.retrieve` then
:meth:`Memory.serve_hits`, which is :meth:`Memory.context` with the ids kept): the
holdout and the served log apply as in everyday use (route ``practice-eval``).

**A harmful lesson** is one whose own pairs (those it was served in) say "hurts" by the
rules of :func:`~agentmem.practice.stats.paired_effect`: at least 6 discordant pairs from
at least 3 tasks, more losses than wins with McNemar's p < 0.05, and a Newcombe interval
below 0. Lessons served together share their pairs, so a loss is not blamed on each of
them: the candidates are taken worst first (the largest drop in success rate, then the
smallest p-value), and each next one is judged again on its pairs without a lesson
already retired; one whose harm was the other's is kept. Two lessons served in exactly
the same pairs cannot be told apart: neither is retired, and the report says so (an
evaluation with other tasks, or a smaller ``k``, separates them). A harmful lesson is retired as
``agentmem rm`` removes one: a curation session in the journal (the reason in its
note), undone by ``agentmem undo SESSION``.

Hostile input never stops the rest: a rollout that raises is reported, and its pair is
left out (counted in ``skipped``), as is a task that is not held out. ``checkpoint``
(a JSON-lines file) keeps every finished pair, so an evaluation killed half-way resumes
without paying for them again: a pair is reused when its task, seed and guidance are the
same.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from .stats import Effect, Pair, paired_effect
from .types import Outcome, Task

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = [
    "ROUTE",
    "EvalReport",
    "LessonCredit",
    "PairResult",
    "Rollout",
    "confounded",
    "evaluate",
    "guidance_for",
    "harmful",
    "render",
    "retire",
]

#: A rollout of a task with this guidance (empty: none) and seed.
Rollout = Callable[[Task, str, int], Outcome]
#: The served log's route for the lessons an evaluation serves.
ROUTE = "practice-eval"


@attrs.frozen
class PairResult:
    """One held-out task and seed, run WITH ``lessons`` (the ids served) and WITHOUT."""

    task_id: str
    seed: int
    lessons: tuple[int, ...]
    with_lessons: Outcome
    without: Outcome

    @property
    def pair(self) -> Pair:
        return Pair(self.task_id, self.seed, self.with_lessons.success, self.without.success)


@attrs.frozen
class LessonCredit:
    """One lesson's held-out record: the pairs it was served in and what they say."""

    id: int
    text: str
    pairs: tuple[Pair, ...]
    effect: Effect
    harmful: bool = False
    #: The curation session that retired it (None: kept, or not retired on request).
    retired_session: int | None = None
    #: Lessons served in exactly the same pairs: its effect is theirs too.
    confounded_with: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "served_in": [
                {"task": p.task_id, "seed": p.seed, "with": p.with_lessons, "without": p.without}
                for p in self.pairs
            ],
            "effect": self.effect.to_dict(),
            "harmful": self.harmful,
            "retired_session": self.retired_session,
            "confounded_with": list(self.confounded_with),
        }


@attrs.frozen
class EvalReport:
    """What an evaluation found (see the module doc); :func:`render` prints it."""

    pairs: tuple[PairResult, ...]
    overall: Effect
    lessons: tuple[LessonCredit, ...]
    seeds: tuple[int, ...]
    #: ``task/seed: why`` for each pair left out (a rollout that raised, a task not held out).
    skipped: tuple[str, ...] = ()
    #: Whether harmful lessons were retired (False: reported only).
    retire: bool = True
    reused: int = 0

    @property
    def served_pairs(self) -> int:
        return sum(1 for p in self.pairs if p.lessons)

    def cost(self) -> dict[str, Any]:
        outs = [o for p in self.pairs for o in (p.with_lessons, p.without)]
        tokens = [o.tokens for o in outs if o.tokens is not None]
        usd = [o.cost_usd for o in outs if o.cost_usd is not None]
        return {
            "rollouts": len(outs),
            "wall_s": round(sum(o.wall_s for o in outs), 3),
            "tokens": sum(tokens) if tokens else None,
            "cost_usd": round(sum(usd), 6) if usd else None,
            "errors": sum(1 for o in outs if o.error),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks": len({p.task_id for p in self.pairs}),
            "seeds": list(self.seeds),
            "pairs": len(self.pairs),
            "served_pairs": self.served_pairs,
            "overall": self.overall.to_dict(),
            "cost": self.cost(),
            "lessons": [c.to_dict() for c in self.lessons],
            "retired": [
                {"id": c.id, "session": c.retired_session}
                for c in self.lessons
                if c.retired_session is not None
            ],
            "retire": self.retire,
            "skipped": list(self.skipped),
            "reused": self.reused,
            "results": [
                {
                    "task": p.task_id,
                    "seed": p.seed,
                    "lessons": list(p.lessons),
                    "with": _outcome_dict(p.with_lessons),
                    "without": _outcome_dict(p.without),
                }
                for p in self.pairs
            ],
        }


def guidance_for(mem: Memory, task: Task, *, k: int = 5) -> tuple[str, tuple[int, ...]]:
    """The lessons the library serves for ``task``'s prompt, as the text put before it,
    and their experience ids (team lessons have none); ``("", ())`` when nothing fits or
    the project is paused. The same path as :meth:`Memory.context`."""
    from ..retrieval import format_context
    from ..team.reads import mark

    project = task.project or (str(task.repo) if task.repo is not None else None)
    if mem.project_state(project) is not None:
        return "", ()
    hits = mem.retrieve(task.prompt, k=k, project=project)
    hits = mem.serve_hits(task.prompt, hits, route=ROUTE, project=project)
    text = format_context([mark(h.experience.text, h.source) for h in hits])
    ids = tuple(h.experience.id for h in hits if h.source == "private" and h.experience.id)
    return text, ids


def _outcome_dict(o: Outcome) -> dict[str, Any]:
    d = attrs.asdict(o)
    d["lessons"] = list(o.lessons)
    d["meta"] = dict(o.meta)
    return d


def _outcome(d: dict[str, Any]) -> Outcome:
    fields = {f.name for f in attrs.fields(Outcome)}
    d = {k: v for k, v in d.items() if k in fields}
    d["lessons"] = tuple(int(i) for i in d.get("lessons") or ())
    d["meta"] = {str(k): str(v) for k, v in (d.get("meta") or {}).items()}
    return Outcome(**d)


def _key(task_id: str, seed: int, guidance: str) -> str:
    g = hashlib.sha256(guidance.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{task_id}\x00{seed}\x00{g}"


def _read_checkpoint(path: Path | None) -> dict[str, PairResult]:
    """The finished pairs of an earlier run of the same evaluation; a line that is not
    one is skipped."""
    if path is None or not path.is_file():
        return {}
    out: dict[str, PairResult] = {}
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                d = json.loads(line)
                p = PairResult(
                    str(d["task"]),
                    int(d["seed"]),
                    tuple(int(i) for i in d["lessons"]),
                    _outcome(d["with"]),
                    _outcome(d["without"]),
                )
                out[str(d["key"])] = p
            except (ValueError, KeyError, TypeError):
                continue
    return out


def _append_checkpoint(path: Path | None, key: str, p: PairResult) -> None:
    if path is None:
        return
    line = {
        "key": key,
        "task": p.task_id,
        "seed": p.seed,
        "lessons": list(p.lessons),
        "with": _outcome_dict(p.with_lessons),
        "without": _outcome_dict(p.without),
    }
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(line, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _run_pair(
    rollout: Rollout, task: Task, guidance: str, seed: int, first_with: bool
) -> tuple[Outcome, Outcome]:
    """Both arms of one pair; the order alternates so neither arm always goes first."""
    if first_with:
        w = rollout(task, guidance, seed)
        return w, rollout(task, "", seed)
    wo = rollout(task, "", seed)
    return rollout(task, guidance, seed), wo


def harmful(
    pairs: Sequence[PairResult], *, min_discordant: int = 6, min_tasks: int = 3
) -> list[int]:
    """The lessons whose held-out effect is harmful, in the order they would be retired
    (see the module doc). A lesson served in exactly the same pairs as another harmful
    one is never retired: the pairs cannot tell which of them did the harm
    (:func:`confounded` names them). Pure."""
    ids = sorted({i for p in pairs for i in p.lessons})
    out: list[int] = []
    while True:
        gone = set(out)
        candidates = []
        for eid in ids:
            if eid in gone:
                continue
            own = [p for p in pairs if eid in p.lessons and not gone & set(p.lessons)]
            e = paired_effect(
                (p.pair for p in own), min_discordant=min_discordant, min_tasks=min_tasks
            )
            if e.verdict == "hurts":  # the worst harm per serving first, then the surest
                keys = frozenset((p.task_id, p.seed) for p in own)
                candidates.append((e.difference or 0.0, e.p_value, eid, keys))
        seen: dict[frozenset[tuple[str, int]], int] = {}
        for c in candidates:
            seen[c[3]] = seen.get(c[3], 0) + 1
        clear = [c for c in candidates if seen[c[3]] == 1]
        if not clear:
            return out
        out.append(min(clear, key=lambda c: (c[0], c[1], c[2]))[2])


def confounded(pairs: Sequence[PairResult]) -> dict[int, tuple[int, ...]]:
    """For each lesson served in exactly the same pairs as others: those others."""
    served: dict[int, frozenset[tuple[str, int]]] = {}
    for eid in sorted({i for p in pairs for i in p.lessons}):
        served[eid] = frozenset((p.task_id, p.seed) for p in pairs if eid in p.lessons)
    return {
        eid: others
        for eid, keys in served.items()
        if (others := tuple(o for o, k in served.items() if o != eid and k == keys))
    }


def retire(mem: Memory, ids: Iterable[int], why: dict[int, str]) -> dict[int, int]:
    """Remove each lesson as ``agentmem rm`` does (one journaled curation session each,
    the reason in its note); lesson id -> the session that removed it (``agentmem undo
    SESSION`` brings it back). A lesson already gone is skipped."""
    from ..errors import UnknownExperienceError

    done: dict[int, int] = {}
    for eid in ids:
        try:
            mem.remove(eid, note=why.get(eid, "retired: harmful held-out effect"))
        except UnknownExperienceError:
            continue
        done[eid] = _removing_session(mem, eid)
    return done


def _removing_session(mem: Memory, eid: int) -> int:
    """The curation session that just removed lesson ``eid``."""
    sessions = [s for s in mem.sessions() if s.get("kind") == "curate"]
    for s in reversed(sessions):
        ops = mem.journal(int(s["id"]))
        if any(o["kind"] == "DELETE" and eid in (o["target_ids"] or ()) for o in ops):
            return int(s["id"])
    raise LookupError(f"no session removed lesson {eid}")  # pragma: no cover - just removed it


def evaluate(
    mem: Memory,
    tasks: Iterable[Task],
    rollout: Rollout,
    seeds: Sequence[int],
    *,
    k: int = 5,
    retire_harmful: bool = True,
    checkpoint: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> EvalReport:
    """Run each held-out task of ``tasks`` with and without the lessons for every seed
    of ``seeds`` and report the effect (see the module doc). ``k``: the most lessons a
    prompt gets. With ``retire_harmful``, harmful lessons are retired through the
    journal; without, they are only reported."""
    from ..errors import InvalidRecordError

    seeds = tuple(int(s) for s in seeds)
    if not seeds:
        raise InvalidRecordError("an evaluation needs at least one seed")
    tasks = list(tasks)
    held = [t for t in tasks if t.split == "heldout"]
    if not held:
        raise InvalidRecordError(
            f"none of the {len(tasks)} task(s) is held out: mark some with split 'heldout' "
            "(lessons are learned on 'train' and judged on 'heldout')"
        )
    skipped = [f"{t.id}: not a held-out task (split {t.split})" for t in tasks if t not in held]
    path = Path(checkpoint) if checkpoint is not None else None
    run = _Run(mem, rollout, k, path, _read_checkpoint(path), progress or (lambda _m: None))
    for ti, task in enumerate(held):
        run.task(task, ti, seeds, len(held) * len(seeds))
    results = run.results
    bad = harmful(results)
    why = {
        eid: "retired by practice eval: harmful held-out effect "
        f"({_lesson_effect(results, eid).why})"
        for eid in bad
    }
    sessions = retire(mem, bad, why) if retire_harmful and bad else {}
    together = confounded(results)
    credits = tuple(
        LessonCredit(
            eid,
            run.texts.get(eid, ""),
            tuple(p.pair for p in results if eid in p.lessons),
            _lesson_effect(results, eid),
            eid in bad,
            sessions.get(eid),
            together.get(eid, ()),
        )
        for eid in sorted({i for p in results for i in p.lessons})
    )
    overall = paired_effect(p.pair for p in results)
    return EvalReport(
        tuple(results),
        overall,
        credits,
        seeds,
        (*skipped, *run.skipped),
        retire_harmful,
        run.reused,
    )


@attrs.define
class _Run:
    """The pairs of one evaluation as they are run (or found in the checkpoint)."""

    mem: Memory
    rollout: Rollout
    k: int
    path: Path | None
    done: dict[str, PairResult]
    say: Callable[[str], None]
    results: list[PairResult] = attrs.field(factory=list)
    skipped: list[str] = attrs.field(factory=list)
    texts: dict[int, str] = attrs.field(factory=dict)
    reused: int = 0

    def task(self, task: Task, ti: int, seeds: Sequence[int], total: int) -> None:
        """Every seed of ``task``, with the lessons served for it now and without."""
        guidance, ids = guidance_for(self.mem, task, k=self.k)
        for eid in ids:
            self.texts.setdefault(eid, self.mem.get_experience(eid).text)
        for seed in seeds:
            key = _key(task.id, seed, guidance)
            if key in self.done:
                self.results.append(self.done[key])
                self.reused += 1
                continue
            n = len(self.results) + 1
            try:
                w, wo = _run_pair(self.rollout, task, guidance, seed, (ti + seed) % 2 == 0)
            except Exception as e:  # a broken rollout never stops the rest
                self.skipped.append(f"{task.id}/{seed}: the rollout raised {type(e).__name__}: {e}")
                self.say(f"pair {n}/{total}: {task.id} seed {seed} raised: {e}")
                continue
            p = PairResult(task.id, seed, ids, w, wo)
            self.results.append(p)
            _append_checkpoint(self.path, key, p)
            self.say(
                f"pair {n}/{total}: {task.id} seed {seed}: "
                f"with {'ok' if w.success else 'fail'}, without {'ok' if wo.success else 'fail'}"
                f" ({len(ids)} lesson(s))"
            )


def _lesson_effect(results: Sequence[PairResult], eid: int) -> Effect:
    return paired_effect(p.pair for p in results if eid in p.lessons)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _pts(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}"


def render(report: EvalReport) -> str:
    """The report as a person reads it."""
    d = report.to_dict()
    o, t = report.overall, report.overall.table
    lines = [
        f"held-out effect: {d['tasks']} task(s) x {len(report.seeds)} seed(s) = "
        f"{d['pairs']} pairs (lessons served in {report.served_pairs})",
        f"  with lessons:  {t.both + t.wins}/{t.n} succeeded ({_pct(t.with_rate)})",
        f"  without:       {t.both + t.losses}/{t.n} succeeded ({_pct(t.without_rate)})",
        f"  difference:    {_pts(o.difference)} points, 95% CI [{_pts(o.ci[0])}, {_pts(o.ci[1])}]"
        " (Newcombe, paired)",
        f"  McNemar exact: p = {o.p_value:.4g} (wins {t.wins}, losses {t.losses})",
        f"  verdict:       {o.verdict}: {o.why}",
    ]
    c = d["cost"]
    spent = f"  cost:          {c['rollouts']} rollouts, {c['wall_s']:.1f} s"
    if c["tokens"] is not None:
        spent += f", {c['tokens']} tokens"
    if c["cost_usd"] is not None:
        spent += f", ${c['cost_usd']:.4f}"
    if c["errors"]:
        spent += f", {c['errors']} rollout(s) with an error (counted as failures)"
    if report.reused:
        spent += f"; {report.reused} pair(s) reused from the checkpoint"
    lines.append(spent)
    if report.lessons:
        lines.append("lessons (the held-out pairs each was served in):")
    for cr in report.lessons:
        lt = cr.effect.table
        state = ""
        if cr.retired_session is not None:
            state = (
                f" -> retired (session {cr.retired_session}; agentmem undo {cr.retired_session})"
            )
        elif cr.harmful:
            state = " -> harmful (not retired: --no-retire)"
        elif cr.confounded_with and cr.effect.verdict == "hurts":
            with_ = ", ".join(map(str, cr.confounded_with))
            state = f" -> kept: always served with {with_}, the pairs cannot tell which hurts"
        lines.append(
            f"  [{cr.id}] {len(cr.pairs)} pair(s) from {cr.effect.tasks} task(s): wins {lt.wins}, "
            f"losses {lt.losses}, both {lt.both}, neither {lt.neither}: {cr.effect.verdict}{state}"
        )
        lines.append(f"       {cr.text}")
    for s in report.skipped:
        lines.append(f"  skipped {s}")
    return "\n".join(lines)
