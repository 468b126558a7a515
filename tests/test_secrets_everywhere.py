"""No secret in any column, any table, any file (issue 30).

Distinct secrets, each of a kind the redactor catches, are planted in every field of
every recording path: the Python API (``Memory.record``, ``trajectory()``, feedback,
lessons written by hand), ``agentmem record`` and ``feedback`` (the CLI as a
subprocess), ``agentmem import`` of a Claude Code and a Codex transcript, the Claude
Code and Codex hooks (real subprocesses fed their payloads), MCP ``agentmem_record``
over a real stdio session, and the team push (the outbox's serialisation always; a
real sqld where one can be had). Then every table (``iterdump()`` of a plain sqlite3
connection), the raw bytes of every file agentmem wrote (the library, its WAL, the
served log, the hooks' log, exports, backups) and the team's primaries are searched
for each secret and for its last 12 characters.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmem import Memory, Step, Trajectory
from agentmem.redact import DEFAULT_REDACTOR, redact
from agentmem.redact.runs import group_of, redact_group, redact_run
from agentmem.team import outbox

from .conftest import ROOT, jsonl, run_cli
from .transcripts import ClaudeSession, CodexRollout

# -- the planted secrets -------------------------------------------------------------------

#: Shapes the built-in rules catch anywhere (agentmem/redact/rules.py), each filled with
#: a body of its own so that every planted secret is distinct.
SHAPES: tuple[Callable[[str], str], ...] = (
    lambda h: "ghp_" + h[:36],
    lambda h: "AKIA" + h[:16].upper(),
    lambda h: "xoxb-" + h[:24],
    lambda h: "sk_live_" + h[:24],
    lambda h: "npm_" + h[:36],
    lambda h: "hf_" + h[:34],
    lambda h: "glpat-" + h[:20],
    lambda h: "dckr_pat_" + h[:24],
    lambda h: "gsk_" + h[:40],
)


class Planted:
    """Secrets made on demand, one per field (``plant("task")``), remembered by field."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.by_field: dict[str, str] = {}

    def __call__(self, field: str) -> str:
        if field not in self.by_field:
            digest = hashlib.sha256(f"{self.path}/{field}".encode()).hexdigest()
            body = (digest + hashlib.sha256(digest.encode()).hexdigest())[:48]
            self.by_field[field] = SHAPES[len(self.by_field) % len(SHAPES)](body)
        return self.by_field[field]

    def needles(self) -> dict[str, str]:
        """Each secret and its last 12 characters, named by field."""
        out = {}
        for field, s in self.by_field.items():
            out[field] = s
            out[f"{field} (last 12)"] = s[-12:]
        return out


def test_every_planted_shape_is_caught_by_the_rules():
    p = Planted("sanity")
    for i in range(len(SHAPES)):
        s = p(f"f{i}")
        out = redact(f"value {s} end")
        assert s not in out and s[-12:] not in out and "[REDACTED:" in out, (s, out)


# -- searching ---------------------------------------------------------------------------


def _dump(db: Path) -> str:
    """``.dump`` of a plain sqlite3 connection (the sqlite3 module agentmem uses, with
    sqlite-vec loaded for the vec0 tables)."""
    from sqlite3.dump import _iterdump  # Connection.iterdump's own (pysqlite3 lacks it)

    from agentmem._sqlite import load_vec, sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        load_vec(conn)
        return "\n".join(_iterdump(conn))
    finally:
        conn.close()


def leaks(planted: Planted, files: Iterable[Path], *, texts: Iterable[str] = ()) -> list[str]:
    """Where any planted secret (or its last 12 characters) is: ``field in place``."""
    places: list[tuple[str, bytes]] = []
    for f in files:
        if not f.exists():
            continue
        if f.is_dir():
            places += [(str(p), p.read_bytes()) for p in sorted(f.rglob("*")) if p.is_file()]
            continue
        places.append((str(f), f.read_bytes()))
        if f.suffix == ".db":
            places.append((f"{f} (iterdump)", _dump(f).encode()))
    places += [(f"text {i}", t.encode()) for i, t in enumerate(texts)]
    found = []
    for field, needle in planted.needles().items():
        n = needle.encode()
        for where, data in places:
            if n in data:
                found.append(f"{field} in {where}")
    return found


