"""sqld's Hrana HTTP pipeline (``POST /v2/pipeline``): statements on one stream, with a token.

Used to set a primary up, to push shared runs to the inbox, and to read it;
laptops otherwise reach the lessons primary through libSQL's client.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

from ..errors import TeamError, TeamRefusedError, TeamUnavailableError
from ..jsonsafe import JSONInputError, loads

__all__ = ["changes", "pipeline"]


def _value(v: Any) -> dict[str, Any]:
    if v is None:
        return {"type": "null"}
    if isinstance(v, bool):
        return {"type": "integer", "value": str(int(v))}
    if isinstance(v, int):
        return {"type": "integer", "value": str(v)}
    if isinstance(v, float):
        return {"type": "float", "value": v}
    if isinstance(v, bytes):
        return {"type": "blob", "base64": base64.b64encode(v).decode("ascii")}
    return {"type": "text", "value": str(v)}


def _unvalue(v: dict[str, Any]) -> Any:
    t = v.get("type")
    if t == "integer":
        return int(v["value"])
    if t == "float":
        return float(v["value"])
    if t == "text":
        return v["value"]
    if t == "blob":
        return base64.b64decode(v.get("base64", ""))
    return None


def _results(
    url: str, statements: list[tuple[str, list[Any]]], *, token: str = ""
) -> list[dict[str, Any]]:
    """Run statements in order on one stream of a primary; each statement's result."""
    requests: list[dict[str, Any]] = [
        {"type": "execute", "stmt": {"sql": sql, "args": [_value(a) for a in args]}}
        for sql, args in statements
    ]
    requests.append({"type": "close"})
    body = json.dumps({"requests": requests}).encode()
    req = urllib.request.Request(
        url.rstrip("/") + "/v2/pipeline",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            answer = loads(r.read(), what=f"the answer of the primary at {url}")
    except urllib.error.HTTPError as e:
        detail = e.read()[:300].decode("utf-8", "replace")
        if e.code in (401, 403):
            raise TeamRefusedError(
                f"the primary at {url} refused this token ({e.code}: {detail}); "
                + ("" if token else "no token was sent; ")
                + "a token is issued with `agentmem team token add NAME` on the team's server"
            ) from None
        raise TeamError(f"the primary at {url} answered {e.code}: {detail}") from None
    except (urllib.error.URLError, OSError) as e:
        raise TeamUnavailableError(f"the primary at {url} cannot be reached: {e}") from None
    except JSONInputError as e:
        raise TeamError(str(e)) from None
    out: list[dict[str, Any]] = []
    for (sql, _), res in zip(statements, answer["results"]):
        if res.get("type") != "ok":
            msg = res.get("error", {}).get("message", res)
            raise TeamError(f"the primary refused {sql[:80]!r}: {msg}")
        out.append(res["response"]["result"])
    return out


def pipeline(
    url: str, statements: list[tuple[str, list[Any]]], *, token: str = ""
) -> list[list[tuple[Any, ...]]]:
    """Run statements in order on one stream of the primary; the rows of each.

    Raises :class:`TeamError` naming the first statement that failed
    (:class:`~agentmem.errors.TeamRefusedError` for a missing or refused token).
    """
    return [
        [tuple(_unvalue(v) for v in row) for row in result["rows"]]
        for result in _results(url, statements, token=token)
    ]


def changes(url: str, statements: list[tuple[str, list[Any]]], *, token: str = "") -> list[int]:
    """Run statements as :func:`pipeline` does; the rows each one changed."""
    return [int(r.get("affected_row_count") or 0) for r in _results(url, statements, token=token)]
