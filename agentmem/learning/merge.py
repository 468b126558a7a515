"""Merging findings that teach one lesson, within a group and across a session's groups.

Prerequisites and recoveries with the same helper U for several tools become
"Before calling cat, cp or mv, call cd first" (with U's own parameter value, or
the tool wrongly used instead of U); values of one parameter X linked by a tool,
a look-up tool or an error merge with the recoveries that looked X up and a
misspelt name of X; one wrong parameter name guessed for several tools becomes
one lesson; the same substitution seen in several groups becomes one lesson in
both directions ("use cp, not mv, for ..., use mv, not cp, for ..."); one step
skipped in several groups becomes one. Shell corrections of one project merge too:
several files found in one folder ("notes.txt is at docs/notes.txt", "todo.md is at
docs/todo.md") become "In this project notes.txt and todo.md are in docs/", and one
program missing under several commands, provided the same way, becomes one lesson;
their support is summed. Split from :mod:`.evidence`, which finds what is merged here.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from .bang import is_bang_lesson
from .findings import Finding, lesson_text, quote_error, short_value
from .kinds import Kind

__all__ = [
    "MAX_TOOLS",
    "claim_facts",
    "clusters",
    "keeps_trigger",
    "merge_cluster",
    "merge_findings",
    "payload",
]


def _join(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _and(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _fit(*variants: str) -> str:
    """The first variant of a lesson that fits in 32 words (else the last, clipped)."""
    for v in variants:
        if len(v.split()) <= 32:
            return v
    return lesson_text(variants[-1])


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
        return (f.detail["param"], short_value(f.detail["good"]), short_value(f.detail["bad"]))
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


def _helper_of(f: Finding) -> str | None:
    """The helper U a finding of a prerequisite cluster is about."""
    if f.kind in ("prerequisite", "recovery"):
        return f.detail.get("helper")
    if f.kind == "param_value":
        return f.tool
    if f.kind == "wrong_tool":
        return f.facts[0]
    return None


def _prereq_parts(group: Sequence[Finding]) -> list[dict[str, Any]]:
    """What each helper of these prerequisite findings needs: helper, setting, the tool
    wrongly used instead, whether a run recovered with it, the error without it."""
    out: list[dict[str, Any]] = []
    for f in group:
        out += f.detail.get("parts") or []
    by_helper: dict[str, list[Finding]] = defaultdict(list)
    for f in group:
        if not f.detail.get("parts") and (u := _helper_of(f)):
            by_helper[u].append(f)
    for u, fs in by_helper.items():
        heads = [f for f in fs if f.kind in ("prerequisite", "recovery")]
        out.append(
            {
                "helper": u,
                "setting": next((st for f in fs if (st := _setting(f))), None),
                "instead": next((f.facts[1] for f in fs if f.kind == "wrong_tool"), None)
                or next((f.detail["instead"] for f in fs if f.detail.get("instead")), None),
                "recovery": any(f.kind == "recovery" or f.detail.get("recovery") for f in fs),
                "error": next((f.detail["error"] for f in heads if f.detail.get("error")), "")
                or "",
            }
        )
    merged: dict[str, dict[str, Any]] = {}
    for p in out:  # one part per helper: what any of them knew
        q = merged.setdefault(p["helper"], dict(p))
        for k in ("setting", "instead", "error"):
            q[k] = q[k] or p[k]
        q["recovery"] = q["recovery"] or p["recovery"]
    return list(merged.values())


def _needs_text(tool: str, parts: Sequence[dict[str, Any]]) -> str | None:
    """ "Before calling T, call U1 ... and U2 ... first; ...", or None over 32 words."""
    calls = []
    for p in parts:
        c = p["helper"]
        if p["instead"]:
            c += f", not {p['instead']},"
        if p["setting"]:
            x, good, bad = p["setting"]
            c += f" with {x}={good}, never {bad},"
        calls.append(c)
    head = f"Before calling {tool}, call {' and '.join(calls)} first;".replace(",,", ",")
    e = quote_error(next((p["error"] for p in parts if p["error"]), ""), 5)
    if any(p["recovery"] for p in parts):
        tails = [
            f"if {tool} already failed ('{e}'), call them and retry." if e else "",
            f"if {tool} already failed, call them and retry.",
        ]
    else:
        tails = [f"without them {tool} fails ('{e}')." if e else "", f"otherwise {tool} fails."]
    for t in tails:
        text = re.sub(r",\s*first;", " first;", f"{head} {t}") if t else ""
        if text and len(text.split()) <= 32:
            return text
    return None


def _merge_needs(group: list[Finding]) -> Finding:
    """Prerequisites of one tool T with different helpers: "Before calling T, call U1 and
    U2 first" (what T needs, in one lesson)."""
    tool = next(t for f in group if f.kind in ("prerequisite", "recovery") for t in _tools(f))
    parts = _prereq_parts(group)
    text = _needs_text(tool, parts) or lesson_text(
        f"Before calling {tool}, call {' and '.join(p['helper'] for p in parts)} first."
    )
    facts: list[str] = [tool]
    avoid: list[str] = []
    for p in parts:
        facts.append(p["helper"])
        if p["setting"]:
            facts.append(p["setting"][0])
            avoid.append(p["setting"][2])
        if p["instead"]:
            facts.append(p["instead"])
            avoid.append(p["instead"])
    return _merged(
        "prerequisite",
        tool,
        group,
        text,
        dict.fromkeys(facts),
        parts=parts,
        tools=[tool],
        avoid=avoid,
        error=next((p["error"] for p in parts if p["error"]), ""),
        recovery=any(p["recovery"] for p in parts),
    )


