"""toolkg: tool catalogs in, a knowledge graph for tool retrieval out."""

from importlib.metadata import PackageNotFoundError, version

try:  # the one place the version is written is pyproject.toml
    __version__ = version("toolkg")
except PackageNotFoundError:  # the tree on sys.path without an install (never how the CLI runs)
    __version__ = "0+unknown"

# Bump when the triples produced from an unchanged manifest change for a reason the per-manifest stages'
# code fingerprints do not see (code outside their ``code`` modules, such as toolkg.models): every manifest
# is then rebuilt on the next run (it is part of each manifest's fingerprint, beside those fingerprints).
PIPELINE_VERSION = "4"
