"""Operations on the experience library, and parsing them from model output.

The paper's format is one operation a line: ``OPERATION | experience_id | text``
(``MERGE | id1, id2 | text``). Parsing is forgiving about decoration (bullets,
numbering, case, ``#`` or ``E`` before ids) and strict about substance: a line
that is not an operation is counted as garbage and ignored, never guessed at.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

__all__ = ["ALL_KINDS", "EVIDENCE_KINDS", "OP_KINDS", "Operation", "ParsedOps", "parse_operations"]

#: The paper's operations: what Stage 2 (the model or the data) may propose.
OP_KINDS = ("ADD", "MODIFY", "DELETE", "MERGE")
#: Operations that count evidence on a live experience without changing its text
#: (:mod:`agentmem.learning.support`); never parsed from a model's answer.
EVIDENCE_KINDS = ("CONFIRM", "CONTRADICT")
ALL_KINDS = OP_KINDS + EVIDENCE_KINDS
_LINE = re.compile(
    r"^\s*(?:[-*>•]|\d+[.)]|\(\d+\))?\s*(?:operation\s*[:=]?\s*)?"
    r"(?P<kind>add|modify|delete|merge)\b\s*[:|]?\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_ID = re.compile(r"^\s*(?:#|e|id\s*[:=]?\s*|\[)?\s*(\d{1,12})\]?\s*$", re.IGNORECASE)


@attrs.frozen
class Operation:
    """One proposed change: ADD, MODIFY, DELETE or MERGE (or CONFIRM / CONTRADICT, which
    only count evidence), with where it came from.

    ``targets`` are experience ids (one for MODIFY/DELETE, two for MERGE);
    ``origin`` is ``model``, ``data`` (derived from the group's evidence),
    ``fallback`` (data used because the model's output was rejected) or ``user``.
    ``weight`` is the mean |A| of the group that proposed it (Stage 3 conflicts).
    """

    kind: str
    text: str | None = None
    targets: tuple[int, ...] = ()
    domain: str = ""
    group: str | None = None
    origin: str = "data"
    weight: float = 0.0
    facts: tuple[str, ...] = ()
    note: str = ""
    detail: dict[str, Any] = attrs.field(factory=dict, eq=False)

    def __attrs_post_init__(self) -> None:
        if self.kind not in ALL_KINDS:
            raise ValueError(f"operation kind must be one of {ALL_KINDS}, not {self.kind!r}")

    def describe(self) -> str:
        ids = ",".join(map(str, self.targets))
        return f"{self.kind} | {ids} | {self.text or ''}".strip()


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
