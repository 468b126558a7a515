"""The model's part in each stage, always checked and always with a data fallback.

Stage 1 asks the model to summarise a trajectory, Stage 2 to produce operations
for a group, Stage 3 to compress an over-long lesson. Every answer passes
:mod:`agentmem.learning.validate`; a rejected one is replaced by the
data-derived version and the reason is kept for the journal. With no model
(``model=None``) the data versions are used directly. A stage whose answers keep
failing validation stops asking the model for the rest of the session
(:class:`ModelUsage`), so a model too small for the job costs a few calls, not
N_g(G+1). :func:`generalize` merges the session's ADDs that teach one lesson
before Stage 3 consolidates them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs

from ..errors import ModelError, ModelUnavailableError
from ..records import MAX_EXPERIENCE_WORDS, Experience, Operation, Trajectory, word_count
from . import prompts
from .digest import Digest
from .findings import Finding
from .merge import clusters, merge_cluster
from .ops import parse_operations
from .validate import identifiers, lesson_problem, lost_facts, names_tool, summary_problem

if TYPE_CHECKING:
    from ..models import TextModel

__all__ = [
    "ModelUsage",
    "Summary",
    "compress",
    "data_compress",
    "extract",
    "generalize",
    "summarize",
]


#: Answers of a stage the model gives before its record may stop it (see ModelUsage.skip).
PROBE = {"stage1": 8, "stage2": 5, "compress": 5}
#: Below this share of accepted answers after the probe, the stage stops asking the model.
MIN_ACCEPTED = 0.25


@attrs.define
class ModelUsage:
    """What the model cost in a session: calls, tokens and seconds; and, per stage, how
    many of its answers passed validation.

    A model too weak for a stage (a tiny local one: its Stage 2 answers are rarely
    operations at all) would cost a call per trajectory for answers that validation then
    throws away. So once a stage has had ``PROBE[stage]`` answers and fewer than
    ``MIN_ACCEPTED`` of them passed, the rest of the session uses the data version for
    that stage without asking (:meth:`skip` says why). A model that does its job is never
    stopped.
    """

    calls: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    verdicts: dict[str, list[int]] = attrs.field(factory=dict)
    #: Why the model cannot be used any more (its worker died, its server is unreachable):
    #: from then on every stage uses the data version, as with no model at all.
    unavailable: str | None = None

    def verdict(self, stage: str, accepted: bool) -> None:
        """Count one answer of ``stage`` as accepted or rejected by validation."""
        v = self.verdicts.setdefault(stage, [0, 0])
        v[0 if accepted else 1] += 1

    def skip(self, stage: str) -> str | None:
        """Why ``stage`` no longer asks the model in this session, or None."""
        if self.unavailable is not None:
            return f"model unavailable: {self.unavailable}"
        ok, bad = self.verdicts.get(stage, [0, 0])
        n = ok + bad
        if n >= PROBE.get(stage, 5) and ok < MIN_ACCEPTED * n:
            return (
                f"model not asked: {bad} of its {n} {stage} answers in this session "
                "failed validation"
            )
        return None

    def complete(
        self, model: TextModel, prompt: str, max_tokens: int, stop: Sequence[str] = ()
    ) -> tuple[str | None, str]:
        """Call the model; returns (text, "") or (None, why it failed).

        A model that becomes unavailable (:class:`ModelUnavailableError`) is not
        asked again in this session.
        """
        if self.unavailable is not None:
            return None, f"model unavailable: {self.unavailable}"
        t0 = time.perf_counter()
        self.calls += 1
        try:
            out = model.complete(prompt, max_tokens=max_tokens, stop=stop)
        except ModelUnavailableError as e:
            self.failures += 1
            self.seconds += time.perf_counter() - t0
            self.unavailable = str(e)
            return None, f"model unavailable: {e}"
        except ModelError as e:
            self.failures += 1
            self.seconds += time.perf_counter() - t0
            return None, f"model error: {e}"
        self.seconds += time.perf_counter() - t0
        self.prompt_tokens += out.prompt_tokens
        self.completion_tokens += out.completion_tokens
        return out.text, ""


@attrs.frozen
class Summary:
    """A Stage 1 summary with its advantage sign and where its text came from."""

    trajectory_id: int | None
    sign: str
    text: str
    origin: str
    reason: str = ""


#: At most this many words in a Stage 1 summary (paper, section 3.4).
MAX_SUMMARY_WORDS = 64
#: Tokens a Stage 1 answer may take (64 words fit) and a Stage 2 answer (a few operations).
STAGE1_MAX_TOKENS = 96
STAGE2_MAX_TOKENS = 160
#: A blank line ends an answer: small models repeat themselves after one.
STOP = ("\n\n",)


def _sentences_within(text: str, max_words: int) -> str:
    """``text`` cut after its last full sentence within ``max_words`` (or kept if it fits)."""
    if word_count(text) <= max_words:
        return text
    words = text.split()[:max_words]
    cut = " ".join(words)
    end = max(cut.rfind(". "), cut.rfind("; "), cut.rfind("! "), cut.rfind("? "))
    if cut.endswith((".", "!", "?")):
        return cut
    return cut[: end + 1] if end > 0 else text


def _avoid(op: Operation) -> tuple[str, ...]:
    f = op.detail.get("evidence")
    return tuple(getattr(f, "avoid", ()) or ())


def _clean_answer(text: str) -> str:
    text = text.strip().strip("`").strip()
    text = re.sub(r"^(summary|answer|lesson|output)\s*:\s*", "", text, flags=re.IGNORECASE)
    return text.split("\n\n", 1)[0].strip().strip('"').strip()


def group_vocabulary(trajs: Sequence[Trajectory]) -> tuple[set[str], set[str]]:
    """(tools, every identifier the group uses: tools and parameter names)."""
    tools = {s.tool for t in trajs for s in t.steps}
    known = set(tools)
    for t in trajs:
        for s in t.steps:
            known.update(s.params)
            for v in s.params.values():  # values the group passed are not inventions
                for x in v if isinstance(v, list) else [v]:
                    if isinstance(x, str) and len(x) <= 80:
                        known.add(x)
    return tools, known


def summarize(
    model: TextModel | None,
    usage: ModelUsage,
    t: Trajectory,
    d: Digest,
    tools: set[str],
    known: set[str],
) -> Summary:
    """Stage 1 for one trajectory."""
    data = d.summary()
    if model is None:
        return Summary(t.id, d.sign, data, "data")
    skipped = usage.skip("stage1")
    if skipped:
        return Summary(t.id, d.sign, data, "fallback", skipped)
    prompt = prompts.stage1_prompt(t, d)
    text, err = usage.complete(model, prompt, max_tokens=STAGE1_MAX_TOKENS, stop=STOP)
    if text is None:
        usage.verdict("stage1", False)
        return Summary(t.id, d.sign, data, "fallback", err)
    text = _sentences_within(_clean_answer(text), MAX_SUMMARY_WORDS)
    own_tools = {s.tool for s in t.steps}
    # names the trajectory itself shows (values, words of its outputs) are not inventions
    seen = set(known) | {w for s in t.steps for w in identifiers(s.output)}
    problem = summary_problem(
        text,
        tools=own_tools or tools,
        known=seen,
        instructions=prompts.INSTRUCTION_TEXTS,
        prompt_head=prompts.stage1_instructions(t, d),
        min_tools=2,
    )
    if (
        problem is None
        and d.failures
        and not d.recoveries
        and not names_tool(text, [f.tool for f in d.failures])
    ):
        problem = "does not name the tool that failed"
    usage.verdict("stage1", problem is None)
    if problem:
        return Summary(t.id, d.sign, data, "fallback", f"model summary rejected: {problem}")
    return Summary(t.id, d.sign, text, "model")


def _contradicted(e: Experience, findings: Sequence[Finding]) -> str | None:
    """Why the group's evidence contradicts experience ``e``, if it does."""
    for f in findings:
        if f.kind == "wrong_tool":
            right, wrong = f.facts[0], f.facts[1]
            if (
                names_tool(e.text, [wrong])
                and not names_tool(e.text, [right])
                and re.search(rf"\b(use|call|prefer)\s+{re.escape(wrong)}\b", e.text, re.IGNORECASE)
            ):
                return f"recommends {wrong}, which failed where {right} succeeded"
        if f.kind == "param_name" and len(f.facts) == 3:
            tool, right, wrong = f.facts
            # the wrong name written as a parameter (``file=``, ``'file'``), not as a word
            # of an error ("No such file")
            as_param = re.search(
                rf"(?<![\w'\"`]){re.escape(wrong)}\s*=|['\"`]{re.escape(wrong)}['\"`]", e.text
            )
            if names_tool(e.text, [tool]) and as_param and not names_tool(e.text, [right]):
                return f"tells {tool} to take {wrong}; the data shows it takes {right}"
    return None


