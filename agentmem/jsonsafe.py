"""JSON (and TOML) from outside, read with bounds: one helper for every reader of user input.

Settings files (``hooks install``), hook payloads, transcripts (the importers,
``ingest``), MCP requests, the team's token files and inbox items, and the served log
all come from somewhere agentmem does not control. Each is read through :func:`loads`:

- a size bound (``max_bytes``) checked before parsing;
- a depth bound (:data:`MAX_DEPTH` containers) checked after parsing without recursion,
  and only when the text holds more brackets than the bound (a cheap ``str.count``),
  so the import path pays nothing measurable for it; a text nested so deeply that the
  parser itself gives up (Python's ``RecursionError``) gets the same clear message;
- NaN and Infinity refused (``strict_constants``, as the importers want);
- every failure is one :class:`JSONInputError` (an :class:`~agentmem.errors.AgentMemError`
  and a ``ValueError``) whose message names what was read and why it was refused.

Standard library only; cheap to import (the prompt hook reads its payload with it).
"""

from __future__ import annotations

import json
from typing import Any

from .errors import AgentMemError

__all__ = ["MAX_DEPTH", "JSONInputError", "depth_over", "loads", "loads_toml"]

#: The deepest nesting of arrays and objects any reader accepts. Transcripts, settings
#: and requests nest a dozen levels; every recursive walk downstream (redaction, the
#: schema checks, ``json.dumps``) stays far below Python's recursion limit at this depth.
MAX_DEPTH = 100


class JSONInputError(AgentMemError, ValueError):
    """A JSON (or TOML) input from outside agentmem is not valid, too large or too deep;
    ``reason`` says which: ``"syntax"``, ``"size"`` or ``"depth"``."""

    def __init__(self, message: str, reason: str = "syntax") -> None:
        super().__init__(message)
        self.reason = reason


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_STRICT = json.JSONDecoder(parse_constant=_reject_constant)


def loads(
    data: str | bytes,
    *,
    what: str = "the input",
    max_depth: int = MAX_DEPTH,
    max_bytes: int | None = None,
    strict_constants: bool = False,
) -> Any:
    """``data`` parsed as JSON, or :class:`JSONInputError` naming ``what`` when it is not
    JSON, is over ``max_bytes`` or nests deeper than ``max_depth``."""
    if max_bytes is not None and len(data) > max_bytes:
        raise JSONInputError(f"{what} is {len(data)} bytes, over the limit of {max_bytes}", "size")
    try:
        if strict_constants:  # one decoder for every call: json.loads(..., **kw) builds one each
            if not isinstance(data, str):
                data = data.decode(json.detect_encoding(data), "surrogatepass")
            value = _STRICT.decode(data)
        else:
            value = json.loads(data)
    except RecursionError:
        raise JSONInputError(f"{what} nests too deeply to read", "depth") from None
    except UnicodeDecodeError as e:
        raise JSONInputError(f"{what} is not UTF-8 (byte {e.start})") from None
    except ValueError as e:
        raise JSONInputError(f"{what} is not valid JSON ({str(e)[:120]})") from None
    if len(data) > max_depth and _brackets(data) > max_depth and depth_over(value, max_depth):
        raise _too_deep(what, max_depth)
    return value


def loads_toml(data: str, *, what: str = "the input", max_depth: int = MAX_DEPTH) -> Any:
    """``data`` parsed as TOML (``tomllib``), with the same bounds and errors as
    :func:`loads`."""
    import tomllib

    try:
        value = tomllib.loads(data)
    except RecursionError:
        raise JSONInputError(f"{what} nests too deeply to read", "depth") from None
    except (tomllib.TOMLDecodeError, ValueError) as e:
        raise JSONInputError(f"{what} is not valid TOML ({str(e)[:120]})") from None
    if len(data) > max_depth and _brackets(data) > max_depth and depth_over(value, max_depth):
        raise _too_deep(what, max_depth)
    return value


def _too_deep(what: str, max_depth: int) -> JSONInputError:
    return JSONInputError(f"{what} nests too deeply (over {max_depth} levels)", "depth")


def _brackets(data: str | bytes) -> int:
    """How many containers ``data`` could open at most (brackets in strings count too)."""
    if isinstance(data, str):
        return data.count("[") + data.count("{")
    return data.count(b"[") + data.count(b"{")


def depth_over(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """Whether ``value`` (parsed JSON) nests more than ``max_depth`` arrays and objects,
    walked without recursion."""
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, dict):
            children: Any = v.values()
        elif isinstance(v, list):
            children = v
        else:
            continue
        if d > max_depth:
            return True
        todo.extend((c, d + 1) for c in children if isinstance(c, (dict, list)))
    return False
