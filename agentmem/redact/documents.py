"""Secrets that a file's format or a sentence says are secrets, whatever they are named.

* ``.pgpass`` lines (``host:port:db:user:PASSWORD``) in a text that names ``.pgpass``
  or on PostgreSQL's ports;
* ``.netrc`` entries (``machine h login u password PASSWORD``);
* Netscape cookie files (the last of seven tab-separated fields);
* every value of a Kubernetes Secret's ``data:`` and ``stringData:`` (YAML or JSON),
  whatever its keys;
* the private lines of a PuTTY key file;
* a bare AWS secret access key next to its key id (CSV, tables, ``aws configure``);
* credentials in prose, in the languages of :data:`PROSE_WORDS`: ``the password is
  hunter2``, ``Das Passwort ist ...``, ``パスワードは ...``, ``su密碼 ...``, and
  ``user/PASSWORD`` after a word for credentials or an account (``admin/Zte521``).

A prose value must look like a password (a digit, or a symbol, among letters or
digits; six digits or more), so ``the password is incorrect`` stays.
"""

from __future__ import annotations

import re

from .base import (
    _PLACEHOLDER_WORD,
    _inside_placeholder,
    _is_secret_name,
    _kind_for_name,
    _reads_as_text,
    _Rule,
    _value_ok,
    placeholder,
)

# --------------------------------------------------------------------------- prose

#: (needle, regex of the word, whether it is matched on the lower-cased text, is CJK).
#: A CJK word may stand right before its value (``su密碼 Zte9x15@``); a word in another
#: script needs a verb or a colon after it (``the password is``, ``Passwort:``).
PROSE_WORDS: tuple[tuple[str, str, bool, bool], ...] = (
    ("password", "password", True, False),
    ("passwort", "passwort", True, False),
    ("kennwort", "kennwort", True, False),
    ("mdp", r"(?<![a-z])mdp", True, False),
    ("wachtwoord", "wachtwoord", True, False),
    ("hasło", "hasło", True, False),
    ("lösenord", "lösenord(?:et)?", True, False),
    ("ifre", "[şŞ]ifre(?:si)?", False, False),
    ("mật khẩu", "mật khẩu", True, False),
    ("mot de passe", "mot de passe", True, False),
    ("contraseña", "contraseña", True, False),
    ("clave", "(?<![a-z])clave", True, False),
    ("senha", "senha", True, False),
    ("ароль", "[пП]ароль", False, False),
    ("token", "token", True, False),
    ("パスワード", "パスワード", False, True),
    ("暗証番号", "暗証番号", False, True),
    ("密码", "密码", False, True),
    ("密碼", "密碼", False, True),
    ("口令", "口令", False, True),
    ("비밀번호", "비밀번호", False, True),
    ("암호", "암호", False, True),
    ("passphrase", "passphrase", True, False),
    ("heslo", r"(?<![a-z])hesl[oa]", True, False),
    ("lozinka", "lozink[ae]", True, False),
    ("parola", r"(?<![a-z])parola", True, False),
    ("salasana", "salasana", True, False),
    ("jelsz", "jelsz(?:ó|ava)", True, False),
    ("passord", "passord(?:et)?", True, False),
    ("adgangskode", "adgangskode(?:n)?", True, False),
    ("kata sandi", "kata sandi(?:nya)?", True, False),
    ("kata laluan", "kata laluan", True, False),
    ("nenosiri", "nenosiri", True, False),
    ("κωδικ", r"[κΚ]ωδικός(?:[ \t]+πρόσβασης)?", False, False),
    ("συνθηματικ", r"[σΣ]υνθηματικό", False, False),
    ("كلمة", "كلمة (?:المرور|السر)", False, False),
    ("گذرواژه", "گذرواژه", False, False),
    ("رمز عبور", "رمز عبور", False, False),
    ("סיסמ", "ה?סיסמ[הא]", False, False),
    ("पासवर्ड", "पासवर्ड", False, False),
    ("পাসওয়ার্ড", "পাসওয়ার্ড", False, False),
    ("รหัสผ่าน", "รหัสผ่าน", False, False),
    ("geslo", r"(?<![a-z])gesl[oa]", True, False),
    ("slaptažod", "slaptažod(?:is|į|žio)", True, False),
    ("parole", r"(?<![a-z])parole", True, False),
    ("parool", r"(?<![a-z])parool", True, False),
    ("парол", "[пП]арол(?:ата|а)", False, False),
    ("лозинк", "[лЛ]озинк[аеу]", False, False),
    ("contrasenya", "contrasenya", True, False),
    ("lykilorð", "lykilorð(?:ið)?", True, False),
    ("패스워드", "패스워드", False, True),
    ("პაროლ", "პაროლი", False, False),
    ("கடவுச்சொல்", "கடவுச்சொல்", False, False),
    ("پاس ورڈ", "پاس ورڈ", False, False),
)
#: Verbs of one language only ("to" is a verb in Polish, a preposition in English).
_OWN_VERBS = {
    "hasło": "to",
    "heslo": "je",
    "lozinka": "je",
    "parola": "este|e|è",
    "salasana": "on",
    "passord": "er",
    "adgangskode": "er",
    "kata sandi": "adalah|ialah",
    "kata laluan": "adalah|ialah",
    "nenosiri": "ni",
    "κωδικ": "είναι",
    "συνθηματικ": "είναι",
    "סיסמ": "היא|הוא|זה",
    "पासवर्ड": "है",
    "পাসওয়ার্ড": "হল",
    "รหัสผ่าน": "คือ",
    "geslo": "je",
    "slaptažod": "yra",
    "parole": "ir|este|est",
    "parool": "on",
    "парол": "е|је",
    "лозинк": "је|е",
    "contrasenya": "és|es",
    "lykilorð": "er",
    "პაროლ": "არის",
    "password": "ay",
}
_VERBS = r"(?:is|was|ist|lautet|war|est|c'est|c’est|es|era|é|è|était|это|jest|är|là|is)"
#: "the password for the admin account is ...", "пароль от сервера: ...".
_FOR = (
    r"(?:[ \t]+(?:for|of|to|on|für|von|zum|de|du|pour|del|para|da|do|от|для|до|per|voor|för)"
    r"[ \t]+[^\n:：=]{1,40}?)?"
)
_SEP_WORD = rf"{_FOR}[ \t]*(?:{_VERBS}[ \t]+(?:[:：][ \t]*)?|[:：][ \t]*)"
#: English words: ``password: x`` and ``password=x`` are the assignment rules' (with their
#: knowledge of code); prose needs a verb, or a value with digits right after the word.
_SEP_VERB = rf"{_FOR}[ \t]*{_VERBS}[ \t]+(?:[:：][ \t]*)?"
_SEP_CJK = r"[ \t]*(?:(?:是|为|為|は|は、|는|은|:|：)[ \t]*)?"
_QUOTE = r"""(?:["'`“「『][ \t]*)?"""
_PROSE_VALUE = r"""(?P<s>[^\s"'`“”「」『』,，。、；;()（）<>\[\]{}]+)"""
_HASH_NAMES = frozenset(
    {"md5", "sha1", "sha256", "sha512", "sha-256", "sha-512", "bcrypt", "argon2", "argon2id"}
    | {"pbkdf2", "scrypt", "base64", "utf8", "utf-8", "sha-1", "hmac-sha256", "aes256"}
)
_NOT_PASSWORD = re.compile(
    r"\d+(?:[.:/-]\d+)*|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|[\w/.-]*\.(?:md|py|txt|json|ya?ml|toml|js|ts)"
    r"|[a-z]+://\S*"
)
_SYMBOLS = frozenset("!@#$%^&*~+=?")


