"""The transcript-format registry: a new format is one registered module, read by the import
command, the Stop hook's import path and ``imports --source``; files of another format."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentmem import Memory
from agentmem.cli import cli
from agentmem.errors import InvalidRecordError
from agentmem.importers import formats
from agentmem.importers.formats import ParsedFile, TranscriptFormat
from agentmem.importers.turns import FileReport, TurnBuilder, read_json_lines

from .transcripts import ClaudeSession, CodexRollout

# -- a toy format: {"ask": ...} starts a turn, {"run": tool, "args": ..., "out": ..., "ok": ...}


def _parse_toy(
    data: bytes, *, path: str, final: bool, quiet: bool, subagent: Mapping[str, Any] | None
) -> ParsedFile:
    report = FileReport(path)
    lines, bad, truncated = read_json_lines(data)
    report.bad_lines, report.truncated = bad, truncated
    b = TurnBuilder(report)
    for x in lines:
        if "ask" in x.data:
            b.prompt("toy-session", f"t{x.number}", str(x.data["ask"]), x.number, cwd=path)
        elif "run" in x.data:
            cid = f"c{x.number}"
            b.call(cid, x.data["run"], x.data.get("args"))
            b.result(cid, str(x.data.get("out", "")), success=x.data.get("ok") is not False)
        elif x.data.get("end"):
            b.end()
        else:
            report.skipped_lines[str(x.data.get("kind"))] += 1
    return ParsedFile(tuple(b.finish(final=final, quiet=quiet)), report)


def _detect_toy(objects: Sequence[Mapping[str, Any]]) -> bool:
    return any("ask" in o or "run" in o for o in objects)


TOY = TranscriptFormat(
    name="toy",
    description="a toy format for the registry's tests",
    parse=_parse_toy,
    detect=_detect_toy,
    pattern="*.toy.jsonl",
    noun="a toy transcript",
)


@pytest.fixture
def toy() -> Iterator[TranscriptFormat]:
    formats.register(TOY)
    yield TOY
    formats.unregister("toy")


def _toy_file(folder: Path, name: str = "a.toy.jsonl", ask: str = "list the files") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    lines = [
        {"ask": ask},
        {"run": "Bash", "args": {"command": "ls"}, "out": "a.txt"},
        {"run": "Bash", "args": {"command": "cat nope"}, "out": "No such file", "ok": False},
        {"end": True},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _cli(db: Path, *args: str):
    return CliRunner().invoke(cli, list(args), env={"AGENTMEM_DB": str(db)})


def test_the_builtin_formats_are_registered_once():
    assert formats.names()[:3] == ("claude-code", "codex", "anthropic")
    assert [f.name for f in formats.formats()] == list(formats.names())
    with pytest.raises(ValueError, match="registered already"):
        formats.register(formats.by_name("codex"))
    with pytest.raises(InvalidRecordError, match="one of claude-code, codex, anthropic"):
        formats.by_name("nope")


def test_a_registered_format_imports_through_the_cli(toy, tmp_path: Path):
    path = _toy_file(tmp_path / "t")
    db = tmp_path / "lib.db"
    r = _cli(db, "import", "--format", "toy", str(path), "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["source"] == "toy" and len(report["ids"]) == 1
    with Memory.open(db) as mem:
        (t,) = mem.trajectories()
    assert t.source == "toy" and t.task == "list the files"
    assert [(s.tool, s.success) for s in t.steps] == [("Bash", True), ("Bash", False)]
    again = _cli(db, "import", "--format", "toy", str(tmp_path / "t"), "--json")
    assert json.loads(again.stdout)["ids"] == []  # a folder, by the format's pattern; seen before
    listed = _cli(db, "imports", "--source", "toy", "--json")
    assert listed.exit_code == 0 and [x["source"] for x in json.loads(listed.stdout)] == ["toy"]
    assert "toy" in _cli(db, "import", "--help").output


def test_an_unregistered_format_is_a_usage_error(tmp_path: Path):
    r = _cli(tmp_path / "lib.db", "import", "--format", "toy", str(tmp_path))
    assert r.exit_code == 2 and "toy" in r.output and "claude-code" in r.output


def test_a_registered_format_imports_through_the_stop_hook_path(toy, mem: Memory, tmp_path: Path):
    """The hook calls Memory.import_transcripts(fmt, [transcript], final=True)."""
    path = _toy_file(tmp_path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")  # no end marker: only the Stop says it is over
    assert mem.import_transcripts("toy", [path]).in_progress == 1
    report = mem.import_transcripts("toy", [path], final=True)
    assert len(report.ids) == 1
    assert mem.import_transcripts("toy", [path], final=True, force=True).already == 1


def test_a_format_without_a_home_needs_a_path(toy, tmp_path: Path):
    with pytest.raises(InvalidRecordError, match="no default place"):
        TOY.default_path()
    r = _cli(tmp_path / "lib.db", "import", "--format", "toy")
    assert r.exit_code == 1 and "give the file" in r.output


# -- a file of the wrong format -------------------------------------------------------------


def test_a_named_file_of_another_format_is_an_error_that_names_it(tmp_path: Path):
    s = ClaudeSession(cwd=str(tmp_path))
    s.prompt("list the files")
    s.tool("Bash", {"command": "ls"}, "a.txt")
    s.say("done")
    claude = s.write(tmp_path / "claude.jsonl")
    rollout = CodexRollout(cwd=str(tmp_path))
    rollout.prompt("list the files")
    rollout.exec("ls", "a.txt")
    codex = rollout.write(tmp_path / "rollout-2026-01-05T10-00-00-x.jsonl")
    db = tmp_path / "lib.db"
    r = _cli(db, "import", "--format", "codex", str(claude))
    assert r.exit_code == 1
    assert "looks like a Claude Code transcript" in r.output and "--format claude-code" in r.output
    r = _cli(db, "import", "--format", "claude-code", str(codex))
    assert r.exit_code == 1 and "looks like a Codex rollout" in r.output
    with Memory.open(db) as mem:
        assert mem.trajectories() == []


def test_a_folder_import_skips_files_of_another_format_and_counts_them(mem: Memory, tmp_path: Path):
    s = ClaudeSession(cwd=str(tmp_path))
    s.prompt("list the files")
    s.tool("Bash", {"command": "ls"}, "a.txt")
    s.say("done")
    s.write(tmp_path / "p" / "claude.jsonl")
    rollout = CodexRollout(cwd=str(tmp_path))
    rollout.prompt("list the files")
    rollout.exec("ls", "a.txt")
    rollout.add("event_msg", {"type": "task_complete"})
    rollout.write(tmp_path / "p" / "rollout-2026-01-05T10-00-00-x.jsonl")
    report = mem.import_transcripts("claude-code", [tmp_path / "p"])
    assert len(report.ids) == 1 and report.other_format == {"codex": 1}
    assert any("look like codex" in line for line in report.lines())
    assert [t.source for t in mem.trajectories()] == ["claude-code"]


def test_known_lines_are_counted_only_under_verbose(tmp_path: Path):
    s = ClaudeSession(cwd=str(tmp_path))
    s.prompt("list the files")
    for kind in ("attachment", "api-request", "cost-state", "mode", "last-prompt"):
        s.other(kind)
    s.tool("Bash", {"command": "ls"}, "a.txt")
    s.say("done")
    path = s.write(tmp_path / "s.jsonl")
    db = tmp_path / "lib.db"
    quiet = _cli(db, "import", "--format", "claude-code", str(path))
    assert quiet.exit_code == 0 and "skipped" not in quiet.output
    loud = _cli(db, "import", "--format", "claude-code", str(path), "--force", "-v")
    assert "known lines without a turn" in loud.output and "cost-state x1" in loud.output
