"""Tests for agentmem.redact: the corpus of fake secrets and near-misses, JSON walking, properties.

``tests/data/secrets_corpus.jsonl`` holds one record a line. Positives are
``{"text", "kind", "must_redact": true, "secret"}`` where ``secret`` is the fake
secret (or a list of them) that must be gone from the output and ``kind`` the
placeholder kind that must appear; near-misses are ``{"text", "must_redact": false,
"why"}`` and must come out byte for byte. Every secret in it is fake and made up
for these tests. In the file, known token prefixes are written with their first
character as a JSON ``\\u`` escape (``\\u0067hp_...``) so that secret scanners
reading the raw file do not take them for live secrets; ``json.loads`` undoes it.

``tests/data/redaction/`` holds the sets that ``benchmarks/bench_redaction.py``
measures and the README reports: ``secrets.jsonl`` (secrets in context, by category,
each with the exact substrings that must go; ``known_miss`` says why a rule does not
catch one) and ``near_misses.jsonl`` (lines of real transcripts and real code, and
look-alikes, each with its source) that must come out byte for byte.
"""

from __future__ import annotations

import doctest
import json
import re
import string
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agentmem import redact as redact_module
from agentmem.errors import AgentMemError
from agentmem.redact import (
    DEFAULT_REDACTOR,
    KINDS,
    PLACEHOLDER_PREFIX,
    InvalidPatternError,
    Redactor,
    is_secret_key,
    placeholder,
    redact,
    redact_value,
)
from agentmem.redact.base import _VERSION

CORPUS_PATH = Path(__file__).parent / "data" / "secrets_corpus.jsonl"


def _load_corpus() -> list[dict[str, Any]]:
    with CORPUS_PATH.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


CORPUS = _load_corpus()
POSITIVES = [r for r in CORPUS if r["must_redact"]]
NEAR_MISSES = [r for r in CORPUS if not r["must_redact"]]


def _secrets(record: dict[str, Any]) -> list[str]:
    secret = record["secret"]
    return list(secret) if isinstance(secret, list) else [secret]


def _short(record: dict[str, Any]) -> str:
    return record["text"][:40]


# --------------------------------------------------------------------------- the corpus


def test_corpus_size_and_shape() -> None:
    assert len(POSITIVES) >= 60
    assert len(NEAR_MISSES) >= 40
    for r in POSITIVES:
        assert r["kind"] in KINDS, r
        for s in _secrets(r):
            assert s and s in r["text"], r
    # the corpus covers every built-in kind that the brief asks for
    wanted = {
        "aws_access_key",
        "aws_secret_key",
        "github_token",
        "gitlab_token",
        "slack_token",
        "stripe_key",
        "openai_api_key",
        "anthropic_api_key",
        "google_api_key",
        "jwt",
        "private_key",
        "bearer_token",
        "basic_auth",
        "url_password",
        "password",
        "secret",
        "api_key",
        "token",
        "npm_token",
        "huggingface_token",
        "twilio_api_key",
        "sendgrid_api_key",
    }
    assert wanted <= {r["kind"] for r in POSITIVES}


@pytest.mark.parametrize("record", POSITIVES, ids=_short)
def test_positive_is_redacted(record: dict[str, Any]) -> None:
    out = redact(record["text"])
    for secret in _secrets(record):
        assert secret not in out, f"{secret!r} survived in {out!r}"
    assert placeholder(record["kind"]) in out, out


@pytest.mark.parametrize("record", NEAR_MISSES, ids=_short)
def test_near_miss_survives_byte_for_byte(record: dict[str, Any]) -> None:
    assert redact(record["text"]) == record["text"]


@pytest.mark.parametrize("record", CORPUS, ids=_short)
def test_corpus_is_idempotent(record: dict[str, Any]) -> None:
    once = redact(record["text"])
    assert redact(once) == once


def test_corpus_as_one_text() -> None:
    """All records in one text: rules must not reach across records."""
    text = "\n\n".join(r["text"] for r in CORPUS)
    out = redact(text)
    for r in POSITIVES:
        for s in _secrets(r):
            assert s not in out
    for r in NEAR_MISSES:
        assert r["text"] in out


def test_corpus_inside_json() -> None:
    """Tool parameters arrive as JSON text: secrets inside escaped strings go too."""
    for r in POSITIVES:
        text = json.dumps({"tool": "bash", "params": {"command": r["text"]}})
        out = redact(text)
        for s in _secrets(r):
            assert json.dumps(s)[1:-1] not in out, (r["text"], out)


