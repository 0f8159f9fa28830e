"""Issue 51's canonical shapes, each a small synthetic catalog in ``tests/cases/shapes/`` read as a build reads
it (parsed, then as the store gives it back to inference: ``as_read``) and inferred with the default settings:
list-then-get, search-then-get, REST items from several collections, same-named declared output fields, a
``$ref``-named entity, a bare ``id``, a short form a server uses beside the long one, and labels that mean the
same. The e2e test of the same shapes through ``toolkg build`` and ``toolkg deps --json`` is in
``tests/e2e/test_inference_cli.py``; the renaming property in ``tests/unit/canonicalize/test_typed_join.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CASES
from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import fingerprint_file
from toolkg.flows.stages.infer import as_read
from toolkg.models import InferredEdge, Tool

SHAPES = CASES / "shapes"


def _edges(name: str) -> list[InferredEdge]:
    file, data = fingerprint_file(Path(SHAPES / name))
    result = ingest_manifest(file, data)
    assert result.manifest is not None, result.quarantined
    tools = [as_read(t) for s in result.manifest.servers for t in s.tools]
    return infer_dependencies(tools)


def _pairs(name: str) -> set[tuple[str, str, str | None]]:
    return {(e.consumer.split("::")[1], e.producer.split("::")[1], e.parameter) for e in _edges(name)}


def test_list_then_get_by_id_when_the_lister_never_says_it_returns_ids():
    pairs = _pairs("list_then_get.json")
    assert ("get_shipment", "list_shipments", "shipment_id") in pairs
    assert ("get_parcels", "list_shipments", "shipment_id") in pairs


def test_search_then_get_by_an_id_in_camel_case():
    assert ("get_lyrics", "search_songs", "songId") in _pairs("search_then_get.json")


def test_rest_items_fed_by_more_than_one_collection():
    """``/articles/{article_id}`` is fed by the search and by the recent articles, each a collection of them."""
    producers = {p for c, p, q in _pairs("rest_collections.yaml") if c == "readArticle" and q == "article_id"}
    assert {"searchArticles", "recentArticles"} <= producers


def test_a_response_listing_the_items_by_ref_feeds_them_beside_the_named_collections():
    producers = {p for c, p, q in _pairs("rest_collections.yaml") if c == "readArticle" and q == "article_id"}
    assert "frontPage" in producers


def test_a_declared_output_field_feeds_the_parameter_of_its_name():
    edges = [e for e in _edges("declared_outputs.json") if e.parameter == "origin"]
    assert [(e.consumer, e.producer) for e in edges] == [("declared_outputs::book_ride", "declared_outputs::plan_trip")]
    assert edges[0].basis == "inferred"  # the outputSchema declares the field, not who takes it (docs/inference.md)
    assert "output origin" in edges[0].evidence or "output field origin" in edges[0].evidence


def test_a_ref_component_names_the_entity_a_response_carries():
    """Only the component's name says the dashboard's ``recent`` entries are orders."""
    edges = [e for e in _edges("ref_entity.yaml") if e.parameter == "order_id"]
    assert [(e.consumer, e.producer) for e in edges] == [("shop::cancelOne", "shop::getDashboard")]
    assert "carries order" in edges[0].evidence


def test_a_bare_id_is_the_collection_its_route_puts_it_under():
    assert ("showOne", "everything", "id") in _pairs("bare_id.yaml")


def test_a_short_form_the_server_uses_beside_the_long_one():
    edges = [e for e in _edges("short_forms.json") if e.parameter == "spec_id"]
    assert [e.producer for e in edges] == ["short_forms::list_specifications"]
    assert "short form spec = specification" in edges[0].evidence


def test_labels_that_mean_the_same_meet_by_their_embeddings():
    edges = [e for e in _edges("similar_labels.json") if e.parameter == "movie_id"]
    assert [e.producer for e in edges] == ["similar_labels::list_films"]
    assert "close to movie" in edges[0].evidence


def test_an_agent_noun_searcher_feeds_the_getters_of_its_object_whatever_the_id_is_called():
    """``reg_id`` names nothing a tool of the server yields: it identifies the getter's own object, the study the
    searcher finds (``study_sites_getter``: its last noun, sites, is yielded by none, so the study)."""
    pairs = _pairs("searcher_getters.json")
    assert ("study_getter", "study_searcher", "reg_id") in pairs
    assert ("study_sites_getter", "study_searcher", "reg_id") in pairs


def test_an_id_of_a_word_of_the_tool_s_name_means_the_phrase_it_is_part_of():
    """``pull_number`` of ``get_pull_request_files``: the pull request, not the files the tool returns."""
    producers = {p for c, p, q in _pairs("searcher_getters.json") if c == "get_pull_request_files"}
    assert "list_pull_requests" in producers
    assert "create_or_update_file" not in producers


def test_a_server_s_one_login_precedes_its_writes_and_its_logout_not_its_public_reads():
    edges = {(e.consumer.split("::")[1], e.producer.split("::")[1]): e for e in _edges("server_login.json")}
    for consumer in ("place_order", "cancel_order", "shop_logout"):
        assert edges[consumer, "shop_login"].rule in ("server-login", "namespace-authentication")
    assert ("get_product_price", "shop_login") not in edges
    assert ("shop_login", "shop_logout") not in edges


@pytest.mark.slow  # several seconds (a real server's write timeout, a store built): make test, not test-fast
def test_the_store_gives_inference_back_what_as_read_says(built_store):
    """A build infers over the tools it reads back from the store (``read_tools``); sync infers over
    ``as_read`` of the parsed tools. The two are the same tool for tool, JSON types of parameters and outputs
    included (a boolean flag is no slot another tool's value fills: pair_candidates.is_slot), so a sync infers
    what a rebuild infers."""
    from toolkg.store.oxigraph_store import ToolStore
    from toolkg.store.records import read_tools

    catalog = CASES / "real" / "openai" / "bfcl-multi-turn"
    store = ToolStore(str(built_store(catalog)), read_only=True)
    try:
        stored = {t.id: t for t in read_tools(store)}
    finally:
        store.close()
    parsed: dict[str, Tool] = {}
    for path in sorted(catalog.glob("*.json")):
        file, data = fingerprint_file(path)
        parsed |= {t.id: as_read(t) for s in ingest_manifest(file, data).parsed.servers for t in s.tools}
    assert stored.keys() == parsed.keys()
    for tool_id, tool in parsed.items():
        read = stored[tool_id]
        assert read.parameters == tool.parameters, tool_id
        assert sorted(read.outputs, key=lambda o: o.name) == sorted(tool.outputs, key=lambda o: o.name), tool_id
    types = {p.json_type for t in stored.values() for p in t.parameters}
    assert {"boolean", "string", "integer"} <= types
