"""Turtle, TriG and compact JSON-LD for people and other tools (``toolkg export``).

Oxigraph's own writers shorten an IRI with whichever prefix it starts with and escape what the rest
cannot hold, so toolkg's ids came out as ``id:graph\\/extraction\\/weather\\/get_forecast``; and its
JSON-LD is expanded (full IRIs everywhere). These writers use one prefix per id family
(``toolkg.ontology.docs.iri_prefixes``) where the rest is a plain local name, the full ``<IRI>`` where it
is not, and for JSON-LD toolkg's context (``toolkg.ontology.docs.jsonld_context``).

All three stream: they group consecutive quads by graph, subject and predicate (the order Oxigraph
returns them in), so memory stays flat whatever the store's size. A subject or graph that comes back
later is written again as its own block, which every format merges on reading.

>>> from pyoxigraph import Quad
>>> tool = NamedNode("https://w3id.org/toolkg/id/tool/weather/get%20forecast")
>>> server = NamedNode("https://w3id.org/toolkg/id/server/weather")
>>> quads = [Quad(server, NamedNode("https://w3id.org/toolkg/ontology#hasTool"), tool)]
>>> out = io.BytesIO()
>>> write(quads, out, RdfFormat.TURTLE)
>>> print(out.getvalue().decode().splitlines()[-1])
server:weather tk:hasTool <https://w3id.org/toolkg/id/tool/weather/get%20forecast> .
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from itertools import groupby

from pyoxigraph import BlankNode, DefaultGraph, Literal, NamedNode, RdfFormat

from toolkg.ontology.docs import CONTEXT_IRI, compact_iri, context_terms, iri_prefixes, jsonld_context

FORMATS = (RdfFormat.TURTLE, RdfFormat.TRIG, RdfFormat.JSON_LD)

_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_XSD = "http://www.w3.org/2001/XMLSchema#"
_XSD_STRING = _XSD + "string"
# A local name that needs no escape in Turtle, TriG or SPARQL (PN_LOCAL without PN_LOCAL_ESC, ASCII only):
# no '/', no '#', no trailing '.'; %HH is part of the grammar (and of the IRI: it is not decoded).
_PLAIN_LOCAL = re.compile(
    r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:(?:[A-Za-z0-9_.\-]|%[0-9A-Fa-f]{2})*(?:[A-Za-z0-9_\-]|%[0-9A-Fa-f]{2}))?"
)
# Literals written bare (`5`, `true`): only canonical forms, which every reader reads back as written
# (rdflib turns a bare `007` into "7"; the grammar says "007"). Decimals keep their quotes for the same reason.
_BARE = {
    _XSD + "integer": re.compile(r"0|-?[1-9][0-9]*"),
    _XSD + "boolean": re.compile(r"true|false"),
}
_CHUNK = 2000  # statements per write


def write(quads: Iterable, out, format: RdfFormat, *, remote_context: bool = False) -> None:
    """Write ``quads`` to the binary stream ``out`` as Turtle (their graphs merged), TriG or JSON-LD.

    Turtle takes triples (or quads, whose graph it ignores); ``remote_context`` makes JSON-LD name the
    published context (:data:`CONTEXT_IRI`) instead of embedding it."""
    if format == RdfFormat.JSON_LD:
        chunks = _JsonLd(remote_context).document(quads)
    else:
        chunks = _Turtle().document(quads, graphs=format == RdfFormat.TRIG)
    batch: list[str] = []
    for chunk in chunks:
        batch.append(chunk)
        if len(batch) >= _CHUNK:
            out.write("".join(batch).encode())
            batch.clear()
    out.write("".join(batch).encode())


def _graph(quad):
    return getattr(quad, "graph_name", None) or DefaultGraph()


class _Turtle:
    def __init__(self) -> None:
        self.prefixes = iri_prefixes()
        self._by_namespace = {base: name for name, base in self.prefixes.items()}
        self.iri = lru_cache(maxsize=1 << 16)(self._iri)

    def _iri(self, value: str) -> str:
        """``prefix:local`` when the local name needs no escape, else ``<value>``.

        Every namespace ends in '/' or '#' and a plain local name holds neither, so the one candidate
        namespace is the IRI up to its last '/' or '#'."""
        cut = max(value.rfind("/"), value.rfind("#")) + 1
        name = self._by_namespace.get(value[:cut])
        local = value[cut:]
        if name is not None and (not local or _PLAIN_LOCAL.fullmatch(local)):
            return f"{name}:{local}"
        return str(NamedNode(value))

    def term(self, term) -> str:
        if isinstance(term, NamedNode):
            return self.iri(term.value)
        if isinstance(term, Literal) and not term.language:
            datatype = term.datatype.value
            if datatype == _XSD_STRING:
                return str(term)
            bare = _BARE.get(datatype)
            if bare is not None and bare.fullmatch(term.value):
                return term.value
            return f"{Literal(term.value)}^^{self.iri(datatype)}"
        return str(term)  # language-tagged literals and blank nodes: N-Triples spells them as Turtle does

    def document(self, quads: Iterable, *, graphs: bool) -> Iterator[str]:
        yield "".join(f"@prefix {name}: <{base}> .\n" for name, base in self.prefixes.items())
        if not graphs:
            yield "\n"
            yield from self._statements(quads, "")
            return
        for graph, group in groupby(quads, key=_graph):
            yield "\n{\n" if isinstance(graph, DefaultGraph) else f"\n{self.term(graph)} {{\n"
            yield from self._statements(group, "\t")
            yield "}\n"

    def _statements(self, triples: Iterable, indent: str) -> Iterator[str]:
        joiner = f" ;\n{indent}    "
        for subject, group in groupby(triples, key=lambda t: t.subject):
            parts = []
            for predicate, same in groupby(group, key=lambda t: t.predicate):
                verb = "a" if predicate.value == _RDF_TYPE else self.iri(predicate.value)
                parts.append(f"{verb} {' , '.join(self.term(t.object) for t in same)}")
            parts.sort(key=lambda part: not part.startswith("a "))  # the type first, as people write it
            yield f"{indent}{self.term(subject)} {joiner.join(parts)} .\n"


class _JsonLd:
    """Compact JSON-LD (1.0 and 1.1 read it alike): one node object per line, named graphs as
    ``{"@id": graph, "@graph": [...]}`` entries of the top-level ``@graph``."""

    def __init__(self, remote_context: bool) -> None:
        self.context = CONTEXT_IRI if remote_context else jsonld_context()["@context"]
        self.prefixes = iri_prefixes()
        terms = context_terms()
        self._term_of = {iri: name for name, (iri, _) in terms.items()}
        self._coercion = {name: coercion for name, (_, coercion) in terms.items()}
        self.ref = lru_cache(maxsize=1 << 16)(self._ref)

    def _ref(self, iri: str) -> str:
        """An IRI where JSON-LD reads it as an IRI (@id, @type:@id values): a compact IRI, never a term."""
        return compact_iri(iri, self.prefixes)

    def vocab(self, iri: str) -> str:
        """An IRI where JSON-LD reads terms (keys, @type): the ontology's term for it, else a compact IRI."""
        return self._term_of.get(iri) or self.ref(iri)

    def node_id(self, term) -> str:
        return f"_:{term.value}" if isinstance(term, BlankNode) else self.ref(term.value)

    def value(self, term, coercion: str | None):
        if not isinstance(term, Literal):
            ref = self.node_id(term)
            return ref if coercion == "@id" else {"@id": ref}
        if term.language:
            return {"@value": term.value, "@language": term.language}
        datatype = term.datatype.value
        if datatype == coercion or (datatype == _XSD_STRING and coercion is None):
            return term.value
        if datatype == _XSD_STRING:  # under a coercion a bare string would be read as an IRI or typed
            return {"@value": term.value}
        return {"@value": term.value, "@type": self.vocab(datatype)}

    def node(self, subject, quads: Iterable) -> dict:
        node: dict[str, object] = {"@id": self.node_id(subject)}
        for predicate, same in groupby(quads, key=lambda q: q.predicate):
            objects = [q.object for q in same]
            values: list[object]
            if predicate.value == _RDF_TYPE and all(isinstance(o, NamedNode) for o in objects):
                key, values = "@type", [self.vocab(o.value) for o in objects]
            else:
                key = self.vocab(predicate.value)
                values = [self.value(o, self._coercion.get(key)) for o in objects]
            if key in node:  # the predicate came back after another one (an unordered source)
                previous = node[key]
                values = (previous if isinstance(previous, list) else [previous]) + values
            node[key] = values[0] if len(values) == 1 else values
        if "@type" in node:  # the type first, as people write it
            node = {"@id": node.pop("@id"), "@type": node.pop("@type"), **node}
        return node

    def document(self, quads: Iterable) -> Iterator[str]:
        context = json.dumps(self.context, indent=2, ensure_ascii=False)
        yield '{\n"@context": ' + context + ',\n"@graph": [\n'
        separator = ""  # between the entries of the top-level @graph
        for graph, group in groupby(quads, key=_graph):
            named = not isinstance(graph, DefaultGraph)
            if named:
                yield f'{separator}{{"@id": {json.dumps(self.node_id(graph), ensure_ascii=False)}, "@graph": [\n'
                separator = ""
            for subject, same in groupby(group, key=lambda q: q.subject):
                yield separator + ("  " if named else "") + json.dumps(self.node(subject, same), ensure_ascii=False)
                separator = ",\n"
            if named:
                yield "\n]}"
        yield "\n]}\n"


def to_string(quads: Iterable, format: RdfFormat, **options) -> str:
    """The document as text (for tests and small graphs)."""
    out = io.BytesIO()
    write(quads, out, format, **options)
    return out.getvalue().decode()
