"""The Prefect flow of ``toolkg build PATH... --only SERVER``: sync just those servers on a built store.

The work is the library's (``toolkg.flows.sync.sync_paths``: read the manifests, open the store, run
``CatalogSync``); this flow runs it, so a Prefect server shows the sync as a flow run. Without a Prefect server
the CLI calls ``sync_paths`` itself, without importing Prefect.
"""

from __future__ import annotations

from prefect import flow
from pydantic import SecretStr

from toolkg.config import BuildConfig
from toolkg.flows.sync import SyncResult, format_result, sync_paths
from toolkg.live.sources import from_parameter
from toolkg.summary import BuildSummary

__all__ = ["SyncResult", "format_result", "sync_servers"]  # the first two: kept importable here


@flow(name="toolkg-sync", log_prints=True, validate_parameters=False)
def sync_servers(
    paths: list[str | SecretStr], store_dir: str, servers: list[str], config: BuildConfig | None = None
) -> BuildSummary:
    """`toolkg build PATH... --only SERVER` as a flow run: ``sync_paths`` (the run's summary; an address holding
    a key comes as a ``SecretStr``, as to the build flow)."""
    return sync_paths([from_parameter(path) for path in paths], store_dir, servers, config)
