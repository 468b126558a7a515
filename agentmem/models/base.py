"""What agentmem needs of a text model: :class:`TextModel`, and one :class:`Completion`.

A text model only phrases and compresses lessons that the data derived (see
:mod:`agentmem.models`); every backend (one a module beside this one) implements
this protocol, and :mod:`agentmem.models.registry` turns a spec into one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol, runtime_checkable

import attrs

__all__ = ["MODEL_ENV", "Completion", "ModelBackend", "TextModel", "model_unavailable"]

#: Environment variable read by :func:`agentmem.models.get_model` when no spec is given.
MODEL_ENV = "AGENTMEM_MODEL"


@attrs.frozen
class Completion:
    """One generated text and what it cost.

    ``prompt_tokens`` and ``completion_tokens`` are as the backend counted them
    (0 when an OpenAI-compatible server does not report usage); ``seconds`` is the
    wall-clock time of the call, including a first-call model load.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float


@runtime_checkable
class TextModel(Protocol):
    """A model that answers an instruction-style prompt with text.

    The backend applies the model's chat template when it has one (instruction
    tuned models) and sends the prompt as plain text otherwise (base models).
    Generation stops at ``max_tokens``, at the end of the turn, or before the
    first of ``stop``; the stop string is not part of the returned text.
    """

    model_id: str

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int = 128,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
    ) -> Completion:
        """Generate a continuation or answer for ``prompt``."""
        ...


class ModelBackend(NamedTuple):
    """A kind of text model: ``accepts(spec)`` says whether ``build(spec)`` makes it;
    ``usage`` says how its specs look (``a path to a .gguf file``)."""

    name: str
    accepts: Callable[[str], bool]
    build: Callable[[str], TextModel]
    usage: str


def model_unavailable(model: object) -> str | None:
    """Why ``model`` is not asked in this process (its worker died, its server was
    unreachable), or None when it may be called."""
    why = getattr(model, "unavailable", None)
    return why if isinstance(why, str) else None
