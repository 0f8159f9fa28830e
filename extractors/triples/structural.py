"""Structural triples: what every manifest states outright.

Servers, tools, ownership both ways, parameters, outputs, annotations, the server's
category as a line of business, and declared dependencies (basis = declared) whose target
names are resolved against every tool the catalog knows (this run's and the store's).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from pyoxigraph import Literal, NamedNode, Triple

from toolkg.failures import quarantine
from toolkg.models import ExtractedManifest, Manifest, QuarantinedItem, Server, ServerGraph, Tool
from toolkg.ontology import DCTERMS, RDF, RDFS, SKOS, TK, XSD, iris
from toolkg.text.words import clean_label, entity_name

_TRUE = Literal("true", datatype=XSD.boolean)
_FALSE = Literal("false", datatype=XSD.boolean)
_ONE = Literal("1.0", datatype=XSD.decimal)


class NameIndex:
    """Tool names to tool ids, for dependencies that name a tool but not its server.

    A name is looked up nearest first: the consumer's own server, then its own manifest,
    then manifests in the same folder (a catalog split over files), then the whole store.
    Only a unique match at the nearest level that has one counts.
    """

    def __init__(self) -> None:
        self._by_name: dict[str, dict[str, str]] = defaultdict(dict)  # name -> tool id -> manifest path

    def add(self, tool_ids: Iterable[str], source: str) -> None:
        for tool_id in tool_ids:
            self._by_name[tool_id.partition("::")[2]][tool_id] = source

    def discard(self, tool_id: str) -> None:
        self._by_name.get(tool_id.partition("::")[2], {}).pop(tool_id, None)

    def resolve(self, name: str, server_id: str, source: str) -> tuple[str | None, str]:
        """(tool id, '') when resolved; (None, why) otherwise."""
        candidates = self._by_name.get(name, {})
        if f"{server_id}::{name}" in candidates:
            return f"{server_id}::{name}", ""
        folder = str(Path(source).parent)
        for level in (
            [t for t, s in candidates.items() if s == source],
            [t for t, s in candidates.items() if str(Path(s).parent) == folder],
            list(candidates),
        ):
            if len(level) == 1:
                return level[0], ""
            if len(level) > 1:
                return None, f"declared dependency on {name!r} is ambiguous: {', '.join(sorted(level))}"
        return None, f"declared dependency on {name!r}: no loaded manifest defines a tool of that name"


def entity_node(entity_type: str, surface: str, out: list[Triple]) -> NamedNode:
    """An ontology entity, labelled with its canonical name; another surface form is an altLabel."""
    # Only business objects are singularised: "Sales" the department is not a "sale".
    surface = clean_label(surface)
    canonical = (entity_name(surface) if entity_type == "BusinessObject" else clean_label(surface.lower())) or surface
    node = iris.entity_iri(entity_type, canonical)
    out.append(Triple(node, RDF.type, getattr(TK, entity_type)))
    out.append(Triple(node, RDFS.label, Literal(canonical)))
    if surface != canonical:
        out.append(Triple(node, SKOS.altLabel, Literal(surface)))
    return node


def _text(value: str) -> Literal:
    return Literal(value)


def _tool_triples(tool: Tool, server_node: NamedNode, out: list[Triple]) -> NamedNode:
    node = iris.tool_iri(tool.server_id, tool.name)
    add = out.append
    add(Triple(node, RDF.type, TK.Tool))
    add(Triple(node, TK.identifier, _text(tool.id)))
    add(Triple(node, TK.name, _text(tool.name)))
    add(Triple(node, RDFS.label, _text(tool.name)))
    add(Triple(node, TK.ownedBy, server_node))
    add(Triple(server_node, TK.hasTool, node))
    if tool.description:
        add(Triple(node, DCTERMS.description, _text(tool.description)))
    if tool.function_type:
        add(Triple(node, TK.functionType, _text(tool.function_type)))
    if tool.route:
        add(Triple(node, TK.httpRoute, _text(tool.route)))
    if tool.output_schema_name:
        add(Triple(node, TK.schemaName, _text(tool.output_schema_name)))
    if tool.annotations:
        _annotation_triples(node, tool, add)
    for position, parameter in enumerate(tool.parameters):
        p = iris.parameter_iri(node, parameter.name, parameter.location)
        add(Triple(node, TK.hasParameter, p))
        add(Triple(p, TK.parameterOf, node))
        add(Triple(p, RDF.type, TK.Parameter))
        add(Triple(p, TK.name, _text(parameter.name)))
        add(Triple(p, RDFS.label, _text(parameter.name)))
        add(Triple(p, TK.jsonType, _text(parameter.json_type)))
        add(Triple(p, TK.required, _TRUE if parameter.required else _FALSE))
        add(Triple(p, TK.location, _text(parameter.location)))
        add(Triple(p, TK.position, Literal(str(position), datatype=XSD.integer)))
        if parameter.description:
            add(Triple(p, DCTERMS.description, _text(parameter.description)))
        for value in parameter.enum:
            add(Triple(p, TK.enumValue, _text(value)))
        if parameter.default is not None:
            add(Triple(p, TK.defaultValue, Literal(parameter.default, datatype=RDF.JSON)))
        if parameter.nested is not None:
            add(Triple(p, TK.nestedSchema, Literal(parameter.nested, datatype=RDF.JSON)))
        if parameter.schema_name:
            add(Triple(p, TK.schemaName, _text(parameter.schema_name)))
    for position, output in enumerate(tool.outputs):
        o = iris.output_iri(node, output.name)
        add(Triple(node, TK.hasOutput, o))
        add(Triple(o, TK.outputOf, node))
        add(Triple(o, RDF.type, TK.Output))
        add(Triple(o, TK.name, _text(output.name)))
        add(Triple(o, RDFS.label, _text(output.name)))
        add(Triple(o, TK.jsonType, _text(output.json_type)))
        add(Triple(o, TK.position, Literal(str(position), datatype=XSD.integer)))
        if output.description:
            add(Triple(o, DCTERMS.description, _text(output.description)))
        if output.schema_name:
            add(Triple(o, TK.schemaName, _text(output.schema_name)))
    return node


def _annotation_triples(node: NamedNode, tool: Tool, add) -> None:
    a = tool.annotations
    assert a is not None
    if a.title:
        add(Triple(node, DCTERMS.title, _text(a.title)))
    for prop, value in (
        (TK.readOnlyHint, a.read_only),
        (TK.destructiveHint, a.destructive),
        (TK.idempotentHint, a.idempotent),
        (TK.openWorldHint, a.open_world),
    ):
        if value is not None:
            add(Triple(node, prop, _TRUE if value else _FALSE))
    if a.other_json:
        add(Triple(node, TK.annotationsJson, Literal(a.other_json, datatype=RDF.JSON)))


def _server_triples(server: Server, format: str, out: list[Triple]) -> NamedNode:
    node = iris.server_iri(server.id)
    add = out.append
    add(Triple(node, RDF.type, TK.Server))
    add(Triple(node, TK.identifier, _text(server.id)))
    add(Triple(node, TK.name, _text(server.name)))
    add(Triple(node, RDFS.label, _text(server.name)))
    add(Triple(node, TK.sourceFormat, _text(format)))
    if server.description:
        add(Triple(node, DCTERMS.description, _text(server.description)))
    if server.category:
        add(Triple(node, TK.category, _text(server.category)))
        add(Triple(node, TK.hasLineOfBusiness, entity_node("LineOfBusiness", server.category, out)))
    if server.homepage:
        add(Triple(node, TK.homepage, _text(server.homepage)))
    if server.version:
        add(Triple(node, TK.version, _text(server.version)))
    return node


def _dependency_triples(
    tool: Tool, node: NamedNode, index: NameIndex, source: str, out: list[Triple]
) -> list[tuple[str, str]]:
    """Declared dependency triples; returns (target name, reason) for each unresolved one."""
    unresolved = []
    parameter_names = {p.name: p for p in tool.parameters}
    for position, dep in enumerate(tool.depends_on):
        target_id, why = index.resolve(dep.target, tool.server_id, source)
        if target_id is None:
            unresolved.append((dep.target, why))
            continue
        producer = iris.tool_iri_from_id(target_id)
        kind = getattr(TK, dep.kind)
        d = iris.dependency_iri(node, dep.kind, producer, dep.parameter)
        out.append(Triple(node, kind, producer))
        out.append(Triple(node, TK.dependsOn, producer))
        out.append(Triple(node, TK.qualifiedDependency, d))
        out.append(Triple(d, RDF.type, TK.Dependency))
        out.append(Triple(d, TK.dependencyKind, kind))
        out.append(Triple(d, TK.onTool, producer))
        out.append(Triple(d, TK.basis, TK.Declared))
        out.append(Triple(d, TK.confidence, _ONE))
        out.append(Triple(d, TK.position, Literal(str(position), datatype=XSD.integer)))
        if dep.parameter:
            out.append(Triple(d, TK.parameterName, _text(dep.parameter)))
            if dep.parameter in parameter_names:
                p = parameter_names[dep.parameter]
                out.append(Triple(d, TK.viaParameter, iris.parameter_iri(node, p.name, p.location)))
        if dep.reason:
            out.append(Triple(d, TK.reason, _text(dep.reason)))
    return unresolved


def extract_structure(manifest: Manifest, index: NameIndex) -> ExtractedManifest:
    """All structural triples of a manifest, one ``ServerGraph`` per server."""
    graphs = []
    unresolved: set[str] = set()
    quarantined = []
    for server in manifest.servers:
        triples: list[Triple] = []
        server_node = _server_triples(server, manifest.format, triples)
        tool_ids = []
        for tool in server.tools:
            mine: list[Triple] = []
            try:  # one tool's failure is that tool's: the server and its other tools go on
                node = _tool_triples(tool, server_node, mine)
                missing = _dependency_triples(tool, node, index, manifest.path, mine)
            except Exception as exc:
                quarantined.append(quarantine(exc, source=manifest.path, item=tool.id, stage="extract"))
                continue
            triples += mine
            tool_ids.append(tool.id)
            for name, why in missing:
                unresolved.add(name)
                quarantined.append(
                    QuarantinedItem(source=manifest.path, item=tool.id, stage="extract", reason=why, raw=name)
                )
        graphs.append(
            ServerGraph(
                server_id=server.id,
                graph=iris.server_graph(server.id),
                triples=tuple(triples),
                tool_ids=tuple(tool_ids),
            )
        )
    return ExtractedManifest(
        manifest=manifest, graphs=tuple(graphs), unresolved=tuple(sorted(unresolved)), quarantined=tuple(quarantined)
    )
