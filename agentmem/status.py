"""What agentmem is doing on this machine: ``agentmem status`` and ``agentmem log``.

A user who installed the hooks sees nothing of them in the agent: this module answers
"is it on, is it working, what did it give my last prompts, what is waiting". It only
reads: the library, the agents' settings files, the hooks' log and the served log.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import attrs

from . import served as served_log
from .hooks.install import is_ours
from .hooks.log import fired_path, mark_fired
from .hooks.log import log_path as hooks_log_path
from .memory import Memory

__all__ = [
    "HookSite",
    "Pending",
    "fired_path",
    "hook_sites",
    "mark_fired",
    "pending",
    "plugin_enabled",
    "prompt_log",
    "status",
]

#: The plugin's name in this repository's marketplaces (plugins/agentmem).
PLUGIN = "agentmem"


@attrs.frozen
class HookSite:
    """One place an agent reads hooks from, and agentmem's entries there."""

    agent: str
    path: str
    installed: bool
    learning: bool = False
    library: str | None = None  # the --db the hook names; None: the default library
    events: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _commands(obj: Any) -> list[tuple[str, str]]:
    """(event, command) of every hook command in a Claude Code / Codex hooks object."""
    out: list[tuple[str, str]] = []
    hooks = obj.get("hooks") if isinstance(obj, dict) else None
    if not isinstance(hooks, dict):
        return out
    for event, entries in hooks.items():
        for entry in entries if isinstance(entries, list) else []:
            inner = entry.get("hooks") if isinstance(entry, dict) else None
            for h in inner if isinstance(inner, list) else [entry]:
                cmd = h.get("command") if isinstance(h, dict) else None
                if isinstance(cmd, str):
                    out.append((str(event), cmd))
    return out


def _site(agent: str, path: Path, commands: list[tuple[str, str]]) -> HookSite:
    ours = [(ev, c) for ev, c in commands if is_ours(c, agent)]
    lib = None
    for _ev, c in ours:
        m = re.search(r"--db\s+(?:'([^']+)'|(\S+))", c)
        if m:
            lib = m.group(1) or m.group(2)
    return HookSite(
        agent=agent,
        path=str(path),
        installed=bool(ours),
        learning=any("--learn" in c for _ev, c in ours),
        library=lib,
        events=tuple(sorted({ev for ev, _c in ours})),
    )


_MAX_SETTINGS = 4_000_000


def _json_file(path: Path) -> Any:
    """A settings file's JSON, read as every reader of outside files does (a plain file,
    bounded size and depth); None when it is missing, special, too large or not JSON."""
    from .files import read_regular
    from .jsonsafe import loads

    try:
        return loads(read_regular(path, _MAX_SETTINGS + 1), max_bytes=_MAX_SETTINGS)
    except (OSError, ValueError):
        return None


def hook_sites(directory: str | os.PathLike[str] | None = None) -> list[HookSite]:
    """Where Claude Code and Codex read hooks (user settings, this project's settings,
    Codex's hooks.json and its config.toml ``notify``), each with agentmem's entries."""
    from .files import read_text_regular
    from .hooks.install import claude_settings_path, codex_config_path, codex_hooks_path

    sites: list[HookSite] = []
    paths = [claude_settings_path("user")]
    with contextlib.suppress(Exception):  # no project here
        paths += [claude_settings_path(s, directory) for s in ("project", "local")]
    for p in paths:
        data = _json_file(p) or {}
        sites.append(_site("claude-code", p, _commands(data)))
        enabled = data.get("enabledPlugins") if isinstance(data, dict) else None
        if isinstance(enabled, dict) and any(
            str(k).startswith(PLUGIN + "@") and v for k, v in enabled.items()
        ):
            sites.append(_plugin_site("claude-code", p))
    hooks_json = codex_hooks_path()
    sites.append(_site("codex", hooks_json, _commands(_json_file(hooks_json) or {})))
    config = codex_config_path()
    try:
        text = read_text_regular(config)
    except (OSError, ValueError):
        text = ""
    notify = [("notify", line) for line in text.splitlines() if line.strip().startswith("notify")]
    sites.append(_site("codex", config, notify))
    if re.search(rf'^\[plugins\."{PLUGIN}@[^"]+"\]\s*\n\s*enabled\s*=\s*true', text, re.M):
        sites.append(_plugin_site("codex", config))
    return sites


def _plugin_site(agent: str, path: Path) -> HookSite:
    return HookSite(
        agent=agent,
        path=f"{path} (plugin {PLUGIN})",
        installed=True,
        learning=True,
        events=("Stop", "UserPromptSubmit"),
    )


def plugin_enabled(agent: str) -> bool:
    """Whether agentmem's plugin is enabled for ``agent`` (its hooks then come from it)."""
    return any(s.agent == agent and "(plugin " in s.path for s in hook_sites())


# -- when the hooks last fired -----------------------------------------------------------


def _last_fired() -> dict[str, str]:
    from .paths import default_state_dir

    out: dict[str, str] = {}
    folder = default_state_dir() / "fired"
    try:
        for p in sorted(folder.iterdir()):
            out[p.name] = _iso(p.stat().st_mtime)
    except OSError:
        pass
    return out


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")


