"""The :class:`Redactor`: the prefilter, the rules in order, custom patterns, JSON values."""

from __future__ import annotations

import bisect
import functools
import operator
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from .base import (
    PLACEHOLDER_PREFIX,
    InvalidPatternError,
    _fold,
    _inside_placeholder,
    _is_secret_name,
    _kind_for_name,
    _reads_as_text,
    _Rule,
    _value_ok,
    placeholder,
)
from .rules import _builtin_rules

_RARITY = "zqxjkvbpygfwmucldrhsnioate=9876543210:_./-"
#: Words that every secret-naming key contains (see is_secret_key): under such a key a
#: value is redacted whole, so the prefilter must never miss one.
_KEY_WORDS = (
    *("pass", "pwd", "pw", "auth", "secret", "token", "credential", "key", "cookie"),
    *("otp", "psk", "jwt", "sessionid", "session_id", "phrase", "mnemonic"),
)
#: Narrower prefilter shapes for needles that ordinary text is full of ("task" holds
#: "sk", "through" "gh", "global" "gl"): the lower-cased needle -> (anchor character,
#: regex after it), each the lower-cased start of every match of its rule: a Twilio key
#: is SK and 32 hex digits, a GitHub token ghp_..., a GitLab one glpat-..., a URL whose
#: slashes JSON escaped :\/\/...
_NARROW = {
    "sk": ("k", r"(?<=sk)[0-9a-f]{32}"),
    "gh": ("g", r"h[pousr]_"),
    "gl": ("g", r"l(?:pat|dt|rt|ptt|cbt|oas|ft|imt|soat|agent)-"),
    # a URL in JSON that escapes its slashes (https:\/\/), also inside a repr (\\/)
    ":": (":", r"\\+/\\+/"),
    "r8_": ("8", r"(?<=r8)_[a-z0-9]{37}"),  # a Replicate token, not every "r8"
}


def _rank(rank: dict[str, int], c: str) -> int:
    """How common ``c`` is (lower: rarer); a letter of another script is rarer than any."""
    if not c.isascii():
        return -1
    return rank.get(c, len(rank))


