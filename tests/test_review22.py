"""Review of wave 10's guards (the session's earlier paths, a scratch file, a walk up to a
manifest) and standing shell facts: each test is a case the change had wrong or had not
checked, on synthetic runs only."""

from __future__ import annotations

from pathlib import Path

from agentmem import Memory
from agentmem.learning.corrections import find_corrections
from agentmem.records import Step, Trajectory
from agentmem.storage.imports import earlier_in_session

from .transcripts import ClaudeSession

_NF = "No such file or directory"


def _sh(cmd: str, out: str, ok: bool) -> Step:
    return Step(tool="Bash", params={"command": cmd}, output=out, success=ok)


def _texts(*steps: Step, cwd: str = "/w/app") -> list[str]:
    t = Trajectory(task="finish the change", steps=steps, meta={"cwd": cwd}, accepted=True)
    return [c.finding.text for c in find_corrections(t)]


def test_a_file_found_higher_up_than_guessed_is_still_a_location_fact():
    """The walk-up guard dropped every file found in a folder above the failed one, not
    only a manifest: ``src/utils/helpers.py`` failed and ``src/helpers.py`` worked is where
    the project keeps the file, as true as the same file deeper down."""
    pairs = [
        ("cat docs/guides/setup.md", "cat docs/setup.md", "setup.md is at docs/setup.md"),
        ("head config/app/roles.yml", "head config/roles.yml", "roles.yml is at config/roles.yml"),
    ]
    for bad, good, fact in pairs:
        said = f"{bad.split()[0]}: {bad.split()[-1]}: {_NF}"
        (text,) = _texts(_sh(bad, said, False), _sh(good, "x: 1", True))
        assert text.startswith(f"In this project {fact}"), text
    # one source file's place is the code's layout, explored each task (thirteenth session:
    # shell_fixes.guessed_in_source_tree), higher up or deeper down alike
    said = f"cat: src/utils/helpers.py: {_NF}"
    assert _texts(_sh("cat src/utils/helpers.py", said, False),
                  _sh("cat src/helpers.py", "def f(): ...", True)) == []  # fmt: skip
    # the walk up to a manifest is still a probe, whatever case or tool
    for name in ("go.mod", "package.json", "Cargo.toml", "pyproject.toml"):
        bad = f"cat services/api/{name}"
        assert _texts(_sh(bad, f"cat: services/api/{name}: {_NF}", False),
                      _sh(f"cat {name}", "x", True)) == [], name  # fmt: skip


def test_a_project_in_a_temporary_folder_keeps_its_location_facts():
    """The scratch guard read the paths once resolved against the run's folder, so a
    project that lies in a temporary folder (``/tmp/app``, a macOS ``/private/var/folders``
    checkout, a Windows user's ``AppData/Local/Temp``) learned no location at all. A path
    of the run's own folder is the project's; a scratch file outside it is still none."""
    miss = _sh("cat go.mod", f"cat: go.mod: {_NF}", False)
    found = _sh("cat services/api/go.mod", "module example.com/api", True)
    for cwd in (
        "/tmp/app",
        "/private/var/folders/ab/T/app",
        "C:\\Users\\me\\AppData\\Local\\Temp\\app",
    ):
        (text,) = _texts(miss, found, cwd=cwd)
        assert text.startswith("In this project go.mod is at services/api/go.mod"), cwd
    tmp = _sh("cat /tmp/test_main.c", f"cat: /tmp/test_main.c: {_NF}", False)
    here = _sh("cat test_main.c", "int main() {}", True)
    assert _texts(tmp, here, cwd="/tmp/app") == []


def _session(sid: str, first: str | None, *, agent: bool = False) -> ClaudeSession:
    s = ClaudeSession(session_id=sid, cwd="/w/app")
    if first is not None:
        s.prompt("plan the feature")
        s.tool("Bash", {"command": f"sed -n 1,80p {first}"}, "# Plan")
        s.say("Planned.")
    return s


def _slip(s: ClaudeSession) -> None:
    s.prompt("now list the open tasks")
    s.tool("Bash", {"command": "sed -n 80,160p specs/001-b/tasks.md"}, _CANT, True)
    s.tool("Bash", {"command": "sed -n 80,160p specs/001-a/tasks.md"}, "- [ ] T020")
    s.say("Listed.")


_CANT = f"sed: can't read specs/001-b/tasks.md: {_NF}"


def _located(mem: Memory) -> list[str]:
    return [e.text for e in mem.experiences() if "tasks.md is at" in e.text]


