"""The rules' confidences calibrated from labels, leave-one-catalog-out, and the per-slot cap chosen the same way
(issue 51). Imported by inference_bench.py (``--calibrate``); runs on its own too.

Dev catalogs: ToolLinkOS (its declared edges, hidden: complete labels) and every label set of
inference_bench.py that has labels. Each is split into a tuning and a reporting half by the consumer tool's id
(splits.py's sha256 parity): by tool, not by server, because GitHub's API is one server. An edge is judged
by its label (ToolLinkOS: complete labels, every other pair is wrong), else by the blind audit's verdict
(data/dependency-labels/audit/), else at the rate the audit found right on that catalog: the estimate
inference_bench.py calls P(est), and calibration.py's convention (labels plus the audit of the pairs they
leave out). The lower bound (an unlabelled pair counted wrong) is shown beside it.

- **Calibration.** A rule's evidence kind (``evidence_kind``: the typed join's three, the REST rule's two, else
  the rule) has the estimated precision its proposals (the rules' edges before any competition) show on the
  tuning halves: the mean over catalogs with at least ``MIN_SEEN`` judged proposals, rounded down to 0.05; a kind
  seen fewer than ``MIN_TOTAL`` times keeps its ``PRIOR`` placeholder. Only the kinds in ``FITTED``
  (placeholders until now) are set this way; the others keep calibration.py's measured values and are shown
  in the table.
- **Leave one catalog out.** For each dev catalog, the confidences are fitted on the others' tuning halves,
  and the cap (``InferenceOptions.max_producers_per_slot``) is the one of ``CAPS`` with the best mean F1
  (recall, precision over labelled consumers) on the others' tuning halves under those confidences; the
  catalog is then scored with both: it was in no fit.
- **The calibration table**: every left-out catalog's edges pooled, by rule (and kind) and confidence bin,
  against the share that is right.
- **Vetoes**: the join's edges the judge dropped (pairs.py: every proposal of the pair under ``learned_veto``),
  with the model's probability and the features that pulled it down.

    python -m benchmarks.rule_calibration                  # LOCO fit, table, vetoes: results/rule_calibration.json
    python -m benchmarks.rule_calibration --predict F      # only write the default predictions (for 'before')
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.label_sets import FILES, LABEL_SETS, label_set_tools, read_labels
from benchmarks.label_sets import audit_verdicts as _audit  # both aliased to the names the body uses
from benchmarks.label_sets import load_tools as _load
from benchmarks.plain_join import JoinEdge, plain_join
from benchmarks.splits import half as split_half
from toolkg.canonicalize.inference.calibration import CONFIDENCE
from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.canonicalize.inference.typed_join import SAME_FIELD
from toolkg.canonicalize.inference.typed_join import evidence_kind as join_evidence_kind
from toolkg.config import InferenceOptions
from toolkg.models import InferredEdge

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
# the kinds fitted here, with the placeholder each had before (kept by a fold whose catalogs never show the kind:
# not the shipped value, which the left-out catalog's own labels may have set)
PRIOR = {
    "join name lists": 0.7,
    "join output carries": 0.7,
    "join same field": 0.6,
    "rest lists": 0.8,
    "rest creates": 0.75,
    "join similar entity": 0.55,
    "server login": 0.75,
}
FITTED = tuple(PRIOR)
CAPS = (1, 2, 3, 4, 6, 100)  # 100: no cap in practice
MIN_SEEN = 5  # judged proposals a catalog needs to count in a kind's mean
MIN_TOTAL = 10  # judged proposals over the catalogs for a kind to be fitted at all
BINS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.01)


@dataclass
class Dev:
    name: str
    tools: list
    positive: set[tuple[str, str]]
    consumers: set[str] | None  # the labelled consumers; None: every consumer is (complete labels)
    negative: set[tuple[str, str]] = field(default_factory=set)
    audit: dict[tuple[str, str], str] = field(default_factory=dict)

    def judged(self, consumer: str) -> bool:
        return self.consumers is None or consumer in self.consumers

    @property
    def audit_rate(self) -> float:
        verdicts = [v for v in self.audit.values() if v in ("correct", "wrong")]
        return sum(v == "correct" for v in verdicts) / len(verdicts) if verdicts else 0.0

    def right(self, pair: tuple[str, str]) -> float:
        """1 or 0 by the labels or the audit, else the audit's rate (ToolLinkOS: complete labels)."""
        if pair in self.positive:
            return 1.0
        if self.consumers is None or pair in self.negative:
            return 0.0
        verdict = self.audit.get(pair)
        if verdict in ("correct", "wrong"):
            return float(verdict == "correct")
        return self.audit_rate


