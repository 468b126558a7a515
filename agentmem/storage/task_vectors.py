"""Task vectors: each run's task embedding, kept in the file, and the runs of alike tasks.

The owner of table ``task_vectors`` (one row per trajectory: the embedding
model's id and the task's float32 vector, little-endian). A learning session
embeds the tasks it has no vector for (for its embedder), before any write
transaction opens, and stores them with its other writes; a dry run or
``agentmem groups`` embeds without storing.

:func:`neighbours` finds, for every run, the runs whose tasks are alike: the
``k`` nearest by cosine at or above a threshold that also pass a caller's test
(:mod:`agentmem.learning.grouping` asks for shared tools). It is an exact
nearest-neighbour search over the vectors held in memory, scored in blocks of
rows with one float32 matrix product each (numpy), never a Python loop over
pairs: 10,000 runs take about a second on 2 cores
(``benchmarks/bench_grouping.py``). The candidates of each row are its
``CANDIDATES_PER_NEIGHBOUR * k`` best float32 scores; those are re-scored in
float64 and compared with the threshold there, so what is grouped does not
depend on the CPU's float32 rounding (ties go to the smaller id).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from sqlite_utils import Database

    from ..embeddings import Embedder

__all__ = [
    "CANDIDATES_PER_NEIGHBOUR",
    "MAX_TASK_CHARS",
    "TaskVectors",
    "neighbours",
    "save",
    "task_vectors",
]

#: The first this many characters of a task are embedded (WordLlama mean-pools tokens).
MAX_TASK_CHARS = 4000
#: A row's k neighbours are chosen among its this-many-times-k best float32 scores.
CANDIDATES_PER_NEIGHBOUR = 4
#: Rows scored per matrix product (memory: rows x runs float32).
BLOCK_ROWS = 1024


class TaskVectors:
    """The task vectors of some runs: ``ids[i]`` has row ``i`` of ``matrix`` (unit float32).

    ``new`` holds the (trajectory id, vector bytes) embedded now and not stored yet,
    for :func:`save`; ``model`` is the embedder's ``model_id``.
    """

    def __init__(
        self, ids: list[int], matrix: np.ndarray, model: str, new: list[tuple[int, bytes]]
    ):
        self.ids = ids
        self.matrix = matrix
        self.model = model
        self.new = new
        self.row = {tid: i for i, tid in enumerate(ids)}

    def cosine(self, a: int, b: int) -> float:
        """The float64 cosine of two runs' tasks."""
        import numpy as np

        x = self.matrix[self.row[a]].astype(np.float64)
        y = self.matrix[self.row[b]].astype(np.float64)
        return float(x @ y)


def _unit32(np: Any, vectors: Any) -> np.ndarray:
    m = np.asarray(vectors, dtype=np.float64)
    if m.ndim != 2:
        m = m.reshape(len(m), -1)
    norms = np.linalg.norm(m, axis=1)
    norms[norms == 0] = 1.0
    return (m / norms[:, None]).astype("<f4")


def task_vectors(db: Database, tasks: Mapping[int, str], embedder: Embedder) -> TaskVectors:
    """Vectors for the runs ``tasks`` ({trajectory id: task text}): stored ones for this
    embedder, the rest embedded now (each distinct text once) and returned in ``new``."""
    import numpy as np

    model = embedder.model_id
    ids = sorted(tasks)
    have: dict[int, bytes] = {}
    if ids:
        want = set(ids)
        for tid, blob in db.execute(
            "SELECT trajectory_id, vector FROM task_vectors WHERE model = ?", [model]
        ):
            if tid in want:
                have[int(tid)] = bytes(blob)
    missing = [tid for tid in ids if tid not in have]
    texts = list(dict.fromkeys(tasks[tid][:MAX_TASK_CHARS] for tid in missing))
    new: list[tuple[int, bytes]] = []
    if texts:
        vecs = _unit32(np, embedder.embed_batch(texts))
        by_text = {t: vecs[i].tobytes() for i, t in enumerate(texts)}
        new = [(tid, by_text[tasks[tid][:MAX_TASK_CHARS]]) for tid in missing]
        have.update(new)
    dims = embedder.dims if not have else len(next(iter(have.values()))) // 4
    matrix = np.zeros((len(ids), dims), dtype="<f4")
    for i, tid in enumerate(ids):
        v = np.frombuffer(have[tid], dtype="<f4")
        if len(v) != dims:  # a vector of another length under this model: embed it again
            v = _unit32(np, embedder.embed_batch([tasks[tid][:MAX_TASK_CHARS]]))[0]
            new.append((tid, v.tobytes()))
        matrix[i] = v
    return TaskVectors(ids, matrix, model, new)


