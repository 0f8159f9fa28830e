"""Structural links (co-invoked, schema compatible, shared parameters), offline embeddings, and the store."""

from __future__ import annotations

import numpy as np
import pytest

from toolkg.canonicalize.links.structural import (
    CO_INVOKED,
    SCHEMA_COMPATIBLE,
    SHARES_PARAMETERS,
    LinkOptions,
    co_invoked_links,
    schema_links,
    shared_parameter_links,
)
from toolkg.embeddings.encoder import Embedder
from toolkg.models import OutputField, Parameter, Tool


def _tool(server: str, name: str, description: str = "", params=(), outputs=()) -> Tool:
    return Tool(
        server_id=server,
        name=name,
        description=description,
        parameters=tuple(Parameter(name=p, required=True) for p in params),
        outputs=tuple(OutputField(name=o) for o in outputs),
    )


def test_embeddings_are_unit_vectors_cached_on_disk(tmp_path):
    texts = ["Send an email to a contact.", "Send an e-mail message to someone.", "Convert Celsius to Fahrenheit."]
    first = Embedder(tmp_path / "vectors.sqlite")
    vectors = first.encode(texts)
    first.close()
    assert vectors.shape == (3, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    assert vectors[0] @ vectors[1] > 0.7 > vectors[0] @ vectors[2]  # paraphrases are close, topics apart
    again = Embedder(tmp_path / "vectors.sqlite")
    assert np.allclose(again.encode(texts[::-1]), vectors[::-1]) and again.computed == 0  # no model call


def test_co_invoked_links_need_the_same_server_and_close_descriptions():
    tools = [
        _tool("mail", "send_email", "Send an email message to a recipient."),
        _tool("mail", "send_email_with_attachment", "Send an email message with a file attached."),
        _tool("mail", "convert_units", "Convert a temperature between Celsius and Fahrenheit."),
        _tool("other", "compose_email", "Send an email message to a recipient."),  # twin, other server
    ]
    vectors = Embedder().encode([t.description for t in tools])
    links = co_invoked_links(tools, vectors, LinkOptions())
    pairs = {(x.source.split("::")[1], x.target.split("::")[1]) for x in links}
    assert pairs == {("send_email", "send_email_with_attachment"), ("send_email_with_attachment", "send_email")}
    assert all(x.kind == CO_INVOKED and x.score > 0.6 for x in links)


def test_schema_compatibility_ignores_generic_names():
    producer = _tool("crm", "find_customer", outputs=("customer_id", "email_address", "id", "name"))
    consumer = _tool("crm", "open_ticket", params=("customer_id", "email_address"))
    generic = _tool("crm", "rename", params=("id", "name"))  # only generic names: never linked
    partial = _tool("crm", "merge", params=("customer_id", "invoice_number", "currency_code"))  # 1/3 covered
    links = schema_links([producer, consumer, generic, partial], LinkOptions())
    assert [(x.source, x.target, x.kind, x.score) for x in links] == [
        ("crm::find_customer", "crm::open_ticket", SCHEMA_COMPATIBLE, 1.0)
    ]


def test_shared_parameter_links_are_mutual_and_capped():
    hub = _tool("s", "hub", params=("order_number", "warehouse_code"))
    spokes = [_tool("s", f"spoke_{i}", params=("order_number", "warehouse_code", f"extra_{i}_flag")) for i in range(8)]
    links = shared_parameter_links([hub, *spokes], LinkOptions(per_tool=3))
    per_source: dict[str, int] = {}
    for x in links:
        per_source[x.source] = per_source.get(x.source, 0) + 1
        assert x.kind == SHARES_PARAMETERS and (x.target, x.source) in {(y.source, y.target) for y in links}
    assert links and max(per_source.values()) <= 3


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_incremental_links_after_changes_matches_linking_the_final_catalog_afresh(seed):
    """Incremental sync's links on a catalog that changes a server at a time ends with exactly the
    links a fresh pass over the final catalog finds, including a name crossing the holder cap."""
    from toolkg.canonicalize.links.incremental import IncrementalLinks
    from toolkg.canonicalize.links.structural import MAX_HOLDERS, LinkIndex, structural_links

    rng = np.random.default_rng(seed)
    nouns = ["order", "warehouse", "invoice", "customer", "shipment", "vendor"]
    names = [f"{noun}_{part}" for noun in nouns for part in ("number", "code", "total", "email", "date")]

    def random_tool(server: str, i: int) -> Tool:
        return _tool(
            server,
            f"tool_{i}",
            params=tuple(rng.choice(names, size=int(rng.integers(1, 4)), replace=False)),
            outputs=tuple(rng.choice(names, size=int(rng.integers(0, 3)), replace=False)),
        )

    tools = {t.id: t for t in (random_tool(f"s{i % 12}", i) for i in range(120))}
    # One name held by exactly MAX_HOLDERS tools: adding one more holder silences it everywhere.
    tools.update({t.id: t for t in (_tool("crowd", f"c_{i}", params=("pallet_label",)) for i in range(MAX_HOLDERS))})
    vectors: dict[str, np.ndarray] = {}

    def vector_of(tool_id: str) -> np.ndarray:
        v = vectors.setdefault(tool_id, rng.normal(size=8) + 3.0)  # mostly similar: plenty of co-invoked links
        return v / np.linalg.norm(v)

    options = LinkOptions(per_tool=2)  # short lists: a new candidate displaces an old one
    unit = {i: vector_of(i) for i in tools}
    index = LinkIndex(list(tools.values()), unit)
    state = IncrementalLinks(index, options)
    first = structural_links(list(tools.values()), np.vstack(list(unit.values())), options)
    assert sorted(state.links) == sorted((x.source, x.target, x.kind) for x in first)
    one = next(t for t in tools.values() if t.server_id == "s7")
    changes = [
        ("s3", [random_tool("s3", 1000 + i) for i in range(4)]),  # replace a server
        ("crowd-extra", [_tool("crowd-extra", "c_extra", params=("pallet_label", "order_number"))]),  # add
        ("s5", []),  # remove
        (one.id, [random_tool("s7", int(one.name.split("_")[1]))]),  # update one tool among its server mates
    ]
    vectors.pop(one.id)  # its new version reads differently (``unit`` keeps the old vector until then)
    for target, new_tools in changes:
        previous = [t for t in tools.values() if target in (t.server_id, t.id)]
        for t in previous:
            del tools[t.id], unit[t.id]
            index.discard(t.id)
        for t in new_tools:
            tools[t.id], unit[t.id] = t, vector_of(t.id)
            index.put(t)
        changed = {t.id for t in previous} | {t.id for t in new_tools}
        state.update(changed, previous)
    fresh = structural_links(list(tools.values()), np.vstack([unit[i] for i in tools]), options)
    assert sorted(state.links) == sorted((x.source, x.target, x.kind) for x in fresh)
    assert any(x.kind == CO_INVOKED for x in fresh) and any(x.kind == SCHEMA_COMPATIBLE for x in fresh)


def test_incremental_links_drop_a_link_a_new_closer_tool_displaces():
    """An unchanged tool whose short list a new tool enters loses its weakest link (and that link's
    mirror), exactly as linking afresh would."""
    from toolkg.canonicalize.links.incremental import IncrementalLinks
    from toolkg.canonicalize.links.structural import LinkIndex, structural_links

    options = LinkOptions(per_tool=2)
    hub = _tool("a", "plan_route", params=("pallet_count", "dock_number"))
    near = [_tool(f"b{i}", f"stack_{i}", params=("pallet_count", "dock_number", f"crate_{i}_label")) for i in range(2)]
    tools = [hub, *near]
    index = LinkIndex(tools)
    state = IncrementalLinks(index, options)
    assert (hub.id, near[1].id, SHARES_PARAMETERS) in state.links
    closer = _tool("c", "load_dock", params=("pallet_count", "dock_number"))
    index.put(closer)
    state.update({closer.id})
    fresh = structural_links([*tools, closer], None, options)
    assert sorted(state.links) == sorted((x.source, x.target, x.kind) for x in fresh)
    assert (hub.id, closer.id, SHARES_PARAMETERS) in state.links and (
        hub.id,
        near[1].id,
        SHARES_PARAMETERS,
    ) not in state.links
