"""What a build of a hostile catalog must leave: every good tool stored with its parameters, every bad one
quarantined on one line, SHACL passing on what was loaded (``_check``, run after the in-process and CLI builds)."""

from __future__ import annotations

import json
from pathlib import Path

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
