"""Importing Claude Code, Codex and Anthropic transcripts: trajectories, steps, success, verdicts,
idempotence, growth, and hostile or truncated input."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from agentmem import Memory
from agentmem.errors import InvalidRecordError
from agentmem.importers.claude_code import parse_claude_code
from agentmem.importers.codex import parse_codex, session_id_of
from agentmem.importers.run import QUIET_SECONDS, discover

from .conftest import run_cli
from .transcripts import (
    DENIED,
    ClaudeSession,
    CodexRollout,
    anthropic_conversation,
    claude_fixture,
    codex_fixture,
)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import crashlib  # noqa: E402


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git project with a subfolder the agent works in."""
    (tmp_path / "app" / ".git").mkdir(parents=True)
    (tmp_path / "app" / "src").mkdir()
    return tmp_path / "app"


def _steps(t):
    return [(s.tool, s.domain, s.success) for s in t.steps]


def _verdicts(mem: Memory) -> dict[int, tuple[str, str]]:
    return {
        tid: (kind, note)
        for tid, kind, note in mem.db.execute("SELECT trajectory_id, kind, note FROM feedback")
    }


# -- Claude Code ----------------------------------------------------------------------------------


def test_claude_code_fixture_imports_to_the_expected_trajectories(mem: Memory, repo: Path):
    s = claude_fixture(str(repo / "src"))
    path = s.write(repo.parent / "projects" / "-w-app" / f"{s.session_id}.jsonl")
    report = mem.import_transcripts("claude-code", [path])
    assert len(report.ids) == 3
    assert report.no_tools == 1  # "thanks!"
    assert report.skipped_lines == {"mystery-line-type": 1}
    assert report.skipped_blocks == {"fancy_new_block": 1}
    assert report.ignored_lines >= 3  # summary, progress, system
    fix, push, delete = mem.trajectories()
    assert fix.task == "fix the failing test in the parser"
    assert fix.source == "claude-code"
    assert _steps(fix) == [
        ("Bash", "test", False),  # "Exit code 1" with is_error
        ("Read", "fs", True),
        ("Edit", "fs", True),
        ("Bash", "test", True),
    ]
    assert fix.steps[0].params["command"] == "pytest -x tests/test_parser.py"
    assert fix.steps[0].output.startswith("Exit code 1")
    assert fix.meta["project"] == str(repo)  # the git root, not the folder the agent was in
    assert fix.meta["cwd"] == str(repo / "src")
    assert fix.meta["session_id"] == s.session_id
    assert fix.meta["git_branch"] == "main"
    assert fix.meta["transcript"] == str(path)
    assert _steps(push) == [("Bash", "git", False)]
    assert _steps(delete) == [("Bash", "fs", False)]
    assert delete.steps[0].output == DENIED
    verdicts = _verdicts(mem)
    assert verdicts == {
        push.id: ("reject", "the user interrupted the turn"),
        delete.id: ("correct", "the user denied a tool call"),
    }
    assert push.accepted is False and delete.accepted is False
    # no signal: accepted once the window has passed since the turn ended (its transcript
    # says 2026-01-05, long before this import)
    assert fix.accepted is True
    assert "signal" not in fix.meta and push.meta["signal"] == "interrupted"


def test_reimport_adds_nothing_and_unchanged_files_are_skipped(mem: Memory, repo: Path):
    s = claude_fixture(str(repo))
    path = s.write(repo / "s.jsonl")
    first = mem.import_transcripts("claude-code", [path])
    before = crashlib.table_dump(mem.db)
    again = mem.import_transcripts("claude-code", [path])
    assert again.ids == [] and again.unchanged_files == 1
    forced = mem.import_transcripts("claude-code", [path], force=True)
    assert forced.ids == [] and forced.already == 4
    assert crashlib.table_dump(mem.db)["trajectories"] == before["trajectories"]
    assert len(first.ids) == 3


