"""Consolidation (issue 29): findings of one kind and scope that say the same thing but for
the instance they were learned from are one lesson with their support summed, in Stage 3
(within a session) and against the live library (a later session's ADD turned MODIFY).
Facts of two projects, or two kinds, never merge.

The development half has no such pair (its lessons are learned once each): these cases
are synthetic, built on the real shapes of its lessons (the TravelPlan zsh glob, the
boost-act location fact, the Edit / Write tool rule)."""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from agentmem import Memory
from agentmem.learning import LearnOptions
from agentmem.learning.consolidate import consolidate, same_rule
from agentmem.learning.corrections import find_corrections
from agentmem.learning.evidence import scoped
from agentmem.learning.findings import Finding
from agentmem.learning.kinds import Kind
from agentmem.learning.merge import merge_findings, payload, tool_rule_text
from agentmem.records import Operation, Trajectory

from .conftest import FakeEmbedder, FakeModel
from .transcripts import codex_exec

_GLOB = (
    "In zsh an unquoted path with [ ], * or ? is a glob pattern ('no matches found: {}'): "
    "quote the path."
)


def _shell(
    change: str, scope: str, text: str, project: str = "/w/app", **detail: object
) -> Finding:
    return Finding(
        Kind.SHELL,
        str(detail.pop("program", "zsh")),
        "",
        text,
        tuple(detail.pop("facts", ("zsh", "quote"))),  # type: ignore[arg-type]
        detail={"change": change, "scope": scope, "project": project, "error": "e", **detail},
    )


def _glob(path: str, project: str = "/w/app") -> Finding:
    return _shell("glob", "machine", _GLOB.format(path), project)


def _where(name: str, good: str, bad: str, cmd: str, project: str = "/w/app") -> Finding:
    text = f"In this project {name} is at {good}; {cmd} fails with '{cmd}: {bad}: No such file'."
    return _shell(
        "location",
        "project",
        text,
        project,
        program=cmd.split()[0],
        facts=(cmd.split()[0], good),
        bad=bad,
        good=good,
        avoid=[bad],
    )


def test_the_payload_masks_the_instance_not_the_claim():
    a, b = _GLOB.format("src/app/[id]/page.tsx"), _GLOB.format("src/app/[slug]/a.tsx")
    assert payload(a) == payload(b)
    # the failed command of a location fact is its instance; the file and the place are not
    x = _where("t.md", "docs/t.md", "t.md", "sed -n 1,5p").text
    assert payload(x) == payload(_where("t.md", "docs/t.md", "x/t.md", "cat").text)
    assert payload(x) != payload(_where("t.md", "doc/t.md", "t.md", "sed -n 1,5p").text)
    assert payload(x) != payload(_where("u.md", "docs/u.md", "u.md", "sed -n 1,5p").text)


def test_one_glob_rule_seen_on_two_paths_is_one_lesson():
    one, two = _glob("src/app/[id]/page.tsx"), _glob("src/app/[slug]/a.tsx")
    (merged,) = merge_findings([one, two])
    assert merged.text == one.text and merged.support == 2
    assert merged.detail["merged"] == 2 and two.text in merged.detail["instances"]
    # a fact of the machine holds in every project of it: two projects' globs are one too
    assert len(merge_findings([one, _glob("b/[x].ts", project="/w/other")])) == 1


def test_one_location_fact_after_two_different_failures_is_one_lesson():
    sed = _where("t.md", "docs/t.md", "t.md", "sed -n 1,5p")
    cat = _where("t.md", "docs/t.md", "t.md", "cat")
    (merged,) = merge_findings([sed, cat])
    assert merged.support == 2 and merged.text == sed.text


def test_facts_of_two_projects_or_two_kinds_never_merge():
    # the same location fact in two projects: each project's own
    here = _where("t.md", "docs/t.md", "t.md", "cat")
    there = _where("t.md", "docs/t.md", "t.md", "cat", project="/w/other")
    assert len(merge_findings([here, there])) == 2
    # two kinds whose texts read alike once quotes are masked
    dropped = _shell("dropped", "project", "In this project git add fails on a.css ('x').")
    forced = _shell("forced", "project", "In this project git add fails on a.css ('y').")
    assert len(merge_findings([dropped, forced])) == 2
    # two files of one project, outside any folder move in common: two lessons
    assert len(merge_findings([here, _where("u.md", "docs/u.md", "src/u.md", "cat")])) == 2


