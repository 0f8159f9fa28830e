"""The toolkg vocabulary, read from ``toolkg.ttl`` (the single source of term names).

``TK.Tool`` is the ``NamedNode`` of a declared term; a name the Turtle file does not
declare raises ``AttributeError`` (like rdflib's ``DefinedNamespace`` with ``_fail``),
so code cannot drift from the ontology.

>>> TK.Tool.value
'https://w3id.org/toolkg/ontology#Tool'
>>> TK.NoSuchTerm
Traceback (most recent call last):
...
AttributeError: 'NoSuchTerm' is not declared in ontology/toolkg.ttl
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from urllib.parse import quote

from pyoxigraph import NamedNode, RdfFormat, parse

ONTOLOGY_DIR = Path(__file__).resolve().parent
ONTOLOGY_FILE = ONTOLOGY_DIR / "toolkg.ttl"
SHAPES_FILE = ONTOLOGY_DIR / "shapes.ttl"

TK_NS = "https://w3id.org/toolkg/ontology#"
ONTOLOGY_IRI = "https://w3id.org/toolkg/ontology"
# Every IRI toolkg mints starts here: nodes (ontology/iris.py) and named graphs (ontology/graphs.py).
ID_BASE = "https://w3id.org/toolkg/id/"
_OWL_VERSION_INFO = "http://www.w3.org/2002/07/owl#versionInfo"
_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


@cache
def _declared_terms() -> tuple[frozenset[str], str]:
    """Local names of every tk: term typed in the ontology, and owl:versionInfo."""
    names: set[str] = set()
    version = ""
    for triple in parse(path=str(ONTOLOGY_FILE), format=RdfFormat.TURTLE):
        subject = triple.subject
        if not isinstance(subject, NamedNode):
            continue
        if subject.value == ONTOLOGY_IRI and triple.predicate.value == _OWL_VERSION_INFO:
            version = triple.object.value
        elif subject.value.startswith(TK_NS) and triple.predicate.value == _RDF_TYPE:
            names.add(subject.value[len(TK_NS) :])
    if not version:
        raise RuntimeError(f"{ONTOLOGY_FILE} has no owl:versionInfo")
    return frozenset(names), version


def quote_segment(text: str) -> str:
    """``text`` percent-encoded as one path segment of a minted IRI (``/`` too, so ids never nest)."""
    return quote(text, safe="-._~")


class _Vocabulary:
    """Attribute access to declared ``tk:`` terms as pyoxigraph ``NamedNode``s."""

    def __getattr__(self, name: str) -> NamedNode:
        if name.startswith("__"):
            raise AttributeError(name)
        if name not in _declared_terms()[0]:
            raise AttributeError(f"{name!r} is not declared in ontology/toolkg.ttl")
        node = NamedNode(TK_NS + name)
        setattr(self, name, node)  # cache: later lookups skip __getattr__
        return node

    def __contains__(self, name: str) -> bool:
        return name in _declared_terms()[0]


TK = _Vocabulary()


def ontology_version() -> str:
    """owl:versionInfo of the ontology; part of every manifest's fingerprint."""
    return _declared_terms()[1]


class _Namespace:
    def __init__(self, base: str) -> None:
        self._base = base

    def __getattr__(self, name: str) -> NamedNode:
        if name.startswith("__"):
            raise AttributeError(name)
        return NamedNode(self._base + name)


RDF = _Namespace("http://www.w3.org/1999/02/22-rdf-syntax-ns#")
RDFS = _Namespace("http://www.w3.org/2000/01/rdf-schema#")
XSD = _Namespace("http://www.w3.org/2001/XMLSchema#")
DCTERMS = _Namespace("http://purl.org/dc/terms/")
SKOS = _Namespace("http://www.w3.org/2004/02/skos/core#")
PROV = _Namespace("http://www.w3.org/ns/prov#")

PREFIXES = {
    "tk": TK_NS,
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "dcterms": "http://purl.org/dc/terms/",
    "skos": "http://www.w3.org/2004/02/skos/core#",
    "prov": "http://www.w3.org/ns/prov#",
    "owl": "http://www.w3.org/2002/07/owl#",
}

SPARQL_PREFIXES = "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in PREFIXES.items())
