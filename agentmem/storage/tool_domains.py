"""The owner of table ``tool_domains``: the library's own tool-to-domain mapping.

Entries override :func:`agentmem.domains.domain_for`'s built-in rules for this
library. Writers run inside the caller's write transaction. Standard library only
(the prompt-hook path scopes its search with :func:`read`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["put", "read", "remove"]


def read(db: Any) -> dict[str, str]:
    """Every override: tool -> domain."""
    return {str(t): str(d) for t, d in db.execute("SELECT tool, domain FROM tool_domains")}


def put(db: Any, tool: str, domain: str) -> None:
    """Map ``tool`` to ``domain``."""
    db.execute(
        "INSERT INTO tool_domains (tool, domain) VALUES (?, ?) "
        "ON CONFLICT (tool) DO UPDATE SET domain = excluded.domain",
        [tool, domain],
    )


def remove(db: Any, tool: str) -> None:
    """Drop ``tool``'s override (nothing happens if it has none)."""
    db.execute("DELETE FROM tool_domains WHERE tool = ?", [tool])