def prose_secret(value: str) -> bool:
    """Whether a word after ``password is`` looks like a password rather than a word."""
    v = value
    if not 4 <= len(v) <= 128 or not v.isascii() or v.startswith("-") or not _value_ok(v):
        return False
    if _PLACEHOLDER_WORD.fullmatch(v) or v.lower() in _HASH_NAMES:
        return False
    if v.isdigit():
        return len(v) >= 6
    if _NOT_PASSWORD.fullmatch(v):
        return False
    has_digit = any(c.isdigit() for c in v)
    has_alpha = any(c.isalpha() for c in v)
    has_symbol = any(c in _SYMBOLS for c in v)
    return has_alpha and (has_digit or has_symbol)


def _trim(text: str, a: int, b: int) -> int:
    """Where a value in a sentence ends: before the sentence's punctuation (``!`` stays:
    passwords end in one more often than sentences around them do)."""
    while b > a and text[b - 1] in ".:?…？！":
        b -= 1
    return b


_ESCAPED_BREAK = re.compile(r"\\[nrt]")


def _prose_rule(needle: str, word: str, fold: bool, cjk: bool) -> _Rule:
    if needle in ("password", "token", "passphrase"):
        verbs = f"(?:{_VERBS}|{_OWN_VERBS[needle]})" if needle in _OWN_VERBS else _VERBS
        sep = rf"{_FOR}[ \t]*{verbs}[ \t]+(?:[:：][ \t]*)?"
    elif needle in _OWN_VERBS:
        verbs = f"(?:{_VERBS}|{_OWN_VERBS[needle]})"
        sep = rf"{_FOR}[ \t]*(?:{verbs}[ \t]+(?:[:：][ \t]*)?|[:：][ \t]*)"
    elif cjk:
        sep = _SEP_CJK
    else:
        sep = _SEP_WORD
    bare = "" if cjk or needle == "token" else "|(?P<bare>[ \t]+)"
    rx = re.compile(f"{word}(?:{sep}{bare}){_QUOTE}{_PROSE_VALUE}")
    ph = placeholder("token" if needle == "token" else "password")

    def run(text: str, hay: str, start: int) -> str:
        edits = []
        for m in rx.finditer(hay, max(0, start - 8)):
            a, b = m.span("s")
            cut = _ESCAPED_BREAK.search(text, a, b)
            if cut is not None:
                b = cut.start()  # a line break escaped in JSON ends the sentence
            b = _trim(text, a, b)
            if b <= a:
                continue
            value = text[a:b]
            digits = any(c.isdigit() for c in value)
            if needle == "token" and not (digits and len(value) >= 8):
                continue
            if bare and m.start("bare") >= 0 and not (digits and len(value) >= 6):
                continue  # "password toor123", not "password reset!"
            quoted = a > 0 and text[a - 1] in "\"'`“「『"
            if prose_secret(value) or (quoted and _quoted_secret(value)):
                edits.append((a, b))
        return _apply(text, edits, ph)

    return _Rule("password", needle, fold, run)


