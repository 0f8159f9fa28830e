"""Comparing RDF datasets: canonical (blank nodes named by what they are), read back by rdflib, graphs merged."""

from __future__ import annotations

import rdflib
from pyoxigraph import CanonicalizationAlgorithm, Dataset, Quad, RdfFormat, parse

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
XSD = "http://www.w3.org/2001/XMLSchema#"


def _canonical(quads) -> Dataset:
    dataset = Dataset(quads)
    dataset.canonicalize(CanonicalizationAlgorithm.UNSTABLE)  # blank nodes named by what they are
    return dataset


def _via_rdflib(text: str, fmt: str) -> Dataset:
    """Parse with rdflib, hand its quads to Oxigraph as N-Quads (to compare datasets blank nodes included).

    rdflib rewrites typed literals to their canonical form ("007"^^xsd:integer becomes "7") unless told not
    to: the exports keep lexical forms as stored, so the comparison does too."""
    normalize, rdflib.NORMALIZE_LITERALS = rdflib.NORMALIZE_LITERALS, False
    try:
        parsed = rdflib.Dataset()
        parsed.parse(data=text, format=fmt)
        nquads = parsed.serialize(format="nquads")
    finally:
        rdflib.NORMALIZE_LITERALS = normalize
    return _canonical(parse(nquads.encode(), format=RdfFormat.N_QUADS))


def _merged(quads) -> Dataset:
    return _canonical({Quad(q.subject, q.predicate, q.object) for q in quads})
