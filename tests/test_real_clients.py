"""The real Claude Code and Codex CLIs, end to end, driven by a scripted model.

Each test is a user's day with one client (see :mod:`tests.real_clients`): agentmem's
hooks installed with ``agentmem hooks install``, sessions of the real client whose
model is :mod:`tests.scripted_model` (in a network namespace of its own where
``unshare`` allows it), ``agentmem learn --no-model``, and a later session. They
check what a user relies on: the hooks fire, every finished turn is imported with
the calls that really ran, a lesson reaches the model's request in a later session,
and importing again adds nothing.

The clients are the pinned versions ``.ci/run`` installs (Claude Code 2.1.332,
Codex 0.171.0; ``$AGENTMEM_CLAUDE``, ``$AGENTMEM_CODEX``); without them these tests
are skipped with the reason, and CI fails if they are.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentmem import Memory

from .real_clients import Sandbox, Session, client_binary, skip_reason
from .scripted_model import Call, Scenario, Turn, shell

CLIENTS = ["claude-code", "codex"]
NOTES = {"docs/notes.txt": "the notes\n"}


def _need(name: str) -> str:
    """The client, or a skip with the reason (a failure where CI requires the clients)."""
    if client_binary(name) is None:
        if os.environ.get("AGENTMEM_REAL_CLIENTS_REQUIRED"):
            pytest.fail(skip_reason(name))
        pytest.skip(skip_reason(name))
    return name


@pytest.fixture(params=CLIENTS)
def client(request: pytest.FixtureRequest) -> str:
    return _need(request.param)


def _fix_the_path() -> tuple[Call, ...]:
    """``cat notes.txt`` fails (the file is under docs/), ``cat docs/notes.txt`` works."""
    return (shell("cat notes.txt"), shell("cat docs/notes.txt"))


def _explore(description: bool = False) -> tuple[Call, ...]:
    """Issue 23's scenario: ``cat notes.txt`` fails, ``ls``, ``cat docs/notes.txt`` works."""
    d = (lambda text: text) if description else (lambda text: None)
    return (
        shell("cat notes.txt", d("Show the notes")),
        shell("ls", d("List the files")),
        shell("cat docs/notes.txt", d("Show the notes")),
    )


def _steps(mem: Memory) -> list[list[tuple[str, str, bool]]]:
    """Every imported trajectory's calls: (tool, command, success)."""
    out = []
    for t in sorted(mem.trajectories(), key=lambda t: t.id or 0):
        out.append(
            [
                (s.tool, str(s.params.get("command") or s.params.get("cmd") or ""), s.success)
                for s in t.steps
            ]
        )
    return out


def _asked(calls: tuple[Call, ...]) -> list[str]:
    return [str(c.input["command"]) for c in calls]


def _accept_all(box: Sandbox) -> None:
    """The user's verdict on every imported turn: accepted (instead of waiting out the
    120 s acceptance window)."""
    rows = json.loads(box.agentmem("imports", "--json").stdout)
    for tid in {r["trajectory_id"] for r in rows if r["trajectory_id"]}:
        box.agentmem("feedback", str(tid), "--accept")


def _imported(box: Sandbox) -> list[dict[str, Any]]:
    with Memory.open(box.library) as mem:
        return mem.recent_imports(limit=100)


# -- the day: hooks fire, turns are imported, a lesson comes back ----------------------------------


