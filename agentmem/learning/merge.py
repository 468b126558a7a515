"""Merging findings that teach one lesson, within a group and across a session's groups.

Prerequisites and recoveries with the same helper U for several tools become
"Before calling cat, cp or mv, call cd first" (with U's own parameter value, or
the tool wrongly used instead of U); values of one parameter X linked by a tool,
a look-up tool or an error merge with the recoveries that looked X up and a
misspelt name of X; one wrong parameter name guessed for several tools becomes
one lesson; the same substitution seen in several groups becomes one lesson in
both directions ("use cp, not mv, for ..., use mv, not cp, for ..."); one step
skipped in several groups becomes one. Split from :mod:`.evidence`, which finds
what is merged here.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from .evidence import Finding, _lesson, _val, quote_error

__all__ = ["MAX_TOOLS", "clusters", "merge_cluster", "merge_findings"]


def _join(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _fit(*variants: str) -> str:
    """The first variant of a lesson that fits in 32 words (else the last, clipped)."""
    for v in variants:
        if len(v.split()) <= 32:
            return v
    return _lesson(variants[-1])


def _tools(f: Finding) -> list[str]:
    return list(f.detail.get("tools") or [f.tool])


def _ranked(pairs: Sequence[tuple[str | None, int]]) -> list[str]:
    out: dict[str, int] = {}
    for k, n in pairs:
        if k:
            out[k] = out.get(k, 0) + n
    return sorted(out, key=lambda k: -out[k])


def _setting(f: Finding) -> tuple[str, str, str] | None:
    """(param, good, bad) of a value of the helper's own call (silent param_value)."""
    if f.detail.get("setting"):
        return tuple(f.detail["setting"])  # type: ignore[return-value]
    if f.kind == "param_value" and f.detail.get("error") is None and f.detail.get("later"):
        return (f.detail["param"], _val(f.detail["good"]), _val(f.detail["bad"]))
    return None


def _merged(
    kind: str, tool: str, group: list[Finding], text: str, facts: Iterable[str], **detail: Any
) -> Finding:
    """The one lesson of a merged ``group``: its support summed, ``merged`` its size."""
    return Finding(
        kind,
        tool,
        group[0].domain,
        text,
        tuple(facts),
        support=sum(f.support for f in group),
        detail={**detail, "merged": len(group)},
    )


def _merge_prerequisites(group: list[Finding]) -> Finding:
    """Prerequisite and recovery findings that call the same helper U first (for one or
    more tools), with a value of U's own call that made the later call fail: one lesson."""
    u = next(f.detail["helper"] for f in group if f.kind in ("prerequisite", "recovery"))
    heads = [f for f in group if f.kind in ("prerequisite", "recovery")]
    ts = _ranked([(t, f.support) for f in heads for t in _tools(f)])[:MAX_TOOLS]
    setting = next((st for f in group if (st := _setting(f))), None)
    instead = next((f.facts[1] for f in group if f.kind == "wrong_tool"), None) or next(
        (f.detail["instead"] for f in group if f.detail.get("instead")), None
    )
    recover = any(f.kind == "recovery" or f.detail.get("recovery") for f in group)
    err = next((f.detail.get("error") for f in heads if f.detail.get("error")), "") or ""
    e = quote_error(err, 5)
    with_ = ""
    facts: list[str] = [*ts, u]
    avoid: list[str] = []
    if setting:
        x, good, bad = setting
        with_ = f" with {x}={good}, never {bad},"
        facts.append(x)
        avoid.append(bad)
    if instead:
        with_ = f", not {instead},{with_}"
        facts.append(instead)
        avoid.append(instead)
    subject = ts[0] if len(ts) == 1 else "one"
    head = f"Before calling {_join(ts)}, call {u}{with_} first;"
    if recover:
        tails = [
            f"if {subject} already failed ('{e}'), call {u} and retry." if e else "",
            f"if {subject} already failed, call {u} and retry.",
        ]
    else:
        verb = "fails" if len(ts) == 1 else "fail"
        tails = [
            f"without it {_join(ts)} {verb} ('{e}')." if e else "",
            f"without it {'they' if len(ts) > 1 else ts[0]} {verb} ('{e}')." if e else "",
            f"otherwise {'they' if len(ts) > 1 else 'it'} {verb}.",
        ]
    text = _fit(*(f"{head} {t}" for t in tails if t))
    return _merged(
        "prerequisite",
        ts[0],
        group,
        text,
        dict.fromkeys(facts),
        error=err,
        helper=u,
        recovery=recover,
        avoid=avoid,
        tools=ts,
        setting=setting,
        instead=instead,
    )


