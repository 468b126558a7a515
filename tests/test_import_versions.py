"""Every version's format: Codex 0.36 to 0.171 (item_completed, paginated rollouts, unified
exec polls, output headers, MCP names) and Claude Code 1.0.x to 2.1.x (running sub-agents, the
model, agentmem's own calls, old last turns)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from agentmem import Memory
from agentmem.agents import outcome
from agentmem.importers.claude_code import (
    StopState,
    parse_claude_code,
    running_subagents,
    stop_state,
)
from agentmem.importers.codex import parse_codex, strip_header
from agentmem.importers.run import STALE_SECONDS
from agentmem.records import Step

from .transcripts import ClaudeSession, CodexRollout

# -- Codex --------------------------------------------------------------------------------------


def test_output_headers_are_stripped_and_the_exit_code_read():
    out = strip_header(
        "Chunk ID: 4f2a\nWall time: 0.2 seconds\nProcess exited with code 2\n"
        "Original token count: 12\nOutput:\nls: cannot access 'x': No such file\n"
    )
    assert (out.text, out.exit_code, out.success) == (
        "ls: cannot access 'x': No such file\n",
        2,
        False,
    )
    running = strip_header(
        "Chunk ID: 1\nWall time: 1.0 seconds\nProcess running with session ID 7\nOutput:\nbuilding"
    )
    assert (running.text, running.exit_code, running.session) == ("building", None, "7")
    plain = strip_header("total 8\nChunk ID: not a header here")
    assert plain.text == "total 8\nChunk ID: not a header here" and plain.exit_code is None


def test_codex_exec_output_keeps_its_status_in_one_header_line(mem: Memory):
    """Codex's header (chunk id, wall time, token count) is dropped, but a failure's exit
    code stays in one line of Codex's own: a call read later still knows its status (a grep
    that exited 1 found nothing; one that exited 2 failed)."""
    r = CodexRollout()
    r.prompt("list it")
    r.exec("ls x", "ls: x: No such file", exit_code=1)
    r.exec("ls", "a.txt", exit_code=0)
    r.done()
    (turn,) = parse_codex(r.data()).turns
    failed, listed = turn.calls
    assert failed.output == "Process exited with code 1\nOutput:\nls: x: No such file"
    assert listed.output == "a.txt"
    said = outcome(Step("exec_command", {"cmd": "ls x"}, failed.output, False))
    assert (said.exit_code, said.diagnostic) == (1, "ls: x: No such file")


def test_codex_code_modes_exec_reads_its_status_from_the_script():
    """Codex 0.137+'s code mode (a validation-half Codex 0.137 session): ``exec`` runs
    JavaScript that calls the tools and answers "Script failed" or "Script completed"
    first; the call's status is that line, and the error is the line after the heading."""
    r = CodexRollout()
    r.prompt("read the agents file")
    script = 'const r = await tools.shell_command({command: "Get-Content AGENTS.md"});\ntext(r);'
    for cid, said in (
        (
            "c1",
            "Script failed\nWall time 0.1 seconds\nOutput:\n\n"
            "Script error:\nexecution error: Io(Os { code: 267, kind: NotADirectory })",
        ),
        ("c2", "Script completed\nWall time 0.0 seconds\nOutput:\n\n# Agents"),
    ):
        r.add(
            "response_item",
            {"type": "custom_tool_call", "name": "exec", "input": script, "call_id": cid},
        )
        out = [{"type": "input_text", "text": t} for t in said.split("\n\n", 1)]
        r.add("response_item", {"type": "custom_tool_call_output", "call_id": cid, "output": out})
    r.done()
    (turn,) = parse_codex(r.data()).turns
    failed, worked = turn.calls
    assert (failed.tool, failed.success, worked.success) == ("exec", False, True)
    said = outcome(Step("exec", {"input": script}, failed.output, False))
    assert said.failed and said.diagnostic.startswith("execution error: Io(")


def _poll(r: CodexRollout, cid: str, session: str, body: str) -> None:
    r.add(
        "response_item",
        {
            "type": "function_call",
            "name": "write_stdin",
            "arguments": json.dumps({"session_id": int(session), "chars": ""}),
            "call_id": cid,
        },
    )
    r.add("response_item", {"type": "function_call_output", "call_id": cid, "output": body})


