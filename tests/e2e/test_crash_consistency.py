"""Crash consistency: a build killed (SIGKILL) at any stage boundary loses nothing, the store opens and
answers queries, and the next build repairs everything to what a clean build makes; a failing
catalog-wide stage keeps its previous graph and is redone by the next build.

The kill comes from the build's own test hook (``TOOLKG_FAULT=kill:<point>``, toolkg.failures), so it
lands exactly on the boundary every time: a process killed on a progress line would race.
"""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import pytest

from tests.conftest import CASES, build_config
from tests.support.stores import comparable
from toolkg.ontology import iris
from toolkg.ontology.graphs import INFERRED_GRAPH
from toolkg.stages import StageName
from toolkg.store.build_state import pending_stages
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.snapshots import current_snapshot

# A kill at each stage boundary: the stages by name, and "loaded" (every manifest in, no catalog stage yet).
S = StageName
POINTS = (S.INGEST, S.LOAD, "loaded", S.CANONICALIZE, S.INFER, S.LINK, S.SNAPSHOT)
CATALOG_WIDE = {S.CANONICALIZE, S.INFER, S.LINK, S.SNAPSHOT}


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("crash") / "catalog"
    folder.mkdir()
    for name in ("inference/shop.json", "openai_tools.json", "petstore.yaml"):
        shutil.copy(CASES / name, folder / Path(name).name)
    return folder


@pytest.fixture(scope="module")
def clean(catalog, prefect_api, tmp_path_factory) -> dict[bool, set[str]]:
    """What a clean build makes, with and without the structural links."""
    from toolkg.flows.build import build_catalog

    out = {}
    for links in (True, False):
        store = tmp_path_factory.mktemp("clean") / "store"
        assert build_catalog([str(catalog)], str(store), build_config(links=links)).exit_code == 0
        out[links] = comparable(store)
    return out