@attrs.frozen
class _Stage2Group:
    """What Stage 2 checks one group's operations against."""

    name: str
    weight: float
    findings: Sequence[Finding]
    #: The ``relevant`` experiences shown to the model, by id.
    by_id: dict[int | None, Experience]
    #: Pairs of near-duplicate experiences: the only MERGEs the data supports.
    dup_pairs: set[frozenset[int]]
    #: Experiences the group's evidence contradicts, with why: the only DELETEs it supports.
    contradicted: dict[int | None, str]
    tools: set[str]
    known: set[str]


@attrs.define
class _Stage2Result:
    """Stage 2's operations so far, and what the model's accepted ones already covered."""

    accepted: list[Operation] = attrs.field(factory=list)
    rejected: list[tuple[Operation, str]] = attrs.field(factory=list)
    #: Findings an accepted ADD or MODIFY phrased.
    phrased: set[int] = attrs.field(factory=set)
    deleted: set[int] = attrs.field(factory=set)
    merged: set[frozenset[int]] = attrs.field(factory=set)


def extract(
    model: TextModel | None,
    usage: ModelUsage,
    *,
    group: str,
    weight: float,
    summaries: Sequence[Summary],
    findings: Sequence[Finding],
    relevant: Sequence[Experience],
    near_duplicates: Sequence[tuple[int, int]],
    tools: set[str],
    known: set[str],
) -> tuple[list[Operation], list[tuple[Operation, str]]]:
    """Stage 2 for one group: (accepted operations, rejected operations with reasons).

    The model's operations are kept only when they are supported by the
    data: an ADD or MODIFY must carry the facts of one finding (which it then
    phrases), ids must be among the ``relevant`` experiences shown to it, a
    DELETE needs an experience the evidence contradicts, a MERGE two that are
    near-duplicates. Findings no accepted model operation phrased become data
    ADDs; contradicted experiences data DELETEs; near-duplicates data MERGEs.
    """
    g = _Stage2Group(
        name=group,
        weight=weight,
        findings=findings,
        by_id={e.id: e for e in relevant},
        dup_pairs={frozenset(p) for p in near_duplicates},
        contradicted={e.id: why for e in relevant if (why := _contradicted(e, findings))},
        tools=tools,
        known=known,
    )
    result = _Stage2Result()
    model_failed = _model_operations(model, usage, summaries, relevant, g, result)
    origin = "data" if model is None else "fallback"
    _data_operations(g, result, origin, note=model_failed)
    return result.accepted, result.rejected


