"""Secrets that code passes as string literals, where no name says secret next to them.

* the password of a call that logs in or builds credentials, its second string
  argument after a user name: ``HTTPBasicAuth("admin", "PASS")``, ``auth=("api",
  "KEY")``, ``server.login("me@x.io", "PASS")``, ``NetworkCredential("u", "PASS")``,
  ``algoliasearch.Client("APPID", "KEY")``;
* the password of a connection after its data source: JDBC's
  ``DriverManager.getConnection(url, "user", "PASS")``, PHP's ``new PDO($dsn, "user",
  "PASS")``, Perl's ``DBI->connect($dsn, "user", "PASS")``;
* a Terraform variable's ``default`` when the variable's name says secret
  (``variable "db_password" { default = "PASS" }``);
* the private members of a JSON Web Key (``"d"``, ``"p"``, ``"q"``, ``"dp"``, ``"dq"``,
  ``"qi"``, and ``"k"`` of a symmetric key), wherever the key object has a ``"kty"``.

A literal must look like a secret: a digit, a symbol or both cases (or the four groups
of four letters of an app password), so ``login("user", "password")`` and
``HTTPBasicAuth(user, pw)`` stay.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .base import (
    _PLACEHOLDER_WORD,
    _is_secret_name,
    _kind_for_name,
    _reads_as_text,
    _Rule,
    _value_ok,
    placeholder,
)

_LITERAL_PAIR = (
    r"""[ \t]*(?P<q1>\\?["'])[^"'\\\n]{0,128}(?P=q1)[ \t]*,[ \t]*"""
    r"""(?P<q2>\\?["'])(?P<s>[^"'\\\n]{1,256})(?P=q2)"""
)
#: Calls (lower-cased) whose second string argument is a password or a key.
_AUTH_CALL = re.compile(
    r"(?:auth|login|credentials?|authenticate|algoliasearch\.client|searchclient\.create)"
    r"[ \t]*(?:=[ \t]*)?\(?[ \t]*\(" + _LITERAL_PAIR
)
#: Connections given a user and a password after their data source: JDBC's
#: ``getConnection(url, "u", "PASS")``, PHP's ``new PDO($dsn, 'u', 'PASS')``, Perl's
#: ``DBI->connect($dsn, "u", "PASS", {...})``.
_GET_CONNECTION = re.compile(
    r"(?:getconnection|connect|new[ \t]+pdo)\([^()\n]{0,256}?," + _LITERAL_PAIR + r"[ \t]*[,)]"
)
_APP_PASSWORD = re.compile(r"[a-z]{4}(?: [a-z]{4}){3}")


def _literal_secret(value: str) -> bool:
    """A string literal that reads as a password or a key, not a word or a name."""
    v = value.strip()
    if not v or not _value_ok(v) or _PLACEHOLDER_WORD.fullmatch(v):
        return False
    if _APP_PASSWORD.fullmatch(v):
        return True  # a Google app password: four groups of four letters
    if " " in v or len(v) < 6:
        return False
    digit = any(c.isdigit() for c in v)
    alpha = any(c.isalpha() for c in v)
    symbol = any(not c.isalnum() and c not in "_-." for c in v)
    mixed = any(c.isupper() for c in v[1:]) and any(c.islower() for c in v)
    return alpha and (digit or symbol or mixed)


def _matches(rx: re.Pattern[str], hay: str, pos: int) -> Iterator[re.Match[str]]:
    """``rx.finditer(hay, pos)``, tried only where one of its starts (:data:`_STARTS`)
    occurs: the regexes begin with alternatives, so ``re`` finds no literal to search for
    and tries every position of a text (a tool output of 16,000 characters) instead."""
    at = []
    for lit in _STARTS[rx]:
        i = hay.find(lit, pos)
        while i >= 0:
            at.append(i)
            i = hay.find(lit, i + 1)
    at.sort()
    for i in at:
        if i < pos:
            continue  # inside the last match (finditer goes on after it)
        m = rx.match(hay, i)
        if m is not None:
            yield m
            pos = m.end()  # (no match is empty)


def _pair_rule(needle: str, rx: re.Pattern[str]) -> _Rule:
    ph = placeholder("password")

    def run(text: str, hay: str, start: int) -> str:
        edits = [
            m.span("s")
            for m in _matches(rx, hay, max(0, start - 32))
            if _literal_secret(text[m.start("s") : m.end("s")])
        ]
        return _apply(text, edits, ph)

    return _Rule("password", needle, True, run)


_TF_VARIABLE = re.compile(r'variable[ \t]+"(?P<n>[\w-]{1,64})"[ \t]*\{(?P<b>[^{}]{0,1024})\}')
_TF_DEFAULT = re.compile(r'(?m)^[ \t]*default[ \t]*=[ \t]*"(?P<s>[^"\n]{1,256})"')


def _terraform_run(text: str, hay: str, start: int) -> str:
    edits = []
    for m in _TF_VARIABLE.finditer(text, start):
        name = m.group("n")
        if not _is_secret_name(name):
            continue
        d = _TF_DEFAULT.search(text, m.start("b"), m.end("b"))
        if d is None:
            continue
        value = d.group("s")
        if _value_ok(value) and not _reads_as_text(name, _kind_for_name(name), value):
            edits.append(d.span("s"))
    return _apply(text, edits, placeholder("password"))


_JWK_PRIVATE = re.compile(
    r"""\\?"(?:d|p|q|dp|dq|qi|k)\\?"[ \t]*:[ \t]*\\?"(?P<s>[A-Za-z0-9_-]{16,})\\?\""""
)


def _jwk_run(text: str, hay: str, start: int) -> str:
    """The private members of each JSON object that has a ``"kty"``."""
    edits = []
    i = start
    while i >= 0:
        a = text.rfind("{", max(0, i - 4096), i)
        b = text.find("}", i, i + 16384)
        if a >= 0 and b >= 0:
            edits += [m.span("s") for m in _JWK_PRIVATE.finditer(text, a, b)]
        i = text.find("kty", max(i + 3, b))
    return _apply(text, edits, placeholder("private_key"))


def _apply(text: str, edits: list[tuple[int, int]], ph: str) -> str:
    if not edits:
        return text
    parts: list[str] = []
    pos = 0
    for a, b in sorted(set(edits)):
        if a < pos or "[REDACTED:" in text[a:b]:
            continue
        parts += [text[pos:a], ph]
        pos = b
    parts.append(text[pos:])
    return "".join(parts)


#: A Google app password (four groups of four letters) written unquoted after a
#: password's name: ``SMTP_PASS=abcd efgh ijkl mnop``, where the value ends at a space.
_APP_PASSWORD_VALUE = re.compile(
    r"(?:pass|pwd)[\w.]{0,24}[ \t]*[=:][ \t]*(?P<s>[a-z]{4}(?: [a-z]{4}){3})(?![a-z])"
)


#: The literals that every match of each pair regex starts with (``authenticate`` with
#: ``auth``, ``new PDO(`` with ``new``).
_STARTS = {
    _AUTH_CALL: ("auth", "login", "credential", "algoliasearch.client", "searchclient.create"),
    _GET_CONNECTION: ("getconnection", "connect", "new"),
    _APP_PASSWORD_VALUE: ("pass", "pwd"),
}


def code_rules() -> list[_Rule]:
    """The rules of this module, in the order they run."""
    return [
        *(_pair_rule(n, _AUTH_CALL) for n in ("auth", "login", "credential", "algolia")),
        _pair_rule("pass", _APP_PASSWORD_VALUE),
        _pair_rule("pwd", _APP_PASSWORD_VALUE),
        _pair_rule("connect(", _GET_CONNECTION),
        _pair_rule("getconnection(", _GET_CONNECTION),
        _pair_rule("pdo(", _GET_CONNECTION),
        _Rule("password", "variable", False, _terraform_run),
        _Rule("private_key", "kty", False, _jwk_run),
    ]
