"""One table of programs (:mod:`agentmem.agents.programs`), read by every step: the shell
reader, the outcomes, the shell corrections and the domains (issue 29, part 2)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from agentmem.agents import Failure, outcome
from agentmem.agents import programs as P
from agentmem.agents.programs import PROGRAMS, Program, Role
from agentmem.agents.shell import parse
from agentmem.domains import command_domain, valid_domain
from agentmem.records import Step

PACKAGE = Path(P.__file__).resolve().parent.parent
#: Words that are programs and also everyday words or punctuation: never counted.
_COMMON = {"[", "[[", ".", ":", "test", "type", "set", "read", "file", "exit", "wait", "time"}
_COMMON |= {"id", "date", "patch", "service", "command", "source", "i", "t", "task", "where"}
#: Modules that hold words of programs for another purpose than knowing them, and why.
ALLOWED = {
    # the words of a dangerous command (curl ... | sh) that a lesson may not hold: security
    # patterns owned by sanitize, not knowledge of what a program is
    "sanitize.py",
    # redaction patterns for secrets passed on a container's command line
    "redact/base.py",
    # what makes a command risky (a subcommand, flag or config key per program, issue 30):
    # keyed by the same program names; built in parallel with programs.py, to become a
    # column of it
    "agents/risk.py",
}


def _program_tables(path: Path) -> list[str]:
    """The literals of a module that list programs: a string of program names, a
    collection of them, a regex alternation of them."""
    names = set(PROGRAMS) - _COMMON
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            words = node.value.split()
            hits = [w for w in words if w in names]
            if len(hits) >= 4 and len(hits) >= len(words) / 2:
                found.append(f"{path.name}:{node.lineno} words {hits[:6]}")
            alts = {p.strip("?:^$\\b ") for p in re.split(r"[|()]", node.value)} & names
            if "|" in node.value and len(alts) >= 3:
                found.append(f"{path.name}:{node.lineno} regex {sorted(alts)[:6]}")
        elif isinstance(node, (ast.Set, ast.List, ast.Tuple, ast.Dict)):
            elts = node.keys if isinstance(node, ast.Dict) else node.elts
            hits = [
                e.value
                for e in elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value in names
            ]
            if len(hits) >= 4:
                found.append(f"{path.name}:{node.lineno} collection {hits[:6]}")
    return found


def test_no_table_of_programs_remains_outside_the_one_table():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "agents/programs.py" or rel in ALLOWED:
            continue
        found += _program_tables(path)
    assert found == []


def test_the_scan_finds_a_table_of_programs(tmp_path: Path):
    """The scan above can fail: a module holding its own list of programs is found."""
    f = tmp_path / "m.py"
    f.write_text(
        'CHECKERS = frozenset("pytest jest mocha ruff mypy".split())\n'
        'X = re.compile(r"\\b(?:npm|pnpm|yarn)\\s+run")\n'
        'Y = ("ls", "find", "tree", "fd")\n'
    )
    assert len(_program_tables(f)) == 3


def test_the_table_is_consistent():
    for name, p in PROGRAMS.items():
        assert name == p.name
        assert all(o.startswith("-") for o in p.value_options), name
        assert all(o.startswith("-") for o in p.project_options), name
        assert all(o.startswith("-") for o in p.pattern_options), name
        assert p.domain is None or valid_domain(p.domain), name
        if p.runs:
            assert Role.HOST in p.roles, f"{name} runs programs: a host"
        if p.scripts:
            assert p.takes_subcommand, f"{name} runs scripts after a run subcommand"
        if p.subcommands:
            assert p.takes_subcommand, f"{name} has subcommands, so it takes one"
        if p.own_words:
            assert Role.WRAPPER in p.roles, name
        # a filter never decides a pipeline's status, so what answers is never a filter
        assert not {Role.FILTER, Role.ANSWERS} <= p.roles, name
        # scene-setting says nothing of the job: it checks nothing, runs no tests
        assert not (Role.SCENE in p.roles and p.roles & P.CHECKS), name
        assert not (Role.HOST in p.roles and p.roles & P.CHECKS), f"{name}: its subcommand says"
    assert all(r.value == r for r in Role)


def test_a_pattern_option_is_its_programs():
    """``find -name`` and ``rg -g`` take a file-name pattern; ``npm -g`` installs globally
    and a program nobody knows has no pattern option."""
    assert {"-name", "-iname", "-path"} <= P.pattern_options("find")
    assert {"-g", "--glob"} <= P.pattern_options("rg")
    assert "--include" in P.pattern_options("grep")
    assert "-g" not in P.pattern_options("npm")
    assert "-name" not in P.pattern_options("docker")
    assert P.pattern_options("no-such-program") == frozenset()


@pytest.mark.parametrize(
    ("command", "domain", "checks"),
    [
        ("mix test", "test", True),  # a test run in the outcomes and in the domains alike
        ("cargo test", "test", True),
        ("npm test", "test", True),
        ("go test ./...", "test", True),
        ("npm run build", "build", True),
        ("mix deps.get", "build", False),
        ("pip install -e .", "packages", False),
        ("make test", "test", True),
    ],
)
def test_the_outcomes_and_the_domains_agree(command: str, domain: str, checks: bool):
    assert command_domain(command) == domain
    failed = outcome(Step("Bash", {"command": command}, "Exit code 1\n3 failed", False))
    assert (failed.failure is Failure.CODE) is checks


def test_adding_a_program_changes_one_file(monkeypatch):
    """A program added to the table is read by the shell reader, the outcomes and the
    domains at once."""
    unknown = Step("Bash", {"command": "zig test a.zig"}, "Exit code 1\n1 failed", False)
    assert outcome(unknown).failure is Failure.MISUSE  # before: a program nobody knows
    zig = Program("zig", frozenset({Role.HOST}), "build", takes_subcommand=True)
    monkeypatch.setitem(PROGRAMS, "zig", zig)  # type: ignore[index]
    c = parse("zig test src/main.zig --summary all").commands[0]
    assert (c.program, c.subcommand) == ("zig", "test")
    assert command_domain("zig test src/main.zig --summary all") == "test"
    line = "zig test src/main.zig --summary all"
    failed = Step("Bash", {"command": line}, "Exit code 1\n1 failed", False)
    assert outcome(failed).failure is Failure.CODE  # a test run: the code's failure


@pytest.mark.parametrize(
    ("line", "prints"),
    [
        ("curl -s localhost:5000/health", True),
        ("curl -sS -X POST https://x/api", True),
        ("curl -fsSLo bin/jq https://x/jq", False),  # -o in a bundle
        ("curl -O https://x/jq", False),
        ("curl --output=jq https://x/jq", False),
        ("http GET https://x/api", True),
        ("http --download https://x/jq", False),
        ("wget https://x/jq", False),  # writes a file unless told not to
        ("ls -la", False),  # no fetch at all
    ],
)
def test_only_prints_reads_a_fetch_s_output_options(line: str, prints: bool):
    c = parse(line).commands[0]
    assert P.only_prints(c.program, c.args) is prints
