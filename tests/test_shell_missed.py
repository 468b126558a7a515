"""Three classes of shell corrections a reader found missed on sessions nobody else read
(docs/learning-rules.md, the kinds table): each with a positive and its near misses,
built from minimal synthetic calls."""

from __future__ import annotations

from agentmem.agents import learning_view, outcome
from agentmem.agents.base import Failure
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory

from .transcripts import bash_step, codex_exec

NO_TTY = "the input device is not a TTY"


def _sh(command: str, output: str = "done", ok: bool = True, **more: object) -> Step:
    return bash_step(command, output, ok, **more)


def _exec(command: str, output: str = "", ok: bool = True, **more: object) -> Step:
    return codex_exec(command, output, ok, **more)


def _changes(*steps: Step, cwd: str = "/w/app") -> list[tuple[str, str]]:
    t = Trajectory(task="do the thing", steps=steps, meta={"cwd": cwd})
    return [
        (x.finding.detail["change"], x.finding.text) for x in find_shell_fixes(learning_view(t))
    ]


# --------------------------------------------------------------------------- no terminal


def test_a_terminal_flag_dropped_after_no_terminal_teaches_to_run_without_it():
    for failed, retry, said in (
        (
            "docker exec -it web python manage.py migrate",
            "docker exec web python manage.py migrate",
            NO_TTY,
        ),
        ("docker exec -it web ls", "docker exec -i web ls", NO_TTY),
        (
            "kubectl exec --tty api -- ls",
            "kubectl exec api -- ls",
            "Unable to use a TTY - input is not a terminal or the right kind of file",
        ),
        (
            "docker compose exec -t db psql -c 'select 1'",
            "docker compose exec db psql -c 'select 1'",
            "stdin is not a terminal",
        ),
    ):
        got = _changes(_sh(failed, said, False), _sh(retry, "ok"))
        assert [c for c, _ in got] == ["notty"], (failed, got)
        assert "no terminal" in got[0][1] and "without -t" in got[0][1].replace("--tty", "-t")


def test_a_terminal_flag_dropped_after_another_failure_teaches_nothing():
    got = _changes(
        _sh("docker exec -it web ls", "Error response from daemon: No such container: web", False),
        _sh("docker exec web ls", "manage.py"),
    )
    assert got == []


def test_a_terminal_warning_beside_another_failure_teaches_nothing():
    """ssh warns that it allocates no terminal, then fails for its own reason: the
    diagnostic is that reason, not the terminal."""
    said = (
        "Pseudo-terminal will not be allocated because stdin is not a terminal.\n"
        "git@host: Permission denied (publickey)."
    )
    got = _changes(_sh("ssh -t git@host uptime", said, False), _sh("ssh git@host uptime", "up"))
    assert got == []


def test_a_retry_that_changed_a_second_word_teaches_nothing():
    for retry in (
        "docker exec web ls /srv",  # another operand
        "docker exec -u root web ls",  # another flag
        "docker exec -d web ls",  # the flag replaced by another
    ):
        got = _changes(_sh("docker exec -it web ls", NO_TTY, False), _sh(retry, "ok"))
        assert got == [], (retry, got)


def test_a_retry_started_in_the_background_proves_nothing():
    started = "Command running in background with ID: bash_1"
    assert (
        _changes(
            _sh("docker exec -it web ls", NO_TTY, False),
            _sh("docker exec web ls", started, run_in_background=True),
        )
        == []
    )
    assert (
        _changes(_sh("docker exec -it web ls", NO_TTY, False), _sh("docker exec web ls", started))
        == []
    )


def test_codex_tty_parameter_after_no_terminal_is_still_the_terminal_kind():
    got = _changes(
        _exec("codex resume 019c", "Error: stdin is not a terminal", False),
        _exec("codex resume 019c", "Resuming session", tty=True),
    )
    assert [c for c, _ in got] == ["terminal"]


# --------------------------------------------------------------------------- a leading sleep

