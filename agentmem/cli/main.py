"""The click group, the shared ``--db`` option and the output helpers."""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import click

from ..db import sqlite3
from ..errors import AgentMemError
from ..memory import DEFAULT_DB_ENV, Memory, default_db_path

F = TypeVar("F", bound=Callable[..., Any])

#: Ids are SQLite integers: positive and below 2**63.
ID = click.IntRange(1, 2**63 - 1)


class LessonId(click.ParamType):
    """An experience id as a user writes it: ``12``, or as the injected text marks it,
    ``L12`` or ``[L12]`` (:func:`agentmem.serving.lesson_id`)."""

    name = "ID"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            if 1 <= value < 2**63:
                return value
            self.fail(f"{value} is not a lesson id (12, L12 or [L12])", param, ctx)
        from ..serving import lesson_id

        try:
            return lesson_id(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)


#: A lesson's id: ``12``, ``L12`` or ``[L12]``.
LESSON_ID = LessonId()

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _version() -> str:
    from .. import __version__

    return str(__version__)


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(version=None, package_name="agentmem", message="%(prog)s %(version)s")
def cli() -> None:
    """agentmem: an agent's tool-use memory in one SQLite file.

    Record trajectories, learn short lessons from groups of them (Agent-GRPO),
    and retrieve the lessons that fit the next task.

    \b
    Examples:
      agentmem record runs.jsonl          # record trajectories (JSON lines)
      agentmem groups                     # rewards, advantages, readiness
      agentmem learn                      # turn ready groups into experiences
      agentmem context "fix the build" --tool bash

    The library file is --db, else $AGENTMEM_DB, else
    ~/.local/share/agentmem/agentmem.db.
    """


def db_option(f: F) -> F:
    """The shared ``--db PATH`` option (environment variable ``AGENTMEM_DB``)."""
    return click.option(
        "--db",
        "db_path",
        type=click.Path(dir_okay=False),
        envvar=DEFAULT_DB_ENV,
        help=f"Library file (default: ${DEFAULT_DB_ENV}, else {default_db_path()}).",
        show_envvar=True,
    )(f)


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")(f)


@contextlib.contextmanager
def open_memory(db_path: str | None) -> Iterator[Memory]:
    """Open the library, turning agentmem errors into clean CLI errors."""
    with errors_as_click():
        mem = Memory.open(db_path)
    try:
        with errors_as_click():
            yield mem
    finally:
        mem.close()


@contextlib.contextmanager
def errors_as_click() -> Iterator[None]:
    try:
        yield
    except AgentMemError as e:
        raise click.ClickException(str(e)) from None
    except sqlite3.Error as e:
        raise click.ClickException(f"the library file cannot be used: {e}") from None
    except BrokenPipeError:
        raise  # the reader of our output left (`| head`): click ends quietly
    except OSError as e:
        raise click.ClickException(
            f"{e.strerror or e}: {getattr(e, 'filename', '') or ''}"
        ) from None


#: Commands that may make a new library; every other command refuses a library file that
#: does not exist (a mistyped --db or $AGENTMEM_DB would otherwise read an empty new one).
CREATES = frozenset({"record", "import_", "add", "settings", "domains", "join"})
#: Commands that print nothing (exit 0, a line on stderr) for a library that does not
#: exist: ``context`` runs in prompt hooks, before the first run was recorded.
QUIET_WHEN_MISSING = frozenset({"context"})


def require_library(db_path: str | None) -> None:
    """Refuse a library file that does not exist, naming the libraries that do."""
    import os
    from pathlib import Path

    if db_path == ":memory:":
        return
    path = Path(os.path.expanduser(db_path)) if db_path else default_db_path()
    if path.exists():
        return
    found = []
    default = default_db_path()
    if default.exists() and default != path:
        found.append(str(default))
    here = Path.cwd()
    for p in sorted(here.glob("*.db"))[:10]:
        if p.is_file() and p.resolve() != path.resolve() and p.stat().st_size >= 100:
            with contextlib.suppress(OSError), open(p, "rb") as fh:
                if fh.read(16) == b"SQLite format 3\x00":
                    found.append(str(p))
    hint = f"; libraries here: {', '.join(found)}" if found else ""
    raise click.ClickException(
        f"no library at {path} (agentmem setup, record or import makes one){hint}"
    )


def with_memory(f: F) -> F:
    """Decorator: open ``--db`` and pass the :class:`Memory` as ``mem``. Only the commands
    in :data:`CREATES` make a library that does not exist yet."""

    @db_option
    @functools.wraps(f)
    def wrapper(db_path: str | None, **kw: Any) -> Any:
        if f.__name__ in QUIET_WHEN_MISSING:
            try:
                require_library(db_path)
            except click.ClickException as e:  # a prompt hook's context: nothing, and why
                click.echo(f"agentmem: {e.message}", err=True)
                return None
        elif f.__name__ not in CREATES:
            require_library(db_path)
        with open_memory(db_path) as mem:
            return f(mem=mem, **kw)

    return wrapper  # type: ignore[return-value]


def print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A plain, aligned text table (no dependency)."""
    from .terminal import shown  # library text: control characters shown, not run

    cells = [[shown(fmt(c), newlines=False) for c in r] for r in rows]
    widths = [len(h) for h in headers]
    for r in cells:
        for i, c in enumerate(r):
            widths[i] = min(max(widths[i], len(c)), 80)
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    click.echo(line.rstrip())
    click.echo("  ".join("-" * w for w in widths))
    for r in cells:
        click.echo("  ".join(c[:80].ljust(w) for c, w in zip(r, widths)).rstrip())


def read_input(path: str) -> bytes:
    """Bytes of a file, or of standard input when ``path`` is ``-``."""
    if path == "-":
        return sys.stdin.buffer.read()
    from ..files import open_regular

    with errors_as_click(), open_regular(path, "rb") as fh:
        return fh.read()


__all__ = [
    "CREATES",
    "ID",
    "cli",
    "db_option",
    "errors_as_click",
    "fmt",
    "json_option",
    "open_memory",
    "print_json",
    "print_table",
    "read_input",
    "require_library",
    "with_memory",
]
