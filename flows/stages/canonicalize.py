"""Canonicalize: store-wide clusters of near-identical entities, one canonical-entities graph.

Incremental sync does not re-cluster: clustering reads every stored entity and which were canonical before
(canonicalize/entities/clustering.py), 0.67 s at LiveMCPBench's 527 tools where a whole sync operation takes
20-40 ms. Its ``update`` is the stages' default (flows/stages/base.py): the stage is marked pending in the
sync's own transaction, and the next build clusters the catalog as it then stands.
"""

from __future__ import annotations

from toolkg.canonicalize.entities.clustering import canonicalize_store
from toolkg.display import one_line
from toolkg.flows.stages.base import CatalogRun, CatalogStage, StageState
from toolkg.models import Frozen, StageInfo
from toolkg.ontology.graphs import CANONICAL_GRAPH
from toolkg.stages import StageName


class CanonicalFigures(Frozen):
    """The canonicalize stage's figures (``canonicalize_store``'s), as the run summary keeps them."""

    entities: int = 0
    by_type: dict[str, int] = {}  # entities per type
    clusters: int = 0  # fuzzy clusters
    merged: int = 0  # entities merged into another
    largest: tuple[tuple[str, int, tuple[str, ...]], ...] = ()  # label, size, the first members


class CanonicalInfo(StageInfo):
    canonical: CanonicalFigures = CanonicalFigures()

    def lines(self) -> list[str]:
        c = self.canonical
        largest = "; ".join(f"{one_line(label, 80)} ({size})" for label, size, _ in c.largest[:3])
        return [
            f"entities: {c.entities}, {c.clusters} fuzzy clusters merging {c.merged}"
            + (f" (largest: {largest})" if largest else "")
        ]


class Canonicalize(CatalogStage[StageState]):
    """Fuzzy-merge near-identical entities store-wide and swap the canonical-entities graph."""

    name = StageName.CANONICALIZE
    result = CanonicalInfo
    section = "entities"
    graph = CANONICAL_GRAPH
    unit = "entities"
    code = ("toolkg.canonicalize.entities", "toolkg.text")

    def run(self, run: CatalogRun) -> CanonicalInfo:
        return CanonicalInfo(canonical=CanonicalFigures(**canonicalize_store(run.store, run.config.entities)))

    def size(self, run: CatalogRun, info: StageInfo) -> int:
        return info.canonical.entities if isinstance(info, CanonicalInfo) else 0
