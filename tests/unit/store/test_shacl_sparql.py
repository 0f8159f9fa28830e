"""The shapes compiled to SPARQL give exactly pySHACL's (focus, path, message) set.

pySHACL (``store/shacl_worker.py``) is the oracle throughout: on hand-picked edge cases, on random
graphs against a shapes file that uses every compiled component with a message of its own, and on
real extracted manifests broken by random mutations. A shape feature the compiler does not know must
fail when the shapes are read."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyoxigraph import Literal, NamedNode, Triple

from toolkg.ontology import SHAPES_FILE
from toolkg.store.shacl_sparql import SH, ShapeCompileError, compile_shapes
from toolkg.store.shacl_worker import validate_rows
from toolkg.store.validation import row_of

EX = "http://example.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
SUBCLASS_OF = NamedNode("http://www.w3.org/2000/01/rdf-schema#subClassOf")
PREFIXES = f"""@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <{EX}> .
@prefix xsd: <{XSD}> . @prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
"""
# Every compiled component, each with its own message so that a result names the component that made it.
EVERY_COMPONENT = (
    PREFIXES
    + """
ex:ThingShape a sh:NodeShape ; sh:targetClass ex:Thing ;
  sh:property [ sh:path ex:label ; sh:minCount 1 ; sh:maxCount 2 ; sh:message "label count" ] ;
  sh:property [ sh:path ex:label ; sh:datatype xsd:string ; sh:message "label datatype" ] ;
  sh:property [ sh:path ex:label ; sh:minLength 3 ; sh:message "label length" ] ;
  sh:property [ sh:path ex:label ; sh:pattern "^a.+z$" ; sh:message "label pattern" ] ;
  sh:property [ sh:path ex:link ; sh:pattern "/N[0-2]" ; sh:flags "i" ; sh:message "link pattern" ] ;
  sh:property [ sh:path ex:link ; sh:minLength 22 ; sh:message "link length" ] ;
  sh:property [ sh:path ex:link ; sh:class ex:Thing ; sh:message "link class" ] ;
  sh:property [ sh:path ex:link ; sh:nodeKind sh:IRI ; sh:message "link kind" ] ;
  sh:property [ sh:path ex:flag ; sh:datatype xsd:boolean ; sh:maxCount 1 ; sh:message "flag" ] ;
  sh:property [ sh:path ex:score ; sh:datatype xsd:decimal ; sh:message "score datatype" ] ;
  sh:property [ sh:path ex:score ; sh:minInclusive 0 ; sh:message "score min" ] ;
  sh:property [ sh:path ex:score ; sh:maxInclusive 1 ; sh:message "score max" ] ;
  sh:property [ sh:path ex:kind ; sh:in ( ex:a ex:b "c" 1 ) ; sh:message "kind" ] ;
  sh:property [ sh:path ex:text ; sh:datatype rdf:langString ; sh:message "text" ] .
ex:OtherShape a sh:NodeShape ; sh:targetClass ex:Other, ex:Thing ;
  sh:property [ sh:path ex:link ; sh:nodeKind sh:BlankNodeOrLiteral ; sh:maxCount 0 ; sh:message "other" ] ;
  sh:property [ sh:path ex:label ; sh:severity sh:Warning ; sh:minCount 5 ; sh:message "a warning" ] .
ex:Deactivated a sh:NodeShape ; sh:targetClass ex:Thing ; sh:deactivated true ;
  sh:property [ sh:path ex:label ; sh:minCount 5 ; sh:message "deactivated" ] .