def dev_catalogs() -> list[Dev]:
    tools = [t for path in FILES for t in _load(path)]
    by_name = {t.name: t.id for t in tools}
    positive = {(t.id, by_name[d.target]) for t in tools for d in t.depends_on if d.target in by_name}
    found = [Dev("toollinkos", [t.model_copy(update={"depends_on": ()}) for t in tools], positive, None)]
    for name in LABEL_SETS:
        labels = read_labels(name)
        if labels:
            pos = {(x["consumer"], x["producer"]) for x in labels if x["label"] == "positive"}
            neg = {(x["consumer"], x["producer"]) for x in labels if x["label"] == "negative"} - pos
            consumers = {x["consumer"] for x in labels}
            found.append(Dev(name, label_set_tools(name), pos, consumers, neg, _audit(name)))
    return found


def evidence_kind(e: InferredEdge) -> str:
    """The calibration key an edge's evidence reads as (typed_join.py's and rest.py's evidence texts), else its
    rule."""
    if e.rule == "typed-join":
        return join_evidence_kind(e.evidence) or SAME_FIELD[1]
    if e.rule == "rest-collection":
        return "rest creates" if "(creates the" in e.evidence else "rest lists"
    return e.rule.replace("-", " ")  # a rule of one kind: its calibration key (server-login -> server login)


def _in_half(consumer: str, half: str) -> bool:
    return half == "all" or split_half(consumer) == half


@contextmanager
def confidences(table: dict[str, float]) -> Iterator[None]:
    """calibration.CONFIDENCE with ``table``'s values while the block runs (the rules read it per edge)."""
    saved = {k: CONFIDENCE[k] for k in table}
    CONFIDENCE.update(table)
    try:
        yield
    finally:
        CONFIDENCE.update(saved)


def estimated(d: Dev, pairs_by_kind: dict[str, list[tuple[str, str]]]) -> dict[str, tuple[int, float]]:
    """kind -> (pairs, estimated right ones). A pair neither the labels nor the audit judged counts at the
    audit's rate for that kind's audited pairs when the audit judged ``MIN_SEEN`` of them (it sampled the
    predictions, so it saw each kind in proportion), else at the catalog's audit rate."""
    out = {}
    for kind, pairs in pairs_by_kind.items():
        right, unjudged, audited, correct = 0.0, 0, 0, 0
        for pair in pairs:
            verdict = d.audit.get(pair)
            if pair in d.positive or d.consumers is None or pair in d.negative:
                right += pair in d.positive
            elif verdict in ("correct", "wrong"):
                right += verdict == "correct"
                audited += 1
                correct += verdict == "correct"
            else:
                unjudged += 1
        rate = correct / audited if audited >= MIN_SEEN else d.audit_rate
        out[kind] = (len(pairs), round(right + rate * unjudged, 2))
    return out


