"""Risky capabilities of a command line, and of a lesson that would have an agent run one.

A lesson goes into an agent's prompt and the agent runs commands. A lesson that would
have it pipe a download into a shell, change where packages come from, rewrite global
configuration, force-push, skip hooks, use ``sudo``, delete recursively, change
permissions, turn off TLS checks or escalate its sandbox is *held* until a person
approves it (``agentmem review``; issue 30). This module decides which lessons those
are. Pure functions; the storage and serving sides call them.

Commands are read with tree-sitter-bash (:mod:`agentmem.agents.shell`), never matched as
strings: ``echo "use sudo"`` uses no ``sudo``, ``git push origin main`` forces nothing.
Each simple command (wrappers such as ``env X=1``, ``time``, ``nohup``, ``xargs``,
``sudo`` peeled off and looked at too; ``sh -c '...'``, ``bash -lc "..."``, ``su -c``,
``find -exec`` and ``eval`` read through) is matched against :data:`TABLE`: one
declarative row per program (and subcommand), options, configuration keys or operands,
and the capability they use. Pipelines (a download piped into a shell), redirections
(a write to ``~/.bashrc``) and variable assignments (``GIT_SSL_NO_VERIFY=1``) have their
own small tables. The rows are data shaped so they could move into a table of what each
program is.

A lesson is read in three places (:func:`lesson_risks`): its text (every clause that
starts at a program :data:`TABLE` knows, placeholders such as ``<branch>`` read as
words), the command its rule carries (a shell correction's ``helper``, ``good``,
``next``, ``needs``) and its parameter settings (``sandbox_permissions:
require_escalated``, ``dangerouslyDisableSandbox: true``).
"""

from __future__ import annotations

import enum
import functools
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from . import shell
from .shell import Command

__all__ = [
    "TABLE",
    "Capability",
    "Risk",
    "bypasses",
    "capabilities",
    "command_risks",
    "lesson_risks",
    "may_serve",
    "param_risks",
    "review_columns",
]


class Capability(str, enum.Enum):
    """What a risky command can do that a lesson must not have an agent do unreviewed."""

    PIPE_TO_SHELL = "pipe-to-shell"
    PACKAGE_SOURCE = "package-source"
    GLOBAL_CONFIG = "global-config"
    FORCE_PUSH = "force-push"
    SKIP_CHECKS = "skip-checks"
    SUPERUSER = "superuser"
    RECURSIVE_DELETE = "recursive-delete"
    PERMISSIONS = "permissions"
    INSECURE_TLS = "insecure-tls"
    CODE_INJECTION = "code-injection"
    ESCALATION = "escalation"

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    Capability.PIPE_TO_SHELL: "runs downloaded code (a download piped to a shell)",
    Capability.PACKAGE_SOURCE: "changes where packages come from (a source or registry)",
    Capability.GLOBAL_CONFIG: "changes configuration beyond the project",
    Capability.FORCE_PUSH: "force-pushes (rewrites a remote's history)",
    Capability.SKIP_CHECKS: "skips hooks or checks",
    Capability.SUPERUSER: "runs as the superuser (sudo, doas, su)",
    Capability.RECURSIVE_DELETE: "deletes recursively",
    Capability.PERMISSIONS: "changes file permissions or owners",
    Capability.INSECURE_TLS: (
        "turns off TLS or host-key checks, or trusts another CA bundle or proxy"
    ),
    Capability.CODE_INJECTION: (
        "makes other programs load code from elsewhere (LD_PRELOAD, NODE_OPTIONS --require)"
    ),
    Capability.ESCALATION: "escalates the agent's sandbox or approvals",
}

C = Capability


@attrs.frozen
class Risk:
    """One risky capability found: what, in which command (as written), and where the
    lesson holds it: ``text``, ``rule`` (the command its rule or finding carries),
    ``advised`` (that command, which a failing tool output advised) or ``param``."""

    capability: Capability
    command: str
    source: str = "command"

    def as_dict(self) -> dict[str, str]:
        return {"capability": self.capability.value, "command": self.command, "source": self.source}


@attrs.frozen
class Row:
    """One row of :data:`TABLE`: a program (and its leading operands, the subcommand first)
    is risky when it is used at all (``always``), or with one of ``flags`` (an option: a
    one-letter one also inside a cluster, ``-rf``; a long one also as ``--x=value``), or
    sets one of ``keys`` (an operand ``key``/``key=value``, or an option value
    ``-c key=value``) to anything but one of ``safe_values``, or with an operand
    starting ``+`` (``plus``: a forced refspec). ``bypass``: the use overrides a policy
    someone else set (a branch's protection, a remote's history, a review, a hook), so it
    is no fix at all: one user's consent to it once is no rule for another run
    (:func:`bypasses`)."""

    programs: frozenset[str]
    capability: Capability
    sub: tuple[str, ...] = ()
    always: bool = False
    flags: frozenset[str] = frozenset()
    keys: frozenset[str] = frozenset()
    safe_values: frozenset[str] = frozenset()
    plus: bool = False
    bypass: bool = False


