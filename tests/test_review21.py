"""Review 21: findings of an independent review of the session's last changes (framing's
Tagged, the Read-first rule, installed-code locations). Each test is a minimal input; a
finding left for the lead is marked ``xfail(strict=True)`` with its reason."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agentmem import Memory
from agentmem.records import Step
from tests.test_tool_rules import NOT_READ, _edit, _read


def _write(path: str, ok: bool = True, out: str = "") -> Step:
    return Step("Write", {"file_path": path, "content": "x"}, out or "ok", ok)


def _learned(db: Path, *runs: list[Step]) -> list[str]:
    with Memory.open(db, embedder="hash") as mem:
        for n, steps in enumerate(runs):
            mem.record(f"fix the module {n}", steps, accepted=True)
        mem.learn(use_model=False)
        return [e.text for e in mem.experiences() if "not been read" in e.text]


def test_an_edit_slip_and_a_write_slip_are_two_slips_of_the_read_first_rule(
    tmp_path: Path,
) -> None:
    """Edit and Write each refused a file not read yet: two slips of one rule, merged in
    Stage 3 as "If Edit or Write fails ...". The merged finding kept the first one's
    slips (1) and the library count looked at Edit's calls alone (1): no lesson."""
    one_run = [
        _edit("/p/a.py", False, NOT_READ),
        _write("/p/b.py", False, NOT_READ),
        _read("/p/a.py"),
        _read("/p/b.py"),
        _edit("/p/a.py"),
        _write("/p/b.py"),
    ]
    assert len(_learned(tmp_path / "one.db", one_run)) == 1
    a = [_edit("/p/a.py", False, NOT_READ), _read("/p/a.py"), _edit("/p/a.py")]
    b = [_write("/p/b.py", False, NOT_READ), _read("/p/b.py"), _write("/p/b.py")]
    assert len(_learned(tmp_path / "two.db", a, b)) == 1
    # one slip still teaches nothing
    assert _learned(tmp_path / "once.db", a) == []


# ------------------------------------------------------------ framing.Tagged

_REGEX = re.compile(
    r"<(system-reminder|user-prompt-submit-hook)>.*?</\1>\s*", re.DOTALL | re.IGNORECASE
)
_PIECES = (
    "<system-reminder>",
    "</system-reminder>",
    "<SYSTEM-Reminder>",
    "</System-REMINDER>",
    "<user-prompt-submit-hook>",
    "</USER-prompt-submit-hook>",
    "<\u017fystem-reminder>",  # long s: the opener's s matches it, a backreference does not
    "</\u017fystem-reminder>",
    "</system-rem\u0131nder>",  # dotless i
    "</system-rem\u0130nder>",  # dotted capital I: its simple lower case is i
    "</user-prompt-submit-hoo\u212a>",  # the Kelvin sign: its lower case is k
    " ",
    "\n",
    "x",
    "<",
    ">",
)


def test_tagged_sub_is_the_regex_it_replaced_on_unicode_case_pairs() -> None:
    """``Tagged`` matched a closer to its opener with ``re.IGNORECASE`` letters, where the
    regex it replaced uses a backreference: ``s`` as a letter matches ``ſ``, a
    backreference to ``s`` does not (``re`` compares simple lower cases). So
    ``<system-reminder>x</ſystem-reminder>`` lost its text, which the regex kept."""
    from agentmem.framing import INJECTED

    for text in (
        "<system-reminder>x</\u017fystem-reminder>y",
        "<\u017fystem-reminder>x</system-reminder>y",
        "<system-reminder>x</system-rem\u0131nder>y",
        "<system-reminder>x</system-rem\u0130nder>y",
        "<user-prompt-submit-hook>x</user-prompt-submit-hoo\u212a>\n y",
        "<SYSTEM-reminder>x</system-REMINDER>  y",
    ):
        assert INJECTED.sub("", text) == _REGEX.sub("", text), text


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=2)), max_size=20))
def test_tagged_sub_is_the_regex_it_replaced(parts: list[str]) -> None:
    from agentmem.framing import INJECTED

    text = "".join(parts)
    assert INJECTED.sub("", text) == _REGEX.sub("", text)
    assert INJECTED.sub("R", text) == _REGEX.sub("R", text)


