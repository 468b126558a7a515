"""agentmem.practice.bfcl: BFCL v4 multi-turn rollouts in BFCL's own simulators, judged by
its own checker, with a scripted policy and with a chat server over real HTTP."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentmem import Memory
from agentmem.practice import bfcl
from agentmem.practice.bfcl import (
    BfclAgent,
    BfclUnavailable,
    ChatPolicy,
    ScriptedPolicy,
    Slip,
    gold_turns,
    to_task,
)
from agentmem.practice.evaluate import evaluate
from agentmem.practice.types import Agent, Task

pytestmark = pytest.mark.skipif(not bfcl.available(), reason="bfcl_eval is not installed")

# three real tasks: file system (+ Twitter), file system alone, file system again; each
# needs cd before its file calls
TASKS = ["multi_turn_base_0", "multi_turn_base_1", "multi_turn_base_2"]
CD_LESSON = "- Call cd to enter the folder before you run file commands in it"


def test_the_agent_is_a_practice_agent() -> None:
    assert isinstance(BfclAgent(ScriptedPolicy()), Agent)


def test_gold_calls_pass_bfcls_checker_and_are_recorded(tmp_path: Path) -> None:
    db = tmp_path / "lib.db"
    agent = BfclAgent(ScriptedPolicy())
    for tid in TASKS:
        out = agent.run(to_task(tid), None, "", 3, db)
        assert out.success and out.reward == 1.0 and out.error is None, out.meta
        assert out.task_id == tid and out.seed == 3 and out.run_id is not None
    with Memory.open(db, embedder="hash") as mem:
        t = mem.get_trajectory(out.run_id)  # the last one
        gold = [c for turn in gold_turns(TASKS[-1]) for c in turn]
        assert len(t.steps) == len(gold) and t.steps[0].tool == gold[0].split("(")[0]
        assert t.group == f"practice:{TASKS[-1]}" and t.state_ok is True
        assert t.essential_actions is not None and len(t.essential_actions) == len(gold)
        facts = t.meta["practice"]
        assert facts["bfcl"] == TASKS[-1] and facts["seed"] == 3 and facts["guided"] is False
        assert t.task == to_task(TASKS[-1]).prompt


def test_the_scripted_policy_follows_a_lesson_and_fails_without_it(tmp_path: Path) -> None:
    db = tmp_path / "lib.db"
    agent = BfclAgent(ScriptedPolicy((Slip("cd", unless="cd"),)))
    for tid in TASKS:
        without = agent.run(to_task(tid), None, "", 0, db)
        assert not without.success and without.reward == 0.0
        assert "does not match the state" in without.meta["failure"]  # BFCL's checker
        with_lesson = agent.run(to_task(tid), None, CD_LESSON, 0, db)
        assert with_lesson.success, with_lesson.meta
    with Memory.open(db, embedder="hash") as mem:
        runs = mem.trajectories()
        assert [r.state_ok for r in runs] == [False, True] * 3
        assert all(r.steps[0].tool != "cd" for r in runs[::2])
        assert not runs[0].meta["practice"]["guided"] and runs[1].meta["practice"]["guided"]


def test_a_lesson_can_also_cause_the_slip() -> None:
    agent = BfclAgent(ScriptedPolicy((Slip("mkdir", when="archive"),)), record=False)
    task = to_task("multi_turn_base_0")
    assert (
        agent.run(task, None, "- Keep reports in the archive folder", 0, Path("x")).success is False
    )
    assert agent.run(task, None, CD_LESSON, 0, Path("x")).success is True


def test_a_slip_rate_makes_seeds_differ() -> None:
    slip = Slip("cd", unless="cd", rate=0.5)
    hits = [slip.applies("multi_turn_base_0", "", s) for s in range(40)]
    assert 10 < sum(hits) < 30
    assert not any(slip.applies("multi_turn_base_0", "use cd first", s) for s in range(40))
    assert hits == [slip.applies("multi_turn_base_0", "", s) for s in range(40)]  # repeatable


def test_unknown_tasks_are_refused_plainly() -> None:
    with pytest.raises(BfclUnavailable, match="multi_turn_base_9999"):
        to_task("multi_turn_base_9999")
    with pytest.raises(BfclUnavailable, match="not a task of multi_turn_base"):
        to_task("simple_python_1")
    with pytest.raises(BfclUnavailable, match="names no BFCL task"):
        BfclAgent(ScriptedPolicy()).run(Task("x", "do it"), None, "", 0, Path("x"))


# -- a chat server over real HTTP ---------------------------------------------------------


class _Server:
    """An OpenAI-compatible /v1/chat/completions that answers each turn with its gold calls
    (or what ``mode`` says), keeping every request. ``tasks``: the BFCL tasks it may be
    asked (told apart by their first user message; default ``task_id`` alone).

    ``cd-if-told``: leaves out cd unless the first message mentions it; ``cd-if-told-or-
    lucky``: leaves out cd on about half the seeds (a hash of task and seed) unless a
    system message mentions the word cd: a model that a lesson about cd helps, whose G
    rollouts of a task are a mixed group."""

    def __init__(self, mode: str = "gold", task_id: str = TASKS[0], tasks: tuple[str, ...] = ()):
        self.mode = mode
        self.task_id = task_id
        self.tasks = tasks or (task_id,)
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, **body})
                data = json.dumps(outer.answer(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def answer(self, body: dict[str, Any]) -> Any:
        if self.mode == "a-list":
            return [1, 2, 3]
        if self.mode == "no-choices":
            return {"choices": []}
        if self.mode == "deep":
            return json.loads("[" * 500 + "]" * 500)
        if self.mode in ("many-calls", "array-args"):
            args = "[1, 2]" if self.mode == "array-args" else '{"folder": "document"}'
            n = 100 if self.mode == "many-calls" else 1
            call = {"id": "c", "type": "function", "function": {"name": "cd", "arguments": args}}
            return {"choices": [{"message": {"role": "assistant", "tool_calls": [call] * n}}]}
        msgs = body["messages"]
        turn = sum(1 for m in msgs if m["role"] == "user") - 1
        if msgs[-1]["role"] == "tool":  # the turn's calls were made: answer in words
            message: dict[str, Any] = {"role": "assistant", "content": "Done."}
        else:
            task_id = self._task_of(msgs)
            sims = bfcl._parser(task_id)
            calls = [sims.parse(c) for c in gold_turns(task_id)[turn]]
            if self.mode == "cd-if-told" and "cd" not in msgs[0]["content"]:
                calls = [c for c in calls if c.name != "cd"]  # a model that needs the lesson
            if self.mode == "cd-if-told-or-lucky":
                told = any(
                    m["role"] == "system" and re.search(r"\bcd\b", m["content"]) for m in msgs
                )
                if not told and Slip("cd", rate=0.5).applies(task_id, "", body["seed"]):
                    calls = [c for c in calls if c.name != "cd"]
            args = [json.dumps(dict(c.args)) for c in calls]
            if self.mode == "bad-json":
                args = ["{not json" for _ in calls]
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": c.name, "arguments": a},
                    }
                    for i, (c, a) in enumerate(zip(calls, args, strict=True))
                ],
            }
        return {"choices": [{"message": message}], "usage": {"total_tokens": 100}}

    def _task_of(self, msgs: list[dict[str, Any]]) -> str:
        first = next(m["content"] for m in msgs if m["role"] == "user")
        for tid in self.tasks:
            if bfcl._user_turns(bfcl.load_entry(tid))[0][0]["content"] == first:
                return tid
        raise AssertionError(f"no task of {self.tasks} starts with {first[:80]!r}")


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.httpd.shutdown()


def test_a_chat_server_drives_the_simulators(server: _Server, tmp_path: Path) -> None:
    agent = BfclAgent(ChatPolicy(server.url, "qwen3-8b", temperature=0.0))
    out = agent.run(to_task(TASKS[0]), None, CD_LESSON, 7, tmp_path / "lib.db")
    assert out.success, out.meta
    turns = len(gold_turns(TASKS[0]))
    assert len(server.requests) == 2 * turns and out.tokens == 100 * 2 * turns
    first = server.requests[0]
    assert first["path"] == "/v1/chat/completions" and first["model"] == "qwen3-8b"
    assert first["seed"] == 7 and first["temperature"] == 0.0
    assert first["messages"][0] == {"role": "system", "content": CD_LESSON}
    names = {t["function"]["name"] for t in first["tools"]}
    assert {"cd", "mv", "mkdir", "post_tweet"} <= names
    # BFCL's "dict" parameters are offered as JSON Schema objects
    assert all(t["function"]["parameters"]["type"] == "object" for t in first["tools"])
    # the results went back to the model with the ids of its calls
    later = server.requests[1]["messages"]
    assert later[-1]["role"] == "tool" and later[-1]["tool_call_id"].startswith("call_0_0_")


def test_bad_answers_and_a_dead_server_are_failed_rollouts_not_crashes(tmp_path: Path) -> None:
    bad = _Server("bad-json")
    try:
        out = BfclAgent(ChatPolicy(bad.url, "m")).run(
            to_task(TASKS[0]), None, "", 0, tmp_path / "l.db"
        )
    finally:
        bad.httpd.shutdown()
    assert not out.success and out.error is None and "turn 0" in out.meta["failure"]
    with Memory.open(tmp_path / "l.db", embedder="hash") as mem:
        (run,) = mem.trajectories()
        assert "not JSON" in run.steps[0].output and run.steps[0].success is False
    dead = BfclAgent(ChatPolicy("http://127.0.0.1:9/v1", "m", timeout_s=2.0))
    out = dead.run(to_task(TASKS[0]), None, "", 0, tmp_path / "l.db")
    assert not out.success and out.error and "chat server" in out.error


# -- the held-out effect on real BFCL tasks --------------------------------------------------


def test_the_held_out_effect_of_a_cd_lesson_on_bfcl(tmp_path: Path) -> None:
    ids = [i for i in bfcl.task_ids() if any(c.startswith("cd(") for t in gold_turns(i) for c in t)]
    tasks = [to_task(i, "heldout") for i in ids[:6]]
    db = tmp_path / "lib.db"
    agent = BfclAgent(ScriptedPolicy((Slip("cd", unless="cd"),)))
    with Memory.open(db, embedder="hash") as mem:
        (lesson,) = mem.add_many(
            ["Call cd to enter the directory before file commands like mv or cat"]
        )
        report = evaluate(mem, tasks, lambda t, g, s: agent.run(t, None, g, s, db), seeds=[0], k=3)
        groups = [r.group for r in mem.trajectories()]
    # held-out runs are never a learning group: each is a group of its own
    assert len(groups) == 12 == len(set(groups))
    assert all(g.startswith("practice-heldout:multi_turn_base_") for g in groups)
    served = [p for p in report.pairs if p.lessons]
    assert len(served) >= 4, [p.task_id for p in report.pairs]
    assert all(p.with_lessons.success and not p.without.success for p in served)
    assert report.overall.table.wins == len(served)
    assert report.lessons[0].id == lesson and len(report.lessons[0].pairs) == len(served)


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("a-list", "not a JSON object"),
        ("no-choices", "no choices[0].message"),
        ("deep", "nests too deeply"),
        ("many-calls", "more than 64 calls in one step"),
        ("array-args", "arguments are not an object"),
    ],
)
def test_hostile_server_answers_fail_the_rollout_plainly(
    mode: str, said: str, tmp_path: Path
) -> None:
    s = _Server(mode)
    try:
        out = BfclAgent(ChatPolicy(s.url, "m")).run(
            to_task(TASKS[0]), None, "", 0, tmp_path / "l.db"
        )
    finally:
        s.httpd.shutdown()
    assert not out.success and out.run_id is not None  # recorded, as a failure
    with Memory.open(tmp_path / "l.db", embedder="hash") as mem:
        run = mem.get_trajectory(out.run_id)
    told = (out.error or "") + out.meta.get("failure", "") + "".join(x.output for x in run.steps)
    assert said in told
