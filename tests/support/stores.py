"""Comparing stores: what two builds made, up to the run ids every build mints afresh."""

from __future__ import annotations

import re
from pathlib import Path

from toolkg.ontology import iris
from toolkg.store.oxigraph_store import ToolStore

_RUN = re.compile(re.escape(iris.BASE) + r"run/[^>/\s]+")


def comparable(store_dir: Path) -> set[str]:
    """The store's quads as text, run ids blanked and the provenance graph left out (each run's own)."""
    with ToolStore(store_dir, read_only=True) as store:
        return {_RUN.sub("RUN", str(q)) for q in store.quads() if q.graph_name != iris.PROVENANCE_GRAPH}