def _merge_values(group: list[Finding]) -> Finding:
    """Findings about the value (or name) of one parameter X of the same tools, and the
    recoveries that looked X up: one lesson."""
    x = _param_of(group[0])
    ts = _ranked([(t, f.support) for f in group for t in _tools(f)])[:5]
    recs = [f for f in group if f.kind == "recovery" or f.detail.get("recovery")]
    lookup = next(
        iter(
            _ranked([(f.detail.get("helper") or f.detail.get("source"), f.support) for f in recs])
            or _ranked([(f.detail.get("source"), f.support) for f in group])
        ),
        None,
    )
    vals = [f for f in group if f.detail.get("good") is not None]
    good = next((_val(f.detail["good"]) for f in vals), None)
    bad = next((_val(f.detail["bad"]) for f in vals if f.detail.get("bad") is not None), None)
    wrong = next(
        (
            w
            for f in group
            for w in (
                [f.facts[2]]
                if f.kind == "param_name" and len(f.facts) == 3
                else [f.detail.get("wrong_name")]
                if f.detail.get("wrong_name")
                else []
            )
        ),
        None,
    )
    facts: list[str] = [*ts, x]
    avoid: list[str] = []
    eg = f" (e.g. {good})" if good else ""
    if lookup:
        head = f"Before calling {_join(ts)}, look up {x} with {lookup}{eg};"
        facts.append(lookup)
    else:
        head = (
            f"Call {_join(ts)} with {x} like {good};" if good else f"Call {_join(ts)} with {x}=...;"
        )
    parts = []
    if bad:
        parts.append(f"never pass {x}={bad}")
        avoid.append(bad)
    if wrong:
        parts.append(f"name it {x}=..., never {wrong}=...")
        facts.append(wrong)
        avoid.append(wrong)
    tail = [f"if it already failed, call {lookup} and retry"] if recs and lookup else []

    def sentence(ps: list[str]) -> str:
        t = (head + " " + "; ".join(ps)).rstrip(" ;")
        return t if t.endswith(".") else t + "."

    text = _fit(sentence([*parts, *tail]), sentence(parts))
    return _merged(
        "param_value",
        ts[0],
        group,
        text,
        dict.fromkeys(facts),
        param=x,
        good=good,
        bad=bad,
        source=lookup,
        recovery=bool(recs),
        avoid=avoid,
        tools=ts,
        wrong_name=wrong,
    )


def _merge_names(group: list[Finding]) -> Finding:
    """The same wrong parameter name guessed for several tools: one lesson."""
    pairs: dict[str, str] = {}
    for f in group:
        for t, r in f.detail.get("pairs") or [(f.facts[0], f.facts[1])]:
            pairs.setdefault(t, r)
    w = group[0].detail.get("wrong_name") or group[0].facts[2]
    items = list(pairs.items())[:4]
    uses = ", ".join(f"{r} for {t}" for t, r in items)
    text = _lesson(f"Never pass {w}=... to {_join([t for t, _ in items])}: use {uses}.")
    facts = dict.fromkeys([x for t, r in items for x in (t, r)] + [w])
    return _merged(
        "param_name", items[0][0], group, text, facts, wrong_name=w, pairs=items, avoid=[w]
    )


