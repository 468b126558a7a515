"""Consistent copies of a live library, and putting one back.

:func:`backup_library` copies a library with SQLite's online backup API while
agents may still be writing to it (WAL mode lets the copy read one snapshot
without stopping them). The copy is one self-contained file: rollback-journal
mode (``journal_mode=DELETE``), so it needs no ``-wal`` or ``-shm`` file beside
it, readable and writable by its owner only (0600), written under a temporary
name and renamed into place, so a crash never leaves half a copy under the
final name.

:func:`restore_library` verifies a backup with :func:`agentmem.check.check_path`
(it refuses one with errors), copies the current library aside to
``<db>.before-restore`` (refusing to replace an older one unless ``force``), and
then writes the backup's pages into the library with the backup API, so that
agent processes that have the library open see the restored content on their
next transaction instead of writing to a replaced file. A file that is not
a readable SQLite database is replaced by renaming instead.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from .check import CheckReport, check_path
from .db import BUSY_TIMEOUT_MS, sqlite3
from .errors import AgentMemError

__all__ = ["BEFORE_RESTORE_SUFFIX", "BackupResult", "backup_library", "restore_library"]

#: The current library is kept as ``<db>`` + this suffix by :func:`restore_library`.
BEFORE_RESTORE_SUFFIX = ".before-restore"

_SIDE_FILES = ("-wal", "-shm", "-journal")


@attrs.frozen
class BackupResult:
    """Where a copy went, how large it is, and what :func:`check_path` says of it."""

    path: str
    bytes: int
    report: CheckReport | None = None
    #: For a restore: where the library that was replaced now lies (None if there was none).
    previous: str | None = None


def _connect_ro(path: Path) -> Any:
    uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def _connect_rw(path: Path) -> Any:
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def _require_library_file(path: Path, what: str) -> None:
    if not path.exists():
        raise AgentMemError(f"{what} {path} does not exist")
    if not path.is_file():
        raise AgentMemError(f"{what} {path} is not a file")
    with open(path, "rb") as fh:
        head = fh.read(16)
    if head != b"SQLite format 3\x00":
        raise AgentMemError(f"{what} {path} is not an SQLite database")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _remove_side_files(path: Path) -> None:
    for suffix in _SIDE_FILES:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _temp_beside(dest: Path) -> Iterator[Path]:
    """A new, empty 0600 file in ``dest``'s folder; removed (with side files) unless renamed."""
    tmp = dest.parent / f".{dest.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, stat.S_IRUSR | stat.S_IWUSR)
    os.close(fd)
    try:
        yield tmp
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        _remove_side_files(tmp)


def _snapshot_into(source: Path, target: Path) -> None:
    """Every page of ``source`` into ``target`` with SQLite's backup API, under its locks.

    pages=-1: every page in one step, so the copy is one snapshot of the source even
    while other processes write to it.
    """
    src = _connect_ro(source)
    try:
        dst = _connect_rw(target)
        try:
            src.backup(dst, pages=-1)
        finally:
            dst.close()
    finally:
        src.close()


def _copy_pages(source: Path, target: Path) -> None:
    """One consistent snapshot of ``source`` into the empty file ``target``, self-contained."""
    _snapshot_into(source, target)
    dst = _connect_rw(target)
    try:
        mode = str(dst.execute("PRAGMA journal_mode = DELETE").fetchone()[0]).lower()
        if mode != "delete":
            raise AgentMemError(f"could not make the copy {target} self-contained (mode {mode})")
        ok = dst.execute("PRAGMA quick_check").fetchone()[0]
        if ok != "ok":
            raise AgentMemError(f"the copy {target} fails SQLite's quick check: {ok}")
    finally:
        dst.close()
    with open(target, "rb+") as fh:
        os.fsync(fh.fileno())


