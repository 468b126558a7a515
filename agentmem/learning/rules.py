"""A lesson's structured facts, and whether a run reaches and follows it. Pure functions.

Every lesson learned from the data carries a :class:`Rule`: its kind, the tools it
is about, the parameter, the helper or look-up tool, and the values it states
(only values that are general, see :mod:`agentmem.learning.generality`). It is
stored with the experience (``experiences.rule``, JSON) so that later sessions
can count the groups that confirm or contradict it
(:mod:`agentmem.learning.support`), and the held-out benchmark
(``python -m benchmarks.generalise``) can find the runs it applies to.

For one run (its task and steps), :func:`applies` says whether the run meets
the situation the lesson is about and :func:`follows` whether it did what the
lesson says:

* ``param_name``: applies when the run calls one of the tools; followed when no
  such call passes the wrong name.
* ``param_value``: applies when the run passes the parameter (or its wrong name)
  to one of the tools; followed when every such call passes the stated value (one
  of the listed ``options``), never the stated bad one, a value that an earlier
  successful call of the look-up tool returned or the task gives (``lookup``; with
  ``lookup_only``, only one the look-up returned: the request's own words were the
  wrong value), or a value written in the task (``from_request``).
* ``prerequisite``: applies when the run calls one of the tools; followed when a
  successful call of the helper (with the stated ``setting``; of every helper of
  ``needs``) comes before the first call of each, or, for a lesson that also says
  how to recover, when a failed call was followed by the helper and a successful
  retry.
* ``recovery``: applies when a call of the tool failed (with the ``error``, when the
  rule names one); followed when the run then called the helper (if any) and the
  tool again, successfully.
* ``wrong_tool``: applies when the run calls either tool (and, for a lesson about
  a kind of request, when the task shares most of that request's words);
  followed unless it called the wrong one and never the right one (the wrong tool
  in place of the right one). With an ``error`` ("if W fails with e, use R"):
  applies when W failed with it, followed when R came after.
* ``missing_step``: applies when the run calls one of the ``next`` tools (or its
  task shares most of the request's words); followed when the step comes first.

A rule of any kind with a ``wrong_name`` also applies to a run that passes that
name to one of its tools, and such a run does not follow it. A lesson whose kind
cannot be tested this way (a two-way substitution) never applies.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ..agents import same_job, spec_for
from ..agents.base import declared_untestable
from ..records import Step
from .digest import value_text
from .kinds import KINDS as KIND_SPECS
from .kinds import Kind, check_table

__all__ = ["Rule", "applies", "follows", "lift", "val"]

#: The kinds a stored rule may have (the strings the library holds).
KINDS = tuple(k.value for k in Kind)


def val(v: Any) -> str:
    """A parameter value as lessons and rules write it (short, safe JSON-ish text)."""
    return value_text(v, 40)


def _tuple(v: Any) -> tuple[str, ...]:
    return tuple(str(x) for x in (v or ()))


@attrs.frozen
class Rule:
    """The structured facts of one lesson (see the module doc)."""

    kind: str
    tools: tuple[str, ...] = attrs.field(converter=_tuple)
    param: str | None = None
    helper: str | None = None
    good: str | None = None
    bad: str | None = None
    options: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    wrong_name: str | None = None
    lookup: str | None = None
    lookup_only: bool = False
    from_request: bool = False
    setting: tuple[str, str] | None = attrs.field(
        default=None, converter=lambda v: None if not v else (str(v[0]), str(v[1]))
    )
    recovery: bool = False
    #: A prerequisite with several helpers: (helper, parameter, value) each, the
    #: parameter and value ``""`` when the lesson states no setting for it.
    needs: tuple[tuple[str, str, str], ...] = attrs.field(
        default=(), converter=lambda v: tuple((str(a), str(b), str(c)) for a, b, c in v or ())
    )
    next: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    wrong: str | None = None
    ask: str | None = None
    error: str | None = None
    testable: bool = True
    #: What the lesson claims of the machine or the project that can be checked where it
    #: is served, ``(kind, value)`` each (:mod:`agentmem.claims`).
    #: The lesson is about a step of most tasks in its project (its version control: "In
    #: this project git commit fails: run mix format first"): served there for any prompt,
    #: in the standing slots (:func:`agentmem.retrieval.pipeline._standing`).
    standing: bool = False
    #: The client whose tool the lesson is about ("The Bash tool runs Git Bash here" is
    #: Claude Code's), when only one has it: a standing lesson is served to that client's
    #: prompts only (None: any client).
    client: str | None = None
    claims: tuple[tuple[str, str], ...] = attrs.field(
        default=(),
        converter=lambda v: tuple(
            (str(c[0]), str(c[1])) for c in v or () if isinstance(c, (list, tuple)) and len(c) == 2
        ),
    )

    def as_dict(self) -> dict[str, Any]:
        """The rule as JSON-ready data, without empty fields."""
        d = attrs.asdict(self, recurse=False)
        out: dict[str, Any] = {}
        for k, v in d.items():
            if v in (None, (), False) and k != "testable":
                continue
            out[k] = (
                [list(x) if isinstance(x, tuple) else x for x in v] if isinstance(v, tuple) else v
            )
        return out

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Rule:
        fields = {a.name for a in attrs.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in fields})

    @classmethod
    def from_json(cls, text: str | None) -> Rule | None:
        """The rule stored as ``text``, or None (no rule, or not one this version reads)."""
        if not text:
            return None
        try:
            d = json.loads(text)
            if not isinstance(d, dict) or d.get("kind") not in KINDS:
                return None
            return cls.from_dict(d)
        except (ValueError, TypeError):
            return None

    @classmethod
    def stored(cls, text: str | None, lesson: str) -> Rule | None:
        """The rule stored as ``text`` for the lesson ``lesson``, read as this version
        learns it. A client tool's rule that its own run proves and that quotes no error
        (the pkill self-kill, the folder the shell keeps) is untestable; a library learned
        before such rules were (6033521, review 28) stored it testable, so that every later
        failed call of its tools met it and could retire a true lesson. Told apart by the
        lesson's text, the only mark the older rule left."""
        rule = cls.from_json(text)
        if rule is not None and declared_untestable(rule.as_dict(), lesson):
            return attrs.evolve(rule, testable=False)
        return rule

    @property
    def subjects(self) -> tuple[str, ...]:
        """Every tool the rule watches."""
        extra = [self.helper, self.lookup, self.wrong, *self.next, *(n[0] for n in self.needs)]
        return tuple(dict.fromkeys([*self.tools, *(t for t in extra if t)]))


