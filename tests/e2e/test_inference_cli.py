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


def _petstore(path):
    def operation(op_id: str, *path_params: str) -> dict:
        return {
            "operationId": op_id,
            "summary": op_id,
            "parameters": [
                {"name": p, "in": "path", "required": True, "schema": {"type": "string"}} for p in path_params
            ],
            "responses": {"200": {"description": "OK"}},
        }

    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Petstore", "version": "1.0.0"},
        "paths": {
            "/pets": {"get": operation("listPets")},
            "/search/pets": {"get": operation("searchPets")},
            "/pets/{petId}": {"get": operation("showPetById", "petId")},
        },
    }
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def test_cli_deps_shows_every_rule_that_feeds_a_slot_with_its_evidence(cli, tmp_path):
    """Issue 51: the REST rule claims no slot. The member route's path parameter is fed by its collection and
    by the search route (which the REST rule does not see), and `toolkg deps --json` names each edge's rule and
    evidence."""
    store = tmp_path / "store"
    assert cli("build", str(_petstore(tmp_path / "petstore.json")), "--store", str(store), "-q").returncode == 0
    out = cli("deps", "--store", str(store), "--json")
    assert out.returncode == 0, out.stderr
    into = [e for e in json.loads(out.stdout)["edges"] if e["consumer"].endswith("::showPetById")]
    producers = {e["producer"].split("::")[1]: e for e in into if e["parameter"] == "petId"}
    assert {"listPets", "searchPets"} <= producers.keys()
    # each edge says which rule found it (the most confident of those that did) and why
    assert all(e["rule"] and e["evidence"] and e["basis"] == "inferred" for e in producers.values())
    assert "searchPets" in producers["searchPets"]["evidence"]


def test_deps_explain_says_which_step_dropped_each_proposal(cli, cli_process, tmp_path):
    """`toolkg deps --tool ID --explain`, run as a user runs it: every edge inference proposed into the tool,
    the kept ones exactly the stored edges, each dropped one with its step's reason; the settings file the
    build used changes the answer; misuse is a one-line usage error."""
    store = tmp_path / "store"
    assert cli("build", str(SHOP), "--store", str(store), "-q").returncode == 0
    shown = cli_process("deps", "--store", str(store), "--tool", "acme_place_order", "--explain", "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["tool"] == "shop::acme_place_order" and data["matches_store"] is True
    stored = json.loads(cli("deps", "--store", str(store), "--tool", "acme_place_order", "--json").stdout)["edges"]
    into = {(e["producer"], e["parameter"]) for e in stored if e["consumer"] == "shop::acme_place_order"}
    assert {(c["producer"], c["parameter"]) for c in data["considered"] if c["fate"] == "kept"} == into
    dropped = [c for c in data["considered"] if c["fate"] == "dropped"]
    assert dropped and all(c["reason"] and c["rule"] for c in dropped)
    assert any("learned_veto" in c["reason"] for c in dropped)  # the connectivity check the judge doubts
    table = cli_process("deps", "--store", str(store), "--tool", "acme_place_order", "--explain")
    assert "shop::acme_place_order.product_code <- shop::get_product_code  kept  [output-to-parameter 1.00]" in (
        table.stdout
    )
    # settings other than the build's: the answer follows them, and says the store was built otherwise
    settings = tmp_path / "strict.toml"
    settings.write_text("[inference]\nmin_confidence = 1.0\n", encoding="utf-8")
    strict = cli("deps", "--store", str(store), "--tool", "acme_place_order", "--explain", "--config", str(settings))
    assert strict.returncode == 0 and "under min_confidence 1.0" in strict.stdout
    assert strict.stderr.strip().startswith("note: the stored inferred edges differ")
    alone = cli("deps", "--store", str(store), "--explain")
    assert alone.returncode == 2 and "--explain explains one tool's edges: give --tool ID" in alone.stderr
    stray = cli("deps", "--store", str(store), "--config", str(settings))
    assert stray.returncode == 2 and "--config only applies with --explain" in stray.stderr
