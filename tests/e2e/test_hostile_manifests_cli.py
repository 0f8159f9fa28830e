"""Hostile catalogs through `toolkg build` in a subprocess: one line per item, no traceback unless -v."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import hostile
from toolkg.ontology import iris
from toolkg.store.oxigraph_store import ToolStore


def _stored(store_dir: Path) -> dict[str, set[str]]:
    with ToolStore(store_dir, read_only=True) as store:
        rows = store.select(
            "SELECT ?id ?p WHERE { ?t a tk:Tool ; tk:identifier ?id OPTIONAL { ?t tk:hasParameter/tk:name ?p } }"
        )
    out: dict[str, set[str]] = {}
    for row in rows:
        out.setdefault(row["id"].value, set())
        if "p" in row:
            out[row["id"].value].add(row["p"].value)
    return out


def _check(catalog: hostile.Catalog, store_dir: Path, exit_code: int) -> None:
    stored = _stored(store_dir)
    for tool_id, parameters in catalog.good_tools().items():
        assert tool_id in stored, f"good tool {tool_id!r} missing"
        assert stored[tool_id] == parameters, f"{tool_id!r}: parameters {stored[tool_id]} != {parameters}"
    (run,) = [p for p in (store_dir / "runs").iterdir() if p.is_dir()]
    lines = (run / "quarantine.jsonl").read_text(encoding="utf-8").split("\n")[:-1]
    assert all(len(line.splitlines()) == 1 for line in lines)  # nothing inside a record splits a line
    entries = [json.loads(line) for line in lines]
    for entry in entries:
        assert entry["reason"] and "\n" not in entry["reason"] and "\r" not in entry["reason"], entry
    for manifest, tool in catalog.bad_tools():
        items = hostile.acceptable_items(manifest, tool)
        assert any(e["source"] == manifest.file and e["item"] in items for e in entries), (
            f"bad tool ({tool.bad}) {tool.name!r} of {manifest.format} not quarantined"
        )
    assert exit_code == (3 if entries else 0)
    # SHACL over what was loaded, and the store answers a query
    from toolkg.store.validation import Validator

    with ToolStore(store_dir, read_only=True) as store:
        triples = [
            t
            for g in store.named_graphs()
            if g.value.startswith(iris.SERVER_GRAPH_PREFIX)
            for t in store.graph_triples(g)
        ]
        with Validator(workers=1) as validator:
            assert validator.violations(triples) == []
        assert store.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")


@settings(max_examples=3)
@given(catalog=hostile.catalogs(max_files=5), data=st.data())
def test_the_cli_prints_one_line_per_item_and_no_traceback(cli, catalog, data):
    """The same catalogs through `toolkg build` in a subprocess, as a user runs it."""
    folder = Path(tempfile.mkdtemp(prefix="toolkg-hostile-cli-"))
    try:
        hostile.write(catalog, folder / "catalog")
        result = cli("build", str(folder / "catalog"), "--store", str(folder / "store"), "--no-links")
        assert result.returncode in (0, 3), result.stderr[-2000:]
        assert "Traceback" not in result.stdout + result.stderr
        for line in (result.stdout + result.stderr).splitlines():
            assert not any(ch in line for ch in "\r\x1b\x00\u202e"), repr(line)
        _check(catalog, folder / "store", result.returncode)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_an_unexpected_failure_is_one_line_and_v_shows_the_traceback(cli, tmp_path):
    catalog = tmp_path / "one.json"
    catalog.write_text(json.dumps({"tools": [{"name": "ping", "description": "Ping"}]}))
    args = ("build", str(catalog), "--store", str(tmp_path / "store"), "--no-links")
    plain = cli(*args, env={"TOOLKG_FAULT": "raise:ingest"})
    assert plain.returncode == 1 and plain.stderr.count("\n") == 1, plain.stderr
    assert plain.stderr.startswith("toolkg: error: internal error: InjectedFault: fault injected at ingest")
    assert "rerun with -v" in plain.stderr and "Traceback" not in plain.stdout + plain.stderr
    verbose = cli(*args, "-v", env={"TOOLKG_FAULT": "raise:ingest"})
    assert verbose.returncode == 1 and "Traceback" in verbose.stderr
    assert verbose.stderr.rstrip().splitlines()[-1].startswith("toolkg: error: internal error: InjectedFault")
