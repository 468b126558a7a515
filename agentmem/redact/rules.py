"""The built-in rules: shapes of known tokens and keys, then secrets by their context."""

from __future__ import annotations

import functools
import re

from .base import (
    _AN,
    _CAMEL_HUMP,
    _CODE_NAME,
    _KEY_CHARS,
    _LINE_KEY_PREFIX,
    _LOGIN_CMD,
    _MYSQL_CMD,
    _NUMBERED_TYPE,
    _PLACEHOLDER_WORD,
    _PROSE_AFTER_FLAG,
    _PROSE_WORD,
    _SSHPASS_CMD,
    _STRING_PREFIXES,
    _TYPE_NAME,
    _TYPE_WORDS,
    _WD,
    _WORD_CHARS,
    _WORDISH,
    PLACEHOLDER_PREFIX,
    _Check,
    _fold,
    _inside_placeholder,
    _is_placeholder_value,
    _is_secret_name,
    _key_start,
    _kind_for_name,
    _left,
    _line_start,
    _looks_random,
    _reads_as_text,
    _Rule,
    _rule,
    _scanner,
    _value_ok,
    placeholder,
)


def _pem_rule() -> _Rule:
    """PEM private-key blocks, whole, and cut-off ones as far as their base64 goes.

    A header with no base64 after it (a constant in code, an example in docs) stays.
    """
    begin = re.compile(
        r"-----BEGIN(?:[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?| OpenVPN Static key V1)-----"
    )
    end = re.compile(
        r"-----END(?:[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?| OpenVPN Static key V1)-----"
    )
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
    """A token of a fixed prefix ``lit`` (regex, fixed width) that starts a word; not a
    placeholder of its shape (``sk_test_xxxx...``, ``AKIAIOSFODNN7EXAMPLE``)."""

    def full(m: re.Match[str], text: str, value: str) -> bool | str:
        if _is_example_token(value):
            return False
        return True if check is None else check(m, text, value)

    return _rule(kind, f"(?P<s>{_left(lit, _WD)}{body})", needle, check=full)


#: Six of one character in a row (``xxxxxx``, ``000000``): a random token of 62 or 16
#: characters has such a run about once in 10^5 to 10^9 tokens; placeholders always do.
_REPEAT = re.compile(r"(.)\1{5}")


def _is_example_token(value: str) -> bool:
    """A placeholder in a token's shape: a run of one character, or the word EXAMPLE that
    AWS's and others' documentation put in their sample keys."""
    return "EXAMPLE" in value or _REPEAT.search(value) is not None


def _example_check(m: re.Match[str], text: str, value: str) -> bool:
    return not _is_example_token(value)


_TELEGRAM = re.compile(r":AA[A-Za-z0-9_-]{31,}(?![A-Za-z0-9_-])")
_TELEGRAM_ID = re.compile(r"(?:^|(?<=[^A-Za-z0-9_])|(?<=bot))[0-9]{8,12}\Z")


_MAILCHIMP = re.compile(r"(?<![0-9A-Za-z_])[0-9a-f]{32}-us[0-9]{1,2}(?![0-9A-Za-z])")


def _mailchimp_run(text: str, hay: str, start: int) -> str:
    """A Mailchimp API key: 32 hex digits, ``-us`` and its data centre's number.

    Tried where each ``-us`` is, 32 characters before it (every match has its ``-us``
    there; no two matches overlap), not at every position of the text: the regex has
    no literal to search for, and ``-us`` (``--user``) is in many outputs."""
    edits = []
    at = start
    while at >= 0:
        m = _MAILCHIMP.match(text, at - 32) if at >= 32 else None
        if m is not None and not _is_example_token(m.group(0)):
            edits.append(m.span())
        at = text.find("-us", at + 1)
    return _replace(text, edits, placeholder("mailchimp_api_key"))


def _replace(text: str, edits: list[tuple[int, int]], ph: str) -> str:
    parts: list[str] = []
    pos = 0
    for a, b in edits:
        if a < pos or _inside_placeholder(text, a):
            continue
        parts += [text[pos:a], ph]
        pos = b
    if not parts:
        return text
    parts.append(text[pos:])
    return "".join(parts)


def _telegram_run(text: str, hay: str, start: int) -> str:
    """A Telegram bot token: the bot's id (digits), ``:AA`` and 31 or more characters."""
    parts: list[str] = []
    pos = 0
    for m in _TELEGRAM.finditer(text, start):
        id_from = max(0, m.start() - 12)
        i = _TELEGRAM_ID.search(text, id_from, m.start())
        if i is None or i.start() < pos or _is_example_token(m.group(0)):
            continue
        parts += [text[pos : i.start()], placeholder("telegram_bot_token")]
        pos = m.end()
    if not parts:
        return text
    parts.append(text[pos:])
    return "".join(parts)


