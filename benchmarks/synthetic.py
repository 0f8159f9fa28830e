"""Synthetic tool catalogs of any size, in the LiveMCPBench catalog format.

Deterministic (seeded). Servers hold 50 tools; files hold 20 servers (1,000 tools), so 100k tools are
100 manifests. Names and descriptions are drawn from a generic vocabulary so the text looks like real
tool docs (verbs, objects, typed parameters, some output schemas); 40% of the tools take a record id
(``invoice_id``) that 30% of them return, so dependency inference has something to find.

    python -m benchmarks.synthetic 10000 /tmp/synth-10k
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

VERBS = [
    "get",
    "list",
    "search",
    "create",
    "update",
    "delete",
    "send",
    "convert",
    "compute",
    "fetch",
    "check",
    "validate",
    "schedule",
    "cancel",
    "export",
    "import",
    "summarize",
    "translate",
    "book",
    "track",
]
OBJECTS = [
    "invoice",
    "order",
    "customer",
    "ticket",
    "flight",
    "hotel",
    "report",
    "file",
    "message",
    "event",
    "payment",
    "stock price",
    "weather forecast",
    "repository",
    "issue",
    "contact",
    "calendar entry",
    "shipment",
    "product",
    "user profile",
    "document",
    "playlist",
    "recipe",
    "exchange rate",
    "route",
]
PARAMS = [
    ("id", "string"),
    ("query", "string"),
    ("limit", "integer"),
    ("start_date", "string"),
    ("end_date", "string"),
    ("currency", "string"),
    ("amount", "number"),
    ("email", "string"),
    ("location", "string"),
    ("include_details", "boolean"),
    ("tags", "array"),
    ("options", "object"),
    ("language", "string"),
    ("page", "integer"),
    ("format", "string"),
]
CATEGORIES = ["Finance", "Travel", "Productivity", "Developer Tools", "Communication", "Commerce", "Media"]
TOOLS_PER_SERVER = 50
SERVERS_PER_FILE = 20


def _tool(rng: random.Random, index: int) -> dict:
    verb, obj = rng.choice(VERBS), rng.choice(OBJECTS)
    name = f"{verb}_{obj.replace(' ', '_')}_{index}"
    params = rng.sample(PARAMS, rng.randint(1, 5))
    if rng.random() < 0.4:  # acts on a record another tool returns: the signal dependency inference reads
        params.insert(0, (f"{rng.choice(OBJECTS).replace(' ', '_')}_id", "string"))
    properties = {p: {"type": t, "description": f"The {p.replace('_', ' ')} of the {obj}."} for p, t in params}
    tool = {
        "name": name,
        "description": f"{verb.capitalize()} a {obj} by {params[0][0].replace('_', ' ')}. Returns the {obj} details.",
        "inputSchema": {"type": "object", "properties": properties, "required": [params[0][0]]},
    }
    if rng.random() < 0.3:
        tool["outputSchema"] = {
            "type": "object",
            "properties": {f"{obj.replace(' ', '_')}_id": {"type": "string"}, "status": {"type": "string"}},
        }
    return tool


def generate(tools: int, folder: Path, seed: int = 7, one_file: bool = False) -> list[Path]:
    """Write a catalog of ``tools`` tools under ``folder``; return the manifest paths (just one with
    ``one_file``: the same tools)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    servers = []
    for s in range(0, tools, TOOLS_PER_SERVER):
        key = f"synthetic-server-{s // TOOLS_PER_SERVER:05d}"
        count = min(TOOLS_PER_SERVER, tools - s)
        servers.append(
            {
                "name": key.replace("-", " ").title(),
                "description": f"A synthetic MCP server number {s // TOOLS_PER_SERVER}.",
                "category": rng.choice(CATEGORIES),
                "tools": {key: {"server_name": key, "tools": [_tool(rng, s + i) for i in range(count)]}},
            }
        )
    if one_file:
        path = folder / "catalog.json"
        path.write_text(json.dumps(servers))
        return [path]
    paths = []
    for f in range(0, len(servers), SERVERS_PER_FILE):
        path = folder / f"catalog-{f // SERVERS_PER_FILE:04d}.json"
        path.write_text(json.dumps(servers[f : f + SERVERS_PER_FILE]))
        paths.append(path)
    return paths


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tools", type=int)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--one-file", action="store_true", help="all tools in one manifest")
    args = parser.parse_args()
    print(f"wrote {len(generate(args.tools, args.folder, one_file=args.one_file))} manifests to {args.folder}")
