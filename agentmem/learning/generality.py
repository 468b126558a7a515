"""Lessons that generalise: no one-task literals, no causal claim the data does not show.

A pure pass over the session's ADD operations, after Stage 3's first step
(:func:`agentmem.learning.stages.generalize`) and before consolidation. It reads
two things the evidence of one group cannot see:

* :class:`Corpus`, what the whole library holds: which groups' data (task text and
  parameter values) hold a token, which values the accepted and rejected runs pass
  in a role, which options the tools' own error messages list, and every run, to
  find the accepted ones that did otherwise than a lesson says;
* :class:`GroupNotes`, what each learned group's runs show about its findings
  (:func:`note_group`): whether a helper is *what changed* between a failing and a
  succeeding call, whether a looked-up value really came from the look-up, whether
  the bad value was the request's own words.

One-task literals
-----------------
A *value-like* token is one with a digit, an inner ``. _ / @ : -`` (file names,
dates, ids, snake_case values), or a capital letter not at the start of a
sentence (names, codes), that is not a tool or parameter name. It is a *one-task
literal* when the data of at most one group (its task text or a parameter value)
holds it. A lesson never states one as a rule:

* a value in a rule's slot (``x=good``, ``never x=bad``, ``e.g. good``, a helper's
  setting) stays only when it is general: one of the options the tool's own error
  message lists (a bad value then: not among them), or the same value in the same
  role in the accepted runs of at least two groups with no accepted run using
  another (a bad value: calls with it failed in runs of two groups and never
  succeeded);
* otherwise the lesson says the pattern instead: "look up x with L instead of
  copying it from the request" (the bad value was the request's words, and L had
  not returned it), "look up x with L; never pass an x that neither the request nor
  L gave" (L had not returned the bad value), "x exactly as the request writes it"
  (the good runs' value is written in the task and the bad one is not), or "check x
  before calling T: a wrong x failed with '...'" (the bad value made the call fail);
* with none of these, the lesson waits (it is journaled as rejected, ``held``): a
  later session that sees a second group with the same value states it;
* a one-task literal inside quoted text (an error, a request) becomes the kind of
  value it is (:func:`placeholder`: ``<name>``, ``<file>``, ``<id>``...);
* a lesson learned from one project's runs that names that project's paths or
  commands keeps them: :mod:`agentmem.projects` serves it in that project only.

Causal claims
-------------
"Before calling X, call U first; without it X fails" is kept only when, in one
of the lesson's groups, U is what changed: a run whose X failed, called U, and
retried X with the same parameters successfully; or a bad run whose X failed and a
good run whose X (same parameters) succeeded, where the good run's successful
calls before X are the bad run's plus calls of U only. Otherwise, when every good
run that called X called U before it, the lesson says what the good runs did
("Before calling X, call U first, as good runs did"); else it waits.

What an accepted run did otherwise
----------------------------------
Every lesson carries its :class:`~agentmem.learning.rules.Rule`. When an accepted
run of the library meets the rule's situation and did not follow it, the lesson
is cut back to what no accepted run contradicts: the lesson for the failure it saw
("If X fails with 'e', call U and retry", for a lesson with a proven cause or
recovery), and a value lesson's parameter name; else it waits.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from ..agents import CLIENTS, ToolKind, learning_view, programs, spec_for, strip_headers
from ..agents.programs import Role
from ..records import NO_RESULT, Operation, Step, Trajectory
from .digest import Digest, error_phrase, value_text
from .findings import Finding, quote_error
from .kinds import Kind, check_table
from .rules import Rule, applies, follows, needed_tools, val
from .shell_fixes import claims_of

__all__ = [
    "Corpus",
    "CorpusRun",
    "GroupNotes",
    "build_corpus",
    "enumerated_options",
    "generalise",
    "literal_tokens",
    "note_group",
    "placeholder",
    "rule_for",
    "value_like",
]

#: Groups whose data must hold a value before a lesson may state it.
MIN_GROUPS = 2

_TOKEN = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.'’/@:-]*[A-Za-z0-9_])?")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_PLAIN = frozenset({"i", "i'm", "i've", "i'd", "i'll", "e.g", "i.e", "ok"})
#: Capitals that are words of error messages, not values.
_ACRONYMS = frozenset(
    {"ID", "IDS", "OK", "URL", "URI", "API", "JSON", "HTTP", "HTTPS", "SQL", "PATH", "JSONL"}
    # errno names an error message quotes: words of the message, not values
    | {"EISDIR", "ENOENT", "EACCES", "EPERM", "ENOTDIR", "EEXIST", "ENOTEMPTY", "EBUSY"}
)


# --------------------------------------------------------------------------- tokens


def value_like(token: str, initial: bool = False) -> bool:
    """Whether ``token`` reads as a value (an id, count, name, file, date), not a word."""
    if token.lower() in _PLAIN or token.upper() in _ACRONYMS:
        return False
    if len(token) < 2 and not token.isdigit():
        return False
    if any(c.isdigit() for c in token):
        return True
    if re.search(r"[._/@:-]", token):
        return True
    if token.isupper():
        return True
    if any(c.isupper() for c in token[1:]):
        return True
    return token[0].isupper() and not initial


def _tokens(text: str) -> list[tuple[str, int, int, bool]]:
    """(token, start, end, sentence-initial) of ``text``."""
    out = []
    for m in _TOKEN.finditer(text):
        before = text[: m.start()].rstrip()
        initial = not before or before[-1] in ".!?'\"(;:" or before.endswith("...")
        out.append((m.group(0).strip(".:"), m.start(), m.end(), initial))
    return out


def _value_tokens(value: Any) -> set[str]:
    out: set[str] = set()
    for x in value if isinstance(value, list) else [value]:
        if isinstance(x, (str, int, float)) and not isinstance(x, bool):
            out.add(value_text(x, 200))
            out.update(m.group(0).strip(".:") for m in _TOKEN.finditer(value_text(x, 200)))
    return out


# --------------------------------------------------------------------------- the corpus


@attrs.frozen
class CorpusRun:
    """One run as the corpus keeps it: its group, verdict (True accepted, False rejected,
    None pending), task and steps."""

    group: str
    good: bool | None
    task: str
    steps: tuple[Step, ...]


_OPTION_LEAD = re.compile(
    r"(?i)\b(?:(?:must be |should be )?one of|options are|options:|must be|"
    r"valid (?:values|options) are|choose from|allowed(?: values)?(?: are)?)\s*:?\s*(.+)"
)


def enumerated_options(error: str) -> tuple[str, ...]:
    """The options an error message lists ("must be one of ['economy', 'business']")."""
    m = _OPTION_LEAD.search((error or "").replace("\\", ""))
    if not m:
        return ()
    rest = re.split(r"[.;](?:\s|$)", m.group(1))[0]
    quoted = re.findall(r"['\"]([A-Za-z0-9_.-]{1,30})['\"]", rest)
    parts = quoted or [p.strip(" []()'\"`{}") for p in re.split(r",|\bor\b|\band\b|\|", rest)]
    opts = [p for p in parts if p and re.fullmatch(r"[A-Za-z0-9_.-]{1,30}", p)]
    return tuple(dict.fromkeys(opts)) if 2 <= len(opts) <= 12 else ()


@attrs.frozen
class Corpus:
    """What the library's runs say about values (see the module doc)."""

    names: frozenset[str]
    token_groups: Mapping[str, frozenset[str]]
    runs: tuple[CorpusRun, ...]
    options: Mapping[str, tuple[str, ...]]
    #: tool -> the positions in ``runs`` of the runs that call it: a lesson's checks read
    #: the runs of its tools, not every run of the library.
    by_tool: Mapping[str, tuple[int, ...]] = attrs.field(factory=dict)

    def _calling(self, tools: Iterable[str] | None) -> list[CorpusRun]:
        """The runs that call one of ``tools``, in order (every run for None, or for a
        corpus built without its index)."""
        if tools is None or not self.by_tool:
            return list(self.runs)
        at = sorted({i for t in tools for i in self.by_tool.get(t, ())})
        return [self.runs[i] for i in at]

    def refuting(self, rule: Rule) -> list[CorpusRun]:
        """The accepted runs that ``rule`` applies to and that succeeded doing otherwise
        (none with a call whose result the transcript lacks: :data:`NO_RESULT`): judged on
        their successful calls (a call that failed and that the run then put
        right is a mistake it corrected, not a way that works), but for a rule about a
        failure (a recovery, "if W fails, use R")."""
        out = []
        tools = needed_tools(rule)
        # a call of the rule's tools (or its helper) whose outcome the record lacks: that
        # run proves no other way (any call, where the task's words alone can apply it)
        own = None if tools is None else {*tools, *([rule.helper] if rule.helper else [])}
        for r in self._calling(tools):
            if not r.good or any(
                s.output == NO_RESULT and (own is None or s.tool in own) for s in r.steps
            ):
                continue
            steps = r.steps
            if rule.kind != "recovery" and not rule.error:
                steps = tuple(s for s in steps if s.success)
            if applies(rule, r.task, steps) and not follows(rule, r.task, steps):
                out.append(r)
        return out

    def groups_with(self, token: str) -> int:
        return len(self.token_groups.get(token, ()))

    def options_of(self, tools: Iterable[str]) -> tuple[str, ...]:
        out: list[str] = []
        for t in tools:
            out += self.options.get(t, ())
        return tuple(dict.fromkeys(out))

    def _role(
        self, tools: Sequence[str], param: str, before: Sequence[str] = ()
    ) -> dict[str, tuple[set[str], set[str]]]:
        """value -> (groups whose good runs, groups whose bad runs pass it in the role):
        ``param`` of ``tools``; with ``before``, the last such call before the first
        successful call of one of ``before``."""
        out: dict[str, tuple[set[str], set[str]]] = defaultdict(lambda: (set(), set()))
        ts = set(tools)
        for r in self._calling(ts):
            if r.good is None:
                continue
            calls: list[Step] = []
            if before:  # the value in effect when one of ``before`` first succeeded
                first = next(
                    (i for i, s in enumerate(r.steps) if s.tool in set(before) and s.success), None
                )
                if first is None:
                    continue
                prior = [s for s in r.steps[:first] if s.tool in ts and param in s.params]
                calls = prior[-1:]
            else:
                calls = [s for s in r.steps if s.tool in ts and param in s.params]
            for s in calls:
                out[val(s.params[param])][0 if r.good else 1].add(r.group)
        return out

    def constant(
        self, tools: Sequence[str], param: str, value: str, before: Sequence[str] = ()
    ) -> bool:
        """Good runs of two groups pass ``value`` in the role, and no good run another."""
        role = self._role(tools, param, before)
        good = role.get(value, (set(), set()))[0]
        others = any(g for v, (g, _) in role.items() if v != value)
        return len(good) >= MIN_GROUPS and not others

    def always_bad(self, tools: Sequence[str], param: str, value: str) -> bool:
        """Calls of ``tools`` with ``param=value`` failed in runs of two groups, and no
        such call ever succeeded."""
        failed: set[str] = set()
        ts = set(tools)
        for r in self._calling(ts):
            for s in r.steps:
                if s.tool in ts and param in s.params and val(s.params[param]) == value:
                    if s.success:
                        return False
                    failed.add(r.group)
        return len(failed) >= MIN_GROUPS


