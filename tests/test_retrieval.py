"""Retrieval: hybrid ranking, the relevance floor, the keyword index kept with the library,
and the prompt-hook shortcut that answers exactly what ``Memory.context`` answers."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys

import pytest

from agentmem import Memory, Step
from agentmem.context import context_text, fast_context
from agentmem.embeddings import get_embedder, wordllama
from agentmem.errors import EmbeddingMismatchError
from agentmem.retrieval import format_context
from agentmem.retrieval.ranking import Evidence, Ranking, rank
from agentmem.storage import keyword_index, tool_usage
from agentmem.terms import TERMS_VERSION, lesson_terms, query_words, split_identifier

from .conftest import FakeEmbedder, fs_group, run_cli

LESSONS = [
    ("Before calling cat, call cd into the file's folder first.", "fs"),
    ("When cp fails with 'No such file', cd into the source folder and retry cp.", "fs"),
    ("Call git_status before git_commit to see what will be committed.", "git"),
    ("If kubectl apply is refused, check the current context with kubectl config.", "k8s"),
    ("Before calling send_message, look up receiver_id with get_user_id.", ""),
    (
        "Before calling startEngine, call pressBrakePedal; startEngine fails with 'Brake "
        "pedal needs to be pressed' otherwise.",
        "",
    ),
]


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """Hand-added lessons (no trajectories), WordLlama: what the prompt hook reads."""
    path = tmp_path_factory.mktemp("retrieval") / "lib.db"
    with Memory.open(path) as mem:
        for text, domain in LESSONS:
            mem.add(text, domain=domain)
    return path


def _texts(block: str) -> list[str]:
    """The lessons' texts in a block, without their id marks (``- [L12] text``)."""
    lines = [line[2:] for line in block.splitlines() if line.startswith("- ")]
    assert all(re.match(r"\[L\d+\] ", line) for line in lines), lines
    return [line.partition("] ")[2] for line in lines]


# -- the numpy-free WordLlama query vector -------------------------------------------------


def test_wordllama_tokenizer_matches_tokenizers():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(wordllama.files()[1]))
    rng = random.Random(7)
    alphabet = "abcXYZ  _-.,'\"\n\t\u2581éü中文😀<s></s><unk>0123"
    texts = [t for t, _ in LESSONS] + ["", " ", "<s>", "a<s>b </s>", "  two  spaces ", "x\u2581"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(60))) for _ in range(500)]
    for text in texts:
        assert wordllama.encode(text) == tok.encode(text, add_special_tokens=False).ids, text


@pytest.mark.parametrize(
    "text", ["copy the report into the archive", "commit my changes", "x", "  ", "😀 ünïcode"]
)
@pytest.mark.parametrize("dims", [256, 64])
def test_query_vector_matches_the_embedder(text, dims):
    full = get_embedder(f"wordllama-{dims}").embed_batch([text])[0]
    fast = wordllama.query_vector(text, dims)
    assert len(fast) == dims
    assert max(abs(a - b) for a, b in zip(fast, full, strict=True)) < 1e-6


def test_tokenizer_cache_is_written_once_and_a_damaged_one_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(wordllama, "_BPE", {})
    want = wordllama.encode("Move the report into the archive folder")
    cached = list((tmp_path / "agentmem").glob("wordllama-bpe-*.bin"))
    assert len(cached) == 1
    cached[0].write_bytes(b"not a cache")
    monkeypatch.setattr(wordllama, "_BPE", {})
    assert wordllama.encode("Move the report into the archive folder") == want
    assert cached[0].read_bytes() != b"not a cache"  # rebuilt


# -- the prompt-hook shortcut ---------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--tool", "cp"),
        ("--tool", "git_commit", "-k", "2"),
        ("--domain", "k8s", "--domain", "git"),
        ("--min-score", "0"),
        ("--min-score=0.2", "-t", "cat"),
    ],
)
def test_context_cli_prints_what_memory_context_returns(library, args):
    query = "copy the report into the archive folder and commit it with git_commit"
    p = run_cli("context", query, *args, db=library)
    assert p.returncode == 0, p.stderr.decode()
    tools = [args[i + 1] for i, a in enumerate(args) if a in ("--tool", "-t")]
    domains = [args[i + 1] for i, a in enumerate(args) if a == "--domain"]
    k = int(args[args.index("-k") + 1]) if "-k" in args else 5
    floor = [a.partition("=")[2] or args[i + 1] for i, a in enumerate(args) if "--min-score" in a]
    with Memory.open(library) as mem:
        expected = mem.context(
            query,
            tools=tools or None,
            domains=domains or None,
            k=k,
            min_score=float(floor[0]) if floor else None,
        )
    assert p.stdout.decode().rstrip("\n") == expected
    assert expected.startswith("Lessons from earlier runs")


