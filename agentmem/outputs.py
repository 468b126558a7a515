"""The output cap: a tool output longer than the library's cap is stored as its head and tail.

A build log or a test run can print megabytes, and a library that stored them whole
would grow by megabytes a run. Every way of recording (the API, ``agentmem record``
and ``import``, transcript imports, the MCP server) stores trajectories through
:func:`agentmem.storage.trajectories.insert_trajectories`, after redacting secrets (so no secret is
cut in half and then missed); there each step's output is capped with
:func:`cap_output`: an output over the cap (in bytes of UTF-8, the library setting
``output_cap``, :data:`DEFAULT_OUTPUT_CAP` unless set; 0 turns the cap off) keeps
its first quarter and its last three quarters, where errors and test summaries
are, with a marker line between them that gives the original length::

    [... agentmem output cap: 21934464 of 22000000 bytes cut here ...]

The result is at most the cap, so capping is idempotent; both parts end at a line
break where one is near (a line is not cut in the middle unless it is long), and
never inside a ``[REDACTED:kind]`` placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from .errors import InvalidRecordError
from .records import Trajectory
from .redact import PLACEHOLDER_PREFIX

__all__ = [
    "DEFAULT_OUTPUT_CAP",
    "MIN_OUTPUT_CAP",
    "cap_output",
    "cap_trajectories",
    "cut_marker",
    "validate_cap",
]

#: The cap when the library has no ``output_cap`` setting: 64 KiB of UTF-8.
DEFAULT_OUTPUT_CAP = 64 * 1024
#: The smallest cap other than 0 (off): room for the marker and some of the output.
MIN_OUTPUT_CAP = 1024
#: The share of the kept bytes that goes to the head; the tail gets the rest.
HEAD_SHARE = 0.25
#: How far (in bytes) a cut may move to end at a line break.
_SNAP = 1024

_PLACEHOLDER = PLACEHOLDER_PREFIX.encode("ascii")
_MARKER = "[... agentmem output cap: {cut} of {total} bytes cut here ...]\n"
_MARKER_RE = re.compile(r"\[\.\.\. agentmem output cap: (\d+) of (\d+) bytes cut here \.\.\.\]")


def validate_cap(cap: object) -> int:
    """``cap`` as a valid cap in bytes (0 or at least :data:`MIN_OUTPUT_CAP`), or raise."""
    if isinstance(cap, bool) or not isinstance(cap, int) or (0 < cap < MIN_OUTPUT_CAP) or cap < 0:
        raise InvalidRecordError(
            f"the output cap must be 0 (no cap) or a number of bytes of at least "
            f"{MIN_OUTPUT_CAP}, not {cap!r}"
        )
    return cap


def cut_marker(output: str) -> tuple[int, int] | None:
    """(bytes cut, original bytes) when ``output`` was capped, else None."""
    m = _MARKER_RE.search(output)
    return (int(m.group(1)), int(m.group(2))) if m else None


def cap_output(output: str, cap: int) -> str:
    """``output`` itself when it is at most ``cap`` bytes of UTF-8 (or ``cap`` is 0),
    else its head and tail with a marker between them (see the module doc)."""
    if not cap or len(output) * 4 <= cap:  # a character is at most 4 bytes
        return output
    if len(output) <= cap and output.isascii():
        return output
    data = output.encode("utf-8")
    total = len(data)
    if total <= cap:
        return output
    # The marker's figures are at most ``total``: its longest form bounds its length.
    longest = len(_MARKER.format(cut=total, total=total)) + 1  # + a line break before it
    keep = cap - longest
    head_n = int(keep * HEAD_SHARE)
    tail_n = keep - head_n
    head = data[:head_n]
    nl = head.rfind(b"\n", max(0, head_n - _SNAP))
    if nl >= 0:
        head = head[: nl + 1]
    ph = _placeholder_at(data, len(head))
    if ph is not None:  # never half a [REDACTED:kind]
        head = data[: ph[0]]
    start = total - tail_n
    nl = data.find(b"\n", start, start + _SNAP)
    if nl >= 0:
        start = nl + 1
    ph = _placeholder_at(data, start)
    if ph is not None:
        start = ph[1]
    tail = data[start:]
    head_text = head.decode("utf-8", errors="ignore")  # a character cut in two is dropped
    tail_text = tail.decode("utf-8", errors="ignore")
    cut = total - len(head_text.encode("utf-8")) - len(tail_text.encode("utf-8"))
    brk = "" if not head_text or head_text.endswith("\n") else "\n"
    return head_text + brk + _MARKER.format(cut=cut, total=total) + tail_text


def _placeholder_at(data: bytes, cut: int) -> tuple[int, int] | None:
    """(start, end) of the ``[REDACTED:kind]`` placeholder that ``cut`` falls inside."""
    ph = data.rfind(_PLACEHOLDER, max(0, cut - 80), cut + len(_PLACEHOLDER))
    if ph < 0 or ph >= cut:
        return None
    end = data.find(b"]", ph)
    return (ph, end + 1) if end >= cut else None


def cap_trajectories(trajectories: Sequence[Trajectory], cap: int) -> list[Trajectory]:
    """The trajectories with every step's output capped (unchanged objects when no output
    is over the cap)."""
    out = []
    for t in trajectories:
        if cap and any(len(s.output) * 4 > cap for s in t.steps):
            steps = [attrs.evolve(s, output=cap_output(s.output, cap)) for s in t.steps]
            t = attrs.evolve(t, steps=tuple(steps))
        out.append(t)
    return out
