"""The one retrieval path: scope, search both indexes, rank, read the lessons.

Every caller comes through :func:`search`: ``Memory.retrieve``, Stage 2 of a learning
session (:class:`agentmem.retrieval.retriever.Retriever`), and the one serving path
(:func:`agentmem.serving.serve`: the prompt hooks, ``agentmem context``, MCP and
``Memory.context``). It takes any connection (a raw
``sqlite3`` one or a sqlite-utils ``Database``) and imports neither
sqlite-utils nor numpy.
"""

# No ``from __future__ import annotations``: the NamedTuple fields of Found are then
# types, not strings that typing compiles (the first compile() of a process costs the
# prompt hook, which imports this module, about 2 ms).
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from .. import sanitize, terms
from .._tx import begin, raw
from ..domains import domain_for
from ..storage import experiences, keyword_index, tool_domains, tool_usage, vector_index
from ..storage.scopes import hidden_ids, standing_fact_ids, tool_rule_ids
from .ranking import DEFAULT, Evidence, Ranked, Ranking, rank

__all__ = [
    "ALL_METHODS",
    "BM25_WEIGHTS",
    "CANDIDATES",
    "COMMON_CAP",
    "MAX_QUERY_CHARS",
    "Found",
    "gather",
    "query_text",
    "scope",
    "search",
    "search_many",
]

#: How many lessons each search hands to the ranking (at least; ``3 k`` for a larger k).
#: Deeper ranks add little to a fused score (1 / (rrf_k + rank)) and cost exact rescoring.
CANDIDATES = 20
#: A prompt word found in more lessons than this is not searched for (see
#: :func:`agentmem.storage.keyword_index.too_common`); a library under this size searches
#: every word.
COMMON_CAP = 256
#: How many of the tools past tasks like the prompt used count as evidence.
USAGE_TOOLS = 10
#: BM25 weights of the columns text, tools, params, errors.
BM25_WEIGHTS = (1.0, 4.0, 2.0, 2.0)
#: The part of a query that is searched: a 5 MB prompt costs what its first 8,000
#: characters do.
MAX_QUERY_CHARS = 8000

Vector = Sequence[float]
Methods = tuple[str, ...]
#: Every search and kind of evidence (the default).
ALL_METHODS: Methods = ("vector", "bm25", "names", "usage")


class Found(NamedTuple):
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
        over = tool_domains.read(db)
        out.update(domain_for(t, over) for t in tools)
    return sorted(out)


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
    project: str | None = None,
    vector_hits: Sequence[tuple[int, float]] | None = None,
    every_scope: bool = False,
    client: str | None = None,
) -> list[Found]:
    """The ``k`` lessons that best fit ``text`` and pass the relevance floor, best first.

    ``query_vector(text)`` embeds the query with the model that built the vector
    index (called only when there is one). ``methods`` chooses the searches
    and evidence (``vector``, ``bm25``, ``names``: tool names and error strings,
    ``usage``: the tools past tasks like this one used; the benchmark compares
    them). ``min_score`` overrides the floor (0 returns every candidate).
    ``project`` (a project root, see :mod:`agentmem.projects`): lessons scoped to
    another project, or to another machine than this one, are never returned; without
    a project, only global lessons and this machine's are. ``every_scope``: search every
    lesson whatever its scope (a learning session's view of the library).
    ``vector_hits``: the vector search's answer, done already (:func:`search_many`).

    In a project (a coding agent's folder), the slots the prompt leaves free hold up to
    :data:`STANDING` of the tools' own rules served there (:func:`_standing`), whatever
    the prompt says: "continue" names no tool, but the agent edits files all the same.
    ``client`` (the coding agent asking, when known): a lesson about another client's
    tool (its rule's ``client``: "Bash keeps the working directory between calls" is
    Claude Code's) is served neither among them nor for the prompt.

    A lesson that breaks the rules of :func:`agentmem.sanitize.lesson_problem` (over 32
    words, a line break, invisible characters, markup, words addressed to the
    reader), however it got into the file, is never returned: the next one takes
    its place.
    """
    text = query_text(text)
    conn = raw(db)
    own = not conn.in_transaction
    if own:
        begin(db, "BEGIN")  # both indexes and the texts from one committed state
    try:
        evidence = gather(
            db,
            text,
            query_vector,
            tools=tools,
            domains=domains,
            k=k,
            methods=methods,
            project=project,
            vector_hits=vector_hits,
            every_scope=every_scope,
        )
        ranked = rank(evidence.values(), len(evidence), ranking, min_score=min_score)
        found = _served(conn, ranked, k, client)
        if project is not None and min_score is None and not every_scope:
            found += _standing(conn, project, k, found, scope(conn, tools, domains), client)
        return found
    finally:
        if own and conn.in_transaction:
            conn.execute("COMMIT")


