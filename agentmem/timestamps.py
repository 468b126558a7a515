"""Timestamps as the file stores them: ISO-8601 UTC with microseconds. Pure.

:func:`now_iso` needs no :mod:`datetime` (whose import the prompt hook would pay for
each line of the served log); :func:`parse_time` imports it when called.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["now_iso", "parse_time"]


def now_iso() -> str:
    """The current time as ISO-8601 UTC, the format of every timestamp in the file:
    what ``datetime.now(timezone.utc).isoformat(timespec="microseconds")`` gives."""
    seconds, micros = divmod(time.time_ns() // 1000, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{micros:06d}+00:00"


def parse_time(value: str) -> datetime:
    """A stored timestamp (or any ISO-8601 time; ``Z`` allowed) as an aware datetime (UTC
    when it names no zone)."""
    from datetime import datetime, timezone

    t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)
