"""Review of the nineteenth session's readers: inputs where a reader taught a wrong lesson.

* ``backslash``: a quoted Windows path with a folder outside ASCII keeps its backslashes;
  the drive alone in the output (``npm ERR! path D:\\项目\\...``) is no sign that bash
  ate them;
* ``escalation``: the run's own ``bwrap`` (``sandbox-exec``) failing inside the sandbox is
  no sandbox that cannot start on the machine;
* ``windows``: a first cmd-syntax failure that a bash retry got past (and failed further
  on) is the run's first, so the run teaches one lesson, not two; and a run of many
  unfixed Windows failures is read in time that grows with its length, not its square;
* ``msys_path``: the later call must run the same program (PowerShell's ``Write-Output``
  of the path ran no ``docker exec``).
"""

from __future__ import annotations

from agentmem.agents import learning_view
from agentmem.learning import shell_fixes
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory

from .transcripts import codex_exec


def _cc(command: str, output: str = "", ok: bool = True) -> Step:
    body = output if ok else f"Exit code 1\n{output}"
    return Step(tool="Bash", params={"command": command}, output=body, success=ok)


def _pwsh(command: str, output: str = "", ok: bool = True) -> Step:
    return Step(tool="PowerShell", params={"command": command}, output=output, success=ok)


def _fixes(*steps: Step, cwd: str = "/w/app") -> list[tuple[str, str]]:
    run = learning_view(Trajectory(task="do the job", steps=steps, meta={"cwd": cwd}))
    return [(str(x.finding.detail["change"]), x.finding.text) for x in find_shell_fixes(run)]


# -- backslash: a quoted path keeps its backslashes ---------------------------------------------


def test_a_quoted_non_ascii_path_whose_drive_the_output_names_is_not_eaten():
    line = 'cd "D:\\项目\\src\\app\\web" && npm test'
    said = (
        "npm ERR! code ENOENT\nnpm ERR! path D:\\项目\\src\\app\\web\\package.json\n"
        "npm ERR! enoent Could not read package.json"
    )
    later = _cc("cd D:/项目/src/app/web/client && npm test", "ok 3 tests")
    found = _fixes(_cc(line, said, False), later, cwd="D:\\项目")
    assert [c for c, _ in found if c == "backslash"] == []


def test_an_eaten_non_ascii_path_still_teaches_backslash():
    line = "cd D:\\Work\\08_客户跟进\\Okki\\output && grep -c tier factor.json"
    said = (
        "/usr/bin/bash: line 1: cd: $'D:Work08_\\345\\256\\242\\346\\210\\267Okkioutput': "
        "No such file or directory"
    )
    later = _cc("cd D:/Work/08_客户跟进/Okki/output && grep -c tier factor.json", "466")
    found = _fixes(_cc(line, said, False), later, cwd="D:\\Work")
    assert [c for c, _ in found] == ["backslash"]


# -- escalation: the run's own sandbox launcher ------------------------------------------------


def _escalations(cmd: str, said: str) -> list[tuple[str, str]]:
    run = Trajectory(
        task="t",
        steps=(
            codex_exec(cmd, said, False),
            codex_exec(cmd, "ok", True, sandbox_permissions="require_escalated"),
        ),
        meta={"cwd": "/w/app"},
    )
    fixes = find_shell_fixes(learning_view(run))
    return [(str(x.finding.detail["scope"]), x.finding.text) for x in fixes]


def test_the_runs_own_bwrap_failing_is_no_sandbox_that_cannot_start():
    said = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"
    found = _escalations("bwrap --ro-bind / / --proc /proc true", said)
    assert found and all(not text.startswith("On this machine") for _, text in found)
    said = "sandbox-exec: sandbox_apply: Operation not permitted"
    found = _escalations("sandbox-exec -f test.sb ./run_tests.sh", said)
    assert found and all(not text.startswith("On this machine") for _, text in found)


