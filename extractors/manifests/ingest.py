"""Ingest stage: one manifest file in, a typed ``Manifest`` (or a quarantine entry) out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolkg.extractors.manifests.arazzo import parse_arazzo
from toolkg.extractors.manifests.formats import (
    ParsedServers,
    detect_format,
    parse_mcp,
    parse_mcp_catalog,
    parse_openai,
    parse_toollinkos,
)
from toolkg.extractors.manifests.openapi import parse_openapi
from toolkg.extractors.manifests.reading import load_document
from toolkg.failures import quarantine
from toolkg.limits import Limits
from toolkg.models import Manifest, ManifestFile, ManifestFormat, StageInfo

PARSERS: dict[str, Callable[[str, Any, str | None, Limits], ParsedServers]] = {
    "mcp": parse_mcp,
    "mcp-catalog": parse_mcp_catalog,
    "openai": parse_openai,
    "openapi": parse_openapi,
    "arazzo": parse_arazzo,
    "toollinkos": parse_toollinkos,
}


class IngestResult(StageInfo):
    """One manifest parsed: its servers and tools, what was quarantined, what was trimmed or read leniently
    (notices)."""

    file: ManifestFile
    manifest: Manifest | None  # None when the whole file was quarantined

    @property
    def parsed(self) -> Manifest:
        """The manifest, of a result known to have parsed (the build carries only those past ingestion)."""
        assert self.manifest is not None, f"{self.file.path} was quarantined whole: it has no manifest"
        return self.manifest


def ingest_manifest(
    file: ManifestFile,
    data: bytes,
    *,
    format: ManifestFormat | None = None,
    server: str | None = None,
    limits: Limits | None = None,
) -> IngestResult:
    """Parse one manifest's bytes; malformed tools and unreadable files become quarantine entries.

    Nothing raises out of here: a file nobody can read, or a failure nobody foresaw, is one
    quarantine entry for the whole file (its reason one line, its first bytes kept)."""
    limits = limits or Limits()
    try:
        document = load_document(file.path, data, limits)
        chosen = format or detect_format(document, file.path)
        parsed = PARSERS[chosen](file.path, document, server, limits)
        manifest = Manifest(path=file.path, sha256=file.sha256, format=chosen, servers=tuple(parsed.servers))
    except Exception as exc:
        entry = quarantine(exc, source=file.path, item=file.path, stage="parse", raw=data[:2000])
        return IngestResult(file=file, manifest=None, quarantined=(entry,))
    return IngestResult(
        file=file, manifest=manifest, quarantined=tuple(parsed.quarantined), notices=tuple(parsed.notices)
    )