def proposal_counts(d: Dev, half: str = "tune") -> dict[str, tuple[int, float]]:
    """kind -> (proposals, estimated right ones) of the rules' edges before competition, in one half."""
    by_kind: dict[str, list[tuple[str, str]]] = defaultdict(list)
    seen = set()
    for e in infer_dependencies(d.tools, InferenceOptions(learned=False), sparsify=False):
        key = (e.consumer, e.producer, evidence_kind(e))
        if key not in seen and _in_half(e.consumer, half):
            seen.add(key)
            by_kind[key[2]].append(key[:2])
    return estimated(d, by_kind)


def fit(counts: dict[str, dict[str, tuple[int, float]]], names: list[str]) -> dict[str, float]:
    """The FITTED kinds' confidences from the catalogs ``names``' tuning-half counts."""
    table = {}
    for kind in FITTED:
        per = [counts[n].get(kind, (0, 0)) for n in names]
        if sum(n for n, _ in per) < MIN_TOTAL:
            table[kind] = PRIOR[kind]
            continue
        shares = [r / n for n, r in per if n >= MIN_SEEN] or [sum(r for _, r in per) / sum(n for n, _ in per)]
        table[kind] = math.floor(sum(shares) / len(shares) * 20 + 1e-9) / 20
    return table


_RUNS: dict = {}


def predicted(d: Dev, table: dict[str, float], cap: int) -> list[InferredEdge]:
    """The default output under ``table``'s confidences and a slot cap of ``cap``. One inference per table: the
    edges infer.py hands to ``compete`` are kept, and each cap applies the same tail (competition, then
    acyclic) to them."""
    from toolkg.canonicalize.inference import infer as infer_module
    from toolkg.canonicalize.inference.acyclic import Changing, acyclic

    key = (d.name, tuple(sorted(table.items())))
    if key not in _RUNS:
        kept: list[list[InferredEdge]] = []
        original = infer_module.compete

        def keep(edges, slots):  # the edges before competition, and what a cap of ``slots`` would keep
            kept.append(list(edges))
            return original(edges, slots)

        infer_module.compete = keep
        try:
            with confidences(table):
                infer_dependencies(d.tools)
        finally:
            infer_module.compete = original
        _RUNS[key] = kept[0]
    by_id = {t.id: t for t in d.tools}
    return acyclic(infer_module.compete(_RUNS[key], cap), (), Changing(by_id.get))


def score(d: Dev, pairs: set[tuple[str, str]], half: str) -> dict:
    positive = {p for p in d.positive if _in_half(p[0], half)}
    mine = {p for p in pairs if _in_half(p[0], half)}
    judged = {p for p in mine if d.judged(p[0])}
    hits = len(mine & positive)
    recall = hits / len(positive) if positive else 0.0
    p_judged = len(judged & positive) / len(judged) if judged else 0.0
    return {
        "recall": round(recall, 3),
        "precision_lower_bound": round(hits / len(mine), 3) if mine else 0.0,
        "precision_labelled_consumers": round(p_judged, 3),
        "precision_estimated": round(sum(d.right(p) for p in mine) / len(mine), 3) if mine else 0.0,
        "predicted": len(mine),
        "positives": len(positive),
        "f1": round(2 * recall * p_judged / (recall + p_judged), 3) if recall + p_judged else 0.0,
    }


def _pairs(edges: Iterable[InferredEdge | JoinEdge]) -> set[tuple[str, str]]:
    return {(e.consumer, e.producer) for e in edges}


def choose_cap(others: list[Dev], table: dict[str, float]) -> tuple[int, dict[int, float]]:
    """The cap with the best mean F1 (recall, precision over labelled consumers) on ``others``' tuning halves,
    the smaller on a tie; and each cap's mean F1."""
    f1 = {
        cap: round(sum(score(o, _pairs(predicted(o, table, cap)), "tune")["f1"] for o in others) / len(others), 4)
        for cap in CAPS
    }
    return max(CAPS, key=lambda cap: (f1[cap], -cap)), f1


def _bin(confidence: float) -> int:
    return next((i for i in range(len(BINS) - 1) if confidence < BINS[i + 1]), len(BINS) - 2)


