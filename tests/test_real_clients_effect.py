"""Served lessons with the real Claude Code and Codex (issue 25), driven by a scripted model.

A user's day: three sessions teach "the notes are docs/notes.txt" (``cat notes.txt``
fails, ``cat docs/notes.txt`` works); ``agentmem learn``; then one session whose model
follows the lesson the prompt hook served (it goes straight to ``cat docs/notes.txt``)
and one whose model ignores it (``cat notes.txt`` fails again); ``agentmem learn``
judges both. ``agentmem effect --json`` must say: served twice, both runs met the
lesson's situation, one followed it, one repeated the mistake. The clients and the
skip rule are :mod:`tests.real_clients`'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentmem import Memory

from .real_clients import Sandbox
from .scripted_model import Scenario, Turn, shell
from .test_real_clients import NOTES, _accept_all, _fix_the_path, client

__all__ = ["client"]


def _learn_the_notes_lesson(box: Sandbox) -> dict[str, Any]:
    calls = _fix_the_path()
    for prompt in ["Show me the notes", "Print the notes for me", "What do the notes say"]:
        s = box.session(prompt, Scenario((Turn(prompt, calls, "The notes say: the notes"),)))
        assert s.returncode == 0, s.stderr[-2000:]
    _accept_all(box)
    box.agentmem("learn", "--no-model")
    lessons = json.loads(box.agentmem("experiences", "--json").stdout)
    found = [e for e in lessons if "docs/notes.txt" in e["text"] and e["rule"]]
    assert len(found) == 1, lessons
    return found[0]


def test_a_followed_lesson_and_an_ignored_one_are_counted(tmp_path: Path, client: str):
    box = Sandbox.create(tmp_path, client, NOTES)
    box.install_hooks()
    lesson = _learn_the_notes_lesson(box)
    follow = ("docs/notes.txt", (shell("cat docs/notes.txt"),))
    followed = "Show me the notes again"
    s = box.session(followed, Scenario((Turn(followed, _fix_the_path(), "The notes.", follow),)))
    assert s.returncode == 0, s.stderr[-2000:]
    assert "docs/notes.txt" in s.context
    ignored = "Print the notes once more"  # the model reads the lesson and ignores it
    s = box.session(ignored, Scenario((Turn(ignored, _fix_the_path(), "The notes."),)))
    assert s.returncode == 0, s.stderr[-2000:]
    log = Path(str(box.library) + ".served.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in log]
    assert [r["route"] for r in records] == ["hook", "hook"], records
    assert all(lesson["id"] in r["served"] and r["session"] for r in records)
    assert followed not in "".join(log) and ignored not in "".join(log)  # hashes only
    _accept_all(box)
    box.agentmem("learn", "--no-model")
    effect = json.loads(box.agentmem("effect", "--json").stdout)
    (mine,) = [x for x in effect["lessons"] if x["id"] == lesson["id"]]
    assert mine["served"]["situations"] == 2 and mine["served"]["mistakes"] == 1, effect
    assert mine["held_out"]["situations"] == 0
    assert "not a comparison" in mine["verdict"]
    # the rule of "Call Bash with command like cat docs/notes.txt" cannot be tested today
    # (a shell command's value): its tools judge it, Bash failing or not
    assert mine["judged_by"] == (["rule"] if lesson["rule"].get("testable", True) else ["tools"])
    with Memory.open(box.library) as mem:
        eid = int(lesson["id"])
        use = mem.served_counts([eid])[eid]["served"]
    assert (use["prompts"], use["runs"], use["followed"], use["repeated"]) == (2, 2, 1, 1), use
    assert effect["pending"] == {"unmatched": 0, "no_run": 0, "unjudged": 0, "unread_bytes": 0}


def test_the_holdout_withholds_a_lesson_from_the_real_client(tmp_path: Path, client: str):
    """With ``holdout 0.5``, a prompt the holdout picks gets no lesson (the model makes
    the mistake), another gets it (the model follows it): effect counts one of each."""
    from agentmem import served

    box = Sandbox.create(tmp_path, client, NOTES)
    box.install_hooks()
    lesson = _learn_the_notes_lesson(box)
    box.agentmem("settings", "holdout", "0.5")
    prompts = [f"Show me the notes, take {i}" for i in range(40)]
    held = [p for p in prompts if served.held_out(served.prompt_hash(p), lesson["id"], 0.5)]
    shown = [p for p in prompts if p not in held]
    follow = ("docs/notes.txt", (shell("cat docs/notes.txt"),))
    for prompt in (held[0], shown[0]):
        s = box.session(prompt, Scenario((Turn(prompt, _fix_the_path(), "The notes.", follow),)))
        assert s.returncode == 0, s.stderr[-2000:]
        assert (lesson["text"] in s.context.replace("\\", "")) == (prompt == shown[0])
    records = [json.loads(x) for x in Path(f"{box.library}.served.jsonl").read_text().splitlines()]
    assert [(r["served"], r["held"]) for r in records] == [
        ([], [lesson["id"]]),
        ([lesson["id"]], []),
    ]
    _accept_all(box)
    box.agentmem("learn", "--no-model")
    effect = json.loads(box.agentmem("effect", "--json").stdout)
    (mine,) = [x for x in effect["lessons"] if x["id"] == lesson["id"]]
    assert mine["served"]["situations"] == 1 and mine["served"]["mistakes"] == 0, effect
    assert mine["held_out"]["situations"] == 1 and mine["held_out"]["mistakes"] == 1, effect
    assert mine["verdict"].startswith("not enough data") and effect["holdout"] == 0.5
