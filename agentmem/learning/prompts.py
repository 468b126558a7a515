"""The prompts of the three stages: the paper's templates, plus the data's evidence.

The templates are the paper's (section 3.4-3.6), word for word. agentmem adds
one thing to Stage 1 and Stage 2: the facts the data proved (the trajectory's
digest, the group's findings), so that a small model has the analysis in
front of it and only needs to phrase it. Untrusted text (tool outputs,
parameters, task text) is quoted through :func:`safe_text`, which strips
anything that looks like an operation line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..records import Experience, Trajectory
from .digest import Digest, safe_text
from .findings import Finding

__all__ = [
    "COMPRESS_TEMPLATE",
    "INSTRUCTION_TEXTS",
    "STAGE1_TEMPLATE",
    "STAGE2_TEMPLATE",
    "compress_prompt",
    "stage1_instructions",
    "stage1_prompt",
    "stage2_prompt",
]

STAGE1_TEMPLATE = (
    "You are analyzing a tool-use trajectory for task: {x}. The trajectory made {K} tool calls "
    "with overall reward {R}. The step-by-step calls were: {xi}. Summarize in at most 64 words: "
    "(1) what tool selection strategy was used, (2) what parameter choices were made for key "
    "tools, (3) what failures occurred and why, (4) what the outcome was. Focus on patterns "
    "generalizable to similar future tasks."
)
STAGE1_FACTS = "\nFacts found in the data: {facts}\nSummary:"

STAGE2_TEMPLATE = (
    "You are extracting generalizable tool-use lessons. Below are SUCCESSFUL trajectories "
    "(high reward): {pos}. And FAILED trajectories (low reward): {neg}. Current experience "
    "library: {lib}. Produce operations (add/modify/delete/merge) that update the library. Each "
    "new/modified experience must: (a) be <=32 words, (b) be actionable and specific, (c) "
    "explain WHEN and HOW to apply. Format: OPERATION | experience_id (if modify/delete/merge) "
    "| text."
)
STAGE2_EVIDENCE = "\nDifferences proven by the data (one lesson each):\n{findings}\nOperations:\n"

COMPRESS_TEMPLATE = "Summarize in <=32 words, preserving the actionable core: {text}"

#: Instruction text a model must not copy into a lesson (the data parts are allowed).
INSTRUCTION_TEXTS: tuple[str, ...] = (
    STAGE1_TEMPLATE,
    STAGE2_TEMPLATE,
    COMPRESS_TEMPLATE,
    STAGE1_FACTS,
    STAGE2_EVIDENCE,
)


def render_steps(
    t: Trajectory, *, limit: int = 10, output_chars: int = 60, param_chars: int = 80
) -> str:
    """The step-by-step calls, compact and safe: ``1. tool(k=v) -> ok: output``."""
    lines = []
    steps = list(t.steps)
    shown = steps if len(steps) <= limit else steps[: limit - 2] + steps[-2:]
    for i, s in enumerate(shown, 1):
        params = safe_text(json.dumps(s.params, ensure_ascii=False), param_chars)
        status = "ok" if s.success else "ERROR"
        lines.append(f"{i}. {s.tool}({params}) -> {status}: {safe_text(s.output, output_chars)}")
        if len(steps) > limit and i == limit - 2:
            lines.append(f"... {len(steps) - limit} more calls ...")
    return " ".join(lines) if lines else "(none)"


def stage1_instructions(t: Trajectory, d: Digest) -> str:
    """The Stage 1 template as sent, without the data: what a summary must not copy."""
    return STAGE1_TEMPLATE.format(x="", K=len(t.steps), R=f"{d.reward:.2f}", xi="")


def stage1_prompt(t: Trajectory, d: Digest) -> str:
    return STAGE1_TEMPLATE.format(
        x=safe_text(t.task, 300), K=len(t.steps), R=f"{d.reward:.2f}", xi=render_steps(t)
    ) + STAGE1_FACTS.format(facts=d.summary())


def _library(relevant: Sequence[Experience]) -> str:
    if not relevant:
        return "(empty)"
    return " ".join(f"[{e.id}] {safe_text(e.text, 300)}" for e in relevant)


def stage2_prompt(
    positives: Sequence[str],
    negatives: Sequence[str],
    relevant: Sequence[Experience],
    findings: Sequence[Finding],
) -> str:
    pos = " ".join(f"(+) {safe_text(s, 600)}" for s in positives) or "(none)"
    neg = " ".join(f"(-) {safe_text(s, 600)}" for s in negatives) or "(none)"
    fnd = "\n".join(f"- {f.text}" for f in findings) or "- (none found)"
    return STAGE2_TEMPLATE.format(pos=pos, neg=neg, lib=_library(relevant)) + (
        STAGE2_EVIDENCE.format(findings=fnd)
    )


def compress_prompt(text: str) -> str:
    return COMPRESS_TEMPLATE.format(text=safe_text(text, 1000))
