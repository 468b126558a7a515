"""Agent hooks: record every session and put the lessons before every prompt, automatically.

- :mod:`.install`: merge agentmem's hooks into Claude Code's ``settings.json`` and
  Codex's ``config.toml``, and take them out again.
- :mod:`.run`: what the hooks run (``agentmem hooks run claude-code|codex``).
- :mod:`.learner`: the detached learner a Stop hook starts with ``--learn``.
"""
