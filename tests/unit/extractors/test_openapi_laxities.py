"""Real OpenAPI descriptions read as other tools read them: a laxity is a notice, never a lost operation.

The cases are small descriptions written for these tests (tests/cases/openapi_lax_*), each reproducing a
laxity measured in public descriptions: booleans written as strings, properties with no name, `$ref`s that
loop, leave the file or point nowhere, pointers with list indices or percent-encoded braces, Swagger 2
habits in a 3.0 document, a duplicate operationId, junk where a schema keyword belongs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import CASES
from toolkg.errors import ManifestError
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.openapi import HTTP_METHODS, parse_openapi
from toolkg.extractors.manifests.reading import fingerprint_file

BOOLEANS = CASES / "openapi_lax_booleans.json"
SHAPES = CASES / "openapi_lax_shapes.yaml"


def operations_in(document: dict) -> int:
    return sum(1 for item in document["paths"].values() for method in HTTP_METHODS if method in item)


def read(path: Path):
    file, data = fingerprint_file(path)
    result = ingest_manifest(file, data)
    assert result.manifest is not None, result.quarantined
    tools = {t.name: t for s in result.manifest.servers for t in s.tools}
    notices: dict[str, list[str]] = {}
    for notice in result.notices:
        notices.setdefault(notice.item.split("::", 1)[1], []).append(notice.what)
    return tools, result.quarantined, notices


def parameters(tool) -> dict[str, tuple[str, bool, str]]:
    return {p.name: (p.json_type, p.required, p.location) for p in tool.parameters}


def test_booleans_as_strings_and_nameless_properties_cost_no_operation():
    tools, quarantined, notices = read(BOOLEANS)
    assert not quarantined
    assert len(tools) == operations_in(json.loads(BOOLEANS.read_text())) == 3
    assert parameters(tools["getCity"]) == {
        "city": ("string", True, "path"),
        "units": ("string", False, "query"),
        "days": ("integer", True, "query"),
    }
    assert [o.name for o in tools["getCity"].outputs] == ["temperature"]
    assert parameters(tools["createReport"]) == {"title": ("string", True, "body"), "tags": ("array", False, "body")}
    assert parameters(tools["listStations"]) == {"near": ("string", False, "query")}
    assert [o.name for o in tools["listStations"].outputs] == ["id"]

    city = notices["getCity"]
    for expected in (
        "parameter 'city': required 'true' read as true",
        "parameter 'units': required 'false' read as false",
        "parameter 'units': deprecated 'TRUE' read as true",
        "parameter 'units': nullable 'true' read as true",
        "parameter 'days': required ' True ' read as true",
        "parameter 'days': allowEmptyValue 'false' read as false",
        "parameter 'days': explode 'True' read as true",
        "parameter 'days': exclusiveMinimum 'true' read as true",
        "output schema: property '' dropped: a property needs a name",
        "output 'temperature': nullable 'false' read as false",
    ):
        assert expected in city, (expected, city)
    report = notices["createReport"]
    for expected in (
        "request body: required 'true' read as true",
        "request body schema: property '' dropped: a property needs a name",
        "request body schema: additionalProperties 'false' read as false",
        "parameter 'title': readOnly 'false' read as false",
        "parameter 'tags': uniqueItems 'true' read as true",
    ):
        assert expected in report, (expected, report)
    assert "output schema items: property '' dropped: a property needs a name" in notices["listStations"]
    assert all("\n" not in n for ns in notices.values() for n in ns)


def test_each_notice_is_given_once_per_operation():
    _, _, notices = read(BOOLEANS)
    for found in notices.values():
        assert len(found) == len(set(found)), found


def test_shapes_other_tools_read_cost_at_most_their_one_part():
    tools, quarantined, notices = read(SHAPES)
    assert not quarantined, quarantined
    assert len(tools) == operations_in(yaml.safe_load(SHAPES.read_text())) == 8


def test_a_ref_cycle_costs_its_one_schema_part():
    tools, _, notices = read(SHAPES)
    loop = tools["readLoop"]
    assert parameters(loop) == {"ring": ("any", False, "query"), "plain": ("string", False, "query")}
    assert {o.name: o.json_type for o in loop.outputs} == {"loop": "any", "count": "integer"}
    assert (
        "parameter 'ring': $ref cycle #/components/schemas/RingA -> #/components/schemas/RingB -> "
        "#/components/schemas/RingA: read as any" in notices["readLoop"]
    )
    assert (
        "output 'loop': $ref cycle #/components/schemas/Self -> #/components/schemas/Self: read as any"
        in notices["readLoop"]
    )


def test_refs_that_cannot_be_followed_cost_their_one_part():
    tools, _, notices = read(SHAPES)
    elsewhere = tools["readElsewhere"]
    assert parameters(elsewhere) == {"limit": ("integer", True, "query"), "filter": ("any", False, "query")}
    assert elsewhere.outputs == ()
    assert notices["readElsewhere"] == [
        "parameter #1: $ref '#/components/parameters/Missing' points nowhere: parameter dropped",
        "parameter #2: $ref 'common.yaml#/components/parameters/Remote' points into another document, "
        "which is not read: parameter dropped",
        "parameter 'limit': required 'true' read as true",
        "parameter 'filter': $ref '#/components/schemas/Nowhere' points nowhere: read as any",
        "response '200': $ref 'https://example.invalid/responses.yaml#/Ok' points into another document, "
        "which is not read: no output read",
    ]


def test_pointers_with_list_indices_and_percent_encoding_resolve():
    tools, _, notices = read(SHAPES)
    write = tools["writePointers"]
    assert parameters(write) == {"id": ("string", True, "path")}
    assert [o.name for o in write.outputs] == ["size"]
    assert "writePointers" not in notices


def test_swagger_2_habits_in_a_3_document():
    tools, _, notices = read(SHAPES)
    legacy = tools["postLegacy"]
    assert parameters(legacy) == {
        "title": ("string", True, "body"),
        "body": ("string", False, "body"),
        "verbose": ("boolean", False, "query"),
        "note": ("string", False, "body"),
    }
    assert sorted(notices["postLegacy"]) == sorted(
        [
            "parameter 'payload': in 'body' is Swagger 2: read as the request body",
            "parameter 'payload': $ref '#/definitions/Payload' is Swagger 2: read as '#/components/schemas/Payload'",
            "parameter 'verbose': in ' Query' read as 'query'",
            "parameter 'verbose': type given on the parameter, not in a schema (Swagger 2): read as its schema",
            "parameter 'note': in 'formData' is Swagger 2: read as a request body property",
            "parameter 'note': type given on the parameter, not in a schema (Swagger 2): read as its schema",
            "parameter 'mystery': in 'somewhere' is not path, query, header or cookie: parameter dropped",
            "parameter #5: no name: parameter dropped",
        ]
    )


def test_a_duplicate_operation_id_names_the_later_operation_after_its_route():
    tools, _, notices = read(SHAPES)
    assert tools["duplicate"].description == "The first operation to use its operationId keeps it"
    assert tools["get_duplicate_b"].description == "The second is named after its method and path"
    assert notices["get_duplicate_b"] == [
        "operationId 'duplicate' is already used by GET /duplicate-a: named 'get_duplicate_b' after its route"
    ]


def test_junk_where_schema_keywords_belong_costs_that_keyword():
    tools, _, notices = read(SHAPES)
    junk = tools["postJunk"]
    assert junk.description == "404"
    assert parameters(junk) == {
        "kind": ("any", False, "body"),
        "level": ("string", False, "body"),
        "code": ("string", True, "body"),
        "size": ("integer", False, "body"),
        "both": ("string", False, "body"),
        "shape": ("any", False, "body"),
        "strange": ("string", False, "body"),
    }
    assert junk.parameters[1].enum == ()
    found = notices["postJunk"]
    for expected in (
        "summary is a number, not text: read as '404'",
        "description is a list, not text: ignored",
        "request body: required 'yes' is not a boolean: ignored",
        "request body schema: required True on an object schema is not a list of names: ignored",
        "request body schema: property 'code' says required: true (JSON Schema draft 3): read as required",
        "parameter 'kind': type 5 is not a type name: ignored",
        "parameter 'level': enum 'not-a-list' is not a list: ignored",
        "parameter 'shape': schema is a number, not an object: read as any",
        "output schema: properties is a list, not an object: ignored",
    ):
        assert expected in found, (expected, found)


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ([], "an OpenAPI document must be an object"),
        ({"openapi": "2.0", "paths": {}}, "unsupported OpenAPI version '2.0'"),
        ({"openapi": "3.0.0", "paths": "/pets"}, "'paths' must be an object"),
    ],
)
def test_what_cannot_be_read_at_all_is_still_refused_whole(document, reason):
    with pytest.raises(ManifestError, match=reason):
        parse_openapi("x.json", document, None)


# --- property: mutating schema parts never costs an operation ---------------------------------------------

_BOOLEAN_KEYS = ("nullable", "readOnly", "writeOnly", "deprecated", "uniqueItems", "required", "explode")
_text = st.text(alphabet="abcXYZ01 _-", max_size=8)  # names a client can call: control characters are refused
_junk = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _text),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=3)),
    max_leaves=6,
)
_KEYWORDS = (
    "type",
    "enum",
    "default",
    "description",
    "properties",
    "required",
    "items",
    "anyOf",
    "oneOf",
    "in",
    "name",
    "schema",
    "content",
    "x-junk",
    "$ref",
    "summary",
    "operationId",
    "responses",
    "requestBody",
    "parameters",
)
_REFS = (
    *("#/nowhere", "other.yaml#/x", "#/paths", "#", "#/", "#/components/schemas/Pet/properties/0", "%%", "#/0"),
    *("#/paths/%C2%B2", "#/tags/" + "9" * 5000, "#/definitions/Pet", "#/components/parameters/TraceId"),
)


def _parts(document: dict) -> list[tuple[Any, Any]]:
    """(container, key) of every value under paths and components that is a mapping, a list or a boolean key."""
    parts: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        for key, value in node.items() if isinstance(node, dict) else enumerate(node):
            if isinstance(value, dict | list) or key in _BOOLEAN_KEYS:
                parts.append((node, key))
            if isinstance(value, dict | list):
                walk(value)

    for top in ("paths", "components"):
        walk(document[top])
    return parts


def _operations(document: dict) -> int:
    """Operations as a reader counts them: each method of a path item that is an object."""
    return sum(
        1
        for item in document["paths"].values()
        if isinstance(item, dict)
        for method in HTTP_METHODS
        if isinstance(item.get(method), dict)
    )


@st.composite
def mutated_petstores(draw) -> dict:
    """tests/cases/petstore.yaml with up to 12 schema parts made lax: booleans as text, nameless keys,
    junk keywords and values, $refs to themselves, to nowhere and to other files."""
    document = yaml.safe_load((CASES / "petstore.yaml").read_text())
    document["components"].setdefault("schemas", {})["Loop"] = {"$ref": "#/components/schemas/Loop"}
    for _ in range(draw(st.integers(1, 12))):
        parts = _parts(document)
        if not parts:
            break
        container, key = draw(st.sampled_from(parts))
        target = container[key]
        kind = draw(st.sampled_from(["boolean text", "empty name", "junk keyword", "junk value", "self ref", "ref"]))
        if kind == "boolean text":
            container[key] = draw(st.sampled_from(["true", "FALSE", " True ", "yes", "", "0"]))
        elif kind == "empty name" and isinstance(target, dict):
            target[draw(st.sampled_from(["", " ", "\t"]))] = draw(st.sampled_from([{"type": "string"}, {}, 3]))
        elif kind == "junk keyword" and isinstance(target, dict):
            target[draw(st.sampled_from(_KEYWORDS))] = draw(_junk)
        elif kind == "junk value":
            container[key] = draw(_junk)
        elif kind == "self ref":
            container[key] = {"$ref": "#/components/schemas/Loop"}
        elif kind == "ref":
            container[key] = {"$ref": draw(st.sampled_from(_REFS))}
    return document


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_petstores())
def test_mutated_schema_parts_never_cost_an_operation(document):
    expected = _operations(document)  # a mutation may replace an operation itself: that one is not counted
    parsed = parse_openapi("mutated.yaml", document, None)
    # Only what is no object at all (a path item or an operation replaced by junk) is quarantined.
    reasons = [q.reason for q in parsed.quarantined]
    assert all(r.startswith(("path item must be an object", "operation must be an object")) for r in reasons)
    assert sum(len(s.tools) for s in parsed.servers) >= expected  # more: a path item $ref'd to another one
    assert all("\n" not in n.what for n in parsed.notices)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["openapi", "info", "paths", "components", "tags"]), _junk), _junk)
def test_only_an_unreadable_document_raises_and_then_a_manifest_error(top, other):
    document = {**yaml.safe_load((CASES / "petstore.yaml").read_text()), **top}
    for candidate in (document, other):
        try:
            parse_openapi("junk.yaml", candidate, None)
        except ManifestError:
            pass
