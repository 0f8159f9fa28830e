"""Abstention: when should tool search answer nothing? Calibrated leave-one-catalog-out on the suite.

A request no tool serves still gets k tools from a ranker; an agent then reads five weak matches. toolkg's
search answers nothing when its best tool's score (the calibrated probability ``auto`` gives that the
request needs the tool; ``abstain.request_score``) is below a threshold. This script chooses that threshold
and measures it:

- **Relevant requests**: each suite catalog's labelled queries (data/<catalog>/queries.jsonl).
- **Irrelevant requests**: data/irrelevant/queries.jsonl, asked of every catalog. BFCL's irrelevance
  questions are irrelevant to the functions they came with, not to the pooled BFCL catalog (it holds the
  functions of other questions), so they are not counted on ``bfcl``; on the other catalogs some of them are
  answerable all the same (a calculator, a web search): they are counted, which only makes the target harder.
- **Choice, per left-out catalog**: the highest threshold whose R@10 loss (requests whose gold tools it
  hides) is at most ``--max-loss`` on the tuning half of *every other* catalog; then measured on the left-out
  catalog's reporting half (relevant) and its reporting half of the irrelevant requests. The shipped
  threshold is chosen the same way on every catalog's tuning half (``--write`` stores it in
  src/toolkg/retrieval/abstain.json).

    python -m benchmarks.abstention_bench                 # uses the suite's stores (make bench-suite builds them)
    python -m benchmarks.abstention_bench --write         # and ships the threshold chosen on all tuning halves

Prints a table and writes benchmarks/results/abstention.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.splits import half
from toolkg.retrieval import Index, as_query
from toolkg.retrieval.abstain import ABSTAIN_FILE, request_score
from toolkg.retrieval.auto import AutoRetriever
from toolkg.retrieval.metrics import gold_tools, recall_at

ROOT = Path(__file__).resolve().parents[1]
CATALOGS = ("livemcpbench", "toollinkos", "bfcl", "azure-mcp", "apibench")
STORES = ROOT / "benchmarks" / "results" / "stores"
DEPTH = 10


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


def irrelevant_here(row: dict, catalog: str) -> bool:
    """Whether an irrelevant request counts on ``catalog`` (see the module docstring)."""
    return not (catalog == "bfcl" and row["source"].startswith("bfcl-"))


def score_catalog(store: Path, catalog: str, irrelevant: list[dict]) -> dict:
    """Per request: its best score, and (relevant ones) its R@10; each with its half."""
    index = Index(store)
    try:
        retriever = AutoRetriever(index)
        relevant = read_rows(ROOT / "data" / catalog / "queries.jsonl")
        out: dict = {"relevant": [], "irrelevant": []}
        for row in relevant:
            ranking = retriever.retrieve(as_query(row), DEPTH)
            ranked = [h.tool.id for h in ranking.tools]
            best = request_score(ranking.tools)
            out["relevant"].append(
                {
                    "id": row["id"],
                    "half": half(str(row["id"])),
                    "best": best,
                    "recall": recall_at(ranked, gold_tools(row), DEPTH),
                }
            )
        for row in irrelevant:
            if not irrelevant_here(row, catalog):
                continue
            ranking = retriever.retrieve(as_query(row), DEPTH)
            best = request_score(ranking.tools)
            out["irrelevant"].append(
                {"id": row["id"], "half": half(str(row["id"])), "source": row["source"], "best": best}
            )
        return out
    finally:
        index.close()


def loss(rows: list[dict], threshold: float) -> float:
    """R@10 lost when requests whose best score is below ``threshold`` get no answer."""
    return sum(r["recall"] for r in rows if r["best"] < threshold) / max(len(rows), 1)


def abstained(rows: list[dict], threshold: float) -> float:
    return sum(r["best"] < threshold for r in rows) / max(len(rows), 1)


def choose(scored: dict, catalogs: list[str], max_loss: float) -> float:
    """The highest threshold that loses at most ``max_loss`` R@10 on the tuning half of each catalog."""
    candidates = sorted({r["best"] for c in catalogs for r in scored[c]["relevant"]} | {0.0})
    tuning = {c: [r for r in scored[c]["relevant"] if r["half"] == "tune"] for c in catalogs}
    best = 0.0
    for threshold in candidates:  # loss only grows with the threshold
        if all(loss(tuning[c], threshold) <= max_loss for c in catalogs):
            best = threshold
        else:
            break
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", type=Path, default=STORES, help="where suite-<catalog> stores are")
    parser.add_argument("--max-loss", type=float, default=0.005, help="R@10 a threshold may lose per catalog")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "abstention.json")
    parser.add_argument("--write", action="store_true", help="ship the threshold chosen on all tuning halves")
    args = parser.parse_args()
    irrelevant = read_rows(ROOT / "data" / "irrelevant" / "queries.jsonl")
    scored = {}
    for catalog in CATALOGS:
        started = time.perf_counter()
        scored[catalog] = score_catalog(args.stores / f"suite-{catalog}", catalog, irrelevant)
        print(f"  scored {catalog} in {time.perf_counter() - started:.0f}s", file=sys.stderr, flush=True)
    rows, header = (
        [],
        f"{'left out':14} {'threshold':>9} {'R@10':>6} {'loss':>7} {'abstain(irr)':>12} {'own':>5} {'bfcl-irr':>8}",
    )
    print("\nleave-one-catalog-out: threshold chosen on the others' tuning halves, measured on the reporting halves")
    print(header)
    for catalog in CATALOGS:
        others = [c for c in CATALOGS if c != catalog]
        threshold = choose(scored, others, args.max_loss)
        relevant = [r for r in scored[catalog]["relevant"] if r["half"] == "report"]
        irr = [r for r in scored[catalog]["irrelevant"] if r["half"] == "report"]
        own = [r for r in irr if r["source"] == "own"]
        bfcl = [r for r in irr if r["source"] != "own"]
        recall = sum(r["recall"] for r in relevant) / max(len(relevant), 1)
        row = {
            "left_out": catalog,
            "threshold": round(threshold, 6),
            "recall_at_10": round(recall, 4),
            "recall_lost": round(loss(relevant, threshold), 4),
            "irrelevant_abstained": round(abstained(irr, threshold), 4),
            "own_abstained": round(abstained(own, threshold), 4),
            "bfcl_abstained": round(abstained(bfcl, threshold), 4) if bfcl else None,
            "irrelevant_requests": len(irr),
            "relevant_requests": len(relevant),
        }
        rows.append(row)
        bfcl_text = f"{row['bfcl_abstained']:.3f}" if bfcl else "  -  "
        print(
            f"{catalog:14} {threshold:9.4f} {recall:6.3f} {row['recall_lost']:7.4f} "
            f"{row['irrelevant_abstained']:12.3f} {row['own_abstained']:5.2f} {bfcl_text:>8}"
        )
    shipped = choose(scored, list(CATALOGS), args.max_loss)
    print(f"\nthreshold chosen on every catalog's tuning half: {shipped:.4f}")
    distributions = {
        c: {
            kind: [
                round(float(x), 4) for x in np.percentile([r["best"] for r in scored[c][kind]], [10, 25, 50, 75, 90])
            ]
            for kind in ("relevant", "irrelevant")
        }
        for c in CATALOGS
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    document = {"max_loss": args.max_loss, "loco": rows, "shipped": shipped, "best_score_percentiles": distributions}
    args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    if args.write:
        shipped_row = {
            "min_best_score": round(shipped, 6),
            "chosen_by": "benchmarks/abstention_bench.py --write",
            "max_recall_loss_per_catalog": args.max_loss,
            "loco": rows,
        }
        ABSTAIN_FILE.write_text(json.dumps(shipped_row, indent=1) + "\n", encoding="utf-8")
        print(f"wrote the threshold into {ABSTAIN_FILE}")


if __name__ == "__main__":
    main()