def test_a_growing_transcript_adds_only_its_new_turns(mem: Memory, repo: Path):
    s = ClaudeSession(cwd=str(repo))
    s.prompt("list the files")
    s.tool("Bash", {"command": "ls"}, "a.py")
    s.say("One file.")
    path = s.write(repo / "s.jsonl")
    assert len(mem.import_transcripts("claude-code", [path]).ids) == 1
    # the agent starts the next turn: a call without its result yet
    s.prompt("run the tests")
    tid = s.call("Bash", {"command": "pytest"})
    s.write(path)
    r = mem.import_transcripts("claude-code", [path])
    assert r.ids == [] and r.in_progress == 1 and r.already == 1
    s.result(tid, "2 passed")
    s.say("All green.", stop=None)  # streamed: no stop reason on the line
    s.write(path)
    r = mem.import_transcripts("claude-code", [path])
    assert r.ids == [] and r.in_progress == 1  # nothing says the turn is over yet
    s.prompt("now commit")
    s.tool("Bash", {"command": "git commit -am wip"}, "[main 1a2b3c] wip")
    s.say("Committed.")
    s.write(path)
    r = mem.import_transcripts("claude-code", [path])
    assert len(r.ids) == 2 and r.already == 1
    tasks = [t.task for t in mem.trajectories()]
    assert tasks == ["list the files", "run the tests", "now commit"]
    assert _steps(mem.trajectories()[2]) == [("Bash", "git", True)]


def test_the_stop_hook_completes_the_last_turn_and_quiet_files_too(mem: Memory, repo: Path):
    s = ClaudeSession(cwd=str(repo))
    s.prompt("run the tests")
    s.tool("Bash", {"command": "pytest"}, "2 passed")
    path = s.write(repo / "s.jsonl")  # the final answer has not reached the file yet
    assert mem.import_transcripts("claude-code", [path]).in_progress == 1
    assert len(mem.import_transcripts("claude-code", [path], final=True).ids) == 1
    s2 = ClaudeSession(session_id="0a1b2c3d-0000-4000-8000-000000000002", cwd=str(repo))
    s2.prompt("build it")
    s2.tool("Bash", {"command": "make"}, "ok")
    p2 = s2.write(repo / "s2.jsonl")
    old = time.time() - QUIET_SECONDS - 60
    os.utime(p2, (old, old))  # abandoned long ago: its last turn is over
    assert len(mem.import_transcripts("claude-code", [p2]).ids) == 1


def test_a_call_waiting_for_permission_is_never_complete(repo: Path):
    s = ClaudeSession(cwd=str(repo))
    s.prompt("delete the cache")
    s.call("Bash", {"command": "rm -rf .cache"})
    parsed = parse_claude_code(s.data(), final=True, quiet=True)
    assert [t.complete for t in parsed.turns] == [False]


def test_truncated_last_line_is_left_for_the_next_import(mem: Memory, repo: Path):
    s = ClaudeSession(cwd=str(repo))
    s.prompt("show the log")
    s.tool("Bash", {"command": "git log -1"}, "commit abc")
    s.say("Here it is.")
    whole = s.data()
    path = repo / "s.jsonl"
    path.write_bytes(whole[:-40])  # the agent is writing its last line
    before = crashlib.table_dump(mem.db)
    r = mem.import_transcripts("claude-code", [path])
    assert r.ids == [] and r.truncated == [str(path)] and r.bad_lines == []
    assert "incomplete last line" in "\n".join(r.lines())
    assert crashlib.table_dump(mem.db) == before  # not even a file state
    path.write_bytes(whole)
    assert len(mem.import_transcripts("claude-code", [path]).ids) == 1


