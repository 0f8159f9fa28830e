"""Calibrated evidence: how likely a tool is to be one a request needs, from what the retriever saw.

``auto`` puts the text ranking and the graph's evidence on one scale, the probability that a tool belongs
to the request's answer, so that graph evidence displaces a text hit exactly when it is the stronger bet:

- ``fusion``: the weights of the first-stage text ranking itself (``toolkg.retrieval.fusion``: dense and
  BM25 evidence scored together).
- ``text_probability``: from a tool's place in one part's text ranking (its rank and how well the part's
  best tool matched, so a part nothing answers well weighs less), and what the part is: the whole request,
  a step the caller gave, a clause split from the request, or a need the request implies but never says.
- ``edge_probability``: that a tool's producer is needed too, given the tool is. A declared edge is the
  manifest's own statement that the tool cannot run without its producer: probability 1, not a learned
  figure (only one catalog of the suite declares edges, so no weight for them could be checked on a
  catalog left out); what keeps a weak seed's declared chain from taking the top k is ``chain_share``. An
  inferred edge's probability is learned from its calibrated confidence and depth.
- ``evidence``: how the first stage weighs the fused, dense and BM25 rankings on a catalog, from what the
  catalog's own probe queries show of each (``toolkg.retrieval.choice``; a catalog of short texts with
  little shared vocabulary leans on dense, one of long generated texts on BM25), with a floor: never below
  the better single signal on those probes.
- ``chain_share``: how many of the top k places the dependencies of one seed may take, as a share of k per
  unit of the seed's probability (a seed needed with probability 0.1 and a share of 3: 30% of k). A weak
  text hit's chain cannot crowd out the rest of the text ranking however many prerequisites it declares.
  Chosen on the same tuning halves (``benchmarks/suite/train.py``); a set of catalogs none of which declares
  edges teaches nothing about long chains, and leaves it unset (no limit but the probabilities).

The first three are logistic models whose weights are learned from labelled queries (``benchmarks/suite/train.py``,
the tuning halves of the retrieval suite: no catalog's names, only these features) and shipped in
``calibration.json``. The suite checks them leave-one-catalog-out: weights learned without a catalog,
scored on it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from toolkg.retrieval.choice import EvidenceMap
from toolkg.retrieval.fusion import FUSION_FEATURES

DEFAULT_PATH = Path(__file__).with_name("calibration.json")
# Feature names, in the order of the weights (the bias is the last weight).
TEXT_FEATURES = (
    "log_rank",
    "top_cosine",
    "top_cosine_x_log_rank",
    "step",
    "clause",
    "implied",
    "log_parts",
    "top_margin",
    "top_margin_x_log_rank",
)
MAX_MARGIN = 10.0  # fused-score units; a wider lead says nothing more
PART_KINDS = ("whole", "step", "clause", "implied")
EDGE_FEATURES = ("confidence", "depth")


def text_features(rank: int, top_cosine: float, kind: str, parts: int, margin: float = 0.0) -> tuple[float, ...]:
    """``rank`` from 1 in the part's ranking; ``top_cosine``: the part's best dense cosine; ``kind``: one of
    ``PART_KINDS``; ``parts``: how many parts the request said (the whole and its steps or clauses);
    ``margin``: how far the part's best tool leads its second in fused score (an ambiguous best is a weaker
    bet than one that stands out)."""
    if kind not in PART_KINDS:
        raise ValueError(f"part kind is one of {', '.join(PART_KINDS)}, not {kind!r}")
    log_rank = math.log(rank)
    flags = (float(kind == "step"), float(kind == "clause"), float(kind == "implied"))
    lead = min(max(margin, 0.0), MAX_MARGIN)
    return (log_rank, top_cosine, top_cosine * log_rank, *flags, math.log(parts), lead, lead * log_rank)


def edge_features(confidence: float, depth: int) -> tuple[float, ...]:
    """An inferred edge's; ``depth``: 1 for a direct producer, 2 for a producer's producer..."""
    return (confidence, float(depth))


def _logistic(weights: tuple[float, ...], features: tuple[float, ...]) -> float:
    z = weights[-1] + sum(w * x for w, x in zip(weights, features, strict=False))
    return 1.0 / (1.0 + math.exp(-max(min(z, 40.0), -40.0)))


@dataclass(frozen=True)
class Calibration:
    text: tuple[float, ...]
    edge: tuple[float, ...]
    fusion: tuple[float, ...]  # toolkg.retrieval.fusion's weights, the bias last
    chain_share: float | None = None  # places of one seed's dependencies: share x p(seed) x k; None: no limit
    source: str = ""  # what the weights were learned on
    evidence: EvidenceMap | None = None  # probe figures -> the first stage's blend (None: the fused ranking)

    def text_probability(
        self, rank: int, top_cosine: float, kind: str = "whole", parts: int = 1, margin: float = 0.0
    ) -> float:
        return _logistic(self.text, text_features(rank, top_cosine, kind, parts, margin))

    def text_probabilities(
        self, count: int, top_cosine: float, kind: str = "whole", parts: int = 1, margin: float = 0.0
    ) -> np.ndarray:
        """``text_probability`` of ranks 1..``count`` at once, never rising with the rank (a worse rank is
        never likelier)."""
        if count <= 0:
            return np.zeros(0)
        rows = np.array([text_features(rank, top_cosine, kind, parts, margin) for rank in (1, 2)])
        # every feature is affine in log(rank): two ranks give each feature's intercept and slope
        slope = rows[1] - rows[0]
        log_ranks = np.log(np.arange(1, count + 1, dtype=np.float64))
        features = rows[0][None, :] + (log_ranks / math.log(2))[:, None] * slope[None, :]
        z = features @ np.asarray(self.text[:-1]) + self.text[-1]
        return np.minimum.accumulate(1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0))))

    def edge_probability(self, confidence: float, declared: bool, depth: int = 1) -> float:
        if declared:
            return 1.0
        return _logistic(self.edge, edge_features(confidence, depth))

    def as_json(self) -> dict:
        return {
            "text": dict(zip((*TEXT_FEATURES, "bias"), self.text, strict=True)),
            "edge": dict(zip((*EDGE_FEATURES, "bias"), self.edge, strict=True)),
            "fusion": dict(zip((*FUSION_FEATURES, "bias"), self.fusion, strict=True)),
            "chain_share": self.chain_share,
            "evidence": self.evidence.as_json() if self.evidence else None,
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: dict) -> Calibration:
        try:
            text = tuple(float(data["text"][name]) for name in (*TEXT_FEATURES, "bias"))
            edge = tuple(float(data["edge"][name]) for name in (*EDGE_FEATURES, "bias"))
            chain_share = None if data.get("chain_share") is None else float(data["chain_share"])
            if chain_share is not None and not chain_share >= 0.0:
                raise ValueError(f"chain_share {chain_share} is not 0 or more")
            # without fusion weights the first stage is hybrid's RRF ranking
            fusion_weights = data.get("fusion") or {"rrf": 1.0}
            fusion = tuple(float(fusion_weights.get(name, 0.0)) for name in (*FUSION_FEATURES, "bias"))
            evidence = EvidenceMap.from_json(data["evidence"]) if data.get("evidence") else None
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"calibration weights: missing or malformed {exc}") from None
        return cls(text, edge, fusion, chain_share, str(data.get("source", "")), evidence)


@cache
def _read(path: str) -> Calibration:
    return Calibration.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def load_calibration(source: str | Path | dict | Calibration | None = None) -> Calibration:
    """The shipped weights, or weights from a file, a dict (``as_json``'s shape) or a ``Calibration``."""
    if isinstance(source, Calibration):
        return source
    if isinstance(source, dict):
        return Calibration.from_json(source)
    return _read(str(source or DEFAULT_PATH))
