"""An agent that is a command line: ``claude -p {prompt}``, ``codex exec {prompt}``.

The template is split like a shell would (:func:`shlex.split`) but never run by one:
``{prompt}`` becomes the task's prompt (with its guidance before it) inside one argument,
whatever it holds, and ``{workspace}`` the rollout's folder; the command runs in that
folder, with no input, under the task's timeout (then its whole process group is
killed). The task's check command (the task file's author's own shell command) then runs
in the same folder: exit status 0 is success.

The run is recorded robustly: the transcript the client wrote for this workspace
(Claude Code's under ``$CLAUDE_CONFIG_DIR`` or ``~/.claude/projects``, Codex's under
``$CODEX_HOME`` or ``~/.codex/sessions``; found by the working folder it names, which is
this rollout's alone) is imported with the existing importers (turns the client's own
hooks imported already are found by their session), then put in the practice group with
its reward (:mod:`.record`). Tokens and cost are read from what the client printed, where
it prints them (``claude -p --output-format json``, ``codex exec --json``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from ..errors import InvalidRecordError
from ..jsonsafe import JSONInputError, loads
from .record import attach, project, stub
from .types import Outcome, Task

__all__ = ["CLIENTS", "CliAgent", "Usage", "parse_usage", "render"]

#: The transcript formats this agent imports, by the client's program name.
CLIENTS: Mapping[str, str] = {"claude": "claude-code", "codex": "codex"}
_PLACEHOLDER = re.compile(r"\{(prompt|workspace)\}")
#: How much of the client's output is kept for reading its usage.
MAX_OUTPUT = 8 * 1024 * 1024
#: How much of a transcript's head is read to find the folder it ran in.
HEAD_BYTES = 256 * 1024


def render(template: str, prompt: str, workspace: Path | None) -> list[str]:
    """The argv of ``template`` for one rollout: split once, then each placeholder
    replaced inside its own argument (a prompt is never split nor read by a shell)."""
    argv = _split(template)
    values = {"prompt": prompt, "workspace": str(workspace or "")}
    return [_PLACEHOLDER.sub(lambda m: values[m.group(1)], a) for a in argv]


def _split(template: str) -> list[str]:
    try:
        argv = shlex.split(template)
    except ValueError as e:
        raise InvalidRecordError(f"the agent template {template!r} cannot be split: {e}") from None
    if not argv:
        raise InvalidRecordError("the agent template is empty")
    if not any("{prompt}" in a for a in argv):
        raise InvalidRecordError(
            f"the agent template {template!r} has no {{prompt}} placeholder: write where the "
            "prompt goes, for example 'claude -p {prompt}'"
        )
    return argv


def client_of(argv: list[str]) -> str | None:
    """The transcript format of the client a template runs (its first argument named
    ``claude`` or ``codex``, wherever a wrapper put it), or None."""
    for a in argv:
        name = Path(a).name
        if name in CLIENTS:
            return CLIENTS[name]
    return None


@attrs.frozen
class Usage:
    """What the client printed about a rollout: tokens, cost and its session id."""

    tokens: int | None = None
    cost_usd: float | None = None
    session_id: str | None = None


def _objects(text: str) -> Iterator[dict[str, Any]]:
    chunks = [text] if text.lstrip().startswith("{") and "\n{" not in text.strip() else []
    chunks += text.splitlines() if not chunks else []
    for chunk in chunks:
        chunk = chunk.strip()
        if not chunk.startswith("{"):
            continue
        try:
            value = loads(chunk, what="the client's output")
        except JSONInputError:
            continue
        if isinstance(value, dict):
            yield value


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def parse_usage(stdout: str) -> Usage:
    """Tokens, cost and session id from a client's output: Claude Code's ``-p
    --output-format json`` result (``usage``, ``total_cost_usd``, ``session_id``) or
    Codex's ``exec --json`` events (``turn.completed``'s ``usage``, ``thread.started``'s
    ``thread_id``); nothing for other output."""
    tokens: int | None = None
    cost: float | None = None
    sid: str | None = None
    for obj in _objects(stdout[:MAX_OUTPUT]):
        usage = obj.get("usage")
        if isinstance(usage, dict) and obj.get("type") in ("result", "turn.completed"):
            n = sum(
                _int(usage.get(k))
                for k in (
                    "input_tokens",
                    "output_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                )
            )
            tokens = (tokens or 0) + n
        c = obj.get("total_cost_usd")
        if isinstance(c, (int, float)) and not isinstance(c, bool) and c >= 0:
            cost = (cost or 0.0) + float(c)
        for key in ("session_id", "thread_id"):
            if isinstance(obj.get(key), str) and obj[key].strip():
                sid = obj[key][:200]
    return Usage(tokens, cost, sid)


class _Running:
    """The processes an agent has under way (one per rollout running at once), so that a
    practice stopped by Ctrl-C kills them all: after :meth:`stop`, every process of the
    agent is killed, none is started any more, and each rollout under way raises
    KeyboardInterrupt (nothing of it is recorded, as with one rollout at a time)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.procs: set[subprocess.Popen[str]] = set()
        self.stopped = False

    def start(self, argv: list[str], **kwargs: Any) -> subprocess.Popen[str]:
        with self.lock:  # a process is started and known as one step, never after stop()
            if self.stopped:
                raise KeyboardInterrupt("the practice was stopped")
            proc: subprocess.Popen[str] = subprocess.Popen(argv, **kwargs)
            self.procs.add(proc)
            return proc

    def done(self, proc: subprocess.Popen[str]) -> None:
        with self.lock:
            self.procs.discard(proc)
        if self.stopped:
            raise KeyboardInterrupt("the practice was stopped")

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            procs = list(self.procs)
        for proc in procs:
            _kill(proc)


