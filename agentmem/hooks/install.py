"""Installing agentmem's hooks into an agent's settings, and taking them out again.

Claude Code: agentmem's two hook entries (``UserPromptSubmit`` and ``Stop``, one
command each) are merged into ``settings.json``: everything else in the file is
kept, a backup of the file as it was is written beside it
(``settings.json.agentmem-backup``), and running it again changes nothing. An
entry is agentmem's when its command runs ``agentmem hooks run claude-code``.
Uninstalling removes only those entries; when the rest of the file is as the
backup holds it, the backup's bytes are written back (byte for byte), else the
file is written without agentmem's entries.

Codex 0.124 and later (:data:`CODEX_HOOKS_SINCE`): the same two entries, in the
same shape, go into ``hooks.json`` beside ``config.toml`` (``$CODEX_HOME``), with
the same backup and byte-for-byte uninstall; ``config.toml`` is not touched (an
agentmem ``notify`` left there by an older install is taken out). Older Codex:
the ``notify`` program of ``config.toml`` (Codex runs it after every turn)
becomes ``agentmem hooks run codex``. Codex has a single ``notify``; one that is
already set to another program is left alone, with a message.

The command a hook runs is ``<python> -m agentmem hooks run AGENT``, with the
absolute path of the Python that ran the install: it runs the same agentmem
whether or not its virtual environment is on the agent's ``PATH``.

A settings file that is a symbolic link is edited where it points (the link
stays); a project's settings whose real place is outside the project (a
symlinked ``.claude``) are refused.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from ..errors import AgentMemError
from ..files import SpecialFileError, read_regular
from ..jsonsafe import JSONInputError, loads, loads_toml

__all__ = [
    "BACKUP_SUFFIX",
    "CODEX_HOOKS_SINCE",
    "Change",
    "claude_settings_path",
    "codex_config_path",
    "codex_hooks_path",
    "codex_version",
    "hook_command",
    "install_claude_code",
    "install_codex",
    "install_codex_hooks",
    "is_ours",
    "program_version",
    "uninstall_claude_code",
    "uninstall_codex",
]

#: The backup of a settings file as it was before agentmem changed it.
BACKUP_SUFFIX = ".agentmem-backup"
#: Claude Code hook events agentmem answers, and their timeouts in seconds.
CLAUDE_EVENTS: Mapping[str, int] = {"UserPromptSubmit": 10, "Stop": 60}
#: Codex's hook events agentmem answers (the same payload and answer as Claude Code's).
CODEX_EVENTS: Mapping[str, int] = CLAUDE_EVENTS
#: The first Codex with hooks (``UserPromptSubmit``, ``Stop``) on by default.
CODEX_HOOKS_SINCE = (0, 124)
_MARK = "hooks run "


class HookInstallError(AgentMemError, ValueError):
    """A settings file agentmem cannot safely change."""


@attrs.frozen
class Change:
    """What an install or uninstall did to one file."""

    path: Path
    changed: bool
    lines: tuple[str, ...]
    backup: Path | None = None


def claude_settings_path(scope: str, directory: str | os.PathLike[str] | None = None) -> Path:
    """``settings.json`` of a scope: ``user`` (``~/.claude``), ``project`` or ``local``
    (``<directory>/.claude/settings.json`` or ``settings.local.json``)."""
    if scope == "user":
        base = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
        return Path(base) / "settings.json"
    if scope not in ("project", "local"):
        raise HookInstallError(f"scope must be user, project or local, not {scope!r}")
    from ..projects import project_of

    root = Path(project_of(directory or os.getcwd()) or os.getcwd())
    return root / ".claude" / ("settings.json" if scope == "project" else "settings.local.json")


def codex_config_path() -> Path:
    """Codex's ``config.toml``: ``$CODEX_HOME/config.toml``, else ``~/.codex/config.toml``."""
    base = os.environ.get("CODEX_HOME") or str(Path.home() / ".codex")
    return Path(base) / "config.toml"


def codex_hooks_path() -> Path:
    """Codex's user ``hooks.json``, beside its ``config.toml``."""
    return codex_config_path().with_name("hooks.json")


def codex_version(program: str = "codex") -> tuple[int, ...] | None:
    """The version ``codex --version`` reports (``codex-cli 0.171.0``), or None when
    there is no such program or it says nothing readable."""
    return program_version(shutil.which(program))


