"""For analysts and agents: `toolkg serve` (read-only SPARQL endpoint with a browser UI, the saved queries and a
JSON /search route), `toolkg mcp` (tool search for agents over MCP) and `toolkg report` (one self-contained
HTML page about a build run)."""

from __future__ import annotations

import argparse
import sys

from toolkg.cli.common import add_store, add_verbosity, usage
from toolkg.summary import EXIT_OK


def add_parsers(sub) -> None:
    _add_serve(sub)
    _add_mcp(sub)
    _add_report(sub)


def _add_serve(sub) -> None:
    serve = sub.add_parser(
        "serve",
        help="read-only SPARQL endpoint with a browser UI and the saved queries",
        description="Serve the store's current snapshot as a read-only SPARQL 1.1 endpoint (/query) with "
        "Oxigraph's YASGUI and the saved analyst queries at /. Every build publishes a snapshot; the endpoint "
        "switches to it without restarting, so queries never see a half-written store. Updates are refused; a "
        "query over the size, nesting or complexity limits is refused before it reaches Oxigraph; SERVICE is "
        "refused unless --allow-federation; a query past the timeout answers 504. /status tells the backend's "
        "state, /ontology documents the vocabulary.",
    )
    add_store(serve)
    serve.add_argument("--bind", default="127.0.0.1:7878", metavar="HOST:PORT", help="default 127.0.0.1:7878")
    serve.add_argument("--timeout", type=int, default=30, metavar="SECONDS", help="query timeout (default 30)")
    serve.add_argument(
        "--memory-limit",
        type=int,
        default=2048,
        metavar="MIB",
        help="memory the queries running at once may use together; past it they answer 507 and the SPARQL "
        "process is restarted (default 2048)",
    )
    _add_network(serve, authenticated=False)
    serve.add_argument(
        "--allow-federation",
        action="store_true",
        help="let queries use SERVICE <url>: the server then fetches any URL a client names (off by default)",
    )
    add_verbosity(serve)
    serve.set_defaults(handler=cmd_serve)


def _add_mcp(sub) -> None:
    mcp = sub.add_parser(
        "mcp",
        help="serve tool search (and tool calls) to agents as an MCP server (stdio or Streamable HTTP)",
        description="Run toolkg as an MCP server over the store's published snapshot, so an agent loads five "
        "tools instead of thousands: search_tools(query, k, steps) ranks the catalog's tools for a task and says "
        "which to call first; get_tool(id); tool_dependencies(id) (transitive, with kinds and confidence); "
        "sparql(query) (read-only, with a timeout and a row cap); call_tool(id, arguments) forwards a call to the "
        "live server that owns the tool and relays its result (off unless --allow-call). Builds can run beside "
        "it: it moves to each newly published snapshot. Over stdio (the default) an MCP client starts it as a "
        "command; over HTTP it listens on --bind at /mcp and every request needs a bearer token.",
    )
    add_store(mcp)
    mcp.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default stdio")
    mcp.add_argument(
        "--bind", default="127.0.0.1:7879", metavar="HOST:PORT", help="with --transport http (default 127.0.0.1:7879)"
    )
    _add_network(mcp, authenticated=True)
    _add_auth_options(mcp)
    mcp.add_argument("--sparql-timeout", type=float, default=10.0, metavar="SECONDS", help="default 10")
    mcp.add_argument(
        "--sparql-memory",
        type=int,
        default=1024,
        metavar="MIB",
        help="memory one sparql query may use; past it the query fails with one line and its process is "
        "restarted (default 1024)",
    )
    mcp.add_argument(
        "--max-rows", type=int, default=1000, metavar="N", help="SPARQL rows returned at most (default 1000)"
    )
    search = mcp.add_argument_group("searching", "what search_tools answers besides its ranking")
    search.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="TOOL",
        help="a tool offered with every answer, marked pinned (an id, a name or any form search finds; repeatable)",
    )
    search.add_argument(
        "--min-score",
        type=float,
        metavar="P",
        help="answer no tool when the best scores below P, 0-1 (default: the calibrated threshold; 0: never abstain)",
    )
    search.add_argument(
        "--config",
        metavar="FILE.toml",
        help="a settings file: its [toolsearch] section's pinned, min_score, hide, hide_severity, approved (the flags"
        " add to / win over it)",
    )
    _add_call_options(mcp)
    add_verbosity(mcp)
    mcp.set_defaults(handler=cmd_mcp)


