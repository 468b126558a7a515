"""What happened after a lesson was served: verdicts on the runs, and retirement by use.

For each lesson a prompt got (or that the holdout withheld) and the run that prompt
became (:mod:`agentmem.storage.served`), :func:`verdict` judges the run against the
lesson's stored rule with :func:`agentmem.learning.rules.applies` and
:func:`~agentmem.learning.rules.follows`:

* **situation**: the rule applies to the run (it met what the lesson is about);
* **followed**: in that situation, the run did what the lesson says;
* **repeated**: in that situation, the run did not follow it *and* a call of the
  lesson's tools failed: the mistake it warns about happened anyway. (A run that
  ignored the lesson without a failure is neither followed nor repeated: ignoring it
  did no harm there.)

A lesson whose rule cannot be tested this way (a shell command's value, a two-way
substitution: ``testable`` false) but names its tools is judged by its tools alone
(:func:`tool_verdict`, ``judged_by = "tools"``): the situation is a call of one of them,
the mistake a failed one. That is a coarser outcome (any failure of the tool counts), so
it never retires a lesson; with a holdout it is still a fair comparison, since the
holdout decides at random who gets the lesson. A lesson with neither gets no verdict.

**Retirement by use** (:func:`retirements`): a live lesson whose situation arose in at
least :data:`RETIRE_MIN_SITUATIONS` runs it was served to (ReMe's 5), with the mistake
repeated in at least half of them, is retired by a journaled, undoable ``DELETE`` whose
reason gives the counts, in the session whose verdicts tipped it. Retired rather than
flagged: a lesson an agent reads and still fails on half the time is either wrong or
ignored, and either way it takes a place in the prompt that another lesson could
use (precision first). One exception: when the holdout shows the mistake is
significantly *more* frequent without the lesson (Newcombe's interval above 0), it
helps partly and stays. A lesson whose retirement the user undid is weighed again on the
prompts answered after the undo only: the undo is the user's say, and only new evidence
retires it again.

:func:`judge_served` is the step a learning session runs inside its write transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..agents import RunView, ToolKind, command_line, parse, spec_for
from ..effect import MIN_RUNS, newcombe
from ..records import Operation, Step
from ..served import log_path
from ..storage import journal
from ..storage import served as store
from ..storage.journal import AppliedOp
from ..storage.trajectories import load_trajectories
from .rules import Rule, applies, follows

__all__ = [
    "RETIRE_MIN_SITUATIONS",
    "judge",
    "judge_served",
    "retirements",
    "tool_verdict",
    "verdict",
]

#: Served situations a lesson needs before it can be retired by use (ReMe's 5).
RETIRE_MIN_SITUATIONS = 5


def verdict(rule: Rule | None, run: RunView) -> tuple[bool | None, bool | None, bool | None]:
    """(situation, followed, repeated) of one run for one lesson's rule (module doc); the
    run as learning reads it, so a no match or a failed test run is no repeated mistake."""
    task, steps = run.task, run.steps
    if rule is None or not rule.testable:
        return None, None, None
    if not applies(rule, task, steps):
        return False, False, False
    if follows(rule, task, steps):
        return True, True, False
    about = set(rule.tools) | {t for t in (rule.wrong, rule.helper) if t}
    failed = any(not s.success for s in steps if not about or s.tool in about)
    return True, False, failed


def tool_verdict(
    tools: Sequence[str], run: RunView
) -> tuple[bool | None, bool | None, bool | None]:
    """(situation, followed, repeated) judged by a lesson's tools alone (module doc)."""
    if not tools:
        return None, None, None
    calls = [s for s in run.steps if _calls(tools, s)]
    if not calls:
        return False, False, False
    failed = any(not s.success for s in calls)
    return True, not failed, failed


def _calls(tools: Sequence[str], step: Step) -> bool:
    """Whether ``step`` calls one of ``tools``: the tool itself, or, for a shell lesson,
    whose tools are programs (``cat``, ``git``), a shell call that runs one of them."""
    if step.tool in tools:
        return True
    found = spec_for(step.tool)
    if found is None or found[1].kind not in (ToolKind.SHELL, ToolKind.SHELL_INPUT):
        return False
    return any(p in tools for p in parse(command_line(found[1], step.params)).programs)


