"""Where toolkg keeps per-machine (per-user) files: never inside a store, shared by every store on the machine."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$TOOLKG_CACHE_DIR``, else ``$XDG_CACHE_HOME/toolkg``, else ``~/.cache/toolkg``."""
    explicit = os.environ.get("TOOLKG_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "toolkg"


def config_dir() -> Path:
    """``$TOOLKG_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/toolkg``, else ``~/.config/toolkg``: the user's settings
    and credentials (``toolkg mcp``'s bearer tokens), which clearing a cache must not throw away."""
    explicit = os.environ.get("TOOLKG_CONFIG_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "toolkg"
