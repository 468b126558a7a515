"""Shared helpers for agentmem's crash, concurrency and fuzz harness.

Used by ``tests/test_crash.py``, ``tests/test_concurrency.py``, ``tests/test_fuzz.py``
and ``tools/soak.py``. Nothing here is part of the library: it drives the real
``agentmem`` command line in subprocesses, kills them, and checks the file.

* **Libraries to learn from**: :func:`build_learn_library` writes a file with many
  ready groups and pre-existing experiences, chosen so that one session ADDs,
  MODIFYs, MERGEs and DELETEs.
* **State**: :func:`library_state` is what a reader of the library sees (live
  experiences ``(id, text, domain)`` and the vector index rows), read in one
  snapshot; :func:`table_dump` is every row of every table (for "unchanged").
* **Invariants**: :func:`check_invariants` runs ``PRAGMA integrity_check``, the
  foreign keys, :func:`agentmem.storage.vector_index.check`, an independent replay of the
  journal, session and trajectory rules, and ``agentmem.check.check_library``
  when it is importable.
* **Kill trials**: :func:`kill_learn_trial` and :func:`kill_record_trial` start
  ``agentmem learn --no-model`` / ``agentmem record`` on a fresh copy, SIGKILL it
  after a given delay, and check the all-or-nothing outcome and the resume.
* **Workers**: ``python tools/crashlib.py worker ROLE ...`` runs one process of
  the concurrency test (recorder, cli-recorder, feedback, reader, slow-learn)
  and writes a JSON report; :func:`run_concurrency` runs a whole round.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: import the working tree's agentmem
    sys.path.insert(0, str(ROOT))

from agentmem import Memory, Step  # noqa: E402
from agentmem.db import connect  # noqa: E402
from agentmem.records import Trajectory  # noqa: E402
from agentmem.storage import keyword_index, vector_index  # noqa: E402

#: Environment of every agentmem subprocess: the fast deterministic embedder, a
#: model spec that fails at once (nothing may load a real model), no downloads, and
#: the working tree first on the path. The hash seed is left random on purpose: a
#: session must be deterministic, or its kill test could not name the after state.
BASE_ENV = {
    "AGENTMEM_EMBEDDER": "hash",
    "AGENTMEM_MODEL": str(ROOT / "no-such-model.gguf"),
    "HF_HUB_OFFLINE": "1",
}

BUSY_MESSAGE = r"learning session \d+ is running in process \d+"


# -- running the command line ---------------------------------------------------------------


def cli_env(db: Path | str, **extra: str) -> dict[str, str]:
    env = {**os.environ, **BASE_ENV, "AGENTMEM_DB": str(db), **extra}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def cli_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentmem", *args]


def run_cli(
    db: Path | str, *args: str, input: bytes | None = None, timeout: float = 300, **env: str
) -> subprocess.CompletedProcess[bytes]:
    """Run ``agentmem ARGS`` to the end on library ``db``."""
    return subprocess.run(
        cli_cmd(*args),
        input=input,
        capture_output=True,
        timeout=timeout,
        env=cli_env(db, **env),
        cwd=str(ROOT),
    )


def spawn_cli(db: Path | str, *args: str, **env: str) -> subprocess.Popen[bytes]:
    """Start ``agentmem ARGS`` on library ``db`` without waiting (output to pipes)."""
    return subprocess.Popen(
        cli_cmd(*args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=cli_env(db, **env),
        cwd=str(ROOT),
    )


def copy_library(src: Path, dst: Path) -> None:
    """Copy a closed library file (no WAL left) over ``dst``, removing dst's WAL files."""
    for suffix in ("-wal", "-shm"):
        if Path(str(src) + suffix).exists() and Path(str(src) + suffix).stat().st_size:
            raise RuntimeError(f"{src} still has a {suffix} file: close it before copying")
        with contextlib.suppress(FileNotFoundError):
            os.remove(str(dst) + suffix)
    shutil.copyfile(src, dst)


def open_db(path: Path | str):
    """A plain connection to a library (sqlite-vec loaded, WAL, busy timeout): no migrations."""
    return connect(path)


@contextlib.contextmanager
def read_snapshot(db: Any) -> Iterator[None]:
    """Read in one snapshot (a deferred read transaction), unless one is open already."""
    conn = db.conn
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")


# -- libraries ------------------------------------------------------------------------------


def learnable_trajectories(groups: int, prefix: str = "g") -> list[Trajectory]:
    """``groups`` ready, non-degenerate groups (explicit verdicts, no acceptance window).

    Two kinds alternate: a file-reading task whose failures prove a prerequisite
    (``enter_dirN`` before ``read_fileN``) and a parameter name (``file_name``,
    not ``file``); and a docs lookup where ``find_docsN`` failed and
    ``search_docsN`` succeeded (a wrong tool, which contradicts an experience
    that recommends find_docsN).
    """
    trs: list[Trajectory] = []
    for i in range(groups):
        key = f"{prefix}{i:03d}"
        if i % 3 == 1:
            task = f"Look up the manual page for widget{i}"
            good = Step(
                f"search_docs{i}", {"query": f"widget{i}"}, "found: manual", True, domain="docs"
            )
            bad = Step(
                f"find_docs{i}",
                {"query": f"widget{i}"},
                "Error: index offline",
                False,
                domain="docs",
            )
            trs += [
                Trajectory(task=task, steps=[good], group=key, accepted=True),
                Trajectory(task=task, steps=[bad], group=key, accepted=False),
                Trajectory(task=task, steps=[good], group=key, accepted=True),
            ]
            continue
        task = f"Show me what report{i}.txt in archive{i} says"
        cd = Step(
            f"enter_dir{i}", {"folder": f"archive{i}"}, '{"cwd": "archive"}', True, domain="fs"
        )
        ok = Step(f"read_file{i}", {"file_name": f"report{i}.txt"}, '{"content": "hello"}', True)
        miss = Step(
            f"read_file{i}", {"file_name": f"report{i}.txt"}, '{"error": "No such file"}', False
        )
        bad = Step(
            f"read_file{i}",
            {"file": f"report{i}.txt"},
            "Error: unexpected keyword argument 'file'",
            False,
        )
        trs += [
            Trajectory(task=task, steps=[cd, ok], group=key, accepted=True),
            Trajectory(task=task, steps=[miss], group=key, accepted=False),
            Trajectory(task=task, steps=[cd, bad], group=key, accepted=False),
            Trajectory(task=task, steps=[cd, ok], group=key, accepted=True),
        ]
    return trs


def seed_experiences(groups: int) -> list[tuple[str, str]]:
    """(text, domain) of experiences to add before learning: near-duplicate pairs (MERGE),
    near-copies of what the data will teach (ADD becomes MODIFY), experiences the
    data contradicts (DELETE) and one unrelated experience nothing may touch."""
    out: list[tuple[str, str]] = []
    for i in range(groups):
        if i % 3 == 0:
            out.append((f"Call enter_dir{i} before read_file{i} in tasks like this one.", "fs"))
            out.append((f"Call enter_dir{i} before read_file{i} in tasks like these ones.", "fs"))
        elif i % 3 == 1:
            out.append((f"Use find_docs{i} to look up manual pages for widget{i}.", "docs"))
        else:
            out.append((f"Before calling read_file{i}, call enter_dir{i} first.", "fs"))
    out.append(("Use ls -la to see hidden files in a folder.", "fs"))
    return out


