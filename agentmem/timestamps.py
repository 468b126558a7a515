"""Timestamps as the file stores them: ISO-8601 UTC with microseconds. Pure."""

from __future__ import annotations

from datetime import datetime, timezone

__all__ = ["now_iso", "parse_time"]


def now_iso() -> str:
    """The current time as ISO-8601 UTC, the format of every timestamp in the file."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def parse_time(value: str) -> datetime:
    """A stored timestamp (or any ISO-8601 time; ``Z`` allowed) as an aware datetime (UTC
    when it names no zone)."""
    t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)
