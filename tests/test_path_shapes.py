"""Three shapes of a correction that recur across a project's sessions: a path whose letter
case differs (``case``), a project kept in a subfolder of the session's folder (``prefix``)
and a missing test runner replaced by another (``runner``). Each from minimal synthetic
runs: a positive that teaches the right lesson, and the near misses that must teach
nothing."""

from __future__ import annotations

from agentmem.agents import learning_view
from agentmem.learning.merge import merge_findings
from agentmem.learning.shell_fixes import _exec, _sh, claims_of, find_shell_fixes
from agentmem.records import Step, Trajectory

NF = "No such file or directory"
CWD = "/w/app"


def _fixes(*steps: Step) -> list[tuple[str, str]]:
    run = Trajectory(task="do the job", steps=steps, meta={"cwd": CWD, "project": CWD})
    return [
        (str(x.finding.detail["change"]), x.finding.text)
        for x in find_shell_fixes(learning_view(run))
    ]


def _findings(*steps: Step):
    run = Trajectory(task="do the job", steps=steps, meta={"cwd": CWD, "project": CWD})
    return [x.finding for x in find_shell_fixes(learning_view(run))]


def _read(path: str, ok: bool = True) -> Step:
    out = "     1\tline" if ok else "<tool_use_error>File does not exist.</tool_use_error>"
    return Step(tool="Read", params={"file_path": path}, output=out, success=ok)


def _write(path: str) -> Step:
    return Step(tool="Write", params={"file_path": path, "content": "x"}, output="ok")


# --------------------------------------------------------------------------- case

_SED_BAD = _sh(
    'sed -n 1,200p "Use cases/UC-06.md"', f"sed: can't read Use cases/UC-06.md: {NF}", False
)
_SED_GOOD = _sh('sed -n 1,240p "Use Cases/UC-06.md"', "# UC-06")


def test_a_path_read_in_other_letter_case_teaches_the_right_spelling():
    (fix,) = _fixes(_SED_BAD, _sh("ls -la"), _sh('cat "Acceptance Tests/AT.md"', "# AT"), _SED_GOOD)
    assert fix[0] == "case"
    assert fix[1].startswith(
        "In this project the folder is 'Use Cases', not 'Use cases' (letter case matters): "
        "read Use Cases/UC-06.md;"
    )
    # a file name, and a client tool's read of an absolute path
    (fix,) = _fixes(
        _sh("cat docs/readme.md", f"cat: docs/readme.md: {NF}", False), _sh("cat docs/README.md")
    )
    assert "the file is 'README.md', not 'readme.md'" in fix[1]
    (fix,) = _fixes(_read(f"{CWD}/Use cases/UC-06.md", False), _read(f"{CWD}/Use Cases/UC-06.md"))
    assert fix == (
        "case",
        "In this project the folder is 'Use Cases', not 'Use cases' (letter case matters): read "
        "Use Cases/UC-06.md; Read Use cases/UC-06.md fails with 'File does not exist'.",
    )


def test_several_files_of_one_misspelt_folder_are_one_lesson_with_their_support():
    found = _findings(
        _SED_BAD,
        _SED_GOOD,
        _sh('cat "Use cases/UC-01.md"', f"cat: 'Use cases/UC-01.md': {NF}", False),
        _sh('cat "Use Cases/UC-01.md"', "# UC-01"),
    )
    assert [f.detail["change"] for f in found] == ["case", "case"]
    (one,) = merge_findings(found)
    assert one.text == (
        "In this project the folder is 'Use Cases', not 'Use cases' (letter case matters): read "
        "Use Cases/UC-06.md and Use Cases/UC-01.md."
    )
    assert one.support == sum(f.support for f in found)
    assert ("exists", "Use Cases/UC-01.md") in claims_of(one)


def test_a_case_difference_the_run_made_itself_teaches_nothing():
    made = [
        _write(f"{CWD}/Use Cases/UC-06.md"),
        _sh('mv "Use cases" "Use Cases"'),
        _sh('git mv "Use cases/UC-06.md" "Use Cases/UC-06.md"'),
        _sh('mkdir -p "Use Cases"'),
        _exec(
            "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: Use Cases/UC-06.md\n+x\n"
            "*** End Patch\nEOF"
        ),
    ]
    for step in made:
        assert _fixes(_SED_BAD, step, _SED_GOOD) == [], step.params
        assert _fixes(step, _SED_BAD, _SED_GOOD) == [], step.params


def test_a_path_that_differs_in_more_than_case_or_another_file_teaches_no_case():
    other = _sh('sed -n 1,240p "Use Cases/UC-07.md"', "# UC-07")
    assert _fixes(_SED_BAD, other) == []
    assert _fixes(_SED_BAD, _sh('sed -n 1,240p "Use-Cases/UC-06.md"', "# UC-06")) == []


