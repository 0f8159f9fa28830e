"""Incremental inference (what sync writes) ends where inference over the final catalog ends, whatever the
sequence of changes: servers and tools added, updated and removed, a server moved to another catalog,
declared dependencies added and dropped (canonicalize/inference/incremental.py, flows/stages/infer.py)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import CASES, DATA
from toolkg.canonicalize.inference.incremental import RULES, IncrementalInference
from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.canonicalize.inference.reach import RULE_NAMES
from toolkg.config import InferenceOptions
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import fingerprint_file
from toolkg.flows.stages.base import Change
from toolkg.flows.stages.infer import Infer, InferState, as_read
from toolkg.models import Parameter, Tool
from toolkg.ontology import TK, iris
from toolkg.ontology.graphs import INFERRED_GRAPH
from toolkg.store.dependencies import edge_triples

INFER = Infer()
# The catalog a run draws from: the hand-made inference cases (a login and its service, status checks, a
# connectivity check, a getter and its setter, mentions) spread over three servers, so that every rule links
# across servers too, and LiveMCPBench servers of 3 to 12 tools (real names and descriptions) in a second
# catalog.
CASE_SERVERS = 3
LIVEMCPBENCH_SERVERS = 8
OPTIONS = {
    "default": InferenceOptions(),
    # every wide case within reach of a small catalog: a fan-out cap a few consumers cross, two producers a slot
    "tight": InferenceOptions(weak_fanout_cap=2, max_producers_per_parameter=2),
    "rules only": InferenceOptions(learned=False, weak_fanout_cap=3),
}


def _tools(path) -> list[Tool]:
    """A manifest's tools as the store gives them back (``as_read``, no declared dependencies): what both a
    rebuild and sync infer over."""
    file, data = fingerprint_file(path)
    servers = ingest_manifest(file, data).parsed.servers
    return [as_read(t) for s in servers for t in s.tools]


@cache
def pool() -> dict[str, tuple[Tool, ...]]:
    """server id -> its tools, every server a run may add."""
    servers: dict[str, list[Tool]] = {}
    for path in sorted((CASES / "inference").glob("*.json")):
        for n, t in enumerate(_tools(path)):
            t = t.model_copy(update={"server_id": f"{t.server_id}-{n % CASE_SERVERS}"})
            servers.setdefault(t.server_id, []).append(t)
    real: dict[str, list[Tool]] = {}
    for t in _tools(DATA / "livemcpbench" / "tools.json"):
        real.setdefault(t.server_id, []).append(t)
    chosen = sorted(s for s, tools in real.items() if 3 <= len(tools) <= 12)[::2][:LIVEMCPBENCH_SERVERS]
    return {s: tuple(tools) for s, tools in (servers | {s: real[s] for s in chosen}).items()}


@cache
def case_servers() -> frozenset[str]:
    return frozenset(s for s in pool() if s.rpartition("-")[0] in {p.stem for p in (CASES / "inference").glob("*")})


def _variant(tool: Tool, other: Tool, how: int) -> Tool:
    """``tool`` changed: another tool's description, parameters, outputs, or all three."""
    fields = [("description",), ("parameters",), ("outputs",), ("description", "parameters", "outputs")][how % 4]
    return tool.model_copy(update={f: getattr(other, f) for f in fields})


OPERATIONS = ("add-server", "remove-server", "update-server", "add-tool", "remove-tool", "update-tool", "move",
              "declare", "undeclare")  # fmt: skip


