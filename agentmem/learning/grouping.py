"""Where a session's groups come from: exact groups, a run's own corrections, similar tasks.

The paper compares G runs of the *same* task. An agent that records through
MCP, a prompt hook or the Python API mostly makes one run per prompt, and
prompts rarely repeat word for word, so most runs have no group. A session
therefore forms its groups in three steps, each run used at most once:

1. **Exact groups** (``exact``): runs of the same task text, or with the same
   given ``group`` (:func:`agentmem.storage.trajectories.group_reports`), as in the paper.
   A ready, non-degenerate one takes its runs. Runs of a pending group wait
   (the 120 s acceptance window); runs alone in their group, or in a
   degenerate one, are free for the next steps.
2. **Corrections** (``correction``, in ``auto`` mode): a free run that failed a
   call and then made it work after one change
   (:mod:`agentmem.learning.corrections`) is a group of two attempts at that
   step: the failed call, reward 0, and the call that worked, reward 1, so the
   paper's advantages are -0.71 and +0.71. The run's own data is the strongest
   evidence there is, so it goes before similar tasks.
3. **Similar tasks** (``similar``): free runs whose task texts differ but whose
   task embeddings have cosine >= theta_task (the embedder's calibrated
   ``task_threshold``) and that called at least one tool in common (a call
   that returned nothing, such as ``think``, does not count). Sharing a tool
   *domain* is not enough: across tasks only the calls of a tool both runs
   made can be compared.
   Neighbours come from :func:`agentmem.storage.task_vectors.neighbours` (an exact
   nearest-neighbour search, never a Python loop over pairs). Groups are grown
   around the runs with the lowest reward, in order: a seed takes its
   neighbours (its positives among them), then the runs with a lower reward
   alike to one of those positives, up to :data:`MAX_SIMILAR_GROUP` runs. A
   group needs two task texts and must not be degenerate; rewards and
   advantages are the paper's, within the group. Its evidence compares a
   negative run only with the positives whose tasks are alike to its own
   (:mod:`agentmem.learning.crosstask`).

``exact`` mode stops after step 1, ``similar`` skips step 2, ``auto`` (the
default) does all three. A formed group is skipped as already learned when an
applied session learned a group with the same key and the same runs, or, for a
similar group, when every one of its runs was already learned in some group.
"""

from __future__ import annotations

import importlib
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from ..agents import learning_view
from ..rewards import GroupReport, GroupStats, TrajectoryReward, group_stats
from ..storage.imports import earlier_in_session
from ..storage.trajectories import load_trajectories, meta_values, run_tools
from .corrections import Correction, find_corrections
from .digest import Digest, digest
from .shell_fixes import paths_used

if TYPE_CHECKING:
    from sqlite_utils import Database

    from ..embeddings import Embedder
    from ..records import Trajectory
    from ..storage.task_vectors import TaskVectors

__all__ = [
    "GROUPINGS",
    "MAX_SIMILAR_GROUP",
    "TURN_KINDS",
    "Grouping",
    "LearningGroup",
    "form_groups",
    "grow_similar",
    "not_a_task",
    "split_turns",
    "task_threshold",
    "tool_overlap",
    "turn_by_text",
]

#: The values of ``learn --grouping``.
GROUPINGS = ("exact", "similar", "auto")
#: Most runs in a similar-task group (the paper's G is 4 to 8).
MAX_SIMILAR_GROUP = 8
#: ``meta["prompt_kind"]`` of a run whose prompt was a turn of a conversation, not a task of
#: its own (the importers set it, :mod:`agentmem.conversation`); absent: a task.
TURN_KINDS = frozenset({"reply", "choice", "slash", "notification"})