def _random_check(m: re.Match[str], text: str, value: str) -> bool:
    return _looks_random(value)


def _base64_check(m: re.Match[str], text: str, value: str) -> bool:
    """Random base64 has a digit, a capital or a ``/+``; 40 lower-case letters are words."""
    return any(c.isdigit() or c.isupper() or c in "/+" for c in value)


def _bearer_check(m: re.Match[str], text: str, value: str) -> bool:
    return len(value) >= 16 and _looks_random(value)


def _cookie_check(m: re.Match[str], text: str, value: str) -> bool:
    start = m.start()
    if (
        start > 0
        and text[start - 1] in _KEY_CHARS
        and _fold(text[max(0, start - 4) : start]) != "set-"
    ):
        return False
    values = [
        v.strip()
        for k, eq, v in (p.partition("=") for p in value.split(";"))
        if eq and _fold(k.strip()) not in _COOKIE_ATTRIBUTES
    ]
    return any(v and not _is_placeholder_value(v) for v in values)  # not all redacted already


_COOKIE_ATTRIBUTES = frozenset({"path", "domain", "expires", "max-age", "samesite", "priority"})


#: Passwords that examples put in a URL: ``postgres://USER:PASSWORD@HOST``,
#: ``mysql://user:password@localhost``.
_URL_PLACEHOLDERS = frozenset({"password", "pass", "passwd", "pwd", "pw", "secret", "token"})
_CAPS_NAME = re.compile(r"[A-Z][A-Z_]*")


def _url_check(m: re.Match[str], text: str, value: str) -> bool:
    return (
        _value_ok(value)
        and not value.isdigit()
        and value.lower() not in _URL_PLACEHOLDERS
        and _CAPS_NAME.fullmatch(value) is None
        and _PLACEHOLDER_WORD.fullmatch(value) is None
    )


def _url_token_check(m: re.Match[str], text: str, value: str) -> bool:
    """A user name that is a token (``https://TOKEN@host``, a Sentry DSN's key): long,
    with digits and letters, where a person's or a service's name has few digits."""
    digits = sum(c.isdigit() for c in value)
    return (
        len(value) >= 20
        and digits >= 4
        and len(value) - digits >= 4
        and _url_check(m, text, value)
        and not _is_example_token(value)
    )


_DSN_USERINFO = re.compile(r"""(?:^|[\s"'`=(,;])[\w.$%+-]{1,64}:(?P<s>[^\s"'`@/:]{1,256})\Z""")


def _dsn_rule(needle: str) -> _Rule:
    """Go's DSN ``user:PASS@tcp(host:3306)/db`` (and ``@unix(``): the password before the
    protocol's ``@``."""
    ph = placeholder("password")

    def run(text: str, hay: str, start: int) -> str:
        edits: list[tuple[int, int]] = []
        i = start
        while i >= 0:
            m = _DSN_USERINFO.search(text, max(0, i - 256), i)
            if m is not None and _url_check(m, text, m.group("s")):
                edits.append(m.span("s"))
            i = text.find(needle, i + 1)
        return _replace(text, edits, ph)

    return _Rule("password", needle, False, run)


def _curl_user_check(m: re.Match[str], text: str, value: str) -> bool:
    return _value_ok(value) and not value.isdigit()  # docker run -u 1000:1000


def _dash_p_check(m: re.Match[str], text: str, value: str) -> bool:
    if value.startswith("-") or not _value_ok(value):
        return False
    line_from = _line_start(text, m.start())
    prefix = text[line_from if line_from >= 0 else max(0, m.start() - 256) : m.start()]
    low = _fold(prefix)  # quick substring tests before the regexes
    if ("sshpass" in low and _SSHPASS_CMD.search(prefix)) or (
        "login" in low and _LOGIN_CMD.search(prefix)
    ):
        return True
    return m.group("sp") is None and "mysql" in low and _MYSQL_CMD.search(prefix) is not None


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
    if _CHANNEL.fullmatch(value):
        return True  # VERIFY_OTP: 'auth:verify-otp': an event's or a route's name
    if value.isdigit() and len(value) < (4 if kind == "password" else 8):
        return True  # PASSWD_PW_PASSWD: 1, token: 42
    if kind == "password":
        return False
    if not _is_wordish(value):
        return False
    return len(value) <= 32 or any(c in value for c in "._-")


