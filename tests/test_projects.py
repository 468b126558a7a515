"""Projects and lesson scopes: where a run happened, which lessons stay in their project."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentmem import Memory, Step, projects
from agentmem.domains import command_domain, domain_for, shell_command, step_domain
from agentmem.projects import (
    Scope,
    decide_scope,
    machine_id,
    project_of,
    recorded_machine,
    scope_for,
    specific_markers,
    visible_top,
)
from agentmem.storage import scopes as scope_store
from agentmem.storage.scopes import current_scopes, hidden_ids, scopes_of

A, B = "/w/alpha", "/w/beta"


def test_project_of_is_the_git_root_else_the_folder(tmp_path: Path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "plain").mkdir()
    assert project_of(tmp_path / "repo" / "src" / "pkg") == str(tmp_path / "repo")
    assert project_of(tmp_path / "plain") == str(tmp_path / "plain")
    assert project_of("/no/such/place/here") == "/no/such/place/here"
    assert project_of(None) is None and project_of("  ") is None
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / ".git").write_text("gitdir: /elsewhere\n")  # a worktree's .git file
    assert project_of(tmp_path / "wt") == str(tmp_path / "wt")


@pytest.mark.parametrize(
    "text",
    [
        "If git push is rejected, run git pull --rebase first, then push again.",
        "Before calling cat, call cd first; without it cat fails with 'No such file'.",
        "Call Read with file_path=..., never path=...; path is not a parameter of Read.",
        "If Bash fails with 'rejected: fetch first', retry Bash with a corrected command.",
        "Use rg instead of grep -r to search large trees; it skips ignored files.",
        "Run kubectl diff before kubectl apply to see what changes.",
    ],
)
def test_generic_lessons_name_nothing_of_a_project(text: str):
    vocabulary = {"file_path", "path", "Read"}
    assert specific_markers(text, project=A, vocabulary=vocabulary) == []
    # a tool's rule: served in its one project until runs of a second show it
    one = scope_for(text, {A}, vocabulary=vocabulary)
    assert one.kind == "tool" and one.project == A and "second project" in one.reason
    assert decide_scope(text, {A, B}, vocabulary=vocabulary)[0] is None


@pytest.mark.parametrize(
    "text,marker",
    [
        ("Tests live in test/, not tests/.", "test/"),
        ("Call Bash with command like pytest test/unit; never pytest tests/unit.", "test/unit"),
        ("Run make check before committing.", "make check"),
        ("Use npm run e2e, not npm test, for browser tests.", "npm run e2e"),
        ("Run tox -e lint before pushing.", "tox -e lint"),
        ("Start the app with python -m myapp.server, not flask run.", "python -m myapp.server"),
        ("Settings come from settings.toml in the repo root.", "settings.toml"),
        ("Mock load_config in tests that touch the database.", "load_config"),
        ("The UserService class caches sessions; clear it between tests.", "UserService"),
        ("Alpha's build needs the vendored headers.", "alpha"),
        ("Run ./scripts/bootstrap.sh once after cloning.", "./scripts/bootstrap.sh"),
    ],
)
def test_project_specific_lessons(text: str, marker: str):
    found = specific_markers(text, project=A)
    assert any(marker.lower() in m.lower() for m in found), found
    project, why = decide_scope(text, {A})
    assert project == A and "one project" in why


def test_support_from_two_projects_or_outside_any_keeps_a_lesson_global():
    text = "Run make check before committing."
    assert decide_scope(text, {A, B}) == (None, "supported by runs in 2 projects")
    assert decide_scope(text, {A, ""})[0] is None
    # a project's fact found again in another project stays a project's fact, never global
    again = scope_for(text, {A, B}, home=B)
    assert again.kind == "project" and again.project == B
    assert scope_for(text, {A, B}, about="project", home=A).project == A


def test_shell_steps_take_the_domain_of_their_command():
    cases = {
        "git push origin main": "git",
        "cd repo && git pull --rebase": "git",
        "FOO=1 sudo kubectl apply -f x.yaml": "k8s",
        "docker compose up -d": "docker",
        "npm test": "test",
        "npm run test:unit": "test",
        "npm install left-pad": "packages",
        "pip install -e .": "packages",
        "python -m pytest -x": "test",
        "uv run pytest": "test",
        "cargo build --release": "build",
        "make": "build",
        "make test": "test",
        "ruff check .": "lint",
        "cat log.txt | grep ERROR": "fs",
        "rg TODO src": "search",
        "curl -s https://example.com": "web",
        "bash -lc 'git status'": "git",
        "echo hello": None,
        "./scripts/run.sh": None,
        "unbalanced 'quote": None,
    }
    for command, domain in cases.items():
        assert command_domain(command) == domain, command
    assert step_domain("Bash", {"command": "git push"}) == "git"
    assert step_domain("shell", {"command": ["bash", "-lc", "kubectl get pods"]}) == "k8s"
    assert step_domain("exec_command", {"cmd": "pytest"}) == "test"
    assert step_domain("Bash", {"command": "echo hi"}) == "shell"
    assert step_domain("Bash", {"command": "git push"}, {"Bash": "ops"}) == "ops"
    assert shell_command({"command": ["ls", "-la", "my dir"]}) == "ls -la 'my dir'"
    for tool, domain in {
        "Read": "fs",
        "Edit": "fs",
        "Write": "fs",
        "Glob": "fs",
        "Grep": "search",
        "WebFetch": "web",
        "TodoWrite": "plan",
        "Task": "agent",
        "apply_patch": "fs",
        "mcp__github__create_issue": "git",
        "mcp__filesystem__read_file": "fs",
        "mcp__Linear__list_issues": "linear",
    }.items():
        assert domain_for(tool) == domain, tool


# -- scopes through a learning session ----------------------------------------------------------

GOOD = [Step("Bash", {"command": "pytest test/unit"}, "5 passed", True)]
BAD = [Step("Bash", {"command": "pytest tests/unit"}, "ERROR: not found: tests/unit", False)]
PUSH_OK = [
    Step("Bash", {"command": "git push"}, "rejected: fetch first", False),
    Step("Bash", {"command": "git pull --rebase"}, "ok", True),
    Step("Bash", {"command": "git push"}, "ok", True),
]
PUSH_BAD = [Step("Bash", {"command": "git push"}, "rejected: fetch first", False)]
#: A client tool's own rule (Edit refuses a file not read yet): the same in every project.
_READ_FIRST = (
    "<tool_use_error>File has not been read yet. Read it first before writing to it."
    "</tool_use_error>"
)
_EDIT = {"file_path": "/w/a.py", "old_string": "x", "new_string": "y"}
EDIT_OK = [
    Step("Edit", _EDIT, _READ_FIRST, False),
    Step("Read", {"file_path": "/w/a.py"}, "1 x", True),
    Step("Edit", _EDIT, "ok", True),
]
EDIT_BAD = [Step("Edit", _EDIT, _READ_FIRST, False)]


def _group(mem: Memory, task: str, good, bad, projects) -> None:
    for ok, project in zip((True, False, True, False), projects):
        meta = {"project": project} if project else {}
        mem.record(task, good if ok else bad, accepted=ok, meta=meta)


def test_a_project_specific_lesson_is_served_only_in_its_project(mem: Memory):
    _group(mem, "run the unit tests", GOOD, BAD, [A] * 4)
    _group(mem, "change the greeting", EDIT_OK, EDIT_BAD, [A] * 4)
    report = mem.learn(use_model=False)
    texts = {o.result_id: o.op for o in report.applied}
    assert len(texts) == 2
    scoped = scopes_of(mem.db)
    assert set(scoped) == set(texts) and {s.project for s in scoped.values()} == {A}
    [scoped_id] = [i for i, s in scoped.items() if s.kind == "project"]
    assert "test/unit" in texts[scoped_id].text
    assert texts[scoped_id].domain == "test"  # not merged with the Edit lesson
    # the Edit lesson is a tool's rule seen in one project only: served there, for now
    [generic_id] = set(texts) - {scoped_id}
    assert texts[generic_id].domain == "fs" and scoped[generic_id].kind == "tool"
    here = {h.experience.id for h in mem.retrieve("run the unit tests", project=A, k=5)}
    elsewhere = {h.experience.id for h in mem.retrieve("run the unit tests", project=B, k=5)}
    nowhere = {h.experience.id for h in mem.retrieve("run the unit tests", k=5)}
    assert scoped_id in here
    assert elsewhere == nowhere == set()
    assert "test/unit" in mem.context("run the unit tests", project=A)
    assert "test/unit" not in mem.context("run the unit tests", project=B)
    # the Edit lesson reaches file-editing tasks, not every shell task
    assert {h.experience.id for h in mem.retrieve("edit", tools=["Edit"], project=A)} >= {
        generic_id
    }
    assert generic_id not in {
        h.experience.id for h in mem.retrieve("x", domains=["shell"], project=A)
    }
    # undo takes the scope back with the lesson
    mem.undo(report.session_id)
    assert current_scopes(mem.db) == {}


def test_a_shell_prerequisite_is_a_project_fact(mem: Memory):
    """``git push`` rejected, ``git pull --rebase``, push again: true where it was seen
    (the remote moved), not a rule for every repository."""
    _group(mem, "push my branch", PUSH_OK, PUSH_BAD, [A] * 4)
    mem.learn(use_model=False)
    [(_, scope)] = scopes_of(mem.db).items()
    assert scope.kind == "project" and scope.project == A
    assert mem.retrieve("push my branch", domains=["git"], project=B) == []


def test_a_tools_rule_goes_global_once_a_second_projects_runs_show_it(mem: Memory):
    _group(mem, "change the greeting", EDIT_OK, EDIT_BAD, [A] * 4)
    first = mem.learn(use_model=False)
    [(eid, scope)] = scopes_of(mem.db).items()
    assert scope.kind == "tool" and scope.project == A
    assert mem.retrieve("change the greeting", tools=["Edit"], project=B) == []
    # runs of another project bear the same rule out: a confirmation promotes it
    _group(mem, "rename the title", EDIT_OK, EDIT_BAD, [B] * 4)
    second = mem.learn(use_model=False)
    assert scopes_of(mem.db) == {}
    row = mem.db.execute(
        "SELECT project, kind, reason FROM experience_scopes WHERE session_id = ?",
        [second.session_id],
    ).fetchone()
    assert row[0] is None and row[1] == "tool" and row[2].startswith("promoted to global")
    ops = [j for j in mem.journal(second.session_id) if j["kind"] == "CONFIRM"]
    assert any("promoted to global" in (j["reason"] or "") for j in ops), ops
    assert {h.experience.id for h in mem.retrieve("edit", tools=["Edit"], project=B)} == {eid}
    assert {h.experience.id for h in mem.retrieve("edit", tools=["Edit"])} == {eid}
    # the promotion is undone with its session
    mem.undo(second.session_id)
    assert scopes_of(mem.db)[eid].project == A
    assert first.session_id is not None


def test_a_machine_fact_is_served_on_its_machine_only(mem: Memory, monkeypatch):
    monkeypatch.setattr(scope_store, "_about", lambda op: "machine")
    other = "m-0000000000000000"
    for ok, project in zip((True, False, True, False), [A, A, B, B]):
        meta = {"project": project, "machine": other}
        mem.record("push my branch", PUSH_OK if ok else PUSH_BAD, accepted=ok, meta=meta)
    mem.learn(use_model=False)
    [(eid, scope)] = scopes_of(mem.db).items()
    assert scope == Scope("machine", None, other, "a fact about the machine its runs ran on")
    assert scope.label == "machine"
    assert hidden_ids(mem.db, A) == {eid}  # this machine is another one
    assert hidden_ids(mem.db, A, machine=other) == set()
    assert hidden_ids(mem.db, None, machine=other) == set()
    assert mem.retrieve("push my branch", domains=["git"], project=A) == []
    # runs of two machines: not one machine's fact; it stays where its runs were
    assert scope_for("x", {A}, machines={other, "m-1"}, about="machine").project == A
    assert scope_for("x", {A}, machines={""}, about="machine").kind == "project"


def test_machine_identity_is_stable_hashed_and_overridable(monkeypatch, tmp_path: Path):
    monkeypatch.setattr(projects, "_MACHINE", [])
    monkeypatch.setenv("AGENTMEM_MACHINE", "box-1")
    one = machine_id()
    assert one == machine_id() and one.startswith("m-") and len(one) == 18 and "box" not in one
    monkeypatch.setattr(projects, "_MACHINE", [])
    monkeypatch.setenv("AGENTMEM_MACHINE", "box-2")
    assert machine_id() != one
    monkeypatch.setattr(projects, "_MACHINE", [])
    monkeypatch.delenv("AGENTMEM_MACHINE")
    assert machine_id().startswith("m-")
    # recorded: the run's own, else this machine's, unless its folder is not here
    assert recorded_machine({"machine": "m-x"}) == "m-x"
    assert recorded_machine({}) == machine_id()
    assert recorded_machine({"project": str(tmp_path)}) == machine_id()
    assert recorded_machine({"project": "/no/such/folder/here"}) is None


def test_a_machine_scope_without_its_machine_is_a_check_problem(mem: Memory):
    from agentmem.check import check_library

    _group(mem, "push my branch", PUSH_OK, PUSH_BAD, [A] * 4)
    mem.learn(use_model=False)
    assert not [p for p in check_library(mem.db) if p.kind == "scope"]
    mem.db.execute("UPDATE experience_scopes SET kind = 'machine'")
    assert [p.kind for p in check_library(mem.db) if p.kind == "scope"] == ["scope"]


def test_experiences_and_retrieve_say_where_each_lesson_is_served(tmp_path: Path):
    import json

    from click.testing import CliRunner

    from agentmem.cli import cli
    from agentmem.embeddings import get_embedder

    db = tmp_path / "lib.db"
    with Memory.open(db, embedder=get_embedder("hash")) as m:
        _group(m, "run the unit tests", GOOD, BAD, [A] * 4)
        _group(m, "push my branch", PUSH_OK, PUSH_BAD, [None] * 4)
        m.learn(use_model=False)

    def run(*args: str) -> str:
        r = CliRunner().invoke(
            cli, list(args), env={"AGENTMEM_DB": str(db)}, catch_exceptions=False
        )
        assert r.exit_code == 0, r.output
        return r.output

    rows = json.loads(run("experiences", "--json"))
    assert sorted(r["scope"] for r in rows) == ["global", "project alpha"]
    scoped = next(r for r in rows if r["scope"] == "project alpha")
    assert (
        scoped["project"] == A and scoped["scope_kind"] == "project" and scoped["machine"] is None
    )
    assert "project alpha" in run("experiences")
    assert [r["scope"] for r in json.loads(run("experiences", "--project", B, "--json"))] == [
        "global"
    ]
    hits = json.loads(run("retrieve", "run the unit tests", "--project", A, "--json"))
    assert "project alpha" in {h["scope"] for h in hits}


def test_runs_in_two_projects_make_the_lesson_global(mem: Memory):
    _group(mem, "run the unit tests", GOOD, BAD, [A, A, B, B])
    mem.learn(use_model=False)
    assert current_scopes(mem.db) == {}
    row = mem.db.execute("SELECT project, support, reason FROM experience_scopes").fetchone()
    assert row[:2] == (None, f'["{A}", "{B}"]') and "2 projects" in row[2]


def test_runs_outside_any_project_write_no_scope(mem: Memory):
    _group(mem, "run the unit tests", GOOD, BAD, [None] * 4)
    mem.learn(use_model=False)
    assert mem.db.execute("SELECT count(*) FROM experience_scopes").fetchone()[0] == 0
    assert mem.retrieve("run the unit tests")  # served everywhere, as before scopes


@given(
    n=st.integers(0, 60),
    k=st.integers(1, 12),
    hidden=st.sets(st.integers(0, 80), max_size=50),
)
def test_visible_top_is_the_exact_top_k_of_the_visible_hits(n: int, k: int, hidden: set[int]):
    ranked = list(range(n))  # ids in best-first order
    asked: list[int] = []

    def search(m: int) -> list[int]:
        asked.append(m)
        return ranked[:m]

    got = visible_top(search, k, hidden, lambda i: i)
    assert got == [i for i in ranked if i not in hidden][:k]
    assert max(asked) <= k + len(hidden)


def test_the_prompt_hook_path_serves_this_machines_facts_only(tmp_path: Path, monkeypatch):
    from agentmem.context import fast_context
    from agentmem.embeddings import get_embedder

    monkeypatch.setattr(scope_store, "_about", lambda op: "machine")
    db = tmp_path / "lib.db"
    here, other = machine_id(), "m-0000000000000000"
    with Memory.open(db, embedder=get_embedder("hash")) as m:
        for ok in (True, False, True, False):
            meta = {"project": A, "machine": here}
            m.record("run the unit tests", GOOD if ok else BAD, accepted=ok, meta=meta)
            meta = {"project": A, "machine": other}
            m.record("push my branch", PUSH_OK if ok else PUSH_BAD, accepted=ok, meta=meta)
        m.learn(use_model=False)
        machines = {s.machine for s in scopes_of(m.db).values()}
    assert machines == {here, other}
    mine = fast_context(db, "run the unit tests", project=A, min_score=0.0, k=10)
    assert mine is not None and "test/unit" in mine and "push" not in mine.lower()
    # without a project too: a machine's fact is served wherever it is asked on that machine
    assert "test/unit" in (fast_context(db, "run the unit tests", min_score=0.0, k=10) or "")
    # on the other machine, the other way round
    monkeypatch.setattr(projects, "_MACHINE", [other])
    theirs = fast_context(db, "push my branch", project=A, min_score=0.0, k=10)
    assert theirs and "test/unit" not in theirs
    monkeypatch.setattr(projects, "_MACHINE", [here])
    assert fast_context(db, "push my branch", project=A, min_score=0.0, k=10) != theirs


def test_runs_outside_any_project_do_not_promote_a_tools_rule(mem: Memory):
    _group(mem, "push my branch", PUSH_OK, PUSH_BAD, [A] * 4)
    mem.learn(use_model=False)
    [(eid, scope)] = scopes_of(mem.db).items()
    _group(mem, "push the release branch", PUSH_OK, PUSH_BAD, [None] * 4)
    again = mem.learn(use_model=False)
    assert any(j["kind"] == "CONFIRM" for j in mem.journal(again.session_id))
    assert scopes_of(mem.db) == {eid: scope}


def test_a_merge_is_scoped_as_a_rewrite(mem: Memory):
    from agentmem.records import Operation

    tids = [mem.record("t", GOOD, accepted=True, meta={"project": A}) for _ in range(2)]
    op = Operation("MERGE", text="Run make check before committing.", targets=(1, 2), group="g")
    prior = {t: (Scope("project", A, None, "x"), {A}) for t in (1, 2)}
    scope, support = scope_store._decide(mem.db, op, {"g": tids}, prior)
    assert (scope.kind, scope.project) == ("project", A) and support == {A}
    # merging a hand-written (global) lesson keeps it global, as a rewrite of one does
    assert scope_store._decide(mem.db, op, {"g": tids}, {})[0].project is None


def test_a_linked_worktree_is_its_repositorys_project(tmp_path: Path):
    """``git worktree add ../feat`` from ``main``: ``feat/.git`` is a file naming
    ``main/.git/worktrees/feat``, whose ``commondir`` leads back to ``main/.git``."""
    (tmp_path / "main" / ".git" / "worktrees" / "feat").mkdir(parents=True)
    (tmp_path / "main" / ".git" / "worktrees" / "feat" / "commondir").write_text("../..\n")
    (tmp_path / "feat" / "lib").mkdir(parents=True)
    gitdir = tmp_path / "main" / ".git" / "worktrees" / "feat"
    (tmp_path / "feat" / ".git").write_text(f"gitdir: {gitdir}\n")
    assert project_of(tmp_path / "feat" / "lib") == str(tmp_path / "main")
    assert project_of(tmp_path / "main") == str(tmp_path / "main")
    # a submodule's .git file names a folder without commondir: the submodule's own root
    (tmp_path / "main" / ".git" / "modules" / "dep").mkdir(parents=True)
    (tmp_path / "main" / "dep").mkdir()
    (tmp_path / "main" / "dep" / ".git").write_text("gitdir: ../.git/modules/dep\n")
    assert project_of(tmp_path / "main" / "dep") == str(tmp_path / "main" / "dep")


def test_worktrees_that_are_gone_are_one_project(tmp_path: Path):
    """Sessions in a repository's linked worktrees whose folders no longer exist here (removed
    once merged, or a transcript from another machine) are one project, by the layouts the
    tools write; the worktree's subfolders too. A folder that merely holds other folders, or
    one named ``worktrees`` outside a repository, groups nothing."""
    home = tmp_path / "gone"  # never created
    beside = home / "spotter-worktrees"
    assert project_of(beside / "spotter-fum") == str(beside)
    assert project_of(beside / "spotter-gqc" / "assets") == str(beside)
    repo = home / "repo"
    assert project_of(repo / ".claude" / "worktrees" / "feat" / "src") == str(repo)
    assert project_of(home / "repo" / ".worktrees" / "feat") == str(home / "repo")
    assert project_of(home / "worktrees" / "repo") == str(home / "worktrees" / "repo")
    shared = home / "git-worktrees"  # many repositories' worktrees: each its own project
    assert project_of(shared / "a" / "main") != project_of(shared / "b" / "main")
    assert project_of(home / "projects" / "a") != project_of(home / "projects" / "b")
    # an existing folder keeps its own answer (its git root, else itself)
    (tmp_path / "x-worktrees" / "feat").mkdir(parents=True)
    assert project_of(tmp_path / "x-worktrees" / "feat") == str(tmp_path / "x-worktrees" / "feat")


def test_a_tools_rule_is_served_for_any_prompt_of_its_project(mem: Memory):
    """The Edit rule is about a tool the agent has in every turn: a prompt that names
    no tool ("continue") gets it in its project, never elsewhere; a project's fact still
    needs a prompt that calls for it."""
    _group(mem, "change the greeting", EDIT_OK, EDIT_BAD, [A] * 4)
    _group(mem, "run the unit tests", GOOD, BAD, [A] * 4)
    mem.learn(use_model=False)
    [rule] = [i for i, s in scopes_of(mem.db).items() if s.kind == "tool"]
    [fact] = [i for i, s in scopes_of(mem.db).items() if s.kind == "project"]
    here = [h.experience.id for h in mem.retrieve("continue until all are done", project=A)]
    assert here == [rule]
    assert mem.retrieve("continue until all are done", project=B) == []
    assert mem.retrieve("continue until all are done") == []
    assert "Read" in mem.context("continue until all are done", project=A)
    assert fact in {h.experience.id for h in mem.retrieve("run the unit tests", project=A)}


_HOOK = "Pre-commit validation failed:\n\n[FORMAT] Code is not formatted.\nRun 'mix format' to fix."
COMMIT_OK = [
    Step("Bash", {"command": "git add -A && git commit -m wip"}, _HOOK, False),
    Step("Bash", {"command": "mix format"}, "", True),
    Step("Bash", {"command": "git add -A && git commit -m wip"}, "[main 1a2b3c4] wip", True),
]
COMMIT_BAD = [Step("Bash", {"command": "git add -A && git commit -m wip"}, _HOOK, False)]


def test_a_projects_version_control_fact_is_served_for_any_prompt_of_its_project(mem: Memory):
    """Real (spotter, Claude Code): a pre-commit check refuses git commit until mix format
    ran. Every task there ends in a commit, so the fact is standing: a prompt that names
    no commit ("continue until all are done") gets it in its project, never elsewhere,
    before the project's tool rules; a fact about another program still needs the prompt."""
    _group(mem, "commit the telemetry work", COMMIT_OK, COMMIT_BAD, [A] * 4)
    _group(mem, "run the unit tests", GOOD, BAD, [A] * 4)
    _group(mem, "change the greeting", EDIT_OK, EDIT_BAD, [A] * 4)
    mem.learn(use_model=False)
    texts = {e.id: e.text for e in mem.experiences()}
    [fmt] = [i for i, t in texts.items() if "mix format" in t]
    [tests] = [i for i, t in texts.items() if "test/unit" in t]
    assert scopes_of(mem.db)[fmt].kind == "project"
    here = [h.experience.id for h in mem.retrieve("continue until all are done", project=A)]
    assert here[0] == fmt and tests not in here
    assert fmt not in {h.experience.id for h in mem.retrieve("continue", project=B)}
    assert "mix format" in mem.context("continue until all are done", project=A)
    assert "mix format" not in mem.context("continue until all are done")


