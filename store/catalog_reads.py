"""What the stored catalog holds, read back: the tools, the server ids, the manifests owning a graph.

The one SPARQL read of every tool lives here: inference and links (``flows/catalog_stages.py``),
incremental sync (``toolkg.sync``) and the retrievers' catalog (``toolkg.retrieval.catalog``) all
take their tools from ``stored_tools``.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from pyoxigraph import Literal, NamedNode

from toolkg.models import OutputField, Parameter, Tool
from toolkg.ontology import iris
from toolkg.store.oxigraph_store import ToolStore


def stored_tools(store: ToolStore) -> list[Tool]:
    """Every stored tool, sorted by id, with what the catalog-wide stages and retrievers read: name,
    description, parameters in position order (name, required, location, description) and output
    names, enum values (sorted: the store keeps a set). Other fields (JSON types, annotations...) keep
    their model defaults.

    A tool's node is ``iris.tool_iri_from_id(tool.id)`` (its server id is the part of its
    identifier before ``::``; server ids never hold ``::``)."""
    tools: dict[str, dict] = {}
    for row in store.select("""SELECT ?t ?id ?name ?description WHERE {
            ?t a tk:Tool ; tk:identifier ?id ; tk:name ?name . OPTIONAL { ?t dcterms:description ?description } }"""):
        server_id = row["id"].value.partition("::")[0]
        description = row["description"].value if row.get("description") else ""
        tools[row["t"].value] = {"server_id": server_id, "name": row["name"].value, "description": description}
    parameters: dict[str, list[tuple[int, Parameter]]] = defaultdict(list)
    for row in store.select("""SELECT ?t ?name ?required ?location ?position ?description WHERE {
            ?t tk:hasParameter ?p . ?p tk:name ?name ; tk:required ?required ; tk:location ?location ;
               tk:position ?position . OPTIONAL { ?p dcterms:description ?description } }"""):
        parameters[row["t"].value].append(
            (
                int(row["position"].value),
                Parameter(
                    name=row["name"].value,
                    required=row["required"].value == "true",
                    location=row["location"].value,
                    description=row["description"].value if row.get("description") else "",
                ),
            )
        )
    enums: dict[tuple[str, str], list[str]] = defaultdict(list)
    rows = store.select(
        "SELECT ?t ?name ?value WHERE { ?t tk:hasParameter ?p . ?p tk:name ?name ; tk:enumValue ?value }"
    )
    for row in rows:
        enums[(row["t"].value, row["name"].value)].append(row["value"].value)
    for node, items in parameters.items():
        items[:] = [
            (i, p.model_copy(update={"enum": tuple(sorted(enums[(node, p.name)]))}) if (node, p.name) in enums else p)
            for i, p in items
        ]
    outputs: dict[str, list[OutputField]] = defaultdict(list)
    for row in store.select("SELECT ?t ?name WHERE { ?t tk:hasOutput ?o . ?o tk:name ?name }"):
        outputs[row["t"].value].append(OutputField(name=row["name"].value))
    out = [
        Tool(
            **fields,
            parameters=tuple(p for _, p in sorted(parameters.get(node, []), key=lambda x: x[0])),
            outputs=tuple(outputs.get(node, [])),
        )
        for node, fields in tools.items()
    ]
    return sorted(out, key=lambda t: t.id)


def stored_server_ids(store: ToolStore) -> set[str]:
    """The identifier of every stored server."""
    return {r["id"].value for r in store.select("SELECT ?id WHERE { ?s a tk:Server ; tk:identifier ?id }")}


def manifests_defining(store: ToolStore, graph: NamedNode) -> list[tuple[NamedNode, Literal]]:
    """The manifest records (node, fingerprint) in the manifests graph that define ``graph``."""
    rows = store.select(
        "SELECT ?m ?fp ?g ?records WHERE { GRAPH ?records { ?m tk:definesGraph ?g ; tk:fingerprint ?fp } }",
        {"g": graph, "records": iris.MANIFESTS_GRAPH},
    )
    return [(row["m"], row["fp"]) for row in rows]


def server_catalogs(store: ToolStore) -> dict[str, str]:
    """Server id -> the catalog it came from: the folder of the manifest that defines it (a catalog
    split over files shares a folder). Dependency inference keeps unrelated catalogs apart by it."""
    by_graph = {
        graph: str(Path(record.path).parent) for record in store.manifest_records().values() for graph in record.graphs
    }
    out = {}
    for server_id in stored_server_ids(store):
        catalog = by_graph.get(iris.server_graph(server_id).value)
        if catalog is not None:
            out[server_id] = catalog
    return out
