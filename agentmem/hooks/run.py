"""``agentmem hooks run AGENT``: what an agent's hook runs. It never breaks the agent.

Claude Code passes a JSON object on standard input (``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name``, and per event ``prompt`` or
``last_assistant_message``):

- ``UserPromptSubmit``: prints the lessons for the prompt, served in the project
  of the hook's ``cwd``, as ``hookSpecificOutput.additionalContext`` (nothing when
  none fits, or when ``AGENTMEM_SERVE=off``). A prompt that says little ("3",
  "proceed") is searched together with the agent's last message and the user's
  previous prompt, read from the end of ``transcript_path`` (:mod:`.recent`); only
  the lessons chosen reach the prompt. This is the fast path: it imports
  neither click nor sqlite-utils.
- ``Stop``: imports the new turns of ``transcript_path`` (the turn just finished
  counts as complete); with ``--learn``, when something new was recorded, starts
  a detached learner that waits out the acceptance window and runs a session.

Codex 0.124 and later runs the same two hooks with the same kind of input
(``transcript_path`` is the thread's rollout) and reads the same answer. Older
Codex runs its ``notify`` program with one JSON argument
(``{"type": "agent-turn-complete", "thread-id": ..., "cwd": ...}``): the rollout
of that thread is imported the same way.

Whatever goes wrong, the command exits 0, writes one line to standard error and
the details to the log (``~/.local/state/agentmem/hooks.log``); standard output
only ever carries the context.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..jsonsafe import JSONInputError, loads
from .log import LOG_NAME, log, log_path, mark_fired

if TYPE_CHECKING:
    from ..serving import Served

__all__ = ["LOG_NAME", "MAX_PROMPT_CHARS", "log_path", "prompt_served", "run_main"]

#: The part of a prompt that the context search reads.
MAX_PROMPT_CHARS = 4000


AGENTS = ("claude-code", "codex")


class _Args:
    """The hook's arguments: ``AGENT [--db PATH] [--learn] [--no-model] [PAYLOAD]``.
    (A plain class: a NamedTuple's creation costs the prompt hook more than its use.)"""

    __slots__ = ("agent", "db", "learn", "no_model", "payload")

    def __init__(
        self,
        agent: str,
        db: str | None = None,
        learn: bool = False,
        no_model: bool = False,
        payload: str | None = None,  # Codex's notify passes the JSON as an argument
    ) -> None:
        self.agent, self.db, self.learn, self.no_model = agent, db, learn, no_model
        self.payload = payload

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Args) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__
        )

    def __repr__(self) -> str:
        return "_Args(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


def _parse(argv: Sequence[str]) -> _Args:
    """The arguments as the hooks ``hooks install`` writes give them, read by hand (argparse
    costs the prompt hook a tenth of its time); anything else goes to :func:`_parse_full`,
    which accepts the same and explains the rest."""
    words: list[str] = []
    db: str | None = None
    flags: set[str] = set()
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("--learn", "--no-model"):
            flags.add(a)
        elif a == "--db" and args and not args[0].startswith("-"):
            db = args.pop(0)
        elif a.startswith("--db=") and len(a) > 5:
            db = a[5:]
        elif a.startswith("-"):
            return _parse_full(argv)
        else:
            words.append(a)
    if not 1 <= len(words) <= 2 or words[0] not in AGENTS:
        return _parse_full(argv)
    return _Args(
        words[0], db, "--learn" in flags, "--no-model" in flags, words[1] if words[1:] else None
    )


def _parse_full(argv: Sequence[str]) -> _Args:
    """:func:`_parse` with argparse: the same arguments, and one line for a bad one."""
    import argparse
    from typing import NoReturn

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:  # a line in the log, not a usage on stderr
            raise ValueError(f"bad arguments: {message}")

    p = Parser(prog="agentmem hooks run", add_help=False, allow_abbrev=False)
    p.add_argument("agent", choices=AGENTS)
    p.add_argument("--db")
    p.add_argument("--learn", action="store_true")
    p.add_argument("--no-model", action="store_true")
    p.add_argument("payload", nargs="?")
    ns = p.parse_intermixed_args(list(argv))
    return _Args(ns.agent, ns.db, ns.learn, ns.no_model, ns.payload)


