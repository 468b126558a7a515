"""Evidence per experience: support counted across sessions, contradiction, retirement, undo."""

from __future__ import annotations

import json

import attrs

from agentmem import Memory, Step
from agentmem.check import check_library
from agentmem.learning.rules import Rule
from agentmem.learning.support import (
    RETIRE_MIN_CONTRADICTIONS,
    GroupRun,
    Tally,
    evidence_operations,
    group_tally,
    retired,
)
from agentmem.records import Operation

from .conftest import run_cli

CD = Step("cd", {"folder": "docs"}, '{"current_working_directory": "docs"}', True)


def cat_ok(name: str) -> Step:
    return Step("cat", {"file_name": name}, '{"file_content": "hello"}', True)


def cat_missing(name: str) -> Step:
    return Step("cat", {"file_name": name}, f'{{"error": "cat: {name}: No such file"}}', False)


def read_group(mem: Memory, key: str, name: str) -> None:
    """cd then cat succeeds; cat without cd fails (the lesson: cd before cat)."""
    task = f"Show me what {name} in docs says"
    mem.record(task, [CD, cat_ok(name)], group=key, accepted=True)
    mem.record(task, [cat_missing(name)], group=key, accepted=False)
    mem.record(task, [CD, cat_ok(name)], group=key, accepted=True)
    mem.record(task, [cat_missing(name)], group=key, accepted=False)


def against_group(mem: Memory, key: str, name: str) -> None:
    """Runs that went against "cd before cat": cat alone succeeded, cd then cat failed."""
    task = f"Print {name} from the current folder"
    mem.record(task, [cat_ok(name)], group=key, accepted=True)
    mem.record(task, [CD, cat_missing(name)], group=key, accepted=False)
    mem.record(task, [cat_ok(name)], group=key, accepted=True)


def the_lesson(mem: Memory):
    lessons = [e for e in mem.experiences() if "cd" in e.text and "cat" in e.text]
    assert len(lessons) == 1, [e.text for e in mem.experiences()]
    return lessons[0]


def kinds(mem: Memory, session_id: int) -> list[str]:
    return [o["kind"] for o in mem.journal(session_id) if o["status"] == "applied"]


# -- the group verdict -----------------------------------------------------------------

RULE = Rule("prerequisite", ["cat"], helper="cd")


def test_group_verdict_support_contradiction_and_silence():
    good = GroupRun("t", (CD, cat_ok("a")), 1.0, True)
    bad = GroupRun("t", (cat_missing("a"),), -1.0, False)
    t, lift = group_tally(RULE, [good, bad, good])
    assert t == Tally(1, 3, 0, 0) and lift and lift > 0
    # followers did worse: the group contradicts it; a follower that failed and an
    # ignorer that succeeded are contradicting runs
    t, lift = group_tally(
        RULE,
        [GroupRun("t", (CD, cat_missing("a")), -1.0, False), GroupRun("t", (cat_ok("a"),), 1.0)],
    )
    assert t == Tally(0, 0, 1, 2) and lift and lift < 0
    # nobody followed it and a run succeeded without it: contradiction
    t, lift = group_tally(RULE, [GroupRun("t", (cat_ok("a"),), 1.0), bad])
    assert t.contradict_groups == 1 and t.contradict_runs == 1 and lift is None
    # everybody followed it: the group cannot tell whether it mattered
    assert group_tally(RULE, [good, GroupRun("t", (CD, cat_missing("a")), -1.0)])[0].empty
    # the rule does not apply (no cat): no verdict
    assert group_tally(RULE, [GroupRun("t", (CD,), 1.0), GroupRun("t", (), -1.0)])[0].empty


def test_retirement_rule():
    assert not retired(Tally(1, 4, 1, 2))  # one contradicting group never retires a lesson
    assert not retired(Tally(3, 9, 2, 6))  # supported by more groups than contradict it
    assert retired(Tally(1, 4, RETIRE_MIN_CONTRADICTIONS, 4))
    assert retired(Tally(0, 0, 2, 2))


