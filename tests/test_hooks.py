"""Agent hooks: installing them (idempotent, reversible byte for byte) and running them as the
agents do (real subprocesses fed the documented JSON)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentmem import Memory
from agentmem.cli import cli
from agentmem.hooks.install import BACKUP_SUFFIX

from .transcripts import claude_fixture, codex_fixture

ROOT = Path(__file__).resolve().parent.parent

ORIGINAL = (
    b'{\n\t"permissions": {"allow": ["Bash(ls:*)"]},\n'
    b'\t"hooks": {\n'
    b'\t\t"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}],\n'
    b'\t\t"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]\n'
    b"\t},\n"
    b'\t"model": "opus",   "note": "caf\xc3\xa9"\n}'
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of the test's own: the agents' folders and the hooks' log live here."""
    h = tmp_path / "home"
    h.mkdir()
    for name, value in {
        "HOME": str(h),
        "CLAUDE_CONFIG_DIR": str(h / ".claude"),
        "CODEX_HOME": str(h / ".codex"),
        "XDG_STATE_HOME": str(h / "state"),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AGENTMEM_DB", raising=False)
    return h


def _invoke(*args: str):
    r = CliRunner().invoke(cli, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    return r


def _commands(settings: dict) -> dict[str, list[str]]:
    return {
        event: [h["command"] for g in groups for h in g["hooks"]]
        for event, groups in settings.get("hooks", {}).items()
    }


# -- install and uninstall ------------------------------------------------------------------------


def test_claude_code_install_is_idempotent_and_uninstall_restores_the_bytes(
    home: Path, tmp_path: Path
):
    proj = tmp_path / "proj"
    settings = proj / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_bytes(ORIGINAL)
    r = _invoke("hooks", "install", "claude-code", "--scope", "project", "--dir", str(proj))
    assert r.exit_code == 0, r.output
    assert "added UserPromptSubmit hook" in r.output and "added Stop hook" in r.output
    backup = settings.with_name("settings.json" + BACKUP_SUFFIX)
    assert backup.read_bytes() == ORIGINAL
    doc = json.loads(settings.read_bytes())
    assert doc["permissions"] == {"allow": ["Bash(ls:*)"]} and doc["note"] == "café"
    cmds = _commands(doc)
    assert cmds["PreToolUse"] == ["x"]
    assert cmds["Stop"][0] == "say done" and cmds["Stop"][1].endswith("hooks run claude-code")
    assert cmds["UserPromptSubmit"][0].endswith("hooks run claude-code")
    installed = settings.read_bytes()
    r = _invoke("hooks", "install", "claude-code", "--scope", "project", "--dir", str(proj))
    assert "nothing changed" in r.output
    assert settings.read_bytes() == installed and backup.read_bytes() == ORIGINAL
    # a changed option replaces agentmem's entries, still one of each, same backup
    r = _invoke(
        "hooks", "install", "claude-code", "--scope", "project", "--dir", str(proj), "--learn"
    )
    assert "updated Stop hook" in r.output
    cmds = _commands(json.loads(settings.read_bytes()))
    assert [c for c in cmds["Stop"] if "agentmem" in c or "-m agentmem" in c][-1].endswith(
        "--learn"
    )
    assert len(cmds["UserPromptSubmit"]) == 1 and len(cmds["Stop"]) == 2
    r = _invoke("hooks", "uninstall", "claude-code", "--scope", "project", "--dir", str(proj))
    assert "byte for byte" in r.output
    assert settings.read_bytes() == ORIGINAL and not backup.exists()
    r = _invoke("hooks", "uninstall", "claude-code", "--scope", "project", "--dir", str(proj))
    assert "nothing changed" in r.output and settings.read_bytes() == ORIGINAL


def test_install_into_no_file_and_uninstall_removes_it(home: Path):
    settings = home / ".claude" / "settings.json"  # --scope user, via CLAUDE_CONFIG_DIR
    r = _invoke("hooks", "install", "claude-code", "--db", str(home / "lib.db"))
    assert r.exit_code == 0 and settings.exists()
    assert f"--db {home / 'lib.db'}" in _commands(json.loads(settings.read_text()))["Stop"][0]
    r = _invoke("hooks", "uninstall", "claude-code")
    assert (
        not settings.exists() and not settings.with_name("settings.json" + BACKUP_SUFFIX).exists()
    )


def test_uninstall_keeps_what_the_user_changed_since(home: Path):
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"model": "opus"}\n')
    _invoke("hooks", "install", "claude-code")
    doc = json.loads(settings.read_text())
    doc["theme"] = "dark"
    settings.write_text(json.dumps(doc, indent=2))
    r = _invoke("hooks", "uninstall", "claude-code")
    assert "kept those changes" in r.output
    assert json.loads(settings.read_text()) == {"model": "opus", "theme": "dark"}


def test_install_refuses_a_settings_file_it_cannot_read(home: Path):
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text("{not json")
    r = _invoke("hooks", "install", "claude-code")
    assert r.exit_code == 1 and "is not valid JSON" in r.output
    assert settings.read_text() == "{not json"
    settings.write_text('{"hooks": []}')
    r = _invoke("hooks", "install", "claude-code")
    assert r.exit_code == 1 and "not a JSON object" in r.output


def _fake_codex(home: Path, monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    """A ``codex`` on PATH that answers ``--version`` as Codex does."""
    bin_dir = home / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "codex"
    exe.write_text(f"#!/bin/sh\necho 'codex-cli {version}'\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


CODEX_CONFIG = b'model = "gpt-5-codex"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'


def test_codex_notify_install_and_uninstall(home: Path, monkeypatch: pytest.MonkeyPatch):
    _fake_codex(home, monkeypatch, "0.100.0")  # before hooks: notify
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    original = CODEX_CONFIG
    config.write_bytes(original)
    r = _invoke("hooks", "install", "codex")
    assert r.exit_code == 0 and "added notify" in r.output and "Codex 0.100.0: notify" in r.output
    assert not (home / ".codex" / "hooks.json").exists()
    text = config.read_text()
    assert text.endswith(original.decode()) and '"hooks", "run", "codex"]' in text
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    assert tomllib.loads(text)["notify"][-3:] == ["hooks", "run", "codex"]
    installed = config.read_bytes()
    assert "nothing changed" in _invoke("hooks", "install", "codex").output
    assert config.read_bytes() == installed
    r = _invoke("hooks", "uninstall", "codex")
    assert config.read_bytes() == original
    config.write_bytes(b'notify = ["notify-send"]\n' + original)
    r = _invoke("hooks", "install", "codex")
    assert r.exit_code == 1 and "already sets notify" in r.output
    assert config.read_bytes() == b'notify = ["notify-send"]\n' + original


def test_codex_hooks_install_keeps_config_and_hooks_json_byte_for_byte(
    home: Path, monkeypatch: pytest.MonkeyPatch
):
    _fake_codex(home, monkeypatch, "0.171.0")
    codex = home / ".codex"
    codex.mkdir()
    (codex / "config.toml").write_bytes(b'notify = ["notify-send"]\n' + CODEX_CONFIG)
    theirs = (
        b'{"hooks": {"PreToolUse": [{"matcher": "Bash",\n'
        b'  "hooks": [{"type": "command", "command": "audit"}]}]}}'
    )
    (codex / "hooks.json").write_bytes(theirs)
    r = _invoke("hooks", "install", "codex", "--db", str(home / "lib.db"))
    assert r.exit_code == 0 and "Codex 0.171.0: hooks" in r.output and "/hooks" in r.output
    assert (codex / "config.toml").read_bytes() == b'notify = ["notify-send"]\n' + CODEX_CONFIG
    doc = json.loads((codex / "hooks.json").read_text())
    commands = _commands(doc)
    assert commands["PreToolUse"] == ["audit"]
    [cmd] = commands["UserPromptSubmit"]
    assert commands["Stop"] == [cmd]
    assert cmd.startswith(f"{sys.executable} -m agentmem hooks run codex --db ")
    assert (
        "nothing changed"
        in _invoke("hooks", "install", "codex", "--db", str(home / "lib.db")).output
    )
    r = _invoke("hooks", "uninstall", "codex")
    assert r.exit_code == 0
    assert (codex / "hooks.json").read_bytes() == theirs
    assert (codex / "config.toml").read_bytes() == b'notify = ["notify-send"]\n' + CODEX_CONFIG


def test_codex_upgrade_from_notify_to_hooks_takes_the_notify_out(
    home: Path, monkeypatch: pytest.MonkeyPatch
):
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_bytes(CODEX_CONFIG)
    _fake_codex(home, monkeypatch, "0.100.0")
    _invoke("hooks", "install", "codex")
    _fake_codex(home, monkeypatch, "0.124.0")
    r = _invoke("hooks", "install", "codex")
    assert "removed agentmem's notify" in r.output
    assert config.read_bytes() == CODEX_CONFIG
    _invoke("hooks", "uninstall", "codex")
    assert not (home / ".codex" / "hooks.json").exists()
    assert config.read_bytes() == CODEX_CONFIG


def test_a_symlinked_user_settings_file_is_edited_where_it_points(home: Path, tmp_path: Path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "claude.json").write_bytes(ORIGINAL)
    link = home / ".claude" / "settings.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles / "claude.json")
    r = _invoke("hooks", "install", "claude-code")
    assert r.exit_code == 0 and "is a symbolic link" in r.output
    assert link.is_symlink() and "hooks run claude-code" in link.read_text()
    r = _invoke("hooks", "uninstall", "claude-code")
    assert link.is_symlink() and (dotfiles / "claude.json").read_bytes() == ORIGINAL


def test_a_symlinked_claude_folder_out_of_the_project_is_refused(home: Path, tmp_path: Path):
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "settings.json").write_bytes(ORIGINAL)
    (proj / ".claude").symlink_to(elsewhere)
    r = _invoke("hooks", "install", "claude-code", "--scope", "project", "--dir", str(proj))
    assert r.exit_code == 1 and "outside the project" in r.output
    assert (elsewhere / "settings.json").read_bytes() == ORIGINAL
    assert sorted(p.name for p in elsewhere.iterdir()) == ["settings.json"]
    dangling = home / ".claude" / "settings.json"
    dangling.parent.mkdir(parents=True)
    dangling.symlink_to(tmp_path / "missing.json")
    r = _invoke("hooks", "install", "claude-code")
    assert r.exit_code == 1 and "does not exist" in r.output
    assert not (tmp_path / "missing.json").exists()


# -- running the hooks as the agents do -----------------------------------------------------------


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, **{k: os.environ[k] for k in ("HOME",)}}
    env.update(
        HOME=str(home),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        CODEX_HOME=str(home / ".codex"),
        XDG_STATE_HOME=str(home / "state"),
        HF_HUB_OFFLINE="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
    )
    env.pop("AGENTMEM_DB", None)
    env.update(extra)
    return env


def _installed_command(home: Path, proj: Path, db: Path, *extra: str) -> str:
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentmem",
            "hooks",
            "install",
            "claude-code",
            "--scope",
            "project",
            "--dir",
            str(proj),
            "--db",
            str(db),
            *extra,
        ],
        capture_output=True,
        env=_env(home),
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads((proj / ".claude" / "settings.json").read_text())
    [cmd] = _commands(doc)["UserPromptSubmit"]
    assert _commands(doc)["Stop"] == [cmd]
    return cmd


