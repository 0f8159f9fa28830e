"""Exports people and other tools read: compact JSON-LD with toolkg's context, Turtle and TriG with plain
prefixed names, and the ontology's documentation page (with a look at it in a real browser).

Each export is read back by a parser that is not the writer (rdflib; Oxigraph's parsers for the generated
cases) and compared with the N-Quads export: the same quads, blank nodes up to renaming."""

from __future__ import annotations

import functools
import http.server
import json
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from pyoxigraph import RdfFormat, parse

from tests.conftest import CASES
from tests.support.cli_runner import run_in_process
from tests.support.rdf_datasets import _canonical, _merged, _via_rdflib
from toolkg.ontology import TK_NS
from toolkg.ontology.docs import CONTEXT_IRI, jsonld_context, ontology_html

# rdflib's own chatter: its JSON-LD parser and N-Quads writer use its deprecated APIs, and it warns about
# every ill-typed literal the generated cases are made of (a "+5"^^xsd:boolean reads back as written).
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*is deprecated, use Dataset:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Parsing weird boolean:UserWarning"),
]


@pytest.fixture(scope="module")
def store(built_store) -> Path:
    """A store built from four small manifests (entities, dependencies, links included); shared, read only."""
    folder = built_store.root / "exports-catalog"  # a folder of its own: the build names servers by file
    if not folder.exists():
        folder.mkdir()
        for name in ("openai_tools.json", "petstore.yaml", "mcp_bing.json", "inference/shop.json"):
            shutil.copy(CASES / name, folder / Path(name).name)
    return built_store(folder)


def _toolkg(prefect_api: str, *args: str) -> subprocess.CompletedProcess:
    """The cli fixture's run, for module-scoped use (the cli fixture is per test)."""
    return run_in_process(*args, env={"PREFECT_API_URL": prefect_api})


def _export(prefect_api, store: Path, fmt: str, *extra: str) -> str:
    result = _toolkg(prefect_api, "export", "--store", str(store), "--format", fmt, *extra)
    assert result.returncode == 0, result.stderr
    return result.stdout


# -- JSON-LD -----------------------------------------------------------------------------------------------


def test_jsonld_export_is_compact_with_the_context_and_keeps_every_quad(prefect_api, store):
    nquads = _export(prefect_api, store, "nq")
    text = _export(prefect_api, store, "jsonld")
    document = json.loads(text)
    assert document["@context"] == jsonld_context()["@context"]  # embedded: readable offline
    entries = document["@graph"]
    graphs = {entry["@id"] for entry in entries}
    assert "server-graph:Swagger-Petstore" in graphs and "graph:manifests" in graphs  # named graphs kept
    nodes = [node for entry in entries for node in entry["@graph"]]
    tool = next(n for n in nodes if n.get("@type") == "Tool" and n.get("name") == "get_weather")
    assert tool["@id"].startswith("tool:") and isinstance(tool["ownedBy"], str)  # @id coercion: a bare ref
    assert all(TK_NS not in key for node in nodes for key in node)  # terms, not full IRIs
    expected = _canonical(parse(nquads.encode(), format=RdfFormat.N_QUADS))
    assert _via_rdflib(text, "json-ld") == expected
    assert _canonical(parse(text.encode(), format=RdfFormat.JSON_LD)) == expected


def test_remote_context_names_the_published_context(prefect_api, store):
    text = _export(prefect_api, store, "jsonld", "--remote-context")
    document = json.loads(text)
    assert document["@context"] == CONTEXT_IRI
    document["@context"] = jsonld_context()["@context"]  # what a reader fetching the IRI gets
    expected = parse(_export(prefect_api, store, "nq").encode(), format=RdfFormat.N_QUADS)
    assert _canonical(parse(json.dumps(document).encode(), format=RdfFormat.JSON_LD)) == _canonical(expected)
    wrong = _toolkg(prefect_api, "export", "--store", str(store), "--format", "ttl", "--remote-context")
    assert wrong.returncode == 2 and "--remote-context goes with --format jsonld" in wrong.stderr


# -- Turtle and TriG ---------------------------------------------------------------------------------------


def test_turtle_and_trig_use_prefixed_names_without_escapes(prefect_api, store):
    quads = list(parse(_export(prefect_api, store, "nq").encode(), format=RdfFormat.N_QUADS))
    for fmt in ("ttl", "trig"):
        text = _export(prefect_api, store, fmt)
        assert "\\/" not in text, re.findall(r"\S*\\/\S*", text)[:5]
        for family in ("server:Swagger-Petstore", "business-object:", "tk:Tool", "manifest:"):
            assert family in text, (fmt, family)
        if fmt == "trig":  # graph names
            assert "\nserver-graph:Swagger-Petstore {\n" in text and "\ngraph:manifests {\n" in text
        assert "<https://w3id.org/toolkg/id/tool/Swagger-Petstore/" in text  # a '/' inside: the full IRI
    trig = _export(prefect_api, store, "trig")
    assert _via_rdflib(trig, "trig") == _canonical(quads)
    assert _via_rdflib(_export(prefect_api, store, "ttl"), "turtle") == _merged(quads)


# -- the ontology page -------------------------------------------------------------------------------------


def test_export_writes_the_ontology_page(prefect_api, tmp_path):
    target = tmp_path / "ontology.html"
    result = _toolkg(prefect_api, "export", "--ontology-html", str(target))
    assert result.returncode == 0, result.stderr
    # The same page, up to the order of union members (pyLODE keeps them in a set: string hashes order them).
    assert sorted(target.read_text(encoding="utf-8").splitlines()) == sorted(ontology_html().splitlines())


def test_the_ontology_page_in_a_browser(tmp_path):
    from selenium.webdriver.common.by import By

    from tests.support.browser import chromium, resources_loaded, screenshot

    (tmp_path / "ontology.html").write_text(ontology_html(), encoding="utf-8")
    handler = functools.partial(_QuietHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    browser = chromium()
    try:
        browser.get(base + "/ontology.html")
        assert browser.title == "toolkg ontology"
        heading = browser.find_element(By.CSS_SELECTOR, "#hasParameter h3")
        assert heading.is_displayed() and "has parameter" in heading.text
        assert browser.find_element(By.ID, "Tool").is_displayed()
        assert screenshot(browser, "ontology-page.png").stat().st_size > 10_000
        browser.get(base + "/ontology.html#dependsOn")
        assert screenshot(browser, "ontology-page-property.png").stat().st_size > 10_000
        loaded = resources_loaded(browser)
        assert all(url.startswith(base + "/") or url.startswith("data:") for url in loaded), loaded
    finally:
        browser.quit()
        server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep pytest's output to the test's own
        pass