# --------------------------------------------------------------------------- helpers

_WORD = re.compile(r"[A-Za-z][A-Za-z']{3,}")


def _request_matches(ask: str | None, task: str) -> bool:
    """Whether ``task`` shares at least half of the request phrase's longer words."""
    if not ask:
        return True
    words = {w.lower() for w in _WORD.findall(ask)}
    if not words:
        return True
    have = {w.lower() for w in _WORD.findall(task)}
    return len(words & have) * 2 >= len(words)


def _ok_before(steps: Sequence[Step], i: int, tool: str) -> list[int]:
    return [j for j in range(i) if steps[j].tool == tool and steps[j].success]


def _in_output_before(steps: Sequence[Step], i: int, tool: str, value: Any) -> bool:
    text = value_text(value, 200)
    if len(text) < 2:
        return False
    return any(text in steps[j].output for j in _ok_before(steps, i, tool))


def _says(step: Step, error: str | None) -> bool:
    """Whether a failed step's output carries the words of the error gist (any error,
    without one)."""
    if not error:
        return True
    have = set(re.findall(r"[a-z0-9]+", step.output.lower()))
    return set(re.findall(r"[a-z0-9]+", error.lower())) <= have


def _in_task(task: str, value: Any) -> bool:
    text = value_text(value, 200)
    return len(text) > 1 and text.lower() in task.lower()


