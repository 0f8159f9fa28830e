"""Sync named servers from manifest files: find them, then add, update or remove each on the store.

``sync_paths`` is the whole of ``toolkg build PATH... --only SERVER``; the Prefect flow (flows/sync/flow.py)
wraps it when a Prefect server runs.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from pyoxigraph import Literal, NamedNode, Triple

from toolkg.config import BuildConfig
from toolkg.errors import NotFoundError, RequestError
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import discover, fingerprint_file
from toolkg.flows.stages import manifest_code
from toolkg.flows.stages.listing import LIST, ListInfo
from toolkg.flows.stages.snapshot import SNAPSHOT
from toolkg.flows.sync.catalog import CatalogSync
from toolkg.flows.sync.result import SyncResult
from toolkg.limits import Limits
from toolkg.live.snapshots import snapshot_dir
from toolkg.models import Manifest, ManifestFile, QuarantinedItem, Server
from toolkg.ontology import TK, iris
from toolkg.ontology.graphs import MANIFESTS_GRAPH, server_graph
from toolkg.store.build_state import mark_pending
from toolkg.store.catalog_reads import stored_server_ids
from toolkg.store.loading import BuildOptions, live_listing_wins, record_run
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.stats import totals
from toolkg.summary import BuildSummary


def read_manifest(
    path: str | Path, format: str | None = None, server: str | None = None, limits: Limits | None = None
) -> Manifest:
    """Parse one manifest file as a build would (for sync callers holding a path)."""
    file, data = fingerprint_file(Path(path), limits or Limits())
    result = ingest_manifest(file, data, format=format, server=server, limits=limits)  # type: ignore[arg-type]
    if result.manifest is None:
        reasons = "; ".join(q.reason for q in result.quarantined) or "unreadable"
        raise RequestError(f"{path}: {reasons}")
    return result.manifest


def find_servers(
    paths: Iterable[str],
    servers: Iterable[str],
    exclude: AbstractSet[str] = frozenset(),
    config: BuildConfig | None = None,
) -> dict[str, tuple[Server, Manifest]]:
    """The ``servers`` the manifests under ``paths`` (but the files in ``exclude``) define, each with its
    manifest (the last one read wins when two define it), read with ``config``'s format, server and limits as
    a build reads them; a server no manifest defines is left out."""
    return read_servers(paths, servers, exclude, config)[0]


def read_servers(
    paths: Iterable[str],
    servers: Iterable[str],
    exclude: AbstractSet[str] = frozenset(),
    config: BuildConfig | None = None,
    live: Mapping[str, str] | None = None,
    refused: list[QuarantinedItem] | None = None,
) -> tuple[dict[str, tuple[Server, Manifest]], set[str]]:
    """``find_servers``, and the manifest files it read (whether a server's own manifest was read decides
    whether its absence removes it: ``sync_found_servers``).

    ``live`` (server id -> the live snapshot that lists it): a live server's listing wins over a static
    definition of its id, as in a build (flows/live_precedence.py); another file's definition of such an id is
    not used but added to ``refused`` with the reason."""
    config = config or BuildConfig()
    wanted = set(servers)
    live = live or {}
    found: dict[str, tuple[Server, Manifest]] = {}
    read: set[str] = set()
    for path in discover(list(paths)):
        if str(path) in exclude:
            continue
        manifest = read_manifest(path, config.format, config.server, config.limits)
        read.add(manifest.path)
        for server in manifest.servers:
            if server.id not in wanted:
                continue
            snapshot = live.get(server.id, manifest.path)
            if snapshot != manifest.path:
                if refused is not None:
                    refused.append(live_listing_wins(manifest.path, server.id, f"listed by {snapshot}"))
                continue
            found[server.id] = (server, manifest)
    return found, read


def live_owners(store: ToolStore, listed: Iterable[str]) -> dict[str, str]:
    """The server ids whose definition comes from a live snapshot: those listed this run (``listed``: the run's
    manifest paths), and those the store holds from a snapshot (its record's path is in the store's live
    folder) even when this sync did not list them, so that a sync of static files alone cannot overlay them."""
    folder = snapshot_dir(store.directory).resolve()
    owners: dict[str, str] = {}
    for record in store.manifest_records().values():
        if Path(record.path).resolve().parent == folder:
            owners[Path(record.path).stem] = record.path
    for path in listed:
        if Path(path).resolve().parent == folder:  # a snapshot is named after its server id
            owners[Path(path).stem] = path
    return owners


def new_sync_summary(store_dir: str | Path) -> BuildSummary:
    """A sync's run summary: its run id (``...-sync-...``), its store, when it started."""
    started = datetime.now(UTC)
    run_id = started.strftime("%Y%m%dT%H%M%SZ-sync-") + uuid.uuid4().hex[:6]
    return BuildSummary(run_id=run_id, store=str(Path(store_dir).resolve()), started=started.isoformat())


