"""Stage 2 from the data: what separates the positive trajectories of a group from the negative ones.

Each :class:`Finding` is one difference the steps prove (a parameter name or
value, a missing prerequisite call, a recovery, a wrong tool, a skipped step),
with a draft lesson of at most 32 words that says when and how to apply it, and
the facts (tool and parameter names) that any rephrasing must keep. The model
may rephrase a finding; it cannot invent one.

Rules, in the order they are tried for each unrecovered failure of a negative
trajectory on tool T (error e), comparing with positive trajectories' successful
calls of T:

1. ``param_name``: the parameter names differ -> "When calling T, pass right (not wrong)".
2. ``param_value``: same names, a value differs -> "When calling T, check X ...".
3. ``prerequisite``: same parameters -> a tool U that positives called before T
   and the negative did not -> "Before calling T, call U first".
4. ``wrong_tool``: positives never called T successfully but used a tool of the
   same domain that the negative did not -> "Use R instead of T".

Then, over the whole group:

5. ``recovery``: positives hit error e on T and recovered (a later successful T),
   negatives hit it and did not -> "If T fails with e, <what positives did>".
6. ``wrong_tool`` without an error: a tool only negatives used, in place of a
   same-domain tool only positives used.
7. ``param_value`` without an error: every positive called T with X in one set of
   values, every negative with values outside it.
8. ``missing_step``: every positive called T, some negative never did.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import attrs

from ..records import Trajectory
from .digest import Digest, clip_words, value_text

__all__ = ["Finding", "find_evidence"]

_KIND_RANK = {
    "param_name": 0,
    "prerequisite": 1,
    "recovery": 2,
    "param_value": 3,
    "wrong_tool": 4,
    "missing_step": 5,
}


@attrs.frozen
class Finding:
    """One proven difference between positive and negative trajectories of a group."""

    kind: str
    tool: str
    domain: str
    text: str
    facts: tuple[str, ...]
    support: int = 1
    detail: dict[str, Any] = attrs.field(factory=dict, eq=False)

    @property
    def key(self) -> tuple[str, ...]:
        return (self.kind, *self.facts)


@attrs.frozen
class _Member:
    traj: Trajectory
    dig: Digest


def _domain_of(members: Sequence[_Member], tool: str) -> str:
    for m in members:
        for s in m.traj.steps:
            if s.tool == tool and s.domain:
                return s.domain
    return ""


def _ok_calls(members: Sequence[_Member], tool: str) -> list[tuple[_Member, int, dict[str, Any]]]:
    return [
        (m, i, dict(s.params))
        for m in members
        for i, s in enumerate(m.traj.steps)
        if s.tool == tool and s.success
    ]


def _closest(params: dict[str, Any], candidates: list[tuple[_Member, int, dict[str, Any]]]):
    def score(c: tuple[_Member, int, dict[str, Any]]) -> tuple[int, int]:
        q = c[2]
        same_keys = len(set(params) & set(q))
        same_vals = sum(1 for k in params if k in q and q[k] == params[k])
        return (same_keys - len(set(params) ^ set(q)), same_vals)

    return max(candidates, key=score)


def _tools_before(m: _Member, index: int) -> list[str]:
    return [s.tool for s in m.traj.steps[:index]]


def _categorical(text: str) -> bool:
    """A short, categorical value (a name, a number, a flag), not free text worth no lesson."""
    return len(text) <= 40 and len(text.split()) <= 3


def _aligned(pos: Sequence[_Member], n: _Member, right: str, wrong: str) -> bool:
    """``wrong`` in the negative stands where ``right`` stands in a positive: same predecessor."""
    def preds(m: _Member, tool: str) -> set[str | None]:
        seq = [s.tool for s in m.traj.steps]
        return {seq[i - 1] if i else None for i, t in enumerate(seq) if t == tool}

    return any(preds(p, right) & preds(n, wrong) for p in pos)


def _alternatives(ms: Sequence[_Member], a: str, b: str) -> bool:
    """Two tools that can stand in for each other: a shared name part or shared parameters."""
    parts_a, parts_b = set(a.lower().split("_")), set(b.lower().split("_"))
    if parts_a & parts_b:
        return True
    pa = {k for m in ms for s in m.traj.steps if s.tool == a for k in s.params}
    pb = {k for m in ms for s in m.traj.steps if s.tool == b for k in s.params}
    if not pa and not pb:
        return True
    return bool(pa | pb) and len(pa & pb) / len(pa | pb) >= 0.5


def _inert(ms: Sequence[_Member]) -> set[str]:
    """Tools whose every call returned nothing (a scratchpad like ``think``): no lessons."""
    outs: dict[str, set[str]] = defaultdict(set)
    for m in ms:
        for s in m.traj.steps:
            outs[s.tool].add(s.output.strip())
    return {t for t, o in outs.items() if o <= {""}}


def _lesson(*parts: str) -> str:
    return clip_words(" ".join(p for p in parts if p).replace("  ", " "), 32)


def find_evidence(
    members: Sequence[tuple[Trajectory, Digest]], *, max_findings: int = 3
) -> list[Finding]:
    """The findings of one group, most supported first, at most ``max_findings``."""
    ms = [_Member(t, d) for t, d in members]
    pos = [m for m in ms if m.dig.advantage > 0]
    neg = [m for m in ms if m.dig.advantage < 0]
    if not pos or not neg:
        return []
    found: dict[tuple[str, ...], Finding] = {}
    inert = _inert(ms)

    def add(f: Finding) -> None:
        if any(x in inert for x in f.facts):
            return
        if f.key in found:
            old = found[f.key]
            found[f.key] = attrs.evolve(old, support=old.support + f.support)
        else:
            found[f.key] = f

    explained: set[tuple[int, str]] = set()
    for n in neg:
        for fail in n.dig.failures:
            if fail.recovered:
                continue
            t, e = fail.tool, fail.error
            dom = _domain_of(ms, t)
            ok = _ok_calls(pos, t)
            if ok:
                pm, pi, q = _closest(fail.params, ok)
                p = fail.params
                extra, missing = sorted(set(p) - set(q)), sorted(set(q) - set(p))
                if extra or missing:
                    if len(extra) == 1 and len(missing) == 1:
                        text = _lesson(
                            f"When calling {t}, name the parameter {missing[0]} (not {extra[0]});",
                            f"calls passing {extra[0]} fail with '{e}'.",
                        )
                        facts: tuple[str, ...] = (t, missing[0], extra[0])
                    else:
                        need = ", ".join(missing) or "only its documented parameters"
                        text = _lesson(
                            f"When calling {t}, pass {need}" +
                            (f" and drop {', '.join(extra)}" if extra else "") + ";",
                            f"otherwise it fails with '{e}'.",
                        )
                        facts = (t, *(missing or extra)[:2])
                    add(Finding("param_name", t, dom, text, facts,
                                detail={"error": e, "wrong": extra, "right": missing}))
                    explained.add((id(n), t))
                    continue
                diff = [k for k in p if p[k] != q.get(k)]
                diff = [k for k in diff if _categorical(value_text(p[k], 200))] or diff
                if diff:
                    x = diff[0]
                    text = _lesson(
                        f"When calling {t}, check {x} against the task: {x}={value_text(p[x])}",
                        f"failed with '{e}', while successful runs used {x}={value_text(q[x])}.",
                    )
                    add(Finding("param_value", t, dom, text, (t, x),
                                detail={"error": e, "bad": p[x], "good": q[x]}))
                    explained.add((id(n), t))
                    continue
                before_pos = _tools_before(pm, pi)
                before_neg = set(_tools_before(n, fail.index))
                prereq = next((u for u in reversed(before_pos) if u not in before_neg and u != t), None)
                if prereq:
                    text = _lesson(
                        f"Before calling {t}, call {prereq} first;",
                        f"{t} without a prior {prereq} fails with '{e}'.",
                    )
                    add(Finding("prerequisite", t, dom, text, (t, prereq), detail={"error": e}))
                    explained.add((id(n), t))
                continue
            # positives never called t successfully: did they use another tool of its domain?
            neg_tools = {s.tool for s in n.traj.steps}
            alt = [
                s.tool for m in pos for s in m.traj.steps
                if s.success and s.tool not in neg_tools and s.domain == dom
            ]
            if alt:
                r = max(set(alt), key=alt.count)
                text = _lesson(
                    f"Use {r} instead of {t} for this kind of {dom or 'tool'} task;",
                    f"{t} failed with '{e}' where {r} succeeded.",
                )
                add(Finding("wrong_tool", t, dom, text, (r, t), detail={"error": e}))
                explained.add((id(n), t))

    # 5. recoveries that the positives made and the negatives did not
    for m in pos:
        for r in m.dig.recoveries:
            gave_up = [n for n in neg for f in n.dig.failures if f.tool == r.tool and not f.recovered]
            if not gave_up:
                continue
            changed = [k for k in r.fixed_params if r.failed_params.get(k) != r.fixed_params[k]]
            helpers = [u for u in r.between if u != r.tool]
            if helpers:
                how = f"call {helpers[0]} to fix the cause, then retry {r.tool}"
                facts = (r.tool, helpers[0])
            elif changed:
                how = f"retry {r.tool} with a corrected {changed[0]}"
                facts = (r.tool, changed[0])
            else:
                how = f"retry {r.tool}"
                facts = (r.tool,)
            text = _lesson(f"If {r.tool} fails with '{r.error}', {how};",
                           "runs that gave up after the error failed.")
            add(Finding("recovery", r.tool, _domain_of(ms, r.tool), text, facts,
                        support=len(gave_up), detail={"error": r.error}))

    pos_tools = [{s.tool for s in m.traj.steps} for m in pos]
    all_pos = set.intersection(*pos_tools) if pos_tools else set()
    any_pos = set.union(*pos_tools) if pos_tools else set()
    for n in neg:
        n_tools = {s.tool for s in n.traj.steps}
        # 6. wrong tool with no error
        only_neg = sorted(n_tools - any_pos)
        only_pos = sorted(all_pos - n_tools)
        for w in only_neg:
            dom = _domain_of(ms, w)
            same = [t for t in only_pos if _domain_of(ms, t) == dom and (_alternatives(ms, t, w) or _aligned(pos, n, t, w))]
            if same and (id(n), w) not in explained:
                r = same[0]
                text = _lesson(f"Use {r} rather than {w} for this kind of {dom or 'tool'} task;",
                               f"runs that called {w} instead were rejected.")
                add(Finding("wrong_tool", w, dom, text, (r, w)))
                explained.add((id(n), w))
        # 8. missing step
        for t in only_pos:
            if (id(n), t) in explained or any(f.facts[0] == t for f in found.values()):
                continue
            p_first = next(m for m in pos)
            seq = [s.tool for s in p_first.traj.steps]
            nxt = next((u for u in seq[seq.index(t) + 1:] if u in n_tools and u != t), None) \
                if t in seq else None
            if nxt:
                text = _lesson(f"Call {t} before {nxt} in tasks like this;",
                               f"runs that skipped {t} were rejected.")
                facts = (t, nxt)
            else:
                text = _lesson(f"Call {t} to complete tasks like this;",
                               f"runs that skipped {t} were rejected.")
                facts = (t,)
            add(Finding("missing_step", t, _domain_of(ms, t), text, facts))

    # 7. parameter values that separate positives from negatives with no error
    values: dict[tuple[str, str], tuple[set[str], set[str]]] = defaultdict(lambda: (set(), set()))
    for group, idx in ((pos, 0), (neg, 1)):
        for m in group:
            for s in m.traj.steps:
                if s.success:
                    for k, v in s.params.items():
                        values[(s.tool, k)][idx].add(value_text(v, 200))
    for (t, x), (pv, nv) in sorted(values.items()):
        if pv and nv and not (pv & nv) and len(pv) == 1 and all(
            _categorical(v) for v in pv | nv
        ) and not any(
            f.tool == t and f.kind in ("param_value", "param_name") for f in found.values()
        ):
            good, bad = next(iter(pv)), sorted(nv)[0]
            text = _lesson(f"When calling {t}, set {x} exactly as the task asks",
                           f"(successful runs used {x}={value_text(good)}, rejected runs",
                           f"{value_text(bad)}).")
            add(Finding("param_value", t, _domain_of(ms, t), text, (t, x),
                        support=sum(1 for m in neg if any(s.tool == t for s in m.traj.steps))))

    ranked = sorted(found.values(), key=lambda f: (-f.support, _KIND_RANK[f.kind], f.text))
    return ranked[:max_findings]
