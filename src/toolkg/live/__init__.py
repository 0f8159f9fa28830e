"""Live MCP ingestion: list the servers users run and hand their listings to the build as manifests.

``refresh_live(paths, store_dir)`` splits a build's inputs: manifest files and folders pass through;
MCP client configurations and registry ``server.json`` files named among them, and server addresses,
are listed live (``listing.py``) and each listing is written as a content-hashed snapshot under the
store (``snapshots.py``), whose path then goes to the build in their place. A server that cannot be
listed keeps its previous snapshot (nothing already loaded is lost) and is quarantined with its reason.

Only a file the user named starts anything. A configuration found while walking a folder may be anyone's
(a vendored package's settings, a downloaded catalog): listing it would run its commands as the user, so
it is reported as skipped (``SkippedConfiguration``), with how to list it, and kept out of manifest
discovery as well. Everything a server answers is redacted of its configuration's secrets before it is
written (``redaction.py``).

Python API::

    from toolkg.live import list_config
    for listing in list_config("claude_desktop_config.json").listings:
        print(listing.spec.name, [t["name"] for t in listing.tools])
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from toolkg.extractors.manifests.formats import server_id_from
from toolkg.extractors.manifests.reading import discover_all
from toolkg.live.listing import (
    DEFAULT_CONCURRENCY,
    DEFAULT_TIMEOUT,
    Listing,
    ListingFailure,
    ListingRun,
    list_servers,
    where,
)
from toolkg.live.named import remember
from toolkg.live.snapshots import (
    ToolChanges,
    read_snapshot,
    snapshot_bytes,
    snapshot_dir,
    snapshot_document,
    tool_changes,
    write_snapshot,
)
from toolkg.live.sources import (
    LiveSources,
    ServerSpec,
    Unlistable,
    config_kind,
    count_servers,
    is_address,
    parse_address,
    read_config,
    sniff_config,
)
from toolkg.models import QuarantinedItem

__all__ = [
    "LiveInputs",
    "LiveRefresh",
    "Listing",
    "ListingFailure",
    "ServerReport",
    "ServerSpec",
    "SkippedConfiguration",
    "find_sources",
    "live_inputs",
    "list_config",
    "list_servers",
    "refresh_live",
    "Unlistable",
]


@dataclass
class ServerReport:
    """One live server in a build's summary."""

    server: str
    source: str
    reached: str  # 'stdio mcp-server-time' / 'http https://host/mcp'
    status: str  # new, changed, unchanged, failed, not listable
    tools: int = 0
    seconds: float = 0.0
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    reason: str = ""


@dataclass(frozen=True)
class SkippedConfiguration:
    """A client configuration or server.json found inside a folder given to the build, not named itself:
    never started nor connected to, only reported (``asdict`` of it is a ``summary.live_skipped`` entry)."""

    configuration: str  # as found under the folder given (a path the user can name as it is)
    kind: str  # 'client' (mcpServers, servers) or 'registry' (server.json)
    servers: int
    folder: str  # the folder given, in which it was found
    reason: str


@dataclass
class LiveInputs:
    """A build's inputs split: what may be listed live, what is left for manifest discovery, what is skipped."""

    sources: LiveSources  # server addresses and the servers of configuration files named themselves
    rest: list[str]  # paths left for manifest discovery
    configurations: set[str]  # every live-source file, named or found (resolved): never read as a manifest
    skipped: list[SkippedConfiguration] = field(default_factory=list)


@dataclass
class LiveRefresh:
    paths: list[str]  # what the build reads: the manifest paths given and the live snapshots
    configurations: set[str]  # live-source files named or found (kept out of manifest discovery)
    servers: list[ServerReport] = field(default_factory=list)
    quarantined: list[QuarantinedItem] = field(default_factory=list)
    skipped: list[SkippedConfiguration] = field(default_factory=list)  # found in folders, not listed
    seconds: float = 0.0


def live_inputs(paths: list[str], env_names: Iterable[str] = ()) -> LiveInputs:
    """Split ``paths``: addresses and configuration files named themselves give the servers to list; a
    configuration found inside a folder is skipped (see the module docstring). Both kinds of configuration
    file are left out of manifest discovery. ``env_names``: the variables a ``server.json`` may read.

    Raises ``ValueError`` for a malformed address (bad scheme, credentials in it)."""
    inputs = LiveInputs(sources=LiveSources(), rest=[], configurations=set())
    found: dict[str, tuple[str, Path, object]] = {}  # resolved path -> (folder given, path found, document)
    for raw in paths:
        if is_address(raw):
            inputs.sources.servers.append(parse_address(raw))
            continue
        inputs.rest.append(raw)
        path = Path(raw).expanduser()
        if path.is_file():
            document = sniff_config(path)
            if document is not None:
                named = read_config(str(path.resolve()), document, env_names)
                inputs.sources.servers += named.servers
                inputs.sources.unlistable += named.unlistable
                inputs.configurations.add(str(path.resolve()))
        elif path.is_dir():
            for candidate in discover_all([path]).files:
                document = sniff_config(candidate)
                if document is not None:
                    found.setdefault(str(candidate.resolve()), (raw, candidate, document))
    for resolved, (folder, candidate, document) in found.items():
        if resolved not in inputs.configurations:  # named as well: listed once, as named
            inputs.skipped.append(_skipped(folder, candidate, document))
        inputs.configurations.add(resolved)
    inputs.rest = [p for p in inputs.rest if str(Path(p).expanduser().resolve()) not in inputs.configurations]
    return inputs


