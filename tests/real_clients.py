"""A harness for the real Claude Code and Codex CLIs, driven by the scripted model server.

A :class:`Sandbox` is one client in a world of its own: a temporary HOME (and
``CLAUDE_CONFIG_DIR`` / ``CODEX_HOME``, ``XDG_*``), a project folder (a git
repository), an agentmem library, and agentmem's hooks installed with
``agentmem hooks install``. :meth:`Sandbox.session` runs one non-interactive
session of the client against a scenario (see :mod:`tests.scripted_model`),
inside a network namespace of its own where ``unshare`` allows it, and returns
the requests the model received. The binaries come from ``$AGENTMEM_CLAUDE`` and
``$AGENTMEM_CODEX`` (``.ci/run`` installs the pinned versions and sets them),
else from the CI's cache folder.

A test reads like a user's day: install the hooks, work (sessions), learn,
work again, and look at what reached the model::

    box = Sandbox.create(tmp_path, "claude-code")
    box.install_hooks()
    box.session("Show me the notes", scenario)
    box.agentmem("learn", "--no-model")
    later = box.session("Show me the notes", scenario)
    assert "docs/notes.txt" in later.context

A scenario decides each answer from the request alone (:mod:`tests.scripted_model`),
so a test can script a model that follows a served lesson
(``Turn(..., if_served=("docs/notes.txt", followed_calls))``) or ignores it (no
``if_served``) and check what the next import records.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from .scripted_model import Scenario

ROOT = Path(__file__).resolve().parent.parent
CLAUDE_VERSION = "2.1.332"
CODEX_VERSION = "0.171.0"
#: Where ``.ci/run`` caches the clients (outside the clone).
CACHE = Path(os.environ.get("AGENTMEM_CI_CACHE") or Path.home() / ".cache" / "agentmem-ci")
_DEFAULT_BINARIES = {
    "claude-code": CACHE
    / "clients"
    / f"claude-code-{CLAUDE_VERSION}"
    / "node_modules/@anthropic-ai/claude-code-linux-x64/claude",
    "codex": CACHE / "clients" / f"codex-{CODEX_VERSION}" / "node_modules/.bin/codex",
}
_ENV = {"claude-code": "AGENTMEM_CLAUDE", "codex": "AGENTMEM_CODEX"}
#: How long one client session may take.
SESSION_TIMEOUT_S = 120


def client_binary(client: str) -> Path | None:
    """The client's binary: ``$AGENTMEM_CLAUDE`` / ``$AGENTMEM_CODEX``, else the CI cache's."""
    given = os.environ.get(_ENV[client])
    path = Path(given) if given else _DEFAULT_BINARIES[client]
    return path if path.is_file() and os.access(path, os.X_OK) else None


def skip_reason(client: str) -> str:
    version = CLAUDE_VERSION if client == "claude-code" else CODEX_VERSION
    return (
        f"the real {client} CLI is not installed: set ${_ENV[client]} to its binary "
        f"(.ci/run installs {client} {version} under {CACHE}/clients)"
    )


@cache
def netns_works() -> bool:
    """Whether this process may make a network namespace of its own (root, or allowed)."""
    probe = [
        sys.executable,
        "-c",
        "from tests.scripted_model import enter_netns; "
        "import sys; sys.exit(0 if enter_netns() else 1)",
    ]
    try:
        return subprocess.run(probe, cwd=ROOT, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@dataclass
class Session:
    """One client session: its exit status, its output, and what the model was sent."""

    returncode: int
    stdout: str
    stderr: str
    requests: list[dict[str, Any]]

    @property
    def turn_requests(self) -> list[dict[str, Any]]:
        """The requests the scenario answered (not side requests: titles and the like)."""
        return [r for r in self.requests if r.get("action") not in (None, "OK.")]

    @property
    def context(self) -> str:
        """All the text the model was sent in this session (prompts, hook context, tool
        results), for looking up what reached it."""
        return "\n".join(json.dumps(r.get("body"), ensure_ascii=False) for r in self.requests)


@dataclass
class Sandbox:
    """One client, a home and a project of its own, and an agentmem library."""

    root: Path
    client: str
    binary: Path
    home: Path = field(init=False)
    project: Path = field(init=False)
    library: Path = field(init=False)
    netns: bool = True
    _runs: int = 0

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.project = self.root / "project"
        self.library = self.root / "agentmem.db"

    @classmethod
    def create(cls, root: Path, client: str, files: dict[str, str] | None = None) -> Sandbox:
        binary = client_binary(client)
        if binary is None:
            raise RuntimeError(skip_reason(client))
        box = cls(root, client, binary, netns=netns_works())
        (box.home / ".claude").mkdir(parents=True)
        (box.home / ".codex").mkdir(parents=True)
        box.project.mkdir()
        for name, text in (files or {}).items():
            (box.project / name).parent.mkdir(parents=True, exist_ok=True)
            (box.project / name).write_text(text)
        subprocess.run(["git", "init", "-q", str(box.project)], check=True, env=box.env)
        if client == "codex":
            box.codex_config.write_text(CODEX_CONFIG)
        return box

    # -- environment ---------------------------------------------------------------------

    @property
    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_", "AGENTMEM_"))
        }
        path = os.pathsep.join([str(self.binary.parent), env.get("PATH", "/usr/bin:/bin")])
        env.update(
            HOME=str(self.home),
            CLAUDE_CONFIG_DIR=str(self.home / ".claude"),
            CODEX_HOME=str(self.home / ".codex"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_CACHE_HOME=os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache")),
            AGENTMEM_DB=str(self.library),
            HF_HUB_OFFLINE="1",
            PATH=path,
            PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
        )
        return env

    @property
    def codex_config(self) -> Path:
        return self.home / ".codex" / "config.toml"

    @property
    def hooks_log(self) -> Path:
        return self.home / ".local" / "state" / "agentmem" / "hooks.log"

    # -- agentmem ------------------------------------------------------------------------

    def agentmem(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``python -m agentmem ARGS`` as the user would, in the project."""
        p = subprocess.run(
            [sys.executable, "-m", "agentmem", *args],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if check and p.returncode != 0:
            raise AssertionError(f"agentmem {' '.join(args)} failed:\n{p.stdout}\n{p.stderr}")
        return p

    def install_hooks(self, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.agentmem("hooks", "install", self.client, *extra)

    # -- the client ------------------------------------------------------------------------

    def session(
        self,
        prompt: str,
        scenario: Scenario,
        *,
        extra: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> Session:
        """Run one non-interactive session of the client on ``prompt`` (``extra``: more
        arguments for the client; ``env``: more environment)."""
        self._runs += 1
        scen = self.root / f"scenario-{self._runs}.json"
        scen.write_text(scenario.to_json())
        log = self.root / f"requests-{self._runs}.jsonl"
        if self.client == "claude-code":
            envs = [
                "ANTHROPIC_BASE_URL={base_url}",
                "ANTHROPIC_API_KEY=sk-ant-scripted",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
            ]
            cmd = [
                str(self.binary),
                "-p",
                prompt,
                "--output-format",
                "json",
                "--allowedTools",
                "Bash",
                *extra,
            ]
        else:
            envs = ["SCRIPTED_API_KEY=scripted"]
            cmd = [
                str(self.binary),
                "exec",
                "--dangerously-bypass-hook-trust",
                "-c",
                'model_providers.scripted.base_url="{base_url}/v1"',
                *extra,
                prompt,
            ]
        runner = [
            sys.executable,
            "-m",
            "tests.scripted_model",
            "run",
            "--scenario",
            str(scen),
            "--log",
            str(log),
            "--timeout",
            str(SESSION_TIMEOUT_S),
        ]
        runner += [a for e in envs for a in ("--env", e)]
        if self.netns:
            runner.append("--netns")
        p = subprocess.run(
            [*runner, "--", *cmd],
            cwd=self.project,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=SESSION_TIMEOUT_S + 30,
        )
        requests = (
            [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        )
        return Session(p.returncode, p.stdout, p.stderr, requests)

    def transcripts(self) -> list[Path]:
        """The session files the client wrote (Claude Code's jsonl, Codex's rollouts)."""
        if self.client == "claude-code":
            return sorted((self.home / ".claude" / "projects").rglob("*.jsonl"))
        return sorted((self.home / ".codex" / "sessions").rglob("rollout-*.jsonl"))


CODEX_CONFIG = """\
model = "scripted"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.scripted]
name = "scripted"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"

[analytics]
enabled = false
"""
