"""Run the docstring examples of the public modules (as pyoxigraph does)."""

from __future__ import annotations

import doctest
import importlib

import pytest


def _modules_with_examples() -> list[str]:
    """Every toolkg module whose source holds a ``>>>`` example (found, not listed by hand)."""
    from tests.unit.test_layering import _modules

    return sorted(name for name, path in _modules().items() if ">>> " in path.read_text(encoding="utf-8"))


MODULES = _modules_with_examples()


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_bare_stage_imports_are_not_possible():
    """The stage folders are only importable as toolkg.<stage>: no top-level `store` module leaks."""
    import subprocess
    import sys

    code = "import importlib.util, sys; sys.exit(importlib.util.find_spec('store') is not None)"
    assert subprocess.run([sys.executable, "-c", code], cwd="/").returncode == 0