def _files_of(db: Path) -> list[Path]:
    """The library and every file beside it that agentmem writes (WAL, served log...)."""
    return sorted(db.parent.glob(db.name + "*"))


# -- the Python API ----------------------------------------------------------------------


def _planted_run(plant: Planted, *, group: bool = True) -> Trajectory:
    return Trajectory(
        task=f"deploy with {plant('task')} please",
        steps=[
            Step(
                plant("tool"),
                {
                    "cmd": f"curl -H 'x: {plant('params value')}'",
                    plant("params key"): "v",
                    "nested": [{"deep": plant("params nested")}],
                    "password": "Hunter2pw!x",
                },
                f"out {plant('output')} done",
                False,
            ),
            Step("bash", {"cmd": "ls"}, "x" * 100 + " " + plant("output 2"), True),
        ],
        **({"group": f"group {plant('group')}"} if group else {}),
        condition=f"cond {plant('condition')}",
        meta={
            "note": plant("meta value"),
            plant("meta key"): 1,
            "deep": {"list": [plant("meta nested")]},
            "session_id": plant("meta session_id"),
            "project": f"/w/{plant('meta project')}/app",
        },
        essential_actions=[{"name": "pay", "kwargs": {"card": plant("essential actions")}}],
        source=f"src {plant('source')}",
    )


def test_the_python_api_stores_no_secret_in_any_column_or_file(tmp_path: Path):
    plant = Planted("api")
    db = tmp_path / "lib" / "lib.db"
    db.parent.mkdir()
    with Memory.open(db, embedder="hash") as mem:
        a = mem.record(_planted_run(plant))
        b = mem.record(_planted_run(plant, group=False))  # the default group key
        mem.record(f"the password is bluefish42 ok {plant('task 2')}", [Step("bash", {}, "ok")])
        mem.feedback(a, "correct", note=f"use {plant('feedback note')} next time")
        with pytest.raises(RuntimeError), mem.trajectory(f"live {plant('live task')}") as t:
            t.step("bash", {"token": plant("live params")}, f"{plant('live output')}", True)
            raise RuntimeError(f"failed with {plant('exception')}")
        lesson = mem.add(f"Export the token {plant('lesson')} before deploying.")
        edited = mem.edit(lesson.id or 0, f"Pass the key {plant('edited lesson')} to deploy.")
        runs = {t.id: t for t in mem.trajectories()}
        assert runs[b].group == group_of(runs[b].task)
        assert "[REDACTED:" in runs[b].group and "[REDACTED:" in runs[a].group
        assert "[REDACTED:" in edited.text
    assert leaks(plant, _files_of(db)) == []
    assert "bluefish42" not in _dump(db)


def test_equal_tasks_with_the_same_secret_still_share_a_group(tmp_path: Path):
    s = Planted("groups")("task")
    with Memory.open(tmp_path / "g.db", embedder="hash") as mem:
        ids = [
            mem.record(f"Push with {s} to origin", [Step("bash", {}, "ok")]),
            mem.record(f"push  with {s} to origin ", [Step("bash", {}, "no", False)]),
            mem.record("push with another-token to origin", [Step("bash", {}, "ok")]),
        ]
        groups = [mem.get_trajectory(i).group for i in ids]
    assert groups[0] == groups[1] == "push with [REDACTED:github_token] to origin"
    assert groups[2] != groups[0]


def test_a_stored_group_key_of_a_raw_task_is_redacted_on_its_way_out():
    """A run recorded before group keys were redacted: its key is the raw task's, and
    leaves (a team push) as the redacted task's key; another key is redacted as text."""
    s = Planted("legacy")("task")
    task = redact(f"Push with {s} now")
    assert redact_group(f"push with {s.lower()} now", task, DEFAULT_REDACTOR) == group_of(task)
    assert redact_group("my own group", task, DEFAULT_REDACTOR) == "my own group"
    assert s not in redact_group(f"key {s}", task, DEFAULT_REDACTOR)


def test_a_disabled_redactor_stores_runs_as_given(tmp_path: Path):
    """The owner's choice: nothing is redacted, in any column (and storage does not
    redact behind their back)."""
    from agentmem.redact import Redactor

    s = Planted("off")("task")
    with Memory.open(tmp_path / "off.db", redactor=Redactor(enabled=False)) as mem:
        tid = mem.record(f"use {s}", [Step("bash", {"k": s}, s)])
        t = mem.get_trajectory(tid)
    assert s in t.task and s in t.group and t.steps[0].params["k"] == s


