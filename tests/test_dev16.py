"""The sixteenth session's kinds and widenings (wave 4), each paraphrased from a real
session of the validation half that agentmem had missed (read after the miss, so not
blind), with the negatives of the same sessions' shapes:

* ``script``: ``pnpm run typecheck`` failed "Missing script: typecheck" in a monorepo's
  root, and ``cd dashboard && pnpm run typecheck`` ran it (its output echoes the script);
* ``nostart``: PowerShell found the Codex app's own ``rg.exe`` and could not start it
  ("Program 'rg.exe' failed to run ... Access is denied"), and ``git ls-files`` listed the
  files instead;
* ``separator``, widened: after PowerShell 5.1 refused ``rg --files || ls -la``, a cmdlet
  that does one of the joined commands' job (``Get-ChildItem -Force``) worked;
* ``heredoc``, widened: ``python - <<'PY'`` refused, then a here-string piped into python
  (``@'...'@ | python -``) or the text saved to a file and run.
"""

from __future__ import annotations

from agentmem.agents import learning_view
from agentmem.agents.outcomes import missing_script, not_started, outcome
from agentmem.agents.programs import command_jobs
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory

_PNPM_NO_SCRIPT = (
    "Exit code 1\n\u2009ERR_PNPM_NO_SCRIPT\u2009 Missing script: typecheck\n\n"
    'Command "typecheck" not found.'
)
_NPM_NO_SCRIPT = (
    'Exit code 1\nnpm error Missing script: "lint"\nnpm error\nnpm error Did you mean this?\n'
    "npm error   npm link # Symlink a package folder\n"
)
_RAN = "> nextmavens-dashboard@1.0.0 typecheck /home/ken/app/dashboard\n> tsc --noEmit\n"


def _sh(command: str, output: str = "", ok: bool = True) -> Step:
    return Step(tool="Bash", params={"command": command}, output=output, success=ok)


def _codex(command: str, output: str = "", ok: bool = True, workdir: str = "") -> Step:
    params: dict[str, object] = {"command": command}
    if workdir:
        params["workdir"] = workdir
    body = f"Process exited with code {0 if ok else 1}\nOutput:\n{output}"
    return Step(tool="shell_command", params=params, output=body, success=ok)


def _ps(script: str, output: str = "", ok: bool = True) -> Step:
    argv = ["powershell.exe", "-NoProfile", "-Command", script]
    body = f"Process exited with code {0 if ok else 1}\nOutput:\n{output}"
    return Step(tool="shell", params={"command": argv}, output=body, success=ok)


def _found(kind: str, *steps: Step, cwd: str = "/home/ken/app") -> list[str]:
    run = learning_view(Trajectory(task="check the types", steps=steps, meta={"cwd": cwd}))
    return [x.finding.text for x in find_shell_fixes(run) if x.finding.detail["change"] == kind]


# -- script ----------------------------------------------------------------------------


def test_missing_script_is_the_calls_failure_not_the_codes() -> None:
    """A typecheck that never ran is no failing check: the learning view keeps it failed."""
    step = _sh("pnpm run typecheck 2>&1", _PNPM_NO_SCRIPT, False)
    assert missing_script(step.output) == "typecheck"
    assert missing_script('npm ERR! Missing script: "lint"') == "lint"
    assert missing_script('error Command "build" not found.') == "build"
    assert missing_script("src/a.ts(3,1): error TS2304: Cannot find name 'x'.") is None
    assert not learning_view(Trajectory(task="t", steps=(step,))).steps[0].success
    assert outcome(step).failure.name == "MISUSE"


def test_script_of_a_package_ran_there() -> None:
    (text,) = _found(
        "script",
        _sh("pnpm run typecheck 2>&1", _PNPM_NO_SCRIPT, False),
        Step("Read", {"file_path": "/home/ken/app/package.json"}, '{"scripts": {}}', True),
        _sh("cd /home/ken/app/dashboard && pnpm run typecheck 2>&1 || true", _RAN),
    )
    assert text == (
        "In this project the typecheck script is in dashboard/, not in the session's folder "
        "('Missing script: typecheck'): run it there (cd dashboard && pnpm run typecheck)."
    )


def test_script_with_the_package_managers_own_folder_option() -> None:
    (text,) = _found(
        "script",
        _sh("npm run lint", _NPM_NO_SCRIPT, False),
        _sh("npm --prefix web run lint", "> web@0.1.0 lint\n> eslint .\n"),
    )
    assert "the lint script is in web/" in text


