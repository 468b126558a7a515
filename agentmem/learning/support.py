"""Evidence per experience: the groups and runs that support or contradict a lesson. Pure.

Every lesson learned from the data carries a :class:`~agentmem.learning.rules.Rule`.
In a learning session, each group's runs are checked against the rule of every
new lesson and every live experience that has one (:func:`group_tally`):

* the runs the rule applies to are split into those that follow it and those that
  do not; a group with runs on both sides gives a verdict: it **supports** the
  lesson when the followers' mean advantage is higher, it **contradicts** it when
  lower (a tie says nothing);
* in such a group, a run that followed the lesson and was positive, or ignored it
  and was negative, is a supporting run; one that followed it and was negative, or
  ignored it and was positive, is a contradicting run;
* a group where nobody followed the lesson and a run succeeded without it
  contradicts it (it was not needed there); a positive run succeeded when the user
  accepted it, or when its last call of the lesson's tools worked (a rejected run
  that only failed less than the others, without such a call, did not);
* a group where every run follows the lesson gives no verdict: it cannot tell
  whether the lesson mattered.

:func:`evidence_operations` turns the session's tallies into journaled operations:

* a new lesson (ADD) starts with the support of its own groups (their verdicts, and
  each own group whose runs give none counts as one supporting group, with its
  explaining runs: it proved the lesson; so a lesson merged from many groups in one
  session weighs as it would, learned session by session) plus the verdicts of the
  session's other groups; a new lesson that its own groups do not support is held
  (rejected, with the reason, never applied); one that the session's groups
  contradict as often as they support is stated for its failure only when it has
  such a form (``detail["conditional"]``, from :mod:`.generality`) that they do not
  contradict, else held;
* a Stage 3 MODIFY (the same lesson found again) adds its tally to the experience,
  and becomes a ``CONFIRM`` when its text is the live text word for word;
* a live experience that a group confirms gets a ``CONFIRM`` (the text does not
  change), one that a group contradicts a ``CONTRADICT``; both are undoable;
* **retirement**: a live experience contradicted by at least
  :data:`RETIRE_MIN_CONTRADICTIONS` groups in all, and by more groups than support
  it, is retired: a ``DELETE`` journaled right after the ``CONTRADICT`` that tipped
  it, its reason giving the counts (ExpeL's importance counter, dropped at zero,
  with a floor so that one contradicting group never removes a lesson).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

from ..agents import RunView
from ..records import Experience, Operation, Step, Trajectory
from ..rewards import is_negative, is_positive
from .digest import Digest
from .rules import Rule, applies, follows, needed_tools

__all__ = [
    "RETIRE_MIN_CONTRADICTIONS",
    "GroupRun",
    "Tally",
    "evidence_operations",
    "group_runs",
    "group_tally",
    "retired",
]

#: A lesson is retired only once at least this many groups contradicted it.
RETIRE_MIN_CONTRADICTIONS = 2


@attrs.frozen
class GroupRun:
    """One run of a learned group: its task, steps, advantage and the user's verdict."""

    task: str
    steps: tuple[Step, ...]
    advantage: float
    accepted: bool | None = None

    @property
    def positive(self) -> bool:
        return is_positive(self.advantage, self.accepted)

    @property
    def negative(self) -> bool:
        return is_negative(self.advantage, self.accepted)


@attrs.frozen
class Tally:
    """Groups and runs that support or contradict a lesson (or a change to those counts)."""

    support_groups: int = 0
    support_runs: int = 0
    contradict_groups: int = 0
    contradict_runs: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(
            self.support_groups + other.support_groups,
            self.support_runs + other.support_runs,
            self.contradict_groups + other.contradict_groups,
            self.contradict_runs + other.contradict_runs,
        )

    @property
    def empty(self) -> bool:
        return self == Tally()

    def as_dict(self) -> dict[str, int]:
        return attrs.asdict(self)

    @classmethod
    def of(cls, e: Experience) -> Tally:
        return cls(e.support_groups, e.support_runs, e.contradict_groups, e.contradict_runs)


def group_runs(trajs: Sequence[Trajectory], digests: Sequence[Digest]) -> list[GroupRun]:
    """The runs of one learned group, as :func:`group_tally` reads them."""
    views = [RunView.of(t) for t in trajs]  # the runs as learning reads them
    return [GroupRun(v.task, v.steps, d.advantage, d.accepted) for v, d in zip(views, digests)]


def group_tally(rule: Rule, runs: Sequence[GroupRun]) -> tuple[Tally, float | None]:
    """One group's verdict on ``rule`` (see the module doc): the tally and the lift (the
    followers' mean advantage minus the others'), or (empty tally, None) with no verdict."""
    yes: list[GroupRun] = []
    no: list[GroupRun] = []
    for r in runs:
        if applies(rule, r.task, r.steps):
            (yes if follows(rule, r.task, r.steps) else no).append(r)
    if not no:
        return Tally(), None
    if not yes:  # nobody followed it: it was not needed if a run succeeded without it
        succeeded = [r for r in no if _succeeded(rule, r)]
        if not succeeded:
            return Tally(), None
        return Tally(0, sum(1 for r in no if r.negative), 1, len(succeeded)), None
    lift = sum(r.advantage for r in yes) / len(yes) - sum(r.advantage for r in no) / len(no)
    agree = sum(1 for r in yes if r.positive) + sum(1 for r in no if r.negative)
    disagree = sum(1 for r in yes if r.negative) + sum(1 for r in no if r.positive)
    if lift > 1e-9:
        return Tally(1, agree, 0, disagree), lift
    if lift < -1e-9:
        return Tally(0, agree, 1, disagree), lift
    return Tally(), None