def test_a_probe_answered_not_there_teaches_no_case():
    probe = _sh('ls "Use cases"', f"ls: cannot access 'Use cases': {NF}", False)
    assert _fixes(probe, _sh('ls "Use Cases"', "UC-06.md")) == []
    test_f = _sh('test -f "Use cases/UC-06.md"', "", False)
    assert _fixes(test_f, _SED_GOOD) == []


def test_a_case_retry_after_a_change_of_folder_teaches_nothing():
    assert _fixes(_SED_BAD, _sh("cd docs"), _SED_GOOD) == []


# --------------------------------------------------------------------------- prefix

_PAGE = "src/app/analytics/page.tsx"


def _cat(path: str, ok: bool = True) -> Step:
    if ok:
        return _sh(f"cat {path}", "export default function Page() {}")
    return _sh(f"cat {path}", f"cat: {path}: {NF}", False)


def test_a_project_kept_in_a_subfolder_teaches_the_folder_not_one_file():
    (fix,) = _fixes(_read(f"{CWD}/{_PAGE}", False), _read(f"{CWD}/rallycoach/{_PAGE}"))
    assert fix == (
        "prefix",
        "In this project src/ is under rallycoach/, not at the session's top folder: use "
        "rallycoach/src/app/analytics/page.tsx; Read src/app/analytics/page.tsx fails with "
        "'File does not exist'.",
    )
    # a script run by its path, found under the inner project
    script = ".specify/scripts/bash/check.sh"
    (fix,) = _fixes(
        _sh(f"bash {script} --json", f"bash: {script}: {NF}", False),
        _sh(f"bash Inner/{script} --json", '{"ok": true}'),
    )
    assert fix[0] == "prefix" and ".specify/ is under Inner/" in fix[1]
    # real (validation, wave 9): Codex ran it in the inner folder (its workdir); the lesson
    # names the path from the session's folder, not the operand relative to the workdir
    from .transcripts import codex_exec

    (fix,) = _fixes(
        codex_exec(f"bash {script}", f"bash: {script}: {NF}", False, workdir=CWD),
        codex_exec(f"bash {script}", '{"ok": true}', True, workdir=f"{CWD}/Inner"),
    )
    assert fix[0] == "prefix" and f"use Inner/{script};" in fix[1]
    # real (blind set 10, read after its first try): the session's folder is the inner one,
    # and the failed call ran in its parent (workdir): the session's folder has .specify/,
    # and "not at the session's top folder" served there would be false
    assert (
        _fixes(
            codex_exec(f"bash {script}", f"bash: {script}: {NF}", False, workdir="/w"),
            codex_exec(f"bash {script}", '{"ok": true}', True, workdir=CWD),
        )
        == []
    )


def test_a_file_name_listed_twice_no_longer_hides_the_missing_folder():
    # "page.tsx is at P" names one copy of page.tsx (the run lists several): the guard
    # against it (named_twice) dropped the pair; the folder is the fact
    listing = _sh("find . -name page.tsx", f"./rallycoach/src/app/page.tsx\n./rallycoach/{_PAGE}")
    (fix,) = _fixes(listing, _cat(_PAGE, False), _cat(f"rallycoach/{_PAGE}"))
    assert fix[0] == "prefix"


def test_several_files_missing_one_leading_folder_are_one_lesson():
    found = _findings(
        _read(f"{CWD}/{_PAGE}", False),
        _read(f"{CWD}/rallycoach/{_PAGE}"),
        _read(f"{CWD}/src/lib/db.ts", False),
        _read(f"{CWD}/rallycoach/src/lib/db.ts"),
    )
    (one,) = merge_findings(found)
    assert one.text == (
        "In this project src/ is under rallycoach/, not at the session's top folder: use "
        "rallycoach/src/app/analytics/page.tsx and rallycoach/src/lib/db.ts."
    )
    assert one.support == sum(f.support for f in found) and one.detail["merged"] == 2


def test_a_subfolder_the_run_made_teaches_nothing():
    made = [
        _sh("mkdir -p rallycoach/src/app"),
        _write(f"{CWD}/rallycoach/{_PAGE}"),
        _sh("git clone https://example.com/rallycoach.git rallycoach"),
        _sh("cp -r src rallycoach/"),
    ]
    for step in made:
        assert _fixes(_cat(_PAGE, False), step, _cat(f"rallycoach/{_PAGE}")) == [], step.params
        assert _fixes(step, _cat(_PAGE, False), _cat(f"rallycoach/{_PAGE}")) == [], step.params