def _model_operations(
    model: TextModel | None,
    usage: ModelUsage,
    summaries: Sequence[Summary],
    relevant: Sequence[Experience],
    g: _Stage2Group,
    result: _Stage2Result,
) -> str:
    """Ask the model for the group's operations and check each one into ``result``;
    returns why the model gave none ("" when it did, or was not asked)."""
    skipped = usage.skip("stage2") if model is not None else None
    if skipped:
        return skipped
    if model is None or not (g.findings or g.contradicted or g.dup_pairs):
        return ""
    prompt = prompts.stage2_prompt(
        [s.text for s in summaries if s.sign == "+"],
        [s.text for s in summaries if s.sign == "-"],
        relevant,
        g.findings,
    )
    text, err = usage.complete(model, prompt, max_tokens=STAGE2_MAX_TOKENS, stop=STOP)
    if text is None:
        usage.verdict("stage2", False)
        return err
    parsed = parse_operations(text, group=g.name, weight=g.weight)
    model_failed = "" if parsed.ops else "model answer held no operation line"
    for op in parsed.ops:
        why, op = _check_operation(op, g, result)
        if why:
            result.rejected.append((op, why))
        else:
            result.accepted.append(op)
    usage.verdict("stage2", any(o.origin == "model" for o in result.accepted))
    return model_failed


