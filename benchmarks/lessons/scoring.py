"""Scoring rules of the BFCL lessons benchmark. Pure functions; no language model.

A *lesson* is a short text. A *cause* is one entry of ``reference.json`` written by
:mod:`benchmarks.lessons.generate` (``kind``, ``tool``, ``param``, ``prerequisite_tool``,
``right_tool``, ``recovery_tool``, ``wrong_param``, ``wrong_value``...). A *group* is the
list of trajectory records (dicts) of one BFCL task.

Reading a lesson
----------------
R1  Tokens. A token is a run of letters, digits and ``_``, which may also join such runs
    with ``.``, ``'``, ``/`` or ``-`` (``final_report.pdf``, ``don't``, ``12/15/2024``,
    ``0-1``). A trailing possessive ``'s`` is dropped (``fillFuelTank's`` -> ``fillFuelTank``).
    Clauses end at ``, ; : ! ?``, a dash between spaces or an em dash, and a ``.`` not
    inside a token (parentheses do not end a clause: ``cat(file='x') fails`` is one).
R2  Naming a tool. A lesson names tool T when a token equals T, ignoring case, or when T
    split into words (at ``_`` for snake_case, at case changes for camelCase) appears as
    consecutive tokens, ignoring case, if T has two words or more: ``liter to gallon`` names
    ``liter_to_gallon``, ``press brake pedal`` names ``pressBrakePedal``. So single-word
    tools that are also English words (``sort``, ``find``, ``comment``) are named by the word.
R3  Naming a parameter. A token equals the parameter name, ignoring case (``file_name``;
    ``file name`` does not count: a parameter is an identifier that must be typed exactly).
R4  Naming a bad value or bad name (what a planted mistake used). Strings match as the same
    consecutive tokens, case-sensitively (``'start'`` is not ``START``); numbers match a token
    with the same numeric value (``100`` = ``100.0``); booleans match ``true``/``false``
    ignoring case; lists and objects are never matched. A bad string or bad parameter name
    that is a plain lowercase or capitalised word (no digit, ``_``, ``.``, ``/`` and no
    inner capital, e.g. ``file``, ``start``, ``Economy``) only counts where it is written as
    an identifier: in quotes or backticks, or right before ``=``, ``:`` or ``(`` or right
    after ``=``. So "reading a file" never names the bad parameter ``file``.
R5  Negation. An occurrence is *negated before* when one of these cue words stands among
    the 3 tokens before it in the same clause: not, never, no, don't, dont, doesn't, isn't,
    aren't, shouldn't, mustn't, cannot, can't, avoid, avoiding, instead, rather, wrong,
    skip, skipping, omit, omitting, unnecessary, needn't; "need"/"necessary"/"needed"/
    "required" right after no/not/don't/doesn't is a cue too ("no need to call cd").
    "never/don't/do not" + "skip/omit/forget" cancel out (not a cue). An occurrence is
    *negated after* when one of fails, fail, failed, errors, error, wrong, invalid, rejected
    stands among the 2 tokens after it in the same clause.

addresses(lesson, cause)
------------------------
A1  The lesson names the cause's ``tool`` (R2): the tool of the failing call; for
    ``wrong_tool`` the wrong tool that was used.
A2  It names the required item, at least once *not negated before* (R5):
    ``param`` (R3) for ``wrong_param_value`` and ``wrong_param_name``;
    ``prerequisite_tool`` (R2) for ``missing_prerequisite``;
    ``right_tool`` (R2) for ``wrong_tool``;
    ``recovery_tool`` (R2) for ``no_recovery``.
A3  It is not contradicted: the bad item, when named (for ``wrong_tool`` it must be, by A1),
    has at least one occurrence negated (before or after, R5). Bad items:
    ``wrong_value`` (R4) for ``wrong_param_value``, ``wrong_param`` (R4) for
    ``wrong_param_name``, the wrong ``tool`` (R2) for ``wrong_tool``. So "use cp, not mv"
    does not address a cause whose fix is "use mv, not cp", nor does "skip cd" a missing
    ``cd``.
Vague lessons ("be careful with parameters") name no tool and never count.

is_true_of_group(lesson, group)  (precision)
--------------------------------------------
P1  True when the lesson addresses (A1-A3) a cause planted in the group (taken from the
    trajectories' ``meta.planted`` unless ``causes`` is given).
P2  Otherwise true when all of: (a) the tools it names (R2, among the group's tools,
    ``known_tools`` and the causes' tools; plus any identifier flagged by V3 as an
    unknown tool) all occur in the group's steps, and there is at least one; (b) for at
    least one named tool it names (R3) a parameter that some step of the group passes to
    that tool; (c) it does not reverse a planted cause of the group: it does not recommend
    the bad item (named with no negated occurrence, R4/R5) of a ``wrong_param_value`` or
    ``wrong_param_name`` cause while naming that cause's tool; it does not name both
    tools of a ``wrong_tool`` cause with the right one only negated and the wrong one not;
    it does not name a ``missing_prerequisite`` cause's tool and prerequisite with the
    prerequisite only negated.

violations(lesson, ...)
-----------------------
V1  ``too_long``: more than 32 words (whitespace-separated).
V2  ``copied_prompt``: 8 or more consecutive words (lowercased runs of letters/digits/'/_)
    identical to 8 consecutive words of one of ``prompt_texts``.
V3  ``invented_tool:NAME``: an identifier that looks like a tool call and is not a known
    tool: it is immediately followed by ``(`` (but not ``word(s)``), or it is snake_case
    (letters/digits joined by at least one ``_``). Not flagged: names in ``known_tools`` or
    ``known_identifiers`` (ignoring case; parameter names, enum values...), tokens holding a
    ``.`` (file names such as ``final_report.pdf``), and quoted ('x' or "x") tokens unless
    followed by ``(``. camelCase words are only flagged when followed by ``(``. Ordinary
    words are never flagged.
V4  ``near_duplicate``: the same text as another lesson of ``all_lessons`` (ignoring case
    and spacing), or, when an ``embed`` function is passed, cosine similarity above
    ``dup_threshold`` (default 0.9) with another lesson that names the same known tools
    (agentmem's own definition of a duplicate: lessons built on one template about
    different tools are close in embedding space and still different lessons).
    ``all_lessons`` may contain the lesson itself: one identical occurrence of it is left
    out before comparing.

score(...)
----------
``recovery``: share of causes addressed by at least one library lesson (``recovery_clean``:
by a lesson without violations; ``recovery_by_kind``: per kind). ``precision``: share of
lessons that are true (P1/P2) of at least one group (``None`` for an empty library).
``violations``: number of lessons with each violation type, ``lessons_with_violations``,
``library_size``, and per-lesson details.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "DEFAULT_DUP_THRESHOLD",
    "MAX_WORDS",
    "addresses",
    "contradicts",
    "is_true_of_group",
    "score",
    "violations",
]

MAX_WORDS = 32
COPY_RUN = 8
DEFAULT_DUP_THRESHOLD = 0.9
NEG_WINDOW_BEFORE = 3
NEG_WINDOW_AFTER = 2

Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]

_TOKEN = r"[A-Za-z0-9_]+(?:[.'’/-][A-Za-z0-9_]+)*"
_BREAK = r"[,;:!?]|\s[-–—]+\s|—|\.(?![A-Za-z0-9_])"
_LEXER = re.compile(rf"(?P<tok>{_TOKEN})|(?P<brk>{_BREAK})")
NEG_BEFORE = frozenset(
    [
        "not", "never", "no", "don't", "dont", "doesn't", "isn't", "aren't", "shouldn't",
        "mustn't", "cannot", "can't", "avoid", "avoiding", "instead", "rather", "wrong", "skip",
        "skipping", "omit", "omitting", "unnecessary", "needn't",
    ]
)  # fmt: skip
NEG_AFTER = frozenset(
    ["fails", "fail", "failed", "errors", "error", "wrong", "invalid", "rejected"]
)
_NEED = frozenset({"need", "necessary", "needed", "required"})
_NEED_NEG = frozenset({"no", "not", "don't", "dont", "doesn't"})
_SKIP = frozenset({"skip", "skipping", "omit", "omitting", "forget", "forgetting"})
_SKIP_NEG = frozenset({"never", "don't", "dont", "not"})


# --------------------------------------------------------------------------- lexing


class _Lesson:
    """Tokens of a lesson with their clause numbers, spans and negation cues."""

    def __init__(self, text: str):
        self.text = text
        self.toks: list[str] = []
        self.spans: list[tuple[int, int]] = []
        self.clause: list[int] = []
        clause = 0
        for m in _LEXER.finditer(text):
            if m.group("brk"):
                clause += 1
                continue
            tok = m.group("tok").replace("’", "'")
            end = m.end()
            if tok.lower().endswith("'s") and len(tok) > 2:
                tok = tok[:-2]
                end -= 2
            self.toks.append(tok)
            self.spans.append((m.start(), end))
            self.clause.append(clause)
        self.low = [t.lower() for t in self.toks]
        n = len(self.low)
        self.cue = [t in NEG_BEFORE for t in self.low]
        for k in range(1, n):
            if self.low[k] in _NEED and self.low[k - 1] in _NEED_NEG:
                self.cue[k] = True
            if self.low[k] in _SKIP and self.low[k - 1] in _SKIP_NEG:
                self.cue[k] = self.cue[k - 1] = False
            if k >= 2 and self.low[k] in _SKIP and self.low[k - 2 : k] == ["do", "not"]:
                self.cue[k] = self.cue[k - 1] = False

    def negated_before(self, pos: int) -> bool:
        c = self.clause[pos]
        for k in range(max(0, pos - NEG_WINDOW_BEFORE), pos):
            if self.clause[k] == c and self.cue[k]:
                return True
        return False

    def negated_after(self, pos: int, length: int = 1) -> bool:
        c = self.clause[pos]
        last = pos + length - 1
        for k in range(last + 1, min(len(self.toks), last + 1 + NEG_WINDOW_AFTER)):
            if self.clause[k] == c and self.low[k] in NEG_AFTER:
                return True
        return False

    def negated(self, pos: int, length: int = 1) -> bool:
        return self.negated_before(pos) or self.negated_after(pos, length)

    def find_seq(self, words: Sequence[str], *, case: bool = False) -> list[int]:
        if not words:
            return []
        seq = list(words) if case else [w.lower() for w in words]
        hay = self.toks if case else self.low
        n = len(seq)
        return [i for i in range(len(hay) - n + 1) if hay[i : i + n] == seq]

    def identifier_context(self, pos: int, length: int = 1) -> bool:
        """Is the occurrence written as an identifier (quoted, or next to = : ( )?"""
        start, end = self.spans[pos][0], self.spans[pos + length - 1][1]
        before = self.text[:start].rstrip(" ")
        after = self.text[end:].lstrip(" ")
        quotes = "'\"`‘’“”"
        if before[-1:] and before[-1] in quotes and after[:1] and after[0] in quotes:
            return True
        return after[:1] in ("=", ":", "(") or before[-1:] == "="


def _split_words(name: str) -> list[str]:
    parts = [p for p in re.split(r"_+", name) if p]
    words: list[str] = []
    for p in parts:
        words += re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", p) or [p]
    return words


def _tool_positions(les: _Lesson, tool: str) -> list[tuple[int, int]]:
    """(position, length) of each place the lesson names ``tool`` (R2)."""
    if not tool:
        return []
    found = [(i, 1) for i, t in enumerate(les.low) if t == tool.lower()]
    words = _split_words(tool)
    if len(words) >= 2:
        found += [(i, len(words)) for i in les.find_seq(words)]
    return sorted(set(found))


def _param_positions(les: _Lesson, param: str) -> list[tuple[int, int]]:
    if not param:
        return []
    return [(i, 1) for i, t in enumerate(les.low) if t == param.lower()]


def _plain_word(s: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z][a-z]*", s))


def _value_positions(les: _Lesson, value: Any, *, is_name: bool = False) -> list[tuple[int, int]]:
    """Places where the lesson names a bad value or bad parameter name (R4)."""
    if value is None or isinstance(value, (list, dict)):
        return []
    if isinstance(value, bool):
        word = "true" if value else "false"
        return [(i, 1) for i, t in enumerate(les.low) if t == word]
    if isinstance(value, (int, float)):
        out = []
        for i, t in enumerate(les.toks):
            try:
                if math.isclose(float(t), float(value)):
                    out.append((i, 1))
            except ValueError:
                pass
        return out
    text = str(value)
    if is_name:
        found = [(i, 1) for i, t in enumerate(les.toks) if t == text]
    else:
        words = [m.group(0) for m in re.finditer(_TOKEN, text)]
        found = [(i, len(words)) for i in les.find_seq(words, case=True)]
    if _plain_word(text):
        found = [(i, n) for i, n in found if les.identifier_context(i, n)]
    return found


# --------------------------------------------------------------------------- addresses

_REQUIRED = {
    "wrong_param_value": ("param", "param"),
    "wrong_param_name": ("param", "param"),
    "missing_prerequisite": ("prerequisite_tool", "tool"),
    "wrong_tool": ("right_tool", "tool"),
    "no_recovery": ("recovery_tool", "tool"),
}


def _bad_positions(les: _Lesson, cause: Mapping[str, Any]) -> list[tuple[int, int]]:
    kind = cause.get("kind")
    if kind == "wrong_param_value":
        return _value_positions(les, cause.get("wrong_value"))
    if kind == "wrong_param_name":
        return _value_positions(les, cause.get("wrong_param"), is_name=True)
    if kind == "wrong_tool":
        return _tool_positions(les, cause.get("tool") or "")
    return []


def _lesson(text: str | _Lesson) -> _Lesson:
    return text if isinstance(text, _Lesson) else _Lesson(text)


def addresses(lesson_text: str | _Lesson, cause: Mapping[str, Any]) -> bool:
    """Does the lesson carry the fix of this planted cause? (rules A1-A3 of the module doc)"""
    les = _lesson(lesson_text)
    kind = cause.get("kind")
    if kind not in _REQUIRED:
        return False
    if not _tool_positions(les, cause.get("tool") or ""):  # A1
        return False
    field, how = _REQUIRED[kind]
    item = cause.get(field) or ""
    pos = _param_positions(les, item) if how == "param" else _tool_positions(les, item)
    if not any(not les.negated_before(i) for i, _ in pos):  # A2
        return False
    bad = _bad_positions(les, cause)  # A3
    return not (bad and not any(les.negated(i, n) for i, n in bad))


def contradicts(lesson_text: str | _Lesson, cause: Mapping[str, Any]) -> bool:
    """Does the lesson recommend the reverse of a planted cause? (rule P2c)"""
    les = _lesson(lesson_text)
    kind = cause.get("kind")
    tool_named = bool(_tool_positions(les, cause.get("tool") or ""))
    if kind in ("wrong_param_value", "wrong_param_name"):
        bad = _bad_positions(les, cause)
        return tool_named and bool(bad) and not any(les.negated(i, n) for i, n in bad)
    if kind == "wrong_tool":
        right = _tool_positions(les, cause.get("right_tool") or "")
        wrong = _tool_positions(les, cause.get("tool") or "")
        return (
            bool(right)
            and bool(wrong)
            and all(les.negated(i, n) for i, n in right)
            and not any(les.negated(i, n) for i, n in wrong)
        )
    if kind == "missing_prerequisite":
        pre = _tool_positions(les, cause.get("prerequisite_tool") or "")
        return tool_named and bool(pre) and all(les.negated_before(i) for i, _ in pre)
    return False


# --------------------------------------------------------------------------- precision


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _steps(group: Iterable[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    for traj in group:
        yield from traj.get("steps") or []


def _planted(group: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    seen: dict[str, Mapping[str, Any]] = {}
    for traj in group:
        p = (traj.get("meta") or {}).get("planted")
        if p:
            seen.setdefault(str(p.get("id") or json.dumps(p, sort_keys=True)), p)
    return list(seen.values())


def is_true_of_group(
    lesson_text: str | _Lesson,
    group_trajectories: Sequence[Mapping[str, Any]],
    *,
    causes: Sequence[Mapping[str, Any]] | None = None,
    known_tools: Iterable[str] | None = None,
) -> bool:
    """Is the lesson acceptable for this group? (rules P1-P2 of the module doc)"""
    les = _lesson(lesson_text)
    group_causes = list(causes) if causes is not None else _planted(group_trajectories)
    if any(addresses(les, c) for c in group_causes):  # P1
        return True
    params_by_tool: dict[str, set[str]] = {}
    values: set[str] = set()
    for s in _steps(group_trajectories):
        params = s.get("params") or {}
        params_by_tool.setdefault(s["tool"], set()).update(params)
        values.update(x for v in params.values() for x in _strings(v))
    group_tools = set(params_by_tool)
    universe = (
        group_tools
        | set(known_tools or ())
        | {t for c in group_causes for t in (c.get("tool"), c.get("right_tool")) if t}
    )
    named = {t for t in universe if _tool_positions(les, t)}
    all_params = {p for ps in params_by_tool.values() for p in ps}
    named |= set(_invented(les, universe, all_params | values))
    if not named or not named <= group_tools:  # P2a
        return False
    if not any(  # P2b
        _param_positions(les, p) for t in named for p in params_by_tool.get(t, ())
    ):
        return False
    return not any(contradicts(les, c) for c in group_causes)  # P2c


# --------------------------------------------------------------------------- violations

_WORD = re.compile(r"[a-z0-9]+(?:['_][a-z0-9]+)*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*")
_SNAKE = re.compile(r"[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _invented(les: _Lesson, known_tools: Iterable[str], known_ids: Iterable[str]) -> list[str]:
    known = {t.lower() for t in known_tools} | {t.lower() for t in known_ids}
    text = les.text
    out: list[str] = []
    for m in _IDENT.finditer(text):
        name = m.group(0)
        if "." in name or name.lower() in known:
            continue
        after = text[m.end() :]
        call_like = after.startswith("(") and not re.match(r"\((?:s|es)\)", after)
        before = text[: m.start()][-1:]
        quoted = before in ("'", '"') and after[:1] in ("'", '"')
        if (call_like or (_SNAKE.fullmatch(name) and not quoted)) and name not in out:
            out.append(name)
    return out


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def _named_tools(text: str, tools: set[str]) -> frozenset[str]:
    """The known tools a lesson names (by whole word)."""
    return frozenset(w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text) if w in tools)


def violations(
    lesson_text: str,
    *,
    prompt_texts: Iterable[str] = (),
    known_tools: Iterable[str] = (),
    all_lessons: Sequence[str] = (),
    embed: Embed | None = None,
    dup_threshold: float | None = None,
    known_identifiers: Iterable[str] = (),
) -> list[str]:
    """Rule violations of one lesson (V1-V4 of the module doc), e.g. ``["too_long"]``."""
    out: list[str] = []
    n_words = len(lesson_text.split())
    if n_words > MAX_WORDS:  # V1
        out.append("too_long")
    words = _words(lesson_text)  # V2
    if len(words) >= COPY_RUN:
        grams = {tuple(words[i : i + COPY_RUN]) for i in range(len(words) - COPY_RUN + 1)}
        for prompt in prompt_texts:
            pw = _words(prompt)
            if any(tuple(pw[i : i + COPY_RUN]) in grams for i in range(len(pw) - COPY_RUN + 1)):
                out.append("copied_prompt")
                break
    for name in _invented(_Lesson(lesson_text), known_tools, known_identifiers):  # V3
        out.append(f"invented_tool:{name}")
    others = list(all_lessons)  # V4
    for k, other in enumerate(others):
        if other is lesson_text or other == lesson_text:
            del others[k]
            break
    dup = any(_norm(o) == _norm(lesson_text) for o in others)
    if not dup and embed is not None and others:
        threshold = DEFAULT_DUP_THRESHOLD if dup_threshold is None else dup_threshold
        tools = set(known_tools)
        mine = _named_tools(lesson_text, tools)
        vecs = embed([lesson_text, *others])
        dup = any(
            _cosine(vecs[0], v) > threshold and _named_tools(o, tools) == mine
            for o, v in zip(others, vecs[1:])
        )
    if dup:
        out.append("near_duplicate")
    return out


# --------------------------------------------------------------------------- score


def _groups(groups: Mapping[str, Sequence[Mapping]] | Iterable[Mapping]) -> dict[str, list]:
    if isinstance(groups, Mapping):
        return {str(k): list(v) for k, v in groups.items()}
    out: dict[str, list] = {}
    for traj in groups:
        out.setdefault(str(traj.get("group")), []).append(traj)
    return out


def _memo(embed: Embed) -> Embed:
    cache: dict[str, Sequence[float]] = {}

    def cached(texts: Sequence[str]) -> Sequence[Sequence[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in cache]
        if missing:
            cache.update(zip(missing, embed(missing), strict=True))
        return [cache[t] for t in texts]

    return cached


def score(
    library_texts: Sequence[str],
    causes: Sequence[Mapping[str, Any]],
    groups: Mapping[str, Sequence[Mapping]] | Iterable[Mapping],
    *,
    prompt_texts: Iterable[str] = (),
    known_tools: Iterable[str] | None = None,
    known_identifiers: Iterable[str] | None = None,
    embed: Embed | None = None,
    dup_threshold: float | None = None,
) -> dict[str, Any]:
    """Recovery, precision and violations of a lesson library (see the module doc).

    ``groups``: {group id: trajectories} or a flat iterable of trajectory records.
    ``known_tools`` defaults to the tools seen in the groups and causes;
    ``known_identifiers`` (never flagged as invented tools) defaults to the parameter names
    and string values seen in the groups.
    """
    by_group = _groups(groups)
    prompts = list(prompt_texts)
    tools = set(known_tools or ()) | {s["tool"] for g in by_group.values() for s in _steps(g)}
    tools |= {t for c in causes for t in (c.get("tool"), c.get("right_tool")) if t}
    idents = set(known_identifiers or ())
    for g in by_group.values():
        for s in _steps(g):
            params = s.get("params") or {}
            idents.update(params)
            idents.update(x for v in params.values() for x in _strings(v))
    emb = _memo(embed) if embed is not None else None
    texts = list(library_texts)
    lessons = [_Lesson(t) for t in texts]

    addressed: dict[str, list[int]] = {}
    for c in causes:
        cid = str(c.get("id"))
        addressed[cid] = [i for i, les in enumerate(lessons) if addresses(les, c)]
    details = []
    viol_counts: dict[str, int] = {}
    for i, (text, les) in enumerate(zip(texts, lessons, strict=True)):
        v = violations(
            text,
            prompt_texts=prompts,
            known_tools=tools,
            all_lessons=texts,
            embed=emb,
            dup_threshold=dup_threshold,
            known_identifiers=idents,
        )
        for kind in {x.split(":", 1)[0] for x in v}:
            viol_counts[kind] = viol_counts.get(kind, 0) + 1
        true_of = [
            gid for gid, g in by_group.items() if is_true_of_group(les, g, known_tools=tools)
        ]
        details.append(
            {
                "lesson": text,
                "addresses": [cid for cid, idx in addressed.items() if i in idx],
                "true_of_groups": true_of,
                "violations": v,
            }
        )
    clean = {i for i, d in enumerate(details) if not d["violations"]}
    n = len(causes)
    by_kind: dict[str, list[int]] = {}
    for c in causes:
        hit = bool(addressed[str(c.get("id"))])
        by_kind.setdefault(str(c.get("kind")), []).append(int(hit))
    acceptable = sum(1 for d in details if d["true_of_groups"] or d["addresses"])
    return {
        "library_size": len(texts),
        "causes": n,
        "recovered": sum(1 for idx in addressed.values() if idx),
        "recovery": (sum(1 for idx in addressed.values() if idx) / n) if n else None,
        "recovery_clean": (
            sum(1 for idx in addressed.values() if clean.intersection(idx)) / n if n else None
        ),
        "recovery_by_kind": {k: sum(v) / len(v) for k, v in sorted(by_kind.items())},
        "precision": acceptable / len(texts) if texts else None,
        "violations": dict(sorted(viol_counts.items())),
        "lessons_with_violations": len(texts) - len(clean),
        "lessons": details,
    }


def _main(argv: Sequence[str] | None = None) -> int:
    """Score a library (one lesson a line) against a generated benchmark folder."""
    import argparse
    from pathlib import Path

    ap = argparse.ArgumentParser(prog="python -m benchmarks.lessons.scoring")
    ap.add_argument("bench", type=Path, help="folder written by benchmarks.lessons.generate")
    ap.add_argument(
        "lessons", type=Path, nargs="?", help="one lesson a line (default: reference lessons)"
    )
    ap.add_argument("--details", action="store_true")
    args = ap.parse_args(argv)
    causes = json.loads((args.bench / "reference.json").read_text(encoding="utf-8"))
    with (args.bench / "trajectories.jsonl").open(encoding="utf-8") as f:
        trajs = [json.loads(line) for line in f if line.strip()]
    tools_file = args.bench / "tools.json"
    catalogue = json.loads(tools_file.read_text()) if tools_file.exists() else {}
    if args.lessons:
        lines = args.lessons.read_text(encoding="utf-8").splitlines()
        library = [x.strip() for x in lines if x.strip()]
    else:
        library = list(dict.fromkeys(c["reference_lesson"] for c in causes))
    result = score(
        library,
        causes,
        trajs,
        known_tools=set(catalogue),
        known_identifiers={p for v in catalogue.values() for p in v["params"]},
        prompt_texts={t["task"] for t in trajs},
    )
    if not args.details:
        result.pop("lessons")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
