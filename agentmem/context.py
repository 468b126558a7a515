"""The lessons block for a prompt, as prompt hooks ask for it before every prompt.

:func:`context_text` is :meth:`agentmem.Memory.context` for a hook: cheap to import
and to call. :func:`fast_context` opens the file read-only with the standard
library, resolves the library's embedder by name
(:func:`agentmem.embeddings.get_embedder`, which loads nothing), embeds the
prompt with :func:`agentmem.embeddings.wordllama.query_vector` when that embedder
is WordLlama (no numpy, no ``tokenizers``), and runs the one retrieval pipeline
(:func:`agentmem.retrieval.pipeline.search`), the team replica's too. When the
file needs anything a reader cannot do (it does not exist yet, it needs a
migration, its index was built by another model) it answers None and
:func:`context_text` opens the file with :class:`agentmem.Memory` instead, so the
answer is always the full path's. Importing this module imports neither click,
sqlite-utils, numpy, attrs nor llama.cpp; ``agentmem context`` comes here from
:mod:`agentmem._entry` without loading the CLI.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from . import served
from ._sqlite import open_reader
from .embeddings import get_embedder, wordllama
from .projects import project_of
from .retrieval import format_context
from .retrieval.pipeline import search
from .storage import keyword_index, project_states, settings, vector_index
from .terms import TERMS_VERSION

__all__ = ["context_text", "fast_context"]

Vector = Sequence[float]


def _embedder(name: str | None) -> tuple[tuple[str, int], Callable[[str], Vector]]:
    """(model_id, dims) of the embedder ``name`` resolves to, and its query embedding:
    WordLlama's without numpy, any other the embedder's own."""
    emb = get_embedder(name)
    if isinstance(emb, wordllama.WordLlamaEmbedder):
        dims = emb.dims
        return (emb.model_id, dims), lambda text: wordllama.query_vector(text, dims)
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
    session: str | None = None,
    route: str = "context",
) -> str | None:
    """:func:`context_text` through a read-only connection, or None when the file needs
    the full path (missing, not migrated, another embedder, bad arguments)."""
    if not prompt.strip() or not 1 <= k <= 1000 or not os.path.isfile(path):
        return None
    try:
        conn = open_reader(path)
    except Exception:
        return None
    try:
        stored = settings.raw(conn)
        if keyword_index.version(conn) != TERMS_VERSION:
            return None  # an older file: opening it with Memory upgrades it
        info = vector_index.index_info(conn)
        mine, embed_once = _embedder(settings.get(conn, settings.EMBEDDER))
        if info is not None and info != mine:
            return None  # the full path explains the mismatch
        vectors: dict[str, Vector] = {}

        def embed(text: str) -> Vector:  # the prompt is embedded once, for the team's too
            if text not in vectors:
                vectors[text] = embed_once(text)
            return vectors[text]

        where = project_of(project) if project is not None else None
        if project_states.state_of(stored, where) is not None:
            return ""  # a paused or excluded project is served nothing
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
        found = served.serve(  # the holdout, and the served log (agentmem.served)
            path,
            found,
            [f.id for f in found],
            prompt,
            stored,
            route=route,
            session=session,
            project=where,
            why=[f.reason for f in found],
        )
        texts = [f.text for f in found]
        if settings.TEAM in stored:  # -- team touch point: the replica's lessons, merged
            from .team.reads import config_of, fast_team_hits, mark, merge_hits

            if config_of(stored) is None:
                return format_context(texts)
            private = [(f.score, f.text) for f in found]
            shared = fast_team_hits(
                str(path), stored, prompt, embed, mine, tools, domains, k, min_score, where
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
    session: str | None = None,
    route: str = "context",
) -> str:
    """The lessons block for ``prompt`` (empty when none fits), as ``Memory.context`` gives.

    For prompt hooks: cheap to import and to call (see the module docstring).
    ``tools``: the tools the agent is about to use, if known; lessons naming one of
    them come first. ``project``: the folder the agent works in (its git root
    counts); lessons scoped to another project are left out. ``min_score``
    overrides the relevance floor. ``session`` (the client's session id) and ``route``
    go into the served log (:mod:`agentmem.served`).
    """
    fast = fast_context(
        db_path,
        prompt,
        tools=tools,
        domains=domains,
        k=k,
        min_score=min_score,
        project=project,
        session=session,
        route=route,
    )
    if fast is not None:
        return fast
    from .memory import Memory

    with Memory.open(db_path) as mem:
        return mem.context(
            prompt,
            tools=tools,
            domains=domains,
            k=k,
            min_score=min_score,
            project=project,
            session=session,
            route=route,
        )