def test_a_fact_named_only_inside_the_quote_is_part_of_the_claim():
    # the development half's settings lesson: the refused key is named only in the quoted
    # error, so two keys are two lessons, in a session and against the library
    said = (
        "Edit is refused when the file gets a key its schema does not know ('settings.json "
        "validation failed ... Unrecognized field: {}'): leave that key out of the file."
    )

    def refused(key: str) -> Finding:
        d = {"scope": "tool", "refused": "settings", "error": "e", "rule_error": key}
        facts = ("Edit", "settings.json", key)
        return Finding(Kind.TOOL_RULE, "Edit", "", said.format(key), facts, detail=d)

    one, two = refused("hasCompletedOnboarding"), refused("theme")
    assert payload(one.text) == payload(two.text)
    assert len(merge_findings([one, two])) == 2
    assert len(merge_findings([one, refused("hasCompletedOnboarding")])) == 1
    assert not same_rule(_add(two), 1, one.text, lambda eid: ("tool_rule", None))


def test_several_files_of_one_folder_move_are_one_lesson():
    fs = [_where(n, f"docs/{n}", n, "cat") for n in ("notes.txt", "todo.txt", "plan.txt")]
    (merged,) = merge_findings(fs)
    assert merged.text.startswith("In this project notes.txt, todo.txt and plan.txt are in docs/")
    assert merged.support == 3 and merged.detail["folder"] == "docs"


def test_a_tool_rule_of_edit_and_write_is_one_lesson():
    rule = "If {} fails with 'File has not been read yet', Read the file first, then retry."

    def f(tool: str) -> Finding:
        said = "File has not been read yet"
        d = {"helper": "Read", "rule_error": said, "error": said, "scope": "tool"}
        return Finding(Kind.TOOL_RULE, tool, "", rule.format(tool), (tool, "Read"), detail=d)

    (merged,) = merge_findings([f("Edit"), f("Write")])
    assert merged.text == rule.format("Edit or Write") and merged.support == 2


def _edit_rule(error: str, words: str) -> Finding:
    d = {"helper": "Read", "rule_error": words, "error": error, "scope": "tool"}
    text = tool_rule_text(["Edit"], "Read", error)
    return Finding(Kind.TOOL_RULE, "Edit", "", text, ("Edit", "Read"), detail=d)


NOT_READ = _edit_rule(
    "File has not been read yet. Read it first before writing to it.", "has not been read yet"
)
MODIFIED = _edit_rule(
    "File has been modified since read, either by the user or by a linter. Read it again "
    "before attempting to write it.",
    "has been modified since read",
)


def _recovery(error: str) -> Finding:
    text = f"If Read fails with '{error}', retry it with limit set."
    return scoped(
        Finding(Kind.RECOVERY, "Read", "", text, ("Read", "limit"), detail={"error": error})
    )


def test_lessons_whose_quote_is_their_trigger_stay_apart():
    """A tool rule's error, a recovery's error, the "If T fails with 'E'" template's error
    is what the lesson answers, not its instance: two errors, two lessons (the reviewer's
    Edit rules and Read recoveries). Only their numbers are instance."""
    rules = merge_findings([NOT_READ, MODIFIED])
    assert sorted(str(f.detail["rule_error"]) for f in rules) == [
        "has been modified since read",
        "has not been read yet",
    ]
    assert [f.support for f in rules] == [1, 1]
    big = _recovery("File content (28483 tokens) exceeds maximum allowed tokens")
    folder = _recovery("EISDIR: illegal operation on a directory")
    assert len(merge_findings([big, folder])) == 2
    (one,) = merge_findings(
        [big, _recovery("File content (30512 tokens) exceeds maximum allowed tokens")]
    )
    assert one.support == 2
    # against a live lesson: the other error is another rule, the same error the same one
    assert not same_rule(_add(MODIFIED), 1, NOT_READ.text, lambda eid: ("tool_rule", None))
    assert same_rule(_add(NOT_READ), 1, NOT_READ.text, lambda eid: ("tool_rule", None))
    assert not same_rule(_add(folder), 1, big.text, lambda eid: ("recovery", None))
    # the glob's quote is its instance still: two paths, one lesson
    assert len(merge_findings([_glob("src/app/[id]/page.tsx"), _glob("src/app/[slug]/a.tsx")])) == 1
    assert payload(NOT_READ.text, True) != payload(MODIFIED.text, True)


def test_two_adds_of_one_tool_with_two_triggers_are_no_duplicates():
    """Real (validation, wave 9): one pass proposed "If Edit fails with 'File has not been
    read yet', ..." and "... 'File has been modified since read', ..."; their words are
    close and they name the same tools, so the ADD-against-ADD check dropped the first, and
    the half never learned the rule its key names 122 times. The quote is each one's
    trigger: two errors, two lessons; the same error twice is still one."""

    def kept(*fs: Finding) -> list[Operation]:
        return list(
            consolidate(
                [_add(f) for f in fs],
                similar=lambda t: [],
                cosine=lambda a, b: 1.0,  # as close as can be
                threshold=0.9,
                compress=lambda o: o,
            ).apply
        )

    assert len(kept(NOT_READ, MODIFIED)) == 2
    assert len(kept(NOT_READ, attrs.evolve(NOT_READ))) == 1


