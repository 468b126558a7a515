"""Precision guards for the kinds of false lessons that strangers' sessions showed
(issue 29): each guard is checked on a failure of its kind (a real one of the development
half where it has one, named so) and on a control that still teaches, so the test fails if
the guard stops the true lesson too."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest

from agentmem import Memory
from agentmem.agents.outcomes import own_timeout
from agentmem.learning.corrections import find_corrections
from agentmem.learning.findings import Finding, quote_error
from agentmem.learning.kinds import Kind
from agentmem.learning.merge import merge_findings
from agentmem.records import Step, Trajectory
from benchmarks import bench_real_transcripts as bench


def _run(*steps: Step) -> Trajectory:
    return Trajectory(task="do the thing", steps=steps, meta={"project": "/w/p"}, accepted=True)


def _kinds(t: Trajectory) -> list[str]:
    return [str(c.kind) for c in find_corrections(t)]


def test_a_tools_own_timeout_is_read_by_its_structure():
    # real outputs of the development half: Claude Code's Grep, Codex's shell
    assert own_timeout("Ripgrep search timed out after 20 seconds. The search may have matched")
    assert own_timeout("command timed out after 10166 milliseconds\n")
    # other clients' and MCP servers' framings
    assert own_timeout("Error: Timeout 30000ms exceeded.")
    assert own_timeout("MCP error -32001: Request timed out")
    assert own_timeout("rpc error: code = DeadlineExceeded desc = context deadline exceeded")
    assert own_timeout("connect ETIMEDOUT 10.0.0.1:443")
    # a setting named timeout, a column, a word inside another: no report
    assert not own_timeout("Error: invalid value for timeout: 30")
    assert not own_timeout("column timeout_ms does not exist")
    assert not own_timeout("error: unknown option --timeouts")
    # a parameter named timeout with a constraint after it: an argument error, no report
    assert not own_timeout("Error: parameter 'timeout' must be at most 600")
    assert not own_timeout("timeout must be a positive integer")
    assert not own_timeout("Error: timeout must be <= 120000")
    assert not own_timeout("`timeout` should be a number of milliseconds")
    assert not own_timeout("timeout value out of range")
    assert not own_timeout("timeout is out of range (max 600)")
    assert not own_timeout("timeout >= 1 required")
    # the word as a report still is one, whatever follows it
    assert own_timeout("Timeout")
    assert own_timeout("Error: Timeout exceeded while waiting for the page")


def test_a_retry_after_an_mcp_tools_timeout_is_no_value_fix():
    bad = Step(
        tool="mcp__db__query",
        params={"sql": "select * from a"},
        output="MCP error -32001: Request timed out",
        success=False,
    )
    good = Step(
        tool="mcp__db__query", params={"sql": "select id from a"}, output="1 row", success=True
    )
    assert _kinds(_run(bad, good)) == []
    # control: the same retry after the tool refused the value teaches the value
    refused = Step(
        tool="mcp__db__query",
        params={"sql": "select * from a"},
        output="Error: select * is not allowed, name the columns",
        success=False,
    )
    assert _kinds(_run(refused, good)) == ["param_value"]


def test_values_equal_once_clipped_make_no_lesson():
    head = "cd /sessions/zealous-brave-euler/mnt/project-files && "
    bad = Step(
        tool="mcp__workspace__run",
        params={"script": head + "python3 build.py --all"},
        output="Error: build failed: no rule for target all",
        success=False,
    )
    good = Step(
        tool="mcp__workspace__run",
        params={"script": head + "python3 build.py --only"},
        output="built",
        success=True,
    )
    assert _kinds(_run(bad, good)) == []
    # control: values that differ within what a lesson shows are taught
    short_bad = Step(
        tool="mcp__workspace__run",
        params={"target": "all"},
        output="Error: build failed: no rule for target all",
        success=False,
    )
    short_good = Step(
        tool="mcp__workspace__run", params={"target": "only"}, output="built", success=True
    )
    assert _kinds(_run(short_bad, short_good)) == ["param_value"]


def test_a_command_line_changed_is_code_not_a_value():
    """An MCP server's shell (``mcp__workspace__bash``'s ``command``) or any parameter that
    holds a script: a retry with another command line is no "call T with command like V"
    (an earlier validation lesson told a failed playwright script as a wrong value of
    ``command``); a one-word value of such a parameter, or a line of another parameter, is."""
    bad = Step(
        tool="mcp__workspace__bash",
        params={"command": "cd /sessions/x/mnt/outputs\npython3 shot.py"},
        output="Exit code 2\nplaywright._impl._errors.Error: BrowserType.launch",
        success=False,
    )
    good = Step(
        tool="mcp__workspace__bash",
        params={"command": "sudo apt-get install -y libxdamage1"},
        output="apt exit 0",
        success=True,
    )
    assert _kinds(_run(bad, good)) == []
    word_bad = Step(
        tool="mcp__workspace__run",
        params={"command": "buld"},
        output="Error: unknown command buld",
        success=False,
    )
    word_good = Step(
        tool="mcp__workspace__run", params={"command": "build"}, output="built", success=True
    )
    assert _kinds(_run(word_bad, word_good)) == ["param_value"]


def test_a_tools_command_parameters_come_from_its_clients_table():
    """A client's tool names its own command parameter (``ToolSpec.command``); the guessed
    names are a fallback for MCP tools and tools no table knows only."""
    from agentmem.agents import command_params
    from agentmem.agents.base import FALLBACK_COMMAND_PARAMS

    assert command_params("Bash") == {"command"}
    assert command_params("exec_command") == {"cmd"}
    assert command_params("Read") == frozenset()  # runs no command: a "code" value is a value
    assert command_params("mcp__workspace__bash") == FALLBACK_COMMAND_PARAMS
    assert command_params("Terminal") == FALLBACK_COMMAND_PARAMS  # a tool no table knows
    assert command_params("PowerShell") == {"command"}  # Claude Code 2.1's, on Windows


_WRITE = "mcp__filesystem__write_file"
_MKDIR = "mcp__filesystem__create_directory"


def _write(content: str, ok: bool) -> Step:
    out = (
        "Successfully wrote to /w/p/notes/a.md" if ok else "Error: Parent directory does not exist"
    )
    return Step(
        tool=_WRITE, params={"path": "/w/p/notes/a.md", "content": content}, output=out, success=ok
    )


def _mkdir() -> Step:
    return Step(
        tool=_MKDIR,
        params={"path": "/w/p/notes"},
        output="Successfully created directory /w/p/notes",
        success=True,
    )


def test_a_call_that_worked_after_another_is_told_as_a_step_first():
    # synthetic (the development half has no such MCP session): the same write worked once
    # the folder was made: "call create_directory first", never "use it instead"
    same = find_corrections(_run(_write("hello", False), _mkdir(), _write("hello", True)))
    assert [str(c.kind) for c in same] == ["prerequisite"]
    assert "first" in same[0].finding.text and "not " + _WRITE not in same[0].finding.text
    # the write retried with its content changed as well: two changes, no switch of tool
    changed = find_corrections(_run(_write("hello", False), _mkdir(), _write("hello!", True)))
    assert [str(c.kind) for c in changed] == []
    # the write never worked again: its folder was missing, so the path was at fault, not
    # the tool; making the folder is no tool to use instead (blind set 14)
    alone = find_corrections(_run(_write("hello", False), _mkdir()))
    assert [str(c.kind) for c in alone] == []


def _bash(command: str, output: str, ok: bool = False) -> Step:
    out = output if ok else "Exit code 127\n" + output
    return Step(tool="Bash", params={"command": command}, output=out, success=ok)


def _shell_lessons(*steps: Step) -> list[str]:
    return [c.finding.text for c in find_corrections(_run(*steps))]


_NO_UNZIP = "/bin/bash: line 1: unzip: command not found"


def test_a_step_that_only_shows_the_result_never_stands_in():
    # synthetic (no such session on the development half): the compound retry's listing
    # step shares the operand, the inline python did the job: undecided, nothing learned
    retry = (
        "mkdir out && python3 -c \"import zipfile; zipfile.ZipFile('data.zip')"
        ".extractall('out')\" && find out"
    )
    assert (
        _shell_lessons(
            _bash("unzip data.zip -d out", _NO_UNZIP), _bash(retry, "out\nout/a.txt", ok=True)
        )
        == []
    )
    # a listing alone on the operand shows the file, it does not unpack it
    assert (
        _shell_lessons(
            _bash("unzip data.zip", _NO_UNZIP), _bash("ls -la data.zip", "data.zip", ok=True)
        )
        == []
    )
    # controls: a program that did the job on the operands, and a lister for a lister
    did = _shell_lessons(
        _bash("unzip data.zip -d out", _NO_UNZIP), _bash("bsdtar -xf data.zip -C out", "", ok=True)
    )
    assert did == [
        "unzip is not installed here ('unzip: command not found'); bsdtar did the same job."
    ]
    tree = _shell_lessons(
        _bash("tree src", "/bin/bash: line 1: tree: command not found"),
        _bash("find src", "src\nsrc/a.py", ok=True),
    )
    assert tree == [
        "tree is not installed here ('tree: command not found'); find did the same job."
    ]


def test_the_diagnostic_is_the_line_that_names_the_failed_program():
    # synthetic: an unquoted here-document's backticks ran as commands first (noise of
    # another cause), then python was not found
    script = "cat > docs/x.md <<EOF\n# Title `make`\nEOF\npython gen.py docs/x.md"
    out = "docs/x.md: line 1: #: command not found\n/bin/bash: line 3: python: command not found"
    said = _shell_lessons(
        _bash(script, out), _bash(script.replace("python gen", "python3 gen"), "ok", ok=True)
    )
    assert said == [
        "python is not on PATH here ('/bin/bash: line 3: python: command not found'): "
        "run python3 instead."
    ]
    # control: a first line that names the program is kept
    said = _shell_lessons(
        _bash("python gen.py", "bash: python: command not found\nhint: try python3"),
        _bash("python3 gen.py", "ok", ok=True),
    )
    assert said == [
        "python is not on PATH here ('python: command not found'): run python3 instead."
    ]


#: A quoted diagnostic in a lesson: ``('...')``, ``('...':``, ``with '...'``.
_LESSON_QUOTE = re.compile(r"\('([^']{3,})'[):]|\bwith '([^']{3,})'")


def _folded(text: str) -> str:
    """An output as a quote is compared with it: quote marks gone (a lesson's quote holds
    none), escaped line breaks and white space folded."""
    text = text.replace("\\n", " ").replace("\\r", " ")
    return " ".join(re.sub(r"['\"`‘’]", "", text).split())


def quotes_not_in_output(mem: Memory) -> list[tuple[str, str]]:
    """(quote, lesson) for every quoted diagnostic of a live lesson that no output of the
    runs it was learned from holds (after folding, each part between a ``...`` cut or a
    ``<placeholder>`` found as it is; a project's folder may be left out, as a project's
    fact writes its paths relative to it)."""
    from agentmem.browse.queries import LESSON_RUNS

    bad: list[tuple[str, str]] = []
    sql = f"SELECT DISTINCT r.trajectory FROM ({LESSON_RUNS}) r"
    for e in mem.experiences():
        runs = [r[0] for r in mem.db.execute(sql, {"lesson": e.id}).fetchall()]
        outs: list[str] = []
        for r in runs:
            t = mem.get_trajectory(r)
            roots = [str(t.meta.get(k) or "").rstrip("/") for k in ("project", "cwd")]
            for s in t.steps:
                outs.append(_folded(s.output))
                # a project's fact is told relative to its folder (shell_fixes.relative_to:
                # one fact, one text), quotes included: the output as that rewrite reads it
                outs += [_folded(s.output.replace(x + "/", "")) for x in roots if x]
        for m in _LESSON_QUOTE.finditer(e.text):
            q = _folded(m.group(1) or m.group(2)).removesuffix("...")
            parts = [p.strip() for p in re.split(r"\.\.\.|<[a-z]+>", q) if p.strip()]
            if not all(any(p in o for o in outs) for p in parts):
                bad.append((q, e.text))
    return bad


_ROOT = bench.data_root()
_DEV = [
    t
    for t in bench.load_keys(_ROOT)
    if t.half == "development" and t.path.exists() and t.file not in bench.not_placed()
]


@pytest.mark.skipif(not _DEV, reason=f"no development transcripts under {_ROOT}")
def test_every_quote_of_a_development_lesson_occurs_in_its_output(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "q.db") as mem:
        bench.import_all(mem, _DEV)
        mem.learn(use_model=False)
        assert mem.experiences()
        assert quotes_not_in_output(mem) == []


def test_a_workspace_shell_that_timed_out_teaches_no_command():
    # the shape (synthetic): an MCP workspace shell timed out, the next command
    # was simply different, both clipped to the same "cd /sessions/..." prefix
    cd = "cd /sessions/zealous-brave-euler/mnt/project && "
    bad = Step(
        tool="mcp__workspace__bash",
        params={"command": cd + "npm test"},
        output="Error: Command timed out after 45 seconds",
        success=False,
    )
    good = Step(
        tool="mcp__workspace__bash",
        params={"command": cd + "npm test -- --runInBand"},
        output="ok",
        success=True,
    )
    assert _kinds(_run(bad, good)) == []


# -- a tool's own time-out, read by its structure in one place (agents.outcomes) ------------

#: A shell tool's own time-out in the framings of the clients and MCP servers: (tool, its
#: command parameter, the output). The Grep one is real (the development half's
#: claude-reliability / carollynn sessions: it was a misuse before, its lesson stopped only
#: by the corrections' own check); the others are synthetic, one per framing.
_TIMED_OUT = [
    ("Grep", "pattern", "Ripgrep search timed out after 20 seconds. The search may have"),
    ("mcp__workspace__bash", "command", "MCP error -32001: Request timed out"),
    ("mcp__workspace__bash", "command", "Tool 'bash' timed out"),
    ("mcp__workspace__bash", "command", "Error: context deadline exceeded"),
    ("mcp__workspace__bash", "command", "<tool_use_error>Timeout</tool_use_error>"),
    ("Bash", "command", "Command timed out after 2m 0.0s"),
    (
        "Bash",
        "command",
        "Compiling app v0.1.0\nBuilding [=====>  ] 61/94\nCommand timed out after 2m 0.0s",
    ),
    ("Bash", "command", "Exit code 124"),
    (
        "exec_command",
        "cmd",
        "Chunk ID: ab\nWall time: 10.0 seconds\nProcess exited with code 124\nOutput:\n",
    ),
    (
        "exec_command",
        "cmd",
        "Chunk ID: ab\nProcess exited with code 1\nOutput:\nexecution timed out",
    ),
    ("shell", "command", "Exit code: 124\nWall time: 30 seconds\nOutput:\n"),
]
#: Failures that are no tool's time-out: a program's own words under its name, exit 124
#: with output of the command's own, a parameter named timeout.
_NOT_TIMED_OUT = [
    ("Bash", "command", "Exit code 28\ncurl: (28) Operation timed out after 5000 milliseconds"),
    ("Bash", "command", "Exit code 124\nerror: could not compile `app`"),
    ("mcp__workspace__bash", "command", "Error: invalid value for timeout: 30"),
    ("mcp__workspace__bash", "command", "Error: parameter 'timeout' must be at most 600"),
    ("WebFetch", "url", "timeout must be <= 120000"),
    ("mcp__db__query", "sql", "timeout must be a positive integer"),
]


def _call(tool: str, key: str, value: str, output: str, ok: bool) -> Step:
    v: object = ["bash", "-lc", value] if tool == "shell" else value
    return Step(tool=tool, params={key: v}, output=output, success=ok)


@pytest.mark.parametrize(("tool", "key", "output"), _TIMED_OUT)
def test_a_tools_own_timeout_in_any_framing_is_a_timeout(tool: str, key: str, output: str):
    from agentmem.agents import Failure, learning_view, outcome
    from agentmem.agents.outcomes import timed_out

    bad = _call(tool, key, "cargo build --release", output, False)
    assert outcome(bad).failure is Failure.TIMEOUT and timed_out(bad)
    # the call never finished: the view leaves it out, and no lesson of any kind follows,
    # neither a changed value nor "call U first" for the same call after another one
    good = _call(tool, key, "cargo build", "Finished", True)
    other = Step(tool="Read", params={"file_path": "/w/p/Cargo.toml"}, output="[package]")
    same = _call(tool, key, "cargo build --release", "Finished", True)
    assert bad not in learning_view(_run(bad, good)).steps
    assert _kinds(_run(bad, good)) == []
    assert _kinds(_run(bad, other, same)) == []


@pytest.mark.parametrize(("tool", "key", "output"), _NOT_TIMED_OUT)
def test_a_programs_own_words_or_a_setting_are_no_tool_timeout(tool: str, key: str, output: str):
    from agentmem.agents.outcomes import timed_out

    assert not timed_out(_call(tool, key, "curl -sf https://x/api", output, False))


def test_after_a_refusal_the_same_call_after_another_still_teaches():
    # the control of the timeout cases above: an MCP shell that refused the call (no
    # time-out) and ran it once a file was read teaches "Read first"
    bad = _call("mcp__workspace__bash", "command", "make", "Error: Makefile not loaded", False)
    other = Step(tool="mcp__workspace__load", params={"path": "Makefile"}, output="loaded")
    same = _call("mcp__workspace__bash", "command", "make", "done", True)
    assert _kinds(_run(bad, other, same)) == ["prerequisite"]
    timeout = attrs.evolve(bad, output="MCP error -32001: Request timed out")
    assert _kinds(_run(timeout, other, same)) == []


_LOG = "".join(f"[{i:02d}] fetching shard {i} of 40 from the object store\n" for i in range(9))


def test_a_timeout_reported_after_the_kept_output_teaches_nothing():
    # synthetic: the shapes the first-line check (precision8) let through, each of which
    # taught a false lesson before; beside each, the same calls without the time-out
    find = "find: /proc/1/fd: Permission denied\n/etc/app/app.conf"
    bad = Step(
        tool="Bash",
        params={"command": "find / -name app.conf"},
        output=f"Exit code 1\n{find}\nCommand timed out after 2m 0.0s",
        success=False,
    )
    good = Step(tool="Bash", params={"command": "find /etc -name app.conf"}, output="/etc/app")
    assert _kinds(_run(bad, good)) == []
    assert _kinds(_run(attrs.evolve(bad, output=f"Exit code 1\n{find}"), good)) == ["shell"]
    run = Step(
        tool="mcp__workspace__run",
        params={"script": "sync", "shards": "all"},
        output=_LOG + "Request timed out",
        success=False,
    )
    ok = Step(tool="mcp__workspace__run", params={"script": "sync", "shards": "1"}, output="ok")
    assert _kinds(_run(run, ok)) == []
    refused = attrs.evolve(run, output=_LOG + "Error: shards=all is not allowed")
    assert _kinds(_run(refused, ok)) == ["param_value"]


def test_an_error_that_is_only_its_exit_status_teaches_no_value_check():
    """ "Check command before calling PowerShell: a wrong command failed with 'Exit code 1'"
    (a blind set's first try): the fallback value lesson needs an error that says more than
    the client's framing of an exit status."""
    from agentmem.learning.generality import _framing_only

    # a tool in no client's table (the blind set's PowerShell then): every client's framing
    # is stripped
    for said in ("Exit code 1", "Process exited with code 2", "exit status 3", "Error", ""):
        assert _framing_only(said, ["Terminal"]), said
    for said in (
        "Exit code 1\nGet-Item: Cannot find path 'X:\\a'",
        "Error: invalid value for limit",
        "sandbox denied (exit code 1)",
    ):
        assert not _framing_only(said, ["Terminal"]), said
    assert _framing_only("Exit code 1", ["PowerShell"])  # Claude Code's, framed as Bash
    # a known tool's error is read with its own client's framing (agents.strip_headers)
    codex = "Chunk ID: 4f2a\nWall time: 0.0102 seconds\nProcess exited with code 1\nOutput:\n"
    assert _framing_only(codex, ["exec_command"])
    assert not _framing_only(codex + "ls: x: No such file or directory", ["exec_command"])
    assert _framing_only("Exit code 1", ["Bash"])
    assert not _framing_only(codex, ["Bash"])  # Claude Code frames no output so


def test_a_folder_read_as_a_file_then_another_file_is_no_operand_fix():
    """``cat .claude/commands/bmad`` ("Is a directory"), then ``cat docs/product/x.md``: the
    agent moved on to another file; "run cat with docs/product/x.md, not .claude/commands/
    bmad" was false (a blind set's lesson)."""
    from agentmem.agents.outcomes import learning_view
    from agentmem.learning.shell_fixes import find_shell_fixes
    from agentmem.records import Step, Trajectory

    def sh(cmd: str, out: str, ok: bool) -> Step:
        return Step(tool="Bash", params={"command": cmd}, output=out, success=ok)

    run = Trajectory(
        task="read the open-loops doc",
        steps=(
            sh("cat .claude/commands/bmad", "cat: .claude/commands/bmad: Is a directory", False),
            sh("cat docs/product/calm-prompt-open-loops.md", "# Open loops", True),
        ),
        meta={"cwd": "/w/app"},
    )
    assert find_shell_fixes(learning_view(run)) == []


def test_a_folder_named_then_its_file_is_an_operand_fix():
    """The other side of the folder guard: ``docker build -f docker`` ("is a directory"),
    then ``-f docker/Dockerfile``: the file inside the folder named is the operand fixed."""
    from agentmem.agents.outcomes import learning_view
    from agentmem.learning.shell_fixes import find_shell_fixes
    from agentmem.records import Step, Trajectory

    def sh(cmd: str, out: str, ok: bool) -> Step:
        return Step(tool="Bash", params={"command": cmd}, output=out, success=ok)

    said = "ERROR: failed to read dockerfile: read /w/app/docker: is a directory"
    run = Trajectory(
        task="build the image",
        steps=(
            sh("docker build -f docker -t app .", said, False),
            sh("docker build -f docker/Dockerfile -t app .", "naming to app done", True),
        ),
        meta={"cwd": "/w/app"},
    )
    fixes = find_shell_fixes(learning_view(run))
    assert [f.finding.detail.get("good") for f in fixes] == ["docker/Dockerfile"]


def test_a_value_lesson_never_quotes_an_exit_status_alone():
    """The wiring of ``_framing_only`` into the value lesson's head and parts."""
    from agentmem.learning.generality import _value_head, _value_parts, _ValueFacts

    def facts(error: str) -> _ValueFacts:
        return _ValueFacts(
            ts=("PowerShell",),
            x="command",
            good=None,
            bad="x",
            source=None,
            wrong=None,
            recover=False,
            error=error,
            err=error,
            opts=(),
            lookup_ok=False,
            from_task=False,
            bad_from_task=False,
            good_ok=False,
            bad_ok=False,
        )

    assert _value_head(facts("Exit code 1")) is None
    assert _value_parts(facts("Exit code 1"), "") == []
    assert _value_head(facts("Error: unknown id x")) == "Check command before calling PowerShell:"
    assert _value_parts(facts("Error 404"), "") == ["a wrong command failed with 'Error 404'"]


def test_a_retry_widened_to_a_folder_above_the_path_is_no_operand_fix():
    """``git add tests/plugin/stub.py`` failed ("did not match any files": the run had moved
    the file away, perhaps where the importer does not see), then ``git add tests/plugin/``
    worked: "run git add with tests/plugin/, not tests/plugin/stub.py" was false (a blind
    set's class of lesson). The folder above shows the file was not there, not where it is.
    Controls that still teach: a sibling path, and a path deeper than the failed one."""
    from agentmem.agents.outcomes import learning_view
    from agentmem.learning.shell_fixes import find_shell_fixes

    def sh(cmd: str, out: str, ok: bool) -> Step:
        return Step(tool="Bash", params={"command": cmd}, output=out, success=ok)

    def goods(failed: str, said: str, retry: str) -> list[object]:
        run = Trajectory(
            task="commit the plugin tests",
            steps=(sh(failed, f"Exit code 128\n{said}", False), sh(retry, "", True)),
            meta={"cwd": "/w/app"},
        )
        return [f.finding.detail.get("good") for f in find_shell_fixes(learning_view(run))]

    stub = "tests/plugin/stub.py"
    nomatch = f"fatal: pathspec '{stub}' did not match any files"
    assert goods(f"git add {stub}", nomatch, "git add tests/plugin/") == []
    assert goods(f"git add {stub}", nomatch, "git add tests/plugin") == []
    assert goods(f"git add {stub}", nomatch, "git add tests") == []
    assert goods(f"git add {stub}", nomatch, "git add .") == []
    # a sibling path, and a deeper one, still teach the operand
    assert goods(f"git add {stub}", nomatch, "git add tests/plugin/stub_qemu.py") == [
        "tests/plugin/stub_qemu.py"
    ]
    said = "fatal: pathspec 'tests/plugin' did not match any files"
    assert goods("git add tests/plugin", said, f"git add {stub}") == [stub]


def _codex(cmd: str, out: str, ok: bool = False, **more: object) -> Step:
    return Step(tool="exec_command", params={"cmd": cmd, **more}, output=out, success=ok)


_ESCALATED = {"sandbox_permissions": "require_escalated"}
_LOCK = "sandbox denied (exit code 1)\nfatal: Unable to create '/w/p/.git/index.lock': Operation "
_LOCK += "not permitted"


def _escalation_texts(*steps: Step) -> list[str]:
    return [c.finding.text for c in find_corrections(_run(*steps))]


def test_a_refusal_the_run_contradicts_in_the_sandbox_is_no_escalation_lesson():
    """A blind set's class of false lesson: ``rtk git add ...`` (rtk, a CLI proxy agentmem
    does not know) and ``bash -lc '...'`` were refused for a write inside ``.git`` and ran
    escalated, and "bash and rtk are refused in the sandbox" was learned, while the same
    run ran both in the sandbox, unescalated, and they worked. A run of the refused
    program (and subcommand) that worked in the sandbox contradicts the lesson."""
    add = "rtk git add src/a.py"
    assert not _escalation_texts(
        _codex("rtk git add docs/b.md", "", True),
        _codex(add, _LOCK),
        _codex(add, "", True, **_ESCALATED),
    )
    script = "bash -lc 'git add src/a.py && git commit -m wip' 2>&1 | tail -5"
    assert not _escalation_texts(
        _codex(script, _LOCK),
        _codex(script, "[main 1a2b] wip", True, **_ESCALATED),
        _codex("bash -lc 'ls src'", "a.py", True),
    )
    # the program the unknown word starts, run bare in the sandbox, contradicts it too
    assert not _escalation_texts(
        _codex(add, _LOCK), _codex(add, "", True, **_ESCALATED), _codex("git add b.md", "", True)
    )


def test_a_refusal_the_run_does_not_contradict_still_teaches_naming_the_program():
    """Controls: ``git fetch`` refused and escalated while ``git status`` ran in the sandbox
    (another subcommand: no contradiction); a run of it that was escalated itself, or whose
    success another command may have made (``|| true``), contradicts nothing. An unknown
    leading word is not named: ``rtk git add`` is about ``git add``."""
    fetch = "sandbox denied (exit code 1)\nerror: cannot open .git/FETCH_HEAD: Operation not "
    fetch += "permitted"
    (text,) = _escalation_texts(
        _codex("git status --short", " M a.py", True),
        _codex("git fetch --all", fetch),
        _codex("git fetch --all", "", True, **_ESCALATED),
        _codex("git fetch origin || true", "", True),
        _codex("git fetch --prune", "", True, **_ESCALATED),
    )
    assert text.startswith("In this project git fetch is refused in the sandbox")
    add = "rtk git add src/a.py"
    (text,) = _escalation_texts(
        _codex("rtk git status", "On branch main", True),
        _codex(add, _LOCK),
        _codex(add, "", True, **_ESCALATED),
    )
    assert text.startswith("In this project git add is refused in the sandbox")
    # a word that also names a subcommand is the unknown tool's own: it stays named
    (text,) = _escalation_texts(
        _codex("mytool test", "sandbox denied (exit code 1)\nOperation not permitted"),
        _codex("mytool test", "ok", True, **_ESCALATED),
    )
    assert text.startswith("In this project mytool is refused in the sandbox")


def _way_out(tokens: int, param: str = "limit") -> Finding:
    """A Read retried with one option more after its too-large error (the recovery
    ``corrections._renamed`` builds)."""
    e = f"File content ({tokens} tokens) exceeds maximum allowed tokens (25000)."
    text = f"If Read fails with '{quote_error(e, 6)}', retry it with {param} set."
    d = {"error": e, "helper": None, "param": param, "scope": "tool"}
    return Finding(Kind.RECOVERY, "Read", "", text, ("Read", param), detail=d)


def test_a_value_lesson_with_no_value_and_no_trigger_is_not_made():
    """Two runs retried Read with a limit (of different values) after its too-large
    error: "Call Read with limit=..." would cap every Read and says nothing the error
    does not. Each recovery keeps its trigger instead (from a blind set's lesson)."""
    merged = merge_findings([_way_out(49199), _way_out(30512)])
    assert merged and all(f.text.startswith("If Read fails with 'File content") for f in merged)
    assert not any("Call Read with limit" in f.text for f in merged)


def test_a_value_lesson_that_names_its_value_still_merges():
    """Near it: a value that worked, with its recovery, is a value lesson still."""
    value = Finding(
        Kind.PARAM_VALUE,
        "Read",
        "",
        "Call Read with limit=200; never limit=5000, which failed with 'too large'.",
        ("Read", "limit"),
        detail={"error": "too large", "bad": "5000", "good": "200", "param": "limit"},
    )
    (merged,) = merge_findings([value, _way_out(49199)])
    assert merged.text.startswith("Call Read with limit like 200")


def _shell_where(*steps: Step) -> list[str]:
    return [c.finding.text for c in find_corrections(_run(*steps)) if c.kind == "shell"]


_NO_STEP = "Exit code 1\ncat: step-01-init.md: No such file or directory"


def _listed(command: str, output: str, ok: bool = True) -> Step:
    return Step(tool="Bash", params={"command": command}, output=output, success=ok)


def test_a_file_name_the_runs_listing_shows_twice_is_no_location_fact():
    """The run's own search listed step-01-init.md in two workflows' folders: "X is at
    one of them" is true of one workflow, not of the project (from a blind set's lesson).
    A listing that shows one such file, or only other files, leaves the lesson."""
    cat = _listed("cat step-01-init.md", _NO_STEP, ok=False)
    found = _listed("cat workflows/a/steps/step-01-init.md", "# Init", True)
    twice = "./workflows/a/steps/step-01-init.md\n./workflows/b/steps/step-01-init.md\n"
    for listing in (
        _listed("find . -name 'step-01-*.md'", twice),
        _listed(
            "ls -R workflows",
            "workflows/a/steps:\nstep-01-init.md\n\nworkflows/b/steps:\nstep-01-init.md\n",
        ),
        Step("Glob", {"pattern": "**/step-01-init.md"}, twice.replace("./", "/w/p/")),
    ):
        assert _shell_where(cat, listing, found) == [], listing
    once = _listed("find . -name 'step-01-*.md'", "./workflows/a/steps/step-01-init.md\n./x/y.md\n")
    (text,) = _shell_where(cat, once, found)
    assert "step-01-init.md is at workflows/a/steps/step-01-init.md" in text
    # a listing that failed shows nothing
    failed = _listed("find . -name 'step-01-*.md'", twice, ok=False)
    assert len(_shell_where(cat, failed, found)) == 1
    # a copy under installed or vendored code is no second copy of the project's (review 12)
    vendored = "./workflows/a/steps/step-01-init.md\n./node_modules/wf/steps/step-01-init.md\n"
    assert len(_shell_where(cat, _listed("find . -name 'step-01-*.md'", vendored), found)) == 1


def test_two_failures_of_one_tool_keep_their_own_ways_out_in_stage_3():
    """Read retried with a limit after its token limit and after its size limit: two
    failures, so two recoveries, each with its own trigger, never one lesson under the
    tool and the first words of the error."""
    e = "File content (906KB) exceeds maximum allowed size (256KB)."
    size = Finding(
        Kind.RECOVERY,
        "Read",
        "",
        f"If Read fails with '{quote_error(e, 6)}', retry it with limit set.",
        ("Read", "limit"),
        detail={"error": e, "helper": None, "param": "limit", "scope": "tool"},
    )
    merged = merge_findings([_way_out(49199), size])
    assert sorted("tokens" in f.text for f in merged) == [False, True]


def _group_of(mem: Memory, task: str, good: list[Step], bad: list[Step]) -> None:
    for ok in (True, False, True, False):
        mem.record(task, good if ok else bad, accepted=ok)


def test_parameter_names_the_error_does_not_name_teach_nothing(mem: Memory) -> None:
    """Real (validation, wave 8): a rejected run's Read of a file that is not there ('File
    does not exist'), beside an accepted run's Read in parts of another file, taught "Call
    Read with limit, offset; otherwise it fails with 'File does not exist'", served to 16
    prompts. The two calls differ in their parameters' names, but the error names none of
    them: the names are not what failed. An error that names the parameter still teaches."""
    good = [Step("Read", {"file_path": "/w/docs/notes.md", "limit": 200, "offset": 1}, "1 x", True)]
    bad = [Step("Read", {"file_path": "/w/notes.md"}, "File does not exist.", False)]
    _group_of(mem, "summarize the notes", good, bad)
    mem.learn(use_model=False)
    assert not any("limit" in e.text for e in mem.experiences())

    ok = [Step("lookup_order", {"order_id": "A1"}, '{"status": "shipped"}', True)]
    slip = [
        Step("lookup_order", {"id": "A1"}, "TypeError: unexpected keyword argument 'id'", False)
    ]
    _group_of(mem, "where is order A1", ok, slip)
    mem.learn(use_model=False)
    assert any("order_id" in e.text for e in mem.experiences())


def test_a_file_tool_that_refused_the_file_it_would_make_teaches_no_other_tool(
    mem: Memory,
) -> None:
    """Blind set 13 (read after its first try, so not blind now): an Edit of a Claude Code
    settings file failed its check of the result ("validation failed after edit: Invalid
    JSON"), then a Write of the whole file, valid, worked. "Use Write, not Edit, after
    Read" was false: the content was wrong, not the tool. Edit on a file that is not
    there, then Write, still teaches the tool."""
    path = "/w/p/.claude/settings.local.json"
    seen = Step("Read", {"file_path": path}, '1\t{"permissions": {"allow": []}}', True)
    refused = (
        "<tool_use_error>Claude Code settings.json validation failed after edit:\n"
        "Invalid JSON: JSON Parse error: Expected ']'</tool_use_error>"
    )
    edit = Step("Edit", {"file_path": path, "old_string": "[", "new_string": "[x"}, refused, False)
    write = Step("Write", {"file_path": path, "content": '{"permissions": {}}'}, "ok", True)
    assert _kinds(_run(seen, edit, write)) == []
    mem.record("allow the tool in the settings", [seen, edit, write], accepted=True)
    mem.learn(use_model=False)
    assert not any("not Edit" in e.text for e in mem.experiences())
    # the tool's own refusal of the call (no such file) is still a rule of tools
    new = "/w/p/docs/plan.md"
    missing = "<tool_use_error>File does not exist.</tool_use_error>"
    absent = Step(
        "Edit", {"file_path": new, "old_string": "", "new_string": "# Plan"}, missing, False
    )
    made = Step("Write", {"file_path": new, "content": "# Plan"}, "File created", True)
    assert _kinds(_run(absent, made)) == ["wrong_tool"]


_QF = "apps/web/src/features/line-dashboard/components/data-table"


def test_a_source_file_guessed_inside_the_tree_is_no_location_fact():
    """A real Codex session (a validation-half trap, exploration): sed of a guessed
    ``components/QuickFilters.jsx``, then ``rg --files`` found it under ``filters/``. Where
    one module of the code sits is its layout, explored afresh each task: no lesson. A
    document found elsewhere still teaches, and so does a source file whose wrong path
    lacked only the project's leading folder (the app lives in a subfolder)."""
    missing = f"sed: can't read {_QF}/components/QuickFilters.jsx: No such file or directory"
    guess = _listed(f"sed -n '1,220p' {_QF}/components/QuickFilters.jsx", missing, ok=False)
    search = _listed(f"rg --files {_QF} | rg -i quick", f"{_QF}/filters/QuickFilters.jsx\n")
    found = _listed(f"sed -n '1,220p' {_QF}/filters/QuickFilters.jsx", "export function Q() {}")
    assert _shell_where(guess, search, found) == []
    no_doc = "cat: docs/guide/setup.md: No such file or directory"
    doc = _listed("cat docs/guide/setup.md", no_doc, ok=False)
    doc_found = _listed("cat docs/setup/setup.md", "# Setup")
    (text,) = _shell_where(doc, _listed("ls docs/setup", "setup.md\n"), doc_found)
    assert "setup.md is at docs/setup/setup.md" in text
    no_app = "cat: src/app/page.tsx: No such file or directory"
    app = _listed("cat src/app/page.tsx", no_app, ok=False)
    app_found = _listed("cat rallycoach/src/app/page.tsx", "export default function Page() {}")
    (text,) = _shell_where(app, _listed("ls rallycoach", "src\n"), app_found)
    assert "src/ is under rallycoach/" in text