def test_script_listing_another_script_or_the_same_folder_teach_nothing() -> None:
    failed = _sh("npm run lint", _NPM_NO_SCRIPT, False)
    listed = _sh("npm run", "Lifecycle scripts included in app@0.1.0:\n  test\n    vitest run\n")
    other = _sh("cd web && npm run build", "> web@0.1.0 build\n> vite build\n")
    same = _sh("cd . && npm run lint", "> app@0.1.0 lint\n> eslint .\n")
    again = _sh("cd web && npm run lint", _NPM_NO_SCRIPT, False)
    assert _found("script", failed, listed) == []
    assert _found("script", failed, other) == []
    assert _found("script", failed, same) == []
    assert _found("script", failed, again) == []


def test_script_whose_name_is_not_the_errors_teaches_nothing() -> None:
    """``pnpm typecheck`` and an error about another script (a script that runs another
    one, missing): the error is not about the command's own script."""
    inner = 'Exit code 1\nnpm error Missing script: "build:widget"\n'
    assert (
        _found(
            "script",
            _sh("npm run build", inner, False),
            _sh("cd web && npm run build", "> web@0.1.0 build\n> vite build\n"),
        )
        == []
    )


def test_script_not_shown_to_run_teaches_nothing() -> None:
    """``cd web && npm run lint || true`` worked, but nothing shows the script ran."""
    assert (
        _found(
            "script",
            _sh("npm run lint", _NPM_NO_SCRIPT, False),
            _sh("cd web && npm run lint || true", ""),
        )
        == []
    )


# -- nostart -------------------------------------------------------------------------

_RG_DENIED_PS7 = (
    'ResourceUnavailable: \r\nLine |\r\n   2 |  rg --files -g "package.json"\r\n'
    "     |  ~~~~~~~~~~~~~~~~~~~~~~~~~~~~\r\n     | Program 'rg.exe' failed to run: An error "
    "occurred trying to start process 'C:\\Program Files\\WindowsApps\\OpenAI.Codex_26.305"
    "\\app\\resources\\rg.exe' with working directory 'C:\\Users\\akhil'. Access is denied."
)
_RG_DENIED_FR = (
    "Le programme \u00ab\u00a0rg.exe\u00a0\u00bb n\u2019a pas pu s\u2019ex\u00e9cuter\u00a0: "
    "Acc\u00e8s refus\u00e9Au caract\u00e8re Ligne:2 : 1\r\n+ rg --files App Core\r\n"
    "    + CategoryInfo          : ResourceUnavailable: (:) [], ApplicationFailedException\r\n"
    "    + FullyQualifiedErrorId : NativeCommandFailed\r\n"
)


def test_a_program_that_could_not_start_is_no_answer() -> None:
    """rg's exit 1 answers "no match"; PowerShell's 1 for an rg it could not start does not."""
    step = _codex('rg --files -g "package.json"', _RG_DENIED_PS7, False, "C:\\Users\\akhil")
    assert not_started(step.output) and not_started(_RG_DENIED_FR)
    assert not not_started("No files were searched, which means ripgrep probably applied a filter")
    assert not learning_view(Trajectory(task="t", steps=(step,))).steps[0].success


def test_rg_could_not_start_and_git_ls_files_listed() -> None:
    (text,) = _found(
        "nostart",
        _codex('rg --files -g "package.json"', _RG_DENIED_PS7, False, "C:\\Users\\akhil"),
        _codex("git ls-files", "backend/app/main.py\n", True, "C:\\Users\\akhil"),
        cwd="C:\\Users\\akhil",
    )
    assert text == (
        "On this machine rg cannot start ('Program rg.exe failed to run: Access is denied'): "
        "git ls-files did the job instead."
    )


def test_nostart_needs_the_same_job_on_the_same_place() -> None:
    failed = _codex("rg --files App Core", _RG_DENIED_FR, False)
    elsewhere = _codex("Get-ChildItem -LiteralPath Win\\Native -Force", "Installer\r\n")
    other_job = _codex("Get-Content App\\main.swift -TotalCount 300", "import SwiftUI\r\n")
    assert _found("nostart", failed, elsewhere, cwd="C:\\w") == []
    assert _found("nostart", failed, other_job, cwd="C:\\w") == []
    denied = _RG_DENIED_FR.replace("--files App Core", "-n TODO src")
    searched = _codex("rg -n TODO src", denied, False)
    listed = _codex("Get-ChildItem src", "a.py\r\n")
    assert _found("nostart", searched, listed, cwd="C:\\w") == []  # a search is no listing
    assert command_jobs("rg", None, ["--files"]) == command_jobs("git", "ls-files") == {"list"}


# -- separator, widened ------------------------------------------------------------------

_OR = (
    "At line:1 char:12\r\n+ rg --files || ls -la\r\n+            ~~\r\n"
    "The token '||' is not a valid statement separator in this version.\r\n"
    "    + CategoryInfo          : ParserError: (:) [], ParentContainsErrorRecordException\r\n"
    "    + FullyQualifiedErrorId : InvalidEndOfLine\r\n"
)


