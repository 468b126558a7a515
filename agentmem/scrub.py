"""A library written by an older agentmem, its stored texts redacted again (migration
``m018_redact_stored``).

Since issue 30, every text a run holds is redacted where the run enters storage
(:mod:`agentmem.redact.runs`). A library written before then still holds what the
older code stored as it was: the group key (the raw task, lower-cased), a run's
condition, source, tool names, essential actions and meta keys, feedback notes,
the import bookkeeping's ids, notes and paths, lessons written by hand or by a
model, the journal's copies of them, the served rows and log, and the team outbox's
payloads. :func:`redact_stored` rewrites each of those columns through the same
redaction functions that guard the entry today, in the caller's transaction (the
migration's), and changes nothing that holds no secret, so running it twice
changes nothing the second time.

* **Groups stay groups.** Each distinct stored group key is given one new key, the
  same in every table (runs, pruned runs, the journal, the learned groups, the team's
  claims): the key that today's entry would give its runs
  (:func:`agentmem.redact.runs.redact_group`, from each run's redacted task). Two runs
  that shared a key share the new one; two keys that differed only in a secret become
  one (as two such runs recorded today would).
* **The journal still replays.** A lesson's text, rule and capabilities are redacted
  the same way in ``experiences`` and in every ``before``/``after`` copy the journal
  keeps, so ``agentmem check`` still finds the library equal to its replayed journal;
  the keyword index and the tools' task profiles are rebuilt when a lesson's text, a
  task or a tool name changed (the setting
  ``keyword_index_version`` is removed: :meth:`agentmem.Memory.open` rebuilds it in
  the same transaction).
* **Not the outputs and parameters.** Every agentmem redacted a step's output and
  parameters where the run entered storage (only the rules have grown since); they are
  most of a library's bytes, and redacting them again runs at about 11 MB/s of CPU
  (seven times the rest of this migration: ``benchmarks/bench_redact_stored.py``), which
  the first prompt hook after an upgrade would spend holding the write lock, past its
  10 s timeout on a large library (then rolled back, and again at the next prompt).
  Tool names, which the old code did not redact, are.
* **Runs that no agentmem can read are quarantined**: a run whose ``meta`` or a step's
  ``params`` is not a JSON object, or whose ``essential_actions`` is not a JSON list
  (rows an older team learner took in before items were validated), is pruned as
  ``agentmem prune`` prunes (its id kept in ``pruned_trajectories``), so no learning
  session stops on it.
* **The served log** beside the library is rewritten with its session ids and
  project paths scrubbed as :func:`agentmem.served.record` writes them today, and the
  read offset moved to the same line.

What was done is counted in the setting ``stored_redaction`` (:data:`SETTING`); a
redaction is never journaled as an operation, since undoing it would bring the
secret back.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from .files import open_regular
from .records import MAX_TOOL_NAME, Step, Trajectory
from .redact import DEFAULT_REDACTOR, Redactor
from .redact.runs import redact_group, redact_meta, redact_path
from .served import SUFFIX, scrubbed
from .timestamps import now_iso

__all__ = ["SETTING", "ScrubReport", "quarantine", "readable", "redact_stored", "unreadable_runs"]

#: The setting that records what :func:`redact_stored` did (JSON, see :class:`ScrubReport`).
SETTING = "stored_redaction"
#: The served log's read offset (:data:`agentmem.storage.served.OFFSET`).
_OFFSET = "served_log_offset"
_KEYWORD_VERSION = "keyword_index_version"


@attrs.frozen
class ScrubReport:
    """What :func:`redact_stored` changed: rows per ``table.column``, the runs it
    quarantined (pruned: no agentmem reads them), the served log's lines rewritten (or why
    it could not be)."""

    changed: dict[str, int] = attrs.field(factory=dict)
    quarantined: tuple[int, ...] = ()
    log_lines: int = 0
    log_error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "changed": dict(sorted(self.changed.items())),
            "quarantined": list(self.quarantined),
            "served_log_lines": self.log_lines,
            "served_log_error": self.log_error,
        }


class _Count:
    def __init__(self) -> None:
        self.n: Counter[str] = Counter()

    def add(self, what: str, k: int = 1) -> None:
        if k:
            self.n[what] += k


def _rows(db: Any, sql: str, params: list[Any] | None = None) -> Iterator[tuple[Any, ...]]:
    # fetchall: the loop below writes to the same tables
    yield from db.execute(sql, params or []).fetchall()


def _strings(value: Any, r: Redactor, keys: Mapping[str, str] | None = None) -> Any:
    """``value`` (JSON) with every string redacted as text (a run's old group key becomes
    its new one: :func:`_group_keys`); keys and other values kept. For agentmem's own
    documents (a lesson's rule, the journal's rows, a session's report), whose keys are
    agentmem's names, never a secret's."""
    if isinstance(value, str):
        return keys[value] if keys and value in keys else r.text(value)
    if isinstance(value, list):
        return [_strings(v, r, keys) for v in value]
    if isinstance(value, dict):
        return {k: _strings(v, r, keys) for k, v in value.items()}
    return value


def _json(
    text: Any, fix: Callable[[Any], Any], r: Redactor, keys: Mapping[str, str] | None = None
) -> Any:
    """A JSON column's text redacted through ``fix``; text that is no JSON as text. Text
    the rules would leave be, and that holds none of ``keys``, is returned as it is."""
    if not isinstance(text, str):
        return text
    if not text or not (r.needs(text) or (keys and any(k in text for k in keys))):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return r.text(text)
    new = fix(value)
    return text if new == value else json.dumps(new, ensure_ascii=False)


def _text(value: Any, r: Redactor) -> Any:
    return r.text(value) if isinstance(value, str) else value


def _meta(value: Any, r: Redactor) -> Any:
    return redact_meta(r, value) if isinstance(value, dict) else r.value(value)


def _update(db: Any, table: str, key: str, kid: Any, new: dict[str, Any], count: _Count) -> None:
    sets = ", ".join(f"[{c}] = ?" for c in new)
    db.execute(f"UPDATE [{table}] SET {sets} WHERE [{key}] = ?", [*new.values(), kid])
    for c in new:
        count.add(f"{table}.{c}")


def _changed(row: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    return {c: v for c, v in new.items() if v != row[c]}


# -- group keys ------------------------------------------------------------------------


def _group_keys(db: Any, r: Redactor) -> dict[str, str]:
    """Each stored group key of a run that must change, and the one key it becomes (the
    key most of its runs' redacted tasks give it; ties by the key itself)."""
    votes: dict[str, Counter[str]] = {}
    for task, key in _rows(db, "SELECT task, group_key FROM trajectories"):
        if not isinstance(key, str) or not isinstance(task, str):
            continue
        votes.setdefault(key, Counter())[redact_group(key, r.text(task), r)] += 1
    out = {}
    for key, c in votes.items():
        new = min(c, key=lambda k: (-c[k], k))
        if new != key:
            out[key] = new
    return out


def _key(key: Any, keys: dict[str, str], r: Redactor) -> Any:
    """A group key as it is stored from now on: a run's key by :func:`_group_keys`, any
    other (a pruned run's, a correction's or a similar-task group's) as text."""
    if not isinstance(key, str):
        return key
    return keys[key] if key in keys else r.text(key)


# -- runs ------------------------------------------------------------------------------


def readable(row: dict[str, Any], steps: list[dict[str, Any]], *, thorough: bool = True) -> bool:
    """Whether agentmem reads the run back (as learning does: :class:`Trajectory`). Not
    ``thorough``: only the shapes of its JSON (``meta`` and each step's ``params`` objects,
    ``essential_actions`` a list) and its tools' names, at a tenth of the cost: what an
    older team learner let in, which is all the migration looks for in a private library
    (every run recorded there went through those records)."""
    try:
        if not thorough:
            acts = row["essential_actions"]
            return (
                isinstance(json.loads(row["meta"] or "{}"), dict)
                and (acts is None or isinstance(json.loads(acts), list))
                and all(
                    isinstance(s["tool"], str)
                    and s["tool"]
                    and isinstance(json.loads(s["params"]), dict)
                    for s in steps
                )
            )
        built = [Step.from_row(s) for s in steps]
        if not all(isinstance(s.params, dict) for s in built):
            return False
        t = Trajectory.from_row(row, built)
        acts = row["essential_actions"]
        return isinstance(t.meta, dict) and (acts is None or isinstance(json.loads(acts), list))
    except Exception:  # whatever an older learner let in: not a run agentmem reads
        return False


def quarantine(
    db: Any, ids: list[int], keys: dict[str, str] | None = None, r: Redactor = DEFAULT_REDACTOR
) -> None:
    """Prune runs no agentmem can read, as ``agentmem prune`` does (their ids kept in
    ``pruned_trajectories``, so the sessions that name them still check). Any connection
    with ``execute`` will do (the team's primary too)."""
    keys = keys or {}
    at = now_iso()
    for tid in ids:
        row = db.execute("SELECT group_key, created_at FROM trajectories WHERE id = ?", [tid])
        key, created = row.fetchone()
        db.execute(
            "INSERT OR IGNORE INTO pruned_trajectories (id, group_key, created_at, pruned_at) "
            "VALUES (?, ?, ?, ?)",
            [tid, _key(key, keys, r), created, at],
        )
        for table, col in (("feedback", "trajectory_id"), ("steps", "trajectory_id")):
            db.execute(f"DELETE FROM {table} WHERE {col} = ?", [tid])
        db.execute("DELETE FROM trajectories WHERE id = ?", [tid])


_STEP_COLUMNS = ("id", "tool", "domain", "params", "output", "success")
#: The steps' columns as read here: not the outputs (most of a library's bytes), which
#: neither make a run unreadable nor are redacted again.
_READ_STEPS = ", ".join("'' AS output" if c == "output" else c for c in _STEP_COLUMNS)


def unreadable_runs(db: Any, after: int = 0, limit: int = 500) -> tuple[list[int], int]:
    """The runs with an id above ``after`` (at most ``limit`` of them read) that no agentmem
    reads (:func:`readable`), and the last id read (``after`` when there was none)."""
    cur = db.execute("SELECT * FROM trajectories WHERE id > ? ORDER BY id LIMIT ?", [after, limit])
    cols = [c[0] for c in cur.description]
    rows = [dict(zip(cols, v, strict=True)) for v in cur.fetchall()]
    if not rows:
        return [], after
    steps: dict[int, list[dict[str, Any]]] = {int(r["id"]): [] for r in rows}
    marks = ", ".join("?" * len(rows))
    for tid, *values in db.execute(
        f"SELECT trajectory_id, {_READ_STEPS} FROM steps "
        f"WHERE trajectory_id IN ({marks}) ORDER BY trajectory_id, position",
        list(steps),
    ).fetchall():
        steps[int(tid)].append(dict(zip(_STEP_COLUMNS, values, strict=True)))
    bad = [int(r["id"]) for r in rows if not readable(r, steps[int(r["id"])])]
    return bad, int(rows[-1]["id"])


def _runs(db: Any, r: Redactor, keys: dict[str, str], count: _Count) -> list[int]:
    """Redact every run's texts; the ids of the runs no agentmem reads (not changed)."""
    bad = []
    cur = db.execute("SELECT * FROM trajectories ORDER BY id")
    cols = [c[0] for c in cur.description]
    for values in cur.fetchall():
        row = dict(zip(cols, values, strict=True))
        steps = [
            dict(zip(_STEP_COLUMNS, s, strict=True))
            for s in _rows(
                db,
                f"SELECT {_READ_STEPS} FROM steps WHERE trajectory_id = ? ORDER BY position",
                [row["id"]],
            )
        ]
        if not readable(row, steps, thorough=False):
            bad.append(int(row["id"]))
            continue
        new = _changed(
            row,
            {
                "task": _text(row["task"], r),
                "group_key": keys.get(row["group_key"], row["group_key"]),
                "condition": _text(row["condition"], r),
                "source": _text(row["source"], r),
                "meta": _json(row["meta"], lambda v: _meta(v, r), r),
                "essential_actions": _json(row["essential_actions"], r.value, r),
            },
        )
        if new:
            _update(db, "trajectories", "id", row["id"], new, count)
        for s in steps:  # (outputs and parameters: see the module doc)
            tool = r.text(s["tool"])[:MAX_TOOL_NAME] if isinstance(s["tool"], str) else s["tool"]
            if tool != s["tool"]:
                _update(db, "steps", "id", s["id"], {"tool": tool}, count)
    return bad


def _column(
    db: Any,
    table: str,
    key: str,
    fixes: Mapping[str, Callable[[Any], Any]],
    count: _Count,
    *,
    unique: bool = False,
) -> None:
    """Rewrite ``fixes``' columns of every row of ``table`` (``key``: its rowid or primary
    key). With ``unique``, a row whose new value another row holds already (the two
    differed only in a secret) is deleted: the other stands for both."""
    cols = ", ".join(f"[{c}]" for c in fixes)
    for kid, *values in _rows(db, f"SELECT {key}, {cols} FROM [{table}]"):
        row = dict(zip(fixes, values, strict=True))
        new = _changed(row, {c: f(row[c]) for c, f in fixes.items()})
        if not new:
            continue
        sets = ", ".join(f"[{c}] = ?" for c in new)
        try:
            db.execute(f"UPDATE [{table}] SET {sets} WHERE {key} = ?", [*new.values(), kid])
        except Exception as e:  # sqlite3.IntegrityError: a key another row holds
            if not unique or "UNIQUE" not in str(e):
                raise
            db.execute(f"DELETE FROM [{table}] WHERE {key} = ?", [kid])
            count.add(f"{table}.merged")
            continue
        for c in new:
            count.add(f"{table}.{c}")


# -- the whole library -----------------------------------------------------------------


def _other_columns(
    r: Redactor, keys: dict[str, str]
) -> list[tuple[str, str, dict[str, Callable[[Any], Any]], bool]]:
    """Every other stored text, one entry a table: (table, its key, what each column goes
    through, whether a rewritten key may meet another row's: see :func:`_column`)."""

    def t(v: Any) -> Any:
        return _text(v, r)

    def k(v: Any) -> Any:
        return _key(v, keys, r)

    def doc(v: Any) -> Any:
        return _json(v, lambda x: _strings(x, r, keys), r, keys)

    def path(v: Any) -> Any:
        return redact_path(r, v) if isinstance(v, str) else v

    def paths(v: Any) -> Any:  # a scope's support: a list of project paths
        return [path(p) for p in v] if isinstance(v, list) else _strings(v, r)

    def session(v: Any) -> Any:  # as the served log holds it (agentmem.served.record)
        return scrubbed(v) if isinstance(v, str) else v

    def project(v: Any) -> Any:
        return scrubbed(v, path=True) if isinstance(v, str) else v

    def support(v: Any) -> Any:
        return _json(v, paths, r)

    def payload(v: Any) -> Any:
        return _payload(v, r)

    return [
        ("feedback", "id", {"note": t}, False),
        ("pruned_trajectories", "id", {"group_key": k}, False),
        ("experiences", "id", {"text": t, "rule": doc, "capabilities": doc}, False),
        (
            "operations",
            "id",
            {"group_key": k, "text": t, "before": doc, "after": doc, "reason": t},
            False,
        ),
        ("sessions", "id", {"report": doc, "params": doc}, False),
        ("session_groups", "rowid", {"group_key": k, "summaries": doc, "reason": t}, True),
        ("imported_turns", "rowid", {"session_id": t, "turn_id": t, "note": t}, True),
        ("imported_files", "rowid", {"path": path}, True),
        ("experience_scopes", "rowid", {"project": path, "reason": t, "support": support}, False),
        ("team_outbox", "uuid", {"payload": payload}, False),
        ("team_claims", "group_key", {"group_key": k}, True),
        ("served", "id", {"client_session": session, "project": project}, False),
    ]


def redact_stored(
    db: Any,
    r: Redactor = DEFAULT_REDACTOR,
    *,
    log: str | None = None,
    local: bool = True,
) -> ScrubReport:
    """Redact every stored text of the library ``db`` (inside the caller's transaction),
    and the served log at ``log`` (default: the one beside ``db``'s file); what changed.
    See the module doc. Not ``local``: a team's primary (any connection with ``execute``),
    which has no served log and whose file this process does not hold."""
    count = _Count()
    if local:
        # What a rewrite frees is overwritten, not left in the file's free pages (for this
        # connection's life: the keyword index that opening rebuilds after this too).
        db.execute("PRAGMA secure_delete = ON")
    keys = _group_keys(db, r)
    bad = _runs(db, r, keys, count)
    quarantine(db, bad, keys, r)
    for table, key, fixes, unique in _other_columns(r, keys):
        _column(db, table, key, fixes, count, unique=unique)
    if {"experiences.text", "trajectories.task", "steps.tool"} & set(count.n):
        db.execute("DELETE FROM settings WHERE key = ?", [_KEYWORD_VERSION])  # rebuilt on open
    lines, log_error = _served_log(db, log) if local else (0, None)
    report = ScrubReport(dict(count.n), tuple(bad), lines, log_error)
    if report.changed or bad or lines or log_error:
        db.execute(
            "INSERT INTO settings (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [SETTING, json.dumps({"at": now_iso(), **report.as_dict()})],
        )
    return report


def _payload(text: Any, r: Redactor) -> Any:
    """A team outbox item redacted as :func:`agentmem.team.outbox.redact_shared_run`
    redacts a run (a verdict: its note)."""
    if not isinstance(text, str) or not r.needs(text):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return r.text(text)
    if not isinstance(value, dict):
        return json.dumps(r.value(value), ensure_ascii=False)
    out = dict(value)
    run = value.get("trajectory")
    if isinstance(run, dict):
        run = dict(run)
        task = _text(run.get("task"), r)
        run["task"] = task
        group = run.get("group_key")
        if isinstance(group, str) and isinstance(task, str):
            run["group_key"] = redact_group(group, task, r)
        for c in ("condition", "source"):
            run[c] = _text(run.get(c), r)
        run["meta"] = _json(run.get("meta"), lambda v: _meta(v, r), r)
        run["essential_actions"] = _json(run.get("essential_actions"), r.value, r)
        out["trajectory"] = run
    if isinstance(value.get("steps"), list):
        out["steps"] = [
            {
                **s,
                **{c: _text(s.get(c), r) for c in ("tool", "domain", "output")},
                "params": _json(s.get("params"), r.value, r),
            }
            if isinstance(s, dict)
            else r.value(s)
            for s in value["steps"]
        ]
    if isinstance(value.get("feedback"), list):
        out["feedback"] = [
            {**f, "note": _text(f.get("note"), r)} if isinstance(f, dict) else r.value(f)
            for f in value["feedback"]
        ]
    if "note" in value:
        out["note"] = _text(value["note"], r)
    return text if out == value else json.dumps(out, ensure_ascii=False)


# -- the served log --------------------------------------------------------------------


def _db_file(db: Any) -> str | None:
    for _seq, name, file in db.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return str(file) or None
    return None


def _served_line(raw: bytes) -> bytes:
    """One line of the served log as :func:`agentmem.served.record` writes it today."""
    try:
        line = json.loads(raw)
    except ValueError:
        return DEFAULT_REDACTOR.text(raw.decode("utf-8", "replace")).encode()
    if not isinstance(line, dict):
        return raw
    new = dict(line)
    if isinstance(line.get("session"), str):
        new["session"] = scrubbed(line["session"])
    if isinstance(line.get("project"), str):
        new["project"] = scrubbed(line["project"], path=True)
    if new == line:
        return raw
    return json.dumps(new, separators=(",", ":"), ensure_ascii=True).encode()


def _served_log(db: Any, log: str | None) -> tuple[int, str | None]:
    """Rewrite the served log (a plain file only) with its ids and paths scrubbed, and move
    the read offset to the same line: (the lines changed, why it could not be rewritten).
    The new file replaces the old one (rename); a line a prompt hook appends meanwhile
    may be lost. A log that cannot be rewritten never stops the migration: it is named
    in the report (:data:`SETTING`)."""
    if log is None:
        base = _db_file(db)
        if base is None:
            return 0, None
        log = base + SUFFIX
    row = db.execute("SELECT value FROM settings WHERE key = ?", [_OFFSET]).fetchone()
    try:
        offset = json.loads(row[0]) if row is not None else 0
    except ValueError:
        offset = None
    if type(offset) is not int:
        row, offset = None, 0  # not an offset agentmem wrote: left as it is
    try:
        f = open_regular(log)
    except (OSError, ValueError):
        return 0, None  # none, or not a plain file: nothing agentmem wrote
    folder = os.path.dirname(os.path.abspath(log))
    tmp = None
    try:
        with f:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".served-", suffix=".tmp")
            changed = pos = new_pos = 0
            new_offset = None
            with os.fdopen(fd, "wb") as out:
                for raw in f:  # lines as the log's reader splits them (at b"\n")
                    if new_offset is None and offset <= pos:
                        new_offset = new_pos  # where the line after the last one read starts
                    body = raw.rstrip(b"\n")
                    new = _served_line(body) if body.strip() else body
                    changed += new != body
                    out.write(new + raw[len(body) :])
                    pos += len(raw)
                    new_pos += len(new) + len(raw) - len(body)
        if not changed:
            os.unlink(tmp)
            return 0, None
        os.chmod(tmp, 0o600)
        os.replace(tmp, log)
    except OSError as e:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return 0, f"the served log {log} could not be rewritten: {e.strerror or e}"
    if row is not None and offset <= pos:  # (an offset past the end is the reader's to mend)
        moved = new_pos if new_offset is None else new_offset
        db.execute("UPDATE settings SET value = ? WHERE key = ?", [json.dumps(moved), _OFFSET])
    return changed, None
