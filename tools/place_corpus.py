"""Place the real-session corpus from its list of sources, verifying every blob.

    python tools/place_corpus.py --mirrors /work/.mirror [--out DIR] [--only PREFIX]
    python tools/place_corpus.py --check [--mirrors /work/.mirror] [--out DIR]

The corpus's files are third-party data: the project commits only where each one comes
from, one row per file in ``benchmarks/real/SOURCES.md``, a markdown table with the
columns of :data:`COLUMNS`::

    | file | client | version | source repo | path in repo | commit | blob | licence | kept |
      lines | tool calls | failed |   (one line)

``blob`` is the git blob id of the source file at ``commit``; ``kept`` is ``whole`` (the
blob byte for byte), ``excerpt A-B C-D ...`` (0-based inclusive line ranges of the
blob, in order: the placed file is exactly those lines, each with its newline), or
``not placed ...`` (listed for its key, never written: no licence allows it).

Given snapshots of the source repositories as bare git directories (``--mirrors DIR``
holding ``owner+name/...``, as the search tool's ``fetch`` leaves them), this reads
each blob with ``git cat-file``, checks that ``commit:path`` is that blob and that the
bytes hash to it, and writes the file under ``--out`` (default: ``corpus/`` of the data
folder, ``$AGENTMEM_REAL_DATA`` or ``../shared/data``). Placing the whole list also
copies it to ``SOURCES.md`` there. ``--check`` writes nothing and verifies the files
already placed: a whole file by its git hash (no mirror needed), an
excerpt against its blob in the mirror. A row that cannot be placed (no mirror, a blob
that does not match, a range out of bounds, a path that leaves the folder) is reported
and skipped; the others are still placed. Exit status 1 when any row failed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "benchmarks" / "real" / "SOURCES.md"
COLUMNS = (
    "file",
    "client",
    "version",
    "source repo",
    "path in repo",
    "commit",
    "blob",
    "licence",
    "kept",
    "lines",
    "tool calls",
    "failed",
)
NOT_PLACED = "not placed"
_SHA1 = re.compile(r"^[0-9a-f]{40}$")
_RANGE = re.compile(r"^(\d+)-(\d+)$")
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


class SourceError(ValueError):
    """A row of SOURCES.md that cannot be placed or verified; the message says why."""


@dataclass(frozen=True)
class Row:
    """One corpus file as SOURCES.md lists it."""

    file: str  # relative to the corpus folder
    client: str
    version: str
    repo: str  # owner/name
    path: str  # in the source repository
    commit: str
    blob: str
    licence: str
    kept: str  # whole | excerpt A-B ... | not placed ...
    lines: int | None

    @property
    def placed(self) -> bool:
        """Whether the file is written at all (a row ``not placed`` is only listed)."""
        return not self.kept.startswith(NOT_PLACED)

    @property
    def whole(self) -> bool:
        return self.kept == "whole"

    def ranges(self) -> list[tuple[int, int]]:
        """The kept line ranges of an excerpt, 0-based and inclusive, in order."""
        words = self.kept.split()
        if not words or words[0] != "excerpt" or len(words) < 2:
            raise SourceError(
                f"{self.file}: kept {self.kept!r} is not 'whole' or 'excerpt A-B ...'"
            )
        out: list[tuple[int, int]] = []
        for w in words[1:]:
            m = _RANGE.match(w)
            if not m:
                raise SourceError(f"{self.file}: kept range {w!r} is not A-B")
            a, b = int(m.group(1)), int(m.group(2))
            if b < a or (out and a <= out[-1][1]):
                raise SourceError(f"{self.file}: kept range {w} is empty or out of order")
            out.append((a, b))
        return out


def parse_sources(text: str) -> list[Row]:
    """The rows of every table in ``text`` whose header is :data:`COLUMNS`.

    Raises :class:`SourceError` for a row with the wrong number of cells, a malformed
    commit or blob id, a repository that is not ``owner/name``, or a file path that is
    absolute or leaves the corpus folder."""
    rows: list[Row] = []
    in_table = False
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if tuple(c.lower() for c in cells) == COLUMNS:
            in_table = True
            continue
        if not in_table or set("".join(cells)) <= set("-: "):
            continue
        if len(cells) != len(COLUMNS):
            raise SourceError(f"SOURCES.md line {n}: {len(cells)} cells, expected {len(COLUMNS)}")
        c = dict(zip(COLUMNS, cells, strict=True))
        rows.append(_row(c, n))
    return rows


def _row(c: dict[str, str], n: int) -> Row:
    where = f"SOURCES.md line {n} ({c['file']})"
    f = PurePosixPath(c["file"])
    if not c["file"] or f.is_absolute() or ".." in f.parts or "\\" in c["file"]:
        raise SourceError(f"{where}: the file must be a relative path inside the corpus folder")
    if not _REPO.match(c["source repo"]):
        raise SourceError(f"{where}: source repo {c['source repo']!r} is not owner/name")
    for col in ("commit", "blob"):
        if not _SHA1.match(c[col]):
            raise SourceError(f"{where}: {col} {c[col]!r} is not a 40-hex git id")
    lines = int(c["lines"]) if c["lines"].isdigit() else None
    return Row(
        c["file"],
        c["client"],
        c["version"],
        c["source repo"],
        c["path in repo"],
        c["commit"],
        c["blob"],
        c["licence"],
        c["kept"],
        lines,
    )


def load_rows(path: Path = SOURCES) -> list[Row]:
    return parse_sources(path.read_text(encoding="utf-8"))


# -- git objects --------------------------------------------------------------------------


def git_blob_id(data: bytes) -> str:
    """What ``git hash-object`` prints for ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def git_dir(mirrors: Path, repo: str) -> Path:
    """The git directory of ``repo``'s snapshot under ``mirrors`` (``owner+name/``, with
    the git directory itself, ``repo/``, ``repo/.git`` or ``.git`` inside)."""
    base = mirrors / repo.replace("/", "+")
    if not base.is_dir():
        raise SourceError(f"no mirror of {repo}: {base} does not exist (fetch github:{repo})")
    for cand in (base, base / "repo", base / "repo" / ".git", base / ".git"):
        if (cand / "HEAD").is_file() and (cand / "objects").is_dir():
            return cand
    raise SourceError(f"the mirror {base} of {repo} holds no git directory")