def test_hostile_lines_leave_the_library_unchanged_with_a_clear_message(mem: Memory, repo: Path):
    path = repo / "junk.jsonl"
    path.write_bytes(b'\xff\xfe garbage\nnot json at all\n[1, 2]\n{"type": "user"}\n')
    before = crashlib.table_dump(mem.db)
    r = mem.import_transcripts("claude-code", [path])
    assert r.ids == []
    assert crashlib.table_dump(mem.db) == before
    text = "\n".join(r.lines())
    assert "line 1: not valid UTF-8" in text
    assert "line 2: not valid JSON" in text
    assert "line 3: not a JSON object (a list)" in text
    assert r.skipped_lines == {"user without a message": 1}


def test_a_bad_line_inside_a_turn_damages_only_that_turn(mem: Memory, repo: Path):
    s = ClaudeSession(cwd=str(repo))
    s.prompt("first")
    s.tool("Bash", {"command": "ls"}, "a")
    s.prompt("second")
    s.tool("Bash", {"command": "ls"}, "b")
    s.prompt("third")
    s.tool("Bash", {"command": "ls"}, "c")
    s.say("done")
    lines = s.data().split(b"\n")
    lines.insert(4, b'{"type": "assistant", "message": {"content": [{"type": "tool_use", "id"')
    path = repo / "s.jsonl"
    path.write_bytes(b"\n".join(lines))
    r = mem.import_transcripts("claude-code", [path])
    assert [t.task for t in mem.trajectories()] == ["first", "third"]
    assert len(r.damaged) == 1 and "line 5" in r.damaged[0]
    assert "not valid JSON" in r.bad_lines[0]
    row = mem.db.execute("SELECT status, note FROM imported_turns WHERE status = 'damaged'")
    assert row.fetchone()[1].startswith("line 5")
    assert mem.import_transcripts("claude-code", [path]).ids == []  # still nothing new


def test_injected_context_and_claude_code_notes_are_not_prompts(mem: Memory, repo: Path):
    s = ClaudeSession(cwd=str(repo))
    s.prompt(
        [
            {"type": "text", "text": "refactor the parser"},
            {
                "type": "text",
                "text": "<system-reminder>Lessons from earlier runs: ...</system-reminder>",
            },
        ]
    )
    s.tool("Read", {"file_path": "p.py"}, "x")
    s.prompt("<local-command-stdout>Compacted</local-command-stdout>")
    s.prompt(
        "<command-message>review</command-message>\n<command-name>/review</command-name>\n<command-args>src</command-args>"
    )
    s.tool("Grep", {"pattern": "TODO"}, "p.py:3")
    s.say("ok")
    path = s.write(repo / "s.jsonl")
    mem.import_transcripts("claude-code", [path])
    assert [t.task for t in mem.trajectories()] == ["refactor the parser", "/review src"]
    assert _steps(mem.trajectories()[1]) == [("Grep", "search", True)]


def test_subagents_are_trajectories_linked_to_their_parent_turn(mem: Memory, repo: Path):
    projects = repo.parent / "projects" / "-w-app"
    s = ClaudeSession(cwd=str(repo))
    parent = s.prompt("find where the config is read")
    tid = s.call("Task", {"subagent_type": "Explore", "prompt": "search for config loading"})
    s.result(tid, [{"type": "text", "text": "Found it in src/config.py\nagentId: a1b2c3"}])
    s.say("It is read in src/config.py.")
    s.write(projects / f"{s.session_id}.jsonl")
    sub = ClaudeSession(session_id=s.session_id, cwd=str(repo))
    sub.sidechain, sub.agent_id = True, "a1b2c3"
    sub.prompt("search for config loading")
    sub.tool("Grep", {"pattern": "load_config"}, "src/config.py:10")
    sub.tool("Read", {"file_path": "src/config.py"}, "def load_config(): ...")
    sub.say("Found it.")
    sub.write(projects / s.session_id / "subagents" / "agent-a1b2c3.jsonl")
    compact = ClaudeSession(session_id=s.session_id)
    compact.sidechain, compact.agent_id = True, "acompact-1"
    compact.prompt("summarise")
    compact.tool("Read", {"file_path": "x"}, "y")
    compact.write(projects / s.session_id / "subagents" / "agent-acompact-1.jsonl")
    r = mem.import_transcripts("claude-code", [projects.parent])  # all of ~/.claude/projects
    assert len(r.ids) == 2
    main, child = mem.trajectories()
    assert main.task == "find where the config is read" and main.meta["subagents"] == ["a1b2c3"]
    assert _steps(main) == [("Task", "agent", True)]
    assert child.task == "search for config loading"
    assert child.meta["subagent"] == {
        "agent_id": "a1b2c3",
        "parent_session": s.session_id,
        "turn_id": parent,
        "tool_use_id": tid,
        "type": "Explore",
    }
    assert _steps(child) == [("Grep", "search", True), ("Read", "fs", True)]
    assert mem.import_transcripts("claude-code", [projects.parent]).ids == []


