"""Verifying a library file: is it sound SQLite, at a schema this agentmem knows, and consistent?

:func:`check_library` reads one snapshot of an open library and returns the
:class:`Problem` s it finds, in words for people; an empty list means the file
is sound. :func:`check_path` opens a file read-only (it never creates, migrates
or repairs anything) and adds a summary of what the file holds. What is checked:

* SQLite itself: ``PRAGMA integrity_check`` and ``PRAGMA foreign_key_check``;
* the schema: every migration this agentmem knows is applied (an older file is a
  warning: opening it with agentmem upgrades it), none it does not know (a file
  from a newer agentmem is an error), and every table, column, index and view
  the applied migrations create is present;
* the vector index agrees with the live experiences (:func:`agentmem.storage.vector_index.check`),
  and so does the keyword index (:func:`agentmem.storage.keyword_index.check`);
* the journal agrees with the library: replaying the applied operations of the
  applied, undone and undo sessions, oldest first, leaves every experience
  exactly as the ``experiences`` table has it (text, domain, live or deleted, or
  gone after an undone ADD; a CONFIRM or CONTRADICT keeps the text; from m009 on,
  the evidence counts the latest operation's after state recorded); every
  experience row was created by a journaled ADD;
  operation rows are well formed;
* sessions: only applied and undone sessions hold applied operations, a learning
  session's report counts the operations the journal holds, a curation session
  journals its change, undo links go both ways;
  a ``running`` session whose process is gone is a warning (``stale-session``);
* trajectories: steps are numbered 0..K-1, ``step_count`` and ``success_rate``
  agree with the steps; enumerated columns hold allowed values; JSON columns
  hold JSON;
* pruned trajectories (``agentmem prune``): every trajectory a learning session
  names is in the file or marked pruned, and none marked pruned is still there.

Every query reads whole tables at most once, so a check of a library with
100,000 steps takes well under a second (plus ``integrity_check``, which reads
every page).
"""

from __future__ import annotations

import functools
import json
import os
import urllib.parse
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

import attrs
from sqlite_utils import Database

from .db import connect, sqlite3
from .files import open_regular
from .migrations import KNOWN_MIGRATIONS, SCHEMA_VERSION, migrations, unknown_migrations
from .storage import keyword_index, vector_index
from .storage.journal import process_alive

__all__ = [
    "WARNING_KINDS",
    "CheckReport",
    "Problem",
    "check_library",
    "check_path",
    "kinds",
    "open_readonly",
    "summarize",
]

#: Kinds of problem that are warnings: the file is sound, but someone should know.
WARNING_KINDS = frozenset({"stale-session", "migrations-pending"})

#: Most ids named in one message.
_SHOWN = 10

_SQLITE_MAGIC = b"SQLite format 3\x00"


@attrs.frozen
class Problem:
    """One thing wrong with a library: a short ``kind`` for machines, a ``message`` for people.

    Kinds: ``unreadable``, ``integrity``, ``foreign-key``, ``migrations``,
    ``migrations-pending`` (warning), ``schema``, ``index``, ``keyword-index``, ``journal``,
    ``experience``, ``session``, ``stale-session`` (warning), ``trajectory``,
    ``step``, ``feedback``, ``settings``, ``served``.
    """

    kind: str
    message: str

    @property
    def warning(self) -> bool:
        """True for a warning (see :data:`WARNING_KINDS`), False for an error."""
        return self.kind in WARNING_KINDS

    @property
    def level(self) -> str:
        return "warning" if self.warning else "error"

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "level": self.level, "message": self.message}

    def __str__(self) -> str:
        return f"{self.level} [{self.kind}]: {self.message}"


@attrs.frozen
class CheckReport:
    """What :func:`check_path` found: the problems and counts of what the file holds."""

    path: str
    problems: tuple[Problem, ...]
    summary: dict[str, Any] = attrs.field(factory=dict)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if not p.warning]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.warning]

    @property
    def ok(self) -> bool:
        """True when nothing is wrong (warnings do not count)."""
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "summary": self.summary,
            "problems": [p.as_dict() for p in self.problems],
        }

    def summary_line(self) -> str:
        s = self.summary
        if not s:
            return self.path
        parts = [
            f"schema {s['schema']}",
            f"{s['trajectories']} trajectories"
            + (f" ({s['pruned']} pruned)" if s.get("pruned") else ""),
            f"{s['steps']} steps",
            f"{s['feedback']} feedback events",
            f"{s['experiences']} live experiences ({s['deleted_experiences']} deleted)",
            f"{s['sessions']} sessions",
            f"{s['operations']} journaled operations",
        ]
        return f"{self.path}: " + ", ".join(parts)


def _ids_text(ids: Sequence[Any]) -> str:
    shown = ", ".join(str(i) for i in ids[:_SHOWN])
    return shown + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _v(n: int, one: str, many: str) -> str:
    """The verb that agrees with ``n``: ``_v(1, "is", "are")``."""
    return one if n == 1 else many


def _all(ids: Sequence[Any]) -> str:
    """`` (all: ids)`` after an example, when there is more than the example."""
    return f" (all: {_ids_text(ids)})" if len(ids) > 1 else ""


def _short(text: Any, limit: int = 60) -> str:
    s = str(text)
    return repr(s if len(s) <= limit else s[: limit - 1] + "…")


# -- opening --------------------------------------------------------------------------


def open_readonly(path: str | os.PathLike[str]) -> Database:
    """Open an existing library read-only (sqlite-vec loaded; nothing created or changed)."""
    p = Path(path)
    if not p.exists():
        from .errors import AgentMemError

        raise AgentMemError(f"{p}: no such file")
    uri = "file:" + urllib.parse.quote(str(p.resolve())) + "?mode=ro"
    db = connect(uri)
    # Whole-table reads: map the file instead of copying it page by page (about 25% faster).
    db.execute("PRAGMA mmap_size = 268435456")
    return db


