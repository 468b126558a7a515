"""Export stored trajectories as an RCTP fine-tuning set (mixed quality, reward tokens).

Each trajectory becomes one JSON line in the chat format most SFT tooling reads
as is (OpenAI fine-tuning, Hugging Face TRL's SFTTrainer, axolotl's
``chat_template`` datasets): ``{"messages": [...], "tools": [...]}``. The
reward token stands first in the system message; the user message holds the
task; every step is an assistant message with one ``tool_calls`` entry and the
``tool`` message with its output.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from .errors import InvalidRecordError
from .rc import HIGH, LOW
from .records import Step, Trajectory
from .timestamps import parse_time

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["ExportOptions", "ExportSummary", "export_rctp", "parse_rctp_record", "rctp_record"]


def _check_date(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_time(value)
    except ValueError:
        raise InvalidRecordError(
            f"--{name} must be an ISO date such as 2026-11-01, not {value!r}"
        ) from None


@attrs.frozen
class ExportOptions:
    """Which trajectories to export and how to label them."""

    threshold: float = 0.5
    high_token: str = HIGH
    low_token: str = LOW
    domains: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    reward: str = "composite"
    system: str = ""

    def __attrs_post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise InvalidRecordError(f"threshold must be between 0 and 1, not {self.threshold}")
        if not self.high_token.strip() or not self.low_token.strip():
            raise InvalidRecordError("reward tokens must not be empty")
        if self.high_token == self.low_token:
            raise InvalidRecordError("the high and low reward tokens must differ")
        if self.reward not in ("composite", "binary"):
            raise InvalidRecordError(f"reward must be composite or binary, not {self.reward!r}")
        s, u = _check_date(self.since, "since"), _check_date(self.until, "until")
        if s and u and s > u:
            raise InvalidRecordError(f"--since {self.since} is after --until {self.until}")


@attrs.frozen
class ExportSummary:
    """What went into the file: counts per token and domain, and what was left out."""

    path: str
    written: int
    high: int
    low: int
    pending: int
    filtered: int
    by_domain: dict[str, int]

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _json_type(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "null"


def tool_schemas(steps: Iterable[Step]) -> list[dict[str, Any]]:
    """Function schemas inferred from the parameters each tool was called with."""
    props: dict[str, dict[str, str]] = {}
    for s in steps:
        p = props.setdefault(s.tool, {})
        for k, v in s.params.items():
            p.setdefault(k, _json_type(v))
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "parameters": {
                    "type": "object",
                    "properties": {k: {"type": t} for k, t in ps.items()},
                },
            },
        }
        for name, ps in sorted(props.items())
    ]


def rctp_record(t: Trajectory, token: str, system: str = "") -> dict[str, Any]:
    """One trajectory as a chat fine-tuning record conditioned on ``token``."""
    sys_text = f"{token}\n{system}".rstrip() if system else token
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": sys_text},
        {"role": "user", "content": t.task},
    ]
    for i, s in enumerate(t.steps):
        call_id = f"call_{t.id}_{i}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": s.tool,
                            "arguments": json.dumps(s.params, ensure_ascii=False),
                        },
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": s.output})
    return {"messages": messages, "tools": tool_schemas(t.steps)}


def parse_rctp_record(
    rec: Mapping[str, Any], tokens: Sequence[str] = (HIGH, LOW)
) -> tuple[str, Trajectory]:
    """Read a record written by :func:`rctp_record` back: (token, trajectory)."""
    msgs = rec["messages"]
    system = msgs[0]["content"]
    token = next((t for t in tokens if system.startswith(t)), None)
    if token is None:
        raise InvalidRecordError("the system message does not start with a reward token")
    task = msgs[1]["content"]
    steps = []
    for m in msgs[2:]:
        if m["role"] == "assistant":
            fn = m["tool_calls"][0]["function"]
            steps.append([fn["name"], json.loads(fn["arguments"])])
        elif m["role"] == "tool":
            steps[-1].append(m["content"])
    from .ingest import is_error_output

    return token, Trajectory(
        task=task,
        steps=[Step(tool, params, out, not is_error_output(out)) for tool, params, out in steps],
    )


def export_rctp(
    mem: Memory, path: str | os.PathLike[str], options: ExportOptions = ExportOptions()
) -> ExportSummary:
    """Write the RCTP data set to ``path`` atomically (a temp file renamed into place).

    A trajectory is labelled with the high token when its reward (composite or
    binary, per ``options.reward``) is >= ``threshold``, else the low token;
    trajectories whose reward is still pending are left out, as are those
    outside ``domains`` (any step in one of them) or the ``since``/``until`` dates.
    Every run is redacted again with the library's redactor on its way out (a run
    recorded under older rules gets today's; a redacted one is left as it is).
    """
    from .redact.runs import redact_run

    target = Path(path)
    if not target.parent.exists():
        raise InvalidRecordError(f"cannot write {target}: folder {target.parent} does not exist")
    since, until = _check_date(options.since, "since"), _check_date(options.until, "until")
    rewards: dict[int, float | None] = {}
    for g in mem.groups(reward=options.reward):
        for m in g.members:
            rewards[m.id] = m.reward
    counts: Counter[str] = Counter()
    by_domain: Counter[str] = Counter()
    pending = filtered = 0
    fd, tmp = tempfile.mkstemp(prefix=".rctp-", dir=str(target.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for t in mem.trajectories():
                created = parse_time(t.created_at or "1970-01-01")
                doms = {s.domain or "general" for s in t.steps}
                if (
                    (options.domains and not doms & set(options.domains))
                    or (since and created < since)
                    or (until and created > until)
                ):
                    filtered += 1
                    continue
                r = rewards.get(t.id or 0)
                if r is None:
                    pending += 1
                    continue
                token = options.high_token if r >= options.threshold else options.low_token
                t = redact_run(t, mem.redactor, 0).trajectory
                counts[token] += 1
                by_domain.update(doms)
                fh.write(
                    json.dumps(rctp_record(t, token, options.system), ensure_ascii=False) + "\n"
                )
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return ExportSummary(
        str(target),
        sum(counts.values()),
        counts[options.high_token],
        counts[options.low_token],
        pending,
        filtered,
        dict(sorted(by_domain.items())),
    )