def program_version(exe: str | None) -> tuple[int, ...] | None:
    """The first ``N.N[.N]`` that ``EXE --version`` prints (Claude Code's ``2.1.332 (Claude
    Code)``, Codex's ``codex-cli 0.171.0``), or None when there is no program or nothing
    readable."""
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    return tuple(int(g) for g in m.groups() if g is not None) if m else None


def _agentmem_argv() -> list[str]:
    """How to run this agentmem from an agent's hook: this Python (absolute), ``-m agentmem``.

    Not the ``agentmem`` script on ``PATH``: that may be another install, or
    missing from the agent's ``PATH`` when the virtual environment is not active.
    """
    return [os.path.abspath(sys.executable), "-m", "agentmem"]


def hook_argv(
    agent: str, *, db: str | None = None, learn: bool = False, no_model: bool = False
) -> list[str]:
    """The command an agent's hook runs, as an argument list."""
    argv = [*_agentmem_argv(), "hooks", "run", agent]
    if db:
        argv += ["--db", os.path.abspath(os.path.expanduser(db))]
    if learn:
        argv.append("--learn")
        if no_model:
            argv.append("--no-model")
    return argv


def hook_command(agent: str, **kw: Any) -> str:
    """:func:`hook_argv` as one shell command line (Claude Code runs hooks through a shell)."""
    return shlex.join(hook_argv(agent, **kw))


def is_ours(command: str, agent: str) -> bool:
    """Whether a hook's ``command`` is agentmem's hook for ``agent`` (what ``hooks install``
    writes and ``uninstall`` removes; ``agentmem status`` reports it)."""
    return f"{_MARK}{agent}" in command and "agentmem" in command


def _is_ours(hook: Any, agent: str) -> bool:
    return (
        isinstance(hook, Mapping)
        and isinstance(hook.get("command"), str)
        and is_ours(hook["command"], agent)
    )


# -- files --------------------------------------------------------------------------------


def _read(path: Path) -> bytes | None:
    try:
        return read_regular(path)
    except FileNotFoundError:
        return None
    except SpecialFileError as e:
        raise HookInstallError(f"{e}: replace it with a file") from None


def _write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, keeping its permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def real_target(path: Path, within: Path | None = None) -> Path:
    """Where writing ``path`` really goes: the file a symbolic link points to.

    ``within`` (a project): the real place must be inside it, so a symlinked
    ``.claude`` or ``settings.json`` never leads agentmem out of the project.
    """
    real = Path(os.path.realpath(path))
    if path.is_symlink() and not path.exists():
        raise HookInstallError(
            f"{path} is a symbolic link to {os.readlink(path)}, which does not exist: "
            "agentmem does not create files through a dangling link; fix or remove it"
        )
    if within is not None:
        root = Path(os.path.realpath(within))
        if real != root and root not in real.parents:
            raise HookInstallError(
                f"{path} is really {real}, outside the project {root} (a symbolic link): "
                "agentmem does not follow it out of the project; use --scope user, or "
                "replace the link with a file"
            )
    return real


def _load_json(path: Path, data: bytes | None) -> dict[str, Any]:
    if data is None or not data.strip():
        return {}
    try:
        doc = loads(data, what=str(path))
    except JSONInputError as e:
        raise HookInstallError(f"{e}; fix it first") from None
    if not isinstance(doc, dict):
        raise HookInstallError(f"{path} holds a {type(doc).__name__}, not a JSON object")
    return doc


def _indent(data: bytes | None) -> int:
    m = re.search(rb"\n([ ]+)\"", data or b"")
    return len(m.group(1)) if m else 2


def _dump(doc: Mapping[str, Any], indent: int) -> bytes:
    return (json.dumps(doc, indent=indent, ensure_ascii=False) + "\n").encode("utf-8")


# -- Claude Code ----------------------------------------------------------------------------


def _event_groups(hooks: dict[str, Any], event: str, path: Path) -> list[Any]:
    groups = hooks.setdefault(event, [])
    if not isinstance(groups, list):
        raise HookInstallError(f"hooks.{event} in {path} is not a list")
    return groups