def test_a_lesson_merged_from_many_groups_weighs_as_learned_one_by_one():
    """A lesson Stage 3 merged from three groups, one of whose runs go against it and two
    that proved it (their runs give no verdict): learned session by session it would be
    added, confirmed, and kept (one contradicting group never retires a lesson); learned
    at once it is kept too, with the two proving groups as its support."""
    against = [
        GroupRun("t", (CD, cat_missing("a")), -1.0, False),
        GroupRun("t", (cat_ok("a"),), 1.0),
    ]
    proved = [GroupRun("t", (CD, cat_ok("b")), 1.0, True)]  # all follow it: no verdict
    op = Operation(
        "ADD",
        text="Run cd before cat; without it cat fails with 'No such file'.",
        group="g1",
        detail={
            "rule": RULE,
            "merged_groups": ["g1", "g2", "g3"],
            "group_support": {"g1": 1, "g2": 1, "g3": 1},
        },
    )
    out, held = evidence_operations([op], [], {"g1": against, "g2": proved, "g3": proved})
    assert held == [] and len(out) == 1
    assert out[0].detail["tally"] == Tally(2, 2, 1, 2)
    # its own groups all against it: held, as before
    out, held = evidence_operations([op], [], {"g1": against, "g2": against, "g3": against})
    assert out == [] and "its own group's runs go against it" in held[0][1]
    # as many proving groups as contradicting ones: contested, held
    two = attrs.evolve(op, detail={**op.detail, "merged_groups": ["g1", "g2"]})
    out, held = evidence_operations([two], [], {"g1": against, "g2": proved})
    assert out == [] and "contradict it as often" in held[0][1]


# -- across sessions ---------------------------------------------------------------------


def test_support_counts_across_sessions_and_undo(mem: Memory):
    read_group(mem, "read-a", "a.txt")
    r1 = mem.learn(use_model=False)
    e = the_lesson(mem)
    assert "without it cat fails" in e.text and "a.txt" not in e.text  # a one-task file name
    assert (e.support_groups, e.contradict_groups) == (1, 0) and e.support_runs >= 2
    rule = Rule.from_json(e.rule)
    assert e.last_confirmed_at and rule is not None
    assert (rule.kind, rule.tools, rule.helper) == ("prerequisite", ("cat",), "cd")
    before = (e.support_groups, e.support_runs)

    read_group(mem, "read-b", "b.txt")  # a second task shows the same lesson
    r2 = mem.learn(use_model=False)
    e2 = the_lesson(mem)
    assert e2.id == e.id and e2.text == e.text  # confirmed, not rewritten
    assert e2.support_groups == 2 and e2.support_runs > before[1]
    assert "CONFIRM" in kinds(mem, r2.session_id)
    assert check_library(mem.db) == []
    confirm = next(o for o in mem.journal(r2.session_id) if o["kind"] == "CONFIRM")
    assert confirm["after"]["support_groups"] == 2
    assert confirm["before"][0]["support_groups"] == 1

    mem.undo(r2.session_id)  # the confirmation is undone with its session
    e3 = the_lesson(mem)
    assert (e3.support_groups, e3.support_runs) == before and e3.text == e.text
    assert check_library(mem.db) == []
    assert r1.session_id is not None


def test_contradiction_then_retirement_and_undo(mem: Memory):
    read_group(mem, "read-a", "a.txt")
    mem.learn(use_model=False)
    e = the_lesson(mem)
    assert (e.support_groups, e.contradict_groups) == (1, 0)

    against_group(mem, "print-c", "c.txt")
    r2 = mem.learn(use_model=False)
    e2 = the_lesson(mem)
    assert e2.id == e.id and e2.contradict_groups == 1 and e2.contradict_runs == 3
    assert e2.last_contradicted_at is not None
    assert "CONTRADICT" in kinds(mem, r2.session_id) and "DELETE" not in kinds(mem, r2.session_id)
    assert check_library(mem.db) == []

    against_group(mem, "print-d", "d.txt")
    r3 = mem.learn(use_model=False)
    assert all("cd" not in x.text or "cat" not in x.text for x in mem.experiences())
    ops = [o for o in mem.journal(r3.session_id) if o["status"] == "applied"]
    assert [o["kind"] for o in ops if e.id in o["target_ids"]] == ["CONTRADICT", "DELETE"]
    retire = next(o for o in ops if o["kind"] == "DELETE")
    assert retire["reason"].startswith("retired: supported by 1 group(s)")
    assert "contradicted by 2" in retire["reason"]
    assert check_library(mem.db) == []

    mem.undo(r3.session_id)  # retirement undone: live again, with the counts it had
    e4 = the_lesson(mem)
    assert e4.id == e.id and (e4.contradict_groups, e4.contradict_runs) == (1, 3)
    mem.undo(r2.session_id)  # and the contradiction
    e5 = the_lesson(mem)
    assert (e5.contradict_groups, e5.contradict_runs, e5.last_contradicted_at) == (0, 0, None)
    assert check_library(mem.db) == []


