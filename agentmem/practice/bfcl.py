"""An :class:`~agentmem.practice.types.Agent` for BFCL v4 multi-turn tasks, fully offline.

A rollout runs the task's user turns against fresh instances of BFCL's own executable
tool simulators (``bfcl_eval``'s ``func_source_code``, loaded from the task's
``initial_config``), driven by a :class:`Policy`:

* :class:`ChatPolicy`: an OpenAI-compatible chat server (llama-server, Ollama, vLLM:
  ``POST {base_url}/chat/completions`` with ``tools``), the model choosing the calls;
* :class:`ScriptedPolicy`: for tests and benchmarks, it plays the task's gold calls but
  makes a planted :class:`Slip` (leaves out a tool's calls) unless, or when, its
  guidance holds a given phrase: a policy that follows a lesson it is given.

It is judged as BFCL judges it: after each turn the gold calls of that turn run on a
second set of simulators, and ``bfcl_eval``'s own ``state_checker`` (the simulators'
public state must match) and ``response_checker`` (every gold result must be among the
model's results so far) must pass, and a turn with gold calls must have calls of its
own. The first failing turn ends the rollout (its outcome cannot change, and the rest
costs tokens). Nothing is ``eval``-ed: calls go to the simulators' public methods by
name, and gold calls are parsed with :mod:`ast`.

Each rollout is recorded in the library (:meth:`Memory.record`): its calls as steps, the
task's prompt, group :func:`agentmem.practice.record.group_key` (``practice:<task
id>``; a held-out run: a group of its own, never learned from as a group), ``state_ok``
and the verdict from the checker,
``essential_actions`` from the gold calls (the paper's R_state * R_action), and in
``meta.practice`` the task, split, BFCL id, seed, whether it had guidance, and why it
failed.

``bfcl_eval`` is installed without its dependencies (``pip install --no-deps
'bfcl-eval==2026.3.23'``); only its data, its simulators and its checker are used.
Categories :data:`CATEGORIES` (the others need functions added mid-task or expect
no call).
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import importlib
import importlib.util
import inspect
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from ..errors import AgentMemError
from ..jsonsafe import JSONInputError, loads
from ..records import MAX_TOOL_NAME
from .record import group_key
from .types import Outcome, Split, Task

__all__ = [
    "CATEGORIES",
    "BfclAgent",
    "BfclUnavailable",
    "Call",
    "ChatPolicy",
    "Moment",
    "Policy",
    "ScriptedPolicy",
    "Simulators",
    "Slip",
    "available",
    "gold_turns",
    "load_entry",
    "parse_ids",
    "task_ids",
    "to_task",
    "tools_for",
]

#: The multi-turn categories this agent runs.
CATEGORIES = ("multi_turn_base", "multi_turn_long_context")
#: Calls one turn may make before it is stopped.
MAX_STEPS = 20
#: The longest tool output kept in a recorded step and sent back to the model.
MAX_OUTPUT = 4000
#: The most calls one step may make; more and the turn fails.
MAX_CALLS = 64
#: The largest answer read from a chat server.
MAX_ANSWER = 16 * 2**20


class BfclUnavailable(AgentMemError, RuntimeError):
    """bfcl_eval is not installed, or a task id is not one of its multi-turn tasks."""


def available() -> bool:
    """Whether ``bfcl_eval`` (its data and simulators) can be imported."""
    return importlib.util.find_spec("bfcl_eval") is not None


def _data_dir() -> Path:
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise BfclUnavailable(
            "bfcl_eval is not installed: pip install --no-deps 'bfcl-eval==2026.3.23'"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@functools.lru_cache(maxsize=len(CATEGORIES))
def _category(category: str) -> tuple[dict[str, dict[str, Any]], dict[str, list[list[str]]]]:
    data = _data_dir()
    entries = {e["id"]: e for e in _read_jsonl(data / f"BFCL_v4_{category}.json")}
    answers = {
        a["id"]: a["ground_truth"]
        for a in _read_jsonl(data / "possible_answer" / f"BFCL_v4_{category}.json")
    }
    return entries, answers


def _category_of(task_id: str) -> str:
    category = task_id.rsplit("_", 1)[0]
    if category not in CATEGORIES:
        raise BfclUnavailable(
            f"{task_id!r} is not a task of {', '.join(CATEGORIES)} (for example multi_turn_base_12)"
        )
    return category


def load_entry(task_id: str) -> dict[str, Any]:
    """BFCL's entry for ``task_id`` (question turns, initial_config, involved_classes)."""
    entries, _ = _category(_category_of(task_id))
    if task_id not in entries:
        raise BfclUnavailable(f"BFCL has no task {task_id!r}")
    return entries[task_id]


