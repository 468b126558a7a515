"""The false lessons of blind set 14's first try, each a case of a general class (synthetic
runs shaped as the real ones; the real runs are in the validation half, not here)."""

from __future__ import annotations

from agentmem.learning.corrections import find_corrections
from agentmem.learning.evidence import can_stand_in, name_parts
from agentmem.records import Step, Trajectory


def _run(*steps: Step) -> Trajectory:
    return Trajectory(task="do the thing", steps=steps, meta={"project": "/w/p"}, accepted=True)


def _kinds(*steps: Step) -> list[str]:
    return [str(c.kind) for c in find_corrections(_run(*steps))]


def _call(tool: str, params: dict[str, object], output: str, ok: bool = True) -> Step:
    return Step(tool=tool, params=params, output=output, success=ok)


_LIST = "mcp__filesystem__list_directory"
_THINK = "mcp__shrimp-task__process_thought"


def test_an_mcp_tool_s_name_parts_are_its_tool_part():
    """``mcp`` (and the server's name) is shared by tools that do other jobs."""
    assert name_parts(_THINK) == {"process", "thought"}
    assert name_parts(_LIST) == {"list", "directory"}
    assert name_parts("mcp__n8n-mcp__n8n_get_node") & name_parts("mcp__n8n-mcp__get_node")
    assert name_parts("get_weather") == {"get", "weather"}  # a plain name as before


def test_a_thinking_tool_never_stands_in_for_a_refused_listing():
    """A listing refused outside the server's allowed folders, then a thinking tool: "use
    process_thought instead" was the first try's lesson."""
    denied = _call(
        _LIST,
        {"path": "K:/tools"},
        "Error: Access denied - path outside allowed directories: K:\\tools not in K:\\app",
        ok=False,
    )
    think = _call(_THINK, {"thought": "the user wants it run directly", "thought_number": 1}, "ok")
    assert not can_stand_in((), think, denied)
    assert _kinds(denied, think) == []
    # control: a tool of the same job on the same path still stands in
    other = _call("mcp__desktop__list_directory", {"path": "K:/tools"}, "a.txt")
    assert can_stand_in((), other, denied)


def test_a_path_that_is_not_there_then_another_tool_elsewhere_teaches_no_switch():
    """Grep of a folder that does not exist, then Glob of a pattern over the project: the
    path was wrong, not the tool ("Use Glob, not Grep" was the first try's lesson)."""
    missing = _call(
        "Grep",
        {"pattern": "toast|Toaster", "path": "/w/p/src/components/providers"},
        "<tool_use_error>Path does not exist: /w/p/src/components/providers</tool_use_error>",
        ok=False,
    )
    glob = _call("Glob", {"pattern": "**/*toast*"}, "/w/p/src/lib/toast.tsx")
    assert _kinds(missing, glob) == []
    no_file = _call(
        "Read",
        {"file_path": "/w/p/src/lib/toast.ts"},
        "<tool_use_error>File does not exist.</tool_use_error>",
        ok=False,
    )
    assert _kinds(no_file, glob) == []


def test_write_of_the_very_file_an_edit_missed_still_teaches():
    """The guard is on where the next tool acted: Write of the same new file after Edit
    said it does not exist is a switch of tools the run shows."""
    edit = _call(
        "Edit",
        {"file_path": "/w/p/notes.md", "old_string": "", "new_string": "hi"},
        "<tool_use_error>File does not exist.</tool_use_error>",
        ok=False,
    )
    write = _call("Write", {"file_path": "/w/p/notes.md", "content": "hi"}, "File created")
    assert _kinds(edit, write) == ["wrong_tool"]


def test_a_code_mode_script_is_code_never_a_value_to_tell():
    """Codex code mode's ``exec`` takes a JavaScript script as ``input``; a script that
    failed, then another that worked, taught "Call exec with input like const r = ...;
    never pass input=..." at the first try."""
    from agentmem.agents import command_params

    assert command_params("exec") == frozenset({"input"})
    bad = 'const r = await tools.shell_command({command: "rg -n \\"a\\\\(\\" src"}); text(r)'
    good = 'const r = await tools.shell_command({command: "rg -n -F \\"a(\\" src"}); text(r)'
    failed = _call(
        "exec",
        {"input": bad},
        "Script failed\nWall time 0.2 seconds\nOutput:\n\nScript error:\nExit code: 1\n"
        "rg: regex parse error:\n    (?:a\\()\n    ^\nerror: unclosed group",
        ok=False,
    )
    worked = _call("exec", {"input": good}, "Script completed\nOutput:\nsrc/x.ts:3:a(")
    assert _kinds(failed, worked) == []


