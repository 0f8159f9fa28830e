"""Link: structural links between tools (co-invoked, schema compatible, shared parameters), one links graph."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toolkg.canonicalize.links.incremental import IncrementalLinks
from toolkg.canonicalize.links.structural import LinkIndex, structural_links, tool_text
from toolkg.embeddings.ahead import EmbedAhead
from toolkg.embeddings.encoder import Embedder
from toolkg.embeddings.encoder import model_id as embedding_model_id
from toolkg.flows.stages.base import CatalogRun, CatalogStage, Change, StageState, StageUpdate
from toolkg.models import StageInfo, Tool, ToolLink
from toolkg.ontology.graphs import LINKS_GRAPH
from toolkg.paths import store_cache
from toolkg.stages import StageName
from toolkg.store.dependencies import link_rows, link_triples

LinkKey = tuple[str, str, str]  # source, target, kind


@dataclass
class LinkState(StageState):
    """What incremental linking keeps warm: the stored links, every tool's vector, and each tool's
    top lists (``IncrementalLinks``), computed once; the embedder a change's new texts go through."""

    links: dict[LinkKey, ToolLink]
    vectors: dict[str, np.ndarray]
    embedder: Embedder
    index: LinkIndex
    tops: IncrementalLinks
    # stored links that differ from what the rules give now (a store linked by older rules): the first
    # update rewrites them too
    stale: set[LinkKey] = field(default_factory=set)

    def preload(self) -> None:
        self.embedder.warm()  # the ONNX session now: an operation's few texts never wait for it

    def close(self) -> None:
        self.embedder.close()


class LinkInfo(StageInfo):
    links: dict[str, int] = {}  # by type, total, and how many descriptions were embedded this run

    def lines(self) -> list[str]:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.links.items()) if k not in ("total", "embedded"))
        return [
            f"structural links: {self.links['total']}"
            + (f" ({kinds})" if kinds else "")
            + f"; {self.links.get('embedded', 0)} descriptions embedded (rest cached)"
        ]


class Link(CatalogStage[LinkState]):
    """Structural links (co-invoked, schema compatible, shared parameters); swap their graph."""

    name = StageName.LINK
    result = LinkInfo
    section = "links"
    graph = LINKS_GRAPH
    code = ("toolkg.canonicalize.links", "toolkg.embeddings.encoder", "toolkg.text")

    def wanted(self, run: CatalogRun) -> bool:
        return run.config.link

    def extra_options(self, run: CatalogRun) -> dict[str, Any]:
        return {"model": embedding_model_id()}

    def prefetch(self, run: CatalogRun, tools: Sequence[Tool]) -> EmbedAhead | None:
        """The new tools' texts embedded ahead into the vector cache, on the core extraction leaves idle
        (``toolkg.embeddings.ahead``; too few texts to be worth a process: None)."""
        return EmbedAhead.start(store_cache(run.store.directory, "embeddings"), [tool_text(t) for t in tools])

    def run(self, run: CatalogRun) -> LinkInfo:
        run.finish_prefetch(self.name)  # the vectors it embedded are in the cache; the rest are embedded here
        tools = run.tools()
        embedder = Embedder(store_cache(run.store.directory, "embeddings"))
        try:
            vectors = embedder.encode([tool_text(t) for t in tools], label="embed tools")
        finally:
            embedder.close()
        links = structural_links(tools, vectors, run.config.links)
        run.store.replace_graph(LINKS_GRAPH, link_triples(links))
        by_kind = dict(Counter(x.kind for x in links))
        return LinkInfo(links=by_kind | {"total": len(links), "embedded": embedder.computed})

    # --- incremental sync ----------------------------------------------------------------------

    def warm(self, run: CatalogRun) -> LinkState:
        """The stored links, and every tool's vector (from the embedding cache) and top lists, with the run's
        link options: stored links that differ from what they give are redecided by the first update."""
        links = {
            (r["source"], r["target"], r["kind"]): ToolLink(
                r["source"], r["target"], r["kind"], round(r["score"], 3), r["evidence"]
            )
            for r in link_rows(run.store)
        }
        tools = {t.id: t for t in run.tools()}
        ids = sorted(tools)
        embedder = Embedder(store_cache(run.store.directory, "embeddings"))
        matrix = embedder.encode([tool_text(tools[i]) for i in ids], label="embed tools")
        vectors = dict(zip(ids, matrix, strict=True))
        index = LinkIndex(list(tools.values()), vectors)
        tops = IncrementalLinks(index, run.config.links)
        stale = {k for k in links.keys() | tops.links.keys() if links.get(k) != tops.links.get(k)}
        return LinkState(links, vectors, embedder, index, tops, stale)

    def update(self, state: LinkState, change: Change) -> StageUpdate:
        """Embed the changed tools, redecide the links whose value may have changed, and patch the
        links graph by link. Reports the links added and removed, and the seconds spent embedding."""
        changed, removed, touched = change.changed, change.removed, change.touched
        embedding = 0.0
        for i in removed:
            state.vectors.pop(i, None)
        if changed:
            clock = time.perf_counter()
            ids = sorted(changed)
            encoded = state.embedder.encode([tool_text(change.tools[i]) for i in ids], label="embed tools")
            state.vectors.update(zip(ids, encoded, strict=True))
            embedding = time.perf_counter() - clock
        previous = [state.index.tools[i] for i in touched if i in state.index.tools]  # as they were
        for i in removed:
            state.index.discard(i)
        for i in changed:
            state.index.put(change.tools[i])
        redecided = state.tops.update(touched, previous)
        redecided |= state.stale  # a store linked by another version of the rules is brought in line once
        state.stale = set()
        # A link's triples are its own (its node is named by source, type and target): diff by link.
        # Scores are rounded as stored (3 decimals) where links are made, so unchanged ones compare equal.
        now = state.tops.links
        gone = [state.links[k] for k in redecided if k in state.links and now.get(k) != state.links[k]]
        added = [now[k] for k in redecided if k in now and state.links.get(k) != now[k]]
        for x in gone:
            del state.links[x.source, x.target, x.kind]
        state.links.update(((x.source, x.target, x.kind), x) for x in added)
        change.patch(LINKS_GRAPH, set(link_triples(gone)), set(link_triples(added)))
        seconds = {"embed": embedding} if changed else {}  # part of the stage's time
        return StageUpdate(links_added=len(added), links_removed=len(gone), seconds=seconds)
