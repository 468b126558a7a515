"""The runs primary's inbox: how shared runs travel from members to the team library.

A member's token is read-only on the lessons primary, so a member cannot write
a run into the team library itself. It appends its shared runs here instead,
on the *runs* primary, where its token may write and where no lesson lives
(:func:`push`, one transaction of ``INSERT ... ON CONFLICT (uuid) DO NOTHING``
a batch, over sqld's HTTP pipeline).

The learner takes them into the team library (:func:`collect`): every item is
parsed and checked against the shape agentmem itself writes (:func:`validate`:
types, sizes, known verdicts, uuids), redacted again with agentmem's rules
whatever the member's library did, and inserted on the lessons primary in one
transaction with the inbox position it reached (the ``team_inbox_seq``
setting), so that two learners, or a learner killed half-way, take each item
once. An item that fails a check is skipped, counted and named; it never stops
the rest. Members can disturb the inbox (sqld grants a whole database, not a
table), but whatever they write there reaches the lessons only as a validated
run that the learner's session learns from under the usual rules.

What a member can do to the inbox, and why it stops nobody (issue 30):

* **jam it with a row**: the learner takes every row, valid or not, and marks it
  done (emptied) once taken or refused; a bad row is counted, never retried. ``seq`` is
  SQLite's own rowid (no ``AUTOINCREMENT``), so a row at ``2^63-1`` makes SQLite
  pick a free rowid for the next push instead of failing with "database or disk
  is full"; the learner reads by ``seq`` order but never skips a row by it.
* **jam it with schema**: a trigger, an index, a view or a rebuilt ``inbox``
  table is undone by :func:`repair`, which ``agentmem team serve`` runs at start,
  the learner before every collect, and a member's push when a push fails.
* **speak for another member**: every item carries its member's name and an
  Ed25519 signature (:mod:`~agentmem.team.signing`); the learner checks it against
  the keys ``team serve`` publishes on the lessons primary, refuses a bad one and
  an item of a revoked or unknown member, and records the verified member in the
  run's ``meta.team_member`` (whatever the item said there). A revoked member's
  pending items are deleted when ``team serve`` takes the revocation in.
"""

from __future__ import annotations

import contextlib
import json
import uuid as uuidlib
from collections.abc import Sequence
from typing import Any

import attrs

from ..db import write
from ..errors import InvalidRecordError, TeamError, TeamRefusedError, TeamUnavailableError
from ..jsonsafe import JSONInputError, loads
from ..storage import settings, trajectories
from ..timestamps import parse_time
from .signing import MEMBERS_SETTING, Signer, parse_members, verify

__all__ = [
    "CURSOR",
    "CollectReport",
    "InvalidItemError",
    "collect",
    "create",
    "push",
    "repair",
    "validate",
]

#: The setting on the lessons primary that older learners kept their inbox position in
#: (unused now: every row is marked done once taken or refused).
CURSOR = "team_inbox_seq"
#: The largest item the learner takes in (JSON text, characters).
MAX_ITEM = 8_000_000
MAX_STEPS = 10_000
MAX_FEEDBACK = 1_000
_VERDICTS = ("accept", "correct", "reject")

#: The inbox table. ``seq`` is the rowid, with no AUTOINCREMENT: SQLite never runs out
#: of one (past the largest it picks a free one), whatever a member wrote.
_TABLE = (
    "CREATE TABLE inbox (seq INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, "
    "kind TEXT NOT NULL, payload TEXT NOT NULL, pushed_at TEXT NOT NULL, "
    "member TEXT, signature TEXT)"
)
_SCHEMA = _TABLE.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1)
_COLUMNS = ("uuid", "kind", "payload", "pushed_at", "member", "signature")


def _norm(sql: object) -> str:
    """A table's SQL, compared whatever its spacing, case and quotes (SQLite writes the
    name quoted after ``ALTER TABLE ... RENAME``)."""
    text = str(sql).replace('"', "").replace("`", "").replace("[", "").replace("]", "")
    return " ".join(text.split()).lower()


