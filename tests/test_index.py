"""The vector index: exact top-k against brute force, domain scoping, writes, mismatch, check()."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlite_utils import Database

from agentmem.db import connect, write
from agentmem.errors import AgentMemError, EmbeddingMismatchError
from agentmem.migrations import migrations
from agentmem.storage import vector_index

ENGINES: tuple[vector_index.Engine, ...] = ("auto", "numpy", "sql")
DOMAINS = ("fs", "shell", "git", "web", "")


@pytest.fixture
def db() -> Iterator[Database]:
    d = connect(":memory:")
    migrations.apply(d)
    yield d
    d.conn.close()


def make_index(db: Database, dims: int, model: str = "test-model") -> None:
    with write(db):
        vector_index.ensure_index(db, model, dims)


def unit(rng: np.random.Generator, n: int, dims: int, clustered: bool = False) -> np.ndarray:
    """``n`` random unit vectors, exactly representable in float32."""
    x = rng.standard_normal((n, dims))
    if clustered and n:
        centres = rng.standard_normal((max(1, n // 40), dims))
        x = centres[rng.integers(0, len(centres), n)] + 0.4 * x
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


def brute(
    vectors: dict[int, tuple[str, np.ndarray]],
    q: Sequence[float],
    domains: Sequence[str] | None,
    k: int,
) -> list[tuple[int, float]]:
    """The reference: float64 cosine over the float32 vectors, best first, ties by id."""
    ids = [i for i, (d, _) in vectors.items() if domains is None or d in (*domains, "")]
    if not ids:
        return []
    m = np.array([vectors[i][1] for i in ids], dtype=np.float64)
    # Score each distinct vector once, so that duplicates tie exactly.
    distinct, which = np.unique(m, axis=0, return_inverse=True)
    qv = np.asarray(q, dtype=np.float64)
    scores = (distinct @ qv) / (np.linalg.norm(distinct, axis=1) * np.linalg.norm(qv))
    out = sorted(zip(ids, scores[which.ravel()].tolist(), strict=True), key=lambda p: (-p[1], p[0]))
    return out[:k]


def assert_same(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    for (_, a), (_, b) in zip(got, want, strict=True):
        assert abs(a - b) < 1e-9


def run_all(db: Database, q: Sequence[float], domains: Sequence[str] | None, k: int) -> list:
    results = [vector_index._search(db, q, domains=domains, k=k, engine=e) for e in ENGINES]
    # auto answers with sqlite-vec or numpy (from the second search of a version on): the
    # same experiences, scores equal to within float64 rounding
    results.append(vector_index.search(db, q, domains=domains, k=k))
    return results


def fill(
    db: Database, rng: np.random.Generator, n: int, dims: int, clustered: bool = False
) -> dict[int, tuple[str, np.ndarray]]:
    x = unit(rng, n, dims, clustered)
    vectors = {i + 1: (DOMAINS[int(rng.integers(len(DOMAINS)))], x[i]) for i in range(n)}
    with write(db):
        vector_index.put_many(db, [(i, d, v.tolist()) for i, (d, v) in vectors.items()])
    return vectors


def count_sql(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A list that gets "sql" each time a search uses sqlite-vec."""
    calls: list[str] = []
    real_sql = vector_index._search_sql

    def spy(*args: object) -> list[tuple[int, float]]:
        calls.append("sql")
        return real_sql(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(vector_index, "_search_sql", spy)
    return calls


# -- exactness ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "dims", "clustered"),
    [(0, 8, False), (1, 8, False), (7, 16, False), (300, 384, True), (1300, 24, True)],
)
def test_exact_against_brute_force(db: Database, n: int, dims: int, clustered: bool) -> None:
    rng = np.random.default_rng(n + dims)
    make_index(db, dims)
    vectors = fill(db, rng, n, dims, clustered)
    queries = unit(rng, 3, dims)
    if n:
        queries = np.vstack([queries, vectors[1][1]])  # a query equal to a stored vector
    for q in queries:
        for domains in (None, ["fs"], ["shell", "git"], [], ["nope"]):
            for k in (1, 5, 17, n + 3):
                want = brute(vectors, q.tolist(), domains, k)
                for got in run_all(db, q.tolist(), domains, k):
                    assert_same(got, want)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 120),
    dims=st.sampled_from([2, 3, 8, 33]),
    k=st.integers(1, 12),
    dup=st.integers(0, 6),
    domains=st.none() | st.lists(st.sampled_from((*DOMAINS[:-1], "other")), max_size=3),
)
def test_exact_property(
    seed: int, n: int, dims: int, k: int, dup: int, domains: list[str] | None
) -> None:
    d = connect(":memory:")
    migrations.apply(d)
    rng = np.random.default_rng(seed)
    make_index(d, dims)
    vectors = fill(d, rng, n, dims, clustered=bool(seed % 2))
    if n and dup:  # exact duplicates: ties broken by the smaller id
        extra = {n + j + 1: (DOMAINS[j % len(DOMAINS)], vectors[1][1]) for j in range(dup)}
        with write(d):
            vector_index.put_many(d, [(i, dm, v.tolist()) for i, (dm, v) in extra.items()])
        vectors.update(extra)
    q = (vectors[1][1] if n and seed % 3 == 0 else unit(rng, 1, dims)[0]).tolist()
    want = brute(vectors, q, domains, k)
    for got in run_all(d, q, domains, k):
        assert_same(got, want)
    d.conn.close()


