"""One root exception; subclasses carry the ids they are about.

``transient`` tells retry logic whether trying again can succeed (I/O, rate limits),
so tasks retry only what can succeed and quarantine the rest at once.
"""

from __future__ import annotations


class ToolkgError(Exception):
    """Root of every error toolkg raises on purpose; ``str()`` is one readable line."""

    transient = False


class RequestError(ToolkgError):
    """What was asked for cannot be done as asked; the caller must change the request (the CLI
    exits with its usage code, 2)."""


class ConfigError(RequestError):
    """An option, setting or configuration file is missing or invalid."""


class NotFoundError(RequestError):
    """A path, run, saved query, server or tool that was named does not exist."""


class ManifestError(ToolkgError):
    """A whole manifest cannot be read or understood."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class ItemError(ToolkgError):
    """One item inside a manifest (a tool, a server) is malformed; the rest can load."""

    def __init__(self, item: str, reason: str) -> None:
        self.item = item
        self.reason = reason
        super().__init__(f"{item}: {reason}")


class StoreError(ToolkgError):
    """The RDF store refused an operation."""


class StoreLockedError(StoreError):
    """Another process holds the store open for writing."""

    transient = True


class DiskFullError(StoreError):
    """The disk filled up while toolkg wrote ``what``: nothing of the run is published (toolkg.disk)."""

    def __init__(self, what: str) -> None:
        self.what = what
        super().__init__(f"disk full while writing {what}: free space and rerun")

    def __reduce__(self):  # rebuilt from ``what`` (a Dask worker's or Prefect's copy), not the whole message
        return type(self), (self.what,)


class ReadOnlyError(StoreError):
    """A store or cache folder toolkg must write is read-only; the message names it and what to do."""
