"""OpenAPI 3 response ``links`` are dependencies the description declares: the linked operation depends on the
one whose response carries the link, for each parameter the link fills (the specification's own example shape:
``getUserByName`` links to ``getRepositoriesByOwner`` with ``username: $response.body#/username``)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolkg.extractors.manifests.openapi import parse_openapi
from toolkg.extractors.triples.structural import NameIndex, extract_structure
from toolkg.models import Manifest
from toolkg.ontology import TK


def _document(links: dict[str, Any], *, components: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "Repos", "version": "1"},
        "paths": {
            "/users/{username}": {
                "get": {
                    "operationId": "getUserByName",
                    "parameters": [{"name": "username", "in": "path", "required": True, "schema": {"type": "string"}}],
                    "responses": {"200": {"description": "the user", "links": links}},
                }
            },
            "/repositories/{username}": {
                "get": {
                    "operationId": "getRepositoriesByOwner",
                    "parameters": [{"name": "username", "in": "path", "required": True, "schema": {"type": "string"}}],
                    "responses": {"200": {"description": "repositories"}},
                }
            },
            "/repositories/{username}/{slug}": {
                "post": {
                    "responses": {"201": {"description": "made"}},
                    "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
                }
            },
        },
        "components": components or {},
    }


def _tools(document: dict[str, Any]):
    result = parse_openapi("spec.json", document, None)
    return {t.name: t for t in result.servers[0].tools}, [n.what for n in result.notices]


def test_a_link_by_operation_id_declares_the_parameter_dependency():
    tools, _ = _tools(
        _document(
            {
                "userRepositories": {
                    "operationId": "getRepositoriesByOwner",
                    "parameters": {"username": "$response.body#/username"},
                }
            }
        )
    )
    (dep,) = tools["getRepositoriesByOwner"].depends_on
    assert (dep.target, dep.kind, dep.parameter) == ("getUserByName", "parameterDirectlyDependsOn", "username")
    assert "userRepositories" in dep.reason and "$response.body#/username" in dep.reason
    assert tools["getUserByName"].depends_on == ()


def test_a_links_reason_names_its_file_and_json_pointer():
    tools, _ = _tools(
        _document(
            {
                "user/repos": {
                    "operationId": "getRepositoriesByOwner",
                    "parameters": {"username": "$response.body#/username"},
                }
            }
        )
    )
    (dep,) = tools["getRepositoriesByOwner"].depends_on
    assert dep.reason.endswith("[spec.json#/paths/~1users~1{username}/get/responses/200/links/user~1repos]")


def test_a_link_by_operation_ref_through_a_components_ref_with_a_location_prefix():
    link = {
        "operationRef": "#/paths/~1repositories~1{username}/get",
        "parameters": {"path.username": "$response.body#/username"},
    }
    tools, _ = _tools(_document({"repos": {"$ref": "#/components/links/Repos"}}, components={"links": {"Repos": link}}))
    (dep,) = tools["getRepositoriesByOwner"].depends_on
    assert dep.parameter == "username" and dep.target == "getUserByName"


def test_a_link_that_fills_only_the_body_is_a_tool_level_dependency():
    link = {"operationRef": "#/paths/~1repositories~1{username}~1{slug}/post", "requestBody": "$response.body"}
    tools, _ = _tools(_document({"make": link}))
    (name,) = [n for n in tools if n.startswith("post_")]
    (dep,) = tools[name].depends_on
    assert dep.kind == "toolDirectlyDependsOn" and dep.parameter is None


def test_links_to_nowhere_are_notices_and_the_tools_stay():
    links = {
        "gone": {"operationId": "noSuchOperation", "parameters": {"username": "x"}},
        "elsewhere": {"operationRef": "https://example.com/other.json#/paths/~1a/get"},
        "wrongParameter": {"operationId": "getRepositoriesByOwner", "parameters": {"nope": "x"}},
        "junk": ["not", "a", "link"],
    }
    tools, notes = _tools(_document(links))
    assert len(tools) == 3 and all(t.depends_on == () for t in tools.values())
    assert sum("link" in n for n in notes) == 4


def test_the_declared_link_becomes_a_declared_edge_in_the_graph():
    document = _document(
        {"r": {"operationId": "getRepositoriesByOwner", "parameters": {"username": "$response.body#/username"}}}
    )
    result = parse_openapi("spec.json", document, None)
    manifest = Manifest(path="/x/spec.json", sha256="0" * 64, format="openapi", servers=tuple(result.servers))
    index = NameIndex()
    index.add([t.id for t in result.servers[0].tools], manifest.path)
    extracted = extract_structure(manifest, index)
    triples = {(t.subject, t.predicate, t.object) for g in extracted.graphs for t in g.triples}
    assert any(p == TK.basis and o == TK.Declared for _, p, o in triples)
    assert not extracted.unresolved


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=12),
        st.one_of(st.none(), st.integers(), st.text(max_size=8), st.lists(st.integers())),
        max_size=4,
    )
)
def test_any_links_object_reads_without_losing_a_tool(links):
    tools, _ = _tools(_document({"l": {"operationId": "getRepositoriesByOwner", "parameters": links}}))
    assert len(tools) == 3
