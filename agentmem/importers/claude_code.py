"""Claude Code session transcripts: ``~/.claude/projects/<project>/<session-id>.jsonl``.

Each line is a JSON object with a ``type``. ``user`` and ``assistant`` lines
carry ``uuid``, ``sessionId``, ``timestamp``, ``cwd``, ``isSidechain`` and an
Anthropic ``message``: the assistant's ``tool_use{id, name, input}`` blocks and
the following user line's ``tool_result{tool_use_id, content, is_error}``
blocks. A user line whose content is text (no tool results) is a prompt, unless
it is one of Claude Code's own notes (slash-command output, a compaction
summary, an interruption marker, ...). Sub-agent runs live in
``<session-id>/subagents/agent-<id>.jsonl`` and become trajectories of their own,
linked to the parent turn in ``meta.subagent``; Claude Code 1.0.x wrote them inline
(``isSidechain: true`` lines chained by ``parentUuid``, starting with the Task's prompt),
and each chain becomes a sub-agent trajectory the same way. A ``<task-notification>``
(``promptSource: "system"``) while the agent works is not a prompt; after the turn ended,
it is a turn whose task is the conversation's (:mod:`agentmem.conversation`). Every
assistant line names its model (``meta.model``).

Anthropic calls this format internal and changes it between versions, so the
parser keeps to the fields above and skips (and counts) everything else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from ..conversation import NOTIFICATION_TAGS
from ..framing import CLIENT_TEXT, INJECTED
from .formats import Bundle, ParsedFile, TranscriptFormat, agent_id_of, home_of
from .turns import FileReport, JsonLines, Turn, TurnBuilder, exit_code, folder_key, text_of

__all__ = [
    "DENIAL_PREFIXES",
    "FORMAT",
    "INTERRUPT_MARKER",
    "ClaudeCodeFile",
    "StopState",
    "parse_claude_code",
    "running_subagents",
    "stop_state",
]

SOURCE = "claude-code"

#: A user line (or tool result) starting with this marks the turn as interrupted.
INTERRUPT_MARKER = "[Request interrupted by user"
#: A tool result starting with one of these: the user denied the call.
DENIAL_PREFIXES = (
    "The user doesn't want to proceed with this tool use",
    "The user doesn't want to take this action right now",
)
# User text that Claude Code writes itself, and context hooks add to a prompt (agentmem's own
# lessons among them): not the prompt.
_NOT_PROMPTS = CLIENT_TEXT
_INJECTED = INJECTED
_AGENT_ID = re.compile(r"\bagent_?[iI]d:\s*([\w@.:-]+)")
# Tuples, not sets: a hostile line's "type" may be a list, and membership must not hash it.
_END_REASONS = (
    "end_turn",
    "stop_sequence",
    "max_tokens",
    "refusal",
)
#: Line types that carry no turn: skipped quietly (counted by kind under ``--verbose``).
KNOWN_OTHER = (
    "system",
    "summary",
    "progress",
    "attachment",
    "file-history-snapshot",
    "queue-operation",
    "api-request",
    "api-request-shape",
    "api-request-blob",
    "atis-latch",
    "tools-used",
    "cost-state",
    "mode",
    "last-prompt",
    "custom-title",
    "agent-name",
    "tag",
    "pr-link",
)
#: The models Claude Code names that are no model (a message it wrote itself).
_NO_MODEL = ("<synthetic>",)

ClaudeCodeFile = ParsedFile  # the name earlier versions exported


def _prompt_text(content: Any, report: FileReport) -> str | None:
    """The prompt in a user message, or None when the message is not a prompt."""
    if isinstance(content, str):
        blocks: list[Any] = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        blocks = content
    else:
        return None
    texts = []
    for b in blocks:
        if isinstance(b, Mapping) and isinstance(b.get("text"), str) and b.get("type") == "text":
            texts.append(b["text"])
        elif isinstance(b, Mapping) and b.get("type") in ("image", "document"):
            texts.append(f"[{b['type']}]")
        else:
            report.skipped_blocks[
                str(b.get("type") if isinstance(b, Mapping) else "non-object")
            ] += 1
    text = _INJECTED.sub("", "\n".join(texts)).strip()
    if text.startswith(_NOT_PROMPTS):
        return None
    return text  # a slash command keeps its wrapping: conversation.classify reads it


def _result_text(content: Any, report: FileReport) -> str:
    return text_of(content, report)


def parse_claude_code(
    data: bytes,
    *,
    path: str = "",
    final: bool = False,
    quiet: bool = False,
    subagent: Mapping[str, Any] | None = None,
) -> ParsedFile:
    """Turns of one Claude Code transcript (a session, or with ``subagent`` a sub-agent run).

    ``final``: the session's last turn is over (Claude Code's Stop hook says so).
    ``quiet``: the file has not changed for a long time. ``subagent``: the
    sub-agent's id and what is known of the call that started it. Sub-agents that
    old versions (1.0.x) wrote inline (``isSidechain: true``) become trajectories of
    their own, as a separate sub-agent file would.
    """
    report = FileReport(path)
    lines = JsonLines(data)  # each line read as it comes, and let go once it is
    report.bad_lines = lines.bad
    reader = _Reader(report, path, subagent)
    for n, obj, why in lines:
        if obj is None:
            reader.b.damage(n, why or "is unreadable")
        else:
            reader.line(n, obj)
    report.truncated = lines.truncated
    turns = reader.b.finish(final=final, quiet=quiet)
    for chain in reader.inline:
        # an inline sub-agent is over once its Task call has its result
        call = chain.parent_call
        done = final if call is None else call.output is not None or call.success is not None
        turns += chain.b.finish(final=done, quiet=quiet)
    return ParsedFile(tuple(turns), report, reader.links)


class _Reader:
    """One transcript being read: its turns so far, its Task calls and its sub-agents' links.

    An inline sub-agent (a chain of ``isSidechain`` lines) is read by a reader of its
    own, created at the chain's first line and found again by ``parentUuid``.
    """

    def __init__(
        self,
        report: FileReport,
        path: str,
        subagent: Mapping[str, Any] | None,
        *,
        tasks: dict[str, tuple[str, Turn, Any]] | None = None,
    ):
        self.report = report
        self.b = TurnBuilder(report)
        self.path = path
        self.stem = Path(path).stem if path else "session"
        self.subagent = subagent
        self.task_calls: dict[str, str] = {}  # Task/Agent tool_use id -> sub-agent type
        self.links: dict[str, dict[str, Any]] = {}
        # inline sub-agents: a Task call's prompt -> (tool_use id, turn, call)
        self.task_prompts: dict[str, tuple[str, Turn, Any]] = {} if tasks is None else tasks
        self.chains: dict[str, _Reader] = {}  # line uuid -> the inline sub-agent it belongs to
        self.inline: list[_Reader] = []  # the inline sub-agents, in the order they started
        self.parent_call: Any = None
        self.session: str | None = None
        self.note: tuple[int, Mapping[str, Any], str] | None = None  # a note before any prompt
        self.first_cwd: str | None = None  # the session's folder: its first line's

    def line(self, n: int, obj: Mapping[str, Any]) -> None:
        """One line: the assistant's calls, the tools' results or a prompt; else it is counted."""
        if obj.get("isSidechain") is True and self.subagent is None:
            self._sidechain(n, obj)
            return
        if self.first_cwd is None and isinstance(obj.get("cwd"), str) and obj["cwd"]:
            self.first_cwd = obj["cwd"]
        kind = obj.get("type")
        if kind not in ("user", "assistant"):
            if kind in KNOWN_OTHER:
                self.report.ignore(str(kind))
            else:
                self.report.skipped_lines[str(kind)[:40]] += 1
            return
        message = obj.get("message")
        if not isinstance(message, Mapping):
            self.report.skipped_lines[f"{kind} without a message"] += 1
            return
        content = message.get("content")
        if kind == "assistant":
            self._assistant(n, obj, message, content)
        elif not self._results(obj, content):
            self._prompt(n, obj, content)

    def _sidechain(self, n: int, obj: Mapping[str, Any]) -> None:
        """A line of an inline sub-agent (Claude Code 1.0.x): to the reader of its chain."""
        parent, uuid = obj.get("parentUuid"), obj.get("uuid")
        chain = self.chains.get(parent) if isinstance(parent, str) else None
        if chain is None and isinstance(parent, str) and parent and self.inline:
            chain = self.inline[-1]  # its parent line is not one we kept: the latest chain
        if chain is None:
            if obj.get("type") != "user":  # a chain starts with its prompt
                self.report.ignore(f"sidechain {str(obj.get('type'))[:40]} outside a sub-agent")
                return
            chain = self._new_chain(obj)
        if isinstance(uuid, str):
            self.chains[uuid] = chain
        chain.line(n, obj)

    def _new_chain(self, obj: Mapping[str, Any]) -> _Reader:
        """The reader of an inline sub-agent that starts at ``obj``, linked to its Task call."""
        message = obj.get("message")
        content = message.get("content") if isinstance(message, Mapping) else None
        prompt = _prompt_text(content, FileReport(""))
        uuid = obj.get("uuid")
        key = uuid[:8] if isinstance(uuid, str) and uuid else str(len(self.inline))
        agent = f"inline-{key}"
        link: dict[str, Any] = {"agent_id": agent, "inline": True}
        found = self.task_prompts.pop(prompt.strip(), None) if prompt else None
        sid = obj.get("sessionId")
        link["parent_session"] = sid if isinstance(sid, str) and sid else self.stem
        if found is not None:
            tid, turn, _call = found
            link.update(turn_id=turn.turn_id, tool_use_id=tid)
            if self.task_calls.get(tid):
                link["type"] = self.task_calls[tid]
            turn.meta.setdefault("subagents", []).append(agent)
        reader = _Reader(self.report, self.path, link, tasks=self.task_prompts)
        reader.parent_call = found[2] if found is not None else None
        self.inline.append(reader)
        return reader

    def _assistant(
        self, n: int, obj: Mapping[str, Any], message: Mapping[str, Any], content: Any
    ) -> None:
        """An assistant message: its tool calls; without one, it may end the turn."""
        blocks = content if isinstance(content, list) else []
        if self.b.current is None and any(
            isinstance(b, Mapping) and b.get("type") == "tool_use" for b in blocks
        ):
            self._continuation(n, obj)
        self.b.touch(obj.get("timestamp"))
        model = message.get("model")
        turn = self.b.current
        if turn is not None and isinstance(model, str) and model and model not in _NO_MODEL:
            turn.meta.setdefault("model", model[:100])
        has_call = False
        for block in blocks:
            if not isinstance(block, Mapping):
                self.report.skipped_blocks["non-object"] += 1
            elif block.get("type") == "tool_use":
                has_call = True
                self._call(block, obj.get("cwd"))
            elif block.get("type") not in ("text", "thinking", "redacted_thinking"):
                self.report.skipped_blocks[str(block.get("type"))[:40]] += 1
        stop = message.get("stop_reason")
        self.b.end(not has_call and stop in _END_REASONS)

    def _call(self, block: Mapping[str, Any], cwd: Any = None) -> None:
        """A ``tool_use`` block; a Task (or Agent) call is remembered for its sub-agent.
        ``cwd``: its line's folder, the one the shell stood in when the call was made
        (Claude Code writes it on every line, and it follows the Bash tool's ``cd``)."""
        call = self.b.call(block.get("id"), block.get("name"), block.get("input"))
        if call is not None and isinstance(cwd, str) and cwd:
            call.cwd = cwd
        if block.get("name") in ("Task", "Agent") and isinstance(block.get("id"), str):
            params = block.get("input")
            sub = params.get("subagent_type") if isinstance(params, Mapping) else None
            self.task_calls[block["id"]] = sub if isinstance(sub, str) else ""
            prompt = params.get("prompt") if isinstance(params, Mapping) else None
            if isinstance(prompt, str) and call is not None and self.b.current is not None:
                self.task_prompts[prompt.strip()] = (block["id"], self.b.current, call)

    def _results(self, obj: Mapping[str, Any], content: Any) -> bool:
        """The ``tool_result`` blocks of a user line; False when it has none."""
        results = (
            [x for x in content if isinstance(x, Mapping) and x.get("type") == "tool_result"]
            if isinstance(content, list)
            else []
        )
        for r in results:
            self._result(obj, r)
        if results:
            self.b.touch(obj.get("timestamp"))
        return bool(results)

    def _result(self, obj: Mapping[str, Any], r: Mapping[str, Any]) -> None:
        """One tool result: success, denial, interruption, and a sub-agent's link to its call."""
        b = self.b
        text = _result_text(r.get("content"), self.report)
        denied = text.startswith(DENIAL_PREFIXES)
        is_error = r.get("is_error") is True
        code = exit_code(text)
        success = not is_error and (code is None or code == 0)
        b.result(r.get("tool_use_id"), text, success=success, denied=denied)
        if text.startswith(INTERRUPT_MARKER):
            b.interrupt()
        tid = r.get("tool_use_id")
        if isinstance(tid, str) and tid in self.task_calls and b.current is not None:
            self._link(obj, tid, text, b.current)

    def _link(self, obj: Mapping[str, Any], tid: str, text: str, turn: Turn) -> None:
        """Link the sub-agent that a Task call's result names to the turn that made the call."""
        extra = obj.get("toolUseResult")
        agent = extra.get("agentId") if isinstance(extra, Mapping) else None
        m = _AGENT_ID.search(text)
        agent = agent if isinstance(agent, str) and agent else (m.group(1) if m else None)
        if agent:
            self.links[agent] = {
                "turn_id": turn.turn_id,
                "tool_use_id": tid,
                **({"type": self.task_calls[tid]} if self.task_calls[tid] else {}),
            }
            if agent not in turn.meta.get("subagents", []):
                turn.meta.setdefault("subagents", []).append(agent)

    def _prompt(self, n: int, obj: Mapping[str, Any], content: Any) -> None:
        """A user line without tool results: a prompt starts a turn, unless it is a note."""
        prompt = _prompt_text(content, self.report)
        if prompt is not None and prompt.startswith(INTERRUPT_MARKER):
            self.b.interrupt()
            return
        if prompt is None or obj.get("isMeta") is True or obj.get("isCompactSummary") is True:
            self.report.ignore("note (not a prompt)")
            if self.b.current is None and self.note is None:
                self.note = (n, obj, prompt or "")
            return
        system = obj.get("promptSource") == "system" or prompt.startswith(NOTIFICATION_TAGS)
        current = self.b.current
        if system and current is not None and not current.ended:
            # a background task's notice while the agent works: the turn goes on
            self.report.ignore("notification during a turn")
            return
        session, meta = self._session(obj)
        uuid = obj.get("uuid")
        turn = self.b.prompt(
            session,
            uuid if isinstance(uuid, str) and uuid else f"line-{n}",
            prompt,
            n,
            at=obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None,
            cwd=obj.get("cwd") if isinstance(obj.get("cwd"), str) else None,
            meta=meta,
        )
        turn.system = system
        self._started_in(turn)

    def _started_in(self, turn: Turn) -> None:
        """A turn that starts in another folder than its session (the Bash tool kept a
        ``cd`` of an earlier turn) says where the session started: ``session_cwd``."""
        first = self.first_cwd
        if first and turn.cwd and folder_key(first) != folder_key(turn.cwd):
            turn.meta["session_cwd"] = first

    def _continuation(self, n: int, obj: Mapping[str, Any]) -> None:
        """Calls before any prompt: a session continued from an earlier one (it starts with
        Claude Code's summary of it, or a skill's text). They are a turn of their own, whose
        prompt the client wrote (a notification): recorded, never taken for a task."""
        line, first, text = self.note if self.note is not None else (n, obj, "")
        session, meta = self._session(first)
        uuid = first.get("uuid")
        at = first.get("timestamp")
        turn = self.b.prompt(
            session,
            uuid if isinstance(uuid, str) and uuid else f"line-{line}",
            text or "(the session continues an earlier one)",
            line,
            at=at if isinstance(at, str) else None,
            cwd=first.get("cwd") if isinstance(first.get("cwd"), str) else None,
            meta=meta,
        )
        turn.system = True
        self._started_in(turn)
        self.report.ignore("calls before any prompt: a continued session")

    def _session(self, obj: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """A prompt's session id and the turn's meta (sub-agent, branch, version, file)."""
        sid = obj.get("sessionId")
        session = sid if isinstance(sid, str) and sid else self.stem
        meta: dict[str, Any] = {}
        if self.subagent is not None:
            session = f"{session}/agent-{self.subagent['agent_id']}"
            meta["subagent"] = dict(self.subagent)
        for field, key in (("gitBranch", "git_branch"), ("version", "agent_version")):
            if isinstance(obj.get(field), str) and obj[field]:
                meta[key] = obj[field][:200]
        if self.path:
            meta["transcript"] = self.path
        return session, meta


# -- finding the files, telling the format, the hook's running sub-agents ----------------------


def _subagent_files(folder: Path) -> list[Path]:
    return [
        p
        for p in sorted(folder.glob("agent-*.jsonl"))
        if p.is_file() and not agent_id_of(p).startswith("acompact")
    ]


def bundles(root: Path) -> list[Bundle]:
    """A session file with its ``<session>/subagents/agent-*.jsonl``; under a folder, every
    session (sub-agent files whose session file is gone: on their own)."""
    if root.is_file():
        if root.parent.name == "subagents":
            return [Bundle(None, (root,), parent=root.parent.parent.with_suffix(".jsonl"))]
        return [Bundle(root, tuple(_subagent_files(root.with_suffix("") / "subagents")))]
    found: dict[Path, list[Path]] = {}
    for p in sorted(root.rglob("*.jsonl")):
        if "tool-results" in p.parts or p.is_symlink():
            continue
        if p.parent.name == "subagents":
            if not agent_id_of(p).startswith("acompact"):
                found.setdefault(p.parent.parent.with_suffix(".jsonl"), []).append(p)
        else:
            found.setdefault(p, [])
    return [
        Bundle(main, tuple(subs)) if main.exists() else Bundle(None, tuple(subs), parent=main)
        for main, subs in sorted(found.items())
    ]


def detect_line(o: Mapping[str, Any]) -> bool:
    """A Claude Code line: a ``user``/``assistant`` line with a ``sessionId`` or
    ``parentUuid`` (or a summary or snapshot line)."""
    return o.get("type") in ("user", "assistant", "summary", "file-history-snapshot") and (
        "sessionId" in o or "parentUuid" in o or "leafUuid" in o or "snapshot" in o
    )


def detect(objects: Sequence[Mapping[str, Any]]) -> bool:
    """Claude Code lines: one of ``objects`` is (:func:`detect_line`)."""
    return any(detect_line(o) for o in objects)


@attrs.frozen
class StopState:
    """What a Claude Code hook's payload says of the session: ``final`` (its last turn is over:
    ``Stop``, ``SessionEnd``; not ``SubagentStop``, which fires while the session may still be
    working), the sub-agents still running, and the sub-agent that just finished."""

    final: bool
    running: frozenset[str] = frozenset()
    finished: frozenset[str] = frozenset()

    def kwargs(self) -> dict[str, Any]:
        """As :meth:`agentmem.Memory.import_transcripts` takes them."""
        return {
            "final": self.final,
            "running": sorted(self.running),
            "finished": sorted(self.finished),
        }


def stop_state(payload: Mapping[str, Any]) -> StopState:
    """The :class:`StopState` of a ``Stop``, ``SubagentStop`` or ``SessionEnd`` payload."""
    running = running_subagents(payload.get("background_tasks"))
    if payload.get("hook_event_name") == "SubagentStop":
        agent = payload.get("agent_id")
        done = frozenset([agent]) if isinstance(agent, str) and agent else frozenset()
        return StopState(False, running - done, done)
    return StopState(True, running)


def running_subagents(background_tasks: Any) -> frozenset[str]:
    """The agent ids a Stop hook's ``background_tasks`` lists as still running."""
    out: set[str] = set()
    for task in background_tasks if isinstance(background_tasks, list) else []:
        if not isinstance(task, Mapping):
            continue
        status = task.get("status")
        if isinstance(status, str) and status.lower() not in ("running", "pending", "in_progress"):
            continue
        for key in ("agent_id", "agentId", "id", "task_id", "taskId"):
            value = task.get(key)
            if isinstance(value, str) and value:
                out.add(value)
                break
    return frozenset(out)


def _parse(
    data: bytes,
    *,
    path: str,
    final: bool,
    quiet: bool,
    subagent: Mapping[str, Any] | None,
) -> ParsedFile:
    return parse_claude_code(data, path=path, final=final, quiet=quiet, subagent=subagent)


FORMAT = TranscriptFormat(
    name=SOURCE,
    description="Claude Code session transcripts (~/.claude/projects)",
    parse=_parse,
    detect=detect,
    detect_line=detect_line,
    home=lambda: home_of("CLAUDE_CONFIG_DIR", ".claude", "projects"),
    bundles=bundles,
    noun="a Claude Code transcript",
)
