"""The ontology for people and other tools: prefixes, the JSON-LD context, the HTML page.

Everything here is generated from ``toolkg.ttl`` (and ``PREFIXES``), so a term added to the ontology
shows up in the context and on the page with no second edit.

* :func:`iri_prefixes` -- the vocabularies plus one prefix per family of toolkg's own ids
  (``tool:``, ``server:``, ``server-graph:``, ``extraction:``, ``line-of-business:`` ...), for exports.
* :func:`jsonld_context` -- the JSON-LD context document published at :data:`CONTEXT_IRI`: a term per
  class, property and individual of the ontology, with ``@id`` coercion for object properties and the
  datatype for datatype properties whose range is one.
* :func:`ontology_html` -- the ontology's documentation page (pyLODE), loading nothing from the internet;
  :func:`ontology_anchors` -- where each term's entry is on it.
* :func:`vocabulary_terms` -- the classes and properties, for the endpoint editor's completion.

>>> context = jsonld_context()["@context"]
>>> context["Tool"], context["hasParameter"], context["required"]
('tk:Tool', {'@id': 'tk:hasParameter', '@type': '@id'}, {'@id': 'tk:required', '@type': 'xsd:boolean'})
>>> context["server-graph"]
'https://w3id.org/toolkg/id/graph/server/'
"""

from __future__ import annotations

import copy
import logging
import re
from contextlib import contextmanager
from functools import cache

from pyoxigraph import BlankNode, CanonicalizationAlgorithm, Dataset, NamedNode, RdfFormat, parse

from toolkg.ontology import ONTOLOGY_FILE, PREFIXES, TK_NS, graphs, iris
from toolkg.ontology.schema import ENTITY_TYPES

CONTEXT_IRI = "https://w3id.org/toolkg/context.jsonld"
"""Where the context document is published (``toolkg serve`` serves it at /ontology/context.jsonld)."""

_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_RDFS = "http://www.w3.org/2000/01/rdf-schema#"
_OWL = "http://www.w3.org/2002/07/owl#"
_XSD = "http://www.w3.org/2001/XMLSchema#"
_TYPE, _RANGE = _RDF + "type", _RDFS + "range"
# Ranges that say "a string" or nothing: JSON strings already mean that, so no coercion.
_PLAIN_RANGES = {_XSD + "string", _RDFS + "Literal", _RDF + "langString"}

# The families of ids toolkg mints, as paths under iris.BASE (where each is minted: ontology/iris.py unless
# noted). Prefix names follow the paths, so `server-graph:weather` reads as what it is. Entity kinds are
# added from the ontology (one per subclass of tk:Entity), as iris.entity_iri spells them.
_ID_FAMILIES = {
    "id": "",  # anything else under the base
    "graph": graphs.GRAPH_BASE[len(iris.BASE) :],  # graph:manifests, graph:provenance ... (ontology/graphs.py)
    "server-graph": graphs.SERVER_GRAPH_PREFIX[len(iris.BASE) :],
    "extraction": graphs.EXTRACTION_GRAPH_PREFIX[len(iris.BASE) :],
    "server": "server/",
    "tool": "tool/",  # also a tool's parameters, outputs, dependencies and links
    "entity": "entity/",
    "manifest": "manifest/",
    "run": "run/",
    "agent": "agent/",
    "merge": "merge/",  # canonicalize/entities/clustering.py: one entity merge
    "build-state": "build-state/",  # store/build_state.py: catalog stages
}


@cache
def _ontology() -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    """(tk: term -> its rdf:types, tk: term -> its IRI ranges), in file order."""
    types: dict[str, set[str]] = {}
    ranges: dict[str, list[str]] = {}
    for triple in parse(path=str(ONTOLOGY_FILE), format=RdfFormat.TURTLE):
        subject, predicate, obj = triple.subject, triple.predicate.value, triple.object
        if not (isinstance(subject, NamedNode) and subject.value.startswith(TK_NS)):
            continue
        name = subject.value[len(TK_NS) :]
        if predicate == _TYPE:
            types.setdefault(name, set()).add(obj.value)
        elif predicate == _RANGE and isinstance(obj, NamedNode):
            ranges.setdefault(name, []).append(obj.value)
    return types, ranges


@cache
def _prefixes() -> dict[str, str]:
    out = dict(PREFIXES)
    out.update({name: iris.BASE + path for name, path in _ID_FAMILIES.items()})
    for kind in ENTITY_TYPES:
        base = iris.entity_iri(kind, "x").value[:-1]  # '.../entity/line-of-business/'
        out[base[len(iris.BASE) : -1].rpartition("/")[2]] = base
    return out


def iri_prefixes() -> dict[str, str]:
    """Prefix name -> namespace IRI: the vocabularies (``tk:``, ``rdfs:`` ...) and toolkg's id families."""
    return dict(_prefixes())


@cache
def context_terms() -> dict[str, tuple[str, str | None]]:
    """JSON-LD term -> (full IRI, coercion): ``'@id'``, a datatype IRI, or None for plain values.

    Every tk: term typed in the ontology gets one: classes, properties, individuals (tk:Declared ...)."""
    types, ranges = _ontology()
    out: dict[str, tuple[str, str | None]] = {}
    for name, kinds in sorted(types.items()):
        coercion = None
        if _OWL + "ObjectProperty" in kinds:
            coercion = "@id"
        elif _OWL + "DatatypeProperty" in kinds:
            datatypes = [r for r in ranges.get(name, ()) if r not in _PLAIN_RANGES]
            coercion = datatypes[0] if len(datatypes) == 1 else None
        out[name] = (TK_NS + name, coercion)
    clash = set(out) & set(_prefixes())
    if clash:  # a term named like a prefix would turn every 'prefix:...' compact IRI into nonsense
        raise RuntimeError(f"ontology terms clash with prefix names: {sorted(clash)}")
    return out


