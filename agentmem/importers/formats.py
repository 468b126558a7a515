"""The transcript formats: one :class:`TranscriptFormat` per module, registered in one place.

A format is what ``agentmem import --format NAME``, the Stop hook and
:meth:`agentmem.Memory.import_transcripts` read. Each importer module
(:mod:`.claude_code`, :mod:`.codex`, :mod:`.anthropic`) defines its ``FORMAT``;
:data:`BUILTIN` names those modules, and :func:`register` adds another (a plugin's,
a test's). Everything that lists or dispatches formats (the import command, the
``imports --source`` choice, the hooks, :mod:`.run`) asks this registry, so a new
format is one module and one line in :data:`BUILTIN`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import import_module
from pathlib import Path
from typing import Any, Protocol

import attrs

from .._registry import Registry
from ..errors import InvalidRecordError
from .turns import FileReport, Turn

__all__ = [
    "BUILTIN",
    "Bundle",
    "ParsedFile",
    "TranscriptFormat",
    "agent_id_of",
    "by_name",
    "formats",
    "home_of",
    "is_format",
    "looks_like",
    "names",
    "register",
    "sniff",
    "sniffed",
    "unregister",
]

#: The built-in formats: name -> the module under ``agentmem.importers`` whose FORMAT it is.
BUILTIN: Mapping[str, str] = {
    "claude-code": "claude_code",
    "codex": "codex",
    "anthropic": "anthropic",
}

#: How many leading JSON lines a detector sees.
SNIFF_LINES = 40


@attrs.frozen
class ParsedFile:
    """A parsed transcript: its turns, what was skipped, and its sub-agents' links to their
    parent calls (sub-agent id -> what is known of the call)."""

    turns: tuple[Turn, ...]
    report: FileReport
    links: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)


def agent_id_of(path: Path) -> str:
    """A sub-agent file's agent id: ``agent-<id>.jsonl`` -> ``<id>``."""
    return path.stem[len("agent-") :] if path.stem.startswith("agent-") else path.stem


@attrs.frozen
class Bundle:
    """Files imported together: a session and its sub-agents' transcripts."""

    main: Path | None
    subagents: tuple[Path, ...] = ()
    #: sub-agent files found without their session file: the session file they belong to
    parent: Path | None = None

    @property
    def files(self) -> tuple[Path, ...]:
        return ((self.main,) if self.main else ()) + self.subagents


class Parse(Protocol):
    def __call__(
        self,
        data: bytes,
        *,
        path: str,
        final: bool,
        quiet: bool,
        subagent: Mapping[str, Any] | None,
    ) -> ParsedFile: ...


def _no_home() -> Path | None:
    return None


@attrs.frozen
class TranscriptFormat:
    """One transcript format.

    ``parse(data, path=, final=, quiet=, subagent=)`` reads one file's bytes into
    turns (``final``: the agent says its last turn is over; ``quiet``: the file has
    not changed for a long time; ``subagent``: the file is a sub-agent's run).
    ``detect(objects)`` says whether the leading JSON objects of a file are of this
    format (``None``: it cannot tell from lines, e.g. one JSON document). ``home()``
    is where the agent keeps its transcripts (``None``: no default place).
    ``pattern`` finds its files in a folder, unless ``bundles(root)`` does.
    """

    name: str
    description: str
    parse: Parse
    detect: Callable[[Sequence[Mapping[str, Any]]], bool | None]
    home: Callable[[], Path | None] = _no_home
    pattern: str = "*.jsonl"
    bundles: Callable[[Path], list[Bundle]] | None = None
    #: What a file of this format is called in messages ("a Codex rollout").
    noun: str = ""
    #: Optional: whether one JSON object is a line of this format, where ``detect(objects)``
    #: is ``any(detect_line(o) for o in objects)``; a reader that only asks whether a file
    #: is of this format then stops at the first line that says so.
    detect_line: Callable[[Mapping[str, Any]], bool] | None = None

    def default_path(self) -> Path:
        """Where the agent keeps its transcripts, or an error saying to give the file."""
        home = self.home()
        if home is None:
            raise InvalidRecordError(f"--format {self.name} has no default place: give the file")
        return home

    def discover(self, root: Path) -> list[Bundle]:
        """The files (bundles) under ``root``, a file or a folder."""
        if self.bundles is not None:
            return self.bundles(root)
        if root.is_file():
            return [Bundle(root)]
        # a folder that is named like a transcript is listed too: the import reports it
        return [Bundle(p) for p in sorted(root.rglob(self.pattern)) if not p.is_symlink()]


