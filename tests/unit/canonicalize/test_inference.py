"""Dependency inference on a small hand-made catalog, sparsification, the store and `toolkg deps`."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import CASES
from toolkg.canonicalize.inference.acyclic import acyclic
from toolkg.canonicalize.inference.incremental import IncrementalInference, edges_of
from toolkg.canonicalize.inference.infer import InferenceOptions, infer_dependencies
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import fingerprint_file
from toolkg.models import Parameter, Tool

SHOP = CASES / "inference" / "shop.json"


def _tools():
    file, data = fingerprint_file(SHOP)
    return [t for s in ingest_manifest(file, data).parsed.servers for t in s.tools]


RULES_ONLY = InferenceOptions(learned=False)  # the rules' own behaviour; the learned model has its tests below


def _edges():
    return {(e.consumer.split("::")[1], e.producer.split("::")[1]): e for e in infer_dependencies(_tools(), RULES_ONLY)}


def test_producer_consumer_pairs_link_with_kind_parameter_and_evidence():
    edges = _edges()
    code = edges["acme_place_order", "get_product_code"]
    assert (code.kind, code.parameter, code.confidence) == ("parameterDirectlyDependsOn", "product_code", 1.0)
    assert "name object of get_product_code" in code.evidence
    email = edges["acme_user_login", "validate_email"]  # a validator feeds what it validates
    assert (email.kind, email.parameter) == ("parameterDirectlyDependsOn", "email")
    year = edges["get_sales_by_year", "get_current_date"]  # a context getter: only for relative input
    assert (year.kind, year.parameter) == ("parameterIndirectlyDependsOn", "year")


def test_a_service_login_precedes_that_services_tools():
    edges = _edges()
    order = edges["acme_place_order", "acme_user_login"]
    assert (order.kind, order.parameter, order.rule) == (
        "parameterDirectlyDependsOn",
        "session_id",
        "namespace-authentication",
    )
    favorites = edges["acme_list_favorites", "acme_user_login"]  # no session parameter: a tool-level edge
    assert favorites.kind == "toolDirectlyDependsOn" and favorites.parameter is None


def test_preconditions_resource_and_connectivity():
    edges = _edges()
    assert edges["pair_bluetooth_headphones", "get_bluetooth_status"].rule == "resource-precondition"
    net = edges["acme_place_order", "get_network_status"]
    assert (net.kind, net.rule) == ("toolDirectlyDependsOn", "connectivity-precondition")
    assert ("calculate_tip", "get_network_status") not in edges  # a local computation needs no network
    assert ("get_current_date", "get_network_status") not in edges  # nor does a context getter


def test_generic_names_never_link():
    edges = _edges()
    assert ("search_documents", "get_query") not in edges
    assert ("search_documents", "get_name") not in edges


def test_fan_out_cap_keeps_only_strong_edges_of_promiscuous_producers():
    producer = Tool(
        server_id="s",
        name="list_widget_colors",
        description="Lists widget colors.",
        parameters=(Parameter(name="widget_kind", required=True),),
    )
    consumers = [
        Tool(server_id="s", name=f"paint_{i}", parameters=(Parameter(name="primary_widget_color", required=True),))
        for i in range(30)
    ]
    # the rules' cap (the learned model judges the same pairs on its own terms: tested below)
    assert len(infer_dependencies([producer, *consumers], InferenceOptions(weak_fanout_cap=40, learned=False))) == 30
    assert infer_dependencies([producer, *consumers], InferenceOptions(weak_fanout_cap=10, learned=False)) == []


def test_the_best_producer_is_found_among_many_by_key():
    """Among many producers of one key the fewest-parameter one wins, whichever order they come in;
    numbered parameters (ticker_2) match like unnumbered ones."""
    many = [
        Tool(
            server_id=f"s{i}",
            name=f"get_stock_ticker_{i}",
            parameters=tuple(Parameter(name=f"company_hint_{j}", required=True) for j in range(1 + i % 3)),
        )
        for i in range(60)
    ]
    consumer = Tool(
        server_id="c",
        name="compare_stock_performance",
        parameters=(Parameter(name="stock_ticker_1", required=True), Parameter(name="stock_ticker_2", required=True)),
    )
    for catalog in (many, many[::-1]):
        edges = infer_dependencies([*catalog, consumer], InferenceOptions(weak_fanout_cap=100))
        assert {(e.parameter, e.producer) for e in edges if e.consumer == consumer.id} == {
            ("stock_ticker_1", "s0::get_stock_ticker_0"),
            ("stock_ticker_2", "s0::get_stock_ticker_0"),
        }


def test_declared_pairs_are_not_inferred_again():
    tools = _tools()
    pair = ("shop::acme_place_order", "shop::get_product_code")
    edges = infer_dependencies(tools, declared=[pair])
    assert pair not in {(e.consumer, e.producer) for e in edges}


def test_explicit_mentions_name_the_producer():
    edges = _edges()
    named = edges["verify_upload", "make_digest"]  # "generated by the make_digest tool"
    assert (named.kind, named.parameter, named.rule, named.confidence) == (
        "parameterDirectlyDependsOn",
        "checksum",
        "explicit-mention",
        0.95,
    )
    described = edges["plan_shopping", "fetch_recipe"]  # "obtained from fetching the recipe"
    assert (described.parameter, described.rule) == ("ingredients", "explicit-mention")
    assert not any(c == "plan_shopping" and e.parameter == "store" for (c, _), e in edges.items())  # by the user


def test_a_setter_reads_the_state_it_changes_first():
    edge = _edges()["set_screen_brightness", "get_screen_brightness"]
    assert (edge.kind, edge.rule) == ("toolIndirectlyDependsOn", "read-before-write")


def _server(server: str, *tools: tuple[str, str, tuple[tuple[str, bool], ...]]) -> list[Tool]:
    return [
        Tool(
            server_id=server,
            name=name,
            description=description,
            parameters=tuple(Parameter(name=p, json_type="string", required=r) for p, r in parameters),
        )
        for name, description, parameters in tools
    ]


def test_learned_edges_add_same_server_producers_and_drop_only_doubted_rule_pairs():
    """A search tool whose results carry what a tool of the same server takes, with no rule to say so: the
    learned model (on by default) links them; every edge the rules keep is still there unless the model doubts
    its same-server pair (with no veto, all are), and a pair the rules keep gets no second, learned edge."""
    from toolkg.canonicalize.inference.pairs import RULE, judge

    notes = _server(
        "notes",
        ("search_notes", "Search the notes of the knowledge base by keyword.", (("keyword", True),)),
        ("edit_note", "Edit one note of the knowledge base.", (("title", True), ("content", True))),
        ("read_note", "Read one note of the knowledge base.", (("title", True),)),
    )
    shop = _tools()
    rules_only = infer_dependencies(notes + shop, InferenceOptions(learned=False))
    assert not any(e.rule == RULE for e in rules_only)
    edges = infer_dependencies(notes + shop)
    learned = [e for e in edges if e.rule == RULE]
    found = {(e.consumer, e.producer, e.parameter) for e in learned}
    assert ("notes::read_note", "notes::search_notes", "title") in found, found
    ruled_pairs = {(e.consumer, e.producer) for e in rules_only}
    for e in learned:
        assert e.consumer.partition("::")[0] == e.producer.partition("::")[0] and e.consumer != e.producer
        assert (e.consumer, e.producer) not in ruled_pairs and 0.5 <= e.confidence <= 1.0
        assert e.evidence and e.kind in (
            "parameterDirectlyDependsOn",
            "parameterIndirectlyDependsOn",
            "toolDirectlyDependsOn",
        )
    doubted = judge(notes + shop, infer_dependencies(notes + shop, InferenceOptions(learned=False), sparsify=False))
    assert all(c.partition("::")[0] == p.partition("::")[0] for c, p in doubted.doubted)
    kept = {(e.consumer, e.producer, e.parameter) for e in edges}
    for e in rules_only:
        assert ((e.consumer, e.producer, e.parameter) in kept) != ((e.consumer, e.producer) in doubted.doubted)
    no_veto = infer_dependencies(notes + shop, InferenceOptions(learned_veto=0.0))
    assert {(e.consumer, e.producer, e.parameter) for e in rules_only} <= {
        (e.consumer, e.producer, e.parameter) for e in no_veto
    }


_VERBS = ("list", "search", "get", "create", "open", "delete", "update", "send", "run")
_NOUNS = ("note", "user", "file", "order", "page", "repo", "issue", "channel")


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.sampled_from(_VERBS),
            st.sampled_from(_NOUNS),
            st.lists(
                st.tuples(
                    st.sampled_from([*_NOUNS, "id", "name", "text"]),
                    st.sampled_from(["_id", "_name", ""]),
                    st.booleans(),
                ),
                max_size=3,
            ),
        ),
        max_size=14,
    )
)
def test_learned_edges_stay_on_their_server_one_per_slot(specs):
    from toolkg.canonicalize.inference.pairs import judge

    tools, seen = [], set()
    for server, verb, noun, params in specs:
        name = f"{verb}_{noun}"
        if (server, name) in seen:
            continue
        seen.add((server, name))
        parameters = {f"{p}{suffix}": required for p, suffix, required in params}
        tools += _server(server, (name, f"{verb.title()} a {noun}.", tuple(parameters.items())))
    edges = judge(tools, [], threshold=0.0).edges
    slots = [(e.consumer, e.parameter) for e in edges]
    assert len(slots) == len(set(slots))
    names = {t.id: t for t in tools}
    for e in edges:
        assert e.consumer in names and e.producer in names and e.consumer != e.producer
        assert e.consumer.partition("::")[0] == e.producer.partition("::")[0]
        assert e.parameter is None or e.parameter in {p.name for p in names[e.consumer].parameters}
        assert 0.0 <= e.confidence <= 1.0


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),
            st.sampled_from(_VERBS),
            st.sampled_from(_NOUNS),
            st.lists(
                st.tuples(st.sampled_from([*_NOUNS, "id", "name"]), st.sampled_from(["_id", ""]), st.booleans()),
                max_size=2,
            ),
        ),
        max_size=10,
    )
)
def test_a_server_added_incrementally_gets_the_edges_the_whole_catalog_gives_it(specs):
    """What incremental sync relies on: adding one server's tools to the rest (``IncrementalInference``) gives
    them the edges a whole-catalog run gives them (learned, doubted and kept alike), whatever the other
    servers hold."""
    tools, seen = [], set()
    for server, verb, noun, params in specs:
        if (server, f"{verb}_{noun}") in seen:
            continue
        seen.add((server, f"{verb}_{noun}"))
        parameters = {f"{p}{suffix}": required for p, suffix, required in params}
        tools += _server(server, (f"{verb}_{noun}", f"{verb.title()} a {noun}.", tuple(parameters.items())))
    server_a = {t.id for t in tools if t.server_id == "a"}
    whole = {e for e in infer_dependencies(sorted(tools, key=lambda t: t.id)) if e.consumer in server_a}
    kept = IncrementalInference([t for t in tools if t.id not in server_a])
    kept.apply({t.id: t for t in tools if t.id in server_a})
    # the engine keeps each consumer's edges; which pairs close a loop is the whole catalog's (as sync does)
    assert {e for e in acyclic(edges_of(kept.final), kept.declared) if e.consumer in server_a} == whole
