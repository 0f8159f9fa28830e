"""Commands for analysts and operations: serve (SPARQL endpoint + UI), report, schedule.

Kept apart from cli.py, which holds the build and retrieval commands; both register their
sub-commands on the one `toolkg` parser.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from toolkg.summary import EXIT_OK


def add_parsers(sub, add_store: Callable[[argparse.ArgumentParser], None]) -> dict[str, Callable]:
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
    report = sub.add_parser(
        "report",
        help="one self-contained HTML page about a build run",
        description="Write an HTML page for a run (default: the latest): counts, what changed, the quarantine, "
        "SHACL validation of the store, and a dependency-graph picture per server. It loads nothing from elsewhere.",
    )
    add_store(report)
    report.add_argument("--run", metavar="RUN_ID", help="the run (default: the latest; see <store>/runs)")
    report.add_argument("-o", "--output", metavar="FILE", help="default <store>/runs/<run>/report.html")
    return {"serve": cmd_serve, "report": cmd_report}


def cmd_report(args: argparse.Namespace) -> int:
    from toolkg.report import write_report

    path = write_report(args.store, args.run, args.output)
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from toolkg.endpoint import make_server

    if args.timeout < 1:
        from toolkg.errors import UsageError

        raise UsageError("--timeout must be at least 1 second")
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
