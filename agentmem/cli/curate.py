"""Commands for reading and curating the experience library: experiences, add, edit, remove,
retrieve, context, reindex."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from ..memory import Memory
from ..records import Experience
from ..retrieval.ranking import DEFAULT
from .main import LESSON_ID, cli, json_option, print_json, print_table, with_memory
from .terminal import echo

if TYPE_CHECKING:
    from ..projects import Scope

_domain_opt = click.option(
    "--domain", "-d", "domains", multiple=True, help="Search in this tool domain (repeatable)."
)
_tool_opt = click.option(
    "--tool", "-t", "tools", multiple=True, help="Search in this tool's domain (repeatable)."
)
_project_opt = click.option(
    "--project",
    type=click.Path(file_okay=False),
    help="Also the lessons served only in this project (a folder: its git root counts).",
)
_k_opt = click.option(
    "-k",
    "k",
    type=click.IntRange(min=1, max=1000),
    default=5,
    show_default=True,
    help="How many experiences.",
)
_min_score_opt = click.option(
    "--min-score",
    type=click.FloatRange(0.0, 1.0),
    default=None,
    help=f"Relevance floor: a lesson naming none of the tools must reach this fused score "
    f"(0-1; default {DEFAULT.min_score}; 0 returns every candidate).",
)


@cli.command()
@click.option(
    "--domain", "-d", "domains", multiple=True, help="Only these domains (plus domain-free)."
)
@click.option(
    "--project",
    type=click.Path(file_okay=False),
    help="Only the lessons served in this project: the global ones and its own.",
)
@json_option
@with_memory
def experiences(mem: Memory, domains: tuple[str, ...], project: str | None, as_json: bool) -> None:
    """List the live experience library, with each lesson's scope and evidence.

    The scope says where a lesson is served: "global" (everywhere), "project
    NAME" (a fact of that project, or a tool's rule seen in its runs only, until
    runs of a second project show it) or "machine" (a fact about the machine
    its runs ran on, such as a program missing from PATH); see README "Where a
    lesson is served". --json adds scope_kind, project, machine and why. ``support``
    and ``against`` count the learned groups / runs that support and contradict
    a lesson (``-`` for a lesson written by hand, which no session tests);
    ``--json`` adds when a group last confirmed and contradicted it, and its rule
    (the structured facts later sessions test it with) and ``use``: how often it
    was served and held out, and of the runs that met its situation how many
    followed it and how many made its mistake anyway (``repeated`` in the table:
    mistakes / situations; see `agentmem effect`). ``--json`` adds ``review``:
    ``held`` (never served until approved: `agentmem review`), ``approved`` or null.

    \b
    Examples:
      agentmem experiences
      agentmem experiences --domain fs --json
      agentmem experiences --project .
    """
    from ..projects import GLOBAL, Scope, machine_id, project_of

    exps = mem.experiences(domains=domains or None)
    scopes = mem.lesson_scopes()
    everywhere = Scope(None, None, None, "")
    uses = mem.served_counts()  # what the runs it was served to did (agentmem.served)
    reviewed = mem.review_states()  # held (never served until approved) or approved
    if project is not None:
        here, this = project_of(project), machine_id()
        exps = [
            e
            for e in exps
            if (s := scopes.get(e.id or 0, everywhere)).project in (None, here)
            and s.machine in (None, this)
        ]
    if as_json:
        print_json(
            [
                {
                    "id": e.id,
                    "text": e.text,
                    "domain": e.domain,
                    **_scope_fields(scopes.get(e.id or 0)),
                    "created_at": e.created_at,
                    "updated_at": e.updated_at,
                    **e.evidence(),
                    "rule": json.loads(e.rule) if e.rule else None,
                    "use": uses.get(e.id or 0),
                    "review": reviewed.get(e.id or 0),
                }
                for e in exps
            ]
        )
        return
    print_table(
        ["id", "domain", "scope", "support", "against", "repeated", "text"],
        [
            [
                e.id,
                e.domain or "-",
                scopes[e.id or 0].label if (e.id or 0) in scopes else GLOBAL,
                *_evidence_cells(e),
                _use_cell(uses.get(e.id or 0)),
                e.text,
            ]
            for e in exps
        ],
    )


def lesson_dict(mem: Memory, experience_id: int) -> dict[str, Any]:
    """One live lesson as ``experiences --json`` gives it (``agentmem show L12``)."""
    e = mem.get_experience(experience_id)
    use = mem.served_counts([experience_id]).get(experience_id)
    return {
        "id": e.id,
        "text": e.text,
        "domain": e.domain,
        **_scope_fields(mem.lesson_scopes().get(experience_id)),
        "created_at": e.created_at,
        "updated_at": e.updated_at,
        **e.evidence(),
        "rule": json.loads(e.rule) if e.rule else None,
        "use": use,
        "review": mem.review_states().get(experience_id),
    }


def show_lesson(mem: Memory, experience_id: int, *, as_json: bool) -> None:
    """``agentmem show L12``: one lesson, its scope, evidence and use."""
    from ..serving import marker

    d = lesson_dict(mem, experience_id)
    if as_json:
        print_json(d)
        return
    echo(f"lesson {d['id']} {marker(experience_id)}  domain {d['domain'] or '-'}  {d['scope']}")
    echo(f"text: {d['text']}")
    e = mem.get_experience(experience_id)
    support, against = _evidence_cells(e)
    echo(f"support (groups/runs): {support}  against: {against}")
    use = d["use"]
    if use:
        echo(
            f"served to {use['served']['prompts']} prompt(s), held out of "
            f"{use['held']['prompts']}; mistakes when served: {_use_cell(use)}"
        )
    else:
        echo("never served yet")
    if d["review"]:
        echo(f"review: {d['review']}")
    echo(f"created {d['created_at']}, updated {d['updated_at']}")


def _scope_fields(s: Scope | None) -> dict[str, Any]:
    """A lesson's scope as ``experiences --json`` and ``retrieve --json`` give it."""
    if s is None:
        return {"scope": "global", "scope_kind": None, "project": None, "machine": None}
    return {"scope": s.label, "scope_kind": s.kind, "project": s.project, "machine": s.machine}


