"""Upgrades: a library written at schema version 1 opens, migrates and keeps everything."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from agentmem import Memory
from agentmem.check import check_library, check_path, open_readonly
from agentmem.db import connect, write
from agentmem.migrations import SCHEMA_VERSION, migrations

from .conftest import ROOT

FIXTURE = ROOT / "tests" / "data" / "library_v1.db"
M002 = "m002_steps_trajectory_success"
TABLES = (
    "settings",
    "tool_domains",
    "trajectories",
    "steps",
    "feedback",
    "sessions",
    "experiences",
    "operations",
    "session_groups",
)


def _dump(path: Path) -> dict[str, Any]:
    """Every row of every agentmem table (and the vector index's ids), read-only."""
    db = open_readonly(path)
    try:
        out: dict[str, Any] = {
            t: db.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in TABLES
        }
        out["vectors"] = db.execute(
            "SELECT experience_id, domain FROM experience_vectors_items ORDER BY 1"
        ).fetchall()
        return out
    finally:
        db.close()


def _applied(path: Path) -> list[str]:
    db = open_readonly(path)
    try:
        return [r[0] for r in db.execute("SELECT name FROM _sqlite_migrations ORDER BY id")]
    finally:
        db.close()


def _objects(db: Any) -> set[tuple[str, str]]:
    return {
        (r[0], r[1])
        for r in db.execute(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
            "AND name NOT LIKE 'experience_vectors%'"
        )
    }


@pytest.fixture
def v1(tmp_path: Path) -> Path:
    dst = tmp_path / "library_v1.db"
    shutil.copyfile(FIXTURE, dst)
    return dst


def test_fixture_is_small_and_at_schema_1(v1):
    assert FIXTURE.stat().st_size < 300_000
    assert _applied(v1) == ["m001_initial"]
    report = check_path(v1)
    assert {p.kind for p in report.problems} == {"migrations-pending"}
    assert M002 in report.problems[0].message
    # exactly m001's objects: the same as an empty file migrated up to m001
    ref = connect(":memory:")
    with write(ref):
        migrations.apply(ref, stop_before=M002)
    db = open_readonly(v1)
    try:
        assert _objects(db) == _objects(ref)
    finally:
        db.close()
        ref.close()
    d = _dump(v1)
    assert len(d["trajectories"]) == 8 and len(d["steps"]) == 13
    assert {s[1] for s in d["sessions"]} == {"learn", "curate", "undo"}


def test_open_migrates_and_keeps_everything(v1):
    before = _dump(v1)
    with Memory.open(v1) as mem:  # the embedder is the one the fixture recorded
        assert [m.name for m in migrations.applied(mem.db)] == [
            m.name for m in migrations._migrations
        ]
        assert check_library(mem.db) == []
        exps = [(e.id, e.text, e.domain) for e in mem.experiences()]
        assert len(exps) == 5
        assert mem.journal() and len(mem.sessions()) == 11
        hits = mem.retrieve("read a.txt with cat", tools=["cat"], k=2)
        assert hits and all(h.experience.domain in ("fs", "") for h in hits)
        reports = {g.key: g for g in mem.groups()}
        assert reports["read-a"].usable and reports["push"].usable
        plan = mem.db.execute(
            "EXPLAIN QUERY PLAN SELECT count(*) FROM steps WHERE trajectory_id = ? AND success = 0",
            [1],
        ).fetchall()
        assert "steps_trajectory_success" in str(plan)
    after = _dump(v1)
    versions = [r for r in after["settings"] if r[0] == "index_version"]
    assert len(versions) == 1  # m003 adds the index version...
    after["settings"].remove(versions[0])
    for table in ("trajectories", "feedback"):  # m004 adds uuid, NULL for unshared rows...
        assert all(r[-1] is None for r in after[table])
        after[table] = [r[:-1] for r in after[table]]
    # m007 adds session_groups.kind and .reason: every older group is an exact one
    width = len(before["session_groups"][0])
    assert {r[width:] for r in after["session_groups"]} == {("exact", None)}
    after["session_groups"] = [r[:width] for r in after["session_groups"]]
    # ...opening fills the keyword index and the tool profiles (m008) and notes it...
    added = {r[0]: r[1] for r in after["settings"] if r[0] not in dict(before["settings"])}
    assert added == {"keyword_index_version": "1", "tool_usage_upto": "8"}
    after["settings"] = [r for r in after["settings"] if r[0] not in added]
    # m017 adds the review columns, and opening checks the old lessons: none asks for a
    # risky command, so none is held and each live one is marked checked ("[]")...
    checks = [r[-4:] for r in after["experiences"]]
    assert set(checks) == {(None, "[]", None, None), (None, None, None, None)}
    assert checks.count((None, "[]", None, None)) == 5  # the live ones
    after["experiences"] = [r[:-4] for r in after["experiences"]]
    # m009 adds the evidence columns: zero counts, no stamps, no rule for the old lessons...
    assert all(r[-7:] == (0, 0, 0, 0, None, None, None) for r in after["experiences"])
    after["experiences"] = [r[:-7] for r in after["experiences"]]
    assert after == before  # ...and changes no row
    assert check_path(v1).problems == ()
    assert len(_applied(v1)) == SCHEMA_VERSION


def test_upgraded_library_keeps_working(v1):
    with Memory.open(v1) as mem:
        last = [s for s in mem.sessions() if s["kind"] == "curate"][-1]
        mem.undo(last["id"])  # undo a session journaled before the upgrade
        mem.add("Run git status before git commit.", domain="git")
        mem.record("Push my commits to origin", [], group="push", accepted=True)
        mem.learn(use_model=False)
        assert check_library(mem.db) == []


def test_migrations_are_idempotent(v1):
    Memory.open(v1).close()
    first = _dump(v1), _applied(v1)
    Memory.open(v1).close()
    db = connect(v1)
    try:
        with write(db):
            migrations.apply(db)
        with write(db):
            migrations.apply(db)
        assert migrations.pending(db) == []
        objects = _objects(db)
    finally:
        db.close()
    assert (_dump(v1), _applied(v1)) == first
    # the upgraded file has exactly what a new library has
    fresh = v1.parent / "fresh.db"
    Memory.open(fresh).close()
    db = connect(fresh)
    try:
        assert _objects(db) == objects
    finally:
        db.close()


def test_m002_alone_on_an_existing_index_is_harmless(v1):
    db = connect(v1)
    try:
        db.execute("CREATE INDEX steps_trajectory_success ON steps (trajectory_id, success)")
        with write(db):
            migrations.apply(db)
        assert [m.name for m in migrations.applied(db)][-1] == migrations._migrations[-1].name
    finally:
        db.close()


def test_a_file_from_a_newer_agentmem_is_refused(tmp_path):
    import sqlite3

    from agentmem import AgentMemError, Memory

    path = tmp_path / "new.db"
    Memory.open(path).close()
    con = sqlite3.connect(path)
    con.execute(
        "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
        "VALUES ('agentmem', 'm999_future', '2030-01-01')"
    )
    con.commit()
    con.close()
    with pytest.raises(AgentMemError, match="newer agentmem"):
        Memory.open(path)


def test_m003_rebuilds_the_index_blocks_from_the_exact_vectors(v1):
    """The blocks of an index written before m003 are rebuilt with the float32 vectors."""
    import numpy as np

    from agentmem.storage import vector_index

    db = connect(v1)
    try:
        # a damaged vector (wrong length) is left out of the blocks, and check says so
        db.execute(
            "UPDATE experience_vectors_items SET vector = zeroblob(12) "
            "WHERE experience_id = (SELECT max(experience_id) FROM experience_vectors_items)"
        )
        items = dict(db.execute("SELECT experience_id, vector FROM experience_vectors_items"))
        domains = dict(db.execute("SELECT experience_id, domain FROM experience_vectors_items"))
        with write(db):
            migrations.apply(db)
        assert vector_index._blocks_hold_vectors(db) and not vector_index._lacking_triggers(db)
        assert vector_index._state(db)[2] is not None
        dims = vector_index.index_info(db)[1]  # type: ignore[index]
        good = {e: v for e, v in items.items() if len(v) == 4 * dims}
        assert len(good) == len(items) - 1
        rows = db.execute(
            "SELECT domain, ids, norms, vectors FROM experience_vectors_blocks"
        ).fetchall()
        seen = {}
        for domain, ids, norms, vectors in rows:
            ids_a = np.frombuffer(ids, dtype=np.int64)
            vec = np.frombuffer(vectors, dtype=np.float32).reshape(len(ids_a), dims)
            for e, n, v in zip(ids_a, np.frombuffer(norms, dtype=np.float64), vec, strict=True):
                assert domains[int(e)] == domain
                assert v.tobytes() == good[int(e)]
                assert n == pytest.approx(float(np.linalg.norm(v.astype(np.float64))), rel=1e-12)
                seen[int(e)] = True
        assert set(seen) == set(good)
        # searches agree with brute force over the exact vectors, in every engine
        q = np.frombuffer(next(iter(good.values())), dtype=np.float32).astype(np.float64)
        m = np.array([np.frombuffer(v, dtype=np.float32) for v in good.values()], dtype=np.float64)
        scores = (m @ q) / (np.linalg.norm(m, axis=1) * np.linalg.norm(q))
        want = sorted(zip(good, scores.tolist(), strict=True), key=lambda p: (-p[1], p[0]))[:3]
        for engine in ("numpy", "sql"):
            got = vector_index._search(db, q.tolist(), k=3, engine=engine)
            assert [i for i, _ in got] == [i for i, _ in want]
        problems = vector_index.check(db)
        assert any("do not have the index's" in p for p in problems)
    finally:
        db.close()
