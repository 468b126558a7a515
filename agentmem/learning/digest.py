"""Stage 1 from the data: a structured digest of one trajectory, and its <= 64-word summary.

A small model cannot be trusted to read a trajectory, so the analysis is done
here from the steps themselves: the domain and tool sequence (a, b), the
parameter choices that mattered (c) and the root cause of each failure, taken
from the error outputs (d), plus the recoveries. The model, when it is used,
only rephrases this digest (see :mod:`agentmem.learning.stages`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import attrs

from ..agents import learning_view, spec_for
from ..languages import clip_units
from ..records import Step, Trajectory
from ..rewards import is_negative, is_positive

__all__ = [
    "Digest",
    "Failure",
    "Recovery",
    "clip_words",
    "digest",
    "error_phrase",
    "safe_text",
    "value_text",
]

MAX_SUMMARY_WORDS = 64
_OP_LINE = re.compile(r"(?im)^\s*[-*>\d.)\s]*(ADD|MODIFY|DELETE|MERGE)\s*\|")
_SPACE = re.compile(r"\s+")


def safe_text(text: str, limit: int = 200) -> str:
    """Untrusted tool text made safe to quote in a prompt or a lesson.

    White space is folded onto one line, operation-like markers (``|``) and
    control characters are removed, and the text is cut to ``limit``
    characters: a tool output can never smuggle an operation line into what
    the model reads or into the library.
    """
    text = _OP_LINE.sub(" ", text)
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    text = text.replace("|", "/").replace("`", "'")
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def error_phrase(output: str, words: int = 8) -> str:
    """The gist of an error output: its message, without a leading "Error:", in a few words."""
    s = output.strip()
    if s.startswith("{"):
        try:
            obj = json.loads(s)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and "error" in obj:
            s = str(obj["error"])
    s = s.split("\n", 1)[0]
    s = re.sub(r"(?i)^(error|exception)(\s+during\s+execution)?\s*[:\-]?\s*", "", s)
    # "Class.method() got an unexpected ..." / "cat: x: No such file": the tool prefix says nothing
    s = re.sub(r"^[A-Za-z_][\w.]*\(\)\s*", "", s)
    s = safe_text(s, 160).strip(" .'\"")
    return clip_words(s, words)


def clip_words(text: str, n: int) -> str:
    """The first ``n`` words of ``text``, counted in every script
    (:func:`agentmem.languages.clip_units`: a character of Chinese, Japanese or Thai is
    a word), with ``...`` when something was cut."""
    return clip_units(text, n)


def value_text(value: Any, limit: int = 40) -> str:
    """A parameter value as it would appear in a lesson: short JSON, safe."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return safe_text(text, limit)


@attrs.frozen
class Failure:
    """A failed step: where, which tool, with what parameters, and the error's gist."""

    index: int
    tool: str
    params: dict[str, Any]
    error: str
    recovered: bool


@attrs.frozen
class Recovery:
    """A failed call later followed by a successful call of the same tool."""

    tool: str
    error: str
    failed_params: dict[str, Any]
    fixed_params: dict[str, Any]
    between: tuple[str, ...]


@attrs.frozen
class Digest:
    """What Stage 1 knows about one trajectory, derived from its steps alone."""

    trajectory_id: int | None
    task: str
    domains: tuple[str, ...]
    tools: tuple[str, ...]
    failures: tuple[Failure, ...]
    recoveries: tuple[Recovery, ...]
    key_params: tuple[tuple[str, tuple[str, ...]], ...]
    reward: float
    advantage: float
    accepted: bool | None

    @property
    def sign(self) -> str:
        return "+" if self.advantage > 0 else "-" if self.advantage < 0 else "0"

    @property
    def positive(self) -> bool:
        """A positive run of its group (:func:`agentmem.rewards.is_positive`)."""
        return is_positive(self.advantage, self.accepted)

    @property
    def negative(self) -> bool:
        """A negative run of its group (:func:`agentmem.rewards.is_negative`)."""
        return is_negative(self.advantage, self.accepted)

    def summary(self) -> str:
        """The data-derived Stage 1 summary: at most 64 words covering (a)-(d)."""
        dom = "/".join(self.domains) or "no-tool"
        seq = _sequence(self.tools)
        parts = [f"{dom} task, reward {self.reward:.2f} ({self.sign})."]
        parts.append(f"Strategy: {seq}." if seq else "Strategy: no tool calls.")
        if self.key_params:
            kp = "; ".join(f"{t}({', '.join(ps)})" for t, ps in self.key_params[:2])
            parts.append(f"Key parameters: {kp}.")
        unrec = [f for f in self.failures if not f.recovered]
        if self.recoveries:
            r = self.recoveries[0]
            parts.append(f"{r.tool} failed ('{r.error}') then recovered.")
        if unrec:
            f = unrec[0]
            parts.append(f"{f.tool} failed: '{f.error}'.")
        if not self.failures:
            parts.append("No tool errors.")
        verdict = {True: "accepted", False: "rejected", None: "pending"}[self.accepted]
        parts.append(f"Outcome: {verdict}.")
        return clip_words(" ".join(parts), MAX_SUMMARY_WORDS)