def _row(
    programs: str,
    capability: Capability,
    sub: str = "",
    *,
    always: bool = False,
    flags: str = "",
    keys: str = "",
    safe: str = "",
    plus: bool = False,
    bypass: bool = False,
) -> Row:
    return Row(
        frozenset(programs.split()),
        capability,
        tuple(sub.split()),
        always,
        frozenset(flags.split()),
        frozenset(k.lower() for k in keys.split()),
        frozenset(safe.split()),
        plus,
        bypass,
    )


_NPMS = "npm yarn pnpm bun"
_PIPS = "pip pip3"
_FALSE = "false 0 no off"
_TRUE_SAFE = "true 1 yes on"

#: What each program does that is risky (see :class:`Row`).
TABLE: tuple[Row, ...] = (
    # package sources and registries
    _row(_NPMS, C.PACKAGE_SOURCE, "config set", keys="registry"),
    _row(_NPMS, C.PACKAGE_SOURCE, "set", keys="registry"),
    _row(_NPMS + " npx", C.PACKAGE_SOURCE, flags="--registry"),
    _row(_PIPS + " uv", C.PACKAGE_SOURCE,
         flags="--index-url --extra-index-url -i --index --default-index --find-links -f"),
    _row("pipx poetry pdm", C.PACKAGE_SOURCE, flags="--index-url --extra-index-url --pip-args"),
    _row(_PIPS, C.PACKAGE_SOURCE, "config", always=True),
    _row("gem", C.PACKAGE_SOURCE, "sources", flags="-a --add"),
    _row("gem", C.PACKAGE_SOURCE, flags="--source -s --clear-sources"),
    _row("cargo", C.PACKAGE_SOURCE, flags="--config --registry --index"),
    _row("add-apt-repository apt-add-repository", C.PACKAGE_SOURCE, always=True),
    _row("apt-key", C.PACKAGE_SOURCE, "add", always=True),
    _row("conda mamba", C.PACKAGE_SOURCE, "config", flags="--add --append --prepend"),
    _row("poetry", C.PACKAGE_SOURCE, "source add", always=True),
    _row("go", C.PACKAGE_SOURCE, "env", keys="GOPROXY GOSUMDB GONOSUMDB GOPRIVATE GOINSECURE"),
    # (npx -y, npm exec --yes and pipx run: see LAUNCHERS)
    # global configuration
    _row("git", C.GLOBAL_CONFIG, "config", flags="--global --system"),
    _row(_NPMS, C.GLOBAL_CONFIG, "config set", always=True),
    _row(_NPMS, C.GLOBAL_CONFIG, "set", always=True),
    _row(_PIPS, C.GLOBAL_CONFIG, "config set", always=True),
    _row("conda mamba", C.GLOBAL_CONFIG, "config", flags="--set --add --append --prepend"),
    _row("go", C.GLOBAL_CONFIG, "env", flags="-w -u"),
    # force pushes: past a remote's refusal to lose history (bypass: no fix)
    _row("git", C.FORCE_PUSH, "push",
         flags="-f --force --force-with-lease --force-if-includes --mirror", plus=True,
         bypass=True),
    _row("gh", C.FORCE_PUSH, "repo sync", flags="--force", bypass=True),
    # skipped hooks or checks: a hook is the project's policy (bypass: no fix)
    _row("git", C.SKIP_CHECKS, flags="--no-verify", bypass=True),
    _row("git", C.SKIP_CHECKS, "commit", flags="-n", bypass=True),
    _row("git", C.SKIP_CHECKS, keys="core.hooksPath", bypass=True),
    _row("git", C.SKIP_CHECKS, "config", keys="core.hooksPath", bypass=True),
    _row(_NPMS, C.SKIP_CHECKS, flags="--no-verify", bypass=True),
    _row(_NPMS, C.SKIP_CHECKS, flags="--ignore-scripts"),
    # overrides of a protection the tool enforces: branch protection (required reviews
    # and checks: bypass, no fix), a publish's verification build, the OS's
    # externally-managed Python, the confirmation before infrastructure changes (held:
    # real fixes on that machine, which a person may approve)
    _row("gh", C.SKIP_CHECKS, flags="--admin", bypass=True),  # only `gh pr merge` has it
    _row("cargo", C.SKIP_CHECKS, "publish", flags="--no-verify"),
    _row("cargo", C.SKIP_CHECKS, "package", flags="--no-verify"),
    _row(_PIPS + " uv", C.SKIP_CHECKS, flags="--break-system-packages"),
    _row("terraform tofu", C.SKIP_CHECKS, flags="-auto-approve --auto-approve"),
    # the superuser
    _row("sudo doas su pkexec run0", C.SUPERUSER, always=True),
    # recursive deletes
    _row("rm", C.RECURSIVE_DELETE, flags="-r -R --recursive"),
    _row("git", C.RECURSIVE_DELETE, "clean", flags="-d -x -X"),
    _row("find", C.RECURSIVE_DELETE, flags="-delete"),
    # permission changes
    _row("chmod chown chgrp setfacl chattr", C.PERMISSIONS, always=True),
    # disabled TLS checks
    _row("curl", C.INSECURE_TLS, flags="-k --insecure --proxy-insecure"),
    _row("wget", C.INSECURE_TLS, flags="--no-check-certificate"),
    _row(_PIPS + " uv", C.INSECURE_TLS, flags="--trusted-host --allow-insecure-host"),
    _row("git", C.INSECURE_TLS, keys="http.sslVerify", safe=_TRUE_SAFE),
    _row("git", C.INSECURE_TLS, "config", keys="http.sslVerify", safe=_TRUE_SAFE),
    _row(_NPMS, C.INSECURE_TLS, "config set", keys="strict-ssl", safe=_TRUE_SAFE),
    _row(_NPMS, C.INSECURE_TLS, flags="--strict-ssl=false --no-strict-ssl"),
    _row(_PIPS, C.INSECURE_TLS, "config set", keys="global.trusted-host install.trusted-host"),
    # sandbox or approval escalation
    _row("claude", C.ESCALATION,
         flags="--dangerously-skip-permissions --allow-dangerously-skip-permissions "
               "--permission-mode=bypassPermissions"),
    _row("codex", C.ESCALATION,
         flags="--yolo --dangerously-bypass-approvals-and-sandbox --full-auto "
               "--sandbox=danger-full-access -s=danger-full-access --ask-for-approval=never "
               "-a=never"),
    _row("gemini qwen", C.ESCALATION, flags="--yolo -y --approval-mode=yolo"),
)  # fmt: skip