# --------------------------------------------------------------------------- applies


def needed_tools(rule: Rule) -> frozenset[str] | None:
    """The tools a run must call one of for :func:`applies` to hold (empty: it never
    does), or None when the words of a task alone can make it apply.

    Lets a caller look only at the runs that call those tools (an index by tool)
    instead of asking :func:`applies` of every run: a session of thousands of
    groups, a library of thousands of runs.
    """
    if not rule.testable or rule.kind not in KINDS or not KIND_SPECS[Kind(rule.kind)].testable:
        return frozenset()
    if rule.kind == Kind.MISSING_STEP and not rule.next:
        return None
    return frozenset({*rule.tools, *rule.next, rule.wrong or ""} - {""})


_Steps = Sequence[Step]


def _applies_param_name(rule: Rule, task: str, steps: _Steps) -> bool:
    return any(s.tool in rule.tools for s in steps)


def _applies_param_value(rule: Rule, task: str, steps: _Steps) -> bool:
    names = {rule.param, rule.wrong_name} - {None}
    return any(s.tool in rule.tools and names & set(s.params) for s in steps)


def _applies_recovery(rule: Rule, task: str, steps: _Steps) -> bool:
    return any(s.tool in rule.tools and not s.success and _says(s, rule.error) for s in steps)


def _target(s: Step) -> Any:
    """The file a coding agent's tool call works on (None for a tool without one)."""
    found = spec_for(s.tool)
    key = found[1].path if found else None
    return s.params.get(key) if key else None


def _redone(steps: _Steps, fail: int, tool: str) -> int | None:
    """The first later successful call of ``tool`` (or a tool doing the same job) on the
    same file as the failed call at ``fail``: the refused job done after all."""
    where = _target(steps[fail])
    return next(
        (
            j
            for j in range(fail + 1, len(steps))
            if steps[j].success
            and (steps[j].tool == tool or same_job(steps[j].tool, tool))
            and _target(steps[j]) == where
        ),
        None,
    )


def _tool_rule_failures(rule: Rule, steps: _Steps) -> list[tuple[int, int | None]]:
    """Each call of the rule's tools that failed with its error, with where the job was
    then done on the same file (None: the run went another way)."""
    return [
        (i, _redone(steps, i, s.tool))
        for i, s in enumerate(steps)
        if s.tool in rule.tools and not s.success and _says(s, rule.error)
    ]


def _applies_tool_rule(rule: Rule, task: str, steps: _Steps) -> bool:
    """A tool's own rule with a helper ("Read the file first, then retry") is about a run
    that hit the error and then did that job on that file: a run that gave the file up
    (wrote it with a shell heredoc instead) neither follows nor contradicts it. Without
    a helper, any run that hit the error."""
    found = _tool_rule_failures(rule, steps)
    if not rule.helper:
        return bool(found)
    return any(done is not None for _, done in found)


def _applies_wrong_tool(rule: Rule, task: str, steps: _Steps) -> bool:
    if rule.error:  # "if W fails with e, use R instead"
        return any(s.tool == rule.wrong and not s.success and _says(s, rule.error) for s in steps)
    both = set(rule.tools) | {rule.wrong or ""}
    return any(s.tool in both for s in steps) and _request_matches(rule.ask, task)


def _applies_missing_step(rule: Rule, task: str, steps: _Steps) -> bool:
    if rule.next:
        return any(s.tool in set(rule.next) for s in steps)
    return bool(rule.ask) and _request_matches(rule.ask, task)


def _never(rule: Rule, task: str, steps: _Steps) -> bool:
    return False


#: Whether a run meets a rule's situation, by kind (a kind that is not testable: never).
_APPLIES: Mapping[Kind, Any] = {
    Kind.PARAM_NAME: _applies_param_name,
    Kind.PARAM_VALUE: _applies_param_value,
    Kind.PREREQUISITE: _applies_param_name,  # applies when the run calls one of the tools
    Kind.RECOVERY: _applies_recovery,
    Kind.WRONG_TOOL: _applies_wrong_tool,
    Kind.MISSING_STEP: _applies_missing_step,
    Kind.SHELL: _never,
    Kind.TOOL_RULE: _applies_tool_rule,  # the tool failed with its error, then did the job
}
check_table("rules.applies", _APPLIES)