def test_hooks_record_every_turn_and_a_lesson_reaches_the_next_session(tmp_path: Path, client: str):
    box = Sandbox.create(tmp_path, client, NOTES)
    users = _users_own_config(box)
    out = box.install_hooks().stdout
    assert client == "claude-code" or "Codex 0.171.0: hooks (UserPromptSubmit, Stop)" in out
    calls = _fix_the_path()
    tasks = ["Show me the notes", "Print the notes for me", "What do the notes say"]
    for prompt in tasks:
        s = box.session(prompt, Scenario((Turn(prompt, calls, "The notes say: the notes"),)))
        assert s.returncode == 0, s.stderr[-2000:]
        assert [r["action"] for r in s.turn_requests][-1] == "The notes say: the notes"
    log = box.hooks_log.read_text()
    assert log.count(f"{client} session") == len(tasks), log  # one Stop per session
    with Memory.open(box.library) as mem:
        steps = _steps(mem)
    assert len(steps) == len(tasks), steps
    for run in steps:
        assert [c for _, c, _ in run] == _asked(calls)
        assert [ok for *_, ok in run] == [False, True]
    _accept_all(box)
    box.agentmem("learn", "--no-model")
    with Memory.open(box.library) as mem:
        lessons = [e.text for e in mem.experiences()]
    assert any("docs/notes.txt" in text for text in lessons), lessons
    # A model that follows the lesson goes straight to docs/notes.txt.
    prompt = "Show me the notes again"
    follow = ("docs/notes.txt", (shell("cat docs/notes.txt"),))
    later = box.session(prompt, Scenario((Turn(prompt, calls, "The notes.", follow),)))
    assert later.returncode == 0, later.stderr[-2000:]
    served = [text for text in lessons if _served(text, later)]
    assert served, (lessons, later.context[-3000:])
    with Memory.open(box.library) as mem:
        last = _steps(mem)[-1]
    assert [(c, ok) for _, c, ok in last] == [("cat docs/notes.txt", True)]  # no mistake
    _reimport_adds_nothing(box)
    box.agentmem("hooks", "uninstall", client)
    assert {p: p.read_bytes() for p in users} == users  # the user's own files, byte for byte


def _users_own_config(box: Sandbox) -> dict[Path, bytes]:
    """Settings of the user's own, in files agentmem's install edits: their bytes."""
    if box.client == "claude-code":
        settings = box.home / ".claude" / "settings.json"
        settings.write_text(
            '{\n    "permissions": {"allow": ["Bash(cat:*)"]},\n    "x": "caf\u00e9"\n}'
        )
        return {settings: settings.read_bytes()}
    hooks = box.home / ".codex" / "hooks.json"
    hooks.write_text(
        '{"hooks": {"PostToolUse": [{"matcher": "Bash",\n'
        '  "hooks": [{"type": "command", "command": "true"}]}]}}\n'
    )
    return {p: p.read_bytes() for p in (hooks, box.codex_config)}


def _reimport_adds_nothing(box: Sandbox) -> None:
    """Importing every transcript the client wrote again records nothing new."""
    with Memory.open(box.library) as mem:
        before = [(t.id, t.task, len(t.steps)) for t in mem.trajectories()]
    rows = _imported(box)
    for path in box.transcripts():
        box.agentmem("import", "--format", box.client, str(path))
    with Memory.open(box.library) as mem:
        assert [(t.id, t.task, len(t.steps)) for t in mem.trajectories()] == before
    assert len(_imported(box)) == len(rows)


def _served(lesson: str, session: Session) -> bool:
    """Whether the lesson's text reached the model (JSON-escaped inside the request)."""
    return json.dumps(lesson, ensure_ascii=False)[1:-1] in session.context


# -- issue 23: exploration teaches at most a project fact -----------------------------------------

#: What a lesson must never say after ``cat notes.txt``, ``ls``, ``cat docs/notes.txt``: that
#: one program stands for another (``ls`` for ``cat``), or that ``cat`` must never be run.
SUBSTITUTION = re.compile(r"\bls\b|never pass command=|instead of cat|not cat\b", re.IGNORECASE)