def test_add_and_add_many_scope_lessons_to_a_project_through_one_path(tmp_path):
    """``add(project=...)`` is ``add_many`` of one lesson (issue 31's review): the same
    validation (nothing written when one text is bad) and the same project scope."""
    import pytest

    from agentmem import Memory
    from agentmem.errors import InvalidRecordError

    app = tmp_path / "app"
    app.mkdir()
    with Memory.open(tmp_path / "lib.db", embedder="hash") as mem:
        ids = mem.add_many(["Run make check first.", ("Use uv run pytest.", "test")], project=app)
        one = mem.add("Build with make.", project=app)
        rows = mem.db.execute(
            "SELECT experience_id, project FROM experience_scopes ORDER BY experience_id"
        ).fetchall()
        assert rows == [(i, str(app)) for i in [*ids, one.id]]
        with pytest.raises(InvalidRecordError):
            mem.add_many(["fine", "word " * 40], project=app)
        with pytest.raises(InvalidRecordError):
            mem.add("word " * 40, project=app)
        assert len(mem.experiences()) == 3


_NO_PYTHON = "Exit code 127\nbash: line 1: python: command not found"
PY_OK = [
    Step("Bash", {"command": "python scripts/gen.py"}, _NO_PYTHON, False),
    Step("Bash", {"command": "python3 scripts/gen.py"}, "wrote 3 files", True),
]
PY_BAD = [Step("Bash", {"command": "python scripts/gen.py"}, _NO_PYTHON, False)]