def judge(
    rule: Rule | None, run: RunView
) -> tuple[bool | None, bool | None, bool | None, str | None]:
    """A run's verdict for a lesson and what judged it: its rule, else its tools."""
    if rule is None:
        return None, None, None, None
    if rule.testable:
        return (*verdict(rule, run), "rule")
    v = tool_verdict(rule.tools, run)
    return (*v, "tools" if v[0] is not None else None)


def _why(served: Mapping[str, int], held: Mapping[str, int]) -> str:
    text = (
        f"retired by use: its mistake happened in {served['repeated']} of the "
        f"{served['situations']} runs it was served to that met its situation "
        f"(followed in {served['followed']})"
    )
    if held["situations"]:
        text += f"; held out: {held['repeated']} of {held['situations']}"
    return text


def _helps(served: Mapping[str, int], held: Mapping[str, int]) -> bool:
    """Whether the holdout shows the lesson prevents the mistake (interval above 0)."""
    ns, nh = served["situations"], held["situations"]
    if ns < MIN_RUNS or nh < MIN_RUNS:
        return False
    lo, _ = newcombe(held["repeated"], nh, served["repeated"], ns)
    return lo > 0


def retirements(
    figures: Mapping[int, Mapping[str, Mapping[str, int]]], tipped: set[int]
) -> list[Operation]:
    """The DELETEs that retire lessons by use (module doc), for the lessons in ``tipped``
    (those this session's verdicts added a served situation to)."""
    out = []
    for eid in sorted(tipped):
        arms = figures.get(eid)
        if arms is None:
            continue
        s, h = arms["served"], arms["held"]
        n = s["situations"]
        if n >= RETIRE_MIN_SITUATIONS and 2 * s["repeated"] >= n and not _helps(s, h):
            out.append(
                Operation(
                    "DELETE",
                    targets=(eid,),
                    origin="data",
                    note=_why(s, h),
                    detail={"retired_by_use": {"served": dict(s), "held": dict(h)}},
                )
            )
    return out


def _figures(db: Any, ids: Sequence[int]) -> dict[int, Any]:
    """The rule-judged figures retirement weighs: for a lesson whose retirement by use the
    user undid, only those of the prompts answered since (the undo is the user's say)."""
    restored = store.restored_at(db, ids)
    figures = store.counts(db, [i for i in ids if i not in restored], judged_by="rule")
    for eid, at in restored.items():
        figures.update(store.counts(db, [eid], judged_by="rule", since=at))
    return figures


def _db_file(db: Any) -> str | None:
    for row in db.execute("PRAGMA database_list").fetchall():
        if row[1] == "main":
            return str(row[2]) or None
    return None


def judge_served(db: Any, session_id: int) -> tuple[list[AppliedOp], dict[str, int]]:
    """A learning session's step, in its write transaction: read the served log, match
    answers to runs, judge them, and retire lessons by use. (The retiring operations
    as applied, and the figures for the report.)"""
    path = _db_file(db)
    added, skipped = store.ingest(db, log_path(path)) if path else (0, 0)
    matched = store.match(db)
    rows = store.to_judge(db)
    runs = {t.id: t for t in load_trajectories(db, sorted({r["trajectory_id"] for r in rows}))}
    verdicts: list[store.Verdict] = []
    tipped: set[int] = set()
    for r in rows:
        v = judge(Rule.stored(r["rule"], r["text"]), RunView.of(runs[r["trajectory_id"]]))
        verdicts.append((r["id"], *v))
        if v[0] and v[3] == "rule" and not r["held"] and r["status"] == "live":
            tipped.add(int(r["experience_id"]))
    store.judge(db, session_id, verdicts)
    ops = retirements(_figures(db, sorted(tipped)), tipped)
    applied = journal.apply_operations(db, session_id, ops, {}) if ops else []
    figures = {
        "served_read": added,
        "served_skipped": skipped,
        "served_matched": matched,
        "served_judged": len(verdicts),
        "retired_by_use": len(ops),
    }
    return applied, figures