# --------------------------------------------------------------------------- examples


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("DB_PASSWORD=hunter2", "DB_PASSWORD=[REDACTED:password]"),
        ('{"password": "hunter2"}', '{"password": "[REDACTED:password]"}'),
        ("  password: changeme", "  password: [REDACTED:password]"),
        ("Forgot password: reset it", "Forgot password: reset it"),
        ('password: ""', 'password: ""'),
        ("token: 42", "token: 42"),
        ("api_key=abc123", "api_key=[REDACTED:api_key]"),
        ("key=abc123", "key=abc123"),
        ("--token abc123def", "--token [REDACTED:token]"),
        ("pass the --token flag", "pass the --token flag"),
        ("postgres://u:p4ss@h/db", "postgres://u:[REDACTED:url_password]@h/db"),
        ("https://example.com:8080/x", "https://example.com:8080/x"),
        ("Authorization: Bearer $TOKEN", "Authorization: Bearer $TOKEN"),
        ("Cookie: sid=abc123", "Cookie: [REDACTED:cookie]"),
        ("eos_token = '</s>'", "eos_token = '</s>'"),
        ("password: str = 'x9'", "password: str = '[REDACTED:password]'"),
        ("mysql -u root -p dbname", "mysql -u root -p dbname"),
    ],
)
def test_examples(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_truncated_private_key_is_redacted() -> None:
    body = "MIIEowIBAAKCAQEAFAKEFAKEFAKE0123456789abcdefghijklmnopqrstuvwxyzABCDEF"
    out = redact(f"-----BEGIN RSA PRIVATE KEY-----\n{body}")
    assert body not in out
    assert out.startswith(placeholder("private_key"))


def test_escaped_private_key_in_json_string() -> None:
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDFAKEFAKEFAKEFAKEFAKE"
    text = json.dumps(
        {"private_key": f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n"}
    )
    out = redact(text)
    assert body not in out
    assert json.loads(out)["private_key"] == placeholder("private_key") + "\n"


def test_placeholder_and_empty_text() -> None:
    assert placeholder("jwt") == "[REDACTED:jwt]"
    assert placeholder("jwt").startswith(PLACEHOLDER_PREFIX)
    assert redact("") == ""
    assert redact(placeholder("custom")) == placeholder("custom")


def test_docstring_examples() -> None:
    result = doctest.testmod(redact_module.engine)
    assert result.attempted > 0
    assert result.failed == 0


# --------------------------------------------------------------------------- JSON values


def test_redact_value_nested() -> None:
    ghp = "ghp_" + "FAKE" + "a1B2" * 8
    value = {
        "tool": "bash",
        "params": {
            "command": f"git push https://{ghp}@github.com/acme/app.git",
            "env": {"DB_PASSWORD": "hunter2", "DB_USER": "app", "PGPORT": 5432},
        },
        "headers": [{"Authorization": "Basic YWxhZGRpbjpvcGVuc2VzYW1l"}, {"Accept": "*/*"}],
        "auth": {"username": "bob", "password": "s3cret", "pin": 1234},
        "api_key": 123456789,
        "token": None,
        "secret": "",
        "refresh_token": "${REFRESH_TOKEN}",
        "private_key": "~/.ssh/id_ed25519",
        "password_required": True,
        "max_tokens": 128,
        "tokenizer": {"eos_token": "</s>", "pad_token": "<pad>"},
        "outputs": ("ok", f"token={ghp}"),
    }
    out = redact_value(value)
    assert isinstance(out, dict)
    assert out["tool"] == "bash"
    assert out["params"]["command"] == (
        "git push https://[REDACTED:github_token]@github.com/acme/app.git"
    )
    assert out["params"]["env"] == {
        "DB_PASSWORD": "[REDACTED:password]",
        "DB_USER": "app",
        "PGPORT": 5432,
    }
    assert out["headers"] == [{"Authorization": "[REDACTED:authorization]"}, {"Accept": "*/*"}]
    # everything under a secret-named key goes, structure stays
    assert out["auth"] == {
        "username": "[REDACTED:secret]",
        "password": "[REDACTED:secret]",
        "pin": "[REDACTED:secret]",
    }
    assert out["api_key"] == "[REDACTED:api_key]"
    assert out["token"] is None
    assert out["secret"] == ""
    assert out["refresh_token"] == "${REFRESH_TOKEN}"
    assert out["private_key"] == "~/.ssh/id_ed25519"
    assert out["password_required"] is True
    assert out["max_tokens"] == 128
    assert out["tokenizer"] == {"eos_token": "</s>", "pad_token": "<pad>"}
    assert out["outputs"] == ("ok", "token=[REDACTED:github_token]")
    # the input is not modified, and redacting again changes nothing
    assert value["params"]["env"]["DB_PASSWORD"] == "hunter2"  # type: ignore[index]
    assert redact_value(out) == out


def test_redact_value_scalars_and_keys() -> None:
    ghp = "ghp_" + "FAKE" + "x9Y8" * 8
    assert redact_value("AKIAFAKE0123456789AB") == "[REDACTED:aws_access_key]"
    assert redact_value(42) == 42
    assert redact_value(None) is None
    assert redact_value([1, "two", 3.0]) == [1, "two", 3.0]
    assert redact_value({ghp: 1}) == {"[REDACTED:github_token]": 1}
    assert redact_value({1: "x"}) == {1: "x"}


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("password", True),
        ("DB_PASSWORD", True),
        ("passwd", True),
        ("pass", True),
        ("bypass", False),
        ("apiKey", True),
        ("x-api-key", True),
        ("client_secret", True),
        ("SecretAccessKey", True),
        ("GITHUB_TOKEN", True),
        ("refresh_token", True),
        ("Authorization", True),
        ("Set-Cookie", True),
        ("credentials", True),
        ("auth", True),
        ("oauth", False),
        ("max_tokens", False),
        ("token_count", False),
        ("password_hint", False),
        ("eos_token", False),
        ("key", False),
        ("sort_key", False),
        ("secret_santa", False),
    ],
)
def test_is_secret_key(name: str, secret: bool) -> None:
    assert is_secret_key(name) is secret


# --------------------------------------------------------------------------- Redactor


def test_disabled_redactor_is_identity() -> None:
    r = Redactor(enabled=False)
    text = POSITIVES[0]["text"]
    assert r.text(text) == text
    value = {"password": "hunter2", "list": [text]}
    assert r.value(value) == value


def test_default_redactor() -> None:
    assert Redactor() == DEFAULT_REDACTOR
    assert DEFAULT_REDACTOR.enabled
    assert DEFAULT_REDACTOR.extra_patterns == ()


def test_custom_pattern() -> None:
    r = Redactor(extra_patterns=(r"ACME-[0-9]{6}",))
    assert r.text("ticket id ACME-123456 filed") == "ticket id [REDACTED:custom] filed"
    assert r.text("no id here") == "no id here"
    # built-in rules still apply
    assert r.text("DB_PASSWORD=x1 ACME-000001") == (
        "DB_PASSWORD=[REDACTED:password] [REDACTED:custom]"
    )
    assert r.value({"note": "ACME-654321"}) == {"note": "[REDACTED:custom]"}
    # the default redactor does not know the custom shape
    assert redact("ticket id ACME-123456 filed") == "ticket id ACME-123456 filed"


