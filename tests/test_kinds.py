"""Every lesson kind walks through every step of learning: none falls through silently."""

from __future__ import annotations

import attrs
import pytest

from agentmem.learning import generality, merge, rules
from agentmem.learning.consolidate import consolidate
from agentmem.learning.corrections import KINDS as CORRECTION_KINDS
from agentmem.learning.findings import KIND_RANK, Finding
from agentmem.learning.kinds import KINDS, Kind, check_table
from agentmem.learning.rules import Rule, applies, follows, needed_tools
from agentmem.records import Operation, Step

#: One finding of each kind, as the evidence rules build them.
FINDINGS: dict[Kind, Finding] = {
    Kind.PARAM_NAME: Finding(
        "param_name",
        "get_user",
        "db",
        "Call get_user with user_id=..., never id=...; id is not a parameter of get_user.",
        ("get_user", "user_id", "id"),
        detail={"error": "unexpected keyword id", "wrong": ["id"], "right": ["user_id"]},
    ),
    Kind.PREREQUISITE: Finding(
        "prerequisite",
        "cat",
        "fs",
        "Before calling cat, call cd first; without it cat fails with 'No such file'.",
        ("cat", "cd"),
        detail={"error": "No such file", "helper": "cd"},
    ),
    Kind.RECOVERY: Finding(
        "recovery",
        "book",
        "airline",
        "If book fails with 'seat taken', call list_seats and retry.",
        ("book", "list_seats"),
        detail={"error": "seat taken", "helper": "list_seats", "param": None},
    ),
    Kind.PARAM_VALUE: Finding(
        "param_value",
        "set_unit",
        "car",
        "Call set_unit with unit like km; never unit=miles, which failed with 'bad unit'.",
        ("set_unit", "unit"),
        detail={"error": "bad unit", "bad": "miles", "good": "km", "param": "unit"},
    ),
    Kind.WRONG_TOOL: Finding(
        "wrong_tool",
        "mv",
        "fs",
        "Use cp, not mv, for requests like \"copy the file\"; mv failed with 'denied'.",
        ("cp", "mv"),
        detail={"error": "denied", "avoid": ["mv"], "ask": "copy the file"},
    ),
    Kind.MISSING_STEP: Finding(
        "missing_step",
        "login",
        "web",
        "Call login(user) before fetch; runs that skipped it were rejected.",
        ("login", "fetch"),
        detail={"call": "login(user)", "next": "fetch"},
    ),
    Kind.SHELL: Finding(
        Kind.SHELL,
        "cat",
        "fs",
        "In this project notes.txt is at docs/notes.txt; cat notes.txt fails with 'No such file'.",
        ("cat", "docs/notes.txt"),
        detail={"change": "location", "scope": "project", "error": "No such file"},
    ),
    Kind.TOOL_RULE: Finding(
        Kind.TOOL_RULE,
        "Edit",
        "fs",
        "If Edit fails with 'File has not been read yet', Read the file first, then retry.",
        ("Edit", "Read"),
        detail={"error": "File has not been read yet", "helper": "Read", "scope": "tool"},
    ),
}


def test_every_kind_has_its_table_entries_and_one_example_here():
    check_table("tests.FINDINGS", FINDINGS)
    check_table("kinds.KINDS", KINDS)
    assert set(KIND_RANK) == {k.value for k in Kind}
    assert set(rules.KINDS) == {k.value for k in Kind}
    assert set(CORRECTION_KINDS) == {k for k, s in KINDS.items() if s.correction}
    with pytest.raises(AssertionError, match="no entry for kind"):
        check_table("a step that forgot one", {k: 1 for k in list(Kind)[:-1]})


def test_a_kind_is_stored_as_the_string_the_journal_holds():
    for k in Kind:
        assert k == k.value and f"{k}" == k.value and str(k) == k.value
        rule = Rule(k.value, ["t"])
        assert Rule.from_json(rule.to_json()) == rule