def gold_turns(task_id: str) -> list[list[str]]:
    """The gold calls of ``task_id``, one list of call strings per user turn."""
    _, answers = _category(_category_of(task_id))
    if task_id not in answers:
        raise BfclUnavailable(f"BFCL has no gold answer for {task_id!r}")
    return answers[task_id]


def task_ids(category: str = "multi_turn_base") -> list[str]:
    """Every task id of ``category`` that this agent can run, in BFCL's order."""
    if category not in CATEGORIES:
        raise BfclUnavailable(f"category must be one of {', '.join(CATEGORIES)}")
    entries, answers = _category(category)
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    return [
        i
        for i, e in entries.items()
        if i in answers and set(e["involved_classes"]) <= set(CLASS_FILE_PATH_MAPPING)
    ]


def _user_turns(entry: Mapping[str, Any]) -> list[list[dict[str, str]]]:
    return [[m for m in turn if m.get("role") == "user"] for turn in entry["question"]]


def parse_ids(text: str) -> list[str]:
    """The task ids of ``--bfcl``'s comma-separated ``text`` (each checked: an unknown id
    raises :class:`BfclUnavailable`), in order, each once."""
    ids = list(dict.fromkeys(i.strip() for i in text.split(",") if i.strip()))
    if not ids:
        raise BfclUnavailable("--bfcl needs task ids, such as multi_turn_base_3")
    for i in ids:
        load_entry(i)
    return ids


def to_task(task_id: str, split: Split = "train") -> Task:
    """A practice :class:`Task` for BFCL task ``task_id``: its user turns as the prompt."""
    entry = load_entry(task_id)
    prompt = "\n".join(
        m["content"].strip() for turn in _user_turns(entry) for m in turn if m.get("content")
    )
    return Task(id=task_id, prompt=prompt, split=split, bfcl=task_id)


# -- the tools a model is offered ---------------------------------------------------

_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None}


def _schema(node: Any) -> Any:
    """A BFCL parameter schema in JSON Schema's words (``dict`` -> ``object``...)."""
    if isinstance(node, list):
        return [_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k == "type" and isinstance(v, str):
            mapped = _TYPES.get(v, v)
            if mapped is not None:
                out[k] = mapped
        elif k in ("properties",) and isinstance(v, dict):
            out[k] = {name: _schema(p) for name, p in v.items()}
        else:
            out[k] = _schema(v)
    return out


def tools_for(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The OpenAI ``tools`` offered for ``entry``: the function docs of its classes,
    less its ``excluded_function``."""
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    docs = _data_dir() / "multi_turn_func_doc"
    excluded = set(entry.get("excluded_function") or ())
    tools = []
    for cls in entry["involved_classes"]:
        for d in _read_jsonl(docs / MULTI_TURN_FUNC_DOC_FILE_MAPPING[cls]):
            if d["name"] in excluded:
                continue
            fn = {
                "name": d["name"],
                "description": d.get("description", ""),
                "parameters": _schema(d.get("parameters", {"type": "dict", "properties": {}})),
            }
            tools.append({"type": "function", "function": fn})
    return tools


# -- the simulators -----------------------------------------------------------------


@attrs.frozen
class Call:
    """One tool call: the function's name and its arguments."""

    name: str
    args: Mapping[str, Any] = attrs.field(factory=dict)
    #: Why the call could not be read (arguments that were not a JSON object...).
    problem: str | None = None

    def text(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"{self.name}({args})"


class Simulators:
    """Fresh instances of a task's BFCL classes, and their public methods by name (the
    last class's method wins a shared name, as in BFCL)."""

    def __init__(self, entry: Mapping[str, Any]):
        from bfcl_eval.constants.executable_backend_config import (
            CLASS_FILE_PATH_MAPPING,
            STATELESS_CLASSES,
        )

        long_context = "long_context" in str(entry["id"])
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}
        for name in entry["involved_classes"]:
            inst = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[name]), name)()
            if name not in STATELESS_CLASSES:
                config = copy.deepcopy(entry["initial_config"].get(name, {}))
                inst._load_scenario(config, long_context=long_context)
            self.instances[name] = inst
            for mname, meth in inspect.getmembers(inst, predicate=inspect.ismethod):
                if not mname.startswith("_"):
                    self.methods[mname] = meth

    def call(self, call: Call) -> tuple[str, bool]:
        """Run ``call``: its result as BFCL writes it, and whether it succeeded."""
        if call.problem:
            return f"Error during execution: {call.problem}", False
        meth = self.methods.get(call.name)
        if meth is None:
            return f"Error during execution: no function named {call.name!r}", False
        try:
            result = meth(**copy.deepcopy(dict(call.args)))
        except Exception as e:  # the simulator raised: BFCL reports it the same way
            return f"Error during execution: {e}", False
        if isinstance(result, str):
            text = result
        elif isinstance(result, dict):
            try:
                text = json.dumps(result)
            except (TypeError, ValueError):
                text = str(result)
        else:
            text = str(result)
        return text, not _is_error(result)

    def parse(self, text: str) -> Call:
        """A gold call string (``"cd(folder='document')"``, positional arguments named
        from the method's signature) as a :class:`Call`."""
        node = ast.parse(text.strip(), mode="eval").body
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            raise ValueError(f"not a plain call: {text!r}")
        name = node.func.id
        args: dict[str, Any] = {}
        if node.args:
            params = list(inspect.signature(self.methods[name]).parameters)
            for pname, arg in zip(params, node.args, strict=False):
                args[pname] = ast.literal_eval(arg)
        for kw in node.keywords:
            if kw.arg is not None:
                args[kw.arg] = ast.literal_eval(kw.value)
        return Call(name, args)


