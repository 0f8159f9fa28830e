"""Canonicalize: everything derived across tools, once the catalog's manifests are extracted.

- ``entities``: store-wide fuzzy clustering of near-identical entities (rapidfuzz), one
  canonical-entities graph. Per manifest there is nothing to do: names are normalised when triples
  are made (``toolkg.text.words.entity_name``), so manifests already share one IRI per name.
- ``inference``: dependency edges between tools (rules, the learned judge, the LLM review).
- ``links``: structural links (co-invoked, schema compatible, shared parameters), computed whole or
  kept up to date one change at a time.

Predicate canonicalization happens during extraction (the LLM's response model maps a relation to an
ontology predicate so a wrong one is re-asked), so it lives with the vocabulary: ``toolkg.ontology.predicates``.
"""
