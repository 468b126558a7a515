"""Shell calls of real clients, learned from as a demanding user would want.

The scripted scenario of issue 23: in three tasks, the agent runs ``cat notes.txt``
("No such file or directory"), then ``ls``, then ``cat docs/notes.txt``, recorded as
Claude Code records it (``Bash`` with ``command`` and the ``description`` it writes on
every call) and as Codex does (``shell`` with ``["bash", "-lc", "..."]``). At most a
project fact is learned (where the file is), never "use ls, not cat".
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from agentmem import Memory

from .conftest import FakeEmbedder, FakeModel
from .transcripts import ClaudeSession, CodexRollout, codex_exec

TASKS = (
    "summarise notes.txt for me",
    "how many words are in notes.txt?",
    "fix the typos in notes.txt",
)
NOT_FOUND = "cat: notes.txt: No such file or directory"


def _claude(path: Path, describe: bool) -> Path:
    s = ClaudeSession(cwd="/w/app")

    def bash(command: str, what: str, output: str, fail: bool = False) -> None:
        params = {"command": command, **({"description": what} if describe else {})}
        s.tool("Bash", params, f"Exit code 1\n{output}" if fail else output, is_error=fail)

    for task in TASKS:
        s.prompt(task)
        bash("cat notes.txt", "Read the notes file", NOT_FOUND, fail=True)
        bash("ls", "List files in the current directory", "docs\nsrc\nREADME.md")
        bash("cat docs/notes.txt", "Read the notes file in docs", "buy milk\ncall bob")
        s.say("Done.")
    return s.write(path)


def _codex(path: Path, justify: bool, unified: bool = False) -> Path:
    r = CodexRollout(cwd="/w/app")
    for task in TASKS:
        r.prompt(task)
        if unified:  # exec_command, its output framed by Chunk ID / Wall time / exit headers
            r.exec("cat notes.txt", NOT_FOUND, exit_code=1)
            r.exec("ls", "docs\nsrc\nREADME.md")
            r.exec("cat docs/notes.txt", "buy milk\ncall bob")
        else:
            r.shell(["bash", "-lc", "cat notes.txt"], NOT_FOUND, exit_code=1)
            r.shell(["bash", "-lc", "ls"], "docs\nsrc\nREADME.md", exit_code=0)
            r.shell(["bash", "-lc", "cat docs/notes.txt"], "buy milk\ncall bob", exit_code=0)
        r.done()
    if justify:  # the parameters that change nothing, on every call
        for line in r.lines:
            p = line["payload"]
            if p.get("type") == "function_call":
                import json

                args = json.loads(p["arguments"])
                args.update(justification="read the file", sandbox_permissions="use_default")
                p["arguments"] = json.dumps(args)
    return r.write(path)


def _learned(tmp_path: Path, fmt: str, path: Path) -> list[str]:
    old = time.time() - 3 * 86400  # an old file: its last turn is finished
    os.utime(path, (old, old))
    with Memory.open(tmp_path / f"{fmt}.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        report = mem.import_transcripts(fmt, [path])
        assert len(report.ids) == 3
        for tid in report.ids:
            mem.feedback(tid, "accept")
        mem.learn(use_model=False)
        return [e.text for e in mem.experiences()]


@pytest.mark.parametrize(
    ("fmt", "extra"),
    [
        ("claude-code", True),
        ("claude-code", False),
        ("codex", True),
        ("codex", False),
        ("codex-exec", True),
    ],
)
def test_a_file_found_by_exploring_teaches_where_it_is_and_nothing_else(
    tmp_path: Path, fmt: str, extra: bool
):
    path = tmp_path / ("s.jsonl" if fmt == "claude-code" else "rollout-2026-01-05-x.jsonl")
    if fmt == "claude-code":
        _claude(path, extra)
    else:
        _codex(path, extra, unified=fmt == "codex-exec")
        fmt = "codex"
    lessons = _learned(tmp_path, fmt, path)
    assert len(lessons) == 1, lessons  # the one project fact: where the file is
    for text in lessons:
        assert "docs/notes.txt" in text
        assert not re.search(r"\bls\b|\bBash\b|\bshell\b|never pass|command=", text), text


# --------------------------------------------------------------------------- outcomes

from agentmem.agents import Failure, learning_view, outcome  # noqa: E402
from agentmem.records import Step, Trajectory  # noqa: E402


def _bash(command: str, output: str, ok: bool = False, **more: object) -> Step:
    return Step(tool="Bash", params={"command": command, **more}, output=output, success=ok)


def _codex_shell(script: str, output: str, ok: bool = False) -> Step:
    return Step(
        tool="shell", params={"command": ["bash", "-lc", script]}, output=output, success=ok
    )


@pytest.mark.parametrize(
    ("step", "failure", "diag"),
    [
        (_bash("rg -n TODO src", "Exit code 1\n"), Failure.INFORMATIONAL, ""),
        (_bash("grep -q x a.txt", "Exit code 1"), Failure.INFORMATIONAL, ""),
        (_bash("diff a b", "Exit code 1\n1c1\n< a\n---\n> b"), Failure.INFORMATIONAL, None),
        (
            _bash("git diff --exit-code", "Exit code 1\ndiff --git a/x b/x"),
            Failure.INFORMATIONAL,
            None,
        ),
        (
            _bash(
                "grep x missing.txt", "Exit code 2\ngrep: missing.txt: No such file or directory"
            ),
            Failure.MISUSE,
            "grep: missing.txt: No such file or directory",
        ),
        (
            _bash(
                "cd app && uv run pytest -q",
                "Exit code 1\n..F\nFAILED tests/t.py::test_a - assert 1 == 2",
            ),
            Failure.CODE,
            None,
        ),
        (
            _bash("cargo test", "Exit code 101\nerror: test failed, to rerun pass `--lib`"),
            Failure.CODE,
            None,
        ),
        (
            _bash("npm run build", "Exit code 1\n> Build error occurred\nTypeError: x"),
            Failure.CODE,
            None,
        ),
        (
            _bash("pytest -q", "Exit code 127\nbash: pytest: command not found"),
            Failure.MISUSE,
            "pytest: command not found",
        ),
        (
            _bash("npx vitest run", "<tool_use_error>Sibling tool call errored</tool_use_error>"),
            Failure.CANCELLED,
            None,
        ),
        (
            _bash(
                "make",
                "The user doesn't want to proceed with this tool use. The tool use was rejected",
            ),
            Failure.DENIED,
            None,
        ),
        (_bash("cargo build", "Command timed out after 2m 0.0s"), Failure.TIMEOUT, None),
        (
            _codex_shell(
                "git status",
                "Exit code: 128\nWall time: 0.1 seconds\nOutput:\n"
                "fatal: not a git repository (or any of the parent directories): .git",
            ),
            Failure.MISUSE,
            "fatal: not a git repository (or any of the parent directories): .git",
        ),
        (
            Step(
                tool="exec_command",
                params={"cmd": "python x.py"},
                output="Chunk ID: 3f\nWall time: 0.0 seconds\nProcess exited with code 127\n"
                "Original token count: 9\nOutput:\nbash: python: command not found",
                success=False,
            ),
            Failure.MISUSE,
            "python: command not found",
        ),
        (
            _bash(
                "git pull",
                "Exit code 1\nerror: Your local changes to the following files would be "
                "overwritten by merge:\n\ta.py\nPlease commit your changes",
            ),
            Failure.MISUSE,
            "error: Your local changes to the following files would be overwritten by merge:",
        ),
        (
            Step(
                tool="Edit",
                params={"file_path": "/w/a.py", "old_string": "x", "new_string": "y"},
                output="<tool_use_error>String to replace not found in file.</tool_use_error>",
                success=False,
            ),
            Failure.CODE,
            None,
        ),
        (
            Step(
                tool="Edit",
                params={"file_path": "/w/a.py", "old_string": "x", "new_string": "y"},
                output="<tool_use_error>File has not been read yet. Read it first before writing "
                "to it.</tool_use_error>",
                success=False,
            ),
            Failure.MISUSE,
            "File has not been read yet. Read it first before writing to it.",
        ),
        (
            Step(tool="get_weather", params={"city": "x"}, output="Error: bad city", success=False),
            Failure.MISUSE,
            None,
        ),
    ],
)
def test_outcomes_say_whether_a_failure_is_a_misuse(step: Step, failure: Failure, diag: str | None):
    o = outcome(step)
    assert o.failed and o.failure is failure
    if diag is not None:
        assert o.diagnostic == diag
        assert not o.diagnostic.startswith(("Exit code", "Chunk ID", "Wall time", "Process exited"))


def test_the_learning_view_drops_calls_that_never_ran_and_parameters_that_change_nothing():
    t = Trajectory(
        task="t",
        steps=(
            _bash("npx vitest run", "<tool_use_error>Sibling tool call errored</tool_use_error>"),
            _bash("rg x", "Exit code 1", description="Search", timeout=60000),
            _bash("cat a", "Exit code 1\ncat: a: No such file or directory", description="Read a"),
            Step(
                tool="lookup",
                params={"description": "kept: not a client tool"},
                output="",
                success=False,
            ),
        ),
    )
    v = learning_view(t)
    assert [s.tool for s in v.steps] == ["Bash", "Bash", "lookup"]
    assert v.steps[0].params == {"command": "rg x"} and v.steps[0].success
    assert not v.steps[1].success and v.steps[1].output.startswith("cat: a: No such file")
    assert v.steps[2] is t.steps[3]  # a tool no client table knows is left as recorded
    assert learning_view(v) == v
    plain = Trajectory(task="t", steps=(Step(tool="lookup", params={}, output="x"),))
    assert learning_view(plain) is plain


# --------------------------------------------------------------------------- corrections

from agentmem.learning.corrections import find_corrections  # noqa: E402


def _run(*steps: Step, task: str = "do the thing") -> Trajectory:
    return Trajectory(task=task, steps=steps, accepted=True)


def _fix(*steps: Step) -> list[tuple[str, str, str]]:
    return [
        (c.finding.detail.get("change", c.kind), c.finding.detail.get("scope", ""), c.finding.text)
        for c in find_corrections(_run(*steps))
    ]


OK = "done"


@pytest.mark.parametrize(
    ("steps", "change", "scope", "says"),
    [
        (
            (
                _bash("python x.py", "Exit code 127\nbash: python: command not found"),
                _bash("python3 x.py", OK, True),
            ),
            "interpreter",
            "machine",
            "python is not on PATH here",
        ),
        (
            (
                _bash("pytest -q", "Exit code 127\nzsh: command not found: pytest"),
                _bash("uv run pytest -q", OK, True),
            ),
            "wrapper",
            "project",
            "uv run",
        ),
        (
            (
                _bash("pytest -q", "Exit code 127\nbash: pytest: command not found"),
                _bash("python3 -m pytest -q", OK, True),
            ),
            "wrapper",
            "machine",
            "python3 -m",
        ),
        (
            (
                _codex_shell(
                    "cargo build",
                    "Exit code: 127\nWall time: 0 seconds\nOutput:\nbash: cargo: command not found",
                ),
                _codex_shell("nix-shell -p cargo --run 'cargo build'", OK, True),
            ),
            "wrapper",
            "machine",
            "nix-shell -p cargo",
        ),
        (
            (
                _bash(
                    "cat > out/report.md << 'EOF'\n# Report\nEOF",
                    "Exit code 1\n(eval):1: no such file or directory: out/report.md",
                ),
                _bash("mkdir -p out", "", True),
                _bash("cat > out/report.md << 'EOF'\n# Report\nEOF", "", True),
            ),
            "prerequisite",
            "project",
            "mkdir -p out",
        ),
        (
            (
                _bash(
                    "cat notes.txt",
                    "Exit code 1\ncat: notes.txt: No such file or directory",
                    description="Read notes",
                ),
                _bash("ls", "docs\nsrc", True, description="List files"),
                _bash("cat docs/notes.txt", "hello", True, description="Read the notes in docs"),
            ),
            "location",
            "project",
            "notes.txt is at docs/notes.txt",
        ),
        (
            (
                _bash(
                    "git push",
                    "Exit code 128\nfatal: The current branch feat has no upstream branch.\n"
                    "To push the current branch and set the remote as upstream, use\n\n"
                    "    git push --set-upstream origin feat\n",
                ),
                _bash("git push --set-upstream origin feat", OK, True),
            ),
            "suggested",
            "tool",
            "git push --set-upstream origin <branch>",
        ),
        (
            (
                _bash("rg -n TODO src", "Exit code 127\nbash: rg: command not found"),
                _bash("grep -rn TODO src", OK, True),
            ),
            "program",
            "machine",
            "rg is not installed here",
        ),
        (
            (
                _bash("ls --colour=never", "Exit code 2\nls: unrecognized option '--colour=never'"),
                _bash("ls --color=never", OK, True),
            ),
            "flag",
            "tool",
            "--color=never",
        ),
    ],
)
def test_a_shell_correction_is_the_same_intent_done_right(
    steps: tuple[Step, ...], change: str, scope: str, says: str
):
    (found,) = _fix(*steps)
    assert found[:2] == (change, scope)
    assert says in found[2]
    assert not re.search(r"(?<![-\w])(Bash|shell)\b|Exit code|Chunk ID", found[2])


@pytest.mark.parametrize(
    "steps",
    [
        # another program is never a substitution
        (
            _codex_shell("git status", "Exit code: 128\nOutput:\nfatal: not a git repository"),
            _codex_shell("sed -n '1,80p' package.json", '{"name": "x"}', True),
        ),
        # exploration that ends on another file: the agent moved on
        (
            _bash("cat notes.txt", "Exit code 1\ncat: notes.txt: No such file or directory"),
            _bash("ls", "docs", True),
            _bash("cat README.md", "hi", True),
        ),
        # no match is no failure; failing tests say nothing about the command
        (_bash("rg foo", "Exit code 1"), _bash("rg foo src", "src/a:1: foo", True)),
        (_bash("pytest -q", "Exit code 1\nFAILED t.py::x"), _bash("pytest -q", "1 passed", True)),
        # a plain retry, two changes at once, a cancelled sibling
        (_bash("make", "Exit code 2\nmake: *** [all] Error 1"), _bash("make", OK, True)),
        (
            _bash("cp a.txt b/", "Exit code 1\ncp: b/: No such file or directory"),
            _bash("cp -r a.txt c/", OK, True),
        ),
        (
            _bash("ls x", "<tool_use_error>Sibling tool call errored</tool_use_error>"),
            _bash("ls y", OK, True),
        ),
    ],
)
def test_exploration_other_programs_and_non_misuses_teach_nothing(steps: tuple[Step, ...]):
    assert _fix(*steps) == []


# --------------------------------------------------------------------------- a tool's own rules


def _tool(tool: str, params: dict, output: str, ok: bool = False) -> Step:
    return Step(tool=tool, params=params, output=output, success=ok)


READ_FIRST = (
    "<tool_use_error>File has not been read yet. Read it first before writing to it."
    "</tool_use_error>"
)


def test_a_tool_rule_is_learned_when_the_run_shows_it():
    a = {"file_path": "/w/a.py"}
    edit = {**a, "old_string": "x", "new_string": "y"}
    run = _run(
        _tool("Edit", edit, READ_FIRST),
        _tool("Read", a, "1 x", True),
        _tool("MultiEdit", {**a, "edits": [{"old_string": "x", "new_string": "y"}]}, "ok", True),
    )
    (c,) = find_corrections(run)
    assert c.kind == "tool_rule" and c.finding.detail["scope"] == "tool"
    assert (
        c.finding.text
        == "If Edit fails with 'File has not been read yet', Read the file first, then retry."
    )
    # Read never stands in for Edit; another file read is no evidence
    other = _run(
        _tool("Edit", edit, READ_FIRST), _tool("Read", {"file_path": "/w/b.py"}, "1 z", True)
    )
    assert find_corrections(other) == []


def test_read_on_a_folder_and_a_missing_option_teach_the_tools_rules():
    folder = _run(
        _tool(
            "Read",
            {"file_path": "/w/test/support"},
            "EISDIR: illegal operation on a directory, read",
        ),
        _bash("ls -la /w/test/support/", "data_case.ex", True, description="List it"),
    )
    (c,) = find_corrections(folder)
    assert c.kind == "tool_rule" and "list a folder with Glob or ls" in c.finding.text
    big = _run(
        _tool(
            "Read",
            {"file_path": "/w/t.jsonl"},
            "File content (85812 tokens) exceeds maximum allowed tokens (25000).",
        ),
        _tool("Read", {"file_path": "/w/t.jsonl", "limit": 5}, "1 {}", True),
    )
    (c,) = find_corrections(big)
    assert (c.kind, c.finding.detail["scope"]) == ("recovery", "tool")
    assert (
        c.finding.text.startswith("If Read fails with 'File content") and "limit" in c.finding.text
    )
    task = _run(
        _tool(
            "Task",
            {"description": "x"},
            "<tool_use_error>InputValidationError: Task failed due to the "
            "following issue:\nThe required parameter `prompt` is missing</tool_use_error>",
        ),
        _tool("Task", {"description": "x", "prompt": "look"}, "done", True),
    )
    # the tool's own schema error after a one-off slip: the error said it all (issue 29, e)
    assert find_corrections(task) == []


def test_a_look_beside_a_failed_read_does_not_hide_its_retry():
    """Real (aistrad/work, Claude Code): Read of a large file issued in one message with two
    Globs; the Globs' results came before the Read with a limit that worked. A look changes
    nothing the retry needs: the way out is learned as when nothing is between. A call that
    changes something (a shell command) between still hides it, as does a look between a
    retry of a tool no client table knows."""
    big = "File content (44332 tokens) exceeds maximum allowed tokens (25000)."
    glob = _tool("Glob", {"pattern": "src/**/*.tsx"}, "/w/src/a.tsx", True)
    grep = _tool("Grep", {"pattern": "x", "path": "/w"}, "a.tsx:1:x", True)
    read = _tool("Read", {"file_path": "/w/spec.md"}, big)
    retry = _tool("Read", {"file_path": "/w/spec.md", "limit": 500}, "1 # spec", True)
    (c,) = find_corrections(_run(read, glob, grep, retry))
    assert (c.kind, c.fixed) == ("recovery", 3) and "limit" in c.finding.text
    moved = _bash("split -l 500 /w/spec.md /w/part-", "3 parts", True, description="split")
    assert [x.kind for x in find_corrections(_run(read, glob, moved, retry))] != ["recovery"]
    api = _run(
        _tool("get_rows", {"table": "t"}, "Error: too many rows"),
        glob,
        _tool("get_rows", {"table": "t", "limit": 5}, "3 rows", True),
    )
    assert find_corrections(api) == []


def test_a_write_to_another_file_after_a_refusal_is_no_value_lesson():
    run = _run(
        _tool("Write", {"file_path": "/w/a.ts", "content": "x"}, READ_FIRST),
        _tool("Write", {"file_path": "/w/b.ts", "content": "x"}, "ok", True),
    )
    assert find_corrections(run) == []


# --------------------------------------------------------------------------- across a group


def test_a_group_compares_shell_calls_as_commands(tmp_path: Path):
    """An exact group: the good runs pull before they push, the bad ones never get past
    the rejected push; every call carries a description that changes on each try."""
    with Memory.open(tmp_path / "g.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        for k in range(4):
            ok = k % 2 == 0
            steps = [
                _bash(
                    "git push",
                    "Exit code 1\n ! [rejected] main -> main (fetch first)",
                    description=f"Push {k}",
                )
            ]
            if ok:
                steps += [
                    _bash(
                        "git pull --rebase", "Successfully rebased", True, description=f"Pull {k}"
                    ),
                    _bash("git push", "To github.com:x/y.git", True, description=f"Push again {k}"),
                ]
            mem.record("push my branch", steps, accepted=ok)
        mem.learn(use_model=False)
        texts = [e.text for e in mem.experiences()]
    assert texts == [
        "Run git pull --rebase before git push; without it git fails with "
        "'! [rejected] main -> main (fetch first)'."
    ]


def test_a_git_ignored_path_left_out_is_a_project_fact_but_a_missing_file_is_not():
    ignored = (
        "Exit code 1\nThe following paths are ignored by one of your .gitignore files:\n"
        "priv/static/assets\nhint: Use -f if you really want to add them."
    )
    (found,) = _fix(
        _bash("git add lib/a.ex priv/static/assets/app.css && git commit -m 'x'", ignored),
        _bash("git add lib/a.ex && git commit -m 'x'", "[main 1a2b3c] x", True),
    )
    assert found[:2] == ("dropped", "project") and "priv/static/assets/app.css" in found[2]
    assert (
        _fix(
            _bash(
                "sed -n 1,80p a.py b.py",
                "Exit code 2\nsed: can't read b.py: No such file or directory",
            ),
            _bash("sed -n 1,80p a.py", "x = 1", True),
        )
        == []
    )


def test_a_command_the_parser_cannot_read_teaches_nothing(monkeypatch: pytest.MonkeyPatch):
    from agentmem.agents import outcomes, shell

    steps = (
        _bash("cat notes.txt", "Exit code 1\ncat: notes.txt: No such file or directory"),
        _bash("cat docs/notes.txt", "hello", True),
    )
    assert len(_fix(*steps)) == 1
    assert not shell.parse('echo "unbalanced').parsed
    monkeypatch.setattr(shell, "_parser", lambda: None)  # tree-sitter missing
    shell.parse.cache_clear()
    outcomes._outcome.cache_clear()
    try:
        assert _fix(*steps) == []
    finally:
        shell.parse.cache_clear()
        outcomes._outcome.cache_clear()


_CHECK = "Exit code 1\npre-commit: style check failed.\nRun 'npm run fmt' to fix.\n"
_OTHER = "Exit code 1\npre-commit: lint check failed.\nsrc/a.ts: unused variable x\n"


def test_a_command_the_failure_advised_is_the_projects_remedy() -> None:
    """``git commit`` refused by a project's check that says "Run 'npm run fmt' to fix";
    the next call runs exactly that, and the next commit gets past that check (another
    check stops it: the code's business, not this lesson's)."""
    [(change, scope, text)] = _fix(
        _bash("git commit -m wip", _CHECK),
        _bash("npm run fmt 2>&1", OK, True),
        _bash("git commit -m wip", _OTHER),
    )
    assert (change, scope) == ("advised", "project")
    # The output's own request ("Run ... to fix") is never quoted (sanitize.quote_diagnostic).
    assert "In this project git commit fails: run npm run fmt first" in text
    assert "to fix" not in text and "''" not in text
    assert text.endswith("run npm run fmt first, as its error says.")


@pytest.mark.parametrize(
    "steps",
    [
        # the agent ran something else than the advice
        (_bash("git commit -m wip", _CHECK), _bash("npm run lint", OK, True)),
        # the advice did not clear the failure: the same check refused the commit again
        (
            _bash("git commit -m wip", _CHECK),
            _bash("npm run fmt", OK, True),
            _bash("git commit -m wip", _CHECK),
        ),
        # no advice in so many words
        (_bash("git commit -m wip", _OTHER), _bash("npm run fmt", OK, True)),
    ],
)
def test_no_advice_followed_teaches_nothing(steps: tuple[Step, ...]) -> None:
    assert [c for c in _fix(*steps) if c[0] == "advised"] == []


_FOUND = "./.settings/app.conf.toml\n./.settings/db.conf.toml\n"


def test_files_rg_skipped_in_a_hidden_folder_are_a_project_fact() -> None:
    """``rg --files -g G`` lists nothing (exit 1, no match), ``find . -name G`` finds the
    files in one hidden folder: where the project keeps them, and why rg missed them."""
    [(change, scope, text)] = _fix(
        _bash("rg --files -g '*.conf.toml'", "Exit code 1"),
        _bash("find . -name '*.conf.toml'", _FOUND, True),
    )
    assert (change, scope) == ("hidden", "project")
    assert "*.conf.toml files are in .settings/, a hidden folder rg --files skips" in text
    assert "rg --files --hidden" in text


@pytest.mark.parametrize(
    "steps",
    [
        # found in a folder that is not hidden: rg would have listed it; nothing to learn
        (
            _bash("rg --files -g '*.conf.toml'", "Exit code 1"),
            _bash("find . -name '*.conf.toml'", "./conf/app.conf.toml\n", True),
        ),
        # rg already searched hidden folders
        (
            _bash("rg --files --hidden -g '*.conf.toml'", "Exit code 1"),
            _bash("find . -name '*.conf.toml'", _FOUND, True),
        ),
        # find looked for another pattern
        (
            _bash("rg --files -g '*.conf.toml'", "Exit code 1"),
            _bash("find . -name '*.toml'", _FOUND, True),
        ),
    ],
)
def test_no_hidden_folder_no_lesson(steps: tuple[Step, ...]) -> None:
    assert [c for c in _fix(*steps) if c[0] == "hidden"] == []


def test_one_fact_written_absolute_and_relative_is_one_lesson(tmp_path):
    """A file found in the project's docs/ by one session that wrote paths relative and by
    another that wrote them absolute (under its working directory) is one fact: one lesson,
    learned in one session or in two; a path outside the project stays as written."""
    from agentmem import Memory

    root = "/w/proj"
    rel = [
        _bash("cat notes.txt", "Exit code 1\ncat: notes.txt: No such file or directory"),
        _bash("ls", "docs\nsrc", True),
        _bash("cat docs/notes.txt", "hello", True),
    ]
    absolute = [
        _bash(
            f"cat {root}/notes.txt",
            f"Exit code 1\ncat: {root}/notes.txt: No such file or directory",
        ),
        _bash(f"ls {root}", "docs\nsrc", True),
        _bash(f"cat {root}/docs/notes.txt", "hello", True),
    ]
    meta = {"project": root, "cwd": root}
    (c,) = [x for x in find_corrections(_run(*absolute)) if x.finding.detail.get("scope")]
    assert root in c.finding.text  # no folder known: as written
    for sessions in ([rel, absolute], [rel + absolute]):
        with Memory.open(tmp_path / f"{len(sessions)}.db", embedder="hash") as mem:
            for steps in sessions:
                mem.record("read the notes", steps, accepted=True, meta=meta)
                if len(sessions) == 2:
                    mem.learn(use_model=False)
            mem.learn(use_model=False)
            texts = [e.text for e in mem.experiences()]
            assert len(texts) == 1 and "notes.txt is at docs/notes.txt" in texts[0], texts
            assert root not in texts[0]
    from agentmem.learning.shell_fixes import relative_to

    out = relative_to(c.finding, ["/w/proj2"])
    assert out.text == c.finding.text


def test_an_ignored_path_added_alone_with_the_advised_flag_is_learned():
    """Real (spotter, Claude Code): ``git add`` of three files, one under a git-ignored
    folder, then a commit whose message is a ``$(cat <<'EOF' ...)`` substitution; after
    seven looks, ``git add -f`` of that one file and ``git add`` of the others, joined by
    ``&&`` to the same commit. The substitution runs inside the commit: the retry proves
    the forced add. Without the advice to use -f, or with a flag the output never named,
    nothing."""
    ignored = (
        "Exit code 1\nThe following paths are ignored by one of your .gitignore files:\n"
        "priv/static/assets\nhint: Use -f if you really want to add them.\n"
    )
    msg = "\"$(cat <<'EOF'\nfeat: panel\nEOF\n)\""
    failed = _bash(f"git add lib/a.ex priv/static/assets/app.css && git commit -m {msg}", ignored)
    looks = [_tool("Grep", {"pattern": "assets", "path": "/w/.gitignore"}, "17:x", True)] * 6
    listed = _bash("git ls-files priv/static/assets/", "priv/static/assets/xterm.css", True)
    fixed = _bash(
        f"git add -f priv/static/assets/app.css && git add lib/a.ex && git commit -m {msg}",
        "[main 1a2b3c4] feat: panel",
        True,
    )
    found = _fix(failed, *looks, listed, fixed)
    assert [(c, s) for c, s, _ in found] == [("forced", "project")]
    assert "priv/static/assets/app.css" in found[0][2] and "-f" in found[0][2]
    quiet = ignored.replace("hint: Use -f if you really want to add them.\n", "")
    assert _fix(_bash(failed.params["command"], quiet), *looks, listed, fixed) == []


# ------------------------------------------------ path facts the run itself made


def _where(*steps: Step) -> list[str]:
    return [c.finding.text for c in find_corrections(_run(*steps)) if c.kind == "shell"]


NO_NOTES = "Exit code 1\ncat: notes.txt: No such file or directory"


def test_a_file_the_run_moved_itself_is_no_location_fact():
    """The failure was the run's own doing: it had moved notes.txt into docs/ itself, so
    "notes.txt is at docs/notes.txt" says where the agent put it, not where the project
    keeps it. (Structural: the development half's traps of this kind, natori's `mv
    README.md README.md.bak` then `rm README.md`, buiviethoang's `mv .claude/erd.md
    docs/erd.md` failing because erd.md was there already, teach nothing before this guard
    either: none of its 36 shell findings is one.) Without the earlier move, the same
    calls teach the location."""
    moved = _bash("mkdir -p docs && mv notes.txt docs/notes.txt", "", True)
    cat = _bash("cat notes.txt", NO_NOTES)
    found = _bash("cat docs/notes.txt", "hello", True)
    assert _where(moved, cat, found) == []
    removed = _bash("git rm -q notes.txt", "rm 'notes.txt'", True)
    assert _where(removed, cat, found) == []
    (text,) = _where(cat, found)
    assert "notes.txt is at docs/notes.txt" in text
    # a move of another file is not this one's
    other = _bash("mv todo.md docs/todo.md", "", True)
    assert len(_where(other, cat, found)) == 1


def test_a_relative_path_that_failed_in_another_folder_is_a_cwd_slip():
    """After `cd apps/api` (Claude Code's shell keeps it, uumk0n in the development half),
    `cat apps/api/src/main.ts` fails and `cat src/main.ts` works: the path found is the
    failed one with the folder the shell stood in taken off, a slip of the working
    directory, not "main.ts is at src/main.ts". So too with another Codex workdir. Real
    negative (boost-act, development half): the same workdir in both calls, and the file
    found under a folder the project keeps it in, stays a location fact."""
    cd = _bash("cd apps/api && ls", "src", True)
    bad = _bash(
        "cat apps/api/src/schema.sql",
        "Exit code 1\ncat: apps/api/src/schema.sql: No such file or directory",
    )
    good = _bash("cat src/schema.sql", "CREATE TABLE t (id INTEGER);", True)
    (alone,) = _where(bad, good)  # without the cd: a location (the shape alone)
    assert "schema.sql is at src/schema.sql" in alone
    assert _where(cd, bad, good) == []
    root, sub = "/home/z/act", "/home/z/act/feature/x"
    sed = "sed -n 1,200p .specify/templates/constitution-template.md"
    missing = (
        "Exit code: 2\nOutput:\nsed: can't read .specify/templates/constitution-template.md: "
        "No such file or directory\n"
    )
    found = "sed -n 1,200p feature/x/.specify/templates/constitution-template.md"

    def codex(cmd: str, out: str, ok: bool, workdir: str) -> Step:
        return Step("shell_command", {"command": cmd, "workdir": workdir}, out, ok)

    kept = _where(codex(sed, missing, False, root), codex(found, "# C", True, root))
    assert len(kept) == 1 and "feature/x/.specify/templates" in kept[0]
    moved = _where(codex(sed, missing, False, sub), codex(found, "# C", True, root))
    assert moved == []


#: Windows' status for a program it could not start, as Git Bash reports it (9009 mod 256).
STUB = "Exit code 49"
_PY312 = "C:/Users/Admin/AppData/Local/Programs/Python/Python312/python.exe"


def test_a_silent_exit_49_is_a_program_windows_could_not_start():
    """Real (886caigudong, Claude Code on Windows): ``python main.py`` exits 49 and writes
    nothing (the Microsoft Store's stub): the program never ran, a misuse, never the code's.
    With output, or with another status, it stays what it was."""
    assert outcome(_bash('cd "C:/w" && python main.py 2>&1', STUB)).failure is Failure.MISUSE
    said = outcome(_bash("python main.py", STUB)).diagnostic
    assert said == "exit code 49 and no output"
    assert outcome(_bash("python main.py", "Exit code 1")).failure is Failure.CODE
    # python3 (the stub too) after a `where` that printed: still not started, never a success
    where = _bash(
        "where python3 2>&1; echo ---; python3 -c \"print('hello')\" 2>&1",
        "Exit code 49\nC:\\Users\\Admin\\AppData\\Local\\Microsoft\\WindowsApps\\python3.exe\n---",
    )
    assert outcome(where).failure is Failure.MISUSE
    view = learning_view(_run(_bash("python main.py", STUB)))
    assert outcome(view.steps[0]).failure is Failure.MISUSE  # the view read again: the same


def test_a_program_windows_could_not_start_teaches_what_ran_instead():
    """Real (886caigudong, a331468564: Claude Code's Git Bash on Windows). ``python`` exits 49
    silently four times, the ``python3`` stub too; the interpreter called by its full path
    printed hello: where it is, whatever the arguments. ``python3 -c`` silent, then ``python
    -c`` of the same code worked: run python. Neither lesson claims the stub is off PATH."""
    from agentmem.learning.shell_fixes import claims_of, find_shell_fixes

    where = _bash(
        "where python3 2>&1; echo ---; python3 -c \"print('hello')\" 2>&1",
        "Exit code 49\nC:\\Users\\Admin\\AppData\\Local\\Microsoft\\WindowsApps\\python3.exe\n---",
    )
    steps = (
        _bash('cd "C:/w" && python main.py 2>&1', STUB),
        _bash('cd "C:/w" && python -u main.py 2>&1', STUB),
        _bash("python -c \"print('hello world')\"", STUB),
        where,
        _bash(f'"{_PY312}" -c "print(\'hello\')" 2>&1', "hello", True),
    )
    found = _fix(*steps)
    assert [(c, s) for c, s, _ in found] == [("fullpath", "machine")]
    assert "python does not start here" in found[0][2] and f"call it as {_PY312}" in found[0][2]
    fix = find_shell_fixes(learning_view(_run(*steps)))[0]
    assert claims_of(fix.finding) == (("on_path", _PY312),)
    # the full path failing as well, and nothing else: nothing
    assert _fix(*steps[:4], _bash(f'"{_PY312}" -V', STUB)) == []

    code = 'from core.config_loader import load_rules; print("OK")'
    found = _fix(
        _bash(f'cd "E:/CC-test" && PYTHONPATH="E:/x" python3 -c \'{code}\' 2>&1', STUB),
        _bash(f'cd "E:/CC-test" && PYTHONPATH="E:/x" python -c \'{code}\' 2>&1', "OK", True),
    )
    assert [(c, s) for c, s, _ in found] == [("interpreter", "machine")]
    assert (
        found[0][2].startswith("python3 does not start here")
        and "run python instead" in (found[0][2])
    )


def test_an_inline_script_run_by_another_interpreter_teaches_the_missing_one():
    """Real (travelplan, Codex): ``python - <<'PY'`` not found; ``node -e`` failed on a quote,
    then ran: python is missing, node ran the inline code. A file's script given to another
    interpreter, or inline code one family member of which ran, is no such lesson."""
    heredoc = "python - <<'PY'\nprint(open('story.md').read().count('- [ ]'))\nPY"
    missing = _bash(heredoc, "Exit code 127\nzsh:1: command not found: python")
    node_bad = _bash('node -e "const fs=require("fs")"', 'Exit code 1\nzsh:1: unmatched "')
    node = _bash(
        'node -e \'const fs=require("fs");console.log(fs.readFileSync("story.md","utf8"))\'',
        "story_files=11",
        True,
    )
    found = _fix(missing, node_bad, node)
    assert [(c, s) for c, s, _ in found] == [("program", "machine")]
    assert (
        "python is not on PATH here" in found[0][2]
        and "node -e ran the inline code" in (found[0][2])
    )
    file_script = _bash("python tools/count.py", "Exit code 127\nzsh:1: command not found: python")
    assert _fix(file_script, _bash("node tools/count.js", "11", True)) == []


def test_a_module_the_projects_environment_has_is_learned():
    """Real (dimicheck4, Codex; deder01, Claude Code): the interpreter that ran could not
    import a module, and the same job ran with the project's environment: ``./.venv/bin/
    python`` with the same here-document, or ``source venv/bin/activate && python3 -c`` of
    code that imports it, after a ``pip install`` into the system python in between."""
    script = "<<'PY'\nfrom app import app\nclient = app.test_client()\nprint(client.get('/12'))\nPY"
    tb = 'Traceback (most recent call last):\n  File "app.py", line 9\n'
    failed = codex_exec(
        f"python - {script}", tb + "ModuleNotFoundError: No module named 'dotenv'", False
    )
    fixed = codex_exec(f"./.venv/bin/python - {script}", "/12 302 /board/1/2", True)
    found = _fix(failed, fixed)
    assert [(c, s) for c, s, _ in found] == [("environment", "project")]
    assert "python lacks dotenv" in found[0][2] and "run it as ./.venv/bin/python" in found[0][2]

    code = "import openpyxl\nwb = openpyxl.load_workbook('/w/finance/c.xlsx')\nprint(wb.sheetnames)"
    missing = _bash(
        f'python3 -c "{code}"', f"Exit code 1\n{tb}ModuleNotFoundError: No module named 'openpyxl'"
    )
    pip = _bash(f'pip install openpyxl --quiet && python3 -c "{code}"', "['Spending']", True)
    look = _bash('ls -la /w/finance/ | grep -E "venv"', "drwxr-xr-x 5 u u 4096 venv", True)
    venv = _bash(
        f'source /w/finance/venv/bin/activate && python3 -c "{code}"', "['Spending']", True
    )
    found = _fix(missing, pip, look, venv)
    assert [(c, s) for c, s, _ in found] == [("environment", "project")]
    assert "source /w/finance/venv/bin/activate first" in found[0][2]
    from agentmem.learning.shell_fixes import claims_of, find_shell_fixes

    fix = find_shell_fixes(learning_view(_run(missing, pip, look, venv)))[0]
    assert claims_of(fix.finding) == (("exists", "/w/finance/venv"),)


@pytest.mark.parametrize(
    "steps",
    [
        # real (luisuma92): a probe that only imports the module: its failure is the answer
        (
            _bash(
                'which python && python -c "import sqlalchemy; print(sqlalchemy.__version__)"',
                "Exit code 1\n/usr/bin/python\nModuleNotFoundError: No module named 'sqlalchemy'",
            ),
            _bash(
                '.venv/bin/python -c "import sqlalchemy; print(sqlalchemy.__version__)"',
                "2.0.48",
                True,
            ),
        ),
        # real (luisuma92): pytest's own import failure is no interpreter's: the venv's python
        # then had no pytest at all
        (
            _bash(
                "uv run pytest tests/test_database.py -v 2>&1",
                "Exit code 1\nE   ModuleNotFoundError: No module named 'sqlalchemy'",
            ),
            _bash('.venv/bin/python -c "import sqlalchemy, sys; sys.exit(0)"', "", True),
        ),
        # another job in the environment: a script file of another name
        (
            _bash("python app.py", "Exit code 1\nModuleNotFoundError: No module named 'dotenv'"),
            _bash(".venv/bin/python manage.py check", "ok", True),
        ),
        # the environment's run failed on the module as well
        (
            _bash("python app.py", "Exit code 1\nModuleNotFoundError: No module named 'dotenv'"),
            _bash(".venv/bin/python app.py", "ModuleNotFoundError: No module named 'dotenv'", True),
        ),
    ],
)
def test_no_environment_lesson_without_the_same_job_done_there(steps: tuple[Step, ...]) -> None:
    assert [c for c, _, _ in _fix(*steps)] == []


def test_windows_commands_in_git_bash_teach_what_did_the_job():
    """Real (ahpou9512, Claude Code on Windows, whose Bash is Git Bash): ``Start-Sleep;
    Get-Content FILE`` and ``del FILE`` were not found; Read of that file and the
    PowerShell tool's ``Remove-Item`` of that file did the job: one lesson of the run. A
    program bash does not know that is no Windows command, or a later call on another
    path, teaches nothing of the kind."""
    out_file = "C:\\Users\\me\\AppData\\Local\\Temp\\claude\\tasks\\b1.output"
    mock = "C:\\Users\\me\\Desktop\\demo\\lib\\mockData.ts"
    sleep = _bash(
        f'Start-Sleep -Seconds 5; Get-Content "{out_file}"',
        "Exit code 127\n/usr/bin/bash: line 1: Start-Sleep: command not found\n"
        "/usr/bin/bash: line 1: Get-Content: command not found",
    )
    read = _tool("Read", {"file_path": out_file}, "1\t> next dev", True)
    delete = _bash(f'del "{mock}"', "Exit code 127\n/usr/bin/bash: line 1: del: command not found")
    removed = Step(tool="PowerShell", params={"command": f'Remove-Item "{mock}"'}, output="")
    found = _fix(sleep, read, delete, removed)
    assert [(c, s) for c, s, _ in found] == [("windows", "machine")]
    text = found[0][2]
    assert "Git Bash" in text and "Start-Sleep, Get-Content, del" in text
    assert "Read and the PowerShell tool (Remove-Item)" in text
    elsewhere = Step(tool="PowerShell", params={"command": 'Get-ChildItem "C:\\Users\\me"'})
    assert _fix(delete, elsewhere) == []
    rg = _bash(f'rg TODO "{mock}"', "Exit code 127\n/usr/bin/bash: line 1: rg: command not found")
    assert [c for c, _, _ in _fix(rg, removed)] == []


def test_the_part_credited_with_the_job_is_the_part_that_changed():
    """From a blind set's false lesson: ``cd DIR && Select-String ...`` failed in Git Bash
    (Select-String not found); ``cd DIR && grep -c ...`` worked. The ``cd`` ran the same in
    both calls: it set the scene, and grep, the command that changed, did the job. A retry
    that changed no command credits nothing."""
    win = "C:/Users/me/Desktop/app"
    failed = _bash(
        f'cd "{win}" && Select-String -Path app.log -Pattern ERROR',
        "Exit code 127\n/usr/bin/bash: line 1: Select-String: command not found",
    )
    retry = _bash(f'cd "{win}" && grep -c ERROR app.log', "3", True)
    [found] = _fix(failed, retry)
    assert found[0] == "windows"
    assert "bash's own grep -c did the job" in found[2] and "own cd" not in found[2]
    alone = _bash(f'grep -c ERROR "{win}/app.log"', "3", True)
    failed_alone = _bash(
        f'Select-String -Path "{win}/app.log" -Pattern ERROR',
        "Exit code 127\n/usr/bin/bash: line 1: Select-String: command not found",
    )
    [found] = _fix(failed_alone, alone)
    assert "bash's own grep -c did the job" in found[2]
    same = _bash(f'cd "{win}" && Select-String -Path app.log -Pattern ERROR', "3", True)
    assert _fix(failed, same) == []


def test_cmd_syntax_that_git_bash_rejects_teaches_the_machines_shell():
    """Real (886caigudong, development half, Claude Code on Windows): ``cd /d "C:\\...\\x" &&
    python main.py`` failed in Git Bash ('cd: too many arguments'); ``cd "C:/.../x" &&
    python main.py`` got past the cd (main.py then failed on its own). Without a drive path
    (not Windows), with cmd's syntax again, or with the retry's cd failing too, nothing."""
    from agentmem.agents.programs import cmd_syntax

    assert [cmd_syntax(x) for x in ('cd /d "C:\\x"', 'if not exist "C:\\x" mkdir x', "dir /b")] == [
        "cd /d",
        "if not exist",
        "dir /b",
    ]
    assert [cmd_syntax(x) for x in ("cd /tmp/d", "ls -la", "if [ -f x ]; then :; fi")] == [None] * 3
    win = "C:\\Users\\me\\Desktop\\app"
    failed = _bash(
        f'cd /d "{win}" && python main.py 2>&1',
        "Exit code 2\n/usr/bin/bash: line 1: cd: too many arguments",
    )
    retry = _bash(
        'cd "C:/Users/me/Desktop/app" && python main.py 2>&1',
        "Exit code 1\n2026-05-21 15:40:30 [INFO] fetching\nKeyError: 'items'",
    )
    found = _fix(failed, retry)
    assert [(c, s) for c, s, _ in found] == [("windows", "machine")]
    assert "cmd's syntax (cd /d) fails there ('cd: too many arguments')" in found[0][2]
    assert "bash's own cd did the job" in found[0][2]
    linux = _bash(
        "cd /d /srv/app && make", "Exit code 1\n/bin/bash: line 1: cd: too many arguments"
    )
    assert _fix(linux, _bash("cd /srv/app && make", "ok", True)) == []
    again = _bash(f'cd /d "{win}" & python main.py', "Exit code 2\ncd: too many arguments")
    assert _fix(failed, again) == []
    lost = _bash(
        'cd "C:/Users/me/Desktop/app" && python main.py',
        "Exit code 1\nbash: cd: C:/Users/me/Desktop/app: No such file or directory",
    )
    assert _fix(failed, lost) == []


def test_cmd_syntax_on_the_runs_own_folder_is_learned_from_what_worked_there():
    """Synthetic, of a class a validation replay miss showed (Claude Code on Windows):
    ``dir /b "C:\\...\\app"`` run in that folder failed in Git Bash ('dir: cannot access
    '/b''), then Glob ``backend/*.py`` (a relative pattern, so that folder) worked and a
    ``cd`` line that rewrote nothing followed. The fact is learned, crediting nothing. A
    later call naming another rooted path, or a run in another folder, is not on it."""
    win = "C:\\Users\\me\\Desktop\\app"
    failed = _bash(
        f'dir /b "{win}"',
        "Exit code 2\ndir: cannot access '/b': No such file or directory\n\nbackend  README.md",
    )
    glob = _tool("Glob", {"pattern": "backend/*.py"}, f"{win}\\backend\\main.py", True)
    cd = _bash(f'cd "{win}\\web" && npm run dev 2>&1 | head -30', "ready", True)

    def learned(*steps: Step, cwd: str = win) -> list[tuple[str, str, str]]:
        run = Trajectory(task="t", steps=steps, accepted=True, meta={"cwd": cwd})
        return [
            (c.finding.detail.get("change", ""), c.finding.detail.get("scope", ""), c.finding.text)
            for c in find_corrections(run)
        ]

    (found,) = learned(failed, glob, cd)
    assert found[:2] == ("windows", "machine")
    assert found[2] == (
        "The Bash tool runs Git Bash here: cmd's syntax (dir /b) fails there "
        "('dir: cannot access /b: No such...')."
    )
    assert learned(failed, glob, cwd="C:\\Users\\me\\other") == []
    elsewhere = _tool("Glob", {"pattern": "*.py", "path": "D:\\x"}, "D:\\x\\a.py", True)
    assert learned(failed, elsewhere) == []
    # a rewrite the shell reader cannot read (a quoted C:\ path) is read from its words:
    # the program the failed line named, with other words, did the job
    out = f"{win}\\out"
    made = _bash(
        f'if not exist "{out}" mkdir "{out}"', "eval: line 2: syntax error: unexpected end of file"
    )
    (found,) = learned(made, _bash(f'mkdir -p "{out}"', "", True))
    assert found[2].endswith("; bash's own mkdir -p did the job instead.")


def test_powershell_51_refusing_and_and_teaches_the_machines_separator():
    """Synthetic (no development-half run shows it): Codex on Windows runs Windows
    PowerShell 5.1, which refuses ``&&``. The same commands joined with ``;`` / ``if ($?)``
    or run as separate calls that worked teach it; ``&&`` again, or other commands, not."""
    refused = (
        "At line:1 char:8\n+ cd web && npm test\n+        ~~\n"
        "The token '&&' is not a valid statement separator in this version."
    )
    failed = _codex_shell("cd web && npm test", refused)
    assert outcome(failed).failure is Failure.MISUSE  # npm test never ran: no code failure
    assert outcome(failed).diagnostic.startswith("The token '&&' is not a valid")
    joined = _codex_shell("cd web; if ($?) { npm test }", "2 passed", True)
    (found,) = _fix(failed, joined)
    assert found[:2] == ("separator", "machine")
    assert found[2].startswith("Here the shell is Windows PowerShell 5.1: && and || are not")
    apart = (_codex_shell("cd web", "", True), _codex_shell("npm test", "2 passed", True))
    assert [c for c, _, _ in _fix(failed, *apart)] == ["separator"]
    again = _codex_shell("cd web && npm test", refused)
    assert _fix(failed, again) == []
    # the second refusal is the one the joined call corrects: one lesson, not two
    assert [c for c, _, _ in _fix(failed, again, joined)] == ["separator"]
    assert _fix(failed, _codex_shell("cd web; npm run lint", "ok", True)) == []


def test_a_script_that_runs_only_from_its_folder_is_learned():
    """Real (spotter, Claude Code; smartagent-so-pai): ``node assets/build.js`` could not
    resolve ``js/app.js``; ``cd assets && node build.js`` worked. ``cd ~/.claude && bun
    hooks/self-test.ts`` failed scanning a folder; from ~/Projects/PAI it worked. Another
    script, the same folder, or the same failure again teaches nothing."""
    meta = {"cwd": "/w/spotter"}
    failed = _bash(
        "node assets/build.js 2>&1", 'Exit code 1\n✘ [ERROR] Could not resolve "js/app.js"'
    )
    read = _tool("Read", {"file_path": "/w/spotter/assets/build.js"}, "1\tconst esbuild", True)
    fixed = _bash("cd /w/spotter/assets && node build.js 2>&1", "", True)
    from agentmem.learning.shell_fixes import find_shell_fixes

    run = learning_view(Trajectory(task="build", steps=(failed, read, fixed), meta=meta))
    found = [x.finding for x in find_shell_fixes(run)]
    assert [f.detail["change"] for f in found] == ["workdir"]
    assert found[0].text.startswith("In this project run build.js from assets (cd assets && node")
    pai = _fix(
        _bash(
            "cd ~/.claude && bun hooks/self-test.ts 2>&1",
            "Exit code 1\nENOENT: no such file or directory, scandir '/u/.claude/.claude/agents'",
        ),
        _bash("cd ~/Projects/PAI && bun .claude/hooks/self-test.ts 2>&1", "✅ PAI_DIR", True),
    )
    assert [(c, s) for c, s, _ in pai] == [("workdir", "project")]
    assert "from ~/Projects/PAI (cd ~/Projects/PAI && bun .claude/hooks/self-test.ts)" in pai[0][2]
    # the same folder again, another script, the error again: nothing
    assert _fix(failed, _bash("cd /w/spotter && node assets/build.js 2>&1", "", True)) == []
    assert _fix(failed, _bash("cd /w/spotter/assets && node other.js 2>&1", "", True)) == []
    again = _bash(
        "cd /w/spotter/assets && node build.js 2>&1", 'Could not resolve "js/app.js"', True
    )
    assert _fix(failed, again) == []


def test_scripts_with_crlf_line_endings_are_learned():
    """Real (MoonMind, Codex under WSL on a Windows drive): ``check-prerequisites.sh`` failed
    on ``bash\\r`` and ``$'\\r'``; a python3 script replaced ``\\r\\n`` in the folder's
    scripts, and the script then ran past it (to another error of its own). Without a
    conversion in between, or with the carriage return still read, nothing."""
    script = ".specify/scripts/bash/check-prerequisites.sh"
    cr = codex_exec(f"{script} --json", "/usr/bin/env: ‘bash\r’: No such file or directory", False)
    again = codex_exec(
        f"bash {script} --json", f"{script}: line 2: $'\\r': command not found", False
    )
    fix = (
        "python3 - <<'PY'\nfrom pathlib import Path\nfor p in Path('.specify/scripts/bash')"
        ".rglob('*'):\n    p.write_bytes(p.read_bytes().replace(b'\\r\\n', b'\\n'))\nPY"
    )
    converted = codex_exec(fix, "", True)
    ran = codex_exec(
        f"{script} --json", "ERROR: Not on a feature branch. Current branch: main", False
    )
    found = [x for x in _fix(cr, again, converted, ran) if x[0] == "crlf"]
    assert [(c, s) for c, s, _ in found] == [("crlf", "project")]
    assert "check-prerequisites.sh" in found[0][2] and "CRLF line endings" in found[0][2]
    assert [x for x in _fix(cr, again, ran) if x[0] == "crlf"] == []
    still = codex_exec(f"{script} --json", f"{script}: line 3: $'\\r': command not found", False)
    assert [x for x in _fix(cr, converted, still) if x[0] == "crlf"] == []


def test_zsh_naming_the_failed_cd_makes_it_the_failing_command():
    """zsh writes a builtin's failure as ``(eval):cd:1: no such file or directory: D``: the
    cd failed and nothing after it ran, so a checker after it (``npx tsc``) never failed on
    the code: a misuse, never the code's."""
    step = _bash(
        "cd apps/api && npx tsc --noEmit",
        "Exit code 1\n(eval):cd:1: no such file or directory: apps/api",
    )
    assert outcome(step).failure is Failure.MISUSE


def test_git_bash_paths_a_windows_program_cannot_open_are_learned():
    """Real (a331468564, Claude Code's Git Bash): python -c read '/e/CC-test/...' inside its
    code and failed ('FileNotFoundError: [WinError 3] ... /e/CC-test/...'); the same code
    with 'E:/CC-test/...' ran. Another program, or the MSYS path kept, teaches nothing."""
    code = "import os\nprint(os.path.getsize('{}'))"
    path = "/e/CC-test/.claude/projects/E--CC-test/360b428a.jsonl"
    failed = _bash(
        f'python -c "{code.format(path)}"',
        "Exit code 1\nTraceback (most recent call last):\n"
        f"FileNotFoundError: [WinError 3] The system cannot find the path: '{path}'",
    )
    fixed = _bash(f'python -c "{code.format("E:" + path[2:])}"', "3217", True)
    found = _fix(failed, fixed)
    assert [(c, s) for c, s, _ in found] == [("drive", "machine")]
    assert "Git Bash's /e/... paths" in found[0][2] and "E:/..." in found[0][2]
    assert _fix(failed, _bash(f"ls -la E:{path[2:]}", "x.jsonl", True)) == []
    assert _fix(failed, _bash(f'python -c "{code.format(path)}"', "3217", True)) == []


def test_a_console_encoding_made_utf8_is_learned():
    """Real (a331468564): python -c printed an emoji and failed ('gbk' codec can't encode);
    the same code with sys.stdout.reconfigure(encoding='utf-8') ran. Real (886caigudong): the
    same error, and the agent went on without changing the encoding: nothing."""
    code = "import json\nfor line in open('E:/w/s.jsonl'):\n    print(json.loads(line)['text'])"
    failed = _bash(
        f'python -c "{code}"',
        'Exit code 1\nTraceback (most recent call last):\n  File "<string>", line 3\n'
        "UnicodeEncodeError: 'gbk' codec can't encode character '\\U0001f3af' in position 44",
    )
    fixed = _bash(
        f"python -c \"import sys\nsys.stdout.reconfigure(encoding='utf-8')\n{code}\"", "Done", True
    )
    found = _fix(failed, fixed)
    assert [(c, s) for c, s, _ in found] == [("encoding", "machine")]
    assert "console encoding here is gbk" in found[0][2] and "reconfigure" in found[0][2]
    env = _bash(f'PYTHONIOENCODING=utf-8 python -c "{code}"', "Done", True)
    assert "PYTHONIOENCODING=utf-8" in _fix(failed, env)[0][2]
    assert _fix(failed, _bash(f'python -c "{code[:40]}"', "Done", True)) == []
    assert _fix(failed, _bash("git status", "clean", True)) == []


def test_acting_on_what_already_exists_is_learned():
    """Real (jason-liu-0219, Claude Code): ``gh pr create`` refused, a pull request for the
    branch already existed (its URL ending /pull/6689); ``gh pr edit 6689`` with the same
    title and body worked. Another number than the output's, an option changed too, or a
    failure that is not "already exists": nothing of the kind."""
    body = '--title "fix(vsaas): re-select role" --body "## Summary"'
    failed = _bash(
        f"gh pr create {body}",
        'Exit code 1\na pull request for branch "me:fix-access" into branch "main" already '
        "exists:\nhttps://github.com/o/webtech-monorepo/pull/6689",
    )
    found = _fix(failed, _bash(f"gh pr edit 6689 {body}", "https://github.com/o/r/pull/6689", True))
    assert [(c, s) for c, s, _ in found] == [("existing", "tool")]
    assert found[0][2].startswith("gh pr create fails when that already exists")
    assert "run gh pr edit <id> on it" in found[0][2]
    assert _fix(failed, _bash(f"gh pr edit 12 {body}", "ok", True)) == []
    assert _fix(failed, _bash(f"gh pr edit 6689 {body} --draft", "ok", True)) == []
    other = _bash(f"gh pr create {body}", "Exit code 1\nGraphQL: Head sha can't be blank")
    assert _fix(other, _bash(f"gh pr edit 6689 {body}", "ok", True)) == []


_NF = "No such file or directory"
_NO_REPO = 'expected the "[HOST/]OWNER/REPO" format, got "jwt-auth-pro"'


@pytest.mark.parametrize(
    ("failed", "retry", "says"),
    [
        # a count changed beside the path (head -50 -> -80), a display option added
        (
            _bash("head -50 notes.md", f"Exit code 1\nhead: cannot open 'notes.md': {_NF}"),
            _bash("head -80 docs/notes.md", OK, True),
            "notes.md is at docs/notes.md",
        ),
        (
            _bash("cat notes.md", f"Exit code 1\ncat: notes.md: {_NF}"),
            _bash("cat -n docs/notes.md 2>&1 | head -50", OK, True),
            "notes.md is at docs/notes.md",
        ),
        (
            _bash("sed -n 1,200p notes.md", f"Exit code 2\nsed: can't read notes.md: {_NF}"),
            _bash("sed -n 1,80p docs/notes.md", OK, True),
            "notes.md is at docs/notes.md",
        ),
        # real (tmeister-dotfiles, Claude Code): the repository named, the count changed too
        (
            _bash(
                "gh pr list --repo jwt-auth-pro --state all --limit 10", f"Exit code 1\n{_NO_REPO}"
            ),
            _bash("gh pr list --repo Tmeister/jwt-auth-pro --state all --limit 20", OK, True),
            "with Tmeister/jwt-auth-pro, not jwt-auth-pro",
        ),
        (
            _bash("git log -n 5 mian", "Exit code 128\nfatal: ambiguous argument 'mian'"),
            _bash("git log -n 10 main", OK, True),
            "with main, not mian",
        ),
    ],
)
def test_a_retry_that_also_changed_how_much_output_shows_still_teaches(
    failed: Step, retry: Step, says: str
) -> None:
    """A retry that fixed the element the diagnostic names and also changed an inert part
    (a count, a sed line range, a display option of a reader, a filter stage, ``2>&1``)
    is judged by that element alone."""
    (found,) = _fix(failed, retry)
    assert says in found[2]


@pytest.mark.parametrize(
    ("failed", "retry"),
    [
        # an option of a program that runs code is no display option
        (
            _bash("python x.py", f"Exit code 2\npython: can't open file 'x.py': [Errno 2] {_NF}"),
            _bash("python -u scripts/x.py", OK, True),
        ),
        # another file, whatever the count
        (
            _bash("head -50 notes.md", f"Exit code 1\nhead: cannot open 'notes.md': {_NF}"),
            _bash("head -80 docs/todo.md", OK, True),
        ),
        # the count changed, but also a word the diagnostic does not name
        (
            _bash("git log -n 5 mian src", "Exit code 128\nfatal: ambiguous argument 'mian'"),
            _bash("git log -n 10 main lib", OK, True),
        ),
        # an option with a value (a folder) changed beside the path: not inert
        (
            _bash("grep -r foo notes.md", f"Exit code 2\ngrep: notes.md: {_NF}"),
            _bash("grep --include=*.md -r foo docs/notes.md", OK, True),
        ),
    ],
)
def test_a_retry_that_changed_more_than_output_teaches_nothing(failed: Step, retry: Step) -> None:
    assert _fix(failed, retry) == []


_GONE = (
    "<tool_use_error>File does not exist. Note: your current working directory is /w/app."
    "</tool_use_error>"
)


def _in_app(*steps: Step) -> list[tuple[str, str, str]]:
    t = Trajectory(task="do the thing", steps=steps, accepted=True, meta={"cwd": "/w/app"})
    return [
        (c.finding.detail.get("change", c.kind), c.finding.detail.get("scope", ""), c.finding.text)
        for c in find_corrections(t)
    ]


from agentmem.learning.findings import Finding  # noqa: E402


def _env_fix(*steps: Step) -> list[Finding]:
    t = Trajectory(task="do the thing", steps=steps, accepted=True)
    return [c.finding for c in find_corrections(t) if c.finding.detail.get("change") == "env"]


def test_a_variable_the_error_asked_for_and_the_retry_set_is_a_correction() -> None:
    """The error asks for an environment variable in plain words and the same command,
    run with it set (``X=v cmd``, ``env X=v cmd``, ``export X=v; cmd``), worked. A
    script that stops on the missing setting (the view counts it the code's) too."""
    ci = _bash("npx expo export", "Exit code 1\nError: not interactive: set CI=true to continue")
    (f,) = _env_fix(ci, _bash("CI=true npx expo export", "Exported", True))
    assert f.text.startswith("In this project expo needs CI set (")
    assert f.text.endswith("run it as CI=true npx expo export.")
    token = _bash(
        "wrangler deploy", "Exit code 1\nCLOUDFLARE_API_TOKEN environment variable is required"
    )
    (f,) = _env_fix(
        token, _bash("export CLOUDFLARE_API_TOKEN=s3cr3tvalue; wrangler deploy", OK, True)
    )
    assert "CLOUDFLARE_API_TOKEN=<value> wrangler deploy" in f.text
    assert "s3cr3t" not in f.text and "s3cr3t" not in str(f.detail)  # a secret never kept
    django = _bash(
        "python manage.py migrate",
        "Exit code 1\nTraceback (most recent call last):\n"
        "django.core.exceptions.ImproperlyConfigured: settings are not configured. "
        "You must define the environment variable DJANGO_SETTINGS_MODULE",
    )
    fixed = _bash("env DJANGO_SETTINGS_MODULE=app.settings python manage.py migrate", OK, True)
    (f,) = _env_fix(django, fixed)
    assert f.text.endswith(
        "run it as DJANGO_SETTINGS_MODULE=app.settings python manage.py migrate."
    )


def test_a_variable_that_weakens_security_is_held_for_a_person() -> None:
    from agentmem.agents.risk import review_columns

    failed = _bash(
        "npm install",
        "Exit code 1\nnpm ERR! self-signed certificate; set NODE_TLS_REJECT_UNAUTHORIZED=0",
    )
    (f,) = _env_fix(failed, _bash("NODE_TLS_REJECT_UNAUTHORIZED=0 npm install", OK, True))
    assert review_columns(f.text, f.detail)["review"] == "held"
    (safe,) = _env_fix(
        _bash("npx expo export", "Exit code 1\nset CI=true"),
        _bash("CI=1 npx expo export", OK, True),
    )
    assert review_columns(safe.text, safe.detail)["review"] is None


@pytest.mark.parametrize(
    "steps",
    [
        # another variable than the one asked for
        (
            _bash("npx expo export", "Exit code 1\nset CI=true to continue"),
            _bash("NODE_ENV=production npx expo export", OK, True),
        ),
        # nothing asked: a variable set on a whim
        (
            _bash("make build", "Exit code 2\nmake: *** [build] Error 2"),
            _bash("DEBUG=1 make build", OK, True),
        ),
        # another command
        (
            _bash("npx expo export", "Exit code 1\nset CI=true to continue"),
            _bash("CI=true npx expo start", OK, True),
        ),
        # it failed again with the variable set
        (
            _bash("npx expo export", "Exit code 1\nset CI=true to continue"),
            _bash("CI=true npx expo export", "Exit code 1\nError: no app.json"),
        ),
        # the failed call had set it already
        (
            _bash("CI=false npx expo export", "Exit code 1\nset CI=true to continue"),
            _bash("CI=true npx expo export", OK, True),
        ),
    ],
)
def test_a_variable_not_asked_for_or_not_enough_teaches_nothing(steps: tuple[Step, ...]) -> None:
    assert _env_fix(*steps) == []


_LS_LA = (
    "total 8\ndrwxr-xr-x  4 u staff 128 Jan 1 .\ndrwxr-xr-x  4 u staff 128 Jan 1 ..\n"
    "drwxr-xr-x  3 u staff  96 Jan 1 .ai-clean\n-rw-r--r--  1 u staff  10 Jan 1 README.md\n"
)
_NONE = _bash("rg --files -g '*.butler.yaml'", "Exit code 1")
_HIDDEN_SAYS = "*.butler.yaml files are in .ai-clean/specs/, a hidden folder rg --files skips"


@pytest.mark.parametrize(
    "steps",
    [
        (
            _NONE,
            _bash("ls -la", _LS_LA, True),
            _bash("cat .ai-clean/specs/a.butler.yaml", OK, True),
        ),
        (
            _NONE,
            _bash(
                "find . -maxdepth 3 -type f", "./README.md\n./.ai-clean/specs/a.butler.yaml", True
            ),
            _tool("Read", {"file_path": ".ai-clean/specs/a.butler.yaml"}, "1\tname: a", True),
        ),
        (
            _NONE,
            _tool(
                "Glob",
                {"pattern": "**/*.butler.yaml"},
                "/w/app/.ai-clean/specs/a.butler.yaml",
                True,
            ),
            _tool(
                "Read", {"file_path": "/w/app/.ai-clean/specs/a.butler.yaml"}, "1\tname: a", True
            ),
        ),
    ],
)
def test_a_hidden_folder_found_by_any_discovery_then_used_is_learned(
    steps: tuple[Step, ...],
) -> None:
    """``rg --files -g G`` listed nothing; a discovery that shows hidden entries (``ls
    -la``, ``find . -maxdepth``, Glob) named the hidden folder, and a later call used a
    file matching G under it and worked."""
    found = [x for x in _in_app(*steps) if x[0] == "hidden"]
    assert [(c, s) for c, s, _ in found] == [("hidden", "project")]
    assert _HIDDEN_SAYS in found[0][2]


@pytest.mark.parametrize(
    "steps",
    [
        (_NONE, _bash("ls -la", _LS_LA, True)),  # found, never used
        (_NONE, _bash("ls -la", _LS_LA, True), _bash("cat .ai-clean/notes.md", OK, True)),
        (
            _NONE,
            _bash("ls -la", _LS_LA, True),
            _bash("cat .ai-clean/specs/a.butler.yaml", "Exit code 1\ncat: No such file", False),
        ),
        # not under a hidden folder the discovery showed
        (_NONE, _bash("ls -la", _LS_LA, True), _bash("cat specs/a.butler.yaml", OK, True)),
        (
            _NONE,
            _bash("ls", "README.md", True),
            _bash("cat .ai-clean/specs/a.butler.yaml", OK, True),
        ),
    ],
)
def test_a_hidden_folder_not_shown_or_not_used_teaches_nothing(steps: tuple[Step, ...]) -> None:
    assert [x for x in _in_app(*steps) if x[0] == "hidden"] == []


_NAMED = codex_exec("rg --files | rg -i 'copilot[-_]instructions\\.md|copilot.*md'", "", False)
_COPILOT_FOUND = "./.github/copilot-instructions.md\n./.idea/copilot.data.xml\n"


def test_files_rg_filtered_by_name_found_in_a_hidden_folder_are_learned() -> None:
    """Real (tinycalc, Codex, development half): ``rg --files | rg -i R`` listed nothing
    (exit 1); ``find . -maxdepth 5 -type f | rg -i x`` then showed the file in .github/,
    and ``sed`` of it worked. The same question as ``rg --files -g G``, asked as a
    pattern of the paths: where the project keeps the file, which rg --files skips."""
    found = [
        x
        for x in _in_app(
            _NAMED,
            codex_exec(
                "find . -maxdepth 5 -type f | rg -i 'copilot|instruction'", _COPILOT_FOUND, True
            ),
            codex_exec("sed -n '1,260p' .github/copilot-instructions.md", "# Copilot", True),
        )
        if x[0] == "hidden"
    ]
    assert [(c, s) for c, s, _ in found] == [("hidden", "project")]
    says = "copilot-instructions.md is in .github/, a hidden folder rg --files skips"
    assert says in found[0][2]


@pytest.mark.parametrize(
    "steps",
    [
        # the file the pattern names is not under a hidden folder: rg would have listed it
        (
            _NAMED,
            codex_exec("find . -type f | rg -i copilot", "./docs/copilot-instructions.md\n", True),
            codex_exec("sed -n '1,260p' docs/copilot-instructions.md", "# Copilot", True),
        ),
        # the file used under the hidden folder is not one the pattern asked for
        (
            _NAMED,
            codex_exec("find . -maxdepth 5 -type f", "./.github/workflows/ci.yml\n", True),
            codex_exec("sed -n '1,80p' .github/workflows/ci.yml", "name: ci", True),
        ),
        # inverted: the files that do not match, no question of where one is
        (
            codex_exec("rg --files | rg -v 'copilot.*md'", "", False),
            codex_exec("find . -maxdepth 5 -type f | rg -i copilot", _COPILOT_FOUND, True),
            codex_exec("sed -n '1,260p' .github/copilot-instructions.md", "# Copilot", True),
        ),
        # rg listed hidden files already, or only one folder
        (
            codex_exec("rg --files --hidden | rg 'copilot.*md'", "", False),
            codex_exec("find . -maxdepth 5 -type f | rg -i copilot", _COPILOT_FOUND, True),
            codex_exec("sed -n '1,260p' .github/copilot-instructions.md", "# Copilot", True),
        ),
        (
            codex_exec("rg --files src | rg 'copilot.*md'", "", False),
            codex_exec("find . -maxdepth 5 -type f | rg -i copilot", _COPILOT_FOUND, True),
            codex_exec("sed -n '1,260p' .github/copilot-instructions.md", "# Copilot", True),
        ),
        # grep's basic syntax reads | as itself: no pattern Python would read alike
        (
            codex_exec("rg --files | grep 'docfx|copilot'", "", False),
            codex_exec("find . -maxdepth 5 -type f | rg -i copilot", _COPILOT_FOUND, True),
            codex_exec("sed -n '1,260p' .github/copilot-instructions.md", "# Copilot", True),
        ),
        # a search of the files' text, not of their names
        (
            codex_exec("rg -l 'copilot.*md'", "", False),
            codex_exec("find . -maxdepth 5 -type f | rg -i copilot", _COPILOT_FOUND, True),
            codex_exec("sed -n '1,260p' .github/copilot-instructions.md", "# Copilot", True),
        ),
    ],
)
def test_a_name_filter_not_answered_in_a_hidden_folder_teaches_nothing(
    steps: tuple[Step, ...],
) -> None:
    assert [x for x in _in_app(*steps) if x[0] == "hidden"] == []


def test_a_risky_variable_learned_from_a_real_import_is_held(tmp_path: Path) -> None:
    """Through the whole path (import of a Claude Code file, learn, store): a TLS check
    turned off by the variable the error asked for is learned, and held. (A Read of a path
    that is not there, then the same file name in docs/, teaches nothing: the client tools'
    location rule was taken out, with no real positive example and one false lesson.)"""
    s = ClaudeSession(cwd="/w/app")
    for task in TASKS:
        s.prompt(task)
        s.tool("Read", {"file_path": "/w/app/notes.txt"}, _GONE, is_error=True)
        s.tool("Read", {"file_path": "/w/app/docs/notes.txt"}, "1\tbuy milk")
        s.tool(
            "Bash",
            {"command": "npm install"},
            "Exit code 1\nnpm ERR! self-signed certificate; set NODE_TLS_REJECT_UNAUTHORIZED=0",
            is_error=True,
        )
        s.tool("Bash", {"command": "NODE_TLS_REJECT_UNAUTHORIZED=0 npm install"}, "added 3")
        s.say("Done.")
    path = s.write(tmp_path / "s.jsonl")
    old = time.time() - 3 * 86400
    os.utime(path, (old, old))
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        for tid in mem.import_transcripts("claude-code", [path]).ids:
            mem.feedback(tid, "accept")
        mem.learn(use_model=False)
        texts = {e.id: e.text for e in mem.experiences()}
        held = {h["id"] for h in mem.held()}
    located = [k for k, x in texts.items() if "notes.txt is at docs/notes.txt" in x]
    tls = [k for k, x in texts.items() if "NODE_TLS_REJECT_UNAUTHORIZED=0 npm install" in x]
    assert not located
    assert tls and set(tls) <= held


def test_a_retry_whose_filter_hides_its_failure_proves_no_fix():
    """From a blind set's false lesson: ``az costmanagement query`` failed (its extension
    missing), ``az extension add --name costmanagement`` ran, then ``az costmanagement
    query ... | head -50`` exited 0 with az's own error in its output: head's status, not
    az's. The query still failed; nothing is learned. The same retry whose output is the
    query's answer teaches the prerequisite; so does one under ``set -o pipefail``."""
    query = "az costmanagement query --type Usage --scope subscriptions/1"
    failed = _bash(
        query,
        "Exit code 2\nERROR: 'costmanagement' is misspelled or not recognized by the system.",
    )
    add = _bash("az extension add --name costmanagement", "", True)
    hidden = _bash(
        f"{query} | head -50",
        "ERROR: 'query' is misspelled or not recognized by the system.\n\n"
        "Examples from AI knowledge base:",
        True,
    )
    assert _fix(failed, add, hidden) == []
    usage = _bash(f"{query} 2>&1 | tail -5", "usage: az costmanagement [-h]", True)
    assert _fix(failed, add, usage) == []
    answered = _bash(f"{query} | head -50", '{\n  "rows": [[12.5, "USD"]]\n}', True)
    [found] = _fix(failed, add, answered)
    assert found[0] == "prerequisite"
    assert found[2].startswith("Run az extension add --name costmanagement before az")
    strict = _bash(f"set -o pipefail && {query} | head -50", hidden.output, True)
    assert [c for c, _, _ in _fix(failed, add, strict)] == ["prerequisite"]
