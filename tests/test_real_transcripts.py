"""The real-transcript benchmark (benchmarks/bench_real_transcripts.py) on its corpus.

The corpus lives beside the repository in ``../shared/data/`` (``transcripts/`` and
``corpus/``; ``$AGENTMEM_REAL_DATA`` points elsewhere); the answer keys are committed in
``benchmarks/real/keys/``. A key must label every failed call of its transcript, which
is checked here whenever the transcript is present, and so are the targets of issue 23
(on the transcripts present: the six of ``transcripts/`` in CI), for each half of the
split by repository (``benchmarks/real/split.json``) on its own, and the split itself.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentmem import Memory
from agentmem import served as served_log
from benchmarks import bench_real_transcripts as bench

from .conftest import run_cli

ROOT = bench.data_root()
KEYS = sorted(bench.KEYS.glob("*.json"))
_ORIGINAL = (  # the twelve repositories read before the split: development, whatever their hash
    "EdofEngland/code_butler",
    "Monotoba/OpenPrintKit",
    "Ogekuri/useReq",
    "brianlan/paper2md",
    "aneesh199608/dslint",
    "Quelklef/shell-ws",
    "marot/spotter",
    "DRMacIver/claude-reliability",
    "d-kimuson/claude-code-viewer",
    "Hoper-J/cpolar-connect",
    "bradymholt/dotfiles",
    "AcidicSoil/codex-session-view",
)


def _present() -> list[bench.Transcript]:
    return [t for t in bench.load_keys(ROOT) if t.path.exists()]


needs_corpus = pytest.mark.skipif(not _present(), reason=f"no real transcripts under {ROOT}")


@pytest.mark.parametrize("key", KEYS, ids=[k.stem for k in KEYS])
def test_key_labels_every_failed_call(key: Path) -> None:
    k = json.loads(key.read_text(encoding="utf-8"))
    t = bench.Transcript(k["file"], k["client"], k["project"], k["failures"])
    t.path = ROOT / t.file
    if not t.path.exists():
        pytest.skip(f"{t.file} is not under {ROOT}")
    assert bench.check_key(t) == []


def test_corpus_is_as_large_as_the_issue_asks() -> None:
    items = bench.load_keys(ROOT)
    assert len(items) >= 30
    assert len({t.project for t in items}) >= 10
    labels = [e["label"] for t in items for e in t.entries]
    assert labels.count("correction") and labels.count("trap")


def test_a_missed_failure_is_a_key_problem(tmp_path: Path) -> None:
    line = {
        "type": "user",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True}],
        },
    }
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps(line) + "\n")
    t = bench.Transcript("s.jsonl", "claude-code", "p", [])
    t.path = f
    assert bench.check_key(t) == ["s.jsonl: failed call t1 has no key entry"]


@pytest.fixture(scope="module")
def figures() -> dict[str, Any]:
    if not _present():
        pytest.skip(f"no real transcripts under {ROOT}")
    return bench.run(ROOT, present_only=True)


def _half(figures: dict[str, Any], half: str) -> dict[str, Any]:
    part = figures["halves"][half]
    if part is None:
        pytest.skip(f"no {half} transcript under {ROOT}")
    return part


@needs_corpus
def test_benchmark_runs_and_reports(figures: dict[str, Any]) -> None:
    assert figures["key_problems"] == []
    parts = [p for p in figures["halves"].values() if p]
    assert parts and sum(p["transcripts"] for p in parts) == figures["transcripts"]
    for part in parts:
        a = part["all"]
        assert a["corrections"] == part["key_corrections"] > 0
        assert all(x["match"] == "FALSE" or "#" in x["match"] for x in a["listing"])
        assert part["replay"]["turns"] > 0
        assert part["size"]["sessions"] <= part["size"]["files"] == part["transcripts"]
    text = bench.report(figures)
    assert "precision" in text and "replay" in text
    assert text.index("== validation half") < text.index("== development half")


@needs_corpus
@pytest.mark.parametrize("half", bench.HALVES)
def test_targets(figures: dict[str, Any], half: str) -> None:
    """Every target of issue 29 on each half present (``--check-targets``' own check,
    :func:`bench.missed_targets`): precision, no false global lesson, recall, the
    replay's two shares, no lesson from a trap."""
    assert bench.missed_targets(_half(figures, half)) == []


