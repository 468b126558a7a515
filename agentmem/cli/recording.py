"""Commands that put trajectories in and read them back.

record, import, feedback, groups, show, stats, domains.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from ..ingest import parse_jsonl, parse_openai
from ..memory import Memory
from .main import (
    ID,
    cli,
    errors_as_click,
    json_option,
    print_json,
    print_table,
    read_input,
    with_memory,
)
from .terminal import echo

if TYPE_CHECKING:
    from ..learning.grouping import Grouping, LearningGroup
    from ..rewards import GroupReport

#: What ``import --format`` reads besides the transcript formats.
RECORD_FORMATS = ("openai", "jsonl")


class TranscriptFormats(click.Choice):  # type: ignore[type-arg]
    """The registered transcript formats (:mod:`agentmem.importers.formats`), asked when the
    command runs, so a format registered after the CLI was built is a choice too."""

    def __init__(self, *, extra: Sequence[str] = ()) -> None:
        self._extra = tuple(extra)
        super().__init__([])

    @property  # type: ignore[override]
    def choices(self) -> tuple[str, ...]:
        from ..importers.formats import names

        return self._extra + names()

    @choices.setter
    def choices(self, _value: Any) -> None:  # click.Choice.__init__ sets it
        pass


@cli.command()
@click.argument("file", type=click.Path(allow_dash=True))
@click.option("--skip-bad", is_flag=True, help="Record the good lines and report the bad ones.")
@click.option(
    "--share/--no-share",
    default=None,
    help="Share these runs with the team (redacted), or keep them here; default: the team's "
    "share setting (agentmem team join --share).",
)
@json_option
@with_memory
def record(mem: Memory, file: str, skip_bad: bool, share: bool | None, as_json: bool) -> None:
    """Record trajectories from FILE (JSON lines; - reads standard input).

    One trajectory per line:

    \b
      {"task": "...", "group": "...",          # group: optional, defaults to the task
       "steps": [{"tool": "bash", "params": {"cmd": "ls"},
                  "output": "a.txt", "success": true}],
       "accepted": true,                       # optional: true, false or null
       "condition": "<|high reward|>",         # optional reward token
       "meta": {...}}                          # optional

    A bad line stops the whole file (nothing is recorded) unless --skip-bad.
    Prints the new trajectory ids.

    \b
    Examples:
      agentmem record runs.jsonl
      my-agent --dump | agentmem record -
      agentmem record runs.jsonl --share     # also queue them for the team
    """
    data = read_input(file)
    result = parse_jsonl(io.BytesIO(data), skip_bad=skip_bad)
    ids = mem.record_many(result.trajectories, share=share)
    _report_recorded(ids, result.errors, as_json)


def _report_recorded(ids: list[int], errors: tuple[str, ...], as_json: bool) -> None:
    if as_json:
        print_json({"ids": ids, "skipped": list(errors)})
    else:
        for i in ids:
            click.echo(i)
        for e in errors:
            click.echo(f"skipped {e}", err=True)
    if errors:
        click.echo(f"recorded {len(ids)}, skipped {len(errors)} bad line(s)", err=True)


@cli.command(name="import")
@click.argument("paths", nargs=-1, type=click.Path(allow_dash=True))
@click.option(
    "--format",
    "fmt_",
    type=TranscriptFormats(extra=RECORD_FORMATS),
    default=None,
    help="openai: chat transcripts with tool_calls; jsonl: agentmem's own lines; "
    "claude-code, codex, anthropic (and any registered format): agent transcripts (see below). "
    "Default: detected from the first file.",
)
@click.option(
    "--skip-bad", is_flag=True, help="openai/jsonl: import the good records, report the bad."
)
@click.option(
    "--share/--no-share",
    default=None,
    help="Share these runs with the team (redacted), or keep them here; default: the team's "
    "share setting (agentmem team join --share).",
)
@click.option(
    "--project",
    type=click.Path(file_okay=False),
    help="The project the turns belong to (default: each turn's git root or folder).",
)
@click.option("--force", is_flag=True, help="Read transcripts even when they look unchanged.")
@click.option(
    "--verbose", "-v", is_flag=True, help="Also count the known lines that carry no turn."
)
@json_option
@with_memory
def import_(
    mem: Memory,
    paths: tuple[str, ...],
    fmt_: str | None,
    skip_bad: bool,
    share: bool | None,
    project: str | None,
    force: bool,
    verbose: bool,
    as_json: bool,
) -> None:
    """Import trajectories from PATHS in another format.

    --format openai reads OpenAI chat transcripts (a JSON array or JSON lines,
    each with "messages", or tau-bench's "traj"): every tool call becomes a
    step, a tool output starting with "Error" or a JSON {"error": ...} is a
    failed step, tau-bench's task_id becomes the group, and its recorded
    reward (>= 0.5) the user's acceptance.

    --format claude-code, codex and anthropic read coding agents' transcripts:
    a Claude Code session file, project folder or all of ~/.claude/projects (the
    default); a Codex rollout or ~/.codex/sessions (the default); an Anthropic
    Messages API conversation file. One trajectory per user prompt (the task),
    with the tool calls up to the next prompt as steps; sub-agent runs are
    trajectories of their own. A failed step: is_error, a non-zero exit code,
    a failed patch. Verdicts only from explicit signals: an interrupted turn is
    rejected, a denied tool call corrected. Turns imported before are skipped,
    so run it as often as you like; a turn still being written waits for the
    next run. Secrets are redacted.

    \b
    Examples:
      agentmem import gpt-4o-airline.json --format openai
      agentmem import --format claude-code                  # all of ~/.claude/projects
      agentmem import --format claude-code ~/.claude/projects/-home-me-app
      agentmem import --format codex ~/.codex/sessions/2026/01/05
      agentmem import --format anthropic chat.json --project ~/src/app
      agentmem import --format codex -v                     # also count the lines skipped
    """
    fmt_ = fmt_ or detect_format(paths, say=not as_json)
    if fmt_ in RECORD_FORMATS:
        if len(paths) != 1:
            raise click.UsageError(f"--format {fmt_} reads exactly one FILE (or - for stdin)")
        data = read_input(paths[0])
        if fmt_ == "openai":
            result = parse_openai(data, skip_bad=skip_bad)
        else:
            result = parse_jsonl(io.BytesIO(data), skip_bad=skip_bad)
        ids = mem.record_many(result.trajectories, share=share)
        if as_json:
            print_json({"ids": ids, "skipped": list(result.errors)})
        else:
            groups = len({t.group for t in result.trajectories})
            click.echo(f"imported {len(ids)} trajectories in {groups} groups (ids {_span(ids)})")
            for e in result.errors:
                click.echo(f"skipped {e}", err=True)
        return
    from ..importers.run import default_path

    if "-" in paths:
        raise click.UsageError(f"--format {fmt_} reads files and folders, not standard input")
    with errors_as_click():
        targets = list(paths) or [str(default_path(fmt_))]
        progress = _progress(as_json)
        report = mem.import_transcripts(
            fmt_, targets, project=project, force=force, progress=progress, share=share
        )
    if progress is not None and report.files + report.unchanged_files > 1:
        click.echo("", err=True)  # end the progress line
    if as_json:
        print_json(report.as_dict())
        return
    first, *rest = report.lines(verbose=verbose)
    click.echo(first)
    for line in rest:
        click.echo(
            line, err=line.startswith(("damaged", "skipped", "incomplete", "known", "repaired"))
        )


def detect_format(paths: Sequence[str], *, say: bool = False) -> str:
    """The format of the first of ``paths`` (``say``: and tell, on standard error)."""
    fmt = _detect(paths)
    if say:
        click.echo(f"reading {fmt} (detected; --format chooses another)", err=True)
    return fmt


def _detect(paths: Sequence[str]) -> str:
    """A transcript format whose detector knows the first file's first JSON objects, else
    agentmem's own JSON lines (objects with ``steps``), else OpenAI chat transcripts."""
    from pathlib import Path

    from ..importers.formats import formats, looks_like, sniff

    if not paths or paths[0] == "-":
        raise click.UsageError(
            "say which format with --format (claude-code or codex read their default "
            "folders; standard input is openai or jsonl)"
        )
    first = Path(paths[0]).expanduser()
    if first.is_dir():
        for f in formats():
            try:
                found = f.discover(first.absolute())
            except Exception:
                continue
            for bundle in found[:3]:
                if bundle.files and f.detect(sniff(bundle.files[0])):
                    return f.name
        raise click.UsageError(f"no transcript format recognises the files in {first}: --format")
    objs = sniff(first)
    known = looks_like(objs, besides="")
    if known is not None:
        return known.name
    if objs and all("steps" in o for o in objs):
        return "jsonl"
    return "openai"


def _progress(quiet: bool) -> Any:
    if quiet or not sys.stderr.isatty():
        return None
    return lambda msg: click.echo(f"\r{msg[:100]:<100}", err=True, nl=False)


def _span(ids: list[int]) -> str:
    if not ids:
        return "none"
    return f"{ids[0]}-{ids[-1]}" if len(ids) > 1 else str(ids[0])


@cli.command()
@click.argument("trajectory_id", type=ID)
@click.option("--accept", "kind", flag_value="accept", help="The user accepted the output.")
@click.option("--correct", "kind", flag_value="correct", help="The user corrected the output.")
@click.option("--reject", "kind", flag_value="reject", help="The user rejected the output.")
@click.option("--note", help="Optional free text kept with the event.")
@click.option(
    "--state-ok/--state-wrong",
    "state_ok",
    default=None,
    help="Whether the final environment state matched the goal (binary reward's R_state).",
)
@with_memory
def feedback(
    mem: Memory, trajectory_id: int, kind: str | None, note: str | None, state_ok: bool | None
) -> None:
    """Record the user's verdict on trajectory TRAJECTORY_ID.

    Without feedback a trajectory counts as accepted 120 s after it was
    recorded (the paper's window); the latest explicit verdict always wins.

    \b
    Examples:
      agentmem feedback 42 --accept
      agentmem feedback 42 --reject --note "deleted the wrong file"
      agentmem feedback 42 --state-ok
    """
    if kind is None and state_ok is None:
        raise click.UsageError("say --accept, --correct or --reject (or --state-ok/--state-wrong)")
    if state_ok is not None:
        mem.set_state(trajectory_id, state_ok)
        click.echo(f"trajectory {trajectory_id}: state {'ok' if state_ok else 'wrong'}")
    if kind is not None:
        mem.feedback(trajectory_id, kind, note=note)
        click.echo(f"trajectory {trajectory_id}: {kind}")


@cli.command()
@click.option(
    "--reward",
    type=click.Choice(["composite", "binary"]),
    help="Reward to use (default: the library's).",
)
@click.option(
    "--status",
    type=click.Choice(["ready", "degenerate", "pending"]),
    help="Only groups in this state.",
)
@click.option("--diagnose", is_flag=True, help="Degeneracy diagnostics instead of the list.")
@click.option(
    "--grouping",
    type=click.Choice(["exact", "similar", "auto"]),
    default="auto",
    show_default=True,
    help="Also show the groups a session would form from runs outside exact groups: "
    "similar tasks (similar), and each run's own corrections (auto).",
)
@json_option
@with_memory
def groups(
    mem: Memory,
    reward: str | None,
    status: str | None,
    diagnose: bool,
    grouping: str,
    as_json: bool,
) -> None:
    """Task groups with their rewards, advantages, readiness and degeneracy.

    A group is ready when it has >= 2 trajectories and none waits for its
    acceptance window; degenerate when every trajectory got the same reward
    (sigma < 1e-8), so it carries no learning signal. Below them: the groups
    a learning session would form from the runs no exact group uses (see
    'agentmem learn --grouping'): correction pairs (a run's failed call and
    the call that worked after one change) and similar-task groups, with
    their runs and why they were put together.

    \b
    Examples:
      agentmem groups
      agentmem groups --status ready --json
      agentmem groups --grouping exact
      agentmem groups --diagnose
    """
    if diagnose:
        _print_diagnosis(mem, as_json)
        return
    plan = mem.learning_groups(grouping, reward=reward)
    reports = [g for g in plan.reports if status is None or g.status == status]
    formed = [g for g in plan.groups if g.kind != "exact"]
    if as_json:
        print_json(
            [{"kind": "exact", **g.as_dict()} for g in reports] + [g.as_dict() for g in formed]
        )
        return
    _print_exact_groups(reports)
    if grouping == "exact":
        return
    _print_formed_groups(plan, formed)


def _print_diagnosis(mem: Memory, as_json: bool) -> None:
    """``groups --diagnose``: the degeneracy diagnostics of every reward."""
    from ..rc import diagnose as run_diagnose
    from .rc import print_diagnosis

    report = run_diagnose(mem)
    if as_json:
        print_json(report)
    else:
        print_diagnosis(report)


def _print_exact_groups(reports: Sequence[GroupReport]) -> None:
    """The exact groups' table (rewards, advantages, conditions) and how many are ready."""
    rows = []
    for g in reports:
        st = g.stats
        rewards = " ".join(_short(m.reward) for m in g.members)
        advs = " ".join(_short(m.advantage, signed=True) for m in g.members)
        conds = ",".join(f"{k}:{v}" for k, v in g.conditions.items() if k != "none")
        rows.append(
            [g.key[:40], g.size, g.status, None if st is None else st.std, rewards, advs, conds]
        )
    print_table(["group", "G", "status", "sigma", "rewards", "advantages", "conditions"], rows)
    ready = sum(1 for g in reports if g.status == "ready")
    degenerate = sum(1 for g in reports if g.status == "degenerate")
    click.echo(
        f"\n{len(reports)} groups: {ready} ready, {degenerate} degenerate, "
        f"{len(reports) - ready - degenerate} pending"
    )


def _print_formed_groups(plan: Grouping, formed: Sequence[LearningGroup]) -> None:
    """The groups formed from single runs: corrections (of every run), then similar tasks
    (of the runs outside ready exact groups)."""
    fixes = [g for g in formed if g.kind == "correction"]
    similar = [g for g in formed if g.kind == "similar"]
    if plan.turns:
        click.echo(
            f"\n{len(plan.turns)} run(s) are turns of a conversation, not tasks (replies, "
            "choices, slash commands, notifications): in no exact group"
        )
    click.echo(
        f"\n{len(fixes)} run(s) with their own corrections; from the {plan.free_runs} runs "
        f"outside ready exact groups, {len(similar)} similar-task group(s)"
        + ("" if plan.theta_task is None else f" (theta_task {plan.theta_task:.2f})")
    )
    if fixes:
        click.echo("")
        print_table(
            ["run", "kind", "status", "failed", "worked", "why"],
            [
                [
                    g.trajectory_ids[0],
                    c.kind,
                    "learned" if g.learned else "ready",
                    c.failed + 1,
                    c.fixed + 1,
                    c.why,
                ]
                for g in fixes
                for c in g.corrections
            ],
        )
    if similar:
        click.echo("")
        print_table(
            ["runs", "status", "rewards", "advantages", "why"],
            [
                [
                    ",".join(map(str, g.trajectory_ids)),
                    "learned" if g.learned else "ready",
                    " ".join(_short(r) for r in g.stats.rewards),
                    " ".join(_short(a, signed=True) for a in g.stats.advantages),
                    g.reason,
                ]
                for g in similar
            ],
        )


def _short(v: float | None, signed: bool = False) -> str:
    if v is None:
        return "-"
    return f"{v:+.2f}" if signed else f"{v:.2f}"


@cli.command()
@click.argument("what", metavar="ID")
@click.option(
    "--full", is_flag=True, help="Print whole tool outputs, not the first 300 characters."
)
@json_option
@with_memory
def show(mem: Memory, what: str, full: bool, as_json: bool) -> None:
    """Show one trajectory (ID 17: task, group, steps and outcome) or one lesson (ID L12,
    as the injected text marks it: its text, scope, evidence and use).

    \b
    Examples:
      agentmem show 17 --full
      agentmem show L12
    """
    ctx = click.get_current_context()
    if what.strip()[:1] in ("L", "l", "["):
        from .curate import show_lesson
        from .main import LESSON_ID

        show_lesson(mem, LESSON_ID.convert(what, ctx.command.params[0], ctx), as_json=as_json)
        return
    trajectory_id = int(ID.convert(what, ctx.command.params[0], ctx))  # type: ignore[arg-type]
    t = mem.get_trajectory(trajectory_id)
    if as_json:
        print_json(_trajectory_dict(t))
        return
    verdict = {None: "pending", True: "accepted", False: "rejected"}[t.accepted]
    echo(f"trajectory {t.id}  group {t.group}  source {t.source}  {verdict}")
    if t.condition:
        echo(f"condition: {t.condition}")
    echo(f"task: {t.task}")
    echo(f"steps: {len(t.steps)}, success rate {t.success_rate:.2f}")
    for i, s in enumerate(t.steps, 1):
        mark = "ok " if s.success else "ERR"
        out = s.output if full else (s.output[:300] + ("..." if len(s.output) > 300 else ""))
        echo(f"  {i:>3} {mark} [{s.domain}] {s.tool}({_params(s.params)})")
        if out:
            echo("        -> " + out.replace("\n", "\n           "))


def _params(p: dict[str, Any]) -> str:
    import json

    text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in p.items())
    return text if len(text) < 200 else text[:200] + "..."


