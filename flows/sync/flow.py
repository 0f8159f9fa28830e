"""The Prefect flow of ``toolkg build PATH... --only SERVER``: sync just those servers on a built store.

The work is the library's (``toolkg.flows.sync``: ``CatalogSync`` and ``sync_found_servers``); this flow
reads the manifests, opens the store and runs it, so a Prefect server shows the sync as a flow run.
"""

from __future__ import annotations

from prefect import flow

from toolkg.config import BuildConfig
from toolkg.flows.sync import SyncResult, find_servers, format_result, sync_found_servers
from toolkg.live import refresh_live
from toolkg.store.oxigraph_store import ToolStore

__all__ = ["SyncResult", "format_result", "sync_servers"]  # the first two: kept importable here for the CLI


@flow(name="toolkg-sync", log_prints=True, validate_parameters=False)
def sync_servers(
    paths: list[str], store_dir: str, servers: list[str], config: BuildConfig | None = None
) -> list[SyncResult]:
    """`toolkg build PATH... --only SERVER`: sync just these servers from the manifests under ``paths``
    (a server no manifest defines any more is removed) with the run's ``config``, as a build would use it,
    then publish a snapshot for the endpoint.

    Live servers among ``paths`` (toolkg.live) are listed first, only those named: a listing that fails
    keeps the server's last snapshot (so the sync changes nothing for it) and is reported."""
    config = config or BuildConfig()
    live = config.live
    listed = refresh_live(paths, store_dir, timeout=live.timeout, concurrency=live.concurrency, only=set(servers))
    found = find_servers(listed.paths, servers, exclude=listed.configurations, config=config)
    with ToolStore(store_dir) as store:
        results = sync_found_servers(store, servers, found, config=config)
    failed = [SyncResult(operation="list", target=q.item, quarantined=[q]) for q in listed.quarantined]
    return failed + results
