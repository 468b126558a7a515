"""Learning from single runs: a run's own corrections, similar-task groups, and the rules."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentmem import Memory, Step
from agentmem.learning import LearnOptions
from agentmem.learning.consolidate import join
from agentmem.learning.corrections import find_corrections
from agentmem.learning.crosstask import error_gist, find_crosstask_evidence, overruled, value_kind
from agentmem.learning.digest import digest
from agentmem.learning.evidence import param_name_finding, param_value_finding, prerequisite_finding
from agentmem.learning.grouping import (
    grow_similar,
    not_a_task,
    split_turns,
    task_threshold,
    tool_overlap,
    turn_by_text,
)
from agentmem.learning.merge import merge_findings
from agentmem.records import Operation, Trajectory
from agentmem.storage.task_vectors import TaskVectors, neighbours

from .conftest import CAT_BADNAME, CAT_MISSING, CAT_OK, CD, FakeEmbedder, FakeModel, run_cli

S = Step


class TaskEmbedder(FakeEmbedder):
    """The conftest bag-of-words embedder with a task threshold of its own."""

    task_threshold = 0.5


def _run(steps, task="read a.txt in docs", accepted=True, tid=1):
    return Trajectory(task=task, steps=steps, accepted=accepted, id=tid)


# -- within-run corrections, one kind each -------------------------------------------------


def test_correction_prerequisite_inserted():
    (c,) = find_corrections(_run([CAT_MISSING, CD, CAT_OK]))
    assert c.kind == "prerequisite" and (c.failed, c.fixed, c.between) == (0, 2, (1,))
    assert c.finding.facts == ("cat", "cd")
    assert c.finding.text.startswith("Before calling cat, call cd first")
    bad, good = c.attempts(_run([CAT_MISSING, CD, CAT_OK]))
    assert [s.tool for s in bad.steps] == ["cat"] and [s.tool for s in good.steps] == ["cd", "cat"]


def test_correction_parameter_renamed():
    bad = S(
        "cat", {"file": "a.txt"}, "Error: cat() got an unexpected keyword argument 'file'", False
    )
    (c,) = find_corrections(_run([CD, bad, CAT_OK]))
    assert c.kind == "param_name" and c.finding.facts == ("cat", "file_name", "file")
    assert "never file=" in c.finding.text and "file_name instead of file" in c.why


def test_correction_value_changed():
    bad = S("cat", {"file_name": "a.md"}, '{"error": "cat: a.md: No such file"}', False)
    (c,) = find_corrections(_run([CD, bad, CAT_OK]))
    assert c.kind == "param_value" and c.finding.facts[:2] == ("cat", "file_name")
    assert "never file_name=a.md" in c.finding.text


def test_correction_recovery_step_looks_the_value_up():
    err = '{"error": "Receiver ID not found"}'
    steps = [
        S("send_message", {"receiver_id": "Alice", "message": "hi"}, err, False),
        S("get_user_id", {"user": "Alice"}, '{"user_id": "USR002"}', True),
        S("send_message", {"receiver_id": "USR002", "message": "hi"}, '{"sent": true}', True),
    ]
    (c,) = find_corrections(_run(steps, task="tell Alice hi"))
    assert c.kind == "recovery" and c.between == (1,)
    assert c.finding.facts == ("send_message", "get_user_id")
    assert "call get_user_id and retry with the receiver_id it returns" in c.finding.text


def test_correction_different_tool_for_the_same_step():
    steps = [
        S(
            "touch",
            {"file_name": "a.txt"},
            "Error: touch: cannot touch 'a.txt': File exists",
            False,
        ),
        S("echo", {"content": "x", "file_name": "a.txt"}, "None", True),
    ]
    (c,) = find_corrections(_run(steps, task="write x into a.txt"))
    assert c.kind == "wrong_tool" and c.finding.facts == ("echo", "touch")
    # a rejected run: the other tool ran, but that does not show it did the step
    assert find_corrections(_run(steps, task="write x into a.txt", accepted=False)) == []


def test_correction_helper_called_again_with_another_value():
    steps = [
        S("pressBrakePedal", {"pedalPosition": 0.5}, '{"brakePedalStatus": "pressed"}', True),
        S(
            "startEngine",
            {"ignitionMode": "START"},
            '{"error": "Must press the brake fully"}',
            False,
        ),
        S("pressBrakePedal", {"pedalPosition": 1.0}, '{"brakePedalStatus": "pressed"}', True),
        S("startEngine", {"ignitionMode": "START"}, '{"engineState": "running"}', True),
    ]
    (c,) = find_corrections(_run(steps, task="start the car"))
    assert c.kind == "param_value" and c.finding.facts == ("pressBrakePedal", "pedalPosition")
    assert "pedalPosition=1.0, never 0.5" in c.finding.text and "startEngine" in c.finding.text


@pytest.mark.parametrize(
    "steps, task",
    [
        ([CAT_MISSING, CAT_OK], "read a.txt"),  # a plain retry: nothing changed
        ([CD, CAT_MISSING], "read a.txt"),  # never fixed
        (  # two changes at once: which one fixed it?
            [CAT_MISSING, CD, S("ls", {}, '{"content": ["a.txt"]}', True), CAT_OK],
            "read a.txt",
        ),
        (  # the task asked for both files: the second call is another item, not a retry
            [S("cat", {"file_name": "b.txt"}, '{"error": "No such file"}', False), CAT_OK],
            "read b.txt and a.txt",
        ),
        (  # a list changed: which part of it was the fix?
            [
                S("book", {"flights": [{"n": "HAT1"}]}, '{"error": "not available"}', False),
                S("book", {"flights": [{"n": "HAT2"}]}, '{"ok": true}', True),
            ],
            "book a flight",
        ),
    ],
)
def test_no_correction_without_one_recognisable_change(steps, task):
    assert find_corrections(_run(steps, task=task)) == []


# -- similar tasks -------------------------------------------------------------------------


def test_neighbours_are_exact_and_thresholded():
    rng = random.Random(3)
    n, dims = 300, 16
    rows = []
    for _ in range(n):
        v = [rng.gauss(0, 1) for _ in range(dims)]
        norm = math.sqrt(sum(x * x for x in v))
        rows.append([x / norm for x in v])
    import numpy as np

    vecs = TaskVectors(list(range(1, n + 1)), np.array(rows, dtype="<f4"), "t", [])
    got = neighbours(vecs, threshold=0.3, k=5)
    for i in range(n):
        brute = sorted(
            (-math.fsum(x * y for x, y in zip(rows[i], rows[j])), j + 1) for j in range(n) if j != i
        )
        want = [(tid, -s) for s, tid in brute if -s >= 0.3][:5]
        assert [t for t, _ in got[i + 1]] == [t for t, _ in want]
        assert all(abs(a - b) < 1e-6 for (_, a), (_, b) in zip(got[i + 1], want))
    odd = neighbours(vecs, threshold=0.3, k=5, compatible=lambda a, b: (a + b) % 2 == 0)
    assert all((a + b) % 2 == 0 for a, ns in odd.items() for b, _ in ns)


def test_grow_similar_seeds_on_the_lowest_rewards():
    rewards = {1: 0.2, 2: 1.0, 3: 1.0, 4: 0.3, 5: 1.0}
    near = {1: [(2, 0.9), (3, 0.8)], 4: [(2, 0.9), (5, 0.7)], 2: [(4, 0.9)], 3: [], 5: [(4, 0.7)]}
    groups = grow_similar(rewards, near)
    assert groups[0][0] == 1 and set(groups[0]) == {1, 2, 3, 4}  # 4 is alike to positive 2
    assert all(len(set(g)) == len(g) for g in groups)
    assert sum(len(g) for g in groups) == len({m for g in groups for m in g})  # once each
    assert grow_similar({1: 1.0, 2: 1.0}, {1: [(2, 0.9)]}) == []  # nothing to contrast


def test_tool_overlap_and_threshold():
    assert tool_overlap({"cd", "cat"}, {"cat"}) == 1.0
    assert tool_overlap({"cd"}, {"kubectl"}) == 0.0
    assert task_threshold(TaskEmbedder()) == 0.5
    assert task_threshold(FakeEmbedder()) == FakeEmbedder.dup_threshold  # none of its own


NAME_ERR = "Error during execution: cat() got an unexpected keyword argument 'file'"


def _everyday(mem: Memory) -> dict[str, int]:
    """Single runs recorded through the public API, no group field anywhere."""
    ids = {}
    ids["fixed"] = mem.record(
        "show what a.txt in the docs folder says", [CAT_MISSING, CD, CAT_OK], accepted=True
    )
    ids["bad"] = mem.record(
        "print the notes.txt file from the docs folder",
        [
            S("cd", {"folder": "docs"}, '{"current_working_directory": "docs"}', True),
            S("cat", {"file": "notes.txt"}, NAME_ERR, False),
        ],
        accepted=False,
    )
    for name in ("todo.txt", "plan.txt"):
        ids[name] = mem.record(
            f"print the {name} file from the docs folder",
            [CD, S("cat", {"file_name": name}, '{"file_content": "x"}', True)],
            accepted=True,
        )
    # an unrelated task that merely shares one tool (cd) and failed
    ids["unrelated"] = mem.record(
        "deploy release 42 of the payments service to the staging cluster",
        [
            S("cd", {"folder": "build"}, '{"current_working_directory": "build"}', True),
            S("kubectl_apply", {"file": "deploy.yaml"}, "Error: connection refused", False),
        ],
        accepted=False,
    )
    ids["other"] = mem.record(
        "book a flight from Paris to Rome tomorrow morning",
        [S("book_flight", {"travel_to": "FCO"}, '{"booking_id": "B1"}', True)],
        accepted=True,
    )
    return ids


@pytest.fixture
def everyday(tmp_path: Path):
    mem = Memory.open(tmp_path / "e.db", embedder=TaskEmbedder(), model=FakeModel())
    ids = _everyday(mem)
    yield mem, ids
    mem.close()


def test_single_runs_form_a_correction_and_a_similar_group(everyday):
    mem, ids = everyday
    plan = mem.learning_groups()
    assert plan.free_runs == 6 and not plan.of_kind("exact")
    (fix,) = plan.of_kind("correction")
    assert fix.trajectory_ids == (ids["fixed"],) and fix.corrections[0].kind == "prerequisite"
    assert fix.stats.advantages == pytest.approx((-math.sqrt(0.5), math.sqrt(0.5)), abs=1e-6)
    (sim,) = plan.of_kind("similar")
    assert set(sim.trajectory_ids) == {ids["bad"], ids["todo.txt"], ids["plan.txt"]}
    assert "theta_task 0.50" in sim.reason and "cat" in sim.reason
    # the paper's advantages within the group
    neg = sim.stats.advantages[sim.trajectory_ids.index(ids["bad"])]
    assert neg < 0 < sim.stats.advantages[sim.trajectory_ids.index(ids["todo.txt"])]
    # the unrelated run that shares only cd is in no group
    grouped = {t for g in plan.groups for t in g.trajectory_ids}
    assert ids["unrelated"] not in grouped and ids["other"] not in grouped
    assert mem.learning_groups("exact").groups == ()


def test_learning_from_single_runs_gives_the_right_lessons(everyday):
    mem, ids = everyday
    report = mem.learn(use_model=False)
    texts = sorted(e.text for e in mem.experiences())
    assert any(t.startswith("Before calling cat, call cd first") for t in texts), texts
    assert any("cat with file_name=..., never file=..." in t for t in texts), texts
    assert not any("kubectl" in t or "book_flight" in t for t in texts)
    assert report.groups_formed == {"correction": 1, "similar": 1} and report.groups_used == 2
    rows = mem.db.execute(
        "SELECT kind, group_key, trajectory_ids, reason FROM session_groups ORDER BY kind"
    ).fetchall()
    assert [r[0] for r in rows] == ["correction", "similar"]
    assert json.loads(rows[0][2]) == [ids["fixed"]] and "cd was called" in rows[0][3]
    # task vectors are kept, per model, for the next session
    stored = mem.db.execute("SELECT count(*), min(model) FROM task_vectors").fetchone()
    assert stored == (5, TaskEmbedder.model_id)  # the free runs but the corrected one
    # a second session finds nothing new
    again = mem.learn(use_model=False)
    assert again.groups_used == 0 and again.groups_already_learned == 2


def test_stored_task_vectors_are_not_embedded_again(everyday):
    mem, _ = everyday
    mem.learn(use_model=False)
    calls: list[int] = []

    class Counting(TaskEmbedder):
        def embed_batch(self, texts):
            calls.append(len(texts))
            return super().embed_batch(texts)

    mem._embedder = Counting()
    mem.record("print the diary.txt file from the docs folder", [CD, CAT_OK], accepted=True)
    mem.learning_groups()
    assert calls == [1]  # only the new run's task


def test_undo_a_session_of_similar_and_correction_groups(everyday):
    mem, _ = everyday
    before = [e.text for e in mem.experiences()]
    report = mem.learn(use_model=False)
    assert report.applied
    mem.undo(report.session_id)
    assert [e.text for e in mem.experiences()] == before
    kinds = [j["kind"] for j in mem.journal(report.session_id)]
    assert kinds and set(kinds) <= {"ADD", "MODIFY"}
    # the undone session's groups are learnable again
    assert mem.learn(use_model=False).groups_used == 2


def test_exact_groups_come_first_and_their_runs_are_searched_for_corrections(tmp_path: Path):
    mem = Memory.open(tmp_path / "x.db", embedder=TaskEmbedder(), model=FakeModel())
    # an exact group of the same task, one of whose runs also corrected itself
    task = "show what a.txt in the docs folder says"
    a = mem.record(task, [CAT_MISSING, CD, CAT_OK], accepted=True)
    b = mem.record(task, [CAT_MISSING], accepted=False)
    plan = mem.learning_groups()
    exact, fix = plan.groups
    assert exact.kind == "exact" and set(exact.trajectory_ids) == {a, b}
    assert fix.kind == "correction" and fix.trajectory_ids == (a,)
    assert fix.corrections[0].kind == "prerequisite"
    # the group explains the failure already: one lesson, the run's own one journaled as
    # rejected with why, and both groups recorded
    report = mem.learn(use_model=False)
    assert len(mem.experiences()) == 1
    rejected = report.rejected
    assert any(
        o.op.group == f"correction:{a}" and "explains this failure already" in (o.reason or "")
        for o in rejected
    )
    kinds = mem.db.execute("SELECT kind FROM session_groups ORDER BY kind").fetchall()
    assert [k for (k,) in kinds] == ["correction", "exact"]
    mem.close()


def test_a_correction_its_group_does_not_explain_is_learned(tmp_path: Path):
    """A run in an exact group fixed a call of another tool than the one its group fails
    on: the group teaches about that tool, the run's own correction about the other."""
    mem = Memory.open(tmp_path / "x.db", embedder=TaskEmbedder(), model=FakeModel())
    task = "copy a.txt from docs to the backup folder"
    cp_ok = S("cp", {"source": "a.txt", "destination": "backup"}, '{"result": "copied"}', True)
    cp_bad = S("cp", {"source": "a.txt", "target": "backup"}, "Error: missing destination", False)
    a = mem.record(task, [CAT_BADNAME, CAT_OK, cp_ok], accepted=True)
    mem.record(task, [cp_bad], accepted=False)
    plan = mem.learning_groups()
    assert [g.kind for g in plan.groups] == ["exact", "correction"]
    assert plan.groups[1].trajectory_ids == (a,)
    mem.learn(use_model=False)
    texts = [e.text for e in mem.experiences()]
    assert any("cat with file_name=..., never file=..." in t for t in texts), texts
    mem.close()


