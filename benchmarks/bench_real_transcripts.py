"""What agentmem learns from real Claude Code and Codex sessions, against a hand-written key.

    python benchmarks/bench_real_transcripts.py [--data DIR] [--json] [--no-replay]
        [--only transcripts/] [--half validation] [--failures] [--present] [--check-targets]
        [--approve-held]

The corpus is real transcripts committed to public repositories by their authors
(``transcripts/`` and ``corpus/`` under ``../shared/data/``, or ``--data`` /
``$AGENTMEM_REAL_DATA``; each with its repository, path, commit, licence and client
version in the SOURCES.md beside it). Every transcript has an answer key in
``benchmarks/real/keys/`` (format: ``benchmarks/real/README.md``) that labels each of
its failed calls, by hand, as a *correction* worth learning (the lesson, its scope, the
program and the terms a matching lesson must name) or a *trap* that must teach nothing
(and why).

1. **All at once**: every transcript imported into one fresh library, one learning
   session without a model (``use_model=False``: the data's own texts). Printed:
   precision (lessons that match a key correction over all lessons), false global
   lessons (a lesson that matches none, served in every project), recall (the key's
   distinct lessons, one lesson text however many failed calls it corrects, that some
   lesson matches at one of its corrections; also by failed call; and of those a
   session demonstrates, as readers judged them: ``real/demonstrated.json``), and every
   lesson with its scope and its match.
2. **Replay**, per machine (a repository's sessions of one OS: :func:`machine_of`), in
   the order the sessions were written, whatever their project, as one user's library
   holds them (from wave 11; a library per project, as before, is printed beside): a
   fresh library learns from each session after it ends; at every prompt of the next session, the
   lessons the UserPromptSubmit hook serves for that prompt in the session's working
   directory (:func:`agentmem.hooks.run.prompt_served`, what the hook calls: the claim
   checks, the holdout and the served log included) are checked: at each failure that
   repeats a key correction of an earlier session, is a lesson matching it served, and
   how many prompts are served a lesson that matches no key correction (and how many
   had a lesson withheld because its claim fails; claims about PATH are not checked in a
   replay, since the session's machine is not this one).

Matching is mechanical (see :func:`matches`): a lesson matches a key correction when
(a) one of the runs it was learned from (the runs of every group its applied operations
came from, the groups Stage 3 merged into it included: :func:`lessons`) was imported
from that correction's transcript, and (b) the
lesson's text, with its rule facts (``experiences.rule``), names the correction's
``program`` and at least one of its ``terms`` (case-insensitive substrings). In the
replay, (a) is "from an earlier session of the machine".

The corpus is split by repository (``benchmarks/real/split.json``): a *development*
half the learning rules are written against and a *validation* half nobody reads while
writing them. Every figure is computed for each half on its own (its own libraries),
and reported validation first, beside development, each with its corpus size.

Targets: precision >= 0.9, 0 false global lessons, recall >= 0.6 (of the lessons a
session demonstrates: :func:`demonstrated`); in the replay at
least half of the repeated mistakes preceded by the right lesson and at most 5% of the
prompts served a wrong one; no lesson from a trap (a lesson that matches no key
correction and names the program of a failed call the key labels a trap, counted by the
trap's kind). ``--check-targets`` exits 1 when the validation half present misses one.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import os
import re
import shlex
import sys
import tempfile
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agentmem import Memory  # noqa: E402
from agentmem.browse.queries import LESSON_RUNS  # noqa: E402
from agentmem.hooks.run import prompt_served  # noqa: E402

sys.path.insert(0, str(ROOT / "tools"))
import place_corpus  # noqa: E402

KEYS = ROOT / "benchmarks" / "real" / "keys"
SOURCES = ROOT / "benchmarks" / "real" / "SOURCES.md"
SPLIT = ROOT / "benchmarks" / "real" / "split.json"
DEMONSTRATED = ROOT / "benchmarks" / "real" / "demonstrated.json"
HALVES = ("validation", "development")  # the order every report follows
TARGETS = {
    "precision": 0.9,
    "false_global": 0,
    "recall": 0.6,
    "replay_right": 0.5,
    "replay_wrong_turns": 0.05,
    "trap_lessons": 0,
}
LABELS = ("correction", "trap")
SCOPES = ("project", "machine", "global")
VALUES = ("high", "medium", "low")  # a correction's worth; recall counts high and medium
#: A reader's verdicts on whether a session demonstrates a key lesson (demonstrated.json),
#: strongest first; the first two count as demonstrated.
VERDICTS = ("one-call", "shown", "partly", "not-shown")
SHOWN = VERDICTS[:2]

# -- the corpus and its key ----------------------------------------------------------


def data_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Where ``transcripts/`` and ``corpus/`` are: ``explicit``, ``$AGENTMEM_REAL_DATA``,
    or ``../shared/data`` beside the repository."""
    chosen = explicit or os.environ.get("AGENTMEM_REAL_DATA")
    return Path(chosen) if chosen else ROOT.parent / "shared" / "data"


@dataclass(frozen=True)
class Failure:
    """A failed call found in a transcript: its id, tool, input and output."""

    id: str
    tool: str
    call: str
    output: str
    line: int


@dataclass
class Transcript:
    """A corpus file with its key."""

    file: str  # relative to the data root
    client: str  # claude-code | codex
    project: str  # the replay's project: the source repository
    entries: list[dict[str, Any]]
    path: Path = field(default=Path())
    repo: str = ""  # owner/name of the source repository ("" when not listed)
    half: str = ""  # validation | development ("" when the split does not place it)

    @property
    def import_path(self) -> Path:
        """The file to import: a sub-agent is imported through its parent session, or on
        its own when the corpus kept the sub-agent's file without its parent's."""
        if self.path.parent.name == "subagents":
            parent = self.path.parent.parent.with_suffix(".jsonl")
            if parent.exists():
                return parent
        return self.path


def load_keys(root: Path, keys: Path = KEYS) -> list[Transcript]:
    """Every key file, with the path of its transcript under ``root``, its source
    repository and its half of the split."""
    repos = source_repos(root)
    split = load_split()
    out = []
    for kp in sorted(keys.glob("*.json")):
        k = json.loads(kp.read_text(encoding="utf-8"))
        t = Transcript(k["file"], k["client"], k["project"], k["failures"])
        t.path = root / t.file
        t.repo = repos.get(t.file, "")
        t.half = split.halves.get(t.repo.lower(), "")
        if not t.repo and t.file.startswith("transcripts/"):
            t.half = "development"  # the six files that predate the split, read while writing rules
        out.append(t)
    return out


# -- the split by repository -------------------------------------------------------------


def split_half(repo: str) -> str:
    """The half a new repository falls in, by its ``owner/name`` alone: validation when
    ``sha256("agentmem-split:" + owner/name lower-cased)`` starts with a hex digit 0-7."""
    digest = hashlib.sha256(("agentmem-split:" + repo.lower()).encode()).hexdigest()
    return "validation" if digest[0] in "01234567" else "development"


