"""Entity canonicalization: normalisation, fuzzy clusters, over-merge guards, recorded and stable merges."""

from __future__ import annotations

import json

import pytest

from toolkg.canonicalize.entities.clustering import CANONICAL_GRAPH, Entity, EntityOptions, cluster
from toolkg.store.oxigraph_store import ToolStore
from toolkg.text.words import entity_name


@pytest.mark.parametrize(
    "surfaces, canonical",
    [
        (["Suppliers", "supplier", "SUPPLIERS", "supplier's"], "supplier"),
        (["PurchaseOrders", "purchase_orders", "purchase-order", "Purchase Order"], "purchase order"),
        (["Time Zones", "time zone"], "time zone"),
    ],
)
def test_normalisation_gives_one_name(surfaces, canonical):
    assert {entity_name(s) for s in surfaces} == {canonical}


def _entities(*labels: str, kind: str = "BusinessObject") -> list[Entity]:
    return [Entity(iri=f"urn:e:{i}", type=kind, label=label, tools=len(labels) - i) for i, label in enumerate(labels)]


def _pairs(merges) -> set[tuple[str, str]]:
    return {(m.member.label, m.canonical.label) for m in merges}


def test_spelling_variants_merge_into_the_most_used_member():
    merges = cluster(
        _entities(
            "email address", "e mail address", "timezone", "time zone", "geographical location", "geographic location"
        )
    )
    assert _pairs(merges) == {
        ("e mail address", "email address"),
        ("time zone", "timezone"),
        ("geographic location", "geographical location"),
    }
    assert all(m.method == "fuzzy:token_sort_ratio" and 92 <= m.score <= 100 for m in merges)


@pytest.mark.parametrize(
    "a, b",
    [
        ("ipv4 address", "ipv6 address"),  # numbers differ
        ("axis x title", "axis y title"),  # the difference is one letter-word
        ("target temperature", "target temperature c"),  # one is more specific
        ("protect document", "unprotect document"),  # opposites
        ("provide", "provider"),  # one word each, not a spelling variant
        ("lead", "load"),  # too short to judge
        ("information", "informations"),  # nothing but a generic word
    ],
)
def test_guards_prevent_over_merging(a, b):
    assert cluster(_entities(a, b)) == []


def test_threshold_is_configurable():
    assert len(cluster(_entities("colour scheme", "color scheme"))) == 1  # token_sort_ratio 96 >= 92
    assert cluster(_entities("colour scheme", "color scheme"), EntityOptions(threshold=97)) == []


def test_merges_are_recorded_reversible_and_stable(build, store_dir, tmp_path):
    def catalog(names):
        tools = [
            {"name": f"get_{n}", "description": f"Returns the {n.replace('_', ' ')}.", "parameters": []} for n in names
        ]
        folder = tmp_path / "catalog"
        folder.mkdir(exist_ok=True)
        (folder / "tools.json").write_text(json.dumps(tools))
        return folder

    summary = build([catalog(["email_address", "verified_email_address", "e_mail_address"])], store_dir)
    assert summary.canonical["merged"] == 1 and "entities: " in str(summary)
    store = ToolStore(store_dir)
    (row,) = store.select(f"""SELECT ?member ?canonical ?alt ?method ?score WHERE {{ GRAPH {CANONICAL_GRAPH} {{
        ?m tk:canonicalEntity ?c . ?c skos:altLabel ?alt .
        ?r a tk:EntityMerge ; tk:mergedEntity ?m ; tk:mergedInto ?c ; tk:mergeMethod ?method ; tk:mergeScore ?score .
        BIND(STR(?m) AS ?member) BIND(STR(?c) AS ?canonical) }} }}""")
    assert row["canonical"].value.endswith("/entity/business-object/email-address")
    assert row["member"].value.endswith("/entity/business-object/e-mail-address")
    assert (row["alt"].value, row["method"].value) == ("e mail address", "fuzzy:token_sort_ratio")
    # the merged entity keeps its own IRI and triples: dropping the merge graph undoes the merge
    assert store.select('SELECT ?t WHERE { ?t tk:hasEntity ?e . ?e rdfs:label "e mail address" }')
    store.close()

    # The catalog grows with a more used spelling: the canonical entity stays the same.
    summary = build(
        [catalog(["email_address", "e_mail_address", "get_e_mail_address", "list_e_mail_address"])], store_dir
    )
    (row,) = ToolStore(store_dir).select(f"""SELECT DISTINCT ?c WHERE {{ GRAPH {CANONICAL_GRAPH} {{
        ?m tk:canonicalEntity ?c }} }}""")
    assert row["c"].value.endswith("/entity/business-object/email-address")
