"""The package's import graph: no cycles, and no module imports from a layer above its own.

The graph is read from the source (every ``import`` and ``from ... import``, the
ones inside functions and under ``TYPE_CHECKING`` too), so a lazy import cannot
hide a cycle. ``docs/architecture.md`` draws the same layers.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import agentmem

PACKAGE = Path(agentmem.__file__).parent

#: Lowest first. A module may import from its own layer or any layer below; the
#: first prefix that matches a module's name places it (so the team's storage side
#: sits below the façade that calls it, and the rest of the team above).
LAYERS: tuple[tuple[str, ...], ...] = (
    # values and pure policy: no SQL, no models
    (
        "errors",
        "_registry",
        "timestamps",
        "terms",
        "paths",
        "files",
        "jsonsafe",
        "records",
        "rewards",
        "agents",
        "domains",
        "projects",
        "redact",
        "outputs",
        "sanitize",
        "languages",
        "rc",
        "schemadoc",
        "framing",
        "conversation",
        "served",
        "effect",
        "claims",
    ),
    # the SQLite file: connections, transactions, schema
    ("_tx", "_sqlite", "db", "migrations", "scrub"),
    # backends: text models (and their worker process), then embedders
    ("models", "llm"),
    ("embeddings",),
    # one owning module per table
    ("storage",),
    # reading the library; the team replica's storage side (outbox, replica, reads)
    ("retrieval", "team.config", "team.replica", "team.outbox", "team.reads", "serving"),
    # learning, importing, checking: what the façade calls
    ("learning", "importers", "ingest", "check", "backup"),
    # the façade
    ("memory",),
    # features on the façade
    # (practice: the held-out evaluation records and retires through Memory)
    ("context", "export", "team", "doctor", "mcp_server", "hooks", "browse", "status", "practice"),
    # entry points
    ("cli", "_entry", "__main__", "__init__"),
)


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1] or ["__init__"]
        out[".".join(parts)] = (path, is_pkg)
    return out


def _resolve(name: str, modules: dict[str, tuple[Path, bool]]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(name: str, path: Path, is_pkg: bool, modules: dict) -> Iterator[str]:
    """The package modules ``name`` imports (relative to the package, without ``agentmem.``)."""
    here = name.split(".") if name != "__init__" else []
    base = here if is_pkg else here[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.split(".")[0] == "agentmem"]
            targets = [t.partition(".")[2] or "__init__" for t in targets]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base[: len(base) - (node.level - 1)]
                mod = ".".join([*parts, *([node.module] if node.module else [])])
            elif node.module and node.module.split(".")[0] == "agentmem":
                mod = node.module.partition(".")[2]
            else:
                continue
            for alias in node.names:  # `from . import x` names a module when x is one
                full = f"{mod}.{alias.name}" if mod else alias.name
                targets.append(full if full in modules else mod or "__init__")
        for target in targets:
            found = _resolve(target, modules)
            if found and found != name:
                yield found


def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: set(_imports(name, path, is_pkg, modules)) for name, (path, is_pkg) in modules.items()
    }


def layer(name: str) -> int:
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if name == prefix or name.startswith(prefix + "."):
                return i
    raise AssertionError(
        f"agentmem.{name} is in no layer: add it to LAYERS and docs/architecture.md"
    )


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read_from_every_kind_of_import() -> None:
    edges = graph()
    assert len(edges) > 100
    # top-level, lazy (inside a function) and TYPE_CHECKING imports all count
    assert "storage.settings" in edges["memory"]
    assert "memory" in edges["hooks.learner"]  # imported inside a function
    assert "embeddings" in edges["team.replica"]  # under TYPE_CHECKING


def test_no_import_cycles() -> None:
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = [
        f"agentmem.{a} (layer {layer(a)}) imports agentmem.{b} (layer {layer(b)})"
        for a, outs in sorted(graph().items())
        for b in sorted(outs)
        if layer(b) > layer(a)
    ]
    assert upward == []


def test_every_layer_prefix_names_a_module() -> None:
    modules = set(graph())
    for prefixes in LAYERS:
        for prefix in prefixes:
            assert any(m == prefix or m.startswith(prefix + ".") for m in modules), prefix


# -- one owner per table -------------------------------------------------------------------

SCHEMA_DOC = PACKAGE.parent / "docs" / "schema.md"
#: Modules that may name any table: the schema (and ``scrub.py``, the body of its migration
#: m018 that rewrites every stored text), the team primary's set-up, canned SQL for people.
NOT_OWNERS = {"migrations.py", "scrub.py", "team/server.py", "browse/queries.py"}


def owners() -> dict[str, str]:
    """``docs/schema.md``'s owner table: table name -> owning file (relative to the package)."""
    text = SCHEMA_DOC.read_text(encoding="utf-8").split("## Which module owns each table", 1)[1]
    out = {}
    for line in text.split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[1].startswith("`agentmem/"):
            for table in re.findall(r"`([^`]+)`", cells[0]):
                out[table] = cells[1].strip("`").removeprefix("agentmem/")
    return out


def _writes(source: str, table: str) -> bool:
    t = re.escape(table)
    return bool(
        re.search(
            rf"\b(INSERT(\s+OR\s+\w+)?\s+INTO|UPDATE|DELETE\s+FROM|REPLACE\s+INTO)\s+\"?{t}\b",
            source,
        )
        or re.search(rf"\[\s*[\"']{t}[\"']\s*\]\s*\.\s*(insert|upsert|update|delete)", source)
        or re.search(rf"\.table\(\s*[\"']{t}[\"']", source)
    )


def test_every_documented_table_has_one_owner_that_exists() -> None:
    from agentmem.schemadoc import parse

    doc = parse(SCHEMA_DOC.read_text(encoding="utf-8"))
    tables = {name for name, t in doc.tables.items() if t.kind == "table"}
    found = owners()
    assert tables - set(found) == set(), "tables without an owner in docs/schema.md"
    for table, owner in found.items():
        assert table in (PACKAGE / owner).read_text(encoding="utf-8"), (table, owner)


def test_only_the_owner_writes_a_table() -> None:
    found = owners()
    strays = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in NOT_OWNERS:
            continue
        source = path.read_text(encoding="utf-8")
        strays += [
            f"{rel} writes {t} (owner: {o})"
            for t, o in found.items()
            if o != rel and _writes(source, t)
        ]
    assert strays == []


def test_the_writer_scan_sees_writes() -> None:
    assert _writes('db.execute("UPDATE sessions SET x = 1")', "sessions")
    assert _writes("db.execute('INSERT OR IGNORE INTO settings VALUES (?, ?)')", "settings")
    assert _writes('db["experiences"].insert(row)', "experiences")
    assert not _writes('db.execute("SELECT * FROM sessions")', "sessions")


# -- short functions -----------------------------------------------------------------------

MAX_FUNCTION_LINES = 80
#: Declarative tables, not logic: the schema's migrations and the secret-redaction rules.
DECLARATIVE = {"migrations.py": None, "redact.py": {"_builtin_rules"}}


def test_no_function_is_longer_than_80_lines() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        allowed = DECLARATIVE.get(rel, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_FUNCTION_LINES and allowed is not None and node.name not in allowed:
                long.append(f"{rel}:{node.lineno} {node.name}: {lines} lines")
    assert long == []
