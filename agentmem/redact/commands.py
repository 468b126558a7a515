"""Passwords on command lines: one declarative entry per command that takes one.

A flag's value (``redis-cli -a PASS``, ``ldapsearch -w PASS``), part of it
(``smbclient -U user%PASS``, ``openssl -passout pass:PASS``, ``curl -b "sid=VALUE"``)
or a positional argument (``htpasswd -b file user PASS``, ``rabbitmqctl add_user u
PASS``, ``vault login TOKEN``). A command's name is found where it is not part of a
word or a path, and its arguments (at most 64, within 4 KiB) are read up to the end
of the line or of the command (``|``, ``;``, ``&``, ``>``); arguments already read are
not read again for a later name among them, so the cost is linear in the text.
References (``$PW``, ``"${TOKEN}"``), placeholders (``<password>``) and flags are
kept. Values piped in (``echo PASS | docker login --password-stdin``, ``echo
'user:PASS' | chpasswd``) are found from the command that reads them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import attrs

from .base import (
    _PLACEHOLDER_WORD,
    _inside_placeholder,
    _is_secret_name,
    _Rule,
    _value_ok,
    placeholder,
)

#: An argument: a quoted string or a run of other characters; escaped quotes (``\"``
#: in JSON-encoded text) count as quotes.
_NEXT = re.compile(
    r"""[ \t]*(?:(?P<end>\n|\\n|[|;&<>])"""
    r"""|\\*"(?P<dq>(?:[^"\\\n]|\\[^"\n])*)\\*"|'(?P<sq>[^'\n]*)'"""
    r"""|(?P<w>(?:[^\s'"|;&<>\\]|\\[^n"])+))"""
)

#: (positionals, flags seen) -> the positions among the positionals that are secret.
_Positional = Callable[[Sequence[str], Sequence[str]], Sequence[int]]


@attrs.frozen
class Command:
    """What of a command's arguments is secret.

    ``flags``: flags whose value (the next argument, or after ``=``) is secret;
    ``part``: what comes before the secret part of such a value (``%`` of ``user%pw``,
    ``pass:`` of ``pass:pw``, ``=`` of each ``name=value`` cookie); ``attached``: flags
    whose secret is glued to them (``-pSECRET``); ``positional``: which positional
    arguments are secret.
    """

    names: tuple[str, ...]
    flags: tuple[str, ...] = ()
    part: str = ""
    attached: tuple[str, ...] = ()
    positional: _Positional | None = None
    #: letters of ``flags`` that may end a cluster of one-letter flags (``curl -su``)
    cluster: str = ""


def _htpasswd(args: Sequence[str], flags: Sequence[str]) -> Sequence[int]:
    batch = [f for f in flags if not f.startswith("--")]
    if not any("b" in f for f in batch):
        return ()  # htpasswd asks for the password
    return (1,) if any("n" in f for f in batch) else (2,)  # [file] user PASSWORD


def _rabbitmq(args: Sequence[str], flags: Sequence[str]) -> Sequence[int]:
    if args and args[0] in ("add_user", "change_password", "authenticate_user"):
        return (2,)
    return ()


def _vault(args: Sequence[str], flags: Sequence[str]) -> Sequence[int]:
    if len(args) >= 2 and args[0] == "login" and "=" not in args[1]:
        return (1,)
    return ()


def _poetry(args: Sequence[str], flags: Sequence[str]) -> Sequence[int]:
    """``poetry config http-basic.REPO user PASS``, ``poetry config pypi-token.REPO TOKEN``."""
    if len(args) >= 3 and args[0] == "config":
        if args[1].startswith("http-basic."):
            return (3,)
        if args[1].startswith("pypi-token."):
            return (2,)
    return ()


def _minio(args: Sequence[str], flags: Sequence[str]) -> Sequence[int]:
    """``mc alias set NAME URL ACCESS SECRET`` (and the old ``mc config host add``)."""
    if args[:2] == ["alias", "set"]:
        return (5,)
    if args[:3] == ["config", "host", "add"]:
        return (6,)
    return ()


def _slash_p(args: Sequence[str], flags: Sequence[str]) -> Sequence[int]:
    """FreeRDP's ``/p:PASS`` (its part after ``/p:`` is the secret)."""
    return tuple(i for i, a in enumerate(args) if a.startswith("/p:"))


def _wpa(args: Sequence[str], flags: Sequence[str]) -> Sequence[int]:
    return (1,) if len(args) >= 2 else ()  # wpa_passphrase SSID PASSPHRASE


def _env_set(args: Sequence[str], flags: Sequence[str]) -> Sequence[int]:
    """``travis env set NAME VALUE``, ``doppler secrets set NAME VALUE``: a value set
    under a secret name."""
    if (
        len(args) >= 4
        and args[0] in ("env", "secrets", "secret", "config")
        and args[1] in ("set", "add")
        and _is_secret_name(args[2])
    ):
        return (3,)
    return ()


