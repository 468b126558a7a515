"""A learning session: Algorithm 1 of the paper, end to end, applied in one transaction.

The groups come from :func:`agentmem.learning.grouping.form_groups`: exact
groups of one task, and (``grouping="auto"``, the default) a run's own
corrections and groups of runs of similar tasks. For each usable group not
learned before (same trajectories): rewards and advantages, Stage 1 summaries,
Stage 2 operations against the K_stage2 most relevant experiences (the
evidence of an exact group from :mod:`.evidence`, of a similar-task group from
:mod:`.crosstask`, of a correction from :mod:`.corrections`). Then Stage 3
consolidation over all groups, embeddings of the new texts, and one write
transaction that applies Omega*, journals every operation (applied or
rejected), records each group in ``session_groups`` (with its kind and why its
runs were put together), stores the task vectors embedded, and marks the
session applied. Model calls and embeddings happen before that transaction,
never inside it.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from sqlite_utils import Database

from ..db import write
from ..journal import AppliedOp, apply_operations, begin_session, fail_session
from ..library import Library, live_experiences
from ..llm import model_unavailable
from ..projects import record_scopes
from ..records import Experience, Operation, Trajectory
from ..rewards import DEFAULT_WEIGHTS, GroupReport, RewardWeights
from ..store import group_reports, load_trajectories, verdict_runs
from ..task_index import save as save_task_vectors
from ..timestamps import now_iso
from .consolidate import consolidate, same_facts
from .corrections import correction_findings
from .crosstask import find_crosstask_evidence, overruled
from .digest import Digest
from .evidence import Finding, find_evidence
from .generality import GroupNotes, build_corpus, generalise, note_group
from .grouping import GROUPINGS, Grouping, LearningGroup, form_groups, task_threshold
from .stages import ModelUsage, Summary, compress, extract, generalize, group_vocabulary, summarize
from .support import GroupRun, evidence_operations, group_runs

if TYPE_CHECKING:
    from ..embeddings import Embedder
    from ..llm import TextModel

__all__ = ["LearnOptions", "LearnReport", "learn", "learned_check", "plan_groups", "record_groups"]


@attrs.frozen
class LearnOptions:
    """Knobs of a session; the defaults are the paper's.

    ``grouping``: ``exact`` (groups of one task only, as in the paper),
    ``similar`` (also groups of similar tasks) or ``auto`` (also a run's own
    corrections; the default). See :mod:`agentmem.learning.grouping`.
    """

    reward: str = "composite"
    weights: RewardWeights = DEFAULT_WEIGHTS
    k_stage2: int = 5
    max_findings: int = 3
    stage1_model: bool = True
    groups: tuple[str, ...] | None = None
    relearn: bool = False
    max_groups: int | None = None
    grouping: str = attrs.field(default="auto")

    @grouping.validator
    def _check_grouping(self, _attr: Any, value: str) -> None:
        if value not in GROUPINGS:
            from ..errors import InvalidRecordError

            raise InvalidRecordError(
                f"grouping must be one of {', '.join(GROUPINGS)}, not {value!r}"
            )


@attrs.frozen
class GroupResult:
    key: str
    size: int
    weight: float
    conditions: dict[str, int]
    summaries: tuple[Summary, ...]
    findings: tuple[Finding, ...]
    trajectory_ids: tuple[int, ...]
    kind: str = "exact"
    reason: str = ""


@attrs.frozen
class LearnReport:
    """What a session did and what it cost."""

    session_id: int | None
    dry_run: bool
    groups_seen: int
    groups_ready: int
    groups_degenerate: int
    groups_pending: int
    groups_already_learned: int
    groups_used: int
    llm_calls: int
    llm_call_bound: int
    compressions: int
    llm_failures: int
    prompt_tokens: int
    completion_tokens: int
    model_seconds: float
    wall_seconds: float
    operations: tuple[AppliedOp, ...]
    groups: tuple[GroupResult, ...] = ()
    #: Why the model could not be used (its worker died, hung, or its server was
    #: unreachable); the session then used the data-derived texts. None when it could.
    model_unavailable: str | None = None
    grouping: str = "exact"
    groups_single: int = 0
    groups_formed: dict[str, int] = attrs.field(factory=dict)
    free_runs: int = 0
    theta_task: float | None = None
    #: Seconds per part of the session: ``select`` (forming the groups), ``load``
    #: (trajectories), ``stage1``, ``stage2`` (retrieval included), ``stage3``, ``apply``
    #: (embedding the new texts and the write transaction).
    timings: dict[str, float] = attrs.field(factory=dict)

    @property
    def other_seconds(self) -> float:
        return max(0.0, self.wall_seconds - self.model_seconds)

    @property
    def applied(self) -> list[AppliedOp]:
        return [o for o in self.operations if o.status in ("applied", "proposed")]

    @property
    def rejected(self) -> list[AppliedOp]:
        return [o for o in self.operations if o.status == "rejected"]

    def as_dict(self) -> dict[str, Any]:
        d = {
            k: v
            for k, v in attrs.asdict(self, recurse=False).items()
            if k not in ("operations", "groups")
        }
        d["other_seconds"] = self.other_seconds
        d["groups"] = [
            {
                "kind": g.kind,
                "group": g.key,
                "trajectory_ids": list(g.trajectory_ids),
                "reason": g.reason,
                "findings": [f.text for f in g.findings],
            }
            for g in self.groups
        ]
        d["operations"] = [
            {
                "kind": o.op.kind,
                "status": o.status,
                "targets": list(o.op.targets),
                "result_id": o.result_id,
                "text": o.op.text,
                "domain": o.op.domain,
                "group": o.op.group,
                "origin": o.op.origin,
                "reason": "; ".join(x for x in (o.reason, o.op.note) if x),
            }
            for o in self.operations
        ]
        return d


def learned_check(db: Database) -> Callable[[LearningGroup], bool]:
    """Whether a group was already learned by an applied session: the same key and the
    same runs; or, for a similar-task group, every one of its runs learned in some group."""
    pairs: set[tuple[str, str]] = set()
    ids: set[int] = set()
    for g, tids in db.execute(
        "SELECT g.group_key, g.trajectory_ids FROM session_groups g "
        "JOIN sessions s ON s.id = g.session_id WHERE s.status = 'applied'"
    ):
        pairs.add((g, tids))
        try:
            ids.update(int(x) for x in json.loads(tids))
        except (ValueError, TypeError):
            continue

    def learned(g: LearningGroup) -> bool:
        if (g.key, g.ids_key) in pairs:
            return True
        return g.kind == "similar" and set(g.trajectory_ids) <= ids

    return learned


class _Laps:
    """Seconds spent per named part of a session: :meth:`lap` gives the time since the
    previous lap to ``name``."""

    def __init__(self, start: float) -> None:
        self.last = start
        self.seconds: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self.last
        self.last = now

    def done(self, name: str) -> dict[str, float]:
        """A copy of the figures, with the time since the previous lap given to ``name``."""
        self.lap(name)
        return {k: round(v, 4) for k, v in self.seconds.items()}


#: Groups whose trajectories are loaded and whose Stage 2 retrievals are searched together.
CHUNK = 256


def _with_relevant(
    db: Database, lib: Library, groups: Sequence[LearningGroup], k: int, laps: _Laps
) -> Iterator[tuple[LearningGroup, list[Trajectory], list[Digest], list[Experience]]]:
    """Each group with its trajectories, their digests, and its ``k`` most relevant live
    experiences (Stage 2's retrieval: the group's task, within the domains its steps used).

    Groups are taken :data:`CHUNK` at a time: their trajectories read at once, in
    storage order, and their retrievals searched in one batch
    (:meth:`Library.search_many`), so a session over a large library reads the index
    once per chunk instead of once per group, and holds one chunk's trajectories.
    """
    for start in range(0, len(groups), CHUNK):
        chunk = groups[start : start + CHUNK]
        ids = sorted({i for g in chunk for i in g.trajectory_ids})
        runs = {t.id or 0: t for t in load_trajectories(db, ids)}
        loaded = [g.load(db, runs) for g in chunk]
        laps.lap("load")
        # The K_stage2 lessons that fit best, those naming the group's tools first; no
        # floor: Stage 2 shows the model its K nearest, as the paper does.
        hits = lib.search_many(
            [g.task for g in chunk],
            tools=[sorted(group_vocabulary(trajs)[0]) for trajs, _ in loaded],
            domains=[
                sorted({s.domain or "" for t in trajs for s in t.steps} - {""}) or None
                for trajs, _ in loaded
            ],
            k=k,
            min_score=0.0,
        )
        laps.lap("stage2")
        for g, (trajs, digests), found in zip(chunk, loaded, hits, strict=True):
            yield g, trajs, digests, [s.experience for s in found]


def plan_groups(
    db: Database,
    *,
    embedder: Embedder | None,
    options: LearnOptions = LearnOptions(),
) -> Grouping:
    """The groups a session with ``options`` would form (reads only; see
    :func:`agentmem.learning.grouping.form_groups`)."""
    reports = group_reports(db, weights=options.weights, reward=options.reward)
    return form_groups(
        db, reports, embedder=embedder, mode=options.grouping, learned=learned_check(db)
    )


def _findings(
    g: LearningGroup, trajs: Sequence[Any], digests: Sequence[Any], max_findings: int
) -> list[Finding]:
    if g.kind == "correction":
        return correction_findings(g.corrections)[:max_findings]
    members = list(zip(trajs, digests))
    if g.kind == "similar":
        return find_crosstask_evidence(members, comparable=g.comparable, max_findings=max_findings)
    return find_evidence(members, max_findings=max_findings)


def learn(
    db: Database,
    *,
    model: TextModel | None,
    embedder: Embedder,
    options: LearnOptions = LearnOptions(),
    dry_run: bool = False,
    progress: Callable[[str], None] | None = None,
) -> LearnReport:
    """Run one Agent-GRPO session over the library's ready groups (see module doc)."""
    t0 = time.perf_counter()
    laps = _Laps(t0)
    say = progress or (lambda _msg: None)
    lib = Library(db, embedder)
    if not dry_run:
        lib.ensure_index()
    model_id = getattr(model, "model_id", None) if model is not None else "none (data only)"
    session_id = None
    if not dry_run:
        # Take the learning lock first: which groups are already learned must be read after
        # any session that ran before this one has committed, or both would learn them.
        session_id = begin_session(
            db,
            "learn",
            model=model_id,
            embedder=embedder.model_id,
            params={
                "reward": options.reward,
                "weights": [options.weights.w1, options.weights.w2],
                "k_stage2": options.k_stage2,
                "theta_dup": embedder.dup_threshold,
                "max_findings": options.max_findings,
                "grouping": options.grouping,
                "theta_task": task_threshold(embedder),
            },
        )
    usage = ModelUsage(unavailable=model_unavailable(model) if model is not None else None)
    try:
        say("forming groups")
        grouping = plan_groups(db, embedder=embedder, options=options)
        named = set(options.groups) if options.groups is not None else None
        reports = [g for g in grouping.reports if named is None or g.key in named]
        ready = [g for g in reports if g.ready]
        usable = [g for g in grouping.groups if named is None or g.key in named]
        fresh = [g for g in usable if options.relearn or not g.learned]
        if options.max_groups is not None:
            fresh = fresh[: options.max_groups]
        laps.lap("select")
        all_ops: list[Operation] = []
        rejected: list[tuple[Operation, str]] = []
        results: list[GroupResult] = []
        tools_all: set[str] = set()
        known_all: set[str] = set()
        proven: list[Finding] = []  # what exact groups and corrections showed
        notes: dict[str, GroupNotes] = {}  # what each group's runs show (generality, support)
        runs: dict[str, list[GroupRun]] = {}
        staged = _with_relevant(db, lib, fresh, options.k_stage2, laps)
        for n, (g, trajs, digests, relevant) in enumerate(staged, 1):
            say(f"group {n}/{len(fresh)}: {g.key}")
            tools, known = group_vocabulary(trajs)
            tools_all |= tools
            known_all |= known
            stage1_model = model if options.stage1_model else None
            summaries = [
                summarize(stage1_model, usage, t, d, tools, known) for t, d in zip(trajs, digests)
            ]
            laps.lap("stage1")
            findings = _findings(g, trajs, digests, options.max_findings)
            if g.kind == "similar":
                findings, dropped = overruled(findings, proven)
                rejected += [
                    (
                        Operation("ADD", text=f.text, domain=f.domain, group=g.key, facts=f.facts),
                        f"a run's own data shows another fix for this error of "
                        f"{f.facts[1] if f.kind == 'wrong_tool' else f.tool}: {p.text}",
                    )
                    for f, p in dropped
                ]
            else:
                proven += findings
            notes[g.key], runs[g.key] = (
                note_group(findings, zip(trajs, digests)),
                group_runs(trajs, digests),
            )
            dups = [
                (a.id or 0, b.id or 0)
                for a, b in itertools.combinations(relevant, 2)
                if lib.cosine(a.text, b.text) > embedder.dup_threshold
                and same_facts(a.text, b.text)
            ]
            weight = g.weight
            ops, rej = extract(
                model,
                usage,
                group=g.key,
                weight=weight,
                summaries=summaries,
                findings=findings,
                relevant=relevant,
                near_duplicates=dups,
                tools=tools,
                known=known,
            )
            all_ops += ops
            rejected += rej
            results.append(
                GroupResult(
                    g.key,
                    g.size,
                    weight,
                    g.conditions,
                    tuple(summaries),
                    tuple(findings),
                    g.trajectory_ids,
                    g.kind,
                    g.reason,
                )
            )
            laps.lap("stage2")
        calls_before = usage.calls
        say("stage 3: consolidating")
        general, held = generalise(generalize(all_ops), notes, build_corpus(verdict_runs(db)))
        rejected += held
        # Every ADD's nearest live experiences, searched together (see _with_relevant).
        adds = list(dict.fromkeys(op.text for op in general if op.kind == "ADD" and op.text))
        near = lib.search_many(adds, k=3, min_score=0.0, methods=("vector",))
        nearest = {
            t: [(s.experience.id or 0, s.cosine or 0.0, s.experience.text) for s in hits]
            for t, hits in zip(adds, near, strict=True)
        }
        final = consolidate(
            general,
            similar=lambda text: nearest[text] if text in nearest else lib.similar(text, None, 3),
            cosine=lib.cosine,
            threshold=embedder.dup_threshold,
            compress=lambda op: compress(model, usage, op, tools_all, known_all),
        )
        compressions = usage.calls - calls_before
        laps.lap("stage3")

        def finish(applied: Sequence[AppliedOp]) -> LearnReport:
            return _report(
                session_id,
                dry_run,
                reports,
                ready,
                usable,
                fresh,
                usage,
                compressions,
                t0,
                applied,
                results,
                grouping,
                laps.done("apply"),
            )

        rejected += list(final.rejected)
        evidenced, held = evidence_operations(final.apply, live_experiences(db), runs)
        final, rejected = attrs.evolve(final, apply=tuple(evidenced)), rejected + held
        vectors = lib.embed([op.text for op in final.apply if op.text])
        conditions = {r.key: r.conditions for r in results}
        if dry_run or session_id is None:
            applied = tuple(AppliedOp(op, "proposed") for op in final.apply) + tuple(
                AppliedOp(op, "rejected", why) for op, why in rejected
            )
        else:
            with write(db):
                applied = tuple(
                    apply_operations(
                        db,
                        session_id,
                        final.apply,
                        vectors,
                        rejected=rejected,
                        conditions=conditions,
                    )
                )
                # Which project each new text is served in (agentmem.projects: the rule).
                record_scopes(db, session_id, applied, {r.key: r.trajectory_ids for r in results})
                record_groups(db, session_id, results)
                if grouping.vectors is not None:
                    save_task_vectors(db, grouping.vectors)
                report = finish(applied)
                db.execute(
                    "UPDATE sessions SET status = 'applied', finished_at = ?, report = ? "
                    "WHERE id = ?",
                    [now_iso(), json.dumps(report.as_dict(), ensure_ascii=False), session_id],
                )
            return attrs.evolve(
                report, wall_seconds=time.perf_counter() - t0, timings=laps.done("apply")
            )
        return finish(applied)
    except BaseException as e:
        if session_id is not None:
            fail_session(db, session_id, f"{type(e).__name__}: {e}")
        raise


