"""The typed join's shapes (issue 51): list or search X then use one X by its id, an output that carries X, a
declared output field of the parameter's own name, a bare id, several producers a slot, and the same edges
whatever words a catalog uses. Each through ``infer_dependencies``'s default output, not the rule alone."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.canonicalize.inference.typed_join import KINDS, evidence_kind, listed, slot_entity
from toolkg.models import OutputField, Parameter, Tool


def _tool(name: str, *params: str, outputs: tuple[str, ...] = (), server: str = "svc", description: str = "") -> Tool:
    return Tool(
        server_id=server,
        name=name,
        description=description,
        parameters=tuple(Parameter(name=p, required=True, json_type="string") for p in params),
        outputs=tuple(OutputField(name=o) for o in outputs),
    )


def _pairs(tools: list[Tool]) -> set[tuple[str, str, str | None]]:
    return {(e.consumer, e.producer, e.parameter) for e in infer_dependencies(tools)}


def test_the_entity_of_a_slot_and_of_a_listing_name_meet_across_spellings():
    assert slot_entity("walletAddress", "get_balance") == ("wallet",)
    assert slot_entity("workflow_run_id", "get_workflow_run") == ("workflow", "run")
    assert slot_entity("id", "get_invoice_by_number") == ("invoice",)
    assert slot_entity("query", "search") == ()
    assert ("workflow", "run") in listed("list-workflow-runs-for-repo")
    assert ("invoice",) in listed("getOpenInvoices") and ("repository",) in listed("search_repos")


def test_list_then_get_by_id_when_the_lister_never_says_it_returns_ids():
    tools = [
        _tool("list-workflow-runs-for-repo", "owner", "repo"),
        _tool("get-workflow-run", "owner", "repo", "run_id", "workflow_run_id"),
    ]
    assert ("svc::get-workflow-run", "svc::list-workflow-runs-for-repo", "workflow_run_id") in _pairs(tools)


def test_a_bare_id_is_the_tools_own_object_fed_by_a_search():
    tools = [_tool("search_invoices", "customer"), _tool("get_invoice", "id"), _tool("delete_invoice", "id")]
    pairs = _pairs(tools)
    assert ("svc::get_invoice", "svc::search_invoices", "id") in pairs
    assert ("svc::delete_invoice", "svc::search_invoices", "id") in pairs


def test_an_output_that_carries_the_entity_and_a_field_of_the_same_name():
    tools = [
        _tool("place_order", "symbol", "amount", outputs=("order_id", "status")),
        _tool("cancel_order", "order_id"),
        _tool("plan_route", "city", outputs=("origin", "destination_city")),
        _tool("book_ride", "origin"),
    ]
    pairs = _pairs(tools)
    assert ("svc::cancel_order", "svc::place_order", "order_id") in pairs
    assert ("svc::book_ride", "svc::plan_route", "origin") in pairs


def test_several_producers_feed_one_slot_and_none_claims_it():
    tools = [
        _tool("list_tickets", "project"),
        _tool("search_tickets", "text"),
        _tool("create_ticket", "title", outputs=("ticket_id",)),
        _tool("close_ticket", "ticket_id"),
    ]
    producers = {p for c, p, _ in _pairs(tools) if c == "svc::close_ticket"}
    assert {"svc::list_tickets", "svc::search_tickets"} <= producers


def test_a_tool_given_the_value_is_no_source_of_it():
    tools = [_tool("get_order_details", "order_id", outputs=("order_id", "price")), _tool("refund_order", "order_id")]
    joined = {(e.consumer, e.producer) for e in infer_dependencies(tools) if e.rule == "typed-join"}
    assert ("svc::refund_order", "svc::get_order_details") not in joined


def test_tools_of_another_server_never_join():
    tools = [_tool("list_invoices", "q", server="billing"), _tool("get_invoice", "invoice_id", server="crm")]
    assert not any(p == "billing::list_invoices" and c == "crm::get_invoice" for c, p, _ in _pairs(tools))


_WORD = st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=4, max_size=8).map(lambda w: w + "o")


@settings(max_examples=25, deadline=None)
@given(_WORD, _WORD)
def test_renaming_the_entity_consistently_keeps_the_edges(thing, owner):
    """Another vocabulary (any made-up noun for the thing and its owner) gives the same edges."""
    tools = [
        _tool(f"list_{thing}s", f"{owner}_name"),
        _tool(f"get_{thing}", f"{thing}_id"),
        _tool(f"archive_{thing}", "id"),
    ]
    pairs = {(c.split("::")[1], p.split("::")[1]) for c, p, _ in _pairs(tools)}
    assert (f"get_{thing}", f"list_{thing}s") in pairs
    assert (f"archive_{thing}", f"list_{thing}s") in pairs


# Each shape of issue 51 in one catalog, its domain nouns placeholders: {a} listed then got, {b} searched then
# got by a camelCase id, {c} a declared output field and the parameter of its name, {d} an owner's name.
_SHAPES = [
    ("list_{a}s", ("{d}_name",), ()),
    ("get_{a}", ("{a}_id",), ()),
    ("archive_{a}", ("id",), ()),
    ("search_{b}s", ("query",), ()),
    ("get_{b}_details", ("{b}Id",), ()),
    ("plan_{c}", ("{d}_name",), ("{c}_{a}",)),
    ("book_{c}", ("{c}_{a}",), ()),
]
# ... and a REST pair whose names say nothing: the route's segment is the entity of a bare id
_ROUTED = [("everything", (), "GET /{b}s"), ("showOne", ("id",), "GET /{b}s/{{id}}")]


def _vocabulary_catalog(words: dict[str, str]) -> list[Tool]:
    tools = [
        _tool(
            name.format(**words), *(p.format(**words) for p in params), outputs=tuple(o.format(**words) for o in outs)
        )
        for name, params, outs in _SHAPES
    ]
    return tools + [
        _tool(name, *params, server="api").model_copy(update={"route": route.format(**words)})
        for name, params, route in _ROUTED
    ]


def _in_placeholders(pairs, words: dict[str, str]):
    back = sorted(((w, "{" + k + "}") for k, w in words.items()), key=lambda x: -len(x[0]))

    def undo(text: str) -> str:
        for word, mark in back:
            text = text.replace(word, mark)
        return text

    return {tuple(undo(part) if part else part for part in pair) for pair in pairs}


_VOCABULARY = st.lists(_WORD, min_size=4, max_size=4, unique=True).filter(
    lambda ws: not any(a != b and (a in b) for a in ws for b in ws)
)


@settings(max_examples=10, deadline=None)
@given(_VOCABULARY, _VOCABULARY)
def test_every_tool_and_parameter_renamed_into_another_vocabulary_keeps_the_edges(first, second):
    """Two made-up vocabularies for the same catalog: the same edges, placeholder for placeholder."""
    found = []
    for vocabulary in (first, second):
        words = dict(zip("abcd", vocabulary, strict=True))
        found.append(_in_placeholders(_pairs(_vocabulary_catalog(words)), words))
    assert found[0] == found[1]
    assert ("svc::get_{a}", "svc::list_{a}s", "{a}_id") in found[0]
    assert ("svc::archive_{a}", "svc::list_{a}s", "id") in found[0]
    assert ("svc::get_{b}_details", "svc::search_{b}s", "{b}Id") in found[0]
    assert ("svc::book_{c}", "svc::plan_{c}", "{c}_{a}") in found[0]
    assert ("api::showOne", "api::everything", "id") in found[0]


def test_every_kind_of_evidence_proposes_its_producers_and_none_claims_the_slot():
    """A listing by name used to take the slot from a tool whose output carries the thing: now both propose,
    each with its kind's confidence, and the slot's competition (competition.py) picks among every rule's."""
    from toolkg.canonicalize.inference.profiles import profile_of
    from toolkg.canonicalize.inference.typed_join import typed_join_edges

    tools = [
        _tool("list_pets", "owner"),
        _tool("book_visit", "clinic", outputs=("pets[].name", "time")),
        _tool("get_pet_record", "pet_id"),
    ]
    profiles = [profile_of(t) for t in tools]
    edges = typed_join_edges({"svc": profiles}, [profiles[2]])
    by_producer = {e.producer: e for e in edges}
    assert set(by_producer) == {"svc::list_pets", "svc::book_visit"}
    assert "name lists" in by_producer["svc::list_pets"].evidence
    assert "output carries" in by_producer["svc::book_visit"].evidence


@given(
    producer=st.from_regex(r"[a-z][a-z_]{0,20}", fullmatch=True),
    entity=st.from_regex(r"[a-z][a-z ]{0,20}", fullmatch=True),
)
def test_each_kind_of_join_evidence_reads_back_as_its_calibration_key(producer: str, entity: str):
    """rule_calibration.py fits a confidence per kind from the evidence texts: every kind's text must read back as
    that kind and no other, whatever the names in it."""
    for _, key, how in KINDS:
        text = f"{entity}_id identifies {entity}; " + how.format(
            producer=producer, entity=entity, other=entity, score=0.8
        )
        assert evidence_kind(text) == key
    assert evidence_kind("session_id <- login returns a session (same name)") is None
