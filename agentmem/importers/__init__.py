"""Importers: one module per transcript format, each turning an agent's records into trajectories.

- :mod:`.openai`: OpenAI chat transcripts with ``tool_calls`` (tau-bench).
- :mod:`.claude_code`: Claude Code session transcripts (``~/.claude/projects``).
- :mod:`.codex`: Codex CLI rollouts (``~/.codex/sessions``).
- :mod:`.anthropic`: Anthropic Messages API conversations.

Each defines its ``FORMAT``, registered in :mod:`.formats` (the one list of formats that
the CLI, the hooks and :mod:`.run` read). The transcript formats share :mod:`.turns`
(one trajectory per user prompt; a prompt that is not a task takes its task from the
conversation, :mod:`agentmem.conversation`) and :mod:`.run` (finding files, importing
only new turns).
"""
