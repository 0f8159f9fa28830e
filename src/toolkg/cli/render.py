"""Human-readable output for query results, stats and evaluations: tables that fit a terminal.

Every text table goes through ``table``, which lays it out with rich (wide characters take two columns,
long cells are cut to fit) after ``display.one_line`` has escaped each cell: names come from manifests.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import sys
from collections.abc import Collection
from typing import IO, TYPE_CHECKING

from pyoxigraph import BlankNode, QueryBoolean, QueryResultsFormat, QuerySolutions, RdfFormat, serialize

from toolkg.display import clip, escape_csv, escape_quoted, one_line
from toolkg.store.oxigraph_store import compact

if TYPE_CHECKING:  # rich loads only where a table is drawn
    from rich.console import JustifyMethod

MAX_WIDTH = 120  # wider lines are hard to read, and a pasted issue or log wraps them anyway
MIN_WIDTH = 40  # below this a table of a few columns would be all ellipses
GAP = 2  # spaces between columns
K_PER_TABLE = 10  # cut-offs per eval table: 10 score columns and the names fit MAX_WIDTH


def terminal_width() -> int | None:
    """Columns to cut tables to, or None for no cut. On a terminal its width ($COLUMNS when set), at most
    ``MAX_WIDTH``; when standard output is no terminal (a pipe or a file) None, so what a script reads is every
    cell whole, unless $COLUMNS asks for a width (at most ``MAX_WIDTH`` too)."""
    columns = os.environ.get("COLUMNS", "")
    if not sys.stdout.isatty() and not columns.strip().isdigit():
        return None
    columns_now = shutil.get_terminal_size((MAX_WIDTH, 24)).columns
    return max(MIN_WIDTH, min(columns_now, MAX_WIDTH))


NUMBER = re.compile(r"-?\d[\d,]*(\.\d+)?%?|-?\.\d+")  # 12, -3, 1,024, 0.125, 50%; not 'inf' or 'nan'


def _numeric(values: list[str]) -> bool:
    """A column of numbers (blanks and '-' allowed) is right-aligned and never cut first."""
    filled = [v for v in values if v not in ("", "-")]
    return bool(filled) and all(NUMBER.fullmatch(v) for v in filled)


def _bounded(text: str, width: int) -> str:
    return text if len(text) <= width else clip(text, width)


def table(headers: list[str], rows: list[list[str]], *, width: int | None = None, breaks: Collection[int] = ()) -> str:
    """Columns aligned by terminal width (a CJK character takes two), ``GAP`` spaces apart, a dashed rule
    under the header; every cell one line, its control characters escaped (``display.one_line``), and cut
    with '…' where the table would be wider than ``width`` (default ``terminal_width()``; None: no cut). Numeric
    columns are right-aligned. A blank line follows each row whose index is in ``breaks``.

    >>> print(table(["tool", "n"], [["東京", "1"], ["a\\nb", "22"], ["[bold]x", "333"]]))
    tool       n
    -------  ---
    東京       1
    a\\nb      22
    [bold]x  333
    >>> print(table(["tool", "description"], [["t", "word " * 20]], width=40))
    tool  description
    ----  ----------------------------------
    t     word word word word word word wor…
    """
    from rich.cells import cell_len
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    width = width or terminal_width()
    if width is None:  # no cut: as wide as the widest row
        heads, cells = [one_line(h) for h in headers], [[one_line(c) for c in row] for row in rows]
    else:
        # Cut before rich sees them: a cell never shows more than the width, and a huge literal costs nothing.
        # (A text of at most `width` characters needs no look: it is cut, if at all, by the layout.)
        heads = [_bounded(one_line(h), width) for h in headers]
        cells = [[_bounded(one_line(c), width) for c in row] for row in rows]
    # box=None: no borders, just GAP spaces between columns, so every row stays one grep-able line.
    grid = Table(box=None, padding=(0, GAP, 0, 0), pad_edge=False, show_edge=False, highlight=False)
    for i, head in enumerate(heads):
        numeric = _numeric([r[i] for r in cells])
        # A non-numeric column is "wrappable" to rich only so that it shrinks the widest columns first;
        # each cell's own no_wrap then cuts it with '…' instead of wrapping it onto more lines.
        justify: JustifyMethod = "right" if numeric else "left"
        grid.add_column(Text(head, no_wrap=True, overflow="ellipsis"), justify=justify, no_wrap=numeric)
    # The rule under the header is a row of dashes as wide as the column's widest cell, cropped (not cut
    # with '…') when rich narrows the column: it always ends where the column ends.
    natural = [max([cell_len(h)] + [cell_len(r[i]) for r in cells]) for i, h in enumerate(heads)]
    if width is None:
        width = sum(natural) + GAP * len(natural)
    grid.add_row(*(Text("-" * n, no_wrap=True, overflow="crop") for n in natural))
    for index, row in enumerate(cells):
        grid.add_row(*(Text(c, no_wrap=True, overflow="ellipsis") for c in row))
        if index in breaks and index < len(cells) - 1:
            grid.add_row(*(Text("") for _ in heads))
    # Plain text: no colour, and no markup, emoji codes or highlighting read into a tool named "[bold]x".
    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        color_system=None,
        no_color=True,
        force_terminal=False,
        force_jupyter=False,
        force_interactive=False,
        markup=False,
        emoji=False,
        highlight=False,
        legacy_windows=False,
        soft_wrap=False,
    )
    console.print(grid)
    return "\n".join(line.rstrip() for line in out.getvalue().rstrip("\n").split("\n"))


def _text(data: bytes | None) -> str:
    assert data is not None, "pyoxigraph's serialize returns the bytes when given no output"
    return data.decode()


def print_result(result, fmt: str, out: IO[str]) -> None:
    """A query's result in ``fmt``. JSON is always JSON: the W3C SPARQL results format for SELECT and ASK,
    JSON-LD (as Oxigraph writes it: expanded, one object per subject) for CONSTRUCT and DESCRIBE. CSV is the
    W3C CSV results format, a graph's triples as rows of subject, predicate, object. The table of a graph is
    its N-Triples. No format carries a raw control or bidi character (``display.escape_quoted``,
    ``display.escape_csv``); a table escapes them as every table does."""
    if isinstance(result, QueryBoolean):
        if fmt == "json":
            out.write(escape_quoted(_text(result.serialize(format=QueryResultsFormat.JSON))) + "\n")
        else:
            out.write(("true" if bool(result) else "false") + "\n")
    elif not isinstance(result, QuerySolutions):  # CONSTRUCT / DESCRIBE
        if fmt == "json":
            out.write(escape_quoted(_text(serialize(result, format=RdfFormat.JSON_LD))) + "\n")
        elif fmt == "csv":
            out.write(escape_csv(_triples_csv(result)))
        else:
            out.write(escape_quoted(_text(serialize(result, format=RdfFormat.N_TRIPLES))))
    elif fmt == "json":
        out.write(escape_quoted(_text(result.serialize(format=QueryResultsFormat.JSON))) + "\n")
    elif fmt == "csv":
        out.write(escape_csv(_text(result.serialize(format=QueryResultsFormat.CSV))))
    else:
        names = [v.value for v in result.variables]
        rows = [[compact(row[n]) for n in names] for row in result]
        out.write(table(names, rows) + f"\n({len(rows)} row{'s' if len(rows) != 1 else ''})\n")


def _triples_csv(triples) -> str:
    """Triples as the W3C SPARQL CSV results of ``SELECT ?subject ?predicate ?object``: IRIs and literals as
    their plain value, blank nodes as ``_:label``."""
    import csv

    def cell(term) -> str:
        return f"_:{term.value}" if isinstance(term, BlankNode) else term.value

    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\r\n")
    writer.writerow(["subject", "predicate", "object"])
    writer.writerows([cell(t.subject), cell(t.predicate), cell(t.object)] for t in triples)
    return text.getvalue()


def format_stats(data: dict) -> str:
    totals = data["totals"]
    parts = ["totals: " + ", ".join(f"{v} {k}" for k, v in totals.items()), "", "by class:"]
    parts.append(table(["class", "count"], [[k, str(v)] for k, v in data["by_class"].items()]))
    parts += [
        "",
        "by predicate:",
        table(["predicate", "count"], [[k, str(v)] for k, v in data["by_predicate"].items()]),
    ]
    servers = data["servers"]
    parts += [
        "",
        f"servers ({len(servers)}):",
        table(
            ["server", "category", "tools", "parameters", "outputs", "dependencies"],
            [
                [
                    s["server"],
                    s["category"] or "",
                    str(s["tools"]),
                    str(s["parameters"]),
                    str(s["outputs"]),
                    str(s["dependencies"]),
                ]
                for s in servers
            ],
        ),
    ]
    if "findings" in data:
        parts += ["", *format_findings(data["findings"])]
    return "\n".join(parts)


def format_findings(summary: dict) -> list[str]:
    """The audit's findings as `toolkg stats` prints them: counts by kind, then one row per finding of each
    flagged tool (its evidence is already safe to show: made visible, defanged, short)."""
    counts = ", ".join(
        f"{kind} {sum(by.values())} (" + ", ".join(f"{n} {s}" for s, n in sorted(by.items())) + ")"
        for kind, by in summary["by_kind"].items()
    )
    notes = summary["tools_with_notes_only"]
    lines = [
        f"findings: {summary['tools_flagged']} tools flagged"
        + (f"; {notes} with notes only (a name another server has too)" if notes else "")
        + (f"; by kind: {counts}" if counts else "")
    ]
    rows = [
        [entry["tool"], f["kind"], f["severity"], f["where"], f["evidence"], "yes" if entry["approved"] else ""]
        for entry in summary["flagged"]
        for f in entry["findings"]
    ]
    if rows:
        lines.append(table(["tool", "kind", "severity", "where", "evidence", "approved"], rows))
    return lines


def format_eval(report: dict) -> str:
    """``retrieval.evaluate``'s report as tables: one row per metric and method with a column per K (metric
    blocks apart, at most ``K_PER_TABLE`` cut-offs per table), then one row of latencies per method.

    >>> report = {"queries": 2, "k": [1, 3], "methods": {
    ...     "bm25": {"metrics": {"recall": {1: 0.5, 3: 1.0}, "map": {1: 0.5, 3: 0.75}},
    ...              "latency_ms": {"p50": 1.23, "p95": 2.5, "mean": 1.4}},
    ...     "grtf": {"metrics": {"recall": {1: 1.0, 3: 1.0}, "map": {1: 1.0, 3: 1.0}},
    ...              "latency_ms": {"p50": 4.0, "p95": 9.87, "mean": 5.0}}}}
    >>> print(format_eval(report))
    2 queries, K = 1, 3 (latency after one warm-up query)
    <BLANKLINE>
    metric  method     @1     @3
    ------  ------  -----  -----
    recall  bm25    0.500  1.000
    recall  grtf    1.000  1.000
    <BLANKLINE>
    map     bm25    0.500  0.750
    map     grtf    1.000  1.000
    <BLANKLINE>
    method  p50 ms  p95 ms  mean ms
    ------  ------  ------  -------
    bm25       1.2     2.5      1.4
    grtf       4.0     9.9      5.0
    """
    from toolkg.retrieval.evaluate import METRICS  # here: query and stats need not import the retrievers

    ks, methods = report["k"], report["methods"]
    metrics = [m for m in METRICS if any(m in r["metrics"] for r in methods.values())]
    parts = [f"{report['queries']} queries, K = {', '.join(map(str, ks))} (latency after one warm-up query)"]
    for start in range(0, len(ks), K_PER_TABLE):
        chunk = ks[start : start + K_PER_TABLE]
        rows, breaks = [], set()
        for metric in metrics:
            for name, result in methods.items():
                if metric in result["metrics"]:
                    values = result["metrics"][metric]  # keys are ints, or strings in a report read from JSON
                    rows.append([metric, name, *(f"{values.get(k, values.get(str(k))):.3f}" for k in chunk)])
            breaks.add(len(rows) - 1)
        parts += ["", table(["metric", "method", *(f"@{k}" for k in chunk)], rows, breaks=breaks)]
    latency = [[name, *(f"{r['latency_ms'][p]:.1f}" for p in ("p50", "p95", "mean"))] for name, r in methods.items()]
    parts += ["", table(["method", "p50 ms", "p95 ms", "mean ms"], latency)]
    return "\n".join(parts)
