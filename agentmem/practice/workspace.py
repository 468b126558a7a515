"""A fresh workspace for every rollout, so rollouts never see each other.

A task in a git repository gets a detached worktree at its commit (``git worktree add
--detach``: fast, and the user's own checkout is never touched); a task in a plain
folder gets a copy of it. Either lives in a temporary folder of its own and is removed
when the rollout is over (the worktree deregistered too), unless ``keep``.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from ..errors import AgentMemError
from .types import Task

__all__ = ["WorkspaceError", "prune", "workspace"]

#: The prefix of every rollout's temporary folder.
PREFIX = "agentmem-practice-"


class WorkspaceError(AgentMemError):
    """A rollout's workspace could not be made (git refused, the copy failed)."""


#: One git worktree command at a time in this process: rollouts run at once (``--jobs``)
#: add and remove worktrees of one repository, and git's own locks refuse a second writer.
_GIT = threading.Lock()


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    with _GIT:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=300
        )


@contextlib.contextmanager
def workspace(task: Task, *, keep: bool = False, root: Path | None = None) -> Iterator[Path | None]:
    """A new folder holding ``task``'s starting point (None for a task without one, a
    BFCL task), removed afterwards unless ``keep``. ``root``: where the temporary folders
    go (default: the system's)."""
    if task.repo is None:
        yield None
        return
    tmp = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{_safe(task.id)}-", dir=root)).resolve()
    ws = tmp / "ws"
    git = task.commit is not None
    try:
        if git:
            p = _git(
                task.repo, "worktree", "add", "--detach", "--quiet", str(ws), task.commit or ""
            )
            if p.returncode != 0:
                raise WorkspaceError(
                    f"git worktree add in {task.repo} at {task.commit} failed: "
                    f"{p.stderr.strip()[:300]}"
                )
        else:
            try:
                shutil.copytree(task.repo, ws, symlinks=True)
            except (OSError, shutil.Error) as e:
                raise WorkspaceError(f"cannot copy {task.repo} for a rollout: {e}") from None
        yield ws
    finally:
        if not keep:
            _remove(task.repo, ws, tmp, git)


def _remove(repo: Path, ws: Path, tmp: Path, git: bool) -> None:
    if git and ws.exists():
        p = _git(repo, "worktree", "remove", "--force", "--force", str(ws))
        if p.returncode != 0:
            shutil.rmtree(ws, ignore_errors=True)
            _git(repo, "worktree", "prune")
    shutil.rmtree(tmp, ignore_errors=True)


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in text)[:40]


def prune(task: Task) -> None:
    """Forget the worktrees of ``task``'s repository whose folders are gone (a killed
    practice's, once the system cleaned its temporary folder): ``git worktree prune``,
    which never touches a worktree that still exists."""
    if task.repo is not None and task.commit is not None:
        _git(task.repo, "worktree", "prune")
