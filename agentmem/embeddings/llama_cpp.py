"""``llama-cpp:<path.gguf>``: any GGUF embedding model through ``llama-cpp-python``, in a
worker process (:mod:`agentmem.models.worker`) by default."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import AgentMemError
from . import base
from .base import MODELS, cached_model, check_texts, embed_nonblank, rows_to_unit_lists

__all__ = ["LlamaCppEmbedder"]

_LLAMA_POOLING_NONE = 0  # llama_cpp.LLAMA_POOLING_TYPE_NONE

_LLAMA_CLEANUP_REGISTERED = False


def _close_llama_models_at_exit() -> None:
    """Close cached llama.cpp models before interpreter teardown (once per process).

    Left to ``Llama.__del__`` during teardown they print ignored tracebacks.
    """
    global _LLAMA_CLEANUP_REGISTERED
    if _LLAMA_CLEANUP_REGISTERED:
        return
    _LLAMA_CLEANUP_REGISTERED = True

    def close_all() -> None:
        for key in [k for k in list(MODELS) if k and k[0] == "llama-cpp"]:
            llm = MODELS.pop(key, (None,))[0]
            close = getattr(llm, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):  # best effort at exit
                    close()

    import atexit

    atexit.register(close_all)


class LlamaCppEmbedder:
    """Any GGUF embedding model through ``llama-cpp-python``, in a worker process.

    The model is opened with ``Llama(model_path, embedding=True)`` on the first
    call, in a child process (:mod:`agentmem.models.worker`) unless ``isolated=False``:
    if llama.cpp dies there (SIGILL from a build for another CPU, a crash, the
    out-of-memory killer) or hangs, calls raise
    :class:`~agentmem.errors.ModelUnavailableError` and this process goes on.
    Models whose GGUF declares a pooling type (most embedding models) use it;
    for models that return per-token vectors the tokens are averaged here. Texts
    longer than ``n_ctx`` tokens are truncated.

    ``dup_threshold`` cannot be known for an arbitrary model: it defaults to
    0.85 (the paper's value) and should be calibrated, for example with
    ``benchmarks/bench_embeddings.py --gguf PATH``; so should ``task_threshold``
    (default: ``dup_threshold``).

    ``n_threads`` (None: llama.cpp's default, all cores for batches) is worth
    setting to 1 or 2 on a busy machine: spinning worker threads then cost
    seconds per call.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        dup_threshold: float = 0.85,
        task_threshold: float | None = None,
        n_ctx: int = 512,
        n_threads: int | None = None,
        prefix: str = "",
        model_id: str | None = None,
        isolated: bool = True,
    ) -> None:
        """Remember the model; ``prefix`` is prepended to every text (e.g. ``"query: "``)."""
        self._isolated = isolated
        self._path = Path(model_path).expanduser()
        self._dup_threshold = float(dup_threshold)
        self._task_threshold = float(dup_threshold if task_threshold is None else task_threshold)
        self._n_ctx = int(n_ctx)
        self._n_threads = n_threads
        self._prefix = prefix
        self._model_id = model_id or f"llama-cpp-{self._path.stem}" + (
            f"-{prefix.strip()}" if prefix else ""
        )

    @property
    def name(self) -> str:
        """``llama-cpp:<absolute path>``; :func:`get_embedder` resolves it (default options)."""
        return f"llama-cpp:{self._path.resolve()}"

    @property
    def model_id(self) -> str:
        """``llama-cpp-<file stem>`` unless given."""
        return self._model_id

    @property
    def dims(self) -> int:
        """The model's embedding size (loads the model if needed)."""
        if self._isolated:
            return int(self._worker().load()["dims"])
        llm, _lock = self._model()
        return int(llm.n_embd())

    @property
    def dup_threshold(self) -> float:
        """The threshold given at construction (0.85 by default, uncalibrated)."""
        return self._dup_threshold

    @property
    def task_threshold(self) -> float:
        """The similar-task threshold given at construction (default: ``dup_threshold``)."""
        return self._task_threshold

    @property
    def model_path(self) -> Path:
        """Path of the GGUF file."""
        return self._path

    def check_available(self) -> None:
        """Raise AgentMemError unless llama-cpp-python and the model file exist."""
        if base.missing_modules("llama_cpp"):
            raise AgentMemError(
                "the llama-cpp embedder needs llama-cpp-python (pip install llama-cpp-python)"
            )
        if not self._path.is_file():
            raise AgentMemError(f"GGUF model file not found: {self._path}")

    def load(self) -> None:
        """Load the model now instead of on the first call (cached per process)."""
        if self._isolated:
            self._worker().load()
            return
        self._model()

    def _worker(self) -> Any:
        from ..models.worker import worker_for

        self.check_available()
        spec = {
            "kind": "embed",
            "backend": f"{__name__}:{type(self).__name__}",
            "path": str(self._path.resolve()),
            "n_ctx": self._n_ctx,
            "n_threads": self._n_threads,
            "prefix": self._prefix,
            "model_id": self._model_id,
        }
        return worker_for(spec, label="llama.cpp embedding")

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> LlamaCppEmbedder:
        """The embedder a worker's ``spec`` describes, loaded in this (the worker's) process."""
        return cls(
            spec["path"],
            n_ctx=int(spec["n_ctx"]),
            n_threads=spec.get("n_threads"),
            prefix=str(spec.get("prefix", "")),
            model_id=spec.get("model_id"),
            isolated=False,
        )

    def _load(self) -> tuple[Any, threading.Lock]:
        self.check_available()
        try:
            from llama_cpp import Llama

            llm = Llama(
                model_path=str(self._path),
                embedding=True,
                n_ctx=self._n_ctx,
                n_batch=self._n_ctx,
                n_ubatch=self._n_ctx,
                n_threads=self._n_threads,
                n_threads_batch=self._n_threads,
                verbose=False,
            )
        except Exception as exc:
            raise AgentMemError(f"could not load GGUF embedding model {self._path}: {exc}") from exc
        _close_llama_models_at_exit()
        return llm, threading.Lock()

    def _model(self) -> tuple[Any, threading.Lock]:
        key = ("llama-cpp", str(self._path.resolve()), self._n_ctx, self._n_threads)
        loaded: tuple[Any, threading.Lock] = cached_model(key, self._load)
        return loaded

    def _embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        llm, lock = self._model()
        dims = int(llm.n_embd())
        inputs = [self._prefix + t for t in texts]
        with lock:
            if int(llm.pooling_type()) == _LLAMA_POOLING_NONE:
                # llama-cpp-python 0.3.x misplaces per-token outputs of every sequence
                # after the first in a batch, so models without pooling go one by one.
                outputs = [llm.embed(t, normalize=False, truncate=True) for t in inputs]
            else:
                outputs = llm.embed(inputs, normalize=False, truncate=True)
        rows = []
        for out in outputs:
            arr = np.asarray(out, dtype=np.float64)
            if arr.ndim == 2:  # pooling NONE: one vector per token, averaged here
                arr = arr.mean(axis=0) if len(arr) else np.zeros(dims)
            rows.append(arr.reshape(-1)[:dims])
        return rows_to_unit_lists(np.vstack(rows), dims)

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` (blank texts map to one fixed unit vector)."""
        items = check_texts(texts)
        if not items:
            return []
        if self._isolated:
            vectors = self._worker().call("embed", {"texts": items})["vectors"]
            return [[float(x) for x in v] for v in vectors]
        return embed_nonblank(items, self.dims, self._embed)

    def __repr__(self) -> str:
        return f"LlamaCppEmbedder({str(self._path)!r})"
