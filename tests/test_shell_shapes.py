"""Shell corrections judged by structure, not by the exact shape a rule's author saw.

Each relaxation of :mod:`agentmem.learning.shell_fixes` is one general rule (see
docs/learning-rules.md, "Shapes that do not matter"): a positive that now teaches and a
negative that still teaches nothing, beside it.
"""

from __future__ import annotations

from agentmem.agents import learning_view
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory

NO_STAT = "error: unrecognized argument: --no-stat"


def _sh(command: str, output: str = "done", ok: bool = True, code: int = 0) -> Step:
    code = code or (127 if "not found" in output else 1)
    return Step(
        tool="Bash",
        params={"command": command},
        output=output if ok else f"Exit code {code}\n{output}",
        success=ok,
    )


def _changes(*steps: Step, cwd: str = "/w/app") -> list[tuple[str, str]]:
    t = Trajectory(task="do the thing", steps=steps, meta={"cwd": cwd})
    return [
        (x.finding.detail["change"], x.finding.text) for x in find_shell_fixes(learning_view(t))
    ]


# --------------------------------------------------------------------------- wrappers


def test_a_wrapper_that_runs_the_command_as_it_is_is_no_change():
    """``time``, ``nice``, ``nohup`` (Role.TRANSPARENT) on either side: the same command."""
    for failed, retry in (
        ("time git show --no-stat abc1234", "git show abc1234"),
        ("git show --no-stat abc1234", "nice -n 5 git show abc1234"),
    ):
        got = _changes(_sh(failed, NO_STAT, False), _sh(retry))
        assert [c for c, _ in got] == ["flag"], (failed, retry, got)
        assert "--no-stat" in got[0][1]


def test_a_dropped_privilege_is_no_change_but_an_added_one_is():
    """A retry without ``sudo`` made nothing work by having less privilege: the named flag
    did. A retry that adds ``sudo`` may have worked by it: nothing is learned."""
    dropped = _changes(
        _sh("sudo git show --no-stat abc1234", NO_STAT, False), _sh("git show abc1234")
    )
    assert [c for c, _ in dropped] == ["flag"]
    added = _changes(
        _sh("git show --no-stat abc1234", NO_STAT, False), _sh("sudo git show abc1234")
    )
    assert added == []


def test_advice_is_read_without_a_transparent_wrapper():
    upstream = (
        "fatal: The current branch feat has no upstream branch.\n"
        "To push the current branch and set the remote as upstream, use\n\n"
        "    git push --set-upstream origin feat\n"
    )
    got = _changes(
        _sh("git push", upstream, False), _sh("time git push --set-upstream origin feat")
    )
    assert [c for c, _ in got] == ["suggested"]
    other = _changes(_sh("git push", upstream, False), _sh("time git push --force origin feat"))
    assert [c for c, _ in other] != ["suggested"]


# --------------------------------------------------------------------------- route

NO_ZIP = (
    "unzip:  cannot find zipfile directory in one of data.7z or\n"
    "        data.7z.zip, and cannot find data.7z.ZIP, period."
)


def test_another_program_on_the_same_target_teaches_nothing():
    """``route`` ("P on T fails here with D; Q did the job instead") was built on the
    development half with synthetic positives only; on its first blind try (blind set 4,
    74 sessions) it made 2 lessons, both false, and none true, so it was taken out: a
    program that ran and failed on a target, then another program or a client tool that
    did something with the same target, teaches nothing."""
    assert (
        _changes(_sh("unzip data.7z", NO_ZIP, False), _sh("7z x data.7z", "Everything is Ok")) == []
    )
    parse = "rg: regex parse error:\n    fetch(\n         ^\nerror: unclosed group"
    bad = _sh("rg -n 'fetch(' src", parse, False, code=2)
    grep = Step(
        tool="Grep", params={"pattern": "fetch(", "path": "src"}, output="src/a.ts:3", success=True
    )
    assert _changes(bad, grep) == []
    usage = "usage: git diff --no-index [<options>] <path> <path> [<pathspec>...]"
    assert _changes(_sh("git diff notes.txt", usage, False, code=129), _sh("nl notes.txt")) == []


