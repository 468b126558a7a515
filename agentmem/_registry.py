"""Backends of one kind (text models, embedders), asked in the order they were registered.

The built-ins are registered on first use, through the same :meth:`Registry.register`
a plugin calls; a plugin's backends are asked after them. Standard library only: the
prompt-hook path resolves its embedder through one of these.
"""

from __future__ import annotations

from _thread import allocate_lock  # threading.Lock, without importing threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

__all__ = ["Registry"]


class _Named(Protocol):
    @property
    def name(self) -> str: ...


B = TypeVar("B", bound=_Named)


class Registry(Generic[B]):
    """The backends of one kind. ``what`` names one in messages ("a model backend");
    ``builtins(add)`` adds the built-in backends, once, before anything else is read."""

    def __init__(self, what: str, builtins: Callable[[Callable[[B], None]], None]) -> None:
        self._what = what
        self._builtins = builtins
        self._backends: list[B] = []
        self._lock = allocate_lock()
        self._loaded = False

    def _load(self) -> None:
        with self._lock:
            if not self._loaded:
                self._loaded = True
                self._builtins(self._backends.append)

    def register(self, backend: B) -> None:
        """Add ``backend``, asked after those registered before it (the built-ins first).
        Raises ValueError if one of that name is registered already."""
        self._load()
        with self._lock:
            if any(b.name == backend.name for b in self._backends):
                raise ValueError(f"{self._what} named {backend.name!r} is registered already")
            self._backends.append(backend)

    def unregister(self, name: str) -> None:
        """Remove the backend called ``name`` (a plugin's, or a test's); nothing if none is."""
        self._load()
        with self._lock:
            self._backends[:] = [b for b in self._backends if b.name != name]

    def backends(self) -> tuple[B, ...]:
        """The registered backends, in the order they are asked."""
        self._load()
        return tuple(self._backends)
