"""Ingest stage: one manifest file in, a typed ``Manifest`` (or a quarantine entry) out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from toolkg.errors import ManifestError
from toolkg.extractors.formats import (
    ParsedServers,
    detect_format,
    parse_mcp,
    parse_mcp_catalog,
    parse_openai,
    parse_toollinkos,
)
from toolkg.extractors.openapi import parse_openapi
from toolkg.extractors.reading import load_document
from toolkg.models import Manifest, ManifestFile, ManifestFormat, QuarantinedItem

PARSERS: dict[str, Callable[[str, Any, str | None], ParsedServers]] = {
    "mcp": parse_mcp,
    "mcp-catalog": parse_mcp_catalog,
    "openai": parse_openai,
    "openapi": parse_openapi,
    "toollinkos": parse_toollinkos,
}


class IngestResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    file: ManifestFile
    manifest: Manifest | None  # None when the whole file was quarantined
    quarantined: tuple[QuarantinedItem, ...] = ()


def ingest_manifest(
    file: ManifestFile, data: bytes, *, format: ManifestFormat | None = None, server: str | None = None
) -> IngestResult:
    """Parse one manifest's bytes; malformed tools and unreadable files become quarantine entries."""
    try:
        document = load_document(file.path, data)
        chosen = format or detect_format(document, file.path)
        parsed = PARSERS[chosen](file.path, document, server)
    except ManifestError as exc:
        entry = QuarantinedItem(
            source=file.path,
            item=file.path,
            stage="ingest",
            reason=exc.reason,
            raw=data[:2000].decode("utf-8", errors="replace"),
        )
        return IngestResult(file=file, manifest=None, quarantined=(entry,))
    manifest = Manifest(path=file.path, sha256=file.sha256, format=chosen, servers=tuple(parsed.servers))
    return IngestResult(file=file, manifest=manifest, quarantined=tuple(parsed.quarantined))
