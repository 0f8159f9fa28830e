"""A fingerprint of the source code behind a result, so caches and stage marks follow code changes."""

from __future__ import annotations

import hashlib
import importlib.util
from functools import cache
from pathlib import Path


@cache
def source_fingerprint(modules: tuple[str, ...]) -> str:
    """sha256 (16 hex digits) of the source of ``modules`` (a package: all its modules and JSON data)."""
    digest = hashlib.sha256()
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        origin = Path(spec.origin)
        # a package: its modules and the data they read (a learned model's weights decide its results too)
        files = (
            sorted([*origin.parent.glob("*.py"), *origin.parent.glob("*.json")])
            if origin.name == "__init__.py"
            else [origin]
        )
        for path in files:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]