def _merge_missing(group: list[Finding]) -> Finding:
    """The same step skipped by rejected runs of several groups: one lesson."""
    u = group[0].tool
    call = next((f.detail["call"] for f in group if f.detail.get("call")), u)
    nexts = _ranked([(f.detail.get("next"), f.support) for f in group])[:3]
    if not nexts:  # no common "before": keep the best-supported request-specific one
        best = max(group, key=lambda f: f.support)
        return attrs.evolve(best, support=sum(f.support for f in group))
    before = f" before {_join(nexts)}"
    text = _lesson(f"Call {call}{before};", f"runs that skipped {u} were rejected.")
    return _merged("missing_step", u, group, text, (u, *nexts), call=call)


def _merge_wrong_tools(group: list[Finding]) -> Finding:
    """The same substitution seen more than once: one lesson; R-for-W and W-for-R in
    different requests: one lesson that tells the two apart by the requests."""
    sides: dict[tuple[str, ...], list[Finding]] = defaultdict(list)
    for f in group:
        sides[f.facts[:2]].append(f)
    best = [
        max(fs, key=lambda f: (bool(f.detail.get("ask")), f.support))
        for fs in sorted(sides.values(), key=lambda fs: -sum(f.support for f in fs))
    ]
    support = sum(f.support for f in group)
    if len(best) == 1:
        return attrs.evolve(
            best[0], support=support, detail={**best[0].detail, "merged": len(group)}
        )
    a, b = best[:2]
    parts = []
    for f in (a, b):
        ask = " ".join((f.detail.get("ask") or "").split()[:7])
        parts.append(
            f'use {f.facts[0]}, not {f.facts[1]}, for requests like "{ask}"'
            if ask
            else f"use {f.facts[0]}, not {f.facts[1]}, where the task needs {f.facts[0]}"
        )
    text = _lesson(parts[0][0].upper() + parts[0][1:] + "; " + parts[1] + ".")
    return Finding(
        "wrong_tool",
        a.tool,
        a.domain,
        text,
        a.facts[:2],
        support=support,
        detail={"avoid": [], "ask": a.detail.get("ask"), "merged": len(group), "both_ways": True},
    )


def _param_of(f: Finding) -> str:
    return f.detail.get("param") or (f.facts[1] if len(f.facts) > 1 else "")


#: At most this many tools in one merged lesson ("Before calling a, b, c or d, ...").
MAX_TOOLS = 6


def _chunks(fs: Sequence[Finding], idx: list[int]) -> list[list[int]]:
    """``idx`` split so that no part names more than MAX_TOOLS tools (the prerequisite
    and recovery findings, most supported first; the others go with the first part)."""
    heads = sorted(
        (i for i in idx if fs[i].kind in ("prerequisite", "recovery")), key=lambda i: -fs[i].support
    )
    parts: list[tuple[set[str], list[int]]] = []
    for i in heads:
        tools = set(_tools(fs[i]))
        part = next((p for p in parts if len(p[0] | tools) <= MAX_TOOLS), None)
        if part is None:
            parts.append((tools, [i]))
        else:
            part[0].update(tools)
            part[1].append(i)
    if not parts:
        return [idx]
    parts[0][1].extend(i for i in idx if i not in heads)
    return [p[1] for p in parts]


