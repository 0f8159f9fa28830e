"""The evaluation harness: every method over the same queries, side by side, at several K.

Per method and K: Recall@K, mAP@K, nDCG@K, CompleteRecall@K over tools, Recall@K over servers
(when the queries name gold servers), plus query latency (p50/p95 after one warm-up query).
Printed as a table, written as JSON and as a PNG with one panel per metric against K.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from toolkg import progress
from toolkg.atomic import atomic_output
from toolkg.display import one_line, pad
from toolkg.retrieval import Index, as_query, make_retriever
from toolkg.retrieval.metrics import (
    average_precision_at,
    complete_at,
    gold_tools,
    ndcg_at,
    recall_at,
    server_recall_at,
)

METRICS = ("recall", "map", "ndcg", "complete_recall", "server_recall")


def evaluate(
    index: Index,
    rows: Sequence[dict],
    methods: Sequence[str],
    ks: Sequence[int],
    options: dict | None = None,
    extra: dict | None = None,
) -> dict:
    """{"queries": n, "k": [...], "methods": {name: {"metrics": {metric: {k: value}}, "latency_ms": {...}}}}.

    ``extra`` maps more method names to factories ``(index) -> retriever`` (a benchmark's reference
    baselines that are not toolkg methods)."""
    depth = max(ks)
    report: dict = {"queries": len(rows), "k": list(ks), "methods": {}}
    with_servers = any(r.get("gold_servers") for r in rows)
    extra = extra or {}
    for name in methods:
        if name in extra:
            retriever = extra[name](index)
        else:
            retriever = make_retriever(name, index, **(options or {}).get(name, {}))
        if rows:
            retriever.retrieve(as_query(rows[0]), depth)  # warm-up: model load, lazy indexes
        sums = {m: dict.fromkeys(ks, 0.0) for m in METRICS}
        latencies = []
        for done, row in enumerate(rows, start=1):
            started = time.perf_counter()
            ranking = retriever.retrieve(as_query(row), depth)
            latencies.append((time.perf_counter() - started) * 1000)
            ranked = [h.tool.id for h in ranking.tools]
            servers = [s for s, _ in ranking.servers]
            gold = gold_tools(row)
            for k in ks:
                sums["recall"][k] += recall_at(ranked, gold, k)
                sums["map"][k] += average_precision_at(ranked, gold, k)
                sums["ndcg"][k] += ndcg_at(ranked, gold, k)
                sums["complete_recall"][k] += complete_at(ranked, gold, k)
                sums["server_recall"][k] += server_recall_at(servers, row.get("gold_servers") or [], k)
            progress.report(f"eval {name}", done, len(rows), unit="queries")
        n = max(len(rows), 1)
        metrics = {m: {k: round(v / n, 4) for k, v in by_k.items()} for m, by_k in sums.items()}
        if not with_servers:
            metrics.pop("server_recall")
        report["methods"][name] = {
            "metrics": metrics,
            "latency_ms": {
                "p50": round(float(np.percentile(latencies, 50)), 2) if latencies else 0.0,
                "p95": round(float(np.percentile(latencies, 95)), 2) if latencies else 0.0,
                "mean": round(float(np.mean(latencies)), 2) if latencies else 0.0,
            },
        }
    return report


def format_table(report: dict) -> str:
    ks = report["k"]
    metrics = [m for m in METRICS if any(m in r["metrics"] for r in report["methods"].values())]
    width = max([8, *(len(one_line(name, 40)) + 1 for name in report["methods"])])
    header = f"{'method':<{width}}" + "".join(f"{f'{m}@{k}':>{max(9, len(m) + 4)}}" for m in metrics for k in ks)
    header += f"{'p50 ms':>9}{'p95 ms':>9}"
    lines = [f"{report['queries']} queries", header]
    for name, result in report["methods"].items():
        cells = "".join(
            f"{result['metrics'][m][k]:>{max(9, len(m) + 4)}.3f}" for m in metrics for k in ks if m in result["metrics"]
        )
        latency = result["latency_ms"]
        lines.append(f"{pad(one_line(name, 40), width)}{cells}{latency['p50']:>9.1f}{latency['p95']:>9.1f}")
    return "\n".join(lines)


def write_outputs(report: dict, json_path: Path, plot_path: Path | None) -> None:
    json_path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(json_path) as out:  # whole or not at all, like the plot
        out.write(json.dumps(report, indent=2))
    if plot_path is None:
        return
    import matplotlib

    matplotlib.use("Agg")  # no display: write the file only
    import matplotlib.pyplot as plt

    metrics = [m for m in METRICS if any(m in r["metrics"] for r in report["methods"].values())]
    figure, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 3.6), squeeze=False)
    for axis, metric in zip(axes[0], metrics, strict=True):
        for name, result in report["methods"].items():
            if metric in result["metrics"]:
                values = result["metrics"][metric]
                axis.plot(report["k"], [values[k] for k in report["k"]], marker="o", label=name)
        axis.set_title(metric)
        axis.set_xlabel("K")
        axis.set_ylim(0, 1)
        axis.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    figure.tight_layout()
    with atomic_output(plot_path, "wb") as out:
        figure.savefig(out, format="png", dpi=110)
    plt.close(figure)
