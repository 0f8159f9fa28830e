"""The store on a SPARQL 1.1 server (`oxigraph serve` on loopback): build, rebuild, prune, query, sync."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import CASES
from tests.support.endpoint_helpers import free_port, sparql

OXIGRAPH = Path(sys.executable).with_name("oxigraph")
TK = "PREFIX tk: <https://w3id.org/toolkg/ontology#>\n"


@pytest.fixture
def sparql_server(tmp_path):
    port = free_port()
    server = subprocess.Popen(
        [
            str(OXIGRAPH),
            "serve",
            "--location",
            str(tmp_path / "server-db"),
            "--bind",
            f"127.0.0.1:{port}",
            "--union-default-graph",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            sparql(base, "SELECT * WHERE { ?s ?p ?o } LIMIT 1")
            break
        except OSError:
            assert time.monotonic() < deadline, "oxigraph serve did not start"
            time.sleep(0.2)
    yield base
    server.terminate()
    server.wait(10)


def _remote_store(tmp_path: Path, base: str) -> Path:
    store = tmp_path / "store"
    store.mkdir()
    (store / "remote.toml").write_text(
        f'[sparql]\nquery = "{base}/query"\nupdate = "{base}/update"\ngraph_store = "{base}/store"\n'
    )
    return store


def _tools_on_server(base: str) -> set[str]:
    rows = sparql(base, TK + "SELECT ?id WHERE { ?t a tk:Tool ; tk:identifier ?id }")
    return {r["id"] for r in rows}


def test_build_rebuild_prune_query_and_sync_on_a_sparql_server(cli, sparql_server, tmp_path):
    folder = tmp_path / "catalog"
    folder.mkdir()
    shop = json.loads((CASES / "inference" / "shop.json").read_text())
    (folder / "shop.json").write_text(json.dumps(shop[:-1]))
    shutil.copy(CASES / "mcp_bing.json", folder / "mcp_bing.json")
    store = _remote_store(tmp_path, sparql_server)

    first = cli("build", str(folder), "--store", str(store))
    assert first.returncode == 0, first.stderr
    assert len(_tools_on_server(sparql_server)) == 21  # the graph is on the server...
    assert not (store / "oxigraph").exists() and (store / "runs").is_dir()  # ...runs and caches stay local
    assert "snapshot" not in first.stdout

    stats = json.loads(cli("stats", "--store", str(store), "--json").stdout)
    assert stats["totals"]["tools"] == 21
    deps = cli(
        "query", "--store", str(store), "--saved", "transitive-dependencies", "-p", "tool=shop::acme_place_order"
    )
    assert deps.returncode == 0 and "shop::acme_user_login" in deps.stdout

    # A changed manifest replaces its graphs; a vanished one is pruned; both in one update each.
    (folder / "shop.json").write_text(json.dumps(shop))
    (folder / "mcp_bing.json").unlink()
    second = cli("build", str(folder), "--store", str(store), "--prune")
    assert second.returncode == 0, second.stderr
    assert "1 changed" in second.stdout and "1 removed" in second.stdout
    tools = _tools_on_server(sparql_server)
    assert len(tools) == 20 and not any(t.startswith("bing-cn-mcp::") for t in tools)
    graphs = sparql(sparql_server, "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
    assert not any("bing" in r["g"] for r in graphs)

    # Incremental sync of one server works on the remote store too.
    shop[0]["description"] = "Logs the user into Acme and returns a session token."
    (folder / "shop.json").write_text(json.dumps(shop))
    synced = cli("build", str(folder), "--store", str(store), "--only", "shop", "--no-links")
    assert synced.returncode == 0, synced.stderr
    assert "1 tool(s) changed" in synced.stdout
    described = sparql(
        sparql_server,
        TK + 'SELECT ?d WHERE { ?t tk:identifier "shop::acme_user_login" ; <http://purl.org/dc/terms/description> ?d }',
    )
    assert described == [{"d": "Logs the user into Acme and returns a session token."}]


def test_an_unreachable_server_is_one_line(cli, tmp_path):
    store = _remote_store(tmp_path, f"http://127.0.0.1:{free_port()}")
    result = cli("stats", "--store", str(store))
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and "unreachable" in result.stderr
