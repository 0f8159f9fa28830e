"""The evaluation harness: every method over the same queries, side by side, at several K.

Per method and K: Recall@K, mAP@K, nDCG@K, CompleteRecall@K over tools, Recall@K over servers
(when the queries name gold servers), plus query latency (p50/p95 after one warm-up query).
Written as JSON and as a PNG with one panel per metric against K (``plot``); ``toolkg eval`` prints it as
tables (``toolkg.cli.render.format_eval``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np

from toolkg import progress
from toolkg.atomic import atomic_output
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


def can_plot() -> bool:
    """Whether the plots extra (matplotlib) is installed: only the PNG needs it."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def write_outputs(report: dict, json_path: Path, plot_path: Path | None) -> bool:
    """Write the report as JSON and, when ``plot_path`` is given and the plots extra is installed, as a PNG
    plot; returns whether the plot was written."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(json_path) as out:  # whole or not at all, like the plot
        out.write(json.dumps(report, indent=2))
    if plot_path is None or not can_plot():
        return False
    figure = plot(report)
    with atomic_output(plot_path, "wb") as out:
        figure.savefig(out, format="png", dpi=110)
    import matplotlib.pyplot as plt

    plt.close(figure)
    return True


# Each method's look: colours, markers and dash patterns cycle at different lengths (10, 8, 4), so no two of
# the first 40 methods share all three. Where methods score the same, three things keep each one visible:
# lines drawn later are thinner with smaller markers (they lie inside the ones below), the baselines are
# drawn last with hollow markers, and each method's points sit a few points left or right of the K they
# belong to (the values and ticks stay exact; only the drawing is nudged, like a dodged bar chart).
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
DASHES = ("-", "--", "-.", ":")
BASELINES = ("bm25", "dense", "hybrid")  # the references: on top, so no method hides them
DODGE = 4.0  # points between neighbouring methods' markers at one K
PANELS_PER_ROW = 3


def plot(report: dict):
    """One panel per metric against K, x ticks at exactly the K values evaluated, one legend for all."""
    import math

    import matplotlib

    matplotlib.use("Agg")  # no display: write the file only
    import matplotlib.pyplot as plt
    from matplotlib.transforms import offset_copy

    ks, methods = report["k"], report["methods"]
    metrics = [m for m in METRICS if any(m in r["metrics"] for r in methods.values())]
    from matplotlib.colors import ListedColormap

    tab10 = plt.get_cmap("tab10")
    assert isinstance(tab10, ListedColormap), "tab10 is a list of ten colours"
    colours = cast(Sequence, tab10.colors)  # ten RGB colours; its stub says any array-like
    look = {
        name: {"color": colours[i % len(colours)], "marker": MARKERS[i % len(MARKERS)], "linestyle": DASHES[i % 4]}
        for i, name in enumerate(methods)
    }
    dodge = {name: (i - (len(methods) - 1) / 2) * DODGE for i, name in enumerate(methods)}
    order = sorted(methods, key=lambda name: name in BASELINES)  # stable: the others first, baselines on top
    last = max(len(order) - 1, 1)
    columns = min(len(metrics), PANELS_PER_ROW)
    rows = math.ceil(len(metrics) / columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(4 * columns + 1.4, 3.4 * rows), squeeze=False, layout="constrained"
    )
    panels = list(axes.flat)
    for axis, metric in zip(panels, metrics, strict=False):
        for drawn, name in enumerate(order):
            if metric not in methods[name]["metrics"]:
                continue
            values = methods[name]["metrics"][metric]  # int keys, or strings in a report read from JSON
            axis.plot(
                ks,
                [values.get(k, values.get(str(k))) for k in ks],
                label=name,
                linewidth=2.6 - 1.3 * drawn / last,
                markersize=8.5 - 3 * drawn / last,
                markerfacecolor="none" if name in BASELINES else look[name]["color"],
                zorder=2 + drawn,
                transform=offset_copy(axis.transData, fig=figure, x=dodge[name], units="points"),
                **look[name],
            )
        margin = 0.06 * (ks[-1] - ks[0]) or 0.5  # room for the dodged markers at the first and last K
        axis.set_xlim(ks[0] - margin, ks[-1] + margin)
        axis.set_xticks(ks)
        axis.set_xticklabels([str(k) for k in ks])
        axis.set_title(metric)
        axis.set_xlabel("K")
        axis.set_ylim(-0.02, 1.02)  # a score of 0 or 1 is drawn whole, not cut by the frame
        axis.grid(alpha=0.3)
    for axis in axes[:, 0]:
        axis.set_ylabel("score")
    handles: dict = {}  # one legend, in the report's order, where it covers no line
    for axis in panels[: len(metrics)]:
        handles |= {label: line for line, label in zip(*axis.get_legend_handles_labels(), strict=True)}
    shown = [name for name in methods if name in handles]
    spare = panels[len(metrics) :]
    for axis in spare:
        axis.set_axis_off()
    if spare:  # the empty panel of the last row holds it
        spare[0].legend([handles[n] for n in shown], shown, loc="center", title="method")
    else:
        figure.legend([handles[n] for n in shown], shown, loc="outside right upper", title="method")
    return figure