def _git(gd: Path, *args: str) -> bytes:
    p = subprocess.run(["git", "--git-dir", str(gd), *args], capture_output=True, check=False)
    if p.returncode:
        raise SourceError(p.stderr.decode("utf-8", "replace").strip() or f"git {args[0]} failed")
    return p.stdout


def read_blob(row: Row, mirrors: Path) -> bytes:
    """The source blob of ``row``, verified three ways: ``commit:path`` in the mirror is
    the listed blob, ``git cat-file`` returns it, and its bytes hash to its id."""
    gd = git_dir(mirrors, row.repo)
    try:
        at = _git(gd, "rev-parse", "--verify", "--quiet", f"{row.commit}:{row.path}").decode()
    except SourceError:
        at = ""
    at = at.strip()
    if not at:
        raise SourceError(
            f"{row.file}: {row.path} at commit {row.commit[:12]} is not in the mirror of {row.repo}"
        )
    if at != row.blob:
        raise SourceError(
            f"{row.file}: blob mismatch: {row.repo} {row.commit[:12]}:{row.path} is {at},"
            f" SOURCES.md says {row.blob}"
        )
    data = _git(gd, "cat-file", "blob", row.blob)
    if git_blob_id(data) != row.blob:
        raise SourceError(f"{row.file}: the mirror's blob {row.blob} does not hash to its id")
    return data


def content(row: Row, blob: bytes) -> bytes:
    """What is placed for ``row``: the blob itself, or the kept lines of an excerpt, each
    with its newline."""
    if row.whole:
        return blob
    lines = blob.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out: list[bytes] = []
    for a, b in row.ranges():
        if b >= len(lines):
            raise SourceError(
                f"{row.file}: kept range {a}-{b} is out of bounds: the blob has {len(lines)} lines"
                f" (0-{len(lines) - 1})"
            )
        out += [x + b"\n" for x in lines[a : b + 1]]
    return b"".join(out)


# -- placing and checking -----------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    file: str
    status: str  # placed | unchanged | ok | skipped | failed
    detail: str = ""


def _target(out: Path, row: Row) -> Path:
    t = (out / row.file).resolve()
    if out.resolve() not in t.parents:
        raise SourceError(f"{row.file}: the path leaves {out}")
    return t


def place(rows: Iterable[Row], mirrors: Path, out: Path) -> Iterator[Outcome]:
    """Write every placed row's file under ``out``; a row that fails is reported and the
    rest go on."""
    for row in rows:
        if not row.placed:
            yield Outcome(row.file, "skipped", row.kept)
            continue
        try:
            target = _target(out, row)
            data = content(row, read_blob(row, mirrors))
            if row.whole and git_blob_id(data) != row.blob:  # pragma: no cover - read_blob checks
                raise SourceError(f"{row.file}: the placed bytes do not hash to {row.blob}")
            if target.is_file() and target.read_bytes() == data:
                yield Outcome(row.file, "unchanged")
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".part")
            tmp.write_bytes(data)
            os.replace(tmp, target)
            yield Outcome(row.file, "placed", f"{len(data)} bytes")
        except (SourceError, OSError) as e:
            yield Outcome(row.file, "failed", str(e))


_LICENCE_NAMES = re.compile(r"^(licen[cs]e|copying)(-(mit|apache))?(\.(md|txt|rst))?$", re.I)


