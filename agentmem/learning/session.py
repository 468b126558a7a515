"""A learning session: Algorithm 1 of the paper, end to end, applied in one transaction.

:func:`learn` is five named steps:

1. **select groups** (:func:`_select`): exact groups of one task, and (``grouping="auto"``,
   the default) a run's own corrections and groups of runs of similar tasks
   (:func:`agentmem.learning.grouping.form_groups`); the usable ones not learned before
   (same trajectories);
2. **run each group** (:func:`_run_groups`): rewards and advantages, Stage 1 summaries,
   Stage 2 operations against the K_stage2 most relevant experiences (the evidence of an
   exact group from :mod:`.evidence`, of a similar-task group from :mod:`.crosstask`, of a
   correction from :mod:`.corrections`);
3. **consolidate** (:func:`_consolidate`): Stage 3 over all groups, generality checks,
   and the evidence counts of the live experiences the groups bear on;
4. **apply** (:func:`_apply`): embeddings of the new texts, then one write transaction
   that applies Omega*, journals every operation (applied or rejected), scopes the new
   texts to projects, records each group in ``session_groups`` (with its kind and why
   its runs were put together) and stores the task vectors embedded;
5. **finish**: the session is marked applied with its report, in that same transaction
   (a dry run applies nothing and returns the report of what it would do).

Model calls and embeddings happen before the write transaction, never inside it.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from sqlite_utils import Database

from ..db import write
from ..models.base import model_unavailable
from ..records import Experience, Operation, Trajectory
from ..retrieval.retriever import Retriever
from ..storage import experiences, journal
from ..storage.journal import AppliedOp, apply_operations, begin_session, fail_session
from ..storage.scopes import current_scopes, promotion_notes, record_scopes
from ..storage.task_vectors import save as save_task_vectors
from ..storage.trajectories import (
    failed_calls_saying,
    group_reports,
    load_trajectories,
    verdict_runs,
)
from .consolidate import Consolidated, consolidate, same_facts
from .corrections import correction_findings
from .crosstask import find_crosstask_evidence, overruled
from .digest import Digest
from .evidence import find_evidence
from .findings import Finding
from .generality import GroupNotes, build_corpus, generalise, note_group
from .grouping import Grouping, LearningGroup, form_groups, task_threshold
from .outcomes import judge_served
from .report import (
    DEFAULT_OPTIONS,
    GroupResult,
    LearnOptions,
    LearnReport,
    Selection,
    build_report,
    group_rows,
)
from .stages import ModelUsage, compress, extract, generalize, group_vocabulary, summarize
from .support import GroupRun, evidence_operations, group_runs

if TYPE_CHECKING:
    from ..embeddings import Embedder
    from ..models import TextModel

__all__ = [
    "GroupResult",
    "LearnOptions",
    "LearnReport",
    "learn",
    "learned_check",
    "pick_groups",
    "plan_groups",
]


def learned_check(db: Database) -> Callable[[LearningGroup], bool]:
    """Whether a group was already learned by an applied session: the same key and the
    same runs; or, for a similar-task group, every one of its runs learned in some group."""
    pairs = journal.learned_groups(db)
    ids: set[int] = set()
    for _g, tids in pairs:
        try:
            ids.update(int(x) for x in json.loads(tids))
        except (ValueError, TypeError):
            continue

    def learned(g: LearningGroup) -> bool:
        if (g.key, g.ids_key) in pairs:
            return True
        return g.kind == "similar" and set(g.trajectory_ids) <= ids

    return learned


def plan_groups(
    db: Database,
    *,
    embedder: Embedder | None,
    options: LearnOptions = DEFAULT_OPTIONS,
) -> Grouping:
    """The groups a session with ``options`` would form (reads only; see
    :func:`agentmem.learning.grouping.form_groups`)."""
    reports = group_reports(db, weights=options.weights, reward=options.reward)
    return form_groups(
        db, reports, embedder=embedder, mode=options.grouping, learned=learned_check(db)
    )


def pick_groups(
    grouping: Grouping, options: LearnOptions
) -> tuple[list[LearningGroup], list[LearningGroup]]:
    """Of ``grouping``'s groups, the usable ones ``options.groups`` names (all when None),
    and of those the ones a session learns now: not learned before (unless
    ``options.relearn``), at most ``options.max_groups``."""
    named = set(options.groups) if options.groups is not None else None
    usable = [g for g in grouping.groups if named is None or g.key in named]
    fresh = [g for g in usable if options.relearn or not g.learned]
    if options.max_groups is not None:
        fresh = fresh[: options.max_groups]
    return usable, fresh


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


@attrs.define
class _Run:
    """One session as it runs: what it works with, and what it has spent."""

    db: Database
    model: TextModel | None
    embedder: Embedder
    options: LearnOptions
    dry_run: bool
    say: Callable[[str], None]
    lib: Retriever
    usage: ModelUsage
    t0: float
    laps: _Laps
    session_id: int | None = None


@attrs.define
class _Found:
    """What the groups gave (step 2): operations, rejections, and what later steps read."""

    ops: list[Operation] = attrs.Factory(list)
    rejected: list[tuple[Operation, str]] = attrs.Factory(list)
    results: list[GroupResult] = attrs.Factory(list)
    tools: set[str] = attrs.Factory(set)
    known: set[str] = attrs.Factory(set)
    proven: list[Finding] = attrs.Factory(list)  # what exact groups and corrections showed
    notes: dict[str, GroupNotes] = attrs.Factory(dict)  # what each group's runs show
    runs: dict[str, list[GroupRun]] = attrs.Factory(dict)
    run_ids: dict[str, frozenset[int]] = attrs.Factory(dict)  # the runs behind ``runs``
    # run id -> (group key, its findings) for each group of runs learned so far
    grouped: dict[int, list[tuple[str, list[Finding]]]] = attrs.Factory(dict)
    # run id -> the calls it got wrong and then put right (its corrections this session)
    corrected: dict[int, set[int]] = attrs.Factory(dict)


def learn(
    db: Database,
    *,
    model: TextModel | None,
    embedder: Embedder,
    options: LearnOptions = DEFAULT_OPTIONS,
    dry_run: bool = False,
    progress: Callable[[str], None] | None = None,
) -> LearnReport:
    """Run one Agent-GRPO session over the library's ready groups (see module doc)."""
    run = _start(db, model, embedder, options, dry_run, progress)
    try:
        picked = _select(run)
        found = _run_groups(run, picked.fresh)
        final, rejected, compressions = _consolidate(run, found)
        return _apply(run, picked, found, final, rejected, compressions)
    except BaseException as e:
        if run.session_id is not None:
            fail_session(db, run.session_id, f"{type(e).__name__}: {e}")
        raise


