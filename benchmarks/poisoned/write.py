"""Write the poisoned manifests trust_bench.py measures detection on, from the cases in ``cases/`` (the output
is committed; ``tests/unit/test_poisoned_corpus.py`` checks it is what this writes, byte for byte).

    python benchmarks/poisoned/write.py            # rewrites the corpus beside this file
    python benchmarks/poisoned/write.py --out DIR  # writes it elsewhere

``cases/README.md`` says where the attacks come from and what each file holds. Each case is one server, a line
of JSON: its tools (an attack is a server's last tool) after the ordinary tools of its ``ordinary`` group
(``cases/ordinary.json``), as a real malicious server would hide it. The corpus:

- ``trusted.json``: the servers the attacks aim at; ``injection.json``, ``hidden.json``, ``shadowing.json``:
  one server per attack; ``holdout-1.json``, ``holdout-2.json``: attacks of the ``kind`` each case names;
- ``changed/v1.json`` and ``changed/v2.json``: the same servers before and after a rug pull (each case's
  ``changes`` replace a tool; ``removed`` and ``added`` tools are not "changed");
- ``labels.json``: for every tool, the kind of attack it carries (``benign`` for the rest), its set, the
  variant, and its half: tuning or reporting (sha256 of the tool id even: tuning; the rule benchmarks/splits.py
  applies to queries), or holdout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
FAMILIES = ("injection", "hidden", "shadowing")  # variant: the case's place in its file
HOLDOUTS = (("holdout-1", "tune"), ("holdout-2", "holdout"))  # holdout-1 became tuning data once measured
CORPUS = (
    *(f"{name}.json" for name in (*FAMILIES, *(h for h, _ in HOLDOUTS), "trusted")),
    "changed/v1.json",
    "changed/v2.json",
    "labels.json",
)


def read_cases(name: str) -> list[dict[str, Any]]:
    path = CASES / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def server(case: dict[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """One server as an MCP catalog entry (the LiveMCPBench shape)."""
    key = case["server"]
    return {
        "name": case["name"],
        "description": case["description"],
        "category": case["category"],
        "tools": {key: {"server_name": key, "tools": tools}},
    }


def servers(cases: list[dict[str, Any]], ordinary: dict[str, list[dict]]) -> list[dict[str, Any]]:
    return [server(c, [*ordinary.get(c.get("ordinary") or "", []), *c["tools"]]) for c in cases]


def changed(cases: list[dict[str, Any]]) -> tuple[list[dict], list[dict], dict[str, str]]:
    """(v1 servers, v2 servers, {tool id: what changed}): v2 keeps v1's order, less the removed tools, each
    changed tool replaced, the added ones last."""
    v1, v2, changes = [], [], {}
    for case in cases:
        after = {c["tool"]: c["after"] for c in case["changes"]}
        changes.update({f"{case['server']}::{c['tool']}": c["change"] for c in case["changes"]})
        kept = [after.get(t["name"], t) for t in case["tools"] if t["name"] not in case.get("removed", [])]
        v1.append(server(case, case["tools"]))
        v2.append(server(case, [*kept, *case.get("added", [])]))
    return v1, v2, changes


def half(tool_id: str) -> str:
    return "tune" if int(hashlib.sha256(tool_id.encode()).hexdigest(), 16) % 2 == 0 else "report"


def tool_ids(entries: list[dict]) -> list[tuple[str, str, bool]]:
    """(server key, tool name, the server's last tool) of each tool, in order."""
    return [
        (key, t["name"], n == len(block["tools"]) - 1)
        for entry in entries
        for key, block in entry["tools"].items()
        for n, t in enumerate(block["tools"])
    ]


def corpus() -> dict[str, str]:
    """Each corpus file's path (relative to the corpus folder) and its text."""
    ordinary = json.loads((CASES / "ordinary.json").read_text(encoding="utf-8"))
    out: dict[str, list[dict] | dict] = {}
    labels: dict[str, dict[str, str]] = {}
    for kind in FAMILIES:
        out[f"{kind}.json"] = family = servers(read_cases(kind), ordinary)
        for index, entry in enumerate(family):
            for key, name, last in tool_ids([entry]):
                tool_id = f"{key}::{name}"
                labels[tool_id] = {"kind": kind if last else "benign", "set": kind, "variant": str(index)}
                labels[tool_id]["half"] = half(tool_id)
    for name, part in HOLDOUTS:
        cases = read_cases(name)
        out[f"{name}.json"] = listed = servers(cases, ordinary)
        kinds = {c["server"]: c["kind"] for c in cases}
        for key, tool, last in tool_ids(listed):
            kind = kinds[key] if last else "benign"
            labels[f"{key}::{tool}"] = {"kind": kind, "set": name, "variant": key, "half": part}
    out["trusted.json"] = trusted = servers(read_cases("trusted"), ordinary)
    for key, name, _ in tool_ids(trusted):
        labels[f"{key}::{name}"] = {"kind": "benign", "set": "trusted", "variant": "", "half": half(f"{key}::{name}")}
    v1, v2, changes = changed(read_cases("changed"))
    out["changed/v1.json"], out["changed/v2.json"] = v1, v2
    for key, name in sorted({(k, n) for k, n, _ in tool_ids(v1) + tool_ids(v2)}):
        tool_id = f"{key}::{name}"
        kind = "changed" if tool_id in changes else "benign"
        labels[tool_id] = {"kind": kind, "set": "changed", "variant": changes.get(tool_id, ""), "half": half(tool_id)}
    texts = {path: json.dumps(data, indent=1, ensure_ascii=False) + "\n" for path, data in out.items()}
    texts["labels.json"] = json.dumps(labels, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    return texts


def write(folder: Path) -> dict[str, dict[str, int]]:
    """Write the corpus into ``folder``; the number of tools of each kind, by half."""
    texts = corpus()
    for path, text in texts.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    counts: dict[str, dict[str, int]] = {}
    for entry in json.loads(texts["labels.json"]).values():
        counts.setdefault(entry["kind"], {"tune": 0, "report": 0, "holdout": 0})[entry["half"]] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE, help="the folder to write the corpus into")
    args = parser.parse_args()
    for kind, by_half in sorted(write(args.out).items()):
        print(f"{kind}: {by_half['tune']} tuning, {by_half['report']} reporting, {by_half['holdout']} holdout")


if __name__ == "__main__":
    main()
