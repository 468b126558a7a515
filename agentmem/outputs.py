"""The output cap: a tool output longer than the library's cap is stored as its head and tail.

A build log or a test run can print megabytes, and a library that stored them whole
would grow by megabytes a run. Every way of recording (the API, ``agentmem record``
and ``import``, transcript imports, the MCP server) cleans a run in
``Memory._clean`` before it is stored: there a long output is cut first and only
what is kept is redacted (:func:`cap_and_redact`), so recording a 4 MB output costs
the redaction of about twice the cap, not of 4 MB. The cap is in bytes of UTF-8 (the
library setting ``output_cap``, :data:`DEFAULT_OUTPUT_CAP` unless set; 0 turns the
cap off); an output over it keeps its first quarter and its last three quarters,
where errors and test summaries are, with a marker line between them that gives
the original length::

    [... agentmem output cap: 21934464 of 22000000 bytes cut here ...]

No secret gets through at a cut: each kept part is redacted as part of a window
that reaches :data:`WINDOW` characters past the cut, and the :data:`MARGIN`
characters of the window next to where it was cut off are never kept, so a secret
that straddles a window's edge (half a token, a ``password=`` whose value lies
beyond) is dropped, not stored half-recognised. Storing
(:func:`agentmem.storage.trajectories.insert_trajectories`) applies :func:`cap_output`
again, which leaves an output within the cap as it is.

The result is at most the cap, so capping is idempotent; both parts end at a line
break where one is near (a line is not cut in the middle unless it is long), and
never inside a ``[REDACTED:kind]`` placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import attrs

from .errors import InvalidRecordError
from .records import Trajectory
from .redact import PLACEHOLDER_PREFIX

__all__ = [
    "DEFAULT_OUTPUT_CAP",
    "MARGIN",
    "MIN_OUTPUT_CAP",
    "WINDOW",
    "cap_and_redact",
    "cap_output",
    "cap_trajectories",
    "cut_marker",
    "fits_cap",
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
#: How far (in characters) past a cut the text around a kept part is redacted with it.
WINDOW = 16 * 1024
#: How much of a redacted window, next to where the window was cut off, is never kept:
#: more than the longest secret that redaction could miss when cut in two.
MARGIN = 8 * 1024

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


def fits_cap(output: str, cap: int) -> bool:
    """Whether ``output`` is at most ``cap`` bytes of UTF-8 (or ``cap`` is 0: no cap)."""
    if not cap or len(output) * 4 <= cap:  # a character is at most 4 bytes
        return True
    if len(output) <= cap and output.isascii():
        return True
    return len(output.encode("utf-8")) <= cap


def _budget(cap: int, total: int) -> tuple[int, int]:
    """(head bytes, tail bytes) kept of an output of ``total`` bytes."""
    # The marker's figures are at most ``total``: its longest form bounds its length.
    longest = len(_MARKER.format(cut=total, total=total)) + 1  # + a line break before it
    keep = cap - longest
    head_n = int(keep * HEAD_SHARE)
    return head_n, keep - head_n


def cap_output(output: str, cap: int) -> str:
    """``output`` itself when it is at most ``cap`` bytes of UTF-8 (or ``cap`` is 0),
    else its head and tail with a marker between them (see the module doc)."""
    if fits_cap(output, cap):
        return output
    data = output.encode("utf-8")
    head_n, tail_n = _budget(cap, len(data))
    return _join(_head(data, head_n), _tail(data, tail_n), len(data))


def cap_and_redact(output: str, cap: int, redact: Callable[[str], str]) -> str:
    """``redact(output)`` capped as :func:`cap_output` would, at the cost of redacting
    the kept parts and their windows only (see the module doc)."""
    if fits_cap(output, cap):
        return redact(output)
    total = len(output.encode("utf-8"))
    head_n, tail_n = _budget(cap, total)
    n = len(output)
    h_end = min(n, head_n + WINDOW)  # characters: a character is at least one byte
    t_start = max(0, n - tail_n - WINDOW)
    if h_end >= t_start:  # the windows meet: redact it all
        return cap_output(redact(output), cap)
    head = redact(output[:h_end])
    head = head[: max(0, len(head) - MARGIN)]
    tail = redact(output[t_start:])[MARGIN:]
    return _join(_head(head.encode("utf-8"), head_n), _tail(tail.encode("utf-8"), tail_n), total)


def _head(data: bytes, head_n: int) -> bytes:
    """The first ``head_n`` bytes at most, ending at a line break where one is near and
    never inside a placeholder."""
    head = data[:head_n]
    nl = head.rfind(b"\n", max(0, head_n - _SNAP))
    if nl >= 0:
        head = head[: nl + 1]
    ph = _placeholder_at(data, len(head))
    if ph is not None:  # never half a [REDACTED:kind]
        head = data[: ph[0]]
    return head


def _tail(data: bytes, tail_n: int) -> bytes:
    """The last ``tail_n`` bytes at most, starting after a line break where one is near
    and never inside a placeholder."""
    start = max(0, len(data) - tail_n)
    nl = data.find(b"\n", start, start + _SNAP)
    if nl >= 0:
        start = nl + 1
    ph = _placeholder_at(data, start)
    if ph is not None:
        start = ph[1]
    return data[start:]


def _join(head: bytes, tail: bytes, total: int) -> str:
    """Head, the marker (``total``: the output's length in bytes) and tail."""
    head_text = head.decode("utf-8", errors="ignore")  # a character cut in two is dropped
    tail_text = tail.decode("utf-8", errors="ignore")
    cut = max(0, total - len(head_text.encode("utf-8")) - len(tail_text.encode("utf-8")))
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
