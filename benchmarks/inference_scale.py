"""Dependency inference alone at scale: the seconds ``infer_dependencies`` takes over a synthetic catalog
(synthetic.py: 50 tools a server, 20 servers a file), each server's catalog its file as the build's stage
passes it, in wall and CPU seconds. For comparing two checkouts on the same loaded machine, A B A B, without a
whole build (build_bench.py times the stage inside one).

    python -m benchmarks.inference_scale 100000 --tools /tmp/synth-100k.pickle   # read once, then reused
    PYTHONPATH=/other/checkout/src python -m benchmarks.inference_scale 100000 --tools /tmp/synth-100k.pickle
"""

from __future__ import annotations

import argparse
import pickle
import tempfile
import time
from pathlib import Path

from benchmarks.synthetic import generate
from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import fingerprint_file
from toolkg.models import Tool

ROOT = Path(__file__).resolve().parents[1]


def synthetic_tools(size: int) -> tuple[list[Tool], dict[str, str]]:
    """The tools of a synthetic catalog of ``size`` tools, and server id -> the file it came from."""
    tools: list[Tool] = []
    catalogs: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as folder:
        for path in generate(size, Path(folder)):
            file, data = fingerprint_file(path)
            for server in ingest_manifest(file, data).parsed.servers:
                catalogs[server.id] = path.name
                tools += server.tools
    return tools, catalogs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("size", type=int)
    parser.add_argument("--tools", type=Path, help="a pickle of the read catalog: written if missing, else read")
    args = parser.parse_args()
    if args.tools and args.tools.exists():
        tools, catalogs = pickle.loads(args.tools.read_bytes())
    else:
        tools, catalogs = synthetic_tools(args.size)
        if args.tools:
            args.tools.write_bytes(pickle.dumps((tools, catalogs)))
    started, cpu = time.perf_counter(), time.process_time()
    edges = infer_dependencies(tools, catalogs=catalogs)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    # CPU seconds too: on a shared box the wall time is mostly the other processes' load
    print(f"{len(tools)} tools: {len(edges)} edges inferred in {seconds:.1f} s wall, {cpu:.1f} s CPU")


if __name__ == "__main__":
    main()
