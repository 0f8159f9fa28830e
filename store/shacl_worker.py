"""pySHACL, the reference SHACL engine, over plain rows, usable in a worker process.

Kept free of toolkg's heavier imports so spawned workers start fast. A row is
``(subject, predicate, object, kind, extra)``: ``kind`` is "iri" or "literal" and ``extra``
the literal's datatype IRI or "@lang". Terms are converted once each (cached), which is
twice as fast as parsing N-Triples into rdflib.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

_SH = "http://www.w3.org/ns/shacl#"
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
Row = tuple[str, str, str, str, str]


@cache
def shapes_graph(shapes_file: str):
    import rdflib

    graph = rdflib.Graph()
    graph.parse(shapes_file, format="turtle")
    return graph


def validate_rows(rows: Sequence[Row], shapes_file: str) -> list[tuple[str, str, str]]:
    """(focus node, path, message) for each sh:Violation of ``rows`` against the shapes."""
    import pyshacl
    import rdflib

    iris: dict[str, rdflib.URIRef] = {}
    literals: dict[tuple[str, str], rdflib.Literal] = {}

    def iri(value: str) -> rdflib.URIRef:
        node = iris.get(value)
        if node is None:
            node = iris[value] = rdflib.URIRef(value)
        return node

    def obj(value: str, kind: str, extra: str):
        if kind == "iri":
            return iri(value)
        node = literals.get((value, extra))
        if node is None:
            if extra.startswith("@"):
                node = rdflib.Literal(value, lang=extra[1:])
            elif extra == _XSD_STRING:
                # As rdflib reads a plain string from Turtle: a string typed xsd:string explicitly is, to
                # rdflib, not equal to the same string in the shapes (an sh:in member would never match).
                node = rdflib.Literal(value)
            else:
                node = rdflib.Literal(value, datatype=iri(extra))
            literals[(value, extra)] = node
        return node

    data = rdflib.Graph()
    data.addN((iri(s), iri(p), obj(o, kind, extra), data) for s, p, o, kind, extra in rows)
    conforms, results, _ = pyshacl.validate(
        data, shacl_graph=shapes_graph(shapes_file), inference="none", allow_warnings=True, inplace=True
    )
    if conforms:
        return []
    sh = rdflib.Namespace(_SH)
    found = []
    for result in results.subjects(rdflib.RDF.type, sh.ValidationResult):
        severity = results.value(result, sh.resultSeverity)
        if severity is not None and severity != sh.Violation:
            continue
        found.append(
            (
                str(results.value(result, sh.focusNode)),
                str(results.value(result, sh.resultPath) or ""),
                str(results.value(result, sh.resultMessage) or "shape violated"),
            )
        )
    return found
