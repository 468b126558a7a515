"""Review 28: the evidence of a merged lesson's silent groups (ac66f73), a client tool's
rule that quotes no error (6033521), and the shell tool that escapes ``!`` (d9c155e).

Each test is a defect the review found, with the smallest case that shows it."""

from __future__ import annotations

from pathlib import Path

from agentmem import Memory
from agentmem.learning.bang import bang_text, bangs
from agentmem.learning.corrections import _tool_rule, find_corrections
from agentmem.learning.generality import rule_for
from agentmem.learning.kept_cwd import kept_cwd_text
from agentmem.learning.kinds import Kind
from agentmem.learning.rules import Rule
from agentmem.learning.self_kill import self_kill_text
from agentmem.learning.support import GroupRun, evidence_operations
from agentmem.records import Experience, Step

from .test_bang import JQ, JQ_FAILED, _cc, _run


def _bang_lessons(*steps: Step) -> list[str]:
    return [
        c.finding.text
        for c in find_corrections(_run(*steps))
        if c.finding.detail.get("refused") == "bang"
    ]


# -- d9c155e: the shell tool that escapes ! ----------------------------------------------


def test_the_program_is_the_one_whose_bang_the_output_echoes() -> None:
    """``[ ! -f x ] && jq '... != ...'``: the echo is jq's code, not the test's ``!`` (which
    the shell reads unquoted, where the tool's backslash does no harm). The lesson is
    jq's, and a later ``[ -f x ]`` is no way round it."""
    failed = _cc(f"[ ! -f out.json ] && {JQ}", JQ_FAILED, False)
    assert _bang_lessons(failed, _cc("[ -f prd.json ] && echo yes", "yes")) == []
    [x] = bangs(_run(failed, _cc("jq '.items[] | {id, title}' prd.json", "[]")))
    assert x.program == "jq"
    find = _cc(f"find . ! -name '*.md' | head -1 && {JQ}", JQ_FAILED, False)
    assert _bang_lessons(find, _cc("find . -name '*.json'", "./prd.json")) == []


def test_an_echo_of_the_bang_is_no_proof_the_bang_failed() -> None:
    """The tool escaped the ! (the output shows it), but the call failed for another of
    its commands: echo printed its words and make failed; git committed and the push was
    refused. A later echo, or a later push, is no way round a ! that failed nothing."""
    make = "make: *** [build] Error 2"
    echo = _cc(
        'echo "Build step done! now running" && make build',
        "Build step done\\! now running\n" + make,
        False,
    )
    assert _bang_lessons(echo, _cc('echo "building" && make build', "ok")) == []
    push = "[main 1a2b3c4] Fix the bug\\! Also tests\n ! [rejected] main -> main (fetch first)"
    commit = _cc('git commit -m "Fix the bug! Also tests" && git push', push, False)
    assert _bang_lessons(commit, _cc("git pull --rebase && git push", "ok")) == []


def test_jq_syntax_is_advised_for_jq_only() -> None:
    """ "== ... | not" is how jq negates; node or python code written so would not run:
    for them the lesson says only to write it without ! or in a file."""
    node = bang_text("Bash", "node", "1; if (\\!fs.existsSync")
    assert "| not" not in node and "without !" in node and "to a file" in node
    assert "(== ... | not)" in bang_text("Bash", "jq", 'select(.id \\!= "US-008"')


def test_a_quote_in_the_echo_keeps_the_lesson_one_quote() -> None:
    """A ' inside the echoed stretch would end the lesson's quote early (its rule's error
    is then the first few characters: any failed call saying "nt" applied)."""
    text = bang_text("Bash", "python3", "print('done\\!')")
    inner = text.split("('", 1)[1].split("')", 1)[0]
    assert "'" not in inner


def test_two_groups_jq_slips_are_one_lesson(tmp_path: Path) -> None:
    """The doc says one lesson per program, merged by Stage 3: its quote is the instance
    (the code that failed), not the rule's trigger, so two jq codes are one lesson."""
    from .conftest import FakeEmbedder, FakeModel

    other = (
        "jq: error: syntax error at <top-level>, line 1:\n"
        '.[] | select(.status \\!= "done") | .name\njq: 1 compile error'
    )
    slips = [
        (JQ, JQ_FAILED),
        ("jq -r '.[] | select(.status != \"done\") | .name' tasks.json", other),
    ]
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        for n, (command, out) in enumerate(slips):
            steps = [_cc(command, out, False), _cc("jq '.items[] | {id, title}' prd.json")]
            tid = mem.record(f"list the open stories {n}", steps, meta={"cwd": f"/w/app{n}"})
            mem.feedback(tid, "accept")
        mem.learn(use_model=False)
        lessons = [e.text for e in mem.experiences() if "escapes ! as" in e.text]
        assert len(lessons) == 1, lessons
        # a third code in a later session: found again, not a second lesson
        third = "jq: error: syntax error:\n.[] | select(.owner \\!= null) | .id\njq: 1 compile"
        command = "jq '.[] | select(.owner != null) | .id' owners.json"
        steps = [_cc(command, third, False), _cc("jq '.[] | .id' owners.json")]
        mem.feedback(mem.record("list the owners", steps, meta={"cwd": "/w/app9"}), "accept")
        mem.learn(use_model=False)
        lessons = [e.text for e in mem.experiences() if "escapes ! as" in e.text]
        assert len(lessons) == 1, lessons


