"""Commands for agent integration: mcp."""

from __future__ import annotations

from .main import cli, db_option, errors_as_click


@cli.command()
@db_option
def mcp(db_path: str | None) -> None:
    """Serve the library to coding agents over MCP (stdio).

    Starts a Model Context Protocol server on standard input and output, for an
    MCP client (Claude Code, Cursor, ...) to launch. Its tools:
    agentmem_context and agentmem_retrieve (lessons for a task),
    agentmem_record, agentmem_begin / agentmem_step / agentmem_end (record
    trajectories) and agentmem_feedback (the user's verdict). Trajectories
    still open when the server exits are recorded as rejected if they have
    steps. Needs the MCP SDK: pip install 'agentmem[mcp]'.

    \b
    Examples:
      agentmem mcp --db ~/.local/share/agentmem/agentmem.db
      claude mcp add agentmem -- agentmem mcp --db ~/agentmem.db

    \b
    Client configuration (Claude Code .mcp.json, Cursor .cursor/mcp.json):
      {"mcpServers": {"agentmem": {
          "command": "agentmem",
          "args": ["mcp", "--db", "/home/me/.local/share/agentmem/agentmem.db"]}}}
    """
    from ..mcp_server import serve

    with errors_as_click():
        serve(db_path)
