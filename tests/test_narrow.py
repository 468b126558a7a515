"""The ``narrow`` kind (wave 4, fifteenth session): Claude Code's Glob gives up after 20
seconds, and over a home folder, or a project with huge data folders, a ``**`` pattern
never finishes. Paraphrased from four real sessions of the validation half that agentmem
had missed (read after the miss, so not blind): mkid095 (a Glob in ``/home/ken``, then
``find api-gateway/src -name '*backup*'``), 13562964800 and claude-skills (a Glob of
``C:\\Users\\Administrator``, then ``find ~/video-download*`` or ``ls ~/Desktop/*calc*``),
jkim0731 (a Glob of the capsule, then ``ls /root/capsule/code/dev_code``).

The negatives are the same corpus's traps: the same folder searched again by another
program (13562964800, b5), a narrower search that found nothing the pattern names
(kenwei2nd: ``settings.json`` of VS Code, not ``.claude/settings.json``), nothing found
at all (harinath)."""

from __future__ import annotations

from agentmem.agents import learning_view
from agentmem.agents.narrowed import norm_folder, resolved, significant_parts, strictly_in
from agentmem.agents.outcomes import narrowed_searches
from agentmem.learning.generality import rule_for
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory


def inside(word: str, root: str, cwd: str) -> bool:
    """Whether ``word``, as a call wrote it in ``cwd``, lies strictly inside ``root``."""
    p = resolved(word, root, cwd)
    return p is not None and strictly_in(p, root)


_TIMEOUT = (
    "Ripgrep search timed out after 20 seconds. The search may have matched files but did "
    "not complete in time. Try searching a more specific path or pattern."
)


def _glob(pattern: str, path: str | None = None, output: str = _TIMEOUT, ok: bool = False) -> Step:
    params = {"pattern": pattern, **({"path": path} if path else {})}
    return Step(tool="Glob", params=params, output=output, success=ok)


def _sh(command: str, output: str = "", ok: bool = True) -> Step:
    return Step(tool="Bash", params={"command": command}, output=output, success=ok)


def _run(*steps: Step, cwd: str = "/home/ken") -> Trajectory:
    return Trajectory(task="find the backup code", steps=steps, meta={"cwd": cwd})


def _found(*steps: Step, cwd: str = "/home/ken") -> list[str]:
    run = learning_view(_run(*steps, cwd=cwd))
    return [x.finding.text for x in find_shell_fixes(run) if x.finding.detail["change"] == "narrow"]


def test_a_glob_of_the_home_folder_then_find_inside_a_package() -> None:
    (text,) = _found(
        _glob("**/backup*.ts"),
        _sh(
            'find api-gateway/src -name "*backup*" -type f 2>/dev/null',
            "api-gateway/src/lib/backups/backups.service.ts\n",
        ),
    )
    assert text.startswith("A Glob over the whole home folder (/home/ken) times out (")
    assert "find api-gateway/src -name *backup* -type f found it" in text


def test_a_windows_home_folder_searched_under_tilde() -> None:
    (text,) = _found(
        _glob("**/video-download*/**/*.{js,jsx,ts,tsx,py}", "C:\\Users\\Administrator"),
        _sh(
            "find ~/video-download* -maxdepth 2 -type d 2>/dev/null | head -20",
            "/c/Users/Administrator/video-download-service\n"
            "/c/Users/Administrator/video-download-service/data\n",
        ),
        cwd="C:\\Users\\Administrator",
    )
    assert "(C:\\Users\\Administrator)" in text


def test_a_project_folder_is_the_projects_lesson() -> None:
    run = learning_view(
        _run(
            _glob("**/benchmark_data_loader.py"),
            _sh("ls /root/capsule/code/dev_code/ | grep -i bench", "benchmark_data_loader.py\n"),
            cwd="/root/capsule",
        )
    )
    (fix,) = [x for x in find_shell_fixes(run) if x.finding.detail["change"] == "narrow"]
    assert fix.finding.detail["scope"] == "project"
    assert fix.finding.text.startswith("A Glob over the whole of /root/capsule times out")
    assert not rule_for(fix.finding, fix.finding.text).standing


def test_a_narrower_glob_counts() -> None:
    assert _found(
        _glob("**/UserDetail*.tsx"),
        _glob(
            "**/UserDetail*.tsx",
            "/home/ken/developer-portal",
            "/home/ken/developer-portal/src/features/admin/users/UserDetail.tsx",
            ok=True,
        ),
    )


def test_the_same_folder_searched_again_teaches_nothing() -> None:
    # the find over the whole home folder worked: nothing was narrowed
    assert not _found(
        _glob("**/*report*/", "C:\\Users\\Administrator"),
        _sh(
            'find "C:\\Users\\Administrator" -type d -iname "*report*" 2>/dev/null',
            "C:\\Users\\Administrator/Desktop/report-2024\n",
        ),
        cwd="C:\\Users\\Administrator",
    )


def test_a_narrower_search_that_lists_other_files_teaches_nothing() -> None:
    # VS Code's settings.json is not the .claude/settings*.json the pattern names
    assert not _found(
        _glob("**/.claude/settings*.json", "C:\\Users\\kenwe"),
        _glob(
            "**/*.json",
            "C:\\Users\\kenwe\\AppData\\Roaming\\Code\\User",
            "C:\\Users\\kenwe\\AppData\\Roaming\\Code\\User\\settings.json",
            ok=True,
        ),
        cwd="C:\\Users\\kenwe",
    )