@pytest.mark.parametrize("point", POINTS)
def test_a_build_killed_at_a_boundary_is_repaired_by_the_next(cli, cli_process, build, catalog, clean, tmp_path, point):
    links = point == "link"  # the embedding model loads only where the link stage is the point
    flags = () if links else ("--no-links",)
    store = tmp_path / "store"
    killed = cli_process("build", str(catalog), "--store", str(store), *flags, env={"TOOLKG_FAULT": f"kill:{point}"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]

    stats = cli("stats", "--store", str(store), "--json")  # the store opens and answers SPARQL
    assert stats.returncode == 0, stats.stderr
    assert (json.loads(stats.stdout)["totals"]["tools"] > 0) == (point != "ingest")
    if point in CATALOG_WIDE:
        with ToolStore(store, read_only=True) as opened:
            assert point in pending_stages(opened)  # the stage's mark outlived the kill

    summary = build([catalog], store, links=links)  # the next build, nothing changed on disk
    assert summary.exit_code == 0, [str(q) for q in summary.quarantined]
    assert comparable(store) == clean[links]
    with ToolStore(store, read_only=True) as repaired:
        assert pending_stages(repaired) == set()
    assert (snapshot := current_snapshot(store)) is not None and snapshot.name == summary.run_id

    if point == "infer":  # and then it is quiet: nothing owed, nothing redone
        again = build([catalog], store, links=links)
        assert not CATALOG_WIDE & again.stage_seconds.keys()


def test_a_failing_catalog_stage_keeps_its_graph_and_is_redone(build, catalog, tmp_path, monkeypatch):
    folder = tmp_path / "catalog"
    shutil.copytree(catalog, folder)
    store = tmp_path / "store"
    build([folder], store)
    with ToolStore(store, read_only=True) as opened:
        before = set(opened.graph_triples(INFERRED_GRAPH))
    assert before

    shop = json.loads((folder / "shop.json").read_text())
    shop = shop[:-3]  # a change: inference must run again
    (folder / "shop.json").write_text(json.dumps(shop))
    monkeypatch.setenv("TOOLKG_FAULT", "raise:before-infer")
    failed = build([folder], store)
    assert failed.exit_code == 3
    (entry,) = [q for q in failed.quarantined if q.stage == "infer"]
    assert entry.item == "catalog" and "InjectedFault" in entry.reason and "\n" not in entry.reason
    assert failed.loaded_tools > 0 and failed.links  # the other stages went on
    with ToolStore(store, read_only=True) as opened:
        assert set(opened.graph_triples(INFERRED_GRAPH)) == before  # the previous graph, kept whole
        assert pending_stages(opened) == {"infer"}

    monkeypatch.delenv("TOOLKG_FAULT")
    redone = build([folder], store)  # every manifest unchanged, but inference is owed
    assert redone.exit_code == 0 and redone.inferred and "infer" in redone.stage_seconds
    fresh = tmp_path / "fresh"
    build([folder], fresh)
    assert comparable(store) == comparable(fresh)


def test_a_manifest_that_fails_unexpectedly_loses_nothing_already_stored(build, catalog, tmp_path, monkeypatch):
    folder = tmp_path / "catalog"
    shutil.copytree(catalog, folder)
    store = tmp_path / "store"
    build([folder], store, links=False)
    before = comparable(store)
    (folder / "openai_tools.json").write_text((folder / "openai_tools.json").read_text().replace("weather", "climate"))
    monkeypatch.setenv("TOOLKG_FAULT", "raise:transform")
    failed = build([folder], store, links=False)
    assert failed.exit_code == 3 and failed.loaded_tools == 0
    (entry,) = failed.quarantined
    assert entry.stage == "extract" and entry.item.endswith("openai_tools.json") and "InjectedFault" in entry.reason
    assert comparable(store) == before  # the old version of the manifest is still there, whole


def test_graphs_a_killed_bulk_write_left_without_a_record_are_dropped(cli_process, build, tmp_path):
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    shutil.copy(Path(__file__).parents[2] / "data" / "livemcpbench" / "tools.json", catalog / "tools.json")
    store = tmp_path / "store"
    env = {"TOOLKG_FAULT": "kill:before-record"}  # big enough for the bulk loader, killed before its record
    killed = cli_process("build", str(catalog), "--store", str(store), "--no-links", env=env)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    with ToolStore(store, read_only=True) as opened:
        assert not opened.manifest_records()
        orphans = [g for g in opened.named_graphs() if g.value.startswith(iris.SERVER_GRAPH_PREFIX)]
    assert len(orphans) == 70  # LiveMCPBench's servers, written, named by no record

    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(CASES / "openai_tools.json", other)
    summary = build([other], store, links=False)  # the manifest is gone: its graphs must not linger
    assert summary.exit_code == 0 and summary.orphans_dropped == 70 + 527  # servers and tools' extraction graphs
    assert "repaired: dropped 597 graph(s) an interrupted build left" in str(summary)
    with ToolStore(store, read_only=True) as opened:
        named = {g for rec in opened.manifest_records().values() for g in rec.graphs}
        left = {g.value for g in opened.named_graphs() if g.value.startswith(iris.SERVER_GRAPH_PREFIX)}
    assert left and left <= named


def _without_fingerprints(quads: set[str]) -> set[str]:
    return {q for q in quads if "#fingerprint>" not in q}  # the limits are part of a manifest's fingerprint


def test_a_big_file_loads_in_parts_and_equals_one_load(build, tmp_path, monkeypatch):
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    shutil.copy(Path(__file__).parents[2] / "data" / "livemcpbench" / "tools.json", catalog / "tools.json")
    whole = build([catalog], tmp_path / "whole", links=False)
    parted = build([catalog], tmp_path / "parted", links=False, limits={"max_tools_per_batch": 100})
    assert whole.exit_code == parted.exit_code == 0 and parted.loaded_tools == whole.loaded_tools == 527
    assert parted.new == whole.new  # one manifest, loaded in parts
    assert _without_fingerprints(comparable(tmp_path / "parted")) == _without_fingerprints(
        comparable(tmp_path / "whole")
    )

    # A part that fails keeps what the store had of the file, and the record says the file is owed.
    (catalog / "tools.json").write_text((catalog / "tools.json").read_text().replace("weather", "climate"))
    monkeypatch.setenv("TOOLKG_FAULT", "raise:transform")
    failed = build([catalog], tmp_path / "parted", links=False, limits={"max_tools_per_batch": 100})
    assert failed.exit_code == 3 and failed.loaded_tools == 0
    monkeypatch.delenv("TOOLKG_FAULT")
    again = build([catalog], tmp_path / "parted", links=False, limits={"max_tools_per_batch": 100})
    assert again.loaded_tools == 527 and again.changed


def test_a_build_killed_between_parts_is_repaired(cli_process, build, tmp_path):
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    shutil.copy(CASES / "mcp_catalog.json", catalog / "servers.json")
    shutil.copy(CASES / "inference" / "shop.json", catalog / "shop.json")
    clean = build([catalog], tmp_path / "clean", links=False, limits={"max_tools_per_batch": 2})
    store = tmp_path / "store"
    flags = ("--no-links", "--limit", "max_tools_per_batch=2")
    killed = cli_process("build", str(catalog), "--store", str(store), *flags, env={"TOOLKG_FAULT": "kill:load"})
    assert killed.returncode == -signal.SIGKILL
    repaired = build([catalog], store, links=False, limits={"max_tools_per_batch": 2})
    assert repaired.exit_code == clean.exit_code == 0
    assert comparable(store) == comparable(tmp_path / "clean")
