"""Deprecated: the text models moved to :mod:`agentmem.models`.

``agentmem.llm`` was the documented home of :func:`get_model`, the backends and
:func:`forget_failures`; user code and notebooks import them from here, so this
module stays as a plain re-export (no warning on import: it costs nothing and
breaks nobody). New code imports :mod:`agentmem.models`.
"""

from __future__ import annotations

from .models import (
    API_KEY_ENV,
    CACHE_ENV,
    DEFAULT_MODEL,
    MODEL_ENV,
    MODEL_NAME_ENV,
    PACKAGED_MODELS,
    Completion,
    LlamaCppModel,
    OpenAICompatibleModel,
    TextModel,
    default_model_path,
    default_threads,
    forget_failures,
    get_model,
    model_unavailable,
    packaged_model_path,
)

__all__ = [
    "API_KEY_ENV",
    "CACHE_ENV",
    "DEFAULT_MODEL",
    "MODEL_ENV",
    "MODEL_NAME_ENV",
    "PACKAGED_MODELS",
    "Completion",
    "LlamaCppModel",
    "OpenAICompatibleModel",
    "TextModel",
    "default_model_path",
    "default_threads",
    "forget_failures",
    "get_model",
    "model_unavailable",
    "packaged_model_path",
]
