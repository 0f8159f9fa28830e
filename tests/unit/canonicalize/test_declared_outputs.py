"""Declared outputs joined to parameters: a nested field by its own name, an echo feeds nothing, and a field of a
record returned whole loses to a tool that returns just that value."""

from __future__ import annotations

from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.canonicalize.inference.profiles import output_key
from toolkg.models import OutputField, Parameter, Tool


def _tool(name: str, params: tuple[str, ...], outputs: tuple[str, ...], description: str = "") -> Tool:
    return Tool(
        server_id="api",
        name=name,
        description=description or name.replace("_", " "),
        parameters=tuple(Parameter(name=p, required=True) for p in params),
        outputs=tuple(OutputField(name=o) for o in outputs),
    )


def _producers(tools: list[Tool], consumer: str, parameter: str) -> set[str]:
    return {e.producer for e in infer_dependencies(tools) if e.consumer == consumer and e.parameter == parameter}


def test_output_keys_read_a_nested_field_by_its_name_and_a_bare_id_by_its_container():
    assert output_key("places[].placeId") == ("place", "id")
    assert output_key("places[].id") == ("place", "id")
    assert output_key("owner.login") == ("owner", "login")
    assert output_key("total_count") == ("total", "count")


def test_a_nested_output_field_feeds_a_parameter_that_qualifies_it():
    tools = [
        _tool("search_places", ("text_query",), ("places", "places[].placeId", "places[].displayName")),
        _tool("compute_route", ("originPlaceId", "destinationPlaceId"), ("routes",)),
    ]
    assert _producers(tools, "api::compute_route", "originPlaceId") == {"api::search_places"}


def test_an_echo_feeds_nothing_and_a_record_field_counts_less():
    tools = [
        _tool("get_symbol_by_name", ("name",), ("symbol",), "The stock symbol of a company name"),
        _tool("get_stock_info", ("symbol",), ("symbol", "price", "volume", "market_cap")),
        _tool("get_order_details", ("order_id",), ("id", "symbol", "price", "amount", "status")),
        _tool("place_order", ("symbol", "amount", "price"), ("order_id",)),
    ]
    assert "api::get_stock_info" not in _producers(tools, "api::place_order", "symbol")
    # place_order returns the order_id get_order_details takes, and that record's fields are place_order's
    # parameters: a loop, which keeps the id's edge (the order is placed first) and drops the record's
    assert _producers(tools, "api::get_order_details", "order_id") == {"api::place_order"}
    assert not _producers(tools, "api::place_order", "amount")
    # without the loop (place_order declares no output) the record's field feeds it, at less than full trust
    unlooped = [*tools[:3], _tool("place_order", ("symbol", "amount", "price"), ())]
    record = [
        e for e in infer_dependencies(unlooped) if e.producer == "api::get_order_details" and e.parameter == "amount"
    ]
    assert record and all(e.confidence < 1.0 and "a field of the record" in e.evidence for e in record)
