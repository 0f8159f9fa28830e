"""Run the docstring examples of the public modules (as pyoxigraph does)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "toolkg.ontology",
    "toolkg.ontology.schema",
    "toolkg.prompts",
    "toolkg.extractors.triples",
    "toolkg.ontology.predicates",
    "toolkg.extractors.offline",
    "toolkg.ontology.iris",
    "toolkg.store.oxigraph_store",
    "toolkg.store.remote",
    "toolkg.store.saved_queries",
    "toolkg.serve.graph_svg",
    "toolkg.retrieval",
    "toolkg.retrieval.metrics",
    "toolkg.retrieval.queries",
    "toolkg.display",
    "toolkg.progress",
    "toolkg.atomic",
    "toolkg.cli.render",
]


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