def build_learn_library(path: Path, groups: int = 30) -> dict[str, Any]:
    """Write a library of ``groups`` learnable groups and seeded experiences at ``path``."""
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(str(path) + suffix)
    with Memory.open(path, embedder="hash") as mem:
        for text, domain in seed_experiences(groups):
            mem.add(text, domain=domain)
        ids = mem.record_many(learnable_trajectories(groups))
    return {"groups": groups, "trajectories": len(ids)}


def record_lines(n: int, *, steps: int = 8, seed: int = 0, tag: str = "bulk") -> bytes:
    """JSON lines of ``n`` trajectories of ``steps`` steps each (for ``agentmem record``)."""
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        st = [
            {
                "tool": rng.choice(["bash", "read_file", "grep", "edit_file", "kubectl"]),
                "params": {"cmd": f"step {j} of {tag} {i}", "n": j},
                "output": "x" * rng.randint(10, 400),
                "success": rng.random() > 0.2,
            }
            for j in range(steps)
        ]
        lines.append(
            json.dumps(
                {
                    "task": f"{tag} task {i}",
                    "group": f"{tag}-{i % 50}",
                    "steps": st,
                    "accepted": rng.choice([True, False, None]),
                }
            )
        )
    return ("\n".join(lines) + "\n").encode()


# -- state ----------------------------------------------------------------------------------


class LibState(NamedTuple):
    """What a reader of the library sees: live experiences, the vector and keyword indexes."""

    experiences: tuple[tuple[int, str, str], ...]
    vectors: tuple[tuple[int, str, bytes], ...]
    vec0: tuple[int, ...]
    keywords: tuple[tuple[Any, ...], ...] = ()

    def short(self) -> str:
        return (
            f"{len(self.experiences)} live experiences, {len(self.vectors)} vectors "
            f"(digest {digest(self)[:10]})"
        )