def test_turns_of_a_conversation_never_form_or_join_an_exact_group(tmp_path: Path):
    """An importer marks a reply (``meta.prompt_kind``) and gives it the conversation's task:
    it is no repeated attempt at that task, but its own corrections still teach."""
    mem = Memory.open(tmp_path / "x.db", embedder=TaskEmbedder(), model=FakeModel())
    task = "show what a.txt in the docs folder says"
    first = mem.record(task, [CD, CAT_OK], accepted=True, meta={"session_id": "s1"})
    turns = [
        mem.record(
            task,
            steps,
            accepted=ok,
            meta={"session_id": "s1", "prompt_kind": kind, "prompt": word},
        )
        for steps, ok, kind, word in (
            ([CAT_MISSING], False, "reply", "ok"),
            ([CAT_BADNAME, CAT_OK], True, "choice", "2"),
        )
    ]
    # a slash command states what was asked: no exact group, but a similar-task one
    slash = mem.record(
        "/print the notes.txt file from the docs folder",
        [S("cat", {"file_name": "notes.txt"}, '{"error": "No such file"}', False)],
        accepted=False,
        meta={"session_id": "s2", "prompt_kind": "slash"},
    )
    slash_ok = mem.record(
        "/print the notes.txt file from the docs folder",
        [CD, S("cat", {"file_name": "notes.txt"}, '{"file_content": "x"}', True)],
        accepted=True,
        meta={"session_id": "s3", "prompt_kind": "slash"},
    )
    plan = mem.learning_groups()
    assert plan.of_kind("exact") == []
    (fix,) = plan.of_kind("correction")
    assert fix.trajectory_ids == (turns[1],)
    grouped = {t for g in plan.of_kind("similar") for t in g.trajectory_ids}
    assert slash in grouped and not grouped & set(turns)
    assert set(plan.turns) == {*turns, slash, slash_ok} and first not in plan.turns
    why = {m.id: r.reason for r in plan.reports for m in r.members}
    assert "not a task: a reply in a conversation" in why[turns[0]]
    assert "not a task: a choice" in why[turns[1]]
    assert first in why
    mem.close()