def _call_argument(m: re.Match[str], text: str, name_from: int) -> bool:
    """``define('DB_PASSWORD', 'x')``, ``os.Setenv("DB_PASS", "x")``: the name is a quoted
    first argument of a call that sets something (not ``os.getenv("PW", "dflt")``), and
    the value a quoted second one."""
    if m.start("uq") >= 0 or name_from < 2 or text[name_from - 1] not in "\"'":
        return False
    if text[m.end("w") : m.end("w") + 1] != text[name_from - 1]:
        return False  # the name is not the whole string literal
    j = name_from - 2
    while j >= 0 and text[j] in " \t":
        j -= 1
    if j < 1 or text[j] != "(" or text[j - 1] not in _WORD_CHARS:
        return False  # a tuple or a list of names, not a call
    call = text[_key_start(text, j) : j].rsplit(".", 1)[-1].lower()
    return not call.startswith(_GETTERS)


#: Calls whose second argument is a default, not a value set: ``os.getenv("PW", "x")``.
_GETTERS = ("get", "fetch", "pop", "setdefault", "default", "env", "lookup", "read", "has")


def _method_argument(m: re.Match[str], text: str, name_from: int) -> bool:
    """``storePassword "x"`` (Groovy, Ruby): a name alone at the start of its line and a
    quoted value that ends the line."""
    if m.start("uq") >= 0:
        return False
    line_from = _line_start(text, name_from)
    if line_from < 0 or not _LINE_KEY_PREFIX.fullmatch(text, line_from, name_from):
        return False
    rest = text[m.end() : m.end() + 64].lstrip(" \t\"'")
    return rest == "" or rest.startswith(("\n", "\\n", "\r", "#", "//", "}"))


#: Lower-case words joined by ``:`` ``.`` ``/`` ``_`` ``-``, three or more, perhaps with a
#: version: a name (``crypto:verify-master-key``, ``memry-signing-key-v1``).
_CHANNEL = re.compile(r"[a-z]+(?:[:./_-][a-z]+){2,}(?:[-_.]v?[0-9]{1,3})?")


def _assignment_check(m: re.Match[str], text: str, value: str) -> bool | str:
    name_from = _key_start(text, m.start("w"))
    sep = m.group("sep")
    if sep == ":" and text[name_from : m.end("w")] in ("PASS", "FAIL"):
        return False  # a test runner's "PASS: test_name ..."
    if m.start("uq") < 0 and value[:1].isspace():
        return False  # rg "Password=\" .env": a pattern's quote, then more words
    if sep == "," and (value.isalpha() or not _call_argument(m, text, name_from)):
        return False  # f("password", "email"): a word is a name here, not a secret
    if sep == "" and not _method_argument(m, text, name_from):
        return False
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
            if _more_words(text, m.end("uq")) and (
                (value.isalpha() and value.islower())
                or (len(value) <= 12 and _kind_for_name(text[name_from : m.end("w")]) != "password")
            ):
                return False  # "passwd: password updated successfully": a sentence
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
    if _not_a_secret(name, kind, value) or _reads_as_text(name, kind, value):
        return False  # "Enter your password", API_KEY=your_api_key_here, PW=你的密码
    if m.start("uq") < 0:
        if value.count(" ") >= 4 and (kind != "password" or value.rstrip().endswith(".")):
            return False  # "token": "The token used to sign requests."
    elif m.group("sep") == "=" and m.start("sep") > m.end("w") and _is_code_reference(value):
        return False  # password = credentials: code (a literal would be quoted)
    return kind


def _more_words(text: str, i: int) -> bool:
    """Whether two more words follow ``i`` on its line."""
    return _TWO_WORDS.match(text, i, min(len(text), i + 80)) is not None


_TWO_WORDS = re.compile(r"[ \t]+[A-Za-z]+[ \t]+[A-Za-z]+")


def _is_wordish(value: str) -> bool:
    return len(value) <= 256 and _WORDISH.fullmatch(value) is not None