def test_storage_redacts_a_run_no_caller_redacted(tmp_path: Path):
    """A path that forgets to redact (a trajectory handed to storage as it is) still
    stores no secret: redaction is a property of what enters storage."""
    from agentmem.db import write
    from agentmem.storage import trajectories

    plant = Planted("storage")
    (tmp_path / "lib").mkdir()
    with Memory.open(tmp_path / "lib" / "s.db", embedder="hash") as mem, write(mem.db):
        trajectories.insert_trajectories(mem.db, [_planted_run(plant)])
    assert leaks(plant, _files_of(tmp_path / "lib" / "s.db")) == []


def test_a_learned_lesson_with_a_secret_is_journaled_and_stored_redacted(tmp_path: Path):
    """Whatever wrote an operation (a model, a data rule, a team), its text and note are
    redacted where the journal applies it, and its embedding still found."""
    from agentmem.db import write
    from agentmem.records import Operation
    from agentmem.storage.journal import apply_operations

    plant = Planted("journal")
    db = tmp_path / "lib" / "j.db"
    db.parent.mkdir()
    text = f"Export GH_TOKEN={plant('lesson')} before git push."
    with Memory.open(db, embedder="hash") as mem:
        lib = mem._retriever()
        lib.ensure_index()
        vectors = lib.embed([text])
        with write(mem.db):
            sid = mem.db.execute(
                "INSERT INTO sessions (kind, status, started_at, finished_at) "
                "VALUES ('learn', 'applied', 'x', 'x')"
            ).lastrowid
            done = apply_operations(
                mem.db,
                sid,
                [Operation("ADD", text=text, note=f"from {plant('note')}", origin="model")],
                vectors,
                rejected=[(Operation("ADD", text=f"Use {plant('rejected')}."), "test")],
            )
        assert [d.status for d in done] == ["rejected", "applied"]
        [lesson] = mem.experiences()
        assert lesson.text.startswith("Export GH_TOKEN=[REDACTED:")
        assert lesson.text.endswith("] before git push.")
        assert mem.retrieve("export the token before git push", k=1)[0].experience.id == lesson.id
    assert leaks(plant, _files_of(db)) == []


_WORDS = st.sampled_from(["run", "the", "tests", "deploy", "/w/app", "x=1", "ok", "-v"])


@st.composite
def _runs_with_secrets(draw: st.DrawFn) -> tuple[Trajectory, list[str]]:
    """A run with secrets of random shapes at random places: any field, text or key, at
    any depth of the parameters, meta and essential actions."""
    secrets: list[str] = []

    def text() -> str:
        words = draw(st.lists(_WORDS, max_size=4))
        if draw(st.booleans()):
            shape = draw(st.sampled_from(SHAPES))
            # six of one character in a row reads as a placeholder (sk_test_xxxxxx...) and stays
            body = draw(
                st.text("0123456789abcdef", min_size=48, max_size=48).filter(
                    lambda b: re.search(r"(.)\1{5}", b) is None
                )
            )
            secrets.append(shape(body))
            words.insert(draw(st.integers(0, len(words))), secrets[-1])
        return " ".join(words) or "x"

    def value(depth: int = 0) -> Any:
        kind = draw(st.integers(0, 3 if depth < 3 else 1))
        if kind == 0:
            return text()
        if kind == 1:
            return draw(st.sampled_from([1, None, True, 2.5]))
        if kind == 2:
            return [value(depth + 1) for _ in range(draw(st.integers(0, 3)))]
        return {text(): value(depth + 1) for _ in range(draw(st.integers(0, 3)))}

    steps = [
        Step(text(), {text(): value() for _ in range(draw(st.integers(0, 3)))}, text())
        for _ in range(draw(st.integers(0, 3)))
    ]
    fields: dict[str, Any] = {}
    if draw(st.booleans()):  # a key of the caller's own (else the task's default key)
        fields["group"] = text()
    return (
        Trajectory(
            task=text(),
            steps=steps,
            condition=text(),
            meta={text(): value() for _ in range(draw(st.integers(0, 3)))},
            essential_actions=[{"name": text(), "kwargs": {text(): value()}}],
            source=text(),
            **fields,
        ),
        secrets,
    )