def record_groups(db: Database, session_id: int, results: Sequence[GroupResult]) -> None:
    """Journal the groups a session learned from, with their kind and why their runs were
    put together (inside its applying transaction)."""
    for r in results:
        db.execute(
            "INSERT INTO session_groups (session_id, group_key, trajectory_ids, status, "
            "mean_abs_advantage, conditions, summaries, kind, reason) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                session_id,
                r.key,
                json.dumps(sorted(r.trajectory_ids)),
                "used" if r.findings else "no-findings",
                r.weight,
                json.dumps(r.conditions),
                json.dumps([attrs.asdict(s) for s in r.summaries], ensure_ascii=False),
                r.kind,
                r.reason or None,
            ],
        )


def _report(
    session_id: int | None,
    dry_run: bool,
    reports: Sequence[GroupReport],
    ready: Sequence[GroupReport],
    usable: Sequence[LearningGroup],
    fresh: Sequence[LearningGroup],
    usage: ModelUsage,
    compressions: int,
    t0: float,
    applied: Sequence[AppliedOp],
    results: Sequence[GroupResult],
    grouping: Grouping,
    timings: dict[str, float],
) -> LearnReport:
    exact_usable = sum(1 for g in ready if not g.degenerate)
    waiting = sum(1 for g in reports if g.stats is None)
    formed: dict[str, int] = {}
    for g in usable:
        if g.kind != "exact":
            formed[g.kind] = formed.get(g.kind, 0) + 1
    return LearnReport(
        session_id=session_id,
        dry_run=dry_run,
        groups_seen=len(reports),
        groups_ready=exact_usable,
        groups_degenerate=len(ready) - exact_usable,
        groups_pending=waiting,
        groups_single=sum(1 for g in reports if g.size == 1 and g.stats is not None),
        groups_already_learned=len(usable) - len(fresh),
        groups_used=len(fresh),
        llm_calls=usage.calls,
        llm_call_bound=sum(g.size + 1 for g in fresh) + compressions,
        compressions=compressions,
        llm_failures=usage.failures,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        model_seconds=usage.seconds,
        wall_seconds=time.perf_counter() - t0,
        operations=tuple(applied),
        groups=tuple(results),
        model_unavailable=usage.unavailable,
        grouping=grouping.mode,
        groups_formed=formed,
        free_runs=grouping.free_runs,
        theta_task=grouping.theta_task,
        timings=timings,
    )