def _quoted_secret(value: str) -> bool:
    """A quoted word after ``the passphrase is``: letters of both cases past the first
    (``'PhPBAEWPrjx'``), where a quoted word of prose has one capital at most."""
    return (
        8 <= len(value) <= 128
        and value.isascii()
        and value.isalnum()
        and any(c.isupper() for c in value[1:])
        and any(c.islower() for c in value)
    )


#: Words before ``user/PASSWORD``: credentials, an account, a login.
_PAIR = re.compile(
    r"(?:credentials?|login|帳號|帐号|账号|賬號|账户|帳戶|帳戶|アカウント|계정)"
    r"(?:[^\n:：/]{0,40}[:：])?[ \t]*(?P<u>[^\s/:：,，]{1,64})[ \t]*/[ \t]*"
    r"(?P<s>[^\s,，。;；/]+)"
)


def _pair_run(text: str, hay: str, start: int) -> str:
    edits = []
    for m in _PAIR.finditer(hay, max(0, start - 16)):
        a, b = m.span("s")
        b = _trim(text, a, b)
        if prose_secret(text[a:b]):
            edits.append((a, b))
    return _apply(text, edits, placeholder("password"))


# --------------------------------------------------------------------------- file formats

_PGPASS_LINE = re.compile(
    r"(?m)^[ \t]*(?:echo[ \t]+)?[\"']?[A-Za-z0-9_.*-]+:(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:"
    r"(?P<s>[^\s\"']+)"
)


def _pgpass_run(text: str, hay: str, start: int) -> str:
    edits = []
    for m in _PGPASS_LINE.finditer(text):
        a, b = m.span("s")
        value = text[a:b]
        if value != "password" and _value_ok(value):
            edits.append((a, b))
    return _apply(text, edits, placeholder("password"))


_NETRC = re.compile(
    r"(?:machine[ \t]+\S+|default)(?:\s+(?:login|account|port)[ \t]+\S+)*\s+password[ \t]+"
    r"(?P<s>\S+)"
)


def _netrc_run(text: str, hay: str, start: int) -> str:
    if "machine" not in hay and "default" not in hay:
        return text
    edits = [
        m.span("s") for m in _NETRC.finditer(text, max(0, start - 4096)) if _value_ok(m.group("s"))
    ]
    return _apply(text, edits, placeholder("password"))


_COOKIE_LINE = re.compile(
    r"(?m)^(?:#HttpOnly_)?[^\t\n#][^\t\n]*\t(?:TRUE|FALSE)\t[^\t\n]*\t(?:TRUE|FALSE)\t\d+\t"
    r"[^\t\n]+\t(?P<s>[^\t\n]+)"
)


def _cookie_jar_run(text: str, hay: str, start: int) -> str:
    edits = [m.span("s") for m in _COOKIE_LINE.finditer(text)]
    return _apply(text, edits, placeholder("cookie"))


_PUTTY = re.compile(r"Private-Lines:[ \t]*(?P<n>\d{1,3})[ \t]*\r?\n")
_B64_LINE = re.compile(r"[A-Za-z0-9+/=]+\r?\n?")


