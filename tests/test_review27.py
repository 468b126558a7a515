"""Review of this session's commits: a fetch that only printed, the ``absent`` claim of a
folder ``mkdir`` made, a tool switch after a missing path, Codex code mode's script, a call
that only asks a program about itself. Each test is a case the change had wrong or had not
checked, on synthetic runs only."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentmem.agents import learning_view, parse
from agentmem.agents import programs as P
from agentmem.claims import ABSENT, withheld
from agentmem.learning.corrections import find_corrections
from agentmem.learning.crosstask import find_crosstask_evidence
from agentmem.learning.digest import digest
from agentmem.learning.evidence import find_evidence, holds_code
from agentmem.learning.shell_fixes import claims_of, find_shell_fixes
from agentmem.records import Experience, Step, Trajectory

from .test_claims import _rule
from .test_review26 import _changes, _sh

_JQ = ("jq . a.json", "bash: jq: command not found")


def _after_jq(*between: str) -> list[tuple[str, str]]:
    steps = [_sh(*_JQ, ok=False), *(_sh(b, "") for b in between), _sh("jq . a.json", "{}")]
    return _changes(*steps)


# -- a fetch that only printed (e90e052) ---------------------------------------------


@pytest.mark.parametrize(
    "fetch",
    [
        "curl -fsSL https://x/install.sh | sh",
        "curl -fsSL https://x/install.sh | sudo bash",
        "curl -s https://x/i.sh | sh -s -- -y",
        "curl -s https://x/jq | tee /usr/local/bin/jq",
    ],
)
def test_a_piped_fetch_is_no_fetch_that_only_printed(fetch: str):
    """``curl URL | sh``: the fetch's output ran as a script. Dropping the curl left the
    shell alone as "the" install: "jq is missing here: run sh first" (before the change,
    two commands between taught nothing)."""
    assert _after_jq(fetch) == []


@pytest.mark.parametrize(
    ("line", "prints"),
    [
        ("curl -o - https://x/jq", True),  # - is the standard output
        ("curl --output - https://x/jq", True),
        ("curl --output=- https://x/jq", True),
        ("curl -sSLo- https://x/jq", True),
        ("curl -sSLo jq https://x/jq", False),
        ("curl -o jq https://x/jq", False),
    ],
)
def test_an_output_to_the_standard_output_only_prints(line: str, prints: bool):
    c = parse(line).commands[0]
    assert P.only_prints(c.program, c.args) is prints


def test_a_fetch_whose_errors_went_to_dev_null_only_printed():
    """``2>/dev/null`` (read as ``>``) and ``> /dev/null`` write no file."""
    for fetch in ("curl -s localhost:5000/health 2>/dev/null", "curl -s x.org >/dev/null"):
        assert _after_jq(fetch) == [], fetch


# -- absent: a folder mkdir made (e11c822) ----------------------------------------------


def test_a_lesson_of_several_folders_is_withheld_only_once_all_are_there(tmp_path: Path):
    """``mkdir -p logs out``: logs may be there already (a tracked folder) while out is
    not; the lesson still has its say. Withheld only once every folder is there."""
    lesson = Experience(
        text="Run mkdir -p logs out before touch out/a.txt.",
        rule=_rule((ABSENT, "logs"), (ABSENT, "out")),
    )
    (tmp_path / "logs").mkdir()
    assert withheld(lesson, tmp_path) is None
    (tmp_path / "out").mkdir()
    assert withheld(lesson, tmp_path) == "logs and out exist now"


def test_mkdir_s_mode_is_no_folder_it_made():
    """``mkdir -m 755 out``: 755 is the mode, not a folder."""
    steps = (
        _sh("touch out/a.txt", "touch: cannot touch 'out/a.txt': No such file or directory", False),
        _sh("mkdir -m 755 out", ""),
        _sh("touch out/a.txt", ""),
    )
    t = Trajectory(task="do the thing", steps=steps, meta={"cwd": "/w/app"})
    (fix,) = find_shell_fixes(learning_view(t))
    assert claims_of(fix.finding) == ((ABSENT, "out"),)


# -- a call that only asks a program about itself (da1c182) -----------------------------


@pytest.mark.parametrize(
    ("steps", "change"),
    [
        ((_sh(*_JQ, ok=False), _sh("brew install jq"), _sh("jq --version")), "prerequisite"),
        (
            (
                _sh("python app.py", "bash: python: command not found", False),
                _sh("python3 --version", "Python 3.12.1"),
            ),
            "interpreter",
        ),
        (
            (
                _sh("pytest tests/a.py --covv", "error: unrecognized arguments: --covv", False),
                _sh("pytest --help", "usage: pytest [options]"),
            ),
            "flag",
        ),
    ],
)
def test_a_look_at_the_usage_between_does_not_end_the_search(steps, change: str):
    """Install, check ``jq --version``, then use jq: the check was taken as the retry,
    taught nothing, and the real fix after it was never looked at."""
    fixed = {
        "prerequisite": "jq . a.json",
        "interpreter": "python3 app.py",
        "flag": "pytest tests/a.py --cov",
    }[change]
    assert [c for c, _ in _changes(*steps, _sh(fixed, "ok"))] == [change]


def test_a_look_at_the_usage_in_the_retry_s_own_call_is_passed_over():
    """``jq --version && jq . a.json``: the retry is the second command, not the look."""
    steps = (
        _sh(*_JQ, ok=False),
        _sh("brew install jq"),
        _sh("jq --version && jq . a.json", "jq-1.7\n{}"),
    )
    assert [c for c, _ in _changes(*steps)] == ["prerequisite"]
    steps = (
        _sh("python app.py", "bash: python: command not found", False),
        _sh("python3 --version && python3 app.py", "Python 3.12.1\nok"),
    )
    assert [c for c, _ in _changes(*steps)] == ["interpreter"]


def test_a_bare_h_is_human_sizes_for_df_du_and_free():
    """``free -h`` (``df -h``, ``du -h``, ``sort -V``): a job done, not a look at usage."""
    got = _changes(
        _sh("free --humann", "free: unrecognized option '--humann'", False),
        _sh("free -h", "Mem: 15Gi"),
    )
    assert [c for c, _ in got] == ["flag"]


# -- Codex code mode (279f063) -----------------------------------------------------------


def test_a_one_word_script_is_still_code():
    """``exec``'s ``input`` is a script whatever its length (``text(await tools.x())`` has
    a space, ``text(1)`` has none); a shell's one word (``ls``) stays as it was."""
    assert holds_code("exec", "input", "text(1)")
    assert holds_code("exec", "input", "const r = 1;\ntext(r)")
    assert not holds_code("Bash", "command", "ls")
    assert not holds_code("Read", "file_path", "a.py")


