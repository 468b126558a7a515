"""``agentmem team learn`` and ``team undo``: the private library's learning, on the team's.

Only the team's learner learns for the team: its token is the one the lessons
primary lets write. The session first takes the shared runs that members pushed
to the inbox into the team library (:func:`agentmem.team.inbox.collect`, each one
validated), then reads the team's runs and lessons from the laptop's replica
(synced), plans exactly as a private session does (``learning.session.learn`` in
dry-run mode: the same stages, prompts and validation), and applies the plan on
the primary through :mod:`agentmem.team.claims`. Undo uses the journal's own
undo on the primary, inside one transaction there, so its rules (a later
session that touched the same experiences blocks it) are checked against the
primary's current state.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from ..db import write
from ..errors import AgentMemError, AlreadyClaimedError, TeamError, TeamRefusedError
from ..storage import experiences, journal
from . import claims, inbox, tokens
from .config import TeamConfig, mark_synced
from .membership import check_schema, config, data_migrations_due
from .replica import RemoteDb, check_embedder, open_readonly, open_remote, replica_lock

if TYPE_CHECKING:
    from ..learning.session import LearnOptions, LearnReport
    from ..memory import Memory

__all__ = ["learn", "undo"]


def _candidates(db: Any, options: LearnOptions, embedder: Any) -> dict[str, tuple[int, ...]]:
    """The groups a private session would learn from on this replica, of every kind (runs
    of one task, a run's own correction, runs of similar tasks), that no applied session
    learned: group key -> trajectory ids."""
    from ..learning.session import pick_groups, plan_groups

    _usable, fresh = pick_groups(plan_groups(db, embedder=embedder, options=options), options)
    return {g.key: tuple(sorted(g.trajectory_ids)) for g in fresh}


def learn(
    mem: Memory,
    *,
    dry_run: bool = False,
    use_model: bool | None = None,
    options: LearnOptions | None = None,
    progress: Callable[[str], None] | None = None,
    lease: float = claims.CLAIM_LEASE,
    approve_single_member: bool = False,
    on_collect: Callable[[inbox.CollectReport], None] | None = None,
) -> LearnReport:
    """A learning session over the team's ready groups, applied once for the whole team.

    ``on_collect`` is given what the inbox held (items taken, refused by reason);
    ``approve_single_member``: lessons that only one member's runs support may be
    served team-wide (the learner's approval, noted in the journal), else they are
    held (:mod:`agentmem.team.support`).

    Raises :class:`~agentmem.errors.AlreadyClaimedError` when every group it
    could learn is held by another session.
    """
    from ..learning.session import LearnOptions
    from ..learning.session import learn as plan_session

    cfg = config(mem)
    say = progress or (lambda _msg: None)
    if not dry_run:
        _learner_only(cfg, "learn for the team")
    with replica_lock(cfg.replica):
        conn = open_remote(cfg)
        try:
            remote = RemoteDb(conn, cfg.url)
            if not dry_run:
                _upgrade(remote, say)
                taken = inbox.collect(remote, cfg.runs_http_url(), token=cfg.credential().runs)
                if on_collect is not None:
                    on_collect(taken)
                if taken.taken or taken.refused:
                    say(f"took {taken.taken} shared item(s) in, refused {taken.refused_count}")
                if taken.quarantined:
                    say(
                        f"pruned {len(taken.quarantined)} run(s) of the team library that "
                        "agentmem cannot read (taken in before items were validated)"
                    )
                conn.sync()
            db = open_readonly(cfg.replica)
            try:
                check_schema(db)
                check_embedder(db, mem.embedder)
                opts = options or LearnOptions.of_library(db)
                chosen = mem.model_chosen if use_model is None else use_model
                model = mem.model if chosen else None
                if dry_run:
                    return plan_session(
                        db, model=model, embedder=mem.embedder, options=opts, dry_run=True
                    )
                held = _claim(remote, _candidates(db, opts, mem.embedder), lease=lease, say=say)
                report = _plan_and_apply(
                    mem, remote, db, held, model=model, opts=opts, say=say,
                    approve=approve_single_member,
                )  # fmt: skip
                if held is None:
                    return report  # nothing was ready: the plan of nothing, the primary unchanged
            finally:
                db.close()
            conn.sync()
        finally:
            conn.close()
    mark_synced(cfg.replica)
    return report


def _upgrade(remote: Any, say: Callable[[str], None]) -> None:
    """Apply on the primary the migrations it may lack (:data:`~agentmem.team.membership.
    DATA_ONLY`: ``m018_redact_stored``, every stored text redacted again; ``m019_practice``,
    the practice tables), each in one transaction with its record, as opening a private
    library does."""
    from ..migrations import applied_names, m019_practice
    from ..scrub import redact_stored
    from ..timestamps import now_iso

    with write(remote):
        for name in data_migrations_due(applied_names(remote)):
            if name == "m019_practice":
                m019_practice(remote)
                say(f"applied {name} to the team library (tables practices, practice_rollouts)")
            else:
                report = redact_stored(remote, local=False)
                say(
                    f"applied {name} to the team library: {sum(report.changed.values())} "
                    f"text(s) redacted, {len(report.quarantined)} unreadable run(s) pruned"
                )
            remote.execute(
                "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
                "VALUES ('agentmem', ?, ?)",
                [name, now_iso()],
            )


def _learner_only(cfg: TeamConfig, what: str) -> None:
    """Refuse at once, saying why, when this laptop's token is a member's (the lessons
    primary would refuse the writes anyway: a member's token is read-only there)."""
    cred = cfg.credential()
    if cred.role == tokens.MEMBER:
        raise TeamRefusedError(
            f"only the team's learner may {what}: this laptop's token ({cred.name}) is a "
            "member's, which reads the team library and pushes runs. Run this where the "
            "learner's token is, or issue one: `agentmem team token add NAME --learner`"
        )


def _claim(
    remote: RemoteDb,
    wanted: dict[str, tuple[int, ...]],
    *,
    lease: float,
    say: Callable[[str], None],
) -> claims.Claim | None:
    """Claim the ``wanted`` groups on the primary (None when there are none).

    Raises :class:`~agentmem.errors.AlreadyClaimedError` when another session holds them all.
    """
    held = claims.claim(remote, wanted, lease=lease) if wanted else None
    if held is not None and not held.groups:
        first = next(iter(held.refused.items()))
        raise AlreadyClaimedError(
            f"{len(held.refused)} ready group(s), all taken: {first[0]!r} is "
            f"{first[1]}; nothing to learn here now"
        )
    if held is not None and held.refused:
        say(f"skipping {len(held.refused)} group(s) another session holds")
    return held


def _plan_and_apply(
    mem: Memory,
    remote: RemoteDb,
    db: Any,
    held: claims.Claim | None,
    *,
    model: Any,
    opts: LearnOptions,
    say: Callable[[str], None],
    approve: bool = False,
) -> LearnReport:
    """Plan the ``held`` groups on the replica ``db`` and apply the plan on the primary.

    Without ``held`` groups the plan is returned as it is. If anything fails, the
    claim is released at once (else its lease lets the groups go).
    """
    from ..learning.session import learn as plan_session
    from ..retrieval.retriever import Retriever

    expected = experiences.states(db)
    groups = tuple(held.groups) if held is not None else ()
    try:
        plan = plan_session(
            db,
            model=model,
            embedder=mem.embedder,
            options=attrs.evolve(opts, groups=groups),
            dry_run=True,
            progress=say,
        )
        if held is None:
            return plan
        texts = [o.op.text for o in plan.operations if o.status == "proposed"]
        vectors = Retriever(db, mem.embedder).embed(t for t in texts if t)
        return claims.apply_session(
            remote,
            held,
            plan,
            vectors,
            expected,
            model=getattr(model, "model_id", None) if model else "none (data only)",
            embedder=mem.embedder.model_id,
            params={"reward": opts.reward, "k_stage2": opts.k_stage2},
            approve=approve,
        )
    except BaseException:
        if held is not None:
            with contextlib.suppress(TeamError):  # else the lease lets them go
                claims.release(remote, held.id)
        raise


def undo(mem: Memory, session_id: int, *, cascade: bool = False) -> list[int]:
    """Undo a team session on the primary, under the private library's rules."""
    from ..retrieval.retriever import Retriever

    cfg = config(mem)
    _learner_only(cfg, "undo a team session")
    with replica_lock(cfg.replica):
        conn = open_remote(cfg)
        try:
            db = open_readonly(cfg.replica)
            try:
                check_embedder(db, mem.embedder)
                plan = journal.undo_plan(db, session_id, cascade=cascade)
                vectors = Retriever(db, mem.embedder).embed(journal.restore_texts(db, plan))
            finally:
                db.close()
            try:
                created = journal.undo_session(
                    RemoteDb(conn, cfg.url),  # type: ignore[arg-type]
                    session_id,
                    vectors,
                    cascade=cascade,
                )
            except KeyError as e:
                if isinstance(e, AgentMemError):
                    raise
                raise TeamError(
                    "the team library changed since this laptop last synced; "
                    "run `agentmem team sync` and undo again"
                ) from None
            conn.sync()
        finally:
            conn.close()
    mark_synced(cfg.replica)
    return created