#: Variable assignments (``X=1 cmd``, ``env X=1``, ``export X=1``): name -> (capability,
#: the values that are safe, or None when any value is risky, "" included).
ASSIGNMENTS: Mapping[str, tuple[Capability, frozenset[str]]] = {
    "GIT_SSL_NO_VERIFY": (C.INSECURE_TLS, frozenset(["", *_FALSE.split()])),
    "NODE_TLS_REJECT_UNAUTHORIZED": (C.INSECURE_TLS, frozenset(["1"])),
    "PYTHONHTTPSVERIFY": (C.INSECURE_TLS, frozenset(["1"])),
    "NPM_CONFIG_STRICT_SSL": (C.INSECURE_TLS, frozenset(_TRUE_SAFE.split())),
    "PIP_TRUSTED_HOST": (C.INSECURE_TLS, frozenset([""])),
    "SKIP": (C.SKIP_CHECKS, frozenset([""])),
    "HUSKY": (C.SKIP_CHECKS, frozenset(["1", "true"])),
    "HUSKY_SKIP_HOOKS": (C.SKIP_CHECKS, frozenset(["", *_FALSE.split()])),
    "PRE_COMMIT_ALLOW_NO_CONFIG": (C.SKIP_CHECKS, frozenset(["", *_FALSE.split()])),
    "PIP_BREAK_SYSTEM_PACKAGES": (C.SKIP_CHECKS, frozenset(["", *_FALSE.split()])),
    "UV_BREAK_SYSTEM_PACKAGES": (C.SKIP_CHECKS, frozenset(["", *_FALSE.split()])),
    "NPM_CONFIG_REGISTRY": (C.PACKAGE_SOURCE, frozenset([""])),
    "YARN_REGISTRY": (C.PACKAGE_SOURCE, frozenset([""])),
    "PIP_INDEX_URL": (C.PACKAGE_SOURCE, frozenset([""])),
    "PIP_EXTRA_INDEX_URL": (C.PACKAGE_SOURCE, frozenset([""])),
    "UV_INDEX_URL": (C.PACKAGE_SOURCE, frozenset([""])),
    "UV_EXTRA_INDEX_URL": (C.PACKAGE_SOURCE, frozenset([""])),
    "UV_DEFAULT_INDEX": (C.PACKAGE_SOURCE, frozenset([""])),
    "UV_INDEX": (C.PACKAGE_SOURCE, frozenset([""])),
    "GOPROXY": (C.PACKAGE_SOURCE, frozenset([""])),
    "GOSUMDB": (C.PACKAGE_SOURCE, frozenset([""])),
    "GONOSUMDB": (C.PACKAGE_SOURCE, frozenset([""])),
    "GOINSECURE": (C.INSECURE_TLS, frozenset([""])),
    "CARGO_REGISTRIES_CRATES_IO_PROTOCOL": (C.PACKAGE_SOURCE, frozenset([""])),
    # another trust store, or a proxy between the agent and the network
    **{
        name: (C.INSECURE_TLS, frozenset([""]))
        for name in (
            "REQUESTS_CA_BUNDLE CURL_CA_BUNDLE SSL_CERT_FILE SSL_CERT_DIR NODE_EXTRA_CA_CERTS "
            "GIT_SSL_CAINFO GIT_SSL_CAPATH PIP_CERT HTTP_PROXY HTTPS_PROXY ALL_PROXY"
        ).split()
    },
    # code loaded into every program started: any value
    **{
        name: (C.CODE_INJECTION, frozenset([""]))
        for name in (
            "LD_PRELOAD LD_AUDIT DYLD_INSERT_LIBRARIES BASH_ENV ENV PYTHONSTARTUP "
            "GIT_EXEC_PATH GIT_ASKPASS SSH_ASKPASS GIT_SSH"
        ).split()
    },
}

