"""``agentmem practice run`` and ``practice eval`` on real BFCL v4 multi-turn tasks, as
subprocesses of the real CLI, fully offline: an OpenAI-compatible chat server on
127.0.0.1 plays a model that leaves out ``cd`` on about half the seeds unless a lesson in
its system prompt mentions cd. ``run`` gets mixed groups, learns a lesson; ``eval``
measures it on held-out tasks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentmem import Memory
from agentmem.practice import bfcl

from .test_practice import _cli
from .test_practice_bfcl import _Server

pytestmark = pytest.mark.skipif(not bfcl.available(), reason="bfcl_eval is not installed")

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ("multi_turn_base_0", "multi_turn_base_1", "multi_turn_base_2")
HELDOUT = ("multi_turn_base_3", "multi_turn_base_5", "multi_turn_base_6")


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server("cd-if-told-or-lucky", tasks=TRAIN + HELDOUT)
    yield s
    s.httpd.shutdown()


def test_practice_run_learns_from_bfcl_groups_and_eval_measures_it(
    server: _Server, tmp_path: Path
) -> None:
    db = tmp_path / "lib.db"
    model = ("--model-url", server.url, "--model", "fake-8b")
    ids = ",".join(TRAIN)
    p = _cli("run", "--bfcl", ids, *model, "-G", "4", "--dry-run", db=db, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "3 training task(s), 0 rollout(s) done: 12 would run now" in p.stdout
    p = _cli("run", "--bfcl", ids, *model, "-G", "4", db=db, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    print(p.stdout)  # the run shown in docs/practice.md
    assert "multi_turn_base_0 round 0 #1/4: running" in p.stderr
    assert "multi_turn_base_0: 2/4 passed, group mixed" in p.stdout
    assert "multi_turn_base_1: 2/4 passed, group mixed" in p.stdout
    assert "learning session" in p.stdout
    # every request went to the server, with the seed and the model named
    assert server.requests and {r["model"] for r in server.requests} == {"fake-8b"}
    with Memory.open(db, embedder="hash") as mem:
        runs = mem.trajectories()
        assert {r.group for r in runs} == {f"practice:{t}" for t in TRAIN}
        assert all(r.state_ok is not None for r in runs) and len(runs) >= 12
        lessons = [e for e in mem.experiences() if " cd " in f" {e.text} "]
    assert lessons, "the learned lesson names cd"
    # the same command again runs nothing new
    again = _cli("run", "--bfcl", ids, *model, "-G", "4", "--json", db=db, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["new_rollouts"] == 0
    status = _cli("status", db=db, cwd=tmp_path)
    assert f"bfcl:{ids}, G=4" in status.stdout and "bfcl " + server.url in status.stdout

    before = len(server.requests)
    p = _cli(
        "eval", "--bfcl", ",".join(HELDOUT), *model, "--seeds", "4", "--no-retire", "--json",
        db=db, cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    print(json.dumps(report["overall"], indent=2))
    assert report["pairs"] == len(HELDOUT) * 4
    table = report["overall"]["table"]
    # with the lesson the model never leaves out cd: no pair is lost, some are won
    assert table["losses"] == 0 and table["wins"] >= 3, table
    assert report["lessons"] and report["lessons"][0]["served_in"]
    # a without arm's request holds no system message; a with arm's holds the lesson
    asked = server.requests[before:]
    systems = [m["content"] for r in asked for m in r["messages"] if m["role"] == "system"]
    assert systems and all("cd" in s for s in systems)
    assert any(not any(m["role"] == "system" for m in r["messages"]) for r in asked)


def test_run_refuses_bfcl_tasks_without_a_server_and_unknown_ids(tmp_path: Path) -> None:
    db = tmp_path / "lib.db"
    p = _cli("run", "--bfcl", "multi_turn_base_0", db=db, cwd=tmp_path)
    assert p.returncode == 1 and "need a model server: --model-url" in p.stderr
    p = _cli(
        "run", "--bfcl", "multi_turn_base_99999", "--model-url", "http://127.0.0.1:9/v1",
        db=db, cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 1 and "multi_turn_base_99999" in p.stderr
    p = _cli("run", "--bfcl", " , ", "--model-url", "http://x/v1", db=db, cwd=tmp_path)
    assert p.returncode == 1 and "--bfcl needs task ids" in p.stderr
    f = tmp_path / "tasks.toml"
    f.write_text('[[task]]\nid = "t"\nprompt = "p"\nbfcl = "multi_turn_base_99999"\n')
    p = _cli("run", str(f), "--model-url", "http://127.0.0.1:9/v1", db=db, cwd=tmp_path)
    assert p.returncode == 1 and "task t: BFCL has no task 'multi_turn_base_99999'" in p.stderr
    assert not db.exists()


def test_a_task_file_can_name_bfcl_tasks(server: _Server, tmp_path: Path) -> None:
    f = tmp_path / "tasks.toml"
    f.write_text(
        "".join(f'[[task]]\nid = "t{i}"\nprompt = "BFCL {t}"\nbfcl = "{t}"\n' for i, t in
                enumerate(TRAIN[:2]))
    )  # fmt: skip
    db = tmp_path / "lib.db"
    p = _cli(
        "run", str(f), "--model-url", server.url, "-G", "2", "--rc", "never", "--no-learn",
        db=db, cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "t0: " in p.stdout and "t1: " in p.stdout
    with Memory.open(db, embedder="hash") as mem:
        runs = mem.trajectories()
    assert len(runs) == 4 and {r.group for r in runs} == {"practice:t0", "practice:t1"}
    assert {r.meta["practice"]["bfcl"] for r in runs} == set(TRAIN[:2])


def test_a_bfcl_task_without_a_prompt_takes_its_user_turns(tmp_path: Path) -> None:
    from agentmem.practice.tasks import TaskFileError, load_tasks

    f = tmp_path / "tasks.toml"
    f.write_text('[[task]]\nid = "t"\nbfcl = "multi_turn_base_1"\n')
    (task,) = load_tasks(f)
    assert task.prompt == bfcl.to_task("multi_turn_base_1").prompt and task.bfcl
    f.write_text('[[task]]\nid = "t"\nbfcl = "multi_turn_base_99999"\n')
    with pytest.raises(TaskFileError, match=r"task 1 \(t\): no prompt, and BFCL has no task"):
        load_tasks(f)
