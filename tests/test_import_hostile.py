"""Hostile input never stops an import: each bad value, line, turn or file gets a clear message,
is repaired or skipped and counted, and everything else is imported (issue 26, importers)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem import Memory
from agentmem.cli import cli
from agentmem.errors import InvalidRecordError
from agentmem.importers.turns import MAX_PARAM_DEPTH

from .transcripts import ClaudeSession, CodexRollout


def _deep(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    cur = root
    for _ in range(levels):
        cur["a"] = {}
        cur = cur["a"]
    return root


def _session(tmp: Path, sid: str, task: str, params: dict[str, Any], output: str) -> ClaudeSession:
    s = ClaudeSession(session_id=sid, cwd=str(tmp))
    s.prompt(task)
    s.tool("Bash", params, output)
    s.say("done")
    return s


SID = "0a1b2c3d-0000-4000-8000-0000000000{:02d}"


def test_a_tool_input_900_levels_deep_is_cut_and_the_rest_imported(mem: Memory, tmp_path: Path):
    s = _session(tmp_path, SID.format(1), "first", {"command": "ls", "x": _deep(900)}, "ok")
    s.prompt("second")
    s.tool("Bash", {"command": "pwd"}, "/w")
    s.say("done")
    s.write(tmp_path / "p" / "a.jsonl")
    _session(tmp_path, SID.format(2), "later file", {"command": "ls"}, "a").write(
        tmp_path / "p" / "b.jsonl"
    )
    report = mem.import_transcripts("claude-code", [tmp_path / "p"])
    assert len(report.ids) == 3 and report.damaged == []
    assert report.repaired == {"deep nesting": 1}
    first = mem.trajectories()[0]
    assert first.task == "first" and first.meta["repaired"] == {"deep nesting": 1}
    value: Any = first.steps[0].params["x"]
    for _ in range(MAX_PARAM_DEPTH - 1):
        value = value["a"]
    assert isinstance(value, str) and "nested deeper" in value


def test_a_line_too_deep_for_json_is_a_bad_line_and_stops_nothing(mem: Memory, tmp_path: Path):
    s = _session(tmp_path, SID.format(1), "first", {"command": "ls"}, "ok")
    path = s.write(tmp_path / "p" / "a.jsonl")
    deep = b'{"type": "user", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    path.write_bytes(deep + path.read_bytes())  # before any prompt: it damages no turn
    _session(tmp_path, SID.format(2), "later file", {"command": "ls"}, "a").write(
        tmp_path / "p" / "b.jsonl"
    )
    report = mem.import_transcripts("claude-code", [tmp_path / "p"])
    assert [t.task for t in mem.trajectories()] == ["first", "later file"]
    assert len(report.bad_lines) == 1 and "nests too deeply" in report.bad_lines[0]


def test_the_stop_hook_path_survives_a_deep_input(mem: Memory, tmp_path: Path):
    s = _session(tmp_path, SID.format(1), "first", {"x": _deep(900)}, "ok")
    path = s.write(tmp_path / "a.jsonl")
    for turn in range(3):  # every later Stop of the session imports its new turn
        report = mem.import_transcripts("claude-code", [path], final=True)
        assert len(report.ids) == 1 and report.damaged == []
        s.prompt(f"turn {turn}")
        s.tool("Bash", {"command": f"echo {turn}"}, str(turn))
        s.say("done")
        s.write(path)
    mem.import_transcripts("claude-code", [path], final=True)
    assert len(mem.trajectories()) == 4


def test_nul_and_lone_surrogates_are_repaired_and_counted(mem: Memory, tmp_path: Path):
    s = _session(
        tmp_path,
        SID.format(1),
        "fix \ud800 it",
        {"command": "printf 'a\x00b'", "\udfffkey": 1},
        "a\x00b \udc80",
    )
    report = mem.import_transcripts("claude-code", [s.write(tmp_path / "a.jsonl")])
    (t,) = mem.trajectories()
    assert len(report.ids) == 1
    assert t.task == "fix \ufffd it"
    assert t.steps[0].params == {"command": "printf 'a\ufffdb'", "\ufffdkey": 1}
    assert t.steps[0].output == "a\ufffdb \ufffd"
    assert t.meta["repaired"] == {"NUL characters": 2, "lone surrogates": 3}
    assert report.repaired == t.meta["repaired"]


def test_invalid_utf8_and_raw_nul_bytes_damage_only_their_turn(mem: Memory, tmp_path: Path):
    s = _session(tmp_path, SID.format(1), "first", {"command": "ls"}, "ok")
    s.prompt("second")
    s.tool("Bash", {"command": "cat bin"}, "BIN")
    s.say("done")
    s.prompt("third")
    s.tool("Bash", {"command": "pwd"}, "/w")
    s.say("done")
    lines = s.data().split(b"\n")
    second = next(i for i, x in enumerate(lines) if b'"BIN"' in x)
    lines[second] = lines[second].replace(b"BIN", b"\xff\xfe\x00")
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"\n".join(lines))
    report = mem.import_transcripts("claude-code", [path])
    assert [t.task for t in mem.trajectories()] == ["first", "third"]
    assert len(report.damaged) == 1 and "not valid UTF-8" in report.damaged[0]


def test_huge_values_are_clipped(mem: Memory, tmp_path: Path):
    big = "x" * 3_000_000
    s = _session(tmp_path, SID.format(1), "y" * 100_000, {"command": big}, big)
    mem.import_transcripts("claude-code", [s.write(tmp_path / "a.jsonl")])
    (t,) = mem.trajectories()
    assert len(t.steps[0].output) < 20_000 and len(t.steps[0].params["command"]) < 20_000
    assert len(t.task) < 20_000


def test_a_folder_where_a_file_is_expected(mem: Memory, tmp_path: Path):
    _session(tmp_path, SID.format(1), "good", {"command": "ls"}, "a").write(
        tmp_path / "p" / "a.jsonl"
    )
    (tmp_path / "p" / "b.jsonl").mkdir()  # a folder named like a session
    (tmp_path / "p" / "b.jsonl" / "c.jsonl").write_text("")
    (tmp_path / "codex" / "rollout-2026-x.jsonl").mkdir(parents=True)
    report = mem.import_transcripts("claude-code", [tmp_path / "p"])
    assert len(report.ids) == 1
    assert any("b.jsonl is a folder" in f for f in report.failed_files)
    assert "skipped unreadable file" in "\n".join(report.lines())
    codex = mem.import_transcripts("codex", [tmp_path / "codex"])
    assert codex.ids == [] and len(codex.failed_files) == 1
    # the Stop hook's transcript_path: one file, never a folder of them
    with pytest.raises(InvalidRecordError, match="is a folder"):
        mem.import_transcripts("claude-code", [tmp_path / "p"], final=True)


def test_a_path_that_is_neither_a_file_nor_a_folder_is_a_clear_error(mem: Memory, tmp_path: Path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InvalidRecordError, match="neither a file nor a folder"):
        mem.import_transcripts("claude-code", [fifo])


def test_the_cli_import_goes_on_past_a_hostile_file(tmp_path: Path):
    s = _session(tmp_path, SID.format(1), "first", {"x": _deep(900)}, "ok")
    s.write(tmp_path / "p" / "a.jsonl")
    (tmp_path / "p" / "b.jsonl").mkdir()
    _session(tmp_path, SID.format(2), "later", {"command": "ls"}, "a").write(
        tmp_path / "p" / "c.jsonl"
    )
    db = tmp_path / "lib.db"
    r = CliRunner().invoke(
        cli,
        ["import", "--format", "claude-code", str(tmp_path / "p")],
        env={"AGENTMEM_DB": str(db)},
    )
    assert r.exit_code == 0, r.output
    assert "imported 2 trajectories" in r.output and "b.jsonl is a folder" in r.output


# -- fuzz: a hostile line anywhere in a good transcript ----------------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=30),
    st.sampled_from(["\x00", "\ud800", "Exit code 1", "<task-notification>", "mcp__agentmem__x"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_KEYS = st.sampled_from(
    [
        "type",
        "message",
        "content",
        "uuid",
        "parentUuid",
        "isSidechain",
        "payload",
        "call_id",
        "sessionId",
        "promptSource",
        "toolUseResult",
        "item",
        "name",
        "arguments",
        "output",
    ]
)
_LINE = st.one_of(
    st.dictionaries(_KEYS, _VALUES, max_size=6).map(lambda d: json.dumps(d).encode()),
    st.binary(max_size=40),
    st.just(b'{"a": ' * 3000 + b"1" + b"}" * 3000),
    st.sampled_from([b"[1, 2]", b'"x"', b"{", b"\x00\x00", b'{"type": "user", "message": 5}']),
)


def _good(fmt: str, tmp: Path) -> bytes:
    if fmt == "claude-code":
        return _session(tmp, SID.format(7), "good turn", {"command": "ls"}, "a.txt").data()
    r = CodexRollout(cwd=str(tmp))
    r.prompt("good turn")
    r.exec("ls", "a.txt")
    r.add("event_msg", {"type": "task_complete"})
    return r.data()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    fmt=st.sampled_from(["claude-code", "codex"]),
    hostile=st.lists(_LINE, min_size=1, max_size=3),
    at=st.integers(min_value=0),
)
def test_fuzz_a_hostile_line_never_stops_the_import(
    tmp_path_factory: pytest.TempPathFactory, fmt: str, hostile: list[bytes], at: int
):
    tmp = tmp_path_factory.mktemp("fuzz")
    lines = _good(fmt, tmp).rstrip(b"\n").split(b"\n")
    where = 1 + at % len(lines)  # after the first line: the file still says what it is
    lines[where:where] = [h.replace(b"\n", b" ") for h in hostile]
    (tmp / "p").mkdir()
    name = "a.jsonl" if fmt == "claude-code" else "rollout-2026-01-05T10-00-00-a.jsonl"
    (tmp / "p" / name).write_bytes(b"\n".join(lines) + b"\n")
    later = _good(fmt, tmp).replace(b"good turn", b"later file")
    later = later.replace(SID.format(7).encode(), SID.format(8).encode()).replace(
        b"0199a000-1111-7222-8333-944445555666", b"0199a000-1111-7222-8333-944445555667"
    )
    (tmp / "p" / name.replace("a.jsonl", "b.jsonl")).write_bytes(later)
    files = sorted((tmp / "p").iterdir())
    with Memory.open(tmp / "lib.db") as mem:
        report = mem.import_transcripts(fmt, files, final=True)
        tasks = [t.task for t in mem.trajectories()]
    assert "later file" in tasks  # the next file is always imported
    assert report.failed_files == []
    report.lines()  # and the report can be printed