def test_custom_pattern_secret_group_and_idempotence() -> None:
    r = Redactor(extra_patterns=[r"corp_id=(?P<secret>\w+)", "REDACTED", r"[a-z]+"])
    assert r.extra_patterns == (r"corp_id=(?P<secret>\w+)", "REDACTED", r"[a-z]+")
    out = r.text("corp_id=abc123 AKIAFAKE0123456789AB")
    assert "abc123" not in out
    assert "[REDACTED:aws_access_key]" in out
    assert r.text(out) == out


def test_custom_pattern_string_is_one_pattern() -> None:
    assert Redactor(extra_patterns="ACME-\\d+").extra_patterns == ("ACME-\\d+",)


def test_invalid_custom_pattern() -> None:
    with pytest.raises(InvalidPatternError) as info:
        Redactor(extra_patterns=("([unclosed",))
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, AgentMemError)
    assert "([unclosed" in str(info.value)


# --------------------------------------------------------------------------- speed


def test_ten_megabytes() -> None:
    """A 10 MB tool output of secrets and near-misses returns (no timing assertion)."""
    chunk = "\n".join(r["text"] for r in CORPUS) + "\n"
    text = chunk * (10 * 2**20 // len(chunk) + 1)
    out = redact(text)
    assert len(text) >= 10 * 2**20
    assert _secrets(POSITIVES[0])[0] not in out
    assert NEAR_MISSES[0]["text"] in out


@pytest.mark.parametrize(
    "text",
    [
        "eyJ" * 400_000,
        "eyJabcdefghij." * 80_000,
        "ghp_" + "a" * 1_000_000,
        "A" * 1_000_000,
        "token=" * 200_000,
        "key=key=key=(" * 100_000,
        "password: " + "x" * 1_000_000,
        '"password": "' + "\\\\" * 500_000,
        "://a:" * 200_000,
        "-----BEGIN RSA PRIVATE KEY-----" * 30_000,
        "-----BEGIN RSA PRIVATE KEY-----\n" + "QUJD " * 200_000,
        "Authorization: " * 70_000,
        "Bearer " * 150_000,
        "docker login " * 80_000 + "-p x",
        "-u " * 300_000,
        "sk-" * 300_000,
        "xoxb-" * 200_000,
        "sig=" * 250_000,
        "?sig=" + "A" * 1_000_000,
        "AKIA" * 250_000,
        '"api_key": "' + "a" * 200 + '!", ' * 4_000,
        "token = " + "aB" * 120 + "!\n" * 3_000,
        "auth: " + "_" * 250 + "!\n" * 3_000,
        # the command, file-format and prose rules
        "redis-cli -a " * 80_000,
        "htpasswd -b " * 90_000,
        "net use /user:x " * 60_000,
        "openssl -passin " * 60_000,
        "echo x | --password-stdin " * 40_000,
        "the password is " * 60_000,
        "password for " * 80_000,
        "密码" * 500_000,
        "kind: Secret\ndata:\n" + "  k: v\n" * 150_000,
        "kind: Secret " * 80_000,
        "Private-Lines: 999\n" * 50_000,
        "AKIA0000000000000000 " * 50_000,
        "machine x login y " * 60_000,
        ".pgpass\n" + "a:1:b:c:" * 120_000,
        "cookie\n" + "x\tTRUE\t" * 120_000,
        "<password>" * 100_000,
        "key='x' value='" * 60_000,
        "login a/" * 120_000,
        "[REDACTED:x" * 90_000,
    ],
    ids=lambda t: repr(t[:16]),
)
def test_pathological_inputs_are_linear(text: str) -> None:
    """About 1 MB of worst cases: a quadratic rule would take minutes, not a second."""
    start = time.perf_counter()
    out = redact(text)
    assert redact(out) == out
    assert time.perf_counter() - start < 20


# --------------------------------------------------------------------------- properties

# Pieces to build texts from: whole corpus records, their words, and glue.
_WORDS = sorted({w for r in CORPUS for w in r["text"].split()})
_PIECES = st.one_of(
    st.sampled_from([r["text"] for r in CORPUS]),
    st.sampled_from(_WORDS),
    st.sampled_from(
        [" ", "\n", "=", ": ", '"', "'", "\\n", '\\"', "-", "--", "/", "@", "://", ":", "[", "]"]
    ),
    st.sampled_from(["password", "token", "api_key", "Bearer ", "Authorization: ", "-p ", "-u "]),
    st.sampled_from([placeholder(k) for k in KINDS]),
    st.text(max_size=12),
)
_MIXED = st.lists(_PIECES, max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_raises_and_is_idempotent_on_any_text(text: str) -> None:
    once = redact(text)
    assert isinstance(once, str)
    assert redact(once) == once


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_MIXED)
def test_idempotent_on_secret_like_text(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


_PLAIN = string.ascii_lowercase + " \n.,!?'"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_PLAIN, max_size=300))
def test_plain_lowercase_prose_passes_unchanged(text: str) -> None:
    """No digits, capitals, ``_-=:/@`` or quotes but ``'``: no rule can fire."""
    assert redact(text) == text


_ALNUM = string.ascii_letters + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_SHAPED = st.one_of(
    st.text(alphabet=_ALNUM, min_size=36, max_size=40).map(lambda b: "ghp_" + b),
    st.text(alphabet=_ALNUM, min_size=36, max_size=36).map(lambda b: "npm_" + b),
    st.text(alphabet=_UPPER_DIGITS, min_size=16, max_size=16).map(lambda b: "AKIA" + b),
    st.text(alphabet=_ALNUM + "-_", min_size=35, max_size=35).map(lambda b: "AIza" + b),
    st.text(alphabet=_ALNUM, min_size=24, max_size=30).map(lambda b: "sk_live_" + b),
    st.text(alphabet=_ALNUM + "-_", min_size=30, max_size=60).map(lambda b: "sk-ant-api03-" + b),
    st.text(alphabet=_ALNUM + "-_", min_size=20, max_size=30).map(lambda b: "glpat-" + b),
    st.text(alphabet=_ALNUM, min_size=34, max_size=34).map(lambda b: "hf_" + b),
)
_SURROUND = st.text(alphabet=_PLAIN, max_size=40)