@settings(max_examples=200, deadline=None)
@given(_runs_with_secrets())
def test_a_redacted_run_holds_no_planted_secret_anywhere(case):
    t, secrets = case
    out = redact_run(t, DEFAULT_REDACTOR, 0).trajectory
    dumped = repr(attrs.asdict(out))
    for s in secrets:
        assert s not in dumped and s[-12:] not in dumped, s
    if t.group == group_of(t.task):  # the default key: derived from the redacted task
        assert out.group == group_of(out.task)
    assert redact_run(out, DEFAULT_REDACTOR, 0).trajectory == out  # idempotent


def _meta_key_by_key(meta: dict[str, Any]) -> dict[str, Any]:
    """A run's meta redacted key by key, as redact_meta did before one scan chose the keys:
    agentmem's own ids as text, paths as paths, any other key and value as a value."""
    from agentmem.redact.runs import OWN_IDS, PATH_KEYS, PATH_MAP_KEYS, _path_map, redact_path

    r = DEFAULT_REDACTOR
    out: dict[str, Any] = {}
    for k, v in meta.items():
        if k in OWN_IDS and isinstance(v, str):
            out[k] = r.text(v)
        elif k in PATH_KEYS and isinstance(v, str):
            out[k] = redact_path(r, v)
        elif k in PATH_MAP_KEYS and _path_map(v):
            out[k] = {n: redact_path(r, p) for n, p in v.items()}
        else:
            out.update(r.value({k: v}))
    return out


_META_KEYS = st.sampled_from(
    ["session_id", "turn_id", "cwd", "project", "transcript", "token", "api_key", "model", "x"]
)
#: ``cwds``: {a call's index: its folder} (the importer's), or any other value under that key
_CWDS = st.one_of(
    st.dictionaries(st.sampled_from(["0", "3"]), st.sampled_from(["/w/-p-x/app", "/w/app/b"])),
    st.dictionaries(st.sampled_from(["0", "x"]), st.sampled_from(["/w/app", 3])),
)
_META_VALUES = st.one_of(
    st.sampled_from(["/w/app", "/w/-p-x/app", "abc-123", "ok", 3, None, ["-p", "x"]]),
    st.builds(
        lambda shape, body, words: " ".join([*words, shape(body)]),
        st.sampled_from(SHAPES),
        st.text("0123456789abcdef", min_size=48, max_size=48).filter(
            lambda b: re.search(r"(.)\1{5}", b) is None
        ),
        st.lists(_WORDS, max_size=2),
    ),
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(_META_KEYS, st.one_of(_META_VALUES, st.dictionaries(_META_KEYS, _META_VALUES))),
    st.one_of(st.none(), _CWDS),
)
def test_meta_comes_out_as_redacted_key_by_key(meta: dict[str, Any], cwds: Any) -> None:
    """One scan of meta's keys and values picks what to redact: the same as each key's."""
    from agentmem.redact.runs import redact_meta

    if cwds is not None:
        meta = {**meta, "cwds": cwds}

    assert redact_meta(DEFAULT_REDACTOR, meta) == _meta_key_by_key(meta)
    kept = redact_meta(DEFAULT_REDACTOR, meta, keep=True)
    assert kept == _meta_key_by_key(meta)
    if kept is meta:  # kept only where nothing changes
        assert _meta_key_by_key(meta) == meta
    clean = {"session_id": "abc-123", "cwd": "/w/app", "model": "x", "n": [1, None]}
    assert redact_meta(DEFAULT_REDACTOR, clean, keep=True) is clean


