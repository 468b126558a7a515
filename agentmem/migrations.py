"""The schema, as sqlite-utils migrations. Never edit an applied migration: append a new one.

Every table and column is described for people in ``docs/schema.md``.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Iterable
from typing import Any

from sqlite_utils import Database, Migrations

from .errors import AgentMemError

__all__ = [
    "KNOWN_MIGRATIONS",
    "SCHEMA_VERSION",
    "applied_names",
    "migrations",
    "refuse_newer",
    "unknown_migrations",
]

migrations = Migrations("agentmem")


@migrations()
def m001_initial(db: Database) -> None:
    db.executescript(
        """
        CREATE TABLE settings (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL  -- JSON
        );
        CREATE TABLE tool_domains (
            tool TEXT PRIMARY KEY,
            domain TEXT NOT NULL
        );
        CREATE TABLE trajectories (
            id INTEGER PRIMARY KEY,
            task TEXT NOT NULL,
            group_key TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT 'api',
            condition TEXT,
            step_count INTEGER NOT NULL,
            success_rate REAL NOT NULL,
            state_ok INTEGER CHECK (state_ok IN (0, 1)),
            essential_actions TEXT,
            meta TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        );
        CREATE INDEX trajectories_group_key ON trajectories (group_key);
        CREATE INDEX trajectories_created_at ON trajectories (created_at);
        CREATE TABLE steps (
            id INTEGER PRIMARY KEY,
            trajectory_id INTEGER NOT NULL REFERENCES trajectories (id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            tool TEXT NOT NULL,
            domain TEXT NOT NULL,
            params TEXT NOT NULL,
            output TEXT NOT NULL,
            success INTEGER NOT NULL CHECK (success IN (0, 1)),
            UNIQUE (trajectory_id, position)
        );
        CREATE INDEX steps_tool ON steps (tool);
        CREATE TABLE feedback (
            id INTEGER PRIMARY KEY,
            trajectory_id INTEGER NOT NULL REFERENCES trajectories (id) ON DELETE CASCADE,
            kind TEXT NOT NULL CHECK (kind IN ('accept', 'correct', 'reject')),
            note TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX feedback_trajectory_id ON feedback (trajectory_id);
        CREATE TABLE sessions (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('learn', 'curate', 'undo')),
            status TEXT NOT NULL
                CHECK (status IN ('running', 'applied', 'dry-run', 'failed', 'undone')),
            started_at TEXT NOT NULL,
            finished_at TEXT,
            model TEXT,
            embedder TEXT,
            params TEXT NOT NULL DEFAULT '{}',
            report TEXT NOT NULL DEFAULT '{}',
            undoes INTEGER REFERENCES sessions (id),
            undone_by INTEGER REFERENCES sessions (id),
            pid INTEGER
        );
        CREATE TABLE experiences (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            text TEXT NOT NULL,
            domain TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL DEFAULT 'live' CHECK (status IN ('live', 'deleted')),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            created_session INTEGER REFERENCES sessions (id),
            updated_session INTEGER REFERENCES sessions (id)
        );
        CREATE INDEX experiences_status_domain ON experiences (status, domain);
        CREATE TABLE operations (
            id INTEGER PRIMARY KEY,
            session_id INTEGER NOT NULL REFERENCES sessions (id),
            group_key TEXT,
            kind TEXT NOT NULL CHECK (kind IN ('ADD', 'MODIFY', 'DELETE', 'MERGE')),
            target_ids TEXT NOT NULL DEFAULT '[]',
            result_id INTEGER,
            text TEXT,
            domain TEXT,
            before TEXT NOT NULL DEFAULT '[]',
            after TEXT,
            status TEXT NOT NULL CHECK (status IN ('applied', 'rejected', 'proposed')),
            reason TEXT,
            origin TEXT NOT NULL DEFAULT 'model',
            conditions TEXT,
            created_at TEXT NOT NULL
        );
        CREATE TABLE session_groups (
            session_id INTEGER NOT NULL REFERENCES sessions (id),
            group_key TEXT NOT NULL,
            trajectory_ids TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('used', 'degenerate', 'no-findings')),
            mean_abs_advantage REAL,
            conditions TEXT NOT NULL DEFAULT '{}',
            summaries TEXT NOT NULL DEFAULT '[]',
            PRIMARY KEY (session_id, group_key)
        );
        CREATE INDEX operations_session_id ON operations (session_id);
        CREATE INDEX operations_result_id ON operations (result_id);

        -- A trajectory with its step count, failures and reward parts. The acceptance
        -- here reads the latest explicit feedback, else the 120 s window (see docs).
        CREATE VIEW trajectory_rewards AS
        SELECT
            t.id,
            t.group_key,
            t.task,
            t.source,
            t.condition,
            t.step_count,
            t.step_count - (SELECT count(*) FROM steps s
                            WHERE s.trajectory_id = t.id AND s.success = 1) AS failed_steps,
            t.success_rate,
            CASE
                WHEN f.kind IN ('correct', 'reject') THEN 'rejected'
                WHEN f.kind = 'accept' THEN 'accepted'
                WHEN julianday('now') - julianday(t.created_at) >= 120.0 / 86400 THEN 'accepted'
                ELSE 'pending'
            END AS acceptance,
            CASE
                WHEN f.kind IN ('correct', 'reject') THEN 0
                WHEN f.kind = 'accept' THEN 1
                WHEN julianday('now') - julianday(t.created_at) >= 120.0 / 86400 THEN 1
            END AS rho_a,
            t.created_at
        FROM trajectories t
        LEFT JOIN feedback f ON f.id = (
            SELECT id FROM feedback WHERE trajectory_id = t.id
            ORDER BY created_at DESC, id DESC LIMIT 1
        );

        -- The composite reward with the library's weights (settings 'reward_weights').
        CREATE VIEW trajectory_summary AS
        SELECT
            r.*,
            round(
                coalesce(json_extract(s.value, '$[0]'), 0.4) * r.success_rate
                + coalesce(json_extract(s.value, '$[1]'), 0.6) * r.rho_a, 6
            ) AS reward
        FROM trajectory_rewards r
        LEFT JOIN settings s ON s.key = 'reward_weights';

        CREATE VIEW live_experiences AS
        SELECT id, text, domain, created_at, updated_at, created_session, updated_session
        FROM experiences WHERE status = 'live';

        CREATE VIEW journal AS
        SELECT
            o.id, o.session_id, s.kind AS session_kind, s.status AS session_status,
            o.group_key, o.kind, o.target_ids, o.result_id, o.text, o.domain,
            o.before, o.after, o.status, o.reason, o.origin, o.created_at
        FROM operations o JOIN sessions s ON s.id = o.session_id;
        """
    )


@migrations()
def m002_steps_trajectory_success(db: Database) -> None:
    """A covering index for counting a trajectory's failed (or succeeded) steps.

    The group reports and the ``trajectory_rewards`` view count
    ``steps WHERE trajectory_id = ? AND success = 0`` (or ``= 1``) per trajectory.
    With only ``UNIQUE (trajectory_id, position)`` SQLite reads every step row
    (tool outputs included) to test ``success``; this index answers the count
    from the index alone.
    """
    db.execute(
        "CREATE INDEX IF NOT EXISTS steps_trajectory_success ON steps (trajectory_id, success)"
    )


@migrations()
def m003_index_blocks_hold_vectors(db: Database) -> None:
    """The vector index's blocks hold float32 vectors and norms; ``index_version`` and its triggers.

    Up to m002 ``experience_vectors_blocks`` held int8 codes with per-vector
    scales and error bounds. From m003 it holds each vector's float32 copy and
    its norm (searches score them in memory), and three triggers set the
    ``index_version`` setting to a new random number whenever a block row
    changes, so a process knows when the copy it holds is stale. A file
    without an index is left alone (``index.ensure_index`` creates the new
    format). The blocks are rebuilt from ``experience_vectors_items``, the
    exact vectors, packed per domain in id order; a vector of the wrong length
    (a damaged index, which ``agentmem check`` reports) is left out.
    """
    blocks, items = "experience_vectors_blocks", "experience_vectors_items"
    if not db[blocks].exists() or not db[items].exists():
        return
    columns = {c.name for c in db[blocks].columns}
    if not {"norms", "vectors"} <= columns:
        row = db.execute("SELECT value FROM settings WHERE key = 'embedding_dims'").fetchone()
        dims = int(json.loads(row[0])) if row is not None else 0
        old_deltas: dict[int, float] = {}
        for ids_blob, deltas_blob in db.execute(f"SELECT ids, deltas FROM {blocks}"):
            ids, deltas = array("q"), array("f")
            ids.frombytes(ids_blob)
            deltas.frombytes(deltas_blob)
            old_deltas.update(zip(ids, deltas, strict=False))
        db.execute(f"DROP TABLE {blocks}")  # its index goes with it
        db.execute(
            f"CREATE TABLE {blocks} (id INTEGER PRIMARY KEY, domain TEXT NOT NULL, "
            "size INTEGER NOT NULL, max_delta REAL NOT NULL, ids BLOB NOT NULL, "
            "norms BLOB NOT NULL, deltas BLOB NOT NULL, vectors BLOB NOT NULL)"
        )
        db.execute(f"CREATE INDEX {blocks}_domain ON {blocks} (domain, size)")
        by_domain: dict[str, list[tuple[int, bytes]]] = {}
        for eid, domain, vector in db.execute(
            f"SELECT experience_id, domain, vector FROM {items} ORDER BY experience_id"
        ):
            if dims and len(vector) == 4 * dims:
                by_domain.setdefault(str(domain), []).append((int(eid), bytes(vector)))
        places: list[tuple[int, int, int]] = []
        for domain, members in sorted(by_domain.items()):
            for start in range(0, len(members), 512):
                chunk = members[start : start + 512]
                norms = array("d")
                for _, vector in chunk:
                    a = array("f")
                    a.frombytes(vector)
                    norms.append(math.sqrt(math.fsum(v * v for v in a)))
                # A missing bound is replaced by 2, the largest distance of two unit vectors.
                deltas = array("f", [old_deltas.get(eid, 2.0) for eid, _ in chunk])
                cur = db.execute(
                    f"INSERT INTO {blocks} (domain, size, max_delta, ids, norms, deltas, vectors) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        domain,
                        len(chunk),
                        max(deltas),
                        array("q", [eid for eid, _ in chunk]).tobytes(),
                        norms.tobytes(),
                        deltas.tobytes(),
                        b"".join(vector for _, vector in chunk),
                    ],
                )
                block = int(cur.lastrowid or 0)
                places += [(block, slot, eid) for slot, (eid, _) in enumerate(chunk)]
        db.conn.executemany(
            f"UPDATE {items} SET block = ?, slot = ? WHERE experience_id = ?", places
        )
    for event in ("insert", "update", "delete"):
        db.execute(
            f"CREATE TRIGGER IF NOT EXISTS {blocks}_{event} AFTER {event.upper()} ON {blocks} "
            "BEGIN UPDATE settings SET value = random() WHERE key = 'index_version'; END"
        )
    db.execute(
        "INSERT INTO settings (key, value) VALUES ('index_version', random()) "
        "ON CONFLICT (key) DO NOTHING"
    )


@migrations()
def m004_team(db: Database) -> None:
    """Sharing with a team (``agentmem.team``): stable uuids, the outbox, learning claims.

    ``trajectories.uuid`` and ``feedback.uuid`` are the stable keys of shared runs
    and verdicts: NULL for rows that never left this laptop, unique otherwise, so a
    push that is repeated (after a kill, a timeout) inserts nothing twice.
    ``team_outbox`` (a laptop's private library) holds shared runs and verdicts,
    redacted, until ``agentmem team sync`` has pushed them to the team's primary.
    ``team_claims`` (the team library) says which learning session holds which task
    group, so that two laptops never learn the same group twice.
    """
    db.executescript(
        """
        ALTER TABLE trajectories ADD COLUMN uuid TEXT;
        CREATE UNIQUE INDEX trajectories_uuid ON trajectories (uuid);
        ALTER TABLE feedback ADD COLUMN uuid TEXT;
        CREATE UNIQUE INDEX feedback_uuid ON feedback (uuid);
        CREATE TABLE team_outbox (
            uuid TEXT PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('trajectory', 'feedback')),
            trajectory_id INTEGER NOT NULL REFERENCES trajectories (id) ON DELETE CASCADE,
            payload TEXT NOT NULL,
            created_at TEXT NOT NULL,
            pushed_at TEXT
        );
        CREATE INDEX team_outbox_pending ON team_outbox (pushed_at, created_at);
        CREATE INDEX team_outbox_trajectory_id ON team_outbox (trajectory_id);
        CREATE TABLE team_claims (
            group_key TEXT PRIMARY KEY,
            trajectory_ids TEXT NOT NULL,
            claim TEXT NOT NULL,
            holder TEXT NOT NULL,
            claimed_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('claimed', 'applied', 'released')),
            session_id INTEGER REFERENCES sessions (id)
        );
        """
    )


@migrations()
def m005_transcript_imports_and_scopes(db: Database) -> None:
    """What transcript imports have read, and which project a lesson is served in.

    ``imported_turns`` keys every turn an importer has taken from an agent's
    transcript (source, session id, turn id), so that importing a transcript
    again, or one that has grown, records only its new turns. ``imported_files``
    remembers each transcript file's size and modification time when nothing
    in it was left for later, so that an import over a whole folder skips the
    files that did not change. ``experience_scopes`` holds, per learning
    session, the project an experience it wrote is served in (NULL: everywhere)
    and the projects whose runs support it; the row of the latest applied
    session counts, so undoing a session restores the scope with the text.
    """
    # One statement at a time: executescript would commit the migration's transaction.
    for sql in (
        """
        CREATE TABLE imported_turns (
            source TEXT NOT NULL,
            session_id TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            trajectory_id INTEGER REFERENCES trajectories (id) ON DELETE SET NULL,
            status TEXT NOT NULL CHECK (status IN ('imported', 'no-tools', 'damaged')),
            note TEXT,
            imported_at TEXT NOT NULL,
            PRIMARY KEY (source, session_id, turn_id)
        )
        """,
        """
        CREATE INDEX imported_turns_trajectory_id ON imported_turns (trajectory_id)
        """,
        """
        CREATE TABLE imported_files (
            path TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            imported_at TEXT NOT NULL
        )
        """,
        """
        CREATE TABLE experience_scopes (
            experience_id INTEGER NOT NULL REFERENCES experiences (id) ON DELETE CASCADE,
            session_id INTEGER NOT NULL REFERENCES sessions (id),
            project TEXT,
            support TEXT NOT NULL DEFAULT '[]',
            reason TEXT NOT NULL,
            PRIMARY KEY (experience_id, session_id)
        )
        """,
        """
        CREATE INDEX experience_scopes_project ON experience_scopes (project)
        """,
    ):
        db.execute(sql)


@migrations()
def m006_experience_sources(db: Database) -> None:
    """The view ``experience_sources``: every experience with the operation its text came from.

    That operation is the latest applied one with the experience as its result,
    in an applied session that is not an undo: after an undo the experience
    holds an earlier session's text again, and the view names that session.
    A lesson added by hand comes from a ``curate`` session (origin ``user``).
    """
    db.execute("DROP VIEW IF EXISTS experience_sources")
    db.execute(
        """
        CREATE VIEW experience_sources AS
        SELECT
            e.id, e.text, e.domain, e.status,
            o.session_id, o.group_key, o.origin, o.id AS operation_id, o.kind AS operation,
            e.created_at, e.updated_at
        FROM experiences e
        LEFT JOIN operations o ON o.id = (
            SELECT op.id FROM operations op JOIN sessions s ON s.id = op.session_id
            WHERE op.result_id = e.id AND op.status = 'applied'
                AND s.status = 'applied' AND s.kind != 'undo'
            ORDER BY op.id DESC LIMIT 1
        )
        """
    )


@migrations()
def m007_grouping_kinds(db: Database) -> None:
    """Groups formed from single runs: ``session_groups.kind`` and ``reason``, ``task_vectors``.

    A learning session now also learns from groups of runs of *similar* tasks and
    from a run's own corrections (see :mod:`agentmem.learning.grouping`).
    ``session_groups.kind`` says which (``exact``, ``similar``, ``correction``;
    every older row is ``exact``) and ``reason`` why its runs were put together.
    ``task_vectors`` keeps each trajectory's task embedding, per embedding model,
    so that a session embeds a task once (owned by :mod:`agentmem.storage.task_vectors`).
    """
    db.execute(
        "ALTER TABLE session_groups ADD COLUMN kind TEXT NOT NULL DEFAULT 'exact' "
        "CHECK (kind IN ('exact', 'similar', 'correction'))"
    )
    db.execute("ALTER TABLE session_groups ADD COLUMN reason TEXT")
    db.execute(
        "CREATE TABLE task_vectors ("
        "trajectory_id INTEGER PRIMARY KEY REFERENCES trajectories (id) ON DELETE CASCADE, "
        "model TEXT NOT NULL, vector BLOB NOT NULL)"
    )


@migrations()
def m008_keyword_index(db: Database) -> None:
    """The keyword index ``experience_fts`` (FTS5, BM25) over the experiences, and the
    tools' task profiles ``tool_usage``.

    Only the tables are created here; :meth:`agentmem.Memory.open` fills them (and
    refills them whenever the extraction rules of :mod:`agentmem.terms` change,
    setting ``keyword_index_version``), in the same transaction.
    """
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS experience_fts USING fts5("
        "text, tools, params, errors, domain UNINDEXED, "
        "tokenize = \"porter unicode61 tokenchars '_'\")"
    )
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS tool_usage USING fts5("
        "tool UNINDEXED, tasks, tokenize = \"porter unicode61 tokenchars '_'\")"
    )


#: Operation kinds the journal accepts from m009 on (CONFIRM and CONTRADICT count evidence).
_OPERATION_KINDS_M009 = "'ADD', 'MODIFY', 'DELETE', 'MERGE', 'CONFIRM', 'CONTRADICT'"


@migrations()
def m009_evidence(db: Database) -> None:
    """Evidence per experience (``agentmem.learning.support``).

    ``experiences`` gains the counts of learned groups and runs that support and
    contradict each lesson, when a group last confirmed and last contradicted it,
    and ``rule``, the lesson's structured facts (JSON) that later sessions test it
    with. ``operations.kind`` also accepts ``CONFIRM`` and ``CONTRADICT``: SQLite
    cannot change a CHECK constraint, so the table is rebuilt (same columns, same
    rows, same ids), and the views over it with it: ``journal`` as it was,
    ``experience_sources`` leaving out the operations that only count evidence (a
    CONFIRM is not where a text came from). ``live_experiences`` shows the counts.
    """
    for col in ("support_groups", "support_runs", "contradict_groups", "contradict_runs"):
        db.execute(f"ALTER TABLE experiences ADD COLUMN {col} INTEGER NOT NULL DEFAULT 0")
    for col in ("last_confirmed_at", "last_contradicted_at", "rule"):
        db.execute(f"ALTER TABLE experiences ADD COLUMN {col} TEXT")
    for view in ("journal", "live_experiences", "experience_sources"):
        db.execute(f"DROP VIEW IF EXISTS {view}")
    cols = (
        "id, session_id, group_key, kind, target_ids, result_id, text, domain, before, after, "
        "status, reason, origin, conditions, created_at"
    )
    db.execute(
        f"""
        CREATE TABLE operations_m009 (
            id INTEGER PRIMARY KEY,
            session_id INTEGER NOT NULL REFERENCES sessions (id),
            group_key TEXT,
            kind TEXT NOT NULL CHECK (kind IN ({_OPERATION_KINDS_M009})),
            target_ids TEXT NOT NULL DEFAULT '[]',
            result_id INTEGER,
            text TEXT,
            domain TEXT,
            before TEXT NOT NULL DEFAULT '[]',
            after TEXT,
            status TEXT NOT NULL CHECK (status IN ('applied', 'rejected', 'proposed')),
            reason TEXT,
            origin TEXT NOT NULL DEFAULT 'model',
            conditions TEXT,
            created_at TEXT NOT NULL
        )
        """
    )
    db.execute(f"INSERT INTO operations_m009 ({cols}) SELECT {cols} FROM operations")
    db.execute("DROP TABLE operations")
    db.execute("ALTER TABLE operations_m009 RENAME TO operations")
    db.execute("CREATE INDEX operations_session_id ON operations (session_id)")
    db.execute("CREATE INDEX operations_result_id ON operations (result_id)")
    db.execute(
        """
        CREATE VIEW journal AS
        SELECT
            o.id, o.session_id, s.kind AS session_kind, s.status AS session_status,
            o.group_key, o.kind, o.target_ids, o.result_id, o.text, o.domain,
            o.before, o.after, o.status, o.reason, o.origin, o.created_at
        FROM operations o JOIN sessions s ON s.id = o.session_id
        """
    )
    db.execute(
        """
        CREATE VIEW live_experiences AS
        SELECT id, text, domain, created_at, updated_at, created_session, updated_session,
            support_groups, support_runs, contradict_groups, contradict_runs,
            last_confirmed_at, last_contradicted_at
        FROM experiences WHERE status = 'live'
        """
    )
    db.execute(
        """
        CREATE VIEW experience_sources AS
        SELECT
            e.id, e.text, e.domain, e.status,
            o.session_id, o.group_key, o.origin, o.id AS operation_id, o.kind AS operation,
            e.created_at, e.updated_at
        FROM experiences e
        LEFT JOIN operations o ON o.id = (
            SELECT op.id FROM operations op JOIN sessions s ON s.id = op.session_id
            WHERE op.result_id = e.id AND op.status = 'applied'
                AND op.kind NOT IN ('CONFIRM', 'CONTRADICT')
                AND s.status = 'applied' AND s.kind != 'undo'
            ORDER BY op.id DESC LIMIT 1
        )
        """
    )


@migrations()
def m010_pruned_trajectories(db: Database) -> None:
    """Retention (``agentmem prune``): the pruned trajectories' ids, and the view
    ``learned_trajectories``.

    ``pruned_trajectories`` keeps, for each trajectory ``agentmem prune`` removed
    (with its steps and feedback), its id, group and when it was recorded and
    pruned: the sessions that learned from it still name it in
    ``session_groups.trajectory_ids``, ``agentmem check`` tells a pruned run from
    one that went missing, and the id is never given to another run.
    ``learned_trajectories`` lists each learning session's trajectories, one a
    row, marked pruned or not.
    """
    for sql in (
        """
        CREATE TABLE pruned_trajectories (
            id INTEGER PRIMARY KEY,
            group_key TEXT NOT NULL,
            created_at TEXT NOT NULL,
            pruned_at TEXT NOT NULL
        )
        """,
        "CREATE INDEX pruned_trajectories_pruned_at ON pruned_trajectories (pruned_at)",
        """
        CREATE VIEW learned_trajectories AS
        SELECT g.session_id, g.group_key, j.value AS trajectory_id,
            p.id IS NOT NULL AS pruned, p.pruned_at
        FROM session_groups g
        JOIN json_each(g.trajectory_ids) j
        LEFT JOIN pruned_trajectories p ON p.id = j.value
        """,
    ):
        db.execute(sql)


@migrations()
def m011_scope_kinds(db: Database) -> None:
    """Where a lesson is served, by what its evidence is about: ``experience_scopes.kind``
    (``project``: a project's fact; ``machine``: a fact about one machine, in ``machine``;
    ``tool``: a tool's own rule, served in its project until runs of a second project
    show it; NULL for older rows) and ``experience_scopes.machine`` (the machine id a
    machine fact is served on; see :func:`agentmem.projects.machine_id`).
    """
    db.execute(
        "ALTER TABLE experience_scopes ADD COLUMN kind TEXT "
        "CHECK (kind IN ('project', 'machine', 'tool'))"
    )
    db.execute("ALTER TABLE experience_scopes ADD COLUMN machine TEXT")


@migrations()
def m016_served(db: Database) -> None:
    """Lessons served to runs (issue 25): ``served`` holds, for each lesson a prompt got
    (or that the holdout withheld from it), as the served log beside the library
    recorded it (:mod:`agentmem.served`), the run it was matched to and, once a
    learning session has judged that run against the lesson's rule, whether the run
    met the lesson's situation, followed it, and made the mistake anyway (``judged_by``:
    the lesson's rule, or only its tools when the rule cannot be tested). The log's
    read offset is the setting ``served_log_offset``."""
    for sql in (
        """
        CREATE TABLE served (
            id INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            route TEXT NOT NULL,
            client_session TEXT,
            project TEXT,
            prompt_hash TEXT NOT NULL,
            experience_id INTEGER NOT NULL REFERENCES experiences (id) ON DELETE CASCADE,
            held INTEGER NOT NULL CHECK (held IN (0, 1)),
            trajectory_id INTEGER REFERENCES trajectories (id) ON DELETE SET NULL,
            judged_session INTEGER REFERENCES sessions (id),
            situation INTEGER CHECK (situation IN (0, 1)),
            followed INTEGER CHECK (followed IN (0, 1)),
            repeated INTEGER CHECK (repeated IN (0, 1)),
            judged_by TEXT CHECK (judged_by IN ('rule', 'tools'))
        )
        """,
        "CREATE INDEX served_experience_id ON served (experience_id)",
        "CREATE INDEX served_trajectory_id ON served (trajectory_id)",
        "CREATE INDEX served_judged_session ON served (judged_session)",
    ):
        db.execute(sql)


@migrations()
def m017_held_lessons(db: Database) -> None:
    """Risky lessons wait for a person (issue 30): ``experiences.review`` is NULL (nothing
    risky found), ``held`` (it would have the agent run a command with a risky
    capability: never served), ``approved`` or ``rejected`` (by ``agentmem review``);
    ``capabilities`` the risks found (JSON: capability, command, where the lesson holds
    it; ``[]``: checked, nothing risky); ``reviewed_by`` and ``reviewed_at`` who decided
    and when. Older rows have no ``capabilities`` yet: :meth:`agentmem.Memory.open` checks
    them (the index ``experiences_unchecked`` finds them), and serving checks any row
    left unchecked again. A later agentmem with new rules sets ``capabilities`` back to
    NULL in a migration of its own."""
    db.execute(
        "ALTER TABLE experiences ADD COLUMN review TEXT "
        "CHECK (review IN ('held', 'approved', 'rejected'))"
    )
    for col in ("capabilities", "reviewed_by", "reviewed_at"):
        db.execute(f"ALTER TABLE experiences ADD COLUMN {col} TEXT")
    db.execute("CREATE INDEX experiences_review ON experiences (review) WHERE review IS NOT NULL")
    db.execute(
        "CREATE INDEX experiences_unchecked ON experiences (status) WHERE capabilities IS NULL"
    )


@migrations()
def m018_redact_stored(db: Database) -> None:
    """No secret left from an older agentmem (issue 30): every text a library stored
    before redaction covered it (group keys, conditions, sources, tool names, meta,
    essential actions, notes, the import bookkeeping, lessons and the journal's copies,
    learned groups, scopes, served rows, the team outbox, the served log beside the
    file) is redacted again with today's rules, groups kept together, and runs no
    agentmem reads are pruned (:mod:`agentmem.scrub`; what changed: the setting
    ``stored_redaction``). Changes no row that holds no secret."""
    from .scrub import redact_stored

    redact_stored(db)


@migrations()
def m019_practice(db: Database) -> None:
    """Practice (issue 32): ``practices`` holds one practice of a task file with an agent
    (its ``key``, a hash of the task file's path, the agent's template, the group size and
    the RC-GRPO policy: running the same command again continues it), and
    ``practice_rollouts`` one row per finished rollout (the task and ``task_key``, a hash
    of the task as read: a changed task is practised anew; the round: 0 plain, 1
    reward-conditioned, its index and seed, the reward token it was conditioned on, its
    reward, what it cost, the trajectory it was recorded as). A rollout is written once,
    when it is over: a killed one is run again, a finished one never."""
    for sql in (
        """
        CREATE TABLE practices (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            tasks_path TEXT NOT NULL,
            agent TEXT NOT NULL,
            size INTEGER NOT NULL CHECK (size >= 1),
            rc TEXT NOT NULL CHECK (rc IN ('auto', 'always', 'never')),
            options TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL,
            learned_session INTEGER REFERENCES sessions (id) ON DELETE SET NULL,
            learned_at TEXT
        )
        """,
        """
        CREATE TABLE practice_rollouts (
            id INTEGER PRIMARY KEY,
            practice_id INTEGER NOT NULL REFERENCES practices (id) ON DELETE CASCADE,
            task_id TEXT NOT NULL,
            task_key TEXT NOT NULL,
            round INTEGER NOT NULL CHECK (round >= 0),
            idx INTEGER NOT NULL CHECK (idx >= 0),
            seed INTEGER NOT NULL,
            condition TEXT,
            reward REAL NOT NULL,
            success INTEGER NOT NULL CHECK (success IN (0, 1)),
            wall_s REAL NOT NULL,
            tokens INTEGER,
            cost_usd REAL,
            trajectory_id INTEGER REFERENCES trajectories (id) ON DELETE SET NULL,
            error TEXT,
            meta TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL,
            UNIQUE (practice_id, task_id, task_key, round, idx)
        )
        """,
        "CREATE INDEX practice_rollouts_trajectory_id ON practice_rollouts (trajectory_id)",
    ):
        db.execute(sql)


#: The migrations this version of agentmem knows, in order.
KNOWN_MIGRATIONS: tuple[str, ...] = tuple(m.name for m in migrations._migrations)
#: The number of migrations this version of agentmem knows.
SCHEMA_VERSION = len(KNOWN_MIGRATIONS)


def unknown_migrations(applied: Iterable[str]) -> list[str]:
    """The applied migrations this version does not know: the file is from a newer agentmem."""
    return [name for name in applied if name not in KNOWN_MIGRATIONS]


def applied_names(db: Any) -> list[str] | None:
    """The agentmem migrations recorded in the file, in the order applied (None: the file
    has no migrations table yet). Any connection will do."""
    if (
        db.execute("SELECT 1 FROM sqlite_master WHERE name = '_sqlite_migrations'").fetchone()
        is None
    ):
        return None
    return [
        str(r[0])
        for r in db.execute(
            "SELECT name FROM _sqlite_migrations WHERE migration_set = 'agentmem' ORDER BY rowid"
        )
    ]


def refuse_newer(db: Database) -> None:
    """Refuse a file that a newer agentmem migrated: its schema is unknown to this one."""
    unknown = unknown_migrations(applied_names(db) or [])
    if unknown:
        raise AgentMemError(
            f"this library was written by a newer agentmem (migration {', '.join(unknown)}); "
            "upgrade agentmem to open it"
        )
