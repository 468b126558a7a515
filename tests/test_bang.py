"""A shell tool that escaped a ``!`` of the command (agentmem/learning/bang.py).

Synthetic runs, written here in the shape of Claude Code's own bug reports (issues 10335,
23740, 61121: ``jq 'select(. != 2)'`` fails with ``select(. \\!= 2)``), each with its near
misses. The real examples (two validation-half sessions with jq and gh, one with
``node -e``) are in the benchmark's key; the benchmark credits the lessons to them.
"""

from __future__ import annotations

from pathlib import Path

from agentmem import Memory
from agentmem.learning.bang import bang_text, bangs, echoed
from agentmem.learning.corrections import find_corrections
from agentmem.learning.kinds import Kind
from agentmem.learning.rules import Rule
from agentmem.records import Step, Trajectory

JQ_FAILED = (
    "Exit code 3\njq: error: syntax error, unexpected INVALID_CHARACTER (Unix shell quoting "
    'issues?) at <top-level>, line 1:\n.items[] | select(.id \\!= "US-008") | {id, title}\n'
    "jq: 1 compile error"
)
JQ = "cat prd.json | jq '.items[] | select(.id != \"US-008\") | {id, title}'"


def _cc(command: str, out: str = "", ok: bool = True) -> Step:
    return Step("Bash", {"command": command, "description": "x"}, out, ok)


def _run(*steps: Step) -> Trajectory:
    return Trajectory(task="list the open stories", steps=steps, meta={"cwd": "/w/app"})


def _found(*steps: Step) -> list[tuple[int, int, str]]:
    out = []
    for c in find_corrections(_run(*steps)):
        if c.kind == Kind.TOOL_RULE and c.finding.detail.get("refused") == "bang":
            out.append((c.failed, c.fixed, c.finding.text))
    return out


def test_jq_code_whose_bang_the_tool_escaped_then_jq_without_one() -> None:
    found = _found(_cc(JQ, JQ_FAILED, False), _cc("cat prd.json | jq '.items[] | {id, title}'"))
    assert found == [(0, 1, bang_text("Bash", "jq", 'select(.id \\!= "US-008"'))]
    text = found[0][2]
    assert len(text.split()) <= 32 and "(== ... | not)" in text and "to a file" in text


def test_node_code_then_a_script_file() -> None:
    failed = _cc(
        "node -e 'const t = {}; if (!tree[dir]) { tree[dir] = 1 }'",
        "[eval]:1\nconst t = {}; if (\\!tree[dir]) { tree[dir] = 1 }\n"
        "SyntaxError: Invalid or unexpected token",
        False,
    )
    [x] = bangs(_run(failed, _cc("ls"), _cc("node /tmp/tree.mjs", "ok")))
    assert (x.failed, x.fixed, x.program) == (0, 2, "node") and "if (\\!tree[dir" in x.echoed


def test_near_misses_teach_nothing() -> None:
    # the agent's own backslash (find's \!): not the tool's
    own = _cc("find . \\! -name '*.md' -type f | head", "find: bad", False)
    assert _found(own, _cc("find . -type f | head")) == []
    # bash's own history error echoes no stretch of the command
    history = _cc('echo "done!" && jq .x f.json', "bash: !: event not found", False)
    assert _found(history, _cc("jq .x f.json")) == []
    # no later call ran jq without a !: the run shows no way round it
    assert _found(_cc(JQ, JQ_FAILED, False), _cc("ls")) == []
    assert _found(_cc(JQ, JQ_FAILED, False), _cc(JQ.replace("!=", "! ="), "x")) == []
    # a later call of another program, or one that failed
    assert _found(_cc(JQ, JQ_FAILED, False), _cc("python3 list.py")) == []
    assert _found(_cc(JQ, JQ_FAILED, False), _cc("jq '.items' prd.json", "bad", False)) == []
    # a one-letter stretch ("a\\!"): too little of the command to tie the echo to it
    assert echoed("echo a!", "a\\!") is None


def test_the_lesson_is_learned_once_and_served_to_its_client(tmp_path: Path) -> None:
    from agentmem.serving import Query

    from .conftest import FakeEmbedder, FakeModel

    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        for n in range(2):
            steps = [_cc(JQ, JQ_FAILED, False), _cc("jq '.items[] | {id, title}' prd.json")]
            tid = mem.record(f"list the open stories {n}", steps, meta={"cwd": f"/w/app{n}"})
            mem.feedback(tid, "accept")
        mem.learn(use_model=False)
        lessons = [e for e in mem.experiences() if "escapes ! as" in e.text]
        assert len(lessons) == 1, [e.text for e in mem.experiences()]
        # its quote is code the tool changed, not an error a run could be tested by
        rule = Rule.from_json(lessons[0].rule)
        assert rule is not None and not rule.testable and rule.client == "claude-code"

        def served(client: str) -> set[int | None]:
            q = Query("filter the stories with jq", project="/w/app0", client=client)
            return {x.id for x in mem.serve(q).lessons}

        assert lessons[0].id in served("claude-code") and lessons[0].id not in served("codex")


def test_a_gh_jq_filter_is_jq_code() -> None:
    """gh's --jq filter is jq's code: its lesson names jq and jq's way to negate."""
    failed = _cc(
        "gh pr checks 103 --json name,conclusion --jq '.[] | select(.conclusion != \"SUCCESS\")'",
        "failed to parse jq expression (line 1, column 24)\n"
        '    .[] | select(.conclusion \\!= "SUCCESS")\n',
        False,
    )
    fixed = _cc("gh pr checks 103 --json name,conclusion")
    [x] = bangs(_run(failed, fixed))
    assert (x.program, x.code) == ("gh", "jq")
    [(_, _, text)] = _found(failed, fixed)
    assert "so jq code with ! fails" in text and "(== ... | not)" in text
    # gh's -q elsewhere, or a ! in another option's value, is gh's own
    other = _cc(
        "gh issue create --title 'Fix it now! please' --body x",
        "could not create: title 'Fix it now\\! please' invalid",
        False,
    )
    [y] = bangs(_run(other, _cc("gh issue create --title 'Fix it now' --body x")))
    assert y.code == ""