def _sequence(tools: Sequence[str], limit: int = 8) -> str:
    """Tool sequence with repeats collapsed: ``a -> b x3 -> c``."""
    out: list[str] = []
    for t in tools:
        if out and out[-1].split(" x")[0] == t:
            head, _, n = out[-1].partition(" x")
            out[-1] = f"{head} x{int(n or 1) + 1}"
        else:
            out.append(t)
    if len(out) > limit:
        out = [*out[: limit - 1], "...", out[-1]]
    return " -> ".join(out)


def _values(params: dict[str, Any]) -> list[str]:
    return sorted(json.dumps(v, sort_keys=True, ensure_ascii=False) for v in params.values())


def is_retry_of(failed: Step, later: Step) -> bool:
    """Whether ``later`` (same tool, succeeded) retries ``failed``: the same parameter names
    (a corrected value) or the same values (a corrected name). A call of the same tool on
    other arguments under other names is another call, not a recovery."""
    same_names = set(failed.params) == set(later.params)
    if same_names or _values(failed.params) == _values(later.params):
        return True
    # a coding agent's tool called again with its parameters kept and one added (Read with
    # a limit after "File content exceeds maximum allowed tokens")
    return (
        spec_for(failed.tool) is not None
        and len(set(later.params) - set(failed.params)) == 1
        and all(later.params.get(k) == v for k, v in failed.params.items())
    )


def _recoveries(steps: Sequence[Step]) -> tuple[list[Failure], list[Recovery]]:
    failures: list[Failure] = []
    recoveries: list[Recovery] = []
    for i, s in enumerate(steps):
        if s.success:
            continue
        later = next(
            (
                j
                for j in range(i + 1, len(steps))
                if steps[j].tool == s.tool and steps[j].success and is_retry_of(s, steps[j])
            ),
            None,
        )
        err = error_phrase(s.output)
        failures.append(Failure(i, s.tool, dict(s.params), err, later is not None))
        if later is not None and not any(r.tool == s.tool and r.error == err for r in recoveries):
            recoveries.append(
                Recovery(
                    tool=s.tool,
                    error=err,
                    failed_params=dict(s.params),
                    fixed_params=dict(steps[later].params),
                    between=tuple(dict.fromkeys(st.tool for st in steps[i + 1 : later])),
                )
            )
    return failures, recoveries


def digest(t: Trajectory, reward: float, advantage: float) -> Digest:
    """Build the digest of ``t`` given its reward and group advantage, from the run as
    learning sees it (:func:`agentmem.agents.learning_view`: its failure indices are
    that view's)."""
    t = learning_view(t)
    failures, recoveries = _recoveries(t.steps)
    domains = tuple(d for d, _ in Counter(s.domain or "general" for s in t.steps).most_common(2))
    # (c): the parameters of the tools that failed, else of the last state-changing call.
    key: dict[str, tuple[str, ...]] = {}
    for f in failures:
        key.setdefault(f.tool, tuple(f.params)[:3])
    if not key and t.steps:
        last = t.steps[-1]
        key[last.tool] = tuple(last.params)[:3]
    return Digest(
        trajectory_id=t.id,
        task=t.task,
        domains=domains,
        tools=tuple(s.tool for s in t.steps),
        failures=tuple(failures),
        recoveries=tuple(recoveries),
        key_params=tuple((k, v) for k, v in key.items() if v),
        reward=reward,
        advantage=advantage,
        accepted=t.accepted,
    )
