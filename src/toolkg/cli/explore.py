"""Reading the graph: `toolkg query`, `export`, `stats` and `deps`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from toolkg.cli.common import UsageError, add_output, add_store, add_verbosity, one_of, open_store, print_json, usage
from toolkg.ontology.docs import CONTEXT_IRI, ontology_html
from toolkg.store.query_guard import QueryLimits, QueryRefused, check_query, on_large_stack, syntax_error_line
from toolkg.summary import EXIT_OK

if TYPE_CHECKING:  # the command loads the module when it runs
    from toolkg.store.dependencies import DependencyRow, LinkRow

EXPORT_FORMATS = {"ttl": "TURTLE", "nq": "N_QUADS", "trig": "TRIG", "jsonld": "JSON_LD", "nt": "N_TRIPLES"}


def add_parsers(sub) -> None:
    _add_query(sub)
    _add_export(sub)
    _add_stats(sub)
    _add_deps(sub)


def _add_query(sub) -> None:
    query = sub.add_parser(
        "query",
        help="run a SPARQL query over all graphs",
        description="Run SPARQL over the union of all graphs (tk:, rdf:, rdfs:, xsd:, dcterms:, skos:, prov:, owl: "
        "prefixes are predefined). --json is JSON for every form: the W3C SPARQL JSON results for SELECT and ASK, "
        "JSON-LD for CONSTRUCT and DESCRIBE (whose table is N-Triples). Read-only; the query is checked first as "
        "toolkg serve checks it (size, nesting, complexity; SERVICE only with --allow-federation).",
    )
    query.add_argument("sparql", nargs="?", help="the query; '-' reads standard input")
    query.add_argument("-f", "--file", help="read the query from FILE")
    query.add_argument("--saved", metavar="NAME", help="run a saved analyst query (see --list-saved)")
    query.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a saved query's parameter, e.g. -p server=filesystem (repeatable; leave out to query everything)",
    )
    query.add_argument("--list-saved", action="store_true", help="list the saved queries and their parameters")
    query.add_argument("--show", action="store_true", help="print the query text instead of running it")
    query.add_argument(
        "--allow-federation",
        action="store_true",
        help="let the query use SERVICE <url> (it fetches from that URL; refused by default)",
    )
    add_store(query)
    add_output(query, formats=("table", "json", "csv"), what="result format (json and csv: the W3C formats)")
    add_verbosity(query)
    query.set_defaults(handler=cmd_query)


def _add_export(sub) -> None:
    export = sub.add_parser(
        "export",
        help="dump the store as RDF",
        description="Dump every graph (nq, trig, jsonld keep graphs; ttl, nt merge them). Turtle and TriG use one "
        "prefix per id family (tool:, server:, server-graph: ...); JSON-LD is compact, with toolkg's context "
        "embedded (published at " + CONTEXT_IRI + "). --ontology-html writes the ontology's documentation "
        "page instead.",
    )
    add_store(export)
    add_output(export, formats=sorted(EXPORT_FORMATS), default="trig", json_format="jsonld", what="RDF format")
    export.add_argument("-o", "--output", "--out", help="output file (default: standard output)")
    export.add_argument(
        "--remote-context",
        action="store_true",
        help="jsonld: name the published context instead of embedding it (readers must be able to fetch it)",
    )
    export.add_argument(
        "--ontology-html",
        metavar="FILE",
        help="write the ontology's HTML documentation (what toolkg serve shows at /ontology) to FILE; no store needed",
    )
    add_verbosity(export)
    export.set_defaults(handler=cmd_export)


def _add_stats(sub) -> None:
    stats = sub.add_parser(
        "stats",
        help="counts by class, predicate and server",
        description="Count the store's nodes by class, its triples by predicate, and each server's tools, "
        "parameters, outputs and dependencies.",
    )
    add_store(stats)
    add_output(stats)
    add_verbosity(stats)
    stats.set_defaults(handler=cmd_stats)


def _add_deps(sub) -> None:
    deps = sub.add_parser(
        "deps",
        help="list dependency edges (declared and inferred)",
        description="List dependency edges: consumer, producer, kind, parameter, confidence, basis "
        "(declared | inferred | llm) and evidence. With --tool, that tool's edges and everything it "
        "depends on transitively.",
    )
    add_store(deps)
    deps.add_argument("--tool", metavar="ID", help="one tool: 'server::tool' (or a bare name if unique)")
    deps.add_argument(
        "--links", action="store_true", help="also list structural links (co-invoked, schema compatible, shared params)"
    )
    deps.add_argument(
        "--explain",
        action="store_true",
        help="with --tool: every edge inference proposed into that tool, kept or dropped, and the step and reason "
        "that dropped it (re-runs inference over the stored catalog)",
    )
    deps.add_argument(
        "--config",
        metavar="FILE.toml",
        help="with --explain: the build's settings file, whose [inference] section the build used (default: defaults)",
    )
    add_output(deps)
    add_verbosity(deps)
    deps.set_defaults(handler=cmd_deps)


# -- query ------------------------------------------------------------------------------------------


def _read_query(args: argparse.Namespace) -> str:
    usage(not (args.file and args.sparql), "give the query as an argument or with -f, not both")
    if args.file:
        try:
            return Path(args.file).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read {args.file}: {exc.strerror}") from None
    if args.sparql == "-":
        return sys.stdin.read()
    usage(args.sparql, "no query: give SPARQL, -f FILE, or - for standard input")
    return args.sparql


def _saved_query_text(args: argparse.Namespace) -> str:
    from toolkg.store.saved_queries import saved_query

    one_of("give SPARQL, -f FILE or --saved NAME (one of them)", args.saved, args.sparql or args.file)
    values = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        usage(sep and name, f"--param takes NAME=VALUE, not {item!r}")
        values[name.strip()] = value.strip()
    return saved_query(args.saved).render(values)


def _list_saved() -> int:
    from toolkg.store.saved_queries import saved_queries

    for name, q in saved_queries().items():
        print(f"{name:<26} {q.description}")
        for p in q.params:
            print(f"{'':<26}   -p {p.name}=...  {p.help}")
    return EXIT_OK


def cmd_query(args: argparse.Namespace) -> int:
    from toolkg.cli.render import print_result

    if args.list_saved:
        return _list_saved()
    usage(args.saved or not args.param, "--param goes with --saved NAME")
    text = _saved_query_text(args) if args.saved else _read_query(args)
    if args.show:
        print(text, end="")
        return EXIT_OK
    try:
        check_query(text, QueryLimits(allow_service=args.allow_federation))
    except QueryRefused as exc:
        raise UsageError(str(exc)) from None
    store = open_store(args.store)
    try:  # evaluated while printed (results are lazy), so both run on the large stack
        on_large_stack(lambda: print_result(store.query(text), args.output_format, sys.stdout))
    except SyntaxError as exc:
        raise UsageError(syntax_error_line(exc, text)) from None
    return EXIT_OK


# -- export, stats ----------------------------------------------------------------------------------


def cmd_export(args: argparse.Namespace) -> int:
    import pyoxigraph

    from toolkg.display import QuotedEscaper

    if args.ontology_html:
        return _write_ontology_html(args)
    usage(not args.remote_context or args.output_format == "jsonld", "--remote-context goes with --format jsonld")
    store = open_store(args.store)
    fmt = getattr(pyoxigraph.RdfFormat, EXPORT_FORMATS[args.output_format])
    # Every RDF syntax takes \uXXXX where a raw control or bidi character from a tool's text could stand.
    if args.output:
        with open(args.output, "wb") as out:
            escaped = QuotedEscaper(out)
            store.dump(escaped, fmt, remote_context=args.remote_context)
            escaped.flush()
        size = Path(args.output).stat().st_size
        print(f"wrote {args.output} ({size} bytes, {args.output_format})", file=sys.stderr)
    else:
        escaped = QuotedEscaper(sys.stdout.buffer)
        store.dump(escaped, fmt, remote_context=args.remote_context)
        escaped.flush()
    return EXIT_OK


def _write_ontology_html(args: argparse.Namespace) -> int:
    usage(not args.output, "--ontology-html names its own file: leave out -o")
    try:
        Path(args.ontology_html).write_text(ontology_html(), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {args.ontology_html}: {exc.strerror}") from None
    print(f"wrote {args.ontology_html} (the ontology's documentation page)", file=sys.stderr)
    return EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:
    from toolkg.cli.render import format_stats
    from toolkg.store.stats import stats

    data = stats(open_store(args.store))
    if args.output_format == "json":
        print_json(data)
    else:
        print(format_stats(data))
    return EXIT_OK


# -- deps -------------------------------------------------------------------------------------------


def _resolve_tool(store, name: str) -> str:
    """The stored id ``--tool`` names (``server::tool``, or a tool name only one server has); a name no tool has
    is a usage error naming the closest ids, never an empty answer about a tool that is not there."""
    from pyoxigraph import Literal

    from toolkg.display import one_line

    if "::" in name:
        found = store.select("SELECT ?id WHERE { ?t a tk:Tool ; tk:identifier ?id }", {"id": Literal(name)})
        ids = [name] if found else []
    else:
        rows = store.select(
            "SELECT ?id ?name WHERE { ?t a tk:Tool ; tk:name ?name ; tk:identifier ?id }", {"name": Literal(name)}
        )
        ids = sorted({r["id"].value for r in rows})
    usage(ids, f"--tool {one_line(name)!r}: no such tool in {one_line(store.directory)}{_did_you_mean(store, name)}")
    found = ", ".join(one_line(i) for i in ids[:20])
    usage(len(ids) == 1, f"--tool {one_line(name)!r} must name exactly one tool (found: {found}); use server::tool")
    return ids[0]


def _did_you_mean(store, name: str) -> str:
    """'; did you mean a::b, c::d?' with the stored ids (or, for a bare name, tool names) closest to ``name``."""
    from rapidfuzz import fuzz, process

    from toolkg.display import one_line

    rows = store.select("SELECT ?id WHERE { ?t a tk:Tool ; tk:identifier ?id }")
    ids = [r["id"].value for r in rows]
    # A bare name is matched against the tool part of each id, so 'place_ordr' finds 'shop::acme_place_order'.
    choices = ids if "::" in name else [i.partition("::")[2] for i in ids]
    close = process.extract(name, choices, scorer=fuzz.ratio, limit=3, score_cutoff=80)
    best = close[0][1] if close else 0
    # Only those about as close as the closest: 'delta_user_logn' is not a misspelt 'etrade_user_login'.
    names = [one_line(ids[i] if "::" in name else choices[i]) for _, score, i in close if score >= best - 5]
    return f"; did you mean {', '.join(names)}?" if names else ""


def cmd_deps(args: argparse.Namespace) -> int:
    from toolkg.store.dependencies import dependency_rows, link_rows, transitive_dependencies

    usage(args.tool or not args.explain, "--explain explains one tool's edges: give --tool ID")
    usage(args.explain or not args.config, "--config only applies with --explain")
    store = open_store(args.store)
    tool = _resolve_tool(store, args.tool) if args.tool else None
    if args.explain:
        assert tool is not None, "usage() required --tool"
        return _explain(store, tool, args)
    rows = dependency_rows(store, tool)
    closure = transitive_dependencies(store, tool) if tool else None
    links = link_rows(store, tool) if args.links else None
    if args.output_format == "json":
        extra = ({"transitive": closure} if tool else {}) | ({"links": links} if args.links else {})
        print_json({"edges": rows, **extra})
    else:
        _print_deps(tool, rows, closure, links)
    return EXIT_OK


def _explain(store, tool: str, args: argparse.Namespace) -> int:
    """``canonicalize.inference.explain`` over the stored catalog, as the build's infer stage reads it."""
    from toolkg.canonicalize.inference.entities import keep_label_vectors_in
    from toolkg.canonicalize.inference.explain import KEPT, explain
    from toolkg.config import BuildConfig
    from toolkg.display import one_line as o
    from toolkg.ontology.vocabulary import Basis
    from toolkg.paths import store_cache
    from toolkg.store.catalog_reads import server_catalogs
    from toolkg.store.dependencies import declared_pairs, dependency_rows
    from toolkg.store.records import read_tools

    options = (BuildConfig.from_file(args.config) if args.config else BuildConfig()).inference
    keep_label_vectors_in(store_cache(store.directory, "embeddings"))  # the vectors the build's infer stage kept
    considered = explain(read_tools(store), tool, options, declared_pairs(store), server_catalogs(store))
    rows = dependency_rows(store, tool)  # its edges either way: those into it are what inference explains
    stored = {(r["producer"], r["parameter"]) for r in rows if r["consumer"] == tool and r["basis"] != Basis.DECLARED}
    kept = {(c.edge.producer, c.edge.parameter) for c in considered if c.fate == KEPT}
    matches = stored == kept
    if args.output_format == "json":
        print_json({"tool": tool, "considered": [c.as_dict() for c in considered], "matches_store": matches})
    else:
        if not considered:
            print(f"{o(tool)}: inference proposed no edge into it")
        for c in considered:
            e = c.edge
            via = f".{o(e.parameter)}" if e.parameter else ""
            print(f"{o(tool)}{via} <- {o(e.producer)}  {c.fate}  [{o(e.rule)} {e.confidence:.2f}]  {o(c.reason, 300)}")
    if not matches:
        print(
            "note: the stored inferred edges differ from what these settings infer now (the build used other "
            "settings, an LLM review, or another toolkg version): pass the build's --config, or rebuild",
            file=sys.stderr,
        )
    return EXIT_OK


