"""Search, then call, through `toolkg mcp` (issue 32): what an agent waits for on mcp-server-time.

Builds a store from a client configuration naming the pinned real servers mcp-server-time and filesystem
(``make mcp-servers``; the in-process build core, no Prefect server), then, ``--cold`` times over, starts
`toolkg mcp --allow-call` over stdio with the MCP SDK's client and times: the start (spawn to initialized),
the first search_tools, the first call_tool (it opens the session to mcp-server-time), then ``--rounds``
warm rounds of search_tools alone, call_tool alone, and search_tools followed by call_tool of the hit found.
Prints a table (median and p90 in ms) and writes benchmarks/results/calls.json. Target: warm search+call
<= 1 s.

    .venv/bin/python -m benchmarks.call_bench [--rounds 30] [--cold 3] [--store DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
TOOLKG = Path(sys.executable).with_name("toolkg")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

QUERY = "what time is it now in a given timezone"
TOOL = "time::get_current_time"
ARGUMENTS = {"timezone": "Asia/Tokyo"}


def build(store: Path, folder: Path) -> None:
    os.environ["CI"] = ""  # a missing server install is reported by real_servers, not failed on
    from tests.support.live_helpers import real_servers
    from toolkg.config import BuildConfig
    from toolkg.flows.pipeline import run_pipeline

    servers = real_servers(ROOT, folder)
    config = folder / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {k: servers[k] for k in ("time", "filesystem")}}))
    summary = run_pipeline([str(config)], str(store), BuildConfig())
    if summary.exit_code != 0:
        sys.exit(f"the build failed: {[str(q) for q in summary.quarantined]}")


@dataclass
class Timings:
    """One ``toolkg mcp`` process, in seconds: its start and first calls once, the warm rounds one each."""

    start: float = 0.0
    first_search: float = 0.0
    first_call: float = 0.0
    search: list[float] = field(default_factory=list)
    call: list[float] = field(default_factory=list)
    search_call: list[float] = field(default_factory=list)


async def one_server(store: Path, rounds: int) -> Timings:
    """One `toolkg mcp` process: its cold start and first calls, then ``rounds`` warm ones (seconds)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    parameters = StdioServerParameters(command=str(TOOLKG), args=["mcp", "--store", str(store), "--allow-call"])
    times = Timings()

    async def search(client) -> str:
        found = await client.call_tool("search_tools", {"query": QUERY, "k": 5})
        ids = [t["id"] for t in found.structured_content["tools"]]
        assert TOOL in ids, ids
        return TOOL

    async def call(client, tool: str) -> None:
        result = await client.call_tool("call_tool", {"id": tool, "arguments": ARGUMENTS})
        assert not result.is_error, result.content

    started = time.perf_counter()
    async with Client(parameters, mode="legacy") as client:
        times.start = time.perf_counter() - started
        mark = time.perf_counter()
        await search(client)
        times.first_search = time.perf_counter() - mark
        mark = time.perf_counter()
        await call(client, TOOL)
        times.first_call = time.perf_counter() - mark
        for _ in range(rounds):
            mark = time.perf_counter()
            await search(client)
            times.search.append(time.perf_counter() - mark)
            mark = time.perf_counter()
            await call(client, TOOL)
            times.call.append(time.perf_counter() - mark)
            mark = time.perf_counter()
            await call(client, await search(client))
            times.search_call.append(time.perf_counter() - mark)
    return times


def summary(values: list[float]) -> dict[str, float]:
    ms = sorted(v * 1000 for v in values)
    p90 = statistics.quantiles(ms, n=10, method="inclusive")[8] if len(ms) > 1 else ms[0]
    return {"n": len(ms), "median_ms": round(statistics.median(ms), 1), "p90_ms": round(p90, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="warm rounds per toolkg mcp process (default 30)")
    parser.add_argument("--cold", type=int, default=3, help="toolkg mcp processes started (default 3)")
    parser.add_argument("--store", type=Path, help="a store already built from such a configuration")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        store = args.store
        if store is None:
            store = Path(scratch) / "store"
            started = time.perf_counter()
            build(store, Path(scratch))
            print(f"built {store} in {time.perf_counter() - started:.1f}s", file=sys.stderr)
        runs = [anyio.run(one_server, store, args.rounds) for _ in range(args.cold)]
    rows = {
        "toolkg mcp start": summary([r.start for r in runs]),
        "first search_tools": summary([r.first_search for r in runs]),
        "cold first call_tool": summary([r.first_call for r in runs]),
        "warm search_tools": summary([v for r in runs for v in r.search]),
        "warm call_tool": summary([v for r in runs for v in r.call]),
        "warm search + call": summary([v for r in runs for v in r.search_call]),
    }
    print(f"{'step':<22} {'n':>4} {'median ms':>10} {'p90 ms':>8}")
    for step, row in rows.items():
        print(f"{step:<22} {row['n']:>4} {row['median_ms']:>10.1f} {row['p90_ms']:>8.1f}")
    target = rows["warm search + call"]["p90_ms"] <= 1000
    print(f"target warm search + call <= 1 s: {'met' if target else 'NOT met'} (p90)")
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    out = {"query": QUERY, "tool": TOOL, "rounds": args.rounds, "cold": args.cold, "load_avg": load, "steps": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "calls.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {RESULTS / 'calls.json'}")


if __name__ == "__main__":
    main()
