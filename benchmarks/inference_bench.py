"""Dependency-inference benchmark: ToolLinkOS's declared edges, hand-labelled pairs on LiveMCPBench's 70
real MCP servers (data/livemcpbench/DEPENDENCIES.md), and the label sets of data/dependency-labels/ (real
MCP servers, BFCL's multi-turn APIs, Azure MCP, GitHub's REST API: data/dependency-labels/README.md).

LiveMCPBench: recall is over the labelled positives; precision is given twice, over the predicted
pairs that are labelled (positive or checked negative) and, as a lower bound, over every predicted
pair (an unlabelled pair counts as wrong). The labelled servers are split into a tuning and a
reporting half by the same rule as the queries (sha256 parity of the consumer's server id); tune on
the first, report the second.

The catalog is read with its declared dependencies hidden from inference; the inferred
(consumer, producer) pairs are compared with the declared pairs: precision, recall and F1
overall and per kind (a per-kind hit needs the same kind), and the share of each tool's
declared transitive dependencies reachable through inferred edges. Prints a table and writes
benchmarks/results/inference.json. Targets (offline, no LLM): precision >= 0.80, recall >= 0.60.

Then (unless ``--no-calibration``) rule_calibration.py: the rules' confidences and the per-slot cap fitted
leave-one-catalog-out on tuning halves, each dev catalog scored left out beside the plain join (and, with
``--before``, another checkout's predictions), the calibration table (confidence bin against observed
precision per rule) and what the judge vetoed from the typed join.

    python -m benchmarks.inference_bench
    python -m benchmarks.inference_bench --before before.json   # rule_calibration.py --predict, other checkout
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from benchmarks.label_sets import FILES, LABEL_SETS, label_set_tools, read_labels
from benchmarks.label_sets import audit_verdicts as _audit  # both aliased to the names the body uses
from benchmarks.label_sets import load_tools as _load
from benchmarks.plain_join import plain_join  # the naive baseline every row is shown beside
from benchmarks.splits import half as split_half  # the one split rule: sha256 parity, data/SPLITS.md
from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.extractors.manifests.reading import discover_all

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
KIND_ALIASES = {"parameterDependsOn": "parameterDirectlyDependsOn", "toolDependsOn": "toolDirectlyDependsOn"}


def _closure(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, stack = set(), list(graph.get(start, ()))
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(graph.get(node, ()))
    return seen


def _prf(hit: int, predicted: int, gold: int) -> dict:
    p = hit / predicted if predicted else 0.0
    r = hit / gold if gold else 0.0
    return {
        "precision": round(p, 3),
        "recall": round(r, 3),
        "f1": round(2 * p * r / (p + r), 3) if p + r else 0.0,
        "predicted": predicted,
        "gold": gold,
        "hits": hit,
    }


def _inferred(tools: list) -> tuple[dict, float]:
    """(consumer, producer) -> its first inferred edge, and the seconds inference took."""
    started = time.perf_counter()
    edges = infer_dependencies(tools)
    seconds = time.perf_counter() - started
    predicted: dict = {}
    for e in edges:
        predicted.setdefault((e.consumer, e.producer), e)
    return predicted, seconds


def _estimated_precision(mine: set, positive: set, negative: set, audit: dict) -> dict:
    """Precision over every prediction: labelled pairs by their label, the others by the audit's
    verdict, and the pairs neither judges (new since the audit) at the audited pairs' rate."""
    unlabelled = mine - positive - negative
    judged = {pair: audit[pair] for pair in unlabelled if audit.get(pair) in ("correct", "wrong")}
    right = len(mine & positive) + sum(v == "correct" for v in judged.values())
    unjudged = len(unlabelled) - len(judged)
    if not mine or (unjudged and not judged):
        return {"audited": len(judged), "unjudged": unjudged, "precision_estimated": None}  # nothing to go by
    rate = sum(v == "correct" for v in judged.values()) / len(judged) if judged else 0.0
    estimate = (right + rate * unjudged) / len(mine)
    return {"audited": len(judged), "unjudged": unjudged, "precision_estimated": round(estimate, 3)}


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


# Data flows observed by executing real call sequences (data/dependency-labels/observed/README.md): positives
# only, so they give recall; never training data for the pair model (the catalogs are already the label sets').
OBSERVED_SETS = {
    "bfcl-multi-turn (observed)": (
        ["tests/cases/real/openai/bfcl-multi-turn"],
        "data/dependency-labels/observed/bfcl-multi-turn.jsonl",
    ),
    "tau2 airline (observed)": (["tests/cases/real/openai/tau2"], "data/dependency-labels/observed/tau2-airline.jsonl"),
    "tau2 retail (observed)": (["tests/cases/real/openai/tau2"], "data/dependency-labels/observed/tau2-retail.jsonl"),
}


