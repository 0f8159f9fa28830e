"""`toolkg build --only`: one server synced from the CLI."""

from __future__ import annotations

import json
import shutil

from tests.conftest import CASES
from tests.support.stores import _graph_state
from toolkg.store.dependencies import dependency_rows
from toolkg.store.oxigraph_store import ToolStore


def test_build_only_syncs_one_server_from_the_cli(cli, tmp_path):
    folder = tmp_path / "catalog"
    folder.mkdir()
    shop = json.loads((CASES / "inference" / "shop.json").read_text())
    (folder / "shop.json").write_text(json.dumps(shop[:-1]))
    shutil.copy(CASES / "mcp_bing.json", folder / "mcp_bing.json")
    store = tmp_path / "store"
    assert cli("build", str(folder), "--store", str(store), "--no-links").returncode == 0
    bing_graph = _graph_state(store, ["bing-cn-mcp"])[2]

    (folder / "shop.json").write_text(json.dumps(shop))  # set_screen_brightness is new
    synced = cli("build", str(folder), "--store", str(store), "--only", "shop", "--no-links")
    assert synced.returncode == 0, synced.stderr
    assert "update-server shop: 1 tool(s) changed" in synced.stdout
    with ToolStore(store) as s:
        ids = {r["id"].value for r in s.select("SELECT ?id WHERE { ?t a tk:Tool ; tk:identifier ?id }")}
        assert "shop::set_screen_brightness" in ids
        # The paired getter/setter rule saw the new tool: its neighbourhood was re-inferred.
        assert any(
            r["consumer"] == "shop::set_screen_brightness" or r["producer"] == "shop::set_screen_brightness"
            for r in dependency_rows(s)
        )
    assert _graph_state(store, ["bing-cn-mcp"])[2] == bing_graph  # the other server was not touched

    refused = cli("build", str(folder), "--store", str(store), "--only", "shop", "--force")
    assert refused.returncode == 2 and "cannot go with --force" in refused.stderr
    unknown = cli("build", str(folder), "--store", str(store), "--only", "nope")
    assert unknown.returncode == 2 and "--only nope" in unknown.stderr
