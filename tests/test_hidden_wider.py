"""The ``hidden`` kind, widened (wave 4, fourteenth session): rg skips hidden folders, and
a run shows it in three more shapes, each paraphrased from a real session of the
validation half that the kind had missed (read after the miss, so not blind):

- ``find . -name G`` found the files in several folders, all inside one hidden top
  folder (xentri: BMAD's ``workflow.yaml`` files under ``.bmad/core/...`` and
  ``.bmad/bmm/...``);
- a pattern of ``rg --files -g`` that is a path inside a hidden folder
  (``.specify/**``), or any pattern of several (``-g '.specify/memory/constitution.md'
  -g constitution.md``), then a listing that named the folder and a read under it;
- a content search that found nothing, then the very same ``rg`` with ``--hidden``
  (``-uu``) that found matches, every one inside a hidden folder (devenv).

Each shape has its negatives: the cases where the run does not show that the hidden
folder was the cause."""

from __future__ import annotations

from agentmem.agents import learning_view
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory


def _sh(command: str, output: str = "", ok: bool = True) -> Step:
    return Step(
        tool="Bash",
        params={"command": command},
        output=output if ok else f"Exit code 1\n{output}",
        success=ok,
    )


def _lessons(*steps: Step) -> list[str]:
    run = learning_view(Trajectory(task="find the workflow", steps=steps))
    return [x.finding.text for x in find_shell_fixes(run) if x.finding.detail["change"] == "hidden"]


_WORKFLOWS = (
    "./.bmad/core/workflows/party-mode/workflow.yaml\n"
    "./.bmad/core/workflows/brainstorming/workflow.yaml\n"
    "./.bmad/bmm/workflows/2-plan-workflows/prd/workflow.yaml"
)


def test_files_in_several_folders_of_one_hidden_folder_teach_that_folder() -> None:
    (text,) = _lessons(
        _sh("rg --files -g 'workflow.yaml'", "", False),
        _sh("find . -name 'workflow.yaml'", _WORKFLOWS),
    )
    assert text.startswith("In this project workflow.yaml files are under .bmad/, a hidden")
    assert "rg --files --hidden" in text


_SPECS = "./.config/specs/a.spec.yaml\n./.config/specs/b.spec.yaml"


def test_files_in_one_folder_are_in_it() -> None:
    (text,) = _lessons(
        _sh("rg --files -g '*.spec.yaml'", "", False),
        _sh("find . -name '*.spec.yaml'", _SPECS),
    )
    assert "files are in .config/specs/," in text


def test_files_also_outside_the_hidden_folder_teach_nothing() -> None:
    """rg would have listed the visible one: something else kept it from listing."""
    assert not _lessons(
        _sh("rg --files -g 'workflow.yaml'", "", False),
        _sh("find . -name 'workflow.yaml'", _WORKFLOWS + "\n./docs/workflow.yaml"),
    )


def test_a_pattern_inside_a_hidden_folder_then_a_read_under_it() -> None:
    (text,) = _lessons(
        _sh("rg --files -g '.specify/**'", "", False),
        _sh("ls -a", ".\n..\n.codex\n.git\n.specify\nindex.html\npackage.json\nsrc"),
        _sh("cat .specify/memory/constitution.md", "# [PROJECT_NAME] Constitution"),
    )
    assert text.startswith("In this project constitution.md is in .specify/memory/, a hidden")


def test_the_second_pattern_of_several_is_read_too() -> None:
    (text,) = _lessons(
        _sh("rg --files -g '.specify/memory/constitution.md' -g 'constitution.md'", "", False),
        _sh("ls -a", ".\n..\n.codex\n.env\n.specify\nbackend\ngo.mod"),
        _sh("cat .specify/memory/constitution.md", "# Constitution"),
    )
    assert "constitution.md is in .specify/memory/" in text


def test_a_hidden_file_read_directly_teaches_nothing() -> None:
    """``.envrc`` is a hidden file, not a folder rg skipped (a trap in the key)."""
    assert not _lessons(
        _sh("rg --files -g '.envrc'", "", False),
        _sh("ls -a", ".\n..\n.envrc\n.git\nsrc"),
        _sh("cat .envrc", "use flake"),
    )


def test_no_listing_named_the_folder_teaches_nothing() -> None:
    assert not _lessons(
        _sh("rg --files -g '.specify/**'", "", False),
        _sh("cat .specify/memory/constitution.md", "# Constitution"),
    )


_DEVENV = (
    './.devenv/run.sh:8:source "$PWD/.devenv/run_nv.sh"\n'
    './.devenv/setup.sh:24:bash "$PWD/.devenv/setup_nv.sh"'
)


def test_a_search_that_found_it_only_with_hidden_added() -> None:
    (text,) = _lessons(
        _sh('rg -n "setup_nv|run_nv" -S .', "", False),
        _sh('rg -n "setup_nv|run_nv" -S -uu .', _DEVENV),
    )
    assert text.startswith("In this project rg skips the hidden folder .devenv/ (it found")
    assert text.endswith("(it found nothing there until given -uu): search it with rg -uu.")


def test_a_search_whose_new_match_is_not_hidden_teaches_nothing() -> None:
    """-uu also searches ignored files: a match in node_modules/ may be why."""
    assert not _lessons(
        _sh('rg -n "setup_nv" -S .', "", False),
        _sh('rg -n "setup_nv" -S -uu .', _DEVENV + "\nnode_modules/x/index.js:3:setup_nv()"),
    )


def test_a_search_that_changed_more_than_the_option_teaches_nothing() -> None:
    assert not _lessons(
        _sh('rg -n "setup_nv" -S .', "", False),
        _sh('rg -n "run_nv" -S --hidden .', _DEVENV),
    )