# ------------------------------------------------------------ shell_fixes: installed code


def _located(cwd: str, top: str) -> list[str]:
    from agentmem.learning.corrections import find_corrections
    from agentmem.records import Trajectory

    # a document, not source code: where one source file sits is the code's layout, no
    # location fact wherever it lies (shell_fixes.guessed_in_source_tree)
    bad = f"{top}/resource/change.md"
    steps = (
        Step("Bash", {"command": f"cat {bad}"}, f"cat: {bad}: No such file or directory", False),
        Step("Bash", {"command": f"cat {top}/resource/change/change.md"}, "# Change", True),
    )
    t = Trajectory(task="finish the change", steps=steps, meta={"cwd": cwd}, accepted=True)
    return [c.finding.text for c in find_corrections(t)]


def test_a_project_kept_under_a_folder_named_vendor_is_not_installed_code() -> None:
    """``in_installed_code`` read the whole path: a session whose own folder lies under a
    ``vendor/`` (or ``deps/``, ``_build/``) folder lost every location fact read at an
    absolute path. The folders above the session's are not a dependency's."""
    (text,) = _located("/home/u/vendor/app", "/home/u/vendor/app/lib")
    assert "change.md is at" in text
    assert _located("/home/u/vendor/app", "/home/u/vendor/app/deps/ash/lib") == []


def test_a_project_folder_named_deps_below_the_top_is_the_projects_own() -> None:
    """Elixir's deps/ and _build/ lie at a mix project's top; ``app/api/deps/`` (FastAPI's
    dependency modules, a Julia package's deps/build.jl) is the project's own code, yet
    :data:`_VENDORED` matches ``deps/`` at any depth and the location fact is dropped."""
    assert _located("/w/app", "app/api/deps")


# ------------------------------------------------------------ corrections: the Read-first rule


def test_a_refusal_for_another_reason_after_the_read_keeps_the_read_first_rule() -> None:
    """Edit refused 'File has not been read yet', the Read, then an Edit refused 'File has
    been modified since read' (a formatter changed the file), a Read again and the Edit
    that worked: the first Read answered the first refusal, and the second is another
    need. ``_tool_needs`` took any of the tool's needs for "refused again" and dropped the
    first rule; the second one stood alone."""
    from agentmem.learning.corrections import find_corrections
    from agentmem.learning.kinds import Kind
    from agentmem.records import Trajectory
    from tests.test_tool_rules import CHANGED

    steps = (
        _edit("/p/a.py", False, NOT_READ),
        _read("/p/a.py"),
        _edit("/p/a.py", False, CHANGED),
        _read("/p/a.py"),
        _edit("/p/a.py"),
    )
    t = Trajectory(task="fix a", steps=steps, accepted=True)
    found = [c.finding.text for c in find_corrections(t) if c.kind == Kind.TOOL_RULE]
    assert any("not been read yet" in x for x in found), found
    assert any("modified since read" in x for x in found), found


def test_a_tool_the_client_lacks_then_a_tool_of_the_same_job_on_the_same_url() -> None:
    """``_other_tool``'s "No such tool available" guard drops every switch to a tool of
    another name, the same job on the same URL included: WebReader (absent) then WebFetch
    of that URL taught "Use WebFetch, not WebReader" before this change, and nothing now.
    The WebSearch case of the change (another job) is right to drop."""
    from agentmem.learning.corrections import find_corrections
    from agentmem.learning.kinds import Kind
    from agentmem.records import Trajectory

    gone = "<tool_use_error>Error: No such tool available: WebReader</tool_use_error>"
    url = "https://example.com/a"
    steps = (
        Step("WebReader", {"url": url}, gone, False),
        Step("WebFetch", {"url": url, "prompt": "read it"}, "page text", True),
    )
    t = Trajectory(task="read the page", steps=steps, accepted=True)
    assert [c for c in find_corrections(t) if c.kind == Kind.WRONG_TOOL]
