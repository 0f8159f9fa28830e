"""The catalog-wide stages after loading: canonicalize, infer, link, then the snapshot.

Each stage reads the whole stored catalog and swaps one named graph. Each runs under one guard:
a failure keeps the stage's previous graph, becomes a quarantine entry for the catalog (stage
and one-line reason), and leaves the stage marked pending (``store/build_state.py``), so the next
build redoes it even when no manifest changed. A stage clears its mark only after its graph is in.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from toolkg import memory, progress
from toolkg.canonicalize.entities.clustering import CANONICAL_GRAPH, canonicalize_store
from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.canonicalize.links.structural import structural_links, tool_text
from toolkg.config import BuildConfig, EntityOptions, LinkOptions
from toolkg.embeddings.ahead import EmbedAhead
from toolkg.embeddings.encoder import Embedder
from toolkg.embeddings.encoder import model_id as embedding_model_id
from toolkg.failures import fault_point, quarantine
from toolkg.fingerprint import source_fingerprint
from toolkg.models import QuarantinedItem, StageInfo, Tool
from toolkg.store.build_state import clear_pending, options_digests
from toolkg.store.catalog_reads import server_catalogs, stored_tools
from toolkg.store.dependencies import INFERRED_GRAPH, LINKS_GRAPH, declared_pairs, edge_triples, link_triples
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.snapshots import current_snapshot, publish_snapshot
from toolkg.summary import BuildSummary

if TYPE_CHECKING:
    from toolkg.canonicalize.inference.confirm import DependencyConfirmer

CATALOG = "catalog"  # the item a catalog-wide stage's quarantine entry names


@dataclass
class CatalogStages:
    """The catalog-wide stages after loading, what they need, and the options they run with."""

    config: BuildConfig = field(default_factory=BuildConfig)  # which stages run (infer, link) and their options
    confirmer: DependencyConfirmer | None = None  # an LLM reviews inferred edges
    ahead: EmbedAhead | None = None  # new tool texts being embedded beside the other stages

    def finish_ahead(self) -> None:
        """Stop the embed-ahead worker (what it embedded is in the cache); idempotent."""
        if self.ahead is not None:
            self.ahead.finish()
            self.ahead = None

    def digest(self, stage: str) -> str:
        """What a stage's result depends on besides the catalog: its options (and the reviewer), and
        the code of its rules, so a store built by an older toolkg is brought up to date."""
        key: dict[str, object] = {
            "canonicalize": self.config.entities.model_dump(),
            "infer": self.config.inference.model_dump() | {"confirmed": self.confirmer is not None},
            "link": self.config.links.model_dump() | {"model": embedding_model_id()},
        }.get(stage, {})
        key = {"options": key, "code": code_fingerprint(stage)}
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


# The modules whose code decides a stage's result (the word lists and lemmas are read by all three).
STAGE_CODE = {
    "canonicalize": ("toolkg.canonicalize.entities.clustering", "toolkg.text"),
    "infer": ("toolkg.canonicalize", "toolkg.text"),
    "link": ("toolkg.canonicalize.links.structural", "toolkg.embeddings.encoder", "toolkg.text"),
}


def code_fingerprint(stage: str) -> str:
    """sha256 of the source of the modules (a package: all its modules) behind a stage."""
    return source_fingerprint(STAGE_CODE.get(stage, ()))


def make_confirmer(store_dir: str, llm_config: str | None) -> DependencyConfirmer:
    from toolkg.canonicalize.inference.confirm import DependencyConfirmer  # openai + instructor load only when used
    from toolkg.llm.config import load_llm_config

    config = load_llm_config(llm_config)
    config.require_endpoint()
    return DependencyConfirmer(config, Path(store_dir) / "cache" / "llm.sqlite")


class InferInfo(StageInfo):
    """Inferred edges by kind (and total), and the LLM review when one ran."""

    inferred: dict[str, int] = {}
    confirmation: dict[str, object] = {}

    def summary_fields(self) -> dict[str, object]:
        return {"inferred": self.inferred, "confirmation": self.confirmation}


class LinkInfo(StageInfo):
    links: dict[str, int] = {}  # by type, total, and how many descriptions were embedded this run

    def summary_fields(self) -> dict[str, object]:
        return {"links": self.links}


class CanonicalInfo(StageInfo):
    canonical: dict[str, object] = {}  # entities, fuzzy clusters, largest clusters

    def summary_fields(self) -> dict[str, object]:
        return {"canonical": self.canonical}


@task(name="infer-dependencies", cache_policy=NO_CACHE, persist_result=False)
def infer_task(store: ToolStore, tools: list[Tool], stages: CatalogStages, run_id: str) -> InferInfo:
    """Infer dependencies over every stored tool (an LLM reviews them when configured) and swap
    the inferred graph."""
    edges = infer_dependencies(
        tools, stages.config.inference, declared=declared_pairs(store), catalogs=server_catalogs(store)
    )
    confirmation: dict[str, object] = {}
    unjudged: list[QuarantinedItem] = []
    if stages.confirmer is not None:
        review = stages.confirmer.review(edges, tools, run_id)
        edges = review.edges
        confirmation = stages.confirmer.usage() | {
            "confirmed": sum(e.basis == "llm" for e in edges),
            "rejected": len(review.rejected),
            "unjudged": len(review.unjudged),
            "rejected_edges": [f"{e.consumer} <- {e.producer}: {why}" for e, why in review.rejected[:200]],
        }
        unjudged = [
            QuarantinedItem(
                source="dependency inference",
                item=f"{edge.consumer} <- {edge.producer}",
                stage="confirm",
                reason=f"{why} (kept unconfirmed)",
            )
            for edge, why in review.unjudged
        ]
    store.replace_graph(INFERRED_GRAPH, edge_triples(edges, tools))
    inferred = dict(Counter(e.kind for e in edges)) | {"total": len(edges)}
    return InferInfo(inferred=inferred, confirmation=confirmation, quarantined=tuple(unjudged))


@task(name="link-tools", cache_policy=NO_CACHE, persist_result=False)
def link_task(store: ToolStore, tools: list[Tool], options: LinkOptions) -> LinkInfo:
    """Structural links (co-invoked, schema compatible, shared parameters); swap their graph."""
    embedder = Embedder(store.directory / "cache" / "embeddings.sqlite")
    try:
        vectors = embedder.encode([tool_text(t) for t in tools], label="embed tools")
    finally:
        embedder.close()
    links = structural_links(tools, vectors, options)
    store.replace_graph(LINKS_GRAPH, link_triples(links))
    return LinkInfo(links=dict(Counter(x.kind for x in links)) | {"total": len(links), "embedded": embedder.computed})


@task(name="canonicalize-entities", cache_policy=NO_CACHE, persist_result=False)
def canonicalize_task(store: ToolStore, options: EntityOptions) -> CanonicalInfo:
    """Fuzzy-merge near-identical entities store-wide and swap the canonical-entities graph."""
    return CanonicalInfo(canonical=canonicalize_store(store, options))


def guarded(
    store: ToolStore,
    summary: BuildSummary,
    stage: str,
    work: Callable[[], StageInfo | None],
    size: Callable[[], int] | None = None,
    unit: str = "tools",
    digest: str = "",
) -> bool:
    """Run one catalog-wide stage and fold what it returns into the summary; on success clear its
    pending mark (last, with the ``digest`` of its options), on failure quarantine it for the catalog
    and leave the mark, so the next build redoes it. True when it succeeded.

    ``size`` (what the stage went over, read once it ran) makes its progress line: "infer: 1100 tools
    in 3s"."""
    clock = time.perf_counter()
    progress.start(stage, None, unit)
    with memory.stage(stage):
        try:
            fault_point(f"before-{stage}")  # test hook: a failure here keeps the stage's previous graph
            info = work()
            if info is not None:
                summary.fold(info)
            if size is not None:
                count = size()
                progress.report(stage, count, count, unit)
            fault_point(stage)  # test hook: a kill here leaves the stage marked, so the next build redoes it
            clear_pending(store, stage, digest)
            return True
        except Exception as exc:
            summary.quarantined.append(quarantine(exc, source=summary.store, item=CATALOG, stage=stage))
            return False
        finally:
            summary.add_time(stage, time.perf_counter() - clock)
            progress.done(stage)