def test_secrets_in_transcripts_are_redacted(mem: Memory, repo: Path):
    s = ClaudeSession(cwd=str(repo))
    s.prompt("check the deploy key")
    s.tool("Bash", {"command": "cat .env"}, "DB_PASSWORD=hunter2hunter2\nOK")
    s.say("done")
    mem.import_transcripts("claude-code", [s.write(repo / "s.jsonl")])
    out = mem.trajectories()[0].steps[0].output
    assert "hunter2" not in out and "[REDACTED:password]" in out


def test_long_outputs_keep_their_head_and_tail(mem: Memory, repo: Path):
    s = ClaudeSession(cwd=str(repo))
    s.prompt("read the log")
    s.tool("Read", {"file_path": "big.log"}, "HEAD " + "x" * 100_000 + " TAIL")
    s.say("done")
    mem.import_transcripts("claude-code", [s.write(repo / "s.jsonl")])
    out = mem.trajectories()[0].steps[0].output
    assert out.startswith("HEAD ") and out.endswith(" TAIL") and len(out) < 17_000
    assert "characters cut by agentmem import" in out


# -- Codex ----------------------------------------------------------------------------------------


def test_codex_fixture_imports_to_the_expected_trajectories(mem: Memory, repo: Path):
    r = codex_fixture(str(repo))
    day = repo.parent / "sessions" / "2026" / "01" / "05"
    path = r.write(day / f"rollout-2026-01-05T10-00-00-{r.session_id}.jsonl")
    report = mem.import_transcripts("codex", [repo.parent / "sessions"])
    assert len(report.ids) == 3
    assert report.skipped_lines == {"brand_new_record": 1}
    tests, deploy, log = mem.trajectories()
    assert tests.task == "make the unit tests pass" and tests.source == "codex"
    assert _steps(tests) == [
        ("exec_command", "test", False),  # exit code 1 (exec_command_end)
        ("apply_patch", "fs", True),  # patch_apply_end success
        ("exec_command", "test", True),
    ]
    assert tests.meta["session_id"] == r.session_id and tests.meta["turn_id"] == "p0"
    assert tests.meta["project"] == str(repo) and tests.meta["model"] == "gpt-5-codex"
    assert _steps(deploy) == [("exec_command", "k8s", False)]
    assert _steps(log) == [("shell", "git", True)]  # exit code from the JSON metadata
    assert log.steps[0].output == "abc first"
    assert _verdicts(mem) == {
        deploy.id: ("correct", "the user denied a tool call"),
        log.id: ("reject", "the user interrupted the turn"),
    }
    assert log.meta["aborted"] == "interrupted"
    assert mem.import_transcripts("codex", [path], force=True).ids == []
    assert session_id_of(str(path)) == r.session_id


