"""Everyday runs: BFCL v4 tasks, each run ONCE through the simulators, no groups at all.

The grouped benchmark (:mod:`benchmarks.lessons.generate`) gives agentmem four runs of
every task. An agent in everyday use makes one run per prompt. This builds that library:
every record is a different BFCL task, run once through a fresh instance of its tool
simulators, with no ``group`` field. Planted mistakes (the same kinds, sub-types and
reference lessons as the grouped benchmark) come in two settings, half each:

``within``: the run makes the mistake and fixes it itself, and finishes the task
    (accepted; its final state is gold's). A misnamed parameter or a wrong value is
    retried right; a missing prerequisite is called and the failed call retried; a wrong
    tool that failed is replaced by the right one; a wrong value that only a look-up can
    fix is looked up (``get_user_id``, ``get_symbol_by_name``, ...) and the call retried
    with what it returned (kind ``no_recovery``: the recovery is the lesson); a silent
    wrong value of a helper (``pressBrakePedal`` with ``pedalPosition=0.5``) makes a
    later call fail, and the helper is called again with the right value.
``across``: the run makes the mistake and never fixes it (rejected). It can only be
    contrasted with OTHER tasks, each run once, that used the same tools right: for each
    such run, two other tasks whose gold calls use the planted tool the right way (with
    the prerequisite before it, the right parameter name, the parameter, the right tool),
    from the same BFCL API classes where there are enough. Only mistakes whose fix is a
    property of the tool can be learned across tasks, so this setting plants: missing
    prerequisites, misnamed parameters, wrong tools that fail, and wrong values of another
    kind than the tool takes (a name where an ID or code is needed, a date in another
    format, a word in another case: value rules ``ACROSS_VALUE_RULES``). A misspelled
    file name (the right one is a fact of one task), a fuel amount in liters, or a wrong
    value that fails silently are planted only ``within``. A run planted ``across``
    never contains a correction of its own.

Every planted run holds one cause (``reference.json``, with ``setting``); the scorer
(:mod:`benchmarks.lessons.scoring`) takes each run as its own group.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from collections.abc import Iterable
from typing import Any

from . import generate as g

__all__ = [
    "ACROSS_KINDS",
    "ACROSS_VALUE_RULES",
    "SETTINGS",
    "WITHIN_KINDS",
    "build_everyday",
]

SETTINGS = ("within", "across")
WITHIN_KINDS = (
    "missing_prerequisite",
    "wrong_param_name",
    "wrong_param_value",
    "wrong_tool",
    "no_recovery",
)
ACROSS_KINDS = ("missing_prerequisite", "wrong_param_name", "wrong_param_value", "wrong_tool")
ACROSS_VALUE_RULES = frozenset(
    {
        "airport_city",
        "class_case",
        "currency_name",
        "date_format",
        "distance_city",
        "ignition_case",
        "receiver_name",
        "symbol_name",
    }
)
#: Positive runs (other tasks that used the tools right) per run planted ``across``.
POSITIVES = 2


def _run(task: dict, calls: list[dict]) -> tuple[list[dict], str]:
    return g.run_calls(task, calls)


def _fixed(ctx: g.Ctx, cand: g.Candidate) -> tuple[list[dict], dict] | None:
    """The within-run fix of a candidate: (steps, cause), or None when none can be built."""
    cause = dict(cand.cause)
    kind = cand.kind
    gold = ctx.gold
    if kind == "no_recovery":
        rec = next(v for v in cand.variants if v.role == "recovers")
        if not cause.get("param"):  # the recovery of a missing prerequisite: that is its kind
            cause["kind"] = "missing_prerequisite"
            cause["prerequisite_tool"] = cause["recovery_tool"]
            cause["recovery_tool"] = None
            cause["polarity"] = "avoid"
        return rec.steps, cause
    if kind == "missing_prerequisite":
        return None  # built from its no_recovery twin above (same calls, fixed)
    (mistake,) = cand.variants
    i = mistake.edit["start"]
    bad = mistake.edit["calls"][0]
    if kind == "wrong_tool" and mistake.steps[i]["success"]:
        return None  # a wrong tool that worked: no failed call for the run to correct
    if not mistake.steps[i]["success"]:  # failed at the call: retry it right
        calls = [*gold[:i], bad, gold[i], *gold[i + 1 :]]
    else:  # a silent wrong value: the helper is called again when a later call fails
        k = g._first_new_failure(mistake.steps, i + 1)
        if k is None:
            return None
        calls = [*gold[:i], bad, *gold[i + 1 : k + 1], gold[i], gold[k], *gold[k + 1 :]]
    steps, state = _run(ctx.task, calls)
    if sum(1 for s in steps if not s["success"]) != 1 or state != ctx.gold_state:
        return None  # the fix must work: one failed call, and gold's final state
    return steps, cause


def _corrections(steps: list[dict], text: str) -> int:
    from agentmem.learning.corrections import find_corrections
    from agentmem.records import Trajectory

    t = Trajectory(
        task=text,
        steps=[{k: s[k] for k in ("tool", "params", "output", "success")} for s in steps],
        accepted=False,
    )
    return len(find_corrections(t))


def _across(ctx: g.Ctx, cand: g.Candidate) -> tuple[list[dict], dict] | None:
    if cand.kind not in ACROSS_KINDS:
        return None
    (mistake,) = cand.variants
    i = mistake.edit["start"]
    if cand.kind == "wrong_param_value" and cand.subtype.split(":", 1)[1] not in ACROSS_VALUE_RULES:
        return None
    if cand.kind in ("wrong_param_value", "wrong_tool") and mistake.steps[i]["success"]:
        return None  # the mistake does not fail where it is made: nothing to compare it on
    if _corrections(mistake.steps, g.task_text(ctx.task)):
        return None  # the run would correct itself: that is the other setting
    return mistake.steps, dict(cand.cause)


def _uses_right(task: dict, cause: dict) -> bool:
    """Does ``task``'s gold use the planted tool the right way?"""
    env = g.Env(task)
    try:
        calls = [g.parse_call(c, env) for c in task["gold"]]
    except (ValueError, KeyError, SyntaxError):
        return False
    tools = [c["tool"] for c in calls]
    kind, tool = cause["kind"], cause["tool"]
    if kind == "wrong_tool":
        return cause["right_tool"] in tools
    if tool not in tools:
        return False
    first = tools.index(tool)
    if kind == "missing_prerequisite":
        return cause["prerequisite_tool"] in tools[:first]
    if kind in ("wrong_param_name", "wrong_param_value"):
        return any(c["tool"] == tool and cause["param"] in c["params"] for c in calls)
    return True