def test_no_ignore_alone_is_another_cause() -> None:
    assert not _lessons(
        _sh('rg -n "setup_nv" .', "", False),
        _sh('rg -n "setup_nv" -u .', _DEVENV),
    )


def test_a_search_that_had_found_something_teaches_nothing() -> None:
    assert not _lessons(
        _sh('rg -n "setup_nv" .', "src/a.sh:1:setup_nv"),
        _sh('rg -n "setup_nv" --hidden .', _DEVENV),
    )


# -- review 30 -----------------------------------------------------------------------------


def test_uu_advises_uu_not_hidden() -> None:
    """``-uu`` is ``--no-ignore --hidden``: a folder that is hidden and git-ignored too
    (``.devenv``, ``.venv``) is found by ``-uu`` and still skipped by ``--hidden`` alone,
    so the lesson advises what the run showed working."""
    (text,) = _lessons(
        _sh('rg -n "setup_nv|run_nv" -S .', "", False),
        _sh('rg -n "setup_nv|run_nv" -S -uu .', _DEVENV),
    )
    assert "search it with rg -uu." in text
    assert "--hidden" not in text


def test_hidden_alone_advises_hidden() -> None:
    (text,) = _lessons(
        _sh('rg -n "setup_nv" .', "", False),
        _sh('rg -n "setup_nv" --hidden .', _DEVENV),
    )
    assert text.endswith("search it with rg --hidden.")


def test_a_hidden_folder_the_search_was_given_is_not_the_one_skipped() -> None:
    """rg searches a folder it is given, hidden or not: a hidden folder above the matches
    that the command named (the session's own folder, ``/root/.openclaw/ws``, or
    ``.venv`` itself) is not the one rg skipped."""
    assert not _lessons(
        _sh("rg -n foo /root/.openclaw/ws", "", False),
        _sh("rg -n foo -uu /root/.openclaw/ws", "/root/.openclaw/ws/node_modules/x/i.js:3:foo()"),
    )
    assert not _lessons(
        _sh("rg -n foo .venv", "", False),
        _sh("rg -n foo -uu .venv", ".venv/lib/python3.12/site-packages/x.py:3:foo()"),
    )
    (text,) = _lessons(
        _sh("rg -n foo .github", "", False),
        _sh("rg -n foo --hidden .github", ".github/.hooks/x.sh:3:foo"),
    )
    assert "hidden folder .github/.hooks/" in text


def test_a_match_above_the_session_folder_teaches_nothing() -> None:
    assert not _lessons(
        _sh("rg -n foo ..", "", False),
        _sh("rg -n foo --hidden ..", "../.github/workflows/ci.yml:3:foo"),
    )


def test_a_nested_hidden_folder_is_named_by_its_path() -> None:
    """The lesson and its EXISTS claim name ``src/.gen``, where the project has it, not
    ``.gen`` (which the claim check would look for at the project's top)."""
    from agentmem.learning.shell_fixes import claims_of

    run = learning_view(
        Trajectory(
            task="t",
            steps=(
                _sh("rg -n foo src", "", False),
                _sh("rg -n foo --hidden src", "src/.gen/x.py:3:foo()"),
            ),
        )
    )
    (fix,) = [x for x in find_shell_fixes(run) if x.finding.detail["change"] == "hidden"]
    assert "hidden folder src/.gen/" in fix.finding.text
    assert claims_of(fix.finding) == (("exists", "src/.gen"),)


def test_a_retry_with_its_operands_swapped_is_another_search() -> None:
    """``rg foo bar`` searches bar for foo; ``rg --hidden bar foo`` searches foo for bar."""
    assert not _lessons(
        _sh("rg foo bar", "", False),
        _sh("rg --hidden bar foo", ".x/y.py:3:bar"),
    )


def test_files_under_a_virtualenv_teach_nothing() -> None:
    """Installed code under ``.venv/`` is the dependency's layout, no fact of the project,
    and a git-ignored ``.venv`` is skipped by ``rg --files --hidden`` too."""
    assert not _lessons(
        _sh("rg --files -g '*.pyi'", "", False),
        _sh(
            "find . -name '*.pyi'",
            "./.venv/lib/python3.12/site-packages/attr/__init__.pyi\n"
            "./.venv/lib/python3.12/site-packages/attrs/converters.pyi",
        ),
    )


def test_a_search_found_only_in_git_or_a_virtualenv_teaches_nothing() -> None:
    """``.git/`` and ``.venv/`` are the repository's and the dependencies' own: a match
    there is no place of the project's to search."""
    for out in (".git/COMMIT_EDITMSG:1:foo", ".venv/lib/python3.12/site-packages/x.py:1:foo"):
        assert not _lessons(_sh("rg foo", "", False), _sh("rg --hidden foo", out))


# -- after review 30 ------------------------------------------------------------------------


def test_rg_files_given_a_folder_listed_only_there() -> None:
    """``rg --files src -g G`` searched src/ only: a file find found in .config/ says
    nothing of what rg skips."""
    assert not _lessons(
        _sh("rg --files src -g '*.spec.yaml'", "", False),
        _sh("find . -name '*.spec.yaml'", _SPECS),
    )
    (text,) = _lessons(
        _sh("rg --files . -g '*.spec.yaml'", "", False),
        _sh("find . -name '*.spec.yaml'", _SPECS),
    )
    assert "files are in .config/specs/," in text


def test_more_than_three_hidden_folders_are_counted() -> None:
    found = "\n".join(f"./.d{n}/x.sh:1:setup_nv" for n in range(5))
    (text,) = _lessons(
        _sh('rg -n "setup_nv" .', "", False),
        _sh('rg -n "setup_nv" --hidden .', found),
    )
    assert "folders .d0/, .d1/, .d2/ and 2 more (it found" in text
