"""backup and restore: consistent copies of a library in use, and putting one back."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentmem import AgentMemError, Memory, Step
from agentmem.backup import BEFORE_RESTORE_SUFFIX, backup_library, restore_library
from agentmem.check import check_library, check_path, open_readonly
from agentmem.cli import cli
from agentmem.db import connect

from .conftest import ROOT

LS = Step("ls", {"path": "."}, "a.txt b.txt", True)
RM = Step("rm", {"path": "a.txt"}, "Error: permission denied", False)

# Records trajectories (and adds and removes experiences) until the stop file appears.
WRITER = r"""
import sys, pathlib
from agentmem import Memory, Step, Trajectory
path, stop = sys.argv[1], pathlib.Path(sys.argv[2])
ls = Step("ls", {"path": "."}, "a.txt " * 200, True)
rm = Step("rm", {"path": "a.txt"}, "Error: permission denied", False)
n = 0
with Memory.open(path, embedder="hash") as mem:
    while not stop.exists():
        mem.record_many([
            Trajectory(task=f"clean up {n}", steps=[ls, rm, ls], group=f"g{n % 7}",
                       accepted=n % 2 == 0),
            Trajectory(task=f"clean up {n}", steps=[ls], group=f"g{n % 7}", accepted=True),
        ])
        if n % 3 == 0:
            e = mem.add(f"Run ls before rm number {n} to see what goes.", domain="fs")
            if n % 6 == 0:
                mem.remove(e.id)
        n += 1
