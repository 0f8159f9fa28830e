"""Where toolkg keeps its files: per-machine (per-user) ones, never inside a store and shared by every store on
the machine (``cache_dir``, ``config_dir``), and a store's own caches (``store_cache``).

>>> store_cache("/data/st", "embeddings").as_posix()
'/data/st/cache/embeddings.sqlite'
"""

from __future__ import annotations

import os
from pathlib import Path

from toolkg.environment import CACHE_DIR, CONFIG_DIR


def cache_dir() -> Path:
    """``$TOOLKG_CACHE_DIR``, else ``$XDG_CACHE_HOME/toolkg``, else ``~/.cache/toolkg``."""
    explicit = CACHE_DIR.raw()
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "toolkg"


# The caches a store keeps in <store>/cache/ (they go with it: copied, moved and removed with the store):
# text vectors, LLM replies, the offline extractor's results, SHACL validation results, the catalog's probe
# queries (toolkg.retrieval.probes).
STORE_CACHES = ("embeddings", "llm", "offline", "validation", "probes")


def store_cache(store_dir: str | Path, name: str) -> Path:
    """``<store_dir>/cache/<name>.sqlite``, ``name`` one of ``STORE_CACHES``: every module names a store's cache
    files through here, so one place says where they are (tests/unit/test_store_caches.py keeps it so)."""
    if name not in STORE_CACHES:
        raise ValueError(f"no store cache {name!r} (one of {', '.join(STORE_CACHES)})")
    return Path(store_dir) / "cache" / f"{name}.sqlite"


def config_dir() -> Path:
    """``$TOOLKG_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/toolkg``, else ``~/.config/toolkg``: the user's settings
    and credentials (``toolkg mcp``'s bearer tokens), which clearing a cache must not throw away."""
    explicit = CONFIG_DIR.raw()
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "toolkg"


def private_folder(folder: Path) -> Path:
    """``folder``, made this user's alone (0700) when missing: where credentials and the lists that decide what
    toolkg may run are kept (the token store, the Prefect server's key, the configurations named). An existing
    folder is left as its owner set it."""
    if not folder.exists():
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o700)
    return folder