def observed_recall(name: str) -> dict:
    """Recall of the observed flows (pairs), overall and over the flows seen in two sequences or more."""
    paths, labels = OBSERVED_SETS[name]
    flows = [json.loads(line) for line in (ROOT / labels).open(encoding="utf-8") if line.strip()]
    found = discover_all([ROOT / entry for entry in paths]).files
    predicted, _ = _inferred([t for path in found for t in _load(Path(path))])
    out = {}
    for label, keep in (("all", flows), ("observed twice or more", [x for x in flows if x.get("observed", 1) >= 2])):
        pairs = {(x["consumer"], x["producer"]) for x in keep}
        hits = len(pairs & predicted.keys())
        out[label] = {"pairs": len(pairs), "hits": hits, "recall": round(hits / len(pairs), 3) if pairs else 0.0}
    rows = (f"{k}: recall {v['recall']:.3f} ({v['hits']}/{v['pairs']})" for k, v in out.items())
    print(f"\n{name}: " + "; ".join(rows))
    return out


def real_catalog(name: str = "livemcpbench") -> dict:
    """Inference over a labelled catalog scored against its hand-labelled pairs, overall and per half."""
    tools = label_set_tools(name)
    labels = read_labels(name)
    predicted, seconds = _inferred(tools)
    audit = _audit(name)
    out: dict = {"tools": len(tools), "inferred": len(predicted), "seconds": round(seconds, 3)}
    for half in ("all", "tune", "report"):
        keep = [x for x in labels if half == "all" or split_half(x["consumer"].partition("::")[0]) == half]
        positive = {(x["consumer"], x["producer"]) for x in keep if x["label"] == "positive"}
        negative = {(x["consumer"], x["producer"]) for x in keep if x["label"] == "negative"}
        consumers = {c for c, _ in positive | negative}
        servers = {c.partition("::")[0] for c in consumers}
        mine = {pair for pair in predicted if half == "all" or pair[0].partition("::")[0] in servers}
        hit = len(mine & positive)
        labelled = len(mine & (positive | negative))
        out[half] = {
            "positives": len(positive),
            "negatives": len(negative),
            "predicted": len(mine),
            "hits": hit,
            "recall": round(hit / len(positive), 3) if positive else 0.0,
            "precision_labelled": round(hit / labelled, 3) if labelled else 0.0,
            "precision_lower_bound": round(hit / len(mine), 3) if mine else 0.0,
            **_estimated_precision(mine, positive, negative, audit),
        }
    plain = {(e.consumer, e.producer) for e in plain_join(tools)}
    out["versus_plain_join"] = {}
    for half in ("tune", "report", "all"):
        keep = [x for x in labels if half == "all" or split_half(x["consumer"].partition("::")[0]) == half]
        positive = {(x["consumer"], x["producer"]) for x in keep if x["label"] == "positive"}
        negative = {(x["consumer"], x["producer"]) for x in keep if x["label"] == "negative"}
        consumers = {c for c, _ in positive | negative}
        out["versus_plain_join"][half] = _compare(set(predicted), plain, positive, negative, consumers)
    rules = {}
    positive = {(x["consumer"], x["producer"]) for x in labels if x["label"] == "positive"}
    negative = {(x["consumer"], x["producer"]) for x in labels if x["label"] == "negative"}
    for rule in sorted({e.rule for e in predicted.values()}):
        pairs = {pair for pair, e in predicted.items() if e.rule == rule}
        labelled = len(pairs & (positive | negative))
        rules[rule] = {
            "predicted": len(pairs),
            "hits": len(pairs & positive),
            "wrong": len(pairs & negative),
            "precision_labelled": round(len(pairs & positive) / labelled, 3) if labelled else None,
            **_estimated_precision(pairs, positive, negative, audit),
        }
    out["per_rule"] = rules
    print(
        f"\n{name}: {len(tools)} tools, {len(positive)} labelled positives, {len(negative)} checked "
        f"negatives, {len(predicted)} inferred in {seconds:.2f}s"
    )
    print(f"{'half':<8}{'P(labelled)':>12}{'P(est)':>8}{'P(lower)':>10}{'R':>7}{'pred':>7}{'pos':>6}{'hits':>6}")
    for half in ("tune", "report", "all"):
        row = out[half]
        print(
            f"{half:<8}{row['precision_labelled']:>12.3f}{_number(row['precision_estimated']):>8}"
            f"{row['precision_lower_bound']:>10.3f}{row['recall']:>7.3f}{row['predicted']:>7}{row['positives']:>6}"
            f"{row['hits']:>6}"
        )
    print(
        "P(labelled): over predicted pairs that are labelled; P(est): over all predicted pairs, unlabelled ones "
        "judged by the audit file; P(lower): unlabelled pairs counted wrong"
    )
    for half in ("tune", "report", "all"):
        print_comparison(f"  {half}: lower-bound P / R", out["versus_plain_join"][half])
    for rule, row in rules.items():
        print(
            f"rule {rule:<25} {row['predicted']:>6} edges, {row['hits']} labelled right, {row['wrong']} labelled "
            f"wrong, precision estimated {_number(row['precision_estimated'])} ({row['unjudged']} unjudged)"
        )
    return out


