"""Fixture transcripts that the tests write themselves, in the shapes of docs/agents.md.

No real user's data: each builder writes the fields the formats are documented to
have (see /work/shared/formats.md), with made-up sessions, prompts and outputs. A step
already imported (:func:`codex_exec`) is built here too, in the shape the importer gives.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from agentmem.records import Step

_CLOCK = itertools.count()


def _ts() -> str:
    n = next(_CLOCK)
    return f"2026-01-05T10:{(n // 60) % 60:02d}:{n % 60:02d}.000Z"


def _dump(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(x).encode() + b"\n" for x in lines)


class _Lines:
    """A JSON-lines transcript being written: its lines, its bytes, the file."""

    lines: list[dict[str, Any]]

    def data(self) -> bytes:
        return _dump(self.lines)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.data())
        return path


class ClaudeSession(_Lines):
    """A Claude Code session transcript, line by line."""

    def __init__(
        self, session_id: str = "0a1b2c3d-0000-4000-8000-000000000001", cwd: str = "/w/app"
    ):
        self.session_id = session_id
        self.cwd = cwd
        self.lines: list[dict[str, Any]] = []
        self._uuid = itertools.count(1)
        self._tool = itertools.count(1)
        self.sidechain = False
        self.agent_id: str | None = None

    def _line(self, kind: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
        uuid = f"{self.session_id[:8]}-u{next(self._uuid):04d}"
        line = {
            "parentUuid": self.lines[-1].get("uuid") if self.lines else None,
            "isSidechain": self.sidechain,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.1.120",
            "gitBranch": "main",
            "type": kind,
            "message": message,
            "uuid": uuid,
            "timestamp": _ts(),
            **({"agentId": self.agent_id} if self.agent_id else {}),
            **extra,
        }
        self.lines.append(line)
        return line

    def prompt(self, text: str | list[dict[str, Any]]) -> str:
        return self._line("user", {"role": "user", "content": text})["uuid"]

    def call(self, name: str, params: dict[str, Any]) -> str:
        tid = f"toolu_{self.session_id[:4]}{next(self._tool):04d}"
        self._line(
            "assistant",
            {
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "tool_use", "id": tid, "name": name, "input": params}],
                "stop_reason": "tool_use",
            },
        )
        return tid

    def result(
        self, tid: str, content: Any, is_error: bool = False, **extra: Any
    ) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tid, "content": content}
        if is_error:
            block["is_error"] = True
        return self._line("user", {"role": "user", "content": [block]}, **extra)

    def tool(self, name: str, params: dict[str, Any], output: Any, is_error: bool = False) -> str:
        tid = self.call(name, params)
        self.result(tid, output, is_error)
        return tid

    def say(self, text: str, stop: str | None = "end_turn") -> None:
        self._line(
            "assistant",
            {
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "stop_reason": stop,
            },
        )

    def interrupt(self, for_tool: bool = False) -> None:
        text = "[Request interrupted by user" + (" for tool use]" if for_tool else "]")
        self._line("user", {"role": "user", "content": [{"type": "text", "text": text}]})

    def other(self, kind: str, **fields: Any) -> None:
        self.lines.append({"type": kind, "timestamp": _ts(), **fields})


DENIED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if "
    "it was a file edit, the new_string was NOT written to the file). STOP what you are doing "
    "and wait for the user to tell you how to proceed."
)


def claude_fixture(cwd: str) -> ClaudeSession:
    """Four prompts: a fix with a failing then passing test, an interrupted push, a denied
    delete, and a thank-you without tools; plus lines and blocks of other types."""
    s = ClaudeSession(cwd=cwd)
    s.other("summary", summary="Fixing the parser", leafUuid="x")
    s.prompt("fix the failing test in the parser")
    s.tool(
        "Bash",
        {"command": "pytest -x tests/test_parser.py", "description": "run the tests"},
        "Exit code 1\nFAILED tests/test_parser.py::test_empty - AssertionError",
        is_error=True,
    )
    s.tool("Read", {"file_path": f"{cwd}/src/parser.py"}, "     1\tdef parse(text):\n")
    s.tool(
        "Edit",
        {"file_path": f"{cwd}/src/parser.py", "old_string": "a", "new_string": "b"},
        "The file has been updated.",
    )
    s.other("progress", data={"type": "hook_progress"})
    s.tool("Bash", {"command": "pytest -x tests/test_parser.py"}, "3 passed in 0.02s")
    s.say("Fixed: empty input returns an empty list.")
    s.other("system", subtype="informational", content="compacting")
    s.prompt("push the branch")
    s.tool(
        "Bash",
        {"command": "git push origin main"},
        "Exit code 1\n ! [rejected] main -> main (fetch first)",
        is_error=True,
    )
    s.interrupt()
    s.prompt([{"type": "text", "text": "delete the build folder"}])
    tid = s.call("Bash", {"command": "rm -rf build"})
    s.result(tid, DENIED, is_error=True)
    s.say("Understood, I will not delete it.")
    s.other("mystery-line-type", payload=1)
    s.prompt("thanks!")
    s._line(
        "assistant",
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "You're welcome."},
                {"type": "fancy_new_block", "x": 1},
            ],
            "stop_reason": "end_turn",
        },
    )
    return s


def bash_step(command: str, output: str, ok: bool, **params: Any) -> Step:
    """A Claude Code ``Bash`` call as imported: ``command`` (with more ``params``), its
    ``output`` headed ``Exit code 1`` when it failed."""
    return Step(
        tool="Bash",
        params={"command": command, **params},
        output=output if ok else f"Exit code 1\n{output}",
        success=ok,
    )


def codex_exec(cmd: str, output: str, ok: bool, **params: Any) -> Step:
    """A Codex ``exec_command`` call as imported: ``cmd`` (with more ``params``, such as
    ``workdir`` or ``sandbox_permissions``), its ``output`` framed as unified exec frames it
    (``Chunk ID``, ``Process exited with code`` 0 or 1 as it worked or not, ``Output:``)."""
    body = f"Chunk ID: 1a2b\nProcess exited with code {0 if ok else 1}\nOutput:\n{output}"
    return Step(tool="exec_command", params={"cmd": cmd, **params}, output=body, success=ok)


class CodexRollout(_Lines):
    """A Codex CLI rollout: ``{timestamp, type, payload}`` lines."""

    def __init__(self, session_id: str = "0199a000-1111-7222-8333-944445555666", cwd: str = "/w"):
        self.session_id = session_id
        self.cwd = cwd
        self.lines: list[dict[str, Any]] = []
        self._call = itertools.count(1)
        self.add(
            "session_meta",
            {
                "id": session_id,
                "cwd": cwd,
                "originator": "codex_cli_rs",
                "cli_version": "0.50.0",
                "git": {"branch": "main", "commit_hash": "abc123"},
            },
        )

    def add(self, kind: str, payload: dict[str, Any]) -> None:
        self.lines.append({"timestamp": _ts(), "type": kind, "payload": payload})

    def prompt(self, text: str) -> None:
        self.add(
            "turn_context",
            {"cwd": self.cwd, "model": "gpt-5-codex", "approval_policy": "on-request"},
        )
        self.add(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "<environment_context>x</environment_context>"}
                ],
            },
        )
        self.add("event_msg", {"type": "user_message", "message": text, "images": []})
        self.add(
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
        )

    def exec(
        self, cmd: str, output: str, exit_code: int = 0, denied: bool = False, event: bool = True
    ) -> str:
        cid = f"call_{next(self._call)}"
        self.add(
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": cmd}),
                "call_id": cid,
            },
        )
        if denied:
            output = "exec command rejected by user"
        if event:
            self.add(
                "event_msg",
                {
                    "type": "exec_command_end",
                    "call_id": cid,
                    "exit_code": -1 if denied else exit_code,
                    "aggregated_output": output,
                    "status": "declined" if denied else "completed",
                },
            )
        body = (
            output
            if denied
            else "Chunk ID: 1\nWall time: 0.1 seconds\n"
            f"Process exited with code {exit_code}\nOutput:\n{output}"
        )
        self.add("response_item", {"type": "function_call_output", "call_id": cid, "output": body})
        return cid

    def call(self, params: dict[str, Any], output: str, name: str = "exec_command") -> str:
        """A ``function_call`` of tool ``name`` and its ``function_call_output``, the output
        as given (no frame added: a refusal's own words, another version's frame); returns
        the call's id."""
        cid = f"call_{next(self._call)}"
        self.add(
            "response_item",
            {
                "type": "function_call",
                "name": name,
                "arguments": json.dumps(params),
                "call_id": cid,
            },
        )
        self.add(
            "response_item", {"type": "function_call_output", "call_id": cid, "output": output}
        )
        return cid

    def shell(self, argv: list[str], output: str, exit_code: int) -> None:
        """An older ``shell`` call whose output is JSON with the exit code in its metadata."""
        out = json.dumps(
            {"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": 0.1}}
        )
        self.call({"command": argv}, out, name="shell")

    def patch(self, patch: str, success: bool) -> None:
        cid = f"call_{next(self._call)}"
        self.add(
            "response_item",
            {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "input": patch,
                "call_id": cid,
                "status": "completed",
            },
        )
        self.add(
            "event_msg",
            {
                "type": "patch_apply_end",
                "call_id": cid,
                "success": success,
                "stdout": "",
                "stderr": "",
            },
        )
        self.add(
            "response_item",
            {
                "type": "custom_tool_call_output",
                "call_id": cid,
                "output": "Success. Updated the following files:\nM a.py"
                if success
                else "error: patch did not apply",
            },
        )

    def done(self, aborted: str | None = None) -> None:
        if aborted:
            self.add("event_msg", {"type": "turn_aborted", "reason": aborted})
        else:
            self.add("event_msg", {"type": "agent_message", "message": "Done."})
            self.add("event_msg", {"type": "task_complete", "last_agent_message": "Done."})


