"""The experiences of a library as its readers search them, with one embedder.

:class:`Retriever` binds a database to an embedder. It embeds texts (with a
per-instance cache), keeps the vector index's model in check, and answers
"which live experiences fit this text" through :func:`agentmem.retrieval.pipeline.search`,
as :class:`Scored` experiences. Stage 2 of a learning session searches through it, and
``Memory.retrieve`` and ``Memory.serve`` embed with it (their search is
:mod:`agentmem.serving`'s; :func:`scored` turns a served lesson into a hit).
"""

from __future__ import annotations

import itertools
import operator
from array import array
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from sqlite_utils import Database

from ..db import write
from ..errors import InvalidRecordError
from ..records import Experience
from ..storage import vector_index
from . import pipeline
from .pipeline import ALL_METHODS
from .ranking import Evidence

if TYPE_CHECKING:
    from ..embeddings import Embedder

__all__ = ["EMBED_CACHE_SIZE", "Retriever", "Scored", "scored"]

#: How many texts' vectors a :class:`Retriever` keeps.
EMBED_CACHE_SIZE = 8192

Vector = Sequence[float]


@attrs.frozen
class Scored:
    """A retrieved experience, its fused score, and how retrieval ranked it
    (:class:`agentmem.retrieval.Evidence`; the cosine is ``why.cosine``).

    ``source`` is ``private`` for the laptop's own library and ``team`` for the
    team library's replica (``agentmem.team``).
    """

    experience: Experience
    score: float
    why: Evidence | None = None
    reason: str = ""
    source: str = "private"

    @property
    def cosine(self) -> float | None:
        return None if self.why is None else self.why.cosine

    def as_dict(self, *, explain: bool = False) -> dict[str, object]:
        e = self.experience
        out: dict[str, object] = {
            "id": e.id,
            "text": e.text,
            "domain": e.domain,
            "score": round(self.score, 4),
            **e.evidence(),
        }
        if self.source != "private":
            out["source"] = self.source
        if explain and self.why is not None:
            w = self.why
            out.update(
                vector_rank=w.vector_rank,
                cosine=None if w.cosine is None else round(w.cosine, 4),
                bm25_rank=w.bm25_rank,
                bm25=None if w.bm25 is None else round(w.bm25, 4),
                usage_rank=w.usage_rank,
                names=list(w.named),
                quotes_error=w.quotes_error,
                passed=self.reason,
            )
        return out


def scored(lesson: Any) -> Scored | None:
    """A served lesson (:class:`agentmem.serving.Lesson`) as a :class:`Scored` hit, or None
    when its row is no valid experience (a team replica is another machine's file)."""
    try:
        experience = Experience.from_row(lesson.row)
    except (InvalidRecordError, ValueError, TypeError, KeyError):
        return None
    return Scored(experience, lesson.score, lesson.evidence, lesson.reason, source=lesson.source)


class Retriever:
    """Live experiences of one database, searched with one embedder."""

    def __init__(self, db: Database, embedder: Embedder):
        self.db = db
        self.embedder = embedder
        self._cache: dict[str, array[float]] = {}  # float64, 8 bytes a number

    def ensure_index(self) -> None:
        """Create the vector index for this embedder, or refuse a different model."""
        info = vector_index.index_info(self.db)
        if info == (self.embedder.model_id, self.embedder.dims):
            return
        with write(self.db):
            vector_index.ensure_index(self.db, self.embedder.model_id, self.embedder.dims)

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
        return float(sum(map(operator.mul, va, vb)))  # in order, as the loop it replaces

    def search(
        self,
        text: str,
        *,
        tools: Sequence[str] | None = None,
        domains: Sequence[str] | None = None,
        k: int = 5,
        min_score: float | None = None,
        methods: tuple[str, ...] = ALL_METHODS,
        project: str | None = None,
        every_scope: bool = False,
    ) -> list[Scored]:
        """The ``k`` live experiences that best fit ``text`` (see :mod:`agentmem.retrieval`);
        ``project``: a project root (lessons scoped to other projects, or to another
        machine, are left out); ``every_scope``: leave none out."""
        info = vector_index.index_info(self.db)
        if info is not None and info != (self.embedder.model_id, self.embedder.dims):
            self.ensure_index()  # raises: the index holds another model's vectors
        found = pipeline.search(
            self.db,
            text,
            self.vector,
            tools=tools,
            domains=domains,
            k=k,
            min_score=min_score,
            methods=methods,
            project=project,
            every_scope=every_scope,
        )
        return [Scored(Experience.from_row(f.row), f.score, f.evidence, f.reason) for f in found]

    def search_many(
        self,
        texts: Sequence[str],
        *,
        tools: Sequence[Sequence[str] | None] | None = None,
        domains: Sequence[Sequence[str] | None] | None = None,
        k: int = 5,
        min_score: float | None = None,
        methods: tuple[str, ...] = ALL_METHODS,
        every_scope: bool = True,
    ) -> list[list[Scored]]:
        """:meth:`search` for each of ``texts`` (with ``tools[i]`` and ``domains[i]``), in
        order: the same answers, the texts embedded in one batch and their vector
        searches scored together (:func:`agentmem.retrieval.pipeline.search_many`).
        A learning session's search: every lesson, whatever its scope, unless
        ``every_scope`` is False (then only the global ones and this machine's)."""
        info = vector_index.index_info(self.db)
        if info is not None and info != (self.embedder.model_id, self.embedder.dims):
            self.ensure_index()  # raises: the index holds another model's vectors

        def vectors(ts: Sequence[str]) -> list[array[float]]:
            got = self.embed(ts)
            return [got[t] for t in ts]

        found = pipeline.search_many(
            self.db,
            texts,
            vectors,
            tools=tools,
            domains=domains,
            k=k,
            min_score=min_score,
            methods=methods,
            every_scope=every_scope,
        )
        return [
            [Scored(Experience.from_row(f.row), f.score, f.evidence, f.reason) for f in fs]
            for fs in found
        ]

    def similar(
        self, text: str, domains: Sequence[str] | None = None, k: int = 3
    ) -> list[tuple[int, float, str]]:
        """(id, cosine, text) of the ``k`` live experiences closest to ``text`` (vectors only),
        whatever their scope."""
        hits = self.search(
            text, domains=domains, k=k, min_score=0.0, methods=("vector",), every_scope=True
        )
        return [(s.experience.id or 0, s.cosine or 0.0, s.experience.text) for s in hits]
