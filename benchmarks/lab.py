"""A fast retrieval lab: rank functions scored on the dev sets straight from the data files (no store).

For trying ideas (tool text, tokenisation, models, fusion) in seconds before they go into toolkg's
retrievers; ``retrieval_bench.py`` measures the real thing through the CLI. Only the tuning half of
each query set is used unless ``half="report"`` is asked for (data/SPLITS.md).

    from benchmarks.lab import load, score
    catalog = load("livemcpbench")
    print(score(catalog, my_rank_function))

A rank function takes (query text, steps) and returns tool ids, best first.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.splits import half as half_of
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import discover_all, fingerprint_file
from toolkg.models import Server, Tool
from toolkg.retrieval.metrics import complete_at, gold_tools, recall_at, server_recall_at

ROOT = Path(__file__).resolve().parents[1]
CATALOGS = {
    "livemcpbench": (["data/livemcpbench/tools.json"], "data/livemcpbench/queries.jsonl"),
    "toollinkos": (["data/toollinkos"], "data/toollinkos/queries.jsonl"),
    "bfcl": (["data/bfcl/tools.json"], "data/bfcl/queries.jsonl"),
    "azure-mcp": (["data/azure-mcp/tools.json"], "data/azure-mcp/queries.jsonl"),
    "apibench": (["data/apibench/tools.json"], "data/apibench/queries.jsonl"),
}
RankFunction = Callable[[str, Sequence[str]], Sequence[str]]


@dataclass
class Catalog:
    name: str
    tools: list[Tool]
    servers: dict[str, Server]
    queries: list[dict]


def load(name: str, half: str = "tune") -> Catalog:
    paths, queries_path = CATALOGS[name]
    tools: list[Tool] = []
    servers: dict[str, Server] = {}
    for path in discover_all([str(ROOT / p) for p in paths]).files:
        file, data = fingerprint_file(Path(path), None)
        result = ingest_manifest(file, data)
        for server in result.manifest.servers if result.manifest else ():
            servers[server.id] = server
            tools += server.tools
    rows = [json.loads(line) for line in (ROOT / queries_path).open(encoding="utf-8")]
    rows = [r for r in rows if half == "all" or half_of(str(r["id"])) == half]
    return Catalog(name, sorted(tools, key=lambda t: t.id), servers, rows)


def score(catalog: Catalog, rank: RankFunction, steps: bool = True, ks: Sequence[int] = (5, 10)) -> dict[str, float]:
    """Mean Recall@k, CompleteRecall@k and server Recall@5 over the catalog's queries."""
    sums: dict[str, float] = {}
    for row in catalog.queries:
        ranked = list(rank(row["query"], row.get("steps") or () if steps else ()))
        gold = gold_tools(row)
        for k in ks:
            sums[f"R@{k}"] = sums.get(f"R@{k}", 0.0) + recall_at(ranked, gold, k)
            sums[f"CR@{k}"] = sums.get(f"CR@{k}", 0.0) + complete_at(ranked, gold, k)
        if row.get("gold_servers"):
            servers = list(dict.fromkeys(t.partition("::")[0] for t in ranked))
            sums["S@5"] = sums.get("S@5", 0.0) + server_recall_at(servers, row["gold_servers"], 5)
    return {key: round(value / max(len(catalog.queries), 1), 3) for key, value in sums.items()}