def _print_deps(
    tool: str | None, rows: list[DependencyRow], closure: list[str] | None, links: list[LinkRow] | None
) -> None:
    """Every name and evidence comes from manifests: one terminal line each (display.one_line)."""
    from toolkg.display import one_line as o

    if tool and not rows:
        print(f"{o(tool)}: no dependency edges")
    for r in rows:
        via = f" via {o(r['parameter'])}" if r["parameter"] else ""
        confidence = f"{r['confidence']:.2f}" if r["confidence"] is not None else "-"
        print(
            f"{o(r['consumer'])} -> {o(r['producer'])}  {o(r['kind'])}{via}  [{o(r['basis'])} {confidence}]  "
            f"{o(r['evidence'], 300)}"
        )
    if tool:
        assert closure is not None, "computed whenever a tool is named"
        print(f"{o(tool)} depends transitively on {len(closure)} tool(s): {', '.join(map(o, closure)) or '-'}")
    else:
        print(f"{len(rows)} edge(s)", file=sys.stderr)
    for link in links or ():
        print(
            f"{o(link['source'])} ~ {o(link['target'])}  {o(link['kind'])}  [{link['score']:.2f}]  "
            f"{o(link['evidence'], 300)}"
        )
    if links is not None and not tool:
        print(f"{len(links)} link(s)", file=sys.stderr)
