"""Build a learning-quality benchmark from BFCL v4 multi-turn tasks.

For each chosen task this writes ONE GROUP of 4 trajectories, every one executed for real
through a fresh instance of the task's BFCL tool simulators (initialised from the task's
``initial_config``):

* ``gold``: the task's gold call sequence (all turns, flattened). Accepted.
* three variants, each with one planted, known cause of failure:

  - ``missing_prerequisite``: one prerequisite call is left out (``cd`` before a file tool,
    ``*_login`` / ``authenticate_*`` before an account action, ``pressBrakePedal`` or
    ``lockDoors`` before ``startEngine``); a later call fails because of it.
  - ``wrong_param_value``: one parameter gets a systematically wrong value (a name where an
    ID or code is needed, a wrong unit or format, a misspelled file name...).
  - ``wrong_param_name``: one parameter is misnamed (``file`` for ``file_name``); the call
    raises "unexpected keyword argument".
  - ``wrong_tool``: a tool of the same domain is called instead of the right one (``cp`` for
    ``mv``, ``gallon_to_liter`` for ``liter_to_gallon``...).
  - ``no_recovery``: takes two slots of the group. Both trajectories hit the same error; the
    rejected one stops there, the accepted one makes the right corrective call (the missing
    prerequisite, or a look-up such as ``get_user_id``), retries and finishes the task.

  Planted variants are rejected (``accepted: false``) except the recovering one. Every
  variant is checked to really fail: a step newly fails, or the simulators' final state
  differs from gold. A recovering variant must end in exactly gold's final state.

A step fails when the call raises (the output is then ``"Error during execution: ..."`` as
in BFCL), or returns a dict with an ``"error"`` key, a list holding such a dict or a string
starting with "Error", or a string starting with "Error".

Output (``--out DIR``): ``trajectories.jsonl`` (agentmem records, one trajectory a line),
``reference.json`` (one entry per planted cause, see ``Cause`` fields below) and
``tools.json`` (every tool of the BFCL multi-turn classes with its parameter names, for
the invented-tool check of :mod:`benchmarks.lessons.scoring`).

``meta.planted`` of a variant carries the cause *without* its reference lesson (and with
``edit``: gold's calls ``[start:end]`` are replaced by ``calls`` to get the variant's calls).
A harness must strip ``meta`` before handing trajectories to the learner under test.

Usage: ``python -m benchmarks.lessons.generate --tasks 20 --seed 0 --out DIR``.
Tasks needing ``MathAPI`` (whose module needs mpmath) are never used, so the selection does
not depend on what is installed.
"""

from __future__ import annotations

import argparse
import ast
import copy
import functools
import importlib
import importlib.util
import inspect
import itertools
import json
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .scoring import MAX_WORDS, addresses, violations

__all__ = [
    "KINDS",
    "apply_edit",
    "build_benchmark",
    "load_tasks",
    "main",
    "parse_call",
    "run_calls",
]

KINDS = (
    "missing_prerequisite",
    "wrong_param_value",
    "wrong_param_name",
    "wrong_tool",
    "no_recovery",
)

MAX_OUTPUT_CHARS = 2000
CATEGORY = "multi_turn_base"

_BACKEND = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
CLASS_MODULES = {
    "GorillaFileSystem": f"{_BACKEND}.gorilla_file_system",
    "MessageAPI": f"{_BACKEND}.message_api",
    "TwitterAPI": f"{_BACKEND}.posting_api",
    "TicketAPI": f"{_BACKEND}.ticket_api",
    "TradingBot": f"{_BACKEND}.trading_bot",
    "TravelAPI": f"{_BACKEND}.travel_booking",
    "VehicleControlAPI": f"{_BACKEND}.vehicle_control",
}
FUNC_DOCS = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}

Call = dict  # {"tool": str, "params": dict}


# --------------------------------------------------------------------------- BFCL data


def bfcl_data_dir() -> Path:
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("bfcl_eval is not installed (pip install --no-deps bfcl-eval)")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_tasks() -> list[dict]:
    """BFCL multi_turn_base tasks usable here, each with ``gold`` (flattened call strings)."""
    data = bfcl_data_dir()
    tasks = _read_jsonl(data / f"BFCL_v4_{CATEGORY}.json")
    answers = {
        a["id"]: a["ground_truth"]
        for a in _read_jsonl(data / "possible_answer" / f"BFCL_v4_{CATEGORY}.json")
    }
    out = []
    for t in tasks:
        if t["id"] not in answers or not set(t["involved_classes"]) <= set(CLASS_MODULES):
            continue
        t = dict(t)
        t["gold"] = [c for turn in answers[t["id"]] for c in turn]
        out.append(t)
    return out


def task_text(task: dict) -> str:
    parts = []
    for turn in task["question"]:
        for msg in turn:
            if msg.get("role") == "user" and msg.get("content"):
                parts.append(msg["content"].strip())
    return " ".join(parts)


@functools.lru_cache(maxsize=1)
def tool_catalogue() -> dict[str, dict]:
    """{tool: {"class": ..., "params": [...]}} for the BFCL multi-turn classes."""
    docs = bfcl_data_dir() / "multi_turn_func_doc"
    out: dict[str, dict] = {}
    for cls, fname in FUNC_DOCS.items():
        for d in _read_jsonl(docs / fname):
            props = d.get("parameters", {}).get("properties", {})
            out[d["name"]] = {"class": cls, "params": sorted(props)}
    return dict(sorted(out.items()))


# --------------------------------------------------------------------------- execution

_CLASS_CACHE: dict[str, type] = {}


