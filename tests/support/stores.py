"""Comparing stores: what two builds made, up to the run ids every build mints afresh; what a sync must reproduce."""

from __future__ import annotations

import re
from pathlib import Path

from toolkg.ontology import iris
from toolkg.store.dependencies import dependency_rows, link_rows
from toolkg.store.oxigraph_store import ToolStore

_RUN = re.compile(re.escape(iris.BASE) + r"run/[^>/\s]+")


def comparable(store_dir: Path) -> set[str]:
    """The store's quads as text, run ids blanked and the provenance graph left out (each run's own)."""
    with ToolStore(store_dir, read_only=True) as store:
        return {_RUN.sub("RUN", str(q)) for q in store.quads() if q.graph_name != iris.PROVENANCE_GRAPH}


def _graph_state(store_dir, server_ids):
    """What sync must reproduce: inferred edges, structural links, each server graph."""
    with ToolStore(store_dir) as store:
        edges = sorted(
            (r["consumer"], r["producer"], r["kind"], r["parameter"] or "", r["rule"] or "", r["basis"])
            for r in dependency_rows(store)
        )
        links = sorted((r["source"], r["target"], r["kind"], round(r["score"], 3)) for r in link_rows(store))
        graphs = {s: sorted(map(str, store.graph_triples(iris.server_graph(s)))) for s in server_ids}
        return edges, links, graphs
