"""Print a catalog's tools as a dependency labeller reads them: toolkg's tool ids, descriptions, inputs and
declared outputs, from the manifest text alone (no inference, no store).

    python -m benchmarks.labels.show_tools tests/cases/real/mcp-servers/github.json
    python -m benchmarks.labels.show_tools data/azure-mcp/tools.json --server azure-mcp --grep storage

Ids are ``<server id>::<tool name>`` exactly as a build writes them, so a label written from this listing
names the tools the inference benchmark scores.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from toolkg.flows.sync.servers import read_manifest


def show(path: Path, server: str | None, pattern: str | None, width: int) -> None:
    manifest = read_manifest(path)
    for tool in (t for s in manifest.servers for t in s.tools):
        if server and tool.server_id != server:
            continue
        if pattern and not re.search(pattern, f"{tool.name} {tool.description}", re.IGNORECASE):
            continue
        print(f"## {tool.server_id}::{tool.name}")
        if tool.route:
            print(f"   route {tool.route}")
        print(f"   {(tool.description or '').strip()[:width]}")
        for parameter in tool.parameters:
            need = "required" if parameter.required else "optional"
            described = (parameter.description or "").strip().replace("\n", " ")[: width // 2]
            values = f" one of {', '.join(parameter.enum[:8])}" if parameter.enum else ""
            print(f"   in  {parameter.name} ({parameter.json_type}, {need}{values}): {described}")
        for output in tool.outputs:
            print(f"   out {output.name} ({output.json_type}): {output.description.strip()[: width // 2]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("manifest", type=Path)
    parser.add_argument("--server", help="only this server id")
    parser.add_argument("--grep", help="only tools whose name or description match this regular expression")
    parser.add_argument("--width", type=int, default=600, help="characters of each description shown")
    args = parser.parse_args()
    show(args.manifest, args.server, args.grep, args.width)


if __name__ == "__main__":
    main()
