"""Which text evidence a catalog's first stage trusts, chosen per catalog from its own probe queries.

Three rankings of a part's candidates (``fusion.Candidates``): the learned fusion's, dense's and BM25's. The
first stage orders candidates by a weighted reciprocal-rank blend of the three (``blend``). The weights come
from the catalog's probe queries (``toolkg.retrieval.probes``): each signal's MRR@10 on them goes through a
small learned map (``EvidenceMap``: a softmax of the MRRs plus a learned offset per signal, at a learned
temperature; fitted on labelled catalogs by ``benchmarks/suite/train.py``, leave-one-catalog-out in the
suite), rounded to tenths.

The floor (``choose``): the blend's top ``FLOOR_K`` on the catalog's probes is never below dense's or BM25's
own, whatever the map learned elsewhere; when the map's blend is, the nearest blend that is not is taken (the
single signal at worst). The probes' figures are compared as the map corrects them (``EvidenceMap.offsets``):
a probe shares words with its tool, so raw probe figures rate BM25 above what it does on real requests (on
every catalog of the suite BM25 leads dense and the fused ranking on the probes, and trails the fused ranking
on the labelled requests of five of seven); the offsets, learned on labelled catalogs, are that exchange rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from toolkg.retrieval.base import RRF_K
from toolkg.retrieval.fusion import Candidates

SIGNALS = ("fused", "dense", "bm25")
FLOOR_K = 10  # the floor's cut: the suite's R@10
STEP = 10  # weights are tenths: a grid of 66 blends (training scores each once per catalog)


@cache
def grid() -> np.ndarray:
    """Every weight vector of three tenths summing to one, (66, 3)."""
    return np.array([(a, b, STEP - a - b) for a in range(STEP + 1) for b in range(STEP + 1 - a)], float) / STEP


def snap(weights: np.ndarray) -> np.ndarray:
    """The grid's point nearest ``weights`` (first of equals)."""
    return grid()[int(np.argmin(np.abs(grid() - np.asarray(weights)[None, :]).sum(1)))]