#: Variables risky only for some values: name -> (capability, a pattern of the risky
#: values). ``NODE_OPTIONS=--max-old-space-size=4096`` is a fix; ``--require x.js`` loads
#: code into every node started; ``ssh -i key`` is a fix, ``StrictHostKeyChecking=no`` not.
ASSIGNED_VALUES: Mapping[str, tuple[Capability, re.Pattern[str]]] = {
    "NODE_OPTIONS": (
        C.CODE_INJECTION,
        re.compile(r"(?:^|\s)(?:--require|-r|--import|--loader|--experimental-loader)\b"),
    ),
    "JAVA_TOOL_OPTIONS": (C.CODE_INJECTION, re.compile(r"-javaagent|-agentpath|-agentlib")),
    "_JAVA_OPTIONS": (C.CODE_INJECTION, re.compile(r"-javaagent|-agentpath|-agentlib")),
    "RUBYOPT": (C.CODE_INJECTION, re.compile(r"(?:^|\s)-r")),
    "PERL5OPT": (C.CODE_INJECTION, re.compile(r"(?:^|\s)-[mM]")),
    "GIT_SSH_COMMAND": (
        C.INSECURE_TLS,
        re.compile(r"StrictHostKeyChecking\W*no|UserKnownHostsFile\W*/dev/null", re.I),
    ),
}
#: ``GIT_SSH_COMMAND`` that runs anything but ssh loads code too.
_NOT_SSH = re.compile(r"\A\s*(?!(?:\S*/)?ssh(?:\.exe)?(?:\s|\Z))")

#: Files whose writing reaches beyond the project: path prefix -> capability.
FILES: tuple[tuple[str, Capability], ...] = (
    ("/etc/apt/sources.list", C.PACKAGE_SOURCE),
    ("/etc/apt/", C.PACKAGE_SOURCE),
    ("/etc/yum.repos.d/", C.PACKAGE_SOURCE),
    ("~/.npmrc", C.PACKAGE_SOURCE),
    ("~/.yarnrc", C.PACKAGE_SOURCE),
    ("~/.pip/", C.PACKAGE_SOURCE),
    ("~/.config/pip/", C.PACKAGE_SOURCE),
    ("~/.pypirc", C.PACKAGE_SOURCE),
    ("~/.cargo/config", C.PACKAGE_SOURCE),
    ("~/.condarc", C.PACKAGE_SOURCE),
    ("~/.gemrc", C.PACKAGE_SOURCE),
    ("/etc/", C.GLOBAL_CONFIG),
    ("~/.", C.GLOBAL_CONFIG),  # every dotfile in the home folder: ~/.bashrc, ~/.gitconfig ...
)
_HOME = ("~/", "$HOME/", "${HOME}/")

#: Programs that fetch a URL; interpreters that run what they read on stdin.
DOWNLOADERS = frozenset("curl wget fetch http https httpie aria2c iwr irm".split())
INTERPRETERS = frozenset(
    "sh bash zsh dash ksh csh tcsh fish ash python python2 python3 perl ruby node php "
    "pwsh powershell iex".split()
)
_SHELLS = frozenset("sh bash zsh dash ksh csh tcsh fish ash".split())
#: Programs whose operands are a file they write (the last one).
_WRITERS = frozenset("tee cp mv install ln".split())
#: Wrappers :mod:`agentmem.agents.shell` peels off, as the risky program they are.
_WRAPPER_PROGRAMS = {"sudo": "sudo", "doas": "doas"}
#: One-letter options that take a value (``-m msg``): a cluster stops at them.
_VALUE_LETTERS = {
    "git": frozenset("mFCctSoiu"),
    "rm": frozenset(),
    "curl": frozenset("odHXuAeEFbcKTwmxyzYQrCEtUPz"),
    "pip": frozenset("rcedtib"),
    "pip3": frozenset("rcedtib"),
}
#: Programs whose options are long words behind one dash (``find -delete``): no clusters.
_LONG_SINGLE_DASH = frozenset("find java go terraform tofu".split())

#: Launchers that run a package fetched from a registry: (their words, the options that
#: make them run it without asking; none: they never ask).
LAUNCHERS: tuple[tuple[tuple[str, ...], frozenset[str]], ...] = (
    (("npx",), frozenset(["-y", "--yes", "--registry"])),
    (("npm", "exec"), frozenset(["-y", "--yes", "--registry"])),
    (("pnpm", "dlx"), frozenset()),
    (("pipx", "run"), frozenset()),
)
#: Parameters of an agent's tools that escalate: name (lower case) -> its risky values
#: (None: any value but false).
PARAMS: Mapping[str, frozenset[str] | None] = {
    "sandbox_permissions": frozenset(["require_escalated", "require-escalated"]),
    "with_escalated_permissions": None,
    "dangerouslydisablesandbox": None,
    "dangerously_disable_sandbox": None,
    "bypasspermissions": None,
    "permission_mode": frozenset(["bypasspermissions"]),
    "permissionmode": frozenset(["bypasspermissions"]),
    "sandbox_mode": frozenset(["danger-full-access"]),
    "sandbox": frozenset(["danger-full-access"]),
    "approval_policy": frozenset(["never"]),
}
_DEPTH = 3


