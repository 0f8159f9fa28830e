"""SPARQL shapes that overflowed Oxigraph's stack, the sizes that crashed it, and the largest size the query guard
accepts for a shape (``benchmarks/query_guard_bench.py`` measures where)."""

from __future__ import annotations

from toolkg.store.query_guard import QueryRefused, check_query

# Each shape as a function of its size n; "nested" ones grow in depth, the others in length.
SHAPES = {
    "braces": lambda n: "SELECT * WHERE " + "{" * n + "?s ?p ?o" + "}" * n,
    "parens": lambda n: "SELECT * WHERE { ?s ?p ?o FILTER(" + "(" * n + "?o" + ")" * n + ") }",
    "path-parens": lambda n: "SELECT * WHERE { ?s " + "(" * n + "<urn:p>" + ")" * n + " ?o }",
    "blank-nodes": lambda n: "SELECT * WHERE { ?s <urn:p> " + "[ <urn:p> " * n + "?o" + " ]" * n + " }",
    "not-exists": lambda n: "SELECT * WHERE { ?s ?p ?o " + "FILTER NOT EXISTS {" * n + "?s ?p ?o" + "}" * n + " }",
    "subselects": lambda n: "SELECT * WHERE " + "{ SELECT * WHERE " * n + "{?s ?p ?o}" + "}" * n,
    "or-chain": lambda n: "SELECT * WHERE { ?s ?p ?o FILTER(" + " || ".join(["?o"] * n) + ") }",
    "minus-chain": lambda n: "SELECT * WHERE { BIND(" + "-".join(["1"] * n) + " AS ?x) }",
    "negations": lambda n: "SELECT * WHERE { BIND(" + "!" * n + "true AS ?x) }",
    "binds": lambda n: "SELECT * WHERE { " + " ".join(f"BIND({i} AS ?v{i})" for i in range(n)) + " }",
    "alternatives": lambda n: "SELECT * WHERE { ?s " + "|".join(["<urn:p>"] * n) + " ?o }",
    "filters": lambda n: "SELECT * WHERE { ?s ?p ?o " + " ".join("FILTER(?o)" for _ in range(n)) + " }",
    "concat-args": lambda n: "SELECT * WHERE { BIND(CONCAT(" + ",".join(['"a"'] * n) + ") AS ?x) }",
}

# Shapes whose largest accepted size is slow to plan (seconds to minutes, not a crash): checked at the limit
# only for being refused above it; the timeout covers their cost on the endpoint.
SLOW = {
    "optionals": lambda n: "SELECT * WHERE { ?s ?p ?o " + " ".join(["OPTIONAL { ?s ?p ?o }"] * n) + " }",
    "unions": lambda n: "SELECT * WHERE { " + " UNION ".join(["{?s ?p ?o}"] * n) + " }",
    "star": lambda n: "SELECT * WHERE { ?s " + " ; ".join(f"<urn:p> ?o{i}" for i in range(n)) + " }",
}

# The smallest size that crashed (benchmarks/query_guard_bench.py: pyoxigraph in a main thread, or
# `oxigraph serve-read-only`, whichever was lower; the other shapes did not crash up to 6,000).
CRASHED_AT = {"braces": 2250, "parens": 4687, "blank-nodes": 3468, "not-exists": 843, "subselects": 2625, "binds": 2625}


def largest_accepted(shape) -> int:
    lo, hi = 1, 100_000
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            check_query(shape(mid))
            lo = mid
        except QueryRefused:
            hi = mid - 1
    return lo
