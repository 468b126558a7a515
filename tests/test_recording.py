"""Recording: records, the Python API, JSON lines, OpenAI import; bad input changes nothing."""

from __future__ import annotations

import hashlib
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem import InvalidRecordError, Memory, Step, Trajectory, UnknownTrajectoryError
from agentmem.ingest import is_error_output, parse_jsonl, parse_openai
from agentmem.redact import PLACEHOLDER_PREFIX, Redactor

from .conftest import TAU_BENCH


def good_line(i: int = 0) -> dict:
    return {
        "task": f"list files {i % 3}",
        "steps": [
            {"tool": "ls", "params": {"path": "."}, "output": "a.txt", "success": True},
            {
                "tool": "cat",
                "params": {"file_name": "b.txt"},
                "output": "Error: no such file",
                "success": False,
            },
        ],
        "accepted": True,
    }


def dump(db) -> str:
    """Everything in the data tables, to compare before and after."""
    h = hashlib.sha256()
    for table in ("trajectories", "steps", "feedback", "experiences", "operations", "sessions"):
        for row in db.execute(f"SELECT * FROM {table} ORDER BY rowid"):
            h.update(repr(row).encode())
    return h.hexdigest()


def test_record_and_read_back(mem: Memory):
    tid = mem.record("List Files  ", [Step("ls", {"path": "."}, "a.txt", True)], accepted=True)
    t = mem.get_trajectory(tid)
    assert t.task == "List Files  "
    assert t.group == "list files"
    assert t.steps[0].domain == "fs"
    assert t.accepted is True
    assert t.success_rate == 1.0


def test_zero_step_trajectory(mem: Memory):
    tid = mem.record("answer from memory", [])
    t = mem.get_trajectory(tid)
    assert t.steps == () and t.success_rate == 1.0
    assert t.accepted is None  # pending until the window passes


def test_live_recording_context_manager(mem: Memory):
    with mem.trajectory("fix test", group="g1") as t:
        t.step("bash", {"cmd": "pytest"}, "1 failed", success=False)
        t.step("edit", {"file": "a.py"}, "ok")
    got = mem.get_trajectory(t.id)
    assert [s.tool for s in got.steps] == ["bash", "edit"]
    assert got.group == "g1"


def test_live_recording_records_failure_on_exception(mem: Memory):
    with pytest.raises(RuntimeError), mem.trajectory("crash") as t:
        t.step("bash", {"cmd": "make"}, "boom", success=False)
        raise RuntimeError("agent crashed")
    got = mem.get_trajectory(t.id)
    assert got.accepted is False
    assert "agent crashed" in got.meta["error"]


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"steps": []}, "task"),
        ({"task": "x"}, "steps"),
        ({"task": 3, "steps": []}, "task"),
        ({"task": "x", "steps": [{"tool": "ls", "params": [1]}]}, "params"),
        ({"task": "x", "steps": [{"tool": "ls", "success": "yes"}]}, "success"),
        ({"task": "x", "steps": [{"params": {}}]}, "tool"),
        ({"task": "x", "steps": [], "accepted": "maybe"}, "accepted"),
        ({"task": "x", "steps": [], "stpes": []}, "stpes"),
    ],
)
def test_bad_records_name_the_field(bad, field):
    with pytest.raises(InvalidRecordError) as e:
        parse_jsonl([json.dumps(bad)])
    assert field in str(e.value) and "line 1" in str(e.value)


def test_nan_and_non_utf8_rejected():
    with pytest.raises(InvalidRecordError, match=r"line 2.*NaN"):
        parse_jsonl(
            [
                json.dumps(good_line()),
                '{"task": "x", "steps": [{"tool": "a", "params": {"v": NaN}}]}',
            ]
        )
    with pytest.raises(InvalidRecordError, match=r"line 1.*UTF-8"):
        parse_jsonl([b'{"task": "\xff\xfe", "steps": []}'])


