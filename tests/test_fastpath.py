"""The prompt-hook fast path of `agentmem context` answers exactly what the full API answers."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentmem import Memory
from agentmem.embeddings import get_embedder
from agentmem.fastpath import _embed_query

from .conftest import run_cli

LESSONS = [
    ("Before calling cat, call cd into the file's folder first.", "fs"),
    ("When cp fails with 'No such file', cd into the source folder and retry cp.", "fs"),
    ("Call git_status before git_commit to see what will be committed.", "git"),
    ("If kubectl apply is refused, check the current context with kubectl config.", "k8s"),
    ("Send send_message with the receiver's user id, never the person's name.", ""),
]


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    path = tmp_path_factory.mktemp("fast") / "lib.db"
    with Memory.open(path) as mem:
        for text, domain in LESSONS:
            mem.add(text, domain=domain)
    return path


@pytest.mark.parametrize("text", ["copy the report into the archive", "commit my changes", "x"])
def test_query_vector_matches_the_embedder(text):
    emb = get_embedder("wordllama")
    fast, full = _embed_query(emb, text), emb.embed_batch([text])[0]
    assert max(abs(a - b) for a, b in zip(fast, full)) < 1e-6


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--tool", "cp"),
        ("--tool", "git_commit", "-k", "2"),
        ("--domain", "k8s", "--domain", "git"),
    ],
)
def test_fast_path_prints_what_memory_context_returns(library, args):
    query = "copy the report into the archive folder and commit it"
    p = run_cli("context", query, *args, db=library)
    assert p.returncode == 0, p.stderr.decode()
    tools = [args[i + 1] for i, a in enumerate(args) if a == "--tool"]
    domains = [args[i + 1] for i, a in enumerate(args) if a == "--domain"]
    k = int(args[args.index("-k") + 1]) if "-k" in args else 5
    with Memory.open(library) as mem:
        expected = mem.context(query, tools=tools or None, domains=domains or None, k=k)
    assert p.stdout.decode().rstrip("\n") == expected
    assert expected.startswith("Lessons from earlier runs")


def test_fast_path_loads_no_numpy_and_no_click(library):
    code = (
        "import sys\n"
        "sys.argv = ['agentmem', 'context', 'copy a file', '--db', sys.argv[1]]\n"
        "from agentmem._entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('numpy', 'click', 'sqlite_utils', 'llama_cpp') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(library)], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_fast_path_defers_to_the_full_cli(tmp_path):
    missing = tmp_path / "new.db"
    p = run_cli("context", "anything", db=missing)  # no file yet: the full CLI creates it
    assert p.returncode == 0 and p.stdout == b""
    p = run_cli("context", "-h", db=missing)
    assert p.returncode == 0 and b"Examples" in p.stdout
