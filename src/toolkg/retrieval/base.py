"""Shared pieces of every retriever: the opened index, rankings, fusion and step-wise queries."""

from __future__ import annotations

import sys
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TypeVar

import numpy as np

from toolkg.embeddings.encoder import Embedder, model_id
from toolkg.errors import NotFoundError
from toolkg.paths import store_cache
from toolkg.retrieval.catalog import Catalog, ToolDoc
from toolkg.retrieval.dense import make_embedder
from toolkg.retrieval.index_files import IndexUnusable, SavedIndex, open_index
from toolkg.retrieval.lexical import BM25
from toolkg.retrieval.queries import read_queries  # noqa: F401  (re-exported: the evaluation format)
from toolkg.store.oxigraph_store import ToolStore

RRF_K = 60


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    steps: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hit:
    tool: ToolDoc
    score: float
    why: str
    condition: str | None = None  # a prerequisite to call only when this holds (toolkg.store.advice)


@dataclass
class Ranking:
    tools: list[Hit] = field(default_factory=list)
    servers: list[tuple[str, float]] = field(default_factory=list)  # (server id, score), best first

    def as_json(self, query_id: str, *, why: bool = False) -> dict:
        """The ranking as JSON; ``why``: each tool's reason too (``retrieve --json``; not in --queries' lines,
        whose format evaluation scripts read)."""
        return {
            "id": query_id,
            "tools": [
                {"server": h.tool.server, "tool": h.tool.name, "score": round(h.score, 6)}
                | ({"why": h.why} if why else {})
                for h in self.tools
            ],
            "servers": [{"server": s, "score": round(score, 6)} for s, score in self.servers],
        }


def as_query(row: dict) -> Query:
    """A row of ``read_queries`` as the ``Query`` a retriever takes (blank steps left out)."""
    steps = tuple(s for s in row.get("steps") or () if isinstance(s, str) and s.strip())
    return Query(id=str(row["id"]), text=row["query"], steps=steps)


# A batch pads every text to its longest: a five-word step batched with a hundred-word request costs the model
# twenty times its own work. Texts whose lengths differ by more than this factor go in batches of their own
# (LiveMCPBench's requests with their steps, quiet 2-core box: embedding p50 30 -> 21 ms, p95 81 -> 38 ms).
LENGTH_RATIO = 2.0


def length_groups(texts: list[str], ratio: float = LENGTH_RATIO) -> list[list[str]]:
    """``texts`` by length (characters, for tokens), cut where a text is over ``ratio`` times the shortest
    of its group.

    >>> length_groups(["a much longer request than that", "short", "tiny", "a step"])
    [['tiny', 'short', 'a step'], ['a much longer request than that']]
    """
    groups: list[list[str]] = []
    for text in sorted(texts, key=len):
        if groups and len(text) <= ratio * max(len(groups[-1][0]), 1):
            groups[-1].append(text)
        else:
            groups.append([text])
    return groups