def sync_found_servers(
    store: ToolStore,
    servers: Iterable[str],
    found: dict[str, tuple[Server, Manifest]],
    *,
    config: BuildConfig | None = None,
    read: AbstractSet[str] | None = None,
    summary: BuildSummary | None = None,
) -> list[SyncResult]:
    """Sync each of ``servers`` in order with the run's ``config`` (``CatalogSync``): upsert it from ``found``
    (``find_servers``); one no manifest defines any more is removed when the manifest that defined it is
    among the files ``read`` (it says so itself) or the config prunes (``--prune``), and kept otherwise (a
    typo'd folder, a partial checkout: ``summary.kept`` names it). Then the run is recorded as a build's is
    (a ``tk:BuildRun``, ``runs/<id>/summary.json``: ``summary``, filled here) and a snapshot published for the
    endpoint (local stores).

    Raises ``NotFoundError`` before writing anything when a server is neither found nor stored."""
    config = config or BuildConfig()
    summary = summary or new_sync_summary(store.directory)
    wanted = dict.fromkeys(servers)
    stored = stored_server_ids(store)
    if unknown := [s for s in wanted if s not in found and s not in stored]:
        raise NotFoundError(f"--only {', '.join(unknown)}: no manifest under the paths defines it, nor the store")
    owners = _owners(store, [s for s in wanted if s not in found])
    removing = {s for s in wanted if s not in found and (config.prune or owners[s] & set(read or ()))}
    summary.only = list(wanted)
    summary.kept = [s for s in wanted if s not in found and s not in removing]
    run_id = summary.run_id
    if not found and not removing:  # every server kept: nothing to write, no session to open
        _record(store, summary, [], found, {}, None)
        return []
    if store.publishes_snapshots:  # a sync killed before it publishes leaves the snapshot owed to the next build
        mark_pending(store, [SNAPSHOT.name], run_id)
    results = []
    with CatalogSync(store, config, warm=False) as sync:
        for server_id in wanted:
            if server_id in found:
                server, manifest = found[server_id]
                results.append(sync.upsert_server(server, manifest.path, manifest.format))
            elif server_id in removing:
                results.append(sync.remove_server(server_id))
        extractor = sync.extractor
        options = BuildOptions.of(config, extractor, manifest_code())
    _record(store, summary, results, found, {s: owners[s] & set(read or ()) for s in removing}, options)
    if store.publishes_snapshots:
        summary.fold(SNAPSHOT.publish_now(store, run_id))
    return results


def _owners(store: ToolStore, server_ids: list[str]) -> dict[str, set[str]]:
    """Each server's manifests: the paths of the records that define its graph."""
    records = store.manifest_records().values()
    return {s: {r.path for r in records if server_graph(s).value in r.graphs} for s in server_ids}


