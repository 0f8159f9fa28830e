"""Dependency-inference benchmark: inferred edges scored against ToolLinkOS's declared ones.

The catalog is read with its declared dependencies hidden from inference; the inferred
(consumer, producer) pairs are compared with the declared pairs: precision, recall and F1
overall and per kind (a per-kind hit needs the same kind), and the share of each tool's
declared transitive dependencies reachable through inferred edges. Prints a table and writes
benchmarks/results/inference.json. Targets (offline, no LLM): precision >= 0.80, recall >= 0.60.

    python benchmarks/inference_bench.py
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from toolkg.canonicalize.inference import infer_dependencies
from toolkg.extractors.ingest import ingest_manifest
from toolkg.extractors.reading import fingerprint_file

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
FILES = [ROOT / "data" / "toollinkos" / "core_tools.json", ROOT / "data" / "toollinkos" / "regular_tools.json"]
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


def main() -> None:
    tools = []
    for path in FILES:
        file, data = fingerprint_file(path)
        tools += [t for s in ingest_manifest(file, data).manifest.servers for t in s.tools]
    by_name = {t.name: t.id for t in tools}
    gold = {
        (t.id, by_name[d.target]): KIND_ALIASES.get(d.kind, d.kind)
        for t in tools
        for d in t.depends_on
        if d.target in by_name
    }
    hidden = [t.model_copy(update={"depends_on": ()}) for t in tools]  # inference never sees the declared edges
    started = time.perf_counter()
    edges = infer_dependencies(hidden)
    seconds = time.perf_counter() - started
    predicted = {}
    for e in edges:
        predicted.setdefault((e.consumer, e.producer), e)
    overall = _prf(len(predicted.keys() & gold.keys()), len(predicted), len(gold))
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
    print(f"declared transitive dependencies reachable through inferred edges (mean per tool): {reach:.3f}")
    print("most-missed producers:", ", ".join(f"{n.split('::')[1]} {c}" for n, c in missed.most_common(8)))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "inference.json"
    out.write_text(
        json.dumps(
            {
                "overall": overall,
                "per_kind": per_kind,
                "per_rule": per_rule,
                "transitive_reach": reach,
                "seconds": seconds,
                "missed_producers": dict(missed.most_common(20)),
            },
            indent=2,
        )
    )
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