#: How many of a project's tool rules a prompt that does not call for them is served.
STANDING = 2


def _standing(
    conn: Any,
    project: str,
    k: int,
    found: Sequence[Found],
    where: Sequence[str] | None,
    client: str | None = None,
) -> list[Found]:
    """A tool's own rule (kind ``tool`` in :mod:`agentmem.storage.scopes`: how a coding
    agent's tool or a program behaves, stated for its failure, "If Edit fails with 'File
    has not been read yet', Read the file first") is about tools the agent has in every
    turn, so in its project it passes the relevance floor for any prompt, after the
    lessons the prompt found and in at most :data:`STANDING` slots of ``k``. Project and
    machine facts still need the prompt, but a standing one (its rule's ``standing``: about
    a step of most tasks there, the project's version control, "In this project git commit
    fails: run mix format first", or its interpreter, "python is not on PATH here: run
    python3 instead") comes first in those slots; a search in some domains (``where``)
    takes only those domains' rules."""
    room = min(STANDING, k - len(found))
    if room < 1:
        return []
    have = {f.id for f in found}
    n = 4 * room + len(have)
    facts = standing_fact_ids(conn, project, n)
    ids = [i for i in dict.fromkeys([*facts, *tool_rule_ids(conn, project, n)]) if i not in have]
    rows = {r["id"]: r for r in experiences.live_rows(conn, ids)}
    inside = None if where is None else {*where, ""}
    out: list[Found] = []
    for i in ids:
        row = rows.get(i)
        if row is None or (inside is not None and (row["domain"] or "") not in inside):
            continue
        if client is not None and _client_of(row) not in (None, client):
            continue  # "The Bash tool runs Git Bash here": Claude Code's, not Codex's
        if may_serve(row) and len(out) < room:
            why = "a standing fact" if i in facts else "a tool's rule"
            out.append(Found(row, 0.0, Evidence(i), f"{why}, served in its project"))
    return out


def _client_of(row: Mapping[str, Any]) -> str | None:
    """The client a lesson's rule says it is about (``rule``'s ``client``), or None."""
    text = row.get("rule")
    if not isinstance(text, str) or '"client"' not in text:
        return None
    try:
        client = json.loads(text).get("client")
    except (ValueError, AttributeError):
        return None
    return client if isinstance(client, str) else None


def may_serve(row: Mapping[str, Any]) -> bool:
    """Whether a lesson's row may reach a prompt: its text keeps the rules of
    :func:`agentmem.sanitize.servable`, and it is not held for review (a held or rejected
    lesson never is; one with no review state, from an older or another library, only when
    its text asks for no risky command: :func:`agentmem.agents.risk.may_serve`)."""
    if sanitize.servable(row["text"]) is None:
        return False
    review, checked = row.get("review"), row.get("capabilities")
    if review == "approved" or (review is None and checked == "[]"):
        return True  # the prompt hook's path: no parser to load
    if review is not None:
        return False  # held or rejected
    from ..agents.risk import may_serve as risk_ok  # never checked: read its commands now

    return risk_ok(row["text"], review, checked)


