"""Review 24: the defects an independent review found in wave 11's first changes (the
project of a kept ``cd``, the standing glob fact, the Windows credit, the replay's
libraries), each fixed; every test failed before its fix."""

from __future__ import annotations

import json
from pathlib import Path

from agentmem import Memory, Step
from agentmem.learning.corrections import find_corrections
from agentmem.records import Trajectory
from benchmarks import bench_real_transcripts as bench

from .transcripts import ClaudeSession

WIN = "C:\\Users\\me\\app"


def _bash(command: str, output: str, ok: bool = False) -> Step:
    return Step(tool="Bash", params={"command": command}, output=output, success=ok)


def _windows_texts(*steps: Step, cwd: str = WIN) -> list[str]:
    run = Trajectory(task="t", steps=steps, accepted=True, meta={"cwd": cwd})
    return [
        c.finding.text for c in find_corrections(run) if c.finding.detail.get("change") == "windows"
    ]


# -- 3. shell_fixes: the "same folder" extension + rewritten credit ------------------------


def test_a_program_outside_the_cmd_construct_is_not_credited_for_its_rewrite():
    """``cd /d "C:\\app" && python -m pytest`` failed (cd: too many arguments); then
    ``python -m pytest -x`` worked in the same folder. pytest did not replace ``cd /d``:
    the fact may be learned, crediting nothing; never "bash's own pytest did the job"."""
    texts = _windows_texts(
        _bash(
            f'cd /d "{WIN}" && python -m pytest',
            "Exit code 1\n/usr/bin/bash: line 1: cd: too many arguments",
        ),
        _bash("python -m pytest -x", "5 passed", True),
    )
    assert all("pytest did the job" not in t for t in texts), texts


def test_a_cd_elsewhere_is_not_credited_for_dir_b():
    """``cd "C:\\app" && dir /b`` failed (dir: cannot access '/b'); ``cd backend && ls``
    in the same folder listed another folder. The cd is no rewrite of ``dir /b``."""
    texts = _windows_texts(
        _bash(
            f'cd "{WIN}" && dir /b',
            "Exit code 2\ndir: cannot access '/b': No such file or directory",
        ),
        _bash("cd backend && ls", "main.py", True),
    )
    assert all("cd did the job" not in t for t in texts), texts


# -- 1. session_project: a paused / excluded subfolder project -------------------------------


def test_an_excluded_subfolder_is_not_recorded_after_a_kept_cd(tmp_path: Path):
    """``excluded``: its history is left out of imports. A turn of a session started in
    ``top`` that works in the excluded ``top/private`` is filed under ``top`` and kept."""
    top = tmp_path / "top"
    private = top / "private"
    private.mkdir(parents=True)
    s = ClaudeSession(cwd=str(top))
    s.prompt("look around")
    s.tool("Bash", {"command": "cd private && ls"}, "diary.txt")
    s.say("Done.")
    s.cwd = str(private)
    s.prompt("read my diary")
    s.tool("Bash", {"command": "cat diary.txt"}, "secret")
    s.say("Read.")
    f = tmp_path / "s.jsonl"
    f.write_bytes(s.data())
    with Memory.open(tmp_path / "m.db") as mem:
        mem.set_project_state(str(private), "excluded")
        mem.import_transcripts("claude-code", [f])
        tasks = [t.task for t in mem.trajectories()]
    assert "read my diary" not in tasks, tasks


# -- 2. generality: the glob fact is standing for every client ----------------------------

GLOB_BAD = [
    Step(
        "Bash",
        {"command": "sed -n 1,80p src/app/trips/[id]/page.tsx"},
        "zsh:1: no matches found: src/app/trips/[id]/page.tsx",
        False,
    )
]
GLOB_OK = [
    *GLOB_BAD,
    Step("Bash", {"command": "sed -n 1,80p 'src/app/trips/[id]/page.tsx'"}, "export default", True),
]


def test_a_glob_fact_of_claude_codes_shell_is_not_standing_for_codex(tmp_path, mem: Memory):
    """Learned from Claude Code's Bash tool (the user's zsh). Codex on the same machine
    may run ``bash -lc`` (no failglob: an unmatched ``[id]`` is passed as written): the
    fact is served standing for every Codex prompt all the same (client None)."""
    from agentmem.serving import Query

    app = tmp_path / "app"
    app.mkdir()
    for ok in (True, False, True, False):
        mem.record(
            "show the trip page",
            GLOB_OK if ok else GLOB_BAD,
            accepted=ok,
            meta={"project": str(app)},
        )
    mem.learn(use_model=False)
    [fact] = [e.id for e in mem.experiences() if "glob pattern" in e.text]

    def ids(client):
        q = Query("both", project=tmp_path / "other", client=client)
        return {x.id for x in mem.serve(q).lessons}

    assert fact in ids("claude-code")
    assert fact not in ids("codex")


# -- 4. the benchmark's replay ------------------------------------------------------------


def _bench_items(tmp_path: Path) -> list[bench.Transcript]:
    def t(name: str, project: str, lines: list[dict], entries: list[dict]) -> bench.Transcript:
        path = tmp_path / name
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))
        return bench.Transcript(f"corpus/{name}", "claude-code", project, entries, path, "u/dots")

    correction = {"id": "c1", "label": "correction"}
    return [
        t(
            "a0.jsonl",
            "api",
            [{"timestamp": "2026-01-01T00:00:00Z", "cwd": "/home/u/api"}],
            [correction],
        ),
        t("m0.jsonl", "api", [{"timestamp": "2026-01-02T00:00:00Z", "cwd": "/Users/u/api"}], []),
        t(
            "m1.jsonl",
            "api",
            [{"timestamp": "2026-01-03T00:00:00Z", "cwd": "/Users/u/api"}],
            [{"id": "r1", "label": "repeat", "same_as": "corpus/a0.jsonl#c1"}],
        ),
    ]