@pytest.mark.parametrize(
    "description",
    [
        False,  # learned "Call Bash with command like ls; never pass command=cat notes.txt."
        True,  # learned nothing: every retry changed two values (command and description)
    ],
    ids=["plain", "description"],
)
def test_exploration_teaches_at_most_a_project_fact(tmp_path: Path, client: str, description: bool):
    """Three tasks, each ``cat notes.txt`` (No such file), ``ls``, ``cat docs/notes.txt``,
    with and without the ``description`` Claude Code writes on every Bash call."""
    box = Sandbox.create(tmp_path, client, NOTES)
    box.install_hooks()
    calls = _explore(description)
    for prompt in ["Show me the notes", "Print the notes for me", "What do the notes say"]:
        s = box.session(prompt, Scenario((Turn(prompt, calls, "The notes say: the notes"),)))
        assert s.returncode == 0, s.stderr[-2000:]
    with Memory.open(box.library) as mem:
        assert [[c for _, c, _ in run] for run in _steps(mem)] == [_asked(calls)] * 3
    _accept_all(box)
    box.agentmem("learn", "--no-model")
    lessons = json.loads(box.agentmem("experiences", "--json").stdout)
    wrong = [e["text"] for e in lessons if SUBSTITUTION.search(e["text"])]
    assert not wrong, wrong
    assert all(e["scope"] != "global" for e in lessons), lessons  # a project fact at most
    later = box.session("Show me the notes again", Scenario((Turn("Show me the notes again"),)))
    assert later.returncode == 0
    assert not any(_served(text, later) for text in wrong)


# -- the sessions the real clients wrote (tests/data/real-clients): no binary needed ---------------

FIXTURES = Path(__file__).parent / "data" / "real-clients"
CLAUDE_SESSION = FIXTURES / "claude-code-2.1.332"
CODEX_ROLLOUT = FIXTURES / "codex-0.171.0"


def _import_fixture(tmp_path: Path, fmt: str, path: Path) -> tuple[str, list[Any]]:
    """Import a fixture as ``agentmem import`` does; its report and the trajectories."""
    from click.testing import CliRunner

    from agentmem.cli import cli

    db = tmp_path / "fixture.db"
    r = CliRunner().invoke(cli, ["import", "--db", str(db), "--format", fmt, str(path)])
    assert r.exit_code == 0, r.output
    again = CliRunner().invoke(cli, ["import", "--db", str(db), "--format", fmt, str(path)])
    assert again.exit_code == 0 and "imported 0 trajectories" in again.output, again.output
    with Memory.open(db, embedder="hash") as mem:
        return r.output, sorted(mem.trajectories(), key=lambda t: t.id or 0)


def test_claude_code_2_1_332_session_and_its_background_sub_agent(tmp_path: Path):
    """The main turn with its four calls, the sub-agent's own turn, and the sub-agent's
    ``<task-notification>`` taken for no task of its own."""
    _, runs = _import_fixture(tmp_path, "claude-code", CLAUDE_SESSION)
    main, sub = runs
    assert main.task == "Show me the notes"
    assert [(s.tool, s.params.get("command"), s.success) for s in main.steps] == [
        ("Bash", "cat notes.txt", False),
        ("Bash", "ls", True),
        ("Bash", "cat docs/notes.txt", True),
        ("Agent", None, True),
    ]
    assert main.steps[0].output and "No such file or directory" in main.steps[0].output
    assert sub.task == "Subtask: count the files in docs"
    assert [s.params["command"] for s in sub.steps] == ["ls docs | wc -l"]
    assert sub.meta["subagent"]["parent_session"] == main.meta["session_id"]


def test_claude_code_2_1_332_lines_are_all_known_and_the_model_is_recorded(tmp_path: Path):
    output, runs = _import_fixture(tmp_path, "claude-code", CLAUDE_SESSION)
    assert "unknown" not in output, output  # attachment, api-request, last-prompt, ...
    assert all(t.meta.get("model") for t in runs), [t.meta for t in runs]


def test_codex_0_171_rollout_records_the_commands_that_ran(tmp_path: Path):
    _, runs = _import_fixture(tmp_path, "codex", CODEX_ROLLOUT)
    first = runs[0]
    assert first.task == "Show me the notes"
    assert [(s.tool, s.params.get("cmd"), s.success) for s in first.steps] == [
        ("exec_command", "cat notes.txt", False),
        ("exec_command", "ls", True),
        ("exec_command", "cat docs/notes.txt", True),
    ]
    assert first.meta.get("agent_version") == "0.171.0"


