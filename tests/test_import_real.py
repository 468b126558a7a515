"""Real transcripts import whole: every tool call and every failure, counted here independently
with a plain JSON walk, is in what the importer recorded; no line kind is unknown.

The files (``tests/data/transcripts``, gzipped; ``SOURCES.md`` names each one's repository,
commit, licence and client version) were written by real Claude Code (1.0.98 to 2.1.39) and
Codex (0.36, 0.58) sessions and committed to public repositories, and by the real Claude Code
2.1.332 and Codex 0.171.0 CLIs driven by agentmem's scripted model; a file dropped there by
hand (``*.jsonl`` or ``*.jsonl.gz``) is checked the same way.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentmem import Memory
from agentmem.importers.claude_code import running_subagents

DATA = Path(__file__).resolve().parent / "data" / "transcripts"
#: The public corpus of the real-transcript benchmark, where CI puts it (or $AGENTMEM_CORPUS):
#: its files are checked the same way when it is there.
CORPUS = Path(
    os.environ.get("AGENTMEM_CORPUS")
    or Path(__file__).resolve().parents[2] / "shared" / "data" / "corpus"
)
_EXIT = re.compile(r"(?:Exit code:?|Process exited with code)\s*(-?\d+)")


def _sessions() -> list[Path]:
    """The session files (a Claude Code sub-agent file goes with its session)."""
    roots = [DATA] + ([CORPUS] if CORPUS.is_dir() else [])
    return [
        p
        for root in roots
        for p in sorted(root.rglob("*.jsonl*"))
        if p.name.endswith((".jsonl", ".jsonl.gz")) and "subagents" not in p.parts
    ]


def _unpack(src: Path, dest: Path) -> Path:
    """The file (and its sub-agents) uncompressed under ``dest``; the session file's path."""
    base = DATA if src.is_relative_to(DATA) else CORPUS
    rel = src.relative_to(base)
    root = base / rel.parts[0] if len(rel.parts) > 1 else src
    for p in [root] if root.is_file() else sorted(root.rglob("*")):
        if p.is_dir() or not p.name.endswith((".jsonl", ".jsonl.gz")):
            continue
        out = dest / p.relative_to(base)
        out = out.with_name(out.name.removesuffix(".gz"))
        out.parent.mkdir(parents=True, exist_ok=True)
        if p.name.endswith(".gz"):
            out.write_bytes(gzip.decompress(p.read_bytes()))
        else:
            shutil.copyfile(p, out)
    main = dest / rel
    return main.with_name(main.name.removesuffix(".gz"))


