"""Build benchmark: time per stage, Prefect start-up, throughput and peak memory.

Each case runs in a fresh Python process (fresh store, temporary Prefect server) that builds the catalog
once, then again unchanged (the incremental skip). Caches start cold (the store's embedding and extraction
caches are inside it); the small catalogs also run warm: a second fresh process builds a fresh store seeded
with the first one's caches. Peak memory is the highest RSS sum over the build's processes (toolkg.stages),
per stage. Prints two tables (seconds, MiB) and writes benchmarks/results/build.json.

    python -m benchmarks.build_bench                      # sample catalogs, the public mix, synthetic 10k and 100k
    python -m benchmarks.build_bench --sizes 10000        # fewer synthetic sizes
    python -m benchmarks.build_bench --sizes 100000 --one-file 100000   # also as one manifest
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

from toolkg.stages import StageName

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

CHILD = r"""
import json, resource, shutil, sys, time
from pathlib import Path
started = time.perf_counter()
from toolkg.flows.build import build_catalog
imported = time.perf_counter() - started
paths, store, seed = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
if seed:  # warm caches: another build's embedding and extraction caches
    shutil.copytree(Path(seed) / "cache", Path(store) / "cache")
t0 = time.perf_counter(); first = build_catalog(paths=paths, store_dir=store); wall = time.perf_counter() - t0
t1 = time.perf_counter(); again = build_catalog(paths=paths, store_dir=store); rerun = time.perf_counter() - t1
print(json.dumps({
    "import_seconds": imported, "wall_seconds": wall, "stage_seconds": first.stage_seconds,
    "pipeline_seconds": first.pipeline_seconds, "stage_peak_mb": first.stage_peak_mb,
    "rerun_wall_seconds": rerun, "rerun_stage_seconds": again.stage_seconds, "tools": first.totals["tools"],
    "quads": first.totals["quads"], "quarantined": len(first.quarantined), "rerun_skipped": len(again.skipped),
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "peak_worker_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
}))
"""


def run_case(name: str, paths: list[Path], warm: bool = False) -> list[dict]:
    """The case cold, and warm too when asked: one result per run."""
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        env_home = Path(tmp) / "prefect"
        env = {
            "PREFECT_HOME": str(env_home),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_LOGGING_LEVEL": "CRITICAL",
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
            "PATH": "/usr/bin:/bin",
        }
        runs = [(name, Path(tmp) / "cold", "")] + (
            [(f"{name} warm", Path(tmp) / "warm", str(Path(tmp) / "cold"))] if warm else []
        )
        for label, store, seed in runs:
            out = subprocess.run(
                [sys.executable, "-c", CHILD, json.dumps([str(p) for p in paths]), str(store), seed],
                capture_output=True,
                text=True,
                env=env,
                timeout=3600,
            )
            if out.returncode != 0:
                raise SystemExit(f"{label}: benchmark child failed:\n{out.stderr[-3000:]}")
            result = json.loads(out.stdout.strip().splitlines()[-1])
            pipeline = sum(result["stage_seconds"].values())
            result.update(
                case=label,
                pipeline_seconds=pipeline,
                prefect_seconds=result["wall_seconds"] - pipeline,
                tools_per_second=result["tools"] / pipeline if pipeline else 0.0,
                peak_mb=max(result["stage_peak_mb"].values()),
            )
            results.append(result)
    return results


STAGES = tuple(s.value for s in StageName if s not in (StageName.LIST, StageName.READ, StageName.CONFIRM))
SHORT = {"extract-semantic": "semantic", "canonicalize": "canon"}


def write(machine: dict, results: list[dict], not_run: list[str]) -> None:
    """build.json: the cases measured so far, and those still to run (empty once the run is complete)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {"machine": machine, "results": results, "not_run": not_run}
    (RESULTS / "build.json").write_text(json.dumps(out, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="synthetic catalog sizes, comma separated ('' = none)")
    parser.add_argument("--one-file", default="", help="sizes to build again with all tools in one manifest")
    parser.add_argument("--no-public-mix", action="store_true", help="leave out the five public catalogs as 146 files")
    args = parser.parse_args()
    from benchmarks.synthetic import generate

    cases = [
        ("livemcpbench (527)", [ROOT / "data/livemcpbench/tools.json"]),
        ("toollinkos (573)", [ROOT / "data/toollinkos"]),
    ]
    with tempfile.TemporaryDirectory() as synth:
        if not args.no_public_mix:  # a public collection as a new user meets it: many OpenAI-tools files
            from benchmarks.public_mix import generate as public_mix

            cases.append(("public mix (146 files)", public_mix(Path(synth) / "public-mix")))
        for size in [int(s) for s in args.sizes.split(",") if s]:
            cases.append((f"synthetic {size}", generate(size, Path(synth) / str(size))))
        for size in [int(s) for s in args.one_file.split(",") if s]:
            cases.append((f"synthetic {size} one file", generate(size, Path(synth) / f"{size}-one", one_file=True)))
        results = []
        stage_cols = " ".join(f"{SHORT.get(st, st):>8}" for st in STAGES)
        header = f"{'case':<25} {'tools':>7} {'quads':>9} {stage_cols} {'pipeline':>9} {'tools/s':>8} "
        header += f"{'prefect':>8} {'rerun':>6}"
        print("seconds per stage")
        print(header)
        print("-" * len(header))
        machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}
        for done, (name, paths) in enumerate(cases, 1):
            started = time.perf_counter()
            for r in run_case(name, paths, warm=not name.startswith("synthetic")):
                s = r["stage_seconds"]
                cols = " ".join(f"{s.get(st, 0):>8.2f}" for st in STAGES)
                print(
                    f"{r['case']:<25} {r['tools']:>7} {r['quads']:>9} {cols} {r['pipeline_seconds']:>9.2f} "
                    f"{r['tools_per_second']:>8.0f} {r['prefect_seconds']:>8.2f} {r['rerun_wall_seconds']:>6.2f}",
                    flush=True,
                )
                r["case_seconds"] = time.perf_counter() - started
                results.append(r)
            # Written after every case: the 100k case alone takes many minutes (hours on a shared box), and a run
            # stopped in it keeps the cases it finished, with the ones it did not named.
            write(machine, results, [n for n, _ in cases[done:]])
        print("\npeak MiB per stage (RSS summed over all the build's processes)")
        header = f"{'case':<25} " + " ".join(f"{SHORT.get(st, st):>8}" for st in (*STAGES, "other")) + f" {'peak':>8}"
        print(header)
        print("-" * len(header))
        for r in results:
            m = r["stage_peak_mb"]
            cols = " ".join(f"{m.get(st, 0):>8.0f}" for st in (*STAGES, "other"))
            print(f"{r['case']:<25} {cols} {r['peak_mb']:>8.0f}")
    print(
        f"\nwrote {RESULTS / 'build.json'}  (pipeline = wall time of the flow body; "
        "prefect = flow wall time - pipeline; rerun = unchanged second build, wall)"
    )


if __name__ == "__main__":
    main()
