"""Library text printed for people: a terminal shows its control sequences, never runs them.

A tool's output, a task or a lesson can hold ESC, BEL or bidi characters (``\\x1b[2J``
clears the screen, ``\\x1b]8;;`` writes a link, U+202E turns text around). Where the
CLI prints library text for a person it goes through :func:`echo`, which writes them as
escapes (:func:`agentmem.sanitize.for_terminal`). JSON output is exact JSON, untouched:
its string escapes already keep a terminal from acting on it.
"""

from __future__ import annotations

import click

from ..sanitize import for_terminal

__all__ = ["echo", "shown"]


def shown(text: object, *, newlines: bool = True) -> str:
    """``text`` as a terminal may print it."""
    return for_terminal(str(text), newlines=newlines)


def echo(text: object, *, err: bool = False) -> None:
    """``click.echo`` of library text, its control characters shown as escapes."""
    click.echo(shown(text), err=err)
