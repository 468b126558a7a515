"""Native models run in a worker process, so that nothing they do can take agentmem down.

llama.cpp is C and C++ compiled for some CPU. A build made for another CPU (pip's
default ``-march=native``, a shared wheel cache, a Docker image built elsewhere)
dies with SIGILL on the first instruction the CPU lacks; a damaged file can make
it crash; the out-of-memory killer can take it. In the agent's own process any
of these would kill agentmem, and the agent with it. So llama.cpp text models
and embedders load in a child process, one per model, started on first use and
kept for the life of the process, and are called over a pipe:

- if the child dies (any signal, any exit) or does not answer within its
  timeout, the call raises :class:`~agentmem.errors.ModelUnavailableError`,
  which says what happened in words a user can act on; the child is stopped,
  and the model is marked unavailable for the rest of the process: later calls
  raise at once, without starting it again (:func:`unavailable`);
- a learning session then goes on with the data-derived texts, exactly like
  ``agentmem learn --no-model``, and its report says why.

The protocol is JSON lines. The parent writes one request per line to the
child's stdin; the child answers one line on a private copy of its stdout (its
file descriptor 1 itself points to stderr, so that nothing C code prints can
corrupt an answer). The child's stderr goes to a temporary file whose tail is
quoted when it dies. The child exits when its stdin closes, so it never
outlives the process that started it by more than one answer.

``AGENTMEM_MODEL_TIMEOUT`` (seconds, default 120) bounds each call; loading
gets at least 300 s. ``AGENTMEM_WORKER_FAULT`` is for tests only: it makes the
child fail on purpose (``sigill@2``: raise SIGILL at the second call;
``sigkill@1``: start answering the first call and get SIGKILLed meanwhile;
``hang@1``, ``sigsegv@N``, ``exit@N``; ``@0`` is the load; an optional
``text:`` or ``embed:`` prefix limits it to one kind of model).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from typing import IO, Any

from ..errors import AgentMemError, ModelError, ModelUnavailableError

__all__ = [
    "FAULT_ENV",
    "TIMEOUT_ENV",
    "Worker",
    "call_timeout",
    "close_all",
    "forget_failures",
    "unavailable",
    "worker_for",
]

#: Seconds a call may take before the worker counts as hung (environment variable).
TIMEOUT_ENV = "AGENTMEM_MODEL_TIMEOUT"
#: Test hook: make the worker fail on purpose (see the module docstring).
FAULT_ENV = "AGENTMEM_WORKER_FAULT"
DEFAULT_CALL_TIMEOUT = 120.0
MIN_LOAD_TIMEOUT = 300.0
#: How much of a dead worker's stderr a message quotes.
STDERR_TAIL = 600

#: Why a worker died, by signal: what happened and what to do.
_SIGNAL_ADVICE = {
    "SIGILL": (
        "illegal instruction",
        "rebuild llama-cpp-python without -march=native, see docs/model.md "
        "(building llama-cpp-python portably), or run 'agentmem doctor'",
    ),
    "SIGSEGV": (
        "segmentation fault",
        "the GGUF file may be damaged or unsupported by this llama-cpp-python; "
        "run 'agentmem doctor', or choose another model (--model)",
    ),
    "SIGBUS": (
        "bus error",
        "the model file may have changed or its disk failed while it was mapped; "
        "run 'agentmem doctor'",
    ),
    "SIGABRT": (
        "aborted",
        "llama.cpp stopped on an internal check; run 'agentmem doctor' and see its stderr",
    ),
    "SIGFPE": ("arithmetic fault", "run 'agentmem doctor'"),
    "SIGKILL": (
        "killed",
        "usually the out-of-memory killer: free memory, choose a smaller model (--model), "
        "or learn with --no-model",
    ),
}


def call_timeout() -> float:
    """Seconds one model call may take: ``$AGENTMEM_MODEL_TIMEOUT``, else 120."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_CALL_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise ModelError(f"{TIMEOUT_ENV} must be a number of seconds, not {raw!r}") from None
    if not value > 0:
        raise ModelError(f"{TIMEOUT_ENV} must be more than 0 seconds, not {raw!r}")
    return value


