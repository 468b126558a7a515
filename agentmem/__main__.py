"""``python -m agentmem`` runs the command line."""

from ._entry import main

main()
