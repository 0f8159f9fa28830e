"""`toolkg serve` under concurrent clients: latency percentiles and errors, per client count.

Starts `toolkg serve` on a store (default: the LiveMCPBench catalog built into a temporary store), then for each
client count runs that many threads, each sending ``--queries`` SPARQL queries one after another over a new
connection each (form POST to /query): a mix of what analysts run (counts, a server's tools, a tool's
transitive dependencies, a text filter over descriptions). Prints a table and writes JSON. Target: 20 clients,
p95 <= 200 ms, 0 errors.

    .venv/bin/python -m benchmarks.endpoint_bench [--store DIR] [--clients 1,5,20,30,50] [--queries 50]
        [--toolkg PATH]   # another build's `toolkg` (a before/after comparison on the same store)

Other benchmarks call ``measure(store, clients, queries)`` for the same figures as a dict.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLKG = Path(sys.executable).with_name("toolkg")
TARGET = {"clients": 20, "p95_ms": 200.0}


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
        "SELECT ?id WHERE { ?t a tk:Tool ; tk:identifier ?id ; dcterms:description ?d "
        'FILTER(CONTAINS(LCASE(?d), "file")) }',
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(
    store: str | Path,
    clients: Sequence[int] = (1, 5, 20, 30, 50),
    queries: int = 50,
    *,
    toolkg: str | Path = TOOLKG,
    port: int | None = None,
) -> dict:
    """Start ``toolkg serve`` on ``store``, run the workload at each client count, stop it; the report as a dict:
    ``{"store", "cpus", "toolkg", "backend_restarts", "runs": [{clients, requests, errors, p50_ms, p95_ms, ...}]}``.
    """
    port = port or _free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [str(toolkg), "serve", "--store", str(store), "--bind", f"127.0.0.1:{port}"],
        stderr=subprocess.DEVNULL,
        env=os.environ.copy(),
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/status", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"toolkg serve did not start on {store}") from None
                time.sleep(0.1)
        mix = workload(base)
        for query in mix:  # warm: every query answers, and the store's caches are loaded
            assert one(base, query)[1] == 200, query
        rows = [run(base, mix, int(c), queries) for c in clients]
        status = json.loads(urllib.request.urlopen(base + "/status", timeout=5).read())
    finally:
        server.terminate()
        server.wait(10)
    return {
        "store": str(store),
        "cpus": os.cpu_count(),
        "toolkg": str(toolkg),
        "backend_restarts": status["backend"]["restarts"],
        "runs": rows,
    }


def print_table(report: dict) -> None:
    columns = [("clients", 7), ("requests", 8), ("errors", 6), ("p50 ms", 7), ("p95 ms", 7), ("p99 ms", 7)]
    print(" ".join(f"{name:>{width}}" for name, width in [*columns, ("max ms", 7), ("q/s", 6)]))
    for r in report["runs"]:
        print(
            f"{r['clients']:>7} {r['requests']:>8} {r['errors']:>6} {r['p50_ms']:>7} {r['p95_ms']:>7} "
            f"{r['p99_ms']:>7} {r['max_ms']:>7} {r['throughput_qps']:>6}"
        )
    target = next((r for r in report["runs"] if r["clients"] == TARGET["clients"]), None)
    if target:
        met = target["p95_ms"] <= TARGET["p95_ms"] and target["errors"] == 0
        print(f"target (20 clients: p95 <= 200 ms, 0 errors): {'met' if met else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", help="a built store (default: build data/livemcpbench/tools.json)")
    parser.add_argument("--clients", default="1,5,20,30,50", help="client counts to run (default 1,5,20,30,50)")
    parser.add_argument("--queries", type=int, default=50, help="queries per client (default 50)")
    parser.add_argument("--port", type=int, help="the endpoint's port (default: a free one)")
    parser.add_argument("--toolkg", default=str(TOOLKG), help="the `toolkg` to serve with (default: this venv's)")
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
        clients = [int(c) for c in args.clients.split(",")]
        report = measure(store, clients, args.queries, toolkg=args.toolkg, port=args.port)
    print_table(report)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
