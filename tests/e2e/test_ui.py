"""The endpoint's UI as an analyst meets it, in a real headless Chromium: the start tab's example, the
project's prefixes known everywhere (editor, completion, results), plain result cells, saved-query forms."""

from __future__ import annotations

import itertools
import json

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import CASES
from tests.support.browser import chromium, resources_loaded, screenshot
from tests.support.endpoint_helpers import serving

ROWS = ".tabPanel.active .yasr table tbody tr"
TK = "https://w3id.org/toolkg/ontology#"

# The visible text of each cell of a row, left and right edges: a cell's box can end where the next one
# starts while its text still runs into the neighbour's (padding zeroed), so the text is what is compared.
TEXT_EXTENTS = """
const row = document.querySelectorAll(arguments[0])[arguments[1]];
return [...row.querySelectorAll('td')].map(cell => {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  let left = Infinity, right = -Infinity;
  while (walker.nextNode()) {
    const range = document.createRange();
    range.selectNodeContents(walker.currentNode);
    for (const box of range.getClientRects()) { left = Math.min(left, box.left); right = Math.max(right, box.right); }
  }
  const box = cell.getBoundingClientRect();
  return {text: cell.innerText.trim(), left, right, cellLeft: box.left, cellRight: box.right};
});
"""


@pytest.fixture(scope="module")
def endpoint(built_store):
    """`toolkg serve` over a store built from the inference case's shop catalog (20 tools, one server)."""
    store = built_store(CASES / "inference" / "shop.json", links=False)  # shared: the endpoint only reads it
    with serving(store) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    driver = chromium()
    yield driver
    driver.quit()


@pytest.fixture
def page(browser, endpoint):
    """The UI freshly opened, as by a first-time visitor (nothing left in localStorage by another test)."""
    browser.get(endpoint + "/")
    browser.execute_script("localStorage.clear()")
    browser.get(endpoint + "/")
    WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, "#saved button[data-query]"))
    return browser


def rows(browser, at_least: int = 1) -> list[list[str]]:
    """The active tab's result rows (cell texts, the row number first), once there are some."""
    found = WebDriverWait(browser, 30).until(
        lambda b: (r := b.find_elements(By.CSS_SELECTOR, ROWS)) and len(r) >= at_least and r
    )
    return [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in found]


def wait_for_new_results(browser, before: str) -> None:
    """Until the active tab's result summary (e.g. '20 results in 0.02 seconds') changes."""
    WebDriverWait(browser, 30).until(lambda b: summary(b) not in ("", before))


def summary(browser) -> str:
    """The active tab's result summary ('20 results in 0.02 seconds') with its column names: two queries that
    return as many rows as fast (the same summary) still read apart when their columns differ."""
    try:
        found = browser.find_elements(By.CSS_SELECTOR, ".tabPanel.active .yasr_response_chip")
        heads = browser.find_elements(By.CSS_SELECTOR, ".tabPanel.active .yasr table thead th")
        text = found[0].text if found else ""
        return f"{text} | {' '.join(h.text for h in heads)}" if text else ""
    except StaleElementReferenceException:  # the table is being redrawn: no summary yet
        return ""


def editor(browser):
    """The active tab's editor, focused: keys sent to the returned element type into it."""
    browser.find_element(By.CSS_SELECTOR, ".tabPanel.active .CodeMirror").click()
    return browser.switch_to.active_element


def type_query(browser, text: str) -> None:
    area = editor(browser)
    area.send_keys(Keys.CONTROL, "a")
    area.send_keys(Keys.DELETE)
    area.send_keys(text)
    area.send_keys(Keys.ESCAPE)  # close any completion list left open


def tab_names(browser) -> list[str]:
    texts = browser.execute_script("return [...document.querySelectorAll('#yasgui .tab')].map(t => t.textContent)")
    return [text.replace("\u2716", "").strip() for text in texts]  # less each tab's close mark


def active_tab(browser) -> str:
    return browser.execute_script("return toolkgYasgui.getTab().getName()")


def query_text(browser) -> str:
    return browser.execute_script("return toolkgYasgui.getTab().getQuery()")


