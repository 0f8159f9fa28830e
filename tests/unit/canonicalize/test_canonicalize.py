"""Entity canonicalization: normalisation, fuzzy clusters, over-merge guards, recorded and stable merges."""

from __future__ import annotations

import pytest

from toolkg.canonicalize.entities.clustering import Entity, EntityOptions, cluster
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
