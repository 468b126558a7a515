"""A learning session: Algorithm 1 of the paper, end to end, applied in one transaction.

For each ready, non-degenerate group not learned before (same trajectories):
rewards and advantages, Stage 1 summaries, Stage 2 operations against the
K_stage2 most relevant experiences. Then Stage 3 consolidation over all groups,
embeddings of the new texts, and one write transaction that applies Omega*,
journals every operation (applied or rejected) and marks the session applied.
Model calls and embeddings happen before that transaction, never inside it.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from sqlite_utils import Database

from ..db import write
from ..journal import AppliedOp, apply_operations, begin_session, fail_session
from ..library import Library
from ..llm import model_unavailable
from ..projects import record_scopes
from ..rewards import DEFAULT_WEIGHTS, RewardWeights
from ..store import GroupReport, group_reports, load_trajectories, now_iso
from .consolidate import consolidate, same_facts
from .digest import digest
from .evidence import Finding, find_evidence
from .ops import Operation
from .stages import ModelUsage, Summary, compress, extract, generalize, group_vocabulary, summarize

if TYPE_CHECKING:
    from ..embeddings import Embedder
    from ..llm import TextModel

__all__ = ["LearnOptions", "LearnReport", "learn", "record_groups"]


@attrs.frozen
class LearnOptions:
    """Knobs of a session; the defaults are the paper's."""

    reward: str = "composite"
    weights: RewardWeights = DEFAULT_WEIGHTS
    k_stage2: int = 5
    max_findings: int = 3
    stage1_model: bool = True
    groups: tuple[str, ...] | None = None
    relearn: bool = False
    max_groups: int | None = None


@attrs.frozen
class GroupResult:
    key: str
    size: int
    weight: float
    conditions: dict[str, int]
    summaries: tuple[Summary, ...]
    findings: tuple[Finding, ...]
    trajectory_ids: tuple[int, ...]


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


def _learned(db: Database) -> set[tuple[str, str]]:
    return {
        (g, ids)
        for g, ids in db.execute(
            "SELECT g.group_key, g.trajectory_ids FROM session_groups g "
            "JOIN sessions s ON s.id = g.session_id WHERE s.status = 'applied'"
        )
    }


def _ids_key(g: GroupReport) -> str:
    return json.dumps(sorted(m.id for m in g.members))


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
            },
        )
    usage = ModelUsage(unavailable=model_unavailable(model) if model is not None else None)
    try:
        reports = group_reports(
            db, weights=options.weights, reward=options.reward, groups=options.groups
        )
        learned = set() if options.relearn else _learned(db)
        ready = [g for g in reports if g.ready]
        usable = [g for g in ready if not g.degenerate]
        fresh = [g for g in usable if (g.key, _ids_key(g)) not in learned]
        if options.max_groups is not None:
            fresh = fresh[: options.max_groups]
        all_ops: list[Operation] = []
        rejected: list[tuple[Operation, str]] = []
        results: list[GroupResult] = []
        tools_all: set[str] = set()
        known_all: set[str] = set()
        for n, g in enumerate(fresh, 1):
            say(f"group {n}/{len(fresh)}: {g.key}")
            trajs = load_trajectories(db, [m.id for m in g.members])
            by_id = {m.id: m for m in g.members}
            digests = [
                digest(t, by_id[t.id or 0].reward or 0.0, by_id[t.id or 0].advantage or 0.0)
                for t in trajs
            ]
            tools, known = group_vocabulary(trajs)
            tools_all |= tools
            known_all |= known
            stage1_model = model if options.stage1_model else None
            summaries = [
                summarize(stage1_model, usage, t, d, tools, known) for t, d in zip(trajs, digests)
            ]
            findings = find_evidence(list(zip(trajs, digests)), max_findings=options.max_findings)
            domains = sorted({s.domain or "" for t in trajs for s in t.steps} - {""}) or None
            # The K_stage2 lessons that fit best, those naming the group's tools first; no
            # floor: Stage 2 shows the model its K nearest, as the paper does.
            hits = lib.search(
                g.task, tools=sorted(tools), domains=domains, k=options.k_stage2, min_score=0.0
            )
            relevant = [s.experience for s in hits]
            dups = [
                (a.id or 0, b.id or 0)
                for a, b in itertools.combinations(relevant, 2)
                if lib.cosine(a.text, b.text) > embedder.dup_threshold
                and same_facts(a.text, b.text)
            ]
            weight = g.stats.mean_abs_advantage if g.stats else 0.0
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
                    tuple(m.id for m in g.members),
                )
            )
        calls_before = usage.calls
        say("stage 3: consolidating")
        final = consolidate(
            generalize(all_ops),
            similar=lambda text: lib.similar(text, None, 3),
            cosine=lib.cosine,
            threshold=embedder.dup_threshold,
            compress=lambda op: compress(model, usage, op, tools_all, known_all),
        )
        compressions = usage.calls - calls_before

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
            )

        rejected += list(final.rejected)
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
                report = finish(applied)
                db.execute(
                    "UPDATE sessions SET status = 'applied', finished_at = ?, report = ? "
                    "WHERE id = ?",
                    [now_iso(), json.dumps(report.as_dict(), ensure_ascii=False), session_id],
                )
            return attrs.evolve(report, wall_seconds=time.perf_counter() - t0)
        return finish(applied)
    except BaseException as e:
        if session_id is not None:
            fail_session(db, session_id, f"{type(e).__name__}: {e}")
        raise


def record_groups(db: Database, session_id: int, results: Sequence[GroupResult]) -> None:
    """Journal the groups a session learned from (inside its applying transaction)."""
    for r in results:
        db.execute(
            "INSERT INTO session_groups (session_id, group_key, trajectory_ids, status, "
            "mean_abs_advantage, conditions, summaries) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                session_id,
                r.key,
                json.dumps(sorted(r.trajectory_ids)),
                "used" if r.findings else "no-findings",
                r.weight,
                json.dumps(r.conditions),
                json.dumps([attrs.asdict(s) for s in r.summaries], ensure_ascii=False),
            ],
        )


def _report(
    session_id: int | None,
    dry_run: bool,
    reports: Sequence[GroupReport],
    ready: Sequence[GroupReport],
    usable: Sequence[GroupReport],
    fresh: Sequence[GroupReport],
    usage: ModelUsage,
    compressions: int,
    t0: float,
    applied: Sequence[AppliedOp],
    results: Sequence[GroupResult],
) -> LearnReport:
    return LearnReport(
        session_id=session_id,
        dry_run=dry_run,
        groups_seen=len(reports),
        groups_ready=len(usable),
        groups_degenerate=len(ready) - len(usable),
        groups_pending=len(reports) - len(ready),
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
    )
