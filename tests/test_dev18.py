"""The eighteenth session's kinds and widenings (wave 4), each paraphrased from a real
session of the validation half that agentmem had missed (read after the miss, so not
blind), with the negatives of the same sessions' shapes:

* ``container``: docker knew no container ``odoo18`` ("No such container"), ``docker ps``
  listed the machine's containers, and the same ``docker exec`` given one of them worked;
* ``borrowed`` (a client tool's rule): the filesystem MCP server's ``edit_file`` was
  refused for want of ``edits`` after it was given the built-in Edit's ``old_string`` and
  ``new_string``, and Edit then did the job with them (learned once the slip repeats);
* ``equals``: zsh read ``echo ===SUB===`` as =command expansion ("==SUB=== not found")
  and the line stopped there; the command after it, run alone, worked;
* ``one_pattern``: ``rg -n "def a" -n "def b" FILE`` read "def b" as a path ("No such
  file or directory"), and ``rg -n "def b" FILE`` worked (the session did it twice);
* ``bre_group``: grep's basic regex refused ``unique\\(\\[`` ("Unmatched ( or \\("), and
  the Grep tool found it with the same pattern;
* ``range_first``: PowerShell's ``..`` bound ``$lines[$start-1..$end]`` before the
  ``-`` ("op_Subtraction"), and the bounds computed first worked (the slip came twice);
* ``dot_path``: zsh's ``. config.env`` did not find the file in the call's own folder
  (zsh looks a bare name up on $path), and ``. /that/folder/config.env`` worked;
* ``windows_glob``: rg on Windows got ``src\\X\\*.cs`` whole ("os error 123"), and rg
  given the folder worked (rg's exit status 1 reads as "no match": read anyway);
* ``ps_readonly``: PowerShell refused ``$home = ...`` ($HOME is automatic; names ignore
  case), and the same value assigned to ``$userCodex`` worked;
* ``glob``, widened: zsh's own ``(eval):1: no matches found: --include=*.hpp`` (an
  option's glob), and the same grep without the option worked;
* ``shadowed``: ``calendar.py`` imported itself ("module 'calendar' has no attribute"),
  and the script renamed ran;
* ``bare_name``: PowerShell did not find ``speckit`` by its bare name ("is not
  recognized"), and ``.\\speckit.cmd`` with the same arguments ran it;
* ``windows``, widened: cmd's ``dir /s /b`` in Git Bash (GNU dir read ``/s`` as a file),
  then Glob or ``ls -la`` listed the folder: GNU ``dir`` lists, so either did its job.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentmem import Memory
from agentmem.agents import learning_view, programs
from agentmem.agents.outcomes import borrowed_params, required_missing
from agentmem.learning.corrections import find_corrections
from agentmem.learning.kinds import Kind
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory


def _cc(command: str, output: str = "", ok: bool = True, code: int = 1) -> Step:
    body = output if ok else f"Exit code {code}\n{output}"
    return Step(tool="Bash", params={"command": command}, output=body, success=ok)


def _pwsh(command: str, output: str = "", ok: bool = True) -> Step:
    body = output if ok else f"Exit code 1\n{output}"
    return Step(tool="PowerShell", params={"command": command}, output=body, success=ok)


def _found(kind: str, *steps: Step, cwd: str = "/w/app") -> list[str]:
    run = learning_view(Trajectory(task="do the job", steps=steps, meta={"cwd": cwd}))
    return [x.finding.text for x in find_shell_fixes(run) if x.finding.detail["change"] == kind]


# -- container ---------------------------------------------------------------------------

_GONE = "Error response from daemon: No such container: {}"
_PS = "NAMES                 STATUS\nodoo_docker-nginx-1   Up 6 days\nodoo_docker-web-1     Up"
_UPGRADE = "docker exec {} odoo -u hr_recruitment -d odoo18 --stop-after-init"


def test_a_container_named_from_the_listing_teaches_the_machines_container() -> None:
    # eduardodmb-claudehome-b6: odoo18 is the database; the container is odoo_docker-web-1
    bin_ = _UPGRADE.format("odoo18").replace("odoo -u", "odoo-bin -u")
    (text,) = _found(
        "container",
        _pwsh(bin_, _GONE.format("odoo18"), False),
        _pwsh("docker ps -a", _PS),
        _pwsh(_UPGRADE.format("odoo_docker-web-1"), "Modules loaded."),
    )
    assert "no container odoo18 ('No such container: odoo18')" in text
    assert "odoo_docker-web-1, which docker ps lists (docker exec odoo_docker-web-1" in text


def test_every_name_the_run_tried_is_named_once() -> None:
    # eduardodmb-claudehome-b6 again: odoo18-dev, then odoo_server, then the listing
    found = _found(
        "container",
        _pwsh(_UPGRADE.format("odoo18-dev"), _GONE.format("odoo18-dev"), False),
        _pwsh(_UPGRADE.format("odoo_server"), _GONE.format("odoo_server"), False),
        _pwsh("docker ps", _PS),
        _pwsh(_UPGRADE.format("odoo_docker-web-1"), "Modules loaded."),
    )
    assert len(found) == 1 and "no container odoo18-dev or odoo_server" in found[0]


def test_a_simple_rename_is_the_container_fact_not_a_value_of_the_command() -> None:
    # eduardodmb-claudework-b10: docker restart odoo18 -> docker restart odoo_docker-web-1
    # was read as a project's operand; it is the machine's container
    steps = (
        _cc("docker restart odoo18", _GONE.format("odoo18"), False),
        _cc("docker ps -a --format '{{.Names}}'", "odoo_docker-web-1\nodoo_docker-db-1"),
        _cc("docker restart odoo_docker-web-1", "odoo_docker-web-1"),
    )
    run = learning_view(Trajectory(task="restart odoo", steps=steps, meta={"cwd": "/w/app"}))
    (fix,) = find_shell_fixes(run)
    assert fix.finding.detail["change"] == "container"
    assert fix.finding.detail["scope"] == "machine"


def test_no_container_lesson_without_a_listing_or_for_a_container_the_run_made() -> None:
    gone = _cc(_UPGRADE.format("odoo18"), _GONE.format("odoo18"), False)
    right = _cc(_UPGRADE.format("odoo_docker-web-1"), "Modules loaded.")
    # a guess that happened to work: no listing showed the name
    assert not _found("container", gone, right)
    # ariffazil-a-forge (development): the container did not exist yet; compose made it
    assert not _found(
        "container",
        _cc("docker restart geox_server", _GONE.format("geox_server"), False),
        _cc("docker ps -a", "CONTAINER ID   IMAGE   NAMES\n1a2b   geox   geox_server"),
        _cc("docker compose -p geox up -d geox_server", "Container geox_server Started"),
        _cc("docker restart geox_server", "geox_server"),
    )
    # the listing named it, but the call that worked used another subcommand
    logs = _cc("docker logs odoo_docker-web-1", "ok")
    assert not _found("container", gone, _cc("docker ps", _PS), logs)
    # the same name again (the engine came back): no other container
    again = _cc(_UPGRADE.format("odoo18"), "ok")
    assert not _found("container", gone, _cc("docker ps", _PS), again)


def test_podmans_wording_is_the_same_refusal() -> None:
    said = 'Error: no container with name or ID "web" found: no such container'
    (text,) = _found(
        "container",
        _cc("podman logs web", said, False),
        _cc("podman ps --format '{{.Names}}'", "app_web_1"),
        _cc("podman logs app_web_1", "listening"),
    )
    assert "no container web" in text and "podman logs app_web_1" in text


# -- borrowed parameters -----------------------------------------------------------------

_ZOD = json.dumps(
    [{"code": "invalid_type", "expected": "array", "received": "undefined",
      "path": ["edits"], "message": "Required"}], indent=2,
)  # fmt: skip
_REFUSED = f"Error: Invalid arguments for edit_file: {_ZOD}"
_CFG = "K:/PortableApps/Claude-Code/.claude.json"


def _mcp_edit(old: str, new: str) -> Step:
    params = {"path": _CFG, "old_string": old, "new_string": new}
    return Step("mcp__filesystem__edit_file", params, _REFUSED, False)


def _edit(old: str, new: str) -> Step:
    params = {"file_path": _CFG, "old_string": old, "new_string": new}
    return Step("Edit", params, f"The file {_CFG} has been updated.", True)


def test_required_missing_reads_each_wording() -> None:
    assert required_missing(_mcp_edit("a", "b")) == "edits"
    ask = Step(
        "AskUserQuestion",
        {"questions": [{"question": "q"}]},
        "<tool_use_error>InputValidationError: AskUserQuestion failed due to the following "
        "issue:\nThe required parameter `questions[0].options` is missing</tool_use_error>",
        False,
    )
    assert required_missing(ask) == "questions[0].options"
    given = Step("mcp__x__run", {"edits": []}, _REFUSED, False)
    assert required_missing(given) is None  # it was given: another refusal


def _lessons(*steps: Step) -> list[str]:
    run = Trajectory(task="edit the config", steps=steps, accepted=True)
    return [c.finding.text for c in find_corrections(run) if c.kind == Kind.TOOL_RULE]


def test_another_tools_parameters_then_that_tool_is_the_tools_rule() -> None:
    # 0blueteam0-nexus-atip: edit_file refused twice, then Edit with the same strings
    steps = (
        _mcp_edit('"env": {', '"env": {\n'),
        _mcp_edit('"LC_ALL": "ko"', '"LC_ALL": "ko",\n"X": 1'),
        _edit('"LC_ALL": "ko"', '"LC_ALL": "ko",\n"X": 1'),
    )
    assert borrowed_params(steps) == {1: 2}
    (text,) = _lessons(*steps)
    assert text.startswith("mcp__filesystem__edit_file needs edits ('edits: Required')")
    assert "old_string and new_string are parameters of Edit" in text


def test_no_borrowed_rule_when_the_values_differ_or_the_tool_itself_worked() -> None:
    refused = _mcp_edit('"a": 1', '"a": 2')
    assert not borrowed_params((refused, _edit('"b": 1', '"b": 2')))  # other strings
    fixed = Step("mcp__filesystem__edit_file", {"path": _CFG, "edits": []}, "ok", True)
    assert not borrowed_params((refused, fixed, _edit('"a": 1', '"a": 2')))
    assert not borrowed_params((refused, _edit('"a": 1', '"a": 2'))[:1])


def test_a_one_off_borrowed_slip_is_no_lesson_and_a_repeated_one_is(tmp_path: Path) -> None:
    learned = []
    for n in (1, 2):
        steps = [_mcp_edit('"b": 1', '"b": 2')] * (n - 1)
        steps += [_mcp_edit('"a": 1', '"a": 2'), _edit('"a": 1', '"a": 2')]
        with Memory.open(tmp_path / f"m{n}.db") as mem:
            mem.record("edit the config", steps, accepted=True, meta={"cwd": "K:/cc"})
            mem.learn(use_model=False)
            learned.append([e.text for e in mem.experiences() if "edit_file" in e.text])
    assert learned[0] == [] and len(learned[1]) == 1


# -- windows, widened: dir lists ---------------------------------------------------------

_APP = "C:\\Users\\Administrator\\Desktop\\CourtAssistant"


def test_gnu_dir_lists_so_glob_or_ls_did_its_job() -> None:
    assert programs.same_job("ls", ["dir"]) and not programs.is_windows_command("dir")
    failed = _cc(f'dir "{_APP}" /s /b', "dir: cannot access '/s': No such file or directory", False)
    glob = Step("Glob", {"pattern": "**/*", "path": _APP}, f"{_APP}\\app\\build.gradle.kts", True)
    (text,) = _found("windows", failed, glob, cwd=_APP)
    assert text.endswith("; Glob did the job instead.")
    said = "dir: cannot access '/b': No such file or directory"
    one = _cc(f'dir "{_APP}\\model" /b', said, False)
    ls = _cc(f'cd "{_APP}\\model" && ls -la', "total 8\n-rw-r--r-- 1 a 197121 10 a.pdf")
    (text,) = _found("windows", one, ls, cwd=_APP)
    assert text.endswith("; bash's own ls -la did the job instead.")


def test_a_listing_in_another_folder_did_not_do_dirs_job() -> None:
    failed = _cc(f'dir "{_APP}" /s /b', "dir: cannot access '/s': No such file or directory", False)
    other = _cc('cd "C:\\Users\\Administrator\\Desktop\\other" && ls -la', "total 0")
    assert not _found("windows", failed, other, cwd=_APP)


# -- bare name ---------------------------------------------------------------------------

_NOT_RECOGNIZED = (
    "speckit : The term 'speckit' is not recognized as the name of a cmdlet, function, "
    "script file, or operable program.\n+ CategoryInfo : ObjectNotFound: (speckit:String) [], "
    "CommandNotFoundException"
)
_TRACEBACK = (
    'Traceback (most recent call last):\n  File "C:\\Users\\P\\app\\speckit.py", line 127'
    "\nKeyError: 'n8n'"
)


def _codex_ps(script: str, output: str = "", ok: bool = True) -> Step:
    argv = ["powershell.exe", "-NoProfile", "-Command", script]
    body = f"Process exited with code {0 if ok else 1}\nOutput:\n{output}"
    return Step(tool="shell", params={"command": argv}, output=body, success=ok)


def test_a_program_run_from_the_folder_after_its_bare_name_failed() -> None:
    # pt-parker-timing-system-b9: .\\speckit.cmd ran (and failed in speckit.py's own code)
    (text,) = _found(
        "bare_name",
        _codex_ps("speckit run n8n_setup", _NOT_RECOGNIZED, False),
        _codex_ps("Get-ChildItem -Name speckit*", "speckit\nspeckit.cmd\nspeckit.py"),
        _codex_ps(".\\speckit.cmd run n8n_setup", _TRACEBACK, False),
        cwd="C:\\Users\\P\\app",
    )
    assert text == (
        "PowerShell does not run a program in the current folder by its bare name ('The term "
        "speckit is not recognized'): run it as .\\speckit.cmd."
    )


def test_no_bare_name_lesson_for_other_arguments_or_a_program_still_not_found() -> None:
    failed = _codex_ps("speckit run n8n_setup", _NOT_RECOGNIZED, False)
    other = _codex_ps(".\\speckit.cmd list", "n8n_setup")
    assert not _found("bare_name", failed, other)
    again = _NOT_RECOGNIZED.replace("'speckit'", "'.\\speckit.cmd'")
    assert not _found("bare_name", failed, _codex_ps(".\\speckit.cmd run n8n_setup", again, False))
    # a failure that never shows the program ran (no file of its name in the output)
    quiet = _codex_ps(".\\speckit.cmd run n8n_setup", "Access is denied.", False)
    assert not _found("bare_name", failed, quiet)
    # a cmdlet PowerShell lacks is another lesson (powershell), never this one
    cmdlet = _NOT_RECOGNIZED.replace("speckit", "Get-Foo")
    assert not _found(
        "bare_name", _codex_ps("Get-Foo x", cmdlet, False), _codex_ps(".\\Get-Foo x", "ok")
    )


# -- equals ------------------------------------------------------------------------------

_STATUS = "On branch main\nChanges not staged for commit:\n\tmodified:   hybrid_vsim"


def test_a_word_starting_with_equals_in_zsh() -> None:
    # pshung-personal-git-b13: echo ===SUB=== between two git calls, four times
    failed = _cc(
        "git status; echo ===SUB===; git -C hybrid_vsim status",
        f"{_STATUS}\n(eval):1: ==SUB=== not found",
        False,
    )
    alone = _cc("git -C /home/nick/work/hybrid_sim/hybrid_vsim status", "On branch hybrid")
    (text,) = _found("equals", failed, alone, cwd="/home/nick/work/hybrid_sim")
    assert "a word that starts with = (===SUB===) is =command expansion" in text
    assert "('==SUB=== not found')" in text


def test_no_equals_lesson_when_nothing_after_the_word_ran_or_the_word_is_quoted() -> None:
    failed = _cc("git status; echo ===; git log -3", f"{_STATUS}\n(eval):1: == not found", False)
    assert not _found("equals", failed, _cc("git diff --stat", "1 file changed"))
    # the retry wrote the word unquoted again: no way past it shown
    again = _cc("echo ===; git log -3", "On branch main\n===\na06823b x")
    assert not _found("equals", failed, again)
    # quoted, the word is what the lesson advises
    quoted_retry = _cc("git status; echo '==='; git log -3", "On branch main\n===\na06823b x")
    assert _found("equals", failed, quoted_retry)
    quoted = _cc("echo '===' && git log -3", "zsh: == not found", False)
    assert not _found("equals", quoted, _cc("git log -3", "a06823b x"))


# -- one pattern -------------------------------------------------------------------------

_NO_PATH = "rg: {}: No such file or directory (os error 2)"


def _codex(command: str, output: str = "", ok: bool = True) -> Step:
    body = f"Process exited with code {0 if ok else 2}\nOutput:\n{output}"
    return Step("shell_command", {"command": command, "workdir": "/w/G"}, body, ok)


def test_quoted_patterns_after_the_first_are_paths() -> None:
    # g (validation): eleven patterns, each after -n; then one rg per pattern
    failed = _codex(
        'rg -n "def cmd_fe" -n "def cmd_pl" -n "def cmd_pu" src/core.py',
        "\n".join(_NO_PATH.format(w) for w in ("def cmd_pl", "def cmd_pu")),
        False,
    )
    (text,) = _found("one_pattern", failed, _codex('rg -n "def cmd_pl" src/core.py', "679:def"))
    assert text == (
        "rg takes one pattern; quoted words after it are paths ('No such file or directory'): "
        "run rg once per pattern, or pass each with -e (rg -e A -e B)."
    )


def test_no_one_pattern_lesson_for_real_paths_or_another_search() -> None:
    # a folder that is not there: a path, not a pattern
    missing = _codex("rg -n TODO src docs", _NO_PATH.format("docs"), False)
    assert not _found("one_pattern", missing, _codex("rg -n TODO src", "src/a.py:1:# TODO"))
    failed = _codex('rg -n "def a" "def b" src/core.py', _NO_PATH.format("def b"), False)
    # the first pattern again: what was asked of the others is not shown
    assert not _found("one_pattern", failed, _codex('rg -n "def a" src/core.py', "3:def a"))
    # another file searched: not the same search
    assert not _found("one_pattern", failed, _codex('rg -n "def b" src/other.py', "9:def b"))


# -- grep's basic regex ------------------------------------------------------------------

_UNMATCHED = "grep: Unmatched ( or \\("


def test_an_escaped_parenthesis_in_greps_basic_regex() -> None:
    # eduardodmb-claudehome-b6: grep -rn "unique\(\[" refused; Grep with it worked
    failed = _cc('grep -rn "unique\\(\\[" database/migrations/', _UNMATCHED, False, 2)
    grep = Step("Grep", {"pattern": "unique\\(\\[", "path": "database/migrations"}, "a:30: x", True)
    (text,) = _found("bre_group", failed, grep)
    assert text.startswith("grep's basic regex reads \\( as the start of a group")
    fixed = _cc('grep -rnF "unique([" database/migrations/', "a.php:30: x")
    assert _found("bre_group", failed, fixed)  # -F on the pattern unescaped
    rg = _cc('rg -n "unique\\(\\[" database/migrations/', "a.php:30: x")
    assert _found("bre_group", failed, rg)


def test_no_bre_lesson_for_an_extended_regex_or_another_pattern() -> None:
    extended = _cc('grep -rnE "unique\\(\\[" db/', _UNMATCHED, False, 2)
    assert not _found("bre_group", extended, _cc('grep -rnF "unique([" db/', "a:1: x"))
    failed = _cc('grep -rn "unique\\(\\[" db/', _UNMATCHED, False, 2)
    assert not _found("bre_group", failed, _cc('grep -rn "unique" db/', "a:1: x"))
    # the same escaped pattern again in grep: nothing learned of it
    assert not _found("bre_group", failed, _cc('grep -rn "unique\\(\\[" db/', "a:1: x"))


# -- one lesson learned in several runs: its support summed --------------------------------


def test_a_duplicate_add_credits_its_groups_to_the_lesson_kept() -> None:
    from agentmem.learning.consolidate import _dedup
    from agentmem.records import Operation

    text = "On this machine there is no container odoo18: the one meant was odoo_docker-web-1."
    ops = [
        Operation("ADD", text=text, group="correction:3", weight=2.0, facts=("odoo18",)),
        Operation("ADD", text=text, group="correction:9", weight=1.0, facts=("odoo18",)),
    ]
    kept, rejected = _dedup(ops, lambda _t: [], lambda a, b: float(a == b), 0.5)
    (op,) = kept
    assert op.group == "correction:3"
    assert op.detail["merged_groups"] == ["correction:3", "correction:9"]
    # the journal's readers (agentmem browse's lesson_runs) take the runs from the note
    assert op.note.endswith("the same lesson of groups correction:3, correction:9")
    assert [why.split(" (")[0] for _, why in rejected] == ["duplicates another ADD of this session"]


def test_the_lesson_runs_of_a_lesson_learned_twice_are_both_runs(tmp_path: Path) -> None:
    gone = "Error response from daemon: No such container: odoo18"
    listing = "NAMES\nodoo_docker-web-1\nodoo_docker-db-1"
    with Memory.open(tmp_path / "m.db") as mem:
        # a Bash run and a PowerShell run: two findings Stage 3's generalisation does not
        # merge (one run of each shell), so the second ADD is the first's duplicate
        for k, shell in enumerate((_cc, _pwsh)):
            mem.record(
                f"restart the odoo server, take {k}",
                [
                    shell("docker restart odoo18", gone, False),
                    shell("docker ps --format '{{.Names}}'", listing),
                    shell("docker restart odoo_docker-web-1", "odoo_docker-web-1"),
                ],
                accepted=True,
                meta={"cwd": "/w/odoo", "project": "/w/odoo"},
            )
        mem.learn(use_model=False)
        (lesson,) = [e for e in mem.experiences() if "odoo18" in e.text]
        from agentmem.browse.queries import LESSON_RUNS

        runs = {r[0] for r in mem.db.execute(LESSON_RUNS, {"lesson": lesson.id}).fetchall()}
        assert len(runs) == 2


# -- PowerShell's range operator ----------------------------------------------------------

_README = (
    "$lines = Get-Content README.md; $start = ($lines | Select-String -Pattern '## Usage' "
    "| Select-Object -First 1).LineNumber; "
)
_OP = (
    "InvalidOperation: Method invocation failed because [System.Object[]] does not contain "
    "a method named 'op_Subtraction'."
)


def test_a_range_bound_written_as_bare_arithmetic() -> None:
    # gordondalos-mail-agent: $lines[$start-1..($start+20)], twice; then $from..$to
    failed = _codex_ps(_README + "$lines[$start-1..($start+20)]", _OP, False)
    fixed = _codex_ps(
        _README + "$from=[Math]::Max(0,$start-1); $to=$start+30; $lines[$from..$to]", "## Usage"
    )
    (text,) = _found("range_first", failed, fixed)
    assert text.startswith("In PowerShell the range operator .. binds tighter than + and -")
    assert "write $lines[($start-1)..$end]" in text


def test_no_range_lesson_when_the_bound_stays_bare_or_the_job_changed() -> None:
    failed = _codex_ps(_README + "$lines[$start-1..($start+20)]", _OP, False)
    bare = _codex_ps(_README + "$lines[$start-1..$end] | Out-Null; 1..3", "1")
    assert not _found("range_first", failed, bare)
    other = _codex_ps("1..3 | ForEach-Object { $_ * 2 }", "2\n4\n6")
    assert not _found("range_first", failed, other)
    plain = _codex_ps("$a = 1; $a.Foo()", _OP, False)  # no range in it: another mistake
    assert not _found("range_first", plain, _codex_ps(_README + "$lines[($start-1)..9]", "x"))


# -- zsh's . of a bare name ---------------------------------------------------------------

_DOT = "(eval):.:1: no such file or directory: config.env"


def test_zsh_sources_a_bare_name_from_path_only() -> None:
    # pshung-personal-git: the call ran in /home/nick/work/hybrid_sim, which holds it
    failed = _cc(". config.env && make -C tests/fixtures -j8", _DOT, False, 127)
    fixed = _cc(". /home/nick/work/hybrid_sim/config.env && make -C tests/fixtures", "ok")
    (text,) = _found("dot_path", failed, fixed, cwd="/home/nick/work/hybrid_sim")
    assert text == (
        "The Bash tool runs zsh here: '. config.env' looks the name up on PATH, not in the "
        "folder ('no such file or directory: config.env'): source ./config.env or its full path."
    )
    dotted = _cc(". ./config.env && make", "ok")
    assert _found("dot_path", failed, dotted, cwd="/home/nick/work/hybrid_sim")


def test_no_dot_path_lesson_for_a_file_elsewhere() -> None:
    failed = _cc(". config.env && make", _DOT, False, 127)
    # the file was in another folder: where the project keeps it, not zsh's rule
    elsewhere = _cc(". /home/nick/work/other/config.env && make", "ok")
    assert not _found("dot_path", failed, elsewhere, cwd="/home/nick/work/hybrid_sim")
    # bash's own words for a missing file: bash looks in the folder too
    bash = _cc(". config.env", "bash: config.env: No such file or directory", False)
    assert not _found("dot_path", bash, dotted_ok := _cc(". ./config.env", "ok"))
    assert dotted_ok.success


# -- a wildcard no shell expanded, on Windows ----------------------------------------------

_OS123 = (
    "rg: src\\Api\\Controllers\\*.cs: IO error for operation on src\\Api\\Controllers\\*.cs: "
    "A sintaxe do nome do ficheiro, do nome do diretório ou da etiqueta do volume é "
    "incorreta. (os error 123)"
)


def test_a_wildcard_reaches_rg_whole_on_windows() -> None:
    # crm-admin: rg -n "..." src\\Ecommerce.API\\Controllers\\*.cs (exit 1), then the folder
    failed = _codex('rg -n "\\[Authorize|\\[Route" src\\Api\\Controllers\\*.cs', _OS123, False)
    folder = _codex('rg -n "\\[Authorize|\\[Route" src/Api/Controllers', "src/Api/A.cs:7:[Route]")
    (text,) = _found("windows_glob", failed, folder)
    assert text == (
        "In this Windows shell a wildcard path reaches rg unexpanded ('os error 123'): pass "
        "the folder and filter with -g GLOB, or name the files."
    )
    files = _codex('rg -n "Route" src/Api/Controllers/A.cs src/Api/Controllers/B.cs', "A.cs:7:x")
    assert _found("windows_glob", failed, files)


def test_no_windows_glob_lesson_for_another_folder_or_another_error() -> None:
    failed = _codex('rg -n "Route" src\\Api\\Controllers\\*.cs', _OS123, False)
    assert not _found("windows_glob", failed, _codex('rg -n "Route" src/Web', "src/Web/B.cs:1:x"))
    missing = _codex(
        'rg -n "Route" src/Api/*.cs', "rg: src/Api/*.cs: No such file or directory", False
    )
    assert not _found("windows_glob", missing, _codex('rg -n "Route" src/Api', "src/Api/A.cs:1:x"))


# -- PowerShell's automatic variables ------------------------------------------------------

_HOME = (
    "Cannot overwrite variable HOME because it is read-only or constant.\r\n"
    "    + FullyQualifiedErrorId : VariableNotWritable"
)


def test_an_automatic_variable_assigned_in_powershell() -> None:
    # blog-nevigation-b10: $home=Join-Path $env:USERPROFILE ...; then $userCodex
    failed = _codex(
        "$home=Join-Path $env:USERPROFILE '.codex/config.toml'; Get-Content $home", _HOME, False
    )
    renamed = _codex(
        "$userCodex=Join-Path $env:USERPROFILE '.codex'; Get-ChildItem $userCodex", "a"
    )
    (text,) = _found("ps_readonly", failed, renamed)
    assert text.startswith("In PowerShell $HOME is a read-only automatic variable")
    assert "give the script's variable another name" in text


def test_no_ps_readonly_lesson_without_the_rename() -> None:
    failed = _codex("$home=Join-Path $env:USERPROFILE '.codex'; Get-ChildItem $home", _HOME, False)
    again = _codex(
        "$HOME=Join-Path $env:USERPROFILE '.codex'; $x=Join-Path $env:USERPROFILE 'a'", ""
    )
    assert not _found("ps_readonly", failed, again)  # $HOME assigned again (case ignored)
    other = _codex("$x=Get-Location; Write-Output $x", "C:/")
    assert not _found("ps_readonly", failed, other)  # another value: not the rename


# -- zsh's glob in an option --------------------------------------------------------------


def test_an_unquoted_glob_in_an_option_under_zsh() -> None:
    # pshung-personal-git-b12: grep -rn X --include=*.hpp ... (zsh's eval reported it)
    said = "=== callers ===\n(eval):1: no matches found: --include=*.hpp"
    failed = _cc(
        'echo "=== callers ===" && grep -rn "stage_v" --include=*.hpp --include=*.cpp src tests'
        ' 2>/dev/null && echo "=== sites ==="',
        said,
        False,
    )
    dropped = _cc('grep -rn "stage_v" src tests 2>/dev/null', "src/sim.hpp:8:#include")
    (text,) = _found("glob", failed, dropped)
    assert text.startswith("In zsh an unquoted glob in an option (--include=*.hpp) is expanded")
    quoted = _cc("grep -rn \"stage_v\" --include='*.hpp' src tests", "src/sim.hpp:8:#include")
    assert _found("glob", failed, quoted)


def test_no_glob_option_lesson_for_another_search() -> None:
    said = "(eval):1: no matches found: --include=*.hpp"
    line = 'echo "=== callers ===" && grep -rn "stage_v" --include=*.hpp src && echo "=== end"'
    failed = _cc(line, said, False)
    assert not _found("glob", failed, _cc('grep -rn "other" src', "src/a.hpp:1:x"))
    again = _cc('grep -rn "stage_v" --include=*.hpp src', "src/a.hpp:1:x")  # it matched later
    assert not _found("glob", failed, again)


# -- apply_patch reads its lines literally ------------------------------------------------


def _patch(file: str, old: list[str], new: list[str], said: str = "") -> Step:
    body = "\n".join([f"-{x}" for x in old] + [f"+{x}" for x in new])
    text = f"*** Begin Patch\n*** Update File: {file}\n@@\n{body}\n*** End Patch"
    if said:
        out = f"apply_patch verification failed: Failed to find expected lines in {said}:\n"
        return Step("apply_patch", {"input": text}, out + "\n".join(old), False)
    return Step("apply_patch", {"input": text}, "Success. Updated the following files:", True)


def _literal(*steps: Step) -> list[str]:
    from agentmem.learning.hunk_order import literal_slips

    return [x.how for x in literal_slips(Trajectory(task="edit", steps=steps))]


_TASKS = "/w/bot/.specify/templates/tasks-template.md"


def test_line_numbers_copied_into_a_patch() -> None:
    # ai-trading-bot: lines from nl -ba (198\t```bash ...), then the same lines bare
    numbered = ["198\t```bash", "199\t# Launch all tests for User Story 1 (if tests requested):"]
    bare = ["```bash", "# Launch all tests for User Story 1 (if tests requested):"]
    failed = _patch(".specify/templates/tasks-template.md", numbered, numbered, _TASKS)
    look = Step("shell", {"command": ["bash", "-lc", "sed -n '196,220p' x"]}, "```bash", True)
    fixed = _patch(".specify/templates/tasks-template.md", bare, ["```sh", bare[1]])
    assert _literal(failed, look, fixed) == ["numbered"]
    run = Trajectory(task="edit", steps=(failed, look, fixed), accepted=True)
    (text,) = [c.finding.text for c in find_corrections(run) if c.kind == Kind.TOOL_RULE]
    assert text.startswith("apply_patch context lines must be the file's own text")


def test_a_tab_written_as_backslash_t() -> None:
    # liamrohan-dotfiles-b12: -\t<body ...> twice, then a real tab
    layout = "/w/web/src/layouts/Layout.astro"
    escaped = ['\\t<body class="min-h-screen bg-neutral-950">']
    failed = _patch(layout, escaped, ['\\t<body class="bg-background">'], layout)
    fixed = _patch(layout, ['\t<body class="min-h-screen bg-neutral-950">'], ["\t<body>"])
    assert _literal(failed, failed, fixed) == ["escaped", "escaped"]


def test_no_literal_slip_when_the_lines_changed_or_something_else_wrote_the_file() -> None:
    numbered = ["12\tdef main():", "13\t    run()"]
    failed = _patch("app.py", numbered, numbered, "/w/app.py")
    other = _patch("app.py", ["def other():"], ["def other(x):"])
    assert _literal(failed, other) == []  # other lines: not the same lines bare
    sed = Step("shell", {"command": ["bash", "-lc", "sed -i 's/run/go/' app.py"]}, "", True)
    fixed = _patch("app.py", ["def main():", "    run()"], ["def main():", "    go()"])
    assert _literal(failed, sed, fixed) == []  # the file was rewritten between
    assert _literal(failed, fixed) == ["numbered"]


# -- a script that shadows the module it imports -------------------------------------------

_SELF = (
    'Traceback (most recent call last):\n  File "/home/v/.config/waybar/scripts/calendar.py", '
    "line 2, in <module>\n    import calendar, json, os\n  File "
    '"/home/v/.config/waybar/scripts/calendar.py", line 33, in get_calendar\n'
    "    cal = calendar.TextCalendar(calendar.MONDAY)\n"
    "AttributeError: module 'calendar' has no attribute 'TextCalendar'"
)


def test_a_script_named_like_the_module_it_imports() -> None:
    # 4thehalibit-omarchy-backup-b6: calendar.py, renamed cal-widget.py
    failed = _cc("python3 ~/.config/waybar/scripts/calendar.py", _SELF, False)
    moved = _cc(
        "mv ~/.config/waybar/scripts/calendar.py ~/.config/waybar/scripts/cal-widget.py && "
        "python3 ~/.config/waybar/scripts/cal-widget.py",
        '{"text": "April"}',
    )
    (text,) = _found("shadowed", failed, moved, cwd="/home/v")
    assert text.startswith("A Python script named like a standard module (calendar.py)")


def test_no_shadowed_lesson_without_the_rename_or_the_self_import() -> None:
    failed = _cc("python3 ~/.config/waybar/scripts/calendar.py", _SELF, False)
    other = _cc("mv ~/notes/calendar.py ~/notes/cal.py", "")
    assert not _found("shadowed", failed, other, cwd="/home/v")  # another file renamed
    lib = _SELF.replace("/home/v/.config/waybar/scripts/calendar.py", "/usr/lib/x/app.py")
    moved = _cc("mv ~/.config/waybar/scripts/calendar.py ~/.config/waybar/scripts/c.py", "")
    assert not _found("shadowed", _cc("python3 app.py", lib, False), moved, cwd="/home/v")


def test_a_machine_fact_of_another_project_is_not_folded_into_the_lesson_kept() -> None:
    # a machine's fact is served in the project whose runs taught it: a duplicate from
    # another user's project would move it there (to the newest run's project)
    from agentmem.learning.consolidate import _dedup
    from agentmem.learning.findings import Finding
    from agentmem.records import Operation

    text = "In zsh an unquoted path with [ ], * or ? is a glob pattern: quote the path."

    def add(group: str, project: str) -> Operation:
        f = Finding(
            Kind.SHELL, "zsh", "", text, ("zsh",), detail={"scope": "machine", "project": project}
        )
        return Operation(
            "ADD", text=text, group=group, weight=1.0, facts=("zsh",), detail={"evidence": f}
        )

    same = _dedup([add("g1", "/w/a"), add("g2", "/w/a")], lambda _t: [], lambda a, b: 1.0, 0.5)
    assert same[0][0].detail["merged_groups"] == ["g1", "g2"]
    other = _dedup([add("g1", "/w/a"), add("g2", "/w/b")], lambda _t: [], lambda a, b: 1.0, 0.5)
    (kept,) = other[0]
    assert "merged_groups" not in kept.detail and len(other[1]) == 1