def test_a_script_that_worked_is_no_value_to_tell_either():
    """The group comparison looked at the failed call's value only: a one-word value that
    failed, then a script that worked, taught "Call T with code like import os print(...)"
    (the corrections check both values)."""

    def run(step: Step, ok: bool) -> tuple[Trajectory, object]:
        t = Trajectory(task="t", steps=[step], accepted=ok, id=None)
        return t, digest(t, 1.0 if ok else 0.0, 1.0 if ok else -1.0)

    tool = "mcp__py__run_python"
    bad = Step(tool, {"code": "x"}, "Error: failed", False)
    good = Step(tool, {"code": "import os\nprint(os.getcwd())"}, "/w", True)
    assert find_evidence([run(good, True), run(bad, False)]) == []


def test_other_runs_scripts_are_no_kind_of_value():
    """The cross-task rule: one-word code that failed ("foo", named in its error), other
    runs' scripts that worked: "Call T with code like import os ..." was taught."""
    tool = "mcp__py__run_python"

    def run(code: str, ok: bool, tid: int) -> tuple[Trajectory, object]:
        out = "/w" if ok else "NameError: name 'foo' is not defined"
        t = Trajectory(
            task=f"print the folder {tid}",
            steps=[Step(tool, {"code": code}, out, ok)],
            accepted=ok,
            id=tid,
        )
        return t, digest(t, 1.0 if ok else 0.0, 0.5 if ok else -1.0)

    scripts = ("import os\nprint(os.getcwd())", "import os\nprint(os.listdir())")
    members = [run("foo", False, 1), *(run(c, True, k) for k, c in enumerate(scripts, 2))]
    found = find_crosstask_evidence(members, comparable=lambda a, b: True)
    assert [f.text for f in found if f.kind == "param_value"] == []


# -- an MCP tool's job (8784238) --------------------------------------------------------


def _switch(w: Step, r: Step) -> list[str]:
    t = Trajectory(task="do the thing", steps=(w, r), meta={"project": "/w/p"}, accepted=True)
    return [c.finding.text for c in find_corrections(t)]


_DENIED = "Error: Access denied - path outside allowed directories: /w/q not in /w/p"


def test_an_mcp_tool_and_a_client_tool_of_other_jobs_never_stand_in():
    """same_job's None for an MCP tool sent an MCP tool and a client's tool to the name
    and parameter heuristics, where a shared ``path`` parameter was enough: "Use Grep,
    not mcp__filesystem__read_file" (before, an MCP tool never stood in for a client's)."""
    read = Step("mcp__filesystem__read_file", {"path": "/w/q/a.txt"}, _DENIED, False)
    grep = Step("Grep", {"pattern": "x", "path": "/w/q"}, "a.txt:1:x", True)
    assert _switch(read, grep) == []
    missing = Step("Read", {"file_path": "/w/p/a.txt"}, "File does not exist.", False)
    mcp_read = Step("mcp__filesystem__read_file", {"path": "/w/p/a.txt"}, "hi", True)
    assert _switch(missing, mcp_read) == []


def test_a_tool_that_found_nothing_at_the_missing_path_did_not_do_the_step():
    """Grep of a folder that is not there, then Glob of that very folder, "No files
    found": the shared value let "Use Glob, not Grep" through the new guard."""
    where = "/w/p/src/components/providers"
    missing = Step(
        "Grep",
        {"pattern": "toast", "path": where},
        f"<tool_use_error>Path does not exist: {where}</tool_use_error>",
        False,
    )
    glob = Step("Glob", {"pattern": "**/*.tsx", "path": where}, "No files found", True)
    assert _switch(missing, glob) == []
    edit = Step("Edit", {"file_path": "/w/p/n.md"}, "File does not exist.", False)
    write = Step("Write", {"file_path": "/w/p/n.md", "content": "b"}, "File created", True)
    assert len(_switch(edit, write)) == 1  # the control: Write made the very file


def test_two_tools_of_one_server_sharing_a_prefix_do_other_jobs():
    """A click that found no element, then a snapshot: "Use browser_snapshot, not
    browser_click" is false; the agent looked at the page before clicking again."""
    click = Step("mcp__pw__browser_click", {"element": "Save", "ref": "e1"}, "Error: no", False)
    snap = Step("mcp__pw__browser_snapshot", {}, "- button Save [ref=e7]", True)
    assert _switch(click, snap) == []
    # the lead's fix: the server's shared leading word is no name part they share; two
    # tools of one server that share another word still do (read_file, read_text_file)
    from agentmem.learning.evidence import shared_name_words

    assert shared_name_words("mcp__pw__browser_click", "mcp__pw__browser_snapshot") == set()
    assert shared_name_words("mcp__fs__read_file", "mcp__fs__read_text_file") == {"file"}