@settings(max_examples=300, deadline=None)
@given(_SURROUND, _SHAPED, _SURROUND, st.sampled_from([" ", "\n", "=", ": ", '"', "(", "\t"]))
def test_shaped_secret_in_prose_is_removed(before: str, secret: str, after: str, sep: str) -> None:
    # a run of six of one character is a placeholder of the shape (sk_test_xxxx...)
    assume(re.search(r"(.)\1{5}", secret) is None and "EXAMPLE" not in secret)
    text = f"{before}{sep}{secret} {after}"
    out = redact(text)
    assert secret not in out
    assert PLACEHOLDER_PREFIX in out


_VALUE_CHARS = _ALNUM + " !#%&*+,-.:;=?@^_|~()[]{}'`<>$"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_VALUE_CHARS, max_size=60), st.sampled_from(_ALNUM), st.integers(0, 9))
def test_assigned_password_is_removed(middle: str, first: str, digit: int) -> None:
    """Whatever is quoted after ``DB_PASSWORD=`` goes, if it starts like a value and is
    no version (``"00.0"``, as in ``"jsonwebtoken": "^9.0.2"``: left, on purpose; found by
    this test in a CI run)."""
    value = f"{first}{middle}{digit}"
    assume(len(value) >= 4 and not value.startswith("arn:") and not _VERSION.fullmatch(value))
    out = redact(f'export DB_PASSWORD="{value}"')
    assert out == 'export DB_PASSWORD="[REDACTED:password]"'


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20) | _PIECES,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.one_of(st.text(max_size=8), st.sampled_from(["password", "token", "key", "auth"])),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_JSON)
def test_redact_value_never_raises_and_is_idempotent(value: Any) -> None:
    once = redact_value(value)
    assert redact_value(once) == once
    assert Redactor(enabled=False).value(value) == value


# --------------------------------------------------------------------------- the prefilter


def test_prefilter_finds_every_corpus_secret() -> None:
    """Every positive trips the one-scan prefilter, alone and inside a repr or JSON."""
    for r in POSITIVES:
        assert DEFAULT_REDACTOR.needs(r["text"]), _short(r)
        assert DEFAULT_REDACTOR.needs(repr({"k": r["text"]})), _short(r)
        assert DEFAULT_REDACTOR.needs(json.dumps([r["text"]], ensure_ascii=False)), _short(r)


def test_prefilter_needles_survive_repr_and_json() -> None:
    """The trajectory fast path scans repr(params): a needle must not hold a character
    that repr or JSON escapes, or a secret could hide behind the escaping."""
    rx = redact_module.engine._prefilter()
    words = [
        *redact_module.engine._KEY_WORDS,
        *(r.needle for r in redact_module.rules._builtin_rules()),
    ]
    for w in words:
        assert not set(w) & set("'\"\\") and w.isprintable() and repr(w)[1:-1] == w, w
        assert rx.search(w.lower()) or w.lower() in redact_module.engine._NARROW, w
    for name in ("password", "GITHUB_TOKEN", "apiKey", "Authorization", "Cookie", "pwd"):
        assert is_secret_key(name) and DEFAULT_REDACTOR.needs(repr({name: 1})), name


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_MIXED)
def test_text_the_prefilter_passes_is_left_alone(text: str) -> None:
    assert DEFAULT_REDACTOR.needs(text) or redact(text) == text


_KEYS = st.one_of(st.sampled_from(_WORDS), st.sampled_from(["password", "n", "token", "x_key"]))
_VALUES = st.recursive(
    st.one_of(_MIXED, st.integers(), st.none(), st.booleans()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_KEYS, _VALUES, max_size=4))
def test_a_value_whose_repr_the_prefilter_passes_is_left_alone(value: dict[str, Any]) -> None:
    assert DEFAULT_REDACTOR.needs(repr(value)) or redact_value(value) == value


def test_narrow_shapes_still_find_their_tokens() -> None:
    """'task', 'through' and 'global' do not trip the prefilter; the tokens those needles
    start do."""
    assert not DEFAULT_REDACTOR.needs("the task went through the global queue")
    for token in ("SK" + "0123456789abcdef" * 2, "ghp_" + "A1b2" * 9, "glpat-" + "x1Y2" * 5):
        assert DEFAULT_REDACTOR.needs(f"see {token} here"), token
        assert token not in redact(f"see {token} here")


# --------------------------------------------------------------------------- the sets

# tests/data/redaction/: secrets in context (each with the exact substrings that must
# go) and near-misses from real transcripts, real code and look-alikes (byte for byte);
# benchmarks/bench_redaction.py measures the same sets against today's rules and
# detect-secrets.
SETS = Path(__file__).parent / "data" / "redaction"


def _load_set(name: str) -> list[dict[str, Any]]:
    with (SETS / name).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


SET_SECRETS = _load_set("secrets.jsonl")
SET_NEAR = _load_set("near_misses.jsonl")


