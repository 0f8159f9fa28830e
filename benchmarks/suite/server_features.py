"""A screen of server ownership as fusion evidence (Agent-as-a-Graph's lift), leave-one-catalog-out.

Each variant adds columns to ``fusion.FUSION_FEATURES``, computed per request over its candidates: ``best``, the
best RRF value among the candidates of the candidate's own server (its server's vote, as ``agent`` takes it);
``mass``, its server's share of the candidates' RRF mass; ``cosine``, the best cosine among its server's
candidates. A catalog with one server gets a constant column (no change to its ranking). For each catalog,
the fusion is fitted on the other catalogs' tuning halves (the signs of ``train.FUSION_SIGNS``, the new
columns never negative) and scored on its own tuning half: Recall@10 of the whole request's fused ranking
against the gold tools among the candidates. Kept only if it helps every catalog; measured 2026-11-27: none
does (benchmarks/README.md).

    python -m benchmarks.suite.run --samples rows.pkl --sets azure-mcp --methods dense   # collects the rows
    python -m benchmarks.suite.server_features rows.pkl                                  # table + JSON
"""

from __future__ import annotations

import argparse
import json
import pickle
from pathlib import Path

import numpy as np

from benchmarks.suite.train import FUSION_SIGNS, Samples, balanced, monotone_fit
from toolkg.retrieval import Index

VARIANTS = ("none", "best", "mass", "best+mass", "cosine")
RESULTS = Path(__file__).resolve().parents[1] / "results"


def server_columns(features: np.ndarray, servers: np.ndarray, variant: str) -> np.ndarray:
    """The fusion features of one request's candidates with the variant's server columns appended."""
    rrf, cosine = features[:, -1], features[:, 0]
    names, owner = np.unique(servers, return_inverse=True)
    columns = []
    if "best" in variant:
        best = np.zeros(len(names))
        np.maximum.at(best, owner, rrf)
        columns.append(best[owner])
    if "mass" in variant:
        mass = np.zeros(len(names))
        np.add.at(mass, owner, rrf)
        columns.append(mass[owner] / max(float(rrf.sum()), 1e-9))
    if variant == "cosine":
        best_cosine = np.full(len(names), -1.0)
        np.maximum.at(best_cosine, owner, cosine)
        columns.append(best_cosine[owner])
    return np.hstack([features, *[c[:, None] for c in columns]])


def recall_at_10(weights: np.ndarray, parts: list) -> float:
    scores = []
    for x, _, gold, positions in parts:
        if gold.sum():
            order = np.lexsort((positions, -(x @ weights[:-1] + weights[-1])))[:10]
            scores.append(gold[order].sum() / gold.sum())
    return float(np.mean(scores))


def screen(samples: dict[str, Samples], variant: str) -> dict[str, float]:
    """Per catalog: R@10 of the whole-request ranking under a fusion fitted without it."""
    rows = {}
    for name, s in samples.items():
        index = Index(s.store)
        servers = np.array([tool.server for tool in index.catalog.tools])
        index.close()
        rows[name] = [
            (server_columns(p.found.features, servers[p.found.positions], variant), p.target, p.gold, p.found.positions)
            for p in s.parts
            if p.target is not None
        ]
    added = next(iter(rows.values()))[0][0].shape[1] - len(FUSION_SIGNS)
    signs = np.r_[FUSION_SIGNS, np.ones(added)]
    out = {}
    for left in rows:
        kept = [rows[n] for n in rows if n != left]
        blocks = [(np.vstack([r[0] for r in parts]), np.concatenate([r[1] for r in parts])) for parts in kept]
        out[left] = round(recall_at_10(monotone_fit(*balanced(blocks), signs), rows[left]), 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "samples", type=Path, help="the rows run.py --samples wrote (a pickle: it runs code when read; your own only)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "server_features.json")
    args = parser.parse_args()
    samples = pickle.loads(args.samples.read_bytes())
    table = {variant: screen(samples, variant) for variant in VARIANTS}
    names = list(samples)
    print("| variant | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    for variant, row in table.items():
        print(f"| {variant} | " + " | ".join(f"{row[n]:.3f}" for n in names) + " |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(table, indent=1), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