CURL = "curl -s localhost:8080/health"
BLOCKED = (
    f"Blocked: sleep 30 followed by: {CURL}. To wait for a condition, use an until-loop "
    "(until <check>; do sleep 2; done). To wait for a command you started, use "
    "run_in_background: true. Do not chain shorter sleeps to work around this block."
)


def _blocked(command: str = f"sleep 30 && {CURL}", said: str = BLOCKED) -> Step:
    return Step(tool="Bash", params={"command": command}, output=said, success=False)


def test_a_leading_sleep_refused_then_the_command_without_it_teaches_the_client_rule():
    got = _changes(_blocked(), _sh(CURL, '{"ok": true}'))
    assert [c for c, _ in got] == ["sleep"]
    assert "starts with sleep 30" in got[0][1] and "without the sleep" in got[0][1]
    piped = _changes(_blocked(f"sleep 30; {CURL} | head -5"), _sh(f"{CURL} | head -5", "{}"))
    assert [c for c, _ in piped] == ["sleep"]
    # real (validation, Claude Code 2.1.20x): the refusal goes on with advice to the agent,
    # which the quote's sanitizer withholds; the lesson quotes its first sentence, never "()"
    advice = (
        f"Blocked: sleep 60 followed by: {CURL}. Run blocking commands in the background "
        "with run_in_background: true \u2014 you'll get a completion notification when done. "
        "For streaming events (watching logs, polling APIs), use the Monitor tool. If you "
        "genuinely need a delay (rate limiting, deliberate pacing), keep it under 2 seconds."
    )
    said = _changes(_blocked(f"sleep 60; {CURL}", advice), _sh(CURL, '{"ok": true}'))
    assert [c for c, _ in said] == ["sleep"]
    assert "()" not in said[0][1] and "('Blocked: sleep 60 followed by" in said[0][1]


def test_a_refused_sleep_before_a_test_run_is_no_failure_of_the_tests():
    """The refusal ran nothing: it is a misuse of the tool, never the tests' own failure
    (which the learning view would count as done), tags and all."""
    said = (
        "<tool_use_error>Blocked: sleep 30 followed by: npm test. To wait for a command you "
        "started, use run_in_background: true.</tool_use_error>"
    )
    assert outcome(_blocked("sleep 30; npm test", said)).failure is Failure.MISUSE
    got = _changes(_blocked("sleep 30; npm test", said), _sh("npm test", "3 passed"))
    assert [c for c, _ in got] == ["sleep"]


def test_a_retry_that_kept_the_sleep_or_changed_the_command_teaches_nothing():
    for retry in (
        f"sleep 5 && {CURL}",  # a shorter sleep, still at its head
        "curl -s localhost:8080/ready",  # another command
        f"{CURL} && npm test",  # a command more
    ):
        assert _changes(_blocked(), _sh(retry, "{}")) == [], retry


def test_a_retry_started_in_the_background_or_refused_again_teaches_nothing():
    started = "Command running in background with ID: bash_2"
    assert _changes(_blocked(), _sh(CURL, started, run_in_background=True)) == []
    assert _changes(_blocked(), _sh(CURL, "curl: (7) Failed to connect", False)) == []


def test_a_sleep_that_was_not_refused_teaches_nothing():
    loop = f"until {CURL}; do sleep 2; done"
    assert _changes(_sh(loop, "curl: (7) Failed to connect", False), _sh(CURL, "{}")) == []
    other = _blocked(said="Error: sleep 30 followed by a failure")
    assert _changes(other, _sh(CURL, "{}")) == []
    named = _blocked(said=BLOCKED.replace("sleep 30", "sleep 60"))  # not this line's sleep
    assert _changes(named, _sh(CURL, "{}")) == []


# --------------------------------------------------------------------------- an import path

TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/w/app/scripts/run.py", line 1, in <module>\n'
    "    from app.core import main\n"
    "ModuleNotFoundError: No module named 'app'"
)
RUN = "python scripts/run.py --check"
NODE_TRACE = (
    "node:internal/modules/cjs/loader:1080\n  throw err;\n  ^\n\n"
    "Error: Cannot find module 'shared'\nRequire stack:\n- /w/app/scripts/build.js\n"
    "    at Module._resolveFilename (node:internal/modules/cjs/loader:1077:15) {\n"
    "  code: 'MODULE_NOT_FOUND',\n  requireStack: [ '/w/app/scripts/build.js' ]\n}"
)