def test_a_read_is_never_done_by_an_edit():
    bad = _sh("sed -n '1,20{p' notes.md", "sed: -e expression #1, char 0: unmatched `{'", False)
    patch = _sh(
        "apply_patch <<'PATCH'\n*** Update File: notes.md\nPATCH", "Success. Updated notes.md"
    )
    assert _changes(bad, patch) == []


# --------------------------------------------------------------------------- a call's own command

FORMAT = "** (Mix) Code is not formatted. Run 'mix format' to fix."


def test_advice_run_inside_a_compound_that_proves_it_is_advised():
    """The advised command anywhere in the next call, joined by ``&&`` to what follows."""
    got = _changes(_sh("git commit -m wip", FORMAT, False), _sh("mix format && git commit -m wip"))
    assert [c for c, _ in got] == ["advised"]
    piped = _changes(_sh("git commit -m wip", FORMAT, False), _sh("cd /w/app && mix format 2>&1"))
    assert [c for c, _ in piped] == ["advised"]


def test_advice_whose_success_is_not_shown_is_not_advised():
    """``mix format || true`` and ``mix format; git status`` may have failed: not learned."""
    for line in ("mix format || true", "mix format; git status"):
        got = _changes(_sh("git commit -m wip", FORMAT, False), _sh(line))
        assert "advised" not in [c for c, _ in got], line


def test_a_search_trimmed_by_a_filter_or_run_from_the_session_folder_is_the_same_search():
    """``rg --files -g G | head`` and ``cd <session folder> && find . -name G``: the filter
    passes the listing on, and a ``cd`` to where the session is moves nowhere."""
    got = _changes(
        _sh("rg --files -g '*.spec.yaml' | head -50", ""),  # head exits 0
        _sh("cd /w/app && find . -name '*.spec.yaml'", "./.config/specs/a.spec.yaml"),
    )
    assert [c for c, _ in got] == ["hidden"]
    assert ".config/specs/" in got[0][1]


def test_a_search_run_from_another_folder_or_counted_is_not():
    """From another folder the path found is that folder's; ``| wc -l`` prints a count."""
    moved = _changes(
        _sh("rg --files -g '*.spec.yaml'", "", False),
        _sh("cd /w/other && find . -name '*.spec.yaml'", "./.config/specs/a.spec.yaml"),
    )
    assert moved == []
    counted = _changes(
        _sh("rg --files -g '*.spec.yaml'", "", False),
        _sh("find . -name '*.spec.yaml' | wc -l", "1"),
    )
    assert counted == []


# --------------------------------------------------------------------------- the parser


def test_a_redirect_before_a_pipe_keeps_the_pipe_in_the_chain_it_ends():
    """``cd a && node b.js 2>&1 | head`` is ``cd a && (node b.js 2>&1 | head)`` in bash;
    tree-sitter reads it as ``(cd a && node b.js) 2>&1 | head``, which made ``head`` a
    pipeline of its own, joined by nothing, and the ``&&`` retry unproven."""
    from agentmem.agents.shell import parse

    def shape(line: str) -> list[tuple[str, list[str]]]:
        return [(p.connector, [c.program for c in p.commands]) for p in parse(line).pipelines]

    assert shape("cd a && node b.js 2>&1 | head -20") == [("", ["cd"]), ("&&", ["node", "head"])]
    assert shape("a || b > x | c && d") == [("", ["a"]), ("||", ["b", "c"]), ("&&", ["d"])]
    assert shape("a; b 2>&1 | c") == [("", ["a"]), ("", ["b", "c"])]
    assert shape("x | y 2>&1 | z") == [("", ["x", "y", "z"])]
    # a real group written as one, ( ... ) or { ...; }: its whole output goes down the pipe,
    # so its last command is not joined to the filter as if it alone fed it
    for grouped in ("(a && b) 2>&1 | c", "{ a && b; } 2>&1 | c"):
        got = shape(grouped)
        assert ["b", "c"] not in [cmds for _, cmds in got], grouped
        assert [cmds for _, cmds in got] == [["a"], ["b"], ["c"]], grouped


