"""Learn the same-server pair model (canonicalize/inference/pairs.py) from the labelled catalogs, leave-one-catalog-out.

Catalogs: ToolLinkOS (its declared edges, hidden from inference: complete labels, so every candidate is
labelled) and every label set of benchmarks/inference_bench.py (LiveMCPBench and data/dependency-labels/: samples,
so a candidate is a training row only in a slot the labellers judged, where any candidate they did not mark
right is taken as wrong). Rows are what the model judges in the product (pairs.judged): each slot's own
candidates and every pair a rule proposed. Each catalog weighs the same in the fit.

Prints, per catalog left out, the rules alone against the rules plus the learned edges of a model fitted
without it (recall over labelled positives, precision over labelled predicted pairs, and the lower bound
with every unlabelled prediction counted wrong), the calibration of the left-out predictions, and writes the
model fitted on every catalog to canonicalize/inference/pair_model.json.

    python -m benchmarks.labels.train_pairs            # LOCO table, then writes the shipped weights
    python -m benchmarks.labels.train_pairs --no-write
"""

from __future__ import annotations

import argparse
import functools
import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from benchmarks.inference_bench import _estimated_precision, _number
from benchmarks.label_sets import FILES, LABEL_SETS, label_set_tools, read_labels
from benchmarks.label_sets import audit_verdicts as _audit  # both aliased to the names the body uses
from benchmarks.label_sets import load_tools as _load
from benchmarks.splits import half as split_half
from benchmarks.suite.train import logistic_fit
from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.canonicalize.inference.pairs import (
    FEATURES,
    MODEL_PATH,
    THRESHOLD,
    VETO,
    decide,
    features,
    judged,
    probabilities,
)
from toolkg.config import InferenceOptions

ROOT = Path(__file__).resolve().parents[2]
RULES_ONLY = InferenceOptions(learned=False)
VETOES = (0.0, 0.1, 0.2, 0.3, 0.4)


def catalog(name: str) -> dict:
    """A catalog's judged candidates, their features, its labels and the rules' own predictions."""
    judged_slots = None
    if name == "toollinkos":
        tools = [t for path in FILES for t in _load(path)]
        by_name = {t.name: t.id for t in tools}
        positive = {(t.id, by_name[d.target]) for t in tools for d in t.depends_on if d.target in by_name}
        negative = None  # complete labels: every other pair is wrong
        tools = [t.model_copy(update={"depends_on": ()}) for t in tools]
    else:
        labels = read_labels(name)
        tools = label_set_tools(name)
        positive = {(x["consumer"], x["producer"]) for x in labels if x["label"] == "positive"}
        negative = {(x["consumer"], x["producer"]) for x in labels if x["label"] == "negative"} - positive
        judged_slots = {(x["consumer"], x.get("parameter")) for x in labels}
    found, proposed = judged(tools, infer_dependencies(tools, RULES_ONLY, sparsify=False))
    rows = features(found, Counter(t.server_id for t in tools), proposed).reshape(-1, len(FEATURES))
    rules = {(e.consumer, e.producer) for e in infer_dependencies(tools, RULES_ONLY)}
    return {
        "name": name,
        "x": rows,
        "found": found,
        "proposed": proposed,
        "pairs": [(c.consumer_id, c.producer_id) for c in found],
        "slots": [c.slot for c in found],
        "positive": positive,
        "negative": negative,
        "judged_slots": judged_slots,
        "rules": rules,
    }


def training_rows(data: dict) -> tuple[np.ndarray, np.ndarray]:
    """Every candidate of a completely labelled catalog; of a sampled one, the candidates whose pair is labelled
    and those of the slots the labels judged (a candidate the labellers did not mark right there is wrong)."""
    if data["negative"] is None:
        keep = list(range(len(data["pairs"])))
    else:
        labelled = data["positive"] | data["negative"]
        keep = [
            i
            for i, (pair, slot) in enumerate(zip(data["pairs"], data["slots"], strict=True))
            if pair in labelled or slot in data["judged_slots"]
        ]
    y = np.asarray([float(data["pairs"][i] in data["positive"]) for i in keep])
    return data["x"][keep], y


