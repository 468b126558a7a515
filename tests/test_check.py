"""check_library: a healthy library passes; each planted inconsistency is named in words."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentmem import Memory
from agentmem.check import Problem, check_library, check_path, kinds
from agentmem.db import connect
from agentmem.migrations import migrations

from .conftest import fs_group, run_cli


def _build(path: Path) -> dict[str, Any]:
    """A library that has been through learn, undo, add, edit and remove; returns its ids."""
    ids: dict[str, Any] = {}
    with Memory.open(path, embedder="hash") as mem:
        ids["kept"] = mem.add("Use ls -la to see hidden files in a folder.", domain="fs").id
        ids["trajectories"] = fs_group(mem)
        first = mem.learn(use_model=False)
        ids["learn"] = first.session_id
        learned = [o.result_id for o in first.applied if o.op.kind == "ADD"]
        assert learned
        mem.edit(learned[0], "Before cat, cd into the file's folder.")
        mem.undo(first.session_id, cascade=True)  # undoes the edit, then the learning
        second = mem.learn(use_model=False)
        ids["learn2"] = second.session_id
        ids["learned"] = [o.result_id for o in second.applied if o.op.kind == "ADD"]
        e = mem.add("Check the kubectl context before kubectl apply.", domain="k8s")
        mem.edit(e.id, "Run kubectl config current-context before kubectl apply.")
        mem.remove(e.id)
        mem.undo(mem.sessions()[-1]["id"])  # the k8s lesson is back
        ids["k8s"] = e.id
        gone = mem.add("Run git fetch before git push.", domain="git")
        mem.undo(mem.sessions()[-1]["id"])  # the ADD is undone: the row is hard-deleted
        ids["gone"] = gone.id
        doomed = mem.add("Run pwd before rm -r.", domain="fs")
        mem.remove(doomed.id)
        ids["deleted"] = doomed.id
        ids["empty_trajectory"] = mem.record("say hello", [], accepted=True)
        mem.feedback(ids["trajectories"][1], "correct", note="wrong folder")
    return ids


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("template") / "lib.db"
    ids = _build(path)
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0
    return path, ids


@pytest.fixture
def lib(template: tuple[Path, dict[str, Any]], tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    src, ids = template
    dst = tmp_path / "lib.db"
    shutil.copyfile(src, dst)
    return dst, ids


def _sql(path: Path, *statements: str, params: list[Any] | None = None) -> None:
    """Change the file behind agentmem's back (no journal, no checks)."""
    db = connect(path)
    try:
        db.execute("PRAGMA foreign_keys = OFF")
        db.execute("PRAGMA ignore_check_constraints = ON")
        for s in statements:
            db.execute(s, params or [])
    finally:
        db.close()


def _problems(path: Path) -> list[Problem]:
    report = check_path(path)
    return list(report.problems)


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# -- healthy ---------------------------------------------------------------------------------


def test_healthy_library_passes(lib):
    path, _ = lib
    report = check_path(path)
    assert report.problems == (), [str(p) for p in report.problems]
    assert report.ok
    s = report.summary
    assert s["schema"] == f"{len(migrations._migrations)}/{len(migrations._migrations)}"
    assert s["trajectories"] == 5 and s["deleted_experiences"] == 1
    with Memory.open(path) as mem:
        assert check_library(mem.db) == []
        # the check runs inside a caller's transaction too, and leaves it open
        mem.db.execute("BEGIN")
        assert check_library(mem.db) == []
        assert mem.db.conn.in_transaction
        mem.db.execute("ROLLBACK")


def test_check_reads_without_writing(lib):
    path, _ = lib
    before = path.stat().st_mtime_ns, path.read_bytes()
    check_path(path)
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before


def test_live_learning_session_is_not_stale(lib):
    path, _ = lib
    _sql(
        path,
        "INSERT INTO sessions (kind, status, started_at, pid) VALUES ('learn', 'running', 'x', ?)",
        params=[os.getpid()],
    )
    assert _problems(path) == []


# -- planted problems ---------------------------------------------------------------------------

Plant = Callable[[Path, dict[str, Any]], None]


def _vector_gone(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"DELETE FROM experience_vectors_items WHERE experience_id = {ids['kept']}")