def run_catalog_stages(
    store: ToolStore, summary: BuildSummary, stages: CatalogStages, changed: bool, pending: set[str]
) -> bool:
    """Canonicalize, infer and link when the catalog changed, when a stage is owed from an earlier
    build (``pending``), when its graph is missing, or when its options differ from the last time it
    ran; returns whether any graph was rewritten."""
    digests = options_digests(store)

    def due(stage: str, graph) -> bool:
        stale = digests.get(stage) != stages.digest(stage)
        return changed or stage in pending or stale or not store.has_graph(graph)

    wrote = False
    if due("canonicalize", CANONICAL_GRAPH):
        wrote |= guarded(
            store,
            summary,
            "canonicalize",
            lambda: canonicalize_task(quote(store), stages.config.entities),
            lambda: int(summary.canonical.get("entities", 0)),  # type: ignore[call-overload]
            "entities",
            digest=stages.digest("canonicalize"),
        )
    wanted_infer, wanted_link = stages.config.infer, stages.config.link
    infer = wanted_infer and (due("infer", INFERRED_GRAPH) or stages.confirmer is not None)
    link = wanted_link and due("link", LINKS_GRAPH)
    # A stage switched off leaves no stale graph behind: "declared edges only" means that.
    for wanted, graph, stage in ((wanted_infer, INFERRED_GRAPH, "infer"), (wanted_link, LINKS_GRAPH, "link")):
        if not wanted and (store.has_graph(graph) or stage in pending):
            guarded(store, summary, stage, lambda graph=graph: store.drop_graph(graph))
            wrote = True
    tools: list[Tool] = []
    if infer or link:
        clock = time.perf_counter()
        try:
            tools = stored_tools(store)
        except Exception as exc:  # neither stage can run: both stay pending
            summary.quarantined.append(quarantine(exc, source=summary.store, item=CATALOG, stage="infer"))
            infer = link = False
        summary.add_time("infer", time.perf_counter() - clock)
    if infer:
        wrote |= guarded(
            store,
            summary,
            "infer",
            lambda: infer_task(quote(store), quote(tools), quote(stages), summary.run_id),
            lambda: len(tools),
            digest=stages.digest("infer"),
        )
    if link:

        def relink() -> LinkInfo:
            stages.finish_ahead()  # the vectors it embedded are in the cache; the rest are embedded here
            return link_task(quote(store), quote(tools), stages.config.links)

        wrote |= guarded(store, summary, "link", relink, lambda: len(tools), digest=stages.digest("link"))
    return wrote


def publish_if_due(store: ToolStore, summary: BuildSummary, changed: bool, pending: set[str]) -> None:
    """The endpoint serves snapshots, never the live database: publish one when the graph changed,
    when an earlier build owes one, or when there is none yet."""
    if store.remote:
        return
    if changed or "snapshot" in pending or current_snapshot(store.directory) is None:

        def publish() -> None:
            summary.snapshot = publish_snapshot(store, summary.run_id).name

        guarded(store, summary, "snapshot", publish)
