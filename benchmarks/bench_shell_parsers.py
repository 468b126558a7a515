"""Which shell parser reads the commands of real transcripts: tree-sitter-bash, bashlex, shlex.

Every ``Bash`` command (Claude Code) and ``shell`` / ``shell_command`` / ``exec_command``
command (Codex, ``bash -lc '...'`` unwrapped) in the transcripts given is parsed by each
parser into its simple commands, and the same wrapper peeling
(:func:`agentmem.agents.shell.command_of`) names their programs. Reported per parser:
the share parsed without an error, the share of a hand-checked sample whose programs it
names exactly (as a multiset), the share of heredoc commands parsed, and the time per
command. A parser that is not installed is reported as such.

    python benchmarks/bench_shell_parsers.py [FILE_OR_DIR ...]

Default input: ``/work/shared/data/transcripts``.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agentmem.agents.shell import command_of, parse, unwrap_argv

#: Hand-checked: the programs each command runs (wrappers peeled: npx tsc is tsc,
#: xargs grep is grep), as a multiset.
SAMPLE: dict[str, list[str]] = {
    "ls -la": ["ls"],
    "git status": ["git"],
    "mix credo lib/a.ex 2>&1 | tail -10": ["mix", "tail"],
    "cd /path/to/Demo/todo-app && npx tsc --noEmit --skipLibCheck": ["cd", "tsc"],
    'grep -A 10 "rescue" lib/tmux.ex': ["grep"],
    "sed -n '300,620p' src/cpolar_connect/ssh.py": ["sed"],
    'find /p -type f -name "*.tsx" -o -name "*.ts" | head -20': ["find", "head"],
    'bd create --title="load drops agent_id" --type=bug --priority=3': ["bd"],
    "pnpm add lucide-react": ["pnpm"],
    'find test -name "*live*.exs" -o -name "*view*.exs" 2>/dev/null': ["find"],
    "cd types && npx tsc --noEmit --skipLibCheck *.ts": ["cd", "tsc"],
    "apply_patch << 'PATCH'\n*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n"
    "*** End Patch\nPATCH": ["apply_patch"],
    "git add a.ex b.exs && git commit -m \"$(cat <<'EOF'\nfeat: enrich (x)\n\nCo-Authored: a\n"
    'EOF\n)"': ["git", "git", "cat"],
    "git push --set-upstream origin spotter-fum 2>&1": ["git"],
    "cat > types/filters.ts << 'EOF'\nexport type TodoFilter = 'all' | 'active';\n"
    "export interface FilterOption {\n  value: TodoFilter;\n}\nEOF": ["cat"],
    'ls -la types/ && echo "--- Complete file structure ---" && find types/ -name "*.ts" | sort': [
        "ls",
        "echo",
        "find",
        "sort",
    ],
    'grep -r "Phoenix.LiveViewTest\\|mount" test --include="*.exs" 2>/dev/null | head -20': [
        "grep",
        "head",
    ],
    "rg -n 'provider === \"lmstudio\"' -n": ["rg"],
    'find /p -name "*.ts" | grep -v node_modules | xargs grep -l "useTodos" 2>/dev/null': [
        "find",
        "grep",
        "grep",
    ],
    'head -c 500 t.jsonl | python3 -c "\nimport sys, json\nfor line in sys.stdin:\n'
    '    obj = json.loads(line)\n    print(f\\"type={obj[\'type\']}\\")\n"': ["head", "python3"],
    "python - << 'PY'\nfrom pathlib import Path\np=Path('a.py').read_text()\nprint(p[:80])\nPY": [
        "python"
    ],
    "ls -la docs && echo '---' && sed -n '1,200p' docs/S.md || true": ["ls", "echo", "sed", "true"],
    "ls -la tests && sed -n '1,200p' tests/$(ls tests | head -n 1) 2>/dev/null || true": [
        "ls",
        "sed",
        "ls",
        "head",
        "true",
    ],
    'for f in src/*.py; do wc -l "$f"; done': ["wc"],
    '[[ -f pyproject.toml ]] && echo "py project: $((1 + 2))"': ["[[", "echo"],
    "nix-shell -p cargo --run 'cargo build --release'": ["cargo"],
    "FOO=1 sudo -u bob env A=2 uv run pytest -q tests/x.py 2>&1 | tail -5": ["pytest", "tail"],
    'case "$1" in a) ls;; *) pwd;; esac': ["ls", "pwd"],
    "if [ -d build ]; then rm -rf build; fi": ["[[", "rm"],
    "cd repo; make -j4 test > out.log 2>&1 &": ["cd", "make"],
}


def commands_of(paths: list[Path]) -> Iterator[str]:
    """Every shell command in the transcripts (Claude Code and Codex lines)."""
    for path in paths:
        files = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
        for f in files:
            for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                yield from _line_commands(obj)


def _line_commands(obj: Any) -> Iterator[str]:
    if not isinstance(obj, dict):
        return
    msg = obj.get("message")
    if isinstance(msg, dict) and isinstance(msg.get("content"), list):
        for b in msg["content"]:
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == "Bash":
                c = (b.get("input") or {}).get("command")
                if isinstance(c, str):
                    yield c
    p = obj.get("payload")
    if isinstance(p, dict) and p.get("type") == "function_call":
        if p.get("name") not in ("shell", "shell_command", "exec_command", "local_shell"):
            return
        try:
            args = json.loads(p.get("arguments") or "{}")
        except ValueError:
            return
        c = args.get("command", args.get("cmd")) if isinstance(args, dict) else None
        if isinstance(c, list) and all(isinstance(x, str) for x in c):
            yield unwrap_argv(c)
        elif isinstance(c, str):
            yield c


# --------------------------------------------------------------------------- the parsers


def tree_sitter_programs(c: str) -> list[str] | None:
    s = parse(c)
    return list(s.programs) if s.parsed else None


def bashlex_programs(c: str) -> list[str] | None:
    import bashlex

    try:
        trees = bashlex.parse(c)
    except Exception:  # bashlex raises its own errors and NotImplementedError
        return None
    out: list[str] = []

    class V(bashlex.ast.nodevisitor):  # type: ignore[misc,name-defined]
        def visitcommand(self, n: Any, parts: Any) -> None:
            words = [p.word for p in parts if p.kind == "word"]
            cmd = command_of(words) if words else None
            if cmd is not None:  # `[ ... ]` is the test command, as tree-sitter's [[ ]]
                out.append("[[" if cmd.program == "[" else cmd.program)

    for t in trees:
        V().visit(t)
    return out


def shlex_programs(c: str) -> list[str] | None:
    """shlex with punctuation, line by line (what agentmem did before): no heredocs."""
    out: list[str] = []
    for line in c.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            words = list(lexer)
        except ValueError:
            return None
        cur: list[str] = []
        for w in [*words, ";"]:
            if w and set(w) <= set(";&|()<>"):
                cmd = command_of(cur) if cur else None
                if cmd is not None:
                    out.append(cmd.program)
                cur = []
            else:
                cur.append(w)
    return out


PARSERS: dict[str, Callable[[str], list[str] | None]] = {
    "tree-sitter-bash": tree_sitter_programs,
    "bashlex": bashlex_programs,
    "shlex": shlex_programs,
}


def _installed(name: str) -> bool:
    mod = {"tree-sitter-bash": "tree_sitter_bash", "bashlex": "bashlex"}.get(name)
    if mod is None:
        return True
    try:
        __import__(mod)
    except ImportError:
        return False
    return True


def main(argv: list[str]) -> None:
    paths = [Path(a) for a in argv] or [Path("/work/shared/data/transcripts")]
    cmds = list(commands_of(paths))
    heredocs = [c for c in cmds if "<<" in c]
    print(f"{len(cmds)} commands ({len(heredocs)} with a heredoc) from {len(paths)} path(s)")
    print("| parser | parsed | heredocs parsed | sample right | ms / command |")
    print("|---|---|---|---|---|")
    for name, fn in PARSERS.items():
        if not _installed(name):
            print(f"| {name} | not installed | | | |")
            continue
        fn("true")  # load the grammar outside the timing
        parse.cache_clear()
        t0 = time.perf_counter()
        ok = [fn(c) is not None for c in cmds]
        ms = (time.perf_counter() - t0) * 1000 / max(1, len(cmds))
        here = sum(1 for c in heredocs if fn(c) is not None)
        right = sum(1 for c, want in SAMPLE.items() if sorted(fn(c) or ["?"]) == sorted(want))
        print(
            f"| {name} | {sum(ok)}/{len(cmds)} | {here}/{len(heredocs)} | "
            f"{right}/{len(SAMPLE)} | {ms:.3f} |"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