def _bitcoin(args: Sequence[str], flags: Sequence[str]) -> Sequence[int]:
    """``bitcoin-cli importprivkey KEY``, ``walletpassphrase PASSPHRASE 60``."""
    if len(args) >= 2 and args[0] in ("importprivkey", "walletpassphrase"):
        return (1,)
    if len(args) >= 3 and args[0] == "walletpassphrasechange":
        return (1, 2)
    return ()


def _net_use(args: Sequence[str], flags: Sequence[str]) -> Sequence[int]:
    return tuple(
        i + 1
        for i, a in enumerate(args[:-1])
        if a.lower().startswith("/user:") and not args[i + 1].startswith("/")
    )


#: The table: a new command is one entry.
COMMANDS: tuple[Command, ...] = (
    Command(("redis-cli",), flags=("-a", "--pass", "--askpass-value")),
    Command(("redis-server",), flags=("--requirepass", "--masterauth")),
    Command(("htpasswd",), positional=_htpasswd),
    Command(("rabbitmqctl",), positional=_rabbitmq),
    Command(("vault",), positional=_vault),
    Command(("net use",), positional=_net_use),
    Command(("smbclient", "rpcclient", "smbmap"), flags=("-U", "--user"), part="%"),
    Command(("openssl",), flags=("-passin", "-passout", "-pass"), part="pass:"),
    Command(("openssl",), flags=("-k",)),
    Command(
        ("keytool",),
        flags=(
            *("-storepass", "-keypass", "-srcstorepass", "-deststorepass"),
            *("-srckeypass", "-destkeypass", "-new"),
        ),
    ),
    Command(
        ("ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldapwhoami", "ldappasswd"),
        flags=("-w",),
    ),
    Command(("sqlcmd", "bcp"), flags=("-P",)),
    Command(("az login",), flags=("-p", "--password")),
    Command(("ssh-keygen",), flags=("-N", "-P")),
    Command(("mongo", "mongosh", "mongodump", "mongorestore"), flags=("-p", "--password")),
    Command(("zip", "unzip"), flags=("-P", "--password")),
    Command(("7z", "7za"), attached=("-p",)),
    Command(("curl",), flags=("-b", "--cookie"), part="="),
    Command(
        ("curl",),
        flags=("-u", "--user", "-U", "--proxy-user"),
        part=":",
        attached=("-u", "-U"),
        cluster="uU",
    ),
    Command(("lftp",), flags=("-u", "--user"), part=","),
    Command(("jenkins-cli", "jenkins-cli.jar"), flags=("-auth",), part=":"),
    Command(
        (
            *("snmpwalk", "snmpget", "snmpset", "snmpbulkwalk", "snmpbulkget", "snmptable"),
            *("snmptrap", "snmpgetnext", "snmpstatus", "snmpdf", "snmpnetstat"),
        ),
        flags=("-c", "-A", "-X"),
    ),
    Command(("ipmitool",), flags=("-P",)),
    Command(("psexec", "PsExec", "psexec.exe", "PsExec.exe", "PsExec64.exe"), flags=("-p",)),
    Command(("xfreerdp", "wlfreerdp", "sdl-freerdp"), positional=_slash_p, part="/p:"),
    Command(("poetry",), positional=_poetry),
    Command(("mc",), positional=_minio),
    Command(("wpa_passphrase",), positional=_wpa),
    Command(("travis", "doppler"), positional=_env_set),
    Command(("bitcoin-cli", "litecoin-cli", "dogecoin-cli"), positional=_bitcoin),
)

#: Commands that read a password on their standard input, and the flag that says so
#: (empty: always): ``echo PASS | docker login --password-stdin``.
PIPED: tuple[tuple[str, str], ...] = (
    ("--password-stdin", ""),
    ("chpasswd", ":"),
    ("passwd --stdin", ""),
)
_ECHO = re.compile(
    r"""(?:echo|printf)[ \t]+(?:-[ne]+[ \t]+)?(?:'([^'\n]*)'|"([^"\n]*)"|(\S+))[ \t]*\|"""
)


def _args(text: str, start: int) -> tuple[list[tuple[str, int, int]], int]:
    """The arguments after ``start`` up to the end of the command, (value, start, end)
    each (at most 64 of them), and where they end."""
    out: list[tuple[str, int, int]] = []
    pos = start
    limit = min(len(text), start + 4096)
    while len(out) < 64:
        m = _NEXT.match(text, pos, limit)
        if m is None or m.lastgroup == "end":
            break
        g = m.lastgroup or "w"
        out.append((m.group(g), m.start(g), m.end(g)))
        pos = m.end()
    return out, pos