def build_corpus(
    trajectories: Iterable[tuple[str, bool | None, Trajectory]],
) -> Corpus:
    """The corpus of ``(group, verdict, trajectory)`` triples (see :class:`Corpus`)."""
    names: set[str] = set()
    token_groups: dict[str, set[str]] = defaultdict(set)
    runs: list[CorpusRun] = []
    options: dict[str, list[str]] = defaultdict(list)
    by_tool: dict[str, list[int]] = defaultdict(list)
    for group, good, raw in trajectories:
        t = learning_view(raw)  # the runs as the lessons were learned from them
        for tool in dict.fromkeys(s.tool for s in t.steps):
            by_tool[tool].append(len(runs))
        for tok, *_ in _tokens(t.task):
            token_groups[tok].add(group)
        for s in t.steps:
            names.add(s.tool)
            names.update(s.params)
            for v in s.params.values():
                for tok in _value_tokens(v):
                    token_groups[tok].add(group)
            if not s.success:
                options[s.tool] += enumerated_options(s.output)
        runs.append(CorpusRun(group, good, t.task, t.steps))
    return Corpus(
        frozenset(names),
        {k: frozenset(v) for k, v in token_groups.items()},
        tuple(runs),
        {k: tuple(dict.fromkeys(v)) for k, v in options.items()},
        {k: tuple(v) for k, v in by_tool.items()},
    )


def literal_tokens(text: str, corpus: Corpus, allowed: Iterable[str] = ()) -> list[str]:
    """The one-task literals ``text`` names (see the module doc), in order."""
    ok = set(allowed)
    ok_tokens = {m.group(0).strip(".:") for a in ok for m in _TOKEN.finditer(a)}
    names = {n.lower() for n in corpus.names}
    out = []
    for tok, _, _, initial in _tokens(text):
        if tok in ok or tok in ok_tokens or tok.lower() in names or not value_like(tok, initial):
            continue
        if corpus.groups_with(tok) < MIN_GROUPS and tok not in out:
            out.append(tok)
    return out


def proven_wrong(f: Finding) -> bool:
    """Whether a value finding's failed run called its tool again with another value of its
    parameter and that call worked, or an accepted run of the same task did
    (``detail["right_value_shown"]``, set where the finding is made:
    :func:`agentmem.learning.evidence.retried_otherwise`). "Check X before calling T" says
    the value was wrong; without such a call no right value is shown, and the value may have
    been right and the thing it named missing (a skill not installed, the job then done
    another way; another task's value is that task's choice): no checked-value lesson."""
    return bool(f.detail.get("right_value_shown"))


