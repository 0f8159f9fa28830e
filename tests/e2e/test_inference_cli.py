"""`toolkg deps`: the inferred edges and a tool's closure, from the CLI."""

from __future__ import annotations

import json

from tests.conftest import CASES

SHOP = CASES / "inference" / "shop.json"


def test_cli_deps_lists_edges_and_the_closure(cli, tmp_path):
    store = tmp_path / "store"
    assert cli("build", str(SHOP), "--store", str(store), "-q").returncode == 0
    out = cli("deps", "--store", str(store), "--tool", "acme_place_order")
    assert out.returncode == 0, out.stderr
    assert (
        "shop::acme_place_order -> shop::get_product_code  parameterDirectlyDependsOn via product_code  [inferred 1.00]"
        in out.stdout
    )
    assert "shop::acme_place_order depends transitively on" in out.stdout
    assert "shop::validate_email" in out.stdout.splitlines()[-1]  # through the login
    data = json.loads(cli("deps", "--store", str(store), "--json").stdout)
    assert {"consumer", "producer", "kind", "parameter", "confidence", "basis", "rule", "evidence"} <= set(
        data["edges"][0]
    )
    missing = cli("deps", "--store", str(store), "--tool", "nope")
    assert missing.returncode == 2 and "--tool 'nope': no such tool in" in missing.stderr


SHAPES = CASES / "shapes"
ARAZZO = CASES / "arazzo"


def test_the_canonical_shapes_and_an_arazzo_workflow_through_build_and_deps(cli, tmp_path):
    """Issue 51's shapes (tests/integration/test_dependency_shapes.py) as a user builds them, and the edges an
    Arazzo workflow declares, each with where it is declared."""
    store = tmp_path / "store"
    built = cli("build", str(SHAPES), str(ARAZZO), "--store", str(store), "-q")
    assert built.returncode == 0, built.stderr
    data = json.loads(cli("deps", "--store", str(store), "--json").stdout)
    edges = {(e["consumer"], e["producer"], e["parameter"]): e for e in data["edges"]}
    for consumer, producer, parameter in [
        ("list_then_get::get_shipment", "list_then_get::list_shipments", "shipment_id"),
        ("search_then_get::get_lyrics", "search_then_get::search_songs", "songId"),
        ("newsroom::readArticle", "newsroom::searchArticles", "article_id"),
        ("newsroom::readArticle", "newsroom::recentArticles", "article_id"),
        ("declared_outputs::book_ride", "declared_outputs::plan_trip", "origin"),
        ("shop::cancelOne", "shop::getDashboard", "order_id"),  # only the $ref's component name says 'order'
        ("kennel::showOne", "kennel::everything", "id"),
        ("short_forms::validate", "short_forms::list_specifications", "spec_id"),
    ]:
        assert (consumer, producer, parameter) in edges, (consumer, producer, parameter)
        assert edges[consumer, producer, parameter]["basis"] == "inferred"
    declared = edges["petstore::placeOrder", "petstore::findPetsByStatus", "petId"]
    assert declared["basis"] == "declared"
    assert "$steps.findPets.outputs.petId" in declared["evidence"]
    assert "adopt.arazzo.yaml#/workflows/0/steps/2/requestBody/payload/petId" in declared["evidence"]
