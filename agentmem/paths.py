"""Where the library lives by default. Kept apart so the fast paths can import it cheaply."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "DEFAULT_DB_ENV",
    "SERVE_ENV",
    "default_db_path",
    "default_state_dir",
    "serving_off",
]

#: The environment variable that names the library file.
DEFAULT_DB_ENV = "AGENTMEM_DB"
#: ``AGENTMEM_SERVE=off`` (or ``0``, ``no``, ``false``): the prompt hooks of every client
#: (``agentmem hooks run``'s ``UserPromptSubmit``, ``agentmem context``,
#: :func:`agentmem.context.context_text`) serve nothing and log nothing; the recording
#: hooks still record. ``practice eval`` sets it for its CLI agent's rollouts.
SERVE_ENV = "AGENTMEM_SERVE"
_OFF = frozenset({"off", "0", "no", "false"})


def serving_off() -> bool:
    """Whether :data:`SERVE_ENV` turns the prompt hooks off (an environment lookup only)."""
    return os.environ.get(SERVE_ENV, "").strip().lower() in _OFF


def default_db_path() -> Path:
    """``$AGENTMEM_DB``, else ``$XDG_DATA_HOME/agentmem/agentmem.db`` (``~/.local/share/...``)."""
    env = os.environ.get(DEFAULT_DB_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "agentmem" / "agentmem.db"


def default_state_dir() -> Path:
    """Where agentmem's hooks keep their log: ``$XDG_STATE_HOME/agentmem`` (``~/.local/state``)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "agentmem"