class Run:
    """A catalog, its incremental state and the triples sync has written, changed one operation at a time."""

    def __init__(self, servers: list[str], options: InferenceOptions, tools: list[Tool] | None = None) -> None:
        self.options = options
        self.catalog = {t.id: t for s in servers for t in pool()[s]} | {t.id: t for t in tools or ()}
        self.catalogs = {s: "cases" if s in case_servers() else "real" for s in pool()}  # two catalogs
        self.declared: set[tuple[str, str]] = set()
        edges = self.expected()
        engine = IncrementalInference(self.catalog.values(), options, (), self.catalogs)
        self.state = InferState({(e.consumer, e.producer, e.parameter): e for e in edges}, self.catalogs, engine)
        self.graph = set(edge_triples(edges, self.catalog.values()))

    def check_state(self) -> None:
        """What the engine keeps for each consumer is what an engine made afresh over the catalog keeps."""
        kept, fresh = self.state.engine, IncrementalInference(self.catalog.values(), self.options, self.declared,
                                                               self.catalogs)  # fmt: skip
        assert kept.pre == fresh.pre and kept.post == fresh.post and kept.learned == fresh.learned
        assert +kept.fanout == +fresh.fanout and +kept.feeders == +fresh.feeders
        assert kept.candidate_fanout == fresh.candidate_fanout

    def step(self, changed: Sequence[Tool] = (), removed: Collection[str] = frozenset()) -> None:
        """One change as sync makes it, then the edges and triples compared with inference afresh."""
        before = list(self.catalog.values())
        for i in removed:
            del self.catalog[i]
        self.catalog.update({t.id: t for t in changed})
        change = Change({t.id for t in changed}, set(removed), before, dict(self.catalog))
        INFER.update(self.state, change)
        self.graph -= change.deletions.get(INFERRED_GRAPH, set())
        self.graph |= change.insertions.get(INFERRED_GRAPH, set())
        expected = self.expected()
        assert sorted(self.state.edges.values(), key=_key) == sorted(expected, key=_key)
        assert self.graph == set(edge_triples(expected, self.catalog.values()))

    def expected(self):
        tools = sorted(self.catalog.values(), key=lambda t: t.id)
        return infer_dependencies(tools, self.options, self.declared, catalogs=self.catalogs)

    def apply(self, operation: str, pick: int, how: int) -> None:
        present = sorted({t.server_id for t in self.catalog.values()})
        absent = sorted(set(pool()) - set(present))
        ids = sorted(self.catalog)
        everything = [t for tools in pool().values() for t in tools]
        changed: dict[str, Tool] = {}
        removed: set[str] = set()
        # pairs a manifest now declares, and no longer does
        declared: tuple[list[tuple[str, str]], list[tuple[str, str]]] = ([], [])
        if operation == "add-server" and absent:
            changed = {t.id: t for t in pool()[absent[pick % len(absent)]]}
        elif operation == "remove-server" and present:
            removed = {i for i in ids if i.partition("::")[0] == present[pick % len(present)]}
        elif operation == "update-server" and present:
            server = present[pick % len(present)]
            mine = [i for i in ids if i.partition("::")[0] == server]
            for n, i in enumerate(mine[:3]):
                changed[i] = _variant(self.catalog[i], everything[(pick + 7 * n) % len(everything)], how + n)
            if len(mine) > 3:
                removed = {mine[-1]}
            back = [t for t in pool()[server] if t.id not in self.catalog]
            changed.update({t.id: t for t in back[:1]})
        elif operation == "add-tool":
            missing = [t for t in everything if t.id not in self.catalog]
            if missing:
                tool = missing[pick % len(missing)]
                changed = {tool.id: tool}
        elif operation == "remove-tool" and ids:
            removed = {ids[pick % len(ids)]}
        elif operation == "update-tool" and ids:
            i = ids[pick % len(ids)]
            changed = {i: _variant(self.catalog[i], everything[(pick * 31 + how) % len(everything)], how)}
        elif operation == "move" and present:
            server = present[pick % len(present)]
            self.catalogs[server] = "elsewhere" if self.catalogs[server] != "elsewhere" else "cases"
        elif operation == "declare" and self.state.edges:  # a manifest now declares a pair inference found
            pairs = sorted({(c, p) for c, p, _ in self.state.edges})
            consumer, producer = pairs[pick % len(pairs)]
            declared[0].append((consumer, producer))
        elif operation == "undeclare" and self.declared:
            declared[1].append(sorted(self.declared)[pick % len(self.declared)])
        before = list(self.catalog.values())
        for i in removed:
            del self.catalog[i]
        self.catalog.update(changed)
        self.declared = (self.declared | set(declared[0])) - set(declared[1])
        change = Change(set(changed), removed, before, dict(self.catalog))
        for into, pairs in zip((change.insertions, change.deletions), declared, strict=True):
            for consumer, producer in pairs:  # as the transform step patches the consumer's server graph
                graph = iris.server_graph(consumer.partition("::")[0])
                triple = _depends(consumer, producer)
                into.setdefault(graph, set()).add(triple)
        INFER.update(self.state, change)
        self.graph -= change.deletions.get(INFERRED_GRAPH, set())
        self.graph |= change.insertions.get(INFERRED_GRAPH, set())


def _depends(consumer: str, producer: str):
    from pyoxigraph import Triple

    return Triple(iris.tool_iri_from_id(consumer), TK.dependsOn, iris.tool_iri_from_id(producer))


