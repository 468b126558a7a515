"""A path fact the run made itself teaches nothing (issue 29): "In this project notes.txt is
at docs/notes.txt" after the agent moved, removed or made that file, by any means, states
where the agent put it, not where the project keeps it (``shell_fixes.own_doing``).

The development half has no such session among its findings (its traps of the kind, a
``mv`` then ``rm`` of README.md, teach nothing for other reasons), so these cases are
synthetic, each beside the same run without the agent's own doing, which still teaches."""

from __future__ import annotations

import pytest

from agentmem.learning.corrections import find_corrections
from agentmem.records import Step, Trajectory

from .transcripts import codex_exec

NOT_FOUND = "Exit code 1\ncat: notes.txt: No such file or directory"


def _bash(command: str, output: str = "", ok: bool = True) -> Step:
    return Step(tool="Bash", params={"command": command}, output=output, success=ok)


def _run(*steps: Step) -> Trajectory:
    meta = {"project": "/w/app", "cwd": "/w/app"}
    return Trajectory(task="summarise the notes", steps=steps, meta=meta, accepted=True)


def _changes(*steps: Step) -> list[str]:
    return [str(c.finding.detail.get("change")) for c in find_corrections(_run(*steps))]


FAILED = _bash("cat notes.txt", NOT_FOUND, ok=False)
WORKED = _bash("cat docs/notes.txt", "buy milk")
_PATCH = "*** Begin Patch\n*** {} File: {}\n+buy milk\n*** End Patch"

#: The agent's own doing, before the failed call (or between it and the call that worked).
OWN = {
    "mv": [_bash("mv notes.txt docs/notes.txt")],
    "git mv": [_bash("git mv notes.txt docs/notes.txt")],
    "rm": [_bash("rm notes.txt")],
    "git rm": [_bash("git rm notes.txt")],
    "touch": [_bash("touch docs/notes.txt")],
    "cp": [_bash("cp /tmp/draft.txt docs/notes.txt")],
    "redirection": [_bash("echo 'buy milk' > docs/notes.txt")],
    "Write": [
        Step(tool="Write", params={"file_path": "/w/app/docs/notes.txt", "content": "buy milk"})
    ],
    "Edit": [
        Step(
            tool="Edit",
            params={"file_path": "/w/app/docs/notes.txt", "old_string": "", "new_string": "x"},
        )
    ],
    "MultiEdit": [
        Step(tool="MultiEdit", params={"file_path": "docs/notes.txt", "edits": []}, output="ok")
    ],
    "apply_patch add": [
        Step(tool="apply_patch", params={"input": _PATCH.format("Add", "docs/notes.txt")})
    ],
    "apply_patch move": [
        Step(
            tool="apply_patch",
            params={
                "input": "*** Begin Patch\n*** Update File: notes.md\n*** Move to: "
                "docs/notes.txt\n@@\n-a\n+a\n*** End Patch"
            },
        )
    ],
    "apply_patch in a command": [
        codex_exec(
            f"apply_patch <<'PATCH'\n{_PATCH.format('Add', 'docs/notes.txt')}\nPATCH", "Done", True
        )
    ],
}


def test_without_the_agents_own_doing_the_location_is_learned():
    assert _changes(FAILED, WORKED) == ["location"]


@pytest.mark.parametrize("how", sorted(OWN))
def test_a_file_the_run_moved_removed_or_made_is_no_fact_of_the_project(how: str):
    assert _changes(*OWN[how], FAILED, WORKED) == []


def test_a_file_made_between_the_failure_and_the_call_that_worked_is_the_runs_own():
    write = Step(tool="Write", params={"file_path": "/w/app/docs/notes.txt", "content": "x"})
    assert _changes(FAILED, write, WORKED) == []
    # a file of another name made in between changes nothing
    other = Step(tool="Write", params={"file_path": "/w/app/docs/todo.txt", "content": "x"})
    assert _changes(FAILED, other, WORKED) == ["location"]


#: What the run did that made no file the lesson claims: a copy or link whose SOURCE is
#: the file (it read it), a file of its name made in another folder.
NOT_OWN = {
    "cp of the source": _bash("cp docs/notes.txt /tmp/bak/"),
    "ln -s of the source": _bash("ln -s /w/app/docs/notes.txt /tmp/n"),
    "cp -t of the source": _bash("cp -t /tmp/bak docs/notes.txt"),
    "mkdir elsewhere": _bash("mkdir -p build/notes.txt"),
    "touch elsewhere": _bash("touch /tmp/notes.txt"),
    "tee elsewhere": _bash("echo x | tee out/notes.txt"),
}