@dataclass(frozen=True)
class Split:
    """``benchmarks/real/split.json``: its rule and each repository's half."""

    rule: str
    halves: dict[str, str]  # lower-case owner/name -> validation | development


def load_split(path: Path = SPLIT) -> Split:
    data = json.loads(path.read_text(encoding="utf-8"))
    halves: dict[str, str] = {}
    for half in HALVES:
        for repo in data.get(half, []):
            if halves.setdefault(repo.lower(), half) != half:
                raise ValueError(f"{path}: {repo} is in both halves")
    return Split(str(data.get("rule", "")), halves)


def source_repos(root: Path) -> dict[str, str]:
    """Each listed file (relative to the data root) -> its source repository: the rows of
    ``benchmarks/real/SOURCES.md`` for ``corpus/``, and ``transcripts/SOURCES.md`` (when
    present) for ``transcripts/``."""
    out = {f"corpus/{r.file}": r.repo for r in place_corpus.load_rows(SOURCES)}
    listed = root / "transcripts" / "SOURCES.md"
    if listed.is_file():
        header: list[str] = []
        for line in listed.read_text(encoding="utf-8").splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not line.startswith("|"):
                header = []
            elif "file" in cells and "source repo" in cells:
                header = cells
            elif header and len(cells) == len(header) and not set("".join(cells)) <= set("-: "):
                row = dict(zip(header, cells, strict=True))
                out[f"transcripts/{row['file']}"] = row["source repo"]
    return out


