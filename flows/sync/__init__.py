"""Incremental sync on a live store: add, update or remove one server, or update one tool, without a
rebuild (``CatalogSync``); ``sync_found_servers`` syncs named servers from their manifests, and
``sync_paths`` is the whole of ``toolkg build PATH... --only SERVER``.

With a Prefect server, the CLI runs ``sync_paths`` as the flow ``toolkg.flows.sync.flow.sync_servers``.
"""

from toolkg.flows.sync.catalog import CatalogSync
from toolkg.flows.sync.result import SyncResult, format_result
from toolkg.flows.sync.servers import find_servers, read_manifest, sync_found_servers, sync_paths

__all__ = [
    "CatalogSync",
    "SyncResult",
    "find_servers",
    "format_result",
    "read_manifest",
    "sync_found_servers",
    "sync_paths",
]
