"""Review 12's findings on wave 8's changes, each as the input that shows it."""

from __future__ import annotations

from agentmem.records import Step


def _codex(cmd: str, out: str, ok: bool = False, **more: object) -> Step:
    return Step(tool="exec_command", params={"cmd": cmd, **more}, output=out, success=ok)


_ESCALATED = {"sandbox_permissions": "require_escalated"}


def test_the_sandbox_check_reads_each_call_once_per_run(monkeypatch):
    """``_sandbox_ran`` read every call of the run again for each refused and escalated
    call: quadratic, 8.8 s of ``find_corrections`` (0.5 s before it) on a 2,000-call Codex
    run with 500 refusals. What ran in the sandbox is read once per run now."""
    from agentmem.agents import outcomes

    calls = []
    real = outcomes._worked
    monkeypatch.setattr(outcomes, "_worked", lambda line: calls.append(line) or real(line))
    lock = "sandbox denied (exit code 1)\nfatal: Unable to create '/w/p/.git/index.lock'"
    steps: list[Step] = []
    for n in range(50):
        add = f"rtk git add f{n}.py"
        steps += [_codex(add, lock), _codex(add, "", True, **_ESCALATED)]
        steps += [_codex(f"cat src/m{n}.py | head -50", "x", True)]
    assert len(outcomes.escalations(tuple(steps))) == 50
    assert len(calls) <= 50  # each unescalated successful call once