def fit(catalogs: list[dict]) -> np.ndarray:
    xs, ys, ws = [], [], []
    for data in catalogs:
        x, y = training_rows(data)
        if len(y):
            xs.append(x)
            ys.append(y)
            ws.append(np.full(len(y), 1.0 / len(y)))
    weights = np.concatenate(ws)
    return logistic_fit(np.vstack(xs), np.concatenate(ys), weights * len(weights) / weights.sum())


def model_output(data: dict, weights: np.ndarray, threshold: float, veto: float) -> tuple[dict, set]:
    """What the product does (pairs.decide, as pairs.judge calls it): the pairs the model adds, unless the rules
    keep them, (consumer, producer) -> probability; and the rule pairs it doubts."""
    best, doubted = decide(
        data["found"], probabilities(data["x"], weights.tolist()).tolist(), data["proposed"], threshold, veto
    )
    kept = data["rules"] - doubted
    added: dict = {}
    for score, c in best.values():
        pair = (c.consumer_id, c.producer_id)
        if pair not in kept:
            added[pair] = max(added.get(pair, 0.0), score)
    return added, doubted


def predicted(data: dict, weights: np.ndarray, threshold: float, veto: float) -> set:
    added, doubted = model_output(data, weights, threshold, veto)
    return (data["rules"] - doubted) | set(added)


def report_half(data: dict) -> set | None:
    """LiveMCPBench is scored on its reporting half of servers; the other catalogs whole."""
    if data["name"] != "livemcpbench":
        return None
    servers = {c.partition("::")[0] for c, _ in data["positive"] | data["negative"]}
    return {s for s in servers if split_half(s) == "report"}


def scores(predicted: set, data: dict, servers: set | None = None) -> dict:
    positive, negative = data["positive"], data["negative"]
    if servers is not None:  # one half of LiveMCPBench's servers
        positive = {p for p in positive if p[0].partition("::")[0] in servers}
        negative = {p for p in negative if p[0].partition("::")[0] in servers}
        predicted = {p for p in predicted if p[0].partition("::")[0] in servers}
    hits = len(predicted & positive)
    labelled = len(predicted) if negative is None else len(predicted & (positive | negative))
    # the blind audit's verdicts on unlabelled pairs (complete labels need none: the estimate is the precision)
    estimated = (
        _estimated_precision(predicted, positive, negative, _audit(data["name"]))["precision_estimated"]
        if negative is not None
        else round(hits / len(predicted), 3)
        if predicted
        else 0.0
    )
    return {
        "recall": round(hits / len(positive), 3) if positive else 0.0,
        "precision_labelled": round(hits / labelled, 3) if labelled else 0.0,
        "precision_estimated": estimated,
        "precision_lower_bound": round(hits / len(predicted), 3) if predicted else 0.0,
        "predicted": len(predicted),
        "positives": len(positive),
    }


def _bins(rows: list[tuple[float, bool]]) -> list[dict]:
    bins: dict[int, list] = defaultdict(lambda: [0, 0, 0.0])
    for p, right in rows:
        b = bins[min(int(p * 10), 9)]
        b[0] += 1
        b[1] += right
        b[2] += p
    return [
        {"bin": f"{k / 10:.1f}-{(k + 1) / 10:.1f}", "pairs": n, "predicted": round(s / n, 3), "right": round(r / n, 3)}
        for k, (n, r, s) in sorted(bins.items())
    ]