def repair(url: str, *, token: str) -> list[str]:
    """Give the runs primary its inbox table as agentmem made it, undoing what a member
    changed: every trigger, view and index of its own is dropped, and a table of another
    shape is rebuilt (its rows copied where they can be). What was done, for messages."""
    from .hrana import pipeline

    rows = pipeline(
        url, [("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL", [])], token=token
    )[0]
    fix: list[tuple[str, list[Any]]] = []
    done: list[str] = []
    table = None
    for kind, name, sql in rows:
        quoted = '"' + str(name).replace('"', '""') + '"'
        if kind in ("trigger", "view", "index"):
            fix.append((f"DROP {str(kind).upper()} IF EXISTS {quoted}", []))
            done.append(f"dropped {kind} {name}")
        elif kind == "table" and str(name).lower() == "inbox":
            table = (str(name), sql)
    if table is not None and _norm(table[1]) != _norm(_TABLE):
        cols = {
            str(r[0])
            for r in pipeline(
                url, [("SELECT name FROM pragma_table_info('inbox')", [])], token=token
            )[0]
        }
        keep = [c for c in _COLUMNS if c in cols]
        fix.append(("DROP TABLE IF EXISTS inbox_rebuilt", []))
        fix.append((_TABLE.replace("TABLE inbox", "TABLE inbox_rebuilt", 1), []))
        if {"uuid", "kind", "payload"} <= set(keep):
            names = ", ".join(keep)
            fix.append(
                (
                    f"INSERT OR IGNORE INTO inbox_rebuilt ({names}) SELECT {names} FROM inbox "
                    "WHERE typeof(uuid) = 'text' AND typeof(kind) = 'text' "
                    "AND typeof(payload) = 'text'"
                    + (" AND pushed_at IS NOT NULL" if "pushed_at" in keep else ""),
                    [],
                )
            )
        fix.append(("DROP TABLE inbox", []))
        fix.append(("ALTER TABLE inbox_rebuilt RENAME TO inbox", []))
        done.append("rebuilt the inbox table")
    if table is not None and not fix:
        return done  # intact: no write
    fix.append((_SCHEMA, []))
    _run_all(url, fix, token)
    return done


def _run_all(url: str, statements: list[tuple[str, list[Any]]], token: str) -> None:
    """Run ``statements`` in one transaction; one that fails (a copy of rows a member
    broke) is left out and the rest run again."""
    from .hrana import pipeline

    wrap: list[tuple[str, list[Any]]] = [("BEGIN IMMEDIATE", []), *statements, ("COMMIT", [])]
    try:
        pipeline(url, wrap, token=token)
    except TeamError:
        with contextlib.suppress(TeamError):
            pipeline(url, [("ROLLBACK", [])], token=token)
        rest = [s for s in statements if not s[0].startswith("INSERT OR IGNORE INTO inbox_rebuilt")]
        pipeline(url, [("BEGIN IMMEDIATE", []), *rest, ("COMMIT", [])], token=token)


def create(url: str, *, token: str) -> None:
    """Give a runs primary its inbox table, or repair the one it has (:func:`repair`)."""
    repair(url, token=token)


def push(
    url: str,
    items: Sequence[tuple[str, str, str]],
    *,
    token: str,
    at: str,
    signer: Signer | None = None,
) -> int:
    """Append ``items`` (uuid, kind, payload JSON) to the inbox in one transaction, each
    signed by ``signer`` (None: unsigned); how many were new (an item sent twice is
    inserted once). A push the inbox refuses (a member changed its table) repairs the
    table (:func:`repair`) and is sent once more."""
    from .hrana import changes

    sql = (
        "INSERT INTO inbox (uuid, kind, payload, pushed_at, member, signature) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (uuid) DO NOTHING"
    )
    statements: list[tuple[str, list[Any]]] = [("BEGIN IMMEDIATE", [])]
    for key, kind, payload in items:
        member = signer.member if signer is not None else None
        signature = signer.sign(key, kind, payload) if signer is not None else None
        statements.append((sql, [key, kind, payload, at, member, signature]))
    statements.append(("COMMIT", []))
    try:
        return sum(changes(url, statements, token=token)[1:-1])
    except TeamError as e:
        if isinstance(e, (TeamRefusedError, TeamUnavailableError)):
            raise  # a token refused or a primary away: no table to repair
        with contextlib.suppress(TeamError):
            changes(url, [("ROLLBACK", [])], token=token)
        repair(url, token=token)
        return sum(changes(url, statements, token=token)[1:-1])


