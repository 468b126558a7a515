"""The one retrieval path: scope, search both indexes, rank, read the lessons.

Every caller comes through :func:`search`: ``Memory.retrieve`` and
``Memory.context`` (hence the MCP server and the CLI), Stage 2 of a learning
session (:class:`agentmem.library.Library`), and the prompt-hook shortcut
(:func:`agentmem.retrieval.context_text`). It takes any connection (a raw
``sqlite3`` one or a sqlite-utils ``Database``) and imports neither
sqlite-utils nor numpy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import index, keyword_index, terms, tool_usage
from .._tx import begin, raw
from ..domains import domain_for
from .ranking import DEFAULT, Evidence, Ranked, Ranking, rank

__all__ = [
    "ALL_METHODS",
    "BM25_WEIGHTS",
    "CANDIDATES",
    "COMMON_CAP",
    "Found",
    "gather",
    "live_rows",
    "scope",
    "search",
]

#: How many lessons each search hands to the ranking (at least; ``4 k`` for a larger k).
CANDIDATES = 50
#: A prompt word found in more lessons than this is not searched for (see
#: :func:`agentmem.keyword_index.too_common`).
COMMON_CAP = 2000
#: How many of the tools past tasks like the prompt used count as evidence.
USAGE_TOOLS = 10
#: BM25 weights of the columns text, tools, params, errors.
BM25_WEIGHTS = (1.0, 4.0, 2.0, 2.0)

Vector = Sequence[float]
Methods = tuple[str, ...]
#: Every search and kind of evidence (the default).
ALL_METHODS: Methods = ("vector", "bm25", "names", "usage")


@dataclass(frozen=True, slots=True)
class Found:
    """A retrieved lesson: its row in ``experiences`` and how it was ranked."""

    row: dict[str, Any]
    score: float
    evidence: Evidence
    reason: str

    @property
    def id(self) -> int:
        return int(self.row["id"])

    @property
    def text(self) -> str:
        return str(self.row["text"])

    @property
    def domain(self) -> str:
        return str(self.row["domain"])


def scope(db: Any, tools: Sequence[str] | None, domains: Sequence[str] | None) -> list[str] | None:
    """The domains to search: those given plus the domains of ``tools`` (the library's
    mapping first, then the built-in rules); None (every domain) when neither is given."""
    if tools is None and domains is None:
        return None
    if isinstance(tools, str) or isinstance(domains, str):
        raise ValueError("tools and domains must be sequences of names, not one string")
    out = set(domains or ())
    if tools:
        over = dict(db.execute("SELECT tool, domain FROM tool_domains").fetchall())
        out.update(domain_for(t, over) for t in tools)
    return sorted(out)


def live_rows(
    db: Any, ids: Sequence[int] | None = None, domains: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Rows of the live experiences (all, or the given ids, or those in ``domains`` plus
    the domain-free ones), by id."""
    sql = "SELECT * FROM experiences WHERE status = 'live'"
    params: list[object] = []
    if ids is not None:
        sql += " AND id IN (SELECT value FROM json_each(?))"
        params.append(
            json.dumps([i for i in ids if isinstance(i, int) and not isinstance(i, bool)])
        )
    if domains is not None:
        sql += " AND domain IN (SELECT value FROM json_each(?))"
        params.append(json.dumps([*domains, ""]))
    cur = db.execute(sql + " ORDER BY id", params)
    cols = [c[0] for c in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def search(
    db: Any,
    text: str,
    query_vector: Callable[[str], Vector] | None,
    *,
    tools: Sequence[str] | None = None,
    domains: Sequence[str] | None = None,
    k: int = 5,
    min_score: float | None = None,
    ranking: Ranking = DEFAULT,
    methods: Methods = ALL_METHODS,
) -> list[Found]:
    """The ``k`` lessons that best fit ``text`` and pass the relevance floor, best first.

    ``query_vector(text)`` embeds the query with the model that built the vector
    index (called only when there is one). ``methods`` chooses the searches
    and evidence (``vector``, ``bm25``, ``names``: tool names and error strings,
    ``usage``: the tools past tasks like this one used; the benchmark compares
    them). ``min_score`` overrides the floor (0 returns every candidate).
    """
    conn = raw(db)
    own = not conn.in_transaction
    if own:
        begin(db, "BEGIN")  # both indexes and the texts from one committed state
    try:
        evidence = gather(
            db, text, query_vector, tools=tools, domains=domains, k=k, methods=methods
        )
        ranked = rank(evidence.values(), k, ranking, min_score=min_score)
        rows = {r["id"]: r for r in live_rows(conn, [r.evidence.id for r in ranked])}
    finally:
        if own and conn.in_transaction:
            conn.execute("COMMIT")
    return [_found(rows[r.evidence.id], r) for r in ranked if r.evidence.id in rows]


def _found(row: dict[str, Any], r: Ranked) -> Found:
    return Found(row, r.score, r.evidence, r.reason)


def gather(
    db: Any,
    text: str,
    query_vector: Callable[[str], Vector] | None,
    *,
    tools: Sequence[str] | None = None,
    domains: Sequence[str] | None = None,
    k: int = 5,
    methods: Methods = ALL_METHODS,
) -> dict[int, Evidence]:
    """Every candidate's evidence (vector and BM25 ranks, tool names, error strings), for
    :func:`agentmem.retrieval.ranking.rank`. Run it inside a read transaction."""
    conn = raw(db)
    where = scope(conn, tools, domains)
    want = max(CANDIDATES, 4 * k)
    vranks: dict[int, tuple[int, float]] = {}
    if "vector" in methods and query_vector is not None and index.index_info(conn) is not None:
        hits = index.search(db, query_vector(text), domains=where, k=want)  # db: it may cache
        vranks = {i: (n, s) for n, (i, s) in enumerate(hits, 1)}
    given = [t.strip().lower() for t in tools or () if t.strip()]
    prompt = terms.prompt_word_list(text)
    words = terms.query_words(text)
    if words and _larger_than(conn, COMMON_CAP):
        common = keyword_index.too_common(conn, words, COMMON_CAP)
        words = [w for w in words if w not in common]
    facts: dict[int, tuple[str, str, str]] = {}  # id -> (tools, errors, domain)
    branks: dict[int, tuple[int, float]] = {}
    fts = keyword_index.exists(conn)
    if fts and "bm25" in methods:
        branks = _bm25(conn, words, given, where, want, facts)
    names: list[str] = []
    if "names" in methods:
        names = given or [w for w in terms.prompt_names(text) if w not in terms.STOPWORDS]
    usage: dict[str, int] = {}
    profiles = fts and "usage" in methods and tool_usage.exists(conn)
    if profiles and words:
        ranked = tool_usage.rank_tools(conn, keyword_index.match_any(words), USAGE_TOOLS)
        usage = {t: n for n, (t, _) in enumerate(ranked, 1)}
    if fts and (names or usage):
        for i, *cols in keyword_index.namers(conn, [*names, *usage], want):
            facts.setdefault(i, (cols[0], cols[1], cols[2]))
    if fts and ("names" in methods or profiles):
        lacking = [i for i in {*vranks, *branks} if i not in facts]
        facts.update(keyword_index.facts(conn, lacking))
    named = set(names)
    has_profile = (
        tool_usage.profiled(conn, (t for f in facts.values() for t in f[0].split()))
        if profiles
        else set()
    )
    has_vectors = bool(vranks) or index.index_info(conn) is not None
    out: dict[int, Evidence] = {}
    for i in {*vranks, *branks, *facts}:
        v, b = vranks.get(i), branks.get(i)
        tools_col, errors, _ = facts.get(i, ("", "", ""))
        lesson_tools = tools_col.split()
        hit = tuple(t for t in lesson_tools if t in named)
        used = [usage[t] for t in lesson_tools if t in usage]
        out[i] = Evidence(
            id=i,
            vector_rank=v[0] if v else None,
            cosine=v[1] if v else None,
            bm25_rank=b[0] if b else None,
            bm25=b[1] if b else None,
            usage_rank=min(used) if used else None,
            named=hit,
            other_tools=bool(given) and bool(lesson_tools) and not hit,
            quotes_error=bool(names) and terms.quotes_error(prompt, errors),
            vector_applies=has_vectors and "vector" in methods,
            usage_applies=any(t in has_profile for t in lesson_tools),
        )
    # A lesson found only through its tool names stays out when it is outside the scope,
    # unless it names a given tool: naming the tool is the scope's own reason.
    inside = None if where is None else {*where, ""}
    return {
        i: e
        for i, e in out.items()
        if e.vector_rank
        or e.bm25_rank
        or e.named
        or (e.usage_rank and (inside is None or facts[i][2] in inside))
    }


def _bm25(
    conn: Any,
    words: list[str],
    given: list[str],
    where: list[str] | None,
    want: int,
    facts: dict[int, tuple[str, str, str]],
) -> dict[int, tuple[int, float]]:
    parts = []
    if words:
        parts.append(f"({keyword_index.match_any(words)})")
    if given:
        parts.append(f"({keyword_index.match_any(given, ['tools'])})")
    if not parts:
        return {}
    rows = keyword_index.bm25_top(
        conn, " OR ".join(parts), weights=BM25_WEIGHTS, domains=where, limit=want
    )
    out = {}
    for n, (i, s, tools_col, errors, domain) in enumerate(rows, 1):
        out[i] = (n, s)
        facts[i] = (tools_col, errors, domain)
    return out


def _larger_than(conn: Any, n: int) -> bool:
    row = conn.execute(f"SELECT max(rowid) FROM {keyword_index.TABLE}").fetchone()
    return row is not None and row[0] is not None and int(row[0]) > n
