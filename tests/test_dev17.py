"""The seventeenth session's kinds and widenings (wave 4), each paraphrased from a real
session of the validation half that agentmem had missed (read after the miss, so not
blind), with the negatives of the same sessions' shapes:

* ``hunk order`` (a client tool's rule): apply_patch failed to find a hunk's lines that
  an earlier hunk of the patch came after, and the same hunks in the file's order worked;
* ``interpret``: ``scripts/x.py`` was not executed ("Permission denied", exit 126), and
  ``python3 scripts/x.py`` ran it;
* ``exclusive``: Get-Content refused ``-TotalCount`` beside ``-Tail``, and one of them
  worked (learned once the slip repeats);
* ``inline``: bash could not read a long ``node -e "..."`` (its own quotes), and the
  script written to a .js file ran;
* ``encoding``, widened: Python read a UTF-8 file as gbk (UnicodeDecodeError), and the same
  script ran in UTF-8 mode (``$env:PYTHONUTF8='1'``);
* ``escalation``, widened: a DNS failure in Codex's sandbox (``getaddrinfo ENOTFOUND``)
  is a refusal, so the same command run with ``require_escalated`` is a correction;
* ``hidden``, widened: an rg line piped into PowerShell's ``Select-Object -First 50``
  is read as the rg before it.
"""

from __future__ import annotations

from pathlib import Path

from agentmem import Memory
from agentmem.agents import learning_view
from agentmem.agents.outcomes import escalations
from agentmem.learning.corrections import find_corrections
from agentmem.learning.hunk_order import hunk_order_text, hunk_orders, hunks
from agentmem.learning.kinds import Kind
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory


def _cc(command: str, output: str = "", ok: bool = True) -> Step:
    return Step(tool="Bash", params={"command": command}, output=output, success=ok)


def _codex(command: str, output: str = "", ok: bool = True, **more: object) -> Step:
    body = f"Process exited with code {0 if ok else 1}\nOutput:\n{output}"
    return Step("shell_command", {"command": command, **more}, body, ok)


def _ps(script: str, output: str = "", ok: bool = True) -> Step:
    argv = ["powershell.exe", "-NoProfile", "-Command", script]
    body = f"Process exited with code {0 if ok else 1}\nOutput:\n{output}"
    return Step(tool="shell", params={"command": argv}, output=body, success=ok)


def _found(kind: str, *steps: Step, cwd: str = "/w/app") -> list[str]:
    run = learning_view(Trajectory(task="do the job", steps=steps, meta={"cwd": cwd}))
    return [x.finding.text for x in find_shell_fixes(run) if x.finding.detail["change"] == kind]


# -- hunk order ---------------------------------------------------------------------------

_SPEC = "/w/lab/specs/024-register/spec.md"
_AUTHN = " - **AuthN/AuthZ**: Only authenticated attendees can register.\n"
_FR8 = "-- **FR-008**: System MUST detect when registration is closed.\n"


def _patch(*hunk_texts: str, file: str = _SPEC) -> str:
    body = "".join(f"@@\n{h}" for h in hunk_texts)
    return f"*** Begin Patch\n*** Update File: {file}\n{body}*** End Patch"


def _apply(patch: str, ok: bool, output: str = "") -> Step:
    out = output or ("Success. Updated the following files:\nM " + _SPEC if ok else "")
    return Step("apply_patch", {"input": patch}, out, ok)


_NOT_FOUND = (
    f"apply_patch verification failed: Failed to find expected lines in {_SPEC}:\n"
    "- **FR-008**: System MUST detect when registration is closed."
)
_HUNK_A = _AUTHN + "+- **Observability**: flows MUST emit structured logs.\n"
_HUNK_B = _FR8 + '+- **FR-008**: System MUST show "Registration is closed."\n'


def _orders(*steps: Step) -> list[tuple[int, int]]:
    return [(x.failed, x.fixed) for x in hunk_orders(Trajectory(task="t", steps=steps))]


def test_hunks_are_read_with_their_old_lines_in_the_patchs_order() -> None:
    got = hunks(_patch(_HUNK_A, _HUNK_B))
    assert [h[1][0] for h in got] == [_AUTHN[1:-1], _FR8[1:-1]]
    assert all(f == _SPEC for f, _ in got)