def _interpreter_lesson(mem: Memory, project: str) -> int:
    _group(mem, "regenerate the fixtures", PY_OK, PY_BAD, [project] * 4)
    _group(mem, "run the unit tests", GOOD, BAD, [project] * 4)
    mem.learn(use_model=False)
    [fact] = [e.id for e in mem.experiences() if "python3" in e.text]
    assert fact is not None
    return fact


@pytest.fixture
def no_python(monkeypatch):
    """This machine as the runs' was: python3 on PATH, python not (the claim checks)."""
    import agentmem.claims

    monkeypatch.setattr(
        agentmem.claims, "_which", lambda n: "/usr/bin/python3" * (n == "python3") or None
    )
    return monkeypatch


def test_an_interpreter_under_another_name_is_standing_in_its_project(mem: Memory, no_python):
    """Real (validation replay, Codex in G): python is not on PATH, python3 is, and four
    later prompts ("proceed", an IDE context) each ran python again without the lesson,
    since they name no script. Every task that runs a script meets it, so the fact is
    standing like the version control's: served for any prompt where it holds, never in
    another project; a fact about another program still needs the prompt."""
    fact = _interpreter_lesson(mem, A)
    assert scopes_of(mem.db)[fact].kind == "project"  # another machine's runs: A's fact
    here = [h.experience.id for h in mem.retrieve("proceed", project=A)]
    assert fact in here
    assert fact not in {h.experience.id for h in mem.retrieve("proceed", project=B)}
    [tests] = [e.id for e in mem.experiences() if "test/unit" in e.text]
    assert tests not in here
    # where python is on PATH its claim fails: withheld like any lesson whose claim fails
    import agentmem.claims

    no_python.setattr(agentmem.claims, "_which", lambda n: f"/usr/bin/{n}")
    assert fact not in {h.experience.id for h in mem.retrieve("proceed", project=A)}


