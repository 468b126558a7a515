"""The first hour of a Claude Code or Codex user (issue 31): setup, status, log.

Each test runs the CLI as a subprocess with HOME pointing at a fresh folder holding
Claude Code's history (written by ``tests/transcripts.py``: no real user's data).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .transcripts import ClaudeSession

EDIT_ERROR = (
    "<tool_use_error>File has not been read yet. Read it first before writing to it."
    "</tool_use_error>"
)
LESSON = "If Edit fails with 'File has not been read yet', Read the file first, then retry."


def _history(home: Path, sessions: int = 2, first: int = 0) -> None:
    """Claude Code sessions in which an Edit fails until the file is read."""
    for n in range(first, first + sessions):
        s = ClaudeSession(session_id=f"0a1b2c3d-0000-4000-8000-{100 + n:012d}", cwd="/w/app")
        s.prompt(f"fix the typo in config{n}.py")
        path = {"file_path": f"/w/app/config{n}.py", "old_string": "a", "new_string": "b"}
        s.tool("Edit", path, EDIT_ERROR, is_error=True)
        s.tool("Read", {"file_path": f"/w/app/config{n}.py"}, "     1\ta = 1\n")
        s.tool("Edit", path, "The file has been updated.")
        s.say("Fixed.")
        s.write(home / ".claude" / "projects" / "-w-app" / f"{s.session_id}.jsonl")


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTMEM_", "XDG_"))}
    env.update(HOME=str(home), PATH=os.path.dirname(sys.executable) + ":/usr/bin:/bin")
    env.pop("CLAUDE_CONFIG_DIR", None)
    env.pop("CODEX_HOME", None)
    return env


def _am(home: Path, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentmem", *args],
        env=_env(home),
        cwd=home,
        input=input,
        capture_output=True,
        timeout=300,
    )


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    _history(h)
    return h


def test_setup_dry_run_changes_nothing(home: Path) -> None:
    before = _files(home)
    p = _am(home, "setup", "--dry-run")
    assert p.returncode == 0, p.stderr.decode()
    out = p.stdout.decode()
    assert "claude-code" in out and "2 session file(s)" in out
    assert "would add agentmem's UserPromptSubmit and Stop hooks" in out
    assert _files(home) == before


def test_setup_wires_imports_learns_and_the_next_prompt_gets_the_lesson(home: Path) -> None:
    p = _am(home, "setup", "--json")
    assert p.returncode == 0, p.stderr.decode()
    report = json.loads(p.stdout)
    assert LESSON in report["learned"]
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    commands = [h["command"] for e in settings["hooks"]["UserPromptSubmit"] for h in e["hooks"]]
    assert any("hooks run claude-code" in c and "--learn" in c for c in commands)
    assert "--no-model" not in " ".join(commands)  # data-only is the default now

    again = _am(home, "setup", "--json")  # idempotent: nothing new
    assert again.returncode == 0
    second = json.loads(again.stdout)
    assert second["learned"] == [] and second["lessons"] == report["lessons"]
    assert all("nothing changed" in line for line in second["hooks"])

    payload = {
        "hook_event_name": "UserPromptSubmit",
        "prompt": "edit the settings module",
        "session_id": "s-new",
        "cwd": "/w/app",
        "transcript_path": str(home / "t.jsonl"),
    }
    hook = _am(home, "hooks", "run", "claude-code", input=json.dumps(payload).encode())
    assert hook.returncode == 0
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert LESSON in context

    log = _am(home, "log", "--json")
    assert log.returncode == 0, log.stderr.decode()
    rows = json.loads(log.stdout)
    assert rows[-1]["served"][0]["text"] == LESSON
    assert rows[-1]["served"][0]["why"]  # why it fitted

    st = _am(home, "status", "--json")
    assert st.returncode == 0, st.stderr.decode()
    status = json.loads(st.stdout)
    assert status["library"]["lessons"] >= 1
    assert any(s["installed"] and s["learning"] for s in status["hooks"])
    assert any(k.startswith("claude-code-UserPromptSubmit") for k in status["last_fired"])
    assert status["waiting"]["runs"] == 0  # history is past its correction window
    text = _am(home, "status").stdout.decode()
    assert "records and learns" in text and "last fired: claude-code-UserPromptSubmit" in text


def test_status_without_a_library_says_so(tmp_path: Path) -> None:
    p = _am(tmp_path, "status")
    assert p.returncode == 0, p.stderr.decode()
    assert "does not exist yet" in p.stdout.decode()
    assert "hooks: none installed" in p.stdout.decode()
    assert not list(tmp_path.rglob("*.db"))


def test_a_library_that_cannot_be_written_is_told_through_claude_code(home: Path) -> None:
    if os.geteuid() == 0:
        # root writes anything: make the library's folder a file instead
        lib = home / "lib"
        lib.write_text("not a folder")
        db = str(lib / "agentmem.db")
    else:  # pragma: no cover - CI runs as root
        lib = home / "ro"
        lib.mkdir()
        lib.chmod(0o500)
        db = str(lib / "agentmem.db")
    payload = {
        "hook_event_name": "Stop",
        "session_id": "0a1b2c3d-0000-4000-8000-000000000100",
        "cwd": "/w/app",
        "transcript_path": str(
            home / ".claude/projects/-w-app/0a1b2c3d-0000-4000-8000-000000000100.jsonl"
        ),
    }
    p = _am(home, "hooks", "run", "claude-code", "--db", db, input=json.dumps(payload).encode())
    assert p.returncode == 0
    msg = json.loads(p.stdout)["systemMessage"]
    assert msg.startswith("agentmem: the library cannot be written")


def test_a_mistyped_library_is_refused_and_named(home: Path) -> None:
    assert _am(home, "setup").returncode == 0
    p = _am(home, "experiences", "--db", str(home / "agentmme.db"))
    assert p.returncode == 1
    err = p.stderr.decode()
    assert f"no library at {home / 'agentmme.db'}" in err
    assert str(home / ".local/share/agentmem/agentmem.db") in err  # the one that exists
    assert not (home / "agentmme.db").exists()


def test_output_to_a_closed_pipe_ends_quietly(home: Path) -> None:
    assert _am(home, "setup").returncode == 0
    p = subprocess.run(
        f"{sys.executable} -m agentmem journal | head -1",
        shell=True,
        env=_env(home),
        cwd=home,
        capture_output=True,
        timeout=120,
    )
    assert p.returncode == 0
    assert b"Broken pipe" not in p.stderr and b"Traceback" not in p.stderr, p.stderr


def test_import_detects_the_format(home: Path, tmp_path: Path) -> None:
    folder = home / ".claude" / "projects" / "-w-app"
    db = str(tmp_path / "detect.db")
    p = _am(home, "import", str(folder), "--db", db)
    assert p.returncode == 0, p.stderr.decode()
    assert "reading claude-code (detected" in p.stderr.decode()
    assert "imported 2 trajectories from 2 claude-code file(s)" in p.stdout.decode()
    one = next(folder.glob("*.jsonl"))
    p = _am(home, "import", str(one), "--db", db)
    assert p.returncode == 0 and "reading claude-code" in p.stderr.decode()
    runs = tmp_path / "runs.jsonl"
    runs.write_text(
        json.dumps({"task": "t", "steps": [{"tool": "ls", "params": {}, "output": "ok"}]}) + "\n"
    )
    p = _am(home, "import", str(runs), "--db", db)
    assert p.returncode == 0, p.stderr.decode()
    assert "reading jsonl" in p.stderr.decode()


def _prompt(home: Path, text: str = "edit the settings module") -> subprocess.CompletedProcess:
    payload = {
        "hook_event_name": "UserPromptSubmit",
        "prompt": text,
        "session_id": "s-new",
        "cwd": "/w/app",
        "transcript_path": str(home / "t.jsonl"),
    }
    return _am(home, "hooks", "run", "claude-code", input=json.dumps(payload).encode())


def _stop(home: Path, session: ClaudeSession) -> None:
    path = session.write(home / ".claude" / "projects" / "-w-app" / f"{session.session_id}.jsonl")
    payload = {
        "hook_event_name": "Stop",
        "session_id": session.session_id,
        "cwd": "/w/app",
        "transcript_path": str(path),
    }
    assert (
        _am(home, "hooks", "run", "claude-code", input=json.dumps(payload).encode()).returncode == 0
    )


def _runs(home: Path) -> int:
    return json.loads(_am(home, "stats", "--json").stdout)["trajectories"]


def test_projects_pause_resume_exclude_forget(home: Path) -> None:
    assert _am(home, "setup").returncode == 0
    listed = json.loads(_am(home, "projects", "list", "--json").stdout)
    assert [(p["project"], p["runs"], p["state"]) for p in listed] == [("/w/app", 2, "active")]
    assert LESSON in _prompt(home).stdout.decode()

    assert _am(home, "projects", "pause", "/w/app").returncode == 0
    assert _prompt(home).stdout == b""  # nothing served in a paused project
    s = ClaudeSession(session_id="0a1b2c3d-0000-4000-8000-000000000200", cwd="/w/app")
    s.prompt("rename the module")
    s.tool("Bash", {"command": "git mv a.py b.py"}, "")
    s.say("Done.")
    _stop(home, s)
    assert _runs(home) == 2  # and nothing recorded

    assert _am(home, "projects", "resume", "/w/app").returncode == 0
    assert LESSON in _prompt(home).stdout.decode()

    assert _am(home, "projects", "exclude", "/w/app").returncode == 0
    other = ClaudeSession(session_id="0a1b2c3d-0000-4000-8000-000000000201", cwd="/w/app")
    other.prompt("list the files")
    other.tool("Bash", {"command": "ls"}, "a.py")
    other.say("Listed.")
    other.write(home / "elsewhere" / f"{other.session_id}.jsonl")
    imp = _am(home, "import", "--format", "claude-code", str(home / "elsewhere"))
    assert imp.returncode == 0, imp.stderr.decode()
    assert _runs(home) == 2  # an excluded project's history is never recorded
    assert _am(home, "projects", "resume", "/w/app").returncode == 0

    added = _am(home, "add", "In this repo run the tests with make check.", "--project", "/w/app")
    assert added.returncode == 0, added.stderr.decode()
    forget = _am(home, "projects", "forget", "/w/app", "--yes", "--json")
    assert forget.returncode == 0, forget.stderr.decode()
    done = json.loads(forget.stdout)
    assert done["runs"] == 2 and done["lessons"] >= 1
    assert _runs(home) == 0
    texts = [e["text"] for e in json.loads(_am(home, "experiences", "--json").stdout)]
    assert "In this repo run the tests with make check." not in texts
    check = _am(home, "check")
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()


def test_a_removed_lesson_stays_removed_until_new_runs_show_it(home: Path) -> None:
    assert _am(home, "setup").returncode == 0
    lessons = json.loads(_am(home, "experiences", "--json").stdout)
    (lesson,) = [e for e in lessons if e["text"] == LESSON]
    assert _am(home, "remove", str(lesson["id"])).returncode == 0
    again = _am(home, "learn", "--relearn", "--json")
    assert again.returncode == 0, again.stderr.decode()
    texts = [e["text"] for e in json.loads(_am(home, "experiences", "--json").stdout)]
    assert LESSON not in texts
    journal = json.loads(_am(home, "journal", "--json").stdout)
    assert any("removed by a person" in (j["reason"] or "") for j in journal)

    _history(home / "later", sessions=1, first=7)  # a new session makes the same mistake
    new = home / "later" / ".claude" / "projects" / "-w-app"
    imp = _am(home, "import", "--format", "claude-code", str(new))
    assert imp.returncode == 0, imp.stderr.decode()
    assert _am(home, "learn").returncode == 0
    texts = [e["text"] for e in json.loads(_am(home, "experiences", "--json").stdout)]
    assert LESSON in texts  # evidence the user had not seen
