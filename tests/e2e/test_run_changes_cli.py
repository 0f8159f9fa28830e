"""What a run tells its operator, as the CLI prints it: which servers stay or go (`--prune`), every tool added,
changed or removed with its fields, a sync (`build --only`) recorded as a run like a build, and the saved query
`last-run-changes` over the store those runs made."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import CASES
from toolkg.store.oxigraph_store import ToolStore


def _tool_ids(store) -> set[str]:
    with ToolStore(store, read_only=True) as s:
        return {r["id"].value for r in s.select("SELECT ?id WHERE { ?t a tk:Tool ; tk:identifier ?id }")}


def _run_ids(store) -> set[str]:
    with ToolStore(store, read_only=True) as s:
        return {r["id"].value for r in s.select("SELECT ?id WHERE { ?r a tk:BuildRun ; tk:runId ?id }")}


def _last_run_changes(cli, store) -> list[tuple[str, str, str]]:
    result = cli("query", "--store", str(store), "--saved", "last-run-changes", "--format", "json")
    assert result.returncode == 0, result.stderr
    rows = [{k: v["value"] for k, v in b.items()} for b in json.loads(result.stdout)["results"]["bindings"]]
    return [(r["run"], r["change"], r["manifest"].rsplit("/", 1)[-1]) for r in rows]


@pytest.fixture
def shop(cli, tmp_path):
    """A store built from shop.json (20 tools) and mcp_bing.json; the catalog folder and shop's tools."""
    folder = tmp_path / "catalog"
    folder.mkdir()
    tools = json.loads((CASES / "inference" / "shop.json").read_text())
    (folder / "shop.json").write_text(json.dumps(tools))
    shutil.copy(CASES / "mcp_bing.json", folder / "mcp_bing.json")
    store = tmp_path / "store"
    built = cli("build", str(folder), "--store", str(store), "--no-links")
    assert built.returncode == 0, built.stderr
    return store, folder, tools, built


def test_a_sync_of_paths_that_no_longer_define_a_server_keeps_it(cli, shop, tmp_path):
    store, _, _, _ = shop
    other = tmp_path / "other"  # a typo'd folder, a partial checkout: bing is there, shop is not
    other.mkdir()
    shutil.copy(CASES / "mcp_bing.json", other / "mcp_bing.json")
    before = _tool_ids(store)

    kept = cli("build", str(other), "--store", str(store), "--only", "shop")
    assert kept.returncode == 0, kept.stderr
    assert "remove-server" not in kept.stdout
    (line,) = [line for line in kept.stdout.splitlines() if "kept" in line]
    assert "shop" in line and "--prune" in line
    assert _tool_ids(store) == before

    pruned = cli("build", str(other), "--store", str(store), "--only", "shop", "--prune", "--json")
    assert pruned.returncode == 0, pruned.stderr
    summary = json.loads(pruned.stdout)
    assert [op["operation"] for op in summary["operations"]] == ["remove-server"] and summary["kept"] == []
    removed = {c["tool"] for c in summary["tools"] if c["change"] == "removed"}
    assert removed == {t for t in before if t.startswith("shop::")}
    assert _tool_ids(store) == before - removed
    assert _last_run_changes(cli, store) == [(summary["run_id"], "removed", "shop")]  # its server graph's IRI


def test_a_manifest_read_that_no_longer_lists_a_server_removes_it_without_prune(cli, tmp_path):
    """The manifest that defined the server says so itself: as a full build of it removes the server, so does
    a sync that read it."""
    folder, store = tmp_path / "catalog", tmp_path / "store"
    folder.mkdir()
    catalog = json.loads((CASES / "mcp_catalog.json").read_text())
    (folder / "catalog.json").write_text(json.dumps(catalog))
    assert cli("build", str(folder), "--store", str(store), "--no-links").returncode == 0
    (folder / "catalog.json").write_text(json.dumps([c for c in catalog if "hugeicons" not in c["tools"]]))

    synced = cli("build", str(folder), "--store", str(store), "--only", "hugeicons")
    assert synced.returncode == 0, synced.stderr
    assert "remove-server hugeicons" in synced.stdout and "kept" not in synced.stdout
    assert not any(t.startswith("hugeicons::") for t in _tool_ids(store))


def test_a_full_build_says_which_servers_it_kept_and_how_to_remove_them(cli, shop):
    store, folder, _, _ = shop
    only_bing = cli("build", str(folder / "mcp_bing.json"), "--store", str(store), "--no-links")
    assert only_bing.returncode == 0, only_bing.stderr
    (line,) = [line for line in only_bing.stdout.splitlines() if "kept" in line]
    assert "1 server" in line and "shop" in line and "--prune" in line
    assert any(t.startswith("shop::") for t in _tool_ids(store))


