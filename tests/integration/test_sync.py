"""Incremental sync ends where a full rebuild of the same catalog ends, touching only what changed."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import CASES
from tests.support.stores import _graph_state
from toolkg.flows.sync import CatalogSync, read_manifest
from toolkg.store.oxigraph_store import ToolStore


@pytest.mark.slow
def test_sync_operations_match_a_full_rebuild(build, tmp_path):
    shop = json.loads((CASES / "inference" / "shop.json").read_text())
    # The store starts from an older catalog: two tools missing, one described differently, plus bing.
    old_shop = [t for t in shop if t["name"] not in ("acme_user_login", "get_current_date")]
    old_shop = [{**t, "description": "Returns something."} if t["name"] == "get_product_code" else t for t in old_shop]
    live, fresh = tmp_path / "live", tmp_path / "fresh"
    live.mkdir()
    fresh.mkdir()
    (live / "shop.json").write_text(json.dumps(old_shop))
    shutil.copy(CASES / "mcp_bing.json", live / "mcp_bing.json")
    build([live], tmp_path / "live-store")
    (fresh / "shop.json").write_text(json.dumps(shop))
    build([fresh], tmp_path / "fresh-store")

    new_shop = read_manifest(fresh / "shop.json")
    server = new_shop.servers[0]
    with ToolStore(tmp_path / "live-store") as store, CatalogSync(store) as sync:
        quads_before = store.count_quads()
        one_tool = next(t for t in server.tools if t.name == "get_product_code")
        updated = sync.update_tool(
            server.model_copy(
                update={
                    "tools": tuple(t for t in server.tools if t.name not in ("acme_user_login", "get_current_date"))
                }
            ),
            one_tool,
            str(live / "shop.json"),
            new_shop.format,
        )
        assert updated.tools_changed == ["shop::get_product_code"]
        assert 0 < updated.triples_inserted < quads_before / 10  # a diff, not a rewrite

        added = sync.upsert_server(server, str(fresh / "shop.json"), new_shop.format)
        assert added.operation == "update-server"
        assert added.tools_changed == ["shop::acme_user_login", "shop::get_current_date"]
        # the login's edges arrive (others may go: the catalog changed under every judgement)
        assert added.edges_added > 0 and any(e.producer == "shop::acme_user_login" for e in sync.edges.values())

        removed = sync.remove_server("bing-cn-mcp")
        assert removed.tools_changed and all(t.startswith("bing-cn-mcp::") for t in removed.tools_changed)
        assert not store.select("SELECT ?t WHERE { ?t tk:identifier ?id FILTER(STRSTARTS(?id, 'bing-cn-mcp::')) }")
        # The manifest that defined the synced servers is stale now: the next build re-reads it.
        records = store.manifest_records()
        assert records[str(live / "shop.json")].fingerprint == ""

    live_state = _graph_state(tmp_path / "live-store", ["shop"])
    fresh_state = _graph_state(tmp_path / "fresh-store", ["shop"])
    assert live_state[0] == fresh_state[0]  # dependency edges, declared and inferred
    assert live_state[1] == fresh_state[1]  # structural links
    # The server graph differs only in where its triples came from (the manifest path).
    assert len(live_state[2]["shop"]) == len(fresh_state[2]["shop"])


@pytest.mark.slow
def test_removing_and_adding_one_tool_match_rebuilds(build, tmp_path):
    shop = json.loads((CASES / "inference" / "shop.json").read_text())
    gone = "acme_user_login"  # a producer: its consumers lose edges when it goes and regain them when it returns
    full, less = tmp_path / "full", tmp_path / "less"
    full.mkdir()
    less.mkdir()
    (full / "shop.json").write_text(json.dumps(shop))
    (less / "shop.json").write_text(json.dumps([t for t in shop if t["name"] != gone]))
    build([full], tmp_path / "live-store")
    build([less], tmp_path / "less-store")
    manifest = read_manifest(full / "shop.json")
    server = manifest.servers[0]
    tool = next(t for t in server.tools if t.name == gone)
    without = server.model_copy(update={"tools": tuple(t for t in server.tools if t.name != gone)})

    with ToolStore(tmp_path / "live-store") as store, CatalogSync(store) as sync:
        removed = sync.remove_tool(server, gone, str(full / "shop.json"), manifest.format)
        assert (removed.operation, removed.tools_changed) == ("remove-tool", [f"shop::{gone}"])
        assert removed.edges_removed > 0
    assert _graph_state(tmp_path / "live-store", ["shop"])[:2] == _graph_state(tmp_path / "less-store", ["shop"])[:2]

    build([full], tmp_path / "full-store")
    with ToolStore(tmp_path / "live-store") as store, CatalogSync(store) as sync:
        added = sync.update_tool(without, tool, str(full / "shop.json"), manifest.format)
        assert (added.operation, added.tools_changed) == ("add-tool", [f"shop::{gone}"])
    assert _graph_state(tmp_path / "live-store", ["shop"])[:2] == _graph_state(tmp_path / "full-store", ["shop"])[:2]


@pytest.mark.slow
@pytest.mark.parametrize("built_with", ["defaults", "the same settings"])
def test_a_sync_infers_with_the_runs_inference_settings(build, tmp_path, built_with):
    """`toolkg build PATH --only SERVER --set inference.*` infers with those settings: the synced store's
    dependency edges are a build's with them, whether the store was built with them or with the defaults
    (then the first change brings every stored edge in line, as a build's rerun of the stage would)."""
    from toolkg.cli import main

    settings = {"learned": False}  # the learned judge off: shop's edges differ (tests/cases/inference/shop.json)
    shop = json.loads((CASES / "inference" / "shop.json").read_text())
    folder, live = tmp_path / "catalog", tmp_path / "live-store"
    folder.mkdir()
    (folder / "shop.json").write_text(json.dumps(shop[:-1]))
    shutil.copy(CASES / "mcp_bing.json", folder / "mcp_bing.json")
    build([folder], live, links=False, inference=settings if built_with == "the same settings" else {})
    (folder / "shop.json").write_text(json.dumps(shop))  # its last tool is new
    build([folder], tmp_path / "with-settings", links=False, inference=settings)
    build([folder], tmp_path / "with-defaults", links=False)

    code = main(["build", str(folder), "--store", str(live), "--only", "shop", "--no-links", "-q",
                 "--set", "inference.learned=false"])  # fmt: skip
    assert code == 0
    edges = _graph_state(live, [])[0]
    assert edges == _graph_state(tmp_path / "with-settings", [])[0]
    assert edges != _graph_state(tmp_path / "with-defaults", [])[0]


def test_a_sync_refuses_settings_it_cannot_honour(tmp_path):
    """The LLM extractor, the LLM review and hidden declared dependencies are a build's: refused, not ignored."""
    from toolkg.config import BuildConfig
    from toolkg.errors import ConfigError

    with ToolStore(tmp_path / "store") as store:
        for config in (BuildConfig(confirm_deps=True), BuildConfig(hide_declared=True), BuildConfig(extractor="llm")):
            with pytest.raises(ConfigError, match="incremental sync cannot honour"):
                CatalogSync(store, config)


@pytest.mark.slow
def test_a_synced_ref_named_producer_matches_a_rebuild(build, tmp_path):
    """A producer whose response only a ``$ref``'s component name says is of orders (tk:schemaName): synced in,
    it feeds what a rebuild has it feed (issue 51: the name reaches inference on both paths)."""
    import yaml

    document = yaml.safe_load((CASES / "shapes" / "ref_entity.yaml").read_text())
    live, fresh = tmp_path / "live", tmp_path / "fresh"
    live.mkdir()
    fresh.mkdir()
    without = {**document, "paths": {k: v for k, v in document["paths"].items() if k != "/dashboard"}}
    (live / "shop.yaml").write_text(yaml.safe_dump(without))
    (fresh / "shop.yaml").write_text(yaml.safe_dump(document))
    build([live], tmp_path / "live-store")
    build([fresh], tmp_path / "fresh-store")
    server = read_manifest(fresh / "shop.yaml")
    with ToolStore(tmp_path / "live-store") as store, CatalogSync(store) as sync:
        sync.upsert_server(server.servers[0], str(fresh / "shop.yaml"), server.format)
        assert ("shop::cancelOne", "shop::getDashboard") in {(e.consumer, e.producer) for e in sync.edges.values()}
    assert _graph_state(tmp_path / "live-store", ["shop"])[0] == _graph_state(tmp_path / "fresh-store", ["shop"])[0]
