"""Where the library lives by default. Kept apart so the fast paths can import it cheaply."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_DB_ENV", "default_db_path", "default_state_dir"]

#: The environment variable that names the library file.
DEFAULT_DB_ENV = "AGENTMEM_DB"


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