def test_hunks_out_of_the_files_order_then_in_order_is_the_slip() -> None:
    failed = _apply(_patch(_HUNK_A, _HUNK_B), False, _NOT_FOUND)
    read = _codex(f"nl -ba {_SPEC} | sed -n '116,160p'", "116 ## Requirements")
    fixed = _apply(_patch(_HUNK_B, _HUNK_A), True)
    assert _orders(failed, read, fixed) == [(0, 2)]
    run = Trajectory(task="apply 1 and 3", steps=(failed, read, fixed), meta={"cwd": "/w/lab"})
    [c] = [c for c in find_corrections(run) if c.finding.detail.get("refused") == "hunk-order"]
    assert c.kind == Kind.TOOL_RULE and c.finding.text == hunk_order_text()
    assert len(hunk_order_text().split()) <= 32


def test_hunk_order_needs_the_same_lines_in_the_other_order() -> None:
    failed = _apply(_patch(_HUNK_A, _HUNK_B), False, _NOT_FOUND)
    # the failing hunk's lines changed: they were not in the file as written
    changed = _HUNK_B.replace("is closed.", "is closed!")
    assert _orders(failed, _apply(_patch(changed, _HUNK_A), True)) == []
    # the same order again (it worked: something else changed the file)
    assert _orders(failed, _apply(_patch(_HUNK_A, _HUNK_B), True)) == []
    # the failing hunk alone: no order shown
    assert _orders(failed, _apply(_patch(_HUNK_B), True)) == []
    # the file written whole in between: that write, not the order, may be the fix
    wrote = Step("Write", {"file_path": _SPEC, "content": "# spec"}, "ok", True)
    assert _orders(failed, wrote, _apply(_patch(_HUNK_B, _HUNK_A), True)) == []
    # a failure that printed lines of no hunk of the patch
    other = _NOT_FOUND.replace("FR-008", "FR-009")
    assert (
        _orders(
            _apply(_patch(_HUNK_A, _HUNK_B), False, other), _apply(_patch(_HUNK_B, _HUNK_A), True)
        )
        == []
    )


# -- interpret ----------------------------------------------------------------------------

_DENIED = "/bin/bash: line 1: .codex/skills/x/scripts/list-curated-skills.py: Permission denied"


def test_a_script_not_executed_by_its_path_ran_through_its_interpreter() -> None:
    (text,) = _found(
        "interpret",
        _codex(".codex/skills/x/scripts/list-curated-skills.py", _DENIED, False),
        _codex("python3 .codex/skills/x/scripts/list-curated-skills.py", "1. atlas\n2. doc"),
    )
    assert text == (
        "In this project .codex/skills/x/scripts/list-curated-skills.py does not run by its "
        "path ('Permission denied'): run it as python3 "
        ".codex/skills/x/scripts/list-curated-skills.py."
    )


def test_interpret_needs_the_same_script_and_arguments_and_no_chmod() -> None:
    failed = _codex(
        "./uninstall.sh --help", "/usr/bin/bash: line 1: ./uninstall.sh: Permission denied", False
    )
    assert _found("interpret", failed, _codex("bash uninstall.sh --help", "Usage: ./uninstall.sh"))
    assert not _found("interpret", failed, _codex("bash uninstall.sh --dry-run", "Usage"))
    assert not _found("interpret", failed, _codex("bash install.sh --help", "Usage"))
    assert not _found(
        "interpret", failed, _codex("chmod +x uninstall.sh && bash uninstall.sh --help", "Usage")
    )
    # the script ran, and something it wrote was refused: not the script's own path
    ran = _codex("./build.sh", "./build.sh: line 3: /var/log/build.log: Permission denied", False)
    assert not _found("interpret", ran, _codex("bash build.sh", "built"))


# -- exclusive ----------------------------------------------------------------------------

_TOGETHER = (
    "Get-Content : The parameters TotalCount and Tail cannot be used together. Please specify "
    'only one parameter.\r\nAt line:1 char:1\r\n+ Get-Content -Path "cli.py" -TotalCount 250'
)


