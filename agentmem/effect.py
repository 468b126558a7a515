"""What the lessons change: how often a lesson's mistake happened when it was served and
when the holdout withheld it. Pure.

A run is counted for a lesson when it met the lesson's situation (its rule applies;
:mod:`agentmem.learning.outcomes`); the mistake happened when the run did not follow
the lesson and a call the lesson is about failed. (A lesson whose rule cannot be tested
is judged by its tools: a call of them is the situation, a failed one the mistake;
``judged_by`` says which.) For each lesson and overall,
:func:`report` gives the mistake rate of each arm with its 95% Wilson interval, and
the difference (held out minus served: the share of situations where serving the
lesson prevented the mistake) with Newcombe's interval (method 10, from the two
Wilson intervals). A comparison needs at least :data:`MIN_RUNS` situations in each
arm; with fewer, or with no holdout at all, the report says so instead of a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["MIN_RUNS", "Z", "newcombe", "report", "wilson"]

#: 95% two-sided.
Z = 1.959963984540054
#: Situations each arm needs before the report draws a conclusion.
MIN_RUNS = 5


def wilson(k: int, n: int, z: float = Z) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes in ``n`` trials ((0, 1) when n = 0)."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(k1: int, n1: int, k2: int, n2: int, z: float = Z) -> tuple[float, float]:
    """Newcombe's hybrid score interval (method 10) for p1 - p2."""
    p1 = k1 / n1 if n1 else 0.0
    p2 = k2 / n2 if n2 else 0.0
    l1, u1 = wilson(k1, n1, z)
    l2, u2 = wilson(k2, n2, z)
    d = p1 - p2
    return (
        d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2),
        d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2),
    )


def _arm(k: int, n: int) -> dict[str, Any]:
    lo, hi = wilson(k, n)
    return {
        "situations": n,
        "mistakes": k,
        "rate": round(k / n, 4) if n else None,
        "ci": [round(lo, 4), round(hi, 4)] if n else None,
    }


def _compare(served: tuple[int, int], held: tuple[int, int], holdout: bool) -> dict[str, Any]:
    """One lesson's (or all lessons') figures and what they say."""
    (ks, ns), (kh, nh) = served, held
    out: dict[str, Any] = {"served": _arm(ks, ns), "held_out": _arm(kh, nh)}
    if not holdout and nh == 0:
        out["verdict"] = "served only: not a comparison (no holdout)"
        return out
    if ns < MIN_RUNS or nh < MIN_RUNS:
        out["verdict"] = (
            f"not enough data: {ns} served and {nh} held-out situations "
            f"(a comparison needs {MIN_RUNS} of each)"
        )
        return out
    lo, hi = newcombe(kh, nh, ks, ns)
    out["prevented"] = {"rate": round(kh / nh - ks / ns, 4), "ci": [round(lo, 4), round(hi, 4)]}
    if lo > 0:
        out["verdict"] = "helps: the mistake happens less often when it is served"
    elif hi < 0:
        out["verdict"] = "hurts: the mistake happens more often when it is served"
    else:
        out["verdict"] = "no measurable effect yet (the interval spans 0)"
    return out


def report(
    rows: Iterable[Mapping[str, Any]],
    *,
    holdout: float,
    pending: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The effect report from the judged situations ``rows`` (``experience_id``, ``held``,
    ``repeated``, ``text``, ``status``), the holdout share in force, and what is still
    waiting to be judged."""
    per: dict[int, dict[str, Any]] = {}
    for r in rows:
        e = per.setdefault(
            int(r["experience_id"]),
            {"text": r["text"], "status": r["status"], "s": [0, 0], "h": [0, 0], "by": set()},
        )
        e["by"].add(r.get("judged_by") or "rule")
        arm = e["h"] if r["held"] else e["s"]
        arm[0] += int(bool(r["repeated"]))
        arm[1] += 1
    any_held = holdout > 0 or any(e["h"][1] for e in per.values())
    lessons = [
        {
            "id": eid,
            "text": e["text"],
            "status": e["status"],
            "judged_by": sorted(e["by"]),
            **_compare(tuple(e["s"]), tuple(e["h"]), any_held),  # type: ignore[arg-type]
        }
        for eid, e in sorted(per.items())
    ]
    total_s = (sum(e["s"][0] for e in per.values()), sum(e["s"][1] for e in per.values()))
    total_h = (sum(e["h"][0] for e in per.values()), sum(e["h"][1] for e in per.values()))
    return {
        "holdout": holdout,
        "overall": _compare(total_s, total_h, any_held),
        "lessons": lessons,
        "pending": dict(pending or {}),
    }
