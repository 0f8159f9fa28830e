"""Building the graph: `toolkg build`, `toolkg schedule` (the same build as a Prefect deployment on a cron
schedule) and `toolkg prefect-server` (the shared local Prefect server builds use).

A build is told one ``toolkg.config.BuildConfig``, assembled from, lowest first: the defaults, the
``--config FILE.toml`` file, each ``--set SECTION.KEY=VALUE``, and the flags given on the command line.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from toolkg.cli.common import UsageError, add_output, add_store, add_verbosity, print_json, usage
from toolkg.cli.settings import add_settings, build_config, sections, settings_epilog
from toolkg.config import BuildConfig
from toolkg.summary import EXIT_OK

if TYPE_CHECKING:
    from toolkg.flows.local_server import SharedServer


def add_parsers(sub) -> None:
    _add_build(sub)
    _add_demo(sub)
    _add_schedule(sub)
    _add_prefect_server(sub)


def _add_build(sub) -> None:
    build = sub.add_parser(
        "build",
        help="build or update the graph from manifest files or folders, or live MCP servers",
        description="Ingest tool manifests (MCP tools/list, MCP catalogs, OpenAI functions, OpenAPI 3 and Swagger "
        "2.0, ToolLinkOS) into the store with a Prefect flow. Live MCP servers named by a client configuration or an "
        "address are started or connected to, their tools listed (live.timeout seconds each, live.concurrency at once) "
        "and kept as snapshots under STORE/live, their configured secrets blanked out of all they answer; a server "
        "that fails is quarantined with its reason and keeps its last listing. Only a configuration given as a "
        "PATH itself is listed: one found inside a folder is reported as skipped, never started. Unchanged "
        "manifests and listings are skipped; changed ones replace their graphs "
        "atomically. Settings can also come from --config FILE.toml and --set SECTION.KEY=VALUE (sections "
        f"{sections()}); the flags given win over both.",
        epilog=settings_epilog(),
    )
    build.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="manifest files or folders (searched recursively), MCP client configurations (mcpServers, VS Code "
        "servers), registry server.json files, or server addresses (mcp+stdio:COMMAND ARGS, https://HOST/mcp, "
        "mcp+sse:URL); a configuration or server.json is listed when named itself, skipped when found in a folder",
    )
    add_store(build)
    add_settings(build)
    build.add_argument(
        "--only",
        action="append",
        metavar="SERVER",
        help="sync just this server (repeatable): its graph diff and its dependency neighbourhood, nothing else; "
        "a server no manifest under PATHs defines any more is removed when the manifest that defined it was read, "
        "or with --prune, and kept otherwise (the summary names it)",
    )
    build.add_argument(
        "--dask",
        metavar="local[:N]|tcp://HOST:PORT",
        help="fan extraction out over a Dask cluster: a local one of N workers (default 2) or a running scheduler "
        "(sets build.dask)",
    )
    add_output(build, formats=None, what="the run summary")
    add_verbosity(build, quiet=True, prefect=True)
    build.set_defaults(handler=cmd_build)


def _add_demo(sub) -> None:
    demo = sub.add_parser(
        "demo",
        help="build the sample catalogs toolkg ships (LiveMCPBench, ToolLinkOS) into a store: a first graph",
        description="Build the two sample catalogs installed with toolkg as package data, LiveMCPBench's MCP "
        "servers (Apache-2.0) and ToolLinkOS's tools with their declared dependencies (MIT), into the store: "
        "what 'toolkg build' makes of those files, and what 'make demo' builds in a checkout. Nothing is "
        "downloaded but, once per machine, the embedding model when it is not installed. The options are "
        "toolkg build's.",
        epilog=settings_epilog(),
    )
    add_store(demo)
    add_settings(demo)
    add_output(demo, formats=None, what="the run summary")
    add_verbosity(demo, quiet=True, prefect=True)
    demo.set_defaults(handler=cmd_demo, only=None, dask=None)


def _add_schedule(sub) -> None:
    schedule = sub.add_parser(
        "schedule",
        help="run the build on a schedule as a Prefect deployment (needs a Prefect server)",
        description="Register the build of PATH... as a Prefect deployment 'toolkg-build/NAME' with a cron schedule "
        "and serve it: this process runs each scheduled run (and each manual one: prefect deployment run "
        "'toolkg-build/NAME') until stopped. Needs a real Prefect server (prefect server start) and "
        "PREFECT_API_URL pointing at it; the local server 'toolkg build' starts runs no scheduler. The build "
        f"settings are those of toolkg build (--config FILE.toml, --set SECTION.KEY=VALUE, sections {sections()}).",
        epilog=settings_epilog(),
    )
    schedule.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="catalog files or folders, MCP client configurations or server addresses: each run re-lists the "
        "live servers and reloads only those whose tools changed (configurations named themselves; one found in "
        "a folder is skipped)",
    )
    add_store(schedule)
    schedule.add_argument("--cron", required=True, help="cron expression, e.g. '0 * * * *' (hourly)")
    schedule.add_argument("--name", default="catalog", help="deployment name (default: catalog)")
    add_settings(schedule)
    add_verbosity(schedule, prefect=True)
    schedule.set_defaults(handler=cmd_schedule)


def _add_prefect_server(sub) -> None:
    prefect_server = sub.add_parser(
        "prefect-server",
        help="show or stop the shared local Prefect server builds use when PREFECT_API_URL is not set",
        description="Without PREFECT_API_URL, 'toolkg build' starts one local Prefect API server (under "
        "PREFECT_HOME, UI and scheduling off) and later commands reuse it. It stops by itself after "
        "TOOLKG_PREFECT_IDLE_SECONDS (default 120) with no toolkg command using it; 'stop' stops it now.",
    )
    prefect_server.add_argument(
        "action", nargs="?", choices=("status", "stop"), default="status", help="status (default) or stop"
    )
    add_verbosity(prefect_server)
    prefect_server.set_defaults(handler=cmd_prefect_server)


def _require_manifests(paths: list[str], env_names: Iterable[str] = ()) -> list[str]:
    """Fail fast, before Prefect starts: a bad address, or nothing to read (a folder holding only MCP
    configurations, which are never listed unless named, says how to name them). Returns the summary lines
    of the configurations skipped."""
    from dataclasses import asdict

    from toolkg.extractors.manifests.reading import discover
    from toolkg.live import live_inputs
    from toolkg.summary import skipped_live_line

    try:
        inputs = live_inputs(paths, env_names)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    skipped = [skipped_live_line(asdict(s)) for s in inputs.skipped]
    manifests = [f for f in discover(inputs.rest) if str(f) not in inputs.configurations]
    found = inputs.sources.servers or inputs.sources.unlistable or manifests
    nothing = f"no manifest files (.json, .yaml, .yml), MCP configurations or servers in: {' '.join(paths)}"
    usage(found, "; ".join([nothing, *skipped]))
    return skipped


# Prefect's event and log senders (EventsWorker, APILogWorker) flush what they hold when drained: a small build on a
# quiet box leaves none queued, and a backlog of 280 events took 0.27 s to send to the local server (2 cores,
# 2026-12-02). Past this bound the senders are left to finish at interpreter exit, as Prefect would.
SENDERS = ("EventsWorker", "APILogWorker")
DRAIN_SECONDS = 10.0


def _drain_prefect_senders(timeout: float = DRAIN_SECONDS) -> bool:
    """Drain Prefect's event and log senders (their queued items sent, the workers stopped; Prefect starts new
    ones on the next use); True when nothing is left to send. They say "Still processing items: N items
    remaining" while they flush, at interpreter exit if no one drained them before: after the command returned,
    when their loggers' levels are back. Prefect not imported means no sender was ever started."""
    import inspect

    services = sys.modules.get("prefect._internal.concurrency.services")
    if services is None:
        return True
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    deadline = time.monotonic() + timeout
    for worker in (EventsWorker, APILogWorker):  # Prefect 3.8 keeps both in one registry; a later one may not
        try:
            waited = worker.drain_all(timeout=max(deadline - time.monotonic(), 0.0), at_exit=False)
        except Exception:  # a sender that failed to start, a changed Prefect: leave them to the exit drain
            return False
        if inspect.iscoroutine(waited):  # called inside a running event loop, where it cannot be waited for here
            waited.close()
            return False
        if not isinstance(waited, tuple) or waited[1]:  # (done, not done): some still sending at the bound
            return False
    return True