def table_rows(d: Dev, edges: list[InferredEdge]) -> dict[tuple[str, int], list[float]]:
    """A left-out catalog's cells of the calibration table: (kind, bin) -> [edges, labelled right, sum of
    confidences, estimated right]."""
    by_cell: dict[tuple[str, int], list[InferredEdge]] = defaultdict(list)
    seen = set()
    for e in edges:
        if (e.consumer, e.producer, e.rule) not in seen:
            seen.add((e.consumer, e.producer, e.rule))
            by_cell[evidence_kind(e), _bin(e.confidence)].append(e)
    rates = estimated(d, {f"{k}|{b}": [(e.consumer, e.producer) for e in es] for (k, b), es in by_cell.items()})
    return {
        (k, b): [
            len(es),
            sum((e.consumer, e.producer) in d.positive for e in es),
            sum(e.confidence for e in es),
            rates[f"{k}|{b}"][1],
        ]
        for (k, b), es in by_cell.items()
    }


def calibration_table(cells: dict[tuple[str, int], list[float]]) -> list[dict]:
    """Per kind and bin (every left-out catalog's ``table_rows`` summed): edges, mean confidence, share right
    as a lower bound and estimated."""
    return [
        {
            "kind": kind,
            "bin": f"{BINS[at]:.1f}-{min(BINS[at + 1], 1.0):.1f}",
            "edges": int(n),
            "mean_confidence": round(s / n, 3),
            "share_right_lower_bound": round(r / n, 3),
            "share_right_estimated": round(e / n, 3),
        }
        for (kind, at), (n, r, s, e) in sorted(cells.items())
    ]


def vetoed_joins(d: Dev, options: InferenceOptions | None = None) -> list[dict]:
    """The typed join's edges the judge drops, with the model's best probability for the pair and the three
    features that pulled it down most (weight x value)."""
    from toolkg.canonicalize.inference.index import CatalogIndex
    from toolkg.canonicalize.inference.infer import rule_edges
    from toolkg.canonicalize.inference.pairs import FEATURES, features, judged, load_weights, probabilities
    from toolkg.canonicalize.inference.profiles import profile_of

    options = options or InferenceOptions()
    index = CatalogIndex(d.tools, options, None)
    edges = rule_edges(index, [profile_of(t) for t in d.tools])
    joins = {
        (e.consumer, e.producer): e for e in edges if e.rule == "typed-join" and e.confidence >= options.min_confidence
    }
    found, proposed = judged(d.tools, edges)
    rows = features(found, Counter(t.server_id for t in d.tools), proposed)
    weights = load_weights()
    p = probabilities(rows, weights)
    best: dict[tuple[str, str], tuple[float, int]] = {}
    for n, c in enumerate(found):
        pair = (c.consumer_id, c.producer_id)
        if pair in joins and c.consumer.server_id == c.producer.server_id and (*pair, c.slot[1]) in proposed:
            if pair not in best or p[n] > best[pair][0]:
                best[pair] = (float(p[n]), n)
    out = []
    for pair, (probability, n) in sorted(best.items()):
        if probability >= options.learned_veto:
            continue
        pulls = sorted((weights[i] * rows[n][i], FEATURES[i]) for i in range(len(FEATURES)))[:3]
        e = joins[pair]
        out.append(
            {
                "consumer": pair[0],
                "producer": pair[1],
                "parameter": e.parameter,
                "join_evidence": e.evidence,
                "probability": round(probability, 3),
                "pulled_down_by": [f"{name} {value:+.2f}" for value, name in pulls],
                "label": "positive"
                if pair in d.positive
                else ("unlabelled" if not d.judged(pair[0]) else "not a positive"),
            }
        )
    return out