def _start(
    db: Database,
    model: TextModel | None,
    embedder: Embedder,
    options: LearnOptions,
    dry_run: bool,
    progress: Callable[[str], None] | None,
) -> _Run:
    """The index ready for this embedder and, unless a dry run, the session begun."""
    t0 = time.perf_counter()
    lib = Retriever(db, embedder)
    if not dry_run:
        lib.ensure_index()
    session_id = None
    if not dry_run:
        # Take the learning lock first: which groups are already learned must be read after
        # any session that ran before this one has committed, or both would learn them.
        session_id = begin_session(
            db,
            "learn",
            model=getattr(model, "model_id", None) if model is not None else "none (data only)",
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
    return _Run(
        db,
        model,
        embedder,
        options,
        dry_run,
        progress or (lambda _msg: None),
        lib,
        usage,
        t0,
        _Laps(t0),
        session_id,
    )


def _select(run: _Run) -> Selection:
    """Step 1: the groups, and the ones this session learns from (options permitting)."""
    options = run.options
    run.say("forming groups")
    grouping = plan_groups(run.db, embedder=run.embedder, options=options)
    named = set(options.groups) if options.groups is not None else None
    reports = [g for g in grouping.reports if named is None or g.key in named]
    usable, fresh = pick_groups(grouping, options)
    run.laps.lap("select")
    return Selection(
        grouping,
        tuple(reports),
        tuple(g for g in reports if g.ready),
        tuple(usable),
        tuple(fresh),
    )


#: Groups whose trajectories are loaded and whose Stage 2 retrievals are searched together.
CHUNK = 256


def _with_relevant(
    run: _Run, groups: Sequence[LearningGroup]
) -> Iterator[tuple[LearningGroup, list[Trajectory], list[Digest], list[Experience]]]:
    """Each group with its trajectories, their digests, and its ``k`` most relevant live
    experiences (Stage 2's retrieval: the group's task, within the domains its steps used).

    Groups are taken :data:`CHUNK` at a time: their trajectories read at once, in
    storage order, and their retrievals searched in one batch
    (:meth:`Retriever.search_many`), so a session over a large library reads the index
    once per chunk instead of once per group, and holds one chunk's trajectories.
    """
    for start in range(0, len(groups), CHUNK):
        chunk = groups[start : start + CHUNK]
        ids = sorted({i for g in chunk for i in g.trajectory_ids})
        runs = {t.id or 0: t for t in load_trajectories(run.db, ids)}
        loaded = [g.load(run.db, runs) for g in chunk]
        run.laps.lap("load")
        # The K_stage2 lessons that fit best, those naming the group's tools first; no
        # floor: Stage 2 shows the model its K nearest, as the paper does.
        hits = run.lib.search_many(
            [g.task for g in chunk],
            tools=[sorted(group_vocabulary(trajs)[0]) for trajs, _ in loaded],
            domains=[
                sorted({s.domain or "" for t in trajs for s in t.steps} - {""}) or None
                for trajs, _ in loaded
            ],
            k=run.options.k_stage2,
            min_score=0.0,
        )
        run.laps.lap("stage2")
        for g, (trajs, digests), found in zip(chunk, loaded, hits, strict=True):
            yield g, trajs, digests, [s.experience for s in found]


def _run_groups(run: _Run, fresh: Sequence[LearningGroup]) -> _Found:
    """Step 2: Stage 1 summaries and Stage 2 operations of each group, in order."""
    found = _Found()
    for g in fresh:
        for c in g.corrections:
            found.corrected.setdefault(g.trajectory_ids[0], set()).add(c.failed)
    for n, (g, trajs, digests, relevant) in enumerate(_with_relevant(run, fresh), 1):
        run.say(f"group {n}/{len(fresh)}: {g.key}")
        _run_group(run, found, g, trajs, digests, relevant)
    return found


def _run_group(
    run: _Run,
    found: _Found,
    g: LearningGroup,
    trajs: list[Trajectory],
    digests: list[Digest],
    relevant: list[Experience],
) -> None:
    """One group's Stage 1 and Stage 2, added to ``found``."""
    options, usage = run.options, run.usage
    tools, known = group_vocabulary(trajs)
    found.tools |= tools
    found.known |= known
    stage1_model = run.model if options.stage1_model else None
    summaries = [summarize(stage1_model, usage, t, d, tools, known) for t, d in zip(trajs, digests)]
    run.laps.lap("stage1")
    findings = _findings(g, trajs, digests, options.max_findings)
    if g.kind == "correction":
        findings = _new_corrections(found, g, findings)
    else:
        for tid in g.trajectory_ids:
            found.grouped.setdefault(tid, []).append((g.key, findings))
    if g.kind == "similar":
        findings, dropped = overruled(findings, found.proven)
        found.rejected += [
            (
                Operation("ADD", text=f.text, domain=f.domain, group=g.key, facts=f.facts),
                f"a run's own data shows another fix for this error of "
                f"{f.facts[1] if f.kind == 'wrong_tool' else f.tool}: {p.text}",
            )
            for f, p in dropped
        ]
    else:
        found.proven += findings
    found.notes[g.key] = note_group(findings, zip(trajs, digests))
    if g.kind != "correction":
        found.runs[g.key] = _tally_runs(found, trajs, digests)
    elif g.trajectory_ids[0] not in found.grouped:
        # a run in another group of this session counts once in the evidence tallies
        found.runs[g.key] = group_runs(trajs, digests)
    found.run_ids[g.key] = frozenset(g.trajectory_ids)
    lib = run.lib
    dups = [
        (a.id or 0, b.id or 0)
        for a, b in itertools.combinations(relevant, 2)
        if lib.cosine(a.text, b.text) > run.embedder.dup_threshold and same_facts(a.text, b.text)
    ]
    ops, rej = extract(
        run.model,
        usage,
        group=g.key,
        weight=g.weight,
        summaries=summaries,
        findings=findings,
        relevant=relevant,
        near_duplicates=dups,
        tools=tools,
        known=known,
    )
    found.ops += ops
    found.rejected += rej
    found.results.append(
        GroupResult(
            g.key,
            g.size,
            g.weight,
            g.conditions,
            tuple(summaries),
            tuple(findings),
            g.trajectory_ids,
            g.kind,
            g.reason,
        )
    )
    run.laps.lap("stage2")


def _tally_runs(
    found: _Found, trajs: Sequence[Trajectory], digests: Sequence[Digest]
) -> list[GroupRun]:
    """A group's runs as the evidence tallies read them: a run is judged without the calls
    it got wrong and then put right itself (its corrections), not as if it ignored them."""
    runs = group_runs(trajs, digests)
    return [
        attrs.evolve(r, steps=tuple(s for i, s in enumerate(r.steps) if i not in wrong))
        if (wrong := found.corrected.get(t.id or 0))
        else r
        for t, r in zip(trajs, runs)
    ]


def _new_corrections(found: _Found, g: LearningGroup, findings: list[Finding]) -> list[Finding]:
    """A run's corrections less those about a failure that a group of this session holding
    the run explains already (the same finding, or another fix for the same error of the
    same tool), journaled as rejected: a correction is learned once per session, and the
    group's evidence, which compares whole runs, goes first."""
    (tid,) = g.trajectory_ids
    kept = []
    for f in findings:
        by = next(
            (
                (k, p)
                for k, ps in found.grouped.get(tid, ())
                for p in ps
                if p.key == f.key or overruled([f], [p])[1]
            ),
            None,
        )
        if by is None:
            kept.append(f)
            continue
        found.rejected.append(
            (
                Operation("ADD", text=f.text, domain=f.domain, group=g.key, facts=f.facts),
                f"group {by[0]}, which holds run {tid}, explains this failure already "
                f"in this session: {by[1].text}",
            )
        )
    return kept


def _findings(
    g: LearningGroup, trajs: Sequence[Any], digests: Sequence[Any], max_findings: int
) -> list[Finding]:
    if g.kind == "correction":
        return correction_findings(g.corrections)[:max_findings]
    members = list(zip(trajs, digests))
    if g.kind == "similar":
        return find_crosstask_evidence(members, comparable=g.comparable, max_findings=max_findings)
    return find_evidence(members, max_findings=max_findings)


def _consolidate(run: _Run, found: _Found) -> tuple[Consolidated, list[tuple[Operation, str]], int]:
    """Step 3: Stage 3 over every group's operations, then the evidence counts; the final
    operations, every rejection, and how many compressions the model was asked for."""
    db, lib, usage = run.db, run.lib, run.usage
    calls_before = usage.calls
    run.say("stage 3: consolidating")
    rejected = list(found.rejected)

    def earlier(f: Finding) -> int:  # a tool's rule slipped on in the library's runs
        # all the tools of a merged rule ("If Edit or Write fails ..."): each one's slips
        tools = f.detail.get("tools") or (f.tool,)
        words = str(f.detail.get("rule_error") or "\0")
        # a call that passed a parameter the way out names had tried it ("pass offset and
        # limit": a Read with limit): no slip of the rule (corrections._already_did)
        named = tuple(re.findall(r"[A-Za-z_]+", str(f.detail.get("how") or "")))
        # a way out after another (a Read that passed limit): only such calls' slips count
        passed = tuple(str(x) for x in f.detail.get("passed") or ())
        return sum(
            failed_calls_saying(db, str(t), words, named, passed) for t in dict.fromkeys(tools)
        )

    general, held = generalise(
        generalize(found.ops, earlier), found.notes, build_corpus(verdict_runs(db))
    )
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
        threshold=run.embedder.dup_threshold,
        compress=lambda op: compress(run.model, usage, op, found.tools, found.known),
        about=_about_live(db),
    )
    compressions = usage.calls - calls_before
    run.laps.lap("stage3")
    rejected += list(final.rejected)
    behind = journal.counted_runs(db)

    def counted(eid: int | None, key: str) -> bool:  # a run counts once for a lesson
        return (
            eid is not None
            and bool(found.run_ids.get(key, ()))
            and found.run_ids[key] <= behind.get(eid, set())
        )

    evidenced, held = evidence_operations(final.apply, experiences.live(db), found.runs, counted)
    evidenced, again = _not_removed_again(run, found, evidenced)
    return attrs.evolve(final, apply=tuple(evidenced)), rejected + held + again, compressions


