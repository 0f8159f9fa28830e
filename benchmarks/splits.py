"""The fixed tuning / reporting split of the labelled queries (data/SPLITS.md).

A query is in the *tuning* half when the SHA-256 of its id is even, in the *reporting* half otherwise.
Rules, thresholds and method defaults are tuned on the tuning half only; closing notes report the
reporting half. The rule depends on the id alone, so the split never moves when queries are added.

    python -m benchmarks.splits          # writes data/splits/<catalog>.json and prints the sizes

The split files live apart from the catalogs: a catalog folder holds manifests only (a build reads
every .json file in it).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
CATALOGS = ("livemcpbench", "toollinkos", "bfcl", "azure-mcp", "apibench")


def half(query_id: str) -> str:
    """'tune' or 'report' for a query id.

    >>> half("0e3287cb-c0ff-4d2a-8c3d-d8833014a7b0") in ("tune", "report")
    True
    """
    return "tune" if int(hashlib.sha256(query_id.encode()).hexdigest(), 16) % 2 == 0 else "report"


def write_splits() -> dict[str, dict[str, int]]:
    sizes = {}
    for catalog in CATALOGS:
        ids = [json.loads(line)["id"] for line in (DATA / catalog / "queries.jsonl").open(encoding="utf-8")]
        halves: dict[str, list[str]] = {"tune": [], "report": []}
        for query_id in ids:
            halves[half(str(query_id))].append(query_id)
        split = {"rule": "sha256(id) even -> tune, odd -> report", **halves}
        (DATA / "splits" / f"{catalog}.json").write_text(json.dumps(split, indent=1) + "\n", encoding="utf-8")
        sizes[catalog] = {"tune": len(halves["tune"]), "report": len(halves["report"])}
    return sizes


if __name__ == "__main__":
    for catalog, size in write_splits().items():
        print(f"{catalog}: {size['tune']} tuning, {size['report']} reporting queries")