def _is_error(result: Any) -> bool:
    if isinstance(result, dict):
        return "error" in result
    if isinstance(result, str):
        return result.startswith("Error")
    return False


# -- policies -----------------------------------------------------------------------


@attrs.frozen
class Moment:
    """What a policy sees when it acts: the chat so far (the guidance as a system
    message, the user turns, its calls and their results), the tools, and where it is."""

    task_id: str
    turn: int
    step: int
    seed: int
    guidance: str
    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...]


class Policy(Protocol):
    """Chooses the next calls; none ends the turn."""

    @property
    def name(self) -> str:
        """What the policy is called in the agent's name (``bfcl-<name>``)."""
        ...

    def act(self, moment: Moment) -> tuple[Sequence[Call], int | None]:
        """The calls to make now (empty: the turn is answered), and the tokens spent
        (None when unknown). Raises only when it cannot act at all (a dead server)."""
        ...


def _mentions(text: str, phrase: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text, re.IGNORECASE) is not None


@attrs.frozen
class Slip:
    """A mistake :class:`ScriptedPolicy` makes: it leaves out every call of ``tool`` on
    a ``rate`` share of seeds, only ``when`` its guidance mentions that phrase (always
    when None), and never when it mentions ``unless``."""

    tool: str
    unless: str | None = None
    when: str | None = None
    rate: float = 1.0

    def applies(self, task_id: str, guidance: str, seed: int) -> bool:
        if self.when is not None and not _mentions(guidance, self.when):
            return False
        if self.unless is not None and _mentions(guidance, self.unless):
            return False
        h = hashlib.sha256(f"{task_id}:{seed}:{self.tool}".encode()).digest()
        return int.from_bytes(h[:8], "big") / 2**64 < self.rate


@attrs.frozen
class ScriptedPolicy:
    """Plays each turn's gold calls at once, less the calls its :class:`Slip`\\ s drop."""

    slips: tuple[Slip, ...] = ()
    name: str = "scripted"

    def act(self, moment: Moment) -> tuple[Sequence[Call], int | None]:
        if moment.step > 0:
            return (), None
        sims = _parser(moment.task_id)
        calls = [sims.parse(c) for c in gold_turns(moment.task_id)[moment.turn]]
        dropped = {
            s.tool for s in self.slips if s.applies(moment.task_id, moment.guidance, moment.seed)
        }
        return [c for c in calls if c.name not in dropped], None


@functools.lru_cache(maxsize=64)
def _parser(task_id: str) -> Simulators:
    """Simulators used only to read gold calls' signatures (never called)."""
    return Simulators(load_entry(task_id))