class Index:
    """A store opened for retrieval: catalog snapshot, BM25 and (lazily) embedding matrices.

    When the store's retrieval index matches it (``index_files``: written by the build), the catalog's
    documents, BM25 and the vectors are mapped from it; otherwise they are read from the store and the
    vector cache, and why is said on stderr (once per process and reason). Both give the same rankings."""

    def __init__(self, store_dir: str | Path, *, store: ToolStore | None = None, use_index: bool = True) -> None:
        """``store``: an already opened store (a published snapshot) instead of ``store_dir``'s database;
        ``store_dir`` still holds the embedding cache and the retrieval index. ``use_index=False`` reads
        the store even when an index matches it."""
        self.store = store or ToolStore(store_dir, read_only=True)
        self.store_dir = Path(store_dir)  # its caches: vectors, the probes (toolkg.retrieval.probes)
        self.saved: SavedIndex | None = _saved_index(self.store, store_dir) if use_index else None
        self.catalog = self.saved.catalog(self.store) if self.saved else Catalog.load(self.store)
        if not self.catalog.tools:
            raise NotFoundError(f"store {store_dir} has no tools: build it first")
        self._embedder = make_embedder(store_cache(store_dir, "embeddings"))

    def close(self, *, store: bool = True) -> None:
        """Release the vector cache, and the store unless ``store`` is False (a caller's open store)."""
        self._embedder.close()
        if store:
            self.store.close()

    @cached_property
    def tool_bm25(self) -> BM25:
        if self.saved:
            return self.saved.tool_bm25
        return BM25.from_texts([t.text for t in self.catalog.tools])

    @cached_property
    def server_bm25(self) -> BM25:
        if self.saved:
            return self.saved.server_bm25
        return BM25.from_texts([s.text for s in self.catalog.servers])

    def _saved_vectors(self) -> bool:
        """Whether the index's vectors are the ones this process would look up (same model, offline)."""
        saved = self.saved  # a SavedIndex is always truthy: no __len__ or __bool__
        return (
            saved is not None
            and bool(saved.model)
            and isinstance(self._embedder, Embedder)
            and (saved.model == model_id())
        )

    @cached_property
    def tool_vectors(self) -> np.ndarray:
        if self._saved_vectors():
            return _vectors(self.saved, "tool_vectors")
        return self._embedder.encode([t.text for t in self.catalog.tools], label="embed tools")

    @cached_property
    def server_vectors(self) -> np.ndarray:
        if self._saved_vectors():
            return _vectors(self.saved, "server_vectors")
        return self._embedder.encode([s.text for s in self.catalog.servers], label="embed servers")

    @cached_property
    def node_vectors(self) -> np.ndarray:
        return self._embedder.encode([n.label for n in self.catalog.nodes], label="embed nodes")

    @property
    def embedding_model(self) -> str:
        """The model the query vectors come from (the offline one's id, or the endpoint's model)."""
        return model_id() if isinstance(self._embedder, Embedder) else f"endpoint:{self._embedder.model}"

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Texts embedded through the store's vector cache (the catalog's probes: the same texts each time)."""
        return self._embedder.encode(list(texts), label="embed probes")

    def begin_query(self, texts: Sequence[str]) -> None:
        """Embed a query's texts (the query and its steps) in batches of similar length (``length_groups``);
        ``embed`` then reads them.

        Query vectors live for one query only: no cache makes a later query (or method) look faster."""
        vectors: dict[str, np.ndarray] = {}
        for group in length_groups(list(dict.fromkeys(texts))):
            vectors.update(zip(group, self._embedder.encode(group, cache=False), strict=True))
        self._query_vectors = vectors

    def embed(self, text: str) -> np.ndarray:
        vectors = getattr(self, "_query_vectors", {})
        if text not in vectors:
            vectors[text] = self._embedder.encode([text], cache=False)[0]
            self._query_vectors = vectors
        return vectors[text]


_said: set[str] = set()  # the reasons already told on stderr: a process says each once


def _saved_index(store: ToolStore, store_dir: str | Path) -> SavedIndex | None:
    """The retrieval index matching ``store``, or None (and one line on stderr saying why)."""
    try:
        return open_index(store, store_dir)
    except IndexUnusable as why:
        say_once(f"toolkg: {why}: reading the catalog from the store instead (slower); the next build writes it")
        return None


def say_once(message: str) -> None:
    """``message`` on stderr, the first time this process has it to say."""
    if message not in _said:
        _said.add(message)
        print(message, file=sys.stderr)


def top(scores: np.ndarray, n: int) -> list[int]:
    """Indices of the ``n`` best scores, best first (ties by index, so results are stable)."""
    n = min(n, len(scores))
    if n <= 0:
        return []
    part = np.argpartition(-scores, n - 1)[:n]
    return sorted(part.tolist(), key=lambda i: (-float(scores[i]), i))


def rrf(rankings: Iterable[Sequence[int]], weights: Sequence[float] | None = None, k: int = RRF_K) -> dict[int, float]:
    """Reciprocal rank fusion: sum of weight / (k + rank) over the lists (rank from 1)."""
    fused: dict[int, float] = {}
    for position, ranking in enumerate(rankings):
        weight = weights[position] if weights else 1.0
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return fused


def servers_of(catalog: Catalog, hits: Sequence[Hit], k: int) -> list[tuple[str, float]]:
    """Ownership: servers in the order their best tool ranks, scored by that tool."""
    out: dict[str, float] = {}
    for hit in hits:
        if hit.tool.server not in out:
            out[hit.tool.server] = hit.score
    return list(out.items())[:k]


class Retriever:
    """Subclasses implement ``search`` (one text); ``retrieve`` adds step-wise fusion."""

    name = "base"
    candidates = 50  # how deep each step's ranking goes before fusion
    embeds = True  # whether the method embeds the query (BM25 does not)

    def __init__(self, index: Index) -> None:
        self.index = index
        self.catalog = index.catalog

    def search(self, text: str, k: int) -> Ranking:
        raise NotImplementedError

    def retrieve(self, query: Query, k: int) -> Ranking:
        """The query alone, or (with steps) the query and each step retrieved and interleaved."""
        if self.embeds:
            self.index.begin_query([query.text, *query.steps])
        if not query.steps:
            ranking = self.search(query.text, k)
            return Ranking(ranking.tools[:k], ranking.servers[:k])
        rankings = [self.search(text, max(k, self.candidates)) for text in (query.text, *query.steps)]
        by_id = {h.tool.id: h for r in rankings for h in r.tools}
        fused = interleave([[h.tool.id for h in r.tools] for r in rankings])
        tools = [Hit(by_id[i].tool, score, f"{by_id[i].why} (step-fused)") for i, score in fused[:k]]
        servers = interleave([[s for s, _ in r.servers] for r in rankings])[:k]
        return Ranking(tools, servers)


H = TypeVar("H", bound=Hashable)  # what interleave ranks: tool ids, server ids


def _vectors(saved: SavedIndex | None, name: str) -> np.ndarray:
    """A saved index's vectors, where ``_saved_vectors()`` said they are there (an index saved with a model)."""
    vectors = getattr(saved, name, None)
    assert vectors is not None, "an index saved with a model has its vectors"
    return vectors


def interleave(rankings: Sequence[Sequence[H]]) -> list[tuple[H, float]]:
    """Round robin over the lists (first of each, then second of each...), each item once.

    Steps want coverage, not consensus: under RRF a tool ranked fifth by every step would beat
    each step's own best match; interleaving gives every step its best tools first."""
    out: dict[H, float] = {}
    for rank in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking) and ranking[rank] not in out:
                out[ranking[rank]] = 1.0 / (rank + 1)
    return list(out.items())
