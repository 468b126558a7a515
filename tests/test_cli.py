"""The CLI: CliRunner for behaviour, real subprocesses for the entry point and concurrency."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentmem.cli import cli

from .conftest import ROOT, TAU_BENCH, jsonl, run_cli


def invoke(db: Path, *args: str, input: bytes | str | None = None):
    return CliRunner().invoke(
        cli,
        ["--help"] if not args else list(args),
        input=input,
        env={"AGENTMEM_DB": str(db)},
        catch_exceptions=False,
    )


def rec(task="t", ok=True, accepted=True):
    return {
        "task": task,
        "steps": [{"tool": "ls", "params": {}, "output": "x" if ok else "Error: x", "success": ok}],
        "accepted": accepted,
    }


def test_record_prints_ids_and_groups_json(tmp_path):
    db = tmp_path / "a.db"
    r = invoke(db, "record", "-", input=jsonl(rec(ok=True), rec(ok=False, accepted=False)))
    assert r.exit_code == 0, r.output
    assert r.output.split() == ["1", "2"]
    r = invoke(db, "groups", "--json")
    (g,) = json.loads(r.output)
    assert g["status"] == "ready" and g["size"] == 2
    assert g["trajectories"][0]["advantage"] > 0


def test_bad_line_exit_code_and_unchanged(tmp_path):
    db = tmp_path / "a.db"
    data = jsonl(rec(), rec()) + b'{"task": "x", "steps": "nope"}\n'
    r = invoke(db, "record", "-", input=data)
    assert r.exit_code != 0
    assert "line 3" in r.output and "steps" in r.output
    assert json.loads(invoke(db, "stats", "--json").output)["trajectories"] == 0
    r = invoke(db, "record", "--skip-bad", "-", input=data)
    assert r.exit_code == 0
    assert json.loads(invoke(db, "stats", "--json").output)["trajectories"] == 2


def test_feedback_show_and_errors(tmp_path):
    db = tmp_path / "a.db"
    invoke(db, "record", "-", input=jsonl(rec(accepted=None)))
    assert invoke(db, "feedback", "1", "--reject").exit_code == 0
    out = invoke(db, "show", "1", "--json").output
    assert json.loads(out)["accepted"] is False
    r = invoke(db, "feedback", "99", "--accept")
    assert r.exit_code == 1 and "no trajectory has id 99" in r.output
    assert invoke(db, "feedback", "1").exit_code == 2


def test_domains_override(tmp_path):
    db = tmp_path / "a.db"
    assert invoke(db, "domains", "--set", "deploy=k8s").exit_code == 0
    out = json.loads(invoke(db, "domains", "deploy", "bash", "weird_tool", "--json").output)
    assert out == {"deploy": "k8s", "bash": "shell", "weird_tool": "general"}
    assert invoke(db, "domains", "--set", "x=Bad Domain").exit_code == 1


def test_every_command_has_help_with_an_example():
    for name in cli.commands:
        r = CliRunner().invoke(cli, [name, "-h"])
        assert r.exit_code == 0, name
        assert "Example" in r.output, f"agentmem {name} --help has no example"


def test_the_command_reference_is_current_and_has_every_command():
    """docs/cli.md is generated from --help (tools/cli_reference.py); regenerate it after
    changing a command."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "tools/cli_reference.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--check"]) == 0, "docs/cli.md is stale: python tools/cli_reference.py"
    doc = (ROOT / "docs" / "cli.md").read_text()
    for name in cli.commands:
        assert re.search(rf"^## agentmem {name}$", doc, re.M), (
            f"agentmem {name} is not in docs/cli.md"
        )


def test_subprocess_record_import_groups(tmp_path):
    db = tmp_path / "s.db"
    p = run_cli("record", "-", db=db, input=jsonl(rec(), rec(ok=False, accepted=False)))
    assert p.returncode == 0, p.stderr
    p = run_cli("groups", db=db)
    assert p.returncode == 0 and "1 groups: 1 ready" in p.stdout.decode()
    p = run_cli("record", "missing.jsonl", db=db)
    assert p.returncode == 1 and b"missing.jsonl" in p.stderr


@pytest.mark.skipif(not TAU_BENCH.exists(), reason="shared tau-bench data not present")
def test_subprocess_import_tau_bench(tmp_path):
    db = tmp_path / "tau.db"
    p = run_cli("import", str(TAU_BENCH), "--format", "openai", db=db)
    assert p.returncode == 0, p.stderr
    assert b"imported 200 trajectories in 50 groups" in p.stdout
    out = json.loads(run_cli("groups", "--json", db=db).stdout)
    assert sum(1 for g in out if g["status"] == "degenerate") == 13
    # the file is plain SQLite: the views answer without agentmem
    import sqlite3

    con = sqlite3.connect(db)
    n, steps = con.execute("SELECT count(*), sum(step_count) FROM trajectory_summary").fetchone()
    assert n == 200 and steps > 1000


def test_concurrent_recording_processes(tmp_path):
    db = tmp_path / "c.db"
    run_cli("stats", db=db)
    script = (
        "import sys; from agentmem import Memory, Step\n"
        "m = Memory.open(sys.argv[1])\n"
        "for i in range(40):\n"
        "    m.record(f'task {sys.argv[2]}', [Step('ls', {'i': i}, 'ok', True)], accepted=True)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(db), str(n)], stderr=subprocess.PIPE)
        for n in range(6)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    out = json.loads(run_cli("stats", "--json", db=db).stdout)
    assert out["trajectories"] == 240 and out["groups"] == 6
