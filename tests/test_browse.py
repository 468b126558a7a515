"""agentmem browse: schema.md metadata, canned queries, read-only Datasette, a real browser.

The canned queries run through Datasette's own test client on a library learned
from the bundled sample (no model); one test runs ``agentmem browse`` as a
subprocess and, where Debian's ``chromium`` is installed, a headless Chromium
against it.
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import io
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentmem import Memory
from agentmem.cli import cli
from agentmem.cli.demo import sample_bytes
from agentmem.db import sqlite3
from agentmem.errors import AgentMemError
from agentmem.ingest import parse_jsonl
from agentmem.schemadoc import load, parse, undocumented

from .conftest import ROOT, FakeModel

datasette = pytest.importorskip("datasette", reason="agentmem[browse] (Datasette) not installed")

from agentmem.browse import make_datasette  # noqa: E402
from agentmem.browse.app import is_loopback  # noqa: E402
from agentmem.browse.metadata import hidden_tables  # noqa: E402
from agentmem.browse.queries import CANNED_QUERIES  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _repeat_a_mistake(mem: Memory) -> None:
    """A learned lesson served to a run that made its mistake anyway (its verdict written
    as a learning session would, so that the sample's sessions stay as they are)."""
    from agentmem import served
    from agentmem.db import write
    from agentmem.storage import served as store

    e = next(x for x in mem.experiences() if x.rule)
    (task,) = mem.db.execute("SELECT task FROM trajectories ORDER BY id DESC LIMIT 1").fetchone()
    served.record(mem.path, route="api", phash=served.prompt_hash(task), served=[e.id or 0])
    sid = max(s["id"] for s in mem.sessions() if s["kind"] == "learn")
    with write(mem.db):
        store.ingest(mem.db, served.log_path(mem.path))
        store.match(mem.db)
        (row,) = store.to_judge(mem.db)
        store.judge(mem.db, sid, [(row["id"], True, False, True, "rule")])


def _build(path: Path) -> None:
    """The bundled sample, learned without a model, plus a hand-added lesson, an edit, an undo."""
    # the dependency-free hashed embedder, so that the CLI (another process) can add lessons
    with Memory.open(path, embedder="hash", model=FakeModel()) as mem:
        mem.record_many(parse_jsonl(io.BytesIO(sample_bytes())).trajectories)
        mem.learn(use_model=False)
        mem.add("Run git status before git commit to see what is staged.", domain="git")
        first = mem.experiences()[0]
        mem.edit(first.id, first.text + " Check the symbol first.")
        mem.undo(max(s["id"] for s in mem.sessions()))  # the edit, undone
        _repeat_a_mistake(mem)
    conn = sqlite3.connect(path)  # one self-contained file, to copy
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("browse") / "lib.db"
    _build(path)
    return path


@pytest.fixture
def lib(library: Path, tmp_path: Path) -> Path:
    """A private copy of the module's library."""
    path = tmp_path / "lib.db"
    shutil.copy(library, path)
    return path


class Client:
    """Datasette's test client, synchronously."""

    def __init__(self, path: Path):
        self.ds = make_datasette(path)
        self.loop = asyncio.new_event_loop()
        self.loop.run_until_complete(self.ds.invoke_startup())

    def get(self, url: str) -> Any:
        return self.loop.run_until_complete(self.ds.client.get(url))

    def rows(self, url: str) -> list[dict[str, Any]]:
        path, _, query = url.partition("?")
        r = self.get(f"{path}.json?{query}&_shape=array&_size=max")
        assert r.status_code == 200, r.text
        return list(r.json())

    def close(self) -> None:
        self.ds.get_database("agentmem").close()
        self.loop.close()


@pytest.fixture
def client(lib: Path) -> Any:
    c = Client(lib)
    yield c
    c.close()


def _db(path: Path) -> Any:
    return Memory.open(path, model=FakeModel())


# --- descriptions from docs/schema.md -------------------------------------------------------


def test_packaged_descriptions_match_docs_schema_md():
    """agentmem/data/schema.json is docs/schema.md's tables: run tools/schema_json.py if not."""
    doc = parse((ROOT / "docs" / "schema.md").read_text("utf-8"))
    assert doc.as_dict() == load().as_dict(), "run: python tools/schema_json.py"


def test_every_table_view_and_column_is_described(library):
    with _db(library) as mem:
        rows = mem.db.execute(
            "SELECT t.name, t.type, m.sql FROM pragma_table_list t "
            "LEFT JOIN sqlite_schema m ON m.name = t.name WHERE t.schema = 'main'"
        ).fetchall()
        doc = load()
        hidden = hidden_tables(rows, doc.tables)
        schema = [
            (name, kind, [c[1] for c in mem.db.execute(f"PRAGMA table_info([{name}])")])
            for name, kind, _ in rows
            if name not in hidden
        ]
    assert {"experience_vectors", "experience_sources", "trajectory_summary"} <= {
        s[0] for s in schema
    }
    assert undocumented(doc, schema) == [], "describe these in docs/schema.md"


def test_parse_reads_columns_views_and_computed_columns():
    doc = parse(
        "# T\n\n| view | reads | what it shows |\n|---|---|---|\n"
        "| `v` | `t` | rows of t with `x \\| y` |\n\n"
        "| view | column | meaning |\n|---|---|---|\n| `v` | `n`, `m` | computed |\n\n"
        "### `t`: a table\n| column | meaning |\n|---|---|\n"
        "| `id` | the id |\n| `a`, `b` | two `columns` |\n"
    )
    assert doc.title == "T"
    assert doc.tables["t"].columns == {"id": "the id", "a": "two columns", "b": "two columns"}
    assert doc.tables["v"].description == "rows of t with x | y"
    assert doc.column("v", "id") == "the id"  # from the table it reads
    assert doc.column("v", "m") == "computed"
    assert doc.column("v", "zz") is None
    with pytest.raises(ValueError, match="heading"):
        parse("| column | meaning |\n|---|---|\n| `a` | b |\n")


def test_hidden_tables_are_found_generically():
    rows = [
        ("experiences", "table", "CREATE TABLE experiences (id)"),
        ("experience_vectors", "virtual", "CREATE VIRTUAL TABLE experience_vectors USING vec0()"),
        ("experience_vectors_info", "shadow", None),
        ("experience_vectors_vector_chunks00", "table", "CREATE TABLE ..."),
        ("experience_vectors_items", "table", "CREATE TABLE ..."),
        ("task_vectors", "virtual", 'CREATE VIRTUAL TABLE "task_vectors" USING vec0(x)'),
        ("task_vectors_rowids", "table", "CREATE TABLE ..."),
        ("experiences_fts", "virtual", "CREATE VIRTUAL TABLE experiences_fts USING fts5(text)"),
        ("experiences_fts_data", "shadow", None),
        ("_sqlite_migrations", "table", None),
        ("sqlite_sequence", "table", None),
    ]
    hidden = hidden_tables(rows, documented={"experiences", "experience_vectors_items"})
    assert hidden == {
        "experience_vectors_info",
        "experience_vectors_vector_chunks00",
        "task_vectors_rowids",
        "experiences_fts",
        "experiences_fts_data",
        "_sqlite_migrations",
        "sqlite_sequence",
    }


# --- the Datasette instance ----------------------------------------------------------------


def test_metadata_describes_hides_and_facets(client):
    meta = client.ds.table_metadata("agentmem", "steps")
    assert meta["description"] == "the ordered tool calls of a trajectory"
    assert "tool name" in meta["columns"]["tool"]
    assert client.ds.table_metadata("agentmem", "_sqlite_migrations")["hidden"]
    assert client.ds.table_metadata("agentmem", "experience_vectors_chunks")["hidden"]
    listed = client.get("/agentmem.json").json()
    names = {t["name"]: t for t in listed["tables"]}
    assert names["experience_vectors_info"]["hidden"]
    assert not names["experience_vectors_items"]["hidden"]
    page = client.get("/agentmem/experience_sources").text
    # a view's own column, and one it reads from experiences
    assert "the operation&#39;s origin" in page or "that operation&#39;s origin" in page
    assert "at most 32 words" in page
    data = client.get("/agentmem/experience_sources.json").json()
    assert {"domain", "origin"} <= set(data["facet_results"])
    origins = {f["value"] for f in data["facet_results"]["origin"]["results"]}
    assert origins == {"data", "user"}


def test_every_page_of_the_library_opens(client):
    """sqlite-vec is loaded: the vec0 table's page works like every other."""
    listed = client.get("/agentmem.json").json()
    names = [t["name"] for t in listed["tables"] if not t["hidden"]] + [
        v["name"] for v in listed["views"]
    ]
    assert "experience_vectors" in names
    for name in names:
        r = client.get(f"/agentmem/{name}")
        assert r.status_code == 200, (name, r.text[:300])
    assert client.rows("/agentmem/experience_vectors?_col=domain")


def test_lessons_query_says_where_each_came_from(client, lib):
    rows = client.rows("/agentmem/lessons")
    with _db(lib) as mem:
        live = {e.id: e for e in mem.experiences()}
        journal = mem.journal()
    assert {r["id"] for r in rows} == set(live)
    assert [r["domain"] for r in rows] == sorted(r["domain"] for r in rows)
    by_id = {r["id"]: r for r in rows}
    for eid, e in live.items():
        assert by_id[eid]["text"] == e.text
        add = next(o for o in journal if o["kind"] == "ADD" and o["result_id"] == eid)
        assert by_id[eid]["session_id"] == add["session_id"]  # the undone edit is not its source
        assert by_id[eid]["origin"] == add["origin"]
        assert by_id[eid]["group_key"] == add["group_key"]
    hand = next(r for r in rows if r["domain"] == "git")
    assert hand["origin"] == "user" and hand["group_key"] is None
    html = client.get("/agentmem/lessons").text
    some = rows[0]["id"]
    assert f'href="/agentmem/lesson_journal?lesson={some}">journal</a>' in html
    assert f'href="/agentmem/lesson_runs?lesson={some}">runs</a>' in html


def test_session_journal_shows_before_and_after(client, lib):
    with _db(lib) as mem:
        sessions = mem.sessions()
        for s in sessions:
            ops = mem.journal(s["id"])
            rows = client.rows(f"/agentmem/session_journal?session={s['id']}")
            assert [r["id"] for r in rows] == [o["id"] for o in ops]
        edit = next(s for s in sessions if s["kind"] == "curate" and s["status"] == "undone")
        undo = next(s for s in sessions if s["kind"] == "undo")
    (edited,) = client.rows(f"/agentmem/session_journal?session={edit['id']}")
    (restored,) = client.rows(f"/agentmem/session_journal?session={undo['id']}")
    assert edited["kind"] == "MODIFY" and edited["after"].endswith("Check the symbol first.")
    assert edited["before"] == f"[{edited['lesson']}] " + restored["after"]
    assert restored["before"].endswith("Check the symbol first.")


def test_group_runs_advantages_agree_with_agentmem(client, lib):
    with _db(lib) as mem:
        groups = mem.groups()
    assert {g["group_key"] for g in client.rows("/agentmem/groups")} == {g.key for g in groups}
    for g in groups:
        rows = client.rows(f"/agentmem/group_runs?group={g.key}")
        assert [r["trajectory"] for r in rows] == [m.id for m in g.members]
        for r, m in zip(rows, g.members):
            assert r["reward"] == pytest.approx(m.reward, abs=1e-4)
            if m.advantage is None:
                assert r["advantage"] is None
            else:
                assert r["advantage"] == pytest.approx(m.advantage, abs=1e-3)
            assert r["learned_in"] == "1"


def test_failing_tools_and_their_typical_error(client, lib):
    with _db(lib) as mem:
        steps = mem.db.execute("SELECT tool, success, output FROM steps").fetchall()
    calls = Counter(t for t, _, _ in steps)
    errors: dict[str, Counter[str]] = defaultdict(Counter)
    for tool, ok, out in steps:
        if not ok:
            errors[tool][out[:200]] += 1
    rows = client.rows("/agentmem/failing_tools")
    assert {r["tool"] for r in rows} == set(errors)
    assert [r["failures"] for r in rows] == sorted((r["failures"] for r in rows), reverse=True)
    for r in rows:
        assert r["failures"] == sum(errors[r["tool"]].values()) and r["calls"] == calls[r["tool"]]
        assert r["typical_error_times"] == max(errors[r["tool"]].values())
        assert errors[r["tool"]][r["typical_error"]] == r["typical_error_times"]


def test_a_lessons_journal_and_source_runs(client, lib):
    with _db(lib) as mem:
        lessons = mem.experiences()
        journal = mem.journal()
        used = {
            (s, g): json.loads(t)
            for s, g, t in mem.db.execute(
                "SELECT session_id, group_key, trajectory_ids FROM session_groups"
            )
        }
    generalized = 0
    for e in lessons:
        ops = [
            o["id"] for o in journal if o["result_id"] == e.id or e.id in (o["target_ids"] or [])
        ]
        assert [r["id"] for r in client.rows(f"/agentmem/lesson_journal?lesson={e.id}")] == ops
        runs = client.rows(f"/agentmem/lesson_runs?lesson={e.id}")
        add = next(o for o in journal if o["kind"] == "ADD" and o["result_id"] == e.id)
        if add["group_key"] is None:  # added by hand: learned from nothing
            assert runs == []
            continue
        want = set(used[(add["session_id"], add["group_key"])])
        reason = add["reason"] or ""
        if " of groups " in reason:
            generalized += 1
            named = reason.split(" of groups ", 1)[1].split(";")[0].split(", ")
            assert len(named) >= 2
            for g in named:
                want |= set(used[(add["session_id"], g)])
        assert {r["trajectory"] for r in runs} == want
        assert {r["sign"] for r in runs} <= {"+", "-"} and "+" in {r["sign"] for r in runs}
    assert generalized >= 1  # the sample has lessons Stage 3 generalized over groups


def test_every_canned_query_is_covered_and_answers(client):
    params = {"session": "1", "group": "multi_turn_base_30", "lesson": "1"}
    for name, q in CANNED_QUERIES.items():
        args = "&".join(f"{k}={v}" for k, v in params.items() if f":{k}" in q["sql"])
        r = client.get(f"/agentmem/{name}.json?_shape=array&{args}")
        assert r.status_code == 200, (name, r.text)
        assert r.json(), name
        page = client.get(f"/agentmem/{name}?{args}")
        assert page.status_code == 200 and html.escape(q["title"]) in page.text


# --- read-only, while agents keep writing ----------------------------------------------------


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_browsing_writes_nothing_and_sees_other_writers(client, lib):
    before = _sha(lib)
    for name in CANNED_QUERIES:
        client.get(f"/agentmem/{name}?session=1&group=multi_turn_base_30&lesson=1")
    for url in ("/agentmem/experiences", "/agentmem/journal", "/agentmem/experience_vectors"):
        client.get(url)
    r = client.get("/agentmem.json?sql=DELETE+FROM+experiences")
    assert r.status_code == 400
    r = client.get("/agentmem.json?sql=select+count(*)+as+n+from+experiences;+PRAGMA+query_only")
    assert r.status_code == 400
    db = client.ds.get_database("agentmem")
    with pytest.raises(AgentMemError, match="read-only"):
        client.loop.run_until_complete(db.execute_write("DELETE FROM experiences"))
    assert _sha(lib) == before
    n = client.rows("/agentmem/trajectory_summary")
    # another process records and learns a lesson by hand while the browser is open
    out = subprocess.run(
        [sys.executable, "-m", "agentmem", "add", "Call ls before rm.", "-d", "fs", "--db", lib],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lessons = {r["text"] for r in client.rows("/agentmem/lessons")}
    assert "Call ls before rm." in lessons
    assert len(client.rows("/agentmem/trajectory_summary")) == len(n)


def test_an_older_file_is_browsed_as_is(tmp_path):
    v1 = tmp_path / "v1.db"
    shutil.copy(ROOT / "tests" / "data" / "library_v1.db", v1)
    before = _sha(v1)
    c = Client(v1)
    try:
        assert "m006_experience_sources" in c.ds._agentmem_note
        assert c.get("/agentmem/experiences").status_code == 200
        assert c.rows("/agentmem/failing_tools") is not None
    finally:
        c.close()
    assert _sha(v1) == before


def test_bad_files_are_refused_clearly(tmp_path):
    missing = tmp_path / "none.db"
    with pytest.raises(AgentMemError, match="no library at"):
        make_datasette(missing)
    assert not missing.exists()
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)  # a plain SQLite file, not a library
    conn.execute("CREATE TABLE x (a)")
    conn.close()
    with pytest.raises(AgentMemError, match="not an agentmem library"):
        make_datasette(other)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database" * 100)
    with pytest.raises(AgentMemError, match="cannot"):
        make_datasette(garbage)


def test_without_datasette_the_error_says_what_to_install(monkeypatch, lib):
    monkeypatch.setitem(sys.modules, "datasette", None)
    monkeypatch.delitem(sys.modules, "agentmem.browse.app", raising=False)
    monkeypatch.delitem(sys.modules, "agentmem.browse.plugin", raising=False)
    import agentmem.browse as browse

    monkeypatch.delattr(browse, "app", raising=False)
    with pytest.raises(AgentMemError, match=r"pip install 'agentmem\[browse\]'"):
        browse.make_datasette(lib)


# --- the command -----------------------------------------------------------------------------


def test_loopback_only_unless_host_with_a_warning(monkeypatch, lib):
    served: list[tuple[str, int]] = []
    monkeypatch.setattr(
        "agentmem.browse.app.serve", lambda ds, host, port: served.append((host, port))
    )
    runner = CliRunner()
    r = runner.invoke(cli, ["browse", "--db", str(lib), "--port", "8123"])
    assert r.exit_code == 0, r.output
    assert served[-1] == ("127.0.0.1", 8123)
    assert "http://127.0.0.1:8123/agentmem" in r.output and "warning" not in r.output
    r = runner.invoke(cli, ["browse", "--db", str(lib), "--host", "0.0.0.0"])
    assert r.exit_code == 0
    assert served[-1] == ("0.0.0.0", 8001)
    assert "warning: listening on 0.0.0.0, not loopback" in r.output
    r = runner.invoke(cli, ["browse", "--db", str(lib.parent / "missing.db")])
    assert r.exit_code != 0 and "no library at" in r.output
    assert [is_loopback(h) for h in ("127.0.0.1", "::1", "localhost", "0.0.0.0", "10.1.2.3")] == [
        True,
        True,
        True,
        False,
        False,
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(lib: Path) -> Any:
    """A real ``agentmem browse`` process on a free loopback port."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmem", "browse", "--db", str(lib), "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    assert proc.stdout is not None
    printed = proc.stdout.readline()  # the URL, with this run's token
    token = printed.split("?token=", 1)[1].split()[0] if "?token=" in printed else ""
    _TOKENS[base] = token
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(_authed(f"{base}/-/versions.json"), timeout=5).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(
                    f"agentmem browse did not start: {proc.communicate()}"
                ) from None
            time.sleep(0.2)
    yield base
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


#: The token each running server printed, by base URL.
_TOKENS: dict[str, str] = {}


def _authed(url: str) -> str:
    """``url`` with its server's token (as the URL ``agentmem browse`` prints)."""
    base = next((b for b in _TOKENS if url.startswith(b)), None)
    if base is None:
        return url
    return url + ("&" if "?" in url else "?") + f"token={_TOKENS[base]}"


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(_authed(url), timeout=30) as r:
        return json.loads(r.read())


def test_browse_refuses_a_request_without_its_token(server):
    """Another local user reaches the loopback port but not the token: 403, whatever the
    path; the token in the query, as a Bearer header or as the cookie it set opens it."""
    import urllib.error

    for path in ("/agentmem/lessons.json", "/agentmem.json?sql=select+1", "/", "/-/versions.json"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(server + path, timeout=30)
        assert e.value.code == 403 and b"whoever started it" in e.value.read()
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"{server}/agentmem.json?token=wrong", timeout=30)
    assert e.value.code == 403
    token = _TOKENS[server]
    with urllib.request.urlopen(f"{server}/agentmem/lessons.json?token={token}", timeout=30) as r:
        cookie = r.headers["set-cookie"]
        assert r.status == 200 and json.loads(r.read())["rows"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    pair = cookie.split(";", 1)[0]
    req = urllib.request.Request(f"{server}/agentmem/lessons.json", headers={"Cookie": pair})
    assert urllib.request.urlopen(req, timeout=30).status == 200
    bearer = {"Authorization": f"Bearer {token}"}
    req = urllib.request.Request(f"{server}/agentmem/lessons.json", headers=bearer)
    assert urllib.request.urlopen(req, timeout=30).status == 200


def test_the_token_never_reaches_datasette_as_a_filter(server):
    """``?token=`` is taken out of the query: a table page does not read it as a column."""
    rows = _get_json(f"{server}/agentmem/experiences.json?_shape=array")
    assert rows and "text" in rows[0]


def test_browse_subprocess_serves_the_library_while_it_is_written(server, lib):
    rows = _get_json(f"{server}/agentmem/lessons.json?_shape=array")
    assert rows and all(r["text"] for r in rows)
    with _db(lib) as mem:
        mem.add("Call pwd before cd to know where you are.", domain="fs")
    rows = _get_json(f"{server}/agentmem/lessons.json?_shape=array")
    assert "Call pwd before cd to know where you are." in {r["text"] for r in rows}


def _chromium(url: str, *args: str, profile: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [CHROMIUM or "chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, url],
        capture_output=True,
        timeout=120,
    )


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed (Debian: apt-get install -y chromium); .ci/run installs it",
)
def test_chromium_shows_lessons_and_a_sessions_journal(server, lib, tmp_path):
    with _db(lib) as mem:
        session = mem.sessions()[0]["id"]
        learned = [o["text"] for o in mem.journal(session) if o["status"] == "applied"]
    pages = {
        "lessons": f"{server}/agentmem/lessons",
        "journal": f"{server}/agentmem/session_journal?session={session}",
    }
    for name, url in pages.items():
        shot = tmp_path / f"{name}.png"
        url = _authed(url)
        done = _chromium(
            url, "--window-size=1280,900", f"--screenshot={shot}", profile=tmp_path / name
        )
        assert done.returncode == 0, done.stderr[-2000:]
        png = shot.read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000  # a rendered page
        dom = _chromium(url, "--dump-dom", profile=tmp_path / f"{name}-dom").stdout.decode()
        assert learned
        for text in learned:  # the browser rendered each lesson's text
            assert html.escape(text, quote=False) in dom, text
        if name == "lessons":
            assert "Live lessons by domain" in dom and "lesson_runs?lesson=" in dom
        else:
            assert "What a session did" in dom