def test_check_targets_fails_on_a_missed_validation_target(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--check-targets`` exits 1 when the validation half misses a target, 0 when it
    has no transcript, whatever the development half does."""
    a = {
        "precision": 0.5,
        "false_global": 1,
        "recall": 0.7,
        "trap_lessons": 1,
        "trap_kinds": {"informational-exit": 1},
    }
    part = {"all": a, "replay": {"right_share": 0.2, "wrong_turn_share": 0.1}}
    res = {
        "transcripts": 1,
        "missing": [],
        "not_placed": [],
        "key_problems": [],
        "halves": {"validation": part, "development": None},
    }
    monkeypatch.setattr(bench, "run", lambda *a, **k: res)
    monkeypatch.setattr(bench, "report", lambda r: "")
    assert bench.main(["--check-targets"]) == 1
    out = capsys.readouterr().out
    for what in (
        "precision 0.50",
        "1 false global",
        "informational-exit",
        "replay right 0.20",
        "replay wrong turns 0.10",
    ):
        assert what in out
    assert "recall" not in out
    res["halves"] = {"validation": None, "development": part}
    assert bench.main(["--check-targets"]) == 0
    assert "no validation transcript" in capsys.readouterr().out


def test_split_follows_its_rule_and_leaves_out_held_out_repositories() -> None:
    """split.json places every repository SOURCES.md lists in exactly one half: the twelve
    read before the split in development, every other by its name's hash; and no
    repository held out for the independent check (heldout-repos.sha256) is listed."""
    data = json.loads(bench.SPLIT.read_text(encoding="utf-8"))
    assert set(data) == {"rule", "development", "validation"} and "sha256" in data["rule"]
    split = bench.load_split()
    for repo in _ORIGINAL:
        assert split.halves[repo.lower()] == "development", repo
    for repo, half in split.halves.items():
        if repo not in {r.lower() for r in _ORIGINAL}:
            assert half == bench.split_half(repo), repo
    listed = {r.repo.lower() for r in bench.place_corpus.load_rows(bench.SOURCES)}
    assert listed <= set(split.halves), sorted(listed - set(split.halves))
    held = bench.data_root() / "heldout-repos.sha256"
    if not held.is_file():
        pytest.skip(f"no {held}")
    hashes = {ln.strip() for ln in held.read_text().splitlines() if not ln.startswith("#")}
    assert len(hashes) >= 10
    taken = {hashlib.sha256(r.encode()).hexdigest(): r for r in split.halves}
    assert sorted(taken[h] for h in hashes & set(taken)) == []


def test_split_rule_examples() -> None:
    # sha256("agentmem-split:brianlan/paper2md") starts with 0-7, that of ogekuri/usereq not
    assert bench.split_half("brianlan/paper2md") == "validation"
    assert bench.split_half("Ogekuri/useReq") == bench.split_half("ogekuri/usereq") == "development"


def test_a_file_outside_the_split_is_a_key_problem() -> None:
    t = bench.Transcript("corpus/x/a.jsonl", "codex", "x", [])
    assert bench.split_problems([t]) == [
        "corpus/x/a.jsonl: not listed in SOURCES.md, so in no half of the split"
    ]
    t.repo = "someone/else"
    assert "someone/else is in no half" in bench.split_problems([t])[0]


@pytest.mark.parametrize(
    ("cwd", "os_name"),
    [
        ("/Users/a/p", "macos"),
        ("/home/a/p", "linux"),
        ("C:\\Users\\a\\p", "windows"),
        ("/data/data/com.termux/files/home/p", "termux"),
        ("/path/to/Demo", "unknown"),
        (None, "unknown"),
    ],
)
def test_os_of_a_working_directory(cwd: str | None, os_name: str) -> None:
    assert bench.os_of(cwd) == os_name


def test_programs_of_a_failed_call() -> None:
    def f(tool: str, call: object) -> set[str]:
        return bench.programs_of(bench.Failure("i", tool, json.dumps(call), "", 0))

    assert f("Bash", {"command": "cd src && FOO=1 rg -n x | head -3"}) == {"rg", "head"}
    assert f("shell", {"command": ["bash", "-lc", "ls docs; grep -q y a"]}) == {"ls", "grep"}
    assert f("exec_command", {"cmd": "/bin/zsh -lc 'pytest -q'"}) == {"pytest"}
    assert f("Edit", {"file_path": "a.py"}) == {"edit"}


def test_codex_failures_in_every_output_form(tmp_path: Path) -> None:
    def call(cid: str, name: str) -> dict[str, Any]:
        return {
            "type": "response_item",
            "payload": {"type": "function_call", "call_id": cid, "name": name},
        }

    def out(cid: str, output: str) -> dict[str, Any]:
        return {
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": cid, "output": output},
        }

    lines = [
        {"type": "session_meta", "payload": {"cli_version": "0.63.0"}},
        call("a", "shell"),
        out("a", json.dumps({"output": "x", "metadata": {"exit_code": 2}})),
        call("b", "shell_command"),
        out("b", "Exit code: 0\nWall time: 0 s\nOutput:\nok"),
        call("c", "exec_command"),
        out("c", "Chunk ID: 1\nProcess exited with code 127\nOutput:\nno"),
        call("d", "mcp__x__y"),
        out("d", json.dumps({"content": [], "isError": True})),
        call("e", "apply_patch"),
        out("e", "apply_patch verification failed: no lines"),
        call("f", "apply_patch"),
        out("f", "Success. Updated the following files:\nM a.py"),
        call("g", "exec_command"),
        out("g", "exec_command failed for `/bin/zsh -lc 'ps'`: CreateProcess { exit_code: 1 }"),
        call("h", "exec_command"),
        out("h", "exec_command failed: CreateProcess { Sandbox(Denied { exit_code: 128 }) }"),
        call("i", "exec_command"),
        out("i", "exec_command failed to parse its arguments"),
        call("j", "exec_command"),
        out("j", 'exec_command failed: SandboxDenied { message: "fatal: cannot lock ref" }'),
        call("k", "shell"),  # Codex before 0.40
        out("k", "failed in sandbox MacosSeatbelt with execution error: Denied { exit_code: 128 }"),
        call("l", "shell"),
        out(
            "l",
            "failed in sandbox LinuxSeccomp with execution error: sandbox denied exec error, "
            "exit code: 2, stdout: , stderr: x",
        ),
    ]
    f = tmp_path / "r.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert [x.id for x in bench.failed_calls(f)] == ["a", "c", "d", "e", "g", "h", "j", "k", "l"]
    assert bench._codex_exit(lines[-1]["payload"]["output"])[0] == 2


def test_corpus_spans_three_versions_of_each_client() -> None:
    items = [t for t in bench.load_keys(ROOT) if t.file not in bench.not_placed()]
    if not all(t.path.exists() for t in items):
        pytest.skip(f"the whole placed corpus is not under {ROOT}")
    versions: dict[str, set[str]] = {"claude-code": set(), "codex": set()}
    for t in items:
        for line in t.path.read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            if obj.get("type") == "session_meta":
                versions[t.client].add(str(obj["payload"].get("cli_version")))
            elif obj.get("version") and obj.get("sessionId"):
                versions[t.client].add(str(obj["version"]))
    assert all(len(v) >= 3 for v in versions.values()), versions


def test_a_merged_lesson_is_learned_from_every_merged_groups_transcripts(tmp_path: Path) -> None:
    """Two sessions (two projects) each correct Edit's "not read yet" by reading the
    file; Stage 3 merges the two groups' lessons into one, which the benchmark credits to
    both transcripts (the journal's ``lesson_runs``), not only to the group that proposed
    it."""
    from agentmem import Memory, Step

    refused = "<tool_use_error>File has not been read yet. Read it first.</tool_use_error>"

    def run(path: str) -> list[Step]:
        edit = {"file_path": path, "old_string": "x", "new_string": "y"}
        return [
            Step("Edit", edit, refused, False),
            Step("Read", {"file_path": path}, "1\tx", True),
            Step("Edit", edit, "ok", True),
        ]

    with Memory.open(tmp_path / "lib.db") as mem:
        for n, (project, task) in enumerate(
            (("/w/one", "fix the title"), ("/w/two", "fix a typo"))
        ):
            meta = {"project": project, "transcript": f"/data/s{n}.jsonl"}
            mem.record(task, run(f"{project}/a.py"), accepted=True, meta=meta)
        mem.learn(use_model=False)
        [lesson] = bench.lessons(mem)
    assert "Read the file first" in lesson.text
    assert lesson.sources == {"/data/s0.jsonl", "/data/s1.jsonl"}


def test_a_corrections_value_decides_whether_recall_counts_it(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text("")
    base = {"tool": "Bash", "label": "correction", "scope": "project", "program": "x"}
    entries = [
        {**base, "id": "a", "terms": ["y"], "lesson": "L", "value": "huge"},
        {**base, "id": "b", "terms": ["y"], "lesson": "L", "value": "low"},
    ]
    t = bench.Transcript("s.jsonl", "claude-code", "p", entries)
    t.path = f
    problems = bench.check_key(t)
    assert "s.jsonl: a: value 'huge'" in problems
    assert not any(p.startswith("s.jsonl: b: value") for p in problems)
    assert [bench.worth_recalling(e) for e in entries] == [False, False]
    assert bench.worth_recalling({"value": "high"}) and bench.worth_recalling({})


def test_a_corrections_program_may_be_one_of_several_names(tmp_path: Path) -> None:
    """A project's script that runs git, refused in the sandbox: a lesson may name the
    script or git; it must still name one of them and a term."""
    f = tmp_path / "s.jsonl"
    f.write_text("")
    base = {"tool": "exec_command", "label": "correction", "scope": "project", "lesson": "L"}
    entry = {**base, "id": "a", "program": ["create-new-feature", "git"], "terms": ["escalat"]}
    bad = {**base, "id": "b", "program": ["git", ""], "terms": ["escalat"]}
    t = bench.Transcript("s.jsonl", "codex", "p", [entry, bad])
    t.path = f
    problems = bench.check_key(t)
    assert "s.jsonl: b: program must be a name or a list of names" in problems
    assert not any(p.startswith("s.jsonl: a:") for p in problems)

    def lesson(text: str) -> bench.Lesson:
        return bench.Lesson(1, text, "global", "", set())

    assert bench.names(lesson("create-new-feature.sh is refused; it ran escalated"), entry)
    assert bench.names(lesson("git fetch is refused; it ran escalated"), entry)
    assert not bench.names(lesson("npm install is refused; it ran escalated"), entry)
    assert not bench.names(lesson("git fetch is refused here"), entry)


def test_a_program_is_named_as_a_word_and_a_term_from_a_words_start() -> None:
    """Wave 9's reader found lessons matched by a name inside another word: "dir" inside
    "create_directory", the term "ls" inside "fails", "python" inside "python3"."""

    def named(text: str, program: str, *terms: str) -> bool:
        entry = {"program": program, "terms": list(terms)}
        return bench.names(bench.Lesson(1, text, "global", "", set()), entry)

    assert not named("call mcp__fs__create_directory first; write_file fails", "dir", "ls")
    assert not named("python3 lacks django_redis: source venv/bin/activate", "python", "python3")
    assert named("call mcp__fs__create_directory first", "create_directory", "first")
    assert named(
        "Edit fails: Read the file first, then write it", "Edit", "before writ", "then writ"
    )
    assert named("run rg -- -PATTERN: pass it after --", "rg", "-- PATTERN", "after --")
    assert named("Windows PowerShell reads a .ps1 as ANSI", ".ps1", "ANSI")


def test_programs_of_respect_quotes_and_heredocs() -> None:
    def f(cmd: str) -> set[str]:
        return bench.programs_of(bench.Failure("i", "Bash", json.dumps({"command": cmd}), "", 0))

    assert f('rg -n "OPTIONAL|if tests requested" .specify README.md') == {"rg"}
    assert f("python3 - <<'PY'\nimport os\nprint(1)\nPY\necho done | wc -l") == {
        "python3",
        "wc",
    }
    assert f("grep -q 'unbalanced") == {"grep"}
    assert f("powershell.exe -NoProfile -Command 'rg --files | Select-Object -First 5'") == {
        "rg",
        "select-object",
    }


def test_the_replay_serves_exactly_what_the_prompt_hook_serves(tmp_path: Path) -> None:
    """The replay's prompt stands for the UserPromptSubmit hook: the lessons it counts are
    the real hook's (a subprocess, the same payload), in its order, a lesson whose path
    claim fails in the session's folder withheld, and its answers logged as the hook's. A
    claim about PATH is not checked in the replay (the session's machine is not this one)."""
    app = tmp_path / "app"
    (app / ".git").mkdir(parents=True)
    db = tmp_path / "replay.db"
    prompt = "the pytest tests fail: run the tests again and stop at the first failure"
    missing = {"kind": "shell", "tools": ["Bash"], "testable": False,
               "claims": [["exists", "scripts/no-such-script.sh"]]}  # fmt: skip
    on_path = {"kind": "shell", "tools": ["Bash"], "testable": False,
               "claims": [["on_path", "agentmem-no-such-program-x9"]]}  # fmt: skip
    with Memory.open(db) as mem:
        kept = mem.add("Run pytest with -x -q to stop at the first failure.", domain="test").id
        scoped = mem.add("In this project run the tests with make check, not pytest.", project=app)
        gone = mem.add("When pytest fails, rerun the failing tests with pytest -x.").id
        mem.db.execute("UPDATE experiences SET rule = ? WHERE id = ?", [json.dumps(missing), gone])
        mem.add("Before kubectl apply, run kubectl diff to see what changes.", domain="k8s")
        unknown = mem.add("If pytest is missing, run the tests with tox instead.").id
        mem.db.execute(
            "UPDATE experiences SET rule = ? WHERE id = ?", [json.dumps(on_path), unknown]
        )
        found = bench.lessons(mem)
        served, withheld = bench._served(mem, prompt, str(app), found)
    ids = [x.id for x in served]
    assert kept in ids and scoped.id in ids and gone not in ids and unknown in ids
    assert withheld == [(gone, "scripts/no-such-script.sh does not exist in this project")]
    payload = {**bench.hook_payload(prompt, str(app)), "transcript_path": str(tmp_path / "t.jsonl")}
    p = run_cli("hooks", "run", "claude-code", db=db, input=json.dumps(payload).encode())
    assert p.returncode == 0 and p.stdout.strip(), (p.stderr, list(tmp_path.iterdir()))
    block = json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
    hook_ids = [int(i) for i in re.findall(r"^- \[L(\d+)\] ", block, flags=re.M)]
    assert hook_ids == [i for i in ids if i != unknown]  # the hook checks this machine's PATH
    lines = [json.loads(x) for x in Path(served_log.log_path(db)).read_text().splitlines()]
    assert [(x["route"], x["served"], sorted(x["withheld"])) for x in lines] == [
        ("hook", ids, [str(gone)]),
        ("hook", hook_ids, sorted([str(gone), str(unknown)])),
    ]


def test_a_repeat_of_a_correction_outside_the_set_is_no_repeat() -> None:
    """A later session's ``same_as`` that points at a session not measured (a blind set of
    later sessions of a corpus project) is left out of the replay's repeated mistakes."""
    t = bench.Transcript(
        "corpus/p/b.jsonl",
        "claude-code",
        "p",
        [
            {"id": "c1", "label": "correction", "same_as": "corpus/p/a.jsonl#x"},
            {"id": "c2", "label": "correction", "same_as": "corpus/p/here.jsonl#y"},
        ],
    )
    assert bench.repeats(t) == {"c1": "corpus/p/a.jsonl#x", "c2": "corpus/p/here.jsonl#y"}
    present = {"corpus/p/here.jsonl#y": None}
    assert bench.repeats(t, present) == {"c2": "corpus/p/here.jsonl#y"}


def test_no_session_is_listed_under_two_repositories() -> None:
    """A fork or a renamed repository escapes the name rule: its files can land in the
    other half from their first copy (blind set 4 took three development files again,
    under the repository's new name). So no blob id, and no session file name, is listed
    under two repositories."""
    rows = bench.place_corpus.load_rows(bench.SOURCES)
    seen: dict[str, str] = {}
    twice = []
    for r in rows:
        for what in (r.blob, r.file.split("/", 1)[1]):
            if seen.setdefault(what, r.repo.lower()) != r.repo.lower():
                twice.append(f"{r.file}: {what} is listed under {seen[what]} too")
    assert twice == []


def test_a_lesson_recurs_when_two_sessions_or_two_projects_key_it() -> None:
    """``recurring``: the key's high/medium lessons keyed in 2+ sessions (a sub-agent file
    is its parent's session), or 2+ projects; low-value ones never count."""

    def t(file: str, project: str, *entries: dict[str, Any]) -> bench.Transcript:
        return bench.Transcript(file, "claude-code", project, list(entries))

    fix = {"label": "correction", "value": "high", "lesson": "use python3"}
    low = {"label": "correction", "value": "low", "lesson": "read first"}
    once = {"label": "correction", "value": "medium", "lesson": "one-off"}
    items = [
        t("corpus/a/s1.jsonl", "a", {**fix, "id": "1"}, {**low, "id": "2"}, {**once, "id": "3"}),
        t("corpus/a/s1/subagents/agent-x.jsonl", "a", {**once, "id": "4"}),
        t("corpus/a/s2.jsonl", "a", {**fix, "id": "5"}, {**low, "id": "6"}),
    ]
    keyed = bench.corrections(items)
    assert bench.recurring(keyed) == {"use python3"}
    assert bench.recurring(keyed, by="project") == set()
    items.append(t("corpus/b/s3.jsonl", "b", {**fix, "id": "7"}))
    assert bench.recurring(bench.corrections(items), by="project") == {"use python3"}


def test_the_replay_gives_the_hook_the_transcript_before_each_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the client does, the replay's hook gets a ``transcript_path``: a file holding the
    session's lines before the prompt (the agent's question before "3"), never after it."""
    lines = [
        {"type": "user", "message": {"role": "user", "content": "finish the release branch"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "1. rerun the tests 2. rebase 3. git push. Which one?"}]}},
        {"type": "user", "message": {"role": "user", "content": "3"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Pushed."}]}},
    ]  # fmt: skip
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    t = bench.Transcript("corpus/p/s.jsonl", "claude-code", "p", [], path=path)
    seen: list[tuple[str, list[dict[str, Any]]]] = []

    def turn(mem: Any, t: Any, turn: bench.Turn, transcript: str, *rest: Any) -> None:
        text = Path(transcript).read_text(encoding="utf-8")
        seen.append((turn.prompt, [json.loads(x) for x in text.splitlines()]))

    monkeypatch.setattr(bench, "_replay_turn", turn)
    with Memory.open(tmp_path / "replay.db") as mem:
        bench._replay_session(mem, t, {}, {})
    assert seen == [("finish the release branch", []), ("3", lines[:2])]
    payload = bench.hook_payload("3", "/w/app", "/tmp/t.jsonl")
    assert payload["transcript_path"] == "/tmp/t.jsonl"
    assert "transcript_path" not in bench.hook_payload("3", "/w/app")


def test_a_replay_library_is_one_machines_sessions_in_the_order_written(tmp_path: Path) -> None:
    """A user's library holds every project of their machine: the replay's library is a
    machine's (a repository's sessions of one OS), its sessions in the order written
    across projects; ``by="project"`` keeps the figure before wave 11."""

    def t(name: str, repo: str, project: str, at: str, cwd: str) -> bench.Transcript:
        path = tmp_path / name
        path.write_text(json.dumps({"timestamp": at, "cwd": cwd}) + "\n")
        return bench.Transcript(f"corpus/{name}", "claude-code", project, [], path, repo)

    items = [
        t("a2.jsonl", "u/dots", "api", "2026-01-03T00:00:00Z", "/home/u/api"),
        t("b1.jsonl", "u/dots", "web", "2026-01-02T00:00:00Z", "/home/u/web"),
        t("a1.jsonl", "u/dots", "api", "2026-01-01T00:00:00Z", "/home/u/api"),
        t("m1.jsonl", "u/dots", "api", "2026-01-01T12:00:00Z", "/Users/u/api"),  # a Mac
        t("x1.jsonl", "v/other", "api", "2026-01-01T06:00:00Z", "/home/v/api"),
    ]
    names = [[s[0].path.name for s in lib] for lib in bench.libraries(items)]
    assert sorted(names) == sorted(
        [["a1.jsonl", "b1.jsonl", "a2.jsonl"], ["m1.jsonl"], ["x1.jsonl"]]
    )
    per_project = [[s[0].path.name for s in lib] for lib in bench.libraries(items, "project")]
    assert ["a1.jsonl", "m1.jsonl", "a2.jsonl"] in per_project and ["b1.jsonl"] in per_project


def test_a_lesson_merged_in_a_later_session_keeps_the_runs_it_came_from(tmp_path: Path) -> None:
    """Real (validation replay, 13562964800-claude-skills): "cmd's syntax (dir /s) fails"
    was learned from one session, then merged with a later session's lesson; the journal's
    ``lesson_runs`` (and the benchmark's match) credited the merged lesson to the later
    runs only, as if the first had taught nothing. A lesson's runs now follow its lineage:
    the runs behind every lesson a MODIFY or MERGE folded into it."""
    from agentmem import Memory, Step
    from agentmem.records import Operation

    refused = "<tool_use_error>File has not been read yet. Read it first.</tool_use_error>"
    changed = (
        "<tool_use_error>File has been modified since read, either by the user</tool_use_error>"
    )

    def run(path: str, error: str) -> list[Step]:
        edit = {"file_path": path, "old_string": "x", "new_string": "y"}
        return [
            Step("Edit", edit, error, False),
            Step("Read", {"file_path": path}, "1\tx", True),
            Step("Edit", edit, "ok", True),
        ]

    with Memory.open(tmp_path / "lib.db") as mem:
        for n, error in enumerate((refused, changed)):
            for project in ("/w/one", "/w/two"):
                meta = {"project": project, "transcript": f"/data/s{n}.jsonl"}
                steps = run(f"{project}/a{n}.py", error)
                mem.record(f"fix typo {n} in {project}", steps, accepted=True, meta=meta)
            mem.learn(use_model=False)
        first, second = sorted(mem.experiences(), key=lambda e: e.id)
        text = "If Edit fails with 'File has not been read yet', Read the file first."
        mem._curate([Operation("MERGE", text, (first.id, second.id), origin="user")])
        [merged] = bench.lessons(mem)
    assert merged.sources == {"/data/s0.jsonl", "/data/s1.jsonl"}


def test_recall_counts_the_lessons_a_session_demonstrates() -> None:
    """Issue 29's recall is of the corrections a session demonstrates: a lesson readers
    judged ``one-call`` or ``shown`` counts, ``partly`` and ``not-shown`` do not, and one
    no reader judged counts (a new key entry never shrinks the denominator)."""
    verdicts = {"a": "one-call", "b": "shown", "c": "partly", "d": "not-shown"}
    assert bench.demonstrated({"a", "b", "c", "d", "e"}, verdicts) == {"a", "b", "e"}
    part = {"all": {"precision": 1.0, "false_global": 0, "trap_lessons": 0, "trap_kinds": {}}}
    part["all"].update(recall=0.3, recall_shown=0.65)
    assert bench.missed_targets(part) == []
    part["all"].update(recall=0.7, recall_shown=0.5)
    assert bench.missed_targets(part) == ["recall of demonstrated lessons 0.50 < 0.6"]


def test_the_readers_verdicts_are_of_key_lessons() -> None:
    """Every verdict of ``demonstrated.json`` is one of the four, of a high- or
    medium-value lesson the key holds, judged once."""
    data = json.loads(bench.DEMONSTRATED.read_text(encoding="utf-8"))
    lessons = [x["lesson"] for x in data["lessons"]]
    assert len(lessons) == len(set(lessons))
    key = {
        e["lesson"]
        for p in KEYS
        for e in json.loads(p.read_text(encoding="utf-8"))["failures"]
        if e["label"] == "correction" and bench.worth_recalling(e)
    }
    assert set(lessons) <= key
    assert {x["verdict"] for x in data["lessons"]} <= set(bench.VERDICTS)
    for x in data["lessons"]:
        judged = [i["verdict"] for i in x["instances"]]
        assert x["verdict"] == min(judged, key=bench.VERDICTS.index), x["lesson"]


def test_a_lessons_verdict_is_of_the_sessions_measured(tmp_path: Path) -> None:
    """A lesson keyed in both halves is judged on each half's sessions: one that only a
    development session demonstrates is no demonstrated lesson of the validation half
    (each half's recall is of its own sessions); a lesson none of whose judged instances
    is measured is left unjudged (counted)."""
    path = tmp_path / "demonstrated.json"
    instances = [
        {"file": "corpus/v/a.jsonl", "id": "1", "verdict": "partly"},
        {"file": "corpus/d/b.jsonl", "id": "2", "verdict": "one-call"},
    ]
    lesson = {"lesson": "L", "verdict": "one-call", "instances": instances}
    path.write_text(json.dumps({"lessons": [lesson]}), encoding="utf-8")
    assert bench.load_demonstrated(path) == {"L": "one-call"}
    assert bench.load_demonstrated(path, {"corpus/v/a.jsonl"}) == {"L": "partly"}
    assert bench.load_demonstrated(path, {"corpus/d/b.jsonl"}) == {"L": "one-call"}
    assert bench.load_demonstrated(path, {"corpus/x.jsonl"}) == {}
    assert bench.demonstrated({"L"}, bench.load_demonstrated(path, {"corpus/v/a.jsonl"})) == set()


def test_a_figure_made_before_the_verdicts_misses_on_its_plain_recall() -> None:
    """A saved figure with no ``recall_shown`` is checked on its plain recall, and the miss
    says so, not "of demonstrated lessons"."""
    part = {"all": {"precision": 1.0, "false_global": 0, "trap_lessons": 0, "trap_kinds": {}}}
    part["all"].update(recall=0.5)
    assert bench.missed_targets(part) == ["recall 0.50 < 0.6"]