def signal_ranks(found: Candidates, fusion: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(3, n) ranks of the candidates by each of ``SIGNALS`` (from 1), and their fused scores."""
    fused = found.features @ np.asarray(fusion[:-1]) + fusion[-1]
    order = np.lexsort((found.positions, -fused))
    fused_rank = np.empty(len(fused))
    fused_rank[order] = np.arange(1, len(fused) + 1)
    return np.vstack([fused_rank, found.dense_rank, found.bm25_rank]), fused


def blend(ranks: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted reciprocal-rank scores: ``weights`` (3,) or (m, 3) against ranks (3, n)."""
    return np.asarray(weights) @ (1.0 / (RRF_K + ranks))


def blended_ranking(found: Candidates, fusion: tuple[float, ...], weights: np.ndarray) -> list[tuple[int, float]]:
    """(tool position, fused score) in the blend's order, best first; ties by fused score, then position.
    The fused score stays the score (the text calibration's margin is in its units)."""
    if not len(found.positions):
        return []
    ranks, fused = signal_ranks(found, fusion)
    order = np.lexsort((found.positions, -fused, -blend(ranks, weights)))
    return [(int(found.positions[i]), float(fused[i])) for i in order]


def target_ranks(ranks: np.ndarray, fused: np.ndarray, target: int | None, weights: np.ndarray) -> np.ndarray:
    """The target candidate's rank in the blend of each row of ``weights`` (m, 3) (inf when it is not a
    candidate), ties broken as ``blended_ranking`` breaks them but for the last key, the position (a tie on
    the blend and the fused score both, to the last bit, is counted in the target's favour)."""
    weights = np.atleast_2d(weights)
    if target is None:
        return np.full(len(weights), np.inf)
    scores = blend(ranks, weights)  # (m, n)
    own = scores[:, target][:, None]
    ahead = (scores > own) | ((scores == own) & (fused[None, :] > fused[target]))
    return ahead.sum(1) + 1.0


@dataclass(frozen=True)
class ProbeFigures:
    """What the probes say of each signal and of each blend on the grid."""

    mrr: np.ndarray  # (3,) MRR@10 of each of SIGNALS
    hits: np.ndarray  # (3,) share of probes whose tool is in each signal's top FLOOR_K
    grid_hits: np.ndarray  # (66,) the same share for each blend of ``grid()``
    probes: int


def probe_figures(made: list[tuple[Candidates, int]], fusion: tuple[float, ...]) -> ProbeFigures:
    """The figures of a catalog's probes (``probes.catalog_probes``) under the fusion weights."""
    singles = np.eye(3)
    rr, hit, grid_hit = np.zeros(3), np.zeros(3), np.zeros(len(grid()))
    for found, tool in made:
        ranks, fused = signal_ranks(found, fusion)
        at = np.flatnonzero(found.positions == tool)
        target = int(at[0]) if len(at) else None
        own = target_ranks(ranks, fused, target, singles)
        rr += np.where(own <= FLOOR_K, 1.0 / own, 0.0)
        hit += own <= FLOOR_K
        grid_hit += target_ranks(ranks, fused, target, grid()) <= FLOOR_K
    n = max(len(made), 1)
    return ProbeFigures(rr / n, hit / n, grid_hit / n, len(made))


@dataclass(frozen=True)
class EvidenceMap:
    """Probe MRRs -> blend weights: softmax(``temperature`` x (MRR + ``offsets``)), rounded to tenths. The
    offsets correct what the probes get wrong about real requests (they share words with their tool, which
    favours BM25); learned, like the temperature, on labelled catalogs."""

    temperature: float
    offsets: tuple[float, float, float]  # per SIGNALS; the fused one is 0

    def weights(self, mrr: np.ndarray) -> np.ndarray:
        z = self.temperature * (np.asarray(mrr) + np.asarray(self.offsets))
        e = np.exp(z - z.max())
        return snap(e / e.sum())

    def as_json(self) -> dict:
        return {"temperature": self.temperature, "offsets": dict(zip(SIGNALS, self.offsets, strict=True))}

    @classmethod
    def from_json(cls, data: dict) -> EvidenceMap:
        offsets = tuple(float(data["offsets"].get(name, 0.0)) for name in SIGNALS)
        return cls(float(data["temperature"]), (offsets[0], offsets[1], offsets[2]))


FUSED_ONLY = np.array([1.0, 0.0, 0.0])


@dataclass(frozen=True)
class Choice:
    weights: np.ndarray  # (3,) over SIGNALS
    figures: ProbeFigures | None
    floor: str | None = None  # when the floor moved the map's blend: "dense" or "bm25" alone, or "nearest"

    def describe(self) -> str:
        shares = ", ".join(f"{name} {w:.1f}" for name, w in zip(SIGNALS, self.weights, strict=True) if w)
        if self.floor in SIGNALS:
            return f"{shares} (floor: {self.floor} alone)"
        return shares + (" (floor: the nearest blend that holds it)" if self.floor else "")


def choose(figures: ProbeFigures | None, mapping: EvidenceMap | None) -> Choice:
    """The catalog's blend: the map's weights, held to the floor. A blend's floor figure is its share of
    probe tools in the top ``FLOOR_K``, corrected by the map's offsets (what a signal's probe figure is
    worth on real requests: ``w . offsets``); when the map's blend is below dense's or BM25's own, the blend
    of the grid nearest the map's weights that is not is taken, the single signal itself at worst. No map
    or no probes: the fused ranking alone."""
    if mapping is None or figures is None or not figures.probes:
        return Choice(FUSED_ONLY, figures)
    offsets = np.asarray(mapping.offsets)
    worth = figures.grid_hits + grid() @ offsets  # every blend's floor figure
    floor = max(figures.hits[s] + offsets[s] for s in (1, 2))
    weights = mapping.weights(figures.mrr)
    distance = np.abs(grid() - weights[None, :]).sum(1)
    at = int(np.argmin(distance))
    if worth[at] >= floor - 1e-12:
        return Choice(weights, figures)
    held = np.flatnonzero(worth >= floor - 1e-12)  # never empty: the better single signal is on the grid
    near = int(held[np.argmin(distance[held])])
    single = [s for s in (1, 2) if np.array_equal(grid()[near], np.eye(3)[s])]
    return Choice(grid()[near], figures, SIGNALS[single[0]] if single else "nearest")
