"""Review of the eighteenth session's readers: inputs where a reader taught a wrong lesson.

* ``container``: the run looked at another container of the listing (``docker logs
  worker`` refused, then ``docker logs app_web_1``): no container was "meant" instead;
* ``borrowed``: a tool refused for want of a parameter, then another tool of the same
  server given two of its parameters (owner, repo) to look something up: the call spoke
  its own tool's parameters, never the other tool's;
* ``literal_slips`` (escaped): a later patch of lines of the hunk that hold no ``\\t`` at
  all shows nothing of how a tab is written;
* ``equals``: ``[ "$x" == y ]`` in zsh fails on ``==`` (a comparison), where "leave it
  out" is wrong advice;
* ``range_first``: ``0..$n -join ','`` read as a bare bound (``-join`` is an operator),
  when op_Subtraction came of another expression;
* ``ps_readonly``: a variable the script itself made read-only (``Set-Variable -Option
  ReadOnly``) called an automatic variable.
"""

from __future__ import annotations

from agentmem.agents import learning_view
from agentmem.agents.outcomes import borrowed_params
from agentmem.learning.corrections import find_corrections
from agentmem.learning.hunk_order import literal_slips
from agentmem.learning.kinds import Kind
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory


def _cc(command: str, output: str = "", ok: bool = True) -> Step:
    body = output if ok else f"Exit code 1\n{output}"
    return Step(tool="Bash", params={"command": command}, output=body, success=ok)


def _found(kind: str, *steps: Step) -> list[str]:
    run = learning_view(Trajectory(task="do the job", steps=steps, meta={"cwd": "/w/app"}))
    return [x.finding.text for x in find_shell_fixes(run) if x.finding.detail["change"] == kind]


# -- container ---------------------------------------------------------------------------

_GONE = "Error response from daemon: No such container: {}"
_LISTED = "app_web_1\napp_db_1\napp_worker_1"


def test_another_container_of_the_listing_is_no_container_meant() -> None:
    # the worker's logs, then the web container's: the run moved on to another container
    assert not _found(
        "container",
        _cc("docker logs worker", _GONE.format("worker"), False),
        _cc("docker ps --format '{{.Names}}'", "app_web_1\napp_db_1"),
        _cc("docker logs app_web_1", "listening on 8000"),
    )
    # another command in another container
    assert not _found(
        "container",
        _cc("docker exec worker celery inspect active", _GONE.format("worker"), False),
        _cc("docker ps --format '{{.Names}}'", _LISTED),
        _cc("docker exec app_web_1 python manage.py check", "System check identified no issues"),
    )


def test_the_same_job_or_the_same_service_in_the_listed_name_is_still_learned() -> None:
    (text,) = _found(
        "container",
        _cc("docker logs worker", _GONE.format("worker"), False),
        _cc("docker ps --format '{{.Names}}'", _LISTED),
        _cc("docker logs app_worker_1", "celery ready"),
    )
    assert "the one meant was app_worker_1" in text
    # the same command run in a container of another name (db, postgres)
    (text,) = _found(
        "container",
        _cc("docker exec db psql -U app -c 'select 1'", _GONE.format("db"), False),
        _cc("docker ps --format '{{.Names}}'", "pg_main\nweb_main"),
        _cc("docker exec pg_main psql -U app -c 'select 1'", " ?column? \n        1"),
    )
    assert "the one meant was pg_main" in text


# -- borrowed parameters -----------------------------------------------------------------

_NO_HEAD = (
    'Error: Invalid arguments for create_pull_request: [{"code": "invalid_type", "path": '
    '["head"], "message": "Required"}]'
)


def _pr(title: str, head: str = "") -> Step:
    params = {"owner": "acme", "repo": "api", "title": title, "base": "main"}
    if head:
        return Step("mcp__github__create_pull_request", {**params, "head": head}, "#5", True)
    return Step("mcp__github__create_pull_request", params, _NO_HEAD, False)


def test_a_lookup_with_two_of_the_refused_calls_parameters_borrowed_nothing() -> None:
    listed = Step("mcp__github__list_pull_requests", {"owner": "acme", "repo": "api"}, "[]", True)
    steps = (_pr("a"), _pr("b"), listed, _pr("b", head="feat"))
    assert borrowed_params(steps) == {}
    run = Trajectory(task="open the pull request", steps=steps, accepted=True)
    assert not [c for c in find_corrections(run) if c.kind == Kind.TOOL_RULE]


