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
URLs without credentials, and secret words used in prose or in other names
(``max_tokens: 128``, ``token_count=512``, ``secret_santa.py``,
``password: ""``). A high-entropy string is only redacted in a secret-named
context.

What is *not* protected: a secret with no known shape outside a secret-named
context (a bare 40-character AWS secret key, a Twilio auth token, a database
password on its own line, ``echo hunter2 | docker login --password-stdin``),
values under names that do not say secret (``DB_URL_2=...`` without
``user:pass@``, a Kubernetes Secret's custom ``data:`` keys), YAML block scalars
(``password: |``), the tail of a quoted value after a doubly escaped quote, and
a value computed in code (``token = os.getenv("T", "dflt")`` keeps ``"dflt"``).
Redaction is a safety net, not a guarantee.

Speed: every rule is a linear-time regular expression (bounded repetition, no
nested quantifiers that can backtrack) behind a cheap substring pre-check, so
text without any hint of a secret costs a few substring searches; a 10 MB tool
output full of secrets takes well under a second.
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

_Check = Callable[["re.Match[str]", str], bool]
_KindOf = Callable[["re.Match[str]"], str]

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
#: Key names of language-model tokenizer settings, not credentials.
_ML_TOKEN_KEY = re.compile(
    r"(?i)(?:^|[_.-])(?:bos|eos|pad|unk|mask|sep|cls|bot|eot|start|end|special|chat|stop)[_-]?token$"
)
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_PATH_VALUE = re.compile(r"(?:~|\.{1,2})?/[\w./-]*|[A-Za-z]:\\[\w.\\ -]*|[\w.-]+/[\w./-]*\.\w+")
_PROSE_WORD = re.compile(r"[A-Za-z][a-z]*")
_LINE_KEY_PREFIX = re.compile(r"[ \t]*(?:-[ \t]+)?(?:export[ \t]+)?[\"']?")


def _is_placeholder_value(value: str) -> bool:
    return _PLACEHOLDER_VALUE.fullmatch(value) is not None


def _key_start(s: str, i: int) -> int:
    """Walk left from ``i`` over key characters (letters, digits, ``_.-``); at most 128."""
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
    """At least one digit and one letter: separates tokens from words."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _inside_placeholder(s: str, i: int) -> bool:
    """Whether index ``i`` of ``s`` lies inside a ``[REDACTED:...]`` placeholder."""
    j = s.rfind(PLACEHOLDER_PREFIX, max(0, i - 64), i + 1)
    if j < 0:
        return False
    k = s.find("]", j)
    return k >= i


# --------------------------------------------------------------------------- rules


@attrs.frozen
class _Rule:
    """One kind of secret: how to find it cheaply and how to redact it.

    ``needles``: substrings one of which must occur in the text (in its
    lower-cased form when ``fold``) for the rule to run at all.
    """

    name: str
    needles: tuple[str, ...]
    fold: bool
    apply: Callable[[str], str]


def _regex_rule(
    kind: str,
    pattern: str,
    needles: Iterable[str],
    *,
    fold: bool = False,
    groups: tuple[str, ...] = ("s",),
    check: _Check | None = None,
    kind_of: _KindOf | None = None,
) -> _Rule:
    """A rule that replaces the first matched group of ``groups`` in each match.

    ``check(match, value)`` may veto a match (it is then left as it was);
    ``kind_of(match)`` may choose the kind per match.
    """
    rx = re.compile(pattern, re.IGNORECASE if fold else 0)
    fixed = placeholder(kind)

    def repl(m: re.Match[str]) -> str:
        for name in groups:
            value = m.group(name)
            if value is not None:
                break
        else:  # pragma: no cover - every pattern has one of its groups
            return m.group(0)
        if _is_placeholder_value(value) or (check is not None and not check(m, value)):
            return m.group(0)
        start = m.start()
        a, b = m.span(name)
        whole = m.group(0)
        text = placeholder(kind_of(m)) if kind_of is not None else fixed
        return whole[: a - start] + text + whole[b - start :]

    def apply(s: str) -> str:
        return rx.sub(repl, s)

    return _Rule(kind, tuple(needles), fold, apply)


# Unquoted value: no whitespace, quotes, or punctuation that ends a value in shell,
# JSON, YAML flow style or a URL query; ``[`` so that a placeholder is never a value.
_UQ = r"""[^\s"'`,;&|<>(){}\[\]\\]"""
#: Quoted or unquoted value, in groups eq (after \"), dq ("), sq (') and uq (bare).
#: ``(?=(?P<uq>X+))(?P=uq)`` is an atomic X+ for Pythons without possessive quantifiers.
_VALUE = (
    r"""(?:\\"(?P<eq>[^"\\\n]{1,4096})"""
    r"""|"(?P<dq>(?:[^"\\\n]|\\.){1,4096})"""
    r"""|'(?P<sq>[^'\n]{1,4096})"""
    rf"""|(?=(?P<uq>{_UQ}{{1,4096}}))(?P=uq)(?![(\[]))"""
)
_VALUE_GROUPS = ("eq", "dq", "sq", "uq")

#: The secret words an assignment's name may end in (case-insensitive).
_SECRET_WORD = (
    r"(?:pass(?:word|wd|phrase)"
    r"|(?<![a-z])(?:pass|pwd|auth)"
    r"|secret|token|credentials?"
    r"|(?:api|access|secret|private|account|encryption|signing|master|auth)[_-]?key)"
)


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


def _value_ok(value: str) -> bool:
    """Whether an assigned value is worth redacting (not empty, a reference or a path)."""
    v = value.strip()
    if not v or v.lower() in _EMPTY_WORDS:
        return False
    if v.startswith(("$", "{{", "%(", "<")) and not v.startswith("$2"):  # $2b$ is bcrypt
        return False
    return _PATH_VALUE.fullmatch(v) is None


def _assignment_check(m: re.Match[str], value: str) -> bool:
    s = m.string
    start = m.start()
    key_from = _key_start(s, start)
    key = s[key_from : m.end("w")]
    if key_from > 0 and s[key_from - 1] == "/":  # /etc/passwd: ..., secrets/token: ...
        return False
    if _ML_TOKEN_KEY.search(key):
        return False
    if not _value_ok(value):
        return False
    if value.isdigit() and len(value) < 8 and _kind_for_name(m.group("w")) != "password":
        return False  # token: 42, max_token=512
    sep = m.group("sep")
    if m.group("uq") is not None and sep.startswith(":") and not sep.endswith("="):
        if value.lower() in _TYPE_WORDS:
            return False  # password: str
        line_from = _line_start(s, key_from)
        at_line_start = (
            line_from >= 0 and _LINE_KEY_PREFIX.fullmatch(s, line_from, key_from) is not None
        )
        if not at_line_start and _PROSE_WORD.fullmatch(value):
            return False  # "Forgot password: reset it"
    return True


def _assignment_kind(m: re.Match[str]) -> str:
    return _kind_for_name(m.group("w"))


_ASSIGNMENT = (
    rf"(?P<w>{_SECRET_WORD})"
    r"""(?:\\?["'])?[ \t]*"""
    r"(?P<sep>:[ \t]*(?:str|bytes|SecretStr|Optional\[str\]|str[ \t]*\|[ \t]*None)[ \t]*="
    r"|=>|:=|==?|:)"
    r"""[ \t]*"""
    + _VALUE
)


def _flag_check(m: re.Match[str], value: str) -> bool:
    return _value_ok(value) and value.lower() not in _PROSE_AFTER_FLAG


_FLAG = (
    r"(?<![\w-])--?(?:[a-z0-9]+-){0,4}"
    r"(?P<w>password|passwd|passphrase|passin|passout|pass|token|secret"
    r"|api-?key|access-?key|secret-?key|private-?key)"
    r"""[ \t]+(?:\\?["'])?(?!-|\$|\[REDACTED:)"""
    r"""(?P<s>[^\s"'\\<>|&;]{1,1024})"""
)


def _flag_kind(m: re.Match[str]) -> str:
    return _kind_for_name(m.group("w"))


def _auth_kind(m: re.Match[str]) -> str:
    scheme = (m.group("scheme") or "").lower()
    return {"bearer": "bearer_token", "basic": "basic_auth"}.get(scheme, "authorization")


def _auth_check(m: re.Match[str], value: str) -> bool:
    if m.group("scheme"):
        return True
    return _value_ok(value) and _PROSE_WORD.fullmatch(value) is None


_SCHEMES = r"bearer|basic|token|digest|negotiate|ntlm|bot|apikey|sso-key|hmac|aws4-hmac-sha256"
_AUTH_HEADER = (
    r"""(?<![A-Za-z0-9_-])(?:proxy-)?authorization(?:\\?["'])?[ \t]*[:=][ \t]*(?:\\?["'])?[ \t]*"""
    rf"""(?:(?P<scheme>{_SCHEMES})[ \t]+|(?!(?:{_SCHEMES})\b))"""
    r"""(?!\$|\{\{|\[REDACTED:)(?=(?P<s>[^\s"'\\,;]{1,8192}))(?P=s)"""
)


def _cookie_check(m: re.Match[str], value: str) -> bool:
    return "=" in value


def _random_check(m: re.Match[str], value: str) -> bool:
    return _looks_random(value)


def _not_all_digits(m: re.Match[str], value: str) -> bool:
    return _value_ok(value) and not value.isdigit()


def _pem_rule() -> _Rule:
    """PEM private-key blocks, whole, and cut-off ones up to where the base64 stops."""
    begin = re.compile(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
    end = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
    # A cut-off body: base64, whitespace, \n escapes, and Proc-Type/DEK-Info headers.
    body = re.compile(r"[A-Za-z0-9+/=\s\\:,-]{0,16384}")
    window = 65536
    text_ph = placeholder("private_key")

    def apply(s: str) -> str:
        out: list[str] = []
        pos = 0  # copied up to here
        next_end = -2  # cached position of the next "-----END" at or after pos (-1: none)
        for m in begin.finditer(s):
            if m.start() < pos:  # inside a block already redacted
                continue
            body_from = m.end()
            if next_end != -1 and next_end < body_from:
                next_end = s.find("-----END", body_from)
            stop = -1
            if 0 <= next_end and next_end - body_from <= window:
                if s.find("-----BEGIN", body_from, next_end) < 0:
                    e = end.match(s, next_end)
                    stop = e.end() if e is not None else next_end
            if stop < 0:  # no END in reach: redact as far as the body goes
                b = body.match(s, body_from)
                stop = b.end() if b is not None else body_from
            out.append(s[pos : m.start()])
            out.append(text_ph)
            pos = stop
        if not out:
            return s
        out.append(s[pos:])
        return "".join(out)

    return _Rule("private_key", ("-----BEGIN",), False, apply)


@functools.cache
def _builtin_rules() -> tuple[_Rule, ...]:
    """The built-in rules, in the order they run: specific shapes first, contexts last."""
    r = _regex_rule
    # Token bodies: [A-Za-z0-9] runs with boundaries on both sides so that a token
    # glued to other word characters is not taken for one.
    rules = [
        _pem_rule(),
        r(
            "jwt",
            r"(?<![A-Za-z0-9_-])(?P<s>eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{8,16384}"
            r"\.[A-Za-z0-9_-]{0,8192})(?![A-Za-z0-9_-])",
            ("eyJ",),
        ),
        r(
            "anthropic_api_key",
            r"(?<![A-Za-z0-9_-])(?P<s>sk-ant-[A-Za-z0-9_-]{20,1024})(?![A-Za-z0-9_-])",
            ("sk-ant-",),
        ),
        r(
            "openai_api_key",
            r"(?<![A-Za-z0-9_-])(?P<s>sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,1024})"
            r"(?![A-Za-z0-9_-])",
            ("sk-",),
            check=_random_check,
        ),
        r(
            "github_token",
            r"(?<![A-Za-z0-9_])(?P<s>gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{40,251})"
            r"(?![A-Za-z0-9_])",
            ("gh", "github_pat_"),
        ),
        r(
            "gitlab_token",
            r"(?<![A-Za-z0-9_-])(?P<s>gl(?:pat|dt|rt|ptt|cbt|oas|ft|imt|soat|agent)-"
            r"[A-Za-z0-9_.-]{20,512})(?![A-Za-z0-9_-])",
            ("gl",),
        ),
        r(
            "slack_token",
            r"(?<![A-Za-z0-9_-])(?P<s>(?:xox[baprse]|xapp)-[A-Za-z0-9-]{10,512})(?![A-Za-z0-9_-])",
            ("xox", "xapp-"),
        ),
        r(
            "slack_webhook",
            r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/-]{20,256})",
            ("hooks.slack.com",),
        ),
        r(
            "discord_webhook",
            r"discord(?:app)?\.com/api/webhooks/[0-9]{5,30}/(?P<s>[A-Za-z0-9_-]{20,256})",
            ("discord",),
        ),
        r(
            "stripe_key",
            r"(?<![A-Za-z0-9_])(?P<s>(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,256}"
            r"|whsec_[A-Za-z0-9]{20,256})(?![A-Za-z0-9_])",
            ("_live_", "_test_", "whsec_"),
        ),
        r(
            "google_api_key",
            r"(?<![A-Za-z0-9_-])(?P<s>AIza[0-9A-Za-z_-]{35})(?![A-Za-z0-9_-])",
            ("AIza",),
        ),
        r(
            "google_client_secret",
            r"(?<![A-Za-z0-9_-])(?P<s>GOCSPX-[A-Za-z0-9_-]{20,64})(?![A-Za-z0-9_-])",
            ("GOCSPX-",),
        ),
        r(
            "google_oauth_token",
            r"(?<![A-Za-z0-9_-])(?P<s>ya29\.[0-9A-Za-z_-]{20,2048})(?![A-Za-z0-9_-])",
            ("ya29.",),
        ),
        r(
            "npm_token",
            r"(?<![A-Za-z0-9_])(?P<s>npm_[A-Za-z0-9]{36})(?![A-Za-z0-9_])",
            ("npm_",),
        ),
        r(
            "huggingface_token",
            r"(?<![A-Za-z0-9_])(?P<s>hf_[A-Za-z0-9]{30,64})(?![A-Za-z0-9_])",
            ("hf_",),
        ),
        r(
            "twilio_api_key",
            r"(?<![A-Za-z0-9_])(?P<s>SK[0-9a-fA-F]{32})(?![A-Za-z0-9_])",
            ("SK",),
        ),
        r(
            "sendgrid_api_key",
            r"(?<![A-Za-z0-9_-])(?P<s>SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{32,64})"
            r"(?![A-Za-z0-9_-])",
            ("SG.",),
        ),
        r(
            "pypi_token",
            r"(?<![A-Za-z0-9_-])(?P<s>pypi-AgE[A-Za-z0-9_-]{50,4096})(?![A-Za-z0-9_-])",
            ("pypi-AgE",),
        ),
        r(
            "docker_token",
            r"(?<![A-Za-z0-9_-])(?P<s>dckr_pat_[A-Za-z0-9_-]{20,128})(?![A-Za-z0-9_-])",
            ("dckr_pat_",),
        ),
        r(
            "aws_access_key",
            r"(?<![A-Za-z0-9])(?P<s>(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})(?![A-Za-z0-9])",
            ("AKIA", "ASIA", "ABIA", "ACCA"),
        ),
        r(
            "azure_sas",
            r"[?&]sig=(?P<s>[A-Za-z0-9%+/=]{20,512})",
            ("sig=",),
        ),
        r(
            "aws_secret_key",
            r"(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)"
            r"""(?:\\?["'])?[ \t]*[:=][ \t]*(?:\\?["'])?"""
            r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
            ("secret",),
            fold=True,
        ),
        r(
            "url_password",
            r"""://[^\s:/@'"\\\[\]]{0,256}:(?!\$|\[REDACTED:)(?P<s>[^\s@/?#'"\\<>]{1,1024})@""",
            ("://",),
            check=_not_all_digits,
        ),
        r(
            "authorization",
            _AUTH_HEADER,
            ("authorization",),
            fold=True,
            check=_auth_check,
            kind_of=_auth_kind,
        ),
        r(
            "bearer_token",
            r"(?<![A-Za-z0-9_-])(?:Bearer|bearer|BEARER)[ \t]+(?!\[REDACTED:)"
            r"(?P<s>[A-Za-z0-9._~+/-]{16,8192}=*)",
            ("earer", "EARER"),
            check=_random_check,
        ),
        r(
            "cookie",
            r"""(?<![A-Za-z0-9_-])(?:set-)?cookie(?:\\?["'])?[ \t]*:[ \t]*(?:\\?["'])?"""
            r"""(?!\[REDACTED:)(?P<s>[^\r\n"'\\]{1,8192})""",
            ("cookie",),
            fold=True,
            check=_cookie_check,
        ),
        r(
            "password",
            r"""(?<![\w-])(?:-u|--user)(?:[ \t]+|=)(?:\\?["'])?[^\s:"'\\]{1,256}:"""
            r"""(?!\$|\[REDACTED:)(?P<s>[^\s"'\\]{1,1024})""",
            ("-u", "--user"),
            check=_not_all_digits,
        ),
        r(
            "password",
            r"(?<![\w-])(?:(?:docker|podman|nerdctl|buildah|skopeo|oras|crane|cf|helm[ \t]+registry)"
            r"""[ \t]+login\b[^\n]{0,300}?[ \t](?:-p|--password)(?:[ \t]+|=)(?:\\?["'])?"""
            r"""|sshpass[ \t]+-p[ \t]*(?:\\?["'])?"""
            r"|mysql(?:dump|admin|sh)?\b[^\n]{0,300}?[ \t]-p(?=[^\s-]))"
            r"""(?!\$|\[REDACTED:)(?P<s>[^\s"'\\]{1,1024})""",
            ("login", "sshpass", "mysql"),
            check=_not_all_digits,
        ),
        r(
            "secret",
            _FLAG,
            ("pass", "token", "secret", "key"),
            fold=True,
            check=_flag_check,
            kind_of=_flag_kind,
        ),
        r(
            "secret",
            _ASSIGNMENT,
            ("pass", "pwd", "auth", "secret", "token", "credential", "key"),
            fold=True,
            groups=_VALUE_GROUPS,
            check=_assignment_check,
            kind_of=_assignment_kind,
        ),
    ]
    return tuple(rules)


#: Every kind a built-in rule can put in a placeholder, plus ``custom``.
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

_SECRET_KEY_NAME = re.compile(
    rf"(?i)(?:{_SECRET_WORD}|authorization|cookie|x-auth|session[_-]?id)$",
)


def is_secret_key(name: str) -> bool:
    """Whether a mapping key names a secret (``password``, ``GITHUB_TOKEN``, ``apiKey`` ...).

    The name must *end* in a secret word, so ``max_tokens``, ``token_count`` and
    ``password_hint`` are not secret; tokenizer settings such as ``eos_token`` are
    not either.
    """
    return _SECRET_KEY_NAME.search(name) is not None and _ML_TOKEN_KEY.search(name) is None


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


@attrs.frozen
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
        for rx in _compile_custom(self.extra_patterns):
            out = _custom_apply(rx, out)
        lowered: str | None = None
        for rule in _builtin_rules():
            if rule.fold:
                if lowered is None:
                    lowered = text.lower()
                hay = lowered
            else:
                hay = out
            if any(n in hay for n in rule.needles):
                out = rule.apply(out)
        return out

    def value(self, value: Any) -> Any:
        """A copy of a JSON-like ``value`` with secrets redacted.

        Strings are redacted with :meth:`text`, dict keys included; lists, tuples
        and dicts are walked. Under a key that names a secret (see
        :func:`is_secret_key`), every non-empty string and every number is
        replaced whole by ``[REDACTED:kind]``; ``None``, booleans and empty
        strings stay, so "no password was set" survives. Other values (numbers,
        ``None``, objects) are returned as they are.
        """
        if not self.enabled:
            return value
        return self._walk(value, None)

    def _walk(self, value: Any, secret_kind: str | None) -> Any:
        if isinstance(value, str):
            if secret_kind is not None and value.strip() and not _is_placeholder_value(value):
                return placeholder(secret_kind)
            return self.text(value)
        if isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            for k, v in value.items():
                kind = secret_kind
                if isinstance(k, str):
                    if kind is None and is_secret_key(k):
                        kind = _kind_for_key(k)
                    k = self.text(k)
                out[k] = self._walk(v, kind)
            return out
        if isinstance(value, list):
            return [self._walk(v, secret_kind) for v in value]
        if isinstance(value, tuple):
            return tuple(self._walk(v, secret_kind) for v in value)
        if (
            secret_kind is not None
            and isinstance(value, (int, float))
            and not isinstance(value, bool)
        ):
            return placeholder(secret_kind)
        return value


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