def _about_live(db: Database) -> Callable[[int], tuple[str, str | None]]:
    """Each live experience's rule kind ("" when it has none) and the project it is served
    in (None: anywhere), for Stage 3's merge of one lesson learned from two instances."""
    projects = current_scopes(db)

    def about(eid: int) -> tuple[str, str | None]:
        row = db.execute("SELECT rule FROM experiences WHERE id = ?", [eid]).fetchone()
        try:
            rule = json.loads(row[0]) if row and row[0] else {}
        except ValueError:
            rule = {}
        kind = rule.get("kind") if isinstance(rule, dict) else None
        return (kind if isinstance(kind, str) else ""), projects.get(eid)

    return about


def _not_removed_again(
    run: _Run, found: _Found, ops: Sequence[Operation]
) -> tuple[list[Operation], list[tuple[Operation, str]]]:
    """A lesson a person removed stays removed until runs they have not seen show it: an
    ADD (or an ADD turned MODIFY) that says what a removed lesson said, every run of whose
    group was recorded before the removal, is rejected."""
    removed = journal.removed_by_user(run.db)
    if not removed:
        return list(ops), []
    runs_of = {r.key: r.trajectory_ids for r in found.results}
    keep: list[Operation] = []
    refused: list[tuple[Operation, str]] = []
    for op in ops:
        text = op.text or ""
        gone = None
        if op.kind in ("ADD", "MODIFY") and op.origin != "user" and text:
            gone = next(
                (
                    (old, at)
                    for old, at in removed
                    if same_facts(op, old)
                    and run.lib.cosine(text, old) > run.embedder.dup_threshold
                ),
                None,
            )
        newest = journal.newest_run(run.db, runs_of.get(op.group or "", ())) if gone else None
        if gone is not None and (newest is None or newest <= gone[1]):
            refused.append(
                (op, f"removed by a person at {gone[1]}; no run recorded since shows it again")
            )
        else:
            keep.append(op)
    return keep, refused