def test_legacy_short_replies_form_no_exact_group(tmp_path: Path):
    """Runs recorded before importers said what a prompt is: identical short replies."""
    mem = Memory.open(tmp_path / "x.db", embedder=TaskEmbedder(), model=FakeModel())
    turn = iter(range(100))

    def imported(task: str, ok: bool) -> int:  # as an importer recorded a turn before
        meta = {"session_id": "s1", "turn_id": f"t{next(turn)}"}
        return mem.record(task, [CD, CAT_OK] if ok else [CAT_MISSING], accepted=ok, meta=meta)

    for ok in (True, False, True):
        imported("a", ok)
    for ok in (True, False):
        imported("お願いします", ok)
    task = "show what a.txt in the docs folder says"
    for ok in (True, False):
        imported(task, ok)
    for ok in (True, False):  # recorded through the API: its task is its own, even "b"
        mem.record("b", [CD, CAT_OK] if ok else [CAT_MISSING], accepted=ok)
    plan = mem.learning_groups()
    assert sorted(g.task for g in plan.of_kind("exact")) == ["b", task]
    assert plan.of_kind("similar") == []
    mem.close()


@pytest.mark.parametrize(
    "prompt, why",
    [
        ("a", "a choice"),
        ("２", "a choice"),
        ("(b)", "a choice"),
        ("option 3", "a choice"),
        ("ok", "a short reply"),
        ("Yes please!", "a short reply"),
        ("please do", "a short reply"),
        ("continue", "a short reply"),
        ("continue until all are done", None),
        ("お願いします", "a short reply"),
        ("可以", "a short reply"),
        ("  ", "an empty prompt"),
        ("/compact", "a bare slash command"),
        ("<command-name>/review</command-name>", "a slash command's expansion"),
        (
            "# /butler-exec — Execute a ButlerSpec\n\nPurpose: run one spec",
            "a slash command's expansion",
        ),
        ("fix the failing login test", None),
        ("/orchestrator create TODO app by Next.js", None),
        ("<task-notification>\n<task-id>b1</task-id>", "a notification"),
        ("## User Input\n\n```text\ncreate a linter\n```", "a slash command's expansion"),
        ("lint", None),
        ("可以直接放在docstring", None),
    ],
)
def test_a_turn_by_its_text(prompt: str, why: str | None):
    assert turn_by_text(prompt) == why
    if why is not None:  # agentmem.conversation, where installed, can only add to it
        assert not_a_task(prompt) is not None