def test_context_text_is_memory_context(library):
    prompt = "my car will not start: Brake pedal needs to be pressed"
    with Memory.open(library) as mem:
        expected = mem.context(prompt)
    assert context_text(library, prompt) == fast_context(library, prompt) == expected
    assert _texts(expected) == [LESSONS[5][0]]  # it quotes the error and names no other


def test_context_text_keeps_its_old_home():
    import agentmem.context
    import agentmem.retrieval

    assert agentmem.retrieval.context_text is agentmem.context.context_text
    assert agentmem.retrieval.fast_context is agentmem.context.fast_context


def test_context_cli_loads_no_heavy_module(library):
    code = (
        "import sys\n"
        "sys.argv = ['agentmem', 'context', 'copy a file with cp', '--db', sys.argv[1]]\n"
        "from agentmem._entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('numpy', 'click', 'sqlite_utils', 'llama_cpp', 'tokenizers', 'attrs',\n"
        "    'hashlib', 'tree_sitter')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(library)], capture_output=True, text=True, check=True
    ).stdout
    lines = out.strip().splitlines()
    assert lines[-1] == "[]"
    assert "cp fails" in out  # and it answered


def test_context_cli_defers_to_the_full_cli(tmp_path, library):
    missing = tmp_path / "new.db"
    p = run_cli("context", "anything", db=missing)  # no file yet: nothing, and why
    assert p.returncode == 0 and p.stdout == b""
    assert b"no library at" in p.stderr and not missing.exists()
    p = run_cli("context", "-h", db=missing)
    assert p.returncode == 0 and b"Examples" in p.stdout and b"--min-score" in p.stdout
    for bad in (["--min-score", "2"], ["-k", "0"], ["--frobnicate"]):
        p = run_cli("context", "copy a file", *bad, db=library)
        assert p.returncode == 2, bad  # click's usage error, not a traceback
        assert b"Traceback" not in p.stderr


def test_context_text_opens_a_file_the_shortcut_cannot_read(tmp_path):
    path = tmp_path / "lib.db"
    assert fast_context(path, "anything") is None  # no file
    assert context_text(path, "anything") == ""  # Memory creates it
    with Memory.open(path, embedder="hash") as mem:
        mem.add("Before calling cat, call cd into the folder first.", domain="fs")
    # another embedder than WordLlama: the shortcut embeds with it
    block = context_text(path, "read a file with cat")
    assert fast_context(path, "read a file with cat") == block
    assert _texts(block) == ["Before calling cat, call cd into the folder first."]
    # an index built by another model than the library's embedder: Memory explains
    with Memory.open(path, embedder="hash") as mem:
        mem.set_setting("embedder", "hash-32")
    assert fast_context(path, "read a file with cat") is None
    with pytest.raises(EmbeddingMismatchError):
        context_text(path, "read a file with cat")


def test_old_keyword_index_is_rebuilt_when_the_library_opens(tmp_path):
    path = tmp_path / "lib.db"
    with Memory.open(path, embedder=FakeEmbedder()) as mem:
        eid = mem.add("Before calling cat, call cd first.", domain="fs").id
        mem.set_setting(keyword_index.VERSION_KEY, TERMS_VERSION - 1)
        mem.db.execute(f"DELETE FROM {keyword_index.TABLE}")
    assert fast_context(path, "cat a file") is None  # stale: only Memory may rebuild it
    with Memory.open(path, embedder=FakeEmbedder()) as mem:
        assert keyword_index.version(mem.db) == TERMS_VERSION
        assert keyword_index.check(mem.db) == []
        assert [h.experience.id for h in mem.retrieve("cat a file")] == [eid]


# -- ranking (pure) --------------------------------------------------------------------------


def test_lessons_naming_a_given_tool_come_first_and_others_need_the_floor():
    r = Ranking(rrf_k=1, w_vector=1, w_bm25=1, w_usage=1, min_score=0.5)
    ev = [
        Evidence(1, vector_rank=1, cosine=0.9, bm25_rank=1, bm25=5.0, usage_rank=1),
        Evidence(2, vector_rank=9, cosine=0.1, named=("mv",)),
        Evidence(3, vector_rank=2, bm25_rank=5),  # weak: below the floor
        Evidence(4, vector_rank=1, bm25_rank=1, usage_rank=1, other_tools=True),
    ]
    out = rank(ev, 5, r)
    assert [x.evidence.id for x in out] == [2, 1]
    assert out[0].reason == "names mv"
    assert out[1].score == pytest.approx(1.0) and out[1].reason.startswith("fused score 1.000")
    assert [x.evidence.id for x in rank(ev, 5, r, min_score=0.0)] == [2, 1, 3, 4]
    assert [x.evidence.id for x in rank(ev, 1, r)] == [2]