def death_message(label: str, returncode: int, stderr_tail: str) -> str:
    """A sentence for a worker that ended with ``returncode`` (negative: a signal)."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        what, advice = _SIGNAL_ADVICE.get(name, ("killed by a signal", "run 'agentmem doctor'"))
        return f"the {label} worker died with {name} ({what}): {advice}"
    tail = f"; it said: {stderr_tail}" if stderr_tail else ""
    return f"the {label} worker exited with code {returncode}{tail}"


class Worker:
    """One child process hosting one model; requests are answered one at a time.

    ``spec`` says what to load (see :func:`_load` in the child). ``label`` names
    the worker in messages (``llama.cpp``, ``llama.cpp embedding``). Use
    :func:`worker_for` to share one worker per model within a process.
    """

    def __init__(self, spec: Mapping[str, Any], *, label: str, key: str) -> None:
        self.spec = dict(spec)
        self.label = label
        self.key = key
        self.info: dict[str, Any] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._answers: queue.Queue[bytes | None] = queue.Queue()
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        return self._proc.pid if self._proc is not None else None

    def _start(self) -> dict[str, Any]:
        # Kept open for the child's life (closed by _stop), so no context manager here.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "agentmem.models.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            close_fds=True,
        )
        out = self._proc.stdout
        assert out is not None
        answers = self._answers

        def read() -> None:
            for line in iter(out.readline, b""):
                answers.put(line)
            answers.put(None)

        threading.Thread(target=read, name=f"agentmem-{self.label}-reader", daemon=True).start()
        timeout = max(MIN_LOAD_TIMEOUT, call_timeout())
        info = self._exchange({"op": "load", "spec": self.spec}, timeout)
        info.pop("ok", None)
        self.info = info
        return info

    def _stderr_tail(self) -> str:
        f = self._stderr
        if f is None:
            return ""
        try:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 4 * STDERR_TAIL))
            text = f.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        return " | ".join(lines)[-STDERR_TAIL:]

    def _fail(self, reason: str) -> ModelUnavailableError:
        """Stop the child, mark this model unavailable in this process, return the error."""
        self._stop()
        _DEAD[self.key] = reason
        _WORKERS.pop(self.key, None)
        return ModelUnavailableError(reason)

    def _exchange(self, request: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
            proc.stdin.flush()
        except OSError:
            pass  # the child is gone: the reader has seen (or will see) end of file
        try:
            line = self._answers.get(timeout=timeout)
        except queue.Empty:
            raise self._fail(
                f"the {self.label} worker did not answer within {timeout:g} s and was "
                f"stopped (hung): set {TIMEOUT_ENV} to allow more time, or run "
                "'agentmem doctor'"
            ) from None
        if line is None:
            try:
                code = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                code = 1
            raise self._fail(death_message(self.label, code, self._stderr_tail()))
        try:
            answer = json.loads(line)
            if not isinstance(answer, dict):
                raise ValueError("not an object")
        except ValueError:
            raise self._fail(
                f"the {self.label} worker answered something that is not JSON: {line[:200]!r}"
            ) from None
        if not answer.get("ok"):
            error = str(answer.get("error") or "unknown error")
            if answer.get("fatal"):
                raise self._fail(error)
            raise ModelError(error)
        return answer

    def call(self, op: str, payload: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send one request and return the child's answer.

        Raises :class:`ModelUnavailableError` when the worker died, hung or could not
        load (the model is then unavailable for the rest of the process), and
        :class:`ModelError` for an error the worker survived (a prompt too long).
        """
        with self._lock:
            self._ensure_running()
            return self._exchange({"op": op, **(payload or {})}, call_timeout())

    def load(self) -> dict[str, Any]:
        """Start the child and load the model now; returns what the child reported."""
        with self._lock:
            self._ensure_running()
            assert self.info is not None
            return self.info

    def _ensure_running(self) -> None:
        """Start the child unless it runs; a model that died in this process stays dead
        (called holding the lock)."""
        dead = _DEAD.get(self.key)
        if dead is not None:
            raise ModelUnavailableError(dead)
        if self._proc is None:
            self._start()

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            with contextlib.suppress(OSError):
                if proc.stdout is not None:
                    proc.stdout.close()
        if self._stderr is not None:
            with contextlib.suppress(OSError):
                self._stderr.close()
            self._stderr = None

    def close(self) -> None:
        """Stop the child (it unloads the model); a later call starts a new one."""
        with self._lock:
            proc = self._proc
            if proc is not None and proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()  # the child's loop ends on end of file
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5)
            self._stop()
            _WORKERS.pop(self.key, None)


_WORKERS: dict[str, Worker] = {}
_DEAD: dict[str, str] = {}
_REGISTRY_LOCK = threading.Lock()


def worker_for(spec: Mapping[str, Any], *, label: str) -> Worker:
    """The process's worker for ``spec`` (one per model and settings), created if needed.

    Raises :class:`ModelUnavailableError` at once for a model whose worker already
    failed in this process.
    """
    key = json.dumps(spec, sort_keys=True)
    dead = _DEAD.get(key)
    if dead is not None:
        raise ModelUnavailableError(dead)
    with _REGISTRY_LOCK:
        w = _WORKERS.get(key)
        if w is None:
            if not _WORKERS:
                atexit.register(_close_all)
            w = _WORKERS[key] = Worker(spec, label=label, key=key)
        return w


def unavailable(spec: Mapping[str, Any]) -> str | None:
    """Why the model of ``spec`` is unavailable in this process, or None."""
    return _DEAD.get(json.dumps(spec, sort_keys=True))


