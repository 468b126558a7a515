"""``agentmem practice`` (issue 32): tasks, workspaces, the CLI agent's argv, the plan of
rounds, the loop with a fake agent (RC round, one learning session, resume, budget), and
the CLI as a subprocess. The real Claude Code and Codex runs are in
``tests/test_practice_clients.py``."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from agentmem import Memory, Step
from agentmem.practice.cli_agent import CliAgent, parse_usage, render
from agentmem.practice.record import attach, group_key
from agentmem.practice.runner import Budget, next_rollouts, practice, rollout_fn
from agentmem.practice.tasks import TaskFileError, heldout_by_hash, load_tasks
from agentmem.practice.types import Outcome, Task
from agentmem.practice.workspace import workspace
from agentmem.rc import HIGH, INSTRUCTIONS, LOW

ROOT = Path(__file__).resolve().parent.parent


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository whose notes are under docs/ (not where a hasty agent looks)."""
    r = tmp_path / "repo"
    (r / "docs").mkdir(parents=True)
    (r / "docs" / "notes.txt").write_text("the notes\n")
    _git(r, "init", "-q")
    _git(r, "add", ".")
    _git(r, "commit", "-q", "-m", "notes")
    return r


CHECK = "cmp -s SUMMARY.txt docs/notes.txt"


def _tasks_file(tmp_path: Path, repo: Path, extra: str = "") -> Path:
    f = tmp_path / "tasks.toml"
    f.write_text(
        f"""
[[task]]
id = "notes"
prompt = "Copy the project notes into SUMMARY.txt"
repo = "{repo}"
check = "{CHECK}"
timeout = 60
{extra}
"""
    )
    return f


# -- tasks -------------------------------------------------------------------------------------


def test_tasks_are_read_with_the_commit_resolved(tmp_path: Path, repo: Path):
    (tasks,) = load_tasks(_tasks_file(tmp_path, repo))
    assert tasks.id == "notes" and tasks.split == "train" and tasks.timeout_s == 60
    assert tasks.repo == repo.resolve() and tasks.commit == _git(repo, "rev-parse", "HEAD")
    assert tasks.check == CHECK


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[[task]]\nid = "a"\nprompt = "p"\nrepo = "."\ncheck = "true"\ncolour = 1', "colour"),
        ('[[task]]\nid = "a b"\nprompt = "p"\nrepo = "."\ncheck = "true"', "id must be"),
        ('[[task]]\nid = "a"\nprompt = " "\nrepo = "."\ncheck = "true"', "prompt must be"),
        ('[[task]]\nid = "a"\nprompt = "p"\nrepo = "."', "needs repo"),
        ('[[task]]\nid = "a"\nprompt = "p"\nrepo = "nowhere"\ncheck = "true"', "is not a folder"),
        ('[[task]]\nid = "a"\nprompt = "p"\nrepo = "."\ncheck = "x"\nsplit = "test"', "split"),
        ('[[task]]\nid = "a"\nprompt = "p"\nrepo = "."\ncheck = "x"\ntimeout = -1', "timeout"),
        ('[[task]]\nid = "a"\nprompt = "p"\nrepo = "."\ncheck = "x"\ncommit = "HEAD"', "not a git"),
        (
            "[[task]]\nid = 'a'\nprompt = 'p'\nbfcl = 'x'\n[[task]]\nid = 'a'\nprompt = 'q'\n"
            "bfcl = 'y'",
            "also task 1",
        ),
        ("id = 'a'", "unknown top-level"),
        ("[[task]\nid=", "not valid TOML"),
    ],
)
def test_a_bad_task_file_is_refused_with_a_clear_message(tmp_path: Path, body: str, message: str):
    f = tmp_path / "t.toml"
    f.write_text(body)
    with pytest.raises(TaskFileError, match=message):
        load_tasks(f)


def test_a_commit_git_does_not_know_is_refused(tmp_path: Path, repo: Path):
    f = _tasks_file(tmp_path, repo, 'commit = "no-such-branch"')
    with pytest.raises(TaskFileError, match="has no commit 'no-such-branch'"):
        load_tasks(f)


def test_heldout_split_by_a_stable_hash(tmp_path: Path):
    f = tmp_path / "t.toml"
    ids = [f"t{i}" for i in range(200)]
    f.write_text(
        "".join(f'[[task]]\nid = "{i}"\nprompt = "p"\nbfcl = "b"\n' for i in ids)
        + '[[task]]\nid = "pinned"\nprompt = "p"\nbfcl = "b"\nsplit = "train"\n'
    )
    tasks = load_tasks(f, heldout=0.25)
    held = {t.id for t in tasks if t.split == "heldout"}
    assert held == {i for i in ids if heldout_by_hash(i, 0.25)}  # the same every time
    assert 30 <= len(held) <= 70 and "pinned" not in held
    assert all(t.split == "train" for t in load_tasks(f))
    with pytest.raises(TaskFileError, match="fraction"):
        load_tasks(f, heldout=1.5)


# -- workspaces --------------------------------------------------------------------------------


