"""Scoring rules and data generator of the BFCL lessons benchmark (benchmarks/lessons)."""

from __future__ import annotations

import json
import math
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:  # benchmarks/ is a top-level folder of the repo, not installed
    sys.path.insert(0, _ROOT)

from benchmarks.lessons.scoring import (  # noqa: E402
    addresses,
    contradicts,
    is_true_of_group,
    score,
    violations,
)

# ----------------------------------------------------------------------------- causes


def cause(kind: str, tool: str, **kw):
    base = {
        "id": f"g/{kind}/{tool}",
        "group": "g",
        "kind": kind,
        "tool": tool,
        "param": None,
        "prerequisite_tool": None,
        "right_tool": None,
        "recovery_tool": None,
        "wrong_param": None,
        "wrong_value": None,
    }
    base.update(kw)
    return base


MISSING_CD = cause("missing_prerequisite", "mv", prerequisite_tool="cd")
MISSING_LOGIN = cause("missing_prerequisite", "send_message", prerequisite_tool="message_login")
WRONG_NAME = cause("wrong_param_name", "cat", param="file_name", wrong_param="file")
WRONG_VALUE = cause(
    "wrong_param_value", "pressBrakePedal", param="pedalPosition", wrong_value=100, right_value=1.0
)
WRONG_CASE = cause(
    "wrong_param_value", "startEngine", param="ignitionMode", wrong_value="start",
    right_value="START",
)  # fmt: skip
WRONG_RECEIVER = cause(
    "wrong_param_value", "send_message", param="receiver_id", wrong_value="Bob",
    right_value="USR002",
)  # fmt: skip
WRONG_TOOL = cause("wrong_tool", "cp", right_tool="mv")
WRONG_CONVERSION = cause("wrong_tool", "gallon_to_liter", right_tool="liter_to_gallon")
NO_RECOVERY = cause(
    "no_recovery", "send_message", param="receiver_id", recovery_tool="get_user_id",
    wrong_value="Bob",
)  # fmt: skip


@pytest.mark.parametrize(
    ("lesson", "c"),
    [
        ("Before mv on a file in a subfolder, cd into that folder first.", MISSING_CD),
        ("Never skip cd before file tools such as mv or cat.", MISSING_CD),
        ("mv only sees the current directory: call cd(folder=...) before it.", MISSING_CD),
        ("Before send_message, call message_login with your user_id.", MISSING_LOGIN),
        ("Call cat with the exact parameter name file_name, not file.", WRONG_NAME),
        ("When reading a file with cat, pass file_name=.", WRONG_NAME),
        ("cat(file='x') fails; use cat(file_name='x').", WRONG_NAME),
        ("pressBrakePedal: pedalPosition is a fraction, 1.0 to fully press, not 100.", WRONG_VALUE),
        ("Call pressBrakePedal with pedalPosition=1.0 before startEngine.", WRONG_VALUE),
        ("To start the car call startEngine with ignitionMode='START', never 'start'.", WRONG_CASE),
        ("send_message's receiver_id must be an ID like USR002 from get_user_id.", WRONG_RECEIVER),
        ("To move a file, call mv, not cp.", WRONG_TOOL),
        ("Call mv instead of cp to move a file.", WRONG_TOOL),
        ("mv moves files; cp is wrong for moving.", WRONG_TOOL),
        (
            "To convert liters to gallons use liter to gallon, not gallon_to_liter.",
            WRONG_CONVERSION,
        ),
        (
            "If send_message fails with 'Receiver ID not found', call get_user_id and retry.",
            NO_RECOVERY,
        ),
    ],
)
def test_correct_lessons_address_their_cause(lesson, c):
    assert addresses(lesson, c)


