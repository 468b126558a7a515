"""Retrieval: the lessons that fit a task, found by keywords and vectors, behind a floor.

One implementation serves every caller (see :mod:`agentmem.retrieval.pipeline`):
``Memory.retrieve``/``Memory.context`` (and through them the CLI and the MCP
server), Stage 2 of learning, and :func:`context_text`, the shortcut a prompt
hook calls before every prompt. Importing this package imports neither click,
sqlite-utils, numpy nor llama.cpp.

:func:`context_text` opens the file read-only with the standard library, embeds
the prompt with :func:`agentmem.embeddings.wordllama.query_vector` when the index was built
with WordLlama (no numpy, no ``tokenizers``), and runs the same pipeline as
``Memory.context``; when the file needs anything a reader cannot do (it does not
exist yet, it needs a migration, its index was built by another model) it opens
it with :class:`agentmem.Memory` instead, so the answer is always the full path's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence

from ..embeddings import wordllama
from ..projects import project_of
from ..storage import keyword_index, settings, vector_index
from ..terms import TERMS_VERSION
from .pipeline import Found, scope, search, search_many
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
    "scope",
    "search",
    "search_many",
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


def _embedder(name: str | None) -> tuple[tuple[str, int], Callable[[str], Vector]]:
    """(model_id, dims) of the embedder ``name`` resolves to, and its query embedding:
    WordLlama's without numpy, any other through :func:`agentmem.embeddings.get_embedder`."""
    dims = _wordllama_dims(name)
    if dims is not None:
        return (wordllama.model_id(dims), dims), lambda text: wordllama.query_vector(text, dims)
    from ..embeddings import get_embedder

    emb = get_embedder(name)
    return (emb.model_id, emb.dims), lambda text: emb.embed_batch([text])[0]


def fast_context(
    path: str | os.PathLike[str],
    prompt: str,
    *,
    tools: Sequence[str] | None = None,
    domains: Sequence[str] | None = None,
    k: int = 5,
    min_score: float | None = None,
    project: str | os.PathLike[str] | None = None,
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
        stored = settings.raw(conn)
        if keyword_index.version(conn) != TERMS_VERSION:
            return None  # an older file: opening it with Memory upgrades it
        info = vector_index.index_info(conn)
        name = json.loads(stored["embedder"]) if "embedder" in stored else None
        mine, embed_once = _embedder(name)
        if info is not None and info != mine:
            return None  # the full path explains the mismatch
        vectors: dict[str, Vector] = {}

        def embed(text: str) -> Vector:  # the prompt is embedded once, for the team's too
            if text not in vectors:
                vectors[text] = embed_once(text)
            return vectors[text]

        where = project_of(project) if project is not None else None
        found = search(
            conn,
            prompt,
            embed,
            tools=tools,
            domains=domains,
            k=k,
            min_score=min_score,
            project=where,
        )
        texts = [f.text for f in found]
        if "team" in stored:  # -- team touch point: the replica's lessons, merged and marked
            from ..team.reads import config_of, fast_team_hits, mark, merge_hits

            if config_of(stored) is None:
                return format_context(texts)
            private = [(f.score, f.text) for f in found]
            shared = fast_team_hits(
                str(path), stored, prompt, embed, mine, tools, domains, k, min_score
            )
            merged = merge_hits(private, shared, k=k, score=lambda h: h[0], text=lambda h: h[1])
            texts = [mark(h[1], source) for source, h in merged]
        return format_context(texts)
    except Exception:  # anything odd (a replica of another embedder...): the full path reports it
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
    project: str | os.PathLike[str] | None = None,
) -> str:
    """The lessons block for ``prompt`` (empty when none fits), as ``Memory.context`` gives.

    For prompt hooks: cheap to import and to call (see the module docstring).
    ``tools``: the tools the agent is about to use, if known; lessons naming one of
    them come first. ``project``: the folder the agent works in (its git root
    counts); lessons scoped to another project are left out. ``min_score``
    overrides the relevance floor.
    """
    fast = fast_context(
        db_path, prompt, tools=tools, domains=domains, k=k, min_score=min_score, project=project
    )
    if fast is not None:
        return fast
    from ..memory import Memory

    with Memory.open(db_path) as mem:
        return mem.context(
            prompt, tools=tools, domains=domains, k=k, min_score=min_score, project=project
        )
