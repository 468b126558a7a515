"""The exception tree: every error agentmem raises derives from :class:`AgentMemError`.

Subclasses also derive from the builtin that fits, so ``except KeyError`` or
``except ValueError`` keeps working for callers who do not know agentmem.
Messages say what was wrong and what to do about it.
"""

from __future__ import annotations

__all__ = [
    "AgentMemError",
    "AlreadyClaimedError",
    "BusyError",
    "EmbeddingMismatchError",
    "InvalidRecordError",
    "ModelError",
    "ModelUnavailableError",
    "TeamError",
    "TeamRefusedError",
    "TeamUnavailableError",
    "UndoConflictError",
    "UnknownExperienceError",
    "UnknownSessionError",
    "UnknownTrajectoryError",
]


class AgentMemError(Exception):
    """Root of every error raised by agentmem."""


class InvalidRecordError(AgentMemError, ValueError):
    """A trajectory, step, feedback event or experience failed validation.

    ``where`` names the input line and field when the record came from a file.
    """

    def __init__(self, message: str, *, where: str | None = None) -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class UnknownTrajectoryError(AgentMemError, KeyError):
    """No trajectory has the given id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "unknown trajectory"


class UnknownExperienceError(AgentMemError, KeyError):
    """No live experience has the given id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown experience"


class UnknownSessionError(AgentMemError, KeyError):
    """No learning or curation session has the given id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown session"


class UndoConflictError(AgentMemError):
    """A later session touched experiences that the session to undo changed."""


class EmbeddingMismatchError(AgentMemError):
    """The library's vector index was built by another embedding model or dimension."""


class ModelError(AgentMemError, RuntimeError):
    """The text-generation model could not be loaded or called."""


class ModelUnavailableError(ModelError):
    """The model cannot be used for the rest of this process: its worker process died
    (SIGILL, SIGSEGV, the out-of-memory killer), hung past its timeout or could not
    load, or its server cannot be reached. The message says what happened and what to
    do; a learning session goes on without the model."""


class BusyError(AgentMemError):
    """Another process holds what this one needs (for example a learning session)."""


class TeamError(AgentMemError):
    """Sharing with a team went wrong: not joined, another embedder, a refused write."""


class TeamUnavailableError(TeamError, ConnectionError):
    """The team's primary cannot be reached (reads go on from the replica; writes wait)."""


class TeamRefusedError(TeamError, PermissionError):
    """A team primary refused this laptop's token: none, expired, revoked, or a member's
    token for what only the team's learner may do."""


class AlreadyClaimedError(TeamError):
    """Another learning session holds the task groups this one wanted to learn."""