def test_not_a_task_asks_the_conversation_module_first(monkeypatch):
    import sys
    import types

    fake = types.ModuleType("agentmem.conversation")

    def classify(text: str):
        return types.SimpleNamespace(kind="reply" if text == "keep at it" else "task")

    fake.classify = classify  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agentmem.conversation", fake)
    assert not_a_task("keep at it") == "a reply (agentmem.conversation)"
    assert not_a_task("a") == "a choice"  # its own rule still holds
    assert not_a_task("fix the parser") is None
    broken = types.ModuleType("agentmem.conversation")
    monkeypatch.setitem(sys.modules, "agentmem.conversation", broken)  # no classify: fall back
    assert not_a_task("keep at it") is None and not_a_task("ok") == "a short reply"


def test_split_turns_scores_the_rest_again():
    from agentmem.rewards import Acceptance, TrajectoryReward, group_stats
    from agentmem.rewards import GroupReport as R

    def m(i: int, r: float) -> TrajectoryReward:
        return TrajectoryReward(i, 1.0, Acceptance(1, ""), r, None, None, 1, 0)

    st = group_stats([1.0, 0.0, 0.0])
    g = R("k", "t", (m(1, 1.0), m(2, 0.0), m(3, 0.0)), st, True, "")
    assert split_turns(g, {}) == [g]
    rest, alone = split_turns(g, {3: "a reply"})
    assert [x.id for x in rest.members] == [1, 2] and rest.usable
    assert rest.stats is not None and rest.stats.advantages == pytest.approx(
        (0.7071, -0.7071), abs=1e-3
    )
    assert not alone.usable and alone.reason.endswith("not a task: a reply")
    (only,) = split_turns(g, {1: "x", 2: "x", 3: "x"})[:1]
    assert not only.usable