class InvalidItemError(TeamError, ValueError):
    """An inbox item that is not a run or verdict as agentmem writes them."""


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise InvalidItemError(what)


def _uuid(value: Any, what: str) -> str:
    try:
        ok = isinstance(value, str) and str(uuidlib.UUID(value)) == value.lower()
    except ValueError:
        ok = False
    _need(ok, f"{what} is not a uuid")
    return str(value)


def _text(value: Any, what: str, *, optional: bool = False, empty: bool = True) -> None:
    if optional and value is None:
        return
    _need(isinstance(value, str) and (empty or bool(value.strip())), f"{what} is not text")


def _time(value: Any, what: str) -> None:
    _text(value, what, empty=False)
    try:
        parse_time(value)
    except (ValueError, TypeError, OverflowError):
        raise InvalidItemError(f"{what} is not a time") from None


def _loads(text: str, what: str) -> Any:
    try:
        return loads(text, what=what)
    except JSONInputError as e:
        deep = "too deeply" in str(e)
        raise InvalidItemError(f"{what} is {'nested too deeply' if deep else 'not JSON'}") from None


def _json_text(value: Any, what: str) -> None:
    _text(value, what)
    _loads(value, what)


def _count(value: Any, what: str, top: int) -> None:
    _need(type(value) is int and 0 <= value <= top, f"{what} is out of range")


def _flag(value: Any, what: str) -> None:
    _need(value in (0, 1) and not isinstance(value, float), f"{what} is not 0 or 1")


def _check_run(t: Any, steps: Any, feedback: Any) -> None:
    _need(isinstance(t, dict) and set(t) == set(trajectories.SHARED_COLUMNS), "not a run")
    _text(t["task"], "task", empty=False)
    _text(t["group_key"], "group_key", empty=False)
    _text(t["source"], "source", empty=False)
    _text(t["condition"], "condition", optional=True)
    _text(t["essential_actions"], "essential_actions", optional=True)
    _json_text(t["meta"], "meta")
    _time(t["created_at"], "created_at")
    _count(t["step_count"], "step_count", MAX_STEPS)
    rate = t["success_rate"]
    ok = type(rate) in (int, float) and 0 <= rate <= 1
    _need(ok, "success_rate is not between 0 and 1")
    if t["state_ok"] is not None:
        _flag(t["state_ok"], "state_ok")
    _need(isinstance(steps, list) and len(steps) <= MAX_STEPS, "steps is not a list")
    for i, s in enumerate(steps):
        _need(isinstance(s, dict) and set(s) == set(trajectories.STEP_COLUMNS), f"step {i}")
        _count(s["position"], f"step {i}: position", 2**62)
        _text(s["tool"], f"step {i}: tool", empty=False)
        _text(s["domain"], f"step {i}: domain")
        _json_text(s["params"], f"step {i}: params")
        _text(s["output"], f"step {i}: output")
        _flag(s["success"], f"step {i}: success")
    _need(len({s["position"] for s in steps}) == len(steps), "two steps share a position")
    # the invariants `agentmem check` holds every library to (agentmem.check)
    positions = sorted(s["position"] for s in steps)
    _need(positions == list(range(len(steps))), "its steps are not numbered 0..K-1")
    _need(t["step_count"] == len(steps), "its step_count is not its number of steps")
    want = 1.0 if not steps else sum(s["success"] == 1 for s in steps) / len(steps)
    _need(abs(rate - want) <= 1e-9, "its success_rate is not its steps' share of successes")
    _need(isinstance(feedback, list) and len(feedback) <= MAX_FEEDBACK, "feedback is not a list")
    for f in feedback:
        _check_verdict(f, with_run=False)
    _readable(t, steps)


