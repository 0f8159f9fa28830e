"""The retrieval suite: every method and two plain references on seven public catalogs, one table.

    make bench-suite                                   # the whole suite (builds the stores once)
    python -m benchmarks.suite.run --sets bfcl,azure-mcp --methods auto,dense

Catalogs (data/<name>/SOURCE.md says where each comes from): LiveMCPBench (queries with their steps, and
their text alone), ToolLinkOS (the default build, and declared edges only for the graph target), BFCL,
Azure MCP's tool-selection prompts, Gorilla's APIBench, and two conversational sets (BFCL's multi-turn
user turns, tau2's airline/retail/telecom tasks). Each catalog is built once with the CLI into
benchmarks/results/stores/suite-<name> (a rebuild of an unchanged catalog is skipped by its hashes).

Rows are scored on the reporting half of each query set (data/SPLITS.md). ``auto (LOCO)`` is the default
with its calibration learned leave-one-catalog-out: on the other catalogs' tuning halves only, so its row
is what the default does on a catalog it has never seen. References: ``plain-dense`` (all-MiniLM-L6-v2,
256 tokens, over name + description + each parameter's name and description) and ``plain-bm25`` (a
standard Okapi BM25 over that text), both on the query text alone (benchmarks/references.py).

Writes benchmarks/results/suite.json and prints, per setting, R@10 / CR@10 / mAP@10 / server R@5 and p50/p95
latency for every method, then the targets: the default against the references on every setting.
"""

from __future__ import annotations

import argparse
import functools
import json
import pickle
from collections.abc import Callable
from pathlib import Path

from benchmarks.references import REFERENCES
from benchmarks.suite.catalogs import SETTINGS, STORES, TRAINING, Setting, build_all, rows_of, tuning_samples
from benchmarks.suite.train import collect, fit_calibration, reliability
from toolkg.retrieval import Index, as_query
from toolkg.retrieval.auto import AutoRetriever, merge
from toolkg.retrieval.evaluate import evaluate
from toolkg.retrieval.metrics import gold_tools, hit_ranks

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
METHODS = ["auto", "dense", "bm25", "hybrid", "grtf", "ego", "agent"]
KS = [1, 5, 10]  # 1: the first server (server R@1)
ADDITIONS_K = 10  # the cut the additions' hits are counted at
MARGIN = 0.05  # the default over the better of plain MiniLM and BM25, on R@10 and CR@10
TOLERANCE = 0.005  # never below plain MiniLM, plain BM25, toolkg's dense or toolkg's bm25 by more than this
FLOOR = ("plain-dense", "plain-bm25", "dense", "bm25")  # what the default is never below


def score(store: Path, setting: Setting, methods: list[str], half: str, extra: dict) -> dict:
    index = Index(store)
    try:
        return evaluate(index, rows_of(setting, half), methods, KS, extra=extra)
    finally:
        index.close()


def additions(store: Path, setting: Setting, half: str, calibration=None) -> dict:
    """What the default's additions (graph dependencies, implied needs) do to its top ``ADDITIONS_K``: gold
    tools they bring in that the first stage's top k lacked (gained), gold tools of the first stage's top k
    they push out (displaced); and the first stage's blend on this catalog (``choice``)."""
    index = Index(store)
    try:
        retriever = AutoRetriever(index, calibration=calibration)
        gained = displaced = 0
        for row in rows_of(setting, half):
            query, gold = as_query(row), gold_tools(row)
            first, added = retriever.evidence(query)
            merged = merge(first, added, ADDITIONS_K, retriever.places(query, first, added, ADDITIONS_K))
            before = {i for i in hit_ranks([index.catalog.tools[t].id for t, _ in first[:ADDITIONS_K]], gold)}
            after = {i for i in hit_ranks([index.catalog.tools[t].id for t, _ in merged], gold)}
            gained, displaced = gained + len(after - before), displaced + len(before - after)
        choice = retriever.choice
        figures = choice.figures
        return {
            "gained": gained,
            "displaced": displaced,
            "choice": choice.describe(),
            "probe_mrr": None if figures is None else [round(float(v), 3) for v in figures.mrr],
            "probe_hits": None if figures is None else [round(float(v), 3) for v in figures.hits],
        }
    finally:
        index.close()


def table(name: str, report: dict) -> str:
    lines = [
        f"\n{name} ({report['queries']} queries)",
        f"{'method':14} R@10   CR@10  mAP@10 S@1    S@5    p50ms  p95ms",
    ]
    for method, result in report["methods"].items():
        m = result["metrics"]
        servers = [m.get("server_recall", {}).get(k) for k in (1, 5)]
        lines.append(
            f"{method:14} {m['recall'][10]:.3f}  {m['complete_recall'][10]:.3f}  {m['map'][10]:.3f}  "
            + "  ".join(f"{v:.3f}" if v is not None else "  -  " for v in servers)
            + f"  {result['latency_ms']['p50']:6.1f} {result['latency_ms']['p95']:6.1f}"
        )
    for label, effect in report.get("additions", {}).items():
        lines.append(
            f"{label}: additions gained {effect['gained']} / displaced {effect['displaced']} gold hits in the top "
            f"{ADDITIONS_K}; first stage {effect['choice']} (probe MRR@10 fused/dense/bm25 {effect['probe_mrr']})"
        )
    return "\n".join(lines)


