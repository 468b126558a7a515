"""Files from outside, opened only when they are plain files: FIFOs, devices and sockets never.

Every reader of a path a user, a hook payload or a folder walk names (the importers,
``record``/``ingest`` from a file, the hooks' settings and log, the served log, the
team's token files, a project's ``.git`` file) opens it through :func:`open_regular`:

- the path is opened with ``O_NONBLOCK`` (opening a FIFO with no writer then returns
  at once instead of waiting forever; a plain file does not care), and ``O_NOCTTY``;
- the open descriptor is checked with ``fstat``: anything but a plain file is closed
  and refused with :class:`SpecialFileError`, so a file swapped for a FIFO between a
  ``stat`` and the ``open`` is refused too;
- the file is then read blocking, as any file.

:func:`is_regular` is the cheap check a folder walk uses to skip and count special
files before anything opens them. Standard library only; cheap to import.
"""

from __future__ import annotations

import os
import stat
from typing import IO, Any

from .errors import AgentMemError

__all__ = [
    "SpecialFileError",
    "is_regular",
    "kind_of",
    "open_regular",
    "read_regular",
    "read_text_regular",
]


class SpecialFileError(AgentMemError, OSError):
    """A path names a FIFO, a device, a socket or a folder where a plain file was expected."""


def kind_of(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words."""
    for test, name in (
        (stat.S_ISREG, "a file"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "a special file"


def is_regular(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a plain file (following symbolic links); False when it is
    missing or cannot be examined."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def open_regular(path: str | os.PathLike[str], mode: str = "rb", **kw: Any) -> IO[Any]:
    """``open(path, mode)`` for reading, refused with :class:`SpecialFileError` (an
    ``OSError``) when ``path`` is not a plain file; it never blocks on a FIFO."""
    if any(c in mode for c in "wax+"):
        raise ValueError("open_regular only reads")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SpecialFileError(f"{path} is {kind_of(st.st_mode)}, not a plain file; skipped")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return open(fd, mode, **kw)
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of the plain file ``path`` (at most ``limit``), or
    :class:`SpecialFileError` when it is not one."""
    with open_regular(path, "rb") as fh:
        return fh.read() if limit is None else fh.read(limit)


def read_text_regular(path: str | os.PathLike[str], encoding: str = "utf-8") -> str:
    """:func:`read_regular` decoded (errors raise ``UnicodeDecodeError``)."""
    return read_regular(path).decode(encoding)