def _anchor_table(needles: Iterable[str]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """(anchor character -> the regexes after it, needle -> its anchor character).

    Each needle is anchored on its rarest character: ``token`` becomes ``k`` and
    ``(?<=tok)en``. A needle that contains another one is left out (the shorter finds
    the same texts) and gets the anchor of one it contains: where that anchor never
    matches, the longer needle does not occur either.
    """
    rank = {c: i for i, c in enumerate(_RARITY)}
    by_anchor: dict[str, list[str]] = {}
    anchor_of: dict[str, str] = {}
    unique = set(needles)
    literal = sorted({n for n in unique if n not in _NARROW}, key=lambda n: (len(n), n))
    for n in sorted(unique & set(_NARROW)):
        c, rest = _NARROW[n]
        by_anchor.setdefault(c, []).append(rest)
        anchor_of[n] = c
    kept: list[str] = []
    for n in literal:
        inner = next((m for m in kept if m in n), None)
        if inner is not None:
            anchor_of[n] = anchor_of[inner]
            continue
        kept.append(n)
        i = min(range(len(n)), key=lambda j: (_rank(rank, n[j]), j))
        behind = f"(?<={re.escape(n[: i + 1])})" if i else ""
        by_anchor.setdefault(n[i], []).append(behind + re.escape(n[i + 1 :]))
        anchor_of[n] = n[i]
    return by_anchor, anchor_of


def _anchored(needles: Iterable[str]) -> re.Pattern[str]:
    """One regex that finds any of ``needles`` (and the :data:`_NARROW` shapes of those
    listed there), each anchored on its rarest character (see :func:`_anchor_table`).

    The regex engine skips every position whose character is no needle's anchor (most
    of a text) with a quick set test and tries only the needles of that anchor,
    instead of trying every needle at every position.
    """
    by_anchor, _ = _anchor_table(needles)
    alts = [
        re.escape(c) + (f"(?:{'|'.join(rest)})" if len(rest) > 1 or rest[0] else "")
        for c, rest in sorted(by_anchor.items())
    ]
    return re.compile("|".join(alts) or "(?!)")


def _needles() -> list[str]:
    return [*(r.needle.lower() for r in _builtin_rules()), *_KEY_WORDS]


@functools.cache
def _prefilter() -> re.Pattern[str]:
    """The prefilter, run on the lower-cased text: every rule's needle (lower-cased) and
    every secret-key word. A text it finds nothing in holds nothing any rule finds and
    no secret-named key (see Redactor.needs)."""
    return _anchored(_needles())


@attrs.frozen
class _Presence:
    """Which rules a text can need, from the strings the prefilter matches in it.

    ``findall`` of the prefilter gives each match's text: an anchor and what follows it
    (``ken`` of ``token``). A rule may match where its needle occurs: its needle, or a
    needle it contains, was matched, or hid behind a match: a needle of the same anchor
    that agrees with the one matched around the anchor (the regex reports the first
    only), or one whose anchor lies inside a match (the next search starts after it).
    """

    #: a match's text -> the needles (numbers) it says may occur
    maybe: dict[str, frozenset[int]]
    #: an anchor -> every needle of it, for matches not in ``maybe`` (the narrow shapes)
    by_anchor: dict[str, frozenset[int]]
    #: each rule and the number of the needle that must occur for it to match
    rules: tuple[tuple[_Rule, int], ...]
    #: a needle's number -> the positions in :attr:`rules` of the rules that need it
    by_needle: dict[int, tuple[int, ...]] = attrs.Factory(dict)

    def to_run(self, present: Iterable[int]) -> list[tuple[_Rule, int]]:
        """The rules whose needle is in ``present``, in their order."""
        at = sorted(i for n in present for i in self.by_needle.get(n, ()))
        return [self.rules[i] for i in at]

    def needles(self, matches: Iterable[str]) -> set[int]:
        out: set[int] = set()
        for m in matches:
            found = self.maybe.get(m)
            if found is None:  # a narrow shape's match: all of its anchor, all inside it
                found = self.by_anchor.get(m[0], frozenset())
            out |= found
            for c in m[1:]:
                out |= self.by_anchor.get(c, frozenset())
        return out


def _agree(n1: str, i1: int, n2: str, i2: int) -> bool:
    """Whether two needles anchored at ``i1`` and ``i2`` can both match at one place."""
    a1, a2, b1, b2 = n1[:i1], n2[:i2], n1[i1 + 1 :], n2[i2 + 1 :]
    return (a1.endswith(a2) or a2.endswith(a1)) and (b1.startswith(b2) or b2.startswith(b1))


@functools.cache
def _presence() -> _Presence:
    """The table that turns the prefilter's matches into rules to run (:class:`_Presence`)."""
    needles = _needles()
    _, anchor_of = _anchor_table(needles)
    rank = {c: i for i, c in enumerate(_RARITY)}
    unique = set(needles)
    literal = sorted({n for n in unique if n not in _NARROW}, key=lambda n: (len(n), n))
    kept: list[str] = []
    for n in literal:
        if not any(m in n for m in kept):
            kept.append(n)
    minimal = [*sorted(unique & set(_NARROW)), *kept]
    number = {n: k for k, n in enumerate(minimal)}
    where = {n: min(range(len(n)), key=lambda j: (_rank(rank, n[j]), j)) for n in kept}
    by_anchor: dict[str, set[int]] = {}
    for n in minimal:
        by_anchor.setdefault(anchor_of[n], set()).add(number[n])
    maybe: dict[str, set[int]] = {}
    for n in kept:
        i, c = where[n], anchor_of[n]
        same = set()
        for k in minimal:
            if anchor_of[k] != c:
                continue
            if k in _NARROW or _agree(k, where[k], n, i):
                same.add(number[k])
        maybe.setdefault(n[i:], set()).update(same)
    inner = {n: next((m for m in kept if m in n), n) for n in literal}
    rules = []
    for r in _builtin_rules():
        n = r.needle.lower()
        rules.append((r, number[n if n in _NARROW else inner[n]]))
    by_needle: dict[int, list[int]] = {}
    for at, (_, needle) in enumerate(rules):
        by_needle.setdefault(needle, []).append(at)
    return _Presence(
        {k: frozenset(v) for k, v in maybe.items()},
        {k: frozenset(v) for k, v in by_anchor.items()},
        tuple(rules),
        {k: tuple(v) for k, v in by_needle.items()},
    )


_FIRST = operator.itemgetter(0)
#: Each narrow needle's literals, the automaton's patterns for its shape (:data:`_NARROW`):
#: every match of the shape holds one of them, with the shape's anchor character where the
#: match starts (``sk`` and a hex digit; ``ghp_``, ``gho_``, ...; ``:\`` of ``:\/\/``).
#: A literal is no needle: the shape is matched where it occurs (rarely: ``sk`` alone is in
#: every ``task``, ``sk`` and a hex digit seldom), so no regex reads a whole text for it.
_NARROW_LITERALS = {
    "sk": tuple(f"sk{c}" for c in "0123456789abcdef"),
    "gh": tuple(f"gh{c}_" for c in "pousr"),
    "gl": tuple(
        f"gl{w}-" for w in ("pat", "dt", "rt", "ptt", "cbt", "oas", "ft", "imt", "soat", "agent")
    ),
    ":": (":\\",),
    "r8_": ("r8_",),
}


@attrs.frozen
class _Automaton:
    """The rules whose needle occurs in a text, exactly, from one pass of an Aho-Corasick
    automaton (``ahocorasick_rs``, a compiled extension) instead of the prefilter regex.

    Python's ``re`` tries the prefilter's alternatives at every position whose character
    is some needle's anchor (a third of a tool output's characters); the automaton reads
    each character once, about ten times as fast on real sessions. Its patterns are
    every rule's own needle (and every secret-key word), not only the shortest ones, and
    it reports every occurrence (overlapping matches), so no needle hides behind another
    and a rule runs only where its own needle occurs (``api_key`` is not searched for
    wherever ``key`` occurs). A narrow needle (``sk``, ``gh``, ...) is no pattern
    (``:`` and ``sk`` are everywhere): its rules run where its shape (:data:`_NARROW`)
    occurs, as with the regex; the automaton finds the shape's literals
    (:data:`_NARROW_LITERALS`), and the shape is matched only where one occurs.
    """

    #: the automaton of every needle but the narrow ones, and of the narrow ones' literals
    automaton: Any
    #: the automaton's pattern number -> the positions in ``_Presence.rules`` of its rules
    rules_of: tuple[tuple[int, ...], ...]
    #: the pattern number -> whether it is a needle (else only a narrow needle's literal)
    needle: tuple[bool, ...]
    #: the pattern number -> the shapes it may start: (shape, where the shape's match
    #: starts in the literal, the positions of the narrow needle's rules)
    checks_of: tuple[tuple[tuple[re.Pattern[str], int, tuple[int, ...]], ...], ...]
    #: the numbers of the narrow needles' literals
    literals: frozenset[int]

    def rules_for(self, folded: str) -> list[int]:
        """The positions in ``_Presence.rules`` of the rules whose needle occurs in
        ``folded`` (a lower-cased text), in order."""
        rules_of = self.rules_of
        matches = self.automaton.find_matches_as_indexes(folded, overlapping=True)
        found = set(map(_FIRST, matches))
        at = [i for k in found for i in rules_of[k]]
        if not self.literals.isdisjoint(found):
            at += self._shaped(folded, matches)
        at.sort()
        return at

    def _shaped(self, folded: str, matches: list[tuple[int, int, int]]) -> list[int]:
        """The rules of the narrow needles whose shape occurs at one of ``matches``."""
        out: list[int] = []
        done: set[int] = set()
        checks_of = self.checks_of
        for k, start, _ in matches:
            for shape, offset, rules in checks_of[k]:
                if id(shape) not in done and shape.match(folded, start + offset) is not None:
                    done.add(id(shape))
                    out += rules
        return out

    def starts(self, folded: str) -> Iterator[int]:
        """Where needles occur in ``folded`` (every occurrence, a narrow needle's where its
        shape does)."""
        needle, checks_of = self.needle, self.checks_of
        for k, start, _ in self.automaton.find_matches_as_indexes(folded, overlapping=True):
            if needle[k] or any(
                shape.match(folded, start + offset) is not None for shape, offset, _ in checks_of[k]
            ):
                yield start


@functools.cache
def _automaton() -> _Automaton | None:
    """The :class:`_Automaton` of the built-in rules; None when ``ahocorasick_rs`` is not
    installed (the prefilter regex then does its work, with the same results)."""
    try:
        import ahocorasick_rs
    except ImportError:
        return None
    rules = _presence().rules
    needles = {n for n in _needles() if n not in _NARROW}
    literal_of: dict[str, list[str]] = {}
    for n, literals in _NARROW_LITERALS.items():
        for lit in literals:
            literal_of.setdefault(lit, []).append(n)
    patterns = sorted(needles | set(literal_of))
    number = {n: k for k, n in enumerate(patterns)}
    rules_of: list[list[int]] = [[] for _ in patterns]
    narrow: dict[str, list[int]] = {n: [] for n in _NARROW}
    for at, (rule, _) in enumerate(rules):
        n = rule.needle.lower()
        (narrow[n] if n in _NARROW else rules_of[number[n]]).append(at)
    shape = {n: re.compile(re.escape(c) + rest) for n, (c, rest) in _NARROW.items()}
    checks_of = tuple(
        tuple(
            (shape[n], p.index(_NARROW[n][0]), tuple(narrow[n]))
            for n in sorted(literal_of.get(p, ()))
        )
        for p in patterns
    )
    # a DFA: built once (a few milliseconds for these 240 short patterns), and the fastest
    # to run (about 1.7 times the default's speed on real outputs)
    automaton = ahocorasick_rs.AhoCorasick(
        patterns, implementation=ahocorasick_rs.Implementation.DFA
    )
    return _Automaton(
        automaton,
        tuple(map(tuple, rules_of)),
        tuple(p in needles for p in patterns),
        checks_of,
        frozenset(number[p] for p in literal_of),
    )


def _to_run(folded: str) -> list[tuple[_Rule, int]]:
    """The rules that may match in ``folded`` (a lower-cased text), in their order: those
    whose own needle occurs with the automaton; without it, those whose shortest needle
    the prefilter regex finds (more, never fewer)."""
    presence = _presence()
    automaton = _automaton()
    if automaton is not None:
        rules = presence.rules
        return [rules[i] for i in automaton.rules_for(folded)]
    matches = _prefilter().findall(folded)
    return presence.to_run(presence.needles(set(matches))) if matches else []


# --------------------------------------------------------------------------- JSON keys


@functools.lru_cache(maxsize=4096)
def is_secret_key(name: str) -> bool:
    """Whether a mapping key names a secret (``password``, ``GITHUB_TOKEN``, ``apiKey`` ...).

    The name must *end* in a secret word, so ``max_tokens``, ``token_count`` and
    ``password_hint`` are not secret; tokenizer settings such as ``eos_token`` are
    not either. ``Authorization`` and ``Cookie`` (headers) are.
    """
    n = name.lower()
    return _is_secret_name(n) or n.endswith(("authorization", "cookie"))


def _kind_for_key(name: str) -> str:
    n = name.lower()
    if n.endswith("authorization"):
        return "authorization"
    if n.endswith("cookie"):
        return "cookie"
    return _kind_for_name(n)


# --------------------------------------------------------------------------- Redactor


def _to_patterns(value: Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(value)


@functools.lru_cache(maxsize=64)
def _compile_custom(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for p in patterns:
        try:
            compiled.append(re.compile(p))
        except re.error as e:
            raise InvalidPatternError(
                f"extra pattern {p!r} is not a valid regular expression: {e}"
            ) from e
    return tuple(compiled)


def _validate_patterns(_inst: object, _attr: object, value: tuple[str, ...]) -> None:
    for p in value:
        if not isinstance(p, str):
            raise InvalidPatternError(f"extra pattern {p!r} must be a string")
    _compile_custom(value)


def _custom_apply(rx: re.Pattern[str], s: str) -> str:
    ph = placeholder("custom")
    use_group = "secret" in rx.groupindex

    def repl(m: re.Match[str]) -> str:
        whole = m.group(0)
        a, b = m.span("secret") if use_group else m.span()
        if a < 0 or a == b:  # the group did not take part, or an empty match
            return whole
        if PLACEHOLDER_PREFIX in s[a:b] or _inside_placeholder(s, a):
            return whole
        if _inside_placeholder(s, b - 1):
            return whole
        start = m.start()
        return whole[: a - start] + ph + whole[b - start :]

    return rx.sub(repl, s)


@attrs.frozen(cache_hash=True)  # hashed for every dict key (see _key_text)
class Redactor:
    """Takes secrets out of text and JSON-like values; see the module docstring for the rules.

    ``enabled=False`` makes both methods the identity (for a user who has decided
    that their store never leaves the machine). ``extra_patterns`` are regular
    expressions for secrets of the user's own shapes; each match becomes
    ``[REDACTED:custom]``, or only the part in a group named ``secret`` when the
    pattern has one (``r"corp_id=(?P<secret>\\w+)"`` keeps ``corp_id=``). Custom
    patterns run before the built-in ones; they must be linear-time and should
    not match inside ``[REDACTED:...]``.
    """

    enabled: bool = True
    extra_patterns: tuple[str, ...] = attrs.field(
        default=(), converter=_to_patterns, validator=_validate_patterns
    )

    def text(self, text: str) -> str:
        """``text`` with every recognised secret replaced by ``[REDACTED:kind]``.

        Idempotent: redacting the result again changes nothing. Never raises on
        any ``str``.
        """
        if not self.enabled or not text:
            return text
        out = text
        if self.extra_patterns:
            for rx in _compile_custom(self.extra_patterns):
                out = _custom_apply(rx, out)
        folded = _fold(out)
        to_run = _to_run(folded)
        if not to_run:
            return out  # no rule's needle occurs: the common case, one quick scan
        lowered: str | None = folded  # _fold(out), while out is unchanged
        # the rules whose needle occurs, in order (a placeholder never adds a needle)
        for rule, _ in to_run:
            if rule.fold:
                if lowered is None:
                    lowered = _fold(out)
                hay = lowered
            else:
                hay = out
            start = hay.find(rule.needle)
            if start >= 0:
                new = rule.run(out, hay, start)
                if new is not out:
                    out = new
                    lowered = None
        return out

    def needs(self, text: str) -> bool:
        """Whether redaction might change ``text``: False means :meth:`text` returns it
        as it is, and :meth:`value` returns as it is any value whose keys and strings
        all occur in ``text`` (a ``repr`` or the JSON of it, for example).

        One quick scan of the lower-cased text for the literal start of every rule
        and the words of every secret-naming key (:func:`is_secret_key`); True with
        custom patterns, which can match anything.
        """
        return self.needing([text])[0]

    def needing(self, texts: Sequence[str]) -> list[bool]:
        """:meth:`needs` of each of ``texts``, in one scan of them all.

        The texts are lower-cased each on its own (``str.lower``, which may lengthen a
        text: ``İ`` becomes two characters; no index into the text is kept, so nothing
        is lost), which finds every needle that :meth:`text`'s own scan of any one of
        them finds, and joined by a NUL, which no needle holds.
        """
        if not self.enabled:
            return [False] * len(texts)
        if self.extra_patterns:
            return [bool(t) for t in texts]
        lowered = [t.lower() for t in texts]
        starts, at = [], 0
        for t in lowered:
            starts.append(at)
            at += len(t) + 1
        joined = "\x00".join(lowered)
        flags = [False] * len(texts)
        automaton = _automaton()
        found = (
            (m.start() for m in _prefilter().finditer(joined))
            if automaton is None
            else automaton.starts(joined)
        )
        lo = hi = 0  # the part the last needle fell in: [lo, hi) of joined
        for where in found:
            if lo <= where < hi:
                continue
            part = bisect.bisect_right(starts, where) - 1
            flags[part] = True
            lo, hi = starts[part], starts[part] + len(lowered[part])
        return flags

    def value(self, value: Any, *, keep: bool = False) -> Any:
        """A copy of a JSON-like ``value`` with secrets redacted.

        Strings are redacted with :meth:`text`, dict keys included; lists, tuples
        and dicts are walked (into new lists, tuples and dicts). Under a key that
        names a secret (see :func:`is_secret_key`), at any depth, every string and
        number is replaced whole by ``[REDACTED:kind]``, except what says there is
        no secret: ``None``, booleans, empty strings, ``null``, references such as
        ``$DB_PASSWORD`` or ``{{ token }}``, and file paths. Other values (numbers
        elsewhere, ``None``, other objects) are returned as they are.

        ``keep``: a list, tuple or dict in which nothing changes is returned itself, not
        a copy (what a caller that stores the value, and never changes it, can use to
        tell that redaction changed nothing: ``result is value``).
        """
        if not self.enabled:
            return value
        return self._walk(value, None, "", keep)

    def _walk(self, value: Any, secret_kind: str | None, name: str, keep: bool) -> Any:
        # The concrete types first: isinstance(x, Mapping) is an ABC check, and tool
        # parameters are mostly strings, numbers and plain dicts. ``name``: the key
        # that named the secret.
        if isinstance(value, str):
            if (
                secret_kind is not None
                and _value_ok(value)
                and not _reads_as_text(name, secret_kind, value)
            ):
                return placeholder(secret_kind)
            return self.text(value)
        if isinstance(value, (int, float)) or value is None:
            if secret_kind is not None and value is not None and not isinstance(value, bool):
                return placeholder(secret_kind)
            return value
        if isinstance(value, list):
            items = [self._walk(v, secret_kind, name, keep) for v in value]
            return value if keep and all(map(operator.is_, items, value)) else items
        if isinstance(value, tuple):
            got = tuple(self._walk(v, secret_kind, name, keep) for v in value)
            return value if keep and all(map(operator.is_, got, value)) else got
        if type(value) is dict or isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            same = keep and type(value) is dict  # (another mapping becomes a dict)
            k8s_secret = value.get("kind") == "Secret"  # every value of its data is secret
            for k, v in value.items():
                kind, key_name, key = secret_kind, name, k
                if isinstance(k, str):
                    if kind is None and is_secret_key(k):
                        kind, key_name = _kind_for_key(k), k
                    elif kind is None and k8s_secret and k in ("data", "stringData"):
                        kind, key_name = "secret", k
                    key = _key_text(self, k)
                new = self._walk(v, kind, key_name, keep)
                if same and (new is not v or key != k):
                    same = False
                out[key] = new
            return value if same else out
        return value


@functools.lru_cache(maxsize=4096)
def _key_text(redactor: Redactor, key: str) -> str:
    """Dict keys repeat in every call of a tool: redact each once."""
    return redactor.text(key)


#: The redactor agentmem uses unless told otherwise: built-in rules only.
DEFAULT_REDACTOR = Redactor()


def redact(text: str) -> str:
    """``text`` with every recognised secret replaced by ``[REDACTED:kind]``.

    >>> redact("export GITHUB_TOKEN=ghp_" + "A1b2" * 9)
    'export GITHUB_TOKEN=[REDACTED:github_token]'
    """
    return DEFAULT_REDACTOR.text(text)


def redact_value(value: object) -> object:
    """A copy of a JSON-like value (dicts, lists, strings) with secrets redacted.

    >>> redact_value({"user": "ann", "password": "hunter2", "n": 3})
    {'user': 'ann', 'password': '[REDACTED:password]', 'n': 3}
    """
    return DEFAULT_REDACTOR.value(value)
