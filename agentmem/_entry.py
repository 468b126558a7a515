"""The ``agentmem`` console script: fast paths for ``context`` and the hooks, else the click CLI."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:2] == ["hooks", "run"] and not {"-h", "--help"} & set(argv):
        from .hooks.run import run_main  # an agent's hook: never click, never an error

        sys.exit(run_main(argv[2:]))
    if argv[:1] == ["context"] and not {"-h", "--help"} & set(argv):
        from .fastpath import context_main

        code = context_main(argv[1:])
        if code is not None:
            sys.exit(code)
    from .cli import cli

    cli(prog_name="agentmem")