def test_a_script_run_from_its_folder_with_its_output_trimmed_is_a_workdir_fix():
    failed = _sh("node assets/build.js 2>&1", '[ERROR] Could not resolve "js/app.js"', False)
    got = _changes(failed, _sh("cd assets && node build.js 2>&1 | head -20", "built in 120ms"))
    assert [c for c, _ in got] == ["workdir"]
    other = _changes(failed, _sh("cd assets && node bundle.js 2>&1 | head -20", "built"))
    assert other == []


def test_a_windows_program_read_past_its_filters_and_scene_is_the_same_program():
    """``drive``: the program of a call is its own command, not ``| head`` nor ``&& echo``."""
    failed = _sh(
        "python -c \"print(open('/e/w/a.jsonl').read())\" 2>&1 | head -5",
        "FileNotFoundError: [WinError 3] '/e/w/a.jsonl'",
        False,
    )
    got = _changes(failed, _sh("python -c \"print(open('E:/w/a.jsonl').read())\" && echo ok", "{}"))
    assert [c for c, _ in got] == ["drive"]
    cat = _changes(failed, _sh("cat E:/w/a.jsonl | head -5 && echo ok", "{}"))
    assert cat == []


# --------------------------------------------------------------------------- cd


def test_a_cd_to_the_session_folder_moves_nowhere():
    gone = "cat: notes.txt: No such file or directory"
    got = _changes(
        _sh("cd /w/app && cat notes.txt", gone, False), _sh("cd /w/app/ && cat docs/notes.txt")
    )
    assert [c for c, _ in got] == ["location"]
    assert "notes.txt is at docs/notes.txt" in got[0][1]


def test_a_cd_elsewhere_is_still_a_slip_of_the_working_folder():
    gone = "cat: notes.txt: No such file or directory"
    assert (
        _changes(_sh("cd /w/app/docs && cat notes.txt", gone, False), _sh("cat docs/notes.txt"))
        == []
    )
    assert _changes(_sh("cd docs && cat notes.txt", gone, False), _sh("cat docs/notes.txt")) == []


# --------------------------------------------------------------------------- phrasings


def test_a_program_not_found_in_another_shell_or_wrapper_words_is_not_found():
    """fish's "Unknown command", a wrapper's "failed to run command 'rg'" or "env: 'rg': No
    such file": the program was not found, so another one on the same operands teaches the
    ``program`` kind."""
    grep = _sh("grep -rn TODO src", "src/a.py:1: TODO")
    for line, said in (
        ("rg TODO src", "fish: Unknown command: rg"),
        (
            "timeout 10 rg TODO src",
            "timeout: failed to run command ‘rg’: No such file or directory",
        ),
        ("env rg TODO src", "env: ‘rg’: No such file or directory"),
    ):
        got = _changes(_sh(line, said, False, code=127), grep)
        assert [c for c, _ in got] == ["program"], (said, got)


def test_a_missing_operand_named_by_the_program_is_no_program_not_found():
    got = _changes(
        _sh("rg TODO src", "rg: src: No such file or directory (os error 2)", False, code=2),
        _sh("grep -rn TODO src", "src/a.py:1: TODO"),
    )
    assert got == []


# --------------------------------------------------------------------------- && chains

IGNORED = (
    "The following paths are ignored by one of your .gitignore files:\ndist/app.js\n"
    "hint: Use -f if you really want to add them."
)


