"""agentmem prune: old runs go, every lesson, the journal and the sessions stay.

Kills during a prune are in tests/test_crash.py; here: what goes and what stays,
undo and check after a prune, the dry run and its estimate, the space given back,
ids never reused, the CLI, and readers and a writer working while a prune runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentmem import InvalidRecordError, Memory, Step, UnknownTrajectoryError
from agentmem.check import check_path, kinds
from agentmem.cli import cli
from agentmem.storage.retention import parse_before
from benchmarks.scale_data import groups

from .conftest import ROOT, FakeEmbedder, fs_group, run_cli

KEPT_TABLES = ("experiences", "operations", "sessions", "session_groups", "settings")


def dump(mem: Memory, table: str) -> list[tuple]:
    return sorted(tuple(r) for r in mem.db.execute(f"SELECT * FROM {table}"))


def ages(mem: Memory, old: list[int], days: int = 100) -> None:
    """Make the runs ``old`` look recorded ``days`` ago."""
    at = (datetime.now(timezone.utc) - timedelta(days=days)).isoformat(timespec="microseconds")
    mem.db.execute(
        "UPDATE trajectories SET created_at = ? WHERE id IN (SELECT value FROM json_each(?))",
        [at, json.dumps(old)],
    )


@pytest.fixture
def learned(tmp_path: Path) -> Memory:
    """A library with two learned groups (old), one group not yet learned (old), new runs."""
    mem = Memory.open(tmp_path / "lib.db", embedder=FakeEmbedder())
    old = fs_group(mem, "read-a") + fs_group(mem, "read-b")
    mem.add("Use ls -la to see hidden files.", domain="fs")
    mem.learn(use_model=False)
    old += fs_group(mem, "read-c")  # old, never learned
    ages(mem, old)
    for g in groups(3, seed=1):
        mem.record_many(g)
    yield mem
    mem.close()


def test_prune_before_removes_old_runs_and_keeps_what_was_learned(learned: Memory) -> None:
    mem = learned
    kept = {t: dump(mem, t) for t in KEPT_TABLES}
    n_before = mem.stats()["trajectories"]
    r = mem.prune(before="30d")
    assert (r.trajectories, r.steps, r.feedback, r.groups) == (12, 21, 12, 3)
    assert r.learned == 8  # read-a and read-b were learned from; read-c never was
    assert r.reclaimed == "incremental" and r.bytes_freed is not None
    assert mem.stats()["trajectories"] == n_before - 12
    assert {t: dump(mem, t) for t in KEPT_TABLES} == kept  # every lesson, the journal
    gone = [r[0] for r in mem.db.execute("SELECT id FROM pruned_trajectories ORDER BY id")]
    assert gone == list(range(1, 13))
    for table, key in (("steps", "trajectory_id"), ("feedback", "trajectory_id")):
        assert not mem.db.execute(f"SELECT 1 FROM {table} WHERE {key} <= 12").fetchone()
    learned_rows = mem.db.execute(
        "SELECT trajectory_id, pruned FROM learned_trajectories ORDER BY trajectory_id"
    ).fetchall()
    assert [tuple(x) for x in learned_rows] == [(i, 1) for i in range(1, 9)]
    report = check_path(mem.path)
    assert report.ok, report.problems
    assert report.summary["pruned"] == 12 and "(12 pruned)" in report.summary_line()


def test_keep_last_and_both_rules(learned: Memory) -> None:
    mem = learned
    total = mem.stats()["trajectories"]
    assert mem.prune(keep_last=total, dry_run=True).trajectories == 0
    assert mem.prune(keep_last=5, dry_run=True).trajectories == total - 5
    # both: only runs old by both rules (the 12 old ones are among the older total-5)
    assert mem.prune(before="30d", keep_last=5, dry_run=True).trajectories == 12
    assert mem.prune(keep_last=total - 2).trajectories == 2
    assert [t.id for t in mem.trajectories()][:1] == [3]
    with pytest.raises(InvalidRecordError, match="less than 2"):
        mem.prune(keep_last=2**64, dry_run=True)  # past SQLite's integers: refused, not crashed


def test_undo_of_a_session_whose_runs_were_pruned(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "lib.db", embedder=FakeEmbedder()) as mem:
        runs = fs_group(mem, "read-a") + fs_group(mem, "read-b")
        mem.add("Use ls -la to see hidden files.", domain="fs")
        library = [(e.id, e.text, e.domain) for e in mem.experiences()]
        report = mem.learn(use_model=False)
        assert report.applied and [(e.id, e.text) for e in mem.experiences()] != library
        ages(mem, runs)
        assert mem.prune(before="30d").learned == len(runs)
        mem.undo(report.session_id)
        assert [(e.id, e.text, e.domain) for e in mem.experiences()] == library
        check = check_path(mem.path)
        assert check.ok, check.problems


def test_check_tells_a_pruned_run_from_a_missing_one(learned: Memory) -> None:
    mem = learned
    mem.prune(before="30d")
    assert check_path(mem.path).ok
    # a run a session learned from, deleted by hand: an error
    mem.db.execute(
        "INSERT INTO sessions (kind, status, started_at) VALUES ('learn', 'applied', 'x')"
    )
    sid = mem.db.execute("SELECT max(id) FROM sessions").fetchone()[0]
    t = mem.trajectories()[0].id
    mem.db.execute(
        "INSERT INTO session_groups (session_id, group_key, trajectory_ids, status) "
        "VALUES (?, 'g', ?, 'used')",
        [sid, json.dumps([t])],
    )
    mem.db.execute("DELETE FROM steps WHERE trajectory_id = ?", [t])
    mem.db.execute("DELETE FROM trajectories WHERE id = ?", [t])
    problems = check_path(mem.path).problems
    assert any(
        p.kind == "session"
        and "neither in the file nor marked pruned" in p.message
        and str(t) in p.message
        for p in problems
    ), problems
    # a run marked pruned that is still there: an error
    keep = mem.trajectories()[0].id
    mem.db.execute("INSERT INTO pruned_trajectories VALUES (?, 'g', 'x', 'y')", [keep])
    assert "trajectory" in kinds(check_path(mem.path).problems)


def test_dry_run_changes_nothing_and_estimates_the_space(tmp_path: Path) -> None:
    db = tmp_path / "lib.db"
    with Memory.open(db, embedder=FakeEmbedder()) as mem:
        for g in groups(150, seed=2):
            mem.record_many(g)
        everything = {
            t: dump(mem, t) for t in ("trajectories", "steps", "feedback", "pruned_trajectories")
        }
        r = mem.prune(keep_last=100, dry_run=True)
        assert r.dry_run and r.trajectories == 500 and r.steps == 5000 and r.bytes_freed is None
        assert {t: dump(mem, t) for t in everything} == everything
        pages = mem.db.execute("PRAGMA page_count").fetchone()[0]
        done = mem.prune(keep_last=100)
        freed = (pages - mem.db.execute("PRAGMA page_count").fetchone()[0]) * 4096
    assert done.trajectories == r.trajectories and done.steps == r.steps
    assert 0.8 < r.bytes_estimated / freed < 1.25, (r.bytes_estimated, freed)
    assert done.bytes_freed and done.bytes_freed >= freed


def test_a_file_of_an_older_agentmem_is_vacuumed_once(tmp_path: Path) -> None:
    old = tmp_path / "v1.db"
    shutil.copyfile(ROOT / "tests" / "data" / "library_v1.db", old)
    with Memory.open(old, embedder=FakeEmbedder()) as mem:
        assert mem.db.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
        for g in groups(100, seed=3):
            mem.record_many(g)
    size = old.stat().st_size
    with Memory.open(old, embedder=FakeEmbedder()) as mem:
        r = mem.prune(keep_last=20)
        assert r.reclaimed == "vacuum"
        assert mem.db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental from now
        assert mem.prune(keep_last=10).reclaimed == "incremental"
    assert old.stat().st_size < size / 3
    assert check_path(old).ok


def test_new_files_give_space_back_incrementally(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    with Memory.open(db, embedder=FakeEmbedder()) as mem:
        assert mem.db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        for g in groups(100, seed=4):
            mem.record_many(g)
    size = db.stat().st_size
    with Memory.open(db, embedder=FakeEmbedder()) as mem:
        r = mem.prune(keep_last=40)
        assert r.reclaimed == "incremental" and r.bytes_freed and r.bytes_freed > 0
    assert db.stat().st_size < size / 2


def test_pruned_ids_are_never_given_again(tmp_path: Path) -> None:
    from agentmem.records import Trajectory
    from agentmem.storage import trajectories

    with Memory.open(tmp_path / "lib.db", embedder=FakeEmbedder()) as mem:
        ids = fs_group(mem) + fs_group(mem, "other")
        assert mem.prune(keep_last=0).trajectories == 8
        assert mem.stats()["trajectories"] == 0
        new = mem.record("list", [Step("ls", {}, "a", True)])
        assert new == max(ids) + 1
        mem.prune(keep_last=0)
        step = Step("ls", {}, "a", True)
        assert not mem.db.conn.in_transaction  # outside a transaction SQLite would choose 1
        assert trajectories.insert_trajectories(mem.db, [Trajectory(task="v", steps=[step])]) == [
            new + 1
        ]
        with pytest.raises(UnknownTrajectoryError, match=f"trajectory {ids[0]} was pruned on"):
            mem.get_trajectory(ids[0])
        with pytest.raises(UnknownTrajectoryError, match="was pruned"):
            mem.feedback(ids[1], "reject")
        with pytest.raises(UnknownTrajectoryError, match="no trajectory has id 999"):
            mem.get_trajectory(999)


def test_shared_runs_not_pushed_yet_are_kept(learned: Memory) -> None:
    mem = learned
    mem.db.execute(
        "INSERT INTO team_outbox (uuid, kind, trajectory_id, payload, created_at) "
        "VALUES ('u1', 'trajectory', 1, '{}', 'x'), ('u2', 'trajectory', 2, '{}', 'x')"
    )
    mem.db.execute("UPDATE team_outbox SET pushed_at = 'y' WHERE uuid = 'u2'")
    r = mem.prune(before="30d")
    assert r.kept_unshared == 1 and r.trajectories == 11
    assert [t.id for t in mem.trajectories()][:1] == [1]


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("2025-01-31", True),
        ("2025-01-31T12:00:00Z", True),
        ("30d", True),
        ("12h", True),
        ("yesterday", False),
        ("2025-13-01", False),
        ("", False),
    ],
)
def test_before_values(text: str, ok: bool) -> None:
    if ok:
        assert parse_before(text).tzinfo is not None
    else:
        with pytest.raises(InvalidRecordError, match="is not a date"):
            parse_before(text)


def test_bad_arguments_change_nothing(learned: Memory) -> None:
    mem = learned
    n = mem.stats()["trajectories"]
    with pytest.raises(InvalidRecordError, match="say which runs"):
        mem.prune()
    with pytest.raises(InvalidRecordError, match="0 or more"):
        mem.prune(keep_last=-1)
    with pytest.raises(InvalidRecordError, match="is not a date"):
        mem.prune(before="last week")
    assert mem.stats()["trajectories"] == n


def test_learning_after_a_prune(learned: Memory) -> None:
    mem = learned
    mem.prune(before="30d")
    report = mem.learn(use_model=False)
    assert report.groups_used == 3  # the three new groups; the pruned ones are gone
    assert check_path(mem.path).ok


def test_cli_prune(learned: Memory) -> None:
    mem = learned
    path = mem.path
    runner = CliRunner()
    r = runner.invoke(cli, ["prune", "--db", path])
    assert r.exit_code == 2 and "--before DATE, --keep-last N or both" in r.output
    r = runner.invoke(cli, ["prune", "--before", "30d", "--dry-run", "--db", path])
    assert r.exit_code == 0 and r.output.startswith("would prune 12 trajectories (21 steps")
    assert "MB would be freed" in r.output
    done = run_cli("prune", "--before", "30d", "--json", db=Path(path))  # the real process
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["trajectories"] == 12 and out["bytes_freed"] is not None
    assert run_cli("check", db=Path(path)).returncode == 0


# -- while others read and write ---------------------------------------------------------------

READER = r"""
import json, sys, time
from agentmem.db import connect
db = connect(sys.argv[1])
seen, errors, t0 = set(), [], time.time()
while time.time() - t0 < float(sys.argv[2]):
    try:
        db.execute("BEGIN")
        n = db.execute(
            "SELECT count(*) FROM trajectories WHERE task LIKE 'Set the %'"
        ).fetchone()[0]
        steps = db.execute(
            "SELECT count(*) FROM steps s JOIN trajectories t ON t.id = s.trajectory_id "
            "WHERE t.task LIKE 'Set the %'"
        ).fetchone()[0]
        exps = db.execute("SELECT count(*), sum(length(text)) FROM experiences").fetchone()
        db.execute("COMMIT")
        seen.add((n, steps, tuple(exps)))
    except Exception as e:
        errors.append(repr(e))
        if db.conn.in_transaction:
            db.execute("ROLLBACK")