def test_pending_runs_wait_for_their_window(tmp_path: Path):
    mem = Memory.open(tmp_path / "p.db", embedder=TaskEmbedder(), model=FakeModel())
    mem.record("show what a.txt in the docs folder says", [CAT_MISSING, CD, CAT_OK])  # no verdict
    plan = mem.learning_groups()
    assert plan.groups == () and plan.free_runs == 0
    mem.close()


def test_grouping_option_is_checked():
    with pytest.raises(Exception, match="grouping must be one of"):
        LearnOptions(grouping="fuzzy")


# -- the evidence of a similar-task group ---------------------------------------------------


def _members(runs):
    out = []
    for t, adv in runs:
        out.append((t, digest(t, 1.0 if adv > 0 else 0.0, adv)))
    return out


def test_crosstask_name_value_and_prerequisite_rules():
    pos = [
        _run([CD, S("cat", {"file_name": f}, "ok", True)], task=f"read {f}", tid=i)
        for i, f in ((2, "x.txt"), (3, "y.txt"))
    ]
    bad_name = _run([CD, S("cat", {"file": "z.txt"}, NAME_ERR, False)], "read z.txt", False, 1)
    found = find_crosstask_evidence(
        _members([(bad_name, -1.0), (pos[0], 0.5), (pos[1], 0.5)]), comparable=lambda a, b: True
    )
    assert [(f.kind, f.facts) for f in found] == [("param_name", ("cat", "file_name", "file"))]
    # not comparable: nothing learned
    assert (
        find_crosstask_evidence(
            _members([(bad_name, -1.0), (pos[0], 0.5)]), comparable=lambda a, b: False
        )
        == []
    )
    # a value of another kind than the group's (a name where they passed IDs)
    ok = [
        _run([S("send", {"to": f"USR00{i}"}, "sent", True)], task=f"tell user {i}", tid=i)
        for i in (2, 3)
    ]
    name = _run(
        [S("send", {"to": "Alice"}, "Receiver 'Alice' not found", False)], "tell Alice", False, 1
    )
    (f,) = find_crosstask_evidence(
        _members([(name, -1.0), (ok[0], 0.5), (ok[1], 0.5)]), comparable=lambda a, b: True
    )
    assert f.kind == "param_value" and "never to=Alice" in f.text
    # file names come in every form: no value lesson; the missing cd explains the failure
    miss = _run([S("cat", {"file_name": "Report_2.md"}, "cat: 'Report_2.md': No such file", False)],
                "read Report_2.md", False, 1)  # fmt: skip
    (f,) = find_crosstask_evidence(
        _members([(miss, -1.0), (pos[0], 0.5), (pos[1], 0.5)]), comparable=lambda a, b: True
    )
    assert (f.kind, f.facts) == ("prerequisite", ("cat", "cd"))