# -- 6033521: a tool's rule that quotes no error ------------------------------------------


def test_an_undeclared_tool_rule_without_a_quote_stays_testable() -> None:
    """Only a rule the run itself proves (``declared``: the client's table, the echo, the
    signal) may be untestable. A tool rule read from the output (a parameter passed as
    its JSON text), whose lesson the model phrased without the quoted error, must still
    meet other runs (and the corpus's accepted runs that did otherwise): untestable, it
    could never be refuted, contradicted or retired."""
    w = Step("AskUserQuestion", {"questions": "[{"}, "Invalid: expected array", False)
    said = "The parameter questions type is expected as array but provided as string"
    text = "Pass questions to AskUserQuestion as a real JSON array, never as a string."
    f = _tool_rule(w, text, ("AskUserQuestion", "questions"), said, said, refused="encoded")
    assert rule_for(f, text).testable
    declared = _tool_rule(w, text, ("AskUserQuestion",), said, "x", declared=True)
    assert not rule_for(declared, text).testable


def test_a_stored_self_kill_rule_is_no_longer_contradicted_by_failed_calls() -> None:
    """A library that learned the pkill self-kill lesson before 6033521 stored a testable
    rule with no error: every later group whose flaky call worked when made again
    contradicts it, and two such groups retire a true lesson."""
    old = Rule(Kind.TOOL_RULE, ("Bash",), client="claude-code")
    lesson = Experience(
        self_kill_text("Bash"), id=1, support_groups=1, support_runs=1, rule=old.to_json()
    )
    flaky = (_cc("make deploy", "Exit code 2\nerror: lock held", False), _cc("make deploy", "ok"))
    groups = {k: [GroupRun("deploy the site", flaky, 1.0, True)] for k in ("g1", "g2")}
    out, _ = evidence_operations([], [lesson], groups)
    assert [op.kind for op in out] == []


def test_a_stored_declared_rule_is_read_untestable_by_its_text_only() -> None:
    """Every shell's self-kill and kept-folder text is told apart; another tool rule with
    no quote (the model's phrasing of a parameter read from the output) stays testable."""
    old = Rule(Kind.TOOL_RULE, ("Bash",), client="claude-code").to_json()
    for text in (self_kill_text("Bash"), self_kill_text("shell"), kept_cwd_text("Bash")):
        rule = Rule.stored(old, text)
        assert rule is not None and not rule.testable, text
    other = Rule.stored(old, "Pass questions to AskUserQuestion as a real JSON array.")
    assert other is not None and other.testable
    quoted = Rule(Kind.TOOL_RULE, ("Bash",), error="Exit code 144").to_json()
    assert Rule.stored(quoted, self_kill_text("Bash")).testable  # type: ignore[union-attr]


def test_a_stored_self_kill_lesson_served_to_failing_runs_is_never_retired_by_use(
    tmp_path: Path,
) -> None:
    """The same older rule, judged where the lesson was served: every run's failed Bash
    call met the testable rule and repeated its "mistake", so enough of them retired a
    true lesson by use. Read untestable, the runs are judged by its tools only."""
    from agentmem import served as log

    with Memory.open(tmp_path / "m.db", embedder="hash") as mem:
        e = mem.add(self_kill_text("Bash"), domain="shell")
        old = Rule(Kind.TOOL_RULE, ("Bash",), client="claude-code").to_json()
        with mem.db.conn:
            mem.db.execute("UPDATE experiences SET rule = ? WHERE id = ?", [old, e.id])
        for i in range(6):
            task = f"deploy the site, attempt {i}"
            log.record(mem.path, route="hook", phash=log.prompt_hash(task), served=[e.id],
                       session=f"s{i}")  # fmt: skip
            failed = _cc("make deploy", "Exit code 2\nerror: lock held", False)
            mem.record(task, [failed], meta={"session_id": f"s{i}", "prompt": task})
        mem.learn(use_model=False)
        assert e.id in {x.id for x in mem.experiences()}
        by = {r[0] for r in mem.db.execute("SELECT judged_by FROM served WHERE trajectory_id")}
        assert by == {"tools"}, by
