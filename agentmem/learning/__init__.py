"""Agent-GRPO learning: Stage 1 digests and summaries, Stage 2 evidence and operations,
Stage 3 consolidation, and the session that applies them atomically."""

from .ops import Operation, parse_operations
from .session import LearnOptions, LearnReport, learn

__all__ = ["LearnOptions", "LearnReport", "Operation", "learn", "parse_operations"]
