"""The parts every redaction rule is made of: placeholders, names, values, the rule type."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import attrs

from ..errors import AgentMemError

#: Every placeholder starts with this; rules never match inside one.
PLACEHOLDER_PREFIX = "[REDACTED:"


def placeholder(kind: str) -> str:
    """The text that stands in for a secret of ``kind``: ``[REDACTED:kind]``."""
    return f"{PLACEHOLDER_PREFIX}{kind}]"


class InvalidPatternError(AgentMemError, ValueError):
    """A pattern given to :class:`Redactor` in ``extra_patterns`` is not a valid regex."""


# --------------------------------------------------------------------------- helpers

#: A function that, given a match on the haystack and the text, says what to replace:
#: ``(start, end, replacement)`` in the text, or ``None`` to leave the match alone.
_Handler = Callable[["re.Match[str]", str], "tuple[int, int, str] | None"]
#: ``check(match, text, value)``: whether a matched value should go; a string says so
#: and names the kind for this match.
_Check = Callable[["re.Match[str]", str, str], "bool | str"]

#: A value that is exactly a placeholder, optionally after an auth scheme word.
_PLACEHOLDER_VALUE = re.compile(r"(?:[A-Za-z]+[ \t]+)?\[REDACTED:[a-z0-9_]+\]")
#: Values that say "nothing here".
_EMPTY_WORDS = frozenset(
    {"null", "none", "nil", "true", "false", "undefined", "~", "...", "''", '""', "[]", "{}"}
)
#: Type names after ``name:`` (Python/TypeScript annotations), not values.
_TYPE_WORDS = frozenset(
    {"str", "string", "bytes", "int", "bool", "any", "object", "secretstr", "optional", "none"}
)
#: Words that follow ``--token`` in prose ("pass the --token flag").
_PROSE_AFTER_FLAG = frozenset(
    {"flag", "option", "argument", "parameter", "switch", "is", "and", "or", "to", "the"}
)
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_KEY_CHARS = _WORD_CHARS | frozenset(".-")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

#: A name (lower-cased) that ends in a secret word.
_SECRET_NAME = re.compile(
    r"(?:password|passwd|passphrase|passcode|secret|token|credentials?|sessionid|session_id"
    r"|secret_key_base|mnemonic|(?:pass|seed|recovery|mnemonic)[_-]?phrase"
    r"|(?:client|private)[_-]key[_-]data"
    r"|(?<![a-z])(?:pass|pwd|pw|auth|otp|jwt|psk)"
    r"|(?:api|access|secret|private|account|encryption|signing|master|auth|app|client"
    r"|consumer|subscription|license|session|shared|storage|webhook|deploy|application)"
    r"[_-]?key)$"
)
#: Names of language-model tokenizer settings (``eos_token``), not credentials.
_ML_TOKEN_NAME = re.compile(
    r"(?:^|[_.-])(?:bos|eos|pad|unk|mask|sep|cls|eot|start|end|special|chat|stop)[_-]?token$"
)
#: Names of a page's cursor in an API's answer (``nextPageToken``), not credentials.
_PAGE_TOKEN_NAME = re.compile(r"(?:page|next|prev|previous|continuation|pagination)[_-]?token$")
_PATH_VALUE = re.compile(r"(?:~|\.{1,2})?/[\w./-]*|[A-Za-z]:\\[\w.\\ -]*|[\w.-]+/[\w./-]*\.\w+")
_CODE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_CAMEL_HUMP = re.compile(r"[a-z][A-Z]")
#: What follows ``name:`` in a type annotation: ``Token``, ``_t.AuthType``, ``api.Key``
#: (also checked to be made of words).
_TYPE_NAME = re.compile(r"[A-Z_][A-Za-z_.]*|[a-z_]+\.[A-Za-z_.]+")
#: A type name with a number between its words: ``Uint8Array``, ``Float32Array``.
_NUMBERED_TYPE = re.compile(r"(?:[A-Z][a-z]+)+\d{1,3}(?:[A-Z][a-z]+)+")
_STRING_PREFIXES = frozenset({"f", "b", "r", "u", "rb", "br", "fr", "rf"})
#: Words and identifiers made of words: ``NextMarker``, ``self._token``, ``TOKEN_FLOAT``,
#: ``HTTPServer``; not base64 (``dXNlcjpwYXNz``: after the first, a word that does
#: not follow ``._-`` must have three letters). At any position at most one branch
#: matches, and at one length only, so a failing match cannot backtrack exponentially.
_WORD_ANY = r"(?:[A-Z]+(?=[A-Z][a-z])|[A-Z]+(?![A-Za-z])|[A-Z]?[a-z]+(?![a-z]))"
_WORD_3 = r"(?:[A-Z]{3,}(?=[A-Z][a-z])|[A-Z]{3,}(?![A-Za-z])|[A-Z][a-z]{2,}(?![a-z]))"
_WORDISH = re.compile(rf"[._-]*{_WORD_ANY}(?:[._-]+{_WORD_ANY}|{_WORD_3})*[._-]*")
_ALNUM_RE = re.compile(r"[^\W_]")
_PROSE_WORD = re.compile(r"[A-Za-z][a-z]*")
_LINE_KEY_PREFIX = re.compile(r"[ \t]*(?:-[ \t]+)?(?:export[ \t]+)?[\"']?")
#: What may stand before a command name: a line start, a separator or a quote.
_CMD_START = r"""(?:^|[\s;&|(`"'])"""
_LOGIN_CMD = re.compile(
    _CMD_START + r"(?:docker|podman|nerdctl|buildah|skopeo|oras|crane|cf|helm[ \t]+registry)"
    r"[ \t]+login\b"
    # any tool's login subcommand with its options: fly -t prod login -c URL -u admin -p
    r"|[ \t]login(?:[ \t]+-{1,2}[\w-]+(?:[ \t=]+[^\s-][^\s]*)?)*[ \t]+$"
)
_SSHPASS_CMD = re.compile(_CMD_START + r"sshpass[ \t]*$")
_MYSQL_CMD = re.compile(_CMD_START + r"mysql(?:dump|admin|sh)?\b")


def _fold(s: str) -> str:
    """``s`` lower-cased with every index kept.

    ``str.lower`` keeps them unless a character becomes two (``İ``): then only ASCII
    letters are lower-cased (``str.translate``, many times slower).
    """
    low = s.lower()
    return low if len(low) == len(s) else s.translate(_ASCII_LOWER)


def _is_placeholder_value(value: str) -> bool:
    return PLACEHOLDER_PREFIX in value and _PLACEHOLDER_VALUE.fullmatch(value) is not None


@functools.lru_cache(maxsize=4096)
def _is_secret_name(name: str) -> bool:
    """Whether a key or flag name says it holds a secret: it *ends* in a secret word.

    Cached: the rules ask it of every assignment their needle finds (``token = ...``,
    ``password: ...``), and a session's names repeat (three regexes each, else)."""
    n = name.lower()
    return (
        _SECRET_NAME.search(n) is not None
        and _ML_TOKEN_NAME.search(n) is None
        and _PAGE_TOKEN_NAME.search(n) is None
    )


def _kind_for_name(name: str) -> str:
    n = name.lower()
    if "pass" in n or "pwd" in n or n.endswith(("pw", "otp", "psk", "phrase", "mnemonic")):
        return "password"  # a passphrase, a wallet's seed phrase: words that unlock
    if n.endswith(("key-data", "key_data")):
        return "private_key"  # kubeconfig's client-key-data
    if "token" in n:
        return "token"
    if "api" in n:
        return "api_key"
    if "private" in n:
        return "private_key"
    return "secret"


def _key_start(s: str, i: int) -> int:
    """Walk left from ``i`` over name characters (letters, digits, ``_.-``); at most 128."""
    j = i
    low = max(0, i - 128)
    while j > low and s[j - 1] in _KEY_CHARS:
        j -= 1
    return j


def _line_start(s: str, i: int) -> int:
    """Where the line holding ``i`` starts (a literal ``\\n`` escape counts as a break).

    -1 when no line break is within 256 characters before ``i``.
    """
    low = max(0, i - 256)
    a = s.rfind("\n", low, i)
    b = s.rfind("\\n", low, i)
    if b > a:
        return b + 2
    if a >= 0:
        return a + 1
    return 0 if low == 0 else -1


def _looks_random(value: str) -> bool:
    """At least one digit and one letter: tells tokens from words."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _value_ok(value: str) -> bool:
    """Whether an assigned value is worth redacting: not empty, a reference or a path."""
    v = value.strip()
    if not v or v.lower() in _EMPTY_WORDS or _is_placeholder_value(v):
        return False
    if _ALNUM_RE.search(v) is None:  # ****, ---, **Password:** in Markdown
        return False
    if v.startswith(("$", "{{", "%", "<")):  # $VAR, ${VAR}, {{ template }}, %s, <your-token>
        return False
    if v[0] in "'`" and v.lstrip("'`").startswith(("$", "{{")):
        return False  # "'`${prefix}${n}`" in shell-quoted code: a template
    if v[0] == "{" and (v[-1] == "}" or "}" not in v):  # "{token}": a format string,
        return False  # or f"{creds["token"]}" cut at the quote inside its expression
    if v.startswith("arn:"):  # an AWS resource name
        return False
    if _VERSION.fullmatch(v):  # "jsonwebtoken": "^9.0.2" in package.json
        return False
    if v.split(".", 1)[0] in _CODE_ROOTS and _CODE_PATH.fullmatch(v):
        return False  # appSecret: process.env.APP_SECRET, key = settings.SECRET_KEY
    return len(v) > 1024 or ("/" not in v and "\\" not in v) or _PATH_VALUE.fullmatch(v) is None


#: A version or a version range: ``1.2.3``, ``^9.0.2``, ``>=2.0``.
_VERSION = re.compile(r"[\^~><=v]{0,2}\d{1,4}(?:\.\d{1,6}){1,3}(?:[-+][\w.]{1,32})?")
#: Where code reads a secret from (``process.env.X``): a reference, not a value.
_CODE_ROOTS = frozenset(
    {"process", "os", "env", "ENV", "import", "config", "settings", "environ", "Config"}
)
_CODE_PATH = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")
#: Values that documentation and examples put where a secret goes.
_PLACEHOLDER_WORD = re.compile(
    r"(?i)(?:x{3,}|\*{3,}|#{3,}|\.{3}|…|placeholder|redacted|\**(?:removed|masked|hidden)\**"
    r"|your[_-][\w-]+|<[^<>\n]*>|\[[^\[\]\n]*\]|sk-\.\.\.|\w+\.\.\.)"
)
#: A format placeholder: ``{error}``, ``{0}``, ``%s``, ``%(name)s``, ``${x}``.
_FORMAT_FIELD = re.compile(r"\{[A-Za-z_][A-Za-z_0-9.]*\}|\{\d?\}|%[sd]|%\([a-z_]+\)[sd]")
#: Words of a sentence about a secret: what a UI string or a message holds, not a secret.
_SECRET_WORDS = re.compile(
    r"(?i)password|passwort|token|secret|credential|key\b|passphrase|passcode|login"
    r"|密码|密碼|凭据|憑據|令牌|パスワード|비밀번호|пароль|contraseña|mot de passe|senha"
)
#: Names of a wallet's seed words (``MNEMONIC``, ``recovery_phrase``), not of a passphrase.
_SEED_NAME = re.compile(r"(?:mnemonic|(?:seed|recovery|mnemonic)[_-]?phrase)$")
_SEED_WORDS = re.compile(r"[a-z]{3,8}(?:[ \t]+[a-z]{3,8}){11,23}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _reads_as_text(name: str, kind: str, value: str) -> bool:
    """Whether a value under a secret-named key is a placeholder or text for people.

    A well-known placeholder (``changeme``, ``your_password``, ``xxxx``, ``<token>``),
    a template (``"Authentication error: {error}"``), and a phrase of several words
    that is about the secret or asks for it (``"Enter your cpolar password"``,
    ``"Store password securely?"``, ``"验证 cpolar 凭据"``): generated tokens and keys
    hold no spaces, and a passphrase neither names itself nor asks a question. A
    UUID under a session-id name is the id agent transcripts log (Claude Code's
    ``sessionId``), not a cookie.
    """
    v = value.strip()
    if _PLACEHOLDER_WORD.fullmatch(v):
        return True
    if _SEED_NAME.search(name.lower()) is not None:
        return _SEED_WORDS.fullmatch(v) is None  # a wallet's seed is 12 to 24 words
    if kind == "password" and v[-1:].isdigit():
        return False  # text for people does not end in a digit; a password may
    if (" " in v or not v.isascii()) and _FORMAT_FIELD.search(v):
        return True
    if "session" in name.lower() and (_UUID.fullmatch(v) or len(v) < 16):
        return True  # a session cookie is long and random; "abc123", "test-001" are ids
    words = v.split("-")
    if len(words) >= 5 and sum(w.isalpha() and w.islower() for w in words) >= 0.8 * len(words):
        return True  # "dev-only-secret-not-for-production-use-...": a sentence in kebab case
    if kind in ("authorization", "cookie"):
        return False  # "Bearer abc", "a=1; b=2": spaces are part of these
    if " " not in v:
        return not v.isascii() and not any(c.isdigit() for c in v) and "pass" in kind
    if kind != "password":
        return True  # a token, key or secret has no spaces
    return v.endswith(("?", "？", ":", "：", "...", "…", ".", "!")) or (
        _SECRET_WORDS.search(v) is not None
    )


def _inside_placeholder(s: str, i: int) -> bool:
    """Whether index ``i`` of ``s`` lies inside a ``[REDACTED:...]`` placeholder."""
    j = s.rfind(PLACEHOLDER_PREFIX, max(0, i - 64), i + len(PLACEHOLDER_PREFIX))
    if j < 0:
        return False
    # its end is at or after i (bounded searches: this runs once a match)
    return s.find("]", j, i) < 0 and s.find("]", i, j + 96) >= 0


def _left(lit: str, cls: str) -> str:
    """Regex for ``lit`` (fixed width) not preceded by a character in class ``cls``.

    The look-behind comes *after* the literal so that the regex engine still sees a
    literal prefix and searches for it fast, and so that a match can only start
    where a run of ``cls`` characters starts: that keeps every rule linear-time.
    """
    return f"{lit}(?<![{cls}]{lit})"


_WD = "A-Za-z0-9_-"  # word characters and '-'
_AN = "A-Za-z0-9"  # letters and digits


# --------------------------------------------------------------------------- rules


@attrs.frozen
class _Rule:
    """One regex of one kind of secret, and where to start running it.

    Every match starts with ``needle``, so the rule runs from the needle's first
    occurrence in the text (in the lower-cased text when ``fold``), and not at all
    when it has none. A ``fold`` rule's regex is written in lower case and runs on
    the lower-cased text: a case-insensitive regex cannot use the engine's fast
    literal search.
    """

    kind: str
    needle: str
    fold: bool
    run: Callable[[str, str, int], str]  # (text, haystack, start) -> text


def _scanner(rx: re.Pattern[str], handle: _Handler) -> Callable[[str, str, int], str]:
    def run(text: str, hay: str, start: int) -> str:
        parts: list[str] = []
        pos = 0
        for m in rx.finditer(hay, start):
            edit = handle(m, text)
            if edit is None:
                continue
            a, b, rep = edit
            if a < pos:
                continue
            parts.append(text[pos:a])
            parts.append(rep)
            pos = b
        if not parts:
            return text
        parts.append(text[pos:])
        return "".join(parts)

    return run


def _rule(
    kind: str,
    pattern: str,
    needle: str,
    *,
    fold: bool = False,
    groups: tuple[str, ...] = ("s",),
    check: _Check | None = None,
) -> _Rule:
    """A rule that replaces the first taking-part group of ``groups`` in each match.

    ``check`` may veto a match, or choose its kind by returning it.
    """
    rx = re.compile(pattern)
    fixed = placeholder(kind)

    def handle(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
        for name in groups:
            a, b = m.span(name)
            if a >= 0:
                break
        else:  # pragma: no cover - every pattern has one of its groups
            return None
        value = text[a:b]
        if not value or _inside_placeholder(text, a) or _is_placeholder_value(value):
            return None
        if check is None:
            return a, b, fixed
        verdict = check(m, text, value)
        if not verdict:
            return None
        return a, b, placeholder(verdict) if isinstance(verdict, str) else fixed

    return _Rule(kind, needle, fold, _scanner(rx, handle))
