"""Human-readable output for query results and stats (tables that fit a terminal)."""

from __future__ import annotations

from typing import IO

from pyoxigraph import Literal, NamedNode, QueryBoolean, QueryResultsFormat, QuerySolutions, RdfFormat, serialize

from toolkg.store.oxigraph_store import DISPLAY_PREFIXES

MAX_CELL = 80


def compact(term) -> str:
    """A term as a short string: prefixed name for known IRIs, the lexical form for literals."""
    if term is None:
        return ""
    if isinstance(term, NamedNode):
        for prefix, base in DISPLAY_PREFIXES.items():
            if term.value.startswith(base):
                return f"{prefix}:{term.value[len(base) :]}"
        return term.value
    if isinstance(term, Literal):
        return term.value
    return str(term)


def table(headers: list[str], rows: list[list[str]]) -> str:
    cells = [
        [c if len(c) <= MAX_CELL else c[: MAX_CELL - 1] + "…" for c in (x.replace("\n", " ") for x in row)]
        for row in rows
    ]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = lambda values: "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()  # noqa: E731
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
