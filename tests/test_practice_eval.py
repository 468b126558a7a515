"""agentmem.practice.evaluate: paired held-out rollouts with a fake rollout function."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentmem import Memory
from agentmem.errors import InvalidRecordError
from agentmem.practice.evaluate import confounded, evaluate, guidance_for, harmful, render
from agentmem.practice.stats import Pair
from agentmem.practice.types import Outcome, Task

from .conftest import run_cli

CD = "Run cd into the folder before reading a file with cat"
EURO = "Convert the price to euros before booking flights with book_flight"
FILES = [
    "Read the notes file in the docs folder with cat",
    "Show the todo file of the src folder with cat",
    "Print the readme file in the site folder with cat",
    "Read the log file in the var folder with cat",
]
FLIGHTS = [
    "Book a flight to Paris and pay the price with book_flight",
    "Book the cheapest flight to Rome, price in dollars, with book_flight",
    "Book a flight to Oslo for two and check the price with book_flight",
    "Book a flight to Lima at the lowest price with book_flight",
]


def heldout(prompts: list[str], prefix: str) -> list[Task]:
    return [Task(f"{prefix}{i}", p, split="heldout") for i, p in enumerate(prompts)]


def fake_rollout(rule):
    """A rollout whose success is ``rule(task, guidance, seed)``; its calls are kept."""
    calls: list[tuple[str, str, int]] = []

    def run(task: Task, guidance: str, seed: int) -> Outcome:
        calls.append((task.id, guidance, seed))
        ok = bool(rule(task, guidance, seed))
        return Outcome(task.id, seed, float(ok), ok, wall_s=0.5, tokens=10)

    run.calls = calls  # type: ignore[attr-defined]
    return run


def test_the_lessons_are_served_through_the_public_path(mem: Memory) -> None:
    cd, euro = mem.add_many([CD, EURO])
    text, ids = guidance_for(mem, Task("f", FILES[0], split="heldout"))
    assert ids == (cd,) and CD in text
    assert guidance_for(mem, Task("b", FLIGHTS[0], split="heldout"))[1] == (euro,)
    assert guidance_for(mem, Task("x", "What is the weather like", split="heldout")) == ("", ())
    # every serving is in the served log, as for any prompt
    log = Path(str(mem.path) + ".served.jsonl").read_text().splitlines()
    assert [json.loads(x)["route"] for x in log] == ["practice-eval", "practice-eval"]


def test_a_lesson_that_helps_is_measured_and_credited(mem: Memory) -> None:
    cd, _euro = mem.add_many([CD, EURO])
    # without the lesson a file task fails, except on seed 0; with it, it succeeds
    rollout = fake_rollout(lambda t, g, s: "cd into the folder" in g or s == 0)
    report = evaluate(mem, heldout(FILES, "f"), rollout, seeds=[0, 1, 2], progress=None)
    o = report.overall
    assert (o.table.wins, o.table.losses, o.table.both) == (8, 0, 4)
    assert o.verdict == "helps" and o.difference == pytest.approx(8 / 12) and o.ci[0] > 0
    # every pair ran both arms with the same seed, once each
    assert sorted((c[0], c[2]) for c in rollout.calls) == sorted(
        (f"f{i}", s) for i in range(4) for s in (0, 1, 2) for _ in range(2)
    )
    assert sum(1 for c in rollout.calls if c[1] == "") == 12
    (credit,) = report.lessons
    assert credit.id == cd and credit.text == CD and len(credit.pairs) == 12
    assert credit.effect.verdict == "helps" and not credit.harmful
    assert mem.get_experience(cd).text == CD  # kept
    d = report.to_dict()
    assert d["cost"] == {
        "rollouts": 24,
        "wall_s": 12.0,
        "tokens": 240,
        "cost_usd": None,
        "errors": 0,
    }
    assert d["lessons"][0]["served_in"][0] == {
        "task": "f0",
        "seed": 0,
        "with": True,
        "without": True,
        "other_arm": "none",
    }
    text = render(report)
    assert (
        "verdict:       helps" in text
        and f"[{cd}] 12 pair(s) from 4 task(s), 12 judging it alone: wins 8" in text
    )


def test_a_harmful_lesson_is_retired_through_the_journal_and_undo_brings_it_back(
    tmp_path: Path,
) -> None:
    mem = Memory.open(tmp_path / "lib.db", embedder="hash")  # one the CLI can open too
    cd, euro = mem.add_many([CD, EURO])
    # the euro lesson makes the flight tasks fail; without it, they succeed
    rollout = fake_rollout(lambda t, g, s: "euros" not in g)
    tasks = heldout(FLIGHTS, "b") + heldout(FILES, "f")
    report = evaluate(mem, tasks, rollout, seeds=[0, 1])
    assert report.overall.table.losses == 8
    by_id = {c.id: c for c in report.lessons}
    bad = by_id[euro]
    assert bad.harmful and bad.effect.verdict == "hurts" and bad.retired_session is not None
    assert not by_id[cd].harmful and by_id[cd].retired_session is None
    assert euro not in {e.id for e in mem.experiences()}
    (op,) = mem.journal(bad.retired_session)
    assert op["kind"] == "DELETE" and op["target_ids"] == [euro]
    assert "harmful held-out effect" in (op["reason"] or "")
    assert f"agentmem undo {bad.retired_session}" in render(report)
    mem.close()
    # the real CLI's undo brings it back
    done = run_cli("undo", str(bad.retired_session), db=Path(str(mem.path)))
    assert done.returncode == 0, done.stderr
    with Memory.open(mem.path) as again:
        assert again.get_experience(euro).text == EURO


def test_a_lesson_served_beside_a_harmful_one_is_not_blamed_for_its_losses() -> None:
    from agentmem.practice.evaluate import PairResult

    def pair(task: str, seed: int, lessons: tuple[int, ...], w: bool, wo: bool) -> PairResult:
        return PairResult(
            task,
            seed,
            lessons,
            Outcome(task, seed, float(w), w, 0.0),
            Outcome(task, seed, float(wo), wo, 0.0),
        )

    # lesson 2 is served with lesson 1 in every losing pair; where lesson 1 is served
    # alone nothing changes: both look harmful on their own pairs, only 2 is
    pairs = [pair(f"t{i}", s, (1, 2), False, True) for i in range(4) for s in range(2)]
    pairs += [pair(f"u{i}", s, (1,), True, True) for i in range(4) for s in range(2)]
    assert harmful(pairs) == [2]
    # where lesson 1 loses on its own too, both are retired, the worse first
    pairs += [pair(f"v{i}", s, (1,), False, True) for i in range(3) for s in range(2)]
    assert harmful(pairs) == [2, 1]
    # served always together, two harmful lessons cannot be told apart: neither is retired
    pairs = [pair(f"t{i}", s, (1, 2), False, True) for i in range(4) for s in range(2)]
    assert harmful(pairs) == [] and confounded(pairs) == {1: (2,), 2: (1,)}


def test_too_few_pairs_is_not_enough_data_and_retires_nothing(mem: Memory) -> None:
    _cd, euro = mem.add_many([CD, EURO])
    rollout = fake_rollout(lambda t, g, s: "euros" not in g)
    report = evaluate(mem, heldout(FLIGHTS[:2], "b"), rollout, seeds=[0, 1])
    assert report.overall.verdict == "not enough data"
    assert "4 discordant pairs" in report.overall.why and "needs 6" in report.overall.why
    assert all(not c.harmful for c in report.lessons)
    assert mem.get_experience(euro).text == EURO
    assert "not enough data" in render(report)


def test_a_rollout_that_raises_is_skipped_and_counted(mem: Memory) -> None:
    mem.add_many([CD])

    def rule(t: Task, g: str, s: int) -> bool:
        if t.id == "f1":
            raise RuntimeError("the client would not start")
        return "cd into" in g

    report = evaluate(mem, heldout(FILES, "f"), fake_rollout(rule), seeds=[0, 1])
    assert len(report.pairs) == 6 and {p.task_id for p in report.pairs} == {"f0", "f2", "f3"}
    assert len(report.skipped) == 2 and "would not start" in report.skipped[0]


def test_a_killed_evaluation_resumes_from_its_checkpoint(mem: Memory, tmp_path: Path) -> None:
    mem.add_many([CD])
    ck = tmp_path / "eval.jsonl"
    first = fake_rollout(lambda t, g, s: "cd into" in g)
    evaluate(mem, heldout(FILES[:2], "f"), first, seeds=[0, 1], checkpoint=ck)
    assert len(first.calls) == 8 and len(ck.read_text().splitlines()) == 4
    with ck.open("a") as f:
        f.write("not json\n")  # a torn last line is skipped
    again = fake_rollout(lambda t, g, s: "cd into" in g)
    report = evaluate(mem, heldout(FILES[:3], "f"), again, seeds=[0, 1], checkpoint=ck)
    assert report.reused == 4 and len(again.calls) == 4  # only the new task ran
    assert report.skipped == (f"{ck}: 1 line(s) that are not a finished pair",)
    assert report.overall.table.wins == 6


def test_bad_input_is_refused_plainly_and_changes_nothing(mem: Memory) -> None:
    mem.add_many([CD])
    train = [Task("t", FILES[0])]
    rollout = fake_rollout(lambda t, g, s: True)
    with pytest.raises(InvalidRecordError, match=r"none of the 1 task\(s\) is held out"):
        evaluate(mem, train, rollout, seeds=[0])
    with pytest.raises(InvalidRecordError, match="at least one seed"):
        evaluate(mem, heldout(FILES, "f"), rollout, seeds=[])
    assert rollout.calls == [] and len(mem.experiences()) == 1


ASK = "Ask the user before you read a file in a folder with cat"


def _cd_and_ask(t: Task, g: str, s: int) -> bool:
    """Fails whenever told to ask first; the cd lesson changes nothing."""
    return "Ask the user" not in g


def test_lessons_always_served_together_are_not_retired_without_an_ablation(
    mem: Memory,
) -> None:
    cd, ask = mem.add_many([CD, ASK])
    report = evaluate(mem, heldout(FILES, "f"), fake_rollout(_cd_and_ask), seeds=[1, 2])
    by_id = {c.id: c for c in report.lessons}
    assert by_id[ask].effect.verdict == by_id[cd].effect.verdict == "hurts"
    assert by_id[ask].confounded_with == (cd,) and not by_id[ask].harmful
    assert len(mem.experiences()) == 2
    assert "the pairs cannot tell which hurts" in render(report)


def test_an_ablation_finds_which_of_two_lessons_served_together_hurts(mem: Memory) -> None:
    cd, ask = mem.add_many([CD, ASK])
    rollout = fake_rollout(_cd_and_ask)
    report = evaluate(mem, heldout(FILES, "f"), rollout, seeds=[1, 2], ablate=True)
    by_id = {c.id: c for c in report.lessons}
    # without ASK the rollout works: ASK loses every pair; without cd it fails anyway
    assert by_id[ask].effect.table.losses == 8 and by_id[ask].isolated == 8
    assert by_id[ask].harmful and by_id[ask].retired_session is not None
    assert by_id[cd].effect.table.neither == 8 and not by_id[cd].harmful
    assert [e.id for e in mem.experiences()] == [cd]
    # one more rollout per lesson served, each without exactly that lesson
    assert report.cost()["rollouts"] == 8 * 2 + 8 * 2
    left_out = [g for _, g, _ in rollout.calls if g and (CD in g) != (ASK in g)]
    assert len(left_out) == 16
    d = report.to_dict()
    assert d["results"][0]["ablations"].keys() == {str(cd), str(ask)}
    assert {x["other_arm"] for c in d["lessons"] for x in c["served_in"]} == {"the others"}


def test_ablations_are_unit_judged_on_their_own_pairs() -> None:
    from agentmem.practice.evaluate import PairResult

    def o(ok: bool) -> Outcome:
        return Outcome("t", 0, float(ok), ok, 0.0)

    pairs = [
        PairResult(f"t{i}", s, (1, 2), o(False), o(True), {1: o(False), 2: o(True)})
        for i in range(3)
        for s in range(2)
    ]
    assert harmful(pairs) == [2] and confounded(pairs) == {}
    assert pairs[0].own(2) == (Pair("t0", 0, False, True), True)
    assert pairs[0].own(1)[0].without is False


def test_a_budget_stops_the_evaluation_and_the_report_says_so(mem: Memory, tmp_path: Path) -> None:
    mem.add_many([CD])
    ck = tmp_path / "eval.jsonl"
    rollout = fake_rollout(lambda t, g, s: "cd into" in g)
    report = evaluate(
        mem, heldout(FILES, "f"), rollout, seeds=[0, 1], max_rollouts=5, checkpoint=ck
    )
    assert len(rollout.calls) == 4 and len(report.pairs) == 2
    assert report.stopped == "the budget of 5 rollouts was spent after 4: 2 of 8 pairs ran"
    assert "stopped:" in render(report) and report.to_dict()["stopped"] == report.stopped
    # the next run pays only for what is new: the two pairs come from the checkpoint
    again = fake_rollout(lambda t, g, s: "cd into" in g)
    more = evaluate(mem, heldout(FILES, "f"), again, seeds=[0, 1], max_rollouts=4, checkpoint=ck)
    assert more.reused == 2 and len(again.calls) == 4 and len(more.pairs) == 4
    with pytest.raises(InvalidRecordError, match="at least 2"):
        evaluate(mem, heldout(FILES, "f"), again, seeds=[0], max_rollouts=1)