def test_the_sandbox_launcher_failing_for_another_program_stays_the_machines_fact():
    found = _escalations("rg --files", "bwrap: Failed to make / slave: Permission denied")
    assert [scope for scope, _ in found] == ["machine"]


# -- windows: one lesson a run; time that grows with the run -----------------------------------

_EOF = "/usr/bin/bash: eval: line 2: syntax error: unexpected end of file"


def test_a_first_syntax_failure_got_past_by_a_failing_retry_hides_a_second():
    steps = (
        _cc('if not exist "C:\\app\\out" mkdir "C:\\app\\out"', _EOF, False),
        # got past the construct, then failed on its own (no success on the path)
        _cc('mkdir -p "C:/app/out" && npm run build', 'npm ERR! Missing script: "build"', False),
        _cc("del C:\\app\\x.txt", "/usr/bin/bash: line 1: del: command not found", False),
        _pwsh("Remove-Item C:\\app\\x.txt", ""),
    )
    found = [text for change, text in _fixes(*steps, cwd="C:\\app") if change == "windows"]
    assert len(found) == 1 and "cmd's syntax (if not exist)" in found[0]


def test_many_unfixed_windows_failures_are_read_in_linear_time(monkeypatch):
    calls = 0
    real = shell_fixes._windows_fix

    def counted(t: Trajectory, i: int) -> tuple[int, str] | None:
        nonlocal calls
        calls += 1
        return real(t, i)

    monkeypatch.setattr(shell_fixes, "_windows_fix", counted)
    said = "/usr/bin/bash: line 1: del: command not found"
    steps = [_cc(f"del C:\\app\\x{k}.txt", said, False) for k in range(120)]
    assert _fixes(*steps, cwd="C:\\app") == []
    assert calls <= 3 * len(steps)


# -- msys_path: the same program ---------------------------------------------------------------

_ODOO = "docker exec web-1 odoo -c /etc/odoo/odoo.conf -d odoo18 -u kickoff --stop-after-init"
_NOT_READABLE = (
    "Usage: odoo server [options]\n\nodoo server: error: The config file 'C:/Program Files/Git/"
    "etc/odoo/odoo.conf' selected with -c/--config doesn't exist or is not readable"
)


def test_no_msys_lesson_when_the_later_call_ran_another_program():
    failed = _cc(_ODOO, _NOT_READABLE, False)
    for later in (
        _pwsh('Write-Output "/etc/odoo/odoo.conf"', "/etc/odoo/odoo.conf"),
        _pwsh("notepad /etc/odoo/odoo.conf", ""),
        _cc("MSYS_NO_PATHCONV=1 docker cp web-1:/etc/odoo/odoo.conf .", ""),
    ):
        assert [c for c, _ in _fixes(failed, later) if c == "msys_path"] == []
    # the same docker exec by the PowerShell tool still teaches it
    found = _fixes(failed, _pwsh(_ODOO, "INFO ? odoo: Using configuration file"))
    assert [c for c, _ in found] == ["msys_path"]


# -- program: a here-document's code is its body, not the whole line ---------------------------


def test_a_heredoc_is_read_for_its_own_code_not_the_lines_other_commands():
    unzip = codex_exec(
        "unzip -q data/archive.zip -d data/", "/bin/bash: line 1: unzip: command not found", False
    )
    # the archive named only by ls; Python extracted another one
    line = (
        "ls -la data/archive.zip && python3 - <<'PY'\nimport zipfile\n"
        "zipfile.ZipFile('vendor/other.zip').extractall('vendor')\nPY"
    )
    found = [c for c, _ in _fixes(unzip, codex_exec(line, "", True)) if c == "program"]
    assert found == []
    # the archive in the here-document's own code: Python's zipfile did the job
    line = (
        "ls -la data && python3 - <<'PY'\nimport zipfile\n"
        "zipfile.ZipFile('data/archive.zip').extractall('data/')\nPY"
    )
    found = [c for c, _ in _fixes(unzip, codex_exec(line, "", True)) if c == "program"]
    assert found == ["program"]
