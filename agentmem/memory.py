"""The public entry point: :class:`Memory`, one agentmem library in one SQLite file."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from sqlite_utils import Database

from .db import connect, write
from .domains import domain_for, valid_domain
from .errors import (
    InvalidRecordError,
    UnknownExperienceError,
)
from .migrations import migrations, refuse_newer
from .outputs import MIN_OUTPUT_CAP
from .paths import DEFAULT_DB_ENV, default_db_path
from .rc import GroupPlan, plan_group
from .records import Experience, Feedback, Operation, Step, Trajectory
from .rewards import GroupReport, RewardWeights, check_reward_kind
from .storage import (
    experiences,
    journal,
    keyword_index,
    reviews,
    settings,
    tool_domains,
    tool_usage,
    vector_index,
)
from .storage import trajectories as _trajectories
from .terms import TERMS_VERSION
from .timestamps import now_iso

if TYPE_CHECKING:
    from datetime import datetime

    from .embeddings import Embedder
    from .importers.turns import ImportReport
    from .learning import grouping as learning_grouping
    from .learning.session import LearnOptions, LearnReport
    from .models import TextModel
    from .projects import Scope
    from .redact import Redactor
    from .redact.runs import Redacted
    from .retrieval.retriever import Retriever, Scored
    from .serving import Query, Served
    from .storage.retention import PruneResult

__all__ = ["DEFAULT_DB_ENV", "LiveTrajectory", "Memory", "default_db_path"]


def _servable(text: str) -> str:
    """A hand-written lesson, stripped, or InvalidRecordError saying which rule it breaks."""
    from .sanitize import lesson_problem

    why = lesson_problem(text, max_words=len(text)) if isinstance(text, str) else None
    if why:
        raise InvalidRecordError(f"refused lesson: {why}")
    return text.strip() if isinstance(text, str) else text


class Memory:
    """An agentmem library: trajectories, experiences and the operations journal.

    Open one with :meth:`open`; ``__init__`` only stores what it is given, so
    tests can hand it any prepared database::

        with Memory.open("agent.db") as mem:
            tid = mem.record("list files", [Step("ls", {"path": "."}, "a.txt", True)])
            mem.feedback(tid, "accept")
    """

    def __init__(
        self,
        db: Database,
        *,
        path: str | None = None,
        redactor: Redactor | None = None,
        embedder: Embedder | str | None = None,
        model: TextModel | str | None = None,
    ):
        self.db = db
        self.path = path
        self._redactor = redactor
        self._embedder = embedder
        self._model = model

    # -- opening ---------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        redactor: Redactor | None = None,
        embedder: Embedder | str | None = None,
        model: TextModel | str | None = None,
    ) -> Memory:
        """Open (creating and migrating if needed) the library at ``path``.

        ``path`` defaults to :func:`default_db_path`; its folder is created for
        the default location only. Secrets are redacted before anything is
        stored unless a disabled ``Redactor`` is passed. ``embedder`` and
        ``model`` (objects or names; see :func:`agentmem.embeddings.get_embedder`
        and :func:`agentmem.models.get_model`) are loaded lazily, on first use.
        """
        p = Path(path) if path is not None else default_db_path()
        if path is None:
            p.parent.mkdir(parents=True, exist_ok=True)
        db = connect(p)
        try:
            with write(db):
                refuse_newer(db)
                migrations.apply(db)
                if keyword_index.version(db) != TERMS_VERSION:
                    keyword_index.rebuild(db)  # new file, or built by other extraction rules
                    tool_usage.rebuild(db)
                reviews.check_unchecked(db)  # lessons older than m017: held if risky
        except Exception:
            db.close()
            raise
        return cls(db, path=str(p), redactor=redactor, embedder=embedder, model=model)

    def close(self) -> None:
        vector_index.forget(self.db)  # the vectors a search kept in memory
        self.db.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- settings --------------------------------------------------------------------

    def get_setting(self, key: str, default: Any = None) -> Any:
        """A library setting (see :mod:`agentmem.storage.settings` for the keys)."""
        return settings.get(self.db, key, default)

    def set_setting(self, key: str, value: Any) -> None:
        """Store a library setting (JSON)."""
        with write(self.db):
            settings.put(self.db, key, value)

    @property
    def reward_weights(self) -> RewardWeights:
        """The library's composite-reward weights (default w1 = 0.4, w2 = 0.6)."""
        return RewardWeights.from_setting(self.get_setting(settings.REWARD_WEIGHTS))

    def set_reward_weights(self, w1: float, w2: float) -> None:
        """Store new weights (they must be >= 0 and sum to 1)."""
        weights = RewardWeights(w1, w2)
        self.set_setting(settings.REWARD_WEIGHTS, [weights.w1, weights.w2])

    @property
    def reward_kind(self) -> str:
        """``composite`` (paper) or ``binary`` (RC-GRPO's R_state * R_action)."""
        return str(self.get_setting(settings.REWARD, "composite"))

    def set_reward_kind(self, kind: str) -> None:
        self.set_setting(settings.REWARD, check_reward_kind(kind))

    @property
    def output_cap(self) -> int:
        """The most bytes of a tool output that are stored (head and tail; 0: no cap).

        The library setting ``output_cap``, :data:`agentmem.outputs.DEFAULT_OUTPUT_CAP`
        (64 KiB) when unset.
        """
        return _trajectories.output_cap(self.db)

    def set_output_cap(self, cap: int) -> None:
        """Store the output cap in bytes: 0 (no cap) or at least 1,024. Outputs already
        recorded are kept as they are."""
        from .outputs import validate_cap

        self.set_setting(settings.OUTPUT_CAP, validate_cap(cap))

    @property
    def holdout(self) -> float:
        """The share of (prompt, lesson) pairs withheld to measure the lessons' effect
        (0.0: none; see :mod:`agentmem.served`)."""
        from .served import HOLDOUT, holdout_share

        return holdout_share(settings.raw(self.db, [HOLDOUT]))

    def set_holdout(self, share: float) -> None:
        """Withhold lessons from a deterministic ``share`` of prompts (0 <= share <= 0.5;
        0 turns the holdout off) and record it, for :meth:`effect`."""
        from .served import HOLDOUT

        if not 0.0 <= share <= 0.5:
            raise InvalidRecordError(f"the holdout share must be between 0 and 0.5, not {share}")
        self.set_setting(HOLDOUT, float(share))

    def effect(self) -> dict[str, Any]:
        """How often each served lesson's mistake happened when served and when held out
        (:func:`agentmem.effect.report`), from the runs learning sessions have judged."""
        from .effect import report
        from .served import log_path
        from .storage import served as _served

        pending = _served.pending(self.db)
        pending["unread_bytes"] = _served.unread(self.db, log_path(self.path)) if self.path else 0
        return report(_served.effect_rows(self.db), holdout=self.holdout, pending=pending)

    def served_counts(self, ids: Sequence[int] | None = None) -> dict[int, dict[str, Any]]:
        """Per experience: how often it was served and held out, and what the runs did
        (:func:`agentmem.storage.served.counts`)."""
        from .storage import served as _served

        return _served.counts(self.db, ids)

    # -- tool domains ----------------------------------------------------------------

    def domains(self) -> dict[str, str]:
        """The library's own tool-to-domain overrides."""
        return tool_domains.read(self.db)

    def domain_of(self, tool: str) -> str:
        """The domain a tool belongs to in this library."""
        return domain_for(tool, self.domains())

    def set_domain(self, tool: str, domain: str | None) -> None:
        """Map ``tool`` to ``domain`` in this library (``None`` removes the override).

        Steps already recorded keep the domain they were recorded with.
        """
        if not tool.strip():
            raise InvalidRecordError("tool name must not be empty")
        if domain is not None and not valid_domain(domain):
            raise InvalidRecordError(
                f"domain {domain!r} must be a short lower-case name (letters, digits, _ . -)"
            )
        with write(self.db):
            if domain is None:
                tool_domains.remove(self.db, tool)
            else:
                tool_domains.put(self.db, tool, domain)

    # -- recording -------------------------------------------------------------------

    @property
    def redactor(self) -> Redactor:
        """The redactor every text this library stores goes through (the built-in rules
        unless another was passed to :meth:`open`)."""
        if self._redactor is None:
            from .redact import DEFAULT_REDACTOR

            self._redactor = DEFAULT_REDACTOR
        return self._redactor

    def _clean(self, t: Trajectory, cap: int | None = None) -> Redacted:
        """``t`` as it may be stored: every text redacted, long outputs cut first
        (:func:`agentmem.redact.runs.redact_run`); ``cap``: the output cap, when the
        caller has read it (an import, once for all its runs)."""
        from .redact.runs import redact_run

        if cap is None:
            long = any(len(s.output) * 4 > MIN_OUTPUT_CAP for s in t.steps)
            cap = self.output_cap if long else 0
        return redact_run(t, self.redactor, cap)

    def record(
        self,
        task: str | Trajectory,
        steps: Sequence[Step | Mapping[str, Any]] = (),
        **fields: Any,
    ) -> int:
        """Record one trajectory and return its id.

        Pass a :class:`Trajectory`, or a task and its steps plus any of
        ``group``, ``accepted``, ``condition``, ``meta``, ``state_ok``,
        ``essential_actions``.
        """
        t = task if isinstance(task, Trajectory) else Trajectory(task=task, steps=steps, **fields)
        return self.record_many([t])[0]

    def record_many(
        self, trajectories: Sequence[Trajectory], *, share: bool | None = None
    ) -> list[int]:
        """Record trajectories in one transaction: all of them or, on error, none.

        Outputs longer than :attr:`output_cap` are cut to their head and tail, and
        secrets are redacted from what is kept (see :mod:`agentmem.outputs`). In a team
        (``agentmem team join``), ``share=True`` also queues them, redacted, for the team library;
        ``None`` follows the team's ``share`` setting. Unshared runs never leave this
        library.
        """
        cleaned = [self._clean(t) for t in trajectories]
        with write(self.db):
            ids = _trajectories.insert_trajectories(self.db, cleaned)
            # -- team touch point: queue shared runs in the same transaction
            from .team.outbox import queue_shared

            queue_shared(self.db, ids, share)
            return ids

    @contextlib.contextmanager
    def trajectory(
        self,
        task: str,
        *,
        group: str | None = None,
        condition: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Iterator[LiveTrajectory]:
        """Record a trajectory live from an agent loop::

            with mem.trajectory("fix the failing test") as t:
                t.step("bash", {"cmd": "pytest"}, output, success=False)
                t.accepted = True   # optional: the user's verdict if already known

        The trajectory is recorded when the block ends. If the block raises, the
        steps so far are recorded as a rejected trajectory (the agent failed) and
        the exception propagates. Its id is ``t.id`` afterwards.
        """
        live = LiveTrajectory(task=task, group=group, condition=condition, meta=dict(meta or {}))
        try:
            yield live
        except BaseException as e:
            live.meta["error"] = f"{type(e).__name__}: {e}"[:500]
            live.accepted = False
            live.id = self.record(live.build())
            raise
        live.id = self.record(live.build())

    def import_transcripts(
        self,
        fmt: str,
        paths: Sequence[str | os.PathLike[str]],
        *,
        final: bool = False,
        project: str | os.PathLike[str] | None = None,
        force: bool = False,
        progress: Callable[[str], None] | None = None,
        share: bool | None = None,
        running: Sequence[str] = (),
        finished: Sequence[str] = (),
    ) -> ImportReport:
        """Import the new turns of agent transcripts: one trajectory per user prompt.

        ``fmt`` is ``claude-code``, ``codex`` or ``anthropic``; ``paths`` are files
        or folders. Turns imported before are skipped (key: source, session id,
        turn id), so this can run again and again as transcripts grow. Verdicts
        come only from explicit signals in the transcript (an interrupted turn, a
        denied tool call). ``share`` as for :meth:`record_many`. ``running``: sub-agents
        still at work, whose last turn ``final`` does not end; ``finished``: sub-agents
        whose last turn is over. See
        :mod:`agentmem.importers`.
        """
        from .importers.run import import_transcripts
        from .storage import project_states

        cap = self.output_cap  # read once, not a query for each run
        report = import_transcripts(
            self.db,
            fmt,
            paths,
            clean=lambda t: self._clean(t, cap),
            final=final,
            project=None if project is None else str(project),
            force=force,
            progress=progress,
            share=share,
            running=running,
            finished=finished,
        )
        for where, state in project_states.states(self.db).items():  # never recorded
            if state == "excluded" and report.ids and project_states.has_runs(self.db, where):
                from .storage.retention import prune

                prune(self.db, project=where, ids=report.ids, path=self.path)
        return report

    def feedback(self, trajectory_id: int, kind: str, *, note: str | None = None) -> None:
        """Record the user's verdict on a trajectory: ``accept``, ``correct`` or ``reject``."""
        fb = Feedback(trajectory_id=trajectory_id, kind=kind, created_at=now_iso(), note=note)
        with write(self.db):
            _trajectories.insert_feedback(self.db, fb, self.redactor)
            # -- team touch point: a verdict on a shared run goes to the team too
            from .team.outbox import enqueue_feedback

            note = None if fb.note is None else self.redactor.text(fb.note)
            enqueue_feedback(self.db, trajectory_id, fb.kind, note, fb.created_at or "")

    def set_state(self, trajectory_id: int, ok: bool) -> None:
        """Record the state-consistency verdict R_state of a trajectory (binary reward):
        whether the environment's final state matched the task's goal."""
        if not isinstance(ok, bool):
            raise InvalidRecordError(f"state verdict must be true or false, not {ok!r}")
        with write(self.db):
            _trajectories.set_state(self.db, trajectory_id, ok)

    @staticmethod
    def plan_group(task: str, size: int = 4, **kw: Any) -> GroupPlan:
        """A reward-conditioned group plan for ``task``: :func:`agentmem.rc.plan_group`,
        which needs no library (kept here for callers of ``mem.plan_group``)."""
        return plan_group(task, size, **kw)

    # -- reading ---------------------------------------------------------------------

    def get_trajectory(self, trajectory_id: int) -> Trajectory:
        """One trajectory with its steps; ``accepted`` reflects feedback and the window."""
        return _trajectories.load_trajectories(self.db, [trajectory_id])[0]

    def trajectories(self, *, groups: Sequence[str] | None = None) -> list[Trajectory]:
        """Every trajectory (or those of the named groups), with their steps, by id."""
        return _trajectories.load_trajectories(self.db, groups=groups)

    def groups(
        self, *, reward: str | None = None, weights: RewardWeights | None = None
    ) -> list[GroupReport]:
        """Every task group with rewards, advantages, readiness and degeneracy."""
        kind = check_reward_kind(reward or self.reward_kind)
        return _trajectories.group_reports(
            self.db, weights=weights or self.reward_weights, reward=kind
        )

    def learning_groups(
        self, grouping: str = "auto", *, reward: str | None = None
    ) -> learning_grouping.Grouping:
        """The groups a learning session would learn from now, and why (reads only).

        ``grouping``: ``exact`` (runs of one task), ``similar`` (also runs of
        similar tasks) or ``auto`` (also each run's own corrections). Every exact
        group's report is in ``.reports``; the usable groups of every kind, in the
        order a session takes them, in ``.groups`` (see
        :mod:`agentmem.learning.grouping`).
        """
        from .learning.session import LearnOptions, plan_groups

        kind = reward or self.reward_kind
        opts = LearnOptions(reward=kind, weights=self.reward_weights, grouping=grouping)
        emb = None if grouping == "exact" else self.embedder
        return plan_groups(self.db, embedder=emb, options=opts)

    def stats(self) -> dict[str, Any]:
        """Counts of what the library holds."""
        groups = self.groups()
        n_sessions, n_operations = journal.counts(self.db)
        return {
            "path": self.path,
            **_trajectories.counts(self.db),
            "groups": len(groups),
            "groups_ready": sum(1 for g in groups if g.usable),
            "groups_degenerate": sum(1 for g in groups if g.ready and g.degenerate),
            "groups_pending": sum(1 for g in groups if not g.ready),
            "experiences": experiences.count_live(self.db),
            "sessions": n_sessions,
            "operations": n_operations,
        }

    # -- models ----------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The embedder: the one given to :meth:`open`, else the one that built the
        library's index (setting ``embedder``), else ``$AGENTMEM_EMBEDDER``, else the default."""
        if self._embedder is None or isinstance(self._embedder, str):
            from .embeddings import get_embedder

            name = self._embedder or self.get_setting(settings.EMBEDDER)
            self._embedder = get_embedder(name)
        return self._embedder

    @property
    def model(self) -> TextModel:
        """The text model: the one given to :meth:`open`, else setting ``model``, else
        ``$AGENTMEM_MODEL``, else the packaged default (loaded on first call)."""
        if self._model is None or isinstance(self._model, str):
            from .models import get_model

            self._model = get_model(self._model or self.get_setting(settings.MODEL))
        return self._model

    @property
    def model_chosen(self) -> bool:
        """Whether a text model was chosen: given to :meth:`open` or :meth:`use_model`,
        setting ``model``, or ``$AGENTMEM_MODEL``. Without one, learning phrases every
        lesson from the data alone (the default: the packaged model was measured to add
        nothing, see README)."""
        import os

        from .models import MODEL_ENV

        return bool(
            self._model is not None
            or self.get_setting(settings.MODEL)
            or os.environ.get(MODEL_ENV, "").strip()
        )

    def use_model(self, model: TextModel | str | None) -> None:
        """Use ``model`` (an object or a spec, see :func:`agentmem.models.get_model`; None:
        setting ``model``, else ``$AGENTMEM_MODEL``, else the packaged default) from now on,
        as if it had been given to :meth:`open`. Nothing is loaded until it is used."""
        self._model = model

    def _retriever(self, *, remember: bool = True) -> Retriever:
        """The library's experiences, searched with this memory's embedder.

        ``remember`` records the embedder's name in the file the first time (so
        that later processes embed with the same one); reads pass False: they
        write nothing.
        """
        from .retrieval.retriever import Retriever

        lib = Retriever(self.db, self.embedder)
        if (
            remember
            and isinstance(self.embedder_name, str)
            and self.get_setting(settings.EMBEDDER) is None
        ):
            self.set_setting(settings.EMBEDDER, self.embedder_name)
        return lib

    @property
    def embedder_name(self) -> str | None:
        name = getattr(self.embedder, "name", None)
        return name if isinstance(name, str) else None

    # -- learning --------------------------------------------------------------------

    def learn(
        self,
        *,
        dry_run: bool = False,
        use_model: bool | None = None,
        options: LearnOptions | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> LearnReport:
        """Run one Agent-GRPO learning session over the ready groups.

        Model calls and embeddings happen first; then Omega* is applied in one
        transaction and journaled. ``dry_run`` computes Omega* and applies
        nothing. ``use_model``: None (the default) uses a model only if one was
        chosen (:attr:`model_chosen`), else the data-derived texts; True uses the
        chosen model or the packaged one (``pip install 'agentmem[model]'``);
        False the data-derived texts only.
        """
        if use_model is None:
            use_model = self.model_chosen
        from .learning.session import LearnOptions, learn

        opts = options or LearnOptions.of_library(self.db)
        lib = self._retriever()
        report = learn(
            self.db,
            model=self.model if use_model else None,
            embedder=lib.embedder,
            options=opts,
            dry_run=dry_run,
            progress=progress,
        )
        if not dry_run:
            with write(self.db):  # what the recorded tools were used for, for retrieval
                tool_usage.refresh(self.db)
        return report

    def undo(self, session_id: int, *, cascade: bool = False) -> list[int]:
        """Revert a learning or curation session exactly; returns the undo session ids.

        Refuses with :class:`~agentmem.errors.UndoConflictError` when a later
        session changed the same experiences, unless ``cascade`` (then those are
        undone first, newest first).
        """
        plan = journal.undo_plan(self.db, session_id, cascade=cascade)
        lib = self._retriever()
        vectors = lib.embed(journal.restore_texts(self.db, plan))
        lib.ensure_index()
        return journal.undo_session(self.db, session_id, vectors, cascade=cascade)

    def sessions(self) -> list[dict[str, Any]]:
        """Every session (learn, curate, undo), oldest first, with its report."""
        return journal.sessions(self.db)

    def journal(self, session_id: int | None = None) -> list[dict[str, Any]]:
        """Operations of one session, or of all, with before and after texts."""
        return journal.operations(self.db, session_id)

    # -- the experience library --------------------------------------------------------

    def experiences(self, *, domains: Sequence[str] | None = None) -> list[Experience]:
        """The live experiences (optionally in these domains plus domain-free ones)."""
        return experiences.live(self.db, domains=domains)

    def experience_scopes(self) -> dict[int, str]:
        """The live experiences served in one project only: id -> project (the git root
        of the folder its runs came from). Every other live experience is global."""
        from .storage.scopes import current_scopes

        return current_scopes(self.db)

    def lesson_scopes(self) -> dict[int, Scope]:
        """The live experiences served in one project or on one machine only: id -> its
        :class:`~agentmem.projects.Scope` (``.label``: ``project NAME`` or ``machine``).
        Every other live experience is global."""
        from .storage.scopes import scopes_of

        return scopes_of(self.db)

    def recent_imports(self, *, limit: int = 20, source: str | None = None) -> list[dict[str, Any]]:
        """The latest turns imported from agent transcripts, newest first: ``source``,
        ``session_id``, ``turn_id``, ``trajectory_id``, ``status``, ``note``,
        ``imported_at``, and the trajectory's ``task``, ``step_count`` and ``project``."""
        from .storage.imports import recent_imports

        return recent_imports(self.db, limit=limit, source=source)

    def get_experience(self, experience_id: int) -> Experience:
        """The live experience ``experience_id``."""
        found = experiences.live(self.db, [experience_id])
        if not found:
            raise UnknownExperienceError(f"no live experience has id {experience_id}")
        return found[0]

    def _curate(self, ops: Sequence[Operation], *, project: str | None = None) -> list[int | None]:
        """Apply hand-made operations as one curation session; their result ids, in order.
        ``project``: the lessons they write are served only in that project."""
        # A lesson written by hand is redacted as a run is (and checked again after).
        ops = [
            attrs.evolve(op, text=_servable(self.redactor.text(op.text))) if op.text else op
            for op in ops
        ]
        lib = self._retriever()
        lib.ensure_index()
        vectors = lib.embed([op.text for op in ops if op.text])
        with write(self.db):
            sid = journal.insert_session(
                self.db,
                "curate",
                status="applied",
                embedder=lib.embedder.model_id,
                pid=os.getpid(),
                finished=True,
            )
            done = journal.apply_operations(self.db, sid, ops, vectors)
            for d in done:
                if d.status != "applied":
                    raise UnknownExperienceError(d.reason)
            if project is not None:
                from .storage.scopes import scope_by_hand

                for d in done:
                    if d.result_id is not None:
                        scope_by_hand(self.db, d.result_id, sid, project)
            return [d.result_id for d in done]

    def add(
        self,
        text: str,
        *,
        domain: str = "",
        project: str | os.PathLike[str] | None = None,
    ) -> Experience:
        """Add an experience by hand (at most 32 words); journaled and undoable.
        ``project`` (a folder): the lesson is served only in that project."""
        return self.get_experience(self.add_many([(text, domain)], project=project)[0])

    def add_many(
        self,
        lessons: Iterable[str | tuple[str, str]],
        *,
        project: str | os.PathLike[str] | None = None,
    ) -> list[int]:
        """Add experiences by hand, each a text or a ``(text, domain)`` pair, in one
        curation session (journaled; one ``undo`` takes them all back). Returns their ids.
        ``project`` (a folder): they are served only in that project.

        Every text is validated (at most 32 words, a valid domain) before anything is
        written: one bad lesson and none is added.
        """
        ops = []
        for item in lessons:
            text, domain = (item, "") if isinstance(item, str) else item
            e = Experience(text=_servable(text), domain=domain)
            ops.append(Operation("ADD", text=e.text, domain=e.domain, origin="user"))
        if not ops:
            return []
        where = None
        if project is not None:
            from .projects import project_of

            where = project_of(project) or os.path.abspath(os.path.expanduser(str(project)))
        return [eid or 0 for eid in self._curate(ops, project=where)]

    def edit(self, experience_id: int, text: str, *, domain: str | None = None) -> Experience:
        """Replace an experience's text (and optionally domain); journaled and undoable."""
        old = self.get_experience(experience_id)
        e = Experience(text=_servable(text), domain=old.domain if domain is None else domain)
        self._curate(
            [
                Operation(
                    "MODIFY", text=e.text, domain=e.domain, targets=(experience_id,), origin="user"
                )
            ]
        )
        return self.get_experience(experience_id)

    def remove(self, experience_id: int, *, note: str = "") -> None:
        """Delete an experience; journaled (with ``note``: why) and undoable."""
        self.get_experience(experience_id)
        self._curate([Operation("DELETE", targets=(experience_id,), origin="user", note=note)])

    # -- review (issue 30: risky lessons wait for a person) -----------------------------

    def held(self) -> list[dict[str, Any]]:
        """The lessons held for review, each with its risks and evidence (the runs and
        failing outputs it came from); see :func:`agentmem.storage.reviews.held`."""
        return reviews.held(self.db)

    def is_held(self, experience_id: int) -> bool:
        """Whether experience ``experience_id`` is held for review (never served until approved)."""
        row = experiences.row(self.db, experience_id)
        return row is not None and row["status"] == "live" and row.get("review") == "held"

    def review_states(self) -> dict[int, str]:
        """The live experiences that were reviewed or wait for it: id -> ``held`` or
        ``approved`` (the others were checked and found to ask for nothing risky)."""
        return experiences.review_states(self.db)

    def waiting_review(self) -> int:
        """How many lessons wait for a person's review."""
        return reviews.waiting(self.db)

    def review(self, experience_id: int, decision: str, *, by: str | None = None) -> int:
        """Approve (``approved``: it may be served) or reject (``rejected``: deleted) a held
        lesson, by ``by`` (default: the user name); journaled as a curation session, undone
        by :meth:`undo`. Returns the session id."""
        if by is None:
            import getpass

            try:
                by = getpass.getuser()
            except (OSError, KeyError):  # no user name in this environment
                by = "unknown"
        return journal.review_lesson(self.db, experience_id, decision, by=by)

    # -- retrieval ---------------------------------------------------------------------

    def retrieve(
        self,
        task: str,
        *,
        tools: Sequence[str] | None = None,
        domains: Sequence[str] | None = None,
        k: int = 5,
        min_score: float | None = None,
        project: str | os.PathLike[str] | None = None,
    ) -> list[Scored]:
        """The lessons that fit ``task`` best, at most ``k``, best first (see
        :mod:`agentmem.retrieval`): exactly the lessons a prompt is served for the same
        query (:meth:`serve`, :mod:`agentmem.serving`), in the same order, as data.

        Keyword (BM25) and vector search are fused; lessons naming one of ``tools``
        come first (with no tools, tool names and error strings in ``task`` count
        as strong evidence). The search covers the domains of ``tools`` and
        ``domains`` plus domain-free lessons (every domain when neither is given).
        A lesson with no strong evidence must reach the relevance floor
        ``min_score`` (default :data:`agentmem.retrieval.DEFAULT`'s): nothing is
        returned rather than unrelated lessons. Lessons scoped to one project (see
        :mod:`agentmem.projects`) are served only when ``project`` (a folder: its git
        root counts) is that project. In a team, the replica's lessons are merged in
        (``source='team'``).

        It is :func:`agentmem.serving.select`, steps 1 to 4 of what a prompt gets (search,
        team merge, filters): nothing for a paused or excluded ``project``; a lesson
        the serving filters withhold (one whose claim fails here, e.g. a path it says
        exists in the project and that does not) is not returned, and the next one takes
        its place. Unlike :meth:`serve` it writes nothing to the served log and applies
        no holdout: with a holdout share set, a prompt is served this list less the
        lessons held out for it (``Served.held``), in this order.
        """
        from .retrieval.retriever import scored
        from .serving import Query

        query = Query(task, tools=tools, domains=domains, k=k, min_score=min_score, project=project)
        out = []
        for lesson in self._serving("select", query).lessons:
            hit = scored(lesson)
            if hit is not None:  # (never None: the team's rows are checked where read)
                out.append(hit)
        return out

    def serve(self, query: Query) -> Served:
        """The lessons ``query`` gets, as every route into a prompt serves them: searched,
        merged with the team's, filtered, less the holdout, logged once, ready to format
        (``.text``); see :mod:`agentmem.serving` for the order."""
        return self._serving("serve", query)

    def _serving(self, step: str, query: Query) -> Served:
        """:func:`agentmem.serving.serve` (``step='serve'``) or :func:`~agentmem.serving.select`
        on this library, with its embedder."""
        from . import serving

        retriever = self._retriever(remember=False)
        mine = (self.embedder.model_id, self.embedder.dims)
        info = vector_index.index_info(self.db)
        if info is not None and info != mine:
            retriever.ensure_index()  # raises: the index holds another model's vectors
        run = serving.serve if step == "serve" else serving.select
        return run(self.db, self.path, query, embed=retriever.vector, model=mine)

    def context(
        self,
        task: str,
        *,
        tools: Sequence[str] | None = None,
        domains: Sequence[str] | None = None,
        k: int = 5,
        min_score: float | None = None,
        project: str | os.PathLike[str] | None = None,
        session: str | None = None,
        route: str = "api",
        client: str | None = None,
    ) -> str:
        """A block of text to put in an agent's system prompt (empty when nothing fits),
        with the lessons served in ``project`` (see :meth:`retrieve`), each marked with its
        id (``[L12]``); the holdout and the served log (``session``: the client's session
        id) as :mod:`agentmem.served` says; ``client`` (``claude-code``, ``codex``): the
        agent that reads them, so that a lesson about the other's own tool is left out.
        :meth:`serve` with a :class:`~agentmem.serving.Query`, as text."""
        from .serving import Query

        query = Query(
            task,
            tools=tools,
            domains=domains,
            k=k,
            min_score=min_score,
            project=project,
            session=session,
            route=route,
            client=client,
        )
        return self.serve(query).text

    def serve_hits(
        self,
        task: str,
        hits: Sequence[Scored],
        *,
        route: str,
        session: str | None = None,
        project: str | None = None,
    ) -> list[Scored]:
        """Deprecated: :meth:`serve` searches, filters, holds out and logs in one call.

        ``hits`` as a prompt gets them: through the serving filters, less the lessons the
        holdout withholds, recorded in the served log (:func:`agentmem.serving.finish`)."""
        from .retrieval.ranking import Evidence
        from .serving import Lesson, Query, finish

        if not hits:
            return []
        lessons = [
            Lesson(
                h.experience.id if h.source == "private" else None,
                h.experience.text,
                h.source,
                h.score,
                h.reason,
                h.why or Evidence(h.experience.id or 0),
                {},
            )
            for h in hits
        ]
        by_lesson = {id(x): h for x, h in zip(lessons, hits, strict=True)}
        query = Query(task, k=len(hits), route=route, session=session)
        stored = settings.raw(self.db)
        done = finish(self.path, query, lessons, [], stored, where=project)
        return [by_lesson[id(x)] for x in done.lessons]

    def reindex(self, embedder: Embedder | str | None = None) -> int:
        """Rebuild the vector index with ``embedder`` (for a new embedding model) and
        the keyword index, in one transaction."""
        from .embeddings import get_embedder

        if embedder is not None:
            self._embedder = embedder if not isinstance(embedder, str) else get_embedder(embedder)
        emb = self.embedder
        exps = self.experiences()
        vectors = emb.embed_batch([e.text for e in exps]) if exps else []
        with write(self.db):
            vector_index.drop_index(self.db)
            vector_index.ensure_index(self.db, emb.model_id, emb.dims)
            vector_index.put_many(
                self.db, [(e.id or 0, e.domain, v) for e, v in zip(exps, vectors)]
            )
            keyword_index.rebuild(self.db)
            tool_usage.rebuild(self.db)
            name = getattr(emb, "name", None)
            if isinstance(name, str):
                settings.put(self.db, settings.EMBEDDER, name)
        return len(exps)

    def prune(
        self,
        *,
        before: datetime | str | None = None,
        keep_last: int | None = None,
        dry_run: bool = False,
    ) -> PruneResult:
        """Remove the runs recorded before ``before`` (a datetime, an ISO date, or an age
        such as ``"90d"``) and/or all but the newest ``keep_last``, with their steps and
        feedback, keeping every experience, the journal and the sessions (which name
        the pruned runs), then give the space back. ``dry_run`` changes nothing. See
        :mod:`agentmem.storage.retention`.
        """
        from .storage.retention import parse_before, prune

        when = parse_before(before) if isinstance(before, str) else before
        return prune(self.db, before=when, keep_last=keep_last, dry_run=dry_run, path=self.path)

    # -- projects ----------------------------------------------------------------------

    def projects(self) -> list[dict[str, Any]]:
        """Every project with runs or lessons: its runs, last run, lessons served only
        there, and state (``active``, ``paused``, ``excluded``; see
        :mod:`agentmem.storage.project_states`)."""
        from .storage import project_states

        return project_states.overview(self.db)

    def project_state(self, project: str | os.PathLike[str] | None) -> str | None:
        """The state of the project of folder ``project`` (None: active)."""
        from .projects import project_of
        from .storage import project_states

        where = project_of(project) if project is not None else None
        return None if where is None else project_states.states(self.db).get(where)

    def set_project_state(self, project: str | os.PathLike[str], state: str | None) -> str:
        """Pause or exclude the project of folder ``project`` (None: active again); returns
        the project's path as stored."""
        from .projects import project_of
        from .storage import project_states

        if state is not None and state not in project_states.STATES:
            raise InvalidRecordError(f"a project is paused or excluded, not {state!r}")
        where = project_of(project) or os.path.abspath(os.path.expanduser(str(project)))
        with write(self.db):
            project_states.put_state(self.db, where, state)
        return where

    def forget_project(self, project: str | os.PathLike[str]) -> dict[str, Any]:
        """Remove a project's runs (with steps and feedback) and every lesson served only
        in it (one journaled curation session), then give the space back."""
        from .projects import project_of
        from .storage.retention import prune
        from .storage.scopes import scopes_of

        where = project_of(project) or os.path.abspath(os.path.expanduser(str(project)))
        lessons = sorted(i for i, s in scopes_of(self.db).items() if s.project == where)
        if lessons:
            self._curate([Operation("DELETE", targets=(i,), origin="user") for i in lessons])
        pruned = prune(self.db, project=where, path=self.path)
        return {"project": where, "runs": pruned.trajectories, "lessons": len(lessons)}


@attrs.define
class LiveTrajectory:
    """A trajectory being recorded from an agent loop (see :meth:`Memory.trajectory`)."""

    task: str
    group: str | None = None
    condition: str | None = None
    meta: dict[str, Any] = attrs.Factory(dict)
    steps: list[Step] = attrs.Factory(list)
    accepted: bool | None = None
    id: int | None = None

    def step(
        self,
        tool: str,
        params: Mapping[str, Any] | None = None,
        output: str = "",
        success: bool = True,
    ) -> Step:
        """Add one tool call; validated at once, so a bad step fails where it is made."""
        s = Step(tool=tool, params=dict(params or {}), output=output, success=success)
        self.steps.append(s)
        return s

    def build(self) -> Trajectory:
        kw: dict[str, Any] = {}
        if self.group is not None:
            kw["group"] = self.group
        return Trajectory(
            task=self.task,
            steps=tuple(self.steps),
            accepted=self.accepted,
            condition=self.condition,
            meta=self.meta,
            **kw,
        )