def test_a_write_stdin_poll_is_part_of_the_command_it_polls():
    r = CodexRollout()
    r.prompt("run the build")
    r.add(
        "response_item",
        {
            "type": "function_call",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": "make"}),
            "call_id": "c1",
        },
    )
    r.add(
        "response_item",
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": "Chunk ID: a\nWall time: 10 seconds\nProcess running with session ID 3\n"
            "Output:\ncompiling",
        },
    )
    _poll(
        r,
        "c2",
        "3",
        "Chunk ID: b\nWall time: 5 seconds\nProcess running with session ID 3\nOutput:\nlinking",
    )
    _poll(
        r,
        "c3",
        "3",
        "Chunk ID: c\nWall time: 1 seconds\nProcess exited with code 2\n"
        "Output:\nerror: undefined symbol",
    )
    r.exec("make clean", "ok")
    r.done()
    (turn,) = parse_codex(r.data()).turns
    assert [c.tool for c in turn.calls] == ["exec_command", "exec_command"]
    make = turn.calls[0]
    # the exit code the last poll reported, kept at the head of the whole output
    assert (
        make.output
        == "Process exited with code 2\nOutput:\ncompiling\nlinking\nerror: undefined symbol"
    )
    assert make.success is False


def _item(r: CodexRollout, item: dict) -> None:
    r.add("event_msg", {"type": "item_completed", "thread_id": "t", "turn_id": "1", "item": item})


def test_item_completed_records_give_the_outcome(mem: Memory, tmp_path: Path):
    r = CodexRollout(cwd=str(tmp_path))
    r.prompt("check the tests")
    r.add(
        "response_item",
        {
            "type": "function_call",
            "name": "exec_command",
            "arguments": '{"cmd": "pytest"}',
            "call_id": "c1",
        },
    )
    r.add("response_item", {"type": "function_call_output", "call_id": "c1", "output": "1 failed"})
    _item(
        r,
        {
            "type": "CommandExecution",
            "id": "c1",
            "command": "pytest",
            "exit_code": 1,
            "aggregated_output": "1 failed",
            "status": "failed",
        },
    )
    r.done()
    (turn,) = parse_codex(r.data()).turns
    assert [(c.tool, c.success) for c in turn.calls] == [("exec_command", False)]


def test_a_paginated_rollout_of_items_only_imports(mem: Memory, tmp_path: Path):
    r = CodexRollout(cwd=str(tmp_path))
    r.lines[0]["payload"]["history_mode"] = "paginated"
    r.lines[0]["payload"]["cli_version"] = "0.171.0"
    r.add("turn_context", {"cwd": str(tmp_path), "model": "gpt-5.5-codex"})
    _item(
        r,
        {"type": "UserMessage", "id": "u1", "content": [{"type": "text", "text": "fix the build"}]},
    )
    _item(
        r,
        {
            "type": "CommandExecution",
            "id": "c1",
            "command": "cargo build",
            "exit_code": 127,
            "aggregated_output": "bash: cargo: command not found",
            "status": "failed",
        },
    )
    _item(
        r,
        {
            "type": "McpToolCall",
            "id": "c2",
            "server": "github",
            "tool": "get_issue",
            "arguments": {"number": 4},
            "result": {"content": [{"type": "text", "text": "no such issue"}], "isError": True},
            "status": "completed",
        },
    )
    _item(
        r,
        {
            "type": "McpToolCall",
            "id": "c3",
            "server": "agentmem",
            "tool": "agentmem_context",
            "arguments": {"task": "fix the build"},
            "result": {"content": [], "isError": False},
        },
    )
    _item(r, {"type": "AgentMessage", "id": "m1", "content": [{"type": "Text", "text": "Done."}]})
    r.add("event_msg", {"type": "task_complete"})
    path = r.write(
        tmp_path / "rollout-2026-01-05T10-00-00-0199a000-1111-7222-8333-944445555666.jsonl"
    )
    report = mem.import_transcripts("codex", [path])
    assert report.skipped_lines == {}
    (t,) = mem.trajectories()
    assert t.task == "fix the build" and t.meta["model"] == "gpt-5.5-codex"
    assert [(s.tool, s.success) for s in t.steps] == [
        ("exec_command", False),
        ("mcp__github__get_issue", False),
    ]
    assert t.steps[0].params == {"cmd": "cargo build"}
    assert (
        t.steps[0].output == "Process exited with code 127\nOutput:\nbash: cargo: command not found"
    )
    assert t.meta["agentmem_calls"] == 1  # agentmem's own look-up is not a step


def test_mcp_calls_are_named_mcp_server_tool_and_agentmem_calls_dropped(
    mem: Memory, tmp_path: Path
):
    r = CodexRollout(cwd=str(tmp_path))
    r.prompt("what does the issue say")
    r.add(
        "response_item",
        {
            "type": "function_call",
            "namespace": "mcp__agentmem",
            "name": "agentmem_context",
            "arguments": '{"task": "x"}',
            "call_id": "c1",
        },
    )
    r.add(
        "response_item", {"type": "function_call_output", "call_id": "c1", "output": "no lessons"}
    )
    r.add(
        "response_item",
        {
            "type": "function_call",
            "name": "github__get_issue",
            "arguments": '{"number": 4}',
            "call_id": "c2",
        },
    )
    r.add(
        "event_msg",
        {
            "type": "mcp_tool_call_end",
            "call_id": "c2",
            "invocation": {"server": "github", "tool": "get_issue"},
            "result": {"Ok": {"content": [], "isError": False}},
        },
    )
    r.add(
        "response_item",
        {"type": "function_call_output", "call_id": "c2", "output": "issue 4: flaky"},
    )
    r.done()
    (turn,) = parse_codex(r.data()).turns
    assert [c.tool for c in turn.calls] == ["mcp__github__get_issue"]
    assert turn.meta["agentmem_calls"] == 1


