"""JSON for the importers: strict values, JSON lines, and what a failed output looks like."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

from ..jsonsafe import _STRICT
from ..jsonsafe import loads as _bounded_loads
from ..records import Trajectory

__all__ = ["ParseResult", "is_error_output", "json_lines", "loads", "loads_line"]


@attrs.frozen
class ParseResult:
    """Trajectories read from a file, and the errors of the lines that were skipped."""

    trajectories: tuple[Trajectory, ...]
    errors: tuple[str, ...] = ()


#: No bound of its own beyond what the parser reads (its RecursionError: a clear error).
_PARSER_LIMIT = 1 << 30


#: The scanner of the strict decoder that :func:`loads` runs (NaN and Infinity refused).
_scan: Callable[[str, int], tuple[Any, int]] = _STRICT.scan_once  # type: ignore[attr-defined]


def loads(text: str | bytes) -> Any:
    """``json.loads`` that refuses NaN and Infinity, and nesting deeper than the parser
    reads, with a ValueError (:class:`agentmem.jsonsafe.JSONInputError`)."""
    # Deep values that the parser can read are cut by the turn builder (MAX_PARAM_DEPTH,
    # counted as repaired), so only the parser's own limit applies here.
    return _bounded_loads(text, what="the JSON", strict_constants=True, max_depth=_PARSER_LIMIT)


def loads_line(text: str) -> Any:
    """:func:`loads` of one line of a JSON-lines file, the same value or the same error,
    faster for the usual line: an object with no space around it.

    Such a line is scanned by the strict decoder's scanner directly (what ``json.loads``
    runs after two regex matches for the white space around the value, and a wrapper);
    any other line, and any line the scanner refuses, goes through :func:`loads`, which
    gives the value or the error message it always gave.
    """
    if text[:1] == "{" and text[-1:] == "}":
        try:
            value, end = _scan(text, 0)
        except (ValueError, StopIteration, RecursionError):
            pass
        else:
            if end == len(text):
                return value
    return loads(text)


def json_lines(source: Iterable[bytes | str]) -> Iterator[tuple[int, str | None, str | None]]:
    """(line number, text or None, decode error or None) for each non-blank line."""
    for n, raw in enumerate(source, 1):
        if isinstance(raw, bytes):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                yield n, None, f"not valid UTF-8 (byte {e.start})"
                continue
        else:
            text = raw
        if text.strip():
            yield n, text, None


def is_error_output(text: str) -> bool:
    """A tool output that reports failure: it starts with "Error" or is JSON with an "error" key."""
    s = text.lstrip()
    if s[:5].lower() == "error":
        return True
    if s.startswith("{"):
        try:
            obj = json.loads(s)
        except (ValueError, RecursionError):
            return False
        return isinstance(obj, dict) and "error" in obj
    return False