"""
)


@pytest.fixture(scope="module")
def every_component(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("shapes") / "every.ttl"
    path.write_text(EVERY_COMPONENT, encoding="utf-8")
    return path


def pyshacl_says(shapes: Path, triples) -> set[tuple[str, str, str]]:
    return set(validate_rows([row_of(t) for t in triples], str(shapes)))


def compiled_says(shapes: Path, triples) -> set[tuple[str, str, str]]:
    return compile_shapes(shapes).violations(triples)


def ex(name: str) -> NamedNode:
    return NamedNode(EX + name)


def typed(lexical: str, datatype: str) -> Literal:
    return Literal(lexical, datatype=NamedNode(XSD + datatype))


# -- hand-picked cases where SHACL, pySHACL or rdflib have something to say --------------------------
# (triples added to a conforming node, the messages pySHACL reports)

THING = [Triple(ex("n0"), RDF_TYPE, ex("Thing")), Triple(ex("n0"), ex("label"), Literal("abcz"))]
EDGE_CASES = {
    "a conforming node": ([], set()),
    "a language tag is not xsd:string": (
        [Triple(ex("n0"), ex("label"), Literal("abcz", language="en"))],
        {"label datatype"},
    ),
    "a language-tagged text is rdf:langString": (
        [Triple(ex("n0"), ex("text"), Literal("hello", language="en-GB"))],
        set(),
    ),
    "a plain text is not rdf:langString": ([Triple(ex("n0"), ex("text"), Literal("hello"))], {"text"}),
    "an ill-typed boolean": ([Triple(ex("n0"), ex("flag"), typed("maybe", "boolean"))], {"flag"}),
    "a boolean in capitals is ill-typed to rdflib": (
        [Triple(ex("n0"), ex("flag"), typed("TRUE", "boolean"))],
        {"flag"},
    ),
    "two booleans rdflib reads as one": (
        [
            Triple(ex("n0"), ex("flag"), typed("1", "boolean")),
            Triple(ex("n0"), ex("flag"), typed("true", "boolean")),
        ],
        set(),
    ),
    "an ill-typed decimal under datatype and range": (
        [Triple(ex("n0"), ex("score"), typed("abc", "decimal"))],
        {"score datatype", "score min"},
    ),
    "a decimal in exponent form reads as a number to rdflib": (
        [Triple(ex("n0"), ex("score"), typed("1e0", "decimal"))],
        set(),
    ),
    "a decimal out of range": ([Triple(ex("n0"), ex("score"), typed("1.5", "decimal"))], {"score max"}),
    "a string never compares with a number": (
        [Triple(ex("n0"), ex("score"), Literal("0.5"))],
        {"score datatype", "score min", "score max"},
    ),
    "an integer compares with the bounds": (
        [Triple(ex("n0"), ex("score"), typed("01", "integer"))],
        {"score datatype"},
    ),
    "a boolean does not compare with a number": (
        [Triple(ex("n0"), ex("score"), typed("true", "boolean"))],
        {"score datatype", "score min"},
    ),
    "an IRI under a range": ([Triple(ex("n0"), ex("score"), ex("n1"))], {"score datatype", "score min", "score max"}),
    "a pattern on a typed literal reads its normalised form": (
        [Triple(ex("n0"), ex("label"), typed("01", "integer"))],
        {"label length", "label pattern", "label datatype"},
    ),
    "a pattern and a length on IRIs": (
        [
            Triple(ex("n0"), ex("link"), ex("n1")),
            Triple(ex("n0"), ex("link"), ex("n2-a-longer-name")),
            Triple(ex("n1"), RDF_TYPE, ex("Thing")),
        ],
        {"link class", "other", "label count", "link length"},
    ),
    "Python's $ matches before a final newline": ([Triple(ex("n0"), ex("label"), Literal("abcz\n"))], set()),
    "a carriage return is a character to Python's dot": ([Triple(ex("n0"), ex("label"), Literal("a\rbz"))], set()),
    "sh:class through rdfs:subClassOf in the data": (
        [
            Triple(ex("n0"), ex("link"), ex("n1")),
            Triple(ex("n1"), RDF_TYPE, ex("Special")),
            Triple(ex("Special"), SUBCLASS_OF, ex("Thing")),
        ],
        {"link length", "other", "label count"},
    ),
    "a target through rdfs:subClassOf in the data": (
        [
            Triple(ex("n5"), RDF_TYPE, ex("Special")),
            Triple(ex("Special"), SUBCLASS_OF, ex("Thing")),
        ],
        {"label count"},
    ),
    "a literal has no class": (
        [Triple(ex("n0"), ex("link"), Literal("n1"))],
        {"other", "link class", "link kind", "link length", "link pattern"},
    ),
    "sh:in by term, after rdflib's normalising": (
        [
            Triple(ex("n0"), ex("kind"), typed("01", "integer")),
            Triple(ex("n1"), RDF_TYPE, ex("Thing")),
            Triple(ex("n1"), ex("label"), Literal("abcz")),
            Triple(ex("n1"), ex("kind"), typed("1", "decimal")),
        ],
        {"kind"},
    ),
    "too many labels": (
        [Triple(ex("n0"), ex("label"), Literal("abz")), Triple(ex("n0"), ex("label"), Literal("a_z"))],
        {"label count"},
    ),
    "an empty label": ([Triple(ex("n0"), ex("label"), Literal(""))], {"label length", "label pattern"}),
    "no label at all": ([Triple(ex("n3"), RDF_TYPE, ex("Thing"))], {"label count"}),
}


@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_edge_cases_match_pyshacl(every_component, case):
    """Each case says which messages pySHACL gives; the compiled shapes give the same set of results."""
    added, messages = EDGE_CASES[case]
    expected = pyshacl_says(every_component, THING + added)
    assert {message for _, _, message in expected} == messages
    assert compiled_says(every_component, THING + added) == expected


def test_a_decimal_nan_under_a_range_raises_as_in_pyshacl(every_component):
    from decimal import InvalidOperation

    triples = [*THING, Triple(ex("n0"), ex("score"), typed("NaN", "decimal"))]
    for engine in (pyshacl_says, compiled_says):
        with pytest.raises(InvalidOperation):
            engine(every_component, triples)


def test_warnings_and_deactivated_shapes_are_not_reported(every_component):
    """A property shape of severity sh:Warning reports nothing, nor do those of a deactivated node shape."""
    triples = [*THING, Triple(ex("n0"), ex("link"), Literal("n1"))]
    messages = {message for _, _, message in compiled_says(every_component, triples)}
    assert "other" in messages and not messages & {"a warning", "deactivated"}


# -- random graphs against every component -----------------------------------------------------------

NODES = [ex(f"n{i}") for i in range(4)]
CLASSES = [ex("Thing"), ex("Other"), ex("Special")]
# Lexical forms rdflib and Oxigraph read differently ("0.50" and "0.5" are two terms to rdflib, one value to
# Oxigraph), ill-typed ones, Python regex corners. Not "NaN": a decimal NaN under a range raises (above).
LEXICAL = ["abcz", "a\nz", "az", "", "0", "1", "0.5", "0.50", "1.5", "-0", "+1", " 1", "1_0", "1e0", "01", "true"]
LEXICAL += ["TRUE", "maybe", "abc", "c", "2020-01-01", 'a"z', "a\\z", "\tz\x01"]
DATATYPES = [XSD + t for t in ("string", "boolean", "decimal", "integer", "double", "float", "date", "token")]
values = st.one_of(
    st.sampled_from(NODES + [ex("a"), ex("b"), ex("c")]),
    st.builds(
        lambda lexical, datatype: Literal(lexical, datatype=NamedNode(datatype)),
        st.sampled_from(LEXICAL),
        st.sampled_from([*DATATYPES, EX + "datatype"]),
    ),
    st.builds(
        lambda text, tag: Literal(text, language=tag), st.sampled_from(LEXICAL), st.sampled_from(["en", "EN-us"])
    ),
    st.text(alphabet='az\n\r_N0/"\\\té', max_size=6).map(Literal),  # N-Triples escapes their characters
)
statements = st.one_of(
    st.builds(Triple, st.sampled_from(NODES), st.just(RDF_TYPE), st.sampled_from(CLASSES)),
    st.builds(Triple, st.sampled_from(CLASSES), st.just(SUBCLASS_OF), st.sampled_from(CLASSES)),
    st.builds(
        Triple,
        st.sampled_from(NODES),
        st.sampled_from([ex(p) for p in ("label", "link", "flag", "score", "kind", "text", "unrelated")]),
        values,
    ),
)


@given(st.lists(statements, max_size=25))
def test_random_graphs_match_pyshacl(every_component, triples):
    assert compiled_says(every_component, triples) == pyshacl_says(every_component, triples)


# -- the project's shapes on broken real manifests -------------------------------------------------------


def test_every_property_shape_of_the_project_is_compiled():
    import rdflib

    properties = list(rdflib.Graph().parse(SHAPES_FILE).objects(None, rdflib.URIRef(SH + "property")))
    shapes = compile_shapes(SHAPES_FILE)
    assert len(shapes.checks) == len(properties) == 33  # 22 for the server graphs, 11 for the audit's
    assert "https://w3id.org/toolkg/ontology#confidence" in shapes.predicates


# -- what the compiler refuses --------------------------------------------------------------------------

REFUSED = {
    "an unknown component": "sh:property [ sh:path ex:p ; sh:maxLength 3 ; sh:message 'm' ]",
    "a nested shape": "sh:property [ sh:path ex:p ; sh:node ex:Other ; sh:message 'm' ]",
    "a path that is not a predicate": "sh:property [ sh:path [ sh:inversePath ex:p ] ; sh:message 'm' ]",
    "a property shape without a message": "sh:property [ sh:path ex:p ; sh:minCount 1 ]",
    "two messages": "sh:property [ sh:path ex:p ; sh:minCount 1 ; sh:message 'm', 'n' ]",
    "a constraint on the node shape": "sh:closed true",
    "another kind of target": "sh:targetNode ex:n0",
    "a severity on the node shape": "sh:severity sh:Warning ; sh:property [ sh:path ex:p ; sh:message 'm' ]",
}


def test_a_shape_that_is_a_class_is_refused(tmp_path):
    shapes = tmp_path / "shapes.ttl"
    shapes.write_text(
        PREFIXES + "ex:Thing a rdfs:Class, sh:NodeShape ; sh:property [ sh:path ex:p ; sh:message 'm' ] .\n"
    )
    with pytest.raises(ShapeCompileError, match="implicit target"):
        compile_shapes(shapes)


@pytest.mark.parametrize("what", list(REFUSED))
def test_what_is_not_compiled_fails_at_compile_time(tmp_path, what):
    shapes = tmp_path / "shapes.ttl"
    shapes.write_text(PREFIXES + f"ex:S a sh:NodeShape ; sh:targetClass ex:Thing ; {REFUSED[what]} .\n")
    with pytest.raises(ShapeCompileError):
        compile_shapes(shapes)