#: Replies that state no task, in the languages seen in real transcripts (compared after
#: NFKC, case folding and with punctuation and spaces dropped).
_REPLIES = frozenset(
    """yes y no n ok okay k sure yep yeah yup nope go continue proceed next done thanks
    thankyou ty thx lgtm please pls do it doit goahead soundsgood great perfect good nice cool fine
    agreed approve approved right correct retry again same both all none keepgoing goon
    carryon yesplease okthanks okplease はい いいえ うん お願いします おねがいします
    お願い 続けて 続行 どうぞ 了解 了解です 可以 好 好的 行 继续 是 是的 对 嗯 谢谢 不 不用
    没问题 네 예 아니요 좋아요 계속""".split()
)
_CHOICE = re.compile(r"(?:option|choice|no\.?|#)?\(?(?:[a-z]|[0-9]{1,2})[).:]?", re.IGNORECASE)
_SLASH_MARKUP = re.compile(
    r"<command-(?:name|message|args)>|\A#{1,3}[ \t]*/[\w:.-]+|\A##[ \t]+User Input[ \t]*\n"
)
_NOT_WORD = re.compile(r"[\W_]+")
#: What a client writes into a conversation by itself (a background task finished).
_NOTIFICATIONS = ("<task-notification>", "<system-notification>", "<background-task", "<agent-")


def not_a_task(task: str) -> str | None:
    """Why the prompt ``task`` is obviously no task of its own, or None (it may be one).

    For turns of a conversation recorded before importers said what a prompt is
    (``meta["prompt_kind"]``): what :func:`agentmem.conversation.classify` says where that
    module is installed, and :func:`turn_by_text` in any case (either one suffices:
    a task taken for a turn only loses a group).
    """
    kind = _conversation_kind(task)
    if kind is not None and kind != "task":
        return f"a {kind} (agentmem.conversation)"
    return turn_by_text(task)


def _conversation_kind(text: str) -> str | None:
    """The kind :mod:`agentmem.conversation` (the importers') gives a prompt, or None where
    that module is missing or fails."""
    try:
        classify = importlib.import_module("agentmem.conversation").classify
        kind = classify(text).kind
    except Exception:  # not installed (an older tree), or a change of its interface
        return None
    return kind if isinstance(kind, str) else None


def turn_by_text(task: str) -> str | None:
    """Why the prompt ``task`` reads as a turn of a conversation, not a task, or None.

    An empty prompt, a choice (``a``, ``2``, ``２``, ``(b)``, ``option 3``), a short reply
    (``ok``, ``yes please``, ``お願いします``, ``可以``: at most 3 letters, or only words of
    assent), a bare slash command (``/compact``), a slash command's expansion (Claude
    Code's ``<command-name>`` markup, a Codex prompt file's ``# /name`` heading, spec-kit's
    ``## User Input``: the template's text, not what was asked) or a client's notification
    (``<task-notification>``). Pure.
    """
    head = task.lstrip()
    if head.startswith(_NOTIFICATIONS):
        return "a notification"
    if _SLASH_MARKUP.search(head):
        return "a slash command's expansion"
    if len(task) > 80:
        return None  # a reply, a choice, a bare command are short
    text = unicodedata.normalize("NFKC", task).strip()
    if re.fullmatch(r"/[\w:.-]+", text):
        return "a bare slash command"
    folded = text.casefold()
    if _CHOICE.fullmatch(folded.replace(" ", "")):
        return "a choice"
    bare = _NOT_WORD.sub("", folded)
    if not bare:
        return "an empty prompt"
    if len(bare) <= 3 or bare in _REPLIES:
        return "a short reply"
    words = [w for w in _NOT_WORD.split(folded) if w]
    if len(words) <= 4 and all(w in _REPLIES for w in words):
        return "a short reply"
    return None


def task_threshold(embedder: Embedder) -> float:
    """theta_task of ``embedder``: its calibrated ``task_threshold``, else its
    ``dup_threshold`` (see :mod:`agentmem.embeddings`)."""
    t = getattr(embedder, "task_threshold", None)
    return float(t if isinstance(t, (int, float)) else embedder.dup_threshold)


def tool_overlap(a: Iterable[str], b: Iterable[str]) -> float:
    """|A & B| / min(|A|, |B|): 1 when one run's tools are all among the other's, 0 when
    they share none (two runs are compared only when it is above 0)."""
    sa, sb = set(a), set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / min(len(sa), len(sb))


