"""Commands for analysts and operations: serve (SPARQL endpoint + UI), report, schedule.

Kept apart from cli.py, which holds the build and retrieval commands; both register their
sub-commands on the one `toolkg` parser.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from toolkg.summary import EXIT_OK, EXIT_QUARANTINED


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
    schedule = sub.add_parser(
        "schedule",
        help="run the build on a schedule as a Prefect deployment (needs a Prefect server)",
        description="Register the build of PATH... as a Prefect deployment 'toolkg-build/NAME' with a cron schedule "
        "and serve it: this process runs each scheduled run (and each manual one: prefect deployment run "
        "'toolkg-build/NAME') until stopped. Needs a real Prefect server (prefect server start) and "
        "PREFECT_API_URL pointing at it; the local server 'toolkg build' starts runs no scheduler.",
    )
    schedule.add_argument("paths", nargs="+", metavar="PATH", help="catalog files or folders to build")
    add_store(schedule)
    schedule.add_argument("--cron", required=True, help="cron expression, e.g. '0 * * * *' (hourly)")
    schedule.add_argument("--name", default="catalog", help="deployment name (default: catalog)")
    schedule.add_argument("--prune", action="store_true", help="retract manifests no longer under PATHs on each run")
    schedule.add_argument("--no-links", dest="links", action="store_false", help="skip the structural links")
    prefect_server = sub.add_parser(
        "prefect-server",
        help="show or stop the shared local Prefect server builds use when PREFECT_API_URL is not set",
        description="Without PREFECT_API_URL, 'toolkg build' starts one local Prefect API server (under "
        "PREFECT_HOME, UI and scheduling off) and later commands reuse it. It stops by itself after "
        "TOOLKG_PREFECT_IDLE_SECONDS (default 600) with no toolkg command using it; 'stop' stops it now.",
    )
    prefect_server.add_argument(
        "action", nargs="?", choices=("status", "stop"), default="status", help="status (default) or stop"
    )
    return {"serve": cmd_serve, "report": cmd_report, "schedule": cmd_schedule, "prefect-server": cmd_prefect_server}


def cmd_prefect_server(args: argparse.Namespace) -> int:
    from toolkg.flows.local_server import command

    return command(args.action)


def cmd_schedule(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from toolkg.errors import ConfigError, UsageError
    from toolkg.extractors.reading import discover

    if not os.environ.get("PREFECT_API_URL"):
        raise ConfigError(
            "toolkg schedule needs a Prefect server: run 'prefect server start' and set "
            "PREFECT_API_URL=http://127.0.0.1:4200/api"
        )
    if not discover(args.paths):
        raise UsageError(f"no manifest files (.json, .yaml, .yml) under: {' '.join(args.paths)}")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    from prefect.deployments.runner import EntrypointType

    from toolkg.flows.build import build_catalog

    parameters = {
        "paths": [str(Path(p).resolve()) for p in args.paths],
        "store_dir": str(Path(args.store).resolve()),
        "prune": args.prune,
        "links": args.links,
    }
    print(
        f"serving deployment 'toolkg-build/{args.name}' (cron '{args.cron}') from {os.environ['PREFECT_API_URL']}; "
        f"run it now with: prefect deployment run 'toolkg-build/{args.name}'; Ctrl-C stops serving",
        file=sys.stderr,
        flush=True,
    )
    build_catalog.serve(
        name=args.name,
        cron=args.cron,
        parameters=parameters,
        description=f"toolkg build of {', '.join(parameters['paths'])} into {parameters['store_dir']}",
        tags=["toolkg"],
        entrypoint_type=EntrypointType.MODULE_PATH,
        print_starting_message=False,
    )
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from toolkg.serve.report import write_report

    path = write_report(args.store, args.run, args.output)
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from toolkg.serve.endpoint import make_server

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


def build_only(args: argparse.Namespace, started: float) -> int:
    """`toolkg build PATH... --only SERVER`: incremental sync of those servers (flows/sync.py)."""
    import os
    import time

    from toolkg.errors import StoreError, UsageError
    from toolkg.flows.sync import format_result, sync_servers

    clashing = [
        flag
        for flag, on in (
            ("--prune", args.prune),
            ("--force", args.force),
            ("--extractor llm", args.extractor == "llm"),
            ("--confirm-deps", args.confirm_deps),
            ("--hide-declared", args.hide_declared),
            ("--no-infer", not args.infer),
        )
        if on
    ]
    if clashing:
        raise UsageError(f"--only syncs servers with the offline extractor; it cannot go with {', '.join(clashing)}")
    from toolkg.store.oxigraph_store import ToolStore

    if not ToolStore.exists(args.store):
        raise StoreError(f"no toolkg store at {args.store}: --only updates a built store (build it first)")
    # With a Prefect server the sync is a flow run that shows in its UI; without one it runs in-process
    # rather than spend 10-15 s starting a temporary server for a sub-second change.
    run = sync_servers if os.environ.get("PREFECT_API_URL") else sync_servers.fn
    results = run(paths=list(args.paths), store_dir=args.store, servers=args.only, links=args.links)
    for result in results:
        print(format_result(result))
    print(f"  wall time: {time.perf_counter() - started:.2f}s")
    return EXIT_QUARANTINED if any(r.quarantined for r in results) else EXIT_OK


def _resolve_tool(store, name: str) -> str:
    from pyoxigraph import Literal

    from toolkg.errors import UsageError

    if "::" in name:
        return name
    rows = store.select(
        "SELECT ?id ?name WHERE { ?t a tk:Tool ; tk:name ?name ; tk:identifier ?id }", {"name": Literal(name)}
    )
    ids = sorted({r["id"].value for r in rows})
    if len(ids) != 1:
        from toolkg.display import one_line

        found = ", ".join(one_line(i) for i in ids[:20]) if ids else "none"
        raise UsageError(f"--tool {name!r} must name exactly one tool (found: {found}); use server::tool")
    return ids[0]


def cmd_deps(args: argparse.Namespace) -> int:
    import json

    from toolkg.cli import _open_store
    from toolkg.display import one_line as o
    from toolkg.store.dependencies import dependency_rows, link_rows, transitive_dependencies

    store = _open_store(args.store)
    tool = _resolve_tool(store, args.tool) if args.tool else None
    rows = dependency_rows(store, tool)
    closure = transitive_dependencies(store, tool) if tool else None
    links = link_rows(store, tool) if args.links else None
    if args.json:
        extra = ({"transitive": closure} if tool else {}) | ({"links": links} if args.links else {})
        print(json.dumps({"edges": rows, **extra}, indent=2, ensure_ascii=False))
        return EXIT_OK
    # Every name and evidence comes from manifests: one terminal line each (display.one_line).
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
    return EXIT_OK
