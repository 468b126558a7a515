"""Review of four commits: the client that asks (MCP clientInfo, ``context --client``), the
session guard by ``meta.session_id``, a network share's case, and the self-kill rule with
Codex's exit -1 keeping its sign. Each test is a case the change had wrong or had not
checked, on synthetic runs only."""

from __future__ import annotations

import json
from pathlib import Path

from agentmem import Memory
from agentmem.agents import outcome
from agentmem.learning.corrections import find_corrections
from agentmem.learning.kinds import Kind
from agentmem.learning.self_kill import self_kills
from agentmem.records import Step, Trajectory
from agentmem.storage.imports import earlier_in_session

from .test_self_kill import CC_KILLED, _cc, _codex


def _run(*steps: Step) -> Trajectory:
    return Trajectory(task="restart the dev server", steps=steps, meta={"cwd": "/w/app"})


def _self_killed(*steps: Step) -> list[tuple[int, int]]:
    out = []
    for c in find_corrections(_run(*steps)):
        if c.kind == Kind.TOOL_RULE and c.finding.detail.get("refused") == "self-kill":
            out.append((c.failed, c.fixed))
    return out


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


# -- the self-kill rule --------------------------------------------------------------------

LISTED = _cc('pgrep -fl "node server.js"', "4242 node server.js")
FIXED = _cc("kill 4242", "")


def test_the_rule_still_learns_the_plain_case():
    failed = _cc('pkill -f "node server.js"; sleep 1; nohup node server.js &', CC_KILLED, False)
    assert _self_killed(failed, LISTED, FIXED) == [(0, 2)]


def _restart(opts: str) -> Step:
    return _cc(f'pkill {opts} "node server.js"; sleep 1; nohup node server.js &', CC_KILLED, False)


def test_pkill_options_that_leave_its_own_shell_alone_are_no_self_kill():
    """``-x`` matches the whole command line exactly, ``-o`` picks the oldest process (the
    server, not the shell just started), ``-O N`` only processes older than N seconds,
    ``-A`` leaves out pkill's ancestors, and ``-P``, ``-u``, ``-U``, ``-s``, ``-t``,
    ``-g``, ``-G``, ``--ns``, ``--cgroup`` narrow the match to processes the shell need
    not be: such a pkill does not kill its shell (bash 5.2 and procps 4.0 checked by
    hand), so a signal that ended the call was something else."""
    for opts in (
        "-xf",
        "-f -x",
        "-o -f",
        "-f --oldest",
        "-f -O 5",
        "-A -f",
        "-f --ignore-ancestors",
        "-f -P 1",
        "-f -u www-data",
        "-f -s 0",
        "-f --ns 1",
        "-f --exact",
    ):
        assert _self_killed(_restart(opts), LISTED, FIXED) == [], opts
    # -n (the newest) and a signal or -e, -i, -c still leave the shell in the match
    for opts in ("-n -f", "-9 -f", "-ef", "-if"):
        assert _self_killed(_restart(opts), LISTED, FIXED) == [(0, 2)], opts


def test_a_timeout_or_an_interrupt_is_no_self_kill():
    """Claude Code ends a call that ran past its limit, or that the user stopped, with a
    signal too (143, 137): the output says so, and the pkill may never have run (it came
    after the command that took the time). Only a call that nothing else ended counts."""
    cmd = 'npm run build && pkill -f "node server.js"; nohup node server.js &'
    for said in (
        "Exit code 143\nCommand timed out after 2m 0.0s",
        "Exit code 137\n[Request interrupted by user for tool use]",
    ):
        failed = _cc(cmd, said, False)
        assert outcome(failed).exit_code in (137, 143)
        assert _self_killed(failed, LISTED, FIXED) == [], said
        assert self_kills(_run(failed, LISTED, FIXED)) == [], said


def test_a_kill_that_stops_nothing_or_other_processes_is_no_fix():
    """The fix must stop the same processes: ``kill -0 PID`` (or ``-s 0``, ``-l``) only asks
    whether a process lives, and a process id another listing printed, on a line that
    names nothing of the pattern, is some other process (a Python worker, not the server)."""
    failed = _restart("-f")
    for probe in ("kill -0 4242 && echo alive", "kill -s 0 4242", "kill -l 15"):
        assert _self_killed(failed, LISTED, _cc(probe, "alive")) == [], probe
    other = _cc("ps aux | grep python", "me  777  0.0  python worker.py")
    assert _self_killed(failed, other, _cc("kill 777", "")) == []
    # the listing that names the pattern's processes is still the way
    assert _self_killed(failed, other, LISTED, FIXED) == [(0, 3)]
    assert _self_killed(failed, LISTED, _cc("kill -9 4242", "")) == [(0, 2)]


# -- the session guard by meta.session_id --------------------------------------------------