def _hook(cmd: str, payload: dict | bytes, env: dict[str, str]) -> subprocess.CompletedProcess:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return subprocess.run(cmd, shell=True, input=data, capture_output=True, env=env, timeout=120)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """A library with a global lesson and one served only in project ``alpha``."""
    db = tmp_path / "lib.db"
    with Memory.open(db, embedder="hash") as mem:
        mem.add("Before git push, run git pull --rebase when the push is rejected.", domain="git")
        scoped = mem.add("Run the alpha tests with make check, not pytest directly.", domain="test")
        session = mem.db.execute("SELECT max(id) FROM sessions").fetchone()[0]
        with mem.db.conn:
            mem.db.execute(
                "INSERT INTO experience_scopes (experience_id, session_id, project, support, "
                "reason) VALUES (?, ?, ?, ?, 'test')",
                [
                    scoped.id,
                    session,
                    str(tmp_path / "alpha"),
                    json.dumps([str(tmp_path / "alpha")]),
                ],
            )
    for name in ("alpha", "beta"):
        (tmp_path / name / ".git").mkdir(parents=True)
        (tmp_path / name / "src").mkdir()
    return db


def test_user_prompt_submit_answers_with_the_context_of_the_project(
    home: Path, tmp_path: Path, library: Path
):
    cmd = _installed_command(home, tmp_path / "alpha", library)
    env = _env(home)
    base = {
        "session_id": "0a1b2c3d-0000-4000-8000-000000000001",
        "transcript_path": str(tmp_path / "none.jsonl"),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "run the tests and push",
    }
    p = _hook(cmd, {**base, "cwd": str(tmp_path / "alpha" / "src")}, env)
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    out = json.loads(p.stdout)
    ctx = out["hookSpecificOutput"]["additionalContext"]
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert ctx.startswith("Lessons from earlier runs")
    assert "git pull --rebase" in ctx and "make check" in ctx
    p = _hook(cmd, {**base, "cwd": str(tmp_path / "beta")}, env)
    ctx = json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "git pull --rebase" in ctx and "make check" not in ctx  # alpha's own lesson
    p = _hook(cmd, {**base, "prompt": "   "}, env)
    assert p.returncode == 0 and p.stdout == b""


