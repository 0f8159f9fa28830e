"""The five public catalogs of the retrieval suite as one catalog of OpenAI-tools files, the shape of a
public collection a new user points toolkg at (about 4,300 tools in 146 files).

Every tool of data/{bfcl,apibench,azure-mcp,livemcpbench,toollinkos} is read as a build reads it and
written back as an OpenAI ``{"type": "function", "function": {...}}`` entry; the tools are dealt
round-robin over ``files`` files (one server each, named after the file), so no file holds one source
alone. Deterministic.

    python -m benchmarks.public_mix /tmp/public-mix         # 146 files
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("bfcl", "apibench", "azure-mcp", "livemcpbench", "toollinkos")
FILES = 146


def _schema(tool) -> dict:
    properties = {}
    for p in tool.parameters:
        prop: dict = {"type": p.json_type} if p.json_type not in ("any", "") else {}
        if p.description:
            prop["description"] = p.description
        if p.enum:
            prop["enum"] = [json.loads(v) for v in p.enum]
        properties[p.name] = prop
    required = [p.name for p in tool.parameters if p.required]
    return {"type": "object", "properties": properties, "required": required}


def tools() -> list[dict]:
    """Every source tool as an OpenAI function entry, in the sources' order (names made unique)."""
    from toolkg.flows.sync.servers import read_manifest

    out, seen = [], set()
    for source in SOURCES:
        folder = ROOT / "data" / source
        for path in sorted(p for p in folder.rglob("*.json")):
            try:
                manifest = read_manifest(path)
            except Exception:  # a folder's non-manifest JSON (labels, splits): not a catalog
                continue
            for server in manifest.servers:
                for tool in server.tools:
                    name = tool.name if tool.name not in seen else f"{server.id}_{tool.name}"
                    seen.add(name)
                    out.append(
                        {
                            "type": "function",
                            "function": {"name": name, "description": tool.description, "parameters": _schema(tool)},
                        }
                    )
    return out


def generate(folder: Path, files: int = FILES) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    entries = tools()
    paths = []
    for i in range(files):
        path = folder / f"collection-{i:03d}.json"
        path.write_text(json.dumps(entries[i::files], ensure_ascii=False), encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--files", type=int, default=FILES)
    args = parser.parse_args()
    written = generate(args.folder, args.files)
    print(f"{sum(len(json.loads(p.read_text())) for p in written)} tools in {len(written)} files under {args.folder}")
