"""A scripted model server for the real Claude Code and Codex CLIs (stdlib only).

It speaks the two wire formats the clients use, always streaming:

- Anthropic Messages (Claude Code): ``POST /v1/messages`` (``?beta=true``), SSE events
  ``message_start``, ``content_block_start``/``_delta``/``_stop`` (``text_delta``,
  ``input_json_delta``), ``message_delta``, ``message_stop``.
- OpenAI Responses (Codex): ``POST /v1/responses``, SSE events ``response.created``,
  ``response.output_item.added``/``.done``, ``response.output_text.delta``,
  ``response.completed``.

A scenario is data: turns, each matched by a piece of its prompt, each a list of
calls the model makes in order and then a final text. The server decides what to
answer from the conversation it receives alone (which turn its last prompt is, and
how many tool results came back since), so a run is deterministic. A request that
matches no turn (Claude Code's side requests: titles, summaries) gets a short text.
Every request body is logged, one JSON line each, so a test can look for a lesson
in a later request.

``python -m tests.scripted_model run --scenario S.json --log L.jsonl -- CMD ...``
starts the server on a free port, runs CMD with ``{base_url}`` replaced in its
arguments and in the values of ``--env NAME=VALUE`` options, and exits with CMD's
status; ``--netns`` first moves this process into a network namespace of its own
(``unshare(CLONE_NEWNET)``, as root) with only the loopback interface up, so the
client can reach nothing but the server.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import http.server
import itertools
import json
import os
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Call", "Scenario", "ScriptedModel", "Turn", "enter_netns", "shell"]

#: The tool the scenario's ``shell`` calls become, per client, and how its input is spelt.
SHELL_TOOLS = ("Bash", "shell_command", "exec_command", "shell")


@dataclass(frozen=True)
class Call:
    """One tool call of the model: a tool name (or ``"shell"``) and its input."""

    tool: str
    input: Mapping[str, Any]


def shell(command: str, description: str | None = None) -> Call:
    """A shell command, spelt for whichever shell tool the client offers."""
    args: dict[str, Any] = {"command": command}
    if description is not None:
        args["description"] = description
    return Call("shell", args)


@dataclass(frozen=True)
class Turn:
    """A task: the prompt it answers (a substring), the calls in order, the final text.

    ``if_served``: ``(needle, calls)``, the calls the model makes instead when ``needle``
    is in what the client put around the prompt (a lesson a hook or MCP served) or in the
    prompt itself (a lesson or an instruction put before it): a model that follows the
    lesson. Tool calls and their results are not searched. ``branches``: more such pairs,
    tried in order after ``if_served`` (a model that follows a lesson, else an RC-GRPO
    reward instruction, else does what ``calls`` say).
    """

    prompt: str
    calls: tuple[Call, ...] = ()
    text: str = "Done."
    if_served: tuple[str, tuple[Call, ...]] | None = None
    branches: tuple[tuple[str, tuple[Call, ...]], ...] = ()

    def calls_for(self, served: str) -> tuple[Call, ...]:
        options = ((self.if_served,) if self.if_served is not None else ()) + self.branches
        for needle, calls in options:
            if needle in served:
                return calls
        return self.calls


@dataclass(frozen=True)
class Scenario:
    turns: tuple[Turn, ...]

    def to_json(self) -> str:
        def calls(cs: tuple[Call, ...]) -> list[Any]:
            return [[c.tool, c.input] for c in cs]

        return json.dumps(
            [
                {
                    "prompt": t.prompt,
                    "text": t.text,
                    "calls": calls(t.calls),
                    "if_served": [t.if_served[0], calls(t.if_served[1])] if t.if_served else None,
                    "branches": [[n, calls(cs)] for n, cs in t.branches],
                }
                for t in self.turns
            ]
        )

    @classmethod
    def from_json(cls, text: str) -> Scenario:
        def calls(cs: list[Any]) -> tuple[Call, ...]:
            return tuple(Call(n, a) for n, a in cs)

        return cls(
            tuple(
                Turn(
                    t["prompt"],
                    calls(t["calls"]),
                    t["text"],
                    (t["if_served"][0], calls(t["if_served"][1])) if t.get("if_served") else None,
                    tuple((n, calls(cs)) for n, cs in t.get("branches") or ()),
                )
                for t in json.loads(text)
            )
        )


# -- deciding the next action ----------------------------------------------------------------


def _texts(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    yield block["text"]
                elif block.get("type") in ("tool_result",):
                    continue
            elif isinstance(block, str):
                yield block


def _anthropic_state(body: Mapping[str, Any]) -> tuple[str, int]:
    """The text of the last prompt of a Messages request, and the tool results after it."""
    prompt, results = "", 0
    for msg in body.get("messages") or []:
        if msg.get("role") != "user":
            continue
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [content]
        n = sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result")
        if n:
            results += n
        else:
            text = "\n".join(_texts(content))
            if text.strip():
                prompt, results = text, 0
    return prompt, results


def _responses_state(body: Mapping[str, Any]) -> tuple[str, int]:
    """The same for a Responses request (Codex)."""
    prompt, results = "", 0
    for item in body.get("input") or []:
        kind = item.get("type")
        if kind in ("function_call_output", "custom_tool_call_output"):
            results += 1
        elif kind == "message" and item.get("role") == "user":
            text = "\n".join(_texts(item.get("content")))
            if text.strip() and not text.lstrip().startswith(
                ("<environment_context", "<user_instructions", "# AGENTS.md")
            ):
                prompt, results = text, 0
    return prompt, results


def _served_text(body: Mapping[str, Any]) -> str:
    """The text of a request's messages, without tool calls and results: the prompts and
    what the client put around them (system reminders, developer messages)."""
    items = body.get("messages") or [
        i for i in body.get("input") or [] if isinstance(i, dict) and i.get("type") == "message"
    ]
    return "\n".join(t for m in items if isinstance(m, dict) for t in _texts(m.get("content")))


def next_action(scenario: Scenario, prompt: str, results: int, served: str = "") -> Call | str:
    """The next call, or the final text, for a conversation at ``prompt`` after ``results``
    tool results, with ``served`` the text around the prompts (see :attr:`Turn.if_served`)."""
    for turn in scenario.turns:
        if turn.prompt in prompt:
            calls = turn.calls_for(served)
            return calls[results] if results < len(calls) else turn.text
    return "OK."


def _shell_input(tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
    cmd = str(args["command"])
    if tool == "shell":
        return {
            "command": ["bash", "-lc", cmd],
            **{k: v for k, v in args.items() if k != "command"},
        }
    if tool == "exec_command":
        return {"cmd": cmd, **{k: v for k, v in args.items() if k != "command"}}
    return dict(args)


def _spell(call: Call, offered: Sequence[str]) -> tuple[str, dict[str, Any]]:
    if call.tool != "shell":
        return call.tool, dict(call.input)
    tool = next((t for t in SHELL_TOOLS if t in offered), "Bash")
    return tool, _shell_input(tool, call.input)


# -- the wire formats --------------------------------------------------------------------------


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_events(action: Call | str, offered: Sequence[str], n: int) -> Iterator[bytes]:
    mid = f"msg_scripted_{n}"
    usage = {"input_tokens": 10, "output_tokens": 5}
    yield _sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": "scripted",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        },
    )
    if isinstance(action, str):
        block: dict[str, Any] = {"type": "text", "text": ""}
        delta: dict[str, Any] = {"type": "text_delta", "text": action}
        stop = "end_turn"
    else:
        name, args = _spell(action, offered)
        block = {"type": "tool_use", "id": f"toolu_scripted_{n}", "name": name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(args)}
        stop = "tool_use"
    yield _sse(
        "content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}
    )
    yield _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
    yield _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield _sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield _sse("message_stop", {"type": "message_stop"})


def responses_events(action: Call | str, offered: Sequence[str], n: int) -> Iterator[bytes]:
    rid = f"resp_scripted_{n}"
    yield _sse("response.created", {"type": "response.created", "response": {"id": rid}})
    if isinstance(action, str):
        item: dict[str, Any] = {
            "type": "message",
            "role": "assistant",
            "id": f"msg_scripted_{n}",
            "content": [{"type": "output_text", "text": action}],
        }
        yield _sse(
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "content": []},
            },
        )
        yield _sse(
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "output_index": 0,
                "content_index": 0,
                "item_id": item["id"],
                "delta": action,
            },
        )
    else:
        name, args = _spell(action, offered)
        item = {
            "type": "function_call",
            "id": f"fc_scripted_{n}",
            "call_id": f"call_scripted_{n}",
            "name": name,
            "arguments": json.dumps(args),
        }
        space, _, short = name.rpartition("__")
        if space.startswith("mcp__") and name in offered:  # an MCP tool, in its namespace
            item.update(namespace=space, name=short)
        yield _sse(
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        )
    yield _sse(
        "response.output_item.done",
        {"type": "response.output_item.done", "output_index": 0, "item": item},
    )
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    yield _sse(
        "response.completed",
        {"type": "response.completed", "response": {"id": rid, "usage": usage}},
    )


def _offered_anthropic(body: Mapping[str, Any]) -> list[str]:
    return [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]


def _offered_responses(body: Mapping[str, Any]) -> list[str]:
    """Tool names; a namespace's tools (Codex's MCP servers) as ``namespace__name``."""
    names = []
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        name = str(t.get("name") or t.get("type"))
        names.append(name)
        if t.get("type") == "namespace":
            names += [
                f"{name}__{x.get('name')}" for x in t.get("tools") or [] if isinstance(x, dict)
            ]
    return names


# -- the server --------------------------------------------------------------------------------


@dataclass
class ScriptedModel:
    """The server: ``with ScriptedModel(scenario, log) as m: m.base_url``."""

    scenario: Scenario
    log: Path | None = None
    host: str = "127.0.0.1"
    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    _counter: Iterator[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> ScriptedModel:
        model = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _json(self, doc: Any) -> None:
                body = json.dumps(doc).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # model lists and the like: empty
                model._record("GET", self.path, None)
                self._json({"object": "list", "data": [], "models": []})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.headers.get("content-encoding") == "zstd":
                    raise RuntimeError("zstd request bodies are not supported")
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                if self.path.split("?", 1)[0].endswith("/count_tokens"):  # a sane estimate
                    model._record("POST", self.path, body)
                    self._json({"input_tokens": max(1, len(raw) // 4)})
                    return
                events = model._answer(self.path, body)
                if events is None:
                    self.send_response(404)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for chunk in events:
                    self.wfile.write(chunk)
                    self.wfile.flush()
                self.close_connection = True

        self._server = http.server.ThreadingHTTPServer((self.host, self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _record(self, method: str, path: str, body: Any, action: Any = None) -> None:
        entry = {"method": method, "path": path, "body": body, "action": action}
        with self._lock:
            self.requests.append(entry)
            if self.log is not None:
                with self.log.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry) + "\n")

    def _answer(self, path: str, body: Any) -> Iterator[bytes] | None:
        n = next(self._counter)
        route = path.split("?", 1)[0].rstrip("/")
        if route.endswith("/messages"):
            prompt, results = _anthropic_state(body)
            action = next_action(self.scenario, prompt, results, _served_text(body))
            events = anthropic_events(action, _offered_anthropic(body), n)
        elif route.endswith("/responses"):
            prompt, results = _responses_state(body)
            action = next_action(self.scenario, prompt, results, _served_text(body))
            events = responses_events(action, _offered_responses(body), n)
        else:
            self._record("POST", path, body)
            return None
        shown = (
            action
            if isinstance(action, str)
            else {"tool": action.tool, "input": dict(action.input)}
        )
        self._record("POST", path, body, shown)
        return events


# -- a network namespace of its own --------------------------------------------------------------

_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS = 0x8913, 0x8914
_IFF_UP = 0x1


def enter_netns() -> bool:
    """Move this process into a new network namespace with ``lo`` up; False where not allowed."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNET) != 0:
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifr = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, _SIOCGIFFLAGS, ifr))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))
    return True


def _run(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.scripted_model run")
    p.add_argument("--scenario", required=True, type=Path)
    p.add_argument("--log", required=True, type=Path)
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--netns", action="store_true")
    p.add_argument("--timeout", type=float, default=180)
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    command = [a for a in args.command if a != "--"] if args.command[:1] == ["--"] else args.command
    if args.netns and not enter_netns():
        sys.stderr.write("scripted_model: no network namespace here (unshare refused)\n")
        return 97
    scenario = Scenario.from_json(args.scenario.read_text(encoding="utf-8"))
    with ScriptedModel(scenario, args.log) as model:
        url = model.base_url
        env = dict(os.environ)
        for item in args.env:
            name, _, value = item.partition("=")
            env[name] = value.replace("{base_url}", url)
        cmd = [a.replace("{base_url}", url) for a in command]
        try:
            done = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            sys.stderr.write(f"scripted_model: {cmd[0]} ran past {args.timeout} s\n")
            return 124
    return done.returncode


if __name__ == "__main__":
    if sys.argv[1:2] != ["run"]:
        sys.exit("usage: python -m tests.scripted_model run --scenario S --log L -- CMD ...")
    sys.exit(_run(sys.argv[2:]))