def _succeeded(rule: Rule, r: GroupRun) -> bool:
    """Whether a positive run succeeded: the user accepted it, or its last call of the
    lesson's tools worked. A rejected run that only failed less than the others, and
    never got a call the lesson is about to work, did not."""
    if not r.positive:
        return False
    if r.accepted is True:
        return True
    calls = [s for s in r.steps if s.tool in rule.tools]
    return bool(calls) and calls[-1].success


def retired(t: Tally) -> bool:
    """The retirement rule (module doc): contradicted by enough groups, and by more than
    support it."""
    return (
        t.contradict_groups >= RETIRE_MIN_CONTRADICTIONS and t.contradict_groups > t.support_groups
    )


def _sum(rule: Rule, groups: Mapping[str, Sequence[GroupRun]], keys: Iterable[str]) -> Tally:
    total = Tally()
    for k in keys:
        total += group_tally(rule, groups.get(k, ()))[0]
    return total


def _by_tool(groups: Mapping[str, Sequence[GroupRun]]) -> dict[str, set[str]]:
    """tool -> the groups whose runs call it."""
    out: dict[str, set[str]] = defaultdict(set)
    for k, runs in groups.items():
        for r in runs:
            for s in r.steps:
                out[s.tool].add(k)
    return out


def _near(rule: Rule, keys: Sequence[str], by_tool: Mapping[str, set[str]]) -> list[str]:
    """Of ``keys`` (in order), the groups ``rule`` could apply to: those whose runs call one
    of its tools (:func:`agentmem.learning.rules.needed_tools`); the others' tally is
    empty. A session of thousands of groups tallies each lesson on a few of them."""
    tools = needed_tools(rule)
    if tools is None:
        return list(keys)
    near: set[str] = set()
    for t in tools:
        near |= by_tool.get(t, set())
    return [k for k in keys if k in near] if len(near) * 8 > len(keys) else sorted(near)


def _contested(t: Tally) -> bool:
    return bool(t.contradict_groups) and t.contradict_groups >= t.support_groups


def _why(t: Tally) -> str:
    return (
        f"supported by {t.support_groups} group(s) ({t.support_runs} runs), contradicted by "
        f"{t.contradict_groups} ({t.contradict_runs} runs)"
    )


#: Whether the runs of a group (by key) already count in an experience's evidence (by
#: id): then the group gives it no verdict again (``learn --relearn``, issue 31).
Counted = Callable[[int | None, str], bool]


def _never(_eid: int | None, _key: str) -> bool:
    return False


@attrs.frozen
class _Session:
    """The session's learned groups, as the tallies read them."""

    runs: Mapping[str, Sequence[GroupRun]]
    keys: list[str]
    by_tool: dict[str, set[str]]

    @classmethod
    def of(cls, groups: Mapping[str, Sequence[GroupRun]]) -> _Session:
        return cls(groups, sorted(groups), _by_tool(groups))

    def near(self, rule: Rule) -> list[str]:
        return _near(rule, self.keys, self.by_tool)

    def tally(self, rule: Rule, keys: Iterable[str]) -> Tally:
        return _sum(rule, self.runs, keys)

    def others(
        self, rule: Rule, own: Sequence[str], skip: Counted = _never, eid: int | None = None
    ) -> Tally:
        """The tally of the groups ``rule`` could apply to, ``own`` and those whose runs
        already count for experience ``eid`` aside."""
        return self.tally(rule, [k for k in self.near(rule) if k not in own and not skip(eid, k)])


def evidence_operations(
    ops: Sequence[Operation],
    live: Sequence[Experience],
    groups: Mapping[str, Sequence[GroupRun]],
    counted: Counted = _never,
) -> tuple[list[Operation], list[tuple[Operation, str]]]:
    """The session's operations with their tallies, plus CONFIRM, CONTRADICT and retiring
    DELETE operations for live experiences (see the module doc): (operations, held).
    A group whose runs all count already for an experience (``counted``) is no evidence
    on it again: a run counts once."""
    out: list[Operation] = []
    held: list[tuple[Operation, str]] = []
    session = _Session.of(groups)
    by_id = {e.id: e for e in live}
    touched = {t for op in ops if op.kind != "ADD" for t in op.targets}
    for op in ops:
        rule = op.detail.get("rule")
        if op.kind not in ("ADD", "MODIFY") or not isinstance(rule, Rule):
            out.append(op)
            continue
        kept, why = _weigh_lesson(op, rule, session, by_id, counted)
        if kept is None:
            held.append((op, why))
        elif kept.kind != "CONFIRM" or not kept.detail["tally"].empty:
            out.append(kept)  # (a confirmation by runs counted before confirms nothing)
    for e in live:
        out.extend(_live_verdicts(e, session, touched, counted))
    return out, held


