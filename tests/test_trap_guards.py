"""Guards against lessons from traps that readers found on the validation half (wave 9):
each is checked on a minimal synthetic run of its class, which fails without the guard,
and on a near miss that still teaches its true lesson."""

from __future__ import annotations

from agentmem.agents import risk
from agentmem.learning.corrections import find_corrections
from agentmem.records import Step, Trajectory


def _sh(cmd: str, out: str, ok: bool) -> Step:
    return Step(tool="Bash", params={"command": cmd}, output=out, success=ok)


def _run(*steps: Step) -> Trajectory:
    return Trajectory(task="finish the change", steps=steps, meta={"cwd": "/w/app"}, accepted=True)


def _texts(*steps: Step) -> list[str]:
    return [c.finding.text for c in find_corrections(_run(*steps))]


# --------------------------------------------------------------- 2. a policy overridden

_POLICY = (
    "X Pull request acme/app#81 is not mergeable: the base branch policy prohibits the merge.\n"
    "To have admin rights override, add the `--admin` flag."
)
_HOOK = "husky > pre-commit hook failed (add --no-verify to bypass)\nlint failed"
_REJECTED = (
    " ! [rejected]        main -> main (non-fast-forward)\n"
    "error: failed to push some refs to 'origin'"
)


def test_the_bypasses_are_rows_of_the_one_risk_table():
    assert risk.bypasses("gh pr merge 81 --squash --admin")
    assert risk.bypasses("git commit --no-verify -m x")
    assert risk.bypasses("git commit -n -m x")
    assert risk.bypasses("git push --force-with-lease origin main")
    assert risk.bypasses("bash -lc 'git push -f origin main'")
    # risky fixes of the machine are held, never bypasses
    assert not risk.bypasses("pip install --break-system-packages requests")
    assert not risk.bypasses("terraform apply -auto-approve")
    assert not risk.bypasses("npm install --ignore-scripts")
    assert not risk.bypasses("git push origin main")
    assert risk.capabilities("gh pr merge 81 --admin")  # still risky, as before


def test_a_protection_overridden_teaches_nothing():
    """``gh pr merge`` refused by the base branch's policy, then ``--admin`` (the user had
    allowed it once): "Run gh pr with --admin" was learned (and held). A hook skipped and
    a rejected push forced are the same class."""
    pairs = [
        ("gh pr merge 81 --squash", _POLICY, "gh pr merge 81 --squash --admin", "Merged"),
        ("git commit -m x", _HOOK, "git commit --no-verify -m x", "[main 1a2b3c] x"),
        ("git push origin main", _REJECTED, "git push --force origin main", "forced update"),
    ]
    for bad, said, good, out in pairs:
        assert _texts(_sh(bad, said, False), _sh(good, out, True)) == [], good


def test_a_risky_fix_of_the_machine_is_still_learned_held():
    """The near miss: ``-auto-approve`` past terraform's confirmation is a fix on that
    machine: learned, and held for a person by its risk (not a bypass of a policy)."""
    said = "Error: No value for required variable\n\nrun with -auto-approve"
    (text,) = _texts(
        _sh("terraform apply", said, False),
        _sh("terraform apply -auto-approve", "Apply complete!", True),
    )
    assert "-auto-approve" in text
    assert risk.lesson_risks(text)  # written held
    # a push fixed without force still teaches
    said = (
        "fatal: The current branch x has no upstream branch.\n"
        "To push, use\n\n    git push --set-upstream origin x\n"
    )
    (text,) = _texts(
        _sh("git push", said, False), _sh("git push --set-upstream origin x", "branch set up", True)
    )
    assert "--set-upstream" in text