def test_check_notices_counts_changed_behind_the_journal(mem: Memory):
    read_group(mem, "read-a", "a.txt")
    mem.learn(use_model=False)
    e = the_lesson(mem)
    mem.db.execute("UPDATE experiences SET support_groups = 7 WHERE id = ?", [e.id])
    problems = check_library(mem.db)
    assert any("evidence counts" in p.message for p in problems), problems


def test_hand_written_lessons_are_never_counted(mem: Memory):
    mem.add("Before calling cat, call cd into the folder first.", domain="fs")
    against_group(mem, "print-c", "c.txt")
    against_group(mem, "print-d", "d.txt")
    mem.learn(use_model=False)
    e = next(x for x in mem.experiences() if x.text.startswith("Before calling cat, call cd"))
    assert (e.support_groups, e.contradict_groups, e.rule) == (0, 0, None)


def test_cli_shows_the_evidence(tmp_path):
    db = tmp_path / "lib.db"
    with Memory.open(db, embedder="hash") as m:
        read_group(m, "read-a", "a.txt")
        m.learn(use_model=False)
    p = run_cli("experiences", db=db)
    assert p.returncode == 0, p.stderr
    head, _, row = p.stdout.decode().splitlines()[:3]
    assert "support" in head and "against" in head and " 1/" in row
    p = run_cli("experiences", "--json", db=db)
    rows = json.loads(p.stdout)
    assert rows[0]["support_groups"] == 1 and rows[0]["contradict_groups"] == 0
    assert rows[0]["rule"]["kind"] == "prerequisite" and rows[0]["rule"]["helper"] == "cd"
    p = run_cli("retrieve", "read a file with cat", "--json", db=db)
    hit = json.loads(p.stdout)[0]
    assert hit["support_groups"] == 1 and "last_confirmed_at" in hit
    with Memory.open(db, embedder="hash") as m:
        row = m.db.execute(
            "SELECT support_groups, contradict_groups FROM live_experiences"
        ).fetchone()
        assert tuple(row) == (1, 0)


# -- a run counts once (issue 31: "--relearn counts support twice from the same runs") ----


def _counts(mem: Memory) -> dict[int, tuple[int, int, int, int]]:
    return {
        e.id or 0: (e.support_groups, e.support_runs, e.contradict_groups, e.contradict_runs)
        for e in mem.experiences()
    }


def test_relearning_the_same_runs_counts_them_once(mem: Memory):
    from agentmem.learning import LearnOptions
    from agentmem.storage.journal import counted_runs

    read_group(mem, "read-a", "a.txt")
    read_group(mem, "read-b", "b.txt")
    mem.learn(use_model=False)
    first = _counts(mem)
    e = the_lesson(mem)
    assert first[e.id or 0][:2] == (2, 8)  # two groups, each with four runs that agree
    for _ in range(2):
        mem.learn(use_model=False, options=LearnOptions(relearn=True))
        assert _counts(mem) == first
    behind = counted_runs(mem.db)
    for eid, (_sg, sr, _cg, cr) in _counts(mem).items():
        assert sr + cr <= len(behind.get(eid, ())), eid  # never more runs than are behind it
    assert check_library(mem.db) == []

    read_group(mem, "read-c", "c.txt")  # new runs still count
    mem.learn(use_model=False, options=LearnOptions(relearn=True))
    assert the_lesson(mem).support_groups == 3


def test_relearn_on_the_real_repro_library_counts_nothing_twice(tmp_path):
    import shutil

    import pytest

    from .conftest import SHARED

    repro = SHARED / "data" / "repro" / "model-corrupts-lesson.db"
    if not repro.exists():
        pytest.skip(f"{repro} is not there")
    db = tmp_path / "repro.db"
    shutil.copyfile(repro, db)
    with Memory.open(db) as mem:
        before = _counts(mem)
    for _ in range(2):
        out = run_cli("learn", "--relearn", "--no-model", db=db)
        assert out.returncode == 0, out.stderr.decode()
    with Memory.open(db) as mem:
        now = _counts(mem)
        # before the fix: lesson 10 went 6/8 -> 9/12 -> 12/16. Today's rules may learn a
        # lesson the library's older rules did not (a new one, or a near-duplicate that the
        # next session merges back): the lessons that were there count their runs once.
        assert {i: now[i] for i in before if i in now} == {i: before[i] for i in now if i in before}
        assert set(before) <= set(now)
        assert check_library(mem.db) == []