def _load_class(name: str) -> type:
    if name not in _CLASS_CACHE:
        _CLASS_CACHE[name] = getattr(importlib.import_module(CLASS_MODULES[name]), name)
    return _CLASS_CACHE[name]


class Env:
    """Fresh simulator instances for one task."""

    def __init__(self, task: dict):
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Callable] = {}
        for cname in task["involved_classes"]:
            inst = _load_class(cname)()
            inst._load_scenario(copy.deepcopy(task["initial_config"].get(cname, {})))
            self.instances[cname] = inst
            for mname, meth in inspect.getmembers(inst, predicate=inspect.ismethod):
                if not mname.startswith("_"):
                    self.methods[mname] = meth

    def call(self, tool: str, params: dict) -> tuple[str, bool, Any]:
        meth = self.methods.get(tool)
        if meth is None:
            return f"Error during execution: unknown tool '{tool}'", False, None
        try:
            result = meth(**copy.deepcopy(params))
        except Exception as e:  # the simulator raised: BFCL reports it the same way
            return _stable_sets(f"Error during execution: {e}"), False, None
        return _output_text(result), not _is_error(result), result

    def snapshot(self) -> str:
        return json.dumps(
            {k: _snap(v) for k, v in sorted(self.instances.items())}, sort_keys=True, default=str
        )


def _is_error(result: Any) -> bool:
    if isinstance(result, dict):
        return "error" in result
    if isinstance(result, list):
        return any(
            (isinstance(r, dict) and "error" in r) or (isinstance(r, str) and r.startswith("Error"))
            for r in result
        )
    if isinstance(result, str):
        return result.startswith("Error")
    return False


_SET_REPR = re.compile(r"\{('[^'{}]*'(?:, '[^'{}]*')+)\}")