def _bash_lc(line: str, output: str, ok: bool) -> Step:
    body = f"Process exited with code {0 if ok else 1}\nOutput:\n{output}"
    return Step(tool="shell", params={"command": ["bash", "-lc", line]}, output=body, success=ok)


def test_separator_then_a_cmdlet_doing_one_commands_job() -> None:
    (text,) = _found(
        "separator",
        _bash_lc("rg --files || ls -la", _OR, False),
        _ps("Get-ChildItem -Force", "Mode  LastWriteTime  Name\r\nd----  .git\r\n"),
    )
    assert text == (
        "Here the shell is Windows PowerShell 5.1, with no && or || ('The token || is not a "
        "valid statement separator'): run each command in a call of its own."
    )


def test_separator_then_another_job_or_the_separator_again_teaches_nothing() -> None:
    failed = _bash_lc("rg --files || ls -la", _OR, False)
    read = _ps("Get-Content -Path cli.py -TotalCount 250", "import os\r\n")
    again = _bash_lc("rg --files && ls", _OR, False)
    listed = _ps("Get-ChildItem -Force", "d---- .git\r\n")
    assert _found("separator", failed, read) == []
    run = learning_view(Trajectory(task="t", steps=(failed, again, listed)))
    # the first failure's search stops at the separator again; the second's finds the cmdlet
    assert [x.failed for x in find_shell_fixes(run)] == [1]


# -- heredoc, widened ----------------------------------------------------------------

_HEREDOC = (
    "At line:2 char:11\r\n+ python - <<'PY'\r\n+           ~\r\n"
    "Missing file specification after redirection operator.\r\n"
    "    + CategoryInfo          : ParserError: (:) [], ParentContainsErrorRecordException\r\n"
    "    + FullyQualifiedErrorId : MissingFileSpecification\r\n"
)
_SCRIPT = "from pathlib import Path\nprint(Path('docs/config.ts').read_text()[:80])\n"


def test_heredoc_then_a_here_string_piped_in() -> None:
    (text,) = _found(
        "heredoc",
        _codex(f"python - <<'PY'\n{_SCRIPT}PY", _HEREDOC, False),
        _codex(f"@'\n{_SCRIPT}'@ | python -", "import { defineConfig } from 'vitepress'\r\n"),
    )
    assert text.endswith("pipe the text in from a here-string (@'...'@ | python ...).")


def test_heredoc_then_the_text_saved_to_a_file_and_run() -> None:
    (text,) = _found(
        "heredoc",
        _ps(f"python - << 'PY'\n{_SCRIPT}PY", _HEREDOC, False),
        Step("shell", {"command": ["apply_patch", "*** Add File: x.py"]}, "Success.", True),
        _ps("python x.py", "import { defineConfig }\r\n"),
    )
    assert text.endswith("save the text as a script file and run it (python x.py).")


def test_heredoc_then_a_script_that_broke_teaches_nothing() -> None:
    """``python -c '...'`` whose quotes PowerShell dropped: a SyntaxError, which the view
    counts as the code's (done); it is no working retry."""
    broke = "  File \"<string>\", line 1\r\n    print(\r\nSyntaxError: '(' was never closed\r\n"
    assert (
        _found(
            "heredoc",
            _ps(f"python - << 'PY'\n{_SCRIPT}PY", _HEREDOC, False),
            _ps("python -c 'print(\"OK\")'", broke, False),
        )
        == []
    )


# -- ansi ----------------------------------------------------------------------------

_ANSI = (
    "Exit code 1\nAt X:\\03\\Odoo\\export_modules.ps1:143 char:22\r\n"
    "+     \"Write-Host '\u00e2\u0153\u201c Module list updated' -ForegroundColor Green\",\r\n"
    "+                      ~~~~~~\r\nUnexpected token 'Module' in expression or statement.\r\n"
    "    + CategoryInfo          : ParserError: (:) [], ParseException\r\n"
    "    + FullyQualifiedErrorId : UnexpectedToken\r\n"
)
_RUN = 'cd X:\\03\\Odoo; .\\export_modules.ps1 -DatabaseName "odoo"'
_PATH = "X:\\03\\Odoo\\export_modules.ps1"


def _pwsh(command: str, output: str, ok: bool) -> Step:
    return Step(tool="PowerShell", params={"command": command}, output=output, success=ok)