def test_fused_score_counts_only_the_searches_that_can_find_a_lesson():
    r = Ranking(rrf_k=1, w_vector=1, w_bm25=1, w_usage=2, min_score=0.9)
    # a lesson naming no recorded tool: the tool usage cannot speak for it
    alone = Evidence(1, vector_rank=1, bm25_rank=1, usage_applies=False)
    assert r.fused(alone) == pytest.approx(1.0)
    assert r.fused(Evidence(1, vector_rank=1, bm25_rank=1)) == pytest.approx(0.5)
    # no vector index: BM25 alone can reach the top
    assert r.fused(Evidence(1, bm25_rank=1, vector_applies=False, usage_applies=False)) == 1.0
    # the quoted error of the prompt is strong evidence on its own
    assert rank([Evidence(7, quotes_error=True)], 5, r)[0].reason.startswith("quotes")


def test_lesson_terms_and_query_words():
    t = lesson_terms(
        "Before calling send_message, look up receiver_id with get_user_id; never "
        "pass recipient=Bob; if it fails ('User not found. Try again...'), retry.",
        {"send_message", "get_user_id"},
    )
    assert t.tools == "send_message get_user_id"
    assert t.params == "receiver_id recipient"
    assert t.errors == "User not found. Try again"
    assert "send message" in t.text and "receiver id" in t.text
    hand = lesson_terms("Use fetchData(user_id) before, then call mergeRows, not dropRows.", set())
    assert hand.tools.split() == ["fetchdata", "mergerows", "droprows"]
    assert hand.params == "user_id"
    assert split_identifier("HTTPServerError") == ["http", "server", "error"]
    assert split_identifier("report_v2.txt") == ["report", "v", "2", "txt"]
    words = query_words("Please send the message to Bob with send_message; it failed twice.")
    assert words[:4] == ["send", "message", "bob", "send_message"]
    assert "the" not in words and "with" not in words


# -- behaviour through Memory (fake embedder) ------------------------------------------------


def _add(mem: Memory) -> dict[str, int]:
    return {
        "cat": mem.add("Before calling cat, call cd into the folder first.", domain="fs").id,
        "send": mem.add("Before calling send_message, look up receiver_id with get_user_id.").id,
        "car": mem.add(
            "Before calling startEngine, call pressBrakePedal first; startEngine fails with "
            "'Brake pedal needs to be pressed' otherwise."
        ).id,
    }


def test_tools_given_put_their_lessons_first_and_drop_lessons_on_other_tools(mem):
    ids = _add(mem)
    task = "Move the report into the archive folder and tell my manager"
    hits = mem.retrieve(task, tools=["mv", "send_message"])
    assert [h.experience.id for h in hits] == [ids["send"]]
    assert hits[0].why.named == ("send_message",) and hits[0].reason == "names send_message"
    everything = mem.retrieve(task, tools=["mv", "send_message"], min_score=0.0)
    assert everything[0].experience.id == ids["send"] and len(everything) == 3


def test_prompt_naming_a_tool_or_quoting_an_error_is_strong_evidence(mem):
    ids = _add(mem)
    assert [h.experience.id for h in mem.retrieve("can you cat notes.txt")] == [ids["cat"]]
    hits = mem.retrieve("the car says: Brake pedal needs to be pressed. help")
    assert [h.experience.id for h in hits] == [ids["car"]] and hits[0].why.quotes_error


def test_unrelated_prompt_gets_nothing_rather_than_unrelated_lessons(mem):
    _add(mem)
    assert mem.retrieve("what is the capital of France") == []
    assert mem.context("what is the capital of France") == ""
    assert len(mem.retrieve("what is the capital of France", min_score=0.0)) == 3


def test_retrieve_explain_in_the_cli(tmp_path):
    db = tmp_path / "lib.db"
    with Memory.open(db, embedder="hash") as mem:
        _add(mem)
    p = run_cli("retrieve", "send a message to Bob", "--tool", "send_message", "--explain", db=db)
    assert p.returncode == 0, p.stderr.decode()
    head, _, row = p.stdout.decode().splitlines()[:3]
    assert head.split()[:6] == ["id", "bm25", "rank", "vector", "rank", "usage"]
    assert "names send_message" in row
    p = run_cli("retrieve", "send a message", "-t", "send_message", "--explain", "--json", db=db)
    (hit,) = json.loads(p.stdout)
    assert {"bm25_rank", "vector_rank", "cosine", "usage_rank", "names", "passed"} <= set(hit)
    assert hit["names"] == ["send_message"] and hit["passed"] == "names send_message"
    p = run_cli("retrieve", "what is the capital of France", "--explain", db=db)
    assert p.returncode == 0 and b"no lesson passed the relevance floor" in p.stderr


