"""Parsing Stage 2's operations (:class:`agentmem.records.Operation`) from model output.

The paper's format is one operation a line: ``OPERATION | experience_id | text``
(``MERGE | id1, id2 | text``). Parsing is forgiving about decoration (bullets,
numbering, case, ``#`` or ``E`` before ids) and strict about substance: a line
that is not an operation is counted as garbage and ignored, never guessed at.
"""

from __future__ import annotations

import re

import attrs

from ..records import Operation

__all__ = ["ParsedOps", "parse_operations"]

_LINE = re.compile(
    r"^\s*(?:[-*>•]|\d+[.)]|\(\d+\))?\s*(?:operation\s*[:=]?\s*)?"
    r"(?P<kind>add|modify|delete|merge)\b\s*[:|]?\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_ID = re.compile(r"^\s*(?:#|e|id\s*[:=]?\s*|\[)?\s*(\d{1,12})\]?\s*$", re.IGNORECASE)


@attrs.frozen
class ParsedOps:
    """Operations parsed from one model answer, and the lines that were not operations."""

    ops: tuple[Operation, ...]
    garbage: tuple[str, ...]


def _ids(field: str) -> tuple[int, ...] | None:
    field = field.strip()
    if not field:
        return ()
    out = []
    for part in re.split(r"[,;&]|\band\b", field):
        if not part.strip():
            continue
        m = _ID.match(part)
        if not m:
            return None
        out.append(int(m.group(1)))
    return tuple(out)


def parse_operations(text: str, *, group: str | None = None, weight: float = 0.0) -> ParsedOps:
    """Parse a model's answer into operations (``origin="model"``), never raising."""
    ops: list[Operation] = []
    garbage: list[str] = []
    for raw in text.splitlines():
        line = raw.strip().strip("`")
        if not line:
            continue
        m = _LINE.match(line)
        if not m:
            garbage.append(line)
            continue
        kind = m.group("kind").upper()
        fields = [f.strip() for f in m.group("rest").split("|")]
        if len(fields) == 1:  # "ADD: text" with no id field
            fields = ["", fields[0]]
        ids = _ids(fields[0])
        body = " ".join(f for f in fields[1:] if f).strip().strip('"').strip()
        if ids is None:
            # "ADD | text" : the first field was text, not ids
            if kind == "ADD":
                ids, body = (), " ".join(fields).strip().strip('"').strip()
            else:
                garbage.append(line)
                continue
        ops.append(
            Operation(
                kind=kind,
                text=body or None,
                targets=ids,
                group=group,
                origin="model",
                weight=weight,
            )
        )
    return ParsedOps(tuple(ops), tuple(garbage))