def run(before: dict | None = None) -> dict:
    devs = dev_catalogs()
    counts = {d.name: proposal_counts(d) for d in devs}
    names = [d.name for d in devs]
    shipped = fit(counts, names)
    report: dict = {"fitted_on_every_tuning_half": shipped, "loco": {}, "counts_tune": counts}
    cells: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0])
    for d in devs:
        others = [o for o in devs if o is not d]
        table = fit(counts, [o.name for o in others])
        cap, f1_by_cap = choose_cap(others, table)
        edges = predicted(d, table, cap)
        after = _pairs(edges)
        plain = _pairs(plain_join(d.tools))
        entry: dict = {"confidences": table, "cap": cap, "mean_f1_by_cap_on_the_others": f1_by_cap, "halves": {}}
        for half in ("tune", "report", "all"):
            entry["halves"][half] = {
                "plain join": score(d, plain, half),
                **({"before": score(d, {tuple(p) for p in before[d.name]}, half)} if before else {}),
                "after (LOCO)": score(d, after, half),
            }
        report["loco"][d.name] = entry
        for key, values in table_rows(d, edges).items():
            cells[key] = [a + b for a, b in zip(cells[key], values, strict=True)]
    report["calibration_table"] = calibration_table(cells)
    report["vetoed_joins"] = {}
    with confidences(shipped):
        for d in devs:
            report["vetoed_joins"][d.name] = vetoed_joins(d)
    return report


def print_report(report: dict) -> None:
    print("\nrule confidences fitted on every tuning half:", report["fitted_on_every_tuning_half"])
    print(
        f"\n{'catalog (left out)':22}{'half':8}{'method':14}{'P(low)':>8}{'P(lab.c)':>9}{'P(est)':>8}{'R':>7}"
        f"{'pred':>7}{'pos':>6}"
    )
    for name, entry in report["loco"].items():
        print(f"{name}: cap {entry['cap']} (mean F1 of the others by cap: {entry['mean_f1_by_cap_on_the_others']})")
        print(f"{'':22}confidences {entry['confidences']}")
        for half, methods in entry["halves"].items():
            for method, row in methods.items():
                print(
                    f"{'':22}{half:8}{method:14}{row['precision_lower_bound']:>8.3f}"
                    f"{row['precision_labelled_consumers']:>9.3f}{row['precision_estimated']:>8.3f}"
                    f"{row['recall']:>7.3f}{row['predicted']:>7}{row['positives']:>6}"
                )
    print("\ncalibration, left-out catalogs pooled: kind, confidence bin, edges, mean confidence, right (lower, est.)")
    for row in report["calibration_table"]:
        print(
            f"  {row['kind']:28}{row['bin']:>9}{row['edges']:>7}{row['mean_confidence']:>7.2f}"
            f"{row['share_right_lower_bound']:>7.2f}{row['share_right_estimated']:>7.2f}"
        )
    print("\nthe judge's vetoes of join edges (probability < learned_veto):")
    for name, vetoes in report["vetoed_joins"].items():
        labels = Counter(v["label"] for v in vetoes)
        print(f"  {name}: {len(vetoes)} vetoed ({dict(labels)})")
    examples = [v for vetoes in report["vetoed_joins"].values() for v in vetoes][:10]
    for v in examples:
        print(
            f"    {v['consumer']} <- {v['producer']} ({v['parameter']}): p {v['probability']:.2f}, {v['label']}; "
            f"pulled down by {', '.join(v['pulled_down_by'])}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--predict", type=Path, help="only write each dev catalog's default predictions here")
    parser.add_argument("--before", type=Path, help="predictions --predict wrote (another checkout): a column")
    args = parser.parse_args()
    if args.predict:
        out = {d.name: sorted(_pairs(infer_dependencies(d.tools))) for d in dev_catalogs()}
        args.predict.write_text(json.dumps(out), encoding="utf-8")
        return
    before = json.loads(args.before.read_text(encoding="utf-8")) if args.before else None
    report = run(before)
    print_report(report)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "rule_calibration.json").write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
