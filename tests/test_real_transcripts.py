"""The real-transcript benchmark (benchmarks/bench_real_transcripts.py) on its corpus.

The corpus lives beside the repository in ``../shared/data/`` (``transcripts/`` and
``corpus/``; ``$AGENTMEM_REAL_DATA`` points elsewhere); the answer keys are committed in
``benchmarks/real/keys/``. A key must label every failed call of its transcript, which
is checked here whenever the transcript is present, and so are the targets of issue 23
(on the transcripts present: the six of ``transcripts/`` in CI).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import bench_real_transcripts as bench

ROOT = bench.data_root()
KEYS = sorted(bench.KEYS.glob("*.json"))


def _present() -> list[bench.Transcript]:
    return [t for t in bench.load_keys(ROOT) if t.path.exists()]


needs_corpus = pytest.mark.skipif(not _present(), reason=f"no real transcripts under {ROOT}")


@pytest.mark.parametrize("key", KEYS, ids=[k.stem for k in KEYS])
def test_key_labels_every_failed_call(key: Path) -> None:
    k = json.loads(key.read_text(encoding="utf-8"))
    t = bench.Transcript(k["file"], k["client"], k["project"], k["failures"])
    t.path = ROOT / t.file
    if not t.path.exists():
        pytest.skip(f"{t.file} is not under {ROOT}")
    assert bench.check_key(t) == []


def test_corpus_is_as_large_as_the_issue_asks() -> None:
    items = bench.load_keys(ROOT)
    assert len(items) >= 30
    assert len({t.project for t in items}) >= 10
    labels = [e["label"] for t in items for e in t.entries]
    assert labels.count("correction") and labels.count("trap")


def test_a_missed_failure_is_a_key_problem(tmp_path: Path) -> None:
    line = {
        "type": "user",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True}],
        },
    }
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps(line) + "\n")
    t = bench.Transcript("s.jsonl", "claude-code", "p", [])
    t.path = f
    assert bench.check_key(t) == ["s.jsonl: failed call t1 has no key entry"]


@pytest.fixture(scope="module")
def figures() -> dict[str, Any]:
    if not _present():
        pytest.skip(f"no real transcripts under {ROOT}")
    return bench.run(ROOT, present_only=True)


@needs_corpus
def test_benchmark_runs_and_reports(figures: dict[str, Any]) -> None:
    assert figures["key_problems"] == []
    a = figures["all"]
    assert a["corrections"] == figures["key_corrections"] > 0
    assert all(x["match"] == "FALSE" or "#" in x["match"] for x in a["listing"])
    assert figures["replay"]["turns"] > 0
    text = bench.report(figures)
    assert "precision" in text and "replay" in text


@needs_corpus
def test_precision_target(figures: dict[str, Any]) -> None:
    assert (figures["all"]["precision"] or 0) >= bench.TARGETS["precision"]


@needs_corpus
def test_no_false_global_lesson(figures: dict[str, Any]) -> None:
    assert figures["all"]["false_global"] == 0


@needs_corpus
def test_recall_target(figures: dict[str, Any]) -> None:
    assert (figures["all"]["recall"] or 0) >= bench.TARGETS["recall"]


@needs_corpus
def test_replay_targets(figures: dict[str, Any]) -> None:
    r = figures["replay"]
    assert (r["right_share"] or 0) >= bench.TARGETS["replay_right"]
    assert (r["wrong_turn_share"] or 0) <= bench.TARGETS["replay_wrong_turns"]


def test_codex_failures_in_every_output_form(tmp_path: Path) -> None:
    def call(cid: str, name: str) -> dict[str, Any]:
        return {
            "type": "response_item",
            "payload": {"type": "function_call", "call_id": cid, "name": name},
        }

    def out(cid: str, output: str) -> dict[str, Any]:
        return {
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": cid, "output": output},
        }

    lines = [
        {"type": "session_meta", "payload": {"cli_version": "0.63.0"}},
        call("a", "shell"),
        out("a", json.dumps({"output": "x", "metadata": {"exit_code": 2}})),
        call("b", "shell_command"),
        out("b", "Exit code: 0\nWall time: 0 s\nOutput:\nok"),
        call("c", "exec_command"),
        out("c", "Chunk ID: 1\nProcess exited with code 127\nOutput:\nno"),
        call("d", "mcp__x__y"),
        out("d", json.dumps({"content": [], "isError": True})),
        call("e", "apply_patch"),
        out("e", "apply_patch verification failed: no lines"),
        call("f", "apply_patch"),
        out("f", "Success. Updated the following files:\nM a.py"),
    ]
    f = tmp_path / "r.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert [x.id for x in bench.failed_calls(f)] == ["a", "c", "d", "e"]


def test_corpus_spans_three_versions_of_each_client() -> None:
    items = bench.load_keys(ROOT)
    if not all(t.path.exists() for t in items):
        pytest.skip(f"the whole corpus is not under {ROOT}")
    versions: dict[str, set[str]] = {"claude-code": set(), "codex": set()}
    for t in items:
        for line in t.path.read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            if obj.get("type") == "session_meta":
                versions[t.client].add(str(obj["payload"].get("cli_version")))
            elif obj.get("version") and obj.get("sessionId"):
                versions[t.client].add(str(obj["version"]))
    assert all(len(v) >= 3 for v in versions.values()), versions


def test_a_merged_lesson_is_learned_from_every_merged_groups_transcripts(tmp_path: Path) -> None:
    """Two sessions (two projects) each correct Edit's "not read yet" by reading the
    file; Stage 3 merges the two groups' lessons into one, which the benchmark credits to
    both transcripts (the journal's ``lesson_runs``), not only to the group that proposed
    it."""
    from agentmem import Memory, Step

    refused = "<tool_use_error>File has not been read yet. Read it first.</tool_use_error>"

    def run(path: str) -> list[Step]:
        edit = {"file_path": path, "old_string": "x", "new_string": "y"}
        return [
            Step("Edit", edit, refused, False),
            Step("Read", {"file_path": path}, "1\tx", True),
            Step("Edit", edit, "ok", True),
        ]

    with Memory.open(tmp_path / "lib.db") as mem:
        for n, (project, task) in enumerate(
            (("/w/one", "fix the title"), ("/w/two", "fix a typo"))
        ):
            meta = {"project": project, "transcript": f"/data/s{n}.jsonl"}
            mem.record(task, run(f"{project}/a.py"), accepted=True, meta=meta)
        mem.learn(use_model=False)
        [lesson] = bench.lessons(mem)
    assert "Read the file first" in lesson.text
    assert lesson.sources == {"/data/s0.jsonl", "/data/s1.jsonl"}