def _check_operation(
    op: Operation, g: _Stage2Group, result: _Stage2Result
) -> tuple[str | None, Operation]:
    """Why the data does not support one model operation (None if it does), and the
    operation as it is kept (facts, domain, targets set from the data)."""
    if op.kind == "ADD" and op.targets:  # "ADD | 3 | text": an ADD has no target
        op = attrs.evolve(op, targets=())
    if any(t not in g.by_id for t in op.targets):
        return "names an experience id that was not in the retrieved set", op
    if op.kind in ("ADD", "MODIFY"):
        return _check_lesson(op, g, result.phrased)
    if op.kind == "DELETE":
        return _check_delete(op, g, result.deleted)
    if op.kind == "MERGE":
        return _check_merge(op, g, result.merged)
    return None, op


def _check_lesson(
    op: Operation, g: _Stage2Group, phrased: set[int]
) -> tuple[str | None, Operation]:
    """An ADD or MODIFY: it phrases a finding not yet phrased; a MODIFY rewrites one
    experience about the finding's tool."""
    why, op = _check_phrasing(op, g.findings, phrased, g.tools, g.known)
    if why is None and op.kind == "MODIFY" and len(op.targets) != 1:
        why = "MODIFY needs exactly one experience id"
    elif why is None and op.kind == "MODIFY":
        old = g.by_id[op.targets[0]]
        lost = lost_facts(old.text, op.text or "", g.tools)
        if not names_tool(old.text, op.facts[:1]):
            why = (
                f"experience {old.id} is not about {op.facts[0]}: "
                "the group's data gives no reason to rewrite it"
            )
        elif lost:
            why = f"drops facts of experience {old.id}: " + ", ".join(lost[:4])
    if why is None:
        phrased.add(op.detail["finding"])
    return why, op


def _check_delete(
    op: Operation, g: _Stage2Group, deleted: set[int]
) -> tuple[str | None, Operation]:
    """A DELETE: of one experience that the group's evidence contradicts."""
    if len(op.targets) != 1:
        return "DELETE needs exactly one experience id", op
    if op.targets[0] not in g.contradicted:
        return "the group's data gives no reason to delete this experience", op
    deleted.add(op.targets[0])
    return None, attrs.evolve(op, text=None, note=g.contradicted[op.targets[0]])


def _check_merge(
    op: Operation, g: _Stage2Group, merged: set[frozenset[int]]
) -> tuple[str | None, Operation]:
    """A MERGE: of two near-duplicates, into a lesson that says only what they said."""
    pair = frozenset(op.targets)
    if len(pair) != 2 or pair not in g.dup_pairs:
        return "MERGE needs two experiences that are near-duplicates", op
    a, b = sorted(pair)
    facts = _facts_of(g.by_id[a].text, g.known) | _facts_of(g.by_id[b].text, g.known)
    why = lesson_problem(
        op.text,
        tools=g.tools | facts,
        known=g.known | facts,
        instructions=prompts.INSTRUCTION_TEXTS,
        facts=sorted(facts),
        max_words=2 * MAX_EXPERIENCE_WORDS,
    )
    if why is not None:
        return why, op
    merged.add(pair)
    return None, attrs.evolve(
        op, targets=(a, b), domain=g.by_id[a].domain, facts=tuple(sorted(facts))
    )


