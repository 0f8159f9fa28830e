"""The endpoint's UI past the query editor, in a real headless Chromium: under its Content-Security-Policy, asking
its own origin only (a link naming a foreign endpoint included), a page per IRI that the results link to, with a
catalog's markup kept as text, the tool search box, the links to /ontology and /status, and completion of the
ontology's classes and properties without the network."""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import CASES
from tests.e2e.test_endpoint_pages import HOSTILE_DESCRIPTION
from tests.e2e.test_ui import ROWS, editor, rows, summary, type_query, wait_for_new_results
from tests.support.browser import chromium, resources_loaded, screenshot
from tests.support.endpoint_helpers import serving

TK = "https://w3id.org/toolkg/ontology#"


@pytest.fixture(scope="module")
def endpoint(built_store):
    store = built_store(CASES / "inference" / "shop.json", links=False)
    with serving(store) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    driver = chromium()
    yield driver
    driver.quit()


@pytest.fixture
def page(browser, endpoint):
    browser.get(endpoint + "/")
    browser.execute_script("localStorage.clear()")
    browser.get(endpoint + "/")
    WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, "#saved button[data-query]"))
    browser.get_log("browser")  # what earlier pages logged is not this test's
    return browser


def policy_violations(browser) -> list[str]:
    return [e["message"] for e in browser.get_log("browser") if "Content Security Policy" in e["message"]]


def test_the_ui_works_under_its_content_security_policy(page, endpoint):
    found = rows(page, 20)
    assert found[0][1] == "shop::acme_place_order"
    assert page.execute_script("return document.querySelectorAll('script:not([src])').length") == 0
    # The result table keeps its layout (YASGUI's style attributes apply) and nothing was refused.
    widths = page.execute_script(
        f"return [...document.querySelectorAll('{ROWS}:first-child td')].map(c => c.offsetWidth)"
    )
    assert len(widths) == 4 and all(w > 20 for w in widths), widths
    screenshot(page, "ui-under-csp.png")
    assert policy_violations(page) == []
    assert all(url.startswith(endpoint + "/") for url in resources_loaded(page))


class _Foreign(BaseHTTPRequestHandler):
    """A foreign SPARQL endpoint that answers anyone (CORS) with markup in its results."""

    hits: list[str] = []

    def _answer(self):
        self.hits.append(f"{self.command} {self.path}")
        body = json.dumps(
            {"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "literal", "value": "FOREIGN"}}]}}
        ).encode()
        self.send_response(200)
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Allow-Headers", "*")
        self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_OPTIONS = _answer

    def log_message(self, *args):
        pass


def test_a_link_naming_a_foreign_endpoint_still_asks_this_one(browser, endpoint):
    foreign = ThreadingHTTPServer(("127.0.0.1", 0), _Foreign)
    threading.Thread(target=foreign.serve_forever, daemon=True).start()
    try:
        other = f"http://127.0.0.1:{foreign.server_address[1]}/sparql"
        browser.get(endpoint + "/")
        browser.execute_script("localStorage.clear()")
        query = 'SELECT ?x WHERE { BIND("LOCAL" AS ?x) }'
        link = endpoint + "/#" + urllib.parse.urlencode({"query": query, "endpoint": other})
        browser.get("about:blank")  # a new page load, not a change of the fragment
        browser.get(link)
        WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, "#saved button[data-query]"))
        WebDriverWait(browser, 10).until(lambda b: b.execute_script("return toolkgYasgui.getTab().getQuery()") == query)
        assert browser.execute_script("return toolkgYasgui.getTab().getEndpoint()") == endpoint + "/query"
        browser.find_element(By.CSS_SELECTOR, ".tabPanel.active .yasqe_queryButton").click()
        WebDriverWait(browser, 30).until(
            lambda b: "LOCAL" in b.find_element(By.CSS_SELECTOR, ".tabPanel.active .yasr").text
        )
        assert _Foreign.hits == []  # never asked, not even YASGUI's CORS probe
        assert "FOREIGN" not in browser.find_element(By.TAG_NAME, "body").text
        # A tab whose endpoint was set by hand (or by an older page's saved tab) asks this one too.
        # (another answer than the first, so the wait cannot mistake the old results for new ones)
        browser.execute_script("toolkgYasgui.getTab().setEndpoint(arguments[0])", other)
        browser.execute_script("toolkgYasgui.getTab().setQuery(arguments[0])", query.replace("LOCAL", "AGAIN"))
        browser.find_element(By.CSS_SELECTOR, ".tabPanel.active .yasqe_queryButton").click()
        WebDriverWait(browser, 30).until(
            lambda b: "AGAIN" in b.find_element(By.CSS_SELECTOR, ".tabPanel.active .yasr").text or _Foreign.hits
        )
        assert _Foreign.hits == []
        assert all(url.startswith(endpoint + "/") for url in resources_loaded(browser)), resources_loaded(browser)
    finally:
        foreign.shutdown()
        foreign.server_close()


