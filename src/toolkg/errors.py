"""One root exception; subclasses carry the ids they are about.

``transient`` tells retry logic whether trying again can succeed (I/O, rate limits),
so tasks retry only what can succeed and quarantine the rest at once.
"""

from __future__ import annotations


class ToolkgError(Exception):
    """Root of every error toolkg raises on purpose; ``str()`` is one readable line."""

    transient = False


class UsageError(ToolkgError):
    """The user asked for something impossible (bad flag combination, missing file)."""


class ConfigError(ToolkgError):
    """Configuration is missing or invalid."""


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
