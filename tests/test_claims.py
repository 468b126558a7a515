"""Serve-time claim checks (issue 29): a lesson that claims a program is missing or there,
or a path exists in the project, is withheld where that claim no longer holds."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

from agentmem import Memory
from agentmem.agents import learning_view
from agentmem.claims import ABSENT, EXISTS, NOT_ON_PATH, ON_PATH, claims, withheld
from agentmem.learning.generality import rule_for
from agentmem.learning.rules import Rule
from agentmem.learning.shell_fixes import SHELL_CHANGES, claims_of, find_shell_fixes
from agentmem.records import Experience, Step, Trajectory

from .conftest import FakeEmbedder, FakeModel


def _which(*present: str):
    return lambda name: f"/usr/bin/{name}" if name in present else None


def _rule(*pairs: tuple[str, str]) -> str:
    return Rule("shell", ["python"], testable=False, claims=pairs).to_json()


def _lesson(*pairs: tuple[str, str]) -> Experience:
    return Experience(text="python is not on PATH here: run python3 instead.", rule=_rule(*pairs))


def test_a_program_said_missing_is_withheld_once_it_is_on_path():
    lesson = _lesson((NOT_ON_PATH, "python"), (ON_PATH, "python3"))
    assert withheld(lesson, which=_which("python3")) is None
    assert withheld(lesson, which=_which("python", "python3")) == "python is on PATH now"
    assert withheld(lesson, which=_which()) == "python3 is not on PATH here"


def test_a_full_path_said_to_be_the_program_must_be_an_executable_file(tmp_path: Path):
    gh = tmp_path / "bin" / "gh"
    lesson = Experience(text="gh: call it as the full path.", rule=_rule((ON_PATH, str(gh))))
    assert withheld(lesson) == f"{gh} is not an executable file here"
    gh.parent.mkdir()
    gh.write_text("#!/bin/sh\n")
    assert withheld(lesson) == f"{gh} is not an executable file here"  # not executable yet
    gh.chmod(gh.stat().st_mode | stat.S_IXUSR)
    assert withheld(lesson) is None


def test_a_path_said_to_exist_is_checked_under_the_project(tmp_path: Path):
    lesson = Experience(
        text="notes.txt is at docs/notes.txt.", rule=_rule((EXISTS, "docs/notes.txt"))
    )
    assert withheld(lesson, tmp_path) == "docs/notes.txt does not exist in this project"
    assert withheld(lesson, None) is None  # no root: a relative path is not checked
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("x")
    assert withheld(lesson, tmp_path) is None
    # several places (the working directory, the project's root): under either is enough
    assert withheld(lesson, [tmp_path / "sub", tmp_path]) is None
    out = Experience(text="x", rule=_rule((EXISTS, "../../etc/passwd")))
    assert withheld(out, tmp_path) is None  # a path out of the project claims nothing of it


def test_a_folder_a_lesson_says_to_make_is_withheld_once_it_is_there(tmp_path: Path):
    """ "Run mkdir -p out before touch out/a.txt" has nothing to say where out exists (a
    blind set's reader: the run made the folder, so the lesson cannot recur there)."""
    lesson = Experience(
        text="Run mkdir -p out before touch out/a.txt.", rule=_rule((ABSENT, "out"))
    )
    assert withheld(lesson, tmp_path) is None
    (tmp_path / "out").mkdir()
    assert withheld(lesson, tmp_path) == "out exists now"
    assert withheld(lesson, tmp_path / "elsewhere") is None  # another project: still missing


def test_the_real_path_lookup_decides(tmp_path: Path, monkeypatch):
    tool = tmp_path / "mytool-agentmem-test"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    lesson = _lesson((NOT_ON_PATH, tool.name))
    monkeypatch.setenv("PATH", "/nonexistent")
    assert withheld(lesson) is None
    monkeypatch.setenv("PATH", str(tmp_path))
    assert shutil.which(tool.name) == str(tool)
    assert withheld(lesson) == f"{tool.name} is on PATH now"


def test_no_claims_or_odd_claims_withhold_nothing():
    assert withheld(Experience(text="Read the file first, then edit it.")) is None
    assert withheld(Experience(text="x", rule="not json")) is None
    odd = json.dumps({"kind": "shell", "claims": [["exists"], ["rm", "-rf"], ["on_path", ""], 3]})
    assert claims(Experience(text="x", rule=odd)) == ()
    assert claims({"rule": _rule((ON_PATH, "uv"))}) == ((ON_PATH, "uv"),)
    assert claims(Rule("shell", ["uv"], claims=[(ON_PATH, "uv")])) == ((ON_PATH, "uv"),)

    def boom(name: str) -> str | None:
        raise OSError("name too long")

    assert withheld(_lesson((ON_PATH, "x" * 5000)), which=boom) is None


def _fix(*steps: Step):
    run = learning_view(Trajectory(task="do it", steps=steps))
    (fix,) = find_shell_fixes(run)
    return fix.finding


def test_each_shell_change_states_its_claims_from_its_evidence():
    by = {c.name: c for c in SHELL_CHANGES}
    assert claims_of(_fix(*by["interpreter"].positive)) == (
        (NOT_ON_PATH, "python"),
        (ON_PATH, "python3"),
    )
    assert claims_of(_fix(*by["program"].positive)) == ((NOT_ON_PATH, "rg"), (ON_PATH, "grep"))
    assert claims_of(_fix(*by["fullpath"].positive)) == (
        (NOT_ON_PATH, "gh"),
        (ON_PATH, "/opt/homebrew/bin/gh"),
    )
    assert claims_of(_fix(*by["wrapper"].positive)) == ((ON_PATH, "uv"),)
    assert claims_of(_fix(*by["location"].positive)) == ((EXISTS, "docs/notes.txt"),)
    assert claims_of(_fix(*by["hidden"].positive)) == ((EXISTS, ".config/specs"),)
    assert claims_of(_fix(*by["suggested"].positive)) == ()  # nothing to check
    assert claims_of(_fix(*by["prerequisite"].positive)) == ((ABSENT, "out"),)
    rule = rule_for(_fix(*by["location"].positive), "x")
    assert Rule.from_json(rule.to_json()) == rule and rule.claims == ((EXISTS, "docs/notes.txt"),)


def test_a_learned_lesson_carries_its_claims_and_is_withheld_where_they_fail(tmp_path: Path):
    steps = [
        Step(
            tool="Bash",
            params={"command": "cat notes.txt"},
            success=False,
            output="Exit code 1\ncat: notes.txt: No such file or directory",
        ),
        Step(tool="Bash", params={"command": "cat docs/notes.txt"}, output="buy milk"),
    ]
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        tid = mem.record("read my notes", steps, meta={"cwd": str(tmp_path)})
        mem.feedback(tid, "accept")
        mem.learn(use_model=False)
        (lesson,) = mem.experiences()
    assert lesson.text.startswith("In this project notes.txt is at docs/notes.txt")
    assert withheld(lesson, tmp_path) == "docs/notes.txt does not exist in this project"
    # retrieval is what a prompt is served: the lesson is withheld there too, with the reason
    from agentmem.serving import Query

    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        assert mem.retrieve(lesson.text, project=str(tmp_path)) == []
        got = mem.serve(Query(lesson.text, project=tmp_path))
    ((held, why),) = got.withheld
    assert held.id == lesson.id and why == "docs/notes.txt does not exist in this project"
    os.makedirs(tmp_path / "docs")
    (tmp_path / "docs" / "notes.txt").write_text("buy milk")
    assert withheld(lesson, tmp_path) is None
    # once the path exists, retrieval returns it (a Scored hit), and its claim holds
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        (hit,) = mem.retrieve(lesson.text, project=str(tmp_path))
    assert hit.experience.id == lesson.id and withheld(hit, tmp_path) is None