def _compare(mine: set, plain: set, positive: set, negative: set, consumers: set | None) -> dict:
    servers = None if consumers is None else {c.partition("::")[0] for c in consumers}
    rows = {}
    for method, pairs in (("plain join", plain), ("toolkg", mine), ("union", mine | plain)):
        kept = {p for p in pairs if servers is None or p[0].partition("::")[0] in servers}
        hits = len(kept & positive)
        labelled = len(kept & (positive | negative))
        # labels sample a big server's consumers: precision also over the labelled consumers' pairs alone
        of_labelled = {p for p in kept if consumers is None or p[0] in consumers}
        rows[method] = {
            "predicted": len(kept),
            "hits": hits,
            "recall": round(hits / len(positive), 3) if positive else 0.0,
            "precision_lower_bound": round(hits / len(kept), 3) if kept else 0.0,
            "precision_labelled": round(hits / labelled, 3) if labelled else 0.0,
            "precision_labelled_consumers": round(len(of_labelled & positive) / len(of_labelled), 3)
            if of_labelled
            else 0.0,
        }
    return rows


def print_comparison(title: str, rows: dict) -> None:
    cells = "  ".join(
        f"{m} P {r['precision_lower_bound']:.3f} ({r['precision_labelled_consumers']:.3f}) / R {r['recall']:.3f} "
        f"({r['predicted']})"
        for m, r in rows.items()
    )
    print(f"{title:<34}{cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-calibration", action="store_true", help="skip rule_calibration.py's LOCO tables")
    parser.add_argument("--before", type=Path, help="predictions of another checkout (rule_calibration.py --predict)")
    args = parser.parse_args()
    tools = [t for path in FILES for t in _load(path)]
    by_name = {t.name: t.id for t in tools}
    gold = {
        (t.id, by_name[d.target]): KIND_ALIASES.get(d.kind, d.kind)
        for t in tools
        for d in t.depends_on
        if d.target in by_name
    }
    hidden = [t.model_copy(update={"depends_on": ()}) for t in tools]  # inference never sees the declared edges
    predicted, seconds = _inferred(hidden)
    overall = _prf(len(predicted.keys() & gold.keys()), len(predicted), len(gold))
    versus = _compare(set(predicted), {(e.consumer, e.producer) for e in plain_join(hidden)}, set(gold), set(), None)
    kinds = sorted(set(gold.values()) | {e.kind for e in predicted.values()})
    per_kind = {}
    for kind in kinds:
        g = {pair for pair, k in gold.items() if k == kind}
        p = {pair for pair, e in predicted.items() if e.kind == kind}
        per_kind[kind] = _prf(len(g & p), len(p), len(g))
    per_rule = {}
    for rule in sorted({e.rule for e in predicted.values()}):
        p = {pair for pair, e in predicted.items() if e.rule == rule}
        per_rule[rule] = {"predicted": len(p), "precision": round(len(p & gold.keys()) / len(p), 3)}
    gold_graph, inferred_graph = defaultdict(set), defaultdict(set)
    for consumer, producer in gold:
        gold_graph[consumer].add(producer)
    for consumer, producer in predicted:
        inferred_graph[consumer].add(producer)
    shares = []
    for t in tools:
        wanted = _closure(gold_graph, t.id)
        if wanted:
            shares.append(len(wanted & _closure(inferred_graph, t.id)) / len(wanted))
    reach = round(sum(shares) / len(shares), 3)
    missed = Counter(producer for pair in gold.keys() - predicted.keys() for producer in [pair[1]])

    print(
        f"ToolLinkOS: {len(tools)} tools, {len(gold)} declared edges (hidden), "
        f"{len(predicted)} inferred in {seconds:.2f}s"
    )
    print(f"{'':<30}{'P':>7}{'R':>7}{'F1':>7}{'pred':>7}{'gold':>7}")
    for name, row in [("overall (pair)", overall), *per_kind.items()]:
        print(
            f"{name:<30}{row['precision']:>7.3f}{row['recall']:>7.3f}{row['f1']:>7.3f}{row['predicted']:>7}{row['gold']:>7}"
        )
    for rule, row in per_rule.items():
        print(f"rule {rule:<25} {row['predicted']:>6} edges, precision {row['precision']:.3f}")
    print_comparison("  versus the plain join", versus)
    print(f"declared transitive dependencies reachable through inferred edges (mean per tool): {reach:.3f}")
    print("most-missed producers:", ", ".join(f"{n.split('::')[1]} {c}" for n, c in missed.most_common(8)))
    RESULTS.mkdir(parents=True, exist_ok=True)
    calibration = {}
    if not args.no_calibration:
        from benchmarks.rule_calibration import print_report, run

        before = json.loads(args.before.read_text(encoding="utf-8")) if args.before else None
        calibration = {"calibration": run(before)}
        print_report(calibration["calibration"])
    out = RESULTS / "inference.json"
    out.write_text(
        json.dumps(
            {
                **calibration,
                "overall": overall,
                "versus_plain_join": versus,
                "per_kind": per_kind,
                "per_rule": per_rule,
                "transitive_reach": reach,
                "seconds": seconds,
                "missed_producers": dict(missed.most_common(20)),
                **{name: real_catalog(name) for name in LABEL_SETS if read_labels(name)},
                "observed": {name: observed_recall(name) for name in OBSERVED_SETS},
            },
            indent=2,
        )
    )
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
