"""Declared outputs, read as deep as what a tool yields: nested fields by path (a wrapper's fields too),
a schema's own $refs, and function documents' ``response``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkg.extractors.manifests.formats import parse_openai
from toolkg.extractors.manifests.schema import MAX_OUTPUT_FIELDS, local_refs, outputs_from_schema


def names(schema, resolve=None) -> list[str]:
    kwargs = {"resolve": resolve} if resolve else {}
    return [o.name for o in outputs_from_schema(schema, item="t", **kwargs)]


def test_a_listing_yields_its_items_fields_by_path():
    schema = {
        "type": "object",
        "properties": {
            "total": {"type": "integer"},
            "places": {
                "type": "array",
                "items": {"type": "object", "properties": {"placeId": {"type": "string"}, "name": {"type": "string"}}},
            },
        },
    }
    assert names(schema) == ["total", "places", "places[].placeId", "places[].name"]


def test_a_wrappers_fields_and_local_refs_are_read():
    # what pydantic and FastMCP write: {"result": <the model>} with the model under $defs
    schema = {
        "$defs": {"Reservation": {"type": "object", "properties": {"reservation_id": {"type": "string"}}}},
        "type": "object",
        "properties": {"result": {"$ref": "#/$defs/Reservation", "description": "the reservation"}},
    }
    assert names(schema, local_refs(schema)) == ["result", "result.reservation_id"]
    # a reference it cannot follow is no error: the field reads as 'any'
    broken = {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}, "b": {"type": "string"}}}
    assert names(broken, local_refs(broken)) == ["a", "b"]


def test_a_function_documents_response_is_its_output():
    document = [
        {
            "name": "get_symbol_by_name",
            "description": "The stock symbol of a company",
            "parameters": {"type": "dict", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            "response": {"type": "dict", "properties": {"symbol": {"type": "string"}}},
        },
        {
            "name": "broken",
            "parameters": {"type": "dict", "properties": {}},
            "response": {"type": "dict", "properties": {"a": 5}},
        },
    ]
    parsed = parse_openai("f.json", document, None)
    tools = {t.name: t for s in parsed.servers for t in s.tools}
    assert [o.name for o in tools["get_symbol_by_name"].outputs] == ["symbol"]
    assert tools["broken"].outputs == ()  # an unreadable response costs its outputs, not the tool
    assert not parsed.quarantined


json_leaf = st.sampled_from([{"type": "string"}, {"type": "integer"}, {}, {"$ref": "#/$defs/X"}, {"type": 7}])
schemas = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.builds(
            lambda p: {"type": "object", "properties": p}, st.dictionaries(st.text(min_size=1), inner, max_size=5)
        ),
        st.builds(lambda i: {"type": "array", "items": i}, inner),
    ),
    max_leaves=40,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8), schemas, min_size=1, max_size=6))
def test_any_nesting_gives_bounded_unique_paths(properties):
    schema = {"$defs": {"X": {"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}}}, "properties": properties}
    try:
        found = names(schema, local_refs(schema))
    except Exception as exc:  # only the top level is checked strictly: a bad top-level field is the tool's error
        assert type(exc).__name__ == "ItemError"
        return
    assert len(found) == len(set(found))
    assert len(found) <= max(len(properties), MAX_OUTPUT_FIELDS) + len(properties)


def test_a_refs_component_name_is_kept_beside_what_it_resolves_to():
    """``$ref``s are followed, and the component each named stays on the field (issue 51: the name is often the
    only word saying what entity a value is)."""
    from toolkg.extractors.manifests.formats import parse_mcp
    from toolkg.extractors.manifests.schema import output_schema_name, parameter_from_schema

    document = {
        "$defs": {
            "order-summary-object": {"type": "object", "properties": {"total": {"type": "number"}}},
            "Customer": {"type": "object", "properties": {"email": {"type": "string"}}},
        },
        "type": "object",
        "properties": {
            "recent": {"type": "array", "items": {"$ref": "#/$defs/order-summary-object"}},
            "buyer": {"allOf": [{"$ref": "#/$defs/Customer"}, {"description": "who bought"}]},
            "note": {"type": "string"},
        },
    }
    fields = {o.name: o.schema_name for o in outputs_from_schema(document, item="t", resolve=local_refs(document))}
    assert fields["recent"] == "order-summary-object" and fields["buyer"] == "Customer"
    assert fields["note"] is None and fields["recent[].total"] is None
    listing = {"$defs": document["$defs"], "type": "array", "items": {"$ref": "#/$defs/order-summary-object"}}
    assert output_schema_name(listing, local_refs(listing)) == "order-summary-object"
    assert (
        parameter_from_schema("who", {"$ref": "#/components/schemas/a~1b%20c"}, required=True, item="t").schema_name
        == "a/b c"
    )
    tool = (
        parse_mcp("m.json", {"tools": [{"name": "t", "inputSchema": {}, "outputSchema": listing}]}, None)
        .servers[0]
        .tools[0]
    )
    assert tool.output_schema_name == "order-summary-object"