def _remove_ours(
    doc: dict[str, Any], agent: str, keep: Mapping[str, Any] | None = None
) -> list[str]:
    """Take agentmem's entries, and the containers left empty by that, out of ``doc``.

    An empty container that ``keep`` (the file before agentmem) also has stays.
    """
    removed: list[str] = []
    kept = keep.get("hooks") if isinstance(keep, Mapping) else None
    kept_events = kept if isinstance(kept, Mapping) else {}
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return removed
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        touched = False
        for group in list(groups):
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                continue
            ours = [h for h in inner if _is_ours(h, agent)]
            if not ours:
                continue
            touched = True
            removed += [f"removed {event} hook: {h['command']}" for h in ours]
            inner[:] = [h for h in inner if not _is_ours(h, agent)]
            if not inner:
                groups.remove(group)
        if touched and not groups and event not in kept_events:
            del hooks[event]
    if removed and not hooks and kept is None:
        del doc["hooks"]
    return removed


def merge_claude_hooks(
    doc: Mapping[str, Any],
    command: str,
    path: Path = Path("settings.json"),
    agent: str = "claude-code",
    events: Mapping[str, int] = CLAUDE_EVENTS,
) -> tuple[dict[str, Any], list[str]]:
    """``doc`` with agentmem's hook entries in it, and what changed (nothing: ``[]``).

    The shape is Claude Code's, which Codex's ``hooks.json`` shares: event, groups,
    handlers."""
    new = copy.deepcopy(dict(doc))
    hooks = new.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise HookInstallError(f"'hooks' in {path} is not a JSON object")
    changes: list[str] = []
    for event, timeout in events.items():
        want = {"type": "command", "command": command, "timeout": timeout}
        groups = _event_groups(hooks, event, path)
        ours = [
            h
            for g in groups
            if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for h in g["hooks"]
            if _is_ours(h, agent)
        ]
        if ours == [want]:
            continue
        for g in list(groups):
            inner = g.get("hooks") if isinstance(g, dict) else None
            if isinstance(inner, list) and any(_is_ours(h, agent) for h in inner):
                inner[:] = [h for h in inner if not _is_ours(h, agent)]
                if not inner:
                    groups.remove(g)
        groups.append({"hooks": [want]})
        changes.append(f"{'updated' if ours else 'added'} {event} hook: {command}")
    if not changes:
        return dict(doc), []
    return new, changes


def _link_note(given: Path, real: Path) -> tuple[str, ...]:
    return (f"{given} is a symbolic link: edited {real} in place",) if given != real else ()


def install_claude_code(
    path: Path,
    command: str,
    *,
    within: Path | None = None,
    agent: str = "claude-code",
    events: Mapping[str, int] = CLAUDE_EVENTS,
) -> Change:
    """Merge agentmem's hooks into the settings file ``path`` (see the module doc).

    ``within``: the project whose settings these are (see :func:`real_target`)."""
    given, path = path, real_target(path, within)
    data = _read(path)
    doc = _load_json(path, data)
    new, changes = merge_claude_hooks(doc, command, path, agent, events)
    if not changes:
        return Change(path, False, ("agentmem's hooks are installed already: nothing changed",))
    backup = _backup_path(path)
    has_ours = bool(_remove_ours(copy.deepcopy(doc), agent))
    if not has_ours or not backup.exists():  # the file as it was before agentmem
        _write(backup, data or b"")
    _write(path, _dump(new, _indent(data)))
    return Change(path, True, (*_link_note(given, path), *changes), backup)


def uninstall_claude_code(
    path: Path, *, within: Path | None = None, agent: str = "claude-code"
) -> Change:
    """Remove agentmem's hooks from ``path``; restore the backup's bytes when they match."""
    given, path = path, real_target(path, within)
    data = _read(path)
    backup = _backup_path(path)
    if data is None:
        return Change(path, False, (f"{path} does not exist: nothing to remove",))
    doc = _load_json(path, data)
    old = _read(backup)
    try:
        before = _load_json(path, old) if old is not None else None
    except HookInstallError:
        before = None
    removed = _remove_ours(doc, agent, keep=before)
    if not removed:
        return Change(path, False, ("no agentmem hooks in it: nothing changed",))
    lines = [*_link_note(given, path), *removed]
    if old is not None and before == doc:
        if old or given != path:
            _write(path, old)
            lines.append(f"restored {path} byte for byte from {backup}")
        else:
            path.unlink()
            lines.append(f"removed {path}: it did not exist before agentmem")
    else:
        _write(path, _dump(doc, _indent(data)))
        if old is not None:
            lines.append(f"{path} changed since agentmem was installed: kept those changes")
    if old is not None:
        backup.unlink()
    return Change(path, True, tuple(lines))


