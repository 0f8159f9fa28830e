"""A SPARQL syntax error points into the query its user wrote, and an undeclared prefix is named in one line.

The project's prefixes used to be prepended to the query as eight lines of its text, so every position Oxigraph
reported was eight lines down from the user's; they now go to Oxigraph beside the text (``prefixes=``). The
same reading serves ``toolkg query``, the MCP ``sparql`` tool (both through ``ToolStore.query``) and the
SPARQL sandbox (``store.sparql_sandbox_worker.run_query``). The CLI and MCP answers are checked in
tests/e2e/test_cli_papercuts.py and tests/integration/test_mcp_listing.py.
"""

from __future__ import annotations

import pytest
from pyoxigraph import Literal, NamedNode, Quad, Store

from toolkg.ontology import TK
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.query_guard import syntax_error_line, undefined_prefix
from toolkg.store.sparql_sandbox_worker import run_query

ON_LINE_3 = "SELECT * WHERE {\n  ?s ?p ?o\n  FILTR }"
UNDECLARED = "SELECT * WHERE { ?s foo:bar ?o }"


@pytest.fixture
def store(tmp_path):
    with ToolStore(tmp_path / "store") as opened:
        yield opened


def _error(store: ToolStore, query: str) -> str:
    with pytest.raises(SyntaxError) as caught:
        store.query(query)
    return syntax_error_line(caught.value, query)


def test_an_error_on_the_third_line_is_reported_on_the_third_line(store):
    assert _error(store, ON_LINE_3).startswith("invalid SPARQL: error at 3:")
    assert _error(store, "ASK { ?s ?p }").startswith("invalid SPARQL: error at 1:")


def test_an_undeclared_prefix_is_named_in_one_line(store):
    line = _error(store, UNDECLARED)
    assert line == "invalid SPARQL: error at 1:21: undefined prefix 'foo:' (declare it with PREFIX foo: <IRI>)"
    typo = _error(store, "SELECT ?n WHERE {\n ?t tks:name ?n }")
    assert typo.startswith("invalid SPARQL: error at 2:") and "'tks:' (did you mean tk:?" in typo


def test_the_project_prefixes_need_no_declaration_and_a_query_s_own_wins(store):
    tool = NamedNode("urn:t")
    store._store.extend([Quad(tool, TK.name, Literal("t"), NamedNode("urn:g"))])
    assert [r["n"].value for r in store.select("SELECT ?n WHERE { ?t tk:name ?n }")] == ["t"]
    mine = "PREFIX tk: <urn:other#> SELECT ?n WHERE { ?t tk:name ?n }"
    assert store.select(mine) == []


def test_the_endpoint_backend_answers_the_same_line():
    store = Store()
    status, _, body = run_query(store, {"query": UNDECLARED}, allow_service=False, max_result_bytes=1 << 20)
    assert (status, body.decode()) == (
        400,
        "invalid SPARQL: error at 1:21: undefined prefix 'foo:' (declare it with PREFIX foo: <IRI>)",
    )
    status, _, body = run_query(store, {"query": ON_LINE_3}, allow_service=False, max_result_bytes=1 << 20)
    assert status == 400 and body.decode().startswith("invalid SPARQL: error at 3:") and b"\n" not in body
    status, _, body = run_query(store, {"query": "ASK { ?t a tk:Tool }"}, allow_service=False, max_result_bytes=1 << 20)
    assert status == 200 and b"false" in body  # tk: known without the endpoint writing it into the query


def test_the_first_undefined_prefix_skips_declared_and_predefined_ones():
    assert undefined_prefix("PREFIX ex: <urn:x#> ASK { ex:a tk:b ?c }") is None
    assert undefined_prefix("ASK { ?a <urn:x:y> 'a:b' ;\n 東京:p ?c ; bar:q ?d }") == ("東京", 2, 2)
    assert (
        syntax_error_line("error at 1:2: expected one of x\ny", "ASK")
        == "invalid SPARQL: error at 1:2: expected one of x"
    )


def test_oxigraph_s_other_complaints_about_a_prefix_name_it_too_and_an_earlier_error_stays(store):
    # Oxigraph says "expected OPTIONAL" for an undeclared prefix in subject position
    assert "undefined prefix 'foo:'" in _error(store, "SELECT ?n WHERE { ?t tk:name ?n . foo:a ?p ?n }")
    earlier = _error(store, "SELECT ?n WHERE { ?t ?p } { foo:a ?p ?n }")
    assert earlier == "invalid SPARQL: error at 1:27: expected OPTIONAL"  # Oxigraph's own: before foo:
