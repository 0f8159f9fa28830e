"""Extraction benchmark: what the triple extractors produce on the sample catalogs, and how fast.

For each sample catalog: triples per tool (mean / median / max), distinct entities by ontology
type, tools whose description the rules could not read, and offline throughput (tools/s,
best of 3). Then the LLM extractor's own overhead (prompt rendering, HTTP, validation,
cache) against the test suite's fake OpenAI-compatible server with zero model latency: a
cold run (every tool a request) and a warm run (every tool a cache hit). Prints a table and
writes benchmarks/results/extraction.json.

    python -m benchmarks.extraction_bench
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from tests.support.fake_openai import FakeOpenAI
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import fingerprint_file
from toolkg.extractors.triples.llm import LLMExtractor
from toolkg.extractors.triples.offline import OfflineExtractor
from toolkg.llm.config import LLMConfig
from toolkg.text.words import entity_name

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
CATALOGS = {
    "LiveMCPBench": [ROOT / "data" / "livemcpbench" / "tools.json"],
    "ToolLinkOS": [
        ROOT / "data" / "toollinkos" / "core_tools.json",
        ROOT / "data" / "toollinkos" / "regular_tools.json",
    ],
}


def _items(paths):
    items = []
    for path in paths:
        file, data = fingerprint_file(path)
        for server in ingest_manifest(file, data).manifest.servers:
            items += [(tool, server) for tool in server.tools]
    return items


def offline_case(name: str, paths) -> dict:
    items = _items(paths)
    extractor = OfflineExtractor()
    extractor.extract(*items[0])  # load spaCy's tables outside the timing
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        results = [extractor.extract(tool, server) for tool, server in items]
        best = min(best, time.perf_counter() - started)
    per_tool = [len(r.triples) for r in results]
    entities = {(t.tail_type, entity_name(t.tail)) for r in results for t in r.triples if t.tail_type != "Parameter"}
    return {
        "catalog": name,
        "tools": len(items),
        "triples": sum(per_tool),
        "triples_per_tool_mean": round(statistics.mean(per_tool), 2),
        "triples_per_tool_median": statistics.median(per_tool),
        "triples_per_tool_max": max(per_tool),
        "entities_by_type": dict(sorted(Counter(kind for kind, _ in entities).items())),
        "relations": dict(Counter(t.relation for r in results for t in r.triples).most_common()),
        "tools_without_capability": sum(not any(t.relation == "hasCapability" for t in r.triples) for r in results),
        "descriptions_not_english": sum(any("not English" in n for n in r.notes) for r in results),
        "offline_tools_per_second": round(len(items) / best),
    }


def llm_case(paths) -> dict:
    items = _items(paths)
    with FakeOpenAI() as fake, tempfile.TemporaryDirectory() as tmp:
        config = LLMConfig(base_url=fake.base_url, model="fake", max_concurrency=4)
        extractor = LLMExtractor(config, Path(tmp) / "cache.sqlite")
        started = time.perf_counter()
        extractor.extract_many(items, "bench-cold")
        cold = time.perf_counter() - started
        started = time.perf_counter()
        extractor.extract_many(items, "bench-warm")
        warm = time.perf_counter() - started
        usage = extractor.usage()
        extractor.close()
    return {
        "tools": len(items),
        "cold_tools_per_second": round(len(items) / cold),
        "warm_tools_per_second": round(len(items) / warm),
        "http_requests": usage.http_requests,
        "cache_hits": usage.cache_hits,
    }


def main() -> None:
    cases = [offline_case(name, paths) for name, paths in CATALOGS.items()]
    llm = llm_case(CATALOGS["LiveMCPBench"])
    print(
        f"{'catalog':<14}{'tools':>6}{'triples':>9}{'per tool':>10}{'median':>8}{'max':>5}{'tools/s':>9}"
        "  entities by type"
    )
    for c in cases:
        types = ", ".join(f"{k} {v}" for k, v in c["entities_by_type"].items())
        print(
            f"{c['catalog']:<14}{c['tools']:>6}{c['triples']:>9}{c['triples_per_tool_mean']:>10}"
            f"{c['triples_per_tool_median']:>8}{c['triples_per_tool_max']:>5}{c['offline_tools_per_second']:>9}"
            f"  {types}"
        )
        print(
            f"{'':<14}no capability: {c['tools_without_capability']}, "
            f"description not English: {c['descriptions_not_english']}"
        )
    print(
        f"LLM plumbing (fake server, no model latency, LiveMCPBench {llm['tools']} tools, 4 in flight): "
        f"cold {llm['cold_tools_per_second']} tools/s ({llm['http_requests']} requests), "
        f"warm {llm['warm_tools_per_second']} tools/s ({llm['cache_hits']} cache hits)"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "extraction.json"
    out.write_text(json.dumps({"offline": cases, "llm_plumbing": llm}, indent=2))
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
