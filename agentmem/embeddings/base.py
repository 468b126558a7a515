"""What agentmem needs of a sentence embedder (:class:`Embedder`), and what every
backend shares: input checks, the vector of a blank text, L2 normalisation, and the
per-process cache of loaded models.

Importing this module imports the standard library alone (numpy is imported by the
functions that need it).
"""

# No ``from __future__ import annotations``: the NamedTuple fields of EmbedderBackend are
# then types, not strings that typing compiles (the first compile() of a process costs the
# prompt hook, which imports this module, about 2 ms).
import importlib.util
import math
from _thread import allocate_lock  # threading.Lock, without importing threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:  # pragma: no cover - typing only
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "EMBEDDER_ENV_VAR",
    "Embedder",
    "EmbedderBackend",
    "blank_vector",
    "cached_model",
    "check_texts",
    "embed_nonblank",
    "missing_modules",
    "rows_to_unit_lists",
]

#: Environment variable naming the embedder used when none is passed.
EMBEDDER_ENV_VAR = "AGENTMEM_EMBEDDER"


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


class EmbedderBackend(NamedTuple):
    """A kind of embedder: ``build(name)`` is a new, unchecked embedder for a name of
    this backend, or None for a name that is not its own; ``usage`` says how its names
    look; ``default_name`` is the name :func:`available_embedders` checks (None: the
    backend needs more than a name, such as a model file)."""

    name: str
    build: Callable[[str], Embedder | None]
    usage: str
    default_name: str | None = None


def check_texts(texts: Sequence[str]) -> list[str]:
    """Validate the argument of ``embed_batch`` and return it as a list."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("embed_batch takes a sequence of strings, not a single string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"embed_batch: item {i} is {type(t).__name__}, not str")
    return out


def blank_vector(dims: int) -> list[float]:
    """The fixed unit vector given to empty or whitespace-only texts."""
    v = 1.0 / math.sqrt(dims)
    return [v] * dims


def rows_to_unit_lists(matrix: "npt.NDArray[np.float32]", dims: int) -> list[list[float]]:
    """L2-normalise the rows of ``matrix`` (zero rows become the blank vector)."""
    import numpy as np

    m = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1)
    out: list[list[float]] = []
    for row, n in zip(m, norms, strict=True):
        if not math.isfinite(float(n)) or n <= 1e-12:
            out.append(blank_vector(dims))
        else:
            out.append((row / n).tolist())
    return out


def embed_nonblank(
    texts: Sequence[str],
    dims: int,
    embed: Callable[[list[str]], list[list[float]]],
) -> list[list[float]]:
    """Run ``embed`` on the non-blank texts only; blank ones get the blank vector."""
    items = check_texts(texts)
    if not items:
        return []
    keep = [i for i, t in enumerate(items) if t.strip()]
    if len(keep) == len(items):
        return embed(items)
    out = [blank_vector(dims) for _ in items]
    if keep:
        for i, vec in zip(keep, embed([items[i] for i in keep]), strict=True):
            out[i] = vec
    return out


def missing_modules(*modules: str) -> list[str]:
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
MODELS: dict[tuple[Any, ...], Any] = {}
MODELS_LOCK = allocate_lock()


def cached_model(key: tuple[Any, ...], load: Callable[[], Any]) -> Any:
    """Load a model once per process and return it from the cache afterwards."""
    model = MODELS.get(key)
    if model is not None:
        return model
    with MODELS_LOCK:
        model = MODELS.get(key)
        if model is None:
            model = load()
            MODELS[key] = model
    return model