def _served(conn: Any, ranked: Sequence[Ranked], k: int, client: str | None = None) -> list[Found]:
    """The first ``k`` of ``ranked`` that are live and may be served
    (:func:`agentmem.sanitize.servable`), their rows read ``k`` at a time; with a
    ``client``, none whose rule is about another client's tool (:func:`_client_of`)."""
    out: list[Found] = []
    start = 0
    while len(out) < k and start < len(ranked):
        batch = ranked[start : start + k - len(out)]
        start += len(batch)
        rows = {r["id"]: r for r in experiences.live_rows(conn, [r.evidence.id for r in batch])}
        for r in batch:
            row = rows.get(r.evidence.id)
            if row is None or (client is not None and _client_of(row) not in (None, client)):
                continue
            if may_serve(row):
                out.append(_found(row, r))
    return out


def search_many(
    db: Any,
    texts: Sequence[str],
    query_vectors: Callable[[Sequence[str]], Sequence[Vector]] | None,
    *,
    tools: Sequence[Sequence[str] | None] | None = None,
    domains: Sequence[Sequence[str] | None] | None = None,
    k: int = 5,
    min_score: float | None = None,
    ranking: Ranking = DEFAULT,
    methods: Methods = ALL_METHODS,
    project: str | None = None,
    every_scope: bool = False,
) -> list[list[Found]]:
    """:func:`search` for each of ``texts`` (with ``tools[i]`` and ``domains[i]``): the same
    answers, in order, from one committed state.

    The vector searches, which score every vector in scope, are done together
    (:func:`agentmem.storage.vector_index.search_many`, ``query_vectors`` embedding all the texts
    at once): a learning session's thousands of Stage 2 retrievals read the index
    once per batch instead of once per group. The rest is :func:`search`'s.
    """
    texts = [query_text(t) for t in texts]
    n = len(texts)
    tools_of = [None] * n if tools is None else list(tools)
    domains_of = [None] * n if domains is None else list(domains)
    if len(tools_of) != n or len(domains_of) != n:
        raise ValueError("search_many needs one tools and one domains list per text")
    conn = raw(db)
    own = not conn.in_transaction
    if own:
        begin(db, "BEGIN")
    try:
        hits: list[Sequence[tuple[int, float]] | None] = [None] * n
        if (
            n
            and query_vectors is not None
            and "vector" in methods
            and vector_index.index_info(conn)
        ):
            where = [scope(conn, t, d) for t, d in zip(tools_of, domains_of, strict=True)]
            want = max(CANDIDATES, 3 * k)
            hits = list(vector_index.search_many(db, query_vectors(texts), domains=where, k=want))
        return [
            search(
                db,
                text,
                None,
                tools=t,
                domains=d,
                k=k,
                min_score=min_score,
                ranking=ranking,
                methods=methods,
                project=project,
                vector_hits=h,
                every_scope=every_scope,
            )
            for text, t, d, h in zip(texts, tools_of, domains_of, hits, strict=True)
        ]
    finally:
        if own and conn.in_transaction:
            conn.execute("COMMIT")


