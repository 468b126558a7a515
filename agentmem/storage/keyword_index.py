"""The keyword index over experiences: an FTS5 table in the library file, BM25-ranked.

``experience_fts`` holds one row per live experience (``rowid`` = its id) with
the columns of :func:`agentmem.terms.lesson_terms`: ``text`` (the lesson plus
the words of its split identifiers), ``tools``, ``params``, ``errors``, and
``domain`` (not searched; for scoping). The tokenizer is ``porter unicode61``
with ``_`` as a word character, so ``send_message`` is one token and
"messages" finds "message".

Writers (:func:`put_many`, :func:`remove`, :func:`rebuild`) run inside the
caller's transaction, next to the vector index's writes
(:func:`agentmem.storage.journal.apply_operations`, undo, ``reindex``): the two indexes
change together or not at all. :func:`check` reports a keyword index that
disagrees with the live experiences.

Readers take any connection (a raw ``sqlite3`` one or a sqlite-utils
``Database``); they are what :mod:`agentmem.retrieval` searches with.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from ..domains import BUILTIN_TOOLS
from ..terms import TERMS_VERSION, lesson_terms
from . import experiences, settings

__all__ = [
    "COLUMNS",
    "TABLE",
    "VERSION_KEY",
    "bm25_top",
    "check",
    "ensure",
    "exists",
    "facts",
    "known_tools",
    "larger_than",
    "match_any",
    "namers",
    "put_many",
    "rebuild",
    "remove",
    "stale",
    "too_common",
]

TABLE = "experience_fts"
#: The searched columns, in table order (``domain`` follows, unindexed).
COLUMNS = ("text", "tools", "params", "errors")
#: Settings key: the :data:`agentmem.terms.TERMS_VERSION` the rows were built with.
VERSION_KEY = "keyword_index_version"

_CREATE = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING fts5("
    "text, tools, params, errors, domain UNINDEXED, "
    "tokenize = \"porter unicode61 tokenchars '_'\")"
)


class Conn(Protocol):
    """What the functions here need of a connection: ``sqlite3.Connection`` and
    ``sqlite_utils.Database`` both have it."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...


# -- writing ----------------------------------------------------------------------------


def exists(db: Conn) -> bool:
    row = db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", [TABLE]).fetchone()
    return row is not None


def ensure(db: Conn) -> None:
    """Create the table if it is missing (in the caller's transaction)."""
    db.execute(_CREATE)


def known_tools(db: Conn) -> set[str]:
    """Lower-case names of every tool the library knows: recorded in a step, mapped in
    ``tool_domains``, or built in. Read with a skip-scan of the ``steps_tool`` index."""
    rows = db.execute(
        "WITH RECURSIVE t(tool) AS ("
        " SELECT min(tool) FROM steps"
        " UNION ALL SELECT (SELECT min(tool) FROM steps WHERE tool > t.tool) FROM t"
        " WHERE t.tool IS NOT NULL) "
        "SELECT tool FROM t WHERE tool IS NOT NULL UNION SELECT tool FROM tool_domains"
    ).fetchall()
    return {str(r[0]).lower() for r in rows} | set(BUILTIN_TOOLS)


def put_many(
    db: Conn, rows: Iterable[tuple[int, str, str]], *, known: set[str] | None = None
) -> None:
    """Index (or re-index) experiences given as ``(id, text, domain)``."""
    todo = list(rows)
    if not todo:
        return
    tools = known_tools(db) if known is None else known
    values = [[i, *lesson_terms(text, tools), domain] for i, text, domain in todo]
    ids = json.dumps([i for i, _, _ in todo])
    db.execute(f"DELETE FROM {TABLE} WHERE rowid IN (SELECT value FROM json_each(?))", [ids])
    db.execute(
        f"INSERT INTO {TABLE} (rowid, text, tools, params, errors, domain) "
        "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), "
        "json_extract(value, '$[2]'), json_extract(value, '$[3]'), "
        "json_extract(value, '$[4]'), json_extract(value, '$[5]') FROM json_each(?)",
        [json.dumps(values, ensure_ascii=False)],
    )


def remove(db: Conn, experience_id: int) -> None:
    """Drop an experience's row; nothing happens if it has none."""
    db.execute(f"DELETE FROM {TABLE} WHERE rowid = ?", [experience_id])


def rebuild(db: Conn) -> int:
    """Re-create every row from the live experiences (``reindex``, new extraction rules)."""
    db.execute(f"DROP TABLE IF EXISTS {TABLE}")
    ensure(db)
    live = experiences.live_rows(db)
    put_many(db, [(int(r["id"]), str(r["text"]), str(r["domain"])) for r in live])
    settings.put(db, VERSION_KEY, TERMS_VERSION)
    return len(live)


def version(db: Conn) -> int | None:
    """The :data:`agentmem.terms.TERMS_VERSION` the rows were built with (None: none)."""
    value = settings.get(db, VERSION_KEY)
    return None if value is None else int(value)


# -- reading ----------------------------------------------------------------------------


def _quote(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def match_any(words: Sequence[str], columns: Sequence[str] = ()) -> str:
    """An FTS5 query matching any of ``words`` (in ``columns``, else in every column)."""
    body = " OR ".join(_quote(w) for w in words)
    return f"{{{' '.join(columns)}}} : ({body})" if columns else body


def larger_than(db: Conn, n: int) -> bool:
    """Whether the largest id indexed is above ``n`` (a cheap bound on the library's size)."""
    row = db.execute(f"SELECT max(rowid) FROM {TABLE}").fetchone()
    return row is not None and row[0] is not None and int(row[0]) > n


def too_common(db: Conn, words: Sequence[str], cap: int) -> set[str]:
    """The words found in more than ``cap`` experiences: scoring them would cost more
    than they tell (BM25 gives a word in most lessons almost no weight)."""
    out = set()
    for w in words:
        n = db.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {TABLE} WHERE {TABLE} MATCH ? LIMIT ?)",
            [_quote(w), cap + 1],
        ).fetchone()[0]
        if n > cap:
            out.add(w)
    return out


