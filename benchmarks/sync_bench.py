"""Incremental sync benchmark: add / update / remove a server and update one tool, against a full rebuild.

For each catalog (LiveMCPBench's 527 tools, a synthetic 10k-tool catalog):
1. build the catalog without one server (the one the "add" operation brings back) into a fresh store;
2. time the full rebuild of the whole catalog into another fresh store (the flow's pipeline time,
   Prefect start-up excluded; the embedding cache is warm for both, as on any rebuild after the first);
3. open ``CatalogSync`` on the first store (its load time is reported apart: a sync service pays it once)
   and time each operation: add-server, update-server (3 tools reworded), update-tool, remove-tool, add-tool
   (the removed tool back), remove-server;
4. compare the synced store's dependency edges and links with a full rebuild of the final catalog.

Prints a table and writes benchmarks/results/sync.json.

    python -m benchmarks.sync_bench                 # LiveMCPBench + synthetic 10k
    python -m benchmarks.sync_bench --sizes 2000    # other synthetic sizes (0 for none)
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "CRITICAL")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")

TARGET_SPEEDUP = 50


def _entries(paths: list[Path]) -> list[tuple[Path, list[dict]]]:
    return [(p, json.loads(p.read_text())) for p in paths]


def _server_key(entry: dict) -> str:
    return next(iter(entry["tools"]))


def _write(folder: Path, entries: list[tuple[Path, list[dict]]]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for source, servers in entries:
        path = folder / source.name
        path.write_text(json.dumps(servers))
        out.append(path)
    return out


def _state(store_dir: Path) -> tuple[set, set]:
    from toolkg.store.dependencies import dependency_rows, link_rows
    from toolkg.store.oxigraph_store import ToolStore

    with ToolStore(store_dir) as store:
        edges = {(r["consumer"], r["producer"], r["kind"], r["parameter"] or "") for r in dependency_rows(store)}
        links = {(r["source"], r["target"], r["kind"]) for r in link_rows(store)}
    return edges, links


def run_case(name: str, files: list[Path], work: Path) -> dict:
    from toolkg.flows.build import build_catalog
    from toolkg.flows.sync import CatalogSync, read_manifest
    from toolkg.paths import store_cache
    from toolkg.store.oxigraph_store import ToolStore

    entries = _entries(files)
    last_file, last_servers = entries[-1]
    # Servers of at least 5 tools: the one "add" brings back, the one updated, the one removed.
    sized = [s for s in last_servers if len(next(iter(s["tools"].values()))["tools"]) >= 5]
    added_key, updated_key, removed_key = (_server_key(s) for s in (sized[-1], sized[0], sized[1]))
    without = [(p, [x for x in s if _server_key(x) != added_key]) for p, s in entries]

    # The final catalog: the added server back, three tools of another reworded, one tool of it changed again.
    final = copy.deepcopy(entries)
    final_servers = dict(final)[last_file]
    server_tools = next(s for s in final_servers if _server_key(s) == updated_key)["tools"][updated_key]["tools"]
    for tool in server_tools[:3]:
        tool["description"] = tool.get("description", "") + " Results are paginated; pass the cursor to continue."
    one_tool = server_tools[3] if len(server_tools) > 3 else server_tools[-1]
    one_tool["description"] = "Looks up the record by its id and returns its status and owner."
    final_removed = [(p, [s for s in servers if _server_key(s) != removed_key]) for p, servers in final]

    initial_files = _write(work / "initial", without)
    final_files = _write(work / "final", final_removed)
    build_catalog(paths=[str(p) for p in initial_files], store_dir=str(work / "live"))
    for folder in ("whole-store", "final-store"):  # a rebuild after the first: tool vectors are cached
        vectors = store_cache(work / folder, "embeddings")
        vectors.parent.mkdir(parents=True)
        shutil.copy(store_cache(work / "live", "embeddings"), vectors)
    rebuilt = build_catalog(
        paths=[str(p) for p in _write(work / "whole", entries)], store_dir=str(work / "whole-store")
    )
    rebuild_seconds = rebuilt.pipeline_seconds
    reference = build_catalog(paths=[str(p) for p in final_files], store_dir=str(work / "final-store"))

    with_all = _write(work / "all", final)
    manifest = {p.name: read_manifest(p) for p in with_all}
    source = str(initial_files[-1])
    servers = {s.id: s for s in manifest[last_file.name].servers}
    ops = []
    with ToolStore(work / "live") as store, CatalogSync(store) as sync:
        load_seconds = sync.load_seconds
        fmt = manifest[last_file.name].format
        ops.append(sync.upsert_server(servers[added_key], source, fmt))
        reworded = servers[updated_key]
        partial = reworded.model_copy(
            update={"tools": tuple(t if t.name != one_tool["name"] else _original(t, entries) for t in reworded.tools)}
        )
        ops.append(sync.upsert_server(partial, source, fmt))
        ops.append(
            sync.update_tool(partial, next(t for t in reworded.tools if t.name == one_tool["name"]), source, fmt)
        )
        # One tool of the updated server removed, then added back: the final catalog is as before.
        other = next(t for t in reworded.tools if t.name != one_tool["name"])
        ops.append(sync.remove_tool(reworded, other.name, source, fmt))
        rest = reworded.model_copy(update={"tools": tuple(t for t in reworded.tools if t.name != other.name)})
        ops.append(sync.update_tool(rest, other, source, fmt))
        ops.append(sync.remove_server(removed_key))
    synced, expected = _state(work / "live"), _state(work / "final-store")
    rows = []
    for op in ops:
        rows.append(
            {
                "operation": op.operation,
                "target": op.target,
                "seconds": op.seconds,
                "speedup": round(rebuild_seconds / op.seconds, 1) if op.seconds else None,
                "tools_changed": len(op.tools_changed),
                "neighbourhood": op.neighbourhood,
                "triples_written": op.triples_deleted + op.triples_inserted,
                "edges": f"+{op.edges_added}/-{op.edges_removed}",
                "links": f"+{op.links_added}/-{op.links_removed}",
                "stage_seconds": op.stage_seconds,
            }
        )
    return {
        "case": name,
        "tools": rebuilt.totals.get("tools"),
        "rebuild_pipeline_seconds": rebuild_seconds,
        "reference_tools": reference.totals.get("tools"),
        "sync_load_seconds": round(load_seconds, 3),
        "operations": rows,
        "edges_differing_from_rebuild": len(synced[0] ^ expected[0]),
        "edges_in_rebuild": len(expected[0]),
        "links_differing_from_rebuild": len(synced[1] ^ expected[1]),
        "links_in_rebuild": len(expected[1]),
    }


def _original(tool, entries):
    """The tool as the untouched catalog has it (update-server rewords three tools, not this one)."""
    for _, servers in entries:
        for server in servers:
            for key, body in server["tools"].items():
                if key == tool.server_id:
                    for t in body["tools"]:
                        if t["name"] == tool.name:
                            return tool.model_copy(update={"description": t.get("description", "")})
    return tool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000", help="synthetic catalog sizes, comma-separated (0: none)")
    args = parser.parse_args()
    from benchmarks.synthetic import generate

    cases = [("livemcpbench (527)", [ROOT / "data" / "livemcpbench" / "tools.json"])]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in [int(s) for s in args.sizes.split(",") if s.strip() and int(s)]:
            cases.append((f"synthetic {size}", generate(size, Path(tmp) / f"synth-{size}")))
        for name, files in cases:
            started = time.perf_counter()
            result = run_case(name, files, Path(tmp) / name.split()[0])
            result["case_seconds"] = round(time.perf_counter() - started, 1)
            results.append(result)
            print_case(result)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "sync.json"
    out.write_text(json.dumps({"target_speedup": TARGET_SPEEDUP, "results": results}, indent=2))
    print(f"wrote {out}")


def print_case(r: dict) -> None:
    print(
        f"\n{r['case']}: full rebuild {r['rebuild_pipeline_seconds']:.2f}s (pipeline), "
        f"sync load {r['sync_load_seconds']:.2f}s (once per sync session)"
    )
    print(
        f"{'operation':<15} {'seconds':>8} {'speedup':>8} {'target':>7} {'tools':>6} {'nbhd':>6} {'triples':>8}"
        "  edges / links"
    )
    for op in r["operations"]:
        met = "met" if op["speedup"] and op["speedup"] >= TARGET_SPEEDUP else "SHORT"
        print(
            f"{op['operation']:<15} {op['seconds']:>8.3f} {op['speedup']:>7.1f}x {met:>7} {op['tools_changed']:>6} "
            f"{op['neighbourhood']:>6} {op['triples_written']:>8}  {op['edges']} / {op['links']}  "
            + " ".join(f"{k} {v:.3f}" for k, v in op["stage_seconds"].items())
        )
    print(
        f"against a rebuild of the final catalog: {r['edges_differing_from_rebuild']} of {r['edges_in_rebuild']} "
        f"dependency edges differ, {r['links_differing_from_rebuild']} of {r['links_in_rebuild']} links differ"
    )


if __name__ == "__main__":
    main()
