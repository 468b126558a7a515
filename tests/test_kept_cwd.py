"""The working directory Claude Code's Bash keeps between calls (agentmem/learning/kept_cwd.py).

Synthetic runs, written here: each shape of the slip has a positive and its near misses
(the run never left its folder, the path is missing from the top too, the agent kept
using its own folder rightly). The shapes are abstract descriptions of validation-half
sessions; none of their text is copied.
"""

from __future__ import annotations

from typing import Any

from agentmem.agents import learning_view
from agentmem.importers.claude_code import parse_claude_code
from agentmem.importers.turns import turn_record
from agentmem.learning.corrections import find_corrections
from agentmem.learning.kinds import Kind
from agentmem.records import Step, Trajectory

from .test_tool_rules import KEPT_CWD
from .transcripts import ClaudeSession

HOME = {"cwd": "/w/app"}


def _sh(command: str, out: str, ok: bool = True) -> Step:
    return Step("Bash", {"command": command, "description": "x"}, out, ok)


def _kept(steps: tuple[Step, ...], **meta: Any) -> list[tuple[int, int]]:
    """(failed, fixed) of the run's kept-folder lessons."""
    run = Trajectory(task="t", steps=steps, meta={**HOME, **meta})
    found = find_corrections(run)
    out = []
    for c in found:
        if c.kind == Kind.TOOL_RULE and c.finding.detail.get("refused") == "cwd":
            assert c.finding.text == KEPT_CWD and c.finding.tool == "Bash"
            assert c.finding.facts == ("Bash", "cd")
            out.append((c.failed, c.fixed))
    return out


# -- (a) a client tool's relative path after the shell's cd ------------------------------

GREP_MISSING = (
    "<tool_use_error>Path does not exist: backend/src/app.ts. Note: your current working "
    "directory is /w/app/backend.</tool_use_error>"
)


def _grep(path: str, out: str, ok: bool = True) -> Step:
    return Step("Grep", {"pattern": "listen", "path": path}, out, ok)


def test_a_client_tool_path_from_the_top_after_a_cd() -> None:
    went = _sh("cd backend && npm test", "3 passed")
    bad = _grep("backend/src/app.ts", GREP_MISSING, False)
    good = _grep("/w/app/backend/src/app.ts", "12: app.listen(3000)")
    assert _kept((went, bad, good)) == [(1, 2)]
    # the client's note alone says where the shell stood (the cd was in an earlier turn)
    assert _kept((bad, good)) == [(0, 1)]
    # so does the transcript's folder of the call
    plain = _grep("backend/src/app.ts", "Path does not exist: backend/src/app.ts", False)
    assert _kept((plain, good), cwds={"0": "/w/app/backend"}) == [(0, 1)]


def test_a_client_tool_path_near_misses() -> None:
    plain = _grep("backend/src/app.ts", "Path does not exist: backend/src/app.ts", False)
    good = _grep("/w/app/backend/src/app.ts", "12: app.listen(3000)")
    # the shell never left the session's folder: the path was wrong, no kept folder
    assert _kept((plain, good)) == []
    # the shell went back to the top before the failure
    home = _sh("cd /w/app && ls", "backend")
    assert _kept((_sh("cd backend && ls", "src"), home, plain, good)) == []
    # the path does not exist from the top either: another path then worked
    other = _grep("/w/app/frontend/src/app.ts", "3: render()")
    assert _kept((_sh("cd backend && ls", "src"), plain, other)) == []
    # the agent kept using its own folder rightly: nothing failed
    went = _sh("cd backend && ls", "src")
    assert _kept((went, _grep("src/app.ts", "12: app.listen(3000)"))) == []
    # the transcript says the call stood in the session's folder itself
    assert _kept((plain, good), cwds={"0": "/elsewhere/backend"}) == []


# -- (b) cd into the folder the shell stands in, told by pwd ------------------------------

CD_MISSING = "Exit code 1\n(eval):cd:1: no such file or directory: backend"