PY_INLINE = [
    Step(
        "Bash",
        {"command": "python - <<'PY'\nprint(len(open('a.md').read()))\nPY"},
        _NO_PYTHON,
        False,
    ),
    Step(
        "Bash",
        {"command": 'node -e \'console.log(require("fs").readFileSync("a.md").length)\''},
        "42",
        True,
    ),
]


def test_a_missing_interpreter_is_standing_whatever_ran_the_code(mem: Memory, no_python):
    """Real (validation replay, Claude Code on Windows): python3 did not start and node -e
    ran the inline code; a later prompt in another language named nothing and ran python3
    again. A missing interpreter is met by every task that runs code, so the fact is
    standing like an interpreter under another name."""
    import agentmem.claims

    no_python.setattr(agentmem.claims, "_which", lambda n: f"/usr/bin/{n}" * (n == "node") or None)
    _standing_in_a(mem, "count the words", PY_INLINE, PY_BAD, "node -e")


def _standing_in_a(mem: Memory, task: str, good, bad, marker: str) -> int:
    """Learn ``task``'s correction in project A (beside a test lesson): the lesson whose
    text has ``marker``, served for "proceed" in A and not in B."""
    _group(mem, task, good, bad, [A] * 4)
    _group(mem, "run the unit tests", GOOD, BAD, [A] * 4)
    mem.learn(use_model=False)
    [fact] = [e.id for e in mem.experiences() if marker in e.text]
    assert fact in {h.experience.id for h in mem.retrieve("proceed", project=A)}
    assert fact not in {h.experience.id for h in mem.retrieve("proceed", project=B)}
    return fact