# --------------------------------------------------------------------------- commands


def capabilities(command: str) -> frozenset[Capability]:
    """The risky capabilities ``command`` (a shell command line) uses; empty when none
    or when it cannot be read."""
    return frozenset(r.capability for r in command_risks(command))


def command_risks(command: str, *, source: str = "command") -> tuple[Risk, ...]:
    """Each risky capability ``command`` uses, once, with the simple command that uses it."""
    found: dict[Capability, Risk] = {}
    for cap, text in _script(command, 0):
        found.setdefault(cap, Risk(cap, text, source))
    return tuple(found.values())


def bypasses(command: str) -> tuple[str, ...]:
    """The simple commands of ``command`` (read through ``sh -c`` as :func:`command_risks`
    does) that override a policy someone else set: a :data:`TABLE` row marked ``bypass``
    (``gh pr merge --admin``, ``git commit --no-verify``, ``git push --force``). A retry
    that worked by one fixed nothing the run can teach."""
    return tuple(dict.fromkeys(_bypassing(command, 0)))


def _bypassing(command: str, depth: int) -> Iterator[str]:
    raw = _raw(command) if depth <= _DEPTH else None
    for pl in raw[0] if raw is not None else ():
        for c in pl.commands:
            if any(row.bypass and _matches(row, c) for row in TABLE):
                yield c.text
            inner = _inner_script(c)
            if inner is not None:
                yield from _bypassing(inner, depth + 1)


def _raw(command: str) -> tuple[list[shell.Pipeline], list[str]] | None:
    """The pipelines of ``command`` as written (``sh -c`` not yet looked through) and every
    variable assignment in it (``export X=1`` too); None when it cannot be read."""
    if not command.strip() or len(command) > shell._MAX_COMMAND:
        return None
    p = shell._parser()
    if p is None:
        return None
    src = command.encode("utf-8", "replace")
    try:
        tree = p.parse(src)
    except ValueError:
        return None
    if shell._has_error(tree.root_node):
        return None
    r = shell._Reader(src)
    r.statement(tree.root_node)
    assigns: list[str] = []
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        if n.type == "variable_assignment":
            assigns.append(_assignment(shell._text(n, src)))
        stack.extend(n.children)
    return r.pipelines, assigns


def _assignment(text: str) -> str:
    name, _, value = text.partition("=")
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return f"{name}={value}"


def _script(command: str, depth: int) -> Iterator[tuple[Capability, str]]:
    if depth > _DEPTH:
        return
    raw = _raw(command)
    if raw is None:
        return
    pipelines, assigns = raw
    for a in assigns:
        yield from _assigned(a, a)
    for pl in pipelines:
        yield from _pipeline(pl, depth)
        for c in pl.commands:
            yield from _command(c, depth)


def _pipeline(pl: shell.Pipeline, depth: int) -> Iterator[tuple[Capability, str]]:
    """A download piped into an interpreter that reads its stdin."""
    cmds = pl.commands
    for k, c in enumerate(cmds):
        if k and _reads_stdin(c) and any(_downloads(d, depth) for d in cmds[:k]):
            yield C.PIPE_TO_SHELL, " | ".join(x.text for x in cmds[: k + 1])


def _downloads(c: Command, depth: int) -> bool:
    if c.program in DOWNLOADERS:
        return True
    inner = _inner_script(c)
    if inner is not None and depth < _DEPTH:
        raw = _raw(inner)
        return raw is not None and any(
            x.program in DOWNLOADERS for pl in raw[0] for x in pl.commands
        )
    return False


def _reads_stdin(c: Command) -> bool:
    """An interpreter with no script to run but stdin (``sh``, ``bash -s``, ``python3 -``)."""
    if c.program not in INTERPRETERS:
        return False
    if "-s" in c.flags:
        return True
    ops = [o for o in c.operands if not o.startswith("<(")]
    return not ops or ops[0] == "-"


def _inner_script(c: Command) -> str | None:
    """The script a shell's ``-c`` (or ``su -c``) runs, else None."""
    if c.program in _SHELLS or c.program == "su":
        for i, w in enumerate(c.args):
            if re.fullmatch(r"-[a-z]*c", w) and i + 1 < len(c.args):
                return c.args[i + 1]
    return None


def _command(c: Command, depth: int) -> Iterator[tuple[Capability, str]]:
    """The risky capabilities of one simple command, its wrappers and what it runs."""
    text = c.text
    for a in (*c.assignments, *_env_words(c)):
        yield from _assigned(a, text)
    for w in c.wrappers:
        head = w.split()[0]
        if head in _WRAPPER_PROGRAMS:
            yield C.SUPERUSER, text
    yield from _launchers(c, text)
    for row in TABLE:
        if _matches(row, c):
            yield row.capability, text
    yield from _writes(c, text)
    # what the command runs: sh -c, su -c, eval, find -exec, process substitutions
    inner = _inner_script(c)
    if inner is not None:
        yield from _script(inner, depth + 1)
        body = inner.strip()
        if (
            c.program in _SHELLS
            and body.startswith(("$(", "`"))
            and _substitution_downloads(body, depth)
        ):
            yield C.PIPE_TO_SHELL, text
    if c.program in ("eval", "source", ".") or c.program in INTERPRETERS:
        for o in c.operands:
            if o.startswith(("<(", "$(", "`")) and _substitution_downloads(o, depth):
                yield C.PIPE_TO_SHELL, text
    if c.program == "find":
        yield from _find_exec(c, depth)


def _substitution_downloads(word: str, depth: int) -> bool:
    body = word[2:-1] if word.startswith(("<(", "$(")) else word.strip("`")
    raw = _raw(body) if depth < _DEPTH else None
    return raw is not None and any(x.program in DOWNLOADERS for pl in raw[0] for x in pl.commands)


def _env_words(c: Command) -> list[str]:
    """The ``NAME=value`` words before the program (``env X=1 cmd``)."""
    before = c.words[: max(0, len(c.words) - len(c.args) - 1)]
    return [w for w in before if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w)]


def _assigned(assignment: str, text: str) -> Iterator[tuple[Capability, str]]:
    name, _, value = assignment.partition("=")
    value = value.strip().strip("'\"").strip()
    entry = ASSIGNMENTS.get(name.upper())
    if entry is not None and value.lower() not in entry[1]:
        yield entry[0], text
    pattern = ASSIGNED_VALUES.get(name.upper())
    if pattern is not None and pattern[1].search(value):
        yield pattern[0], text
    if name.upper() == "GIT_SSH_COMMAND" and value and _NOT_SSH.match(value):
        yield C.CODE_INJECTION, text


def _launchers(c: Command, text: str) -> Iterator[tuple[Capability, str]]:
    """A launcher of :data:`LAUNCHERS` among ``c``'s wrappers (or ``c`` itself) run with
    one of its options that skip asking (or with any, when it never asks)."""
    words = c.words
    end = max(0, len(words) - len(c.args) - 1)  # the program's index
    for k in range(min(end + 1, len(words))):
        for seq, opts in LAUNCHERS:
            got = (os.path.basename(words[k]), *words[k + 1 : k + len(seq)])
            if got != seq:
                continue
            if not opts:
                yield C.PACKAGE_SOURCE, text
                continue
            j = k + len(seq)
            while j < len(words) and words[j].startswith("-"):
                if words[j].partition("=")[0] in opts:
                    yield C.PACKAGE_SOURCE, text
                j += 1


def _options(c: Command) -> Iterator[tuple[str, str | None]]:
    """``c``'s options as (name, value or None): ``--x=v`` split, ``-c k=v`` (an option
    that took the next word) split, a cluster ``-rf`` read as ``-r`` and ``-f``."""
    letters = _VALUE_LETTERS.get(c.program, frozenset())
    for f in c.flags:
        if " " in f:
            name, _, value = f.partition(" ")
            yield name, value
        elif f.startswith("--") or (c.program in _LONG_SINGLE_DASH and "=" in f):
            # Go's flags take one dash: terraform's -auto-approve=true
            name, eq, value = f.partition("=")
            yield name, value if eq else None
            if eq:
                yield f, None  # `--permission-mode=x` as one word too
        elif len(f) > 2 and c.program not in _LONG_SINGLE_DASH and f[1:2].isalpha():
            yield f, None
            for ch in f[1:]:
                if not ch.isalpha():
                    break
                yield f"-{ch}", None
                if ch in letters:
                    break
        else:
            yield f, None
    # `codex -s danger-full-access`: a one-letter option's value is the next operand
    words = list(c.args)
    for k, w in enumerate(words[:-1]):
        if w.startswith("-"):
            yield f"{w}={words[k + 1]}", None


def _matches(row: Row, c: Command) -> bool:
    if c.program not in row.programs:
        return False
    if row.sub:
        head = [x for x in (c.subcommand, *c.operands) if x is not None]
        if [h.lower() for h in head[: len(row.sub)]] != [s.lower() for s in row.sub]:
            return False
    if row.always:
        return True
    opts = list(_options(c))
    if row.flags and any(name in row.flags for name, _ in opts):
        return True
    if row.keys:
        for name, value in opts:
            if name in ("-c", "--config") and value and _key_set(value, row):
                return True
        rest = [x for x in (c.subcommand, *c.operands) if x is not None][len(row.sub) :]
        if row.sub and _operand_sets(rest, row):
            return True
    if row.plus:
        ops = c.operands if row.sub else (c.subcommand, *c.operands)
        if any(o and o.startswith("+") and len(o) > 1 for o in ops):
            return True
    return False