@attrs.frozen
class ChatPolicy:
    """An OpenAI-compatible chat server choosing the calls (``base_url`` ends in ``/v1``,
    as llama-server's and Ollama's do). ``seed`` is sent with every request."""

    base_url: str
    model: str
    temperature: float = 0.7
    max_tokens: int = 1024
    timeout_s: float = 300.0
    api_key: str | None = None
    name: str = "chat"

    def act(self, moment: Moment) -> tuple[Sequence[Call], int | None]:
        body = {
            "model": self.model,
            "messages": list(moment.messages),
            "tools": list(moment.tools),
            "tool_choice": "auto",
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": moment.seed,
        }
        url = self.base_url.rstrip("/") + "/chat/completions"
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                raw = r.read(MAX_ANSWER + 1)
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise ConnectionError(f"the chat server at {url} failed: {e}") from e
        try:
            answer = loads(raw, what="the chat server's answer", max_bytes=MAX_ANSWER)
        except JSONInputError as e:
            raise ConnectionError(str(e)) from e
        if not isinstance(answer, dict):
            raise ConnectionError("the chat server's answer is not a JSON object")
        usage = answer.get("usage") or {}
        tokens = usage.get("total_tokens") if isinstance(usage, dict) else None
        choices = answer.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict):
            raise ConnectionError("the chat server's answer has no choices[0].message")
        wanted = message.get("tool_calls") or []
        if not isinstance(wanted, list):
            raise ConnectionError("the chat server's tool_calls is not a list")
        calls = [_read_call(tc) for tc in wanted[: MAX_CALLS + 1]]
        return calls, tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None


def _read_call(tc: Any) -> Call:
    fn = tc.get("function") if isinstance(tc, dict) else None
    fn = fn if isinstance(fn, dict) else {}
    name = str(fn.get("name") or "")[:MAX_TOOL_NAME]
    raw = fn.get("arguments")
    try:
        args = loads(raw, what="the arguments") if isinstance(raw, str) else raw
    except JSONInputError:
        return Call(name, {}, problem=f"the arguments are not JSON: {str(raw)[:200]}")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return Call(name, {}, problem="the arguments are not an object")
    return Call(name, args)


# -- the agent ----------------------------------------------------------------------


@attrs.frozen
class _Turn:
    """How one turn went: the calls, and why it failed (None: it passed the checks)."""

    steps: list[dict[str, Any]]
    failure: str | None
    tokens: int | None