def test_a_standing_machine_fact_is_served_on_its_machine_only(tmp_path, mem: Memory, no_python):
    """The same fact learned from runs of this machine is a machine fact: standing in any
    project here, never on another machine."""
    app = tmp_path / "app"
    app.mkdir()
    fact = _interpreter_lesson(mem, str(app))
    scope = scopes_of(mem.db)[fact]
    assert scope.kind == "machine" and scope.machine == projects.machine_id()
    ids = scope_store.standing_fact_ids(mem.db, str(tmp_path / "other"), 5)
    assert ids == [fact]
    assert scope_store.standing_fact_ids(mem.db, "/x", 5, machine="another") == []
    assert fact in {h.experience.id for h in mem.retrieve("proceed", project=tmp_path / "other")}


RUNNER_BAD = [
    Step(
        "Bash",
        {"command": "python3 -m pytest -q tests"},
        "Exit code 1\n/usr/bin/python3: No module named pytest",
        False,
    )
]
RUNNER_OK = [
    *RUNNER_BAD,
    Step(
        "Bash",
        {"command": "PYTHONPATH=src python3 -m unittest tests.test_alias"},
        "Ran 4 tests\n\nOK",
        True,
    ),
]


def test_a_replaced_test_runner_is_standing_in_its_project(mem: Memory, no_python):
    """Real (validation replay, Codex in G): pytest was not installed and python3 -m
    unittest ran the tests; two later prompts (an IDE's header and "proceed") ran pytest
    again without the lesson, since they name no test. Most changes end in a test run,
    so the runner is standing like the interpreter: any prompt of its project, no other."""
    _standing_in_a(mem, "check the alias parser", RUNNER_OK, RUNNER_BAD, "unittest")
    [tests] = [e.id for e in mem.experiences() if "test/unit" in e.text]
    assert tests not in {h.experience.id for h in mem.retrieve("proceed", project=A)}