def backup_library(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    force: bool = False,
    verify: bool = True,
) -> BackupResult:
    """Copy the library at ``source`` to the new file ``dest`` (see the module doc).

    Refuses when ``dest`` exists unless ``force``. With ``verify`` the copy is
    checked with :func:`~agentmem.check.check_path` and the report returned
    (a copy of a damaged library is still made: it is what there was).
    """
    src, dst = Path(source), Path(dest)
    _require_library_file(src, "the library")
    if _same_file(src, dst):
        raise AgentMemError(f"{dst} is the library itself; back it up to another file")
    if dst.is_dir():
        raise AgentMemError(f"{dst} is a folder; name the backup file")
    if not dst.parent.exists():
        raise AgentMemError(f"cannot create {dst}: folder {dst.parent} does not exist")
    if dst.exists() and not force:
        raise AgentMemError(f"{dst} already exists; pass --force to replace it")
    try:
        with _temp_beside(dst) as tmp:
            _copy_pages(src, tmp)
            if force:
                _remove_side_files(dst)  # a stale -wal must never be applied to the copy
            os.replace(tmp, dst)
    except sqlite3.Error as e:
        raise AgentMemError(f"could not back up {src}: {e}") from None
    _fsync_dir(dst.parent)
    report = check_path(dst) if verify else None
    return BackupResult(str(dst), dst.stat().st_size, report)


def restore_library(
    backup: str | os.PathLike[str],
    db: str | os.PathLike[str],
    *,
    force: bool = False,
) -> BackupResult:
    """Replace the library at ``db`` with the backup file ``backup`` (see the module doc).

    The backup must pass :func:`~agentmem.check.check_path` without errors
    (warnings, such as an older schema, are fine: the next open upgrades it).
    An existing library is first copied to ``<db>.before-restore``; if that file
    exists already, refuses unless ``force`` (which replaces it). Stop agents
    that write to the library first: what they write between the copy aside and
    the restore is in neither.
    """
    src, target = Path(backup), Path(db)
    _require_library_file(src, "the backup")
    if _same_file(src, target):
        raise AgentMemError(f"{src} is the library itself; nothing to restore")
    report = check_path(src)
    if not report.ok:
        lines = "; ".join(p.message for p in report.errors[:5])
        raise AgentMemError(
            f"the backup {src} fails its check, so it was not restored: {lines} "
            f"(run `agentmem check --db {src}` for everything)"
        )
    if target.is_dir():
        raise AgentMemError(f"{target} is a folder, not a library file")
    if not target.parent.exists():
        raise AgentMemError(f"cannot create {target}: folder {target.parent} does not exist")
    previous: str | None = None
    if target.exists():
        aside = Path(f"{target}{BEFORE_RESTORE_SUFFIX}")
        if aside.exists() and not force:
            raise AgentMemError(
                f"{aside} exists (from an earlier restore); move it away, or pass --force to "
                "replace it with the current library"
            )
        _set_aside(target, aside)
        previous = str(aside)
        try:
            _snapshot_into(src, target)
        except sqlite3.Error:
            _restore_by_rename(src, target)
    else:
        _restore_by_rename(src, target)
    after = check_path(target)
    return BackupResult(str(target), target.stat().st_size, after, previous)


def _set_aside(target: Path, aside: Path) -> None:
    """Copy the current library to ``aside``: consistently if SQLite can read it, else raw."""
    try:
        backup_library(target, aside, force=True, verify=False)
        return
    except AgentMemError:
        pass
    # Not readable as SQLite (that may be why it is being restored): keep its bytes as they are.
    with _temp_beside(aside) as tmp:
        shutil.copyfile(target, tmp)
        _remove_side_files(aside)
        os.replace(tmp, aside)
    for suffix in ("-wal",):
        side = Path(f"{target}{suffix}")
        if side.exists():
            shutil.copyfile(side, f"{aside}{suffix}")
            os.chmod(f"{aside}{suffix}", stat.S_IRUSR | stat.S_IWUSR)


def _restore_by_rename(src: Path, target: Path) -> None:
    """Copy the backup beside the library and rename it into place (new 0600 file)."""
    with _temp_beside(target) as tmp:
        _copy_pages(src, tmp)
        _remove_side_files(target)
        os.replace(tmp, target)
    _fsync_dir(target.parent)
