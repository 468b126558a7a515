"""Commands for agent integration: mcp."""
