"""Where the library lives by default. Kept apart so the fast paths can import it cheaply."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_DB_ENV", "default_db_path"]

#: The environment variable that names the library file.
DEFAULT_DB_ENV = "AGENTMEM_DB"


def default_db_path() -> Path:
    """``$AGENTMEM_DB``, else ``$XDG_DATA_HOME/agentmem/agentmem.db`` (``~/.local/share/...``)."""
    env = os.environ.get(DEFAULT_DB_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "agentmem" / "agentmem.db"
