"""Human-readable output for query results and stats (tables that fit a terminal)."""

from __future__ import annotations

from typing import IO

from pyoxigraph import QueryBoolean, QueryResultsFormat, QuerySolutions, RdfFormat, serialize

from toolkg.display import clip, one_line, pad, width
from toolkg.store.oxigraph_store import compact

MAX_CELL = 80


def table(headers: list[str], rows: list[list[str]]) -> str:
    """Columns aligned by terminal width (a CJK character takes two); every cell one line, at most
    ``MAX_CELL`` columns, its control characters escaped (``display.one_line``).

    >>> print(table(["tool", "n"], [["東京", "1"], ["a\\nb", "22"]]))
    tool  n
    ----  --
    東京  1
    a\\nb  22
    """
    headers = [clip(one_line(h), MAX_CELL) for h in headers]
    cells = [[clip(one_line(c), MAX_CELL) for c in row] for row in rows]
    widths = [max([width(h)] + [width(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = lambda values: "  ".join(pad(v, w) for v, w in zip(values, widths, strict=True)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells])


def print_result(result, fmt: str, out: IO[str]) -> None:
    if isinstance(result, QueryBoolean):
        out.write(("true" if bool(result) else "false") + "\n")
        return
    if not isinstance(result, QuerySolutions):  # CONSTRUCT / DESCRIBE
        out.write(serialize(result, format=RdfFormat.N_TRIPLES).decode())
        return
    if fmt == "json":
        out.write(result.serialize(format=QueryResultsFormat.JSON).decode() + "\n")
    elif fmt == "csv":
        out.write(result.serialize(format=QueryResultsFormat.CSV).decode())
    else:
        names = [v.value for v in result.variables]
        rows = [[compact(row[n]) for n in names] for row in result]
        out.write(table(names, rows) + f"\n({len(rows)} row{'s' if len(rows) != 1 else ''})\n")


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
    return "\n".join(parts)
