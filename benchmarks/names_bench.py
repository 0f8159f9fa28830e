"""Names as typed: is every tool found first when a request names it, in every form clients write names?

For each tool of each suite catalog, the request is the tool's name written one way (``toolkg.toolsearch.names``):
exact name, ``server::tool``, ``mcp__server__tool``, ``server__tool``, ``select:NAME``; and near-misses:
upper case, separators changed (``get-current-time``), camelCase, one letter dropped, two letters swapped.
A tool is *found first* when the lookup returns it (search_tools puts what the lookup returns before the
ranking); *alone* when it is the only tool returned (a bare name several servers share returns them all; a
typo may land on another name one edit away).

    python -m benchmarks.names_bench           # the suite's stores (make bench-suite builds them)

Prints a table and writes benchmarks/results/names.json.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections.abc import Callable
from pathlib import Path

from toolkg.retrieval import Index
from toolkg.toolsearch.names import MIN_TYPO_LENGTH, NameIndex

ROOT = Path(__file__).resolve().parents[1]
CATALOGS = ("livemcpbench", "toollinkos", "bfcl", "azure-mcp", "apibench")
STORES = ROOT / "benchmarks" / "results" / "stores"


def _camel(name: str) -> str:
    words = [w for w in re.split(r"[_\-.\s]+", name) if w]
    return "".join(w[:1].upper() + w[1:] for w in words)


def _drop(name: str, rng: random.Random) -> str:
    letters = [i for i, c in enumerate(name) if c.isalnum()]
    i = rng.choice(letters[1:-1] or letters)
    return name[:i] + name[i + 1 :]


def _swap(name: str, rng: random.Random) -> str:
    pairs = [i for i in range(len(name) - 1) if name[i].isalnum() and name[i + 1].isalnum() and name[i] != name[i + 1]]
    if not pairs:
        return name
    i = rng.choice(pairs)
    return name[:i] + name[i + 1] + name[i] + name[i + 2 :]


FORMS: dict[str, Callable[[str, str, random.Random], str]] = {
    "exact name": lambda server, name, rng: name,
    "server::tool": lambda server, name, rng: f"{server}::{name}",
    "mcp__server__tool": lambda server, name, rng: f"mcp__{server}__{name}",
    "server__tool": lambda server, name, rng: f"{server}__{name}",
    "select:NAME": lambda server, name, rng: f"select:{name}",
    "UPPER CASE": lambda server, name, rng: name.upper(),
    "separators": lambda server, name, rng: re.sub(r"[_.]", "-", name) if re.search(r"[_.]", name) else name + "-",
    "camelCase": lambda server, name, rng: _camel(name),
    "a letter dropped": lambda server, name, rng: _drop(name, rng),
    "two swapped": lambda server, name, rng: _swap(name, rng),
}
TYPOS = ("a letter dropped", "two swapped")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", type=Path, default=STORES)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "names.json")
    args = parser.parse_args()
    results: dict = {}
    print(f"{'catalog':13} {'form':18} {'tools':>6} {'found':>7} {'alone':>7} {'ms/lookup':>9}")
    for catalog in CATALOGS:
        index = Index(args.stores / f"suite-{catalog}")
        try:
            tools = [(t.id, t.server, t.name) for t in index.catalog.tools]
            names = NameIndex(tools, ((s.id, s.name) for s in index.catalog.servers))
        finally:
            index.close()
        rng = random.Random(0)
        results[catalog] = {}
        for form, write in FORMS.items():
            found = alone = counted = 0
            started = time.perf_counter()
            for tool_id, server, name in tools:
                if form in TYPOS and len(re.sub(r"[\W_]+", "", name)) < MIN_TYPO_LENGTH + 1:
                    continue  # a typo in a short name is not looked for
                counted += 1
                got = names.lookup(write(server, name, rng)) or []
                found += tool_id in got
                alone += got == [tool_id]
            ms = (time.perf_counter() - started) * 1000 / max(counted, 1)
            row = {
                "tools": counted,
                "found": round(found / max(counted, 1), 4),
                "alone": round(alone / max(counted, 1), 4),
            }
            results[catalog][form] = row | {"ms_per_lookup": round(ms, 3)}
            print(f"{catalog:13} {form:18} {counted:6} {row['found']:7.3f} {row['alone']:7.3f} {ms:9.3f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