def clusters(findings: Sequence[Finding]) -> list[tuple[str, list[int]]]:
    """Which findings teach one lesson (see :func:`merge_findings`): (kind, indices)."""
    fs = list(findings)
    out: list[tuple[str, list[int]]] = []
    taken: set[int] = set()
    helpers: dict[str, list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        if f.detail.get("helper") and (
            f.kind == "prerequisite" or (f.kind == "recovery" and not f.detail.get("param"))
        ):
            helpers[f.detail["helper"]].append(i)
    for u, idx in helpers.items():
        tools = {t for i in idx for t in _tools(fs[i])}
        have = next((st for i in idx if (st := _setting(fs[i]))), None)
        idx = idx + [
            j
            for j, f in enumerate(fs)
            if f.kind == "param_value"
            and f.tool == u
            and f.detail.get("later") in tools
            and (st := _setting(f))
            and (have is None or st[0] == have[0])
        ]
        instead = next((fs[i].detail["instead"] for i in idx if fs[i].detail.get("instead")), None)
        idx = idx + [
            j
            for j, f in enumerate(fs)
            if f.kind == "wrong_tool"
            and f.facts[0] == u
            and not f.detail.get("both_ways")
            and instead in (None, f.facts[1])
        ]
        for chunk in _chunks(fs, idx):
            if len(chunk) > 1:
                out.append(("prerequisite", sorted(chunk)))
                taken.update(chunk)
    cand = [
        i
        for i, f in enumerate(fs)
        if i not in taken
        and (
            (f.kind == "param_value" and _param_of(f) and not _setting(f))
            or (f.kind == "recovery" and f.detail.get("param"))
            or (f.kind == "param_name" and len(f.facts) == 3 and not f.detail.get("pairs"))
        )
    ]

    def links(f: Finding) -> set[str]:
        out = set(_tools(f)) | ({f.detail.get("source") or "", f.detail.get("helper") or ""} - {""})
        if f.domain and f.domain != "general":
            out.add(f"domain:{f.domain}")
        err = re.sub(r"^\w+:\s*", "", quote_error(f.detail.get("error") or "", 12))
        err = " ".join([w for w in err.split() if not re.search(r"[.\d:/]", w)][:3])
        if err and f.kind != "param_name":
            out.add(f"error:{err.lower()}")
        return out

    seen: set[int] = set()
    for i in cand:
        if i in seen:
            continue
        comp, todo = [i], [i]
        seen.add(i)
        while todo:
            a = fs[todo.pop()]
            for j in cand:
                if j not in seen and _param_of(fs[j]) == _param_of(a) and links(fs[j]) & links(a):
                    seen.add(j)
                    comp.append(j)
                    todo.append(j)
        kinds = {fs[j].kind for j in comp}
        if len(comp) > 1 and kinds & {"param_value", "recovery"}:
            out.append(("value", sorted(comp)))
            taken.update(comp)
    wrong_names: dict[str, list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        if (
            f.kind == "param_name"
            and i not in taken
            and (len(f.facts) == 3 or f.detail.get("pairs"))
        ):
            wrong_names[f.detail.get("wrong_name") or f.facts[2]].append(i)
    for idx in wrong_names.values():
        if len(idx) > 1:
            out.append(("name", idx))
            taken.update(idx)
    missing: dict[str, list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        if f.kind == "missing_step" and i not in taken:
            missing[f.tool].append(i)
    for idx in missing.values():
        if len(idx) > 1:
            out.append(("missing", idx))
            taken.update(idx)
    pairs: dict[frozenset[str], list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        if f.kind == "wrong_tool" and i not in taken:
            pairs[frozenset(f.facts[:2])].append(i)
    out += [("wrong_tool", idx) for idx in pairs.values() if len(idx) > 1]
    return sorted(out, key=lambda c: min(c[1]))


def merge_cluster(kind: str, group: list[Finding]) -> Finding:
    """The one finding that stands for a cluster of :func:`clusters`."""
    return {
        "prerequisite": _merge_prerequisites,
        "value": _merge_values,
        "name": _merge_names,
        "missing": _merge_missing,
        "wrong_tool": _merge_wrong_tools,
    }[kind](group)


def merge_findings(findings: Sequence[Finding]) -> list[Finding]:
    """Findings that teach one lesson, merged into one (within a group or across groups).

    * prerequisites and recoveries that call the same helper U (for one or more tools),
      with a value of U's own call that made the later call fail;
    * values of one parameter X (of tools linked by a shared tool, look-up or recovery
      call), with the recoveries that looked X up and a misspelt name of X;
    * the same wrong tool for the same right tool.

    Findings merged with nothing are returned unchanged, in their order.
    """
    fs = list(findings)
    cl = clusters(fs)
    first = {min(idx): (kind, idx) for kind, idx in cl}
    gone = {i for _, idx in cl for i in idx}
    out: list[Finding] = []
    for i, f in enumerate(fs):
        if i in first:
            kind, idx = first[i]
            out.append(merge_cluster(kind, [fs[j] for j in idx]))
        elif i not in gone:
            out.append(f)
    return out
