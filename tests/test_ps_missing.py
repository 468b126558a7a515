"""The ``powershell`` kind (wave 4, fifteenth session): Codex on Windows runs its lines in
PowerShell, even a ``bash -lc`` line, and PowerShell has no ``sed``. Paraphrased from
three real sessions of the validation half that agentmem had missed (read after the
miss, so not blind): ``sed -n '1,200p' FILE`` failed with PowerShell's
CommandNotFoundException (in English, and in German), and the next call read the same
file with ``Get-Content -Path FILE -TotalCount 200``.

The negatives are the shapes of the same sessions' traps: a pattern whose quotes
PowerShell lost (its second half run as a command), the user's own script name run bare,
a cmdlet that read another file."""

from __future__ import annotations

from agentmem.agents import learning_view
from agentmem.learning.generality import rule_for
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory

_EN = (
    "sed : The term 'sed' is not recognized as the name of a cmdlet, function, script file, "
    "or operable program. Check the s\r\npelling of the name, or if a path was included, "
    "verify that the path is correct and try again.\r\nAt line:1 char:1\r\n"
    "+ sed -n '1,200p' cli.py\r\n+ ~~~\r\n"
    "    + CategoryInfo          : ObjectNotFound: (sed:String) [], CommandNotFoundException\r\n"
    "    + FullyQualifiedErrorId : CommandNotFoundException\r\n"
)
_DE = (
    'sed : Die Benennung "sed" wurde nicht als Name eines Cmdlet, einer Funktion, einer '
    "Skriptdatei oder eines ausf\ufffdhrbaren \r\nProgramms erkannt.\r\nIn Zeile:1 Zeichen:1\r\n"
    "+ sed -n \"'1,200p'\" AGENTS.md\r\n+ ~~~\r\n"
    "    + CategoryInfo          : ObjectNotFound: (sed:String) [], CommandNotFoundException\r\n"
    "    + FullyQualifiedErrorId : CommandNotFoundException\r\n"
)


def _argv(argv: list[str], output: str = "", ok: bool = True) -> Step:
    body = f"Process exited with code {0 if ok else 1}\nOutput:\n{output}"
    return Step(tool="shell", params={"command": argv}, output=body, success=ok)


def _ps(script: str, output: str = "", ok: bool = True) -> Step:
    return _argv(["powershell.exe", "-NoProfile", "-Command", script], output, ok)


def _found(*steps: Step) -> list[tuple[str, str]]:
    run = learning_view(Trajectory(task="read the guidelines", steps=steps))
    return [
        (x.finding.detail["change"], x.finding.text)
        for x in find_shell_fixes(run)
        if x.finding.detail["change"] == "powershell"
    ]


def test_sed_in_powershell_then_get_content_of_the_same_file() -> None:
    ((_, text),) = _found(
        _ps("sed -n '1,200p' cli.py", _EN, False),
        _ps("Get-Content -Path cli.py -First 250", "import os\r\nimport sys\r\n"),
    )
    assert text.startswith("Commands here run in PowerShell, which has no sed (")
    assert "Get-Content did the job instead (Get-Content -Path cli.py -First 250)" in text


def test_a_bash_line_run_by_powershell_in_german() -> None:
    # Codex handed bash -lc "sed ..." to PowerShell; its error record is the same in
    # every language
    ((_, text),) = _found(
        _argv(["bash", "-lc", "sed -n '1,200p' app/src/app.component.ts"], _DE, False),
        _argv(
            ["powershell", "-NoProfile", "-Command", "Get-Content -Path app/src/app.component.ts"],
            "import { Component } from '@angular/core'",
        ),
    )
    assert "has no sed" in text


def test_a_plain_argv_with_a_backslashed_path() -> None:
    assert _found(
        _argv(["sed", "-n", "'1,200p'", "AGENTS.md"], _DE, False),
        _ps("Get-Content -Path .\\AGENTS.md -TotalCount 200 | Out-String", "# Guidelines"),
    )


def test_a_cmdlet_on_another_file_teaches_nothing() -> None:
    assert not _found(
        _ps("sed -n '1,200p' cli.py", _EN, False),
        _ps("Get-Content -Path README.md -First 50", "# app"),
    )


def test_a_lost_quote_runs_the_second_half_as_a_command_and_teaches_nothing() -> None:
    # rg "SHEET_ID|sheet id" reached PowerShell unquoted: "sheet" is what it did not find
    lost = _EN.replace("sed", "sheet")
    assert not _found(
        _ps('rg -n "SHEET_ID|sheet id" cli.py', lost, False),
        _ps("Get-Content -Path cli.py -First 250", "import os"),
    )


def test_the_users_own_script_run_bare_teaches_nothing() -> None:
    # "speckit" is the project's own runner, not a program PowerShell lacks
    own = _EN.replace("sed", "speckit")
    assert not _found(
        _ps("speckit plan", own, False),
        _ps("Get-ChildItem -Path scripts", "speckit.ps1"),
    )


def test_the_retry_must_work() -> None:
    assert not _found(
        _ps("sed -n '1,200p' cli.py", _EN, False),
        _ps("Get-Content -Path cli.py -TotalCount 250 -Tail 250", "cannot be used together", False),
    )


def test_the_lesson_stands_for_the_clients_prompts() -> None:
    run = learning_view(
        Trajectory(
            task="read the guidelines",
            steps=(
                _ps("sed -n '1,200p' cli.py", _EN, False),
                _ps("Get-Content -Path cli.py -First 250", "import os"),
            ),
        )
    )
    (fix,) = [x for x in find_shell_fixes(run) if x.finding.detail["change"] == "powershell"]
    rule = rule_for(fix.finding, fix.finding.text)
    assert rule.standing
    assert rule.client == "codex"


# Review 31


def test_a_cmdlet_that_did_another_job_on_the_file_teaches_nothing() -> None:
    # Test-Path asks whether the file is there, Remove-Item removes it: neither printed
    # its lines as sed would; wsl is no POSIX program that Get-Content stands in for
    for fixed in ("Test-Path cli.py", "Remove-Item cli.py"):
        assert not _found(_ps("sed -n '1,200p' cli.py", _EN, False), _ps(fixed, "True")), fixed
    assert not _found(
        _ps("wsl sed -n '1,200p' cli.py", _EN.replace("sed", "wsl"), False),
        _ps("Get-Content -Path cli.py -First 250", "import os"),
    )


def test_claude_codes_calls_teach_nothing() -> None:
    # Claude Code's Bash tool is Git Bash, which has sed: a powershell -Command line it
    # ran, or its own PowerShell tool, is no fact of the shell its commands run in
    def bash(command: str, output: str, ok: bool = True) -> Step:
        return Step(tool="Bash", params={"command": command}, output=output, success=ok)

    def pwsh(command: str, output: str, ok: bool = True) -> Step:
        return Step(tool="PowerShell", params={"command": command}, output=output, success=ok)

    assert not _found(
        bash("powershell -Command \"sed -n '1,200p' cli.py\"", _EN, False),
        bash('powershell -Command "Get-Content -Path cli.py -First 250"', "import os"),
    )
    assert not _found(
        pwsh("sed -n '1,200p' cli.py", _EN, False),
        pwsh("Get-Content -Path cli.py -First 250", "import os"),
    )