def test_crosstask_prerequisite_needs_one_candidate():
    pos = _run([CD, S("ls", {}, "a.txt", True), CAT_OK], task="read a.txt", tid=2)
    neg = _run([CAT_MISSING], task="read b.txt", accepted=False, tid=1)
    # cd and ls both came before cat in the one positive, and the error names neither
    assert (
        find_crosstask_evidence(_members([(neg, -1.0), (pos, 1.0)]), comparable=lambda a, b: True)
        == []
    )


def test_value_kinds():
    assert value_kind("USR002") == value_kind("USR005") != value_kind("Alice")
    assert value_kind("2026-11-10") != value_kind("11/10/2026")
    assert value_kind("START") != value_kind("start")
    assert value_kind(1.0) != value_kind("1.0")


def test_a_runs_own_correction_overrules_a_crosstask_guess():
    proven = find_corrections(
        _run(
            [
                S(
                    "touch",
                    {"file_name": "a.txt"},
                    "touch: cannot touch 'a.txt': File exists",
                    False,
                ),
                S("echo", {"content": "x", "file_name": "a.txt"}, "None", True),
            ],
            task="write x into a.txt",
        )
    )[0].finding
    guess = prerequisite_finding("touch", "cd", "fs", "touch: cannot touch 'b.txt': File exists")
    other = prerequisite_finding("cat", "cd", "fs", "cat: No such file")
    kept, dropped = overruled([guess, other], [proven])
    assert kept == [other] and dropped == [(guess, proven)]
    assert error_gist("touch: cannot touch 'b.txt': File exists") == {
        "touch",
        "cannot",
        "file",
        "exists",
    }