def _builtins(add: Callable[[TranscriptFormat], None]) -> None:
    for module in BUILTIN.values():
        add(import_module(f"{__package__}.{module}").FORMAT)


_REGISTRY: Registry[TranscriptFormat] = Registry("a transcript format", _builtins)


def register(fmt: TranscriptFormat) -> None:
    """Add a format (ValueError if one of that name is registered already)."""
    _REGISTRY.register(fmt)


def unregister(name: str) -> None:
    """Remove the format called ``name``; nothing if there is none."""
    _REGISTRY.unregister(name)


def formats() -> tuple[TranscriptFormat, ...]:
    """The registered formats, the built-ins first."""
    return _REGISTRY.backends()


def names() -> tuple[str, ...]:
    """The registered formats' names, the built-ins first."""
    return tuple(f.name for f in formats())


def by_name(name: str) -> TranscriptFormat:
    """The format called ``name``, or an error that lists the known ones."""
    for f in formats():
        if f.name == name:
            return f
    raise InvalidRecordError(f"unknown transcript format {name!r}; one of {', '.join(names())}")


def looks_like(objects: Sequence[Mapping[str, Any]], *, besides: str) -> TranscriptFormat | None:
    """Another format (than ``besides``) that these leading JSON objects clearly are."""
    for f in formats():
        if f.name != besides and f.detect(objects):
            return f
    return None


def sniff(path: Path, limit: int = SNIFF_LINES) -> list[Mapping[str, Any]]:
    """The first JSON objects of a JSON-lines file (bad lines skipped), for the detectors."""
    return list(sniffed(path, limit))


def sniffed(path: Path, limit: int = SNIFF_LINES) -> Iterator[Mapping[str, Any]]:
    """:func:`sniff`'s objects one by one, each read when asked for (none when the file
    cannot be read)."""
    from ..files import open_regular
    from ._json import loads_line

    count = 0
    try:
        with open_regular(path, "rb") as fh:
            for n, raw in enumerate(fh):
                if n >= limit * 2 or count >= limit:
                    break
                if len(raw) > 1_000_000:  # a huge line: read no more of it than needed
                    continue
                try:
                    obj = loads_line(raw.decode("utf-8").rstrip("\r\n"))
                except (UnicodeDecodeError, ValueError):
                    continue
                if isinstance(obj, dict):
                    count += 1
                    yield obj
    except OSError:
        return


def is_format(fmt: TranscriptFormat, path: Path) -> tuple[bool, list[Mapping[str, Any]]]:
    """Whether :func:`sniff` of ``path`` is not False for ``fmt.detect`` (True: it is of
    ``fmt``, or it cannot tell), and the objects read when it is not: the file's first
    line of ``fmt`` ends the reading for a format with ``detect_line``."""
    if fmt.detect_line is None:
        objects = sniff(path)
        return not objects or fmt.detect(objects) is not False, objects
    objects = []
    for o in sniffed(path):
        if fmt.detect_line(o):
            return True, []  # fmt.detect(sniff(path)) is True: any(...) of them
        objects.append(o)
    return not objects or fmt.detect(objects) is not False, objects


def home_of(variable: str, default: str, sub: str) -> Path:
    """``$variable/sub``, or ``~/default/sub`` (``~/.claude/projects``, ``~/.codex/sessions``)."""
    base = os.environ.get(variable) or str(Path.home() / default)
    return Path(base) / sub