def applies(rule: Rule, task: str, steps: Sequence[Step]) -> bool:
    """Whether a run (``task``, ``steps``) meets the situation ``rule`` is about."""
    if not rule.testable or rule.kind not in KINDS:
        return False
    kind = Kind(rule.kind)
    if not KIND_SPECS[kind].testable:
        return False
    tools = set(rule.tools)
    if rule.wrong_name and any(s.tool in tools and rule.wrong_name in s.params for s in steps):
        return True
    return bool(_APPLIES[kind](rule, task, steps))


# --------------------------------------------------------------------------- follows


def _value_ok(rule: Rule, task: str, steps: Sequence[Step], i: int, v: Any) -> bool:
    text = val(v)
    if rule.options and text not in rule.options:
        return False
    if rule.good is not None and not rule.options and text != rule.good:
        return False
    if rule.bad is not None and text == rule.bad:
        return False
    if (
        rule.lookup
        and not _in_output_before(steps, i, rule.lookup, v)
        and (rule.lookup_only or not _in_task(task, v))
    ):
        return False
    return not (rule.from_request and not _in_task(task, v))


def _need_met(steps: Sequence[Step], i: int, helper: str, x: str, good: str) -> bool:
    before = _ok_before(steps, i, helper)
    if not before:
        return False
    if x:
        last = steps[before[-1]]
        return x in last.params and val(last.params[x]) == good
    return True


def _prerequisite_met(rule: Rule, steps: Sequence[Step], i: int) -> bool:
    if rule.needs:
        return all(_need_met(steps, i, u, x, good) for u, x, good in rule.needs)
    x, good = rule.setting or ("", "")
    return _need_met(steps, i, rule.helper or "", x, good)


def _follows_param_name(rule: Rule, task: str, steps: _Steps) -> bool:
    return not any(s.tool in rule.tools and rule.wrong_name in s.params for s in steps)


def _follows_param_value(rule: Rule, task: str, steps: _Steps) -> bool:
    for i, s in enumerate(steps):
        if s.tool not in rule.tools:
            continue
        if rule.wrong_name and rule.wrong_name in s.params:
            return False
        if rule.param in s.params and not _value_ok(rule, task, steps, i, s.params[rule.param]):
            return False
    return True


def _follows_prerequisite(rule: Rule, task: str, steps: _Steps) -> bool:
    for t in rule.tools:
        first = next((i for i, s in enumerate(steps) if s.tool == t), None)
        if first is None or _prerequisite_met(rule, steps, first):
            continue
        if rule.recovery and _recovered(rule, steps, first, t):
            continue
        return False
    return True


def _follows_recovery(rule: Rule, task: str, steps: _Steps) -> bool:
    if rule.error and rule.param and not rule.helper:
        return _way_out(rule, steps)
    for t in rule.tools:
        fail = next(
            (
                i
                for i, s in enumerate(steps)
                if s.tool == t and not s.success and _says(s, rule.error)
            ),
            None,
        )
        if fail is not None and not _recovered(rule, steps, fail, t):
            return False
    return True


def _follows_tool_rule(rule: Rule, task: str, steps: _Steps) -> bool:
    """A tool's own rule: with a helper, the helper (on the same file) between each
    refused call and the job then done on that file; without one (do it another way),
    the refused call is not made again."""
    if rule.helper:
        return all(
            done is None
            or any(
                q.tool == rule.helper and q.success and _target(q) in (None, _target(steps[i]))
                for q in steps[i + 1 : done]
            )
            for i, done in _tool_rule_failures(rule, steps)
        )
    return not any(
        s.tool in rule.tools
        and not s.success
        and _says(s, rule.error)
        and any(q.tool == s.tool and q.params == s.params for q in steps[i + 1 :])
        for i, s in enumerate(steps)
    )