def test_near_misses_of_a_subfolder_teach_nothing():
    # a success under another file name
    assert _fixes(_cat(_PAGE, False), _cat("rallycoach/src/app/analytics/layout.tsx")) == []
    # a path the agent had already used under the folder: a slip
    assert (
        _fixes(_cat(f"rallycoach/{_PAGE}"), _cat(_PAGE, False), _cat(f"rallycoach/{_PAGE}")) == []
    )
    # vendored or built copies
    for top in ("node_modules/pkg", "dist", ".venv/lib", "build"):
        assert _fixes(_cat(_PAGE, False), _cat(f"{top}/{_PAGE}")) == [], top
    # the shell moved to another folder on the way: which folder the path failed in is unknown
    assert _fixes(_sh("cd docs"), _cat(_PAGE, False), _cat(f"rallycoach/{_PAGE}")) == []
    # the run's own listing shows the path's first folder under another folder too (each
    # package of a monorepo has its src/): the one found is one copy, no fact of the project
    listing = _sh(
        "find . -name index.ts", "./packages/web/src/index.ts\n./packages/core/src/index.ts"
    )
    failed, found = _cat("src/index.ts", False), _cat("packages/core/src/index.ts")
    assert _fixes(listing, failed, found) == []
    assert _fixes(failed, found)[0][0] == "prefix"  # control: no listing says otherwise
    at_top = _sh("find . -name '*.ts'", "./src/main.ts\n./rallycoach/src/lib/db.ts")
    assert _fixes(at_top, _cat("src/lib/db.ts", False), _cat("rallycoach/src/lib/db.ts")) == []
    # a bare file name at the top: a location, as before, not a folder of the project
    (fix,) = _fixes(_cat("notes.txt", False), _cat("docs/notes.txt"))
    assert fix[0] == "location"


# --------------------------------------------------------------------------- runner

_NO_PYTEST = _sh("python3 -m pytest -q tests", "/usr/bin/python3: No module named pytest", False)
_UNITTEST = _sh("PYTHONPATH=src python3 -m unittest tests.test_alias", "Ran 4 tests\n\nOK")


def test_a_missing_test_runner_replaced_by_another_runner_teaches_that_runner():
    (found,) = _findings(_NO_PYTEST, _UNITTEST)
    assert ("not_on_path", "pytest") in claims_of(found)  # withheld once pytest is there
    (fix,) = _fixes(_NO_PYTEST, _UNITTEST)
    assert fix == (
        "runner",
        "In this project pytest is not installed ('/usr/bin/python3: No module named pytest'): "
        "python3 -m unittest ran the tests (PYTHONPATH=src python3 -m unittest tests.test_alias).",
    )
    # pytest not found at all; a first try that failed on the code is passed over
    bare = _sh("pytest tests/test_alias.py", "bash: pytest: command not found", False)
    broken = _sh("python3 -m unittest tests.test_alias", "ImportError: No module named app", False)
    (fix,) = _fixes(bare, broken, _UNITTEST)
    assert fix[0] == "runner" and "pytest is not on PATH" in fix[1]
    assert "PYTHONPATH=src" in fix[1]
    # review 20: a runner that prints "0 failed" on success (cargo, deno, pytest's summary)
    clean = _sh("python3 -m unittest tests.test_alias", "Ran 4 tests: 4 passed, 0 failed\nOK")
    assert [f[0] for f in _fixes(_NO_PYTEST, clean)] == ["runner"]


def test_a_module_run_with_dash_m_takes_the_modules_role():
    from agentmem.agents import programs
    from agentmem.agents.programs import Role
    from agentmem.learning.shell_fixes import _commands

    (c,) = _commands(_UNITTEST)
    assert c.program == "unittest" and programs.has(c.program, Role.TEST)


def test_near_misses_of_a_replaced_runner_teach_nothing():
    # an install between, or in the retry's own line
    for install in ("pip install pytest", "uv add --dev pytest", "python3 -m pip install pytest"):
        assert _fixes(_NO_PYTEST, _sh(install, "Successfully installed"), _UNITTEST) == []
        line = f"{install} && PYTHONPATH=src python3 -m unittest tests.test_alias"
        assert _fixes(_NO_PYTEST, _sh(line, "Ran 4 tests\n\nOK")) == [], install
    # a script of the project runs other tests than a runner would
    assert _fixes(_NO_PYTEST, _sh("python3 tests/run_all.py", "all good")) == []
    # a success that only asks the runner about itself
    assert _fixes(_NO_PYTEST, _sh("python3 -m unittest --help", "usage: ...")) == []
    assert _fixes(_NO_PYTEST, _sh("nose2 --version", "0.15")) == []
    # the other runner failed on the code: it is not shown to run the tests
    failing = _sh("python3 -m unittest tests.test_alias", "FAILED (failures=1)", False)
    assert _fixes(_NO_PYTEST, failing) == []
