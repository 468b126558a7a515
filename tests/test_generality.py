"""Lessons that generalise: one-task literals (ids, counts, names, enumerations), causal claims
only where the data shows cause, refuted lessons cut back to what holds; tau-bench's lessons."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from agentmem import Memory, Step, Trajectory
from agentmem.ingest import parse_openai
from agentmem.learning.generality import (
    build_corpus,
    checked_text,
    enumerated_options,
    literal_tokens,
    placeholder,
    value_like,
)

from .conftest import FakeEmbedder, FakeModel

TAU_SUBSET = Path(__file__).parent / "data" / "tau_airline_subset.json.gz"


def texts(mem: Memory) -> list[str]:
    return [e.text for e in mem.experiences()]


def held(mem: Memory, session_id: int | None) -> list[tuple[str, str]]:
    return [
        (o["text"], o["reason"])
        for o in mem.journal(session_id)
        if o["status"] == "rejected" and (o["reason"] or "").startswith("held")
    ]


# -- tokens and the corpus ------------------------------------------------------------------


def test_value_like_tokens():
    for tok in ("USR003", "9HBUV8", "HAT271", "2", "10.57", "a.txt", "2024-05-10", "one_way"):
        assert value_like(tok), tok
    assert value_like("Catherine") and not value_like("Catherine", initial=True)
    assert value_like("ATL")  # a code, even at the start of a sentence
    for word in ("cancel", "flight", "business", "I've", "e.g"):
        assert not value_like(word), word


def _corpus(*runs: tuple[str, bool, str, list[Step]]):
    return build_corpus(
        [(g, ok, Trajectory(task=task, steps=s, group=g)) for g, ok, task, s in runs]
    )


def test_literal_tokens_ids_counts_names_and_names_of_tools():
    send = Step("send_message", {"receiver_id": "USR003", "message": "hi"}, "sent", True)
    c = _corpus(
        ("g1", True, "Tell Catherine hi, 3 times", [send]),
        ("g2", True, "Tell Bob hi, 3 times", [Step("send_message", {"receiver_id": "USR009"})]),
        ("g3", True, "Tell Bob bye", [Step("send_message", {"receiver_id": "USR009"})]),
    )
    text = "Call send_message with receiver_id=USR003 for Catherine, not USR009 or Bob; 3 tries"
    # USR003 and Catherine: one group's data; USR009, Bob and 3: two groups'; names: never
    assert literal_tokens(text, c) == ["USR003", "Catherine"]
    assert literal_tokens(text, c, allowed=["USR003"]) == ["Catherine"]


def test_enumerated_options():
    assert enumerated_options(
        "{\"error\": \"Invalid travel class. Must be one of {\\'business\\', \\'economy\\'}\"}"
    ) == ("business", "economy")
    assert enumerated_options("Invalid travel class. Options are: economy, business, first") == (
        "economy",
        "business",
        "first",
    )
    assert enumerated_options("mode must be START or STOP") == ("START", "STOP")
    assert enumerated_options("Use YYYY-MM-DD.") == ()
    assert enumerated_options("flight HAT271 not available") == ()


def test_placeholder_kinds():
    assert [placeholder(t) for t in ("a.txt", "2024-05-10", "2", "LAX", "USR003", "Robert")] == [
        "<file>",
        "<date>",
        "<number>",
        "<code>",
        "<id>",
        "<name>",
    ]


# -- end to end: what a session states ------------------------------------------------------


@pytest.fixture
def lib(tmp_path: Path) -> Memory:
    m = Memory.open(tmp_path / "lib.db", embedder=FakeEmbedder())
    yield m
    m.close()


def book(bags: int) -> Step:
    return Step("book_reservation", {"flight": "HAT001", "total_baggages": bags}, "{}", True)


def test_a_count_from_one_task_is_never_a_rule(lib: Memory):
    """tau-bench's "Call book_reservation with total_baggages=0, never 2": the good runs of
    other tasks book other counts, so the count is the task's, not a rule."""
    lib.record("Book HAT001, no bags", [book(0)], group="bags-0", accepted=True)
    lib.record("Book HAT001, no bags", [book(2)], group="bags-0", accepted=False)
    lib.record("Book HAT001 with two bags", [book(2)], group="bags-2", accepted=True)
    lib.record("Book HAT001 with two bags", [book(0)], group="bags-2", accepted=False)
    r = lib.learn(use_model=False)
    assert not [t for t in texts(lib) if "total_baggages" in t]
    reasons = held(lib, r.session_id)  # the two groups' findings merge, and wait
    assert reasons and all("one task's value" in why for _, why in reasons)


def test_a_value_two_tasks_share_is_stated(lib: Memory):
    def mode(level: int, ok: bool = True) -> Step:
        return Step("set_mode", {"level": level}, "{}", ok)

    for g in ("warm-a", "warm-b"):
        lib.record(f"Warm up the {g} engine", [mode(3)], group=g, accepted=True)
        lib.record(f"Warm up the {g} engine", [mode(5)], group=g, accepted=False)
    lib.learn(use_model=False)
    assert any("set_mode with level=3" in t for t in texts(lib)), texts(lib)