@attrs.frozen
class CliAgent:
    """A client run from a command-line template (see the module's docstring).

    ``client``: the transcript format to import (``claude-code``, ``codex``; default:
    from the template's program); ``env``: more environment for the client (and for
    finding its transcripts: ``HOME``, ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``).
    """

    template: str
    client: str | None = None
    env: Mapping[str, str] = attrs.field(factory=dict)
    name: str = attrs.field(init=False)
    _running: _Running = attrs.field(factory=_Running, init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        argv = _split(self.template)
        client = self.client or client_of(argv)
        if client is not None and client not in CLIENTS.values():
            raise InvalidRecordError(
                f"client must be one of {', '.join(CLIENTS.values())}, not {client!r}"
            )
        object.__setattr__(self, "client", client)
        object.__setattr__(self, "name", client or Path(argv[0]).name)

    def stop(self) -> None:
        """Kill every process of this agent under way (its rollouts then raise
        KeyboardInterrupt) and start none any more: a practice stopped by Ctrl-C while
        rollouts run at once (``--jobs``). The agent is spent afterwards."""
        self._running.stop()

    # -- one rollout -----------------------------------------------------------------------

    def run(
        self, task: Task, workspace: Path | None, guidance: str, seed: int, db: Path
    ) -> Outcome:
        """Run the client on ``task`` in ``workspace``, check the result, record the run."""
        if workspace is None or task.check is None:
            raise InvalidRecordError(
                f"task {task.id} has no repository or no check: a command-line agent needs both"
            )
        prompt = f"{guidance.strip()}\n\n{task.prompt}" if guidance.strip() else task.prompt
        argv = render(self.template, prompt, workspace)
        env = {**os.environ, **self.env}
        started = time.time()
        t0 = time.perf_counter()
        error: str | None = None
        stdout = ""
        try:
            code, stdout, stderr = _run(argv, workspace, env, task.timeout_s, self._running)
            if code == -9:
                error = f"the agent ran past {task.timeout_s:g} s and was stopped"
            elif code != 0:
                error = f"the agent exited with status {code}: {stderr.strip()[-300:]}"
        except (FileNotFoundError, PermissionError) as e:  # misconfigured: stop, do not count
            raise InvalidRecordError(f"the agent {argv[0]!r} cannot be run: {e}") from None
        except OSError as e:
            error = f"the agent could not start: {e}"
        success = False
        check_note = ""
        if error is None or "exited with status" in error:
            success, check_note = _check(task, workspace, env, self._running)
        wall = time.perf_counter() - t0
        usage = parse_usage(stdout)
        facts = {"seed": seed, "agent": self.name, "check": check_note, "guided": bool(guidance)}
        run_id = self._record(task, workspace, db, env, started, usage, success, facts, error)
        meta = {"agent": self.name, "check": check_note}
        if usage.session_id:
            meta["session_id"] = usage.session_id
        return Outcome(
            task_id=task.id,
            seed=seed,
            reward=1.0 if success else 0.0,
            success=success,
            wall_s=wall,
            run_id=run_id,
            tokens=usage.tokens,
            cost_usd=usage.cost_usd,
            error=error,
            meta=meta,
        )

    def _record(
        self,
        task: Task,
        workspace: Path,
        db: Path,
        env: Mapping[str, str],
        started: float,
        usage: Usage,
        success: bool,
        facts: Mapping[str, Any],
        error: str | None,
    ) -> int | None:
        """The rollout's run, in its group with its reward: the turn imported from the
        client's transcript, else (when the agent ran without error) a run without steps;
        None when the agent failed and left no run (it did not get to work)."""
        from ..memory import Memory

        with Memory.open(db) as mem:
            ids: list[int] = []
            found = self.transcript(workspace, env, started, usage.session_id)
            if found is not None and self.client is not None:
                path, sid = found
                report = mem.import_transcripts(
                    self.client, [path], final=True, project=project(task)
                )
                ids = list(report.ids)
                if not ids and sid:  # the client's hooks imported it already
                    from ..storage.trajectories import of_session

                    ids = of_session(mem.db, sid, str(workspace))
            if not ids and error is not None:
                return None
            run_id = ids[0] if ids else stub(mem, task, why=_why(found, self.client), facts=facts)
            attach(mem, run_id, task, success=success, facts=facts)
            return run_id

    def transcript(
        self, workspace: Path, env: Mapping[str, str], since: float, session_id: str | None
    ) -> tuple[Path, str | None] | None:
        """The transcript the client wrote for a rollout in ``workspace`` (a file changed
        since ``since`` that names it as its working folder) and its session id."""
        root = _home(self.client, env)
        if root is None or not root.is_dir():
            return None
        pattern = "*.jsonl" if self.client == "claude-code" else "rollout-*.jsonl"
        wanted = {str(workspace), os.path.realpath(workspace)}
        files = []
        for p in root.rglob(pattern):
            try:
                if p.is_file() and p.stat().st_mtime >= since - 2:
                    files.append(p)
            except OSError:
                continue
        # the client's own session first, then the newest
        files.sort(key=lambda p: (session_id is None or session_id not in p.name, -_mtime(p)))
        for p in files:
            sid = _names_cwd(p, wanted)
            if sid is not None:
                return p, sid or None
        return None


def _why(found: tuple[Path, str | None] | None, client: str | None) -> str:
    if client is None:
        return "the agent is no client agentmem reads transcripts of"
    if found is None:
        return "no transcript of this rollout was found"
    return "the transcript holds no turn with a tool call"


def _home(client: str | None, env: Mapping[str, str]) -> Path | None:
    home = Path(env.get("HOME") or Path.home())
    if client == "claude-code":
        return Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude") / "projects"
    if client == "codex":
        return Path(env.get("CODEX_HOME") or home / ".codex") / "sessions"
    return None


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def _names_cwd(path: Path, wanted: set[str]) -> str | None:
    """The session id ("" when none is named) when the transcript's head says it ran in
    one of ``wanted``, else None."""
    try:
        with path.open("rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return None
    sid = ""
    hit = False
    for line in head.decode("utf-8", "replace").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        payload = obj.get("payload")
        body: dict[str, Any] = payload if isinstance(payload, dict) else obj
        cwd = body.get("cwd")
        if isinstance(cwd, str) and cwd in wanted:
            hit = True
        for key in ("sessionId", "id") if body is not obj else ("sessionId",):
            if not sid and isinstance(body.get(key), str):
                sid = body[key]
        if hit and sid:
            break
    return sid if hit else None


def _run(
    argv: list[str],
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    running: _Running | None = None,
) -> tuple[int, str, str]:
    """Run ``argv`` in its own process group; on timeout kill the group (status -9).
    ``running``: the agent's processes under way (:meth:`CliAgent.stop` kills them)."""
    proc: subprocess.Popen[str] | None = None
    runs = running or _Running()
    try:
        proc = runs.start(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            _kill(proc)
            out, err = proc.communicate()
            code = -9
        runs.done(proc)  # raises when the practice was stopped meanwhile
        return code, out, err
    except BaseException:  # Ctrl-C, a kill: the agent does not outlive the practice
        if proc is not None:
            _kill(proc)
            proc.wait()
            runs.procs.discard(proc)
        raise


def _kill(proc: subprocess.Popen[str]) -> None:
    """Kill ``proc``'s whole process group (it leads one of its own)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()


def _check(
    task: Task, workspace: Path, env: Mapping[str, str], running: _Running | None = None
) -> tuple[bool, str]:
    """Run the task's check in ``workspace``: (passed, a short note)."""
    try:
        code, _out, err = _run(
            ["/bin/sh", "-c", task.check or "false"], workspace, env, task.timeout_s, running
        )
    except OSError as e:
        return False, f"check could not run: {e}"[:300]
    if code == -9:
        return False, f"check ran past {task.timeout_s:g} s"
    return code == 0, f"check exit {code}" + (f": {err.strip()[-200:]}" if code else "")