def test_codex_0_171_item_completed_outputs_and_own_mcp_calls(tmp_path: Path):
    """Results from ``item_completed`` (no "Chunk ID / Wall time" header in an output; a
    failure's exit code kept in one line of Codex's own), no unknown line kinds, and
    agentmem's own ``agentmem_context`` call not a step of a task."""
    from agentmem.agents import outcome

    output, runs = _import_fixture(tmp_path, "codex", CODEX_ROLLOUT)
    assert "unknown" not in output, output  # world_state, token_usage_record, ...
    steps = [s for t in runs for s in t.steps]
    missing = "cat: notes.txt: No such file or directory"
    assert steps[0].output and steps[0].output.strip().endswith(missing), steps[0].output
    said = outcome(steps[0])
    assert said.failed and said.diagnostic == missing and said.exit_code == 1, said
    assert not any("Chunk ID" in (s.output or "") for s in steps)
    assert not any("agentmem_context" in s.tool for s in steps), [s.tool for s in steps]


# -- Codex: lessons through MCP as well ---------------------------------------------------------


def test_codex_mcp_context_serves_the_project_of_the_session(tmp_path: Path):
    """A required agentmem MCP server in Codex's config.toml: the model's
    ``agentmem_context`` call gets the lessons of the session's project."""
    box = Sandbox.create(tmp_path, _need("codex"))
    with Memory.open(box.library, embedder="hash") as mem:
        mem.add("Before git push, run git pull --rebase when the push is rejected.", domain="git")
        scoped = mem.add("Run this project's tests with make check.", domain="test")
        _scope(mem, scoped.id, str(box.project))
        # Claude Code's own tool: served where the client is unknown, never to Codex, which
        # the server knows by the name Codex gives in its MCP initialize
        bash = mem.add("The Bash tool keeps its folder: run the tests and push from the top.")
        with mem.db.conn:
            mem.db.execute(
                "UPDATE experiences SET rule = ? WHERE id = ?",
                [json.dumps({"client": "claude-code"}), bash.id],
            )
        assert "keeps its folder" in mem.context("run the tests and push", project=box.project)
    env = {"PYTHONPATH": box.env["PYTHONPATH"], "AGENTMEM_DB": str(box.library)}
    with box.codex_config.open("a") as fh:
        fh.write(
            "\n[mcp_servers.agentmem]\n"
            f"command = {json.dumps(sys.executable)}\n"
            'args = ["-m", "agentmem", "mcp"]\n'
            "required = true\n"
            f"env = {{ {', '.join(f'{k} = {json.dumps(v)}' for k, v in env.items())} }}\n"
        )
    call = Call("mcp__agentmem__agentmem_context", {"task": "run the tests and push"})
    s = box.session("Run the tests", Scenario((Turn("Run the tests", (call,), "Done."),)))
    assert s.returncode == 0, s.stderr[-2000:]
    [after] = [r for r in s.requests if r.get("action") == "Done."]
    outputs = [
        str(i.get("output"))
        for i in after["body"]["input"]
        if i.get("type") == "function_call_output"
    ]
    assert any("make check" in o and "git pull --rebase" in o for o in outputs), outputs
    assert not any("keeps its folder" in o for o in outputs), outputs
    # required = true, as docs/agents.md advises: a server that cannot start stops Codex
    box.codex_config.write_text(
        box.codex_config.read_text().replace(json.dumps(sys.executable), '"/nonexistent/python"')
    )
    s = box.session("Run the tests", Scenario((Turn("Run the tests", (call,), "Done."),)))
    assert s.returncode != 0 and "required MCP servers failed" in s.stderr and not s.requests