def _lookup_group(mem: Memory, key: str, user: str, good: str, bad: str) -> None:
    task = f"I am {user}; cancel my trip"
    details = Step("get_user_details", {"user_id": user}, f'{{"reservations": ["{good}"]}}', True)
    ok = Step("cancel_reservation", {"reservation_id": good}, '{"status": "cancelled"}', True)
    wrong = Step("cancel_reservation", {"reservation_id": bad}, "Error: reservation not found")
    wrong = Step(wrong.tool, wrong.params, wrong.output, False)
    mem.record(task, [details, ok], group=key, accepted=True)
    mem.record(task, [details, wrong], group=key, accepted=False)


def test_ids_from_one_customer_become_the_look_up_pattern(lib: Memory):
    """tau-bench's "... with get_user_details (e.g. 9HBUV8); never pass reservation_id=D1EW9B"."""
    _lookup_group(lib, "cancel", "mia_1", "ABC123", "ZZZ999")
    lib.learn(use_model=False)
    (lesson,) = [t for t in texts(lib) if "reservation_id" in t]
    assert "look up reservation_id with get_user_details" in lesson
    assert "never pass a reservation_id that neither the request nor get_user_details" in lesson
    assert "ABC123" not in lesson and "ZZZ999" not in lesson and "e.g." not in lesson


def test_a_name_copied_from_the_request_becomes_a_pattern(lib: Memory):
    """The demo's "look up receiver_id with get_user_id (e.g. USR003); never pass
    receiver_id=Catherine"."""
    task = "Send 'lunch?' to Catherine"
    look = Step("get_user_id", {"user": "Catherine"}, '{"user_id": "USR003"}', True)
    ok = Step("send_message", {"receiver_id": "USR003", "message": "lunch?"}, "sent", True)
    bad = Step(
        "send_message",
        {"receiver_id": "Catherine", "message": "lunch?"},
        '{"error": "Receiver ID Catherine not found"}',
        False,
    )
    lib.record(task, [look, ok], group="msg", accepted=True)
    lib.record(task, [look, bad], group="msg", accepted=False)
    lib.learn(use_model=False)
    (lesson,) = [t for t in texts(lib) if "receiver_id" in t]
    # one group saw the request's words fail as receiver_id once: said for that failure
    assert lesson == (
        "If send_message fails with 'Receiver ID...', look up receiver_id with get_user_id "
        "and retry."
    )
    for key, name, uid in (("msg-2", "Dmitri", "USR104"), ("msg-3", "Ana", "USR105")):
        t2 = f"Send 'lunch?' to {name}"  # two more groups show it
        look2 = Step("get_user_id", {"user": name}, f'{{"user_id": "{uid}"}}', True)
        ok2 = Step("send_message", {"receiver_id": uid, "message": "x"}, "sent", True)
        bad2 = Step(
            "send_message",
            {"receiver_id": name, "message": "x"},
            f'{{"error": "Receiver ID {name} not found"}}',
            False,
        )
        lib.record(t2, [look2, ok2], group=key, accepted=True)
        lib.record(t2, [look2, bad2], group=key, accepted=False)
    lib.learn(use_model=False)
    (lesson,) = [t for t in texts(lib) if "instead of copying" in t]
    assert "look up receiver_id with get_user_id instead of copying it from the request" in lesson
    assert not any(w in lesson for w in ("Catherine", "Dmitri", "Ana", "USR"))


def test_an_enumeration_the_error_lists_is_kept(lib: Memory):
    task = "Price a business seat to Paris"
    err = '{"error": "Invalid travel class. Options are: economy, business, first"}'
    ok = Step("get_flight_cost", {"travel_class": "business"}, '{"cost": 900}', True)
    bad = Step("get_flight_cost", {"travel_class": "Business"}, err, False)
    lib.record(task, [ok], group="fly", accepted=True)
    lib.record(task, [bad], group="fly", accepted=False)
    lib.learn(use_model=False)
    (lesson,) = texts(lib)
    assert "travel_class like business" in lesson and "never travel_class=Business" in lesson


def _calculate_group(mem: Memory, key: str) -> None:
    """tau-bench's task 23: the good run calculated, the bad one booked something else
    first; calculating is not what the gift-card error was about."""
    task = "Upgrade reservation R1 and pay with the gift card"
    calc = Step("calculate", {"expression": "282 - 177"}, "105.0", True)
    other = Step("book_reservation", {"flight": "HAT002"}, '{"id": "R9"}', True)
    up = {"reservation_id": "R1", "payment_id": "gift_card_1"}
    ok = Step("update_reservation_flights", up, '{"reservation_id": "R1"}', True)
    fail = Step("update_reservation_flights", up, "Error: gift card balance is not enough", False)
    mem.record(task, [calc, ok], group=key, accepted=True)
    mem.record(task, [other, fail], group=key, accepted=False)


def test_no_causal_claim_where_the_helper_is_not_what_changed(lib: Memory):
    _calculate_group(lib, "upgrade")
    lib.learn(use_model=False)
    (lesson,) = texts(lib)
    assert lesson == (
        "Before calling update_reservation_flights, call calculate first, as good runs did."
    )