def _add(f: Finding) -> Operation:
    return Operation("ADD", text=f.text, group="g", facts=f.facts, detail={"evidence": f})


def test_a_later_instance_of_a_live_lesson_becomes_its_modify():
    live = _GLOB.format("src/app/[id]/page.tsx")
    op = _add(_glob("src/app/[slug]/a.tsx"))

    def similar(text: str) -> list[tuple[int, float, str]]:
        return [(7, 0.5, live)]  # below any threshold: the instance's quote differs

    def run(about):  # type: ignore[no-untyped-def]
        return consolidate(
            [op],
            similar=similar,
            cosine=lambda a, b: 0.0,
            threshold=0.9,
            compress=lambda o: o,
            about=about,
        ).apply

    (mod,) = run(lambda eid: ("shell", None))
    assert mod.kind == "MODIFY" and mod.targets == (7,) and mod.text == live
    # another kind of lesson, or no knowledge of the library's lessons: a new ADD
    assert run(lambda eid: ("tool_rule", None))[0].kind == "ADD"
    assert run(None)[0].kind == "ADD"


def test_a_project_fact_merges_only_with_its_own_projects_lesson():
    fact = _where("t.md", "docs/t.md", "t.md", "cat")
    live = _where("t.md", "docs/t.md", "t.md", "sed -n 1,5p").text
    op = _add(fact)
    assert same_rule(op, 3, live, lambda eid: ("shell", "/w/app"))
    assert not same_rule(op, 3, live, lambda eid: ("shell", "/w/other"))
    assert not same_rule(op, 3, live, lambda eid: ("shell", None))
    orphan = _add(attrs.evolve(fact, detail={**fact.detail, "project": None}))
    assert not same_rule(orphan, 3, live, lambda eid: ("shell", None))


def test_two_projects_facts_of_one_session_are_no_duplicates():
    """Real (validation, wave 8): one learning pass proposed "In this project git fetch is
    refused in the sandbox ...; it ran with sandbox_permissions: require_escalated" for one
    project and the same of git push for another; the ADD-against-ADD check dropped the
    first as a duplicate of the second, and its project got no lesson. A project's fact is
    served in its own project only, so it duplicates (or joins) no other project's; a
    tool's rule or a machine's fact still does, and so does a fact of the same project."""
    text = (
        "In this project git fetch is refused in the sandbox ('fatal: unable to access'); "
        "it ran with sandbox_permissions: require_escalated."
    )

    def esc(project: str, weight: float = 1.0) -> Operation:
        f = _shell("escalation", "project", text, project, program="git", facts=("git",))
        return attrs.evolve(_add(f), weight=weight)

    def kept(*ops: Operation) -> list[Operation]:
        return list(
            consolidate(
                ops,
                similar=lambda t: [],
                cosine=lambda a, b: 1.0,  # as close as can be
                threshold=0.9,
                compress=lambda o: o,
            ).apply
        )

    assert len(kept(esc("/w/a", 2.0), esc("/w/b"))) == 2
    assert len(kept(esc("/w/a", 2.0), esc("/w/a"))) == 1
    assert len(kept(_add(_glob("a/[x].ts", "/w/a")), _add(_glob("a/[x].ts", "/w/b")))) == 1


def test_two_machines_facts_of_one_session_are_no_duplicates():
    """Seen in the benchmark (wave 4, fifteenth session): "Commands here run in PowerShell,
    which has no sed" of one Windows machine dropped the same fact of another as a
    duplicate, so the other got no lesson. A machine's fact of a known machine is served on
    that machine only (two team members' machines are two places); of the same machine, or
    of machines unknown (transcripts from elsewhere: served in a project), it still merges."""

    def fact(project: str, machine: str | None) -> Operation:
        f = _glob("a/[x].ts", project)
        if machine is not None:
            f = attrs.evolve(f, detail={**f.detail, "machine": machine})
        return _add(f)

    def kept(*ops: Operation) -> list[Operation]:
        return list(
            consolidate(
                ops,
                similar=lambda t: [],
                cosine=lambda a, b: 1.0,
                threshold=0.9,
                compress=lambda o: o,
            ).apply
        )

    assert len(kept(fact("/w/a", "ann:m-1"), fact("/w/b", "bob:m-2"))) == 2
    assert len(kept(fact("/w/a", "m-1"), fact("/w/b", "m-1"))) == 1
    assert len(kept(fact("/w/a", None), fact("/w/b", None))) == 1