def _use_cell(use: dict[str, dict[str, int]] | None) -> str:
    """``mistakes/situations`` of the runs a lesson was served to; ``-`` if never judged."""
    if not use or not use["served"]["judged"]:
        return "-"
    return f"{use['served']['repeated']}/{use['served']['situations']}"


def _evidence_cells(e: Experience) -> list[str]:
    """``groups/runs`` for and against a lesson; ``-`` when nothing ever counted it."""
    if not e.rule and not (e.support_groups or e.contradict_groups):
        return ["-", "-"]
    return [
        f"{e.support_groups}/{e.support_runs}",
        f"{e.contradict_groups}/{e.contradict_runs}",
    ]


@cli.command()
@click.argument("text")
@click.option("--domain", "-d", default="", help="Tool domain (default: domain-free).")
@click.option(
    "--project",
    type=click.Path(file_okay=False),
    help="Serve it only in this project (a folder: its git root counts).",
)
@with_memory
def add(mem: Memory, text: str, domain: str, project: str | None) -> None:
    """Add an experience by hand (at most 32 words: when and how to apply).

    \b
    Examples:
      agentmem add "Before kubectl apply, run kubectl diff to see what changes." -d k8s
      agentmem add "In this repo run tests with make check." --project .
    """
    e = mem.add(text, domain=domain, project=project)
    click.echo(f"added experience {e.id}" + (f", served only in {project}" if project else ""))
    _say_if_held(mem, e.id)


@cli.command()
@click.argument("experience_id", type=LESSON_ID)
@click.argument("text")
@click.option("--domain", "-d", default=None, help="New domain (default: unchanged).")
@with_memory
def edit(mem: Memory, experience_id: int, text: str, domain: str | None) -> None:
    """Replace experience EXPERIENCE_ID's text. Journaled; undo with 'agentmem undo'.

    \b
    Example:
      agentmem edit 12 "Run tests with -x to stop at the first failure."
    """
    mem.edit(experience_id, text, domain=domain)
    click.echo(f"edited experience {experience_id}")
    _say_if_held(mem, experience_id)


def _say_if_held(mem: Memory, experience_id: int | None) -> None:
    """A lesson that asks for a risky command is held: say so, and how to approve it."""
    if experience_id is not None and mem.is_held(experience_id):
        click.echo(
            f"held for review: it asks for a risky command and is not served until approved "
            f"(agentmem review; agentmem review approve {experience_id})"
        )


@cli.command()
@click.argument("experience_id", type=LESSON_ID)
@with_memory
def remove(mem: Memory, experience_id: int) -> None:
    """Delete experience EXPERIENCE_ID (12, or L12 as the injected text marks it).
    Journaled; undo with 'agentmem undo'.

    \b
    Examples:
      agentmem remove 12
      agentmem remove L12
    """
    mem.remove(experience_id)
    click.echo(f"removed experience {experience_id}")


