"""The ``agentmem`` command line: a click group whose commands live in the modules beside this one.

Each command parses its options, calls one library function, and prints a table
for people or JSON for machines (``--json``). agentmem's errors become
``click.ClickException`` here, at the edge, and nowhere else.
"""

from __future__ import annotations

from .main import cli

__all__ = ["cli"]

# Importing the command modules registers their commands on the group.
from . import (  # noqa: F401
    admin,
    agent,
    browse,
    curate,
    demo,
    effect,
    hooks,
    learning,
    practice,
    projects,
    rc,
    recording,
    review,
    setup,
    status,
    team,
)
