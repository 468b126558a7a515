"""Secret redaction: take API keys, tokens, passwords and private keys out of trajectories.

Coding-agent trajectories carry credentials: ``export GITHUB_TOKEN=ghp_...`` in a
shell command, ``"password": "..."`` in a config file the agent read, a
``postgres://user:pass@host`` URL in a stack trace. Everything agentmem stores or
sends to a model goes through :func:`redact` (for text) or :func:`redact_value`
(for JSON-like parameters) first.

A secret is replaced by a placeholder that keeps its kind, such as
``[REDACTED:aws_access_key]``, so a lesson can still say "an AWS key was passed".
Where the secret sits in a ``key=value`` assignment, a header or a URL, only the
value goes: ``DB_PASSWORD=[REDACTED:password]``,
``Authorization: Bearer [REDACTED:bearer_token]``,
``postgres://app:[REDACTED:url_password]@db/app``.

What is recognised (the ``kind`` in the placeholder):

* by shape, anywhere: ``private_key`` (PEM blocks, also cut-off ones), ``jwt``,
  ``aws_access_key`` (AKIA/ASIA/ABIA/ACCA ids), ``github_token`` (ghp_, gho_, ghu_,
  ghs_, ghr_, github_pat_), ``gitlab_token`` (glpat- and friends),
  ``slack_token`` (xoxb-, xoxp-, ..., xapp-), ``slack_webhook``,
  ``discord_webhook``, ``stripe_key`` (sk_/rk_ live and test, whsec_),
  ``anthropic_api_key`` (sk-ant-), ``openai_api_key`` (sk-, sk-proj-, ...),
  ``google_api_key`` (AIza), ``google_client_secret`` (GOCSPX-),
  ``google_oauth_token`` (ya29.), ``npm_token`` (npm_), ``huggingface_token``
  (hf_), ``twilio_api_key`` (SK + 32 hex), ``sendgrid_api_key`` (SG.x.y),
  ``pypi_token`` (pypi-AgE...), ``docker_token`` (dckr_pat_), ``azure_sas``
  (``sig=`` in a URL query);
* by context: ``aws_secret_key`` (40 characters after
  ``aws_secret_access_key``/``SecretAccessKey``), ``url_password``
  (``scheme://user:PASS@host``), ``bearer_token``/``basic_auth``/
  ``authorization`` (``Authorization:`` headers and ``Bearer ...``), ``cookie``
  (``Cookie:``/``Set-Cookie:`` headers), ``password`` for ``curl -u user:PASS``,
  ``docker login -p``, ``sshpass -p``, ``mysql -pPASS``, and the value of any
  assignment or command-line flag whose name ends in a secret word:
  ``password``/``passwd``/``pwd``/``pass``/``passphrase`` (kind ``password``),
  ``token`` (``token``), ``api_key``/``apikey`` (``api_key``), ``private_key``
  (``private_key``), ``secret``, ``client_secret``, ``access_key``,
  ``secret_key``, ``account_key``, ``credentials``, ``auth`` ... (``secret``),
  written ``key=value``, ``key: value``, ``"key": "value"``, ``key => value``,
  ``key := value``, ``--key=value`` or ``--key value``;
* ``custom``: the patterns given to :class:`Redactor` as ``extra_patterns``.

What is *not* touched: git SHAs, UUIDs, checksums, base64 data, file paths,
URLs without credentials, public keys and certificates, and secret words used in
prose or in other names (``max_tokens: 128``, ``token_count=512``,
``secret_santa.py``, ``password: ""``, ``eos_token: "</s>"``). A high-entropy
string is only redacted in a secret-named context. In such a context some values
are kept because code and configuration are full of them: references
(``$TOKEN``, ``${{ secrets.X }}``, ``{{ .Values.pw }}``, ``%s``, ``<your-key>``),
paths, ``None``/``null``/booleans, calls and subscripts (``token = get_token()``,
``os.environ["PW"]``), type annotations (``password: str``), the name itself
(``self.token = token``), names in code (``password = credentials``) and, except
under a password name, words and identifiers without digits (``"input_token":
"NextToken"``, ``token = TOKEN_FLOAT``) and short numbers (``token: 42``).

What is *not* protected (a safety net, not a guarantee):

* a secret with no known shape outside a secret-named context: a bare 40-character
  AWS secret key, a Twilio auth token or a password on a line of its own, a
  password piped in (``echo hunter2 | docker login --password-stdin``),
  positional passwords (``htpasswd -b file user hunter2``);
* values under names that do not say secret: ``DB_URL_2=...`` without
  ``user:pass@``, a Kubernetes Secret's custom ``data:`` keys, ``.pgpass`` lines,
  ``<password>`` in XML;
* values the rules above keep on purpose: a word-only (no digit) value under a
  token/secret/key name (``SECRET_KEY=changeme``), a password that reads as a
  name in code (``password = hunter``, with spaces around ``=``) or as a
  capitalised type after ``password:``, prose-looking quoted values of five
  or more words, a value computed in code (``token = os.getenv("T", "dflt")``
  keeps ``"dflt"``);
* parts of values: YAML block scalars (``password: |`` and the lines after), the
  tail of a value after a comma, ``;`` or ``&`` when unquoted, or after a doubly
  escaped quote inside a quoted one;
* anything a custom shape would need: internal token formats, session ids in
  URLs, secrets split across lines or encoded (base64 of a whole ``.env`` file).

Speed: every rule starts with a literal (searched for fast by the regex engine,
and first with ``str.find``), can only start where a word starts, and has nothing
that can fail after a long run of characters, so each is linear-time; words are
matched case-insensitively by running lower-case rules on a lower-cased copy.
Before any rule runs, one prefilter scans the lower-cased text for every rule's
literal start and every secret-key word at once, each anchored on its rarest
character (:meth:`Redactor.needs`); text with no hint of a secret costs that one
scan (about 3 ns a character), and a whole trajectory is scanned as one text when
it is recorded. A 10 MB tool output takes well under a second, and one dense
with secrets about a second.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from .errors import AgentMemError

__all__ = [
    "DEFAULT_REDACTOR",
    "KINDS",
    "PLACEHOLDER_PREFIX",
    "InvalidPatternError",
    "Redactor",
    "is_secret_key",
    "placeholder",
    "redact",
    "redact_value",
]

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
    r"(?:password|passwd|passphrase|secret|token|credentials?"
    r"|(?<![a-z])(?:pass|pwd|auth)"
    r"|(?:api|access|secret|private|account|encryption|signing|master|auth|app|client"
    r"|consumer|subscription|license|session|shared|storage|webhook|deploy)[_-]?key)$"
)
#: Names of language-model tokenizer settings (``eos_token``), not credentials.
_ML_TOKEN_NAME = re.compile(
    r"(?:^|[_.-])(?:bos|eos|pad|unk|mask|sep|cls|bot|eot|start|end|special|chat|stop)[_-]?token$"
)
_PATH_VALUE = re.compile(r"(?:~|\.{1,2})?/[\w./-]*|[A-Za-z]:\\[\w.\\ -]*|[\w.-]+/[\w./-]*\.\w+")
_CODE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_CAMEL_HUMP = re.compile(r"[a-z][A-Z]")
#: What follows ``name:`` in a type annotation: ``Token``, ``_t.AuthType``, ``api.Key``
#: (also checked to be made of words).
_TYPE_NAME = re.compile(r"[A-Z_][A-Za-z_.]*|[a-z_]+\.[A-Za-z_.]+")
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
)
_SSHPASS_CMD = re.compile(_CMD_START + r"sshpass[ \t]*$")
_MYSQL_CMD = re.compile(_CMD_START + r"mysql(?:dump|admin|sh)?\b")


def _fold(s: str) -> str:
    """``s`` with ASCII letters lower-cased and every index kept (unlike ``str.lower``)."""
    return s.lower() if s.isascii() else s.translate(_ASCII_LOWER)


def _is_placeholder_value(value: str) -> bool:
    return PLACEHOLDER_PREFIX in value and _PLACEHOLDER_VALUE.fullmatch(value) is not None


def _is_secret_name(name: str) -> bool:
    """Whether a key or flag name says it holds a secret: it *ends* in a secret word."""
    n = name.lower()
    return _SECRET_NAME.search(n) is not None and _ML_TOKEN_NAME.search(n) is None


def _kind_for_name(name: str) -> str:
    n = name.lower()
    if "pass" in n or "pwd" in n:
        return "password"
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
    if v[0] == "{" and v[-1] == "}":  # "{token}": a format string
        return False
    if v.startswith("arn:"):  # an AWS resource name
        return False
    return len(v) > 1024 or ("/" not in v and "\\" not in v) or _PATH_VALUE.fullmatch(v) is None


def _inside_placeholder(s: str, i: int) -> bool:
    """Whether index ``i`` of ``s`` lies inside a ``[REDACTED:...]`` placeholder."""
    j = s.rfind(PLACEHOLDER_PREFIX, max(0, i - 64), i + len(PLACEHOLDER_PREFIX))
    if j < 0:
        return False
    return s.find("]", j) >= i


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


def _pem_rule() -> _Rule:
    """PEM private-key blocks, whole, and cut-off ones as far as their base64 goes.

    A header with no base64 after it (a constant in code, an example in docs) stays.
    """
    begin = re.compile(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
    end = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
    # After the header: line breaks (real or \n escapes), Proc-Type/DEK-Info headers,
    # then base64 and whitespace. No part can fail, so no backtracking.
    body = re.compile(
        r"(?:\s|\\[rn])*"
        r"(?:(?:Proc-Type|DEK-Info|Comment):[^\n\\]*(?:\s|\\[rn])*)*"
        r"[A-Za-z0-9+/=\s\\]*"
    )
    base64_run = re.compile(r"[A-Za-z0-9+/]{16}")
    ph = placeholder("private_key")

    def run(s: str, _hay: str, start: int) -> str:
        out: list[str] = []
        pos = 0  # copied up to here
        for m in begin.finditer(s, start):
            if m.start() < pos:  # inside a block already taken
                continue
            b = body.match(s, m.end())
            stop = b.end() if b is not None else m.end()
            if base64_run.search(s, m.end(), stop) is None:  # a header alone
                continue
            e = end.match(s, stop)
            if e is not None:
                stop = e.end()
            else:  # cut off: leave the line break after the last base64
                while stop > m.end():
                    if s[stop - 1].isspace():
                        stop -= 1
                    elif s.startswith(("\\n", "\\r"), stop - 2):
                        stop -= 2
                    else:
                        break
            out.append(s[pos : m.start()])
            out.append(ph)
            pos = stop
        if not out:
            return s
        out.append(s[pos:])
        return "".join(out)

    return _Rule("private_key", "-----BEGIN", False, run)


def _token(kind: str, lit: str, body: str, needle: str, check: _Check | None = None) -> _Rule:
    """A token of a fixed prefix ``lit`` (regex, fixed width) that starts a word."""
    return _rule(kind, f"(?P<s>{_left(lit, _WD)}{body})", needle, check=check)


def _random_check(m: re.Match[str], text: str, value: str) -> bool:
    return _looks_random(value)


def _base64_check(m: re.Match[str], text: str, value: str) -> bool:
    """Random base64 has a digit, a capital or a ``/+``; 40 lower-case letters are words."""
    return any(c.isdigit() or c.isupper() or c in "/+" for c in value)


def _bearer_check(m: re.Match[str], text: str, value: str) -> bool:
    return len(value) >= 16 and _looks_random(value)


def _cookie_check(m: re.Match[str], text: str, value: str) -> bool:
    start = m.start()
    if start > 0 and text[start - 1] in _KEY_CHARS and text[max(0, start - 4) : start] != "set-":
        return False
    return "=" in value


def _url_check(m: re.Match[str], text: str, value: str) -> bool:
    return _value_ok(value) and not value.isdigit()


def _curl_user_check(m: re.Match[str], text: str, value: str) -> bool:
    return _value_ok(value) and not value.isdigit()  # docker run -u 1000:1000


def _dash_p_check(m: re.Match[str], text: str, value: str) -> bool:
    if value.startswith("-") or not _value_ok(value):
        return False
    line_from = _line_start(text, m.start())
    prefix = text[line_from if line_from >= 0 else max(0, m.start() - 256) : m.start()]
    if _SSHPASS_CMD.search(prefix) or _LOGIN_CMD.search(prefix):
        return True
    return m.group("sp") is None and _MYSQL_CMD.search(prefix) is not None


def _not_a_secret(name: str, kind: str, value: str) -> bool:
    """Values that a secret-named thing holds in code and config but that are not secrets.

    The name itself (``self.password = password``) and, except for passwords, a
    small number (``token: 42``) or words without digits (``NextToken``,
    ``self.api_key``, ``TOKEN_FLOAT``, ``"input_token": "Marker"``): generated
    tokens and keys have digits; a password may well be a word.
    """
    value = value.strip()
    v = value.lower()
    n = name.lower().rsplit(".", 1)[-1].lstrip("-_")
    if v.lstrip("_") in (n, name.lower()):
        return True
    if value.isdigit() and len(value) < (4 if kind == "password" else 8):
        return True  # PASSWD_PW_PASSWD: 1, token: 42
    if kind == "password":
        return False
    if not _is_wordish(value):
        return False
    return len(value) <= 32 or any(c in value for c in "._-")


def _assignment_check(m: re.Match[str], text: str, value: str) -> bool | str:
    name_from = _key_start(text, m.start("w"))
    if m.start("uq") >= 0:
        after = m.end("uq")
        if after < len(text):
            nxt = text[after]
            if nxt == "(" or (nxt == "[" and not text.startswith(PLACEHOLDER_PREFIX, after)):
                return False  # get_token(), os.environ["X"]
            if nxt in "\"'" and value.lower() in _STRING_PREFIXES:  # f"{user}:{password}"
                return False
        sep = m.group("sep")
        if sep == ":":  # name: value, unquoted
            if m.end("sep") == m.start("uq") and text[m.end("w")] not in "\"'\\":
                return False  # name:value, no space, name not quoted: not YAML or JSON
            if value.lower() in _TYPE_WORDS or _is_type_name(value):
                return False  # password: str, auth: _t.AuthType, token: Token
            if _PROSE_WORD.fullmatch(value):  # "Forgot password: reset it", unless YAML
                line_from = _line_start(text, name_from)
                if line_from < 0 or not _LINE_KEY_PREFIX.fullmatch(text, line_from, name_from):
                    return False
    name = text[name_from : m.end("w")]
    if not _is_secret_name(name):
        return False
    if name_from > 0:
        before = text[name_from - 1]
        if before == "/":  # /etc/passwd: ..., secrets/token: ...
            return False
        if before == ":" and m.group("sep") == ":":  # arn:aws:secretsmanager:...:secret:x
            return False
    if not _value_ok(value):
        return False
    kind = _kind_for_name(name)
    if _not_a_secret(name, kind, value):
        return False
    if m.start("uq") < 0:
        if value.count(" ") >= 4 and (kind != "password" or value.rstrip().endswith(".")):
            return False  # "token": "The token used to sign requests."
    elif m.group("sep") == "=" and m.start("sep") > m.end("w") and _is_code_reference(value):
        return False  # password = credentials: code (a literal would be quoted)
    return kind


def _is_wordish(value: str) -> bool:
    return len(value) <= 256 and _WORDISH.fullmatch(value) is not None


def _is_type_name(value: str) -> bool:
    return _TYPE_NAME.fullmatch(value) is not None and _is_wordish(value)


def _is_code_reference(value: str) -> bool:
    """A name in code rather than a literal: ``creds.password``, ``get_token``, ``userInfo``."""
    return _CODE_NAME.fullmatch(value) is not None and (
        "_" in value or "." in value or _CAMEL_HUMP.search(value) is not None or _is_wordish(value)
    )


def _flag_check(m: re.Match[str], text: str, value: str) -> bool | str:
    name_from = _key_start(text, m.start("w"))
    name = text[name_from : m.end("w")]
    if not name.startswith("-") or not _is_secret_name(name.lstrip("-")):
        return False
    if name_from > 0 and text[name_from - 1] not in " \t\n\"'=(":
        return False
    if value.startswith("-") or not _value_ok(value) or value.lower() in _PROSE_AFTER_FLAG:
        return False
    kind = _kind_for_name(name)
    return False if _not_a_secret(name, kind, value) else kind


def _auth_handle(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    start = m.start()
    if start > 0:
        c = text[start - 1]
        if c in _WORD_CHARS or (c == "-" and _fold(text[max(0, start - 6) : start]) != "proxy-"):
            return None
    scheme = m.group("scheme")
    a, b = m.span("s" if scheme is not None else "s2")
    value = text[a:b]
    if _inside_placeholder(text, a) or not _value_ok(value):
        return None
    if scheme is None:
        kind = "authorization"
    else:
        kind = {"bearer": "bearer_token", "basic": "basic_auth"}.get(scheme, "authorization")
    return a, b, placeholder(kind)


# Values after a separator, in groups eq (after \"), dq ("), sq (') and uq (bare). No
# part of a rule may fail after a value: the engine would then retry at the next
# position and scan the same long value again (quadratic time).
_VALUE = (
    r"""(?:\\+"(?P<eq>[^"\\\n]+)"""
    r"""|"(?P<dq>[^"\\\n]*(?:\\.[^"\\\n]*)*)"""
    r"""|'(?P<sq>[^'\n]+)"""
    r"""|(?P<uq>[^\s"'`,;&|<>(){}\[\]\\]+))"""
)
_VALUE_GROUPS = ("eq", "dq", "sq", "uq")
_SEP = (
    r"""(?:\\*["'])?[ \t]*"""
    r"(?P<sep>:[ \t]*(?:str|bytes|secretstr|optional\[str\]|str[ \t]*\|[ \t]*none)[ \t]*="
    r"|=>|:=|=|:)"
    r"[ \t]*"
)
#: ``key`` preceded by a word that makes it a secret: ``api_key``, ``accesskey`` ...
#: First a cheap look at the letter before, then the words one by one.
_SECRET_KEY_LB = (
    "(?:(?<=[dceghiknprsty]key)|(?<=[dceghiknprsty][_-]key))(?:"
    + "|".join(
        f"(?<={word}{sep}key)"
        for word in (
            "api",
            "access",
            "secret",
            "private",
            "account",
            "encryption",
            "signing",
            "master",
            "auth",
            "app",
            "client",
            "consumer",
            "subscription",
            "license",
            "session",
            "shared",
            "storage",
            "webhook",
            "deploy",
        )
        for sep in ("", "_", "-")
    )
    + ")"
)
_TOKEN68 = r"[a-z0-9._~+/-]+=*"  # RFC 7235 credentials, lower-cased
_SCHEMES = r"bearer|basic|token|digest|negotiate|ntlm|bot|apikey|hmac|aws4-hmac-sha256"


#: Characters from the rarest in tool outputs, code and prose to the most common; those
#: not listed come last. The prefilter anchors each needle on its rarest character.
_RARITY = "zqxjkvbpygfwmucldrhsnioate=9876543210:_./-"
#: Words that every secret-naming key contains (see is_secret_key): under such a key a
#: value is redacted whole, so the prefilter must never miss one.
_KEY_WORDS = ("pass", "pwd", "auth", "secret", "token", "credential", "key", "cookie")
#: Narrower prefilter shapes for needles that ordinary text is full of ("task" holds
#: "sk", "through" "gh", "global" "gl"): the lower-cased needle -> (anchor character,
#: regex after it), each the lower-cased start of every match of its rule: a Twilio key
#: is SK and 32 hex digits, a GitHub token ghp_..., a GitLab one glpat-...
_NARROW = {
    "sk": ("k", r"(?<=sk)[0-9a-f]{32}"),
    "gh": ("g", r"h[pousr]_"),
    "gl": ("g", r"l(?:pat|dt|rt|ptt|cbt|oas|ft|imt|soat|agent)-"),
}


def _anchored(needles: Iterable[str]) -> re.Pattern[str]:
    """One regex that finds any of ``needles`` (and the :data:`_NARROW` shapes of those
    listed there), each anchored on its rarest character.

    ``token`` becomes ``k(?<=tok)en``: the regex engine skips every position whose
    character is no needle's anchor (most of a text) with a quick set test and tries
    only the needles of that anchor, instead of trying every needle at every
    position. A needle that contains another one is left out (the shorter finds the
    same texts).
    """
    rank = {c: i for i, c in enumerate(_RARITY)}
    by_anchor: dict[str, list[str]] = {}
    literal = sorted({n for n in needles if n not in _NARROW}, key=len)
    for n in sorted(set(needles) & set(_NARROW)):
        c, rest = _NARROW[n]
        by_anchor.setdefault(c, []).append(rest)
    for k, n in enumerate(literal):
        if any(m in n for m in literal[:k]):
            continue
        i = min(range(len(n)), key=lambda j: (rank.get(n[j], len(rank)), j))
        behind = f"(?<={re.escape(n[: i + 1])})" if i else ""
        by_anchor.setdefault(n[i], []).append(behind + re.escape(n[i + 1 :]))
    alts = [
        re.escape(c) + (f"(?:{'|'.join(rest)})" if len(rest) > 1 or rest[0] else "")
        for c, rest in sorted(by_anchor.items())
    ]
    return re.compile("|".join(alts) or "(?!)")


@functools.cache
def _prefilter() -> re.Pattern[str]:
    """The prefilter, run on the lower-cased text: every rule's needle (lower-cased) and
    every secret-key word. A text it finds nothing in holds nothing any rule finds and
    no secret-named key (see Redactor.needs)."""
    return _anchored([*(r.needle.lower() for r in _builtin_rules()), *_KEY_WORDS])


@functools.cache
def _builtin_rules() -> tuple[_Rule, ...]:
    """The built-in rules, in the order they run: specific shapes first, contexts last."""
    t = _token
    rules = [
        _pem_rule(),
        t("jwt", "eyJ", r"[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*", "eyJ"),
        t("anthropic_api_key", "sk-ant-", r"[A-Za-z0-9_-]{20,}", "sk-ant-"),
        t("openai_api_key", "sk-", r"[A-Za-z0-9_-]{20,}", "sk-", _random_check),
        t("github_token", "gh[pousr]_", r"[A-Za-z0-9]{36,}", "gh"),
        t("github_token", "github_pat_", r"[A-Za-z0-9_]{40,}", "github_pat_"),
        t(
            "gitlab_token",
            "gl",
            r"(?:pat|dt|rt|ptt|cbt|oas|ft|imt|soat|agent)-[A-Za-z0-9_.-]{20,}",
            "gl",
        ),
        t("slack_token", "xox[baprse]-", r"[A-Za-z0-9-]{10,}", "xox"),
        t("slack_token", "xapp-", r"[A-Za-z0-9-]{10,}", "xapp-"),
        _rule(
            "slack_webhook",
            r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/-]{20,})",
            "hooks.slack.com",
        ),
        _rule(
            "discord_webhook",
            r"discord(?:app)?\.com/api/webhooks/[0-9]+/(?P<s>[A-Za-z0-9_-]{20,})",
            "discord",
        ),
        t("stripe_key", "sk_(?:live|test)_", r"[A-Za-z0-9]{10,}", "sk_"),
        t("stripe_key", "rk_(?:live|test)_", r"[A-Za-z0-9]{10,}", "rk_"),
        t("stripe_key", "whsec_", r"[A-Za-z0-9]{20,}", "whsec_"),
        t("google_api_key", "AIza", r"[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])", "AIza"),
        t("google_client_secret", "GOCSPX-", r"[A-Za-z0-9_-]{20,}", "GOCSPX-"),
        t("google_oauth_token", r"ya29\.", r"[0-9A-Za-z_-]{20,}", "ya29."),
        t("npm_token", "npm_", r"[A-Za-z0-9]{36}(?![A-Za-z0-9])", "npm_"),
        t("huggingface_token", "hf_", r"[A-Za-z0-9]{30,}", "hf_"),
        t("twilio_api_key", "SK", r"[0-9a-fA-F]{32}(?![A-Za-z0-9_])", "SK"),
        t(
            "sendgrid_api_key",
            r"SG\.",
            r"[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{32,}",
            "SG.",
        ),
        t("pypi_token", "pypi-AgE", r"[A-Za-z0-9_-]{50,}", "pypi-AgE"),
        t("docker_token", "dckr_pat_", r"[A-Za-z0-9_-]{20,}", "dckr_pat_"),
        *(
            _rule(
                "aws_access_key",
                rf"(?P<s>{_left(p, _AN)}[A-Z0-9]{{16}}(?![A-Za-z0-9]))",
                p,
            )
            for p in ("AKIA", "ASIA", "ABIA", "ACCA")
        ),
        _rule("azure_sas", r"sig=(?<=[?&]sig=)(?P<s>[A-Za-z0-9%+/=]{20,})", "sig="),
        *(
            _rule(
                "aws_secret_key",
                rf"{p}"
                r"""(?:\\*["'])?(?:[ \t]*[:=][ \t]*|[ \t]+)(?:\\*["'])?"""
                r"(?P<s>[a-z0-9/+]{40})(?![a-z0-9/+=])",
                needle,
                fold=True,
                check=_base64_check,
            )
            for p, needle in (
                (r"secret_?access_?key", "secret"),
                (r"aws_?secret_?key", "aws"),
            )
        ),
        _rule(
            "url_password",
            r"""://[^\s:/@'"\\\[\]]*:(?P<s>[^\s@/?#'"\\<>]+)@""",
            "://",
            check=_url_check,
        ),
        _Rule(
            "authorization",
            "authorization",
            True,
            _scanner(
                re.compile(
                    r"""authorization(?:\\*["'])?[ \t]*[:=][ \t]*(?:\\*["'])?[ \t]*"""
                    rf"""(?:(?P<scheme>{_SCHEMES})[ \t]+(?P<s>{_TOKEN68})"""
                    # no scheme: a credential has a digit or a symbol, a word has not
                    rf"""|(?=[a-z]*[0-9._~+/=-])(?P<s2>{_TOKEN68}))"""
                ),
                _auth_handle,
            ),
        ),
        _rule(
            "bearer_token",
            rf"{_left('bearer', _WD)}[ \t]+(?P<s>[a-z0-9._~+/-]{{16,}}=*)",
            "bearer",
            fold=True,
            check=_bearer_check,
        ),
        _rule(
            "cookie",
            r"""cookie(?:\\*["'])?[ \t]*:[ \t]*(?:\\*["'])?(?P<s>[^\r\n"'\\]+)""",
            "cookie",
            fold=True,
            check=_cookie_check,
        ),
        *(
            _rule(
                "password",
                rf"""{_left(flag, _WD)}(?:[ \t]+|=)(?:\\*["'])?[^\s:"'\\]+:"""
                r"""(?P<s>[^\s"'\\]+)""",
                flag,
                check=_curl_user_check,
            )
            for flag in ("-u", "--user")
        ),
        _rule(
            "password",
            rf"""{_left("-p", _WD)}(?P<sp>[ \t]+)?(?:\\*["'])?(?![-$])(?P<s>[^\s"'\\]+)""",
            "-p",
            check=_dash_p_check,
        ),
        *(
            _rule(
                "secret",
                rf"""-(?P<w>{word})[ \t]+(?:\\*["'])?(?![-$])(?P<s>[^\s"'\\<>|&;]+)""",
                f"-{needle}",
                fold=True,
                check=_flag_check,
            )
            for word, needle in (
                (r"pass(?:word|wd|phrase|in|out)?", "pass"),
                ("token", "token"),
                ("secret", "secret"),
                (f"key{_SECRET_KEY_LB}", "key"),
                ("apikey", "apikey"),
            )
        ),
        *(
            _rule(
                "secret",
                rf"(?P<w>{word}){_SEP}{_VALUE}",
                needle,
                fold=True,
                groups=_VALUE_GROUPS,
                check=_assignment_check,
            )
            for word, needle in (
                (r"pass(?:word|wd|phrase|(?<![a-z]pass))", "pass"),
                (r"pwd(?<![a-z]pwd)", "pwd"),
                (r"auth(?<![a-z]auth)", "auth"),
                ("secret", "secret"),
                ("token", "token"),
                ("credentials?", "credential"),
                (f"key{_SECRET_KEY_LB}", "key"),
            )
        ),
    ]
    return tuple(rules)