def _vec0_row_gone(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"DELETE FROM experience_vectors WHERE experience_id = {ids['kept']}")


def _keyword_row_gone(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"DELETE FROM experience_fts WHERE rowid = {ids['kept']}")


def _keyword_row_stray(p: Path, ids: dict[str, Any]) -> None:
    _sql(
        p,
        "INSERT INTO experience_fts (rowid, text, tools, params, errors, domain) "
        f"VALUES ({ids['deleted']}, 'Delete it.', '', '', '', '')",
    )


def _keyword_text_stale(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE experience_fts SET text = 'Use ls.' WHERE rowid = {ids['kept']}")


def _keyword_tool_invented(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE experience_fts SET tools = 'rm' WHERE rowid = {ids['kept']}")


def _keyword_index_dropped(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, "DROP TABLE experience_fts")


def _text_changed(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE experiences SET text = 'Always run rm -rf first.' WHERE id = {ids['kept']}")


def _domain_changed(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE experiences SET domain = 'git' WHERE id = {ids['k8s']}")


def _deleted_behind(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE experiences SET status = 'deleted' WHERE id = {ids['kept']}")


def _revived(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE experiences SET status = 'live' WHERE id = {ids['deleted']}")


def _row_inserted(p: Path, ids: dict[str, Any]) -> None:
    _sql(
        p,
        "INSERT INTO experiences (text, domain, created_at, updated_at) "
        "VALUES ('Sneaky lesson about ls.', 'fs', 'x', 'x')",
    )


def _row_hard_deleted(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"DELETE FROM experiences WHERE id = {ids['deleted']}")


def _undone_add_back(p: Path, ids: dict[str, Any]) -> None:
    _sql(
        p,
        "INSERT INTO experiences (id, text, domain, created_at, updated_at) "
        f"VALUES ({ids['gone']}, 'Run git fetch before git push.', 'git', 'x', 'x')",
    )


def _step_dropped(p: Path, ids: dict[str, Any]) -> None:
    t = ids["trajectories"][0]
    _sql(p, f"DELETE FROM steps WHERE trajectory_id = {t} AND position = 0")


def _step_count_wrong(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE trajectories SET step_count = 7 WHERE id = {ids['trajectories'][1]}")


def _success_rate_wrong(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE trajectories SET success_rate = 0.25 WHERE id = {ids['trajectories'][2]}")


def _step_success_flipped(p: Path, ids: dict[str, Any]) -> None:
    t = ids["trajectories"][1]
    _sql(p, f"UPDATE steps SET success = 1 WHERE trajectory_id = {t}")


def _feedback_kind(p: Path, ids: dict[str, Any]) -> None:
    _sql(
        p,
        "INSERT INTO feedback (trajectory_id, kind, created_at) "
        f"VALUES ({ids['trajectories'][0]}, 'maybe', 'x')",
    )


def _orphan_step(p: Path, ids: dict[str, Any]) -> None:
    _sql(
        p,
        "INSERT INTO steps (trajectory_id, position, tool, domain, params, output, success) "
        "VALUES (999, 0, 'ls', 'fs', '{}', '', 1)",
    )


def _bad_json(p: Path, ids: dict[str, Any]) -> None:
    _sql(
        p, f"UPDATE steps SET params = '{{not json' WHERE trajectory_id = {ids['trajectories'][0]}"
    )


def _bad_setting(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, "INSERT INTO settings (key, value) VALUES ('reward', 'composite')")


def _ops_deleted(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"DELETE FROM operations WHERE session_id = {ids['learn2']}")


def _session_failed(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE sessions SET status = 'failed' WHERE id = {ids['learn2']}")


def _curate_without_ops(p: Path, ids: dict[str, Any]) -> None:
    _sql(
        p,
        "INSERT INTO sessions (kind, status, started_at, finished_at) "
        "VALUES ('curate', 'applied', 'x', 'x')",
    )


def _undo_link_broken(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE sessions SET undone_by = NULL WHERE id = {ids['learn']}")


def _op_malformed(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE operations SET after = NULL WHERE result_id = {ids['kept']} AND kind = 'ADD'")


def _op_after_changed(p: Path, ids: dict[str, Any]) -> None:
    _sql(
        p,
        "UPDATE operations SET after = json_set(after, '$.text', 'Something else.') "
        f"WHERE result_id = {ids['kept']} AND kind = 'ADD'",
    )


def _future_migration(p: Path, ids: dict[str, Any]) -> None:
    _sql(
        p,
        "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
        "VALUES ('agentmem', 'm999_from_the_future', 'x')",
    )


def _table_dropped(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, "DROP TABLE session_groups")


def _view_dropped(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, "DROP VIEW journal")


def _no_migrations(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, "DROP TABLE _sqlite_migrations")


# journal replay: each kind of operation malformed, or touching an experience no ADD created


def _op_after_not_object(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE operations SET after = '[1]' WHERE result_id = {ids['kept']} AND kind = 'ADD'")


def _op_targets_not_json(p: Path, ids: dict[str, Any]) -> None:
    d = ids["deleted"]
    _sql(
        p,
        f"UPDATE operations SET target_ids = '[{d}' WHERE kind = 'DELETE' AND target_ids = '[{d}]'",
    )


def _op_targets_not_ids(p: Path, ids: dict[str, Any]) -> None:
    d = ids["deleted"]
    _sql(
        p,
        f"UPDATE operations SET target_ids = '[true]' "
        f"WHERE kind = 'DELETE' AND target_ids = '[{d}]'",
    )


_UNDO_OPS = "session_id IN (SELECT id FROM sessions WHERE kind = 'undo')"


def _undo_touches_first(p: Path, ids: dict[str, Any]) -> None:
    k = ids["k8s"]
    _sql(
        p,
        f"DELETE FROM operations "
        f"WHERE (result_id = {k} OR target_ids = '[{k}]') AND NOT {_UNDO_OPS}",
    )


def _undo_op_malformed(p: Path, ids: dict[str, Any]) -> None:
    k = ids["k8s"]
    _sql(
        p,
        f"UPDATE operations SET result_id = NULL "
        f"WHERE kind = 'MODIFY' AND result_id = {k} AND {_UNDO_OPS}",
    )


def _add_twice(p: Path, ids: dict[str, Any]) -> None:
    cols = (
        "session_id, group_key, kind, target_ids, result_id, text, domain, before, after, "
        "status, reason, origin, conditions, created_at"
    )
    _sql(
        p,
        f"INSERT INTO operations ({cols}) SELECT {cols} FROM operations "
        f"WHERE kind = 'ADD' AND result_id = {ids['kept']}",
    )


def _rejected_names_result(p: Path, ids: dict[str, Any]) -> None:
    cols = (
        "session_id, group_key, kind, target_ids, result_id, text, domain, before, after, "
        "reason, origin, conditions, created_at"
    )
    _sql(
        p,
        f"INSERT INTO operations ({cols}, status) SELECT {cols}, 'rejected' FROM operations "
        f"WHERE kind = 'ADD' AND result_id = {ids['kept']}",
    )


def _modify_two_targets(p: Path, ids: dict[str, Any]) -> None:
    k = ids["k8s"]
    _sql(
        p,
        f"UPDATE operations SET target_ids = '[{k}, {ids['kept']}]' "
        f"WHERE kind = 'MODIFY' AND result_id = {k} AND NOT {_UNDO_OPS}",
    )


def _modify_first(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"DELETE FROM operations WHERE kind = 'ADD' AND result_id = {ids['k8s']}")


def _confirm_malformed(p: Path, ids: dict[str, Any]) -> None:
    k = ids["k8s"]
    _sql(
        p,
        f"UPDATE operations SET kind = 'CONFIRM', result_id = NULL "
        f"WHERE kind = 'MODIFY' AND result_id = {k} AND NOT {_UNDO_OPS}",
    )


def _confirm_first(p: Path, ids: dict[str, Any]) -> None:
    k = ids["kept"]
    _sql(
        p,
        f"UPDATE operations SET kind = 'CONTRADICT', target_ids = '[{k}]' "
        f"WHERE kind = 'ADD' AND result_id = {k}",
    )


def _delete_two_targets(p: Path, ids: dict[str, Any]) -> None:
    d = ids["deleted"]
    _sql(
        p,
        f"UPDATE operations SET target_ids = '[{d}, {ids['kept']}]' "
        f"WHERE kind = 'DELETE' AND target_ids = '[{d}]'",
    )


def _delete_first(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"DELETE FROM operations WHERE kind = 'ADD' AND result_id = {ids['deleted']}")


def _counts_changed(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE experiences SET support_runs = 99 WHERE id = {ids['learned'][0]}")


def _created_session_wrong(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE experiences SET created_session = {ids['learn2']} WHERE id = {ids['kept']}")


# sessions: undo links, proposals, orphaned operations

_UNDO_OF_LEARN = "(SELECT undone_by FROM sessions WHERE kind = 'learn' AND undone_by IS NOT NULL)"


def _op_proposed(p: Path, ids: dict[str, Any]) -> None:
    _sql(
        p,
        "UPDATE operations SET status = 'proposed' WHERE id = "
        f"(SELECT min(id) FROM operations WHERE session_id = {ids['learn2']})",
    )


def _undo_session_failed(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE sessions SET status = 'failed' WHERE id = {_UNDO_OF_LEARN}")


def _undo_says_nothing(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE sessions SET undoes = NULL WHERE id = {_UNDO_OF_LEARN}")


def _undo_of_nothing(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE sessions SET undoes = 999 WHERE id = {_UNDO_OF_LEARN}")


def _learn_undoes(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE sessions SET undoes = {ids['learn']} WHERE id = {ids['learn2']}")


def _undo_undone(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE sessions SET status = 'undone' WHERE id = {_UNDO_OF_LEARN}")


def _undone_by_another(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE sessions SET undone_by = {ids['learn2']} WHERE id = {ids['learn']}")


def _undone_by_but_applied(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE sessions SET undone_by = {_UNDO_OF_LEARN} WHERE id = {ids['learn2']}")


def _ops_orphaned(p: Path, ids: dict[str, Any]) -> None:
    _sql(p, f"UPDATE operations SET session_id = 999 WHERE session_id = {ids['learn2']}")


PLANTS: list[tuple[Plant, str, str]] = [
    (_vector_gone, "index", "no vector"),
    (_vec0_row_gone, "index", "disagree"),
    (_keyword_row_gone, "keyword-index", "missing from the keyword index"),
    (_keyword_row_stray, "keyword-index", "deleted or do not exist"),
    (_keyword_text_stale, "keyword-index", "disagrees with the text or domain"),
    (_keyword_tool_invented, "keyword-index", "disagrees with the text or domain"),
    (_keyword_index_dropped, "schema", "table experience_fts is missing"),
    (_text_changed, "experience", "another text"),
    (_text_changed, "keyword-index", "disagrees with the text or domain"),
    (_domain_changed, "keyword-index", "disagrees with the text or domain"),
    (_domain_changed, "experience", "another domain"),
    (_deleted_behind, "experience", "is deleted but"),
    (_revived, "experience", "is live but"),
    (_row_inserted, "experience", "not created by any journaled operation"),
    (_row_hard_deleted, "experience", "missing from the table"),
    (_undone_add_back, "experience", "an undo removed"),
    (_step_dropped, "trajectory", "step_count"),
    (_step_dropped, "trajectory", "0..K-1"),
    (_step_count_wrong, "trajectory", "says 7 and has 1"),
    (_success_rate_wrong, "trajectory", "success_rate"),
    (_step_success_flipped, "trajectory", "success_rate"),
    (_feedback_kind, "feedback", "'maybe'"),
    (_orphan_step, "foreign-key", "of steps points to missing rows of trajectories"),
    (_bad_json, "step", "not valid JSON"),
    (_bad_setting, "settings", "not valid JSON"),
    (_ops_deleted, "session", "report lists"),
    (_ops_deleted, "experience", "not created by any journaled operation"),
    (_session_failed, "session", "is failed but the journal holds"),
    (_curate_without_ops, "session", "holds none of its operations"),
    (_undo_link_broken, "session", "undone_by = None"),
    (_op_malformed, "journal", "malformed"),
    (_op_after_changed, "experience", "another text"),
    (_future_migration, "migrations", "newer agentmem"),
    (_table_dropped, "schema", "table session_groups is missing"),
    (_view_dropped, "schema", "view journal is missing"),
    (_no_migrations, "migrations", "not an agentmem library"),
    (_op_after_not_object, "journal", "malformed"),
    (_op_targets_not_json, "journal", "malformed"),
    (_op_targets_not_ids, "journal", "malformed"),
    (_undo_touches_first, "experience", "before any journaled ADD"),
    (_undo_op_malformed, "journal", "malformed"),
    (_add_twice, "journal", "which an earlier operation already created"),
    (_rejected_names_result, "journal", "not applied name a result experience"),
    (_modify_two_targets, "journal", "malformed"),
    (_modify_first, "experience", "before any journaled ADD"),
    (_confirm_malformed, "journal", "malformed"),
    (_confirm_first, "experience", "before any journaled ADD"),
    (_delete_two_targets, "journal", "malformed"),
    (_delete_first, "experience", "before any journaled ADD"),
    (_created_session_wrong, "experience", "another creating session"),
    (_counts_changed, "experience", "other evidence counts"),
    (_op_proposed, "journal", "proposed operation"),
    (_undo_session_failed, "session", "an undo session is always applied"),
    (_undo_says_nothing, "session", "does not say which session it undoes"),
    (_undo_of_nothing, "session", "undoes session 999, which does not exist"),
    (_learn_undoes, "session", "only undo sessions undo"),
    (_undo_undone, "session", "an undo cannot be undone"),
    (_undone_by_another, "session", "which is a learn session undoing None"),
    (_undone_by_but_applied, "session", "is applied but has undone_by"),
    (_ops_orphaned, "journal", "operations belong to sessions that do not exist"),
]


@pytest.mark.parametrize(
    ("plant", "kind", "words"), PLANTS, ids=lambda x: getattr(x, "__name__", x)
)
def test_planted_problem_is_named(lib, plant: Plant, kind: str, words: str):
    path, ids = lib
    plant(path, ids)
    report = check_path(path)
    assert not report.ok
    hits = [p for p in report.problems if p.kind == kind]
    assert hits, [str(p) for p in report.problems]
    assert any(words in p.message for p in hits), [str(p) for p in report.problems]
    for p in report.problems:  # messages are sentences with ids, not tracebacks
        assert "Traceback" not in p.message and len(p.message) < 600


def test_stale_session_is_a_warning(lib):
    path, _ = lib
    pid = _dead_pid()
    _sql(
        path,
        "INSERT INTO sessions (kind, status, started_at, pid) VALUES ('learn', 'running', 'x', ?)",
        params=[pid],
    )
    report = check_path(path)
    assert kinds(report.problems) == {"stale-session"}
    (p,) = report.problems
    assert p.warning and str(pid) in p.message
    assert report.ok


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_killed_unreaped_learner_is_stale(lib):
    path, _ = lib
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        proc.kill()
        deadline = time.monotonic() + 10
        while Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        _sql(
            path,
            "INSERT INTO sessions (kind, status, started_at, pid) "
            "VALUES ('learn', 'running', 'x', ?)",
            params=[proc.pid],
        )
        assert kinds(check_path(path).problems) == {"stale-session"}
    finally:
        proc.wait()


def test_pending_migration_is_a_warning(lib):
    path, _ = lib
    last = migrations._migrations[-1].name
    _sql(path, f"DELETE FROM _sqlite_migrations WHERE name = '{last}'")
    # whatever the last migration created is then unexpected but harmless
    report = check_path(path)
    assert kinds(report.problems) == {"migrations-pending"}
    assert report.ok and last in report.problems[0].message


def test_corrupt_page_is_named(lib):
    path, _ = lib
    db = connect(path)
    (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'steps_tool'").fetchone()
    (page_size,) = db.execute("PRAGMA page_size").fetchone()
    db.execute("PRAGMA journal_mode = DELETE")
    db.close()
    with open(path, "r+b") as fh:
        fh.seek((root - 1) * page_size)
        fh.write(b"\xa5" * page_size)
    report = check_path(path)
    assert not report.ok
    assert "integrity" in kinds(report.problems), [str(p) for p in report.problems]


def test_not_a_library(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"hello, I am not a database\n" * 10)
    (p,) = check_path(junk).problems
    assert p.kind == "unreadable" and "not an SQLite database" in p.message
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    assert "empty" in check_path(empty).problems[0].message
    assert "no such file" in check_path(tmp_path / "nope.db").problems[0].message
    assert not (tmp_path / "nope.db").exists()
    other = tmp_path / "other.db"
    db = connect(other)
    db.execute("CREATE TABLE t (x)")
    db.close()
    (p,) = check_path(other).problems
    assert p.kind == "migrations" and "not an agentmem library" in p.message


def test_many_problems_are_summarised(lib):
    path, _ = lib
    db = connect(path)
    db.execute("PRAGMA ignore_check_constraints = ON")
    for i in range(40):
        db.execute(
            "INSERT INTO experiences (text, domain, created_at, updated_at) "
            "VALUES (?, '', 'x', 'x')",
            [f"lesson {i}"],
        )
    db.close()
    msgs = [p.message for p in check_path(path).problems if p.kind == "experience"]
    assert any("40 experiences" in m and "and 30 more" in m for m in msgs), msgs


# -- the command ------------------------------------------------------------------------------


def test_cli_check_exit_codes(lib, tmp_path):
    path, ids = lib
    r = run_cli("check", db=path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().startswith("ok: ")
    r = run_cli("check", "--json", db=path)
    data = json.loads(r.stdout)
    assert r.returncode == 0 and data["ok"] is True and data["problems"] == []
    _text_changed(path, ids)
    r = run_cli("check", db=path)
    assert r.returncode == 1
    out = r.stdout.decode()
    assert "error [experience]" in out and "another text" in out
    r = run_cli("check", "--json", db=path)
    data = json.loads(r.stdout)
    assert r.returncode == 1 and data["ok"] is False
    # the text changed behind agentmem's back: the journal and the keyword index disagree
    assert {p["kind"] for p in data["problems"]} == {"experience", "keyword-index"}
    r = run_cli("check", db=tmp_path / "missing.db")
    assert r.returncode == 1 and b"no such file" in r.stdout
    assert not (tmp_path / "missing.db").exists()
    r = run_cli("check", "--help", db=path)
    assert b"Examples:" in r.stdout


def test_merge_and_its_undo_pass(lib):
    """A MERGE (one target rewritten, the others deleted) and its undo replay exactly."""
    from agentmem.db import write
    from agentmem.records import Operation
    from agentmem.storage.journal import apply_operations

    path, _ = lib
    with Memory.open(path, embedder="hash") as mem:
        a = mem.add("Run ls before rm.", domain="fs")
        b = mem.add("Run ls before rm -r.", domain="fs")
        text = "Run ls before rm or rm -r to see what goes."
        lib_ = mem._retriever()
        vectors = lib_.embed([text])
        with write(mem.db):
            sid = mem.db.execute(
                "INSERT INTO sessions (kind, status, started_at, finished_at) "
                "VALUES ('curate', 'applied', 'x', 'x')"
            ).lastrowid
            (done,) = apply_operations(
                mem.db,
                sid,
                [Operation("MERGE", text=text, targets=(a.id, b.id), origin="user")],
                vectors,
            )
        assert done.status == "applied"
        assert check_library(mem.db) == []
        assert {e.id for e in mem.experiences()} >= {a.id} and b.id not in {
            e.id for e in mem.experiences()
        }
        mem.undo(sid)
        assert check_library(mem.db) == []
        assert mem.get_experience(b.id).text == "Run ls before rm -r."
    # and a later change behind the journal's back to the merged-away row is seen
    _sql(path, f"UPDATE experiences SET text = 'changed' WHERE id = {b.id}")
    assert any("another text" in p.message for p in _problems(path))


def test_report_without_an_operations_list_is_not_compared(lib):
    """A learning session's report is compared with the journal only when it lists operations."""
    path, ids = lib
    for report in ("[1, 2]", '{"operations": 3}'):
        _sql(path, f"UPDATE sessions SET report = '{report}' WHERE id = {ids['learn2']}")
        assert _problems(path) == []
