"""What the transcript importers share: turns, the signals that count as verdicts, the report.

An agent's transcript is a sequence of user prompts, each followed by the agent's
tool calls until the next prompt. Each importer reads its format into
:class:`Turn` records with a :class:`TurnBuilder`; :func:`turn_record` turns a
finished turn into a :class:`~agentmem.records.Trajectory` (the task is the
prompt, the steps the tool calls) and the user's verdict, if the transcript holds
an explicit one.

Verdicts come only from explicit signals (:data:`VERDICT_SIGNALS`): the user
interrupted the turn, or denied one of its tool calls. Nothing is guessed from
the wording of the next prompt; a turn with no signal is judged like any other
trajectory (accepted once the acceptance window passes, unless ``agentmem
feedback`` says otherwise).

Tolerance: the formats are internal to their vendors and change between versions.
Lines that are not JSON objects, and line and block types an importer does not
know, are skipped and counted in the :class:`ImportReport`; a turn with an
unreadable line in it is *damaged* and not recorded; a last line that is not
complete yet (the agent is still writing the file) is left for the next import.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import attrs

from ..conversation import classify, conversation_tasks
from ..errors import InvalidRecordError
from ..records import NO_RESULT, Step, Trajectory, TurnRecord
from ._json import is_error_output, loads_line

__all__ = [
    "MAX_OUTPUT_CHARS",
    "VERDICT_SIGNALS",
    "Call",
    "FileReport",
    "ImportReport",
    "JsonLine",
    "JsonLines",
    "Turn",
    "TurnBuilder",
    "TurnRecord",
    "clip",
    "exit_code",
    "folder_key",
    "in_order",
    "read_json_lines",
    "text_of",
    "turn_record",
]

#: A tool output or parameter longer than this is kept as its head and tail (see the docs).
MAX_OUTPUT_CHARS = 16_000

#: The explicit signals that give an imported turn a verdict, and the verdict each gives.
VERDICT_SIGNALS: Mapping[str, tuple[str, str]] = {
    "interrupted": ("reject", "the user interrupted the turn"),
    "denied": ("correct", "the user denied a tool call"),
}

_NO_RESULT = NO_RESULT


class JsonLine(NamedTuple):
    """One line of a JSON-lines transcript: its number and its object (a named tuple: a
    transcript has thousands, and a tuple is made in a fraction of a frozen class's time)."""

    number: int
    data: dict[str, Any]


def read_json_lines(data: bytes) -> tuple[list[JsonLine], list[tuple[int, str]], bool]:
    """The JSON objects of a JSON-lines file, its bad lines, and whether its last line is cut.

    A last line without its newline that does not parse is taken as still being
    written: it is not a bad line, and the caller leaves it for the next import.
    """
    lines = JsonLines(data)
    good = [JsonLine(n, obj) for n, obj, _ in lines if obj is not None]
    return good, lines.bad, lines.truncated


class JsonLines:
    """A JSON-lines file's lines, read one at a time, in file order: ``(number, object,
    None)`` for a line that is a JSON object, ``(number, None, why)`` for a bad one (also
    in :attr:`bad`); blank lines and a last line still being written (:attr:`truncated`,
    see :func:`read_json_lines`) are not given. A reader that takes what it needs of each
    line as it comes lets the rest of the line go at once, instead of holding every
    line's objects until the file is read.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.bad: list[tuple[int, str]] = []
        self.truncated = False

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
        # Each line is found with bytes.find (memchr), not bytes.split, which compares
        # every byte in a loop of its own and holds every line's copy until the end.
        data = self.data
        size = len(data)
        start, n = 0, 0
        while start <= size:
            end = data.find(b"\n", start)
            last = end < 0  # the last line: after the last newline (b"" when it ends one)
            if last:
                end = size
            raw = data[start:end]
            start = end + 1
            n += 1
            if not raw or raw.isspace():  # blank (strip() would copy every line to ask)
                continue
            why = None
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                if last:
                    self.truncated = True  # a multi-byte character cut in two
                    continue
                why = f"not valid UTF-8 (byte {e.start})"
            else:
                try:
                    obj = loads_line(text)
                except ValueError as e:
                    if last:
                        self.truncated = True
                        continue
                    why = f"not valid JSON ({str(e)[:80]})"
                else:
                    if isinstance(obj, dict):
                        yield n, obj, None
                        continue
                    why = f"not a JSON object (a {type(obj).__name__})"
            self.bad.append((n, why))
            yield n, None, why


def in_order(
    lines: Sequence[JsonLine], bad: Sequence[tuple[int, str]]
) -> list[tuple[int, dict[str, Any] | None, str | None]]:
    """Good and bad lines merged in file order: (number, object or None, why it is bad)."""
    merged: list[tuple[int, dict[str, Any] | None, str | None]] = [
        (n, data, None) for n, data in lines
    ]
    if bad:  # (the good lines alone are in order already)
        merged += [(n, None, why) for n, why in bad]
        merged.sort(key=lambda item: item[0])
    return merged


@attrs.define
class Call:
    """One tool call of a turn and, once seen, its result."""

    id: str
    tool: str
    params: dict[str, Any]
    output: str | None = None
    success: bool | None = None  # None: judge from the output
    denied: bool = False
    cwd: str | None = None  # the folder the call was made in, where the transcript says


@attrs.define
class Turn:
    """One user prompt and the tool calls the agent made for it."""

    session_id: str
    turn_id: str
    prompt: str
    line: int
    started_at: str | None = None
    ended_at: str | None = None
    cwd: str | None = None
    meta: dict[str, Any] = attrs.Factory(dict)
    calls: list[Call] = attrs.Factory(list)
    interrupted: bool = False
    ended: bool = False  # the transcript says the agent finished this turn
    complete: bool = False  # decided by TurnBuilder.finish
    damaged: str | None = None
    system: bool = False  # the client wrote this prompt itself (a notification)

    @property
    def key(self) -> tuple[str, str]:
        return (self.session_id, self.turn_id)

    @property
    def unanswered(self) -> list[Call]:
        return [c for c in self.calls if c.output is None and c.success is None]


@attrs.define
class FileReport:
    """What one transcript file held, for the import report."""

    path: str
    turns: list[Turn] = attrs.Factory(list)
    bad_lines: list[tuple[int, str]] = attrs.Factory(list)
    truncated: bool = False
    skipped_lines: Counter[str] = attrs.Factory(Counter)
    skipped_blocks: Counter[str] = attrs.Factory(Counter)
    ignored_lines: int = 0
    ignored: Counter[str] = attrs.Factory(Counter)  # known lines without a turn, by kind

    def ignore(self, kind: str) -> None:
        """A line of a kind the format knows and that carries no turn."""
        self.ignored_lines += 1
        self.ignored[kind[:60]] += 1


class TurnBuilder:
    """Collects a transcript's prompts, calls and results into turns, in file order.

    The parsers call :meth:`prompt`, :meth:`call`, :meth:`result`, :meth:`outcome`,
    :meth:`interrupt` and :meth:`end` as they read; :meth:`finish` decides which
    turns are complete.
    """

    def __init__(self, report: FileReport):
        self.report = report
        self.turns: list[Turn] = []
        self._calls: dict[str, tuple[Turn, Call]] = {}
        self._outcomes: dict[str, tuple[bool, bool]] = {}
        self._pending_damage: list[str] = []

    @property
    def current(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    @property
    def calls(self) -> Mapping[str, tuple[Turn, Call]]:
        """The calls seen so far, by call id."""
        return self._calls

    def call_of(self, call_id: Any) -> Call | None:
        """The call with this id, if it was seen."""
        found = self._calls.get(call_id) if isinstance(call_id, str) else None
        return found[1] if found is not None else None

    def prompt(
        self,
        session_id: str,
        turn_id: str,
        text: str,
        line: int,
        *,
        at: str | None = None,
        cwd: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Turn:
        turn = Turn(
            session_id=session_id,
            turn_id=turn_id,
            prompt=text.strip() or "(a prompt without text)",
            line=line,
            started_at=at,
            ended_at=at,
            cwd=cwd,
            meta=dict(meta or {}),
        )
        self.turns.append(turn)
        return turn

    def touch(self, at: Any) -> None:
        """A line of the current turn was written at ``at``."""
        if self.current is not None and isinstance(at, str):
            self.current.ended_at = at

    def call(self, call_id: Any, tool: Any, params: Any) -> Call | None:
        turn = self.current
        if turn is None:
            self.report.skipped_blocks["tool call before any prompt"] += 1
            return None
        if not isinstance(tool, str) or not tool.strip():
            self.report.skipped_blocks["tool call without a name"] += 1
            return None
        if not isinstance(params, Mapping):
            params = {} if params is None else {"input": params}
        cid = call_id if isinstance(call_id, str) and call_id else f"#{len(self._calls)}"
        call = Call(cid, tool.strip(), dict(params))
        turn.calls.append(call)
        turn.ended = False
        self._calls[cid] = (turn, call)
        return call

    def result(
        self, call_id: Any, output: str, *, success: bool | None = None, denied: bool = False
    ) -> None:
        found = self._calls.get(call_id) if isinstance(call_id, str) else None
        if found is None:
            self.report.skipped_blocks["tool result without its call"] += 1
            return
        _turn, call = found
        call.output = output
        if success is not None:
            call.success = success
        if denied:
            call.denied = True
            call.success = False

    def outcome(self, call_id: Any, success: bool, *, denied: bool = False) -> None:
        """What the agent itself recorded of a call's end (an exit code, a patch's success)."""
        if isinstance(call_id, str):
            self._outcomes[call_id] = (success, denied)

    def interrupt(self) -> None:
        if self.current is not None:
            self.current.interrupted = True
            self.current.ended = True

    def end(self, ended: bool = True) -> None:
        if self.current is not None:
            self.current.ended = ended

    def damage(self, line: int, why: str) -> None:
        """An unreadable line: the turn it falls in cannot be recorded faithfully."""
        turn = self.current
        if turn is not None and turn.damaged is None:
            turn.damaged = f"line {line} {why}"

    def finish(self, *, final: bool = False, quiet: bool = False) -> list[Turn]:
        """The turns, each marked complete or not.

        A turn is complete when a later prompt follows it. The last turn is
        complete when it was interrupted, or when every call has its result and
        either the transcript says the agent finished, or ``final`` (the agent's
        Stop hook: the turn is over), or ``quiet`` (the file has not changed for a
        long time). Otherwise it is left for the next import.
        """
        for cid, (success, denied) in self._outcomes.items():
            found = self._calls.get(cid)
            if found is not None:
                call = found[1]
                call.success = success and not call.denied
                call.denied = call.denied or denied
                if call.output is None:
                    call.output = ""
        for i, turn in enumerate(self.turns):
            if i < len(self.turns) - 1 or turn.interrupted:
                turn.complete = True
            else:
                turn.complete = not turn.unanswered and (turn.ended or final or quiet)
        for turn in self.turns:
            _drop_own_calls(turn)
        resolve_tasks(self.turns)
        return self.turns


def settle(turns: Sequence[Turn]) -> None:
    """The session is over (its file has not changed for a day): a turn still waiting is
    complete, recorded without the calls that never got a result (a session committed or
    killed mid-turn), their count in ``meta["unanswered_calls"]``. Their outcome is unknown,
    and a step with an unknown outcome would teach a wrong lesson, so they are not steps."""
    for turn in turns:
        if turn.complete:
            continue
        waiting = {id(c) for c in turn.unanswered}
        if waiting:
            turn.meta["unanswered_calls"] = len(waiting)
            turn.calls = [c for c in turn.calls if id(c) not in waiting]
        turn.complete = True


def is_agentmem_call(tool: str) -> bool:
    """A call of agentmem's own MCP tools (``mcp__agentmem__agentmem_context``, ...):
    agentmem looking up lessons, not a step of the agent's task."""
    if not tool.startswith("mcp__"):
        return False
    server, _, name = tool[len("mcp__") :].partition("__")
    return "agentmem" in server and name.startswith("agentmem_")