def test_one_bad_line_in_a_thousand_records_none(mem: Memory):
    lines = [json.dumps(good_line(i)) for i in range(1000)]
    lines[637] = '{"task": "x", "steps": [{"tool": "ls", "success": 1}]}'
    before = dump(mem.db)
    with pytest.raises(InvalidRecordError, match="line 638"):
        mem.record_many(parse_jsonl(lines).trajectories)
    assert dump(mem.db) == before
    result = parse_jsonl(lines, skip_bad=True)
    assert len(result.trajectories) == 999 and len(result.errors) == 1
    assert len(mem.record_many(result.trajectories)) == 999


def test_large_output_kept_whole_with_the_cap_off(mem: Memory):
    mem.set_output_cap(0)
    big = "x" * (10 * 1024 * 1024)
    tid = mem.record("big", [Step("cat", {"file_name": "log"}, big, True)])
    assert len(mem.get_trajectory(tid).steps[0].output) == len(big)


def test_unknown_trajectory_feedback(mem: Memory):
    before = dump(mem.db)
    with pytest.raises(UnknownTrajectoryError):
        mem.feedback(999, "accept")
    with pytest.raises(InvalidRecordError):
        mem.feedback(1, "meh")
    assert dump(mem.db) == before


@settings(max_examples=500, deadline=None)
@given(
    st.text(
        st.sampled_from(
            [" ", "\t", "\n", "\x1c", "\u2003", "\u3000", "a", "Σ", "İ", "K", ".", "\x85"]
        )
    )
)
def test_a_default_group_folds_case_and_every_white_space(task: str) -> None:
    """The default group key: lower-cased, every run of white space (what ``\\s``
    matches) one space, trimmed, at most 500 characters."""
    import re

    from agentmem.records import normalise_group

    assert normalise_group(task) == re.sub(r"\s+", " ", task.strip().lower())[:500]
    assert (
        normalise_group("  Fix\u3000the\n\tBUG  " + "x " * 400)
        == ("fix the bug " + "x " * 244)[:500]
    )


def test_feedback_changes_acceptance_and_group(mem: Memory):
    a = mem.record("t", [Step("ls", {}, "ok", True)])
    b = mem.record("t", [Step("ls", {}, "Error", False)])
    assert [g.status for g in mem.groups()] == ["pending"]
    mem.feedback(a, "accept")
    mem.feedback(b, "reject")
    (g,) = mem.groups()
    assert g.status == "ready"
    assert g.members[0].reward == pytest.approx(1.0)
    assert g.members[1].reward == pytest.approx(0.0)
    assert g.members[0].advantage > 0 > g.members[1].advantage


def test_error_output_detection():
    assert is_error_output("Error: payment amount does not add up")
    assert is_error_output('{"error": "No such file"}')
    assert not is_error_output('{"result": "error-free"}')
    assert not is_error_output("All good, no errors")


@pytest.mark.skipif(not TAU_BENCH.exists(), reason="shared tau-bench data not present")
def test_tau_bench_import_counts(mem: Memory):
    res = parse_openai(TAU_BENCH.read_bytes())
    mem.record_many(res.trajectories)
    groups = mem.groups()
    assert len(res.trajectories) == 200 and len(groups) == 50
    assert sum(1 for t in res.trajectories for s in t.steps if not s.success) == 73
    degenerate = [g for g in groups if g.degenerate]
    assert len(degenerate) == 13
    # 24 groups have the same task reward everywhere; 11 of them still differ in tool success
    same_task_reward = [g for g in groups if len({m.acceptance.value for m in g.members}) == 1]
    assert len(same_task_reward) == 24
    assert sum(1 for g in same_task_reward if not g.degenerate) == 11
    assert all(g.members[0].condition is None for g in groups)


