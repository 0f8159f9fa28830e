"""Learn ``auto``'s calibration (toolkg/retrieval/calibration.py) from the suite's labelled tuning halves.

Two logistic regressions, fitted by Newton's method in NumPy (a few thousand rows, seven weights: no
library needed):
- text: one row per (part of a query, tool in that part's hybrid top ``TEXT_DEPTH``), label = the tool is
  one of the query's gold tools;
- edge: one row per inferred dependency hop walked from a gold tool (as ``auto`` walks them from its seeds),
  label = the producer is gold too.
Every catalog weighs the same in the fit, however many queries it has, so no one catalog sets the
weights. ``fit_calibration(samples, exclude=...)`` leaves a catalog out (the suite's leave-one-out rows).

    python benchmarks/suite/train.py     # fits on every catalog's tuning half, writes calibration.json
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from toolkg.retrieval import Index, as_query
from toolkg.retrieval.auto import TEXT_DEPTH, AutoRetriever
from toolkg.retrieval.calibration import (
    DEFAULT_PATH,
    EDGE_FEATURES,
    TEXT_FEATURES,
    Calibration,
    edge_features,
    text_features,
)
from toolkg.retrieval.metrics import gold_tools, matches

NEUTRAL = Calibration(tuple([0.0] * (len(TEXT_FEATURES) + 1)), tuple([0.0] * (len(EDGE_FEATURES) + 1)))
L2 = 1.0  # ridge on the standardised weights: keeps a catalog-poor feature from taking extreme values


@dataclass
class Samples:
    """Feature rows and labels of one catalog."""

    text_x: list[tuple[float, ...]] = field(default_factory=list)
    text_y: list[float] = field(default_factory=list)
    edge_x: list[tuple[float, ...]] = field(default_factory=list)
    edge_y: list[float] = field(default_factory=list)


def collect(index: Index, rows: list[dict], steps: bool = True) -> Samples:
    """The rows ``auto`` would score for each query, labelled by the query's gold tools."""
    # rows do not depend on the weights (parts, rankings and seeds come from the text alone)
    retriever = AutoRetriever(index, calibration=NEUTRAL, clauses=True)  # every kind of part has rows
    catalog = index.catalog
    out = Samples()
    for row in rows:
        query = as_query(row)
        if not steps:
            query = type(query)(query.id, query.text)
        gold = gold_tools(row)

        def is_gold(position: int, gold=gold) -> bool:
            return any(matches(catalog.tools[position].id, g.accepted) for g in gold)

        parts = retriever.parts(query)
        index.begin_query([text for text, _ in parts])
        said = sum(kind != "implied" for _, kind in parts)
        seeds: set[int] = set()
        for text, kind in parts:
            ranked, top_cosine = retriever.hybrid.ranked_with_cosine(text, TEXT_DEPTH)
            for rank, (position, _) in enumerate(ranked, start=1):
                out.text_x.append(text_features(rank, top_cosine, kind, said))
                out.text_y.append(float(is_gold(position)))
            seeds.update(p for p, _ in ranked[: retriever.seeds])
        for seed in (s for s in seeds if is_gold(s)):
            _walk(retriever, catalog.tools[seed].iri, 0, {seed}, is_gold, out)
    return out


def _walk(retriever: AutoRetriever, node: str, level: int, seen: set[int], is_gold, out: Samples) -> None:
    """Hops from a gold tool: each producer labelled; the walk goes on through gold producers only."""
    if level >= retriever.depth:
        return
    for producer, _, confidence, declared in retriever._edges(node):
        position = retriever.catalog.tool_at.get(producer)
        if position is None or position in seen:
            continue
        seen.add(position)
        label = is_gold(position)
        if not declared:  # a declared edge's probability is 1 by definition (calibration.py): nothing to learn
            out.edge_x.append(edge_features(confidence, level + 1))
            out.edge_y.append(float(label))
        if label:
            _walk(retriever, producer, level + 1, seen, is_gold, out)


def logistic_fit(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted, L2-regularised logistic regression; returns raw-scale weights with the bias last."""
    mean, scale = x.mean(0), x.std(0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    penalty = np.r_[np.full(z.shape[1] - 1, L2), 0.0]
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -40, 40)))
        gradient = z.T @ (weights * (p - y)) + penalty * w
        hessian = (z * (weights * p * (1 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    raw = w[:-1] / scale
    return np.r_[raw, w[-1] - float((raw * mean).sum())]


def _stack(samples: dict[str, Samples], which: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xs, ys, ws = [], [], []
    for s in samples.values():
        x, y = getattr(s, f"{which}_x"), getattr(s, f"{which}_y")
        if not x:
            continue
        xs.append(np.asarray(x, dtype=np.float64))
        ys.append(np.asarray(y, dtype=np.float64))
        ws.append(np.full(len(x), 1.0 / len(x)))  # each catalog weighs the same
    if not xs:
        raise ValueError(f"no {which} samples to learn from")
    weights = np.concatenate(ws)
    return np.vstack(xs), np.concatenate(ys), weights * len(weights) / weights.sum()


def fit_calibration(samples: dict[str, Samples], exclude: str | None = None) -> Calibration:
    """Weights learned on every catalog but ``exclude``."""
    kept = {name: s for name, s in samples.items() if name != exclude}
    text = logistic_fit(*_stack(kept, "text"))
    edge = logistic_fit(*_stack(kept, "edge"))
    source = "tuning halves of " + ", ".join(sorted(kept))
    return Calibration(tuple(round(float(v), 5) for v in text), tuple(round(float(v), 5) for v in edge), source)


def reliability(calibration: Calibration, samples: dict[str, Samples], bins: int = 5) -> list[dict]:
    """Predicted against observed rates per probability bin (text rows), over the given catalogs."""
    predicted, observed = [], []
    for s in samples.values():
        for features, label in zip(s.text_x, s.text_y, strict=True):
            z = calibration.text[-1] + sum(w * x for w, x in zip(calibration.text, features, strict=False))
            predicted.append(1 / (1 + math.exp(-max(min(z, 40), -40))))
            observed.append(label)
    p, o = np.asarray(predicted), np.asarray(observed)
    edges = np.linspace(0, 1, bins + 1)
    out = []
    for low, high in zip(edges[:-1], edges[1:], strict=True):
        mask = (p >= low) & ((p < high) | (high == 1.0))
        if mask.any():
            out.append(
                {
                    "bin": f"{low:.1f}-{high:.1f}",
                    "rows": int(mask.sum()),
                    "predicted": round(float(p[mask].mean()), 3),
                    "observed": round(float(o[mask].mean()), 3),
                }
            )
    return out


def write_default(calibration: Calibration) -> None:
    DEFAULT_PATH.write_text(json.dumps(calibration.as_json(), indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    from run import SETTINGS, build_all, tuning_samples  # noqa: E402 (the suite's stores and query halves)

    stores = build_all()
    samples = tuning_samples(stores, SETTINGS)
    calibration = fit_calibration(samples)
    write_default(calibration)
    print(json.dumps(calibration.as_json(), indent=1))
