"""Canonicalize stage.

Per manifest (``canonicalize_manifest``) there is nothing left to do: entity names are
normalised when triples become RDF (``extractors.text.entity_name``), so every manifest
already shares one IRI per normalised name, and relations are closed ontology choices.
Store-wide fuzzy clustering of near-identical entities runs after loading:
``toolkg.canonicalize.entities``.
"""

from __future__ import annotations

from toolkg.extractors.manifest_triples import ExtractedManifest


def canonicalize_manifest(extracted: ExtractedManifest) -> ExtractedManifest:
    """Identity: normalisation already happened at extraction, clustering happens store-wide."""
    return extracted
