"""Served lessons (issue 25): the served log, the holdout, matching answers to runs,
verdicts, retirement by use, undo, check and the effect report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentmem import Memory, Step, Trajectory
from agentmem import served as log
from agentmem.agents import RunView
from agentmem.check import check_library
from agentmem.cli import cli
from agentmem.effect import newcombe, report, wilson
from agentmem.learning.outcomes import RETIRE_MIN_SITUATIONS, judge, retirements, verdict
from agentmem.learning.rules import Rule
from agentmem.storage import served as store

CD = Step("cd", {"folder": "docs"}, '{"current_working_directory": "docs"}', True)
RULE = Rule("prerequisite", ["cat"], helper="cd")


def cat_ok(name: str) -> Step:
    return Step("cat", {"file_name": name}, '{"file_content": "hello"}', True)


def cat_missing(name: str) -> Step:
    return Step("cat", {"file_name": name}, f'{{"error": "cat: {name}: No such file"}}', False)


def learn_cd_before_cat(mem: Memory) -> int:
    """Learn "cd before cat" from a group where cd then cat works and cat alone fails."""
    task = "Show me what a.txt in docs says"
    for ok in (True, False, True, False):
        steps = [CD, cat_ok("a.txt")] if ok else [cat_missing("a.txt")]
        mem.record(task, steps, group="read-a", accepted=ok)
    mem.learn(use_model=False)
    (e,) = [e for e in mem.experiences() if "cd" in e.text and "cat" in e.text]
    assert e.id is not None and Rule.from_json(e.rule) is not None
    return e.id


def serve_and_run(mem: Memory, task: str, *, follow: bool) -> str:
    """An agent asks for the lessons of ``task`` and then follows them or not."""
    block = mem.context(task, tools=["cat"])
    steps = [CD, cat_ok("n.txt")] if follow else [cat_missing("n.txt")]
    mem.record(task, steps, accepted=follow)
    return block


# -- pure parts ----------------------------------------------------------------------------


def test_prompt_hash_ignores_whitespace_and_covers_what_the_hook_passes():
    assert log.prompt_hash("fix  the\ntests ") == log.prompt_hash("fix the tests")
    assert log.prompt_hash("fix the tests") != log.prompt_hash("fix the test")
    long = "x " * 5000
    assert log.prompt_hash(long) == log.prompt_hash(long[: log.HASH_CHARS])


def test_holdout_is_deterministic_and_near_its_share():
    held = [log.held_out(log.prompt_hash(f"p{i}"), 7, 0.1) for i in range(4000)]
    assert held == [log.held_out(log.prompt_hash(f"p{i}"), 7, 0.1) for i in range(4000)]
    assert 0.08 < sum(held) / len(held) < 0.12
    assert not any(log.held_out("abc", 1, 0.0) for _ in range(3))
    kept, gone = log.split(["a", "b", "t"], [1, 2, None], "h", 0.999999)
    assert kept == ["t"] and gone == [1, 2]  # a team lesson (no id) is always served


def test_log_lines_round_trip_and_hostile_lines_are_skipped(tmp_path: Path):
    db = tmp_path / "lib.db"
    db.write_bytes(b"")
    assert log.record(db, route="hook", phash="h1", served=[3, 4], held=[5], session="s")
    assert not log.record(db, route="hook", phash="h2", served=[])  # nothing to record
    with open(log.log_path(db), "ab") as f:
        f.write(b'not json\n{"v": 1, "served": ["x"]}\n{"v": 2}\n')
        f.write(b'{"v": 1, "at": "2026-01-01T00:00:00+00:00", "prompt": "h3", "served": [9], ')
    lines, end, skipped = log.read(log.log_path(db), 0)
    assert [ln["served"] for ln in lines] == [[3, 4]] and lines[0]["held"] == [5]
    assert lines[0]["session"] == "s" and skipped == 3
    assert end < os.path.getsize(log.log_path(db))  # the unfinished line waits
    assert log.read(log.log_path(db), end)[0] == []
    assert log.read(log.log_path(db), 10**9)[0] == lines  # replaced log: from the start


def test_a_huge_log_is_read_in_pieces_and_an_overlong_line_skipped(tmp_path: Path):
    path = tmp_path / "lib.db.served.jsonl"
    good = b'{"v":1,"at":"2026-01-01T00:00:00+00:00","prompt":"h","served":[1],"held":[]}\n'
    path.write_bytes(b"x" * 300 + b"\n" + good * 3)
    lines, end, skipped = log.read(str(path), 0, limit=200)
    assert (lines, end, skipped) == ([], 200, 1)  # no line end within the limit
    lines, end, skipped = log.read(str(path), end, limit=200)
    assert skipped == 1 and len(lines) == 1  # the rest of the long line, then a record
    lines, end, _ = log.read(str(path), end)
    assert len(lines) == 2 and end == path.stat().st_size


def test_a_failed_write_never_fails_the_caller(tmp_path: Path):
    before = log.FAILURES[0]
    missing = tmp_path / "no-such-folder" / "lib.db"
    assert not log.record(missing, route="hook", phash="h", served=[1])
    assert log.FAILURES[0] == before + 1


def _t(*steps: Step) -> Trajectory:
    return Trajectory(task="t", steps=steps)


def test_verdicts():
    assert verdict(None, RunView.of(_t(cat_ok("a")))) == (None, None, None)
    assert verdict(RULE, RunView.of(_t(CD))) == (False, False, False)  # no cat: not its situation
    assert verdict(RULE, RunView.of(_t(CD, cat_ok("a")))) == (True, True, False)
    assert verdict(RULE, RunView.of(_t(cat_missing("a")))) == (True, False, True)
    assert verdict(RULE, RunView.of(_t(cat_ok("a")))) == (True, False, False)  # ignored, no harm


def test_an_untestable_rule_is_judged_by_its_tools_and_never_retires():
    shell = Rule("param_value", ["Bash"], testable=False)
    bash = Step("Bash", {"command": "cat notes.txt"}, "No such file", False)
    assert judge(shell, RunView.of(_t(bash))) == (True, False, True, "tools")
    assert judge(shell, RunView.of(_t(cat_ok("a")))) == (False, False, False, "tools")
    assert judge(RULE, RunView.of(_t(cat_missing("a")))) == (True, False, True, "rule")
    assert judge(None, RunView.of(_t(bash))) == (None, None, None, None)
    arms = {"served": {"situations": 9, "repeated": 9, "followed": 0}, "held": {"situations": 0}}
    assert [op.kind for op in retirements({1: arms}, {1})] == ["DELETE"]
    assert retirements({1: arms}, set()) == []  # nothing new this session: no retirement


def test_wilson_and_newcombe_match_published_values():
    # Newcombe (1998), table II: 56/70 vs 48/80 -> 0.0524 to 0.3339
    lo, hi = newcombe(56, 70, 48, 80)
    assert (round(lo, 4), round(hi, 4)) == (0.0524, 0.3339)
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and round(hi, 4) == 0.2775


def test_report_says_when_it_cannot_compare():
    rows = [{"experience_id": 1, "held": 0, "repeated": 1, "text": "t", "status": "live"}]
    rep = report(rows, holdout=0.0)
    assert "not a comparison" in rep["overall"]["verdict"]
    assert rep["lessons"][0]["served"]["situations"] == 1
    assert "not enough data" in report(rows, holdout=0.1)["overall"]["verdict"]
    many = [{**rows[0], "held": h, "repeated": h} for h in (0, 1) for _ in range(30)]
    rep = report(many, holdout=0.1)
    assert rep["overall"]["verdict"].startswith("helps")
    assert rep["overall"]["prevented"]["rate"] == 1.0


# -- end to end, through the library -------------------------------------------------------


def test_served_lessons_are_logged_matched_and_judged(mem: Memory):
    eid = learn_cd_before_cat(mem)
    followed = "Show me what n.txt in docs says"
    assert "cd" in serve_and_run(mem, followed, follow=True)
    ignored = "Print n.txt from the docs folder"
    assert "cd" in serve_and_run(mem, ignored, follow=False)
    lines, _, _ = log.read(log.log_path(mem.path), 0)
    assert [ln["served"] for ln in lines] == [[eid], [eid]]
    assert lines[0]["prompt"] == log.prompt_hash(followed) and lines[0]["route"] == "api"
    assert followed not in Path(log.log_path(mem.path)).read_text()  # never the prompt
    r = mem.learn(use_model=False)
    use = mem.served_counts([eid])[eid]["served"]
    assert use == {
        "prompts": 2,
        "runs": 2,
        "judged": 2,
        "situations": 2,
        "followed": 1,
        "repeated": 1,
    }
    assert check_library(mem.db) == []
    mem.learn(use_model=False)  # reading the log again adds nothing
    assert mem.served_counts([eid])[eid]["served"]["prompts"] == 2
    mem.undo(r.session_id)  # the verdicts go with their session
    assert mem.served_counts([eid])[eid]["served"]["judged"] == 0
    assert check_library(mem.db) == []


def test_a_prompt_matches_a_client_run_by_session_and_prompt(mem: Memory):
    eid = learn_cd_before_cat(mem)
    task = "Show me what n.txt in docs says"
    phash = log.prompt_hash(task)
    for session in ("s1", "s2"):
        log.record(mem.path, route="hook", phash=phash, served=[eid], session=session)
    # the run of session s2 (an imported turn), and a run of the same task with no session
    mem.record(task, [cat_missing("n.txt")], meta={"session_id": "s2", "prompt": task})
    mem.learn(use_model=False)
    rows = mem.db.execute(
        "SELECT client_session, trajectory_id, repeated FROM served ORDER BY id"
    ).fetchall()
    assert rows[0][1] is None and rows[1][1] is not None and rows[1][2] == 1
    assert mem.effect()["pending"] == {
        "unmatched": 1,
        "no_run": 0,
        "unjudged": 0,
        "unread_bytes": 0,
    }
    with mem.db.conn:  # a day later, session s1's prompt still has no run: it never will
        mem.db.execute("UPDATE served SET at = '2000-01-01T00:00:00+00:00' WHERE id = 1")
    assert mem.effect()["pending"]["no_run"] == 1
    log.record(mem.path, route="hook", phash=phash, served=[eid], session="s3")
    assert mem.effect()["pending"]["unread_bytes"] > 0
    text = CliRunner().invoke(cli, ["effect"], env={"AGENTMEM_DB": str(mem.path)}).output
    assert "bytes of the served log" in text and "never matched to a run: 1" in text


def test_retired_by_use_after_enough_repeated_mistakes_and_undoable(mem: Memory):
    eid = learn_cd_before_cat(mem)
    for i in range(RETIRE_MIN_SITUATIONS - 1):
        serve_and_run(mem, f"Print n{i}.txt from the docs folder", follow=False)
    mem.learn(use_model=False)
    assert eid in {e.id for e in mem.experiences()}  # 4 situations: not yet
    serve_and_run(mem, "Print n9.txt from the docs folder", follow=False)
    r = mem.learn(use_model=False)
    assert eid not in {e.id for e in mem.experiences()}
    (op,) = [o for o in mem.journal(r.session_id) if o["kind"] == "DELETE"]
    assert "retired by use" in op["reason"] and "5 of the 5" in op["reason"]
    assert check_library(mem.db) == []
    mem.undo(r.session_id)
    assert eid in {e.id for e in mem.experiences()}
    assert check_library(mem.db) == []
    mem.learn(use_model=False)  # the same verdicts again: the undo stands
    assert eid in {e.id for e in mem.experiences()}
    for i in range(RETIRE_MIN_SITUATIONS):  # new evidence after the undo retires it again
        serve_and_run(mem, f"Print m{i}.txt from the docs folder", follow=False)
    mem.learn(use_model=False)
    assert eid not in {e.id for e in mem.experiences()}
    assert check_library(mem.db) == []


def test_holdout_withholds_and_effect_compares(mem: Memory):
    eid = learn_cd_before_cat(mem)
    mem.set_holdout(0.5)
    held = served = 0
    for i in range(40):
        task = f"Show me what n{i}.txt in docs says"
        block = mem.context(task, tools=["cat"])
        was_served = "cd" in block
        held += not was_served
        served += was_served
        # the known answer: with the lesson the agent does cd first, without it fails
        steps = [CD, cat_ok("n.txt")] if was_served else [cat_missing("n.txt")]
        mem.record(task, steps, accepted=was_served)
    assert held and served
    mem.learn(use_model=False)
    rep = mem.effect()
    (lesson,) = [x for x in rep["lessons"] if x["id"] == eid]
    assert lesson["held_out"]["situations"] == held and lesson["held_out"]["rate"] == 1.0
    assert lesson["served"]["situations"] == served and lesson["served"]["rate"] == 0.0
    assert lesson["verdict"].startswith("helps") and rep["holdout"] == 0.5
    # the lesson was served to runs that never repeated its mistake: not retired
    assert eid in {e.id for e in mem.experiences()}


def test_cli_effect_settings_and_experiences(mem: Memory):
    eid = learn_cd_before_cat(mem)
    serve_and_run(mem, "Print n.txt from the docs folder", follow=False)
    mem.learn(use_model=False)
    runner = CliRunner()
    env = {"AGENTMEM_DB": str(mem.path)}
    out = runner.invoke(cli, ["effect", "--json"], env=env)
    assert out.exit_code == 0, out.output
    rep = json.loads(out.output)
    assert rep["lessons"][0]["served"] == {
        "situations": 1,
        "mistakes": 1,
        "rate": 1.0,
        "ci": [round(x, 4) for x in wilson(1, 1)],
    }
    assert "not a comparison" in rep["overall"]["verdict"]
    text = runner.invoke(cli, ["effect"], env=env).output
    assert "served only: not a comparison" in text and "1/1" in text
    exps = json.loads(runner.invoke(cli, ["experiences", "--json"], env=env).output)
    (mine,) = [x for x in exps if x["id"] == eid]
    assert mine["use"]["served"]["repeated"] == 1
    assert runner.invoke(cli, ["settings", "holdout", "0.1"], env=env).exit_code == 0
    assert Memory.open(mem.path).holdout == 0.1
    bad = runner.invoke(cli, ["settings", "holdout", "0.9"], env=env)
    assert bad.exit_code != 0 and "between 0 and 0.5" in bad.output
    assert "agentmem effect --json" in runner.invoke(cli, ["effect", "--help"]).output


def test_check_finds_a_broken_verdict(mem: Memory):
    eid = learn_cd_before_cat(mem)
    serve_and_run(mem, "Print n.txt from the docs folder", follow=False)
    mem.learn(use_model=False)
    mem.db.execute("UPDATE served SET followed = 1 WHERE experience_id = ?", [eid])
    assert {p.kind for p in check_library(mem.db)} == {"served"}
    assert store.problems(mem.db)


@pytest.mark.parametrize("bad", ["nope", "-1"])
def test_bad_holdout_changes_nothing(mem: Memory, bad: str):
    out = CliRunner().invoke(cli, ["settings", "holdout", bad], env={"AGENTMEM_DB": str(mem.path)})
    assert out.exit_code != 0 and mem.holdout == 0.0


def test_a_lesson_removed_since_it_was_served_is_still_judged(mem: Memory):
    eid = learn_cd_before_cat(mem)
    serve_and_run(mem, "Print n.txt from the docs folder", follow=False)
    mem.remove(eid)
    r = mem.learn(use_model=False)
    assert mem.served_counts([eid])[eid]["served"]["repeated"] == 1
    assert not [o for o in mem.journal(r.session_id) if o["kind"] == "DELETE"]
    assert mem.effect()["lessons"][0]["status"] == "deleted"
    assert check_library(mem.db) == []


def test_mcp_context_and_retrieve_are_served_routes(mem: Memory):
    from agentmem.mcp_server import AgentMemTools

    eid = learn_cd_before_cat(mem)
    core = AgentMemTools(mem)
    task = "Print n.txt from the docs folder"
    assert "cd" in core.context(task, tools=["cat"])
    (hit,) = [h for h in core.retrieve(task, tools=["cat"]) if h["id"] == eid]
    assert hit["use"] is None  # never judged yet
    lines, _, _ = log.read(log.log_path(mem.path), 0)
    assert [(ln["route"], ln["served"]) for ln in lines] == [("mcp", [eid]), ("mcp", [eid])]
    mem.set_holdout(0.5)  # a lesson the holdout withholds is withheld from retrieve too
    tasks = [f"Print n{i}.txt from the docs folder" for i in range(20)]
    got = [any(h["id"] == eid for h in core.retrieve(t, tools=["cat"])) for t in tasks]
    assert got == [not log.held_out(log.prompt_hash(t), eid, 0.5) for t in tasks]
    assert not all(got) and any(got)


def test_hostile_log_bytes_never_raise(tmp_path: Path):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    path = tmp_path / "x.served.jsonl"

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode))))
    def check(chunks: list[bytes]) -> None:
        data = b"\n".join(chunks) + b"\n"
        path.write_bytes(data)
        lines, end, skipped = log.read(str(path), 0)
        assert end == len(data) and len(lines) + skipped <= data.count(b"\n")
        for ln in lines:
            assert all(isinstance(i, int) and i > 0 for i in ln["served"] + ln["held"])

    check()


def test_a_shell_lesson_is_judged_by_the_program_its_shell_calls_run():
    """A shell lesson's tools are programs (``cat``): a Bash or Codex shell call that runs
    ``cat`` meets its situation; the run that repeats the failing call repeated it."""
    from agentmem.learning.outcomes import judge
    from agentmem.learning.rules import Rule

    rule = Rule.from_json('{"kind": "shell", "testable": false, "tools": ["cat"]}')
    bad = Step("Bash", {"command": "cat notes.txt", "description": "Read"}, "No such file", False)
    good = Step("shell", {"command": ["bash", "-lc", "cat docs/notes.txt"]}, "notes", True)
    other = Step("Bash", {"command": "ls"}, "docs", True)
    assert judge(rule, RunView.of(_t(other))) == (False, False, False, "tools")
    assert judge(rule, RunView.of(_t(good))) == (True, True, False, "tools")
    assert judge(rule, RunView.of(_t(other, bad))) == (True, False, True, "tools")
