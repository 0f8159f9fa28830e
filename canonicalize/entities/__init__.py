"""Entity canonicalization: store-wide fuzzy clustering of near-identical entities (``clustering``)."""
