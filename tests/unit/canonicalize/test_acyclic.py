"""Inferred prerequisites never loop unless the catalog declares the loop (canonicalize/inference/acyclic.py)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkg.canonicalize.inference.acyclic import acyclic, dropped_pairs
from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.canonicalize.inference.profiles import PARAMETER_DIRECT, TOOL_DIRECT
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import discover_all, fingerprint_file
from toolkg.models import InferredEdge

ROOT = Path(__file__).resolve().parents[3]
# every catalog the retrieval suite and the inference benchmark build (data/*/SOURCE.md, data/dependency-labels/)
SUITE = [
    "data/toollinkos",
    "data/livemcpbench/tools.json",
    "data/bfcl/tools.json",
    "data/azure-mcp/tools.json",
    "data/apibench/tools.json",
    "tests/cases/real/mcp-servers",
    "tests/cases/real/openai/bfcl-multi-turn",
    "tests/cases/real/openapi/api.github.com.json",
]


def edge(consumer: str, producer: str, confidence: float = 0.5, kind: str = TOOL_DIRECT) -> InferredEdge:
    return InferredEdge(consumer, producer, kind, None, confidence, "test", "")


def reaches(pairs: set[tuple[str, str]], start: str, goal: str) -> bool:
    graph = defaultdict(set)
    for c, p in pairs:
        graph[c].add(p)
    seen, stack = {start}, [start]
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        for nxt in graph[node] - seen:
            seen.add(nxt)
            stack.append(nxt)
    return False


def cycles_outside(pairs: set[tuple[str, str]], declared: set[tuple[str, str]]) -> bool:
    """Whether some loop of ``pairs | declared`` uses a pair that is not declared."""
    return any(reaches(pairs | declared, p, c) for c, p in pairs - declared)


def test_the_stronger_direction_of_a_two_tool_loop_stays():
    # git_add takes the repository git_init made (a parameter's value, confident); the reverse is a weak ordering
    edges = [edge("git::add", "git::init", 0.9, PARAMETER_DIRECT), edge("git::init", "git::add", 0.4)]
    assert [(e.consumer, e.producer) for e in acyclic(edges)] == [("git::add", "git::init")]
    assert dropped_pairs(edges) == {("git::init", "git::add")}


def test_a_tool_never_depends_on_itself_and_a_declared_loop_stays():
    edges = [edge("s::a", "s::a", 0.99), edge("s::c", "s::b", 0.3)]
    declared = {("s::a", "s::b"), ("s::b", "s::a")}
    assert [(e.consumer, e.producer) for e in acyclic(edges, declared)] == [("s::c", "s::b")]
    # an inferred pair that would close a loop with declared ones goes, however confident
    assert acyclic([edge("s::b", "s::c", 0.99)], {("s::c", "s::b")}) == []


names = st.sampled_from([f"s::t{i}" for i in range(7)])
pairs = st.tuples(names, names)


@settings(max_examples=300, deadline=None)
@pytest.mark.slow
@given(
    st.lists(st.tuples(pairs, st.floats(0, 1), st.sampled_from([PARAMETER_DIRECT, TOOL_DIRECT])), max_size=25),
    st.sets(pairs, max_size=6),
)
def test_what_stays_has_no_loop_the_catalog_did_not_declare(raw, declared):
    edges = [edge(c, p, round(conf, 2), kind) for (c, p), conf, kind in raw]
    kept = acyclic(edges, declared)
    kept_pairs = {(e.consumer, e.producer) for e in kept}
    assert all(c != p for c, p in kept_pairs)
    assert not cycles_outside(kept_pairs, {d for d in declared if d[0] != d[1]})
    # only loops cost edges: an edge whose pair is on no loop stays, in its order
    assert kept == [e for e in edges if (e.consumer, e.producer) in kept_pairs]
    everything = {(e.consumer, e.producer) for e in edges} | declared
    for e in edges:
        if e.consumer != e.producer and not reaches(everything, e.producer, e.consumer):
            assert e in kept
    assert acyclic(kept, declared) == kept  # a second pass drops nothing


@pytest.mark.slow
@pytest.mark.parametrize("source", SUITE)
def test_no_catalog_of_the_suite_gets_a_loop_it_did_not_declare(source):
    tools = []
    for path in discover_all([ROOT / source]).files:
        file, data = fingerprint_file(Path(path))
        tools += [t for s in ingest_manifest(file, data).parsed.servers for t in s.tools]
    by_name = {t.id: t for t in tools}
    declared = {(t.id, f"{t.server_id}::{d.target}") for t in tools for d in t.depends_on}
    declared = {d for d in declared if d[1] in by_name}
    edges = infer_dependencies(tools, declared=declared)
    assert edges, source
    assert not cycles_outside({(e.consumer, e.producer) for e in edges}, declared)


STATE = ["wifi", "brightness", "alarm"]
getters = st.sampled_from([f"s::get_{x}" for x in STATE] + [f"s::list_{x}s" for x in STATE])
setters = st.sampled_from([f"s::{v}_{x}" for v in ("set", "enable", "delete") for x in STATE])


@settings(max_examples=300, deadline=None)
@pytest.mark.slow
@given(
    st.lists(st.tuples(getters, setters, st.floats(0, 1), st.floats(0, 1), st.booleans()), min_size=1, max_size=12),
    st.lists(st.tuples(st.tuples(getters | setters, getters | setters), st.floats(0, 1)), max_size=8),
)
def test_a_state_changing_tool_is_never_the_prerequisite_of_a_read_in_a_loop(loops, others):
    """Item 6 of issue 51: whatever the rules' confidences, a get/set loop keeps the read before the write.
    An edge whose producer sets, enables or deletes is taken after every read inside a loop."""
    edges = []
    for getter, setter, read_first, write_first, parameter in loops:
        kind = PARAMETER_DIRECT if parameter else TOOL_DIRECT
        edges += [edge(setter, getter, round(read_first, 2), kind), edge(getter, setter, round(write_first, 2), kind)]
    edges += [edge(c, p, round(conf, 2)) for (c, p), conf in others]
    kept = {(e.consumer, e.producer) for e in acyclic(edges)}
    for getter, setter, *_ in loops:
        assert (setter, getter) in kept  # the write reads its state first
        assert (getter, setter) not in kept  # never: call the write before the read


def test_annotations_say_which_tool_changes_state_before_its_name():
    from toolkg.canonicalize.inference.acyclic import changes_state
    from toolkg.models import Annotations, Tool

    assert changes_state(Tool(server_id="s", name="set_volume"))
    assert not changes_state(Tool(server_id="s", name="set_volume", annotations=Annotations(read_only=True)))
    assert changes_state(Tool(server_id="s", name="wipe", annotations=Annotations(destructive=True)))
    assert not changes_state(Tool(server_id="s", name="get_volume"))
