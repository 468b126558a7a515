"""Review of four commits: the client that asks (MCP clientInfo, ``context --client``), the
session guard by ``meta.session_id``, a network share's case, and the self-kill rule with
Codex's exit -1 keeping its sign. Each test is a case the change had wrong or had not
checked, on synthetic runs only."""

from __future__ import annotations

from agentmem.agents import outcome
from agentmem.learning.corrections import find_corrections
from agentmem.records import Step, Trajectory


def _codex(cmd: str, code: int, out: str = "") -> Step:
    framed = (
        f'Command: /bin/bash -lc "{cmd}"\nChunk ID: 9c42ea\nWall time: 0.0000 seconds\n'
        f"Process exited with code {code}\nOriginal token count: 0\nOutput:\n{out}"
    )
    return Step("exec_command", {"cmd": cmd, "workdir": "/w/app"}, framed, code == 0)


# -- Codex's exit -1 keeps its sign ------------------------------------------------------


def test_an_answering_program_killed_by_a_signal_teaches_no_operand():
    """The sign of ``Process exited with code -1`` is kept now, so a grep that Codex or the
    user stopped (-1: a signal) was no longer read as grep's "no match" (1) and became a
    misuse: its operand was then learned as the slip. A call stopped from outside says
    nothing of its arguments; it is read as before (informational for grep, rg, diff)."""
    killed = _codex("grep -rn TODO node_modules", -1, "node_modules/x.js:1:TODO")
    worked = _codex("grep -rn TODO src", 0, "src/a.py:1:# TODO")
    assert outcome(killed).exit_code == -1  # the sign is still kept for the self-kill rule
    assert outcome(killed).failure.value == "informational"
    t = Trajectory(task="find the todo items", steps=(killed, worked), meta={"cwd": "/w/app"})
    assert [c.finding.text for c in find_corrections(t)] == []
