"""Datasette metadata for a library: descriptions from ``docs/schema.md``, hidden tables, facets.

The descriptions come from :mod:`agentmem.schemadoc` (``docs/schema.md``), so a
column described there is described in the browser with no change here. The
tables to hide are found in the file itself: SQLite's shadow tables, those of
each virtual table (sqlite-vec's ``experience_vectors_*`` that agentmem does not
document, FTS indexes), and bookkeeping (``_sqlite_migrations``, ``sqlite_*``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..schemadoc import SchemaDoc
from .queries import CANNED_QUERIES

__all__ = ["DATABASE", "FACETS", "LABELS", "hidden_tables", "metadata"]

#: The database's name in the browser's URLs (``/agentmem/lessons``), whatever the file is called.
DATABASE = "agentmem"

#: Columns offered as facets, per table or view (those missing from the file are left out).
FACETS: dict[str, list[str]] = {
    "experiences": ["domain", "status"],
    "live_experiences": ["domain"],
    "experience_sources": ["domain", "origin", "status"],
    "operations": ["origin", "kind", "status"],
    "journal": ["origin", "kind", "status", "session_kind"],
    "sessions": ["kind", "status"],
    "session_groups": ["status"],
    "trajectories": ["source"],
    "trajectory_summary": ["acceptance", "source"],
    "trajectory_rewards": ["acceptance", "source"],
    "steps": ["domain", "success"],
    "feedback": ["kind"],
}

#: The column that names a row where another table links to it (Datasette's label_column).
LABELS: dict[str, str] = {
    "trajectories": "task",
    "experiences": "text",
    "sessions": "kind",
}

_SORT_DESC = {"sessions": "id", "operations": "id", "journal": "id", "feedback": "id"}

_VIRTUAL = re.compile(r"CREATE\s+VIRTUAL\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?[\"`\[]?(\w+)", re.I)


def hidden_tables(
    rows: Iterable[tuple[str, str, str | None]], documented: Iterable[str]
) -> set[str]:
    """The internal tables among ``(name, type, sql)`` rows of ``PRAGMA table_list`` + schema.

    ``type`` is ``table``, ``view``, ``virtual`` or ``shadow``. Hidden: shadow tables,
    tables named ``<virtual table>_...`` that agentmem does not document, FTS tables,
    and names starting with ``_`` or ``sqlite_``.
    """
    rows = list(rows)
    known = set(documented)
    virtual = {m.group(1) for _, _, sql in rows if sql and (m := _VIRTUAL.match(sql.strip()))}
    hidden = set()
    for name, kind, _sql in rows:
        if (
            kind == "shadow"
            or name.startswith(("_", "sqlite_"))
            or "_fts" in name.lower()
            or (name not in known and any(name.startswith(v + "_") for v in virtual))
        ):
            hidden.add(name)
    return hidden


def metadata(
    doc: SchemaDoc,
    columns: Mapping[str, list[str]],
    hidden: Iterable[str],
    *,
    path: Path,
    schema_note: str = "",
) -> dict[str, Any]:
    """Datasette's metadata for the library at ``path`` whose tables hold ``columns``."""
    tables: dict[str, Any] = {}
    for name, cols in sorted(columns.items()):
        meta: dict[str, Any] = {}
        tdoc = doc.tables.get(name)
        if tdoc is not None:
            meta["description"] = tdoc.description
            described = {c: d for c in cols if (d := doc.column(name, c)) is not None}
            if described:
                meta["columns"] = described
        facets = [c for c in FACETS.get(name, []) if c in cols]
        if facets:
            meta["facets"] = facets
        if LABELS.get(name) in cols:
            meta["label_column"] = LABELS[name]
        if _SORT_DESC.get(name) in cols:
            meta["sort_desc"] = _SORT_DESC[name]
        if meta:
            tables[name] = meta
    for name in hidden:
        tables.setdefault(name, {})["hidden"] = True
    description = (
        f"The agentmem library {path}, opened read-only: agents keep recording while you "
        "browse, and a reload shows what they wrote. Start with the queries below (lessons, "
        "sessions, task groups, failing tools) or the views; every table and column is "
        "described."
    )
    if schema_note:
        description += " " + schema_note
    return {
        "title": "agentmem",
        "description": doc.title + ": trajectories, lessons and the journal of every change.",
        "databases": {
            DATABASE: {
                "description": description,
                "tables": tables,
                "queries": {name: {**q, "hide_sql": True} for name, q in CANNED_QUERIES.items()},
            }
        },
    }