def test_ansi_script_rewritten_in_ascii_then_ran() -> None:
    (text,) = _found(
        "ansi",
        _pwsh(_RUN, _ANSI, False),
        Step("Write", {"file_path": _PATH, "content": 'Write-Host "[OK] Module list"\n'}, "ok"),
        _pwsh(_RUN, "[SUCCESS] Exported 12 modules", True),
        cwd="X:\\03\\Odoo",
    )
    assert text == (
        "Windows PowerShell 5.1 here reads a .ps1 without a BOM as ANSI (its \u2713 read as "
        "\u00e2\u0153\u201c), so non-ASCII text breaks parsing: keep .ps1 files ASCII "
        "(export_modules.ps1 then ran)."
    )


def test_ansi_needs_ascii_text_a_rerun_that_parses_and_the_read_as_ansi_record() -> None:
    failed = _pwsh(_RUN, _ANSI, False)
    ok = _pwsh(_RUN, "[SUCCESS] Exported 12 modules", True)
    still = Step("Write", {"file_path": _PATH, "content": "Write-Host '\u2713 done'\n"}, "ok")
    other = Step("Edit", {"file_path": _PATH, "old_string": "a", "new_string": "b"}, "ok")
    fixed = Step("Edit", {"file_path": _PATH, "old_string": "\u2713", "new_string": "[OK]"}, "ok")
    broken = _pwsh(_RUN, _ANSI.replace("143", "150"), False)
    plain = _ANSI.replace("\u00e2\u0153\u201c", "OK")  # a parse error of the code's own
    assert _found("ansi", failed, still, ok, cwd="X:\\03\\Odoo") == []
    assert _found("ansi", failed, other, ok, cwd="X:\\03\\Odoo") == []
    assert _found("ansi", failed, fixed, broken, cwd="X:\\03\\Odoo") == []
    assert _found("ansi", _pwsh(_RUN, plain, False), fixed, ok, cwd="X:\\03\\Odoo") == []
    assert len(_found("ansi", failed, fixed, ok, cwd="X:\\03\\Odoo")) == 1


# -- ps7 -----------------------------------------------------------------------------

_COALESCE = (
    "Exit code 1\nAt line:6 char:34\r\n"
    "+ Write-Host \"wt: $($wtPath.Source ?? $wtPath.FullName ?? 'NOT FOUND')\"\r\n"
    "+                                  ~~\r\nUnexpected token '??' in expression or statement.\r\n"
    "    + CategoryInfo          : ParserError: (:) [], ParentContainsErrorRecordException\r\n"
    "    + FullyQualifiedErrorId : UnexpectedToken\r\n"
)
_WT = (
    "$wtPath = Get-Command wt -ErrorAction SilentlyContinue\n"
    'if (-not $wtPath) { $wtPath = Get-Item "$env:LOCALAPPDATA\\Microsoft\\WindowsApps\\wt.exe" }\n'
)
_WT_BAD = _WT + "Write-Host \"wt: $($wtPath.Source ?? $wtPath.FullName ?? 'NOT FOUND')\""
_WT_GOOD = (
    _WT + 'if ($wtPath) { Write-Host "wt found: $($wtPath.Source)" } else { Write-Host "none" }'
)


def test_ps7_operator_then_the_same_script_with_if_else() -> None:
    (text,) = _found(
        "ps7",
        _pwsh(_WT_BAD, _COALESCE, False),
        _pwsh(_WT_GOOD, "wt found: C:\\Users\\e\\wt.exe\nPSVersion: 5.1.26100", True),
    )
    assert text == (
        "Here PowerShell is Windows PowerShell 5.1, without PowerShell 7's ?? operator "
        "('Unexpected token ??'): write the fallback with if (...) { ... } else { ... }."
    )


def test_ps7_another_script_the_operator_again_or_a_failing_retry_teach_nothing() -> None:
    failed = _pwsh(_WT_BAD, _COALESCE, False)
    other = _pwsh("Get-Process; if ($a) { 1 } else { 2 }", "1", True)
    again = _pwsh(_WT_BAD.replace("wt:", "wt is"), "wt is C:\\wt.exe", True)
    no_else = _pwsh(_WT + 'Write-Host "wt: $($wtPath.Source)"', "wt: C:\\wt.exe", True)
    broke = _pwsh(_WT_GOOD, "Traceback (most recent call last):\nValueError: x", True)
    for later in (other, again, no_else, broke):
        assert _found("ps7", failed, later) == []


def test_a_quote_stripped_to_a_lone_symbol_is_no_quote() -> None:
    """The fuzz test's find (``test_fuzz``): ``'.:¡'`` stripped of its punctuation left
    ``'¡'``, which the lesson check refuses as tool output."""
    from agentmem import sanitize
    from agentmem.learning.findings import quote_error

    assert quote_error(".:¡", 1) == ""
    q = quote_error("Le programme « rg.exe » n’a pas pu s’exécuter : Accès refusé", 9)
    assert q == "" or sanitize.lesson_problem(f"If rg fails with '{q}', stop.") is None