def test_the_sets_are_big_and_honest() -> None:
    assert len(SET_SECRETS) >= 100 and len(SET_NEAR) >= 100
    for r in SET_SECRETS:
        assert r["secret"] and all(s and s in r["text"] for s in r["secret"]), r
    categories = {r["category"] for r in SET_SECRETS}
    wanted = {"env", "cli", "header", "cookie", "connstr", "pgpass", "k8s", "keys"}
    assert wanted | {"private_key", "cloud", "vendor", "jwt", "prose"} <= categories
    prose = " ".join(r["text"] for r in SET_SECRETS if r["category"] == "prose")
    languages = ["password", "Passwort", "mot de passe", "contraseña", "パスワード", "密码", "密碼"]
    assert all(w in prose for w in languages)
    real = [r for r in SET_NEAR if r["source"].startswith(("transcript:", "code:"))]
    assert len(real) >= 100  # drawn from real transcripts and real code


@pytest.mark.parametrize(
    "record",
    [
        pytest.param(r, marks=pytest.mark.xfail(reason=r["known_miss"], strict=True))
        if "known_miss" in r
        else r
        for r in SET_SECRETS
    ],
    ids=lambda r: r["text"][:40],
)
def test_set_secret_is_gone_as_text_and_as_a_parameter(record: dict[str, Any]) -> None:
    """Every secret of the set goes, but for the few marked ``known_miss`` (and why)."""
    out = redact(record["text"])
    params = json.dumps(redact_value({"command": record["text"]}), ensure_ascii=False)
    for secret in record["secret"]:
        assert secret not in out, f"{secret!r} survived in {out!r}"
        assert secret not in json.loads(params)["command"]
    assert redact(out) == out


@pytest.mark.parametrize("record", SET_NEAR, ids=lambda r: r["text"][:40])
def test_set_near_miss_is_untouched(record: dict[str, Any]) -> None:
    assert redact(record["text"]) == record["text"]
    assert redact_value({"command": record["text"]}) == {"command": record["text"]}


def test_the_sets_through_the_recording_paths(tmp_path: Path) -> None:
    """What the README reports: recall >= 0.97 and false positives < 1% on what
    ``Memory.record`` stores (task, parameters, output) and what a team is sent."""
    from agentmem import Memory, Step, Trajectory
    from agentmem.team.outbox import redact_json as _redact_json
    from agentmem.team.outbox import redact_text as _redact_text

    def stored(texts: list[str]) -> list[list[str]]:
        with Memory.open(tmp_path / f"r{len(texts)}.db") as mem:
            ids = mem.record_many(
                [Trajectory(task=t, steps=[Step("bash", {"command": t}, t, True)]) for t in texts]
            )
            out = []
            for tid, text in zip(ids, texts, strict=True):
                t = mem.get_trajectory(tid)
                shared = json.loads(_redact_json(json.dumps({"command": text})) or "{}")
                out.append(
                    [
                        t.task,
                        t.steps[0].output,
                        t.steps[0].params["command"],
                        _redact_text(text) or "",
                        shared["command"],
                    ]
                )
            return out

    copies = stored([r["text"] for r in SET_SECRETS])
    missed = [
        r
        for r, cs in zip(SET_SECRETS, copies, strict=True)
        if any(s in c for s in r["secret"] for c in cs)
    ]
    copies = stored([r["text"] for r in SET_NEAR])
    changed = [r for r, cs in zip(SET_NEAR, copies, strict=True) if any(c != r["text"] for c in cs)]
    assert 1 - len(missed) / len(SET_SECRETS) >= 0.97, missed
    assert len(changed) / len(SET_NEAR) < 0.01, changed


def test_a_kubernetes_secret_as_a_json_value() -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "app"},
        "data": {"DATABASE_URL": "cG9zdGdyZXM6Ly9hOmJAZGIvYQ==", "ca.crt": "LS0tLS1CRUdJTg=="},
        "stringData": {"endpoint": "https://api.example.com/v1", "user": "svc"},
    }
    out = redact_value({"manifest": manifest})
    assert isinstance(out, dict)
    got = out["manifest"]
    assert got["data"] == {"DATABASE_URL": "[REDACTED:secret]", "ca.crt": "[REDACTED:secret]"}
    assert got["stringData"]["user"] == "[REDACTED:secret]"
    assert got["metadata"] == {"name": "app"} and got["kind"] == "Secret"
    config_map = {**manifest, "kind": "ConfigMap"}
    assert redact_value(config_map) == config_map


# --------------------------------------------------------------------------- issue 30: held out

# Sets written after the rules: blind set 2 (before any rule of issue 30 changed, kinds
# in no other set), the review's list of misses and false positives, and blind set 3
# (after issue 30's rules, before they met it). Their first-try figures are in
# docs/security-redaction-rules.md.
HELD_OUT = {
    "blind2": (_load_set("blind2_secrets.jsonl"), _load_set("blind2_near_misses.jsonl")),
    "review30": (_load_set("review30_secrets.jsonl"), _load_set("review30_near_misses.jsonl")),
    "blind3": (_load_set("blind3_secrets.jsonl"), _load_set("blind3_near_misses.jsonl")),
}


def test_the_held_out_sets_are_big_and_honest() -> None:
    for blind in ("blind2", "blind3"):
        secrets, near = HELD_OUT[blind]
        assert len(secrets) >= 30 and len(near) >= 30
    for name, (secrets, near) in HELD_OUT.items():
        for r in secrets:
            assert r["secret"] and all(s and s in r["text"] for s in r["secret"]), (name, r)
        assert all(r["why"] and r["source"] for r in near), name
    originals = {r["text"] for r in SET_SECRETS} | {r["text"] for r in SET_NEAR}
    # written without the other sets in view: three common near-misses came out the same
    assert originals & {r["text"] for s, n in HELD_OUT.values() for r in s + n} == {
        'password: "********"',
        "psql -h localhost -p 5432 -U postgres -d app",
        "비밀번호를 입력하세요",
    }


