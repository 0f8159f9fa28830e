"""For analysts: `toolkg serve` (read-only SPARQL endpoint with a browser UI and the saved queries) and
`toolkg report` (one self-contained HTML page about a build run)."""

from __future__ import annotations

import argparse
import sys

from toolkg.cli.common import add_store, add_verbosity, usage
from toolkg.summary import EXIT_OK


def add_parsers(sub) -> None:
    _add_serve(sub)
    _add_report(sub)


def _add_serve(sub) -> None:
    serve = sub.add_parser(
        "serve",
        help="read-only SPARQL endpoint with a browser UI and the saved queries",
        description="Serve the store's current snapshot as a read-only SPARQL 1.1 endpoint (/query) with "
        "Oxigraph's YASGUI and the saved analyst queries at /. Every build publishes a snapshot; the endpoint "
        "switches to it without restarting, so queries never see a half-written store. Updates are refused.",
    )
    add_store(serve)
    serve.add_argument("--bind", default="127.0.0.1:7878", metavar="HOST:PORT", help="default 127.0.0.1:7878")
    serve.add_argument("--timeout", type=int, default=30, metavar="SECONDS", help="query timeout (default 30)")
    add_verbosity(serve)
    serve.set_defaults(handler=cmd_serve)


def _add_report(sub) -> None:
    report = sub.add_parser(
        "report",
        help="one self-contained HTML page about a build run",
        description="Write an HTML page for a run (default: the latest): counts, what changed, the quarantine, "
        "SHACL validation of the store, and a dependency-graph picture per server. It loads nothing from elsewhere.",
    )
    add_store(report)
    report.add_argument("--run", metavar="RUN_ID", help="the run (default: the latest; see <store>/runs)")
    report.add_argument("-o", "--output", "--out", metavar="FILE", help="default <store>/runs/<run>/report.html")
    add_verbosity(report)
    report.set_defaults(handler=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from toolkg.serve.report import write_report

    path = write_report(args.store, args.run, args.output)
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from toolkg.serve.endpoint import make_server

    usage(args.timeout >= 1, "--timeout must be at least 1 second")
    server = make_server(args.store, args.bind, args.timeout)
    host, port = server.server_address[:2]
    status = server.endpoint.status()
    print(
        f"toolkg endpoint on http://{host}:{port}/ (SPARQL at /query, read-only, snapshot {status['snapshot']}, "
        f"query timeout {args.timeout}s); Ctrl-C stops it",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        server.endpoint.close()
    return EXIT_OK