def _weigh_lesson(
    op: Operation,
    rule: Rule,
    session: _Session,
    by_id: Mapping[int | None, Experience],
    counted: Counted = _never,
) -> tuple[Operation | None, str]:
    """A new (ADD) or found-again (MODIFY) lesson with its tally, or (None, why it is held)."""
    own = [g for g in (op.detail.get("merged_groups") or [op.group or ""]) if g]
    target = op.targets[0] if op.kind == "MODIFY" and op.targets else None
    fresh = [g for g in own if not counted(target, g)]  # runs not yet behind the target
    # its own groups count as they proved it, each that gives no verdict of its own: so a
    # lesson learned from many groups at once weighs as it would, learned one by one
    per = {g: session.tally(rule, [g]) for g in fresh}
    silent = [g for g, t in per.items() if t.empty]
    mine = sum(per.values(), Tally())
    if silent or not own:
        mine = mine + _proved(op, own, silent)
    others = session.others(rule, own, counted, target)
    if mine.contradict_groups and not mine.support_groups:
        return None, f"held: its own group's runs go against it ({_why(mine)})"
    total = mine + others
    if _contested(total):
        conditional = _failure_only(op, total, mine, own, session)
        if conditional is not None:
            return conditional, ""
        return None, (
            f"held: this session's groups contradict it as often as they support it ({_why(total)})"
        )
    old = by_id.get(op.targets[0]) if op.kind == "MODIFY" and op.targets else None
    if old is not None and old.text == op.text:  # found again, word for word: a confirmation
        note = op.note.replace("ADD turned MODIFY", "ADD turned CONFIRM") or "found again"
        op = attrs.evolve(op, kind="CONFIRM", text=None, note=note)
    return attrs.evolve(op, detail={**op.detail, "tally": total}), ""


def _proved(op: Operation, own: Sequence[str], fresh: Sequence[str]) -> Tally:
    """What a lesson's own groups ``fresh`` give it as they proved it (none of their runs
    gives a verdict on its rule): all its groups, with its finding's support; else those
    groups only (a part of a merged lesson's groups, or under ``learn --relearn`` those
    whose runs do not yet count for its target), with their own support
    (``detail["group_support"]``), so that a run counts once."""
    f = op.detail.get("evidence")
    support = int(getattr(f, "support", 1) or 1)
    if not own or list(fresh) == list(own):
        return Tally(len(own) or 1, support)
    per = op.detail.get("group_support")
    runs = sum(int(per.get(g) or 1) for g in fresh) if isinstance(per, dict) else len(fresh)
    return Tally(len(fresh), runs)


def _failure_only(
    op: Operation, total: Tally, mine: Tally, own: Sequence[str], session: _Session
) -> Operation | None:
    """A contested new lesson stated for its failure only (``detail["conditional"]``), when
    the session's groups do not contest that form; else None."""
    alt = op.detail.get("conditional")
    if alt is None or op.kind != "ADD":
        return None
    alt_text, alt_rule = alt
    a_mine = session.tally(alt_rule, own)
    a_mine = a_mine if not a_mine.empty else mine
    a_total = a_mine + session.others(alt_rule, own)
    if _contested(a_total) or (a_mine.contradict_groups and not a_mine.support_groups):
        return None
    why = f"stated for its failure only: the unconditional lesson is {_why(total)}"
    return attrs.evolve(
        op,
        text=alt_text,
        note="; ".join(x for x in (op.note, why) if x),
        detail={**op.detail, "rule": alt_rule, "tally": a_total},
    )


def _live_verdicts(
    e: Experience, session: _Session, touched: set[int], counted: Counted = _never
) -> list[Operation]:
    """CONFIRM and CONTRADICT operations for a live experience the session's operations do
    not touch, one per group that gives a verdict (and whose runs do not count for it
    already), and the DELETE that retires it."""
    rule = Rule.stored(e.rule, e.text)
    if rule is None or e.id is None or e.id in touched:
        return []
    out: list[Operation] = []
    now = Tally.of(e)
    for k in session.near(rule):
        if counted(e.id, k):
            continue
        t, lift = group_tally(rule, session.runs[k])
        if t.empty:
            continue
        kind = "CONFIRM" if t.support_groups else "CONTRADICT"
        now += t
        note = (
            "no run followed it and a run succeeded without it"
            if lift is None
            else f"followers' mean advantage {lift:+.3f} over the others"
        )
        out.append(
            Operation(
                kind,
                targets=(e.id,),
                domain=e.domain,
                group=k,
                origin="data",
                note=note,
                detail={"tally": t},
            )
        )
        if kind == "CONTRADICT" and retired(now):
            out.append(
                Operation(
                    "DELETE",
                    targets=(e.id,),
                    group=k,
                    origin="data",
                    note=f"retired: {_why(now)}",
                    detail={"retired": now},
                )
            )
            break
    return out