def _object(text: Any, what: str) -> None:
    _need(isinstance(_loads(text, what), dict), f"{what} is not a JSON object")


def _readable(t: dict[str, Any], steps: list[dict[str, Any]]) -> None:
    """The run and its steps are what agentmem's own records read back: ``params`` and
    ``meta`` JSON objects, ``essential_actions`` a JSON list of ``{name, kwargs}``, every
    value JSON (no NaN). Learning reads the team library with these records: an item
    that passes here can never stop a session."""
    from ..records import Step, Trajectory

    _object(t["meta"], "meta")
    for i, s in enumerate(steps):
        _object(s["params"], f"step {i}: params")
    if t["essential_actions"] is not None:
        acts = _loads(t["essential_actions"], "essential_actions")
        _need(isinstance(acts, list), "essential_actions is not a JSON list")
    try:
        Trajectory.from_row(
            {**t, "id": None}, [Step.from_row({**s, "success": bool(s["success"])}) for s in steps]
        )
    except InvalidRecordError as e:
        raise InvalidItemError(f"not a run agentmem reads: {e}") from None
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise InvalidItemError(f"not a run agentmem reads ({type(e).__name__})") from None


def _check_verdict(f: Any, *, with_run: bool) -> None:
    keys = {"kind", "note", "created_at"} | ({"trajectory_uuid"} if with_run else {"uuid"})
    _need(isinstance(f, dict) and set(f) == keys, "not a verdict")
    _need(f["kind"] in _VERDICTS, f"a verdict is one of {', '.join(_VERDICTS)}")
    _text(f["note"], "note", optional=True)
    _time(f["created_at"], "a verdict's created_at")
    _uuid(f["trajectory_uuid"] if with_run else f["uuid"], "a verdict's uuid")


def validate(key: Any, kind: Any, payload: Any) -> dict[str, Any]:
    """The item, checked and redacted again; :class:`InvalidItemError` says what is wrong."""
    from .outbox import redact_shared_run, redact_text

    _uuid(key, "the item's uuid")
    _need(kind in ("trajectory", "feedback"), "the item is neither a run nor a verdict")
    _need(isinstance(payload, str) and len(payload) <= MAX_ITEM, "the item is too large")
    value = _loads(payload, "the item")
    if kind == "feedback":
        _check_verdict(value, with_run=True)
        return {**value, "note": redact_text(value["note"])}
    _need(isinstance(value, dict) and set(value) == {"trajectory", "steps", "feedback"}, "shape")
    _check_run(value["trajectory"], value["steps"], value["feedback"])
    try:
        run, steps, feedback = redact_shared_run(
            value["trajectory"], value["steps"], value["feedback"]
        )
    except RecursionError:
        raise InvalidItemError("the item is nested too deeply") from None
    return {"trajectory": run, "steps": steps, "feedback": feedback}


@attrs.frozen
class CollectReport:
    """What a learner took in: items inserted, items already there, items refused (with
    why, by reason). Every item fetched was then marked done in the inbox."""

    taken: int = 0
    repeated: int = 0
    refused: dict[str, int] = attrs.field(factory=dict)
    repaired: tuple[str, ...] = ()
    #: runs already in the team library that no agentmem reads (taken in before items
    #: were validated), pruned there (:func:`sweep`)
    quarantined: tuple[int, ...] = ()

    @property
    def refused_count(self) -> int:
        return sum(self.refused.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "taken": self.taken,
            "repeated": self.repeated,
            "refused": self.refused_count,
            "refused_by_reason": dict(sorted(self.refused.items())),
            "repaired": list(self.repaired),
            "quarantined": list(self.quarantined),
        }


#: An item's ``kind`` once the learner took or refused it: its row keeps only its uuid (so
#: that the same item pushed again is no new row) and is never fetched again.
DONE = "done"
_FETCH = (
    "SELECT seq, uuid, kind, payload, member, signature FROM inbox "
    "WHERE seq > ? AND {which} ORDER BY seq LIMIT ?"
)
_RUNS = "kind = 'trajectory'"
_OTHERS = f"kind IS NOT 'trajectory' AND kind IS NOT '{DONE}'"


