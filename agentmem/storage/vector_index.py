"""The vector index over experiences: exact cosine top-k, fast, in the library file.

Every search returns exactly what a brute-force cosine top-k over the stored
float32 vectors returns (scores in float64, ties broken by the smaller id).

Storage (three tables, all written in the caller's transaction):

``experience_vectors``
    A sqlite-vec ``vec0`` table: ``experience_id`` (primary key), ``domain``
    (partition key, so a search in one domain reads only that domain's
    vectors and the domain-free ones), ``embedding int8[dims]`` with
    ``distance_metric=cosine``. Each unit vector is scaled by 127 / its
    largest component before rounding, so int8 keeps about 7 bits per component.
``experience_vectors_items``
    One row per indexed experience: its float32 vector (the exact copy that
    scores are computed from), its domain, and where it sits in
    ``experience_vectors_blocks``.
``experience_vectors_blocks``
    The float32 vectors again, packed up to :data:`BLOCK_SIZE` per row and per
    domain with their norms and int8 error bounds, so that a process can read
    the whole index with a handful of row reads and score it with numpy.

Triggers on ``experience_vectors_blocks`` set the ``index_version`` setting to
a new random number whenever a block row is inserted, updated or deleted, by
any writer (this code, another process, a person with a SQLite client). The
version is part of the transaction that changed the blocks, so it rolls back
with it.

Two ways to search, both exact:

* **numpy** (when numpy is imported and the same index version is searched a
  second time through the same :class:`~sqlite_utils.Database` object): the
  blocks are read once and kept in memory for as long as ``index_version`` is
  unchanged (up to :data:`CACHE_MAX_BYTES`); a search then costs one
  ``PRAGMA data_version`` (``index_version`` is read again only after a commit)
  and a float32 matrix-vector product. Each float32 cosine is within
  ``eps = 2 (dims + 8) u`` of the exact one (``u`` the float32 unit roundoff:
  query rounding, the float32 dot product, the norm), so nothing scoring more
  than ``2 eps`` below the k-th best can be in the top k; the few vectors above
  that line are re-scored exactly in float64.
* **sql** (no numpy needed; the first search of each index version, which
  reads much less than the blocks, what the fast ``agentmem context`` path
  uses, and the fallback for an index without ``index_version``): sqlite-vec's int8
  cosine KNN over the partitions, oversampled. A vector that KNN did not
  return has int8 cosine at most the last returned one's, so its true cosine
  is at most that plus ``delta_x + delta_q + eps`` (``delta`` = distance
  between a unit vector and its normalised code; the largest per domain is
  stored). If the k-th exact score beats that bound the answer is proven;
  otherwise the KNN is widened, and past vec0's k limit the search falls back
  to a full exact scan. Returned vectors are re-scored best bound first, only
  while a bound can still reach the top k.

Reads see one snapshot: the caller's transaction, or a read-only savepoint
opened and released around the call. (A search answered from memory reads one
row set, the settings, and every in-memory block is from the version it names.)

All functions take a :class:`sqlite_utils.Database` from :func:`agentmem.db.connect`;
the readers (:func:`index_info`, :func:`search`) also a plain ``sqlite3`` connection
(which keeps nothing in memory: it cannot be weakly referenced). Writers
(:func:`ensure_index`, :func:`put`, :func:`put_many`, :func:`remove`,
:func:`drop_index`) must run inside the caller's transaction
(:func:`agentmem.db.write`); they never begin or commit one themselves.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import operator
import sys
import weakref
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from .._tx import raw, written_in_transaction
from ..errors import AgentMemError, EmbeddingMismatchError
from . import settings

if TYPE_CHECKING:  # numpy is optional at run time
    import numpy
    from sqlite_utils import Database

__all__ = [
    "BLOCK_SIZE",
    "CACHE_MAX_BYTES",
    "MANY_BATCH",
    "TABLE",
    "Vector",
    "check",
    "drop_index",
    "ensure_index",
    "forget",
    "index_info",
    "put",
    "put_many",
    "remove",
    "remove_many",
    "search",
    "search_many",
]

#: A vector as an embedder returns it: floats (a list, a tuple, a numpy array).
if TYPE_CHECKING:
    from sqlite_utils import Database

    Vector = Sequence[float] | numpy.ndarray
else:
    Vector = Sequence[float]

#: The vec0 table.
TABLE = "experience_vectors"
ITEMS = "experience_vectors_items"
BLOCKS = "experience_vectors_blocks"

#: Settings keys (values are JSON).
MODEL_KEY = "embedding_model"
DIMS_KEY = "embedding_dims"
#: A random number that changes with every write to the blocks (set by triggers).
VERSION_KEY = "index_version"

#: Most vectors in one ``experience_vectors_blocks`` row.
BLOCK_SIZE = 512

#: The most bytes of vectors a process keeps in memory per database for the numpy search
#: (256 MiB: 100,000 vectors of 384 dimensions fit). A bigger index is read per search.
CACHE_MAX_BYTES = 256 * 2**20

#: vec0's ``chunk_size``: slots allocated at a time per partition (domain).
VEC0_CHUNK_SIZE = 256

#: The largest ``k`` a vec0 KNN query accepts (sqlite-vec 0.1.x).
VEC0_K_MAX = 4096

_MAX_DIMS = 8192
_U32 = 2.0**-24  # float32 unit roundoff

Engine = Literal["auto", "numpy", "sql"]


# -- settings ------------------------------------------------------------------------


def index_info(db: Database | Any) -> tuple[str, int] | None:
    """The embedding model and dimension the index was built with, or None if there is none."""
    rows = settings.get_many(db, [MODEL_KEY, DIMS_KEY])
    if MODEL_KEY not in rows or DIMS_KEY not in rows:
        return None
    return str(rows[MODEL_KEY]), int(rows[DIMS_KEY])


def _table_exists(db: Database, name: str) -> bool:
    row = db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", [name]).fetchone()
    return row is not None


def _require_transaction(db: Database, what: str) -> None:
    if not db.conn.in_transaction:
        raise AgentMemError(
            f"index.{what} must run inside a transaction: wrap the call in agentmem.db.write(db)"
        )


def _mismatch(info: tuple[str, int], model_id: str, dims: int) -> EmbeddingMismatchError:
    return EmbeddingMismatchError(
        f"this library's vector index was built with {info[0]!r} ({info[1]} dimensions), "
        f"not {model_id!r} ({dims} dimensions); run `agentmem reindex` to re-embed every "
        "experience with the new model"
    )


def _dims(db: Database) -> int:
    info = index_info(db)
    if info is None or not _table_exists(db, ITEMS):
        raise AgentMemError(
            "this library has no vector index yet: call index.ensure_index first "
            "(or run `agentmem reindex`)"
        )
    if not _blocks_hold_vectors(db):
        raise _old_format()
    return info[1]


def _old_format() -> AgentMemError:
    return AgentMemError(
        "this library's vector index is in the format of an older agentmem: open it with "
        "Memory.open (which upgrades it) or run `agentmem reindex`"
    )


# -- create and drop -----------------------------------------------------------------


def ensure_index(db: Database, model_id: str, dims: int) -> None:
    """Create the index for ``model_id`` vectors of ``dims`` dimensions if it is absent.

    Records ``embedding_model`` and ``embedding_dims`` in ``settings``. Raises
    :class:`EmbeddingMismatchError` if the library already records another
    model or dimension (the user must run ``agentmem reindex``).
    """
    if not isinstance(model_id, str) or not model_id:
        raise ValueError("model_id must be a non-empty string")
    if isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= _MAX_DIMS:
        raise ValueError(f"dims must be an integer from 1 to {_MAX_DIMS}, not {dims!r}")
    _require_transaction(db, "ensure_index")
    info = index_info(db)
    if info is not None and info != (model_id, dims):
        raise _mismatch(info, model_id, dims)
    row = db.execute("SELECT sql FROM sqlite_master WHERE name = ?", [TABLE]).fetchone()
    if row is not None and f"int8[{dims}]" not in str(row[0]).replace(" ", ""):
        raise _mismatch(("an unrecorded model", _declared_dims(str(row[0]))), model_id, dims)
    with db.atomic():
        db.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING vec0("
            "experience_id INTEGER PRIMARY KEY, "
            "domain TEXT PARTITION KEY, "
            f"embedding int8[{dims}] distance_metric=cosine, "
            f"chunk_size={VEC0_CHUNK_SIZE})"
        )
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {ITEMS} ("
            "experience_id INTEGER PRIMARY KEY, "
            "domain TEXT NOT NULL, "
            "block INTEGER NOT NULL, "
            "slot INTEGER NOT NULL, "
            "vector BLOB NOT NULL)"
        )
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {BLOCKS} ("
            "id INTEGER PRIMARY KEY, "
            "domain TEXT NOT NULL, "
            "size INTEGER NOT NULL, "
            "max_delta REAL NOT NULL, "
            "ids BLOB NOT NULL, "
            "norms BLOB NOT NULL, "
            "deltas BLOB NOT NULL, "
            "vectors BLOB NOT NULL)"
        )
        if not _blocks_hold_vectors(db):
            raise _old_format()
        db.execute(f"CREATE INDEX IF NOT EXISTS {BLOCKS}_domain ON {BLOCKS} (domain, size)")
        for event in ("insert", "update", "delete"):
            db.execute(
                f"CREATE TRIGGER IF NOT EXISTS {BLOCKS}_{event} AFTER {event.upper()} ON {BLOCKS} "
                f"BEGIN {settings.bump_sql(VERSION_KEY)}; END"
            )
        settings.put_random(db, VERSION_KEY)
        if info is None:
            settings.put(db, MODEL_KEY, model_id)
            settings.put(db, DIMS_KEY, dims)


def _lacking_triggers(db: Database) -> list[str]:
    """The triggers that keep ``index_version`` which the file lacks."""
    have = {str(r[0]) for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    want = [f"{BLOCKS}_{event}" for event in ("insert", "update", "delete")]
    return [name for name in want if name not in have]


def _blocks_hold_vectors(db: Database) -> bool:
    """Is ``experience_vectors_blocks`` in this version's format (float32 vectors, norms)?"""
    columns = {str(r[1]) for r in db.execute(f"PRAGMA table_info({BLOCKS})")}
    return {"norms", "vectors"} <= columns


