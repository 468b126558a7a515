"""The ``agentmem`` console script: lean entries for ``context`` and the hooks, else the CLI.

``agentmem context`` runs before every prompt in prompt hooks, so it skips the
click command tree: its arguments are read here and handed to
:func:`agentmem.context.lean_serve` as a :class:`agentmem.serving.Query`, the same
serving path ``Memory.context`` runs. Anything else (``--help``, an argument this
reader does not know, a file that needs the full path) goes to the click CLI, which
gives the proper messages. ``agentmem hooks run`` goes to :mod:`agentmem.hooks.run`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

_LISTS = {"--domain": "domains", "-d": "domains", "--tool": "tools", "-t": "tools"}
_VALUES = {
    "-k": "k",
    "--db": "db",
    "--min-score": "min_score",
    "--project": "project",
    "--client": "client",
}
_CLIENTS = ("claude-code", "codex")


def _parse(argv: Sequence[str]) -> dict[str, Any] | None:
    """``context``'s arguments, or None for anything unusual (the CLI then explains)."""
    out: dict[str, Any] = {
        "domains": [],
        "tools": [],
        "k": "5",
        "db": None,
        "min_score": None,
        "project": None,
        "client": None,
    }
    text: list[str] = []
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--":
            text += args
            break
        name, eq, value = a.partition("=") if a.startswith("--") else (a, "", "")
        if name in _LISTS or name in _VALUES:
            if not eq:
                if not args:
                    return None
                value = args.pop(0)
            if name in _LISTS:
                out[_LISTS[name]].append(value)
            else:
                out[_VALUES[name]] = value
        elif a.startswith("-") and a != "-":
            return None
        else:
            text.append(a)
    try:
        out["k"] = int(out["k"])
        if out["min_score"] is not None:
            out["min_score"] = float(out["min_score"])
            if not 0.0 <= out["min_score"] <= 1.0:
                return None
    except ValueError:
        return None
    if out["project"] is None:  # the current folder's project, as `agentmem context` does
        import os

        out["project"] = os.getcwd()
    if out["client"] is not None and out["client"] not in _CLIENTS:
        return None  # the CLI explains
    if len(text) != 1 or not text[0].strip() or not 1 <= out["k"] <= 1000:
        return None
    out["text"] = text[0]
    return out


def context_main(argv: Sequence[str]) -> int | None:
    """Run ``agentmem context ARGS``; ``None`` means: let the full CLI do it."""
    args = _parse(argv)
    if args is None:
        return None
    from .paths import serving_off

    if serving_off():  # AGENTMEM_SERVE=off: a prompt hook that serves nothing
        return 0
    from .context import lean_serve
    from .errors import InvalidRecordError
    from .paths import default_db_path
    from .serving import Query

    try:
        query = Query(
            args["text"],
            tools=args["tools"] or None,
            domains=args["domains"] or None,
            k=args["k"],
            min_score=args["min_score"],
            project=args["project"],
            route="context",
            client=args["client"],
        )
    except InvalidRecordError:
        return None  # the CLI explains
    served = lean_serve(args["db"] or default_db_path(), query)
    block = None if served is None else served.text
    if block is None:
        return None
    if block:
        sys.stdout.write(block + "\n")
    return 0


def main() -> None:
    argv = sys.argv[1:]
    if argv[:2] == ["hooks", "run"] and not {"-h", "--help"} & set(argv):
        import gc

        gc.disable()  # a short process (run_main turns it on again for what is not a prompt)
        from .hooks.run import run_main  # an agent's hook: never click, never an error

        _leave(run_main(argv[2:]))
    if argv[:1] == ["context"] and not {"-h", "--help"} & set(argv):
        code = context_main(argv[1:])
        if code is not None:
            sys.exit(code)
    from .cli import cli

    try:
        cli(prog_name="agentmem")
    except BrokenPipeError:  # `agentmem stats | head -1`: the reader left; end quietly
        _quiet_exit()


def _leave(code: int) -> None:
    """End a hook's process at once: its output flushed, without tearing the interpreter
    down (about a tenth of what a prompt hook costs). Only when nothing waits for a normal
    exit: no other thread (which it would join), no ``atexit`` function (a model's worker
    to stop, for one)."""
    import atexit
    import contextlib
    import os

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe: nothing more can be said
            stream.flush()
    threading = sys.modules.get("threading")
    waiting = getattr(atexit, "_ncallbacks", lambda: 1)()  # CPython's count; else assume some
    if waiting or (threading is not None and threading.active_count() > 1):
        sys.exit(code)
    os._exit(code)


def _quiet_exit() -> None:
    """Leave after a closed pipe without Python's own "Broken pipe" message at exit."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
    sys.exit(0)