def test_the_command_of_a_chain_that_failed_is_the_one_whose_retry_changed_what_it_names():
    """``git add a.py dist/app.js && git commit -m x`` failed in ``git add`` (the output
    names no program): its retry without the ignored path shows which command failed."""
    got = _changes(
        _sh("git add a.py dist/app.js && git commit -m wip", IGNORED, False),
        _sh("git add a.py && git commit -m wip", "[main 1a2b3c4] wip"),
    )
    assert [c for c, _ in got] == ["dropped"]
    assert "git add fails on dist/app.js" in got[0][1]


def test_a_chain_retried_unchanged_or_named_by_its_output_teaches_no_other_command():
    # the same chain after a step in between: no named change, no lesson about git add
    same = _changes(
        _sh("git add a.py && git commit -m wip", "nothing added to commit", False),
        _sh("git status"),
        _sh("git add a.py && git commit -m wip"),
    )
    assert "dropped" not in [c for c, _ in same]
    # the output names the last command: it is the one that failed
    named = _changes(
        _sh(
            "mkdir -p out && cp a.txt b/c.txt out/", "cp: b/c.txt: No such file or directory", False
        ),
        _sh("mkdir -p out2 && cp a.txt out/"),
    )
    assert [c for c, _ in named] != ["flag"]


def test_an_earlier_command_of_a_chain_is_never_read_as_the_one_that_failed():
    """A failed ``a && f`` whose output names neither is not blamed on ``a`` because a
    later call ran ``a`` with another operand (the removed ``_chain_fix``): the remote had
    no ``main``, and checking out ``master`` next says nothing of ``git checkout``."""
    pull = _changes(
        _sh(
            "git checkout main && git pull origin main",
            "Switched to branch 'main'\nfatal: couldn't find remote ref main",
            False,
        ),
        _sh("git checkout master", "Switched to branch 'master'"),
        _sh("git pull", "Already up to date."),
    )
    assert pull == []
    push = _changes(
        _sh(
            "git checkout -b feat && git push origin feat:main",
            "Switched to a new branch 'feat'\nerror: src refspec feat does not match any\n"
            "error: failed to push some refs",
            False,
        ),
        _sh("git checkout -b feat2", "Switched to a new branch 'feat2'"),
    )
    assert push == []
    # nor does git's dashless option complaint move the blame to the chain's first command
    flag = _changes(
        _sh("git add -x a.py && git commit -m wip", "error: unknown switch `x'", False, code=129),
        _sh("git add a.py && git commit -m wip", "[main 1a2b3c4] wip"),
    )
    assert "git add without -x" not in " ".join(t for _, t in flag)


def test_an_option_named_without_its_dashes():
    """git names an unknown option without its dashes ("unknown option \u0060no-stat'"):
    the retry without ``--no-stat`` is the flag correction."""
    plain = _changes(
        _sh("git show --no-stat abc1234", "error: unknown option `no-stat'", False, code=129),
        _sh("git show abc1234"),
    )
    assert [c for c, _ in plain] == ["flag"]
    # a quoted word that is no option complaint names nothing
    other = _changes(
        _sh("git show --stat abc1234", "fatal: bad object 'stat'", False, code=128),
        _sh("git show abc1234"),
    )
    assert other == []


# --------------------------------------------------------------------------- another reader


def test_a_path_read_elsewhere_by_another_reader_is_where_the_file_is():
    gone = "cat: notes.txt: No such file or directory"
    got = _changes(_sh("cat notes.txt", gone, False), _sh("head -50 docs/notes.txt", "buy milk"))
    assert [c for c, _ in got] == ["location"]
    assert "notes.txt is at docs/notes.txt" in got[0][1]
    sed = _changes(_sh("cat notes.txt", gone, False), _sh("sed -n 1,80p docs/notes.txt", "x"))
    assert [c for c, _ in sed] == ["location"]


def test_another_file_or_a_program_that_is_no_reader_is_not():
    gone = "cat: notes.txt: No such file or directory"
    assert _changes(_sh("cat notes.txt", gone, False), _sh("head -50 docs/todo.md", "x")) == []
    assert _changes(_sh("cat notes.txt", gone, False), _sh("cp docs/notes.txt .")) == []
    assert _changes(_sh("cat notes.txt", gone, False), _sh("git show HEAD:docs/notes.txt")) == []


