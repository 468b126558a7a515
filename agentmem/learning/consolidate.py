"""Stage 3: batch consolidation of every group's operations into Omega*. Pure logic.

Three passes, as in the paper:

1. Conflict resolution: MODIFY, DELETE or MERGE operations from different groups
   on the same experience id: the one from the group with the higher mean |A|
   wins (ties: the earlier group); the others are rejected.
2. Deduplication: an ADD whose text has cosine > theta_dup with a live
   experience becomes a MODIFY of that experience; an ADD that duplicates
   another ADD of the same session is dropped in favour of the one with the
   higher weight (never a fact of another project: each project's fact is served in its
   own). ``theta_dup`` is calibrated per embedding model (the
   embedder's ``dup_threshold``), not fixed at 0.85: cosines are not
   comparable across models. Two texts are duplicates only when they also
   carry the same facts (:func:`same_facts`): lessons built on one template
   about different tools are close in embedding space and still different.
   Two ADDs of the session that are that close, carry different facts but
   name a parameter in common, come from a common group, and fit in 32 words
   together become one lesson (:func:`join`): the paper's "merge
   near-duplicates", kept to what loses neither lesson and stays true of one
   group's data. An ADD that says what a live lesson of its kind says but for the
   instance it was learned from (:func:`same_rule`: the same payload once quoted errors
   are masked, and, for a project's fact, the live lesson served in that project)
   becomes a MODIFY of it that keeps the live text: one lesson, its support summed.
3. Length enforcement: a text over 32 words goes through ``compress``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence

import attrs

from ..records import MAX_EXPERIENCE_WORDS, Operation, word_count
from .findings import Finding
from .merge import claim_facts, keeps_trigger, payload, trigger_of
from .validate import identifiers, lost_facts, names_tool

__all__ = ["Consolidated", "consolidate", "join", "same_facts", "same_rule"]

#: (text) -> [(experience id, cosine, text)] of live experiences, best first.
Similar = Callable[[str], Sequence[tuple[int, float, str]]]
#: (text, text) -> cosine.
Cosine = Callable[[str, str], float]
#: (operation) -> (new text or None when compression failed, reason/origin note).
Compress = Callable[[Operation], Operation]
#: (experience id) -> (the kind of its rule, or "" when unknown; the project it is served
#: in, or None when it is served anywhere).
About = Callable[[int], tuple[str, str | None]]


def same_rule(op: Operation, eid: int, text: str, about: About | None) -> bool:
    """Whether ADD ``op`` says what live lesson ``eid`` (``text``) says but for the instance
    it was learned from: the same :func:`~.merge.payload` (its quoted error masked, a clause
    that only tells how the instance failed left out; the error kept where it is the
    lesson's trigger, :func:`~.merge.keeps_trigger`), naming every fact its claim rests
    on (:func:`~.merge.claim_facts`) outside any quote, the same kind, and, for a project's
    fact, the live lesson served in that project. A rule of a tool or a fact of the machine
    holds anywhere; a project's fact never merges with another project's."""
    f = op.detail.get("evidence")
    d = getattr(f, "detail", None)
    if about is None or not op.text or not isinstance(d, dict):
        return False
    scope = d.get("scope")
    own = str(getattr(f, "kind", ""))
    trigger = keeps_trigger(own, op.text) or keeps_trigger(own, text)
    claim = payload(text, trigger)
    if scope not in ("tool", "machine", "project") or payload(op.text, trigger) != claim:
        return False
    if isinstance(f, Finding) and not all(names_tool(claim, [x]) for x in claim_facts(f)):
        return False  # a fact of the new lesson only its own quote names: another claim
    kind, project = about(eid)
    if kind != str(getattr(f, "kind", "")):
        return False
    return scope != "project" or (bool(d.get("project")) and project == d.get("project"))


def same_facts(a: Operation | str, b: Operation | str) -> bool:
    """Whether two lessons speak of the same tools and parameters.

    An operation's facts (the tool and parameter names its finding proved)
    must all be named by the other text, and the identifiers (snake_case
    names, ``name(`` calls) and the paths (``priv/static/assets/app.css``) of each
    text must be named by the other: two facts of one project about two of its
    files, or about a file and none, are two lessons however alike their words.
    """
    ta = a if isinstance(a, str) else a.text or ""
    tb = b if isinstance(b, str) else b.text or ""
    avoid = [_avoided(x) for x in (a, b)]
    if None not in avoid and avoid[0] != avoid[1]:
        return False  # "python missing: run python3" and "python3 missing: run python"
    for op, other in ((a, tb), (b, ta)):
        if isinstance(op, Operation) and not all(names_tool(other, [f]) for f in op.facts):
            return False
    return _names(ta) == _names(tb) and _same_paths(ta, tb)


def _lesson_paths(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The paths a lesson names: (whole ones, clipped ones' heads). A path clipped with
    ``...`` (``.specify/scripts/bash/check-prerequis...``, or at the end of a quoted error
    cut short) is known by its head only."""
    whole, heads = set(), set()
    for m in _PATH.finditer(text):
        x = m.group(0).rstrip("/")
        if x.lower() in {"and/or", "either/or", "i/o"}:
            continue
        if x.endswith("..."):
            heads.add(x[:-3])
        else:
            whole.add(x)
    return frozenset(whole), frozenset(heads)


def _same_paths(a: str, b: str) -> bool:
    """Whether two lessons name the same paths: the same whole paths, but for those of one
    that a clipped path of the other starts; each clipped path the head of a path of the
    other (or of a clipped one). Two texts that differ only in where a long path or a
    quoted error was cut are one lesson; two files of one project are two, and so are two
    errors naming two paths (``.git/index.lock`` of two projects)."""
    (wa, ha), (wb, hb) = _lesson_paths(a), _lesson_paths(b)
    if not (ha or hb):
        return wa == wb

    def covered(heads: frozenset[str], paths: frozenset[str]) -> bool:
        return all(any(p.startswith(h) or h.startswith(p) for p in paths) for h in heads)

    return (
        wa - wb <= {p for p in wa if any(p.startswith(h) for h in hb)}
        and wb - wa <= {p for p in wb if any(p.startswith(h) for h in ha)}
        and covered(ha, wb | hb)
        and covered(hb, wa | ha)
    )


def _avoided(x: Operation | str) -> frozenset[str] | None:
    """What an operation's evidence says to avoid (``detail["avoid"]`` of its finding), or
    None when it says nothing of it (a text, a model's operation)."""
    if isinstance(x, str):
        return None
    f = x.detail.get("evidence")
    said = getattr(f, "detail", {}).get("avoid") if f is not None else None
    return frozenset(str(v) for v in said) if isinstance(said, (list, tuple)) and said else None


#: A path in a lesson: words joined by ``/`` (``docs/notes.txt``, ``/usr/bin/env``), not a
#: quoted error's ``<placeholder>`` nor an ``and/or``.
_PATH = re.compile(r"(?<![\w<./-])(?:/?[\w.-]+/)+[\w.-]*")


def _names(text: str) -> frozenset[str]:
    """The identifiers a text names, lower-cased: two duplicates name the same ones."""
    return frozenset(x.lower() for x in identifiers(text))


def join(a: Operation, b: Operation, max_words: int = MAX_EXPERIENCE_WORDS) -> Operation | None:
    """One ADD saying both ``a`` and ``b`` ("A; b"), when they name a parameter in common
    (not only a tool: two lessons about one tool are two pieces of advice), stand on a
    common group's data and fit in ``max_words`` together; None otherwise."""
    if not a.text or not b.text or not (set(a.facts) & set(b.facts)) - _tools(a) - _tools(b):
        return None  # two lessons about one tool are two pieces of advice: kept apart
    if not _groups(a) & _groups(b):
        return None  # lessons of unrelated groups: each stays true of its own data
    first = a.text.rstrip()
    if first.endswith(".") and (not first.endswith("...") or first.endswith("....")):
        first = first[:-1]  # the sentence's full stop, not a "..." placeholder
    second = b.text.strip()
    head, _, rest = second.partition(" ")
    if head[:1].isupper() and head[1:].islower() and head.isalpha():
        second = head.lower() + (" " + rest if rest else "")
    text = f"{first}; {second}"
    if word_count(text) > max_words:
        return None
    return attrs.evolve(
        a,
        text=text,
        facts=tuple(dict.fromkeys((*a.facts, *b.facts))),
        weight=max(a.weight, b.weight),
        note="; ".join(
            x for x in (a.note, f"joined with a near-duplicate of group {b.group!r}") if x
        ),
        detail={**a.detail, "joined": b.detail.get("evidence")},
    )


def _tools(op: Operation) -> set[str]:
    """The tools an operation's lesson is about (its first fact, the finding's other tools)."""
    f = op.detail.get("evidence")
    out = set(op.facts[:1])
    if f is not None:
        d = f.detail
        out |= set(d.get("tools") or ()) | {d.get("helper"), d.get("source"), d.get("instead")}
        out |= {p["helper"] for p in d.get("parts") or ()}
        out |= {t for t, _ in d.get("pairs") or ()}
        if f.kind == "wrong_tool":
            out |= set(f.facts[:2])
    return {t for t in out if t}


def _place(op: Operation) -> str | None:
    """Where an ADD's lesson holds, for Stage 3's ADD-against-ADD checks: the project of a
    project's fact (its evidence's ``detail["project"]``; "" when it names none); the
    machine of a machine's fact whose run's machine is known (``detail["machine"]``: two
    team members' machines are two places); None for a tool's rule or a machine's fact of
    an unknown machine (they hold anywhere, and merge anywhere)."""
    d = getattr(op.detail.get("evidence"), "detail", None)
    if not isinstance(d, dict):
        return None
    machine = d.get("machine")
    if d.get("scope") == "machine" and isinstance(machine, str) and machine:
        return f"machine:{machine}"
    if d.get("scope") != "project":
        return None
    return str(d.get("project") or "")


def _home(op: Operation) -> str | None:
    """The project whose runs taught an ADD's fact (a machine's or a project's), or None
    for a rule that holds anywhere (a tool's, a global one) or an ADD with no evidence. A
    duplicate of another project is not folded into the lesson kept: its runs would move
    where a machine's fact is served (to the newest run's project)."""
    d = getattr(op.detail.get("evidence"), "detail", None)
    if not isinstance(d, dict) or d.get("scope") not in ("machine", "project"):
        return None
    return str(d.get("project") or "")


def _with_groups(kept: Operation, dup: Operation) -> Operation:
    """ADD ``kept`` standing also on the groups of ``dup``, which says the same
    (``merged_groups``: every group's runs are its support)."""
    groups = sorted(_groups(kept) | _groups(dup))
    if groups == sorted(_groups(kept)):
        return kept
    # the note lists them as a generalized lesson's does: what the journal's readers (the
    # lesson_runs query of agentmem browse) take a lesson's runs from
    listed = f" of groups {', '.join(groups)}"
    if " of groups " in kept.note:
        note = re.sub(r" of groups [^;]*", lambda _: listed, kept.note, count=1)
    else:
        note = "; ".join(x for x in (kept.note, f"the same lesson{listed}") if x)
    return attrs.evolve(kept, note=note, detail={**kept.detail, "merged_groups": groups})


def _groups(op: Operation) -> set[str]:
    """The groups whose data an operation stands on (several when generalized)."""
    return {op.group or ""} | set(op.detail.get("merged_groups") or ()) - {""}


@attrs.frozen
class Consolidated:
    """Omega*: the operations to apply, and the rejected ones with their reasons."""

    apply: tuple[Operation, ...]
    rejected: tuple[tuple[Operation, str], ...]


def _resolve_conflicts(
    ops: Sequence[Operation],
) -> tuple[list[Operation], list[tuple[Operation, str]]]:
    winner: dict[int, Operation] = {}
    for op in ops:
        if op.kind == "ADD":
            continue
        for t in op.targets:
            cur = winner.get(t)
            if cur is None or (op.weight > cur.weight and op.group != cur.group):
                winner[t] = op
    kept: list[Operation] = []
    rejected: list[tuple[Operation, str]] = []
    for op in ops:
        if op.kind == "ADD":
            kept.append(op)
            continue
        losers = [t for t in op.targets if winner[t] is not op]
        if losers:
            w = winner[losers[0]]
            rejected.append(
                (
                    op,
                    f"conflicts on experience {losers[0]} with group {w.group!r} "
                    f"(mean |A| {w.weight:.3f} > {op.weight:.3f})",
                )
            )
        else:
            kept.append(op)
    return kept, rejected


def _against_live(
    op: Operation, similar: Similar, threshold: float, about: About | None
) -> tuple[int, str, str, str] | None:
    """The live experience an ADD duplicates: (its id, the text the MODIFY writes, the
    note, how close), or None. A duplicate is close, names the same identifiers and keeps every fact
    of the lesson it would replace (its quoted error, its tools); failing that, a live
    lesson that says the same but for its instance (:func:`same_rule`) is one, and keeps
    its text."""
    said = op.text or ""
    near = similar(said)
    for e, c, text in near:
        if c > threshold and same_facts(op, text) and not lost_facts(text, said, op.facts):
            note = f"ADD turned MODIFY: cosine {c:.3f} > {threshold:.3f}"
            return e, said, note, f"cosine {c:.3f}"
    for e, _c, text in near:
        if same_rule(op, e, text, about):
            note = "ADD turned MODIFY: the same lesson, learned from another instance"
            return e, text, note, "the same lesson but for its instance"
    return None


def _duplicates(a: Operation, b: Operation) -> bool:
    """Whether ADD ``a`` says what the chosen ADD ``b`` says (:func:`same_facts`, and the
    same trigger where the quote is one: :func:`_same_trigger`)."""
    return same_facts(a, b) and _same_trigger(a, b)


def _same_trigger(a: Operation, b: Operation) -> bool:
    """Whether two ADDs answer the same error, where the error is a lesson's trigger
    (:func:`~.merge.keeps_trigger`: "If Edit fails with 'File has not been read yet'" and
    "... 'File has been modified since read'" are two rules of one tool, however close
    their words); elsewhere the quote is the instance and says nothing of sameness."""
    kinds = [str(getattr(x.detail.get("evidence"), "kind", "")) for x in (a, b)]
    ta, tb = a.text or "", b.text or ""
    if not any(keeps_trigger(k, t) for k in kinds for t in (ta, tb)):
        return True
    return trigger_of(ta) == trigger_of(tb)


def _against_library(
    ops: Sequence[Operation], similar: Similar, threshold: float, about: About | None
) -> tuple[list[Operation | None], list[int], list[tuple[Operation, str]]]:
    """Each ADD against the live library: one that a live lesson says already becomes a
    MODIFY of it (unless another operation changes that lesson). The operations (None for
    a rejected one), the indices of the ADDs that stay ADDs, and the rejections."""
    rejected: list[tuple[Operation, str]] = []
    touched = {t for op in ops if op.kind != "ADD" for t in op.targets}
    result: list[Operation | None] = list(ops)
    fresh: list[int] = []  # indices of ADDs that stay ADDs
    for i, op in enumerate(ops):
        if op.kind != "ADD" or not op.text:
            continue
        hit = _against_live(op, similar, threshold, about)
        if hit is None:
            fresh.append(i)
            continue
        target, text, note, how = hit
        if target in touched:
            rejected.append(
                (
                    op,
                    f"duplicates experience {target} ({how}), "
                    "which another operation already changes",
                )
            )
            result[i] = None
            continue
        touched.add(target)
        detail = {**op.detail, **({"instance": op.text} if text != op.text else {})}
        result[i] = attrs.evolve(
            op, kind="MODIFY", targets=(target,), text=text, note=note, detail=detail
        )
    return result, fresh, rejected


def _dedup(
    ops: Sequence[Operation],
    similar: Similar,
    cosine: Cosine,
    threshold: float,
    about: About | None = None,
) -> tuple[list[Operation], list[tuple[Operation, str]]]:
    result, fresh, rejected = _against_library(ops, similar, threshold, about)
    # ADD against ADD within the session: keep the one from the heavier group, or join
    # two close ones that share a fact. A duplicate names the same identifiers
    # (same_facts) and a join needs a group in common (join), so each ADD is compared
    # only with the chosen ADDs of its identifier set and of its groups, in the order
    # they were chosen: the same answers as comparing it with all of them.
    chosen: dict[int, Operation] = {}  # index -> its operation (joined, perhaps), in order
    rank: dict[int, int] = {}
    by_names: dict[frozenset[str], set[int]] = defaultdict(set)
    by_group: dict[str, set[int]] = defaultdict(set)
    for i in sorted(fresh, key=lambda j: (-ops[j].weight, j)):
        near = set(by_names.get(_names(ops[i].text or ""), ()))
        for g in _groups(ops[i]):
            near |= by_group.get(g, set())
        close = [
            j
            for j in sorted(near, key=rank.__getitem__)
            if cosine(ops[i].text or "", chosen[j].text or "") > threshold
        ]
        # a project's fact is another project's duplicate never: each is served in its own
        close = [j for j in close if _place(ops[i]) == _place(chosen[j])]
        dup = next((j for j in close if _duplicates(ops[i], chosen[j])), None)
        if dup is not None:
            # the same lesson, learned again in the same place: its runs count for the
            # one kept (support summed, as when findings merge), and it is written once
            if _home(ops[i]) == _home(chosen[dup]):
                chosen[dup] = result[dup] = _with_groups(chosen[dup], ops[i])
                for g in _groups(ops[i]):
                    by_group[g].add(dup)
            rejected.append(
                (ops[i], f"duplicates another ADD of this session (group {ops[dup].group!r})")
            )
            result[i] = None
            continue
        both = next(((j, one) for j in close if (one := join(chosen[j], ops[i])) is not None), None)
        if both is None:
            chosen[i] = ops[i]
            rank[i] = len(rank)
            by_names[_names(ops[i].text or "")].add(i)
            for g in _groups(ops[i]):
                by_group[g].add(i)
            continue
        j, joined = both
        by_names[_names(chosen[j].text or "")].discard(j)
        chosen[j] = result[j] = joined
        by_names[_names(joined.text or "")].add(j)
        for g in _groups(joined):
            by_group[g].add(j)
        rejected.append((ops[i], f"joined into the lesson of group {ops[j].group!r}"))
        result[i] = None
    return [op for op in result if op is not None], rejected


def consolidate(
    ops: Sequence[Operation],
    *,
    similar: Similar,
    cosine: Cosine,
    threshold: float,
    compress: Compress,
    max_words: int = MAX_EXPERIENCE_WORDS,
    about: About | None = None,
) -> Consolidated:
    """Omega* from the operations of every group of a session (``about``: each live
    experience's kind and project, for :func:`same_rule`; without it, no ADD is merged
    with a live lesson across instances)."""
    kept, rejected = _resolve_conflicts(ops)
    kept, rej2 = _dedup(kept, similar, cosine, threshold, about)
    rejected += rej2
    final: list[Operation] = []
    for op in kept:
        if op.text and word_count(op.text) > max_words:
            op = compress(op)
            if not op.text or word_count(op.text) > max_words:
                rejected.append((op, f"still over {max_words} words after compression"))
                continue
        final.append(op)
    return Consolidated(tuple(final), tuple(rejected))
