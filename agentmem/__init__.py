"""agentmem: an agent's tool-use memory in one SQLite file.

Record trajectories, learn short experiences from groups of them with
training-free Agent-GRPO on a local model, and retrieve the experiences that
fit the next task. Start with :meth:`Memory.open`.
"""

from typing import Any

from .errors import (
    AgentMemError,
    BusyError,
    EmbeddingMismatchError,
    InvalidRecordError,
    ModelError,
    UndoConflictError,
    UnknownExperienceError,
    UnknownSessionError,
    UnknownTrajectoryError,
)
from .memory import LiveTrajectory, Memory, default_db_path
from .records import Experience, Feedback, Step, Trajectory
from .rewards import GroupStats, RewardWeights, group_stats

__all__ = [
    "AgentMemError",
    "BusyError",
    "EmbeddingMismatchError",
    "Experience",
    "Feedback",
    "GroupStats",
    "InvalidRecordError",
    "LiveTrajectory",
    "Memory",
    "ModelError",
    "RewardWeights",
    "Step",
    "Trajectory",
    "UndoConflictError",
    "UnknownExperienceError",
    "UnknownSessionError",
    "UnknownTrajectoryError",
    "default_db_path",
    "group_stats",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version

        return version("agentmem")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
