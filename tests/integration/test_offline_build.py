"""The offline extractor inside a build: extraction graphs with provenance, and a store fed another build's caches."""

from __future__ import annotations

import pytest

from tests.conftest import DATA


@pytest.mark.slow
def test_offline_build_loads_extraction_graphs_with_provenance(build, store_dir):
    from toolkg.extractors.triples.offline import VERSION
    from toolkg.store.oxigraph_store import ToolStore

    summary = build([DATA / "toollinkos" / "core_tools.json"], store_dir)
    usage = {"extractor": "offline", "version": VERSION, "tools": 50, "cache_hits": 0}
    assert summary.exit_code == 0 and summary.model_dump(mode="json")["extraction"] == usage
    assert summary.loaded_servers == 1 and summary.loaded_tools == 50  # extraction graphs are not servers
    store = ToolStore(store_dir)
    (row,) = store.select("""SELECT (COUNT(DISTINCT ?g) AS ?graphs) (COUNT(DISTINCT ?e) AS ?entities) WHERE {
        GRAPH ?g { ?g a tk:Extraction ; tk:extractor "offline" ; prov:wasDerivedFrom ?m ; prov:wasGeneratedBy ?r .
                   ?tool tk:hasEntity ?e } }""")
    assert int(row["graphs"].value) == 50 and int(row["entities"].value) > 50
    # rebuilding after removing the manifest's tools retracts their extraction graphs too
    empty = store_dir.parent / "empty"
    empty.mkdir()
    (empty / "core_tools.json").write_text("[]")
    store.close()
    build([empty], store_dir, prune=True)
    assert ToolStore(store_dir).select("SELECT ?g WHERE { ?g a tk:Extraction }") == []


@pytest.mark.slow
def test_a_fresh_store_fed_another_builds_caches_reads_them_and_equals_it(build, tmp_path):
    import shutil

    from tests.support.stores import comparable

    catalog = [DATA / "toollinkos" / "core_tools.json"]
    first = build(catalog, tmp_path / "first")
    shutil.copytree(tmp_path / "first" / "cache", tmp_path / "second" / "cache")
    second = build(catalog, tmp_path / "second")
    assert first.extraction.cache_hits == 0 and second.extraction.cache_hits == 50
    assert second.links["embedded"] == 0
    assert comparable(tmp_path / "second") == comparable(tmp_path / "first")
