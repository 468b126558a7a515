"""Hostile input (issue 30, part 5): special files, JSON nested or sized to break a reader, MCP
ids of every JSON type. Each attack fails with a clear message or is skipped and counted, and
the readers, the hooks and the server keep working. (``browse``'s token: ``test_browse.py``.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentmem import Memory, served
from agentmem.cli import cli
from agentmem.errors import AgentMemError, TeamError
from agentmem.files import SpecialFileError, is_regular, open_regular, read_regular
from agentmem.jsonsafe import MAX_DEPTH, JSONInputError, depth_over, loads, loads_toml

from .test_hooks import _env, _fake_codex, _hook, _installed_command
from .test_security import _Client, _planted
from .transcripts import ClaudeSession

ROOT = Path(__file__).resolve().parent.parent
SID = "0a1b2c3d-0000-4000-8000-0000000000{:02d}"


def _session(tmp: Path, n: int, task: str) -> ClaudeSession:
    s = ClaudeSession(session_id=SID.format(n), cwd=str(tmp))
    s.prompt(task)
    s.tool("Bash", {"command": "ls"}, "a.txt")
    s.say("done")
    return s


def _agentmem(*args: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    env.update(kw.pop("env", {}))
    return subprocess.run(
        [sys.executable, "-m", "agentmem", *args],
        capture_output=True,
        text=True,
        timeout=timeout,  # a reader that waits on a FIFO fails the test here, not forever
        env=env,
        **kw,
    )


# -- special files ------------------------------------------------------------------------


def test_open_regular_refuses_a_fifo_a_device_and_a_folder_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "x.jsonl"
    os.mkfifo(fifo)
    t = time.monotonic()
    for path, kind in (
        (fifo, "FIFO"),
        (Path("/dev/null"), "character device"),
        (tmp_path, "folder"),
    ):
        with pytest.raises(SpecialFileError, match=kind):
            read_regular(path)
        assert not is_regular(path)
    assert time.monotonic() - t < 5
    plain = tmp_path / "a.txt"
    plain.write_text("ok")
    assert read_regular(plain) == b"ok" and is_regular(plain)
    with open_regular(plain, "r", encoding="utf-8") as fh:
        assert fh.read() == "ok"
    assert isinstance(SpecialFileError("x"), OSError) and isinstance(
        SpecialFileError("x"), AgentMemError
    )
    with pytest.raises(ValueError):
        open_regular(plain, "w")


def test_import_skips_and_counts_a_fifo_named_like_a_transcript(tmp_path: Path) -> None:
    """The review's hang: ``agentmem import`` on a folder holding a FIFO named ``*.jsonl``
    (a session file, and a sub-agent file beside a real session). Run as the CLI, for real."""
    folder = tmp_path / "projects" / "p"
    _session(tmp_path, 1, "list the files").write(folder / f"{SID.format(1)}.jsonl")
    os.mkfifo(folder / "evil.jsonl")
    subs = folder / SID.format(1) / "subagents"
    subs.mkdir(parents=True)
    os.mkfifo(subs / "agent-1234.jsonl")
    db = tmp_path / "lib.db"
    r = _agentmem("import", "--format", "claude-code", str(tmp_path / "projects"), "--db", str(db))
    assert r.returncode == 0, r.stderr
    assert "skipped 2 special file(s)" in r.stdout + r.stderr
    with Memory.open(db, embedder="hash") as mem:
        assert [t.task for t in mem.trajectories()] == ["list the files"]
        report = mem.import_transcripts("claude-code", [tmp_path / "projects"], force=True)
    assert sorted(Path(p).name for p in report.special_files) == ["agent-1234.jsonl", "evil.jsonl"]
    assert report.as_dict()["special_files"] == report.special_files


def test_a_fifo_named_on_the_command_line_is_refused_clearly(tmp_path: Path) -> None:
    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)
    db = str(tmp_path / "lib.db")
    r = _agentmem("import", "--format", "claude-code", str(fifo), "--db", db)
    assert r.returncode != 0 and "neither a file nor a folder" in r.stderr
    r = _agentmem("record", str(fifo), "--db", db)
    assert r.returncode != 0 and "FIFO" in r.stderr and "Traceback" not in r.stderr
    r = _agentmem("check", "--db", str(fifo))
    assert r.returncode == 1 and "FIFO" in r.stdout + r.stderr


def test_hooks_install_refuses_a_settings_fifo(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    os.mkfifo(home / ".claude" / "settings.json")
    r = _agentmem("hooks", "install", "claude-code", env=_env(home))
    assert r.returncode == 1 and "FIFO" in r.stderr and "Traceback" not in r.stderr


def test_the_served_log_and_the_hooks_log_never_wait_on_a_fifo(tmp_path: Path) -> None:
    db = tmp_path / "lib.db"
    os.mkfifo(served.log_path(db))
    t = time.monotonic()
    before = served.FAILURES[0]
    assert served.record(db, route="api", phash="p", served=[1]) is False
    assert served.FAILURES[0] == before + 1
    assert served.read(str(served.log_path(db)), 0) == ([], 0, 0)
    assert time.monotonic() - t < 5
    # the hooks' own log: the hook still answers, and exits 0
    home = tmp_path / "home"
    (home / "state" / "agentmem").mkdir(parents=True)
    os.mkfifo(home / "state" / "agentmem" / "hooks.log")
    proj = tmp_path / "alpha"
    proj.mkdir()
    Memory.open(db, embedder="hash").close()
    cmd = _installed_command(home, proj, db)
    p = _hook(cmd, b"not json", _env(home))
    assert p.returncode == 0 and b"not JSON" in p.stderr


def test_a_project_whose_git_files_are_fifos_is_read_at_once(tmp_path: Path) -> None:
    from agentmem.projects import project_of

    root = tmp_path / "wt"
    gitdir = tmp_path / "repo" / ".git" / "worktrees" / "wt"
    gitdir.mkdir(parents=True)
    root.mkdir()
    (root / ".git").write_text(f"gitdir: {gitdir}\n")
    os.mkfifo(gitdir / "commondir")
    t = time.monotonic()
    assert project_of(str(root))
    assert time.monotonic() - t < 5


def test_a_team_token_file_that_is_a_fifo_is_a_clear_error(tmp_path: Path) -> None:
    from agentmem.team.config import read_token_file

    fifo = tmp_path / "team.token"
    os.mkfifo(fifo)
    with pytest.raises(TeamError, match="FIFO"):
        read_token_file(fifo)


# -- JSON with bounds ---------------------------------------------------------------------


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_jsonsafe_bounds_depth_and_size_with_one_clear_error() -> None:
    assert loads(_nested(MAX_DEPTH)) == loads(_nested(MAX_DEPTH))  # at the bound: read
    for text in (_nested(MAX_DEPTH + 1), _nested(100_000), '{"a":' * 5000 + "1" + "}" * 5000):
        with pytest.raises(JSONInputError, match="nests too deeply") as e:
            loads(text, what="settings.json")
        assert e.value.reason == "depth" and str(e.value).startswith("settings.json")
    with pytest.raises(JSONInputError, match="over the limit of 10") as e:
        loads(b'{"a": "0123456789"}', max_bytes=10)
    assert e.value.reason == "size"
    with pytest.raises(JSONInputError, match="not valid JSON"):
        loads("{x")
    with pytest.raises(JSONInputError, match="NaN"):
        loads("[NaN]", strict_constants=True)
    assert loads("[NaN]") != 0  # the default reads it, as json does
    assert isinstance(JSONInputError("x"), ValueError) and isinstance(
        JSONInputError("x"), AgentMemError
    )
    # brackets inside strings cost nothing and count for nothing
    assert loads(json.dumps({"code": "[" * 5000})) == {"code": "[" * 5000}
    assert not depth_over({"a": [{"b": [1]}]}, 4) and depth_over({"a": [{"b": [1]}]}, 3)
    with pytest.raises(JSONInputError, match="nests too deeply"):
        loads_toml("a = " + _nested(100_000))


def test_hooks_install_on_a_settings_file_nested_100000_deep(tmp_path: Path) -> None:
    """The review's case: no RecursionError, one clear line, and the file is untouched."""
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    for body in ('{"a": ' + _nested(100_000) + "}", '{"a": ' + _nested(MAX_DEPTH + 5) + "}"):
        settings.write_text(body)
        r = _agentmem("hooks", "install", "claude-code", env=_env(home))
        assert r.returncode == 1 and "nests too deeply" in r.stderr, r.stderr
        assert "RecursionError" not in r.stderr and "Traceback" not in r.stderr
        assert settings.read_text() == body


