"""The query guard: what it counts, that it passes real queries, and that what it passes does not crash Oxigraph.

The shapes (tests/support/query_shapes.py) are the ones that overflowed Oxigraph's stack when tried
(``benchmarks/query_guard_bench.py`` measures where). For each, the largest query the guard accepts must run
to an answer in ``toolkg query`` (in-process) and through ``toolkg serve`` (the backend not restarted), and
a much larger one is refused.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT
from tests.support.query_shapes import CRASHED_AT, SHAPES, SLOW, largest_accepted
from toolkg.store.query_guard import DEFAULT_LIMITS, QueryRefused, check_query, measure, with_project_prefixes
from toolkg.store.saved_queries import saved_queries


def test_the_limits_stay_well_under_every_crash_measured():
    for name, crash in CRASHED_AT.items():
        shape = SHAPES.get(name) or SLOW[name]
        assert largest_accepted(shape) * 1.5 < crash, name
    for shape in {**SHAPES, **SLOW}.values():
        with pytest.raises(QueryRefused):
            check_query(shape(4000))


def test_real_queries_pass():
    """Every saved query and the README's example pass, and the limits are far from them."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    examples = re.findall(r'toolkg query "([^"]+)"', readme)
    assert examples
    for text in [q.render() for q in saved_queries().values()] + examples:
        shape = check_query(text)  # (raises if over a limit)
        assert shape.depth <= DEFAULT_LIMITS.max_depth // 4
        assert shape.complexity <= DEFAULT_LIMITS.max_complexity // 4


def test_what_is_refused_and_why():
    cases = {
        "INSERT DATA { <urn:a> <urn:b> <urn:c> }": (403, "read-only"),
        "PREFIX x: <urn:x#> # a comment\n DELETE WHERE { ?s ?p ?o }": (403, "read-only"),
        "SELECT * { SERVICE <http://169.254.169.254/latest> { ?s ?p ?o } }": (403, "SERVICE"),
        "SELECT * { service SILENT <http://localhost/> { ?s ?p ?o } }": (403, "SERVICE"),
        "SELECT * { ?s ?p '" + "x" * 70_000 + "' }": (413, "too large"),
    }
    for text, (status, words) in cases.items():
        with pytest.raises(QueryRefused) as refused:
            check_query(text)
        assert refused.value.status == status and words in str(refused.value)
        assert "\n" not in str(refused.value)
    # In an expression, "<" after an operand is "less than", as Oxigraph reads it: what follows is counted,
    # not taken for an IRI (here ~4,000 levels of parentheses and a 30,000-long chain, both of which crash it).
    hidden_parens = "SELECT * WHERE { FILTER((?x<" + "(" * 4000 + "1" + ")" * 4000 + ")>(0)) }"
    hidden_chain = "SELECT * WHERE { FILTER((?x<" + "-".join(["1"] * 30_000) + ")>(0)) }"
    assert measure(hidden_parens).depth > 4000 and measure(hidden_chain).complexity > 30_000
    for text in (hidden_parens, hidden_chain):
        with pytest.raises(QueryRefused):
            check_query(text)
    assert measure("SELECT * { ?s ?p ?o FILTER(?o IN (<urn:a>, <urn:b>)) }").complexity == 7
    # Where the lexer and Oxigraph could disagree, the guard errs towards counting (found in review).
    deep = "{" * 3000 + "}" * 3000
    bypasses = {
        "comment ended by CR": "SELECT * # x\r{ SERVICE <http://169.254.169.254/> { ?s ?p ?o } }",
        "escape inside an IRI": "SELECT * { ?s <urn:x\\u0061#> ?o . " + deep + " }",
        "hash in a VALUES row": "SELECT * { VALUES (?a ?b) { (<urn:a> <urn:b#>) } " + deep + " }",
        "variable of other letters": "SELECT * { FILTER((?\u3001<" + "(" * 3000 + "1" + ")" * 3000 + ")>(0)) }",
        "escape outside": "SELECT * WHERE \\u007B ?s ?p ?o \\u007D",
    }
    for name, text in bypasses.items():
        with pytest.raises(QueryRefused):
            check_query(text)
            pytest.fail(name)
    assert check_query("SELECT * { ?s <urn:x\\u0061> ?o }").depth == 1
    # Inside strings, IRIs and comments, brackets and keywords are text, not structure.
    quiet = 'SELECT * { ?s ?p "{{{ SERVICE ((((" . ?s ?p <urn:x:(> } # {{{{{{ SERVICE'
    assert measure(quiet).depth == 1 and not measure(quiet).service


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_is_measured_or_refused_never_an_error(text):
    try:
        shape = check_query(text)
    except QueryRefused as refused:
        assert refused.status in (400, 403, 413) and "\n" not in str(refused)
        return
    assert shape.depth <= DEFAULT_LIMITS.max_depth
    # Quoted, the same text counts for nothing.
    literal = '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r") + '"'
    assert measure(f"SELECT * {{ ?s ?p {literal} }}").complexity == measure("SELECT * { ?s ?p 1 }").complexity


def test_project_prefixes_are_declared_once_and_never_override():
    assert with_project_prefixes("SELECT * { ?t a tk:Tool ; rdfs:label ?l }").count("PREFIX") == 2
    mine = "PREFIX tk: <urn:mine#>\nSELECT * { ?t a tk:Tool }"
    assert with_project_prefixes(mine) == mine
    assert with_project_prefixes("SELECT * { ?s ?p ?o }") == "SELECT * { ?s ?p ?o }"