def targets(reports: dict) -> list[dict]:
    """The default (its leave-one-catalog-out row) on every setting: above the better of plain MiniLM and
    BM25 by ``MARGIN``, never below any of ``FLOOR`` (the references, toolkg's dense and bm25) by more than
    ``TOLERANCE``; and its first server right as often as plain MiniLM's (server R@1)."""
    out = []
    for name, report in reports.items():
        methods = report["methods"]
        default = methods.get("auto (LOCO)") or methods.get("auto")
        if default is None:  # --methods left the default out: nothing to hold to the targets
            continue
        for metric in ("recall", "complete_recall"):
            ours = default["metrics"][metric][10]
            dense = methods["plain-dense"]["metrics"][metric][10]
            bm25 = methods["plain-bm25"]["metrics"][metric][10]
            floor = {m: methods[m]["metrics"][metric][10] for m in FLOOR if m in methods}
            best = max(dense, bm25)
            out.append(
                {
                    "setting": name,
                    "metric": f"{metric}@10",
                    "default": ours,
                    "plain_dense": dense,
                    "plain_bm25": bm25,
                    "floor": floor,
                    "margin": round(ours - best, 4),
                    "meets_margin": ours - best >= MARGIN,
                    "never_below": ours >= max(floor.values()) - TOLERANCE,
                }
            )
        if "server_recall" in default["metrics"] and "server_recall" in methods["plain-dense"]["metrics"]:
            ours, plain = default["metrics"]["server_recall"][1], methods["plain-dense"]["metrics"]["server_recall"][1]
            out.append(
                {
                    "setting": name,
                    "metric": "server_recall@1",
                    "default": ours,
                    "plain_dense": plain,
                    "plain_bm25": methods["plain-bm25"]["metrics"]["server_recall"][1],
                    "floor": {"plain-dense": plain},
                    "margin": round(ours - plain, 4),
                    "meets_margin": ours >= plain,
                    "never_below": ours >= plain,
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETTINGS), help="comma-separated settings")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated toolkg methods")
    parser.add_argument("--half", default="report", choices=["report", "tune", "all"])
    parser.add_argument("--no-loco", action="store_true", help="skip the leave-one-catalog-out calibration rows")
    parser.add_argument("--out", type=Path, default=RESULTS / "suite.json")
    parser.add_argument("--stores", type=Path, help="where the catalogs' stores are built (benchmarks/results/stores)")
    parser.add_argument(
        "--samples", type=Path, help="a pickle of the calibration rows: read when it exists, else written (trials)"
    )
    args = parser.parse_args()
    names = [n.strip() for n in args.sets.split(",") if n.strip()]
    unknown = [n for n in names if n not in SETTINGS]
    if unknown:
        parser.error(f"unknown settings {unknown}; choose from {', '.join(SETTINGS)}")
    stores = build_all(dict.fromkeys([*names, *([] if args.no_loco else TRAINING)]), args.stores or STORES)
    if args.no_loco:
        samples = {}
    elif args.samples and args.samples.exists():  # rows collected by an earlier run of the same code
        samples = pickle.loads(args.samples.read_bytes())
    else:
        samples = tuning_samples(stores, collect)
        if args.samples:
            args.samples.write_bytes(pickle.dumps(samples))
    reports, calibrations = {}, {}
    for name in names:
        setting = SETTINGS[name]
        extra: dict[str, Callable[[Index], object]] = dict(REFERENCES)
        if samples:
            calibration = fit_calibration(samples, exclude=setting.catalog)
            calibrations[name] = calibration.as_json() | {
                "reliability_on_left_out": reliability(calibration, {setting.catalog: samples[setting.catalog]})
                if setting.catalog in samples
                else []
            }
            extra["auto (LOCO)"] = functools.partial(AutoRetriever, calibration=calibration)
        methods = [m.strip() for m in args.methods.split(",") if m.strip()]
        reports[name] = score(stores[name], setting, [*methods, *extra], args.half, extra)
        reports[name]["additions"] = {}
        if "auto" in methods:
            reports[name]["additions"]["auto"] = additions(stores[name], setting, args.half)
        if samples:
            reports[name]["additions"]["auto (LOCO)"] = additions(stores[name], setting, args.half, calibration)
        print(table(name, reports[name]), flush=True)
    checked = targets(reports)
    print("\ntargets: the default (leave-one-catalog-out) above the better of plain MiniLM and BM25 by")
    print(f"{MARGIN}, never below any of {', '.join(FLOOR)} by more than {TOLERANCE}; server R@1 >= plain MiniLM's")
    for t in checked:
        floor = max(t["floor"].values())
        print(
            f"  {t['setting']:20} {t['metric']:18} default {t['default']:.3f}  plain-dense {t['plain_dense']:.3f}  "
            f"plain-bm25 {t['plain_bm25']:.3f}  floor {floor:.3f}  margin {t['margin']:+.3f} "
            f"({'met' if t['meets_margin'] else 'SHORT'}, {'not below' if t['never_below'] else 'BELOW'})"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    document = {"half": args.half, "reports": reports, "targets": checked, "loco_calibrations": calibrations}
    args.out.write_text(json.dumps(document, indent=1), encoding="utf-8")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
