"""What the stored catalog holds, read back: the tools, the server ids, the manifests owning a graph.

Every tool is read by ``store/records.read_tools`` (one ``ToolRecord`` shape, a ``models.Tool``), which
inference and links (``flows/stages/``), incremental sync (``toolkg.flows.sync``), the retrievers'
catalog (``toolkg.retrieval.catalog``) and ``toolkg mcp`` share.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict, cast

from pyoxigraph import Literal, NamedNode

from toolkg.ontology.graphs import MANIFESTS_GRAPH, server_graph
from toolkg.store.oxigraph_store import ToolStore


def stored_server_ids(store: ToolStore) -> set[str]:
    """The identifier of every stored server."""
    return {r["id"].value for r in store.select("SELECT ?id WHERE { ?s a tk:Server ; tk:identifier ?id }")}


def server_ids_by_graph(store: ToolStore) -> dict[str, str]:
    """Server graph IRI -> the identifier of the server it holds."""
    rows = store.select("SELECT ?g ?id WHERE { GRAPH ?g { ?s a tk:Server ; tk:identifier ?id } }")
    return {row["g"].value: row["id"].value for row in rows}


def manifests_defining(store: ToolStore, graph: NamedNode) -> list[tuple[NamedNode, Literal]]:
    """The manifest records (node, fingerprint) in the manifests graph that define ``graph``."""
    rows = cast(
        list[_DefiningRow],
        store.select(
            "SELECT ?m ?fp ?g ?records WHERE { GRAPH ?records { ?m tk:definesGraph ?g ; tk:fingerprint ?fp } }",
            {"g": graph, "records": MANIFESTS_GRAPH},
        ),
    )
    return [(row["m"], row["fp"]) for row in rows]


class _DefiningRow(TypedDict):
    m: NamedNode  # a record is a named node, its fingerprint a literal (store.oxigraph_store._record_triples)
    fp: Literal
    g: NamedNode
    records: NamedNode


def server_catalogs(store: ToolStore) -> dict[str, str]:
    """Server id -> the catalog it came from: the folder of the manifest that defines it (a catalog
    split over files shares a folder). Dependency inference keeps unrelated catalogs apart by it."""
    by_graph = {
        graph: str(Path(record.path).parent) for record in store.manifest_records().values() for graph in record.graphs
    }
    out = {}
    for server_id in stored_server_ids(store):
        catalog = by_graph.get(server_graph(server_id).value)
        if catalog is not None:
            out[server_id] = catalog
    return out
