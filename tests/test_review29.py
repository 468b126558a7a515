"""Review 29: a stored self-kill or kept-folder rule read untestable by its text
(7f36fcb, ``Rule.stored``), and no location lesson of a source file guessed inside the
tree (1f38517, a9776ad: ``shell_fixes.guessed_in_source_tree``).

Each test is a defect the review found, with the smallest case that shows it."""

from __future__ import annotations

from pathlib import Path

from agentmem import Memory
from agentmem.db import write
from agentmem.learning.kinds import Kind
from agentmem.learning.rules import Rule
from agentmem.learning.self_kill import self_kill_text
from agentmem.records import Operation, Step
from agentmem.storage.journal import apply_operations

from .test_precision_guards import _listed, _shell_where

# -- 7f36fcb: a stored declared rule is told apart by its text only ----------------------


def test_a_model_rewrite_of_an_old_self_kill_lesson_keeps_it_untestable(tmp_path: Path) -> None:
    """A MODIFY or MERGE that carries no rule (the model's rewrite of a live lesson) keeps
    the stored rule with the new text. The text was the only mark of a rule stored testable
    before 6033521: once the model rephrases it ("In Bash, pkill -f ..."), the old rule is
    read testable again, and failed calls of Bash retire a true lesson. The rule kept for
    a new text must be the one its old text was read as."""
    old = Rule(Kind.TOOL_RULE, ("Bash",), client="claude-code").to_json()
    text = (
        "In Bash, pkill -f PATTERN also kills the shell running the command, since its "
        "text holds PATTERN: kill by PID, or bracket one letter ([s]erver)."
    )
    with Memory.open(tmp_path / "m.db", embedder="hash") as mem:
        e = mem.add(self_kill_text("Bash"), domain="bash")
        mem.db.execute("UPDATE experiences SET rule = ? WHERE id = ?", [old, e.id])
        vectors = mem._retriever().embed([text])
        with write(mem.db):
            sid = mem.db.execute(
                "INSERT INTO sessions (kind, status, started_at, finished_at) "
                "VALUES ('learn', 'applied', 'x', 'x')"
            ).lastrowid
            (done,) = apply_operations(
                mem.db,
                sid,
                [Operation("MODIFY", text=text, targets=(e.id,), origin="model")],
                vectors,
            )
        assert done.status == "applied"
        row = mem.db.execute("SELECT text, rule FROM experiences WHERE id = ?", [e.id]).fetchone()
        assert row[0] == text
        rule = Rule.stored(row[1], row[0])
        assert rule is not None and not rule.testable


# -- 1f38517, a9776ad: a source file guessed inside the tree -----------------------------


def _where(bad: str, good: str, listing: Step) -> list[str]:
    failed = _listed(f"cat {bad}", f"cat: {bad}: No such file or directory", ok=False)
    return _shell_where(failed, listing, _listed(f"cat {good}", "export default 1"))


def test_an_absolute_wrong_path_lacking_the_subfolder_still_teaches() -> None:
    """The docstring's exception, "the project's code lives in a subfolder", written with
    absolute paths (a Read tool's, or ``cat /w/app/...``): the wrong path is the right one
    without its subfolder below the common top, not its suffix as written. Relative, it is
    a ``prefix`` lesson; absolute, a ``location`` one that the check dropped."""
    good = "/w/app/rallycoach/src/app/page.tsx"
    lessons = _where("/w/app/src/app/page.tsx", good, _listed("ls /w/app/rallycoach", "src\n"))
    assert len(lessons) == 1 and good in lessons[0], lessons
    windows = "C:\\w\\app\\rallycoach\\src\\app\\page.tsx"
    bad = "C:\\w\\app\\src\\app\\page.tsx"
    from agentmem.learning.findings import Finding
    from agentmem.learning.shell_fixes import guessed_in_source_tree

    f = Finding(
        Kind.TOOL_RULE, "Bash", "", "t", (), {"change": "location", "good": windows, "bad": bad}
    )
    assert not guessed_in_source_tree(type("X", (), {"finding": f})())
    # the guess inside the tree, absolute, is still no lesson
    guessed = _where(
        "/w/app/src/components/Q.jsx",
        "/w/app/src/filters/Q.jsx",
        _listed("rg --files /w/app/src", "/w/app/src/filters/Q.jsx\n"),
    )
    assert guessed == []


def test_a_configuration_file_with_a_code_ending_still_teaches() -> None:
    """The docstring keeps "a configuration's place"; ``vite.config.ts``,
    ``next.config.mjs`` or ``webpack.config.js`` is one, whatever its ending."""
    find = _listed("find . -name vite.config.ts", "./apps/web/vite.config.ts\n")
    lessons = _where("config/vite.config.ts", "apps/web/vite.config.ts", find)
    assert len(lessons) == 1 and "apps/web/vite.config.ts" in lessons[0], lessons
