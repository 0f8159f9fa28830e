"""Property tests: no catalog, however strange, stops a build (hypothesis; strategies in tests/support/hostile.py).

Invariants for every generated catalog: the build finishes (exit 0, or 3 with quarantined items),
every good tool is in the store with its parameters, every bad tool is in quarantine.jsonl with a
one-line reason, SHACL passes on what was loaded, and the store opens and answers queries.

CI runs a fixed, derandomised set of examples (profile ``ci``); ``make fuzz`` runs the ``fuzz``
profile: many more examples, a new random seed each time.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given

from tests.support import hostile
from tests.support.hostile_builds import _check


@pytest.mark.slow  # twenty generated catalogs, each built: ~30 s
@given(catalog=hostile.catalogs())
def test_any_catalog_builds_good_tools_and_quarantines_bad_ones(build, catalog):
    folder = Path(tempfile.mkdtemp(prefix="toolkg-hostile-"))
    try:
        hostile.write(catalog, folder / "catalog")
        summary = build([folder / "catalog"], folder / "store", links=False)
        _check(catalog, folder / "store", summary.exit_code)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", hostile.FORMATS)
def test_each_format_with_every_kind_of_flaw(build, tmp_path, fmt):
    """Not left to chance: one manifest per format holding one tool per flaw, and good tools."""
    tools = [hostile._good(0)]
    flaws = {
        "bad name": hostile.ToolSpec("get\tweather", "d", {}, [], bad="bad name"),
        "long name": hostile.ToolSpec("n" * 10_000, "d", {}, [], bad="bad name"),
        "digits name": hostile.ToolSpec("2024", "only digits in the name", {"firstNumber": {"type": "number"}}, []),
        "surrogate name": hostile.ToolSpec("s\ud800x", "lone \udc00 surrogate", {"x_2": {"type": "string"}}, []),
        "iri name": hostile.ToolSpec('a <b> "c" {d}|^`#?%', "IRI-breaking", {"q": {"type": "string"}}, []),
        "duplicate": hostile.ToolSpec("plain_tool_0", "again", {}, [], bad="duplicate name"),
        "description": hostile.ToolSpec("typed", 5, {}, [], bad="description type"),
        "deep": hostile.ToolSpec("deep", "d", {"p": hostile._nested(200)}, [], bad="nested past the depth limit"),
        "nan": hostile.ToolSpec("nan_default", "d", {"p": {"type": "number", "default": float("nan")}}, [], bad="nan"),
        "enum": hostile.ToolSpec(
            "huge_enum", "d", {"p": {"type": "string", "enum": [str(i) for i in range(3000)]}}, []
        ),
        "long description": hostile.ToolSpec("long_text", "word " * 30_000, {}, []),
    }
    for index, spec in enumerate(flaws.values(), start=1):
        spec.index = index
        tools.append(spec)
    catalog = hostile.Catalog([hostile.ManifestSpec(fmt, "", tools, title="Hostile API")])
    stem_server = {
        "mcp": "m0-Hostile-API",
        "mcp-catalog": "srv0",
        "openai": "m0",
        "openapi": "m0-Hostile-API",
        "toollinkos": "m0",
    }
    catalog.manifests[0].server = stem_server[fmt]
    hostile.write(catalog, tmp_path / "catalog")
    summary = build([tmp_path / "catalog"], tmp_path / "store", links=False)
    _check(catalog, tmp_path / "store", summary.exit_code)
    assert summary.exit_code == 3
    trimmed = {n.what for n in summary.notices}
    assert any("kept 256 of 3,000 enum values" in w for w in trimmed), trimmed
    assert any("description trimmed" in w for w in trimmed), trimmed


def test_openapi_duplicate_with_a_bad_parameter_is_quarantined_under_its_route_name(build, tmp_path):
    """Found by the fuzz profile: the second operation named ``x`` is read as ``get_r1`` (its route) and
    quarantined under that name for its bad parameter; the good ``x`` is kept."""
    tools = [
        hostile.ToolSpec("x", "d", {"a": {"type": "string"}}, [], index=0),
        hostile.ToolSpec("x", "d", {"p\nq": {"type": "string"}}, [], index=1, bad="bad parameter name"),
        hostile._good(2),
    ]
    catalog = hostile.Catalog([hostile.ManifestSpec("openapi", "m0-T", tools, title="T")])
    hostile.write(catalog, tmp_path / "catalog")
    summary = build([tmp_path / "catalog"], tmp_path / "store", links=False)
    _check(catalog, tmp_path / "store", summary.exit_code)
    (run,) = [p for p in (tmp_path / "store" / "runs").iterdir() if p.is_dir()]
    assert '"item": "m0-T::get_r1"' in (run / "quarantine.jsonl").read_text(encoding="utf-8")
