"""Canonicalize stage: entity and predicate normalisation.

For now a pass-through: the structural extractor already mints one node per catalog key
(servers, tools, parameters, categories). Fuzzy entity clustering and predicate mapping
arrive with the triple extractors that need them.
"""

from __future__ import annotations

from toolkg.extractors.structural import ExtractedManifest


def canonicalize_manifest(extracted: ExtractedManifest) -> ExtractedManifest:
    """Return the manifest's triples with entities and predicates canonicalised (identity for now)."""
    return extracted