def bm25_top(
    db: Conn,
    query: str,
    *,
    weights: Sequence[float],
    domains: Sequence[str] | None,
    limit: int,
) -> list[tuple[int, float, str, str, str]]:
    """``(id, score, tools, errors, domain)`` of the ``limit`` best BM25 matches of ``query``
    (an FTS5 expression), best first; score > 0, higher is better. ``domains``: only
    those and the domain-free experiences."""
    w = ", ".join(f"{float(x)!r}" for x in weights)
    sql = (
        f"SELECT rowid, -bm25({TABLE}, {w}, 0.0) AS s, tools, errors, domain FROM {TABLE} "
        f"WHERE {TABLE} MATCH ?"
    )
    params: list[object] = [query]
    if domains is not None:
        sql += " AND domain IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(sorted({*domains, ""})))
    sql += " ORDER BY s DESC, rowid LIMIT ?"
    params.append(limit)
    rows = db.execute(sql, params)
    return [(int(i), float(s), str(t), str(e), str(d)) for i, s, t, e, d in rows]


def namers(db: Conn, names: Sequence[str], limit: int) -> list[tuple[int, str, str, str]]:
    """``(id, tools, errors, domain)`` of the newest ``limit`` experiences whose tools
    column matches one of ``names`` (stemmed: check the names against ``tools``)."""
    if not names:
        return []
    rows = db.execute(
        f"SELECT rowid, tools, errors, domain FROM {TABLE} WHERE {TABLE} MATCH ? "
        "ORDER BY rowid DESC LIMIT ?",
        [match_any(names, ["tools"]), limit],
    )
    return [(int(i), str(t), str(e), str(d)) for i, t, e, d in rows]


def facts(db: Conn, ids: Sequence[int]) -> dict[int, tuple[str, str, str]]:
    """``id -> (tools, errors, domain)`` of the given experiences."""
    if not ids:
        return {}
    rows = db.execute(
        f"SELECT rowid, tools, errors, domain FROM {TABLE} "
        "WHERE rowid IN (SELECT value FROM json_each(?))",
        [json.dumps(list(ids))],
    )
    return {int(i): (str(t), str(e), str(d)) for i, t, e, d in rows}


# -- checking ---------------------------------------------------------------------------


def _ids_text(ids: Sequence[int], limit: int = 10) -> str:
    shown = ", ".join(str(i) for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _agrees(exp: tuple[str, str], row: tuple[str, ...]) -> bool:
    """Does a row hold its experience: the text (then its split identifiers), the domain,
    and only tool names, parameter names and error strings that the text holds?

    Checked without running :func:`agentmem.terms.lesson_terms` again (10 times faster
    at 100,000 lessons); a row it would write differently today shows up as another
    ``keyword_index_version``, which :func:`stale` reports."""
    text, domain = exp
    body, tools, params, errors, stored_domain = row
    if stored_domain != domain or not (body == text or body.startswith(text + "\n")):
        return False
    low = text.lower()
    names = (*tools.split(), *params.split())
    return all(n in low for n in names) and all(e in text for e in errors.split("\n") if e)


def check(db: Conn) -> list[str]:
    """Problems with the keyword index, for people; empty when it agrees with the live
    experiences: one row each, holding its text and domain, and tool names, parameter
    names and error strings that the text holds."""
    live = {
        int(i): (str(t), str(d))
        for i, t, d in db.execute("SELECT id, text, domain FROM experiences WHERE status = 'live'")
    }
    if not exists(db):
        if not live:
            return []
        return [
            f"the library has no keyword index ({TABLE}), so its {len(live)} live experiences "
            "are found by their vectors only: run `agentmem reindex`"
        ]
    rows = {
        int(r[0]): tuple(str(x) for x in r[1:])
        for r in db.execute(f"SELECT rowid, text, tools, params, errors, domain FROM {TABLE}")
    }
    problems = []
    missing = sorted(set(live) - set(rows))
    if missing:
        problems.append(
            f"{len(missing)} live experiences are missing from the keyword index {TABLE}: "
            f"{_ids_text(missing)} (run `agentmem reindex`)"
        )
    stray = sorted(set(rows) - set(live))
    if stray:
        problems.append(
            f"the keyword index {TABLE} holds {len(stray)} experiences that are deleted or "
            f"do not exist: {_ids_text(stray)} (run `agentmem reindex`)"
        )
    wrong = [i for i in sorted(set(live) & set(rows)) if not _agrees(live[i], rows[i])]
    if wrong:
        problems.append(
            f"the keyword index {TABLE} disagrees with the text or domain of {len(wrong)} "
            f"experiences: {_ids_text(wrong)} (run `agentmem reindex`)"
        )
    return problems


def stale(db: Conn) -> str | None:
    """Why the index must be rebuilt before it can be checked, if it must: it was built by
    other extraction rules (opening the library with agentmem rebuilds it)."""
    stored = version(db)
    if stored == TERMS_VERSION:
        return None
    return (
        f"the keyword index {TABLE} was built by other extraction rules (version {stored}, "
        f"not {TERMS_VERSION}); opening the library with agentmem rebuilds it"
    )