def _record_replay(tmp_path: Path, items, monkeypatch):
    imported: list[tuple[str, str]] = []
    replayed: list[tuple[str, str, dict]] = []
    monkeypatch.setattr(bench, "learn", lambda mem: None)
    monkeypatch.setattr(
        bench, "import_all", lambda mem, s: imported.append((str(mem.path), s[0].file))
    )

    def replay_session(mem, t, keyed, stats, learned=None):
        rep = bench.repeats(t, keyed)
        kept = {c: s for c, s in rep.items() if learned is None or s.split("#")[0] in learned}
        replayed.append((str(mem.path), t.file, kept))

    monkeypatch.setattr(bench, "_replay_session", replay_session)
    work = tmp_path / "work"
    work.mkdir()
    bench.replay(items, work)
    return imported, replayed


def test_the_replay_counts_no_repeat_its_library_could_not_learn(tmp_path: Path, monkeypatch):
    """Per machine, the Mac library never holds the Linux session a0; a repeat of a0's
    correction in the Mac session m1 must not be counted (no lesson of it could be
    served there): only corrections of the library's earlier sessions are repeats."""
    imported, replayed = _record_replay(tmp_path, _bench_items(tmp_path), monkeypatch)
    assert [f for _, f, _ in replayed] == ["corpus/m1.jsonl"]
    for db, _file, rep in replayed:
        before = {f for d, f in imported if d == db}
        for source in rep.values():
            assert source.split("#")[0] in before, (db, rep, imported)
    assert replayed[0][2] == {}


def test_a_session_still_running_is_not_in_the_library_of_a_later_prompt(
    tmp_path: Path, monkeypatch
):
    """Two sessions of one machine in two projects at once (A 09:00-11:30, B from 10:00):
    A is learned from only once it has ended, so B (started while A ran) is served
    nothing of A; C, started after both ended, is served both."""

    def t(name: str, project: str, stamps: list[str]) -> bench.Transcript:
        path = tmp_path / name
        path.write_text(
            "".join(
                json.dumps({"timestamp": s, "cwd": f"/home/u/{project}"}) + "\n" for s in stamps
            )
        )
        return bench.Transcript(f"corpus/{name}", "claude-code", project, [], path, "u/dots")

    z = t("z.jsonl", "api", ["2026-01-01T07:00:00Z", "2026-01-01T08:00:00Z"])
    a = t("a.jsonl", "api", ["2026-01-01T09:00:00Z", "2026-01-01T11:30:00Z"])
    b = t("b.jsonl", "web", ["2026-01-01T10:00:00Z", "2026-01-01T10:05:00Z"])
    c = t("c.jsonl", "web", ["2026-01-01T12:00:00Z", "2026-01-01T12:05:00Z"])
    imported, replayed = _record_replay(tmp_path, [z, a, b, c], monkeypatch)
    assert [f for _, f, _ in replayed] == [f"corpus/{x}.jsonl" for x in "abc"]
    order = [f for _, f in imported]
    assert order.index("corpus/a.jsonl") > order.index("corpus/b.jsonl")
    assert order[:3] == ["corpus/z.jsonl", "corpus/b.jsonl", "corpus/a.jsonl"]


def test_a_folder_relative_project_fact_is_not_served_from_the_session_folder(
    tmp_path: Path, mem: Memory
):
    """A session started in ``top`` (no repository) kept ``cd backend``; there ``python
    scripts/run.py`` could not import app until ``PYTHONPATH=src`` (backend/src). The turn
    is now filed under ``top``, and "run it with PYTHONPATH=src" is served to prompts in
    ``top``, where src/ does not exist (it is backend/src). Before, the lesson was
    ``top/backend``'s."""
    from agentmem.serving import Query

    top = tmp_path / "top"
    backend = top / "backend"
    (backend / "src" / "app").mkdir(parents=True)
    (backend / "scripts").mkdir()
    trace = (
        "Traceback (most recent call last):\n"
        f'  File "{backend}/scripts/run.py", line 1, in <module>\n'
        "    from app.core import main\n"
        "ModuleNotFoundError: No module named 'app'"
    )
    run = "python scripts/run.py --check"
    s = ClaudeSession(cwd=str(top))
    s.prompt("go to the backend")
    s.tool("Bash", {"command": "cd backend"}, "")
    s.say("There.")
    s.cwd = str(backend)
    s.prompt("run the check script")
    s.tool("Bash", {"command": run}, "Exit code 1\n" + trace, True)
    s.tool("Bash", {"command": f"PYTHONPATH=src {run}"}, "ok")
    s.say("Checked.")
    f = tmp_path / "s.jsonl"
    f.write_bytes(s.data())
    mem.import_transcripts("claude-code", [f])
    mem.learn(use_model=False)
    lessons = [e for e in mem.experiences() if "PYTHONPATH=src" in e.text]
    assert lessons, [e.text for e in mem.experiences()]
    served = mem.serve(Query("run the check script", project=top, client="claude-code"))
    assert all("PYTHONPATH=src" not in x.text for x in served.lessons), served.text
