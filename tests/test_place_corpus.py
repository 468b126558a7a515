"""tools/place_corpus.py: the corpus placed from SOURCES.md rows and git snapshots.

Each test builds a real git repository (the ``git`` program, as ``fetch`` leaves a
snapshot: ``owner+name/repo/.git``), lists its files in a SOURCES.md table and runs the
tool, as a function and as a subprocess. The last test checks the committed list against
the placed corpus where both are present.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import place_corpus as pc  # noqa: E402

HEADER = (
    "| file | client | version | source repo | path in repo | commit | blob | licence | kept |"
    " lines | tool calls | failed |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"
)
SESSION = b"".join(b'{"n": %d}\n' % i for i in range(10))

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git program")


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
    }
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def mirror(tmp_path: Path) -> tuple[Path, str, str]:
    """A snapshot of ``alice/logs`` with ``s/a.jsonl`` (ten lines) and a LICENSE: the
    mirrors folder, the commit and the blob."""
    work = tmp_path / "mirrors" / "alice+logs" / "repo"
    (work / "s").mkdir(parents=True)
    (work / "s" / "a.jsonl").write_bytes(SESSION)
    (work / "LICENSE").write_text("MIT License\n")
    _git(work, "init", "-q")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "sessions")
    return (
        tmp_path / "mirrors",
        _git(work, "rev-parse", "HEAD"),
        _git(work, "rev-parse", "HEAD:s/a.jsonl"),
    )


def _row(
    file: str, commit: str, blob: str, kept: str, lines: int | str = "", repo: str = "alice/logs"
) -> str:
    return (
        f"| {file} | Codex CLI | 0.120.0 | {repo} | s/a.jsonl | {commit} | {blob} | MIT | {kept} |"
        f" {lines} | 1 | 0 |\n"
    )


def _sources(tmp_path: Path, *rows: str) -> Path:
    p = tmp_path / "SOURCES.md"
    p.write_text("# list\n\n" + HEADER + "".join(rows))
    return p


def test_whole_and_excerpt_are_placed_exactly(
    tmp_path: Path, mirror: tuple[Path, str, str]
) -> None:
    mirrors, commit, blob = mirror
    assert pc.git_blob_id(SESSION) == blob
    src = _sources(
        tmp_path,
        _row("logs/a.jsonl", commit, blob, "whole", 10),
        _row("logs/b.jsonl", commit, blob, "excerpt 0-0 3-4 9-9", 4),
        _row("logs/c.jsonl", commit, blob, "not placed (no licence)"),
    )
    out = tmp_path / "corpus"
    assert pc.main(["--sources", str(src), "--mirrors", str(mirrors), "--out", str(out)]) == 0
    assert (out / "logs" / "a.jsonl").read_bytes() == SESSION
    assert (out / "logs" / "b.jsonl").read_bytes() == b'{"n": 0}\n{"n": 3}\n{"n": 4}\n{"n": 9}\n'
    assert not (out / "logs" / "c.jsonl").exists()
    assert (out / "LICENSES" / "alice__logs.txt").read_text() == "MIT License\n"
    assert (out / "SOURCES.md").read_text() == src.read_text()  # the list's copy
    # placing again changes nothing; --check verifies both
    outcomes = list(pc.place(pc.load_rows(src), mirrors, out))
    assert [o.status for o in outcomes] == ["unchanged", "unchanged", "skipped"]
    assert (
        pc.main(["--sources", str(src), "--mirrors", str(mirrors), "--out", str(out), "--check"])
        == 0
    )


def test_a_dual_licence_file_is_placed(tmp_path: Path) -> None:
    """A repository licensed "MIT OR Apache-2.0" ships LICENSE-APACHE and LICENSE-MIT
    (no plain LICENSE): one of them is its licence file."""
    work = tmp_path / "mirrors" / "bob+dots" / "repo"
    (work / "s").mkdir(parents=True)
    (work / "s" / "a.jsonl").write_bytes(SESSION)
    (work / "LICENSE-APACHE").write_text("Apache License\n")
    (work / "LICENSE-MIT").write_text("MIT License\n")
    (work / "LICENSE-NOTES.txt").write_text("not a licence\n")
    _git(work, "init", "-q")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "sessions")
    commit, blob = _git(work, "rev-parse", "HEAD"), _git(work, "rev-parse", "HEAD:s/a.jsonl")
    src = _sources(tmp_path, _row("dots/a.jsonl", commit, blob, "whole", 10, repo="bob/dots"))
    out, mirrors = tmp_path / "corpus", tmp_path / "mirrors"
    assert pc.main(["--sources", str(src), "--mirrors", str(mirrors), "--out", str(out)]) == 0
    assert (out / "LICENSES" / "bob__dots.txt").read_text() == "Apache License\n"


def test_check_finds_an_edited_file_and_a_wrong_line_count(
    tmp_path: Path, mirror: tuple[Path, str, str]
) -> None:
    mirrors, commit, blob = mirror
    src = _sources(
        tmp_path,
        _row("logs/a.jsonl", commit, blob, "whole", 10),
        _row("logs/b.jsonl", commit, blob, "excerpt 2-3", 5),
    )
    out = tmp_path / "corpus"
    list(pc.place(pc.load_rows(src), mirrors, out))
    (out / "logs" / "a.jsonl").write_bytes(SESSION.replace(b"3", b"4"))
    res = {o.file: o for o in pc.check(pc.load_rows(src), mirrors, out)}
    assert res["logs/a.jsonl"].status == "failed" and "git hash" in res["logs/a.jsonl"].detail
    assert res["logs/b.jsonl"].status == "failed" and "2 lines" in res["logs/b.jsonl"].detail
    # a whole file is checked without a mirror; an excerpt says it needs one
    res = {o.file: o for o in pc.check(pc.load_rows(src), None, out)}
    assert "--mirrors" in res["logs/b.jsonl"].detail


def test_bad_rows_are_reported_and_the_rest_placed(
    tmp_path: Path, mirror: tuple[Path, str, str]
) -> None:
    mirrors, commit, blob = mirror
    other = "0" * 40
    src = _sources(
        tmp_path,
        _row("logs/mismatch.jsonl", commit, other, "whole"),
        _row("logs/range.jsonl", commit, blob, "excerpt 8-10"),
        _row("nomirror/x.jsonl", commit, blob, "whole", repo="bob/gone"),
        _row("logs/ok.jsonl", commit, blob, "whole", 10),
    )
    out = tmp_path / "corpus"
    res = {o.file: o for o in pc.place(pc.load_rows(src), mirrors, out)}
    assert "blob mismatch" in res["logs/mismatch.jsonl"].detail
    assert blob in res["logs/mismatch.jsonl"].detail
    assert "out of bounds" in res["logs/range.jsonl"].detail
    assert "10 lines" in res["logs/range.jsonl"].detail
    assert "no mirror of bob/gone" in res["nomirror/x.jsonl"].detail
    assert res["logs/ok.jsonl"].status == "placed"
    assert sorted(p.name for p in (out / "logs").iterdir()) == ["ok.jsonl"]
    # as a subprocess: exit status 1, each failure on stderr, the summary on stdout
    p = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "place_corpus.py"),
            "--sources",
            str(src),
            "--mirrors",
            str(mirrors),
            "--out",
            str(tmp_path / "again"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 1
    assert p.stderr.count("FAILED") == 3 and "1 placed" in p.stdout


def test_a_commit_missing_from_the_mirror_is_named(
    tmp_path: Path, mirror: tuple[Path, str, str]
) -> None:
    mirrors, _commit, blob = mirror
    src = _sources(tmp_path, _row("logs/a.jsonl", "1" * 40, blob, "whole"))
    [o] = pc.place(pc.load_rows(src), mirrors, tmp_path / "corpus")
    assert o.status == "failed" and "not in the mirror of alice/logs" in o.detail


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("../escape.jsonl", "relative path inside"),
        ("/abs.jsonl", "relative path inside"),
    ],
)
def test_a_path_that_leaves_the_corpus_is_refused(tmp_path: Path, cell: str, message: str) -> None:
    src = _sources(tmp_path, _row(cell, "a" * 40, "b" * 40, "whole"))
    with pytest.raises(pc.SourceError, match=message):
        pc.load_rows(src)
    assert pc.main(["--sources", str(src), "--check", "--out", str(tmp_path)]) == 2


def test_malformed_cells_are_refused_with_their_line(tmp_path: Path) -> None:
    with pytest.raises(pc.SourceError, match=r"line 5 .*blob 'xyz'"):
        pc.load_rows(_sources(tmp_path, _row("a.jsonl", "a" * 40, "xyz", "whole")))
    with pytest.raises(pc.SourceError, match="not owner/name"):
        pc.load_rows(_sources(tmp_path, _row("a.jsonl", "a" * 40, "b" * 40, "whole", repo="x")))
    [row] = pc.load_rows(_sources(tmp_path, _row("a.jsonl", "a" * 40, "b" * 40, "excerpt 5-3")))
    with pytest.raises(pc.SourceError, match="empty or out of order"):
        row.ranges()


def test_placing_without_mirrors_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _sources(tmp_path, _row("a.jsonl", "a" * 40, "b" * 40, "whole"))
    assert pc.main(["--sources", str(src), "--out", str(tmp_path)]) == 2
    assert "--mirrors" in capsys.readouterr().err


def test_the_committed_list_parses_and_matches_the_placed_corpus() -> None:
    """Every row of benchmarks/real/SOURCES.md parses; each placed row has a key; where
    the corpus is placed, every whole file hashes to its blob and every file has the
    listed number of lines."""
    rows = pc.load_rows()
    assert len(rows) >= 32 and len({r.file for r in rows}) == len(rows)
    keys = {p.stem for p in (ROOT / "benchmarks" / "real" / "keys").glob("corpus__*.json")}
    assert {"corpus__" + r.file.removesuffix(".jsonl").replace("/", "__") for r in rows} <= keys
    out = pc.default_out()
    present = [r for r in rows if r.placed and (out / r.file).is_file()]
    if not present:
        pytest.skip(f"no corpus placed under {out}")
    bad = [o for o in pc.check(present, None, out) if o.status == "failed"]
    assert [o.detail for o in bad if "--mirrors" not in o.detail] == []