# -- merging and joining the lessons of one session ------------------------------------------


def test_one_tools_prerequisites_merge_into_one_lesson():
    a = prerequisite_finding("startEngine", "lockDoors", "car", "All doors must be locked")
    b = prerequisite_finding(
        "startEngine", "pressBrakePedal", "car", "Brake pedal needs to be pressed"
    )
    c = param_value_finding(
        "pressBrakePedal", "car", None, "pedalPosition", 0.5, 1.0, None, "startEngine"
    )
    (f,) = merge_findings([a, b, c])
    assert set(f.facts) >= {"startEngine", "lockDoors", "pressBrakePedal", "pedalPosition"}
    assert "call lockDoors and pressBrakePedal with pedalPosition=1.0, never 0.5" in f.text
    assert len(f.text.split()) <= 32


def test_related_tools_parameter_names_merge():
    a = param_name_finding("add_to_watchlist", "t", "e", {"symbol": "A"}, {"stock": "A"})
    b = param_name_finding(
        "remove_stock_from_watchlist", "t", "e", {"ticker": "A"}, {"symbol": "A"}
    )
    c = param_name_finding("cat", "fs", "e", {"file": "a"}, {"file_name": "a"})
    merged = merge_findings([a, b, c])
    assert len(merged) == 2 and c in merged
    (pair,) = [f for f in merged if f is not c]
    assert pair.text == (
        "add_to_watchlist takes stock=..., never symbol=...; "
        "remove_stock_from_watchlist takes symbol=..., never ticker=...."
    )


def test_join_near_duplicates_that_name_a_parameter_and_share_a_group():
    a = Operation(
        "ADD",
        "add_to_watchlist takes stock=..., never symbol=....",
        group="g",
        facts=("add_to_watchlist", "stock", "symbol"),
    )
    b = Operation(
        "ADD",
        "Call get_stock_info with symbol like MSFT.",
        group="g",
        facts=("get_stock_info", "symbol"),
    )
    j = join(a, b)
    assert j is not None
    assert j.text == (
        "add_to_watchlist takes stock=..., never symbol=...; "
        "call get_stock_info with symbol like MSFT."
    )
    assert set(j.facts) == {"add_to_watchlist", "stock", "symbol", "get_stock_info"}
    # two lessons about one tool are two pieces of advice
    c = Operation("ADD", "Call cat with file_name=....", group="g", facts=("cat", "file_name"))
    d = Operation("ADD", "Before calling cat, call cd first.", group="g", facts=("cat", "cd"))
    assert join(c, d) is None
    assert join(a, Operation("ADD", "Use ls.", group="g", facts=("ls",))) is None  # nothing shared
    assert join(a, attrs.evolve(b, group="h")) is None  # other groups