def compact_iri(iri: str, prefixes: dict[str, str] | None = None) -> str:
    """``prefix:rest`` with the longest matching prefix (JSON-LD and SPARQL take any rest), else the IRI."""
    best, found = "", ""
    for name, base in (prefixes or _prefixes()).items():
        if iri.startswith(base) and len(base) > len(best) and not iri[len(base) :].startswith("//"):
            best, found = base, name
    return f"{found}:{iri[len(best) :]}" if best else iri


def vocabulary_terms() -> dict[str, list[str]]:
    """The ontology's classes and properties as full IRIs (``{"classes": [...], "properties": [...]}``, sorted):
    what the endpoint UI's editor completes after ``a`` and in a predicate's place, with no network."""
    types, _ = _ontology()
    classes = {_OWL + "Class", _RDFS + "Class"}
    properties = {_OWL + p for p in ("ObjectProperty", "DatatypeProperty", "AnnotationProperty")} | {_RDF + "Property"}
    return {
        "classes": sorted(TK_NS + name for name, kinds in types.items() if kinds & classes),
        "properties": sorted(TK_NS + name for name, kinds in types.items() if kinds & properties),
    }


@cache
def ontology_anchors() -> dict[str, str]:
    """tk: term IRI -> the id of its entry on the ontology's page (pyLODE names them its own way: ``Buildrun``
    for tk:BuildRun), read off the page: the first IRI each entry shows is its term's."""
    html = ontology_html()
    found = re.findall(rf'id="([^"]+)"[^>]*>\s*<h3>.{{0,400}}?<code>({re.escape(TK_NS)}[^<]+)</code>', html, re.S)
    return {iri: anchor for anchor, iri in found}


@cache
def _context() -> dict:
    context: dict[str, object] = dict(_prefixes())
    for name, (iri, coercion) in context_terms().items():
        if coercion is None:
            context[name] = compact_iri(iri)
        else:
            context[name] = {"@id": compact_iri(iri), "@type": coercion if coercion == "@id" else compact_iri(coercion)}
    return {"@context": context}


def jsonld_context() -> dict:
    """The context document (``{"@context": {...}}``) published at :data:`CONTEXT_IRI`; a fresh copy."""
    return copy.deepcopy(_context())


# -- the HTML page --------------------------------------------------------------------------------

# Tags that would make a browser fetch something from elsewhere: a page served by `toolkg serve` must work
# offline and load only from its server. pyLODE inlines its CSS and icons today; this keeps it so.
_EXTERNAL_LOAD = re.compile(
    r"<(?:script|img|iframe|source|audio|video|embed)\b[^>]*\bsrc\s*=\s*[\"']?(?:https?:)?//[^>]*>(?:\s*</script>)?"
    r"|<link\b(?=[^>]*\brel\s*=\s*[\"']?(?:stylesheet|preload|prefetch|modulepreload|icon))"
    r"[^>]*\bhref\s*=\s*[\"']?(?:https?:)?//[^>]*>",
    re.IGNORECASE,
)


@contextmanager
def _root_logger_kept():
    """pyLODE 3.3 calls ``logging.basicConfig(level=DEBUG)`` when imported and logs with ``logging.info``
    (which calls ``basicConfig`` when the root logger has no handler): either would turn on a handler, or
    every library's debug output, in the process that asked for the page (the endpoint's, say)."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    if not handlers:  # basicConfig does nothing when the root logger has a handler
        root.addHandler(logging.NullHandler())
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def _ontology_graph():
    """toolkg.ttl as an rdflib graph whose blank nodes are named by content, not at random.

    pyLODE orders what it shows by term, blank nodes included (the owl:unionOf domains), so with rdflib's
    random blank node names the same ontology gave a different page on every run."""
    import rdflib

    dataset = Dataset(parse(path=str(ONTOLOGY_FILE), format=RdfFormat.TURTLE))
    dataset.canonicalize(CanonicalizationAlgorithm.UNSTABLE)  # deterministic for one Oxigraph version

    def term(node):
        if isinstance(node, NamedNode):
            return rdflib.URIRef(node.value)
        if isinstance(node, BlankNode):
            return rdflib.BNode(node.value)
        if node.language:
            return rdflib.Literal(node.value, lang=node.language)
        return rdflib.Literal(node.value, datatype=rdflib.URIRef(node.datatype.value))

    graph = rdflib.Graph(bind_namespaces="core")
    for prefix, namespace in PREFIXES.items():
        graph.bind(prefix, namespace, override=True)
    for quad in sorted(dataset, key=str):
        graph.add((term(quad.subject), term(quad.predicate), term(quad.object)))
    return graph


@cache
def ontology_html() -> str:
    """The ontology's documentation page: classes, properties (domains, ranges, comments), namespaces.

    Generated by pyLODE from ``toolkg.ttl`` once per process (about a second), the same page every time
    but for the order of a union's members (pyLODE keeps them in a set).
    Self-contained: CSS and icons inline, and any tag that would load from another host is removed; links
    to IRIs stay links."""
    with _root_logger_kept():
        from pylode import OntPub

        page = OntPub(ontology=_ontology_graph(), sort_subjects=True).make_html()
    return _EXTERNAL_LOAD.sub("", page)
