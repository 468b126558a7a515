"""How retrieval ranks lessons: rank fusion, tool evidence and the relevance floor (pure).

Each candidate lesson comes with what the searches found (:class:`Evidence`):
its rank in the exact vector search, in the BM25 keyword search, and among the
tools that past tasks like the prompt used (``None`` where it was not found),
the tools it names that the caller passed (or, with no tools given, that the
prompt mentions), and whether it quotes an error string the prompt holds.

* **Fused score**: reciprocal rank fusion,
  ``w_vector / (k + vector_rank) + w_bm25 / (k + bm25_rank) + w_usage / (k +
  usage_rank)``, divided by the most the searches that could find the lesson can
  give (all three at rank 1): the tool usage cannot speak for a lesson naming no
  recorded tool, nor the vector search in a library without a vector index. A
  lesson ranked first by every search that applies to it scores 1.0.
* **Order**: lessons with *strong evidence* first (they name a tool the caller
  gave; with no tools given, they name a tool the prompt mentions or quote an
  error string the prompt holds), then by fused score, then by id.
* **Floor**: a lesson with strong evidence passes; any other passes when its
  fused score reaches ``min_score``. When tools are given, a lesson that names
  tools but none of the given ones is about other tools: its score is
  multiplied by ``other_tools``.

The constants (:data:`DEFAULT`) were chosen on the tuning half of the held-out
BFCL tasks of ``benchmarks/bench_retrieval_quality.py`` (``--tune``: of the settings
meeting every target there, the one with the fewest prompt-only answers holding an
irrelevant lesson) and are reported on the other half; the README gives the figures.
"""

# No ``from __future__ import annotations``: the NamedTuple fields of Evidence, Ranking and Ranked
# are then types, not strings that typing compiles (the first compile() of a process
# costs the prompt hook, which imports this module, about 2 ms).
from collections.abc import Iterable
from typing import NamedTuple

__all__ = ["DEFAULT", "Evidence", "Ranked", "Ranking", "rank"]


class Evidence(NamedTuple):
    """What the searches found about one lesson."""

    id: int
    vector_rank: int | None = None
    cosine: float | None = None
    bm25_rank: int | None = None
    bm25: float | None = None
    #: The rank, among the tools past tasks like this one used, of the best-placed tool
    #: it names (:mod:`agentmem.storage.tool_usage`).
    usage_rank: int | None = None
    #: The given tools it names (tools mode), or the prompt's tool names it names.
    named: tuple[str, ...] = ()
    #: It names tools, none of them given (tools mode only).
    other_tools: bool = False
    #: It quotes an error string that the prompt holds.
    quotes_error: bool = False
    #: The library has a vector index (else the vector search cannot speak for it).
    vector_applies: bool = True
    #: The library has a keyword index (else BM25 cannot speak for it).
    bm25_applies: bool = True
    #: It names a tool that recorded tasks used (else the tool usage cannot speak for it).
    usage_applies: bool = True

    @property
    def strong(self) -> bool:
        return bool(self.named) or self.quotes_error


class Ranking(NamedTuple):
    """The constants of the ranking (see the module docstring)."""

    rrf_k: float = 4.0
    w_vector: float = 1.0
    w_bm25: float = 1.0
    w_usage: float = 2.0
    min_score: float = 0.55
    other_tools: float = 0.0
    #: A vector rank counts only when the cosine reaches this.
    min_cosine: float = -1.0
    #: A BM25 rank counts only when the BM25 score reaches this.
    min_bm25: float = 0.0

    def fused(self, e: Evidence) -> float:
        weights = self.w_bm25 if e.bm25_applies else 0.0
        weights += self.w_vector if e.vector_applies else 0.0
        weights += self.w_usage if e.usage_applies else 0.0
        if weights <= 0.0:
            return 0.0
        top = weights / (self.rrf_k + 1)
        s = 0.0
        if e.vector_rank is not None and (e.cosine or 0.0) >= self.min_cosine:
            s += self.w_vector / (self.rrf_k + e.vector_rank)
        if e.bm25_rank is not None and (e.bm25 or 0.0) >= self.min_bm25:
            s += self.w_bm25 / (self.rrf_k + e.bm25_rank)
        if e.usage_rank is not None:
            s += self.w_usage / (self.rrf_k + e.usage_rank)
        s /= top
        return s * self.other_tools if e.other_tools else s


#: The shipped constants.
DEFAULT = Ranking()


class Ranked(NamedTuple):
    """A lesson that passed the floor: its evidence, fused score and why it passed."""

    evidence: Evidence
    score: float
    reason: str


def _reason(e: Evidence, score: float, r: Ranking, min_score: float) -> str:
    if e.named:
        return f"names {', '.join(e.named)}"
    if e.quotes_error:
        return "quotes an error string of the prompt"
    return f"fused score {score:.3f} >= {min_score:.3f}"


def rank(
    evidence: Iterable[Evidence],
    k: int,
    ranking: Ranking = DEFAULT,
    *,
    min_score: float | None = None,
) -> list[Ranked]:
    """The ``k`` best lessons that pass the floor, best first."""
    floor = ranking.min_score if min_score is None else min_score
    scored = [(e, ranking.fused(e)) for e in evidence]
    passed = [(e, s) for e, s in scored if e.strong or s >= floor]
    passed.sort(key=lambda p: (not p[0].strong, -p[1], p[0].id))
    return [Ranked(e, s, _reason(e, s, ranking, floor)) for e, s in passed[:k]]
