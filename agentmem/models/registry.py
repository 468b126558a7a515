"""Which text-model backends there are, and the model a spec names.

A backend is a :class:`ModelBackend`: whether it takes a spec, how to build the
model, and how its specs look (for the message about a spec nobody takes).
:func:`register` adds one after those already known; the built-ins
(:mod:`agentmem.models.builtin`) are registered first, the same way a plugin's
would be. :func:`get_model` asks them in that order:

1. the ``spec`` argument, if given;
2. else the ``AGENTMEM_MODEL`` environment variable, if set and not empty;
3. else the default packaged model, :data:`~agentmem.models.packaged.DEFAULT_MODEL`.

Nothing is loaded here: a local model loads on its first call.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .._registry import Registry
from ..errors import ModelError
from .base import MODEL_ENV, ModelBackend, TextModel

__all__ = ["ModelBackend", "backends", "forget_failures", "get_model", "register", "unregister"]


def _builtins(add: Callable[[ModelBackend], None]) -> None:
    from . import builtin

    builtin.register_builtins(add)


_REGISTRY: Registry[ModelBackend] = Registry("a model backend", _builtins)


def register(backend: ModelBackend) -> None:
    """Add a backend, asked after those registered before it (the built-ins first)."""
    _REGISTRY.register(backend)


def unregister(name: str) -> None:
    """Remove the backend called ``name`` (a plugin's); nothing if none is registered."""
    _REGISTRY.unregister(name)


def backends() -> tuple[ModelBackend, ...]:
    """The registered backends, in the order names are matched against them."""
    return _REGISTRY.backends()


def get_model(spec: str | None = None) -> TextModel:
    """The model for ``spec``, or for ``$AGENTMEM_MODEL``, or the default packaged one.

    See :mod:`agentmem.models` for the accepted specs. Nothing is loaded here: a
    local model loads on its first call. Raises :class:`~agentmem.errors.ModelError`
    for a spec that names nothing usable.
    """
    from .packaged import DEFAULT_MODEL

    if spec is None or not spec.strip():
        spec = os.environ.get(MODEL_ENV, "").strip() or DEFAULT_MODEL
    spec = spec.strip()
    known = backends()
    for b in known:
        if b.accepts(spec):
            return b.build(spec)
    usages = [b.usage for b in known]
    listed = ", ".join(usages[:-1]) + (", or " if len(usages) > 1 else "") + usages[-1]
    raise ModelError(f"cannot tell what model {spec!r} means; use {listed}")


def forget_failures() -> None:
    """Forget which models failed in this process (dead workers, unreachable servers),
    so that the next call tries again: for a long-lived process after a fix, and tests."""
    from . import openai_http, worker

    worker.forget_failures()
    openai_http.forget_unreachable()