def test_result_iris_open_their_page_on_this_endpoint(page, endpoint):
    rows(page, 20)
    before = summary(page)
    type_query(page, 'SELECT ?t WHERE { ?t tk:name "acme_place_order" }')
    page.find_element(By.CSS_SELECTOR, ".tabPanel.active .yasqe_queryButton").click()
    wait_for_new_results(page, before)
    link = page.find_element(By.CSS_SELECTOR, f"{ROWS} a.iri")
    href = link.get_attribute("href")
    assert href.startswith(endpoint + "/resource?iri=https%3A%2F%2Fw3id.org%2Ftoolkg%2Fid%2Ftool%2Fshop"), href
    link.click()
    WebDriverWait(page, 20).until(lambda b: b.find_elements(By.TAG_NAME, "h1"))
    assert page.find_element(By.TAG_NAME, "h1").text == "acme_place_order"
    assert "What it says" in page.page_source and "What points to it" in page.page_source
    # A linked IRI (its server, in what points to it) opens its own page here.
    server = "https://w3id.org/toolkg/id/server/shop"
    page.find_element(
        By.XPATH, f"//h2[starts-with(., 'What points to it')]/following-sibling::table//a[@title='{server}']"
    ).click()
    WebDriverWait(page, 20).until(
        lambda b: b.current_url == endpoint + "/resource?iri=" + urllib.parse.quote(server, safe="")
    )
    assert page.find_element(By.TAG_NAME, "h1").text == "shop"
    assert "tk:hasTool" in page.find_element(By.TAG_NAME, "main").text
    screenshot(page, "ui-resource-page.png")
    assert policy_violations(page) == []
    assert all(url.startswith(endpoint + "/") for url in resources_loaded(page))


def test_stored_markup_and_javascript_iris_do_not_run_on_the_resource_page(browser, built_store, tmp_path):
    tools = [{"name": "place_order", "description": HOSTILE_DESCRIPTION, "parameters": []}]
    (tmp_path / "evil.json").write_text(json.dumps(tools))
    store = built_store(tmp_path / "evil.json", links=False)
    with serving(store) as base:
        iri = "https://w3id.org/toolkg/id/tool/evil/place_order"
        browser.get(base + "/resource?iri=" + urllib.parse.quote(iri, safe=""))
        WebDriverWait(browser, 20).until(lambda b: b.find_elements(By.TAG_NAME, "h1"))
        assert HOSTILE_DESCRIPTION in browser.find_element(By.TAG_NAME, "main").text
        assert not browser.find_elements(By.CSS_SELECTOR, "main img, main script")
        assert browser.execute_script("return window.hit") is None
        screenshot(browser, "ui-resource-hostile.png")
        browser.get(base + "/resource?iri=" + urllib.parse.quote("javascript:window.hit=3"))
        WebDriverWait(browser, 20).until(lambda b: b.find_elements(By.TAG_NAME, "h1"))
        for link in browser.find_elements(By.TAG_NAME, "a"):
            assert link.get_attribute("href").startswith(base + "/"), link.get_attribute("href")
        assert browser.execute_script("return window.hit") is None


def test_tool_search_box_and_the_endpoint_links(page, endpoint):
    rows(page, 20)
    form = page.find_element(By.ID, "search")
    form.find_element(By.NAME, "q").send_keys("place an order for a product", Keys.ENTER)
    found = WebDriverWait(page, 60).until(lambda b: b.find_elements(By.CSS_SELECTOR, "#search-results li.tool"))
    assert len(found) == 5
    names = [item.find_element(By.TAG_NAME, "a").text for item in found]
    assert "shop::acme_place_order" in names, names
    placed = found[names.index("shop::acme_place_order")]
    assert "call first: " in placed.text and "shop::acme_user_login" in placed.text  # what to call first
    screenshot(page, "ui-tool-search.png")
    placed.find_element(By.TAG_NAME, "a").click()
    WebDriverWait(page, 20).until(lambda b: b.find_elements(By.TAG_NAME, "h1"))
    assert page.find_element(By.TAG_NAME, "h1").text == "acme_place_order"
    page.back()
    WebDriverWait(page, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, "header nav.links a"))
    links = {a.text: a.get_attribute("href") for a in page.find_elements(By.CSS_SELECTOR, "header nav.links a")}
    assert links == {"ontology": endpoint + "/ontology", "status": endpoint + "/status"}
    page.find_element(By.LINK_TEXT, "ontology").click()
    WebDriverWait(page, 30).until(lambda b: "dependsOn" in b.page_source)
    # pyLODE's inline style sheets apply (allowed by their hashes): its headings are styled, not plain.
    assert policy_violations(page) == []
    screenshot(page, "ui-ontology.png")


def test_completion_of_the_ontologys_classes_and_properties(page, endpoint):
    rows(page, 20)
    type_query(page, "")
    area = editor(page)
    area.send_keys("SELECT * WHERE { ?t a tk:To")
    hints = WebDriverWait(page, 10).until(lambda b: b.find_elements(By.CSS_SELECTOR, ".CodeMirror-hints li"))
    offered = [h.text for h in hints]
    assert "tk:Tool" in offered and all(o.startswith("tk:To") for o in offered), offered
    screenshot(page, "ui-class-completion.png")
    area.send_keys(Keys.ENTER)
    assert page.execute_script("return toolkgYasgui.getTab().getQuery()") == "SELECT * WHERE { ?t a tk:Tool"
    area.send_keys(" ; tk:depends")
    hints = WebDriverWait(page, 10).until(lambda b: b.find_elements(By.CSS_SELECTOR, ".CodeMirror-hints li"))
    offered = [h.text for h in hints]
    assert "tk:dependsOn" in offered and "tk:Tool" not in offered, offered
    loaded = resources_loaded(page)
    assert endpoint + "/ontology/terms" in loaded
    assert all(url.startswith(endpoint + "/") for url in loaded), loaded  # nothing asked of LOV
