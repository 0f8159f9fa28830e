"""Sync named servers from manifest files: find them, then add, update or remove each on the store.

``sync_paths`` is the whole of ``toolkg build PATH... --only SERVER``; the Prefect flow (flows/sync/flow.py)
wraps it when a Prefect server runs.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime
from pathlib import Path

from toolkg.config import BuildConfig
from toolkg.errors import NotFoundError, RequestError
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import discover, fingerprint_file
from toolkg.flows.sync.catalog import CatalogSync
from toolkg.flows.sync.result import SyncResult
from toolkg.limits import Limits
from toolkg.live import refresh_live
from toolkg.models import Manifest, Server
from toolkg.store.build_state import clear_pending, mark_pending
from toolkg.store.catalog_reads import stored_server_ids
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.snapshots import publish_snapshot


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
    config = config or BuildConfig()
    wanted = set(servers)
    found: dict[str, tuple[Server, Manifest]] = {}
    for path in discover(list(paths)):
        if str(path) in exclude:
            continue
        manifest = read_manifest(path, config.format, config.server, config.limits)
        for server in manifest.servers:
            if server.id in wanted:
                found[server.id] = (server, manifest)
    return found


def sync_found_servers(
    store: ToolStore,
    servers: Iterable[str],
    found: dict[str, tuple[Server, Manifest]],
    *,
    config: BuildConfig | None = None,
) -> list[SyncResult]:
    """Sync each of ``servers`` in order with the run's ``config`` (``CatalogSync``): upsert it from ``found``
    (``find_servers``), or remove it when no manifest defines it any more; then publish a snapshot for the
    endpoint (local stores).

    Raises ``NotFoundError`` before writing anything when a server is neither found nor stored."""
    wanted = dict.fromkeys(servers)
    stored = stored_server_ids(store)
    if unknown := [s for s in wanted if s not in found and s not in stored]:
        raise NotFoundError(f"--only {', '.join(unknown)}: no manifest under the paths defines it, nor the store")
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-sync-") + uuid.uuid4().hex[:6]
    if store.publishes_snapshots:  # a sync killed before it publishes leaves the snapshot owed to the next build
        mark_pending(store, ["snapshot"], run_id)
    results = []
    with CatalogSync(store, config, warm=False) as sync:
        for server_id in wanted:
            if server_id in found:
                server, manifest = found[server_id]
                results.append(sync.upsert_server(server, manifest.path, manifest.format))
            else:
                results.append(sync.remove_server(server_id))
    if store.publishes_snapshots:
        publish_snapshot(store, run_id)
        clear_pending(store, "snapshot")
    return results


def sync_paths(
    paths: list[str], store_dir: str, servers: list[str], config: BuildConfig | None = None
) -> list[SyncResult]:
    """`toolkg build PATH... --only SERVER`: sync just these servers from the manifests under ``paths``
    (a server no manifest defines any more is removed) with the run's ``config``, as a build would use it,
    then publish a snapshot for the endpoint.

    Live servers among ``paths`` (toolkg.live) are listed first, only those named: a listing that fails
    keeps the server's last snapshot (so the sync changes nothing for it) and is reported."""
    config = config or BuildConfig()
    live = config.live
    listed = refresh_live(
        paths, store_dir, timeout=live.timeout, concurrency=live.concurrency, only=set(servers), env_names=live.env
    )
    found = find_servers(listed.paths, servers, exclude=listed.configurations, config=config)
    with ToolStore(store_dir) as store:
        results = sync_found_servers(store, servers, found, config=config)
    failed = [SyncResult(operation="list", target=q.item, quarantined=[q]) for q in listed.quarantined]
    return failed + results