def _fetch(url: str, token: str, after: int, runs: bool, limit: int) -> list[tuple[Any, ...]]:
    from .hrana import pipeline

    sql = _FETCH.format(which=_RUNS if runs else _OTHERS)
    return pipeline(url, [(sql, [after, limit])], token=token)[0]


def _done(url: str, token: str, seqs: Sequence[int]) -> None:
    """Mark the rows taken or refused as done, emptied of their payload (at most 500 a
    statement)."""
    from .hrana import pipeline

    for start in range(0, len(seqs), 500):
        part = list(seqs[start : start + 500])
        marks = ", ".join("?" * len(part))
        sql = (
            f"UPDATE inbox SET kind = '{DONE}', payload = '', member = NULL, signature = NULL "
            f"WHERE seq IN ({marks})"
        )
        pipeline(url, [(sql, part)], token=token)


#: Why an item of a member that holds no live token is refused (the name is the item's
#: own word: never a reason's key, so a member cannot fill the report with names).
NOT_A_MEMBER = "signed by a member who holds no live token (revoked, expired or unknown)"
BAD_SIGNATURE = "its signature is not its member's"


def signer_of(
    members: dict[str, tuple[str, str]] | None,
    key: Any,
    kind: Any,
    payload: Any,
    member: Any,
    sig: Any,
) -> str | None:
    """The member who signed an item, checked; None for an unsigned item (nobody's), and
    for every item when ``members`` is None (a primary whose server published no keys:
    ``agentmem team serve`` does, a script that starts sqld with :func:`server.start`
    calls :meth:`server.Sqld.publish`).

    Raises :class:`InvalidItemError` for a signature that does not check or a member
    who holds no live token."""
    if member is None and sig is None:
        return None
    if members is None:  # the server never published its keys: nobody can be verified
        return None
    _need(isinstance(member, str) and isinstance(sig, str), "its member or signature is not text")
    _need(member in members, NOT_A_MEMBER)
    ok = isinstance(key, str) and isinstance(kind, str) and isinstance(payload, str)
    _need(ok and verify(members[member][1], sig, key, kind, member, payload), BAD_SIGNATURE)
    return str(member)


def attribute(item: dict[str, Any], member: str | None) -> dict[str, Any]:
    """A validated run with its verified member in ``meta.team_member`` (none: the key is
    removed, whatever the item said, and ``meta.team_unsigned`` is true) and its machine
    named as that member's, so that a machine fact learned from it is served on no laptop
    the item merely claims. The unsigned mark tells such a run from the learner's own
    recorded runs, which have no member either: it belongs to no session
    (:func:`agentmem.storage.imports.earlier_in_session`)."""
    run = dict(item["trajectory"])
    meta = json.loads(run["meta"])
    meta.pop("team_member", None)
    meta.pop("team_unsigned", None)
    if member is not None:
        meta["team_member"] = member
    else:
        meta["team_unsigned"] = True
    if isinstance(meta.get("machine"), str):
        meta["machine"] = f"{member or '(unsigned)'}:{meta['machine']}"
    run["meta"] = json.dumps(meta, ensure_ascii=False)
    return {**item, "trajectory": run}


def _check(
    members: dict[str, tuple[str, str]] | None, row: tuple[Any, ...]
) -> tuple[dict[str, Any] | None, str | None, str]:
    """(the validated item, its member, "") or (None, None, why it is refused)."""
    seq, key, kind, payload, member, sig = row
    try:
        _need(type(seq) is int and seq >= 1, "its seq is not a positive integer")
        who = signer_of(members, key, kind, payload, member, sig)
        item = validate(key, kind, payload)
        return (attribute(item, who) if kind == "trajectory" else item), who, ""
    except (ValueError, TypeError, RecursionError) as e:  # InvalidItemError, or worse
        return None, None, str(e) if isinstance(e, InvalidItemError) else type(e).__name__
    except Exception as e:  # one hostile item never stops the rest
        return None, None, f"unreadable ({type(e).__name__})"