@pytest.mark.parametrize("how", sorted(NOT_OWN))
def test_a_copys_source_or_a_namesake_elsewhere_is_not_the_runs_doing(how: str):
    # between the failure and the call that worked: a copy of the file *before* the failure
    # used its path already, and the failure was a slip (test_trap_guards.py)
    assert _changes(FAILED, NOT_OWN[how], WORKED) == ["location"]


def test_a_copys_destination_is_the_runs_doing_however_it_is_named():
    for made in (
        "cp -t docs /tmp/notes.txt",
        "cp --target-directory=docs /tmp/notes.txt",
        "cp /tmp/notes.txt docs/",
        "ln -s /tmp/draft.txt /w/app/docs/notes.txt",
        "echo x | tee docs/notes.txt",
    ):
        assert _changes(_bash(made), FAILED, WORKED) == [], made


def test_a_failed_write_made_nothing():
    write = Step(
        tool="Write",
        params={"file_path": "/w/app/docs/notes.txt", "content": "x"},
        output="<tool_use_error>File has not been read yet</tool_use_error>",
        success=False,
    )
    assert _changes(write, FAILED, WORKED) == ["location"]


def test_a_file_the_run_wrote_is_still_ignored_by_git():
    # the real spotter shape (synthetic here): the agent wrote the stylesheet, git add
    # refused it as ignored, git add -f of it alone worked: making a file does not make git
    # ignore it, so the lesson stands (the development half's key keeps it)
    css = "priv/static/assets/app.css"
    ignored = (
        "Exit code 1\nThe following paths are ignored by one of your .gitignore files:\n"
        f"{css}\nhint: Use -f if you really want to add them."
    )
    steps = [
        Step(tool="Write", params={"file_path": f"/w/app/{css}", "content": "a{}"}),
        _bash(f"git add lib/a.ex {css}", ignored, ok=False),
        _bash(f"git add -f {css}"),
    ]
    assert _changes(*steps) == ["forced"]
    # removed by the run before: its own doing
    assert _changes(_bash(f"git rm --cached {css}"), *steps[1:]) == []


# -- Codex's workdir: a path is read from the folder its call ran in ----------------------


def _sed(workdir: str, path: str, ok: bool) -> Step:
    said = "1. buy milk" if ok else f"sed: can't read {path}: No such file or directory"
    return codex_exec(f"sed -n 1,5p {path}", said, ok, workdir=workdir)


def test_a_path_written_from_the_top_in_a_deeper_workdir_is_no_location():
    # synthetic: the call ran in docs/ with the path written from the project's top; the
    # same file, read there by its own name, worked: the slip is the workdir, not where the
    # project keeps the file (since the seventeenth session of wave 4 the workdir's own
    # kind, workdir_path, states it: never a location)
    bad, good = _sed("/w/app/docs", "docs/notes.txt", False), _sed("/w/app/docs", "notes.txt", True)
    assert _changes(bad, good) == ["workdir_path"]
    # control: in the project's top, the same two calls say the file is there, not in docs/
    top_bad, top_good = _sed("/w/app", "docs/notes.txt", False), _sed("/w/app", "notes.txt", True)
    assert _changes(top_bad, top_good) == ["location"]


def test_an_absolute_and_a_relative_path_of_one_file_are_no_location():
    bad = _sed("/w/app", "/w/app/docs/notes.txt", False)
    assert _changes(bad, _sed("/w/app", "docs/notes.txt", True)) == []
    # control: another file of that name elsewhere is a location
    other = _sed("/w/app", "/w/app/notes.txt", False)
    assert _changes(other, _sed("/w/app", "docs/notes.txt", True)) == ["location"]


def test_the_development_halfs_location_in_one_workdir_stands():
    # real negative (boost-act, Codex 0.113): both calls in the project's workdir, the
    # template found under the feature folder: two files once resolved, the lesson stands,
    # as the folder the path starts in kept under another (.specify/ under the feature's)
    act = "/home/zak/work/hbc/boost/act"
    path = ".specify/templates/constitution-template.md"
    bad = _sed(act, path, False)
    good = _sed(act, f"feature/session-signature-fix/{path}", True)
    run = Trajectory(task="t", steps=(bad, good), meta={"project": act, "cwd": act}, accepted=True)
    assert [str(c.finding.detail.get("change")) for c in find_corrections(run)] == ["prefix"]
    # the same calls in a session of another folder: served there, the fact would be false
    assert _changes(bad, good) == []