def _record(
    store: ToolStore,
    summary: BuildSummary,
    results: list[SyncResult],
    found: dict[str, tuple[Server, Manifest]],
    read_owners: dict[str, set[str]],
    options: BuildOptions | None,
) -> None:
    """The sync's run, as a build records one: its provenance (when it changed the graph: the manifests it
    read the changed servers from, and those of the removed servers it read: ``read_owners``), its summary
    with every tool change, saved under runs/<id>/. ``options``: the run's, None when it wrote nothing."""
    # each operation's figures; its tools and quarantine are the summary's own lists
    summary.operations = [{k: v for k, v in asdict(r).items() if k not in ("tools", "quarantined")} for r in results]
    summary.tools = sorted((c for r in results for c in r.tools), key=lambda c: (c.tool, c.change))
    summary.quarantined += [q for r in results for q in r.quarantined]
    for r in results:
        for stage, seconds in r.stage_seconds.items():
            summary.add_time(stage, seconds)
    ended = datetime.now(UTC)
    if results and options is not None:
        used = {m.path: ManifestFile(path=m.path, sha256=m.sha256, size=0) for _, m in found.values()}
        for paths in read_owners.values():  # a manifest read that no longer defines the server removed it
            for path in paths:
                if path not in used:
                    used[path] = fingerprint_file(Path(path), options.limits)[0]
        started = datetime.fromisoformat(summary.started)
        gone = [server_graph(r.target).value for r in results if r.operation == "remove-server"]
        record_run(store, summary.run_id, started, ended, list(used.values()), [], options, gone)
        _note_bytes_read(store, list(used.values()))
    summary.totals = totals(store)
    summary.ended = ended.isoformat()
    summary.pipeline_seconds = round((ended - datetime.fromisoformat(summary.started)).total_seconds(), 3)
    summary.save(store.runs_dir)


def _note_bytes_read(store: ToolStore, used: list[ManifestFile]) -> None:
    """Each manifest record's sha256 becomes the bytes this sync read, as a build's load sets it: the next build
    calls the manifest changed only if its bytes changed since (its fingerprint stays cleared: it is re-read)."""
    records = store.manifest_records()
    deletions: dict[NamedNode, set[Triple]] = {MANIFESTS_GRAPH: set()}
    insertions: dict[NamedNode, set[Triple]] = {MANIFESTS_GRAPH: set()}
    for file in used:
        if (record := records.get(file.path)) is not None and record.sha256 != file.sha256:
            node = iris.manifest_iri(file.path)
            deletions[MANIFESTS_GRAPH].add(Triple(node, TK.sha256, Literal(record.sha256)))
            insertions[MANIFESTS_GRAPH].add(Triple(node, TK.sha256, Literal(file.sha256)))
    store.patch(deletions, insertions)


def sync_paths(paths: list[str], store_dir: str, servers: list[str], config: BuildConfig | None = None) -> BuildSummary:
    """`toolkg build PATH... --only SERVER`: sync just these servers from the manifests under ``paths`` with
    the run's ``config``, as a build would use it (``sync_found_servers``: a server no manifest defines any
    more is removed only when its own manifest was read or the config prunes), record the run and publish a
    snapshot for the endpoint. Returns the run's summary, the shape a build's has.

    Live servers among ``paths`` (toolkg.live) are listed first, only those named: a listing that fails
    keeps the server's last snapshot (so the sync changes nothing for it) and is reported. A live server's
    listing wins over a static file's definition of its id (``live_owners``), which is quarantined."""
    config = config or BuildConfig()
    summary = new_sync_summary(store_dir)
    live = config.live
    listed = LIST.run(
        paths, store_dir, timeout=live.timeout, concurrency=live.concurrency, only=set(servers), env_names=live.env
    )
    summary.fold(ListInfo.of(listed))  # a listing that failed is quarantined: the server keeps its last snapshot
    with ToolStore(store_dir) as store:
        refused: list[QuarantinedItem] = []
        live_ids = live_owners(store, listed.paths)
        found, read = read_servers(listed.paths, servers, listed.configurations, config, live_ids, refused)
        summary.quarantined += refused
        sync_found_servers(store, servers, found, config=config, read=read, summary=summary)
    return summary