def test_a_shell_finding_records_its_runs_machine():
    run = _glob_run("src/app/[id]/page.tsx", "/w/app")
    run = attrs.evolve(run, meta={**run.meta, "machine": "m-1"})
    (c,) = [c for c in find_corrections(run) if c.kind == Kind.SHELL]
    assert c.finding.detail["machine"] == "m-1"
    assert c.finding.detail["project"] == "/w/app"


def _glob_run(path: str, project: str) -> Trajectory:
    """A Codex run: zsh refused an unquoted path with [ ], then the quoted path worked."""
    return Trajectory(
        task=f"look at {path}",
        steps=(
            codex_exec(f"rg -n id {path}", f"zsh:1: no matches found: {path}", False),
            codex_exec(f"cat '{path}'", "export default function Page() {}", True),
        ),
        meta={"project": project, "cwd": project},
        accepted=True,
    )


def test_two_sessions_of_one_glob_rule_leave_one_lesson_journaled(tmp_path: Path):
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        mem.record(_glob_run("src/app/[id]/page.tsx", "/w/app"))
        mem.learn(use_model=False)
        (first,) = mem.experiences()
        mem.record(_glob_run("src/app/[slug]/edit.tsx", "/w/app"))
        mem.learn(use_model=False)
        (after,) = mem.experiences()
        assert after.id == first.id and after.text == first.text
        row = mem.db.execute(
            "SELECT support_groups FROM experiences WHERE id = ?", [after.id]
        ).fetchone()
        assert row[0] == 2  # the support of both sessions
        ops = mem.db.execute(
            "SELECT kind, target_ids, reason FROM operations WHERE status = 'applied' ORDER BY id"
        ).fetchall()
        kinds = [(k, json.loads(t or "[]")) for k, t, _n in ops]
        # Stage 3's MODIFY keeps the live text, so it is applied as a confirmation: the
        # counts grow, the text stays, the journal says why
        assert kinds[-1] == ("CONFIRM", [first.id])
        assert "another instance" in ops[-1][2]


_COUNTS = "SELECT support_groups, support_runs, last_confirmed_at FROM experiences WHERE id = ?"


def test_a_relearn_counts_each_run_of_a_merged_lesson_once(tmp_path: Path):
    """``learn --relearn`` learns the first session's group again beside a new one; their
    findings merge into one lesson that confirms the live one. Only the new group's run is
    new evidence: (1, 1) becomes (2, 2), not (3, 3)."""
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        mem.record(_glob_run("src/app/[id]/page.tsx", "/w/app"))
        mem.learn(use_model=False)
        (first,) = mem.experiences()
        assert mem.db.execute(_COUNTS, [first.id]).fetchone()[:2] == (1, 1)
        mem.record(_glob_run("src/app/[slug]/edit.tsx", "/w/app"))
        opts = attrs.evolve(LearnOptions.of_library(mem.db), relearn=True)
        mem.learn(use_model=False, options=opts)
        (after,) = mem.experiences()
        assert after.id == first.id
        assert mem.db.execute(_COUNTS, [first.id]).fetchone()[:2] == (2, 2)
        kind, reason = mem.db.execute(
            "SELECT kind, reason FROM operations WHERE status = 'applied' ORDER BY id DESC"
        ).fetchone()
        assert kind == "CONFIRM" and "ADD turned MODIFY" not in (reason or "")


def test_undoing_a_session_whose_add_became_a_confirmation_restores_the_counts(tmp_path: Path):
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=FakeModel()) as mem:
        mem.record(_glob_run("src/app/[id]/page.tsx", "/w/app"))
        mem.learn(use_model=False)
        (first,) = mem.experiences()
        before = mem.db.execute(_COUNTS, [first.id]).fetchone()
        mem.record(_glob_run("src/app/[slug]/edit.tsx", "/w/app"))
        mem.learn(use_model=False)
        assert mem.db.execute(_COUNTS, [first.id]).fetchone()[:2] == (2, 2)
        sid, kind, reason = mem.db.execute(
            "SELECT session_id, kind, reason FROM operations ORDER BY id DESC"
        ).fetchone()
        assert kind == "CONFIRM" and reason.startswith("ADD turned CONFIRM")
        mem.undo(sid)
        assert mem.db.execute(_COUNTS, [first.id]).fetchone() == before
        assert [e.id for e in mem.experiences()] == [first.id]