def _key_set(assignment: str, row: Row) -> bool:
    """``key=value`` (of ``git -c``) sets one of ``row.keys`` to a risky value."""
    key, eq, value = assignment.partition("=")
    if not eq or key.lower() not in row.keys:
        return False
    return value.strip().lower() not in row.safe_values


def _operand_sets(rest: Sequence[str], row: Row) -> bool:
    """Operands ``key value`` or ``key=value`` (``npm config set registry URL``) set one of
    ``row.keys`` (also ``@scope:registry``) to a risky value."""
    for k, w in enumerate(rest):
        key, eq, value = w.partition("=")
        k_low = key.lower()
        named = k_low in row.keys or any(k_low.endswith(":" + x) for x in row.keys)
        if not named:
            continue
        if not eq:
            value = rest[k + 1] if k + 1 < len(rest) else ""
        if value.strip().lower() not in row.safe_values:
            return True
    return False


def _writes(c: Command, text: str) -> Iterator[tuple[Capability, str]]:
    """A redirection into, or a writer's operand naming, a file beyond the project."""
    targets = [t for op, t in c.redirects if op in (">", ">>", "&>", ">|", "&>>")]
    if c.program == "tee":
        targets += list(c.operands)
    elif c.program in _WRITERS and len(c.operands) >= 2:
        targets.append(c.operands[-1])
    for t in targets:
        cap = _file(t)
        if cap is not None:
            yield cap, text


def _file(path: str) -> Capability | None:
    p = path
    for h in _HOME:
        if p.startswith(h):
            p = "~/" + p[len(h) :]
    if p.startswith("/dev/"):
        return None
    for prefix, cap in FILES:
        if p.startswith(prefix):
            return cap
    return None


def _find_exec(c: Command, depth: int) -> Iterator[tuple[Capability, str]]:
    """``find ... -exec rm -rf {} +``: the command ``-exec`` runs."""
    words = list(c.args)
    for k, w in enumerate(words):
        if w in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next(
                (j for j in range(k + 1, len(words)) if words[j] in (";", "\\;", "+")), len(words)
            )
            inner = shell.command_of(words[k + 1 : end])
            if inner is not None and depth < _DEPTH:
                for cap, _ in _command(inner, depth + 1):
                    yield cap, c.text


# --------------------------------------------------------------------------- lessons

#: Words a risky command starts with: a program of a table, a wrapper, an assignment.
_STARTS = frozenset(
    {p for row in TABLE for p in row.programs}
    | DOWNLOADERS
    | INTERPRETERS
    | _WRITERS
    | {"env", "time", "nohup", "xargs", "exec", "command", "nice", "timeout", "eval", "source"}
    | {"npx", "bunx", "pnpx", "pipx", "uvx", "echo", "printf", "cat", "python", "python3"}
    | {"export"}
)
_CLAUSE = re.compile(r"[,;()\[\]{}'\"`]|\.(?=\s|$)|\s[-–—]\s|:\s")
_PLACEHOLDER = re.compile(r"<([A-Za-z][\w.-]{0,40})>")
_WORD = re.compile(r"\S+")
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def text_commands(text: str) -> list[str]:
    """The command lines a lesson's text may hold: every span in backticks or quotes, and
    every clause's tail from a word that can start a risky command (a program of
    :data:`TABLE`, a wrapper, a downloader, an interpreter, ``NAME=value``), up to the
    clause's end. Placeholders (``<branch>``) are read as words."""
    if not isinstance(text, str) or not text.strip():
        return []
    text = _PLACEHOLDER.sub(r"\1", text[:4000])
    spans = re.findall(r"`([^`]{1,400})`", text)
    spans += re.findall(r"'([^']{1,400})'", text) + re.findall(r'"([^"]{1,400})"', text)
    out: list[str] = [s.strip() for s in spans if s.strip()]
    for clause in _CLAUSE.split(text):
        for m in _WORD.finditer(clause):
            w = m.group(0)
            if os.path.basename(w).lower() in _STARTS or _ASSIGN.match(w):
                tail = clause[m.start() :].strip()
                if tail:
                    out.append(tail)
                    out += _pipe_cuts(tail)
    return list(dict.fromkeys(out))


def _pipe_cuts(tail: str) -> list[str]:
    """``tail`` cut one and two words after each ``|``: prose after a pipeline
    (``curl x | sh to install it``) would read as the interpreter's operands."""
    words = tail.split()
    out = []
    for k, w in enumerate(words):
        if w == "|" or w.endswith("|"):
            out += [" ".join(words[: k + 2]), " ".join(words[: k + 3])]
    return out


def _rule_commands(rule: Mapping[str, Any] | None) -> list[str]:
    """The commands a lesson's rule carries (a shell correction's helper and good call)."""
    if not isinstance(rule, Mapping):
        return []
    out: list[str] = []
    for key in ("helper", "good", "lookup"):
        v = rule.get(key)
        if isinstance(v, str) and v.strip():
            out.append(v)
    for key in ("next", "options"):
        v = rule.get(key)
        if isinstance(v, (list, tuple)):
            out += [x for x in v if isinstance(x, str) and x.strip()]
    needs = rule.get("needs")
    if isinstance(needs, (list, tuple)):
        out += [n[0] for n in needs if isinstance(n, (list, tuple)) and n and isinstance(n[0], str)]
    return out