def _db_path(args: _Args) -> str:
    from ..paths import default_db_path

    return args.db or str(default_db_path())


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send everything written to standard output, by Python or by C code, to stderr."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no file descriptor 1: Python's redirection is all there is
        saved = -1
    if saved >= 0:
        os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        if saved >= 0:
            os.dup2(saved, 1)
            os.close(saved)


def run_main(argv: Sequence[str]) -> int:
    """Run a hook; always returns 0. ``argv``: the words after ``agentmem hooks run``."""
    out = ""
    try:
        with _stdout_to_stderr():  # only the context reaches stdout
            args = _parse(argv)
            if args.agent == "codex" and args.payload is not None:  # notify
                _codex_notify(args, _payload(args.payload.encode()))
            else:
                out = _hook_event(args, args.agent, _payload(sys.stdin.buffer.read()))
    except BaseException as e:  # never break the agent: not even on Ctrl-C or a bug
        import traceback

        detail = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        where = log_path()
        command = " ".join(argv)[:300]
        try:
            log(f"error in 'agentmem hooks run {command}':\n{detail.rstrip()}")
        except Exception:
            where = Path("(the log could not be written)")
        line = f"{type(e).__name__}: {e}".replace("\n", " ")[:300]
        with contextlib.suppress(Exception):
            from ..redact import redact  # an error may quote the payload

            line = redact(line)
        with contextlib.suppress(Exception):
            sys.stderr.write(f"agentmem hook: {line} (details: {where})\n")
        if _cannot_write(e) and argv[:1] == ["claude-code"]:
            # Claude Code shows a hook's systemMessage to the user, not its stderr: a
            # library that cannot be written would otherwise stop recording silently
            with contextlib.suppress(Exception):
                msg = f"agentmem: the library cannot be written ({line}); see {where}"
                sys.stdout.write(json.dumps({"systemMessage": msg}) + "\n")
                sys.stdout.flush()
        return 0
    if out:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    return 0


def _cannot_write(e: BaseException) -> bool:
    """Whether ``e`` says the library (or its folder) cannot be written."""
    import errno

    text = str(e).lower()
    codes = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.ENOSPC, errno.EDQUOT}
    return (isinstance(e, OSError) and e.errno in codes) or any(
        w in text
        for w in ("readonly database", "read-only", "unable to open database", "cannot create")
    )


def _payload(data: bytes) -> dict[str, Any]:
    try:
        obj = loads(data, what="the text") if data.strip() else None
    except JSONInputError as e:
        raise ValueError(f"the hook's input is not JSON ({e})") from None
    if not isinstance(obj, dict):
        raise ValueError("the hook's input is not a JSON object")
    return obj


def _text(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) and value.strip() else None


# -- hook events (Claude Code, Codex 0.124 and later) ---------------------------------------------


def _hook_event(args: _Args, fmt: str, payload: dict[str, Any]) -> str:
    """Answer one hook event of ``fmt``'s client: the context, or an import."""
    event = payload.get("hook_event_name")
    if isinstance(event, str):
        mark_fired(fmt, event)
    if event == "UserPromptSubmit":
        return _prompt_context(args, payload)
    import gc

    gc.enable()  # an import may be long: collect as usual (the entry turned it off)
    if event in ("Stop", "SubagentStop", "SessionEnd"):
        transcript = _text(payload, "transcript_path")
        if transcript is None:
            raise ValueError(f"{event}: the input has no transcript_path")
        if os.path.exists(transcript) and not os.path.isfile(transcript):  # a folder would
            raise ValueError(  # import every transcript in it
                f"{event}: transcript_path is not a file: {transcript[:200]!r}"
            )
        state = None
        if fmt == "claude-code":
            from ..importers.claude_code import stop_state

            state = stop_state(payload).kwargs()  # SubagentStop: not the session's last turn
        _import(args, fmt, transcript, payload.get("session_id"), state, _text(payload, "cwd"))
    return ""


def _prompt_context(args: _Args, payload: dict[str, Any]) -> str:
    """The ``UserPromptSubmit`` answer: lessons for the prompt, in the hook's project
    (nothing, and nothing logged as served, under ``AGENTMEM_SERVE=off``)."""
    served = prompt_served(_db_path(args), payload, args.agent)
    block = "" if served is None else served.text
    if not block:
        return ""
    answer = {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": block}
    }
    return json.dumps(answer, ensure_ascii=False)


