"""A practice's tasks, read from a TOML file of ``[[task]]`` tables.

::

    [[task]]
    id = "notes-summary"                      # letters, digits, . _ : -
    prompt = "Copy the project notes into SUMMARY.txt"
    repo = "."                                # a git repository or a folder (relative: here)
    commit = "HEAD"                           # git only; resolved once, when the file is read
    check = "test -s SUMMARY.txt && diff -q SUMMARY.txt docs/notes.txt"
    split = "train"                           # or "heldout"; absent: --heldout decides
    timeout = 300                             # seconds per rollout (default 600)

A BFCL v4 multi-turn task has ``bfcl = "multi_turn_base_12"`` and needs no ``repo`` or
``check``; without a ``prompt`` its prompt is its BFCL user turns.

The whole file is checked before anything runs: any mistake (an unknown key, a
missing prompt, two tasks with one id, a repository that is not there, a commit git does
not know) is reported with the task's position and nothing is run.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InvalidRecordError
from ..files import SpecialFileError, read_regular
from ..jsonsafe import JSONInputError, loads_toml
from .types import SPLITS, Split, Task

__all__ = ["MAX_TASKS", "TaskFileError", "heldout_by_hash", "load_tasks"]

#: Most tasks one file may hold (a practice runs G rollouts of each).
MAX_TASKS = 10_000
#: Largest task file read.
MAX_BYTES = 4 * 1024 * 1024
#: Longest rollout allowed (seconds).
MAX_TIMEOUT_S = 24 * 3600.0
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,99}")
_KEYS = frozenset(
    {"id", "prompt", "split", "repo", "commit", "check", "bfcl", "timeout", "project"}
)


class TaskFileError(InvalidRecordError):
    """A task file that cannot be practised: the message says where and what."""


def heldout_by_hash(task_id: str, fraction: float) -> bool:
    """Whether the task ``task_id`` falls in the held-out ``fraction`` (a stable hash of
    its id: the same tasks are held out on every machine and every run)."""
    h = int.from_bytes(hashlib.sha256(task_id.encode("utf-8")).digest()[:8], "big")
    return h / 2.0**64 < fraction


def load_tasks(path: str | os.PathLike[str], *, heldout: float | None = None) -> list[Task]:
    """The tasks of the TOML file ``path``, in file order.

    ``heldout``: the share of the tasks without a ``split`` of their own that are held
    out (chosen by :func:`heldout_by_hash`); None or 0 puts them all in ``train``.
    Raises :class:`TaskFileError` on any mistake, naming the task and the key.
    """
    if heldout is not None and not 0 <= heldout < 1:
        raise TaskFileError(f"--heldout must be a fraction in [0, 1), not {heldout}")
    where = Path(path)
    try:
        raw = read_regular(where, MAX_BYTES + 1)
    except (SpecialFileError, OSError) as e:
        raise TaskFileError(f"cannot read the task file {where}: {e}") from None
    if len(raw) > MAX_BYTES:
        raise TaskFileError(f"{where} is larger than {MAX_BYTES // 1024 // 1024} MiB")
    try:
        doc = loads_toml(raw.decode("utf-8"), what=str(where))
    except UnicodeDecodeError:
        raise TaskFileError(f"{where} is not UTF-8 text") from None
    except JSONInputError as e:
        raise TaskFileError(str(e)) from None
    extra = sorted(set(doc) - {"task"})
    if extra:
        raise TaskFileError(f"{where}: unknown top-level key(s) {', '.join(extra)}; use [[task]]")
    items = doc.get("task")
    if not isinstance(items, list) or not items:
        raise TaskFileError(f"{where} holds no [[task]] table")
    if len(items) > MAX_TASKS:
        raise TaskFileError(f"{where} holds {len(items)} tasks; at most {MAX_TASKS}")
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for n, item in enumerate(items, 1):
        task = _task(item, n, where.parent.absolute(), heldout)
        if task.id in seen:
            raise TaskFileError(f"task {n}: id {task.id!r} is also task {seen[task.id]}'s")
        seen[task.id] = n
        tasks.append(task)
    return tasks


def _task(item: Any, n: int, base: Path, heldout: float | None) -> Task:
    if not isinstance(item, Mapping):
        raise TaskFileError(f"task {n} is not a table")
    unknown = sorted(set(item) - _KEYS)
    if unknown:
        raise TaskFileError(
            f"task {n}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_KEYS))})"
        )
    tid = item.get("id")
    if not isinstance(tid, str) or not _ID.fullmatch(tid):
        raise TaskFileError(
            f"task {n}: id must be 1 to 100 letters, digits, '.', '_', ':' or '-', "
            f"starting with a letter or digit, not {tid!r}"
        )
    label = f"task {n} ({tid})"
    prompt = item.get("prompt")
    if prompt is None and isinstance(item.get("bfcl"), str):
        prompt = _bfcl_prompt(item["bfcl"], label)
    if not isinstance(prompt, str) or not prompt.strip():
        raise TaskFileError(f"{label}: prompt must be non-empty text")
    if "\x00" in prompt:
        raise TaskFileError(f"{label}: prompt holds a NUL character")
    split = _split(item, label, tid, heldout)
    timeout = item.get("timeout", 600)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TaskFileError(f"{label}: timeout must be a number of seconds, not {timeout!r}")
    if not 0 < timeout <= MAX_TIMEOUT_S:
        raise TaskFileError(f"{label}: timeout must be above 0 and at most {MAX_TIMEOUT_S:.0f} s")
    texts = {}
    for key in ("repo", "commit", "check", "bfcl", "project"):
        value = item.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise TaskFileError(f"{label}: {key} must be non-empty text, not {value!r}")
        texts[key] = value
    if texts["bfcl"] is None and (texts["repo"] is None or texts["check"] is None):
        raise TaskFileError(
            f"{label}: needs repo (where each rollout starts) and check (the command "
            "whose exit status 0 is success), or bfcl (a BFCL multi-turn id)"
        )
    repo = None if texts["repo"] is None else _repo(base, texts["repo"], label)
    commit = None
    if repo is not None and _is_git(repo):
        commit = _resolve(repo, texts["commit"] or "HEAD", label)
    elif texts["commit"] is not None:
        raise TaskFileError(f"{label}: commit is given but {repo} is not a git repository")
    return Task(
        id=tid,
        prompt=prompt,
        split=split,
        repo=repo,
        commit=commit,
        check=texts["check"],
        bfcl=texts["bfcl"],
        timeout_s=float(timeout),
        project=texts["project"],
    )


def _bfcl_prompt(bfcl_id: str, label: str) -> str:
    """A BFCL task's own user turns, the prompt of a BFCL task given without one (what
    its lessons are learned and served for)."""
    from .bfcl import BfclUnavailable, to_task

    try:
        return to_task(bfcl_id.strip()).prompt
    except BfclUnavailable as e:
        raise TaskFileError(f"{label}: no prompt, and {e}") from None


def _split(item: Mapping[str, Any], label: str, tid: str, heldout: float | None) -> Split:
    split = item.get("split")
    if split is None:
        return "heldout" if heldout and heldout_by_hash(tid, heldout) else "train"
    if split not in SPLITS:
        raise TaskFileError(f"{label}: split must be one of {', '.join(SPLITS)}, not {split!r}")
    return "heldout" if split == "heldout" else "train"


def _repo(base: Path, given: str, label: str) -> Path:
    path = Path(given).expanduser()
    path = (base / path if not path.is_absolute() else path).resolve()
    if not path.is_dir():
        raise TaskFileError(f"{label}: repo {given!r} is not a folder ({path})")
    return path


def _is_git(path: Path) -> bool:
    return (path / ".git").exists()


def _resolve(repo: Path, commit: str, label: str) -> str:
    """``commit`` as a full hash, or :class:`TaskFileError`."""
    if commit.startswith("-"):
        raise TaskFileError(f"{label}: commit {commit!r} is not a revision")
    try:
        p = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise TaskFileError(f"{label}: cannot run git in {repo}: {e}") from None
    sha = p.stdout.strip()
    if p.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40,64}", sha):
        raise TaskFileError(f"{label}: {repo} has no commit {commit!r}")
    return sha
