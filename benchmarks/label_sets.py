"""The dependency label sets (data/dependency-labels/README.md) and ToolLinkOS's declared edges: which manifests
each names, its labelled pairs and a blind reader's verdicts on the pairs the labels leave out. What the inference
benchmark, the rules' calibration, the pair model's fit and the audit sampler all read (benchmarks/labels/).
"""

from __future__ import annotations

import json
from pathlib import Path

from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import discover_all, fingerprint_file
from toolkg.models import Tool

ROOT = Path(__file__).resolve().parents[1]
# ToolLinkOS: its declared dependencies are the gold the inference is scored against (hidden from it while it runs)
FILES = [ROOT / "data" / "toollinkos" / "core_tools.json", ROOT / "data" / "toollinkos" / "regular_tools.json"]

# label set -> the manifests its tools come from (the labels name tools by the ids a build gives them)
LABEL_SETS = {
    "livemcpbench": (["data/livemcpbench/tools.json"], "data/livemcpbench/dependencies.jsonl"),
    "mcp-servers": (["tests/cases/real/mcp-servers"], "data/dependency-labels/mcp-servers.jsonl"),
    "bfcl-multi-turn": (["tests/cases/real/openai/bfcl-multi-turn"], "data/dependency-labels/bfcl-multi-turn.jsonl"),
    "azure-mcp": (["data/azure-mcp/tools.json"], "data/dependency-labels/azure-mcp.jsonl"),
    "github-openapi": (["tests/cases/real/openapi/api.github.com.json"], "data/dependency-labels/github-openapi.jsonl"),
}


def load_tools(path: Path) -> list[Tool]:
    """The tools of one manifest file, read as a build reads it."""
    file, data = fingerprint_file(path)
    return [t for s in ingest_manifest(file, data).parsed.servers for t in s.tools]


def label_set_tools(name: str) -> list[Tool]:
    """The tools of a label set's catalog, every manifest of its paths read as a build reads it."""
    found = discover_all([ROOT / entry for entry in LABEL_SETS[name][0]]).files
    return [t for path in found for t in load_tools(Path(path))]


def read_labels(name: str) -> list[dict]:
    path = ROOT / LABEL_SETS[name][1]
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()] if path.exists() else []


def audit_verdicts(name: str) -> dict[tuple[str, str], str]:
    """A blind reader's verdicts on predicted pairs the labels leave out (benchmarks/labels/AUDIT.md)."""
    path = ROOT / "data" / "dependency-labels" / "audit" / f"{name}.jsonl"
    if not path.exists():
        return {}
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    return {(x["consumer"], x["producer"]): x["verdict"] for x in rows}