def save(db: Database, vectors: TaskVectors) -> int:
    """Store the vectors embedded by :func:`task_vectors` (inside the caller's write
    transaction); returns how many rows were written."""
    if not vectors.new:
        return 0
    db.conn.executemany(
        "INSERT INTO task_vectors (trajectory_id, model, vector) VALUES (?, ?, ?) "
        "ON CONFLICT (trajectory_id) DO UPDATE SET model = excluded.model, "
        "vector = excluded.vector",
        [(tid, vectors.model, blob) for tid, blob in vectors.new],
    )
    return len(vectors.new)


def neighbours(
    vectors: TaskVectors,
    *,
    threshold: float,
    k: int,
    among: Iterable[int] | None = None,
    compatible: Callable[[int, int], bool] | None = None,
) -> dict[int, list[tuple[int, float]]]:
    """For every run (of ``among``, default all), up to ``k`` other runs of ``among`` whose
    task cosine is >= ``threshold`` and that ``compatible(a, b)`` accepts, nearest first
    (float64 cosines; ties by id)."""
    import numpy as np

    ids = [tid for tid in (vectors.ids if among is None else among) if tid in vectors.row]
    out: dict[int, list[tuple[int, float]]] = {tid: [] for tid in ids}
    n = len(ids)
    if n < 2 or k < 1:
        return out
    rows = np.array([vectors.row[tid] for tid in ids])
    m32 = np.ascontiguousarray(vectors.matrix[rows], dtype=np.float32)
    m64 = m32.astype(np.float64)
    ids_arr = np.array(ids, dtype=np.int64)
    width = min(n - 1, CANDIDATES_PER_NEIGHBOUR * k)
    # float32 error of a cosine of unit vectors is far below this margin
    margin = 1e-3
    for start in range(0, n, BLOCK_ROWS):
        stop = min(n, start + BLOCK_ROWS)
        scores = m32[start:stop] @ m32.T
        scores[np.arange(stop - start), np.arange(start, stop)] = -np.inf
        if width < n:
            cand = np.argpartition(-scores, width - 1, axis=1)[:, :width]
        else:
            cand = np.tile(np.arange(n), (stop - start, 1))
        top = np.take_along_axis(scores, cand, axis=1)
        keep = top >= threshold - margin
        for r in range(stop - start):
            cols = cand[r][keep[r]]
            if not len(cols):
                continue
            i = start + r
            exact = m64[cols] @ m64[i]
            tid = ids[i]
            found = [
                (int(ids_arr[c]), float(s))
                for c, s in zip(cols, exact)
                if s >= threshold and c != i
            ]
            if compatible is not None:
                found = [(j, s) for j, s in found if compatible(tid, j)]
            found.sort(key=lambda x: (-x[1], x[0]))
            out[tid] = found[:k]
    return out


def cosines(vectors: TaskVectors, ids: Sequence[int]) -> dict[tuple[int, int], float]:
    """The float64 cosine of every pair of ``ids`` (a formed group: a few runs)."""
    out = {}
    for x, a in enumerate(ids):
        for b in ids[x + 1 :]:
            c = vectors.cosine(a, b)
            out[(a, b)] = out[(b, a)] = c
    return out
