"""A full disk during a build (issue 40): the build stops with one line and rc 1, publishes nothing (the
previous snapshot stays current), loses and half-writes nothing already in the store, and the rerun with
space completes what the failed run began. A corrupt run summary is one line naming it.

The disk fills up for real: the store lives on a tmpfs of a few MB, and the build's own hook
(``TOOLKG_FAULT=fill:<point>``, toolkg.failures) fills it at a stage boundary, so every later write meets
ENOSPC from there on, whichever write that is. Where this process may not mount (tests/support/mounts.py),
the hook raises ENOSPC at that point instead.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import CASES, build_in_process
from tests.support.mounts import small_disk
from tests.support.stores import comparable
from toolkg.ontology import iris
from toolkg.ontology.graphs import LINKS_GRAPH, MANIFESTS_GRAPH
from toolkg.store.build_state import pending_stages
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.snapshots import current_snapshot

# Where the disk fills up: once the first changed manifest is loaded (the next load, or whatever writes
# next, meets it), and ahead of the structural links (the probe's case: their embedding cache failed, the
# stage was quarantined and the snapshot without links published).
POINTS = ("load", "before-link")
_MANIFEST = re.compile(re.escape(iris.BASE) + r"manifest/[0-9a-f]+")
ONE_LINE = re.compile(r"toolkg: error: disk full while writing \S.*: free space and rerun")


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("faults") / "catalog"
    folder.mkdir()
    for name in ("inference/shop.json", "openai_tools.json", "petstore.yaml"):
        shutil.copy(CASES / name, folder / Path(name).name)
    return folder


def _edit(folder: Path) -> None:
    """Change two manifests (so there are two loads, and inference and the links must run again)."""
    shop = json.loads((folder / "shop.json").read_text())
    (folder / "shop.json").write_text(json.dumps(shop[:-3]))
    tools = folder / "openai_tools.json"
    tools.write_text(tools.read_text().replace("weather", "climate"))


@dataclass
class Clean:
    store: set[str]  # the whole store but for the manifest records (_catalog_graphs)
    graphs: dict[str, frozenset[str]]  # each server graph


@pytest.fixture(scope="module")
def edited(catalog, tmp_path_factory) -> Clean:
    """What a clean build of the edited catalog makes."""
    folder = tmp_path_factory.mktemp("edited") / "catalog"
    shutil.copytree(catalog, folder)
    _edit(folder)
    store = tmp_path_factory.mktemp("edited") / "store"
    assert build_in_process([folder], store).exit_code == 0
    return Clean(_catalog_graphs(store), _server_graphs(store))


def _catalog_graphs(store: Path) -> set[str]:
    """The store as ``comparable`` has it but for the manifests: their records and IRIs name each test's folder."""
    return {_MANIFEST.sub("MANIFEST", quad) for quad in comparable(store) if not quad.endswith(f" {MANIFESTS_GRAPH}")}


def _server_graphs(store: Path) -> dict[str, frozenset[str]]:
    with ToolStore(store, read_only=True) as opened:
        return {
            g.value: frozenset(map(str, opened.graph_triples(g)))
            for g in opened.named_graphs()
            if g.value.startswith(iris.SERVER_GRAPH_PREFIX)
        }


def _published(store: Path) -> Path:
    """The snapshot readers see: a build has published one."""
    snapshot = current_snapshot(store)
    assert snapshot is not None, f"no snapshot published in {store}"
    return snapshot


def _links(snapshot: Path) -> int:
    store = ToolStore.open_snapshot(snapshot)
    try:
        return len(store.graph_triples(LINKS_GRAPH))
    finally:
        store.close()


@pytest.mark.parametrize("point", POINTS)
def test_a_full_disk_stops_the_build_in_one_line_and_publishes_nothing(cli, build, catalog, edited, tmp_path, point):
    folder = tmp_path / "catalog"
    shutil.copytree(catalog, folder)
    disk = tmp_path / "disk"
    with small_disk(disk, megabytes=24) as real:
        store = disk / "store"
        first = build([folder], store)
        assert first.exit_code == 0, [str(q) for q in first.quarantined]
        before = _server_graphs(store)
        links = _links(_published(store))
        assert links

        _edit(folder)
        filler = disk / "filler"
        env = {"TOOLKG_FAULT": f"fill:{point}", **({"TOOLKG_FAULT_FILL": str(filler)} if real else {})}
        failed = cli("build", str(folder), "--store", str(store), env=env)
        assert failed.returncode == 1, failed.stdout[-2000:] + failed.stderr[-2000:]
        assert ONE_LINE.fullmatch(failed.stderr.strip().splitlines()[-1]), failed.stderr[-2000:]
        assert "Traceback" not in failed.stderr and "internal error" not in failed.stderr, failed.stderr[-2000:]

        # Nothing published: the previous snapshot, with its links, is what readers see.
        assert _published(store).name == first.run_id
        assert _links(_published(store)) == links
        assert [p.name for p in (store / "snapshots").iterdir() if p.is_dir()] == [first.run_id]
        # Nothing lost or half-written: each server graph is as before or as the edited catalog makes it.
        after = _server_graphs(store)
        assert after.keys() == before.keys()
        for graph, triples in after.items():
            assert triples in (before[graph], edited.graphs[graph]), graph

        # The failed run's summary is whole or absent, never a half file; the report reads it or says in one
        # line why it cannot (on the full disk it cannot write report.html).
        runs = [p for p in (store / "runs").iterdir() if p.name != first.run_id]
        saved = [p / "summary.json" for p in runs if (p / "summary.json").exists()]
        for summary in saved:
            assert json.loads(summary.read_text())["stopped"].startswith("disk full while writing")
        report = cli("report", "--store", str(store), *(["--run", runs[0].name] if saved else []))
        assert report.returncode in (0, 1) and "internal error" not in report.stderr, report.stderr
        assert len(report.stderr.strip().splitlines()) <= 1, report.stderr
        stats = cli("stats", "--store", str(store), "--json")  # the store still opens and answers, disk full
        assert stats.returncode == 0, stats.stderr
        assert json.loads(stats.stdout)["totals"]["tools"] > 0

        if real:
            filler.unlink()
        rerun = build([folder], store)  # with space again: the marks the failed run left make it redo the rest
        assert rerun.exit_code == 0, [str(q) for q in rerun.quarantined]
        assert _published(store).name == rerun.run_id
        assert _links(_published(store)) > 0
        with ToolStore(store, read_only=True) as repaired:
            assert pending_stages(repaired) == set()
        assert _catalog_graphs(store) == edited.store  # what a clean build of the edited catalog makes


def test_a_corrupt_run_summary_is_one_line_naming_it(cli, built_store, tmp_path):
    store = built_store.copy(CASES / "openai_tools.json", tmp_path / "store", links=False)
    (run,) = (store / "runs").iterdir()
    (run / "summary.json").write_text("")  # what an older build left when the disk filled up while writing it
    result = cli("report", "--store", str(store), "--run", run.name)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert str(run / "summary.json") in line and "is empty" in line and "internal error" not in line, line