def _verdict_owner(remote: Any, run: str) -> tuple[bool, str | None]:
    """Whether the team library holds the run with uuid ``run``, and its member."""
    row = remote.execute(
        "SELECT json_extract(meta, '$.team_member') FROM trajectories WHERE uuid = ?", [run]
    ).fetchone()
    return (False, None) if row is None else (True, row[0])


def _take(
    remote: Any,
    kind: str,
    item: dict[str, Any],
    key: str,
    who: str | None,
    learners: set[str],
) -> str:
    """Insert one validated item (inside the caller's transaction): ``taken``,
    ``repeated`` or why it is refused. A verdict is its run's member's (or a learner's)
    to give: a member cannot judge another's runs."""
    if kind == "feedback":
        held, owner = _verdict_owner(remote, item["trajectory_uuid"])
        if not held:
            return "a verdict on a run the team library does not hold"
        if owner != who and who not in learners:
            return "a verdict on another member's run"
    return "taken" if trajectories.insert_shared(remote, key, kind, item) else "repeated"


def collect(remote: Any, runs_url: str, *, token: str, batch: int = 200) -> CollectReport:
    """Take the inbox's items into the team library (``remote``, the lessons primary
    through :class:`~agentmem.team.replica.RemoteDb`), a batch a transaction, and mark
    them done in the inbox (:data:`DONE`: emptied, kept by uuid).

    The inbox is repaired first (:func:`repair`); runs are taken before verdicts, so a
    verdict finds its run. Every item is validated (:func:`validate`) and its signature
    checked against the members published on the lessons primary; an item that fails is
    refused, counted by reason and marked done: no item is ever fetched twice, and none
    can stop the rest. Taking an item twice (two learners, a learner killed before it
    marked it) inserts it once. An intact, empty inbox costs three reads there and a
    moment of the lessons primary's write lock (its members are read there, not from a
    replica that may be older)."""
    taken = repeated = 0
    refused: dict[str, int] = {}
    repaired = repair(runs_url, token=token)
    with write(remote):  # the primary's current members, not a stale replica's
        published = settings.get(remote, MEMBERS_SETTING)
    members = None if published is None else parse_members(published)
    learners = {n for n, (role, _) in (members or {}).items() if role == "learner"}
    for runs in (True, False):
        after = 0
        while True:
            rows = _fetch(runs_url, token, after, runs, batch)
            if not rows:
                break
            checked = [(row, *_check(members, row)) for row in rows]
            with write(remote):
                for row, item, who, why in checked:
                    if item is not None:
                        why = _take(remote, str(row[2]), item, str(row[1]), who, learners)
                    if why == "taken":
                        taken += 1
                    elif why == "repeated":
                        repeated += 1
                    else:
                        why = why[:200] if why in refused or len(refused) < 50 else "other"
                        refused[why] = refused.get(why, 0) + 1
            seqs = [int(r[0]) for r in rows if type(r[0]) is int]
            _done(runs_url, token, seqs)
            if len(rows) < batch or not seqs:
                break
            after = max(seqs)
    return CollectReport(taken, repeated, refused, tuple(repaired), sweep(remote))


#: The setting on the lessons primary: the newest run :func:`sweep` has checked.
CHECKED = "team_runs_checked"


def sweep(remote: Any, batch: int = 500) -> tuple[int, ...]:
    """Prune from the team library the runs no agentmem reads (a step's ``params`` or the
    ``meta`` not a JSON object, ``essential_actions`` not a JSON list: rows an older learner
    took in before items were validated), which would stop every learning session; their
    ids. Each run is checked once (the setting :data:`CHECKED`), a batch a transaction."""
    from ..scrub import quarantine, unreadable_runs

    out: list[int] = []
    while True:
        with write(remote):
            after = settings.get(remote, CHECKED, 0)
            bad, last = unreadable_runs(remote, int(after) if type(after) is int else 0, batch)
            if last == after:
                break
            quarantine(remote, bad)
            settings.put(remote, CHECKED, last)
        out += bad
    return tuple(out)
