"""The demo: agentmem's main job on its embedded defaults and bundled sample data."""

from __future__ import annotations

import io
from importlib import resources

import click

from ..ingest import parse_jsonl
from .learning import print_report
from .main import cli, open_memory


def sample_bytes() -> bytes:
    """The bundled sample: 6 BFCL v4 multi-turn tasks x 4 rollouts, run in BFCL's simulators."""
    return resources.files("agentmem").joinpath("data/sample.jsonl").read_bytes()


@cli.command()
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False),
    default="agentmem-demo.db",
    show_default=True,
    help="Library file for the demo (not your real library).",
)
@click.option(
    "--model", "model_spec", metavar="PATH|URL|NAME", help="Let a model phrase (see learn)."
)
@click.option("--no-model", is_flag=True, help="Data-derived texts only (the default).")
def demo(db_path: str, model_spec: str | None, no_model: bool) -> None:
    """Record the bundled sample, learn from it, and retrieve: agentmem's main job.

    The sample is 24 trajectories of 6 tasks from BFCL v4 multi-turn (file
    system, messaging, trading, travel, vehicle APIs), run through BFCL's tool
    simulators: in each task, one rollout is right and the others make a
    known mistake. Running it again reuses the recorded sample.

    \b
    Examples:
      agentmem demo
      agentmem demo --db /tmp/demo.db
      agentmem demo --model gemma3-270m   # pip install 'agentmem[model]' first
    """
    with open_memory(db_path) as mem:
        if model_spec:
            mem.use_model(model_spec)
        if mem.stats()["trajectories"] == 0:
            ids = mem.record_many(parse_jsonl(io.BytesIO(sample_bytes())).trajectories)
            click.echo(f"recorded {len(ids)} sample trajectories into {db_path}")
        ready = [g for g in mem.groups() if g.usable]
        use = False if no_model else (True if model_spec else None)
        with_model = use is True or (use is None and mem.model_chosen)
        click.echo(
            f"{len(ready)} task groups carry a learning signal; learning "
            f"({'with the model' if with_model else 'from the data'})...\n"
        )
        report = mem.learn(use_model=use, progress=lambda m: click.echo(f"  {m}", err=True))
        print_report(report)
        click.echo("\nThe library now holds:")
        for e in mem.experiences():
            click.echo(f"  [{e.id}] ({e.domain or '-'}) {e.text}")
        task = "Move the report into the archive folder and tell my manager"
        click.echo(
            f'\nWhat an agent would put in its prompt for "{task}" (tools mv, send_message):'
        )
        click.echo(mem.context(task, tools=["mv", "send_message"], k=3) or "(nothing fits)")