def test_stop_imports_the_new_turns_and_prints_nothing(home: Path, tmp_path: Path, library: Path):
    cmd = _installed_command(home, tmp_path / "alpha", library)
    s = claude_fixture(str(tmp_path / "alpha" / "src"))
    transcript = s.write(home / ".claude" / "projects" / "-alpha" / f"{s.session_id}.jsonl")
    payload = {
        "session_id": s.session_id,
        "transcript_path": str(transcript),
        "cwd": str(tmp_path / "alpha"),
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": "You're welcome.",
    }
    p = _hook(cmd, payload, _env(home))
    assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", p.stderr
    with Memory.open(library, embedder="hash") as mem:
        trajs = mem.trajectories()
        assert [t.task for t in trajs] == [
            "fix the failing test in the parser",
            "push the branch",
            "delete the build folder",
        ]
        assert {t.meta["project"] for t in trajs} == {str(tmp_path / "alpha")}
    p = _hook(cmd, payload, _env(home))
    assert p.returncode == 0 and p.stdout == b""
    with Memory.open(library, embedder="hash") as mem:
        assert len(mem.trajectories()) == 3
    log = (home / "state" / "agentmem" / "hooks.log").read_text()
    assert "imported 3 trajectories" in log


@pytest.mark.parametrize(
    "payload,message",
    [
        (b"not json", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        ({"hook_event_name": "Stop"}, "no transcript_path"),
        ({"hook_event_name": "Stop", "transcript_path": "/no/such.jsonl"}, "does not exist"),
    ],
)
def test_a_failing_hook_exits_0_with_one_line_and_a_log(
    home: Path, tmp_path: Path, library: Path, payload, message
):
    cmd = _installed_command(home, tmp_path / "alpha", library)
    p = _hook(cmd, payload, _env(home))
    assert p.returncode == 0 and p.stdout == b""
    lines = p.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentmem hook: ") and message in lines[0]
    log = (home / "state" / "agentmem" / "hooks.log").read_text()
    assert "Traceback" in log and message in log


def test_a_library_that_cannot_be_opened_never_breaks_the_agent(home: Path, tmp_path: Path):
    bad = tmp_path / "notdb.db"
    bad.write_text("this is not a database, but a text file of some length " * 20)
    s = claude_fixture(str(tmp_path))
    transcript = s.write(tmp_path / "s.jsonl")
    argv = [sys.executable, "-m", "agentmem", "hooks", "run", "claude-code", "--db", str(bad)]
    for event in ("UserPromptSubmit", "Stop"):
        payload = {"hook_event_name": event, "prompt": "hi", "transcript_path": str(transcript)}
        p = subprocess.run(
            argv, input=json.dumps(payload).encode(), capture_output=True, env=_env(home)
        )
        assert p.returncode == 0 and p.stdout == b""
        assert len(p.stderr.decode().splitlines()) == 1


def test_stop_with_learn_starts_a_detached_learner(home: Path, tmp_path: Path, library: Path):
    cmd = _installed_command(home, tmp_path / "alpha", library, "--learn", "--no-model")
    assert cmd.endswith("--learn --no-model")
    s = claude_fixture(str(tmp_path / "alpha"))
    transcript = s.write(tmp_path / "s.jsonl")
    payload = {"hook_event_name": "Stop", "transcript_path": str(transcript), "session_id": "x"}
    p = _hook(cmd, payload, _env(home, AGENTMEM_LEARN_DELAY="0"))
    assert p.returncode == 0 and p.stdout == b"", p.stderr
    deadline = time.time() + 120
    log = home / "state" / "agentmem" / "hooks.log"
    while time.time() < deadline:
        if "learner: session" in log.read_text():
            break
        time.sleep(0.5)
    text = log.read_text()
    assert "started learner" in text and "learner: session" in text, text
    with Memory.open(library, embedder="hash") as mem:
        kinds = [s["kind"] for s in mem.sessions()]
    assert "learn" in kinds
    assert not (home / "state" / "agentmem" / "learner.pid").exists()


def test_codex_notify_imports_the_thread_rollout(home: Path, tmp_path: Path, library: Path):
    r = codex_fixture(str(tmp_path / "beta"))
    day = time.strftime("%Y/%m/%d")
    r.write(
        home / ".codex" / "sessions" / day / f"rollout-2026-01-05T10-00-00-{r.session_id}.jsonl"
    )
    note = {
        "type": "agent-turn-complete",
        "thread-id": r.session_id,
        "turn-id": "t3",
        "cwd": str(tmp_path / "beta"),
        "input-messages": ["show the git log"],
        "last-assistant-message": "Done.",
    }
    argv = [sys.executable, "-m", "agentmem", "hooks", "run", "codex", "--db", str(library)]
    p = subprocess.run([*argv, json.dumps(note)], capture_output=True, env=_env(home), timeout=120)
    assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", p.stderr
    with Memory.open(library, embedder="hash") as mem:
        assert [t.source for t in mem.trajectories()] == ["codex"] * 3
    p = subprocess.run(
        [*argv, json.dumps({**note, "thread-id": "0000-unknown"})],
        capture_output=True,
        env=_env(home),
        timeout=120,
    )
    assert p.returncode == 0 and b"no rollout of thread" in p.stderr


def test_codex_hooks_answer_the_prompt_and_import_the_rollout_at_stop(
    home: Path, tmp_path: Path, library: Path
):
    """Codex 0.124+ passes Claude Code's kind of input on stdin (as 0.171 does: see
    tests/data/real-clients/hooks/codex-*.json) and reads the same answer."""
    r = codex_fixture(str(tmp_path / "alpha"))
    rollout = tmp_path / "rollout.jsonl"
    r.write(rollout)
    argv = [sys.executable, "-m", "agentmem", "hooks", "run", "codex", "--db", str(library)]
    base = {
        "session_id": r.session_id,
        "turn_id": "t1",
        "transcript_path": str(rollout),
        "cwd": str(tmp_path / "alpha" / "src"),
        "model": "gpt-5-codex",
        "permission_mode": "bypassPermissions",
    }
    prompt = {**base, "hook_event_name": "UserPromptSubmit", "prompt": "run the tests and push"}
    p = subprocess.run(argv, input=json.dumps(prompt).encode(), capture_output=True, env=_env(home))
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    ctx = json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "make check" in ctx and "git pull --rebase" in ctx
    stop = {
        **base,
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": "Done.",
    }
    p = subprocess.run(argv, input=json.dumps(stop).encode(), capture_output=True, env=_env(home))
    assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", p.stderr
    with Memory.open(library, embedder="hash") as mem:
        assert [t.source for t in mem.trajectories()] == ["codex"] * 3


def test_agentmem_serve_off_serves_and_logs_nothing_but_still_records(
    home: Path, tmp_path: Path, library: Path
):
    """AGENTMEM_SERVE=off (practice eval's clean 'without' arm): Claude Code's and Codex's
    prompt hooks and `agentmem context` serve nothing and log nothing; Stop still records."""
    cmd = _installed_command(home, tmp_path / "alpha", library)
    base = {
        "session_id": "0a1b2c3d-0000-4000-8000-000000000009",
        "transcript_path": str(tmp_path / "none.jsonl"),
        "cwd": str(tmp_path / "alpha" / "src"),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "run the tests and push",
    }

    log = Path(f"{library}.served.jsonl")  # agentmem.served: one line a serving

    def served() -> int:
        return len(log.read_text().splitlines()) if log.exists() else 0

    on = _hook(cmd, base, _env(home))
    assert "git pull --rebase" in json.loads(on.stdout)["hookSpecificOutput"]["additionalContext"]
    logged = served()
    assert logged >= 1  # the switch's absence serves and logs
    off = _env(home, AGENTMEM_SERVE="off")
    p = _hook(cmd, base, off)
    assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", p.stderr
    codex = [sys.executable, "-m", "agentmem", "hooks", "run", "codex", "--db", str(library)]
    p = subprocess.run(codex, input=json.dumps(base).encode(), capture_output=True, env=off)
    assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", p.stderr
    ctx = [sys.executable, "-m", "agentmem", "context", "--db", str(library)]
    p = subprocess.run([*ctx, "--", "run the tests and push"], capture_output=True, env=off)
    assert p.returncode == 0 and p.stdout == b"", p.stderr
    p = subprocess.run(  # the full CLI (an option the lean entry leaves to click)
        [*ctx, "--global", "run the tests and push"], capture_output=True, env=off
    )
    assert p.returncode == 0 and p.stdout == b"", p.stderr
    p = subprocess.run(
        [*ctx, "--global", "run the tests and push"], capture_output=True, env=_env(home)
    )
    assert b"git pull --rebase" in p.stdout  # the same command without the switch serves
    assert served() == logged + 1  # only that last one was logged
    # the recording hook still records under the switch
    s = claude_fixture(str(tmp_path / "alpha" / "src"))
    transcript = s.write(home / ".claude" / "projects" / "-alpha" / f"{s.session_id}.jsonl")
    stop = {**base, "session_id": s.session_id, "transcript_path": str(transcript)}
    p = _hook(cmd, {**stop, "hook_event_name": "Stop", "stop_hook_active": False}, off)
    assert p.returncode == 0 and p.stdout == b"", p.stderr
    with Memory.open(library, embedder="hash") as mem:
        assert len(mem.trajectories()) >= 2