# -- Codex ------------------------------------------------------------------------------------

_CODEX_NOTE = "# agentmem: record each Codex turn (agentmem hooks uninstall codex removes this)"


def _toml_notify(data: bytes) -> Any:
    """The top-level ``notify`` of a config.toml, or None."""
    try:
        text = data.decode("utf-8")
        return loads_toml(text, what="config.toml").get("notify")
    except ImportError:  # Python 3.10: a top-level line is enough to know
        head = re.split(r"(?m)^\s*\[", text, maxsplit=1)[0]
        m = re.search(r"(?m)^\s*notify\s*=\s*(.+)$", head)
        return m.group(1) if m else None
    except UnicodeDecodeError as e:
        raise HookInstallError(f"config.toml is not UTF-8 (byte {e.start}); fix it first") from None
    except JSONInputError as e:
        raise HookInstallError(f"{e}; fix it first") from None


def _codex_lines(argv: Sequence[str]) -> bytes:
    array = ", ".join(json.dumps(a, ensure_ascii=False) for a in argv)
    return f"{_CODEX_NOTE}\nnotify = [{array}]\n".encode()


def _strip_codex(data: bytes) -> tuple[bytes, bool]:
    pattern = re.compile(re.escape(_CODEX_NOTE.encode()) + rb"\r?\nnotify = \[[^\n]*\]\r?\n")
    new, n = pattern.subn(b"", data, count=1)
    return new, n > 0


def install_codex(path: Path, argv: Sequence[str]) -> Change:
    """Set Codex's ``notify`` to agentmem's hook, at the top of ``config.toml``."""
    data = _read(path) or b""
    if not data:
        current = None
    else:
        try:
            current = _toml_notify(data)
        except UnicodeDecodeError:
            raise HookInstallError(f"{path} is not UTF-8 text") from None
    block = _codex_lines(argv)
    if data.startswith(block):
        return Change(path, False, ("agentmem's notify is installed already: nothing changed",))
    stripped, ours = _strip_codex(data)
    if current is not None and not ours:
        raise HookInstallError(
            f"{path} already sets notify = {current!r}; Codex runs one notify program, so "
            "agentmem leaves it alone: remove that line, or call "
            f"'{shlex.join(list(argv))} JSON' from your program"
        )
    if not ours:
        _write(_backup_path(path), data)
    _write(path, block + stripped)
    verb = "updated" if ours else "added"
    return Change(path, True, (f"{verb} notify: {shlex.join(list(argv))}",), _backup_path(path))


def uninstall_codex(path: Path) -> Change:
    """Remove agentmem's ``notify`` lines from ``config.toml`` (the rest stays byte for byte)."""
    data = _read(path)
    if data is None:
        return Change(path, False, (f"{path} does not exist: nothing to remove",))
    stripped, ours = _strip_codex(data)
    if not ours:
        return Change(path, False, ("no agentmem notify in it: nothing changed",))
    backup = _backup_path(path)
    old = _read(backup)
    lines = ["removed agentmem's notify"]
    if old is not None and not old and not stripped.strip():
        path.unlink()
        lines.append(f"removed {path}: it did not exist before agentmem")
    else:
        _write(path, stripped)
    if old is not None:
        backup.unlink()
    return Change(path, True, tuple(lines))


def install_codex_hooks(hooks_path: Path, config_path: Path, command: str) -> list[Change]:
    """Codex 0.124 and later: agentmem's ``UserPromptSubmit`` and ``Stop`` entries in
    ``hooks.json`` (merged, backed up, as for Claude Code), and an agentmem ``notify``
    that an older install left in ``config.toml`` taken out (the rest byte for byte)."""
    changes = [install_claude_code(hooks_path, command, agent="codex", events=CODEX_EVENTS)]
    old = uninstall_codex(config_path)
    if old.changed:
        changes.append(
            Change(old.path, True, ("removed agentmem's notify: the hooks record each turn",))
        )
    return changes