@pytest.mark.parametrize("kind", list(Kind))
def test_each_kind_walks_through_every_step(kind: Kind):
    _walk(FINDINGS[kind], kind)


def _walk(f: Finding, kind: Kind) -> None:
    """A finding through every step of learning: merge, generality, rules, Stage 3."""
    # stage 2: merging keeps it (alone, or with a twin of another group), ranked
    assert merge.merge_findings([f]) == [f]
    assert len(merge.merge_findings([f, f])) >= 1
    assert isinstance(KIND_RANK[f.kind], int)
    # generality: a rule and a verdict; the rule round-trips through the library
    rule = generality.rule_for(f, f.text)
    assert rule.kind == kind
    assert Rule.from_json(rule.to_json()) == rule
    corpus = generality.build_corpus([])
    op = Operation(
        "ADD", text=f.text, domain=f.domain, group="g", facts=f.facts, detail={"evidence": f}
    )
    kept, held = generality.generalise([op], {}, corpus)
    assert len(kept) + len(held) == 1
    # rules: applies / follows answer for a run that calls its tools (no exception, a bool)
    steps = [Step(tool=t, params={}, output="x", success=True) for t in f.facts]
    assert isinstance(applies(rule, "a task", steps), bool)
    assert isinstance(follows(rule, "a task", steps), bool)
    need = needed_tools(rule)
    assert need is None or isinstance(need, frozenset)
    if not KINDS[kind].testable:
        assert not applies(rule, "a task", steps)
    # stage 3: consolidation takes it, and with its twin from another group keeps one
    twin = attrs.evolve((kept or [op])[0], group="h")
    result = consolidate(
        [*(kept or [op]), twin],
        similar=lambda text: [],
        cosine=lambda a, b: 1.0 if a == b else 0.0,
        threshold=0.9,
        compress=lambda o: o,
    )
    assert len(result.apply) == 1


# --------------------------------------------------------------------------- shell changes

import re  # noqa: E402
from pathlib import Path  # noqa: E402

from agentmem.agents import learning_view  # noqa: E402
from agentmem.learning import shell_fixes  # noqa: E402
from agentmem.learning.shell_fixes import SHELL_CHANGES, find_shell_fixes  # noqa: E402
from agentmem.records import Trajectory  # noqa: E402


def _changes(steps) -> list[str]:
    run = learning_view(Trajectory(task="do the job", steps=tuple(steps)))
    return [str(f.finding.detail["change"]) for f in find_shell_fixes(run)]


def test_every_shell_change_is_registered_once_with_its_evidence():
    names = [c.name for c in SHELL_CHANGES]
    assert len(names) == len(set(names))
    source = Path(shell_fixes.__file__).read_text(encoding="utf-8")
    made = set(re.findall(r'_finding\(\s*"(\w+)"', source))
    assert made == set(names), "a shell change without its entry (or an entry never made)"
    assert all(len(c.evidence.split()) >= 8 for c in SHELL_CHANGES)


@pytest.mark.parametrize("change", SHELL_CHANGES, ids=lambda c: c.name)
def test_each_shell_change_walks_from_its_real_example_through_every_step(change):
    run = learning_view(Trajectory(task="do the job", steps=tuple(change.positive)))
    (fix,) = [x for x in find_shell_fixes(run) if x.finding.detail["change"] == change.name]
    _walk(fix.finding, Kind.SHELL)
    # its stored rule round-trips, claims and all
    rule = generality.rule_for(fix.finding, fix.finding.text)
    assert Rule.from_json(rule.to_json()) == rule


@pytest.mark.parametrize("change", SHELL_CHANGES, ids=lambda c: c.name)
def test_each_shell_change_learns_from_its_positive_example_only(change):
    assert change.name in _changes(change.positive)
    assert change.name not in _changes(change.negative)
    assert _changes(change.negative) == [], "the negative example teaches nothing at all"


def test_every_kind_declares_its_evidence():
    for k, spec in KINDS.items():
        assert len(spec.evidence.split()) >= 6, k