def forget_failures() -> None:
    """Forget which models failed in this process, so that a later call tries again.

    Workers that died are already stopped; workers that work keep running.
    """
    _DEAD.clear()


def close_all() -> None:
    """Stop every worker of this process (a later call starts a new one)."""
    _close_all()


def _close_all() -> None:
    for w in list(_WORKERS.values()):
        with contextlib.suppress(Exception):  # best effort, also at exit
            w.close()
    _WORKERS.clear()


# --------------------------------------------------------------------------- the child


class _Fault:
    """The test hook of ``$AGENTMEM_WORKER_FAULT``: fail on purpose at one request."""

    def __init__(self, raw: str, kind: str) -> None:
        self.action = ""
        self.at = -1
        spec = raw.strip()
        if ":" in spec:
            only, _, spec = spec.partition(":")
            if only.strip() != kind:
                return
        action, _, at = spec.partition("@")
        self.action = action.strip().lower()
        self.at = int(at) if at.strip().isdigit() else 1

    def maybe(self, n: int) -> None:
        """Fail now if this is request ``n`` (0 is the load); ``sigkill`` fails later."""
        if n != self.at or not self.action:
            return
        if self.action in ("sigill", "sigsegv", "sigbus", "sigabrt"):
            sig = getattr(signal, self.action.upper())
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
            time.sleep(10)  # the signal is delivered before this ends
        elif self.action == "hang":
            time.sleep(24 * 3600)
        elif self.action == "exit":
            os._exit(3)
        elif self.action == "sigkill":
            # Killed while answering: the request goes on, and the kill comes meanwhile.
            threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGKILL)).start()

    @property
    def kills_later(self) -> bool:
        return self.action == "sigkill"


def _load(spec: Mapping[str, Any]) -> Any:
    """Build and load the model ``spec`` describes, in this (the child) process.

    The worker knows no backend: ``spec["backend"]`` names the class
    (``module:Class``, as :class:`agentmem.models.llama_cpp.LlamaCppModel` and
    :class:`agentmem.embeddings.llama_cpp.LlamaCppEmbedder` write it) whose
    ``from_spec`` builds it here, not isolated."""
    kind = spec.get("kind")
    if kind not in ("text", "embed"):
        raise AgentMemError(f"the worker cannot load a model of kind {kind!r}")
    module, _, name = str(spec.get("backend", "")).partition(":")
    try:
        backend = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise AgentMemError(f"the worker cannot load {spec.get('backend')!r}: {exc}") from None
    model = backend.from_spec(spec)
    model.load()
    return model


def _handle(backend: Any, request: Mapping[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    if op == "complete":
        c = backend.complete(
            str(request["prompt"]),
            max_tokens=int(request.get("max_tokens", 128)),
            stop=tuple(request.get("stop") or ()),
            temperature=float(request.get("temperature", 0.0)),
        )
        return {
            "text": c.text,
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "seconds": c.seconds,
        }
    if op == "embed":
        return {"vectors": backend.embed_batch(list(request["texts"]))}
    if op == "count_tokens":
        return {"tokens": backend.count_tokens(str(request["text"]))}
    raise AgentMemError(f"the worker does not know the request {op!r}")


def _serve() -> int:
    """The child's loop: load on the first request, then answer until stdin closes."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # whatever C code prints goes to stderr, never into an answer
    sys.stdout = sys.stderr

    def answer(value: Mapping[str, Any]) -> None:
        out.write(json.dumps(value) + "\n")
        out.flush()

    backend: Any = None
    fault: _Fault | None = None
    n = 0
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
        except ValueError:
            answer({"ok": False, "error": "the worker got a request that is not JSON"})
            continue
        if backend is None:
            spec = request.get("spec") or {}
            fault = _Fault(os.environ.get(FAULT_ENV, ""), str(spec.get("kind", "")))
            fault.maybe(0)
            try:
                backend = _load(spec)
            except (AgentMemError, KeyError, TypeError, ValueError) as exc:
                answer({"ok": False, "fatal": True, "error": str(exc)})
                return 0
            info: dict[str, Any] = {"pid": os.getpid()}
            if spec.get("kind") == "text":
                info["chat_template"] = backend.has_chat_template()
            else:
                info["dims"] = backend.dims
            answer({"ok": True, **info})
            continue
        n += 1
        assert fault is not None
        fault.maybe(n)
        try:
            result = _handle(backend, request)
        except (AgentMemError, KeyError, TypeError, ValueError) as exc:
            answer({"ok": False, "error": str(exc)})
            continue
        if fault.kills_later and n == fault.at:
            time.sleep(60)  # the kill arrives before the answer would
        answer({"ok": True, **result})
    return 0


if __name__ == "__main__":
    sys.exit(_serve())
