"""Blind audit of the dependency edges the labels leave out: sample them and write one reading task per catalog.

For each label set of benchmarks/inference_bench.py, the predicted (consumer, producer) pairs that no label
judges are ordered by the sha256 of their ids (a fixed, name-blind sample) and the first ``--per-catalog`` are
written to ``benchmarks/results/audit/<catalog>.md`` with both tools' texts as a labeller reads them (names,
descriptions, inputs, declared outputs) and nothing of toolkg's: not the rule, the evidence, the confidence or
whether the pair was learned; pairs an earlier audit judged are left out, so a rerun after the inference
changed samples what is new. A separate reader judges each pair from those texts and appends to
``data/dependency-labels/audit/<catalog>.jsonl``: one ``{"consumer", "producer", "verdict": "correct" | "wrong",
"reason"}`` per pair. ``benchmarks/inference_bench.py`` then prints the precision those verdicts estimate beside
the lower bound.

    python -m benchmarks.labels.audit_sample --per-catalog 60
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

from benchmarks.label_sets import LABEL_SETS, audit_verdicts, label_set_tools, read_labels
from toolkg.canonicalize.inference.infer import infer_dependencies

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "results" / "audit"


def tool_text(tool, width: int = 500) -> str:
    lines = [
        f"### {tool.id}",
        *([f"route `{tool.route}`"] if tool.route else []),
        f"{(tool.description or '').strip()[:width]}",
    ]
    for p in tool.parameters:
        values = f" one of {', '.join(p.enum[:8])}" if p.enum else ""
        need = "required" if p.required else "optional"
        lines.append(f"- in `{p.name}` ({p.json_type}, {need}{values}): {(p.description or '').strip()[: width // 2]}")
    for o in tool.outputs:
        lines.append(f"- out `{o.name}` ({o.json_type}): {(o.description or '').strip()[: width // 2]}")
    return "\n".join(lines)


def sample(name: str, per_catalog: int) -> list[tuple[str, str]]:
    """Predicted pairs that neither a label nor an earlier audit judged, in a fixed name-blind order."""
    tools = label_set_tools(name)
    judged = {(x["consumer"], x["producer"]) for x in read_labels(name)} | set(audit_verdicts(name))
    predicted = {(e.consumer, e.producer) for e in infer_dependencies(tools)} - judged
    ordered = sorted(predicted, key=lambda pair: hashlib.sha256("|".join(pair).encode()).hexdigest())
    return ordered[:per_catalog]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-catalog", type=int, default=60)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for name in LABEL_SETS:
        if not read_labels(name):
            continue
        by_id = {t.id: t for t in label_set_tools(name)}
        pairs = sample(name, args.per_catalog)
        parts = [f"# {name}: {len(pairs)} pairs to judge\n"]
        for n, (consumer, producer) in enumerate(pairs, start=1):
            parts.append(f"## pair {n}: does `{consumer}` depend on `{producer}`?\n")
            parts.append("Consumer:\n" + tool_text(by_id[consumer]) + "\n")
            parts.append("Producer:\n" + tool_text(by_id[producer]) + "\n")
        (OUT / f"{name}.md").write_text("\n".join(parts), encoding="utf-8")
        print(f"{name}: {len(pairs)} pairs -> {(OUT / f'{name}.md').relative_to(ROOT)}")


if __name__ == "__main__":
    main()