def _has_table(db: Any, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", [name]).fetchone() is not None


def live_experiences(db: Any) -> tuple[tuple[int, str, str], ...]:
    return tuple(
        (int(i), str(t), str(d))
        for i, t, d in db.execute(
            "SELECT id, text, domain FROM experiences WHERE status = 'live' ORDER BY id"
        )
    )


def index_rows(db: Any) -> tuple[tuple[tuple[int, str, bytes], ...], tuple[int, ...]]:
    if not _has_table(db, vector_index.ITEMS):
        return (), ()
    vecs = tuple(
        (int(i), str(d), bytes(v))
        for i, d, v in db.execute(
            f"SELECT experience_id, domain, vector FROM {vector_index.ITEMS} ORDER BY experience_id"
        )
    )
    vec0 = tuple(
        int(r[0])
        for r in db.execute(
            f"SELECT experience_id FROM {vector_index.TABLE} ORDER BY experience_id"
        )
    )
    return vecs, vec0


def keyword_rows(db: Any) -> tuple[tuple[Any, ...], ...]:
    if not _has_table(db, keyword_index.TABLE):
        return ()
    return tuple(
        tuple(r)
        for r in db.execute(
            f"SELECT rowid, text, tools, params, errors, domain FROM {keyword_index.TABLE} "
            "ORDER BY rowid"
        )
    )


def library_state(db: Any) -> LibState:
    """The library as a reader sees it, read in one snapshot."""
    with read_snapshot(db):
        exps = live_experiences(db)
        vecs, vec0 = index_rows(db)
        keywords = keyword_rows(db)
    return LibState(exps, vecs, vec0, keywords)


def file_state(path: Path | str) -> LibState:
    db = open_db(path)
    try:
        return library_state(db)
    finally:
        db.close()


def digest(value: Any) -> str:
    return hashlib.sha1(repr(value).encode("utf-8", "surrogatepass")).hexdigest()


def table_dump(db: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table (shadow tables of the vector index included), sorted."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    with read_snapshot(db):
        names = [
            r[0]
            for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        ]
        for name in names:
            if (
                name == vector_index.TABLE
            ):  # the vec0 virtual table itself: its shadow tables hold it
                out[name] = sorted(
                    tuple(r) for r in db.execute(f"SELECT experience_id FROM [{name}]")
                )
                continue
            out[name] = sorted((tuple(r) for r in db.execute(f"SELECT * FROM [{name}]")), key=repr)
        out["sqlite_master"] = sorted(
            tuple(r) for r in db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")
        )
    return out


# -- invariants ------------------------------------------------------------------------------


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def journal_problems(db: Any) -> list[str]:
    """Replay every applied operation, oldest first, and compare with the experiences table.

    Also checks that each operation's recorded ``before`` rows equal the replayed
    state at that point (so the journal is a faithful history, not just an end state).
    """
    problems: list[str] = []
    state: dict[int, tuple[str, str, str]] = {}  # id -> (text, domain, status)
    removed: set[int] = set()
    rows = db.execute(
        "SELECT o.id, o.session_id, s.kind, s.status, o.kind, o.target_ids, o.result_id, "
        "o.before, o.after FROM operations o JOIN sessions s ON s.id = o.session_id "
        "WHERE o.status = 'applied' ORDER BY o.id"
    ).fetchall()
    for oid, sid, skind, sstatus, kind, targets_j, result_id, before_j, after_j in rows:
        if sstatus not in ("applied", "undone"):
            problems.append(
                f"journal: operation {oid} is applied but its session {sid} is {sstatus}"
            )
        targets = json.loads(targets_j)
        before = json.loads(before_j)
        after = json.loads(after_j) if after_j is not None else None
        for b in before:
            cur = state.get(b["id"])
            if cur is not None and cur != (b["text"], b["domain"], b["status"]):
                problems.append(
                    f"journal: operation {oid} says experience {b['id']} was "
                    f"{(b['text'], b['domain'], b['status'])!r} but the replay has "
                    f"{cur!r}"
                )
        if skind == "undo" and kind == "DELETE":
            state.pop(targets[0], None)
            removed.add(targets[0])
        elif kind == "ADD":
            if after is None or result_id is None:
                problems.append(f"journal: ADD operation {oid} has no result")
                continue
            state[result_id] = (after["text"], after["domain"], "live")
            removed.discard(result_id)
        elif kind in ("MODIFY", "MERGE"):
            if after is None or result_id is None:
                problems.append(f"journal: {kind} operation {oid} has no result")
                continue
            state[result_id] = (after["text"], after["domain"], "live")
            for t in targets[1:]:
                prev = state.get(t, ("?", "?", "?"))
                state[t] = (prev[0], prev[1], "deleted")
        elif kind == "DELETE":
            prev = state.get(targets[0], ("?", "?", "?"))
            state[targets[0]] = (prev[0], prev[1], "deleted")
    table = {
        int(i): (str(t), str(d), str(s))
        for i, t, d, s in db.execute("SELECT id, text, domain, status FROM experiences")
    }
    for eid, row in sorted(table.items()):
        want = state.get(eid)
        if want is None:
            problems.append(
                f"journal: experience {eid} {row!r} was not created by any journaled operation"
            )
        elif want[2] == "live" and row != want:
            problems.append(
                f"journal: experience {eid} is {row!r}, the journal replay says {want!r}"
            )
        elif want[2] == "deleted" and row[2] != "deleted":
            problems.append(f"journal: experience {eid} is {row[2]}, the journal deleted it")
    for eid in sorted(set(state) - set(table)):
        problems.append(
            f"journal: experience {eid} {state[eid]!r} is in the journal but not in the table"
        )
    return problems


def session_problems(db: Any, *, allow_running: bool = True) -> list[str]:
    """Sessions: operations only in applied/undone sessions, never interleaved, reports
    that count what the journal holds, at most one running learning session."""
    problems: list[str] = []
    sessions = {
        int(r[0]): r
        for r in db.execute(
            "SELECT id, kind, status, pid, report, started_at, finished_at FROM sessions"
        )
    }
    ops = db.execute("SELECT id, session_id, status FROM operations ORDER BY id").fetchall()
    counts: Counter[int] = Counter(sid for _, sid, _ in ops)
    # operations of one session form one contiguous run: no two sessions interleave
    seen_done: set[int] = set()
    prev = None
    for _oid, sid, _st in ops:
        if sid != prev:
            if sid in seen_done:
                problems.append(
                    f"session: operations of session {sid} interleave with session {prev}'s"
                )
            if prev is not None:
                seen_done.add(prev)
            prev = sid
    for sid, (_, kind, status, _pid, report, _started, finished) in sorted(sessions.items()):
        if status in ("running", "failed") and counts[sid]:
            problems.append(
                f"session: {kind} session {sid} is {status} but holds {counts[sid]} operations"
            )
        if status == "failed" and not finished:
            problems.append(f"session: failed session {sid} has no finished_at")
        if status == "running" and not allow_running:
            problems.append(f"session: {kind} session {sid} is still running")
        if kind == "learn" and status in ("applied", "undone"):
            listed = json.loads(report).get("operations")
            if listed is None or len(listed) != counts[sid]:
                problems.append(
                    f"session: learning session {sid}'s report lists "
                    f"{None if listed is None else len(listed)} operations, the "
                    f"journal holds {counts[sid]}"
                )
    running_learn = [s for s, r in sessions.items() if r[1] == "learn" and r[2] == "running"]
    alive = [s for s in running_learn if _pid_alive(sessions[s][3])]
    if len(alive) > 1:
        problems.append(f"session: {len(alive)} learning sessions run at once: {alive}")
    for (sid,) in db.execute("SELECT DISTINCT session_id FROM session_groups"):
        if sessions.get(int(sid), (0, "", ""))[2] not in ("applied", "undone"):
            problems.append(
                f"session: session_groups rows of session {sid}, which is "
                f"{sessions.get(int(sid), (0, '', 'missing'))[2]}"
            )
    # learning sessions that applied never overlap in time
    done = sorted(
        (r[5], r[6], s)
        for s, r in sessions.items()
        if r[1] == "learn" and r[2] in ("applied", "undone") and r[6]
    )
    for (s0, f0, a), (s1, _f1, b) in itertools.pairwise(done):
        if s1 < f0:
            problems.append(
                f"session: learning sessions {a} and {b} overlap in time ({s0}..{f0} and {s1}..)"
            )
    return problems


def trajectory_problems(db: Any) -> list[str]:
    """Every trajectory has exactly ``step_count`` steps, numbered 0..K-1 (no partial ones)."""
    problems = []
    for tid, said, n, lo, hi in db.execute(
        "SELECT t.id, t.step_count, count(s.id), min(s.position), max(s.position) "
        "FROM trajectories t LEFT JOIN steps s ON s.trajectory_id = t.id GROUP BY t.id "
        "HAVING count(s.id) != t.step_count OR (count(s.id) > 0 AND "
        "(min(s.position) != 0 OR max(s.position) != count(s.id) - 1))"
    ):
        problems.append(
            f"trajectory: {tid} says {said} steps and has {n} "
            f"(positions {lo}..{hi}): a partial trajectory"
        )
    orphans = db.execute(
        "SELECT count(*) FROM steps WHERE trajectory_id NOT IN (SELECT id FROM trajectories)"
    ).fetchone()[0]
    if orphans:
        problems.append(f"trajectory: {orphans} steps belong to no trajectory")
    return problems


def library_check_problems(db: Any) -> list[str]:
    """``agentmem.check.check_library``'s errors (warnings such as a stale session are
    expected after a kill), when that module exists."""
    try:
        from agentmem.check import check_library
    except ImportError:
        return []
    try:
        found = check_library(db)
    except Exception as e:  # its own bug: report, do not hide
        return [f"agentmem.check.check_library raised {type(e).__name__}: {e}"]
    return [f"check_library: {p}" for p in found if not getattr(p, "warning", False)]


def check_invariants(db: Any, *, allow_running: bool = True) -> list[str]:
    """Every invariant of a library at rest; an empty list means it is sound."""
    problems: list[str] = []
    with read_snapshot(db):
        ic = [str(r[0]) for r in db.execute("PRAGMA integrity_check").fetchall()]
        if ic != ["ok"]:
            problems += [f"integrity_check: {r}" for r in ic]
        fk = db.execute("PRAGMA foreign_key_check").fetchall()
        if fk:
            problems.append(f"foreign_key_check: {len(fk)} rows, e.g. {fk[0]!r}")
        problems += [f"index: {p}" for p in vector_index.check(db)]
        problems += [f"keyword index: {p}" for p in keyword_index.check(db)]
        problems += journal_problems(db)
        problems += session_problems(db, allow_running=allow_running)
        problems += trajectory_problems(db)
        problems += library_check_problems(db)
    return problems


def file_invariants(path: Path | str, **kw: Any) -> list[str]:
    db = open_db(path)
    try:
        return check_invariants(db, **kw)
    finally:
        db.close()


def sessions_of(db: Any) -> list[dict[str, Any]]:
    cur = db.execute(
        "SELECT id, kind, status, pid, started_at, finished_at, report FROM sessions ORDER BY id"
    )
    cols = [c[0] for c in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


# -- kill trials ------------------------------------------------------------------------------


class KillSetup(NamedTuple):
    """A prepared library and what an unkilled session does to it."""

    pristine: Path
    before: LibState
    after: LibState
    duration: float  # seconds an unkilled `agentmem learn --no-model` takes, start to exit
    after_sessions: int
    #: calls an unkilled session makes: journal rows, index writes (die points)
    counts: dict[str, int]

    def die_point(self, point: str, fraction: float) -> str:
        """``point:K`` with K at ``fraction`` of that point's calls in an unkilled session."""
        if point == "finish":
            return "finish"
        n = self.counts[point]
        return f"{point}:{max(1, min(n, round(fraction * n)))}"


def prepare_learn_kills(workdir: Path, groups: int = 30, runs: int = 2) -> KillSetup:
    """Build the library, run unkilled sessions on copies: the after state and the duration.

    Two unkilled runs must give the same after state (the session is deterministic)."""
    workdir.mkdir(parents=True, exist_ok=True)
    pristine = workdir / "pristine-learn.db"
    build_learn_library(pristine, groups)
    before = file_state(pristine)
    afters, times = [], []
    for n in range(runs):
        copy = workdir / f"after-{n}.db"
        copy_library(pristine, copy)
        t0 = time.monotonic()
        r = run_cli(copy, "learn", "--no-model", "--json")
        times.append(time.monotonic() - t0)
        if r.returncode != 0:
            raise AssertionError(f"unkilled learn failed: {r.stderr.decode()[-2000:]}")
        afters.append(file_state(copy))
        probs = file_invariants(copy, allow_running=False)
        if probs:
            raise AssertionError(f"invariants after an unkilled session: {probs}")
    if len(set(afters)) != 1:
        raise AssertionError(
            "two unkilled sessions on copies of one file disagree: the session is not deterministic"
        )
    if afters[0] == before:
        raise AssertionError("the session changed nothing: the kill test would prove nothing")
    db = open_db(workdir / "after-0.db")
    try:
        sessions = sessions_of(db)
        sid = sessions[-1]["id"]
        ops = db.execute(
            "SELECT kind, target_ids FROM operations WHERE session_id = ? AND status = 'applied'",
            [sid],
        ).fetchall()
        counts = {
            "journal": db.execute(
                "SELECT count(*) FROM operations WHERE session_id = ?", [sid]
            ).fetchone()[0],
            # one write of each index per session (journal.apply_operations)
            "put": int(any(k != "DELETE" for k, _ in ops)),
            "keywords": int(any(k != "DELETE" for k, _ in ops)),
            "remove": int(any(k == "DELETE" or len(json.loads(t)) > 1 for k, t in ops)),
        }
    finally:
        db.close()
    return KillSetup(pristine, before, afters[0], max(times), len(sessions), counts)


def _kill(p: subprocess.Popen[bytes], delay: float) -> bool:
    """SIGKILL ``p`` after ``delay`` seconds unless it ended first; True when killed."""
    try:
        p.wait(timeout=delay)
        killed = False
    except subprocess.TimeoutExpired:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        killed = True
    if p.stdout:
        p.stdout.close()
    if p.stderr:
        p.stderr.close()
    return killed


def kill_learn_trial(
    setup: KillSetup, work: Path, delay: float, *, resume: str = "cli"
) -> dict[str, Any]:
    """One kill of ``agentmem learn --no-model`` after ``delay`` s on a fresh copy.

    Checks: the library is exactly the before or the after state, every invariant
    holds, and the next ``agentmem learn`` succeeds, marks a stale running session
    failed and leaves exactly the after state. Returns what happened; raises
    AssertionError (with the details) on any violation.
    """
    copy_library(setup.pristine, work)
    p = spawn_cli(work, "learn", "--no-model")
    pid = p.pid
    killed = _kill(p, delay)
    out: dict[str, Any] = {"delay": round(delay, 3), "killed": killed, "rc": p.returncode}
    db = open_db(work)
    try:
        state = library_state(db)
        problems = check_invariants(db)
        sess = [s for s in sessions_of(db) if s["kind"] == "learn"]
    finally:
        db.close()
    mine = [s for s in sess if s["pid"] == pid]
    if state == setup.before:
        out["state"] = "before"
        out["phase"] = "in session" if mine else "before session"
        if mine and mine[0]["status"] != "running":
            problems.append(f"killed session is {mine[0]['status']} with the before state")
    elif state == setup.after:
        out["state"] = "after"
        out["phase"] = "after commit"
        if not mine or mine[0]["status"] != "applied":
            problems.append(f"after state but the session is {mine and mine[0]['status']}")
    else:
        out["state"] = "NEITHER"
        problems.append(
            f"the library is neither the before ({setup.before.short()}) nor the "
            f"after state ({setup.after.short()}): {state.short()}"
        )
    if not killed and p.returncode != 0:
        problems.append(f"unkilled learn exited {p.returncode}")
    if problems:
        raise AssertionError(f"after a kill at {delay:.3f} s: {problems}")
    stale = [s["id"] for s in mine if s["status"] == "running"]
    # the next learn resumes cleanly
    if resume == "cli":
        r = run_cli(work, "learn", "--no-model", "--json")
        rc, err = r.returncode, r.stderr.decode(errors="replace")
    else:
        rc, err = _learn_in_process(work)
    if rc != 0:
        raise AssertionError(f"learn after a kill at {delay:.3f} s exited {rc}: {err[-2000:]}")
    db = open_db(work)
    try:
        state2 = library_state(db)
        problems = check_invariants(db, allow_running=False)
        by_id = {s["id"]: s for s in sessions_of(db)}
    finally:
        db.close()
    if state2 != setup.after:
        problems.append(
            f"the resumed session left {state2.short()}, not the after state {setup.after.short()}"
        )
    for sid in stale:
        s = by_id[sid]
        if s["status"] != "failed" or "process ended" not in (s["report"] or ""):
            problems.append(f"stale session {sid} is {s['status']} ({s['report']}) after resume")
    if problems:
        raise AssertionError(f"resume after a kill at {delay:.3f} s: {problems}")
    out["stale_marked_failed"] = len(stale)
    return out


def _learn_in_process(work: Path) -> tuple[int, str]:
    from click.testing import CliRunner

    from agentmem.cli import cli

    r = CliRunner().invoke(
        cli, ["learn", "--no-model", "--json"], env={**BASE_ENV, "AGENTMEM_DB": str(work)}
    )
    err = r.output + (
        repr(r.exception) if r.exception and not isinstance(r.exception, SystemExit) else ""
    )
    return r.exit_code, err


class RecordSetup(NamedTuple):
    pristine: Path
    data: Path
    n: int
    tasks: frozenset[str]
    before_trajectories: int
    duration: float


def prepare_record_kills(workdir: Path, n: int = 1500, steps: int = 8) -> RecordSetup:
    """A library holding some trajectories, and a large JSON-lines file to record into it."""
    workdir.mkdir(parents=True, exist_ok=True)
    pristine = workdir / "pristine-record.db"
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(str(pristine) + suffix)
    with Memory.open(pristine, embedder="hash") as mem:
        mem.record_many(learnable_trajectories(5, prefix="pre"))
        before = mem.stats()["trajectories"]
    data = workdir / "big.jsonl"
    data.write_bytes(record_lines(n, steps=steps, tag="bulk"))
    tasks = frozenset(f"bulk task {i}" for i in range(n))
    copy = workdir / "record-timing.db"
    copy_library(pristine, copy)
    t0 = time.monotonic()
    r = run_cli(copy, "record", str(data), "--json")
    duration = time.monotonic() - t0
    if r.returncode != 0:
        raise AssertionError(f"unkilled record failed: {r.stderr.decode()[-2000:]}")
    return RecordSetup(pristine, data, n, tasks, before, duration)


def kill_record_trial(setup: RecordSetup, work: Path, delay: float) -> dict[str, Any]:
    """SIGKILL ``agentmem record BIG`` after ``delay`` s: all of the file or none, never a
    partial trajectory; then a new record of the file succeeds."""
    copy_library(setup.pristine, work)
    p = spawn_cli(work, "record", str(setup.data))
    killed = _kill(p, delay)
    out: dict[str, Any] = {"delay": round(delay, 3), "killed": killed, "rc": p.returncode}
    db = open_db(work)
    try:
        problems = check_invariants(db, allow_running=False)
        n = db.execute("SELECT count(*) FROM trajectories").fetchone()[0]
        new_tasks = {
            r[0] for r in db.execute("SELECT task FROM trajectories WHERE task LIKE 'bulk task %'")
        }
    finally:
        db.close()
    if n == setup.before_trajectories and not new_tasks:
        out["state"] = "none"
    elif n == setup.before_trajectories + setup.n and new_tasks == setup.tasks:
        out["state"] = "all"
    else:
        out["state"] = "PARTIAL"
        problems.append(f"{n - setup.before_trajectories} of {setup.n} trajectories recorded")
    if not killed and p.returncode != 0:
        problems.append(f"unkilled record exited {p.returncode}")
    if problems:
        raise AssertionError(f"after killing record at {delay:.3f} s: {problems}")
    # the next write goes through (the killed writer's lock and WAL are recovered)
    with Memory.open(work, embedder="hash") as mem:
        mem.record("after the kill", [Step("ls", {}, "a.txt", True)], accepted=True)
        if mem.stats()["trajectories"] != n + 1:
            raise AssertionError("a record after the kill was lost")
    return out


# -- dying at a chosen point ---------------------------------------------------------------


#: Where ``python tools/crashlib.py die AT -- ARGS`` SIGKILLs itself while running
#: ``agentmem ARGS``: (module, function) to wrap, and the call count at which to die.
DIE_POINTS = {
    # the apply transaction writes each index once, at its end: removals, then puts
    "put": ("agentmem.storage.vector_index", "put_many"),
    "remove": ("agentmem.storage.vector_index", "remove_many"),
    "keywords": ("agentmem.storage.keyword_index", "put_many"),
    "journal": ("agentmem.storage.journal", "_journal"),  # the k-th journal row written
    "finish": ("agentmem.storage.journal", "finish_session"),  # marking the session applied
    # the k-th step row of a record transaction
    "step": ("agentmem.storage.trajectories", "step_domain"),
    # prune: the k-th table of its delete transaction (4: the trajectories, last); the
    # space given back after the commit
    "prune-delete": ("agentmem.storage.retention", "_delete_pruned"),
    "prune-reclaim": ("agentmem.storage.retention", "_reclaim"),
}


def die_main(at: str, argv: Sequence[str]) -> int:
    """Run the agentmem command line in this process and SIGKILL it at ``at`` (``put:3``)."""
    import importlib

    point, _, k = at.partition(":")
    modname, fn = DIE_POINTS[point]
    mod = importlib.import_module(modname)
    real = getattr(mod, fn)
    count = {"n": 0}
    target = int(k or 1)

    def dying(*a: Any, **kw: Any) -> Any:
        count["n"] += 1
        if count["n"] >= target:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*a, **kw)

    setattr(mod, fn, dying)
    from agentmem.cli import cli

    cli(list(argv), prog_name="agentmem")
    return 0


def die_learn_trial(setup: KillSetup, work: Path, at: str) -> dict[str, Any]:
    """``agentmem learn --no-model`` SIGKILLed at a chosen point inside its apply
    transaction: the library must be exactly the before state, sound, and the next
    learn must resume (stale session marked failed) to exactly the after state."""
    copy_library(setup.pristine, work)
    cmd = [sys.executable, str(Path(__file__).resolve()), "die", at, "--", "learn", "--no-model"]
    r = subprocess.run(cmd, capture_output=True, env=cli_env(work), cwd=str(ROOT), timeout=300)
    if r.returncode != -signal.SIGKILL:
        raise AssertionError(
            f"learn did not die at {at}: rc {r.returncode} "
            f"{r.stderr.decode(errors='replace')[-2000:]}"
        )
    db = open_db(work)
    try:
        state = library_state(db)
        problems = check_invariants(db)
        running = [s["id"] for s in sessions_of(db) if s["status"] == "running"]
    finally:
        db.close()
    if state != setup.before:
        problems.append(
            f"killed at {at} inside the apply transaction, the library is "
            f"{state.short()}, not the before state {setup.before.short()}"
        )
    if len(running) != 1:
        problems.append(f"expected one stale running session, found {running}")
    if problems:
        raise AssertionError(f"die at {at}: {problems}")
    rc, err = _learn_in_process(work)
    if rc != 0:
        raise AssertionError(f"learn after dying at {at} exited {rc}: {err[-2000:]}")
    db = open_db(work)
    try:
        problems = check_invariants(db, allow_running=False)
        state2 = library_state(db)
        st = {s["id"]: s["status"] for s in sessions_of(db)}
    finally:
        db.close()
    if state2 != setup.after:
        problems.append("the resumed session did not reach the after state")
    if st[running[0]] != "failed":
        problems.append(f"stale session {running[0]} is {st[running[0]]} after the resume")
    if problems:
        raise AssertionError(f"resume after dying at {at}: {problems}")
    return {"at": at, "state": "before", "stale_marked_failed": 1}


def die_record_trial(setup: RecordSetup, work: Path, at: str) -> dict[str, Any]:
    """``agentmem record BIG`` SIGKILLed at its k-th step row: nothing of the file stays."""
    copy_library(setup.pristine, work)
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "die",
        at,
        "--",
        "record",
        str(setup.data),
    ]
    r = subprocess.run(cmd, capture_output=True, env=cli_env(work), cwd=str(ROOT), timeout=300)
    if r.returncode != -signal.SIGKILL:
        raise AssertionError(f"record did not die at {at}: rc {r.returncode}")
    db = open_db(work)
    try:
        problems = check_invariants(db, allow_running=False)
        n = db.execute("SELECT count(*) FROM trajectories").fetchone()[0]
    finally:
        db.close()
    if n != setup.before_trajectories:
        problems.append(f"{n - setup.before_trajectories} trajectories of a killed record stayed")
    if problems:
        raise AssertionError(f"record killed at {at}: {problems}")
    return {"at": at, "state": "none"}


# -- prune -------------------------------------------------------------------------------------


class PruneSetup(NamedTuple):
    """A library to prune, the prune's arguments, and the file's contents before and after
    an unkilled prune (every row of every table, the prune's timestamps blanked)."""

    pristine: Path
    args: tuple[str, ...]
    before: dict[str, list[tuple[Any, ...]]]
    after: dict[str, list[tuple[Any, ...]]]
    duration: float
    pruned: int


def prune_dump(db: Any) -> dict[str, list[tuple[Any, ...]]]:
    """:func:`table_dump` with ``pruned_trajectories.pruned_at`` blanked (it is the time)."""
    d = table_dump(db)
    if "pruned_trajectories" in d:
        d["pruned_trajectories"] = sorted(
            (r[0], r[1], r[2], None) for r in d["pruned_trajectories"]
        )
    return d


def _file_prune_dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    db = open_db(path)
    try:
        return prune_dump(db)
    finally:
        db.close()


def prepare_prune_kills(
    workdir: Path, n: int = 4000, keep: int = 1000, legacy: bool = True
) -> PruneSetup:
    """A library with learned groups (their sessions name the runs to be pruned) and ``n``
    more runs; the prune keeps the newest ``keep``. ``legacy``: the file is in
    ``auto_vacuum = NONE`` mode, as files of older agentmems are, so the prune gives the
    space back with one full VACUUM (else incrementally)."""
    workdir.mkdir(parents=True, exist_ok=True)
    pristine = workdir / f"pristine-prune-{int(legacy)}.db"
    build_learn_library(pristine, groups=12)
    with Memory.open(pristine, embedder="hash") as mem:
        mem.learn(use_model=False)
        from agentmem.ingest import parse_jsonl

        lines = record_lines(n, steps=8, tag="old").splitlines()
        mem.record_many(parse_jsonl(lines).trajectories)
    if legacy:
        db = open_db(pristine)
        try:
            db.execute("PRAGMA auto_vacuum = NONE")
            db.execute("VACUUM")
            if db.execute("PRAGMA auto_vacuum").fetchone()[0] != 0:
                raise AssertionError("could not make a legacy (auto_vacuum = NONE) file")
        finally:
            db.close()
    args = ("prune", "--keep-last", str(keep))
    before = _file_prune_dump(pristine)
    afters, times = [], []
    for k in range(2):
        copy = workdir / f"pruned-{int(legacy)}-{k}.db"
        copy_library(pristine, copy)
        t0 = time.monotonic()
        r = run_cli(copy, *args, "--json")
        times.append(time.monotonic() - t0)
        if r.returncode != 0:
            raise AssertionError(f"unkilled prune failed: {r.stderr.decode()[-2000:]}")
        afters.append(_file_prune_dump(copy))
        probs = file_invariants(copy, allow_running=False)
        if probs:
            raise AssertionError(f"invariants after an unkilled prune: {probs}")
    if afters[0] != afters[1]:
        raise AssertionError("two unkilled prunes of copies of one file disagree")
    pruned = len(afters[0]["pruned_trajectories"])
    if not pruned or afters[0]["experiences"] != before["experiences"]:
        raise AssertionError("the prune pruned nothing, or changed experiences")
    return PruneSetup(pristine, args, before, afters[0], max(times), pruned)


def _prune_state(setup: PruneSetup, work: Path) -> tuple[str, list[str]]:
    db = open_db(work)
    try:
        problems = check_invariants(db, allow_running=False)
        dump = prune_dump(db)
    finally:
        db.close()
    if dump == setup.before:
        return "before", problems
    if dump == setup.after:
        return "after", problems
    differ = sorted(k for k in set(dump) | set(setup.after) if dump.get(k) != setup.after.get(k))
    return "TORN", [*problems, f"neither before nor after: tables {differ} differ from after"]


def kill_prune_trial(setup: PruneSetup, work: Path, delay: float) -> dict[str, Any]:
    """SIGKILL ``agentmem prune`` after ``delay`` s on a fresh copy: the file holds exactly
    the before or the after rows (nothing to keep is lost, nothing half pruned), every
    invariant holds, and the next prune reaches exactly the after state."""
    copy_library(setup.pristine, work)
    p = spawn_cli(work, *setup.args)
    killed = _kill(p, delay)
    out: dict[str, Any] = {"delay": round(delay, 3), "killed": killed, "rc": p.returncode}
    out["state"], problems = _prune_state(setup, work)
    if not killed and (p.returncode != 0 or out["state"] != "after"):
        problems.append(f"unkilled prune exited {p.returncode} in state {out['state']}")
    if problems:
        raise AssertionError(f"after killing prune at {delay:.3f} s: {problems}")
    r = run_cli(work, *setup.args)
    if r.returncode != 0:
        raise AssertionError(f"prune after the kill failed: {r.stderr.decode()[-2000:]}")
    state, problems = _prune_state(setup, work)
    if state != "after" or problems:
        raise AssertionError(f"the prune after a kill at {delay:.3f} s: {state}, {problems}")
    return out


def die_prune_trial(setup: PruneSetup, work: Path, at: str) -> dict[str, Any]:
    """``agentmem prune`` SIGKILLed at a chosen point (:data:`DIE_POINTS`): inside its
    transaction nothing changes; after it the rows are gone, and the next prune gives
    the space back and reaches the after state."""
    copy_library(setup.pristine, work)
    cmd = [sys.executable, str(Path(__file__).resolve()), "die", at, "--", *setup.args]
    r = subprocess.run(cmd, capture_output=True, env=cli_env(work), cwd=str(ROOT), timeout=300)
    if r.returncode != -signal.SIGKILL:
        raise AssertionError(f"prune did not die at {at}: rc {r.returncode}")
    state, problems = _prune_state(setup, work)
    if problems:
        raise AssertionError(f"prune killed at {at}: {problems}")
    size_killed = work.stat().st_size
    r2 = run_cli(work, *setup.args, "--json")
    if r2.returncode != 0:
        raise AssertionError(f"prune after dying at {at} failed: {r2.stderr.decode()[-2000:]}")
    state2, problems = _prune_state(setup, work)
    if state2 != "after" or problems:
        raise AssertionError(f"the prune after dying at {at}: {state2}, {problems}")
    return {
        "at": at,
        "state": state,
        "rerun": json.loads(r2.stdout),
        "size_killed": size_killed,
        "size_after": work.stat().st_size,
    }


# -- concurrency workers --------------------------------------------------------------------------


READER_QUERIES = (
    "Show me what report3.txt in archive3 says",
    "Look up the manual page for widget4",
    "read a file in a folder",
    "list hidden files",
)


def _worker_steps(rng: random.Random, wid: str, n: int) -> list[Step]:
    return [
        Step(
            rng.choice(["bash", "read_file", "grep"]),
            {"cmd": f"{wid} {n} {j}"},
            f"out {j}",
            rng.random() > 0.3,
        )
        for j in range(rng.randint(1, 4))
    ]


def _stop(args: argparse.Namespace, n: int) -> bool:
    return n >= args.min and Path(args.stop).exists()


def worker_recorder(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.id)
    wrote: list[list[Any]] = []
    with Memory.open(args.db) as mem:
        Path(args.ready).touch()
        n = 0
        while not _stop(args, n) and n < args.max:
            batch = [
                Trajectory(
                    task=f"w{args.id} task {n}.{k}",
                    group=f"w{args.id}-{n}.{k}",
                    steps=_worker_steps(rng, f"w{args.id}", n),
                )
                for k in range(rng.randint(1, 3))
            ]
            ids = mem.record_many(batch)
            wrote += [[i, t.task, len(t.steps)] for i, t in zip(ids, batch, strict=True)]
            n += 1
    return {
        "role": "recorder",
        "iterations": n,
        "trajectories": wrote,
        "steps": sum(w[2] for w in wrote),
    }


def worker_cli_recorder(args: argparse.Namespace) -> dict[str, Any]:
    """Records through the real command line, one `agentmem record` process per batch."""
    rng = random.Random(args.id)
    wrote: list[list[Any]] = []
    Path(args.ready).touch()
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        while not _stop(args, n) and n < args.max:
            batch = [
                {
                    "task": f"c{args.id} task {n}.{k}",
                    "group": f"c{args.id}-{n}.{k}",
                    "steps": [
                        {
                            "tool": "bash",
                            "params": {"cmd": f"c {n} {j}"},
                            "output": "ok",
                            "success": True,
                        }
                        for j in range(rng.randint(1, 4))
                    ],
                }
                for k in range(rng.randint(1, 3))
            ]
            f = Path(tmp) / f"{n}.jsonl"
            f.write_text("\n".join(json.dumps(b) for b in batch) + "\n")
            r = run_cli(args.db, "record", str(f), "--json")
            if r.returncode != 0:
                raise SystemExit(
                    f"agentmem record exited {r.returncode}: "
                    f"{r.stderr.decode(errors='replace')[-2000:]}"
                )
            ids = json.loads(r.stdout)["ids"]
            wrote += [[i, b["task"], len(b["steps"])] for i, b in zip(ids, batch, strict=True)]
            n += 1
    return {
        "role": "cli-recorder",
        "iterations": n,
        "trajectories": wrote,
        "steps": sum(w[2] for w in wrote),
    }


def worker_feedback(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.id)
    wrote: list[list[Any]] = []
    events: Counter[int] = Counter()
    states: dict[int, bool] = {}
    with Memory.open(args.db) as mem:
        Path(args.ready).touch()
        n = 0
        while not _stop(args, n) and n < args.max:
            if n % 4 == 0 or not wrote:
                t = Trajectory(
                    task=f"f{args.id} task {n}",
                    group=f"f{args.id}-{n}",
                    steps=_worker_steps(rng, f"f{args.id}", n),
                )
                (tid,) = mem.record_many([t])
                wrote.append([tid, t.task, len(t.steps)])
            tid = rng.choice(wrote)[0]
            mem.feedback(tid, rng.choice(["accept", "correct", "reject"]), note=f"n{n}")
            events[tid] += 1
            if n % 3 == 0:
                ok = rng.random() > 0.5
                mem.set_state(tid, ok)
                states[tid] = ok
            n += 1
    return {
        "role": "feedback",
        "iterations": n,
        "trajectories": wrote,
        "steps": sum(w[2] for w in wrote),
        "feedback": {str(k): v for k, v in events.items()},
        "states": {str(k): v for k, v in states.items()},
    }


def worker_reader(args: argparse.Namespace) -> dict[str, Any]:
    """Polls what retrieval sees: Memory.experiences(), the index, and Memory.retrieve."""
    seen_exps: Counter[str] = Counter()
    seen_index: Counter[str] = Counter()
    seen_snap: Counter[str] = Counter()
    seen_retrieve: dict[str, Counter[str]] = {q: Counter() for q in READER_QUERIES}
    retrieve_results: dict[str, list[Any]] = {}
    with Memory.open(args.db) as mem:
        Path(args.ready).touch()
        n = 0
        while not _stop(args, n) and n < args.max:
            exps = tuple((e.id, e.text, e.domain) for e in mem.experiences())
            seen_exps[digest(exps)] += 1
            with read_snapshot(mem.db):
                snap = library_state(mem.db)
            seen_snap[digest(snap)] += 1
            with read_snapshot(mem.db):  # two SELECTs: one snapshot, or a commit between mixes them
                index = index_rows(mem.db)
            seen_index[digest(index)] += 1
            q = READER_QUERIES[n % len(READER_QUERIES)]
            res = tuple((h.experience.id, h.experience.text) for h in mem.retrieve(q, k=5))
            d = digest(res)
            seen_retrieve[q][d] += 1
            retrieve_results[d] = [list(r) for r in res]
            n += 1
    return {
        "role": "reader",
        "iterations": n,
        "experiences": dict(seen_exps),
        "index": dict(seen_index),
        "snapshots": dict(seen_snap),
        "retrieve": {q: dict(c) for q, c in seen_retrieve.items()},
        "retrieve_results": retrieve_results,
    }


def worker_slow_learn(args: argparse.Namespace) -> dict[str, Any]:
    """A data-only learning session that holds its 'running' session row for a while: it
    sleeps ``--delay`` seconds at each group (in its progress callback, inside the session,
    before the apply transaction). Its result is the same as `agentmem learn --no-model`'s."""
    with Memory.open(args.db) as mem:
        Path(args.ready).touch()
        t0 = time.monotonic()
        report = mem.learn(use_model=False, progress=lambda _msg: time.sleep(args.delay))
        return {
            "role": "slow-learn",
            "session_id": report.session_id,
            "seconds": time.monotonic() - t0,
            "groups_used": report.groups_used,
        }


WORKERS = {
    "recorder": worker_recorder,
    "cli-recorder": worker_cli_recorder,
    "feedback": worker_feedback,
    "reader": worker_reader,
    "slow-learn": worker_slow_learn,
}


def spawn_worker(
    role: str,
    db: Path,
    wid: int,
    tmp: Path,
    *,
    min_iters: int = 5,
    max_iters: int = 10**9,
    delay: float = 0.0,
) -> tuple[subprocess.Popen[bytes], Path, Path]:
    out = tmp / f"{role}-{wid}.json"
    ready = tmp / f"{role}-{wid}.ready"
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "worker",
        role,
        "--db",
        str(db),
        "--id",
        str(wid),
        "--stop",
        str(tmp / "stop"),
        "--ready",
        str(ready),
        "--out",
        str(out),
        "--min",
        str(min_iters),
        "--max",
        str(max_iters),
        "--delay",
        str(delay),
    ]
    p = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=cli_env(db), cwd=str(ROOT)
    )
    return p, out, ready