def test_a_search_or_a_call_that_moved_to_another_folder_finds_no_location():
    """From the development half (a Codex session): ``cat /w/app/specs/a/plan.md`` failed,
    then ``cd /w/app/specs/b && rg -n X plan.md`` searched another feature's plan.md. A
    search across files is no reading of that file, and a path read after a ``cd`` elsewhere
    names that folder's file: neither is where the first file is."""
    gone = "cat: /w/app/specs/a/plan.md: No such file or directory"
    searched = _changes(
        _sh("cat /w/app/specs/a/plan.md", gone, False),
        _sh("cd /w/app/specs/b && rg -n TODO plan.md research.md", "plan.md:3: TODO"),
    )
    assert searched == []
    moved = _changes(
        _sh("cat /w/app/specs/a/plan.md", gone, False),
        _sh("cd /w/app/specs/b && cat plan.md", "# Plan"),
    )
    assert moved == []


# --------------------------------------------------------------------------- escalation, tty


def test_an_escalated_or_terminal_retry_in_another_shape_is_the_same_command():
    """The view keeps a refused call failed when the same command was escalated past it:
    ``git commit -m x 2>&1`` refused, then ``git commit -m x`` with the escalation."""
    refused = "fatal: Unable to create '/w/app/.git/index.lock': Operation not permitted"
    got = _changes(
        _sh("git commit -m wip 2>&1 | tail -3", refused, False),
        Step(
            tool="Bash",
            params={"command": "git commit -m wip", "dangerouslyDisableSandbox": True},
            output="[main 1a2b3c4] wip",
            success=True,
        ),
    )
    assert [c for c, _ in got] == ["escalation"]
    other = _changes(
        _sh("git commit -m wip 2>&1 | tail -3", refused, False),
        Step(
            tool="Bash",
            params={"command": "git commit -m other", "dangerouslyDisableSandbox": True},
            output="[main 1a2b3c4] other",
            success=True,
        ),
    )
    assert "escalation" not in [c for c, _ in other]


def test_same_command_reads_shapes_not_strings():
    from agentmem.agents.outcomes import same_command

    assert same_command("git push 2>&1 | tail -5", "time git push")
    assert same_command("echo start && npm test", "npm test")
    assert not same_command("git push origin a", "git push origin b")
    assert not same_command("cd /w/a && npm test", "npm test")  # another folder's npm test


# --------------------------------------------------------------------------- existing

EXISTS = (
    'a pull request for branch "me:fix" into branch "main" already exists:\n'
    "https://github.com/o/r/pull/6689"
)


def test_acting_on_what_exists_may_leave_out_an_option_of_the_create():
    got = _changes(
        _sh('gh pr create --draft --title "Fix" --body "x"', EXISTS, False),
        _sh('gh pr edit 6689 --title "Fix" --body "x"', "https://github.com/o/r/pull/6689"),
    )
    assert [c for c, _ in got] == ["existing"]
    added = _changes(
        _sh('gh pr create --title "Fix" --body "x"', EXISTS, False),
        _sh('gh pr edit 6689 --title "Fix" --body "x" --add-label bug', "ok"),
    )
    assert added == []