def check_path(path: str | os.PathLike[str]) -> CheckReport:
    """Check the library file at ``path`` (read-only) and count what it holds."""
    p = Path(path)
    name = str(p)
    if not p.exists():
        return CheckReport(name, (Problem("unreadable", f"{name}: no such file"),))
    if p.is_dir():
        return CheckReport(name, (Problem("unreadable", f"{name} is a folder, not a file"),))
    try:
        with open_regular(p, "rb") as fh:  # a FIFO or a device: refused, never waited on
            head = fh.read(len(_SQLITE_MAGIC))
    except OSError as e:
        why = e.strerror or str(e)
        return CheckReport(name, (Problem("unreadable", f"cannot read {name}: {why}"),))
    if not head:
        return CheckReport(
            name, (Problem("unreadable", f"{name} is empty: not an agentmem library (yet)"),)
        )
    if head != _SQLITE_MAGIC:
        return CheckReport(
            name,
            (
                Problem(
                    "unreadable", f"{name} is not an SQLite database, so not an agentmem library"
                ),
            ),
        )
    try:
        db = open_readonly(p)
    except (sqlite3.Error, OSError) as e:
        return CheckReport(name, (Problem("unreadable", f"cannot open {name}: {e}"),))
    try:
        problems = check_library(db)
        summary: dict[str, Any] = {}
        if not any(p.kind in ("unreadable", "migrations") for p in problems):
            try:
                summary = summarize(db)
            except sqlite3.Error:
                summary = {}
        return CheckReport(name, tuple(problems), summary)
    finally:
        db.close()


def summarize(db: Database) -> dict[str, Any]:
    """Counts of what a library holds, and its schema version (applied / known)."""
    q = db.execute

    def count(sql: str) -> int:
        return int(q(sql).fetchone()[0])

    applied = _applied_migrations(db) or []
    return {
        "schema": f"{len(applied)}/{SCHEMA_VERSION}",
        "trajectories": count("SELECT count(*) FROM trajectories"),
        "steps": count("SELECT count(*) FROM steps"),
        "feedback": count("SELECT count(*) FROM feedback"),
        "experiences": count("SELECT count(*) FROM experiences WHERE status = 'live'"),
        "deleted_experiences": count("SELECT count(*) FROM experiences WHERE status != 'live'"),
        "sessions": count("SELECT count(*) FROM sessions"),
        "operations": count("SELECT count(*) FROM operations"),
        "pruned": count("SELECT count(*) FROM pruned_trajectories")
        if _has_table(db, "pruned_trajectories")
        else 0,
    }


def _has_table(db: Database, name: str) -> bool:
    sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    return db.execute(sql, [name]).fetchone() is not None


# -- the check ------------------------------------------------------------------------


def check_library(db: Database) -> list[Problem]:
    """Every problem with the library open as ``db``, errors and warnings (see the module doc).

    Reads one snapshot: inside the caller's transaction, or a read transaction
    of its own. Writes nothing.
    """
    conn = db.conn
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        return _check(db)
    finally:
        if own and conn.in_transaction:
            conn.execute("ROLLBACK")


def _check(db: Database) -> list[Problem]:
    problems: list[Problem] = []
    try:
        problems += _check_integrity(db)
    except sqlite3.DatabaseError as e:
        return [Problem("integrity", f"SQLite cannot read the file: {e}")]
    applied = _applied_migrations(db)
    if applied is None:
        return [
            *problems,
            Problem(
                "migrations",
                "the file has no agentmem migrations table (_sqlite_migrations): "
                "it is not an agentmem library",
            ),
        ]
    known = KNOWN_MIGRATIONS
    unknown = unknown_migrations(applied)
    if not applied:
        return [
            *problems,
            Problem(
                "migrations",
                "no agentmem migration was ever applied to this file: it is not an "
                "agentmem library",
            ),
        ]
    if unknown:
        return [
            *problems,
            Problem(
                "migrations",
                f"the file was written by a newer agentmem: it has "
                f"{_plural(len(unknown), 'migration')} this version does not know "
                f"({', '.join(unknown)}); upgrade agentmem to use it",
            ),
        ]
    pending = [n for n in known if n not in applied]
    if pending:
        problems.append(
            Problem(
                "migrations-pending",
                f"the file is at schema version {len(applied)} of {len(known)} (pending: "
                f"{', '.join(pending)}); opening it with agentmem (any command but check) "
                "upgrades it",
            )
        )
    schema_problems, missing = _check_schema(db, tuple(n for n in known if n in applied))
    problems += schema_problems
    for what, needs, fn in _checks(missing, pending):
        if missing & set(needs):
            continue
        try:
            problems += fn(db)
        except sqlite3.OperationalError as e:
            problems.append(Problem("schema", f"could not check {what}: {e}"))
        except sqlite3.DatabaseError as e:
            problems.append(Problem("integrity", f"could not read {what}: {e}"))
    return problems


def _checks(
    missing: AbstractSet[str], pending: Sequence[str]
) -> list[tuple[str, tuple[str, ...], Callable[[Database], list[Problem]]]]:
    """The checks after the schema's: what each checks, the tables it needs, and the check."""
    return [
        ("the foreign keys", (), _check_foreign_keys),
        ("the values", (), functools.partial(_check_values, missing=missing)),
        (
            "the vector index",
            ("experiences", "settings"),
            functools.partial(
                _check_index, upgrade_pending="m003_index_blocks_hold_vectors" in pending
            ),
        ),
        (
            "the keyword index",
            ("experiences", "settings", "experience_fts"),
            functools.partial(_check_keywords, upgrade_pending="m008_keyword_index" in pending),
        ),
        ("the sessions", ("sessions", "operations", "session_groups"), _check_sessions),
        ("the journal", ("experiences", "sessions", "operations"), _check_journal),
        ("the trajectories", ("trajectories", "steps"), _check_trajectories),
        ("the pruned trajectories", ("trajectories", "session_groups"), _check_pruned),
        ("the scopes", ("experience_scopes",), _check_scopes),
        ("the served lessons", ("served",), _check_served),
    ]