def test_codex_notify_records_each_turn(tmp_path: Path):
    """``hooks install codex --notify`` (what an older Codex gets): the real Codex runs the
    notify program after the turn, and the turn is imported from the thread's rollout."""
    box = Sandbox.create(tmp_path, _need("codex"), NOTES)
    before = box.codex_config.read_bytes()
    assert "added notify" in box.install_hooks("--notify").stdout
    calls = _fix_the_path()
    s = box.session("Show me the notes", Scenario((Turn("Show me the notes", calls, "Done."),)))
    assert s.returncode == 0, s.stderr[-2000:]
    # Codex starts notify without waiting for it: codex exec may exit before the import ends
    deadline = time.monotonic() + 60
    while "imported 1 trajectories" not in _text(box.hooks_log) and time.monotonic() < deadline:
        time.sleep(0.2)
    with Memory.open(box.library) as mem:
        assert [[(c, ok) for _, c, ok in run] for run in _steps(mem)] == [
            [("cat notes.txt", False), ("cat docs/notes.txt", True)]
        ]
    box.agentmem("hooks", "uninstall", "codex")
    assert box.codex_config.read_bytes() == before


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _scope(mem: Memory, experience_id: int, project: str) -> None:
    session = mem.db.execute("SELECT max(id) FROM sessions").fetchone()[0]
    with mem.db.conn:
        mem.db.execute(
            "INSERT INTO experience_scopes (experience_id, session_id, project, support, "
            "reason) VALUES (?, ?, ?, ?, 'test')",
            [experience_id, session, project, json.dumps([project])],
        )


# -- a hook that never slows the agent ------------------------------------------------------------

#: The prompt hook's budget at 10k lessons, as the client itself times it, in cold starts of
#: ``python -c pass`` measured in the same run (1.6 to 2.4, and once 3.5 at load 10, on the
#: busy 2-core machine, the client's own spawning in the figure; 2.4 to 3.0 before issue 31's
#: lean hook; its import set is guarded by tests/test_hook_imports.py, its time measured by
#: benchmarks/bench_prompt_hook.py).
PROMPT_HOOK_STARTS = 5.0
_CLAUDE_HOOK_TIME = re.compile(
    r"Hooks: UserPromptSubmit \[[^\]]*agentmem hooks run[^\]]*\] finished with status 0 \((\d+)ms\)"
)
_CODEX_HOOK_EVENT = re.compile(r"^(\S+Z) .*app-server event: hook/(started|completed)", re.M)


def _hook_ms(box: Sandbox, n: int, prompt: str) -> tuple[float, Session]:
    """One session; how long its UserPromptSubmit hook took, from the client's own log."""
    scenario = Scenario((Turn(prompt),))
    if box.client == "claude-code":
        debug = box.root / f"debug-{n}.txt"
        s = box.session(prompt, scenario, extra=["--debug-file", str(debug)])
        [ms] = _CLAUDE_HOOK_TIME.findall(debug.read_text())
        return float(ms), s
    s = box.session(prompt, scenario, env={"RUST_LOG": "codex_app_server::outgoing_message=trace"})
    from datetime import datetime

    events = _CODEX_HOOK_EVENT.findall(s.stderr)  # the first pair is UserPromptSubmit
    assert [kind for _, kind in events[:2]] == ["started", "completed"], events
    start, end = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t, _ in events[:2])
    return (end - start).total_seconds() * 1000, s


def _python_start_ms(box: Sandbox) -> float:
    """The floor: a cold ``python -c pass`` of the same Python in the same environment,
    best of five, measured in the same run as the hook."""
    import subprocess
    import time

    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=box.env, check=True)
        best = min(best, (time.perf_counter() - t0) * 1000)
    return best


def test_prompt_hook_at_10k_lessons_costs_a_few_python_starts(tmp_path: Path, client: str):
    """Cold ``agentmem hooks run`` for UserPromptSubmit, as the real client times it, with
    10,000 lessons in the library, against a cold ``python -c pass`` measured in the same
    run (no absolute time: machines differ): the best of three sessions is at most
    :data:`PROMPT_HOOK_STARTS` Python starts. (A regression such as compiling the
    redaction rules or importing the shell parser on this path costs several.)"""
    from benchmarks.bench_context import build

    box = Sandbox.create(tmp_path, client)
    build(box.library, 10_000)
    box.install_hooks()
    times = []
    for n in range(3):
        ms, s = _hook_ms(box, n, "Call book_reservation for the flight")
        assert s.returncode == 0, s.stderr[-2000:]
        assert "Before calling book_reservation" in s.context  # the lessons reached the model
        times.append(ms)
    floor = _python_start_ms(box)
    shown = ", ".join(f"{t:.0f}" for t in times)
    ratio = min(times) / floor
    print(
        f"{client} UserPromptSubmit at 10k lessons: {shown} ms; python -c pass {floor:.0f} ms; "
        f"ratio {ratio:.2f} (at most {PROMPT_HOOK_STARTS})"
    )
    assert ratio <= PROMPT_HOOK_STARTS, (times, floor)