def test_many_ties_widen_and_fall_back(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    make_index(db, 16)
    same = unit(rng, 1, 16)[0]
    others = unit(rng, 60, 16)
    vectors = {i + 1: ("fs", same) for i in range(150)}
    vectors.update({200 + i: ("", v) for i, v in enumerate(others)})
    with write(db):
        vector_index.put_many(db, [(i, d, v.tolist()) for i, (d, v) in vectors.items()])
    q = same.tolist()
    for k in (5, 149, 151):
        want = brute(vectors, q, ["fs"], k)
        assert_same(vector_index._search(db, q, domains=["fs"], k=k, engine="sql"), want)
        assert_same(_search_twice(db, q, domains=["fs"], k=k), want)  # from memory
        monkeypatch.setattr(vector_index, "VEC0_K_MAX", 40)  # forces the full exact scan
        assert_same(vector_index._search(db, q, domains=["fs"], k=k, engine="sql"), want)
        assert_same(
            vector_index._search(db, q, domains=None, k=k, engine="sql"), brute(vectors, q, None, k)
        )
        monkeypatch.undo()


def test_unnormalised_and_numpy_vectors(db: Database) -> None:
    make_index(db, 4)
    with write(db):
        vector_index.put(db, 1, "fs", [3.0, 0.0, 0.0, 0.0])
        vector_index.put(db, 2, "fs", np.array([1.0, 1.0, 0.0, 0.0], dtype=np.float32))
    for engine in ENGINES:
        got = vector_index._search(db, np.array([2.0, 0.0, 0.0, 0.0]), k=5, engine=engine)
        assert [i for i, _ in got] == [1, 2]
        assert got[0][1] == pytest.approx(1.0)
        assert got[1][1] == pytest.approx(2**-0.5)


# -- scoping, writes ------------------------------------------------------------------


def test_domain_scoping_includes_domain_free(db: Database) -> None:
    make_index(db, 3)
    with write(db):
        vector_index.put(db, 1, "fs", [1.0, 0.0, 0.0])
        vector_index.put(db, 2, "shell", [0.9, 0.1, 0.0])
        vector_index.put(db, 3, "", [0.0, 1.0, 0.0])
    q = [1.0, 0.0, 0.0]
    for engine in ENGINES:
        assert [i for i, _ in vector_index._search(db, q, domains=["fs"], k=5, engine=engine)] == [
            1,
            3,
        ]
        assert [i for i, _ in vector_index._search(db, q, domains=[], k=5, engine=engine)] == [3]
        assert [i for i, _ in vector_index._search(db, q, domains=["web"], k=5, engine=engine)] == [
            3
        ]
        assert [i for i, _ in vector_index._search(db, q, domains=None, k=5, engine=engine)] == [
            1,
            2,
            3,
        ]
        assert vector_index._search(db, q, domains=None, k=0, engine=engine) == []


def test_put_replaces_vector_and_domain(db: Database) -> None:
    make_index(db, 3)
    with write(db):
        vector_index.put(db, 1, "fs", [1.0, 0.0, 0.0])
        vector_index.put(db, 2, "fs", [0.0, 1.0, 0.0])
        vector_index.put(db, 1, "git", [0.0, 0.0, 1.0])
    for engine in ENGINES:
        assert vector_index._search(db, [1.0, 0.0, 0.0], domains=["fs"], k=5, engine=engine) == [
            (2, 0.0)
        ]
        got = vector_index._search(db, [0.0, 0.0, 1.0], domains=["git"], k=5, engine=engine)
        assert got == [(1, 1.0)]
    assert db.execute(f"SELECT count(*) FROM {vector_index.ITEMS}").fetchone()[0] == 2
    assert vector_index.check(db) == [
        "2 vectors belong to no experience: 1, 2",
    ]


def test_remove_and_churn_keep_everything_consistent(db: Database) -> None:
    rng = np.random.default_rng(11)
    make_index(db, 12)
    vectors = fill(db, rng, 1500, 12)  # several blocks per domain
    with write(db):
        vector_index.remove(db, 10_000)  # absent: no error
        for i in list(vectors)[::3]:
            vector_index.remove(db, i)
            del vectors[i]
        for i in list(vectors)[::5]:
            v = unit(rng, 1, 12)[0]
            d = DOMAINS[int(rng.integers(len(DOMAINS)))]
            vector_index.put(db, i, d, v.tolist())
            vectors[i] = (d, v)
        fresh = unit(rng, 100, 12)
        vector_index.put_many(db, [(5000 + j, "web", v.tolist()) for j, v in enumerate(fresh)])
        vectors.update({5000 + j: ("web", v) for j, v in enumerate(fresh)})
    assert vector_index._check_internal(db, 12) == []
    for q in unit(rng, 4, 12):
        for domains in (None, ["web"], ["fs", "git"]):
            want = brute(vectors, q.tolist(), domains, 7)
            for got in run_all(db, q.tolist(), domains, 7):
                assert_same(got, want)
    with write(db):
        for i in list(vectors):
            vector_index.remove(db, i)
    assert db.execute(f"SELECT count(*) FROM {vector_index.BLOCKS}").fetchone()[0] == 0
    assert vector_index.search(db, [1.0] * 12) == []


def test_writes_need_a_transaction(db: Database) -> None:
    make_index(db, 2)
    with pytest.raises(AgentMemError, match="transaction"):
        vector_index.put(db, 1, "fs", [1.0, 0.0])
    with pytest.raises(AgentMemError, match="transaction"):
        vector_index.remove(db, 1)


def test_bad_vectors_are_refused(db: Database) -> None:
    make_index(db, 3)
    with write(db):
        with pytest.raises(ValueError, match="zeros"):
            vector_index.put(db, 1, "fs", [0.0, 0.0, 0.0])
        with pytest.raises(ValueError):
            vector_index.put(db, 1, "fs", [float("nan"), 1.0, 0.0])
        with pytest.raises(EmbeddingMismatchError, match="agentmem reindex"):
            vector_index.put(db, 1, "fs", [1.0, 0.0])
    with pytest.raises(EmbeddingMismatchError, match="agentmem reindex"):
        vector_index.search(db, [1.0, 0.0, 0.0, 0.0])


# -- settings, mismatch, drop -------------------------------------------------------------


def test_ensure_index_records_settings_and_refuses_another_model(db: Database) -> None:
    assert vector_index.index_info(db) is None
    assert vector_index.search(db, [1.0, 0.0]) == []  # no index yet: nothing found
    make_index(db, 8, "model-a")
    make_index(db, 8, "model-a")  # idempotent
    assert vector_index.index_info(db) == ("model-a", 8)
    raw = dict(db.execute("SELECT key, value FROM settings").fetchall())
    assert raw["embedding_model"] == '"model-a"'
    assert raw["embedding_dims"] == "8"
    for model, dims in (("model-b", 8), ("model-a", 16)):
        with write(db), pytest.raises(EmbeddingMismatchError, match="agentmem reindex"):
            vector_index.ensure_index(db, model, dims)
    assert vector_index.index_info(db) == ("model-a", 8)


def test_drop_index_removes_tables_and_settings(db: Database) -> None:
    make_index(db, 4, "model-a")
    with write(db):
        vector_index.put(db, 1, "fs", [1.0, 0.0, 0.0, 0.0])
        vector_index.drop_index(db)
    assert vector_index.index_info(db) is None
    left = db.execute(
        "SELECT name FROM sqlite_master WHERE name LIKE 'experience_vectors%'"
    ).fetchall()
    assert left == []
    assert vector_index.search(db, [1.0, 0.0, 0.0, 0.0]) == []
    make_index(db, 6, "model-b")  # reindex with another model
    assert vector_index.index_info(db) == ("model-b", 6)


# -- check ---------------------------------------------------------------------------------


def add_experience(db: Database, eid: int, domain: str, status: str = "live") -> None:
    db.execute(
        "INSERT INTO experiences (id, text, domain, status, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, '2025-01-01', '2025-01-01')",
        [eid, f"lesson {eid}", domain, status],
    )


def test_check_finds_planted_problems(db: Database) -> None:
    make_index(db, 3, "model-a")
    with write(db):
        for eid, dom in ((1, "fs"), (2, "fs"), (3, "shell"), (4, ""), (5, "git")):
            add_experience(db, eid, dom, "deleted" if eid == 4 else "live")
        vector_index.put(db, 1, "fs", [1.0, 0.0, 0.0])
        vector_index.put(db, 3, "shell", [0.0, 1.0, 0.0])
        vector_index.put(db, 4, "", [0.0, 0.0, 1.0])
        vector_index.put(db, 5, "fs", [1.0, 1.0, 0.0])  # wrong domain
        vector_index.put(db, 9, "fs", [1.0, 1.0, 1.0])  # no such experience
    assert vector_index.check(db) == [
        "1 live experiences have no vector and cannot be retrieved: 2 (run `agentmem reindex`)",
        "1 vectors belong to no experience: 9",
        "1 vectors belong to deleted experiences: 4",
        "1 vectors are filed under another domain than their experience's, so domain-scoped "
        "searches miss or wrongly include them: 5",
    ]
    with write(db):
        db.execute(f"UPDATE {vector_index.ITEMS} SET vector = zeroblob(8) WHERE experience_id = 3")
        db.execute(f"DELETE FROM {vector_index.TABLE} WHERE experience_id = 1")
    problems = vector_index.check(db)
    assert any("do not have the index's 3 dimensions" in p and ": 3 (" in p for p in problems)
    assert any("disagree on 1 experiences: 1" in p for p in problems)


def test_check_clean_and_without_index(db: Database) -> None:
    with write(db):
        add_experience(db, 1, "fs")
    assert vector_index.check(db) == [
        "the library has no vector index, so its 1 live experiences cannot be retrieved: "
        "run `agentmem reindex`"
    ]
    make_index(db, 2)
    with write(db):
        vector_index.put(db, 1, "fs", [0.6, 0.8])
    assert vector_index.check(db) == []


def test_check_names_an_older_block_format_and_missing_tables(db: Database) -> None:
    make_index(db, 2)
    with write(db):
        add_experience(db, 1, "fs")
        vector_index.put(db, 1, "fs", [0.6, 0.8])
    with write(db):
        db.execute(f"ALTER TABLE {vector_index.BLOCKS} DROP COLUMN norms")
    assert vector_index.check(db) == [
        "the vector index is in the format of an older agentmem (experience_vectors_blocks "
        "holds no vectors): open the library with agentmem to upgrade it, or run "
        "`agentmem reindex`"
    ]
    assert vector_index.check(db, upgrade_pending=True) == []  # opening it upgrades it
    with write(db):
        db.execute(f"DROP TABLE {vector_index.ITEMS}")
    assert vector_index.check(db) == [
        "the vector index tables experience_vectors_items are missing: run `agentmem reindex`"
    ]


def test_auto_without_numpy_uses_sqlite_vec(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    make_index(db, 16)
    vectors = fill(db, rng, 200, 16)
    q = unit(rng, 1, 16)[0].tolist()
    monkeypatch.setattr(vector_index, "_numpy", lambda import_it: None)
    calls = count_sql(monkeypatch)
    for _ in range(3):  # never from memory: that needs numpy
        assert_same(vector_index.search(db, q, domains=["git"], k=4), brute(vectors, q, ["git"], 4))
    assert calls == ["sql"] * 3


def test_cache_follows_writes_of_this_and_other_connections(tmp_path):
    """The blocks a process keeps in memory never serve a stale library."""
    import random as _random

    from agentmem import Memory

    path = tmp_path / "cache.db"
    a = Memory.open(path, embedder="hash")
    b = Memory.open(path, embedder="hash")
    try:
        a.add("Before calling cat, call cd into the folder first.", domain="fs")
        a.add("Use git_status before git_commit.", domain="git")
        query = "read the file in the folder with cat after cd"
        first = [h.experience.id for h in a.retrieve(query, k=3)]
        again = [h.experience.id for h in a.retrieve(query, k=3)]  # served from the cache
        assert first == again and first
        new = b.add("Call cat on the file after cd into its folder.", domain="fs")  # other conn
        seen = [h.experience.id for h in a.retrieve(query, k=3)]
        assert new.id in seen
        a.remove(new.id)  # this connection's own write
        assert new.id not in [h.experience.id for h in a.retrieve(query, k=3)]
        rng = _random.Random(5)
        for i in range(30):  # many more, through either connection, checked each time
            mem = a if rng.random() < 0.5 else b
            mem.add(f"Use tool_{i} with path_{i} before cat_{i % 7}.", domain="fs")
            # the first search of a version uses sqlite-vec, the second reads the index into
            # memory, the third finds it current by data_version and total_changes alone
            for _ in range(3):
                got = [h.experience.id for h in a.retrieve(f"tool_{i} path_{i}", k=1)]
                assert got and a.get_experience(got[0]).text.startswith(f"Use tool_{i} ")
    finally:
        a.close()
        b.close()


def _search_twice(db: Database, q: Sequence[float], **kw: object) -> list[tuple[int, float]]:
    """Search until the answer comes from the blocks kept in memory, found current."""
    first = vector_index._search(db, q, engine="numpy", **kw)  # type: ignore[arg-type]
    second = vector_index._search(db, q, engine="numpy", **kw)  # type: ignore[arg-type]
    third = vector_index._search(db, q, engine="numpy", **kw)  # type: ignore[arg-type]
    assert first == second == third
    return third


def test_the_second_search_keeps_the_blocks_in_memory(db: Database) -> None:
    rng = np.random.default_rng(11)
    make_index(db, 8)
    vectors = fill(db, rng, 300, 8)
    q = unit(rng, 1, 8)[0].tolist()
    assert_same(
        vector_index._search(db, q, domains=["fs"], k=4, engine="numpy"),
        brute(vectors, q, ["fs"], 4),
    )
    assert vector_index._cached(db) is None  # a process that searches once reads one domain only
    assert_same(
        vector_index._search(db, q, domains=["git"], k=4, engine="numpy"),
        brute(vectors, q, ["git"], 4),
    )
    loaded = vector_index._cached(db)
    assert loaded is not None and loaded.size == 300
    for domains in (None, ["fs"], ["shell", "web"], ["nope"]):
        assert_same(
            vector_index._search(db, q, domains=domains, k=6), brute(vectors, q, domains, 6)
        )
    assert vector_index._cached(db) is loaded


def test_cache_drops_what_a_rolled_back_transaction_wrote(db: Database) -> None:
    rng = np.random.default_rng(12)
    make_index(db, 8)
    vectors = fill(db, rng, 100, 8)
    q = unit(rng, 1, 8)[0]
    assert_same(_search_twice(db, q.tolist(), k=3), brute(vectors, q.tolist(), None, 3))
    with pytest.raises(RuntimeError), write(db):
        vector_index.put(db, 999, "fs", q.tolist())
        assert _search_twice(db, q.tolist(), k=3)[0][0] == 999  # seen inside the transaction
        raise RuntimeError("roll back")
    assert_same(_search_twice(db, q.tolist(), k=3), brute(vectors, q.tolist(), None, 3))


def test_a_block_edited_by_another_client_is_read_again(tmp_path) -> None:
    """Triggers change index_version whatever writes the blocks, e.g. a SQLite client."""
    path = tmp_path / "edited.db"
    a, b = connect(path), connect(path)
    try:
        migrations.apply(a)
        make_index(a, 4)
        with write(a):
            vector_index.put_many(
                a, [(1, "fs", [1.0, 0.0, 0.0, 0.0]), (2, "fs", [0.0, 1.0, 0.0, 0.0])]
            )
        q = [1.0, 0.1, 0.0, 0.0]
        assert [i for i, _ in _search_twice(a, q, k=2)] == [1, 2]
        before = vector_index._state(a)
        flipped = np.array([[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]], dtype=np.float32)
        b.execute(  # swap the two vectors inside the block, behind agentmem's back
            f"UPDATE {vector_index.BLOCKS} SET vectors = ?", [flipped.tobytes()]
        )
        assert vector_index._state(a) != before
        assert [i for i, _ in _search_twice(a, q, k=2)] == [2, 1]
    finally:
        a.conn.close()
        b.conn.close()


def test_huge_and_tiny_vectors_stay_exact(db: Database) -> None:
    """Vectors whose float32 dot products could overflow or underflow are re-scored exactly."""
    rng = np.random.default_rng(13)
    make_index(db, 16)
    base = unit(rng, 200, 16, clustered=True)
    scale = np.where(np.arange(200) % 3 == 0, 1e38, np.where(np.arange(200) % 3 == 1, 1e-39, 1.0))
    x = (base * scale[:, None]).astype(np.float32)
    vectors = {i + 1: (DOMAINS[i % len(DOMAINS)], x[i]) for i in range(200)}
    with write(db):
        vector_index.put_many(db, [(i, d, v.tolist()) for i, (d, v) in vectors.items()])
    for q in unit(rng, 5, 16):
        for domains in (None, ["fs"], ["git", "web"]):
            for k in (1, 5, 30):
                want = brute(vectors, q.tolist(), domains, k)
                for got in run_all(db, q.tolist(), domains, k):
                    assert_same(got, want)
                assert_same(_search_twice(db, q.tolist(), domains=domains, k=k), want)


def test_without_triggers_the_numpy_engine_uses_sqlite_vec(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(14)
    make_index(db, 8)
    vectors = fill(db, rng, 120, 8)
    db.execute(f"DROP TRIGGER {vector_index.BLOCKS}_update")
    q = unit(rng, 1, 8)[0].tolist()
    calls = count_sql(monkeypatch)
    for _ in range(3):
        assert_same(vector_index._search(db, q, k=5, engine="numpy"), brute(vectors, q, None, 5))
    assert calls == ["sql"] * 3 and vector_index._cached(db) is None
    assert any(f"{vector_index.BLOCKS}_update" in p for p in vector_index.check(db))


def test_an_index_too_big_for_the_cache_is_read_per_search(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(15)
    make_index(db, 8)
    vectors = fill(db, rng, 200, 8)
    monkeypatch.setattr(vector_index, "CACHE_MAX_BYTES", 100 * 4 * 8)
    q = unit(rng, 1, 8)[0].tolist()
    for domains in (None, ["shell"]):
        assert_same(_search_twice(db, q, domains=domains, k=5), brute(vectors, q, domains, 5))
    assert vector_index._cached(db) is None


def test_auto_searches_once_with_sqlite_vec_then_from_memory(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(16)
    make_index(db, 8)
    vectors = fill(db, rng, 150, 8)
    calls = count_sql(monkeypatch)
    q = unit(rng, 1, 8)[0].tolist()
    for _ in range(4):
        assert_same(vector_index.search(db, q, domains=["fs"], k=5), brute(vectors, q, ["fs"], 5))
    assert calls == ["sql"] and vector_index._cached(db) is not None
    with write(db):  # a new index version: once more with sqlite-vec, then from memory
        vector_index.put(db, 500, "fs", q)
    vectors[500] = ("fs", np.asarray(q, dtype=np.float32))
    for _ in range(3):
        assert_same(vector_index.search(db, q, domains=["fs"], k=5), brute(vectors, q, ["fs"], 5))
    assert calls == ["sql", "sql"]


def test_the_retriever_embedding_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-lived process keeps the vectors of the last texts only, and re-embeds the rest."""
    from agentmem.embeddings import get_embedder
    from agentmem.retrieval import retriever

    monkeypatch.setattr(retriever, "EMBED_CACHE_SIZE", 5)
    emb = get_embedder("hash")
    calls: list[list[str]] = []
    real = emb.embed_batch

    def counting(texts):  # type: ignore[no-untyped-def]
        calls.append(list(texts))
        return real(texts)

    monkeypatch.setattr(emb, "embed_batch", counting)
    ret = retriever.Retriever(connect(":memory:"), emb)
    texts = [f"use tool_{i} with path_{i}" for i in range(12)]
    for t in texts:
        assert list(ret.vector(t)) == list(real([t])[0])
    assert len(ret._cache) == 5 and list(ret._cache) == texts[-5:]
    got = ret.embed([texts[0], texts[-1]])  # the first was forgotten, the last is kept
    assert list(got) == [texts[0], texts[-1]] and calls[-1] == [texts[0]]
    assert list(got[texts[0]]) == list(real([texts[0]])[0])
    assert len(ret._cache) == 5


def test_check_finds_blocks_that_disagree_with_the_items(db: Database) -> None:
    make_index(db, 3)
    with write(db):
        for eid in (1, 2):
            add_experience(db, eid, "fs")
        vector_index.put_many(db, [(1, "fs", [1.0, 2.0, 2.0]), (2, "fs", [0.0, 3.0, 4.0])])
    assert vector_index.check(db) == []
    block = db.execute(f"SELECT id, norms, vectors FROM {vector_index.BLOCKS}").fetchone()
    norms = np.frombuffer(block[1], dtype=np.float64).copy()
    norms[1] = 6.0  # 5.0 is right
    with write(db):
        db.execute(
            f"UPDATE {vector_index.BLOCKS} SET norms = ? WHERE id = ?", [norms.tobytes(), block[0]]
        )
    assert any("norms that do not match" in p for p in vector_index.check(db))
    vectors = np.frombuffer(block[2], dtype=np.float32).copy()
    vectors[:3] = [2.0, 1.0, 2.0]  # experience 1's vector, changed in the block only
    with write(db):
        db.execute(
            f"UPDATE {vector_index.BLOCKS} SET norms = ?, vectors = ? WHERE id = ?",
            [block[1], vectors.tobytes(), block[0]],
        )
    assert any("disagree on 1 experiences: 1 " in p for p in vector_index.check(db))


def test_closing_a_memory_drops_the_vectors_kept(tmp_path) -> None:
    from agentmem import Memory

    mem = Memory.open(tmp_path / "m.db", embedder="hash")
    mem.add("Call cd before cat.", domain="fs")
    for _ in range(2):
        mem.retrieve("cat a file")
    db = mem.db
    assert vector_index._cached(db) is not None
    mem.close()
    assert vector_index._cached(db) is None