GIT_BASH_BAD = [
    Step(
        "Bash",
        {
            "command": "cargo build --manifest-path C:/app/Cargo.toml 2>&1 "
            '| Select-String "error" | Select-Object -First 20'
        },
        "Exit code 127\n/usr/bin/bash: line 1: Select-String: command not found\n"
        "/usr/bin/bash: line 1: Select-Object: command not found",
        False,
    )
]
GIT_BASH_OK = [
    *GIT_BASH_BAD,
    Step(
        "Bash",
        {"command": "cargo build --manifest-path C:/app/Cargo.toml 2>&1 | grep error | head -20"},
        "",
        True,
    ),
]


def _git_bash_fact(tmp_path: Path, mem: Memory) -> int:
    """The Git Bash fact, learned from this machine's runs in ``tmp_path/app``."""
    app = tmp_path / "app"
    app.mkdir()
    _group(mem, "build and show the errors", GIT_BASH_OK, GIT_BASH_BAD, [str(app)] * 4)
    _group(mem, "run the unit tests", GOOD, BAD, [str(app)] * 4)
    mem.learn(use_model=False)
    [fact] = [e.id for e in mem.experiences() if "Git Bash" in e.text]
    return fact


def test_the_shell_the_bash_tool_runs_is_standing_on_its_machine(tmp_path, mem: Memory):
    """Real (validation replay, Claude Code on Windows): "The Bash tool runs Git Bash here:
    PowerShell's commands are not found there" was learned, and a later prompt ("I have
    installed the docker") ran Select-String in Bash again without it. Every command runs
    in that shell, so the fact is standing on its machine, in any project there."""
    fact = _git_bash_fact(tmp_path, mem)
    assert scopes_of(mem.db)[fact].kind == "machine"
    other = tmp_path / "other"
    assert fact in {h.experience.id for h in mem.retrieve("I have installed docker", project=other)}
    assert scope_store.standing_fact_ids(mem.db, str(other), 5, machine="another") == []