def _part_by_part(t: Trajectory) -> Trajectory:
    """What redact_run gives, part by part: every text, value and output redacted on its
    own (no scan that says which parts to leave, no part kept because nothing changed)."""
    r = DEFAULT_REDACTOR
    from agentmem.records import normalise_group

    task = r.text(t.task)
    texts = [t.task, t.group, t.condition or "", t.source, repr(t.meta)]
    texts += [repr(a) for a in t.essential_actions or ()]
    texts += [x for s in t.steps for x in (s.tool, repr(s.params), s.output)]
    if t.group != normalise_group(t.task):
        group = r.text(t.group)  # a key of the caller's own
    else:
        group = group_of(task) if any(map(r.needs, texts)) else t.group
    steps = [
        Step(r.text(s.tool)[:200], r.value(s.params), r.text(s.output), s.success) for s in t.steps
    ]
    acts = t.essential_actions
    return attrs.evolve(
        t,
        task=task,
        group=group,
        condition=None if t.condition is None else r.text(t.condition),
        source=r.text(t.source),
        meta=_meta_key_by_key(t.meta),
        essential_actions=None if acts is None else [r.value(a) for a in acts],
        steps=steps,
    )


@settings(max_examples=200, deadline=None)
@given(_runs_with_secrets())
def test_a_run_comes_out_as_redacted_part_by_part(case):
    """One scan of the run picks the parts to redact, and a part (a step, the meta, the
    run) whose redaction changes nothing is kept as it is: the same run as redacting every
    part on its own gives."""
    t, _ = case
    assert redact_run(t, DEFAULT_REDACTOR, 0).trajectory == _part_by_part(t)


def test_redact_run_leaves_a_clean_run_as_it_is():
    t = Trajectory(task="list files", steps=[Step("ls", {"path": "."}, "a.txt")])
    assert redact_run(t, DEFAULT_REDACTOR, 0).trajectory is t


# -- the CLI: record, feedback, export, backup --------------------------------------------


def test_the_cli_record_feedback_export_and_backup_hold_no_secret(tmp_path: Path):
    plant = Planted("cli")
    lib = tmp_path / "lib"
    lib.mkdir()
    db = lib / "x.db"
    record = {
        "task": f"the password is bluefish42 ok {plant('task')}",
        "group": f"g {plant('group')}",
        "condition": f"c {plant('condition')}",
        "meta": {"m": plant("meta"), plant("meta key"): "v", "cwd": f"/w/{plant('cwd')}"},
        "essential_actions": [{"name": "x", "kwargs": {"k": plant("essential actions")}}],
        "accepted": True,
        "steps": [
            {
                "tool": "bash",
                "params": {"cmd": f"echo {plant('params')}", plant("params key"): 1},
                "output": f"ok {plant('output')}",
                "success": True,
            }
        ],
    }
    plain = {
        "task": f"the password is bluefish42 ok {plant('task 2')}",
        "steps": [{"tool": "bash", "params": {}, "output": "ok", "success": True}],
    }
    p = run_cli("record", "-", db=db, input=jsonl(record, plain))
    assert p.returncode == 0, p.stderr
    p = run_cli("feedback", "1", "--correct", "--note", f"n {plant('feedback note')}", db=db)
    assert p.returncode == 0, p.stderr
    export = tmp_path / "out" / "rctp.jsonl"
    export.parent.mkdir()
    p = run_cli("export", "rctp", str(export), db=db)
    assert p.returncode == 0, p.stderr
    backup = tmp_path / "out" / "backup.db"
    p = run_cli("backup", str(backup), db=db)
    assert p.returncode == 0, p.stderr
    with Memory.open(db, embedder="hash") as mem:
        keys = [t.group for t in mem.trajectories()]
    assert keys[1].startswith("the password is [REDACTED:password] ok [REDACTED:"), keys
    assert export.stat().st_size > 0 and backup.stat().st_size > 0
    assert leaks(plant, [*_files_of(db), export, backup]) == []
    assert "bluefish42" not in _dump(db) + _dump(backup) + export.read_text()


# -- importers -----------------------------------------------------------------------------


def _claude_transcript(plant: Planted, home: Path, tag: str = "") -> tuple[ClaudeSession, Path]:
    cwd = f"/w/{plant(tag + 'cwd')}/app"
    s = ClaudeSession(cwd=cwd)
    s.prompt(f"deploy with {plant(tag + 'prompt')} please")
    s.tool(
        "Bash",
        {"command": f"export GH={plant(tag + 'tool params')}", plant(tag + "params key"): "x"},
        f"Exit code 1\nerror: {plant(tag + 'tool output')} refused",
        is_error=True,
    )
    s.tool("Read", {"file_path": f"{cwd}/.env"}, f"API={plant(tag + 'read output')}\n")
    s.say("Done.")
    s.prompt("now push it")
    s.tool("Bash", {"command": "git push"}, "ok")
    s.interrupt()
    slug = cwd.replace("/", "-")
    return s, s.write(home / ".claude" / "projects" / slug / f"{s.session_id}.jsonl")