# -- apply_patch's literal lines ---------------------------------------------------------


def _patch(file: str, old: list[str], new: list[str], said: str = "") -> Step:
    body = "\n".join([f"-{x}" for x in old] + [f"+{x}" for x in new])
    text = f"*** Begin Patch\n*** Update File: {file}\n@@\n{body}\n*** End Patch"
    if said:
        out = f"apply_patch verification failed: Failed to find expected lines in {said}:\n"
        return Step("apply_patch", {"input": text}, out + "\n".join(old), False)
    return Step("apply_patch", {"input": text}, "Success. Updated the following files:", True)


def test_a_later_patch_of_lines_without_the_escape_shows_nothing_of_tabs() -> None:
    # the hunk failed for its last line (return 1: the file says return 2); its \\t is a
    # string's escape, as the file holds it; the retry patched the def line only
    old = ["def f():", '    print("a\\tb")', "    return 1"]
    failed = _patch("app.py", old, [*old[:2], "    return 3"], "/w/app.py")
    fixed = _patch("app.py", ["def f():"], ["def f(x):"])
    assert literal_slips(Trajectory(task="edit", steps=(failed, fixed))) == []
    # the retry's lines hold the tab the failed hunk wrote as \\t: the slip
    tab = _patch("app.py", ['    print("a\tb")'], ['    print("a\tc")'])
    (slip,) = literal_slips(Trajectory(task="edit", steps=(failed, tab)))
    assert slip.how == "escaped"


# -- equals ------------------------------------------------------------------------------


def test_a_comparisons_double_equals_is_no_word_to_leave_out() -> None:
    failed = _cc(
        'if [ "$(uname)" == "Darwin" ]; then brew list; fi; git status',
        "(eval):1: = not found",
        False,
    )
    assert not _found("equals", failed, _cc("git status", "On branch main"))
    # the same two characters as a separator are still the word the lesson names
    sep = _cc("git status; echo ==; git log -3", "On branch main\n(eval):1: = not found", False)
    (text,) = _found("equals", sep, _cc("git log -3", "a06823b x"))
    assert "(==) is =command expansion" in text


# -- range_first -------------------------------------------------------------------------

_OP_SUB = (
    "InvalidOperation: Method invocation failed because [System.Object[]] does not contain "
    "a method named 'op_Subtraction'."
)
_HITS = "$lines = Get-Content log.txt; $hits = $lines | Select-String ERROR; $n = $hits.Count; "


def _ps(script: str, output: str = "", ok: bool = True) -> Step:
    argv = ["powershell.exe", "-NoProfile", "-Command", script]
    body = f"Process exited with code {0 if ok else 1}\nOutput:\n{output}"
    return Step(tool="shell", params={"command": argv}, output=body, success=ok)


def test_an_operator_after_a_range_is_no_bare_bound() -> None:
    # op_Subtraction came of $lines.Count - $hits.LineNumber (an array); 0..$n -join is fine
    failed = _ps(_HITS + "$ids = 0..$n -join ','; $lines.Count - $hits.LineNumber", _OP_SUB, False)
    fixed = _ps(_HITS + "$ids = (0..$n) -join ','; $lines.Count - $hits[0].LineNumber", "12")
    assert not _found("range_first", failed, fixed)
    # a bound of a variable's arithmetic is still one
    bare = _ps(_HITS + "$lines[$n-$k..$n]", _OP_SUB, False)
    (text,) = _found("range_first", bare, _ps(_HITS + "$lines[($n-$k)..$n]", "x"))
    assert text.startswith("In PowerShell the range operator .. binds tighter")


# -- ps_readonly -------------------------------------------------------------------------

_RO = "Cannot overwrite variable Config because it is read-only or constant."


def test_a_variable_the_script_made_read_only_is_no_automatic_variable() -> None:
    made = "Set-Variable -Name Config -Value 'a.json' -Option ReadOnly; "
    failed = _ps(made + "$config = 'b.json'; Get-Content $config", _RO, False)
    fixed = _ps(made + "$cfg = 'b.json'; Get-Content $cfg", "{}")
    assert not _found("ps_readonly", failed, fixed)
