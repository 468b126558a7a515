"""A coding agent's tool rules ("Read the file first, then retry") judged file by file.

Fixtures are our own: a few Claude Code calls written here, not transcript text.
"""

from __future__ import annotations

from agentmem.learning.corrections import find_corrections
from agentmem.learning.kinds import Kind
from agentmem.learning.rules import Rule, applies, follows
from agentmem.records import Step, Trajectory

NOT_READ = (
    "<tool_use_error>File has not been read yet. "
    "Read it first before writing to it.</tool_use_error>"
)
CHANGED = (
    "<tool_use_error>File has been modified since read, either by the user or by a linter. "
    "Read it again before attempting to write it.</tool_use_error>"
)
#: The kept working directory's one lesson, whatever the slip (tests/test_kept_cwd.py).
KEPT_CWD = (
    "Bash keeps the working directory between calls, and Glob and Grep resolve relative paths "
    "from it: after a cd into a subfolder, project root paths are not found; use absolute "
    "paths."
)
READ_FIRST = Rule(Kind.TOOL_RULE, ("Write", "Edit"), helper="Read", error="File has not been read")


def _write(path: str, ok: bool = True, out: str = "") -> Step:
    return Step("Write", {"file_path": path, "content": "x = 1\n"}, out or "written", ok)