def param_risks(settings: Iterable[tuple[object, object]], *, source: str = "param") -> list[Risk]:
    """The escalations among parameter settings ``(name, value)`` of an agent's tools
    (``sandbox_permissions: require_escalated``, ``dangerouslyDisableSandbox: true``)."""
    out: list[Risk] = []
    for name, value in settings:
        if not isinstance(name, str):
            continue
        key = name.strip().strip("\"'`").lower()
        if key not in PARAMS:
            continue
        v = str(value).strip().strip("\"'`,.;").lower()
        risky = PARAMS[key]
        if (risky is None and v not in ("false", "0", "no", "off", "none", "")) or (
            risky is not None and v in risky
        ):
            out.append(Risk(C.ESCALATION, f"{name}={value}", source))
    return out


def _text_params(text: str) -> list[tuple[str, str]]:
    """``name=value``, ``name: value`` and ``name value`` pairs of a text whose name is
    one of :data:`PARAMS` (a bare name stands for ``true``)."""
    tokens = re.findall(r"[\w.-]+", text)
    out: list[tuple[str, str]] = []
    for k, t in enumerate(tokens):
        if t.lower() in PARAMS:
            nxt = tokens[k + 1 : k + 3]
            out += [(t, v) for v in nxt] or [(t, "true")]
            if PARAMS[t.lower()] is None and not any(
                v.lower() in ("false", "0", "no", "off") for v in nxt
            ):
                out.append((t, "true"))
    return out


@functools.lru_cache(maxsize=2048)
def _text_risks(text: str) -> tuple[Risk, ...]:
    found: dict[Capability, Risk] = {}
    for cmd in text_commands(text):
        for r in command_risks(cmd, source="text"):
            found.setdefault(r.capability, r)
    for r in param_risks(_text_params(text), source="text"):
        found.setdefault(r.capability, r)
    return tuple(found.values())


def lesson_risks(text: str | None, rule: Mapping[str, Any] | None = None) -> tuple[Risk, ...]:
    """Each risky capability a lesson would have an agent use, once: in the commands of
    its text (:func:`text_commands`), the commands its rule carries, and its parameter
    settings (see the module doc)."""
    found: dict[Capability, Risk] = {}

    def add(risks: Iterable[Risk]) -> None:
        for r in risks:
            found.setdefault(r.capability, r)

    src = "rule"
    if isinstance(rule, Mapping):
        # a command a failing output advised is evidence, never a lesson on its own say-so
        src = "advised" if rule.get("change") in ADVICE_CHANGES else "rule"
        for cmd in _rule_commands(rule):
            add(command_risks(cmd, source=src))
        setting = rule.get("setting")
        if isinstance(setting, (list, tuple)) and len(setting) == 2:
            add(param_risks([(setting[0], setting[1])], source="rule"))
        param, good = rule.get("param"), rule.get("good")
        if isinstance(param, str) and good is not None:
            add(param_risks([(param, good)], source="rule"))
    if isinstance(text, str):
        add(_text_risks(text))
    if src == "advised":  # the text states the command the failing output advised
        return tuple(attrs.evolve(r, source="advised") for r in found.values())
    return tuple(found.values())


#: The shell corrections whose command a failing output advised (``learning.shell_fixes``).
ADVICE_CHANGES = frozenset(["advised", "suggested"])


def review_columns(text: str | None, rule: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A lesson's review columns as written (``review``, ``capabilities``, ``reviewed_by``,
    ``reviewed_at``): ``held`` with its risks (JSON) when it would have the agent use a
    risky capability (:func:`lesson_risks`), else no review and ``[]`` (checked: nothing
    risky, so serving need not read it again)."""
    found = lesson_risks(text, rule)
    caps = json.dumps([r.as_dict() for r in found], ensure_ascii=False)
    return {
        "review": "held" if found else None,
        "capabilities": caps,
        "reviewed_by": None,
        "reviewed_at": None,
    }


def _may_start(text: str) -> bool:
    """Whether ``text`` holds any word a risky command or setting needs (cheap, no parse)."""
    for w in re.findall(r"[\w.+-]+|[|<>=$`]", text.lower()):
        if w in _STARTS or w in PARAMS or w in ("|", "<", ">", "=", "$", "`"):
            return True
        if w.upper() in ASSIGNMENTS or w.upper() in ASSIGNED_VALUES:
            return True
    return False


def may_serve(text: object, review: object, capabilities: object = None) -> bool:
    """Whether a lesson may reach a prompt, as far as its risks go: an approved one yes; a
    held or rejected one never; one checked when written and found safe (``capabilities``
    ``[]``) yes; one never checked (an older row, another library's, a row written around
    the journal) only when its text uses no risky capability (:func:`lesson_risks`)."""
    if review == "approved":
        return True
    if review is not None:
        return False
    if capabilities == "[]":
        return True
    if not isinstance(text, str):
        return False
    return not _may_start(text) or not lesson_risks(text)