@attrs.frozen
class LearningGroup:
    """A group a session learns from: its kind, key, runs, rewards and advantages, and why.

    ``members``: the runs' rewards as :func:`agentmem.storage.trajectories.group_reports` computed
    them (for a correction group, the one run). ``stats``: the group's rewards and
    advantages in the order of ``trajectory_ids`` (for a correction group, of its
    attempts: failed, worked, failed, worked, ...). ``cosines``: the task cosine of
    every pair of a similar group's runs; ``comparable(a, b)`` says which may be compared.
    """

    kind: str
    key: str
    task: str
    trajectory_ids: tuple[int, ...]
    members: tuple[TrajectoryReward, ...]
    stats: GroupStats
    reason: str
    corrections: tuple[Correction, ...] = ()
    cosines: Mapping[tuple[int, int], float] = attrs.field(factory=dict, eq=False)
    overlaps: Mapping[tuple[int, int], float] = attrs.field(factory=dict, eq=False)
    threshold: float = 0.0
    learned: bool = False

    @property
    def size(self) -> int:
        """How many trajectories (attempts, for a correction) Stage 1 summarises."""
        return 2 * len(self.corrections) if self.kind == "correction" else len(self.members)

    @property
    def ids_key(self) -> str:
        return json.dumps(sorted(self.trajectory_ids))

    @property
    def weight(self) -> float:
        """Stage 3's A-bar: the mean |advantage| of the group."""
        return self.stats.mean_abs_advantage

    @property
    def conditions(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for m in self.members:
            k = m.condition or "none"
            counts[k] = counts.get(k, 0) + 1
        return counts

    def comparable(self, a: int, b: int) -> bool:
        """Whether runs ``a`` and ``b`` of this group have alike tasks and tools."""
        if self.kind != "similar":
            return True
        return (
            self.cosines.get((a, b), 0.0) >= self.threshold and self.overlaps.get((a, b), 0.0) > 0
        )

    def load(
        self, db: Database, runs: Mapping[int, Trajectory] | None = None
    ) -> tuple[list[Trajectory], list[Digest]]:
        """The trajectories Stage 1 summarises, with their digests (reward, advantage).

        ``runs``: the trajectories read already, by id (a session reads a chunk of
        groups' runs at once); else they are read here.
        """
        if runs is None:
            read = load_trajectories(db, self.trajectory_ids)
        else:  # in id order, as load_trajectories gives them
            read = [runs[i] for i in sorted(self.trajectory_ids)]
        if self.kind == "correction":
            (run,) = read
            trajs: list[Trajectory] = []
            for c in self.corrections:
                trajs += list(c.attempts(run))
            digests = [
                digest(t, r, a) for t, r, a in zip(trajs, self.stats.rewards, self.stats.advantages)
            ]
            return trajs, digests
        trajs = read
        pos = {tid: k for k, tid in enumerate(self.trajectory_ids)}
        digests = [
            digest(t, self.stats.rewards[pos[t.id or 0]], self.stats.advantages[pos[t.id or 0]])
            for t in trajs
        ]
        return trajs, digests

    def as_dict(self) -> dict[str, Any]:
        """The group as ``agentmem groups --json`` shows it."""
        d: dict[str, Any] = {
            "kind": self.kind,
            "group": self.key,
            "task": self.task,
            "size": len(self.trajectory_ids),
            "status": "learned" if self.learned else "ready",
            "reason": self.reason,
            "mean": self.stats.mean,
            "std": self.stats.std,
            "trajectories": [
                {
                    "id": m.id,
                    "reward": m.reward,
                    "acceptance": m.acceptance.label,
                    "advantage": None
                    if self.kind == "correction"
                    else self.stats.advantages[self.trajectory_ids.index(m.id)],
                }
                for m in self.members
            ],
        }
        if self.kind == "correction":
            d["corrections"] = [
                {
                    "kind": c.kind,
                    "failed_call": c.failed + 1,
                    "fixed_call": c.fixed + 1,
                    "why": c.why,
                    "lesson": c.finding.text,
                }
                for c in self.corrections
            ]
        return d


@attrs.frozen
class Grouping:
    """What a session would learn from: every exact group's report, and the groups formed.

    ``groups`` holds the usable groups of every kind in the order a session takes
    them (exact, correction, similar), learned ones included (``learned``).
    ``free_runs``: the runs outside ready exact groups (alone in their group, or in a
    degenerate one), from which corrections and similar groups were formed.
    ``turns``: the runs whose prompt was no task of their own, in no exact group, and why.
    ``vectors``: the task vectors used (their ``new`` ones not stored yet).
    """

    mode: str
    reports: tuple[GroupReport, ...]
    groups: tuple[LearningGroup, ...]
    theta_task: float | None
    free_runs: int
    vectors: TaskVectors | None = attrs.field(default=None, eq=False, repr=False)
    turns: Mapping[int, str] = attrs.field(factory=dict, eq=False)

    def of_kind(self, kind: str) -> list[LearningGroup]:
        return [g for g in self.groups if g.kind == kind]


def _exact(g: GroupReport, learned: bool) -> LearningGroup:
    assert g.stats is not None
    return LearningGroup(
        kind="exact",
        key=g.key,
        task=g.task,
        trajectory_ids=tuple(m.id for m in g.members),
        members=g.members,
        stats=g.stats,
        reason="runs of the same task" if len(g.members) else "",
        learned=learned,
    )


def _correction(run: Trajectory, m: TrajectoryReward, cs: list[Correction]) -> LearningGroup:
    stats = group_stats([r for _ in cs for r in (0.0, 1.0)])
    why = "; ".join(c.why for c in cs)
    return LearningGroup(
        kind="correction",
        key=f"correction:{m.id}",
        task=run.task,
        trajectory_ids=(m.id,),
        members=(m,),
        stats=stats,
        reason=why,
        corrections=tuple(cs),
    )


def grow_similar(
    rewards: Mapping[int, float],
    neighbours: Mapping[int, Sequence[tuple[int, float]]],
    *,
    max_size: int = MAX_SIMILAR_GROUP,
) -> list[list[int]]:
    """The runs of each similar-task group, seeded by the lowest rewards (see the module doc).

    ``neighbours[r]``: the runs alike to ``r``, nearest first. A seed needs a neighbour
    with a higher reward; a group whose rewards are all equal is not formed (its runs
    stay free for other seeds).
    """
    used: set[int] = set()
    out: list[list[int]] = []
    for s in sorted(rewards, key=lambda r: (rewards[r], r)):
        if s in used:
            continue
        near = [j for j, _ in neighbours.get(s, ()) if j not in used and j in rewards]
        pos = [j for j in near if rewards[j] > rewards[s]]
        if not pos:
            continue
        members = [s, *pos, *(j for j in near if j not in pos)]
        for p in pos:
            members += [
                j
                for j, _ in neighbours.get(p, ())
                if j in rewards and j not in used and j not in members and rewards[j] < rewards[p]
            ]
        members = members[:max_size]
        if len({rewards[m] for m in members}) < 2:
            continue
        used.update(members)
        out.append(members)
    return out


def _similar(
    free: Mapping[int, TrajectoryReward],
    tasks: Mapping[int, str],
    keys: Mapping[int, str],
    vectors: TaskVectors,
    tools: Mapping[int, set[str]],
    theta: float,
) -> list[LearningGroup]:
    from ..storage.task_vectors import neighbours as knn

    def compatible(a: int, b: int) -> bool:
        return not tools[a].isdisjoint(tools[b])

    rewards = {tid: float(m.reward) for tid, m in free.items() if m.reward is not None}
    near = knn(
        vectors,
        threshold=theta,
        k=MAX_SIMILAR_GROUP - 1,
        among=sorted(rewards),
        compatible=compatible,
    )
    out = []
    for ids in grow_similar(rewards, near):
        if len({keys[t] for t in ids}) < 2:
            continue  # runs of one task: that is an exact group, not a similar one
        order = tuple(sorted(ids))
        stats = group_stats([rewards[t] for t in order])
        if stats.degenerate:
            continue
        cos: dict[tuple[int, int], float] = {}
        ov: dict[tuple[int, int], float] = {}
        for x, a in enumerate(order):
            for b in order[x + 1 :]:
                cos[(a, b)] = cos[(b, a)] = vectors.cosine(a, b)
                ov[(a, b)] = ov[(b, a)] = tool_overlap(tools[a], tools[b])
        seed = ids[0]
        shared = sorted(set.intersection(*(tools[t] for t in ids)))
        alike = ", ".join(f"{seed}~{t} {cos[(seed, t)]:.2f}" for t in ids[1:])
        reason = (
            f"tasks alike (cosine {alike}; theta_task {theta:.2f}); "
            f"tools shared by all: {', '.join(shared) or 'none'}"
        )
        out.append(
            LearningGroup(
                kind="similar",
                key="similar:" + ",".join(map(str, order)),
                task=tasks[seed],
                trajectory_ids=order,
                members=tuple(free[t] for t in order),
                stats=stats,
                reason=reason,
                cosines=cos,
                overlaps=ov,
                threshold=theta,
            )
        )
    return out


def _regroup(report: GroupReport, keep: Sequence[TrajectoryReward], reason: str) -> GroupReport:
    """``report`` with only the runs ``keep``: rewards, advantages and readiness again."""
    rewards = [m.reward for m in keep]
    stats: GroupStats | None = None
    waiting = [str(m.id) for m in keep if m.reward is None]
    if waiting:
        ready, why = False, f"waiting for acceptance of trajectory {', '.join(waiting)}"
    else:
        stats = group_stats([r or 0.0 for r in rewards])
        ready, why = len(keep) >= 2, stats.reason
    advs = stats.advantages if stats is not None and not stats.degenerate else (None,) * len(keep)
    return attrs.evolve(
        report,
        members=tuple(attrs.evolve(m, advantage=a) for m, a in zip(keep, advs)),
        stats=stats,
        ready=ready,
        reason="; ".join(x for x in (why, reason) if x),
    )


def split_turns(report: GroupReport, turns: Mapping[int, str]) -> list[GroupReport]:
    """``report`` without its runs that are no task of their own (``turns``: id -> why),
    then each of those alone, so that no exact group holds one. Pure.

    Several turns of one conversation that share its task are not repeated attempts at
    it: their rewards and advantages would compare unrelated work.
    """
    out = [m for m in report.members if m.id in turns]
    if not out:
        return [report]
    keep = [m for m in report.members if m.id not in turns]
    reports = [_regroup(report, keep, f"{len(out)} turn(s) left out")] if keep else []
    return reports + [_regroup(report, [m], f"not a task: {turns[m.id]}") for m in out]


#: Why a slash command's run is in no exact group: the importer gave it what was asked as its
#: task (``/review src/app.py``), so it may join a similar-task group.
_STATED = "a slash command in a conversation (prompt_kind)"


def _turns(db: Database, reports: Sequence[GroupReport]) -> dict[int, str]:
    """The runs of ``reports`` whose prompt was no task of its own, with why: the importer's
    ``meta["prompt_kind"]``; else, for a turn of a conversation recorded before importers
    said (``meta["turn_id"]`` and no ``prompt_kind``), :func:`not_a_task` of its task text.
    Runs recorded otherwise (the API, MCP) name their own tasks. Of these, only a slash
    command marked by the importer (its task is what was asked) may join a similar group."""
    ids = [m.id for g in reports for m in g.members]
    kinds = meta_values(db, ids, "prompt_kind") if ids else {}
    out: dict[int, str] = {
        tid: _STATED if kind == "slash" else f"a {kind} in a conversation (prompt_kind)"
        for tid, kind in kinds.items()
        if kind in TURN_KINDS
    }
    legacy = {
        m.id: why
        for g in reports
        if (why := not_a_task(g.task)) is not None
        for m in g.members
        if m.id not in kinds
    }
    if legacy:
        for tid in meta_values(db, legacy, "turn_id"):
            out[tid] = legacy[tid]
    return out


def _fixable(groups: Sequence[LearningGroup], free: Mapping[int, TrajectoryReward]) -> list[int]:
    """Every run with a verdict that failed a call and made another: those of the exact
    groups and the free ones (a run in a group is still searched for its own corrections).
    A run whose every call failed is searched too: a retry that got past its refusal (an
    escalated build that then failed on the code) is a correction though it failed
    (nileshteji-rig: gradlew's wrapper lock, then a compile error). From such a run only
    that escalation is kept (:func:`_run_corrections`): a "retry that worked" there is one the
    learning view counts as done though it failed (a failing script), and taught a false
    lesson (pt-parker-timing-system-b9: "python did the same job" of a failed speckit)."""
    runs = {m.id: m for g in groups if g.kind == "exact" for m in g.members}
    runs.update(free)
    return sorted(tid for tid, m in runs.items() if m.failed_steps > 0 and m.step_count > 1)


def _run_corrections(
    db: Database, fixable: Sequence[int], members: Mapping[int, TrajectoryReward]
) -> list[LearningGroup]:
    """A correction group for each of the ``fixable`` runs that has corrections. From a run
    whose every call failed, only an escalation that got past its refusal (:func:`_fixable`)."""
    runs = load_trajectories(db, fixable) if fixable else []
    earlier = _SessionPaths(db, runs)
    out: list[LearningGroup] = []
    for run in runs:
        cs = find_corrections(run, earlier.before(run))
        m = members[run.id or 0]
        if m.failed_steps >= m.step_count:  # no call worked: only getting past a refusal
            cs = [c for c in cs if c.finding.detail.get("change") == "escalation"]
        if cs:
            out.append(_correction(run, m, cs))
    return out


class _SessionPaths:
    """The files each session's runs used (:func:`.shell_fixes.paths_used`), read once a
    run and only when a run's "where is it" fact asks: a path the session had used in an
    earlier prompt is a slip of the agent's, not a fact it lacked. ``loaded``: runs read
    already (the fixable ones), not read again."""

    def __init__(self, db: Database, loaded: Sequence[Trajectory] = ()) -> None:
        self.db = db
        self.loaded = {t.id: t for t in loaded if t.id is not None}
        self.paths: dict[int, frozenset[str]] = {}

    def before(self, run: Trajectory) -> Callable[[], frozenset[str]]:
        def used() -> frozenset[str]:
            earlier = earlier_in_session(self.db, run.id) if run.id is not None else []
            new = [i for i in earlier if i not in self.paths]
            got = [self.loaded[i] for i in new if i in self.loaded]
            rest = [i for i in new if i not in self.loaded]
            for t in [*got, *(load_trajectories(self.db, rest) if rest else [])]:
                self.paths[t.id or 0] = paths_used(learning_view(t))
            return frozenset().union(*(self.paths.get(i, frozenset()) for i in earlier))

        return used


def form_groups(
    db: Database,
    reports: Sequence[GroupReport],
    *,
    embedder: Embedder | None,
    mode: str = "auto",
    learned: Callable[[LearningGroup], bool] = lambda g: False,
) -> Grouping:
    """The groups a session would learn from (see the module doc). Reads only; the task
    vectors it embedded are in ``Grouping.vectors.new`` for the caller to store."""
    if mode not in GROUPINGS:
        from ..errors import InvalidRecordError

        raise InvalidRecordError(f"grouping must be one of {', '.join(GROUPINGS)}, not {mode!r}")
    turns = _turns(db, reports)
    reports = [r for g in reports for r in split_turns(g, turns)]
    groups: list[LearningGroup] = []
    free: dict[int, TrajectoryReward] = {}
    tasks: dict[int, str] = {}
    keys: dict[int, str] = {}
    for g in reports:
        if g.usable:
            groups.append(_exact(g, False))
        elif g.stats is not None:  # alone in its group, or degenerate: free for what follows
            for m in g.members:
                if m.reward is not None:
                    free[m.id] = m
                    tasks[m.id] = g.task
                    keys[m.id] = g.key
    groups = [attrs.evolve(x, learned=learned(x)) for x in groups]
    n_free = len(free)
    theta: float | None = None
    vectors = None
    if mode == "auto":
        members = {x.id: x for g in groups for x in g.members}
        members.update(free)
        for fix in _run_corrections(db, _fixable(groups, free), members):
            free.pop(fix.trajectory_ids[0], None)  # a run in a correction joins no similar group
            groups.append(attrs.evolve(fix, learned=learned(fix)))
    for tid, why in turns.items():
        if not why.startswith(_STATED):  # its task text is not what it did: no similar group
            free.pop(tid, None)
    if mode in ("similar", "auto") and len(free) >= 2 and embedder is not None:
        from ..storage.task_vectors import task_vectors

        theta = task_threshold(embedder)
        tools = {tid: {t for t, _ in ts} for tid, ts in run_tools(db, free).items()}
        vectors = task_vectors(db, {tid: tasks[tid] for tid in free}, embedder)
        for sim in _similar(free, tasks, keys, vectors, tools, theta):
            groups.append(attrs.evolve(sim, learned=learned(sim)))
    elif mode in ("similar", "auto") and embedder is not None:
        theta = task_threshold(embedder)
    return Grouping(
        mode=mode,
        reports=tuple(reports),
        groups=tuple(groups),
        theta_task=theta,
        free_runs=n_free,
        vectors=vectors,
        turns=turns,
    )
