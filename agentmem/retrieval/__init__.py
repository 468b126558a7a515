"""Retrieval: the lessons that fit a task, found by keywords and vectors, behind a floor.

One implementation serves every caller (see :mod:`agentmem.retrieval.pipeline`):
``Memory.retrieve``/``Memory.context`` (and through them the CLI and the MCP
server), Stage 2 of learning, and :func:`context_text`, the shortcut a prompt
hook calls before every prompt. Importing this package imports neither click,
sqlite-utils, numpy nor llama.cpp.

:func:`context_text` opens the file read-only with the standard library, embeds
the prompt with :func:`agentmem.wordllama.query_vector` when the index was built
with WordLlama (no numpy, no ``tokenizers``), and runs the same pipeline as
``Memory.context``; when the file needs anything a reader cannot do (it does not
exist yet, it needs a migration, its index was built by another model) it opens
it with :class:`agentmem.Memory` instead, so the answer is always the full path's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

from .. import index, keyword_index, wordllama
from ..terms import TERMS_VERSION
from .pipeline import Found, live_rows, scope, search
from .ranking import DEFAULT, Evidence, Ranking

__all__ = [
    "DEFAULT",
    "HEADER",
    "Evidence",
    "Found",
    "Ranking",
    "context_text",
    "fast_context",
    "format_context",
    "live_rows",
    "scope",
    "search",
]

HEADER = "Lessons from earlier runs of similar tasks (apply when they fit):"

Vector = Sequence[float]


def format_context(texts: Sequence[str]) -> str:
    """The block an agent puts in its system prompt; empty when there is nothing."""
    if not texts:
        return ""
    return "\n".join([HEADER, *(f"- {t}" for t in texts)])


def _wordllama_dims(name: str | None) -> int | None:
    """The dims of the WordLlama embedder that ``name`` resolves to, if it is one
    (:func:`agentmem.embeddings.get_embedder`'s rules, without importing it)."""
    if name is None or name.strip().lower() == "default":
        name = os.environ.get("AGENTMEM_EMBEDDER", "").strip()
        if not name or name.lower() == "default":
            return 256 if wordllama.package_dir() is not None else None
    base, _, option = name.strip().lower().partition("-")
    if base != "wordllama" or (option and option not in ("64", "128", "256")):
        return None
    return int(option) if option else 256


def _query_vector(conn: Any) -> Callable[[str], Vector] | None:
    """The library's query embedding, if it built the index: WordLlama's without numpy,
    any other through :func:`agentmem.embeddings.get_embedder`; None on a mismatch."""
    info = index.index_info(conn)
    row = conn.execute("SELECT value FROM settings WHERE key = 'embedder'").fetchone()
    name = None if row is None else json.loads(row[0])
    dims = _wordllama_dims(name)
    if dims is not None and info == (wordllama.model_id(dims), dims):
        return lambda text: wordllama.query_vector(text, dims)
    from ..embeddings import get_embedder

    emb = get_embedder(name)
    if info != (emb.model_id, emb.dims):
        return None  # the full path explains the mismatch
    return lambda text: emb.embed_batch([text])[0]


def fast_context(
    path: str | os.PathLike[str],
    prompt: str,
    *,
    tools: Sequence[str] | None = None,
    domains: Sequence[str] | None = None,
    k: int = 5,
    min_score: float | None = None,
) -> str | None:
    """:func:`context_text` through a read-only connection, or None when the file needs
    the full path (missing, not migrated, another embedder, bad arguments)."""
    if not prompt.strip() or not 1 <= k <= 1000 or not os.path.isfile(path):
        return None
    from .._sqlite import open_reader

    try:
        conn = open_reader(path)
    except Exception:
        return None
    try:
        if keyword_index.version(conn) != TERMS_VERSION:
            return None  # an older file: opening it with Memory upgrades it
        embed = _query_vector(conn) if index.index_info(conn) is not None else None
        if embed is None and index.index_info(conn) is not None:
            return None
        found = search(conn, prompt, embed, tools=tools, domains=domains, k=k, min_score=min_score)
        return format_context([f.text for f in found])
    except Exception:  # anything odd: the full path reports it properly
        return None
    finally:
        conn.close()


def context_text(
    db_path: str | os.PathLike[str],
    prompt: str,
    *,
    tools: Sequence[str] | None = None,
    domains: Sequence[str] | None = None,
    k: int = 5,
    min_score: float | None = None,
) -> str:
    """The lessons block for ``prompt`` (empty when none fits), as ``Memory.context`` gives.

    For prompt hooks: cheap to import and to call (see the module docstring).
    ``tools``: the tools the agent is about to use, if known; lessons naming one of
    them come first. ``min_score`` overrides the relevance floor.
    """
    fast = fast_context(db_path, prompt, tools=tools, domains=domains, k=k, min_score=min_score)
    if fast is not None:
        return fast
    from ..memory import Memory

    with Memory.open(db_path) as mem:
        return mem.context(prompt, tools=tools, domains=domains, k=k, min_score=min_score)