def test_start_tab_runs_the_example_and_shows_plain_cells(page, endpoint):
    """The start tab holds an example in the project's vocabulary and shows its rows as soon as the page opens."""
    found = rows(page, 20)
    assert len(found) == 20
    assert "tk:dependsOn" in query_text(page) and "PREFIX tk:" not in query_text(page)
    assert not page.find_elements(By.CSS_SELECTOR, ".tabPanel.active .parseErrorIcon")  # tk: is known
    first = found[0]
    assert first[:3] == ["1", "shop::acme_place_order", "2"], first  # a count shows as 2, not "2"^^xsd:in...
    assert set(first[3].split(", ")) == {"shop::get_product_code", "shop::acme_user_login"}
    table = page.find_element(By.CSS_SELECTOR, ".tabPanel.active .yasr table").text
    assert "^^" not in table and "xsd:" not in table and "..." not in table
    count = page.find_element(By.CSS_SELECTOR, f"{ROWS}:first-child td:nth-child(3) .literal")
    assert count.get_attribute("title") == "xsd:integer"  # the datatype is still there, as a tooltip

    # Neither the row number nor a right-aligned count runs into the next cell: their texts keep apart.
    for index in range(3):
        cells = page.execute_script(TEXT_EXTENTS, ROWS, index)
        for cell, following in itertools.pairwise(cells):
            assert cell["cellRight"] <= following["cellLeft"] + 0.5, cells
            assert following["left"] - cell["right"] >= 8, (cell, following)
    shot = screenshot(page, "ui-start-tab.png")
    assert shot.stat().st_size > 10_000
    assert all(url.startswith(endpoint + "/") for url in resources_loaded(page)), resources_loaded(page)


def test_query_typed_without_prefix_declarations_runs_in_the_start_tab(page, endpoint):
    rows(page, 20)
    before = summary(page)
    typed = "SELECT ?tool ?kind (COUNT(?p) AS ?parameters) WHERE { ?t a ?kind ; tk:name ?tool . "
    typed += "OPTIONAL { ?t tk:hasParameter ?p } FILTER(?kind = tk:Tool) } GROUP BY ?tool ?kind ORDER BY ?tool"
    type_query(page, typed)
    assert query_text(page) == typed  # the editor added no PREFIX line: the endpoint declares what is missing
    assert not page.find_elements(By.CSS_SELECTOR, ".tabPanel.active .parseErrorIcon")
    page.find_element(By.CSS_SELECTOR, ".tabPanel.active .yasqe_queryButton").click()
    wait_for_new_results(page, before)
    found = rows(page, 20)
    assert len(found) == 20, summary(page)
    place_order = next(row for row in found if row[1] == "acme_place_order")
    assert place_order[2:] == ["tk:Tool", "2"]  # an IRI under a project prefix is shortened with it
    link = page.find_element(By.CSS_SELECTOR, f"{ROWS} a.iri")
    assert link.get_attribute("title") == TK + "Tool"  # the full IRI is the tooltip
    screenshot(page, "ui-typed-query.png")
    assert all(url.startswith(endpoint + "/") for url in resources_loaded(page))


def test_prefix_completion_offers_the_project_prefixes_from_the_page(page, endpoint):
    type_query(page, "")
    area = editor(page)
    area.send_keys("PREFIX t")
    hints = WebDriverWait(page, 10).until(lambda b: b.find_elements(By.CSS_SELECTOR, ".CodeMirror-hints li"))
    offered = [h.text for h in hints]
    assert offered == [f"tk: <{TK}>"], offered
    screenshot(page, "ui-prefix-completion.png")
    area.send_keys(Keys.ENTER)
    assert query_text(page).startswith(f"PREFIX tk: <{TK}>")
    # The list is the endpoint's own (/prefixes): nothing asked of prefix.cc or any other host.
    loaded = resources_loaded(page)
    assert endpoint + "/prefixes" in loaded
    assert all(url.startswith(endpoint + "/") for url in loaded), loaded


