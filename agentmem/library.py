"""The experience library as the rest of agentmem sees it: live experiences, embeddings, retrieval.

:class:`Library` binds a database to an embedder. It embeds texts (with a
per-instance cache), keeps the vector index's model in check, and answers
"which live experiences are closest to this text, within these domains".
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import attrs
from sqlite_utils import Database

from . import index
from .db import read_snapshot, write
from .records import Experience, valid_id

if TYPE_CHECKING:
    from .embeddings import Embedder

__all__ = ["EMBED_CACHE_SIZE", "Library", "Scored", "live_experiences"]

#: How many texts' vectors a :class:`Library` keeps.
EMBED_CACHE_SIZE = 8192

Vector = Sequence[float]


@attrs.frozen
class Scored:
    """A retrieved experience and its cosine similarity to the query.

    ``source`` is ``private`` for the laptop's own library and ``team`` for the
    team library's replica (``agentmem.team``).
    """

    experience: Experience
    score: float
    source: str = "private"

    def as_dict(self) -> dict[str, object]:
        e = self.experience
        out: dict[str, object] = {
            "id": e.id,
            "text": e.text,
            "domain": e.domain,
            "score": round(self.score, 4),
        }
        if self.source != "private":
            out["source"] = self.source
        return out


def live_experiences(
    db: Database, ids: Iterable[int] | None = None, domains: Sequence[str] | None = None
) -> list[Experience]:
    """Live experiences (all, or the given ids, or those in the given domains), by id."""
    sql = "SELECT * FROM experiences WHERE status = 'live'"
    params: list[object] = []
    if ids is not None:
        id_list = [i for i in ids if valid_id(i)]
        sql += f" AND id IN ({','.join('?' * len(id_list))})"
        params += id_list
    if domains is not None:
        sql += f" AND domain IN ({','.join('?' * (len(domains) + 1))})"
        params += [*domains, ""]
    cur = db.execute(sql + " ORDER BY id", params)
    cols = [c[0] for c in cur.description]
    return [Experience.from_row(dict(zip(cols, r))) for r in cur.fetchall()]


class Library:
    """Live experiences of one database, embedded with one embedder."""

    def __init__(self, db: Database, embedder: Embedder):
        self.db = db
        self.embedder = embedder
        self._cache: dict[str, array[float]] = {}  # float64, 8 bytes a number

    def ensure_index(self) -> None:
        """Create the vector index for this embedder, or refuse a different model."""
        info = index.index_info(self.db)
        if info == (self.embedder.model_id, self.embedder.dims):
            return
        with write(self.db):
            index.ensure_index(self.db, self.embedder.model_id, self.embedder.dims)

    def embed(self, texts: Iterable[str]) -> dict[str, array[float]]:
        """Vectors for ``texts``, as a mapping text -> vector.

        The last :data:`EMBED_CACHE_SIZE` texts embedded are kept, so that a
        long-lived process (an MCP server) neither re-embeds what a learning
        session compares again and again nor grows without bound.
        """
        asked = list(dict.fromkeys(texts))
        want = [t for t in asked if t not in self._cache]
        if want:
            for t, v in zip(want, self.embedder.embed_batch(want), strict=True):
                self._cache[t] = array("d", v)
        out = {t: self._cache[t] for t in asked}
        over = len(self._cache) - EMBED_CACHE_SIZE
        if over > 0:  # forget the oldest (dicts keep insertion order)
            for t in list(itertools.islice(self._cache, over)):
                del self._cache[t]
        return out

    def vector(self, text: str) -> array[float]:
        return self.embed([text])[text]

    def cosine(self, a: str, b: str) -> float:
        va, vb = self.vector(a), self.vector(b)
        return float(sum(x * y for x, y in zip(va, vb)))

    def search_vector(self, vec: Vector, *, domains: Sequence[str] | None, k: int) -> list[Scored]:
        with read_snapshot(self.db):  # the index and the texts from one committed state
            hits = index.search(self.db, vec, domains=domains, k=k)
            if not hits:
                return []
            exps = {e.id: e for e in live_experiences(self.db, [i for i, _ in hits])}
        return [Scored(exps[i], s) for i, s in hits if i in exps]

    def search(
        self, text: str, *, domains: Sequence[str] | None = None, k: int = 5
    ) -> list[Scored]:
        """The ``k`` live experiences closest to ``text`` within ``domains`` (plus domain-free)."""
        info = index.index_info(self.db)
        if info is None:
            return []
        if info != (self.embedder.model_id, self.embedder.dims):
            self.ensure_index()  # raises: the index holds another model's vectors
        return self.search_vector(self.vector(text), domains=domains, k=k)

    def similar(
        self, text: str, domains: Sequence[str] | None = None, k: int = 3
    ) -> list[tuple[int, float, str]]:
        """(id, cosine, text) of the ``k`` live experiences closest to ``text``."""
        return [
            (s.experience.id or 0, s.score, s.experience.text)
            for s in self.search(text, domains=domains, k=k)
        ]
