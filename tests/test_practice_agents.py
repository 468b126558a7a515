"""agentmem.practice.agents: one agent choice for ``practice run`` and ``practice eval``."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentmem.errors import InvalidRecordError
from agentmem.practice.agents import SERVE_OFF, ByTask, agent_for, agent_label
from agentmem.practice.types import Agent, Outcome, Task


class _Named:
    def __init__(self, name: str) -> None:
        self.name = name
        self.ran: list[str] = []

    def run(self, task: Task, workspace: Path | None, guidance: str, seed: int, db: Path):
        self.ran.append(task.id)
        return Outcome(task.id, seed, 1.0, True, 0.0)


CLI_TASK = Task("c", "p", repo=Path("/tmp"), check="true")
BFCL_TASK = Task("b", "p", bfcl="multi_turn_base_0")


def test_each_task_goes_to_its_agent() -> None:
    cli, bfcl = _Named("claude"), _Named("bfcl-chat")
    both = ByTask(cli, bfcl)
    assert isinstance(both, Agent) and both.name == "claude+bfcl-chat"
    both.run(CLI_TASK, None, "", 0, Path("x"))
    both.run(BFCL_TASK, None, "", 0, Path("x"))
    assert cli.ran == ["c"] and bfcl.ran == ["b"]
    with pytest.raises(InvalidRecordError, match="is a BFCL task"):
        ByTask(cli, None).run(BFCL_TASK, None, "", 0, Path("x"))


def test_agent_for_refuses_a_task_without_an_agent_and_sets_serve_off() -> None:
    with pytest.raises(InvalidRecordError, match=r"task\(s\) c need a command-line agent"):
        agent_for([CLI_TASK])
    with pytest.raises(InvalidRecordError, match=r"BFCL task\(s\) b need a model server"):
        agent_for([CLI_TASK, BFCL_TASK], template="x {prompt}")
    with pytest.raises(InvalidRecordError, match="have no repo and check"):
        agent_for([Task("n", "p")], template="x {prompt}")
    plain = agent_for([CLI_TASK], template="x {prompt}")
    off = agent_for([CLI_TASK], template="x {prompt}", serve=False)
    assert plain.bfcl is None and getattr(plain.cli, "env", None) == {}
    assert getattr(off.cli, "env", None) == dict(SERVE_OFF) == {"AGENTMEM_SERVE": "off"}


def test_the_label_is_the_template_alone_for_cli_tasks() -> None:
    # a practice started before BFCL tasks could run keeps its key
    assert agent_label([CLI_TASK], "x {prompt}", "http://h/v1", "m") == "x {prompt}"
    label = agent_label([CLI_TASK, BFCL_TASK], "x {prompt}", "http://h/v1", "m", 0.2)
    assert label == "x {prompt} | bfcl http://h/v1 model=m temperature=0.2"
    assert agent_label([BFCL_TASK], None, "http://h/v1", "m") != agent_label(
        [BFCL_TASK], None, "http://h/v1", "other"
    )
