"""Synthetic libraries of a realistic shape, for :mod:`benchmarks.bench_scale`.

A *world* of 112 services (16 kinds of object under 7 tool-name prefixes, so that the
tools fall into the fs, git, k8s, search, shell, web and general domains), each with
login, look-up, list, get, update and patch tools, plus everyday tools (``ls``, ``cat``,
``grep``, ``bash``, ``git_status``, ``http_get``). A *group* is one task ("set the
priority of ticket 'acme-417' to high in tickets") run four times, ten tool calls each:
one accepted gold run and three rejected variants, each with one planted mistake of the
kinds agents make (a missing login, a name passed where an id is needed, a misnamed
parameter, a wrong tool of the same service, a lookup skipped and never recovered).
Outputs are JSON objects, listings and test logs of 100 bytes to a few KB, so a
trajectory is about 2.5 KB, as in the recorded BFCL and tau-bench runs.

*Experiences* are lessons in the shapes agentmem learns ("Before calling X, call Y
first; ...", "Call X with item_id like ...; never pass ...", "Use X, not Y, ..."),
about the same tools with other values, so that retrieval, near-duplicate MERGEs and
Stage 3's ADD-to-MODIFY have real work to do. Everything is drawn from one seeded
``random.Random``: the same arguments give the same library.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

from agentmem import Step, Trajectory
from agentmem.domains import domain_for

__all__ = ["STEPS", "Service", "experiences", "groups", "services"]

#: Tool calls in every trajectory.
STEPS = 10

PREFIXES = ("fs_", "git_", "kubectl_", "search_", "run_", "http_", "")
OBJECTS = (
    ("orders", "order"),
    ("users", "user"),
    ("billing", "account"),
    ("invoices", "invoice"),
    ("tickets", "ticket"),
    ("bookings", "booking"),
    ("repos", "repo"),
    ("pods", "pod"),
    ("builds", "build"),
    ("alerts", "alert"),
    ("notes", "note"),
    ("calendar", "event"),
    ("payments", "payment"),
    ("inventory", "item"),
    ("messages", "message"),
    ("reports", "report"),
)
FIELDS = (
    ("priority", ("low", "normal", "high", "urgent")),
    ("status", ("open", "pending", "closed", "archived")),
    ("owner", ("ana", "bo", "chen", "dara", "eli", "femi")),
    ("region", ("eu-west-1", "us-east-2", "ap-south-1")),
    ("label", ("bug", "feature", "infra", "docs", "billing")),
    ("quantity", ("1", "2", "5", "10", "25")),
)
NAMES = (
    "acme alpha atlas bravo cedar delta ember falcon garnet harbor indigo juniper kestrel "
    "lumen maple nimbus onyx pepper quartz raven sierra tango umber vega willow xenon yarrow "
    "zephyr"
).split()
USERS = ("ana", "bo", "chen", "dara", "eli", "femi", "gus", "hana")
FILES = ("README.md", "setup.cfg", "notes/todo.txt", "src/app.py", "docs/index.md", "Makefile")
WRONG_ID_NAMES = ("id", "identifier", "item", "key", "object_id")


class Service:
    """One service's tools and its domain's prefix."""

    def __init__(self, prefix: str, plural: str, singular: str):
        self.prefix, self.plural, self.singular = prefix, plural, singular
        base = f"{prefix}{plural}"
        self.login = f"{base}_login"
        self.lookup = f"{base}_find_id"
        self.list = f"{base}_list"
        self.get = f"{base}_get"
        self.update = f"{base}_update"
        self.patch = f"{base}_patch"

    @property
    def tools(self) -> tuple[str, ...]:
        return (self.login, self.lookup, self.list, self.get, self.update, self.patch)


def services() -> list[Service]:
    return [Service(p, pl, si) for p in PREFIXES for pl, si in OBJECTS]


def _j(obj: object) -> str:
    return json.dumps(obj)


def _item_id(rng: random.Random) -> str:
    return f"ID-{rng.randrange(10000, 99999)}"


def _filler(rng: random.Random, name: str) -> Step:
    """An everyday call with an output of realistic size (a listing, a file, a test log)."""
    kind = rng.randrange(6)
    if kind == 0:
        entries = rng.sample(FILES, 4) + [f"{name}-{i}.log" for i in range(rng.randrange(3, 12))]
        return Step("ls", {"path": "."}, "\n".join(entries))
    if kind == 1:
        f = rng.choice(FILES)
        body = "\n".join(
            f"{rng.choice(NAMES)} {rng.choice(NAMES)} = {rng.randrange(1000)}  # {name}"
            for _ in range(rng.randrange(5, 30))
        )
        return Step("cat", {"file_name": f}, body)
    if kind == 2:
        pat = rng.choice(NAMES)
        hits = "\n".join(
            f"src/{rng.choice(NAMES)}.py:{rng.randrange(1, 400)}:    {pat}_{i} = load({name!r})"
            for i in range(rng.randrange(1, 8))
        )
        return Step("grep", {"pattern": pat, "path": "src"}, hits)
    if kind == 3:
        n = rng.randrange(20, 200)
        failed = rng.random() < 0.15
        log = [
            "============================= test session starts ==============================",
            f"collected {n} items",
            "",
            *(f"tests/test_{rng.choice(NAMES)}.py {'.' * rng.randrange(5, 60)}" for _ in range(8)),
            "",
        ]
        if failed:
            log += [
                "FAILED tests/test_api.py::test_roundtrip - AssertionError: 3 != 4",
                f"{'=' * 25} 1 failed, {n - 1} passed in 2.31s {'=' * 25}",
            ]
        else:
            log.append(
                f"============================= {n} passed in 2.05s =============================="
            )
        return Step("bash", {"command": "pytest -q"}, "\n".join(log), success=not failed)
    if kind == 4:
        return Step(
            "git_status",
            {},
            "On branch main\nChanges not staged for commit:\n"
            + "\n".join(f"\tmodified:   {f}" for f in rng.sample(FILES, 2)),
        )
    return Step(
        "http_get",
        {"url": f"https://status.example.com/{name}"},
        _j({"status": "ok", "latency_ms": rng.randrange(5, 400), "region": "eu-west-1"}),
    )


def _group(rng: random.Random, svc: Service, g: int) -> list[Trajectory]:
    """Four runs of one task: a gold run and three with one planted mistake each."""
    field, values = rng.choice(FIELDS)
    value = rng.choice(values)
    name = f"{rng.choice(NAMES)}-{g}"
    user = rng.choice(USERS)
    item = _item_id(rng)
    task = f"Set the {field} of {svc.singular} '{name}' to {value} in {svc.plural}"
    record = {"id": item, "name": name, field: value, "owner": user, "version": rng.randrange(9)}
    listing = [{"id": _item_id(rng), "name": f"{rng.choice(NAMES)}-{i}"} for i in range(8)]
    auth_err = _j({"error": f"not authenticated: call {svc.login} first"})
    bad_id = _j({"error": f"invalid item_id '{name}': expected an id like ID-12345"})

    def gold_calls(fillers: list[Step]) -> list[Step]:
        core = [
            Step(svc.login, {"user": user}, _j({"session": f"s-{rng.randrange(10**6)}"})),
            Step(svc.list, {"limit": 20}, _j(listing)),
            Step(svc.lookup, {"name": name}, _j({"id": item, "name": name})),
            Step(svc.get, {"item_id": item}, _j({**record, field: "?"})),
            Step(svc.update, {"item_id": item, "field": field, "value": value}, _j(record)),
            Step(svc.get, {"item_id": item}, _j(record)),
        ]
        return core[:4] + fillers[:2] + core[4:] + fillers[2:]

    fill = [_filler(rng, name) for _ in range(STEPS - 6)]
    gold = gold_calls(fill)
    runs = [(gold, True)]
    kinds = rng.sample(("login", "value", "name", "tool", "lookup"), 3)
    for kind in kinds:
        steps = list(gold)
        if kind == "login":  # the login is missing; every service call after it fails
            steps = [
                Step(s.tool, s.params, auth_err, False)
                if s.tool.startswith(svc.prefix + svc.plural)
                else s
                for s in steps[1:]
            ] + [_filler(rng, name)]
        elif kind == "value":  # the name passed where the id is needed
            steps = [
                Step(s.tool, {**s.params, "item_id": name}, bad_id, False)
                if "item_id" in s.params
                else s
                for s in steps
            ]
        elif kind == "name":  # item_id misnamed in the update
            wrong = rng.choice(WRONG_ID_NAMES)
            i = next(k for k, s in enumerate(steps) if s.tool == svc.update)
            p = {wrong if k == "item_id" else k: v for k, v in steps[i].params.items()}
            msg = (
                f"Error during execution: {svc.update}() got an unexpected keyword "
                f"argument '{wrong}'"
            )
            steps[i] = Step(svc.update, p, msg, False)
        elif kind == "tool":  # patch called where update was needed: succeeds, wrong result
            i = next(k for k, s in enumerate(steps) if s.tool == svc.update)
            steps[i] = Step(
                svc.patch, steps[i].params, _j({**record, field: None, "patched": True})
            )
        else:  # the lookup skipped: get by name fails, and the run never recovers
            steps = [s for s in steps if s.tool != svc.lookup]
            i = next(k for k, s in enumerate(steps) if s.tool == svc.get)
            steps[i] = Step(svc.get, {"item_id": name}, bad_id, False)
            steps = steps[: i + 1] + [_filler(rng, name) for _ in range(STEPS - i - 1)]
        runs.append((steps, False))
    rng.shuffle(runs)
    return [
        Trajectory(task=task, steps=steps, accepted=ok, meta={"run": f"r{g}-{k}"}, source="bench")
        for k, (steps, ok) in enumerate(runs)
    ]


def groups(n: int, seed: int = 0) -> Iterator[list[Trajectory]]:
    """``n`` groups of four trajectories (see the module doc)."""
    rng = random.Random(seed)
    world = services()
    for g in range(n):
        yield _group(rng, world[rng.randrange(len(world))], g)


def experiences(n: int, seed: int = 1) -> list[tuple[str, str]]:
    """``n`` distinct lessons with their domains (see the module doc).

    They are about a larger world than the groups' (the same services, and the same
    kinds of object under 28 other names: ``git_team_orders_get``), as a library grown
    over months of other tasks is, so that near-duplicates are a few per tool.
    """
    rng = random.Random(seed)
    world = [
        Service(p, q + pl, si)
        for q in ("", *(f"{x}_" for x in NAMES))
        for p in PREFIXES
        for pl, si in OBJECTS
    ]
    params = ("item_id", "record_id", "uid", "ref", "slug")
    out: dict[str, str] = {}
    while len(out) < n:
        s = world[rng.randrange(len(world))]
        field, values = rng.choice(FIELDS)
        name = f"{rng.choice(NAMES)}-{rng.randrange(100000)}"
        x = rng.choice(params)
        t = rng.choice((s.get, s.update, s.list, s.lookup))
        text = rng.choice(
            (
                f"Before calling {t}, call {s.login} with user={rng.choice(USERS)} first; "
                f"without it {t} fails ('not authenticated').",
                f"Call {s.get} with {x} like {_item_id(rng)}; never pass {x}={name}: "
                f"look it up with {s.lookup} first.",
                f"Call {s.update} with {x}=..., never {rng.choice(WRONG_ID_NAMES)}=...; "
                f"it is not a parameter of {s.update} (seen for {name}).",
                f'Use {s.update}, not {s.patch}, for requests like "set the {field} of '
                f'{s.singular} {name}".',
                f"When {s.list} returns more than {rng.randrange(5, 50)} items, call it again "
                f"with limit={rng.randrange(5, 50)}; {name} is on page {rng.randrange(2, 9)}.",
                f"Set {field} with {s.update} using value={rng.choice(values)} for "
                f"{s.plural} like {name}; {s.patch} leaves {field} empty.",
            )
        )
        out[text] = domain_for(s.get)
    return list(out.items())
