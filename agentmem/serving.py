"""The one serving path: a :class:`Query` in, the lessons a prompt gets out, logged once.

Every route that puts lessons into an agent's prompt ends in :func:`serve`: the Claude
Code and Codex ``UserPromptSubmit`` hooks and ``agentmem context`` (through
:func:`agentmem.context.serve_file`, which opens the file read-only when it can and
with :class:`agentmem.Memory` when it must), the MCP tools ``agentmem_context`` and
``agentmem_retrieve``, and the API (:meth:`agentmem.Memory.serve`,
:meth:`~agentmem.Memory.context`). :func:`serve` does, in this order:

1. **project**: a paused or excluded project (:mod:`agentmem.storage.project_states`)
   is served nothing, and nothing is logged;
2. **search**: the private library through the one retrieval pipeline
   (:func:`agentmem.retrieval.pipeline.search`), and, when the library is in a team and
   the query allows it, the team replica the same way (:func:`team_lessons`);
3. **merge**: both lists by score, a private lesson first on a tie, a team lesson with
   a private one's text left out (:func:`agentmem.team.reads.merge_hits`);
4. **filter**: each lesson, best first, passes every filter of :data:`FILTERS` or is
   withheld with the first filter's reason, until ``k`` lessons pass (when a filter
   withheld some and the search may hold more, it runs once more :data:`FILTER_MARGIN`
   lessons deeper, so the next take the withheld lessons' places);
5. **holdout**: the lessons :func:`agentmem.served.split` withholds for the effect
   measurement;
6. **log**: one line in the served log (:func:`agentmem.served.record`), only when a
   lesson was served, held out or withheld: ids, why each fitted, what was held, the
   team lessons' texts; a prompt given nothing leaves no line;
7. **format**: the block (:func:`agentmem.retrieval.format_context`), each private
   lesson marked with its id (``[L12]``, :func:`marker`; ``agentmem show L12``) and
   each team lesson with ``(team)``.

:func:`select` is steps 1 to 4 alone (no holdout, no log, no text):
:meth:`agentmem.Memory.retrieve` is a view of it, so what the API retrieves for a query
is what a prompt is served for it, in the same order.

Everything that can fail (an index of another embedder, an unreadable replica) fails
in steps 1 to 3, before anything is written, so a caller that falls back to another
connection never logs a prompt twice.

The prompt hook imports this module: it imports neither attrs, click, sqlite-utils
nor numpy (:class:`Query` is a small frozen class written out for that reason).
"""

# No ``from __future__ import annotations``: the NamedTuple fields of Lesson and Served are
# then types, not strings that typing compiles (the first compile() of a process costs the
# prompt hook, which imports this module, about 2 ms).
import os
import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from . import served as served_log
from .errors import InvalidRecordError, TeamError
from .retrieval import format_context
from .retrieval.pipeline import Found, search
from .retrieval.ranking import Evidence
from .storage import project_states, settings, vector_index

__all__ = [
    "FILTERS",
    "FILTER_FAILURES",
    "FILTER_MARGIN",
    "MARKER",
    "MAX_CONVERSATION_CHARS",
    "Filter",
    "Lesson",
    "Query",
    "Served",
    "finish",
    "lesson_id",
    "marker",
    "select",
    "serve",
    "team_lessons",
]

Vector = Sequence[float]

#: How a private lesson is marked in the injected text: ``[L12]`` for experience 12.
MARKER = "[L{id}]"
_LESSON_ID = re.compile(r"\[?[Ll]?(\d{1,19})\]?")


def marker(experience_id: int) -> str:
    """The mark of lesson ``experience_id`` in an injected block (``[L12]``)."""
    return MARKER.format(id=experience_id)


def lesson_id(text: str) -> int:
    """The experience id a user wrote: ``12``, ``L12`` or ``[L12]`` (as the injected text
    marks it). ValueError for anything else."""
    m = _LESSON_ID.fullmatch(text.strip())
    if m is None or not 1 <= int(m.group(1)) < 2**63:
        raise ValueError(f"{text!r} is not a lesson id (12, L12 or [L12])")
    return int(m.group(1))