def _data_operations(g: _Stage2Group, result: _Stage2Result, origin: str, note: str) -> None:
    """The data's own operations for what no accepted model operation covered: an ADD per
    finding not phrased, a DELETE per contradicted experience, a MERGE per near-duplicate
    pair (the fuller text kept)."""
    for i, f in enumerate(g.findings):
        if i not in result.phrased:
            result.accepted.append(
                Operation(
                    "ADD",
                    text=f.text,
                    domain=f.domain,
                    group=g.name,
                    origin=origin,
                    weight=g.weight,
                    facts=f.facts,
                    note=note,
                    detail={"finding": i, "kind": f.kind, "evidence": f},
                )
            )
    for eid, why in g.contradicted.items():
        if eid is not None and eid not in result.deleted:
            result.accepted.append(
                Operation(
                    "DELETE", targets=(eid,), group=g.name, origin=origin, weight=g.weight, note=why
                )
            )
    for pair in g.dup_pairs:
        if pair not in result.merged and not (pair & (result.deleted | set(g.contradicted))):
            a, b = sorted(pair)
            keep = max((g.by_id[a], g.by_id[b]), key=lambda e: (word_count(e.text), e.id or 0))
            result.accepted.append(
                Operation(
                    "MERGE",
                    text=keep.text,
                    targets=(a, b),
                    domain=keep.domain,
                    group=g.name,
                    origin=origin,
                    weight=g.weight,
                    note="near-duplicates: kept the fuller text",
                )
            )


_IDENT = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


def _facts_of(text: str, known: set[str]) -> set[str]:
    return {w for w in _IDENT.findall(text)}


def _check_phrasing(
    op: Operation, findings: Sequence[Finding], phrased: set[int], tools: set[str], known: set[str]
) -> tuple[str | None, Operation]:
    base = lesson_problem(
        op.text,
        tools=tools,
        known=known,
        instructions=prompts.INSTRUCTION_TEXTS,
        max_words=2 * MAX_EXPERIENCE_WORDS,
    )
    if base:
        return base, op
    why = "carries the facts of none of the group's findings"
    for i, f in enumerate(findings):
        if i in phrased:
            continue
        if all(names_tool(op.text or "", [x]) for x in f.facts):
            bad = lesson_problem(
                op.text, tools=tools, known=known, instructions=(), avoid=f.avoid, max_words=None
            )
            if bad:
                why = bad
                continue
            lost = lost_facts(f.text, op.text or "", tools)
            if lost:
                why = "drops facts of the finding it phrases: " + ", ".join(lost[:4])
                continue
            return None, attrs.evolve(
                op,
                domain=f.domain,
                facts=f.facts,
                detail={"finding": i, "kind": f.kind, "evidence": f},
            )
    return why, op


def data_compress(text: str, max_words: int = MAX_EXPERIENCE_WORDS) -> str:
    """Shorten a lesson without a model: drop parentheses and quoted detail, then clip."""
    t = re.sub(r"\s*\([^)]*\)", "", text)
    if word_count(t) > max_words:
        t = re.sub(r"'[^']*'", "an error", t)
    if word_count(t) > max_words:
        t = " ".join(t.split()[:max_words]).rstrip(",;:") + "."
    return t


def compress(
    model: TextModel | None, usage: ModelUsage, op: Operation, tools: set[str], known: set[str]
) -> Operation:
    """Stage 3's length enforcement for one operation's text."""
    text = op.text or ""
    skipped = usage.skip("compress") if model is not None else None
    if skipped:
        return attrs.evolve(op, text=data_compress(text), note=_join(op.note, skipped))
    if model is not None:
        out, err = usage.complete(model, prompts.compress_prompt(text), max_tokens=60, stop=("\n",))
        if out is not None:
            out = _clean_answer(out)
            problem = lesson_problem(
                out,
                tools=tools | set(op.facts[:1]),
                known=known | set(op.facts),
                instructions=prompts.INSTRUCTION_TEXTS,
                facts=op.facts,
                avoid=_avoid(op),
            )
            usage.verdict("compress", problem is None)
            if problem is None:
                return attrs.evolve(op, text=out, note=_join(op.note, "compressed by the model"))
            err = f"model compression rejected: {problem}"
        else:
            usage.verdict("compress", False)
        short = data_compress(text)
        return attrs.evolve(
            op,
            text=short,
            origin="fallback" if op.origin == "model" else op.origin,
            note=_join(op.note, err),
        )
    return attrs.evolve(
        op, text=data_compress(text), note=_join(op.note, "compressed from the data")
    )


