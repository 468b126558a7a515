"""The vector index: exact top-k against brute force, domain scoping, writes, mismatch, check()."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlite_utils import Database

from agentmem import index
from agentmem.db import connect, write
from agentmem.errors import AgentMemError, EmbeddingMismatchError
from agentmem.migrations import migrations

ENGINES: tuple[index.Engine, ...] = ("auto", "numpy", "sql")
DOMAINS = ("fs", "shell", "git", "web", "")


@pytest.fixture
def db() -> Iterator[Database]:
    d = connect(":memory:")
    migrations.apply(d)
    yield d
    d.conn.close()


def make_index(db: Database, dims: int, model: str = "test-model") -> None:
    with write(db):
        index.ensure_index(db, model, dims)


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
    results = [index._search(db, q, domains=domains, k=k, engine=e) for e in ENGINES]
    assert index.search(db, q, domains=domains, k=k) == results[0]
    return results


def fill(
    db: Database, rng: np.random.Generator, n: int, dims: int, clustered: bool = False
) -> dict[int, tuple[str, np.ndarray]]:
    x = unit(rng, n, dims, clustered)
    vectors = {i + 1: (DOMAINS[int(rng.integers(len(DOMAINS)))], x[i]) for i in range(n)}
    with write(db):
        index.put_many(db, [(i, d, v.tolist()) for i, (d, v) in vectors.items()])
    return vectors


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
            index.put_many(d, [(i, dm, v.tolist()) for i, (dm, v) in extra.items()])
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
        index.put_many(db, [(i, d, v.tolist()) for i, (d, v) in vectors.items()])
    q = same.tolist()
    for k in (5, 149, 151):
        want = brute(vectors, q, ["fs"], k)
        assert_same(index._search(db, q, domains=["fs"], k=k, engine="sql"), want)
        monkeypatch.setattr(index, "VEC0_K_MAX", 40)  # forces the full exact scan
        assert_same(index._search(db, q, domains=["fs"], k=k, engine="sql"), want)
        assert_same(
            index._search(db, q, domains=None, k=k, engine="sql"), brute(vectors, q, None, k)
        )
        monkeypatch.undo()


def test_unnormalised_and_numpy_vectors(db: Database) -> None:
    make_index(db, 4)
    with write(db):
        index.put(db, 1, "fs", [3.0, 0.0, 0.0, 0.0])
        index.put(db, 2, "fs", np.array([1.0, 1.0, 0.0, 0.0], dtype=np.float32))
    for engine in ENGINES:
        got = index._search(db, np.array([2.0, 0.0, 0.0, 0.0]), k=5, engine=engine)
        assert [i for i, _ in got] == [1, 2]
        assert got[0][1] == pytest.approx(1.0)
        assert got[1][1] == pytest.approx(2**-0.5)


# -- scoping, writes ------------------------------------------------------------------


def test_domain_scoping_includes_domain_free(db: Database) -> None:
    make_index(db, 3)
    with write(db):
        index.put(db, 1, "fs", [1.0, 0.0, 0.0])
        index.put(db, 2, "shell", [0.9, 0.1, 0.0])
        index.put(db, 3, "", [0.0, 1.0, 0.0])
    q = [1.0, 0.0, 0.0]
    for engine in ENGINES:
        assert [i for i, _ in index._search(db, q, domains=["fs"], k=5, engine=engine)] == [1, 3]
        assert [i for i, _ in index._search(db, q, domains=[], k=5, engine=engine)] == [3]
        assert [i for i, _ in index._search(db, q, domains=["web"], k=5, engine=engine)] == [3]
        assert [i for i, _ in index._search(db, q, domains=None, k=5, engine=engine)] == [1, 2, 3]
        assert index._search(db, q, domains=None, k=0, engine=engine) == []


def test_put_replaces_vector_and_domain(db: Database) -> None:
    make_index(db, 3)
    with write(db):
        index.put(db, 1, "fs", [1.0, 0.0, 0.0])
        index.put(db, 2, "fs", [0.0, 1.0, 0.0])
        index.put(db, 1, "git", [0.0, 0.0, 1.0])
    for engine in ENGINES:
        assert index._search(db, [1.0, 0.0, 0.0], domains=["fs"], k=5, engine=engine) == [(2, 0.0)]
        got = index._search(db, [0.0, 0.0, 1.0], domains=["git"], k=5, engine=engine)
        assert got == [(1, 1.0)]
    assert db.execute(f"SELECT count(*) FROM {index.ITEMS}").fetchone()[0] == 2
    assert index.check(db) == [
        "2 vectors belong to no experience: 1, 2",
    ]


def test_remove_and_churn_keep_everything_consistent(db: Database) -> None:
    rng = np.random.default_rng(11)
    make_index(db, 12)
    vectors = fill(db, rng, 1500, 12)  # several blocks per domain
    with write(db):
        index.remove(db, 10_000)  # absent: no error
        for i in list(vectors)[::3]:
            index.remove(db, i)
            del vectors[i]
        for i in list(vectors)[::5]:
            v = unit(rng, 1, 12)[0]
            d = DOMAINS[int(rng.integers(len(DOMAINS)))]
            index.put(db, i, d, v.tolist())
            vectors[i] = (d, v)
        fresh = unit(rng, 100, 12)
        index.put_many(db, [(5000 + j, "web", v.tolist()) for j, v in enumerate(fresh)])
        vectors.update({5000 + j: ("web", v) for j, v in enumerate(fresh)})
    assert index._check_internal(db, 12) == []
    for q in unit(rng, 4, 12):
        for domains in (None, ["web"], ["fs", "git"]):
            want = brute(vectors, q.tolist(), domains, 7)
            for got in run_all(db, q.tolist(), domains, 7):
                assert_same(got, want)
    with write(db):
        for i in list(vectors):
            index.remove(db, i)
    assert db.execute(f"SELECT count(*) FROM {index.BLOCKS}").fetchone()[0] == 0
    assert index.search(db, [1.0] * 12) == []


def test_writes_need_a_transaction(db: Database) -> None:
    make_index(db, 2)
    with pytest.raises(AgentMemError, match="transaction"):
        index.put(db, 1, "fs", [1.0, 0.0])
    with pytest.raises(AgentMemError, match="transaction"):
        index.remove(db, 1)


def test_bad_vectors_are_refused(db: Database) -> None:
    make_index(db, 3)
    with write(db):
        with pytest.raises(ValueError, match="zeros"):
            index.put(db, 1, "fs", [0.0, 0.0, 0.0])
        with pytest.raises(ValueError):
            index.put(db, 1, "fs", [float("nan"), 1.0, 0.0])
        with pytest.raises(EmbeddingMismatchError, match="agentmem reindex"):
            index.put(db, 1, "fs", [1.0, 0.0])
    with pytest.raises(EmbeddingMismatchError, match="agentmem reindex"):
        index.search(db, [1.0, 0.0, 0.0, 0.0])


# -- settings, mismatch, drop -------------------------------------------------------------


def test_ensure_index_records_settings_and_refuses_another_model(db: Database) -> None:
    assert index.index_info(db) is None
    assert index.search(db, [1.0, 0.0]) == []  # no index yet: nothing found
    make_index(db, 8, "model-a")
    make_index(db, 8, "model-a")  # idempotent
    assert index.index_info(db) == ("model-a", 8)
    raw = dict(db.execute("SELECT key, value FROM settings").fetchall())
    assert raw["embedding_model"] == '"model-a"'
    assert raw["embedding_dims"] == "8"
    for model, dims in (("model-b", 8), ("model-a", 16)):
        with write(db), pytest.raises(EmbeddingMismatchError, match="agentmem reindex"):
            index.ensure_index(db, model, dims)
    assert index.index_info(db) == ("model-a", 8)


def test_drop_index_removes_tables_and_settings(db: Database) -> None:
    make_index(db, 4, "model-a")
    with write(db):
        index.put(db, 1, "fs", [1.0, 0.0, 0.0, 0.0])
        index.drop_index(db)
    assert index.index_info(db) is None
    left = db.execute(
        "SELECT name FROM sqlite_master WHERE name LIKE 'experience_vectors%'"
    ).fetchall()
    assert left == []
    assert index.search(db, [1.0, 0.0, 0.0, 0.0]) == []
    make_index(db, 6, "model-b")  # reindex with another model
    assert index.index_info(db) == ("model-b", 6)


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
        index.put(db, 1, "fs", [1.0, 0.0, 0.0])
        index.put(db, 3, "shell", [0.0, 1.0, 0.0])
        index.put(db, 4, "", [0.0, 0.0, 1.0])
        index.put(db, 5, "fs", [1.0, 1.0, 0.0])  # wrong domain
        index.put(db, 9, "fs", [1.0, 1.0, 1.0])  # no such experience
    assert index.check(db) == [
        "1 live experiences have no vector and cannot be retrieved: 2 (run `agentmem reindex`)",
        "1 vectors belong to no experience: 9",
        "1 vectors belong to deleted experiences: 4",
        "1 vectors are filed under another domain than their experience's, so domain-scoped "
        "searches miss or wrongly include them: 5",
    ]
    with write(db):
        db.execute(f"UPDATE {index.ITEMS} SET vector = zeroblob(8) WHERE experience_id = 3")
        db.execute(f"DELETE FROM {index.TABLE} WHERE experience_id = 1")
    problems = index.check(db)
    assert any("do not have the index's 3 dimensions" in p and ": 3 (" in p for p in problems)
    assert any("disagree on 1 experiences: 1" in p for p in problems)


def test_check_clean_and_without_index(db: Database) -> None:
    with write(db):
        add_experience(db, 1, "fs")
    assert index.check(db) == [
        "the library has no vector index, so its 1 live experiences cannot be retrieved: "
        "run `agentmem reindex`"
    ]
    make_index(db, 2)
    with write(db):
        index.put(db, 1, "fs", [0.6, 0.8])
    assert index.check(db) == []


def test_auto_without_numpy_uses_sqlite_vec(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    make_index(db, 16)
    vectors = fill(db, rng, 200, 16)
    q = unit(rng, 1, 16)[0].tolist()
    calls: list[str] = []
    real_sql = index._search_sql
    monkeypatch.setattr(index, "_numpy", lambda import_it: None)

    def spy(*args: object) -> list[tuple[int, float]]:
        calls.append("sql")
        return real_sql(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(index, "_search_sql", spy)
    assert_same(index.search(db, q, domains=["git"], k=4), brute(vectors, q, ["git"], 4))
    assert calls == ["sql"]


def test_decoded_cache_follows_writes_of_this_and_other_connections(tmp_path):
    """The per-connection cache of decoded codes never serves a stale library."""
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
            got = [h.experience.id for h in a.retrieve(f"tool_{i} path_{i}", k=1)]
            assert got and a.get_experience(got[0]).text.startswith(f"Use tool_{i} ")
    finally:
        a.close()
        b.close()