@cli.command()
@click.argument("text")
@_domain_opt
@_tool_opt
@_k_opt
@_min_score_opt
@click.option(
    "--explain",
    is_flag=True,
    help="Show how each lesson was ranked: its BM25 rank (score), vector rank (cosine), "
    "rank of the tool it names among those past tasks like TEXT used, fused score, "
    "and why it passed the floor.",
)
@_project_opt
@json_option
@with_memory
def retrieve(
    mem: Memory,
    text: str,
    domains: tuple[str, ...],
    tools: tuple[str, ...],
    k: int,
    min_score: float | None,
    explain: bool,
    project: str | None,
    as_json: bool,
) -> None:
    """The experiences that best fit TEXT, best first, with their fused scores.

    Keyword (BM25) and vector search are fused; lessons naming a --tool come
    first. Scoped to the domains of --tool and --domain plus domain-free
    experiences; all domains when neither is given. Lessons below the
    relevance floor (--min-score) are left out. These are the lessons a
    prompt is served (team lessons included): nothing in a paused project,
    and a lesson whose claim fails here is withheld (agentmem log shows why).

    \b
    Examples:
      agentmem retrieve "rename a file in a subfolder" --tool mv -k 3
      agentmem retrieve "book a flight" --domain airline --json
      agentmem retrieve "send the report to my manager" --explain
    """
    hits = mem.retrieve(
        text,
        tools=tools or None,
        domains=domains or None,
        k=k,
        min_score=min_score,
        project=project,
    )
    if as_json:
        scopes = mem.lesson_scopes()
        mine = [h.experience.id for h in hits if h.experience.id and h.source == "private"]
        uses = mem.served_counts(mine)
        print_json(
            [
                {
                    **h.as_dict(explain=explain),
                    **_scope_fields(scopes.get(h.experience.id or 0)),
                    "use": uses.get(h.experience.id or 0) if h.source == "private" else None,
                }
                for h in hits
            ]
        )
        return
    if not explain:
        print_table(
            ["id", "score", "domain", "text"],
            [
                [h.experience.id, round(h.score, 4), h.experience.domain or "-", h.experience.text]
                for h in hits
            ],
        )
        return

    def rank(r: int | None, score: float | None) -> str:
        return "-" if r is None or score is None else f"{r} ({score:.3f})"

    print_table(
        ["id", "bm25 rank", "vector rank", "usage rank", "fused", "passed because", "text"],
        [
            [
                h.experience.id,
                rank(h.why.bm25_rank, h.why.bm25) if h.why else "-",
                rank(h.why.vector_rank, h.why.cosine) if h.why else "-",
                "-" if h.why is None or h.why.usage_rank is None else h.why.usage_rank,
                round(h.score, 4),
                h.reason,
                h.experience.text,
            ]
            for h in hits
        ],
    )
    if not hits:
        click.echo("(no lesson passed the relevance floor)", err=True)


@cli.command()
@click.argument("text")
@_domain_opt
@_tool_opt
@_k_opt
@_min_score_opt
@_project_opt
@click.option("--global", "global_only", is_flag=True, help="Only lessons of no project.")
@click.option(
    "--client",
    type=click.Choice(["claude-code", "codex"]),
    help="The coding agent that will read the lessons: a lesson about the other "
    "client's own tool is left out. Default: unknown (none left out).",
)
@with_memory
def context(
    mem: Memory,
    text: str,
    domains: tuple[str, ...],
    tools: tuple[str, ...],
    k: int,
    min_score: float | None,
    project: str | None,
    global_only: bool,
    client: str | None,
) -> None:
    """Print a block of lessons for TEXT, ready to paste into an agent's system prompt.

    Prints nothing when no experience fits (nothing passes the relevance
    floor). Fast enough to run before every prompt (no language model is
    loaded). The lessons of the current folder's project are served beside the
    global ones (--project: another project's; --global: global ones only).
    With AGENTMEM_SERVE=off in the environment it prints nothing.

    \b
    Examples:
      agentmem context "fix the failing test" --tool bash --tool edit
      agentmem context --project ~/src/app -- "$PROMPT"
      agentmem context -k 3 --global -- "$PROMPT" >> system-prompt.txt
      agentmem context --client codex -- "$PROMPT"
    """
    import os

    from ..paths import serving_off
    from ..serving import Query

    if serving_off():  # AGENTMEM_SERVE=off: prompt hooks serve nothing
        return
    query = Query(
        text,
        tools=tools or None,
        domains=domains or None,
        k=k,
        min_score=min_score,
        project=os.getcwd() if project is None else project,
        global_only=global_only,
        route="context",
        client=client,
    )
    block = mem.serve(query).text
    if block:
        echo(block)


@cli.command()
@click.option("--embedder", help="Embedder name (see docs); default: the current one.")
@with_memory
def reindex(mem: Memory, embedder: str | None) -> None:
    """Rebuild the vector and keyword indexes, for instance with a new embedding model.

    \b
    Example:
      agentmem reindex --embedder hash
    """
    n = mem.reindex(embedder)
    click.echo(f"reindexed {n} experiences with {mem.embedder.model_id}")