def test_known_codex_lines_are_skipped_quietly():
    r = CodexRollout()
    r.prompt("hi there, list it")
    for kind in ("world_state", "token_usage_record", "thread_settings_applied"):
        r.add(kind, {"x": 1})
    r.exec("ls", "a")
    r.done()
    parsed = parse_codex(r.data())
    assert parsed.report.skipped_lines == {}
    assert parsed.report.ignored["world_state"] == 1


# -- Claude Code ----------------------------------------------------------------------------------


def test_the_model_is_in_meta():
    s = ClaudeSession()
    s.prompt("list it")
    s.tool("Bash", {"command": "ls"}, "a")
    s.say("done")
    (turn,) = parse_claude_code(s.data()).turns
    assert turn.meta["model"] == "claude-sonnet-4-5"


def test_agentmem_own_mcp_calls_are_not_steps():
    s = ClaudeSession()
    s.prompt("fix the parser")
    s.tool("mcp__agentmem__agentmem_context", {"task": "fix the parser"}, "no lessons")
    s.tool("Bash", {"command": "pytest"}, "ok")
    s.tool("mcp__github__get_issue", {"number": 1}, "x")
    s.say("done")
    (turn,) = parse_claude_code(s.data()).turns
    assert [c.tool for c in turn.calls] == ["Bash", "mcp__github__get_issue"]
    assert turn.meta["agentmem_calls"] == 1


def test_running_subagents_from_background_tasks():
    tasks = [
        {"id": "a1", "type": "agent", "status": "running"},
        {"agent_id": "a2", "status": "completed"},
        {"taskId": "b3", "status": "pending"},
        "junk",
        {"status": "running"},
    ]
    assert running_subagents(tasks) == {"a1", "b3"}
    assert running_subagents(None) == frozenset() and running_subagents({"a": 1}) == frozenset()


def test_a_running_subagent_is_not_imported_as_final(mem: Memory, tmp_path: Path):
    main = ClaudeSession(cwd=str(tmp_path))
    main.prompt("research the parser in the background")
    tid = main.call(
        "Task", {"prompt": "read parser.py", "subagent_type": "Explore", "run_in_background": True}
    )
    main.result(tid, "Async agent launched. agentId: abc123", toolUseResult={"agentId": "abc123"})
    main.say("Started.")
    path = main.write(tmp_path / "p" / f"{main.session_id}.jsonl")
    sub = ClaudeSession(cwd=str(tmp_path))
    sub.sidechain, sub.agent_id = True, "abc123"
    sub.prompt("read parser.py")
    sub.tool("Read", {"file_path": "parser.py"}, "def parse(): ...")
    sub_path = sub.write(path.with_suffix("") / "subagents" / "agent-abc123.jsonl")
    report = mem.import_transcripts("claude-code", [path], final=True, running=["abc123"])
    assert len(report.ids) == 1 and report.in_progress == 1  # the parent turn; not the sub-agent
    sub.tool("Grep", {"pattern": "def "}, "parser.py:1")
    sub.say("parse() is the only entry point.")
    sub.write(sub_path)
    report = mem.import_transcripts("claude-code", [path], final=True)
    assert len(report.ids) == 1
    agent = [t for t in mem.trajectories() if "subagent" in t.meta]
    assert [s.tool for s in agent[0].steps] == ["Read", "Grep"]  # none of its calls lost
    assert agent[0].meta["subagent"]["turn_id"] == mem.trajectories()[0].meta["turn_id"]


def test_a_session_left_mid_call_imports_its_last_turn_once_stale(mem: Memory, tmp_path: Path):
    s = ClaudeSession(cwd=str(tmp_path))
    s.prompt("clean up")
    s.tool("Bash", {"command": "ls"}, "cache")
    s.call("Bash", {"command": "rm -rf cache"})  # the session was committed while this waited
    path = s.write(tmp_path / "s.jsonl")
    assert mem.import_transcripts("claude-code", [path], final=True).in_progress == 1
    old = time.time() - STALE_SECONDS - 60
    os.utime(path, (old, old))
    report = mem.import_transcripts("claude-code", [path])
    (t,) = mem.trajectories()
    assert len(report.ids) == 1
    assert [s.params["command"] for s in t.steps] == ["ls"]  # the unanswered call is no step
    assert t.meta["unanswered_calls"] == 1


