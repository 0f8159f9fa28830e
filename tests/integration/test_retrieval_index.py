"""The retrieval index: a build writes it, a retriever maps it and ranks exactly as it does reading the store;
a store changed since (a sync, an unfinished build) or an index damaged on disk is not used (one line on
stderr says why), and the next build writes it again."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import CASES
from toolkg.config import BuildConfig
from toolkg.flows.stages.base import Change, StageState
from toolkg.flows.stages.retrieval_index import RetrievalIndex
from toolkg.flows.sync import CatalogSync
from toolkg.retrieval import METHODS, Index, Query, make_retriever
from toolkg.retrieval.index_files import current_token, index_root
from toolkg.store.build_state import pending_stages
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.snapshots import current_snapshot

CATALOG = CASES / "retrieval" / "catalog.json"
QUERIES = [
    Query("book", "Reserve a table for four at Luigi's restaurant"),
    Query("rain", "Will it rain in Paris tomorrow?"),
    Query("pdf", "Write a memo and send it to me as a PDF", ("Create a new word document", "Convert it to PDF")),
    Query("file", "Read the sales in /data/sales.xlsx and save a chart in /out/sales.png"),
    Query("none", "zxqv"),
    Query("other script", "明天巴黎的天气"),
]


def _rankings(index: Index) -> dict[str, list]:
    """Every method's full answer to every query: tools with their exact scores and reasons, and servers."""
    out = {}
    for method in METHODS:
        for query in QUERIES:
            ranking = make_retriever(method, index).retrieve(query, 10)
            tools = [(h.tool, h.score, h.why) for h in ranking.tools]
            out[f"{method} {query.id}"] = [tools, ranking.servers]
    return out


def _same_as_reading_the_store(store) -> None:
    mapped, plain = Index(store), Index(store, use_index=False)
    try:
        assert mapped.saved is not None and plain.saved is None
        assert _rankings(mapped) == _rankings(plain)
    finally:
        mapped.close()
        plain.close()


def test_a_built_store_is_ranked_from_its_index_exactly_as_from_the_store(built_store, capsys):
    store = built_store(CATALOG)
    assert "index" in built_store.summaries[store].stage_seconds
    capsys.readouterr()  # the build's progress lines
    _same_as_reading_the_store(store)
    assert capsys.readouterr().err == ""  # the index matched: nothing to say


@pytest.mark.slow
def test_without_links_the_index_holds_no_vectors_and_ranks_the_same(built_store):
    store = built_store(CATALOG, links=False)
    index = Index(store)
    try:
        assert index.saved is not None and index.saved.model is None
    finally:
        index.close()
    _same_as_reading_the_store(store)


def test_a_snapshot_reads_the_index_it_names(built_store):
    store = built_store(CATALOG)
    snapshot = current_snapshot(store)
    assert snapshot is not None
    index = Index(store, store=ToolStore.open_snapshot(snapshot))
    try:
        assert index.saved is not None and index.saved.folder.name == current_token(store)
    finally:
        index.close()


@pytest.mark.slow
def test_a_store_changed_since_its_index_is_read_from_the_store_until_the_next_build(build, tmp_path, capsys):
    catalog = tmp_path / "catalog.json"
    shutil.copy(CATALOG, catalog)
    store = tmp_path / "store"
    build([catalog], store)
    first = current_token(store)
    capsys.readouterr()
    with ToolStore(store) as opened, CatalogSync(opened, BuildConfig(link=False), warm=False) as sync:
        gone = sorted({t.server_id for t in sync.tools.values()})[0]
        sync.remove_server(gone)
        # what sync is to write in the same transaction (RetrievalIndex.update): the index stage owed a rerun
        change = Change(changed=set(), removed=set(), before=[], tools={})
        # the base update marks the stage pending and never reads the state
        RetrievalIndex().update(StageState(), change)
        opened.patch(change.deletions, change.insertions)
        assert "index" in pending_stages(opened)

    stale = Index(store)
    try:
        assert stale.saved is None and gone not in {t.server for t in stale.catalog.tools}
        assert _rankings(stale) == _rankings(Index(store, use_index=False))
    finally:
        stale.close()
    # (a sync with links off leaves the probes to the first query, which says so too: test_probes_cli.py)
    err = [line for line in capsys.readouterr().err.splitlines() if "retrieval index" in line]
    assert len(err) == 1 and "changed since its retrieval index was written" in err[0]
    Index(store).close()
    assert capsys.readouterr().err == ""  # said once per process

    rebuilt = build([catalog], store)  # sync left the manifest stale: the build reads it again, the server is back
    assert "index" in rebuilt.stage_seconds
    with ToolStore(store, read_only=True) as opened:
        assert "index" not in pending_stages(opened)
    _same_as_reading_the_store(store)
    assert current_token(store) == first  # the same catalog again: the same content, the same index
    assert [p.name for p in index_root(store).iterdir() if p.is_dir()] == [first]


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated vectors", "garbage manifest", "folder gone"])
def test_a_damaged_index_falls_back_with_one_line_and_the_next_build_rewrites_it(
    build, built_store, tmp_path, capsys, damage
):
    store = built_store.copy(CATALOG, tmp_path / "store")
    capsys.readouterr()
    folder = index_root(store) / current_token(store)
    if damage == "truncated vectors":
        vectors = folder / "tool_vectors.npy"
        vectors.write_bytes(vectors.read_bytes()[:-100])
    elif damage == "garbage manifest":
        (folder / "manifest.json").write_text("{")
    else:
        shutil.rmtree(folder)
    index = Index(store)
    try:
        assert index.saved is None
        assert _rankings(index) == _rankings(Index(store, use_index=False))
    finally:
        index.close()
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("toolkg: retrieval index") and str(folder) in line and "reading the catalog" in line

    again = build([CATALOG], store)  # nothing changed, but the index is owed
    assert "index" in again.stage_seconds and "infer" not in again.stage_seconds
    _same_as_reading_the_store(store)


def test_an_unchanged_rebuild_leaves_the_index_alone(build, built_store, tmp_path):
    store = built_store.copy(CATALOG, tmp_path / "store")
    before = {p.name: p.stat().st_mtime_ns for p in (index_root(store) / current_token(store)).iterdir()}
    again = build([CATALOG], store)
    assert "index" not in again.stage_seconds
    assert {p.name: p.stat().st_mtime_ns for p in (index_root(store) / current_token(store)).iterdir()} == before


def test_a_sync_marks_the_index_stale(built_store, tmp_path):
    store = built_store.copy(CATALOG, tmp_path / "store")
    with ToolStore(store) as opened, CatalogSync(opened, BuildConfig(link=False), warm=False) as sync:
        sync.remove_server(sorted({t.server_id for t in sync.tools.values()})[0])
        assert "index" in pending_stages(opened)