def test_a_module_found_by_extending_the_import_path_teaches_the_project_fact():
    got = _changes(_sh(RUN, TRACE, False), _sh(f"PYTHONPATH=src {RUN}", "ok"))
    assert got == [
        (
            "importpath",
            "In this project python cannot import app from the session's folder ('No module "
            "named app'): run it with PYTHONPATH=src (PYTHONPATH=src python scripts/run.py "
            "--check).",
        )
    ]
    listed = _sh("ls src/app", "__init__.py\ncore.py")  # the run shows app in src/
    exported = _sh(f"export PYTHONPATH=$PWD/src && {RUN}", "ok")
    got = _changes(listed, _sh(RUN, TRACE, False), exported)
    assert [c for c, _ in got] == ["importpath"] and "PYTHONPATH=src" in got[0][1]
    node = _changes(
        _sh("node scripts/build.js", NODE_TRACE, False),
        _sh("NODE_PATH=lib node scripts/build.js", "built"),
    )
    assert [c for c, _ in node] == ["importpath"] and "NODE_PATH=lib" in node[0][1]


def test_without_the_import_path_rule_the_same_pair_teaches_nothing_else():
    got = _changes(_sh(RUN, TRACE, False), _sh(RUN, "ok"))  # it worked again unchanged
    assert got == []


def test_an_install_between_teaches_nothing():
    assert (
        _changes(
            _sh(RUN, TRACE, False),
            _sh("pip install -e .", "Successfully installed app-0.1"),
            _sh(f"PYTHONPATH=src {RUN}", "ok"),
        )
        == []
    )
    assert (
        _changes(_sh(RUN, TRACE, False), _sh(f"pip install -e . && PYTHONPATH=src {RUN}", "ok"))
        == []
    )


def test_a_retry_that_changed_another_argument_teaches_nothing():
    for retry in (
        "PYTHONPATH=src python -m scripts.run --check",  # the file path made a module path
        "PYTHONPATH=src python scripts/run.py --fast",  # another option
        "PYTHONPATH=src python3 scripts/run.py --check",  # another interpreter
    ):
        assert _changes(_sh(RUN, TRACE, False), _sh(retry, "ok")) == [], retry


def test_an_import_probe_or_a_folder_outside_the_project_teaches_nothing():
    probe = 'python -c "import app"'
    assert (
        _changes(
            _sh(probe, "ModuleNotFoundError: No module named 'app'", False),
            _sh(f"PYTHONPATH=src {probe}", ""),
        )
        == []
    )
    for value in ("/opt/shared/lib", "../other/src", "$(python -m site --user-site)"):
        assert _changes(_sh(RUN, TRACE, False), _sh(f"PYTHONPATH={value} {RUN}", "ok")) == []


def test_an_import_path_named_from_another_folder_teaches_nothing():
    """``cd tools && PYTHONPATH=src ...`` names tools/src: not the project's src/."""
    assert (
        _changes(
            _sh(f"cd tools && {RUN}", TRACE, False), _sh(f"cd tools && PYTHONPATH=src {RUN}", "ok")
        )
        == []
    )
    here = _changes(_sh(f"cd /w/app && {RUN}", TRACE, False), _sh(f"PYTHONPATH=src {RUN}", "ok"))
    assert [c for c, _ in here] == ["importpath"]  # a cd to the session's folder moves nowhere


def test_a_folder_that_does_not_hold_the_module_teaches_nothing():
    listed = _sh("find . -name core.py", "./lib/app/core.py")  # the run shows app in lib/
    assert _changes(listed, _sh(RUN, TRACE, False), _sh(f"PYTHONPATH=src {RUN}", "ok")) == []
    failing = _sh(f"PYTHONPATH=src {RUN}", "ModuleNotFoundError: No module named 'yaml'")
    assert _changes(_sh(RUN, TRACE, False), failing) == []