print(json.dumps({"seen": sorted(seen), "errors": errors[:5]}))
"""

WRITER = r"""
import json, sys, time
from agentmem import Memory, Step
ids = []
with Memory.open(sys.argv[1], embedder="hash") as mem:
    t0 = time.time()
    while time.time() - t0 < float(sys.argv[2]):
        ids.append(mem.record("written during the prune", [Step("ls", {}, "a.txt", True)]))
print(json.dumps(ids))
"""


@pytest.mark.parametrize("legacy", [True, False], ids=["vacuum", "incremental"])
def test_readers_and_a_writer_while_pruning(tmp_path: Path, legacy: bool) -> None:
    """Readers see the library before or after the prune, never in between, and never
    fail; a writer recording meanwhile loses nothing."""
    db = tmp_path / "lib.db"
    with Memory.open(db, embedder="hash") as mem:
        for g in groups(500, seed=5):
            mem.record_many(g)
        mem.add_many([(f"Lesson {i} about fs_orders_get.", "fs") for i in range(50)])
        exps = mem.db.execute("SELECT count(*), sum(length(text)) FROM experiences").fetchone()
        if legacy:
            mem.db.execute("PRAGMA auto_vacuum = NONE")
            mem.db.execute("VACUUM")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENTMEM_EMBEDDER": "hash"}
    duration = "6"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", READER, str(db), duration], stdout=subprocess.PIPE, env=env
        )
        for _ in range(3)
    ]
    procs.append(
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), duration], stdout=subprocess.PIPE, env=env
        )
    )
    time.sleep(2)  # the readers are reading
    with Memory.open(db, embedder="hash") as mem:
        r = mem.prune(keep_last=400)
        assert r.trajectories > 1500 and r.reclaimed == ("vacuum" if legacy else "incremental")
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    states = set()
    for out in outs[:3]:
        got = json.loads(out)
        assert got["errors"] == []
        states |= {tuple(x[:2]) for x in got["seen"]}
        assert {tuple(x[2]) for x in got["seen"]} == {tuple(exps)}  # lessons untouched
    # before: all 2,000 runs of the groups; after: those among the newest 400 (the writer's
    # runs are newer), 10 steps each; never anything in between
    assert (2000, 20000) in states and len(states) == 2, states
    [(n, steps)] = states - {(2000, 20000)}
    assert 0 <= n <= 400 and steps == 10 * n
    written = json.loads(outs[3])
    with Memory.open(db, embedder="hash") as mem:
        have = {t.id for t in mem.trajectories()}
        pruned = {x[0] for x in mem.db.execute("SELECT id FROM pruned_trajectories")}
    assert len(written) > 20 and set(written) <= have | pruned  # nothing lost
    assert {i for i in written if i > max(pruned)} <= have
    assert check_path(db).ok
