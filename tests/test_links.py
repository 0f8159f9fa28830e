"""Structural links (co-invoked, schema compatible, shared parameters), offline embeddings, and the store."""

from __future__ import annotations

import json

import numpy as np

from tests.conftest import CASES
from toolkg.embeddings import Embedder
from toolkg.extractors.links import (
    CO_INVOKED,
    SCHEMA_COMPATIBLE,
    SHARES_PARAMETERS,
    LinkOptions,
    co_invoked_links,
    schema_links,
    shared_parameter_links,
)
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


def test_build_stores_links_and_deps_lists_them(cli, tmp_path):
    store = tmp_path / "store"
    built = cli("build", str(CASES / "inference" / "shop.json"), "--store", str(store), "-q")
    assert built.returncode == 0, built.stderr
    assert "structural links:" in built.stdout
    listed = cli("deps", "--store", str(store), "--links", "--json")
    links = json.loads(listed.stdout)["links"]
    assert links and {x["kind"] for x in links} <= {CO_INVOKED, SCHEMA_COMPATIBLE, SHARES_PARAMETERS}
    again = cli("build", str(CASES / "inference" / "shop.json"), "--store", str(store), "-q", "--force")
    assert "0 descriptions embedded" in again.stdout  # vectors come from the store's cache