def wait_for(pred: Any, timeout: float, what: str, poll: float = 0.01) -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(poll)


class Round(NamedTuple):
    """What one concurrency round did and found."""

    processes: int
    writes: int  # trajectories + steps + feedback events + state verdicts the workers wrote
    trajectories: int
    lost: list[str]
    problems: list[str]
    observations: int
    observed_states: Counter[str]
    retrieve_anomalies: list[str]
    learn_rc: int | None
    learn_killed: bool
    learn_seconds: float
    seconds: float


#: The learner that runs among the writers learns from exact groups only. The writers
#: record single runs and judge them while it runs; with the default grouping those
#: would be learned too (a run's own corrections, similar tasks), or not, depending on
#: timing, and the after state these rounds compare with is the pristine library's.
CONCURRENT_LEARN = ("--grouping", "exact")


def run_concurrency(
    pristine: Path,
    work: Path,
    tmp: Path,
    *,
    before: LibState,
    after: LibState,
    recorders: int = 2,
    cli_recorders: int = 1,
    feedback: int = 1,
    readers: int = 2,
    learn: bool = True,
    kill_learn_after: float | None = None,
    min_iters: int = 5,
    settle: float = 0.3,
    timeout: float = 120,
    after_ref: Path | None = None,
) -> Round:
    """One round: writers and readers in loops while ``agentmem learn`` runs in another process.

    Checks every write the workers report is in the file (nothing lost), every
    process exited 0 with no "database is locked", every reader observation is the
    before or the after state, and every invariant of the file. With
    ``kill_learn_after`` the learner is SIGKILLed after that many seconds (the
    library must then be the before or the after state, and stay sound).
    ``after_ref`` is a copy of ``pristine`` that an unkilled session has learned.
    """
    work.parent.mkdir(parents=True, exist_ok=True)
    copy_library(pristine, work)
    tmp.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        (tmp / "stop").unlink()
    if after_ref is None:
        after_ref = tmp / "after-ref.db"
        copy_library(pristine, after_ref)
        r = run_cli(after_ref, "learn", "--no-model", *CONCURRENT_LEARN)
        if r.returncode != 0:
            raise AssertionError(r.stderr.decode()[-2000:])
    before_copy = tmp / "before-ref.db"
    copy_library(pristine, before_copy)
    # A retrieval answer must hold lessons of one state, before or after the session. (Not
    # the exact answer of a reference copy: the ranking also weighs which tools recorded
    # tasks used, and the workers record while the session runs.)
    lessons: dict[str, set[tuple[int, str]]] = {}
    for st_path, label in ((before_copy, "before"), (after_ref, "after")):
        with Memory.open(st_path) as mem:
            lessons[label] = {(e.id or 0, e.text) for e in mem.experiences()}
    with Memory.open(before_copy) as mem:
        base_traj = mem.stats()["trajectories"]
        base_feedback = mem.stats()["feedback_events"]
    procs: list[tuple[str, subprocess.Popen[bytes], Path, Path]] = []
    wid = 0
    for role, count in (
        ("recorder", recorders),
        ("cli-recorder", cli_recorders),
        ("feedback", feedback),
        ("reader", readers),
    ):
        for _ in range(count):
            wid += 1
            p, out, ready = spawn_worker(
                role,
                work,
                wid,
                tmp,
                min_iters=min(min_iters, 3) if role == "cli-recorder" else min_iters,
            )
            procs.append((role, p, out, ready))
    problems: list[str] = []
    learn_rc = None
    killed = False
    t_start = time.monotonic()
    learn_seconds = 0.0
    try:
        wait_for(lambda: all(r.exists() for _, _, _, r in procs), 60, "the workers to start")
        if learn:
            t_learn = time.monotonic()
            lp = spawn_cli(work, "learn", "--no-model", "--json", *CONCURRENT_LEARN)
            if kill_learn_after is not None:
                killed = _kill(lp, kill_learn_after)
                learn_rc = lp.returncode
            else:
                _, lerr = lp.communicate(timeout=timeout)
                learn_rc = lp.returncode
                if learn_rc != 0:
                    problems.append(f"learn exited {learn_rc}: {lerr.decode()[-2000:]}")
            learn_seconds = time.monotonic() - t_learn
        time.sleep(settle)
    finally:
        (tmp / "stop").touch()
    reports = []
    for role, p, out, _ready in procs:
        try:
            _, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        text = err.decode(errors="replace")
        if p.returncode != 0:
            problems.append(f"{role} worker exited {p.returncode}: {text[-3000:]}")
        if "locked" in text.lower() or "busy" in text.lower():
            problems.append(f"{role} worker reported a lock error: {text[-2000:]}")
        if out.exists():
            reports.append(json.loads(out.read_text()))
    # nothing lost
    lost: list[str] = []
    db = open_db(work)
    try:
        rows = {
            int(i): (t, int(n))
            for i, t, n in db.execute(
                "SELECT t.id, t.task, (SELECT count(*) FROM steps s WHERE s.trajectory_id = t.id) "
                "FROM trajectories t"
            )
        }
        fb = Counter(int(r[0]) for r in db.execute("SELECT trajectory_id FROM feedback"))
        st = {
            int(i): s
            for i, s in db.execute(
                "SELECT id, state_ok FROM trajectories WHERE state_ok IS NOT NULL"
            )
        }
        final = library_state(db)
        problems += check_invariants(db)
        total_fb = db.execute("SELECT count(*) FROM feedback").fetchone()[0]
    finally:
        db.close()
    wrote_traj = wrote_steps = wrote_fb = wrote_states = 0
    for rep in reports:
        for tid, task, nsteps in rep.get("trajectories", []):
            wrote_traj += 1
            wrote_steps += nsteps
            if rows.get(tid) != (task, nsteps):
                lost.append(
                    f"trajectory {tid} ({task!r}, {nsteps} steps) of a {rep['role']} "
                    f"is {rows.get(tid)!r} in the file"
                )
        for tid, count in rep.get("feedback", {}).items():
            wrote_fb += count
            if fb[int(tid)] != count:
                lost.append(
                    f"trajectory {tid}: {count} feedback events given, {fb[int(tid)]} in the file"
                )
        for tid, ok in rep.get("states", {}).items():
            wrote_states += 1
            if st.get(int(tid)) != int(ok):
                lost.append(f"trajectory {tid}: state {ok} set, {st.get(int(tid))} in the file")
    if len(rows) != base_traj + wrote_traj:
        lost.append(
            f"the file holds {len(rows)} trajectories, expected {base_traj} + {wrote_traj} written"
        )
    if total_fb != base_feedback + wrote_fb:
        lost.append(
            f"the file holds {total_fb} feedback events, expected {base_feedback} + {wrote_fb}"
        )
    # observations: before or after, never in between
    allowed = {"before": before, "after": after}
    ok_exps = {digest(s.experiences): k for k, s in allowed.items()}
    ok_index = {digest((s.vectors, s.vec0)): k for k, s in allowed.items()}
    ok_snap = {digest(s): k for k, s in allowed.items()}
    observed: Counter[str] = Counter()
    anomalies: list[str] = []
    observations = 0
    for rep in reports:
        if rep["role"] != "reader":
            continue
        for kind, table in (("experiences", ok_exps), ("index", ok_index), ("snapshots", ok_snap)):
            for d, c in rep[kind].items():
                observations += c
                label = table.get(d)
                if label is None:
                    problems.append(
                        f"a reader saw a half session: {c} {kind} observations "
                        f"match neither the before nor the after state"
                    )
                else:
                    observed[f"{kind}:{label}"] += c
        for q, counts in rep["retrieve"].items():
            for d, c in counts.items():
                observations += c
                got = {(int(i), str(t)) for i, t in rep["retrieve_results"][d]}
                label = next((k for k in ("before", "after") if got <= lessons[k]), None)
                if label is None:
                    anomalies.append(
                        f"retrieve({q!r}) returned {rep['retrieve_results'][d]} "
                        f"{c}x: neither the before nor the after answer"
                    )
                else:
                    observed[f"retrieve:{label}"] += c
    if killed:
        if final not in (before, after):
            problems.append("after killing the learner the library is neither before nor after")
    elif learn and final != after:
        problems.append(f"after the round the library is {final.short()}, not the after state")
    elif not learn and final != before:
        problems.append("the library changed without a learning session")
    return Round(
        processes=len(procs) + (1 if learn else 0),
        writes=wrote_traj + wrote_steps + wrote_fb + wrote_states,
        trajectories=wrote_traj,
        lost=lost,
        problems=problems,
        observations=observations,
        observed_states=observed,
        retrieve_anomalies=anomalies,
        learn_rc=learn_rc,
        learn_killed=killed,
        learn_seconds=learn_seconds,
        seconds=time.monotonic() - t_start,
    )


# -- entry point ----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("worker", help="run one concurrency worker")
    w.add_argument("role", choices=sorted(WORKERS))
    w.add_argument("--db", required=True)
    w.add_argument("--id", type=int, default=0)
    w.add_argument("--stop", required=True)
    w.add_argument("--ready", required=True)
    w.add_argument("--out", required=True)
    w.add_argument("--min", type=int, default=5)
    w.add_argument("--max", type=int, default=10**9)
    w.add_argument("--delay", type=float, default=0.0)
    b = sub.add_parser("build", help="write a learnable library")
    b.add_argument("path")
    b.add_argument("--groups", type=int, default=30)
    d = sub.add_parser("die", help="run agentmem ARGS and SIGKILL it at a chosen point")
    d.add_argument("at", help=f"POINT[:K], POINT one of {', '.join(DIE_POINTS)}")
    d.add_argument("rest", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    if args.cmd == "die":
        rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
        return die_main(args.at, rest)
    if args.cmd == "build":
        print(json.dumps(build_learn_library(Path(args.path), args.groups)))
        return 0
    report = WORKERS[args.role](args)
    tmp_out = Path(args.out + ".tmp")
    tmp_out.write_text(json.dumps(report))
    tmp_out.replace(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
