"""The outbox: shared runs wait in the private library until the team's primary takes them.

Recording never needs the network. A shared run is written to the private
library as usual and, in the same transaction, to ``team_outbox``: a uuid (its
stable key everywhere), the trajectory's rows as JSON, redacted with agentmem's
built-in rules whatever the library's own redaction setting (a shared run is
always redacted), and ``pushed_at`` NULL. A verdict given later on a shared run
queues a ``feedback`` item the same way. Unshared runs have no outbox item and
never leave the laptop.

:func:`push` sends pending items to the inbox of the team's runs primary
(:mod:`~agentmem.team.inbox`) in batches, each batch one transaction there:
``INSERT ... ON CONFLICT (uuid) DO NOTHING``, so a batch that is sent twice (the
laptop was killed after the primary committed and before it marked the items
pushed) inserts nothing the second time. Items are marked pushed only after
the primary committed, so nothing is lost either. The team's learner takes the
inbox into the team library, validating every item.
"""

from __future__ import annotations

import json
import os
import uuid as uuidlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
from sqlite_utils import Database

from ..db import write
from ..errors import TeamError
from ..storage import outbox, settings, trajectories
from ..timestamps import now_iso

__all__ = [
    "PushReport",
    "enqueue_feedback",
    "enqueue_trajectories",
    "pending",
    "push",
    "queue_shared",
    "redact_json",
    "redact_shared_run",
    "redact_text",
]

#: Items sent to the primary in one transaction (``$AGENTMEM_TEAM_PUSH_BATCH`` overrides).
BATCH = 100


def _batch() -> int:
    try:
        return max(1, int(os.environ.get("AGENTMEM_TEAM_PUSH_BATCH", BATCH)))
    except ValueError:
        return BATCH


def _redact(value: Any) -> Any:
    from ..redact import DEFAULT_REDACTOR

    return DEFAULT_REDACTOR.value(value)


def redact_json(text: str | None) -> str | None:
    if text is None:
        return None
    return json.dumps(_redact(json.loads(text)), ensure_ascii=False)


def redact_text(text: str | None) -> str | None:
    from ..redact import DEFAULT_REDACTOR

    return None if text is None else DEFAULT_REDACTOR.text(text)


def _redact_meta(text: str | None) -> str | None:
    """A run's ``meta`` (JSON) redacted as a recorded run's is: agentmem's own ids as
    text (:func:`agentmem.redact.runs.redact_meta`)."""
    from ..redact import DEFAULT_REDACTOR
    from ..redact.runs import redact_meta

    if text is None:
        return None
    value = json.loads(text)
    if isinstance(value, dict):
        return json.dumps(redact_meta(DEFAULT_REDACTOR, value), ensure_ascii=False)
    return json.dumps(_redact(value), ensure_ascii=False)


def _redact_json_or_text(text: str | None) -> str | None:
    try:
        return redact_json(text)
    except ValueError:  # not JSON: redacted as text, whatever reads it next says why
        return redact_text(text)