def checked_text(x: str, tools: Sequence[str], err: str, corpus: Corpus) -> str:
    """ "Check X before calling T: a wrong X failed with '...'", the error quoted without a
    client's tags around it (:data:`.findings.ERROR_TAG`, which :func:`quote_error` drops)
    and its one-task literals masked (:func:`_mask_quotes`)."""
    q = quote_error(err, 5)
    return _mask_quotes(
        f"Check {x} before calling {_join(tools)}: a wrong {x} failed with '{q}'.", corpus, ()
    )


def placeholder(token: str) -> str:
    """What kind of value a one-task literal is, as a pattern: ``<file>``, ``<date>``,
    ``<number>``, ``<code>``, ``<id>``, ``<name>`` or ``<value>``."""
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}", token):
        return "<date>"
    if re.fullmatch(r"[+-]?\d+(?:\.\d+)?", token):
        return "<number>"
    if "/" in token or re.search(r"\.[A-Za-z0-9]{1,5}$", token):
        return "<file>"
    if re.fullmatch(r"[A-Z]{2,5}", token):
        return "<code>"
    if re.search(r"\d", token) or re.search(r"[a-z][A-Z]|[A-Z]{2}[a-z]", token):
        return "<id>"
    if re.fullmatch(r"[A-Z][a-z'’]+", token):
        return "<name>"
    return "<value>"


def _mask_quotes(text: str, corpus: Corpus, allowed: Iterable[str]) -> str:
    """One-task literals inside quoted text (an error, a request) replaced by their kind."""
    allowed = list(allowed)

    def fix(m: re.Match[str]) -> str:
        q = m.group(0)
        bad = literal_tokens(q[1:-1], corpus, allowed)
        if not bad:
            return q
        body = q[1:-1]
        for tok, start, _end, _ in reversed(_tokens(body)):
            if tok in bad:
                body = body[:start] + placeholder(tok) + body[start + len(tok) :]
        body = re.sub(r"(<[a-z]+>)(?:\s+\1)+", r"\1", body)
        return q[0] + body + q[-1]

    return _QUOTED.sub(fix, text)


# --------------------------------------------------------------------------- group notes


@attrs.frozen
class GroupNotes:
    """What one group's runs show about its findings (see :func:`note_group`).

    ``causal``: (tool, helper) pairs where the helper is what changed between a
    failing and a succeeding call of the tool. ``habit``: (tool, helper) pairs where
    every good run that called the tool called the helper before it. ``lookups``:
    (tool, param, look-up tool) where a bad run passed a value the look-up had not
    returned. ``from_task``: (tool, param) where the good runs' values are written in
    the task and the bad value is not. ``bad_from_task``: (tool, param) where the bad
    value is the request's own words. ``errors``: (tool, param, error) of the failed
    calls with the bad value. ``projects``: the projects its runs were recorded in
    (``""`` for runs outside any project).
    """

    causal: frozenset[tuple[str, str]] = frozenset()
    habit: frozenset[tuple[str, str]] = frozenset()
    lookups: frozenset[tuple[str, str, str]] = frozenset()
    from_task: frozenset[tuple[str, str]] = frozenset()
    bad_from_task: frozenset[tuple[str, str]] = frozenset()
    errors: tuple[tuple[str, str, str], ...] = ()
    projects: frozenset[str] = frozenset()


def _sig(s: Step) -> tuple[str, str]:
    return s.tool, json.dumps(s.params, sort_keys=True, ensure_ascii=False, default=str)


def _signs(
    members: Sequence[tuple[Trajectory, Digest]],
) -> tuple[list[Trajectory], list[Trajectory]]:
    pos = [t for t, d in members if d.positive]
    neg = [t for t, d in members if d.negative]
    return pos, neg


def _helper_changed(pos: Sequence[Trajectory], neg: Sequence[Trajectory], x: str, u: str) -> bool:
    """A bad run's failed call of ``x`` and a good run's successful one (same parameters)
    whose successful calls before differ only by calls of ``u`` in the good run."""
    for n in neg:
        fi = next((i for i, s in enumerate(n.steps) if s.tool == x and not s.success), None)
        if fi is None:
            continue
        before_n = {_sig(s) for s in n.steps[:fi] if s.success}
        for p in pos:
            for pi, s in enumerate(p.steps):
                if s.tool != x or not s.success or s.params != n.steps[fi].params:
                    continue
                before_p = {_sig(q) for q in p.steps[:pi] if q.success}
                extra = before_p - before_n
                if extra and not (before_n - before_p) and {t for t, _ in extra} == {u}:
                    return True
    return False


def _recovered_by(runs: Sequence[Trajectory], x: str, u: str) -> bool:
    """A run whose ``x`` failed, then called ``u`` (and nothing else but ``x``), then
    retried ``x`` with the same parameters successfully."""
    for t in runs:
        steps = t.steps
        for i, s in enumerate(steps):
            if s.tool != x or s.success:
                continue
            j = next((k for k in range(i + 1, len(steps)) if steps[k].tool == x), None)
            if j is None or not steps[j].success or steps[j].params != s.params:
                continue
            between = {q.tool for q in steps[i + 1 : j] if q.success}
            if between == {u}:
                return True
    return False


def _habit(pos: Sequence[Trajectory], x: str, u: str) -> bool:
    callers = [t for t in pos if any(s.tool == x for s in t.steps)]
    return bool(callers) and all(
        any(
            s.tool == u and s.success
            for s in t.steps[: next(i for i, s in enumerate(t.steps) if s.tool == x)]
        )
        for t in callers
    )


def _tools_of(f: Finding) -> list[str]:
    return list(f.detail.get("tools") or [f.tool])