def _join(a: str, b: str) -> str:
    return "; ".join(x for x in (a, b) if x)


def generalize(
    ops: Sequence[Operation], earlier: Callable[[Finding], int] | None = None
) -> list[Operation]:
    """Stage 3's first step: ADDs of one session that teach one lesson become one ADD.

    Groups often prove the same lesson for different tools (``cd`` before ``cat``,
    ``cp`` and ``mv``) or the same tool (look up ``symbol`` before ``place_order``, in
    three groups). Their findings are clustered as within a group
    (:func:`agentmem.learning.merge.clusters`) and each cluster becomes one ADD with
    the merged, data-derived text and the union of the facts, from the heaviest group.
    ADDs that merge with nothing keep their text (the model's phrasing included).
    """
    ops = list(ops)
    idx = [
        k
        for k, op in enumerate(ops)
        if op.kind == "ADD" and isinstance(op.detail.get("evidence"), Finding)
    ]
    found = [ops[k].detail["evidence"] for k in idx]
    replace: dict[int, Operation | None] = {}
    # Findings of different domains are different lessons, even about one tool: a shell
    # tool's git and test commands (agentmem.domains.step_domain) must not merge.
    by_domain: dict[str, list[int]] = {}
    for m, f in enumerate(found):
        by_domain.setdefault(f.domain, []).append(m)
    partitions = [
        (kind, [part[i] for i in members])
        for part in by_domain.values()
        for kind, members in clusters([found[m] for m in part])
    ]
    for kind, members in partitions:
        group = [ops[idx[m]] for m in members]
        merged = merge_cluster(kind, [found[m] for m in members])
        head = max(group, key=lambda op: op.weight)
        groups = sorted({op.group or "" for op in group} - {""})
        runs: dict[str, int] = {}  # each group's own support, for a relearn's fresh groups
        for m in members:
            g = ops[idx[m]].group or ""
            runs[g] = runs.get(g, 0) + int(found[m].support or 1)
        new = attrs.evolve(
            head,
            text=merged.text,
            facts=merged.facts,
            domain=merged.domain or head.domain,
            origin="data",
            note=_join(
                head.note, f"generalized from {len(group)} lessons of groups {', '.join(groups)}"
            ),
            detail={
                **head.detail,
                "kind": merged.kind,
                "evidence": merged,
                "merged_groups": groups,
                "group_support": {g: runs[g] for g in groups},
            },
        )
        for n, m in enumerate(members):
            replace[idx[m]] = new if n == 0 else None
    out: list[Operation] = []
    for k, op in enumerate(ops):
        if k in replace:
            if replace[k] is not None:
                out.append(replace[k])  # type: ignore[arg-type]
        else:
            out.append(op)
    return [op for op in out if repeated(op, earlier)]


def repeated(op: Operation, earlier: Callable[[Finding], int] | None = None) -> bool:
    """Whether an operation may stand as far as its slips go: a finding that teaches only
    when its slip repeats (``detail["repeats"]``: a tool's self-explaining error) needs
    two slips or more: in one run, in the session's runs merged, or in the library's
    runs (``earlier``: how many of its calls made that slip, earlier sessions' included).
    A one-off slip teaches nothing (issue 29)."""
    f = op.detail.get("evidence") if op.kind == "ADD" else None
    if not isinstance(f, Finding) or not f.detail.get("repeats"):
        return True
    slips = int(f.detail.get("slips") or 1)
    return slips >= 2 or (earlier is not None and earlier(f) >= 2)
