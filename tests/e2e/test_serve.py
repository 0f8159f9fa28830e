"""`toolkg serve` over HTTP, and the saved queries from the CLI: what an analyst meets."""

from __future__ import annotations

import json
import shutil
import threading
import time
import urllib.parse

import pytest

from tests.conftest import CASES
from tests.support.endpoint_helpers import get, request, serving, sparql
from toolkg.store.saved_queries import saved_queries

TK = "PREFIX tk: <https://w3id.org/toolkg/ontology#>\n"
COUNT_TOOLS = TK + "SELECT (COUNT(DISTINCT ?t) AS ?n) WHERE { ?t a tk:Tool }"


@pytest.fixture
def shop_store(cli, tmp_path):
    """A store built by `toolkg build` from one 20-tool manifest with dependencies to infer."""
    folder = tmp_path / "catalog"
    folder.mkdir()
    shutil.copy(CASES / "inference" / "shop.json", folder / "shop.json")
    store = tmp_path / "store"
    result = cli("build", str(folder), "--store", str(store), "--no-links")
    assert result.returncode == 0, result.stderr
    assert "snapshot for 'toolkg serve'" in result.stdout
    return store, folder


def test_endpoint_answers_sparql_refuses_writes_and_times_out(shop_store):
    store, _ = shop_store
    with serving(store, "--timeout", "2") as base:
        status = get(base + "/status")
        assert status["read_only"] is True
        assert status["snapshot"] == (store / "snapshots" / "CURRENT").read_text().strip()
        assert sparql(base, COUNT_TOOLS) == [{"n": "20"}]
        # GET with the query in the URL (SPARQL 1.1 protocol) answers too.
        code, body, headers = request(
            base + "/query?" + urllib.parse.urlencode({"query": "ASK { ?s ?p ?o }"}),
            method="GET",
            headers={"Accept": "application/sparql-results+json"},
        )
        assert code == 200 and json.loads(body)["boolean"] is True
        assert headers["X-Toolkg-Snapshot"] == status["snapshot"]

        # Every way of writing is refused, and nothing changed.
        update = urllib.parse.urlencode({"update": "CLEAR ALL"}).encode()
        assert request(base + "/update", update)[0] == 403
        direct = request(base + "/query", b"CLEAR ALL", headers={"Content-Type": "application/sparql-update"})
        assert direct[0] == 403
        graph = base + "/store?graph=" + urllib.parse.quote("https://example.org/g")
        assert request(graph, b"<a:b> <a:c> <a:d> .", method="PUT", headers={"Content-Type": "text/turtle"})[0] == 403
        assert request(graph, None, method="DELETE")[0] == 403
        assert sparql(base, COUNT_TOOLS) == [{"n": "20"}]

        # A runaway query ends with 504 after the timeout, and the endpoint answers the next one.
        started = time.monotonic()
        runaway = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"
        code, body, _ = request(base + "/query", urllib.parse.urlencode({"query": runaway}).encode())
        assert code == 504 and "timed out after 2s" in body
        assert time.monotonic() - started < 10
        assert sparql(base, COUNT_TOOLS) == [{"n": "20"}]

        # The UI's list of saved queries, each of which runs on the endpoint as offered.
        offered = get(base + "/saved-queries")
        assert {q["name"] for q in offered} == set(saved_queries())
        for q in offered:
            assert q["description"] and not q["description"].startswith("#")
            sparql(base, q["query"])
        tools = sparql(base, next(q for q in offered if q["name"] == "server-tools")["query"])
        assert len(tools) == 20 and {"acme_user_login", "acme_place_order"} <= {r["tool"] for r in tools}


def test_endpoint_swaps_to_the_new_snapshot_while_a_build_runs(cli, shop_store):
    """Queries keep answering from a complete snapshot during a build, then see the new one."""
    store, folder = shop_store
    with serving(store) as base:
        before = get(base + "/status")["snapshot"]
        answers: list[str] = []
        stop = threading.Event()

        def keep_querying() -> None:
            while not stop.is_set():
                answers.append(sparql(base, COUNT_TOOLS)[0]["n"])
                time.sleep(0.05)

        poller = threading.Thread(target=keep_querying)
        poller.start()
        try:
            shutil.copy(CASES / "mcp_bing.json", folder / "mcp_bing.json")
            result = cli("build", str(folder), "--store", str(store), "--no-links")
            assert result.returncode == 0, result.stderr
            deadline = time.monotonic() + 20
            while get(base + "/status")["snapshot"] == before:
                assert time.monotonic() < deadline, "the endpoint did not switch to the new snapshot"
                time.sleep(0.2)
            time.sleep(0.3)
        finally:
            stop.set()
            poller.join()
        status = get(base + "/status")
        assert status["swaps"] == 1 and status["snapshot"] != before
        assert set(answers) == {"20", "22"} and answers[0] == "20" and answers[-1] == "22"
        assert sparql(base, COUNT_TOOLS) == [{"n": "22"}]
    # Two snapshots are kept: the one served and the one an endpoint may still be leaving.
    assert len([p for p in (store / "snapshots").iterdir() if p.is_dir()]) == 2


def _rows(stdout: str) -> list[dict[str, str]]:
    """SPARQL JSON results (what `toolkg query --format json` prints) as plain rows."""
    return [{k: v["value"] for k, v in row.items()} for row in json.loads(stdout)["results"]["bindings"]]


def test_saved_queries_from_the_cli(cli, shop_store):
    store, folder = shop_store
    listing = cli("query", "--list-saved")
    assert listing.returncode == 0
    for name, q in saved_queries().items():
        assert f"{name}" in listing.stdout and q.description in listing.stdout

    deps = cli(
        "query",
        "--store",
        str(store),
        "--saved",
        "transitive-dependencies",
        "-p",
        "tool=shop::acme_place_order",
        "--format",
        "json",
    )
    assert deps.returncode == 0, deps.stderr
    rows = _rows(deps.stdout)
    assert {"dependency": "shop::acme_user_login", "direct": "true", "tool": "shop::acme_place_order"} in rows

    shown = cli("query", "--saved", "server-tools", "-p", 'server=it"s', "--show")
    assert 'VALUES ?server { "it\\"s" }' in shown.stdout  # a value is an escaped literal, never raw SPARQL

    bad = cli("query", "--store", str(store), "--saved", "server-tools", "-p", "tool=x")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no parameter tool" in bad.stderr

    # What changed: a manifest removed with --prune shows up as removed in the last run.
    shutil.copy(CASES / "mcp_bing.json", folder / "mcp_bing.json")
    assert cli("build", str(folder), "--store", str(store), "--no-links").returncode == 0
    changes = _rows(cli("query", "--store", str(store), "--saved", "last-run-changes", "--format", "json").stdout)
    assert [(r["change"], r["manifest"].rsplit("/", 1)[-1]) for r in changes] == [("added", "mcp_bing.json")]
    (folder / "shop.json").unlink()
    assert cli("build", str(folder), "--store", str(store), "--no-links", "--prune").returncode == 0
    changes = _rows(cli("query", "--store", str(store), "--saved", "last-run-changes", "--format", "json").stdout)
    assert [(r["change"], r["manifest"].rsplit("/", 1)[-1]) for r in changes] == [("removed", "shop.json")]