def note_group(
    findings: Sequence[Finding], members: Iterable[tuple[Trajectory, Digest]]
) -> GroupNotes:
    """What this group's runs show about its ``findings`` (see :class:`GroupNotes`)."""
    ms = list(members)
    pos, neg = _signs(ms)
    runs = [t for t, _ in ms]
    causal: set[tuple[str, str]] = set()
    habit: set[tuple[str, str]] = set()
    lookups: set[tuple[str, str, str]] = set()
    from_task: set[tuple[str, str]] = set()
    bad_task: set[tuple[str, str]] = set()
    errors: list[tuple[str, str, str]] = []
    for f in findings:
        d = f.detail
        helpers = [d["helper"]] if d.get("helper") else [p["helper"] for p in d.get("parts") or []]
        for u in helpers if f.kind in ("prerequisite", "recovery") else ():
            for t in _tools_of(f):
                if _recovered_by(runs, t, u) or _helper_changed(pos, neg, t, u):
                    causal.add((t, u))
                if _habit(pos, t, u):
                    habit.add((t, u))
        x = d.get("param")
        bad = d.get("bad")
        if f.kind != "param_value" or not x:
            continue
        source = d.get("source")
        for t in _tools_of(f):
            bad_calls = [
                (n, i)
                for n in neg
                for i, s in enumerate(n.steps)
                if s.tool == t
                and x in s.params
                and bad is not None
                and val(s.params[x]) == val(bad)
            ]
            good_vals = [
                (p, s.params[x]) for p in pos for s in p.steps if s.tool == t and x in s.params
            ]
            if any(_in_task(n.task, n.steps[i].params[x]) for n, i in bad_calls):
                bad_task.add((t, x))
            errors += [
                (t, x, error_phrase(n.steps[i].output))
                for n, i in bad_calls
                if not n.steps[i].success
            ]
            if (
                good_vals
                and all(_in_task(p.task, v) for p, v in good_vals)
                and bad_calls
                and not any(_in_task(n.task, n.steps[i].params[x]) for n, i in bad_calls)
            ):
                from_task.add((t, x))
            if source and bad_calls and not all(_in_task(p.task, v) for p, v in good_vals):
                returned = [
                    _returned(n.steps, i, source, n.steps[i].params[x]) for n, i in bad_calls
                ]
                if not all(returned):
                    lookups.add((t, x, source))
    return GroupNotes(
        frozenset(causal),
        frozenset(habit),
        frozenset(lookups),
        frozenset(from_task),
        frozenset(bad_task),
        tuple(dict.fromkeys(errors)),
        frozenset(p if isinstance(p := t.meta.get("project"), str) and p else "" for t in runs),
    )


def _in_task(task: str, value: Any) -> bool:
    text = value_text(value, 200)
    return len(text) > 1 and text.lower() in task.lower()


def _returned(steps: Sequence[Step], i: int, tool: str, value: Any) -> bool:
    text = value_text(value, 200)
    return any(s.tool == tool and s.success and text in s.output for s in steps[:i])


# --------------------------------------------------------------------------- rewriting


