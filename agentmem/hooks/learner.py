"""The detached learner a Stop hook starts with ``--learn``: wait, then one learning session.

New trajectories are pending for the acceptance window (120 s), so the learner
first waits that long (``AGENTMEM_LEARN_DELAY`` seconds, default 130), then runs
``agentmem learn`` on the library. One waiting learner at a time: its process id
is kept in ``learner.pid`` beside the hooks' log, and a Stop while it waits starts
no other. A learning session already running elsewhere makes it log and exit (the
library's learning lock).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["DEFAULT_DELAY", "pid_path", "spawn"]

#: Seconds the learner waits: the acceptance window and a margin.
DEFAULT_DELAY = 130.0


def pid_path() -> Path:
    from ..paths import default_state_dir

    return default_state_dir() / "learner.pid"


def _alive(pid: int) -> bool:
    from ..storage.journal import process_alive

    return process_alive(pid)


def _waiting() -> int | None:
    try:
        pid = int(pid_path().read_text().strip() or "0")
    except (OSError, ValueError):
        return None
    return pid if pid > 0 and _alive(pid) else None


def spawn(*, db: str | None, no_model: bool = False) -> int | None:
    """Start the learner in its own session, unless one is waiting; returns its pid."""
    if _waiting() is not None:
        return None
    from .log import log, log_path

    delay = os.environ.get("AGENTMEM_LEARN_DELAY", str(DEFAULT_DELAY))
    cmd = [sys.executable, "-m", "agentmem.hooks.learner", "--delay", delay]
    if db:
        cmd += ["--db", db]
    if no_model:
        cmd.append("--no-model")
    path = log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
        )
    pid_path().write_text(str(proc.pid))
    log(f"started learner {proc.pid}: learns in {delay} s")
    return proc.pid


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m agentmem.hooks.learner")
    p.add_argument("--delay", type=float, default=DEFAULT_DELAY)
    p.add_argument("--db")
    p.add_argument("--no-model", action="store_true")
    args = p.parse_args(argv)
    from .log import log

    try:
        time.sleep(max(0.0, args.delay))
        from ..errors import BusyError
        from ..memory import Memory

        with Memory.open(args.db) as mem:
            try:
                report = mem.learn(use_model=False if args.no_model else None)
            except BusyError as e:
                log(f"learner: {e}")
                return 0
        log(
            f"learner: session {report.session_id}: {report.groups_used} groups, "
            f"{len(report.applied)} operations applied"
        )
    except Exception as e:
        log(f"learner failed: {type(e).__name__}: {e}")
        return 1
    finally:
        with contextlib.suppress(OSError, ValueError):
            if int(pid_path().read_text().strip() or "0") == os.getpid():
                pid_path().unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