def _codex_rollout(plant: Planted, home: Path, tag: str = "") -> tuple[CodexRollout, Path]:
    r = CodexRollout(cwd=f"/w/{plant(tag + 'cwd')}")
    r.prompt(f"make it pass with {plant(tag + 'prompt')}")
    r.exec(f"curl -H 'Authorization: {plant(tag + 'exec cmd')}' x", "1 failed", exit_code=1)
    r.exec("cat .env", f"TOKEN={plant(tag + 'exec output')}", exit_code=0)
    r.done()
    r.prompt("deploy")
    r.exec("kubectl apply -f d.yaml", "", denied=True)
    r.done()
    return r, r.write(home / "rollout.jsonl")


def test_importing_claude_code_and_codex_transcripts_stores_no_secret(tmp_path: Path):
    plant = Planted("import")
    lib = tmp_path / "lib"
    lib.mkdir()
    db = lib / "i.db"
    _, claude = _claude_transcript(plant, tmp_path / "home", "claude ")
    _, codex = _codex_rollout(plant, tmp_path / "home", "codex ")
    p = run_cli("import", str(claude), "--format", "claude-code", db=db)
    assert p.returncode == 0, p.stderr
    p = run_cli("import", str(codex), "--format", "codex", db=db)
    assert p.returncode == 0, p.stderr
    with Memory.open(db, embedder="hash") as mem:
        runs = mem.trajectories()
    assert {t.source for t in runs} == {"claude-code", "codex"} and len(runs) >= 3
    assert leaks(plant, _files_of(db), texts=[p.stdout.decode(), p.stderr.decode()]) == []
    # Importing again adds nothing: the turns' keys still match once redacted.
    p = run_cli("import", str(claude), "--format", "claude-code", db=db)
    assert p.returncode == 0, p.stderr
    with Memory.open(db, embedder="hash") as mem:
        assert len(mem.trajectories()) == len(runs)


def test_a_secret_in_a_session_id_is_redacted_and_imports_still_skip_what_they_have(
    tmp_path: Path,
):
    plant = Planted("session")
    s = ClaudeSession(session_id=plant("session id"), cwd="/w/app")
    s.prompt("list the files")
    s.tool("Bash", {"command": "ls"}, "a.txt")
    s.say("Done.")
    path = s.write(tmp_path / "t" / "s.jsonl")
    db = tmp_path / "lib" / "s.db"
    db.parent.mkdir()
    with Memory.open(db, embedder="hash") as mem:
        first = mem.import_transcripts("claude-code", [path], final=True)
        again = mem.import_transcripts("claude-code", [path], final=True, force=True)
    assert len(first.ids) == 1 and again.ids == [] and again.already == 1
    assert leaks(plant, _files_of(db)) == []


# -- hooks -----------------------------------------------------------------------------------


def _env(home: Path) -> dict[str, str]:
    import os

    env = {**os.environ}
    env.update(
        HOME=str(home),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        CODEX_HOME=str(home / ".codex"),
        XDG_STATE_HOME=str(home / "state"),
        HF_HUB_OFFLINE="1",
        PYTHONPATH=str(ROOT),
    )
    env.pop("AGENTMEM_DB", None)
    return env


def _hook(agent: str, db: Path, payload: dict[str, Any], home: Path) -> None:
    argv = [sys.executable, "-m", "agentmem", "hooks", "run", agent, "--db", str(db)]
    p = subprocess.run(
        argv, input=json.dumps(payload).encode(), capture_output=True, env=_env(home), timeout=120
    )
    assert p.returncode == 0, p.stderr
    return p