def _objects(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def _format(path: Path) -> str:
    first = next(_objects(path))
    return "codex" if "payload" in first else "claude-code"


def _own(tool: str) -> bool:
    return tool.startswith("mcp__agentmem__")


def _claude_counts(path: Path) -> tuple[int, int]:
    """(tool calls, failed calls) of a Claude Code file, by a plain walk of its blocks."""
    calls = failed = 0
    names: dict[str, str] = {}
    for o in _objects(path):
        content = (o.get("message") or {}).get("content")
        for b in content if isinstance(content, list) else []:
            if b.get("type") == "tool_use":
                names[b["id"]] = b["name"]
                calls += not _own(b["name"])
            elif b.get("type") == "tool_result" and not _own(names.get(b["tool_use_id"], "")):
                c = b.get("content")
                text = c if isinstance(c, str) else " ".join(x.get("text", "") for x in c or [])
                m = _EXIT.match(text)
                failed += b.get("is_error") is True or bool(m and m.group(1) != "0")
    return calls, failed


_RUNNING = re.compile(r"Process running with session ID (\d+)")


def _codex_counts(path: Path) -> tuple[int, int]:
    """(tool calls, failed calls) of a Codex rollout: its function calls (a ``write_stdin`` to a
    process an earlier output said is running is part of that command), and the outputs with a
    non-zero exit code or Codex's words for a call that could not run."""
    calls = failed = 0
    running: set[str] = set()
    for o in _objects(path):
        p = o.get("payload") or {}
        if o.get("type") != "response_item":
            continue
        if p.get("type") in ("function_call", "custom_tool_call", "local_shell_call"):
            name = str(p.get("name"))
            if p.get("namespace"):  # an MCP tool: mcp__server__tool
                name = f"{p['namespace']}__{name}"
            poll = (
                name == "write_stdin"
                and str(json.loads(p["arguments"]).get("session_id")) in running
            )
            calls += not poll and not _own(name)
        elif p.get("type") in ("function_call_output", "custom_tool_call_output"):
            out = p.get("output")
            text = out if isinstance(out, str) else json.dumps(out)
            running.update(_RUNNING.findall(text[:500]))
            try:
                code = json.loads(text)["metadata"]["exit_code"]
            except (ValueError, KeyError, TypeError):
                m = _EXIT.search(text[:500])
                code = int(m.group(1)) if m else 0
            words = (
                text.lstrip()[:40]
                .lower()
                .startswith(
                    (
                        "error",
                        "failed in sandbox",
                        "execution error",
                        "apply_patch verification failed",
                    )
                )
            )
            failed += code != 0 or words
    return calls, failed


def _names_model(path: Path) -> bool:
    return any(
        (o.get("payload") or {}).get("model") or (o.get("message") or {}).get("model")
        for o in _objects(path)
        if o.get("type") in ("turn_context", "session_meta", "assistant")
    )


def _counts(path: Path) -> tuple[int, int]:
    if _format(path) == "codex":
        return _codex_counts(path)
    total = _claude_counts(path)
    subs = path.with_suffix("") / "subagents"
    for sub in sorted(subs.glob("agent-*.jsonl")) if subs.is_dir() else []:
        c, f = _claude_counts(sub)
        total = (total[0] + c, total[1] + f)
    return total


@pytest.mark.parametrize("src", _sessions(), ids=lambda p: p.name[:40])
def test_a_real_transcript_imports_every_call(mem: Memory, tmp_path: Path, src: Path):
    path = _unpack(src, tmp_path)
    fmt = _format(path)
    calls, failed = _counts(path)
    report = mem.import_transcripts(fmt, [path], final=True)
    trajectories = mem.trajectories()
    steps = [s for t in trajectories for s in t.steps]
    assert (len(steps), sum(not s.success for s in steps)) == (calls, failed)
    assert report.skipped_lines == {} and report.skipped_blocks == {}
    assert report.damaged == [] and report.bad_lines == [] and report.in_progress == 0
    assert report.failed_files == [] and not report.other_format
    assert len(report.ids) == len(trajectories) > 0
    if _names_model(path):  # every turn names its model, when the file does
        assert all(t.meta.get("model") for t in trajectories)
    assert all(t.task.strip() and "<task-notification>" not in t.task for t in trajectories)
    assert mem.import_transcripts(fmt, [path], final=True, force=True).ids == []


def test_old_inline_sub_agents_are_trajectories_linked_to_their_task_calls(
    mem: Memory, tmp_path: Path
):
    path = _unpack(DATA / "claude-code-1.jsonl.gz", tmp_path)
    mem.import_transcripts("claude-code", [path], final=True)
    trajectories = mem.trajectories()
    subs = [t for t in trajectories if "subagent" in t.meta]
    main = [t for t in trajectories if "subagent" not in t.meta]
    assert len(subs) == 5  # five Task calls, five inline sub-agents
    task_ids = {
        s.params.get("prompt", "")[:40]: t.meta["turn_id"]
        for t in main
        for s in t.steps
        if s.tool == "Task"
    }
    assert len(task_ids) == 5
    for t in subs:
        link = t.meta["subagent"]
        assert link["inline"] is True and link["type"] == "general-purpose"
        assert task_ids[t.task[:40]] == link["turn_id"]  # the turn whose Task started it
        assert t.meta["session_id"].endswith(f"/agent-{link['agent_id']}")
    (orchestrator,) = [t for t in main if t.meta.get("prompt_kind") == "slash"]
    assert orchestrator.task == "/orchestrator create TODO app by Next.js"
    assert sorted(orchestrator.meta["subagents"]) == sorted(
        t.meta["subagent"]["agent_id"] for t in subs
    )


def test_a_task_notification_is_not_a_prompt(mem: Memory, tmp_path: Path):
    """claude-code-4 (2.1.39): a background command's <task-notification> while the agent
    works is not a turn of its own; the calls after it stay in the user's turn."""
    path = _unpack(
        DATA / "claude-code-4" / "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl.gz", tmp_path
    )
    report = mem.import_transcripts("claude-code", [path], final=True)
    assert report.no_tools == 0
    tasks = [t.task for t in mem.trajectories()]
    assert not any("task-notification" in t for t in tasks)


def test_a_stop_while_the_real_background_agent_runs_does_not_import_it_as_final(
    mem: Memory, tmp_path: Path
):
    """Claude Code 2.1.332's first Stop fires before its background Agent ends, with
    ``background_tasks`` naming it running (this list is the one that Stop payload held)."""
    path = _unpack(
        DATA / "claude-code-2.1.332" / "1fa299d8-67fb-4364-98c8-3914319563d4.jsonl.gz", tmp_path
    )
    sub = path.with_suffix("") / "subagents" / "agent-a0453dd6ff6c46497.jsonl"
    whole = sub.read_bytes()
    lines = whole.splitlines(keepends=True)
    result = max(i for i, x in enumerate(lines) if b'"tool_result"' in x)
    sub.write_bytes(b"".join(lines[: result + 1]))  # its Bash call answered, its reply not yet
    background = [
        {
            "id": "a0453dd6ff6c46497",
            "type": "subagent",
            "status": "running",
            "description": "Count files",
            "agent_type": "general-purpose",
        }
    ]
    running = running_subagents(background)
    first = mem.import_transcripts("claude-code", [path], final=True, running=sorted(running))
    assert first.in_progress == 1 and all("subagent" not in t.meta for t in mem.trajectories())
    sub.write_bytes(whole)  # the agent finished; the next Stop lists nothing running
    second = mem.import_transcripts("claude-code", [path], final=True)
    (agent,) = [t for t in mem.trajectories() if "subagent" in t.meta]
    assert len(second.ids) == 1
    assert [s.params["command"] for s in agent.steps] == ["ls docs | wc -l"]