@pytest.mark.parametrize(
    "record",
    [
        pytest.param(r, marks=pytest.mark.xfail(reason=r["known_miss"], strict=True))
        if "known_miss" in r
        else r
        for s, _ in HELD_OUT.values()
        for r in s
    ],
    ids=lambda r: r["text"][:40],
)
def test_held_out_secret_is_gone(record: dict[str, Any]) -> None:
    out = redact(record["text"])
    value = json.dumps(redact_value({"c": record["text"], "l": [record["text"]]}))
    for secret in record["secret"]:
        assert secret not in out, f"{secret!r} survived in {out!r}"
        assert json.dumps(secret)[1:-1] not in value
    assert redact(out) == out


@pytest.mark.parametrize(
    "record", [r for _, n in HELD_OUT.values() for r in n], ids=lambda r: r["text"][:40]
)
def test_held_out_near_miss_is_untouched(record: dict[str, Any]) -> None:
    assert redact(record["text"]) == record["text"]
    assert redact_value({"c": record["text"]}) == {"c": record["text"]}


def test_recall_and_false_positives_over_all_sets() -> None:
    """What docs/security-redaction-rules.md reports: recall >= 0.97 and false positives
    under 1% over every set together."""
    secrets = SET_SECRETS + [r for s, _ in HELD_OUT.values() for r in s]
    near = SET_NEAR + [r for _, n in HELD_OUT.values() for r in n]
    missed = [r for r in secrets if any(s in redact(r["text"]) for s in r["secret"])]
    changed = [r for r in near if redact(r["text"]) != r["text"]]
    assert 1 - len(missed) / len(secrets) >= 0.97, missed
    assert len(changed) / len(near) < 0.01, changed


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("curl -sSfu ci:Zq81xWv3Lp https://x.io", "Zq81xWv3Lp"),  # a cluster of flags
        ("curl -uci:Zq81xWv3Lp https://x.io", "Zq81xWv3Lp"),  # glued to -u
        ('dsn := "app:Zq81xWv3Lp@tcp(db:3306)/x"', "Zq81xWv3Lp"),  # Go
        ('{"u": "https:\\/\\/ci:Zq81xWv3Lp@git.x.io\\/r"}', "Zq81xWv3Lp"),  # JSON-escaped
        ("git push https://3f2a9c81d07b4e6fa5c2d8e19b7a40c6f1e2d3b4@host/r.git", "3f2a9c81d07b"),
        ("export APPLICATION_KEY=K005zQ81xWv3LpQ81xWv3Lp", "K005zQ81xWv3LpQ81xWv3Lp"),
        ("  client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=", "LS0tLS1CRUdJ"),
        ('os.Setenv("DB_PASS", "Zq81xWv3Lp")', "Zq81xWv3Lp"),
        ('    keyPassword "Zq81xWv3Lp"', "Zq81xWv3Lp"),
        ('auth = HTTPBasicAuth("admin", "Zq81xWv3Lp")', "Zq81xWv3Lp"),
        ("la contraseña es Zq81xWv3Lp", "Zq81xWv3Lp"),
        ("Пароль до сервера: Zq81xWv3Lp", "Zq81xWv3Lp"),
        ("salasana on Zq81xWv3Lp", "Zq81xWv3Lp"),
        ("the passphrase is 'ZqxWvLpQrT'", "ZqxWvLpQrT"),
        ("localhost:5432:*:postgres:Zq81xWv3Lp", "Zq81xWv3Lp"),
        ("fly -t ci login -c https://ci.x.io -u admin -p Zq81xWv3Lp", "Zq81xWv3Lp"),
        ("$pdo = new PDO($dsn, 'shop', 'Zq81xWv3Lp');", "Zq81xWv3Lp"),
        ("travis env set API_TOKEN Zq81xWv3Lp --private", "Zq81xWv3Lp"),
        ("[smtp.x.io]:587 me@x.io:Zq81xWv3Lp", "Zq81xWv3Lp"),
        ("Email__Gmail__Pass=abcd efgh ijkl mnop", "efgh ijkl mnop"),  # an app password
    ],
)
def test_issue_30_structures(text: str, gone: str) -> None:
    assert gone not in redact(text), redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "STRIPE_SECRET_KEY=sk_test_xxxxxxxxxxxxxxxxxxxxxxxx",  # a placeholder of its shape
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",  # AWS's documentation
        "DATABASE_URL=postgres://USER:PASSWORD@HOST:5432/DB",
        "mysql://user:password@localhost/db",
        "https://deploy-bot@github.com/acme/app.git",  # a short user name
        'x = os.getenv("DB_PASSWORD", "postgres1")',  # a default read, not set
        'exclude = ("password", "Zq81xWv3Lp")',  # a tuple, not a call
        'f("password", "email")',  # a word, not a secret
        "passwd: password updated successfully",
        "the password on server1 is required",
        # a line break escaped in JSON ends the sentence (real: cpolar-connect's README)
        "# 或使用环境变量提供密码\\nCPOLAR_PASSWORD=your_password cpolar-connect",
        # an f-string's expression cut at its inner quote (real: a deploy script)
        'f\'export CLIENT_SECRET="{info["client_secret"]}"\',',
        "Authorization: required for every admin call",
        "ssh login@bastion.x.io -p 2222",  # a port after a user named login
        'sqlite3.connect("app.db")',  # one argument
        'redis.connect("localhost", "6379")',  # a port, not a password
        "travis env set DEPLOY_REGION eu-west-1",  # not a secret's name
        # shapes of false positives found in real sessions (benchmarks/redaction_corpus.py)
        "  PASS: FP8 scaling works correctly",  # a test runner's output
        '    "jsonwebtoken": "^9.0.2",',  # a package version
        "  appSecret: process.env.APP_SECRET || 'dev'",  # a reference
        "function derive(masterKey: Uint8Array): Uint8Array {",  # a type
        "    VERIFY_OTP: 'auth:verify-otp',",  # an event's name
        "  SIGNING_KEY: 'app-signing-key-v1',",  # a derivation label
        "// - 'master-key': Base64 encoded master key",  # prose
        '    "nextPageToken": "CAUQAA",',  # a page cursor
        "session_id: abc123",  # a short example id
        "OPENAI_API_KEY=***REMOVED***",  # redacted by another tool
        'headers={"Authorization": "Bearer token"},',  # a word
        'rg -n "ApiKey|Password=\\" .env.api .env.local',  # a pattern's quote
        "const token = \"'`${tokenPrefix}${index++}__`;",  # a template in shell quotes
    ],
)
def test_issue_30_placeholders_and_code_stay(text: str) -> None:
    assert redact(text) == text