def test_a_standing_fact_about_one_clients_tool_is_served_to_that_client_only(
    tmp_path, mem: Memory
):
    """Review 22: "The Bash tool runs Git Bash here" is Claude Code's; Codex on the same
    Windows machine runs PowerShell. Standing on the machine, it is served to Claude Code's
    prompts (and where the client is unknown), never to Codex's standing slots."""
    from agentmem.serving import Query

    fact = _git_bash_fact(tmp_path, mem)

    def ids(client):
        q = Query("I have installed docker", project=tmp_path / "other", client=client)
        return {x.id for x in mem.serve(q).lessons}

    assert fact in ids("claude-code") and fact in ids(None)
    assert fact not in ids("codex")


GLOB_BAD = [
    Step(
        "Bash",
        {"command": "sed -n 1,80p src/app/trips/[id]/page.tsx"},
        "zsh:1: no matches found: src/app/trips/[id]/page.tsx",
        False,
    )
]
GLOB_OK = [
    *GLOB_BAD,
    Step("Bash", {"command": "sed -n 1,80p 'src/app/trips/[id]/page.tsx'"}, "export default", True),
]


def test_the_shells_reading_of_a_glob_is_standing_on_its_machine(tmp_path, mem: Memory):
    """Real (validation replay, Codex in knearme-platform): "In zsh an unquoted path with
    [ ] is a glob pattern: quote the path" was learned, and two later prompts ("review how
    our agent works", "both") passed a Next.js route unquoted again without it. Every path
    goes through that shell, so the fact is standing on its machine."""
    app = tmp_path / "app"
    app.mkdir()
    _group(mem, "show the trip page", GLOB_OK, GLOB_BAD, [str(app)] * 4)
    mem.learn(use_model=False)
    [fact] = [e.id for e in mem.experiences() if "glob pattern" in e.text]
    assert scopes_of(mem.db)[fact].kind == "machine"
    other = tmp_path / "other"
    assert fact in {h.experience.id for h in mem.retrieve("both", project=other)}
    assert scope_store.standing_fact_ids(mem.db, str(other), 5, machine="another") == []


