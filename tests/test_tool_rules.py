"""A coding agent's tool rules ("Read the file first, then retry") judged file by file.

Fixtures are our own: a few Claude Code calls written here, not transcript text.
"""

from __future__ import annotations

from agentmem.learning.corrections import find_corrections
from agentmem.learning.kinds import Kind
from agentmem.learning.rules import Rule, applies, follows
from agentmem.records import Step, Trajectory

NOT_READ = (
    "<tool_use_error>File has not been read yet. "
    "Read it first before writing to it.</tool_use_error>"
)
CHANGED = (
    "<tool_use_error>File has been modified since read, either by the user or by a linter. "
    "Read it again before attempting to write it.</tool_use_error>"
)
READ_FIRST = Rule(Kind.TOOL_RULE, ("Write", "Edit"), helper="Read", error="File has not been read")


def _write(path: str, ok: bool = True, out: str = "") -> Step:
    return Step("Write", {"file_path": path, "content": "x = 1\n"}, out or "written", ok)


def _edit(path: str, ok: bool = True, out: str = "") -> Step:
    return Step("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, out or "ok", ok)


def _read(path: str) -> Step:
    return Step("Read", {"file_path": path}, "1\ta = 0", True)


def _bash(command: str) -> Step:
    return Step("Bash", {"command": command}, "", True)


def test_a_run_that_gives_the_file_up_neither_follows_nor_contradicts() -> None:
    # Write refused notes.py; the agent wrote it with a heredoc instead and went on to
    # write another, new file: no Write of notes.py worked, so the rule is not tested
    steps = [
        _write("/p/notes.py", False, NOT_READ),
        _bash("cat > notes.py << 'EOF'\nx = 1\nEOF"),
        _write("/p/other.py"),
    ]
    assert not applies(READ_FIRST, "write the notes", steps)


def test_the_same_file_written_after_a_read_follows() -> None:
    steps = [_edit("/p/a.py", False, NOT_READ), _read("/p/a.py"), _edit("/p/a.py")]
    assert applies(READ_FIRST, "fix a", steps)
    assert follows(READ_FIRST, "fix a", steps)


def test_the_same_file_written_without_a_read_contradicts() -> None:
    # a Read of another file is not the Read the rule asks for
    steps = [_edit("/p/a.py", False, NOT_READ), _read("/p/b.py"), _edit("/p/a.py")]
    assert applies(READ_FIRST, "fix a", steps)
    assert not follows(READ_FIRST, "fix a", steps)


def test_modified_since_read_is_a_tool_rule() -> None:
    t = Trajectory(
        task="tidy the module",
        steps=(
            _read("/p/m.py"),
            _edit("/p/m.py", False, CHANGED),
            _read("/p/m.py"),
            _edit("/p/m.py"),
        ),
        accepted=True,
    )
    [c] = find_corrections(t)
    assert c.kind == Kind.TOOL_RULE
    assert c.finding.detail["rule_error"] == "has been modified since read"
    assert "Read the file first, then retry" in c.finding.text