def test_an_unsigned_inbox_run_is_not_of_the_learners_own_session(tmp_path: Path):
    """The guard groups runs by source, ``meta.session_id`` and ``meta.team_member``. An
    unsigned item has its ``team_member`` removed (:func:`agentmem.team.inbox.attribute`),
    so, naming the session id of a run the learner recorded itself, it becomes an earlier
    turn of that session (and its paths then hide that session's location lessons)."""
    from agentmem.team.inbox import attribute

    sid = "0a1b2c3d-0000-4000-8000-0000000000ff"
    step = [Step("Bash", {"command": "ls"}, "a", True)]
    item = {"trajectory": {"meta": json.dumps({"session_id": sid, "team_member": "ann"})}}
    unsigned = json.loads(attribute(item, None)["trajectory"]["meta"])
    assert "team_member" not in unsigned and unsigned["team_unsigned"] is True
    # a signed item's own claim to be unsigned is dropped with its claimed member
    claimed = {"trajectory": {"meta": json.dumps({"session_id": sid, "team_unsigned": True})}}
    signed = json.loads(attribute(claimed, "bob")["trajectory"]["meta"])
    assert signed == {"session_id": sid, "team_member": "bob"}
    with Memory.open(tmp_path / "m.db") as mem:
        pushed = mem.record("x", step, meta=unsigned)
        mine = mem.record("y", step, meta={"session_id": sid})
        later = mem.record("z", step, meta=unsigned)
        assert pushed not in earlier_in_session(mem.db, mine)
        # nor is the learner's run, or another unsigned one, of the unsigned run's session
        assert earlier_in_session(mem.db, later) == []
        again = mem.record("w", step, meta={"session_id": sid})
        assert earlier_in_session(mem.db, again) == [mine]


# -- the client that asks ------------------------------------------------------------------


def _modern_call(db: Path, tool: str, task: str, info: object) -> dict:
    """One ``tools/call`` of the 2026-07-28 protocol over stdio: no ``initialize``, the
    client's info in the request's own ``_meta`` envelope."""
    import os
    import selectors
    import subprocess
    import sys

    from .conftest import ROOT

    meta: dict[str, object] = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    if info is not None:
        meta["io.modelcontextprotocol/clientInfo"] = info
    call = {"name": tool, "arguments": {"task": task}, "_meta": meta}
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(
        [sys.executable, "-m", "agentmem", "mcp", "--db", str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=db.parent,
    )
    try:
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write((json.dumps(request) + "\n").encode())
        p.stdin.flush()
        sel = selectors.DefaultSelector()
        sel.register(p.stdout, selectors.EVENT_READ)
        assert sel.select(timeout=120), "no answer"
        answer: dict = json.loads(p.stdout.readline())
    finally:
        p.kill()
        p.wait()
    return answer


def test_the_mcp_server_knows_its_client_by_the_request_envelope(tmp_path: Path):
    """Under the 2026-07-28 protocol a client sends no ``initialize``: its info rides each
    request's ``_meta``, and the SDK builds the session's ``client_params`` from it. A
    name no client table gives, or no info, is an unknown client (every lesson served)."""
    import re

    from .test_mcp_client import BASH
    from .test_mcp_client import PROMPT as prompt

    db = tmp_path / "lib.db"
    with Memory.open(db, embedder="hash") as mem:
        bash = mem.add(BASH, domain="shell")
        with mem.db.conn:
            mem.db.execute(
                "UPDATE experiences SET rule = ? WHERE id = ?",
                [json.dumps({"client": "claude-code"}), bash.id],
            )
    for info, served in (
        ({"name": "codex-mcp-client", "version": "1"}, False),
        ({"name": "claude-code", "version": "1"}, True),
        ({"name": "codex-mcp-client ", "version": "1"}, True),  # no name a table gives
        (None, True),
    ):
        answer = _modern_call(db, "agentmem_context", prompt, info)
        assert "result" in answer, (info, answer)
        text = "".join(c.get("text", "") for c in answer["result"]["content"])
        got = {int(m) for m in re.findall(r"\[L(\d+)\]", text)}
        assert (bash.id in got) == served, (info, answer)


def test_codexs_lesson_says_it_holds_beside_other_commands_only():
    """Codex's ``bash -lc`` runs a lone ``pkill -f`` in its own place (the rule learns
    nothing from one), so its lesson must not say every ``pkill -f`` there kills the
    shell: it names the case, a pkill beside other commands, and the way of running it
    alone. Claude Code's Bash holds even one command's text: its lesson stays as it was."""
    from agentmem.learning.self_kill import self_kill_text

    codex = self_kill_text("exec_command")
    assert "beside other commands" in codex and "pkill alone" in codex
    assert len(codex.split()) <= 32  # records.MAX_EXPERIENCE_WORDS: no cut
    assert self_kill_text("Bash") == (
        "pkill -f PATTERN in Bash also kills the shell running the command, whose own "
        "text holds PATTERN, and the call dies: kill by PID, or bracket one letter ([s]erver)."
    )


def test_codexs_lesson_is_learned_whole_and_served_to_codex(tmp_path: Path):
    from agentmem.learning.self_kill import self_kill_text
    from agentmem.serving import Query

    from .conftest import FakeEmbedder, FakeModel

    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        for n, (name, pid) in enumerate((("streamlit run app.py", 4242), ("vite --port 80", 77))):
            steps = [
                _codex(f"pkill -f '{name}'; sleep 1; nohup {name} > log 2>&1 &", -1),
                _codex(f"pgrep -fl '{name}'", 0, f"{pid} {name}"),
                _codex(f"kill {pid}", 0),
            ]
            tid = mem.record(f"restart the dev server {n}", steps, meta={"cwd": f"/w/app{n}"})
            mem.feedback(tid, "accept")
        mem.learn(use_model=False)
        assert [e.text for e in mem.experiences()] == [self_kill_text("exec_command")]

        def served(client: str) -> int:
            q = Query("restart the dev server with pkill", project="/w/app0", client=client)
            return len(mem.serve(q).lessons)

        assert served("codex") == 1 and served("claude-code") == 0