def test_a_session_imported_in_two_imports_still_knows_its_earlier_prompt(tmp_path: Path):
    """The session's first prompt imported and learned from alone; its later prompt, the
    slip, in a second import of the grown file: the earlier run is still the session's."""
    sid = "0a1b2c3d-0000-4000-8000-0000000000aa"
    s = _session(sid, "specs/001-a/plan.md")
    path = s.write(tmp_path / "s.jsonl")
    with Memory.open(tmp_path / "m.db") as mem:
        mem.import_transcripts("claude-code", [path], final=True)
        mem.learn(use_model=False)
        # another session in between: its runs take the ids between the two imports
        other = _session("0a1b2c3d-0000-4000-8000-0000000000bb", "docs/x.md")
        mem.import_transcripts("claude-code", [other.write(tmp_path / "o.jsonl")], final=True)
        _slip(s)
        s.write(path)
        mem.import_transcripts("claude-code", [path], final=True)
        ids = sorted(r[0] for r in mem.db.execute("SELECT id FROM trajectories").fetchall())
        assert earlier_in_session(mem.db, ids[-1]) == [ids[0]]
        mem.learn(use_model=False)
        assert _located(mem) == []


def test_a_sub_agent_does_not_inherit_its_parents_paths(tmp_path: Path):
    """A sub-agent (session ``sid/agent-x``) starts with none of its parent's context: a
    path the parent used is one the sub-agent lacked, and its own find still teaches."""
    sid = "0a1b2c3d-0000-4000-8000-0000000000cc"
    parent = _session(sid, "specs/001-a/plan.md")
    path = parent.write(tmp_path / f"{sid}.jsonl")
    sub = _session(sid, None)
    sub.sidechain, sub.agent_id = True, "a1"
    _slip(sub)
    sub.write(tmp_path / sid / "subagents" / "agent-a1.jsonl")
    with Memory.open(tmp_path / "m.db") as mem:
        mem.import_transcripts("claude-code", [path], final=True)
        sessions = {r[0] for r in mem.db.execute("SELECT session_id FROM imported_turns")}
        assert any(x.endswith("/agent-a1") for x in sessions), sessions
        mem.learn(use_model=False)
        assert len(_located(mem)) == 1


def test_a_session_recorded_without_an_import_knows_its_earlier_prompt(tmp_path: Path):
    """A team library's runs come from the inbox and a private one's may be recorded
    directly: both keep ``meta["session_id"]`` but have no ``imported_turns`` row. The
    session guard reads that id, so the slip of a path the session used in its first
    prompt teaches nothing there, as it teaches nothing when the same runs are imported
    (before, the guard read ``imported_turns`` only and the slip became a lesson)."""
    sid = "0a1b2c3d-0000-4000-8000-0000000000dd"
    meta = {"session_id": sid, "cwd": "/w/app"}
    first = [_sh("sed -n 1,80p specs/001-a/plan.md", "# Plan", True)]
    slip = [
        _sh("sed -n 80,160p specs/001-b/tasks.md", _CANT, False),
        _sh("sed -n 80,160p specs/001-a/tasks.md", "- [ ] T020", True),
    ]
    with Memory.open(tmp_path / "m.db") as mem:
        mem.record("plan the feature", first, accepted=True, meta={**meta, "turn_id": "t1"})
        mem.record("list the open tasks", slip, accepted=True, meta={**meta, "turn_id": "t2"})
        mem.learn(use_model=False)
        assert _located(mem) == []


def test_another_members_run_is_not_of_the_session(tmp_path: Path):
    """In a team library the session of a run from the inbox is one member's: another
    member's run that names the same session id is not an earlier turn of it."""
    from agentmem.storage.imports import earlier_in_session

    sid = "0a1b2c3d-0000-4000-8000-0000000000ee"
    step = [_sh("ls", "a", True)]
    with Memory.open(tmp_path / "m.db") as mem:
        mallory = mem.record("x", step, meta={"session_id": sid, "team_member": "mallory"})
        mine = mem.record("y", step, meta={"session_id": sid, "team_member": "ann"})
        later = mem.record("z", step, meta={"session_id": sid, "team_member": "ann"})
        other = mem.record("w", step, meta={"session_id": "another"})
        alone = mem.record("v", step)
        assert earlier_in_session(mem.db, later) == [mine]
        assert earlier_in_session(mem.db, mine) == []
        assert earlier_in_session(mem.db, other) == [] and earlier_in_session(mem.db, alone) == []
        assert mallory < mine