@pytest.mark.parametrize(
    ("lesson", "c"),
    [
        # vague
        ("Be careful with parameters.", WRONG_NAME),
        ("Always change directory before moving files.", MISSING_CD),
        ("Check the tool's documentation before calling it.", WRONG_TOOL),
        # wrong tool named
        ("Before cp, cd into the folder.", MISSING_CD),
        ("Call grep with file_name, not file.", WRONG_NAME),
        ("Before send_message, call ticket_login.", MISSING_LOGIN),
        # wrong parameter named
        ("Call cat with the right path argument.", WRONG_NAME),
        ("Call pressBrakePedal with the brake force set high.", WRONG_VALUE),
        # recommends the bad value / bad name / bad tool, or dismisses the prerequisite
        ("Call cat with the parameter `file`, not file_name.", WRONG_NAME),
        ("Use file instead of file_name when calling cat.", WRONG_NAME),
        ("Call pressBrakePedal with pedalPosition=100 for a full press.", WRONG_VALUE),
        ("startEngine: set ignitionMode to 'start'.", WRONG_CASE),
        ("send_message: set receiver_id to the name, e.g. receiver_id='Bob'.", WRONG_RECEIVER),
        ("To copy a file, call cp, not mv.", WRONG_TOOL),
        ("Use cp to move files; mv is not needed.", WRONG_TOOL),
        ("No need to call cd before mv.", MISSING_CD),
        ("Don't call cd before mv.", MISSING_CD),
        ("Skip cd; mv finds files anywhere.", MISSING_CD),
        ("If send_message fails, give up and report the error.", NO_RECOVERY),
        ("Don't call get_user_id after send_message fails.", NO_RECOVERY),
    ],
)
def test_wrong_or_vague_lessons_do_not_address(lesson, c):
    assert not addresses(lesson, c)


def test_tool_names_match_case_insensitively_and_as_words():
    assert addresses("Before MV, call CD.", MISSING_CD)
    assert addresses("Before send message, call message login first.", MISSING_LOGIN)
    assert not addresses("Before sending a message, log in.", MISSING_LOGIN)
    # a parameter is an identifier: 'file name' is not file_name
    assert not addresses("Call cat with the file name.", WRONG_NAME)


# ----------------------------------------------------------------------------- violations

TOOLS = {"cd", "mv", "cat", "cp", "send_message", "get_user_id", "pressBrakePedal", "startEngine"}
PROMPT = (
    "You are a helpful agent. Read the trajectories below and write lessons that say when "
    "and how to apply a tool, in at most thirty-two words each."
)


def test_violations_quiet_on_good_lessons():
    good = [
        "Before mv on a file in a subfolder, cd into that folder first; mv only sees the "
        "current directory.",
        "send_message needs receiver_id as an ID such as USR002, looked up with get_user_id.",
        "Call startEngine() only after pressBrakePedal with pedalPosition=1.0.",
        "Pass cat the exact file name, e.g. final_report.pdf, listed in the folder.",
        "lockDoors takes door values like 'rear_left' with unlock=False.",
        "Check which name(s) the folder holds before moving files.",
    ]
    for lesson in good:
        v = violations(
            lesson,
            prompt_texts=[PROMPT],
            known_tools=TOOLS | {"lockDoors"},
            all_lessons=good,
            known_identifiers={"receiver_id", "file_name", "pedalPosition", "door", "unlock"},
        )
        assert v == [], (lesson, v)


def test_violation_too_long():
    lesson = " ".join(["word"] * 33)
    assert "too_long" in violations(lesson)
    assert "too_long" not in violations(" ".join(["word"] * 32))


def test_violation_copied_prompt():
    copied = "Remember: read the trajectories below and write lessons that say when to act."
    assert "copied_prompt" in violations(copied, prompt_texts=[PROMPT])
    short = "Read the trajectories below and write lessons."  # a run of 7 words only
    assert "copied_prompt" not in violations(short, prompt_texts=[PROMPT])


def test_violation_invented_tools():
    v = violations(
        "Call get_weather(city) before fetch_user_profile, then mv.",
        known_tools=TOOLS,
        known_identifiers={"city"},
    )
    assert "invented_tool:get_weather" in v
    assert "invented_tool:fetch_user_profile" in v
    assert not any(x.endswith(":mv") for x in v)
    assert violations("Call lookupUser() first.", known_tools=TOOLS) == ["invented_tool:lookupUser"]
    # ordinary words, known tools and known parameters are not flagged
    assert violations("Use mv with source and destination.", known_tools=TOOLS) == []
    assert violations("Set receiver_id first.", known_identifiers={"receiver_id"}) == []


def _bag_embed(texts):
    vocab = sorted({w for t in texts for w in re.findall(r"\w+", t.lower())})
    out = []
    for t in texts:
        c = Counter(re.findall(r"\w+", t.lower()))
        out.append([float(c[w]) for w in vocab])
    return out


def test_violation_near_duplicate():
    a = "Before mv, cd into the folder that holds the file."
    b = "Before mv, cd into the folder that holds that file."
    c = "send_message needs an ID from get_user_id."
    lib = [a, b, c]
    assert "near_duplicate" in violations(a, all_lessons=lib, embed=_bag_embed, dup_threshold=0.8)
    assert "near_duplicate" not in violations(
        c, all_lessons=lib, embed=_bag_embed, dup_threshold=0.8
    )
    # without an embed function only identical texts are duplicates
    assert "near_duplicate" not in violations(a, all_lessons=lib)
    assert "near_duplicate" in violations(a, all_lessons=[a, " before MV, cd into the folder "
                                                             "that holds the file."])  # fmt: skip
    assert violations(a, all_lessons=[a]) == []


