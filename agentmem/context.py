"""The lessons for a prompt from a library file, as prompt hooks ask for them before every prompt.

:func:`serve_file` is :meth:`agentmem.Memory.serve` for a file: cheap to import and
to call. It opens the file read-only with the standard library, resolves the
library's embedder by name (:func:`agentmem.embeddings.get_embedder`, which loads
nothing), embeds the prompt with :func:`agentmem.embeddings.wordllama.query_vector`
when that embedder is WordLlama (no numpy, no ``tokenizers``), and runs the one
serving path (:func:`agentmem.serving.serve`). When the file needs anything a reader
cannot do (it does not exist yet, it needs a migration, its index was built by
another model, the team replica is refused) it opens the file with
:class:`agentmem.Memory` instead, so the answer is always the full path's; nothing is
logged before that choice is made. Importing this module imports neither click,
sqlite-utils, numpy, attrs nor llama.cpp; ``agentmem context`` comes here from
:mod:`agentmem._entry` without loading the CLI.

:func:`context_text` and :func:`fast_context`, the block as text, are kept for
callers of their old names.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from ._sqlite import open_reader
from .embeddings import get_embedder, wordllama
from .errors import InvalidRecordError
from .serving import Query, Served, serve
from .storage import keyword_index, settings, vector_index
from .terms import TERMS_VERSION

__all__ = ["context_text", "fast_context", "lean_serve", "serve_file"]

Vector = Sequence[float]


def _embedder(name: str | None) -> tuple[tuple[str, int], Callable[[str], Vector]]:
    """(model_id, dims) of the embedder ``name`` resolves to, and its query embedding:
    WordLlama's without numpy, any other the embedder's own."""
    emb = get_embedder(name)
    if isinstance(emb, wordllama.WordLlamaEmbedder):
        dims = emb.dims
        return (emb.model_id, dims), lambda text: wordllama.query_vector(text, dims)
    return (emb.model_id, emb.dims), lambda text: emb.embed_batch([text])[0]


def lean_serve(path: str | os.PathLike[str], query: Query) -> Served | None:
    """:func:`serve_file` through a read-only connection, or None when the file needs
    the full path (missing, not migrated, another embedder, a refused replica)."""
    if not os.path.isfile(path):
        return None
    try:
        conn = open_reader(path)
    except Exception:
        return None
    try:
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

        return serve(conn, path, query, embed=embed, model=mine)
    except Exception:  # anything odd (a replica of another embedder...): the full path reports it
        return None
    finally:
        conn.close()


def serve_file(path: str | os.PathLike[str], query: Query) -> Served:
    """The lessons ``query`` gets from the library file ``path`` (see the module doc)."""
    fast = lean_serve(path, query)
    if fast is not None:
        return fast
    from .memory import Memory

    with Memory.open(path) as mem:
        return mem.serve(query)


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
    client: str | None = None,
) -> str | None:
    """:func:`context_text` through a read-only connection, or None when the file needs
    the full path (missing, not migrated, another embedder, bad arguments)."""
    try:
        query = Query(
            prompt,
            tools=tools,
            domains=domains,
            k=k,
            min_score=min_score,
            project=project,
            session=session,
            route=route,
            client=client,
        )
    except InvalidRecordError:
        return None
    got = lean_serve(path, query)
    return None if got is None else got.text


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
    client: str | None = None,
) -> str:
    """The lessons block for ``prompt`` (empty when none fits), as ``Memory.context`` gives.

    For prompt hooks: cheap to import and to call (see the module docstring).
    ``tools``: the tools the agent is about to use, if known; lessons naming one of
    them come first. ``project``: the folder the agent works in (its git root
    counts); lessons scoped to another project are left out. ``min_score``
    overrides the relevance floor. ``client`` (``claude-code``, ``codex``; None:
    unknown): the agent that reads the block; a lesson about the other client's own
    tool is left out. ``session`` (the client's session id) and ``route`` go into the
    served log (:mod:`agentmem.served`). Empty, and nothing logged, under
    ``AGENTMEM_SERVE=off`` (:func:`agentmem.paths.serving_off`).
    """
    from .paths import serving_off

    if serving_off():
        return ""
    query = Query(
        prompt,
        tools=tools,
        domains=domains,
        k=k,
        min_score=min_score,
        project=project,
        session=session,
        route=route,
        client=client,
    )
    return serve_file(db_path, query).text