def test_saved_query_form_fills_the_parameter_and_runs_the_rendered_query(page, endpoint):
    rows(page, 20)
    form = page.find_element(By.CSS_SELECTOR, "form[data-form='transitive-dependencies']")
    assert form.find_element(By.CSS_SELECTOR, "label[for]").text == "tool"
    assert "server::name" in form.find_element(By.CSS_SELECTOR, ".help").text  # the parameter's help
    field = form.find_element(By.NAME, "tool")
    field.send_keys("shop::acme_place_order")
    form.find_element(By.CSS_SELECTOR, "button.run").click()
    WebDriverWait(page, 30).until(lambda b: active_tab(b) == "transitive-dependencies")
    wait_for_new_results(page, "")
    found = rows(page)
    assert [row[1:] for row in found] == [
        ["shop::acme_place_order", "shop::acme_user_login", "true"],
        ["shop::acme_place_order", "shop::get_product_code", "true"],
        ["shop::acme_place_order", "shop::validate_email", "false"],
    ]
    # The server rendered the query: the value is a literal in a VALUES clause, shown in the editor.
    assert 'VALUES ?tool { "shop::acme_place_order" }' in query_text(page)
    assert any(url.startswith(endpoint + "/saved-queries/render?") for url in resources_loaded(page))
    screenshot(page, "ui-saved-query-form.png")

    # Another value reruns it in the same tab; a value is never SPARQL, even when it looks like some.
    before = summary(page)
    field.clear()
    field.send_keys('x" } ?t ?p ?o . { "')
    field.send_keys(Keys.ENTER)
    wait_for_new_results(page, before)
    assert page.find_element(By.CSS_SELECTOR, ".tabPanel.active .yasr").text.count("No data available") == 1
    assert tab_names(page).count("transitive-dependencies") == 1

    # What the server refuses is said beside the form, in one line.
    page.execute_script("arguments[0].name = 'nope'", field)
    form.find_element(By.CSS_SELECTOR, "button.run").click()
    error = WebDriverWait(page, 10).until(lambda b: form.find_element(By.CSS_SELECTOR, ".error").text)
    assert "nope" in error and "\n" not in error


def test_saved_query_with_a_server_value(page):
    rows(page, 20)
    form = page.find_element(By.CSS_SELECTOR, "form[data-form='server-tools']")
    form.find_element(By.NAME, "server").send_keys("shop")
    form.find_element(By.NAME, "server").send_keys(Keys.ENTER)
    WebDriverWait(page, 30).until(lambda b: active_tab(b) == "server-tools")
    wait_for_new_results(page, "")
    found = rows(page, 20)
    assert len(found) == 20 and {row[1] for row in found} == {"shop"}
    acme = next(row for row in found if row[2] == "acme_place_order")
    assert acme[4] == "2"  # COUNT of parameters, plain


def test_a_returning_visitors_old_tabs_do_not_hide_the_example(page):
    """Tabs an older page saved (YASGUI's stock query, under YASGUI's default key) are not restored."""
    rows(page, 20)
    [key] = [k for k in page.execute_script("return Object.keys(localStorage)") if k.endswith("_config")]
    saved = json.loads(page.execute_script("return localStorage.getItem(arguments[0])", key))
    tab = saved["val"]["tabConfig"][saved["val"]["active"]]
    tab["yasqe"]["value"] = "SELECT * WHERE {\n  ?sub ?pred ?obj .\n} LIMIT 10"
    tab["yasr"]["response"] = None
    page.execute_script("localStorage.clear(); localStorage.setItem('yagui__config', arguments[0])", json.dumps(saved))
    page.refresh()
    found = rows(page, 20)
    assert found[0][1] == "shop::acme_place_order"
    assert "tk:dependsOn" in query_text(page)


def test_hostile_values_show_as_text(page, endpoint):
    """A catalog's strings reach the table: markup in a literal is text, a javascript: IRI no link to itself."""
    rows(page, 20)
    before = summary(page)
    markup, script = "<img src=x onerror=window.hit=1>", "javascript:window.hit=2"
    type_query(page, f'SELECT ?text ?iri WHERE {{ BIND("{markup}" AS ?text) BIND(IRI("{script}") AS ?iri) }}')
    page.find_element(By.CSS_SELECTOR, ".tabPanel.active .yasqe_queryButton").click()
    wait_for_new_results(page, before)
    assert rows(page)[0][1:] == [markup, script]
    table = page.find_element(By.CSS_SELECTOR, ".tabPanel.active .yasr table")
    assert not table.find_elements(By.TAG_NAME, "img")
    # The IRI links to its page on this endpoint, as every IRI does: a page about it, never the IRI itself.
    [link] = table.find_elements(By.CSS_SELECTOR, "a[href]")
    assert link.get_attribute("href") == endpoint + "/resource?iri=javascript%3Awindow.hit%3D2"
    assert page.execute_script("return window.hit") is None
