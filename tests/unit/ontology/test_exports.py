"""Exports without the CLI: the JSON-LD context covers the ontology, any quads round-trip through every writer,
the ontology page documents every term (the exported files and the page in a browser: tests/e2e/test_exports.py)."""

from __future__ import annotations

import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import pytest
import rdflib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyoxigraph import BlankNode, Literal, NamedNode, Quad, RdfFormat, parse
from rdflib.collection import Collection

from tests.conftest import TOOLKG
from tests.support.rdf_datasets import RDF_TYPE, XSD, _canonical, _merged, _via_rdflib
from toolkg.ontology import ONTOLOGY_FILE, TK_NS, iris
from toolkg.ontology.docs import context_terms, iri_prefixes, jsonld_context, ontology_html
from toolkg.store import export

# rdflib's own chatter: its JSON-LD parser and N-Quads writer use its deprecated APIs, and it warns about
# every ill-typed literal the generated cases are made of (a "+5"^^xsd:boolean reads back as written).
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*is deprecated, use Dataset:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Parsing weird boolean:UserWarning"),
]


def test_the_context_has_a_term_for_every_ontology_term_with_its_coercion():
    context = jsonld_context()["@context"]
    ontology = rdflib.Graph().parse(ONTOLOGY_FILE)
    OWL, RDFS = rdflib.OWL, rdflib.RDFS
    for term in set(ontology.subjects(rdflib.RDF.type, None)):
        if not str(term).startswith(TK_NS):
            continue
        name = str(term)[len(TK_NS) :]
        definition = context[name]
        iri = definition["@id"] if isinstance(definition, dict) else definition
        assert iri == f"tk:{name}"
        if (term, rdflib.RDF.type, OWL.ObjectProperty) in ontology:
            assert definition["@type"] == "@id", name
        datatypes = [r for r in ontology.objects(term, RDFS.range) if str(r).startswith(str(rdflib.XSD))]
        if datatypes and (term, rdflib.RDF.type, OWL.DatatypeProperty) in ontology:
            assert definition["@type"] == f"xsd:{str(datatypes[0])[len(str(rdflib.XSD)) :]}", name
    for name, base in iri_prefixes().items():  # one prefix per id family, usable in compact IRIs
        assert context[name] == base and base.endswith(("/", "#"))
    assert context["line-of-business"] == iris.BASE + "entity/line-of-business/"
    # A hand-written document in the context's terms means what it says.
    doc = {
        "@context": context,
        "@id": "tool:weather/get%20forecast",
        "@type": "Tool",
        "hasParameter": "tool:weather/get%20forecast/param/city",
        "readOnlyHint": "true",
        "name": "get forecast",
    }
    graph = rdflib.Graph().parse(data=json.dumps(doc), format="json-ld")
    tool = rdflib.URIRef(iris.tool_iri("weather", "get forecast").value)
    assert (tool, rdflib.RDF.type, rdflib.URIRef(TK_NS + "Tool")) in graph
    assert (tool, rdflib.URIRef(TK_NS + "hasParameter"), rdflib.URIRef(str(tool) + "/param/city")) in graph
    assert (tool, rdflib.URIRef(TK_NS + "readOnlyHint"), rdflib.Literal(True)) in graph


_TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12)  # lone surrogates are not text


_FAMILIES = sorted(iri_prefixes().values())


def _iri(draw_family: str, rest: str) -> NamedNode:
    return NamedNode(draw_family + quote(rest, safe="-._~/") if rest else draw_family)


_IRIS = st.one_of(
    st.builds(_iri, st.sampled_from(_FAMILIES), _TEXT),
    st.builds(iris.tool_iri, _TEXT, _TEXT),
    st.builds(lambda t: iris.entity_iri("LineOfBusiness", t), _TEXT),
    st.sampled_from(["http://example.org/a.", "urn:x:y", "https://example.org/p#", "https://example.org/x/%20"]).map(
        NamedNode
    ),
)


_BLANKS = st.sampled_from(["b0", "b1", "x-y"]).map(BlankNode)


_LANGUAGES = st.from_regex(r"[a-z]{2,3}(-([a-z]{2}|[0-9]{3}|[a-z]{4}))?", fullmatch=True)  # language-region


_DATATYPES = st.sampled_from(
    [XSD + "integer", XSD + "decimal", XSD + "boolean", XSD + "dateTime", XSD + "double"]
    + ["http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON", iris.BASE + "tool/a/b", "urn:datatype"]
).map(NamedNode)


_LEXICAL = st.one_of(_TEXT, st.sampled_from(["007", "+5", "-0", ".5", "1.", "true", "1", "1e3", '{"a": [1]}']))


_LITERALS = st.one_of(
    st.builds(Literal, _TEXT),
    st.builds(lambda v, lang: Literal(v, language=lang), _TEXT, _LANGUAGES),
    st.builds(lambda v, dt: Literal(v, datatype=dt), _LEXICAL, _DATATYPES),
)


# The ontology's own predicates (coerced: @id, datatypes) and others; rdf:type with IRIs and literals.
_PREDICATES = st.one_of(
    st.sampled_from(sorted(iri for iri, _ in context_terms().values())).map(NamedNode),
    st.just(NamedNode(RDF_TYPE)),
    _IRIS,
)