#: Every kind a built-in rule can put in a placeholder, and ``custom``.
KINDS: tuple[str, ...] = (
    "private_key",
    "jwt",
    "anthropic_api_key",
    "openai_api_key",
    "github_token",
    "gitlab_token",
    "slack_token",
    "slack_webhook",
    "discord_webhook",
    "stripe_key",
    "google_api_key",
    "google_client_secret",
    "google_oauth_token",
    "npm_token",
    "huggingface_token",
    "twilio_api_key",
    "sendgrid_api_key",
    "pypi_token",
    "docker_token",
    "aws_access_key",
    "azure_sas",
    "aws_secret_key",
    "url_password",
    "bearer_token",
    "basic_auth",
    "authorization",
    "cookie",
    "password",
    "token",
    "api_key",
    "secret",
    "custom",
)


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
        if not self.needs(out):
            return out  # no rule's needle occurs: the common case, one quick scan
        lowered: str | None = None  # _fold(out), while out is unchanged
        for rule in _builtin_rules():
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
        if not self.enabled or not text:
            return False
        if self.extra_patterns:
            return True
        return _prefilter().search(_fold(text)) is not None

    def value(self, value: Any) -> Any:
        """A copy of a JSON-like ``value`` with secrets redacted.

        Strings are redacted with :meth:`text`, dict keys included; lists, tuples
        and dicts are walked (into new lists, tuples and dicts). Under a key that
        names a secret (see :func:`is_secret_key`), at any depth, every string and
        number is replaced whole by ``[REDACTED:kind]``, except what says there is
        no secret: ``None``, booleans, empty strings, ``null``, references such as
        ``$DB_PASSWORD`` or ``{{ token }}``, and file paths. Other values (numbers
        elsewhere, ``None``, other objects) are returned as they are.
        """
        if not self.enabled:
            return value
        return self._walk(value, None)

    def _walk(self, value: Any, secret_kind: str | None) -> Any:
        # The concrete types first: isinstance(x, Mapping) is an ABC check, and tool
        # parameters are mostly strings, numbers and plain dicts.
        if isinstance(value, str):
            if secret_kind is not None and _value_ok(value):
                return placeholder(secret_kind)
            return self.text(value)
        if isinstance(value, (int, float)) or value is None:
            if secret_kind is not None and value is not None and not isinstance(value, bool):
                return placeholder(secret_kind)
            return value
        if isinstance(value, list):
            return [self._walk(v, secret_kind) for v in value]
        if isinstance(value, tuple):
            return tuple(self._walk(v, secret_kind) for v in value)
        if type(value) is dict or isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            for k, v in value.items():
                kind = secret_kind
                if isinstance(k, str):
                    if kind is None and is_secret_key(k):
                        kind = _kind_for_key(k)
                    k = _key_text(self, k)
                out[k] = self._walk(v, kind)
            return out
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
