"""Canonicalize: store-wide clusters of near-identical entities, one canonical-entities graph."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from toolkg.canonicalize.entities.clustering import canonicalize_store
from toolkg.display import one_line
from toolkg.flows.stages.base import CatalogRun, CatalogStage
from toolkg.models import StageInfo
from toolkg.ontology.graphs import CANONICAL_GRAPH
from toolkg.stages import StageName


class CanonicalInfo(StageInfo):
    stage: ClassVar[str] = StageName.CANONICALIZE
    canonical: dict[str, Any] = {}  # entities, fuzzy clusters, largest clusters

    def lines(self) -> list[str]:
        c = self.canonical
        largest = "; ".join(f"{one_line(label, 80)} ({size})" for label, size, _ in c.get("largest", [])[:3])
        return [
            f"entities: {c['entities']}, {c['clusters']} fuzzy clusters merging {c['merged']}"
            + (f" (largest: {largest})" if largest else "")
        ]


class Canonicalize(CatalogStage):
    """Fuzzy-merge near-identical entities store-wide and swap the canonical-entities graph."""

    name = StageName.CANONICALIZE
    graph = CANONICAL_GRAPH
    unit = "entities"
    code = ("toolkg.canonicalize.entities", "toolkg.text")

    def options(self, run: CatalogRun) -> BaseModel:
        return run.config.entities

    def run(self, run: CatalogRun) -> CanonicalInfo:
        return CanonicalInfo(canonical=canonicalize_store(run.store, run.config.entities))

    def size(self, run: CatalogRun, info: StageInfo) -> int:
        return int(info.canonical.get("entities", 0))  # type: ignore[attr-defined]
