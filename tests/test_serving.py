"""The one serving path (issue 31, items 3 and 7): one Query through every route gives the
same lessons in the same order and the same text, each marked with its id, and the served
log gets one line only when something was served, held out or withheld."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentmem import Memory, serving
from agentmem import served as log
from agentmem.cli import cli
from agentmem.context import context_text, fast_context, lean_serve, serve_file
from agentmem.errors import InvalidRecordError
from agentmem.retrieval import HEADER
from agentmem.serving import Query, lesson_id, marker

from .conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent

LESSONS = [
    ("If Edit fails with 'File has not been read yet', Read the file first, then retry.", ""),
    ("Run pytest with -x -q to stop at the first failure.", "test"),
    ("Before git push, run git pull --rebase when the push is rejected.", "git"),
    ("Before kubectl apply, run kubectl diff to see what changes.", "k8s"),
]
SCOPED = "In this project run the tests with make check, not pytest directly."
PROMPT = "the pytest tests fail: run the tests again and stop at the first failure"
NOTHING = "zebra quantum xylophone marmalade"


@pytest.fixture
def library(tmp_path: Path) -> dict[str, Any]:
    """A WordLlama library (what the prompt hook reads) with global lessons and one served
    only in project ``app`` (a git folder)."""
    app = tmp_path / "app"
    (app / ".git").mkdir(parents=True)
    db = tmp_path / "lib.db"
    with Memory.open(db) as mem:
        ids = [mem.add(text, domain=d).id for text, d in LESSONS]
        scoped = mem.add(SCOPED, project=app).id
    return {"db": db, "app": app, "ids": ids, "scoped": scoped}


def _lines(db: Path) -> list[dict[str, Any]]:
    path = Path(log.log_path(db))
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines()]


def _ids(text: str) -> list[int]:
    return [int(m) for m in re.findall(r"^- \[L(\d+)\] ", text, flags=re.M)]


def _hook(db: Path, prompt: str, cwd: Path) -> str:
    payload = {
        "session_id": "5b1f0c2e-0000-4000-8000-000000000001",
        "transcript_path": str(cwd / "t.jsonl"),
        "cwd": str(cwd),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    p = run_cli("hooks", "run", "claude-code", db=db, input=json.dumps(payload).encode())
    assert p.returncode == 0 and not p.stderr.strip(), p.stderr
    if not p.stdout.strip():
        return ""
    return str(json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"])


def _context_subprocess(db: Path, prompt: str, cwd: Path) -> str:
    p = run_cli("context", "--project", str(cwd), "--", prompt, db=db)
    assert p.returncode == 0, p.stderr
    return p.stdout.decode().rstrip("\n")


def _context_click(db: Path, prompt: str, cwd: Path) -> str:
    out = CliRunner().invoke(cli, ["context", "--db", str(db), "--project", str(cwd), prompt])
    assert out.exit_code == 0, out.output
    return out.output.rstrip("\n")


async def _mcp(db: Path, prompts: list[str], cwd: Path) -> list[str]:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {"PYTHONPATH": str(ROOT), "HOME": os.environ.get("HOME", "/tmp")}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agentmem", "mcp", "--db", str(db)], env=env
    )
    out = []
    with anyio.fail_after(120):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            for prompt in prompts:
                got = await s.call_tool("agentmem_context", {"task": prompt, "project": str(cwd)})
                assert not got.is_error
                out.append("".join(getattr(c, "text", "") for c in got.content))
    return out


def test_one_query_through_every_route_gives_the_same_lessons_and_text(library):
    import anyio

    db, app = library["db"], library["app"]
    with Memory.open(db) as mem:
        api = mem.context(PROMPT, project=app)
        served = mem.serve(Query(PROMPT, project=app, route="api"))
    assert served.text == api and api.startswith(HEADER)
    # the project's own lesson is served beside the global ones, each marked with its id
    assert library["scoped"] in _ids(api) and len(_ids(api)) >= 2
    assert _ids(api) == served.ids
    for lesson in served.lessons:
        assert f"- {marker(lesson.id or 0)} {lesson.text}" in api.splitlines()
    routes = {
        "hook": _hook(db, PROMPT, app),
        "context (lean, subprocess)": _context_subprocess(db, PROMPT, app),
        "context (click)": _context_click(db, PROMPT, app),
        "mcp": anyio.run(_mcp, db, [PROMPT], app)[0],
        "context_text": context_text(db, PROMPT, project=app),
        "serve_file": serve_file(db, Query(PROMPT, project=app)).text,
    }
    for route, text in routes.items():
        assert text == api, route
    # one line per answer, each with the same lessons in the same order, and why each fitted
    lines = _lines(db)
    assert len(lines) == 2 + len(routes)
    assert {ln["route"] for ln in lines} == {"api", "hook", "context", "mcp"}
    for ln in lines:
        assert ln["served"] == _ids(api) and ln["held"] == [] and "withheld" not in ln
        assert set(ln["why"]) == {str(i) for i in _ids(api)}
        assert ln["project"] == str(app.resolve())


def test_a_prompt_given_nothing_writes_no_log_line(library):
    import anyio

    db, app = library["db"], library["app"]
    with Memory.open(db) as mem:
        assert mem.context(NOTHING, project=app) == ""
        got = mem.serve(Query(NOTHING, project=app))
        assert got.lessons == () and not got.logged
    assert _hook(db, NOTHING, app) == ""
    assert _context_subprocess(db, NOTHING, app) == ""
    assert _context_click(db, NOTHING, app) == ""
    assert anyio.run(_mcp, db, [NOTHING], app) == [""]
    assert fast_context(db, NOTHING, project=app) == ""
    assert not Path(log.log_path(db)).exists()  # not one line, not even an empty file
    # and a prompt that is given something writes exactly one
    assert context_text(db, PROMPT, project=app)
    assert len(_lines(db)) == 1


def test_global_only_and_a_paused_project(library):
    db, app = library["db"], library["app"]
    with Memory.open(db) as mem:
        both = mem.serve(Query(PROMPT, project=app))
        alone = mem.serve(Query(PROMPT, project=app, global_only=True))
        assert library["scoped"] in both.ids and library["scoped"] not in alone.ids
        assert alone.lessons == mem.serve(Query(PROMPT)).lessons  # as with no project
        assert alone.text == _context_click_global(db, app)
        mem.set_project_state(app, "paused")
        paused = mem.serve(Query(PROMPT, project=app))
    assert paused.paused == "paused" and paused.text == "" and not paused.logged
    assert _hook(db, PROMPT, app) == ""
    assert [ln["project"] for ln in _lines(db)].count(str(app.resolve())) == 1


def _context_click_global(db: Path, app: Path) -> str:
    out = CliRunner().invoke(cli, ["context", "--db", str(db), "--global", PROMPT])
    assert out.exit_code == 0, out.output
    return out.output.rstrip("\n")


def test_the_holdout_is_the_same_on_every_path_and_a_held_prompt_is_logged(library):
    db, app = library["db"], library["app"]
    with Memory.open(db) as mem:
        mem.set_holdout(0.5)
        prompts = [f"{PROMPT} ({i})" for i in range(12)]
        full = [mem.serve(Query(p, project=app)) for p in prompts]
    lean = [lean_serve(db, Query(p, project=app)) for p in prompts]
    assert [x.text for x in full] == [x.text for x in lean if x is not None]
    assert any(x.held for x in full) and any(x.lessons for x in full)
    for got in full:
        phash = log.prompt_hash(got.query.text)
        for x in got.held:
            assert log.held_out(phash, x.id or 0, 0.5)
        for x in got.lessons:
            assert not log.held_out(phash, x.id or 0, 0.5)
    # every answer held something or served something: each wrote its line
    assert len(_lines(db)) == 2 * len(prompts)
    held_only = [x for x in full if x.held and not x.lessons]
    for got in held_only:  # deliberately held out: logged though the prompt got nothing
        assert got.text == "" and got.logged


def test_a_filter_withholds_a_lesson_the_next_takes_its_place_and_the_log_says_why(
    library, monkeypatch
):
    db, app = library["db"], library["app"]
    with Memory.open(db) as mem:
        first = mem.serve(Query(PROMPT, project=app, k=1))
        (top,) = first.lessons
        monkeypatch.setattr(
            serving,
            "FILTERS",
            [lambda x: "names a program not on PATH" if x.id == top.id else None],
        )
        got = mem.serve(Query(PROMPT, project=app, k=1))
    (now,) = got.lessons
    assert now.id != top.id and marker(top.id or 0) not in got.text
    assert [(x.id, why) for x, why in got.withheld] == [(top.id, "names a program not on PATH")]
    line = _lines(db)[-1]
    assert line["served"] == [now.id] and line["withheld"] == {
        str(top.id): "names a program not on PATH"
    }
    # the lean path runs the same filters
    again = lean_serve(db, Query(PROMPT, project=app, k=1))
    assert again is not None and again.text == got.text
    # agentmem log shows what was withheld and why, and finds the prompts of one lesson
    env = {"AGENTMEM_DB": str(db)}
    out = CliRunner().invoke(cli, ["log", "--lesson", marker(top.id or 0)], env=env)
    assert out.exit_code == 0, out.output
    assert f"withheld: {marker(top.id or 0)}" in out.output
    assert "names a program not on PATH" in out.output
    data = json.loads(CliRunner().invoke(cli, ["log", "--json"], env=env).output)
    assert data[-1]["withheld"] == [
        {"id": top.id, "text": top.text, "why": "names a program not on PATH"}
    ]


def test_a_private_lesson_the_team_merge_cuts_is_not_logged_as_served(tmp_path: Path):
    """The old fast path logged the private lessons before the team merge cut them to
    ``k``: a prompt got a served-log line naming a private lesson it never saw."""
    db, replica = tmp_path / "lib.db", tmp_path / "replica.db"
    team_text = "Run pytest with -x -q to stop at the first failure, then rerun the tests."
    with Memory.open(replica) as team:
        team.add(team_text, domain="test")
    with Memory.open(db) as mem:
        first = mem.add("Run the tests with pytest -x to stop at the first failure.").id
        second = mem.add("Before kubectl apply, run kubectl diff to see what changes.").id
        mem.set_setting("team", {"replica": str(replica)})
        query = Query(PROMPT, k=2, min_score=0.0)  # both private lessons pass the floor
        alone = mem.serve(query.replace(team=False))
        full = mem.serve(query)
    lean = lean_serve(db, query)
    assert alone.ids == [first, second]
    assert lean is not None and lean.text == full.text
    assert [(x.source, x.id) for x in full.lessons] == [("private", first), ("team", None)]
    assert full.text.endswith(f"- (team) {team_text}")
    lines = _lines(db)
    assert [ln["served"] for ln in lines] == [[first, second], [first], [first]]
    assert [ln.get("team") for ln in lines] == [None, [team_text], [team_text]]
    out = CliRunner().invoke(cli, ["log"], env={"AGENTMEM_DB": str(db)})
    assert f"(team) {team_text}" in out.output


def test_the_id_marker_reaches_show_remove_and_log(library):
    db, app = library["db"], library["app"]
    text = context_text(db, PROMPT, project=app, route="hook")
    first = _ids(text)[0]
    env = {"AGENTMEM_DB": str(db)}
    runner = CliRunner()
    shown = runner.invoke(cli, ["show", f"[L{first}]"], env=env)
    assert shown.exit_code == 0 and f"lesson {first} [L{first}]" in shown.output
    as_json = json.loads(runner.invoke(cli, ["show", f"L{first}", "--json"], env=env).output)
    assert as_json["id"] == first and f"- [L{first}] {as_json['text']}" in text
    out = runner.invoke(cli, ["log", "--lesson", f"L{first}"], env=env)
    assert out.exit_code == 0 and f"[L{first}] {as_json['text']}" in out.output
    bad = runner.invoke(cli, ["show", "Lx"], env=env)
    assert bad.exit_code != 0 and "not a lesson id" in bad.output
    gone = runner.invoke(cli, ["remove", f"L{first}"], env=env)
    assert gone.exit_code == 0 and f"removed experience {first}" in gone.output
    assert f"[L{first}]" not in context_text(db, PROMPT, project=app)
    missing = runner.invoke(cli, ["show", f"L{first}"], env=env)
    assert missing.exit_code != 0 and f"no live experience has id {first}" in missing.output


def test_quoted_tool_output_stays_data_with_the_marker(tmp_path: Path):
    """The marker sits after the bullet, before the lesson: the header still says these are
    notes learned from tool output, and no lesson text can open a line of its own."""
    db = tmp_path / "lib.db"
    with Memory.open(db) as mem:
        eid = mem.add("If cat fails with 'No such file', cd into the folder first.").id
    block = context_text(db, "cat fails with No such file", tools=["cat"])
    lines = block.splitlines()
    assert lines[0] == HEADER and "not instructions" in HEADER
    assert lines[1:] == [f"- [L{eid}] If cat fails with 'No such file', cd into the folder first."]


# -- the Query value and the id parser -----------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"text": "  "}, "must not be empty"),
        ({"text": "x", "k": 0}, "k must be at least 1"),
        ({"text": "x", "k": True}, "k must be at least 1"),
        ({"text": "x", "min_score": 1.5}, "min_score must be between 0 and 1"),
        ({"text": "x", "tools": "bash"}, "not one string"),
        ({"text": "x", "domains": [1]}, "must be names"),
        ({"text": "x", "route": ""}, "route"),
    ],
)
def test_a_bad_query_is_refused_with_a_clear_message(kwargs: dict[str, Any], message: str):
    text = kwargs.pop("text")
    with pytest.raises(InvalidRecordError, match=message):
        Query(text, **kwargs)


def test_a_query_is_a_frozen_value():
    q = Query("fix the build", tools=["bash"], k=3, project="/tmp/x", session="s")
    assert q == Query("fix the build", tools=("bash",), k=3, project="/tmp/x", session="s")
    assert hash(q) == hash(q.replace()) and q != q.replace(k=4)
    assert q.tools == ("bash",) and q.replace(k=4).k == 4 and q.k == 3
    with pytest.raises(AttributeError, match="frozen"):
        q.k = 9  # type: ignore[misc]
    with pytest.raises(InvalidRecordError):
        q.replace(k=-1)
    assert "fix the build" in repr(q)
    assert Query("x", project="/tmp/x", global_only=True).where() is None


@pytest.mark.parametrize(("text", "want"), [("12", 12), ("L12", 12), ("[L12]", 12), (" l7 ", 7)])
def test_lesson_ids_as_users_write_them(text: str, want: int):
    assert lesson_id(text) == want and marker(want) == f"[L{want}]"


@pytest.mark.parametrize("text", ["", "L", "L0", "12a", "[L-1]", "L99999999999999999999"])
def test_what_is_no_lesson_id(text: str):
    with pytest.raises(ValueError, match="not a lesson id"):
        lesson_id(text)


def test_serving_imports_nothing_heavy():
    """The prompt hook imports agentmem.serving: never attrs, click, sqlite-utils, numpy."""
    import subprocess

    code = (
        "import sys, agentmem.serving, agentmem.context;"
        "print(sorted(m for m in ('attrs', 'click', 'sqlite_utils', 'numpy', 'dataclasses')"
        " if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_the_public_names_and_the_old_entry_points_still_work(library):
    """``agentmem.Query``; ``Memory.serve_hits`` (deprecated) and ``fast_context`` delegate."""
    import agentmem

    db, app = library["db"], library["app"]
    assert agentmem.Query is Query and agentmem.Served is serving.Served
    with Memory.open(db) as mem:
        hits = mem.retrieve(PROMPT, project=app)
        mem.set_holdout(0.5)
        kept = mem.serve_hits(PROMPT, hits, route="api", project=str(app))
        served = mem.serve(Query(PROMPT, project=app))
    assert [h.experience.id for h in kept] == served.ids  # the same holdout, the same order
    assert fast_context(db, PROMPT, project=app) == served.text
    assert fast_context(db, "  ") is None  # a query the lean path cannot take: the full path's
    lines = _lines(db)
    assert len(lines) == 3 and lines[0]["served"] == lines[1]["served"] == served.ids


def test_a_filter_that_raises_withholds_its_lesson_and_serving_goes_on(library, monkeypatch):
    db, app = library["db"], library["app"]
    with Memory.open(db) as mem:
        every = mem.serve(Query(PROMPT, project=app))
    broken = every.ids[0]

    def claims(lesson: serving.Lesson) -> str | None:
        if lesson.id == broken:
            raise RuntimeError("boom")
        return None

    before = serving.FILTER_FAILURES[0]
    monkeypatch.setattr(serving, "FILTERS", [claims])
    got = lean_serve(db, Query(PROMPT, project=app))  # the lean path: no fallback needed
    assert got is not None and broken not in got.ids and got.ids == every.ids[1:]
    ((lesson, why),) = got.withheld
    assert lesson.id == broken and "claims" in why and "RuntimeError" in why
    assert serving.FILTER_FAILURES[0] == before + 1


def test_the_search_goes_deeper_only_when_a_filter_withheld_a_place_it_could_fill(
    library, monkeypatch
):
    db, app = library["db"], library["app"]
    depths: list[int] = []
    real = serving.search

    def spy(*args: Any, **kwargs: Any) -> Any:
        depths.append(kwargs["k"])
        return real(*args, **kwargs)

    monkeypatch.setattr(serving, "search", spy)
    with Memory.open(db) as mem:
        plain = mem.serve(Query(PROMPT, project=app, k=2))
        monkeypatch.setattr(serving, "FILTERS", [lambda x: None])
        same = mem.serve(Query(PROMPT, project=app, k=2))
        assert depths == [2, 2] and same.ids == plain.ids  # a filter that passes all: as none
        top = plain.ids[0]
        monkeypatch.setattr(serving, "FILTERS", [lambda x: "no" if x.id == top else None])
        got = mem.serve(Query(PROMPT, project=app, k=2))
    assert depths == [2, 2, 2, 2 + serving.FILTER_MARGIN]
    assert got.ids[0] == plain.ids[1] and len(got.ids) == 2 and top not in got.ids


def test_a_lesson_whose_claim_fails_here_is_withheld_on_every_route(library):
    """The claim check (issue 29) runs inside serve(): a lesson whose stored rule claims a
    path exists in the project is served while it exists and withheld, with the reason in
    the served log, once it is gone; the real prompt hook (a subprocess) does the same."""
    db, app = library["db"], library["app"]
    sid = library["scoped"]
    rule = {"kind": "shell", "tools": ["Bash"], "testable": False,
            "claims": [["exists", "docs/notes.txt"]]}  # fmt: skip
    with Memory.open(db) as mem:
        mem.db.execute("UPDATE experiences SET rule = ? WHERE id = ?", [json.dumps(rule), sid])
    prompt = "run the tests with make check in this project"
    (app / "docs").mkdir()
    (app / "docs" / "notes.txt").write_text("x")
    with Memory.open(db) as mem:
        there = mem.serve(Query(prompt, project=app))
    assert sid in there.ids and not there.withheld
    assert marker(sid) in _hook(db, prompt, app)
    (app / "docs" / "notes.txt").unlink()
    with Memory.open(db) as mem:
        gone = mem.serve(Query(prompt, project=app))
    assert sid not in gone.ids
    assert [(x.id, why) for x, why in gone.withheld] == [
        (sid, "docs/notes.txt does not exist in this project")
    ]
    assert marker(sid) not in _hook(db, prompt, app)
    assert _lines(db)[-1]["withheld"] == {str(sid): "docs/notes.txt does not exist in this project"}


# -- Memory.retrieve is a view of the same pipeline ------------------------------------------

TEAM_LESSONS = [
    ("Run pytest with -x -q to stop at the first failure, then rerun the tests.", "test"),
    ("Run pytest with -x -q to stop at the first failure.", "test"),  # a private one's text
    ("When the tests fail, rerun only the failed ones with pytest --lf.", "test"),
    ("Before git push, fetch first when the remote has new commits.", "git"),
]
#: A team row no experience can be read from (a domain Experience refuses).
BAD_TEAM = "When the tests fail again, rerun pytest with -x to see the first failure."


def _as_hits(got: serving.Served) -> list[tuple[str, int | None, str, float]]:
    return [(x.source, x.id, x.text, round(x.score, 9)) for x in got.lessons]


def _as_retrieved(hits: list[Any]) -> list[tuple[str, int | None, str, float]]:
    return [
        (h.source, h.experience.id if h.source == "private" else None, h.experience.text,
         round(h.score, 9))
        for h in hits
    ]  # fmt: skip


def test_retrieve_returns_what_serve_serves_for_the_same_query(library, tmp_path: Path):
    """Private and team lessons, a project paused, a lesson whose claim fails here, one
    whose claim is checked in the project, a team row no experience can be read from:
    for every query, ``Memory.retrieve`` returns exactly the lessons ``Memory.serve``
    serves (same ids, same order, same scores), and with a holdout, serve's lessons are
    retrieve's less the held ones, in retrieve's order."""
    import sqlite3

    db, app = library["db"], library["app"]
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    replica = tmp_path / "replica.db"
    with Memory.open(replica) as team:
        for text, domain in TEAM_LESSONS:
            team.add(text, domain=domain)
        bad = team.add(BAD_TEAM, domain="test").id
    conn = sqlite3.connect(replica)
    conn.execute("UPDATE experiences SET domain = 'Not A Domain' WHERE id = ?", [bad])
    conn.commit()
    conn.close()
    missing = {"kind": "shell", "tools": ["Bash"], "testable": False,
               "claims": [["on_path", "agentmem-no-such-program-x9"]]}  # fmt: skip
    in_project = {"kind": "shell", "tools": ["Bash"], "testable": False,
                  "claims": [["exists", "docs/notes.txt"]]}  # fmt: skip
    with Memory.open(db) as mem:
        gone = mem.add("When pytest fails, rerun the failing tests with pytest -x.").id
        mem.db.execute("UPDATE experiences SET rule = ? WHERE id = ?", [json.dumps(missing), gone])
        sid = library["scoped"]
        mem.db.execute(
            "UPDATE experiences SET rule = ? WHERE id = ?", [json.dumps(in_project), sid]
        )
        paused = tmp_path / "paused"
        (paused / ".git").mkdir(parents=True)
        mem.add("In this project run the tests with tox, not pytest directly.", project=paused)
        mem.set_project_state(paused, "paused")
        mem.set_setting("team", {"replica": str(replica)})
        prompts = [PROMPT, "git push was rejected", "run the tests with make check", NOTHING]
        queries = [
            Query(p, project=where, k=k, min_score=floor)
            for p in prompts
            for where in (app, other, paused, None)
            for k in (1, 5)
            for floor in (None, 0.0)
        ]
        seen_team = seen_withheld = 0
        for q in queries:
            served = mem.serve(q)
            hits = mem.retrieve(q.text, k=q.k, min_score=q.min_score, project=q.project)
            assert _as_retrieved(hits) == _as_hits(served), q
            # the same view through the pipeline's own select()
            assert _as_hits(mem._serving("select", q)) == _as_hits(served), q
            seen_team += any(h.source == "team" for h in hits)
            seen_withheld += bool(served.withheld)
            if q.project == paused:
                assert hits == [] and served.paused == "paused"
            assert gone not in [h.experience.id for h in hits if h.source == "private"]
            assert BAD_TEAM not in [h.experience.text for h in hits]
            assert sid not in [h.experience.id for h in hits]  # docs/notes.txt is missing
        assert seen_team and seen_withheld  # the team merge and the filters were exercised
        # without the failing claims, the same queries return the withheld lessons
        (app / "docs").mkdir()
        (app / "docs" / "notes.txt").write_text("x")
        mem.db.execute("UPDATE experiences SET rule = NULL WHERE id = ?", [gone])
        back = mem.retrieve(PROMPT, k=10, min_score=0.0, project=app)
        assert {gone, sid} <= {h.experience.id for h in back}
        again = mem.serve(Query(PROMPT, k=10, min_score=0.0, project=app))
        assert _as_retrieved(back) == _as_hits(again) and not again.withheld
        # with a holdout: serve serves retrieve's list less the lessons it holds back
        mem.set_holdout(0.5)
        held_any = 0
        for i in range(12):
            q = Query(f"{PROMPT} ({i})", project=app, k=5, min_score=0.0)
            hits = mem.retrieve(q.text, k=5, min_score=0.0, project=app)
            got = mem.serve(q)
            held = {x.id for x in got.held}
            held_any += bool(held)
            kept = [h for h in hits if h.source != "private" or h.experience.id not in held]
            assert _as_retrieved(kept) == _as_hits(got)
            assert held <= {h.experience.id for h in hits}
        assert held_any