def _add_call_options(mcp) -> None:
    calls = mcp.add_argument_group(
        "calling tools",
        "call_tool reaches a tool's server as the build listed it: the configuration file its live snapshot "
        "names is read again at call time (secrets stay there). Stores built from files have no live servers.",
    )
    calls.add_argument(
        "--allow-call",
        action="append",
        nargs="?",
        const="*",
        metavar="SERVER",
        help="let call_tool call tools: bare, of every server; with SERVER (repeatable), of those servers only "
        "(off by default)",
    )
    calls.add_argument(
        "--allow-destructive",
        action="store_true",
        help="let call_tool call tools annotated destructiveHint: true (refused otherwise)",
    )
    calls.add_argument(
        "--live",
        action="append",
        default=[],
        metavar="SOURCE",
        help="a client configuration, server.json or server address (as toolkg build takes) supplying servers to "
        "call, over the ones the snapshots name; needed for servers listed from an mcp+stdio: address (repeatable)",
    )
    calls.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME",
        help="an environment variable a registry server.json may read for a header or its server's environment, "
        "as toolkg build --env (repeatable): it reads no other",
    )
    calls.add_argument(
        "--call-timeout", type=float, default=60.0, metavar="SECONDS", help="one call's time limit (default 60)"
    )
    calls.add_argument(
        "--call-idle",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="close a server's session after this long without calls (default 300)",
    )
    calls.add_argument(
        "--call-concurrency",
        type=int,
        default=4,
        metavar="N",
        help="calls in flight at once per server, the rest wait their turn (default 4)",
    )


def _add_network(parser, authenticated: bool) -> None:
    caveat = "clients need a token; put TLS in front" if authenticated else "there is no authentication"
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --bind address other than 127.0.0.1, ::1 or localhost, which other machines may reach "
        f"({caveat}; a warning is printed)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests whose Host (or Origin) is NAME, a name or address clients use for this server, "
        "e.g. behind a proxy; others are refused against DNS rebinding (repeatable)",
    )


def _add_auth_options(mcp) -> None:
    auth = mcp.add_argument_group(
        "authentication (--transport http)",
        "Every HTTP request needs 'Authorization: Bearer TOKEN'. The tokens come from --token-file, else "
        "$TOOLKG_MCP_TOKEN, else the per-user file ~/.config/toolkg/mcp-tokens.toml ($TOOLKG_CONFIG_DIR, "
        "$XDG_CONFIG_HOME), created with one token on first use. A token's scope is search, call or "
        "call:SERVER,...; over stdio no token is needed.",
    )
    auth.add_argument(
        "--token-file",
        metavar="FILE",
        help="the tokens clients may use: TOML [[token]] entries (name, token, scope) or one bare token; mode 0600",
    )
    auth.add_argument(
        "--no-auth",
        action="store_true",
        help="accept requests without a token (a loopback --bind only; every local process can then use it)",
    )
    auth.add_argument(
        "--show-token",
        action="store_true",
        help="print the token clients send (the first of the token file, created if need be) and exit",
    )


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _check_bind(host: str, allow_remote: bool, authenticated: bool = False) -> None:
    """Only 127.0.0.1, ::1 and localhost without --allow-remote; another address then with a warning."""
    from toolkg.netpolicy import is_local_bind

    if is_local_bind(host):
        return
    usage(
        allow_remote,
        f"refusing to listen on {host}: it is not 127.0.0.1, ::1 or localhost, the only addresses kept to this "
        "machine's own clients (add --allow-remote to listen there anyway)",
    )
    if authenticated:
        risk = "clients need a token, which plain HTTP carries in clear: put a TLS proxy in front"
    else:
        risk = "with no authentication; put it behind a proxy that authenticates, or bind 127.0.0.1"
    print(f"toolkg: warning: listening on {host}, which other machines may reach, {risk}", file=sys.stderr, flush=True)


