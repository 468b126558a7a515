"""``agentmem practice`` with the real Claude Code and Codex CLIs (issue 32), driven by the
scripted model (:mod:`tests.scripted_model`).

The task: copy the project's notes into SUMMARY.txt; the check passes only when
SUMMARY.txt holds them. The notes are under docs/. The scripted model copies
``notes.txt`` (the hasty guess: it fails) unless its prompt or what the client put
around it holds a lesson naming ``docs/notes.txt`` or RC-GRPO's high-reward
instruction; then it copies ``docs/notes.txt``. So:

1. ``agentmem practice run`` (a subprocess, G = 2): round 0 fails twice, a degenerate
   group; round 1 is conditioned (one high, one low reward instruction): one pass, one
   failure; the task's group of 4 is mixed; one learning session learns the lesson
   "notes.txt is at docs/notes.txt";
2. the runs came from the client's transcripts (the hooks imported them; practice found
   them by their session and put them in group ``practice:notes`` with the check's
   verdict and the reward tokens);
3. a later rollout (:func:`agentmem.practice.runner.rollout_fn`, no guidance) gets the
   lesson from the client's prompt hook and passes.

The clients and the skip rule are :mod:`tests.real_clients`'s.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from agentmem import Memory
from agentmem.practice.cli_agent import CliAgent
from agentmem.practice.runner import rollout_fn
from agentmem.practice.tasks import load_tasks
from agentmem.rc import HIGH, INSTRUCTIONS, LOW

from .real_clients import SESSION_TIMEOUT_S, Sandbox
from .scripted_model import Scenario, Turn, shell
from .test_real_clients import client

__all__ = ["client"]

PROMPT = "Copy the project notes into SUMMARY.txt"
GOOD = (shell("cp docs/notes.txt SUMMARY.txt"),)
HASTY = (shell("cp notes.txt SUMMARY.txt"),)


def _scenario() -> Scenario:
    return Scenario(
        (
            Turn(
                PROMPT,
                HASTY,
                "Copied.",
                if_served=("docs/notes.txt", GOOD),
                branches=((INSTRUCTIONS[HIGH], GOOD),),
            ),
        )
    )


def _template(box: Sandbox) -> str:
    """The agent's template: the scripted model's runner around the real client."""
    scen = box.root / "scenario.json"
    scen.write_text(_scenario().to_json())
    runner = [
        sys.executable,
        "-m",
        "tests.scripted_model",
        "run",
        "--scenario",
        str(scen),
        "--log",
        str(box.root / "requests.jsonl"),
        "--timeout",
        str(SESSION_TIMEOUT_S),
    ]
    if box.netns:
        runner.append("--netns")
    if box.client == "claude-code":
        envs = [
            "ANTHROPIC_BASE_URL={base_url}",
            "ANTHROPIC_API_KEY=sk-ant-scripted",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
        ]
        cmd = [str(box.binary), "-p", "{prompt}", "--output-format", "json"]
        cmd += ["--allowedTools", "Bash"]
    else:
        envs = ["SCRIPTED_API_KEY=scripted"]
        cmd = [str(box.binary), "exec", "--json", "--dangerously-bypass-hook-trust", "-c"]
        cmd += ['model_providers.scripted.base_url="{base_url}/v1"', "{prompt}"]
    runner += [a for e in envs for a in ("--env", e)]
    return shlex.join([*runner, "--", *cmd])


def _commit(box: Sandbox) -> None:
    env = {**box.env, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    for args in (["add", "."], ["commit", "-q", "-m", "notes"]):
        subprocess.run(["git", "-C", str(box.project), *args], check=True, env=env)


def test_practice_learns_a_lesson_that_a_later_rollout_follows(tmp_path: Path, client: str):
    box = Sandbox.create(tmp_path, client, {"docs/notes.txt": "the notes\n"})
    _commit(box)
    box.install_hooks()
    tasks = tmp_path / "tasks.toml"
    tasks.write_text(
        f'[[task]]\nid = "notes"\nprompt = "{PROMPT}"\nrepo = "{box.project}"\n'
        f'check = "cmp -s SUMMARY.txt docs/notes.txt"\ntimeout = {SESSION_TIMEOUT_S + 30}\n'
    )
    template = _template(box)
    p = box.agentmem("practice", "run", str(tasks), "--agent", template, "-G", "2", "--json")
    report = json.loads(p.stdout)
    (task,) = report["tasks"]
    assert report["rollouts"] == 4 and task["rounds"] == [0, 1], (report, p.stderr[-3000:])
    assert task["group"] == "mixed" and task["successes"] == 1, report
    assert "notes round 1 #1/2: running" in p.stderr
    learned = report["learned"]
    assert learned["groups"] == ["practice:notes"], report
    (lesson,) = learned["lessons"]
    assert "docs/notes.txt" in lesson["text"], lesson
    # usage, as the clients print it: claude -p --output-format json, codex exec --json
    assert report["tokens"] and report["tokens"] > 0, report
    assert (report["cost_usd"] is not None) == (client == "claude-code"), report
    with Memory.open(box.library) as mem:
        runs = mem.trajectories(groups=["practice:notes"])
        assert len(runs) == 4 and all(r.task == PROMPT for r in runs), runs
        assert all(r.meta.get("session_id") and r.steps for r in runs)  # the transcripts
        assert [r.condition for r in runs[:2]] == [None, None]
        assert {r.condition for r in runs[2:]} == {HIGH, LOW}
        assert [r.accepted for r in runs].count(True) == 1
    status = json.loads(box.agentmem("practice", "status", "--json").stdout)
    assert status[0]["learned_session"] == learned["session_id"]
    # nothing is run twice: the same command again finds every rollout done
    again = json.loads(
        box.agentmem("practice", "run", str(tasks), "--agent", template, "-G", "2", "--json").stdout
    )
    assert again["new_rollouts"] == 0 and again["rollouts"] == 4
    # a later rollout: no guidance, the client's prompt hook serves the lesson, it passes
    (t,) = load_tasks(tasks)
    later = rollout_fn(CliAgent(template, env=box.env), box.library)(t, "", 12345)
    assert later.success, later
    log = Path(f"{box.library}.served.jsonl").read_text().splitlines()
    assert any(lesson["id"] in json.loads(x)["served"] for x in log), log


def test_without_hooks_practice_imports_the_transcripts_itself(tmp_path: Path, client: str):
    """No agentmem hooks in the client: practice reads the transcript each rollout wrote
    (found by its working folder) with the importers. ``--rc always``: one conditioned
    group of 2, one high and one low reward instruction, is mixed at once."""
    box = Sandbox.create(tmp_path, client, {"docs/notes.txt": "the notes\n"})
    _commit(box)
    tasks = tmp_path / "tasks.toml"
    tasks.write_text(
        f'[[task]]\nid = "notes"\nprompt = "{PROMPT}"\nrepo = "{box.project}"\n'
        f'check = "cmp -s SUMMARY.txt docs/notes.txt"\n'
    )
    p = box.agentmem(
        "practice", "run", str(tasks), "--agent", _template(box), "-G", "2", "--rc", "always"
    )
    assert "notes: 1/2 passed, group mixed (conditioned round: 1/2 passed)" in p.stdout, p
    assert "learning session" in p.stdout and "docs/notes.txt" in p.stdout, p.stdout
    with Memory.open(box.library) as mem:
        runs = mem.trajectories(groups=["practice:notes"])
        assert len(runs) == 2 and {r.condition for r in runs} == {HIGH, LOW}
        assert all(r.source == client and r.steps and r.meta.get("session_id") for r in runs)
        assert len(mem.trajectories()) == 2  # nothing recorded twice
    assert not box.hooks_log.exists()


def test_eval_without_arm_gets_no_lesson_from_the_clients_prompt_hook(tmp_path: Path, client: str):
    """``practice eval`` with the real client and its agentmem hooks installed: the arm
    without lessons gets none (the eval sets AGENTMEM_SERVE=off for its rollouts, so the
    client's own prompt hook serves nothing) and fails; the arm with them gets the lesson
    as its guidance only (once, not doubled by the hook) and passes."""
    box = Sandbox.create(tmp_path, client, {"docs/notes.txt": "the notes\n"})
    _commit(box)
    box.install_hooks()
    tasks = tmp_path / "tasks.toml"
    one = (
        f'prompt = "{PROMPT}"\nrepo = "{box.project}"\n'
        f'check = "cmp -s SUMMARY.txt docs/notes.txt"\ntimeout = {SESSION_TIMEOUT_S + 30}\n'
    )
    tasks.write_text(
        f'[[task]]\nid = "notes"\n{one}[[task]]\nid = "notes-again"\nsplit = "heldout"\n{one}'
    )
    template = _template(box)
    p = box.agentmem("practice", "run", str(tasks), "--agent", template, "-G", "2", "--json")
    (lesson,) = json.loads(p.stdout)["learned"]["lessons"]
    served_log = Path(f"{box.library}.served.jsonl")

    def by_hook() -> int:
        lines = served_log.read_text().splitlines() if served_log.exists() else []
        return sum(json.loads(x)["route"] == "hook" for x in lines)

    hook_lines = by_hook()
    requests = box.root / "requests.jsonl"
    asked_before = len(requests.read_text().splitlines())
    p = box.agentmem(
        "practice", "eval", str(tasks), "--agent", template, "--seeds", "1", "--no-retire",
        "--json",
    )  # fmt: skip
    report = json.loads(p.stdout)
    assert report["pairs"] == 1, (report, p.stderr[-3000:])
    table = report["overall"]["table"]
    assert table["wins"] == 1 and table["both"] == 0, (report, p.stderr[-3000:])
    assert report["lessons"][0]["id"] == lesson["id"]
    # the client's prompt hook served nothing during the eval (neither arm)
    assert by_hook() == hook_lines
    # the model's requests: the lesson's text in the with arm's only, once each
    asked = [x for x in requests.read_text().splitlines()[asked_before:] if PROMPT in x]
    key = lesson["text"][:40]
    assert asked and any(key in x for x in asked) and any(key not in x for x in asked), asked
    assert all(x.count(key) <= 1 for x in asked), "the lesson came twice"