def _putty_run(text: str, hay: str, start: int) -> str:
    edits = []
    for m in _PUTTY.finditer(text, start):
        pos = m.end()
        for _ in range(int(m.group("n"))):
            line = _B64_LINE.match(text, pos)
            if line is None:
                break
            pos = line.end()
        if pos > m.end():
            end = pos - 1 if text[pos - 1] == "\n" else pos
            edits.append((m.end(), end))
    return _apply(text, edits, placeholder("private_key"))


_AWS_ID = re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


def _aws_pair_run(text: str, hay: str, start: int) -> str:
    """A 40-character mixed-case base64 word within two lines after an AWS key id."""
    edits = []
    for m in _AWS_ID.finditer(text, start):
        far = min(len(text), m.end() + 240)
        nl = text.find("\n", m.end(), far)
        stop = -1 if nl < 0 else text.find("\n", nl + 1, far)
        stop = far if stop < 0 else stop
        s = _AWS_SECRET.search(text, m.end(), stop)
        if s is None:
            continue
        v = s.group(0)
        if any(c.isupper() for c in v) and (any(c.islower() for c in v) or "/" in v or "+" in v):
            edits.append(s.span())
    return _apply(text, edits, placeholder("aws_secret_key"))


_XML_ELEMENT = re.compile(
    r"<(?P<n>[A-Za-z_][\w.:-]{0,63})(?:[ \t][^<>\n]{0,200})?>(?P<s>[^<>\n]{1,512})</(?P=n)>"
)
_XML_SETTING = re.compile(
    r"""key=(?P<q>["'])(?P<n>[^"'\n]{1,64})(?P=q)[ \t]+"""
    r"""value=(?P<q2>["'])(?P<s>[^"'\n]{1,512})(?P=q2)"""
)
#: How the closing tag of a secret-named element ends (``</password>``, ``</apiKey>``).
_XML_ENDS = ("password", "passwd", "pass", "pwd", "secret", "token", "key")


def _xml_run(text: str, hay: str, start: int) -> str:
    """``<password>x</password>`` and .NET's ``<add key="ApiSecret" value="x" />``."""
    edits = []
    for rx in (_XML_ELEMENT, _XML_SETTING):
        for m in rx.finditer(text):
            name, value = m.group("n"), m.group("s").strip()
            if not _is_secret_name(name.rsplit(":", 1)[-1]) or not _value_ok(value):
                continue
            kind = _kind_for_name(name)
            if not _reads_as_text(name, kind, value):
                edits.append((*m.span("s"), kind))
    return _apply_each(text, edits)


# --------------------------------------------------------------------------- Kubernetes

_K8S_KIND = re.compile(r"""kind\\?"?[ \t]*:[ \t]*\\?"?secret(?![a-z])""")
_YAML_BLOCK = re.compile(r"(?m)^(?P<i>[ \t]*)(?:data|stringData):[ \t]*$")
_YAML_ITEM = re.compile(r"(?P<i>[ \t]+)(?P<k>[^\s:#][^:\n]*):[ \t]*(?P<v>[^\n]*)")
_JSON_BLOCK = re.compile(r'"(?:data|stringData)"[ \t]*:[ \t]*\{')
_JSON_ITEM = re.compile(r'\s*"(?P<k>(?:[^"\\\n]|\\.)*)"\s*:\s*"(?P<v>(?:[^"\\\n]|\\.)*)"\s*,?')


def _kind_for(key: str) -> str:
    """A Secret's value under a secret-naming key keeps that key's kind."""
    key = key.strip().strip("\"'")
    return _kind_for_name(key) if _is_secret_name(key) else "secret"


def _k8s_run(text: str, hay: str, start: int) -> str:
    edits: list[tuple[int, int, str]] = []
    done = 0
    for m in _K8S_KIND.finditer(hay, max(0, start - 32)):
        if m.start() < done:
            continue
        a = hay.rfind("\n---", max(0, m.start() - 65536), m.start())
        a = max(a, 0, m.start() - 65536)
        far = min(len(text), m.end() + 65536)
        b = hay.find("\n---", m.end(), far)
        b = far if b < 0 else b
        edits += _yaml_data(text, a, b) + _json_data(text, a, b)
        done = b
    return _apply_each(text, edits)


def _yaml_data(text: str, a: int, b: int) -> list[tuple[int, int, str]]:
    edits = []
    for block in _YAML_BLOCK.finditer(text, a, b):
        indent = len(block.group("i"))
        pos = block.end() + 1
        while pos < b:
            item = _YAML_ITEM.match(text, pos, b)
            if item is None or len(item.group("i")) <= indent:
                break
            va, vb = item.span("v")
            value = text[va:vb].strip().strip("\"'")
            if value and not value.startswith(("{{", "$", "|", ">")) and _value_ok(value):
                edits.append((va, vb, _kind_for(item.group("k"))))
            pos = item.end() + 1
    return edits