def test_stop_imports_a_long_session_within_its_timeout(tmp_path: Path):
    """The Stop hook on a session of 300 turns and 1,800 calls (about 5 MB): the first
    import (hooks installed late in a long session) and the next, one turn later."""
    import subprocess

    from agentmem.hooks.install import CLAUDE_EVENTS

    from .transcripts import ClaudeSession

    s = ClaudeSession(cwd=str(tmp_path / "proj"))
    for i in range(300):
        s.prompt(f"Task {i}: fix module {i} and run its tests")
        for j in range(6):
            out = f"{'x' * 2000} {i} {j}"
            s.tool("Bash", {"command": f"pytest tests/test_{i}_{j}.py"}, out, is_error=j == 0)
        s.say("Done.")
    transcript = s.write(tmp_path / "session.jsonl")
    db = tmp_path / "lib.db"
    cmd = [sys.executable, "-m", "agentmem", "hooks", "run", "claude-code", "--db", str(db)]
    stop = {
        "session_id": s.session_id,
        "transcript_path": str(transcript),
        "cwd": s.cwd,
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "HF_HUB_OFFLINE": "1"}
    seconds = []
    for _ in range(2):
        t = time.perf_counter()
        p = subprocess.run(cmd, input=json.dumps(stop).encode(), capture_output=True, env=env)
        seconds.append(time.perf_counter() - t)
        assert p.returncode == 0 and p.stderr == b"", p.stderr
        s.prompt("Task last: one more")
        s.tool("Bash", {"command": "ls"}, "a")
        s.say("Done.")
        s.write(transcript)
    print(f"Stop on a 300-turn session: first {seconds[0]:.2f} s, next {seconds[1]:.2f} s")
    with Memory.open(db) as mem:
        assert len(mem.trajectories()) == 301
    assert max(seconds) < CLAUDE_EVENTS["Stop"], seconds


# -- the scripted model itself (no client needed) ------------------------------------------------


def test_scripted_model_answers_from_the_conversation_alone():
    """The next action depends only on the request: its last prompt, the tool results since,
    and whether a lesson was put around the prompt; an unknown prompt gets a short text."""
    import urllib.request

    from .scripted_model import ScriptedModel

    turn = Turn("Show me the notes", _fix_the_path(), "Done.", ("docs/", (shell("cat docs/x"),)))

    def post(url: str, body: dict[str, Any]) -> str:
        req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.read().decode()

    result = {"type": "tool_result", "tool_use_id": "t", "content": "x"}
    with ScriptedModel(Scenario((turn,))) as m:
        user = {"role": "user", "content": "Show me the notes"}
        msgs = m.base_url + "/v1/messages?beta=true"
        tools = [{"name": "Bash"}]
        assert '"command\\": \\"cat notes.txt\\"' in post(
            msgs, {"messages": [user], "tools": tools}
        )
        two = [user, {"role": "assistant", "content": []}, {"role": "user", "content": [result]}]
        assert "cat docs/notes.txt" in post(msgs, {"messages": two, "tools": tools})
        three = [*two, {"role": "assistant", "content": []}, {"role": "user", "content": [result]}]
        assert '"text": "Done."' in post(msgs, {"messages": three, "tools": tools})
        served = {"role": "system", "content": [{"type": "text", "text": "Lessons: docs/"}]}
        assert "cat docs/x" in post(msgs, {"messages": [user, served], "tools": tools})
        other = {"messages": [{"role": "user", "content": "Write a title"}]}
        assert '"text": "OK."' in post(msgs, other)
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Show me the notes"}],
        }
        out = post(
            m.base_url + "/v1/responses", {"input": [item], "tools": [{"name": "exec_command"}]}
        )
        assert "response.completed" in out and '\\"cmd\\": \\"cat notes.txt\\"' in out
    assert [r["action"] for r in m.requests][-1]["input"] == {"command": "cat notes.txt"}