def _secret_ok(value: str) -> bool:
    return (
        bool(value)
        and not value.startswith("-")
        and _value_ok(value)
        and (_PLACEHOLDER_WORD.fullmatch(value) is None)
    )


def _spans(cmd: Command, args: list[tuple[str, int, int]]) -> list[tuple[int, int]]:
    """(start, end) of the secrets among a command's arguments."""
    spans: list[tuple[int, int]] = []
    positionals: list[tuple[str, int, int]] = []
    flags: list[str] = []
    i = 0
    while i < len(args):
        value, a, b = args[i]
        flag, eq, _ = value.partition("=")
        if value.startswith("-") and flag in cmd.flags:
            if eq:
                spans.append((a + len(flag) + 1, b))
            elif i + 1 < len(args):
                spans.append(args[i + 1][1:])
                i += 1
            flags.append(flag)
        elif value.startswith("-") and any(
            value.startswith(f) and len(value) > len(f) for f in cmd.attached
        ):
            f = next(f for f in cmd.attached if value.startswith(f))
            spans.append((a + len(f), b))
        elif (
            cmd.cluster
            and len(value) > 2
            and value[0] == "-"
            and value[1:].isalpha()
            and value[-1] in cmd.cluster
            and i + 1 < len(args)
        ):  # curl -su user:PASS: one-letter flags together, the last one takes the value
            spans.append(args[i + 1][1:])
            flags.append(value)
            i += 1
        elif value.startswith("-") and len(value) > 1:
            flags.append(value)
        else:
            positionals.append(args[i])
        i += 1
    if cmd.positional is not None:
        names = [p[0] for p in positionals]
        spans += [positionals[k][1:] for k in cmd.positional(names, flags) if k < len(positionals)]
    return spans


def _parts(text: str, a: int, b: int, part: str) -> list[tuple[int, int]]:
    """The secret parts of ``text[a:b]``: after ``part`` (each ``name=value`` for ``=``)."""
    if not part:
        return [(a, b)]
    value = text[a:b]
    if part == "=":
        out = []
        pos = a
        for piece in value.split(";"):
            k, eq, v = piece.partition("=")
            if eq and v.strip():
                vs = pos + len(k) + 1
                out.append((vs, vs + len(v.rstrip())))
            pos += len(piece) + 1
        return out
    i = value.find(part)
    return [(a + i + len(part), b)] if i >= 0 else []


def _command_rule(cmd: Command, name: str) -> _Rule:
    lit = re.escape(name)
    # the literal first (the engine searches for it fast), then: not inside a word or path
    rx = re.compile(rf"{lit}(?<![\w./-]{lit})(?=[ \t])")
    ph = placeholder("password" if cmd.part != "=" else "cookie")

    def run(text: str, hay: str, start: int) -> str:
        edits: list[tuple[int, int]] = []
        done = 0  # arguments read up to here: a command inside them is not read again
        for m in rx.finditer(text, start):
            if m.start() < done:
                continue
            args, done = _args(text, m.end())
            for a, b in _spans(cmd, args):
                for pa, pb in _parts(text, a, b, cmd.part):
                    if pb > pa and _secret_ok(text[pa:pb]):
                        edits.append((pa, pb))
        return _apply(text, edits, ph)

    return _Rule("password", name, False, run)


def _piped_rule(needle: str, part: str) -> _Rule:
    ph = placeholder("password")

    def run(text: str, hay: str, start: int) -> str:
        edits: list[tuple[int, int]] = []
        pos, seen = start, 0  # text before ``seen`` was searched for echo already
        while pos >= 0:
            line_from = max(text.rfind("\n", max(0, pos - 512), pos) + 1, pos - 512, seen)
            seen = pos
            for m in _ECHO.finditer(text, line_from, pos):
                g = next(g for g in (1, 2, 3) if m.start(g) >= 0)
                a, b = m.span(g)
                if part:
                    i = text.find(part, a, b)
                    if i < 0:
                        continue
                    a = i + len(part)
                if b > a and _secret_ok(text[a:b]):
                    edits.append((a, b))
            pos = text.find(needle, pos + len(needle))
        return _apply(text, edits, ph)

    return _Rule("password", needle, False, run)


def _apply(text: str, edits: list[tuple[int, int]], ph: str) -> str:
    if not edits:
        return text
    parts: list[str] = []
    pos = 0
    for a, b in sorted(set(edits)):
        if a < pos or "[REDACTED:" in text[a:b] or _inside_placeholder(text, a):
            continue
        parts += [text[pos:a], ph]
        pos = b
    parts.append(text[pos:])
    return "".join(parts)


def command_rules() -> list[_Rule]:
    """A rule for each command name of :data:`COMMANDS` and each of :data:`PIPED`."""
    return [
        *(_command_rule(cmd, name) for cmd in COMMANDS for name in cmd.names),
        *(_piped_rule(needle, part) for needle, part in PIPED),
    ]
