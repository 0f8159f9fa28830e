"""Inferred dependencies in the store: read the catalog back (``store/catalog_reads.py``), infer over
all of it, swap one graph.

Inference looks across manifests (a producer in one file feeds a consumer in another), so it
runs once per build over every stored tool, after the manifests are loaded, and replaces the
graph ``graphs.INFERRED_GRAPH`` (``ToolStore.replace_graph``). Declared dependencies live in the
server graphs (basis ``tk:Declared``) and are never touched: a pair already declared is not
inferred again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypedDict
from urllib.parse import unquote

from pyoxigraph import Literal, NamedNode, Triple

from toolkg.models import InferredEdge, Tool, ToolLink
from toolkg.ontology import RDF, TK, XSD, iris
from toolkg.ontology.vocabulary import Basis
from toolkg.store.oxigraph_store import ToolStore


def declared_pairs(store: ToolStore) -> set[tuple[str, str]]:
    rows = store.select("""SELECT ?c ?p WHERE { ?consumer tk:qualifiedDependency ?d ; tk:identifier ?c .
        ?d tk:basis tk:Declared ; tk:onTool ?producer . ?producer tk:identifier ?p }""")
    return {(r["c"].value, r["p"].value) for r in rows}


def edge_triples(edges: list[InferredEdge], tools: Iterable[Tool] | Mapping[str, Tool]) -> list[Triple]:
    """An edge's triples (its qualified node names the parameter where the consumer has it). ``tools``: the
    catalog, or a mapping of tool id -> tool that holds at least the edges' consumers (incremental sync
    looks up a few, not the catalog)."""
    by_id = tools if isinstance(tools, Mapping) else {t.id: t for t in tools}
    locations: dict[tuple[str, str], str] = {}
    for consumer_id in {e.consumer for e in edges if e.parameter}:
        tool = by_id.get(consumer_id)
        for p in tool.parameters if tool is not None else ():
            locations[consumer_id, p.name] = p.location  # the last of a name, as a dict of them all kept
    out: list[Triple] = []
    for e in edges:
        consumer, producer = iris.tool_iri_from_id(e.consumer), iris.tool_iri_from_id(e.producer)
        kind = getattr(TK, e.kind)
        d = iris.dependency_iri(consumer, e.kind, producer, e.parameter)
        out += [
            Triple(consumer, kind, producer),
            Triple(consumer, TK.dependsOn, producer),
            Triple(consumer, TK.qualifiedDependency, d),
            Triple(d, RDF.type, TK.Dependency),
            Triple(d, TK.dependencyKind, kind),
            Triple(d, TK.onTool, producer),
            Triple(d, TK.basis, Basis(e.basis).node),
            Triple(d, TK.confidence, Literal(f"{e.confidence:.2f}", datatype=XSD.decimal)),
            Triple(d, TK.inferenceRule, Literal(e.rule)),
            Triple(d, TK.reason, Literal(e.evidence)),
        ]
        if e.parameter:
            out.append(Triple(d, TK.parameterName, Literal(e.parameter)))
            location = locations.get((e.consumer, e.parameter))
            if location:
                out.append(Triple(d, TK.viaParameter, iris.parameter_iri(consumer, e.parameter, location)))
    return out


def tool_id_of(node: object) -> str | None:
    """The tool id a tool IRI names (``iris.tool_iri``), or None for any other term."""
    if not isinstance(node, NamedNode) or not node.value.startswith(_TOOL_PREFIX):
        return None
    parts = node.value[len(_TOOL_PREFIX) :].split("/")
    return f"{unquote(parts[0])}::{unquote(parts[1])}" if len(parts) == 2 else None


_TOOL_PREFIX = f"{iris.BASE}tool/"


def link_triples(links: list[ToolLink]) -> list[Triple]:
    out: list[Triple] = []
    for link in links:
        source, target = iris.tool_iri_from_id(link.source), iris.tool_iri_from_id(link.target)
        kind = getattr(TK, link.kind)
        node = iris.link_iri(source, link.kind, target)
        out += [
            Triple(source, kind, target),
            Triple(source, TK.qualifiedLink, node),
            Triple(node, RDF.type, TK.ToolLink),
            Triple(node, TK.linkType, kind),
            Triple(node, TK.linkedTool, target),
            Triple(node, TK.score, Literal(f"{link.score:.3f}", datatype=XSD.decimal)),
            Triple(node, TK.reason, Literal(link.evidence)),
        ]
    return out


class LinkRow(TypedDict):
    """A structural link as ``link_rows`` gives it."""

    source: str
    target: str
    kind: str
    score: float
    evidence: str


class DependencyRow(TypedDict):
    """A qualified dependency edge as ``dependency_rows`` gives it (None: not stated in the store)."""

    consumer: str
    producer: str
    kind: str
    parameter: str | None
    confidence: float | None
    basis: str
    rule: str | None
    evidence: str


def link_rows(store: ToolStore, tool: str | None = None) -> list[LinkRow]:
    """Structural links (all, or from one tool), strongest first."""
    rows = store.select("""SELECT ?source ?target ?kind ?score ?reason WHERE {
        ?s tk:qualifiedLink ?l ; tk:identifier ?source . ?l tk:linkedTool ?t ; tk:linkType ?k ; tk:score ?score ;
           tk:reason ?reason . ?t tk:identifier ?target . BIND(STRAFTER(STR(?k), "#") AS ?kind) }""")
    out: list[LinkRow] = [
        {
            "source": r["source"].value,
            "target": r["target"].value,
            "kind": r["kind"].value,
            "score": float(r["score"].value),
            "evidence": r["reason"].value,
        }
        for r in rows
        if tool is None or r["source"].value == tool
    ]
    return sorted(out, key=lambda r: (r["source"], r["kind"], -r["score"], r["target"]))


def dependency_rows(store: ToolStore, tool: str | None = None) -> list[DependencyRow]:
    """Qualified dependency edges (all, or those of one tool as consumer or producer), strongest first."""
    rows = store.select("""SELECT DISTINCT ?consumer ?producer ?kind ?parameter ?confidence ?basis ?rule ?reason WHERE {
        ?c tk:qualifiedDependency ?d ; tk:identifier ?consumer .
        ?d tk:onTool ?p ; tk:dependencyKind ?k ; tk:basis ?b . ?p tk:identifier ?producer .
        BIND(STRAFTER(STR(?k), "#") AS ?kind) BIND(LCASE(STRAFTER(STR(?b), "#")) AS ?basis)
        OPTIONAL { ?d tk:parameterName ?parameter } OPTIONAL { ?d tk:confidence ?confidence }
        OPTIONAL { ?d tk:inferenceRule ?rule } OPTIONAL { ?d tk:reason ?reason } }""")
    out = []
    for r in rows:
        row: DependencyRow = {
            "consumer": r["consumer"].value,
            "producer": r["producer"].value,
            "kind": r["kind"].value,
            "parameter": r["parameter"].value if r.get("parameter") else None,
            "confidence": float(r["confidence"].value) if r.get("confidence") else None,
            "basis": r["basis"].value,
            "rule": r["rule"].value if r.get("rule") else None,
            "evidence": r["reason"].value if r.get("reason") else "",
        }
        if tool is None or tool in (row["consumer"], row["producer"]):
            out.append(row)
    return sorted(out, key=lambda r: (r["consumer"], -(r["confidence"] or 0), r["producer"]))


def transitive_dependencies(store: ToolStore, tool: str) -> list[str]:
    """Every tool ``tool`` depends on, directly or through others (declared and inferred)."""
    rows = store.select(
        "SELECT DISTINCT ?id ?tool WHERE { ?t tk:identifier ?tool ; tk:dependsOn+ ?d . ?d tk:identifier ?id }",
        {"tool": Literal(tool)},
    )
    return sorted(r["id"].value for r in rows)