def _json_data(text: str, a: int, b: int) -> list[tuple[int, int, str]]:
    edits = []
    for block in _JSON_BLOCK.finditer(text, a, b):
        pos = block.end()
        while True:
            item = _JSON_ITEM.match(text, pos, b)
            if item is None:
                break
            if item.group("v") and _value_ok(item.group("v")):
                edits.append((*item.span("v"), _kind_for(item.group("k"))))
            pos = item.end()
    return edits


# --------------------------------------------------------------------------- the rules


def _apply(text: str, edits: list[tuple[int, int]], ph: str) -> str:
    return _apply_each(text, [(a, b, ph) for a, b in edits])


def _apply_each(text: str, edits: list[tuple[int, int, str]]) -> str:
    """``text`` with each span replaced by its placeholder (``kind`` or ``[REDACTED:...]``)."""
    if not edits:
        return text
    parts: list[str] = []
    pos = 0
    for a, b, ph in sorted(set(edits)):
        if a < pos or b <= a or "[REDACTED:" in text[a:b] or _inside_placeholder(text, a):
            continue
        parts += [text[pos:a], ph if ph.startswith("[") else placeholder(ph)]
        pos = b
    parts.append(text[pos:])
    return "".join(parts)


_VSO = re.compile(r"##vso\[task\.setvariable (?P<attrs>[^\]\n]{1,256})\](?P<s>[^\r\n\\]{1,512})")


def _vso_run(text: str, hay: str, start: int) -> str:
    """Azure Pipelines' ``##vso[task.setvariable variable=dbPassword;issecret=true]VALUE``:
    the value of a variable marked secret or named as one."""
    edits = []
    for m in _VSO.finditer(text, start):
        attrs = dict(a.strip().partition("=")[::2] for a in m.group("attrs").split(";") if "=" in a)
        secret = attrs.get("issecret", "").lower() == "true"
        if (secret or _is_secret_name(attrs.get("variable", ""))) and _value_ok(m.group("s")):
            edits.append(m.span("s"))
    return _apply(text, edits, placeholder("password"))


#: Postfix's sasl_passwd: ``[smtp.example.com]:587 user@example.com:PASSWORD``.
_SASL_PASSWD = re.compile(r"(?m)^\[[\w.-]{1,253}\](?::\d{1,5})?[ \t]+[^\s:]{1,128}:(?P<s>\S+)$")


def _sasl_run(text: str, hay: str, start: int) -> str:
    edits = [m.span("s") for m in _SASL_PASSWD.finditer(text) if _value_ok(m.group("s"))]
    return _apply(text, edits, placeholder("password"))


def document_rules() -> list[_Rule]:
    """The rules of this module, in the order they run."""
    return [
        _Rule("aws_secret_key", "AKIA", False, _aws_pair_run),
        _Rule("aws_secret_key", "ASIA", False, _aws_pair_run),
        _Rule("private_key", "Private-Lines:", False, _putty_run),
        _Rule("secret", "secret", True, _k8s_run),
        _Rule("password", "pgpass", True, _pgpass_run),
        _Rule("password", "username:password", True, _pgpass_run),  # its header line
        # a bare line on PostgreSQL's and PgBouncer's usual ports
        *(_Rule("password", f":{port}:", False, _pgpass_run) for port in (5432, 5433, 6432)),
        _Rule("password", "password", True, _netrc_run),
        *(_Rule("secret", f"{w}>", True, _xml_run) for w in _XML_ENDS),
        _Rule("secret", "key=", True, _xml_run),
        _Rule("cookie", "cookie", True, _cookie_jar_run),  # "# Netscape HTTP Cookie File"
        _Rule("password", "##vso[task.setvariable", False, _vso_run),
        _Rule("password", "]:", False, _sasl_run),
    ]


def prose_rules() -> list[_Rule]:
    """Credentials in sentences: run last, after every rule that knows a shape or a name."""
    return [
        *(_prose_rule(*w) for w in PROSE_WORDS),
        *(_Rule("password", n, f, _pair_run) for n, f in _PAIR_NEEDLES),
    ]


_PAIR_NEEDLES = (
    ("credential", True),
    ("login", True),
    *((w, False) for w in ("帳號", "帐号", "账号", "賬號", "账户", "帳戶", "アカウント", "계정")),
)