# --------------------------------------------------------------------------- rules skipped


def _every_rule(text: str) -> str:
    """Redaction as it was before rules were skipped: every rule whose needle occurs."""
    from agentmem.redact.base import _fold

    out = text
    for rule in redact_module.rules._builtin_rules():
        hay = _fold(out) if rule.fold else out
        start = hay.find(rule.needle)
        if start >= 0:
            out = rule.run(out, hay, start)
    return out


def test_skipping_rules_changes_no_result_on_the_sets() -> None:
    """The prefilter's matches decide which rules run (engine._Presence); a rule it skips
    must be one that would change nothing."""
    texts = [r["text"] for r in SET_SECRETS + SET_NEAR]
    texts += [r["text"] for s, n in HELD_OUT.values() for r in s + n]
    texts += [r["text"] for r in CORPUS]
    for text in texts:
        assert redact(text) == _every_rule(text), text


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_MIXED)
def test_skipping_rules_changes_no_result(text: str) -> None:
    assert redact(text) == _every_rule(text)


# --------------------------------------------------------------------------- the automaton


def _all_set_texts() -> list[str]:
    texts = [r["text"] for r in SET_SECRETS + SET_NEAR]
    texts += [r["text"] for s, n in HELD_OUT.values() for r in s + n]
    return texts + [r["text"] for r in CORPUS]


def _regex_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Redaction as it runs where ``ahocorasick_rs`` is not installed: the prefilter regex."""
    monkeypatch.setattr(redact_module.engine, "_automaton", lambda: None)


def test_the_automaton_runs_the_rules_whose_needle_occurs_and_no_other() -> None:
    """The automaton picks exactly the rules whose own needle occurs (a narrow needle's
    where its shape does), each of them one the prefilter regex would run too."""
    pytest.importorskip("ahocorasick_rs")
    engine = redact_module.engine
    automaton = engine._automaton()
    assert automaton is not None
    presence = engine._presence()
    shapes = {n: re.compile(re.escape(c) + rest) for n, (c, rest) in engine._NARROW.items()}
    for text in _all_set_texts():
        folded = redact_module.base._fold(text)
        chosen = automaton.rules_for(folded)
        needles = [rule.needle.lower() for rule, _ in presence.rules]
        occur = [
            i
            for i, n in enumerate(needles)
            if n in folded and (n not in shapes or shapes[n].search(folded))
        ]
        assert chosen == occur, text
        matches = engine._prefilter().findall(folded)
        by_regex = presence.to_run(presence.needles(set(matches))) if matches else []
        assert {id(r) for r, _ in by_regex} >= {id(presence.rules[i][0]) for i in chosen}, text


#: Pieces of the narrow needles' shapes (a GitHub or GitLab token's start, a Twilio key's
#: ``sk`` and hex, an escaped URL's ``:\\/\\/``, a Replicate token) and what breaks them.
_NARROW_PIECES = st.sampled_from(
    [
        *("sk", "gh", "gl", "p_", "o_", "s", "k", "pat-", "agent-", "soat", "-", ":", "\\"),
        *("/", "r8", "_", "r8_", "0123456789abcdef", "abcdef0123456789", "a" * 37, "x", " "),
        "\x00",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_NARROW_PIECES, max_size=16).map("".join))
def test_the_automaton_finds_a_narrow_needles_shape_wherever_it_occurs(text: str) -> None:
    """The narrow needles' rules run where their shape occurs, found from the shape's
    literals (engine._NARROW_LITERALS) and nowhere else, as a search of the shape finds."""
    pytest.importorskip("ahocorasick_rs")
    engine = redact_module.engine
    automaton = engine._automaton()
    assert automaton is not None
    presence = engine._presence()
    shapes = {n: re.compile(re.escape(c) + rest) for n, (c, rest) in engine._NARROW.items()}
    folded = redact_module.base._fold(text)
    needles = [rule.needle.lower() for rule, _ in presence.rules]
    occur = [
        i
        for i, n in enumerate(needles)
        if n in folded and (n not in shapes or shapes[n].search(folded))
    ]
    assert automaton.rules_for(folded) == occur
    anywhere = any(
        shapes[n].search(folded) if n in shapes else n in folded for n in engine._needles()
    )
    assert bool(list(automaton.starts(folded))) == anywhere


def test_the_automaton_and_the_regex_redact_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every text of the sets comes out the same with the automaton and without it."""
    pytest.importorskip("ahocorasick_rs")
    texts = _all_set_texts()
    with_automaton = [(redact(t), DEFAULT_REDACTOR.needs(t)) for t in texts]
    _regex_only(monkeypatch)
    assert [(redact(t), DEFAULT_REDACTOR.needs(t)) for t in texts] == with_automaton


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_MIXED)
def test_the_automaton_and_the_regex_redact_alike_on_any_text(text: str) -> None:
    pytest.importorskip("ahocorasick_rs")
    engine = redact_module.engine
    with_automaton = (redact(text), DEFAULT_REDACTOR.needs(text))
    saved = engine._automaton
    engine._automaton = lambda: None  # type: ignore[assignment]
    try:
        assert (redact(text), DEFAULT_REDACTOR.needs(text)) == with_automaton
    finally:
        engine._automaton = saved  # type: ignore[assignment]