def redact_shared_run(
    row: Mapping[str, Any], steps: Sequence[Mapping[str, Any]], feedback: Sequence[Any]
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """A shared run's rows (:func:`agentmem.storage.trajectories.shared_rows`' columns, the
    JSON ones as text; feedback as ``{uuid, kind, note, created_at}``) with every text
    redacted with the built-in rules: task, group key (:func:`~agentmem.redact.runs.
    redact_group`), condition, source, meta, essential actions, each step's tool,
    domain, parameters and output, each verdict's note. What the outbox sends and the
    inbox takes in; raises ``ValueError`` on JSON that is not."""
    from ..redact import DEFAULT_REDACTOR
    from ..redact.runs import redact_group

    run = dict(row)
    task = redact_text(run["task"])
    run["task"] = task
    group = run.get("group_key")
    if isinstance(group, str) and isinstance(task, str):
        run["group_key"] = redact_group(group, task, DEFAULT_REDACTOR)
    for c in ("condition", "source"):
        run[c] = redact_text(run.get(c))
    run["meta"] = _redact_meta(run.get("meta"))
    run["essential_actions"] = _redact_json_or_text(run.get("essential_actions"))
    out_steps = [
        {
            **s,
            "tool": redact_text(s["tool"]),
            "domain": redact_text(s["domain"]),
            "params": redact_json(s["params"]),
            "output": redact_text(s["output"]),
        }
        for s in steps
    ]
    out_feedback = [{**f, "note": redact_text(f["note"])} for f in feedback]
    return run, out_steps, out_feedback


def enqueue_trajectories(db: Database, ids: Sequence[int]) -> list[str]:
    """Queue these just-recorded trajectories for the team; their uuids. Call inside the
    recording's transaction, so that the run and its outbox item commit together."""
    out = []
    at = now_iso()
    for tid in ids:
        row, rows, events = trajectories.shared_rows(db, tid)
        row, steps, feedback = redact_shared_run(
            row,
            rows,
            [
                {"uuid": str(uuidlib.uuid4()), "kind": k, "note": n, "created_at": c}
                for k, n, c in events
            ],
        )
        key = str(uuidlib.uuid4())
        payload = {"trajectory": row, "steps": steps, "feedback": feedback}
        trajectories.set_uuid(db, tid, key)
        outbox.add(db, key, "trajectory", tid, json.dumps(payload, ensure_ascii=False), at)
        out.append(key)
    return out


def queue_shared(db: Database, ids: Sequence[int], share: bool | None) -> list[str]:
    """Queue just-recorded runs if they are shared: ``share`` True, or None and the library's
    team setting says ``share``. Sharing outside a team is refused (nothing is recorded)."""
    if share is False or not ids:
        return []
    team = settings.get(db, settings.TEAM)
    if team is None:
        if share:
            raise TeamError(
                "cannot share runs: this library is not in a team (agentmem team join URL)"
            )
        return []
    if share is None and not team.get("share"):
        return []
    return enqueue_trajectories(db, ids)


def enqueue_feedback(
    db: Database, trajectory_id: int, kind: str, note: str | None, created_at: str
) -> str | None:
    """Queue a verdict on a shared run (inside the feedback's transaction); None if the run
    is not shared."""
    shared_as = trajectories.uuid_of(db, trajectory_id)
    if shared_as is None:
        return None
    key = str(uuidlib.uuid4())
    payload = {
        "trajectory_uuid": shared_as,
        "kind": kind,
        "note": redact_text(note),
        "created_at": created_at,
    }
    outbox.add(
        db, key, "feedback", trajectory_id, json.dumps(payload, ensure_ascii=False), now_iso()
    )
    return key


def pending(db: Database) -> int:
    """How many items wait to be pushed."""
    return outbox.pending(db)


@attrs.frozen
class PushReport:
    """What a push did: items sent, rows the primary inserted (0 for a repeat), batches."""

    sent: int
    inserted: int
    batches: int
    left: int


def push(
    db: Database,
    send: Callable[[list[tuple[str, str, str]], str], int],
    *,
    batch: int | None = None,
    limit: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> PushReport:
    """Send pending items to the team's inbox with ``send(items, at)`` (one transaction on
    the runs primary; returns the items that were new there:
    :func:`agentmem.team.inbox.push`), then one local transaction marks them pushed.
    Items go in the order they were queued, so a verdict follows its run.
    """
    batch = batch or _batch()
    sent = inserted = batches = 0
    while limit is None or sent < limit:
        size = batch if limit is None else min(batch, limit - sent)
        items = outbox.next_batch(db, size)
        if not items:
            break
        at = now_iso()
        inserted += send(items, at)
        with write(db):
            outbox.mark_pushed(db, [key for key, _, _ in items], at)
        sent += len(items)
        batches += 1
        if progress is not None:
            progress(sent)
    return PushReport(sent=sent, inserted=inserted, batches=batches, left=pending(db))