print(n)
"""


def _count(path: Path, table: str) -> int:
    db = open_readonly(path)
    try:
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        db.close()


def _seed(path: Path) -> None:
    with Memory.open(path, embedder="hash") as mem:
        mem.record("clean up", [LS, RM], group="clean", accepted=False)
        mem.record("clean up", [LS], group="clean", accepted=True)
        mem.add("Run ls before rm to see what goes.", domain="fs")


def _state(path: Path) -> tuple[object, ...]:
    with Memory.open(path, embedder="hash") as mem:
        return (
            [(t.id, t.task, len(t.steps)) for t in mem.trajectories()],
            [(e.id, e.text, e.domain) for e in mem.experiences()],
            len(mem.journal()),
        )


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- backup ---------------------------------------------------------------------------------


def test_backup_while_another_process_writes(tmp_path):
    lib = tmp_path / "lib.db"
    _seed(lib)
    stop = tmp_path / "stop"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(lib), str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    copies = []
    try:
        deadline = time.monotonic() + 120
        while _count(lib, "trajectories") < 12:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the writer did not get going"
            time.sleep(0.1)
        for i in range(4):
            dest = tmp_path / "copies" / f"copy{i}.db"
            dest.parent.mkdir(exist_ok=True)
            result = backup_library(lib, dest)
            assert result.report is not None
            assert result.report.ok, [str(p) for p in result.report.problems]
            copies.append(dest)
            time.sleep(0.3)
        assert proc.poll() is None, "the writer must still be writing while the copies are made"
    finally:
        stop.touch()
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    assert int(out) > 0
    counts = []
    for c in copies:
        assert _mode(c) == 0o600
        assert c.read_bytes()[18:20] == b"\x01\x01"  # rollback journal, not WAL
        assert not Path(f"{c}-wal").exists()
        # the copy opens on its own, anywhere
        alone = tmp_path / "alone" / c.name
        alone.parent.mkdir(exist_ok=True)
        shutil.copyfile(c, alone)
        with Memory.open(alone, embedder="hash") as mem:
            assert check_library(mem.db) == []
            counts.append(mem.stats()["trajectories"])
            assert mem.retrieve("remove a file safely", k=1, min_score=0.0)
    assert counts == sorted(counts) and counts[-1] > counts[0], counts
    assert check_path(lib).ok


def test_backup_refuses_and_forces(tmp_path):
    lib = tmp_path / "lib.db"
    _seed(lib)
    dest = tmp_path / "copy.db"
    first = backup_library(lib, dest)
    assert first.path == str(dest) and first.bytes == dest.stat().st_size
    with pytest.raises(AgentMemError, match="already exists"):
        backup_library(lib, dest)
    with Memory.open(lib, embedder="hash") as mem:
        mem.add("Use rm -i to confirm each deletion.", domain="fs")
    Path(f"{dest}-wal").write_bytes(b"stale")  # a stale side file must not survive --force
    backup_library(lib, dest, force=True)
    assert not Path(f"{dest}-wal").exists()
    assert _state(dest)[1] == _state(lib)[1]
    with pytest.raises(AgentMemError, match="the library itself"):
        backup_library(lib, lib, force=True)
    with pytest.raises(AgentMemError, match="does not exist"):
        backup_library(tmp_path / "nope.db", tmp_path / "x.db")
    assert not (tmp_path / "nope.db").exists() and not (tmp_path / "x.db").exists()
    with pytest.raises(AgentMemError, match="folder"):
        backup_library(lib, tmp_path / "no" / "such" / "x.db")
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_backup_of_an_old_schema_stays_old(tmp_path):
    old = tmp_path / "v1.db"
    shutil.copyfile(ROOT / "tests" / "data" / "library_v1.db", old)
    backup_library(old, tmp_path / "copy.db")
    report = check_path(tmp_path / "copy.db")
    assert {p.kind for p in report.problems} == {"migrations-pending"}


# -- restore --------------------------------------------------------------------------------


def test_restore_round_trip(tmp_path):
    lib = tmp_path / "lib.db"
    _seed(lib)
    saved = _state(lib)
    copy = tmp_path / "copy.db"
    backup_library(lib, copy)
    # the library moves on, and an agent keeps it open
    agent = Memory.open(lib, embedder="hash")
    try:
        agent.record("clean up again", [LS], group="clean", accepted=True)
        agent.add("Use rm -i to confirm each deletion.", domain="fs")
        changed = _state(lib)
        assert changed != saved
        result = restore_library(copy, lib)
        assert result.report is not None and result.report.ok
        assert result.previous == f"{lib}{BEFORE_RESTORE_SUFFIX}"
        assert _state(lib) == saved
        # the open connection sees the restored library, not a replaced file
        assert agent.stats()["trajectories"] == 2
        assert [e.text for e in agent.experiences()] == ["Run ls before rm to see what goes."]
        agent.add("Use rm -i to confirm each deletion.", domain="fs")
        assert check_library(agent.db) == []
    finally:
        agent.close()
    aside = Path(result.previous)
    assert _mode(aside) == 0o600
    assert check_path(aside).ok
    assert _state(aside) == changed
    with pytest.raises(AgentMemError, match="before-restore exists"):
        restore_library(copy, lib)
    restore_library(copy, lib, force=True)
    assert _state(lib) == saved


def test_restore_refuses_a_bad_backup(tmp_path):
    lib = tmp_path / "lib.db"
    _seed(lib)
    copy = tmp_path / "copy.db"
    backup_library(lib, copy)
    db = connect(copy)
    db.execute("UPDATE experiences SET text = 'Run rm -rf / first.'")
    db.close()
    before = _state(lib)
    with pytest.raises(AgentMemError, match="fails its check"):
        restore_library(copy, lib)
    assert _state(lib) == before
    assert not Path(f"{lib}{BEFORE_RESTORE_SUFFIX}").exists()
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database")
    with pytest.raises(AgentMemError, match="not an SQLite database"):
        restore_library(junk, lib)
    with pytest.raises(AgentMemError, match="the library itself"):
        restore_library(lib, lib)


def test_restore_to_a_new_path_and_over_a_broken_file(tmp_path):
    lib = tmp_path / "lib.db"
    _seed(lib)
    copy = tmp_path / "copy.db"
    backup_library(lib, copy)
    fresh = tmp_path / "fresh.db"
    result = restore_library(copy, fresh)
    assert result.previous is None and _mode(fresh) == 0o600
    assert _state(fresh) == _state(lib)
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"garbage " * 1000)
    result = restore_library(copy, broken)
    assert _state(broken) == _state(lib)
    assert Path(result.previous or "").read_bytes() == b"garbage " * 1000


# -- the commands -----------------------------------------------------------------------------


def _invoke(db: Path, *args: str):
    return CliRunner().invoke(cli, list(args), env={"AGENTMEM_DB": str(db)})


def test_cli_backup_and_restore(tmp_path):
    lib = tmp_path / "lib.db"
    _seed(lib)
    copy = tmp_path / "copy.db"
    r = _invoke(lib, "backup", str(copy))
    assert r.exit_code == 0, r.output
    assert "backed up" in r.output and copy.exists()
    r = _invoke(lib, "backup", str(copy))
    assert r.exit_code == 1 and "--force" in r.output
    assert _invoke(lib, "backup", "--force", str(copy)).exit_code == 0
    with Memory.open(lib, embedder="hash") as mem:
        mem.add("Use rm -i to confirm each deletion.", domain="fs")
    r = _invoke(lib, "restore", str(copy))
    assert r.exit_code == 0, r.output
    assert BEFORE_RESTORE_SUFFIX in r.output
    assert len(_state(lib)[1]) == 1
    r = _invoke(lib, "restore", str(copy))
    assert r.exit_code == 1 and "--force" in r.output
    assert _invoke(lib, "restore", "--force", str(copy)).exit_code == 0
    for cmd in ("backup", "restore", "check"):
        r = _invoke(lib, cmd, "--help")
        assert r.exit_code == 0 and "Examples:" in r.output
