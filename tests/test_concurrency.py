"""Concurrency: many processes on one library file while a learning session runs.

* Writers (``Memory.record_many``, ``agentmem record`` processes, feedback and
  state verdicts) and readers (``Memory.experiences()``, the vector index,
  ``Memory.retrieve``) loop in their own processes while ``agentmem learn`` runs
  in another: zero lost writes (every id a process reports is in the file with
  its task and step count; the totals add up), zero "database is locked" (every
  process exits 0), and every reader observation is exactly the before or the
  after state of the library, never half a session.
* Two learning sessions at once: the second refuses with the BusyError message,
  or with ``--wait`` waits for the first; their journal never interleaves.

The worker processes live in ``tools/crashlib.py``; ``tools/soak.py`` runs longer rounds.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import crashlib  # noqa: E402

from agentmem import Memory  # noqa: E402
from agentmem.storage import vector_index  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")


def report(capsys: pytest.CaptureFixture[str], line: str) -> None:
    with capsys.disabled():
        print(f"\n[concurrency] {line}", flush=True)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> crashlib.KillSetup:
    return crashlib.prepare_learn_kills(tmp_path_factory.mktemp("concurrency"), groups=30, runs=1)


def after_ref(setup: crashlib.KillSetup) -> Path:
    return setup.pristine.parent / "after-0.db"


def test_writers_and_readers_while_learning(
    setup: crashlib.KillSetup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    r = crashlib.run_concurrency(
        setup.pristine,
        tmp_path / "lib.db",
        tmp_path / "run",
        before=setup.before,
        after=setup.after,
        recorders=2,
        cli_recorders=1,
        feedback=1,
        readers=2,
        min_iters=20,
        after_ref=after_ref(setup),
    )
    report(
        capsys,
        f"{r.processes} processes (6 workers + 1 learner): {r.writes} writes under "
        f"load ({r.trajectories} trajectories), {len(r.lost)} lost; {r.observations} reader "
        f"observations {dict(r.observed_states)}; retrieval answers mixing two states: "
        f"{len(r.retrieve_anomalies)}",
    )
    assert r.retrieve_anomalies == []  # retrieval reads one snapshot
    assert r.problems == []
    assert r.lost == []
    assert r.learn_rc == 0
    # the readers polled across the session: they saw the library before and after it
    assert r.observed_states["snapshots:before"] and r.observed_states["snapshots:after"]


def test_learner_killed_under_load(
    setup: crashlib.KillSetup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """SIGKILL the learner while writers and readers run: nothing the others wrote is
    lost, and the library is the before or the after state."""
    r = crashlib.run_concurrency(
        setup.pristine,
        tmp_path / "lib.db",
        tmp_path / "run",
        before=setup.before,
        after=setup.after,
        recorders=2,
        cli_recorders=0,
        feedback=1,
        readers=1,
        min_iters=10,
        kill_learn_after=setup.duration * 0.7,
        after_ref=after_ref(setup),
    )
    report(
        capsys,
        f"learner killed={r.learn_killed} under load: {r.writes} writes by "
        f"{r.processes - 1} workers, {len(r.lost)} lost",
    )
    assert r.problems == []
    assert r.lost == []
    # the next learn resumes (exact groups only: the writers' own runs are not in `after`)
    rr = crashlib.run_cli(tmp_path / "lib.db", "learn", "--no-model", *crashlib.CONCURRENT_LEARN)
    assert rr.returncode == 0, rr.stderr.decode()
    assert crashlib.file_state(tmp_path / "lib.db") == setup.after
    assert crashlib.file_invariants(tmp_path / "lib.db", allow_running=False) == []


def _running(db) -> int:
    return db.execute(
        "SELECT count(*) FROM sessions WHERE kind = 'learn' AND status = 'running'"
    ).fetchone()[0]


def test_second_learn_refuses_or_waits(setup: crashlib.KillSetup, tmp_path: Path):
    work = tmp_path / "lib.db"
    crashlib.copy_library(setup.pristine, work)
    # a learner that holds its running session for about 3 s (0.1 s at each of 30 groups)
    first, _out, _ = crashlib.spawn_worker("slow-learn", work, 1, tmp_path, delay=0.1)
    db = crashlib.open_db(work)
    try:
        crashlib.wait_for(lambda: _running(db), 60, "the first session to start")
        refused = crashlib.run_cli(work, "learn", "--no-model")
        assert _running(db) == 1, "the first session ended too soon to test a refusal"
        assert refused.returncode == 1, refused.stdout.decode() + refused.stderr.decode()
        err = refused.stderr.decode()
        assert re.search(crashlib.BUSY_MESSAGE, err), err
        assert "--wait" in err and "Traceback" not in err
        launched = datetime.now(timezone.utc).isoformat(timespec="microseconds")
        assert _running(db) == 1
        waited = crashlib.run_cli(work, "learn", "--no-model", "--wait", "120", "--json")
        assert waited.returncode == 0, waited.stderr.decode()
        assert first.wait(timeout=120) == 0, first.stderr.read().decode()
        first.stderr.close()
        sessions = [s for s in crashlib.sessions_of(db) if s["kind"] == "learn"]
    finally:
        db.close()
    # the refused run left no session row; the waiting one began only after the first ended
    assert [s["status"] for s in sessions] == ["applied", "applied"]
    assert sessions[0]["finished_at"] > launched, "the --wait run had nothing to wait for"
    assert sessions[1]["started_at"] >= sessions[0]["finished_at"]
    assert json.loads(waited.stdout)["groups_already_learned"] == 30
    assert crashlib.file_state(work) == setup.after
    assert crashlib.file_invariants(work, allow_running=False) == []


def test_two_learns_started_together(setup: crashlib.KillSetup, tmp_path: Path):
    """Race two real `agentmem learn` processes, a few times: each either applies alone or
    refuses with BusyError; the library ends in the after state; the journal never
    interleaves."""
    outcomes = []
    for n in range(3):
        work = tmp_path / f"race{n}.db"
        crashlib.copy_library(setup.pristine, work)
        ps = [crashlib.spawn_cli(work, "learn", "--no-model") for _ in range(2)]
        results = [(p.wait(timeout=120), p.stderr.read().decode(), p) for p in ps]
        for _rc, _err, p in results:
            p.stdout.close()
            p.stderr.close()
        for rc, err, _ in results:
            assert rc in (0, 1), err
            if rc == 1:
                assert re.search(crashlib.BUSY_MESSAGE, err), err
        assert any(rc == 0 for rc, _, _ in results)
        outcomes.append(sorted(rc for rc, _, _ in results))
        assert crashlib.file_state(work) == setup.after
        assert crashlib.file_invariants(work, allow_running=False) == []


def test_retrieve_reads_one_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Deterministic: another connection commits a session between the index read and
    the experience read of one Memory.retrieve call."""
    path = tmp_path / "lib.db"
    mem = Memory.open(path, embedder="hash")
    other = Memory.open(path, embedder="hash")
    try:
        old = mem.add("Use find_docs to look up manual pages.", domain="docs")
        before = [
            (h.experience.id, h.experience.text) for h in mem.retrieve("look up manual pages", k=5)
        ]
        real = vector_index.search
        fired = []

        def racing(*a, **kw):
            hits = real(*a, **kw)
            if not fired:  # another process's session commits right now
                fired.append(1)
                other.remove(old.id)
                other.add("Use search_docs to look up manual pages.", domain="docs")
            return hits

        monkeypatch.setattr(vector_index, "search", racing)
        got = [
            (h.experience.id, h.experience.text) for h in mem.retrieve("look up manual pages", k=5)
        ]
        monkeypatch.setattr(vector_index, "search", real)
        after = [
            (h.experience.id, h.experience.text) for h in mem.retrieve("look up manual pages", k=5)
        ]
        assert before and after and before != after
        assert got in (before, after), f"retrieve saw {got}: neither {before} nor {after}"
    finally:
        mem.close()
        other.close()