def _is_type_name(value: str) -> bool:
    if _NUMBERED_TYPE.fullmatch(value):
        return True  # masterKey: Uint8Array
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
    a, b = m.span("s" if scheme is not None else "s3" if m.start("s3") >= 0 else "s2")
    value = text[a:b]
    if _inside_placeholder(text, a) or not _value_ok(value):
        return None
    if scheme is not None and value.isalpha() and value.islower():
        return None  # "Bearer token", "Basic xyz": a word in an example
    if m.start("s3") >= 0 and not (len(value) >= 16 and _looks_random(value)):
        return None  # "Authorization: required for admin": words, not a scheme and a token
    if m.start("s2") >= 0 and text[b : b + 12].lstrip(" \t").startswith(PLACEHOLDER_PREFIX):
        return None  # FlyV1 [REDACTED:...]: the scheme of a token redacted already
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
    r"|=>|:=|=|:"
    r"|,(?<=[\"'],)|,(?<=[\"'][ \t],)"  # define('DB_PASSWORD', '...'): the next argument
    r"|(?<=[ \t])(?=[\"']))"  # storePassword "...": a method call without parentheses
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
            "application",
        )
        for sep in ("", "_", "-")
    )
    + ")"
)
_TOKEN68 = r"[a-z0-9._~+/-]+=*"  # RFC 7235 credentials, lower-cased
_SCHEMES = r"bearer|basic|token|digest|negotiate|ntlm|bot|apikey|hmac|aws4-hmac-sha256"


@functools.cache
def _builtin_rules() -> tuple[_Rule, ...]:
    """The built-in rules, in the order they run: specific shapes first, contexts last."""
    from .code import code_rules
    from .commands import command_rules  # compiled on first use: importing stays cheap
    from .documents import document_rules, prose_rules

    return (
        *document_rules(),
        *_shape_rules(),
        *_vendor_rules(),
        *command_rules(),
        *code_rules(),
        *_context_rules(),
        *_name_rules(),
        *prose_rules(),
    )


def _shape_rules() -> list[_Rule]:
    """Tokens and keys of a known shape, found anywhere."""
    t = _token
    return [
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
        t("groq_api_key", "gsk_", r"[A-Za-z0-9]{40,}", "gsk_"),
        t("xai_api_key", "xai-", r"[A-Za-z0-9]{60,}", "xai-"),
        t("vault_token", r"hv[sbr]\.", r"[A-Za-z0-9_-]{20,}", "hv"),
        t("digitalocean_token", "do[por]_v1_", r"[a-f0-9]{64}", "_v1_"),
        t("grafana_token", "glsa_", r"[A-Za-z0-9]{32}_[a-f0-9]{8}", "glsa_"),
        t("postman_api_key", "PMAK-", r"[a-f0-9]{24}-[a-f0-9]{34}", "PMAK-"),
        t("linear_api_key", "lin_api_", r"[A-Za-z0-9]{40}", "lin_api_"),
        t("shopify_token", "shp(?:at|ss|ca|pa)_", r"[a-fA-F0-9]{32}", "shp"),
        t("databricks_token", "dapi", r"[a-f0-9]{32}(?![A-Za-z0-9])", "dapi"),
        *(
            _rule(
                "aws_access_key",
                rf"(?P<s>{_left(p, _AN)}[A-Z0-9]{{16}}(?![A-Za-z0-9]))",
                p,
                check=_example_check,
            )
            for p in ("AKIA", "ASIA", "ABIA", "ACCA")
        ),
        _rule("azure_sas", r"sig=(?<=[?&]sig=)(?P<s>[A-Za-z0-9%+/=]{20,})", "sig="),
    ]


def _vendor_rules() -> list[_Rule]:
    """More tokens of a known shape (issue 30's review and blind sets)."""
    t = _token
    return [
        t("age_secret_key", "AGE-SECRET-KEY-1", r"[0-9A-Z]{50,}", "AGE-SECRET-KEY-1"),
        t("atlassian_token", "ATATT3", r"[A-Za-z0-9_=-]{60,}", "ATATT3"),
        t("mailgun_api_key", "key-", r"[0-9a-z]{32}(?![0-9A-Za-z])", "key-", _random_check),
        _Rule("mailchimp_api_key", "-us", False, _mailchimp_run),
        t("doppler_token", r"dp\.", r"(?:st|ct|sa|scim|audit|pt)\.[A-Za-z0-9_.-]{30,}", "dp."),
        t("contentful_token", "CFPAT-", r"[A-Za-z0-9_-]{40,}", "CFPAT-"),
        t("posthog_api_key", "phc_", r"[A-Za-z0-9]{40,}", "phc_"),
        t(
            "launchdarkly_key",
            "sdk-",
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "sdk-",
        ),
        t("replicate_token", "r8_", r"[A-Za-z0-9]{37}(?![A-Za-z0-9])", "r8_", _random_check),
        t("tailscale_key", "tskey-", r"[a-z]+-[A-Za-z0-9]{8,}-[A-Za-z0-9]{16,}", "tskey-"),
        _Rule("telegram_bot_token", ":AA", False, _telegram_run),
    ]