def place_licences(rows: Iterable[Row], mirrors: Path, out: Path) -> Iterator[Outcome]:
    """Beside the files, ``LICENSES/owner__name.txt``: each placed repository's licence
    file from its snapshot's newest commit, where it has one and none is there yet."""
    for repo in sorted({r.repo for r in rows if r.placed}):
        target = out / "LICENSES" / f"{repo.replace('/', '__')}.txt"
        if target.exists():
            continue
        try:
            gd = git_dir(mirrors, repo)
            listing = _git(gd, "ls-tree", "HEAD").decode("utf-8", "replace").splitlines()
            found = [
                ln.split("\t", 1)[1]
                for ln in listing
                if " blob " in ln and _LICENCE_NAMES.match(ln.split("\t", 1)[-1])
            ]
            if not found:
                yield Outcome(
                    str(target.relative_to(out)), "skipped", f"{repo} has no licence file"
                )
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(_git(gd, "cat-file", "blob", f"HEAD:{sorted(found)[0]}"))
            yield Outcome(str(target.relative_to(out)), "placed", "licence")
        except (SourceError, OSError) as e:
            yield Outcome(str(target.relative_to(out)), "failed", str(e))


def check(rows: Iterable[Row], mirrors: Path | None, out: Path) -> Iterator[Outcome]:
    """Verify the files already under ``out`` without writing: a whole file by its git
    hash, an excerpt byte for byte against its blob's kept lines (which needs the
    mirror)."""
    for row in rows:
        if not row.placed:
            yield Outcome(row.file, "skipped", row.kept)
            continue
        try:
            target = _target(out, row)
            if not target.is_file():
                raise SourceError(f"{row.file}: not placed under {out}")
            have = target.read_bytes()
            if row.whole:
                if git_blob_id(have) != row.blob:
                    raise SourceError(f"{row.file}: git hash {git_blob_id(have)} is not {row.blob}")
            else:
                if mirrors is None:
                    raise SourceError(f"{row.file}: an excerpt is checked against its --mirrors")
                want = content(row, read_blob(row, mirrors))
                if have != want:
                    raise SourceError(f"{row.file}: differs from the kept lines of {row.blob}")
            n = have.count(b"\n") + (not have.endswith(b"\n") and bool(have))
            if row.lines is not None and n != row.lines:
                raise SourceError(f"{row.file}: {n} lines, SOURCES.md says {row.lines}")
            yield Outcome(row.file, "ok")
        except (SourceError, OSError) as e:
            yield Outcome(row.file, "failed", str(e))


def default_out() -> Path:
    chosen = os.environ.get("AGENTMEM_REAL_DATA")
    return (Path(chosen) if chosen else ROOT.parent / "shared" / "data") / "corpus"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sources", type=Path, default=SOURCES, help="the list (SOURCES.md)")
    ap.add_argument("--mirrors", type=Path, help="the folder of owner+name/ git snapshots")
    ap.add_argument("--out", type=Path, help="the corpus folder (default: the data's corpus/)")
    ap.add_argument("--check", action="store_true", help="verify the placed files, write nothing")
    ap.add_argument(
        "--only", action="append", default=[], metavar="PREFIX", help="only files under PREFIX"
    )
    args = ap.parse_args(argv)
    out = args.out or default_out()
    try:
        rows = load_rows(args.sources)
    except (SourceError, OSError) as e:
        print(f"place_corpus: {e}", file=sys.stderr)
        return 2
    rows = [r for r in rows if not args.only or r.file.startswith(tuple(args.only))]
    if not args.check and args.mirrors is None:
        print("place_corpus: placing needs --mirrors DIR (the git snapshots)", file=sys.stderr)
        return 2
    if args.check:
        done = list(check(rows, args.mirrors, out))
    else:
        done = list(place(rows, args.mirrors, out))
        placed = {o.file for o in done if o.status in ("placed", "unchanged")}
        done += place_licences([r for r in rows if r.file in placed], args.mirrors, out)
        if not args.only:  # the whole list was placed: keep its copy beside the files
            copy = out / "SOURCES.md"
            text = args.sources.read_bytes()
            if not copy.is_file() or copy.read_bytes() != text:
                out.mkdir(parents=True, exist_ok=True)
                copy.write_bytes(text)
    counts: dict[str, int] = {}
    licences = 0
    for o in done:
        if o.file.startswith("LICENSES/") and o.status == "placed":
            licences += 1
            continue
        counts[o.status] = counts.get(o.status, 0) + 1
        if o.status == "failed":
            print(f"FAILED {o.detail}", file=sys.stderr)
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    summary += f"; {licences} licence files written" if licences else ""
    print(f"{'checked' if args.check else 'placed into'} {out}: {summary or 'no rows'}")
    return 1 if counts.get("failed") else 0


if __name__ == "__main__":
    raise SystemExit(main())