def load_demonstrated(
    path: Path = DEMONSTRATED, files: Collection[str] | None = None
) -> dict[str, str]:
    """Each judged key lesson's verdict: whether a session demonstrates it, as independent
    readers judged the key's high- and medium-value lessons, blind to what agentmem learns
    (``one-call``: one later call did it the lesson's way and worked; ``shown``: the session
    shows the fix working otherwise; ``partly``: the lesson claims more than the session
    shows; ``not-shown``). With ``files`` (the transcripts measured: one half), the best
    verdict of a lesson's instances in those files, a lesson with none there left out (a
    lesson keyed in both halves, demonstrated only by a development session, is no
    demonstrated lesson of the validation half). Empty when the file is absent."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    if files is None:
        return {str(x["lesson"]): str(x["verdict"]) for x in data["lessons"]}
    out: dict[str, str] = {}
    for x in data["lessons"]:
        judged = [str(i["verdict"]) for i in x["instances"] if i["file"] in files]
        if judged:
            out[str(x["lesson"])] = min(judged, key=VERDICTS.index)
    return out


def demonstrated(lessons: set[str], verdicts: Mapping[str, str]) -> set[str]:
    """The key lessons a session demonstrates (issue 29's recall counts these): judged
    ``one-call`` or ``shown``. A lesson no reader judged counts, so a new key entry never
    shrinks the denominator for want of a reading."""
    return {x for x in lessons if verdicts.get(x, SHOWN[0]) in SHOWN}


def not_placed() -> set[str]:
    """The files (relative to the data root) SOURCES.md lists but never places."""
    return {f"corpus/{r.file}" for r in place_corpus.load_rows(SOURCES) if not r.placed}


def check_key(t: Transcript) -> list[str]:
    """What is wrong with a key: a failed call it misses, an entry for a call that did not
    fail, a label or scope it does not know, a correction without program or terms."""
    problems = []
    found = {f.id for f in failed_calls(t.path)}
    keyed = [e["id"] for e in t.entries]
    problems += [f"{t.file}: failed call {i} has no key entry" for i in sorted(found - {*keyed})]
    problems += [f"{t.file}: key entry {i} is not a failed call" for i in sorted({*keyed} - found)]
    problems += [f"{t.file}: {i} keyed twice" for i in {i for i in keyed if keyed.count(i) > 1}]
    for e in t.entries:
        if e.get("label") not in LABELS:
            problems.append(f"{t.file}: {e['id']}: label {e.get('label')!r}")
        elif e["label"] == "correction":
            program = e.get("program")
            if isinstance(program, list) and not all(isinstance(p, str) and p for p in program):
                problems.append(f"{t.file}: {e['id']}: program must be a name or a list of names")
            if e.get("scope") not in SCOPES or not program or not e.get("terms"):
                problems.append(f"{t.file}: {e['id']}: a correction needs scope, program, terms")
            if not e.get("lesson"):
                problems.append(f"{t.file}: {e['id']}: a correction needs its lesson")
            if e.get("value", "medium") not in VALUES:
                problems.append(f"{t.file}: {e['id']}: value {e.get('value')!r}")
        elif not e.get("why"):
            problems.append(f"{t.file}: {e['id']}: a trap needs its why")
    return problems


# -- failed calls, found without agentmem ---------------------------------------------

_CC_EXIT = re.compile(r"^Exit code (\d+)")
_CX_EXIT = re.compile(r"^(?:Exit code: |Process exited with code )(-?\d+)", re.M)
# "exec_command failed for `...`: CreateProcess { ... Sandbox(Denied ...", or without the command
# ("exec_command failed: SandboxDenied { ...")
# ("exec_command failed: SandboxDenied { ..."), and Codex before 0.40's "failed in sandbox
# MacosSeatbelt with execution error: ... exit code: 1" (or "failed in sandbox: ...")
_CX_REFUSED = re.compile(r"^(?:\w+ failed(?: for `|: )|failed in sandbox\b)")
_CX_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_CX_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                yield n, obj


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text(x.get("text", "")) if isinstance(x, Mapping) else str(x) for x in content
        )
    return "" if content is None else str(content)


def _blocks(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    m = obj.get("message")
    c = m.get("content") if isinstance(m, Mapping) else None
    return [b for b in c if isinstance(b, Mapping)] if isinstance(c, list) else []


def is_codex(path: Path) -> bool:
    return any(o.get("type") == "session_meta" for n, o in _lines(path) if n < 5)


def failed_calls(path: Path) -> list[Failure]:
    """The failed calls of a transcript: Claude Code ``tool_result`` with ``is_error`` or
    an ``Exit code N`` (N > 0) head; Codex outputs with a non-zero exit code (JSON
    ``metadata.exit_code`` or an ``Exit code:`` / ``Process exited with code`` line, or
    an ``exec_command failed for `...``` sandbox refusal, or code mode's "Script failed"),
    an MCP result with ``isError``, or an ``apply_patch`` output that does not start with
    "Success"."""
    return list(_codex_failures(path) if is_codex(path) else _claude_failures(path))


def _claude_failures(path: Path) -> Iterator[Failure]:
    calls: dict[str, Mapping[str, Any]] = {}
    for n, obj in _lines(path):
        for b in _blocks(obj):
            if b.get("type") == "tool_use":
                calls[str(b.get("id"))] = b
            elif b.get("type") == "tool_result":
                text = _text(b.get("content"))
                head = _CC_EXIT.match(text)
                if b.get("is_error") is True or (head and head.group(1) != "0"):
                    c = calls.get(str(b.get("tool_use_id")), {})
                    call = json.dumps(c.get("input"), ensure_ascii=False)
                    yield Failure(str(b.get("tool_use_id")), str(c.get("name")), call, text, n)


def _codex_failures(path: Path) -> Iterator[Failure]:
    calls: dict[str, Mapping[str, Any]] = {}
    for n, obj in _lines(path):
        p = obj.get("payload")
        if not isinstance(p, Mapping):
            continue
        if p.get("type") in _CX_CALLS:
            calls[str(p.get("call_id"))] = p
        elif p.get("type") in _CX_OUTPUTS:
            c = calls.get(str(p.get("call_id")), {})
            code, text = _codex_exit(p.get("output"))
            patch_failed = c.get("name") == "apply_patch" and code is None
            if (code not in (None, 0)) or (patch_failed and not text.startswith("Success")):
                call = c.get("arguments") or c.get("input") or ""
                yield Failure(str(p.get("call_id")), str(c.get("name")), str(call), text, n)


def _codex_exit(output: Any) -> tuple[int | None, str]:
    """An output's exit code (None when it states none) and its text; an MCP result with
    ``isError`` counts as exit code 1."""
    text = output if isinstance(output, str) else json.dumps(output)
    try:
        j = json.loads(text)
    except ValueError:
        j = None
    if isinstance(j, dict) and isinstance(j.get("metadata"), dict):
        return j["metadata"].get("exit_code"), str(j.get("output", ""))
    if isinstance(j, dict) and j.get("isError") is True:
        return 1, text
    if re.match(r"(?:\[\{\"type\": \"input_text\", \"text\": \")?Script failed\b", text):
        return 1, text  # code mode's exec: the script failed
    head = _CX_EXIT.search(text[:400])
    if head is None and _CX_REFUSED.match(text):  # the sandbox refused to start it
        code = re.search(r"exit[_ ]code: (-?\d+)", text)
        return (int(code.group(1)) if code and code.group(1) != "0" else 1), text
    return (int(head.group(1)) if head else None), text


# -- prompts, in order, with the failures that follow each -------------------------------


@dataclass
class Turn:
    prompt: str
    failures: list[str]  # call ids
    line: int = 0  # the prompt's line in the file (0-based): the lines before it came before it


_NOT_PROMPTS = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<turn_aborted>")


def turns(path: Path) -> list[Turn]:
    """The prompts a user typed (the text a UserPromptSubmit hook sees), each with the
    ids of the failed calls made before the next prompt."""
    failed = {f.line: f.id for f in failed_calls(path)}
    out: list[Turn] = []
    codex = is_codex(path)
    for n, obj in _lines(path):
        prompt = _codex_prompt(obj) if codex else _claude_prompt(obj)
        if prompt:
            out.append(Turn(prompt, [], n))
        elif n in failed and out:
            out[-1].failures.append(failed[n])
    return out


def _claude_prompt(obj: Mapping[str, Any]) -> str | None:
    if obj.get("type") != "user" or obj.get("isSidechain") or obj.get("isMeta"):
        return None
    m = obj.get("message")
    c = m.get("content") if isinstance(m, Mapping) else None
    blocks = c if isinstance(c, list) else []
    if any(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in blocks):
        return None
    text = _text(c).strip()
    return text or None


def _codex_prompt(obj: Mapping[str, Any]) -> str | None:
    p = obj.get("payload")
    if obj.get("type") != "event_msg" or not isinstance(p, Mapping):
        return None
    if p.get("type") != "user_message":
        return None
    text = str(p.get("message") or "").strip()
    return text if text and not text.startswith(_NOT_PROMPTS) else None


def started(path: Path) -> str:
    """The first timestamp of a transcript, to order a project's sessions."""
    for _, obj in _lines(path):
        ts = obj.get("timestamp")
        if isinstance(ts, str) and ts:
            return ts
    return ""


@functools.cache
def ended(path: Path) -> str:
    """The last timestamp of a transcript: when its session ended."""
    last = ""
    for _, obj in _lines(path):
        ts = obj.get("timestamp")
        if isinstance(ts, str) and ts:
            last = max(last, ts)
    return last


def cwd_of(path: Path) -> str | None:
    for _, obj in _lines(path):
        p = obj.get("payload")
        if obj.get("type") == "session_meta" and isinstance(p, Mapping) and p.get("cwd"):
            return str(p["cwd"])
        if isinstance(obj.get("cwd"), str) and obj["cwd"]:
            return str(obj["cwd"])
    return None


# -- a library, its lessons and where they came from -----------------------------------


@dataclass
class Lesson:
    id: int
    text: str
    scope: str  # global, or the project it is served in
    rule: str  # the rule facts, JSON text ("" without)
    sources: set[str]  # transcript paths of the runs it was learned from
    match: str | None = None  # "file#call id" of the (first) key correction it matches
    matched: list[str] = field(default_factory=list)  # every key correction it matches


def _an_hour_ago() -> str:
    return (datetime.now(timezone.utc) - timedelta(hours=1)).isoformat(timespec="microseconds")


class _Later:
    """The import's clock two days on: a corpus file was placed minutes ago, but its
    session is long over, as a user's old transcript is (unchanged for a day: a call that
    never got its result is left out and the turn recorded, ``importers.turns.settle``).
    Without it an excerpt cut inside a turn was not imported at all."""

    @staticmethod
    def time() -> float:
        return time.time() + 2 * 86400


def import_all(mem: Memory, items: Sequence[Transcript]) -> None:
    """Import finished sessions. Their runs are recorded an hour back: the sessions ended
    long ago, so their 120 s acceptance window is closed (agentmem dates an imported run
    by the import, not by the session's end; reported, not fixed here); and their files
    are read as a user's old transcripts are (:class:`_Later`)."""
    with (
        mock.patch("agentmem.storage.trajectories.now_iso", _an_hour_ago),
        mock.patch("agentmem.importers.run.now_iso", _an_hour_ago),
        mock.patch("agentmem.importers.run.time", _Later),
    ):
        for fmt in ("claude-code", "codex"):
            paths = sorted({str(t.import_path) for t in items if t.client == fmt})
            if paths:
                mem.import_transcripts(fmt, paths, final=True)


def lessons(mem: Memory) -> list[Lesson]:
    """The live lessons, each with its scope, rule facts and source transcripts: the
    transcripts of the runs of every group an applied ADD / MODIFY / MERGE of it came
    from, its own and those Stage 3 merged into it (``agentmem browse``'s ``lesson_runs``
    query, :data:`agentmem.browse.queries.LESSON_RUNS`). One Edit lesson generalised from
    the corrections of four transcripts is learned from all four, not only from the
    group that proposed it."""
    scopes = mem.experience_scopes()
    sql = f"SELECT DISTINCT r.trajectory, t.meta FROM ({LESSON_RUNS}) r " + (
        "JOIN trajectories t ON t.id = r.trajectory"
    )
    sources: dict[int, set[str]] = {}
    for (eid,) in mem.db.execute("SELECT id FROM experiences WHERE status = 'live'").fetchall():
        for _tid, meta in mem.db.execute(sql, {"lesson": eid}).fetchall():
            path = json.loads(meta or "{}").get("transcript")
            if path:
                sources.setdefault(eid, set()).add(str(path))
    live = "SELECT id, rule FROM experiences WHERE status = 'live'"
    rules = dict(mem.db.execute(live).fetchall())
    return [
        Lesson(
            e.id,
            e.text,
            scopes.get(e.id, "global"),
            rules.get(e.id) or "",
            sources.get(e.id, set()),
        )
        for e in mem.experiences()
        if e.id is not None
    ]


def corrections(items: Sequence[Transcript]) -> dict[str, tuple[Transcript, dict[str, Any]]]:
    """Every key correction by its stable id, ``file#call id``."""
    return {
        f"{t.file}#{e['id']}": (t, e)
        for t in items
        for e in t.entries
        if e["label"] == "correction"
    }


def names(lesson: Lesson, entry: Mapping[str, Any]) -> bool:
    """(b) of the matching rule: the lesson (text and rule facts) names the correction's
    program, as a word, and one of its terms, from the start of a word (a term may be a
    word's stem: "before writ"). Not inside another word: "dir" is not named by
    "create_directory", nor "ls" by "fails" (wave 9's reader found both)."""
    hay = f"{lesson.text}\n{lesson.rule}".lower()
    return any(_has(hay, p, whole=True) for p in programs(entry)) and any(
        _has(hay, t, whole=False) for t in entry["terms"]
    )


def _has(hay: str, name: str, whole: bool) -> bool:
    """Whether ``hay`` holds ``name`` (lower case) starting a word, and ending one when
    ``whole``: no letter or digit before it (after it); ``_`` and ``.`` separate words
    (``mcp__fs__create_directory`` names ``create_directory``), and a name that starts or
    ends with another character (".ps1", "-- PATTERN") needs no boundary on that side."""
    n = name.lower()
    if not n:
        return False
    head = r"(?<![a-z0-9])" if re.match(r"[a-z0-9]", n) else ""
    tail = r"(?![a-z0-9])" if whole and re.search(r"[a-z0-9]$", n) else ""
    return re.search(head + re.escape(n) + tail, hay) is not None


def programs(entry: Mapping[str, Any]) -> list[str]:
    """A correction's ``program``: one name, or a list of names any of which a lesson may
    name (a project's script that runs git: the script, or git)."""
    p = entry["program"]
    return [p] if isinstance(p, str) else list(p)


def matches(lesson: Lesson, t: Transcript, entry: Mapping[str, Any]) -> bool:
    """A lesson matches a key correction: (a) it was learned from a run of that
    correction's transcript (its file, or for a sub-agent its parent session), and (b)
    :func:`names`."""
    here = {str(t.path.resolve()), str(t.import_path.resolve())}
    return bool({str(Path(s).resolve()) for s in lesson.sources} & here) and names(lesson, entry)


def assign(found: Sequence[Lesson], keyed: Mapping[str, tuple[Transcript, dict[str, Any]]]) -> None:
    """Each lesson's matches: a lesson learned from several transcripts' runs is credited
    to every key correction it matches (recall by failed call counts them all)."""
    for lesson in found:
        lesson.matched = [k for k, (t, e) in keyed.items() if matches(lesson, t, e)]
        lesson.match = lesson.matched[0] if lesson.matched else None


def learn(mem: Memory) -> None:
    mem.learn(use_model=False)


# -- all at once -------------------------------------------------------------------------


def evaluate(items: Sequence[Transcript], workdir: Path) -> dict[str, Any]:
    """One library of the whole corpus, one session: precision, false global, recall."""
    keyed = corrections(items)
    t0 = time.perf_counter()
    with Memory.open(workdir / "all.db") as mem:
        import_all(mem, items)
        learn(mem)
        found = lessons(mem)
    assign(found, keyed)
    hit = {k for x in found for k in x.matched}
    key_lessons = {e["lesson"] for _, e in keyed.values() if worth_recalling(e)}
    taught = {keyed[k][1]["lesson"] for k in hit} & key_lessons
    verdicts = load_demonstrated(files={t.file for t in items})
    shown = demonstrated(key_lessons, verdicts)
    again, spread = recurring(keyed), recurring(keyed, by="project")
    wide = [
        x for x in found if x.match and x.scope == "global" and _key_scope(keyed, x) == "project"
    ]
    from_traps = trap_lessons(found, items)
    return {
        "lessons": len(found),
        "precision": (len([x for x in found if x.match]) / len(found)) if found else None,
        "false_global": len([x for x in found if not x.match and x.scope == "global"]),
        "recall": len(taught) / len(key_lessons) if key_lessons else None,
        "key_lessons": len(key_lessons),
        "key_lessons_learned": len(taught),
        "recall_shown": len(taught & shown) / len(shown) if shown else None,
        "shown": len(shown),
        "shown_learned": len(taught & shown),
        "unjudged": len(key_lessons - set(verdicts)),
        "recurring": len(again),
        "recurring_learned": len(taught & again),
        "across_projects": len(spread),
        "across_projects_learned": len(taught & spread),
        "recall_calls": len(hit) / len(keyed) if keyed else None,
        "corrections": len(keyed),
        "corrections_learned": sorted(hit),
        "too_wide": len(wide),
        "trap_lessons": len({x["lesson"] for x in from_traps}),
        "trap_kinds": _by_kind(from_traps),
        "from_traps": from_traps,
        "listing": [
            {"id": x.id, "text": x.text, "scope": x.scope, "match": x.match or "FALSE"}
            for x in found
        ],
        "seconds": round(time.perf_counter() - t0, 1),
    }


_SHELLS = {"sh", "bash", "zsh", "dash", "fish", "pwsh", "powershell", "powershell.exe", "cmd"}
_PREFIXES = {"sudo", "env", "time", "then", "do", "else", "exec", "nohup", "command", "!"}
_NOT_PROGRAMS = {"cd", "pushd", "popd", "echo", "true", "false", "set", "export", "sleep"}


def programs_of(f: Failure) -> set[str]:
    """What a failed call is a call of, lower-case: for a shell command the first word of
    each of its commands (``a | b && c`` gives a, b, c), else the tool itself (Edit,
    apply_patch). A shell tool's own name (Bash, shell, exec_command) is left out: every
    shell lesson names it."""
    out: set[str] = set()
    try:
        args = json.loads(f.call)
    except ValueError:
        args = None
    cmd = (args.get("command") or args.get("cmd")) if isinstance(args, dict) else None
    if isinstance(cmd, list):
        words = [str(w) for w in cmd]
        if len(words) >= 3 and Path(words[0]).name in _SHELLS and words[1] in ("-c", "-lc"):
            cmd = words[2]
        else:
            cmd = " ".join(words)
    if not isinstance(cmd, str):
        return {f.tool.lower()}
    for words in _commands(cmd):
        words = [w for w in words if "=" not in w.split("/")[0]]
        while words and words[0] in _PREFIXES:
            words = words[1:]
        name = Path(words[0]).name if words else ""
        if name and name not in _NOT_PROGRAMS and re.fullmatch(r"[A-Za-z][\w.+-]*", name):
            out.add(name.lower())
    return out


_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?([^\n]*)\n.*?\n\s*\1(?=\s|$)", re.S)
_OPERATORS = {"|", "||", "&&", ";", "&", "|&", "(", ")", ";;"}


def _commands(cmd: str) -> list[list[str]]:
    """The simple commands of a command line, as word lists: quotes respected, heredoc
    bodies dropped, split at pipes, ``&&``, ``||``, ``;`` and new lines."""
    cmd = _HEREDOC.sub(lambda m: m.group(2), cmd).replace("\n", " ; ")
    lexer = shlex.shlex(cmd, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # an unbalanced quote: fall back to plain words
        tokens = cmd.replace("|", " | ").replace(";", " ; ").split()
    out: list[list[str]] = [[]]
    for tok in tokens:
        if tok in _OPERATORS or set(tok) <= set("|&;()"):
            out.append([])
        else:
            out[-1].append(tok)
    flat: list[list[str]] = []
    for c in out:
        flag = next((i for i, w in enumerate(c) if w.lower() in ("-c", "-lc", "-command")), 0)
        if flag and Path(c[0]).name.lower() in _SHELLS and flag + 1 < len(c):
            # bash -lc '...', powershell.exe -NoProfile -Command ...: the script's commands
            flat += _commands(" ".join(c[flag + 1 :]) if flag + 2 < len(c) else c[flag + 1])
        elif c:
            flat.append(c)
    return flat


def _names_program(lesson: Lesson, program: str) -> bool:
    hay = f"{lesson.text}\n{lesson.rule}".lower()
    return re.search(rf"(?<![\w-]){re.escape(program)}(?![\w-])", hay) is not None


def trap_lessons(found: Sequence[Lesson], items: Sequence[Transcript]) -> list[dict[str, Any]]:
    """The lessons learned from a trap: a lesson that matches no key correction, learned
    from a transcript (or its parent session) holding a failed call the key labels a
    trap, and naming that call's tool or one of its programs (:func:`programs_of`). One
    row per (lesson, trap kind), with the first such call."""
    by_source: dict[str, list[Transcript]] = {}
    for t in items:
        for p in {str(t.path.resolve()), str(t.import_path.resolve())}:
            by_source.setdefault(p, []).append(t)
    out: list[dict[str, Any]] = []
    for lesson in found:
        if lesson.match:
            continue
        kinds: dict[str, str] = {}
        for src in sorted(lesson.sources):
            for t in by_source.get(str(Path(src).resolve()), []):
                traps = {e["id"]: e for e in t.entries if e["label"] == "trap"}
                for f in failed_calls(t.path) if traps else []:
                    e = traps.get(f.id)
                    if e and any(_names_program(lesson, p) for p in programs_of(f)):
                        kinds.setdefault(str(e.get("trap") or "unknown"), f"{t.file}#{f.id}")
        out += [{"lesson": lesson.id, "kind": k, "trap": c} for k, c in sorted(kinds.items())]
    return out


def _by_kind(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["kind"]] = counts.get(r["kind"], 0) + 1
    return counts


def worth_recalling(entry: Mapping[str, Any]) -> bool:
    """Whether recall counts a key correction: of high or medium value (a key written before
    values were keyed says none: medium). A low-value correction is no false lesson when
    learned, and no miss when not."""
    return entry.get("value", "medium") in ("high", "medium")


def recurring(
    keyed: Mapping[str, tuple[Transcript, dict[str, Any]]], by: str = "session"
) -> set[str]:
    """The key's distinct high/medium lessons that recur: keyed in two or more sessions (a
    sub-agent's file counts as its parent's session), or with ``by="project"`` in two or
    more projects. Recall on these says whether what recurs is learned; a one-off lesson is
    worth less in a prompt."""
    seen: dict[str, set[str]] = {}
    for t, e in keyed.values():
        if worth_recalling(e):
            session = t.file.split("/subagents/")[0].removesuffix(".jsonl")
            where = t.project if by == "project" else session
            seen.setdefault(e["lesson"], set()).add(where)
    return {lesson for lesson, places in seen.items() if len(places) >= 2}


def _key_scope(keyed: Mapping[str, tuple[Transcript, dict[str, Any]]], x: Lesson) -> str:
    return str(keyed[x.match][1]["scope"]) if x.match else ""


# -- the replay --------------------------------------------------------------------------


def projects(items: Sequence[Transcript]) -> dict[str, list[list[Transcript]]]:
    """Each project's sessions in the order they were written (a project: a folder name of
    one source repository, ``owner/name:project``); a session is its file with
    its sub-agents' files (imported with it; their failures are not replayed, as their
    prompts are the parent's)."""
    sessions: dict[Path, list[Transcript]] = {}
    for t in items:
        sessions.setdefault(t.import_path, []).append(t)
    out: dict[str, list[list[Transcript]]] = {}
    for path in sorted(sessions, key=lambda p: (started(p), str(p))):
        group = sorted(sessions[path], key=lambda t: t.path != path)  # the session first
        # a project is one repository's: "dotfiles" or "workspace" names folders of many
        out.setdefault(f"{group[0].repo}:{group[0].project}", []).append(group)
    return out


def repeats(t: Transcript, present: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Call id -> the earlier key correction (``file#id``) it repeats, from ``same_as``;
    with ``present`` (the corrections of the transcripts measured), only the repeats of a
    correction there: a session whose earlier one is not in the set measured (a blind set
    of later sessions of a corpus project) repeats nothing the replay could have learned."""
    return {
        e["id"]: e["same_as"]
        for e in t.entries
        if e.get("same_as") and (present is None or e["same_as"] in present)
    }


#: What one library of the replay holds: ``machine``, the sessions of one machine
#: (:func:`machine_of`) in the order they were written, whatever their project, as one
#: user's library does (from wave 11); ``project``, one project's sessions (before).
LIBRARIES = ("machine", "project")


def libraries(items: Sequence[Transcript], by: str = "machine") -> list[list[list[Transcript]]]:
    """The replay's libraries: each a list of sessions (a session: its file and its
    sub-agents' files) in the order they were written; one per machine, or per project
    (:func:`projects`)."""
    if by not in LIBRARIES:
        raise ValueError(f"by: one of {', '.join(LIBRARIES)}, not {by!r}")
    per_project = projects(items)
    if by == "project":
        return list(per_project.values())
    sessions = sorted(
        (s for seq in per_project.values() for s in seq),
        key=lambda s: (started(s[0].import_path), str(s[0].import_path)),
    )
    out: dict[str, list[list[Transcript]]] = {}
    for s in sessions:
        out.setdefault(machine_of(s[0]), []).append(s)
    return list(out.values())


def replay(
    items: Sequence[Transcript],
    workdir: Path,
    *,
    approve_held: bool = False,
    by: str = "machine",
) -> dict[str, Any]:
    """Per library (``by``: one per machine, as a user's, or per project:
    :func:`libraries`): learn after each session, then check what every prompt of the
    next session is served. ``approve_held``: a person approves every lesson held for
    review (an escalation past the sandbox, a risky command) after each session, the right
    and the wrong alike, as ``agentmem review`` would; by default nobody does, and a held
    lesson never reaches a prompt."""
    keyed = corrections(items)
    stats: dict[str, Any] = {
        "turns": 0,
        "wrong_turns": 0,
        "withheld_turns": 0,  # prompts where the hook's filters withheld a lesson
        "repeated": 0,
        "right": 0,
    }
    stats["cases"] = []
    stats["withheld"] = []
    stats["repeats_elsewhere"] = 0  # repeats of a correction no session of the library made
    for n, seq in enumerate(libraries(items, by)):
        with Memory.open(workdir / f"replay-{n}.db") as mem:
            imported: set[str] = set()  # the files learned from, sub-agents' included
            pending: list[list[Transcript]] = []  # sessions replayed, not yet ended
            for session in seq:
                # a session is learned from once it has ended: one still running when the
                # next starts (two projects at once) is not in that one's library yet
                begin = started(session[0].import_path)
                over = [s for s in pending if ended(s[0].import_path) <= begin]
                for done in sorted(over, key=lambda s: ended(s[0].import_path)):
                    with on_machine(done[0]):
                        import_all(mem, done)
                        learn(mem)
                    if approve_held:
                        approve_all(mem)
                    imported |= {t.file for t in done}
                    pending.remove(done)
                if imported and session[0].path == session[0].import_path:
                    with on_machine(session[0]):
                        _replay_session(mem, session[0], keyed, stats, imported)
                pending.append(session)
    n, r = stats["turns"], stats["repeated"]
    stats["wrong_turn_share"] = stats["wrong_turns"] / n if n else None
    stats["right_share"] = stats["right"] / r if r else None
    return stats


def machine_of(t: Transcript) -> str:
    """The machine a replayed session ran on, as its own hook would know it: one a
    repository and OS (a user's sessions of one OS in one repository are taken to be one
    machine's; a dotfiles repository with macOS and Linux sessions holds two)."""
    key = f"agentmem-replay:{t.repo}:{os_of(cwd_of(t.path))}"
    return "m-" + hashlib.sha256(key.encode()).hexdigest()[:16]


@contextlib.contextmanager
def on_machine(t: Transcript) -> Iterator[str]:
    """Import, learn and serve as the machine ``t`` ran on (:func:`machine_of`): its runs
    are recorded from that machine, and the hook runs there, so a machine fact ("The Bash
    tool runs Git Bash here") is served in its other projects, as on the user's machine.
    Without it every transcript is from an unknown machine here and a machine fact is
    its project's alone (the replay before wave 10)."""
    import agentmem.projects as projects_module

    machine = machine_of(t)
    saved = list(projects_module._MACHINE)
    projects_module._MACHINE[:] = [machine]
    try:
        with mock.patch(
            "agentmem.storage.trajectories.recorded_machine",
            lambda meta: meta.get("machine") or machine,
        ):
            yield machine
    finally:
        projects_module._MACHINE[:] = saved


def approve_all(mem: Memory) -> int:
    """Approve every lesson held for review, as a person who approves all would; returns
    how many."""
    held = [i for i, state in mem.review_states().items() if state == "held"]
    for i in held:
        mem.review(i, "approved", by="replay")
    return len(held)


def _replay_session(
    mem: Memory,
    t: Transcript,
    keyed: Mapping[str, tuple[Transcript, dict[str, Any]]],
    stats: dict[str, Any],
    imported: Collection[str] | None = None,
) -> None:
    """Replay the prompts of ``t`` against ``mem``. ``imported``: the files the library has
    learned from; a repeat of a correction made in none of them (on another machine, in a
    session still running) is left out and counted in ``repeats_elsewhere``."""
    found = lessons(mem)
    assign(found, keyed)
    rep = repeats(t, keyed)
    if imported is not None:
        kept = {c: src for c, src in rep.items() if src.split("#", 1)[0] in imported}
        stats["repeats_elsewhere"] = stats.get("repeats_elsewhere", 0) + len(rep) - len(kept)
        rep = kept
    cwd = cwd_of(t.path)
    with open(t.path, encoding="utf-8") as f:
        lines = f.readlines()  # split as _lines splits them, so a turn's line is its index
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp) / t.path.name  # the transcript as the client has written it so far
        with open(before, "w", encoding="utf-8") as client:
            written = 0
            for turn in turns(t.path):
                client.writelines(lines[written : turn.line])  # the lines before this prompt
                client.flush()
                written = max(written, turn.line)
                _replay_turn(mem, t, turn, str(before), cwd, found, keyed, rep, stats)


def _replay_turn(
    mem: Memory,
    t: Transcript,
    turn: Turn,
    transcript: str,
    cwd: str | None,
    found: Sequence[Lesson],
    keyed: Mapping[str, tuple[Transcript, dict[str, Any]]],
    rep: Mapping[str, str],
    stats: dict[str, Any],
) -> None:
    """One prompt of a replayed session: what the hook serves it (given ``transcript``, the
    session's lines before the prompt, as the client gives the hook its file), and whether
    each repeated mistake after it was preceded by the right lesson."""
    served, withheld = _served(mem, turn.prompt, cwd, found, transcript, t.client)
    stats["turns"] += 1
    stats["withheld_turns"] += bool(withheld)
    text = {x.id: x.text for x in found}
    stats["withheld"] += [
        {"session": t.file, "lesson": text.get(i, str(i)), "why": why} for i, why in withheld
    ]
    stats["wrong_turns"] += any(x.match is None for x in served)
    for cid in turn.failures:
        if cid not in rep:
            continue
        entry = keyed[rep[cid]][1]
        ok = any(x.match and names(x, entry) for x in served)
        stats["repeated"] += 1
        stats["right"] += ok
        stats["cases"].append({"failure": f"{t.file}#{cid}", "repeats": rep[cid], "served": ok})


def hook_payload(prompt: str, cwd: str | None, transcript: str | None = None) -> dict[str, Any]:
    """The UserPromptSubmit payload Claude Code gives the hook for ``prompt`` typed in a
    session working in ``cwd`` whose transcript so far is the file ``transcript`` (the
    fields the hook reads)."""
    payload = {
        "session_id": "replay",
        "cwd": cwd or "",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    if transcript is not None:
        payload["transcript_path"] = transcript
    return payload


def _served(
    mem: Memory,
    prompt: str,
    cwd: str | None,
    found: Sequence[Lesson],
    transcript: str | None = None,
    client: str | None = None,
) -> tuple[list[Lesson], list[tuple[int, str]]]:
    """The lessons the UserPromptSubmit hook serves for ``prompt`` in the session's working
    directory ``cwd`` (found by their ids), and the ids of those its filters withheld (a
    claim that fails here) with the reason: :func:`agentmem.hooks.run.prompt_served`, what
    the hook calls, with the payload Claude Code gives it (the prompt, its cwd, the
    session, and ``transcript``: a file of the session's lines before the prompt, from
    which a prompt that says little is given the conversation before it), so the claim
    checks, the team merge, the holdout and the served log are the hook's (``client``: the
    session's client, as its hook says). The session's
    machine cannot be consulted: a claim about PATH is left unchecked (this machine's PATH
    would make the figures depend on where the benchmark runs), and a path claim is
    checked only where the session's folder exists here."""
    import agentmem.claims as claims_module

    def unknown(name: str) -> str | None:
        raise ValueError(f"{name}: the session's PATH is not known in a replay")

    looked_up = claims_module._which
    claims_module._which = unknown
    try:
        got = prompt_served(str(mem.path), hook_payload(prompt, cwd, transcript), client)
    finally:
        claims_module._which = looked_up
    if got is None:
        return [], []
    by_id = {x.id: x for x in found}
    withheld = [(x.id, why) for x, why in got.withheld if x.id is not None]
    return [by_id[i] for i in got.ids if i in by_id], withheld


# -- the report --------------------------------------------------------------------------


def run(
    root: Path,
    *,
    do_replay: bool = True,
    present_only: bool = False,
    only: Sequence[str] = (),
    halves: Sequence[str] = HALVES,
    approve_held: bool = False,
) -> dict[str, Any]:
    """The figures for the corpus under ``root``, for each half of the split on its own
    (``res["halves"][half]``, None for a half with no transcript present); with
    ``present_only``, for the keyed transcripts found there (else a missing one is an
    error; a file SOURCES.md lists as not placed is always skipped); with ``only``, for
    the transcripts whose file starts with one of these prefixes; with ``approve_held``,
    the replay again with every held lesson approved after each session
    (``res["halves"][half]["replay_approved"]``)."""
    items = [t for t in load_keys(root) if not only or t.file.startswith(tuple(only))]
    skipped = sorted(t.file for t in items if t.file in not_placed())
    items = [t for t in items if t.file not in skipped]
    # a half left out is neither run nor required: the development half alone runs
    # where the validation half's files were never placed
    items = [t for t in items if not t.half or t.half in halves]
    missing = [t.file for t in items if not t.path.exists()]
    if missing and not present_only:
        raise SystemExit(f"corpus files missing under {root}: {', '.join(missing[:5])}")
    items = [t for t in items if t.path.exists()]
    problems = [p for t in items for p in check_key(t)] + split_problems(items)
    out: dict[str, Any] = {
        "transcripts": len(items),
        "missing": missing,
        "not_placed": skipped,
        "key_problems": problems,
        "halves": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for half in HALVES:
            part = [t for t in items if t.half == half]
            if half not in halves or not part:
                out["halves"][half] = None
                continue
            work = Path(tmp) / half
            work.mkdir()
            out["halves"][half] = figures(
                part, work, do_replay=do_replay, approve_held=approve_held
            )
    return out


def figures(
    items: Sequence[Transcript],
    workdir: Path,
    *,
    do_replay: bool = True,
    approve_held: bool = False,
) -> dict[str, Any]:
    """Every figure for one part of the corpus, learned in its own libraries."""
    entries = [e for t in items for e in t.entries]
    out: dict[str, Any] = {
        "size": corpus_size(items),
        "transcripts": len(items),
        "failed_calls": len(entries),
        "key_corrections": sum(e["label"] == "correction" for e in entries),
        "key_traps": sum(e["label"] == "trap" for e in entries),
        "all": evaluate(items, workdir),
    }
    if do_replay:
        out["replay"] = replay(items, workdir)
        per_project = workdir / "per-project"
        per_project.mkdir()
        # the figure before wave 11, a library per project: printed beside, no target
        out["replay_per_project"] = replay(items, per_project, by="project")
        if approve_held:
            approved = workdir / "approved"
            approved.mkdir()
            out["replay_approved"] = replay(items, approved, approve_held=True)
    return out


def split_problems(items: Sequence[Transcript]) -> list[str]:
    """A transcript the split cannot place: not listed in SOURCES.md, or its repository in
    no half of split.json."""
    out = []
    for t in items:
        if not t.half and not t.repo:
            out.append(f"{t.file}: not listed in SOURCES.md, so in no half of the split")
        elif not t.half:
            out.append(f"{t.file}: its repository {t.repo} is in no half of split.json")
    return out


def _version(path: Path) -> str:
    for n, obj in _lines(path):
        p = obj.get("payload")
        if obj.get("type") == "session_meta" and isinstance(p, Mapping) and p.get("cli_version"):
            return f"codex {p['cli_version']}"
        if isinstance(obj.get("version"), str) and obj.get("sessionId"):
            return f"claude-code {obj['version']}"
        if n > 200:
            break
    return "unknown"


def os_of(cwd: str | None) -> str:
    """The operating system a session's working directory says, where it says one."""
    if not cwd:
        return "unknown"
    if re.match(r"^[A-Za-z]:[\\/]", cwd) or cwd.startswith("\\\\"):
        return "windows"
    if cwd.startswith("/data/data/com.termux"):
        return "termux"
    if cwd.startswith(("/Users/", "/Volumes/", "/private/")):
        return "macos"
    if cwd.startswith(("/home/", "/root", "/mnt/", "/workspace", "/srv/", "/opt/", "/tmp/")):
        return "linux"
    return "unknown"


def corpus_size(items: Sequence[Transcript]) -> dict[str, Any]:
    """A part of the corpus in numbers: files, sessions (a session and its sub-agents' files
    are one), repositories, client versions, operating systems (by sessions)."""
    sessions = sorted({t.import_path for t in items})
    oses: dict[str, int] = {}
    for s in sessions:
        name = os_of(cwd_of(s)) if s.exists() else "unknown"
        oses[name] = oses.get(name, 0) + 1
    return {
        "files": len(items),
        "sessions": len(sessions),
        "repositories": len({t.repo or t.project for t in items}),
        "clients": sorted({_version(s) for s in sessions if s.exists()}),
        "oses": dict(sorted(oses.items())),
    }


def missed_targets(part: Mapping[str, Any] | None) -> list[str]:
    """The targets one half misses (none for an absent half)."""
    if not part:
        return []
    a, misses = part["all"], []
    if (a["precision"] if a["precision"] is not None else 1.0) < TARGETS["precision"]:
        misses.append(f"precision {_fmt(a['precision'])} < {TARGETS['precision']}")
    if a["false_global"] > TARGETS["false_global"]:
        misses.append(f"{a['false_global']} false global lessons")
    # the recall: of the corrections a session demonstrates (recall_shown); a
    # figure made before demonstrated.json existed has only the plain recall
    recall = a.get("recall_shown", a["recall"])
    what = "recall of demonstrated lessons" if "recall_shown" in a else "recall"
    if recall is not None and recall < TARGETS["recall"]:
        misses.append(f"{what} {_fmt(recall)} < {TARGETS['recall']}")
    if a["trap_lessons"] > TARGETS["trap_lessons"]:
        misses.append(f"{a['trap_lessons']} lessons from traps {a['trap_kinds']}")
    r = part.get("replay")
    if r and r["right_share"] is not None and r["right_share"] < TARGETS["replay_right"]:
        misses.append(f"replay right {_fmt(r['right_share'])} < {TARGETS['replay_right']}")
    if r and (r["wrong_turn_share"] or 0) > TARGETS["replay_wrong_turns"]:
        misses.append(
            f"replay wrong turns {_fmt(r['wrong_turn_share'])} > {TARGETS['replay_wrong_turns']}"
        )
    return misses


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _size_line(half: str, part: Mapping[str, Any]) -> str:
    z = part["size"]
    oses = ", ".join(f"{k} {v}" for k, v in z["oses"].items())
    return (
        f"== {half} half: {z['sessions']} sessions ({z['files']} files) from"
        f" {z['repositories']} repositories; clients: {', '.join(z['clients'])}; OS: {oses}"
    )


def report(res: Mapping[str, Any]) -> str:
    """The figures, the validation half first, then the development half."""
    lines = [
        f"corpus: {res['transcripts']} transcripts present"
        + (f", {len(res['not_placed'])} listed but not placed" if res["not_placed"] else "")
        + (f", {len(res['missing'])} missing" if res["missing"] else ""),
        f"key problems: {len(res['key_problems'])}",
        *[f"  {p}" for p in res["key_problems"][:20]],
    ]
    for half in HALVES:
        part = res["halves"].get(half)
        if not part:
            lines.append(f"== {half} half: no transcript present")
            continue
        lines += [_size_line(half, part), *_half_lines(part)]
    for half in HALVES:
        part = res["halves"].get(half)
        if part:
            lines.append(
                f"lessons of the {half} half (scope | matched key correction or FALSE | text):"
            )
            lines += [
                f"  [{x['scope']}] {x['match']} | {x['text']}" for x in part["all"]["listing"]
            ]
    return "\n".join(lines)


def _half_lines(part: Mapping[str, Any]) -> list[str]:
    a = part["all"]
    lines = [
        f"  failed calls: {part['failed_calls']} ({part['key_corrections']} corrections,"
        f" {part['key_traps']} traps in the key)",
        f"  lessons: {a['lessons']} (learned in {a['seconds']} s)",
        f"  precision: {_fmt(a['precision'])} (target >= {TARGETS['precision']})",
        f"  false global lessons: {a['false_global']} (target {TARGETS['false_global']})",
        f"  recall: {_fmt(a['recall'])} = {a['key_lessons_learned']}/{a['key_lessons']} of the"
        f" key's distinct lessons (the target counts those demonstrated, below); by failed call"
        f" {len(a['corrections_learned'])}/{a['corrections']}",
        f"  recall of the lessons a session demonstrates: {_fmt(a.get('recall_shown'))} ="
        f" {a.get('shown_learned')}/{a.get('shown')} (readers' verdicts, demonstrated.json;"
        f" {a.get('unjudged')} not judged, counted; target >= {TARGETS['recall']})",
        f"  recall of the lessons that recur: {a['recurring_learned']}/{a['recurring']} keyed in"
        f" 2+ sessions, {a['across_projects_learned']}/{a['across_projects']} in 2+ projects",
        f"  lessons from traps: {a['trap_lessons']}"
        + (f" {a['trap_kinds']}" if a["trap_kinds"] else "")
        + f" (target {TARGETS['trap_lessons']}; by trap kind)",
        f"  matched lessons served globally that the key scopes to a project: {a['too_wide']}",
    ]
    if "replay" in part:
        r = part["replay"]
        lines += [
            f"  replay: repeated mistakes preceded by the right lesson:"
            f" {r['right']}/{r['repeated']}"
            f" = {_fmt(r['right_share'])} (target >= {TARGETS['replay_right']})",
            f"  replay: prompts served a lesson not in the key: {r['wrong_turns']}/{r['turns']}"
            f" = {_fmt(r['wrong_turn_share'])} (target <= {TARGETS['replay_wrong_turns']})",
            f"  replay: prompts where the hook withheld a lesson (a claim that fails here):"
            f" {r.get('withheld_turns', 0)}/{r['turns']}",
            f"  replay: repeats left out, their correction made in no session the library had"
            f" learned from (another machine, a session still running): {r['repeats_elsewhere']}",
        ]
    if "replay_per_project" in part:
        r = part["replay_per_project"]
        lines += [
            f"  replay with a library per project (before wave 11; no target): right"
            f" {r['right']}/{r['repeated']} = {_fmt(r['right_share'])}, wrong prompts"
            f" {r['wrong_turns']}/{r['turns']} = {_fmt(r['wrong_turn_share'])}",
        ]
    if "replay_approved" in part:
        r = part["replay_approved"]
        lines += [
            f"  replay, every held lesson approved after each session: right"
            f" {r['right']}/{r['repeated']} = {_fmt(r['right_share'])}, wrong prompts"
            f" {r['wrong_turns']}/{r['turns']} = {_fmt(r['wrong_turn_share'])} (no target:"
            " what a person who approves every held lesson would get)",
        ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", help="the folder holding transcripts/ and corpus/")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--no-replay", action="store_true", help="skip the replays")
    ap.add_argument(
        "--failures",
        action="store_true",
        help="list every failed call with its label, call and output, and exit",
    )
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PREFIX",
        help="only the transcripts whose file starts with PREFIX (e.g. transcripts/)",
    )
    ap.add_argument(
        "--half",
        action="append",
        choices=HALVES,
        help="only this half of the split (repeatable; default: both)",
    )
    ap.add_argument(
        "--present",
        action="store_true",
        help="only the keyed transcripts found under --data (a copy of part of the corpus)",
    )
    ap.add_argument(
        "--approve-held",
        action="store_true",
        help="run the replay again with every held lesson approved after each session",
    )
    ap.add_argument(
        "--check-targets",
        action="store_true",
        help="on the transcripts present, exit 1 when the validation half misses a target",
    )
    args = ap.parse_args(argv)
    root = data_root(args.data)
    if args.failures:
        for t in load_keys(root):
            label = {e["id"]: e for e in t.entries}
            for f in failed_calls(t.path) if t.path.exists() else []:
                e = label.get(f.id, {})
                kind = f"{e.get('label', 'UNKEYED')}:{e.get('scope') or e.get('trap', '')}"
                print(f"{t.file}#{f.id}\t{f.tool}\t{kind}\t{f.call[:160]}\t{f.output[:200]!r}")
        return 0
    halves = tuple(args.half or HALVES)
    if args.check_targets and "validation" not in halves:
        ap.error("--check-targets checks the validation half: do not leave it out")
    res = run(
        root,
        do_replay=not args.no_replay,
        only=args.only,
        present_only=args.check_targets or args.present,
        halves=halves,
        approve_held=args.approve_held,
    )
    print(json.dumps(res, indent=1) if args.json else report(res))
    if not args.check_targets:
        return 0
    misses = missed_targets(res["halves"]["validation"])
    if res["halves"]["validation"] is None:
        print("targets: no validation transcript present, nothing to check")
    for m in misses:
        print(f"TARGET MISSED (validation): {m}")
    if res["key_problems"]:
        print(f"KEY PROBLEMS: {len(res['key_problems'])}")
    return 1 if misses or res["key_problems"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
