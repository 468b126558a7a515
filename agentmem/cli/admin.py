"""Commands for keeping a library and its machine healthy: check, backup, restore,
doctor, settings, prune."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..backup import BEFORE_RESTORE_SUFFIX, backup_library, restore_library
from ..check import CheckReport, check_path
from ..errors import AgentMemError
from ..memory import Memory, default_db_path
from .main import cli, db_option, errors_as_click, json_option, print_json, with_memory


def library_path(db_path: str | None) -> Path:
    return Path(db_path) if db_path else default_db_path()


def _print_report(report: CheckReport) -> None:
    for p in report.problems:
        click.echo(str(p))
    if report.ok:
        n = len(report.warnings)
        warned = f" ({n} warning{'s' if n != 1 else ''})" if n else ""
        click.echo(f"ok: {report.summary_line()}{warned}")
    else:
        n = len(report.errors)
        click.echo(f"{n} problem{'s' if n != 1 else ''} in {report.path}", err=True)


@cli.command()
@json_option
@db_option
def check(db_path: str | None, as_json: bool) -> None:
    """Verify a library file and say in words what is wrong with it.

    Checks SQLite's integrity and foreign keys, the schema version (a file
    from a newer agentmem is an error; an older one is a warning, upgraded
    when any other command opens it), that the vector index matches the live
    experiences, that replaying the operations journal gives exactly the
    experiences the file holds, the sessions' bookkeeping, and that every
    trajectory's steps, step count and success rate agree. A learning
    session left 'running' by a killed process is a warning.

    The file is opened read-only: check never creates, upgrades or repairs
    anything. Exit status 0 when nothing is wrong (warnings allowed), 1 when
    something is.

    \b
    Examples:
      agentmem check
      agentmem check --db backup.db --json
      agentmem check || agentmem restore last-good.db
    """
    report = check_path(library_path(db_path))
    if as_json:
        print_json(report.as_dict())
    else:
        _print_report(report)
    if not report.ok:
        raise SystemExit(1)


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@db_option
def backup(db_path: str | None, file: str, force: bool) -> None:
    """Copy the library to FILE, consistently, even while agents write to it.

    Uses SQLite's online backup API: the copy is one snapshot of the library,
    a single self-contained file (no -wal beside it) readable by its owner
    only (0600). Refuses to replace an existing FILE unless --force. The copy
    is then checked as `agentmem check` would, and any problem is reported
    (the copy is kept: it is what the library holds).

    \b
    Examples:
      agentmem backup ~/backups/agentmem-$(date +%F).db
      agentmem backup --db agent.db agent-copy.db --force
    """
    src = library_path(db_path)
    with errors_as_click():
        result = backup_library(src, file, force=force)
    click.echo(f"backed up {src} to {result.path} ({result.bytes:,} bytes)")
    if result.report is not None and not result.report.ok:
        for p in result.report.errors:
            click.echo(str(p))
        click.echo(
            f"the copy has the problems above, like the library: run `agentmem check --db {src}`",
            err=True,
        )


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False, exists=True))
@click.option(
    "--force", is_flag=True, help=f"Replace an existing <db>{BEFORE_RESTORE_SUFFIX} file."
)
@db_option
def restore(db_path: str | None, file: str, force: bool) -> None:
    """Replace the library (--db) with the backup FILE.

    FILE is checked first (as `agentmem check` would) and refused if anything
    is wrong with it. The current library is kept as <db>.before-restore; if
    that file already exists, restore refuses unless --force (which replaces
    it). Stop the agents that write to the library before restoring: what
    they write meanwhile is lost. A backup from an older agentmem is upgraded
    the next time the library is opened.

    \b
    Examples:
      agentmem restore ~/backups/agentmem-2025-01-31.db
      agentmem restore --db agent.db agent-copy.db --force
    """
    target = library_path(db_path)
    with errors_as_click():
        result = restore_library(file, target, force=force)
    click.echo(f"restored {file} into {result.path} ({result.bytes:,} bytes)")
    if result.previous:
        click.echo(f"the library as it was is kept in {result.previous}")
    if result.report is not None and not result.report.ok:
        for p in result.report.problems:
            click.echo(str(p))
        raise SystemExit(1)


@cli.command()
@click.option(
    "--model",
    "model_spec",
    metavar="PATH|URL|NAME",
    help="The model to probe (default: $AGENTMEM_MODEL, else the packaged model).",
)
@click.option("--no-model", is_flag=True, help="Probe the build and the embedder only.")
@click.option(
    "--embedder",
    metavar="NAME",
    help="The embedder to probe (default: $AGENTMEM_EMBEDDER, else the default).",
)
@json_option
def doctor(model_spec: str | None, no_model: bool, embedder: str | None, as_json: bool) -> None:
    """Say whether the local model and the embedder will work on this machine.

    Each probe runs in a child process, so a llama.cpp build that dies here
    (SIGILL: built with -march=native on another CPU) is reported instead of
    taking agentmem down. It shows the llama-cpp-python build and the CPU
    features it was compiled for, against this CPU's (is it portable, or tied
    to one CPU?); the model file, its load time and tokens per second; the
    embedder, its load time and sentences per second. Exit status 1 when
    something will not work (learning then still runs, with --no-model's
    data-derived texts).

    \b
    Examples:
      agentmem doctor
      agentmem doctor --model ~/models/qwen2.5-1.5b-instruct-q4_k_m.gguf
      agentmem doctor --model http://127.0.0.1:8080/v1 --json
    """
    from ..doctor import all_ok, diagnose

    probes = diagnose(model_spec, embedder, use_model=not no_model)
    if as_json:
        print_json({"ok": all_ok(probes), "probes": [p.as_dict() for p in probes]})
    else:
        for p in probes:
            click.echo(f"{'ok' if p.ok else 'FAIL':4}  {p.name}: {p.summary}")
            for key in ("file", "server", "system_info", "worker_pid"):
                if key in p.details:
                    click.echo(f"      {key}: {p.details[key]}")
            if p.advice:
                click.echo(f"      -> {p.advice}")
    if not all_ok(probes):
        raise SystemExit(1)


def _parse_bytes(text: str) -> int:
    """``65536``, ``64KiB``, ``1MiB``, ``0`` or ``off``: a number of bytes."""
    t = text.strip().lower().replace(" ", "")
    if t in ("off", "none"):
        return 0
    for suffix, factor in (("kib", 1024), ("kb", 1000), ("mib", 2**20), ("mb", 10**6)):
        if t.endswith(suffix):
            return int(float(t[: -len(suffix)]) * factor)
    return int(t)


#: The settings `agentmem settings` can change: name -> (what, how to read a value).
SETTABLE = {
    "output_cap": "bytes of a tool output kept (head and tail); 0 or off: no cap",
    "reward": "composite (w1 rho_s + w2 rho_a) or binary (R_state x R_action)",
    "reward_weights": "the composite reward's w1,w2 (>= 0, summing to 1)",
    "holdout": "share of prompts a served lesson is withheld from, to measure it (0 to 0.5)",
}


@cli.command()
@click.argument("key", required=False, type=click.Choice(sorted(SETTABLE)))
@click.argument("value", required=False)
@json_option
@with_memory
def settings(mem: Memory, key: str | None, value: str | None, as_json: bool) -> None:
    """Show the library's settings, or set one (KEY VALUE).

    output_cap: the most bytes of a tool output stored (default 64KiB); a
    longer output keeps its head and tail with a marker giving its length
    (outputs already recorded are kept as they are). reward and
    reward_weights: the reward learning sessions use. holdout: the share of
    prompts each served lesson is withheld from, so that `agentmem effect` can
    compare (off: none).

    \b
    Examples:
      agentmem settings
      agentmem settings output_cap 1MiB
      agentmem settings output_cap off
      agentmem settings reward_weights 1.0,0.0
      agentmem settings holdout 0.1
    """
    if key is not None and value is not None:
        try:
            if key == "output_cap":
                mem.set_output_cap(_parse_bytes(value))
            elif key == "reward":
                mem.set_reward_kind(value)
            elif key == "holdout":
                mem.set_holdout(0.0 if value == "off" else float(value))
            else:
                w1, w2 = (float(x) for x in value.split(","))
                mem.set_reward_weights(w1, w2)
        except ValueError as e:  # InvalidRecordError is one too, with its own message
            why = str(e) if isinstance(e, AgentMemError) else f"{value!r} is not a value of {key}"
            raise click.BadParameter(f"{why} ({key}: {SETTABLE[key]})") from None
    shown = {
        "output_cap": mem.output_cap,
        "reward": mem.reward_kind,
        "reward_weights": [mem.reward_weights.w1, mem.reward_weights.w2],
        "holdout": mem.holdout,
        "model": mem.get_setting("model"),
        "embedder": mem.get_setting("embedder"),
    }
    if key is not None:
        shown = {key: shown[key]}
    if as_json:
        print_json(shown)
        return
    for k, v in shown.items():
        click.echo(f"{k} = {json.dumps(v)}" + (f"  ({SETTABLE[k]})" if k in SETTABLE else ""))


def _mb(n: int | None) -> str:
    return "?" if n is None else f"{n / 1e6:,.1f} MB"


@cli.command()
@click.option(
    "--before",
    metavar="DATE",
    help="Prune runs recorded before DATE: 2025-01-31, 2025-01-31T12:00:00Z, or an age (90d, 12h).",
)
@click.option(
    "--keep-last",
    type=click.IntRange(min=0),
    metavar="N",
    help="Keep the newest N runs; prune the older ones.",
)
@click.option(
    "--dry-run", is_flag=True, help="Say what would go and the bytes freed; change nothing."
)
@json_option
@with_memory
def prune(
    mem: Memory, before: str | None, keep_last: int | None, dry_run: bool, as_json: bool
) -> None:
    """Remove old runs (trajectories, their steps and feedback); keep what was learned.

    Every experience, the whole journal (so any session can still be undone)
    and the sessions stay; the sessions keep naming the runs they learned from,
    which are marked pruned (view learned_trajectories). Runs shared with a
    team that are not pushed yet stay. Given both --before and --keep-last, a
    run goes only if both say so. The rows go in one transaction; then the
    space is given back to the file system (the first prune of a file made by
    an older agentmem rewrites it once with VACUUM). Agents may keep reading
    the library meanwhile.

    \b
    Examples:
      agentmem prune --before 90d --dry-run
      agentmem prune --before 2025-01-01
      agentmem prune --keep-last 10000 --json
    """
    if before is None and keep_last is None:
        raise click.UsageError("say which runs to prune: --before DATE, --keep-last N or both")
    r = mem.prune(before=before, keep_last=keep_last, dry_run=dry_run)
    if as_json:
        print_json(r.as_dict())
        return
    span = f", recorded {r.oldest[:10]} to {r.newest[:10]}" if r.oldest and r.newest else ""
    what = (
        f"{r.trajectories:,} trajectories ({r.steps:,} steps, {r.feedback:,} feedback events, "
        f"{r.groups:,} groups; {r.learned:,} of them learned from){span}"
    )
    if dry_run:
        click.echo(f"would prune {what}; about {_mb(r.bytes_estimated)} would be freed")
    else:
        click.echo(f"pruned {what}")
        if r.trajectories:
            click.echo(
                f"the library went from {_mb(r.bytes_before)} to {_mb(r.bytes_after)} "
                f"({_mb(r.bytes_freed)} given back, {r.reclaimed})"
            )
    if r.kept_unshared:
        click.echo(f"kept {r.kept_unshared:,} old runs still waiting to be shared with the team")