def test_a_narrower_search_that_found_nothing_teaches_nothing() -> None:
    assert not _found(
        _glob("**/lancedb/**", "/home/ken"),
        _sh("find /home/ken/projects -name lancedb", ""),
    )


def test_a_pattern_that_names_nothing_teaches_nothing() -> None:
    assert not _found(
        _glob("**/*.py"),
        _sh("find api-gateway/src -name '*.py'", "api-gateway/src/a.py\n"),
    )


def test_a_glob_that_failed_otherwise_is_not_read() -> None:
    assert not _found(
        _glob("**/backup*.ts", output="Path does not exist: /home/ken/x"),
        _sh("find api-gateway/src -name '*backup*'", "api-gateway/src/backup.ts\n"),
    )


def test_a_time_out_nobody_narrowed_stays_out_of_the_view() -> None:
    run = learning_view(_run(_glob("**/backup*.ts"), _sh("git status", "clean")))
    assert [s.tool for s in run.steps] == ["Bash"]
    kept = learning_view(
        _run(
            _glob("**/backup*.ts"),
            _sh("find api-gateway -name 'backup*.ts'", "api-gateway/backup.ts"),
        )
    )
    assert [(s.tool, s.success) for s in kept.steps] == [("Glob", False), ("Bash", True)]


def test_the_pieces() -> None:
    assert norm_folder("/c/Users/Me/") == "c:/users/me"
    assert norm_folder("C:\\Users\\Me") == "c:/users/me"
    assert inside("~/Desktop", "c:/users/me", "")
    assert not inside("~/Desktop", "/root/capsule", "")  # ~ is not that folder
    assert inside("code/dev", "/root/capsule", "/root/capsule")
    assert not inside(".", "/root/capsule", "/root/capsule")
    assert not inside("../other", "/root/capsule", "/root/capsule")
    assert significant_parts("**/developer-portal/**/UserDetail*.tsx") == [
        "developer-portal",
        "UserDetail*.tsx",
    ]
    assert significant_parts("**/*.{js,jsx,ts}") == []
    assert narrowed_searches(
        (_glob("**/backup*.ts"), _sh("find src -name 'backup*'", "src/backup.ts")), "/w"
    ) == {0: 1}


# Review 31: the narrower search must have searched inside, and found it there


def test_the_same_folder_searched_again_by_find_with_options_teaches_nothing() -> None:
    # find's expression words (-not -path X, -type f) name no folder it searched
    for line in (
        "find . -name 'backup*.ts' -not -path './node_modules/*'",
        "find . -type f -name 'backup*.ts'",
        "rg -l backup .",
    ):
        assert not _found(_glob("**/backup*.ts"), _sh(line, "./api/src/backup.ts\n")), line


def test_a_filter_or_another_command_naming_a_folder_teaches_nothing() -> None:
    # the whole home folder searched again, its output filtered; a file read, then /
    assert not _found(
        _glob("**/backup*.ts"),
        _sh(
            "find /home/ken -name 'backup*.ts' | grep api-gateway/src",
            "/home/ken/api-gateway/src/backup.ts\n",
        ),
    )
    assert not _found(
        _glob("**/backup*.ts"),
        _sh("cat api/notes.md; find / -name 'backup*.ts' 2>/dev/null", "notes\n/srv/backup.ts\n"),
    )
    assert not _found(
        _glob("**/backup*.ts"),
        _sh("find /opt /home/ken/api -name 'backup*.ts'", "/opt/x/backup.ts\n"),
    )


def test_a_folder_left_by_cd_teaches_nothing() -> None:
    assert not _found(
        _glob("**/backup*.ts"), _sh("cd /tmp && find src -name 'backup*.ts'", "src/backup.ts\n")
    )


def test_a_folder_entered_by_cd_counts() -> None:
    assert _found(
        _glob("**/backup*.ts"),
        _sh("cd api-gateway && find . -name 'backup*.ts'", "./src/backup.ts\n"),
    )


def test_a_content_search_names_a_file_not_by_its_text() -> None:
    # grep's hit in app.ts is no file named *backup*
    assert not _found(
        _glob("**/*backup*"), _sh("grep -rn backup src/", "src/app.ts:12:  // TODO backup\n")
    )


def test_a_windows_parent_folder_is_not_inside() -> None:
    assert not inside("..\\other", "c:/users/me/proj", "c:/users/me/proj")
    assert not _found(
        _glob("**/backup*.ts", "C:\\Users\\me\\proj"),
        _sh("find ..\\proj2 -name 'backup*'", "../proj2/backup.ts\n"),
        cwd="C:\\Users\\me\\proj",
    )


def test_odd_patterns_do_not_crash() -> None:
    for pattern in ("**/[]]abc*", "**/[z-a]abc*", "**/abc[", "**/{abc", "**/abc[!x]"):
        assert not _found(_glob(pattern), _sh("ls src", "src/zzz\n")), pattern
    odd = {"pattern": "**/backup*", "path": ["a"]}
    assert not _found(
        Step(tool="Glob", params=odd, output=_TIMEOUT, success=False),
        _sh("ls src", "src/backup\n"),
    )


def test_the_lesson_names_the_command_that_searched() -> None:
    (text,) = _found(
        _glob("**/backup*.ts"), _sh("cat api/notes.md; ls api/src", "notes\nbackup.ts\n")
    )
    assert "(ls api/src found it)" in text
    (text,) = _found(
        _glob("**/backup*.ts"),
        _sh("cd api-gateway && find . -name 'backup*.ts'", "./src/backup.ts\n"),
    )
    assert "(cd api-gateway && find . -name backup*.ts found it)" in text