# ----------------------------------------------------------------------------- precision


def _traj(steps, accepted, planted=None):
    return {
        "task": "move the report",
        "group": "g",
        "steps": [{"tool": t, "params": p, "output": "{}", "success": ok} for t, p, ok in steps],
        "accepted": accepted,
        "meta": {"source": "test", "variant": "x", "planted": planted},
    }


GROUP = [
    _traj([("cd", {"folder": "document"}, True), ("mv", {"source": "a.txt", "destination": "b"},
                                                      True)], True),
    _traj([("cd", {"folder": "document"}, True), ("cp", {"source": "a.txt", "destination": "b"},
                                                      True)], False, WRONG_TOOL),
]  # fmt: skip


def test_is_true_of_group():
    # addresses the planted cause
    assert is_true_of_group("To move a file, call mv, not cp.", GROUP)
    # grounded: tools of the group with one of their parameters
    assert is_true_of_group("Call mv with source set to the file's exact name.", GROUP)
    assert is_true_of_group("Use cd with folder before file operations.", GROUP)
    # names a tool absent from the group, or an invented one
    assert not is_true_of_group("Call cat with file_name.", GROUP, known_tools={"cat"})
    assert not is_true_of_group("Call get_file(source) first, then mv with source.", GROUP)
    # names no parameter of the tool
    assert not is_true_of_group("Call mv carefully.", GROUP)
    assert not is_true_of_group("Call mv with file_name.", GROUP)
    # reverses the planted cause
    assert contradicts("To move a file, call cp with source, not mv.", WRONG_TOOL)
    assert not is_true_of_group("To move a file, call cp with source, not mv.", GROUP)
    # vague
    assert not is_true_of_group("Be careful with parameters.", GROUP)


def test_score_summary():
    lib = [
        "To move a file, call mv, not cp.",
        "Call mv with source set to the file's exact name.",
        "Call get_weather(city) before moving.",
        "Be careful.",
    ]
    out = score(lib, [WRONG_TOOL, MISSING_CD], {"g": GROUP}, prompt_texts=[PROMPT])
    assert out["library_size"] == 4
    assert out["causes"] == 2
    assert out["recovered"] == 1
    assert out["recovery"] == 0.5
    assert out["recovery_by_kind"] == {"missing_prerequisite": 0.0, "wrong_tool": 1.0}
    assert out["precision"] == 0.5
    assert out["violations"] == {"invented_tool": 1}
    assert out["lessons_with_violations"] == 1
    assert out["lessons"][0]["addresses"] == [WRONG_TOOL["id"]]
    empty = score([], [WRONG_TOOL], [t for t in GROUP])
    assert empty["precision"] is None and empty["recovery"] == 0.0


def test_score_with_embed_counts_near_duplicates_once_per_lesson():
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return [[1.0, 0.0] if "mv" in t else [0.0, 1.0] for t in texts]

    lib = ["Before mv, cd first.", "Before mv, always cd first.", "Call cd with folder."]
    out = score(lib, [MISSING_CD], {"g": GROUP}, embed=embed, dup_threshold=0.9)
    assert out["violations"].get("near_duplicate") == 2
    embedded = [t for c in calls for t in c]
    assert sorted(set(embedded)) == sorted(lib) and len(embedded) == len(lib)
    assert math.isclose(out["recovery"], 1.0)


# ----------------------------------------------------------------------------- generator


@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("bfcl_eval")
    from benchmarks.lessons import generate

    records, causes = generate.build_benchmark(20, seed=0)
    return generate, records, causes


def _calls(traj):
    return [{"tool": s["tool"], "params": s["params"]} for s in traj["steps"]]


