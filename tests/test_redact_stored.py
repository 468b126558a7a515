"""An older library cleaned of what earlier versions stored unredacted (m018_redact_stored).

A library is written the old way: runs, a lesson, a project scope and a feedback note go
in through the API with a harmless marker in every field, then raw SQL puts a planted
secret where each marker is, in every text column of every table (group keys
lower-cased, as the old code derived them from the raw task), and adds the rows the
API cannot write (learned groups, a pruned run, the import bookkeeping, served rows,
a team outbox item and claim) and a served log. The m018 record is removed, so the
current code opens it as the old library it stands for.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentmem import Memory, Step, Trajectory
from agentmem.check import check_path
from agentmem.db import connect, write
from agentmem.scrub import SETTING, redact_stored

from .conftest import run_cli
from .test_secrets_everywhere import Planted, _dump, _files_of, leaks

M018 = "m018_redact_stored"


class Markers:
    """One marker a field (``zqmk007x``), each standing for that field's planted secret."""

    def __init__(self, plant: Planted) -> None:
        self.plant = plant
        self.secret: dict[str, str] = {}

    def __call__(self, field: str) -> str:
        marker = f"zqmk{len(self.secret):03d}x"
        self.secret[marker] = self.plant(field)
        return marker


def _plant_everywhere(db: Path, markers: Markers) -> None:
    """Every marker in every text column replaced by its secret (lower-cased in group keys,
    as ``normalise_group`` of the raw task made them)."""
    conn = connect(db)
    try:
        tables = [
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'experience_vectors%' AND name NOT LIKE 'sqlite_%' "
                "AND name NOT LIKE '%fts_%' AND name NOT LIKE 'tool_usage_%'"
            )
        ]
        with conn:
            for table in tables:
                for col in [str(r[1]) for r in conn.execute(f"PRAGMA table_info([{table}])")]:
                    for marker, secret in markers.secret.items():
                        value = secret.lower() if col == "group_key" else secret
                        conn.execute(
                            f"UPDATE [{table}] SET [{col}] = replace([{col}], ?, ?) "
                            f"WHERE typeof([{col}]) = 'text' AND instr([{col}], ?)",
                            [marker, value, marker],
                        )
            conn.execute("DELETE FROM _sqlite_migrations WHERE name = ?", [M018])
    finally:
        conn.close()


