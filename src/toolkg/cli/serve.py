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
    serve.add_argument("--bind", metavar="HOST:PORT", help=f"default {_default('serve', 'bind')}")
    serve.add_argument(
        "--timeout", type=int, metavar="SECONDS", help=f"query timeout (default {_default('serve', 'timeout')})"
    )
    serve.add_argument(
        "--memory-limit",
        type=int,
        metavar="MIB",
        help="memory the queries running at once may use together; past it they answer 507 and the SPARQL "
        f"process is restarted (default {_default('serve', 'memory_limit')})",
    )
    _add_network(serve, authenticated=False)
    serve.add_argument(
        "--allow-federation",
        action="store_true",
        default=None,
        help="let queries use SERVICE <url>: the server then fetches any URL a client names (off by default)",
    )
    _add_config(serve, "serve")
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
    mcp.add_argument("--transport", choices=("stdio", "http"), help=f"default {_default('mcp', 'transport')}")
    mcp.add_argument("--bind", metavar="HOST:PORT", help=f"with --transport http (default {_default('mcp', 'bind')})")
    _add_network(mcp, authenticated=True)
    _add_auth_options(mcp)
    mcp.add_argument(
        "--sparql-timeout", type=float, metavar="SECONDS", help=f"default {_default('mcp', 'sparql_timeout'):g}"
    )
    mcp.add_argument(
        "--sparql-memory",
        type=int,
        metavar="MIB",
        help="memory one sparql query may use; past it the query fails with one line and its process is "
        f"restarted (default {_default('mcp', 'sparql_memory')})",
    )
    mcp.add_argument(
        "--max-rows",
        type=int,
        metavar="N",
        help=f"SPARQL rows returned at most (default {_default('mcp', 'max_rows')})",
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
    _add_call_options(mcp)
    _add_config(mcp, "mcp", "; and [toolsearch]: pinned, min_score, hide, hide_severity, approved (--pin adds to "
                "pinned, --min-score wins)")  # fmt: skip
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
        default=None,
        help="let call_tool call tools annotated destructiveHint: true (refused otherwise)",
    )
    calls.add_argument(
        "--live",
        action="append",
        metavar="SOURCE",
        help="a client configuration, server.json or server address (as toolkg build takes) supplying servers to "
        "call, over the ones the snapshots name; needed for servers listed from an mcp+stdio: address (repeatable)",
    )
    calls.add_argument(
        "--env",
        action="append",
        metavar="NAME",
        help="an environment variable a registry server.json may read for a header or its server's environment, "
        "as toolkg build --env (repeatable): it reads no other",
    )
    calls.add_argument(
        "--call-timeout",
        type=float,
        metavar="SECONDS",
        help=f"one call's time limit (default {_default('mcp', 'call_timeout'):g})",
    )
    calls.add_argument(
        "--call-idle",
        type=float,
        metavar="SECONDS",
        help=f"close a server's session after this long without calls (default {_default('mcp', 'call_idle'):g})",
    )
    calls.add_argument(
        "--call-concurrency",
        type=int,
        metavar="N",
        help="calls in flight at once per server, the rest wait their turn "
        f"(default {_default('mcp', 'call_concurrency')})",
    )


def _add_network(parser, authenticated: bool) -> None:
    caveat = "clients need a token; put TLS in front" if authenticated else "there is no authentication"
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        default=None,
        help="allow a --bind address other than 127.0.0.1, ::1 or localhost, which other machines may reach "
        f"({caveat}; a warning is printed)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
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
        default=None,
        help="accept requests without a token (a loopback --bind only; every local process can then use it)",
    )
    auth.add_argument(
        "--show-token",
        action="store_true",
        help="print the token clients send (the first of the token file, created if need be) and exit",
    )


def _default(section: str, key: str):
    """A key's default, as its flag's help says it: the section's model is the one source of it."""
    from toolkg.config import BuildConfig

    return BuildConfig.sections()[section].model_fields[key].default