@contextlib.contextmanager
def _quiet_prefect(verbose: bool) -> Iterator[None]:
    """Prefect's console logs only with -v: without it every failure is toolkg's one line, whatever the
    environment asks of Prefect (its flow-run error log repeats the failure with a traceback).

    For this call only: the environment variables and logger levels it sets are put back after, so a caller that
    runs ``main`` again in the same process (the tests, an embedding program) finds them as they were. Prefect's
    senders are drained first, while their loggers are still lowered (``_drain_prefect_senders``); if they cannot
    be drained within ``DRAIN_SECONDS`` their two loggers stay lowered for the rest of the process, so that what
    they say at exit stays off the console as before."""
    names = ("PREFECT_SERVER_ANALYTICS_ENABLED", "PREFECT_LOGGING_LEVEL")
    saved_env = {name: os.environ.get(name) for name in names}
    # instructor would log each failure toolkg summarises; the senders' "Still processing items" as they flush;
    # "prefect" itself: Prefect's loggers read PREFECT_LOGGING_LEVEL only when Prefect first configures logging,
    # which a process that imported it before (an embedding program, the tests) has done, and its task-run logger
    # would print a failed task's traceback before toolkg's one line
    loggers = {"instructor": logging.CRITICAL, "prefect": logging.CRITICAL, **dict.fromkeys(SENDERS, logging.ERROR)}
    saved_levels = {name: logging.getLogger(name).level for name in loggers}
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ["PREFECT_LOGGING_LEVEL"] = "INFO" if verbose else "CRITICAL"
    if not verbose:
        if "prefect" in sys.modules:  # its settings may be cached: configure its logging now, so the levels set next
            import prefect.main  # noqa: F401  stay (a fresh process reads PREFECT_LOGGING_LEVEL when it first does)

        for name, level in loggers.items():
            logging.getLogger(name).setLevel(level)
    try:
        yield
    finally:
        drained = verbose or _drain_prefect_senders()
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        for name, level in saved_levels.items():
            if drained or name not in SENDERS:
                logging.getLogger(name).setLevel(level)


