"""The schema's descriptions for people, read from ``docs/schema.md``'s tables. Pure.

``docs/schema.md`` is where every table, view and column is described. Tools
that show the file (``agentmem browse``) need those descriptions too, in an
installed package that has no ``docs/``; so :func:`parse` reads them out of the
markdown into a :class:`SchemaDoc`, ``tools/schema_json.py`` writes that to
``agentmem/data/schema.json``, and a test keeps the two equal. A new column
only needs its row in ``docs/schema.md`` (and the JSON regenerated).

The markdown conventions it reads:

- a table's heading ``### `name`: what it holds`` followed by a
  ``| column | meaning |`` table, whose first cell may name several columns;
- the views' ``| view | reads | what it shows |`` table: a view's columns mean
  what the same columns of the table it reads mean;
- the ``| view | column | meaning |`` table of the columns views compute.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from importlib import resources
from typing import Any

import attrs

__all__ = ["SchemaDoc", "TableDoc", "load", "parse", "plain", "undocumented"]

_NAME = re.compile(r"`([^`]+)`")
_HEADING = re.compile(r"^###\s+`([^`]+)`\s*:\s*(.+?)\s*$")


@attrs.frozen
class TableDoc:
    """One table or view: what it holds and what each column means."""

    name: str
    kind: str  # "table" or "view"
    description: str
    columns: Mapping[str, str] = attrs.field(factory=dict)
    reads: str | None = None  # for a view: the table whose columns it shows

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "description": self.description,
            "reads": self.reads,
            "columns": dict(self.columns),
        }


@attrs.frozen
class SchemaDoc:
    """Every documented table and view, by name."""

    title: str
    tables: Mapping[str, TableDoc]

    def column(self, table: str, column: str) -> str | None:
        """What ``table.column`` means; a view's column falls back to the table it reads."""
        doc = self.tables.get(table)
        if doc is None:
            return None
        if column in doc.columns:
            return doc.columns[column]
        if doc.reads and doc.reads != table:
            return self.column(doc.reads, column)
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "tables": {name: t.as_dict() for name, t in sorted(self.tables.items())},
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=1, ensure_ascii=False, sort_keys=False) + "\n"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SchemaDoc:
        return cls(
            title=str(data["title"]),
            tables={
                name: TableDoc(
                    name=name,
                    kind=str(t["kind"]),
                    description=str(t["description"]),
                    columns=dict(t.get("columns") or {}),
                    reads=t.get("reads"),
                )
                for name, t in data["tables"].items()
            },
        )


def plain(cell: str) -> str:
    """A markdown cell as plain text: code spans lose their backticks, ``\\|`` is ``|``."""
    text = cell.replace("\\|", "|")
    text = _NAME.sub(lambda m: m.group(1), text)
    return " ".join(text.split())


def _names(cell: str) -> list[str]:
    return _NAME.findall(cell)


def _split_row(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    cells, cur, i = [], "", 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body) and body[i + 1] == "|":
            cur += "\\|"
            i += 2
            continue
        if body[i] == "|":
            cells.append(cur.strip())
            cur = ""
        else:
            cur += body[i]
        i += 1
    cells.append(cur.strip())
    return cells


def _tables(lines: list[str]) -> Iterator[tuple[int, list[str], list[list[str]]]]:
    """Each markdown table: the line it starts on, its header cells and its rows."""
    i = 0
    while i < len(lines):
        if (
            lines[i].lstrip().startswith("|")
            and i + 1 < len(lines)
            and re.fullmatch(r"\s*\|[\s|:-]+\|?\s*", lines[i + 1])
        ):
            header = [h.lower() for h in _split_row(lines[i])]
            rows, j = [], i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                rows.append(_split_row(lines[j]))
                j += 1
            yield i, header, rows
            i = j
        else:
            i += 1


def parse(markdown: str) -> SchemaDoc:
    """The descriptions in ``docs/schema.md``'s text (see the module docstring)."""
    lines = markdown.splitlines()
    title = next((plain(x[2:]) for x in lines if x.startswith("# ")), "agentmem")
    headings: dict[int, tuple[str, str]] = {}
    current: tuple[str, str] | None = None
    for n, line in enumerate(lines):
        if line.startswith("#"):
            m = _HEADING.match(line)
            current = (m.group(1), plain(m.group(2))) if m else None
        if current is not None:
            headings[n] = current
    tables: dict[str, TableDoc] = {}
    computed: list[tuple[list[str], list[str], str]] = []
    for start, header, rows in _tables(lines):
        if header == ["column", "meaning"]:
            owner = headings.get(start)
            if owner is None:
                raise ValueError(f"line {start + 1}: a column table without a ### `table` heading")
            name, description = owner
            columns = {c: plain(row[1]) for row in rows for c in _names(row[0])}
            tables[name] = TableDoc(name, "table", description, columns)
        elif header == ["view", "reads", "what it shows"]:
            for row in rows:
                for view in _names(row[0]):
                    reads = _names(row[1])
                    tables[view] = TableDoc(
                        view, "view", plain(row[2]), {}, reads[0] if reads else None
                    )
        elif header == ["view", "column", "meaning"]:
            computed += [(_names(row[0]), _names(row[1]), plain(row[2])) for row in rows]
    for views, added, meaning in computed:
        for view in views:
            if view not in tables:
                raise ValueError(f"view {view} has computed columns but no row in the views table")
            doc = tables[view]
            tables[view] = attrs.evolve(
                doc, columns={**doc.columns, **dict.fromkeys(added, meaning)}
            )
    return SchemaDoc(title, tables)


def load() -> SchemaDoc:
    """The descriptions shipped with agentmem (``agentmem/data/schema.json``)."""
    text = resources.files("agentmem").joinpath("data/schema.json").read_text("utf-8")
    return SchemaDoc.from_dict(json.loads(text))


def undocumented(doc: SchemaDoc, schema: Iterable[tuple[str, str, Iterable[str]]]) -> list[str]:
    """``table`` or ``table.column`` for each ``(name, kind, columns)`` that ``doc`` lacks."""
    missing = []
    for name, _kind, columns in schema:
        if name not in doc.tables:
            missing.append(name)
            continue
        missing += [f"{name}.{c}" for c in columns if doc.column(name, c) is None]
    return missing
