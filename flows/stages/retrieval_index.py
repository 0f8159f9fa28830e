"""Index: the retrieval index a cold ``toolkg retrieve`` maps instead of reading the whole store
(``toolkg.retrieval.index_files``: the tools' documents, BM25 postings, tool and server vectors).

It writes files beside the store, not a graph: what it leaves in the store is its digest in the build-state
graph, ending with the token of the index it wrote, which tells a retriever the index matches the store.
The vectors come from the vector cache the link stage filled: nothing is embedded twice. With links off the
build embeds nothing, so the index then holds no vectors unless every text is cached already (a retriever
looks them up as before).

Incremental sync does not patch the index: BM25's weights all move when the catalog's size does, and a
tool's place in every array is its rank by id, so a patch would be a rewrite, which would cost a sync
more than the rest of its work. Its ``update`` is the stages' default (flows/stages/base.py): the stage is
marked pending in the sync's own transaction, and retrievers read the store (and say so) until the next build
writes the index again.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from toolkg.embeddings.encoder import Embedder
from toolkg.embeddings.encoder import model_id as embedding_model_id
from toolkg.flows.stages.base import CatalogRun, CatalogStage, StageState
from toolkg.models import StageInfo
from toolkg.paths import store_cache
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
from toolkg.stages import StageName
from toolkg.store.build_state import options_digests


class IndexInfo(StageInfo):
    stage: ClassVar[str] = StageName.INDEX
    index: dict[str, Any] = {}  # tools, servers, terms, megabytes, vectors, reused

    def lines(self) -> list[str]:
        i = self.index
        what = "unchanged" if i.get("reused") else f"{i.get('megabytes', 0)} MB written"
        vectors = "" if i.get("vectors") else "; no vectors (links off: a retriever looks them up)"
        return [f"retrieval index: {i.get('tools', 0)} tools, {i.get('terms', 0)} terms, {what}{vectors}"]


class RetrievalIndex(CatalogStage[StageState]):
    """Write ``<store>/index/<token>`` for the stored catalog and record its token in the store."""

    name = StageName.INDEX
    code = (
        "toolkg.retrieval.catalog",
        "toolkg.retrieval.lexical",
        "toolkg.retrieval.index_files",
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
        return IndexInfo(
            index={
                "tools": len(tools),
                "servers": len(servers),
                "terms": written.terms,
                "megabytes": written.megabytes,
                "vectors": written.vectors,
                "reused": written.reused,
            }
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