def _library_with_a_lesson(db: Path) -> None:
    with Memory.open(db, embedder="hash") as mem:
        mem.add("Before deploying, run the tests with make check.", domain="test")


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_the_hooks_store_and_log_no_secret(tmp_path: Path, agent: str):
    plant = Planted(f"hooks-{agent}")
    home = tmp_path / "home"
    lib = tmp_path / "lib"
    lib.mkdir()
    db = lib / "h.db"
    _library_with_a_lesson(db)
    if agent == "claude-code":
        _, transcript = _claude_transcript(plant, home)
    else:
        _, transcript = _codex_rollout(plant, home)
    base = {
        "session_id": plant("hook session id"),
        "transcript_path": str(transcript),
        "cwd": f"{tmp_path}/{plant('hook cwd')}",
        "permission_mode": "default",
    }
    prompt = {
        **base,
        "hook_event_name": "UserPromptSubmit",
        "prompt": f"deploying with {plant('hook prompt')}: run the tests first",
    }
    p = _hook(agent, db, prompt, home)
    assert b"make check" in p.stdout  # a lesson was served: the served log has a line
    stop = {**base, "hook_event_name": "Stop", "stop_hook_active": False}
    p = _hook(agent, db, stop, home)
    bad = {**base, "hook_event_name": "Stop", "transcript_path": f"/no/{plant('bad path')}.jsonl"}
    p = _hook(agent, db, bad, home)
    assert b"agentmem hook: " in p.stderr
    with Memory.open(db, embedder="hash") as mem:
        assert len(mem.trajectories()) >= 1
    served = db.with_name(db.name + ".served.jsonl")
    assert served.exists()
    log = home / "state" / "agentmem" / "hooks.log"
    assert log.exists()
    assert leaks(plant, [*_files_of(db), log], texts=[p.stderr.decode()]) == []


def test_the_served_log_redacts_a_session_and_a_project_that_may_hold_a_secret(tmp_path):
    from agentmem import served

    plant = Planted("served")
    db = tmp_path / "x.db"
    db.write_bytes(b"")
    assert served.record(
        db,
        route="hook",
        phash="h",
        served=[1],
        session=plant("session"),
        project=f"/w/{plant('project')}",
    )
    line = json.loads(Path(served.log_path(db)).read_text())
    assert "[REDACTED:" in line["session"] and "[REDACTED:" in line["project"]
    uuid = "0a1b2c3d-0000-4000-8000-000000000001"
    assert served.scrubbed(uuid) == uuid
    assert served.scrubbed("/home/me/app", path=True) == "/home/me/app"
    assert leaks(plant, [Path(served.log_path(db))]) == []


# -- MCP -------------------------------------------------------------------------------------


def test_mcp_agentmem_record_and_feedback_store_no_secret(tmp_path: Path):
    pytest.importorskip("mcp")
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    plant = Planted("mcp")
    lib = tmp_path / "lib"
    lib.mkdir()
    db = lib / "m.db"

    async def script() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "agentmem", "mcp", "--db", str(db)],
            env={"AGENTMEM_EMBEDDER": "hash", "PYTHONPATH": str(ROOT)},
            cwd=str(ROOT),
        )
        with anyio.fail_after(60):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                rec = await s.call_tool(
                    "agentmem_record",
                    {
                        "task": f"t {plant('task')}",
                        "group": f"g {plant('group')}",
                        "condition": f"c {plant('condition')}",
                        "meta": {"k": plant("meta"), plant("meta key"): 1},
                        "steps": [
                            {
                                "tool": "bash",
                                "params": {"cmd": plant("params"), plant("params key"): 1},
                                "output": f"o {plant('output')}",
                                "success": False,
                            }
                        ],
                    },
                )
                assert not rec.is_error, rec
                tid = rec.structured_content["id"]
                fb = await s.call_tool(
                    "agentmem_feedback",
                    {"trajectory_id": tid, "kind": "correct", "note": plant("feedback note")},
                )
                assert not fb.is_error, fb
                h = await s.call_tool("agentmem_begin", {"task": f"live {plant('live task')}"})
                handle = h.structured_content["handle"]
                await s.call_tool(
                    "agentmem_step",
                    {"handle": handle, "tool": "bash", "params": {"a": plant("live params")}},
                )
                end = await s.call_tool("agentmem_end", {"handle": handle, "accepted": False})
                assert not end.is_error, end

    anyio.run(script)
    with Memory.open(db, embedder="hash") as mem:
        assert len(mem.trajectories()) == 2
    assert leaks(plant, _files_of(db)) == []


# -- the team ------------------------------------------------------------------------------


