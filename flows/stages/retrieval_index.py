"""Index: the retrieval index a cold ``toolkg retrieve`` maps instead of reading the whole store
(``toolkg.retrieval.index_files``: the tools' documents, BM25 postings, tool and server vectors).

It writes files beside the store, not a graph: what it leaves in the store is its digest in the build-state
graph, ending with the token of the index it wrote, which tells a retriever the index matches the store.
The vectors come from the vector cache the link stage filled: nothing is embedded twice. With links off the
build embeds nothing, so the index then holds no vectors unless every text is cached already (a retriever
looks them up as before).

It also makes the catalog's probe queries (``toolkg.retrieval.probes``: what ``auto`` weighs its text
signals by), kept in ``<store>/cache/probes.sqlite``, so the first ``toolkg retrieve`` and the first MCP
``search_tools`` find them made instead of paying 2-10 s for them. They need the tools' vectors: with links
off, the build embeds nothing and the first query makes them, as for a store built before this stage did.

Incremental sync does not patch the index: BM25's weights all move when the catalog's size does, and a
tool's place in every array is its rank by id, so a patch would be a rewrite, which would cost a sync
more than the rest of its work. Its ``update`` is the stages' default (flows/stages/base.py): the stage is
marked pending in the sync's own transaction, and retrievers read the store (and say so) until the next build
writes the index again. The probes are left to the first query after a sync too: they are keyed by the
catalog's digest, so the changed catalog finds none and its first query makes them (0.3 s at 527 tools, said
on stderr; the next full build makes them ahead again). A sync that made them itself measured 0.7-3.5 s at
527 tools, where the rest of its work takes 20-70 ms: it cost the sync its 50x over a rebuild
(benchmarks/sync_bench.py), and made every sync of a batch pay for probes only the last one's catalog uses.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from toolkg.embeddings.encoder import Embedder
from toolkg.embeddings.encoder import model_id as embedding_model_id
from toolkg.flows.stages.base import CatalogRun, CatalogStage, StageState
from toolkg.models import Frozen, StageInfo
from toolkg.paths import store_cache
from toolkg.retrieval.base import Index
from toolkg.retrieval.catalog import ServerDoc, ToolDoc, read_servers
from toolkg.retrieval.index_files import (
    current_token,
    index_root,
    prune,
    set_current,
    token_of,
    usable,
    with_token,
    write_index,
)
from toolkg.retrieval.probes import probes_of
from toolkg.stages import StageName
from toolkg.store.build_state import options_digests


class IndexFigures(Frozen):
    """The index stage's figures, as the run summary keeps them (``stages["index"]["index"]``)."""

    tools: int = 0
    servers: int = 0
    terms: int = 0
    megabytes: float = 0.0
    vectors: bool = False  # the index holds the tools' vectors
    reused: bool = False  # an identical index was in place already
    probes: int = 0  # the catalog's probe queries
    probes_made: bool = False  # made this run (not found in the cache)


class IndexInfo(StageInfo):
    index: IndexFigures = IndexFigures()

    def lines(self) -> list[str]:
        i = self.index
        what = "unchanged" if i.reused else f"{i.megabytes} MB written"
        vectors = "" if i.vectors else "; no vectors (links off: a retriever looks them up)"
        probes = ""
        if i.vectors:
            probes = f"; {i.probes} probe queries " + ("made" if i.probes_made else "unchanged")
        return [f"retrieval index: {i.tools} tools, {i.terms} terms, {what}{vectors}{probes}"]


def probe_catalog(run: CatalogRun) -> tuple[int, bool]:
    """The stored catalog's probe queries made into the store's cache, unless the cache has them already:
    (how many, whether made now). Read from the store itself (the index this stage writes is not the
    store's until the stage completes), as a retriever would read it: the same catalog, the same digest."""
    index = Index(run.store.directory, store=run.store, use_index=False)
    try:
        probes = probes_of(index, run.store.directory)
    finally:
        index.close(store=False)  # the run's store: the run closes it
    return len(probes.made), probes.fresh


class RetrievalIndex(CatalogStage[StageState]):
    """Write ``<store>/index/<token>`` for the stored catalog and record its token in the store."""

    name = StageName.INDEX
    result = IndexInfo
    code = (
        "toolkg.retrieval.catalog",
        "toolkg.retrieval.lexical",
        "toolkg.retrieval.index_files",
        "toolkg.retrieval.probes",
        "toolkg.retrieval.fusion",
        "toolkg.embeddings.encoder",
        "toolkg.text",
    )

    def extra_options(self, run: CatalogRun) -> dict[str, Any]:
        return {"model": embedding_model_id(), "vectors": run.config.link}

    def digest(self, run: CatalogRun) -> str:
        """Options and code, and the token of the index this stage last wrote (``index/current``): the store
        records it when the stage completes, so a store names the index that matches it."""
        return with_token(super().digest(run), current_token(run.store.directory))

    def due(self, run: CatalogRun, changed: bool, pending: set[str], digests: dict[str, str]) -> bool:
        """As every stage, and when the index the store names is gone or unreadable."""
        written = index_root(run.store.directory) / current_token(run.store.directory)
        return super().due(run, changed, pending, digests) or not usable(written)

    def run(self, run: CatalogRun) -> IndexInfo:
        store = run.store
        previous = token_of(options_digests(store).get(self.name, ""))  # the last snapshot may still use it
        tools = [ToolDoc.from_record(t) for t in run.tools()]
        servers = read_servers(store)
        model = embedding_model_id()
        written = write_index(
            store.directory,
            super().digest(run),
            tools,
            servers,
            model,
            lambda: self._vectors(run, tools, servers),
        )
        set_current(store.directory, written.token)
        prune(store.directory, keep={written.token, previous})
        probes, made = probe_catalog(run) if written.vectors else (0, False)
        return IndexInfo(
            index=IndexFigures(
                tools=len(tools),
                servers=len(servers),
                terms=written.terms,
                megabytes=written.megabytes,
                vectors=written.vectors,
                reused=written.reused,
                probes=probes,
                probes_made=made,
            )
        )

    @staticmethod
    def _vectors(
        run: CatalogRun, tools: list[ToolDoc], servers: list[ServerDoc]
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Tool and server vectors from the cache (the link stage embedded the tools; the servers' few texts
        are embedded here once). Without links the build embeds nothing: None unless all are cached."""
        texts = [t.text for t in tools]
        server_texts = [s.text for s in servers]
        embedder = Embedder(store_cache(run.store.directory, "embeddings"))
        try:
            if not run.config.link and embedder.missing(texts + server_texts):
                return None
            return embedder.encode(texts, label="embed tools"), embedder.encode(server_texts, label="embed servers")
        finally:
            embedder.close()
