"""agentmem.cli.practice_eval: the ``eval`` subcommand, registered with argparse and run as
a real subprocess against BFCL's simulators and a chat server over HTTP."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem import Memory
from agentmem.cli import practice_eval
from agentmem.practice import bfcl

from .test_practice_bfcl import _Server

needs_bfcl = pytest.mark.skipif(not bfcl.available(), reason="bfcl_eval is not installed")


def _eval(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentmem.cli.practice_eval", "eval", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_register_adds_the_eval_subcommand() -> None:
    parser = argparse.ArgumentParser(prog="agentmem practice")
    sub = parser.add_subparsers(dest="command", required=True)
    p = practice_eval.register(sub)
    args = parser.parse_args(
        ["eval", "--bfcl", "multi_turn_base_0", "--model-url", "http://x/v1", "--no-retire"]
    )
    assert args.func is practice_eval.run and args.bfcl == "multi_turn_base_0"
    assert args.no_retire and args.seeds == 3 and args.k == 5 and not args.json
    text = p.format_help()
    assert "agentmem practice eval --bfcl" in text and "--checkpoint" in text
    more = parser.parse_args(["eval", "t.toml", "--ablate", "--max-rollouts", "40", "--json"])
    assert more.tasks_file == "t.toml" and more.ablate and more.max_rollouts == 40 and more.json


@needs_bfcl
def test_eval_runs_as_a_subprocess_and_credits_the_lesson(tmp_path: Path) -> None:
    db = tmp_path / "lib.db"
    with Memory.open(db, embedder="hash") as mem:
        (lesson,) = mem.add_many(["Call cd to enter the directory before file commands like mv"])
    server = _Server("cd-if-told")
    try:
        done = _eval(
            "--bfcl", "multi_turn_base_0", "--model-url", server.url, "--model", "m",
            "--seeds", "2", "--json", db=db,
        )  # fmt: skip
    finally:
        server.httpd.shutdown()
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["pairs"] == 2 and report["overall"]["table"]["wins"] == 2
    assert report["overall"]["verdict"] == "not enough data"  # 2 pairs of 1 task
    assert report["lessons"][0]["id"] == lesson and len(report["lessons"][0]["served_in"]) == 2
    assert report["cost"]["rollouts"] == 4 and report["cost"]["tokens"] > 0
    assert "practice eval: pair 2/2" in done.stderr
    # the model saw the lesson in one arm of each pair only
    systems = [r["messages"][0] for r in server.requests if r["messages"][0]["role"] == "system"]
    assert systems and all("cd to enter the directory" in m["content"] for m in systems)


def test_bad_input_is_a_plain_message_and_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "lib.db"
    none = _eval(db=db)
    assert none.returncode == 1 and "give a practice task file" in none.stderr
    assert not db.exists()
    if bfcl.available():
        no_server = _eval("--bfcl", "multi_turn_base_0", db=db)
        assert no_server.returncode == 1 and "--model-url" in no_server.stderr
        unknown = _eval("--bfcl", "multi_turn_base_99999", "--model-url", "http://x/v1", db=db)
        assert unknown.returncode == 1 and "no task 'multi_turn_base_99999'" in unknown.stderr
    seeds = _eval("--bfcl", "multi_turn_base_0", "--seeds", "0", db=db)
    assert seeds.returncode == 1 and "at least 1" in seeds.stderr


def test_the_help_shows_evals_own_options_and_a_plain_percent(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTMEM_DB": str(tmp_path / "lib.db")}
    p = subprocess.run(
        [sys.executable, "-m", "agentmem", "practice", "eval", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    for option in ("--bfcl IDS", "--model-url", "--seeds SEEDS", "--checkpoint", "--ablate"):
        assert option in p.stdout, option
    assert "AGENTMEM_SERVE=off" in p.stdout and not (tmp_path / "lib.db").exists()
    direct = _eval("--help", db=tmp_path / "lib.db")
    assert "95% interval" in direct.stdout and "%%" not in direct.stdout
    doc = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    section = doc.split("## agentmem practice eval", 1)[1].split("\n## ", 1)[0]
    assert "--bfcl IDS" in section and "--checkpoint" in section
