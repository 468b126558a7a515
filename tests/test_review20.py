"""Review 20: findings in this session's changes, each as the smallest input that showed it.

Our own fixtures: a few Claude Code and Codex lines and calls written here, no transcript
text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentmem.hooks.recent import line_said, recent
from agentmem.learning.corrections import find_corrections
from agentmem.learning.kinds import Kind
from agentmem.records import Step, Trajectory

NOT_READ = (
    "<tool_use_error>File has not been read yet. "
    "Read it first before writing to it.</tool_use_error>"
)
NOT_FOUND = "<tool_use_error>String to replace not found in file.\nString: a</tool_use_error>"


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


# ------------------------------------------------------------ hooks/recent.py


def test_a_compaction_summary_is_no_prompt_of_the_user(tmp_path: Path) -> None:
    """Claude Code writes the summary of a compacted conversation as a user line with
    ``isCompactSummary: true``; the importer passes it over (claude_code.py), and so must
    the prompt hook: it is no task the user typed."""
    summary = {
        "type": "user",
        "isCompactSummary": True,
        "message": {"role": "user", "content": "This session is being continued from a previous"},
    }
    assert line_said(summary) is None
    reply = {"type": "assistant", "message": {"role": "assistant", "content": "1. a\n2. b"}}
    prompt = {"type": "user", "message": {"role": "user", "content": "finish the billing job"}}
    got = recent(_write(tmp_path / "t.jsonl", [prompt, summary, reply]))
    assert got.prompt == "finish the billing job"


def test_a_codex_message_item_in_tags_is_no_prompt_of_the_user() -> None:
    """Codex writes context of its own as user message items in tags (``<environment_context>``,
    ``<user_shell_command>``, a skill's text); the importer takes no user item that starts
    with ``<`` for a prompt (codex.py ``_message``), and so must the prompt hook."""

    def item(text: str) -> dict[str, Any]:
        content = [{"type": "input_text", "text": text}]
        return {
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": content},
        }

    assert line_said(item("<user_shell_command>ls</user_shell_command>")) is None
    assert line_said(item("finish the billing job")) == ("prompt", "finish the billing job")


# ------------------------------------------------------------ corrections._tool_needs


def test_an_edit_after_the_read_that_fails_for_another_reason_keeps_the_rule() -> None:
    """Edit refused 'File has not been read yet', the Read, an Edit whose old_string was not
    found, then the Edit that worked: the Read answered the refusal (the next Edit was not
    refused again); the later failure is another mistake. Before review 20 the rule was
    learned here (a successful Edit within five calls of the Read); the relaxed check
    dropped it, taking any failed Edit of the file for "refused again"."""
    steps = (
        Step(
            "Edit", {"file_path": "/p/a.py", "old_string": "a", "new_string": "b"}, NOT_READ, False
        ),
        Step("Read", {"file_path": "/p/a.py"}, "1\tx = 0", True),
        Step(
            "Edit", {"file_path": "/p/a.py", "old_string": "a", "new_string": "b"}, NOT_FOUND, False
        ),
        Step("Edit", {"file_path": "/p/a.py", "old_string": "x", "new_string": "y"}, "ok", True),
    )
    t = Trajectory(task="fix a", steps=steps, accepted=True)
    found = [c for c in find_corrections(t) if c.kind == Kind.TOOL_RULE]
    assert [c.finding.text.split(",")[0] for c in found] == [
        "If Edit fails with 'File has not been read yet'"
    ]


def test_a_tail_of_lines_that_are_no_json_objects_is_passed_over_quickly(
    tmp_path: Path, monkeypatch
) -> None:
    """A transcript_path whose tail is 128 Ki short lines of text (a log, not a transcript):
    each was parsed as JSON and its error built, about half a second of the prompt hook;
    a line that does not start an object is no line of either client (counted, not timed)."""

    path = tmp_path / "log.txt"
    path.write_bytes(
        b"x\n" * (128 * 1024)
        + (json.dumps({"type": "user", "message": {"content": "fix a"}}) + "\n").encode()
    )
    import agentmem.hooks.recent as module

    parsed: list[str] = []
    loads = module.loads

    def counted(line, what):  # type: ignore[no-untyped-def]
        parsed.append(line)
        return loads(line, what=what)

    monkeypatch.setattr(module, "loads", counted)
    assert recent(path).prompt == "fix a"
    path.write_bytes(b"x\n" * (128 * 1024))
    assert recent(path) == (None, None)
    assert len(parsed) == 1  # the one object line; no text line parsed


def test_a_prompt_of_unclosed_tags_is_read_in_one_pass(monkeypatch) -> None:
    """framing.INJECTED and IDE_CONTEXT were ``<tag>.*?</tag>`` patterns, which scan to the
    end of the text for each opening tag that is never closed: 4,000 unclosed
    ``<system-reminder>`` (68 KB) cost the prompt hook about a second, a 256 KB tail about
    fifteen. Now a name found unclosed is not looked for again: one search for its closer,
    however many openers (counted, not timed); closed blocks go as before."""
    from agentmem import framing

    searches: list[str] = []
    find = framing.Tagged.find_closer

    def counted(self, text, name, start):  # type: ignore[no-untyped-def]
        searches.append(name)
        return find(self, text, name, start)

    monkeypatch.setattr(framing.Tagged, "find_closer", counted)
    text = "<system-reminder>" * 4000 + "fix a"
    assert framing.INJECTED.sub("", text) == text
    assert len(searches) == 1
    searches.clear()
    closed = "<system-reminder>a</system-reminder> fix <SYSTEM-REMINDER>b</system-reminder>\nb"
    assert framing.INJECTED.sub("", closed) == "fix b"
    assert len(searches) == 2


# ------------------------------------------------------------ shell_fixes: case


def test_a_path_read_before_in_its_right_case_then_slipped_teaches_nothing() -> None:
    """``cat "Use Cases/UC-06.md"`` worked, then ``cat "Use cases/UC-06.md"`` failed and the
    right spelling worked again: the agent knew the spelling and slipped once. ``prefix``
    and ``location`` learn nothing of such a slip (used_before, _under_folder); ``case``
    learned "the folder is 'Use Cases', not 'Use cases'"."""
    from agentmem.agents import learning_view
    from agentmem.learning.shell_fixes import _sh, find_shell_fixes

    good = _sh('cat "Use Cases/UC-06.md"', "# UC-06")
    bad = _sh(
        'cat "Use cases/UC-06.md"', "cat: Use cases/UC-06.md: No such file or directory", False
    )
    meta = {"cwd": "/w/app", "project": "/w/app"}

    def changes(*steps: Step) -> list[object]:
        t = Trajectory(task="read UC-06", steps=steps, meta=meta)
        return [x.finding.detail["change"] for x in find_shell_fixes(learning_view(t))]

    assert changes(bad, good) == ["case"]
    assert changes(good, _sh("ls"), bad, good) == []


def test_a_case_pair_outside_the_project_is_no_project_fact() -> None:
    """Review 20, item 10: Read of /etc/Hosts failed and /etc/hosts worked taught "In this
    project the file is 'hosts' ..."; a path outside the session's folder is no fact of it."""
    from agentmem.agents import learning_view
    from agentmem.learning.shell_fixes import find_shell_fixes
    from agentmem.records import Step, Trajectory

    def fixes(bad: str, good: str) -> list[str]:
        steps = (
            Step(
                "Bash", {"command": f"cat {bad}"}, f"cat: {bad}: No such file or directory", False
            ),
            Step("Bash", {"command": f"cat {good}"}, "127.0.0.1 localhost", True),
        )
        run = Trajectory(task="check", steps=steps, meta={"cwd": "/w/app", "project": "/w/app"})
        return [x.finding.text for x in find_shell_fixes(learning_view(run))]

    assert fixes("/etc/Hosts", "/etc/hosts") == []
    assert fixes("../Lib/a.md", "../lib/a.md") == []
    assert fixes("Docs/a.md", "docs/a.md") != []  # inside the project, still a fact
