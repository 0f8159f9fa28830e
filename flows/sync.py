"""The Prefect flow of ``toolkg build PATH... --only SERVER``: sync just those servers on a built store.

The work is the library's (``toolkg.sync``: ``CatalogSync`` and ``sync_found_servers``); this flow
reads the manifests, opens the store and runs it, so a Prefect server shows the sync as a flow run.
"""

from __future__ import annotations

from prefect import flow

from toolkg.store.oxigraph_store import ToolStore
from toolkg.sync import SyncResult, find_servers, format_result, sync_found_servers

__all__ = ["SyncResult", "format_result", "sync_servers"]  # the first two: kept importable here for the CLI


@flow(name="toolkg-sync", log_prints=True, validate_parameters=False)
def sync_servers(paths: list[str], store_dir: str, servers: list[str], links: bool = True) -> list[SyncResult]:
    """`toolkg build PATH... --only SERVER`: sync just these servers from the manifests under ``paths``
    (a server no manifest defines any more is removed), then publish a snapshot for the endpoint."""
    found = find_servers(paths, servers)
    with ToolStore(store_dir) as store:
        return sync_found_servers(store, servers, found, links=links)
