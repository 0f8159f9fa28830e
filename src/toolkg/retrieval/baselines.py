"""Baselines: BM25, dense (all-MiniLM-L6-v2 or an embeddings endpoint), and their hybrid by RRF."""

from __future__ import annotations

import numpy as np

from toolkg.retrieval.base import Hit, Ranking, Retriever, rrf, servers_of, top


class BM25Retriever(Retriever):
    name = "bm25"
    embeds = False

    def scores(self, text: str) -> np.ndarray:
        return self.index.tool_bm25.scores(text)

    def search(self, text: str, k: int) -> Ranking:
        scores = self.scores(text)
        hits = [Hit(self.catalog.tools[i], float(scores[i]), "bm25") for i in top(scores, k) if scores[i] > 0]
        return Ranking(hits, servers_of(self.catalog, hits, k))


class DenseRetriever(Retriever):
    name = "dense"

    def scores(self, text: str) -> np.ndarray:
        return self.index.tool_vectors @ self.index.embed(text)

    def search(self, text: str, k: int) -> Ranking:
        scores = self.scores(text)
        hits = [Hit(self.catalog.tools[i], float(scores[i]), "dense") for i in top(scores, k)]
        return Ranking(hits, servers_of(self.catalog, hits, k))


def fuse(lexical: np.ndarray, dense: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """RRF of the ``depth`` best by BM25 (those matching at all) and by dense, best first (ties by index)."""
    fused = rrf([[i for i in top(lexical, depth) if lexical[i] > 0], top(dense, depth)])
    return sorted(fused.items(), key=lambda x: (-x[1], x[0]))


class HybridRetriever(Retriever):
    """RRF of the BM25 and dense rankings (each ``depth`` deep)."""

    name = "hybrid"
    depth = 100

    def ranked(self, text: str, depth: int | None = None) -> list[tuple[int, float]]:
        return self.ranked_with_cosine(text, depth)[0]

    def ranked_with_cosine(self, text: str, depth: int | None = None) -> tuple[list[tuple[int, float]], float]:
        """(tool position, fused score), best first, and the best dense cosine (how well anything matched)."""
        dense = self.index.tool_vectors @ self.index.embed(text)
        fused = fuse(self.index.tool_bm25.scores(text), dense, depth or self.depth)
        return fused, float(dense.max()) if len(dense) else 0.0

    def search(self, text: str, k: int) -> Ranking:
        hits = [Hit(self.catalog.tools[i], score, "hybrid") for i, score in self.ranked(text, max(k, self.depth))[:k]]
        return Ranking(hits, servers_of(self.catalog, hits, k))


BASELINES: dict[str, type[Retriever]] = {"bm25": BM25Retriever, "dense": DenseRetriever, "hybrid": HybridRetriever}


def first_stage(index, name: str) -> Retriever:
    """The baseline a graph method starts from."""
    if name not in BASELINES:
        raise ValueError(f"first_stage is one of {', '.join(BASELINES)}, not {name!r}")
    return BASELINES[name](index)
