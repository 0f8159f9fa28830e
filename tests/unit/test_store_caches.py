"""A store's cache files are named in one place, ``toolkg.paths.store_cache``: no module builds ``<store>/cache/...``
by hand (nine places did, in seven files), so moving or renaming a cache is one edit and a reader finds every
cache a store holds in ``STORE_CACHES``.

The check reads the package folders and benchmarks/ (the tests may spell paths out: they check where files land)
for a path joined with ``/ "cache"`` or a ``<name>.sqlite`` of a store cache, anywhere but toolkg/paths.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.layout import ROOT, package_folders, parsed
from toolkg.paths import STORE_CACHES, store_cache

FILES = {f"{name}.sqlite" for name in STORE_CACHES}


def hand_built(path: Path) -> list[str]:
    """'file:line' for each ``... / "cache"`` and each store cache's file name written in ``path``."""
    found = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # a path joined
            if any(isinstance(side, ast.Constant) and side.value == "cache" for side in (node.left, node.right)):
                found.add(f"{path.relative_to(ROOT)}:{node.lineno}")
        elif isinstance(node, ast.Constant) and node.value in FILES:
            found.add(f"{path.relative_to(ROOT)}:{node.lineno}")
    return sorted(found)


def test_store_cache_names_the_four_caches_only(tmp_path):
    assert store_cache(tmp_path, "llm") == tmp_path / "cache" / "llm.sqlite"
    with pytest.raises(ValueError, match="no store cache 'vectors'"):
        store_cache(tmp_path, "vectors")


def test_no_module_builds_a_store_cache_path_by_hand():
    paths = [p for folder in package_folders().values() for p in sorted(folder.glob("*.py"))]
    paths += sorted((ROOT / "benchmarks").rglob("*.py"))
    found = [line for p in paths if p.name != "paths.py" or p.parent.name != "toolkg" for line in hand_built(p)]
    assert found == [], "name a store's cache with toolkg.paths.store_cache:\n" + "\n".join(found)
