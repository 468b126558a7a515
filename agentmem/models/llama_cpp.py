"""GGUF models run by llama.cpp (``llama-cpp-python``), in a worker process by default.

Nothing heavy is imported with this module: ``llama_cpp`` is imported when a
:class:`LlamaCppModel` first generates text, and then in its worker process
(:mod:`agentmem.models.worker`) unless ``isolated=False``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from ..errors import ModelError
from .base import Completion

__all__ = ["LlamaCppModel", "default_threads"]


@attrs.frozen
class _LoadKey:
    path: str
    n_ctx: int
    n_threads: int
    n_batch: int
    seed: int


_LOADED: dict[_LoadKey, Any] = {}


def _close_loaded() -> None:
    """Close loaded models before interpreter teardown: left to ``Llama.__del__`` then,
    llama-cpp-python prints an ignored traceback."""
    while _LOADED:
        _, llm = _LOADED.popitem()
        with contextlib.suppress(Exception):  # best effort at exit
            llm.close()


_LOAD_LOCK = threading.Lock()
# One lock per loaded model: a llama_cpp.Llama must not run two calls at once.
_CALL_LOCKS: dict[_LoadKey, threading.Lock] = {}


def _usable_cpus() -> int:
    """CPU cores this process may run on (the affinity mask, else ``os.cpu_count``)."""
    if hasattr(os, "sched_getaffinity"):
        with contextlib.suppress(OSError):
            return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def default_threads() -> int:
    """Threads llama.cpp uses unless told otherwise: half the usable cores, at least 1.

    agentmem runs next to agents, databases and embedding models. llama.cpp's
    threads wait for each other after every step, so when another process holds a
    core they stall: on a busy 2-core machine SmolLM2 generated about 45 tokens/s
    with 1 thread and about 5 with 2 (see ``benchmarks/bench_models.py``).
    """
    return max(1, _usable_cpus() // 2)


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null: llama.cpp's C code writes there directly."""
    try:
        saved = os.dup(2)
    except OSError:  # no usable stderr at all: nothing to silence
        yield
        return
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _import_llama_cpp() -> Any:
    # OpenMP threads that spin while waiting steal the cores other threads need;
    # wait passively unless the user chose otherwise. Read when the library loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import llama_cpp
    except ImportError as exc:
        raise ModelError(
            "running a local GGUF model needs llama-cpp-python (tested with 0.3.36): "
            "pip install 'agentmem[model]' (docs/model.md), or point AGENTMEM_MODEL at an "
            f"OpenAI-compatible server URL instead; import failed: {exc}"
        ) from exc
    # Drop llama.cpp's log callback output below ERROR (load banners, warnings).
    with contextlib.suppress(ImportError, AttributeError):  # private module; optional
        import logging

        from llama_cpp import _logger

        _logger.logger.setLevel(logging.ERROR)
    return llama_cpp