def _names(value: Sequence[str] | None, what: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise InvalidRecordError(f"{what} must be a sequence of names, not one string")
    out = tuple(value)
    if not all(isinstance(v, str) for v in out):
        raise InvalidRecordError(f"{what} must be names (strings)")
    return out


#: The most of a query's conversation that is kept (:attr:`Query.conversation`).
MAX_CONVERSATION_CHARS = 4000


class Query:
    """What a prompt asks of the library, validated once.

    ``text``: the prompt (or task). ``tools``/``domains``: the tools the agent is about
    to use and the domains to search, if known (None: every domain). ``k``: at most
    this many lessons. ``min_score``: overrides the relevance floor. ``conversation``:
    what came just before the prompt (the agent's last message, the user's previous
    prompt: :func:`agentmem.hooks.recent.conversation`), searched with the prompt
    (:attr:`searched`) for a prompt that says little; it chooses lessons only: the served
    log's prompt hash and the holdout read ``text`` alone. ``project``: the
    folder the agent works in (its git root counts; lessons of that project are served
    beside the global ones). ``global_only``: only lessons of no project, whatever
    ``project`` says. ``team``: merge the team replica's lessons (in a team). ``route``
    and ``session`` (the client's session id) go into the served log. ``client``: the
    coding agent asking (``claude-code``, ``codex``; None: unknown), whose standing lessons
    about another client's tool are left out.

    Frozen and compared by value. Not an attrs class: the prompt hook imports this
    module and attrs costs it more than the rest of its imports.
    """

    __slots__ = (
        "client",
        "conversation",
        "domains",
        "global_only",
        "k",
        "min_score",
        "project",
        "route",
        "session",
        "team",
        "text",
        "tools",
    )
    text: str
    conversation: str | None
    tools: tuple[str, ...] | None
    domains: tuple[str, ...] | None
    k: int
    min_score: float | None
    project: str | None
    global_only: bool
    team: bool
    route: str
    session: str | None
    client: str | None

    def __init__(
        self,
        text: str,
        *,
        tools: Sequence[str] | None = None,
        domains: Sequence[str] | None = None,
        k: int = 5,
        min_score: float | None = None,
        project: str | os.PathLike[str] | None = None,
        global_only: bool = False,
        team: bool = True,
        route: str = "api",
        session: str | None = None,
        conversation: str | None = None,
        client: str | None = None,
    ) -> None:
        if not isinstance(text, str) or not text.strip():
            raise InvalidRecordError("the task text must not be empty")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidRecordError(f"k must be at least 1, not {k}")
        if min_score is not None and not 0.0 <= min_score <= 1.0:
            raise InvalidRecordError(f"min_score must be between 0 and 1, not {min_score}")
        if not isinstance(route, str) or not route:
            raise InvalidRecordError("route must name the route into the prompt")
        if conversation is not None and not isinstance(conversation, str):
            raise InvalidRecordError("conversation must be text")
        values = {
            "text": text,
            "tools": _names(tools, "tools"),
            "domains": _names(domains, "domains"),
            "k": k,
            "min_score": None if min_score is None else float(min_score),
            "project": None if project is None else os.fspath(project),
            "global_only": bool(global_only),
            "team": bool(team),
            "route": route,
            "session": session if isinstance(session, str) and session else None,
            "conversation": conversation[:MAX_CONVERSATION_CHARS] if conversation else None,
            "client": client if isinstance(client, str) and client else None,
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a Query is frozen: {name} cannot be set (use replace())")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a Query is frozen: {name} cannot be deleted")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"Query({fields})"

    def replace(self, **changes: Any) -> "Query":
        """This query with ``changes``, validated again."""
        values = {n: getattr(self, n) for n in self.__slots__}
        values.update(changes)
        return Query(values.pop("text"), **values)

    @property
    def searched(self) -> str:
        """What the search reads: the prompt, then the conversation before it (if any)."""
        return self.text if self.conversation is None else f"{self.text}\n{self.conversation}"

    def where(self) -> str | None:
        """The project whose lessons are served beside the global ones (its root), or None."""
        if self.global_only or self.project is None:
            return None
        from .projects import project_of

        return project_of(self.project)


class Lesson(NamedTuple):
    """A lesson on its way into a prompt: its experience id (None for a team lesson, whose
    id is the team's), text, ``source`` (``private`` or ``team``), and how retrieval
    ranked it (``row``: its row in ``experiences``)."""

    id: int | None
    text: str
    source: str
    score: float
    reason: str
    evidence: Evidence
    row: dict[str, Any]

    @classmethod
    def of(cls, found: Found, source: str = "private") -> "Lesson":
        eid = found.id if source == "private" else None
        return cls(eid, found.text, source, found.score, found.reason, found.evidence, found.row)

    @property
    def line(self) -> str:
        """The lesson as the injected block shows it: ``[L12] text`` or ``(team) text``."""
        if self.source == "private" and self.id is not None:
            return f"{marker(self.id)} {self.text}"
        from .team.reads import mark  # a team lesson: the team's module is loaded already

        return mark(self.text, self.source)


#: How many lessons past ``k`` the search is run again for when filters withheld lessons
#: and the first search (exactly ``k`` deep) may have more: the next take their places.
FILTER_MARGIN = 5

#: A filter says why a lesson must be withheld from this prompt, or None to let it pass.
Filter = Callable[[Lesson], "str | None"]

#: -- THE FILTERS: every lesson passes each of these, in order, before it is formatted;
#: the first reason given withholds it (logged as withheld, never served). The claim
#: check (:func:`claims_filter`: a program a lesson says is there or missing, a path it
#: says exists) always runs first; these come after it.
FILTERS: list[Filter] = []


def claims_filter(query: Query) -> Filter:
    """The claim check for ``query``: a private lesson whose stored claims no longer hold
    here (:func:`agentmem.claims.withheld`; relative paths are checked under the query's
    project when it is a folder of this machine) is withheld with the reason. A team
    lesson's claims were made on another machine: the check is for this library's own."""
    from .claims import withheld

    project = query.project
    root = project if project and os.path.isabs(project) and os.path.isdir(project) else None

    def check(lesson: Lesson) -> str | None:
        if lesson.source != "private":
            return None
        return withheld(lesson.row, root)

    return check


def _checks(query: Query, filters: Sequence[Filter] | None) -> Sequence[Filter]:
    """``filters`` when given (a caller's own), else the claim check and :data:`FILTERS`."""
    return [claims_filter(query), *FILTERS] if filters is None else filters


#: Filter calls that raised in this process (the lesson was withheld; see :func:`finish`).
FILTER_FAILURES = [0]


class Served(NamedTuple):
    """What one prompt was given: the lessons (in order), those the holdout kept back,
    those a filter withheld (with its reason), and whether the served log got a line.
    ``paused``: the project's state when it is paused or excluded (nothing served)."""

    query: Query
    lessons: tuple[Lesson, ...] = ()
    held: tuple[Lesson, ...] = ()
    withheld: tuple[tuple[Lesson, str], ...] = ()
    logged: bool = False
    paused: str | None = None

    @property
    def text(self) -> str:
        """The block for the agent's prompt (empty when nothing is served)."""
        return format_context([lesson.line for lesson in self.lessons])

    @property
    def ids(self) -> list[int]:
        """The experience ids served, in order (team lessons have none)."""
        return [x.id for x in self.lessons if x.id is not None]


def serve(
    db: Any,
    library: str | os.PathLike[str] | None,
    query: Query,
    *,
    embed: Callable[[str], Vector],
    model: tuple[str, int],
    filters: Sequence[Filter] | None = None,
) -> Served:
    """The lessons ``query`` gets from the library ``db`` (any connection: a read-only
    ``sqlite3`` one or a sqlite-utils ``Database``) whose file is ``library`` (None: in
    memory, nothing logged), in the order the module doc gives. ``embed``: the query
    embedding of ``model`` (``(model_id, dims)``), the embedder that built the index.
    ``filters``: instead of :data:`FILTERS`."""
    stored, where, picked = _select(db, library, query, embed, model, filters)
    if picked is None:  # a paused or excluded project: nothing at all
        return Served(query, paused=project_states.state_of(stored, where))
    return _hold_and_log(library, query, *picked, stored, where)


def select(
    db: Any,
    library: str | os.PathLike[str] | None,
    query: Query,
    *,
    embed: Callable[[str], Vector],
    model: tuple[str, int],
    filters: Sequence[Filter] | None = None,
) -> Served:
    """Steps 1 to 4 of :func:`serve` alone: the lessons that pass the filters, in the order
    :func:`serve` would serve them, and those withheld with their reasons; no holdout
    (``held`` is empty), nothing logged, nothing formatted. What
    :meth:`agentmem.Memory.retrieve` returns: the lessons of :func:`serve`'s answer for the
    same query are these, less the ones the holdout keeps back (in the same order)."""
    stored, where, picked = _select(db, library, query, embed, model, filters)
    if picked is None:
        return Served(query, paused=project_states.state_of(stored, where))
    passed, withheld = picked
    return Served(query, tuple(passed), (), tuple(withheld), False)


_Picked = tuple[list[Lesson], list[tuple[Lesson, str]]]


def _select(
    db: Any,
    library: str | os.PathLike[str] | None,
    query: Query,
    embed: Callable[[str], Vector],
    model: tuple[str, int],
    filters: Sequence[Filter] | None,
) -> tuple[dict[str, Any], str | None, _Picked | None]:
    """Steps 1 to 4, shared by :func:`serve` and :func:`select`: the library's raw
    settings, the project's root, and (the lessons that pass, those withheld with their
    reasons), or None for a paused or excluded project."""
    stored = settings.raw(db)
    where = query.where()
    if project_states.state_of(stored, where) is not None:
        return stored, where, None
    checks = _checks(query, filters)
    in_team = query.team and library is not None and settings.TEAM in stored

    def found(depth: int) -> tuple[list[Lesson], list[Lesson]]:
        hits = search(
            db,
            query.searched,
            embed,
            tools=query.tools,
            domains=query.domains,
            k=depth,
            min_score=query.min_score,
            project=where,
            client=query.client,
        )
        private = [Lesson.of(f) for f in hits]
        if not in_team:
            return private, []
        return private, team_lessons(
            os.fspath(library or ""), stored, query, embed, model, where, k=depth
        )

    private, team = found(query.k)
    verdicts: dict[tuple[str, int | None, str], str | None] = {}
    passed, withheld = _pick(query.k, private, team, checks, verdicts)
    if withheld and len(passed) < query.k and query.k in (len(private), len(team)):
        # a filter took places the search could fill: once more, deeper (only then: a
        # deeper search weighs more candidates, so it is not the default)
        private, team = found(query.k + FILTER_MARGIN)
        passed, withheld = _pick(query.k, private, team, checks, verdicts)
    return stored, where, (passed, withheld)


def finish(
    library: str | os.PathLike[str] | None,
    query: Query,
    private: Sequence[Lesson],
    team: Sequence[Lesson],
    stored: dict[str, Any],
    *,
    where: str | None,
    filters: Sequence[Filter] | None = None,
) -> Served:
    """Steps 3 to 6 of :func:`serve` on lessons already found: merge, filter, holdout, log."""
    checks = _checks(query, filters)
    passed, withheld = _pick(query.k, private, team, checks)
    return _hold_and_log(library, query, passed, withheld, stored, where)


def _pick(
    k: int,
    private: Sequence[Lesson],
    team: Sequence[Lesson],
    checks: Sequence[Filter],
    verdicts: dict[tuple[str, int | None, str], str | None] | None = None,
) -> tuple[list[Lesson], list[tuple[Lesson, str]]]:
    """Steps 3 and 4: the private and team lessons merged, then filtered best first until
    ``k`` pass: (the lessons that pass, the lessons withheld with their reasons).
    ``verdicts``: the filters' answers so far (a lesson is checked once a prompt)."""
    memo = {} if verdicts is None else verdicts
    merged: list[Lesson] = list(private)
    if team:  # the team's module is imported only in a team (the prompt hook stays lean)
        from .team.reads import merge_hits

        pairs = merge_hits(
            private,
            team,
            k=len(private) + len(team),
            score=lambda x: x.score,
            text=lambda x: x.text,
        )
        merged = [x for _, x in pairs]
    passed: list[Lesson] = []
    withheld: list[tuple[Lesson, str]] = []
    for lesson in merged:
        if len(passed) == k:
            break
        # -- THE FILTER STEP: each lesson passes every check of FILTERS or is withheld
        key = (lesson.source, lesson.id, lesson.text)
        if key not in memo:
            memo[key] = _withheld_by(checks, lesson)
        reason = memo[key]
        if reason:
            withheld.append((lesson, reason))
        else:
            passed.append(lesson)
    return passed, withheld


def _hold_and_log(
    library: str | os.PathLike[str] | None,
    query: Query,
    passed: list[Lesson],
    withheld: list[tuple[Lesson, str]],
    stored: dict[str, Any],
    where: str | None,
) -> Served:
    """Steps 5 and 6: the holdout, and the served log's one line (when there is anything
    to say: a lesson served, held out or withheld)."""
    phash = served_log.prompt_hash(query.text)
    share = served_log.holdout_share(stored)
    kept, held_ids = served_log.split(passed, [x.id for x in passed], phash, share)
    gone = set(held_ids)
    held = [x for x in passed if x.id in gone]
    logged = False
    if library is not None and os.path.isfile(library):
        logged = served_log.record(
            library,
            route=query.route,
            phash=phash,
            served=[x.id for x in kept if x.id is not None],
            held=held_ids,
            session=query.session,
            project=where,
            share=share,
            why={x.id: x.reason for x in kept if x.id is not None and x.reason},
            withheld={x.id: r for x, r in withheld if x.id is not None},
            team=[x.text for x in kept if x.source == "team"],
        )
    return Served(query, tuple(kept), tuple(held), tuple(withheld), logged)


def _withheld_by(checks: Sequence[Filter], lesson: Lesson) -> str | None:
    """The first reason one of ``checks`` gives to withhold ``lesson``, or None. A check that
    raises withholds the lesson (precision first) and is counted in :data:`FILTER_FAILURES`:
    one broken check never stops a prompt from being served."""
    for check in checks:
        try:
            reason = check(lesson)
        except Exception as e:
            FILTER_FAILURES[0] += 1
            name = getattr(check, "__qualname__", type(check).__name__)
            return f"the check {name} failed ({type(e).__name__})"
        if reason:
            return str(reason)
    return None


def team_lessons(
    library: str,
    stored: dict[str, Any],
    query: Query,
    embed: Callable[[str], Vector],
    model: tuple[str, int],
    where: str | None,
    *,
    k: int | None = None,
) -> list[Lesson]:
    """The team replica's lessons for ``query``, searched read-only as the private library
    is; none outside a team, or when the replica is missing or cannot be read yet. A
    replica whose index is not ``model``'s raises :class:`~agentmem.errors.TeamError`. A
    lesson whose text breaks the rules of :func:`agentmem.team.reads.lesson_text_ok`, or
    whose row is no valid experience (:func:`agentmem.team.reads.row_ok`), is left out:
    another machine's file never reaches a prompt unchecked."""
    from .team.reads import config_of, lesson_text_ok, row_ok, start_background_sync

    team = config_of(stored)
    if team is None:
        return []
    start_background_sync(library, team)
    replica = str(team["replica"])
    if not os.path.isfile(replica):
        return []
    from ._sqlite import open_reader, sqlite3

    try:
        conn = open_reader(replica)
    except sqlite3.Error:
        return []  # a replica still being created: the private lessons alone
    try:
        try:
            info = vector_index.index_info(conn)
        except sqlite3.Error:
            return []
        if info is None or tuple(info) != tuple(model):
            from .team.replica import embedder_problem  # the refusal's words, with its check

            raise TeamError(embedder_problem(info, model) or "the team's index is refused")
        found = search(
            conn,
            query.searched,
            embed,
            tools=query.tools,
            domains=query.domains,
            k=query.k if k is None else k,
            min_score=query.min_score,
            project=where,
            client=query.client,
        )
    finally:
        conn.close()
    return [Lesson.of(f, "team") for f in found if lesson_text_ok(f.text) and row_ok(f.row)]