def prompt_served(db: str, payload: dict[str, Any], client: str | None = None) -> Served | None:
    """What the ``UserPromptSubmit`` hook serves for ``payload`` (its ``prompt``, ``cwd``,
    ``session_id`` and ``transcript_path``) from the library file ``db``:
    :func:`agentmem.context.serve_file` with the hook's :class:`~agentmem.serving.Query`
    (served log included); a prompt that says little is searched with the conversation
    before it, read from the end of ``transcript_path`` (:func:`_conversation`). None when
    nothing is searched: ``AGENTMEM_SERVE=off``, no prompt, or no library yet. ``client``:
    the coding agent whose hook this is (``claude-code``, ``codex``): a standing lesson
    about the other one's tool is not served. The benchmarks' replay calls it to stand for
    the hook."""
    from ..paths import serving_off

    if serving_off():
        return None
    prompt = _text(payload, "prompt")
    if prompt is None or not prompt[:MAX_PROMPT_CHARS].strip() or not os.path.isfile(db):
        return None  # nothing to search with, or no library yet
    from ..context import serve_file  # the lean path; Memory when the file needs it
    from ..serving import Query

    session = payload.get("session_id")  # for the served log (agentmem.served)
    query = Query(
        prompt[:MAX_PROMPT_CHARS],
        project=_text(payload, "cwd") or os.getcwd(),
        session=session if isinstance(session, str) else None,
        route="hook",
        conversation=_conversation(prompt, _text(payload, "transcript_path")),
        client=client,
    )
    return serve_file(db, query)


def _conversation(prompt: str, transcript: str | None) -> str | None:
    """For a prompt that says little (:func:`agentmem.framing.says_little`), what came just
    before it in the transcript (:func:`agentmem.hooks.recent.conversation`); else None."""
    from ..framing import says_little

    if transcript is None or not says_little(prompt[:MAX_PROMPT_CHARS]):
        return None
    from .recent import conversation

    return conversation(transcript, prompt)


def _import(
    args: _Args,
    fmt: str,
    transcript: str,
    session: Any,
    state: dict[str, Any] | None = None,
    cwd: str | None = None,
) -> None:
    from ..memory import Memory

    with Memory.open(args.db) as mem:
        paused = mem.project_state(cwd) if cwd else None
        if paused is not None:
            log(f"{fmt} session {session}: not recorded, its project is {paused}")
            return
        report = mem.import_transcripts(fmt, [transcript], **(state or {"final": True}))
    log(
        f"{fmt} session {session}: imported {len(report.ids)} trajectories "
        f"({report.already} turns before, {report.in_progress} in progress"
        + (f", {len(report.bad_lines)} bad lines" if report.bad_lines else "")
        + ")"
    )
    if args.learn and report.ids:
        from .learner import spawn

        spawn(db=args.db, no_model=args.no_model)


# -- Codex's notify (before 0.124) ----------------------------------------------------------------


def find_rollout(thread_id: str, sessions: Path) -> Path | None:
    """The rollout file of a Codex thread: today's and yesterday's folders first, then all."""
    pattern = f"rollout-*{thread_id}.jsonl"
    now = time.time()
    for t in (now, now - 86400):
        day = sessions / time.strftime("%Y/%m/%d", time.localtime(t))
        found = sorted(day.glob(pattern)) if day.is_dir() else []
        if found:
            return found[-1]
    found = sorted(sessions.rglob(pattern)) if sessions.is_dir() else []
    return found[-1] if found else None


def _codex_notify(args: _Args, payload: dict[str, Any]) -> None:
    import gc

    gc.enable()  # an import may be long: collect as usual (the entry turned it off)
    if payload.get("type") != "agent-turn-complete":
        return
    thread = _text(payload, "thread-id")
    if thread is None or not all(c.isalnum() or c in "-_" for c in thread):
        raise ValueError("the notification has no usable thread-id")
    from ..importers.run import default_path

    sessions = default_path("codex")
    rollout = find_rollout(thread, sessions)
    if rollout is None:
        raise FileNotFoundError(f"no rollout of thread {thread} under {sessions}")
    _import(args, "codex", str(rollout), thread)


def main() -> None:  # python -m agentmem.hooks.run
    sys.exit(run_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
