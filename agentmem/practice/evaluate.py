"""The held-out effect: were the lessons worth it, on tasks they were not learned from?

For every held-out task and seed, :func:`evaluate` runs one rollout WITH the lessons the
library serves for the task's prompt and one WITHOUT any (the same seed), so each pair
differs in the lessons only. From the pairs it reports both success rates, the paired
difference with Newcombe's interval and McNemar's exact test
(:mod:`agentmem.practice.stats`), what the rollouts cost, and, for each lesson, the
pairs it was served in (its credit) and their outcome.

The lessons come through the public serving path (:meth:`Memory.serve`, which
:meth:`Memory.context` formats): the filters (the claim check), the holdout and the
served log apply as in everyday use (route ``practice-eval``).

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

**Ablation** (``ablate``): a lesson served beside others shares their pairs. Run once
more without each of the lessons served (the same seed, the rest of the guidance as it
was), a pair judges each lesson on its own: with all of them against all but that one
(:meth:`PairResult.own`). It costs one rollout per lesson served per pair, and it is
what tells a harmful lesson from the good ones it is served with.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ..jsonsafe import loads
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
    #: With ``ablate``: lesson id -> the rollout with every served lesson but that one.
    ablations: Mapping[int, Outcome] = attrs.field(factory=dict)

    @property
    def pair(self) -> Pair:
        return Pair(self.task_id, self.seed, self.with_lessons.success, self.without.success)

    def to_dict(self) -> dict[str, Any]:
        """The pair as the report's ``results`` and the checkpoint's lines write it."""
        return {
            "task": self.task_id,
            "seed": self.seed,
            "lessons": list(self.lessons),
            "with": _outcome_dict(self.with_lessons),
            "without": _outcome_dict(self.without),
            "ablations": {str(i): _outcome_dict(o) for i, o in self.ablations.items()},
        }

    def own(self, eid: int) -> tuple[Pair, bool]:
        """The pair that judges lesson ``eid`` here, and whether it isolates it: with
        all the lessons against all but ``eid`` when that arm was run, else with against
        without (isolating only when ``eid`` was served alone)."""
        if eid in self.ablations:
            w, wo = self.with_lessons.success, self.ablations[eid].success
            return Pair(self.task_id, self.seed, w, wo), True
        return self.pair, self.lessons == (eid,)


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
    #: How many of its pairs judge it alone (served alone, or an ablation arm).
    isolated: int = 0
    #: For each pair, what its other arm had: ``none`` (no lesson) or ``the others``
    #: (every lesson served but this one: an ablation).
    against: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "served_in": [
                {
                    "task": p.task_id,
                    "seed": p.seed,
                    "with": p.with_lessons,
                    "without": p.without,
                    "other_arm": other,
                }
                for p, other in zip(
                    self.pairs, self.against or ["none"] * len(self.pairs), strict=True
                )
            ],
            "effect": self.effect.to_dict(),
            "harmful": self.harmful,
            "retired_session": self.retired_session,
            "confounded_with": list(self.confounded_with),
            "isolated": self.isolated,
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
    #: Why the evaluation stopped before every pair ran (None: it ran them all).
    stopped: str | None = None

    @property
    def served_pairs(self) -> int:
        return sum(1 for p in self.pairs if p.lessons)

    def cost(self) -> dict[str, Any]:
        outs = [o for p in self.pairs for o in (p.with_lessons, p.without, *p.ablations.values())]
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
            "stopped": self.stopped,
            "results": [p.to_dict() for p in self.pairs],
        }


def guidance_for(mem: Memory, task: Task, *, k: int = 5) -> tuple[str, tuple[int, ...]]:
    """The lessons the library serves for ``task``'s prompt, as the text put before it,
    and their experience ids (team lessons have none); ``("", ())`` when nothing fits or
    the project is paused. The same path as :meth:`Memory.context`."""
    served = _served(mem, task, k)
    return _text(served), tuple(i for i, _ in served if i is not None)


def _served(mem: Memory, task: Task, k: int) -> list[tuple[int | None, str]]:
    """The lessons served for ``task``, in order: (experience id or None, text as shown):
    :meth:`Memory.serve` (a paused project's nothing, the filters, the holdout, the served
    log under the route ``practice-eval``)."""
    from ..serving import Query
    from ..team.reads import mark

    project = task.project or (str(task.repo) if task.repo is not None else None)
    served = mem.serve(Query(task.prompt, k=k, project=project, route=ROUTE))
    return [(x.id, mark(x.text, x.source)) for x in served.lessons]


def _text(served: Sequence[tuple[int | None, str]], *, leave_out: int | None = None) -> str:
    from ..retrieval import format_context

    return format_context([t for i, t in served if leave_out is None or i != leave_out])


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


def _read_checkpoint(path: Path | None) -> tuple[dict[str, PairResult], int]:
    """The finished pairs of an earlier run of the same evaluation, and how many lines
    were not one (skipped: a torn last line, an edit)."""
    if path is None or not path.is_file():
        return {}, 0
    out: dict[str, PairResult] = {}
    bad = 0
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                d = loads(line, what="a checkpoint line")
                p = PairResult(
                    str(d["task"]),
                    int(d["seed"]),
                    tuple(int(i) for i in d["lessons"]),
                    _outcome(d["with"]),
                    _outcome(d["without"]),
                    {int(i): _outcome(o) for i, o in (d.get("ablations") or {}).items()},
                )
                out[str(d["key"])] = p
            except (ValueError, KeyError, TypeError, AttributeError):
                bad += 1
    return out, bad


def _append_checkpoint(path: Path | None, key: str, p: PairResult) -> None:
    if path is None:
        return
    line = {"key": key, **p.to_dict()}
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
    (see the module doc). Each lesson is judged on its own pairs
    (:meth:`PairResult.own`). A lesson served in exactly the same pairs as another
    harmful one, with no ablation to tell them apart, is never retired
    (:func:`confounded` names them). Pure."""
    ids = sorted({i for p in pairs for i in p.lessons})
    out: list[int] = []
    while True:
        gone = set(out)
        candidates = []
        for eid in ids:
            if eid in gone:
                continue
            judged = [
                (pair, alone)
                for p in pairs
                if eid in p.lessons
                for pair, alone in [p.own(eid)]
                if alone or not gone & set(p.lessons)
            ]
            e = paired_effect(
                (pair for pair, _ in judged), min_discordant=min_discordant, min_tasks=min_tasks
            )
            if e.verdict == "hurts":  # the worst harm per serving first, then the surest
                keys = frozenset(
                    ()
                    if all(alone for _, alone in judged)  # judged alone: nothing confounds
                    else ((pr.task_id, pr.seed) for pr, _ in judged)
                )
                candidates.append((e.difference or 0.0, e.p_value, eid, keys))
        seen: dict[frozenset[tuple[str, int]], int] = {}
        for c in candidates:
            seen[c[3]] = seen.get(c[3], 0) + 1
        clear = [c for c in candidates if not c[3] or seen[c[3]] == 1]
        if not clear:
            return out
        out.append(min(clear, key=lambda c: (c[0], c[1], c[2]))[2])