def test_generator_groups_and_planted_edits(bench):
    generate, records, causes = bench
    groups: dict[str, list] = {}
    for r in records:
        groups.setdefault(r["group"], []).append(r)
    assert len(groups) == 20
    assert {c["kind"] for c in causes} == set(generate.KINDS)
    for trajs in groups.values():
        assert len(trajs) == 4
        gold = [t for t in trajs if t["meta"]["variant"] == "gold"]
        assert len(gold) == 1
        gold = gold[0]
        assert gold["accepted"] is True and gold["meta"]["planted"] is None
        assert len(gold["steps"]) >= 3
        assert all(s["success"] for s in gold["steps"])
        assert any(not t["accepted"] for t in trajs)
        gold_calls = _calls(gold)
        for t in trajs:
            assert t["task"] == gold["task"] and t["task"]
            assert all(isinstance(s["output"], str) and len(s["output"]) <= 2000
                       for s in t["steps"])  # fmt: skip
            if t is gold:
                continue
            p = t["meta"]["planted"]
            assert t["meta"]["variant"] == p["kind"]
            assert "reference_lesson" not in p
            calls = _calls(t)
            assert calls == generate.apply_edit(gold_calls, p["edit"])
            _check_kind(p, gold_calls, calls, t)
    for c in causes:
        assert len(c["reference_lesson"].split()) <= 32
        assert addresses(c["reference_lesson"], c)
        assert c["must_mention"][0] == c["tool"]


def _check_kind(p, gold, calls, traj):
    i = p["call_index"]
    kind = p["kind"]
    failed = [n for n, s in enumerate(traj["steps"]) if not s["success"]]
    if kind == "missing_prerequisite":
        assert traj["accepted"] is False
        assert calls == gold[:i] + gold[i + 1 :]
        assert gold[i]["tool"] == p["prerequisite_tool"]
        assert failed and traj["steps"][failed[0]]["tool"] == p["tool"]
    elif kind in ("wrong_param_name", "wrong_param_value", "wrong_tool"):
        assert traj["accepted"] is False
        assert len(calls) == len(gold)
        diff = [n for n in range(len(gold)) if calls[n] != gold[n]]
        assert diff == [i]
        g, v = gold[i], calls[i]
        if kind == "wrong_param_name":
            assert v["tool"] == g["tool"] == p["tool"]
            assert p["param"] in g["params"] and p["param"] not in v["params"]
            assert v["params"][p["wrong_param"]] == g["params"][p["param"]]
            assert {k: x for k, x in v["params"].items() if k != p["wrong_param"]} == {
                k: x for k, x in g["params"].items() if k != p["param"]
            }
            assert i in failed and "unexpected keyword argument" in traj["steps"][i]["output"]
        elif kind == "wrong_param_value":
            assert v["tool"] == g["tool"] == p["tool"]
            assert set(v["params"]) == set(g["params"])
            changed = [k for k in g["params"] if g["params"][k] != v["params"][k]]
            assert changed == [p["param"]]
            assert v["params"][p["param"]] == p["wrong_value"]
            assert g["params"][p["param"]] == p["right_value"]
        else:
            assert g["tool"] == p["right_tool"] and v["tool"] == p["tool"] != g["tool"]
    elif kind == "no_recovery":
        if p["role"] == "gives_up":
            assert traj["accepted"] is False
            assert failed == [len(calls) - 1] and calls[-1]["tool"] == p["tool"]
            assert len(calls) < len(gold) + 1
        else:
            assert p["role"] == "recovers" and traj["accepted"] is True
            assert len(failed) == 1
            k = failed[0]
            assert calls[k]["tool"] == p["tool"]
            assert calls[k + 1]["tool"] == p["recovery_tool"]
            assert calls[k + 2]["tool"] == p["tool"] and traj["steps"][k + 2]["success"]
    else:
        raise AssertionError(kind)


def test_generator_small_run_deterministic_and_cli(bench, tmp_path):
    generate, _, _ = bench
    a = generate.build_benchmark(3, seed=0)
    b = generate.build_benchmark(3, seed=0)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert len({r["group"] for r in a[0]}) == 3
    assert generate.main(["--tasks", "3", "--seed", "0", "--out", str(tmp_path)]) == 0
    lines = (tmp_path / "trajectories.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == json.loads(json.dumps(a[0]))
    ref = json.loads((tmp_path / "reference.json").read_text())
    assert ref == json.loads(json.dumps(a[1]))
    tools = json.loads((tmp_path / "tools.json").read_text())
    assert "cd" in tools and "send_message" in tools
    # the reference library scores perfectly on its own benchmark
    out = score([c["reference_lesson"] for c in ref], ref, [json.loads(x) for x in lines],
                known_tools=tools)  # fmt: skip
    assert out["recovery"] == 1.0 and out["precision"] == 1.0


def test_generator_records_are_agentmem_records(bench):
    ingest = pytest.importorskip("agentmem.ingest")
    _, records, _ = bench
    for r in records[:12]:
        ingest.trajectory_from_json(json.loads(json.dumps(r)))