def test_the_outbox_and_the_inbox_carry_no_secret_in_any_field(tmp_path: Path):
    """The push path's serialisation (no sqld needed): what a shared run queues in the
    outbox, and what the learner's validation makes of an item that a member's library
    left unredacted (an older agentmem, a hand-written item)."""
    from agentmem.storage import settings
    from agentmem.team import inbox

    plant = Planted("outbox")
    db = tmp_path / "lib" / "o.db"
    db.parent.mkdir()
    with Memory.open(db, embedder="hash") as mem:
        settings.put(mem.db, settings.TEAM, {"share": True})  # a team, as far as queueing goes
        tid = mem.record(_planted_run(plant))
        mem.feedback(tid, "reject", note=f"no {plant('feedback note')}")
        items = mem.db.execute("SELECT kind, payload FROM team_outbox").fetchall()
    assert [k for k, _ in items] == ["trajectory", "feedback"]
    assert leaks(plant, _files_of(db)) == []

    raw = Planted("inbox")
    item = {
        "trajectory": {
            "task": f"task {raw('task')}",
            "group_key": f"task {raw('task')}".lower(),
            "source": f"s {raw('source')}",
            "condition": f"c {raw('condition')}",
            "step_count": 1,
            "success_rate": 1.0,
            "state_ok": None,
            "essential_actions": json.dumps([{"name": "x", "kwargs": {"k": raw("actions")}}]),
            "meta": json.dumps({"m": raw("meta"), raw("meta key"): 1}),
            "created_at": "2026-01-05T10:00:00+00:00",
        },
        "steps": [
            {
                "position": 0,
                "tool": f"t {raw('tool')}",
                "domain": "general",
                "params": json.dumps({"p": raw("params"), raw("params key"): 1}),
                "output": f"o {raw('output')}",
                "success": 1,
            }
        ],
        "feedback": [
            {
                "uuid": "0a1b2c3d-0000-4000-8000-000000000002",
                "kind": "accept",
                "note": raw("feedback note"),
                "created_at": "2026-01-05T10:00:00+00:00",
            }
        ],
    }
    taken = inbox.validate("0a1b2c3d-0000-4000-8000-000000000003", "trajectory", json.dumps(item))
    assert taken["trajectory"]["group_key"] == group_of(taken["trajectory"]["task"])
    assert leaks(raw, [], texts=[json.dumps(taken)]) == []
    verdict = inbox.validate(
        "0a1b2c3d-0000-4000-8000-000000000004",
        "feedback",
        json.dumps(
            {
                "trajectory_uuid": "0a1b2c3d-0000-4000-8000-000000000003",
                "kind": "reject",
                "note": raw("verdict note"),
                "created_at": "2026-01-05T10:00:00+00:00",
            }
        ),
    )
    assert leaks(raw, [], texts=[json.dumps(verdict)]) == []
    assert outbox.redact_shared_run(item["trajectory"], item["steps"], item["feedback"])


def test_a_team_push_leaves_no_secret_in_the_inbox_the_team_library_or_a_replica(
    sqld_binary: str, tmp_path: Path
):
    from agentmem.team import membership
    from agentmem.team.config import replica_path_for

    from .test_team import Team

    (tmp_path / "team").mkdir()
    team = Team(tmp_path / "team")
    try:
        plant = Planted("team")
        a = team.laptop("a")
        tid = a.record(_planted_run(plant))
        a.record(f"the password is bluefish42 ok {plant('task 2')}", [Step("bash", {}, "ok")])
        a.feedback(tid, "correct", note=f"n {plant('feedback note')}")
        report = membership.sync(a)
        assert report.inserted >= 2
        tables = ("trajectories", "steps", "feedback")
        rows = [json.dumps(team.primary(f"SELECT * FROM {t}")) for t in tables]
        rows.append(json.dumps(team.inbox("SELECT * FROM inbox")))
        assert "[REDACTED:" in rows[0]
        replica = Path(replica_path_for(a.path or ""))
        assert leaks(plant, [*_files_of(Path(a.path or "")), replica], texts=rows) == []
        assert not any("bluefish42" in r for r in rows)
    finally:
        team.close()


@pytest.fixture(scope="module")
def sqld_binary() -> str:
    pytest.importorskip("libsql_experimental", reason="pip install 'agentmem[team]'")
    from .test_team import _sqld_or_skip

    return _sqld_or_skip()
