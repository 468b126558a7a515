"""What keeps a learning session's cost per group flat as the library grows gives the
same answers as the all-pairs versions it replaced (``benchmarks/bench_scale.py`` times
it): the clustering of a session's findings, Stage 3's ADD-against-ADD deduplication,
batched retrieval, and one write of the vector index per session."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import attrs
import pytest

from agentmem import Memory
from agentmem.learning.consolidate import (
    Cosine,
    Similar,
    _dedup,
    _home,
    _with_groups,
    join,
    same_facts,
)
from agentmem.learning.evidence import Finding, quote_error
from agentmem.learning.merge import (
    _chunks,
    _merge_values,
    _name_parts,
    _needs_text,
    _param_of,
    _prereq_parts,
    _related_names_text,
    _setting,
    _tools,
    clusters,
    says_nothing,
)
from agentmem.records import Operation
from agentmem.storage import vector_index
from benchmarks.scale_data import experiences, groups

from .conftest import FakeEmbedder

# -- the reference: clusters() as it was, comparing every pair --------------------------------


def clusters_all_pairs(findings: Sequence[Finding]) -> list[tuple[str, list[int]]]:
    """clusters() before this change: every helper and every lesson merged for several
    helpers scans all findings; components compare all pairs."""
    fs = list(findings)
    out: list[tuple[str, list[int]]] = []
    taken: set[int] = set()
    helpers: dict[str, list[int]] = defaultdict(list)
    # (helper or None, indices): the prerequisite lessons, one per helper (and one per
    # lesson already merged for several helpers of one tool)
    units: list[tuple[str | None, list[int]]] = []
    for i, f in enumerate(fs):
        if f.detail.get("parts"):
            units.append((None, [i]))
        elif f.detail.get("helper") and (
            f.kind == "prerequisite" or (f.kind == "recovery" and not f.detail.get("param"))
        ):
            helpers[f.detail["helper"]].append(i)
    for u, idx in helpers.items():
        tools = {t for i in idx for t in _tools(fs[i])}
        have = next((st for i in idx if (st := _setting(fs[i]))), None)
        idx = idx + [
            j
            for j, f in enumerate(fs)
            if f.kind == "param_value"
            and f.tool == u
            and f.detail.get("later") in tools
            and (st := _setting(f))
            and (have is None or st[0] == have[0])
        ]
        instead = next((fs[i].detail["instead"] for i in idx if fs[i].detail.get("instead")), None)
        idx = idx + [
            j
            for j, f in enumerate(fs)
            if f.kind == "wrong_tool"
            and f.facts[0] == u
            and not f.detail.get("both_ways")
            and instead in (None, f.facts[1])
        ]
        units += [(u, chunk) for chunk in _chunks(fs, idx)]
    # a lesson already merged for several helpers of one tool takes those helpers' settings
    # and wrong tools that no helper of their own took
    held = {i for _u, chunk in units for i in chunk}
    for _u, chunk in units:
        f = fs[chunk[0]]
        if _u is not None:
            continue
        hs = {p["helper"] for p in f.detail["parts"]}
        chunk += [
            j
            for j, g in enumerate(fs)
            if j not in held
            and (
                (g.kind == "param_value" and g.tool in hs and g.detail.get("later") == f.tool)
                or (g.kind == "wrong_tool" and g.facts[0] in hs and not g.detail.get("both_ways"))
            )
        ]
        held.update(chunk)
    # one tool's prerequisites with different helpers: one lesson, when it fits
    by_tool: dict[str, list[int]] = defaultdict(list)
    # a helper's setting that made a later call fail is what that call needs, too
    held = {i for _u, chunk in units for i in chunk}
    units += [
        (f.tool, [j])
        for j, f in enumerate(fs)
        if j not in held and f.kind == "param_value" and f.detail.get("later") and _setting(f)
    ]

    def needed_by(chunk: list[int]) -> set[str]:
        heads = {
            t for i in chunk if fs[i].kind in ("prerequisite", "recovery") for t in _tools(fs[i])
        }
        return heads or {fs[i].detail["later"] for i in chunk if fs[i].detail.get("later")}

    for k, (_u, chunk) in enumerate(units):
        tools = needed_by(chunk)
        if len(tools) == 1:
            by_tool[next(iter(tools))].append(k)
    needs: set[int] = set()
    for t, ks in by_tool.items():
        if len(ks) < 2:
            continue
        idx = sorted(i for k in ks for i in units[k][1])
        if len({p["helper"] for p in _prereq_parts([fs[i] for i in idx])}) < 2:
            continue
        if _needs_text(t, _prereq_parts([fs[i] for i in idx])) is None:
            continue
        out.append(("needs", idx))
        taken.update(idx)
        needs.update(ks)
    for k, (_u, chunk) in enumerate(units):
        if (
            k not in needs
            and len(chunk) > 1
            and needed_by(chunk)
            and any(fs[i].kind in ("prerequisite", "recovery") for i in chunk)
        ):
            out.append(("prerequisite", sorted(chunk)))
            taken.update(chunk)
    cand = [
        i
        for i, f in enumerate(fs)
        if i not in taken
        and (
            (f.kind == "param_value" and _param_of(f) and not _setting(f))
            or (f.kind == "recovery" and f.detail.get("param"))
            or (f.kind == "param_name" and len(f.facts) == 3 and not f.detail.get("pairs"))
        )
    ]

    def links(f: Finding) -> set[str]:
        out = set(_tools(f)) | ({f.detail.get("source") or "", f.detail.get("helper") or ""} - {""})
        if f.domain and f.domain != "general":
            out.add(f"domain:{f.domain}")
        err = re.sub(r"^\w+:\s*", "", quote_error(f.detail.get("error") or "", 12))
        err = " ".join([w for w in err.split() if not re.search(r"[.\d:/]", w)][:3])
        if err and f.kind != "param_name":
            out.add(f"error:{err.lower()}")
        return out

    seen: set[int] = set()
    for i in cand:
        if i in seen:
            continue
        comp, todo = [i], [i]
        seen.add(i)
        while todo:
            a = fs[todo.pop()]
            for j in cand:
                if j not in seen and _param_of(fs[j]) == _param_of(a) and links(fs[j]) & links(a):
                    seen.add(j)
                    comp.append(j)
                    todo.append(j)
        kinds = {fs[j].kind for j in comp}
        if len(comp) > 1 and kinds & {"param_value", "recovery"}:
            if says_nothing(_merge_values([fs[j] for j in comp])):
                continue
            out.append(("value", sorted(comp)))
            taken.update(comp)
    wrong_names: dict[str, list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        if (
            f.kind == "param_name"
            and i not in taken
            and (len(f.facts) == 3 or f.detail.get("pairs"))
        ):
            wrong_names[f.detail.get("wrong_name") or f.facts[2]].append(i)
    for idx in wrong_names.values():
        if len(idx) > 1:
            out.append(("name", idx))
            taken.update(idx)
    # a wrong name of a look-up tool goes with the lesson that says to look a value up with it
    for j, f in enumerate(fs):
        if j in taken or f.kind != "param_name" or len(f.facts) != 3 or f.detail.get("pairs"):
            continue
        for c, (kind, idx) in enumerate(out):
            if kind == "value" and f.tool in {
                fs[i].detail.get("source") or fs[i].detail.get("helper") for i in idx
            }:
                if len(_merge_values([fs[i] for i in [*idx, j]]).text.split()) <= 32:
                    out[c] = (kind, sorted([*idx, j]))
                    taken.add(j)
                break
        else:
            src = next(
                (
                    x
                    for x, g in enumerate(fs)
                    if x not in taken
                    and g.kind in ("param_value", "recovery")
                    and _param_of(g)
                    and f.tool in (g.detail.get("source"), g.detail.get("helper"))
                ),
                None,
            )
            if src is not None and len(_merge_values([fs[src], f]).text.split()) <= 32:
                out.append(("value", sorted([src, j])))
                taken.update((src, j))
    # wrong names of related tools (a shared name part): one lesson, up to three tools
    names = [
        i
        for i, f in enumerate(fs)
        if i not in taken
        and f.kind == "param_name"
        and len(f.facts) == 3
        and not f.detail.get("pairs")
    ]
    for i in names:
        if i in taken:
            continue
        parts = _name_parts(fs[i].tool)
        related = [
            j
            for j in names
            if j != i
            and j not in taken
            and fs[j].tool != fs[i].tool
            and parts & _name_parts(fs[j].tool)
        ]
        idx = [i, *related[:2]]
        if len(idx) > 1 and len(_related_names_text([fs[k] for k in idx]).split()) <= 32:
            out.append(("related_names", sorted(idx)))
            taken.update(idx)
    missing: dict[str, list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        if f.kind == "missing_step" and i not in taken:
            missing[f.tool].append(i)
    for idx in missing.values():
        if len(idx) > 1:
            out.append(("missing", idx))
            taken.update(idx)
    pairs: dict[frozenset[str], list[int]] = defaultdict(list)
    for i, f in enumerate(fs):
        if f.kind == "wrong_tool" and i not in taken:
            pairs[frozenset(f.facts[:2])].append(i)
    out += [("wrong_tool", idx) for idx in pairs.values() if len(idx) > 1]
    return sorted(out, key=lambda c: min(c[1]))


def random_findings(rng: random.Random, n: int) -> list[Finding]:
    """Findings of every kind over a small vocabulary, so that many of them link up."""
    tools = ["cd", "cat", "cp", "mv", "login", "get_id", "book", "pay"]
    params = ["folder", "file_name", "user_id", "symbol", ""]
    errors = ["No such file", "not authenticated", "invalid id 42", "timeout: 3s", ""]
    out = []
    for _ in range(n):
        kind = rng.choice(
            ["prerequisite", "recovery", "param_value", "param_name", "missing_step", "wrong_tool"]
        )
        t, u, x = rng.choice(tools), rng.choice(tools), rng.choice(params)
        detail: dict[str, object] = {"error": rng.choice(errors)}
        facts: tuple[str, ...] = (t,)
        if kind in ("prerequisite", "recovery"):
            detail["helper"] = u
            if rng.random() < 0.3:
                detail["param"] = x
            if rng.random() < 0.3:
                detail["tools"] = rng.sample(tools, 2)
            if rng.random() < 0.2:
                detail["instead"] = rng.choice(tools)
            facts = (t, u)
        elif kind == "param_value":
            detail.update(param=x, good="a", bad="b")
            if rng.random() < 0.4:
                detail.update(later=rng.choice(tools), error=None)
            if rng.random() < 0.3:
                detail["source"] = u
            facts = (t, x or "p")
        elif kind == "param_name":
            facts = (t, x or "p", rng.choice(["file", "name", "id"]))
            if rng.random() < 0.2:
                detail["pairs"] = [(t, x or "p")]
                detail["wrong_name"] = facts[2]
        elif kind == "wrong_tool":
            facts = (t, u)
            detail["both_ways"] = rng.random() < 0.1
        out.append(
            Finding(kind, t, rng.choice(["fs", "general", ""]), f"{kind} {t}", facts, 1, detail)
        )
    return out


@pytest.mark.parametrize("seed", range(40))
def test_clusters_match_the_all_pairs_version_on_random_findings(seed: int) -> None:
    fs = random_findings(random.Random(seed), random.Random(seed).randrange(2, 120))
    assert clusters(fs) == clusters_all_pairs(fs)


def test_clusters_match_the_all_pairs_version_on_a_sessions_findings(tmp_path: Path) -> None:
    """The findings of 150 synthetic groups (every kind of planted mistake)."""
    with Memory.open(tmp_path / "lib.db", embedder=FakeEmbedder()) as mem:
        for g in groups(150, seed=3):
            mem.record_many(g)
        report = mem.learn(use_model=False, dry_run=True)
    found = [f for g in report.groups for f in g.findings]
    assert len(found) > 200 and len({f.kind for f in found}) >= 4
    got = clusters(found)
    assert got == clusters_all_pairs(found)
    assert sum(len(idx) for _, idx in got) > 100  # the session's lessons do merge


# -- Stage 3: ADD against ADD ----------------------------------------------------------------


def dedup_all_pairs(
    ops: Sequence[Operation], similar: Similar, cosine: Cosine, threshold: float
) -> tuple[list[Operation], list[tuple[Operation, str]]]:
    """_dedup() before this change: each ADD compared with every ADD chosen before it."""
    rejected: list[tuple[Operation, str]] = []
    touched = {t for op in ops if op.kind != "ADD" for t in op.targets}
    result: list[Operation | None] = list(ops)
    fresh: list[int] = []  # indices of ADDs that stay ADDs
    for i, op in enumerate(ops):
        if op.kind != "ADD" or not op.text:
            continue
        hits = [(e, c) for e, c, text in similar(op.text) if c > threshold and same_facts(op, text)]
        if not hits:
            fresh.append(i)
            continue
        target, cos = hits[0]
        if target in touched:
            rejected.append(
                (
                    op,
                    f"duplicates experience {target} (cosine {cos:.3f}), "
                    "which another operation already changes",
                )
            )
            result[i] = None
            continue
        touched.add(target)
        result[i] = attrs.evolve(
            op,
            kind="MODIFY",
            targets=(target,),
            note=f"ADD turned MODIFY: cosine {cos:.3f} > {threshold:.3f}",
        )
    # ADD against ADD within the session: keep the one from the heavier group, or join
    # two close ones that share a fact.
    chosen: dict[int, Operation] = {}  # index -> its operation (joined, perhaps)
    for i in sorted(fresh, key=lambda j: (-ops[j].weight, j)):
        close = [
            j for j, op in chosen.items() if cosine(ops[i].text or "", op.text or "") > threshold
        ]
        dup = next((j for j in close if same_facts(ops[i], chosen[j])), None)
        if dup is not None:
            # the kept ADD stands on the duplicate's groups too (support summed)
            if _home(ops[i]) == _home(chosen[dup]):
                chosen[dup] = result[dup] = _with_groups(chosen[dup], ops[i])
            rejected.append(
                (ops[i], f"duplicates another ADD of this session (group {ops[dup].group!r})")
            )
            result[i] = None
            continue
        both = next(((j, one) for j in close if (one := join(chosen[j], ops[i])) is not None), None)
        if both is None:
            chosen[i] = ops[i]
            continue
        j, joined = both
        chosen[j] = result[j] = joined
        rejected.append((ops[i], f"joined into the lesson of group {ops[j].group!r}"))
        result[i] = None
    return [op for op in result if op is not None], rejected


def random_adds(rng: random.Random, n: int) -> list[Operation]:
    """ADDs over a few tools, parameters and groups: many close, some duplicates (same
    identifiers), some to join (a parameter and a group in common)."""
    tools = ["get_user_id", "book_flight", "place_order", "read_file"]
    params = ["user_id", "symbol", "file_name", "flight_id"]
    words = ["before", "calling", "call", "first", "never", "pass", "with", "use", "it"]
    ops = []
    for k in range(n):
        tool, param = rng.choice(tools), rng.choice(params)
        text = " ".join([tool, *rng.sample(words, 3), f"{param}=...", rng.choice(words)])
        merged = rng.sample([f"g{i}" for i in range(8)], rng.randrange(0, 3))
        ops.append(
            Operation(
                "ADD",
                text=text,
                group=f"g{k % 8}",
                weight=rng.random(),
                facts=(tool, param),
                detail={"merged_groups": merged} if merged else {},
            )
        )
    return ops


@pytest.mark.parametrize("seed", range(10))
def test_add_dedup_matches_all_pairs(seed: int) -> None:
    emb = FakeEmbedder()
    ops = random_adds(random.Random(seed), 200)

    def cosine(a: str, b: str) -> float:
        va, vb = emb.embed_batch([a, b])
        return sum(x * y for x, y in zip(va, vb, strict=True))

    got = _dedup(ops, lambda _text: [], cosine, 0.5)
    want = dedup_all_pairs(ops, lambda _text: [], cosine, 0.5)
    assert got == want
    reasons = [why.split(" ")[0] for _, why in got[1]]
    assert reasons.count("duplicates") > 10 and reasons.count("joined") > 5


# -- batched retrieval ---------------------------------------------------------------------------


@pytest.fixture
def library(tmp_path: Path) -> Memory:
    mem = Memory.open(tmp_path / "lib.db", embedder=FakeEmbedder())
    mem.add_many(experiences(600, seed=5))
    yield mem
    mem.close()


def test_search_many_gives_each_search_its_own_answer(library: Memory) -> None:
    lib = library._retriever()
    rng = random.Random(1)
    texts = [f"call {t} with item_id like {rng.randrange(100)}" for t in ("get", "update") * 150]
    domains = [rng.choice([None, ["fs"], ["k8s", "web"], ["nowhere"], []]) for _ in texts]
    many = lib.search_many(texts, domains=domains, k=5)
    one_by_one = [lib.search(t, domains=d, k=5) for t, d in zip(texts, domains, strict=True)]
    assert many == one_by_one
    assert sum(1 for hits in many if hits) > 150  # "nowhere" and [] find none
    vectors = [lib.vector(t) for t in texts]
    got = vector_index.search_many(lib.db, vectors, domains=domains, k=3)
    numpy_engine = [
        vector_index._search(lib.db, v, domains=d, k=3, engine="numpy")
        for v, d in zip(vectors, domains, strict=True)
    ]
    assert got == numpy_engine
    sql_engine = [  # exact too, but summed in another order: near-ties may swap
        vector_index._search(lib.db, v, domains=d, k=3, engine="sql")
        for v, d in zip(vectors, domains, strict=True)
    ]
    for g, w in zip(got, sql_engine, strict=True):
        assert len(g) == len(w) and all(abs(a[1] - b[1]) < 1e-12 for a, b in zip(g, w))


def test_search_many_without_numpy_searches_one_by_one(library: Memory, monkeypatch) -> None:
    lib = library._retriever()
    vectors = [lib.vector(t) for t in ("update a pod", "list bookings", "git login")]
    want = [vector_index.search(lib.db, v, k=4) for v in vectors]
    monkeypatch.setattr(vector_index, "_numpy", lambda import_it: None)
    vector_index.forget(lib.db)
    assert vector_index.search_many(lib.db, vectors, k=4) == want
    with pytest.raises(ValueError, match="2 vectors but 1 domain lists"):
        vector_index.search_many(lib.db, vectors[:2], domains=[None], k=4)


# -- the session ---------------------------------------------------------------------------------


def test_add_many_is_one_undoable_session(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "lib.db", embedder=FakeEmbedder()) as mem:
        ids = mem.add_many([("Call cat with file_name=...", "fs"), "Say what you did."])
        assert [e.id for e in mem.experiences()] == ids
        [session] = mem.sessions()
        assert session["kind"] == "curate"
        with pytest.raises(Exception, match="at most 32 words"):
            mem.add_many(["fine", "too long " * 20])
        assert len(mem.experiences()) == 2 and len(mem.sessions()) == 1
        mem.undo(session["id"])
        assert mem.experiences() == []


def test_a_session_writes_the_index_once_and_reports_its_stages(
    tmp_path: Path, monkeypatch
) -> None:
    with Memory.open(tmp_path / "lib.db", embedder=FakeEmbedder()) as mem:
        for g in groups(60, seed=4):
            mem.record_many(g)
        mem.add_many(experiences(300, seed=4))
        calls: list[int] = []
        real = vector_index.put_many

        def counted(db, rows):
            rows = list(rows)
            calls.append(len(rows))
            return real(db, rows)

        monkeypatch.setattr(vector_index, "put_many", counted)
        report = mem.learn(use_model=False)
        exact = [g for g in report.groups if g.kind == "exact"]
        # the 60 task groups, and the runs among them that corrected a call themselves
        assert len(exact) == 60 and report.groups_used == 60 + report.groups_formed["correction"]
        assert len(calls) == 1 and calls[0] == sum(
            1 for o in report.applied if o.op.kind in ("ADD", "MODIFY", "MERGE")
        )
        assert set(report.timings) == {"select", "load", "stage1", "stage2", "stage3", "apply"}
        assert report.as_dict()["timings"] == report.timings
        assert vector_index.check(mem.db) == []


# -- evidence per lesson: the groups and runs of a lesson's tools --------------------------------


def test_tallies_and_refutations_read_the_runs_of_a_lessons_tools_only(
    tmp_path: Path, monkeypatch
) -> None:
    """support.evidence_operations and the corpus's checks look only at the groups and
    runs that call a lesson's tools (rules.needed_tools); asking every one gives the
    same operations, tallies and refuting runs."""
    from agentmem.learning import generality, session, support
    from agentmem.learning.rules import Rule

    seen: dict[str, object] = {}
    real_ops, real_corpus = session.evidence_operations, session.build_corpus

    def spy_ops(ops, live, groups, counted=None):
        seen.update(ops=ops, live=live, groups=groups)
        return (
            real_ops(ops, live, groups) if counted is None else real_ops(ops, live, groups, counted)
        )

    def spy_corpus(runs):
        seen["corpus"] = real_corpus(runs)
        return seen["corpus"]

    monkeypatch.setattr(session, "evidence_operations", spy_ops)
    monkeypatch.setattr(session, "build_corpus", spy_corpus)
    with Memory.open(tmp_path / "lib.db", embedder=FakeEmbedder()) as mem:
        for g in groups(120, seed=6):
            mem.record_many(g)
        mem.learn(use_model=False)  # lessons with rules, for the next session to tally
        for g in groups(120, seed=7):
            mem.record_many(g)
        mem.learn(use_model=False)
    assert sum(1 for e in seen["live"] if e.rule) > 10 and len(seen["groups"]) == 120
    fast = support.evidence_operations(seen["ops"], seen["live"], seen["groups"])
    monkeypatch.setattr(support, "needed_tools", lambda rule: None)
    slow = support.evidence_operations(seen["ops"], seen["live"], seen["groups"])
    assert fast == slow
    assert sum(1 for op in fast[0] if op.kind in ("CONFIRM", "CONTRADICT")) > 10

    corpus = seen["corpus"]
    every = attrs.evolve(corpus, by_tool={})  # no index: every run
    rules = [Rule.from_json(e.rule) for e in seen["live"] if e.rule]
    rules = [r for r in rules if r is not None]
    assert len(corpus.runs) == 960 and rules
    for r in rules:
        assert corpus.refuting(r) == every.refuting(r)
        for t in r.tools:
            for p in ("item_id", "id", "limit"):
                assert corpus._role([t], p) == every._role([t], p)
                assert corpus.always_bad([t], p, "x") == every.always_bad([t], p, "x")
    assert generality.build_corpus is real_corpus
