"""SHACL: a tool whose triples break a shape is quarantined with the shape's message; the rest loads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyoxigraph import Literal, NamedNode, Triple

from tests.conftest import CASES
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import fingerprint_file
from toolkg.extractors.triples.structural import NameIndex, extract_structure
from toolkg.models import ServerGraph
from toolkg.ontology import DCTERMS, TK, TK_NS, iris
from toolkg.store.validation import Validator


def extracted_openai():
    file, data = fingerprint_file(CASES / "openai_tools.json")
    return extract_structure(ingest_manifest(file, data).parsed, NameIndex())


def tamper(extracted, drop=(), add=()):
    (graph,) = extracted.graphs
    triples = tuple(t for t in graph.triples if t not in drop) + tuple(add)
    return extracted.model_copy(update={"graphs": (ServerGraph(**{**dict(graph), "triples": triples}),)})


def test_structural_triples_conform():
    with Validator(workers=1) as validator:
        checked, problems = validator.validate(extracted_openai())
    assert problems == [] and checked.graphs[0].tool_ids == ("openai_tools::get_weather", "openai_tools::get_forecast")


def test_violating_tool_is_withheld_and_reported():
    extracted = extracted_openai()
    weather = iris.tool_iri("openai_tools", "get_weather")
    city = iris.parameter_iri(weather, "city")
    bad = tamper(
        extracted,
        drop=[t for t in extracted.graphs[0].triples if t.subject == city and t.predicate == TK.required],
        add=[Triple(weather, DCTERMS.description, Literal("a second description"))],
    )
    with Validator(workers=1) as validator:
        checked, problems = validator.validate(bad)
    (problem,) = problems
    assert problem.item == "openai_tools::get_weather" and problem.stage == "validate"
    assert "a tool has at most one description" in problem.reason
    assert "a parameter says exactly once whether it is required" in problem.reason
    graph = checked.graphs[0]
    assert graph.tool_ids == ("openai_tools::get_forecast",)
    assert not any(weather.value in str(t) for t in graph.triples)


def test_shapes_allow_exactly_the_ontology_dependency_kinds():
    """SHACL's sh:in of dependency kinds is the one list written in Turtle twice; it must match the
    sub-properties of tk:dependsOn that everything else reads (toolkg.ontology.vocabulary)."""
    import rdflib

    from toolkg.ontology import SHAPES_FILE, TK_NS
    from toolkg.ontology.vocabulary import DEPENDENCY_KINDS

    shapes = rdflib.Graph().parse(SHAPES_FILE)
    sh = rdflib.Namespace("http://www.w3.org/ns/shacl#")
    lists = [
        {str(item).removeprefix(TK_NS) for item in rdflib.collection.Collection(shapes, node)}
        for node in shapes.objects(None, sh["in"])
    ]
    kinds = [found for found in lists if "dependsOn" in found]
    assert kinds == [set(DEPENDENCY_KINDS)]


def test_a_cached_verdict_is_the_computed_one(tmp_path):
    extracted = extracted_openai()
    weather = iris.tool_iri("openai_tools", "get_weather")
    bad = tamper(extracted, add=[Triple(weather, DCTERMS.description, Literal("a second description"))])
    with Validator(workers=1) as plain:
        expected = [plain.validate(x) for x in (extracted, bad)]
    for _ in range(2):  # the second validator reads every verdict from the first one's cache
        with Validator(workers=1, cache_path=tmp_path / "validation.sqlite") as cached:
            assert [cached.validate(x) for x in (extracted, bad)] == expected
    from toolkg.result_cache import ResultCache

    keys = ResultCache(tmp_path / "validation.sqlite")._db.execute("SELECT COUNT(*) FROM result").fetchone()[0]
    assert keys == 2 and expected[1][1]  # one verdict per distinct input; the tampered one has a problem


# -- the compiled engine against pySHACL on broken manifests ---------------------------------------------


def extracted_with_dependencies() -> list[Triple]:
    """The structural triples of four small manifests: servers, tools, parameters, outputs and declared
    dependencies (ToolLinkOS's two files refer to each other, so both are indexed)."""
    manifests = []
    for name in ("toollinkos/core.json", "toollinkos/regular.json", "openai_tools.json", "notes_openapi31.json"):
        file, data = fingerprint_file(CASES / name)
        manifests.append(ingest_manifest(file, data).parsed)
    index = NameIndex()
    for m in manifests:
        index.add([t.id for s in m.servers for t in s.tools], m.path)
    return [t for m in manifests for g in extract_structure(m, index).graphs for t in g.triples]


TRIPLES = extracted_with_dependencies()
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
SUBCLASS_OF = NamedNode("http://www.w3.org/2000/01/rdf-schema#subClassOf")
XSD = "http://www.w3.org/2001/XMLSchema#"
CLASSES = [TK.Tool, TK.Server, TK.Parameter, TK.Output, TK.Dependency, NamedNode(TK_NS + "Unknown")]


def typed(lexical: str, datatype: str) -> Literal:
    return Literal(lexical, datatype=NamedNode(XSD + datatype))


def mutate(triples: list[Triple], data) -> list[Triple]:
    """One random break of the kinds a generator bug could make."""
    kind = data.draw(st.sampled_from(MUTATIONS))
    at = data.draw(st.integers(0, len(triples) - 1))
    s, p, o = triples[at]
    if kind == "drop":
        return triples[:at] + triples[at + 1 :]
    if kind == "another value":  # the predicate twice, the second value taken from another triple
        other = data.draw(st.sampled_from([t.object for t in triples if t.predicate == p] + [Literal("other")]))
        return [*triples, Triple(s, p, other)]
    if kind == "subclass":  # a node typed by a subclass of its class, declared in the data graph
        sub = NamedNode(TK_NS + "Special")
        return [Triple(s, p, sub) if t is triples[at] and p == RDF_TYPE else t for t in triples] + [
            Triple(sub, SUBCLASS_OF, o if p == RDF_TYPE else TK.Tool)
        ]
    new = {
        "datatype": lambda: Literal(o.value, datatype=NamedNode(XSD + data.draw(st.sampled_from(DATATYPES)))),
        "ill-typed": lambda: data.draw(st.sampled_from([typed("maybe", "boolean"), typed("abc", "decimal")])),
        "language tag": lambda: Literal(o.value, language="en"),
        "class": lambda: data.draw(st.sampled_from(CLASSES)),
        "blank string": lambda: Literal(data.draw(st.sampled_from(["", " ", "x"]))),
        "confidence": lambda: data.draw(st.sampled_from([typed(v, "decimal") for v in ("1.5", "-0.1", "1.00", "0")])),
        "dependency kind": lambda: data.draw(st.sampled_from([NamedNode(TK_NS + "relatedTo"), TK.dependsOn])),
        "IRI or literal": lambda: Literal(o.value) if isinstance(o, NamedNode) else NamedNode(TK_NS + "x"),
        "identifier": lambda: Literal(data.draw(st.sampled_from(["no-separator", "a::b\n", "::b", "a::"]))),
    }[kind]()
    return [Triple(s, p, new) if i == at else t for i, t in enumerate(triples)]


MUTATIONS = ["drop", "another value", "subclass", "datatype", "ill-typed", "language tag", "class", "blank string"]
MUTATIONS += ["confidence", "dependency kind", "IRI or literal", "identifier"]
DATATYPES = ["string", "boolean", "decimal", "integer", "anyURI"]


@given(st.data())
def test_compiled_shapes_report_what_pyshacl_reports_on_broken_manifests(data):
    triples = TRIPLES
    for _ in range(data.draw(st.integers(1, 3))):
        triples = mutate(triples, data)
    with Validator(engine="pyshacl", workers=1) as reference, Validator(engine="sparql") as compiled:
        assert set(compiled.violations(triples)) == set(reference.violations(triples))


def test_both_engines_quarantine_alike():
    extracted = extracted_openai()
    weather = iris.tool_iri("openai_tools", "get_weather")
    bad = tamper(extracted, add=[Triple(weather, DCTERMS.description, Literal("a second description"))])
    with Validator(engine="pyshacl", workers=1) as reference, Validator(engine="sparql") as compiled:
        assert compiled.validate(bad) == reference.validate(bad)
        assert compiled.validate(bad)[1]  # it did quarantine something
    assert len(TRIPLES) > 100 and any(t.predicate == TK.confidence for t in TRIPLES)  # the mutations' material


def test_the_engine_is_chosen_by_argument_or_environment(monkeypatch):
    from toolkg.environment import SHACL_ENGINE
    from toolkg.errors import ConfigError

    assert Validator().engine == "sparql"
    monkeypatch.setenv(SHACL_ENGINE.name, "pyshacl")
    assert Validator().engine == "pyshacl" and Validator(engine="sparql").engine == "sparql"
    monkeypatch.setenv(SHACL_ENGINE.name, "rdfunit")
    with pytest.raises(ConfigError, match="SHACL engine"):
        Validator()


def test_verdicts_are_cached_per_engine(tmp_path):
    from toolkg.result_cache import ResultCache

    for engine in ("sparql", "pyshacl", "sparql"):
        with Validator(engine=engine, cache_path=tmp_path / "validation.sqlite") as validator:
            assert validator.violations(TRIPLES) == []
    keys = ResultCache(tmp_path / "validation.sqlite")._db.execute("SELECT COUNT(*) FROM result").fetchone()[0]
    assert keys == 2
