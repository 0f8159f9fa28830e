"""Build benchmark: time per stage, Prefect start-up, throughput and peak memory.

Each case runs in a fresh Python process (fresh store, temporary Prefect server) that builds the catalog
once, then again unchanged (the incremental skip). Prints a table and writes benchmarks/results/build.json.

    python benchmarks/build_bench.py                      # sample catalogs + synthetic 10k and 100k
    python benchmarks/build_bench.py --sizes 10000        # fewer synthetic sizes
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

CHILD = r"""
import json, resource, sys, time
started = time.perf_counter()
from toolkg.flows.build import build_catalog
imported = time.perf_counter() - started
paths, store = json.loads(sys.argv[1]), sys.argv[2]
t0 = time.perf_counter(); first = build_catalog(paths=paths, store_dir=store); wall = time.perf_counter() - t0
t1 = time.perf_counter(); again = build_catalog(paths=paths, store_dir=store); rerun = time.perf_counter() - t1
print(json.dumps({
    "import_seconds": imported, "wall_seconds": wall, "stage_seconds": first.stage_seconds,
    "pipeline_seconds": first.pipeline_seconds,
    "rerun_wall_seconds": rerun, "rerun_stage_seconds": again.stage_seconds, "tools": first.totals["tools"],
    "quads": first.totals["quads"], "quarantined": len(first.quarantined), "rerun_skipped": len(again.skipped),
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "peak_worker_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
}))
"""


def run_case(name: str, paths: list[Path]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env_home = Path(tmp) / "prefect"
        env = {
            "PREFECT_HOME": str(env_home),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_LOGGING_LEVEL": "CRITICAL",
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
            "PATH": "/usr/bin:/bin",
        }
        out = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps([str(p) for p in paths]), str(Path(tmp) / "s")],
            capture_output=True,
            text=True,
            env=env,
            timeout=3600,
        )
        if out.returncode != 0:
            raise SystemExit(f"{name}: benchmark child failed:\n{out.stderr[-3000:]}")
        result = json.loads(out.stdout.strip().splitlines()[-1])
    pipeline = sum(result["stage_seconds"].values())
    result.update(
        case=name,
        pipeline_seconds=pipeline,
        prefect_seconds=result["wall_seconds"] - pipeline,
        tools_per_second=result["tools"] / pipeline if pipeline else 0.0,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="synthetic catalog sizes, comma separated ('' = none)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from synthetic import generate

    cases = [
        ("livemcpbench (527)", [ROOT / "data/livemcpbench/tools.json"]),
        ("toollinkos (573)", [ROOT / "data/toollinkos"]),
    ]
    with tempfile.TemporaryDirectory() as synth:
        for size in [int(s) for s in args.sizes.split(",") if s]:
            cases.append((f"synthetic {size}", generate(size, Path(synth) / str(size))))
        results = []
        header = (
            f"{'case':<20} {'tools':>7} {'quads':>9} {'ingest':>7} {'semantic':>8} {'extract':>8} {'validate':>9} "
            f"{'load':>7} {'infer':>7} {'link':>7} "
            f"{'pipeline':>9} {'tools/s':>8} {'prefect':>8} {'rerun':>6} {'peak MB':>8} {'workers MB':>10}"
        )
        print(header)
        print("-" * len(header))
        for name, paths in cases:
            started = time.perf_counter()
            r = run_case(name, paths)
            s = r["stage_seconds"]
            print(
                f"{name:<20} {r['tools']:>7} {r['quads']:>9} {s.get('ingest', 0):>7.2f} "
                f"{s.get('extract-semantic', 0):>8.2f} "
                f"{s.get('extract', 0):>8.2f} "
                f"{s.get('validate', 0):>9.2f} {s.get('load', 0):>7.2f} {s.get('infer', 0):>7.2f} "
                f"{s.get('link', 0):>7.2f} {r['pipeline_seconds']:>9.2f} "
                f"{r['tools_per_second']:>8.0f} {r['prefect_seconds']:>8.2f} {r['rerun_wall_seconds']:>6.2f} "
                f"{r['peak_rss_mb']:>8.0f} {r['peak_worker_rss_mb']:>10.0f}",
                flush=True,
            )
            r["case_seconds"] = time.perf_counter() - started
            results.append(r)
    RESULTS.mkdir(parents=True, exist_ok=True)
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}
    (RESULTS / "build.json").write_text(json.dumps({"machine": machine, "results": results}, indent=2))
    print(
        f"\nwrote {RESULTS / 'build.json'}  (pipeline = wall time of the flow body; "
        "prefect = flow wall time - pipeline; rerun = unchanged second build, wall)"
    )


if __name__ == "__main__":
    main()