def test_codex_growth_and_exit_codes_from_the_output_alone(mem: Memory, repo: Path):
    r = CodexRollout(cwd=str(repo))
    r.prompt("run the linter")
    r.exec("ruff check .", "2 errors", exit_code=1, event=False)  # no exec_command_end
    path = r.write(repo / "rollout-x.jsonl")
    assert mem.import_transcripts("codex", [path]).in_progress == 1
    r.done()
    r.write(path)
    assert len(mem.import_transcripts("codex", [path]).ids) == 1
    t = mem.trajectories()[0]
    assert _steps(t) == [("exec_command", "lint", False)]  # "Process exited with code 1"


def test_codex_prompts_come_from_user_messages_not_injected_context(repo: Path):
    r = codex_fixture(str(repo))
    parsed = parse_codex(r.data())
    assert [t.prompt for t in parsed.turns] == [
        "make the unit tests pass",
        "deploy to production",
        "show the git log",
    ]


def test_codex_shell_calls_mcp_outcomes_and_the_records_it_skips(repo: Path):
    r = CodexRollout(cwd=str(repo))
    r.prompt("check the disk")
    r.add("event_msg", {"type": "user_message", "message": "(review)", "kind": "review"})
    r.add("response_item", {"type": "reasoning", "summary": []})
    r.add(
        "response_item",
        {"type": "local_shell_call", "id": "ls_1", "action": {"command": ["df", "-h"]}},
    )
    r.add("response_item", {"type": "function_call_output", "call_id": "ls_1", "output": "ok"})
    r.add("response_item", {"type": "function_call", "name": "lookup", "call_id": "m1"})
    r.add("event_msg", {"type": "mcp_tool_call_end", "call_id": "m1", "result": {"Err": "x"}})
    r.add("response_item", {"type": "function_call", "name": "lookup", "call_id": "m2"})
    r.add(
        "event_msg",
        {"type": "mcp_tool_call_end", "call_id": "m2", "result": {"Ok": {"isError": False}}},
    )
    r.add("response_item", {"type": "brand_new_item"})
    r.add("compacted", {"message": "summary"})
    r.lines.append({"timestamp": "t", "type": "event_msg"})  # no payload
    r.done()
    parsed = parse_codex(r.data(), final=True)
    (turn,) = parsed.turns
    assert turn.prompt == "check the disk" and turn.complete
    assert [(c.id, c.tool, c.params, c.output, c.success) for c in turn.calls] == [
        ("ls_1", "local_shell", {"command": ["df", "-h"]}, "ok", None),
        ("m1", "lookup", {}, "", False),  # only the outcome event: no output
        ("m2", "lookup", {}, "", True),
    ]
    report = parsed.report
    assert dict(report.skipped_lines) == {
        "response_item:brand_new_item": 1,
        "event_msg without a payload": 1,
    }
    # session_meta, turn_context, the two user message items (the prompt came as an event),
    # the review message, reasoning, compacted and agent_message
    assert report.ignored_lines == 8


# -- Anthropic ------------------------------------------------------------------------------------


def test_anthropic_conversation_imports_and_grows(mem: Memory, tmp_path: Path, repo: Path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(anthropic_conversation()))
    r = mem.import_transcripts("anthropic", [path], project=str(repo / "src"))
    assert len(r.ids) == 2
    paris, atlantis = mem.trajectories()
    assert paris.task == "What is the weather in Paris?" and paris.source == "anthropic"
    assert _steps(paris) == [("get_weather", "general", True)]
    assert paris.steps[0].params == {"city": "Paris"}
    assert _steps(atlantis) == [("get_weather", "general", False)]  # is_error
    assert atlantis.steps[0].output == "unknown city"
    assert paris.meta["project"] == str(repo)
    assert _verdicts(mem) == {}  # the Messages API has no interruptions or denials
    # the same conversation, one turn longer, in JSON lines with a second conversation
    other = {
        "id": "conv-2",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    }
    lines = [json.dumps(anthropic_conversation(extra_turn=True)), json.dumps(other)]
    path.write_text("\n".join(lines) + "\n")
    r = mem.import_transcripts("anthropic", [path])
    assert len(r.ids) == 1 and r.already == 2 and r.no_tools == 1
    assert mem.trajectories()[-1].task == "Then Rome."


