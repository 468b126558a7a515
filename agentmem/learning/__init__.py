"""Agent-GRPO learning: Stage 1 digests and summaries, Stage 2 evidence and operations,
Stage 3 consolidation, and the session that applies them atomically."""

from typing import Any

from ..records import Operation
from .ops import parse_operations

__all__ = ["LearnOptions", "LearnReport", "Operation", "learn", "parse_operations"]


def __getattr__(name: str) -> Any:
    # The session pulls in storage and retrieval: load it on first use only.
    if name in ("LearnOptions", "LearnReport", "learn"):
        from . import session

        return getattr(session, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
