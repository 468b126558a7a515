"""``python -m agentmem`` runs the command line."""

from .cli import cli

cli(prog_name="agentmem")