def _order(tasks: list[dict], rng: random.Random) -> list[dict]:
    pools: dict[tuple[str, ...], list[dict]] = {}
    for t in tasks:
        pools.setdefault(tuple(sorted(t["involved_classes"])), []).append(t)
    for key in sorted(pools):
        rng.shuffle(pools[key])
    keys = sorted(pools)
    rng.shuffle(keys)
    order: list[dict] = []
    while any(pools.values()):
        for key in keys:
            if pools[key]:
                order.append(pools[key].pop())
    return order


def _record(task: dict, steps: list[dict], accepted: bool, planted: dict | None) -> dict:
    return {
        "task": g.task_text(task),
        "group": task["id"],  # for scoring only: each run is its own group; never recorded
        "steps": steps,
        "accepted": accepted,
        "meta": {"source": "bfcl-everyday", "task_id": task["id"], "planted": planted},
    }


def build_everyday(planted: int = 20, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(run records, reference causes): ``planted`` runs with a mistake, half ``within``
    and half ``across`` (each of those with :data:`POSITIVES` runs of other tasks that
    used the tools right), every record a different task. Deterministic in ``seed``."""
    rng = random.Random(f"everyday:{seed}")
    tasks = [t for t in g.load_tasks() if len(t["gold"]) >= 3]
    order = _order(tasks, rng)
    info: dict[str, tuple[g.Ctx, list[g.Candidate]]] = {}

    def cands(t: dict) -> tuple[g.Ctx, list[g.Candidate]]:
        if t["id"] not in info:
            info[t["id"]] = g.candidates_for(t)
        return info[t["id"]]

    used: set[str] = set()
    sub_count: Counter[str] = Counter()
    records: list[dict] = []
    causes: list[dict] = []
    n_within = planted - planted // 2
    plan = [("within", WITHIN_KINDS[k % len(WITHIN_KINDS)]) for k in range(n_within)] + [
        ("across", ACROSS_KINDS[k % len(ACROSS_KINDS)]) for k in range(planted // 2)
    ]
    positives_of: list[tuple[dict, dict]] = []
    for setting, kind in plan:
        best: tuple[int, int, dict, g.Candidate, list[dict], dict] | None = None
        for pos, t in enumerate(order):
            if t["id"] in used:
                continue
            ctx, cs = cands(t)
            for c in cs:
                want = (
                    "no_recovery" if (setting, kind) == ("within", "missing_prerequisite") else kind
                )
                if c.kind != want:
                    continue
                if setting == "within" and kind == "no_recovery" and not c.cause.get("param"):
                    continue  # a recovery by look-up; a recovered prerequisite is the kind above
                if setting == "within" and kind == "missing_prerequisite" and c.cause.get("param"):
                    continue
                key = (sub_count[c.subtype], pos)
                if best is not None and key >= best[:2]:
                    continue
                built = _fixed(ctx, c) if setting == "within" else _across(ctx, c)
                if built is None:
                    continue
                if (
                    setting == "across"
                    and len(_positive_pool(order, used | {t["id"]}, t, built[1])) < POSITIVES
                ):
                    continue
                best = (key[0], key[1], t, c, built[0], built[1])
        if best is None:
            continue
        _, _, t, c, steps, cause = best
        used.add(t["id"])
        sub_count[c.subtype] += 1
        cause = {
            **{k: v for k, v in cause.items() if k != "must_mention"},
            "id": f"{t['id']}/{setting}/{cause['kind']}/{len(causes)}",
            "group": t["id"],
            "setting": setting,
            "subtype": c.subtype,
        }
        causes.append(cause)
        planted_meta = {k: v for k, v in cause.items() if k != "reference_lesson"}
        records.append(_record(t, steps, setting == "within", planted_meta))
        if setting == "across":
            positives_of.append((t, cause))
    for t, cause in positives_of:
        for p in _positive_pool(order, used, t, cause)[:POSITIVES]:
            used.add(p["id"])
            ctx, _ = cands(p)
            records.append(_record(p, copy.deepcopy(ctx.gold_steps), True, None))
            cause.setdefault("positives", []).append(p["id"])
    return records, causes


def _positive_pool(order: Iterable[dict], used: set[str], t: dict, cause: dict) -> list[dict]:
    """Other tasks, not used yet, whose gold uses the planted tool right: those of the same
    API classes first, in the benchmark's order."""
    classes = set(t["involved_classes"])
    same, other = [], []
    for p in order:
        if p["id"] in used or p["id"] == t["id"] or not _uses_right(p, cause):
            continue
        (same if set(p["involved_classes"]) == classes else other).append(p)
    return same + other


def settings_of(causes: list[dict]) -> dict[str, Any]:
    """How many causes of each kind each setting holds."""
    out: dict[str, Counter[str]] = {s: Counter() for s in SETTINGS}
    for c in causes:
        out[c["setting"]][c["kind"]] += 1
    return {s: dict(sorted(v.items())) for s, v in out.items()}