def _add_config(parser, section: str, more: str = "") -> None:
    parser.add_argument(
        "--config",
        metavar="FILE.toml",
        help=f"a settings file (the one toolkg build reads): its [{section}] keys are this command's flags, named "
        f"with _ for - (allow_host = [...], {'max_rows = 500' if section == 'mcp' else 'timeout = 60'}){more}; a "
        "flag given wins over its key, a repeatable one adds to its list",
    )


def command_options(args: argparse.Namespace, section: str):
    """The ``section`` ('serve' or 'mcp') of ``--config FILE`` with the flags given over its keys (each flag is
    the key of its name; a repeatable flag adds to the key's list), and the whole config (for [toolsearch]).
    A bad value is one ``ConfigError`` line naming the key, or the flag."""
    from toolkg.config import BuildConfig

    config = BuildConfig.from_file(args.config) if args.config else BuildConfig()
    current = getattr(config, section)
    flags: dict[str, object] = {}
    for key in type(current).model_fields:
        value = getattr(args, key, None)
        if value is not None:
            flags[key] = (*getattr(current, key), *value) if isinstance(value, list) else value
    config = config.with_values({section: flags}, source="command line", as_flags=True)
    return config, getattr(config, section)


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
    from toolkg.errors import StoreError
    from toolkg.netpolicy import HostPolicy, listening_socket
    from toolkg.serve.endpoint import parse_bind
    from toolkg.store.oxigraph_store import ToolStore
    from toolkg.toolsearch.auth import load_tokens
    from toolkg.toolsearch.calls import CallPolicy, CallSettings
    from toolkg.toolsearch.mcp_server import serve
    from toolkg.toolsearch.trust import TrustPolicy

    config, options = command_options(args, "mcp")
    if args.show_token:  # for scripts: --header "Authorization: Bearer $(toolkg mcp --show-token)"
        print(load_tokens(options.token_file).first_secret)  # --token-file needs no --transport http here
        return EXIT_OK
    options.check()
    searching = config.toolsearch
    pinned = (*searching.pinned, *args.pin)
    min_score = args.min_score if args.min_score is not None else searching.min_score
    usage(min_score is None or 0 <= min_score <= 1, "--min-score must be between 0 and 1")
    http = options.transport == "http"
    calling = bool(options.allow_call)
    policy = CallPolicy.from_flags(options.allow_call or None, options.allow_destructive)
    settings = CallSettings(
        timeout=options.call_timeout,
        idle=options.call_idle,
        per_server=options.call_concurrency,
        live=options.live,
        env=options.env,
    )
    host, port = parse_bind(options.bind)
    hosts = tokens = None
    if http:
        from toolkg.netpolicy import is_local_bind

        usage(
            not options.no_auth or is_local_bind(host),
            f"--no-auth is for a loopback --bind only: on {host} whoever reaches the port could use it",
        )
        _check_bind(host, options.allow_remote, authenticated=not options.no_auth)
        hosts = HostPolicy.for_bind(host, list(options.allow_host))
        tokens = None if options.no_auth else load_tokens(options.token_file)
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
            options.transport,
            host,
            port,
            sparql_timeout=options.sparql_timeout,
            max_rows=options.max_rows,
            sparql_memory_mib=options.sparql_memory,
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

    _, options = command_options(args, "serve")
    _check_bind(parse_bind(options.bind)[0], options.allow_remote)
    limits = QueryLimits(allow_service=options.allow_federation)
    server = make_server(
        args.store,
        options.bind,
        options.timeout,
        allow_remote=options.allow_remote,
        limits=limits,
        allowed_hosts=options.allow_host,
        memory_limit_mib=options.memory_limit,
    )
    host, port = server.server_address[:2]
    status = server.endpoint.status()
    federation = "SERVICE allowed" if options.allow_federation else "SERVICE refused"
    print(
        f"toolkg endpoint on http://{_url_host(str(host))}:{port}/ (SPARQL at /query, read-only, {federation}, "
        f"snapshot {status['snapshot']}, query timeout {options.timeout}s); Ctrl-C stops it",
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
