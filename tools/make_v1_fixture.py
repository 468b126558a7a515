"""Write ``tests/data/library_v1.db``: a small library at schema version 1 (migration m001 only).

``tests/test_migrations.py`` opens a copy of it with the current agentmem and
checks that the upgrade keeps everything. The file is committed; run this
script again only to rebuild it (its content differs in timestamps)::

    python tools/make_v1_fixture.py [OUT]

It uses the current code paths (recording, feedback, learning without a model,
curation, undo) on a database migrated only up to m001, so everything written
must fit m001's schema; the script verifies that no later migration ran.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentmem import Memory, Step  # noqa: E402
from agentmem.check import check_path  # noqa: E402
from agentmem.db import connect, sqlite3, write  # noqa: E402
from agentmem.migrations import migrations  # noqa: E402
from agentmem.storage.journal import begin_session, fail_session  # noqa: E402

#: The schema the fixture is written at: every migration before this one.
FIRST_LATER = "m002_steps_trajectory_success"
DEFAULT_OUT = ROOT / "tests" / "data" / "library_v1.db"

CD = Step("cd", {"folder": "docs"}, '{"current_working_directory": "docs"}', True)
CAT_OK = Step("cat", {"file_name": "a.txt"}, '{"file_content": "hello"}', True)
CAT_MISSING = Step("cat", {"file_name": "a.txt"}, '{"error": "cat: a.txt: No such file"}', False)
CAT_BADNAME = Step("cat", {"file": "a.txt"}, "Error: unexpected keyword argument 'file'", False)
GIT_STATUS = Step("git_status", {}, "On branch main\nnothing to commit", True)
GIT_PUSH_OK = Step("git_push", {"remote": "origin"}, "pushed 3 commits", True)
GIT_PUSH_BAD = Step("git_push", {"remote": "orgin"}, "Error: no such remote 'orgin'", False)


def build(out: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{out}{suffix}").unlink(missing_ok=True)
    db = connect(out)
    with write(db):
        migrations.apply(db, stop_before=FIRST_LATER)
    # 64 dimensions keep the file small (the vec0 table allocates per-domain chunks).
    mem = Memory(db, path=str(out), embedder="hash-64")
    mem.set_reward_weights(0.4, 0.6)
    mem.set_domain("git_push", "git")
    mem.set_domain("git_status", "git")

    task = "Show me what a.txt in docs says"
    mem.record(task, [CD, CAT_OK], group="read-a", accepted=True)
    mem.record(task, [CAT_MISSING], group="read-a", accepted=False)
    t3 = mem.record(task, [CD, CAT_BADNAME], group="read-a", accepted=False)
    mem.record(task, [CD, CAT_OK], group="read-a", accepted=True, meta={"run": 4})
    mem.feedback(t3, "correct", note="use file_name, not file")

    push = "Push my commits to origin"
    mem.record(push, [GIT_STATUS, GIT_PUSH_OK], group="push", accepted=True, condition="good")
    mem.record(push, [GIT_PUSH_BAD], group="push", accepted=False, condition="bad")
    mem.record(push, [GIT_STATUS, GIT_PUSH_BAD, GIT_PUSH_OK], group="push", accepted=True)
    mem.record("say hello", [], group="empty", accepted=None)  # no steps, no verdict

    kept = mem.add("Use ls -la to see hidden files in a folder.", domain="fs")
    first = mem.learn(use_model=False)
    learned = [
        o.result_id
        for o in first.applied
        if o.op.kind == "ADD" and o.result_id and o.op.domain == "fs"
    ]
    if learned:
        mem.edit(learned[0], "Before calling cat, cd into the folder that holds the file.")
    k8s = mem.add("Check the kubectl context before kubectl apply.", domain="k8s")
    mem.edit(k8s.id or 0, "Run kubectl config current-context before kubectl apply.")
    mem.remove(k8s.id or 0)
    mem.undo(mem.sessions()[-1]["id"])  # brings the k8s lesson back
    doomed = mem.add("Run git fetch before git push to see what changed.", domain="git")
    mem.undo(mem.sessions()[-1]["id"])  # hard-deletes the ADD
    mem.remove(kept.id or 0)  # stays deleted
    failed = begin_session(db, "learn", model="none", embedder="hash-64")
    fail_session(db, failed, "RuntimeError: example failure")
    del doomed
    mem.close()

    conn = sqlite3.connect(str(out), isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("VACUUM")
    names = [r[0] for r in conn.execute("SELECT name FROM _sqlite_migrations ORDER BY id")]
    later = conn.execute(
        "SELECT name FROM sqlite_master WHERE name = 'steps_trajectory_success'"
    ).fetchall()
    conn.close()
    os.chmod(out, 0o644)
    if names != ["m001_initial"] or later:
        raise SystemExit(f"{out} is not at schema version 1: migrations {names}, {later}")
    report = check_path(out)
    kinds = sorted({p.kind for p in report.problems})
    if kinds != ["migrations-pending"]:
        raise SystemExit(f"{out} fails its check: {[str(p) for p in report.problems]}")
    print(f"wrote {out} ({out.stat().st_size:,} bytes): {report.summary_line()}")


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)