def test_without_the_automaton_the_sets_give_the_same_figures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pure-Python path (no ``ahocorasick_rs``) is the one the rules were measured
    with: it still redacts as every rule would."""
    _regex_only(monkeypatch)
    for text in _all_set_texts():
        assert redact(text) == _every_rule(text), text


def test_needing_is_needs_of_each_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """One scan of many texts says of each what a scan of it alone says, with the
    automaton and with the regex."""
    texts = [*_all_set_texts()[:400], "", "task", "the sk-x", "İstanbul", "HASŁO: x", ":"]
    assert DEFAULT_REDACTOR.needing(texts) == [DEFAULT_REDACTOR.needs(t) for t in texts]
    _regex_only(monkeypatch)
    assert DEFAULT_REDACTOR.needing(texts) == [DEFAULT_REDACTOR.needs(t) for t in texts]
    assert Redactor(enabled=False).needing(texts) == [False] * len(texts)
    assert Redactor(extra_patterns=["x"]).needing(["", "a"]) == [False, True]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_MIXED, max_size=6))
def test_needing_is_needs_of_each_text_on_any_texts(texts: list[str]) -> None:
    assert DEFAULT_REDACTOR.needing(texts) == [DEFAULT_REDACTOR.needs(t) for t in texts]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _MIXED,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "token", "api_key", "cmd", "kind"]), inner)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_JSON)
def test_value_with_keep_is_value_and_keeps_what_does_not_change(value: Any) -> None:
    """``keep``: the same result, and the value itself where nothing in it changed."""
    plain = DEFAULT_REDACTOR.value(value)
    kept = DEFAULT_REDACTOR.value(value, keep=True)
    assert kept == plain
    if kept is value:
        assert plain == value


def test_value_with_keep_returns_the_parts_that_do_not_change() -> None:
    clean = {"path": "/w/app", "args": ["-v", 1, None], "deep": {"n": [True]}}
    assert DEFAULT_REDACTOR.value(clean, keep=True) is clean
    assert DEFAULT_REDACTOR.value(clean) is not clean
    mixed = {"ok": clean, "env": {"GITHUB_TOKEN": "ghp_" + "A1b2" * 9}}
    out = DEFAULT_REDACTOR.value(mixed, keep=True)
    assert out is not mixed and out["ok"] is clean
    assert out["env"] == {"GITHUB_TOKEN": "[REDACTED:token]"}
    assert Redactor(enabled=False).value(mixed, keep=True) is mixed


_PAIR_PIECES = st.sampled_from(
    [
        *("auth", "authenticate", "login", "credentials", "algoliasearch.client", "new pdo"),
        *("searchclient.create", "connect", "getconnection", "pass", "pwd", "(", "(", ","),
        *('"', "'", "\\", " ", "\t", "\n", "=", ":", "admin", "hunter2x!", "abcd", " ", "x"),
        *("$dsn", "url", "_word", "0", "."),
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PAIR_PIECES, max_size=24).map("".join), st.integers(0, 8))
def test_the_pair_rules_find_what_their_regex_finds(text: str, pos: int) -> None:
    """The code rules try their regexes where a literal they start with occurs: the
    same matches as the regex's own search from every position."""
    from agentmem.redact import code

    hay = text.lower()
    for rx in code._STARTS:
        got = [m.span() for m in code._matches(rx, hay, pos)]
        assert got == [m.span() for m in rx.finditer(hay, pos)]
    examples = [
        'requests.get(u, auth=("api", "Xk82mq9Lz7Qw"))',
        'server.login("me@x.io", "Pa55word!") ; authenticate(login("a", "b9!x"), "c")',
        'DriverManager.getConnection(url, "user", "S3cret!x"); new  PDO($dsn, "u", "S3c!")',
        "SMTP_PASS=abcd efgh ijkl mnop and pwd: wxyz abcd efgh ijkl",
    ]
    for t in [*examples, *_all_set_texts()[:300]] if pos == 0 else ():
        low = t.lower()
        for rx in code._STARTS:
            got = [m.span() for m in code._matches(rx, low, 0)]
            assert got == [m.span() for m in rx.finditer(low, 0)]
    if pos == 0:  # (the examples hold matches of every regex)
        assert all(list(code._matches(rx, "\n".join(examples).lower(), 0)) for rx in code._STARTS)


def test_a_run_part_is_redacted_whatever_the_other_parts_hold() -> None:
    """A run's scan lower-cases each part on its own: an ``İ`` in the task (which
    ``str.lower`` makes two characters) once made the whole run's scan fold ASCII only,
    and a password named in Polish capitals in an output was kept."""
    from agentmem.records import Step, Trajectory
    from agentmem.redact.runs import redact_run

    out = "HASŁO: Xk82mq9Lz7Qw"
    assert "Xk82mq9Lz7Qw" not in redact(out)
    run = Trajectory(
        task="deploy the İstanbul app", steps=[Step(tool="Bash", params={}, output=out)]
    )
    assert "Xk82mq9Lz7Qw" not in redact_run(run, DEFAULT_REDACTOR, 0).trajectory.steps[0].output


def test_a_run_s_default_group_is_derived_again_when_any_part_holds_a_needle() -> None:
    """As before parts were redacted one by one: when anything in the run holds a rule's
    word, a default group key is derived again from the (redacted) task, placeholders kept
    upper-case, even when only an output holds the word and nothing is redacted."""
    from agentmem.records import Step, Trajectory
    from agentmem.redact.runs import redact_run

    task = "fix [REDACTED:custom] handling"
    for output, group in (
        ("the token expired", "fix [REDACTED:custom] handling"),
        ("all good", "fix [redacted:custom] handling"),
    ):
        run = Trajectory(task=task, steps=[Step(tool="Bash", params={}, output=output)])
        assert run.group == "fix [redacted:custom] handling"
        got = redact_run(run, DEFAULT_REDACTOR, 0).trajectory
        assert (got.group, got.steps[0].output) == (group, output)
