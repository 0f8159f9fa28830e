"""The LLM extractor against a real server: llama.cpp's llama-server and SmolLM2-135M-Instruct (``make llm``).

On a slice of about 100 LiveMCPBench tools (whole servers: the gold servers of the queries in file order
while they fit, then the smallest other servers, the last one cut to the size), builds one store with the
offline extractor and one with ``--extractor llm``, both with the real CLI, and reports:

- tools per minute and tokens per tool of the LLM's extraction, its re-ask and quarantine rates and the
  structured output the probe chose (from the run summary: the server's own token counts);
- agreement with the offline extractor per tool: business objects (hasEntity), capabilities
  (hasCapability) and all entities (any typed node the tool's extraction graph names), as micro
  precision / recall / F1 of the LLM's canonical labels against the rules' (the rules as reference);
- what the LLM's triples change in retrieval: every method on the queries whose gold tools are all in the
  slice (both halves of the split: nothing is tuned here), Recall@10, CompleteRecall@10 and nDCG@10 on
  each store, and the difference.

Prints a table and writes benchmarks/results/llm.json. The LLM's answers are cached in
benchmarks/results/llm-cache.sqlite: a second run re-measures the rest in minutes (``--fresh`` clears it).

    python -m benchmarks.llm_bench                     # the pinned llama-server, started and stopped here
    python -m benchmarks.llm_bench --base-url http://127.0.0.1:11434/v1 --model qwen2.5:7b-instruct
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from tests.support import llama_cpp
from tests.support.llama_server import LlamaServer

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
TOOLKG = Path(sys.executable).with_name("toolkg")
DATA = ROOT / "data" / "livemcpbench"
METHODS = ["auto", "bm25", "dense", "hybrid", "grtf", "ego", "agent"]
AGREEMENT = {"business objects": "hasEntity", "capabilities": "hasCapability", "entities": None}


def slice_catalog(size: int) -> tuple[list[dict], list[dict]]:
    """(catalog entries of about ``size`` tools, the queries whose gold tools they all hold)."""
    entries = json.loads((DATA / "tools.json").read_text())
    by_server = {name: e for e in entries for name in e["tools"]}
    tools_of = {name: len(e["tools"][name]["tools"]) for name, e in by_server.items()}
    queries = [json.loads(line) for line in (DATA / "queries.jsonl").read_text().splitlines() if line.strip()]
    chosen: list[str] = []
    for query in queries:
        new = [s for s in query["gold_servers"] if s in by_server and s not in chosen]
        if new and sum(tools_of[s] for s in chosen + new) <= size:
            chosen += new
    for name in sorted(set(by_server) - set(chosen), key=lambda s: (tools_of[s], s)):
        if sum(tools_of[s] for s in chosen) >= size:
            break
        chosen.append(name)
    catalog, count = [], 0
    for name in chosen:
        entry = json.loads(json.dumps(by_server[name]))
        entry["tools"] = {name: entry["tools"][name]}
        listed = entry["tools"][name]["tools"]
        listed[:] = listed[: size - count]
        count += len(listed)
        catalog.append(entry)
    held = {f"{name}::{t['name']}" for e in catalog for name, s in e["tools"].items() for t in s["tools"]}
    covered = [q for q in queries if q["gold_tools"] and set(q["gold_tools"]) <= held]
    return catalog, covered


def build(catalog: Path, store: Path, env: dict[str, str], *flags: str) -> tuple[dict, float]:
    started = time.perf_counter()
    result = subprocess.run(
        [str(TOOLKG), "build", str(catalog), "--store", str(store), "--json", "-q", *flags],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=ROOT,
    )
    seconds = time.perf_counter() - started
    if result.returncode not in (0, 3) or "Traceback" in result.stderr:
        sys.exit(f"build of {store} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return json.loads(result.stdout), seconds


def facts(store: Path) -> dict[str, dict[str, set[str]]]:
    """tool id -> {"hasEntity": labels, "hasCapability": labels, None: every entity label}, from the
    extraction graphs."""
    from toolkg.ontology import TK_NS
    from toolkg.ontology.schema import ENTITY_TYPES
    from toolkg.store.oxigraph_store import ToolStore

    out: dict[str, dict] = defaultdict(lambda: defaultdict(set))
    kinds = " ".join(f"tk:{k}" for k in ENTITY_TYPES)
    with ToolStore(store, read_only=True) as graph:
        rows = graph.select(f"""SELECT ?id ?p ?label WHERE {{
            ?g a tk:Extraction ; tk:extractionOf ?t . ?t tk:identifier ?id .
            GRAPH ?g {{ ?s ?p ?e }} ?e a ?type ; rdfs:label ?label . VALUES ?type {{ {kinds} }} }}""")
    for row in rows:
        tool, relation, label = row["id"].value, row["p"].value.removeprefix(TK_NS), row["label"].value
        out[tool][None].add(label)
        out[tool][relation].add(label)
    return out


def agreement(llm: dict, offline: dict, tools: set[str]) -> dict:
    """Micro precision / recall / F1 of the LLM's labels against the rules', per kind, over ``tools``."""
    report = {}
    for name, relation in AGREEMENT.items():
        both = said = reference = 0
        for tool in tools:
            mine, theirs = llm.get(tool, {}).get(relation, set()), offline.get(tool, {}).get(relation, set())
            both, said, reference = both + len(mine & theirs), said + len(mine), reference + len(theirs)
        precision = both / said if said else 0.0
        recall = both / reference if reference else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        report[name] = {
            "llm": said,
            "offline": reference,
            "shared": both,
            "precision": round(precision, 3),
            "recall": round(recall, 3),
            "f1": round(f1, 3),
        }
    return report


def retrieval(store: Path, queries: Path) -> dict:
    from toolkg import progress
    from toolkg.retrieval import Index, read_queries
    from toolkg.retrieval.evaluate import evaluate

    progress.enable(False)
    rows = read_queries(queries)
    index = Index(store)
    try:
        result = evaluate(index, rows, METHODS, [10])
    finally:
        index.close()
    return {
        method: {metric: round(values["metrics"][metric][10], 3) for metric in ("recall", "complete_recall", "ndcg")}
        for method, values in result["methods"].items()
    }


def machine() -> str:
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{platform.machine()}, {os.cpu_count()} cores ({cpu}), load average {os.getloadavg()[0]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", type=int, default=100)
    parser.add_argument("--base-url", help="an OpenAI-compatible server already running (default: the pinned one)")
    parser.add_argument("--model", default=llama_cpp.MODEL_NAME)
    parser.add_argument("--concurrency", type=int, default=2, help="requests in flight (the server's slots)")
    parser.add_argument("--fresh", action="store_true", help="forget the cached LLM answers first")
    args = parser.parse_args()

    RESULTS.mkdir(parents=True, exist_ok=True)
    cache = RESULTS / "llm-cache.sqlite"
    if args.fresh:
        cache.unlink(missing_ok=True)
    entries, queries = slice_catalog(args.tools)
    report: dict = {"machine": machine(), "model": args.model, "queries": len(queries)}
    with tempfile.TemporaryDirectory(prefix="toolkg-llm-bench-") as tmp:
        work = Path(tmp)
        catalog = work / "catalog" / "tools.json"
        catalog.parent.mkdir()
        catalog.write_text(json.dumps(entries, ensure_ascii=False))
        tools = {f"{n}::{t['name']}" for e in entries for n, s in e["tools"].items() for t in s["tools"]}
        questions = work / "queries.jsonl"
        questions.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries))
        report["tools"], report["servers"] = len(tools), sorted(n for e in entries for n in e["tools"])

        offline_summary, offline_seconds = build(catalog, work / "offline", {})
        env = {
            "TOOLKG_LLM_MODEL": args.model,
            "TOOLKG_LLM_MAX_CONCURRENCY": str(args.concurrency),
            "TOOLKG_LLM_TIMEOUT": "300",
            "TOOLKG_LLM_MAX_TOKENS": "1024",
            "TOOLKG_LLM_CACHE": str(cache),
        }
        server = None
        if args.base_url:
            env["TOOLKG_LLM_BASE_URL"] = args.base_url
        else:
            built = llama_cpp.ensure()
            report["llama_cpp"] = built["llama_cpp"]["server_version"]
            report["model_sha256"] = built["model"]["gguf_sha256"]
            server = LlamaServer(work / "server.log", slots=args.concurrency).start()
            env["TOOLKG_LLM_BASE_URL"] = server.base_url
        try:
            llm_summary, llm_seconds = build(catalog, work / "llm", env, "--extractor", "llm")
        finally:
            if server is not None:
                server.stop()
        usage = llm_summary["extraction"]
        extract_seconds = llm_summary["stage_seconds"].get("extract-semantic", llm_seconds)
        asked = usage["tools"] + usage["failed"]
        report["extraction"] = {
            "structured_output": usage.get("structured_output", ""),
            "asked": asked,
            "cache_hits": usage["cache_hits"],
            "extracted": usage["tools"],
            "quarantined": usage["failed"],
            "seconds": round(extract_seconds, 1),
            "tools_per_minute": round(60 * asked / extract_seconds, 2) if asked else None,
            "requests": usage["http_requests"],
            "probes": usage.get("probes", 0),
            "reasks": usage["reasks"],
            "reask_rate": round(usage["reasks"] / asked, 3) if asked else None,
            "quarantine_rate": round(usage["failed"] / asked, 3) if asked else None,
            "prompt_tokens_per_tool": round(usage["prompt_tokens"] / asked) if asked else None,
            "completion_tokens_per_tool": round(usage["completion_tokens"] / asked) if asked else None,
            "reasons": sorted({q["reason"][:90] for q in llm_summary["quarantined"] if q["stage"] == "extract"})[:8],
        }
        report["build_seconds"] = {"offline": round(offline_seconds, 1), "llm": round(llm_seconds, 1)}
        llm_facts, offline_facts = facts(work / "llm"), facts(work / "offline")
        extracted = {t for t in tools if t in llm_facts}
        report["agreement"] = agreement(llm_facts, offline_facts, extracted)
        report["agreement_tools"] = len(extracted)
        report["retrieval"] = {m: retrieval(work / m, questions) for m in ("offline", "llm")}
        shutil.copy(catalog, RESULTS / "llm-catalog.json")
    print_report(report)
    out = RESULTS / "llm.json"
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


def print_report(report: dict) -> None:
    e = report["extraction"]
    print(f"== LLM extraction: {report['model']} on {report['tools']} LiveMCPBench tools ({report['machine']})")
    print(
        f"structured output {e['structured_output'] or '(none asked)'}; {e['asked']} tools asked in {e['seconds']} s "
        f"= {e['tools_per_minute']} tools/min; {e['requests']} requests + {e['probes']} probe(s), "
        f"{e['cache_hits']} cache hits"
    )
    print(
        f"tokens per tool {e['prompt_tokens_per_tool']} in / {e['completion_tokens_per_tool']} out; re-asks per tool "
        f"{e['reask_rate']}; quarantined {e['quarantined']} ({e['quarantine_rate']})"
    )
    for reason in e["reasons"]:
        print(f"  quarantined: {reason}")
    print(f"\n== agreement with the offline extractor ({report['agreement_tools']} tools the LLM extracted)")
    print(f"{'':<18}{'LLM':>6}{'rules':>7}{'shared':>8}{'precision':>11}{'recall':>8}{'F1':>7}")
    for name, a in report["agreement"].items():
        print(
            f"{name:<18}{a['llm']:>6}{a['offline']:>7}{a['shared']:>8}{a['precision']:>11.3f}{a['recall']:>8.3f}"
            f"{a['f1']:>7.3f}"
        )
    print(f"\n== retrieval on the {report['queries']} queries the slice answers (@10; offline -> LLM)")
    print(f"{'method':<8}{'recall':>20}{'complete recall':>22}{'nDCG':>20}")
    offline, llm = report["retrieval"]["offline"], report["retrieval"]["llm"]
    for method in offline:
        cells = "".join(
            f"{offline[method][m]:>11.3f} -> {llm[method][m]:.3f}" for m in ("recall", "complete_recall", "ndcg")
        )
        print(f"{method:<8}{cells}")


if __name__ == "__main__":
    main()
