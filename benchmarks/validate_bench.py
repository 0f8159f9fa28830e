"""Validate stage benchmark: the compiled SHACL engine (SPARQL on Oxigraph) against pySHACL.

For each size, a synthetic catalog is generated and extracted once (structure only: SHACL does not read
extraction graphs); then the validate stage as the build runs it (one ``Validator`` per run, no verdict
cache, ``validate`` per manifest) is timed for each engine in turn, A B A B, in one process. Prints
seconds per run, ms per tool and the ratio; writes benchmarks/results/validate.json. The verdicts of the
two engines are compared too (they must be equal).

    python -m benchmarks.validate_bench --sizes 1000,10000,100000 --repeats 2
    python -m benchmarks.validate_bench --sizes 100000 --one-file   # all tools in one manifest
    python -m benchmarks.validate_bench --engines sparql              # the compiled engine alone
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def extracted(paths: list[Path]) -> list:
    from toolkg.extractors.manifests.ingest import ingest_manifest
    from toolkg.extractors.manifests.reading import fingerprint_file
    from toolkg.extractors.triples.structural import NameIndex, extract_structure

    manifests = []
    for path in paths:
        file, data = fingerprint_file(path)
        manifests.append(ingest_manifest(file, data).parsed)
    index = NameIndex()
    for m in manifests:
        index.add([t.id for s in m.servers for t in s.tools], m.path)
    return [extract_structure(m, index) for m in manifests]


def run(engine: str, manifests: list) -> tuple[float, list]:
    from toolkg.store.validation import Validator

    started = time.perf_counter()
    with Validator(engine=engine) as validator:
        problems = [validator.validate(m)[1] for m in manifests]
    return time.perf_counter() - started, problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="synthetic catalog sizes, comma separated")
    parser.add_argument("--repeats", type=int, default=2, help="A B rounds per size")
    parser.add_argument("--one-file", action="store_true", help="all tools of a size in one manifest")
    parser.add_argument("--engines", default="pyshacl,sparql", help="engines to time, in this order each round")
    args = parser.parse_args()
    from benchmarks.synthetic import generate

    engines = args.engines.split(",")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in [int(s) for s in args.sizes.split(",") if s]:
            manifests = extracted(generate(size, Path(tmp) / str(size), one_file=args.one_file))
            seconds: dict[str, list[float]] = {engine: [] for engine in engines}
            verdicts = {}
            for _ in range(args.repeats):
                for engine in engines:
                    took, verdicts[engine] = run(engine, manifests)
                    seconds[engine].append(took)
                    print(f"{size:>7} {engine:8} {took:8.2f} s", flush=True)
            best = {engine: min(runs) for engine, runs in seconds.items()}
            rows.append(
                {
                    "tools": size,
                    "manifests": len(manifests),
                    "seconds": seconds,
                    "ms_per_tool": {e: 1000 * s / size for e, s in best.items()},
                    "speedup": best["pyshacl"] / best["sparql"] if len(best) == 2 else None,
                    "same_verdicts": all(v == verdicts[engines[0]] for v in verdicts.values()),
                }
            )
            del manifests
    print("\n| tools | " + " | ".join(f"{e} s | {e} ms/tool" for e in engines) + " | speed-up | same verdicts |")
    print("|---|" + "---|---|" * len(engines) + "---|---|")
    for r in rows:
        cells = [f"{' / '.join(f'{s:.2f}' for s in r['seconds'][e])} | {r['ms_per_tool'][e]:.3f}" for e in engines]
        speedup = f"{r['speedup']:.1f}x" if r["speedup"] else "-"
        print(f"| {r['tools']:,} | " + " | ".join(cells) + f" | {speedup} | {r['same_verdicts']} |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {"machine": f"{platform.machine()} {os.cpu_count()} cores", "one_file": args.one_file, "rows": rows}
    name = "validate-one-file.json" if args.one_file else "validate.json"
    (RESULTS / name).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