def test_hooks_install_codex_on_a_config_toml_nested_deep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for name, value in {
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "XDG_STATE_HOME": str(home / "state"),
    }.items():
        monkeypatch.setenv(name, value)
    _fake_codex(home, monkeypatch, "0.100.0")
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('model = "x"\nnotify = ' + _nested(50_000) + "\n")
    r = CliRunner().invoke(cli, ["hooks", "install", "codex"])
    assert r.exit_code == 1 and "nests too deeply" in r.output, r.output
    assert not isinstance(r.exception, RecursionError)


def test_a_hook_payload_nested_deep_exits_0_with_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    proj = tmp_path / "alpha"
    proj.mkdir()
    db = tmp_path / "lib.db"
    Memory.open(db, embedder="hash").close()
    cmd = _installed_command(home, proj, db)
    payload = (
        '{"hook_event_name": "UserPromptSubmit", "prompt": ' + _nested(100_000) + "}"
    ).encode()
    p = _hook(cmd, payload, _env(home))
    assert p.returncode == 0 and p.stdout == b""
    assert b"nests too deeply" in p.stderr and len(p.stderr.splitlines()) == 1


def test_a_served_log_line_nested_deep_is_skipped(tmp_path: Path) -> None:
    db = tmp_path / "lib.db"
    log = Path(served.log_path(db))
    assert served.record(db, route="api", phash="p", served=[3])
    good = log.read_bytes()
    log.write_bytes(b'{"v": 1, "x": ' + _nested(100_000).encode() + b"}\n" + good)
    lines, _, skipped = served.read(str(log), 0)
    assert skipped == 1 and [x["served"] for x in lines] == [[3]]