def _apply(
    run: _Run,
    picked: Selection,
    found: _Found,
    final: Consolidated,
    rejected: list[tuple[Operation, str]],
    compressions: int,
) -> LearnReport:
    """Steps 4 and 5: embed the new texts, then apply, journal and finish in one
    transaction (a dry run: the report of what would be applied)."""
    db, results = run.db, found.results

    def report(applied: Sequence[AppliedOp]) -> LearnReport:
        return build_report(
            run.session_id,
            run.dry_run,
            picked,
            run.usage,
            compressions,
            run.t0,
            applied,
            results,
            run.laps.done("apply"),
        )

    vectors = run.lib.embed([op.text for op in final.apply if op.text])
    if run.dry_run or run.session_id is None:
        return report(
            tuple(AppliedOp(op, "proposed") for op in final.apply)
            + tuple(AppliedOp(op, "rejected", why) for op, why in rejected)
        )
    sid = run.session_id
    groups = {r.key: r.trajectory_ids for r in results}
    with write(db):
        applied = tuple(
            apply_operations(
                db,
                sid,
                # a confirmation that promotes a lesson to global says so in the journal
                promotion_notes(db, final.apply, groups),
                vectors,
                rejected=rejected,
                conditions={r.key: r.conditions for r in results},
            )
        )
        # Where each new text is served: a project, a machine, everywhere (agentmem.projects).
        record_scopes(db, sid, applied, groups)
        journal.record_groups(db, sid, group_rows(results))
        applied += tuple(judge_served(db, sid)[0])  # served lessons judged (learning.outcomes)
        if picked.grouping.vectors is not None:
            save_task_vectors(db, picked.grouping.vectors)
        done = report(applied)
        journal.finish_session(db, sid, done.as_dict())
    return attrs.evolve(
        done, wall_seconds=time.perf_counter() - run.t0, timings=run.laps.done("apply")
    )
