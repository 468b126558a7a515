"""Stage 2 from the data: what separates a group's positive trajectories from its negative ones.

Each :class:`Finding` is one difference the steps prove (a parameter name or
value, a missing prerequisite call, a recovery, a wrong tool, a skipped step),
with a draft lesson of at most 32 words that says when and how to apply it, the
facts (tool and parameter names) that any rephrasing must keep, and the
``avoid`` items (the wrong tool, parameter name or value) that a rephrasing may
only name as something not to do. The model may rephrase a finding; it cannot
invent one.

Positive and negative
---------------------
Positive: advantage above 0; negative: below 0 (paper, eq. 7). A trajectory exactly at
the group mean (advantage 0, which the composite reward makes possible: an all-success
run that the user rejected can score the mean) counts by the user's verdict when there is
one: rejected runs are negatives, accepted ones positives.

Root causes, one per negative trajectory
-----------------------------------------
Each negative trajectory is aligned, call by call (tool names, inert tools such
as ``think`` left out), with the positive trajectory closest to it, and its
*first divergence* from that positive is its root cause. Later failures of the
same run are mostly its consequences (a missing login makes every later call
fail), so they do not become findings of their own. A failed call the negative
itself retried (an extra call of the same tool, same parameter names or values)
is not a divergence. Divergences, in the order they occur:

1. ``param_name``: the same tool, the negative's call failed, the parameter
   names differ -> "Call T with right=..., never wrong=...".
2. ``param_value``: the same tool, the negative's call failed, a value differs
   -> "Call T with X like good; never X=bad". When the positive's value came from
   the output of an earlier call of tool L, the lesson says to look X up with L.
3. ``param_value`` (no error at the call): the same tool, both calls succeeded,
   a short categorical value differs that no positive ever used, and the run
   failed later (or the value is a flag or number) -> "Call T with X=good, never bad".
4. ``prerequisite``: a successful call of U in the positive is missing from the
   negative (it made no identical call in its place), and the negative's next
   failure is on another tool T -> "Before calling T, call U first".
5. ``wrong_tool``: the negative called W exactly where the positive called R (a
   one-for-one substitution between equal stretches), and the two can stand in
   for each other (a shared name part, parameter names or values) -> "Use R, not W,
   for requests like <the words of the task that ask for R>".

A negative whose alignment shows no such divergence falls back to comparing each
of its unrecovered failures with every positive's successful calls of that tool
(rules 1, 2, 4 above), or to a tool of the failing tool's domain that only
positives used and that can stand in for it (``wrong_tool``).

Then, over the whole group:

6. ``recovery``: positives hit error e on T and recovered (a retry of T),
   negatives hit it and did not -> "If T fails with e, call U and retry".
7. ``missing_step``: with two or more positives, every positive called U, a negative
   never did and nothing else explains it; only when something says when (the next
   call, or the words of the task that ask for U).

Merging (:func:`agentmem.learning.merge.merge_findings`, within a group here and
across the groups of a session in :func:`agentmem.learning.stages.generalize`):
findings that teach one lesson become one -- prerequisites and recoveries with the same helper U for
several tools ("Before calling cat, cp or mv, call cd first"), with U's own
parameter value or the tool wrongly used instead of U; values of one parameter X
linked by a tool, a look-up tool or an error, with the recoveries that looked X up
and a misspelt name of X; one wrong parameter name guessed for several tools; the
same substitution seen in several groups (both directions: "use cp, not mv, for
..., use mv, not cp, for ..."); one step skipped in several groups.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

import attrs

from ..agents import command_params, is_shell, learning_view, same_job, spec_for
from ..records import Step, Trajectory
from .digest import Digest, Recovery, value_text
from .findings import KIND_RANK, Finding, err_clause, lesson_text, quote_error, short_value
from .kinds import Kind
from .merge import merge_findings

__all__ = [
    "Finding",
    "find_evidence",
    "quote_error",
    "task_phrase",
]


@attrs.frozen
class Member:
    traj: Trajectory
    dig: Digest

    @property
    def steps(self) -> tuple[Step, ...]:
        return self.traj.steps


def name_parts(name: str) -> set[str]:
    """The words of a tool's name (``get_weather``: get, weather), three letters or more.
    An MCP tool's name (``mcp__server__tool``) gives its tool part's words only: the
    protocol and the server are shared by tools that do other jobs (blind set 14's first
    try: ``list_directory`` of a filesystem server "replaced" by a thinking tool, as both
    names held ``mcp``)."""
    mcp = _mcp_tool(name)
    if mcp is not None:
        name = mcp[1]
    parts = re.split(r"[_\W]+", name)
    words: set[str] = set()
    for p in parts:
        words.update(w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", p))
    return {w for w in words if len(w) > 2}


def holds_code(tool: str, name: str, value: Any) -> bool:
    """Whether ``value`` of parameter ``name`` of ``tool`` is a command line or a script
    (several words in a parameter that holds one, :func:`~agentmem.agents.command_params`:
    a shell's command; any value of a script's parameter, :attr:`ToolSpec.code`: Codex
    code mode's JavaScript ``input``; or several lines), not a value: its change is code,
    as the shell kinds read it, never "call T with x like V"."""
    if not isinstance(value, str):
        return False
    found = spec_for(tool)
    if found is not None and found[1].code == name:
        return True  # a script whatever its length: text(1)
    v = value.strip()
    return "\n" in v or (name.lower() in command_params(tool) and len(v.split()) > 1)


def _categorical(text: str) -> bool:
    """A short, categorical value (a name, a number, a flag), not free text worth no lesson."""
    return len(text) <= 40 and len(text.split()) <= 3


def is_scalar(v: Any) -> bool:
    return isinstance(v, (str, int, float, bool)) and not (isinstance(v, str) and not v.strip())


# --------------------------------------------------------------------------- group helpers


def _domain_of(members: Sequence[Member], tool: str) -> str:
    for m in members:
        for s in m.steps:
            if s.tool == tool and s.domain:
                return s.domain
    return ""


def inert_tools(ms: Sequence[Member]) -> set[str]:
    """Tools whose every call returned nothing (a scratchpad like ``think``): no lessons."""
    outs: dict[str, set[str]] = defaultdict(set)
    for m in ms:
        for s in m.steps:
            outs[s.tool].add(s.output.strip())
    return {t for t, o in outs.items() if o <= {""}}


def _calls(m: Member, inert: set[str]) -> list[int]:
    return [i for i, s in enumerate(m.steps) if s.tool not in inert]


def param_values(params: dict[str, Any]) -> set[str]:
    out = set()
    for v in params.values():
        for x in v if isinstance(v, list) else [v]:
            if is_scalar(x):
                out.add(str(x))
    return out


def shared_name_words(a: str, b: str) -> set[str]:
    """The words two tools' names share (:func:`name_parts`), without the leading word of
    two tools of one MCP server that both start with it: the server's own prefix
    (playwright's ``browser_click`` and ``browser_snapshot`` do other jobs)."""
    shared = name_parts(a) & name_parts(b)
    ma, mb = _mcp_tool(a), _mcp_tool(b)
    if ma is not None and mb is not None and ma[0] == mb[0]:
        fa, fb = re.split(r"[_\W]+", ma[1].lower()), re.split(r"[_\W]+", mb[1].lower())
        if fa[0] == fb[0] and len(fa) > 1 and len(fb) > 1:
            shared -= name_parts(fa[0])
    return shared


def _mcp_tool(name: str) -> tuple[str, str] | None:
    """(server, tool) of an MCP tool's name (``mcp__server__tool``), else None."""
    if not name.startswith("mcp__") or name.count("__") < 2:
        return None
    _, server, tool = name.split("__", 2)
    return server, tool


def can_stand_in(ms: Sequence[Member], r: Step, w: Step) -> bool:
    """Two calls that can stand in for each other: a shared name part, parameters, values;
    for two tools of a coding agent, only when they do the same job
    (:func:`agentmem.agents.same_job`: Edit for Write, never Read for Edit)."""
    job = same_job(r.tool, w.tool)
    if job is not None:
        return job
    if shared_name_words(r.tool, w.tool):
        return True
    if set(r.params) & set(w.params) or param_values(r.params) & param_values(w.params):
        return True
    return not r.params and not w.params


def provenance(m: Member, before: int, value: Any) -> str | None:
    """The tool whose successful output, before step ``before``, holds ``value`` (not as a
    parameter of that call): where a positive run took the value from."""
    text = value_text(value, 200)
    if not is_scalar(value) or len(text) < 2:
        return None
    for s in reversed(m.steps[:before]):
        if s.success and text in s.output and text not in param_values(s.params):
            return s.tool
    return None


def _in_task(m: Member, value: Any) -> bool:
    return isinstance(value, str) and len(value) > 1 and value.lower() in m.traj.task.lower()


# --------------------------------------------------------------------------- alignment


def _events(p: Member, n: Member, inert: set[str]) -> list[tuple[str, int | None, int | None]]:
    """The two runs aligned call by call: (op, positive index, negative index), in order."""
    pi, ni = _calls(p, inert), _calls(n, inert)
    a = [p.steps[i].tool for i in pi]
    b = [n.steps[j].tool for j in ni]
    out: list[tuple[str, int | None, int | None]] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out += [("equal", pi[i1 + k], ni[j1 + k]) for k in range(i2 - i1)]
        elif op == "delete":
            out += [("delete", pi[i], None) for i in range(i1, i2)]
        elif op == "insert":
            out += [("insert", None, ni[j]) for j in range(j1, j2)]
        elif i2 - i1 == 1 and j2 - j1 == 1:  # one call stands where the positive made another
            out.append(("replace", pi[i1], ni[j1]))
        else:  # a longer stretch of other calls: no one-for-one substitution to name
            k = min(i2 - i1, j2 - j1)
            out += [("other", pi[i1 + x], ni[j1 + x]) for x in range(k)]
            out += [("delete", pi[i], None) for i in range(i1 + k, i2)]
            out += [("insert", None, ni[j]) for j in range(j1 + k, j2)]
    return out


def _closest(n: Member, pos: Sequence[Member], inert: set[str]) -> Member:
    b = [n.steps[j].tool for j in _calls(n, inert)]

    def score(p: Member) -> tuple[float, int]:
        a = [p.steps[i].tool for i in _calls(p, inert)]
        same = sum(
            1
            for x, y in zip(p.steps, n.steps, strict=False)
            if x.tool == y.tool and x.params == y.params
        )
        return SequenceMatcher(None, a, b, autojunk=False).ratio(), same

    return max(pos, key=score)


def mentions(error: str, names: Sequence[str]) -> bool:
    """Whether ``error`` names one of the parameters ``names`` (or a long part of one)."""
    low = error.lower()
    for n in names:
        if n.lower() in low:
            return True
        if any(p[:5] in low for p in name_parts(n) if len(p) > 3):
            return True
    return False


# --------------------------------------------------------------------------- finding builders


def param_name_finding(
    t: str, dom: str, e: str, p: dict[str, Any], q: dict[str, Any]
) -> Finding | None:
    extra, missing = sorted(set(p) - set(q)), sorted(set(q) - set(p))
    if not extra and not missing:
        return None
    if len(extra) == 1 and len(missing) == 1:
        r, w = missing[0], extra[0]
        text = lesson_text(f"Call {t} with {r}=..., never {w}=...; {w} is not a parameter of {t}.")
        return Finding(
            "param_name",
            t,
            dom,
            text,
            (t, missing[0], extra[0]),
            detail={"error": e, "wrong": extra, "right": missing, "avoid": extra},
        )
    need = ", ".join(missing) or "only its documented parameters"
    drop = f", not {', '.join(extra)}" if extra else ""
    text = lesson_text(f"Call {t} with {need}{drop};", err_clause(e, "otherwise it", words=5) + ".")
    return Finding(
        "param_name",
        t,
        dom,
        text,
        (t, *(missing or extra)[:2]),
        detail={"error": e, "wrong": extra, "right": missing, "avoid": extra},
    )


def param_value_finding(
    t: str,
    dom: str,
    e: str | None,
    x: str,
    bad: Any,
    good: Any,
    source: str | None,
    later: str | None = None,
    later_error: str = "",
    right_value_shown: bool = False,
) -> Finding:
    """A value of parameter ``x`` of ``t`` that failed (``e``) or made a later call fail.
    ``right_value_shown``: the failed run itself then called ``t`` with another value of
    ``x`` that worked (:func:`retried_otherwise`); or other runs did (an accepted run of
    the same task, or runs of similar tasks whose values are all of a kind the failed one
    is not) and the failed run did not reach what the value named another way
    (:func:`reached_otherwise`): the value, not the thing it named, was wrong."""
    b, g = short_value(bad), short_value(good)
    if e is not None:
        q = quote_error(e, 5)
        outcome = f"never {x}={b}" + (f", which failed with '{q}'." if q else ", which failed.")
    elif later:
        outcome = f"otherwise the later {later} call fails."
    else:
        outcome = "otherwise the run is rejected."
    if source and source != t:
        head = f"Before calling {t}, look up {x} with {source} (e.g. {g});"
        facts: tuple[str, ...] = (t, x, source)
    elif e is None:
        head = f"Call {t} with {x}={g}, never {b};"
        facts = (t, x)
    else:
        head = f"Call {t} with {x} like {g};"
        facts = (t, x)
    return Finding(
        "param_value",
        t,
        dom,
        lesson_text(head, outcome),
        facts,
        detail={
            "error": e,
            "bad": bad,
            "good": good,
            "source": source,
            "later": later,
            "param": x,
            "avoid": [b],
            "right_value_shown": right_value_shown,
        },
    )


def reached_otherwise(steps: Sequence[Step], i: int, x: str) -> bool:
    """Whether the failed run then reached what step ``i``'s value of ``x`` names another
    way: a later call of another tool that worked with that value in its parameters (a
    Read of ``.claude/skills/para-memory-files/SKILL.md`` after the skill loader said
    "Unknown skill: para-memory-files"). The value named something that is there, which
    the tool could not take: another run's value shows no wrong value then."""
    s = steps[i]
    v = s.params.get(x)
    if not isinstance(v, str) or len(v.strip()) < 3:
        return False
    return any(
        later.tool != s.tool
        and later.success
        and any(isinstance(p, str) and v in p for p in later.params.values())
        for later in steps[i + 1 :]
    )


def retried_otherwise(steps: Sequence[Step], i: int, x: str) -> bool:
    """Whether a later call of step ``i``'s tool in the same run passed another value of
    parameter ``x`` and worked: the run's own proof that ``i``'s value was wrong, and not
    that what it named is missing (a skill not installed, done another way after)."""
    s = steps[i]
    bad = s.params.get(x)
    return any(
        later.tool == s.tool and later.success and x in later.params and later.params[x] != bad
        for later in steps[i + 1 :]
    )


def prerequisite_finding(t: str, u: str, dom: str, e: str) -> Finding:
    text = lesson_text(
        f"Before calling {t}, call {u} first;", err_clause(e, f"without it {t}", words=5) + "."
    )
    return Finding("prerequisite", t, dom, text, (t, u), detail={"error": e, "helper": u})


_SENTENCE = re.compile(r".+?(?:[.?!](?=\s|$)|$)", re.DOTALL)
_TOKEN = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.'’/-]*[A-Za-z0-9_])?")


def task_phrase(task: str, step: Step, words: int = 10, needs_name: bool = False) -> str | None:
    """The few words of the task that ask for ``step``: the sentence sharing the most with
    its string arguments and the parts of its tool name, clipped around the first match."""
    values = [v for v in param_values(step.params) if not v.isdigit() and len(v) > 2]
    plain = {v for v in values if not re.search(r"[\d_]", v)}
    parts = [p[:5] for p in name_parts(step.tool) if len(p) > 3]  # not get/set/add
    best, best_score, best_at = None, 0, 0
    for m in _SENTENCE.finditer(task):
        sent = m.group(0).strip()
        low = sent.lower()
        toks = _TOKEN.findall(sent)
        score = sum(2 if v in plain else 1 for v in values if v.lower() in low)
        hits = [i for i, t in enumerate(toks) if any(t.lower().startswith(p) for p in parts)]
        if needs_name and not hits:
            continue
        score += 2 * len({toks[i].lower() for i in hits})
        hits += [i for i, t in enumerate(toks) if any(v.lower() in t.lower() for v in values)]
        if score > best_score:
            best, best_score, best_at = toks, score, min(hits) if hits else 0
    if not best or best_score < 2:
        return None
    start = max(0, min(best_at - 3, len(best) - words))
    # a snake_case word of the task that the call does not pass reads like a tool name
    keep = [t for t in best[start : start + words] if "_" not in t or "." in t or t in values]
    phrase = " ".join(keep)
    phrase = re.sub(r"[\"`|]", "", phrase).strip(" ,;:.")
    return phrase or None


def wrong_tool_finding(
    r: Step, w: Step, dom: str, e: str | None, context: str | None, task: str = ""
) -> Finding:
    ask = task_phrase(task, r) if task else None
    if ask:
        when = f'for requests like "{ask}"'
    else:
        when = (
            f"after {context}" if context and context not in (r.tool, w.tool) else "for this step"
        )
    why = err_clause(e, w.tool, "failed", words=5) + "." if e else f"{w.tool} runs were rejected."
    text = lesson_text(f"Use {r.tool}, not {w.tool}, {when};", why)
    return Finding(
        "wrong_tool",
        w.tool,
        dom,
        text,
        (r.tool, w.tool),
        detail={"error": e, "avoid": [w.tool], "ask": ask},
    )


def _call_form(u: Step) -> str:
    """``tool(a, b)``: the call with its parameter names (how to make it)."""
    names = list(u.params)[:3]
    return f"{u.tool}({', '.join(names)})" if names else u.tool


def _missing_step(u: Step, nxt: str | None, dom: str, task: str = "") -> Finding | None:
    """ "Call U (before V)": None when nothing says when (no next call, no request)."""
    ask = task_phrase(task, u, needs_name=True) if task else None
    if not ask and not nxt:
        return None
    when = f' for requests like "{ask}"' if ask else ""
    if nxt:
        text = lesson_text(
            f"Call {_call_form(u)} before {nxt}{when};", "runs that skipped it were rejected."
        )
        facts: tuple[str, ...] = (u.tool, nxt)
    else:
        text = lesson_text(f"Call {_call_form(u)}{when};", "runs that skipped it were rejected.")
        facts = (u.tool,)
    return Finding(
        "missing_step", u.tool, dom, text, facts, detail={"call": _call_form(u), "next": nxt}
    )


# --------------------------------------------------------------------------- root causes


def _ok_before(m: Member, index: int) -> list[str]:
    return [s.tool for s in m.steps[:index] if s.success]


def _sig(s: Step) -> tuple[str, str]:
    return s.tool, json.dumps(s.params, sort_keys=True, ensure_ascii=False, default=str)


def _ok_calls_before(m: Member, index: int) -> set[tuple[str, str]]:
    return {_sig(s) for s in m.steps[:index] if s.success}


def _failed_call(ms: Sequence[Member], n: Member, ni: int, p: Member, pi: int) -> Finding | None:
    """Rules 1, 2 and (same parameters) 4 for a call that failed in ``n`` and not in ``p``."""
    ns, ps = n.steps[ni], p.steps[pi]
    t, dom = ns.tool, _domain_of(ms, ns.tool)
    fail = next((f for f in n.dig.failures if f.index == ni), None)
    e = fail.error if fail else ""
    names = sorted(set(ns.params) ^ set(ps.params))
    if names and not mentions(e, names):
        # the calls differ in their parameters' names, but the error names none of them: the
        # names are not what failed (a Read of a file that is not there, beside a Read in
        # parts of another): no lesson of names, nor of the values of this pair
        return None
    f = param_name_finding(t, dom, e, dict(ns.params), dict(ps.params))
    if f:
        return f
    diff = [k for k in ns.params if ns.params[k] != ps.params.get(k)]
    # code is no value, the script that worked as the one that failed (review 27)
    diff = [
        k
        for k in diff
        if not (holds_code(t, k, ns.params[k]) or holds_code(t, k, ps.params.get(k)))
    ]
    diff = [k for k in diff if _categorical(value_text(ns.params[k], 200))] or diff
    if diff:
        x = diff[0]
        return param_value_finding(
            t,
            dom,
            e,
            x,
            ns.params[x],
            ps.params[x],
            provenance(p, pi, ps.params[x]),
            # an accepted run of the same task (an exact group) called t with another x,
            # and it worked there: the value was wrong for this task, unless the run then
            # reached what it named another way
            right_value_shown=retried_otherwise(n.steps, ni, x)
            or not reached_otherwise(n.steps, ni, x),
        )
    ok_neg = _ok_calls_before(n, ni)
    u = next(
        (
            s.tool
            for s in reversed(p.steps[:pi])
            if s.success and _sig(s) not in ok_neg and s.tool != t
        ),
        None,
    )
    if u:
        return prerequisite_finding(t, u, dom, e)
    return None


def _first_failure(n: Member, start: int) -> int | None:
    return next((f.index for f in n.dig.failures if f.index >= start and not f.recovered), None)


_Event = tuple[str, int | None, int | None]


def _positive_values(pos: Sequence[Member]) -> dict[tuple[str, str], set[str]]:
    """The values the positive runs passed, by (tool, parameter)."""
    pos_values: dict[tuple[str, str], set[str]] = defaultdict(set)
    for m in pos:
        for s in m.steps:
            for name, v in s.params.items():
                pos_values[(s.tool, name)].add(value_text(v, 200))
    return pos_values


def _root(
    ms: Sequence[Member], pos: Sequence[Member], n: Member, p: Member, inert: set[str]
) -> Finding | None:
    """The first divergence of ``n`` from ``p`` that explains its failure (see module doc)."""
    events = _events(p, n, inert)
    pos_values = _positive_values(pos)
    extra = {j for op, _, j in events if op == "insert"}
    for k, (op, pi, ni) in enumerate(events):
        f: Finding | None = None
        if op == "equal":
            assert pi is not None and ni is not None
            f = _same_call_root(ms, n, p, pi, ni, extra, pos_values)
        elif op == "delete":
            assert pi is not None
            f = _skipped_call_root(ms, n, p, events, k, pi)
        elif op == "replace":
            assert pi is not None and ni is not None
            f = _replaced_call_root(ms, n, p, events, k, pi, ni)
        if f is not None:
            return f
    return None


def _same_call_root(
    ms: Sequence[Member],
    n: Member,
    p: Member,
    pi: int,
    ni: int,
    extra: set[int | None],
    pos_values: dict[tuple[str, str], set[str]],
) -> Finding | None:
    """Both runs call the tool here: it failed only in ``n`` (rules 1, 2, 4), or it worked in
    both with a categorical value no positive passed that made a later call fail."""
    ps, ns = p.steps[pi], n.steps[ni]
    if ps.success and not ns.success:
        retry = next(
            (
                j
                for j in range(ni + 1, len(n.steps))
                if n.steps[j].tool == ns.tool and n.steps[j].success
            ),
            None,
        )
        if retry is not None and retry in extra:
            return None  # the negative retried this call itself (an extra call)
        return _failed_call(ms, n, ni, p, pi)
    if ps.success and ns.success and ps.params != ns.params:
        return _changed_value_root(ms, n, p, pi, ni, pos_values)
    return None


def _changed_value_root(
    ms: Sequence[Member],
    n: Member,
    p: Member,
    pi: int,
    ni: int,
    pos_values: dict[tuple[str, str], set[str]],
) -> Finding | None:
    """A call that worked in both runs with a different categorical value, one no positive
    passed: a lesson when a later call failed, the value was looked up or is not text."""
    ps, ns = p.steps[pi], n.steps[ni]
    diff = [
        x
        for x in ns.params
        if x in ps.params
        and ns.params[x] != ps.params[x]
        and is_scalar(ns.params[x])
        and is_scalar(ps.params[x])
        and _categorical(value_text(ns.params[x], 200))
        and _categorical(value_text(ps.params[x], 200))
        and value_text(ns.params[x], 200) not in pos_values[(ns.tool, x)]
    ]
    if not diff:
        return None
    x = diff[0]
    later = _first_failure(n, ni + 1)
    source = provenance(p, pi, ps.params[x])
    if later is None and not source and not isinstance(ps.params[x], (bool, int, float)):
        return None  # a different free choice with no visible effect: not a lesson
    ls = n.steps[later] if later is not None else None
    le = next((f.error for f in n.dig.failures if f.index == later), "")
    return param_value_finding(
        ns.tool,
        _domain_of(ms, ns.tool),
        None,
        x,
        ns.params[x],
        ps.params[x],
        source,
        ls.tool if ls else None,
        le,
        right_value_shown=retried_otherwise(n.steps, ni, x),
    )


def _skipped_call_root(
    ms: Sequence[Member], n: Member, p: Member, events: Sequence[_Event], k: int, pi: int
) -> Finding | None:
    """A call only the positive made (event ``k``), before a call that then failed in ``n``
    and worked in ``p``: a prerequisite."""
    ps = p.steps[pi]
    next_n = next((j for _, _, j in events[k + 1 :] if j is not None), None)
    if not ps.success or next_n is None:
        return None  # the negative had stopped: what positives did next is a recovery
    fi = _first_failure(n, next_n)
    if fi is None:
        return None
    t = n.steps[fi].tool
    prev_n = next((j for _, _, j in reversed(events[:k]) if j is not None), -1)
    if t == ps.tool or any(_sig(s) == _sig(ps) and s.success for s in n.steps[prev_n + 1 : fi]):
        return None  # the negative made this very call, elsewhere: not missing
    if not any(s.tool == t and s.success for s in p.steps[pi + 1 :]):
        return None
    e = next(f.error for f in n.dig.failures if f.index == fi)
    return prerequisite_finding(t, ps.tool, _domain_of(ms, t), e)


def _replaced_call_root(
    ms: Sequence[Member], n: Member, p: Member, events: Sequence[_Event], k: int, pi: int, ni: int
) -> Finding | None:
    """``n`` called another tool where ``p`` made a call that worked: a wrong tool, when
    the one can stand in for the other."""
    r, w = p.steps[pi], n.steps[ni]
    if not r.success or not can_stand_in(ms, r, w):
        return None
    prev = next((p.steps[i].tool for _, i, _ in reversed(events[:k]) if i is not None), None)
    werr = None if w.success else next((f.error for f in n.dig.failures if f.index == ni), None)
    return wrong_tool_finding(
        r, w, _domain_of(ms, w.tool) or _domain_of(ms, r.tool), werr, prev, n.traj.task
    )


def _fallback(ms: Sequence[Member], pos: Sequence[Member], n: Member) -> Finding | None:
    """Compare each unrecovered failure of ``n`` with every positive's calls of its tool."""
    for fail in n.dig.failures:
        if fail.recovered or any(
            f.recovered and f.tool == fail.tool and f.params == fail.params
            for m in pos
            for f in m.dig.failures
        ):
            continue  # a positive made this very call, failed and recovered: a recovery
        t = fail.tool
        ok = [(m, i) for m in pos for i, s in enumerate(m.steps) if s.tool == t and s.success]
        if ok:

            def score(
                c: tuple[Member, int], p: tuple[tuple[str, Any], ...] = tuple(fail.params.items())
            ) -> tuple[int, int]:
                q = c[0].steps[c[1]].params
                same_vals = sum(1 for k, v in p if q.get(k) == v)
                names = {k for k, _ in p}
                return (len(names & set(q)) - len(names ^ set(q)), same_vals)

            pm, pi = max(ok, key=score)
            f = _failed_call(ms, n, fail.index, pm, pi)
            if f:
                return f
            continue
        dom = _domain_of(ms, t)
        neg_tools = {s.tool for s in n.steps}
        alt = [
            s.tool
            for m in pos
            for s in m.steps
            if s.success and s.tool not in neg_tools and s.domain == dom
        ]
        ws = n.steps[fail.index]
        alt = [
            a
            for a in alt
            if can_stand_in(ms, next(s for m in pos for s in m.steps if s.tool == a), ws)
        ]
        if alt:
            r = max(sorted(set(alt)), key=alt.count)
            rs = next(s for m in pos for s in m.steps if s.tool == r)
            return wrong_tool_finding(rs, ws, dom, fail.error, None, n.traj.task)
    return None


# --------------------------------------------------------------------------- the group


def recovery_finding(r: Recovery, domain: str, support: int = 1) -> Finding:
    """ "If T fails with e, call U and retry": what recovery ``r`` (a run's own) teaches."""
    changed = [k for k in r.fixed_params if r.failed_params.get(k) != r.fixed_params[k]]
    helpers = [u for u in r.between if u != r.tool]
    e = quote_error(r.error)
    if helpers:
        how = f"call {helpers[0]} and retry {r.tool} instead of giving up"
        facts: tuple[str, ...] = (r.tool, helpers[0])
        if changed:
            how = f"call {helpers[0]} and retry with the {changed[0]} it returns"
    elif changed:
        how = f"retry {r.tool} with a corrected {changed[0]}"
        facts = (r.tool, changed[0])
    else:
        how = f"retry {r.tool}"
        facts = (r.tool,)
    text = lesson_text(
        f"If {r.tool} fails with '{quote_error(r.error, 5)}', {how}."
        if e
        else f"If {r.tool} fails, {how}."
    )
    return Finding(
        "recovery",
        r.tool,
        domain,
        text,
        facts,
        support=support,
        detail={
            "error": r.error,
            "helper": helpers[0] if helpers else None,
            "param": changed[0] if changed else None,
        },
    )


def _recoveries(
    ms: Sequence[Member], pos: Sequence[Member], neg: Sequence[Member]
) -> list[Finding]:
    out = []
    for m in pos:
        for r in m.dig.recoveries:
            gave_up = [
                n for n in neg for f in n.dig.failures if f.tool == r.tool and not f.recovered
            ]
            if not gave_up:
                continue
            out.append(recovery_finding(r, _domain_of(ms, r.tool), support=len(gave_up)))
    return out


def find_evidence(
    members: Sequence[tuple[Trajectory, Digest]], *, max_findings: int = 3
) -> list[Finding]:
    """The findings of one group, most supported first, at most ``max_findings``.

    The runs are read as learning sees them (:func:`agentmem.agents.learning_view`); a
    shell tool's calls are compared as commands (:func:`shell_evidence`), and no generic
    finding names a shell tool.
    """
    ms = [Member(learning_view(t), d) for t, d in members]
    pos = [m for m in ms if m.dig.positive]
    neg = [m for m in ms if m.dig.negative]
    if not pos or not neg:
        return []
    found: dict[tuple[str, ...], Finding] = {}
    inert = inert_tools(ms)

    def add(f: Finding | None) -> bool:
        if f is None or any(x in inert for x in f.facts) or names_shell(f):
            return False
        if f.key in found:
            old = found[f.key]
            found[f.key] = attrs.evolve(old, support=old.support + f.support)
        else:
            found[f.key] = f
        return True

    unexplained: list[Member] = []
    for n in neg:
        p = _closest(n, pos, inert)
        if not add(_root(ms, pos, n, p, inert) or _fallback(ms, pos, n)):
            unexplained.append(n)
    for f in _recoveries(ms, pos, neg):
        add(f)
    for f in shell_evidence(pos, neg):
        key = f.key
        found[key] = attrs.evolve(found[key], support=found[key].support + 1) if key in found else f

    pos_tools = [{s.tool for s in m.steps} - inert for m in pos]
    all_pos = set.intersection(*pos_tools) if pos_tools else set()
    for n in unexplained if len(pos) > 1 else ():  # one positive run proves no habit
        if any(not f.recovered for f in n.dig.failures) and any(
            f.tool in {x.tool for x in found.values()} for f in n.dig.failures
        ):
            continue  # its failure is already the subject of a finding (a recovery)
        n_tools = {s.tool for s in n.steps}
        for u in sorted(all_pos - n_tools):
            seq = [s.tool for s in pos[0].steps]
            nxt = (
                next((v for v in seq[seq.index(u) + 1 :] if v in n_tools and v != u), None)
                if u in seq
                else None
            )
            ustep = (
                next(s for s in pos[0].steps if s.tool == u)
                if u in seq
                else next(s for m in pos for s in m.steps if s.tool == u)
            )
            add(_missing_step(ustep, nxt, _domain_of(ms, u), n.traj.task))
            break

    merged = merge_findings(list(found.values()))
    ranked = sorted(merged, key=lambda f: (-f.support, KIND_RANK[f.kind], f.text))
    return [scoped(f) for f in ranked[:max_findings]]


def scoped(f: Finding) -> Finding:
    """``f`` with its scope evidence (``detail["scope"]``) when it is about a coding agent's
    tool and says none: a value (a path) is the project's; a parameter name, a
    prerequisite, a recovery, a substitution is the tool's."""
    if "scope" in f.detail or spec_for(f.tool) is None:
        return f
    scope = "project" if f.kind == Kind.PARAM_VALUE else "tool"
    return attrs.evolve(f, detail={**f.detail, "scope": scope})


def names_shell(f: Finding) -> bool:
    """Whether a generic finding compared what it must not: a shell tool's commands as
    strings, or a coding agent's file path as a value (another file is another task)."""
    if f.kind == Kind.SHELL:
        return False
    if is_shell(f.tool) or any(is_shell(x) for x in f.facts):
        return True
    if f.kind == Kind.PARAM_VALUE or f.detail.get("setting"):
        for tool in (f.tool, *(f.facts[1:2] if f.kind == Kind.PREREQUISITE else ())):
            found = spec_for(tool)
            x = f.detail.get("param") or (f.detail.get("setting") or ("",))[0]
            if found is not None and found[1].path is not None and x == found[1].path:
                return True
    return False


def shell_evidence(pos: Sequence[Member], neg: Sequence[Member]) -> list[Finding]:
    """Shell corrections across a group's runs (:mod:`.shell_fixes`): a negative run's
    misused shell call that it never got past, and a positive run's successful call of the
    same intent that differs from it by one recognisable change (nothing run in between:
    what the positive ran before is another run's story); and, as rule 6 for other tools,
    a positive run's own shell correction of a failure that negative runs hit and never
    got past."""
    from .shell_fixes import across, find_shell_fixes, gave_up

    out: list[Finding] = []
    for n in neg:
        f = across(n.traj, [p.traj for p in pos])
        if f is not None:
            out.append(f)
    for p in pos:
        for fix in find_shell_fixes(p.traj):
            if any(gave_up(n.traj, p.traj.steps[fix.failed]) for n in neg):
                out.append(fix.finding)
    return out


def describe(f: Finding) -> str:
    """A finding as one line of JSON (for debugging and reports)."""
    return json.dumps({"kind": f.kind, "facts": f.facts, "text": f.text, "support": f.support})