def query_text(text: str) -> str:
    """The part of a query that is searched: its first :data:`MAX_QUERY_CHARS` characters,
    lone surrogates (undecodable bytes of a command line) as ``?``."""
    text = text[:MAX_QUERY_CHARS]
    return text if text.isascii() else text.encode("utf-8", "replace").decode("utf-8")


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
    project: str | None = None,
    vector_hits: Sequence[tuple[int, float]] | None = None,
    every_scope: bool = False,
) -> dict[int, Evidence]:
    """Every candidate's evidence (vector and BM25 ranks, tool usage, tool names, error
    strings), for :func:`agentmem.retrieval.ranking.rank`, leaving out the lessons that
    ``project`` on this machine must not see (none with ``every_scope``). Run it in a
    read transaction."""
    conn = raw(db)
    where = scope(conn, tools, domains)
    # lessons served only in other projects or on other machines
    hidden = set() if every_scope else hidden_ids(conn, project)
    want = max(CANDIDATES, 3 * k)  # hidden candidates are dropped: a few less to rank
    has_vectors = "vector" in methods and vector_index.index_info(conn) is not None
    vranks: dict[int, tuple[int, float]] = {}
    if has_vectors and (vector_hits is not None or query_vector is not None):
        hits = vector_hits
        if hits is None and query_vector is not None:
            hits = vector_index.search(
                db, query_vector(text), domains=where, k=want
            )  # db: may cache
        vranks = {i: (n, s) for n, (i, s) in enumerate(hits or (), 1)}
    vranks = {i: r for i, r in vranks.items() if i not in hidden}
    if not keyword_index.exists(conn):  # not migrated yet: the vector search alone
        return {
            i: Evidence(i, vector_rank=n, cosine=c, usage_applies=False, bm25_applies=False)
            for i, (n, c) in vranks.items()
        }
    given = [t.strip().lower() for t in tools or () if t.strip()]
    names = []
    if "names" in methods:
        names = given or [w for w in terms.prompt_names(text) if w not in terms.STOPWORDS]
    words = _searchable(conn, terms.query_words(text))
    facts: dict[int, tuple[str, str, str]] = {}  # id -> (tools, errors, domain)
    branks = _bm25(conn, words, where, want, facts) if "bm25" in methods else {}
    usage = _tool_ranks(conn, words) if "usage" in methods else {}
    if names or usage:
        for i, *cols in keyword_index.namers(conn, [*names, *usage], want):
            facts.setdefault(i, (cols[0], cols[1], cols[2]))
    lacking = [i for i in {*vranks, *branks} if i not in facts]
    facts.update(keyword_index.facts(conn, lacking))
    profiled = set()
    if "usage" in methods:
        profiled = tool_usage.profiled(conn, {t for f in facts.values() for t in f[0].split()})
    prompt = terms.prompt_word_list(text) if names else []
    named = set(names)
    inside = None if where is None else {*where, ""}
    out: dict[int, Evidence] = {}
    for i in {*vranks, *branks, *facts} - hidden:
        v, b = vranks.get(i), branks.get(i)
        lesson_tools, errors, domain = facts.get(i, ("", "", ""))
        mine = lesson_tools.split()
        hit = tuple(t for t in mine if t in named)
        used = [usage[t] for t in mine if t in usage]
        if not (v or b or hit or (used and (inside is None or domain in inside))):
            continue  # found by its tool names only, outside the scope
        out[i] = Evidence(
            id=i,
            vector_rank=v[0] if v else None,
            cosine=v[1] if v else None,
            bm25_rank=b[0] if b else None,
            bm25=b[1] if b else None,
            usage_rank=min(used) if used else None,
            named=hit,
            other_tools=bool(given) and bool(mine) and not hit,
            quotes_error=bool(prompt) and terms.quotes_error(prompt, errors),
            vector_applies=has_vectors,
            usage_applies=any(t in profiled for t in mine),
        )
    return out


def _searchable(conn: Any, words: list[str]) -> list[str]:
    """The words worth a BM25 search: all in a small library, the rarer ones in a big one."""
    if not words or not keyword_index.larger_than(conn, COMMON_CAP):
        return words
    common = keyword_index.too_common(conn, words, COMMON_CAP)
    return [w for w in words if w not in common]


def _tool_ranks(conn: Any, words: list[str]) -> dict[str, int]:
    """Rank of each of the :data:`USAGE_TOOLS` tools past tasks like the prompt used."""
    if not words or not tool_usage.exists(conn):
        return {}
    ranked = tool_usage.rank_tools(conn, keyword_index.match_any(words), USAGE_TOOLS)
    return {t: n for n, (t, _) in enumerate(ranked, 1)}


def _bm25(
    conn: Any,
    words: list[str],
    where: list[str] | None,
    want: int,
    facts: dict[int, tuple[str, str, str]],
) -> dict[int, tuple[int, float]]:
    if not words:
        return {}
    rows = keyword_index.bm25_top(
        conn, keyword_index.match_any(words), weights=BM25_WEIGHTS, domains=where, limit=want
    )
    out = {}
    for n, (i, s, tools_col, errors, domain) in enumerate(rows, 1):
        out[i] = (n, s)
        facts[i] = (tools_col, errors, domain)
    return out