def _skipped(folder: str, candidate: Path, document: object) -> SkippedConfiguration:
    try:  # shown under the folder as given, so the user can name it as it is printed
        shown = str(Path(folder) / candidate.relative_to(Path(folder).expanduser().resolve()))
    except ValueError:
        shown = str(candidate)
    return SkippedConfiguration(
        configuration=shown,
        kind=config_kind(document) or "client",
        servers=count_servers(document),
        folder=folder,
        reason=f"found in {folder}, not named: name the file as a PATH to list its servers (a build starts "
        "servers only from configurations named on its command line)",
    )


def find_sources(paths: list[str], env_names: Iterable[str] = ()) -> tuple[LiveSources, list[str], set[str]]:
    """``live_inputs`` as a tuple: the servers to list, the paths left for manifest discovery, and every
    configuration file (named or found). Configurations found inside folders give no servers."""
    inputs = live_inputs(paths, env_names)
    return inputs.sources, inputs.rest, inputs.configurations


def list_config(
    path: str | Path,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    concurrency: int = DEFAULT_CONCURRENCY,
    env_names: Iterable[str] = (),
) -> ListingRun:
    """List every server a configuration file (or server.json) names, without touching any store."""
    inputs = live_inputs([str(path)], env_names)
    if not Path(path).expanduser().is_file() or not inputs.configurations:
        raise ValueError(f"{path}: not an MCP client configuration or server.json file")
    return list_servers(inputs.sources.servers, timeout=timeout, concurrency=concurrency)


def refresh_live(
    paths: list[str],
    store_dir: str | Path,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    concurrency: int = DEFAULT_CONCURRENCY,
    on_listed: Callable[[int, int], None] | None = None,
    only: set[str] | None = None,
    env_names: Iterable[str] = (),
) -> LiveRefresh:
    """List the live servers among ``paths`` (only the ids in ``only``, when given) and write their
    snapshots; see the module docstring. ``env_names``: the variables a ``server.json`` may read."""
    started = time.perf_counter()
    inputs = live_inputs(paths, env_names)
    sources = inputs.sources
    # The configurations named here are this user's: toolkg mcp's call_tool may start servers from them later.
    named = [spec.source for spec in sources.servers] + [item.source for item in sources.unlistable]
    remember(source for source in named if source != "address")
    refresh = LiveRefresh(paths=inputs.rest, configurations=inputs.configurations, skipped=inputs.skipped)
    for item in sources.unlistable:
        refresh.servers.append(ServerReport(item.name, item.source, "-", "not listable", reason=item.reason))
        refresh.quarantined.append(_quarantine(item.source, item.name, f"not listable: {item.reason}"))
    specs = _unique(sources.servers, refresh)
    if only is not None:  # `toolkg build --only SERVER`: list just those
        specs = [s for s in specs if s.id in only]
        refresh.servers = [r for r in refresh.servers if server_id_from(r.server) in only]
        refresh.quarantined = [q for q in refresh.quarantined if server_id_from(q.item) in only]
    if not specs:
        refresh.seconds = time.perf_counter() - started
        return refresh
    run = list_servers(specs, timeout=timeout, concurrency=concurrency, on_listed=on_listed)
    folder = snapshot_dir(store_dir)
    for listing in run.listings:
        path = folder / f"{listing.spec.id}.json"
        document = snapshot_document(listing)
        before = read_snapshot(path)
        changes = tool_changes(before, document)
        wrote = write_snapshot(path, snapshot_bytes(document))
        status = "new" if before is None else "changed" if wrote else "unchanged"
        refresh.servers.append(_report(listing, status, changes))
        refresh.paths.append(str(path))
    for failure in run.failures:
        spec = failure.spec
        previous = folder / f"{spec.id}.json"
        kept = previous.exists()
        if kept:  # what was loaded from its last listing stays
            refresh.paths.append(str(previous))
        reason = failure.reason + (f"; stderr: {failure.stderr_tail}" if failure.stderr_tail else "")
        reason += "; its previous listing is kept" if kept else ""
        report = ServerReport(spec.name, spec.source, where(spec), "failed", seconds=failure.seconds, reason=reason)
        refresh.servers.append(report)
        refresh.quarantined.append(_quarantine(spec.source, spec.name, reason))
    refresh.seconds = time.perf_counter() - started
    return refresh


def _unique(specs: list[ServerSpec], refresh: LiveRefresh) -> list[ServerSpec]:
    """One server per id: a second configuration naming the same id is quarantined, not listed."""
    first: dict[str, ServerSpec] = {}
    for spec in specs:
        if spec.id in first:
            reason = f"server id {spec.id!r} is already named by {first[spec.id].source}"
            refresh.servers.append(ServerReport(spec.name, spec.source, where(spec), "failed", reason=reason))
            refresh.quarantined.append(_quarantine(spec.source, spec.name, reason))
        else:
            first[spec.id] = spec
    return list(first.values())


def _report(listing: Listing, status: str, changes: ToolChanges) -> ServerReport:
    spec = listing.spec
    return ServerReport(
        spec.name,
        spec.source,
        where(spec),
        status,
        tools=len(listing.tools),
        seconds=listing.seconds,
        added=changes.added if status != "new" else [],
        removed=changes.removed,
        changed=changes.changed,
    )


def _quarantine(source: str, name: str, reason: str) -> QuarantinedItem:
    return QuarantinedItem(source=source, item=name, stage="list", reason=reason)