def _trajectory_dict(t: Any) -> dict[str, Any]:
    return {
        "id": t.id,
        "task": t.task,
        "group": t.group,
        "source": t.source,
        "condition": t.condition,
        "accepted": t.accepted,
        "state_ok": t.state_ok,
        "meta": t.meta,
        "created_at": t.created_at,
        "success_rate": t.success_rate,
        "steps": [
            {
                "tool": s.tool,
                "domain": s.domain,
                "params": s.params,
                "output": s.output,
                "success": s.success,
            }
            for s in t.steps
        ],
    }


@cli.command()
@json_option
@with_memory
def stats(mem: Memory, as_json: bool) -> None:
    """Counts of what the library holds.

    \b
    Example:
      agentmem stats --json
    """
    s = mem.stats()
    if as_json:
        print_json(s)
        return
    width = max(len(k) for k in s)
    for k, v in s.items():
        click.echo(f"{k.replace('_', ' '):<{width}}  {v}")


@cli.command()
@click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="TOOL=DOMAIN",
    help="Map a tool to a domain in this library (repeatable).",
)
@click.option(
    "--unset", "removals", multiple=True, metavar="TOOL", help="Remove a tool's override."
)
@click.argument("tools", nargs=-1)
@json_option
@with_memory
def domains(
    mem: Memory,
    assignments: tuple[str, ...],
    removals: tuple[str, ...],
    tools: tuple[str, ...],
    as_json: bool,
) -> None:
    """Show or change which tool domain (fs, shell, search, k8s, ...) a tool belongs to.

    With TOOLS, prints each tool's domain; with no arguments, the library's
    overrides. Unknown tools belong to 'general'.

    \b
    Examples:
      agentmem domains bash read_file kubectl
      agentmem domains --set deploy_service=k8s --unset my_tool
    """
    for a in assignments:
        tool, sep, domain = a.partition("=")
        if not sep or not tool or not domain:
            raise click.BadParameter(f"expected TOOL=DOMAIN, got {a!r}", param_hint="--set")
        mem.set_domain(tool, domain)
    for tool in removals:
        mem.set_domain(tool, None)
    mapping = {t: mem.domain_of(t) for t in tools} if tools else mem.domains()
    if as_json:
        print_json(mapping)
    else:
        print_table(["tool", "domain"], sorted(mapping.items()))
