"""The owner of table ``settings``: every read and write of a library setting.

A setting is a key and a JSON value. The keys, and who decides what they hold:

========================  ==============================================================
``embedder``              the embedder's name (:meth:`agentmem.Memory.embedder`)
``model``                 the text model's spec (:meth:`agentmem.Memory.model`)
``reward``                ``composite`` or ``binary`` (:data:`agentmem.rewards.REWARD_KINDS`)
``reward_weights``        ``[w1, w2]`` of the composite reward
``output_cap``            bytes of a tool output kept (:mod:`agentmem.outputs`)
``team``                  the team membership (:mod:`agentmem.team.config`)
``embedding_model``       the model and dimensions that built the vector index
``embedding_dims``        (:mod:`agentmem.storage.vector_index`)
``index_version``         a random number that changes with every write of the vector
                          index's blocks (set by its triggers, see :func:`bump_sql`)
``keyword_index_version`` the :data:`agentmem.terms.TERMS_VERSION` of the keyword index
``tool_usage_upto``       the newest trajectory the tool-usage profiles cover
========================  ==============================================================

Writers run inside the caller's write transaction (:func:`agentmem.db.write`).
Readers take any connection (a raw ``sqlite3`` one or a sqlite-utils ``Database``):
this module imports nothing but the standard library, for the prompt-hook path.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

__all__ = [
    "EMBEDDER",
    "MODEL",
    "OUTPUT_CAP",
    "REWARD",
    "REWARD_WEIGHTS",
    "TEAM",
    "bump_sql",
    "delete",
    "get",
    "get_many",
    "put",
    "put_random",
    "raw",
]

EMBEDDER = "embedder"
MODEL = "model"
REWARD = "reward"
REWARD_WEIGHTS = "reward_weights"
OUTPUT_CAP = "output_cap"
TEAM = "team"

_UPSERT = (
    "INSERT INTO settings (key, value) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


def get(db: Any, key: str, default: Any = None) -> Any:
    """The value of ``key``, or ``default`` when it is not set."""
    row = db.execute("SELECT value FROM settings WHERE key = ?", [key]).fetchone()
    return default if row is None else json.loads(row[0])


def get_many(db: Any, keys: Iterable[str]) -> dict[str, Any]:
    """The values of those ``keys`` that are set."""
    return {k: json.loads(v) for k, v in raw(db, keys).items()}


def raw(db: Any, keys: Iterable[str] | None = None) -> dict[str, Any]:
    """The stored (JSON) text of the settings ``keys`` that are set, or of every setting."""
    if keys is None:
        return dict(db.execute("SELECT key, value FROM settings").fetchall())
    want = list(keys)
    return dict(
        db.execute(
            f"SELECT key, value FROM settings WHERE key IN ({', '.join('?' * len(want))})",
            want,
        ).fetchall()
    )


def put(db: Any, key: str, value: Any) -> None:
    """Set ``key`` to ``value`` (JSON), in the caller's transaction."""
    db.execute(_UPSERT, [key, json.dumps(value)])


def put_random(db: Any, key: str) -> None:
    """Set ``key`` to a random number unless it is set already."""
    db.execute(
        "INSERT INTO settings (key, value) VALUES (?, random()) ON CONFLICT (key) DO NOTHING",
        [key],
    )


def delete(db: Any, *keys: str) -> None:
    """Remove the settings ``keys`` (those that are not set are ignored)."""
    db.execute(f"DELETE FROM settings WHERE key IN ({', '.join('?' * len(keys))})", list(keys))


def bump_sql(key: str) -> str:
    """The statement a trigger runs to give ``key`` a new random value (the vector index's
    ``index_version``, which a reader compares to tell whether its cached blocks are current)."""
    if not key.replace("_", "").isalnum():
        raise ValueError(f"not a settings key: {key!r}")
    return f"UPDATE settings SET value = random() WHERE key = '{key}'"