def _way_out(rule: Rule, steps: _Steps) -> bool:
    """A way out of one error ("if T fails with e, retry it with x set"): a run does
    otherwise only when, after that failure, it made the tool work without ``x``; a run
    that went another way (another tool) neither follows nor contradicts it."""
    for i, s in enumerate(steps):
        if s.tool not in rule.tools or s.success or not _says(s, rule.error):
            continue
        later = [q for q in steps[i + 1 :] if q.tool == s.tool and q.success]
        if later and not any(rule.param in q.params for q in later):
            return False
    return True


def _follows_wrong_tool(rule: Rule, task: str, steps: _Steps) -> bool:
    if rule.error:
        fail = next(
            (
                i
                for i, s in enumerate(steps)
                if s.tool == rule.wrong and not s.success and _says(s, rule.error)
            ),
            None,
        )
        return fail is None or any(s.tool in rule.tools for s in steps[fail + 1 :])
    called = {s.tool for s in steps}
    return rule.wrong not in called or bool(set(rule.tools) & called)


def _follows_missing_step(rule: Rule, task: str, steps: _Steps) -> bool:
    step = rule.tools[0] if rule.tools else ""
    if not rule.next:
        return any(s.tool == step for s in steps)
    nxt = set(rule.next)
    first = next((i for i, s in enumerate(steps) if s.tool in nxt), None)
    return first is None or any(s.tool == step for s in steps[:first])


#: Whether a run did what a rule says, by kind.
_FOLLOWS: Mapping[Kind, Any] = {
    Kind.PARAM_NAME: _follows_param_name,
    Kind.PARAM_VALUE: _follows_param_value,
    Kind.PREREQUISITE: _follows_prerequisite,
    Kind.RECOVERY: _follows_recovery,
    Kind.WRONG_TOOL: _follows_wrong_tool,
    Kind.MISSING_STEP: _follows_missing_step,
    Kind.SHELL: _never,
    Kind.TOOL_RULE: _follows_tool_rule,
}
check_table("rules.follows", _FOLLOWS)


def follows(rule: Rule, task: str, steps: Sequence[Step]) -> bool:
    """Whether a run did what ``rule`` says (meaningful where :func:`applies` is true)."""
    if rule.kind not in KINDS:
        return False
    tools = set(rule.tools)
    if rule.wrong_name and any(s.tool in tools and rule.wrong_name in s.params for s in steps):
        return False
    return bool(_FOLLOWS[Kind(rule.kind)](rule, task, steps))


def _recovered(rule: Rule, steps: Sequence[Step], fail: int, tool: str) -> bool:
    """After the failed call at ``fail``: the helper (if any), then ``tool`` (or a coding
    agent's tool that does the same job: MultiEdit for Edit) succeeded."""
    later = [
        j
        for j in range(fail + 1, len(steps))
        if steps[j].success and (steps[j].tool == tool or same_job(steps[j].tool, tool))
    ]
    if not later:
        return False
    if not rule.helper:
        return True
    return any(s.tool == rule.helper and s.success for s in steps[fail + 1 : later[0]]) or bool(
        rule.kind == "prerequisite" and _prerequisite_met(rule, steps, later[0])
    )


# --------------------------------------------------------------------------- lift


def lift(
    rule: Rule, runs: Sequence[tuple[str, Sequence[Step], float]]
) -> tuple[float | None, list[float], list[float]]:
    """(mean reward of the runs that follow ``rule`` minus that of the runs that do not,
    or None when one side is empty; the followers' rewards; the others' rewards), over
    the ``runs`` (task, steps, reward) it applies to."""
    yes: list[float] = []
    no: list[float] = []
    for task, steps, reward in runs:
        if not applies(rule, task, steps):
            continue
        (yes if follows(rule, task, steps) else no).append(reward)
    if not yes or not no:
        return None, yes, no
    return sum(yes) / len(yes) - sum(no) / len(no), yes, no
