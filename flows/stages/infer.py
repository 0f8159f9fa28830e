"""Infer: dependency edges between every stored tool (an LLM reviews them when configured), one inferred graph."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel

from toolkg.canonicalize.inference.infer import infer_dependencies, prime
from toolkg.config import InferenceOptions
from toolkg.flows.stages.base import CatalogRun, CatalogStage, Change
from toolkg.models import InferredEdge, QuarantinedItem, StageInfo, Tool
from toolkg.ontology.graphs import INFERRED_GRAPH
from toolkg.ontology.vocabulary import Basis
from toolkg.stages import StageName
from toolkg.store.catalog_reads import server_catalogs
from toolkg.store.dependencies import declared_pairs, dependency_rows, edge_triples
from toolkg.store.oxigraph_store import ToolStore

EdgeKey = tuple[str, str, str | None]  # consumer, producer, parameter


def _edge_key(e: InferredEdge) -> EdgeKey:
    return (e.consumer, e.producer, e.parameter)


@dataclass
class InferState:
    """What incremental inference keeps warm: the inferred edges, the declared pairs and each
    server's catalog (inference keeps unrelated catalogs apart)."""

    edges: dict[EdgeKey, InferredEdge]
    declared: set[tuple[str, str]]
    catalogs: dict[str, str]
    options: InferenceOptions = field(default_factory=InferenceOptions)


class InferInfo(StageInfo):
    """Inferred edges by kind (and total), and the LLM review when one ran."""

    stage: ClassVar[str] = StageName.INFER
    inferred: dict[str, int] = {}
    confirmation: dict[str, Any] = {}

    def lines(self) -> list[str]:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.inferred.items()) if k != "total")
        out = [f"inferred dependencies: {self.inferred['total']}" + (f" ({kinds})" if kinds else "")]
        if self.confirmation:
            c = self.confirmation
            out.append(
                f"LLM review of inferred dependencies ({c['model']}): {c['confirmed']} confirmed, {c['rejected']} "
                f"rejected, {c['unjudged']} unjudged; {c['cache_hits']} cache hits, {c['http_requests']} HTTP "
                f"requests ({c['retries']} retries, {c['reasks']} re-asks)"
                + (f"; cost {c['cost']:.4f}" if "cost" in c else "")
            )
        return out


class Infer(CatalogStage):
    """Infer dependencies over every stored tool (an LLM reviews them when configured) and swap the
    inferred graph."""

    name = StageName.INFER
    graph = INFERRED_GRAPH
    code = ("toolkg.canonicalize", "toolkg.text")

    def wanted(self, run: CatalogRun) -> bool:
        return run.config.infer

    def options(self, run: CatalogRun) -> BaseModel:
        return run.config.inference

    def extra_options(self, run: CatalogRun) -> dict[str, Any]:
        return {"confirmed": run.confirmer is not None}

    def due(self, run: CatalogRun, changed: bool, pending: set[str], digests: dict[str, str]) -> bool:
        return run.confirmer is not None or super().due(run, changed, pending, digests)

    def run(self, run: CatalogRun) -> InferInfo:
        tools, store = run.tools(), run.store
        edges = infer_dependencies(
            tools, run.config.inference, declared=declared_pairs(store), catalogs=server_catalogs(store)
        )
        confirmation: dict[str, Any] = {}
        unjudged: list[QuarantinedItem] = []
        if run.confirmer is not None:
            review = run.confirmer.review(edges, tools, run.run_id)
            edges = review.edges
            confirmation = run.confirmer.usage() | {
                "confirmed": sum(e.basis == Basis.LLM for e in edges),
                "rejected": len(review.rejected),
                "unjudged": len(review.unjudged),
                "rejected_edges": [f"{e.consumer} <- {e.producer}: {why}" for e, why in review.rejected[:200]],
            }
            unjudged = [
                QuarantinedItem(
                    source="dependency inference",
                    item=f"{edge.consumer} <- {edge.producer}",
                    stage=StageName.CONFIRM,
                    reason=f"{why} (kept unconfirmed)",
                )
                for edge, why in review.unjudged
            ]
        store.replace_graph(INFERRED_GRAPH, edge_triples(edges, tools))
        inferred = dict(Counter(e.kind for e in edges)) | {"total": len(edges)}
        return InferInfo(inferred=inferred, confirmation=confirmation, quarantined=tuple(unjudged))

    # --- incremental sync ----------------------------------------------------------------------

    def warm(
        self, store: ToolStore, options: InferenceOptions | None = None, tools: Iterable[Tool] = ()
    ) -> InferState:
        """The stored inferred edges (declared ones are the manifests', not this stage's), and what
        inference reads of each of ``tools`` computed ahead (``prime``)."""
        prime(tools)
        edges = {
            (r["consumer"], r["producer"], r["parameter"]): InferredEdge(
                consumer=r["consumer"],
                producer=r["producer"],
                kind=r["kind"],
                parameter=r["parameter"],
                confidence=r["confidence"] or 0.0,
                rule=r["rule"] or "",
                evidence=r["evidence"],
                basis=r["basis"],
            )
            for r in dependency_rows(store)
            if r["basis"] != Basis.DECLARED
        }
        return InferState(edges, declared_pairs(store), server_catalogs(store), options or InferenceOptions())

    def update(self, state: InferState, change: Change) -> tuple[int, int, int]:
        """Re-infer the changed tools' neighbourhood against the whole catalog: consumers of a changed
        tool's old edges, consumers a changed tool may now feed, the changed tools themselves and (the
        learned judge weighs a slot's candidates on its whole server) every tool of a touched server.
        Returns (neighbourhood size, edges added, edges removed); the triples go into ``change``."""
        changed, removed, touched = change.changed, change.removed, change.touched
        catalog = list(change.tools.values())
        neighbourhood = set(changed)
        neighbourhood |= {e.consumer for e in state.edges.values() if e.producer in touched}
        if changed:  # every consumer a changed tool could now feed, before sparsification
            candidates = infer_dependencies(
                catalog, state.options, producers=changed, sparsify=False, catalogs=state.catalogs
            )
            neighbourhood |= {e.consumer for e in candidates}
        if state.options.learned:
            servers = {i.partition("::")[0] for i in touched}
            neighbourhood |= {i for i, tool in change.tools.items() if tool.server_id in servers}
        neighbourhood -= removed
        fresh = (
            infer_dependencies(
                catalog, state.options, declared=state.declared, consumers=neighbourhood, catalogs=state.catalogs
            )
            if neighbourhood
            else []
        )
        stale = [e for e in state.edges.values() if e.consumer in neighbourhood | removed or e.producer in removed]
        # Edges sharing a (consumer, producer) pair share triples (tk:dependsOn ...); both sets hold
        # every edge of such a pair, so a set difference never retracts a triple still wanted.
        old_triples, new_triples = set(edge_triples(stale, change.before)), set(edge_triples(fresh, catalog))
        change.patch(INFERRED_GRAPH, old_triples - new_triples, new_triples - old_triples)
        old, new = {_edge_key(e): e for e in stale}, {_edge_key(e): e for e in fresh}
        for key in old:
            state.edges.pop(key, None)
        state.edges.update(new)
        added = sum(old.get(k) != e for k, e in new.items())
        dropped = sum(new.get(k) != e for k, e in old.items())
        return len(neighbourhood), added, dropped