def _add_report(sub) -> None:
    report = sub.add_parser(
        "report",
        help="one self-contained HTML page about a build run",
        description="Write an HTML page for a run (default: the latest): counts, what changed, the quarantine, "
        "SHACL validation of the store, and a section per server (listed in a table of contents, opened on "
        "demand) with its dependency graph laid out by Graphviz dot (at most 50 tools drawn, the rest as a "
        "table) and its tools. It loads nothing from elsewhere.",
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


def cmd_mcp(args: argparse.Namespace) -> int:
    from toolkg import progress
    from toolkg.config import BuildConfig, ToolSearchOptions
    from toolkg.errors import StoreError
    from toolkg.netpolicy import HostPolicy, listening_socket
    from toolkg.serve.endpoint import parse_bind
    from toolkg.store.oxigraph_store import ToolStore
    from toolkg.toolsearch.auth import load_tokens
    from toolkg.toolsearch.calls import CallPolicy, CallSettings
    from toolkg.toolsearch.mcp_server import serve
    from toolkg.toolsearch.trust import TrustPolicy

    if args.show_token:  # for scripts: --header "Authorization: Bearer $(toolkg mcp --show-token)"
        print(load_tokens(args.token_file).first_secret)
        return EXIT_OK
    usage(args.sparql_timeout > 0, "--sparql-timeout must be positive")
    usage(args.sparql_memory >= 64, "--sparql-memory must be at least 64 (MiB)")
    usage(args.max_rows >= 1, "--max-rows must be at least 1")
    usage(args.call_timeout > 0, "--call-timeout must be positive")
    usage(args.call_idle > 0, "--call-idle must be positive")
    usage(args.call_concurrency >= 1, "--call-concurrency must be at least 1")
    usage(args.min_score is None or 0 <= args.min_score <= 1, "--min-score must be between 0 and 1")
    http = args.transport == "http"
    usage(http or not (args.no_auth or args.token_file), "--no-auth and --token-file are for --transport http")
    usage(not (args.no_auth and args.token_file), "--no-auth and --token-file exclude each other")
    searching = BuildConfig.from_file(args.config).toolsearch if args.config else ToolSearchOptions()
    pinned = (*searching.pinned, *args.pin)
    min_score = args.min_score if args.min_score is not None else searching.min_score
    calling = args.allow_call is not None
    usage(calling or not args.allow_destructive, "--allow-destructive needs --allow-call")
    usage(calling or not args.live, "--live supplies servers to call: it needs --allow-call")
    policy = CallPolicy.from_flags(args.allow_call, args.allow_destructive)
    settings = CallSettings(
        timeout=args.call_timeout,
        idle=args.call_idle,
        per_server=args.call_concurrency,
        live=tuple(args.live),
        env=tuple(args.env),
    )
    host, port = parse_bind(args.bind)
    hosts = tokens = None
    if http:
        from toolkg.netpolicy import is_local_bind

        usage(
            not args.no_auth or is_local_bind(host),
            f"--no-auth is for a loopback --bind only: on {host} whoever reaches the port could use it",
        )
        _check_bind(host, args.allow_remote, authenticated=not args.no_auth)
        hosts = HostPolicy.for_bind(host, args.allow_host)
        tokens = None if args.no_auth else load_tokens(args.token_file)
    if not ToolStore.exists(args.store):  # checked, not opened: a build may hold the store's lock
        raise StoreError(f"no toolkg store at {args.store} (run 'toolkg build PATH... --store {args.store}' first)")
    progress.enable(False)  # over stdio, standard output is the protocol's
    # Bound before the banner: a busy port is the one line said, not a banner followed by uvicorn's error.
    listener = listening_socket(host, port) if http else None
    if http:
        calls = "calls off" if not calling else "calls on: " + policy.describe().removeprefix("It calls ").rstrip(".")
        _say(f"toolkg MCP server on http://{_url_host(host)}:{port}/mcp ({calls}); Ctrl-C stops it")
        if tokens is None:
            what = "search the catalog and call tools through it" if calling else "use it (calls are off)"
            _say(f"toolkg: warning: --no-auth: every process on this machine can {what}")
        else:
            created = " (created now, mode 0600)" if tokens.created else ""
            shown = "; toolkg mcp --show-token prints it" if tokens.path else ""
            _say(f"toolkg: clients send 'Authorization: Bearer TOKEN', a token from {tokens.source}{created}{shown}")
    try:
        serve(
            args.store,
            args.transport,
            host,
            port,
            sparql_timeout=args.sparql_timeout,
            max_rows=args.max_rows,
            sparql_memory_mib=args.sparql_memory,
            policy=policy,
            call_settings=settings,
            pinned=pinned,
            min_score=min_score,
            trust=TrustPolicy.from_settings(searching.hide, searching.hide_severity, searching.approved),
            hosts=hosts,
            tokens=tokens,
            sock=listener,
        )
    except KeyboardInterrupt:
        pass
    finally:
        if listener is not None:
            listener.close()
    return EXIT_OK


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cmd_serve(args: argparse.Namespace) -> int:
    from toolkg.serve.endpoint import make_server, parse_bind
    from toolkg.store.query_guard import QueryLimits

    usage(args.timeout >= 1, "--timeout must be at least 1 second")
    usage(args.memory_limit >= 64, "--memory-limit must be at least 64 (MiB)")
    _check_bind(parse_bind(args.bind)[0], args.allow_remote)
    limits = QueryLimits(allow_service=args.allow_federation)
    server = make_server(
        args.store,
        args.bind,
        args.timeout,
        allow_remote=args.allow_remote,
        limits=limits,
        allowed_hosts=tuple(args.allow_host),
        memory_limit_mib=args.memory_limit,
    )
    host, port = server.server_address[:2]
    status = server.endpoint.status()
    federation = "SERVICE allowed" if args.allow_federation else "SERVICE refused"
    print(
        f"toolkg endpoint on http://{_url_host(str(host))}:{port}/ (SPARQL at /query, read-only, {federation}, "
        f"snapshot {status['snapshot']}, query timeout {args.timeout}s); Ctrl-C stops it",
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