def _lookup_names(group: Sequence[Finding]) -> list[Finding]:
    """The wrong parameter names of a look-up tool itself (a tool the other findings look
    X up with, and that nothing else in ``group`` is about)."""
    lookups = {f.detail.get("helper") or f.detail.get("source") for f in group} - {None}
    return [
        f
        for f in group
        if f.kind == "param_name"
        and len(f.facts) == 3
        and f.tool in lookups
        and not any(g.tool == f.tool and g is not f and g.kind != "param_name" for g in group)
    ]


def _lookup_tool(group: Sequence[Finding], recs: Sequence[Finding]) -> str | None:
    """The tool to look X up with: the recoveries' helper, else the values' source, the
    best supported."""
    return next(
        iter(
            _ranked([(f.detail.get("helper") or f.detail.get("source"), f.support) for f in recs])
            or _ranked([(f.detail.get("source"), f.support) for f in group])
        ),
        None,
    )


def _wrong_name(group: Sequence[Finding]) -> str | None:
    """The first misspelt name of X among the findings."""
    return next(
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


def _values_head(
    ts: list[str], x: str, good: str | None, lookup: str | None, own: Sequence[Finding]
) -> tuple[str, list[str], list[str]]:
    """The first clause of a merged value lesson ("Before calling T, look up X with L
    (e.g. good);" or "Call T with X like good;"), with the facts and the names to avoid
    it adds."""
    facts: list[str] = []
    avoid: list[str] = []
    eg = f" (e.g. {good})" if good else ""
    if lookup:
        how = next((f for f in own if f.tool == lookup), None)
        call = lookup
        if how is not None:
            _t, right, bad_name = how.facts
            call = f"{lookup}({right}=..., never {bad_name}=...)"
            facts += [right, bad_name]
            avoid.append(bad_name)
        head = f"Before calling {_join(ts)}, look up {x} with {call}{eg};"
        facts.append(lookup)
    else:
        head = (
            f"Call {_join(ts)} with {x} like {good};" if good else f"Call {_join(ts)} with {x}=...;"
        )
    return head, facts, avoid


def _merge_values(group: list[Finding]) -> Finding:
    """Findings about the value (or name) of one parameter X of the same tools, and the
    recoveries that looked X up (and a wrong parameter name of the look-up tool itself):
    one lesson."""
    own = _lookup_names(group)
    group = [f for f in group if f not in own]
    x = _param_of(group[0])
    ts = _ranked([(t, f.support) for f in group for t in _tools(f)])[:5]
    recs = [f for f in group if f.kind == "recovery" or f.detail.get("recovery")]
    lookup = _lookup_tool(group, recs)
    vals = [f for f in group if f.detail.get("good") is not None]
    good = next((short_value(f.detail["good"]) for f in vals), None)
    bad = next(
        (short_value(f.detail["bad"]) for f in vals if f.detail.get("bad") is not None), None
    )
    wrong = _wrong_name(group)
    head, head_facts, avoid = _values_head(ts, x, good, lookup, own)
    facts: list[str] = [*ts, x, *head_facts]
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
        group + own,
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
        # "Check X" needs a right value shown for every finding merged (generality)
        right_value_shown=all(
            f.detail.get("right_value_shown") for f in group if f.kind == "param_value"
        ),
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
    text = lesson_text(f"Never pass {w}=... to {_join([t for t, _ in items])}: use {uses}.")
    facts = dict.fromkeys([x for t, r in items for x in (t, r)] + [w])
    return _merged(
        "param_name", items[0][0], group, text, facts, wrong_name=w, pairs=items, avoid=[w]
    )


def _related_names_text(group: Sequence[Finding]) -> str:
    return (
        "; ".join(f"{t} takes {r}=..., never {w}=..." for t, r, w in (f.facts for f in group)) + "."
    )


def _merge_related_names(group: list[Finding]) -> Finding:
    """Wrong parameter names of related tools (a shared name part): one lesson."""
    facts = dict.fromkeys(x for f in group for x in f.facts)
    return _merged(
        "param_name",
        group[0].tool,
        group,
        _related_names_text(group),
        facts,
        pairs=[(f.facts[0], f.facts[1]) for f in group],
        avoid=[f.facts[2] for f in group],
        related=True,
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
    text = lesson_text(f"Call {call}{before};", f"runs that skipped {u} were rejected.")
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
    text = lesson_text(parts[0][0].upper() + parts[0][1:] + "; " + parts[1] + ".")
    return Finding(
        "wrong_tool",
        a.tool,
        a.domain,
        text,
        a.facts[:2],
        support=support,
        detail={"avoid": [], "ask": a.detail.get("ask"), "merged": len(group), "both_ways": True},
    )


def _name_parts(tool: str) -> set[str]:
    """The words of a tool's name long enough to say two tools are related (``watchlist``)."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", tool)
    return {w.lower() for w in words if len(w) >= 5}


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


#: A cluster: (kind, indices of the findings it merges).
_Cluster = tuple[str, list[int]]
#: The findings of one prerequisite lesson: (its helper, or None for a lesson already
#: merged for several helpers of one tool; indices).
_Unit = tuple[str | None, list[int]]


def clusters(findings: Sequence[Finding]) -> list[tuple[str, list[int]]]:
    """Which findings teach one lesson (see :func:`merge_findings`): (kind, indices).

    Each step below adds its clusters to ``out`` and marks their findings ``taken``, so
    that a later step merges only what an earlier one left.
    """
    fs = list(findings)
    out: list[_Cluster] = []
    taken: set[int] = set()
    _prerequisite_clusters(fs, out, taken)
    _value_clusters(fs, out, taken)
    _name_clusters(fs, out, taken)
    _lookup_name_clusters(fs, out, taken)
    _related_name_clusters(fs, out, taken)
    _missing_clusters(fs, out, taken)
    _wrong_tool_clusters(fs, out, taken)
    _tool_rule_clusters(fs, out, taken)
    _shell_location_clusters(fs, out, taken)
    _shell_fold_clusters(fs, out, taken)
    _shell_program_clusters(fs, out, taken)
    _shell_action_clusters(fs, out, taken)
    _shell_escalation_clusters(fs, out, taken)
    _tool_instead_clusters(fs, out, taken)
    _same_lesson_clusters(fs, out, taken)
    return sorted(out, key=lambda c: min(c[1]))


def _shell_key(f: Finding, change: str) -> tuple[str, str] | None:
    """(project, scope) of a shell finding of ``change`` that may merge, else None: only
    findings of one known project merge (a merged lesson is served where its runs were)."""
    d = f.detail
    if f.kind != Kind.SHELL or d.get("change") != change or not d.get("project"):
        return None
    return str(d["project"]), str(d.get("scope"))


def _shell_location_clusters(fs: Sequence[Finding], out: list[_Cluster], taken: set[int]) -> None:
    """Several files of one project found in one folder, each looked for in one other
    folder ("notes.txt is at docs/notes.txt", "todo.md is at docs/todo.md", both looked for
    at the project's top): one lesson, where the project keeps them. Files that moved
    differently (one looked for in src/, one at the top) are not one move: kept apart."""
    by: dict[tuple[str, str, str, str], list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        key = _shell_key(f, "location")
        good = str(f.detail.get("good") or "").rstrip("/")
        folder = good.rsplit("/", 1)[0] if "/" in good else ""
        if key is None or i in taken or not folder:
            continue
        moved = (*key, _folder(str(f.detail.get("bad") or "")), folder)
        by[moved].append(i)
    for idx in by.values():
        names = {str(fs[i].detail.get("good")) for i in idx}
        if len(names) > 1:
            out.append(("shell_location", idx))
            taken.update(idx)


def _shell_fold_clusters(fs: Sequence[Finding], out: list[_Cluster], taken: set[int]) -> None:
    """Several files of one project that show one path fact (the same name spelt in another
    letter case, the same leading folder left out: ``detail["fold"]``): one lesson naming
    them, with the support of each."""
    by: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        for change in ("case", "prefix"):
            key = _shell_key(f, change)
            if key is not None and i not in taken and f.detail.get("fold"):
                by[(key[0], key[1], change, str(f.detail["fold"]))].append(i)
    for idx in by.values():
        if len(idx) > 1:
            out.append(("shell_fold", idx))
            taken.update(idx)


def _merge_shell_folds(group: list[Finding]) -> Finding:
    f = group[0]
    goods = list(dict.fromkeys(str(g.detail["good"]) for g in group))
    head = str(f.detail["head"])
    text = f.text if len(goods) == 1 else _fit(f"{head} {_and(goods)}.", f"{head} {goods[0]}.")
    avoid = list(dict.fromkeys(str(a) for g in group for a in g.detail.get("avoid") or []))
    return attrs.evolve(
        f,
        text=text,
        facts=(str(f.facts[0]), *goods),
        support=sum(g.support for g in group),
        detail={**f.detail, "goods": goods, "avoid": avoid, "merged": len(group)},
    )


def _folder(path: str) -> str:
    """The folder a path names its file in (``""`` for a bare file name)."""
    p = path.rstrip("/")
    return p.rsplit("/", 1)[0] if "/" in p else ""


def _shell_program_clusters(fs: Sequence[Finding], out: list[_Cluster], taken: set[int]) -> None:
    """One program missing under several commands, provided the same way each time
    (``cargo build`` and ``cargo test`` both through ``nix-shell -p cargo``): one lesson."""
    by: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        for change in ("wrapper", "interpreter"):
            key = _shell_key(f, change)
            if key is not None and key[1] == "machine":
                # a fact of the machine holds in every project of it (a library is one
                # machine's): python missing in two projects is one lesson
                key = ("", "machine")
            if key is not None and i not in taken and len(f.facts) >= 2:
                silent = "silent" if f.detail.get("silent") else ""
                k = (*key, change, silent, *f.facts[:2])
                by[k].append(i)
    for idx in by.values():
        projects = {fs[i].detail.get("project") for i in idx}
        if len({fs[i].text for i in idx}) > 1 or len(projects) > 1:
            out.append(("shell_program", idx))
            taken.update(idx)


def _shell_action_clusters(fs: Sequence[Finding], out: list[_Cluster], taken: set[int]) -> None:
    """One step done to each of several programs of a project before it ran (``chmod +x``
    on three scripts): one lesson."""
    by: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        key = _shell_key(f, "prerequisite")
        action = f.detail.get("helper_action")
        if key is not None and i not in taken and action:
            k = (*key, str(action), str(f.detail.get("folder") or ""))
            by[k].append(i)
    for idx in by.values():
        if len({fs[i].tool for i in idx}) > 1:
            out.append(("shell_action", idx))
            taken.update(idx)


def _shell_escalation_clusters(fs: Sequence[Finding], out: list[_Cluster], taken: set[int]) -> None:
    """Several commands of one project refused by the sandbox and run with one escalation
    setting (``git fetch``, ``git commit``): one lesson, held for a person like each. A
    refusal of the files a command named (``files under X``) is of a folder, not of a
    program: it merges only with other folders' ("cat and files under X are refused"
    claimed that cat was)."""
    by: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        key = _shell_key(f, "escalation")
        setting = f.detail.get("setting")
        if key is not None and i not in taken and isinstance(setting, list):
            of_folder = "folder" if f.detail.get("target") else "program"
            k = (*key, of_folder, *[str(x) for x in setting])
            by[k].append(i)
    for idx in by.values():
        if len({str(fs[i].detail.get("intent") or fs[i].tool) for i in idx}) > 1:
            out.append(("shell_escalation", idx))
            taken.update(idx)


def _merge_shell_escalations(group: list[Finding]) -> Finding:
    f = group[0]
    intents = list(dict.fromkeys(str(g.detail.get("intent") or g.tool) for g in group))
    param, value = (str(x) for x in f.detail["setting"])
    q = quote_error(str(f.detail.get("error") or "refused"), 6)
    if f.detail.get("target"):  # folders the commands named: the programs did run
        folders = _and(list(dict.fromkeys(str(g.detail["target"]) for g in group)))
        ran = _and(list(dict.fromkeys(str(g.facts[1]) for g in group)))
        text = _fit(
            f"In this project files under {folders} are refused in the sandbox ('{q}'); "
            f"{ran} reached them with {param}: {value}.",
            f"In this project files under {folders} are refused in the sandbox; {ran} "
            f"reached them with {param}: {value}.",
        )
    else:
        text = _fit(
            f"In this project {_and(intents)} are refused in the sandbox ('{q}'); they ran "
            f"with {param}: {value}.",
            f"In this project {_and(intents)} are refused in the sandbox; they ran with "
            f"{param}: {value}.",
        )
    programs = list(dict.fromkeys(g.tool for g in group))
    return attrs.evolve(
        f,
        text=text,
        facts=(*programs, param),
        support=sum(g.support for g in group),
        detail={**f.detail, "intents": intents, "merged": len(group)},
    )


def _merge_shell_actions(group: list[Finding]) -> Finding:
    f = group[0]
    names = list(dict.fromkeys(g.tool for g in group))
    said = " ".join(w for w in str(f.detail.get("error") or "").split() if "/" not in w)
    q = quote_error(said.rstrip(": "), 6)
    action = str(f.detail["helper_action"])
    folder = str(f.detail.get("folder") or "")
    where = f"the scripts in {folder}/ ({_and(names)})" if folder else _and(names)
    text = _fit(
        f"In this project run {action} on {where} before running them; without it they fail "
        f"with '{q}'.",
        f"In this project run {action} on {where} before running them.",
        f"In this project run {action} on the scripts in {folder or '.'}/ before running them.",
    )
    return attrs.evolve(
        f,
        text=text,
        facts=(*names, str(f.facts[1])),
        support=sum(g.support for g in group),
        detail={**f.detail, "tools": names, "merged": len(group)},
    )


def _merge_shell_locations(group: list[Finding]) -> Finding:
    f = group[0]
    goods = list(dict.fromkeys(str(g.detail["good"]) for g in group))
    folder = goods[0].rstrip("/").rsplit("/", 1)[0]
    names = [x.rstrip("/").rsplit("/", 1)[-1] for x in goods]
    q = quote_error(re.sub(r"^(fatal|error|Error|ERROR): ", "", str(f.detail.get("error"))), 6)
    text = _fit(
        f"In this project {_and(names)} are in {folder}/; looking for them elsewhere fails "
        f"with '{q}'.",
        f"In this project {', '.join(names[:3])} and other such files are in {folder}/.",
    )
    avoid = list(dict.fromkeys(str(a) for g in group for a in g.detail.get("avoid") or []))
    programs = list(dict.fromkeys(g.detail.get("program") for g in group))
    return attrs.evolve(
        f,
        text=text,
        facts=(*(str(p) for p in programs if p), folder, *goods),
        support=sum(g.support for g in group),
        detail={**f.detail, "goods": goods, "folder": folder, "avoid": avoid, "merged": len(group)},
    )


def _merge_shell_programs(group: list[Finding]) -> Finding:
    f = group[0]
    program, how = f.facts[0], f.facts[1]
    q = quote_error(str(f.detail.get("error") or ""), 8)
    if f.detail.get("change") == "interpreter" and f.detail.get("silent"):
        text = f"{how} does not start here ({q}: Windows could not run it): run {program} instead."
    elif f.detail.get("change") == "interpreter":
        text = f"{how} is not on PATH here ('{q}'): run {program} instead."
    else:
        text = f"{program} is not on PATH here ('{q}'): run it through {how}."
    return attrs.evolve(
        f,
        text=lesson_text(text),
        support=sum(g.support for g in group),
        detail={**f.detail, "merged": len(group)},
    )


def _tool_rule_clusters(fs: Sequence[Finding], out: list[_Cluster], taken: set[int]) -> None:
    """One tool rule (the same helper, the same error) seen for several tools."""
    rules: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        if f.kind == Kind.TOOL_RULE and i not in taken and f.detail.get("helper"):
            rules[(str(f.detail.get("helper")), str(f.detail.get("rule_error")))].append(i)
    for idx in rules.values():
        if len({fs[i].tool for i in idx}) > 1 or len(idx) > 1:
            out.append(("tool_rule", idx))
            taken.update(idx)


def _tool_instead_clusters(fs: Sequence[Finding], out: list[_Cluster], taken: set[int]) -> None:
    """One rule of a tool (Read refuses a folder) slipped on in several runs: one lesson,
    its slips summed (a slip that repeats teaches; a one-off one does not)."""
    rules: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        if f.kind == Kind.TOOL_RULE and i not in taken and f.detail.get("repeats"):
            # one error, two ways out (Read in parts; a Read in parts still too long): two
            rules[(f.tool, str(f.detail.get("rule_error")), str(f.detail.get("how")))].append(i)
    for idx in rules.values():
        if len(idx) > 1:
            out.append(("tool_instead", idx))
            taken.update(idx)


def _same_lesson_clusters(fs: Sequence[Finding], out: list[_Cluster], taken: set[int]) -> None:
    """The same lesson found in several groups (git's own advice in three sessions), or
    the same lesson of one kind learned from two instances (:func:`payload`: a zsh glob
    refused on two paths of a project, one file found at one place after two different
    failed commands): one lesson with their support summed and all their runs, where it
    holds the same: a rule of a tool or a fact of the machine anywhere, a project's fact in
    that project. Lessons of two kinds, or two projects' facts, never merge."""
    by: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        scope = f.detail.get("scope")
        if i in taken or scope not in ("tool", "machine", "project"):
            continue
        where = str(f.detail.get("project") or "") if scope == "project" else ""
        if scope == "project" and not where:
            continue  # a project's fact of no known project: merged with nothing
        change = str(f.detail.get("change") or "")
        said = payload(f.text, keeps_trigger(f.kind, f.text))
        rule = str(f.detail.get("rule_error") or "") if f.kind == Kind.TOOL_RULE else ""
        key = (str(f.kind), change, said, rule, str(scope), where, *claim_facts(f))
        by[key].append(i)
    for idx in by.values():
        if len(idx) > 1:
            out.append(("same_lesson", idx))
            taken.update(idx)


def _merge_same_lesson(group: list[Finding]) -> Finding:
    """The first lesson's text, for all of them (they differ at most in their instance),
    with their support summed and every path they avoid."""
    f = group[0]
    avoid = list(dict.fromkeys(str(a) for g in group for a in g.detail.get("avoid") or []))
    detail = {**f.detail, "merged": len(group)}
    if avoid or "avoid" in f.detail:
        detail["avoid"] = avoid
    instances = list(dict.fromkeys(g.text for g in group))
    if len(instances) > 1:
        detail["instances"] = instances
    return attrs.evolve(f, support=sum(g.support for g in group), detail=detail)


#: A quoted span of a lesson (the error it quotes, a value of its example): the instance it
#: was learned from, not what it claims.
_QUOTE = re.compile(r"(?<![A-Za-z0-9])'[^'\n]*'(?![A-Za-z0-9])")
#: A clause that only tells how the instance failed ("; sed -n 1,200p x fails with '...'",
#: "; from ~/.claude it fails with '...'"), once its quote is masked.
_FAILED_CLAUSE = re.compile(r";[^;:]*?\bfails? with '…'")


def claim_facts(f: Finding) -> tuple[str, ...]:
    """The facts a lesson's claim rests on: all its facts, but for a shell correction the
    first, the program of the failed command (``sed`` or ``cat`` before the file was
    found), which is its instance. Two lessons of one payload merge only when these agree
    (a settings key named only inside the quoted error is part of the claim)."""
    return tuple(f.facts[1:]) if f.kind == Kind.SHELL else tuple(f.facts)


#: The template whose quote is the lesson's trigger, not its instance: "If Edit fails with
#: 'File has not been read yet', ...", "If git push fails with '...', run ...".
_TRIGGER = re.compile(r"If [^'\n]*? fails with ('[^'\n]*')")
#: The kinds whose quoted error is what the lesson is about (the rule a tool enforces, the
#: error a recovery answers), whatever the text's template.
_TRIGGER_KINDS = frozenset({Kind.TOOL_RULE, Kind.RECOVERY})


def keeps_trigger(kind: str, text: str) -> bool:
    """Whether a lesson's first quote is its trigger (the error it answers), which
    :func:`payload` keeps: a tool rule's or a recovery's quote, or that of any lesson of
    the "If T fails with 'E', ..." template. Elsewhere (a zsh glob's path, a file's
    location, the code whose ``!`` the shell tool escaped: :func:`.bang.is_bang_lesson`)
    the quote is the instance and is masked."""
    if is_bang_lesson(text):  # its quote is the code that failed: the instance
        return False
    return kind in _TRIGGER_KINDS or _TRIGGER.match(text) is not None


def trigger_of(text: str) -> str:
    """A lesson's first quote, its numbers masked: the error it answers where that is its
    trigger (:func:`keeps_trigger`); empty when it quotes nothing."""
    m = _TRIGGER.match(text) or _QUOTE.search(text)
    if m is None:
        return ""
    return re.sub(r"\d+", "N", m.group(1) if m.re is _TRIGGER else m.group(0)).strip("'")


def payload(text: str, trigger: bool = False) -> str:
    """What a lesson claims, without the instance it was learned from: its quoted spans
    masked and a clause that only tells how the instance failed left out. Two lessons of
    one kind and scope with the same payload are one lesson seen twice: "In zsh an
    unquoted path with [ ] ... ('no matches found: app/[id]/a.ts'): quote the path" and the
    same of ``app/[slug]/b.ts``; "In this project X is at docs/X; sed ... fails with '...'"
    and the same after a ``cat`` that failed. A path or a tool outside the quote is part of
    the claim: two files, two lessons. With ``trigger`` (:func:`keeps_trigger`), the first
    quote is the error the lesson answers and stays, but for its numbers: "If Edit fails
    with 'has not been read yet'" and "... 'has been modified since read'" are two rules."""
    head = ""
    m = (_TRIGGER.match(text) or _QUOTE.search(text)) if trigger else None
    if m is not None:
        q = m.group(1) if m.re is _TRIGGER else m.group(0)
        end = m.end(1) if m.re is _TRIGGER else m.end()
        head = text[: end - len(q)] + re.sub(r"\d+", "N", q)
        text = text[end:]
    t = _QUOTE.sub("'…'", text)
    t = _FAILED_CLAUSE.sub("", t)
    return " ".join((head + t).split())


def _merge_tool_instead(group: list[Finding]) -> Finding:
    f = group[0]
    slips = sum(int(g.detail.get("slips") or 1) for g in group)
    return attrs.evolve(
        f,
        support=sum(g.support for g in group),
        detail={**f.detail, "slips": slips, "merged": len(group)},
    )


def _merge_tool_rules(group: list[Finding]) -> Finding:
    tools = list(dict.fromkeys(t for f in group for t in _tools(f)))
    f = group[0]
    text = tool_rule_text(tools, str(f.detail.get("helper")), str(f.detail.get("error") or ""))
    return attrs.evolve(
        f,
        text=text,
        facts=(tools[0], str(f.detail.get("helper")), *tools[1:]),
        support=sum(g.support for g in group),
        detail={**f.detail, "tools": tools},
    )


def tool_rule_text(tools: Sequence[str], helper: str, error: str) -> str:
    """ "If Edit or Write fails with 'File has not been read yet', Read the file first,
    then retry": a tool rule's lesson."""
    q = quote_error(error.split(". ")[0], 6)
    return lesson_text(f"If {_join(tools)} fails with '{q}', {helper} the file first, then retry.")


def _prerequisite_clusters(fs: Sequence[Finding], out: list[_Cluster], taken: set[int]) -> None:
    """Prerequisites and recoveries with the same helper (and what the helper's call takes
    in); one tool's prerequisites with different helpers as one "needs" lesson, when it
    fits."""
    # The findings each helper may take in, by tool: looked up, not scanned per helper
    # (a session of thousands of groups has hundreds of helpers).
    values_of: dict[str, list[int]] = defaultdict(list)
    swaps_of: dict[str, list[int]] = defaultdict(list)
    for j, f in enumerate(fs):
        if f.kind == "param_value":
            values_of[f.tool].append(j)
        elif f.kind == "wrong_tool":
            swaps_of[f.facts[0]].append(j)
    units = _prerequisite_units(fs, values_of, swaps_of)
    _extend_merged_units(fs, units, values_of, swaps_of)
    # a helper's setting that made a later call fail is what that call needs, too
    held = {i for _u, chunk in units for i in chunk}
    units += [
        (f.tool, [j])
        for j, f in enumerate(fs)
        if j not in held and f.kind == "param_value" and f.detail.get("later") and _setting(f)
    ]
    needs = _needs_clusters(fs, units, out, taken)
    for k, (_u, chunk) in enumerate(units):
        if (
            k not in needs
            and len(chunk) > 1
            and _needed_by(fs, chunk)
            and any(fs[i].kind in ("prerequisite", "recovery") for i in chunk)
        ):
            out.append(("prerequisite", sorted(chunk)))
            taken.update(chunk)


def _prerequisite_units(
    fs: Sequence[Finding], values_of: dict[str, list[int]], swaps_of: dict[str, list[int]]
) -> list[_Unit]:
    """The prerequisite lessons, one per helper (split at MAX_TOOLS tools), after one per
    lesson already merged for several helpers of one tool."""
    units: list[_Unit] = []
    helpers: dict[str, list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        if f.detail.get("parts"):
            units.append((None, [i]))
        elif f.detail.get("helper") and (
            f.kind == "prerequisite" or (f.kind == "recovery" and not f.detail.get("param"))
        ):
            helpers[f.detail["helper"]].append(i)
    for u, idx in helpers.items():
        tools = {t for i in idx for t in _tools(fs[i])}
        have = next((st for i in idx if (st := _setting(fs[i]))), None)
        idx = idx + [
            j
            for j in values_of.get(u, ())
            if fs[j].detail.get("later") in tools
            and (st := _setting(fs[j]))
            and (have is None or st[0] == have[0])
        ]
        instead = next((fs[i].detail["instead"] for i in idx if fs[i].detail.get("instead")), None)
        idx = idx + [
            j
            for j in swaps_of.get(u, ())
            if not fs[j].detail.get("both_ways") and instead in (None, fs[j].facts[1])
        ]
        units += [(u, chunk) for chunk in _chunks(fs, idx)]
    return units


def _extend_merged_units(
    fs: Sequence[Finding],
    units: list[_Unit],
    values_of: dict[str, list[int]],
    swaps_of: dict[str, list[int]],
) -> None:
    """A lesson already merged for several helpers of one tool takes those helpers'
    settings and wrong tools that no helper of their own took (its chunk grows in place)."""
    held = {i for _u, chunk in units for i in chunk}
    for _u, chunk in units:
        f = fs[chunk[0]]
        if _u is not None:
            continue
        hs = {p["helper"] for p in f.detail["parts"]}
        pool = sorted({j for h in hs for j in (*values_of.get(h, ()), *swaps_of.get(h, ()))})
        chunk += [
            j
            for j in pool
            if j not in held
            and (
                (fs[j].kind == "param_value" and fs[j].detail.get("later") == f.tool)
                or (fs[j].kind == "wrong_tool" and not fs[j].detail.get("both_ways"))
            )
        ]
        held.update(chunk)


def _needed_by(fs: Sequence[Finding], chunk: list[int]) -> set[str]:
    """The tools a unit's findings are prerequisites of (else the later calls that failed)."""
    heads = {t for i in chunk if fs[i].kind in ("prerequisite", "recovery") for t in _tools(fs[i])}
    return heads or {fs[i].detail["later"] for i in chunk if fs[i].detail.get("later")}


def _needs_clusters(
    fs: Sequence[Finding], units: list[_Unit], out: list[_Cluster], taken: set[int]
) -> set[int]:
    """One tool's prerequisites with different helpers: one lesson, when it fits. Returns
    the units it took."""
    by_tool: dict[str, list[int]] = defaultdict(list)
    for k, (_u, chunk) in enumerate(units):
        tools = _needed_by(fs, chunk)
        if len(tools) == 1:
            by_tool[next(iter(tools))].append(k)
    needs: set[int] = set()
    for t, ks in by_tool.items():
        if len(ks) < 2:
            continue
        idx = sorted(i for k in ks for i in units[k][1])
        if len({p["helper"] for p in _prereq_parts([fs[i] for i in idx])}) < 2:
            continue
        if _needs_text(t, _prereq_parts([fs[i] for i in idx])) is None:
            continue
        out.append(("needs", idx))
        taken.update(idx)
        needs.update(ks)
    return needs


def _value_links(f: Finding) -> set[str]:
    """What joins a value finding to others of its parameter: its tools, look-up tool,
    domain and the first words of its error."""
    out = set(_tools(f)) | ({f.detail.get("source") or "", f.detail.get("helper") or ""} - {""})
    if f.domain and f.domain != "general":
        out.add(f"domain:{f.domain}")
    err = re.sub(r"^\w+:\s*", "", quote_error(f.detail.get("error") or "", 12))
    err = " ".join([w for w in err.split() if not re.search(r"[.\d:/]", w)][:3])
    if err and f.kind != "param_name":
        out.add(f"error:{err.lower()}")
    return out


def _value_clusters(fs: Sequence[Finding], out: list[_Cluster], taken: set[int]) -> None:
    """Values, recoveries and wrong names of one parameter X with a link in common."""
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
    for comp in _linked_components(fs, cand):
        kinds = {fs[j].kind for j in comp}
        if len(comp) > 1 and kinds & {"param_value", "recovery"}:
            if says_nothing(_merge_values([fs[j] for j in comp])):
                continue  # each keeps its own trigger (a recovery's error) or merges alike
            out.append(("value", sorted(comp)))
            taken.update(comp)


def says_nothing(merged: Finding) -> bool:
    """Whether a merged value lesson would be only "Call T with X=...": no value (the
    runs' values differed), no look-up tool, no bad value, no wrong name, and no trigger
    (the error it answers). Served to every call of T and read literally, it would set X
    on each (Read capped by a limit), and it says nothing the error does not: the
    findings stay apart, each a lesson of its own trigger ("If Read fails with '...
    exceeds maximum allowed tokens', retry it with limit set")."""
    d = merged.detail
    return not any(d.get(k) for k in ("good", "bad", "source", "wrong_name"))


def _linked_components(fs: Sequence[Finding], cand: list[int]) -> list[list[int]]:
    """Connected components of "same parameter, a link in common": findings are joined
    through the (parameter, link) keys they share, each key looked at once, so a
    session's thousands of findings cost a pass, not all pairs."""
    by_key: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i in cand:
        for link in _value_links(fs[i]):
            by_key[(_param_of(fs[i]), link)].append(i)
    keys_of: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for key, members in by_key.items():
        for i in members:
            keys_of[i].append(key)
    comps: list[list[int]] = []
    seen: set[int] = set()
    done: set[tuple[str, str]] = set()
    for i in cand:
        if i in seen:
            continue
        comp, todo = [i], [i]
        seen.add(i)
        while todo:
            for key in keys_of[todo.pop()]:
                if key in done:
                    continue
                done.add(key)
                for j in by_key[key]:
                    if j not in seen:
                        seen.add(j)
                        comp.append(j)
                        todo.append(j)
        comps.append(comp)
    return comps


def _name_clusters(fs: Sequence[Finding], out: list[_Cluster], taken: set[int]) -> None:
    """The same wrong parameter name guessed for several tools."""
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


def _lookup_name_clusters(fs: Sequence[Finding], out: list[_Cluster], taken: set[int]) -> None:
    """A wrong name of a look-up tool goes with the lesson that says to look a value up
    with it (or with a value finding left alone), when the lesson still fits."""
    for j, f in enumerate(fs):
        if j in taken or f.kind != "param_name" or len(f.facts) != 3 or f.detail.get("pairs"):
            continue
        for c, (kind, idx) in enumerate(out):
            if kind == "value" and f.tool in {
                fs[i].detail.get("source") or fs[i].detail.get("helper") for i in idx
            }:
                if len(_merge_values([fs[i] for i in [*idx, j]]).text.split()) <= 32:
                    out[c] = (kind, sorted([*idx, j]))
                    taken.add(j)
                break
        else:
            src = next(
                (
                    x
                    for x, g in enumerate(fs)
                    if x not in taken
                    and g.kind in ("param_value", "recovery")
                    and _param_of(g)
                    and f.tool in (g.detail.get("source"), g.detail.get("helper"))
                ),
                None,
            )
            if src is not None and len(_merge_values([fs[src], f]).text.split()) <= 32:
                out.append(("value", sorted([src, j])))
                taken.update((src, j))


def _related_name_clusters(fs: Sequence[Finding], out: list[_Cluster], taken: set[int]) -> None:
    """Wrong names of related tools (a shared name part): one lesson, up to three tools."""
    names = [
        i
        for i, f in enumerate(fs)
        if i not in taken
        and f.kind == "param_name"
        and len(f.facts) == 3
        and not f.detail.get("pairs")
    ]
    for i in names:
        if i in taken:
            continue
        parts = _name_parts(fs[i].tool)
        related = [
            j
            for j in names
            if j != i
            and j not in taken
            and fs[j].tool != fs[i].tool
            and parts & _name_parts(fs[j].tool)
        ]
        idx = [i, *related[:2]]
        if len(idx) > 1 and len(_related_names_text([fs[k] for k in idx]).split()) <= 32:
            out.append(("related_names", sorted(idx)))
            taken.update(idx)


def _missing_clusters(fs: Sequence[Finding], out: list[_Cluster], taken: set[int]) -> None:
    """The same step skipped in several groups."""
    missing: dict[str, list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        if f.kind == "missing_step" and i not in taken:
            missing[f.tool].append(i)
    for idx in missing.values():
        if len(idx) > 1:
            out.append(("missing", idx))
            taken.update(idx)


def _wrong_tool_clusters(fs: Sequence[Finding], out: list[_Cluster], taken: set[int]) -> None:
    """The same substitution (either way round) seen more than once."""
    pairs: dict[frozenset[str], list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        if f.kind == "wrong_tool" and i not in taken:
            pairs[frozenset(f.facts[:2])].append(i)
    out.extend(("wrong_tool", idx) for idx in pairs.values() if len(idx) > 1)


def merge_cluster(kind: str, group: list[Finding]) -> Finding:
    """The one finding that stands for a cluster of :func:`clusters`."""
    return {
        "prerequisite": _merge_prerequisites,
        "needs": _merge_needs,
        "value": _merge_values,
        "related_names": _merge_related_names,
        "name": _merge_names,
        "missing": _merge_missing,
        "wrong_tool": _merge_wrong_tools,
        "tool_rule": _merge_tool_rules,
        "shell_location": _merge_shell_locations,
        "shell_fold": _merge_shell_folds,
        "shell_program": _merge_shell_programs,
        "shell_action": _merge_shell_actions,
        "shell_escalation": _merge_shell_escalations,
        "tool_instead": _merge_tool_instead,
        "same_lesson": _merge_same_lesson,
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
