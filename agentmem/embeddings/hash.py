"""``hash``: deterministic hashed n-grams with no dependencies (unit tests, a fallback)."""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import ClassVar

from ..errors import AgentMemError
from .base import blank_vector, embed_nonblank

__all__ = ["HashEmbedder"]


class HashEmbedder:
    """Deterministic hashed n-gram embedder with no dependencies.

    Each text is lower-cased and its whitespace collapsed; its features are the
    character 3-, 4- and 5-grams of the text padded with one space, plus its
    word tokens (``[a-z0-9_]+``).  Every feature adds +1 or -1 to one of
    ``dims`` buckets chosen by CRC-32 (the same on every platform and Python
    version), and the sum is L2-normalised.

    It captures shared words and spellings only, not meaning: use it in unit
    tests and as a fallback when no real model can be installed.
    """

    #: Calibrated on ``tests/data/lesson_pairs.jsonl`` at the default ``dims``.
    DUP_THRESHOLD: ClassVar[float] = 0.22
    #: Calibrated on ``tests/data/task_pairs.jsonl`` at the default ``dims``.
    TASK_THRESHOLD: ClassVar[float] = 0.45

    def __init__(
        self,
        dims: int = 256,
        dup_threshold: float | None = None,
        task_threshold: float | None = None,
    ) -> None:
        """Create an embedder with ``dims`` buckets (at least 8)."""
        if not isinstance(dims, int) or isinstance(dims, bool) or dims < 8:
            raise AgentMemError(f"HashEmbedder dims must be an integer >= 8, got {dims!r}")
        self._dims = dims
        self._dup_threshold = self.DUP_THRESHOLD if dup_threshold is None else dup_threshold
        self._task_threshold = self.TASK_THRESHOLD if task_threshold is None else task_threshold

    @property
    def name(self) -> str:
        """Name that :func:`get_embedder` resolves back to this configuration."""
        return "hash" if self._dims == 256 else f"hash-{self._dims}"

    @property
    def model_id(self) -> str:
        """``hash-v1-c3to5w-<dims>``."""
        return f"hash-v1-c3to5w-{self._dims}"

    @property
    def dims(self) -> int:
        """Number of hash buckets."""
        return self._dims

    @property
    def dup_threshold(self) -> float:
        """Calibrated duplicate threshold (see the module docstring)."""
        return self._dup_threshold

    @property
    def task_threshold(self) -> float:
        """Calibrated similar-task threshold (see the module docstring)."""
        return self._task_threshold

    def _features(self, text: str) -> list[str]:
        low = " ".join(text.lower().split())
        padded = f" {low} "
        feats = [padded[i : i + n] for n in (3, 4, 5) for i in range(len(padded) - n + 1)]
        word: list[str] = []
        for ch in low:
            if ch.isalnum() or ch == "_":
                word.append(ch)
            elif word:
                feats.append("w:" + "".join(word))
                word = []
        if word:
            feats.append("w:" + "".join(word))
        return feats

    def _embed_one(self, text: str) -> list[float]:
        vec = [0.0] * self._dims
        dims = self._dims
        for feat in self._features(text):
            h = zlib.crc32(feat.encode("utf-8"))
            vec[h % dims] += 1.0 if h & 0x80000000 else -1.0
        norm = math.sqrt(sum(x * x for x in vec))
        if norm == 0.0:
            return blank_vector(dims)
        return [x / norm for x in vec]

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` (blank texts map to one fixed unit vector)."""
        return embed_nonblank(texts, self._dims, lambda ts: [self._embed_one(t) for t in ts])

    def __repr__(self) -> str:
        return f"HashEmbedder(dims={self._dims})"