def test_the_commands_that_do_a_calls_job_are_read_in_one_place():
    """``outcomes.job_commands`` (what ``same_command`` compares and the shell corrections
    read) and ``outcomes.moves_nowhere`` (a ``cd`` to the session's own folder, which
    ``cwd_slip`` does not count as a move either)."""
    from agentmem.agents.outcomes import job_commands, moves_nowhere, same_command
    from agentmem.agents.shell import parse

    line = "cd /w/app/ && echo go && rg --files -g '*.md' | head -50"
    assert [c.program for c in job_commands(parse(line), "/w/app")] == ["rg"]
    assert [c.program for c in job_commands(parse(line))] == ["cd", "rg"]
    assert [c.program for c in job_commands(parse("cd docs && cat a.md"), "/w/app")] == [
        "cd",
        "cat",
    ]
    home, other = parse("cd /w/app/").commands[0], parse("cd /w/app/docs").commands[0]
    assert moves_nowhere(home, "/w/app") and moves_nowhere(home, "/w/app/")
    assert not moves_nowhere(other, "/w/app") and not moves_nowhere(home, "")
    assert same_command("time cargo test 2>&1 | tail -5", "cargo test")
    assert not same_command("cargo test", "cargo build")


# --------------------------------------------------------------------------- shells in shells


def test_a_command_inside_another_shells_argument_is_read_as_commands():
    """``powershell.exe -Command "..."``, ``pwsh -c '...'``, ``cmd /c ...`` are read through
    to their script as ``bash -lc`` is (real: the development half's Codex runs on Windows
    wrap ``rg -n X backend/src`` in ``pwsh.exe -NoProfile -Command``), so a kind sees the
    inner program: a flag named by git's error, corrected inside the wrapper, teaches.
    A Windows path (backslashes), a cmdlet, or cmd's own switches stay unread."""
    from agentmem.agents.shell import parse, unwrap_argv

    argv = ["pwsh.exe", "-NoProfile", "-Command", 'rg -n "extract" backend/src; rg -n x y']
    assert [c.program for c in parse(unwrap_argv(argv)).commands] == ["rg", "rg"]
    assert [(c.program, c.args) for c in parse('cmd /c "npm test"').commands] == [
        ("npm", ("test",))
    ]
    ps = 'powershell -ExecutionPolicy Bypass -Command "python -m pytest -q"'
    assert [c.program for c in parse(ps).commands] == ["pytest"]
    for unread in (
        'powershell.exe -Command "Get-ChildItem -Recurse"',
        'pwsh -c "rg -n x backend\\src\\app.ts"',
        'cmd /c "dir /b"',
    ):
        assert not parse(unread).parsed, unread
    found = _changes(
        _sh('powershell.exe -Command "git show --no-stat abc1234"', NO_STAT, ok=False),
        _sh('powershell.exe -Command "git show abc1234"'),
    )
    assert [c for c, _ in found] == ["flag"]
    assert "--no-stat" in found[0][1]
    assert (
        _changes(
            _sh(
                'powershell.exe -Command "Get-Item x; git show --no-stat abc1234"',
                NO_STAT,
                ok=False,
            ),
            _sh('powershell.exe -Command "Get-Item x; git show abc1234"'),
        )
        == []
    )


def test_a_trailing_backslash_fixed_by_claude_codes_powershell_tool():
    """Blind set 13 (after its first try): Bash's ``ls -la "C:\\...\\memory\\"`` left its
    quote open; the PowerShell tool then listed the same path, backslash and all, which
    PowerShell reads as written. A Bash retry that keeps the trailing backslash is no fix."""
    path = "C:\\Users\\me\\.claude\\memory\\"
    unclosed = (
        "Exit code 2\n/usr/bin/bash: eval: line 1: unexpected EOF while looking for matching `\"'"
    )
    bash = Step("Bash", {"command": f'ls -la "{path}" 2>&1', "description": "x"}, unclosed, False)
    ps = Step(
        "PowerShell", {"command": f'Get-ChildItem -Path "{path}"', "description": "x"}, "MEMORY.md"
    )
    run = Trajectory(task="t", steps=(bash, ps), meta={"cwd": "D:\\w"})
    (fix,) = find_shell_fixes(run)
    assert fix.finding.detail["change"] == "quote_backslash"
    again = Step("Bash", {"command": f'ls "{path}" && echo ok', "description": "x"}, "ok")
    assert find_shell_fixes(Trajectory(task="t", steps=(bash, again), meta={"cwd": "D:\\w"})) == []
