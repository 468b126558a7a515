"""The output cap: long tool outputs stored as head and tail, cut first and redacted where kept,
with no secret through a cut, on every path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmem import InvalidRecordError, Memory, Step
from agentmem.cli import cli
from agentmem.ingest import parse_openai
from agentmem.mcp_server import AgentMemTools
from agentmem.outputs import (
    DEFAULT_OUTPUT_CAP,
    HEAD_SHARE,
    MARGIN,
    MIN_OUTPUT_CAP,
    WINDOW,
    cap_and_redact,
    cap_output,
    cut_marker,
)
from agentmem.redact import redact

from .conftest import run_cli

LOG = "".join(f"step {i}: compiling module_{i}.c ... ok\n" for i in range(40_000))
ERROR = "error: undefined reference to `main'\ncollect2: ld returned 1 exit status\n"
BIG = LOG + ERROR  # about 1.5 MB, the error at the end as in a real build log


def size(text: str) -> int:
    return len(text.encode("utf-8"))


# -- cap_output --------------------------------------------------------------------------------


def test_short_outputs_are_untouched() -> None:
    for text in ("", "ok", "x" * DEFAULT_OUTPUT_CAP, "é" * (DEFAULT_OUTPUT_CAP // 2)):
        assert cap_output(text, DEFAULT_OUTPUT_CAP) is text
    assert cap_output(BIG, 0) is BIG


def test_long_output_keeps_head_and_tail_with_the_original_length() -> None:
    out = cap_output(BIG, DEFAULT_OUTPUT_CAP)
    assert DEFAULT_OUTPUT_CAP - 2048 < size(out) <= DEFAULT_OUTPUT_CAP
    head, _, tail = out.partition("[... agentmem output cap:")
    assert BIG.startswith(head) and BIG.endswith(tail.split("\n", 1)[1])
    assert tail.endswith(ERROR)  # the error lines are kept
    cut, total = cut_marker(out)
    assert total == size(BIG) and cut == total - size(head) - size(tail.split("\n", 1)[1])
    assert head.endswith("\n") and tail.split("\n", 1)[1].startswith("step ")  # whole lines
    assert size(head) < size(tail) and abs(size(head) / (size(out)) - HEAD_SHARE) < 0.05
    assert cap_output(out, DEFAULT_OUTPUT_CAP) == out  # idempotent


@settings(max_examples=200, deadline=None)
@given(
    st.text(min_size=0, max_size=6000),
    st.integers(MIN_OUTPUT_CAP, 5000),
)
def test_any_text_fits_its_cap(text: str, cap: int) -> None:
    out = cap_output(text, cap)
    assert size(out) <= cap
    if size(text) <= cap:
        assert out == text
    else:
        cut, total = cut_marker(out)
        assert total == size(text) and cut > 0
        assert cap_output(out, cap) == out


@pytest.mark.parametrize("bad", [1, 1023, -5, True, 1.5, "64k", None])
def test_bad_caps_are_refused_and_nothing_changes(tmp_path: Path, bad: object) -> None:
    with Memory.open(tmp_path / "lib.db") as mem:
        with pytest.raises(InvalidRecordError, match="at least 1024"):
            mem.set_output_cap(bad)  # type: ignore[arg-type]
        assert mem.output_cap == DEFAULT_OUTPUT_CAP
        assert mem.get_setting("output_cap") is None


def test_the_cap_is_a_library_setting(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "lib.db") as mem:
        mem.set_output_cap(4096)
    with Memory.open(tmp_path / "lib.db") as mem:
        assert mem.output_cap == 4096
        tid = mem.record("build", [Step("bash", {"cmd": "make"}, BIG, False)])
        assert size(mem.get_trajectory(tid).steps[0].output) <= 4096
        mem.set_output_cap(0)
        tid = mem.record("build", [Step("bash", {"cmd": "make"}, BIG, False)])
        assert mem.get_trajectory(tid).steps[0].output == BIG


# -- cap first, no secret through a cut ------------------------------------------------------

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    + "".join(
        f"MIIEowIBAAKCAQEA{i:02d}q7Zk3LbXw9mPc2VtRy8sNf4GhJd6KeTuY1oIpAzQxWvBnM0lC5\n"
        for i in range(40)
    )
    + "-----END RSA PRIVATE KEY-----\n"
)
#: (text planted, the secret's pieces that must not be stored)
PLANTS = [
    (f"export GITHUB_TOKEN={TOKEN}\n", [TOKEN[i : i + 10] for i in range(0, 30, 5)]),
    ("db:\n  password: Xk9#mP2$vLq8w\n", ["Xk9#mP2", "mP2$vLq", "vLq8w"]),
    ("$ redis-cli -a R3disPass123wq ping\n", ["R3disPass", "Pass123wq"]),
    (PEM, ["q7Zk3LbXw9mPc2Vt", "KeTuY1oIpAzQxWvBnM0lC5"]),
]


def _filler(n: int) -> str:
    return "".join(f"line {i:07d}: ok\n" for i in range(n))


def _cuts(cap: int, n: int) -> list[int]:
    """Where cap_and_redact cuts a text of ``n`` ASCII characters: the head and tail cuts
    and the far edges of the windows redacted around them."""
    longest = len(f"[... agentmem output cap: {n} of {n} bytes cut here ...]\n") + 1
    head_n = int((cap - longest) * HEAD_SHARE)
    tail_n = cap - longest - head_n
    return [head_n, head_n + WINDOW, n - tail_n, n - tail_n - WINDOW]


@pytest.mark.parametrize("plant", range(len(PLANTS)))
@pytest.mark.parametrize("where", range(4))
def test_no_secret_gets_through_at_a_cut(plant: int, where: int) -> None:
    """A secret straddling any cut, at every shift around it, is never stored, not even
    in part: each kept part was redacted with a window past its cut."""
    cap = 8192
    text, pieces = PLANTS[plant]
    base = _filler(20_000)  # 360 kB
    at = _cuts(cap, len(base) + len(text))[where]
    for shift in range(-len(text) - 40, 40, 7):
        i = max(0, min(len(base), at + shift))
        output = base[:i] + text + base[i:]
        out = cap_and_redact(output, cap, redact)
        assert size(out) <= cap and cut_marker(out)
        for piece in pieces:
            assert piece not in out, (where, shift, piece)
        assert cap_output(out, cap) == out  # storing leaves it as it is


@pytest.mark.parametrize("shift", range(-14, 6, 2))
def test_the_margin_drops_half_a_secret_at_a_window_edge(shift: int) -> None:
    """Redaction can shrink a window (a private key becomes one placeholder) until its
    far edge falls inside the head kept; half a token there has no shape any more. The
    margin next to the edge is never kept."""
    cap = DEFAULT_OUTPUT_CAP
    head = (PEM * 7).replace("\n", " ") + "x" * 4000  # one long line: no line break to cut at
    assert len(PEM * 7) > WINDOW  # the window shrinks below the head kept
    edge = _cuts(cap, 400_000)[1]
    start = edge + shift - len(head)
    output = "y" * start + head + TOKEN + " " + "z" * (400_000 - start - len(head) - 41)
    assert len(output) == 400_000
    out = cap_and_redact(output, cap, redact)
    assert TOKEN[:8] not in out and TOKEN[-8:] not in out, shift
    assert size(out) <= cap


def test_without_secrets_capping_first_changes_nothing() -> None:
    for cap in (MIN_OUTPUT_CAP, 4096, DEFAULT_OUTPUT_CAP):
        assert cap_and_redact(BIG, cap, redact) == cap_output(BIG, cap)
    assert cap_and_redact("short", DEFAULT_OUTPUT_CAP, redact) == "short"
    assert cap_and_redact("pw=hunter22 " * 10, 0, redact) == redact("pw=hunter22 " * 10)


def test_capping_first_redacts_about_twice_the_cap() -> None:
    """The cost claim, without a clock: of a 4 MB output, redaction sees the two kept
    parts and their windows only."""
    seen: list[int] = []

    def counting(text: str) -> str:
        seen.append(len(text))
        return redact(text)

    output = _filler(240_000)  # 4.3 MB
    out = cap_and_redact(output, DEFAULT_OUTPUT_CAP, counting)
    assert size(out) <= DEFAULT_OUTPUT_CAP and out.endswith(output[-1000:])
    assert len(seen) == 2 and sum(seen) <= 2 * (DEFAULT_OUTPUT_CAP + WINDOW)
    assert WINDOW > MARGIN


def test_recording_a_4mb_output_caps_first(tmp_path: Path) -> None:
    base = _filler(240_000)
    cut = _cuts(DEFAULT_OUTPUT_CAP, len(base))[2]
    output = base[: cut - 10] + PLANTS[0][0] + base[cut - 10 :]
    with Memory.open(tmp_path / "lib.db") as mem:
        tid = mem.record("build", [Step("bash", {"cmd": "make"}, output, False)])
        out = mem.get_trajectory(tid).steps[0].output
    assert size(out) <= DEFAULT_OUTPUT_CAP and cut_marker(out) == (
        cut_marker(out)[0],
        size(output),
    )
    assert "ghp_" not in out and TOKEN[10:20] not in out


def test_a_secret_across_the_cut_is_redacted_whole(tmp_path: Path) -> None:
    """Capping alone would cut the token where the head ends, and a cut-off token no
    longer has its shape: the head is redacted with a window past its cut, so no piece
    of it is stored."""
    cap = 8192
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    head_bytes = int((cap - 80) * HEAD_SHARE)
    text = "x" * (head_bytes - 20) + f" GITHUB_TOKEN={token} " + "y" * 200_000
    naive = cap_output(text, cap)
    assert token[:10] in naive and token not in naive  # what capping first would store
    with Memory.open(tmp_path / "lib.db") as mem:
        mem.set_output_cap(cap)
        tid = mem.record("push", [Step("bash", {"cmd": "git push"}, text, True)])
        out = mem.get_trajectory(tid).steps[0].output
    assert cut_marker(out) and size(out) <= cap
    assert "A1b2" not in out and "ghp_" not in out
    assert out.count("[REDACTED:") == 0  # the placeholder was at the cut: dropped whole
    assert cap_output(out, cap) == out


@pytest.mark.parametrize("shift", range(-30, 30, 3))
def test_the_cut_never_splits_a_placeholder(shift: int) -> None:
    cap = 4096
    head_bytes = int((cap - 80) * HEAD_SHARE)
    for where in (head_bytes + shift, -(cap - 80 - head_bytes) + shift):
        text = "x" * 100_000
        ph = "[REDACTED:password]"
        text = text[:where] + ph + text[where:] if where > 0 else text[:where] + ph + "x" * -where
        out = cap_output(text, cap)
        assert size(out) <= cap
        assert out.count("[REDACTED:") == out.count("[REDACTED:password]")
        assert "REDACTED:" not in out.replace("[REDACTED:password]", "")


# -- every way of recording ------------------------------------------------------------------


def _stored_outputs(db: Path) -> list[str]:
    with Memory.open(db) as mem:
        return [s.output for t in mem.trajectories() for s in t.steps]


def _assert_capped(outputs: list[str]) -> None:
    big = [o for o in outputs if cut_marker(o)]
    assert big, "no output was capped"
    for o in big:
        assert size(o) <= DEFAULT_OUTPUT_CAP and o.endswith(ERROR)
        assert cut_marker(o)[1] == size(BIG)


def test_api_paths_cap(tmp_path: Path) -> None:
    db = tmp_path / "lib.db"
    with Memory.open(db) as mem:
        mem.record("build", [Step("bash", {"cmd": "make"}, BIG, False)])
        with mem.trajectory("build again") as t:
            t.step("bash", {"cmd": "make"}, BIG, success=False)
    outputs = _stored_outputs(db)
    assert len(outputs) == 2
    _assert_capped(outputs)


def test_cli_record_caps(tmp_path: Path) -> None:
    db = tmp_path / "lib.db"
    line = {"task": "build", "steps": [{"tool": "bash", "output": BIG, "success": False}]}
    result = run_cli("record", "-", db=db, input=(json.dumps(line) + "\n").encode())
    assert result.returncode == 0, result.stderr
    _assert_capped(_stored_outputs(db))


def test_import_caps(tmp_path: Path) -> None:
    db = tmp_path / "lib.db"
    convo = {
        "messages": [
            {"role": "user", "content": "build it"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"cmd": "make"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": BIG},
            {"role": "assistant", "content": "It failed."},
        ]
    }
    src = tmp_path / "convo.json"
    src.write_text(json.dumps([convo]))
    assert parse_openai(src.read_bytes()).trajectories  # the importer reads it
    result = CliRunner().invoke(cli, ["import", str(src), "--format", "openai", "--db", str(db)])
    assert result.exit_code == 0, result.output
    _assert_capped(_stored_outputs(db))


def test_mcp_paths_cap(tmp_path: Path) -> None:
    db = tmp_path / "lib.db"
    core = AgentMemTools(Memory.open(db, embedder="hash"))
    core.record("build", [{"tool": "bash", "output": BIG, "success": False}])
    h = core.begin("build step by step")
    core.step(h, "bash", {"cmd": "make"}, BIG, success=False)
    core.end(h)
    core.close()
    outputs = _stored_outputs(db)
    assert len(outputs) == 2
    _assert_capped(outputs)


def test_settings_command_shows_and_sets_the_cap(tmp_path: Path) -> None:
    db = str(tmp_path / "lib.db")
    runner = CliRunner()
    shown = runner.invoke(cli, ["settings", "--json", "--db", db])
    assert shown.exit_code == 0 and json.loads(shown.output)["output_cap"] == DEFAULT_OUTPUT_CAP
    assert runner.invoke(cli, ["settings", "output_cap", "1MiB", "--db", db]).exit_code == 0
    bad = runner.invoke(cli, ["settings", "output_cap", "12", "--db", db])
    assert bad.exit_code == 2 and "at least 1024" in bad.output
    bad = runner.invoke(cli, ["settings", "output_cap", "lots", "--db", db])
    assert bad.exit_code == 2 and "'lots' is not a value of output_cap" in bad.output
    one = runner.invoke(cli, ["settings", "output_cap", "--db", db])
    assert one.output.startswith("output_cap = 1048576")
    assert runner.invoke(cli, ["settings", "output_cap", "off", "--db", db]).exit_code == 0
    with Memory.open(db) as mem:
        assert mem.output_cap == 0


def test_transcript_imports_cap(tmp_path: Path) -> None:
    """Transcript imports store through the same place: a lower cap applies to them."""
    from .transcripts import ClaudeSession

    s = ClaudeSession(cwd=str(tmp_path))
    s.prompt("build the project")
    s.tool("Bash", {"command": "make"}, LOG[:14_000] + ERROR, is_error=True)
    s.say("The build fails at the link step.")
    path = s.write(tmp_path / "projects" / "p" / f"{s.session_id}.jsonl")
    db = tmp_path / "lib.db"
    with Memory.open(db) as mem:
        mem.set_output_cap(4096)
        mem.import_transcripts("claude-code", [path], final=True)
        [t] = mem.trajectories()
    [out] = [st.output for st in t.steps]
    assert size(out) <= 4096 and cut_marker(out) and out.endswith(ERROR)