def test_each_rollout_gets_a_fresh_worktree_removed_afterwards(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (task,) = load_tasks(_tasks_file(tmp_path, repo))
    with workspace(task) as a, workspace(task) as b:
        assert a is not None and b is not None and a != b
        (a / "SUMMARY.txt").write_text("mine")
        assert not (b / "SUMMARY.txt").exists() and (b / "docs" / "notes.txt").exists()
        assert _git(a, "rev-parse", "HEAD") == task.commit
    assert not a.exists() and not b.exists()
    assert _git(repo, "worktree", "list").count("\n") == 0  # only the main worktree
    assert _git(repo, "status", "--porcelain") == ""
    with workspace(task, keep=True) as kept:
        pass
    assert kept is not None and (kept / "docs" / "notes.txt").exists()


def test_a_folder_task_is_copied(tmp_path: Path):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "f.txt").write_text("x")
    task = Task("t", "p", repo=folder, check="true")
    with workspace(task) as ws:
        assert ws is not None and ws != folder and (ws / "f.txt").read_text() == "x"
        (ws / "f.txt").write_text("changed")
    assert (folder / "f.txt").read_text() == "x" and not ws.exists()


# -- the command-line agent --------------------------------------------------------------------


def test_the_prompt_is_one_argument_never_read_by_a_shell(tmp_path: Path):
    prompt = 'it\'s "quoted" $(touch pwned) ; rm -rf / {workspace} `id`\nline two'
    argv = render("claude -p {prompt} --cwd={workspace}", prompt, tmp_path)
    assert argv == ["claude", "-p", prompt, f"--cwd={tmp_path}"]
    with pytest.raises(Exception, match="no \\{prompt\\} placeholder"):
        render("claude -p", "x", tmp_path)
    with pytest.raises(Exception, match="cannot be split"):
        render("claude -p '{prompt}", "x", tmp_path)
    assert CliAgent("python -m tests.scripted_model run -- /opt/claude -p {prompt}").client == (
        "claude-code"
    )
    assert CliAgent("codex exec {prompt}").client == "codex"
    assert CliAgent("my-agent {prompt}").client is None


def test_a_script_agent_runs_in_its_workspace_and_is_checked(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
):
    """A shell-free run: the prompt with shell syntax reaches the script as one argument,
    nothing of it is executed; the check judges the workspace; the run is recorded (a stub:
    no client transcript) in the practice group with its reward."""
    (task,) = load_tasks(_tasks_file(tmp_path, repo))
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    script = tmp_path / "agent.py"
    script.write_text(
        "import sys, shutil, pathlib\n"
        "pathlib.Path('argv.json').write_text(__import__('json').dumps(sys.argv[1:]))\n"
        "if 'docs/notes.txt' in sys.argv[1]:\n"
        "    shutil.copy('docs/notes.txt', 'SUMMARY.txt')\n"
    )
    agent = CliAgent(f"{sys.executable} {script} {{prompt}}")
    db = tmp_path / "lib.db"
    rollout = rollout_fn(agent, db, keep=True)
    hostile = "$(touch pwned)"
    good = rollout(task, f"The notes are at docs/notes.txt. {hostile}", 7)
    bad = rollout(task, "", 8)
    assert good.success and good.reward == 1.0 and not bad.success and bad.error is None
    with Memory.open(db) as mem:
        runs = {t.id: t for t in mem.trajectories()}
        assert set(runs) == {good.run_id, bad.run_id}
        for o in (good, bad):
            t = runs[o.run_id]
            assert t.task == task.prompt and t.meta["practice"]["seed"] == o.seed
            assert t.state_ok is o.success and t.accepted is o.success
    assert not any(tmp_path.rglob("pwned"))
    kept = sorted(temp.glob("agentmem-practice-notes-*"))
    argv = [json.loads((k / "ws" / "argv.json").read_text()) for k in kept]
    assert [f"The notes are at docs/notes.txt. {hostile}\n\n{task.prompt}"] in argv
    assert [task.prompt] in argv and len(kept) == 2
    assert good.meta["workspace"] in {str(k / "ws") for k in kept}


def test_a_missing_agent_program_stops_with_a_clear_message(tmp_path: Path, repo: Path):
    (task,) = load_tasks(_tasks_file(tmp_path, repo))
    rollout = rollout_fn(CliAgent("/nonexistent/agent {prompt}"), tmp_path / "lib.db")
    with pytest.raises(Exception, match="cannot be run"):
        rollout(task, "", 1)