def confounded(pairs: Sequence[PairResult]) -> dict[int, tuple[int, ...]]:
    """For each lesson served in exactly the same pairs as others (and not judged alone
    in all of them, :meth:`PairResult.own`): those others."""
    served: dict[int, frozenset[tuple[str, int]]] = {}
    for eid in sorted({i for p in pairs for i in p.lessons}):
        mine = [p for p in pairs if eid in p.lessons]
        if not all(p.own(eid)[1] for p in mine):
            served[eid] = frozenset((p.task_id, p.seed) for p in mine)
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
    ablate: bool = False,
    max_rollouts: int | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> EvalReport:
    """Run each held-out task of ``tasks`` with and without the lessons for every seed
    of ``seeds`` and report the effect (see the module doc). ``k``: the most lessons a
    prompt gets. With ``retire_harmful``, harmful lessons are retired through the
    journal; without, they are only reported. With ``ablate``, a pair that served
    several lessons is also run once without each of them, so each lesson's own effect
    is measured (one more rollout per lesson served). ``max_rollouts``: the most new
    rollouts to pay for (pairs reused from ``checkpoint`` are free); when it is spent the
    evaluation stops and reports on the pairs that ran (``stopped``)."""
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
    say = progress or (lambda _m: None)
    done, torn = _read_checkpoint(path)
    if torn:
        skipped.append(f"{path}: {torn} line(s) that are not a finished pair")
    if max_rollouts is not None and max_rollouts < 2:
        raise InvalidRecordError(f"max_rollouts must be at least 2 (one pair), not {max_rollouts}")
    run = _Run(mem, rollout, k, ablate, path, done, say, max_rollouts)
    for ti, task in enumerate(held):
        if run.stopped:
            break
        run.task(task, ti, seeds, len(held) * len(seeds))
    if run.stopped:
        say(f"the budget of {max_rollouts} rollouts is spent: the report covers what ran")
    results = run.results
    return EvalReport(
        tuple(results),
        paired_effect(p.pair for p in results),
        _credit(mem, results, run.texts, retire_harmful),
        seeds,
        (*skipped, *run.skipped),
        retire_harmful,
        run.reused,
        f"the budget of {max_rollouts} rollouts was spent after {run.spent}: "
        f"{len(results)} of {len(held) * len(seeds)} pairs ran"
        if run.stopped
        else None,
    )