# -- the CLI, for real ----------------------------------------------------------------------


def test_cli_groups_and_dry_run_show_the_groups_formed(tmp_path: Path):
    db = tmp_path / "cli.db"
    mem = Memory.open(db)  # the default (real) embedder
    ids = _everyday(mem)
    mem.close()
    out = run_cli("groups", db=db)
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode()
    assert "with their own corrections" in text and "prerequisite" in text
    assert "cd was called" in text
    js = json.loads(run_cli("groups", "--json", db=db).stdout)
    kinds = {g["kind"] for g in js}
    assert {"exact", "correction"} <= kinds
    fix = next(g for g in js if g["kind"] == "correction")
    assert (
        fix["trajectories"][0]["id"] == ids["fixed"]
        and fix["corrections"][0]["kind"] == "prerequisite"
    )
    dry = run_cli("learn", "--dry-run", "--no-model", db=db)
    assert dry.returncode == 0, dry.stderr
    dtext = dry.stdout.decode()
    assert "dry run (nothing applied)" in dtext and "correction:" in dtext
    assert "grouping auto" in dtext
    exact = run_cli("learn", "--dry-run", "--no-model", "--grouping", "exact", "--json", db=db)
    assert json.loads(exact.stdout)["groups_used"] == 0
    # nothing was written by the dry runs
    check = Memory.open(db)
    assert check.db.execute("SELECT count(*) FROM task_vectors").fetchone()[0] == 0
    assert check.experiences() == []
    check.close()


def test_cli_groups_tables_filters_and_diagnosis(tmp_path: Path):
    from click.testing import CliRunner

    from agentmem.cli import cli

    db = tmp_path / "cli.db"
    mem = Memory.open(db)  # the default (real) embedder, as the CLI opens it
    _everyday(mem)
    mem.close()

    def groups(*args: str) -> str:
        r = CliRunner().invoke(
            cli, ["groups", *args], env={"AGENTMEM_DB": str(db)}, catch_exceptions=False
        )
        assert r.exit_code == 0, r.output
        return r.output

    text = groups()
    assert "6 groups: 0 ready, 0 degenerate, 6 pending" in text
    assert (
        "1 run(s) with their own corrections; from the 6 runs outside ready exact groups, "
        "1 similar-task group(s) (theta_task"
    ) in text
    similar = next(line for line in text.splitlines() if line.startswith("2,3,4 "))
    assert similar.split()[:5] == ["2,3,4", "ready", "0.20", "1.00", "1.00"]
    assert "-1.15 +0.58 +0.58  tasks alike" in similar
    exact = groups("--grouping", "exact")
    assert exact.rstrip().endswith("6 pending") and "runs outside" not in exact
    assert "0 groups: 0 ready" in groups("--status", "ready")
    js = json.loads(groups("--status", "pending", "--json"))
    assert [g["kind"] for g in js] == ["exact"] * 6 + ["correction", "similar"]
    diagnosis = groups("--diagnose")
    assert "composite reward:" in diagnosis and "binary reward:" in diagnosis
    assert "similar-task" not in diagnosis
    assert json.loads(groups("--diagnose", "--json"))["rewards"]["binary"]["all"]["groups"] == 6
    # once learned from, the formed groups say so
    learned = CliRunner().invoke(
        cli, ["learn", "--no-model"], env={"AGENTMEM_DB": str(db)}, catch_exceptions=False
    )
    assert learned.exit_code == 0, learned.output
    rows = [line.split() for line in groups().splitlines()]
    assert ["1", "prerequisite", "learned", "1", "3"] in [r[:5] for r in rows]
    assert ["2,3,4", "learned"] in [r[:2] for r in rows]


@given(st.text(max_size=200))
def test_a_turn_by_its_text_takes_any_text(text: str):
    why = turn_by_text(text)
    assert why is None or why.startswith(("a ", "an "))
    if len(text) > 80 and "<command-" not in text and not text.lstrip().startswith(("#", "<")):
        assert why is None  # a reply is short