_GRAPHS = st.one_of(st.none(), _IRIS, _BLANKS)


@st.composite
def _quads(draw) -> list[Quad]:
    out = []
    for _ in range(draw(st.integers(1, 12))):
        subject = draw(st.one_of(_IRIS, _BLANKS))
        graph = draw(_GRAPHS)
        obj = draw(st.one_of(_IRIS, _BLANKS, _LITERALS))
        quad = Quad(subject, draw(_PREDICATES), obj, graph) if graph else Quad(subject, draw(_PREDICATES), obj)
        out.append(quad)
    return sorted(set(out), key=lambda q: (str(q.graph_name), str(q.subject), str(q.predicate), str(q.object)))


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_quads())
def test_any_quads_round_trip_through_every_writer(quads):
    expected = _canonical(quads)
    trig = export.to_string(quads, RdfFormat.TRIG)
    assert "\\/" not in trig
    assert _canonical(parse(trig.encode(), format=RdfFormat.TRIG)) == expected
    assert _via_rdflib(trig, "trig") == expected
    jsonld = export.to_string(quads, RdfFormat.JSON_LD)
    assert _via_rdflib(jsonld, "json-ld") == expected
    assert _canonical(parse(jsonld.encode(), format=RdfFormat.JSON_LD)) == expected
    turtle = export.to_string(quads, RdfFormat.TURTLE)
    assert _via_rdflib(turtle, "turtle") == _merged(quads)


class _Sections(HTMLParser):
    """Text and link targets of each element with an id, and which id documents which IRI (pyLODE gives
    every term a div whose first <code> is its IRI; the id comes from the label: 'Entitymerge')."""

    LOADS = {"script": "src", "img": "src", "iframe": "src", "link": "href", "source": "src", "embed": "src"}
    VOID = {"meta", "link", "img", "br", "hr", "input", "source", "embed"}

    def __init__(self) -> None:
        super().__init__()
        self.text: dict[str, list[str]] = {}
        self.links: dict[str, set[str]] = {}
        self.section_of: dict[str, str] = {}  # IRI -> id
        self.loaded: list[str] = []
        self._open: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in self.LOADS and attrs.get(self.LOADS[tag]):
            self.loaded.append(attrs[self.LOADS[tag]])
        if tag in self.VOID:
            return
        self._open.append((tag, attrs.get("id")))
        if attrs.get("id"):
            self.text.setdefault(attrs["id"], [])
            self.links.setdefault(attrs["id"], set())
        for _, ident in self._open:
            if ident and tag == "a" and attrs.get("href"):
                self.links[ident].add(attrs["href"])

    def handle_endtag(self, tag):
        while self._open:
            if self._open.pop()[0] == tag:
                break

    def handle_data(self, data):
        ids = [ident for _, ident in self._open if ident]
        for ident in ids:
            self.text[ident].append(data)
        if ids and self._open[-1][0] == "code":
            self.section_of.setdefault(data.strip(), ids[-1])


def test_the_ontology_page_documents_every_class_and_property():
    page = ontology_html()
    assert page is ontology_html()  # made once per process
    sections = _Sections()
    sections.feed(page)
    ontology = rdflib.Graph().parse(ONTOLOGY_FILE)
    RDFS, OWL = rdflib.RDFS, rdflib.OWL
    kinds = (OWL.Class, OWL.ObjectProperty, OWL.DatatypeProperty, OWL.AnnotationProperty)
    terms = {t for kind in kinds for t in ontology.subjects(rdflib.RDF.type, kind) if str(t).startswith(TK_NS)}
    assert len(terms) > 80

    def reference(term) -> str:  # how the page links a domain or range: its own section, or the IRI
        return "#" + sections.section_of[str(term)] if str(term).startswith(TK_NS) else str(term)

    for term in terms:
        section = sections.section_of.get(str(term))
        assert section, f"no section for {term}"
        text = " ".join(" ".join(sections.text[section]).split())
        for label in ontology.objects(term, RDFS.label):
            assert str(label) in text, (term, label)
        for comment in ontology.objects(term, RDFS.comment):
            assert " ".join(str(comment).split()) in text, term
        for relation in (RDFS.domain, RDFS.range):
            for target in ontology.objects(term, relation):
                union = isinstance(target, rdflib.BNode)
                head = ontology.value(target, OWL.unionOf) if union else None
                assert head is not None or not union, (term, relation, target)  # a blank node here is a union
                for member in Collection(ontology, head) if head is not None else [target]:
                    assert reference(member) in sections.links[section], (term, relation, member)
    # Nothing the page loads comes from elsewhere (links to IRIs in anchors are fine).
    assert not [url for url in sections.loaded if re.match(r"(https?:)?//", url)], sections.loaded


def test_making_the_page_leaves_logging_alone():
    """pyLODE calls logging.basicConfig(level=DEBUG) on import; the importing process keeps its own setup."""
    code = (
        "import logging; from toolkg.ontology.docs import ontology_html; ontology_html(); "
        "root = logging.getLogger(); assert not root.handlers and root.level == logging.WARNING, root"
    )
    result = subprocess.run([str(Path(TOOLKG).with_name("python")), "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stderr == "", result.stderr
