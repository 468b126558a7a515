"""Importers: one module per transcript format, each turning an agent's records into trajectories.

- :mod:`.openai`: OpenAI chat transcripts with ``tool_calls`` (tau-bench).
- :mod:`.claude_code`: Claude Code session transcripts (``~/.claude/projects``).
- :mod:`.codex`: Codex CLI rollouts (``~/.codex/sessions``).
- :mod:`.anthropic`: Anthropic Messages API conversations.

The transcript formats share :mod:`.turns` (one trajectory per user prompt) and
:mod:`.run` (finding files, importing only new turns).
"""
