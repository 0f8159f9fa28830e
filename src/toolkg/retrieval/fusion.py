"""Learned fusion of the dense and BM25 evidence: ``auto``'s first-stage text ranking.

Reciprocal rank fusion (``hybrid``) gives BM25's list the same say as dense's whatever BM25 found: a
request that shares one common word with a hundred tools gets a BM25 list as loud as one that names a
tool outright. Here each candidate (the ``depth`` best by dense, and the ``depth`` best that BM25 matches
at all) is scored by a logistic model over what both retrievers saw: its cosine and how far it is below
the best one, its ranks, its BM25 score against the part's best BM25 score and how strong that best was,
the request's length, and the RRF value itself (so the model starts from hybrid's ranking and learns
where to trust either side more). The weights are learned from labelled queries of the retrieval suite
(``benchmarks/suite/train.py``) and shipped in ``calibration.json``; leave-one-catalog-out rows check they
carry over to a catalog they never saw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toolkg.retrieval.base import RRF_K, Index, top

DEPTH = 100  # how deep each retriever's list is read
FUSION_FEATURES = (
    "cosine",
    "cosine_below_best",
    "log_dense_rank",
    "bm25_share_of_best",
    "log_bm25_rank",
    "log_best_bm25",
    "bm25_share_x_log_best",
    "bm25_matched",
    "best_cosine",
    "log_words",
    "rrf",
)


@dataclass(frozen=True)
class Candidates:
    """One text's candidates and what dense and BM25 saw of each (arrays aligned with ``positions``)."""

    positions: np.ndarray  # tool positions in the catalog
    cosine: np.ndarray
    dense_rank: np.ndarray  # from 1; DEPTH + 1 when not in dense's top DEPTH
    bm25: np.ndarray
    bm25_rank: np.ndarray  # from 1; DEPTH + 1 when BM25 did not rank it
    best_cosine: float
    best_bm25: float
    words: int

    @property
    def features(self) -> np.ndarray:
        """One row of ``FUSION_FEATURES`` per candidate."""
        share = self.bm25 / self.best_bm25 if self.best_bm25 > 0 else np.zeros_like(self.bm25)
        matched = self.bm25_rank <= DEPTH
        log_best = math.log1p(self.best_bm25)
        rrf = np.where(self.dense_rank <= DEPTH, 1.0 / (RRF_K + self.dense_rank), 0.0) + np.where(
            matched, 1.0 / (RRF_K + self.bm25_rank), 0.0
        )
        ones = np.ones(len(self.positions))
        return np.stack(
            [
                self.cosine,
                self.cosine - self.best_cosine,
                np.log(self.dense_rank),
                share,
                np.log(self.bm25_rank),
                ones * log_best,
                share * log_best,
                matched.astype(np.float64),
                ones * self.best_cosine,
                ones * math.log(self.words + 1),
                rrf,
            ],
            axis=1,
        )


def candidates(index: Index, text: str, depth: int = DEPTH) -> Candidates:
    """The candidates of one text (the index has embedded it: ``begin_query``)."""
    return candidates_of(index, text, index.embed(text), depth)


def candidates_of(index: Index, text: str, vector: np.ndarray, depth: int = DEPTH) -> Candidates:
    """The candidates of one text whose query vector is ``vector``."""
    dense = index.tool_vectors @ vector
    lexical = index.tool_bm25.scores(text)
    dense_top = top(dense, depth)
    lexical_top = [i for i in top(lexical, depth) if lexical[i] > 0]
    order = list(dict.fromkeys(dense_top + lexical_top))
    positions = np.array(order, dtype=np.int64)
    # ranks of the candidates only (a catalog-sized array per part would cost more than the ranking)
    dense_rank = {tool: rank for rank, tool in enumerate(dense_top, start=1)}
    lexical_rank = {tool: rank for rank, tool in enumerate(lexical_top, start=1)}
    return Candidates(
        positions=positions,
        cosine=dense[positions].astype(np.float64),
        dense_rank=np.array([dense_rank.get(i, depth + 1) for i in order], dtype=np.float64),
        bm25=lexical[positions].astype(np.float64),
        bm25_rank=np.array([lexical_rank.get(i, depth + 1) for i in order], dtype=np.float64),
        best_cosine=float(dense.max()) if len(dense) else 0.0,
        best_bm25=float(lexical.max()) if len(lexical) else 0.0,
        words=len(text.split()),
    )


def ranking(found: Candidates, weights: tuple[float, ...]) -> list[tuple[int, float]]:
    """(tool position, fused score), best first (ties by position, so results are stable)."""
    if not len(found.positions):
        return []
    scores = found.features @ np.asarray(weights[:-1]) + weights[-1]
    order = np.lexsort((found.positions, -scores))
    return [(int(found.positions[i]), float(scores[i])) for i in order]