def _mentions(text: str, value: str) -> bool:
    """Whether ``text`` names ``value`` as a whole token sequence."""
    return bool(re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", _QUOTED.sub("", text)))


def _join(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _fit(*variants: str) -> str:
    for v in variants:
        if v and len(v.split()) <= 32:
            return v
    return next(v for v in reversed(variants) if v)


def _sentence(head: str, parts: Sequence[str]) -> str:
    t = (head + " " + "; ".join(p for p in parts if p)).strip().rstrip(" ;")
    return t if t.endswith(".") else t + "."


@attrs.frozen
class _Verdict:
    text: str | None
    rule: Rule | None
    why: str = ""
    #: The lesson stated only for the failure it saw ("If X fails with 'e', call U and
    #: retry"), for when the session's groups contradict the unconditional one.
    alt: tuple[str, Rule] | None = None
    note: str = ""
    #: Further lessons of the same finding (a value lesson's parameter name, when the
    #: value part is stated for its failure only).
    extra: tuple[tuple[str, Rule], ...] = ()
    #: Further failure-only forms (one per helper of a lesson about several).
    more_alts: tuple[tuple[str, Rule], ...] = ()


def _conditional(
    ts: Sequence[str],
    error: str,
    helper: str,
    corpus: Corpus,
    param: str | None = None,
    values: Sequence[Any] = (),
) -> tuple[str, Rule] | None:
    """The lesson for the failure only: "If X fails with 'e', call U and retry" (the error
    quoted up to the bad ``values`` it repeats, or with them replaced by their kind)."""
    cut = False
    for v in values:
        text = value_text(v, 200) if v is not None else ""
        at = (error or "").find(text) if len(text) > 1 else -1
        if at >= 0:  # the error's own words, up to the value that was passed
            head = error[:at].rstrip(" :'\"")
            if len(head.split()) >= 2:
                error, cut = head, True
            else:
                first = next(iter(_TOKEN.findall(text)), text)
                error = error.replace(text, placeholder(first.strip(".:")))
    e = quote_error(error or "", 5)
    if cut and e and not e.endswith("..."):
        e += "..."
    if not e:
        return None
    what = f"look up {param} with {helper}" if param else f"call {helper}"
    text = _mask_quotes(f"If {_join(ts)} fails with '{e}', {what} and retry.", corpus, ())
    return text, Rule("recovery", ts, helper=helper, param=param, error=_gist(text))


def _name_parts(name: str) -> set[str]:
    """The words of a tool name: ``ticket_login`` -> {ticket, login}, ``getUserId`` ->
    {get, user, id}."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ")
    return {w.lower() for w in spaced.split() if w}


def _error_names(error: str, helper: str, tools: Sequence[str]) -> bool:
    """Whether the failing call's own error message names the helper: a word of the
    helper's name (4+ letters, not a word of the failing tools' names) appears in it,
    spaces aside ("Please log in" names ``ticket_login``). Then the tool itself says
    what to do, and "If X fails with e, call U and retry" is what the data shows."""
    squashed = re.sub(r"[^a-z0-9]", "", error.lower())
    theirs = set().union(*(_name_parts(t) for t in tools)) if tools else set()
    mine = {w for w in _name_parts(helper) - theirs if len(w) >= 4}
    return bool(squashed) and any(w in squashed for w in mine)


def _gist(text: str) -> str | None:
    """The quoted error of a lesson, without placeholders and the trailing ``...``."""
    m = _QUOTED.search(text)
    if not m:
        return None
    words = [w for w in re.sub(r"<\w+>", " ", m.group(0)[1:-1]).split() if w != "..."]
    return " ".join(words[:4]).strip(" .") or None


@attrs.frozen
class _ValueFacts:
    """What a value finding says about its parameter, and how far its groups and the
    library back each part of it (see the module doc)."""

    ts: list[str]
    x: str
    good: str | None
    bad: str | None
    #: The tool the good runs looked the value up with.
    source: str | None
    wrong: str | None
    recover: bool
    #: The finding's error message, as it is and quoted for a lesson.
    error: str
    err: str
    opts: tuple[str, ...]
    lookup_ok: bool
    from_task: bool
    bad_from_task: bool
    good_ok: bool
    bad_ok: bool
    #: A call of the tool with another value worked, in the failed run or an accepted run
    #: of its task (:func:`proven_wrong`): only then may the lesson say "Check X".
    right_value_shown: bool = True


def _value_facts(f: Finding, notes: Sequence[GroupNotes], corpus: Corpus) -> _ValueFacts:
    d = f.detail
    x = d.get("param") or (f.facts[1] if len(f.facts) > 1 else "")
    ts = _tools_of(f)
    good = None if d.get("good") is None else val(d["good"])
    bad = None if d.get("bad") is None else val(d["bad"])
    source = d.get("source")
    opts = corpus.options_of(ts)
    good_ok = good is not None and (good in opts or corpus.constant(ts, x, good))
    bad_ok = bad is not None and (
        (bool(opts) and good in opts and bad not in opts) or corpus.always_bad(ts, x, bad)
    )
    return _ValueFacts(
        ts=ts,
        x=x,
        good=good,
        bad=bad,
        source=source,
        wrong=d.get("wrong_name"),
        recover=bool(d.get("recovery")),
        error=d.get("error") or "",
        err=quote_error(d.get("error") or "", 5),
        opts=opts,
        lookup_ok=bool(source) and any((t, x, source) in n.lookups for n in notes for t in ts),
        from_task=any((t, x) in n.from_task for n in notes for t in ts),
        bad_from_task=any((t, x) in n.bad_from_task for n in notes for t in ts),
        good_ok=good_ok,
        bad_ok=bad_ok,
        right_value_shown=proven_wrong(f),
    )


def _value_rule(v: _ValueFacts) -> Rule:
    return Rule(
        "param_value",
        v.ts,
        param=v.x,
        good=v.good if v.good_ok else None,
        bad=v.bad if v.bad_ok else None,
        options=v.opts if v.good_ok and v.good in v.opts else (),
        wrong_name=v.wrong,
        lookup=v.source if v.lookup_ok else None,
        lookup_only=v.lookup_ok and v.bad_from_task,
        from_request=v.from_task and not v.lookup_ok and not v.good_ok,
    )


def _value_conditional(
    f: Finding, v: _ValueFacts, notes: Sequence[GroupNotes], corpus: Corpus
) -> tuple[str, Rule] | None:
    """The value lesson for its failure only: when the value must be looked up."""
    seen_err = next((e for n in notes for t, p, e in n.errors if t in v.ts and p == v.x and e), "")
    alt = (
        _conditional(v.ts, v.error or seen_err, v.source, corpus, v.x, [f.detail.get("bad")])
        if v.lookup_ok and v.source
        else None
    )
    if alt is not None and v.wrong:  # the parameter's name stays part of the lesson
        alt = (
            alt[0].removesuffix(".") + f"; name it {v.x}=..., never {v.wrong}=...",
            attrs.evolve(alt[1], wrong_name=v.wrong),
        )
    return alt


def _value_lesson(f: Finding, text: str, notes: Sequence[GroupNotes], corpus: Corpus) -> _Verdict:
    v = _value_facts(f, notes, corpus)
    x, good, bad, source = v.x, v.good, v.bad, v.source
    allowed = [a for a, ok in ((good, v.good_ok), (bad, v.bad_ok)) if ok and a] + list(v.opts)
    rule = _value_rule(v)
    alt = _value_conditional(f, v, notes, corpus)
    shown_by = sum(1 for n in notes if any((t, x, source) in n.lookups for t in v.ts))
    if alt is not None and v.lookup_ok and v.bad_from_task and shown_by < MIN_GROUPS:
        # One task's words were wrong for x once: say what was seen, for that failure.
        return _Verdict(alt[0], alt[1], note="stated for its failure only: one group showed it")
    literal = literal_tokens(_QUOTED.sub("", text), corpus, allowed)
    literal += [
        a for a, ok in ((good, v.good_ok), (bad, v.bad_ok)) if a and not ok and _mentions(text, a)
    ]
    if not literal and (v.lookup_ok or not source):
        return _Verdict(_mask_quotes(text, corpus, allowed), rule, alt=alt)
    head = _value_head(v)
    if head is None:
        why = ", ".join(literal) or f"{x} from {source}"
        return _Verdict(
            None,
            None,
            f"held: {why} is one task's value and the data shows no "
            "pattern for it yet; a second group will state it",
        )
    parts = _value_parts(v, head)
    tail = [f"if it already failed, call {source} and retry"] if v.recover and v.lookup_ok else []
    new = _fit(_sentence(head, [*parts, *tail]), _sentence(head, parts), _sentence(head, parts[:1]))
    new = _mask_quotes(new, corpus, allowed)
    if literal_tokens(_QUOTED.sub("", new), corpus, allowed):
        return _Verdict(None, None, "held: the lesson still names one task's value")
    return _Verdict(
        new, attrs.evolve(rule, from_request=v.from_task and head.endswith("writes it;")), alt=alt
    )


def _value_head(v: _ValueFacts) -> str | None:
    """The first clause of a value lesson that states no one-task value, or None when the
    data shows no pattern to state instead."""
    ts, x, good, source = _join(v.ts), v.x, v.good, v.source
    eg = f" (e.g. {good})" if v.good_ok else ""
    if v.lookup_ok and v.bad_from_task and not v.bad_ok:
        return (
            f"Before calling {ts}, look up {x} with {source}{eg} instead of copying it "
            "from the request;"
        )
    if v.lookup_ok:
        return f"Before calling {ts}, look up {x} with {source}{eg};"
    if v.good_ok:
        return f"Call {ts} with {x} like {good};" if v.opts else f"Call {ts} with {x}={good};"
    if v.from_task:
        return f"Call {ts} with {x} exactly as the request writes it;"
    if v.bad is not None and v.error and not _framing_only(v.error, v.ts) and v.right_value_shown:
        return f"Check {x} before calling {ts}:"
    if v.wrong:
        return f"Call {ts} with {x}=..., never {v.wrong}=...;"
    return None


def _value_parts(v: _ValueFacts, head: str) -> list[str]:
    """What a value lesson says after its ``head``: the bad value or kind of value, and the
    parameter's right name."""
    x, bad = v.x, v.bad
    parts = []
    if v.bad_ok:
        parts.append(f"never pass {x}={bad}")
    elif bad is not None and v.lookup_ok and v.bad_from_task:
        pass  # the head says it
    elif bad is not None and v.lookup_ok:
        parts.append(f"never pass a {x} that neither the request nor {v.source} gave")
    elif bad is not None and v.err and not _framing_only(v.error, v.ts):
        parts.append(f"a wrong {x} failed with '{v.err}'")
    if v.wrong and not head.endswith(f"never {v.wrong}=...;"):
        parts.append(f"name it {x}=..., never {v.wrong}=...")
    return parts


def _prerequisite_lesson(
    f: Finding, text: str, notes: Sequence[GroupNotes], corpus: Corpus
) -> _Verdict:
    d = f.detail
    u = d["helper"]
    ts = _tools_of(f)
    recover = bool(d.get("recovery")) or f.kind == "recovery"
    causal = all(any((t, u) in n.causal for n in notes) for t in ts)
    habit = all(any((t, u) in n.habit or (t, u) in n.causal for n in notes) for t in ts)
    setting = d.get("setting")
    instead = d.get("instead")
    keep_setting: tuple[str, str] | None = None
    keep_bad: str | None = None
    if setting:
        sx, sgood, sbad = setting
        opts = corpus.options_of([u])
        if sgood in opts or corpus.constant([u], sx, sgood, before=ts):
            keep_setting = (sx, sgood)
        if (
            keep_setting
            and sbad
            and ((opts and sbad not in opts) or corpus.always_bad([u], sx, sbad))
        ):
            keep_bad = sbad
    rule = Rule("prerequisite", ts, helper=u, setting=keep_setting, recovery=recover, wrong=instead)
    if not (recover or causal or habit):
        return _Verdict(
            None,
            None,
            f"held: in its groups {u} is not what changed between a failing and a succeeding "
            f"call of {_join(ts)}, and not every good run called it first",
        )
    allowed = [a for a in (keep_setting[1] if keep_setting else None, keep_bad) if a]
    dropped_setting = setting is not None and (
        keep_setting is None or (bool(setting[2]) and keep_bad is None)
    )
    named = _error_names(d.get("error") or "", u, ts)
    alt = _conditional(ts, d.get("error") or "", u, corpus) if recover or causal or named else None
    if (recover or causal) and not dropped_setting:
        return _Verdict(_mask_quotes(text, corpus, allowed), rule, alt=alt)
    e = quote_error(d.get("error") or "", 5)
    with_ = ""
    if keep_setting:
        with_ = f" with {keep_setting[0]}={keep_setting[1]}" + (
            f", never {keep_bad}," if keep_bad else ""
        )
    if instead:
        with_ = f", not {instead},{with_}"
    head = f"Before calling {_join(ts)}, call {u}{with_} first"
    subject = ts[0] if len(ts) == 1 else "one"
    if recover:
        tails = [
            f"; if {subject} already failed ('{e}'), call {u} and retry." if e else "",
            f"; if {subject} already failed, call {u} and retry.",
        ]
    elif causal:
        verb = "fails" if len(ts) == 1 else "fail"
        tails = [
            f"; without it {_join(ts)} {verb} ('{e}')." if e else "",
            f"; otherwise {'it' if len(ts) == 1 else 'they'} {verb}.",
        ]
    else:
        tails = [", as good runs did."]
    new = _fit(*(head.replace(",,", ",") + t for t in tails if t))
    return _Verdict(_mask_quotes(new, corpus, allowed), rule, alt=alt)


def _needs_lesson(f: Finding, notes: Sequence[GroupNotes], corpus: Corpus) -> _Verdict:
    """A prerequisite lesson about several helpers of one tool ("Before calling T, call U1
    and U2 first"): each helper kept only as the data shows it (as for one helper)."""
    t = _tools_of(f)[0]
    kept = [
        k
        for p in f.detail.get("parts") or []
        if (k := _needed_helper(t, p, notes, corpus)) is not None
    ]
    if not kept:
        return _Verdict(
            None,
            None,
            f"held: in its groups no helper of {t} is what changed between a failing and a "
            "succeeding call, and none was called first by every good run",
        )
    alts = [
        a
        for k in kept
        if k["proven"] and (a := _conditional([t], k["error"], k["helper"], corpus)) is not None
    ]
    # A helper that an accepted run did without is stated for its failure only (above),
    # the others stay "before calling T".
    refuted = {
        k["helper"]
        for k in kept
        if corpus.refuting(Rule("prerequisite", [t], helper=k["helper"], setting=k["setting"]))
    }
    partly = bool(refuted) and len(refuted) < len(kept)
    if partly:
        alts = [a for a in alts if a[1].helper in refuted]
        kept = [k for k in kept if k["helper"] not in refuted]
    text = _needs_text(t, kept)
    allowed = [a for k in kept for a in ((k["setting"] or ("", ""))[1], k["bad"] or "") if a]
    rule = Rule(
        "prerequisite",
        [t],
        needs=[(k["helper"], *(k["setting"] or ("", ""))) for k in kept],
        recovery=any(k["recovery"] for k in kept),
    )
    if partly:
        # what is left is stated as a lesson, the refuted helpers for their failures only
        return _Verdict(
            _mask_quotes(text, corpus, allowed),
            rule,
            note="an accepted run did without " + ", ".join(sorted(refuted)),
            extra=tuple(alts),
        )
    return _Verdict(
        _mask_quotes(text, corpus, allowed),
        rule,
        alt=alts[0] if alts else None,
        more_alts=tuple(alts[1:]),
    )


def _needed_helper(
    t: str, p: Mapping[str, Any], notes: Sequence[GroupNotes], corpus: Corpus
) -> dict[str, Any] | None:
    """One helper ``p`` of a lesson about several, as the data shows it (its setting kept
    only when general), or None when the data shows it did not matter."""
    u = p["helper"]
    causal = any((t, u) in n.causal for n in notes)
    habit = causal or any((t, u) in n.habit for n in notes)
    recover = bool(p.get("recovery"))
    setting, bad = None, None
    if p.get("setting"):
        sx, sgood, sbad = p["setting"]
        opts = corpus.options_of([u])
        if sgood in opts or corpus.constant([u], sx, sgood, before=[t]):
            setting = (sx, sgood)
            if sbad and ((opts and sbad not in opts) or corpus.always_bad([u], sx, sbad)):
                bad = sbad
    # a general value of the helper's own call that the bad run got wrong shows what
    # mattered as well as a proven cause does
    causal = causal or setting is not None
    if not (recover or causal or habit):
        return None
    return {
        "helper": u,
        "instead": p.get("instead"),
        "setting": setting,
        "bad": bad,
        "proven": recover or causal,
        "recovery": recover,
        "error": p.get("error") or "",
    }


def _needs_text(t: str, kept: Sequence[Mapping[str, Any]]) -> str:
    """The lesson's text: "Before calling T, call U1 and U2 first", and the reason the data
    shows."""
    calls = []
    for k in kept:
        c = k["helper"] + (f", not {k['instead']}," if k["instead"] else "")
        if k["setting"]:
            x, good = k["setting"]
            c += f" with {x}={good}" + (f", never {k['bad']}," if k["bad"] else "")
        calls.append(c)
    head = f"Before calling {t}, call {' and '.join(calls)} first".replace(",,", ",")
    head = re.sub(r",$", "", head)
    them = "them" if len(kept) > 1 else "it"
    e = quote_error(next((k["error"] for k in kept if k["error"]), ""), 5)
    if all(k["proven"] for k in kept) and any(k["recovery"] for k in kept):
        tails = [
            f"; if {t} already failed ('{e}'), call {them} and retry." if e else "",
            f"; if {t} already failed, call {them} and retry.",
        ]
    elif all(k["proven"] for k in kept):
        tails = [f"; without {them} {t} fails ('{e}')." if e else "", f"; otherwise {t} fails."]
    else:
        tails = [", as good runs did."]
    return _fit(*(re.sub(r",\s*first", " first", head) + x for x in tails if x))


def _param_name_rule(f: Finding, text: str) -> Rule:
    d = f.detail
    pairs = d.get("pairs")
    if pairs:
        return Rule("param_name", [t for t, _ in pairs], wrong_name=d.get("wrong_name"))
    wrong = d.get("wrong") or []
    return Rule(
        "param_name",
        [f.tool],
        param=(d.get("right") or [None])[0],
        wrong_name=wrong[0] if wrong else None,
        testable=bool(wrong),
    )


def _recovery_rule(f: Finding, text: str) -> Rule:
    d = f.detail
    # a coding agent's tool's way out of one error (scoped by the evidence): the rule holds
    # for that error only, in the words it always has
    err = " ".join(re.findall(r"[A-Za-z]{3,}", d.get("error") or "")[:8]) if "scope" in d else None
    return Rule(
        "recovery", [f.tool], helper=d.get("helper"), param=d.get("param"), error=err or None
    )


def _wrong_tool_rule(f: Finding, text: str) -> Rule:
    d = f.detail
    return Rule(
        "wrong_tool",
        [f.facts[0]],
        wrong=f.facts[1],
        ask=d.get("ask"),
        testable=not d.get("both_ways"),
    )


def _missing_step_rule(f: Finding, text: str) -> Rule:
    m = re.search(r'requests like "([^"]*)"', text)
    return Rule("missing_step", [f.tool], next=list(f.facts[1:]), ask=m.group(1) if m else None)


def _tool_rule(f: Finding, text: str) -> Rule:
    """A client tool's own rule. One the run proves (``declared``) whose lesson quotes no
    error and names no helper ("pkill -f PATTERN in Bash also kills the shell ...", "Bash
    keeps the working directory ...") states no situation a run could be tested by (it
    would apply to every failed call of its tools), nor does one whose quote is code the
    tool changed, not an error (``detail["untestable"]``: "escapes ! as \\!, so jq code ...
    fails ('select(.id \\!= ...')"): its rule is untestable, so other runs' failed calls
    neither confirm nor contradict it; its own run proved it. One read from the output (a
    parameter passed as its JSON text) whose text lost its quote (the model's phrasing)
    stays testable: other runs and the corpus may still refute it."""
    d = f.detail
    tools = _tools_of(f)
    error = None if d.get("untestable") else _gist(text)
    helper = d.get("helper")
    return Rule(
        Kind.TOOL_RULE,
        tools,
        helper=helper,
        error=error,
        client=_one_client(tools),
        testable=bool(error or helper) or not d.get("declared"),
    )


def _one_client(tools: Sequence[str]) -> str | None:
    """The client whose table has every one of ``tools`` ("Bash keeps the working
    directory" is Claude Code's: Codex's shell does not keep it), so that the rule is
    served standing to that client's prompts only; None when a tool is no client's, an
    MCP server's (either client may have it) or the tools are two clients'."""
    found = [spec_for(t) for t in tools]
    if not found or any(x is None or x[1].kind is ToolKind.MCP for x in found):
        return None
    clients = {x[0].client for x in found if x is not None}
    return clients.pop() if len(clients) == 1 else None


def _untested_rule(f: Finding, text: str) -> Rule:
    return Rule(f.kind, [f.tool], testable=False)


#: Shell corrections about a step of most tasks whatever the prompt names: the interpreter,
#: the test runner, the shell the client's Bash tool runs, the shell's reading of an
#: unquoted glob ("In zsh an unquoted path with [ ], * or ? is a glob pattern": every
#: command runs in that shell) (:func:`_shell_rule`).
_STANDING_CHANGES = frozenset(
    {"interpreter", "runner", "windows", "backslash", "glob", "powershell", "nostart"}
)


def _shell_rule(f: Finding, text: str) -> Rule:
    """A shell correction's rule: untested (the run's own calls prove it), with the claims
    it makes of the machine or the project, checked where it is served; standing when it
    is about a step of most tasks: the version control (commit, push), or the interpreter
    that runs the project's scripts under another name (``python`` missing, ``python3``
    there: every task that runs a script meets it, whatever its prompt says; or an
    interpreter that is missing or does not start, whatever ran the code instead), the
    project's test runner ("pytest is not installed: python3 -m unittest ran the tests":
    most changes end in a test run, whatever the prompt names), or the shell itself ("The
    Bash tool runs Git Bash here": every command runs in it; "In zsh an unquoted path with
    [ ] is a glob pattern": so does every path)."""
    change = f.detail.get("change")
    standing = (
        programs.has(f.tool, Role.VCS)
        or change in _STANDING_CHANGES
        or (change == "program" and programs.has(f.tool, Role.INTERPRETER))
    )
    # the shell Claude Code's Bash tool runs: no fact of Codex's shell on the same machine;
    # a glob fact is the shell of the client whose call failed
    client = "claude-code" if change in ("windows", "backslash") else None
    if change in ("glob", "powershell", "nostart") and isinstance(f.detail.get("client"), str):
        client = f.detail["client"]
    return Rule(
        f.kind, [f.tool], testable=False, claims=claims_of(f), standing=standing, client=client
    )


#: The rule of a finding whose lesson states no value, by kind (value and prerequisite
#: lessons get theirs from their review; a shell lesson's own calls prove it).
_RULE_FOR = {
    Kind.PARAM_NAME: _param_name_rule,
    Kind.RECOVERY: _recovery_rule,
    Kind.WRONG_TOOL: _wrong_tool_rule,
    Kind.MISSING_STEP: _missing_step_rule,
    Kind.PARAM_VALUE: _untested_rule,
    Kind.PREREQUISITE: _untested_rule,
    Kind.SHELL: _shell_rule,
    Kind.TOOL_RULE: _tool_rule,
}
check_table("generality.rule_for", _RULE_FOR)


def rule_for(f: Finding, text: str) -> Rule:
    """The rule of a finding of a kind whose lesson states no value (or of any kind, as
    plainly as its text states it)."""
    return _RULE_FOR[Kind(f.kind)](f, text)


def _project_lesson(text: str, notes: Sequence[GroupNotes], corpus: Corpus) -> bool:
    """Whether the lesson will be served in one project only (:mod:`agentmem.projects`):
    all its runs come from one project, and it names that project's paths, commands or
    identifiers. Its values are that project's, not a general rule."""
    from ..projects import specific_markers

    projects = set().union(*(n.projects for n in notes)) if notes else set()
    if len(projects) != 1 or "" in projects:
        return False
    return bool(specific_markers(text, project=next(iter(projects)), vocabulary=corpus.names))


def review(f: Finding, text: str, notes: Sequence[GroupNotes], corpus: Corpus) -> _Verdict:
    """The lesson ``text`` of finding ``f`` in general form, with its rule, or held.

    A lesson that :mod:`agentmem.projects` will serve in one project only keeps the
    project's values (its paths, commands); its causal claim is checked as any other,
    and its rule is kept untestable (the project's other runs are other tasks).
    """
    if f.kind == Kind.TOOL_RULE and f.detail.get("declared"):
        # the client's own rule, stated by its table (Edit needs a Read first): a run that
        # did otherwise is a record that lacks calls (an excerpt, a cut session), since the
        # client enforces it
        return _Verdict(text, rule_for(f, text))
    if f.kind == Kind.SHELL:
        # the run's own calls prove it (:mod:`.shell_fixes`), and its scope says where it
        # holds: a project's paths and commands, a machine's programs stay as they are
        return _Verdict(text, rule_for(f, text))
    if _project_lesson(text, notes, corpus):
        if f.kind == "prerequisite" and f.detail.get("helper"):
            v = _prerequisite_lesson(f, text, notes, corpus)
            return attrs.evolve(v, rule=attrs.evolve(v.rule, testable=False)) if v.rule else v
        rule = rule_for(f, text)
        return _Verdict(text, attrs.evolve(rule, testable=False))
    if f.kind == "param_value":
        return _unrefuted(_value_lesson(f, text, notes, corpus), f, corpus, notes)
    if f.kind == "prerequisite" and f.detail.get("parts"):
        return _unrefuted(_needs_lesson(f, notes, corpus), f, corpus)
    if f.kind in ("prerequisite",) and f.detail.get("helper"):
        return _unrefuted(_prerequisite_lesson(f, text, notes, corpus), f, corpus)
    return _unrefuted(_plain_lesson(f, text, corpus), f, corpus)


def _unrefuted(
    v: _Verdict, f: Finding, corpus: Corpus, notes: Sequence[GroupNotes] = ()
) -> _Verdict:
    """``v``, or what is left of it when an accepted run of the library did otherwise:
    the lesson for its failure only, or (a value lesson) its parameter name only; else
    held."""
    if v.text is None or v.rule is None:
        return v
    against = corpus.refuting(v.rule)
    if not against:
        return v
    why = f"an accepted run of group {against[0].group} did otherwise"
    parts: list[tuple[str, Rule, str]] = []
    for alt in (v.alt, *v.more_alts):
        if alt is not None and not corpus.refuting(alt[1]):
            parts.append((alt[0], alt[1], f"stated for its failure only: {why}"))
    wrong = f.detail.get("wrong_name")
    x = f.detail.get("param")
    ts = _tools_of(f)
    if f.kind == "param_value" and wrong and x and not any(r.wrong_name for _, r, _ in parts):
        name = Rule("param_name", ts, param=x, wrong_name=wrong)
        if not corpus.refuting(name):
            text = f"Call {_join(ts)} with {x}=..., never {wrong}=..."
            parts.append((text, name, f"its parameter name only: {why}"))
    err = f.detail.get("error") or next(
        (e for n in notes for t, p, e in n.errors if p == x and e), ""
    )
    if (
        not parts
        and f.kind == "param_value"
        and x
        and err
        and not _framing_only(err, ts)
        and proven_wrong(f)
    ):
        # what a failed call showed, when it said more than its exit status
        text = checked_text(x, ts, err, corpus)
        if not literal_tokens(_QUOTED.sub("", text), corpus):
            parts.append((text, Rule("param_value", ts, param=x), f"checked only: {why}"))
    if not parts:
        return _Verdict(None, None, f"held: {why}")
    (text, rule, note), rest = parts[0], parts[1:]
    return _Verdict(text, rule, note=note, extra=tuple((t, r) for t, r, _ in rest))


#: Words that name a failure and nothing of its cause, once the client's framing is gone:
#: "Error", "Command failed", a program's own "exit status 1" (Go's, make's).
_NO_CAUSE = re.compile(
    r"(?i)\bexit(?:ed)?\s*(?:code|status)?\b[:\s]*-?\d*|\b(?:command\s+failed|error|failed)\b[:\s]*"
)


def _framing_only(err: str, tools: Sequence[str]) -> bool:
    """Whether a failure's error holds only its client's framing (an exit status), no
    word of its cause: "a wrong x failed with 'Exit code 1'" would teach nothing.

    The framing is what :func:`~agentmem.agents.strip_headers` strips with the client
    table of the ``tools`` (``Exit code N``; Codex's ``Process exited with code N``
    block). A tool no table knows (an unknown client's shell) may be any client's,
    so every client's framing is stripped from its error."""
    own = {id(found[0]): found[0] for found in map(spec_for, tools) if found is not None}
    rest = err[:400]
    for table in list(own.values()) or CLIENTS:
        rest = strip_headers(rest, table)[0]
    rest = _NO_CAUSE.sub(" ", rest)
    return not re.search(r"[^\W\d_]|\b[1-5]\d\d\b", rest)  # words, or an HTTP status


def _plain_lesson(f: Finding, text: str, corpus: Corpus) -> _Verdict:
    rule = rule_for(f, text)
    alt = None
    if f.kind == "wrong_tool" and f.detail.get("error") and not f.detail.get("both_ways"):
        right, wrong = f.facts[0], f.facts[1]
        e = quote_error(f.detail["error"], 5)
        alt_text = _mask_quotes(f"If {wrong} fails with '{e}', use {right} instead.", corpus, ())
        alt = (alt_text, Rule("wrong_tool", [right], wrong=wrong, error=_gist(alt_text)))
    if f.kind == "wrong_tool" and not f.detail.get("ask") and not f.detail.get("both_ways"):
        # "for this step" says nothing about when: one run's substitution is no rule, but
        # the failure it fixed is ("If W fails with e, use R instead")
        if alt is not None:
            return _Verdict(alt[0], alt[1], note="stated for its failure only: no request")
        return _Verdict(None, None, "held: it names no request it applies to")
    new = _mask_quotes(text, corpus, ())
    left = literal_tokens(_QUOTED.sub("", new), corpus)
    if left:
        return _Verdict(None, None, f"held: names one task's value {', '.join(left)}")
    return _Verdict(new, rule, alt=alt)


def generalise(
    ops: Sequence[Operation], notes: Mapping[str, GroupNotes], corpus: Corpus
) -> tuple[list[Operation], list[tuple[Operation, str]]]:
    """The session's ADDs in general form (see the module doc): (operations, held ones).

    An ADD keeps its text (the model's phrasing included) when it is already general;
    otherwise it gets the data's pattern text (origin ``data``) or is held. Every kept
    ADD carries its :class:`~agentmem.learning.rules.Rule` in ``detail["rule"]``.
    """
    out: list[Operation] = []
    held: list[tuple[Operation, str]] = []
    for op in ops:
        f = op.detail.get("evidence")
        if op.kind != "ADD" or not isinstance(f, Finding) or not op.text:
            out.append(op)
            continue
        groups = op.detail.get("merged_groups") or [op.group or ""]
        v = review(f, op.text, [notes[g] for g in groups if g in notes], corpus)
        if v.text is None:
            held.append((op, v.why))
            continue
        detail = {**op.detail, "rule": v.rule, "conditional": v.alt}
        if v.text != op.text:
            note = v.note or "rephrased as a pattern: the data shows no more than this"
            out.append(
                attrs.evolve(
                    op,
                    text=v.text,
                    origin="data" if op.origin == "model" else op.origin,
                    note="; ".join(x for x in (op.note, note) if x),
                    detail=detail,
                )
            )
        else:
            out.append(attrs.evolve(op, detail=detail))
        for text, rule in v.extra:
            names = [*rule.tools, rule.param or "", rule.wrong_name or ""]
            out.append(
                attrs.evolve(
                    op,
                    text=text,
                    origin="data",
                    facts=tuple(n for n in dict.fromkeys(names) if n),
                    note="; ".join(x for x in (op.note, "a second lesson of its finding") if x),
                    detail={**detail, "rule": rule, "conditional": None},
                )
            )
    return out, held
