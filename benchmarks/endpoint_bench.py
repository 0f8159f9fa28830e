"""`toolkg serve` under concurrent clients: latency percentiles and errors, per client count.

Starts `toolkg serve` on a store (default: the LiveMCPBench catalog built into a temporary store), then for each
client count runs that many threads, each sending ``--queries`` SPARQL queries one after another over a new
connection each (form POST to /query): a mix of what analysts run (counts, a server's tools, a tool's
transitive dependencies, a text filter). Prints a table and writes JSON. Target: 20 clients, p95 <= 200 ms,
0 errors.

    .venv/bin/python benchmarks/endpoint_bench.py [--store DIR] [--clients 1,5,20,50] [--queries 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLKG = Path(sys.executable).with_name("toolkg")


def workload(base: str) -> list[str]:
    """Queries in the mix; the parameterised saved ones are rendered by the endpoint, as the UI does."""

    def saved(name: str, **params: str) -> str:
        url = base + "/saved-queries/render?" + urllib.parse.urlencode({"name": name, **params})
        return json.loads(urllib.request.urlopen(url, timeout=30).read())["query"]

    return [
        "SELECT (COUNT(DISTINCT ?t) AS ?n) WHERE { ?t a tk:Tool }",
        "SELECT ?s (COUNT(?t) AS ?n) WHERE { ?t tk:server ?s } GROUP BY ?s ORDER BY DESC(?n) LIMIT 10",
        saved("server-tools", server="filesystem"),
        saved("transitive-dependencies", tool="filesystem::write_file"),
        'SELECT ?id WHERE { ?t a tk:Tool ; tk:identifier ?id ; tk:description ?d FILTER(CONTAINS(LCASE(?d), "file")) }',
        "ASK { ?t tk:dependsOn ?u }",
    ]


def one(base: str, query: str) -> tuple[float, int]:
    data = urllib.parse.urlencode({"query": query}).encode()
    req = urllib.request.Request(base + "/query", data=data, headers={"Accept": "application/sparql-results+json"})
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError:
        status = 0
    return (time.perf_counter() - started) * 1000, status


def run(base: str, queries: list[str], clients: int, per_client: int) -> dict:
    def client(i: int) -> list[tuple[float, int]]:
        return [one(base, queries[(i + j) % len(queries)]) for j in range(per_client)]

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = [r for batch in pool.map(client, range(clients)) for r in batch]
    wall = time.perf_counter() - started
    latencies = sorted(ms for ms, _ in results)
    errors = sum(1 for _, status in results if status != 200)
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    return {
        "clients": clients,
        "requests": len(results),
        "errors": errors,
        "p50_ms": round(q[49], 1),
        "p95_ms": round(q[94], 1),
        "p99_ms": round(q[98], 1),
        "max_ms": round(latencies[-1], 1),
        "throughput_qps": round(len(results) / wall, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", help="a built store (default: build data/livemcpbench/tools.json)")
    parser.add_argument("--clients", default="1,5,20,50", help="client counts to run (default 1,5,20,50)")
    parser.add_argument("--queries", type=int, default=50, help="queries per client (default 50)")
    parser.add_argument("--port", type=int, default=7897)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "endpoint.json"))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        store = args.store
        if not store:
            store = str(Path(tmp) / "store")
            print("building the LiveMCPBench store ...", file=sys.stderr)
            subprocess.run(
                [str(TOOLKG), "build", str(ROOT / "data" / "livemcpbench" / "tools.json"), "--store", store, "-q"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        base = f"http://127.0.0.1:{args.port}"
        server = subprocess.Popen(
            [str(TOOLKG), "serve", "--store", store, "--bind", f"127.0.0.1:{args.port}"],
            stderr=subprocess.DEVNULL,
            env=os.environ.copy(),
        )
        try:
            for _ in range(300):
                try:
                    urllib.request.urlopen(base + "/status", timeout=2).read()
                    break
                except OSError:
                    time.sleep(0.1)
            queries = workload(base)
            for query in queries:  # warm: every query answers, and Oxigraph's caches are loaded
                assert one(base, query)[1] == 200, query
            rows = [run(base, queries, int(c), args.queries) for c in args.clients.split(",")]
            status = json.loads(urllib.request.urlopen(base + "/status", timeout=5).read())
        finally:
            server.terminate()
            server.wait(10)
    columns = [("clients", 7), ("requests", 8), ("errors", 6), ("p50 ms", 7), ("p95 ms", 7), ("p99 ms", 7)]
    print(" ".join(f"{name:>{width}}" for name, width in [*columns, ("max ms", 7), ("q/s", 6)]))
    for r in rows:
        print(
            f"{r['clients']:>7} {r['requests']:>8} {r['errors']:>6} {r['p50_ms']:>7} {r['p95_ms']:>7} "
            f"{r['p99_ms']:>7} {r['max_ms']:>7} {r['throughput_qps']:>6}"
        )
    target = next((r for r in rows if r["clients"] == 20), None)
    if target:
        met = target["p95_ms"] <= 200 and target["errors"] == 0
        print(f"target (20 clients: p95 <= 200 ms, 0 errors): {'met' if met else 'NOT met'}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {"store": store, "cpus": os.cpu_count(), "backend_restarts": status["backend"]["restarts"], "runs": rows}
    out.write_text(json.dumps(report, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