def _declared_dims(sql: str) -> int:
    start = sql.find("int8[")
    end = sql.find("]", start)
    try:
        return int(sql[start + 5 : end])
    except ValueError:
        return 0


def drop_index(db: Database) -> None:
    """Remove the index tables and its settings (for ``agentmem reindex``)."""
    _require_transaction(db, "drop_index")
    with db.atomic():
        for name in (TABLE, ITEMS, BLOCKS):  # dropping the blocks drops their triggers
            db.execute(f"DROP TABLE IF EXISTS {name}")
        settings.delete(db, MODEL_KEY, DIMS_KEY, VERSION_KEY)


# -- quantisation ---------------------------------------------------------------------


#: A vector ready to store: ``vector`` (float32, as given), ``norm`` (its length, in
#: float64), ``codes`` (int8: round(x / scale), x the vector divided by its norm) and
#: ``delta`` (>= |x - codes / |codes||, the bound of the sql path). Made from types, not
#: from annotations, which this module's ``from __future__ import annotations`` turns into
#: strings that typing compiles (the first compile() costs the prompt hook about 2 ms).
_Coded = NamedTuple(  # noqa: UP014
    "_Coded", [("vector", bytes), ("norm", float), ("codes", bytes), ("delta", float)]
)


def _round_up(x: float) -> float:
    # Covers float64 rounding in the computation and the later float32 store.
    return x * (1.0 + 1e-6) + 1e-9


def _f32(x: float) -> float:
    return array("f", (x,))[0]


def _as_float32(vector: Vector, dims: int) -> array[float]:
    try:
        a = array("f", vector)
    except TypeError as exc:
        raise ValueError(f"a vector must be a sequence of numbers: {exc}") from None
    if len(a) != dims:
        raise EmbeddingMismatchError(
            f"a vector has {len(a)} dimensions but the index holds {dims}; the embedding "
            "model changed: run `agentmem reindex`"
        )
    return a


def _norm(a: Sequence[float]) -> float:
    n = math.sqrt(sum(map(operator.mul, a, a)))
    if not (n > 0.0 and math.isfinite(n)):
        raise ValueError("a vector must be finite and not all zeros (cosine is undefined)")
    return n