def test_a_subfolder_the_shell_kept_is_the_sessions_project_in_a_transcript_from_elsewhere(
    tmp_path: Path,
):
    """Real (validation replay, Claude Code in pshung's hybrid_sim, a transcript from
    another machine): the Bash tool kept a ``cd hybrid_vsim``, the later turns' cwd was the
    subfolder, and their lessons were filed under a project "hybrid_vsim" that the next
    session's prompts (cwd hybrid_sim) never saw. Where the folders are not here, a turn in
    a subfolder of the session's folder is the session's project. Where they are, the
    folder's own project decides (review 24: a paused or excluded subfolder of no
    repository stays its own, and a fact relative to it is served there)."""
    gone = "/home/nobody/work/hybrid_sim"
    assert projects.session_project(f"{gone}/hybrid_vsim", gone) == gone
    assert projects.session_project(f"{gone}/hybrid_vsim", None) == f"{gone}/hybrid_vsim"
    assert projects.session_project("/elsewhere/x", gone) == "/elsewhere/x"
    assert projects.session_project(f"{gone}_2", gone) == f"{gone}_2"  # a sibling, not inside
    win = "C:\\Users\\kim\\app"
    assert projects.session_project("c:\\Users\\kim\\app\\web", win) == win
    unc = "\\\\Server\\Share\\app"  # a network share: Windows compares it in one case too
    assert projects.session_project("\\\\server\\share\\App\\web", unc) == unc
    assert projects.session_project("/Home/x/web", "/home/x") == "/Home/x/web"  # POSIX: cased
    top = tmp_path / "top"
    (top / "plain").mkdir(parents=True)
    (top / "nested" / ".git").mkdir(parents=True)
    assert projects.session_project(str(top / "plain"), str(top)) == str(top / "plain")
    assert projects.session_project(str(top / "nested"), str(top)) == str(top / "nested")
    (top / ".git").mkdir()
    projects._CACHE.clear()
    assert projects.session_project(str(top / "plain"), str(top)) == str(top)


def test_a_machine_fact_of_unknown_machines_in_several_projects_is_never_global():
    """Review of the first learn over a whole corpus: "The Bash tool runs Git Bash here"
    from transcripts of two Windows machines (machines unknown, folders of two projects)
    was served everywhere. A machine's fact of unknown machines is a fact of where it
    ran: in one session's runs of several projects, the newest run's project."""
    text = "The Bash tool runs Git Bash here: cmd's syntax (dir /b) fails there."
    got = scope_for(text, {A, B}, machines={""}, about="machine", newest=B)
    assert (got.kind, got.project) == ("project", B)
    assert scope_for(text, {A, B}, machines={""}, about="machine", home=A).project == A
    assert scope_for(text, {A}, machines={""}, about="machine").project == A
