"""agentmem: an agent's tool-use memory in one SQLite file.

Record trajectories, learn short experiences from groups of them with
training-free Agent-GRPO on a local model, and retrieve the experiences that
fit the next task. Start with :meth:`Memory.open`.

Names are imported on first use, so that ``import agentmem`` (and the prompt-hook
fast path of ``agentmem context``) stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from . import errors as _errors  # exception classes only: no imports of its own

if TYPE_CHECKING:
    from .errors import (
        AgentMemError,
        AlreadyClaimedError,
        BusyError,
        EmbeddingMismatchError,
        InvalidRecordError,
        ModelError,
        TeamError,
        TeamUnavailableError,
        UndoConflictError,
        UnknownExperienceError,
        UnknownSessionError,
        UnknownTrajectoryError,
    )
    from .memory import LiveTrajectory, Memory
    from .paths import default_db_path
    from .records import Experience, Feedback, Step, Trajectory
    from .rewards import GroupStats, RewardWeights, group_stats
    from .serving import Query, Served

__all__ = [
    "AgentMemError",
    "AlreadyClaimedError",
    "BusyError",
    "EmbeddingMismatchError",
    "Experience",
    "Feedback",
    "GroupStats",
    "InvalidRecordError",
    "LiveTrajectory",
    "Memory",
    "ModelError",
    "Query",
    "RewardWeights",
    "Served",
    "Step",
    "TeamError",
    "TeamUnavailableError",
    "Trajectory",
    "UndoConflictError",
    "UnknownExperienceError",
    "UnknownSessionError",
    "UnknownTrajectoryError",
    "default_db_path",
    "group_stats",
]

_HOME = {
    **dict.fromkeys(_errors.__all__, "errors"),
    "LiveTrajectory": "memory",
    "Memory": "memory",
    "default_db_path": "paths",
    **dict.fromkeys(["Experience", "Feedback", "Step", "Trajectory"], "records"),
    **dict.fromkeys(["GroupStats", "RewardWeights", "group_stats"], "rewards"),
    **dict.fromkeys(["Query", "Served"], "serving"),
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version

        return version("agentmem")
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
