"""The READMEs' tables of measured figures, rendered from the results JSON the benchmarks wrote.

    python -m benchmarks.tables            # rewrite every marked table from its JSON
    python -m benchmarks.tables --check    # exit 1 naming each table its JSON no longer renders to

A table stands between ``<!-- table:NAME -->`` and ``<!-- /table -->`` in README.md or benchmarks/README.md;
NAME picks the JSON under benchmarks/results/ and the function that renders it. Only tables whose JSON is
committed are marked (benchmarks/results/ is in .gitignore; a run is committed with ``git add -f``): a table
whose JSON is on one machine only could not be checked anywhere else. tests/unit/test_readme_tables.py runs
the check, so a figure edited by hand, or a JSON re-run without its table, fails the suite.

A column whose figures come from no committed JSON (the ``before`` of a comparison, taken from an older
table) is *carried*: its cells are kept, row by row, from the table as it stands, and only the other
columns are rendered and checked.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks import bench_tables

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
READMES = (ROOT / "README.md", ROOT / "benchmarks" / "README.md")
BLOCK = re.compile(r"(<!-- table:(?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /table -->)", re.S)

Rows = list[list[str]]


@dataclass(frozen=True)
class Table:
    source: str  # the JSON, relative to benchmarks/results/
    render: Callable[[dict], Rows]  # header row, then the rows; a carried column's cells are ""
    carried: tuple[str, ...] = ()  # header names of the columns kept from the table as it stands


def _pair(a: float, b: float) -> str:
    return f"{a:.3f} / {b:.3f}"


# The suite's settings as the tables name them (benchmarks/suite/catalogs.py SETTINGS), in the run's order.
SUITE_LABELS = {
    "livemcpbench": "LiveMCPBench, with steps",
    "livemcpbench-text": "LiveMCPBench, text only",
    "toollinkos": "ToolLinkOS",
    "toollinkos-declared": "ToolLinkOS, declared only",
    "bfcl": "BFCL",
    "azure-mcp": "Azure MCP",
    "apibench": "APIBench",
    "bfcl-multi-turn": "BFCL multi-turn",
    "tau2": "tau2",
}


def suite_rows(data: dict) -> Rows:
    """One ``benchmarks.suite.run`` (its ``--out`` JSON): R@10 / CR@10 per method, the LOCO default's additions
    and first-stage blend. ``before`` is the LOCO column of the run before it, whose JSON was not kept."""
    header = [
        "setting (queries)",
        "auto (LOCO)",
        "before",
        "auto (shipped)",
        "dense",
        "bm25",
        "plain-dense",
        "plain-bm25",
        "additions gained / displaced (LOCO)",
        "LOCO first stage",
    ]
    rows = [header]
    for name, report in data["reports"].items():
        methods = report["methods"]

        def figures(method: str, methods: dict = methods) -> str:
            m = methods[method]["metrics"]
            return _pair(m["recall"]["10"], m["complete_recall"]["10"])

        loco = report["additions"]["auto (LOCO)"]
        rows.append(
            [
                f"{SUITE_LABELS[name]} ({report['queries']})",
                figures("auto (LOCO)"),
                "",
                *(figures(m) for m in ("auto", "dense", "bm25", "plain-dense", "plain-bm25")),
                f"{loco['gained']} / {loco['displaced']}",
                loco["choice"],
            ]
        )
    return rows


# rule_calibration.py's dev catalogs (benchmarks/label_sets.py) as the tables name them.
INFERENCE_LABELS = {
    "toollinkos": "ToolLinkOS",
    "livemcpbench": "LiveMCPBench",
    "mcp-servers": "17 real MCP servers",
    "bfcl-multi-turn": "BFCL multi-turn",
    "azure-mcp": "Azure MCP",
    "github-openapi": "GitHub REST",
}


def inference_rows(data: dict) -> Rows:
    """``benchmarks.inference_bench``'s calibration part: each dev catalog scored left out, per half, lower-bound
    precision / recall of the plain join and of the rules fitted on the other catalogs, and the cap chosen."""
    rows = [["dev catalog (left out)", "half", "plain join", "after, LOCO", "cap"]]
    for name, entry in data["calibration"]["loco"].items():
        for i, (half, scores) in enumerate(entry["halves"].items()):
            plain, after = scores["plain join"], scores["after (LOCO)"]
            rows.append(
                [
                    INFERENCE_LABELS[name] if i == 0 else "",
                    half,
                    _pair(plain["precision_lower_bound"], plain["recall"]),
                    _pair(after["precision_lower_bound"], after["recall"]),
                    str(entry["cap"]) if i == 0 else "",
                ]
            )
    return rows


TABLES = {
    "suite-s56": Table("suite-s56.json", suite_rows, carried=("before",)),
    "inference": Table("inference.json", inference_rows),
    # One `make bench` run, a table per part of each script's JSON (benchmarks/bench_tables.py).
    "build": Table("build.json", bench_tables.build_rows),
    "extraction": Table("extraction.json", bench_tables.extraction_rows),
    "extraction-llm": Table("extraction.json", bench_tables.extraction_llm_rows),
    "retrieval": Table("retrieval.json", bench_tables.retrieval_rows),
    "retrieval-latency": Table("retrieval.json", bench_tables.retrieval_latency_rows),
    "sync": Table("sync.json", bench_tables.sync_rows),
    "sync-stages": Table("sync.json", bench_tables.sync_stage_rows),
    "sync-check": Table("sync.json", bench_tables.sync_check_rows),
    "live": Table("live.json", bench_tables.live_rows),
    "live-build": Table("live.json", bench_tables.live_build_rows),
}


def markdown(rows: Rows) -> str:
    head, *body = rows
    line = "| " + " | ".join(head) + " |\n" + "|---" * len(head) + "|\n"
    return line + "".join("| " + " | ".join(cells) + " |\n" for cells in body)


def parse(text: str) -> Rows:
    """A markdown table's rows (the separator row left out), cells stripped."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= {"-", ":"} for c in cells):
                rows.append(cells)
    return rows


def render(name: str, current: str = "", results: Path = RESULTS) -> str:
    """Table ``name`` from its JSON, the carried columns' cells taken from ``current`` (the block as it stands)
    by the row's first cell; a row the current table lacks gets them empty."""
    table = TABLES[name]
    rows = table.render(json.loads((results / table.source).read_text(encoding="utf-8")))
    if table.carried:
        old = parse(current)
        kept = {r[0]: dict(zip(old[0], r, strict=False)) for r in old[1:]} if old else {}
        for column in table.carried:
            at = rows[0].index(column)
            for row in rows[1:]:
                row[at] = kept.get(row[0], {}).get(column, "")
    return markdown(rows)


def rendered(text: str, results: Path = RESULTS) -> tuple[str, list[str]]:
    """``text`` with every marked table rendered anew, and the names of those that changed. A marker naming no
    known table is an error: it would otherwise be left unchecked."""
    changed: list[str] = []

    def one(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in TABLES:
            raise KeyError(f"<!-- table:{name} -->: no such table (known: {', '.join(TABLES)})")
        body = render(name, match["body"], results)
        if body != match["body"]:
            changed.append(name)
        return match[1] + body + match[4]

    return BLOCK.sub(one, text), changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a table differs")
    args = parser.parse_args(argv)
    stale = []
    for path in READMES:
        text = path.read_text(encoding="utf-8")
        new, changed = rendered(text)
        stale += [f"{path.relative_to(ROOT)}: {name}" for name in changed]
        if changed and not args.check:
            path.write_text(new, encoding="utf-8")
    for line in stale:
        print(("differs from its JSON: " if args.check else "rewritten: ") + line)
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