def _quantise(xn: Sequence[float]) -> tuple[list[int], float]:
    """int8 codes of the unit vector ``xn``, and the distance of ``xn`` to the unit code."""
    scale = _f32(max(map(abs, xn)) / 127.0)
    codes = [round(v / scale) for v in xn]  # |v| / scale <= 127 (1 + 2**-23): no clipping
    cn = math.hypot(*codes)
    delta = math.hypot(*[v - c / cn for v, c in zip(xn, codes, strict=True)])
    return codes, _round_up(delta)


def _code(vector: Vector, dims: int) -> _Coded:
    a = _as_float32(vector, dims)
    n = _norm(a)
    codes, delta = _quantise([v / n for v in a])
    return _Coded(a.tobytes(), n, array("b", codes).tobytes(), delta)


def _code_many_numpy(np: Any, vectors: list[Vector], dims: int) -> list[_Coded]:
    """:func:`_code` for many vectors at once (same bounds, vectorised)."""
    for v in vectors:
        if len(v) != dims:
            _as_float32(v, dims)  # raises the mismatch error
    a32 = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), dims)
    a = a32.astype(np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", a, a))
    if not np.all(np.isfinite(norms) & (norms > 0)):
        raise ValueError("a vector must be finite and not all zeros (cosine is undefined)")
    xn = a / norms[:, None]
    scales = (np.abs(xn).max(axis=1) / 127.0).astype(np.float32).astype(np.float64)
    codes = np.clip(np.rint(xn / scales[:, None]), -127, 127)
    deltas = np.linalg.norm(xn - codes / np.linalg.norm(codes, axis=1)[:, None], axis=1)
    codes8 = codes.astype(np.int8)
    return [
        _Coded(
            a32[i].tobytes(),
            float(norms[i]),
            codes8[i].tobytes(),
            _round_up(float(deltas[i])),
        )
        for i in range(len(vectors))
    ]


def _numpy(import_it: bool) -> Any:
    """The numpy module if it is imported already (or ``import_it`` and it is installed)."""
    np = sys.modules.get("numpy")
    if np is None and import_it:
        try:
            import numpy as np
        except ImportError:  # pragma: no cover - numpy is a dependency
            return None
    return np


# -- blocks ----------------------------------------------------------------------------


class _Block:
    """One ``experience_vectors_blocks`` row, loaded for editing."""

    _COLUMNS = "id, domain, ids, norms, deltas, vectors"

    def __init__(self, row: Sequence[Any] | None, domain: str, dims: int) -> None:
        self.width = 4 * dims  # bytes per float32 vector
        self.ids = array("q")
        self.norms = array("d")
        self.deltas = array("f")
        self.vectors = bytearray()
        self.id: int | None = None
        self.domain = domain
        if row is not None:
            self.id, self.domain = int(row[0]), str(row[1])
            self.ids.frombytes(row[2])
            self.norms.frombytes(row[3])
            self.deltas.frombytes(row[4])
            self.vectors = bytearray(row[5])

    @classmethod
    def load(cls, db: Database, block_id: int, dims: int) -> _Block:
        row = db.execute(f"SELECT {cls._COLUMNS} FROM {BLOCKS} WHERE id = ?", [block_id]).fetchone()
        if row is None:
            raise AgentMemError(f"the vector index is damaged: block {block_id} is missing")
        return cls(row, "", dims)

    def append(self, experience_id: int, c: _Coded) -> int:
        self.ids.append(experience_id)
        self.norms.append(c.norm)
        self.deltas.append(c.delta)
        self.vectors += c.vector
        return len(self.ids) - 1

    def swap_remove(self, slot: int) -> int | None:
        """Remove ``slot`` by moving the last entry into it; return the moved id, if any."""
        last = len(self.ids) - 1
        moved = None
        w = self.width
        if slot != last:
            self.ids[slot] = moved = self.ids[last]
            self.norms[slot] = self.norms[last]
            self.deltas[slot] = self.deltas[last]
            self.vectors[slot * w : (slot + 1) * w] = self.vectors[last * w :]
        self.ids.pop()
        self.norms.pop()
        self.deltas.pop()
        del self.vectors[last * w :]
        return moved

    def save(self, db: Database) -> None:
        if not self.ids:
            if self.id is not None:
                db.execute(f"DELETE FROM {BLOCKS} WHERE id = ?", [self.id])
            return
        values = [
            self.domain,
            len(self.ids),
            max(self.deltas),
            self.ids.tobytes(),
            self.norms.tobytes(),
            self.deltas.tobytes(),
            bytes(self.vectors),
        ]
        if self.id is None:
            cur = db.execute(
                f"INSERT INTO {BLOCKS} (domain, size, max_delta, ids, norms, deltas, vectors) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                values,
            )
            self.id = int(cur.lastrowid or 0)
        else:
            db.execute(
                f"UPDATE {BLOCKS} SET domain = ?, size = ?, max_delta = ?, ids = ?, norms = ?, "
                "deltas = ?, vectors = ? WHERE id = ?",
                [*values, self.id],
            )


# -- writes ---------------------------------------------------------------------------


def put(db: Database, experience_id: int, domain: str, vector: Vector) -> None:
    """Index (or re-index) one experience's vector under ``domain`` ('' = domain-free)."""
    put_many(db, [(experience_id, domain, vector)])


def put_many(db: Database, rows: Iterable[tuple[int, str, Vector]]) -> None:
    """Index many experiences at once; an id already indexed is replaced (the last row wins)."""
    _require_transaction(db, "put_many")
    dims = _dims(db)
    latest: dict[int, tuple[str, Vector]] = {}
    for experience_id, domain, vector in rows:
        if isinstance(experience_id, bool) or not isinstance(experience_id, int):
            raise ValueError(f"an experience id must be an integer, not {experience_id!r}")
        if not isinstance(domain, str):
            raise ValueError(f"a domain must be a string ('' for none), not {domain!r}")
        latest[experience_id] = (domain, vector)
    if not latest:
        return
    ids = list(latest)
    np = _numpy(import_it=len(ids) >= 256)
    if np is not None and len(ids) >= 32:
        coded = _code_many_numpy(np, [latest[i][1] for i in ids], dims)
    else:
        coded = [_code(latest[i][1], dims) for i in ids]
    with db.atomic():
        _remove_ids(db, ids, dims)
        _insert(db, [(i, latest[i][0], c) for i, c in zip(ids, coded, strict=True)], dims)


def _insert(db: Database, rows: list[tuple[int, str, _Coded]], dims: int) -> None:
    """Add rows whose ids are not indexed."""
    db.conn.executemany(
        f"INSERT INTO {TABLE} (experience_id, domain, embedding) VALUES (?, ?, vec_int8(?))",
        [(i, d, c.codes) for i, d, c in rows],
    )
    by_domain: dict[str, list[tuple[int, _Coded]]] = {}
    for i, d, c in rows:
        by_domain.setdefault(d, []).append((i, c))
    items: list[tuple[int, str, int, int, bytes]] = []
    for domain, todo in by_domain.items():
        while todo:
            row = db.execute(
                f"SELECT {_Block._COLUMNS} FROM {BLOCKS} "
                "WHERE domain = ? AND size < ? ORDER BY id DESC LIMIT 1",
                [domain, BLOCK_SIZE],
            ).fetchone()
            block = _Block(row, domain, dims)
            room = BLOCK_SIZE - len(block.ids)
            take, todo = todo[:room], todo[room:]
            slots = [block.append(i, c) for i, c in take]
            block.save(db)
            assert block.id is not None
            placed = zip(take, slots, strict=True)
            items += [(i, domain, block.id, s, c.vector) for (i, c), s in placed]
    db.conn.executemany(
        f"INSERT INTO {ITEMS} (experience_id, domain, block, slot, vector) VALUES (?, ?, ?, ?, ?)",
        items,
    )


def remove(db: Database, experience_id: int) -> None:
    """Remove an experience's vector; nothing happens if it is not indexed."""
    remove_many(db, [experience_id])


def remove_many(db: Database, experience_ids: Iterable[int]) -> None:
    """Remove experiences' vectors; ids not indexed are passed over."""
    _require_transaction(db, "remove_many")
    ids = list(experience_ids)
    if not ids or index_info(db) is None or not _table_exists(db, ITEMS):
        return
    with db.atomic():
        _remove_ids(db, ids, _dims(db))


def _remove_ids(db: Database, ids: list[int], dims: int) -> None:
    found = db.execute(
        f"SELECT experience_id, block FROM {ITEMS} "
        "WHERE experience_id IN (SELECT value FROM json_each(?))",
        [json.dumps(ids)],
    ).fetchall()
    if not found:
        return
    gone = [int(r[0]) for r in found]
    db.conn.executemany(f"DELETE FROM {TABLE} WHERE experience_id = ?", [(i,) for i in gone])
    db.execute(
        f"DELETE FROM {ITEMS} WHERE experience_id IN (SELECT value FROM json_each(?))",
        [json.dumps(gone)],
    )
    by_block: dict[int, list[int]] = {}
    for i, b in found:
        by_block.setdefault(int(b), []).append(int(i))
    removed = set(gone)
    moves: list[tuple[int, int]] = []
    for block_id, members in by_block.items():
        block = _Block.load(db, block_id, dims)
        where = {e: s for s, e in enumerate(block.ids)}
        moved_here: set[int] = set()
        for e in members:
            slot = where.pop(e)
            moved = block.swap_remove(slot)
            if moved is not None:
                where[moved] = slot
                moved_here.add(moved)
        block.save(db)
        moves += [(where[m], m) for m in moved_here if m not in removed]
    db.conn.executemany(f"UPDATE {ITEMS} SET slot = ? WHERE experience_id = ?", moves)


# -- search ---------------------------------------------------------------------------


@contextlib.contextmanager
def _snapshot(db: Database) -> Iterator[None]:
    """Read from one snapshot: the caller's transaction, or a read-only savepoint."""
    conn = raw(db)
    if conn.in_transaction:
        yield
        return
    conn.execute("SAVEPOINT agentmem_index_read")
    try:
        yield
    finally:
        conn.execute("RELEASE agentmem_index_read")


def _scope(domains: Sequence[str] | None) -> list[str] | None:
    if domains is None:
        return None
    if isinstance(domains, str):
        raise ValueError("domains must be a sequence of domain names, not one string")
    return sorted({*domains, ""})


def _domain_filter(parts: list[str] | None) -> tuple[str, list[object]]:
    if parts is None:
        return "", []
    return " WHERE domain IN (SELECT value FROM json_each(?))", [json.dumps(parts)]


def search(
    db: Database | Any,
    vector: Vector,
    *,
    domains: Sequence[str] | None = None,
    k: int = 5,
) -> list[tuple[int, float]]:
    """The ``k`` indexed experiences most cosine-similar to ``vector``, best first.

    Returns ``(experience_id, cosine similarity)`` pairs, ties broken by the
    smaller id: exactly the brute-force top-k over the stored float32 vectors
    (scores computed in float64). ``domains=None`` searches everything;
    otherwise the given domains plus the domain-free experiences (domain '').
    Fewer than ``k`` pairs come back when fewer vectors are in scope; none
    when the library has no index yet.
    """
    return _search(db, vector, domains=domains, k=k, engine="auto")


#: Most queries :func:`search_many` scores in one matrix product (its float32 scores
#: take MANY_BATCH x 4 bytes a vector: 51 MB for 100,000 vectors).
MANY_BATCH = 128


def search_many(
    db: Database,
    vectors: Sequence[Vector],
    *,
    domains: Sequence[Sequence[str] | None] | None = None,
    k: int = 5,
) -> list[list[tuple[int, float]]]:
    """:func:`search` for each of ``vectors`` (with ``domains[i]`` for vector ``i``): the
    same answers, in order, for much less than the searches one by one.

    With numpy the index is read into memory once, and the queries of the same
    domains are scored :data:`MANY_BATCH` at a time in one matrix product (the
    index's vectors are read from memory once per batch, not once per query:
    a learning session of 25,000 groups over 100,000 experiences). Without
    numpy, or for an index only sqlite-vec can search, this is :func:`search`
    in a loop. All answers are read from one snapshot.
    """
    if isinstance(k, bool) or not isinstance(k, int):
        raise ValueError(f"k must be an integer, not {k!r}")
    scopes = [None] * len(vectors) if domains is None else list(domains)
    if len(scopes) != len(vectors):
        raise ValueError(f"{len(vectors)} vectors but {len(scopes)} domain lists")
    parts = [_scope(d) for d in scopes]
    np = _numpy(import_it=len(vectors) > 1)
    with _snapshot(db):
        loaded = _cached(db)
        if np is not None and (loaded is None or not loaded.current(db)):
            info = index_info(db)
            if info is None or not _table_exists(db, ITEMS):
                return [[] for _ in vectors]
            loaded = _load(db, np, info[1], None, cached_only=False, keep=True)
        if np is None or loaded is None:
            return [_search(db, v, domains=d, k=k) for v, d in zip(vectors, scopes, strict=True)]
        out: list[list[tuple[int, float]]] = []
        for start in range(0, len(vectors), MANY_BATCH):
            stop = start + MANY_BATCH
            out += loaded.search_many(np, vectors[start:stop], parts[start:stop], k)
        return out


def _search(
    db: Database,
    vector: Vector,
    *,
    domains: Sequence[str] | None = None,
    k: int = 5,
    engine: Engine = "auto",
) -> list[tuple[int, float]]:
    """:func:`search` with a choice of ``engine`` (for tests and the benchmark)."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise ValueError(f"k must be an integer, not {k!r}")
    parts = _scope(domains)
    np = None if engine == "sql" else _numpy(import_it=engine == "numpy")
    if np is not None:
        loaded = _cached(db)
        if loaded is not None and loaded.current(db):
            return loaded.search(np, vector, parts, k)  # one pragma, the rest in memory
    with _snapshot(db):
        info = index_info(db)
        if info is None or not _table_exists(db, ITEMS):
            return []
        dims = info[1]
        yn = _unit(vector, dims)
        if k <= 0:
            return []
        if np is not None:
            loaded = _load(db, np, dims, parts, cached_only=engine == "auto")
            if loaded is not None:
                return loaded.search(np, vector, parts, k)
        return _search_sql(db, dims, yn, parts, k)


def _unit(vector: Vector, dims: int) -> list[float]:
    """``vector`` divided by its length, checked: numbers, ``dims`` of them, not all zero."""
    try:
        y = array("d", vector)
    except TypeError as exc:
        raise ValueError(f"a vector must be a sequence of numbers: {exc}") from None
    if len(y) != dims:
        _as_float32(vector, dims)  # raises the mismatch error
    n = _norm(y)
    return [v / n for v in y]


def _unit_numpy(np: Any, vector: Vector, dims: int) -> numpy.ndarray:
    """:func:`_unit` as a float64 numpy array."""
    try:
        y = np.array(vector, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"a vector must be a sequence of numbers: {exc}") from None
    if y.ndim != 1:
        raise ValueError("a vector must be a flat sequence of numbers")
    if len(y) != dims:
        _as_float32(vector, dims)  # raises the mismatch error
    n = math.sqrt(float(y @ y))
    if not (n > 0.0 and math.isfinite(n)):
        raise ValueError("a vector must be finite and not all zeros (cosine is undefined)")
    return y / n


def _top(scored: dict[int, float], k: int) -> list[tuple[int, float]]:
    return sorted(scored.items(), key=lambda p: (-p[1], p[0]))[:k]


def _kth(scored: dict[int, float], k: int) -> float:
    if len(scored) < k:
        return -math.inf
    return _top(scored, k)[-1][1]


def _vectors(db: Database, ids: list[int]) -> tuple[list[int], dict[bytes, int], list[bytes]]:
    """The stored float32 vectors of ``ids``: each id's index into a list of distinct blobs.

    Byte-identical vectors are scored once, so exact ties stay exact ties.
    """
    rows = db.execute(
        f"SELECT experience_id, vector FROM {ITEMS} "
        "WHERE experience_id IN (SELECT value FROM json_each(?))",
        [json.dumps(ids)],
    ).fetchall()
    found = [int(r[0]) for r in rows]
    where: dict[bytes, int] = {}
    for r in rows:
        where.setdefault(r[1], len(where))
    return found, where, [r[1] for r in rows]


def _exact_python(db: Database, ids: list[int], yn: list[float]) -> dict[int, float]:
    """Exact float64 cosine of the stored vectors of ``ids`` with the unit vector ``yn``.

    A damaged vector (wrong length, all zeros; :func:`check` reports it) is left out.
    """
    found, where, blobs = _vectors(db, ids)
    scores: list[float | None] = []
    for blob in where:
        a = array("f")
        if len(blob) != 4 * len(yn):
            scores.append(None)
            continue
        a.frombytes(blob)
        norm = math.sqrt(sum(map(operator.mul, a, a)))
        scores.append(sum(map(operator.mul, a, yn)) / norm if norm > 0 else None)
    pairs = ((i, scores[where[b]]) for i, b in zip(found, blobs, strict=True))
    return {i: score for i, score in pairs if score is not None}


# -- the numpy engine ------------------------------------------------------------------

#: Norms outside this range could under- or overflow a float32 dot product: such vectors
#: are always re-scored exactly instead of being ruled out by their float32 score.
_SAFE_NORMS = (1e-10, 1e10)


def _state(db: Database) -> tuple[object, object, object]:
    """The model, dimensions and version of the index, as stored (None where missing)."""
    # the connection itself: this runs before every search
    rows = settings.raw(raw(db), (MODEL_KEY, DIMS_KEY, VERSION_KEY))
    return rows.get(MODEL_KEY), rows.get(DIMS_KEY), rows.get(VERSION_KEY)


class _Plan:
    """Where the vectors of some domains lie in a :class:`_Loaded`, worked out once."""

    def __init__(
        self, np: Any, spans: list[tuple[int, int]], inv_norms: numpy.ndarray, unsafe: numpy.ndarray
    ) -> None:
        self.spans = spans  # row ranges, in order
        sizes = [b - a for a, b in spans]
        ends = list(itertools.accumulate(sizes))
        self.total = ends[-1] if ends else 0
        self.cuts = [(end - size, end) for size, end in zip(sizes, ends, strict=True)]
        #: The row of each score (None: the first span's start plus the score's position).
        self.rows = np.concatenate([np.arange(a, b) for a, b in spans]) if len(spans) > 1 else None
        if self.rows is not None:
            self.inv_norms = inv_norms[self.rows]
        elif spans:
            self.inv_norms = inv_norms[slice(*spans[0])]  # a view
        else:
            self.inv_norms = inv_norms[:0]
        #: Positions of the scores of unsafe rows (their float32 score bounds nothing).
        self.risky = unsafe[:0]
        if unsafe.size and spans:
            every = self.rows if self.rows is not None else np.arange(*spans[0])
            self.risky = np.flatnonzero(np.isin(every, unsafe))


class _Loaded:
    """Index blocks read into memory: every vector of some domains, contiguous per domain."""

    def __init__(
        self,
        np: Any,
        state: tuple[object, object, object],
        dims: int,
        rows: Sequence[Sequence[Any]],
    ) -> None:
        self.state = state
        #: (data_version, total_changes) when ``state`` was last found current.
        self.checked: tuple[int, int] | None = None
        self.dims = dims
        # float32 cosines are within eps of the exact ones: y's rounding (u), the dot
        # product (gamma_dims), the stored 1 / norm and the product (2u); doubled, which
        # also covers the float64 rounding of the exact scores.
        self.eps = 2.0 * (dims + 8) * _U32
        self.spans: dict[str, tuple[int, int]] = {}
        at = 0
        for domain, size, *_ in rows:  # ordered by domain
            start = self.spans[domain][0] if domain in self.spans else at
            at += size
            self.spans[domain] = (start, at)
        self.size = at
        self.ids = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.int64)
        self.norms = norms = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float64)
        self.vectors = np.frombuffer(b"".join(r[4] for r in rows), dtype=np.float32).reshape(
            at, dims
        )
        unsafe = (norms < _SAFE_NORMS[0]) | (norms > _SAFE_NORMS[1])
        self.unsafe = np.flatnonzero(unsafe)
        self.inv_norms = (1.0 / np.where(unsafe, 1.0, norms)).astype(np.float32)
        self._plans: dict[tuple[str, ...] | None, _Plan] = {}

    def current(self, db: Database) -> bool:
        """Is this still the file's index? One ``PRAGMA data_version`` in the common case.

        ``data_version`` changes when another connection commits (inside a
        transaction it is that of the transaction's snapshot), and
        ``total_changes`` when this one writes (and stays changed when it rolls
        back): while both stay as they were when ``index_version`` was last
        found unchanged, outside any write of this connection not yet
        committed, nothing can have changed it. That check reads
        ``data_version`` first, so a commit between the two reads shows up as
        a new ``data_version`` next time.
        """
        conn = raw(db)
        seen = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
        if seen == self.checked:
            return True
        if self.state != _state(db):
            return False
        if not written_in_transaction(db):  # else a rollback could undo what was checked
            self.checked = seen
        return True

    def search(
        self, np: Any, vector: Vector, parts: list[str] | None, k: int
    ) -> list[tuple[int, float]]:
        y = _unit_numpy(np, vector, self.dims)
        if k <= 0:
            return []
        plan = self._plan(np, parts)
        if not plan.spans:
            return []
        y32 = y.astype(np.float32)
        if len(plan.spans) == 1:
            a, b = plan.spans[0]
            approx = self.vectors[a:b] @ y32
        else:
            approx = np.empty(plan.total, dtype=np.float32)
            for (a, b), (c, d) in zip(plan.spans, plan.cuts, strict=True):
                np.matmul(self.vectors[a:b], y32, out=approx[c:d])
        approx *= plan.inv_norms
        return self._pick(np, plan, approx, y, k)

    def search_many(
        self, np: Any, vectors: Sequence[Vector], parts: Sequence[list[str] | None], k: int
    ) -> list[list[tuple[int, float]]]:
        """:meth:`search` for several vectors, ``parts[i]`` the domains of vector ``i``.

        One matrix product scores every vector against every row (the vectors are read
        from memory once, not once a query); each query then picks its domains' scores.
        """
        ys = [_unit_numpy(np, v, self.dims) for v in vectors]
        if k <= 0 or not ys:
            return [[] for _ in ys]
        full = np.stack(ys).astype(np.float32) @ self.vectors.T  # a row of scores per query
        full *= self.inv_norms
        out: list[list[tuple[int, float]]] = []
        for scores, y, p in zip(full, ys, parts, strict=True):
            plan = self._plan(np, p)
            if not plan.spans:
                out.append([])
                continue
            approx = scores[plan.rows] if plan.rows is not None else scores[slice(*plan.spans[0])]
            out.append(self._pick(np, plan, approx, y, k))
        return out

    def _pick(
        self, np: Any, plan: _Plan, approx: numpy.ndarray, y: numpy.ndarray, k: int
    ) -> list[tuple[int, float]]:
        """The exact top ``k`` from one query's float32 scores ``approx`` (changed in place)."""
        total = plan.total
        if total <= k:
            keep = np.arange(total)
        else:
            if plan.risky.size:  # rows whose float32 score is no bound: always re-scored
                approx[plan.risky] = -np.inf
            tau = np.partition(approx, total - k)[total - k]  # the k-th best float32 score
            keep = np.flatnonzero(approx >= tau - 2.0 * self.eps)
            if plan.risky.size:
                keep = np.union1d(keep, plan.risky)
        rows = keep + plan.spans[0][0] if plan.rows is None else plan.rows[keep]
        return self._exact(np, rows, y, k)

    def _plan(self, np: Any, parts: list[str] | None) -> _Plan:
        key = None if parts is None else tuple(parts)
        plan = self._plans.get(key)
        if plan is None:
            spans = (
                [(0, self.size)] if parts is None else [self.spans.get(p, (0, 0)) for p in parts]
            )
            plan = _Plan(np, [(a, b) for a, b in spans if b > a], self.inv_norms, self.unsafe)
            if len(self._plans) >= 32:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def _exact(
        self, np: Any, rows: numpy.ndarray, y: numpy.ndarray, k: int
    ) -> list[tuple[int, float]]:
        """Exact float64 cosines of ``rows``; byte-identical vectors get one score (exact ties)."""
        x = self.vectors[rows]
        keys = [row.tobytes() for row in x]
        first: dict[bytes, int] = {}
        for i, key in enumerate(keys):
            first.setdefault(key, i)
        distinct = rows
        if len(first) < len(keys):  # score each vector once, so that its copies tie exactly
            distinct = rows[list(first.values())]
            x = self.vectors[distinct]
        # norms: the float64 norm of each float32 vector, computed once when it was put
        scores = ((x.astype(np.float64) @ y) / self.norms[distinct]).tolist()
        if len(first) < len(keys):
            slot = {key: j for j, key in enumerate(first)}
            scores = [scores[slot[key]] for key in keys]
        pairs = zip(self.ids[rows].tolist(), scores, strict=True)
        return sorted(pairs, key=lambda p: (-p[1], p[0]))[:k]


#: Blocks kept in memory per database object, for long-lived processes (an MCP server, an
#: agent using the Python API): used while the stored index_version equals theirs.
_CACHE: weakref.WeakKeyDictionary[Any, _Loaded] = weakref.WeakKeyDictionary()
#: The index version each database object last searched without the cache.
_SEEN: weakref.WeakKeyDictionary[Any, tuple[object, ...]] = weakref.WeakKeyDictionary()


def forget(db: Database) -> None:
    """Drop the index vectors kept in memory for ``db`` (when closing it)."""
    with contextlib.suppress(TypeError):
        _CACHE.pop(db, None)
        _SEEN.pop(db, None)


def _cached(db: Database) -> _Loaded | None:
    try:
        return _CACHE.get(db)
    except TypeError:  # an object that cannot be weakly referenced: no cache
        return None


def _load(
    db: Database,
    np: Any,
    dims: int,
    parts: list[str] | None,
    *,
    cached_only: bool,
    keep: bool = False,
) -> _Loaded | None:
    """The blocks to search with numpy; None: search with sqlite-vec.

    Runs inside the caller's snapshot. The second search of the same index
    version through ``db`` reads every block and keeps them in memory (if they
    fit :data:`CACHE_MAX_BYTES`): a process that searches once does not pay for
    reading them all. Otherwise, with ``cached_only`` None is returned (sqlite-vec
    reads less than the blocks of the domains searched), else only the blocks
    of ``parts`` are read (``keep``: keep them from the first search, as a batch of
    searches does). An index without ``index_version`` or its triggers,
    or in an older format, is always searched with sqlite-vec.
    """
    state = _state(db)
    if state[2] is None or not _blocks_hold_vectors(db) or _lacking_triggers(db):
        return None
    with contextlib.suppress(TypeError):  # objects that cannot be weakly referenced: no cache
        keep = keep or _SEEN.get(db) == state
        _SEEN[db] = state
    if keep:
        total = db.execute(f"SELECT coalesce(sum(size), 0) FROM {BLOCKS}").fetchone()[0]
        keep = total * 4 * dims <= CACHE_MAX_BYTES
    if not keep and cached_only:
        return None
    where, params = _domain_filter(None if keep else parts)
    rows = db.execute(
        f"SELECT domain, size, ids, norms, vectors, id FROM {BLOCKS}{where}", params
    ).fetchall()
    rows.sort(key=lambda r: (r[0], r[5]))  # in Python: SQLite would sort the blobs too
    loaded = _Loaded(np, state, dims, rows)
    if keep:
        _CACHE[db] = loaded
    return loaded


def _search_sql(
    db: Database, dims: int, yn: list[float], parts: list[str] | None, k: int
) -> list[tuple[int, float]]:
    qcodes, qdelta = _quantise(yn)
    qblob = array("b", qcodes).tobytes()
    deltas = {
        str(d): float(m)
        for d, m in db.execute(f"SELECT domain, max(max_delta) FROM {BLOCKS} GROUP BY domain")
    }
    if not deltas:
        return []
    # Float error of sqlite-vec's int8 cosine (exact integer sums below 2**24, then a
    # few roundings; generous for larger dims where the float32 sums round).
    eps = (dims + 8) * 4 * _U32
    # A vector's true cosine is at most 1 - (its int8 cosine distance) + slack[partition].
    slack = {p: eps + qdelta + m for p, m in deltas.items()}
    slack_all = eps + qdelta + max(deltas.values())
    pending: list[str | None] = list(parts) if parts is not None else [None]
    pending = [p for p in pending if p is None or p in deltas]
    scored: dict[int, float] = {}
    seen: set[int] = set()
    kth = -math.inf
    want = max(4 * k, 32)
    while pending:
        if want > VEC0_K_MAX:
            # Pathological (thousands of near-equal scores): score the rest exactly.
            for p in pending:
                where, args = _domain_filter(None if p is None else [p])
                rest = db.execute(f"SELECT experience_id FROM {ITEMS}{where}", args)
                scored.update(_exact_python(db, [int(r[0]) for r in rest], yn))
            break
        unseen_bound: dict[str | None, float] = {}
        fresh: list[tuple[float, int]] = []  # (upper bound, id)
        for p in pending:
            sql = (
                f"SELECT experience_id, distance FROM {TABLE} "
                "WHERE embedding MATCH vec_int8(?) AND k = ?"
            )
            params: list[object] = [qblob, want]
            if p is not None:
                sql += " AND domain = ?"
                params.append(p)
            hits = db.execute(sql, params).fetchall()
            extra = slack_all if p is None else slack[p]
            fresh += [(1.0 - float(d) + extra, int(i)) for i, d in hits if int(i) not in seen]
            seen.update(int(i) for i, _ in hits)
            if len(hits) == want:  # vectors KNN did not return are no closer than the last
                unseen_bound[p] = 1.0 - float(hits[-1][1]) + extra
        # Score the returned vectors best bound first, until no bound reaches the k-th score.
        fresh.sort(reverse=True)
        at = 0
        while at < len(fresh) and fresh[at][0] >= kth:
            batch = [i for bound, i in fresh[at : at + 16] if bound >= kth]
            scored.update(_exact_python(db, batch, yn))
            kth = _kth(scored, k)
            at += 16
        pending = [p for p, bound in unseen_bound.items() if not kth > bound]
        want *= 4
    return _top(scored, k)


# -- check ----------------------------------------------------------------------------


def _ids_text(ids: Sequence[int], limit: int = 10) -> str:
    shown = ", ".join(str(i) for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def check(db: Database, *, upgrade_pending: bool = False) -> list[str]:
    """Problems with the index, for people: missing or stray vectors, wrong dimensions, damage.

    An empty list means every live experience has exactly one vector of the
    recorded dimension, in its own domain, and the index tables agree.
    ``upgrade_pending=True`` (migration m003 not applied yet) accepts blocks in
    the older format: opening the library upgrades them.
    """
    with _snapshot(db):
        return _check(db, upgrade_pending)


def _check(db: Database, upgrade_pending: bool = False) -> list[str]:
    info = index_info(db)
    live = db.execute("SELECT count(*) FROM experiences WHERE status = 'live'").fetchone()[0]
    if info is None:
        if not live:
            return []
        return [
            f"the library has no vector index, so its {live} live experiences cannot be "
            "retrieved: run `agentmem reindex`"
        ]
    model, dims = info
    missing_tables = [t for t in (TABLE, ITEMS, BLOCKS) if not _table_exists(db, t)]
    if missing_tables:
        return [
            f"the vector index tables {', '.join(missing_tables)} are missing: run "
            "`agentmem reindex`"
        ]
    problems = _vector_problems(db, model, dims)
    if not _blocks_hold_vectors(db):
        if upgrade_pending:
            return problems
        problems.append(
            f"the vector index is in the format of an older agentmem ({BLOCKS} holds no "
            "vectors): open the library with agentmem to upgrade it, or run `agentmem reindex`"
        )
        return problems
    problems += _version_problems(db)
    problems += _check_internal(db, dims)
    return problems


def _ids(db: Database, sql: str, params: Sequence[object] = ()) -> list[int]:
    return [int(r[0]) for r in db.execute(sql, list(params)).fetchall()]


def _vector_problems(db: Database, model: str, dims: int) -> list[str]:
    """Each live experience has one vector, in its domain, of the index's dimensions; no other."""
    problems: list[str] = []
    no_vector = _ids(
        db,
        f"SELECT id FROM experiences WHERE status = 'live' AND id NOT IN "
        f"(SELECT experience_id FROM {ITEMS}) ORDER BY id",
    )
    if no_vector:
        problems.append(
            f"{len(no_vector)} live experiences have no vector and cannot be retrieved: "
            f"{_ids_text(no_vector)} (run `agentmem reindex`)"
        )
    stray = _ids(
        db,
        f"SELECT i.experience_id FROM {ITEMS} i LEFT JOIN experiences e ON e.id = i.experience_id "
        "WHERE e.id IS NULL ORDER BY i.experience_id",
    )
    if stray:
        problems.append(f"{len(stray)} vectors belong to no experience: {_ids_text(stray)}")
    dead = _ids(
        db,
        f"SELECT i.experience_id FROM {ITEMS} i JOIN experiences e ON e.id = i.experience_id "
        "WHERE e.status != 'live' ORDER BY i.experience_id",
    )
    if dead:
        problems.append(f"{len(dead)} vectors belong to deleted experiences: {_ids_text(dead)}")
    moved = _ids(
        db,
        f"SELECT i.experience_id FROM {ITEMS} i JOIN experiences e ON e.id = i.experience_id "
        "WHERE e.domain != i.domain ORDER BY i.experience_id",
    )
    if moved:
        problems.append(
            f"{len(moved)} vectors are filed under another domain than their experience's, "
            f"so domain-scoped searches miss or wrongly include them: {_ids_text(moved)}"
        )
    bad_dims = _ids(
        db,
        f"SELECT experience_id FROM {ITEMS} WHERE length(vector) != ? ORDER BY experience_id",
        [4 * dims],
    )
    if bad_dims:
        problems.append(
            f"{len(bad_dims)} vectors do not have the index's {dims} dimensions (model "
            f"{model!r}): {_ids_text(bad_dims)} (run `agentmem reindex`)"
        )
    return problems


def _version_problems(db: Database) -> list[str]:
    """The triggers and the setting that keep ``index_version`` (searches cache by it) are there."""
    lacking = _lacking_triggers(db)
    if not lacking and _state(db)[2] is not None:
        return []
    what = (
        f"lacks the triggers that keep its {VERSION_KEY} setting ({', '.join(lacking)})"
        if lacking
        else f"has no {VERSION_KEY} setting"
    )
    return [
        f"the vector index {what}, so searches cannot keep it in memory and use the "
        "slower sqlite-vec engine: run `agentmem reindex`"
    ]


def _norms_agree(norms: bytes, vectors: bytes, dims: int) -> bool:
    """Is each stored norm the length of its float32 vector (to 1e-9, relative)?"""
    have = array("d")
    have.frombytes(norms)
    a = array("f")
    a.frombytes(vectors)
    for i, norm in enumerate(have):
        want = math.sqrt(math.fsum(v * v for v in a[i * dims : (i + 1) * dims]))
        if not abs(norm - want) <= 1e-9 * want:
            return False
    return True


def _check_internal(db: Database, dims: int) -> list[str]:
    """Do the vec0 table, the items and the blocks describe the same vectors?"""
    problems: list[str] = []
    items = {
        int(i): (str(d), int(b), int(s))
        for i, d, b, s in db.execute(f"SELECT experience_id, domain, block, slot FROM {ITEMS}")
    }
    in_vec0 = {int(r[0]) for r in db.execute(f"SELECT experience_id FROM {TABLE}")}
    if in_vec0 != set(items):
        diff = sorted(in_vec0 ^ set(items))
        problems.append(
            f"the vec0 table {TABLE} and {ITEMS} disagree on {len(diff)} experiences: "
            f"{_ids_text(diff)} (run `agentmem reindex`)"
        )
    in_blocks: dict[int, tuple[str, int, int]] = {}
    block_vectors: dict[int, bytes] = {}
    damaged: list[int] = []
    off_norm: list[int] = []
    width = 4 * dims
    for block_id, domain, size, raw_ids, norms, deltas, vectors in db.execute(
        f"SELECT id, domain, size, ids, norms, deltas, vectors FROM {BLOCKS}"
    ):
        members = array("q")
        members.frombytes(raw_ids)
        lengths = (len(members), len(norms) // 8, len(deltas) // 4, len(vectors) // width)
        if any(n != size for n in lengths) or len(vectors) != size * width:
            damaged.append(int(block_id))
            continue
        for slot, e in enumerate(members):
            in_blocks[int(e)] = (str(domain), int(block_id), slot)
            block_vectors[int(e)] = vectors[slot * width : (slot + 1) * width]
        if not _norms_agree(norms, vectors, dims):
            off_norm.append(int(block_id))
    if off_norm:
        problems.append(
            f"{len(off_norm)} rows of {BLOCKS} hold norms that do not match their vectors: "
            f"{_ids_text(off_norm)} (run `agentmem reindex`)"
        )
    if damaged:
        problems.append(
            f"{len(damaged)} rows of {BLOCKS} are damaged: {_ids_text(damaged)} "
            "(run `agentmem reindex`)"
        )
    wrong = sorted(e for e in set(items) | set(in_blocks) if items.get(e) != in_blocks.get(e))
    if not damaged:
        wrong += sorted(
            e
            for e, v in db.execute(f"SELECT experience_id, vector FROM {ITEMS}")
            if int(e) in block_vectors and block_vectors[int(e)] != v and int(e) not in wrong
        )
    if wrong and not damaged:
        problems.append(
            f"{BLOCKS} and {ITEMS} disagree on {len(wrong)} experiences: "
            f"{_ids_text(sorted(wrong))} (run `agentmem reindex`)"
        )
    return problems
