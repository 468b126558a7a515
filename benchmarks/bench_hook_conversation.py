"""What reading the conversation costs the prompt hook: the same cold hook with and without it.

A prompt that says little ("3") is searched with the agent's last message and the user's
previous prompt, read from the end of ``transcript_path`` (``agentmem.hooks.recent``).
This runs the command Claude Code runs before every prompt (``<python> -m agentmem hooks
run claude-code``, the ``UserPromptSubmit`` JSON on standard input) on a library of N
lessons (``bench_context.build``), for the prompt "3", interleaved in the same run:

- **prompt only**: the payload without ``transcript_path`` (nothing is read);
- **with the conversation**: the payload with ``transcript_path``, a synthetic session of
  the given size in each client's format (Claude Code: tool results of 200 KB between
  the prompts; Codex: the same as ``function_call_output`` items), whose last turn ends
  with the agent's question.

Printed: the median and 95th percentile wall time of each, their ratios to the prompt-only
hook, and the tail reader alone in this process (median microseconds of
:func:`agentmem.hooks.recent.conversation`). No timed assertion: the ratio is the result.

    python benchmarks/bench_hook_conversation.py [--lessons 1000] [--runs 31] [--mb 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_context import build, pct  # noqa: E402

SESSION = "0b6f2a4e-5c1d-4e8a-9f3b-7d2c1a0e9b84"
QUESTION = (
    "The branch is ready. I can: 1. rerun the unit tests, 2. rebase on main, "
    "3. git push the feature branch to origin. Which one?"
)


def claude_session(path: Path, mb: int) -> None:
    """A Claude Code transcript of about ``mb`` MB: turns of a prompt, a call, a 200 KB
    result and an answer; the last answer asks a question."""
    out = "x" * 200_000
    with open(path, "w", encoding="utf-8") as f:
        n = 0
        while f.tell() < mb * 1_000_000:
            n += 1
            for kind, content in (
                ("user", f"turn {n}: fix the failing test in the invoice parser"),
                ("assistant", [{"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {}}]),
                ("user", [{"type": "tool_result", "tool_use_id": f"t{n}", "content": out}]),
                ("assistant", [{"type": "text", "text": QUESTION}]),
            ):
                line = {"type": kind, "sessionId": SESSION, "isSidechain": False}
                line["message"] = {"role": kind, "content": content}
                f.write(json.dumps(line) + "\n")


def codex_session(path: Path, mb: int) -> None:
    """A Codex rollout of about ``mb`` MB, turn by turn as :func:`claude_session`."""
    out = "x" * 200_000
    with open(path, "w", encoding="utf-8") as f:
        n = 0
        while f.tell() < mb * 1_000_000:
            n += 1
            for kind, payload in (
                ("event_msg", {"type": "user_message", "message": f"turn {n}: fix the parser"}),
                ("response_item", {"type": "function_call", "name": "shell", "call_id": f"c{n}"}),
                (
                    "response_item",
                    {"type": "function_call_output", "call_id": f"c{n}", "output": out},
                ),
                ("event_msg", {"type": "agent_message", "message": QUESTION}),
                ("event_msg", {"type": "task_complete"}),
            ):
                f.write(json.dumps({"type": kind, "payload": payload}) + "\n")


def payload(cwd: str, transcript: Path | None) -> bytes:
    body: dict[str, Any] = {
        "session_id": SESSION,
        "cwd": cwd,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "3",
    }
    if transcript is not None:
        body["transcript_path"] = str(transcript)
    return json.dumps(body).encode()


def measure(
    cmd: list[str], inputs: list[bytes], env: dict[str, str], runs: int
) -> list[list[float]]:
    """Wall milliseconds of ``cmd`` fed each of ``inputs``, their runs interleaved."""
    for data in inputs:  # untimed: writes the .pyc files
        subprocess.run(cmd, input=data, capture_output=True, env=env, check=True)
    walls: list[list[float]] = [[] for _ in inputs]
    for _ in range(runs):
        for n, data in enumerate(inputs):
            t0 = time.perf_counter()
            subprocess.run(cmd, input=data, capture_output=True, env=env, check=True)
            walls[n].append((time.perf_counter() - t0) * 1e3)
    return walls


def reader_us(path: Path, rounds: int = 200) -> float:
    """Median microseconds of the tail reader on ``path`` in this process."""
    from agentmem.hooks.recent import conversation

    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        conversation(path, "3")
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lessons", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=31)
    ap.add_argument("--mb", type=int, default=20, help="the size of each synthetic transcript")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT), XDG_STATE_HOME="")
    with tempfile.TemporaryDirectory() as d:
        lib = Path(d) / "lib.db"
        build(lib, args.lessons)
        claude, codex = Path(d) / "claude.jsonl", Path(d) / "rollout.jsonl"
        claude_session(claude, args.mb)
        codex_session(codex, args.mb)
        env["XDG_STATE_HOME"] = str(Path(d) / "state")
        cmd = [sys.executable, "-m", "agentmem", "hooks", "run", "claude-code", "--db", str(lib)]
        labels = ["prompt only", "with the conversation (Claude Code)", "with it (Codex)"]
        inputs = [payload(d, None), payload(d, claude), payload(d, codex)]
        os.chdir(d)  # ``-m`` puts the current folder first on the path: an empty one
        try:
            walls = measure(cmd, inputs, env, args.runs)
        finally:
            os.chdir(ROOT)
        print(
            f"{args.lessons} lessons, prompt '3', transcripts of {args.mb} MB, "
            f"{args.runs} interleaved runs each"
        )
        base50, base95 = statistics.median(walls[0]), pct(walls[0], 0.95)
        for label, w in zip(labels, walls, strict=True):
            m, p = statistics.median(w), pct(w, 0.95)
            print(
                f"  {label:38s} p50 {m:6.1f} ms  p95 {p:6.1f} ms  "
                f"ratio p50 {m / base50:4.2f}  p95 {p / base95:4.2f}"
            )
        for name, path in (("Claude Code", claude), ("Codex", codex)):
            print(f"  the tail reader alone ({name}): {reader_us(path):.0f} us (median)")


if __name__ == "__main__":
    main()
