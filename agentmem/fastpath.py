"""``agentmem context`` without the heavy imports, for prompt hooks that run before every prompt.

The full CLI imports click's command tree, sqlite-utils (which imports numpy when it
is installed) and the record layer. This path connects with the SQLite module
directly, embeds the query, searches the index and prints, importing only what it
needs. On anything unusual (a missing or older file, a model mismatch, bad
arguments, ``--help``) it returns ``None`` and the full CLI handles the command,
with its proper messages.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["HEADER", "context_main", "context_text", "format_context"]

HEADER = "Lessons from earlier runs of similar tasks (apply when they fit):"


def format_context(texts: Sequence[str]) -> str:
    """The block an agent puts in its system prompt; empty when there is nothing."""
    if not texts:
        return ""
    return "\n".join([HEADER, *(f"- {t}" for t in texts)])


class _Conn:
    """Just enough of ``sqlite_utils.Database`` for :mod:`agentmem.index`'s read path."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.execute = conn.execute


def _vec_path() -> str:
    """sqlite-vec's loadable library, found without importing the package (which imports
    numpy, about half of this path's time)."""
    import importlib.util

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("sqlite_vec is not installed")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


def _connect(path: str) -> Any:
    try:
        import pysqlite3 as sqlite3  # the module sqlite-utils uses when it is installed
    except ImportError:
        import sqlite3  # type: ignore[no-redef]

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA mmap_size = 268435456")
    conn.enable_load_extension(True)
    conn.load_extension(_vec_path())
    conn.enable_load_extension(False)
    return conn


def _embed_query(emb: Any, text: str) -> list[float]:
    """The query's vector. For WordLlama, without numpy: the mean of the token rows,
    read straight from the bundled safetensors file, then L2-normalised (the same
    vector ``WordLlamaEmbedder.embed_batch`` gives, to float rounding)."""
    from .embeddings import WordLlamaEmbedder, _wordllama_files

    if type(emb) is not WordLlamaEmbedder or not text.strip():
        return list(emb.embed_batch([text])[0])
    import math
    import struct

    from tokenizers import Tokenizer

    weights, tok_path = _wordllama_files()
    ids = Tokenizer.from_file(str(tok_path)).encode(text, add_special_tokens=False).ids
    dims = emb.dims
    with open(weights, "rb") as fh:
        (n,) = struct.unpack("<Q", fh.read(8))
        meta = json.loads(fh.read(n))["embedding.weight"]
        rows, width = meta["shape"]
        code, size = {"F16": ("e", 2), "F32": ("f", 4)}.get(meta["dtype"], ("", 0))
        if not code:
            return list(emb.embed_batch([text])[0])
        row_format = struct.Struct(f"<{dims}{code}")
        base = 8 + n + meta["data_offsets"][0]
        total = [0.0] * dims
        for i in ids:
            fh.seek(base + min(max(i, 0), rows - 1) * width * size)
            for j, x in enumerate(row_format.unpack(fh.read(dims * size))):
                total[j] += x
    norm = math.sqrt(sum(x * x for x in total))
    if not ids or norm <= 1e-12:
        return list(emb.embed_batch([text])[0])
    return [x / norm for x in total]


def _parse(argv: Sequence[str]) -> argparse.Namespace | None:
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    p.add_argument("text")
    p.add_argument("--domain", "-d", action="append", default=[])
    p.add_argument("--tool", "-t", action="append", default=[])
    p.add_argument("-k", type=int, default=5)
    p.add_argument("--db")
    p.add_argument("--project")
    try:
        args, rest = p.parse_known_args(list(argv))
    except SystemExit:
        return None
    if rest or not args.text.strip() or not 1 <= args.k <= 1000:
        return None
    return args


def context_main(argv: Sequence[str]) -> int | None:
    """Run ``agentmem context ARGS``; ``None`` means: let the full CLI do it."""
    args = _parse(argv)
    if args is None:
        return None
    from .projects import project_of

    block = context_text(
        args.text,
        db_path=args.db,
        project=project_of(args.project) if args.project else None,
        tools=args.tool,
        domains=args.domain,
        k=args.k,
    )
    if block is None:
        return None
    if block:
        sys.stdout.write(block + "\n")
    return 0


def context_text(
    text: str,
    *,
    db_path: str | None = None,
    project: str | None = None,
    tools: Sequence[str] = (),
    domains: Sequence[str] = (),
    k: int = 5,
) -> str | None:
    """The context block for ``text`` (served in ``project``), or ``None``: use the full path."""
    from .paths import default_db_path

    path = db_path or str(default_db_path())
    if not os.path.isfile(path):
        return None
    try:
        conn = _connect(path)
        try:
            return _block(_Conn(conn), text, project, list(tools), list(domains), k, path)
        finally:
            conn.close()
    except Exception:  # anything odd: the full CLI reports it properly
        return None


def _block(
    db: _Conn,
    text: str,
    project: str | None,
    tools: list[str],
    domains_: list[str],
    k: int,
    path: str,
) -> str | None:
    from . import index
    from .projects import hidden_ids, visible_top
    from .team.reads import config_of, fast_team_hits, mark, merge_hits

    settings = dict(db.execute("SELECT key, value FROM settings").fetchall())
    info = index.index_info(db)  # type: ignore[arg-type]
    team = config_of(settings)
    if info is None and team is None:
        return ""  # no index yet: nothing to retrieve
    from .embeddings import get_embedder

    name = json.loads(settings["embedder"]) if "embedder" in settings else None
    emb = get_embedder(name)
    mine = (emb.model_id, emb.dims)
    if info is not None and mine != info:
        return None  # the full CLI explains the mismatch
    domains: list[str] | None = None
    if tools or domains_:
        from .domains import domain_for

        over = dict(db.execute("SELECT tool, domain FROM tool_domains").fetchall())
        domains = sorted(set(domains_) | {domain_for(t, over) for t in tools})
    vec = _embed_query(emb, text)
    private: list[tuple[float, str]] = []
    if info is not None:
        db.execute("BEGIN")  # the index, the scopes and the texts from one committed state
        try:
            hidden = hidden_ids(db, project)  # lessons served only in other projects
            hits = visible_top(
                lambda n: index.search(db, vec, domains=domains, k=n),  # type: ignore[arg-type]
                k,
                hidden,
                lambda hit: hit[0],
            )
            ids = [i for i, _ in hits]
            rows = dict(
                db.execute(
                    "SELECT id, text FROM experiences WHERE status = 'live' "
                    f"AND id IN ({','.join('?' * len(ids))})",
                    ids,
                ).fetchall()
            )
        finally:
            db.execute("COMMIT")
        private = [(s, rows[i]) for i, s in hits if i in rows]
    texts = [t for _, t in private]
    if team is not None:  # -- team touch point: the replica's lessons, merged and marked
        try:
            shared = fast_team_hits(path, settings, vec, mine, domains, k)
        except LookupError:
            return None  # the full CLI explains the mismatch
        merged = merge_hits(private, shared, k=k, score=lambda h: h[0], text=lambda h: h[1])
        texts = [mark(h[1], source) for source, h in merged]
    return format_context(texts)
