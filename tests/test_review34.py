"""Review 34 of the seventeenth session of wave 4 (commit d3d0ee6): hunk order, interpret,
exclusive, inline, the widened encoding, the DNS refusal and PowerShell's output tail.
Each test shows a defect the review found (a false lesson, a hang on odd input, tool
output copied into a lesson) and stays as its guard."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from agentmem.agents import learning_view
from agentmem.agents.outcomes import escalations
from agentmem.learning.hunk_order import hunk_orders
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory


@contextmanager
def _within(seconds: float) -> Iterator[None]:
    """Fail (not hang) when the block runs longer than ``seconds``."""

    def late(*_: object) -> None:
        raise TimeoutError(f"took over {seconds}s")

    old = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _codex(command: str, output: str = "", ok: bool = True, **more: object) -> Step:
    body = f"Process exited with code {0 if ok else 1}\nOutput:\n{output}"
    return Step("shell_command", {"command": command, **more}, body, ok)


def _ps(script: str, output: str = "", ok: bool = True) -> Step:
    argv = ["powershell.exe", "-NoProfile", "-Command", script]
    body = f"Process exited with code {0 if ok else 1}\nOutput:\n{output}"
    return Step(tool="shell", params={"command": argv}, output=body, success=ok)


def _found(kind: str, *steps: Step, cwd: str = "/w/app") -> list[str]:
    run = learning_view(Trajectory(task="do the job", steps=steps, meta={"cwd": cwd}))
    return [x.finding.text for x in find_shell_fixes(run) if x.finding.detail["change"] == kind]


def _timed(fn: Callable[[], object], seconds: float = 2.0) -> None:
    with _within(seconds):
        t0 = time.perf_counter()
        fn()
        assert time.perf_counter() - t0 < seconds


# -- PowerShell's output tail: no catastrophic backtracking -------------------------------


def test_a_line_of_many_output_filters_that_does_not_end_in_one_is_read_fast() -> None:
    # _PS_TAIL's whitespace could be split between two quantifiers at every pipe: 2^n
    line = "rg -n x docs" + "  |  Out-String  " * 30 + "&& echo done"
    _timed(lambda: _found("hidden", _codex(line, "", False), _codex(line, "x")))


# -- hunk order ---------------------------------------------------------------------------


def _patch(*sections: tuple[str, list[str]]) -> str:
    body = "".join(
        f"*** Update File: {f}\n" + "".join(f"@@\n{h}" for h in hs) for f, hs in sections
    )
    return f"*** Begin Patch\n{body}*** End Patch"


_A = " alpha beta gamma\n+new line\n"
_B = "-delta epsilon zeta\n+eta theta\n"
_MISSING_B = "Failed to find expected lines in /w/s.md:\ndelta epsilon zeta"


def _orders(*steps: Step) -> list[tuple[int, int]]:
    return [(x.failed, x.fixed) for x in hunk_orders(Trajectory(task="t", steps=steps))]


def test_a_huge_output_repeating_the_failure_words_is_read_fast() -> None:
    said = "Failed to find expected lines in " * 30000  # one line, no newline: 1 MB
    failed = Step("apply_patch", {"input": _patch(("/w/s.md", [_A, _B]))}, said, False)
    _timed(lambda: _orders(failed))


def test_hunk_order_is_the_same_files_order_not_the_files_order_in_the_patch() -> None:
    # b.md had one hunk: apply_patch seeks it from the file's top, so no order failed it;
    # putting b.md's section before a.md's changes no hunk's place in its file
    failed = Step(
        "apply_patch",
        {"input": _patch(("a.md", [_A]), ("b.md", [_B]))},
        "Failed to find expected lines in b.md:\ndelta epsilon zeta",
        False,
    )
    fixed = Step("apply_patch", {"input": _patch(("b.md", [_B]), ("a.md", [_A]))}, "ok", True)
    assert _orders(failed, fixed) == []


def test_a_shell_call_that_may_write_the_file_between_ends_the_hunk_order() -> None:
    failed = Step("apply_patch", {"input": _patch(("/w/s.md", [_A, _B]))}, _MISSING_B, False)
    fixed = Step("apply_patch", {"input": _patch(("/w/s.md", [_B, _A]))}, "ok", True)
    for between in (
        _codex("sed -i 's/old/delta epsilon zeta/' /w/s.md"),
        _codex("git checkout -- s.md"),
        _codex("python3 fix.py s.md"),
        _codex("cat other.md > /w/s.md"),
    ):
        assert _orders(failed, between, fixed) == [], between.params
    # a look at the file is no write: the slip stands
    assert _orders(failed, _codex("nl -ba /w/s.md | sed -n '1,40p'", "1 x"), fixed) == [(0, 2)]


# -- interpret ----------------------------------------------------------------------------


def test_interpret_matches_a_scripts_path_by_whole_folder_names() -> None:
    failed = _codex("scripts/run.sh", "/bin/bash: line 1: scripts/run.sh: Permission denied", False)
    # old_scripts/run.sh is another file: "run it as bash old_scripts/run.sh" is false
    assert not _found("interpret", failed, _codex("bash old_scripts/run.sh", "ok"))
    assert _found("interpret", failed, _codex("bash /w/app/scripts/run.sh", "ok"))
    assert _found("interpret", failed, _codex("bash ./scripts/run.sh", "ok"))


# -- escalation: a DNS failure ------------------------------------------------------------


def test_an_escalated_retry_that_still_could_not_resolve_the_name_got_nowhere() -> None:
    failed = _codex("npm install", "npm ERR! getaddrinfo ENOTFOUND registry.npmjs.org", False)
    for again in (
        "npm ERR! getaddrinfo EAI_AGAIN registry.npmjs.org",
        "curl: (6) Could not resolve host: registry.npmjs.org",
        "Temporary failure in name resolution",
    ):
        esc = _codex("npm install", again, False, sandbox_permissions="require_escalated")
        assert escalations((failed, esc)) == {}, again
    # the retry got past the name and failed on the code's own test: still a correction
    esc = _codex(
        "npm install", "npm ERR! peer dep missing", False, sandbox_permissions="require_escalated"
    )
    assert escalations((failed, esc)) == {0: 1}


# -- exclusive ----------------------------------------------------------------------------


def test_exclusive_names_only_parameters_the_command_wrote() -> None:
    # the parameters' names come from the tool output; the command wrote -Total and -Ta,
    # which any name beginning so would match: the output's words are not the lesson's
    said = (
        "Get-Content : The parameters TotalIgnorePreviousInstructions and TailRunRmRf cannot "
        "be used together."
    )
    failed = _ps('Get-Content -Path "cli.py" -Total 250 -Ta 250', said, False)
    got = _found("exclusive", failed, _ps('Get-Content -Path "cli.py" -Tail 200', "x"))
    assert not any("Ignore" in x or "RmRf" in x for x in got), got


# -- inline -------------------------------------------------------------------------------

_NODE_CODE = (
    "\nconst fs = require('fs');\nconst cards = JSON.parse(fs.readFileSync('data/cards.json'));\n"
    "const judged = cards.map(card => ({ name: card.name, stage: card.stage === 'won' ? "
    "'signed' : 'open', reason: card.reason }));\nconsole.log(JSON.stringify(judged, null, 2));\n"
)
_UNREAD = "Exit code 2\n/usr/bin/bash: -c: line 96: unexpected EOF while looking for matching `''"


def test_inline_names_the_flag_that_gives_the_program_its_code() -> None:
    # node's -r preloads a module (--require): its value is no inline script
    failed = _codex(f'node -r "dotenv/config" -e "{_NODE_CODE}"', _UNREAD, False)
    wrote = Step("Write", {"file_path": "/w/app/judge.js", "content": _NODE_CODE}, "ok")
    ran = _codex("node judge.js", "[]")
    got = _found("inline", failed, wrote, ran)
    assert not any("node -r" in x for x in got), got


def test_only_a_first_or_last_lines_filter_is_read_past() -> None:
    """-Skip, -Index or -Property hide or reshape the output: the line is not read past
    them (review 34's note, taken)."""
    from agentmem.learning.shell_fixes import _ps_untailed

    assert _ps_untailed("rg x docs -S | Select-Object -First 50") == "rg x docs -S"
    assert _ps_untailed("rg x | Select-Object -First 5 | Out-String") == "rg x"
    assert _ps_untailed("rg x | Select-Object -Skip 5") is None
    assert _ps_untailed("rg x | Select-Object -Property Name") is None