def test_openai_repeated_call_ids_pair_in_order():
    rec = {
        "task": "t",
        "reward": 1.0,
        "messages": [
            {"role": "user", "content": "do it"},
            {
                "role": "assistant",
                "tool_calls": [{"id": "c1", "function": {"name": "a", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "first"},
            {
                "role": "assistant",
                "tool_calls": [{"id": "c1", "function": {"name": "b", "arguments": '{"x": 1}'}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "Error: second"},
        ],
    }
    (t,) = parse_openai(json.dumps([rec]).encode()).trajectories
    assert [(s.tool, s.output, s.success) for s in t.steps] == [
        ("a", "first", True),
        ("b", "Error: second", False),
    ]
    assert t.accepted is True


def test_secrets_redacted_before_storage(mem: Memory):
    key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    tid = mem.record(
        "push",
        [Step("bash", {"cmd": f"git push https://{key}@github.com/x/y"}, f"token {key} ok", True)],
    )
    row = mem.db.execute(
        "SELECT params, output FROM steps WHERE trajectory_id = ?", [tid]
    ).fetchone()
    assert key not in row[0] and key not in row[1]


@pytest.mark.parametrize(
    ("where", "secret"),
    [
        ("a number under a secret key", {"params": {"db": {"PGPASSWORD": 48213}}}),
        ("meta", {"meta": {"env": "AWS_ACCESS_KEY_ID=AKIA" + "Q3ZT7WHDLX2M4NPA"}}),
        ("the task", {"task": "log in with sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"}),
        ("the last step", {"output": "Authorization: Bearer abc.def-1234567890ghijkl"}),
    ],
)
def test_a_secret_anywhere_in_a_trajectory_is_found(mem: Memory, where: str, secret: dict):
    """One scan of the whole trajectory decides whether to redact it: a secret in any
    part trips it (the rest, with no secret, comes back as it was)."""
    steps = [Step("ls", {"path": "."}, "a.txt\nb.txt", True) for _ in range(5)]
    steps.append(Step("bash", secret.get("params", {}), secret.get("output", "done"), True))
    t = Trajectory(
        task=secret.get("task", "list the files"), steps=steps, meta=secret.get("meta", {})
    )
    stored = mem.get_trajectory(mem.record(t))
    text = json.dumps([stored.task, stored.meta, [(s.params, s.output) for s in stored.steps]])
    assert PLACEHOLDER_PREFIX in text, where
    for leaked in ("48213", "Q3ZT7WHDLX2M4NPA", "4eC39HqLyjWDarjtT1zdp7dc", "1234567890ghijkl"):
        assert leaked not in text, where
    assert [s.output for s in stored.steps[:5]] == ["a.txt\nb.txt"] * 5


def test_redaction_can_be_disabled(tmp_path):
    with Memory.open(tmp_path / "x.db", redactor=Redactor(enabled=False)) as m:
        key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
        tid = m.record("push", [Step("bash", {"cmd": key}, "", True)])
        assert m.get_trajectory(tid).steps[0].params["cmd"] == key


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["task", "steps", "group", "accepted", "meta", "x"]),
        json_values,
        max_size=5,
    )
)
def test_fuzz_record_lines_parse_or_fail_cleanly(data):
    try:
        line = json.dumps(data)
    except ValueError:
        return
    try:
        result = parse_jsonl(io.StringIO(line + "\n"))
    except InvalidRecordError as e:
        assert "line 1" in str(e)
        return
    for t in result.trajectories:
        assert isinstance(t, Trajectory)


def test_batched_ids_are_the_ones_sqlite_would_choose(mem: Memory):
    """record_many gives the rows max(id) + 1, ... in one executemany; outside a
    transaction insert_trajectories lets SQLite choose, one row at a time."""
    from agentmem.storage import trajectories

    step = Step("ls", {"path": "."}, "a.txt", True)
    first = mem.record_many([Trajectory(task=f"t{i}", steps=[step]) for i in range(3)])
    assert first == [1, 2, 3]
    mem.db.execute("DELETE FROM trajectories WHERE id = 3")  # SQLite would reuse 3 now
    again = mem.record_many([Trajectory(task=f"u{i}", steps=[step, step]) for i in range(2)])
    assert again == [3, 4]
    assert not mem.db.conn.in_transaction
    single = trajectories.insert_trajectories(mem.db, [Trajectory(task="v", steps=[step])])
    assert single == [5]
    rows = mem.db.execute(
        "SELECT t.id, t.task, count(s.id) FROM trajectories t JOIN steps s "
        "ON s.trajectory_id = t.id GROUP BY t.id ORDER BY t.id"
    ).fetchall()
    assert rows == [(1, "t0", 1), (2, "t1", 1), (3, "u0", 2), (4, "u1", 2), (5, "v", 1)]