def _context_rules() -> list[_Rule]:
    """Secrets found by what stands before them: a key, a header, a URL, a flag."""
    return [*_url_rules(), *_header_rules()]


def _url_rules() -> list[_Rule]:
    """Secrets after an AWS key's name, and in URLs and connection strings."""
    return [
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
                (r"secret[_ ]?access[_ ]?key(?:[ \t]*\[[^\]\n]{0,20}\])?", "secret"),
                (r"aws_?secret_?key", "aws"),
            )
        ),
        _rule(
            "url_password",
            r"""://[^\s:/@'"\\\[\]]*:(?P<s>[^\s@/?#'"\\<>]+)@""",
            "://",
            check=_url_check,
        ),
        _rule(  # a URL in JSON that escapes its slashes: https:\/\/user:PASS@host
            "url_password",
            r""":\\/\\/[^\s:/@'"\\\[\]]*:(?P<s>[^\s@/?#'"\\<>]+)@""",
            ":",  # narrowed in the prefilter to :\/\/ (engine._NARROW)
            check=_url_check,
        ),
        *(
            _rule(  # a token as the user name: https://TOKEN@host, a Sentry DSN
                "url_token",
                rf"{lit}(?P<s>[A-Za-z0-9_.~%+-]{{20,256}})@",
                needle,
                check=_url_token_check,
            )
            for lit, needle in (("://", "://"), (r":\\/\\/", ":"))
        ),
        *(_dsn_rule(n) for n in ("@tcp(", "@unix(", "@udp(", "@tcp6(")),
        *(
            _rule(  # Oracle's user/PASS@db: sqlplus scott/tiger@orcl, jdbc:oracle:thin:u/p@h
                "password",
                rf"{lit}[^\n/@]{{0,40}}?[ \t=:\"']"
                r"[A-Za-z_][\w$#.]{0,63}/(?P<s>[^\s@/\"']{1,256})@",
                lit,
                check=_url_check,
            )
            for lit in ("sqlplus", "sqlldr", "expdp", "impdp", "rman", "oracle:thin")
        ),
    ]


def _header_rules() -> list[_Rule]:
    """Secrets after a header's name or a command line's flag."""
    return [
        _Rule(
            "authorization",
            "authorization",
            True,
            _scanner(
                re.compile(
                    r"""authorization(?:\\*["'])?[ \t]*[:=][ \t]*(?:\\*["'])?[ \t]*"""
                    rf"""(?:(?P<scheme>{_SCHEMES})[ \t]+(?P<s>{_TOKEN68})"""
                    # another scheme (Okta's SSWS, Fly's FlyV1): a word, then a long token
                    rf"""|(?P<other>[a-z][a-z0-9_-]{{1,24}})[ \t]+(?P<s3>{_TOKEN68})"""
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
    ]


def _name_rules() -> list[_Rule]:
    """Values of flags and assignments whose name says secret."""
    return [
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
                ("auth", "auth"),  # netlify --auth TOKEN, jenkins-cli -auth user:TOKEN
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
                (r"pass(?:word|wd|phrase|code|(?<![a-z]pass))", "pass"),
                (r"pwd(?<![a-z]pwd)", "pwd"),
                (r"pw(?<![a-z]pw)", "pw"),
                (r"otp(?<![a-z]otp)", "otp"),
                (r"psk(?<![a-z]psk)", "psk"),
                ("jwt", "jwt"),
                ("sessionid", "sessionid"),
                ("session_id", "session_id"),
                ("key_base", "key_base"),
                (r"auth(?<![a-z]auth)", "auth"),
                ("secret", "secret"),
                ("token", "token"),
                ("credentials?", "credential"),
                (f"key{_SECRET_KEY_LB}", "key"),
                ("phrase", "phrase"),  # pass_phrase, seed_phrase
                ("mnemonic", "mnemonic"),
                ("key-data", "key-data"),  # kubeconfig's client-key-data
                ("key_data", "key_data"),
            )
        ),
    ]


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
    "groq_api_key",
    "xai_api_key",
    "vault_token",
    "digitalocean_token",
    "grafana_token",
    "postman_api_key",
    "linear_api_key",
    "shopify_token",
    "databricks_token",
    "aws_access_key",
    "azure_sas",
    "age_secret_key",
    "atlassian_token",
    "mailgun_api_key",
    "mailchimp_api_key",
    "doppler_token",
    "contentful_token",
    "replicate_token",
    "posthog_api_key",
    "launchdarkly_key",
    "tailscale_key",
    "telegram_bot_token",
    "aws_secret_key",
    "url_password",
    "url_token",
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