def _old_library(tmp_path: Path) -> tuple[Path, Planted, dict[str, Any]]:
    db = tmp_path / "old.db"
    plant = Planted(str(db))
    m = Markers(plant)
    cond = f"cond {m('condition')}"  # (the task's secret is then an AWS key id: upper-case)
    task = f"deploy the app with {m('task')} to prod"
    with Memory.open(db, embedder="hash") as mem:
        ids = [
            mem.record(
                Trajectory(
                    task=task,
                    steps=[
                        # (outputs and parameters: every version redacted them on entry)
                        Step(m("tool"), {"command": "deploy"}, "out", ok)
                    ],
                    meta={"note": m("meta value"), m("meta key"): 1},
                    essential_actions=[{"name": "deploy", "kwargs": {"t": m("actions")}}],
                    source=f"src {m('source')}",
                    condition=cond,
                )
            )
            for ok in (True, False)
        ]
        other = mem.record(f"list the files {m('other task')}", [Step("ls", {}, "a b")])
        mem.feedback(ids[1], "correct", note=f"use {m('feedback')} next time")
        lesson = mem.add(f"Deploy with the key {m('lesson')} set.", project=str(tmp_path))
        keys = {t.id: t.group for t in mem.trajectories()}
        at = "2026-11-01T00:00:00+00:00"
        session = 99  # a learning session of the old library that used the runs' group
        group = keys[ids[0]]
        raw = [
            (
                "INSERT INTO sessions (id, kind, status, started_at, finished_at, params, "
                "report) VALUES (?, 'learn', 'applied', ?, ?, ?, ?)",
                [
                    session,
                    at,
                    at,
                    json.dumps({"note": m("session params")}),
                    json.dumps({"operations": [], "why": m("session report"), "groups": [group]}),
                ],
            ),
            (
                "UPDATE experiences SET rule = ? WHERE id = ?",
                [json.dumps({"kind": "order", "values": [m("rule")]}), lesson.id],
            ),
            (
                "INSERT INTO session_groups (session_id, group_key, trajectory_ids, status, "
                "mean_abs_advantage, conditions, summaries, kind, reason) "
                "VALUES (?, ?, ?, 'used', 0.5, '{}', ?, 'exact', ?)",
                [session, group, json.dumps(ids), json.dumps([m("summary")]), m("reason")],
            ),
            (
                "INSERT INTO pruned_trajectories (id, group_key, created_at, pruned_at) "
                "VALUES (999, ?, ?, ?)",
                [group, at, at],
            ),
            (
                "INSERT INTO imported_turns (source, session_id, turn_id, trajectory_id, "
                "status, note, imported_at) VALUES ('claude-code', ?, ?, ?, 'imported', ?, ?)",
                [m("session id"), m("turn id"), other, m("import note"), at],
            ),
            (
                "INSERT INTO imported_files (path, source, size, mtime_ns, imported_at) "
                "VALUES (?, 'claude-code', 1, 1, ?)",
                [f"/home/u/.claude/projects/-w-{m('file path')}-app/s.jsonl", at],
            ),
            (
                "INSERT INTO served (at, route, client_session, project, prompt_hash, "
                "experience_id, held) VALUES (?, 'hook', ?, ?, 'ab', ?, 0)",
                [at, m("served session"), f"/w/{m('served project')}/app", lesson.id],
            ),
            (
                "INSERT INTO team_outbox (uuid, kind, trajectory_id, payload, created_at) "
                "VALUES ('u-1', 'trajectory', ?, ?, ?)",
                [
                    ids[0],
                    json.dumps(
                        {
                            "trajectory": {"task": m("outbox task"), "group_key": group},
                            "steps": [{"tool": "bash", "params": json.dumps({"a": m("ob")})}],
                            "feedback": [{"note": m("outbox note")}],
                        }
                    ),
                    at,
                ],
            ),
            (
                "INSERT INTO team_claims (group_key, trajectory_ids, claim, holder, claimed_at, "
                "expires_at, status) VALUES (?, '[]', 'c', 'h', ?, ?, 'released')",
                [group, at, at],
            ),
            (
                "UPDATE operations SET reason = ? WHERE result_id = ?",
                [f"note {m('journal reason')}", lesson.id],
            ),
            (
                "INSERT INTO settings (key, value) VALUES ('served_log_offset', ?)",
                [json.dumps(0)],
            ),
        ]
        with write(mem.db):
            for sql, params in raw:
                mem.db.execute(sql, params)
    lines = [
        {"v": 1, "at": at, "route": "hook", "session": m("log session"), "project": "/w/a",
         "prompt": "ab", "served": [lesson.id], "held": []},
        {"v": 1, "at": at, "route": "hook", "session": "1fa2-3b", "project":
         f"/w/{m('log project')}/b", "prompt": "cd", "served": [lesson.id], "held": []},
    ]  # fmt: skip
    _plant_everywhere(db, m)
    text = "".join(json.dumps(x) + "\n" for x in lines)
    for marker, secret in m.secret.items():
        text = text.replace(marker, secret)
    log = Path(str(db) + ".served.jsonl")
    log.write_text(text)
    conn = connect(db)  # the first line was read, the second not yet
    with conn:
        first = len(text.splitlines(keepends=True)[0].encode())
        conn.execute("UPDATE settings SET value = ? WHERE key = 'served_log_offset'", [first])
    conn.close()
    return db, plant, {"runs": ids, "other": other, "lesson": lesson.id, "group": group}


def _secrets_in(db: Path, plant: Planted, *, raw: bool = False) -> list[str]:
    """Each planted secret (and its lower-cased form, as in an old group key) anywhere in
    the library's ``.dump`` or the files beside it (with ``raw``, the library file's own
    bytes too: free pages included)."""
    dump = _dump(db).lower()
    files = [f for f in _files_of(db) if raw or f != db]
    found = [place.rsplit(" in ", 1)[0] for place in leaks(plant, files, texts=[dump])]
    found += [f for f, s in plant.needles().items() if s.lower() in dump]
    return sorted(set(found))


@pytest.fixture
def old(tmp_path: Path) -> tuple[Path, Planted, dict[str, Any]]:
    return _old_library(tmp_path)


def test_the_old_library_holds_each_planted_secret(old):
    db, plant, _ = old
    held = _secrets_in(db, plant, raw=True)
    # every field's secret is there before the migration (the fixture plants for real)
    assert {f for f in held if "(last 12)" not in f} == set(plant.by_field)


def test_opening_an_old_library_redacts_every_stored_text(old):
    db, plant, ids = old
    with Memory.open(db, embedder="hash") as mem:
        report = mem.get_setting(SETTING)
        runs = {t.id: t for t in mem.trajectories()}
        assert runs[ids["runs"][0]].group == runs[ids["runs"][1]].group  # still one group
        group = runs[ids["runs"][0]].group
        assert "[REDACTED:" in group
        assert mem.db.execute("SELECT group_key FROM pruned_trajectories").fetchone()[0] == group
        assert [r[0] for r in mem.db.execute("SELECT group_key FROM session_groups")] == [group]
        lesson = mem.get_experience(ids["lesson"])
        assert "[REDACTED:" in lesson.text
        indexed = mem.db.execute("SELECT text FROM experience_fts WHERE rowid = ?", [lesson.id])
        assert indexed.fetchone()[0].startswith(lesson.text)  # the keyword index rebuilt
    assert _secrets_in(db, plant) == []
    assert check_path(db).problems == ()
    checked = run_cli("check", db=db)  # the real command
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
    conn = connect(db)  # the file's free pages may keep old bytes until VACUUM (docs)
    conn.execute("VACUUM")
    conn.close()
    assert _secrets_in(db, plant, raw=True) == []
    assert report["quarantined"] == [] and report["served_log_lines"] == 2
    for column in (
        "trajectories.group_key",
        "trajectories.task",
        "steps.tool",
        "experiences.text",
        "operations.after",
        "session_groups.group_key",
        "pruned_trajectories.group_key",
        "imported_turns.session_id",
        "served.client_session",
        "team_outbox.payload",
        "team_claims.group_key",
    ):
        assert report["changed"].get(column, 0) >= 1, column


