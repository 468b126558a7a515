"""Guards against lessons from traps that readers found on the validation half (wave 9):
each is checked on a minimal synthetic run of its class, which fails without the guard,
and on a near miss that still teaches its true lesson."""

from __future__ import annotations

from pathlib import Path

from agentmem import Memory
from agentmem.agents import programs as P
from agentmem.agents import risk
from agentmem.learning.corrections import find_corrections
from agentmem.learning.evidence import (
    param_value_finding,
    reached_otherwise,
    retried_otherwise,
)
from agentmem.learning.generality import _value_head, _ValueFacts, proven_wrong
from agentmem.learning.shell_fixes import paths_used
from agentmem.records import Step, Trajectory

from .conftest import FakeEmbedder


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


# ------------------------------------------------- 3. a checked value with no value shown


_UNKNOWN = "<tool_use_error>Unknown skill: para-memory-files</tool_use_error>"


def _load(value: str, ok: bool) -> Step:
    return Step("mcp__skills__load", {"skill": value}, "loaded" if ok else _UNKNOWN, ok)


def _learned(tmp_path: Path, runs: list[tuple[list[Step], str | None, bool]]) -> list[str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    with Memory.open(tmp_path / "lib.db", embedder=FakeEmbedder()) as mem:
        for steps, group, ok in runs:
            more = {"group": group} if group else {}
            mem.record("Save the note with the memory skill", steps, accepted=ok, **more)
        mem.learn(use_model=False)
        return [e.text for e in mem.experiences()]


_SKILL_FILE = Step("Read", {"file_path": "/w/p/.claude/skills/para/SKILL.md"}, "# PARA", True)


def _facts(shown: bool) -> _ValueFacts:
    err = "Unknown skill: para-memory-files"
    return _ValueFacts(
        ts=["Skill"],
        x="skill",
        good=None,
        bad="para-memory-files",
        source=None,
        wrong=None,
        recover=False,
        error=err,
        err=err,
        opts=(),
        lookup_ok=False,
        from_task=False,
        bad_from_task=False,
        good_ok=False,
        bad_ok=False,
        right_value_shown=shown,
    )


_SKILL_DIR = "/w/p/.claude/skills/para-memory-files/SKILL.md"


def test_a_checked_value_needs_a_right_value_shown():
    """A skill unknown, then the job done another way (a Read of its SKILL.md), the tool
    never called again with another value: "Check skill before calling Skill: a wrong
    skill failed with 'Unknown skill: ...'" was learned from a validation run, though no
    right value was shown: the skill may be there, and the loader unable to take it."""
    assert _value_head(_facts(False)) is None
    assert _value_head(_facts(True)) == "Check skill before calling Skill:"
    f = param_value_finding("Skill", "", _UNKNOWN, "skill", "para-memory-files", "x", None)
    assert not proven_wrong(f)  # a producer must say it saw the right value
    read = Step("Read", {"file_path": _SKILL_DIR}, "# PARA", True)
    steps = [_load("para-memory-files", False), read]
    assert reached_otherwise(steps, 0, "skill") and not retried_otherwise(steps, 0, "skill")
    assert not retried_otherwise([*steps, _load("para-memory-files", True)], 0, "skill")
    assert retried_otherwise([*steps, _load("b", True)], 0, "skill")
    assert not reached_otherwise([_load("para-memory-files", False), _SKILL_FILE], 0, "skill")


def test_an_unknown_value_reached_another_way_is_no_checked_value(tmp_path: Path):
    """End to end: an accepted run of the task loaded another skill, but the failed run read
    the very skill it named from its folder: what the value named is there."""
    read = Step("Read", {"file_path": _SKILL_DIR}, "# PARA", True)
    runs = [
        ([_load("memory-files", True)], "g", True),
        ([_load("para-memory-files", False), read], "g", False),
    ]
    assert not [t for t in _learned(tmp_path, runs) if "skill" in t]


def test_a_value_the_run_or_its_task_then_corrected_is_still_a_checked_value(tmp_path: Path):
    """The near misses: the same tool called again in the run with another value, and it
    worked; or an accepted run of the same task (an exact group: the same task replayed)
    called it with another value, and it worked there, the failed run reaching nothing of
    that name another way."""
    runs = [([_load("para-memory-files", False), _load("memory-files", True)], None, True)]
    (text,) = _learned(tmp_path / "a", runs)
    assert text.startswith("Check skill before calling mcp__skills__load: a wrong skill failed")
    runs = [
        ([_load("memory-files", True)], "g", True),
        ([_load("para-memory-files", False), _SKILL_FILE], "g", False),
    ]
    (text,) = _learned(tmp_path / "b", runs)
    assert text.startswith("Check skill before calling mcp__skills__load: a wrong skill failed")


# ------------------------------------------------------------------ 1. a slip of a path

_CANT = "sed: can't read specs/001-b/tasks.md: No such file or directory"
_SLIP = _sh("sed -n 80,160p specs/001-b/tasks.md", _CANT, False)
_RIGHT = _sh("sed -n 80,160p specs/001-a/tasks.md", "- [ ] T020", True)


def test_a_path_the_run_used_before_its_slip_is_no_location_fact():
    """``sed specs/001-a/tasks.md`` worked, then ``specs/001-b/tasks.md`` ("No such file"),
    then ``001-a`` again: "tasks.md is at specs/001-a/tasks.md" recorded a slip, not a fact
    the agent lacked. A shell operand or a client tool's file counts, once resolved."""
    before = _sh("sed -n 1,80p specs/001-a/tasks.md", "# Tasks\n- [ ] T001", True)
    read = Step("Read", {"file_path": "/w/app/specs/001-a/tasks.md"}, "# Tasks", True)
    for used in (before, read):
        assert _texts(used, _SLIP, _RIGHT) == [], used.tool
    # real (validation, wave 9): rg and sed on specs/001-a/spec.md worked, then tasks.md in
    # the sibling folder specs/001-b/ failed: the folder's name slipped, the file did not
    other = _sh("sed -n 1,80p specs/001-a/plan.md", "# Plan", True)
    assert _texts(other, _SLIP, _RIGHT) == []


def test_a_path_the_session_used_in_an_earlier_prompt_is_no_location_fact(tmp_path: Path):
    """Real (validation, wave 10: the key's one agent-confusion trap): the session's first
    prompt worked in ``specs/001-a/``; a later prompt read ``specs/001-b/tasks.md`` ("No
    such file"), then ``001-a`` again. The slip is the agent's, whichever prompt it fell
    in: the files the session's earlier runs used count as used before (``earlier``). The
    near miss: a path no earlier prompt used still teaches; end to end, through an import."""
    read = (_sh("sed -n 1,80p specs/001-a/plan.md", "# Plan", True),)
    used = paths_used(_run(*read))
    assert [c.finding.text for c in find_corrections(_run(_SLIP, _RIGHT), lambda: used)] == []
    (text,) = [c.finding.text for c in find_corrections(_run(_SLIP, _RIGHT), frozenset)]
    assert text.startswith("In this project tasks.md is at specs/001-a/tasks.md")
    from tests.transcripts import ClaudeSession

    def session(first: str) -> Path:
        s = ClaudeSession(cwd="/w/app")
        s.prompt("plan the feature")
        s.tool("Bash", {"command": f"sed -n 1,80p {first}"}, "# Plan")
        s.say("Planned.")
        s.prompt("now list the open tasks")
        s.tool("Bash", {"command": "sed -n 80,160p specs/001-b/tasks.md"}, _CANT, True)
        s.tool("Bash", {"command": "sed -n 80,160p specs/001-a/tasks.md"}, "- [ ] T020")
        s.say("Listed.")
        return s.write(tmp_path / first.replace("/", "_") / "s.jsonl")

    for first, learned in (("specs/001-a/plan.md", False), ("docs/plan.md", True)):
        with Memory.open(tmp_path / f"{learned}.db") as mem:
            mem.import_transcripts("claude-code", [session(first)], final=True)
            mem.learn(use_model=False)
            found = [e.text for e in mem.experiences() if "tasks.md is at" in e.text]
            assert bool(found) == learned, (first, found)


def test_a_scratch_file_or_a_walk_up_to_a_manifest_is_no_location_fact():
    """Real (blind set 11, read after its first try; both the key's exploration traps):
    ``cat /tmp/test_main.c`` failed and ``cat test_main.c`` worked, a file the run's own
    compiler wrote, guessed among its temporary files; and ``head go.mod`` in a service's
    folder failed where the repository's ``go.mod`` two folders up worked, the walk up to
    the nearest manifest that a build tool makes too. Neither is where the project keeps a
    file. The near miss: the same file deeper down still teaches."""
    nf = "No such file or directory"
    tmp = _sh("cat /tmp/test_main.c", f"cat: /tmp/test_main.c: {nf}", False)
    here = _sh("cat test_main.c", "int main() {}", True)
    assert _texts(tmp, here) == []
    svc = "/w/app/services/api/go.mod"
    up = _sh(f"head -5 {svc}", f"head: {svc}: {nf}", False)
    root = _sh("head -5 /w/app/go.mod", "module example.com/app", True)
    assert _texts(up, root) == []
    top = _sh("cat go.mod", f"cat: go.mod: {nf}", False)
    down = _sh("cat services/api/go.mod", "module example.com/api", True)
    (text,) = _texts(top, down)
    assert text.startswith("In this project go.mod is at services/api/go.mod")


def test_a_path_first_reached_after_the_failure_is_still_a_location_fact():
    """The near miss: the right path reached only after the failure (or the path used by a
    call that failed, or another file of its folder used before a failed path that lacked
    the folder) still teaches."""
    failed = _sh("sed -n 1,80p specs/001-a/tasks.md", "sed: read error", False)
    for first in ((), (failed,)):
        (text,) = _texts(*first, _SLIP, _RIGHT)
        assert text.startswith("In this project tasks.md is at specs/001-a/tasks.md"), first
    other = _sh("sed -n 1,80p specs/001-a/plan.md", "# Plan", True)
    top = _sh("sed -n 1,80p tasks.md", "sed: can't read tasks.md: No such file or directory", False)
    (text,) = _texts(other, top, _RIGHT)
    assert text.startswith("In this project tasks.md is at specs/001-a/tasks.md")


def test_a_place_inside_installed_code_is_no_location_fact():
    """Real (blind set 9, read after its first try): exploring a library's source, ``rg ...
    deps/ash/lib/ash/resource/change.ex`` found nothing there, then the file was read at
    ``deps/ash/lib/ash/resource/change/change.ex``: the dependency's layout, of its version,
    no fact of the project. The same pair in the project's own folders still teaches."""
    nf = "No such file or directory"
    for top in ("deps/ash/lib", "node_modules/ash/lib", "vendor/ash/lib"):
        bad = _sh(f"cat {top}/resource/change.ex", f"cat: {top}/resource/change.ex: {nf}", False)
        good = _sh(f"cat {top}/resource/change/change.ex", "defmodule Change do", True)
        assert _texts(bad, good) == [], top
    # in the project's own folders a source file's place is the code's layout too
    # (guessed_in_source_tree); a document's place there still teaches
    bad = _sh("cat lib/resource/change.md", f"cat: lib/resource/change.md: {nf}", False)
    good = _sh("cat lib/resource/change/change.md", "# Change", True)
    (text,) = _texts(bad, good)
    assert text.startswith("In this project change.md is at lib/resource/change/change.md")
    for top in ("deps/ash/lib", "node_modules/ash/lib", "vendor/ash/lib"):
        bad = _sh(f"cat {top}/resource/change.md", f"cat: {top}/resource/change.md: {nf}", False)
        good = _sh(f"cat {top}/resource/change/change.md", "# Change", True)
        assert _texts(bad, good) == [], top


# ------------------------------------------- 4. a replacement credited to another program

_MANIFEST = "C:/Users/me/app/Cargo.toml"
_NOT_FOUND = (
    "Exit code 127\n/usr/bin/bash: line 1: Select-String: command not found\n"
    "/usr/bin/bash: line 1: Select-Object: command not found"
)
_CMDLETS = _sh(
    f'cargo build --manifest-path {_MANIFEST} 2>&1 | Select-String "error" '
    "| Select-Object -First 20",
    _NOT_FOUND,
    False,
)


def test_what_did_the_job_of_a_windows_command_does_its_job():
    """On Git Bash, ``Select-String`` and ``Select-Object`` were not found; the next call on
    the path was a plain ``cargo build``: "bash's own cargo did the job instead" credited a
    program of another job. A search's stand-in is a search (grep, Grep), a listing's a
    listing: with none, the lesson keeps its fact and credits nothing."""
    cargo = _sh(f"cargo build --manifest-path {_MANIFEST}", "Finished dev", True)
    (text,) = _texts(_CMDLETS, cargo)
    assert "cargo did" not in text and "did the job" not in text
    assert text.startswith("The Bash tool runs Git Bash here: cmd's and PowerShell's commands")
    assert text.endswith("('Select-String: command not found').")
    read = Step("Read", {"file_path": "C:/Users/me/app/src/main.rs"}, "fn main() {}", True)
    search = _sh(
        'Select-String -Path C:/Users/me/app/src/main.rs -Pattern "fn main"',
        "Exit code 127\n/usr/bin/bash: line 1: Select-String: command not found",
        False,
    )
    (text,) = _texts(search, read)
    assert "Read did" not in text  # Read prints a file; Select-String searches one


def test_a_windows_commands_stand_in_of_its_job_is_still_credited():
    """The near miss: grep after the failure (even after an unrelated call on the path),
    Grep, or the PowerShell tool did the job, and is named."""
    cargo = _sh(f"cargo build --manifest-path {_MANIFEST}", "Finished dev", True)
    grep = _sh(f"cargo build --manifest-path {_MANIFEST} 2>&1 | grep error | head -20", "", True)
    (text,) = _texts(_CMDLETS, cargo, grep)
    assert text.endswith("bash's own grep did the job instead.")
    src = "C:/Users/me/app/src/main.rs"
    failed = _sh(
        f'Select-String -Path {src} -Pattern "fn main"',
        "Exit code 127\n/usr/bin/bash: line 1: Select-String: command not found",
        False,
    )
    found = Step("Grep", {"pattern": "fn main", "path": src}, "3:fn main() {", True)
    (text,) = _texts(failed, found)
    assert text.endswith("; Grep did the job instead.")
    shell = Step("PowerShell", {"command": f'Select-String -Path "{src}" -Pattern x'}, "3:x", True)
    (text,) = _texts(failed, shell)
    assert text.endswith("; the PowerShell tool (Select-String) did the job instead.")
    assert P.same_job("grep", ["Select-String"]) and not P.same_job("cargo", ["Select-String"])


def test_every_windows_command_stands_for_a_program_of_the_table():
    stand_ins = {p.name: p.stands_for for p in P.PROGRAMS.values() if p.stands_for}
    assert {"Select-String", "Get-ChildItem", "Get-Content", "del"} <= set(stand_ins)
    for name, job in stand_ins.items():
        assert P.is_windows_command(name) and P.get(job) is not None, name
        assert P.get(job).stands_for is None, name  # one step: a bash program