def _stable_sets(text: str) -> str:
    """Sort the items of Python set reprs such as ``{'b', 'a'}`` (their order is random)."""
    return _SET_REPR.sub(lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", text)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted((_jsonable(v) for v in obj), key=repr)
    return obj


def _output_text(result: Any) -> str:
    text = result if isinstance(result, str) else json.dumps(_jsonable(result), default=str)
    text = _stable_sets(text)
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[: MAX_OUTPUT_CHARS - 15] + " ...[truncated]"
    return text


def _snap(obj: Any, depth: int = 0) -> Any:
    """Public state of a simulator, as plain JSON (private attributes and parents left out)."""
    if depth > 40:
        return "..."
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, dict):
        return {str(k): _snap(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_snap(v, depth + 1) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted((_snap(v, depth + 1) for v in obj), key=repr)
    if hasattr(obj, "__dict__"):
        return {
            k: _snap(v, depth + 1)
            for k, v in sorted(vars(obj).items())
            if not k.startswith("_") and k not in ("parent", "long_context")
        }
    return repr(obj)


def run_calls(task: dict, calls: list[Call]) -> tuple[list[dict], str]:
    """Execute ``calls`` through fresh simulators: (steps, final state snapshot)."""
    env = Env(task)
    steps = []
    for c in calls:
        out, ok, _ = env.call(c["tool"], c["params"])
        steps.append(
            {"tool": c["tool"], "params": copy.deepcopy(c["params"]), "output": out, "success": ok}
        )
    return steps, env.snapshot()


def parse_call(text: str, env: Env) -> Call:
    """``"cd(folder='document')"`` -> ``{"tool": "cd", "params": {"folder": "document"}}``.

    Positional arguments are named from the simulator method's signature.
    """
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain call: {text!r}")
    tool = node.func.id
    params: dict[str, Any] = {}
    if node.args:
        names = [p for p in inspect.signature(env.methods[tool]).parameters]
        for name, arg in zip(names, node.args, strict=False):
            params[name] = ast.literal_eval(arg)
    for kw in node.keywords:
        if kw.arg is None:
            raise ValueError(f"**kwargs in a gold call: {text!r}")
        params[kw.arg] = ast.literal_eval(kw.value)
    return {"tool": tool, "params": params}


def apply_edit(gold_calls: list[Call], edit: dict) -> list[Call]:
    """The variant's calls: gold's ``[start:end]`` replaced by ``edit["calls"]``."""
    return list(gold_calls[: edit["start"]]) + list(edit["calls"]) + list(gold_calls[edit["end"] :])


def _call(tool: str, **params: Any) -> Call:
    return {"tool": tool, "params": params}


def _with(call: Call, **params: Any) -> Call:
    return {"tool": call["tool"], "params": {**call["params"], **params}}


# --------------------------------------------------------------------------- candidates


@dataclass
class Variant:
    calls: list[Call]
    edit: dict
    accepted: bool
    role: str  # "mistake" | "gives_up" | "recovers"
    steps: list[dict] = field(default_factory=list)


@dataclass
class Candidate:
    kind: str
    subtype: str
    cause: dict
    variants: list[Variant]
    index: int  # gold index of the planted call (for diversity)


@dataclass
class Ctx:
    task: dict
    gold: list[Call]
    gold_steps: list[dict]
    gold_state: str
    env: Env  # a fresh, unused instance: for signatures and look-up tables

    def sig(self, tool: str) -> list[str]:
        return list(inspect.signature(self.env.methods[tool]).parameters)

    def later(self, i: int, tool: str) -> bool:
        return any(c["tool"] == tool for c in self.gold[i + 1 :])


def _cause(kind: str, tool: str, **kw: Any) -> dict:
    base = {
        "kind": kind,
        "tool": tool,
        "param": None,
        "prerequisite_tool": None,
        "right_tool": None,
        "recovery_tool": None,
        "wrong_param": None,
        "wrong_value": None,
        "right_value": None,
        "call_index": None,
        "error": None,
    }
    base.update(kw)
    return base


def _short_error(output: str) -> str:
    m = re.search(r'"error":\s*"([^"]*)"', output)
    text = m.group(1) if m else output.replace("Error during execution:", "").strip()
    if "No such file" in text:
        return "No such file"
    words = text.split()
    return " ".join(words[:6])


def _first_new_failure(steps: list[dict], start: int) -> int | None:
    for k in range(start, len(steps)):
        if not steps[k]["success"]:
            return k
    return None


def _differs(ctx: Ctx, steps: list[dict], state: str) -> bool:
    return any(not s["success"] for s in steps) or state != ctx.gold_state


# ---- missing_prerequisite -------------------------------------------------------------

FS_TOOLS = {
    "cat", "cp", "diff", "du", "echo", "find", "grep", "ls", "mkdir", "mv", "pwd", "rm",
    "rmdir", "sort", "tail", "touch", "wc",
}  # fmt: skip

PREREQS: dict[str, tuple[Callable[[str], bool], str]] = {
    "cd": (
        lambda t: t in FS_TOOLS,
        "Before {tool} on a file inside a subfolder, cd into that folder first; {tool} only "
        "sees the current directory and otherwise fails with 'No such file'.",
    ),
    "authenticate_twitter": (
        lambda t: True,
        "Before {tool}, call authenticate_twitter with the username and password; otherwise "
        "{tool} fails with 'User not authenticated'.",
    ),
    "message_login": (
        lambda t: True,
        "Before {tool}, call message_login with your user_id; otherwise {tool} fails with "
        "'No user is currently logged in'.",
    ),
    "ticket_login": (
        lambda t: True,
        "Before {tool}, call ticket_login with username and password; otherwise {tool} fails "
        "with 'User not authenticated'.",
    ),
    "trading_login": (
        lambda t: True,
        "Before {tool}, call trading_login with username and password; otherwise {tool} fails "
        "with 'User not authenticated'.",
    ),
    "authenticate_travel": (
        lambda t: True,
        "Before {tool}, call authenticate_travel and use the access_token it returns; "
        "otherwise {tool} fails with 'Invalid access token'.",
    ),
    "pressBrakePedal": (
        lambda t: t == "startEngine",
        "Before startEngine, call pressBrakePedal with pedalPosition=1.0; otherwise startEngine "
        "fails with 'Brake pedal needs to be pressed'.",
    ),
    "lockDoors": (
        lambda t: t == "startEngine",
        "Before startEngine, call lockDoors with unlock=False for every door; startEngine fails "
        "while any door is unlocked.",
    ),
}

RECOVER_PREREQ = {
    "cd": "If {tool} fails with 'No such file', cd into the folder that holds the file and "
    "retry {tool} instead of giving up.",
    "pressBrakePedal": "If startEngine fails with 'Brake pedal needs to be pressed', call "
    "pressBrakePedal with pedalPosition=1.0 and retry startEngine instead of giving up.",
    "lockDoors": "If startEngine fails because doors are unlocked, call lockDoors with "
    "unlock=False for those doors and retry startEngine instead of giving up.",
}
RECOVER_LOGIN = (
    "If {tool} fails with '{err}', call {prereq} first and then retry {tool} instead of giving up."
)


def missing_prerequisite(ctx: Ctx) -> list[Candidate]:
    out = []
    for i, c in enumerate(ctx.gold):
        if c["tool"] not in PREREQS:
            continue
        dependent, template = PREREQS[c["tool"]]
        calls = ctx.gold[:i] + ctx.gold[i + 1 :]
        steps, _ = run_calls(ctx.task, calls)
        k = _first_new_failure(steps, i)
        if k is None:
            continue
        j = k + 1  # gold index of the failing call
        tool = ctx.gold[j]["tool"]
        if tool in PREREQS or not dependent(tool):
            continue
        err = steps[k]["output"]
        cause = _cause(
            "missing_prerequisite",
            tool,
            prerequisite_tool=c["tool"],
            call_index=i,
            error=_short_error(err),
            reference_lesson=template.format(tool=tool),
            must_mention=[tool, c["tool"]],
        )
        edit = {"start": i, "end": i + 1, "calls": []}
        out.append(
            Candidate(
                "missing_prerequisite",
                f"missing:{c['tool']}",
                cause,
                [Variant(calls, edit, False, "mistake", steps)],
                i,
            )
        )
        # the same error, with and without recovery
        giveup = ctx.gold[:i] + ctx.gold[i + 1 : j + 1]
        recover_mid = [*ctx.gold[i + 1 : j + 1], ctx.gold[i], ctx.gold[j]]
        recovered = ctx.gold[:i] + recover_mid + ctx.gold[j + 1 :]
        g_steps, _ = run_calls(ctx.task, giveup)
        r_steps, r_state = run_calls(ctx.task, recovered)
        fails = [n for n, s in enumerate(r_steps) if not s["success"]]
        if fails != [j - 1] or r_state != ctx.gold_state or g_steps[-1]["success"]:
            continue
        if c["tool"] in RECOVER_PREREQ:
            lesson = RECOVER_PREREQ[c["tool"]].format(tool=tool)
        else:
            lesson = RECOVER_LOGIN.format(tool=tool, err=_short_error(err), prereq=c["tool"])
        nr = _cause(
            "no_recovery",
            tool,
            recovery_tool=c["tool"],
            call_index=i,
            error=_short_error(err),
            reference_lesson=lesson,
            must_mention=[tool, c["tool"]],
        )
        out.append(
            Candidate(
                "no_recovery",
                f"recover:{c['tool']}",
                nr,
                [
                    Variant(recovered, {"start": i, "end": j + 1, "calls": recover_mid}, True,
                            "recovers", r_steps),
                    Variant(giveup, {"start": i, "end": len(ctx.gold),
                                     "calls": ctx.gold[i + 1 : j + 1]}, False, "gives_up",
                            g_steps),
                ],
                i,
            )
        )  # fmt: skip
    return out


# ---- wrong_param_name -----------------------------------------------------------------

ALIASES = {
    "file_name": "file", "folder": "directory", "dir_name": "directory", "source": "src",
    "destination": "dest", "file_name1": "file1", "file_name2": "file2", "pattern": "query",
    "lines": "n", "content": "text", "name": "filename", "path": "dir",
    "receiver_id": "recipient_id", "message": "text", "user_id": "user", "user": "user_name",
    "user_name": "username", "symbol": "ticker", "stock": "symbol", "order_id": "id",
    "order_type": "side", "amount": "quantity", "price": "limit_price", "sector": "industry",
    "ticket_id": "id", "title": "subject", "description": "body", "priority": "severity",
    "resolution": "resolution_note", "username": "user", "password": "passwd",
    "tweet_id": "id", "comment_content": "comment", "tags": "hashtags",
    "mentioned_usernames": "usernames", "pedalPosition": "pedal_position",
    "ignitionMode": "ignition_mode", "fuelAmount": "fuel_amount", "door": "doors",
    "cityA": "city_a", "cityB": "city_b", "city": "city_name", "distance": "miles",
    "liter": "liters", "gallon": "gallons", "access_token": "token",
    "card_id": "credit_card_id", "travel_from": "from_airport", "travel_to": "to_airport",
    "travel_date": "date", "travel_class": "cabin_class", "booking_id": "booking_number",
    "base_currency": "from_currency", "target_currency": "to_currency", "value": "amount",
    "budget_limit": "limit", "location": "city", "insurance_type": "type",
    "insurance_cost": "cost", "mode": "state",
}  # fmt: skip

WRONG_NAME_LESSON = (
    "Call {tool} with the exact parameter name {param}, not {wrong}; a misnamed argument "
    "fails with 'unexpected keyword argument'."
)


def wrong_param_name(ctx: Ctx) -> list[Candidate]:
    out = []
    for i, c in enumerate(ctx.gold):
        sig = ctx.sig(c["tool"])
        for p in c["params"]:
            wrong = ALIASES.get(p)
            if not wrong or wrong in sig:
                continue
            params = {(wrong if k == p else k): v for k, v in c["params"].items()}
            bad = {"tool": c["tool"], "params": params}
            calls = [*ctx.gold[:i], bad, *ctx.gold[i + 1 :]]
            steps, _ = run_calls(ctx.task, calls)
            if steps[i]["success"]:
                continue
            cause = _cause(
                "wrong_param_name",
                c["tool"],
                param=p,
                wrong_param=wrong,
                call_index=i,
                error=_short_error(steps[i]["output"]),
                reference_lesson=WRONG_NAME_LESSON.format(tool=c["tool"], param=p, wrong=wrong),
                must_mention=[c["tool"], p],
            )
            edit = {"start": i, "end": i + 1, "calls": [bad]}
            out.append(
                Candidate(
                    "wrong_param_name",
                    f"name:{c['tool']}",
                    cause,
                    [Variant(calls, edit, False, "mistake", steps)],
                    i,
                )
            )
    return out


# ---- wrong_param_value ----------------------------------------------------------------

# look-up tables read from the simulators themselves (name -> id/code)
SYMBOL_NAMES = [
    "Apple", "Google", "Tesla", "Microsoft", "Nvidia", "Zeta Corp", "Alpha Tech",
    "Omega Industries", "Quasar Ltd.", "Neptune Systems", "Synex Solutions", "Amazon", "Gorilla",
]  # fmt: skip
AIRPORT_CITIES = [
    "Rivermist", "Stonebrook", "Maplecrest", "Silverpine", "Shadowridge", "London", "Paris",
    "Sunset Valley", "Oakendale", "Willowbend", "Crescent Hollow", "Autumnville", "Pinehaven",
    "Greenfield", "San Francisco", "Los Angeles", "New York", "Chicago", "Boston", "Beijing",
    "Hong Kong", "Rome", "Tokyo",
]  # fmt: skip
ZIP_CITIES = [
    "Rivermist", "Stonebrook", "Maplecrest", "Silverpine", "Shadowridge", "Sunset Valley",
    "Oakendale", "Willowbend", "Crescent Hollow", "Autumnville", "San Francisco",
]  # fmt: skip
CURRENCY_NAMES = {
    "USD": "dollar", "RMB": "yuan", "EUR": "euro", "JPY": "yen", "GBP": "pound",
    "CAD": "canadian dollar", "AUD": "australian dollar", "INR": "rupee", "RUB": "ruble",
    "BRL": "real", "MXN": "peso",
}  # fmt: skip
READ_FILE_TOOLS = {
    "cat": ["file_name"], "grep": ["file_name"], "tail": ["file_name"], "sort": ["file_name"],
    "wc": ["file_name"], "diff": ["file_name1", "file_name2"], "mv": ["source"],
    "cp": ["source"], "rm": ["file_name"],
}  # fmt: skip


def _inverse(ctx: Ctx, tool: str, arg: str, key: str, names: list[str]) -> dict[str, str]:
    if tool not in ctx.env.methods:
        return {}
    inv = {}
    for n in names:
        code = ctx.env.methods[tool](**{arg: n}).get(key)
        if code and code not in inv:
            inv[code] = n
    return inv


def _misspell(name: str) -> str:
    stem, dot, ext = name.rpartition(".")
    if dot and stem:
        swap = {"txt": "md", "pdf": "docx", "md": "txt", "csv": "xlsx", "py": "txt"}
        return f"{stem}.{swap.get(ext, 'txt')}"
    return name + "s"


@dataclass
class ValuePlant:
    rule: str
    param: str
    wrong: Any
    lesson: str
    lookup: Call | None = None  # corrective look-up call for a recovery variant
    recover_lesson: str | None = None


def _value_plants(ctx: Ctx, i: int, c: Call) -> list[ValuePlant]:
    t, p = c["tool"], c["params"]
    plants: list[ValuePlant] = []
    if t == "pressBrakePedal" and p.get("pedalPosition") in (1, 1.0):
        if ctx.later(i, "startEngine"):
            plants.append(
                ValuePlant(
                    "brake_partial",
                    "pedalPosition",
                    0.5,
                    "Before startEngine, press the brake fully: call pressBrakePedal with "
                    "pedalPosition=1.0, not 0.5; a partial press makes startEngine fail.",
                )
            )
        else:
            plants.append(
                ValuePlant(
                    "brake_percent",
                    "pedalPosition",
                    100,
                    "pressBrakePedal takes pedalPosition as a fraction from 0 to 1: pass 1.0 for "
                    "a full press, not 100; out-of-range values fail.",
                )
            )
    if t == "startEngine" and p.get("ignitionMode") == "START":
        plants.append(
            ValuePlant(
                "ignition_case",
                "ignitionMode",
                "start",
                "Call startEngine with ignitionMode='START' in capitals, not 'start'; any other "
                "spelling returns 'Invalid ignition mode'.",
            )
        )
    if t == "lockDoors" and p.get("unlock") is False and ctx.later(i, "startEngine"):
        plants.append(
            ValuePlant(
                "lock_inverted",
                "unlock",
                True,
                "To lock doors before startEngine, call lockDoors with unlock=False, not True; "
                "unlock=True unlocks them and startEngine then fails.",
            )
        )
    if t == "fillFuelTank" and isinstance(p.get("fuelAmount"), (int, float)):
        mentions_liters = "liter" in task_text(ctx.task).lower() or any(
            g["tool"] == "liter_to_gallon" for g in ctx.gold
        )
        if mentions_liters:
            plants.append(
                ValuePlant(
                    "fuel_liters",
                    "fuelAmount",
                    round(p["fuelAmount"] * 3.78541, 2),
                    "fillFuelTank's fuelAmount is in gallons: convert a liter amount with "
                    "liter_to_gallon first, never pass liters directly; the tank holds 50 gallons.",
                )
            )
    if t in ("send_message", "delete_message") and "MessageAPI" in ctx.env.instances:
        inv = {v: k for k, v in ctx.env.instances["MessageAPI"].user_map.items()}
        rid = p.get("receiver_id")
        if rid in inv:
            plants.append(
                ValuePlant(
                    "receiver_name",
                    "receiver_id",
                    inv[rid],
                    f"{t} needs receiver_id as a user ID such as {rid}, looked up with "
                    "get_user_id; passing the person's name fails with 'Receiver ID not found'.",
                    lookup=_call("get_user_id", user=inv[rid]),
                    recover_lesson=f"If {t} fails with 'Receiver ID not found', call get_user_id "
                    f"with the person's name and retry {t} with the returned ID as receiver_id.",
                )
            )
    if t == "message_login" and "MessageAPI" in ctx.env.instances:
        inv = {v: k for k, v in ctx.env.instances["MessageAPI"].user_map.items()}
        uid = p.get("user_id")
        if uid in inv and any(g["tool"] != "message_login" for g in ctx.gold[i + 1 :]):
            plants.append(
                ValuePlant(
                    "login_name",
                    "user_id",
                    inv[uid],
                    f"message_login takes user_id as an ID such as {uid}, looked up with "
                    "get_user_id; passing the user's name does not log in.",
                )
            )
    sym_param = {"get_stock_info": "symbol", "place_order": "symbol"}.get(t)
    if sym_param and p.get(sym_param):
        inv = _inverse(ctx, "get_symbol_by_name", "name", "symbol", SYMBOL_NAMES)
        sym = p[sym_param]
        if sym in inv:
            plants.append(
                ValuePlant(
                    "symbol_name",
                    sym_param,
                    inv[sym],
                    f"{t} takes {sym_param} as a ticker symbol such as {sym}, found with "
                    "get_symbol_by_name; a company name fails as an unknown symbol.",
                    lookup=_call("get_symbol_by_name", name=inv[sym]),
                    recover_lesson=f"If {t} rejects a company name as {sym_param}, call "
                    f"get_symbol_by_name to get the ticker and retry {t} with it.",
                )
            )
    if t == "estimate_distance":
        inv = _inverse(ctx, "get_zipcode_based_on_city", "city", "zipcode", ZIP_CITIES)
        for q in ("cityA", "cityB"):
            if p.get(q) in inv:
                plants.append(
                    ValuePlant(
                        "distance_city",
                        q,
                        inv[p[q]],
                        "estimate_distance takes zip codes for cityA and cityB, looked up with "
                        "get_zipcode_based_on_city; city names return 'distance not found'.",
                        lookup=_call("get_zipcode_based_on_city", city=inv[p[q]]),
                        recover_lesson="If estimate_distance returns 'distance not found', call "
                        "get_zipcode_based_on_city for each city and retry with the zip codes.",
                    )
                )
                break
    if t == "book_flight":
        inv = _inverse(ctx, "get_nearest_airport_by_city", "location", "nearest_airport",
                       AIRPORT_CITIES)  # fmt: skip
        for q in ("travel_from", "travel_to"):
            if p.get(q) in inv:
                plants.append(
                    ValuePlant(
                        "airport_city",
                        q,
                        inv[p[q]],
                        f"book_flight needs IATA airport codes such as {p[q]} for travel_from and "
                        "travel_to; convert city names with get_nearest_airport_by_city first.",
                        lookup=_call("get_nearest_airport_by_city", location=inv[p[q]]),
                        recover_lesson="If book_flight rejects a city as an invalid airport code, "
                        "call get_nearest_airport_by_city and retry book_flight with the code.",
                    )
                )
                break
        d = p.get("travel_date")
        if isinstance(d, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", d):
            y, m, dd = d.split("-")
            plants.append(
                ValuePlant(
                    "date_format",
                    "travel_date",
                    f"{m}/{dd}/{y}",
                    f"Pass book_flight's travel_date as YYYY-MM-DD, e.g. {d}; other formats such "
                    "as MM/DD/YYYY are rejected.",
                )
            )
    if t in ("book_flight", "get_flight_cost") and p.get("travel_class") in (
        "economy", "business", "first",
    ):  # fmt: skip
        plants.append(
            ValuePlant(
                "class_case",
                "travel_class",
                p["travel_class"].capitalize(),
                f"{t}'s travel_class must be lowercase economy, business or first; a capitalized "
                f"value like {p['travel_class'].capitalize()} is rejected.",
            )
        )
    if t == "compute_exchange_rate":
        for q in ("base_currency", "target_currency"):
            if p.get(q) in CURRENCY_NAMES:
                plants.append(
                    ValuePlant(
                        "currency_name",
                        q,
                        CURRENCY_NAMES[p[q]],
                        "compute_exchange_rate takes three-letter codes such as USD or EUR for "
                        "base_currency and target_currency; currency names raise an error.",
                    )
                )
                break
    for q in READ_FILE_TOOLS.get(t, []):
        if isinstance(p.get(q), str) and p[q]:
            plants.append(
                ValuePlant(
                    "file_misspelled",
                    q,
                    _misspell(p[q]),
                    f"Call {t} with {q} set to the exact existing name, e.g. '{p[q]}', checked "
                    "with ls; a guessed or misspelled name fails with 'No such file'.",
                )
            )
            break
    return plants  # fmt: skip


def wrong_param_value(ctx: Ctx) -> list[Candidate]:
    out = []
    for i, c in enumerate(ctx.gold):
        for vp in _value_plants(ctx, i, c):
            bad = _with(c, **{vp.param: vp.wrong})
            calls = [*ctx.gold[:i], bad, *ctx.gold[i + 1 :]]
            steps, state = run_calls(ctx.task, calls)
            if not _differs(ctx, steps, state):
                continue
            right = c["params"][vp.param]
            cause = _cause(
                "wrong_param_value",
                c["tool"],
                param=vp.param,
                wrong_value=vp.wrong,
                right_value=right,
                call_index=i,
                error=None if steps[i]["success"] else _short_error(steps[i]["output"]),
                reference_lesson=vp.lesson,
                must_mention=[c["tool"], vp.param],
            )
            edit = {"start": i, "end": i + 1, "calls": [bad]}
            out.append(
                Candidate(
                    "wrong_param_value",
                    f"value:{vp.rule}",
                    cause,
                    [Variant(calls, edit, False, "mistake", steps)],
                    i,
                )
            )
            if vp.lookup is None or steps[i]["success"]:
                continue
            # the same wrong value, with and without the corrective look-up
            giveup = [*ctx.gold[:i], bad]
            mid = [bad, vp.lookup, c]
            recovered = ctx.gold[:i] + mid + ctx.gold[i + 1 :]
            g_steps, _ = run_calls(ctx.task, giveup)
            r_steps, r_state = run_calls(ctx.task, recovered)
            fails = [n for n, s in enumerate(r_steps) if not s["success"]]
            if (
                fails != [i]
                or r_state != ctx.gold_state
                or str(right) not in r_steps[i + 1]["output"]
            ):
                continue
            nr = _cause(
                "no_recovery",
                c["tool"],
                param=vp.param,
                recovery_tool=vp.lookup["tool"],
                wrong_value=vp.wrong,
                right_value=right,
                call_index=i,
                error=_short_error(steps[i]["output"]),
                reference_lesson=vp.recover_lesson,
                must_mention=[c["tool"], vp.lookup["tool"]],
            )
            out.append(
                Candidate(
                    "no_recovery",
                    f"recover:{vp.lookup['tool']}",
                    nr,
                    [
                        Variant(recovered, {"start": i, "end": i + 1, "calls": mid}, True,
                                "recovers", r_steps),
                        Variant(giveup, {"start": i, "end": len(ctx.gold), "calls": [bad]},
                                False, "gives_up", g_steps),
                    ],
                    i,
                )
            )  # fmt: skip
    return out


# ---- wrong_tool -----------------------------------------------------------------------

# right tool -> (wrong tool, params for it from the right call's params, lesson, condition)
WRONG_TOOLS: dict[str, tuple[str, Callable[[dict], dict], str]] = {
    "mv": ("cp", lambda p: dict(p),
           "To move a file, call mv, not cp; cp leaves the original in place, so later steps "
           "see the wrong files."),
    "cp": ("mv", lambda p: dict(p),
           "To copy a file, call cp, not mv; mv removes the original, so later steps on it "
           "fail."),
    "mkdir": ("touch", lambda p: {"file_name": p["dir_name"]},
              "To create a directory, call mkdir, not touch; touch makes an empty file, and "
              "cd or mv into it then fails."),
    "echo": ("touch", lambda p: {"file_name": p["file_name"]},
             "To write text into a file, call echo with content and file_name, not touch; "
             "touch only creates an empty file."),
    "grep": ("find", lambda p: {"path": ".", "name": p["pattern"]},
             "To search the text inside a file, call grep with file_name and pattern, not "
             "find, which only matches file names."),
    "rm": ("rmdir", lambda p: {"dir_name": p["file_name"]},
           "To delete a file, call rm, not rmdir, which only removes empty directories."),
    "liter_to_gallon": ("gallon_to_liter", lambda p: {"gallon": p["liter"]},
                        "To convert liters to gallons, call liter_to_gallon, not "
                        "gallon_to_liter, which converts the other way."),
    "gallon_to_liter": ("liter_to_gallon", lambda p: {"liter": p["gallon"]},
                        "To convert gallons to liters, call gallon_to_liter, not "
                        "liter_to_gallon, which converts the other way."),
    "pressBrakePedal": ("activateParkingBrake", lambda p: {"mode": "engage"},
                        "Before startEngine, press the brake pedal with pressBrakePedal, not "
                        "activateParkingBrake; the parking brake does not satisfy startEngine."),
    "get_outside_temperature_from_google": (
        "get_outside_temperature_from_weather_com", lambda p: {},
        "To read the outside temperature, call get_outside_temperature_from_google, not "
        "get_outside_temperature_from_weather_com, which returns error 404."),
    "close_ticket": ("resolve_ticket", lambda p: {"ticket_id": p["ticket_id"],
                                                  "resolution": "Closed"},
                     "To close a ticket, call close_ticket, not resolve_ticket; resolve_ticket "
                     "marks it Resolved instead of Closed."),
    "resolve_ticket": ("close_ticket", lambda p: {"ticket_id": p["ticket_id"]},
                       "To resolve a ticket with a resolution note, call resolve_ticket, not "
                       "close_ticket, which closes it without recording the resolution."),
    "book_flight": ("get_flight_cost", lambda p: {k: p[k] for k in (
                        "travel_from", "travel_to", "travel_date", "travel_class")},
                    "To book a flight, call book_flight, not get_flight_cost; get_flight_cost "
                    "only quotes prices and creates no booking_id."),
    "cancel_booking": ("contact_customer_support",
                       lambda p: {"booking_id": p["booking_id"],
                                  "message": "Please cancel this booking."},
                       "To cancel a booking, call cancel_booking with access_token and "
                       "booking_id, not contact_customer_support, which only sends a message."),
    "cancel_order": ("get_order_details", lambda p: {"order_id": p["order_id"]},
                     "To cancel an order, call cancel_order, not get_order_details, which only "
                     "reads the order."),
    "fund_account": ("withdraw_funds", lambda p: {"amount": p["amount"]},
                     "To add money to the trading account, call fund_account, not "
                     "withdraw_funds, which takes money out."),
}  # fmt: skip


def wrong_tool(ctx: Ctx) -> list[Candidate]:
    out = []
    for i, c in enumerate(ctx.gold):
        if c["tool"] not in WRONG_TOOLS:
            continue
        wtool, mapper, lesson = WRONG_TOOLS[c["tool"]]
        if wtool not in ctx.env.methods:
            continue
        try:
            bad = {"tool": wtool, "params": mapper(c["params"])}
        except KeyError:
            continue
        calls = [*ctx.gold[:i], bad, *ctx.gold[i + 1 :]]
        steps, state = run_calls(ctx.task, calls)
        if not _differs(ctx, steps, state):
            continue
        cause = _cause(
            "wrong_tool",
            wtool,
            right_tool=c["tool"],
            call_index=i,
            error=None if steps[i]["success"] else _short_error(steps[i]["output"]),
            reference_lesson=lesson,
            must_mention=[wtool, c["tool"]],
        )
        edit = {"start": i, "end": i + 1, "calls": [bad]}
        out.append(
            Candidate(
                "wrong_tool",
                f"tool:{c['tool']}",
                cause,
                [Variant(calls, edit, False, "mistake", steps)],
                i,
            )
        )
    return out


def candidates_for(task: dict) -> tuple[Ctx, list[Candidate]]:
    env = Env(task)
    gold = [parse_call(s, env) for s in task["gold"]]
    steps, state = run_calls(task, gold)
    ctx = Ctx(task, gold, steps, state, Env(task))
    if len(gold) < 3 or not all(s["success"] for s in steps):
        return ctx, []
    cands = (
        missing_prerequisite(ctx) + wrong_param_value(ctx) + wrong_param_name(ctx) + wrong_tool(ctx)
    )
    for cand in cands:
        cand.cause["polarity"] = "recover" if cand.kind == "no_recovery" else "avoid"
        idents = {
            str(x)
            for v in cand.variants
            for call in gold + v.calls
            for k, val in call["params"].items()
            for x in (k, *(val if isinstance(val, list) else [val]))
        }
        _check_reference(cand.cause, idents)
    return ctx, cands


def _check_reference(cause: dict, idents: set[str]) -> None:
    """A reference lesson must pass the benchmark's own scoring rules."""
    lesson = cause["reference_lesson"]
    catalogue = tool_catalogue()
    params = {p for t in catalogue.values() for p in t["params"]}
    problems = violations(lesson, known_tools=catalogue, known_identifiers=idents | params)
    if len(lesson.split()) > MAX_WORDS or problems or not addresses(lesson, cause):
        raise AssertionError(f"bad reference lesson {lesson!r} for {cause}: {problems}")


# --------------------------------------------------------------------------- selection


def _options(by_kind: dict[str, list[Candidate]]) -> list[tuple[str, ...]]:
    kinds = sorted(k for k in by_kind if k != "no_recovery")
    opts: list[tuple[str, ...]] = [tuple(x) for x in itertools.combinations(kinds, 3)]
    if "no_recovery" in by_kind:
        opts += [("no_recovery", k) for k in kinds]
    return opts


def _family(c: Candidate) -> str:
    """Candidates of one family plant the same mistake; a group holds at most one of them."""
    if c.cause["prerequisite_tool"] or (c.kind == "no_recovery" and not c.cause["param"]):
        return f"prereq:{c.cause['prerequisite_tool'] or c.cause['recovery_tool']}"
    if c.cause["param"] and c.kind in ("wrong_param_value", "no_recovery"):
        return f"value:{c.cause['tool']}:{c.cause['param']}"
    return c.subtype


def _choose(
    option: tuple[str, ...],
    by_kind: dict[str, list[Candidate]],
    sub_count: Counter,
    rng: random.Random,
) -> list[Candidate] | None:
    chosen: list[Candidate] = []
    for kind in option:
        ok = [
            c
            for c in by_kind[kind]
            if _family(c) not in {_family(x) for x in chosen}
            and c.index not in {x.index for x in chosen}
        ]
        if not ok:
            return None
        tools = {x.cause["tool"] for x in chosen}
        keyed = [
            (c.cause["tool"] in tools, sub_count[c.subtype], rng.random(), n)
            for n, c in enumerate(ok)
        ]
        chosen.append(ok[min(keyed)[3]])
    return chosen


def build_benchmark(n_tasks: int = 20, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(trajectory records, reference causes) for ``n_tasks`` groups, deterministic in ``seed``.

    Tasks are visited round-robin over their sets of involved classes (shuffled by the seed);
    each group takes the combination of kinds that keeps the benchmark's kind counts most
    even, and within a kind the least used sub-type, never two candidates planting the same
    mistake (same prerequisite, or same tool and parameter) or touching the same gold call.
    """
    rng = random.Random(seed)
    tasks = load_tasks()
    pools: dict[tuple[str, ...], list[dict]] = {}
    for t in tasks:
        pools.setdefault(tuple(sorted(t["involved_classes"])), []).append(t)
    for key in sorted(pools):
        rng.shuffle(pools[key])
    order: list[dict] = []
    keys = sorted(pools)
    rng.shuffle(keys)
    while any(pools.values()):
        for key in keys:
            if pools[key]:
                order.append(pools[key].pop())

    kind_count: Counter = Counter()
    sub_count: Counter = Counter()
    records: list[dict] = []
    causes: list[dict] = []
    groups = 0
    for task in order:
        if groups >= n_tasks:
            break
        if len(task["gold"]) < 3:
            continue
        ctx, cands = candidates_for(task)
        by_kind: dict[str, list[Candidate]] = {}
        for c in cands:
            by_kind.setdefault(c.kind, []).append(c)
        trng = random.Random(f"{seed}:{task['id']}")
        ranked = sorted(
            _options(by_kind),
            key=lambda o: (
                max(kind_count[k] for k in o),
                sum(kind_count[k] for k in o) / len(o),
                trng.random(),
            ),
        )
        for option in ranked:
            chosen = _choose(option, by_kind, sub_count, trng)
            if chosen:
                break
        else:
            continue
        for c in chosen:
            kind_count[c.kind] += 1
            sub_count[c.subtype] += 1
        records.extend(_group_records(task, ctx, chosen, causes))
        groups += 1
    return records, causes


def _group_records(task: dict, ctx: Ctx, chosen: list[Candidate], causes: list[dict]) -> list[dict]:
    text = task_text(task)
    gid = task["id"]
    recs = [
        {
            "task": text,
            "group": gid,
            "steps": ctx.gold_steps,
            "accepted": True,
            "meta": {"source": "bfcl", "task_id": gid, "variant": "gold", "planted": None},
        }
    ]
    for cand in chosen:
        cause = {"id": f"{gid}/{cand.kind}/{len(causes)}", "group": gid, **cand.cause}
        causes.append(cause)
        planted_base = {k: v for k, v in cause.items() if k not in ("reference_lesson",)}
        for v in cand.variants:
            planted = {**planted_base, "role": v.role, "edit": v.edit}
            recs.append(
                {
                    "task": text,
                    "group": gid,
                    "steps": v.steps,
                    "accepted": v.accepted,
                    "meta": {
                        "source": "bfcl",
                        "task_id": gid,
                        "variant": cand.kind,
                        "planted": planted,
                    },
                }
            )
    return recs


# --------------------------------------------------------------------------- CLI


def write_outputs(out: Path, records: list[dict], causes: list[dict]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "trajectories.jsonl").open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    (out / "reference.json").write_text(
        json.dumps(causes, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8"
    )
    (out / "tools.json").write_text(
        json.dumps(tool_catalogue(), indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.lessons.generate", description=__doc__)
    ap.add_argument("--tasks", type=int, default=20, help="number of groups (BFCL tasks)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True, help="output folder")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    records, causes = build_benchmark(args.tasks, args.seed)
    write_outputs(args.out, records, causes)
    kinds = Counter(c["kind"] for c in causes)
    groups = len({r["group"] for r in records})
    print(
        f"{groups} groups, {len(records)} trajectories, {len(causes)} planted causes "
        f"({', '.join(f'{k}={kinds[k]}' for k in KINDS)}) -> {args.out} "
        f"in {time.perf_counter() - t0:.1f}s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
