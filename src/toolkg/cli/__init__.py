"""The `toolkg` command: a thin layer over the library.

Exit codes: 0 ok, 1 failure, 2 usage or configuration error (bad flags, bad SPARQL, missing
files, no LLM endpoint),
3 finished but some inputs were quarantined (see the summary and runs/<run>/quarantine.jsonl).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from toolkg import __version__
from toolkg.cli import ops as cli_ops
from toolkg.display import one_line
from toolkg.errors import RequestError, StoreError, ToolkgError, UsageError
from toolkg.limits import Limits, parse_limits
from toolkg.models import MANIFEST_FORMATS
from toolkg.summary import EXIT_FAILURE, EXIT_OK, EXIT_USAGE

DEFAULT_STORE = ".toolkg"
MAX_PROBLEMS = 100  # malformed query lines listed before the rest are counted
EXPORT_FORMATS = {"ttl": "TURTLE", "nq": "N_QUADS", "trig": "TRIG", "jsonld": "JSON_LD", "nt": "N_TRIPLES"}


def default_store() -> str:
    return os.environ.get("TOOLKG_STORE", DEFAULT_STORE)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other usage error
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _add_store(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store", default=default_store(), metavar="DIR", help="store directory (default: $TOOLKG_STORE or ./.toolkg)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="toolkg",
        description="Turn catalogs of LLM tools into a knowledge graph for tool retrieval.",
        epilog="Exit codes: 0 ok, 1 failure, 2 usage or configuration error, 3 finished with quarantined inputs.",
    )
    parser.add_argument("--version", action="version", version=f"toolkg {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    build = sub.add_parser(
        "build",
        help="build or update the graph from manifest files or folders",
        description="Ingest tool manifests (MCP tools/list, MCP catalogs, OpenAI functions, "
        "OpenAPI 3, ToolLinkOS) into the store with a Prefect flow. Unchanged manifests are "
        "skipped; changed ones replace their graphs atomically.",
    )
    build.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or folders (searched recursively)")
    _add_store(build)
    build.add_argument("--format", choices=MANIFEST_FORMATS, help="force a manifest format (default: auto-detect)")
    build.add_argument("--server", help="server id for single-server manifests (default: wrapper field or file name)")
    build.add_argument("--prune", action="store_true", help="retract graphs of manifests no longer under PATHs")
    build.add_argument("--force", action="store_true", help="rebuild every manifest even if unchanged")
    build.add_argument(
        "--extractor",
        choices=("offline", "llm"),
        default="offline",
        help="triple extractor: offline rules (default, no network) or an OpenAI-compatible LLM "
        "(configure with TOOLKG_LLM_BASE_URL, TOOLKG_LLM_MODEL, TOOLKG_LLM_API_KEY or --llm-config)",
    )
    build.add_argument(
        "--llm-config", metavar="FILE", help="TOML file with an [llm] table (environment variables override it)"
    )
    build.add_argument(
        "--no-infer", dest="infer", action="store_false", help="skip dependency inference (declared edges only)"
    )
    build.add_argument(
        "--confirm-deps",
        action="store_true",
        help="have the configured LLM confirm or reject each inferred dependency (verdicts cached per pair)",
    )
    build.add_argument(
        "--no-links",
        dest="links",
        action="store_false",
        help="skip the structural links (co-invoked, schema compatible, shared parameters) and their embeddings",
    )
    build.add_argument(
        "--hide-declared",
        action="store_true",
        help="ignore the manifests' declared dependencies (to evaluate inference against them)",
    )
    build.add_argument(
        "--only",
        action="append",
        metavar="SERVER",
        help="sync just this server (repeatable): its graph diff and its dependency neighbourhood, nothing else; "
        "a server no manifest under PATHs defines any more is removed",
    )
    build.add_argument(
        "--dask",
        metavar="local[:N]|tcp://HOST:PORT",
        help="fan extraction out over a Dask cluster: a local one of N workers (default 2) or a running scheduler",
    )
    build.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change an input limit (repeatable); the limits and their defaults: "
        + "; ".join(f"{name}={value} ({what})" for name, value, what in Limits().describe()),
    )
    build.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    build.add_argument(
        "-v", "--verbose", action="store_true", help="show Prefect's logs and the traceback of any unexpected failure"
    )

    query = sub.add_parser(
        "query",
        help="run a SPARQL query over all graphs",
        description="Run SPARQL over the union of all graphs (tk:, rdfs:, dcterms:, skos:, "
        "prov: prefixes are predefined). CONSTRUCT/DESCRIBE print N-Triples.",
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
    _add_store(query)
    query.add_argument("--format", choices=("table", "json", "csv"), default="table", help="output format")

    export = sub.add_parser(
        "export",
        help="dump the store as RDF",
        description="Dump every graph (nq, trig, jsonld keep graphs; ttl, nt merge them).",
    )
    _add_store(export)
    export.add_argument("--format", choices=sorted(EXPORT_FORMATS), default="trig", help="RDF format (default trig)")
    export.add_argument("-o", "--output", help="output file (default: standard output)")

    deps = sub.add_parser(
        "deps",
        help="list dependency edges (declared and inferred)",
        description="List dependency edges: consumer, producer, kind, parameter, confidence, basis "
        "(declared | inferred | llm) and evidence. With --tool, that tool's edges and everything it "
        "depends on transitively.",
    )
    _add_store(deps)
    deps.add_argument("--tool", metavar="ID", help="one tool: 'server::tool' (or a bare name if unique)")
    deps.add_argument("--json", action="store_true", help="print JSON")
    deps.add_argument(
        "--links", action="store_true", help="also list structural links (co-invoked, schema compatible, shared params)"
    )

    methods = "bm25, dense, hybrid, grtf, ego, agent"
    retrieve = sub.add_parser(
        "retrieve",
        help="rank tools (and servers) for a query",
        description="Rank tools for a query with one method: bm25, dense, hybrid (baselines), grtf (Graph "
        "RAG-Tool Fusion: hybrid top-3 + dependencies depth-first), ego (ensemble of ego graphs), agent "
        "(Agent-as-a-Graph: servers and tools, type-weighted RRF). With --queries, every line of a JSONL file "
        "(id, query, steps) is ranked and written to --out, one JSON line per query. Every line is checked first: "
        "a malformed one (not UTF-8, not JSON, wrong types) is reported as FILE:LINE: what is wrong, and nothing "
        "is ranked or written (exit 2) unless --skip-invalid. --out appears whole or not at all.",
    )
    retrieve.add_argument("query", nargs="?", help="the query (or use --queries)")
    _add_store(retrieve)
    retrieve.add_argument("--method", default="grtf", help=f"one of {methods} (default grtf)")
    retrieve.add_argument("-k", type=int, default=10, help="how many tools and servers (default 10)")
    retrieve.add_argument("--step", action="append", default=[], help="a sub-step of the query (repeatable)")
    retrieve.add_argument("--queries", metavar="IN.jsonl", help="rank every query of this file")
    retrieve.add_argument("--out", metavar="OUT.jsonl", help="where --queries results go (default: standard output)")
    retrieve.add_argument(
        "--skip-invalid",
        action="store_true",
        help="skip malformed lines of --queries (counted on stderr) instead of stopping before any output",
    )
    retrieve.add_argument("--json", action="store_true", help="print JSON (one query)")
    retrieve.add_argument(
        "-o",
        "--option",
        action="append",
        default=[],
        metavar="METHOD.KEY=VALUE",
        help="a method option, e.g. grtf.seeds=1, grtf.depth=2, grtf.kinds=toolDirectlyDependsOn, "
        "grtf.first_stage=hybrid, agent.server_weight=1.0, ego.entries=5 (repeatable)",
    )

    evaluation = sub.add_parser(
        "eval",
        help="score retrieval methods side by side on labelled queries",
        description="Recall@K, mAP@K, nDCG@K and CompleteRecall@K over tools and Recall@K over servers, for every "
        "method in one run; printed as a table and written as JSON and a PNG plot. Every line of --queries is "
        "checked first (gold_tools required): a malformed one is reported as FILE:LINE: what is wrong, and nothing "
        "is evaluated or written (exit 2) unless --skip-invalid.",
    )
    _add_store(evaluation)
    evaluation.add_argument("--queries", required=True, metavar="Q.jsonl", help="labelled queries (gold_tools, ...)")
    evaluation.add_argument("--methods", default="bm25,dense,hybrid,grtf,ego,agent", help="comma-separated methods")
    evaluation.add_argument("--k", default="3,5,10,20", help="comma-separated cut-offs (default 3,5,10,20)")
    evaluation.add_argument("--limit", type=int, help="only the first N queries")
    evaluation.add_argument(
        "--skip-invalid",
        action="store_true",
        help="skip malformed lines of --queries (counted on stderr) instead of stopping before any output",
    )
    evaluation.add_argument("--out", metavar="DIR", help="where eval.json and eval.png go (default <store>/eval)")
    evaluation.add_argument(
        "-o", "--option", action="append", default=[], metavar="METHOD.KEY=VALUE", help="a method option (repeatable)"
    )

    stats = sub.add_parser("stats", help="counts by class, predicate and server")
    _add_store(stats)
    stats.add_argument("--json", action="store_true", help="print JSON")
    COMMANDS.update(cli_ops.add_parsers(sub, _add_store))
    return parser


def _open_store(directory: str, *, create: bool = False):
    from toolkg.store.oxigraph_store import ToolStore

    if not create and not ToolStore.exists(directory):
        raise StoreError(f"no toolkg store at {directory} (run 'toolkg build PATH... --store {directory}' first)")
    return ToolStore(directory)


def cmd_build(args: argparse.Namespace) -> int:
    from toolkg import progress
    from toolkg.extractors.reading import discover

    if not discover(args.paths):  # fail fast, before Prefect starts
        raise UsageError(f"no manifest files (.json, .yaml, .yml) under: {' '.join(args.paths)}")
    limits = parse_limits(args.limit)  # a bad --limit fails here, before Prefect starts
    if args.confirm_deps and not args.infer:
        raise UsageError("--confirm-deps reviews inferred dependencies: it cannot go with --no-infer")
    if args.extractor == "llm" or args.confirm_deps:  # fail fast, before Prefect starts
        from toolkg.llm.config import load_llm_config

        load_llm_config(args.llm_config).require_endpoint()
    elif args.llm_config:
        raise UsageError("--llm-config only applies with --extractor llm or --confirm-deps")
    if not args.verbose:  # failures are summarised by toolkg; instructor would also log each one
        logging.getLogger("instructor").setLevel(logging.CRITICAL)
    progress.enable(not args.quiet)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # Prefect's console logs only with -v: without it every failure is toolkg's one line, whatever the
    # environment asks of Prefect (its flow-run error log repeats the failure with a traceback).
    os.environ["PREFECT_LOGGING_LEVEL"] = "INFO" if args.verbose else "CRITICAL"
    if not args.verbose:  # Prefect's event and log senders say "Still processing items" as they flush at exit
        for name in ("EventsWorker", "APILogWorker"):
            logging.getLogger(name).setLevel(logging.ERROR)
    started = time.perf_counter()
    if args.only:
        return cli_ops.build_only(args, started)
    from toolkg.flows.local_server import use_shared_server

    # No PREFECT_API_URL: the shared local server (started on demand, stops when idle), not a temporary one.
    use_shared_server(say=None if args.quiet else lambda line: print(f"[toolkg] {line}", file=sys.stderr))
    from toolkg.flows.build import build_catalog

    if args.dask:
        if args.extractor != "offline":
            raise UsageError("--dask fans out the offline extractor; the LLM extractor is concurrent in-process")
        from toolkg.flows.scale import dask_task_runner

        build_catalog = build_catalog.with_options(task_runner=dask_task_runner(args.dask))
    summary = build_catalog(
        paths=[str(p) for p in args.paths],
        store_dir=args.store,
        format=args.format,
        server=args.server,
        prune=args.prune,
        force=args.force,
        extractor=args.extractor,
        llm_config=args.llm_config,
        infer=args.infer,
        hide_declared=args.hide_declared,
        links=args.links,
        confirm_deps=args.confirm_deps,
        dask=bool(args.dask),
        limits=limits.model_dump(exclude_defaults=True),
    )
    wall = time.perf_counter() - started
    pipeline = summary.pipeline_seconds
    print(summary)
    overhead = wall - pipeline
    print(f"  wall time: {wall:.2f}s (pipeline {pipeline:.2f}s, Prefect start-up and orchestration {overhead:.2f}s)")
    return summary.exit_code


def _read_query(args: argparse.Namespace) -> str:
    if args.file and args.sparql:
        raise UsageError("give the query as an argument or with -f, not both")
    if args.file:
        try:
            return Path(args.file).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read {args.file}: {exc.strerror}") from None
    if args.sparql == "-":
        return sys.stdin.read()
    if not args.sparql:
        raise UsageError("no query: give SPARQL, -f FILE, or - for standard input")
    return args.sparql


def _saved_query_text(args: argparse.Namespace) -> str:
    from toolkg.store.saved_queries import saved_query

    if args.sparql or args.file:
        raise UsageError("give SPARQL, -f FILE or --saved NAME (one of them)")
    values = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--param takes NAME=VALUE, not {item!r}")
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
    if args.param and not args.saved:
        raise UsageError("--param goes with --saved NAME")
    text = _saved_query_text(args) if args.saved else _read_query(args)
    if args.show:
        print(text, end="")
        return EXIT_OK
    store = _open_store(args.store)
    try:
        result = store.query(text)
    except SyntaxError as exc:
        raise UsageError(f"invalid SPARQL: {str(exc).splitlines()[0]}") from None
    print_result(result, args.format, sys.stdout)
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    import pyoxigraph

    store = _open_store(args.store)
    fmt = getattr(pyoxigraph.RdfFormat, EXPORT_FORMATS[args.format])
    if args.output:
        with open(args.output, "wb") as out:
            store.dump(out, fmt)
        print(f"wrote {args.output} ({Path(args.output).stat().st_size} bytes, {args.format})", file=sys.stderr)
    else:
        store.dump(sys.stdout.buffer, fmt)
    return EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:
    import json

    from toolkg.cli.render import format_stats
    from toolkg.store.stats import stats

    data = stats(_open_store(args.store))
    print(json.dumps(data, indent=2, ensure_ascii=False) if args.json else format_stats(data))
    return EXIT_OK


def _open_index(directory: str):
    from toolkg.retrieval import Index

    _open_store(directory)  # the friendly error when there is no store
    return Index(directory)


def _checked_queries(path: str, labelled: bool, skip_invalid: bool) -> list[dict]:
    """The queries of ``path``, every line checked (retrieval/queries.py): a malformed line is one line on
    stderr (FILE:LINE: what is wrong) and stops the command before any output, unless ``skip_invalid``."""
    from toolkg.display import one_line
    from toolkg.retrieval import InvalidQueries, load_queries

    rows, problems = load_queries(path, labelled=labelled)
    if problems and not skip_invalid:
        for problem in problems[:MAX_PROBLEMS]:
            print(problem, file=sys.stderr)
        if len(problems) > MAX_PROBLEMS:
            print(f"... and {len(problems) - MAX_PROBLEMS} more malformed line(s)", file=sys.stderr)
        raise InvalidQueries(path, problems)
    if problems:
        lines = ", ".join(str(p.line) for p in problems[:10]) + (", ..." if len(problems) > 10 else "")
        print(f"toolkg: skipped {len(problems)} malformed line(s) of {one_line(path)} (line {lines})", file=sys.stderr)
    return rows


def cmd_retrieve(args: argparse.Namespace) -> int:
    import json

    from toolkg.atomic import atomic_output
    from toolkg.display import one_line
    from toolkg.retrieval import Query, as_query, make_retriever, parse_options

    if bool(args.query) == bool(args.queries):
        raise UsageError("give a query or --queries FILE (one of them)")
    if args.k < 1:
        raise UsageError("-k must be at least 1")
    if args.skip_invalid and not args.queries:
        raise UsageError("--skip-invalid goes with --queries FILE")
    rows = _checked_queries(args.queries, labelled=False, skip_invalid=args.skip_invalid) if args.queries else None
    options = parse_options(args.option)
    if others := sorted(set(options) - {args.method}):
        raise UsageError(f"--option names {', '.join(others)}, not the --method {args.method}")
    index = _open_index(args.store)
    try:
        retriever = make_retriever(args.method, index, **options.get(args.method, {}))
        if rows is None:
            ranking = retriever.retrieve(Query("query", args.query, tuple(args.step)), args.k)
            if args.json:
                print(json.dumps(ranking.as_json("query"), indent=2, ensure_ascii=False))
                return EXIT_OK
            for rank, hit in enumerate(ranking.tools, start=1):
                print(
                    f"{rank:>3}. {one_line(hit.tool.server, 80)}  {one_line(hit.tool.name, 120)}  "
                    f"{hit.score:.4f}  {one_line(hit.why, 200)}"
                )
            print("servers: " + ", ".join(one_line(s, 80) for s, _ in ranking.servers))
            return EXIT_OK

        def rank_all(out) -> None:
            for row in rows:
                ranking = retriever.retrieve(as_query(row), args.k)
                out.write(json.dumps(ranking.as_json(row["id"]), ensure_ascii=False) + "\n")

        if not args.out:
            rank_all(sys.stdout)
            return EXIT_OK
        with atomic_output(args.out) as out:  # a failure never leaves a partial file
            rank_all(out)
        print(f"{len(rows)} queries ranked by {args.method} -> {one_line(args.out)}", file=sys.stderr)
        return EXIT_OK
    finally:
        index.close()


def cmd_eval(args: argparse.Namespace) -> int:
    from toolkg import progress
    from toolkg.retrieval import METHODS, parse_options
    from toolkg.retrieval.evaluate import evaluate, format_table, write_outputs

    try:
        ks = sorted({int(k) for k in args.k.split(",") if k.strip()})
    except ValueError:
        raise UsageError(f"--k takes comma-separated integers, not {args.k!r}") from None
    if not ks or ks[0] < 1:
        raise UsageError("--k needs positive cut-offs")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise UsageError(f"unknown method(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(METHODS)}")
    rows = _checked_queries(args.queries, labelled=True, skip_invalid=args.skip_invalid)[: args.limit]
    if not rows:
        raise UsageError(f"no queries to evaluate in {args.queries}")
    options = parse_options(args.option)
    progress.enable(True)
    index = _open_index(args.store)
    try:
        report = evaluate(index, rows, methods, ks, options)
    finally:
        index.close()
    report["store"], report["queries_file"] = str(Path(args.store).resolve()), args.queries
    out = Path(args.out) if args.out else Path(args.store) / "eval"
    out.mkdir(parents=True, exist_ok=True)
    write_outputs(report, out / "eval.json", out / "eval.png")
    print(format_table(report))
    print(f"wrote {out / 'eval.json'} and {out / 'eval.png'}")
    return EXIT_OK


COMMANDS = {
    "build": cmd_build,
    "query": cmd_query,
    "export": cmd_export,
    "stats": cmd_stats,
    "deps": cli_ops.cmd_deps,
    "retrieve": cmd_retrieve,
    "eval": cmd_eval,
}


def _show_tracebacks(verbose: bool) -> None:
    """With -v, the traceback of every unexpected failure (logged by toolkg.failures) goes to stderr."""
    log = logging.getLogger("toolkg")
    if verbose and not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("toolkg: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.DEBUG)
        log.propagate = False


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    verbose = bool(getattr(args, "verbose", False))
    _show_tracebacks(verbose)
    try:
        return COMMANDS[args.command](args)
    except RequestError as exc:
        print(f"toolkg: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except ToolkgError as exc:
        print(f"toolkg: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_FAILURE
    except BrokenPipeError:  # output piped into `head`: not an error
        sys.stderr.close()
        return EXIT_OK
    except OSError as exc:
        print(one_line(f"toolkg: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")), file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("toolkg: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a failure nobody foresaw: still one line (and the traceback with -v)
        from toolkg.failures import reason_of

        if verbose:
            import traceback

            traceback.print_exc(file=sys.stderr)
        hint = "" if verbose else " (rerun with -v for the traceback)"
        print(f"toolkg: error: {one_line(reason_of(exc))}{hint}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
