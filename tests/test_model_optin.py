"""The model is opt-in and never makes a lesson worse (issue 31).

Learning phrases lessons from the data unless a model was chosen; a model's text
replaces a lesson only when it keeps every fact of what it phrases. The library in
``../shared/data/repro/`` is one on which the packaged model rewrote "If Edit fails
with 'File has not been read yet', Read the file first, then retry." into "/modify: if
Fail with 'File has not been read yet', retry it with limit set." (journaled as an ADD
turned MODIFY), the library's one global lesson.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import attrs
import pytest

from agentmem import Memory
from agentmem.learning import LearnOptions
from agentmem.learning.validate import lost_facts

from .conftest import SHARED, FakeModel, run_cli

REPRO = SHARED / "data" / "repro" / "model-corrupts-lesson.db"
TRUE_LESSON = "If Edit fails with 'File has not been read yet', Read the file first, then retry."
CORRUPT = "/modify: if Fail with 'File has not been read yet', retry it with limit set."

needs_repro = pytest.mark.skipif(not REPRO.exists(), reason=f"{REPRO} is not there")


def _repro(tmp_path: Path) -> Path:
    db = tmp_path / "repro.db"
    shutil.copyfile(REPRO, db)
    return db


def _texts(db: Path) -> list[str]:
    out = run_cli("experiences", "--json", db=db)
    assert out.returncode == 0, out.stderr.decode()
    return [e["text"] for e in json.loads(out.stdout)]


# ------------------------------------------------------------------- lost_facts, pure


def test_lost_facts_names_what_the_corrupted_text_drops() -> None:
    assert lost_facts(TRUE_LESSON, CORRUPT, tools={"Edit", "Read"}) == ["Edit", "Read"]


def test_lost_facts_accepts_a_rewording_that_keeps_every_fact() -> None:
    better = "When Edit says 'File has not been read yet', Read the file before editing again."
    assert lost_facts(TRUE_LESSON, better, tools={"Edit", "Read"}) == []


def test_lost_facts_counts_a_changed_quote_and_a_lost_parameter() -> None:
    src = "If get_stock fails with 'unknown symbol', pass symbol_id instead of symbol."
    assert lost_facts(src, "If get_stock fails, pass symbol_id.", tools={"get_stock"}) == [
        "unknown symbol"
    ]
    assert lost_facts(src, "If get_stock fails with 'unknown symbol', retry.", ()) == ["symbol_id"]


def test_an_apostrophe_opens_no_quote() -> None:
    assert lost_facts("Don't run it; the agent's run failed.", "Do not run it.", ()) == []


# ------------------------------------------------------------------- the default


def test_learning_uses_no_model_unless_one_is_chosen(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("AGENTMEM_MODEL", raising=False)
    import agentmem.models as models

    def no_model(*_a, **_k):
        raise AssertionError("no model was chosen, none may be loaded")

    monkeypatch.setattr(models, "get_model", no_model)
    with Memory.open(tmp_path / "m.db") as mem:
        assert not mem.model_chosen
        report = mem.learn()
        assert report.llm_calls == 0
    monkeypatch.setenv("AGENTMEM_MODEL", "http://127.0.0.1:9/v1")
    with Memory.open(tmp_path / "m.db") as mem:
        assert mem.model_chosen


@needs_repro
def test_the_cli_default_learns_from_the_data_and_keeps_the_true_lesson(tmp_path: Path) -> None:
    db = _repro(tmp_path)
    assert TRUE_LESSON in _texts(db)
    p = run_cli("learn", "--relearn", "--json", db=db, env={"AGENTMEM_MODEL": ""})
    assert p.returncode == 0, p.stderr.decode()
    assert json.loads(p.stdout)["llm_calls"] == 0
    assert TRUE_LESSON in _texts(db)
    assert run_cli("check", db=db).returncode == 0


@needs_repro
def test_a_model_that_drops_facts_changes_no_lesson(tmp_path: Path) -> None:
    """A fake model answering every Stage 2 prompt with the corrupting operation, as an
    ADD and as a MODIFY of every experience it was shown: each is rejected, journaled
    with the facts it dropped, and the true lesson stays."""
    db = _repro(tmp_path)

    def respond(prompt: str) -> str:
        if not prompt.rstrip().endswith("Operations:"):
            return "The run edited a file."
        ids = sorted({int(x) for x in re.findall(r"\[(\d+)\]", prompt)})
        return "\n".join([f"ADD | {CORRUPT}", *(f"MODIFY | {i} | {CORRUPT}" for i in ids)])

    with Memory.open(db, model=FakeModel(respond)) as mem:
        opts = attrs.evolve(LearnOptions.of_library(mem.db), relearn=True)
        report = mem.learn(options=opts)
        assert report.llm_calls > 0
        texts = [e.text for e in mem.experiences()]
        assert TRUE_LESSON in texts
        assert not any("if Fail with" in t for t in texts), texts
        reasons = [r["reason"] or "" for r in mem.journal(report.session_id)]
    assert any("drops facts" in r for r in reasons), reasons


@pytest.mark.model
@pytest.mark.slow
@needs_repro
@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None, reason="agentmem[model] is not installed"
)
def test_the_packaged_model_keeps_the_true_lesson(tmp_path: Path) -> None:
    """The reproduction with the real packaged model (about 3 minutes on 2 cores)."""
    db = _repro(tmp_path)
    p = run_cli("learn", "--relearn", "--model", "gemma3-270m", "--json", db=db)
    assert p.returncode == 0, p.stderr.decode()
    assert json.loads(p.stdout)["llm_calls"] > 0
    texts = _texts(db)
    assert TRUE_LESSON in texts
    assert not any("if Fail with" in t for t in texts), texts