def codex_fixture(cwd: str) -> CodexRollout:
    """Three prompts: a test run that fails, is patched and passes; a denied command; an
    interrupted turn. Plus a token_count and an unknown record type."""
    r = CodexRollout(cwd=cwd)
    r.prompt("make the unit tests pass")
    r.exec("pytest -q", "1 failed", exit_code=1)
    r.patch("*** Begin Patch\n*** Update File: a.py\n*** End Patch", success=True)
    r.exec("pytest -q", "4 passed", exit_code=0)
    r.add("event_msg", {"type": "token_count", "info": {"total_tokens": 10}})
    r.done()
    r.prompt("deploy to production")
    r.exec("kubectl apply -f deploy.yaml", "", denied=True)
    r.done()
    r.prompt("show the git log")
    r.shell(["bash", "-lc", "git log --oneline -3"], "abc first", exit_code=0)
    r.add("brand_new_record", {"x": 1})
    r.done(aborted="interrupted")
    return r


def anthropic_conversation(extra_turn: bool = False) -> dict[str, Any]:
    """A Messages API request body: two prompts with tool use (one failing call)."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "18 C, cloudy"}
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "18 C and cloudy."}]},
        {"role": "user", "content": [{"type": "text", "text": "And in Atlantis?"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_02",
                    "name": "get_weather",
                    "input": {"city": "Atlantis"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_02",
                    "content": [{"type": "text", "text": "unknown city"}],
                    "is_error": True,
                }
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "I could not find it."}]},
    ]
    if extra_turn:
        messages += [
            {"role": "user", "content": "Then Rome."},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_03",
                        "name": "get_weather",
                        "input": {"city": "Rome"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_03", "content": "25 C"}],
            },
            {"role": "assistant", "content": "25 C in Rome."},
        ]
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": messages}
