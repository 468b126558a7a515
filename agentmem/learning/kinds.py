"""The kinds of lesson learning produces: one enumeration, one table every step reads.

A :class:`Kind` is stored as its string (``experiences.rule`` and the journal hold
``"param_name"``, ``"wrong_tool"``, ...), and compares equal to it. :data:`KINDS` says,
for each kind, what every step of learning needs to know about it; the steps that
dispatch on the kind (:mod:`.rules`' ``applies`` / ``follows``, :mod:`.generality`'s
review and rule, :mod:`.merge`'s clusters) hold one entry per kind in a table checked
against :class:`Kind` when they are imported, so a new kind that one step forgets
fails at once instead of falling through (``tests/test_kinds.py`` walks every kind
through every step).

``shell`` is the lesson of a shell call corrected (:mod:`.shell_fixes`): a program,
flag, operand, wrapper or path that made the same intent work, or where a project
keeps a file. Its rule is not tested against other runs (the run's own calls prove
it); its scope is the evidence's (``finding.detail["scope"]``).

``tool_rule`` is a coding agent's tool's own rule, as its client table states it
(:attr:`agentmem.agents.ToolSpec.needs`: Claude Code's Edit refuses a file it has not
read), learned when a run shows it: the tool failed with that error, the run made the
needed call and then did the job. Scope ``tool``: a candidate for every project once two
projects show it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

__all__ = ["KINDS", "Kind", "KindSpec", "check_table"]


class Kind(str, enum.Enum):
    """A kind of lesson (a finding's ``kind``, a rule's ``kind``)."""

    PARAM_NAME = "param_name"
    PREREQUISITE = "prerequisite"
    RECOVERY = "recovery"
    PARAM_VALUE = "param_value"
    WRONG_TOOL = "wrong_tool"
    MISSING_STEP = "missing_step"
    SHELL = "shell"
    TOOL_RULE = "tool_rule"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


@attrs.frozen
class KindSpec:
    """What the steps of learning know about one kind.

    ``rank``: findings of equal support are ranked by it (most specific first);
    ``correction``: a run's own correction (:mod:`.corrections`) can show it;
    ``testable``: :func:`.rules.applies` / :func:`.rules.follows` can test a run against
    its rule (so :mod:`.support` can count groups that confirm or contradict it);
    ``evidence``: what a run (or a group) must show before the kind is learned (the
    module that finds it holds its examples: ``shell_fixes.SHELL_CHANGES`` for shell).
    """

    kind: Kind
    rank: int
    correction: bool
    testable: bool
    evidence: str = ""


KINDS: Mapping[Kind, KindSpec] = {
    s.kind: s
    for s in (
        KindSpec(
            Kind.PARAM_NAME,
            0,
            correction=True,
            testable=True,
            evidence="a call failed naming an unknown parameter; the same call with another "
            "name for it worked",
        ),
        KindSpec(
            Kind.PREREQUISITE,
            1,
            correction=True,
            testable=True,
            evidence="a call failed; exactly one other call came first and the same call then "
            "worked",
        ),
        KindSpec(
            Kind.RECOVERY,
            2,
            correction=True,
            testable=True,
            evidence="a call failed with an error; a helper call then the retried call worked, "
            "the error naming what changed",
        ),
        KindSpec(
            Kind.SHELL,
            2,
            correction=True,
            testable=False,
            evidence="a shell call that was a misuse, then the same intent with one "
            "recognisable change worked (shell_fixes.SHELL_CHANGES)",
        ),
        KindSpec(
            Kind.TOOL_RULE,
            1,
            correction=True,
            testable=True,
            evidence="a client tool failed with its own rule's error (ToolSpec.needs); the "
            "needed call, then the job done",
        ),
        KindSpec(
            Kind.PARAM_VALUE,
            3,
            correction=True,
            testable=True,
            evidence="a call failed on a parameter's value that the error names; the same "
            "call with another value worked",
        ),
        KindSpec(
            Kind.WRONG_TOOL,
            4,
            correction=True,
            testable=True,
            evidence="a tool failed; another tool did the same job on the same arguments "
            "right after",
        ),
        KindSpec(
            Kind.MISSING_STEP,
            5,
            correction=False,
            testable=True,
            evidence="good runs of one task all make a call that the bad runs skip",
        ),
    )
}


def check_table(name: str, table: Mapping[Any, Any], kinds: Iterable[Kind] = Kind) -> None:
    """Raise when ``table`` (a step's entries by kind) misses a kind or holds another."""
    want = set(kinds)
    have = set(table)
    if have != want:
        missing = ", ".join(sorted(k.value for k in want - have))
        extra = ", ".join(sorted(str(k) for k in have - want))
        raise AssertionError(
            f"{name}: no entry for kind(s) {missing or '-'}; unknown {extra or '-'}"
        )
