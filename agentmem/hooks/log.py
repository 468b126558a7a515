"""The hooks' log: one file in the state directory, kept under about 1 MB.

A hook never fails an agent's turn: what goes wrong is written here
(``~/.local/state/agentmem/hooks.log``), redacted, with one line on standard error.
Imports nothing heavy: the prompt hook writes to it (the redactor is imported only
when something is logged).
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from pathlib import Path

__all__ = ["LOG_NAME", "fired_path", "log", "log_path", "mark_fired"]

LOG_NAME = "hooks.log"
_LOG_LIMIT = 1_000_000


def log_path() -> Path:
    """The hooks' log file."""
    from ..paths import default_state_dir

    return default_state_dir() / LOG_NAME


def log(message: str) -> None:
    """Append a timestamped line (or block) to the log, redacted (an error may quote a
    prompt or a payload), keeping the log under about 1 MB."""
    from ..redact import redact  # not on the prompt hook's path: only when it logs

    message = redact(message)
    path = log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        if path.stat().st_size > _LOG_LIMIT and stat.S_ISREG(path.stat().st_mode):
            tail = path.read_bytes()[-_LOG_LIMIT // 2 :]
            path.write_bytes(tail[tail.find(b"\n") + 1 :])
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    # O_NONBLOCK: a FIFO put where the log goes fails at once (or is refused below)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
    fd = os.open(path, flags, 0o600)  # it may quote prompts
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a plain file: the hooks' log is not written")
    os.set_blocking(fd, True)
    with open(fd, "a", encoding="utf-8", errors="replace") as fh:
        fh.write(f"{stamp} [{os.getpid()}] {message}\n")


def fired_path(agent: str, event: str) -> Path:
    """The file whose modification time says when a hook of ``agent`` last ran ``event``
    (``agentmem status`` reads it)."""
    from ..paths import default_state_dir

    safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in f"{agent}-{event}")[:60]
    return default_state_dir() / "fired" / safe


def mark_fired(agent: str, event: str) -> None:
    """Note that a hook ran: one small file's time. Never fails the hook."""
    with contextlib.suppress(OSError):
        p = fired_path(agent, event)
        p.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        os.utime(p)