def test_cd_again_told_by_pwd() -> None:
    again = _sh("cd backend && npm install zod", CD_MISSING, False)
    pwd = _sh("pwd", "/w/app/backend")
    alone = _sh("npm install zod", "added 1 package")
    assert _kept((again, pwd, alone)) == [(0, 2)]
    # an earlier call that moved in with an absolute path
    went = _sh("cd /w/app/backend && npm run build", "built")
    assert _kept((went, again, alone)) == [(1, 2)]
    # the transcript's folder of the failed call
    assert _kept((again, alone), cwds={"0": "/w/app/backend"}) == [(0, 1)]


def test_cd_again_whose_command_then_failed_on_its_own_where_the_record_says() -> None:
    """Blind set 13 (read after its first try, so not blind now): ``cd developer-portal &&
    pnpm tsc ...`` failed on the cd, the transcript recording the call in
    developer-portal; the same command alone then ran there and reported type errors.
    The record proves the slip; the tsc's own failure is no missing path. Without the
    record (a pwd or an earlier cd the only proof), the fix must still work."""
    again = _sh("cd backend && npx tsc --noEmit src/app.ts", CD_MISSING, False)
    typed = _sh("npx tsc --noEmit src/app.ts", "src/app.ts(3,1): error TS2304: x", False)
    assert _kept((again, typed), cwds={"0": "/w/app/backend"}) == [(0, 1)]
    assert _kept((again, _sh("pwd", "/w/app/backend"), typed)) == []
    gone = _sh("npx tsc --noEmit src/app.ts", "error TS6053: File 'src/app.ts' not found", False)
    assert _kept((again, gone), cwds={"0": "/w/app/backend"}) == []


def test_cd_again_near_misses() -> None:
    again = _sh("cd backend && npm install zod", CD_MISSING, False)
    alone = _sh("npm install zod", "added 1 package")
    # nothing says the shell stood in backend: the folder may be missing
    assert _kept((again, alone)) == []
    # pwd printed the top: backend is really missing there
    assert _kept((again, _sh("pwd", "/w/app"), alone)) == []
    # the transcript puts the call in another folder
    assert _kept((again, alone), cwds={"0": "/w/app/frontend"}) == []
    # the cd worked and a later command of the line failed on a path naming the folder
    cat = _sh("cd backend && cat backend/x", "cat: backend/x: No such file or directory", False)
    assert _kept((cat, _sh("cat backend/x", "x")), cwds={"0": "/w/app/backend"}) == []
    # pwd printed backend only after the agent moved there itself
    moved = _sh("cd /w/app/backend", "")
    assert _kept((again, moved, _sh("pwd", "/w/app/backend"), alone)) == []
    # the fix is another command: no proof the cd alone was the slip
    assert _kept((again, _sh("pwd", "/w/app/backend"), _sh("npm ci", "ok"))) == []


# -- (c) the transcript's folder, a Go package path from the top --------------------------

GO_MISSING = "Exit code 1\nlstat ./services/api/: no such file or directory"


def test_a_package_path_from_the_top_in_a_recorded_subfolder() -> None:
    bad = _sh("go build ./services/api/...", GO_MISSING, False)
    good = _sh("cd /w/app && go build ./services/api/...", "")
    assert _kept((bad, good), cwds={"0": "/w/app/services/api"}) == [(0, 1)]


def test_a_package_path_near_misses() -> None:
    bad = _sh("go build ./services/api/...", GO_MISSING, False)
    good = _sh("cd /w/app && go build ./services/api/...", "")
    # no record of another folder and no cd: the package is missing, or another slip
    assert _kept((bad, good)) == []
    # the record puts the call in the session's folder (a foreign folder is no subfolder)
    assert _kept((bad, good), cwds={"0": "/tmp/build"}) == []
    # the same command from the top failed too: the path does not exist anywhere
    worse = _sh("cd /w/app && go build ./services/api/...", GO_MISSING, False)
    assert _kept((bad, worse), cwds={"0": "/w/app/services/api"}) == []


# -- (d) a copy into a folder named from the top -----------------------------------------


