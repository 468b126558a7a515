"""Models behind a local OpenAI-compatible HTTP server (llama-server, Ollama, LM Studio,
vLLM), called with the standard library alone.

A spec is the server's URL, ``http://127.0.0.1:8080/v1``; the model name the
server should use goes in the URL fragment (``http://127.0.0.1:11434/v1#qwen2.5:1.5b``)
or in ``$AGENTMEM_MODEL_NAME`` (the fragment wins); without either the name is
``"default"``, which llama-server and LM Studio accept. An API key, if the server
wants one, comes from ``$AGENTMEM_API_KEY``.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

from ..errors import ModelError, ModelUnavailableError
from .base import MODEL_ENV, Completion

__all__ = [
    "API_KEY_ENV",
    "MODEL_NAME_ENV",
    "OpenAICompatibleModel",
    "forget_unreachable",
    "server_model",
]

#: Environment variable naming the model for an OpenAI-compatible server URL.
MODEL_NAME_ENV = "AGENTMEM_MODEL_NAME"
#: Environment variable holding the API key for an OpenAI-compatible server.
API_KEY_ENV = "AGENTMEM_API_KEY"


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


def server_model(spec: str) -> OpenAICompatibleModel:
    """The model a server URL spec names (``URL#model-name``)."""
    url, _, fragment = spec.partition("#")
    name = urllib.parse.unquote(fragment) or os.environ.get(MODEL_NAME_ENV) or "default"
    return OpenAICompatibleModel(url, name, api_key=os.environ.get(API_KEY_ENV) or None)


def forget_unreachable() -> None:
    """Forget which servers were unreachable in this process (they are asked again)."""
    _UNREACHABLE.clear()