class LlamaCppModel:
    """A GGUF model run by llama.cpp, in a worker process unless ``isolated=False``.

    With ``isolated=True`` (the default) the model loads in a child process
    (:mod:`agentmem.models.worker`) on the first :meth:`complete` call and stays there
    for the rest of the process, shared by every :class:`LlamaCppModel` with the
    same path and settings. If that process dies (SIGILL from a llama.cpp built
    for another CPU, a crash, the out-of-memory killer) or hangs past
    ``$AGENTMEM_MODEL_TIMEOUT``, calls raise
    :class:`~agentmem.errors.ModelUnavailableError` and this process goes on.
    ``isolated=False`` loads the model into this process (what the worker itself
    does; benchmarks use it to measure the worker's overhead).

    Generation is deterministic for a given prompt and settings: the seed is
    fixed and ``temperature=0`` (the default) means greedy decoding. ``chat``
    says whether to wrap the prompt in the model's chat template; the default
    (``None``) does so exactly when the GGUF file carries a template.
    ``n_threads`` defaults to :func:`default_threads` (half the usable cores).
    ``system`` is an optional system message for chat models (``None`` leaves
    the template's default).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        model_id: str | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_batch: int = 512,
        seed: int = 0,
        chat: bool | None = None,
        system: str | None = None,
        isolated: bool = True,
    ) -> None:
        self.path = Path(path).expanduser()
        self.model_id = model_id or self.path.stem
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self.n_batch = n_batch
        self.seed = seed
        self.chat = chat
        self.system = system
        self.isolated = isolated

    def __repr__(self) -> str:
        return f"LlamaCppModel({str(self.path)!r}, model_id={self.model_id!r})"

    @property
    def _spec(self) -> dict[str, Any]:
        """What the worker process loads (also its identity in this process)."""
        return {
            "kind": "text",
            "backend": f"{__name__}:{type(self).__name__}",
            "path": str(self.path.resolve()),
            "model_id": self.model_id,
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
            "n_batch": self.n_batch,
            "seed": self.seed,
            "chat": self.chat,
            "system": self.system,
        }

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> LlamaCppModel:
        """The model a worker's ``spec`` describes, loaded in this (the worker's) process."""
        return cls(
            spec["path"],
            model_id=spec.get("model_id"),
            n_ctx=int(spec["n_ctx"]),
            n_threads=int(spec["n_threads"]),
            n_batch=int(spec["n_batch"]),
            seed=int(spec["seed"]),
            chat=spec.get("chat"),
            system=spec.get("system"),
            isolated=False,
        )

    def _worker(self) -> Any:
        from .worker import worker_for

        if not self.path.is_file():
            raise ModelError(f"model file {self.path} does not exist")
        return worker_for(self._spec, label="llama.cpp")

    @property
    def unavailable(self) -> str | None:
        """Why this model cannot be used in this process (its worker died), or None."""
        if not self.isolated:
            return None
        from .worker import unavailable

        return unavailable(self._spec)

    @property
    def _key(self) -> _LoadKey:
        return _LoadKey(
            str(self.path.resolve()),
            self.n_ctx,
            self.n_threads,
            self.n_batch,
            self.seed,
        )

    def load(self) -> Any:
        """Load the model now (otherwise the first :meth:`complete` does) and return it.

        In a worker (the default) the return value is what the worker reported
        (its ``pid``, whether the file has a chat template); with ``isolated=False``
        it is the underlying ``llama_cpp.Llama``.
        """
        if self.isolated:
            return self._worker().load()
        key = self._key
        with _LOAD_LOCK:
            llm = _LOADED.get(key)
            if llm is not None:
                return llm
            if not self.path.is_file():
                raise ModelError(f"model file {self.path} does not exist")
            llama_cpp = _import_llama_cpp()
            try:
                with _quiet_stderr():
                    llm = llama_cpp.Llama(
                        model_path=key.path,
                        n_ctx=self.n_ctx,
                        n_threads=self.n_threads,
                        n_threads_batch=self.n_threads,
                        n_batch=self.n_batch,
                        seed=self.seed,
                        verbose=False,
                    )
            except Exception as exc:  # llama_cpp raises ValueError on a bad file
                raise ModelError(
                    f"llama.cpp could not load {self.path}: {exc}; check that it is a "
                    "GGUF file that this llama-cpp-python version supports "
                    "(pip install -U llama-cpp-python)"
                ) from exc
            if not _LOADED:
                import atexit

                atexit.register(_close_loaded)
            _LOADED[key] = llm
            _CALL_LOCKS[key] = threading.Lock()
            return llm

    def has_chat_template(self) -> bool:
        """Whether the GGUF file carries a chat template (loads the model)."""
        if self.isolated:
            return bool(self._worker().load().get("chat_template"))
        llm = self.load()
        return bool(llm.metadata.get("tokenizer.chat_template"))

    def _use_chat(self, llm: Any) -> bool:
        if self.chat is not None:
            return self.chat
        return bool(llm.metadata.get("tokenizer.chat_template"))

    def count_tokens(self, text: str) -> int:
        """How many tokens ``text`` is for this model (loads the model)."""
        if self.isolated:
            return int(self._worker().call("count_tokens", {"text": text})["tokens"])
        llm = self.load()
        return len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int = 128,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
    ) -> Completion:
        """Generate an answer to ``prompt``; see :class:`TextModel`."""
        start = time.perf_counter()
        if self.isolated:
            answer = self._worker().call(
                "complete",
                {
                    "prompt": prompt,
                    "max_tokens": max_tokens,
                    "stop": list(stop),
                    "temperature": temperature,
                },
            )
            return Completion(
                text=str(answer["text"]),
                prompt_tokens=int(answer["prompt_tokens"]),
                completion_tokens=int(answer["completion_tokens"]),
                seconds=time.perf_counter() - start,
            )
        llm = self.load()
        stops = list(stop) or None
        try:
            with _CALL_LOCKS[self._key]:
                if self._use_chat(llm):
                    messages: list[dict[str, str]] = []
                    if self.system is not None:
                        messages.append({"role": "system", "content": self.system})
                    messages.append({"role": "user", "content": prompt})
                    response = llm.create_chat_completion(
                        messages=messages,
                        max_tokens=max_tokens,
                        temperature=temperature,
                        stop=stops,
                        seed=self.seed,
                    )
                    text = response["choices"][0]["message"]["content"] or ""
                else:
                    response = llm.create_completion(
                        prompt,
                        max_tokens=max_tokens,
                        temperature=temperature,
                        stop=stops,
                        seed=self.seed,
                    )
                    text = response["choices"][0]["text"] or ""
        except ValueError as exc:  # e.g. "Requested tokens (…) exceed context window"
            raise ModelError(
                f"{self.model_id}: {exc}; shorten the prompt or load the model with a "
                f"larger n_ctx (now {self.n_ctx})"
            ) from exc
        usage = response.get("usage") or {}
        return Completion(
            text=text.strip(),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            seconds=time.perf_counter() - start,
        )
