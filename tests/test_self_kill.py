"""A shell call that killed its own shell with ``pkill -f`` (agentmem/learning/self_kill.py).

Synthetic runs, written here, each with its near misses: the shape is the one users of
both clients describe in their own notes ("pkill -f ... matches the wrapper shell that is
running that very call ... Exit code 144 with nothing done is the symptom"). The real
negative is a development-half Codex session whose agent checked with ``pgrep`` and moved
on (keyed a trap: no fix in the run): nothing is learned from it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentmem import Memory
from agentmem.agents import outcome
from agentmem.learning.corrections import find_corrections
from agentmem.learning.kinds import Kind
from agentmem.learning.self_kill import self_kill_text, self_kills
from agentmem.records import Step, Trajectory

from .conftest import ROOT

CC_KILLED = "Exit code 144"


def _cc(command: str, out: str, ok: bool = True) -> Step:
    return Step("Bash", {"command": command, "description": "x"}, out, ok)


def _codex(cmd: str, code: int, out: str = "") -> Step:
    framed = (
        f'Command: /bin/bash -lc "{cmd}"\nChunk ID: 9c42ea\nWall time: 0.0000 seconds\n'
        f"Process exited with code {code}\nOriginal token count: 0\nOutput:\n{out}"
    )
    return Step("exec_command", {"cmd": cmd, "workdir": "/w/app"}, framed, code == 0)


def _found(*steps: Step) -> list[tuple[int, int, str]]:
    run = Trajectory(task="restart the dev server", steps=steps, meta={"cwd": "/w/app"})
    out = []
    for c in find_corrections(run):
        if c.kind == Kind.TOOL_RULE and c.finding.detail.get("refused") == "self-kill":
            assert c.finding.text == self_kill_text(steps[c.failed].tool)
            assert c.finding.facts == (steps[c.failed].tool, "pkill")
            out.append((c.failed, c.fixed, str(c.finding.detail["how"])))
    return out


RESTART = 'pkill -f "node server.js"; sleep 1; nohup node server.js > log 2>&1 &'


def test_claude_codes_bash_killed_by_its_own_pkill_then_a_kill_by_pid() -> None:
    failed = _cc(RESTART, CC_KILLED, False)
    listed = _cc('pgrep -fl "node server.js"', "4242 node server.js")
    fixed = _cc("kill 4242", "")
    assert _found(failed, listed, fixed) == [(0, 2, "by process id")]
    # the status a signal gives: 144 here, 143 or 137 elsewhere
    assert outcome(failed).exit_code == 144


def test_a_bracketed_pattern_or_pkill_alone_is_the_other_way() -> None:
    failed = _cc(RESTART, CC_KILLED, False)
    bracket = _cc('pkill -f "[n]ode server.js"; sleep 1; echo stopped', "stopped")
    assert _found(failed, bracket) == [(0, 1, "a bracketed pattern")]
    # the bracket is no way when the call spells the name out elsewhere (it matches again)
    spelled = _cc('pkill -f "[n]ode server.js"; nohup node server.js > log 2>&1 &', "")
    assert _found(failed, spelled) == []
    # Codex: a bash -lc of one command runs pkill in its own place, so alone it works
    cmd = "pkill -f 'streamlit run app.py' || true"
    alone = _codex("pkill -f 'streamlit run app.py'", 0)
    assert _found(_codex(cmd, -1), alone) == [(0, 1, "pkill alone")]
    # pkill of a name (-x) is another way too
    assert _found(failed, _cc("killall -q server.js; echo done", "done")) == [(0, 1, "by name")]


def test_near_misses_teach_nothing() -> None:
    failed = _cc(RESTART, CC_KILLED, False)
    listed = _cc('pgrep -fl "node server.js"', "4242 node server.js")
    # pkill's exit 1: no process matched; its answer, not a slip
    no_match = _cc('pkill -f "node server.js"', "Exit code 1", False)
    assert outcome(no_match).failure.value == "informational"
    assert _found(no_match, listed, _cc("kill 4242", "")) == []
    # no signal: the call failed otherwise
    assert _found(_cc(RESTART, "Exit code 2\nnohup: bad", False), _cc("kill 4242", "")) == []
    # the pattern cannot match the call's own text
    own = _cc('pkill -f "[n]ode server.js"; sleep 1', CC_KILLED, False)
    assert _found(own, listed, _cc("kill 4242", "")) == []
    # no fix in the run: the agent moved on
    assert _found(failed, listed, _cc("git status --short", " M a.py")) == []
    # a kill of a process id nobody printed, or of other processes
    assert _found(failed, _cc("kill 999", "")) == []
    assert _found(failed, _cc("pkill -x vite", "")) == []
    # Codex given pkill alone runs it in its own place: -1 there is something else
    assert _found(_codex("pkill -f 'streamlit run app.py'", -1), _codex("kill 77", 0)) == []
    # Claude Code's Bash holds even one command's text: pkill alone working refutes the run
    assert _found(failed, _cc('pkill -f "node server.js"', "")) == []
    # a self-matching pkill in a longer command that worked: the signal was something else
    worked = _cc('pkill -f "node server.js"; echo stopped', "stopped")
    assert _found(failed, listed, _cc("kill 4242", ""), worked) == []
    assert self_kills(Trajectory(task="t", steps=(failed, worked))) == []


def test_the_lesson_is_learned_once_for_every_slip_and_served_to_its_client(
    tmp_path: Path,
) -> None:
    from agentmem.serving import Query

    from .conftest import FakeEmbedder, FakeModel

    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        for n, (name, pid) in enumerate((("node server.js", 4242), ("vite --port 5173", 77))):
            steps = [
                _cc(f'pkill -f "{name}"; sleep 1; nohup {name} > log 2>&1 &', CC_KILLED, False),
                _cc(f'pgrep -fl "{name}"', f"{pid} {name}"),
                _cc(f"kill {pid}", ""),
            ]
            tid = mem.record(f"restart the dev server {n}", steps, meta={"cwd": f"/w/app{n}"})
            mem.feedback(tid, "accept")
        mem.learn(use_model=False)
        texts = [e.text for e in mem.experiences()]
        assert texts.count(self_kill_text("Bash")) == 1, texts
        [lesson] = [e for e in mem.experiences() if e.text == self_kill_text("Bash")]
        assert len(lesson.text.split()) <= 32

        def served(client: str) -> set[int | None]:
            q = Query("restart the dev server with pkill", project="/w/app0", client=client)
            return {x.id for x in mem.serve(q).lessons}

        assert lesson.id in served("claude-code") and lesson.id not in served("codex")


def test_other_groups_failed_calls_neither_confirm_nor_contradict_it(tmp_path: Path) -> None:
    """The lesson states no error its rule could test runs by (the slip is read from the
    command and the signal), so a run of another task whose failed call worked when made
    again is no evidence against it: it is learned beside such groups, and its rule is
    untestable."""
    from agentmem.learning.rules import Rule, applies

    from .conftest import FakeEmbedder, FakeModel

    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        slip = [
            _cc(RESTART, CC_KILLED, False),
            _cc('pgrep -fl "node server.js"', "4242 node server.js"),
            _cc("kill 4242", ""),
        ]
        mem.feedback(mem.record("restart the dev server", slip, meta={"cwd": "/w/app"}), "accept")
        for n in range(3):  # a flaky deploy that worked when run again, in other projects
            flaky = [
                _cc("make deploy", "Exit code 2\nerror: lock held", False),
                _cc("make deploy", "done"),
            ]
            for _ in range(2):
                tid = mem.record(f"deploy the site {n}", flaky, meta={"cwd": f"/w/site{n}"})
                mem.feedback(tid, "accept")
        mem.learn(use_model=False)
        [lesson] = [e for e in mem.experiences() if e.text == self_kill_text("Bash")]
        assert lesson.contradict_groups == 0
        rule = Rule.from_json(lesson.rule)
        assert rule is not None and not rule.testable
        assert not applies(rule, "deploy the site 0", tuple(flaky))


def _corpus() -> Path:
    return Path(os.environ.get("AGENTMEM_REAL_DATA", ROOT.parent / "shared" / "data"))


def test_the_real_codex_session_that_moved_on_teaches_nothing() -> None:
    """Development half: ``pkill -f '...' || true`` ended with code -1 (its own bash -lc
    killed), ``pgrep -af`` then listed only itself, and the agent moved on."""
    from agentmem.importers.codex import parse_codex
    from agentmem.importers.turns import turn_record

    name = "rollout-2026-03-17T22-26-44-019cfde8-9644-77e2-aed2-2b199d618125.jsonl"
    path = _corpus() / "corpus" / "teacher-evaluation" / name
    if not path.exists():
        pytest.skip(f"{path} is not placed (benchmarks/real/SOURCES.md)")
    turns = parse_codex(path.read_bytes()).turns
    runs = [turn_record("codex", turn, project=None).trajectory for turn in turns]
    runs = [t for t in runs if any("pkill -f" in json.dumps(s.params) for s in t.steps)]
    assert runs
    for run in runs:
        [i] = [k for k, s in enumerate(run.steps) if "pkill -f" in json.dumps(s.params)]
        assert outcome(run.steps[i]).exit_code == -1
        assert self_kills(run) == []
        assert not [c for c in find_corrections(run) if c.failed == i]