# --------------------------------------------------------------------------- repeated slips


def _learned_from(tmp_path, runs) -> list[str]:
    from agentmem import Memory

    from .conftest import FakeEmbedder, FakeModel

    tmp_path.mkdir(parents=True, exist_ok=True)
    with Memory.open(tmp_path / "slip.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        for n, steps in enumerate(runs):
            tid = mem.record(f"look at the project, part {n}", list(steps))
            mem.feedback(tid, "accept")
        mem.learn(use_model=False)
        return [e.text for e in mem.experiences()]


def test_a_slip_teaches_only_when_it_repeats(tmp_path):
    from agentmem.learning.corrections import REPEATED_SLIP

    assert _learned_from(tmp_path / "pos", REPEATED_SLIP["positive"]) == [
        "If Read fails with 'EISDIR', it takes a file: list a folder with Glob or ls."
    ]
    assert _learned_from(tmp_path / "neg", REPEATED_SLIP["negative"]) == []
    # twice in one run repeats too
    globbed = REPEATED_SLIP["positive"][1]
    other = tuple(
        attrs.evolve(s, params={k: v.replace("fish", "nvim") for k, v in s.params.items()})
        for s in globbed
    )
    assert len(_learned_from(tmp_path / "twice", [globbed + other])) == 1
    assert _learned_from(tmp_path / "once", [globbed]) == []
    # its finding walks through every step like any other tool rule
    from agentmem.learning.corrections import find_corrections

    (c,) = find_corrections(Trajectory(task="look", steps=globbed))
    assert c.finding.detail["repeats"] and c.finding.detail["slips"] == 1
    _walk(c.finding, Kind.TOOL_RULE)


def test_a_slip_repeated_in_a_later_session_teaches_then(tmp_path):
    from agentmem import Memory
    from agentmem.learning.corrections import REPEATED_SLIP

    from .conftest import FakeEmbedder, FakeModel

    first, second = REPEATED_SLIP["positive"]
    with Memory.open(tmp_path / "later.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        for n, steps in enumerate((second, first)):  # one session each, learned in between
            tid = mem.record(f"look at the project, part {n}", list(steps))
            mem.feedback(tid, "accept")
            mem.learn(use_model=False)
            texts = [e.text for e in mem.experiences()]
            assert len(texts) == n  # nothing after the first slip; the lesson after the second


def test_a_read_over_the_size_limit_and_one_over_the_token_limit_are_two_rules(tmp_path):
    """Real (development half): Read refused a 906 KB file ('exceeds maximum allowed size
    (256KB)', ahpou9512, then Grepped it) and, in another project, a file of 28483 tokens
    ('exceeds maximum allowed tokens (25000)', aistrad). Two failures of the tool, whose
    ways out differ (offset and limit lift the token limit, not always the size limit):
    two rules, each a one-off slip, so together they teach nothing; each repeated teaches
    its own way out."""
    size = (
        "File content (906KB) exceeds maximum allowed size (256KB). Use offset and limit "
        "parameters to read specific portions of the file, or search for specific content."
    )
    tokens = (
        "File content (28483 tokens) exceeds maximum allowed tokens (25000). Please use "
        "offset and limit parameters to read specific portions of the file."
    )

    def run(path: str, said: str, limit: bool = False) -> tuple[Step, Step]:
        more = {"offset": 1, "limit": 200} if limit else {}
        return (
            Step(tool="Read", params={"file_path": path, **more}, output=said, success=False),
            Step(tool="Grep", params={"pattern": "x", "path": path}, output="3:x"),
        )

    by_size, by_tokens = run("/w/a/global.js", size), run("/v/docs/SPEC.md", tokens)
    assert _learned_from(tmp_path / "both", [by_size, by_tokens]) == []
    (text,) = _learned_from(tmp_path / "tokens", [by_tokens, run("/v/docs/API.md", tokens)])
    assert "exceeds maximum allowed tokens" in text and "offset and limit" in text
    (text,) = _learned_from(tmp_path / "size", [by_size, run("/w/b/b.js", size, limit=True)])
    assert "exceeds maximum allowed size" in text and "offset" not in text
    assert _learned_from(tmp_path / "one", [by_size]) == []
    # a Read that passed limit already and still failed (a saved result on one long line)
    # did what the token rule's way out says: no slip of it, no support for it (blind set 12)
    over = (tmp_path / "limited", [by_tokens, run("/v/docs/result.json", tokens, limit=True)])
    assert _learned_from(*over) == []
    # that slip repeated (blind set 13, after its first try: a transcript's .jsonl records,
    # too long even 100 at a time, then Grep) teaches the next way out, not offset and limit
    long_lines = [run("/h/.claude/a.jsonl", tokens, True), run("/h/.claude/b.jsonl", tokens, True)]
    (text,) = _learned_from(tmp_path / "long", long_lines)
    assert "even in parts" in text and "Grep" in text and "offset" not in text


def test_a_ways_slips_are_counted_across_sessions_by_what_the_call_passed(tmp_path):
    """The library's count of a tool rule's slips (``failed_calls_saying``): "pass offset
    and limit" counts the Reads that passed neither; the way after it counts only those
    that passed one."""
    from agentmem import Memory
    from agentmem.storage.trajectories import failed_calls_saying

    said = "File content (28483 tokens) exceeds maximum allowed tokens (25000)."
    rule = "exceeds maximum allowed tokens"
    with Memory.open(tmp_path / "m.db") as mem:
        for params in ({"file_path": "/a"}, {"file_path": "/b", "limit": 50}, {"file_path": "/c"}):
            mem.record("read it", [Step("Read", params, said, False)])
        assert failed_calls_saying(mem.db, "Read", rule) == 3
        assert failed_calls_saying(mem.db, "Read", rule, ("offset", "limit")) == 2
        assert failed_calls_saying(mem.db, "Read", rule, (), ("offset", "limit")) == 1


def test_the_tool_rules_of_a_refusal_walk_every_step():
    """The tool_rule findings of issue 29's first item (a refusal then another way, a
    parameter passed as its JSON text, a cd the shell had made already) walk every step of
    learning like any other tool rule, each from its real positive example's shape."""
    from agentmem.learning.corrections import find_corrections

    binary = (
        "<tool_use_error>This tool cannot read binary files. The file appears to be a "
        "binary .xlsx file.</tool_use_error>"
    )
    path = "/w/finance/consolidated.xlsx"
    runs = [
        (
            Step("Read", {"file_path": path}, binary, False),
            Step("Bash", {"command": f"python3 -c \"print(open('{path}','rb'))\""}, "ok"),
        ),
        (
            Step("WebFetch", {"url": "http://localhost:3001", "prompt": "x"}, "Invalid URL", False),
            Step("Bash", {"command": "curl -s http://localhost:3001"}, "<html>"),
        ),
        (
            Step(
                "AskUserQuestion",
                {"questions": '[{"question": "Go?"'},
                "<tool_use_error>InputValidationError: The parameter `questions` type is "
                "expected as `array` but provided as `string`</tool_use_error>",
                False,
            ),
            Step("AskUserQuestion", {"questions": [{"question": "Go?"}]}, "answered"),
        ),
        (
            Step("Bash", {"command": "cd apps/api && ls"}, "src"),
            Step(
                "Bash",
                {"command": "cd apps/api && npx tsc"},
                "Exit code 1\n(eval):cd:1: no such file or directory: apps/api",
                False,
            ),
            Step("Bash", {"command": "npx tsc"}, "ok"),
        ),
    ]
    for steps in runs:
        found = find_corrections(Trajectory(task="t", steps=steps))
        assert len(found) == 1, (steps[0].tool, found)
        (c,) = found
        assert c.kind == Kind.TOOL_RULE and c.finding.detail["scope"] == "tool"
        _walk(c.finding, Kind.TOOL_RULE)
