"""The eighteenth session's kinds and widenings (wave 4), each paraphrased from a real
session of the validation half that agentmem had missed (read after the miss, so not
blind), with the negatives of the same sessions' shapes:

* ``container``: docker knew no container ``odoo18`` ("No such container"), ``docker ps``
  listed the machine's containers, and the same ``docker exec`` given one of them worked;
* ``borrowed`` (a client tool's rule): the filesystem MCP server's ``edit_file`` was
  refused for want of ``edits`` after it was given the built-in Edit's ``old_string`` and
  ``new_string``, and Edit then did the job with them (learned once the slip repeats);
* ``windows``, widened: cmd's ``dir /s /b`` in Git Bash (GNU dir read ``/s`` as a file),
  then Glob or ``ls -la`` listed the folder: GNU ``dir`` lists, so either did its job.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentmem import Memory
from agentmem.agents import learning_view, programs
from agentmem.agents.outcomes import borrowed_params, required_missing
from agentmem.learning.corrections import find_corrections
from agentmem.learning.kinds import Kind
from agentmem.learning.shell_fixes import find_shell_fixes
from agentmem.records import Step, Trajectory


def _cc(command: str, output: str = "", ok: bool = True) -> Step:
    body = output if ok else f"Exit code 1\n{output}"
    return Step(tool="Bash", params={"command": command}, output=body, success=ok)


def _pwsh(command: str, output: str = "", ok: bool = True) -> Step:
    body = output if ok else f"Exit code 1\n{output}"
    return Step(tool="PowerShell", params={"command": command}, output=body, success=ok)


def _found(kind: str, *steps: Step, cwd: str = "/w/app") -> list[str]:
    run = learning_view(Trajectory(task="do the job", steps=steps, meta={"cwd": cwd}))
    return [x.finding.text for x in find_shell_fixes(run) if x.finding.detail["change"] == kind]


# -- container ---------------------------------------------------------------------------

_GONE = "Error response from daemon: No such container: {}"
_PS = "NAMES                 STATUS\nodoo_docker-nginx-1   Up 6 days\nodoo_docker-web-1     Up"
_UPGRADE = "docker exec {} odoo -u hr_recruitment -d odoo18 --stop-after-init"


def test_a_container_named_from_the_listing_teaches_the_machines_container() -> None:
    # eduardodmb-claudehome-b6: odoo18 is the database; the container is odoo_docker-web-1
    bin_ = _UPGRADE.format("odoo18").replace("odoo -u", "odoo-bin -u")
    (text,) = _found(
        "container",
        _pwsh(bin_, _GONE.format("odoo18"), False),
        _pwsh("docker ps -a", _PS),
        _pwsh(_UPGRADE.format("odoo_docker-web-1"), "Modules loaded."),
    )
    assert "no container odoo18 ('No such container: odoo18')" in text
    assert "odoo_docker-web-1, which docker ps lists (docker exec odoo_docker-web-1" in text


def test_every_name_the_run_tried_is_named_once() -> None:
    # eduardodmb-claudehome-b6 again: odoo18-dev, then odoo_server, then the listing
    found = _found(
        "container",
        _pwsh(_UPGRADE.format("odoo18-dev"), _GONE.format("odoo18-dev"), False),
        _pwsh(_UPGRADE.format("odoo_server"), _GONE.format("odoo_server"), False),
        _pwsh("docker ps", _PS),
        _pwsh(_UPGRADE.format("odoo_docker-web-1"), "Modules loaded."),
    )
    assert len(found) == 1 and "no container odoo18-dev or odoo_server" in found[0]


def test_a_simple_rename_is_the_container_fact_not_a_value_of_the_command() -> None:
    # eduardodmb-claudework-b10: docker restart odoo18 -> docker restart odoo_docker-web-1
    # was read as a project's operand; it is the machine's container
    steps = (
        _cc("docker restart odoo18", _GONE.format("odoo18"), False),
        _cc("docker ps -a --format '{{.Names}}'", "odoo_docker-web-1\nodoo_docker-db-1"),
        _cc("docker restart odoo_docker-web-1", "odoo_docker-web-1"),
    )
    run = learning_view(Trajectory(task="restart odoo", steps=steps, meta={"cwd": "/w/app"}))
    (fix,) = find_shell_fixes(run)
    assert fix.finding.detail["change"] == "container"
    assert fix.finding.detail["scope"] == "machine"


def test_no_container_lesson_without_a_listing_or_for_a_container_the_run_made() -> None:
    gone = _cc(_UPGRADE.format("odoo18"), _GONE.format("odoo18"), False)
    right = _cc(_UPGRADE.format("odoo_docker-web-1"), "Modules loaded.")
    # a guess that happened to work: no listing showed the name
    assert not _found("container", gone, right)
    # ariffazil-a-forge (development): the container did not exist yet; compose made it
    assert not _found(
        "container",
        _cc("docker restart geox_server", _GONE.format("geox_server"), False),
        _cc("docker ps -a", "CONTAINER ID   IMAGE   NAMES\n1a2b   geox   geox_server"),
        _cc("docker compose -p geox up -d geox_server", "Container geox_server Started"),
        _cc("docker restart geox_server", "geox_server"),
    )
    # the listing named it, but the call that worked used another subcommand
    logs = _cc("docker logs odoo_docker-web-1", "ok")
    assert not _found("container", gone, _cc("docker ps", _PS), logs)
    # the same name again (the engine came back): no other container
    again = _cc(_UPGRADE.format("odoo18"), "ok")
    assert not _found("container", gone, _cc("docker ps", _PS), again)


def test_podmans_wording_is_the_same_refusal() -> None:
    said = 'Error: no container with name or ID "web" found: no such container'
    (text,) = _found(
        "container",
        _cc("podman logs web", said, False),
        _cc("podman ps --format '{{.Names}}'", "app_web_1"),
        _cc("podman logs app_web_1", "listening"),
    )
    assert "no container web" in text and "podman logs app_web_1" in text


# -- borrowed parameters -----------------------------------------------------------------

_ZOD = json.dumps(
    [{"code": "invalid_type", "expected": "array", "received": "undefined",
      "path": ["edits"], "message": "Required"}], indent=2,
)  # fmt: skip
_REFUSED = f"Error: Invalid arguments for edit_file: {_ZOD}"
_CFG = "K:/PortableApps/Claude-Code/.claude.json"


def _mcp_edit(old: str, new: str) -> Step:
    params = {"path": _CFG, "old_string": old, "new_string": new}
    return Step("mcp__filesystem__edit_file", params, _REFUSED, False)


def _edit(old: str, new: str) -> Step:
    params = {"file_path": _CFG, "old_string": old, "new_string": new}
    return Step("Edit", params, f"The file {_CFG} has been updated.", True)


def test_required_missing_reads_each_wording() -> None:
    assert required_missing(_mcp_edit("a", "b")) == "edits"
    ask = Step(
        "AskUserQuestion",
        {"questions": [{"question": "q"}]},
        "<tool_use_error>InputValidationError: AskUserQuestion failed due to the following "
        "issue:\nThe required parameter `questions[0].options` is missing</tool_use_error>",
        False,
    )
    assert required_missing(ask) == "questions[0].options"
    given = Step("mcp__x__run", {"edits": []}, _REFUSED, False)
    assert required_missing(given) is None  # it was given: another refusal


def _lessons(*steps: Step) -> list[str]:
    run = Trajectory(task="edit the config", steps=steps, accepted=True)
    return [c.finding.text for c in find_corrections(run) if c.kind == Kind.TOOL_RULE]


def test_another_tools_parameters_then_that_tool_is_the_tools_rule() -> None:
    # 0blueteam0-nexus-atip: edit_file refused twice, then Edit with the same strings
    steps = (
        _mcp_edit('"env": {', '"env": {\n'),
        _mcp_edit('"LC_ALL": "ko"', '"LC_ALL": "ko",\n"X": 1'),
        _edit('"LC_ALL": "ko"', '"LC_ALL": "ko",\n"X": 1'),
    )
    assert borrowed_params(steps) == {1: 2}
    (text,) = _lessons(*steps)
    assert text.startswith("mcp__filesystem__edit_file needs edits ('edits: Required')")
    assert "old_string and new_string are parameters of Edit" in text


def test_no_borrowed_rule_when_the_values_differ_or_the_tool_itself_worked() -> None:
    refused = _mcp_edit('"a": 1', '"a": 2')
    assert not borrowed_params((refused, _edit('"b": 1', '"b": 2')))  # other strings
    fixed = Step("mcp__filesystem__edit_file", {"path": _CFG, "edits": []}, "ok", True)
    assert not borrowed_params((refused, fixed, _edit('"a": 1', '"a": 2')))
    assert not borrowed_params((refused, _edit('"a": 1', '"a": 2'))[:1])


def test_a_one_off_borrowed_slip_is_no_lesson_and_a_repeated_one_is(tmp_path: Path) -> None:
    learned = []
    for n in (1, 2):
        steps = [_mcp_edit('"b": 1', '"b": 2')] * (n - 1)
        steps += [_mcp_edit('"a": 1', '"a": 2'), _edit('"a": 1', '"a": 2')]
        with Memory.open(tmp_path / f"m{n}.db") as mem:
            mem.record("edit the config", steps, accepted=True, meta={"cwd": "K:/cc"})
            mem.learn(use_model=False)
            learned.append([e.text for e in mem.experiences() if "edit_file" in e.text])
    assert learned[0] == [] and len(learned[1]) == 1


# -- windows, widened: dir lists ---------------------------------------------------------

_APP = "C:\\Users\\Administrator\\Desktop\\CourtAssistant"


def test_gnu_dir_lists_so_glob_or_ls_did_its_job() -> None:
    assert programs.same_job("ls", ["dir"]) and not programs.is_windows_command("dir")
    failed = _cc(f'dir "{_APP}" /s /b', "dir: cannot access '/s': No such file or directory", False)
    glob = Step("Glob", {"pattern": "**/*", "path": _APP}, f"{_APP}\\app\\build.gradle.kts", True)
    (text,) = _found("windows", failed, glob, cwd=_APP)
    assert text.endswith("; Glob did the job instead.")
    said = "dir: cannot access '/b': No such file or directory"
    one = _cc(f'dir "{_APP}\\model" /b', said, False)
    ls = _cc(f'cd "{_APP}\\model" && ls -la', "total 8\n-rw-r--r-- 1 a 197121 10 a.pdf")
    (text,) = _found("windows", one, ls, cwd=_APP)
    assert text.endswith("; bash's own ls -la did the job instead.")


def test_a_listing_in_another_folder_did_not_do_dirs_job() -> None:
    failed = _cc(f'dir "{_APP}" /s /b', "dir: cannot access '/s': No such file or directory", False)
    other = _cc('cd "C:\\Users\\Administrator\\Desktop\\other" && ls -la', "total 0")
    assert not _found("windows", failed, other, cwd=_APP)
