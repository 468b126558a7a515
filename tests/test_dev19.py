"""Wave 4, nineteenth session: shapes read from real sessions of the validation half.

* a sandbox that cannot start at all (``bwrap: Failed to make / slave: Permission
  denied`` for every command, then the same command escalated): the machine's fact, not
  "sed is refused" of the pipeline that happened to be first (seokhyeonhong-motion-jepa);
* a run whose every call failed is searched for corrections too: an escalated ``gradlew``
  got past the sandbox's wrapper lock and then failed on the code (nileshteji-rig);
* ``windows``, widened: cmd's syntax in Git Bash is known by the run's Windows folder or a
  cmd variable (``%USERPROFILE%``), not only a drive path on its line, and the run's first
  such failure that a call got past teaches it (claude-skills-b4); PowerShell's code
  (``if (Test-Path x) { ... }``) that bash rejected, then run by the PowerShell tool
  (harinathpathipaka-visionweb-b9);
* ``msys_path``: Git Bash rewrote ``/etc/odoo/odoo.conf`` into
  ``C:/Program Files/Git/etc/odoo/odoo.conf`` before ``docker exec`` saw it; the PowerShell
  tool ran the same command (eduardodmb-claudework-b10);
* ``program``: jq not found on ``"$f"``, whose value the line assigns, then Python's json
  module in a here-document on the same files (gflownet-b7).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from agentmem import Memory
from agentmem.agents import learning_view
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory

from .conftest import FakeEmbedder, FakeModel
from .transcripts import CodexRollout, codex_exec


def _cc(command: str, output: str = "", ok: bool = True, code: int = 1) -> Step:
    body = output if ok else f"Exit code {code}\n{output}"
    return Step(tool="Bash", params={"command": command}, output=body, success=ok)


def _pwsh(command: str, output: str = "", ok: bool = True) -> Step:
    return Step(tool="PowerShell", params={"command": command}, output=output, success=ok)


def _fixes(*steps: Step, cwd: str = "/w/app") -> list[tuple[str, str]]:
    run = learning_view(Trajectory(task="do the job", steps=steps, meta={"cwd": cwd}))
    return [(str(x.finding.detail["change"]), x.finding.text) for x in find_shell_fixes(run)]


def _found(kind: str, *steps: Step, cwd: str = "/w/app") -> list[str]:
    return [text for change, text in _fixes(*steps, cwd=cwd) if change == kind]


# -- a sandbox that cannot start -------------------------------------------------------------

_BWRAP = "bwrap: Failed to make / slave: Permission denied"
_LIST = "pwd && rg --files | sed -n '1,240p'"


def test_a_sandbox_that_cannot_start_is_the_machines_fact():
    run = Trajectory(
        task="read the repo",
        steps=(
            codex_exec(_LIST, _BWRAP, False),
            codex_exec(_LIST, "/w/app\nmain.py", True, sandbox_permissions="require_escalated"),
        ),
        meta={"cwd": "/w/app"},
    )
    (fix,) = find_shell_fixes(learning_view(run))
    f = fix.finding
    assert f.detail["change"] == "escalation" and f.detail["scope"] == "machine"
    assert f.detail["risk"] == "escalation"  # held for a person, as every escalation is
    assert f.text.startswith("On this machine the sandbox cannot start ('bwrap: Failed to make")
    assert "sandbox_permissions: require_escalated" in f.text
    assert "sed" not in f.text  # not the pipeline's program: the sandbox never started it


def test_a_refusal_of_one_programs_write_stays_the_projects_escalation():
    refused = "error: cannot open .git/FETCH_HEAD: Operation not permitted"
    run = Trajectory(
        task="fetch",
        steps=(
            codex_exec("git fetch --all", refused, False),
            codex_exec("git fetch --all", "", True, sandbox_permissions="require_escalated"),
        ),
        meta={"cwd": "/w/app"},
    )
    (fix,) = find_shell_fixes(learning_view(run))
    assert fix.finding.detail["scope"] == "project"
    assert fix.finding.text.startswith("In this project git fetch is refused in the sandbox")


# -- a run whose every call failed -------------------------------------------------------------

_LOCK = (
    'Exception in thread "main" java.io.FileNotFoundException: /Users/u/.gradle/wrapper/'
    "dists/gradle-8.11.1-bin/x/gradle-8.11.1-bin.zip.lck (Operation not permitted)"
)
_DENIED = (
    'exec_command failed: CreateProcess { message: "Codex(Sandbox(Denied { output: '
    'ExecToolCallOutput { exit_code: 1, stdout: StreamOutput { text: \\"\\", '
    'truncated_after_lines: None }, stderr: StreamOutput { text: \\"'
    + _LOCK.replace('"', '\\\\\\"')
    + '\\\\n\\", truncated_after_lines: None }, duration: 0ns, timed_out: false }, '
    'network_policy_decision: None }))" }'
)


def test_a_run_whose_every_call_failed_still_teaches_its_escalation(tmp_path: Path):
    """The escalated build got past the wrapper's lock and failed on the code: the run has
    no successful call, and it was never searched for its corrections."""
    r = CodexRollout(cwd=str(tmp_path))
    r.prompt("build it")
    r.call({"cmd": "./gradlew :app:compileDebugKotlin"}, _DENIED)
    r.call(
        {"cmd": "./gradlew :app:compileDebugKotlin", "sandbox_permissions": "require_escalated"},
        "Chunk ID: 2\nProcess exited with code 1\nOutput:\n> Task :app:compileDebugKotlin FAILED"
        "\ne: file:///w/app/src/Main.kt:531:41 Unresolved reference: x\n",
    )
    r.done()
    path = r.write(tmp_path / "rollout-2026-01-05-x.jsonl")
    old = time.time() - 3 * 86400
    os.utime(path, (old, old))
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        mem.import_transcripts("codex", [path])
        mem.learn(use_model=False)
        rows = mem.db.execute(
            "SELECT text, review FROM experiences WHERE status = 'live'"
        ).fetchall()
    assert [(t.split(" (")[0], rv) for t, rv in rows] == [
        ("In this project gradlew is refused in the sandbox", "held")
    ]


# -- windows, widened ------------------------------------------------------------------------

_EOF = "/usr/bin/bash: eval: line 2: syntax error: unexpected end of file"


def test_cmd_syntax_in_a_windows_runs_folder_teaches_bashs_own_command():
    # claude-skills-b4: no drive path on the line; the run's folder is C:\Users\...
    found = _found(
        "windows",
        _cc('if not exist "%USERPROFILE%\\.claude" mkdir "%USERPROFILE%\\.claude"', _EOF, False),
        _cc('if not exist ".claude" mkdir ".claude"', _EOF, False),
        _cc('mkdir -p .claude && mkdir -p "$HOME/.claude"', ""),
        cwd="C:\\Users\\Administrator\\.local\\bin",
    )
    assert found == [
        "The Bash tool runs Git Bash here: cmd's syntax (if not exist) fails there ('eval: "
        "line 2: syntax error: unexpected...'); bash's own mkdir -p did the job instead."
    ]


def test_cmd_syntax_with_no_sign_of_windows_teaches_nothing():
    steps = (
        _cc('if not exist ".claude" mkdir ".claude"', _EOF, False),
        _cc("mkdir -p .claude", ""),
    )
    assert _found("windows", *steps, cwd="/home/me/app") == []


def test_the_home_folder_is_one_path_in_cmds_and_bashs_spelling():
    # %USERPROFILE%\.claude and "$HOME/.claude" are the same folder: the first failure teaches
    found = _found(
        "windows",
        _cc('if not exist "%USERPROFILE%\\.claude" mkdir "%USERPROFILE%\\.claude"', _EOF, False),
        _cc('mkdir -p "$HOME/.claude"', ""),
        cwd="/home/me/app",  # the cmd variable on the line is the sign of Windows
    )
    assert len(found) == 1 and "bash's own mkdir -p did the job" in found[0]


_BRACE = "/usr/bin/bash: eval: line 1: syntax error near unexpected token `{'"
_TEST_PATH = (
    'if (Test-Path "target/release/d.exe") { (Get-Item "target/release/d.exe").LastWriteTime }'
    ' else { Write-Output "Not built" }'
)


def test_powershell_code_bash_rejected_then_the_powershell_tool_ran_it():
    # harinathpathipaka-visionweb-b9
    found = _found(
        "windows",
        _cc(_TEST_PATH, _BRACE, False, code=2),
        _pwsh(_TEST_PATH, "07 June 2026 11:11:10"),
        cwd="D:\\ILabs\\visionweb",
    )
    assert found == [
        "The Bash tool runs Git Bash here: PowerShell's code (Test-Path, Get-Item, "
        "Write-Output) fails there ('eval: line 1: syntax error near...'); the PowerShell "
        "tool (Test-Path) did the job instead."
    ]


def test_a_header_name_is_no_cmdlet_and_linux_is_no_windows():
    curl = 'curl -H "Content-Type: application/json" -d "{"a": (1}" http://x/target/a.b'
    steps = (_cc(curl, _BRACE, False, code=2), _pwsh(curl, "ok"))
    assert _found("windows", *steps, cwd="D:\\app") == []
    # PowerShell's code on a Linux machine: no sign of Windows, nothing
    steps = (_cc(_TEST_PATH, _BRACE, False, code=2), _pwsh(_TEST_PATH, "07 June 2026"))
    assert _found("windows", *steps, cwd="/home/me/app") == []


# -- msys_path -------------------------------------------------------------------------------

_ODOO = "docker exec web-1 odoo -c /etc/odoo/odoo.conf -d odoo18 -u kickoff --stop-after-init"
_NOT_READABLE = (
    "Usage: odoo server [options]\n\nodoo server: error: The config file 'C:/Program Files/Git/"
    "etc/odoo/odoo.conf' selected with -c/--config doesn't exist or is not readable"
)


def test_git_bash_rewrote_a_posix_path_and_the_powershell_tool_ran_the_command():
    found = _found(
        "msys_path",
        _cc(_ODOO, _NOT_READABLE, False, code=2),
        _pwsh(_ODOO, "INFO ? odoo: Using configuration file at /etc/odoo/odoo.conf"),
    )
    assert found == [
        "The Bash tool runs Git Bash here, which rewrites an argument starting with / "
        "(/etc/odoo/odoo.conf became 'C:/Program Files/Git/etc/odoo/odoo.conf'): the "
        "PowerShell tool ran the same docker exec."
    ]
    # the conversion turned off in the Bash tool teaches it too
    off = _found(
        "msys_path",
        _cc(_ODOO, _NOT_READABLE, False, code=2),
        _cc(f"MSYS_NO_PATHCONV=1 {_ODOO}", "INFO ? odoo: Using configuration file"),
    )
    assert len(off) == 1 and "MSYS_NO_PATHCONV=1 docker exec worked" in off[0]


def test_no_msys_lesson_without_the_same_path_or_for_a_path_the_line_never_gave():
    ls = "docker exec app ls /var/run/"
    gone = "ls: cannot access 'C:/Program Files/Git/var/run/': No such file or directory"
    # eduardodmb-claudehome-b6: the later call read another file inside the container
    other = _cc('docker exec app sh -c "cat /usr/local/etc/php-fpm.d/www.conf"', "listen = 9000")
    assert _found("msys_path", _cc(ls, gone, False, code=2), other) == []
    # the Git folder the output names is not a word of the line
    said = _cc("docker exec app ls run", gone, False, code=2)
    assert _found("msys_path", said, _pwsh("docker exec app ls /var/run/", "php-fpm.sock")) == []


# -- a program not found on a variable's files ------------------------------------------------

_JQ_LOOP = (
    'cd /w/eval && for t in a b; do f="save/run_20260312_${t}/meta_prompts/${t}.json"; '
    'if [ -f "$f" ]; then jq \'.config.n, (.prompts|length)\' "$f"; fi; done'
)
_PY_JSON = (
    "cd /w/eval && python3 - <<'PY'\nimport json\nbase='save/run_20260312_'\n"
    "for t in ['a', 'b']:\n    j = json.load(open(f'{base}{t}/meta_prompts/{t}.json'))\n"
    "    print(t, j['config']['n'], len(j['prompts']))\nPY"
)


def test_jq_missing_on_a_variables_files_then_pythons_json_on_them():
    found = _found(
        "program",
        codex_exec(_JQ_LOOP, "/bin/bash: line 1: jq: command not found", False),
        codex_exec(_PY_JSON, "a 3 20\nb 3 20", True),
    )
    assert found == [
        "jq is not installed here ('jq: command not found'): Python's json module did the "
        'job (python3 -c "import json; ...").'
    ]


def test_no_json_lesson_when_python_reads_other_files():
    other = _PY_JSON.replace("save/run_20260312_", "out/other_results_").replace(
        "/meta_prompts/", "/scores/"
    )
    found = _found(
        "program",
        codex_exec(_JQ_LOOP, "/bin/bash: line 1: jq: command not found", False),
        codex_exec(other, "a 3 20\nb 3 20", True),
    )
    assert found == []


# -- argv_operator ---------------------------------------------------------------------------


def _argv(argv: list[str], output: str, ok: bool = True) -> Step:
    body = output if ok else f"Process exited with code 1\nOutput:\n{output}"
    return Step(tool="shell", params={"command": argv}, output=body, success=ok)


_NL_USAGE = "usage: nl [-p] [-b type] [-d delim] [-f type] [file]"


def test_a_pipe_given_as_an_argv_element_then_run_through_sh_c():
    # jacmanh-taskly-b7 (Codex's shell tool, an argv run without a shell)
    found = _found(
        "argv_operator",
        _argv(["nl", "-ba", "spec.md", "|", "sed", "-n", "1,60p"], _NL_USAGE, False),
        _argv(["sh", "-c", "nl -ba spec.md | sed -n '1,80p'"], "     1\t# Spec"),
    )
    assert found == [
        "The shell tool runs a command array without a shell: '|' reached nl as an argument "
        "('usage: nl [-p] [-b...'); run pipelines through sh -c (nl -ba spec.md | sed -n "
        "'1,80p')."
    ]


def test_no_argv_lesson_without_the_operator_or_the_same_programs():
    failed = _argv(["nl", "-ba", "spec.md", "|", "sed", "-n", "1,60p"], _NL_USAGE, False)
    # the script ran another job
    assert _found("argv_operator", failed, _argv(["sh", "-c", "cat spec.md | head"], "x")) == []
    # a '|' inside an argument is a pattern, no operator (rg -e 'a|b' worked as it is)
    rg = _argv(["rg", "-n", "a|b", "src"], "rg: src: No such file or directory", False)
    assert _found("argv_operator", rg, _argv(["sh", "-c", "rg -n 'a|b' ."], "x:1:a")) == []
    # an argv already run by a shell reads its own operators
    sh = _argv(["bash", "-lc", "nl -ba spec.md | sed -n 1,60p"], "sed: bad", False)
    assert _found("argv_operator", sh, _argv(["sh", "-c", "nl -ba spec.md | sed -n 1p"], "1")) == []


# -- the program table: options that take the next word --------------------------------------


def test_conda_run_uv_run_and_gnu_time_skip_their_options_values():
    from agentmem.agents.shell import parse

    (c,) = parse("conda run -n kimodo python dataset/prep.py --out /tmp/a").commands
    assert (c.program, c.wrappers) == ("python", ("conda run",))
    (c,) = parse("uv run --with rich python x.py").commands
    assert (c.program, c.operands) == ("python", ("x.py",))
    (c,) = parse("/usr/bin/time -f 'e=%e' make -j8").commands
    assert (c.program, c.assignments) == ("make", ())
    (c,) = parse("uv add --group dev pytest").commands
    assert (c.subcommand, c.operands) == ("add", ("pytest",))


# -- backslash, widened ----------------------------------------------------------------------


def test_a_windows_path_with_non_ascii_folders_whose_backslashes_bash_ate():
    # leodchen-claude-config-b10: bash printed the eaten path's CJK bytes escaped
    line = "cd D:\\Work\\08_客户跟进\\Okki\\output && grep -c tier factor.json"
    said = (
        "/usr/bin/bash: line 1: cd: $'D:Work08_\\345\\256\\242\\346\\210\\267Okkioutput': "
        "No such file or directory"
    )
    node = "node -e \"require('fs').readFileSync('D:/Work/08_客户跟进/Okki/output/factor.json')\""
    found = _found("backslash", _cc(line, said, False), _cc(node, "466"), cwd="D:\\Work")
    assert found == [
        "The Bash tool runs Git Bash here: it takes the backslashes out of a Windows path (cd "
        "D:\\... fails: 'D:Work08_客户跟进Okki...'); write it with forward slashes (D:/...); "
        "node worked."
    ]
    # only the drive and its first folder shown: no sign that bash ate the backslashes
    short = "/usr/bin/bash: line 1: cd: $'D:W\\345': No such file or directory"
    assert _found("backslash", _cc(line, short, False), _cc(node, "466"), cwd="D:\\Work") == []


# -- shell_start -----------------------------------------------------------------------------

_WSL = (
    "<3>WSL (9) ERROR: CreateProcessEntryCommon:505: execvpe /bin/bash failed 2\n"
    "<3>WSL (9) ERROR: CreateProcessEntryCommon:508: Create process not expected to return"
)
_SPAWN = "EPERM: operation not permitted, uv_spawn 'C:\\WINDOWS\\System32\\powershell.exe'"


def test_bash_that_never_started_then_pwsh_ran_the_commands():
    # gordondalos-mail-agent-b4: Codex on Windows handed bash -lc to a WSL with no distribution
    found = _found(
        "shell_start",
        _argv(["bash", "-lc", "ls -la && rg --files .specify"], _WSL, False),
        _argv(["pwsh", "-NoLogo", "-NoProfile", "-Command", "Get-ChildItem -Force"], "x"),
    )
    assert found == [
        "On this machine bash does not start ('WSL (9) ERROR: CreateProcessEntryCommon:505: "
        "execvpe /bin/bash failed'): pwsh -NoLogo -NoProfile -Command ran the commands instead."
    ]


def test_the_powershell_tool_that_could_not_spawn_then_the_bash_tool():
    # kenwei2nd-l-extrait-b9 (VS Code on Windows)
    found = _found(
        "shell_start",
        _pwsh("$seeds = @(10, 20); Invoke-WebRequest -Uri $u -OutFile $d", _SPAWN, False),
        _cc("mkdir -p /c/CLAUDE/images && echo ok", "ok"),
    )
    assert len(found) == 1
    assert found[0].startswith("On this machine the PowerShell tool does not start ('EPERM:")
    assert found[0].endswith("the Bash tool ran the commands instead.")


def test_a_shell_that_started_for_another_call_is_no_broken_shell():
    steps = (
        _argv(["bash", "-lc", "ls"], _WSL, False),
        _argv(["pwsh", "-Command", "Get-ChildItem"], "x"),
        _argv(["bash", "-lc", "git status"], "On branch main"),
    )
    assert _found("shell_start", *steps) == []
    # a spawn error of a program the command ran, not of the shell: no sign the shell failed
    node = _cc("node spawn.js", "Error: spawn git ENOENT", False)
    assert _found("shell_start", node, _pwsh("node spawn.js", "ok")) == []


def test_a_bare_home_folder_or_a_dates_format_is_no_sign_of_windows_nor_a_path():
    from agentmem.learning.shell_fixes import _line_paths

    assert _line_paths('dir "%USERPROFILE%\\" /b') == []
    # date's %Y% and %d% are no cmd variables: nothing marks this Linux run as Windows
    stamp = "if not exist out/logs mkdir out/logs_$(date +%Y%m%d)"
    assert _found("windows", _cc(stamp, _EOF, False), _cc("mkdir -p out/logs", "")) == []
    win = "if not exist out/logs mkdir out/logs_%DATE_TAG%"
    assert _found("windows", _cc(win, _EOF, False), _cc("mkdir -p out/logs", "")) != []


def test_an_and_list_given_as_argv_elements_is_no_pipeline():
    found = _found(
        "argv_operator",
        _argv(["cd", "web", "&&", "npm", "test"], "cd: too many arguments", False),
        _argv(["bash", "-lc", "cd web && npm test"], "12 passed"),
    )
    assert len(found) == 1 and "run such lines through bash -lc (cd web && npm test)" in found[0]
