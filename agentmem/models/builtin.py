"""The built-in text-model backends, registered as a plugin registers its own:
packaged models by short name, GGUF files run by llama.cpp, and OpenAI-compatible
servers by URL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import ModelError
from . import llama_cpp, openai_http, packaged
from .base import ModelBackend, TextModel

__all__ = ["register_builtins"]

_URL = ("http://", "https://")


def _packaged(spec: str) -> TextModel:
    key = spec.lower()
    return llama_cpp.LlamaCppModel(packaged.packaged_model_path(key), model_id=key)


def _is_gguf(spec: str) -> bool:
    if spec.lower().startswith(_URL):
        return False
    path = Path(spec).expanduser()
    return path.suffix.lower() == ".gguf" or path.is_file()


def _gguf(spec: str) -> TextModel:
    path = Path(spec).expanduser()
    if not path.is_file():
        raise ModelError(f"model file {path} does not exist")
    return llama_cpp.LlamaCppModel(path)


def register_builtins(register: Callable[[ModelBackend], None]) -> None:
    """Register the built-in backends with ``register``."""
    register(
        ModelBackend(
            "packaged",
            lambda spec: spec.lower() in packaged.PACKAGED_MODELS,
            _packaged,
            f"a packaged model name ({', '.join(sorted(packaged.PACKAGED_MODELS))})",
        )
    )
    register(ModelBackend("gguf", _is_gguf, _gguf, "a path to a .gguf file"))
    register(
        ModelBackend(
            "openai",
            lambda spec: spec.lower().startswith(_URL),
            openai_http.server_model,
            "an http(s):// URL of an OpenAI-compatible server such as http://127.0.0.1:8080/v1",
        )
    )
