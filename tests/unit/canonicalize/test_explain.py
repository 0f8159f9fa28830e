"""``explain`` (canonicalize/inference/explain.py): what it keeps is what ``infer_dependencies`` gives the
consumer, on real catalogs and on random parts of them, and each step that drops a proposal says so."""

from __future__ import annotations

from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import CASES, DATA
from toolkg.canonicalize.inference.explain import DROPPED, KEPT, explain, explain_all
from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.config import InferenceOptions
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import fingerprint_file
from toolkg.flows.stages.infer import as_read
from toolkg.models import Parameter, Tool


def _read(path) -> list[Tool]:
    file, data = fingerprint_file(path)
    return [as_read(t) for s in ingest_manifest(file, data).parsed.servers for t in s.tools]


@cache
def _catalog() -> tuple[Tool, ...]:
    """The inference cases, the shapes and a slice of LiveMCPBench's servers: every rule has something."""
    tools = [t for path in sorted([*(CASES / "inference").glob("*.json"), *(CASES / "shapes").glob("*")])
             for t in _read(path)]  # fmt: skip
    real = _read(DATA / "livemcpbench" / "tools.json")
    servers = sorted({t.server_id for t in real})[::3]
    return tuple(tools + [t for t in real if t.server_id in servers])


def _key(e):
    return (e.producer, e.parameter or "", e.rule, e.kind)


def _agrees(tools, options=None, catalogs=None) -> None:
    final = infer_dependencies(tools, options, catalogs=catalogs)
    everyone = explain_all(tools, {t.id for t in tools}, options, catalogs=catalogs)
    assert explain(tools, tools[-1].id, options, catalogs=catalogs) == everyone[tools[-1].id]
    for tool in tools:
        considered = everyone[tool.id]
        kept = sorted((c.edge for c in considered if c.fate == KEPT), key=_key)
        assert kept == sorted((e for e in final if e.consumer == tool.id), key=_key), tool.id
        assert all(c.reason for c in considered)


def test_what_explain_keeps_is_what_inference_gives_every_consumer():
    _agrees(list(_catalog()))


def test_the_same_under_other_options_and_two_catalogs():
    tools = list(_catalog())
    catalogs = {t.server_id: "cases" if "::" in t.id and t.server_id < "m" else "real" for t in tools}
    _agrees(tools, InferenceOptions(max_producers_per_slot=1, weak_fanout_cap=2), catalogs)
    _agrees(tools, InferenceOptions(learned=False))


@settings(max_examples=15, deadline=None)
@given(st.sets(st.integers(0, 10_000), min_size=1, max_size=12))
def test_the_same_on_any_part_of_the_catalog(picks):
    servers = sorted({t.server_id for t in _catalog()})
    chosen = {servers[n % len(servers)] for n in picks}
    _agrees([t for t in _catalog() if t.server_id in chosen])


def test_each_step_says_why_it_dropped_a_proposal():
    """A typed join under the calibrated cut, a rule past its fan-out cap, a producer beaten for its slot."""
    tools = list(_catalog())
    reasons = [c.reason for found in explain_all(tools, {t.id for t in tools}).values() for c in found
               if c.fate == DROPPED]  # fmt: skip
    assert any("under min_confidence" in r for r in reasons)
    # one weak producer of PDFs feeding readers on three servers: over a fan-out cap of 2
    writer = Tool(server_id="p", name="create_report_pdf", parameters=(Parameter(name="report_id", required=True),))
    readers = [
        Tool(server_id=f"c{i}", name="split_pages", parameters=(Parameter(name="pdf_path", required=True),))
        for i in range(3)
    ]
    capped = explain([writer, *readers], readers[0].id, InferenceOptions(weak_fanout_cap=2, learned=False))
    assert [c.fate for c in capped] == [DROPPED] and "over weak_fanout_cap 2" in capped[0].reason
    single = InferenceOptions(max_producers_per_slot=1)
    beaten = [c.reason for found in explain_all(tools, {t.id for t in tools}, single).values() for c in found
              if c.fate == DROPPED]  # fmt: skip
    assert any("(max_producers_per_slot)" in r for r in beaten)
