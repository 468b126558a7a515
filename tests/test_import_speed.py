"""The import's fast paths give what the plain paths gave (issue 30: import at 50 MB/s).

``loads_line`` (the strict decoder's scanner called directly) against ``loads``; the
streamed lines of ``JsonLines`` against the lines of ``read_json_lines`` in file order;
``is_format`` (a format check that stops at the first line of the format) against the
check of the first 40 lines; a real session imported twice, the second time with the
format check and the stream, into the same rows.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem import Memory
from agentmem.importers import codex
from agentmem.importers._json import loads, loads_line
from agentmem.importers.formats import by_name, is_format, sniff
from agentmem.importers.turns import JsonLines, in_order, read_json_lines

_JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)

#: Lines the scanner refuses or that are no object: the slow path must answer for them.
_ODD_LINES = [
    '{"a": NaN}',
    '{"a": Infinity}',
    '{"a": 1} x',
    '{"a": 1}{"b": 2}',
    '{"a": "\\ud800"}',
    '{"a": 123456789012345678901234567890}',
    "[1, 2]",
    '"text"',
    " {} ",
    "{",
    '{"a": "\x01"}',
    "{" * 50 + "}" * 50,
    '{"a":1}\r',
]


def _outcome(fn: Any, text: str) -> tuple[str, Any]:
    try:
        return ("value", fn(text))
    except ValueError as e:
        return ("error", str(e))


@pytest.mark.parametrize("text", _ODD_LINES)
def test_loads_line_gives_the_value_or_the_error_loads_gives(text: str) -> None:
    got, want = _outcome(loads_line, text), _outcome(loads, text)
    assert got == want
    assert repr(got) == repr(want)  # -0.0, a lone surrogate and big integers alike


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(max_size=6), _JSON, max_size=4), st.booleans())
def test_loads_line_of_any_object(value: dict[str, Any], spaced: bool) -> None:
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": ") if spaced else None)
    assert repr(loads_line(text)) == repr(loads(text))


def _file(lines: list[bytes], *, newline_at_end: bool = True) -> bytes:
    return b"\n".join(lines) + (b"\n" if newline_at_end else b"")


_FILES = [
    _file([b'{"a": 1}', b"", b"   ", b'{"b": 2}']),
    _file([b'{"a": 1}', b"\xff\xfe not utf-8", b'{"b": 2}', b"[1]", b"nope"]),
    _file([b'{"a": 1}', b'{"b": 2'], newline_at_end=False),  # still being written
    _file([b'{"a": 1}', b'{"b": "\xc3'], newline_at_end=False),  # a character cut in two
    _file([b'{"a": 1}\r', b'{"b": 2}\r']),  # CRLF
    _file([b'{"a": 1}', b'{"b": 2'], newline_at_end=True),  # a bad line, not a cut one
    b"",
    b"\n\n",
]


@pytest.mark.parametrize("data", _FILES)
def test_streamed_lines_are_the_lines_read_whole(data: bytes) -> None:
    good, bad, truncated = read_json_lines(data)
    stream = JsonLines(data)
    assert list(stream) == in_order(good, bad)
    assert (stream.bad, stream.truncated) == (bad, truncated)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.dictionaries(st.text(max_size=4), _JSON, max_size=3).map(
                lambda d: json.dumps(d).encode()
            ),
            st.binary(max_size=12),
            st.sampled_from([b"", b" ", b"[]", b"{", b'{"a": NaN}']),
        ),
        max_size=8,
    ),
    st.booleans(),
)
def test_streamed_lines_of_any_file(lines: list[bytes], newline_at_end: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if newline_at_end else b"")
    good, bad, truncated = read_json_lines(data)
    stream = JsonLines(data)
    assert list(stream) == in_order(good, bad)
    assert (stream.bad, stream.truncated) == (bad, truncated)
    again = JsonLines(data)
    assert (list(again), again.bad, again.truncated) == _split_lines(data)


def _split_lines(data: bytes) -> tuple[list[Any], list[tuple[int, str]], bool]:
    """The lines as the reader read them before it found each line's end with
    ``bytes.find``: ``bytes.split`` at every newline, a blank piece skipped, the last
    piece (after the last newline) the one that may still be being written."""
    out: list[Any] = []
    bad: list[tuple[int, str]] = []
    truncated = False
    pieces = data.split(b"\n")
    for i, raw in enumerate(pieces):
        last = i == len(pieces) - 1
        if not raw or raw.isspace():
            continue
        try:
            obj = loads(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            why = f"not valid UTF-8 (byte {e.start})"
        except ValueError as e:
            why = f"not valid JSON ({str(e)[:80]})"
        else:
            if isinstance(obj, dict):
                out.append((i + 1, obj, None))
                continue
            why = f"not a JSON object (a {type(obj).__name__})"
        if last and why.startswith("not valid"):
            truncated = True
            continue
        bad.append((i + 1, why))
        out.append((i + 1, None, why))
    return out, bad, truncated


@pytest.mark.parametrize("data", [*_FILES, b"{}", b"\n{}", b" \n\t\n{}\n\n", b"\xff"])
def test_lines_are_found_as_a_split_at_every_newline_finds_them(data: bytes) -> None:
    stream = JsonLines(data)
    assert (list(stream), stream.bad, stream.truncated) == _split_lines(data)


def _old_check(fmt_name: str, path: Path) -> bool:
    """What ``_other_format`` asked before: is ``fmt.detect`` of the first 40 objects
    not False."""
    objects = sniff(path)
    return not objects or by_name(fmt_name).detect(objects) is not False


def test_a_format_check_that_stops_early_answers_as_the_full_one(tmp_path: Path) -> None:
    claude = json.dumps({"type": "user", "sessionId": "s", "message": {"content": "hi"}})
    rollout = json.dumps({"type": "session_meta", "payload": {"id": "x"}})
    files = {
        "claude.jsonl": [claude] * 3,
        "codex.jsonl": [rollout] * 3,
        "late.jsonl": ['{"x": 1}'] * 10 + [claude],
        "empty.jsonl": [],
        "junk.jsonl": ["not json", "[1]"],
        "beyond.jsonl": ['{"x": 1}'] * 45 + [claude],  # past the 40 lines a check reads
    }
    for name, lines in files.items():
        path = tmp_path / name
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        for fmt in ("claude-code", "codex"):
            ours, objects = is_format(by_name(fmt), path)
            assert ours == _old_check(fmt, path), (name, fmt)
            if not ours:
                assert objects == sniff(path)
    assert codex.FORMAT.detect_line is not None


def test_a_session_imports_into_the_same_rows_whatever_path_reads_it(tmp_path: Path) -> None:
    """A real session named on its own (its format checked up to its first Claude Code
    line) and found in a folder (no check of a named file) imports the same runs."""
    session = Path("/work/shared/data/transcripts/claude-code-2.jsonl")
    if not session.is_file():
        pytest.skip("the shared transcripts are not here")
    copy = tmp_path / "one" / session.name
    copy.parent.mkdir()
    copy.write_bytes(session.read_bytes())
    st_ = session.stat()
    os.utime(copy, ns=(st_.st_atime_ns, st_.st_mtime_ns))
    rows = []
    for n, target in enumerate((copy, copy.parent)):
        with Memory.open(tmp_path / f"{n}.db") as mem:
            mem.import_transcripts("claude-code", [target], force=True)
            rows.append(
                mem.db.execute(
                    "SELECT t.task, s.position, s.tool, s.params, s.output, s.success "
                    "FROM trajectories t JOIN steps s ON s.trajectory_id = t.id "
                    "ORDER BY t.id, s.position"
                ).fetchall()
            )
    assert rows[0] and rows[0] == rows[1]


_HOSTILE_TEXT = st.sampled_from(
    ["ok", "", " ", "a\x00b", "\ud800x", "é→", "x" * 300, "Exit code 1"]
)
_HOSTILE = st.recursive(
    st.one_of(
        _HOSTILE_TEXT,
        st.sampled_from([0, -1, 2**70, 1.5, float("nan"), float("inf"), True, None]),
        st.sampled_from([(1, "a\x00"), {1, 2}, b"bytes", object]),
    ),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.one_of(_HOSTILE_TEXT, st.integers(0, 3)), inner, max_size=3)
    ),
    max_leaves=10,
)


def _deep(n: int) -> Any:
    value: Any = "bottom"
    for _ in range(n):
        value = {"k": [value]}
    return value


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _HOSTILE_TEXT,
    st.one_of(
        st.dictionaries(st.one_of(_HOSTILE_TEXT, st.integers(0, 3)), _HOSTILE, max_size=4),
        st.sampled_from([_deep(40), _deep(70)]),
    ),
    st.one_of(st.none(), _HOSTILE_TEXT),
    st.sampled_from([None, True, False, 1]),
)
def test_a_step_of_repaired_values_is_the_step_that_checks_them(
    tool: str, params: Any, output: str | None, success: Any
) -> None:
    """A call's step is made without checking again what the repairs guarantee (plain
    JSON, valid text): the same step, or the same refusal, as :class:`Step` gives."""
    from agentmem.errors import InvalidRecordError
    from agentmem.importers.turns import Call, _clean_value, _Repairs, _step, _success, clip
    from agentmem.records import Step

    call = Call("c1", tool, params if isinstance(params, dict) else {"input": params})
    call.output, call.success = output, success

    def checked() -> Step:
        fix = _Repairs()
        return Step(
            tool=fix.text(call.tool[:200]),
            params=_clean_value(call.params, fix),
            output=fix.text(clip(call.output))
            if call.output is not None
            else "(no result recorded)",
            success=_success(call),
        )

    try:
        want: Step | str = checked()
    except InvalidRecordError as e:
        want = str(e)
    try:
        got: Step | str = _step(call, _Repairs())
    except InvalidRecordError as e:
        got = str(e)
    assert got == want
