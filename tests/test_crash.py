"""Kill tests: SIGKILL ``agentmem learn`` and ``agentmem record`` at random moments.

After every kill the library is exactly the before state or exactly the after
state of an unkilled run (computed by running the same session on a copy of the
file), every invariant holds (``PRAGMA integrity_check``, the vector index agrees
with the experiences, the journal replays to the library, no partial
trajectory), and the next ``agentmem learn`` resumes cleanly: it succeeds, marks
the killed process's stale ``running`` session failed, and reaches exactly the
after state.

Knobs (environment): ``AGENTMEM_KILLS`` (learn kills, default 20),
``AGENTMEM_RECORD_KILLS`` (default 10), ``AGENTMEM_KILL_SEED`` (default: random,
printed). The harness lives in ``tools/crashlib.py``; ``tools/soak.py`` runs it longer.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import crashlib  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

LEARN_KILLS = int(os.environ.get("AGENTMEM_KILLS", "20"))
RECORD_KILLS = int(os.environ.get("AGENTMEM_RECORD_KILLS", "10"))
SEED = int(os.environ.get("AGENTMEM_KILL_SEED", str(random.SystemRandom().randrange(10**6))))


def report(capsys: pytest.CaptureFixture[str], line: str) -> None:
    """Print past pytest's capture, so the figures show in every run's output."""
    with capsys.disabled():
        print(f"\n[crash] {line}", flush=True)


@pytest.fixture(scope="module")
def learn_setup(tmp_path_factory: pytest.TempPathFactory) -> crashlib.KillSetup:
    return crashlib.prepare_learn_kills(tmp_path_factory.mktemp("learn-kills"), groups=30)


@pytest.fixture(scope="module")
def record_setup(tmp_path_factory: pytest.TempPathFactory) -> crashlib.RecordSetup:
    return crashlib.prepare_record_kills(tmp_path_factory.mktemp("record-kills"), n=1000)


def test_unkilled_session_changes_every_kind_of_thing(learn_setup: crashlib.KillSetup):
    """The session under test ADDs, MODIFYs, MERGEs and DELETEs, so a torn apply would show."""
    before = {e[0]: e for e in learn_setup.before.experiences}
    after = {e[0]: e for e in learn_setup.after.experiences}
    assert set(after) - set(before), "no ADD"
    assert set(before) - set(after), "no DELETE/MERGE"
    assert any(after[i] != before[i] for i in set(before) & set(after)), "no MODIFY"
    assert len(learn_setup.after.vectors) == len(learn_setup.after.experiences)
    assert [k[0] for k in learn_setup.after.keywords] == [
        e[0] for e in learn_setup.after.experiences
    ]


def test_kill_learn_at_random_moments(
    learn_setup: crashlib.KillSetup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    rng = random.Random(SEED)
    outcomes: list[dict] = []
    attempts = 0
    while sum(o["killed"] for o in outcomes) < LEARN_KILLS and attempts < 2 * LEARN_KILLS:
        attempts += 1
        delay = rng.uniform(0, learn_setup.duration)
        # every fourth resume through a real `agentmem learn` process, the rest in-process
        resume = "cli" if attempts % 4 == 0 else "inprocess"
        outcomes.append(
            crashlib.kill_learn_trial(learn_setup, tmp_path / "work.db", delay, resume=resume)
        )
    kills = [o for o in outcomes if o["killed"]]
    phases = Counter(o["phase"] for o in kills)
    report(
        capsys,
        f"learn: {len(kills)} SIGKILLs survived of {len(outcomes)} runs (seed {SEED}, "
        f"delays 0..{learn_setup.duration:.2f} s): {dict(phases)}; "
        f"{sum(o['stale_marked_failed'] for o in outcomes)} stale sessions marked failed "
        "by the next learn",
    )
    assert len(kills) >= LEARN_KILLS


@pytest.mark.parametrize(
    "point, fraction",
    [("put", 0.0), ("journal", 0.5), ("keywords", 0.5), ("remove", 1.0), ("finish", 1.0)],
)
def test_kill_learn_inside_the_apply_transaction(
    learn_setup: crashlib.KillSetup, tmp_path: Path, point: str, fraction: float
):
    """SIGKILL at a chosen write of the apply transaction (the learner kills itself there:
    the first vector written, the middle journal row, the middle keyword row, the last vector
    removed, marking the session applied): nothing of the session stays (the keyword index
    included), the next learn resumes to the after state."""
    at = learn_setup.die_point(point, fraction)
    out = crashlib.die_learn_trial(learn_setup, tmp_path / "die.db", at)
    assert out["state"] == "before"


def test_kill_learn_while_session_running_then_resume(
    learn_setup: crashlib.KillSetup, tmp_path: Path
):
    """Killed between begin_session and the apply: a stale 'running' row that must not
    block; the next real `agentmem learn` process marks it failed and applies."""
    work = tmp_path / "running.db"
    crashlib.copy_library(learn_setup.pristine, work)
    p, _out, _ready = crashlib.spawn_worker("slow-learn", work, 1, tmp_path, delay=0.2)
    db = crashlib.open_db(work)
    try:
        crashlib.wait_for(
            lambda: db.execute("SELECT count(*) FROM sessions WHERE status = 'running'").fetchone()[
                0
            ],
            60,
            "the session to start",
        )
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        p.stderr.close()
        assert crashlib.library_state(db) == learn_setup.before
        assert crashlib.check_invariants(db) == []
    finally:
        db.close()
    r = crashlib.run_cli(work, "learn", "--no-model")
    assert r.returncode == 0, r.stderr.decode()
    db = crashlib.open_db(work)
    try:
        sessions = crashlib.sessions_of(db)
        stale = [s for s in sessions if s["pid"] == p.pid]
        assert [s["status"] for s in stale] == ["failed"]
        assert "process ended before applying" in stale[0]["report"]
        assert crashlib.library_state(db) == learn_setup.after
        assert crashlib.check_invariants(db, allow_running=False) == []
    finally:
        db.close()


def test_stale_session_of_unreaped_killed_learner_does_not_block(
    learn_setup: crashlib.KillSetup, tmp_path: Path
):
    """A killed learner its parent has not reaped yet (a zombie, or an orphan under a PID 1
    that never reaps) still answers kill(pid, 0); it must not block the next learn."""
    work = tmp_path / "zombie.db"
    crashlib.copy_library(learn_setup.pristine, work)
    p, _out, _ready = crashlib.spawn_worker("slow-learn", work, 1, tmp_path, delay=0.2)
    db = crashlib.open_db(work)
    try:
        crashlib.wait_for(
            lambda: db.execute("SELECT count(*) FROM sessions WHERE status = 'running'").fetchone()[
                0
            ],
            60,
            "the session to start",
        )
    finally:
        db.close()
    os.kill(p.pid, signal.SIGKILL)
    time.sleep(0.2)  # dead, not reaped yet
    try:
        rc, err = crashlib._learn_in_process(work)
    finally:
        p.wait()
        p.stderr.close()
    assert rc == 0, err[-500:]


def test_kill_record_at_random_moments(
    record_setup: crashlib.RecordSetup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    rng = random.Random(SEED + 1)
    outcomes: list[dict] = []
    attempts = 0
    while sum(o["killed"] for o in outcomes) < RECORD_KILLS and attempts < 2 * RECORD_KILLS:
        attempts += 1
        delay = rng.uniform(0, record_setup.duration)
        outcomes.append(crashlib.kill_record_trial(record_setup, tmp_path / "rec.db", delay))
    kills = [o for o in outcomes if o["killed"]]
    report(
        capsys,
        f"record: {len(kills)} SIGKILLs survived of {len(outcomes)} runs of a "
        f"{record_setup.n}-trajectory file (delays 0..{record_setup.duration:.2f} s): "
        f"{dict(Counter(o['state'] for o in kills))}; never a partial trajectory",
    )
    assert len(kills) >= RECORD_KILLS
    assert all(o["state"] in ("none", "all") for o in outcomes)


@pytest.mark.parametrize("at", ["step:1", "step:4000", "step:8000"])
def test_kill_record_inside_its_transaction(
    record_setup: crashlib.RecordSetup, tmp_path: Path, at: str
):
    assert crashlib.die_record_trial(record_setup, tmp_path / "die.db", at)["state"] == "none"


# -- prune ------------------------------------------------------------------------------------

PRUNE_KILLS = int(os.environ.get("AGENTMEM_PRUNE_KILLS", "8"))


@pytest.fixture(scope="module", params=[True, False], ids=["legacy-file", "incremental-file"])
def prune_setup(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> crashlib.PruneSetup:
    """A file of an older agentmem (the prune rewrites it with VACUUM) and one of this
    agentmem (auto_vacuum = INCREMENTAL)."""
    return crashlib.prepare_prune_kills(
        tmp_path_factory.mktemp("prune-kills"), n=3000, legacy=request.param
    )


def test_kill_prune_at_random_moments(
    prune_setup: crashlib.PruneSetup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    rng = random.Random(SEED + 2)
    outcomes: list[dict] = []
    attempts = 0
    while sum(o["killed"] for o in outcomes) < PRUNE_KILLS and attempts < 4 * PRUNE_KILLS:
        attempts += 1
        # before 0.1 s Python is still starting; a busy machine makes some runs quicker
        # than the slower of the two timed ones, hence 0.9
        delay = rng.uniform(0.1, 0.9 * prune_setup.duration)
        outcomes.append(crashlib.kill_prune_trial(prune_setup, tmp_path / "prune.db", delay))
    kills = [o for o in outcomes if o["killed"]]
    report(
        capsys,
        f"prune: {len(kills)} SIGKILLs survived of {len(outcomes)} runs pruning "
        f"{prune_setup.pruned} runs (delays 0.1..{0.9 * prune_setup.duration:.2f} s): "
        f"{dict(Counter(o['state'] for o in kills))}; never a torn library",
    )
    assert len(kills) >= PRUNE_KILLS
    assert {o["state"] for o in outcomes} <= {"before", "after"}


@pytest.mark.parametrize(
    ("at", "state"),
    [("prune-delete:1", "before"), ("prune-delete:4", "before"), ("prune-reclaim", "after")],
)
def test_kill_prune_inside_and_after_its_transaction(
    prune_setup: crashlib.PruneSetup, tmp_path: Path, at: str, state: str
):
    """Killed inside the delete transaction (at its first table, or its last, the
    trajectories, after steps and feedback went): nothing is pruned. Killed after the
    commit, before the space is given back: the runs are gone and the next prune gives
    the space back."""
    out = crashlib.die_prune_trial(prune_setup, tmp_path / "die.db", at)
    assert out["state"] == state
    if state == "after":
        assert out["rerun"]["trajectories"] == 0 and out["rerun"]["reclaimed"] != "none"
        assert out["size_after"] < out["size_killed"]
