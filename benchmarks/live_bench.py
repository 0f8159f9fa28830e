"""Live MCP listing benchmark: the six pinned real servers (``make mcp-servers``) listed with toolkg.live.

For each server: the seconds from spawning it to its last ``tools/list`` page (the median of ``--repeat``
listings one at a time), its tool count and pages; then all six listed together at concurrency 1 and 4
(wall time), and a whole ``toolkg build`` of the configuration cold (empty store) and warm (nothing changed).

Prints a table and writes benchmarks/results/live.json.

    python -m benchmarks.live_bench [--repeat 5]
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be 1 or more")
    os.environ["CI"] = ""  # a missing server install is reported, not failed on
    from tests.support.live_helpers import real_servers
    from toolkg.live import list_servers
    from toolkg.live.sources import client_spec

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        entries = real_servers(ROOT, folder)
        specs = [client_spec("bench", name, entry) for name, entry in entries.items()]
        rows = []
        for spec in specs:
            listings = []
            for _ in range(args.repeat):
                run = list_servers([spec], timeout=120)
                assert not run.failures, run.failures[0].reason
                listings.append(run.listings[0])
            listing, times = listings[-1], [one.seconds for one in listings]
            rows.append(
                {
                    "server": spec.name,
                    "reached": f"{spec.transport} {Path(spec.command).name}",
                    "tools": len(listing.tools),
                    "pages": listing.pages,
                    "median_s": round(statistics.median(times), 3),
                    "min_s": round(min(times), 3),
                }
            )
        together = {}
        for concurrency in (1, 4):
            started = time.perf_counter()
            run = list_servers(specs, timeout=120, concurrency=concurrency)
            together[concurrency] = round(time.perf_counter() - started, 3)
            assert len(run.listings) == 6
        config = folder / "claude_desktop_config.json"
        config.write_text(json.dumps({"mcpServers": entries}))
        builds = {}
        for label in ("cold", "warm"):
            started = time.perf_counter()
            done = subprocess.run(
                [
                    str(Path(sys.executable).with_name("toolkg")),
                    "build",
                    str(config),
                    "--store",
                    str(folder / "s"),
                    "--json",
                    "-q",
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            summary = json.loads(done.stdout)
            builds[label] = {
                "wall_s": round(time.perf_counter() - started, 2),
                "pipeline_s": summary["pipeline_seconds"],
                "list_s": summary["stage_seconds"].get("list"),
                "tools": summary["totals"].get("tools"),
                "statuses": sorted({s["status"] for s in summary["live"]}),
            }
    print(f"{'server':<12} {'reached':<32} {'tools':>5} {'pages':>5} {'median s':>9} {'min s':>7}")
    for r in rows:
        print(
            f"{r['server']:<12} {r['reached']:<32} {r['tools']:>5} {r['pages']:>5} {r['median_s']:>9.3f} "
            f"{r['min_s']:>7.3f}"
        )
    print(f"all six together: {together[1]:.2f}s one at a time, {together[4]:.2f}s four at a time")
    for label, b in builds.items():
        print(
            f"toolkg build of the configuration, {label}: wall {b['wall_s']:.2f}s, pipeline {b['pipeline_s']:.2f}s "
            f"(listing {b['list_s']:.2f}s), {b['tools']} tools, servers {', '.join(b['statuses'])}"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {"repeat": args.repeat, "servers": rows, "together_s": together, "builds": builds}
    (RESULTS / "live.json").write_text(json.dumps(out, indent=2))
    print(f"wrote {RESULTS / 'live.json'}")


if __name__ == "__main__":
    main()