def test_a_token_registry_nested_deep_is_a_clear_error(tmp_path: Path) -> None:
    from agentmem.team import tokens

    tokens.registry_path(tmp_path).write_text('{"tokens": ' + _nested(100_000) + "}")
    with pytest.raises(TeamError, match="nests too deeply"):
        tokens._load(tmp_path)


# -- MCP: ids of every JSON type ------------------------------------------------------------


def test_screen_line_answers_every_id_type() -> None:
    pytest.importorskip("mcp_types", reason="agentmem[mcp] not installed")
    from agentmem.mcp_server import Refusal, screen_line

    def line(ident: str) -> bytes:
        return ('{"jsonrpc":"2.0","id":' + ident + ',"method":"tools/list"}').encode()

    for ident, kind in (('{"a":1}', "an object"), ("[1]", "a list"), ("true", "a boolean")):
        got = screen_line(line(ident))
        assert isinstance(got, Refusal) and got.id is None and got.code == -32600, got
        assert kind in got.why and not got.notification
    got = screen_line(line("1.5"))
    assert isinstance(got, Refusal) and got.id == 1.5 and got.code == -32600
    got = screen_line(line("null"))
    assert isinstance(got, Refusal) and got.id is None and "null" in got.why
    for ok in ("7", '"abc"', "-3"):
        assert screen_line(line(ok)) == line(ok).decode()
    # a notification (no id) is still never answered
    note = screen_line(b'{"jsonrpc":"2.0","method":"notifications/x","params":[[[[]]]]}')
    assert isinstance(note, str) or note.notification


def test_mcp_answers_a_request_whatever_its_id_and_keeps_serving(tmp_path: Path) -> None:
    """The review's case, against the real server: each of these went unanswered."""
    pytest.importorskip("mcp_types", reason="agentmem[mcp] not installed")
    c = _Client(_planted(tmp_path))
    try:
        cases = [('{"a":1}', None), ("[1,2]", None), ("1.5", 1.5), ("true", None), ("null", None)]
        for n, (ident, expect) in enumerate(cases):
            c.send('{"jsonrpc":"2.0","id":' + ident + ',"method":"tools/list"}')
            got = c.answer(timeout=30)
            assert got["id"] == expect and got["error"]["code"] == -32600, got
            assert "agentmem refused the request" in got["error"]["message"]
            c.send(c.call(300 + n, {"task": "cat a.txt", "tools": ["cat"]}))
            ok = c.answer()
            assert ok["id"] == 300 + n and "result" in ok
    finally:
        err = c.close().decode()
    assert err.count("agentmem mcp: refused request") == len(cases)


def test_a_team_server_answering_json_nested_deep_is_a_team_error() -> None:
    """A compromised or broken primary cannot crash a member with its answer."""
    import http.server
    import threading

    from agentmem.team import hrana

    class Deep(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            body = _nested(100_000).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Deep)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with pytest.raises(TeamError, match="nests too deeply"):
            hrana.pipeline(url, [("SELECT 1", [])])
    finally:
        server.shutdown()