def test_a_copy_into_a_folder_named_from_the_top() -> None:
    home = {"cwd": "/sessions/s"}
    said = "cp: cannot create regular file 'og-system/x.sh': No such file or directory"
    bad = _sh("cp /tmp/x.sh og-system/x.sh", "Exit code 1\n" + said, False)
    good = _sh("cp /tmp/x.sh /sessions/s/og-system/x.sh", "")
    run = Trajectory(task="t", steps=(bad, good), meta={**home, "cwds": {"0": "/sessions/s/web"}})
    (c,) = [c for c in find_corrections(run) if c.kind == Kind.TOOL_RULE]
    assert (c.failed, c.fixed) == (0, 1) and c.finding.text == KEPT_CWD
    assert "stood in web" in c.why
    # a Windows session: the folders compared with / separators and in one case
    win = {"cwd": "C:\\s\\app", "cwds": {"0": "c:\\s\\app\\web"}}
    fix = _sh("cp /tmp/x.sh C:/s/app/og-system/x.sh", "")
    assert _kept((bad, fix), **win) == [(0, 1)]
    # near misses: the call stood in the session's folder; the copy went elsewhere
    plain = Trajectory(task="t", steps=(bad, good), meta=home)
    assert [c for c in find_corrections(plain) if c.kind == Kind.TOOL_RULE] == []
    other = _sh("cp /tmp/x.sh /sessions/s/web/og-system/x.sh", "")
    meta = {**home, "cwds": {"0": "/sessions/s/web"}}
    elsewhere = Trajectory(task="t", steps=(bad, other), meta=meta)
    assert [c for c in find_corrections(elsewhere) if c.kind == Kind.TOOL_RULE] == []


# -- the record: the importer keeps a call's folder where it is not the turn's -------------


def test_the_importer_keeps_a_call_folder_that_is_not_the_turn_folder() -> None:
    s = ClaudeSession(cwd="/w/app")
    s.prompt("build the api")
    s.tool("Bash", {"command": "cd services/api && go vet ./..."}, "")
    s.cwd = "/w/app/services/api"  # Claude Code writes the shell's folder on every line
    s.tool("Bash", {"command": "go build ./services/api/..."}, GO_MISSING, is_error=True)
    s.tool("Bash", {"command": "cd /w/app && go build ./services/api/..."}, "")
    s.say("Built.")
    (turn,) = parse_claude_code(s.data(), final=True, quiet=True).turns
    t = turn_record("claude-code", turn, project=None).trajectory
    assert t is not None and t.meta["cwd"] == "/w/app"
    assert t.meta["cwds"] == {"1": "/w/app/services/api", "2": "/w/app/services/api"}
    assert _kept(t.steps, cwds=t.meta["cwds"]) == [(1, 2)]
    # a turn whose calls all stood in its folder records none
    s2 = ClaudeSession(cwd="E:\\w\\app")
    s2.prompt("list")
    s2.cwd = "e:\\w\\app"  # one folder, written in two cases
    s2.tool("Bash", {"command": "ls"}, "a")
    s2.say("Done.")
    (turn,) = parse_claude_code(s2.data(), final=True, quiet=True).turns
    t2 = turn_record("claude-code", turn, project=None).trajectory
    assert t2 is not None and "cwds" not in t2.meta


def test_the_learning_view_moves_the_folders_with_the_calls() -> None:
    """A call the view leaves out (cancelled: it never ran) shifts the later calls."""
    cancelled = "<tool_use_error>Cancelled: parallel tool call Bash(ls) errored</tool_use_error>"
    t = Trajectory(
        task="t",
        steps=(Step("Bash", {"command": "ls"}, cancelled, False), _sh("pwd", "/w/app/b")),
        meta={**HOME, "cwds": {"1": "/w/app/b"}},
    )
    v = learning_view(t)
    assert len(v.steps) == 1 and v.meta["cwds"] == {"0": "/w/app/b"}
    assert learning_view(v) is v


# -- one lesson: Stage 3 merges the shapes ------------------------------------------------


