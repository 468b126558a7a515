"""``agentmem browse``: the library in a web browser, through Datasette, read-only.

- :mod:`.queries`: the canned queries (pure SQL);
- :mod:`.metadata`: Datasette metadata from ``docs/schema.md`` (descriptions,
  hidden tables, facets, labels);
- :mod:`.app`: the read-only Datasette instance, its link plugin, and the server.

Datasette is an optional extra: ``pip install 'agentmem[browse]'``. Importing
this package does not import it; :func:`make_datasette` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import AgentMemError

__all__ = ["INSTALL_HINT", "make_datasette"]

INSTALL_HINT = "pip install 'agentmem[browse]'"


def make_datasette(path: str | Path, **settings: Any) -> Any:
    """A read-only Datasette over the library at ``path`` (see :mod:`agentmem.browse.app`).

    Raises :class:`~agentmem.errors.AgentMemError` when Datasette is not installed,
    the file does not exist, or it is not an agentmem library.
    """
    try:
        from . import app
    except ImportError as e:
        raise AgentMemError(
            f"agentmem browse needs Datasette 0.65, which is not installed ({e}); "
            f"install it with: {INSTALL_HINT}"
        ) from None
    return app.make_datasette(path, **settings)