def test_a_failed_code_mode_script_is_the_script_s_failure():
    """A script that failed is read as code's failure, as a test run's is: no recovery
    lesson ("If exec fails with 'Exit code: 1', retry exec with a corrected input")."""
    from agentmem.agents import Failure, outcome

    failed = _call(
        "exec",
        {"input": 'const r = await tools.shell_command({command: "rg -n foo src"}); text(r)'},
        "Script failed\nWall time 0.3 seconds\nOutput:\n\nScript error:\nExit code: 1\n",
        ok=False,
    )
    assert outcome(failed).failure is Failure.CODE
    worked = _call(
        "exec",
        {"input": 'const r = await tools.shell_command({command: "rg -n bar src"}); text(r)'},
        "Script completed\nOutput:\nsrc/a.ts:1:bar",
    )
    assert _kinds(failed, worked) == []


_CAC = (
    "\n> x@0.1.0 test\n> vitest run --runInBand\n\nfile:///w/p/node_modules/vitest/cac.js:403\n"
    "          throw new CACError(`Unknown option ${name}`);\n                ^\n\n"
    "CACError: Unknown option `--runInBand`\n    at Command.checkUnknownOptions (file:///x.js:1:1)\n"
)


def test_node_s_uncaught_exception_is_the_diagnostic_not_its_source_line():
    """Node prints the file, the source line, a caret, then the exception: the exception
    line says what went wrong, and an unknown option there is a misuse of the runner."""
    from agentmem.agents import Failure, outcome

    failed = Step("Bash", {"command": "npm test -- --runInBand"}, "Exit code 1\n" + _CAC, False)
    o = outcome(failed)
    assert o.diagnostic == "CACError: Unknown option `--runInBand`"
    assert o.failure is Failure.MISUSE


def test_an_option_passed_on_after_dashes_is_an_option_of_the_project_s_runner():
    """``npm test -- --runInBand`` failed (vitest has no such option), ``npm test`` worked:
    the lesson drops the option, for this project only (its runner is the project's)."""
    from agentmem.agents import learning_view
    from agentmem.learning.shell_fixes import find_shell_fixes

    steps = (
        Step("Bash", {"command": "npm test -- --runInBand"}, "Exit code 1\n" + _CAC, False),
        Step("Bash", {"command": "npm test"}, "Test Files  3 passed (3)"),
    )
    t = Trajectory(task="run the tests", steps=steps, meta={"cwd": "/w/p"})
    (fix,) = find_shell_fixes(learning_view(t))
    assert fix.finding.text.startswith("Run npm test without --runInBand")
    assert fix.finding.detail["scope"] == "project"


def test_a_path_in_a_git_submodule_is_staged_there_not_left_out():
    """git names the submodule a path belongs to; "leave it out" (the first try's lesson)
    left the files unstaged, while the run later staged them inside the submodule."""
    from agentmem.agents import learning_view
    from agentmem.learning.shell_fixes import find_shell_fixes

    said = "Exit code 128\nfatal: Pathspec 'api/src/x/' is in submodule 'api'"
    steps = (
        Step("Bash", {"command": "git add api/src/x/ docs/a.md"}, said, False),
        Step("Bash", {"command": "git add docs/a.md"}, ""),
    )
    t = Trajectory(task="commit it", steps=steps, meta={"cwd": "/home/ken"})
    (fix,) = find_shell_fixes(learning_view(t))
    assert "is in the git submodule api" in fix.finding.text
    assert "(git -C api add)" in fix.finding.text and "leave it out" not in fix.finding.text


_DE_PARSER = (
    "Process exited with code 1\nOutput:\nIn Zeile:1 Zeichen:14\r\n+ apply_patch << 'PATCH'\r\n"
    "+              ~\r\nDateispezifikation nach dem Umleitungsoperator fehlt.\r\n"
    "    + CategoryInfo          : ParserError: (:) [], ParentContainsErrorRecordException\r\n"
    "    + FullyQualifiedErrorId : MissingFileSpecification\r\n"
)


def test_powershell_has_no_heredoc_in_any_language():
    """Codex on a German Windows ran ``apply_patch << 'PATCH'`` through powershell
    -Command; PowerShell's parser refused it (its framing, not its words, says so), and
    apply_patch called on its own worked. A PowerShell runtime error is no such refusal."""
    from agentmem.agents import Failure, outcome

    script = "apply_patch << 'PATCH'\n*** Begin Patch\n*** Add File: a.md\n+x\n*** End Patch\nPATCH"
    argv = ["powershell.exe", "-NoProfile", "-Command", script]
    failed = Step("shell", {"command": argv}, _DE_PARSER, False)
    o = outcome(failed)
    assert o.failure is Failure.MISUSE
    assert o.diagnostic == "Dateispezifikation nach dem Umleitungsoperator fehlt."
    patch = "*** Begin Patch\n*** Add File: a.md\n+x\n*** End Patch"
    worked = Step("shell", {"command": ["apply_patch", patch]}, "Success. Updated: A a.md")
    (c,) = find_corrections(_run(failed, worked))
    assert c.finding.text.startswith("Here the shell is PowerShell, which has no << heredoc")
    assert "run apply_patch as its own call" in c.finding.text
    # the same program fed the same way again: no way out shown
    again = Step("shell", {"command": argv}, _DE_PARSER, False)
    assert _kinds(failed, again) == []