def calibration(catalogs: list[dict], loco: dict[str, np.ndarray], veto: float) -> list[dict]:
    """Left-out probabilities of the edges the model adds (any probability) against the share that is right:
    labelled pairs by their label, unlabelled ones by the blind audit's verdict when it judged them."""
    rows = []
    for data in catalogs:
        audit = _audit(data["name"])
        for pair, p in model_output(data, loco[data["name"]], 0.0, veto)[0].items():
            if data["negative"] is None or pair in data["positive"] | data["negative"]:
                rows.append((p, pair in data["positive"]))
            elif audit.get(pair) in ("correct", "wrong"):
                rows.append((p, audit[pair] == "correct"))
    return _bins(rows)


def choose_veto(catalogs: list[dict], loco: dict[str, np.ndarray], threshold: float) -> dict[str, float]:
    """Per catalog left out, the veto that gives the best mean F1 (recall, estimated precision) on the others."""

    def f1(data: dict, veto: float) -> float:
        row = scores(predicted(data, loco[data["name"]], threshold, veto), data, report_half(data))
        r, p = row["recall"], row["precision_estimated"] or 0.0
        return 2 * r * p / (r + p) if r + p else 0.0

    table = {(d["name"], v): f1(d, v) for d in catalogs for v in VETOES}

    def mean_on_the_others(d: dict, v: float) -> float:
        return float(np.mean([table[o["name"], v] for o in catalogs if o is not d]))

    return {d["name"]: max(VETOES, key=functools.partial(mean_on_the_others, d)) for d in catalogs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threshold", type=float, default=THRESHOLD)
    parser.add_argument("--veto", type=float, default=VETO)
    parser.add_argument("--no-write", action="store_true", help="print the tables only")
    args = parser.parse_args()
    names = ["toollinkos", *(n for n in LABEL_SETS if read_labels(n))]
    catalogs = [catalog(n) for n in names]
    loco = {d["name"]: fit([c for c in catalogs if c is not d]) for d in catalogs}
    chosen = choose_veto(catalogs, loco, args.threshold)
    report: dict = {"threshold": args.threshold, "veto": args.veto, "veto_chosen_loco": chosen, "catalogs": {}}
    print(f"{'left out':22}{'':34}{'R':>7}{'P(lab)':>8}{'P(est)':>8}{'P(low)':>8}{'pred':>7}{'pos':>6}")
    for data in catalogs:
        half = report_half(data)
        model = predicted(data, loco[data["name"]], args.threshold, args.veto)
        rows = {
            "rules": scores(data["rules"], data, half),
            "rules + model": scores(model, data, half),
            f"rules + model, veto {chosen[data['name']]} (LOCO)": scores(
                predicted(data, loco[data["name"]], args.threshold, chosen[data["name"]]), data, half
            ),
        }
        report["catalogs"][data["name"]] = rows
        for label, row in rows.items():
            print(
                f"{data['name'] + (' (report)' if half else ''):22}{label:34}{row['recall']:>7.3f}"
                f"{row['precision_labelled']:>8.3f}{_number(row['precision_estimated']):>8}"
                f"{row['precision_lower_bound']:>8.3f}{row['predicted']:>7}{row['positives']:>6}"
            )
    report["calibration"] = calibration(catalogs, loco, args.veto)
    print(
        "\ncalibration of the added edges, left out (labelled pairs by label, unlabelled by the blind audit):"
        "\n  bin       pairs  mean p  share right"
    )
    for row in report["calibration"]:
        print(f"  {row['bin']}  {row['pairs']:6}  {row['predicted']:.2f}    {row['right']:.2f}")
    weights = fit(catalogs)
    named = dict(zip((*FEATURES, "bias"), (round(float(w), 4) for w in weights), strict=True))
    report["weights"] = named
    print("\nweights:", ", ".join(f"{k} {v:+.2f}" for k, v in named.items()))
    out = ROOT / "benchmarks" / "results" / "pair_model.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    if not args.no_write:
        source = "labelled catalogs: " + ", ".join(names)
        MODEL_PATH.write_text(json.dumps({"weights": named, "source": source}, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {MODEL_PATH.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