def _edit(path: str, ok: bool = True, out: str = "") -> Step:
    return Step("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, out or "ok", ok)


def _read(path: str) -> Step:
    return Step("Read", {"file_path": path}, "1\ta = 0", True)


def _bash(command: str) -> Step:
    return Step("Bash", {"command": command}, "", True)


def test_a_run_that_gives_the_file_up_neither_follows_nor_contradicts() -> None:
    # Write refused notes.py; the agent wrote it with a heredoc instead and went on to
    # write another, new file: no Write of notes.py worked, so the rule is not tested
    steps = [
        _write("/p/notes.py", False, NOT_READ),
        _bash("cat > notes.py << 'EOF'\nx = 1\nEOF"),
        _write("/p/other.py"),
    ]
    assert not applies(READ_FIRST, "write the notes", steps)


def test_the_same_file_written_after_a_read_follows() -> None:
    steps = [_edit("/p/a.py", False, NOT_READ), _read("/p/a.py"), _edit("/p/a.py")]
    assert applies(READ_FIRST, "fix a", steps)
    assert follows(READ_FIRST, "fix a", steps)


def test_the_same_file_written_without_a_read_contradicts() -> None:
    # a Read of another file is not the Read the rule asks for
    steps = [_edit("/p/a.py", False, NOT_READ), _read("/p/b.py"), _edit("/p/a.py")]
    assert applies(READ_FIRST, "fix a", steps)
    assert not follows(READ_FIRST, "fix a", steps)


def test_modified_since_read_is_a_tool_rule() -> None:
    t = Trajectory(
        task="tidy the module",
        steps=(
            _read("/p/m.py"),
            _edit("/p/m.py", False, CHANGED),
            _read("/p/m.py"),
            _edit("/p/m.py"),
        ),
        accepted=True,
    )
    [c] = find_corrections(t)
    assert c.kind == Kind.TOOL_RULE
    assert c.finding.detail["rule_error"] == "has been modified since read"
    assert "Read the file first, then retry" in c.finding.text


def test_the_read_a_refused_edit_needs_is_the_rule_where_the_record_ends() -> None:
    """Real (validation, wave 9): Edits refused 'File has not been read yet', the Reads of
    those files, and the record ends (a short excerpt, a session cut off). The rule is the
    client's own (:attr:`ToolSpec.needs`), and the run made the call it names: learned. The
    same Edit refused again after the Read is no fix; a Read of another file none."""

    def run(*steps: Step) -> list[str]:
        t = Trajectory(task="fix a", steps=steps, accepted=True)
        return [c.finding.text for c in find_corrections(t) if c.kind == Kind.TOOL_RULE]

    [text] = run(_edit("/p/a.py", False, NOT_READ), _read("/p/a.py"))
    assert text.startswith("If Edit fails with 'File has not been read yet', Read the file")
    assert run(_edit("/p/a.py", False, NOT_READ), _read("/p/a.py"), _edit("/p/a.py")) == [text]
    again = _edit("/p/a.py", False, NOT_READ)
    assert run(_edit("/p/a.py", False, NOT_READ), _read("/p/a.py"), again) == []
    assert run(_edit("/p/a.py", False, NOT_READ), _read("/p/b.py")) == []


def test_the_read_first_rule_is_a_lesson_once_the_slip_repeats(tmp_path) -> None:
    """Its error says what to do ("Read it first before writing to it"); the wave 9 reader
    judged the lesson from one slip useless. As for a tool's other self-explaining rules,
    one slip teaches nothing; two, in one run or across the library's runs, do."""
    from agentmem import Memory

    once = [_edit("/p/a.py", False, NOT_READ), _read("/p/a.py"), _edit("/p/a.py")]
    twice = [
        _edit("/p/a.py", False, NOT_READ),
        _edit("/p/b.py", False, NOT_READ),
        _read("/p/a.py"),
        _read("/p/b.py"),
        _edit("/p/a.py"),
        _edit("/p/b.py"),
    ]

    def learned(*runs: list[Step]) -> list[str]:
        with Memory.open(tmp_path / f"m{len(runs)}{len(runs[0])}.db", embedder="hash") as mem:
            for n, steps in enumerate(runs):
                mem.record(f"fix the module {n}", steps, accepted=True)
            mem.learn(use_model=False)
            return [e.text for e in mem.experiences() if "not been read" in e.text]

    assert learned(once) == []
    assert len(learned(twice)) == 1
    assert len(learned(once, once)) == 1


def test_a_call_without_a_recorded_result_teaches_nothing() -> None:
    """A transcript cut before a call's result (the importer's NO_RESULT) says nothing of
    what the call did: no correction is made of it, as of an interrupted call (it once
    taught "If Write fails with '(no result recorded)', call Read and retry")."""
    from agentmem.agents import outcome
    from agentmem.agents.base import Failure
    from agentmem.records import NO_RESULT

    cut = _write("/p/a.py", False, NO_RESULT)
    assert outcome(cut).failure is Failure.INTERRUPTED
    t = Trajectory(task="write a", steps=(cut, _read("/p/a.py"), _write("/p/a.py")), accepted=True)
    assert find_corrections(t) == []


def test_a_record_missing_the_read_does_not_hold_the_clients_own_rule(tmp_path) -> None:
    """Real (validation, wave 9): 48 runs proved "If Edit fails with 'File has not been read
    yet', Read the file first"; two excerpts that kept an Edit refused, then the same Edit
    working with no Read between (the record lacked it, or held it without a result),
    held the lesson as "an accepted run did otherwise". The client enforces its own rule,
    so no run refutes it."""
    from agentmem import Memory
    from agentmem.records import NO_RESULT

    proof = [_edit("/p/a.py", False, NOT_READ), _read("/p/a.py"), _edit("/p/a.py")]
    gap = [_edit("/p/b.py", False, NOT_READ), _edit("/p/b.py")]
    cut = [
        _edit("/p/c.py", False, NOT_READ),
        Step("Read", {"file_path": "/p/c.py"}, NO_RESULT, False),
    ]
    with Memory.open(tmp_path / "m.db", embedder="hash") as mem:
        for task in ("fix a", "fix a too"):
            mem.record(task, proof, accepted=True)
        mem.record("fix b", gap, accepted=True)
        mem.record("fix c", [*cut, _edit("/p/c.py")], accepted=True)
        mem.learn(use_model=False)
        texts = [e.text for e in mem.experiences()]
    assert any(t.startswith("If Edit fails with 'File has not been read yet'") for t in texts)
    assert not any("no result" in t for t in texts)


# ------------------------------------------------ a tool's own refusal, then another way


BINARY = (
    "<tool_use_error>This tool cannot read binary files. The file appears to be a binary "
    ".xlsx file. Please use appropriate tools for binary file analysis.</tool_use_error>"
)


def _sh(command: str, out: str, ok: bool = True) -> Step:
    return Step("Bash", {"command": command, "description": "x"}, out, ok)


def test_read_of_a_binary_file_then_a_program_that_read_it() -> None:
    """Real positive (deder01, development half): Read refused consolidated.xlsx; python3
    without openpyxl failed, then `pip install openpyxl && python3 -c ...` on the same file
    worked: what the tool refuses, and what worked."""
    path = "/home/u/finance/consolidated.xlsx"
    script = f"python3 -c \"import openpyxl; print(openpyxl.load_workbook('{path}'))\""
    run = Trajectory(
        task="why are AF39 and AA50 off by 2 cents in consolidated.xlsx",
        steps=(
            Step("Read", {"file_path": path}, BINARY, False),
            _sh(script, "Exit code 1\nModuleNotFoundError: No module named 'openpyxl'", False),
            _sh(f"pip install openpyxl --quiet && {script}", "Sheets: ['Spending']"),
        ),
    )
    (c,) = [c for c in find_corrections(run) if c.kind == Kind.TOOL_RULE]
    assert (c.failed, c.fixed) == (0, 2)
    assert c.finding.text == (
        "Read refuses a binary .xlsx file ('This tool cannot read binary files'): python3 in "
        "Bash did it instead."
    )
    assert c.finding.detail["scope"] == "tool" and not c.finding.detail.get("repeats")


def test_read_of_a_binary_file_that_the_run_only_looked_at_teaches_nothing() -> None:
    """Negative (from the structural definition; the development half has no second binary
    Read): after the refusal the run only listed the file (ls: a look, not a way to read
    it), or Read later took the very same file (the refusal did not hold)."""
    path = "/w/data/report.pdf"
    looked = Trajectory(
        task="summarise the report",
        steps=(
            Step("Read", {"file_path": path}, BINARY, False),
            _sh(f"ls -la {path}", "-rw-r--r-- 1 u u 9 report.pdf"),
        ),
    )
    assert [c for c in find_corrections(looked) if c.kind == Kind.TOOL_RULE] == []
    typed = Trajectory(
        task="summarise the report",
        steps=(
            Step("Read", {"file_path": path}, BINARY, False),
            _sh(f"file {path}", "report.pdf: PDF document, version 1.4"),
            _sh(f"cp {path} /tmp/report.pdf && echo copied", "copied"),
        ),
    )
    assert [c for c in find_corrections(typed) if c.kind == Kind.TOOL_RULE] == []
    again = Trajectory(
        task="summarise the report",
        steps=(
            Step("Read", {"file_path": path}, BINARY, False),
            Step("Read", {"file_path": path}, "1\t%PDF", True),
            _sh(f"pdftotext {path} -", "Report"),
        ),
    )
    assert [c for c in find_corrections(again) if c.kind == Kind.TOOL_RULE] == []


def test_webfetch_of_a_local_address_then_curl() -> None:
    """Real positive (captainrandom00, development half): WebFetch of http://localhost:3001
    said 'Invalid URL'; eight calls later `curl -s http://localhost:3001 | head -200`
    fetched it."""
    url = "http://localhost:3001"
    glob = Step("Glob", {"pattern": "agents/*.md"}, "/u/.claude/agents/a.md", True)
    run = Trajectory(
        task=f"access my site on {url} and assess our agents",
        steps=(
            Step("WebFetch", {"url": url, "prompt": "list the services"}, "Invalid URL", False),
            glob,
            _sh("which npx", "/usr/local/bin/npx"),
            _sh(f"curl -s {url} | head -200", "<html><title>Services</title>"),
        ),
    )
    (c,) = [c for c in find_corrections(run) if c.kind == Kind.TOOL_RULE]
    assert c.fixed == 3
    assert c.finding.text == (
        "WebFetch refuses a local address such as http://localhost:3001 ('Invalid URL'): curl "
        "in Bash did it instead."
    )


def test_webfetch_failures_of_the_world_or_of_a_remote_url_teach_nothing() -> None:
    """Real negative (ariffazil, development half, a trap of kind environment): WebFetch of a
    host that does not resolve ('getaddrinfo ENOTFOUND') is the world's; and 'Invalid URL'
    for a remote address names no class of target a lesson may state."""
    for url, out in (
        ("https://wiki.example.com/", "getaddrinfo ENOTFOUND wiki.example.com"),
        ("https://wiki.example.com/", "Invalid URL"),
    ):
        run = Trajectory(
            task="check the wiki",
            steps=(
                Step("WebFetch", {"url": url, "prompt": "list"}, out, False),
                _sh(f"curl -s {url}", "<html>"),
            ),
        )
        assert [c for c in find_corrections(run) if c.kind == Kind.TOOL_RULE] == []


SETTINGS = (
    "<tool_use_error>Claude Code settings.json validation failed after edit:\nSettings "
    "validation failed:\n- : Unrecognized field: {}. Check for typos or refer to the "
    "documentation for valid fields\n\nFull schema:\n{{}}</tool_use_error>"
)


def _settings_edit(new: str, out: str, ok: bool) -> Step:
    params = {"file_path": "/home/u/.claude/settings.json", "old_string": "{", "new_string": new}
    return Step("Edit", params, out, ok)


def test_a_settings_key_the_client_refuses_then_left_out() -> None:
    """Real positive (buiviethoang, development half): Edit of ~/.claude/settings.json adding
    hasCompletedOnboarding was refused by Claude Code's own settings check; the same Edit
    without that key worked."""
    run = Trajectory(
        task="upsert this .claude into ~/.claude",
        steps=(
            _settings_edit(
                '{"env": {}, "hasCompletedOnboarding": true',
                SETTINGS.format("hasCompletedOnboarding"),
                False,
            ),
            _settings_edit('{"env": {}', "The file has been updated successfully.", True),
        ),
    )
    (c,) = [c for c in find_corrections(run) if c.kind == Kind.TOOL_RULE]
    assert c.finding.text == (
        "Edit is refused when the file gets a key its schema does not know ('settings.json "
        "validation failed ... Unrecognized field: hasCompletedOnboarding'): leave that key out "
        "of the file."
    )
    assert c.finding.facts == ("Edit", "settings.json", "hasCompletedOnboarding")


def test_a_settings_key_never_left_out_teaches_nothing() -> None:
    """Real negative (christianromney, development half, a trap: no fix in the run): the
    refused key (installationMethod) was already in the file, not the edit's, and no edit
    without it followed."""
    run = Trajectory(
        task="tidy my settings",
        steps=(
            _settings_edit('{"model": "opus"', SETTINGS.format("installationMethod"), False),
            _read("/home/u/.claude/settings.json"),
        ),
    )
    assert [c for c in find_corrections(run) if c.kind == Kind.TOOL_RULE] == []


def test_a_settings_key_refused_then_another_edit_is_no_correction() -> None:
    """A later edit of the same file that only does something else gave the goal up (a
    blind set's lesson said "leave that key out" after the agent added an unrelated
    setting instead): nothing the refused edit meant is in it, so it teaches nothing."""
    path, old = "/home/u/.claude/settings.json", '{\n  "model": "haiku"\n}'

    def edit(new: str, out: str, ok: bool) -> Step:
        return Step("Edit", {"file_path": path, "old_string": old, "new_string": new}, out, ok)

    refused = edit(
        '{\n  "model": "haiku",\n  "disableIDEExtensionCheck": true\n}',
        SETTINGS.format("disableIDEExtensionCheck"),
        False,
    )
    done = "The file has been updated successfully."
    other = edit(
        '{\n  "model": "haiku",\n  "permissions": {"defaultMode": "default"}\n}', done, True
    )
    run = Trajectory(task="stop the IDE extension check", steps=(refused, other))
    assert [c for c in find_corrections(run) if c.kind == Kind.TOOL_RULE] == []
    # the same edit less the key, with the rest it meant: the correction stands
    meant = edit(
        '{\n  "model": "haiku",\n  "disableIDEExtensionCheck": true,\n  "theme": "dark"\n}',
        SETTINGS.format("disableIDEExtensionCheck"),
        False,
    )
    kept = edit('{\n  "model": "haiku",\n  "theme": "dark"\n}', done, True)
    run = Trajectory(task="dark theme, no IDE check", steps=(meant, kept))
    assert len([c for c in find_corrections(run) if c.kind == Kind.TOOL_RULE]) == 1


ARRAY_AS_STRING = (
    "<tool_use_error>InputValidationError: AskUserQuestion failed due to the following "
    "issue:\nThe parameter `questions` type is expected as `array` but provided as "
    "`string`</tool_use_error>"
)


def test_an_array_passed_as_its_json_text_then_as_an_array() -> None:
    """Real positive (huzhongyin, development half): AskUserQuestion's questions written as a
    string holding JSON (cut short, as it was) was refused by the tool's schema; the same
    call with questions as an array worked."""
    q = [{"header": "UC1", "question": "How?", "options": [{"label": "a"}, {"label": "b"}]}]
    text = '[{"header": "UC1", "multiSelect": false, "options": [{"label": "a"}'
    run = Trajectory(
        task="ask me which way",
        steps=(
            Step("AskUserQuestion", {"questions": text}, ARRAY_AS_STRING, False),
            Step("AskUserQuestion", {"questions": q}, 'User has answered: "How?"="a"', True),
        ),
    )
    (c,) = find_corrections(run)
    assert c.kind == Kind.TOOL_RULE and (c.failed, c.fixed) == (0, 1)
    assert c.finding.text.startswith(
        "Pass the questions parameter of AskUserQuestion as a JSON array itself, not a string"
    )


def test_other_schema_errors_after_a_one_off_slip_teach_nothing() -> None:
    """Real negatives (development half): AskUserQuestion given one option where two are
    the minimum (886caigudong: 'too_small'), and Task called without its prompt
    (a trap, tool-internal): the error said what was wrong, the slip does not recur."""
    small = (
        '<tool_use_error>InputValidationError: [{"origin": "array", "code": "too_small", '
        '"minimum": 2, "path": ["questions", 0, "options"]}]</tool_use_error>'
    )
    one = [{"question": "Go?", "options": [{"label": "yes"}]}]
    two = [{"question": "Go?", "options": [{"label": "yes"}, {"label": "no"}]}]
    missing = (
        "<tool_use_error>InputValidationError: Task failed due to the following issue:\n"
        "The required parameter `prompt` is missing</tool_use_error>"
    )
    for steps in (
        (
            Step("AskUserQuestion", {"questions": one}, small, False),
            Step("AskUserQuestion", {"questions": two}, "answered", True),
        ),
        (
            Step("Task", {"description": "x"}, missing, False),
            Step("Task", {"description": "x", "prompt": "look"}, "done", True),
        ),
    ):
        assert find_corrections(Trajectory(task="ask", steps=steps)) == []


def test_a_tool_switch_after_a_url_or_a_pattern_given_as_a_path_is_no_wrong_tool() -> None:
    """Structural (the development half has no example of this trap): a file tool given a
    URL (or a glob) as its path failed; another tool then took the same value and worked.
    The argument was no path: no "use fetch_url, not read_file". The same switch after a
    real path failed is still a wrong tool (the guard looks at the argument only)."""
    from agentmem.learning.corrections import malformed_target

    url = "https://docs.example.com/api/reference"
    gone = "ENOENT: no such file or directory"

    def switch(value: str) -> Trajectory:
        return Trajectory(
            task="summarise the reference",
            steps=(
                Step("read_file", {"path": value}, gone, False),
                Step("fetch_url", {"url": value}, "The API has 3 calls", True),
            ),
            accepted=True,
        )

    assert [c for c in find_corrections(switch(url)) if c.kind == Kind.WRONG_TOOL] == []
    real = [c for c in find_corrections(switch("docs/api.md")) if c.kind == Kind.WRONG_TOOL]
    assert len(real) == 1  # the guard is what keeps the URL case out
    assert malformed_target(Step("Read", {"file_path": url}, gone, False))
    assert malformed_target(Step("Read", {"file_path": "src/**/*.ts"}, gone, False))
    assert not malformed_target(Step("Read", {"file_path": "app/[id]/page.tsx"}, gone, False))
    assert not malformed_target(Step("WebFetch", {"url": url}, "Invalid URL", False))


def test_a_tool_the_client_does_not_have_then_another_job_is_no_wrong_tool() -> None:
    """Real (blind set 9, read after its first try): WebReader called with a URL failed "No
    such tool available: WebReader" (the session's tool was webReader, lower case), and a
    WebSearch ran next: "Use WebSearch, not WebReader, for this step" changed the job. The
    fix of a name the client lacks is the name; a switch to a tool of that name (another
    case, an MCP server's) still teaches."""
    gone = "<tool_use_error>Error: No such tool available: WebReader</tool_use_error>"

    def switch(tool: str) -> list:
        t = Trajectory(
            task="read the page",
            steps=(
                Step("WebReader", {"url": "https://example.com/a"}, gone, False),
                Step(tool, {"query": "example.com page a"}, "page text", True),
            ),
            accepted=True,
        )
        return [c for c in find_corrections(t) if c.kind == Kind.WRONG_TOOL]

    assert switch("WebSearch") == []
    assert len(switch("mcp__web_reader__webReader")) == 1
    # the client's error tag is framing: never inside a lesson's quote
    from agentmem.learning.findings import quote_error

    assert quote_error(gone) == "Error: No such tool available: WebReader"


def test_a_second_cd_into_the_folder_the_shell_stands_in() -> None:
    """Real positive (uumk0n, development half): `cd apps/api && pnpm exec tsc` worked, so
    Claude Code's Bash stood in apps/api; `cd apps/api && npx tsc --noEmit` then failed
    ('no such file or directory: apps/api') and `npx tsc --noEmit` alone worked. The lesson
    is the client's shell (it keeps its folder), not where the project keeps apps/api."""
    first = _sh("cd apps/api && pnpm exec tsc --noEmit 2>&1 | head -50", "tsc output")
    again = _sh(
        "cd apps/api && npx tsc --noEmit 2>&1 | head -60",
        "Exit code 1\n(eval):cd:1: no such file or directory: apps/api",
        False,
    )
    alone = _sh("npx tsc --noEmit 2>&1 | head -60", "tsc output")
    (c,) = find_corrections(Trajectory(task="add google sign-in", steps=(first, again, alone)))
    assert c.kind == Kind.TOOL_RULE and (c.failed, c.fixed) == (1, 2)
    assert c.finding.text == KEPT_CWD
    assert c.finding.facts == ("Bash", "cd") and c.finding.detail["folder"] == "apps/api"


def test_a_cd_that_failed_for_another_reason_teaches_no_kept_folder() -> None:
    """Negatives: no earlier cd into that folder (the folder is really missing); a cd
    elsewhere in between (the shell left it); a client whose shell starts afresh each call
    (Codex: a workdir per call); and the real trap shape of trollz1004 (development half),
    where `cd "C:/Users/.../admin" && npx vite build` failed on vite, not on the folder."""
    again = _sh(
        "cd apps/api && npx tsc --noEmit",
        "Exit code 1\n(eval):cd:1: no such file or directory: apps/api",
        False,
    )
    alone = _sh("npx tsc --noEmit", "ok")
    first = _sh("cd apps/api && ls", "src")
    back = _sh("cd .. && ls", "apps")
    for steps in ((again, alone), (first, back, again, alone)):
        assert find_corrections(Trajectory(task="check types", steps=steps)) == []
    codex = tuple(
        Step("shell_command", {"command": s.params["command"]}, s.output, s.success)
        for s in (first, again, alone)
    )
    assert [
        c for c in find_corrections(Trajectory(task="t", steps=codex)) if c.kind == Kind.TOOL_RULE
    ] == []
    win = "C:/Users/j/dating-platform/admin"
    vite = _sh(
        f'cd "{win}" && npx vite build',
        "Exit code 127\n/usr/bin/bash: line 1: vite: command not found",
        False,
    )
    steps = (_sh(f'cd "{win}" && ls', "src"), vite, _sh("npx vite build", "built"))
    assert [
        c for c in find_corrections(Trajectory(task="b", steps=steps)) if c.kind == Kind.TOOL_RULE
    ] == []


def test_a_path_from_the_project_top_after_a_cd_teaches_the_kept_folder() -> None:
    """Synthetic (no development-half run shows this face): `cd apps/api && pnpm test`
    worked, so Claude Code's Bash stood in apps/api; `cat apps/api/src/env.ts` then failed
    ('No such file' naming it) and the same path from the session's folder worked
    (`cat /w/app/apps/api/src/env.ts`, or `cd /w/app && cat apps/api/src/env.ts`): the
    client's shell keeps its folder. Negatives: no earlier cd (the file is really missing),
    the cd before it went back home, another path then worked, or a shell that starts
    afresh each call (Codex)."""
    meta = {"cwd": "/w/app"}
    went = _sh("cd apps/api && pnpm test", "3 passed")
    missing = _sh(
        "cat apps/api/src/env.ts",
        "Exit code 1\ncat: apps/api/src/env.ts: No such file or directory",
        False,
    )
    for fix in ("cat /w/app/apps/api/src/env.ts", "cd /w/app && cat apps/api/src/env.ts"):
        run = Trajectory(task="t", steps=(went, missing, _sh(fix, "export const env")), meta=meta)
        (c,) = find_corrections(run)
        assert c.kind == Kind.TOOL_RULE and (c.failed, c.fixed) == (1, 2)
        assert c.finding.text == KEPT_CWD
    fixed = _sh("cat /w/app/apps/api/src/env.ts", "export const env")
    home = _sh("cd /w/app && ls", "apps")
    other = _sh("cat /w/app/apps/web/src/env.ts", "export const env")
    for steps in ((missing, fixed), (went, home, missing, fixed), (went, missing, other)):
        found = find_corrections(Trajectory(task="t", steps=steps, meta=meta))
        assert [c for c in found if c.kind == Kind.TOOL_RULE] == []
    codex = tuple(
        Step("shell_command", {"command": s.params["command"]}, s.output, s.success)
        for s in (went, missing, fixed)
    )
    found = find_corrections(Trajectory(task="t", steps=codex, meta=meta))
    assert [c for c in found if c.kind == Kind.TOOL_RULE] == []