def test_tool_usage_ranks_the_tools_past_tasks_like_the_prompt_used(mem):
    fs_group(mem)
    mem.record("book a flight to Paris", [Step("book_flight", {"to": "CDG"}, "ok", True)])
    mem.learn(use_model=False)
    ranked = tool_usage.rank_tools(mem.db, keyword_index.match_any(["docs", "says"]), 5)
    assert {t for t, _ in ranked} == {"cd", "cat"}
    assert [t for t, _ in tool_usage.rank_tools(mem.db, '"flight"', 5)] == ["book_flight"]
    assert tool_usage.refresh(mem.db) == 0  # nothing new since the session


# -- the keyword index stays with the experiences ----------------------------------------------


def _keyword_ids(mem: Memory) -> list[int]:
    return [int(r[0]) for r in mem.db.execute("SELECT rowid FROM experience_fts ORDER BY 1")]


def _agrees(mem: Memory) -> None:
    assert keyword_index.check(mem.db) == []
    assert _keyword_ids(mem) == [e.id for e in mem.experiences()]


def test_keyword_index_follows_learn_undo_edit_remove_and_reindex(mem):
    fs_group(mem)
    report = mem.learn(use_model=False)
    assert report.applied
    _agrees(mem)
    learned = mem.experiences()
    row = mem.db.execute(
        "SELECT tools, params FROM experience_fts WHERE rowid = ?", [learned[0].id]
    ).fetchone()
    assert "cat" in row[0].split()  # the learned lesson's tool, from the recorded steps
    mem.undo(report.session_id)
    _agrees(mem)
    assert mem.experiences() == []
    kept = mem.add("Use ls -la to see hidden files in a folder.", domain="fs")
    _agrees(mem)
    mem.edit(kept.id, "Use ls -a to list hidden files, then cat them.", domain="shell")
    _agrees(mem)
    assert mem.db.execute(
        "SELECT tools, domain FROM experience_fts WHERE rowid = ?", [kept.id]
    ).fetchone() == ("ls cat", "shell")
    mem.remove(kept.id)
    _agrees(mem)
    again = mem.add("Before calling cat, call cd first.", domain="fs")
    mem.db.execute(f"DELETE FROM {keyword_index.TABLE}")  # lost behind agentmem's back
    assert keyword_index.check(mem.db)
    mem.reindex()
    _agrees(mem)
    assert _keyword_ids(mem) == [again.id]


def test_a_failed_apply_leaves_the_keyword_index_as_it_was(mem, monkeypatch):
    fs_group(mem)
    before = _keyword_ids(mem)

    def boom(*a, **kw):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(keyword_index, "put_many", boom)
    with pytest.raises(RuntimeError):
        mem.learn(use_model=False)
    assert _keyword_ids(mem) == before and mem.experiences() == []


# -- the demo ---------------------------------------------------------------------------------


def test_demo_context_names_send_message_and_no_car_lesson(tmp_path):
    db = tmp_path / "demo.db"
    p = subprocess.run(
        [sys.executable, "-m", "agentmem", "demo", "--no-model", "--db", str(db)],
        capture_output=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr.decode()
    out = p.stdout.decode()
    block = out.split("What an agent would put in its prompt", 1)[1]
    lessons = _texts(block)
    assert any("send_message" in t for t in lessons), block
    car = ("startEngine", "pressBrakePedal", "activateParkingBrake", "lockDoors", "fillFuelTank")
    assert not any(name in t for t in lessons for name in car), block
    assert all("send_message" in t or " mv" in t for t in lessons), block


def test_format_context():
    assert format_context([]) == ""
    assert format_context(["a", "b"]).splitlines()[1:] == ["- a", "- b"]


def test_the_shortcut_serves_a_project_its_lessons_and_hides_others(tmp_path):
    db = tmp_path / "lib.db"
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    with Memory.open(db) as mem:
        mine = mem.add("Before calling cat, call cd into docs first.", domain="fs").id
        other = mem.add("Before calling cat, call cd into src first.", domain="fs").id
        sid = mem.db.execute("SELECT max(id) FROM sessions").fetchone()[0]
        mem.db.execute("BEGIN IMMEDIATE")
        for eid, where in ((mine, here), (other, there)):
            mem.db.execute(
                "INSERT INTO experience_scopes (experience_id, session_id, project, support, "
                "reason) VALUES (?, ?, ?, '[]', 'test')",
                [eid, sid, str(where)],
            )
        mem.db.execute("COMMIT")
        want = mem.context("show a file with cat", project=here, min_score=0.0)
    assert _texts(want) == ["Before calling cat, call cd into docs first."]
    p = run_cli(
        "context", "show a file with cat", "--project", str(here), "--min-score", "0", db=db
    )
    assert p.returncode == 0 and p.stdout.decode().rstrip("\n") == want
    assert context_text(db, "show a file with cat", project=here, min_score=0.0) == want
    assert context_text(db, "show a file with cat", min_score=0.0) == ""  # scoped: not global