def cmd_build(args: argparse.Namespace) -> int:
    skipped = _require_manifests(args.paths, args.env or ())  # fail fast, before Prefect starts
    config = build_config(args)
    runner = args.dask or ("local" if config.dask else None)
    in_process = "--dask fans out the offline extractor; the LLM extractor is concurrent in-process"
    usage(not runner or config.extractor == "offline", in_process)
    with _quiet_prefect(args.verbose):
        return _run_build(args, config, runner, skipped)


def _run_build(args: argparse.Namespace, config: BuildConfig, runner: str | None, skipped: list[str]) -> int:
    from toolkg import progress

    progress.enable(not args.quiet)
    started = time.perf_counter()
    if args.only:
        return _build_only(args, config, started, skipped)
    from toolkg.flows.local_server import use_shared_server

    # No PREFECT_API_URL: the shared local server (started on demand, stops when idle), not a temporary one.
    server = use_shared_server(say=None if args.quiet else lambda line: print(f"[toolkg] {line}", file=sys.stderr))
    from toolkg.flows.build import build_catalog

    if runner:
        from toolkg.flows.scale import dask_task_runner

        build_catalog = build_catalog.with_options(task_runner=dask_task_runner(runner))
    from toolkg.live.sources import as_parameter

    parameters = [as_parameter(str(p)) for p in args.paths]  # Prefect stores them: an address's key hidden
    summary = build_catalog(paths=parameters, store_dir=args.store, config=config)
    timing = _timing(time.perf_counter() - started, summary.pipeline_seconds, server)
    if args.output_format == "json":  # standard output is the summary alone
        print_json(summary.model_dump(mode="json"))
        print("\n".join(timing), file=sys.stderr)
    else:
        print(summary)
        print("\n".join(f"  {line}" for line in timing))
    return summary.exit_code


def cmd_demo(args: argparse.Namespace) -> int:
    """`toolkg build` of the shipped sample catalogs (``toolkg.samples``)."""
    from toolkg.samples import sample_paths

    args.paths = [str(path) for path in sample_paths()]
    return cmd_build(args)


def _timing(wall: float, pipeline: float, server: SharedServer | None) -> list[str]:
    """The wall-time line, and before it the one-off start of the shared Prefect server when this build made it
    (a second build does not pay it): a user sees what the next build costs, the pipeline plus Prefect's
    orchestration (importing Prefect, the flow and task runs)."""
    start = server.start_seconds if server else 0.0
    parts = f"pipeline {pipeline:.2f}s, Prefect orchestration {wall - pipeline - start:.2f}s"
    if server is None or not start:  # (a start time comes only with a server)
        return [f"wall time: {wall:.2f}s ({parts})"]
    if server.created_database:
        once = "Prefect server first start (once per PREFECT_HOME, creating its database)"
    else:
        from toolkg.flows.local_server import idle_seconds

        once = f"Prefect server start (none was running; later builds reuse it until it is idle {idle_seconds():g} s)"
    return [f"{once}: {start:.2f}s", f"wall time: {wall:.2f}s ({parts}, Prefect server start {start:.2f}s)"]