def test_two_parameters_of_different_sets_then_one() -> None:
    failed = _ps('Get-Content -Path "cli.py" -TotalCount 250 -Tail 250', _TOGETHER, False)
    (text,) = _found(
        "exclusive", failed, _ps('Get-Content -Path "cli.py" -Tail 200', "def main():")
    )
    assert text == (
        "PowerShell's Get-Content takes -TotalCount or -Tail, never both ('The parameters "
        "TotalCount and Tail cannot be used together'): pass only one of them."
    )
    # another file, or both parameters again: no retry of this one
    assert not _found("exclusive", failed, _ps('Get-Content -Path "a.md" -Tail 200', "# a"))
    assert not _found(
        "exclusive", failed, _ps('Get-Content -Path "cli.py" -TotalCount 9 -Tail 9', "x")
    )
    # neither parameter, the lines picked after (Select-Object): one way round it
    assert _found(
        "exclusive",
        failed,
        _ps("$lines = Get-Content cli.py; $lines | Select-Object -Skip 250 -First 250", "x"),
    )


def test_exclusive_is_learned_only_once_the_slip_repeats(tmp_path: Path) -> None:
    from .conftest import FakeEmbedder, FakeModel

    def runs(n: int) -> list[list[Step]]:
        return [
            [
                _ps(f'Get-Content -Path "f{k}.py" -TotalCount 9 -Tail 9', _TOGETHER, False),
                _ps(f'Get-Content -Path "f{k}.py" -Tail 9', "x = 1"),
            ]
            for k in range(n)
        ]

    for n, learned in ((1, False), (2, True)):
        with Memory.open(tmp_path / f"m{n}.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
            for k, steps in enumerate(runs(n)):
                tid = mem.record(f"read the file {k}", steps, meta={"cwd": "C:\\w\\app"})
                mem.feedback(tid, "accept")
            mem.learn(use_model=False)
            texts = [e.text for e in mem.experiences()]
            assert any("never both" in x for x in texts) is learned, texts


# -- inline -------------------------------------------------------------------------------

_NODE_CODE = (
    "\nconst fs = require('fs');\nconst cards = JSON.parse(fs.readFileSync('data/cards.json'));\n"
    "const judged = cards.map(card => ({ name: card.name, stage: card.stage === 'won' ? "
    "'signed' : 'open', reason: card.reason }));\nconsole.log(JSON.stringify(judged, null, 2));\n"
)
_UNREAD = "Exit code 2\n/usr/bin/bash: -c: line 96: unexpected EOF while looking for matching `''"


def test_a_long_inline_script_the_shell_could_not_read_ran_from_a_file() -> None:
    failed = _cc(f'cd "D:/w/Okki" && node -e "{_NODE_CODE}"', _UNREAD, False)
    wrote = Step(
        "Write", {"file_path": "D:\\w\\Okki\\scripts\\judge.js", "content": _NODE_CODE}, "ok"
    )
    ran = _cc('cd "D:/w/Okki" && node scripts/judge.js', '[{"name": "a"}]')
    (text,) = _found("inline", failed, wrote, ran)
    assert text == (
        "A long node -e script inline in Bash breaks on its own quotes ('unexpected EOF while "
        "looking for matching'): write it to a .js file and run node on the file."
    )
    # another file's text, or a one-liner: no lesson
    other = Step("Write", {"file_path": "D:\\w\\Okki\\scripts\\judge.js", "content": "x"}, "ok")
    assert not _found("inline", failed, other, ran)
    short = _cc("node -e \"console.log('it's')\"", _UNREAD, False)
    assert not _found("inline", short, wrote, ran)
    # the shell read the line (the script's own error): no quoting slip
    broke = _cc(f'node -e "{_NODE_CODE}"', "SyntaxError: Unexpected token", False)
    assert not _found("inline", broke, wrote, ran)


# -- encoding, widened --------------------------------------------------------------------

_GBK = (
    'Traceback (most recent call last):\r\n  File "quick_validate.py", line 99\r\n'
    "UnicodeDecodeError: 'gbk' codec can't decode byte 0xaf in position 12"
)


def test_a_file_read_as_gbk_then_the_same_script_in_utf8_mode() -> None:
    failed = _codex("python quick_validate.py skills/x", _GBK, False)
    (text,) = _found(
        "encoding",
        failed,
        _codex("$env:PYTHONUTF8='1'; python quick_validate.py skills/x", "Skill is valid!"),
    )
    assert text == (
        "python here reads text files as gbk, not UTF-8 (UnicodeDecodeError: 'gbk codec cant "
        "decode byte'): run it in UTF-8 mode (PYTHONUTF8=1)."
    )
    # the console's encoding changes nothing for reading a file; another script proves nothing
    assert not _found(
        "encoding",
        failed,
        _codex("$env:PYTHONIOENCODING='utf-8'; python quick_validate.py skills/x", "ok"),
    )
    assert not _found("encoding", failed, _codex("python -X utf8 other.py", "ok"))


# -- escalation, widened ------------------------------------------------------------------


def test_a_dns_failure_in_the_sandbox_then_escalated_is_a_refusal() -> None:
    said = "Error: getaddrinfo ENOTFOUND aws-1-sa-east-1.pooler.supabase.com"
    failed = _codex("pnpm run db:migrate", said, False)
    esc = _codex(
        "pnpm run db:migrate",
        "migrations applied successfully",
        sandbox_permissions="require_escalated",
    )
    assert escalations((failed, esc)) == {0: 1}
    assert escalations((failed, _codex("pnpm run db:migrate", "migrations applied"))) == {}


# -- hidden, through PowerShell's Select-Object -------------------------------------------


def test_an_rg_line_piped_into_select_object_is_read_as_the_rg() -> None:
    (text,) = _found(
        "hidden",
        _codex('rg -n "/about/" docs -S | Select-Object -First 50', "", False),
        _codex(
            'rg --hidden -n "/about/" docs -S | Select-Object -First 50',
            "docs\\.vitepress\\config.ts:22:      { text: 'About', link: '/about/' }",
        ),
        cwd="d:\\w\\blog",
    )
    assert "docs/.vitepress/" in text and "rg --hidden" in text


# -- flag, widened: one option refused, a few short ones in its place -----------------------

_BSD_CAT = "Exit code 1\ncat: illegal option -- A\nusage: cat [-belnstuv] [file ...]"


def test_an_option_this_machines_program_lacks_then_its_own_short_options() -> None:
    failed = _cc("sed -n '506,511p' src/page.svelte | cat -A", _BSD_CAT, False)
    (text,) = _found("flag", failed, _cc("sed -n '506,511p' src/page.svelte | cat -v -e -t", "^I$"))
    assert text == "Here cat has no -A ('cat: illegal option -- A'): run it with -v -e -t."
    # the output names no option: which change made it work is not said
    vague = _cc("sed -n '1,5p' a.txt | cat -A", "Exit code 1\ncat: error", False)
    assert not _found("flag", vague, _cc("sed -n '1,5p' a.txt | cat -v -e -t", "x$"))
    # four options in its place: more than one change
    assert not _found(
        "flag", failed, _cc("sed -n '506,511p' src/page.svelte | cat -v -e -t -n", "1 x")
    )


# -- readonly -----------------------------------------------------------------------------

_CHECKLIST = (
    "for f in checklists/*.md; do\n  total=$(grep -c '^- \\[' \"$f\")\n  status=PASS\n"
    '  printf "| %s | %s | %s |\\n" "$f" "$total" "$status"\ndone'
)


def test_zsh_refused_its_read_only_status_then_the_script_renamed_it() -> None:
    failed = Step(
        "exec_command",
        {"cmd": _CHECKLIST},
        "Process exited with code 1\nOutput:\nzsh:3: read-only variable: status\n",
        False,
    )
    renamed = Step("exec_command", {"cmd": _CHECKLIST.replace("status", "row_status")}, "| a |")
    (text,) = _found("readonly", failed, renamed)
    assert text == (
        "In zsh status is a read-only special variable ('read-only variable: status'): a "
        "script run there must name its variable something else."
    )
    # still assigned, or another script: nothing
    assert not _found("readonly", failed, Step("exec_command", {"cmd": _CHECKLIST}, "ok"))
    assert not _found("readonly", failed, Step("exec_command", {"cmd": "ls checklists"}, "a.md"))


# -- program, widened: Python's own module did a missing program's job ----------------------


def test_a_missing_unzip_then_pythons_zipfile_on_the_same_archive() -> None:
    failed = _cc(
        'unzip -o "kulachat-serif.zip" -d fonts/ && ls fonts/',
        "Exit code 127\n/bin/bash: line 1: unzip: command not found",
        False,
    )
    worked = _cc(
        'mkdir -p fonts && python3 -c "import zipfile; '
        "zipfile.ZipFile('kulachat-serif.zip').extractall('fonts/')\" && find fonts/ -type f",
        "fonts/Kulachat-Regular.otf",
    )
    (text,) = _found("program", failed, worked)
    assert text.startswith("unzip is not installed here ('unzip: command not found'): Python's")
    # another archive: not the same job
    other = _cc("python3 -c \"import zipfile; zipfile.ZipFile('other.zip').extractall('x/')\"", "")
    assert not _found("program", failed, other)


# -- workdir_path ---------------------------------------------------------------------------


def _shell(line: str, workdir: str, output: str = "", ok: bool = True) -> Step:
    body = f"Process exited with code {0 if ok else 1}\nOutput:\n{output}"
    return Step("shell", {"command": ["bash", "-lc", line], "workdir": workdir}, body, ok)


def test_a_path_that_repeats_the_workdirs_folder_then_written_from_the_workdir() -> None:
    missing = "cat: .codex/prompts/constitution.md: No such file or directory"
    failed = _shell("cat .codex/prompts/constitution.md", ".codex", missing, False)
    (text,) = _found("workdir_path", failed, _shell("cat prompts/constitution.md", ".codex", "---"))
    assert text == (
        "shell resolves a relative path from the call's workdir: a path .codex/... given "
        "workdir .codex is looked for in .codex/.codex/ ('No such file'); write the path "
        "relative to the workdir."
    )
    from agentmem.sanitize import lesson_problem

    assert lesson_problem(text) is None  # servable: ".codex," read as words to Codex
    # the whole path from the project's own folder: the same slip
    assert _found(
        "workdir_path", failed, _shell("cat .codex/prompts/constitution.md", "/u/coda", "---")
    )
    # another file, or the same workdir and the same path again: nothing
    assert not _found("workdir_path", failed, _shell("cat prompts/plan.md", ".codex", "---"))
    assert not _found(
        "workdir_path", failed, _shell("cat .codex/prompts/constitution.md", ".codex", "---")
    )


# -- addtype --------------------------------------------------------------------------------

_HTTP = (
    "$client = [System.Net.Http.HttpClient]::new(); $r = $client.PostAsync("
    "'http://127.0.0.1:8080/mcp', $null).Result; 'Status=' + [int]$r.StatusCode"
)
_NO_HTTP = (
    "Unable to find type [System.Net.Http.HttpClient].\r\nAt line:1 char:11\r\n"
    "+ $client = [System.Net.Http.HttpClient]::new(); ..."
)


def test_a_type_powershell_did_not_know_then_its_assembly_loaded_first() -> None:
    failed = _codex(_HTTP, _NO_HTTP, False)
    (text,) = _found(
        "addtype", failed, _codex("Add-Type -AssemblyName System.Net.Http; " + _HTTP, "Status=200")
    )
    assert text == (
        "PowerShell here does not load System.Net.Http by itself ('Unable to find type "
        "[System.Net.Http.HttpClient]'): run Add-Type -AssemblyName System.Net.Http before "
        "using [System.Net.Http.HttpClient]."
    )
    # another job (Invoke-WebRequest), or another assembly: nothing
    assert not _found("addtype", failed, _codex("Invoke-WebRequest -Uri http://x/mcp", "200"))
    other = "Add-Type -AssemblyName System.Web; " + _HTTP
    assert not _found("addtype", failed, _codex(other, "Status=200"))
