"""Review 21: findings of an independent review of the session's last changes (framing's
Tagged, the Read-first rule, installed-code locations). Each test is a minimal input; a
finding left for the lead is marked ``xfail(strict=True)`` with its reason."""

from __future__ import annotations

from pathlib import Path

from agentmem import Memory
from agentmem.records import Step
from tests.test_tool_rules import NOT_READ, _edit, _read


def _write(path: str, ok: bool = True, out: str = "") -> Step:
    return Step("Write", {"file_path": path, "content": "x"}, out or "ok", ok)


def _learned(db: Path, *runs: list[Step]) -> list[str]:
    with Memory.open(db, embedder="hash") as mem:
        for n, steps in enumerate(runs):
            mem.record(f"fix the module {n}", steps, accepted=True)
        mem.learn(use_model=False)
        return [e.text for e in mem.experiences() if "not been read" in e.text]


def test_an_edit_slip_and_a_write_slip_are_two_slips_of_the_read_first_rule(
    tmp_path: Path,
) -> None:
    """Edit and Write each refused a file not read yet: two slips of one rule, merged in
    Stage 3 as "If Edit or Write fails ...". The merged finding kept the first one's
    slips (1) and the library count looked at Edit's calls alone (1): no lesson."""
    one_run = [
        _edit("/p/a.py", False, NOT_READ),
        _write("/p/b.py", False, NOT_READ),
        _read("/p/a.py"),
        _read("/p/b.py"),
        _edit("/p/a.py"),
        _write("/p/b.py"),
    ]
    assert len(_learned(tmp_path / "one.db", one_run)) == 1
    a = [_edit("/p/a.py", False, NOT_READ), _read("/p/a.py"), _edit("/p/a.py")]
    b = [_write("/p/b.py", False, NOT_READ), _read("/p/b.py"), _write("/p/b.py")]
    assert len(_learned(tmp_path / "two.db", a, b)) == 1
    # one slip still teaches nothing
    assert _learned(tmp_path / "once.db", a) == []