def test_the_served_log_keeps_its_read_offset_at_the_same_line(old):
    db, _plant, _ids = old
    Memory.open(db, embedder="hash").close()
    lines = Path(str(db) + ".served.jsonl").read_bytes().splitlines(keepends=True)
    conn = connect(db)
    offset = json.loads(
        conn.execute("SELECT value FROM settings WHERE key = 'served_log_offset'").fetchone()[0]
    )
    conn.close()
    assert offset == len(lines[0])  # the first line read, the second not yet
    assert json.loads(lines[1])["prompt"] == "cd"


def test_running_it_again_changes_nothing(old):
    db, _plant, _ids = old
    Memory.open(db, embedder="hash").close()
    before = _dump(db)
    log = Path(str(db) + ".served.jsonl").read_bytes()
    conn = connect(db)
    with conn:
        report = redact_stored(conn)
    conn.close()
    assert report.changed == {} and report.log_lines == 0
    assert _dump(db) == before and Path(str(db) + ".served.jsonl").read_bytes() == log


def test_a_clean_library_is_left_as_it_is(tmp_path: Path):
    db = tmp_path / "clean.db"
    with Memory.open(db, embedder="hash") as mem:
        mem.record("push to origin", [Step("bash", {"command": "git push"}, "ok")])
        mem.add("Run the tests before pushing.")
        assert mem.get_setting(SETTING) is None
        before = _dump(db)
        report = redact_stored(mem.db)
    assert report.changed == {} and report.quarantined == ()
    assert _dump(db) == before


def _unreadable(db: Path) -> list[int]:
    """Runs as an older team learner took them in, before items were validated."""
    with Memory.open(db, embedder="hash") as mem:
        ids = [
            mem.record(f"task {i}", [Step("bash", {"command": "ls"}, "ok", i % 2 == 0)])
            for i in range(5)
        ]
        mem.record("task 0", [Step("bash", {"command": "ls -a"}, "ok")])
    conn = connect(db)
    with conn:
        conn.execute("UPDATE steps SET params = '[1, 2]' WHERE trajectory_id = ?", [ids[0]])
        conn.execute("UPDATE steps SET params = 'null' WHERE trajectory_id = ?", [ids[1]])
        conn.execute("UPDATE trajectories SET meta = '[]' WHERE id = ?", [ids[2]])
        conn.execute("UPDATE trajectories SET essential_actions = 'x{' WHERE id = ?", [ids[3]])
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = ?", [M018])
    conn.close()
    return ids


def test_runs_no_agentmem_reads_are_quarantined_counted_and_learning_goes_on(tmp_path: Path):
    db = tmp_path / "bad.db"
    ids = _unreadable(db)
    with Memory.open(db, embedder="hash") as mem:
        report = mem.get_setting(SETTING)
        assert report["quarantined"] == ids[:4]
        assert {t.id for t in mem.trajectories()} == {ids[4], ids[4] + 1}
        pruned = [r[0] for r in mem.db.execute("SELECT id FROM pruned_trajectories")]
        assert pruned == ids[:4]
        mem.learn(use_model=False)  # reads every run: none stops it
    assert check_path(db).problems == ()


@pytest.mark.parametrize("offset", ['"oops"', "99999"])
def test_a_served_log_offset_agentmem_did_not_write_is_left_as_it_is(tmp_path: Path, offset):
    db = tmp_path / "lib.db"
    secret = Planted("offset")("session")
    Memory.open(db, embedder="hash").close()
    log = Path(str(db) + ".served.jsonl")
    log.write_text(json.dumps({"v": 1, "session": secret, "served": [1]}) + "\n")
    conn = connect(db)
    with conn:
        conn.execute("INSERT INTO settings (key, value) VALUES ('served_log_offset', ?)", [offset])
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = ?", [M018])
    conn.close()
    with Memory.open(db, embedder="hash") as mem:  # opens whatever the offset holds
        report = mem.get_setting(SETTING)
    assert report["served_log_lines"] == 1 and report["served_log_error"] is None
    assert secret not in log.read_text()
    conn = connect(db)
    value = conn.execute("SELECT value FROM settings WHERE key = 'served_log_offset'").fetchone()
    conn.close()
    assert value[0] == offset