def test_the_slips_of_several_runs_are_one_lesson(tmp_path) -> None:
    from agentmem import Memory

    from .conftest import FakeEmbedder, FakeModel

    runs = [
        (_grep("backend/src/app.ts", GREP_MISSING, False), _grep("/w/app/backend/src/app.ts", "1")),
        (
            _sh("cd backend && npm install zod", CD_MISSING, False),
            _sh("pwd", "/w/app/backend"),
            _sh("npm install zod", "added 1 package"),
        ),
    ]
    with Memory.open(tmp_path / "cwd.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        for n, steps in enumerate(runs):
            tid = mem.record(f"work on the backend, part {n}", list(steps), meta=dict(HOME))
            mem.feedback(tid, "accept")
        mem.learn(use_model=False)
        assert [e.text for e in mem.experiences()] == [KEPT_CWD]
    # a library that never ran Grep or Glob learns it too (the client's tools, no values)
    with Memory.open(tmp_path / "bash.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        tid = mem.record("install a package", list(runs[1]), meta=dict(HOME))
        mem.feedback(tid, "accept")
        mem.learn(use_model=False)
        assert [e.text for e in mem.experiences()] == [KEPT_CWD]


def test_the_folders_of_the_calls_are_redacted_as_paths() -> None:
    """A secret in a call's folder goes, as in the turn's folder (a name after a ``-``)."""
    from agentmem.redact import DEFAULT_REDACTOR
    from agentmem.redact.runs import redact_meta

    tok = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    meta = {"cwd": "/w/app", "cwds": {"0": f"/w/{tok}/app", "2": f"/w/x-{tok}/b"}}
    out = redact_meta(DEFAULT_REDACTOR, meta)
    assert tok not in repr(out) and set(out["cwds"]) == {"0", "2"}
    clean = {"cwd": "/w/app", "cwds": {"1": "/w/app/b"}}
    assert redact_meta(DEFAULT_REDACTOR, clean, keep=True) is clean


def test_a_cd_of_an_earlier_turn_is_read_from_the_session_folder() -> None:
    """The shell kept turn 1's cd into turn 2, whose prompt line carries the subfolder:
    the importer says where the session started (``session_cwd``), the project's top."""
    s = ClaudeSession(cwd="/w/app")
    s.prompt("vet the api")
    s.tool("Bash", {"command": "cd services/api && go vet ./..."}, "")
    s.cwd = "/w/app/services/api"
    s.say("Vetted.")
    s.prompt("now build it")
    s.tool("Bash", {"command": "go build ./services/api/..."}, GO_MISSING, is_error=True)
    s.tool("Bash", {"command": "cd /w/app && go build ./services/api/..."}, "")
    s.say("Built.")
    first, second = parse_claude_code(s.data(), final=True, quiet=True).turns
    t1 = turn_record("claude-code", first, project=None).trajectory
    t2 = turn_record("claude-code", second, project=None).trajectory
    assert t1 is not None and "session_cwd" not in t1.meta
    assert t2 is not None and t2.meta["session_cwd"] == "/w/app"
    assert t2.meta["cwd"] == "/w/app/services/api" and "cwds" not in t2.meta
    run = Trajectory(task="t", steps=t2.steps, meta=t2.meta)
    (c,) = [c for c in find_corrections(run) if c.kind == Kind.TOOL_RULE]
    assert (c.failed, c.fixed) == (0, 1) and c.finding.text == KEPT_CWD
    # near miss: the same command from the top failed too (no such package anywhere)
    worse = _sh("cd /w/app && go build ./services/api/...", GO_MISSING, False)
    run = Trajectory(task="t", steps=(t2.steps[0], worse), meta=t2.meta)
    assert [c for c in find_corrections(run) if c.kind == Kind.TOOL_RULE] == []


def test_a_turn_in_a_kept_subfolder_is_filed_under_the_sessions_project(tmp_path) -> None:
    """Both turns of a session whose shell kept a ``cd`` into a subfolder are the
    session's project (:func:`agentmem.projects.session_project`), so that the next
    session, started in the same folder, is served what they taught."""
    from agentmem import Memory

    s = ClaudeSession(cwd="/w/gone/app")
    s.prompt("vet the api")
    s.tool("Bash", {"command": "cd services/api && go vet ./..."}, "")
    s.cwd = "/w/gone/app/services/api"
    s.say("Vetted.")
    s.prompt("now build it")
    s.tool("Bash", {"command": "go build ./..."}, "")
    s.say("Built.")
    f = tmp_path / "s.jsonl"
    f.write_bytes(s.data())
    with Memory.open(tmp_path / "m.db") as mem:
        mem.import_transcripts("claude-code", [f])
        got = {t.meta["project"] for t in mem.trajectories()}
    assert got == {"/w/gone/app"}