def _drop_own_calls(turn: Turn) -> None:
    own = [c for c in turn.calls if is_agentmem_call(c.tool)]
    if own:
        turn.calls = [c for c in turn.calls if not is_agentmem_call(c.tool)]
        turn.meta["agentmem_calls"] = len(own)


#: The longest prompt text kept in ``meta["prompt"]`` for a turn that is not a task.
MAX_PROMPT_META = 2000


def resolve_tasks(turns: Sequence[Turn]) -> None:
    """Give each turn its task from its conversation (:mod:`agentmem.conversation`).

    A turn whose prompt is a reply, a choice or a notification takes the task of the
    last prompt of its session that stated one (a turn without tools counts); a slash
    command's task is the command and its arguments. Such a turn keeps its own text in
    ``meta["prompt"]`` and its kind in ``meta["prompt_kind"]`` (absent: a task).
    """
    by_session: dict[str, list[Turn]] = {}
    for t in turns:
        by_session.setdefault(t.session_id, []).append(t)
    for conv in by_session.values():
        prompts = [classify(t.prompt, system=t.system) for t in conv]
        for t, p, task in zip(conv, prompts, conversation_tasks(prompts), strict=True):
            if p.kind != "task":
                t.meta["prompt_kind"] = p.kind
                t.meta["prompt"] = p.text[:MAX_PROMPT_META]
            t.prompt = task or t.prompt


