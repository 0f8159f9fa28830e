"""Learn the same-server pair model (canonicalize/pairs.py) from the labelled catalogs, leave-one-catalog-out.

Catalogs: ToolLinkOS (its declared edges, hidden from inference: complete labels, so every candidate is
labelled) and every label set of benchmarks/inference_bench.py (LiveMCPBench and data/dependency-labels/: samples,
so a candidate is a training row only in a slot the labellers judged, where any candidate they did not mark
right is taken as wrong). Rows are what the model judges in the product (pairs.judged): each slot's own
candidates and every pair a rule proposed. Each catalog weighs the same in the fit.

Prints, per catalog left out, the rules alone against the rules plus the learned edges of a model fitted
without it (recall over labelled positives, precision over labelled predicted pairs, and the lower bound
with every unlabelled prediction counted wrong), the calibration of the left-out predictions, and writes the
model fitted on every catalog to canonicalize/pair_model.json.

    python benchmarks/labels/train_pairs.py            # LOCO table, then writes the shipped weights
    python benchmarks/labels/train_pairs.py --no-write
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "benchmarks" / "suite"))

from inference_bench import FILES, LABEL_SETS, _load, label_set_tools, read_labels  # noqa: E402
from splits import half as split_half  # noqa: E402
from train import logistic_fit  # noqa: E402

from toolkg.canonicalize.inference import infer_dependencies  # noqa: E402
from toolkg.canonicalize.pair_candidates import slot_of  # noqa: E402
from toolkg.canonicalize.pairs import FEATURES, MODEL_PATH, THRESHOLD, features, judged, probabilities  # noqa: E402
from toolkg.config import InferenceOptions  # noqa: E402

RULES_ONLY = InferenceOptions(learned=False)


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
        "pairs": [(c.consumer.id, c.producer.id) for c in found],
        "slots": [slot_of(c) for c in found],
        "same_server": [c.consumer.server_id == c.producer.server_id for c in found],
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


def learned(data: dict, weights: np.ndarray, threshold: float) -> dict[tuple[str, str], float]:
    """What the product adds (pairs.learned_edges): each slot's likeliest candidate at or above ``threshold``,
    on the consumer's server, unless the rules keep the pair: (consumer, producer) -> probability."""
    p = probabilities(data["x"], weights)
    slots: dict = {}
    for slot, pair, same, score in zip(data["slots"], data["pairs"], data["same_server"], p, strict=True):
        if score >= threshold and (slot not in slots or score > slots[slot][0]):
            slots[slot] = (float(score), pair, same)
    out: dict = {}
    for score, pair, same in slots.values():
        if same and pair not in data["rules"]:
            out[pair] = max(out.get(pair, 0.0), score)
    return out


def scores(predicted: set, data: dict, servers: set | None = None) -> dict:
    positive, negative = data["positive"], data["negative"]
    if servers is not None:  # one half of LiveMCPBench's servers
        positive = {p for p in positive if p[0].partition("::")[0] in servers}
        negative = {p for p in negative if p[0].partition("::")[0] in servers}
        predicted = {p for p in predicted if p[0].partition("::")[0] in servers}
    hits = len(predicted & positive)
    labelled = len(predicted) if negative is None else len(predicted & (positive | negative))
    return {
        "recall": round(hits / len(positive), 3) if positive else 0.0,
        "precision_labelled": round(hits / labelled, 3) if labelled else 0.0,
        "precision_lower_bound": round(hits / len(predicted), 3) if predicted else 0.0,
        "predicted": len(predicted),
        "positives": len(positive),
    }


def calibration(catalogs: list[dict], loco: dict[str, np.ndarray]) -> list[dict]:
    """Left-out probability bins against the share of labelled pairs that are right."""
    bins: dict[int, list] = defaultdict(lambda: [0, 0, 0.0])
    for data in catalogs:
        for pair, p in learned(data, loco[data["name"]], 0.0).items():
            if data["negative"] is None or pair in data["positive"] | data["negative"]:
                b = bins[min(int(p * 10), 9)]
                b[0] += 1
                b[1] += pair in data["positive"]
                b[2] += p
    return [
        {"bin": f"{k / 10:.1f}-{(k + 1) / 10:.1f}", "pairs": n, "predicted": round(s / n, 3), "right": round(r / n, 3)}
        for k, (n, r, s) in sorted(bins.items())
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threshold", type=float, default=THRESHOLD)
    parser.add_argument("--no-write", action="store_true", help="print the tables only")
    args = parser.parse_args()
    names = ["toollinkos", *(n for n in LABEL_SETS if read_labels(n))]
    catalogs = [catalog(n) for n in names]
    loco = {d["name"]: fit([c for c in catalogs if c is not d]) for d in catalogs}
    report: dict = {"threshold": args.threshold, "catalogs": {}}
    print(f"{'left out':18}{'':10}{'R':>7}{'P(lab)':>8}{'P(low)':>8}{'pred':>7}{'pos':>6}")
    for data in catalogs:
        added = learned(data, loco[data["name"]], args.threshold)
        rows = {"rules": scores(data["rules"], data), "rules + learned": scores(data["rules"] | set(added), data)}
        if data["name"] == "livemcpbench":
            servers = {c.partition("::")[0] for c, _ in data["positive"] | data["negative"]}
            report_half = {s for s in servers if split_half(s) == "report"}
            rows["rules, report half"] = scores(data["rules"], data, report_half)
            rows["rules + learned, report half"] = scores(data["rules"] | set(added), data, report_half)
        report["catalogs"][data["name"]] = rows
        for label, row in rows.items():
            print(
                f"{data['name']:18}{label:10}{row['recall']:>7.3f}{row['precision_labelled']:>8.3f}"
                f"{row['precision_lower_bound']:>8.3f}{row['predicted']:>7}{row['positives']:>6}"
            )
    report["calibration"] = calibration(catalogs, loco)
    print("\ncalibration (left-out predictions, labelled pairs): bin, pairs, mean probability, share right")
    for row in report["calibration"]:
        print(f"  {row['bin']}  {row['pairs']:6}  {row['predicted']:.2f}  {row['right']:.2f}")
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