def test_what_an_accepted_run_did_otherwise_is_held(lib: Memory):
    _calculate_group(lib, "upgrade")
    up = {"reservation_id": "R2", "payment_id": "card_2"}
    lib.record(
        "Change R2's flights",
        [Step("update_reservation_flights", up, '{"reservation_id": "R2"}', True)],
        group="change",
        accepted=True,
    )
    lib.record("Change R2's flights", [], group="change", accepted=False)
    r = lib.learn(use_model=False)
    assert not [t for t in texts(lib) if "calculate" in t]
    assert any(
        "an accepted run of group change did otherwise" in why for _, why in held(lib, r.session_id)
    )


def test_a_refuted_prerequisite_is_stated_for_its_failure_only(lib: Memory, tmp_path: Path):
    auth = Step("authenticate_twitter", {"username": "a", "password": "p"}, "{}", True)
    post = Step("post_tweet", {"content": "hi"}, '{"id": 1}', True)
    denied = Step("post_tweet", {"content": "hi"}, '{"error": "User not authenticated"}', False)
    lib.record("Post hi", [auth, post], group="tweet-1", accepted=True)
    lib.record("Post hi", [denied], group="tweet-1", accepted=False)
    lib.learn(use_model=False)
    assert texts(lib) == [
        "Before calling post_tweet, call authenticate_twitter first; without it post_tweet "
        "fails with 'User not authenticated'."
    ]
    lib2 = Memory.open(tmp_path / "two.db", embedder=FakeEmbedder())
    try:
        lib2.record("Post hi", [auth, post], group="tweet-1", accepted=True)
        lib2.record("Post hi", [denied], group="tweet-1", accepted=False)
        # another task whose account was already logged in: posting alone succeeded
        lib2.record(
            "Post bye",
            [Step("post_tweet", {"content": "bye"}, "{}", True)],
            group="t2",
            accepted=True,
        )
        lib2.record("Post bye", [], group="t2", accepted=False)
        lib2.learn(use_model=False)
        assert (
            "If post_tweet fails with 'User not authenticated', call authenticate_twitter "
            "and retry." in texts(lib2)
        )
    finally:
        lib2.close()


# -- tau-bench ----------------------------------------------------------------------------------


def test_tau_bench_lessons_quoted_by_the_issue_are_gone(tmp_path: Path):
    """12 tasks of tau-bench's airline transcripts (tests/data, MIT): before, the session
    learned "total_baggages=0, never 2", "(e.g. 9HBUV8); never pass reservation_id=D1EW9B"
    and "call calculate first; without it ... fails with 'gift card balance ...'"."""
    trajs = parse_openai(gzip.decompress(TAU_SUBSET.read_bytes())).trajectories
    with Memory.open(tmp_path / "tau.db", embedder=FakeEmbedder()) as mem:
        mem.record_many(trajs)
        r = mem.learn(use_model=False)
        lessons = texts(mem)
        reasons = held(mem, r.session_id)
    joined = " ".join(lessons)
    for gone in ("total_baggages", "never 2", "9HBUV8", "D1EW9B", "gift card", "e.g.", "ATL"):
        assert gone not in joined, (gone, lessons)
    assert any(
        "look up reservation_id with get_user_details; never pass a reservation_id that neither "
        "the request nor get_user_details gave" in t
        for t in lessons
    ), lessons
    held_texts = " ".join(t for t, _ in reasons)
    assert "total_baggages=0, never 2" in held_texts and "calculate" in held_texts


def test_a_model_phrasing_with_a_one_task_literal_gets_the_data_pattern(tmp_path: Path):
    model = FakeModel(
        lambda prompt: (
            "ADD | | Before calling cancel_reservation, look up reservation_id with "
            "get_user_details, e.g. ABC123."
        )
    )
    with Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), model=model) as mem:
        _lookup_group(mem, "cancel", "mia_1", "ABC123", "ZZZ999")
        r = mem.learn()
        (op,) = [o for o in r.applied if "reservation_id" in (o.op.text or "")]
    # the model dropped a fact of the finding (issue 31) or kept the literal: the data text
    assert "ABC123" not in op.op.text and op.op.origin in ("data", "fallback")
    assert "look up reservation_id with get_user_details" in op.op.text
    assert "rephrased as a pattern" in op.op.note


def test_a_checked_value_quotes_the_error_without_its_clients_tags():
    """Real (validation, a project's Skill call): '<tool_use_error>Unknown skill: x
    </tool_use_error>' was quoted with its tag, and the tag's word masked as a one-task
    literal: "a wrong skill failed with '<<value>>Unknown skill: ...'" reached a prompt."""
    err = "<tool_use_error>Unknown skill: para-memory-files</tool_use_error>"
    text = checked_text("skill", ["Skill"], err, build_corpus([]))
    assert text.startswith("Check skill before calling Skill: a wrong skill failed with 'Unknown")
    assert "<<" not in text and "tool_use_error" not in text