def test_anthropic_bare_message_list_and_unfinished_turn(mem: Memory, tmp_path: Path):
    msgs = anthropic_conversation()["messages"][:2]  # a tool_use without its result
    path = tmp_path / "m.json"
    path.write_text(json.dumps(msgs))
    r = mem.import_transcripts("anthropic", [path])
    assert r.ids == [] and r.in_progress == 1


@pytest.mark.parametrize(
    "data,message",
    [
        (b"\xff\xfe", "not valid UTF-8"),
        (b"42", "expected a conversation"),
        (b"{not json\nnor this\n", "neither a JSON document nor JSON lines"),
    ],
)
def test_anthropic_unreadable_file_is_a_clean_error(mem: Memory, tmp_path: Path, data, message):
    path = tmp_path / "bad.json"
    path.write_bytes(data)
    before = crashlib.table_dump(mem.db)
    with pytest.raises(InvalidRecordError, match=message):
        mem.import_transcripts("anthropic", [path])
    assert crashlib.table_dump(mem.db) == before


def test_discover_and_missing_paths(tmp_path: Path):
    with pytest.raises(InvalidRecordError, match="does not exist"):
        discover("codex", tmp_path / "nope")
    (tmp_path / "2026" / "01").mkdir(parents=True)
    (tmp_path / "2026" / "01" / "rollout-a.jsonl").write_text("")
    (tmp_path / "2026" / "01" / "notes.jsonl").write_text("")
    assert [b.main.name for b in discover("codex", tmp_path)] == ["rollout-a.jsonl"]


# -- the command line, for real -------------------------------------------------------------------


def test_cli_import_claude_code_and_codex_in_a_subprocess(tmp_path: Path, repo: Path):
    db = tmp_path / "lib.db"
    home = tmp_path / "home"
    s = claude_fixture(str(repo))
    s.write(home / ".claude" / "projects" / "-w-app" / f"{s.session_id}.jsonl")
    r = codex_fixture(str(repo))
    r.write(home / ".codex" / "sessions" / "2026" / "01" / "05" / f"rollout-1-{r.session_id}.jsonl")
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": "", "CODEX_HOME": ""}
    p = run_cli("import", "--format", "claude-code", db=db, env=env)  # the default folder
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    assert "imported 3 trajectories from 1 claude-code file(s) (ids 1-3)" in out
    assert "verdicts from the transcripts: correct 1, reject 1" in out
    assert "skipped unknown line types: mystery-line-type x1" in p.stderr.decode()
    p = run_cli("import", "--format", "codex", "--json", db=db, env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["ids"] == [4, 5, 6]
    p = run_cli("import", "--format", "claude-code", db=db, env=env)
    assert (
        "imported 0 trajectories" in p.stdout.decode()
        and "1 file(s) unchanged" in p.stdout.decode()
    )
    p = run_cli("imports", "--json", db=db)
    rows = json.loads(p.stdout)
    assert {r["trajectory_id"] for r in rows} >= {1, 2, 3, 4, 5, 6}
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"{not json\nnor this\n")
    p = run_cli("import", "--format", "anthropic", str(bad), db=db)
    assert p.returncode == 1 and b"Error:" in p.stderr
    p = run_cli("import", "--format", "openai", db=db)
    assert p.returncode == 2  # openai needs its FILE


def test_sharing_outside_a_team_is_refused_and_records_nothing(mem: Memory, repo: Path):
    from agentmem.errors import AgentMemError

    path = claude_fixture(str(repo)).write(repo / "s.jsonl")
    before = crashlib.table_dump(mem.db)
    with pytest.raises(AgentMemError, match="not in a team"):
        mem.import_transcripts("claude-code", [path], share=True)
    assert crashlib.table_dump(mem.db) == before
    assert len(mem.import_transcripts("claude-code", [path]).ids) == 3  # unshared: fine