def test_usage_from_claude_and_codex_output():
    claude = json.dumps(
        {
            "type": "result",
            "session_id": "abc",
            "total_cost_usd": 0.25,
            "usage": {
                "input_tokens": 100,
                "output_tokens": 20,
                "cache_read_input_tokens": 5,
                "cache_creation_input_tokens": 1,
            },
        }
    )
    u = parse_usage(claude)
    assert (u.tokens, u.cost_usd, u.session_id) == (126, 0.25, "abc")
    codex = "\n".join(
        json.dumps(e)
        for e in (
            {"type": "thread.started", "thread_id": "t-1"},
            {"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 3}},
            {"type": "turn.completed", "usage": {"input_tokens": 7, "output_tokens": "x"}},
        )
    )
    u = parse_usage(codex)
    assert (u.tokens, u.cost_usd, u.session_id) == (20, None, "t-1")
    assert parse_usage("Done.\n") == parse_usage("")


# -- the plan of rounds ------------------------------------------------------------------------


def _rows(task: Task, rnd: int, results: list[bool]) -> list[dict]:
    return [{"round": rnd, "idx": i, "success": ok} for i, ok in enumerate(results)]


def test_auto_conditions_a_second_group_only_where_the_first_was_degenerate():
    task = Task("t", "do it", bfcl="x")
    first = next_rollouts(task, 4, "auto", [])
    assert [(p.round, p.idx, p.condition, p.guidance) for p in first] == [
        (0, i, None, "") for i in range(4)
    ]
    assert len({p.seed for p in first}) == 4
    assert [p.idx for p in next_rollouts(task, 4, "auto", _rows(task, 0, [False, True]))] == [2, 3]
    assert next_rollouts(task, 4, "auto", _rows(task, 0, [False, True, False, False])) == []
    second = next_rollouts(task, 4, "auto", _rows(task, 0, [False] * 4))
    assert [p.round for p in second] == [1] * 4
    assert {p.condition for p in second} == {HIGH, LOW}  # never an all-same draw
    assert all(p.guidance == INSTRUCTIONS[p.condition] for p in second)
    assert second == next_rollouts(task, 4, "auto", _rows(task, 0, [True] * 4))  # stable
    done = _rows(task, 0, [True] * 4) + _rows(task, 1, [True] * 4)
    assert next_rollouts(task, 4, "auto", done) == []
    assert next_rollouts(task, 4, "never", _rows(task, 0, [False] * 4)) == []
    always = next_rollouts(task, 4, "always", [])
    assert [p.round for p in always] == [0] * 4 and {p.condition for p in always} == {HIGH, LOW}
    with pytest.raises(Exception, match="--rc must be"):
        next_rollouts(task, 4, "sometimes", [])


# -- the loop, with a fake agent -------------------------------------------------------------------


class FakeAgent:
    """Follows a lesson or the high-reward instruction in its guidance, else copies the
    wrong path; records its run (one shell step) as a client's hooks would."""

    name = "fake"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    def run(self, task: Task, ws: Path | None, guidance: str, seed: int, db: Path) -> Outcome:
        assert ws is not None
        self.calls.append((task.id, guidance, seed))
        careful = "docs/notes.txt" in guidance or INSTRUCTIONS[HIGH] in guidance
        src = "docs/notes.txt" if careful else "notes.txt"
        p = subprocess.run(["cp", src, "SUMMARY.txt"], cwd=ws, capture_output=True, text=True)
        out = p.stdout + p.stderr
        step = Step("Bash", {"command": f"cp {src} SUMMARY.txt"}, out, p.returncode == 0)
        ok = subprocess.run(task.check or "false", shell=True, cwd=ws).returncode == 0
        with Memory.open(db) as mem:
            tid = mem.record(f"{guidance}\n\n{task.prompt}", [step], meta={"cwd": str(ws)})
            attach(mem, tid, task, success=ok, facts={"seed": seed})
        return Outcome(task.id, seed, float(ok), ok, 0.01, run_id=tid, tokens=10)


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTMEM_EMBEDDER", "hash")


def test_practice_conditions_a_degenerate_group_learns_once_and_the_lesson_works(
    tmp_path: Path, repo: Path, hashed: None
):
    tasks = load_tasks(_tasks_file(tmp_path, repo))
    agent = FakeAgent()
    db = tmp_path / "lib.db"
    said: list[str] = []
    report = practice(
        tasks, agent, db, template="fake", tasks_path="t", size=4, progress=said.append
    )
    (t,) = report.tasks
    assert report.rollouts == report.new_rollouts == 8 and t["rounds"] == [0, 1]
    assert t["group"] == "mixed" and 0 < t["successes"] < 8
    assert [g for _id, g, _s in agent.calls[:4]] == [""] * 4  # round 0: plain
    assert all(g in (INSTRUCTIONS[HIGH], INSTRUCTIONS[LOW]) for _i, g, _s in agent.calls[4:])
    assert any("round 1" in m and "high reward" in m for m in said)
    learned = report.learned
    assert learned is not None and learned["groups"] == ["practice:notes"]
    (lesson,) = learned["lessons"]
    assert "docs/notes.txt" in lesson["text"]
    with Memory.open(db) as mem:
        runs = mem.trajectories(groups=["practice:notes"])
        assert len(runs) == 8 and all(r.task == tasks[0].prompt for r in runs)
        assert [r.condition for r in runs[:4]] == [None] * 4
        assert {r.condition for r in runs[4:]} == {HIGH, LOW}
        (session,) = [s for s in mem.sessions() if s["kind"] == "learn"]
        assert session["id"] == learned["session_id"]
    # the lesson, given as guidance, makes a later rollout pass; without it, it fails
    rollout = rollout_fn(agent, db)
    assert rollout(tasks[0], lesson["text"], 99).success
    assert not rollout(tasks[0], "", 99).success
    assert "learning session" in "\n".join(report.lines())


def test_practice_resumes_and_never_redoes_a_finished_rollout(
    tmp_path: Path, repo: Path, hashed: None
):
    tasks = load_tasks(_tasks_file(tmp_path, repo))
    agent = FakeAgent()
    db = tmp_path / "lib.db"
    kw = {"template": "fake", "tasks_path": "t", "size": 4}
    first = practice(tasks, agent, db, budget=Budget(rollouts=3), **kw)
    assert first.rollouts == 3 and first.stopped == "--max-rollouts 3 reached"
    assert first.learned is None and first.tasks[0]["group"] == "incomplete"
    assert "run the same command again" in "\n".join(first.lines())
    second = practice(tasks, agent, db, budget=Budget(rollouts=6), **kw)
    assert second.practice_id == first.practice_id and second.new_rollouts == 3
    third = practice(tasks, agent, db, **kw)
    assert third.new_rollouts == 2 and third.rollouts == 8 and third.learned is not None
    seeds = [s for _i, _g, s in agent.calls]
    assert len(seeds) == len(set(seeds)) == 8  # every rollout ran once
    with Memory.open(db) as mem:
        sessions = len(mem.sessions())
    again = practice(tasks, agent, db, **kw)
    assert again.new_rollouts == 0 and len(agent.calls) == 8
    assert again.learned is None  # learned before: no empty session
    with Memory.open(db) as mem:
        assert len(mem.sessions()) == sessions
    other = practice(tasks, agent, db, **{**kw, "size": 2})  # another practice
    assert other.practice_id != first.practice_id


def test_token_budget_and_heldout_tasks_are_respected(tmp_path: Path, repo: Path, hashed: None):
    f = _tasks_file(tmp_path, repo)
    f.write_text(f.read_text() + f.read_text().replace('"notes"', '"held"') + 'split = "heldout"\n')
    tasks = load_tasks(f)
    agent = FakeAgent()
    r = practice(
        tasks, agent, tmp_path / "lib.db", template="f", tasks_path="t", budget=Budget(tokens=20)
    )
    assert r.rollouts == 2 and r.tokens == 20 and "--max-tokens 20" in (r.stopped or "")
    assert r.heldout == ("held",) and {c[0] for c in agent.calls} == {"notes"}
    with pytest.raises(Exception, match="must be above 0"):
        Budget(rollouts=0)


# -- the CLI, as a subprocess ------------------------------------------------------------------


def _cli(*args: str, db: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "AGENTMEM_DB": str(db),
        "AGENTMEM_EMBEDDER": "hash",
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        [sys.executable, "-m", "agentmem", "practice", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def test_the_cli_runs_reports_resumes_and_refuses_bad_input(tmp_path: Path, repo: Path):
    f = _tasks_file(tmp_path, repo)
    script = tmp_path / "agent.sh"
    script.write_text(
        '#!/bin/sh\ncase "$1" in *"best outcome"*) cp docs/notes.txt SUMMARY.txt;; esac\n'
    )
    script.chmod(0o755)
    db = tmp_path / "lib.db"
    bad = tmp_path / "bad.toml"
    bad.write_text('[[task]]\nid = "x"\nprompt = "p"\n')
    p = _cli("run", str(bad), "--agent", f"{script} {{prompt}}", db=db, cwd=tmp_path)
    assert p.returncode == 1 and "needs repo" in p.stderr and not db.exists()
    p = _cli(
        "run",
        str(f),
        "--agent",
        f"{script} {{prompt}}",
        "-G",
        "2",
        "--dry-run",
        db=db,
        cwd=tmp_path,
    )
    assert p.returncode == 0 and "2 would run now, at most 4 in all" in p.stdout, p.stderr
    assert "at most 0.1 h" in p.stdout  # 4 x 60 s
    p = _cli("run", str(f), "--agent", f"{script} {{prompt}}", "-G", "2", db=db, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "notes round 0 #1/2: running" in p.stderr and "notes round 1" in p.stderr
    assert "notes: 1/4 passed, group mixed (conditioned round: 1/2 passed)" in p.stdout
    p = _cli(
        "run", str(f), "--agent", f"{script} {{prompt}}", "-G", "2", "--json", db=db, cwd=tmp_path
    )
    doc = json.loads(p.stdout)
    assert doc["new_rollouts"] == 0 and doc["rollouts"] == 4 and doc["tasks"][0]["group"] == "mixed"
    p = _cli(
        "run",
        str(f),
        "--agent",
        f"{script} {{prompt}}",
        "-G",
        "2",
        "--dry-run",
        "--json",
        db=db,
        cwd=tmp_path,
    )
    assert json.loads(p.stdout) == {
        "practice_id": 1,
        "tasks": 1,
        "done": 4,
        "next": 0,
        "at_most": 0,
        "at_most_s": 0.0,
    }
    p = _cli("status", "--json", db=db, cwd=tmp_path)
    (row,) = json.loads(p.stdout)
    assert (row["n_rollouts"], row["n_successes"], row["size"]) == (4, 1, 2)
    p = _cli("status", db=db, cwd=tmp_path)
    assert "4 rollouts, 1 passed" in p.stdout
    p = _cli("status", str(row["id"]), db=db, cwd=tmp_path)
    lines = p.stdout.splitlines()
    assert len(lines) == 4 and lines[0].startswith("notes round 0 #1 (plain): failed")
    assert sum("round 1" in x and "passed" in x and "high reward" in x for x in lines) == 1
    p = _cli("status", "99", db=db, cwd=tmp_path)
    assert p.returncode == 1 and "no practice has id 99" in p.stderr
    bfcl = tmp_path / "bfcl.toml"
    bfcl.write_text('[[task]]\nid = "b"\nprompt = "p"\nbfcl = "multi_turn_base_1"\n')
    p = _cli("run", str(bfcl), "--agent", f"{script} {{prompt}}", db=db, cwd=tmp_path)
    assert p.returncode == 1 and "need a model server: --model-url" in p.stderr
    p = _cli("run", str(f), db=db, cwd=tmp_path)
    assert p.returncode == 1 and "need a command-line agent: --agent" in p.stderr
    p = _cli("run", str(f), "--bfcl", "multi_turn_base_1", db=db, cwd=tmp_path)
    assert p.returncode == 2 and "a task file or --bfcl" in p.stderr
    p = _cli("run", str(f), "--agent", "claude -p", db=db, cwd=tmp_path)
    assert p.returncode == 1 and "no {prompt} placeholder" in p.stderr


def test_eval_says_plainly_when_it_is_not_available(tmp_path: Path, repo: Path):
    import importlib.util

    if importlib.util.find_spec("agentmem.practice.evaluate") is not None:
        pytest.skip("agentmem.practice.evaluate is here: tests/test_practice_eval*.py cover it")
    f = _tasks_file(tmp_path, repo)
    p = _cli("eval", str(f), "--agent", "x {prompt}", db=tmp_path / "lib.db", cwd=tmp_path)
    assert p.returncode == 1 and "not available" in p.stderr


def test_group_keys():
    assert group_key(Task("a", "p")) == "practice:a"
    held = Task("a", "p", split="heldout")
    assert group_key(held, 3, True) != group_key(held, 3, False) != group_key(held, 4, False)


def test_a_killed_practice_reruns_only_the_unfinished_rollout(
    tmp_path: Path, repo: Path, hashed: None, monkeypatch: pytest.MonkeyPatch
):
    """Ctrl-C (or a kill) in the third rollout: its workspace is removed, nothing of it is
    stored; the same command then runs that rollout and the rest, and no other."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tasks = load_tasks(_tasks_file(tmp_path, repo))

    class Killed(FakeAgent):
        def run(self, task: Task, ws: Path | None, guidance: str, seed: int, db: Path) -> Outcome:
            if len(self.calls) == 2:
                self.calls.append((task.id, guidance, seed))
                raise KeyboardInterrupt
            return super().run(task, ws, guidance, seed, db)

    agent = Killed()
    kw = {"template": "fake", "tasks_path": "t", "size": 4}
    with pytest.raises(KeyboardInterrupt):
        practice(tasks, agent, tmp_path / "lib.db", **kw)
    assert not list(tmp_path.glob("agentmem-practice-*"))  # its workspace is gone
    killed_seed = agent.calls[2][2]
    agent.calls.clear()
    report = practice(tasks, FakeAgent(), tmp_path / "lib.db", **kw)
    assert report.new_rollouts == 6 and report.rollouts == 8
    with Memory.open(tmp_path / "lib.db") as mem:
        rows = mem.db.execute("SELECT seed FROM practice_rollouts").fetchall()
    assert sorted(s for (s,) in rows).count(killed_seed) == 1


def test_an_agent_past_its_timeout_is_killed_and_counted_a_failure(tmp_path: Path, repo: Path):
    f = _tasks_file(tmp_path, repo).read_text().replace("timeout = 60", "timeout = 1")
    (tmp_path / "tasks.toml").write_text(f)
    (task,) = load_tasks(tmp_path / "tasks.toml")
    script = tmp_path / "slow.sh"
    script.write_text(
        "#!/bin/sh\ncp docs/notes.txt SUMMARY.txt\n(sleep 30; touch late) &\nsleep 30\n"
    )
    script.chmod(0o755)
    out = rollout_fn(CliAgent(f"{script} {{prompt}}"), tmp_path / "lib.db")(task, "", 1)
    assert not out.success and "ran past 1 s" in (out.error or "") and out.wall_s < 20
    assert out.run_id is None  # it left no run: practice does not count it (see below)


def test_the_minutes_budget():
    b = Budget(minutes=0.5)
    assert b.exhausted(0, 0, 29.0) is None and "--max-minutes 0.5" in (b.exhausted(0, 0, 30) or "")
    assert Budget().exhausted(10**6, 10**9, 10**6) is None


def test_no_secret_of_a_rollout_is_stored(tmp_path: Path, repo: Path):
    """A secret in the task's prompt, in the agent's error output and in the check's: the
    library file (runs, practice rows) holds none of them."""
    a, b, c, d = ("ghp_" + hashlib.sha256(x.encode()).hexdigest()[:36] for x in "abcd")
    f = tmp_path / "tasks.toml"
    f.write_text(
        f'[[task]]\nid = "s"\nprompt = "use token {a} to copy"\nrepo = "{repo}"\n'
        f'check = "echo {c} >&2; false"\n'
    )
    script = tmp_path / "agent.sh"
    script.write_text(f"#!/bin/sh\necho 'leaked {b}' >&2\n")
    script.chmod(0o755)
    db = tmp_path / "lib.db"
    p = _cli(
        "run",
        str(f),
        "--agent",
        f"{script} {{prompt}} --token {d}",
        "-G",
        "2",
        "--json",
        db=db,
        cwd=tmp_path,
    )
    doc = json.loads(p.stdout)
    assert doc["rollouts"] == 4 and doc["tasks"][0]["successes"] == 0
    raw = b"".join(x.read_bytes() for x in tmp_path.glob("lib.db*"))
    assert raw and not any(s.encode() in raw for s in (a, b, c, d))
    assert b"[REDACTED" in raw


FAKE_CLAUDE = """\
import json, os, shutil, subprocess, sys, uuid
sys.path.insert(0, {root!r})
from tests.transcripts import ClaudeSession
prompt = sys.argv[sys.argv.index("-p") + 1]
cwd = os.getcwd()
careful = "docs/notes.txt" in prompt or "Aim for the best outcome" in prompt
cmd = "cp docs/notes.txt SUMMARY.txt" if careful else "cp notes.txt SUMMARY.txt"
p = subprocess.run(cmd, shell=True, capture_output=True, text=True)
sid = str(uuid.uuid4())
s = ClaudeSession(session_id=sid, cwd=cwd)
s.prompt(prompt)
out = p.stdout + p.stderr
failed = p.returncode != 0
s.tool("Bash", {{"command": cmd}}, f"Exit code 1\\n{{out}}" if failed else out, failed)
s.say("Done.")
home = os.environ["CLAUDE_CONFIG_DIR"]
s.write(__import__("pathlib").Path(home, "projects", cwd.replace("/", "-"), sid + ".jsonl"))
if os.environ.get("FAKE_HOOK"):  # as the client's Stop hook would: import it now
    subprocess.run([sys.executable, "-m", "agentmem", "import", "--format", "claude-code",
                    str(next(__import__("pathlib").Path(home).rglob(sid + ".jsonl")))],
                   check=True, capture_output=True)
print(json.dumps({{"type": "result", "session_id": sid, "total_cost_usd": 0.01,
                  "usage": {{"input_tokens": 30, "output_tokens": 7}}}}))
"""


@pytest.mark.parametrize("hooked", [False, True], ids=["imported", "hook-imported"])
def test_the_cli_agent_imports_the_transcript_its_client_wrote(
    tmp_path: Path, repo: Path, hashed: None, hooked: bool
):
    """A stand-in ``claude`` writes a Claude Code transcript for its working folder (as
    the real one does: tests/test_practice_clients.py): practice finds it among others,
    imports it (or, where the client's hook imported it already, finds that run by its
    session), and the group's runs carry the client's steps, session and usage."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "claude"
    fake.write_text(f"#!{sys.executable}\n" + FAKE_CLAUDE.format(root=str(ROOT)))
    fake.chmod(0o755)
    home = tmp_path / "claude-home"
    other = home / "projects" / "-elsewhere" / "x.jsonl"  # another session, now: not ours
    other.parent.mkdir(parents=True)
    other.write_text(json.dumps({"type": "user", "cwd": "/elsewhere", "sessionId": "x"}) + "\n")
    db = tmp_path / "lib.db"
    env = {"CLAUDE_CONFIG_DIR": str(home), "AGENTMEM_DB": str(db), "PYTHONPATH": str(ROOT)}
    agent = CliAgent(f"{fake} -p {{prompt}}", env={**env, **({"FAKE_HOOK": "1"} if hooked else {})})
    assert agent.client == "claude-code"
    tasks = load_tasks(_tasks_file(tmp_path, repo))
    report = practice(tasks, agent, db, template=agent.template, tasks_path="t", size=2)
    assert report.rollouts == 4 and report.tokens == 4 * 37 and report.cost_usd == 0.04
    assert report.tasks[0]["group"] == "mixed" and report.learned is not None
    assert "docs/notes.txt" in report.learned["lessons"][0]["text"]
    with Memory.open(db) as mem:
        runs = mem.trajectories(groups=["practice:notes"])
        assert len(runs) == 4 and len(mem.trajectories()) == 4
        assert all(r.source == "claude-code" and r.meta["session_id"] for r in runs)
        assert [len(r.steps) for r in runs] == [1, 1, 1, 1]
        assert [r.steps[0].success for r in runs] == [r.accepted for r in runs]
        assert all(r.task == tasks[0].prompt and r.meta["project"] == str(repo) for r in runs)
        rows = mem.db.execute("SELECT trajectory_id, meta FROM practice_rollouts").fetchall()
        imports = mem.db.execute("SELECT count(*) FROM imported_turns").fetchone()[0]
    assert imports == 4  # each turn imported once, by the hook or by practice
    assert {t for t, _m in rows} == {r.id for r in runs}
    assert all(
        json.loads(m)["session_id"] == r.meta["session_id"]
        for (_t, m), r in zip(sorted(rows), runs)
    )


def _ctrl_c_as_in_a_terminal() -> None:
    """In the child: Ctrl-C as a terminal delivers it. A test suite started in the
    background by a non-interactive shell inherits SIGINT ignored, and so would the
    command under test, which then never sees the Ctrl-C the test sends."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_the_agent_and_says_how_to_continue(tmp_path: Path, repo: Path):
    import signal
    import time

    f = _tasks_file(tmp_path, repo)
    script = tmp_path / "slow.sh"
    pidfile = tmp_path / "agent.pid"
    script.write_text(f"#!/bin/sh\necho $$ > {pidfile}\nsleep 60\n")
    script.chmod(0o755)
    env = {**os.environ, "AGENTMEM_DB": str(tmp_path / "lib.db"), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentmem",
            "practice",
            "run",
            str(f),
            "--agent",
            f"{script} {{prompt}}",
        ],
        env={**env, "AGENTMEM_EMBEDDER": "hash"},
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )
    deadline = time.monotonic() + 60
    # the shell creates the file before it writes the pid: wait for the whole line
    while time.monotonic() < deadline and not (
        pidfile.exists() and pidfile.read_text().endswith("\n")
    ):
        time.sleep(0.1)
    time.sleep(0.5)  # the agent is under way
    agent_pid = int(pidfile.read_text())
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "run the same command again to continue" in err, err
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):
        os.kill(agent_pid, 0)
    assert _git(repo, "worktree", "list").count("\n") == 0  # its worktree removed


def test_a_new_task_joins_the_practice_and_a_changed_one_is_practised_anew(
    tmp_path: Path, repo: Path, hashed: None
):
    f = _tasks_file(tmp_path, repo)
    agent = FakeAgent()
    db = tmp_path / "lib.db"
    kw = {"template": "fake", "tasks_path": str(f), "size": 2, "rc": "never"}
    first = practice(load_tasks(f), agent, db, **kw)
    assert first.rollouts == 2 and len(agent.calls) == 2
    changed = f.read_text().replace(CHECK, CHECK + " && true")
    f.write_text(changed + changed.replace('"notes"', '"notes2"'))
    second = practice(load_tasks(f), agent, db, **kw)
    assert second.practice_id == first.practice_id and second.new_rollouts == 4
    assert [t["rollouts"] for t in second.tasks] == [2, 2] and second.rollouts == 6
    with Memory.open(db) as mem:
        groups = sorted({t.group for t in mem.trajectories()})
    assert groups[:2] == ["practice:notes", "practice:notes2"]
    assert len(groups) == 3 and groups[2].startswith("practice:notes@")
    assert practice(load_tasks(f), agent, db, **kw).new_rollouts == 0


def test_an_agent_that_fails_without_a_run_is_retried_then_stops_the_practice(
    tmp_path: Path, repo: Path
):
    """A wrong API key, a client that will not start: the agent exits non-zero and leaves
    no run. Such a rollout is no data point: it is tried again, and after three in a row
    the practice stops (exit status 1) with the agent's error; nothing is stored."""
    f = _tasks_file(tmp_path, repo)
    script = tmp_path / "broken.sh"
    script.write_text("#!/bin/sh\necho 'Invalid API key' >&2\nexit 2\n")
    script.chmod(0o755)
    db = tmp_path / "lib.db"
    p = _cli("run", str(f), "--agent", f"{script} {{prompt}}", db=db, cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    assert p.stderr.count("the agent failed without a run, not counted") == 3
    assert "the agent failed 3 times in a row without a run" in p.stdout
    assert "Invalid API key" in p.stdout and "0 rollouts" in p.stdout
    with Memory.open(db) as mem:
        assert mem.trajectories() == []
        assert mem.db.execute("SELECT count(*) FROM practice_rollouts").fetchone()[0] == 0


# -- rollouts at once (--jobs) ---------------------------------------------------------------


class TogetherAgent(FakeAgent):
    """:class:`FakeAgent` whose rollouts of one batch must run at the same time (each
    waits at a barrier for the others) and finish in the order of their seeds, largest
    first (not the plan's order)."""

    def __init__(self, together: int) -> None:
        super().__init__()
        import threading

        self.barrier = threading.Barrier(together, timeout=60)
        self.workspaces: list[Path] = []
        self.started: list[int] = []
        self.finished: list[int] = []
        self.cond = threading.Condition()

    def run(self, task: Task, ws: Path | None, guidance: str, seed: int, db: Path) -> Outcome:
        assert ws is not None
        self.barrier.wait()  # raises BrokenBarrierError unless all run at once
        with self.cond:
            self.started.append(seed)
            self.workspaces.append(ws)
        self.barrier.wait()  # every seed of the batch is known
        with self.cond:
            bigger = [s for s in self.started if s > seed]
            assert self.cond.wait_for(lambda: set(bigger) <= set(self.finished), timeout=60)
        out = super().run(task, ws, guidance, seed, db)
        with self.cond:
            self.finished.append(seed)
            self.cond.notify_all()
        return out


def _stored_rows(db: Path) -> list[tuple[Any, ...]]:
    with Memory.open(db) as mem:
        return [
            tuple(r)
            for r in mem.db.execute(
                "SELECT task_id, round, idx, seed, condition, success FROM practice_rollouts"
                " ORDER BY id"
            ).fetchall()
        ]


def test_jobs_run_a_round_at_once_in_workspaces_of_their_own_recorded_in_order(
    tmp_path: Path, repo: Path, hashed: None, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tasks = load_tasks(_tasks_file(tmp_path, repo))
    kw = {"template": "fake", "tasks_path": "t", "size": 4}
    one = practice(tasks, FakeAgent(), tmp_path / "one.db", **kw)
    agent = TogetherAgent(4)
    said: list[str] = []
    four = practice(tasks, agent, tmp_path / "four.db", jobs=4, progress=said.append, **kw)
    # the same practice as one by one: rounds, seeds, conditions, verdicts, in the same order
    assert four.rollouts == one.rollouts == 8 and four.tasks == one.tasks
    assert _stored_rows(tmp_path / "four.db") == _stored_rows(tmp_path / "one.db")
    assert [r[1:3] for r in _stored_rows(tmp_path / "four.db")] == [(0, i) for i in range(4)] + [
        (1, i) for i in range(4)
    ]
    # they ran together (the barrier), finished in another order than the plan's
    seeds = [r[3] for r in _stored_rows(tmp_path / "four.db")]
    assert sorted(agent.finished) == sorted(seeds) and agent.finished != seeds
    assert len(set(agent.workspaces)) == 8  # a workspace each
    assert not list(tmp_path.glob("agentmem-practice-*"))  # every one removed
    assert _git(repo, "worktree", "list").count("\n") == 0
    ends = [m for m in said if " in " in m and ("passed" in m or "failed" in m)]
    assert [m.split(":")[0] for m in ends] == [
        f"notes round {r} #{i}/4" for r in (0, 1) for i in range(1, 5)
    ]  # reported in the plan's order too
    assert four.learned is not None and [x["text"] for x in four.learned["lessons"]] == [
        x["text"] for x in (one.learned or {})["lessons"]
    ]


def test_jobs_keep_to_the_rollout_budget_and_refuse_a_bad_value(
    tmp_path: Path, repo: Path, hashed: None
):
    tasks = load_tasks(_tasks_file(tmp_path, repo))
    kw = {"template": "fake", "tasks_path": "t", "size": 4}
    agent = TogetherAgent(3)
    r = practice(tasks, agent, tmp_path / "lib.db", jobs=4, budget=Budget(rollouts=3), **kw)
    assert r.rollouts == 3 and len(agent.calls) == 3 and r.stopped == "--max-rollouts 3 reached"
    for bad in (0, 33, True, 1.5):
        with pytest.raises(Exception, match="--jobs must be a whole number from 1 to 32"):
            practice(tasks, FakeAgent(), tmp_path / "lib.db", jobs=bad, **kw)  # type: ignore[arg-type]
    p = _cli("run", str(_tasks_file(tmp_path, repo)), "--agent", "true {prompt}", "--jobs", "0",
             db=tmp_path / "lib.db", cwd=tmp_path)  # fmt: skip
    assert p.returncode == 2 and "--jobs" in p.stderr and "0 is not in the range" in p.stderr


def test_ctrl_c_with_jobs_records_the_finished_rollouts_and_stops_the_others(
    tmp_path: Path, repo: Path, hashed: None, monkeypatch: pytest.MonkeyPatch
):
    """One rollout of a batch is interrupted: the rollouts that finished are recorded (in
    order), the agent is told to stop, nothing of the interrupted one is stored, and the
    same command then runs it alone."""
    import threading

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tasks = load_tasks(_tasks_file(tmp_path, repo))
    done = threading.Event()

    class Interrupted(FakeAgent):
        stopped = 0

        def stop(self) -> None:
            self.stopped += 1

        def run(self, task: Task, ws: Path | None, guidance: str, seed: int, db: Path) -> Outcome:
            if seed == first_seeds[1]:
                done.wait(30)  # the others finished: then Ctrl-C here
                raise KeyboardInterrupt
            out = super().run(task, ws, guidance, seed, db)
            if len(self.calls) == 3:
                done.set()
            return out

    first_seeds = [p.seed for p in next_rollouts(tasks[0], 4, "auto", [])]
    agent = Interrupted()
    kw = {"template": "fake", "tasks_path": "t", "size": 4}
    with pytest.raises(KeyboardInterrupt):
        practice(tasks, agent, tmp_path / "lib.db", jobs=4, **kw)
    assert agent.stopped == 1
    rows = _stored_rows(tmp_path / "lib.db")
    assert [r[2] for r in rows] == [0, 2, 3] and first_seeds[1] not in [r[3] for r in rows]
    assert not list(tmp_path.glob("agentmem-practice-*"))
    with Memory.open(tmp_path / "lib.db") as mem:
        assert len(mem.trajectories(groups=["practice:notes"])) == 3  # no run of the killed one
    again = FakeAgent()
    report = practice(tasks, again, tmp_path / "lib.db", jobs=4, **kw)
    assert again.calls[0][2] == first_seeds[1] and report.rollouts == 8
    assert sorted(r[3] for r in _stored_rows(tmp_path / "lib.db")).count(first_seeds[1]) == 1


def test_ctrl_c_with_jobs_kills_every_agent_under_way(tmp_path: Path, repo: Path):
    """The real CLI with a real script agent, two rollouts at once: SIGINT kills both
    agents' process groups, removes both worktrees and says how to continue."""
    import signal
    import time

    f = _tasks_file(tmp_path, repo)
    script = tmp_path / "slow.sh"
    pids = tmp_path / "pids"
    pids.mkdir()
    script.write_text(f"#!/bin/sh\necho $$ > {pids}/$$\nsleep 60\n")
    script.chmod(0o755)
    env = {**os.environ, "AGENTMEM_DB": str(tmp_path / "lib.db"), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "agentmem", "practice", "run", str(f), "--agent",
            f"{script} {{prompt}}", "--jobs", "2"]  # fmt: skip
    proc = subprocess.Popen(
        argv,
        env={**env, "AGENTMEM_EMBEDDER": "hash"},
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )
    deadline = time.monotonic() + 60
    while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # both agents under way
    agents = [int(p.name) for p in pids.iterdir()]
    assert len(agents) == 2
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "run the same command again to continue" in err, err
    assert time.monotonic() - t0 < 30  # not the agents' 60 s
    time.sleep(0.5)
    for pid in agents:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert _git(repo, "worktree", "list").count("\n") == 0
    with Memory.open(tmp_path / "lib.db") as mem:
        assert mem.db.execute("SELECT count(*) FROM practice_rollouts").fetchone()[0] == 0
        assert mem.trajectories() == []