def test_summaries_name_each_tool_and_the_fields_that_changed(cli, shop):
    store, folder, tools, built = shop
    # A first build: every tool is new; the terminal shows a capped list with a count, --json all of them.
    assert "tools: 22 added, 0 changed, 0 removed" in built.stdout
    assert "    - added shop::acme_user_login" in built.stdout
    assert "... 2 more in runs/" in built.stdout

    tools[0]["description"] = "Logs in."
    tools[1]["parameters"][0]["type"] = "integer"
    gone = tools.pop()["name"]
    (folder / "shop.json").write_text(json.dumps(tools))
    rebuilt = cli("build", str(folder), "--store", str(store), "--no-links", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    summary = json.loads(rebuilt.stdout)
    first, second = tools[0]["name"], tools[1]["name"]
    parameter = tools[1]["parameters"][0]["name"]
    assert summary["tools"] == sorted(
        [
            {"tool": f"shop::{first}", "change": "changed", "fields": ["description"]},
            {"tool": f"shop::{second}", "change": "changed", "fields": [f"parameter {parameter!r}: type"]},
            {"tool": f"shop::{gone}", "change": "removed", "fields": []},
        ],
        key=lambda c: str(c["tool"]),
    )

    # --force reads every manifest again: none of them changed, and no tool did.
    forced = cli("build", str(folder), "--store", str(store), "--no-links", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "0 changed, 2 rebuilt (bytes unchanged)" in forced.stdout and "tools:" not in forced.stdout

    # A sync names its tools and fields too.
    tools[2]["description"] = "Changed by a sync."
    (folder / "shop.json").write_text(json.dumps(tools))
    synced = cli("build", str(folder), "--store", str(store), "--only", "shop", "--no-links")
    assert synced.returncode == 0, synced.stderr
    assert "update-server shop: 1 tool(s) changed" in synced.stdout
    assert f"    - changed shop::{tools[2]['name']}: description" in synced.stdout


def test_a_sync_is_a_run_the_report_and_the_saved_query_show(cli, shop):
    store, folder, tools, built = shop
    (build_run,) = _run_ids(store)
    assert [change for _, change, _ in _last_run_changes(cli, store)] == ["added", "added"]

    tools[0]["description"] = "Logs in."
    (folder / "shop.json").write_text(json.dumps(tools))
    synced = cli("build", str(folder), "--store", str(store), "--only", "shop", "--no-links", "--json")
    assert synced.returncode == 0, synced.stderr
    summary = json.loads(synced.stdout)
    sync_run = summary["run_id"]
    assert _last_run_changes(cli, store) == [(sync_run, "changed", "shop.json")]
    # the shape of a build's --json: one object with the same fields
    full = json.loads(cli("build", str(folder), "--store", str(store), "--no-links", "--json").stdout)
    assert isinstance(summary, dict) and set(summary) == set(full)
    assert (store / "runs" / sync_run / "summary.json").is_file()
    assert _run_ids(store) >= {build_run, sync_run}

    # the saved query says what each run did: the sync changed shop.json, the build after it read the bytes the
    # sync read (the summary says the same)
    assert _last_run_changes(cli, store) == [(full["run_id"], "rebuilt", "shop.json")]
    assert full["rebuilt"] == [str(folder / "shop.json")] and full["changed"] == [] and full["tools"] == []
    by_run = cli("report", "--store", str(store), "--run", sync_run)
    assert by_run.returncode == 0, by_run.stderr
    page = (store / "runs" / sync_run / "report.html").read_text()
    assert f"shop::{tools[0]['name']}" in page and "A sync of shop" in page


def test_the_saved_query_says_changed_after_a_changed_manifest(cli, shop):
    store, folder, tools, _ = shop
    tools[0]["description"] = "Logs in."
    (folder / "shop.json").write_text(json.dumps(tools))
    changed = cli("build", str(folder), "--store", str(store), "--no-links")
    assert "changed: shop.json" in changed.stdout
    assert [(c, m) for _, c, m in _last_run_changes(cli, store)] == [("changed", "shop.json")]
    cli("build", str(folder), "--store", str(store), "--no-links", "--force")
    assert [(c, m) for _, c, m in _last_run_changes(cli, store)] == [
        ("rebuilt", "mcp_bing.json"),
        ("rebuilt", "shop.json"),
    ]