def test_an_old_version_without_end_turn_imports_its_last_turn_when_quiet(
    mem: Memory, tmp_path: Path
):
    """Claude Code before ~2.1.40 never writes stop_reason end_turn: the last turn waits for
    the Stop hook or 30 quiet minutes, never longer."""
    s = ClaudeSession(cwd=str(tmp_path))
    s.prompt("list it")
    s.tool("Bash", {"command": "ls"}, "a")
    s.say("done", stop=None)
    path = s.write(tmp_path / "s.jsonl")
    assert mem.import_transcripts("claude-code", [path]).in_progress == 1
    old = time.time() - 1900
    os.utime(path, (old, old))
    assert len(mem.import_transcripts("claude-code", [path]).ids) == 1


def test_codex_words_for_a_call_that_could_not_run_are_failures():
    r = CodexRollout()
    r.prompt("patch it")
    for cid, out in (
        (
            "c1",
            "failed in sandbox LinuxSeccomp with execution error: sandbox denied exec error, "
            "exit code: 1, stdout: , stderr: denied",
        ),
        ("c2", "apply_patch verification failed: Failed to find expected lines in a.py"),
        ("c3", 'execution error: Io(Os { code: 2, kind: NotFound, message: "No such file" })'),
        ("c4", "Success. Updated the following files:\nM a.py"),
    ):
        r.add(
            "response_item",
            {"type": "custom_tool_call", "name": "apply_patch", "input": "x", "call_id": cid},
        )
        r.add("response_item", {"type": "custom_tool_call_output", "call_id": cid, "output": out})
    r.done()
    (turn,) = parse_codex(r.data()).turns
    assert [c.success for c in turn.calls] == [False, False, False, None]


def test_calls_before_any_prompt_are_a_continued_session_turn(mem: Memory, tmp_path: Path):
    s = ClaudeSession(cwd=str(tmp_path))
    s.prompt("This session is being continued from a previous conversation. Summary: ...")
    s.lines[-1]["isCompactSummary"] = True
    s.tool("Bash", {"command": "mix test"}, "Exit code 1\n1 failure", is_error=True)
    s.say("done")
    report = mem.import_transcripts("claude-code", [s.write(tmp_path / "s.jsonl")])
    (t,) = mem.trajectories()
    assert len(report.ids) == 1 and report.skipped_blocks == {}
    assert t.meta["prompt_kind"] == "notification"  # never an exact group of its own
    assert [s.success for s in t.steps] == [False]


def test_stop_state_of_the_real_hook_payloads():
    """The background_tasks lists of Claude Code 2.1.332's Stop and SubagentStop payloads."""
    bg = [{"id": "a0453dd6ff6c46497", "type": "subagent", "status": "running"}]
    assert stop_state({"hook_event_name": "Stop", "background_tasks": bg}) == StopState(
        True, frozenset({"a0453dd6ff6c46497"})
    )
    sub = stop_state(
        {"hook_event_name": "SubagentStop", "agent_id": "a0453dd6ff6c46497", "background_tasks": bg}
    )
    assert sub == StopState(False, frozenset(), frozenset({"a0453dd6ff6c46497"}))
    assert stop_state({"hook_event_name": "Stop", "background_tasks": []}).kwargs() == {
        "final": True,
        "running": [],
        "finished": [],
    }


def test_a_subagent_stop_ends_the_subagent_not_the_session(mem: Memory, tmp_path: Path):
    main = ClaudeSession(cwd=str(tmp_path))
    main.prompt("research it in the background, then fix the parser")
    tid = main.call("Task", {"prompt": "read parser.py", "run_in_background": True})
    main.result(tid, "Async agent launched. agentId: abc123", toolUseResult={"agentId": "abc123"})
    main.tool("Bash", {"command": "pytest"}, "1 failed")  # the session is still at work
    path = main.write(tmp_path / "p" / f"{main.session_id}.jsonl")
    sub = ClaudeSession(cwd=str(tmp_path))
    sub.sidechain, sub.agent_id = True, "abc123"
    sub.prompt("read parser.py")
    sub.tool("Read", {"file_path": "parser.py"}, "def parse(): ...")  # its reply not written yet
    sub.write(path.with_suffix("") / "subagents" / "agent-abc123.jsonl")
    payload = {"hook_event_name": "SubagentStop", "agent_id": "abc123", "background_tasks": []}
    report = mem.import_transcripts("claude-code", [path], **stop_state(payload).kwargs())
    assert len(report.ids) == 1 and report.in_progress == 1
    (t,) = mem.trajectories()
    assert t.meta["subagent"]["agent_id"] == "abc123"  # the sub-agent; the session's turn waits
