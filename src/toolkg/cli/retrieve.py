"""Tool retrieval: `toolkg retrieve` (rank tools for a query or a file of them) and `toolkg eval` (score the
methods side by side on labelled queries)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from toolkg.cli.common import UsageError, add_output, add_store, add_verbosity, one_of, open_store, print_json, usage
from toolkg.summary import EXIT_OK

MAX_PROBLEMS = 100  # malformed query lines listed before the rest are counted
METHODS = "auto, bm25, dense, hybrid, grtf, ego, agent"


def add_parsers(sub) -> None:
    _add_retrieve(sub)
    _add_eval(sub)


def _add_retrieve(sub) -> None:
    retrieve = sub.add_parser(
        "retrieve",
        help="rank tools (and servers) for a query",
        description="Rank tools for a query with one method: auto (the default: the request, its steps and "
        "the needs it implies ranked by a learned fusion of dense and BM25, each tool with a calibrated probability; a "
        "dependency of a top tool takes a place only from a less likely text hit), bm25, dense, hybrid "
        "(baselines), grtf (Graph RAG-Tool Fusion: dense top-3 + dependencies depth-first), ego (ensemble of "
        "ego graphs), agent (Agent-as-a-Graph: servers and tools, type-weighted RRF). With --queries, every "
        "line of a JSONL file (id, query, steps) is ranked and written to --out, one JSON line per query. "
        "Every line is checked first: a malformed one (not UTF-8, not JSON, wrong types) is reported as "
        "FILE:LINE: what is wrong, and nothing is ranked or written (exit 2) unless --skip-invalid. --out "
        "appears whole or not at all.",
    )
    retrieve.add_argument("query", nargs="?", help="the query (or use --queries)")
    add_store(retrieve)
    retrieve.add_argument("--method", default="auto", help=f"one of {METHODS} (default auto)")
    retrieve.add_argument("-k", "--k", type=int, default=10, help="how many tools and servers (default 10)")
    retrieve.add_argument("--step", action="append", default=[], help="a sub-step of the query (repeatable)")
    retrieve.add_argument(
        "--min-score",
        type=float,
        metavar="P",
        help="auto only: answer no tool when the best scores below P, 0-1 (default: the calibrated threshold toolkg "
        "mcp uses; 0: never abstain); not applied to --queries",
    )
    retrieve.add_argument("--queries", metavar="IN.jsonl", help="rank every query of this file")
    retrieve.add_argument(
        "--out", "--output", metavar="OUT.jsonl", help="where --queries results go (default: standard output)"
    )
    _add_skip_invalid(retrieve)
    retrieve.add_argument(
        "-o",
        "--option",
        action="append",
        default=[],
        metavar="METHOD.KEY=VALUE",
        help="a method option, e.g. grtf.seeds=1, grtf.depth=2, grtf.kinds=toolDirectlyDependsOn, "
        "grtf.first_stage=hybrid, agent.server_weight=1.0, ego.entries=5 (repeatable)",
    )
    add_output(retrieve, what="output for one query (--queries always writes JSON lines)")
    add_verbosity(retrieve)
    retrieve.set_defaults(handler=cmd_retrieve)


def _add_eval(sub) -> None:
    evaluation = sub.add_parser(
        "eval",
        help="score retrieval methods side by side on labelled queries",
        description="Recall@K, mAP@K, nDCG@K and CompleteRecall@K over tools and Recall@K over servers, for every "
        "method in one run; printed as a table (or JSON) and written as JSON and (with the plots extra) a PNG plot. "
        "Every line of "
        "--queries is checked first (gold_tools required): a malformed one is reported as FILE:LINE: what is "
        "wrong, and nothing is evaluated or written (exit 2) unless --skip-invalid.",
    )
    add_store(evaluation)
    evaluation.add_argument("--queries", required=True, metavar="Q.jsonl", help="labelled queries (gold_tools, ...)")
    evaluation.add_argument(
        "--methods", default="auto,bm25,dense,hybrid,grtf,ego,agent", help="comma-separated methods"
    )
    evaluation.add_argument("-k", "--k", default="3,5,10,20", help="comma-separated cut-offs (default 3,5,10,20)")
    evaluation.add_argument("--limit", type=int, help="only the first N queries")
    _add_skip_invalid(evaluation)
    evaluation.add_argument(
        "--out",
        "--output",
        metavar="DIR",
        help="where eval.json and eval.png (with the plots extra) go (default <store>/eval)",
    )
    evaluation.add_argument(
        "-o", "--option", action="append", default=[], metavar="METHOD.KEY=VALUE", help="a method option (repeatable)"
    )
    add_output(evaluation, what="how the scores print (eval.json and eval.png are written either way)")
    add_verbosity(evaluation, quiet=True)
    evaluation.set_defaults(handler=cmd_eval)


def _add_skip_invalid(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--skip-invalid",
        action="store_true",
        help="skip malformed lines of --queries (counted on stderr) instead of stopping before any output",
    )


def _open_index(directory: str):
    from toolkg.retrieval import Index
    from toolkg.store.oxigraph_store import ToolStore

    if not ToolStore.exists(directory):
        open_store(directory)  # raises the friendly error (and opens nothing: the retriever opens it read-only)
    return Index(directory)


def _one_blas_thread() -> None:
    """Retrieval multiplies small matrices (a query through the model, a vector against the catalog's):
    OpenBLAS's threads there mostly wait for each other, and on a busy machine they wait for the processor too.
    Measured under load (2 cores): a query's forward pass took 0.18-0.36 s on OpenBLAS's default threads against
    0.02-0.04 s on one. Set before NumPy loads (it reads the variable once); a user's own setting wins."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


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


# -- retrieve ---------------------------------------------------------------------------------------


def cmd_retrieve(args: argparse.Namespace) -> int:
    _one_blas_thread()
    from toolkg.retrieval import make_retriever, parse_options  # looked up per call (tests patch make_retriever)

    one_of("give a query or --queries FILE (one of them)", args.query, args.queries)
    usage(args.k >= 1, "-k must be at least 1")
    usage(args.min_score is None or 0 <= args.min_score <= 1, "--min-score must be between 0 and 1")
    usage(args.queries or not args.skip_invalid, "--skip-invalid goes with --queries FILE")
    rows = _checked_queries(args.queries, labelled=False, skip_invalid=args.skip_invalid) if args.queries else None
    options = parse_options(args.option)
    if others := sorted(set(options) - {args.method}):
        raise UsageError(f"--option names {', '.join(others)}, not the --method {args.method}")
    index = _open_index(args.store)
    try:
        retriever = make_retriever(args.method, index, **options.get(args.method, {}))
        if rows is None:
            _rank_one(retriever, len(index.catalog.tools), args)
        else:
            _rank_all(retriever, rows, args)
        return EXIT_OK
    finally:
        index.close()


def _rank_one(retriever, tools: int, args: argparse.Namespace) -> None:
    from toolkg.cli.render import table
    from toolkg.display import one_line
    from toolkg.retrieval import Query

    ranking = retriever.retrieve(Query("query", args.query, tuple(args.step)), args.k)
    abstained = _abstention(ranking, args)
    if abstained:  # a clear miss: no tools, and no prerequisite chains hung on a weak hit
        ranking.tools, ranking.servers = [], []
    if args.output_format == "json":
        answer = ranking.as_json("query", why=True)
        print_json(answer | ({"abstain": True, "reason": abstained} if abstained else {"abstain": False}))
        return
    print(_header(args, tools))
    if abstained:
        print(f"abstain: {abstained}")
        return
    rows = [
        [str(rank), hit.tool.server, hit.tool.name, f"{hit.score:.4f}", hit.why]
        for rank, hit in enumerate(ranking.tools, start=1)
    ]
    laid_out = table(["rank", "server", "tool", "score", "why"], rows)
    print(laid_out)
    if cut := _cut_reasons(rows, laid_out.split("\n")[2:]):
        print("why, in full where cut above:")
        print("\n".join(f"{rank:>4}  {why}" for rank, why in cut))
    print("servers: " + ", ".join(one_line(s, 80) for s, _ in ranking.servers))


def _abstention(ranking, args: argparse.Namespace) -> str | None:
    """Why ``auto``'s ranking is no answer (its best calibrated score is below --min-score, by default the
    shipped threshold), or None; other methods' scores are not probabilities, so they never abstain."""
    from toolkg.retrieval.abstain import abstention, default_min_score

    if args.method != "auto":
        return None
    threshold = default_min_score() if args.min_score is None else args.min_score
    return abstention(ranking.tools, threshold, "pass --min-score 0")


def _cut_reasons(rows: list[list[str]], lines: list[str]) -> list[tuple[str, str]]:
    """(rank, why) of each row whose ``why`` (its last cell) the table cut with '…'.

    The table keeps one line per row, so a long reason is cut there to fit the window; these follow it whole
    (the terminal wraps them), so every word of a ``why`` can be read without --json."""
    from toolkg.display import one_line

    return [
        (row[0], one_line(row[-1]))
        for row, line in zip(rows, lines, strict=True)
        if not line.endswith(one_line(row[-1]))
    ]


def _header(args: argparse.Namespace, tools: int) -> str:
    """What was asked of what: the query (cut), its steps, the method, k, and the store with its snapshot
    (the last build's run id), so a pasted result says where it came from."""
    from toolkg.display import one_line
    from toolkg.store.snapshots import current_snapshot

    steps = f" + {len(args.step)} step{'s' if len(args.step) != 1 else ''}" if args.step else ""
    snapshot = current_snapshot(args.store)  # None for a store on a SPARQL server: no local snapshots
    about = f"snapshot {one_line(snapshot.name)}, {tools} tools" if snapshot else f"{tools} tools"
    return (
        f'retrieve "{one_line(args.query, 60)}"{steps} with {args.method}, k={args.k}, '
        f"store {one_line(Path(args.store).resolve())} ({about})"
    )


def _rank_all(retriever, rows: list[dict], args: argparse.Namespace) -> None:
    """One JSON line per query, to standard output or atomically to --out (never a partial file)."""
    import json

    from toolkg.atomic import atomic_output
    from toolkg.display import escape_quoted, one_line
    from toolkg.retrieval import as_query

    def write(out) -> None:
        for row in rows:
            ranking = retriever.retrieve(as_query(row), args.k)
            out.write(escape_quoted(json.dumps(ranking.as_json(row["id"]), ensure_ascii=False)) + "\n")

    if not args.out:
        write(sys.stdout)
        return
    with atomic_output(args.out) as out:
        write(out)
    print(f"{len(rows)} queries ranked by {args.method} -> {one_line(args.out)}", file=sys.stderr)


# -- eval -------------------------------------------------------------------------------------------


def _cut_offs(text: str) -> list[int]:
    try:
        ks = sorted({int(k) for k in text.split(",") if k.strip()})
    except ValueError:
        raise UsageError(f"--k takes comma-separated integers, not {text!r}") from None
    usage(ks and ks[0] >= 1, "--k needs positive cut-offs")
    return ks


def _methods(text: str) -> list[str]:
    from toolkg.retrieval import METHODS as KNOWN

    methods = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in methods if m not in KNOWN]
    usage(
        methods and not unknown, f"unknown method(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(KNOWN)}"
    )
    return methods