def _credit(
    mem: Memory, results: Sequence[PairResult], texts: Mapping[int, str], retire_harmful: bool
) -> tuple[LessonCredit, ...]:
    """Each lesson's credit; the harmful ones retired first when ``retire_harmful``."""
    bad = harmful(results)
    why = {
        eid: "retired by practice eval: harmful held-out effect "
        f"({_lesson_effect(results, eid).why})"
        for eid in bad
    }
    sessions = retire(mem, bad, why) if retire_harmful and bad else {}
    together = confounded(results)
    return tuple(
        LessonCredit(
            eid,
            texts.get(eid, ""),
            tuple(p.own(eid)[0] for p in results if eid in p.lessons),
            _lesson_effect(results, eid),
            eid in bad,
            sessions.get(eid),
            together.get(eid, ()),
            sum(1 for p in results if eid in p.lessons and p.own(eid)[1]),
            tuple(
                "the others" if eid in p.ablations else "none" for p in results if eid in p.lessons
            ),
        )
        for eid in sorted({i for p in results for i in p.lessons})
    )


@attrs.define
class _Run:
    """The pairs of one evaluation as they are run (or found in the checkpoint)."""

    mem: Memory
    rollout: Rollout
    k: int
    ablate: bool
    path: Path | None
    done: dict[str, PairResult]
    say: Callable[[str], None]
    budget: int | None = None
    results: list[PairResult] = attrs.field(factory=list)
    skipped: list[str] = attrs.field(factory=list)
    texts: dict[int, str] = attrs.field(factory=dict)
    reused: int = 0
    spent: int = 0
    stopped: bool = False

    def _affords(self, n: int) -> bool:
        """Whether ``n`` more rollouts fit the budget (else the evaluation stops)."""
        if self.budget is not None and self.spent + n > self.budget:
            self.stopped = True
        return not self.stopped

    def task(self, task: Task, ti: int, seeds: Sequence[int], total: int) -> None:
        """Every seed of ``task``, with the lessons served for it now and without (and,
        with ``ablate``, without each one of them in turn)."""
        served = _served(self.mem, task, self.k)
        guidance = _text(served)
        ids = tuple(i for i, _ in served if i is not None)
        for eid in ids:
            self.texts.setdefault(eid, self.mem.get_experience(eid).text)
        for seed in seeds:
            key = _key(task.id, seed, guidance)
            p = self.done.get(key)
            n = len(self.results) + 1
            if p is not None:
                self.reused += 1
            elif not self._affords(2):
                return
            else:
                self.spent += 2
                try:
                    w, wo = _run_pair(self.rollout, task, guidance, seed, (ti + seed) % 2 == 0)
                except Exception as e:  # a broken rollout never stops the rest
                    self._skip(task, seed, e, f"pair {n}/{total}")
                    continue
                p = PairResult(task.id, seed, ids, w, wo)
                self.say(
                    f"pair {n}/{total}: {task.id} seed {seed}: with "
                    f"{'ok' if w.success else 'fail'}, without {'ok' if wo.success else 'fail'}"
                    f" ({len(ids)} lesson(s))"
                )
            missing = [i for i in ids if i not in p.ablations] if self.ablate else []
            if len(ids) > 1 and missing:
                p = self._ablate(task, seed, served, p, missing)
            elif key in self.done:
                self.results.append(p)
                continue
            self.results.append(p)
            _append_checkpoint(self.path, key, p)

    def _ablate(
        self,
        task: Task,
        seed: int,
        served: Sequence[tuple[int | None, str]],
        p: PairResult,
        ids: Sequence[int],
    ) -> PairResult:
        """``p`` with a rollout for each of ``ids`` left out of the guidance."""
        more = dict(p.ablations)
        for eid in ids:
            if not self._affords(1):
                break
            self.spent += 1
            try:
                more[eid] = self.rollout(task, _text(served, leave_out=eid), seed)
            except Exception as e:  # the pair stands without this arm
                self._skip(task, seed, e, f"ablation of lesson {eid}")
                continue
            self.say(
                f"  {task.id} seed {seed} without lesson {eid}: "
                f"{'ok' if more[eid].success else 'fail'}"
            )
        return attrs.evolve(p, ablations=more)

    def _skip(self, task: Task, seed: int, e: Exception, what: str) -> None:
        self.skipped.append(f"{task.id}/{seed}: the rollout raised {type(e).__name__}: {e}")
        self.say(f"{what}: {task.id} seed {seed} raised: {e}")


def _lesson_effect(results: Sequence[PairResult], eid: int) -> Effect:
    return paired_effect(p.own(eid)[0] for p in results if eid in p.lessons)


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
        f"  by task:       ahead on {o.signs.better}, behind on {o.signs.worse}, even on "
        f"{o.signs.same} (sign test p = {o.signs.p_value:.4g})",
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
    if report.stopped:
        lines.append(f"  stopped:       {report.stopped}")
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
        alone = f", {cr.isolated} judging it alone" if cr.isolated else ""
        lines.append(
            f"  [{cr.id}] {len(cr.pairs)} pair(s) from {cr.effect.tasks} task(s){alone}: "
            f"wins {lt.wins}, losses {lt.losses}, both {lt.both}, neither {lt.neither}: "
            f"{cr.effect.verdict}{state}"
        )
        lines.append(f"       {cr.text}")
    for s in report.skipped:
        lines.append(f"  skipped {s}")
    return "\n".join(lines)