def _check_served(db: Database) -> list[Problem]:
    """``served``'s invariants (:func:`agentmem.storage.served.problems`)."""
    from .storage.served import problems

    if not _has_table(db, "served"):  # an older file: m016 is pending
        return []
    return [Problem("served", m) for m in problems(db)]


def _check_integrity(db: Database) -> list[Problem]:
    rows = [str(r[0]) for r in db.execute("PRAGMA integrity_check(50)").fetchall()]
    if rows == ["ok"]:
        return []
    return [Problem("integrity", f"SQLite integrity check: {r}") for r in rows]


def _applied_migrations(db: Database) -> list[str] | None:
    table = migrations.migrations_table
    if (
        db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [table]
        ).fetchone()
        is None
    ):
        return None
    return [
        str(r[0])
        for r in db.execute(
            f"SELECT name FROM {table} WHERE migration_set = ? ORDER BY rowid", [migrations.name]
        )
    ]


@functools.lru_cache(maxsize=8)
def _reference_schema(applied: tuple[str, ...]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """name -> (type, columns) of what the migrations ``applied`` create, from an empty file."""
    ref = Database(memory=True)
    try:
        skip = [name for name in KNOWN_MIGRATIONS if name not in applied]
        migrations.apply(ref, stop_before=skip or None)
        return _schema_of(ref)
    finally:
        ref.close()


def _schema_of(db: Database) -> dict[str, tuple[str, tuple[str, ...]]]:
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for kind, name in db.execute(
        "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'index', 'view') "
        "AND name NOT LIKE 'sqlite_%'"
    ).fetchall():
        cols: tuple[str, ...] = ()
        if kind == "table":
            cols = tuple(str(r[1]) for r in db.execute(f"PRAGMA table_info([{name}])"))
        out[str(name)] = (str(kind), cols)
    return out


def _check_schema(db: Database, applied: tuple[str, ...]) -> tuple[list[Problem], set[str]]:
    """Problems with the schema, and the names of the tables that are missing or lack columns."""
    want = _reference_schema(applied)
    have = _schema_of(db)
    problems = []
    missing: set[str] = set()
    for name, (kind, cols) in sorted(want.items(), key=lambda kv: (kv[1][0] != "table", kv[0])):
        got = have.get(name)
        if got is None or got[0] != kind:
            problems.append(Problem("schema", f"{kind} {name} is missing from the file"))
            if kind == "table":
                missing.add(name)
            continue
        lacking = [c for c in cols if c not in got[1]]
        if lacking:
            missing.add(name)
            problems.append(
                Problem(
                    "schema",
                    f"table {name} lacks {_plural(len(lacking), 'column')}: {', '.join(lacking)}",
                )
            )
    return problems, missing


def _check_foreign_keys(db: Database) -> list[Problem]:
    bad: dict[tuple[str, str], list[int]] = defaultdict(list)
    for table, rowid, parent, _fkid in db.execute("PRAGMA foreign_key_check").fetchall():
        bad[(str(table), str(parent))].append(rowid)
    return [
        Problem(
            "foreign-key",
            f"{_plural(len(rows), 'row')} of {table} {_v(len(rows), 'points', 'point')} to "
            f"missing rows of {parent}: "
            f"rowid {_ids_text(rows)}",
        )
        for (table, parent), rows in sorted(bad.items())
    ]


#: (table, column, allowed values, problem kind) for every enumerated column.
_ENUMS: tuple[tuple[str, str, tuple[Any, ...], str], ...] = (
    ("steps", "success", (0, 1), "step"),
    ("trajectories", "state_ok", (0, 1, None), "trajectory"),
    ("feedback", "kind", ("accept", "correct", "reject"), "feedback"),
    ("sessions", "kind", ("learn", "curate", "undo"), "session"),
    ("sessions", "status", ("running", "applied", "dry-run", "failed", "undone"), "session"),
    ("experiences", "status", ("live", "deleted"), "experience"),
    (
        "operations",
        "kind",
        ("ADD", "MODIFY", "DELETE", "MERGE", "CONFIRM", "CONTRADICT"),
        "journal",
    ),
    ("operations", "status", ("applied", "rejected", "proposed"), "journal"),
    ("session_groups", "status", ("used", "degenerate", "no-findings"), "session"),
    ("session_groups", "kind", ("exact", "similar", "correction"), "session"),
    ("experience_scopes", "kind", ("project", "machine", "tool", None), "scope"),
)

#: (table, key column, JSON column, may be NULL, problem kind) for every JSON column.
_JSON: tuple[tuple[str, str, str, bool, str], ...] = (
    ("settings", "key", "value", False, "settings"),
    ("trajectories", "id", "meta", False, "trajectory"),
    ("trajectories", "id", "essential_actions", True, "trajectory"),
    ("steps", "id", "params", False, "step"),
    ("sessions", "id", "params", False, "session"),
    ("sessions", "id", "report", False, "session"),
    ("operations", "id", "target_ids", False, "journal"),
    ("operations", "id", "before", False, "journal"),
    ("operations", "id", "after", True, "journal"),
    ("session_groups", "session_id", "trajectory_ids", False, "session"),
    ("experience_scopes", "experience_id", "support", False, "scope"),
)


def _check_values(db: Database, missing: AbstractSet[str] = frozenset()) -> list[Problem]:
    """Enumerated columns hold allowed values (CHECK constraints can be bypassed); JSON is JSON."""
    problems = []
    for table, col, allowed, kind in _ENUMS:
        if table in missing:
            continue
        if col not in {str(r[1]) for r in db.execute(f"PRAGMA table_info([{table}])")}:
            continue  # added by a migration the file has not had yet (a warning already)
        vals = [v for v in allowed if v is not None]
        marks = ",".join("?" * len(vals))
        null_ok = None in allowed
        where = f"{col} NOT IN ({marks})" + ("" if null_ok else f" OR {col} IS NULL")
        rows = db.execute(
            f"SELECT {col}, count(*) FROM {table} WHERE {where} GROUP BY {col}", vals
        ).fetchall()
        for value, n in rows:
            problems.append(
                Problem(
                    kind,
                    f"{_plural(n, 'row')} of {table} {_v(n, 'has', 'have')} "
                    f"{col} = {_short(value)}; allowed: {', '.join(map(str, allowed))}",
                )
            )
    for table, key, col, nullable, kind in _JSON:
        if table in missing or not _has_table(db, table):
            continue  # missing, or added by a migration the file has not had yet
        if nullable:
            cond = f"({col} IS NOT NULL AND json_valid({col}) = 0)"
        else:
            cond = f"({col} IS NULL OR json_valid({col}) = 0)"
        bad = [
            r[0]
            for r in db.execute(
                f"SELECT {key} FROM {table} WHERE {cond} ORDER BY {key} LIMIT {_SHOWN + 1}"
            )
        ]
        if bad:
            n = db.execute(f"SELECT count(*) FROM {table} WHERE {cond}").fetchone()[0]
            problems.append(
                Problem(
                    kind,
                    f"{_plural(n, 'row')} of {table} {_v(n, 'has', 'have')} "
                    f"a {col} that is not valid JSON "
                    f"({key} {_ids_text(bad[:_SHOWN])}{' ...' if n > _SHOWN else ''})",
                )
            )
    return problems


def _check_scopes(db: Database) -> list[Problem]:
    """A lesson served on one machine names that machine and no project; any other names
    no machine (from m011 on: ``experience_scopes.kind`` and ``machine``)."""
    cols = {str(r[1]) for r in db.execute("PRAGMA table_info(experience_scopes)")}
    if not {"kind", "machine"} <= cols:
        return []
    bad = db.execute(
        "SELECT experience_id, session_id FROM experience_scopes WHERE "
        "(kind = 'machine' AND (machine IS NULL OR machine = '' OR project IS NOT NULL)) "
        "OR (coalesce(kind, '') != 'machine' AND machine IS NOT NULL) "
        f"ORDER BY experience_id LIMIT {_SHOWN + 1}"
    ).fetchall()
    return [
        Problem(
            "scope",
            f"experience {eid}'s scope from session {sid} is inconsistent: a machine scope "
            "must name its machine and no project, any other scope no machine",
        )
        for eid, sid in bad[:_SHOWN]
    ]


def _check_index(db: Database, *, upgrade_pending: bool = False) -> list[Problem]:
    return [
        Problem("index", msg) for msg in vector_index.check(db, upgrade_pending=upgrade_pending)
    ]


def _check_keywords(db: Database, *, upgrade_pending: bool = False) -> list[Problem]:
    if upgrade_pending:
        return []  # opening the library creates and fills it
    why = keyword_index.stale(db)
    if why is not None:
        return [Problem("migrations-pending", why)]
    return [Problem("keyword-index", msg) for msg in keyword_index.check(db)]


# -- sessions and the journal ----------------------------------------------------------


@attrs.frozen
class _Session:
    """One row of ``sessions``, as the check reads it."""

    kind: str
    status: str
    undoes: int | None
    undone_by: int | None
    pid: int | None
    report: str


def _check_sessions(db: Database) -> list[Problem]:
    sessions = {
        int(r[0]): _Session(str(r[1]), str(r[2]), r[3], r[4], r[5], str(r[6]))
        for r in db.execute("SELECT id, kind, status, undoes, undone_by, pid, report FROM sessions")
    }
    counts = _operation_counts(db)
    problems: list[Problem] = []
    for sid in sorted(sessions):
        session, ops = sessions[sid], counts.get(sid, {})
        problems += _session_status_problems(sid, session, ops)
        problems += _undoes_problems(sid, session, sessions)
        problems += _undone_by_problems(sid, session, sessions)
        problems += _session_journal_problems(sid, session, ops)
    problems += _session_groups_problems(db, sessions)
    orphans = sorted(set(counts) - set(sessions))
    if orphans:
        problems.append(
            Problem(
                "journal", f"operations belong to sessions that do not exist: {_ids_text(orphans)}"
            )
        )
    return problems


def _operation_counts(db: Database) -> dict[int, dict[str, int]]:
    """session id -> operation status -> how many operations of that session have it."""
    counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for sid, status, n in db.execute(
        "SELECT session_id, status, count(*) FROM operations GROUP BY session_id, status"
    ):
        counts[int(sid)][str(status)] = int(n)
    return counts


def _session_status_problems(sid: int, s: _Session, ops: dict[str, int]) -> list[Problem]:
    """A session's status agrees with its process and with the operations it journaled."""
    problems = []
    n_applied = ops.get("applied", 0)
    if s.status == "running" and not process_alive(s.pid):
        problems.append(
            Problem(
                "stale-session",
                f"{s.kind} session {sid} is marked running but its process {s.pid} is gone: it "
                "was killed before applying anything (the next `agentmem learn` marks it "
                "failed)",
            )
        )
    if s.status in ("running", "failed", "dry-run") and n_applied:
        problems.append(
            Problem(
                "session",
                f"{s.kind} session {sid} is {s.status} but the journal holds "
                f"{_plural(n_applied, 'applied operation')} of it",
            )
        )
    if ops.get("proposed") and s.status != "dry-run":
        problems.append(
            Problem(
                "journal",
                f"{s.kind} session {sid} is {s.status} but the journal holds "
                f"{_plural(ops['proposed'], 'proposed operation')} of it (only a dry run "
                "proposes)",
            )
        )
    return problems


def _undoes_problems(sid: int, s: _Session, sessions: dict[int, _Session]) -> list[Problem]:
    """An undo session is applied and undoes a session that names it back; no other undoes."""
    if s.kind != "undo":
        if s.undoes is None:
            return []
        return [
            Problem(
                "session",
                f"{s.kind} session {sid} has undoes = {s.undoes}; only undo sessions undo",
            )
        ]
    problems = []
    if s.status != "applied":
        problems.append(
            Problem(
                "session", f"undo session {sid} is {s.status}; an undo session is always applied"
            )
        )
    target = sessions.get(s.undoes) if s.undoes is not None else None
    if s.undoes is None:
        problems.append(
            Problem("session", f"undo session {sid} does not say which session it undoes")
        )
    elif target is None:
        problems.append(
            Problem(
                "session", f"undo session {sid} undoes session {s.undoes}, which does not exist"
            )
        )
    elif target.status != "undone" or target.undone_by != sid:
        problems.append(
            Problem(
                "session",
                f"undo session {sid} undoes session {s.undoes}, but that session "
                f"is {target.status} with undone_by = {target.undone_by}",
            )
        )
    return problems


def _undone_by_problems(sid: int, s: _Session, sessions: dict[int, _Session]) -> list[Problem]:
    """An undone session names the undo session that undoes it; no other session does."""
    if s.status != "undone":
        if s.undone_by is None:
            return []
        return [
            Problem(
                "session", f"{s.kind} session {sid} is {s.status} but has undone_by = {s.undone_by}"
            )
        ]
    undo = sessions.get(s.undone_by) if s.undone_by is not None else None
    if s.kind == "undo":
        msg = f"undo session {sid} is marked undone; an undo cannot be undone"
    elif undo is None:
        msg = (
            f"{s.kind} session {sid} is undone but no undo session is "
            f"recorded for it (undone_by = {s.undone_by})"
        )
    elif undo.kind != "undo" or undo.undoes != sid:
        msg = (
            f"{s.kind} session {sid} is undone by session {s.undone_by}, which "
            f"is a {undo.kind} session undoing {undo.undoes}"
        )
    else:
        return []
    return [Problem("session", msg)]


def _session_journal_problems(sid: int, s: _Session, ops: dict[str, int]) -> list[Problem]:
    """A curation session journaled its change; a learning session's report counts its journal."""
    if s.status not in ("applied", "undone"):
        return []
    n_applied = ops.get("applied", 0)
    if s.kind == "curate" and not n_applied:
        return [
            Problem(
                "session",
                f"curation session {sid} is {s.status} but the journal holds none of its "
                "operations",
            )
        ]
    if s.kind != "learn":
        return []
    try:
        listed = json.loads(s.report).get("operations")
    except (ValueError, AttributeError):
        listed = None
    if not isinstance(listed, list):
        return []
    want_applied = sum(1 for o in listed if isinstance(o, dict) and o.get("status") == "applied")
    total = sum(ops.values())
    if len(listed) == total and want_applied == n_applied:
        return []
    return [
        Problem(
            "session",
            f"learning session {sid}'s report lists {len(listed)} operations "
            f"({want_applied} applied) but the journal holds {total} "
            f"({n_applied} applied)",
        )
    ]


def _session_groups_problems(db: Database, sessions: dict[int, _Session]) -> list[Problem]:
    """Only applied or undone learning sessions learned groups."""

    def learned(s: _Session | None) -> bool:
        return s is not None and s.kind == "learn" and s.status in ("applied", "undone")

    bad_groups = [
        sid
        for (sid,) in db.execute("SELECT DISTINCT session_id FROM session_groups")
        if not learned(sessions.get(int(sid)))
    ]
    if not bad_groups:
        return []
    return [
        Problem(
            "session",
            f"session_groups names groups learned by sessions that are not applied "
            f"or undone learning sessions: {_ids_text(sorted(bad_groups))}",
        )
    ]


@attrs.define
class _Expected:
    """What the journal says an experience is after the latest operation that touched it."""

    state: str  # 'live', 'deleted' or 'gone' (an undone ADD removed the row)
    text: str | None
    domain: str | None
    op_id: int
    session_id: int
    counts: tuple[Any, ...] | None = None  # the evidence counts, when the after state holds them


@attrs.frozen
class _Op:
    """One applied operation of an applied or undone session, as the replay reads it."""

    id: int
    session_id: int
    kind: str
    targets: list[int]
    result_id: Any  # the column as stored: an experience id, or None
    has_after: bool  # the after state is a JSON object with a text
    text: Any
    domain: str | None


@attrs.define
class _Replay:
    """The journal replayed oldest first: what it says each experience is, and what is wrong."""

    expected: dict[int, _Expected] = attrs.Factory(dict)
    created: dict[int, int] = attrs.Factory(dict)  # experience id -> session whose ADD created it
    uncreated: dict[int, int] = attrs.Factory(dict)  # experience id -> first op before any ADD
    malformed: list[int] = attrs.Factory(list)  # operation ids
    problems: list[Problem] = attrs.Factory(list)
    op_counts: dict[int, tuple[Any, ...]] = attrs.Factory(dict)  # m009 on: the after counts

    def apply(self, op: _Op, *, undo: bool) -> bool:
        """Replay ``op`` (of an undo session when ``undo``); False when it is malformed."""
        if undo:
            return self._undo(op)
        if op.kind == "ADD":
            return self._add(op)
        if op.kind in ("MODIFY", "MERGE"):
            return self._rewrite(op)
        if op.kind in ("CONFIRM", "CONTRADICT"):
            return self._judge(op)
        if op.kind == "DELETE":
            return self._delete(op)
        return True

    def _undo(self, op: _Op) -> bool:
        """An undo removes an ADD's row (DELETE) or restores an earlier state (MODIFY)."""
        if op.kind == "DELETE" and len(op.targets) == 1 and op.result_id is None:
            self.expected[op.targets[0]] = _Expected("gone", None, None, op.id, op.session_id)
            return True
        if op.kind == "MODIFY" and op.has_after and op.targets == [op.result_id]:
            self._live(op)
            return True
        return False

    def _add(self, op: _Op) -> bool:
        if op.result_id is None or not op.has_after or op.targets:
            return False
        if op.result_id in self.expected or op.result_id in self.created:
            self.problems.append(
                Problem(
                    "journal",
                    f"operation {op.id} (session {op.session_id}) ADDs experience "
                    f"{op.result_id}, which an earlier operation already created",
                )
            )
        self.created[op.result_id] = op.session_id
        self.expected[op.result_id] = _Expected("live", op.text, op.domain, op.id, op.session_id)
        return True

    def _rewrite(self, op: _Op) -> bool:
        """A MODIFY rewrites its one target; a MERGE rewrites the first and deletes the rest."""
        t = op.targets
        if (
            not op.has_after
            or not t
            or op.result_id != t[0]
            or (op.kind == "MODIFY" and len(t) != 1)
            or (op.kind == "MERGE" and len(t) < 2)
        ):
            return False
        for eid in t:
            self._touched(eid, op)
        for eid in t[1:]:
            self._deleted(eid, op)
        self.expected[op.result_id] = _Expected("live", op.text, op.domain, op.id, op.session_id)
        return True

    def _judge(self, op: _Op) -> bool:
        """A CONFIRM or CONTRADICT keeps its one target live (its counts change)."""
        if not op.has_after or op.targets != [op.result_id]:
            return False
        self._live(op)
        return True

    def _delete(self, op: _Op) -> bool:
        if len(op.targets) != 1:
            return False
        self._touched(op.targets[0], op)
        self._deleted(op.targets[0], op)
        return True

    def _touched(self, eid: int, op: _Op) -> None:
        """``op`` changes ``eid``: note it when no operation before it created ``eid``."""
        if eid not in self.expected:
            self.uncreated.setdefault(eid, op.id)

    def _live(self, op: _Op) -> None:
        """``op`` leaves its result live with its after state's text and domain."""
        self._touched(op.result_id, op)
        self.expected[op.result_id] = _Expected("live", op.text, op.domain, op.id, op.session_id)

    def _deleted(self, eid: int, op: _Op) -> None:
        prev = self.expected.get(eid)
        self.expected[eid] = _Expected(
            "deleted",
            prev.text if prev else None,
            prev.domain if prev else None,
            op.id,
            op.session_id,
        )


@attrs.define
class _Differences:
    """Where the experiences table departs from the replayed journal."""

    outside: list[int] = attrs.Factory(list)  # no journaled operation created the row
    early: list[int] = attrs.Factory(list)  # the journal changed it before an ADD created it
    wrong_created: list[tuple[int, Any, int]] = attrs.Factory(list)
    back: list[int] = attrs.Factory(list)  # an undo removed the row, and it is there
    missing: list[int] = attrs.Factory(list)  # the journal created the row, and it is not there
    wrong_status: list[tuple[int, str, _Expected]] = attrs.Factory(list)
    wrong_text: list[tuple[int, str, _Expected]] = attrs.Factory(list)
    wrong_domain: list[tuple[int, str, _Expected]] = attrs.Factory(list)
    wrong_counts: list[tuple[int, tuple[Any, ...], _Expected]] = attrs.Factory(list)


def _check_journal(db: Database) -> list[Problem]:
    """Replay the journal and compare the result with the experiences table."""
    counted = _has_columns(db, "experiences", _COUNTS)
    replay = _replay_journal(db, counted=counted)
    problems = replay.problems + _operation_problems(db, replay.malformed)
    diff = _compare_experiences(db, replay, counted=counted)
    return problems + _creation_problems(diff) + _presence_problems(diff) + _state_problems(diff)


def _applied_operations(db: Database) -> Iterable[tuple[Any, ...]]:
    """The applied operations of applied and undone sessions, oldest first, as the replay reads
    them: id, session, session kind, kind, target_ids, result_id, ``ok``, and the after state's
    text, domain and evidence counts."""
    # The after state's text and domain come from SQL (cheaper than json.loads per row);
    # ``ok`` is 0 without an after state, 1 for a JSON object with a text, -1 otherwise.
    return db.execute(
        "SELECT o.id, o.session_id, s.kind, o.kind, o.target_ids, o.result_id, "
        "  CASE WHEN o.after IS NULL THEN 0 WHEN NOT json_valid(o.after) THEN -1 "
        "       WHEN json_type(o.after) != 'object' THEN -1 "
        "       WHEN json_type(o.after, '$.text') = 'text' THEN 1 ELSE -1 END AS ok, "
        "  CASE WHEN json_valid(o.after) THEN CASE WHEN json_type(o.after) = 'object' "
        "       THEN json_extract(o.after, '$.text') END END, "
        "  CASE WHEN json_valid(o.after) THEN CASE WHEN json_type(o.after) = 'object' "
        "       THEN json_extract(o.after, '$.domain') END END"
        + "".join(
            ", CASE WHEN json_valid(o.after) THEN CASE WHEN json_type(o.after) = 'object' "
            f"THEN json_extract(o.after, '$.{c}') END END"
            for c in _COUNTS
        )
        + " FROM operations o JOIN sessions s ON s.id = o.session_id "
        "WHERE o.status = 'applied' AND s.status IN ('applied', 'undone') ORDER BY o.id"
    )


def _target_ids(targets_json: Any) -> list[int] | None:
    """The experience ids of an operation's target_ids, or None unless it is a JSON list of ids."""
    if targets_json == "[]":
        return []
    try:
        targets = json.loads(targets_json)
    except (TypeError, ValueError):
        return None
    if not isinstance(targets, list) or not all(
        type(t) is int
        for t in targets  # bool is not an id
    ):
        return None
    return targets


def _replay_journal(db: Database, *, counted: bool) -> _Replay:
    """Replay the applied operations; with ``counted`` (m009 on), live experiences get counts."""
    replay = _Replay()
    for (
        oid,
        sid,
        skind,
        kind,
        targets_json,
        result_id,
        ok,
        text,
        domain,
        *counts,
    ) in _applied_operations(db):
        if counts[0] is not None:
            replay.op_counts[oid] = tuple(counts)
        targets = _target_ids(targets_json) if ok >= 0 else None
        if targets is None:
            replay.malformed.append(oid)
            continue
        domain = domain if isinstance(domain, str) else None
        op = _Op(oid, sid, kind, targets, result_id, ok == 1, text, domain)
        if not replay.apply(op, undo=skind == "undo"):
            replay.malformed.append(oid)
    for x in replay.expected.values():
        if x.state == "live" and counted:
            x.counts = replay.op_counts.get(x.op_id)
    return replay


def _operation_problems(db: Database, malformed: Sequence[int]) -> list[Problem]:
    """Applied operations are well formed for their kind; others name no result."""
    problems = []
    if malformed:
        problems.append(
            Problem(
                "journal",
                f"{_plural(len(malformed), 'applied operation')} {_v(len(malformed), 'is', 'are')} "
                "malformed (wrong "
                f"targets, result id or after state for their kind): {_ids_text(malformed)}",
            )
        )
    bad_rejected = [
        r[0]
        for r in db.execute(
            "SELECT id FROM operations WHERE status != 'applied' AND result_id IS NOT NULL "
            f"ORDER BY id LIMIT {_SHOWN + 1}"
        )
    ]
    if bad_rejected:
        problems.append(
            Problem(
                "journal",
                f"operations that were not applied name a result experience: "
                f"{_ids_text(bad_rejected)}",
            )
        )
    return problems


def _compare_experiences(db: Database, replay: _Replay, *, counted: bool) -> _Differences:
    """Read the experiences table once and note where it departs from ``replay``."""
    d = _Differences()
    expected, created = replay.expected, replay.created
    seen: set[int] = set()
    count_cols = "".join(f", {c}" for c in _COUNTS) if counted else ""
    for eid, text, domain, status, created_session, *counts in db.execute(
        f"SELECT id, text, domain, status, created_session{count_cols} FROM experiences ORDER BY id"
    ):
        seen.add(eid)
        exp = expected.get(eid)
        if eid in replay.uncreated:
            d.early.append(eid)
        elif eid not in created:
            d.outside.append(eid)
        elif created_session != created[eid] and (exp is None or exp.state != "gone"):
            d.wrong_created.append((eid, created_session, created[eid]))
        if exp is None:
            continue
        if exp.state == "gone":
            d.back.append(eid)
        elif status != exp.state:
            d.wrong_status.append((eid, str(status), exp))
        elif exp.state == "live":
            if text != exp.text:
                d.wrong_text.append((eid, str(text), exp))
            if exp.domain is not None and domain != exp.domain:
                d.wrong_domain.append((eid, str(domain), exp))
            if exp.counts is not None and counts and tuple(counts) != exp.counts:
                d.wrong_counts.append((eid, tuple(counts), exp))
    d.missing = sorted(e for e, x in expected.items() if x.state != "gone" and e not in seen)
    return d


def _where(x: _Expected) -> str:
    return f"operation {x.op_id} of session {x.session_id}"


def _creation_problems(d: _Differences) -> list[Problem]:
    """Every experience row was created by a journaled ADD, in the session it records."""
    problems = []
    if d.outside:
        problems.append(
            Problem(
                "experience",
                f"{_plural(len(d.outside), 'experience')} {_v(len(d.outside), 'was', 'were')} not "
                "created by any "
                f"journaled operation (written behind the journal's back): {_ids_text(d.outside)}",
            )
        )
    if d.early:
        problems.append(
            Problem(
                "experience",
                f"{_plural(len(d.early), 'experience')} {_v(len(d.early), 'was', 'were')} "
                f"changed by the journal before any journaled ADD created "
                f"{_v(len(d.early), 'it', 'them')} "
                "(created behind the journal's back): "
                f"{_ids_text(d.early)}",
            )
        )
    if d.wrong_created:
        eid, got, want = d.wrong_created[0]
        problems.append(
            Problem(
                "experience",
                f"{_plural(len(d.wrong_created), 'experience')} "
                f"{_v(len(d.wrong_created), 'records', 'record')} another creating "
                f"session than the journal's ADD, e.g. experience {eid}: created_session {got}, "
                f"journal {want}{_all([w[0] for w in d.wrong_created])}",
            )
        )
    return problems


def _presence_problems(d: _Differences) -> list[Problem]:
    """The rows the journal left are there; the rows an undone ADD removed are not."""
    problems = []
    if d.back:
        problems.append(
            Problem(
                "experience",
                f"{_plural(len(d.back), 'experience')} {_v(len(d.back), 'exists', 'exist')} "
                f"although an undo removed {_v(len(d.back), 'it', 'them')} (the ADD was undone): "
                f"{_ids_text(d.back)}",
            )
        )
    if d.missing:
        problems.append(
            Problem(
                "experience",
                f"{_plural(len(d.missing), 'experience')} the journal created "
                f"{_v(len(d.missing), 'is', 'are')} missing "
                f"from the table (deleted behind the journal's back): {_ids_text(d.missing)}",
            )
        )
    return problems


def _state_problems(d: _Differences) -> list[Problem]:
    """Each row is live or deleted, and reads, as the journal's latest operation left it."""
    problems = []
    if d.wrong_status:
        eid, got, x = d.wrong_status[0]
        n = len(d.wrong_status)
        problems.append(
            Problem(
                "experience",
                f"{_plural(n, 'experience')} {_v(n, 'is', 'are')} "
                f"live or deleted against the journal: experience {eid} is {got} but "
                f"{_where(x)} left it {x.state}{_all([w[0] for w in d.wrong_status])}",
            )
        )
    if d.wrong_text:
        eid, got, x = d.wrong_text[0]
        n = len(d.wrong_text)
        problems.append(
            Problem(
                "experience",
                f"{_plural(n, 'experience')} {_v(n, 'has', 'have')} "
                "another text than the journal's latest operation wrote: experience "
                f"{eid} reads {_short(got)} but {_where(x)} wrote {_short(x.text)}"
                f"{_all([w[0] for w in d.wrong_text])}",
            )
        )
    if d.wrong_domain:
        eid, got, x = d.wrong_domain[0]
        n = len(d.wrong_domain)
        problems.append(
            Problem(
                "experience",
                f"{_plural(n, 'experience')} {_v(n, 'has', 'have')} another domain than the "
                "journal's latest operation wrote: experience "
                f"{eid} is in {_short(got)} but {_where(x)} put it in {_short(x.domain)}"
                f"{_all([w[0] for w in d.wrong_domain])}",
            )
        )
    if d.wrong_counts:
        eid, got_counts, x = d.wrong_counts[0]
        n = len(d.wrong_counts)
        problems.append(
            Problem(
                "experience",
                f"{_plural(n, 'experience')} {_v(n, 'has', 'have')} other evidence counts than "
                f"the journal's latest operation left: experience {eid} counts {got_counts} "
                f"(support groups, runs, contradicting groups, runs) but {_where(x)} left "
                f"{x.counts}{_all([w[0] for w in d.wrong_counts])}",
            )
        )
    return problems


#: The evidence counts of an experience (m009), in this order in messages.
_COUNTS = ("support_groups", "support_runs", "contradict_groups", "contradict_runs")


def _has_columns(db: Database, table: str, cols: Iterable[str]) -> bool:
    have = {str(r[1]) for r in db.execute(f"PRAGMA table_info([{table}])")}
    return set(cols) <= have


# -- trajectories ----------------------------------------------------------------------


def _check_trajectories(db: Database) -> list[Problem]:
    problems: list[Problem] = []
    count_bad: list[tuple[int, int, int]] = []
    gaps: list[int] = []
    rate_bad: list[tuple[int, float, float]] = []
    for tid, step_count, rate, n, ok, lo, hi in db.execute(
        "SELECT t.id, t.step_count, t.success_rate, coalesce(s.n, 0), coalesce(s.ok, 0), "
        "s.lo, s.hi FROM trajectories t LEFT JOIN ("
        "  SELECT trajectory_id, count(*) AS n, sum(success = 1) AS ok, min(position) AS lo, "
        "  max(position) AS hi FROM steps GROUP BY trajectory_id"
        ") s ON s.trajectory_id = t.id "
        "WHERE coalesce(s.n, 0) != t.step_count OR coalesce(s.lo, 0) != 0 "
        "OR coalesce(s.hi, -1) != coalesce(s.n, 0) - 1 "
        "OR t.success_rate IS NULL OR abs(t.success_rate - "
        "  CASE WHEN coalesce(s.n, 0) = 0 THEN 1.0 ELSE 1.0 * s.ok / s.n END) > 1e-9 "
        "ORDER BY t.id"
    ):
        if n != step_count:
            count_bad.append((tid, step_count, n))
        if n and (lo != 0 or hi != n - 1):
            gaps.append(tid)
        want = 1.0 if n == 0 else ok / n
        if rate is None or abs(float(rate) - want) > 1e-9:
            rate_bad.append((tid, rate, want))
    if count_bad:
        tid, said, n = count_bad[0]
        problems.append(
            Problem(
                "trajectory",
                f"{_plural(len(count_bad), 'trajectory', 'trajectories')} "
                f"{_v(len(count_bad), 'has', 'have')} another step_count than steps: "
                f"trajectory {tid} says {said} and has {n}{_all([c[0] for c in count_bad])}",
            )
        )
    if gaps:
        problems.append(
            Problem(
                "trajectory",
                f"{_plural(len(gaps), 'trajectory', 'trajectories')} "
                f"{_v(len(gaps), 'has', 'have')} steps not numbered 0..K-1 (a step is "
                f"missing or out of place): {_ids_text(gaps)}",
            )
        )
    if rate_bad:
        tid, said_rate, want_rate = rate_bad[0]
        problems.append(
            Problem(
                "trajectory",
                f"{_plural(len(rate_bad), 'trajectory', 'trajectories')} "
                f"{_v(len(rate_bad), 'has', 'have')} a success_rate that does not match the "
                f"steps: trajectory {tid} says {said_rate} and its steps give {want_rate:.4g}"
                f"{_all([c[0] for c in rate_bad])}",
            )
        )
    return problems


def _check_pruned(db: Database) -> list[Problem]:
    """Every trajectory a learning session names is in the file or marked pruned; a run
    marked pruned is not in the file any more (agentmem.storage.retention)."""
    problems = []
    pruned = _has_table(db, "pruned_trajectories")
    gone = " AND j.value NOT IN (SELECT id FROM pruned_trajectories)" if pruned else ""
    missing: dict[int, list[int]] = defaultdict(list)
    for sid, tid in db.execute(
        "SELECT DISTINCT g.session_id, j.value FROM session_groups g, "
        "json_each(g.trajectory_ids) j WHERE json_valid(g.trajectory_ids) "
        f"AND j.value NOT IN (SELECT id FROM trajectories){gone} ORDER BY g.session_id, j.value"
    ):
        missing[int(sid)].append(tid)
    for sid, ids in sorted(missing.items()):
        problems.append(
            Problem(
                "session",
                f"learning session {sid} learned from "
                f"{_plural(len(ids), 'trajectory', 'trajectories')} that "
                f"{_v(len(ids), 'is', 'are')} neither in the file nor marked pruned (deleted "
                f"behind agentmem's back): {_ids_text(ids)}",
            )
        )
    if pruned:
        both = [
            r[0]
            for r in db.execute(
                "SELECT p.id FROM pruned_trajectories p JOIN trajectories t ON t.id = p.id "
                f"ORDER BY p.id LIMIT {_SHOWN + 1}"
            )
        ]
        if both:
            problems.append(
                Problem(
                    "trajectory",
                    f"trajectories marked pruned are still in the file (a prune "
                    f"half undone by hand?): {_ids_text(both)}",
                )
            )
    return problems


def kinds(problems: Iterable[Problem]) -> set[str]:
    """The kinds among ``problems`` (for tests and scripts)."""
    return {p.kind for p in problems}