def cmd_eval(args: argparse.Namespace) -> int:
    from toolkg import progress
    from toolkg.cli.render import format_eval
    from toolkg.display import one_line
    from toolkg.retrieval import parse_options
    from toolkg.retrieval.evaluate import evaluate, write_outputs

    ks, methods = _cut_offs(args.k), _methods(args.methods)
    rows = _checked_queries(args.queries, labelled=True, skip_invalid=args.skip_invalid)[: args.limit]
    usage(rows, f"no queries to evaluate in {args.queries}")
    options = parse_options(args.option)
    progress.enable(not args.quiet)
    index = _open_index(args.store)
    try:
        report = evaluate(index, rows, methods, ks, options)
    finally:
        index.close()
    report["store"], report["queries_file"] = str(Path(args.store).resolve()), args.queries
    out = Path(args.out) if args.out else Path(args.store) / "eval"
    out.mkdir(parents=True, exist_ok=True)
    plotted = write_outputs(report, out / "eval.json", out / "eval.png")
    as_json = args.output_format == "json"
    if as_json:
        print_json(report)
    else:
        print(format_eval(report))
    # With --json, standard output is the report alone. The folder once: a long path fills a line by itself.
    wrote = "eval.json and eval.png" if plotted else "eval.json (no eval.png: pip install 'toolkg[plots]')"
    print(f"wrote {wrote} to {one_line(out)}", file=sys.stderr if as_json else sys.stdout)
    return EXIT_OK
