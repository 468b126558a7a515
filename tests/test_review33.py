"""Review 33: the ``ansi`` kind (a .ps1 read as ANSI by Windows PowerShell 5.1, rewritten
in ASCII and run again) must not teach from a rerun that did not run the script, from
mojibake outside the record's line of the script, from text that only looks like
mojibake, nor from a run under PowerShell 7; its example character must be a clean one."""

from __future__ import annotations

from agentmem.agents import learning_view
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory

_CHECK = "\u00e2\u0153\u201c"  # the check mark's UTF-8 read as Windows-1252
_RECORD = (
    "Exit code 1\nAt X:\\03\\Odoo\\export_modules.ps1:143 char:22\r\n"
    "+     \"Write-Host '{shown} Module list updated' -ForegroundColor Green\",\r\n"
    "+                      ~~~~~~\r\n{message}\r\n"
    "    + CategoryInfo          : ParserError: (:) [], ParseException\r\n"
    "    + FullyQualifiedErrorId : UnexpectedToken\r\n"
)
_MESSAGE = "Unexpected token 'Module' in expression or statement."
_RUN = 'cd X:\\03\\Odoo; .\\export_modules.ps1 -DatabaseName "odoo"'
_PATH = "X:\\03\\Odoo\\export_modules.ps1"
_CWD = "X:\\03\\Odoo"


def _record(shown: str = _CHECK, message: str = _MESSAGE) -> str:
    return _RECORD.format(shown=shown, message=message)


def _pwsh(command: str, output: str, ok: bool) -> Step:
    return Step(tool="PowerShell", params={"command": command}, output=output, success=ok)


_FIXED = Step("Write", {"file_path": _PATH, "content": 'Write-Host "[OK] Module list"\n'}, "ok")
_RAN = _pwsh(_RUN, "[SUCCESS] Exported 12 modules", True)


def _found(*steps: Step) -> list[str]:
    run = learning_view(Trajectory(task="export", steps=steps, meta={"cwd": _CWD}))
    return [x.finding.text for x in find_shell_fixes(run) if x.finding.detail["change"] == "ansi"]


def test_the_plain_case_still_teaches() -> None:
    (text,) = _found(_pwsh(_RUN, _record(), False), _FIXED, _RAN)
    assert "its \u2713 read as " + _CHECK in text


def test_a_rerun_that_only_read_the_script_teaches_nothing() -> None:
    read = _pwsh(f"Get-Content {_PATH} | Select-Object -First 3", "Write-Host", True)
    assert _found(_pwsh(_RUN, _record(), False), _FIXED, read) == []


def test_a_rerun_of_another_script_teaches_nothing() -> None:
    failed = _pwsh(_RUN, _record(), False)
    other = _pwsh("cd X:\\03\\Odoo; .\\old_export_modules.ps1", "done", True)
    elsewhere = _pwsh("& Y:\\backup\\export_modules.ps1", "done", True)
    assert _found(failed, _FIXED, other) == []
    assert _found(failed, _FIXED, elsewhere) == []


def test_the_ways_to_run_a_script_count() -> None:
    failed = _pwsh(_RUN, _record(), False)
    for line in (
        "& .\\export_modules.ps1",
        "powershell -ExecutionPolicy Bypass -File X:\\03\\Odoo\\export_modules.ps1",
        "& 'X:\\03\\Odoo\\export_modules.ps1' -DatabaseName odoo",
        ". .\\export_modules.ps1",
    ):
        assert len(_found(failed, _FIXED, _pwsh(line, "done", True))) == 1, line


def test_mojibake_outside_the_scripts_line_teaches_nothing() -> None:
    # a localized message read wrongly, or another program's output: not the script's text
    message = (
        "Token inesperado 'Module' na express\u00c3\u00a3o ou instru\u00c3\u00a7\u00c3\u00a3o."
    )
    after = _record("OK") + "Caf\u00c3\u00a9\n"
    assert _found(_pwsh(_RUN, _record("OK", message), False), _FIXED, _RAN) == []
    assert _found(_pwsh(_RUN, after, False), _FIXED, _RAN) == []


def test_text_that_only_looks_like_mojibake_teaches_nothing() -> None:
    # Icelandic "það" closed by a curly quote, or by an ellipsis: no UTF-8 read as ANSI
    for shown in ("\u00f0\u201c", "\u00f0\u2026", "\u00e2\u20ac"):
        assert _found(_pwsh(_RUN, _record(shown), False), _FIXED, _RAN) == [], shown


def test_the_example_is_one_character_and_printable() -> None:
    (text,) = _found(_pwsh(_RUN, _record("\u00c3\u00a9\u00bb"), False), _FIXED, _RAN)
    assert "its \u00e9 read as \u00c3\u00a9)" in text
    for shown in ("\u00c2\u00a0", "\u00c3\u0081", "\u00c2\u0085"):
        (text,) = _found(_pwsh(_RUN, _record(shown), False), _FIXED, _RAN)
        assert text.isprintable() and " read as " not in text, repr(text)


def test_powershell_7_is_no_windows_powershell() -> None:
    failed = _pwsh("pwsh -File .\\export_modules.ps1", _record(), False)
    ran = _pwsh("pwsh -File .\\export_modules.ps1", "done", True)
    assert _found(failed, _FIXED, ran) == []


def test_a_multiedit_in_ascii_rewrites_the_script() -> None:
    edits = [{"old_string": "'\u2713 Module", "new_string": "'[OK] Module"}]
    fixed = Step("MultiEdit", {"file_path": _PATH, "edits": edits}, "ok")
    assert len(_found(_pwsh(_RUN, _record(), False), fixed, _RAN)) == 1
    still = [{"old_string": "'\u2713 Module", "new_string": "'\u2714 Module"}]
    again = Step("MultiEdit", {"file_path": _PATH, "edits": still}, "ok")
    assert _found(_pwsh(_RUN, _record(), False), again, _FIXED, _RAN) == []
    odd = Step("MultiEdit", {"file_path": _PATH, "edits": [1, "x", {"new_string": 2}]}, "ok")
    assert _found(_pwsh(_RUN, _record(), False), odd, _RAN) == []


def test_a_quoted_path_with_spaces_runs_the_script() -> None:
    at = "At X:\\My Scripts\\export.ps1:3 char:1\r\n+ Write-Host '" + _CHECK + " ok'\r\n"
    body = at + "    + CategoryInfo          : ParserError: (:) [], ParseException\r\n"
    path = "X:\\My Scripts\\export.ps1"
    failed = _pwsh(f'& "{path}"', body, False)
    fixed = Step("Write", {"file_path": path, "content": "Write-Host 'ok'\n"}, "ok")
    assert len(_found(failed, fixed, _pwsh(f'& "{path}"', "ok", True))) == 1
    assert _found(failed, fixed, _pwsh('& "X:\\Old Scripts\\export.ps1"', "ok", True)) == []