# -- a turn as a trajectory ---------------------------------------------------------------


def clip(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """``text``, or its head and tail with a note of what was cut when it is longer."""
    if len(text) <= limit:
        return text
    head, tail = limit * 3 // 4, limit // 4
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut by agentmem import ...]\n{text[-tail:]}"


#: How deeply an imported parameter value may nest; deeper parts are replaced by a note.
MAX_PARAM_DEPTH = 32
_TOO_DEEP = f"[nested deeper than {MAX_PARAM_DEPTH} levels: cut by agentmem import]"


class _Repairs:
    """What :func:`_clean_value` changed in a turn, by kind (``meta["repaired"]``)."""

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        #: a value of no JSON type was met (left as it was, for the record's own checks)
        self.foreign = False

    def text(self, value: str) -> str:
        """``value`` as storable text: NUL characters and lone surrogates become U+FFFD."""
        if "\x00" in value:
            self.kinds["NUL characters"] += 1
            value = value.replace("\x00", "\ufffd")
        if value.isascii():  # (a flag of the string: no lone surrogate in it)
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            self.kinds["lone surrogates"] += 1
            value = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value


def _clean_value(value: Any, repairs: _Repairs, depth: int = 0, *, cap: bool = True) -> Any:
    """A transcript's value made storable: long strings clipped (``cap``), bad text repaired,
    nesting deeper than :data:`MAX_PARAM_DEPTH` replaced by a note. Never recurses further
    than that, whatever the input."""
    kind = type(value)  # the plain JSON types first, without the ABC's isinstance
    if kind is str:
        return repairs.text(clip(value) if cap else value)
    if kind is int or kind is bool or value is None:
        return value
    if isinstance(value, str):
        return repairs.text(clip(value) if cap else value)
    if isinstance(value, (Mapping, list)) and depth >= MAX_PARAM_DEPTH:
        repairs.kinds["deep nesting"] += 1
        return _TOO_DEEP
    if isinstance(value, Mapping):
        return {
            repairs.text(str(k)): _clean_value(v, repairs, depth + 1, cap=cap)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_clean_value(v, repairs, depth + 1, cap=cap) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        repairs.kinds["non-finite numbers"] += 1
        return str(value)
    if not isinstance(value, (int, float)):
        repairs.foreign = True  # (JSON has none: the record's checks say what it is)
    return value


_EXIT_CODE = re.compile(r"\A\s*(?:Exit code:?|Process exited with code)\s*(-?\d+)")


def exit_code(text: str) -> int | None:
    """The exit code an output starts with ("Exit code 1", "Process exited with code 0")."""
    m = _EXIT_CODE.match(text)
    return int(m.group(1)) if m else None


def _success(call: Call) -> bool:
    if call.success is not None:
        return call.success
    if call.output is None:
        return False
    code = exit_code(call.output)
    if code is not None:
        return code == 0
    return not is_error_output(call.output)


def _step(c: Call, fix: _Repairs) -> Step:
    """A call as a step, its parameters and output made storable (:func:`_clean_value`):
    plain JSON and valid text, which :meth:`Step.of_plain_json` need not check again
    (unless a value of no JSON type was met: then :class:`Step` checks it all)."""
    tool = fix.text(c.tool[:200])
    params = _clean_value(c.params, fix)
    output = fix.text(clip(c.output)) if c.output is not None else _NO_RESULT
    if fix.foreign or type(params) is not dict:
        return Step(tool=tool, params=params, output=output, success=_success(c))
    return Step.of_plain_json(tool, params, output, _success(c))


def _call_cwds(turn: Turn) -> dict[str, str]:
    """{a call's index (as text): the folder it was made in} for each call made in another
    folder than the turn's own (a ``cd`` of the shell before it, which Claude Code's Bash
    keeps between calls); empty when every call stood in the turn's folder."""
    if not turn.cwd:
        return {}
    home = folder_key(turn.cwd)
    return {
        str(i): c.cwd[:1000]
        for i, c in enumerate(turn.calls)
        if c.cwd and folder_key(c.cwd) != home
    }


def folder_key(path: str) -> str:
    """A folder as compared: no trailing separator; a Windows drive's path in one case
    (Claude Code writes ``e:\\x`` and ``E:\\x`` for one folder)."""
    p = path.rstrip("/\\") or path
    return p.lower() if re.match(r"[A-Za-z]:", p) else p


def turn_record(source: str, turn: Turn, *, project: str | None) -> TurnRecord:
    """The record of a complete turn: a trajectory with its steps and verdict, or why not."""
    key = (source, turn.session_id, turn.turn_id)
    if turn.damaged:
        return TurnRecord(*key, status="damaged", note=turn.damaged)
    if not turn.calls:
        return TurnRecord(*key, status="no-tools")
    signal = (
        "interrupted"
        if turn.interrupted
        else "denied"
        if any(c.denied for c in turn.calls)
        else None
    )
    meta: dict[str, Any] = {
        "session_id": turn.session_id,
        "turn_id": turn.turn_id,
        **({"project": project} if project else {}),
        **({"cwd": turn.cwd} if turn.cwd else {}),
        **({"started_at": turn.started_at} if turn.started_at else {}),
        **({"ended_at": turn.ended_at} if turn.ended_at else {}),
        **({"signal": signal} if signal else {}),
        **turn.meta,
    }
    cwds = _call_cwds(turn)
    if cwds:
        meta["cwds"] = cwds
    fix = _Repairs()
    try:
        steps = [_step(c, fix) for c in turn.calls]
        meta = _clean_value(meta, fix, cap=False)
        task = fix.text(clip(turn.prompt))
        if fix.kinds:
            meta["repaired"] = dict(fix.kinds)
        trajectory = Trajectory(task=task, steps=steps, meta=meta, source=source)
    except InvalidRecordError as e:
        return TurnRecord(*key, status="damaged", note=f"line {turn.line}: {e}")
    verdict, note = VERDICT_SIGNALS[signal] if signal else (None, None)
    return TurnRecord(*key, status="imported", trajectory=trajectory, verdict=verdict, note=note)


# -- the report ---------------------------------------------------------------------------


@attrs.define
class ImportReport:
    """What an import read and did: new trajectory ids, and every turn and line it skipped."""

    source: str
    files: int = 0
    unchanged_files: int = 0
    ids: list[int] = attrs.Factory(list)
    already: int = 0
    in_progress: int = 0
    no_tools: int = 0
    damaged: list[str] = attrs.Factory(list)
    verdicts: Counter[str] = attrs.Factory(Counter)
    skipped_lines: Counter[str] = attrs.Factory(Counter)
    skipped_blocks: Counter[str] = attrs.Factory(Counter)
    ignored_lines: int = 0
    ignored: Counter[str] = attrs.Factory(Counter)
    bad_lines: list[str] = attrs.Factory(list)
    truncated: list[str] = attrs.Factory(list)
    other_format: Counter[str] = attrs.Factory(Counter)
    failed_files: list[str] = attrs.Factory(list)
    #: FIFOs, sockets and devices named like transcripts: skipped unopened, never waited on
    special_files: list[str] = attrs.Factory(list)
    repaired: Counter[str] = attrs.Factory(Counter)  # values made storable, by kind

    def add_file(self, f: FileReport) -> None:
        self.files += 1
        self.skipped_lines.update(f.skipped_lines)
        self.skipped_blocks.update(f.skipped_blocks)
        self.ignored_lines += f.ignored_lines
        self.ignored.update(f.ignored)
        self.bad_lines += [f"{f.path} line {n}: {why}" for n, why in f.bad_lines]
        if f.truncated:
            self.truncated.append(f.path)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "files": self.files,
            "unchanged_files": self.unchanged_files,
            "ids": self.ids,
            "already_imported": self.already,
            "in_progress": self.in_progress,
            "no_tools": self.no_tools,
            "damaged": self.damaged,
            "verdicts": dict(self.verdicts),
            "skipped_line_types": dict(self.skipped_lines),
            "skipped_block_types": dict(self.skipped_blocks),
            "ignored_lines": self.ignored_lines,
            "ignored_line_types": dict(self.ignored),
            "bad_lines": self.bad_lines,
            "truncated_files": self.truncated,
            "other_format_files": dict(self.other_format),
            "failed_files": self.failed_files,
            "special_files": self.special_files,
            "repaired": dict(self.repaired),
        }

    def lines(self, *, verbose: bool = False) -> list[str]:
        """The report for people, one fact a line (``verbose``: the known lines skipped too)."""
        ids = self.ids
        span = "none" if not ids else f"{ids[0]}-{ids[-1]}" if len(ids) > 1 else str(ids[0])
        out = [
            f"imported {len(ids)} trajectories from {self.files} {self.source} file(s) "
            f"(ids {span}); {self.already} turn(s) already imported"
            + (f", {self.unchanged_files} file(s) unchanged" if self.unchanged_files else "")
        ]
        if self.verdicts:
            out.append(
                "verdicts from the transcripts: "
                + ", ".join(f"{k} {v}" for k, v in sorted(self.verdicts.items()))
            )
        if self.in_progress:
            out.append(f"{self.in_progress} turn(s) still in progress: left for the next import")
        if self.no_tools:
            out.append(f"{self.no_tools} turn(s) without tool calls: nothing to record")
        out += [f"damaged turn, not recorded: {d}" for d in self.damaged]
        if self.skipped_lines:
            out.append(
                "skipped unknown line types: "
                + ", ".join(f"{k} x{v}" for k, v in self.skipped_lines.most_common())
            )
        if self.skipped_blocks:
            out.append(
                "skipped blocks: "
                + ", ".join(f"{k} x{v}" for k, v in self.skipped_blocks.most_common())
            )
        out += [f"skipped bad line: {b}" for b in self.bad_lines]
        out += [f"incomplete last line left for the next import: {p}" for p in self.truncated]
        out += [
            f"skipped {n} file(s) that look like {name} transcripts (import them with "
            f"--format {name})"
            for name, n in sorted(self.other_format.items())
        ]
        out += [f"skipped unreadable file: {f}" for f in self.failed_files]
        if self.special_files:
            out.append(
                f"skipped {len(self.special_files)} special file(s) (FIFO, socket or device), "
                "never opened: " + ", ".join(self.special_files[:5])
            )
        if self.repaired:
            out.append(
                "repaired values (in meta.repaired of their trajectories): "
                + ", ".join(f"{k} x{v}" for k, v in self.repaired.most_common())
            )
        if verbose and self.ignored:
            out.append(
                f"known lines without a turn ({self.ignored_lines}): "
                + ", ".join(f"{k} x{v}" for k, v in self.ignored.most_common())
            )
        return out


def text_of(content: Any, report: FileReport | None = None) -> str:
    """Message or tool-result content as text: a string, or text blocks (other blocks named)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping):
                kind = block.get("type")
                if kind in ("text", "input_text", "output_text") and isinstance(
                    block.get("text"), str
                ):
                    parts.append(block["text"])
                elif kind in ("image", "input_image", "document"):
                    parts.append(f"[{kind}]")
                elif report is not None:
                    report.skipped_blocks[str(kind)[:40]] += 1
        return "\n".join(parts)
    if isinstance(content, Mapping):
        return text_of([content], report)
    return str(content)