@settings(deadline=None)
@pytest.mark.slow
@given(
    st.sampled_from(sorted(OPTIONS)),
    st.sets(st.integers(0, 40), max_size=6),
    st.lists(st.tuples(st.sampled_from(OPERATIONS), st.integers(0, 9999), st.integers(0, 7)), min_size=1, max_size=16),
)
def test_sync_writes_what_inference_over_the_final_catalog_gives(options, left_out, operations):
    """Most of the pool to start with (every rule has something to link), then a sequence of changes; what
    sync wrote (the kept edges and the triples patched into the inferred graph) is compared at the end, so a
    neighbour a change missed shows whatever came after."""
    servers = sorted(pool())
    run = Run(sorted(set(servers) - {servers[n % len(servers)] for n in left_out}), OPTIONS[options])
    for operation, pick, how in operations:
        run.apply(operation, pick, how)
    expected = run.expected()
    assert sorted(run.state.edges.values(), key=_key) == sorted(expected, key=_key)
    assert run.graph == set(edge_triples(expected, run.catalog.values()))
    run.check_state()


def _key(e) -> tuple:
    return (e.consumer, e.producer, e.parameter or "", e.kind, e.rule)


def test_a_status_check_or_connectivity_check_change_reaches_its_whole_catalog():
    """The wide cases are counted: a connectivity check arriving reaches every tool of its catalog."""
    run = Run(sorted(case_servers()), OPTIONS["default"])
    check = next(t for s in case_servers() for t in pool()[s] if t.name == "get_network_status")
    run.apply("remove-tool", sorted(run.catalog).index(check.id), 0)
    engine = run.state.engine
    assert engine.stats["connectivity"] == 1
    assert sorted(run.state.edges.values(), key=_key) == sorted(run.expected(), key=_key)


def test_a_fan_out_crossing_the_cap_resparsifies_every_consumer_of_that_producer():
    """A fourth consumer of a weak producer takes the edges of the first three away (cap 3), and they come back
    when it goes, or when the producer needs no input (a hub is exempt): consumers no rule is asked again for."""
    # a writer of PDFs that needs input (no hub): the file rule's weak edge into a reader on any server
    producer = Tool(server_id="p", name="create_report_pdf", parameters=(Parameter(name="report_id", required=True),))
    consumers = [
        Tool(server_id=f"c{i}", name="split_pages", parameters=(Parameter(name="pdf_path", required=True),))
        for i in range(4)
    ]
    run = Run([], InferenceOptions(weak_fanout_cap=3, learned=False), [producer, *consumers[:3]])
    assert len(run.state.edges) == 3
    run.step([consumers[3]])
    assert run.state.edges == {} and run.state.engine.stats["fan-out"] == 1
    run.step([producer.model_copy(update={"parameters": ()})])
    assert len(run.state.edges) == 4
    run.step([producer], {consumers[0].id})
    assert len(run.state.edges) == 3


def _case(name: str) -> Tool:
    return next(t for s in case_servers() for t in pool()[s] if t.name == name)


def test_changes_reach_consumers_on_other_servers_rule_by_rule():
    """Each of these changes reaches consumers on servers it does not touch, each through one rule's reach: a
    tool named in another tool's mention arrives, a second login of a known service arrives, a status check
    and a file writer arrive, a tool's namespace changes under its own server's consumers."""
    run = Run(sorted(case_servers()), InferenceOptions())
    for name in ("make_digest", "acme_admin_login", "get_wifi_status", "docx_to_pdf", "get_bluetooth_status"):
        tool = _case(name)
        run.step([], {tool.id})
        run.step([tool])
    run.check_state()
    # beta_get_widget's output feeds its server's paint_widget until beta_login (elsewhere) makes beta a service
    widget = Tool(server_id="q", name="beta_get_widget", description="Gets a widget.")
    paint = Tool(server_id="q", name="paint_widget", parameters=(Parameter(name="widget_id", required=True),))
    login = Tool(server_id="r", name="beta_login", parameters=(Parameter(name="email", required=True),))
    run = Run([], InferenceOptions(learned=False), [widget, paint])
    edge = (paint.id, widget.id, "widget_id")
    assert run.state.edges[edge].rule == "output-to-parameter"
    run.step([login])
    assert run.state.edges[edge].rule == "same-server-identifier"  # the namespace rules the output's out
    run.step([], {login.id})
    assert run.state.edges[edge].rule == "output-to-parameter"
    run.check_state()


def test_every_rule_sync_asks_again_is_a_rule_inference_runs():
    """A rule missing from reach.py's list is never asked again for the tools a change reaches (the server login
    was, until a sync test found a rebuild with an edge the sync lacked)."""
    assert list(RULE_NAMES) == list(RULES)
