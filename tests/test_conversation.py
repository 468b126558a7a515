"""What a prompt is (conversation.py), and what the importers do with it: a reply, a choice, a
slash command or a notification takes its task from the conversation."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentmem import Memory
from agentmem.conversation import PROMPT_KINDS, Prompt, classify, conversation_tasks
from agentmem.importers.claude_code import parse_claude_code
from agentmem.importers.codex import parse_codex

from .transcripts import ClaudeSession, CodexRollout

CHOICES = [
    "a",
    "B",
    "2",
    "２",
    "yes",
    "ok",
    "OK!",
    "y",
    "お願いします",
    "1と3",
    "option b please",
    "Bでお願いします",
    "可以",
    "好的",
    "はい",
    "lgtm",
    "yes please",
    "(a)",
    "3番",
]
REPLIES = [
    "thanks!",
    "continue",
    "keep going",
    "go on",
    "do it",
    "looks good",
    "继续",
    "ありがとう",
    "続けて",
    "👍",
    "...",
    "try again",
    "可以，开始实施",
    "next",
]
TASKS = [
    "run the tests",
    "fix lint",
    "test",
    "what?",
    "no, use pytest instead",
    "ok, now add a test for the parser",
    "a new endpoint for users",
    "2 failing tests: fix them",
    "検索機能を追加して",
    "帮我补充 status 的无登录降级体验",
    "make",
]


@pytest.mark.parametrize("text", CHOICES)
def test_choices(text: str):
    p = classify(text)
    assert (p.kind, p.task) == ("choice", None)


@pytest.mark.parametrize("text", REPLIES)
def test_replies(text: str):
    assert classify(text).kind == "reply"


@pytest.mark.parametrize("text", TASKS)
def test_tasks_stay_tasks(text: str):
    assert classify(text) == Prompt("task", text, text)


def test_slash_commands_and_notifications():
    wrapped = (
        "<command-message>review is running…</command-message>\n"
        "<command-name>/review</command-name>\n<command-args>the parser</command-args>"
    )
    assert classify(wrapped) == Prompt("slash", "/review the parser", "/review the parser")
    bare = "<command-name>compact</command-name>"
    assert classify(bare).task == "/compact"
    note = "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>"
    assert classify(note).kind == "notification"
    assert classify("anything at all", system=True).kind == "notification"
    assert classify("/home/me/x fails").kind == "task"  # a path, not a command


def test_a_long_prompt_of_reply_words_is_a_task():
    text = "yes " * 20
    assert classify(text).kind == "task"


def test_conversation_tasks_take_the_last_stated_task():
    prompts = [classify(t) for t in ["2", "fix the parser", "a", "thanks", "add docs", "ok"]]
    assert conversation_tasks(prompts) == [
        "2",  # nothing stated yet: its own text
        "fix the parser",
        "fix the parser",
        "fix the parser",
        "add docs",
        "add docs",
    ]


@given(st.text(max_size=80))
def test_classify_is_total_and_kind_is_known(text: str):
    p = classify(text)
    assert p.kind in PROMPT_KINDS
    assert (p.task is None) == (p.kind in ("reply", "choice", "notification"))
    (task,) = conversation_tasks([p])
    assert isinstance(task, str)


# -- at import --------------------------------------------------------------------------------


def test_claude_code_turns_take_their_task_from_the_conversation(mem: Memory, tmp_path: Path):
    s = ClaudeSession(cwd=str(tmp_path))
    s.prompt("which of the two parsers should we keep? a) regex b) hand-written")
    s.say("I'd keep b.")  # a turn without tools states the task
    s.prompt("b")
    s.tool("Bash", {"command": "git rm parser_regex.py"}, "rm 'parser_regex.py'")
    s.say("Done.")
    s.prompt(
        "<command-message>review is running…</command-message>\n"
        "<command-name>/review</command-name>\n<command-args>parser.py</command-args>"
    )
    s.prompt("Review this file for bugs. Be thorough. $ARGUMENTS")  # the template's expansion
    s.lines[-1]["isMeta"] = True
    s.tool("Read", {"file_path": "parser.py"}, "def parse(): ...")
    s.say("Looks fine.")
    s.prompt("thanks, keep going")
    s.tool("Bash", {"command": "pytest"}, "2 passed")
    s.say("All green.")
    path = s.write(tmp_path / "s.jsonl")
    report = mem.import_transcripts("claude-code", [path])
    assert report.no_tools == 1 and len(report.ids) == 3
    choice, slash, reply = mem.trajectories()
    assert choice.task == "which of the two parsers should we keep? a) regex b) hand-written"
    assert (choice.meta["prompt_kind"], choice.meta["prompt"]) == ("choice", "b")
    assert slash.task == "/review parser.py" and slash.meta["prompt_kind"] == "slash"
    assert reply.task == "/review parser.py"  # the last prompt that stated a task
    assert (reply.meta["prompt_kind"], reply.meta["prompt"]) == ("reply", "thanks, keep going")


def test_a_notification_during_a_turn_does_not_steal_its_calls(tmp_path: Path):
    s = ClaudeSession(cwd=str(tmp_path))
    s.prompt("build and test it")
    s.tool("Bash", {"command": "make", "run_in_background": True}, "started b1")
    s.prompt("<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>")
    s.lines[-1]["promptSource"] = "system"
    s.tool("Bash", {"command": "make test"}, "ok")
    s.say("Built and tested.")
    parsed = parse_claude_code(s.data())
    (turn,) = parsed.turns
    assert [c.params["command"] for c in turn.calls] == ["make", "make test"]
    assert parsed.report.ignored["notification during a turn"] == 1


def test_a_notification_after_the_turn_is_a_turn_of_the_same_task(tmp_path: Path):
    s = ClaudeSession(cwd=str(tmp_path))
    s.prompt("build it in the background")
    s.tool("Bash", {"command": "make", "run_in_background": True}, "started b1")
    s.say("Started; I'll check when it is done.")
    s.prompt("<task-notification>\n<task-id>b1</task-id>\n<status>failed</status>")
    s.lines[-1]["promptSource"] = "system"
    s.tool("Bash", {"command": "cat build.log"}, "error: missing header")
    s.say("The build failed: a header is missing.")
    _first, second = parse_claude_code(s.data()).turns
    assert second.prompt == "build it in the background"
    assert second.meta["prompt_kind"] == "notification"
    assert "<task-notification>" in second.meta["prompt"]


def test_codex_replies_take_the_task_before_them():
    r = CodexRollout()
    r.prompt("add a --json flag to the status command")
    r.exec("rg status", "src/cli.py")
    r.add("event_msg", {"type": "task_complete"})
    r.prompt("可以")
    r.exec("pytest", "3 passed")
    r.add("event_msg", {"type": "task_complete"})
    first, second = parse_codex(r.data()).turns
    assert second.prompt == first.prompt == "add a --json flag to the status command"
    assert (second.meta["prompt_kind"], second.meta["prompt"]) == ("choice", "可以")
    assert "prompt_kind" not in first.meta


def test_ide_context_is_not_the_task():
    claude = (
        "<ide_opened_file>The user opened the file /src/app.rb in the IDE.</ide_opened_file>"
        "\nThis test failed: fix it"
    )
    assert classify(claude) == Prompt(
        "task", "This test failed: fix it", "This test failed: fix it"
    )
    codex = (
        "# Context from my IDE setup:\n\n## Active file: README.md\n\n"
        "## Open tabs:\n- README.md\n\n## My request for Codex:\nadd a usage section"
    )
    assert classify(codex).task == "add a usage section"
    assert classify("<ide_selection>lines 1-3</ide_selection>\nok").kind == "choice"


def test_a_template_is_grouped_by_what_was_asked():
    butler = "# /butler-exec — Execute a ButlerSpec\n\nPurpose: run a single ButlerSpec file ..."
    assert classify(butler) == Prompt("slash", "/butler-exec", "/butler-exec")
    spec = "## User Input\n\n```text\ncreate principles for my product\n```\n\nYou **MUST** ..."
    assert classify(spec) == Prompt(
        "slash", "create principles for my product", "create principles for my product"
    )
    assert classify("# /etc/hosts is broken, fix the resolver").kind == "task"
    assert classify("## User Input is not validated in forms.py").kind == "task"
