"""toolkg: tool catalogs in, a knowledge graph for tool retrieval out."""

__version__ = "0.1.0"

# Bump when the triples produced from an unchanged manifest change: every manifest is
# then rebuilt on the next run (it is part of each manifest's fingerprint).
PIPELINE_VERSION = "4"