def _build_only(args: argparse.Namespace, config: BuildConfig, started: float, skipped: list[str]) -> int:
    """`toolkg build PATH... --only SERVER`: incremental sync of those servers (flows/sync/), told the run's
    whole config as a build is. ``skipped``: the lines of the MCP configurations found in folders and not
    listed, said on stderr."""
    from toolkg.errors import StoreError
    from toolkg.flows.sync import sync_paths
    from toolkg.store.oxigraph_store import ToolStore
    from toolkg.summary import BuildSummary

    offline_only = {
        "--force": config.force,
        "--extractor llm": config.extractor == "llm",
        "--confirm-deps": config.confirm_deps,
        "--hide-declared": config.hide_declared,
        "--no-infer": not config.infer,
    }
    clashing = [flag for flag, on in offline_only.items() if on]
    usage(not clashing, f"--only syncs servers with the offline extractor; it cannot go with {', '.join(clashing)}")
    if not ToolStore.exists(args.store):
        raise StoreError(f"no toolkg store at {args.store}: --only updates a built store (build it first)")
    # With a Prefect server the sync is a flow run that shows in its UI; without one it runs in-process, Prefect
    # not even imported, rather than spend 10-15 s starting a temporary server for a sub-second change.
    run: Callable[..., BuildSummary] = sync_paths
    if os.environ.get("PREFECT_API_URL"):
        from toolkg.flows.sync.flow import sync_servers

        run = sync_servers
    for line in skipped:  # first (an --only naming a server of one fails), on stderr (stdout is the summary)
        print(line, file=sys.stderr)
    from toolkg.live.sources import as_parameter

    paths = [as_parameter(str(p)) for p in args.paths] if run is not sync_paths else list(args.paths)
    summary = run(paths=paths, store_dir=args.store, servers=args.only, config=config)
    timing = f"wall time: {time.perf_counter() - started:.2f}s"
    if args.output_format == "json":  # the shape of a build's summary: one object
        print_json(summary.model_dump(mode="json"))
        print(timing, file=sys.stderr)
    else:
        print(summary)
        print(f"  {timing}")
    return summary.exit_code


def cmd_schedule(args: argparse.Namespace) -> int:
    from toolkg.errors import ConfigError

    if not os.environ.get("PREFECT_API_URL"):
        raise ConfigError(
            "toolkg schedule needs a Prefect server: run 'prefect server start' and set "
            "PREFECT_API_URL=http://127.0.0.1:4200/api"
        )
    for line in _require_manifests(args.paths):  # each run's summary says it again
        print(line, file=sys.stderr)
    config = build_config(args)
    usage(not config.dask, "toolkg schedule runs extraction in-process: build.dask goes with toolkg build --dask")
    if config.llm_config:  # the deployment's runs may start elsewhere: an absolute path, like PATH and --store
        config = config.model_copy(update={"llm_config": str(Path(config.llm_config).resolve())})
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    from prefect.deployments.runner import EntrypointType
    from pydantic import SecretStr

    from toolkg.flows.build import build_catalog
    from toolkg.live.sources import as_parameter, is_address, public_url

    # Runs may start elsewhere: absolute paths (server addresses as given). The deployment keeps its parameters
    # in Prefect's database for every later run, so an address holding a key cannot be one of them.
    for path in args.paths:
        usage(
            not isinstance(as_parameter(path), SecretStr),
            f"{public_url(path.removeprefix('mcp+sse:').removeprefix('mcp+http:'))}: an address holding a key would "
            "be stored with the deployment; put it in a client configuration's url and schedule that file",
        )
    paths = [p if is_address(p) else str(Path(p).resolve()) for p in args.paths]
    store_dir = str(Path(args.store).resolve())
    print(
        f"serving deployment 'toolkg-build/{args.name}' (cron '{args.cron}') from {os.environ['PREFECT_API_URL']}; "
        f"run it now with: prefect deployment run 'toolkg-build/{args.name}'; Ctrl-C stops serving",
        file=sys.stderr,
        flush=True,
    )
    build_catalog.serve(
        name=args.name,
        cron=args.cron,
        parameters={"paths": paths, "store_dir": store_dir, "config": config.model_dump(mode="json")},
        description=f"toolkg build of {', '.join(paths)} into {store_dir}",
        tags=["toolkg"],
        entrypoint_type=EntrypointType.MODULE_PATH,
        print_starting_message=False,
    )
    return EXIT_OK


def cmd_prefect_server(args: argparse.Namespace) -> int:
    from toolkg.flows.local_server import command

    return command(args.action)