def _hook_errors(since_days: float = 7.0) -> tuple[int, str | None]:
    """Lines the hooks wrote to their log in the last ``since_days`` days, and the last one."""
    path = hooks_log_path()
    try:
        data = path.read_bytes()[-200_000:]
    except OSError:
        return 0, None
    cutoff = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - since_days * 86400))
    lines = [ln for ln in data.decode("utf-8", "replace").splitlines() if ln[:19] >= cutoff]
    return len(lines), (lines[-1][:300] if lines else None)


# -- runs waiting ------------------------------------------------------------------------

_LEFT = re.compile(r"open for (\d+) s more")


@attrs.frozen
class Pending:
    """Runs waiting for their acceptance window (a correction may still come)."""

    runs: int
    seconds: int  # until the last of them is ready

    @property
    def ready_at(self) -> str:
        at = datetime.now(timezone.utc) + timedelta(seconds=self.seconds)
        return at.astimezone().strftime("%H:%M:%S")

    def sentence(self) -> str:
        if not self.runs:
            return "no run is waiting"
        return (
            f"{self.runs} run(s) wait for their 120 s correction window; "
            f"all are ready in {self.seconds} s (at {self.ready_at})"
        )


def pending(mem: Memory) -> Pending:
    """The runs whose acceptance is still open, and when the last one closes."""
    runs, left = set(), 0
    for g in mem.groups():
        for m in g.members:
            if m.acceptance.value is None:
                runs.add(m.id)
                hit = _LEFT.search(m.acceptance.reason)
                if hit:
                    left = max(left, int(hit.group(1)))
    return Pending(len(runs), left)


# -- the whole picture -------------------------------------------------------------------


def _held_for_review(mem: Memory) -> int:
    """Lessons held until a person approves them (``agentmem review``)."""
    return mem.waiting_review()


def status(mem: Memory, directory: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Everything ``agentmem status`` shows, as plain values."""
    stats = mem.stats()
    sessions = mem.sessions()
    learned = [s for s in sessions if s.get("kind") in (None, "learn")] or sessions
    last_learn = learned[-1] if learned else None
    imports = mem.recent_imports(limit=1)
    errors, last_error = _hook_errors()
    path = str(mem.path)
    writable = os.access(path, os.W_OK) if os.path.exists(path) else None
    wait = pending(mem)
    return {
        "library": {
            "path": path,
            "writable": writable,
            "bytes": os.path.getsize(path) if os.path.exists(path) else 0,
            "lessons": stats["experiences"],
            "runs": stats.get("trajectories", 0),
        },
        "hooks": [s.as_dict() for s in hook_sites(directory)],
        "last_fired": _last_fired(),
        "last_import": imports[0]["imported_at"] if imports else None,
        "last_learn": None
        if last_learn is None
        else {k: last_learn.get(k) for k in ("id", "started_at", "finished_at", "status")},
        "waiting": {"runs": wait.runs, "ready_in_seconds": wait.seconds},
        "hook_errors_7d": errors,
        "last_hook_error": last_error,
        "held_for_review": _held_for_review(mem),
        "model": "chosen" if mem.model_chosen else "none (lessons phrased from the data)",
    }


def _withheld(line: dict[str, Any]) -> dict[int, str]:
    """A served-log line's withheld lessons: id -> the filter's reason."""
    out = {}
    for k, reason in (line.get("withheld") or {}).items():
        if k.isdigit() and 0 < int(k) < 2**63:
            out[int(k)] = reason
    return out


def _ids_of(line: dict[str, Any]) -> set[int]:
    """Every lesson a served-log line names: served, held out or withheld."""
    return {*line["served"], *line["held"], *_withheld(line)}


def prompt_log(
    mem: Memory, *, limit: int = 20, project: str | None = None, lesson: int | None = None
) -> list[dict[str, Any]]:
    """The last ``limit`` prompts that were given lessons (or had some held out or
    withheld), newest last, each with the lessons' ids and texts, why each fitted, what
    the holdout kept back and what a serving filter withheld and why; with ``lesson``,
    only the prompts that lesson was served to, held out of or withheld from."""
    path = served_log.log_path(mem.path or "")
    try:
        size = os.path.getsize(path)
    except OSError:
        return []
    start = max(0, size - 4_000_000)
    lines, _end, _bad = served_log.read(path, start, limit=size - start)
    rows = [
        ln
        for ln in lines
        if (project is None or ln["project"] == project)
        and (lesson is None or lesson in _ids_of(ln))
    ]
    rows = rows[-limit:]
    ids = {i for ln in rows for i in _ids_of(ln)}
    texts: dict[int, str | None] = {}
    for i in ids:
        try:
            texts[i] = mem.get_experience(i).text
        except Exception:
            texts[i] = None  # removed since
    out = []
    for ln in rows:
        why = ln.get("why") or {}
        withheld = _withheld(ln)
        out.append(
            {
                "at": ln["at"],
                "route": ln["route"],
                "project": ln["project"],
                "session": ln["session"],
                "served": [
                    {"id": i, "text": texts.get(i), "why": why.get(str(i))} for i in ln["served"]
                ],
                "held_out": [{"id": i, "text": texts.get(i)} for i in ln["held"]],
                "withheld": [
                    {"id": i, "text": texts.get(i), "why": r} for i, r in withheld.items()
                ],
                "team": list(ln.get("team") or []),
            }
        )
    return out
