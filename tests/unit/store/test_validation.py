"""SHACL: a tool whose triples break a shape is quarantined with the shape's message; the rest loads."""

from __future__ import annotations

from pyoxigraph import Literal, Triple

from tests.conftest import CASES
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import fingerprint_file
from toolkg.extractors.triples.structural import NameIndex, extract_structure
from toolkg.models import ServerGraph
from toolkg.ontology import DCTERMS, TK, iris
from toolkg.store.validation import Validator


def extracted_openai():
    file, data = fingerprint_file(CASES / "openai_tools.json")
    return extract_structure(ingest_manifest(file, data).manifest, NameIndex())


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
