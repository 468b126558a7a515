"""Stage 2 from the data for a similar-task group: what other tasks' good runs did differently.

In a group of runs of *different* tasks (see :mod:`agentmem.learning.grouping`)
most differences between a failed run and a good one are differences of task:
another file, another person, another flight. Only what is a property of the
tool can be learned across tasks, and a negative run is compared only with the
positive runs whose tasks are alike to its own (``comparable``), call by call
of the same tool. For each negative, its failures in order; the first that one
of these rules explains is its root cause (as in
:mod:`agentmem.learning.evidence`, whose finding kinds and lesson forms these
are):

1. ``param_name``: the failed call of T passed a parameter name that no
   comparable positive ever passed to T, and/or lacked one that every one of
   them passed (one of each at most), and the error names one of the two ->
   "Call T with right=..., never wrong=...".
2. ``prerequisite``: exactly one tool U was called successfully before T in
   every comparable positive that called T successfully and not before the
   negative's failed call (which passed no parameter those calls never did)
   -> "Before calling T, call U first; without it T
   fails with e". When there are several such tools, the one the error names
   (a word of its name that is not a word of T's: "Please log in" names
   ``ticket_login`` for ``create_ticket``), else the one whose calls passed
   none of the values the positives' call of T then used (``mkdir temp``
   before ``mv`` into ``temp`` is that task's own step), if exactly one.
3. ``param_value``: the failed call passed X a value of another kind than
   every value X took in the group's successful calls of T, in at least two
   runs, all of one kind, where a kind is the value's type and, for
   text, whether it holds digits, letters, spaces, which punctuation, and its
   letter case (an ID or code such as ``USR002`` or ``SFO`` against a name, a
   date as ``2026-11-10`` against ``11/10/2026``, ``START`` against ``start``)
   -> "Call T with X like good; never X=bad, which failed with e". Only a
   parameter the error names (its name, a word of it, or the value passed) is
   considered: an error that says nothing of X is not about X's value. Values
   the group passes in every form teach nothing across tasks, nor do values
   every run took from its own task's words (file names the users named).
4. ``wrong_tool``: the failed call's tool W was never called by a comparable
   positive, its error says nothing of the call's own parameters or values
   (that would be a wrong call, not a wrong tool), and exactly one tool R was
   called by all of them, never by the
   negative, of W's domain, and can stand in for W (a shared name part,
   parameter names or values) -> "Use R, not W, for requests like <the words
   of the negative's task that asked for the step>".

A recovery ("if T fails with e, call U and retry") is the run's own correction
(:mod:`agentmem.learning.corrections`) and a skipped step depends on the task:
neither is inferred across tasks. And an inference across tasks gives way to
direct evidence: when a session's exact groups or a run's own corrections
already showed what fixes the same error of the same tool, a cross-task
finding that names another fix for it is dropped (:func:`overruled`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ..agents import is_shell, learning_view
from ..records import Step, Trajectory
from .digest import Digest
from .evidence import (
    Member,
    can_stand_in,
    holds_code,
    inert_tools,
    is_scalar,
    mentions,
    name_parts,
    names_shell,
    param_name_finding,
    param_value_finding,
    param_values,
    prerequisite_finding,
    reached_otherwise,
    retried_otherwise,
    scoped,
    shared_name_words,
    wrong_tool_finding,
)
from .findings import KIND_RANK, Finding

__all__ = ["error_gist", "find_crosstask_evidence", "overruled", "value_kind"]


def value_kind(v: Any) -> tuple[Any, ...]:
    """The kind of a value (rule 3): its type and, for text, the classes of its characters."""
    if isinstance(v, bool) or not isinstance(v, str):
        return (type(v).__name__,)
    letters = [c for c in v if c.isalpha()]
    if not letters:
        case = "none"
    elif all(c.isupper() for c in letters):
        case = "upper"
    elif all(c.islower() for c in letters):
        case = "lower"
    elif letters[0].isupper() and all(c.islower() for c in letters[1:]):
        case = "capitalised"
    else:
        case = "mixed"
    punct = "".join(sorted({c for c in v if not c.isalnum() and not c.isspace()}))
    return ("str", any(c.isdigit() for c in v), bool(letters), case, " " in v.strip(), punct)


def _named(task: str, value: Any) -> bool:
    """Whether the task text names ``value`` as it was passed."""
    text = str(value)
    return len(text) >= 2 and text in task


def _mentions_value(error: str, value: Any) -> bool:
    text = str(value)
    return len(text) >= 2 and text.lower() in error.lower()


def _ok_calls(ms: Sequence[Member], tool: str) -> list[tuple[Member, int]]:
    return [(m, i) for m in ms for i, s in enumerate(m.steps) if s.tool == tool and s.success]


def _name_rule(n: Member, i: int, pos: Sequence[Member], e: str) -> Finding | None:
    s = n.steps[i]
    calls = _ok_calls(pos, s.tool)
    if not calls:
        return None
    names = [set(m.steps[k].params) for m, k in calls]
    used = set().union(*names)
    always = set.intersection(*names)
    extra = sorted(set(s.params) - used)
    missing = sorted(always - set(s.params))
    if not (extra or missing) or len(extra) > 1 or len(missing) > 1:
        return None
    if not mentions(e, extra + missing):
        return None
    rep = calls[0][0].steps[calls[0][1]].params
    return param_name_finding(
        s.tool,
        s.domain or "",
        e,
        {k: s.params[k] for k in extra},
        {k: rep[k] for k in missing},
    )


def _prereq_rule(n: Member, i: int, pos: Sequence[Member], e: str) -> Finding | None:
    s = n.steps[i]
    calls = _ok_calls(pos, s.tool)
    if not calls:
        return None
    used = set().union(*(set(m.steps[k].params) for m, k in calls))
    if set(s.params) - used:
        return None  # a parameter no good call passed: the call's form, not what came before
    before: list[set[str]] = []
    feeds: set[str] = set()  # helpers that passed a value the call of T then used
    for m in {id(m): m for m, _ in calls}.values():
        first = next(k for k, st in enumerate(m.steps) if st.tool == s.tool and st.success)
        before.append({st.tool for st in m.steps[:first] if st.success and st.output.strip()})
        passed = param_values(m.steps[first].params)
        feeds |= {st.tool for st in m.steps[:first] if param_values(st.params) & passed}
    cands = set.intersection(*before) - {st.tool for st in n.steps[:i] if st.success} - {s.tool}
    if len(cands) > 1:  # the one the error names ("Please log in" names ticket_login)
        said = re.sub(r"[^a-z]", "", e.lower())
        own = name_parts(s.tool)
        named = {u for u in cands if any(p[:5] in said for p in name_parts(u) - own if len(p) > 3)}
        # else the one that prepared none of the call's arguments (mkdir temp before mv
        # into temp is that task's step; cd is what every such call needs)
        cands = named or (cands - feeds)
    if len(cands) != 1:
        return None
    return prerequisite_finding(s.tool, next(iter(cands)), s.domain or "", e)


def _value_rule(n: Member, i: int, group: Sequence[Member], e: str) -> tuple[Finding | None, bool]:
    """(finding, whether some value of the call is of another kind than the group's)."""
    s = n.steps[i]
    calls = _ok_calls(group, s.tool)
    params = [x for x, v in s.params.items() if is_scalar(v) and not holds_code(s.tool, x, v)]
    # an error that names some of the call's parameters or values is about those
    named = [x for x in params if mentions(e, [x]) or _mentions_value(e, s.params[x])]
    for x in named:
        bad = s.params[x]
        found = [(m, m.steps[k].params[x]) for m, k in calls if x in m.steps[k].params]
        found = [(m, g) for m, g in found if is_scalar(g)]
        good = [g for _, g in found]
        if any(holds_code(s.tool, x, g) for g in good):
            continue  # another run's script: code, never a value to tell (review 27)
        if len({id(m) for m, _ in found}) < 2:
            continue  # one run's value: no kind to speak of
        if _named(n.traj.task, bad) and all(_named(m.traj.task, g) for m, g in found):
            continue  # every run passed what its task named (file names): not the tool's format
        kinds = {value_kind(g) for g in good}
        if len(kinds) != 1 or value_kind(bad) in kinds:
            continue
        example = max(sorted({repr(g): g for g in good}.values(), key=repr), key=good.count)
        # other runs' values of one kind the failed one is not: the kind was wrong, unless
        # the run then reached what the value named another way
        shown = retried_otherwise(n.steps, i, x) or not reached_otherwise(n.steps, i, x)
        return param_value_finding(
            s.tool, s.domain or "", e, x, bad, example, None, right_value_shown=shown
        ), True
    return None, False


def _tool_rule(n: Member, i: int, pos: Sequence[Member], e: str, task: str) -> Finding | None:
    w = n.steps[i]
    if _ok_calls(pos, w.tool):
        return None
    if mentions(e, list(w.params)) or any(_mentions_value(e, v) for v in w.params.values()):
        return None  # an error about the call's own arguments: the tool was right, its call not
    mine = {st.tool for st in n.steps}
    per_run = [{st.tool for st in m.steps if st.success} for m in pos]
    common = set.intersection(*per_run) - mine if per_run else set()
    cands: dict[str, Step] = {}
    for r in sorted(common):
        step = next(st for m in pos for st in m.steps if st.tool == r and st.success)
        same_domain = (step.domain or "") == (w.domain or "") and (w.domain or "") != "general"
        if (same_domain or shared_name_words(r, w.tool)) and can_stand_in((), step, w):
            cands[r] = step
    if len(cands) != 1:
        return None
    r_step = next(iter(cands.values()))
    # the words of this run's task that asked for the step: match on its own call's values
    asked = Step(tool=r_step.tool, params=dict(w.params), output="", success=True)
    return wrong_tool_finding(asked, w, w.domain or r_step.domain or "", e, None, task)


def find_crosstask_evidence(
    members: Sequence[tuple[Trajectory, Digest]],
    *,
    comparable: Callable[[int, int], bool],
    max_findings: int = 3,
) -> list[Finding]:
    """The findings of one similar-task group, most supported first (see the module doc).

    ``comparable(a, b)``: whether runs ``a`` and ``b`` (trajectory ids) have alike tasks.
    """
    ms = [Member(learning_view(t), d) for t, d in members]
    pos = [m for m in ms if m.dig.positive]
    neg = [m for m in ms if m.dig.negative]
    if not pos or not neg:
        return []
    inert = inert_tools(ms) | {s.tool for m in ms for s in m.steps if is_shell(s.tool)}
    found: dict[tuple[str, ...], Finding] = {}
    for n in neg:
        mine = [p for p in pos if comparable(n.traj.id or 0, p.traj.id or 0)]
        if not mine:
            continue
        for fail in n.dig.failures:
            if fail.recovered or fail.tool in inert:
                continue
            i, e = fail.index, fail.error
            f = _name_rule(n, i, mine, e)
            if f is None:
                value, typed = _value_rule(n, i, ms, e)
                f = value if typed else _prereq_rule(n, i, mine, e)
            if f is None:
                f = _tool_rule(n, i, mine, e, n.traj.task)
            if f is not None and not any(x in inert for x in f.facts) and not names_shell(f):
                old = found.get(f.key)
                found[f.key] = f if old is None else _more(old, f)
                break  # the first failure explained is the run's root cause
    from .merge import merge_findings

    merged = merge_findings(list(found.values()))
    ranked = sorted(merged, key=lambda f: (-f.support, KIND_RANK[f.kind], f.text))
    return [scoped(f) for f in ranked[:max_findings]]


def _more(old: Finding, new: Finding) -> Finding:
    import attrs

    return attrs.evolve(old, support=old.support + new.support)


def error_gist(error: str) -> frozenset[str]:
    """The words of an error, without what it quoted or numbered (file names, ids):
    ``touch: cannot touch 'a.txt': File exists`` -> {touch, cannot, file, exists}."""
    e = re.sub(r"'[^']*'|\"[^\"]*\"", " ", error or "")
    return frozenset(
        w.lower() for w in re.findall(r"[A-Za-z0-9_./-]+", e) if re.fullmatch(r"[A-Za-z]{3,}", w)
    )


def _fix(f: Finding) -> tuple[str, ...]:
    return (f.kind, *f.facts[1:]) if f.kind != "wrong_tool" else (f.kind, f.facts[0])


def _failing_tool(f: Finding) -> str:
    return f.facts[1] if f.kind == "wrong_tool" else f.tool


def overruled(
    findings: Sequence[Finding], proven: Sequence[Finding]
) -> tuple[list[Finding], list[tuple[Finding, Finding]]]:
    """(kept, [(dropped, the proven finding that overrules it)]): a cross-task finding
    about an error of a tool that ``proven`` findings (an exact group's, a run's own
    correction's) already explain with another fix."""
    known: dict[tuple[str, frozenset[str]], Finding] = {}
    for f in proven:
        gist = error_gist(str(f.detail.get("error") or ""))
        if gist:
            known.setdefault((_failing_tool(f), gist), f)
    kept: list[Finding] = []
    dropped: list[tuple[Finding, Finding]] = []
    for f in findings:
        p = known.get((_failing_tool(f), error_gist(str(f.detail.get("error") or ""))))
        if p is not None and _fix(p) != _fix(f):
            dropped.append((f, p))
        else:
            kept.append(f)
    return kept, dropped