class BfclAgent:
    """Runs one BFCL multi-turn rollout with ``policy`` (see the module doc)."""

    def __init__(self, policy: Policy, *, max_steps: int = MAX_STEPS, record: bool = True):
        self.policy = policy
        self.max_steps = max_steps
        self.record = record
        self.name = f"bfcl-{policy.name}"

    def run(
        self, task: Task, workspace: Path | None, guidance: str, seed: int, db: Path
    ) -> Outcome:
        """Run ``task`` (its ``bfcl`` id) once; never raises for a failed rollout."""
        if not task.bfcl:
            raise BfclUnavailable(f"task {task.id!r} names no BFCL task (its 'bfcl' field)")
        entry = load_entry(task.bfcl)
        gold = gold_turns(task.bfcl)
        start = time.monotonic()
        steps: list[dict[str, Any]] = []
        tokens: int | None = None
        failure: str | None = None
        error: str | None = None
        try:
            failure, tokens = self._play(entry, gold, guidance, seed, steps)
        except Exception as e:  # a dead server, a simulator bug: a failed rollout
            error = f"{type(e).__name__}: {e}"
            failure = f"the rollout stopped: {error}"
        ok = failure is None
        run_id, why = self._safe_record(task, entry, gold, guidance, seed, steps, ok, failure, db)
        meta = {k: v for k, v in (("failure", failure), ("recording", why)) if v}
        return Outcome(
            task_id=task.id,
            seed=seed,
            reward=1.0 if ok else 0.0,
            success=ok,
            wall_s=time.monotonic() - start,
            run_id=run_id,
            tokens=tokens,
            error=error,
            meta=meta,
        )

    def _play(
        self,
        entry: Mapping[str, Any],
        gold: list[list[str]],
        guidance: str,
        seed: int,
        steps: list[dict[str, Any]],
    ) -> tuple[str | None, int | None]:
        """Every turn until one fails: (why it failed or None, tokens spent)."""
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import (
            response_checker,
            state_checker,
        )

        sims, truth = Simulators(entry), Simulators(entry)
        tools = tuple(tools_for(entry))
        messages: list[dict[str, Any]] = (
            [{"role": "system", "content": guidance}] if guidance else []
        )
        results: list[str] = []
        spent: int | None = None
        for turn, users in enumerate(_user_turns(entry)):
            messages.extend({"role": "user", "content": m["content"]} for m in users)
            t = self._turn(entry, turn, seed, guidance, messages, tools, sims, results)
            steps.extend(t.steps)
            if t.tokens is not None:
                spent = (spent or 0) + t.tokens
            if t.failure:
                return t.failure, spent
            expected = [truth.call(truth.parse(c))[0] for c in gold[turn]]
            if gold[turn] and not t.steps:
                return f"turn {turn}: no call where the task needed some", spent
            if not gold[turn]:
                continue
            state = state_checker(sims.instances, truth.instances)
            if not state["valid"]:
                return f"turn {turn}: {state['error_message']}", spent
            answer = response_checker(results, expected, turn)
            if not answer["valid"]:
                return f"turn {turn}: {answer['error_message']}", spent
        return None, spent

    def _turn(
        self,
        entry: Mapping[str, Any],
        turn: int,
        seed: int,
        guidance: str,
        messages: list[dict[str, Any]],
        tools: tuple[dict[str, Any], ...],
        sims: Simulators,
        results: list[str],
    ) -> _Turn:
        steps: list[dict[str, Any]] = []
        spent: int | None = None
        for step in range(self.max_steps + 1):
            moment = Moment(str(entry["id"]), turn, step, seed, guidance, tuple(messages), tools)
            calls, tokens = self.policy.act(moment)
            if tokens is not None:
                spent = (spent or 0) + tokens
            if not calls:
                return _Turn(steps, None, spent)
            if step == self.max_steps:
                return _Turn(steps, f"turn {turn}: more than {self.max_steps} steps", spent)
            if len(calls) > MAX_CALLS:
                return _Turn(steps, f"turn {turn}: more than {MAX_CALLS} calls in one step", spent)
            ids = [f"call_{turn}_{step}_{i}" for i in range(len(calls))]
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": cid,
                            "type": "function",
                            "function": {"name": c.name, "arguments": json.dumps(dict(c.args))},
                        }
                        for cid, c in zip(ids, calls, strict=True)
                    ],
                }
            )
            for cid, c in zip(ids, calls, strict=True):
                out, ok = sims.call(c)
                results.append(out)
                out = out[:MAX_OUTPUT]
                messages.append({"role": "tool", "tool_call_id": cid, "content": out})
                name = (c.name or "?")[:MAX_TOOL_NAME]
                steps.append({"tool": name, "params": dict(c.args), "output": out, "success": ok})
        return _Turn(steps, None, spent)  # pragma: no cover - the loop always returns

    def _record(
        self,
        task: Task,
        entry: Mapping[str, Any],
        gold: list[list[str]],
        guidance: str,
        seed: int,
        steps: list[dict[str, Any]],
        ok: bool,
        failure: str | None,
        db: Path,
    ) -> int | None:
        """The rollout as a trajectory in the library; None when it is not recorded."""
        if not self.record:
            return None
        from ..memory import Memory
        from ..records import Step, Trajectory

        parser = _parser(str(entry["id"]))
        actions = [
            {"name": c.name, "kwargs": dict(c.args)}
            for c in (parser.parse(s) for turn in gold for s in turn)
        ]
        facts: dict[str, Any] = {
            "task": task.id,
            "split": task.split,
            "bfcl": str(entry["id"]),
            "seed": seed,
            "guided": bool(guidance),
            "agent": self.name,
        }
        if failure:
            facts["failure"] = failure[:500]
        t = Trajectory(
            task=task.prompt,
            steps=[Step(s["tool"], s["params"], s["output"], s["success"]) for s in steps],
            group=group_key(task, seed, bool(guidance)),
            accepted=ok,
            meta={"practice": facts},
            state_ok=ok,
            essential_actions=actions,
            source="practice",
        )
        with Memory.open(db) as mem:
            return mem.record(t)

    def _safe_record(self, *args: Any) -> tuple[int | None, str | None]:
        """:meth:`_record`, or why the rollout could not be recorded (it still counts)."""
        try:
            return self._record(*args), None
        except (AgentMemError, ValueError, TypeError) as e:
            return None, f"not recorded: {e}"
